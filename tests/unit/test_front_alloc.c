/*
 * Unit tests of cmd/front_alloc.c, the musl front end's allocator,
 * compiled here under other names (fa_malloc ...) so that it serves only
 * the calls of these tests, not the C library's nor cmocka's.
 */
#include <sys/mman.h>

#include "unit.h"
#include "../../cmd/cmd.h"

void *fa_malloc(size_t n);
void fa_free(void *p);
void *fa_calloc(size_t count, size_t size);
void *fa_realloc(void *p, size_t n);

#define XIP_FRONT_ALLOC 1
#define malloc fa_malloc
#define free fa_free
#define calloc fa_calloc
#define realloc fa_realloc
#include "../../cmd/front_alloc.c"
#undef malloc
#undef free
#undef calloc
#undef realloc

/* where blocks end: the front end's stack takes the arena's last bytes */
#define BLOCKS_END	(XIP_FRONT_ARENA_SIZE - XIP_FRONT_STACK_SIZE)

/* Is @p, @n bytes, inside the arena, below the front end's stack? */
static bool in_arena(const void *p, size_t n)
{
	const unsigned char *c = p;

	return c >= xip_front_arena && c + n <= xip_front_arena + BLOCKS_END;
}

/* A block of @n bytes from the allocator, each set to @byte. */
static unsigned char *filled(size_t n, int byte)
{
	unsigned char *p = fa_malloc(n);

	assert_non_null(p);
	memset(p, byte, n);
	return p;
}

/* Every block given back: the next one starts the arena over. */
static void assert_arena_empty(void)
{
	void *a = fa_malloc(16);

	assert_ptr_equal(a, xip_front_arena + 16);
	fa_free(a);
}

/* calloc: a product that does not fit in size_t is refused. */
static void test_calloc_overflow(void **state)
{
	(void)state;
	errno = 0;
	assert_null(fa_calloc(SIZE_MAX / 8 + 2, 8));
	assert_int_equal(errno, ENOMEM);
	assert_null(fa_calloc(2, SIZE_MAX / 2 + 1));
	assert_true(front_alloc_own_only());
}

/* calloc: bytes handed out before, freed and handed out again, read as
 * zeros. */
static void test_calloc_clears_reused(void **state)
{
	unsigned char *p, *q;

	(void)state;
	p = filled(256, 0xa5);
	fa_free(p);			/* the last block: its bytes come back */
	q = fa_calloc(32, 8);
	assert_ptr_equal(q, p);
	for (size_t i = 0; i < 256; i++)
		assert_int_equal(q[i], 0);
	fa_free(q);
}

/*
 * A block given back in the middle of the arena is taken again by a
 * request it holds (the front end frees a registry record of 12 KiB
 * before most of its other requests): split when the rest holds a block,
 * cleared for calloc, merged with a free block after it, and the arena's
 * free blocks at its end come back whole.
 */
static void test_free_blocks_taken_again(void **state)
{
	unsigned char *a, *b, *c, *d, *e, *f;

	(void)state;
	a = filled(4096, 0x11);
	b = filled(64, 0x22);
	fa_free(a);			/* a hole before b */
	c = fa_calloc(1, 1000);		/* taken from the hole, its start */
	assert_ptr_equal(c, a);
	for (size_t i = 0; i < 1000; i++)
		assert_int_equal(c[i], 0);
	d = fa_malloc(2000);		/* the rest of the hole */
	assert_true(d > c && d < b);
	memset(d, 0x33, 2000);
	e = fa_malloc(2000);		/* does not fit what is left: after b */
	assert_true(e > b);
	for (size_t i = 0; i < 64; i++)
		assert_int_equal(b[i], 0x22);
	/* c and d given back: one free block, which holds 3000 bytes */
	fa_free(d);
	fa_free(c);
	f = fa_malloc(3000);
	assert_ptr_equal(f, a);
	/* everything back: the arena starts over at its start */
	fa_free(f);
	fa_free(e);
	fa_free(b);
	assert_arena_empty();
	assert_true(front_alloc_own_only());
}

/*
 * The search for a free block starts at the first one: a block given
 * back before it, or after it, is found; the first fit is still the
 * lowest one.
 */
static void test_free_blocks_in_any_order(void **state)
{
	unsigned char *a, *b, *c, *d, *x;

	(void)state;
	a = filled(32, 1);
	b = filled(32, 2);
	c = filled(32, 3);
	d = filled(32, 4);		/* keeps the arena's end */
	fa_free(c);
	x = filled(32, 5);
	assert_ptr_equal(x, c);
	fa_free(a);			/* before the last one found */
	x = filled(32, 6);
	assert_ptr_equal(x, a);
	fa_free(c);
	fa_free(b);			/* b and c: one block, after a */
	x = filled(48, 7);
	assert_ptr_equal(x, b);
	for (size_t i = 0; i < 32; i++)
		assert_int_equal(d[i], 4);
	fa_free(x);
	fa_free(a);
	fa_free(d);
	assert_arena_empty();
}

