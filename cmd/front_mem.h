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
 * its first bytes, which a start of `xiptool exec` writes (busybox: 20
 * KiB of its own, and 48 KiB of windows of the image's metadata read
 * by the loader, lib/segment XIP_SEG_COPY), asked for by the entry point
 * with the writable pages before the arena; a multiple of 4 KiB
 */
#define XIP_FRONT_ARENA_HOT	(72 * 1024)

#endif
