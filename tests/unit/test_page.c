/* Unit tests of lib/engine/page.c and lib/engine/file.c: the read side of the engine. */
#include "unit.h"
#include "engine/engine_int.h"

#define BS 4096

/* byte i of file "pat" is (i * 7 + i / 4096) & 0xff */
static uint8_t pat(uint64_t i)
{
	return (uint8_t)(i * 7 + i / BS);
}

static void write_pattern(const char *path, uint64_t size)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	for (uint64_t i = 0; i < size; i++)
		fputc(pat(i), f);
	assert_int_equal(fclose(f), 0);
}

static const char *img_path;

static int setup_image(void **state)
{
	char cmd[2048];
	const char *tree = unit_path("tree");

	(void)state;
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/d/e' && truncate -s 8M '%s/sparse' && "
		 "printf abc | dd of='%s/sparse' bs=1 seek=5000000 conv=notrunc status=none && "
		 "ln -s d/e '%s/link' && ln -s /d '%s/d/e/up' && ln -s self '%s/self'",
		 tree, tree, tree, tree, tree, tree);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s/pat", tree);
	write_pattern(cmd, 1037 * BS + 100);
	img_path = unit_path("read.img");
	snprintf(cmd, sizeof(cmd),
		 "mke2fs -q -F -t ext2 -b 4096 -d '%s' '%s' 32M >/dev/null 2>&1",
		 tree, img_path);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static struct xip_image *open_img(void)
{
	struct xip_image *img;

	assert_int_equal(xip_image_open(img_path, 0, &img), 0);
	return img;
}

/* debugfs' opinion of where file block @lblk of @path lies */
static blk64_t debugfs_bmap(const char *path, uint64_t lblk)
{
	char cmd[1024];
	unsigned long long b = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "debugfs -R 'bmap %s %llu' '%s' 2>/dev/null",
		 path, (unsigned long long)lblk, img_path);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%llu", &b), 1);
	pclose(p);
	return b;
}

static void test_lookup(void **state)
{
	struct xip_image *img = open_img();
	ext2_ino_t ino, d, e;
	char name[EXT2_NAME_LEN + 1];

	(void)state;
	assert_int_equal(xip_lookup(img, "/", 0, &ino), 0);
	assert_int_equal(ino, EXT2_ROOT_INO);
	assert_int_equal(xip_lookup(img, "/..", 0, &ino), 0);
	assert_int_equal(ino, EXT2_ROOT_INO);
	assert_int_equal(xip_lookup(img, "/d", 0, &d), 0);
	assert_int_equal(xip_lookup(img, "/d/e", 0, &e), 0);
	assert_int_equal(xip_lookup(img, "/link", 0, &ino), 0);
	assert_int_equal(ino, e);
	assert_int_equal(xip_lookup(img, "/link", XIP_LOOKUP_NOFOLLOW, &ino), 0);
	assert_int_not_equal(ino, e);
	assert_int_equal(xip_lookup(img, "/link/up/e/..", 0, &ino), 0);
	assert_int_equal(ino, d);
	assert_int_equal(xip_lookup(img, "/nope", 0, &ino), -ENOENT);
	assert_non_null(strstr(xip_errmsg(), "/nope"));
	assert_int_equal(xip_lookup(img, "/pat/x", 0, &ino), -ENOTDIR);
	assert_int_equal(xip_lookup(img, "/pat/", 0, &ino), -ENOTDIR);
	assert_int_equal(xip_lookup(img, "/self", 0, &ino), -ELOOP);
	assert_int_equal(xip_lookup(img, "/self", XIP_LOOKUP_NOFOLLOW, &ino), 0);
	assert_int_equal(xip_lookup_parent(img, "/d/e/new", &ino, name), 0);
	assert_int_equal(ino, e);
	assert_string_equal(name, "new");
	assert_int_equal(xip_lookup_parent(img, "/nope/new", &ino, name), -ENOENT);
	assert_int_equal(xip_lookup_parent(img, "/d/", &ino, name), -EISDIR);
	xip_image_close(img);
}

static void test_read_inode_range(void **state)
{
	struct xip_image *img = open_img();
	struct ext2_inode_large in;

	(void)state;
	assert_int_equal(xip_read_inode(img, 0, &in), -EINVAL);
	assert_int_equal(xip_read_inode(img, img->fs->super->s_inodes_count + 1,
					&in), -EINVAL);
	assert_int_equal(xip_read_inode(img, EXT2_ROOT_INO, &in), 0);
	assert_true(LINUX_S_ISDIR(in.i_mode));
	xip_image_close(img);
}

static void test_get_page_and_bmap(void **state)
{
	struct xip_image *img = open_img();
	uint64_t pages[] = { 0, 11, 12, 13, 1035, 1036, 1037 };
	ext2_ino_t ino;
	blk64_t b;
	void *p;

	(void)state;
	assert_int_equal(xip_lookup(img, "/pat", 0, &ino), 0);
	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		uint64_t pg = pages[i];

		assert_int_equal(xip_bmap(img, ino, pg, &b), 0);
		assert_int_equal(b, debugfs_bmap("/pat", pg));
		assert_int_equal(xip_get_page(img, ino, pg, false, &p), 0);
		assert_ptr_equal(p, img->seg->base + b * BS);
		assert_int_equal(((uint8_t *)p)[0], pat(pg * BS));
		assert_int_equal(((uint8_t *)p)[99], pat(pg * BS + 99));
	}
	/* past the end of the data: a hole */
	assert_int_equal(xip_get_page(img, ino, 1038, false, &p), -ENODATA);
	assert_null(p);
	assert_int_equal(xip_bmap(img, ino, 5000, &b), 0);
	assert_int_equal(b, 0);
	/* read-only image: create refuses before touching anything */
	assert_true(xip_get_page(img, ino, 2000, true, &p) < 0);
	xip_image_close(img);
}

