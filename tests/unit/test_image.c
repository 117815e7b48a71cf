/* Unit tests of lib/engine/image.c: opening good and damaged images. */
#include <sys/wait.h>

#include "unit.h"
#include "engine/engine_int.h"
#include "segment/segment_int.h"

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

/* s_state of the primary superblock, read from the file itself */
static uint16_t disk_state(const char *p)
{
	uint16_t st = 0;
	FILE *f = fopen(p, "rb");

	assert_non_null(f);
	assert_int_equal(fseek(f, 1024 + 58, SEEK_SET), 0);
	assert_int_equal(fread(&st, sizeof(st), 1, f), 1);
	fclose(f);
	return le16toh(st);
}

static void set_disk_state(const char *p, uint16_t st)
{
	FILE *f = fopen(p, "r+b");

	st = htole16(st);
	assert_non_null(f);
	assert_int_equal(fseek(f, 1024 + 58, SEEK_SET), 0);
	assert_int_equal(fwrite(&st, sizeof(st), 1, f), 1);
	fclose(f);
}

static void test_writer_state(void **state)
{
	const char *p = unit_path("state.img");
	struct xip_image *img, *ro;

	(void)state;
	unit_mke2fs(p, "8M", 4096, NULL);
	assert_int_equal(disk_state(p), EXT2_VALID_FS);
	/* a writer that changes nothing leaves the image as it was */
	assert_int_equal(xip_image_open(p, XIP_IMG_WRITE, &img), 0);
	assert_int_equal(disk_state(p), EXT2_VALID_FS);
	assert_int_equal(xip_image_close(img), 0);
	assert_int_equal(disk_state(p), EXT2_VALID_FS);
	/* from the first change on: not clean on disk until the close */
	assert_int_equal(xip_image_open(p, XIP_IMG_WRITE, &img), 0);
	{
		ext2_ino_t ino;

		assert_int_equal(xip_create(img, "/f", 0644, &ino), 0);
	}
	assert_int_equal(disk_state(p), 0);
	/* a reader sees the state as it is on disk */
	assert_int_equal(xip_image_open(p, XIP_IMG_NOLOCK, &ro), 0);
	assert_int_equal(ro->fs->super->s_state, 0);
	assert_int_equal(xip_image_close(ro), 0);
	assert_int_equal(xip_image_close(img), 0);
	assert_int_equal(disk_state(p), EXT2_VALID_FS);

	/* not clean, or errors recorded: refused, untouched */
	set_disk_state(p, 0);
	assert_int_equal(xip_image_open(p, XIP_IMG_WRITE, &img), -EUCLEAN);
	assert_null(img);
	assert_non_null(strstr(xip_errmsg(), "e2fsck -fy"));
	assert_int_equal(disk_state(p), 0);
	set_disk_state(p, EXT2_VALID_FS | EXT2_ERROR_FS);
	assert_int_equal(xip_image_open(p, XIP_IMG_WRITE, &img), -EUCLEAN);
	assert_non_null(strstr(xip_errmsg(), "errors"));
	/* readers still open it */
	assert_int_equal(xip_image_open(p, 0, &ro), 0);
	assert_int_equal(xip_image_close(ro), 0);
}

