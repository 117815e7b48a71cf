/* Unit tests of lib/check/check.c: the verify walk on real and hostile images. */
#include "unit.h"
#include "check/check_int.h"

#include <time.h>

static int run_check(const char *path, const struct xip_check_opts *o,
		     struct xip_check_report *rep)
{
	struct xip_seg *seg;
	int ret;

	assert_int_equal(xip_seg_open(path, 0, &seg), 0);
	ret = xip_check(seg, o, rep);
	xip_seg_close(seg);
	return ret;
}

/* Is there a finding whose message contains @text? */
static bool has(const struct xip_check_report *rep, const char *text)
{
	for (size_t i = 0; i < rep->nfindings; i++)
		if (strstr(rep->findings[i].msg, text))
			return true;
	return false;
}

static void dump(const struct xip_check_report *rep)
{
	for (size_t i = 0; i < rep->nfindings; i++)
		fprintf(stderr, "# %s\n", rep->findings[i].msg);
}

static void poke32(const char *path, off_t off, uint32_t v)
{
	unit_poke(path, off, &v, 4);
}

static uint32_t peek32(const char *path, off_t off)
{
	uint32_t v;

	unit_peek(path, off, &v, 4);
	return v;
}

/* Byte offset of inode @ino in a one-group image with 4 KiB blocks. */
static off_t inode_off(const char *path, uint32_t ino)
{
	uint32_t itable = peek32(path, 4096 + 8);	/* bg_inode_table */
	uint16_t isz;

	unit_peek(path, 1024 + 88, &isz, 2);		/* s_inode_size */
	return (off_t)itable * 4096 + (off_t)(ino - 1) * isz;
}

static void make_file_image(const char *image)
{
	char cmd[4096], path[512], src[512];

	snprintf(path, sizeof(path), "%s", image);
	snprintf(src, sizeof(src), "%s", unit_path("src"));

	snprintf(cmd, sizeof(cmd),
		 "rm -rf '%s' && mkdir -p '%s/d' && head -c 200000 /dev/urandom > '%s/f' && "
		 "echo x > '%s/d/g' && ln -s f '%s/l'",
		 src, src, src, src, src);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd),
		 "rm -f '%s' && mke2fs -q -F -t ext2 -b 4096 -N 256 -d '%s' '%s' 8M >/dev/null 2>&1",
		 path, src, path);
	assert_int_equal(system(cmd), 0);
}

static void test_clean(void **state)
{
	const char *p = unit_path("clean");
	struct xip_check_report rep;

	make_file_image(p);
	assert_int_equal(run_check(p, NULL, &rep), 0);
	dump(&rep);
	assert_true(rep.walked);
	assert_int_equal(rep.errors, 0);
	/* /f has 49 blocks: the indirect block splits them */
	assert_int_equal(rep.warnings, 1);
	assert_true(has(&rep, "(/f): file data is not contiguous (2 runs)"));
	assert_int_equal(rep.files, 2);
	xip_check_report_free(&rep);
}

static void test_not_ext2(void **state)
{
	const char *p = unit_path("zeros");
	struct xip_check_report rep;

	unit_fill_file(p, 1 << 20, 0);
	assert_int_equal(run_check(p, NULL, &rep), -EUCLEAN);
	assert_non_null(strstr(xip_errmsg(), "no ext2 superblock"));
	unit_fill_file(p, 100, 0);
	assert_int_equal(run_check(p, NULL, &rep), -EUCLEAN);
	assert_non_null(strstr(xip_errmsg(), "too small"));
}

/* A damaged geometry field stops the walk with a finding naming it. */
/* The free counts of the superblock and of a group against the bitmaps. */
static void test_free_counts(void **state)
{
	const char *p = unit_path("free");
	struct xip_check_report rep;
	uint32_t sfree, gfree = 0;

	(void)state;
	make_file_image(p);
	sfree = peek32(p, 1024 + 12);		/* s_free_blocks_count */
	poke32(p, 1024 + 12, sfree - 3);
	assert_int_equal(run_check(p, NULL, &rep), 0);
	dump(&rep);
	assert_true(has(&rep, "superblock: free block count"));
	assert_true(rep.errors >= 1);
	xip_check_report_free(&rep);
	make_file_image(p);
	unit_peek(p, 4096 + 12, &gfree, 2);	/* bg_free_blocks_count */
	gfree -= 2;
	unit_poke(p, 4096 + 12, &gfree, 2);
	assert_int_equal(run_check(p, NULL, &rep), 0);
	dump(&rep);
	assert_true(has(&rep, "group 0: free block count"));
	xip_check_report_free(&rep);
}

