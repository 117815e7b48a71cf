/*
 * The two readers of block maps agree: the engine's (lib/reader/fsmap.c,
 * xip_file_runs) and verify's, which reads the image on its own
 * (lib/check/check_inode.c, through xip_chk_file_blocks).  Both must give, for
 * every file, the same physical block of every file block, and the same
 * as debugfs's `stat` shows: block-mapped files with holes in the direct
 * blocks and under single, double and triple indirect blocks, on images
 * made by mke2fs and debugfs `write` and by xiptool mkfs (xip_build);
 * extent-mapped files on an ext4 image made by mke2fs and debugfs, where
 * verify does not walk (it takes extents for "not ext2") and the engine
 * is compared with debugfs alone.
 */
#include "unit.h"
#include "check/check_int.h"

#define MAX_BLOCKS 4096

/* One mapped file block. */
struct mapped {
	uint64_t lblk, pblk;
};

struct blist {
	struct mapped b[MAX_BLOCKS];
	size_t n;
};

static void add(struct blist *l, uint64_t lblk, uint64_t pblk)
{
	assert_true(l->n < MAX_BLOCKS);
	l->b[l->n].lblk = lblk;
	l->b[l->n].pblk = pblk;
	l->n++;
}

/* The engine: xip_file_runs, one entry per file block. */
static void engine_blocks(const char *img, const char *path, struct blist *l)
{
	struct xip_image *xi;
	struct xip_run *runs;
	size_t nruns;
	ext2_ino_t ino;

	l->n = 0;
	assert_int_equal(xip_image_open_read(img, XIP_IMG_NOLOCK, &xi), 0);
	assert_int_equal(xip_lookup(xi, path, 0, &ino), 0);
	assert_int_equal(xip_file_runs(xi, ino, &runs, &nruns), 0);
	for (size_t i = 0; i < nruns; i++)
		for (uint64_t k = 0; k < runs[i].len; k++)
			add(l, runs[i].lblk + k, runs[i].pblk + k);
	free(runs);
	xip_image_close(xi);
}

static int verify_add(void *arg, uint64_t lblk, uint64_t pblk)
{
	add(arg, lblk, pblk);
	return 0;
}

/* The inode number of @path, from debugfs (not from either reader). */
static uint32_t debugfs_ino(const char *img, const char *path)
{
	char cmd[1024], line[256];
	unsigned int ino = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "debugfs -R 'stat %s' '%s' 2>/dev/null",
		 path, img);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (!ino)
			sscanf(line, "Inode: %u", &ino);
	pclose(f);
	assert_true(ino > 0);
	return ino;
}

/* verify's walk; its return value. */
static int verify_blocks(const char *img, const char *path, struct blist *l)
{
	struct xip_seg *seg;
	uint32_t ino = debugfs_ino(img, path);
	int ret;

	l->n = 0;
	assert_int_equal(xip_seg_open(img, 0, &seg), 0);
	ret = xip_chk_file_blocks(seg, ino, verify_add, l);
	xip_seg_close(seg);
	return ret;
}

/*
 * debugfs's list: the BLOCKS: (or EXTENTS:) section of `stat`, whose
 * entries are "(L):P" or "(L1-L2):P1-P2"; the map's own blocks ("(IND)",
 * "(ETB0)" and the like) are left out.
 */
static void debugfs_blocks(const char *img, const char *path, struct blist *l)
{
	char cmd[1024], *line = NULL;
	bool in_list = false;
	size_t cap = 0;
	FILE *f;

	l->n = 0;
	snprintf(cmd, sizeof(cmd),
		 "DEBUGFS_PAGER=__none__ debugfs -R 'stat %s' '%s' 2>/dev/null",
		 path, img);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (getline(&line, &cap, f) > 0) {
		if (!strncmp(line, "BLOCKS:", 7) || !strncmp(line, "EXTENTS:", 8)) {
			in_list = true;
			continue;
		}
		if (!in_list || !strncmp(line, "TOTAL:", 6))
			continue;
		for (char *p = strchr(line, '('); p; p = strchr(p + 1, '(')) {
			unsigned long long l1, l2, p1, p2;

			if (sscanf(p, "(%llu-%llu):%llu-%llu", &l1, &l2, &p1,
				   &p2) == 4) {
				assert_int_equal(l2 - l1, p2 - p1);
				for (unsigned long long k = 0; k <= l2 - l1; k++)
					add(l, l1 + k, p1 + k);
			} else if (sscanf(p, "(%llu):%llu", &l1, &p1) == 2) {
				add(l, l1, p1);
			}
		}
	}
	free(line);
	pclose(f);
}