static void test_loop_claims(void **state)
{
	const char *p = unit_path("claim.img");
	struct xip_image *img;
	char cmd[700], dev[64] = "";
	int *fds;
	size_t n;
	FILE *f;
	int fd;

	(void)state;
	if (geteuid() != 0 || access("/dev/loop-control", F_OK)) {
		skip();
		return;
	}
	unit_mke2fs(p, "8M", 4096, NULL);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	/* no loop device: nothing to claim */
	assert_int_equal(xip_loop_claim_backing(fd, p, &fds, &n), 0);
	assert_int_equal(n, 0);
	xip_loop_release_claims(fds, n);
	snprintf(cmd, sizeof(cmd), "losetup -f --show '%s'", p);
	f = popen(cmd, "r");
	assert_non_null(f);
	assert_non_null(fgets(dev, sizeof(dev), f));
	pclose(f);
	dev[strcspn(dev, "\n")] = '\0';
	/* bound, not mounted: claimed, and then nobody can mount it */
	assert_int_equal(xip_loop_claim_backing(fd, p, &fds, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(open(dev, O_RDONLY | O_EXCL), -1);
	assert_int_equal(errno, EBUSY);
	xip_loop_release_claims(fds, n);
	/* a writer holds it for as long as the image is open */
	assert_int_equal(xip_image_open(p, XIP_IMG_WRITE, &img), 0);
	assert_int_equal(img->nclaims, 1);
	assert_int_equal(xip_image_close(img), 0);
	/* held by someone else (as a mount holds it): refused, named */
	{
		int hold = open(dev, O_RDONLY | O_EXCL);

		assert_true(hold >= 0);
		assert_int_equal(xip_loop_claim_backing(fd, p, &fds, &n),
				 -EBUSY);
		assert_non_null(strstr(xip_errmsg(), dev));
		assert_int_equal(xip_image_open(p, XIP_IMG_WRITE, &img), -EBUSY);
		assert_int_equal(disk_state(p), EXT2_VALID_FS);
		close(hold);
	}
	snprintf(cmd, sizeof(cmd), "losetup -d %s", dev);
	assert_int_equal(system(cmd), 0);
	close(fd);
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

/* A fresh image with the 32 bits at @off set to @v: its open fails. */
static void expect_poked_error(const char *p, off_t off, uint32_t v,
			       const char *want)
{
	unit_mke2fs(p, "8M", 4096, NULL);
	unit_poke(p, off, &v, sizeof(v));
	expect_open_error(p, -EUCLEAN, want);
}

static void test_damaged_superblock(void **state)
{
	const char *p = unit_path("bad.img");
	uint16_t m;

	unit_mke2fs(p, "8M", 4096, NULL);
	m = 0x1234;
	unit_poke(p, 1024 + 56, &m, 2);
	expect_open_error(p, -EUCLEAN, "not an ext2 file system");
	/* s_blocks_count far beyond the image */
	expect_poked_error(p, 1024 + 4, 1u << 30, "claims");
	expect_poked_error(p, 1024 + 24, 40, "block size");	/* log */
	expect_poked_error(p, 1024 + 32, 3, "blocks per group");
	expect_poked_error(p, 1024 + 40, 0, "inode count");	/* per group */

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

	/* group 0's block bitmap, then its inode table, outside the image */
	expect_poked_error(p, 4096 + 0, 0x7fffffff, "group descriptors");
	expect_poked_error(p, 4096 + 8, 0x7fffffff, "group descriptors");
}

static void test_random_bytes(void **state)
{
	const char *p = unit_path("random.img");
	struct xip_seg *seg;
	struct xip_image *img;
	char type[64];
	FILE *f = fopen(p, "w");

	srand(7);
	for (int i = 0; i < 1 << 20; i++)
		fputc(rand() & 0xff, f);
	fclose(f);
	assert_int_equal(xip_seg_open(p, 0, &seg), 0);
	assert_int_equal(xip_identify(seg, type, sizeof(type)), -ENODATA);
	xip_seg_close(seg);
	assert_int_equal(xip_image_open(p, 0, &img), -EUCLEAN);
}

static void test_other_fs(void **state)
{
	const char *p = unit_path("vfat.img");
	struct xip_seg *seg;
	char type[64], cmd[512];
	int rc;

	snprintf(cmd, sizeof(cmd),
		 "command -v mkfs.vfat >/dev/null || exit 77; "
		 "rm -f '%s'; truncate -s 4M '%s' && mkfs.vfat '%s' >/dev/null 2>&1",
		 p, p, p);
	rc = system(cmd);
	if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 77)
		skip(); /* no mkfs.vfat here: nothing to check */
	assert_int_equal(rc, 0);
	assert_int_equal(xip_seg_open(p, 0, &seg), 0);
	assert_int_equal(xip_identify(seg, type, sizeof(type)), -EMEDIUMTYPE);
	assert_string_equal(type, "vfat");
	assert_non_null(strstr(xip_errmsg(), "vfat"));
	xip_seg_close(seg);
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

/*
 * More images open at once than the io_manager once had slots for (64):
 * each libext2fs channel reaches its own segment (its own label).
 */
#define MANY_IMAGES 100

static void test_many_images(void **state)
{
	static struct xip_image *img[MANY_IMAGES];
	const char *base = unit_path("many.img");
	char path[600], label[16];
	struct xip_image_info in;

	unit_mke2fs(base, "1M", 4096, "-N 16");
	for (int i = 0; i < MANY_IMAGES; i++) {
		int fd;

		snprintf(path, sizeof(path), "cp '%s' '%s.%d'", base, base, i);
		assert_int_equal(system(path), 0);
		snprintf(path, sizeof(path), "%s.%d", base, i);
		/* s_volume_name, 16 bytes at 120 in the superblock */
		memset(label, 0, sizeof(label));
		snprintf(label, sizeof(label), "many%d", i);
		fd = open(path, O_WRONLY);
		assert_true(fd >= 0);
		assert_int_equal(pwrite(fd, label, sizeof(label), 1024 + 120),
				 sizeof(label));
		close(fd);
		assert_int_equal(xip_image_open(path, XIP_IMG_WRITE, &img[i]),
				 0);
	}
	for (int i = 0; i < MANY_IMAGES; i++) {
		snprintf(label, sizeof(label), "many%d", i);
		assert_ptr_equal(xip_io_segment(img[i]->fs->io), img[i]->seg);
		assert_int_equal(xip_image_info(img[i], &in), 0);
		assert_string_equal(in.label, label);
	}
	for (int i = 0; i < MANY_IMAGES; i++)
		assert_int_equal(xip_image_close(img[i]), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_good),
		cmocka_unit_test(test_writer_state),
		cmocka_unit_test(test_loop_claims),
		cmocka_unit_test(test_not_xip),
		cmocka_unit_test(test_damaged_superblock),
		cmocka_unit_test(test_damaged_descriptors),
		cmocka_unit_test(test_random_bytes),
		cmocka_unit_test(test_other_fs),
		cmocka_unit_test(test_abandon),
		cmocka_unit_test(test_many_images),
	};

	return cmocka_run_group_tests_name("image", tests, NULL, NULL);
}
