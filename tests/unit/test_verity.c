/*
 * Unit tests of lib/verity/verity.c: the tree's geometry, writing a tree
 * over a small image and checking it, one flipped bit at a time.
 */
#include <sys/mman.h>

#include "unit.h"
#include "verity/verity_int.h"

#define BS 4096
/* more than the 1024 blocks from which the check runs on threads */
#define FS_BLOCKS 2000

/* An image of FS_BLOCKS blocks: an ext2 superblock's magic, size and
 * block size, patterned data, then room for the tree. */
static uint8_t *make_image(int *fdp, uint64_t *size, uint8_t *root,
			   size_t *root_len)
{
	uint64_t area = xip_verity_area_size(FS_BLOCKS, BS);
	uint8_t salt[32], uuid[16] = { 1, 2, 3 };
	struct ext2_super_block *sb;
	char *path = unit_path("img");
	uint8_t *base;
	int fd;

	assert_true(area > 0);
	*size = (uint64_t)FS_BLOCKS * BS + area;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)*size), 0);
	base = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(base != MAP_FAILED);
	for (uint64_t i = 2048; i < (uint64_t)FS_BLOCKS * BS; i++)
		base[i] = (uint8_t)(i * 7 + i / 4096);
	sb = (struct ext2_super_block *)(base + 1024);
	memset(sb, 0, sizeof(*sb));
	sb->s_magic = EXT2_SUPER_MAGIC;
	sb->s_log_block_size = 2;
	sb->s_blocks_count = FS_BLOCKS;
	for (int i = 0; i < 32; i++)
		salt[i] = (uint8_t)i;
	assert_int_equal(xip_verity_write(base, FS_BLOCKS, BS, salt, 32, uuid,
					  fd, root, root_len), 0);
	assert_int_equal(*root_len, 32);
	*fdp = fd;
	return base;
}

static void test_geom(void **state)
{
	struct verity_geom g;

	/* 128 sha256 slots per 4 KiB block */
	assert_int_equal(xip_verity_geom(1000, BS, 32, 10, &g), 0);
	assert_int_equal(g.levels, 2);
	assert_int_equal(g.per_block_bits, 7);
	assert_int_equal(g.level_size[0], 8);
	assert_int_equal(g.level_size[1], 1);
	/* the top level first */
	assert_int_equal(g.level_start[1], 10);
	assert_int_equal(g.level_start[0], 11);
	assert_int_equal(g.blocks, 9);
	assert_int_equal(xip_verity_geom(128, BS, 32, 0, &g), 0);
	assert_int_equal(g.levels, 1);
	assert_int_equal(xip_verity_geom(129, BS, 32, 0, &g), 0);
	assert_int_equal(g.levels, 2);
	assert_int_equal(xip_verity_geom(1, BS, 32, 0, &g), -EOPNOTSUPP);
	/* sha1's 20 bytes take 32-byte slots */
	assert_int_equal(xip_verity_geom(1000, BS, 20, 0, &g), 0);
	assert_int_equal(g.digest_full, 32);
	assert_int_equal(xip_verity_area_size(1000, BS), 10 * BS);
	assert_int_equal(xip_verity_area_size(1000, 65536), 2 * 65536);
}

static void test_hex(void **state)
{
	uint8_t b[4];
	char s[9];

	assert_int_equal(xip_hex_decode("00fFa1", b, sizeof(b)), 3);
	assert_int_equal(b[1], 0xff);
	assert_int_equal(b[2], 0xa1);
	assert_int_equal(xip_hex_decode("0", b, sizeof(b)), -EINVAL);
	assert_int_equal(xip_hex_decode("", b, sizeof(b)), -EINVAL);
	assert_int_equal(xip_hex_decode("zz", b, sizeof(b)), -EINVAL);
	assert_int_equal(xip_hex_decode("0011223344", b, sizeof(b)),
			 -EINVAL);
	xip_hex_encode(b, 3, s);
	assert_string_equal(s, "00ffa1");
	xip_hex_encode_upper(b, 3, s);
	assert_string_equal(s, "00FFA1");
	xip_hex_encode_upper(b, 0, s);
	assert_string_equal(s, "");
}

