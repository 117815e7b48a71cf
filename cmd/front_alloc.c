// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The memory allocator of the musl front end (built with
 * XIP_FRONT_ALLOC; musl lets a static program replace malloc, calloc,
 * realloc and free).  The front end allocates little, once, and then
 * either replaces itself by the program or exits: a bump allocator over
 * an arena in its own bss serves it without a system call, and its pages
 * go with the front end's own mappings before the jump.  musl's allocator
 * would take the memory from brk and mmap (a guard page, its metadata,
 * its groups) and give some back with munmap, a system call each.
 *
 * A request the arena cannot hold gets a mapping of its own, unmapped
 * again by free().  While such a mapping is live, front_alloc_own_only()
 * says the process holds anonymous memory outside its executable, and the
 * loader looks for it in /proc/self/maps as it does for any other caller.
 */
#ifdef XIP_FRONT_ALLOC
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cmd.h"
#include "front_mem.h"

#define ALIGN		16
/* the arena's bytes for blocks: the front end's stack takes the rest */
#define HEAP_SIZE	(XIP_FRONT_ARENA_SIZE - XIP_FRONT_STACK_SIZE)

/*
 * Before each block: the bytes asked for, and its state: in use, free
 * (an arena block given back, whose bytes a later request may take) or
 * a mapping of its own; an arena block's room runs to the next block
 * (@units of ALIGN bytes after the header), so that the arena's blocks
 * follow each other from its start to @used.
 */
struct block {
	size_t size;
	uint32_t state;
	uint32_t units;
};

enum { BLOCK_USED, BLOCK_FREE, BLOCK_MAPPED };

_Static_assert(sizeof(struct block) == ALIGN, "block header keeps alignment");

/*
 * Global for the entry point (front_entry.S), which asks for its first
 * pages; a common symbol, which the linker places after every .bss
 * section: the last of the bss, so that the small variables every start
 * writes lie before it, on the pages the entry point asks for.
 */
unsigned char xip_front_arena[XIP_FRONT_ARENA_SIZE]
	__attribute__((common, aligned(ALIGN), visibility("hidden")));
static size_t used;		/* bytes of the arena handed out */
static size_t dirty;		/* bytes of the arena ever handed out */
static size_t maps_live;	/* blocks with a mapping of their own */
static size_t nfree;		/* arena blocks given back, not taken again */
static size_t free_from;	/* no free block starts before this offset */

static struct block *block_of(void *p)
{
	return (struct block *)p - 1;
}

static size_t align_up(size_t n, size_t to)
{
	return (n + to - 1) & ~(to - 1);
}

static size_t room(const struct block *b)
{
	return (size_t)b->units * ALIGN;
}

static struct block *next_block(struct block *b)
{
	return (struct block *)((unsigned char *)(b + 1) + room(b));
}

static struct block *arena_end(void)
{
	return (struct block *)(xip_front_arena + used);
}

static void *map_block(size_t n)
{
	size_t len = sizeof(struct block) + n;
	struct block *b;

	b = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED) {
		errno = ENOMEM;
		return NULL;
	}
	*b = (struct block){ .size = n, .state = BLOCK_MAPPED };
	maps_live++;
	return b + 1;
}

/*
 * A block given back whose room holds @want bytes, the first one: the
 * rest of its room, when it holds a block of its own, stays free.
 */
static struct block *take_free(size_t want)
{
	bool first = true;

	for (struct block *b = (struct block *)(xip_front_arena + free_from);
	     b < arena_end(); b = next_block(b)) {
		size_t rest;

		if (b->state != BLOCK_FREE)
			continue;
		/* the blocks before the first free one stay in use */
		if (first)
			free_from = (size_t)((unsigned char *)b - xip_front_arena);
		first = false;
		if (room(b) < want)
			continue;
		rest = room(b) - want;
		if (rest >= sizeof(struct block) + ALIGN) {
			struct block *r;

			b->units = (uint32_t)(want / ALIGN);
			r = next_block(b);
			*r = (struct block){ .state = BLOCK_FREE,
				.units = (uint32_t)((rest - sizeof(*r)) / ALIGN) };
		} else {
			nfree--;
		}
		b->state = BLOCK_USED;
		return b;
	}
	return NULL;
}