static void test_superblock_fields(void **state)
{
	static const struct {
		off_t off;
		uint32_t val;
		const char *field;
	} cases[] = {
		{ 1024 + 0, 999, "s_inodes_count" },
		{ 1024 + 4, 0xffffff, "s_blocks_count" },
		/* one group still, its inodes counted right: past the image */
		{ 1024 + 4, 4096, "(s_blocks_count) exceeds the image" },
		{ 1024 + 24, 12, "s_log_block_size" },
		{ 1024 + 32, 9, "s_blocks_per_group" },
		{ 1024 + 40, 0, "s_inodes_per_group" },
		{ 1024 + 76, 7, "s_rev_level" },
		{ 1024 + 84, 2, "s_first_ino" },
		/* s_inode_size (s_block_group_nr 0): not a power of two */
		{ 1024 + 88, 200, "s_inode_size" },
	};
	const char *p = unit_path("sb");
	struct xip_check_report rep;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unit_mke2fs(p, "8M", 4096, NULL);
		poke32(p, cases[i].off, cases[i].val);
		assert_int_equal(run_check(p, NULL, &rep), 0);
		if (!has(&rep, cases[i].field))
			dump(&rep);
		assert_true(has(&rep, cases[i].field));
		assert_false(rep.walked);
		assert_true(rep.errors >= 1);
		xip_check_report_free(&rep);
	}
}

static void test_cross_link_names_both(void **state)
{
	const char *p = unit_path("xlink");
	struct xip_check_report rep;
	uint32_t g_blk;
	off_t f = 0, g = 0;
	char msg[128];

	make_file_image(p);
	/* find the inodes of /f and /d/g: the first regular files */
	for (uint32_t ino = 12; ino < 20 && (!f || !g); ino++) {
		uint16_t mode;
		uint32_t size;

		unit_peek(p, inode_off(p, ino), &mode, 2);
		unit_peek(p, inode_off(p, ino) + 4, &size, 4);
		if ((mode & 0170000) == 0100000 && size == 200000)
			f = inode_off(p, ino);
		else if ((mode & 0170000) == 0100000 && size == 2)
			g = inode_off(p, ino);
	}
	assert_true(f && g);
	g_blk = peek32(p, g + 40);
	poke32(p, f + 40 + 4, g_blk);	/* /f's block 1 := /d/g's block */
	assert_int_equal(run_check(p, NULL, &rep), 0);
	snprintf(msg, sizeof(msg), "block %u is also claimed by inode", g_blk);
	dump(&rep);
	assert_true(has(&rep, msg));
	assert_true(has(&rep, "(/f): block"));
	assert_true(rep.errors >= 1);
	xip_check_report_free(&rep);
}

/*
 * One damage to a directory entry of /d ('.' at 0, '..' at 12, 'g' at 24,
 * to the end of the block) and the finding it must give: up to two
 * little-endian fields of @size bytes at @off in the block.
 */
struct dent_case {
	struct { unsigned int off, size; uint32_t v; } f[2];
	const char *want;
};

#define ARRAY_N(a) (sizeof(a) / sizeof((a)[0]))

static const struct dent_case dent_cases[] = {
	{ { { 12 + 4, 2, 14 } }, "invalid rec_len 14" },
	{ { { 4, 2, 8 }, { 6, 1, 0 } }, "invalid rec_len 8" },
	{ { { 24 + 4, 2, 4076 } }, "invalid rec_len 4076" },
	{ { { 24 + 4, 2, 4068 } }, "entry at offset 4092 is truncated" },
	{ { { 6, 1, 5 } }, "name_len 5 exceeds rec_len 12" },
	{ { { 24, 4, 257 } }, "'g' has invalid inode number 257" },
	{ { { 24, 4, 7 } }, "'g' points to reserved inode 7" },
	{ { { 24, 4, 250 } }, "'g' points to unused inode 250" },
	{ { { 24 + 7, 1, 2 } },
	  "has file type directory, the inode is a regular file" },
	{ { { 0, 4, 2 } }, "'.' points to inode 2" },
	{ { { 8, 1, 'x' } }, "first entry is 'x', not '.'" },
	{ { { 12 + 9, 1, 'x' } }, "second entry is '.x', not '..'" },
	{ { { 0, 4, 0 } }, "missing '.' entry" },
	{ { { 12, 4, 11 } }, "'..' is inode 11, should be 2" },
	{ { { 24 + 8, 1, '.' } }, "extra '.' entry" },
	{ { { 24 + 6, 1, 0 } }, "entry with an empty name" },
	{ { { 24 + 8, 1, '/' } }, "'/' or NUL in its name" },
	{ { { 24, 4, 11 }, { 24 + 7, 1, 2 } },
	  "second link to directory inode 11 (/lost+found)" },
};