static void test_read(void **state)
{
	struct xip_image *img = open_img();
	uint64_t size = 1037 * BS + 100;
	uint8_t *buf = malloc(size + 10);
	ext2_ino_t ino;
	uint64_t offs[] = { 0, 1, 4095, 4096, 12 * BS - 1, 1036 * BS - 3,
			    size - 1, size, size + 5 };

	(void)state;
	assert_non_null(buf);
	assert_int_equal(xip_lookup(img, "/pat", 0, &ino), 0);
	assert_int_equal(xip_file_read(img, ino, 0, buf, size + 10), (ssize_t)size);
	for (uint64_t i = 0; i < size; i++)
		if (buf[i] != pat(i))
			fail_msg("byte %llu differs", (unsigned long long)i);
	for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
		uint64_t o = offs[k];
		ssize_t want = o >= size ? 0 : (ssize_t)((size - o) < 5000 ? size - o : 5000);

		memset(buf, 0xee, 5000);
		assert_int_equal(xip_file_read(img, ino, o, buf, 5000), want);
		for (ssize_t i = 0; i < want; i++)
			assert_int_equal(buf[i], pat(o + (uint64_t)i));
	}
	/* sparse: zeros around the data, the hole allocates nothing */
	assert_int_equal(xip_lookup(img, "/sparse", 0, &ino), 0);
	memset(buf, 0xee, 8192);
	assert_int_equal(xip_file_read(img, ino, 4999998, buf, 8), 8);
	assert_memory_equal(buf, "\0\0abc\0\0\0", 8);
	assert_int_equal(xip_file_read(img, ino, 0, buf, 8192), 8192);
	for (int i = 0; i < 8192; i++)
		assert_int_equal(buf[i], 0);
	/* a directory */
	assert_int_equal(xip_lookup(img, "/d", 0, &ino), 0);
	assert_int_equal(xip_file_read(img, ino, 0, buf, 10), -EISDIR);
	free(buf);
	xip_image_close(img);
}

static void test_runs_stat_dir(void **state)
{
	struct xip_image *img = open_img();
	struct xip_dirent *ents;
	struct xip_run *runs;
	struct xip_stat st;
	size_t n, total = 0;
	ext2_ino_t ino;
	char buf[64];
	bool dot = false, pat_seen = false;

	(void)state;
	assert_int_equal(xip_lookup(img, "/pat", 0, &ino), 0);
	assert_int_equal(xip_file_runs(img, ino, &runs, &n), 0);
	assert_true(n >= 1);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(runs[i].pblk, debugfs_bmap("/pat", runs[i].lblk));
		total += runs[i].len;
	}
	assert_int_equal(total, 1038);
	free(runs);
	assert_int_equal(xip_stat_inode(img, ino, &st), 0);
	assert_int_equal(st.size, 1037 * BS + 100);
	assert_int_equal(st.data_blocks, 1038);
	assert_int_equal(st.hole_blocks, 0);
	assert_int_equal(st.nruns, n);

	assert_int_equal(xip_lookup(img, "/sparse", 0, &ino), 0);
	assert_int_equal(xip_stat_inode(img, ino, &st), 0);
	assert_int_equal(st.data_blocks, 1);
	assert_int_equal(st.hole_blocks, 2047);
	assert_true(st.contiguous);

	assert_int_equal(xip_dir_list(img, EXT2_ROOT_INO, &ents, &n), 0);
	for (size_t i = 0; i < n; i++) {
		dot |= !strcmp(ents[i].name, ".");
		pat_seen |= !strcmp(ents[i].name, "pat");
	}
	assert_true(dot && pat_seen);
	free(ents);
	assert_int_equal(xip_dir_list(img, ino, &ents, &n), -ENOTDIR);

	assert_int_equal(xip_lookup(img, "/link", XIP_LOOKUP_NOFOLLOW, &ino), 0);
	assert_int_equal(xip_readlink(img, ino, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "d/e");
	assert_int_equal(xip_readlink(img, ino, buf, 3), -ENAMETOOLONG);
	assert_int_equal(xip_readlink(img, EXT2_ROOT_INO, buf, sizeof(buf)),
			 -EINVAL);
	xip_image_close(img);
}

/* A block number out of an indirect block that lies past the image. */
static void test_bad_indirect(void **state)
{
	const char *bad = unit_path("bad.img");
	struct xip_image *img;
	uint32_t v = 0x7fffffff;
	char cmd[1024];
	ext2_ino_t ino;
	blk64_t ind;
	void *p;

	(void)state;
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", img_path, bad);
	assert_int_equal(system(cmd), 0);
	img = open_img();
	assert_int_equal(xip_lookup(img, "/pat", 0, &ino), 0);
	{
		struct ext2_inode_large in;

		assert_int_equal(xip_read_inode(img, ino, &in), 0);
		ind = in.i_block[EXT2_IND_BLOCK];
	}
	xip_image_close(img);
	unit_poke(bad, (off_t)(ind * BS + 4 * 4), &v, 4);
	assert_int_equal(xip_image_open(bad, 0, &img), 0);
	assert_int_equal(xip_get_page(img, ino, 16, false, &p), -EUCLEAN);
	assert_non_null(strstr(xip_errmsg(), "beyond end of image"));
	assert_null(p);
	assert_int_equal(xip_get_page(img, ino, 15, false, &p), 0);
	xip_image_close(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_read_inode_range),
		cmocka_unit_test(test_get_page_and_bmap),
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_runs_stat_dir),
		cmocka_unit_test(test_bad_indirect),
	};

	return cmocka_run_group_tests(tests, setup_image, NULL);
}
