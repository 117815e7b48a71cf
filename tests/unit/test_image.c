/* Unit tests of lib/image.c: opening good and damaged images. */
#include "unit.h"

static void test_open_good(void **state)
{
	const char *p = unit_path("good.img");
	struct xip_image_info in;
	struct xip_image *img;
	char type[32];

	unit_mke2fs(p, "8M", 4096, "-N 128");
	assert_int_equal(xip_image_open(p, 0, &img), 0);
	assert_int_equal(img->block_size, 4096);
	assert_int_equal(xip_identify(img->seg, type, sizeof(type)), 0);
	assert_string_equal(type, "ext2");
	assert_int_equal(xip_image_info(img, &in), 0);
	assert_int_equal(in.blocks, 2048);
	assert_int_equal(in.inodes, 128);
	assert_int_equal(in.groups, 1);
	assert_string_equal(in.label, "unitlabel");
	assert_string_equal(in.fstype, "ext2");
	assert_int_equal(in.size, 8 << 20);
	assert_true(in.xip_capable == (xip_host_page_size() == 4096));
	assert_int_equal(xip_image_close(img), 0);

	/* writable open and close leave a valid image */
	assert_int_equal(xip_image_open(p, XIP_IMG_WRITE, &img), 0);
	assert_true(img->writable);
	assert_int_equal(xip_image_close(img), 0);
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "e2fsck -fn '%s' >/dev/null 2>&1", p);
		assert_int_equal(system(cmd), 0);
	}
}

static void test_not_xip(void **state)
{
	const char *p = unit_path("k1.img");
	struct xip_image *img;
	char why[256];

	unit_mke2fs(p, "4M", 1024, NULL);
	assert_int_equal(xip_image_open(p, 0, &img), 0);
	assert_int_equal(xip_image_xip_capable(img, 4096, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "block size 1024"));
	assert_int_equal(xip_image_xip_capable(img, 1024, why, sizeof(why)), 1);
	xip_image_close(img);

	/* a size that is not a multiple of the page size */
	p = unit_path("odd.img");
	unit_mke2fs(p, "4M", 4096, NULL);
	assert_int_equal(truncate(p, (4 << 20) + 512), 0);
	assert_int_equal(xip_image_open(p, 0, &img), 0);
	assert_int_equal(xip_image_xip_capable(img, 4096, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "not a multiple"));
	xip_image_close(img);
}

static void expect_open_error(const char *p, int err, const char *needle)
{
	struct xip_image *img = NULL;

	assert_int_equal(xip_image_open(p, 0, &img), err);
	assert_null(img);
	if (!strstr(xip_errmsg(), needle))
		fail_msg("message '%s' lacks '%s'", xip_errmsg(), needle);
	/* the message names the file */
	assert_non_null(strstr(xip_errmsg(), p));
}

static void test_damaged_superblock(void **state)
{
	const char *p = unit_path("bad.img");
	uint32_t v;
	uint16_t m;

	unit_mke2fs(p, "8M", 4096, NULL);
	m = 0x1234;
	unit_poke(p, 1024 + 56, &m, 2);
	expect_open_error(p, -EUCLEAN, "bad magic");

	unit_mke2fs(p, "8M", 4096, NULL);
	v = 1u << 30;	/* s_blocks_count far beyond the image */
	unit_poke(p, 1024 + 4, &v, 4);
	expect_open_error(p, -EUCLEAN, "claims");

	unit_mke2fs(p, "8M", 4096, NULL);
	v = 40;		/* s_log_block_size */
	unit_poke(p, 1024 + 24, &v, 4);
	expect_open_error(p, -EUCLEAN, "block size");

	unit_mke2fs(p, "8M", 4096, NULL);
	v = 3;		/* s_blocks_per_group */
	unit_poke(p, 1024 + 32, &v, 4);
	expect_open_error(p, -EUCLEAN, "blocks per group");

	unit_mke2fs(p, "8M", 4096, NULL);
	v = 0;		/* s_inodes_per_group */
	unit_poke(p, 1024 + 40, &v, 4);
	expect_open_error(p, -EUCLEAN, "inode count");

	/* the image was cut short */
	unit_mke2fs(p, "8M", 4096, NULL);
	assert_int_equal(truncate(p, 1 << 20), 0);
	expect_open_error(p, -EUCLEAN, "claims");
	assert_int_equal(truncate(p, 1500), 0);
	expect_open_error(p, -EUCLEAN, "too small");
}