static void test_salt(void **state)
{
	uint8_t a[32], b[32], c[32];

	assert_int_equal(xip_verity_salt("seed", 4, a), 0);
	assert_int_equal(xip_verity_salt("seed", 4, b), 0);
	assert_memory_equal(a, b, 32);
	assert_int_equal(xip_verity_salt("seeD", 4, c), 0);
	assert_memory_not_equal(a, c, 32);
	assert_int_equal(xip_verity_salt(NULL, 0, c), 0);
	assert_memory_not_equal(a, c, 32);
}

/* An image in memory, read as a source would be. */
struct mem {
	const uint8_t *base;
	uint64_t size;
};

static int mem_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	const struct mem *m = ctx;

	assert_true(off <= m->size && len <= m->size - off);
	memcpy(buf, m->base + off, len);
	return 0;
}

/*
 * The image streamed in as attach --root-hash takes it: the upper half
 * first, pieces of 3 blocks (one of them never, with @skip), then
 * finished from @fd, which holds the same bytes.
 */
static int stream_run(const uint8_t *base, uint64_t size, int fd,
		      const uint8_t *root, size_t root_len, bool skip,
		      struct xip_verity_bad *bad)
{
	struct mem m = { base, size };
	struct xip_verity_stream *vs;
	struct xip_verity_info vi;
	uint64_t half = size / BS / 2 * BS, piece = 3 * BS;
	int ret;

	ret = xip_verity_stream_open(size, mem_read, &m, &vs, bad);
	if (ret)
		return ret;
	for (uint64_t off = half; off < size; off += piece)
		assert_int_equal(xip_verity_stream_hash(vs, off, base + off,
			size - off < piece ? size - off : piece), 0);
	for (uint64_t off = 0; off < half; off += piece) {
		uint64_t n = half - off < piece ? half - off : piece;

		if (skip && off == piece)
			continue;
		assert_int_equal(xip_verity_stream_hash(vs, off, base + off, n),
				 0);
	}
	ret = xip_verity_stream_finish(vs, fd, "img", root, root_len, &vi,
				       bad);
	if (!ret)
		assert_int_equal(vi.end, size);
	xip_verity_stream_free(vs);
	return ret;
}

/* A check of the image: in place (verify), or as it arrives (attach). */
typedef int checker(const uint8_t *base, uint64_t size, int fd,
		    const uint8_t *root, size_t root_len,
		    struct xip_verity_bad *bad);

static int check_mapped(const uint8_t *base, uint64_t size, int fd,
			const uint8_t *root, size_t root_len,
			struct xip_verity_bad *bad)
{
	struct xip_verity_info vi;

	return xip_verity_check(base, size, root, root_len, 2, &vi, bad);
}

static int check_streamed(const uint8_t *base, uint64_t size, int fd,
			  const uint8_t *root, size_t root_len,
			  struct xip_verity_bad *bad)
{
	return stream_run(base, size, fd, root, root_len, false, bad);
}

/* Flip one bit at @off, check, flip it back: where and which block. */
static void flip_check(checker *check, uint8_t *base, uint64_t size, int fd,
		       const uint8_t *root, uint64_t off, int want_ret,
		       enum xip_verity_where want, uint64_t want_block)
{
	struct xip_verity_bad bad;

	base[off] ^= 0x10;
	assert_int_equal(check(base, size, fd, root, 32, &bad), want_ret);
	assert_int_equal(bad.where, want);
	if (want == XIP_VERITY_DATA || want == XIP_VERITY_HASH)
		assert_int_equal(bad.block, want_block);
	base[off] ^= 0x10;
}

