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

/* Before each block: its size, and whether it is a mapping of its own. */
struct block {
	size_t size;
	size_t mapped;
};

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

static struct block *block_of(void *p)
{
	return (struct block *)p - 1;
}

static size_t align_up(size_t n, size_t to)
{
	return (n + to - 1) & ~(to - 1);
}

static bool last_in_arena(const struct block *b)
{
	return !b->mapped &&
	       (const unsigned char *)(b + 1) + align_up(b->size, ALIGN) ==
		       xip_front_arena + used;
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
	*b = (struct block){ .size = n, .mapped = 1 };
	maps_live++;
	return b + 1;
}

/* @n bytes; *@reused: how many of them may have been written before */
static void *alloc(size_t n, size_t *reused)
{
	size_t need;
	struct block *b;

	*reused = 0;
	if (n > SIZE_MAX / 2) {
		errno = ENOMEM;
		return NULL;
	}
	need = sizeof(struct block) + align_up(n, ALIGN);
	if (need > XIP_FRONT_ARENA_SIZE - used)
		return map_block(n);
	b = (struct block *)(xip_front_arena + used);
	if (dirty > used + sizeof(*b))
		*reused = dirty - used - sizeof(*b);
	used += need;
	if (used > dirty)
		dirty = used;
	*b = (struct block){ .size = n };
	return b + 1;
}

void *malloc(size_t n)
{
	size_t reused;

	return alloc(n, &reused);
}

void free(void *p)
{
	struct block *b;

	if (!p)
		return;
	b = block_of(p);
	if (b->mapped) {
		maps_live--;
		munmap(b, sizeof(*b) + b->size);
	} else if (last_in_arena(b)) {
		/* the last block comes back; any other stays spent */
		used = (size_t)((unsigned char *)b - xip_front_arena);
	}
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
	if (last_in_arena(b) && n <= SIZE_MAX / 2) {
		size_t start = (size_t)((unsigned char *)p - xip_front_arena);

		if (align_up(n, ALIGN) <= XIP_FRONT_ARENA_SIZE - start) {
			used = start + align_up(n, ALIGN);
			if (used > dirty)
				dirty = used;
			b->size = n;
			return p;
		}
	}
	if (n <= b->size) {
		b->size = b->mapped ? b->size : n;
		return p;
	}
	q = malloc(n);
	if (!q)
		return NULL;
	memcpy(q, p, b->size);
	free(p);
	return q;
}

bool front_alloc_own_only(void)
{
	return maps_live == 0;
}
#endif
