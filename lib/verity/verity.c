// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dm-verity hash trees (format 1) over images in memory: the layout of the
 * verity superblock and the tree, writing one (mkfs --verity) and checking
 * every data and hash block against a root hash (verify --root-hash,
 * attach --root-hash, the nbdkit plugin's root-hash=).
 *
 * The hashing is OpenSSL's EVP (libcrypto), not libcryptsetup: the bytes
 * to check are already in memory (a mapped image, or a segment being
 * filled from a file, gzip or an NBD server), and libcryptsetup's check
 * (crypt_activate_by_volume_key with no name) only reads a device or a
 * file from its start to its end, single-threaded, after the fact: for
 * a segment a second pass over bytes already seen, and no way to tell
 * which block was bad.  Here the data blocks are hashed on several
 * threads straight from the mapping and the first bad block is named.
 * veritysetup (cryptsetup-bin) stays the peer the tests compare with.
 *
 * Layout, as dm-verity reads it: block k of the data is hashed as
 * H(salt || block); level 0 holds those digests in order, each in a slot
 * of the digest size rounded up to a power of two, as many per hash block
 * as fit, the last block zero-padded; level i + 1 hashes the blocks of
 * level i the same way, until a level is one block, whose hash is the
 * root hash.  The levels lie top first after the superblock's block.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include <ext2fs/ext2_fs.h>

#include "verity/xip_verity.h"
#include "verity/verity_int.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_lazy.h"
#include "util/xip_util.h"
#include <openssl/evp.h>


#define MAX_THREADS	8

static const uint8_t verity_sig[8] = { 'v', 'e', 'r', 'i', 't', 'y', 0, 0 };

int xip_verity_geom(uint64_t data_blocks, unsigned int bs,
		    unsigned int digest_size, uint64_t first,
		    struct verity_geom *g)
{
	unsigned int full = 1, bits = 0;
	uint64_t pos = first;

	memset(g, 0, sizeof(*g));
	if (data_blocks < 2)
		return -EOPNOTSUPP;
	while (full < digest_size)
		full <<= 1;
	while ((2u << bits) <= bs / full)
		bits++;
	if (bs / full < 2)
		return -EOPNOTSUPP;
	g->digest_size = digest_size;
	g->digest_full = full;
	g->per_block_bits = bits;
	while (bits * g->levels < 64 &&
	       ((data_blocks - 1) >> (bits * g->levels)))
		g->levels++;
	if (g->levels > VERITY_MAX_LEVELS)
		return -EOPNOTSUPP;
	for (int i = (int)g->levels - 1; i >= 0; i--) {
		unsigned int sh = (unsigned int)(i + 1) * bits;
		uint64_t s = sh >= 64 ? 1 :
			     (data_blocks >> sh) +
			     ((data_blocks & ((1ULL << sh) - 1)) != 0);

		g->level_start[i] = pos;
		g->level_size[i] = s;
		pos += s;
	}
	g->blocks = pos - first;
	return 0;
}

uint64_t xip_verity_area_size(uint64_t data_blocks, unsigned int block_size)
{
	struct verity_geom g;

	if (xip_verity_geom(data_blocks, block_size, 32, 0, &g))
		return 0;
	return (g.blocks + 1) * block_size;
}

/* ---- hashing --------------------------------------------------------- */

/*
 * The digest fetched once from the provider (EVP_MD_fetch): a digest
 * looked up by name (EVP_get_digestbyname) is fetched again at every
 * EVP_DigestInit_ex, a fifth of the time of hashing a 4 KiB block.
 */
int xip_verity_hasher_init(struct hasher *h, const char *alg, const uint8_t *salt,
		       size_t salt_len)
{
	int ret = xip_lazy_load(XIP_LAZY_CRYPTO);

	h->md = NULL;
	h->ctx = NULL;
	if (ret)
		return ret;
	h->md = EVP_MD_fetch(NULL, alg, NULL);
	h->ctx = h->md ? EVP_MD_CTX_new() : NULL;
	h->salt = salt;
	h->salt_len = salt_len;
	return h->ctx ? 0 : -ENOMEM;
}

void xip_verity_hasher_free(struct hasher *h)
{
	/* nothing of libcrypto's is called before it is loaded */
	if (h->ctx)
		EVP_MD_CTX_free(h->ctx);
	if (h->md)
		EVP_MD_free(h->md);
	h->ctx = NULL;
	h->md = NULL;
}

/*
 * A hashing failure: -ENOSYS is libcrypto that could not be loaded, whose
 * message (naming the shared object and why) stands.
 */
int xip_verity_hash_error(int ret, const char *what)
{
	return ret == -ENOSYS ? ret : xip_error(ret, "verity: %s", what);
}

/* H(salt || @len bytes at @p) into @out. */
int xip_verity_hash_block(struct hasher *h, const uint8_t *p, size_t len,
		      uint8_t *out)
{
	unsigned int n;

	if (!EVP_DigestInit_ex2(h->ctx, h->md, NULL) ||
	    !EVP_DigestUpdate(h->ctx, h->salt, h->salt_len) ||
	    !EVP_DigestUpdate(h->ctx, p, len) ||
	    !EVP_DigestFinal_ex(h->ctx, out, &n))
		return -EIO;
	return 0;
}

/* ---- the superblocks --------------------------------------------------- */

/* The file system's size from its ext2 superblock, and its block size. */
int xip_verity_fs_size(const uint8_t *base, uint64_t size, uint64_t *bytes,
		   unsigned int *bs)
{
	struct ext2_super_block sb;
	uint64_t blocks;

	if (size < EXT2_SB_OFFSET + sizeof(sb))
		return xip_error(-EUCLEAN, "too small for an ext2 superblock");
	memcpy(&sb, base + EXT2_SB_OFFSET, sizeof(sb));
	if (le16toh(sb.s_magic) != EXT2_SUPER_MAGIC)
		return xip_error(-EUCLEAN, "no ext2 superblock");
	if (le32toh(sb.s_log_block_size) > 6)
		return xip_error(-EUCLEAN, "block size 2^(10+%u)",
				 le32toh(sb.s_log_block_size));
	*bs = 1024u << le32toh(sb.s_log_block_size);
	blocks = le32toh(sb.s_blocks_count);
	if (le32toh(sb.s_feature_incompat) & EXT4_FEATURE_INCOMPAT_64BIT)
		blocks |= (uint64_t)le32toh(sb.s_blocks_count_hi) << 32;
	if (blocks > UINT64_MAX / *bs)
		return xip_error(-EUCLEAN, "%" PRIu64 " blocks", blocks);
	*bytes = blocks * *bs;
	return 0;
}

bool xip_verity_all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static bool bs_ok(uint32_t bs)
{
	return bs >= 512 && bs <= (512u << 10) && !(bs & (bs - 1));
}

/* Fill @vi from the verity superblock at vi->hash_offset. */
int xip_verity_sb_parse(const uint8_t *vsb, uint64_t size,
		    struct xip_verity_info *vi)
{
	struct verity_sb sb;
	struct verity_geom g;
	uint64_t area;

	memcpy(&sb, vsb, sizeof(sb));
	if (memcmp(sb.signature, verity_sig, sizeof(verity_sig)))
		return 0;
	vi->present = true;
	if (le32toh(sb.version) != 1)
		return xip_error(-EOPNOTSUPP,
				 "verity superblock version %u (only 1)",
				 le32toh(sb.version));
	if (le32toh(sb.hash_type) != 1)
		return xip_error(-EOPNOTSUPP, "verity hash type %u (only 1)",
				 le32toh(sb.hash_type));
	if (!memchr(sb.algorithm, 0, sizeof(sb.algorithm)) ||
	    !xip_verity_all_zero(sb.algorithm + strlen((char *)sb.algorithm),
		      sizeof(sb.algorithm) - strlen((char *)sb.algorithm)))
		return xip_error(-EUCLEAN,
				 "verity superblock: malformed algorithm name");
	snprintf(vi->algorithm, sizeof(vi->algorithm), "%s", sb.algorithm);
	/* the digests' sizes: read without loading libcrypto */
	if (!strcmp(vi->algorithm, "sha256"))
		vi->digest_size = 32;
	else if (!strcmp(vi->algorithm, "sha1"))
		vi->digest_size = 20;
	else if (!strcmp(vi->algorithm, "sha512"))
		vi->digest_size = 64;
	else
		return xip_error(-EOPNOTSUPP, "verity hash algorithm '%s'",
				 vi->algorithm);
	vi->data_block_size = le32toh(sb.data_block_size);
	vi->hash_block_size = le32toh(sb.hash_block_size);
	if (!bs_ok(vi->data_block_size) || !bs_ok(vi->hash_block_size))
		return xip_error(-EUCLEAN,
				 "verity superblock: block sizes %u and %u",
				 vi->data_block_size, vi->hash_block_size);
	if (vi->data_block_size != vi->hash_block_size)
		return xip_error(-EOPNOTSUPP,
				 "verity data block size %u differs from hash block size %u",
				 vi->data_block_size, vi->hash_block_size);
	vi->data_blocks = le64toh(sb.data_blocks);
	vi->salt_size = le16toh(sb.salt_size);
	if (vi->salt_size > XIP_VERITY_SALT_MAX)
		return xip_error(-EUCLEAN,
				 "verity superblock: salt size %u (at most %u)",
				 vi->salt_size, XIP_VERITY_SALT_MAX);
	/*
	 * The salt field's bytes past salt_size and the reserved padding are
	 * zeros as veritysetup writes them.  Its VERITY_read_sb ignores them;
	 * here they are refused: no hash covers them, and a sealed segment
	 * would hold whatever they say.
	 */
	if (!xip_verity_all_zero(sb.salt + vi->salt_size,
		      XIP_VERITY_SALT_MAX - vi->salt_size))
		return xip_error(-EUCLEAN,
				 "verity superblock: bytes after its %u-byte salt",
				 vi->salt_size);
	if (!xip_verity_all_zero(sb.pad1, sizeof(sb.pad1)) ||
	    !xip_verity_all_zero(sb.pad2, sizeof(sb.pad2)))
		return xip_error(-EUCLEAN,
				 "verity superblock: bytes in its reserved padding");
	memcpy(vi->salt, sb.salt, vi->salt_size);
	memcpy(vi->uuid, sb.uuid, sizeof(vi->uuid));
	if (vi->data_blocks > vi->hash_offset / vi->data_block_size ||
	    vi->data_blocks * vi->data_block_size != vi->hash_offset)
		return xip_error(-EUCLEAN,
				 "verity superblock: %" PRIu64 " data blocks of %u bytes, but the hash offset is %" PRIu64,
				 vi->data_blocks, vi->data_block_size,
				 vi->hash_offset);
	vi->tree_offset = round_up(vi->hash_offset + XIP_VERITY_SB_SIZE,
				   vi->hash_block_size);
	if (xip_verity_geom(vi->data_blocks, vi->hash_block_size,
			    vi->digest_size,
			    vi->tree_offset / vi->hash_block_size, &g))
		return xip_error(-EOPNOTSUPP,
				 "a verity tree of %" PRIu64 " data blocks",
				 vi->data_blocks);
	vi->levels = g.levels;
	vi->tree_blocks = g.blocks;
	area = g.blocks * vi->hash_block_size;
	vi->end = vi->tree_offset + area;
	if (vi->tree_offset > size || area > size - vi->tree_offset)
		return xip_error(-EUCLEAN,
				 "the verity tree is truncated: it ends at %" PRIu64 " bytes, the image has %" PRIu64,
				 vi->end, size);
	return 0;
}

int xip_verity_probe(const uint8_t *base, uint64_t size,
		     struct xip_verity_info *vi)
{
	unsigned int bs;
	int ret;

	memset(vi, 0, sizeof(*vi));
	ret = xip_verity_fs_size(base, size, &vi->hash_offset, &bs);
	if (ret)
		return ret;
	if (vi->hash_offset > size ||
	    size - vi->hash_offset < XIP_VERITY_SB_SIZE)
		return 0;
	return xip_verity_sb_parse(base + vi->hash_offset, size, vi);
}

/* The top level, one block, lies first after the superblock's block. */
int xip_verity_root(const uint8_t *base, uint64_t size,
		    const struct xip_verity_info *vi, uint8_t *root,
		    size_t *root_len)
{
	struct hasher h;
	int ret;

	if (!vi->present || vi->end > size || vi->end < vi->tree_offset +
					      vi->hash_block_size)
		return xip_error(-EUCLEAN, "no verity tree");
	ret = xip_verity_hasher_init(&h, vi->algorithm, vi->salt, vi->salt_size);
	if (!ret)
		ret = xip_verity_hash_block(&h, base + vi->tree_offset,
				 vi->hash_block_size, root);
	xip_verity_hasher_free(&h);
	if (ret)
		return xip_verity_hash_error(ret, "hashing failed");
	*root_len = vi->digest_size;
	return 0;
}

/* ---- writing ------------------------------------------------------------ */

/* Hash @n blocks of @bs bytes at @src into the slots of @dst. */
static int hash_level(struct hasher *h, const uint8_t *src, uint64_t n,
		      unsigned int bs, unsigned int full, uint8_t *dst)
{
	for (uint64_t k = 0; k < n; k++) {
		int ret = xip_verity_hash_block(h, src + k * bs, bs, dst + k * full);

		if (ret)
			return ret;
	}
	return 0;
}

int xip_verity_write(const uint8_t *base, uint64_t data_blocks,
		     unsigned int block_size, const uint8_t *salt,
		     size_t salt_len, const uint8_t uuid[16], int fd,
		     uint8_t *root, size_t *root_len)
{
	uint64_t hash_offset = data_blocks * block_size;
	uint64_t first = hash_offset / block_size + 1;
	struct verity_geom g;
	struct verity_sb sb;
	struct hasher h;
	uint8_t *tree;
	int ret;

	if (salt_len > XIP_VERITY_SALT_MAX || !bs_ok(block_size))
		return xip_error(-EINVAL, "verity: salt of %zu bytes, block size %u",
				 salt_len, block_size);
	if (xip_verity_geom(data_blocks, block_size, 32, first, &g))
		return xip_error(-EOPNOTSUPP, "verity: %" PRIu64 " data blocks",
				 data_blocks);
	tree = calloc(g.blocks, block_size);
	if (!tree)
		return xip_error(-ENOMEM, "verity: out of memory");
	ret = xip_verity_hasher_init(&h, "sha256", salt, salt_len);
	if (ret) {
		free(tree);
		return xip_verity_hash_error(ret, "sha256");
	}
	/* level i at tree + (level_start[i] - first) blocks */
	for (unsigned int i = 0; !ret && i < g.levels; i++) {
		uint8_t *dst = tree + (g.level_start[i] - first) * block_size;

		if (i == 0)
			ret = hash_level(&h, base, data_blocks, block_size,
					 g.digest_full, dst);
		else
			ret = hash_level(&h, tree + (g.level_start[i - 1] -
						     first) * block_size,
					 g.level_size[i - 1], block_size,
					 g.digest_full, dst);
	}
	if (!ret)
		ret = xip_verity_hash_block(&h, tree + (g.level_start[g.levels - 1] -
					     first) * block_size,
				 block_size, root);
	xip_verity_hasher_free(&h);
	if (ret) {
		free(tree);
		return xip_verity_hash_error(ret, "hashing failed");
	}
	*root_len = 32;
	memset(&sb, 0, sizeof(sb));
	memcpy(sb.signature, verity_sig, sizeof(sb.signature));
	sb.version = htole32(1);
	sb.hash_type = htole32(1);
	memcpy(sb.uuid, uuid, sizeof(sb.uuid));
	memcpy(sb.algorithm, "sha256", 6);
	sb.data_block_size = htole32(block_size);
	sb.hash_block_size = htole32(block_size);
	sb.data_blocks = htole64(data_blocks);
	sb.salt_size = htole16((uint16_t)salt_len);
	memcpy(sb.salt, salt, salt_len);
	ret = xip_pwrite_all(fd, &sb, sizeof(sb), hash_offset);
	if (!ret)
		ret = xip_pwrite_all(fd, tree, g.blocks * block_size,
				     first * block_size);
	free(tree);
	if (ret)
		return xip_error(ret, "verity: writing the tree: %s",
				 strerror(-ret));
	return 0;
}

/* ---- checking ------------------------------------------------------------ */

struct check_job {
	const struct xip_verity_info *vi;
	const uint8_t *src;		/* blocks to hash */
	const uint8_t *slots;		/* their digests' slots */
	unsigned int full;
	uint64_t from, to;		/* block range of this job */
	uint64_t bad;			/* first bad block, or UINT64_MAX */
	int err;
};

static void *check_run(void *arg)
{
	struct check_job *j = arg;
	unsigned int bs = j->vi->data_block_size;
	uint8_t d[XIP_VERITY_DIGEST_MAX];
	struct hasher h;

	j->bad = UINT64_MAX;
	j->err = xip_verity_hasher_init(&h, j->vi->algorithm, j->vi->salt,
			     j->vi->salt_size);
	for (uint64_t k = j->from; !j->err && k < j->to; k++) {
		j->err = xip_verity_hash_block(&h, j->src + k * bs, bs, d);
		if (!j->err && memcmp(d, j->slots + k * j->full,
				      j->vi->digest_size)) {
			j->bad = k;
			break;
		}
	}
	xip_verity_hasher_free(&h);
	return NULL;
}

static unsigned int thread_count(unsigned int threads, uint64_t blocks)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (!threads)
		threads = cpus > 0 ? (unsigned int)cpus : 1;
	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	if (blocks < 1024)
		threads = 1;
	return threads;
}

