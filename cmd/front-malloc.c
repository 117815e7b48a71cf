// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The musl front end's malloc: lib/arena.c.  musl lets a static program
 * replace malloc; its own internal allocations stay with its allocator.
 * Pages are what a process started for `xiptool exec` pays for: the
 * general allocator spreads a few kilobytes over many of them and returns
 * memory to the kernel on free, the arena packs them and keeps them.
 */
#include <errno.h>
#include <stdlib.h>
#include <malloc.h>

#include "xip.h"

void *malloc(size_t n)
{
	return xip_arena_malloc(n);
}

void *calloc(size_t count, size_t size)
{
	return xip_arena_calloc(count, size);
}

void *realloc(void *p, size_t n)
{
	return xip_arena_realloc(p, n);
}

void free(void *p)
{
	xip_arena_free(p);
}

void *aligned_alloc(size_t align, size_t n)
{
	return xip_arena_memalign(align, n);
}

void *memalign(size_t align, size_t n)
{
	return xip_arena_memalign(align, n);
}

int posix_memalign(void **res, size_t align, size_t n)
{
	void *p;

	if (align < sizeof(void *))
		return EINVAL;
	p = xip_arena_memalign(align, n);
	if (!p)
		return errno;
	*res = p;
	return 0;
}

size_t malloc_usable_size(void *p)
{
	return xip_arena_usable_size(p);
}