/* Where the tree starts: right after the file system's blocks. */
#define HASH_OFF ((uint64_t)FS_BLOCKS * BS)

/* One flipped bit, what the check returns and where it places it. */
static const struct flip {
	uint64_t off;
	int ret;
	enum xip_verity_where where;
	uint64_t block;
} flips[] = {
	/* data: the last block, one in the middle, the first thread's */
	{ HASH_OFF - 1, -EBADMSG, XIP_VERITY_DATA, FS_BLOCKS - 1 },
	{ 150 * BS + 5, -EBADMSG, XIP_VERITY_DATA, 150 },
	{ 3000, -EBADMSG, XIP_VERITY_DATA, 0 },
	/* level 0 (the blocks after the top), the top, the superblock */
	{ HASH_OFF + 2 * BS + 40, -EBADMSG, XIP_VERITY_HASH, FS_BLOCKS + 2 },
	{ HASH_OFF + 18 * BS - 1, -EBADMSG, XIP_VERITY_HASH, FS_BLOCKS + 17 },
	{ HASH_OFF + BS + 3, -EBADMSG, XIP_VERITY_ROOT, 0 },
	/* the salt, its size, the padding, the block count, the signature */
	{ HASH_OFF + 88, -EBADMSG, XIP_VERITY_ROOT, 0 },
	{ HASH_OFF + 80, -EBADMSG, XIP_VERITY_ROOT, 0 },
	{ HASH_OFF + 500, -EUCLEAN, XIP_VERITY_SUPER, 0 },
	/* the salt field past the salt (32 bytes), the padding before it */
	{ HASH_OFF + 88 + 32, -EUCLEAN, XIP_VERITY_SUPER, 0 },
	{ HASH_OFF + 343, -EUCLEAN, XIP_VERITY_SUPER, 0 },
	{ HASH_OFF + 84, -EUCLEAN, XIP_VERITY_SUPER, 0 },
	{ HASH_OFF + 1000, -EBADMSG, XIP_VERITY_SUPER, 0 },
	{ HASH_OFF + 72, -EUCLEAN, XIP_VERITY_SUPER, 0 },
	{ HASH_OFF + 1, -EUCLEAN, XIP_VERITY_MISSING, 0 },
};

/* Each kind of damage, found and placed alike by both checks. */
static void damage(checker *check, uint8_t *base, uint64_t size, int fd,
		   const uint8_t *root)
{
	uint64_t hash_off = HASH_OFF;
	struct xip_verity_bad bad;
	uint8_t wrong[32];

	assert_int_equal(check(base, size, fd, root, 32, &bad), 0);
	for (size_t i = 0; i < sizeof(flips) / sizeof(flips[0]); i++)
		flip_check(check, base, size, fd, root, flips[i].off,
			   flips[i].ret, flips[i].where, flips[i].block);
	/* two bad blocks, one per thread's share (or half): the lower is
	 * named, although the stream hashes the upper one first */
	base[1500 * BS + 9] ^= 1;
	flip_check(check, base, size, fd, root, 700 * BS, -EBADMSG,
		   XIP_VERITY_DATA, 700);
	base[1500 * BS + 9] ^= 1;
	/* a wrong root hash, a short one, a truncated tree, none */
	memcpy(wrong, root, 32);
	wrong[31] ^= 1;
	assert_int_equal(check(base, size, fd, wrong, 32, &bad), -EBADMSG);
	assert_int_equal(bad.where, XIP_VERITY_ROOT);
	assert_int_equal(check(base, size, fd, root, 20, &bad), -EINVAL);
	assert_int_equal(check(base, size - 1, fd, root, 32, &bad), -EUCLEAN);
	assert_int_equal(bad.where, XIP_VERITY_MISSING);
	assert_int_equal(check(base, hash_off, fd, root, 32, &bad), -EUCLEAN);
	assert_int_equal(bad.where, XIP_VERITY_MISSING);
}

