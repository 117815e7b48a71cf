/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Internal interface of the user-space ELF loader, shared by its files:
 * exec_prepare.c (find and check the program), exec_plan.c (the pure
 * plans: mappings and the initial stack, tested and fuzzed alone) and
 * exec.c (map, build the stack, tear down, jump; exec-<arch>.S holds the
 * last instructions).  Not part of the public API.
 */
#ifndef XIP_EXEC_INT_H
#define XIP_EXEC_INT_H

#include "exec/xip_elf.h"
#include "exec/xip_exec.h"
#include "segment/xip_segment.h"
#include "reader/xip_image.h"
#include "reader/xip_reader.h"

/* ------------------------------------------------------------------ */
/* The user-space ELF loader (exec.c, exec-<arch>.S)                   */
/* ------------------------------------------------------------------ */

/*
 * xip_exec_prepare() finds and checks a program (and its interpreter),
 * xip_exec_run() maps it straight from the segment, builds the stack and
 * jumps to it: on success it does not return.  In between, the pure
 * planning functions below compute what is mapped where and how the
 * stack looks; they do no I/O and can be tested and fuzzed alone.
 */

/* One step of mapping a program; addresses are before the load bias. */
enum xip_map_kind {
	XIP_MAP_FILE,		/* @len bytes of the source at offset @off */
	XIP_MAP_ANON,		/* anonymous zero pages (holes, bss) */
	XIP_MAP_ZERO,		/* clear bytes of already mapped pages */
};

struct xip_map_op {
	enum xip_map_kind kind;
	uint64_t addr;
	uint64_t len;
	uint64_t off;		/* XIP_MAP_FILE: byte offset in the source */
	int prot;		/* PROT_READ | PROT_WRITE | PROT_EXEC */
};

struct xip_load_plan {
	uint64_t lo, hi;	/* span to reserve (page aligned) */
	uint64_t align;		/* base alignment (ET_DYN) */
	bool fixed;		/* ET_EXEC: load at lo exactly */
	struct xip_map_op *ops;	/* in order (malloc'ed) */
	size_t nops, ops_cap;
	uint64_t entry;		/* e_entry */
	uint64_t phdr;		/* AT_PHDR before the bias (0: none) */
	uint64_t phnum;
	uint64_t start_code, end_code, start_data, end_data;
};

/*
 * Plan the mapping of the validated @elf whose file data lies in @runs
 * (file pages to source pages of @page bytes, in file order, holes left
 * out) of a source holding @src_pages pages.  Every PT_LOAD page is
 * mapped from its run, or as zero pages over a hole; bss is cleared and
 * extended with anonymous pages.  -ENOEXEC when a run is out of order or
 * out of the source.
 */
int xip_exec_plan_load(const struct xip_elf *elf, const struct xip_run *runs,
		       size_t nruns, uint64_t page, uint64_t src_pages,
		       const char *name, struct xip_load_plan *plan);
void xip_load_plan_free(struct xip_load_plan *plan);

struct xip_auxv {
	uint64_t type, val;
};

struct xip_stack_in {
	const char *const *argv;	/* NULL-terminated, argv[0] first */
	const char *const *envp;	/* NULL-terminated */
	const char *execfn;		/* AT_EXECFN */
	const char *platform;		/* AT_PLATFORM (NULL: none) */
	uint8_t random[16];		/* AT_RANDOM bytes */
	unsigned int pad;		/* bytes of random gap below the strings */
	const struct xip_auxv *auxv;	/* without AT_NULL; AT_RANDOM,
					 * AT_EXECFN, AT_PLATFORM are filled */
	size_t nauxv;
	/*
	 * Room for a size a string of argv and envp: xip_exec_stack_bytes()
	 * measures them there, with their counts and sums, and sets @sized;
	 * xip_exec_build_stack() takes only a stack so measured, and reads
	 * each string once more only to copy it.
	 */
	size_t *sizes;
	size_t argc, envc, alen, elen;
	bool sized;
	/*
	 * Optional, @nkstr strings that follow each other in memory in this
	 * order, each running up to the next one and the last up to
	 * @kstr_end (execve(2)'s arguments, environment and file name): a
	 * string of argv or envp that is one of them is sized by its
	 * neighbour's address, not read.
	 */
	const char *const *kstr;
	size_t nkstr;
	const char *kstr_end;
};

struct xip_stack_out {
	uint64_t sp;			/* points at argc, 16-byte aligned */
	uint64_t arg_start, arg_end, env_start, env_end;
	uint64_t auxv;			/* address of the vector on the stack */
	size_t auxv_bytes;		/* including AT_NULL */
	/* the random gap below the strings (pad): [gap_lo, gap_hi) holds
	 * nothing of the stack (the platform string and random bytes end at
	 * gap_lo, the strings start at gap_hi) */
	uint64_t gap_lo, gap_hi;
};

/*
 * Build the initial stack of a process, like the kernel's
 * create_elf_tables(), in @mem (@size bytes) that will be at address
 * @addr: strings (argv, envp, execfn) at the top, platform string, 16
 * random bytes, then auxv, envp, argv and argc below a 16-byte aligned
 * sp, from @in as xip_exec_stack_bytes() measured it.  -E2BIG when it
 * does not fit.
 */
int xip_exec_build_stack(void *mem, uint64_t addr, size_t size,
			 const struct xip_stack_in *in,
			 struct xip_stack_out *out);
/* Measure @in's strings into @in->sizes: the @size xip_exec_build_stack()
 * needs for @in at most (-E2BIG past @limit bytes of strings). */
