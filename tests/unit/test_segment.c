/* Unit tests of lib/segment/segment.c: mapping and direct_access. */
#include "unit.h"
#include "segment/segment_int.h"
#include "util/xip_debug.h"

static void test_direct_access_errors(void **state)
{
	const char *p = unit_path("seg16k");
	long page = xip_host_page_size();
	uint64_t spp = page / 512;
	struct xip_seg *seg;
	void *addr = NULL;

	unit_fill_file(p, 4 * page, 0x5a);
	assert_int_equal(xip_seg_open(p, 0, &seg), 0);
	assert_int_equal(seg->size, 4 * page);
	assert_int_equal(seg->kind, XIP_SEG_FILE);
	assert_false(seg->writable);

	assert_int_equal(xip_seg_direct_access(seg, 0, &addr), 0);
	assert_ptr_equal(addr, seg->base);
	assert_int_equal(((uint8_t *)addr)[0], 0x5a);
	assert_int_equal(xip_seg_direct_access(seg, 3 * spp, &addr), 0);
	assert_ptr_equal(addr, seg->base + 3 * page);
	/* misaligned sector */
	assert_int_equal(xip_seg_direct_access(seg, 1, &addr), -EINVAL);
	assert_int_equal(xip_seg_direct_access(seg, spp + 1, &addr),
			 -EINVAL);
	/* the page would run past the end */
	assert_int_equal(xip_seg_direct_access(seg, 4 * spp, &addr),
			 -ERANGE);
	assert_int_equal(xip_seg_direct_access(seg, UINT64_MAX - spp + 1,
						   &addr),
			 -ERANGE);
	/* a released segment */
	seg->gone = true;
	assert_int_equal(xip_seg_direct_access(seg, 0, &addr), -ENODEV);
	assert_int_equal(xip_seg_range(seg, 0, 1, &addr), -ENODEV);
	seg->gone = false;
	xip_seg_close(seg);
	assert_int_equal(xip_seg_direct_access(NULL, 0, &addr), -ENODEV);
}

static void test_partial_last_page(void **state)
{
	const char *p = unit_path("partial");
	long page = xip_host_page_size();
	struct xip_seg *seg;
	void *addr;

	unit_fill_file(p, 2 * page + 100, 1);
	assert_int_equal(xip_seg_open(p, 0, &seg), 0);
	assert_int_equal(xip_seg_direct_access(seg, page / 512, &addr), 0);
	/* the last page is not whole: out of range, as in the kernel's direct_access */
	assert_int_equal(xip_seg_direct_access(seg, 2 * page / 512, &addr),
			 -ERANGE);
	/* but its bytes are reachable by range */
	assert_int_equal(xip_seg_range(seg, 2 * page, 100, &addr), 0);
	assert_int_equal(xip_seg_range(seg, 2 * page, 101, &addr), -ERANGE);
	assert_int_equal(xip_seg_range(seg, 2 * page + 100, 0, &addr), 0);
	assert_int_equal(xip_seg_range(seg, 2 * page + 101, 0, &addr),
			 -ERANGE);
	assert_int_equal(xip_seg_range(seg, 1, UINT64_MAX, &addr), -ERANGE);
	assert_int_equal(xip_seg_range(seg, UINT64_MAX, 2, &addr), -ERANGE);
	xip_seg_close(seg);
}

/* the byte at offset @i of copy_file's file */
static uint8_t copy_byte(uint64_t i)
{
	return (uint8_t)(i * 7 + i / 4096);
}

static void copy_file(const char *p, size_t len)
{
	uint8_t *buf = malloc(len);
	FILE *f = fopen(p, "w");

	assert_non_null(buf);
	assert_non_null(f);
	for (size_t i = 0; i < len; i++)
		buf[i] = copy_byte(i);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	free(buf);
}

static void assert_copy(const void *addr, uint64_t off, uint64_t len)
{
	for (uint64_t i = 0; i < len; i++)
		assert_int_equal(((const uint8_t *)addr)[i], copy_byte(off + i));
}

