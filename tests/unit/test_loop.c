/* Unit tests of lib/segment/loop.c: binding, read-only, offset and size limit,
 * busy detection and release, against the kernel's own view in sysfs. */
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>

#include "unit.h"
#include "segment/segment_int.h"

/* The device a test bound: released by the teardown even on failure. */
static char bound[64];

static int release_bound(void **state)
{
	if (bound[0])
		xip_loop_detach(bound);
	bound[0] = '\0';
	return 0;
}

static bool have_loop(void)
{
	return geteuid() == 0 && access("/dev/loop-control", W_OK) == 0;
}

static void test_not_loop(void **state)
{
	char buf[256];

	assert_int_equal(xip_loop_backing_file("/dev/sda", buf, sizeof(buf)),
			 -EINVAL);
	assert_int_equal(xip_loop_backing_file("/dev/loop../x", buf,
					       sizeof(buf)),
			 -EINVAL);
	assert_true(xip_loop_busy("/nonexistent/loop0", buf, sizeof(buf)) < 0);
	assert_int_equal(xip_loop_busy("/dev/null", buf, sizeof(buf)),
			 -ENOTBLK);
	assert_true(xip_loop_attach("/nonexistent", 0, 0, 0, buf,
				    sizeof(buf)) < 0);
	assert_string_equal(xip_errmsg(), "/nonexistent: No such file or directory");
}

static uint64_t dev_size(const char *dev)
{
	uint64_t size = 0;
	int fd = open(dev, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(ioctl(fd, BLKGETSIZE64, &size), 0);
	close(fd);
	return size;
}

static void test_attach_detach(void **state)
{
	const char *p = unit_path("backing");
	char dev[64], backing[4096], why[256];
	uint8_t buf[512];
	int fd, ret;

	if (!have_loop())
		skip();
	unit_fill_file(p, 1 << 20, 0x33);
	unit_poke(p, 8192, "XIPX", 4);
	/* read-only, with an offset and a size limit */
	assert_int_equal(xip_loop_attach(p, 8192, 4096, XIP_LOOP_RDONLY, dev,
					 sizeof(dev)), 0);
	snprintf(bound, sizeof(bound), "%s", dev);
	assert_int_equal(strncmp(dev, "/dev/loop", 9), 0);
	assert_int_equal(xip_loop_backing_file(dev, backing, sizeof(backing)),
			 0);
	assert_string_equal(backing, p);
	assert_int_equal(xip_loop_read_only(dev), 1);
	assert_int_equal(dev_size(dev), 4096);
	fd = open(dev, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, 4), 4);
	assert_memory_equal(buf, "XIPX", 4);
	close(fd);
	if (xip_loop_busy(dev, why, sizeof(why)) != 0)
		fail_msg("%s: busy: %s", dev, why);
	/* the kernel refuses writes to a read-only loop device */
	fd = open(dev, O_RDWR);
	assert_true(fd < 0 || write(fd, buf, sizeof(buf)) < 0);
	if (fd >= 0)
		close(fd);
	assert_int_equal(xip_loop_detach(dev), 0);
	bound[0] = '\0';	/* free now: it may be someone else's next */
	/* unbound (or already bound again by someone else) */
	ret = xip_loop_backing_file(dev, backing, sizeof(backing));
	assert_true(ret == -ENXIO || (ret == 0 && strcmp(backing, p)));
	/* read-write, whole file */
	assert_int_equal(xip_loop_attach(p, 0, 0, 0, dev, sizeof(dev)), 0);
	snprintf(bound, sizeof(bound), "%s", dev);
	assert_int_equal(xip_loop_read_only(dev), 0);
	assert_int_equal(dev_size(dev), 1 << 20);
	fd = open(dev, O_RDWR | O_EXCL);
	assert_true(fd >= 0);
	/* claimed by someone (as a mount does): busy */
	assert_int_equal(xip_loop_busy(dev, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "in use"));
	close(fd);
	assert_int_equal(xip_loop_detach(dev), 0);
	bound[0] = '\0';
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_loop),
		cmocka_unit_test_teardown(test_attach_detach, release_bound),
	};

	return cmocka_run_group_tests_name("loop", tests, NULL, NULL);
}
