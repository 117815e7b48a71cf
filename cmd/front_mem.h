/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The musl front end's own memory, shared by its allocator
 * (cmd/front_alloc.c) and its entry point (cmd/front_entry.S): only
 * macros, so that the assembler can read it.
 */
#ifndef XIP_FRONT_MEM_H
#define XIP_FRONT_MEM_H

/* bytes of the allocator's arena, in the bss (xip_front_arena) */
#define XIP_FRONT_ARENA_SIZE	(256 * 1024)
/*
 * its first bytes, which a start of `xiptool exec` writes (busybox from a
 * segment that keeps what the loader read, lib/exec/exec_cache.c: three
 * pages; of the registry's entry, 12 KiB, only the first bytes are
 * written, and it is cut to them; the record's text and the run
 * directory's name are on the stack; the blocks given back are taken
 * again), asked for by the
 * entry point with the writable pages before the arena, up to the page
 * they end in; a multiple of 4 KiB.  A start that reads the image (its
 * metadata in windows of copies, lib/segment XIP_SEG_COPY), or whose
 * environment is large, takes the rest of its pages as it writes them.
 */
#define XIP_FRONT_ARENA_HOT	(12 * 1024)

/*
 * its last bytes: the stack `xiptool exec` runs on (cmd/front.c), so
 * that the process's [stack] holds only what the kernel put there, over
 * which the loader builds the program's stack (lib/exec, own_stack); the
 * allocator keeps below it.  The loader takes less than a page of it.
 */
#define XIP_FRONT_STACK_SIZE	(64 * 1024)

#endif