/*
 * Hash blocks [0, @n) of @src and compare with the slots at @slots: the
 * first block that differs, UINT64_MAX when none, or a negative errno.
 */
static int64_t check_blocks(const struct xip_verity_info *vi,
			    const uint8_t *src, uint64_t n,
			    const uint8_t *slots, unsigned int full,
			    unsigned int threads)
{
	struct check_job jobs[MAX_THREADS];
	pthread_t tid[MAX_THREADS];
	unsigned int t = thread_count(threads, n), started = 0;
	uint64_t bad = UINT64_MAX;
	int err = 0;

	for (unsigned int i = 0; i < t; i++) {
		jobs[i] = (struct check_job){
			.vi = vi, .src = src, .slots = slots, .full = full,
			.from = n * i / t, .to = n * (i + 1) / t,
		};
	}
	/* the first job runs on this thread */
	for (unsigned int i = 1; i < t; i++) {
		if (pthread_create(&tid[i], NULL, check_run, &jobs[i]))
			break;
		started = i;
	}
	check_run(&jobs[0]);
	for (unsigned int i = started + 1; i < t; i++)
		check_run(&jobs[i]);
	for (unsigned int i = 1; i <= started; i++)
		pthread_join(tid[i], NULL);
	for (unsigned int i = 0; i < t; i++) {
		if (jobs[i].err && !err)
			err = jobs[i].err;
		if (jobs[i].bad < bad)
			bad = jobs[i].bad;
	}
	if (err && bad == UINT64_MAX)
		return err;
	return bad == UINT64_MAX ? -1 : (int64_t)bad;
}