int xip_exec_stack_bytes(struct xip_stack_in *in, size_t limit, size_t *size);
/* How many strings @v holds (NULL: none). */
size_t xip_exec_str_count(const char *const *v);

/* ---- what the loader read of an image for one path (exec_cache.c) ---- */

/* One read of the ELF parser: @got of @len bytes at @off, from @at. */
struct xip_exec_read {
	uint64_t off;
	uint32_t len, got;
	size_t at;		/* in the entry's bytes */
};

struct xip_exec_cached {
	uint64_t ino, size;		/* the file's inode and size */
	uint32_t mode, uid, gid;	/* for the execute permission check */
	uint32_t block_size;		/* the image's */
	struct xip_run *runs;		/* xip_file_runs() */
	size_t nruns;
	struct xip_exec_read *reads;	/* the ELF parser's, in order */
	size_t nreads, next;		/* @next: the one replay gives next */
	uint8_t *bytes;
	size_t nbytes;
	size_t reads_cap, bytes_cap;	/* while logging (xip_grow) */
};

/*
 * May the segment keep entries (a read-only type on tmpfs, the caller
 * the administrator)?  @fresh: the caller's credentials are its execve's.
 */
bool xip_exec_cache_usable(const struct xip_seg *seg, bool fresh);
/* The entry for the image's absolute @path: 0, -ENODATA, or another error. */
int xip_exec_cache_get(const struct xip_seg *seg, const char *path,
		       struct xip_exec_cached *c);
/* Keep @c for @path (best effort: a failure leaves no entry). */
void xip_exec_cache_put(const struct xip_seg *seg, const char *path,
			const struct xip_exec_cached *c);
/* An entry's bytes, and back (-EINVAL: damaged, or another path's). */
int xip_exec_cache_encode(const char *path, const struct xip_exec_cached *c,
			  uint8_t **buf, size_t *len);
int xip_exec_cache_decode(const uint8_t *buf, size_t len, const char *path,
			  struct xip_exec_cached *c);
/* Record a read of the ELF parser (-EFBIG past what an entry holds). */
int xip_exec_cached_log(struct xip_exec_cached *c, uint64_t off, size_t len,
			const void *data, size_t got);
/* The next recorded read, when it is for @off and @len; else -ESTALE. */
ssize_t xip_exec_cached_replay(struct xip_exec_cached *c, uint64_t off,
			       void *buf, size_t len);
void xip_exec_cached_free(struct xip_exec_cached *c);

/* A range of the loader's own files, unmapped on the way out. */
struct xip_unmap {
	uint64_t addr, len;
};

struct exec_file {
	char *name;			/* for messages */
	struct xip_elf elf;
	int fd;				/* what the pages are mapped from */
	bool own_fd;			/* a host file: ours to close */
	const struct xip_seg *seg;	/* else the image's segment */
	uint64_t src_pages;
	struct xip_run *runs;
	size_t nruns;
	struct xip_load_plan plan;
	uint64_t bias;
	int guard_prot;			/* added to executable mappings */
	uint64_t huge;			/* hugetlbfs page size of @fd, or 0 */
	bool tiled;			/* mapped without a reservation */
};

struct xip_exec {
	struct xip_image *img;
	struct exec_file prog, interp;
	bool has_interp;
	bool fresh;		/* xip_exec_opts.fresh */
	unsigned int std_opened;	/* xip_exec_opts.std_opened */
	bool (*own_memory_only)(void);	/* xip_exec_opts.own_memory_only */
	struct xip_exec_info info;
	char *execfn;
	char comm[16];
	uint64_t page;
	unsigned int block_size;	/* the image's */
	bool own_stack;			/* xip_exec_opts.own_stack */
	/* with fresh: xip_exec_opts.initial_argv, initial_envp */
	const char *const *initial_argv, *const *initial_envp;
	/* own_stack: the program's stack, built here for the @stack_image_size
	 * bytes below stack_top, copied there at the jump */
	uint8_t *stack_image;
	size_t stack_image_size;
	uint64_t stack_top;	/* the program's stack ends here */
	uint64_t stack_end;	/* end of [stack] (0: not known) */
	void *tramp;		/* xip_exec_jump, moved or copied */
	const struct xip_unmap *unmap;	/* what it unmaps: @ranges */
	struct xip_unmap *ranges;
	size_t nunmap;
};

/*
 * Copy @len bytes of @src (zeros when NULL) to the address @dst, with
 * stores the sanitizers do not check (exec_plan.c).
 */
void xip_exec_raw_copy(uint64_t dst, const void *src, size_t len);

/* ---- exec_state.c: the process state after execve(2) ---------------- */
/* Every signal's disposition back to SIG_DFL (SIG_IGN ones stay). */
void xip_exec_reset_signals(void);
/* Unregister the rseq area the C library registered for this thread. */
void xip_exec_unregister_rseq(void);
/* Close the close-on-exec descriptors (only ours, when @ex->fresh). */
void xip_exec_close_cloexec(const struct xip_exec *ex);
/* Does the process run one thread? */
bool xip_exec_single_threaded(void);
/* The mm's fields of the program (prctl(PR_SET_MM)). */
void xip_exec_set_mm(const struct xip_exec *ex, const struct xip_stack_out *st,
		     uint64_t start_brk, uint64_t brk);
/* The stack's protection as the program's PT_GNU_STACK asks. */
void xip_exec_set_stack_prot(const struct xip_exec *ex, uint64_t sp);
/* Where execve(2) would start the program's heap, given our break @cur. */
uint64_t xip_exec_program_brk(const struct xip_exec *ex, uint64_t cur);

#endif
