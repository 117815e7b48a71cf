/* Unit tests of lib/segment/xipio.c: the segment io_manager. */
#include <sys/resource.h>

#include "unit.h"
#include "segment/segment_int.h"

struct chan {
	struct xip_seg *seg;
	io_channel io;
	char name[64];
};

static void chan_open(struct chan *c, const char *path, int segflags,
		      int ioflags)
{
	assert_int_equal(xip_seg_open(path, segflags, &c->seg), 0);
	assert_int_equal(xip_io_register(c->seg, c->name, sizeof(c->name)), 0);
	assert_int_equal(xip_io_manager->open(c->name, ioflags, &c->io), 0);
	assert_ptr_equal(xip_io_segment(c->io), c->seg);
}

static void chan_close(struct chan *c)
{
	assert_int_equal(xip_io_manager->close(c->io), 0);
	xip_seg_close(c->seg);
}

static void test_read_bounds(void **state)
{
	const char *p = unit_path("io");
	uint8_t buf[8192];
	struct chan c;
	int fd;

	unit_fill_file(p, 16384, 0);
	fd = open(p, O_WRONLY);
	for (int i = 0; i < 16; i++) {
		memset(buf, i, 1024);
		assert_int_equal(pwrite(fd, buf, 1024, i * 1024), 1024);
	}
	close(fd);
	chan_open(&c, p, 0, 0);
	assert_int_equal(c.io->block_size, 1024);
	assert_int_equal(io_channel_read_blk64(c.io, 3, 1, buf), 0);
	assert_int_equal(buf[0], 3);
	assert_int_equal(buf[1023], 3);
	/* a negative count is a byte count */
	assert_int_equal(io_channel_read_blk64(c.io, 5, -10, buf), 0);
	assert_int_equal(buf[9], 5);
	assert_int_equal(io_channel_set_blksize(c.io, 4096), 0);
	assert_int_equal(io_channel_read_blk64(c.io, 3, 1, buf), 0);
	assert_int_equal(buf[0], 12);
	assert_int_equal(buf[4095], 15);
	/* past the end, and offsets that overflow 64 bits */
	assert_int_not_equal(io_channel_read_blk64(c.io, 4, 1, buf), 0);
	assert_int_not_equal(io_channel_read_blk64(c.io, 3, 2, buf), 0);
	assert_int_not_equal(io_channel_read_blk64(c.io, 1ULL << 62, 1, buf), 0);
	assert_int_not_equal(io_channel_read_blk64(c.io, UINT64_MAX / 4096 + 1,
						  1, buf), 0);
	/* read-only segment: writes refused, bytes unchanged */
	memset(buf, 0xee, 4096);
	assert_int_not_equal(io_channel_write_blk64(c.io, 0, 1, buf), 0);
	chan_close(&c);
	unit_peek(p, 0, buf, 1);
	assert_int_equal(buf[0], 0);
}

static void test_write_zeroout(void **state)
{
	const char *p = unit_path("iow");
	uint8_t buf[4096], out[4096];
	struct chan c;

	unit_fill_file(p, 65536, 0x11);
	chan_open(&c, p, XIP_SEG_WRITE, IO_FLAG_RW);
	assert_int_equal(io_channel_set_blksize(c.io, 4096), 0);
	memset(buf, 0x77, sizeof(buf));
	assert_int_equal(io_channel_write_blk64(c.io, 2, 1, buf), 0);
	assert_int_equal(io_channel_write_byte(c.io, 100, 3, "abc"), 0);
	assert_int_not_equal(io_channel_write_blk64(c.io, 16, 1, buf), 0);
	assert_int_not_equal(io_channel_write_byte(c.io, 65535, 2, "xy"), 0);
	/* zero blocks 4..13, an unaligned zeroout of 1k units too */
	assert_int_equal(io_channel_zeroout(c.io, 4, 10), 0);
	assert_int_equal(io_channel_set_blksize(c.io, 1024), 0);
	assert_int_equal(io_channel_zeroout(c.io, 57, 2), 0);
	assert_int_not_equal(io_channel_zeroout(c.io, 63, 2), 0);
	assert_int_equal(io_channel_flush(c.io), 0);
	chan_close(&c);

	unit_peek(p, 8192, out, 4096);
	assert_memory_equal(out, buf, 4096);
	unit_peek(p, 100, out, 3);
	assert_memory_equal(out, "abc", 3);
	for (int blk = 0; blk < 16; blk++) {
		int zero = (blk >= 4 && blk < 14);

		unit_peek(p, blk * 4096 + 17, out, 1);
		if (blk == 2)
			assert_int_equal(out[0], 0x77);
		else if (blk == 14) /* 57*1024 = 14*4096 + 1024 */
			assert_int_equal(out[0], 0x11);
		else
			assert_int_equal(out[0], zero ? 0 : 0x11);
	}
	unit_peek(p, 57 * 1024, out, 2048);
	for (int i = 0; i < 2048; i++)
		assert_int_equal(out[i], 0);
	unit_peek(p, 59 * 1024, out, 1);
	assert_int_equal(out[0], 0x11);
}

