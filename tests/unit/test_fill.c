/* Unit tests of lib/segment/fill.c: the fill state of a lazy segment. */
#include <sys/file.h>

#include "unit.h"
#include "segment/xip_fill.h"
#include "segment/segment_int.h"

/*
 * A filler's state for an image of @size bytes at @name, its lock held
 * as the filler holds it (when @locked); a reader's view in @rp.
 */
static struct xip_fill *filler(const char *name, uint64_t size, bool locked,
			       struct xip_fill **rp)
{
	const char *p = unit_path(name);
	struct xip_fill *f;
	int fd, rfd;

	unlink(p);
	fd = open(p, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	if (locked)
		assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	assert_int_equal(xip_fill_create(fd, size, 1000, &f), 0);
	rfd = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(rfd >= 0);
	assert_int_equal(xip_fill_open(rfd, rp), 0);
	return f;
}

static void test_create(void **state)
{
	struct xip_fill *f, *r;
	const struct xip_fill_hdr *h;
	struct stat st;

	(void)state;
	assert_int_equal(xip_fill_blocks(0), 0);
	assert_int_equal(xip_fill_blocks(1), 1);
	assert_int_equal(xip_fill_blocks(4096), 1);
	assert_int_equal(xip_fill_blocks(4097), 2);
	f = filler("create", 130 * 4096 + 7, true, &r);
	h = xip_fill_header(r);
	assert_memory_equal(h->magic, "xipfill1", 8);
	assert_int_equal(h->size, 130 * 4096 + 7);
	assert_int_equal(h->nblocks, 131);
	assert_int_equal(h->filled, 0);
	assert_int_equal(h->bad_block, UINT64_MAX);
	assert_int_equal(h->requests, 0);
	assert_int_equal(h->timeout_ms, 1000);
	assert_int_equal(h->ready, 0);
	/* a header page, then a bit a block in whole 64-bit words */
	assert_int_equal(stat(unit_path("create"), &st), 0);
	assert_int_equal(st.st_size, 4096 + 3 * 8);
	assert_int_equal(xip_fill_state(r), XIP_FILL_FILLING);
	assert_false(xip_fill_complete(r));
	for (uint64_t b = 0; b < 131; b++)
		assert_false(xip_fill_has(r, b));
	/* past the image: the zero padding, always there */
	assert_true(xip_fill_has(r, 131));
	assert_true(xip_fill_has(r, UINT64_MAX));
	assert_int_equal(xip_fill_missing(r, 0, 131), 0);
	xip_fill_set_ready(f);
	assert_int_equal(h->ready, 1);
	xip_fill_count_request(f);
	xip_fill_count_request(f);
	assert_int_equal(h->requests, 2);
	xip_fill_close(r);
	xip_fill_close(f);
}

static void test_land_missing(void **state)
{
	struct xip_fill *f, *r;
	uint32_t seq;

	(void)state;
	f = filler("land", 200 * 4096 - 100, true, &r);
	seq = xip_fill_header(r)->seq;
	xip_fill_land(f, 3, 2);
	assert_int_not_equal(xip_fill_header(r)->seq, seq);
	assert_false(xip_fill_has(r, 2));
	assert_true(xip_fill_has(r, 3));
	assert_true(xip_fill_has(r, 4));
	assert_false(xip_fill_has(r, 5));
	assert_int_equal(xip_fill_filled(r), 2 * 4096);
	assert_int_equal(xip_fill_missing(r, 3, 2), 5);	/* none: the end */
	assert_int_equal(xip_fill_missing(r, 3, 3), 5);
	assert_int_equal(xip_fill_missing(r, 0, 5), 0);
	/* landing twice counts once */
	xip_fill_land(f, 3, 2);
	assert_int_equal(xip_fill_filled(r), 2 * 4096);
	/* whole words skipped, the first hole after them found */
	xip_fill_land(f, 0, 150);
	assert_int_equal(xip_fill_missing(r, 0, 200), 150);
	assert_int_equal(xip_fill_missing(r, 64, 86), 150);
	assert_int_equal(xip_fill_missing(r, 10, 140), 150);
	assert_int_equal(xip_fill_filled(r), 150 * 4096);
	/* a run past the image lands up to its end; filled stops at size */
	xip_fill_land(f, 190, 1000);
	assert_true(xip_fill_has(r, 199));
	assert_int_equal(xip_fill_missing(r, 150, 1000), 150);
	assert_int_equal(xip_fill_missing(r, 151, 39), 151);
	xip_fill_land(f, 150, 40);
	assert_int_equal(xip_fill_missing(r, 0, 200), 200);
	assert_int_equal(xip_fill_filled(r), 200 * 4096 - 100);
	/* landed blocks are served while the fill goes on */
	assert_int_equal(xip_fill_state(r), XIP_FILL_FILLING);
	assert_int_equal(xip_fill_wait(r, 0, 200 * 4096 - 100, "t"), 0);
	xip_fill_close(r);
	xip_fill_close(f);
}

static void test_complete(void **state)
{
	struct xip_fill *f, *r;

	(void)state;
	f = filler("complete", 64 * 4096, true, &r);
	xip_fill_land(f, 0, 64);
	xip_fill_end(f, XIP_FILL_COMPLETE, UINT64_MAX, NULL);
	assert_true(xip_fill_complete(r));
	assert_int_equal(xip_fill_state(r), XIP_FILL_COMPLETE);
	assert_int_equal(xip_fill_wait(r, 0, 64 * 4096, "t"), 0);
	assert_int_equal(xip_fill_wait_all(r, "t", NULL, NULL), 0);
	/* the filler gone after completing: still complete */
	xip_fill_close(f);
	assert_int_equal(xip_fill_state(r), XIP_FILL_COMPLETE);
	xip_fill_close(r);
}

static void test_failed(void **state)
{
	struct xip_fill *f, *r;
	const char *msg;

	(void)state;
	f = filler("failed", 10 * 4096, true, &r);
	xip_fill_land(f, 0, 4);
	xip_fill_end(f, XIP_FILL_FAILED, 7, "block 7 does not match");
	assert_int_equal(xip_fill_state(r), XIP_FILL_FAILED);
	assert_false(xip_fill_complete(r));
	assert_int_equal(xip_fill_header(r)->bad_block, 7);
	/* what landed before the failure is still served */
	assert_int_equal(xip_fill_wait(r, 0, 4 * 4096, "t"), 0);
	/* what did not fails at once, naming the block and the reason */
	assert_int_equal(xip_fill_wait(r, 4 * 4096, 1, "@s: /f"), -EIO);
	msg = xip_errmsg();
	assert_non_null(strstr(msg, "@s: /f"));
	assert_non_null(strstr(msg, "block 4 never arrived"));
	assert_non_null(strstr(msg, "does not match"));
	xip_error_clear();
	assert_int_equal(xip_fill_wait_all(r, "t", NULL, NULL), -EIO);
	xip_error_clear();
	xip_fill_close(r);
	xip_fill_close(f);
}

static void test_filler_gone(void **state)
{
	struct xip_fill *f, *r;

	(void)state;
	/* filling, but nobody holds the filler's lock: a filler that died */
	f = filler("gone", 10 * 4096, false, &r);
	assert_int_equal(xip_fill_header(r)->state, XIP_FILL_FILLING);
	assert_int_equal(xip_fill_state(r), XIP_FILL_FAILED);
	assert_int_equal(xip_fill_wait(r, 0, 1, "t"), -EIO);
	assert_non_null(strstr(xip_errmsg(), "the filler is gone"));
	xip_error_clear();
	xip_fill_close(r);
	xip_fill_close(f);
	/* the lock held: filling; released (the filler's end): failed */
	f = filler("gone2", 10 * 4096, true, &r);
	assert_int_equal(xip_fill_state(r), XIP_FILL_FILLING);
	xip_fill_close(f);
	assert_int_equal(xip_fill_state(r), XIP_FILL_FAILED);
	xip_fill_close(r);
}

static void test_timeout(void **state)
{
	struct xip_fill *f, *r;

	(void)state;
	f = filler("slow", 10 * 4096, true, &r);
	/* the filler alive but the block never comes: the deadline (1 s) */
	assert_int_equal(xip_fill_wait(r, 5 * 4096, 4096, "t"), -ETIMEDOUT);
	assert_non_null(strstr(xip_errmsg(), "block 5 did not arrive"));
	xip_error_clear();
	xip_fill_close(r);
	xip_fill_close(f);
}

/* Open the state file at @p as a reader: the result of xip_fill_open. */
static int reopen(const char *p)
{
	struct xip_fill *r = NULL;
	int fd = open(p, O_RDONLY | O_CLOEXEC), ret;

	assert_true(fd >= 0);
	ret = xip_fill_open(fd, &r);
	if (ret) {
		assert_null(r);
		close(fd);
		xip_error_clear();
	}
	xip_fill_close(r);
	return ret;
}

static void test_damaged(void **state)
{
	const char *p = unit_path("damaged");
	struct xip_fill *f, *r;
	uint64_t v;
	int fd;

	(void)state;
	f = filler("damaged", 100 * 4096, true, &r);
	xip_fill_close(r);
	assert_int_equal(reopen(p), 0);
	fd = open(p, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	/* a wrong magic */
	assert_int_equal(pwrite(fd, "X", 1, 0), 1);
	assert_int_equal(reopen(p), -EUCLEAN);
	assert_int_equal(pwrite(fd, "x", 1, 0), 1);
	assert_int_equal(reopen(p), 0);
	/* a bit count that does not follow from the size */
	v = 101;
	assert_int_equal(pwrite(fd, &v, 8, offsetof(struct xip_fill_hdr,
						     nblocks)), 8);
	assert_int_equal(reopen(p), -EUCLEAN);
	/* a size whose bitmap runs past the file */
	v = 4096ull * 64 * 100;
	assert_int_equal(pwrite(fd, &v, 8, offsetof(struct xip_fill_hdr,
						     size)), 8);
	v = 64 * 100;
	assert_int_equal(pwrite(fd, &v, 8, offsetof(struct xip_fill_hdr,
						     nblocks)), 8);
	assert_int_equal(reopen(p), -EUCLEAN);
	/* a file shorter than the header */
	assert_int_equal(ftruncate(fd, 100), 0);
	assert_int_equal(reopen(p), -EUCLEAN);
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(reopen(p), -EUCLEAN);
	close(fd);
	xip_fill_close(f);
	/* not a regular file */
	fd = open(unit_tmpdir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(xip_fill_open(fd, &r), -EUCLEAN);
	assert_null(r);
	close(fd);
	xip_error_clear();
}

/* A lazy segment read through windows: never a copy of a missing block */
static void test_window_waits(void **state)
{
	const char *p = unit_path("lazyseg");
	uint8_t blk[4096], *a;
	struct xip_fill *f, *r;
	struct xip_seg *seg;
	int fd;

	(void)state;
	if (xip_host_page_size() != 4096)
		skip();
	unit_fill_file(p, 16 * 4096, 0);
	f = filler("lazystate", 16 * 4096, true, &r);
	xip_fill_land(f, 0, 1);		/* the superblock's block only */
	assert_int_equal(xip_seg_open(p, XIP_SEG_COPY, &seg), 0);
	assert_true(seg->copies);
	seg->fill = r;
	assert_int_equal(xip_seg_range(seg, 1024, 1024, (void **)&a), 0);
	/* block 6 arrives after the superblock's range was read */
	memset(blk, 0xab, sizeof(blk));
	fd = open(p, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, blk, sizeof(blk), 6 * 4096), 4096);
	close(fd);
	xip_fill_land(f, 6, 1);
	assert_int_equal(xip_seg_direct_access(seg, 6 * 8, (void **)&a), 0);
	assert_memory_equal(a, blk, sizeof(blk));
	xip_seg_close(seg);		/* closes the reader's state */
	xip_fill_close(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create),
		cmocka_unit_test(test_land_missing),
		cmocka_unit_test(test_complete),
		cmocka_unit_test(test_failed),
		cmocka_unit_test(test_filler_gone),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_damaged),
		cmocka_unit_test(test_window_waits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