/*
 * The verity superblock's unused bytes: past salt_size in the salt field,
 * and the reserved padding, must be zeros (veritysetup writes zeros; no
 * hash covers them).  Refused by the probe, the check and the stream.
 */
static void test_sb_unused(void **state)
{
	uint8_t root[XIP_VERITY_DIGEST_MAX];
	struct xip_verity_info vi;
	struct xip_verity_bad bad;
	uint64_t size;
	size_t root_len;
	uint8_t *base, *vsb;
	int fd;

	base = make_image(&fd, &size, root, &root_len);
	vsb = base + HASH_OFF;
	assert_int_equal(xip_verity_probe(base, size, &vi), 0);
	assert_int_equal(vi.salt_size, 32);
	/* a salt of 31 bytes: its 32nd byte (31) is now past it */
	vsb[80] = 31;
	assert_int_equal(xip_verity_probe(base, size, &vi), -EUCLEAN);
	assert_true(vi.present);
	assert_string_equal(xip_errmsg(),
			    "verity superblock: bytes after its 31-byte salt");
	assert_int_equal(check_mapped(base, size, fd, root, 32, &bad),
			 -EUCLEAN);
	assert_int_equal(bad.where, XIP_VERITY_SUPER);
	assert_int_equal(check_streamed(base, size, fd, root, 32, &bad),
			 -EUCLEAN);
	assert_int_equal(bad.where, XIP_VERITY_SUPER);
	vsb[80] = 32;
	/* the salt field past the salt, to its last byte */
	for (unsigned int off = 88 + 32; off < 88 + 256; off += 37) {
		vsb[off] = 0xff;
		assert_int_equal(xip_verity_probe(base, size, &vi), -EUCLEAN);
		vsb[off] = 0;
	}
	vsb[343] = 1;
	assert_int_equal(xip_verity_probe(base, size, &vi), -EUCLEAN);
	vsb[343] = 0;
	/* the padding before the salt and after it */
	vsb[511] = 1;
	assert_int_equal(xip_verity_probe(base, size, &vi), -EUCLEAN);
	vsb[511] = 0;
	vsb[344] = 1;
	assert_int_equal(xip_verity_probe(base, size, &vi), -EUCLEAN);
	vsb[344] = 0;
	vsb[82] = 1;
	assert_int_equal(xip_verity_probe(base, size, &vi), -EUCLEAN);
	assert_string_equal(xip_errmsg(),
			    "verity superblock: bytes in its reserved padding");
	vsb[82] = 0;
	vsb[87] = 1;
	assert_int_equal(xip_verity_probe(base, size, &vi), -EUCLEAN);
	vsb[87] = 0;
	/* a salt field used to its end has no bytes after it */
	vsb[80] = 0;
	vsb[81] = 1;
	memset(vsb + 88 + 32, 0xa5, 256 - 32);
	assert_int_equal(xip_verity_probe(base, size, &vi), 0);
	assert_int_equal(vi.salt_size, 256);
	vsb[81] = 1;
	vsb[80] = 1;
	assert_int_equal(xip_verity_probe(base, size, &vi), -EUCLEAN);
	assert_string_equal(xip_errmsg(),
			    "verity superblock: salt size 257 (at most 256)");
	munmap(base, size);
	close(fd);
}

static void test_check(void **state)
{
	uint8_t root[XIP_VERITY_DIGEST_MAX];
	struct xip_verity_info vi;
	struct xip_verity_bad bad;
	uint64_t size, hash_off = (uint64_t)FS_BLOCKS * BS;
	size_t root_len;
	uint8_t *base;
	int fd;

	base = make_image(&fd, &size, root, &root_len);
	assert_int_equal(xip_verity_check(base, size, root, 32, 0, &vi, &bad),
			 0);
	assert_true(vi.present);
	assert_int_equal(vi.hash_offset, hash_off);
	assert_int_equal(vi.tree_offset, hash_off + BS);
	assert_int_equal(vi.levels, 2);
	assert_int_equal(vi.end, size);
	assert_string_equal(vi.algorithm, "sha256");
	assert_int_equal(vi.salt_size, 32);
	damage(check_mapped, base, size, fd, root);
	/* as the bytes arrive; a piece never hashed is refused */
	damage(check_streamed, base, size, fd, root);
	assert_int_equal(stream_run(base, size, fd, root, 32, true, &bad),
			 -EIO);
	munmap(base, size);
	close(fd);
}