static void test_dir_entries(void **state)
{
	const char *clean = unit_path("dents"), *p = unit_path("dent");
	struct xip_check_report rep;
	uint32_t dblk = 0;
	char cmd[1200], g[2];
	uint16_t rec;

	(void)state;
	make_file_image(clean);
	for (uint32_t ino = 12; ino < 20 && !dblk; ino++) {
		uint16_t mode;

		unit_peek(clean, inode_off(clean, ino), &mode, 2);
		if ((mode & 0170000) == 0040000)
			dblk = peek32(clean, inode_off(clean, ino) + 40);
	}
	assert_true(dblk);
	/* what the cases assume: 256 inodes, 'g' at 24, last in the block */
	assert_int_equal(peek32(clean, 1024), 256);	/* s_inodes_count */
	unit_peek(clean, (off_t)dblk * 4096 + 24 + 4, &rec, 2);
	assert_int_equal(rec, 4096 - 24);
	unit_peek(clean, (off_t)dblk * 4096 + 24 + 6, g, 2);
	assert_int_equal(g[0], 1);
	unit_peek(clean, (off_t)dblk * 4096 + 24 + 8, g, 1);
	assert_int_equal(g[0], 'g');
	for (size_t i = 0; i < ARRAY_N(dent_cases); i++) {
		const struct dent_case *k = &dent_cases[i];

		snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", clean, p);
		assert_int_equal(system(cmd), 0);
		for (int j = 0; j < 2 && k->f[j].size; j++)
			unit_poke(p, (off_t)dblk * 4096 + k->f[j].off,
				  &k->f[j].v, k->f[j].size);
		assert_int_equal(run_check(p, NULL, &rep), 0);
		if (!has(&rep, k->want)) {
			dump(&rep);
			fail_msg("case %zu: no finding '%s'", i, k->want);
		}
		assert_true(rep.errors >= 1);
		xip_check_report_free(&rep);
	}
}

/*
 * A hostile file: every triple, double and single indirect pointer names
 * the same block.  Each block is descended into once, so the walk ends at
 * once, reporting the repeats.
 */
static void test_self_referencing_indirect(void **state)
{
	const char *p = unit_path("selfref");
	struct xip_check_report rep;
	uint32_t blk = 1500, buf[1024];
	off_t f;
	clock_t t0;

	make_file_image(p);
	f = inode_off(p, 12);
	for (int i = 0; i < 1024; i++)
		buf[i] = blk;
	unit_poke(p, (off_t)blk * 4096, buf, sizeof(buf));
	for (int i = 0; i < 15; i++)
		poke32(p, f + 40 + 4 * i, blk);
	t0 = clock();
	assert_int_equal(run_check(p, NULL, &rep), 0);
	assert_true(clock() - t0 < 5 * CLOCKS_PER_SEC);
	assert_true(rep.errors >= 2);
	assert_true(has(&rep, "is claimed twice by this inode"));
	assert_true(rep.errors >= 14);
	xip_check_report_free(&rep);
}

/* Every inode of the table set to random bytes: no crash, errors. */
static void test_random_inode_table(void **state)
{
	struct xip_check_report rep;
	uint8_t buf[4096];
	char p[512];
	uint32_t itable;

	snprintf(p, sizeof(p), "%s", unit_path("rnd"));
	srand(1234);
	for (int round = 0; round < 8; round++) {
		make_file_image(p);
		itable = peek32(p, 4096 + 8);
		for (int b = 0; b < 4; b++) {
			for (size_t i = 0; i < sizeof(buf); i++)
				buf[i] = (uint8_t)rand();
			unit_poke(p, ((off_t)itable + b) * 4096, buf,
				  sizeof(buf));
		}
		assert_int_equal(run_check(p, NULL, &rep), 0);
		assert_true(rep.walked);
		assert_true(rep.errors > 0);
		xip_check_report_free(&rep);
	}
}

