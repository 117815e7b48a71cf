/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The exec room: align-check and the user-space ELF loader.
 * Part of the public API: include "xip.h", which includes this header.
 */
#ifndef XIP_EXEC_H
#define XIP_EXEC_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/xip_ext2.h"
#include "util/xip_util.h"
#include "segment/xip_segment.h"
#include "verity/xip_verity.h"
#include "reader/xip_image.h"

/* ------------------------------------------------------------------ */
/* XIP readiness of ELF files in an image (align.c)                    */
/* ------------------------------------------------------------------ */

struct xip_align_opts {
	unsigned int page_size;	/* 0: the host's */
	bool huge;		/* also check 2 MiB mappings */
};

/* One PT_LOAD as it would be mapped from the segment. */
struct xip_align_seg {
	unsigned int index;	/* in the program header table */
	uint32_t flags;		/* PF_R | PF_W | PF_X */
	uint64_t offset, vaddr, filesz, memsz, align;
	uint64_t runs;		/* runs of image blocks: one mmap each */
	uint64_t pages;		/* file pages behind it */
	uint64_t shared;	/* of those, mapped straight from the segment */
	uint64_t copied;	/* written (data, relro, text relocations, a
				 * last page the loader zeroes): copied */
	bool huge_checked;	/* --huge and p_memsz >= 2 MiB */
	uint64_t huge_pages;	/* 2 MiB mappings possible */
	char huge_why[192];	/* why not (the first obstacle) */
};

struct xip_align_file {
	char *path;
	ext2_ino_t ino;
	bool elf;		/* an ELF file: the rest is meaningful */
	bool ready;		/* XIP-ready: no reasons */
	bool not_program;	/* ELF, but a relocatable object or a core */
	char *reasons;		/* "; "-separated, NULL when ready */
	unsigned int nreasons;
	uint16_t type, machine;
	bool textrel, exec_stack;
	struct xip_align_seg *segs;
	size_t nsegs;
	uint64_t mmaps, shared, copied, huge_pages;
};

/*
 * Check regular file @ino of @img (named @path in the result).  Returns 0
 * when the file was examined: f->elf false for a file that is not ELF,
 * f->not_program for an ELF file that is no program (a relocatable object,
 * a core dump: its reason in f->reasons), else f->ready and f->reasons; a negative errno when it cannot be read.
 * Free @f with xip_align_file_free() in both cases.
 */
int xip_align_check(struct xip_image *img, ext2_ino_t ino, const char *path,
		    const struct xip_align_opts *o, struct xip_align_file *f);
void xip_align_file_free(struct xip_align_file *f);

/*
 * Call @fn for every regular file reachable from the root of @img, each
 * inode once (the first path found), depth first in on-disk order.  A
 * nonzero return from @fn stops the walk and is returned.
 */
typedef int (*xip_walk_fn)(void *arg, const char *path, ext2_ino_t ino);
int xip_walk_files(struct xip_image *img, xip_walk_fn fn, void *arg);

/*
 * What holds block @blk of the image @spec (owner.c), into @buf: the path
 * of the regular file whose data it is, "metadata" (in use, no file's
 * data: superblocks, bitmaps, inode tables, directories, indirect blocks;
 * also when the file system does not open), "free space", or "verity
 * tree" past the file system.  Always 0.
 */
int xip_block_owner(struct xip_seg *seg, uint64_t blk, char *buf,
		    size_t len);

struct xip_root_hash_report {
	struct xip_verity_info info;
	struct xip_verity_bad bad;
	char owner[XIP_PATH_MAX];	/* what holds the bad block */
};

/*
 * Check the data of @seg (data_size bytes) against the dm-verity tree it
 * carries and the root hash @root (owner.c).  0 when every block matches;
 * otherwise the error of xip_verity_check() with a message naming the
 * first bad block and, for a data block, what holds it (r->owner: a
 * file's path, "metadata", "free space").
 */
int xip_root_hash_check(struct xip_seg *seg, const uint8_t *root,
			size_t root_len, struct xip_root_hash_report *r);
/*
 * The error @ret of a check of @seg whose findings are in @r (its info and
 * bad block filled in) as xip_root_hash_check() reports it: r->owner and
 * the message named after the first bad block.  @ret itself.
 */
int xip_root_hash_explain(struct xip_seg *seg, int ret,
			  struct xip_root_hash_report *r);

/* ------------------------------------------------------------------ */
/* The user-space ELF loader (exec.c, exec-<arch>.S)                   */
/* ------------------------------------------------------------------ */

enum xip_interp_from {
	XIP_INTERP_AUTO,	/* from the image when there, else the host */
	XIP_INTERP_HOST,
	XIP_INTERP_IMAGE,
};