/* ---- known answers: root hashes veritysetup gave for fixed data ---------- */

/*
 * KAT_BLOCKS blocks of 4 KiB: byte i is (i * 7 + i / 4096) & 0xff, but
 * for an ext2 superblock at 1024 (zeros, s_blocks_count = KAT_BLOCKS,
 * s_log_block_size = 2, s_magic = 0xef53), then room for a tree.  Made
 * with Python by the same rule into a file "data", the roots below come
 * from veritysetup 2.6.1 (cryptsetup-bin):
 *
 *   veritysetup format data data --hash-offset=819200 --data-blocks=200 \
 *	--data-block-size=4096 --hash-block-size=4096 --hash=ALG \
 *	--salt=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f \
 *	--uuid=01020300-0000-0000-0000-000000000000
 *
 * on a copy of "data" for each ALG.  200 blocks make trees of two
 * levels for each digest (2, 2 and 4 blocks under the top).
 */
#define KAT_BLOCKS	200
#define KAT_SALT	"000102030405060708090a0b0c0d0e0f" \
			"101112131415161718191a1b1c1d1e1f"
#define KAT_UUID	"01020300-0000-0000-0000-000000000000"

static const struct kat {
	const char *alg, *root;
} kats[] = {
	{ "sha1", "5b8c7a6483d8bb1f04f0a639929d044847fb9729" },
	{ "sha256", "f1f1b6c3f5e2d8de1d57de8085133095"
		    "b488c0b69959c95e3c43142862edf10e" },
	{ "sha512", "1f4371d8fc6017faa989488180d610ca"
		    "2889445352cac00b926f821797360f01"
		    "50c84c6c15617ffb842757c1f2b147cd"
		    "34d9cf10c668673fba981a2db1a594eb" },
};

/* The data above in a new file @name of @size bytes (the rest zeros),
 * mapped shared at *@base; its descriptor. */