static void same(const struct blist *a, const struct blist *b,
		 const char *what, const char *path)
{
	size_t n = a->n < b->n ? a->n : b->n;

	for (size_t i = 0; i < n; i++)
		if (a->b[i].lblk != b->b[i].lblk ||
		    a->b[i].pblk != b->b[i].pblk) {
			fprintf(stderr,
				"# %s %s: file block %llu at %llu, %llu at %llu\n",
				what, path, (unsigned long long)a->b[i].lblk,
				(unsigned long long)a->b[i].pblk,
				(unsigned long long)b->b[i].lblk,
				(unsigned long long)b->b[i].pblk);
			fail();
		}
	if (a->n != b->n)
		fprintf(stderr, "# %s %s: %zu and %zu blocks\n", what, path,
			a->n, b->n);
	assert_int_equal(a->n, b->n);
}

/*
 * The engine, verify and debugfs on file @path of a block-mapped image;
 * its last mapped file block must be at least @reach (the level of the
 * map the file is meant to use).
 */
static void compare3(const char *img, const char *path, uint64_t reach)
{
	static struct blist eng, ver, dbg;

	engine_blocks(img, path, &eng);
	assert_int_equal(verify_blocks(img, path, &ver), 0);
	debugfs_blocks(img, path, &dbg);
	assert_true(dbg.n > 0);
	assert_true(dbg.b[dbg.n - 1].lblk >= reach);
	same(&eng, &dbg, "engine and debugfs disagree on", path);
	same(&ver, &dbg, "verify and debugfs disagree on", path);
	same(&eng, &ver, "engine and verify disagree on", path);
}

/*
 * Write @nblk blocks of @bs random bytes at each file block of @at into
 * a new sparse file @path (holes between them).
 */
static void sparse_file(const char *path, unsigned int bs,
			const unsigned long *at, size_t n, unsigned int nblk)
{
	unit_sh("rm -f '%s' && touch '%s'", path, path);
	for (size_t i = 0; i < n; i++)
		unit_sh("head -c %u /dev/urandom | dd of='%s' bs=%u seek=%lu conv=notrunc status=none",
			nblk * bs, path, bs, at[i]);
}

/*
 * Files for every level of a block map with @bs-byte blocks, in @dir:
 * "holes" with single blocks in the direct blocks and under the single,
 * double and (1 KiB blocks only, or the file would be over 4 GiB) triple
 * indirect blocks, holes between; "runs" with runs of blocks across the
 * boundaries of the levels; "dense", every block written; "small".
 * Returns the first file block of the deepest level used.
 */
static uint64_t make_files(const char *dir, unsigned int bs)
{
	uint64_t apb = bs / 4, ind = 12, dind = ind + apb;
	uint64_t tind = dind + apb * apb;
	unsigned long holes[] = { 0, 3, 11, ind, ind + 5, dind - 1, dind,
				  dind + apb + 7, dind + 3 * apb, tind,
				  tind + 1, tind + apb * apb + apb + 2 };
	unsigned long runs[] = { 8, ind + apb - 4, dind + apb - 2, tind - 2 };
	size_t nholes = sizeof(holes) / sizeof(holes[0]);
	size_t nruns = sizeof(runs) / sizeof(runs[0]);
	char p[320];

	if (bs > 1024) {	/* no triple indirect */
		nholes -= 3;
		nruns -= 1;
	}
	unit_sh("rm -rf '%s' && mkdir -p '%s'", dir, dir);
	snprintf(p, sizeof(p), "%s/holes", dir);
	sparse_file(p, bs, holes, nholes, 1);
	snprintf(p, sizeof(p), "%s/runs", dir);
	sparse_file(p, bs, runs, nruns, 6);
	unit_sh("head -c %llu /dev/urandom > '%s/dense'",
		(unsigned long long)(dind + 40) * bs, dir);
	unit_sh("head -c 5000 /dev/urandom > '%s/small'", dir);
	return bs > 1024 ? dind : tind;
}

static void check_files(const char *img, uint64_t deepest, unsigned int bs)
{
	compare3(img, "/holes", deepest);
	compare3(img, "/runs", deepest - 2);
	compare3(img, "/dense", 12 + bs / 4);
	compare3(img, "/small", 0);
}