struct xip_exec_opts {
	const char *path;		/* the program inside the image */
	enum xip_interp_from interp_from;
	/*
	 * The caller was started by execve(2) and has since installed no
	 * signal handler, set no alternate signal stack, changed no
	 * credentials and keeps no close-on-exec descriptor open but 0-2
	 * and the image's (the xiptool front end), and runs one thread:
	 * xip_exec_run() then leaves the signal dispositions as the kernel
	 * set them, closes only the descriptors of @std_opened and takes
	 * the ids from the auxiliary vector, instead of probing the whole
	 * process state.
	 */
	bool fresh;
	/* with @fresh: bit N set when descriptor N (0-2) was closed at
	 * start and the caller opened it (close-on-exec) in its place */
	unsigned int std_opened;
	/*
	 * With @fresh: true when every anonymous page the caller holds lies
	 * in its executable's own mappings (a static front end whose heap
	 * is an arena in its bss), so that unmapping those leaves none of
	 * its memory to the program.  NULL, or false: the rest is looked
	 * for in /proc/self/maps.
	 */
	bool (*own_memory_only)(void);
	/*
	 * With @fresh: the caller runs on a stack of its own (the front
	 * end's, in its bss), so that the process's [stack] holds only the
	 * kernel's strings and vectors and frames never returned to once
	 * xip_exec_run() succeeds.  The program's stack is then built at the
	 * top of [stack], over them, where execve(2) builds it, and no part
	 * of [stack] is unmapped.
	 */
	bool own_stack;
	/*
	 * With @fresh: the process's argument vector (or a tail of it) and
	 * its environment as execve(2) left them, strings and vectors
	 * untouched (NULL: not known).  The kernel copied those strings one
	 * after the other, the file name it ran last (AT_EXECFN), so that
	 * the program's stack takes each of them by its neighbour's address
	 * instead of measuring it.
	 */
	const char *const *initial_argv, *const *initial_envp;
};

/* What xip_exec_prepare() found; read-only for callers. */
struct xip_exec_info {
	bool setid_ignored;		/* setuid/setgid bit not honoured */
	bool interp_from_image;
	const char *interp;		/* NULL for a static program */
	uint16_t type;			/* ET_EXEC or ET_DYN */
};

struct xip_exec;

/*
 * Look @opts->path up in @img (symlinks followed), check that it is a
 * regular file with an execute bit for us, parse and validate it and its
 * interpreter, and get their data runs.  -ENOENT (or -ENOTDIR, -ELOOP)
 * when the program or its interpreter does not exist, -EACCES or
 * -ENOEXEC (or another error) when it cannot be executed.  The image
 * stays owned by the caller until xip_exec_run().
 */
int xip_exec_prepare(struct xip_image *img, const struct xip_exec_opts *opts,
		     struct xip_exec **exp);
const struct xip_exec_info *xip_exec_info(const struct xip_exec *ex);
/*
 * Replace the running process by the prepared program: map it from the
 * segment (its holder lock stays with the mappings), build the stack
 * from @argv and @envp, close the image, reset the process state as
 * execve does (caught signals, alternate signal stack, close-on-exec
 * descriptors, rseq) and jump.  Returns only on failure, with the image
 * still open; mappings made so far are left behind.
 */
int xip_exec_run(struct xip_exec *ex, const char *const *argv,
		 const char *const *envp);
void xip_exec_free(struct xip_exec *ex);

/* ------------------------------------------------------------------ */
/* The marker of a program started by exec (exec_marker.c)             */
/* ------------------------------------------------------------------ */

/*
 * The environment variable `xiptool exec` sets for the program it runs:
 * "1:INTERP:IMAGE:PATH" (INTERP auto, host or image; IMAGE "@NAME" or
 * an absolute path; PATH absolute in the image; '%', ':' and control
 * characters of IMAGE and PATH written %XX).  The front end, executed
 * again by the program through /proc/self/exe under another name, reads
 * it to run the same program again with the new arguments.
 */
#define XIP_EXEC_MARKER "XIPTOOL_EXEC"
/* the longest value read: both paths at their longest, fully escaped */
#define XIP_EXEC_MARKER_MAX (6 * XIP_PATH_MAX + 16)

struct xip_exec_marker {
	char image[XIP_PATH_MAX];	/* "@NAME" or an absolute path */
	char path[XIP_PATH_MAX];	/* absolute, in the image */
	enum xip_interp_from interp_from;
};

/*
 * The "XIPTOOL_EXEC=..." entry for the program @path (made absolute) of
 * the image @image as given to exec ("@NAME", else a path, made
 * absolute: the kernel's name of the file open on @fd when it has one,
 * else realpath(3) of @image; @fd -1: none), into a malloc'ed *@out.
 */
int xip_exec_marker_format(const char *image, int fd, const char *path,
			   enum xip_interp_from from, char **out);
/*
 * Parse and check the marker's @value (without "XIPTOOL_EXEC=") into
 * @m: -EINVAL with a message for anything but the one form
 * xip_exec_marker_format() writes.  It says what to open, not that it
 * may be opened: the caller opens it with its own rights.
 */
int xip_exec_marker_parse(const char *value, struct xip_exec_marker *m);

#endif /* XIP_EXEC_H */
