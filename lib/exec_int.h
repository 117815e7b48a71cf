/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Internals of the user-space loader, shared by its files: exec_prepare.c
 * (find and check the program), exec_plan.c (the pure plans: mappings
 * and the initial stack) and exec.c (map, build the stack, tear down,
 * jump).
 */
#ifndef XIP_EXEC_INT_H
#define XIP_EXEC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fsread.h"

/* A range of the loader's own files, unmapped on the way out. */
struct xip_unmap {
	uint64_t addr, len;
};

struct exec_file {
	char *name;			/* for messages */
	struct xip_elf elf;
	int fd;				/* what the pages are mapped from */
	bool own_fd;			/* a host file: ours to close */
	uint64_t src_pages;
	struct xip_run *runs;
	size_t nruns;
	struct xip_load_plan plan;
	uint64_t bias;
	int guard_prot;			/* added to executable mappings */
};

struct xip_exec {
	struct xip_image *img;
	struct exec_file prog, interp;
	bool has_interp;
	struct xip_exec_info info;
	char *execfn;
	char comm[16];
	uint64_t page;
	void *tramp;		/* a copy of xip_exec_jump, then the ranges */
	const struct xip_unmap *unmap;	/* in tramp, after the code */
	size_t nunmap;
};

/*
 * Copy @len bytes of @src (zeros when NULL) to the address @dst, with
 * stores the sanitizers do not check (exec_plan.c).
 */
void xip_exec_raw_copy(uint64_t dst, const void *src, size_t len);

#endif