/* realloc of the last block grows in place while the arena holds it, and
 * moves to a mapping of its own, contents kept, when it does not. */
static void test_realloc_bounds(void **state)
{
	unsigned char *p, *q;

	(void)state;
	p = filled(64, 0x5a);
	q = fa_realloc(p, 4096);
	assert_ptr_equal(q, p);
	assert_true(in_arena(q, 4096));
	q = fa_realloc(q, XIP_FRONT_ARENA_SIZE);
	assert_non_null(q);
	assert_ptr_not_equal(q, p);
	assert_false(in_arena(q, 1));
	assert_false(front_alloc_own_only());
	for (size_t i = 0; i < 64; i++)
		assert_int_equal(q[i], 0x5a);
	memset(q, 1, XIP_FRONT_ARENA_SIZE);
	fa_free(q);
	assert_true(front_alloc_own_only());
}

/*
 * realloc to fewer bytes keeps a block where it is; the last block gives
 * back the arena's end, so that the next block follows its new size, and
 * a shrunk block inside the arena keeps its room.
 */
static void test_realloc_shrinks_last(void **state)
{
	unsigned char *a, *b, *c, *d, *e;

	(void)state;
	a = filled(4096, 0x11);
	b = fa_realloc(a, 20);
	assert_ptr_equal(b, a);
	for (size_t i = 0; i < 20; i++)
		assert_int_equal(b[i], 0x11);
	c = filled(40, 0x22);
	/* 20 bytes take 32 of the arena, then the next block's header */
	assert_ptr_equal(c, a + 32 + 16);
	d = filled(40, 0x33);
	/* not the last block: it keeps its room, the one after it stays */
	assert_ptr_equal(fa_realloc(c, 8), c);
	e = filled(8, 0x44);
	assert_ptr_equal(e, d + 48 + 16);
	for (size_t i = 0; i < 40; i++)
		assert_int_equal(d[i], 0x33);
	assert_int_equal(b[19], 0x11);
	fa_free(b);
	fa_free(c);
	fa_free(d);
	fa_free(e);
	assert_arena_empty();
}

/* A request the arena cannot hold gets a mapping of its own, which free
 * unmaps; the arena's blocks stay as they were. */
static void test_malloc_past_arena(void **state)
{
	unsigned char *small, *big;

	(void)state;
	small = filled(32, 0x11);
	assert_true(in_arena(small, 32));
	big = filled(XIP_FRONT_ARENA_SIZE + 1, 0x22);
	assert_false(in_arena(big, 1));
	assert_false(front_alloc_own_only());
	fa_free(big);
	assert_true(front_alloc_own_only());
	/* the arena's last bytes are the stack's: never a block */
	big = filled(BLOCKS_END, 0x33);
	assert_false(in_arena(big, 1));
	assert_false(front_alloc_own_only());
	fa_free(big);
	assert_true(front_alloc_own_only());
	for (size_t i = 0; i < 32; i++)
		assert_int_equal(small[i], 0x11);
	fa_free(small);
}

/*
 * Every block is aligned for any object (16 bytes, as malloc's are on
 * x86_64 and aarch64: libc's string functions and compilers' vector code
 * count on it), whatever the sizes asked before it; malloc(0) gives a
 * block of its own, which free takes back.
 */
static void test_alignment(void **state)
{
	static const size_t sizes[] = { 1, 3, 16, 17, 31, 4095, 0, 8, 100 };
	void *p[sizeof(sizes) / sizeof(sizes[0])];
	size_t n = sizeof(sizes) / sizeof(sizes[0]);

	(void)state;
	for (size_t i = 0; i < n; i++) {
		p[i] = fa_malloc(sizes[i]);
		assert_non_null(p[i]);
		assert_int_equal((uintptr_t)p[i] % 16, 0);
		assert_true(in_arena(p[i], sizes[i]));
		if (i)
			assert_ptr_not_equal(p[i], p[i - 1]);
	}
	p[0] = fa_realloc(p[0], 33);
	assert_int_equal((uintptr_t)p[0] % 16, 0);
	for (size_t i = n; i-- > 0;)
		fa_free(p[i]);
	assert_true(front_alloc_own_only());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calloc_overflow),
		cmocka_unit_test(test_calloc_clears_reused),
		cmocka_unit_test(test_free_blocks_taken_again),
		cmocka_unit_test(test_free_blocks_in_any_order),
		cmocka_unit_test(test_realloc_bounds),
		cmocka_unit_test(test_realloc_shrinks_last),
		cmocka_unit_test(test_malloc_past_arena),
		cmocka_unit_test(test_alignment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