/* XIP_SEG_COPY: windows read with pread, the segment mapped past them */
static void test_copy_windows(void **state)
{
	const char *p = unit_path("copies");
	long page = xip_host_page_size();
	uint64_t spp = page / 512;
	struct xip_seg *seg;
	void *first, *a, *b, *c, *d;

	copy_file(p, 64 * page);
	assert_int_equal(xip_seg_open(p, XIP_SEG_COPY, &seg), 0);
	assert_null(seg->base);
	assert_true(seg->copies);
	/* the superblock's range: the first 8 pages, one read */
	assert_int_equal(xip_seg_range(seg, 1024, 1024, &first), 0);
	assert_copy(first, 1024, 1024);
	assert_int_equal(seg->nwin, 1);
	assert_int_equal(seg->win[0].off, 0);
	assert_int_equal(seg->win[0].len, 8 * page);
	assert_int_equal(xip_seg_direct_access(seg, 7 * spp, &a), 0);
	assert_ptr_equal(a, (uint8_t *)first - 1024 + 7 * page);
	assert_int_equal(seg->nwin, 1);
	/* elsewhere: two pages from the one asked for */
	assert_int_equal(xip_seg_direct_access(seg, 20 * spp, &b), 0);
	assert_copy(b, 20 * page, page);
	assert_int_equal(seg->nwin, 2);
	assert_int_equal(seg->win[1].off, 20 * page);
	assert_int_equal(seg->win[1].len, 2 * page);
	assert_int_equal(xip_seg_range(seg, 21 * page + 10, 100, &c), 0);
	assert_ptr_equal(c, (uint8_t *)b + page + 10);
	assert_int_equal(seg->nwin, 2);
	/* a range past a window's end gets its own */
	assert_int_equal(xip_seg_range(seg, 22 * page - 10, 20, &c), 0);
	assert_copy(c, 22 * page - 10, 20);
	assert_int_equal(seg->nwin, 3);
	/* the bounds are the segment's, windows or not */
	assert_int_equal(xip_seg_range(seg, 64 * page, 0, &d), 0);
	assert_int_equal(xip_seg_range(seg, 64 * page - 1, 2, &d), -ERANGE);
	assert_int_equal(xip_seg_direct_access(seg, 64 * spp, &d), -ERANGE);
	assert_int_equal(xip_seg_direct_access(seg, 1, &d), -EINVAL);
	/* the last window reaches no further than the segment */
	assert_int_equal(xip_seg_direct_access(seg, 63 * spp, &d), 0);
	assert_copy(d, 63 * page, page);
	assert_int_equal(seg->nwin, 4);
	assert_int_equal(seg->win[3].len, page);
	assert_null(seg->base);
	assert_int_equal(xip_seg_sync(seg), 0);
	/* no window left: the segment is mapped, the copies stay */
	assert_int_equal(xip_seg_range(seg, 40 * page, 3, &a), 0);
	assert_non_null(seg->base);
	assert_false(seg->copies);
	assert_ptr_equal(a, seg->base + 40 * page);
	assert_copy(a, 40 * page, 3);
	assert_copy(first, 1024, 1024);
	assert_copy(b, 20 * page, page);
	assert_copy(d, 63 * page, page);
	xip_seg_close(seg);

	/* more than a window holds: mapped at once */
	assert_int_equal(xip_seg_open(p, XIP_SEG_COPY, &seg), 0);
	assert_int_equal(xip_seg_range(seg, 30 * page, 3 * page, &a), 0);
	assert_int_equal(seg->nwin, 0);
	assert_ptr_equal(a, seg->base + 30 * page);
	xip_seg_close(seg);

	/* asked for together with writing: mapped as ever */
	assert_int_equal(chmod(p, 0644), 0);
	assert_int_equal(xip_seg_open(p, XIP_SEG_COPY | XIP_SEG_WRITE, &seg),
			 0);
	assert_non_null(seg->base);
	assert_false(seg->copies);
	xip_seg_close(seg);

	/* a file that shrank under us: an error naming it, nothing read */
	assert_int_equal(xip_seg_open(p, XIP_SEG_COPY, &seg), 0);
	assert_int_equal(truncate(p, 10 * page), 0);
	assert_int_equal(xip_seg_direct_access(seg, 30 * spp, &a), -EIO);
	assert_non_null(strstr(xip_errmsg(), p));
	assert_non_null(strstr(xip_errmsg(), "shrank"));
	assert_int_equal(seg->nwin, 0);
	assert_int_equal(xip_seg_map(seg), 0);
	assert_non_null(seg->base);
	xip_seg_close(seg);
	assert_int_equal(xip_seg_map(NULL), -ENODEV);
}

