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

/*
 * Each test starts from the state of a fresh front end: an arena of
 * zeros (bss) with nothing handed out.
 */
static int arena_fresh(void **state)
{
	(void)state;
	memset(xip_front_arena, 0, sizeof(xip_front_arena));
	used = 0;
	dirty = 0;
	maps_live = 0;
	nfree = 0;
	free_from = 0;
	return 0;
}

/* ... and leaves no mapping of its own behind. */
static int no_mapping_left(void **state)
{
	(void)state;
	return front_alloc_own_only() ? 0 : -1;
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

/* ---- random runs against a shadow model ---------------------------------- */

#define SLOTS		96
#define RANDOM_OPS	6000

/* What the model knows of a live block: where, how long, what it holds. */
struct shadow {
	unsigned char *p;
	size_t n;
	uint8_t tag;
};

static uint64_t rnd(uint64_t *s)
{
	/* xorshift64*: the same run for the same seed on every machine */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

/* Mostly small blocks, some of pages, a few past what the arena holds. */
static size_t random_size(uint64_t *s)
{
	unsigned int r = rnd(s) % 1000;

	if (r < 600)
		return rnd(s) % 65;
	if (r < 900)
		return 65 + rnd(s) % 2000;
	if (r < 990)
		return 2065 + rnd(s) % 14000;
	return 16 * 1024 + rnd(s) % (XIP_FRONT_ARENA_SIZE / 2);
}

static uint8_t byte_at(const struct shadow *b, size_t i)
{
	return (uint8_t)(b->tag * 31 + i * 7 + (i >> 8));
}

static void fill(struct shadow *b, size_t from)
{
	for (size_t i = from; i < b->n; i++)
		b->p[i] = byte_at(b, i);
}

static void check_block(const struct shadow *m, size_t i, uint64_t seed,
			int op)
{
	const struct shadow *b = &m[i];

	if ((uintptr_t)b->p % 16)
		fail_msg("seed %llu op %d: %p not aligned",
			 (unsigned long long)seed, op, (void *)b->p);
	for (size_t j = 0; j < b->n; j++)
		if (b->p[j] != byte_at(b, j))
			fail_msg("seed %llu op %d: block %zu (%zu bytes at %p) changed at byte %zu",
				 (unsigned long long)seed, op, i, b->n,
				 (void *)b->p, j);
	/* its header's bytes and its data overlap no other block's
	 * (malloc(0): the next block's header at p) */
	for (size_t j = 0; j < SLOTS; j++)
		if (j != i && m[j].p &&
		    b->p - sizeof(struct block) < m[j].p + m[j].n &&
		    m[j].p - sizeof(struct block) < b->p + b->n)
			fail_msg("seed %llu op %d: block %zu at %p overlaps block %zu at %p",
				 (unsigned long long)seed, op, i,
				 (void *)b->p, j, (void *)m[j].p);
}

/* Every live block (@i only, when not SLOTS) holds what was written into
 * it, aligned, apart from the others. */
static void check_model(const struct shadow *m, size_t i, uint64_t seed,
			int op)
{
	for (size_t j = i < SLOTS ? i : 0; j < SLOTS && (i == SLOTS || j == i);
	     j++)
		if (m[j].p)
			check_block(m, j, seed, op);
	assert_true(used <= BLOCKS_END);
}

/* A block of the model freed: its slot empty again. */
static void model_free(struct shadow *b)
{
	fa_free(b->p);
	b->p = NULL;
	b->n = 0;
}

static void random_run(uint64_t seed)
{
	struct shadow m[SLOTS] = { 0 };
	uint64_t s = seed;
	uint8_t tag = 0;

	arena_fresh(NULL);
	for (int op = 0; op < RANDOM_OPS; op++) {
		struct shadow *b = &m[rnd(&s) % SLOTS];
		unsigned int what = rnd(&s) % 10;
		size_t n = random_size(&s);

		if (!b->p && what < 7) {		/* malloc or calloc */
			bool zeroed = what >= 5;

			b->p = zeroed ? fa_calloc(1, n) : fa_malloc(n);
			assert_non_null(b->p);
			b->n = n;
			b->tag = ++tag;
			if (zeroed)
				for (size_t i = 0; i < n; i++)
					if (b->p[i])
						fail_msg("seed %llu op %d: calloc(%zu): byte %zu not zero",
							 (unsigned long long)seed,
							 op, n, i);
			fill(b, 0);
		} else if (b->p && what < 5) {		/* free, then reuse */
			unsigned char *was = b->p;
			bool arena = in_arena(was, b->n);
			size_t had = b->n;

			model_free(b);
			if (arena && rnd(&s) % 2) {
				/* a request the freed room holds: first fit
				 * never goes past it */
				b->n = had ? rnd(&s) % (had + 1) : 0;
				b->p = fa_malloc(b->n);
				assert_non_null(b->p);
				if (b->p > was)
					fail_msg("seed %llu op %d: %zu bytes at %p, after the %zu bytes freed at %p",
						 (unsigned long long)seed, op,
						 b->n, (void *)b->p, had,
						 (void *)was);
				b->tag = ++tag;
				fill(b, 0);
			}
		} else if (b->p) {			/* realloc */
			unsigned char *q = fa_realloc(b->p, n);
			size_t keep = n < b->n ? n : b->n;

			assert_non_null(q);
			b->p = q;
			/* the bytes kept read as before: the first keep */
			for (size_t i = 0; i < keep; i++)
				if (q[i] != byte_at(b, i))
					fail_msg("seed %llu op %d: realloc to %zu lost byte %zu",
						 (unsigned long long)seed, op,
						 n, i);
			b->n = n;
			fill(b, keep);
		}
		/* the block touched now, every block now and then */
		check_model(m, op % 64 ? (size_t)(b - m) : SLOTS, seed, op);
	}
	check_model(m, SLOTS, seed, RANDOM_OPS);
	for (size_t i = 0; i < SLOTS; i++)
		if (m[i].p)
			model_free(&m[i]);
	/* everything back: nothing left of the run in the arena */
	assert_int_equal(used, 0);
	assert_int_equal(nfree, 0);
	assert_true(front_alloc_own_only());
	assert_arena_empty();
}

/*
 * Thousands of random malloc, calloc, realloc and free against a model:
 * every block keeps its bytes, blocks never overlap, each is aligned,
 * calloc reads as zeros, a freed block's room is taken again first, and
 * all of it comes back.  A fixed seed first, then a few others (and
 * UNIT_SEED's, when set, to replay a failure).
 */
static void test_random_against_model(void **state)
{
	static const uint64_t seeds[] = { 1, 2, 0x9e3779b97f4a7c15ULL,
					  20261207, 0xdeadbeefcafeULL };
	const char *env = getenv("UNIT_SEED");

	(void)state;
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		random_run(seeds[i]);
	if (env && *env)
		random_run(strtoull(env, NULL, 0));
}

/* each test on an arena of its own */
#define FRESH(t) \
	cmocka_unit_test_setup_teardown(t, arena_fresh, no_mapping_left)

int main(void)
{
	const struct CMUnitTest tests[] = {
		FRESH(test_calloc_overflow),
		FRESH(test_calloc_clears_reused),
		FRESH(test_free_blocks_taken_again),
		FRESH(test_free_blocks_in_any_order),
		FRESH(test_realloc_bounds),
		FRESH(test_realloc_shrinks_last),
		FRESH(test_malloc_past_arena),
		FRESH(test_alignment),
		FRESH(test_random_against_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