static void test_page_size_option(void **state)
{
	const char *p = unit_path("k1");
	struct xip_check_opts o = { .page_size = 1024 };
	struct xip_check_report rep;

	unit_mke2fs(p, "4M", 1024, NULL);
	assert_int_equal(run_check(p, &o, &rep), 0);
	dump(&rep);
	assert_int_equal(rep.errors, 0);
	assert_int_equal(rep.page_size, 1024);
	xip_check_report_free(&rep);
	o.page_size = 4096;
	assert_int_equal(run_check(p, &o, &rep), 0);
	assert_true(has(&rep, "block size 1024 differs from page size 4096"));
	xip_check_report_free(&rep);
}

static void test_against(void **state)
{
	const char *p = unit_path("ag");
	const char *src = unit_path("src");
	struct xip_check_opts o = { .against = src };
	struct xip_check_report rep;
	char cmd[4096], dref[512];

	make_file_image(p);
	snprintf(dref, sizeof(dref), "%s", unit_path("dref"));
	assert_int_equal(run_check(p, &o, &rep), 0);
	dump(&rep);
	assert_int_equal(rep.errors, 0);
	xip_check_report_free(&rep);
	/* same size, same mtime, other bytes; the directory keeps its mtime */
	snprintf(cmd, sizeof(cmd), "touch -r '%s/d' '%s' && printf y > '%s/d/g.tmp' && echo >> '%s/d/g.tmp' && touch -r '%s/d/g' '%s/d/g.tmp' && mv '%s/d/g.tmp' '%s/d/g' && touch -r '%s' '%s/d'",
		 src, dref, src, src, src, src, src, src, dref, src);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(run_check(p, &o, &rep), 0);
	dump(&rep);
	assert_true(has(&rep, "/d/g: content differs"));
	assert_int_equal(rep.errors, 1);
	xip_check_report_free(&rep);
}

/*
 * A finding before a failure (an unknown compatible feature, then a
 * --against tree that does not exist): xip_check fails and leaves nothing
 * allocated in the report.
 */
static void test_failure_leaves_report_empty(void **state)
{
	const char *img = unit_path("compat.img");
	struct xip_check_opts o = { .against = unit_path("no-such-tree") };
	struct xip_check_report rep;

	unit_mke2fs(img, "8M", 4096, NULL);
	poke32(img, 1024 + 0x5c, peek32(img, 1024 + 0x5c) | 0x40000000);
	assert_int_equal(run_check(img, &o, &rep), -ENOENT);
	assert_int_equal(rep.nfindings, 0);
	assert_null(rep.findings);
	xip_check_report_free(&rep);	/* harmless on an empty report */
	/* without --against the walk runs and reports the feature */
	assert_int_equal(run_check(img, NULL, &rep), 0);
	assert_true(has(&rep, "unknown compatible features 0x40000000"));
	xip_check_report_free(&rep);
}

/* ext3/ext4 features are a problem that stops the walk (exit 1), not an
 * unreadable image: e2fsck reads such images. */
static void test_ext4_features_are_problems(void **state)
{
	const char *img = unit_path("extents.img");
	struct xip_check_report rep;

	unit_mke2fs(img, "8M", 4096, "-O extents");
	assert_int_equal(run_check(img, NULL, &rep), 0);
	assert_true(rep.errors > 0);
	if (!has(&rep, "superblock: feature extent is not ext2 (s_feature_incompat 0x"))
		dump(&rep);
	assert_true(has(&rep, "is not ext2 (s_feature_incompat 0x"));
	xip_check_report_free(&rep);
}

/* ---- the bitmap helpers, against a bit-by-bit reference ---------------- */

struct runs {
	uint64_t from[40000], to[40000];
	bool used[40000];
	size_t n;
};

static void record_run(void *arg, uint64_t from, uint64_t to, bool used)
{
	struct runs *r = arg;

	assert_true(r->n < 40000);
	r->from[r->n] = from;
	r->to[r->n] = to;
	r->used[r->n++] = used;
}