/* attach's measure: whether populating a mapping beats its faults */
static void test_populate_pays(void **state)
{
	const char *p = unit_path("popfile");
	long page = xip_host_page_size();
	bool pays = true;
	int fd;

	assert_true(xip_populate_beats_faults(100000, 30000));
	assert_true(xip_populate_beats_faults(100000, 49999));
	assert_false(xip_populate_beats_faults(100000, 50000));
	assert_false(xip_populate_beats_faults(25000, 51000));
	assert_false(xip_populate_beats_faults(0, 0));
	/* too small to tell: not measured, not populated */
	copy_file(p, 64 * page);
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(xip_seg_populate_pays(fd, 64 * page, &pays), 0);
	assert_false(pays);
	close(fd);
	/* measured: an answer, the file unchanged */
	copy_file(p, 3 * 1024 * 1024);
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(xip_seg_populate_pays(fd, 3 * 1024 * 1024, &pays), 0);
	close(fd);
	{
		uint8_t b[4];

		unit_peek(p, 2 * 1024 * 1024 + 5, b, sizeof(b));
		for (size_t i = 0; i < sizeof(b); i++)
			assert_int_equal(b[i], copy_byte(2 * 1024 * 1024 + 5 + i));
	}
	/* what cannot be mapped says why */
	fd = open(unit_tmpdir(), O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_int_equal(xip_seg_populate_pays(fd, 4 * 1024 * 1024, &pays),
			 -ENODEV);
	close(fd);
	assert_int_equal(xip_seg_populate_pays(-1, 4 * 1024 * 1024, &pays),
			 -EBADF);
	assert_false(pays);
}

static void test_write_and_readonly(void **state)
{
	const char *p = unit_path("rw");
	long page = xip_host_page_size();
	struct xip_seg *seg;
	uint8_t byte;
	void *addr;

	unit_fill_file(p, page, 0);
	assert_int_equal(xip_seg_open(p, XIP_SEG_WRITE, &seg), 0);
	assert_true(seg->writable);
	assert_int_equal(xip_seg_direct_access(seg, 0, &addr), 0);
	((uint8_t *)addr)[10] = 0xab;
	assert_int_equal(xip_seg_sync(seg), 0);
	xip_seg_close(seg);
	unit_peek(p, 10, &byte, 1);
	assert_int_equal(byte, 0xab);

	/* no write permission bit: read-only even for root */
	assert_int_equal(chmod(p, 0444), 0);
	assert_int_equal(xip_seg_open(p, XIP_SEG_WRITE, &seg), -EROFS);
	assert_null(seg);
	assert_non_null(strstr(xip_errmsg(), "read-only"));
	assert_int_equal(xip_seg_open(p, 0, &seg), 0);
	xip_seg_close(seg);
}

static void test_bad_objects(void **state)
{
	const char *p = unit_path("empty");
	struct xip_seg *seg;

	unit_fill_file(p, 0, 0);
	assert_int_equal(xip_seg_open(p, 0, &seg), -EINVAL);
	assert_non_null(strstr(xip_errmsg(), "empty"));
	assert_int_equal(xip_seg_open(unit_tmpdir(), 0, &seg), -EISDIR);
	assert_int_equal(xip_seg_open(unit_path("missing"), 0, &seg),
			 -ENOENT);
	assert_non_null(strstr(xip_errmsg(), "missing"));
	assert_int_equal(xip_seg_open("", 0, &seg), -EINVAL);
	assert_int_equal(xip_seg_open("/dev/null", 0, &seg), -ENODEV);
}

static void test_shm_kind(void **state)
{
	char p[] = "/dev/shm/xipunit.XXXXXX";
	struct xip_seg *seg;
	int fd = mkstemp(p);

	if (fd < 0)
		skip(); /* no /dev/shm here: nothing to check */
	assert_int_equal(ftruncate(fd, xip_host_page_size()), 0);
	assert_int_equal(xip_seg_open_fd(fd, p, XIP_SEG_WRITE, &seg), 0);
	assert_int_equal(seg->kind, XIP_SEG_SHM);
	xip_seg_close(seg);
	close(fd);
	unlink(p);
}

static void test_types(void **state)
{
	enum xip_seg_type t;

	assert_int_equal(xip_seg_type_parse("sr", &t), 0);
	assert_int_equal(t, XIP_SEGTYPE_SR);
	assert_int_equal(xip_seg_type_parse("EW", &t), 0);
	assert_int_equal(t, XIP_SEGTYPE_EW);
	assert_int_equal(xip_seg_type_parse("sc", &t), -EINVAL);
	assert_false(xip_seg_type_writable(XIP_SEGTYPE_SR));
	assert_false(xip_seg_type_writable(XIP_SEGTYPE_ER));
	assert_true(xip_seg_type_writable(XIP_SEGTYPE_SW));
	assert_true(xip_seg_type_exclusive(XIP_SEGTYPE_ER));
	assert_false(xip_seg_type_exclusive(XIP_SEGTYPE_SN));
	assert_string_equal(xip_seg_type_name(XIP_SEGTYPE_EN), "en");
}

static void test_lock(void **state)
{
	const char *p = unit_path("lock");
	struct xip_seg *a, *b;

	unit_fill_file(p, xip_host_page_size(), 0);
	assert_int_equal(xip_seg_open(p, XIP_SEG_WRITE, &a), 0);
	assert_int_equal(xip_seg_open(p, 0, &b), 0);
	assert_int_equal(xip_seg_lock(a, true, 0), 0);
	assert_int_equal(xip_seg_lock(b, false, 50), -EBUSY);
	xip_seg_close(a);
	assert_int_equal(xip_seg_lock(b, false, 50), 0);
	xip_seg_close(b);
}

/* Open @p twice, @a creating the lock file @l, @b opening it after. */
static void open_two_locked(const char *p, const char *l, struct xip_seg **a,
			    struct xip_seg **b)
{
	assert_int_equal(xip_seg_open_locked(p, 0, open(l, O_RDONLY | O_CREAT |
							O_CLOEXEC, 0600),
					     l, a), 0);
	assert_int_equal(xip_seg_open_locked(p, 0, open(l, O_RDONLY |
							O_CLOEXEC),
					     l, b), 0);
}

/*
 * A plain path's lock file (xip_seg_open_locked): its holders share it,
 * the last one removes it, and a holder that finds it removed locks the
 * file at its name now.
 */
static void test_lock_file(void **state)
{
	const char *p = unit_path("lf-img"), *l = unit_path("lf-lock");
	struct xip_seg *a, *b;
	struct stat st, held;

	(void)state;
	unit_fill_file(p, xip_host_page_size(), 0);
	open_two_locked(p, l, &a, &b);
	assert_int_equal(xip_seg_lock(a, false, 0), 0);
	assert_int_equal(xip_seg_lock(b, true, 50), -EBUSY);
	assert_int_equal(xip_seg_lock(b, false, 0), 0);
	xip_seg_close(a);	/* b holds it: the file stays */
	assert_int_equal(stat(l, &st), 0);
	assert_int_equal(xip_seg_lock(b, true, 0), 0);
	xip_seg_close(b);	/* the last holder removes it */
	assert_int_equal(stat(l, &st), -1);
	/* removed while b had it open, unlocked: b locks the new one */
	open_two_locked(p, l, &a, &b);
	xip_seg_close(a);
	assert_int_equal(stat(l, &st), -1);
	assert_int_equal(xip_seg_lock(b, true, 0), 0);
	assert_int_equal(stat(l, &st), 0);
	assert_int_equal(fstat(b->lock_fd, &held), 0);
	assert_int_equal(held.st_ino, st.st_ino);
	xip_seg_close(b);
	assert_int_equal(stat(l, &st), -1);
	unlink(p);
}

/*
 * An attached segment's file unlinked (detached) between the registry's
 * open and the set-up: refused as detached, whether the caller's fstat
 * is handed over (a shared type) or made again (an exclusive one).
 */
static void test_adopt_detached(void **state)
{
	const char *p = unit_path("detached");
	struct xip_seg *seg = NULL;
	struct stat st;
	int fd;

	(void)state;
	unit_fill_file(p, 8192, 0);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	/* still linked: adopted */
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(xip_seg_adopt_stat(dup(fd), &st, -1, p, "gone",
					    XIP_SEGTYPE_SR, 0, &seg),
			 0);
	xip_seg_close(seg);
	seg = NULL;
	assert_int_equal(unlink(p), 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(xip_seg_adopt_stat(dup(fd), &st, -1, p, "gone",
					    XIP_SEGTYPE_SR, 0, &seg),
			 -ENOENT);
	assert_null(seg);
	assert_string_equal(xip_errmsg(),
			    "@gone: no attached segment of that name (detached)");
	assert_int_equal(xip_seg_adopt(fd, p, "gone", XIP_SEGTYPE_ER, 0, &seg),
			 -ENOENT);
	assert_null(seg);
	assert_string_equal(xip_errmsg(),
			    "@gone: no attached segment of that name (detached)");
}

static void test_parse_size(void **state)
{
	uint64_t v;

	assert_int_equal(xip_parse_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(xip_parse_size("4K", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(xip_parse_size("2MiB", &v), 0);
	assert_int_equal(v, 2 << 20);
	assert_int_equal(xip_parse_size("3g", &v), 0);
	assert_int_equal(v, 3ULL << 30);
	assert_int_equal(xip_parse_size("1X", &v), -EINVAL);
	assert_int_equal(xip_parse_size("-1", &v), -EINVAL);
	assert_int_equal(xip_parse_size("", &v), -EINVAL);
	assert_int_equal(xip_parse_size("99999999999T", &v), -ERANGE);
}

/* XIPTOOL_DEBUG values: room names, "all", separators, unknown names. */
static void test_debug_parse(void **state)
{
	(void)state;
	assert_int_equal(xip_debug_parse(NULL), 0);
	assert_int_equal(xip_debug_parse(""), 0);
	assert_int_equal(xip_debug_parse("engine"), XIP_DBG_ENGINE);
	assert_int_equal(xip_debug_parse("exec,registry"),
			 XIP_DBG_EXEC | XIP_DBG_REGISTRY);
	assert_int_equal(xip_debug_parse(" LOOP , ,segment,"),
			 XIP_DBG_LOOP | XIP_DBG_SEGMENT);
	assert_int_equal(xip_debug_parse("nosuch,exe,engines"), 0);
	assert_int_equal(xip_debug_parse("nosuch,nbd"), XIP_DBG_NBD);
	assert_true((xip_debug_parse("all") & XIP_DBG_SEGMENT) &&
		    (xip_debug_parse("all") & XIP_DBG_NBD) &&
		    (xip_debug_parse("all") & XIP_DBG_CHECK));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_direct_access_errors),
		cmocka_unit_test(test_partial_last_page),
		cmocka_unit_test(test_copy_windows),
		cmocka_unit_test(test_populate_pays),
		cmocka_unit_test(test_write_and_readonly),
		cmocka_unit_test(test_bad_objects),
		cmocka_unit_test(test_shm_kind),
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_lock),
		cmocka_unit_test(test_lock_file),
		cmocka_unit_test(test_adopt_detached),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_debug_parse),
	};

	return cmocka_run_group_tests_name("segment", tests, NULL, NULL);
}
