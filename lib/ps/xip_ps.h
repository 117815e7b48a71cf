/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The ps room: which processes map which attached segment.
 * Part of the public API: include "xip.h", which includes this header.
 */
#ifndef XIP_PS_H
#define XIP_PS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/xip_util.h"
#include "registry/xip_registry.h"

/* ------------------------------------------------------------------ */
/* Processes that map attached segments (ps.c)                         */
/* ------------------------------------------------------------------ */

enum xip_ps_how {
	XIP_PS_EXEC,		/* xiptool exec: runs code of the segment file */
	XIP_PS_MOUNT,		/* files of a mount of its loop device */
	XIP_PS_MMAP,		/* maps the segment file (nbdkit, any program) */
	XIP_PS_PMEM,		/* QEMU's memory backend: a guest's pmem */
	XIP_PS_FILL,		/* the filler of a lazy attach: writes into it */
};

/* A process and one segment it maps (one entry per way of mapping). */
struct xip_ps_proc {
	pid_t pid;
	char comm[17];
	size_t seg;			/* index in xip_ps_report.segs */
	enum xip_ps_how how;
	char *program;			/* path in the image, NULL: unknown
					   (always NULL for mmap, pmem and
					   fill) */
	uint64_t mappings;
	uint64_t shared;		/* resident pages still the segment's */
	uint64_t copied;		/* pages copied on write (private) */
	/* private to ps.c */
	bool have_code;
	bool shared_map;		/* a MAP_SHARED mapping of the file */
	bool exec_map;			/* a private executable one */
	uint64_t code_off;
	char first_path[XIP_PATH_MAX];
};

struct xip_ps_seg {
	char name[XIP_SEG_NAME_MAX + 1];
	char loop[64];
	char mount[XIP_PATH_MAX];	/* where the loop device is mounted */
	/* admitted against a root hash and still sealed (as list tells) */
	bool verified;
	/* whose checked signature of the root hash it was ("": none) */
	char signer[256];
	uint64_t procs, shared, copied;	/* totals */
};

struct xip_ps_report {
	struct xip_ps_seg *segs;	/* the segments looked at, by name */
	size_t nsegs;
	struct xip_ps_proc *procs;	/* by PID */
	size_t n;
	size_t cap;			/* room in @procs, private to ps.c */
};

/*
 * Find the processes that map the attached segments named in @names (all
 * when @nnames is 0; "@NAME", NAME or its loop device): every /proc/PID/
 * smaps readable is read, mappings are matched by device and inode.
 * -ENOENT when a name is not an attached segment.
 */
int xip_ps(const char *const *names, size_t nnames, struct xip_ps_report *r);
void xip_ps_report_free(struct xip_ps_report *r);

#endif /* XIP_PS_H */