static int kat_file(const char *name, uint64_t size, uint8_t **base)
{
	uint64_t n = (uint64_t)KAT_BLOCKS * BS;
	uint8_t *p;
	int fd;

	fd = open(unit_path(name), O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	for (uint64_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + i / 4096);
	memset(p + 1024, 0, 1024);
	p[1024 + 4] = KAT_BLOCKS;			/* s_blocks_count */
	p[1024 + 24] = 2;				/* s_log_block_size */
	p[1024 + 56] = 0x53;				/* s_magic */
	p[1024 + 57] = 0xef;
	*base = p;
	return fd;
}

/* The tree xip_verity_write makes over the data: veritysetup's root. */
static void test_known_root_written(void **state)
{
	uint8_t salt[32], root[XIP_VERITY_DIGEST_MAX], *base;
	uint8_t uuid[16] = { 1, 2, 3 };
	uint64_t size = (uint64_t)KAT_BLOCKS * BS +
			xip_verity_area_size(KAT_BLOCKS, BS);
	struct xip_verity_info vi;
	struct xip_verity_bad bad;
	char hex[2 * XIP_VERITY_DIGEST_MAX + 1];
	size_t root_len;
	int fd;

	/* the superblock's block and three of the tree */
	assert_int_equal(size, (uint64_t)(KAT_BLOCKS + 4) * BS);
	fd = kat_file("kat-written", size, &base);
	assert_int_equal(xip_hex_decode(KAT_SALT, salt, sizeof(salt)),
			 32);
	assert_int_equal(xip_verity_write(base, KAT_BLOCKS, BS, salt, 32, uuid,
					  fd, root, &root_len), 0);
	assert_int_equal(root_len, 32);
	xip_hex_encode(root, root_len, hex);
	assert_string_equal(hex, kats[1].root);
	assert_int_equal(xip_verity_check(base, size, root, root_len, 0, &vi,
					  &bad), 0);
	munmap(base, size);
	close(fd);
}

/*
 * Trees veritysetup writes now, by the command above, for each digest
 * the checks know: accepted against the known root, in place and as
 * they arrive; one bit off in the root refused.  veritysetup's sha256
 * tree is, byte for byte, the one xip_verity_write made.
 */
static void test_known_roots_checked(void **state)
{
	uint8_t root[XIP_VERITY_DIGEST_MAX], *base, *mine;
	struct xip_verity_info vi;
	struct xip_verity_bad bad;
	char cmd[1200];

	if (system("command -v veritysetup >/dev/null 2>&1")) {
		print_message("# veritysetup (cryptsetup-bin) is not installed\n");
		skip();
	}
	for (size_t k = 0; k < sizeof(kats) / sizeof(kats[0]); k++) {
		const struct kat *t = &kats[k];
		size_t len = strlen(t->root) / 2;
		uint64_t size;
		struct stat st;
		int fd;

		fd = kat_file("kat-peer", (uint64_t)KAT_BLOCKS * BS, &base);
		munmap(base, (uint64_t)KAT_BLOCKS * BS);
		snprintf(cmd, sizeof(cmd),
			 "veritysetup format '%1$s' '%1$s' --hash-offset=%2$u "
			 "--data-blocks=%3$u --data-block-size=4096 "
			 "--hash-block-size=4096 --hash=%4$s --salt=%5$s "
			 "--uuid=%6$s >/dev/null",
			 unit_path("kat-peer"), KAT_BLOCKS * BS, KAT_BLOCKS,
			 t->alg, KAT_SALT, KAT_UUID);
		if (system(cmd))
			fail_msg("failed: %s", cmd);
		assert_int_equal(fstat(fd, &st), 0);
		size = (uint64_t)st.st_size;
		base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			    0);
		assert_true(base != MAP_FAILED);
		assert_int_equal(xip_hex_decode(t->root, root,
						      sizeof(root)),
				 (int)len);
		assert_int_equal(check_mapped(base, size, fd, root, len, &bad),
				 0);
		assert_int_equal(bad.where, XIP_VERITY_OK);
		assert_int_equal(xip_verity_check(base, size, root, len, 0, &vi,
						  &bad), 0);
		assert_string_equal(vi.algorithm, t->alg);
		assert_int_equal(vi.digest_size, len);
		assert_int_equal(vi.levels, 2);
		assert_int_equal(check_streamed(base, size, fd, root, len,
						&bad), 0);
		root[len - 1] ^= 1;
		assert_int_equal(check_mapped(base, size, fd, root, len, &bad),
				 -EBADMSG);
		assert_int_equal(bad.where, XIP_VERITY_ROOT);
		if (!strcmp(t->alg, "sha256")) {
			uint8_t salt[32], uuid[16] = { 1, 2, 3 };
			int mfd = kat_file("kat-mine", size, &mine);

			assert_int_equal(xip_hex_decode(KAT_SALT, salt,
							      sizeof(salt)),
					 32);
			assert_int_equal(xip_verity_write(mine, KAT_BLOCKS, BS,
							  salt, 32, uuid, mfd,
							  root, &len), 0);
			assert_memory_equal(mine, base, size);
			munmap(mine, size);
			close(mfd);
		}
		munmap(base, size);
		close(fd);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_geom),
		cmocka_unit_test(test_hex),
		cmocka_unit_test(test_salt),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_known_root_written),
		cmocka_unit_test(test_known_roots_checked),
		cmocka_unit_test(test_sb_unused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