/* "pio": reads and writes through the descriptor, none through the
 * mapping (no page fault for any of them), same bytes. */
static void test_pio(void **state)
{
	const char *p = unit_path("iop");
	uint8_t buf[4096], out[4096];
	struct rusage ru;
	struct chan c;
	long before;

	unit_fill_file(p, 128 * 4096, 0x11);
	chan_open(&c, p, XIP_SEG_WRITE, IO_FLAG_RW);
	assert_int_not_equal(io_channel_set_options(c.io, "pio=1"), 0);
	assert_int_equal(io_channel_set_options(c.io, "pio"), 0);
	assert_int_equal(io_channel_set_blksize(c.io, 4096), 0);
	memset(buf, 0x66, sizeof(buf));
	memset(out, 0, sizeof(out));
	getrusage(RUSAGE_SELF, &ru);
	before = ru.ru_minflt;
	for (int i = 0; i < 32; i++) {
		buf[1] = (uint8_t)i;
		assert_int_equal(io_channel_write_blk64(c.io, 2 * i, 1, buf), 0);
		assert_int_equal(io_channel_read_blk64(c.io, 2 * i + 1, 1, out),
				 0);
		assert_int_equal(out[0], 0x11);
	}
	assert_int_equal(io_channel_read_blk64(c.io, 62, 1, out), 0);
	assert_int_equal(io_channel_zeroout(c.io, 100, 20), 0);
	getrusage(RUSAGE_SELF, &ru);
	assert_true(ru.ru_minflt - before < 8);
	assert_int_equal(out[0], 0x66);
	assert_int_equal(out[1], 31);
	assert_int_not_equal(io_channel_read_blk64(c.io, 128, 1, out), 0);
	assert_int_not_equal(io_channel_write_blk64(c.io, 128, 1, buf), 0);
	assert_int_equal(io_channel_flush(c.io), 0);
	chan_close(&c);
	unit_peek(p, 10 * 4096, out, 2);
	assert_int_equal(out[0], 0x66);
	assert_int_equal(out[1], 5);
	unit_peek(p, 100 * 4096 - 1, out, 2);
	assert_int_equal(out[0], 0x11);
	assert_int_equal(out[1], 0);
	unit_peek(p, 120 * 4096 - 1, out, 2);
	assert_int_equal(out[0], 0);
	assert_int_equal(out[1], 0x11);
}

static void test_open_errors(void **state)
{
	const char *p = unit_path("ioe");
	struct xip_seg *seg;
	char name[64];
	io_channel io;

	unit_fill_file(p, 4096, 0);
	/* names not of the form xip_io_register writes */
	assert_int_not_equal(xip_io_manager->open("xipseg:999999", 0, &io), 0);
	assert_int_not_equal(xip_io_manager->open("xipseg:", 0, &io), 0);
	assert_int_not_equal(xip_io_manager->open("xipseg:(nil)", 0, &io), 0);
	assert_int_not_equal(xip_io_manager->open("xipseg:0x0", 0, &io), 0);
	assert_int_not_equal(xip_io_manager->open("/etc/passwd", 0, &io), 0);
	assert_int_equal(xip_seg_open(p, 0, &seg), 0);
	assert_int_equal(xip_io_register(seg, name, sizeof(name)), 0);
	/* a read-only segment cannot give a read-write channel */
	assert_int_not_equal(xip_io_manager->open(name, IO_FLAG_RW, &io), 0);
	/* the name with trailing bytes, or options after '?' */
	strcat(name, "x");
	assert_int_not_equal(xip_io_manager->open(name, 0, &io), 0);
	name[strlen(name) - 1] = '?';
	strcat(name, "pio");
	assert_int_equal(xip_io_manager->open(name, 0, &io), 0);
	assert_ptr_equal(xip_io_segment(io), seg);
	assert_int_equal(xip_io_manager->close(io), 0);
	/* too small a buffer for the name */
	assert_int_equal(xip_io_register(seg, name, 8), -ENAMETOOLONG);
	xip_seg_close(seg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_bounds),
		cmocka_unit_test(test_write_zeroout),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_pio),
	};

	return cmocka_run_group_tests_name("xipio", tests, NULL, NULL);
}