static void test_damaged_descriptors(void **state)
{
	const char *p = unit_path("desc.img");
	uint32_t v = 0x7fffffff;

	/* group 0's block bitmap pointing outside the image */
	unit_mke2fs(p, "8M", 4096, NULL);
	unit_poke(p, 4096 + 0, &v, 4);
	expect_open_error(p, -EUCLEAN, "group descriptors");
	/* inode table pointing outside */
	unit_mke2fs(p, "8M", 4096, NULL);
	unit_poke(p, 4096 + 8, &v, 4);
	expect_open_error(p, -EUCLEAN, "group descriptors");
}

static void test_random_bytes(void **state)
{
	const char *p = unit_path("random.img");
	struct xip_segment *seg;
	struct xip_image *img;
	char type[64];
	FILE *f = fopen(p, "w");

	srand(7);
	for (int i = 0; i < 1 << 20; i++)
		fputc(rand() & 0xff, f);
	fclose(f);
	assert_int_equal(segment_open(p, 0, &seg), 0);
	assert_int_equal(xip_identify(seg, type, sizeof(type)), -ENODATA);
	segment_close(seg);
	assert_int_equal(xip_image_open(p, 0, &img), -EUCLEAN);
}

static void test_other_fs(void **state)
{
	const char *p = unit_path("vfat.img");
	struct xip_segment *seg;
	char type[64], cmd[512];

	snprintf(cmd, sizeof(cmd),
		 "command -v mkfs.vfat >/dev/null || exit 77; "
		 "rm -f '%s'; truncate -s 4M '%s' && mkfs.vfat '%s' >/dev/null 2>&1",
		 p, p, p);
	if (system(cmd) != 0)
		return; /* not available here: nothing to check */
	assert_int_equal(segment_open(p, 0, &seg), 0);
	assert_int_equal(xip_identify(seg, type, sizeof(type)), -EMEDIUMTYPE);
	assert_string_equal(type, "vfat");
	assert_non_null(strstr(xip_errmsg(), "vfat"));
	segment_close(seg);
}

/* Lines of /proc/self/maps that name @path. */
static int maps_naming(const char *path)
{
	char line[4096];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, path) != NULL;
	fclose(f);
	return n;
}

/* abandon: the view of the segment and its descriptor go, nothing else */
static void test_abandon(void **state)
{
	const char *p = unit_path("abandon.img");
	struct xip_image *img;
	int fd;

	unit_mke2fs(p, "8M", 4096, "");
	assert_int_equal(xip_image_open(p, 0, &img), 0);
	fd = img->seg->fd;
	assert_true(fcntl(fd, F_GETFD) >= 0);
	assert_int_equal(maps_naming(p), 1);
	xip_image_abandon(img);
	assert_int_equal(maps_naming(p), 0);
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	assert_int_equal(errno, EBADF);
	/* what is left is plain memory, still safe to free */
	assert_int_equal(xip_image_close(img), 0);
	xip_image_abandon(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_good),
		cmocka_unit_test(test_not_xip),
		cmocka_unit_test(test_damaged_superblock),
		cmocka_unit_test(test_damaged_descriptors),
		cmocka_unit_test(test_random_bytes),
		cmocka_unit_test(test_other_fs),
		cmocka_unit_test(test_abandon),
	};

	return cmocka_run_group_tests_name("image", tests, NULL, NULL);
}