/* @n bytes; *@reused: how many of them may have been written before */
static void *alloc(size_t n, size_t *reused)
{
	size_t need, want;
	struct block *b;

	*reused = 0;
	if (n > SIZE_MAX / 2) {
		errno = ENOMEM;
		return NULL;
	}
	want = align_up(n, ALIGN);
	b = nfree ? take_free(want) : NULL;
	if (b) {
		b->size = n;
		*reused = n;
		return b + 1;
	}
	need = sizeof(struct block) + want;
	if (need > HEAP_SIZE - used)
		return map_block(n);
	b = arena_end();
	if (dirty > used + sizeof(*b))
		*reused = dirty - used - sizeof(*b);
	used += need;
	if (used > dirty)
		dirty = used;
	*b = (struct block){ .size = n, .state = BLOCK_USED,
			     .units = (uint32_t)(want / ALIGN) };
	return b + 1;
}

void *malloc(size_t n)
{
	size_t reused;

	return alloc(n, &reused);
}

/* Give back the arena's free blocks at its end. */
static void trim(void)
{
	struct block *last_used = NULL;

	for (struct block *b = (struct block *)xip_front_arena; b < arena_end();
	     b = next_block(b))
		if (b->state != BLOCK_FREE)
			last_used = b;
	for (struct block *b = last_used ? next_block(last_used) :
					   (struct block *)xip_front_arena;
	     b < arena_end(); b = next_block(b))
		nfree--;
	used = last_used ? (size_t)((unsigned char *)next_block(last_used) -
				    xip_front_arena) : 0;
}

void free(void *p)
{
	struct block *b, *n;

	if (!p)
		return;
	b = block_of(p);
	if (b->state == BLOCK_MAPPED) {
		maps_live--;
		munmap(b, sizeof(*b) + b->size);
		return;
	}
	b->state = BLOCK_FREE;
	nfree++;
	if ((size_t)((unsigned char *)b - xip_front_arena) < free_from)
		free_from = (size_t)((unsigned char *)b - xip_front_arena);
	/* one free block for a free one after it */
	n = next_block(b);
	if (n < arena_end() && n->state == BLOCK_FREE) {
		b->units += (uint32_t)(sizeof(*n) / ALIGN) + n->units;
		nfree--;
	}
	if (next_block(b) == arena_end())
		trim();
}

void *calloc(size_t count, size_t size)
{
	size_t n, reused;
	void *p;

	if (size && count > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	n = count * size;
	p = alloc(n, &reused);
	/* fresh bss and fresh mappings read as zeros: clear only reused bytes */
	if (p && reused)
		memset(p, 0, n < reused ? n : reused);
	return p;
}

void *realloc(void *p, size_t n)
{
	struct block *b;
	void *q;

	if (!p)
		return malloc(n);
	b = block_of(p);
	if (n > SIZE_MAX / 2) {
		errno = ENOMEM;
		return NULL;
	}
	if (b->state == BLOCK_USED && align_up(n, ALIGN) <= room(b)) {
		b->size = n;
		/* the last block shrinks with the arena's end */
		if (next_block(b) == arena_end()) {
			b->units = (uint32_t)(align_up(n, ALIGN) / ALIGN);
			used = (size_t)((unsigned char *)next_block(b) -
					xip_front_arena);
		}
		return p;
	}
	/* the last block grows in place */
	if (b->state == BLOCK_USED && next_block(b) == arena_end() &&
	    align_up(n, ALIGN) <= HEAP_SIZE - (size_t)((unsigned char *)p -
						       xip_front_arena)) {
		b->units = (uint32_t)(align_up(n, ALIGN) / ALIGN);
		b->size = n;
		used = (size_t)((unsigned char *)next_block(b) - xip_front_arena);
		if (used > dirty)
			dirty = used;
		return p;
	}
	if (b->state == BLOCK_MAPPED && n <= b->size)
		return p;
	q = malloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, b->size < n ? b->size : n);
	free(p);
	return q;
}

bool front_alloc_own_only(void)
{
	return maps_live == 0;
}
#endif
