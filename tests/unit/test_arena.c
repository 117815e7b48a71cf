/* Unit tests of lib/arena.c, the front end's allocator. */
#include <stdint.h>
#include <sys/mman.h>
#include "unit.h"

static bool aligned(const void *p, size_t a)
{
	return ((uintptr_t)p & (a - 1)) == 0;
}

/* Is the page holding @p mapped? */
static bool mapped(const void *p)
{
	unsigned char v;
	long page = sysconf(_SC_PAGESIZE);

	return mincore((void *)((uintptr_t)p & ~(uintptr_t)(page - 1)), 1,
		       &v) == 0;
}

static void test_blocks_are_packed_aligned_and_separate(void **state)
{
	char *a = xip_arena_malloc(10), *b = xip_arena_malloc(100), *c;

	assert_non_null(a);
	assert_non_null(b);
	assert_true(aligned(a, 16) && aligned(b, 16));
	assert_true(b > a && b - a <= 64);	/* dense: same page */
	assert_true(xip_arena_usable_size(a) >= 10);
	memset(a, 0xaa, 10);
	memset(b, 0xbb, 100);
	c = xip_arena_malloc(0);			/* a valid, unique pointer */
	assert_non_null(c);
	assert_true(c != a && c != b);
	assert_int_equal((unsigned char)a[9], 0xaa);
	xip_arena_free(c);
	xip_arena_free(b);
	xip_arena_free(a);
	xip_arena_free(NULL);
}

static void test_free_of_the_last_block_takes_it_back(void **state)
{
	char *a = xip_arena_malloc(64), *b;

	xip_arena_free(a);
	b = xip_arena_malloc(64);
	assert_ptr_equal(a, b);
	/* only the most recent one: older blocks stay allocated */
	a = xip_arena_malloc(32);
	b = xip_arena_malloc(32);
	xip_arena_free(a);
	assert_true((char *)xip_arena_malloc(32) > b);
}

static void test_calloc_zeroes_and_checks_overflow(void **state)
{
	unsigned char *p = xip_arena_malloc(256);

	memset(p, 0xff, 256);
	xip_arena_free(p);				/* taken back: dirty memory */
	p = xip_arena_calloc(16, 16);
	for (int i = 0; i < 256; i++)
		assert_int_equal(p[i], 0);
	errno = 0;
	assert_null(xip_arena_calloc(SIZE_MAX / 2, 4));
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(xip_arena_malloc(SIZE_MAX - 4));
	assert_int_equal(errno, ENOMEM);
}

static void test_realloc_grows_in_place_or_copies(void **state)
{
	char *a = xip_arena_malloc(32), *b, *c;

	memcpy(a, "0123456789abcdef0123456789abcdef", 32);
	b = xip_arena_realloc(a, 1000);		/* last block: in place */
	assert_ptr_equal(a, b);
	assert_true(xip_arena_usable_size(b) >= 1000);
	c = xip_arena_malloc(8);
	a = xip_arena_realloc(b, 2000);		/* not last any more: copy */
	assert_true(a != b);
	assert_memory_equal(a, "0123456789abcdef0123456789abcdef", 32);
	assert_ptr_equal(xip_arena_realloc(a, 10), a);	/* shrinking */
	assert_non_null(xip_arena_realloc(NULL, 5));
	xip_arena_free(c);
}

static void test_memalign(void **state)
{
	for (size_t al = 1; al <= 65536; al *= 2) {
		void *p = xip_arena_memalign(al, 24);

		assert_non_null(p);
		assert_true(aligned(p, al < 16 ? 16 : al));
	}
	errno = 0;
	assert_null(xip_arena_memalign(24, 8));
	assert_int_equal(errno, EINVAL);
	assert_null(xip_arena_memalign(0, 8));
}

static void test_big_blocks_have_their_own_mapping(void **state)
{
	size_t n = 1 << 20;
	char *p = xip_arena_malloc(n), *q;

	assert_non_null(p);
	assert_true(xip_arena_usable_size(p) >= n);
	p[0] = 1;
	p[n - 1] = 2;
	q = xip_arena_calloc(1, 300 * 1024);	/* zero without a memset */
	assert_int_equal(q[300 * 1024 - 1], 0);
	q = xip_arena_realloc(q, 400 * 1024);
	assert_int_equal(q[0], 0);
	p = xip_arena_memalign(1 << 16, 200 * 1024);
	assert_true(aligned(p, 1 << 16));
	assert_true(mapped(p));
	xip_arena_free(p);
	assert_false(mapped(p));		/* unmapped on free */
	xip_arena_free(q);
}

static void test_many_blocks_across_chunks(void **state)
{
	char *prev = NULL;

	/* 8 MiB in 100 KiB blocks: several chunks, all usable */
	for (int i = 0; i < 80; i++) {
		char *p = xip_arena_malloc(100 * 1024);

		assert_non_null(p);
		memset(p, i, 100 * 1024);
		if (prev)
			assert_int_equal((unsigned char)prev[100 * 1024 - 1],
					 i - 1);
		prev = p;
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blocks_are_packed_aligned_and_separate),
		cmocka_unit_test(test_free_of_the_last_block_takes_it_back),
		cmocka_unit_test(test_calloc_zeroes_and_checks_overflow),
		cmocka_unit_test(test_realloc_grows_in_place_or_copies),
		cmocka_unit_test(test_memalign),
		cmocka_unit_test(test_big_blocks_have_their_own_mapping),
		cmocka_unit_test(test_many_blocks_across_chunks),
	};

	return cmocka_run_group_tests_name("arena", tests, NULL, NULL);
}
