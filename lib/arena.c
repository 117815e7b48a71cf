// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A bump allocator for short-lived processes: the front end (musl build)
 * uses it as its malloc.  `xiptool exec` lives for a fraction of a
 * millisecond and then becomes another program, which keeps whatever the
 * loader allocated, so nothing is worth handing back: blocks are packed
 * one after another in large lazily mapped chunks (every page touched is a
 * page the kernel must zero, so density is what counts), free() of the
 * most recent block takes it back (temporary buffers), other frees do
 * nothing, and blocks of ARENA_BIG bytes or more get a mapping of their own
 * that free() unmaps.
 *
 * Each block is preceded by a header: its usable size, and for a block of
 * its own mapping the address where that mapping starts.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "xip.h"

#define ARENA_ALIGN	16
#define ARENA_CHUNK	(1024 * 1024)	/* address space, not memory */
#define ARENA_BIG	(128 * 1024)	/* blocks with a mapping of their own */
#define HDR		sizeof(struct arena_hdr)
#define FLAG_OWN_MAP	((size_t)1)

struct arena_hdr {
	size_t size;			/* usable bytes | FLAG_OWN_MAP */
	uintptr_t map;			/* start of the block's own mapping */
};

static struct {
	char *cur, *end;		/* free space of the current chunk */
	char *last, *last_from;		/* most recent block, cur before it */
	bool busy;
} arena;

_Static_assert(sizeof(struct arena_hdr) == ARENA_ALIGN, "header size");

static void arena_lock(void)
{
	while (__atomic_test_and_set(&arena.busy, __ATOMIC_ACQUIRE))
		;
}

static void arena_unlock(void)
{
	__atomic_clear(&arena.busy, __ATOMIC_RELEASE);
}

static struct arena_hdr *hdr_of(void *p)
{
	return (struct arena_hdr *)((char *)p - HDR);
}

static size_t round_up(size_t n, size_t a)
{
	return (n + a - 1) & ~(a - 1);
}

static void *map_own(size_t n, size_t align)
{
	size_t len = n + align + HDR;
	char *m, *p;

	if (len < n)
		return NULL;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	p = (char *)round_up((uintptr_t)m + HDR, align);
	hdr_of(p)->size = n | FLAG_OWN_MAP;
	hdr_of(p)->map = (uintptr_t)m;
	return p;
}

static bool new_chunk(size_t need)
{
	size_t len = need > ARENA_CHUNK ? round_up(need, ARENA_CHUNK) :
					  ARENA_CHUNK;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return false;
	arena.cur = m;
	arena.end = m + len;
	arena.last = NULL;
	return true;
}

/* @align: a power of two, at least ARENA_ALIGN */
static void *arena_get(size_t n, size_t align)
{
	char *p;

	n = round_up(n ? n : 1, ARENA_ALIGN);
	if (n >= ARENA_BIG || n == 0)	/* 0: rounding overflowed */
		return n ? map_own(n, align) : NULL;
	arena_lock();
	p = arena.cur ? (char *)round_up((uintptr_t)arena.cur + HDR, align) :
			NULL;
	if (!p || p + n > arena.end) {
		if (!new_chunk(n + align + HDR)) {
			arena_unlock();
			return NULL;
		}
		p = (char *)round_up((uintptr_t)arena.cur + HDR, align);
	}
	hdr_of(p)->size = n;
	hdr_of(p)->map = 0;
	arena.last_from = arena.cur;
	arena.last = p;
	arena.cur = p + n;
	arena_unlock();
	return p;
}

void *xip_arena_malloc(size_t n)
{
	void *p = arena_get(n, ARENA_ALIGN);

	if (!p)
		errno = ENOMEM;
	return p;
}

void *xip_arena_memalign(size_t align, size_t n)
{
	void *p;

	if (!align || (align & (align - 1))) {
		errno = EINVAL;
		return NULL;
	}
	p = arena_get(n, align < ARENA_ALIGN ? ARENA_ALIGN : align);
	if (!p)
		errno = ENOMEM;
	return p;
}

void *xip_arena_calloc(size_t count, size_t size)
{
	void *p;

	if (size && count > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	p = xip_arena_malloc(count * size);
	/* new mappings are zero, but a block taken back may not be */
	if (p && !(hdr_of(p)->size & FLAG_OWN_MAP))
		memset(p, 0, count * size);
	return p;
}

size_t xip_arena_usable_size(void *p)
{
	return p ? hdr_of(p)->size & ~FLAG_OWN_MAP : 0;
}

void xip_arena_free(void *p)
{
	struct arena_hdr *h;

	if (!p)
		return;
	h = hdr_of(p);
	if (h->size & FLAG_OWN_MAP) {
		size_t n = h->size & ~FLAG_OWN_MAP;

		munmap((void *)h->map, (size_t)((char *)p - (char *)h->map) + n);
		return;
	}
	arena_lock();
	if (p == arena.last) {
		arena.cur = arena.last_from;
		arena.last = NULL;
	}
	arena_unlock();
}

void *xip_arena_realloc(void *p, size_t n)
{
	size_t old;
	void *q;

	if (!p)
		return xip_arena_malloc(n);
	old = xip_arena_usable_size(p);
	if (n <= old)
		return p;
	arena_lock();
	if (p == arena.last && round_up(n, ARENA_ALIGN) < ARENA_BIG &&
	    (size_t)(arena.end - (char *)p) >= round_up(n, ARENA_ALIGN)) {
		hdr_of(p)->size = round_up(n, ARENA_ALIGN);
		arena.cur = (char *)p + hdr_of(p)->size;
		arena_unlock();
		return p;
	}
	arena_unlock();
	q = xip_arena_malloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, old);
	xip_arena_free(p);
	return q;
}