/* An image of @bs-byte blocks, and who writes the files into it. */
struct files_case {
	unsigned int bs;
	bool own;	/* xiptool mkfs's own writer (xip_build), else debugfs */
};

/*
 * The files in an image checked by e2fsck and the three readers: written
 * by xip_build, or by mke2fs then debugfs `write`, file by file.
 */
static void test_files_image(void **state)
{
	const struct files_case *c = *state;
	unsigned int bs = c->bs;
	bool own = c->own;
	struct xip_build_opts o = { 0 };
	char dir[300], img[300];
	uint64_t deepest;

	snprintf(dir, sizeof(dir), "%s", unit_path("src"));
	snprintf(img, sizeof(img), "%s",
		 unit_path(own ? "mkfs.img" : "debugfs.img"));
	deepest = make_files(dir, bs);
	if (own) {
		unit_sh("rm -f '%s'", img);
		o.source = dir;
		o.block_size = bs;
		assert_int_equal(xip_build(img, &o, NULL), 0);
	} else {
		unit_mke2fs(img, "16M", bs, NULL);
		unit_sh("cd '%s' && for f in holes runs dense small; do "
			"debugfs -w -R \"write $f /$f\" '%s' >/dev/null 2>&1 || exit 1; done",
			dir, img);
	}
	unit_sh("e2fsck -fn '%s' >/dev/null 2>&1", img);
	check_files(img, deepest, bs);
}

/*
 * Extent trees: debugfs `write` on ext4 (no journal).  A file with a
 * block every other block has more extents than the inode holds: a tree
 * of depth 1.  verify refuses the image; the engine agrees with debugfs.
 */
static void test_extents(void **state)
{
	static struct blist eng, ver, dbg;
	static const char *const files[] = { "/tree", "/wide", "/dense" };
	unsigned long every_other[40], wide[] = { 0, 100, 5000, 70000 };
	char dir[300], img[300], p[400];

	(void)state;
	for (size_t i = 0; i < 40; i++)
		every_other[i] = 2 * i;
	snprintf(dir, sizeof(dir), "%s", unit_path("src"));
	snprintf(img, sizeof(img), "%s", unit_path("ext4.img"));
	unit_sh("rm -rf '%s' && mkdir -p '%s'", dir, dir);
	snprintf(p, sizeof(p), "%s/tree", dir);
	sparse_file(p, 4096, every_other, 40, 1);
	snprintf(p, sizeof(p), "%s/wide", dir);
	sparse_file(p, 4096, wide, 4, 3);
	unit_sh("head -c 300000 /dev/urandom > '%s/dense'", dir);
	unit_sh("rm -f '%s' && mke2fs -q -F -t ext4 -O ^has_journal -b 4096 '%s' 16M >/dev/null 2>&1",
		img, img);
	unit_sh("cd '%s' && for f in tree wide dense; do "
		"debugfs -w -R \"write $f /$f\" '%s' >/dev/null 2>&1 || exit 1; done",
		dir, img);
	unit_sh("e2fsck -fn '%s' >/dev/null 2>&1", img);
	unit_sh("debugfs -R 'stat /tree' '%s' 2>/dev/null | grep -q 'ETB0'", img);
	for (size_t i = 0; i < 3; i++) {
		engine_blocks(img, files[i], &eng);
		debugfs_blocks(img, files[i], &dbg);
		assert_true(dbg.n > 0);
		same(&eng, &dbg, "engine and debugfs disagree on", files[i]);
		assert_int_equal(verify_blocks(img, files[i], &ver),
				 -EUCLEAN);
	}
	assert_int_equal(eng.n, 74);	/* "dense": 300000 bytes */
}

int main(void)
{
	struct files_case debugfs_1k = { 1024, false };
	struct files_case debugfs_4k = { 4096, false };
	struct files_case mkfs_1k = { 1024, true }, mkfs_4k = { 4096, true };
	const struct CMUnitTest tests[] = {
		{ "test_debugfs_1k", test_files_image, NULL, NULL, &debugfs_1k },
		{ "test_debugfs_4k", test_files_image, NULL, NULL, &debugfs_4k },
		{ "test_mkfs_1k", test_files_image, NULL, NULL, &mkfs_1k },
		{ "test_mkfs_4k", test_files_image, NULL, NULL, &mkfs_4k },
		cmocka_unit_test(test_extents),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