int xip_verity_bad_at(struct xip_verity_bad *bad, enum xip_verity_where where,
		  uint64_t block, unsigned int bs, const char *fmt, ...)
{
	va_list ap;

	if (bad) {
		bad->where = where;
		bad->block = block;
		bad->offset = block * bs;
	}
	va_start(ap, fmt);
	xip_verror(-EBADMSG, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

/*
 * A probe of an image of @size bytes that failed with @ret, or found no
 * verity superblock (@ret 0): the error, and in @bad where it lies.
 */
int xip_verity_probe_failed(int ret, const struct xip_verity_info *vi,
			uint64_t size, struct xip_verity_bad *bad)
{
	if (!ret)
		ret = xip_error(-EUCLEAN,
				"no verity superblock at %" PRIu64 " (the end of the file system)",
				vi->hash_offset);
	if (bad) {
		bad->where = ret == -EUCLEAN &&
			     (!vi->present || vi->end > size) ?
			     XIP_VERITY_MISSING : XIP_VERITY_SUPER;
		bad->offset = vi->hash_offset;
	}
	return ret;
}

int xip_verity_check(const uint8_t *base, uint64_t size,
		     const uint8_t *root, size_t root_len, unsigned int threads,
		     struct xip_verity_info *vi, struct xip_verity_bad *bad)
{
	uint8_t d[XIP_VERITY_DIGEST_MAX];
	unsigned int bs;
	struct verity_geom g;
	struct hasher h;
	int64_t k;
	int ret;

	if (bad)
		memset(bad, 0, sizeof(*bad));
	ret = xip_verity_probe(base, size, vi);
	if (ret || !vi->present)
		return xip_verity_probe_failed(ret, vi, size, bad);
	bs = vi->hash_block_size;
	if (root_len != vi->digest_size)
		return xip_error(-EINVAL,
				 "the root hash has %zu bytes, %s gives %u",
				 root_len, vi->algorithm, vi->digest_size);
	if (!xip_verity_all_zero(base + vi->hash_offset + XIP_VERITY_SB_SIZE,
		      vi->tree_offset - vi->hash_offset - XIP_VERITY_SB_SIZE))
		return xip_verity_bad_at(bad, XIP_VERITY_SUPER, vi->hash_offset / bs, bs,
			      "verity superblock: bytes after it in its block");
	xip_verity_geom(vi->data_blocks, bs, vi->digest_size,
			vi->tree_offset / bs, &g);
	/* the top block against the root hash */
	ret = xip_verity_hasher_init(&h, vi->algorithm, vi->salt, vi->salt_size);
	if (!ret)
		ret = xip_verity_hash_block(&h, base + g.level_start[g.levels - 1] * bs,
				 bs, d);
	xip_verity_hasher_free(&h);
	if (ret)
		return xip_verity_hash_error(ret, "hashing failed");
	if (memcmp(d, root, root_len))
		return xip_verity_bad_at(bad, XIP_VERITY_ROOT, g.level_start[g.levels - 1],
			      bs,
			      "the root hash does not match hash block %" PRIu64 " (the top of the tree; or the salt, or a wrong root hash)",
			      g.level_start[g.levels - 1]);
	/* each level against the one above, top down, then the data */
	for (int i = (int)g.levels - 2; i >= -1; i--) {
		const uint8_t *src = i < 0 ? base : base + g.level_start[i] * bs;
		uint64_t n = i < 0 ? vi->data_blocks : g.level_size[i];
		uint64_t first = i < 0 ? 0 : g.level_start[i];

		k = check_blocks(vi, src, n, base + g.level_start[i + 1] * bs,
				 g.digest_full, threads);
		if (k < -1)
			return xip_verity_hash_error((int)k, "hashing failed");
		if (k < 0)
			continue;
		if (i < 0)
			return xip_verity_bad_at(bad, XIP_VERITY_DATA, (uint64_t)k, bs,
				      "data block %" PRId64 " does not match its hash",
				      k);
		return xip_verity_bad_at(bad, XIP_VERITY_HASH, first + (uint64_t)k, bs,
			      "hash block %" PRIu64 " (tree level %d) does not match its hash",
			      first + (uint64_t)k, i);
	}
	return 0;
}

int xip_verity_salt(const void *seed, size_t seed_len, uint8_t *salt)
{
	static const char prefix[] = "xiptool verity salt";
	unsigned int n;
	EVP_MD_CTX *ctx;
	int ok;

	if (!seed) {
		ssize_t got = getrandom(salt, XIP_VERITY_SALT_DEFAULT, 0);

		if (got != XIP_VERITY_SALT_DEFAULT)
			return xip_error(got < 0 ? -errno : -EIO,
					 "verity: no random salt: %s",
					 strerror(got < 0 ? errno : EIO));
		return 0;
	}
	ok = xip_lazy_load(XIP_LAZY_CRYPTO);
	if (ok)
		return ok;
	ctx = EVP_MD_CTX_new();
	ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
	     EVP_DigestUpdate(ctx, prefix, sizeof(prefix)) &&
	     EVP_DigestUpdate(ctx, seed, seed_len) &&
	     EVP_DigestFinal_ex(ctx, salt, &n);
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : xip_error(-ENOMEM, "verity: sha256 failed");
}

const char *xip_verity_where_name(enum xip_verity_where where)
{
	switch (where) {
	case XIP_VERITY_OK:
		return "none";
	case XIP_VERITY_DATA:
		return "data block";
	case XIP_VERITY_HASH:
		return "hash block";
	case XIP_VERITY_ROOT:
		return "root hash";
	case XIP_VERITY_SUPER:
		return "verity superblock";
	case XIP_VERITY_MISSING:
		return "hash tree missing";
	}
	return "?";
}