static bool tbit(const uint8_t *m, uint64_t i)
{
	return m[i / 8] >> (i % 8) & 1;
}

/* What the comparison must give, one bit at a time. */
static uint64_t ref_cmp(const uint8_t *disk, const uint8_t *want, uint64_t n,
			uint64_t nbits, bool *pad_ok, struct runs *r)
{
	uint64_t free_count = 0, from = 0;
	int state = -1;

	for (uint64_t i = 0; i <= n; i++) {
		int s = i < n && tbit(disk, i) != tbit(want, i) ?
			(int)tbit(want, i) : -1;

		if (i < n && !tbit(want, i))
			free_count++;
		if (s != state) {
			if (state >= 0)
				record_run(r, from, i - 1, state);
			from = i;
			state = s;
		}
	}
	*pad_ok = true;
	for (uint64_t i = n; i < nbits; i++)
		if (!tbit(disk, i))
			*pad_ok = false;
	return free_count;
}

static void test_bitmap_cmp(void **state)
{
	static uint8_t disk[4096], want[4096];
	static struct runs a, b;
	unsigned int seed = 12345;

	(void)state;
	for (int round = 0; round < 400; round++) {
		uint64_t nbits = round % 3 ? 8 * (1 + rand_r(&seed) % 512) :
			sizeof(disk) * 8;
		uint64_t n = round % 5 ? 1 + (uint64_t)rand_r(&seed) % nbits :
			nbits;
		int kind = round % 4;
		bool pa, pb;

		for (size_t i = 0; i < sizeof(disk); i++) {
			/* random, equal, equal but a few bits, all set */
			want[i] = (uint8_t)rand_r(&seed);
			disk[i] = kind == 0 ? (uint8_t)rand_r(&seed) :
				  kind == 3 ? 0xff : want[i];
		}
		if (kind == 2)
			for (int k = 0; k < 5; k++) {
				uint64_t bit = (uint64_t)rand_r(&seed) % nbits;

				disk[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			}
		if (kind == 1)	/* padding set: the usual case */
			for (uint64_t i = n; i < nbits; i++)
				disk[i / 8] |= (uint8_t)(1u << (i % 8));
		a.n = b.n = 0;
		assert_int_equal(xip_chk_bitmap_cmp(disk, want, n, nbits, &pa,
						    record_run, &a),
				 ref_cmp(disk, want, n, nbits, &pb, &b));
		assert_int_equal(pa, pb);
		assert_int_equal(a.n, b.n);
		for (size_t i = 0; i < a.n; i++) {
			assert_int_equal(a.from[i], b.from[i]);
			assert_int_equal(a.to[i], b.to[i]);
			assert_int_equal(a.used[i], b.used[i]);
		}
		if (kind == 1) {
			assert_true(pa);
			assert_int_equal(a.n, 0);
		}
	}
}

static void test_set_bits(void **state)
{
	static uint8_t map[512], ref[512];
	unsigned int seed = 99;

	(void)state;
	for (int round = 0; round < 2000; round++) {
		uint64_t from = (uint64_t)rand_r(&seed) % (8 * sizeof(map));
		uint64_t to = from + (uint64_t)rand_r(&seed) %
			      (8 * sizeof(map) - from + 1);

		memset(map, round & 1 ? 0 : 0x5a, sizeof(map));
		memcpy(ref, map, sizeof(map));
		xip_chk_set_bits(map, from, to);
		for (uint64_t i = from; i < to; i++)
			ref[i / 8] |= (uint8_t)(1u << (i % 8));
		assert_memory_equal(map, ref, sizeof(map));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_not_ext2),
		cmocka_unit_test(test_superblock_fields),
		cmocka_unit_test(test_free_counts),
		cmocka_unit_test(test_cross_link_names_both),
		cmocka_unit_test(test_dir_entries),
		cmocka_unit_test(test_self_referencing_indirect),
		cmocka_unit_test(test_random_inode_table),
		cmocka_unit_test(test_page_size_option),
		cmocka_unit_test(test_against),
		cmocka_unit_test(test_failure_leaves_report_empty),
		cmocka_unit_test(test_ext4_features_are_problems),
		cmocka_unit_test(test_bitmap_cmp),
		cmocka_unit_test(test_set_bits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
