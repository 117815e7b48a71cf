// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The user-space ELF loader: the kernel's filemap_xip_nopage (2.6 execute-in-place page faults) in user space.
 * Each PT_LOAD of a program is mapped with MAP_PRIVATE straight from the
 * segment file at the offsets of the program's blocks, so N running
 * copies share the segment's pages instead of holding copies in the page
 * cache of a mounted file system.
 *
 * The work is split so that the decisions can be tested on their own:
 *   prepare   I/O: lookup, permission checks, ELF parsing, data runs
 *             (exec_prepare.c)
 *   plan      pure: xip_exec_plan_load(), xip_exec_build_stack()
 *             (exec_plan.c)
 *   map       mmap the plan, build the stack on the process stack
 *   teardown  reset the process state as execve(2) does (exec_state.c)
 *   jump      exec-<arch>.S: registers cleared, new stack, entry point
 * This file holds map, the stack, the trampoline and xip_exec_run().
 */
#include <link.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <linux/prctl.h>	/* musl's sys/prctl.h has prctl_mm_map itself */
#endif

#include "exec/xip_elf.h"
#include "exec/xip_exec.h"
#include "exec/exec_int.h"
#include "util/xip_debug.h"
#include "util/xip_error.h"
#include "segment/xip_segment.h"
#include "reader/xip_image.h"

#define STACK_GAP	(256 * 1024)	/* left to xiptool below its sp */
#define STACK_MIN	(128 * 1024)	/* room for strings and vectors */
#define STACK_MAX	(16 * 1024 * 1024)
#define MAX_AUXV	40

#define MAX_UNMAP 192
#define POPULATE_MAX	(2 * 1024 * 1024)	/* bytes of one mapping */

/* lib/exec-<arch>.S: position-independent, run from a copy (see there) */
void xip_exec_jump(uint64_t entry, uint64_t sp, const struct xip_unmap *unmap,
		   size_t n) __attribute__((noreturn));
typedef void (*xip_jump_fn)(uint64_t entry, uint64_t sp,
			    const struct xip_unmap *unmap, size_t n)
	__attribute__((noreturn));

/* ---- map ------------------------------------------------------------ */

static int fixed_in_use(const struct exec_file *f, int err)
{
	const struct xip_load_plan *p = &f->plan;

	return xip_error(-err, "%s: cannot map its fixed addresses 0x%" PRIx64
			 "-0x%" PRIx64 ": %s", f->name, p->lo, p->hi,
			 err == EEXIST ? "in use by xiptool" : strerror(err));
}

/*
 * Do a fixed-address plan's mappings tile [lo, hi), as a static program's
 * usually do?  Then each claims its range (MAP_FIXED_NOREPLACE), unreserved.
 */
static bool plan_tiles(const struct exec_file *f)
{
	const struct xip_load_plan *p = &f->plan;
	uint64_t at = p->lo;

	if (!p->fixed || f->huge)
		return false;
	for (size_t i = 0; i < p->nops; i++) {
		if (p->ops[i].kind == XIP_MAP_ZERO)
			continue;
		if (p->ops[i].addr != at)
			return false;
		at += p->ops[i].len;
	}
	return at == p->hi;
}

static int reserve(struct exec_file *f, uint64_t page)
{
	const struct xip_load_plan *p = &f->plan;
	uint64_t span = p->hi - p->lo, total, base;
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	void *m;

	if (plan_tiles(f)) {
		f->tiled = true;
		f->bias = 0;
		return 0;
	}
	if (p->fixed) {
		m = mmap((void *)(uintptr_t)p->lo, span, PROT_NONE,
			 flags | MAP_FIXED_NOREPLACE, -1, 0);
		if (m != MAP_FAILED && (uint64_t)(uintptr_t)m != p->lo) {
			munmap(m, span);
			m = MAP_FAILED;
			errno = EEXIST;
		}
		if (m == MAP_FAILED)
			return fixed_in_use(f, errno);
		f->bias = 0;
		return 0;
	}
	total = span + p->align - page;
	m = mmap(NULL, total, PROT_NONE, flags, -1, 0);
	if (m == MAP_FAILED)
		return xip_error(-errno, "%s: cannot reserve 0x%" PRIx64
				 " bytes: %s", f->name, total, strerror(errno));
	base = ((uint64_t)(uintptr_t)m + p->align - 1) & ~(p->align - 1);
	if (base > (uint64_t)(uintptr_t)m)
		munmap(m, base - (uint64_t)(uintptr_t)m);
	if ((uint64_t)(uintptr_t)m + total > base + span)
		munmap((void *)(uintptr_t)(base + span),
		       (uint64_t)(uintptr_t)m + total - base - span);
	f->bias = base - p->lo;
	return 0;
}

static int map_error(const struct exec_file *f, const struct xip_map_op *op,
		     uint64_t addr, int err)
{
	if (err == EPERM && (op->prot & PROT_EXEC) && op->kind == XIP_MAP_FILE)
		return xip_error(-EACCES, "%s: the kernel refuses executable"
				 " mappings of its segment (noexec mount?)",
				 f->name);
	return xip_error(-err, "%s: cannot map 0x%" PRIx64 " bytes at 0x%"
			 PRIx64 ": %s", f->name, op->len, addr, strerror(err));
}

/* XIPTOOL_DEBUG=exec: one line per mapping, with where its pages are. */
static void trace_op(const struct exec_file *f, const struct xip_map_op *op,
		     uint64_t addr)
{
	char from[64] = "";

	if (op->kind == XIP_MAP_FILE)
		snprintf(from, sizeof(from), " from the %s at 0x%" PRIx64,
			 f->own_fd ? "host file" : "segment", op->off);
	xip_debug(XIP_DBG_EXEC, "%s: %s 0x%" PRIx64 "+0x%" PRIx64 " %c%c%c%s",
		  f->name, op->kind == XIP_MAP_FILE ? "map" :
		  op->kind == XIP_MAP_ANON ? "anon" : "clear", addr, op->len,
		  (op->prot & PROT_READ) ? 'r' : '-',
		  (op->prot & PROT_WRITE) ? 'w' : '-',
		  (op->prot & PROT_EXEC) ? 'x' : '-', from);
}

/*
 * Copy [addr, addr + len) from @off of the file into anonymous pages: the
 * 4 KiB fallback where a hugetlbfs segment cannot be mapped (it maps
 * only whole huge pages at offsets that are multiples of them).
 */
static int copy_range(const struct exec_file *f, const struct xip_map_op *op,
		      uint64_t addr, uint64_t len, uint64_t off, int prot)
{
	void *want = (void *)(uintptr_t)addr, *m;
	uint64_t done = 0;

	if (!len)
		return 0;
	XIP_DBG(EXEC, "%s: copy 0x%" PRIx64 "+0x%" PRIx64 " from the segment"
		" at 0x%" PRIx64 ": not a whole %" PRIu64 " KiB page of its"
		" hugetlbfs", f->name, addr, len, off, f->huge >> 10);
	m = mmap(want, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return map_error(f, op, addr, errno);
	while (done < len) {
		ssize_t n = pread(f->fd, (char *)m + done, len - done,
				  (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return xip_error(n < 0 ? -errno : -EIO, "%s: cannot read"
					 " 0x%" PRIx64 " bytes of the segment at"
					 " 0x%" PRIx64 ": %s", f->name,
					 len - done, off + done,
					 n < 0 ? strerror(errno) : "short");
		done += (uint64_t)n;
	}
	if (mprotect(m, len, prot))
		return map_error(f, op, addr, errno);
	return 0;
}

/* Map whole huge pages [addr, addr + len) of the hugetlbfs file at @off. */
static int map_huge(const struct exec_file *f, const struct xip_map_op *op,
		    uint64_t addr, uint64_t len, uint64_t off, int prot)
{
	void *m;

	if (!len)
		return 0;
	XIP_DBG(EXEC, "%s: map 0x%" PRIx64 "+0x%" PRIx64 " in %" PRIu64
		" KiB pages", f->name, addr, len, f->huge >> 10);
	/* read-only: nothing to copy on write, no pages to reserve */
	m = mmap((void *)(uintptr_t)addr, len, prot,
		 MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, f->fd, (off_t)off);
	return m == MAP_FAILED ? map_error(f, op, addr, errno) : 0;
}

/*
 * A file mapping of op @i from a hugetlbfs segment: the 2 MiB pages of a
 * read-only range congruent to its offset are mapped, the last one whole
 * when nothing else of the program lies in it; the rest is copied.
 */
static int map_file_huge(const struct exec_file *f, size_t i, int prot,
			 uint64_t page)
{
	const struct xip_map_op *op = &f->plan.ops[i];
	uint64_t h = f->huge, addr = f->bias + op->addr, end = addr + op->len;
	uint64_t lo, hi, limit = f->bias + f->plan.hi;
	uint64_t src_end = f->src_pages * page;
	int ret;

	if ((op->prot & PROT_WRITE) || (addr - op->off) % h)
		return copy_range(f, op, addr, op->len, op->off, prot);
	for (size_t j = 0; j < f->plan.nops; j++) {
		uint64_t at = f->bias + f->plan.ops[j].addr;

		if (j != i && at >= addr && at < limit &&
		    (at >= end || f->plan.ops[j].kind == XIP_MAP_ZERO))
			limit = at;
	}
	lo = (addr + h - 1) & ~(h - 1);
	hi = end & ~(h - 1);
	/* the last page whole: the segment file holds whole huge pages */
	if (limit >= hi + h && end > hi &&
	    op->off + (hi + h - addr) <= ((src_end + h - 1) & ~(h - 1)))
		hi += h;
	else if (limit < hi)
		hi = limit & ~(h - 1);
	if (lo >= hi)
		return copy_range(f, op, addr, op->len, op->off, prot);
	ret = copy_range(f, op, addr, lo - addr, op->off, prot);
	if (!ret)
		ret = map_huge(f, op, lo, hi - lo, op->off + (lo - addr), prot);
	if (!ret && end > hi)
		ret = copy_range(f, op, hi, end - hi, op->off + (hi - addr),
				 prot);
	return ret;
}

/*
 * Read-only pages of a segment in memory, up to POPULATE_MAX, mapped at
 * once where its attach measured that this costs less than the faults
 * it saves (seg->populate): where a fault is dear (a VM whose page
 * tables are shadowed), not where the kernel maps 16 pages around each
 * fault for less than populating them (its page walk costs more per
 * page than a fault per window).
 */
static int populate(const struct exec_file *f, const struct xip_map_op *op)
{
	return f->seg && f->seg->populate && f->seg->kind == XIP_SEG_SHM &&
	       op->len <= POPULATE_MAX && !(op->prot & PROT_WRITE) ?
		       MAP_POPULATE : 0;
}

static int map_op(const struct exec_file *f, const struct xip_map_op *op,
		  uint64_t page)
{
	uint64_t addr = f->bias + op->addr, pg = addr & ~(page - 1);
	int flags = MAP_PRIVATE | MAP_FIXED;
	int prot = op->prot | ((op->prot & PROT_EXEC) ? f->guard_prot : 0);
	void *want = (void *)(uintptr_t)addr, *m;

	if (xip_debug_mask() & XIP_DBG_EXEC)
		trace_op(f, op, addr);
	/* a tiled plan reserved nothing: each mapping claims its range */
	if (f->tiled)
		flags = MAP_PRIVATE | MAP_FIXED_NOREPLACE;
	switch (op->kind) {
	case XIP_MAP_FILE:
		if (f->huge)
			return map_file_huge(f, (size_t)(op - f->plan.ops),
					     prot, page);
		m = mmap(want, op->len, prot, flags | populate(f, op), f->fd,
			 (off_t)op->off);
		break;
	case XIP_MAP_ANON:
		m = mmap(want, op->len, prot, flags | MAP_ANONYMOUS, -1, 0);
		break;
	default:
		if (!(op->prot & PROT_WRITE) &&
		    mprotect((void *)(uintptr_t)pg, page,
			     prot | PROT_READ | PROT_WRITE))
			return map_error(f, op, addr, errno);
		xip_exec_raw_copy(addr, NULL, op->len);
		if (!(op->prot & PROT_WRITE) &&
		    mprotect((void *)(uintptr_t)pg, page, prot))
			return map_error(f, op, addr, errno);
		return 0;
	}
	if (f->tiled && m != MAP_FAILED && m != want)
		munmap(m, op->len);	/* a kernel that took it as a hint */
	if (f->tiled && (m == MAP_FAILED ? errno == EEXIST : m != want))
		return fixed_in_use(f, EEXIST);
	return m == MAP_FAILED ? map_error(f, op, addr, errno) : 0;
}

#ifdef __aarch64__
#ifndef PROT_BTI
#define PROT_BTI	0x10
#endif
#ifndef HWCAP2_BTI
#define HWCAP2_BTI	(1UL << 17)
#endif
/*
 * The arm64 kernel's arch_elf_adjust_prot(): on a CPU with BTI, the
 * executable mappings of a file whose property note asks for BTI are
 * guarded.  With an interpreter only the interpreter's: ld.so guards the
 * program and its libraries itself.  PAC needs nothing from the loader
 * but fresh keys (exec-aarch64.S).
 */
static void guard_branches(struct xip_exec *ex)
{
	struct exec_file *f = ex->has_interp ? &ex->interp : &ex->prog;

	if ((getauxval(AT_HWCAP2) & HWCAP2_BTI) &&
	    (f->elf.aarch64_features & XIP_ELF_AARCH64_BTI))
		f->guard_prot = PROT_BTI;
}
#else
static void guard_branches(struct xip_exec *ex)
{
}
#endif

/* The huge page size of a hugetlbfs segment (0 for any other file). */
static uint64_t hugetlbfs_page(const struct exec_file *f, uint64_t page)
{
	struct statfs sfs = { 0 };

	/* the segment's file system, as it was when it was opened */
	if (f->seg && f->seg->fs_known) {
		sfs.f_type = (__typeof__(sfs.f_type))f->seg->fs_type;
		sfs.f_bsize = (__typeof__(sfs.f_bsize))f->seg->fs_bsize;
	} else if (fstatfs(f->fd, &sfs)) {
		return 0;
	}
	return sfs.f_type == HUGETLBFS_MAGIC && (uint64_t)sfs.f_bsize > page ?
		       (uint64_t)sfs.f_bsize : 0;
}

static int load_file(struct exec_file *f, uint64_t page)
{
	int ret = xip_exec_plan_load(&f->elf, f->runs, f->nruns, page,
				     f->src_pages, f->name, &f->plan);

	f->huge = hugetlbfs_page(f, page);

	if (!ret)
		ret = reserve(f, page);
	if (!ret)
		XIP_DBG(EXEC, "%s: %zu mappings, load bias 0x%" PRIx64,
			f->name, f->plan.nops, f->bias);
	for (size_t i = 0; !ret && i < f->plan.nops; i++)
		ret = map_op(f, &f->plan.ops[i], page);
	return ret;
}

/* ---- the stack ------------------------------------------------------ */

static void auxv_add(struct xip_auxv *a, size_t *n, uint64_t type,
		     uint64_t val)
{
	if (*n < MAX_AUXV)
		a[(*n)++] = (struct xip_auxv){ type, val };
}

/* Pass a host value through when the kernel gave us one. */
static void auxv_pass(struct xip_auxv *a, size_t *n, uint64_t type)
{
	unsigned long v;

	errno = 0;
	v = getauxval(type);
	if (v || errno != ENOENT)
		auxv_add(a, n, type, v);
}

/* The auxiliary vector in the kernel's order (create_elf_tables). */
static size_t make_auxv(const struct xip_exec *ex, struct xip_auxv *a)
{
	const struct exec_file *p = &ex->prog;
	size_t n = 0;

	auxv_pass(a, &n, AT_SYSINFO_EHDR);
	auxv_pass(a, &n, AT_MINSIGSTKSZ);
	auxv_add(a, &n, AT_HWCAP, getauxval(AT_HWCAP));
	auxv_add(a, &n, AT_PAGESZ, ex->page);
	auxv_add(a, &n, AT_CLKTCK, getauxval(AT_CLKTCK));
	auxv_add(a, &n, AT_PHDR, p->bias + p->plan.phdr);
	auxv_add(a, &n, AT_PHENT, sizeof(Elf64_Phdr));
	auxv_add(a, &n, AT_PHNUM, p->plan.phnum);
	auxv_add(a, &n, AT_BASE, ex->has_interp ? ex->interp.bias : 0);
	auxv_add(a, &n, AT_FLAGS, 0);
	auxv_add(a, &n, AT_ENTRY, p->bias + p->plan.entry);
	/* a fresh process still has the credentials its execve gave it */
	auxv_add(a, &n, AT_UID, ex->fresh ? getauxval(AT_UID) : getuid());
	auxv_add(a, &n, AT_EUID, ex->fresh ? getauxval(AT_EUID) : geteuid());
	auxv_add(a, &n, AT_GID, ex->fresh ? getauxval(AT_GID) : getgid());
	auxv_add(a, &n, AT_EGID, ex->fresh ? getauxval(AT_EGID) : getegid());
	auxv_add(a, &n, AT_SECURE, 0);
	auxv_add(a, &n, AT_RANDOM, 0);
	auxv_pass(a, &n, AT_HWCAP2);
	auxv_add(a, &n, AT_EXECFN, 0);
	auxv_add(a, &n, AT_PLATFORM, 0);
	auxv_pass(a, &n, 27);	/* AT_RSEQ_FEATURE_SIZE */
	auxv_pass(a, &n, 28);	/* AT_RSEQ_ALIGN */
	auxv_pass(a, &n, 29);	/* AT_HWCAP3 */
	auxv_pass(a, &n, 30);	/* AT_HWCAP4 */
	return n;
}

/*
 * The [stack] mapping's end, for the RLIMIT_STACK check.  execve(2) puts
 * the file name (AT_EXECFN) at the very top of the stack, one pointer
 * below the mapping's end, and the end is page-aligned; /proc/self/maps
 * only when that does not hold.
 */
static uint64_t stack_vma_end(uint64_t sp, uint64_t page)
{
	const char *fn = (const char *)getauxval(AT_EXECFN);
	unsigned long lo, hi, end = 0;
	char line[512];
	FILE *f;

	if (fn) {
		end = (uint64_t)(uintptr_t)fn + strlen(fn) + 1 + sizeof(void *);
		if (!(end & (page - 1)) && sp < end)
			return end;
		end = 0;
	}
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= sp &&
		    sp < hi)
			end = hi;
	}
	fclose(f);
	return end;
}

/* A fresh process's AT_RANDOM: new with its execve, unread once we jump. */
static bool fresh_random(const struct xip_exec *ex, uint8_t random[16])
{
	const void *r = ex->fresh ? (const void *)getauxval(AT_RANDOM) : NULL;

	if (r)
		memcpy(random, r, 16);
	return r != NULL;
}

/*
 * The strings execve(2) copied for a fresh process, in the order it
 * copied them (arguments, environment; the file name it ran, AT_EXECFN,
 * after them), into @in for the stack's builder: each one runs up to the
 * next.  Nothing when they are not known, or not so laid out.
 */
static void kernel_strings(const struct xip_exec *ex, struct xip_stack_in *in,
			   const char **list)
{
	const char *end = (const char *)getauxval(AT_EXECFN);
	size_t n = 0;

	for (size_t i = 0; ex->initial_argv && ex->initial_argv[i]; i++)
		list[n++] = ex->initial_argv[i];
	for (size_t i = 0; ex->initial_envp && ex->initial_envp[i]; i++)
		list[n++] = ex->initial_envp[i];
	if (!n || !end)
		return;
	for (size_t i = 0; i < n; i++)
		if ((uintptr_t)list[i] >= (uintptr_t)(i + 1 < n ? list[i + 1] :
								  end))
			return;
	in->kstr = list;
	in->nkstr = n;
	in->kstr_end = end;
}

/*
 * Build the stack on the process's own [stack] mapping, STACK_GAP below
 * the current stack pointer, so that it stays the main stack of the
 * program (growing down to RLIMIT_STACK as usual).
 */
static int build_stack(struct xip_exec *ex, const char *const *argv,
		       const char *const *envp, struct xip_stack_out *out)
{
	/* an address in [stack]: our frame's, or the kernel's random bytes' */
	uint64_t sp = ex->own_stack ? (uint64_t)getauxval(AT_RANDOM) :
				      (uint64_t)(uintptr_t)__builtin_frame_address(0);
	uint64_t top = (sp - STACK_GAP) & ~(ex->page - 1), end, size;
	size_t need;
	struct xip_auxv auxv[MAX_AUXV];
	struct xip_stack_in in = { 0 };
	const char **kstr;
	struct rlimit rl;
	int ret;

	size = STACK_MAX;
	ex->stack_end = end = stack_vma_end(sp, ex->page);
	if (ex->own_stack)
		top = end;	/* where execve(2) builds it */
	ex->stack_top = top;
	if (ex->own_stack && !end)
		return xip_error(-EFAULT, "cannot find the top of the stack");
	/*
	 * own_stack: the stack is where execve(2) put the front end's, whose
	 * arguments and environment (the program's, but for the marker) it
	 * checked against the limit: nothing of it is ours any more, and the
	 * program grows it under the limit as it would natively
	 */
	if (!ex->own_stack && getrlimit(RLIMIT_STACK, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY) {
		if (!end || end - top + STACK_MIN > rl.rlim_cur)
			return xip_error(-E2BIG, "stack limit (ulimit -s) %"
					 PRIu64 " KiB too small",
					 (uint64_t)rl.rlim_cur / 1024);
		size = rl.rlim_cur - (end - top);
		size = size / 4 > STACK_MIN ? size / 4 : STACK_MIN;
		size = size < STACK_MAX ? size : STACK_MAX;
	}
	in.argv = argv;
	in.envp = envp;
	in.execfn = ex->execfn;
	errno = 0;
	in.platform = (const char *)getauxval(AT_PLATFORM);
	if (!fresh_random(ex, in.random) &&
	    getrandom(in.random, sizeof(in.random), 0) != sizeof(in.random))
		return xip_error(-errno, "getrandom: %s", strerror(errno));
	in.pad = ((unsigned int)in.random[0] << 4) & 0x1ff0;
	in.auxv = auxv;
	in.nauxv = make_auxv(ex, auxv);
	in.sizes = malloc((xip_exec_str_count(argv) + xip_exec_str_count(envp)) *
				  sizeof(*in.sizes) + 1);
	/* only spares measuring strings: without it they are measured */
	kstr = malloc((xip_exec_str_count(ex->initial_argv) +
		       xip_exec_str_count(ex->initial_envp)) *
			      sizeof(*kstr) + 1);
	if (kstr)
		kernel_strings(ex, &in, kstr);
	ret = in.sizes ? xip_exec_stack_bytes(&in, size, &need) :
			 xip_error(-ENOMEM, "out of memory");
	if (!ret && !ex->own_stack) {
		ret = xip_exec_build_stack((void *)(uintptr_t)(top - size),
					   top - size, size, &in, out);
	} else if (!ret) {
		/*
		 * Built aside, at the size it takes, and copied to the top of
		 * [stack] at the jump (teardown_and_jump): the kernel's strings
		 * it is made of lie there.
		 */
		ex->stack_image = malloc(need);
		ret = ex->stack_image ?
			      xip_exec_build_stack(ex->stack_image, top - need,
						   need, &in, out) :
			      xip_error(-ENOMEM, "out of memory");
		ex->stack_image_size = need;
	}
	free(in.sizes);
	free(kstr);
	return ret;
}

/*
 * Everything the loader's process had mapped from files: its executable
 * and the shared objects loaded with it (every object dl_iterate_phdr
 * reports but the vDSO, which the program gets too).
 */
struct self_ranges {
	struct xip_unmap r[MAX_UNMAP];
	size_t n;
	uint64_t page, vdso;
	uint64_t keep;		/* the page of xip_exec_jump */
};

/* [lo, hi) to unmap: one munmap for ranges that follow each other */
static void add_range(struct self_ranges *s, uint64_t lo, uint64_t hi)
{
	if (lo >= hi)
		return;
	if (s->n && s->r[s->n - 1].addr + s->r[s->n - 1].len == lo)
		s->r[s->n - 1].len += hi - lo;
	else if (s->n < MAX_UNMAP)
		s->r[s->n++] = (struct xip_unmap){ lo, hi - lo };
}

static int self_ranges_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct self_ranges *s = data;

	if ((s->vdso && info->dlpi_addr == s->vdso) ||
	    (info->dlpi_name && !strncmp(info->dlpi_name, "linux-vdso", 10)))
		return 0;
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo, hi;

		if (ph->p_type != PT_LOAD || !ph->p_memsz)
			continue;
		if (s->n == MAX_UNMAP)
			return 1;
		lo = (info->dlpi_addr + ph->p_vaddr) & ~(s->page - 1);
		hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + s->page - 1) &
		     ~(s->page - 1);
		/*
		 * The page of the jump's code stays, the rest goes; a page before
		 * it in its mapping (the ELF headers, where the linker puts the
		 * jump's section first, .text.unlikely) stays too: one munmap
		 * for the rest of the executable instead of two.
		 */
		if (s->keep >= lo && s->keep < hi) {
			if (s->keep - lo > s->page)
				add_range(s, lo, s->keep);
			lo = s->keep + s->page;
		}
		add_range(s, lo, hi);
	}
	return 0;
}

/*
 * Add [lo, hi) to the ranges, less what the program's files reserved
 * (@nspan spans): an anonymous mapping of ours next to a program's bss
 * is one mapping in /proc/self/maps.
 */
static void add_outside(struct self_ranges *s, uint64_t lo, uint64_t hi,
			const struct xip_unmap *span, size_t nspan)
{
	for (; nspan && lo < hi; span++, nspan--) {
		uint64_t a = span->addr, b = span->addr + span->len;

		if (b <= lo || a >= hi)
			continue;
		if (a > lo)
			add_outside(s, lo, a, span + 1, nspan - 1);
		lo = b;
	}
	if (lo < hi && s->n < MAX_UNMAP)
		s->r[s->n++] = (struct xip_unmap){ lo, hi - lo };
}

/*
 * A fresh front end's anonymous memory (its heap, its C library's
 * thread area and allocations): the program does not need it, and it
 * would stay private in every running copy.  From /proc/self/maps: every
 * mapping of no file and no name but [heap], out of the program's spans.
 */
static void self_anon_ranges(const struct xip_exec *ex, struct self_ranges *s)
{
	char buf[8192], name[64];
	unsigned long lo, hi, ino;
	struct xip_unmap span[2];
	size_t len = 0, nspan = 0;
	ssize_t n;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	span[nspan++] = (struct xip_unmap){ ex->prog.bias + ex->prog.plan.lo,
		ex->prog.plan.hi - ex->prog.plan.lo };
	if (ex->has_interp)
		span[nspan++] = (struct xip_unmap){
			ex->interp.bias + ex->interp.plan.lo,
			ex->interp.plan.hi - ex->interp.plan.lo };
	while ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	/* a listing cut short loses only what it did not reach */
	for (char *l = buf, *nl; *l && (nl = strchr(l, '\n')); l = nl + 1) {
		*nl = '\0';
		name[0] = '\0';
		if (sscanf(l, "%lx-%lx %*s %*s %*s %lu %63s", &lo, &hi, &ino,
			   name) < 3 || ino ||
		    (name[0] && strcmp(name, "[heap]")))
			continue;
		add_outside(s, lo, hi, span, nspan);
	}
}

/*
 * The [stack] above the program's (ending at stack_top): the loader's
 * frames, arguments and environment, read by nobody once the program
 * runs.  Unmapped last; the program's stack grows down as usual.
 */
static void stack_above(const struct xip_exec *ex, struct self_ranges *s)
{
	if (ex->stack_end > ex->stack_top && s->n < MAX_UNMAP)
		s->r[s->n++] = (struct xip_unmap){ ex->stack_top,
			ex->stack_end - ex->stack_top };
}

/*
 * The last instructions, xip_exec_jump, run where they are: the page of
 * our text holding them (a page of their own, exec-<arch>.S) is left out
 * of the ranges of our own executable, libraries and memory the jump
 * unmaps first, so that none of the loader but that clean page of our
 * file (and the one of its headers before it, self_ranges_cb) stays in
 * the program (when more ranges than fit, the rest stays).  The ranges
 * are read from the loader's last frame (teardown_and_jump), or with
 * own_stack from below the program's stack.
 */
static int make_trampoline(struct xip_exec *ex)
{
	/* on the heap: 3 KiB less of stack (the front end's is its memory) */
	struct self_ranges *s = malloc(sizeof(*s));
	size_t n;

	if (!s)
		return xip_error(-ENOMEM, "out of memory");
	*s = (struct self_ranges){
		.page = ex->page,
		.vdso = getauxval(AT_SYSINFO_EHDR),
		.keep = (uintptr_t)xip_exec_jump & ~(uintptr_t)(ex->page - 1),
	};
	dl_iterate_phdr(self_ranges_cb, s);
	if (ex->fresh && !(ex->own_memory_only && ex->own_memory_only()))
		self_anon_ranges(ex, s);
	stack_above(ex, s);
	/* the ranges are the first of *s: the rest goes */
	n = s->n;
	ex->ranges = realloc(s, n * sizeof(s->r[0]) + 1);
	if (!ex->ranges) {
		free(s);
		return xip_error(-ENOMEM, "out of memory");
	}
	ex->unmap = ex->ranges;
	ex->nunmap = n;
	for (size_t i = 0; i < ex->nunmap; i++)
		XIP_DBG(EXEC, "the jump unmaps 0x%" PRIx64 "+0x%" PRIx64
			" of the loader", ex->unmap[i].addr, ex->unmap[i].len);
	ex->tramp = (void *)xip_exec_jump;
	return 0;
}

/*
 * own_stack: the program's stack to the top of [stack], where it was built
 * for, in its two parts: below the random gap under its strings (vectors,
 * random bytes, platform) and above it (the strings); the gap (up to 4
 * KiB, maybe a page of its own) is neither copied nor touched, as
 * execve(2) leaves it.
 */
__attribute__((no_sanitize("address", "undefined")))
static void copy_stack_image(const struct xip_exec *ex,
			     const struct xip_stack_out *st)
{
	uint64_t base = ex->stack_top - ex->stack_image_size;

	xip_exec_raw_copy(st->gap_hi, ex->stack_image + (st->gap_hi - base),
			  ex->stack_top - st->gap_hi);
	xip_exec_raw_copy(st->sp, ex->stack_image + (st->sp - base),
			  st->gap_lo - st->sp);
}

/*
 * The jump, its list of ranges on this frame, which the last range (the
 * stack above the program's) takes away once it is read: a frame of its
 * own, which the front end running on its own stack does not take.
 */
__attribute__((noreturn, noinline, no_sanitize("address", "undefined")))
static void jump_from_frame(const struct xip_exec *ex, uint64_t sp,
			    uint64_t entry)
{
	struct xip_unmap list[MAX_UNMAP];

	for (size_t i = 0; i < ex->nunmap; i++)
		list[i] = ex->unmap[i];
	((xip_jump_fn)ex->tramp)(entry, sp, list, ex->nunmap);
}

/*
 * No way back from here: everything that can fail has been done.  Only
 * system calls follow, then the jump.
 */
__attribute__((noreturn, noinline, no_sanitize("address", "undefined")))
static void teardown_and_jump(const struct xip_exec *ex,
			      const struct xip_stack_out *st, uint64_t entry)
{
	/* the program's heap starts empty, where execve would start it */
	uint64_t brk = xip_exec_program_brk(ex, (uint64_t)syscall(SYS_brk, 0));
	uint64_t sp = st->sp;
	struct xip_unmap *list;

	xip_exec_set_stack_prot(ex, st->sp);
	xip_exec_close_cloexec(ex);
	/* execve left a fresh process's dispositions as they must be */
	if (!ex->fresh)
		xip_exec_reset_signals();
	xip_exec_unregister_rseq();
	prctl(PR_SET_NAME, ex->comm, 0, 0, 0);
	xip_exec_set_mm(ex, st, brk, brk);
	if (!ex->stack_image)
		jump_from_frame(ex, sp, entry);
	/*
	 * own_stack: the ranges take this stack (the front end's memory)
	 * before the list is read to its end: it goes below the program's
	 * stack, in [stack], which stays (the jump keeps the entry just
	 * below the program's sp)
	 */
	copy_stack_image(ex, st);
	list = (struct xip_unmap *)(uintptr_t)((sp - 256 -
		ex->nunmap * sizeof(*list)) & ~(uint64_t)15);
	xip_exec_raw_copy((uint64_t)(uintptr_t)list, ex->unmap,
			  ex->nunmap * sizeof(*list));
	((xip_jump_fn)ex->tramp)(entry, sp, list, ex->nunmap);
}

int xip_exec_run(struct xip_exec *ex, const char *const *argv,
		 const char *const *envp)
{
	struct xip_stack_out st;
	uint64_t entry;
	int ret;

	/* a fresh process started no thread */
	if (!ex->fresh && !xip_exec_single_threaded())
		return xip_error(-EBUSY, "%s: cannot replace a process running"
				 " other threads", ex->prog.name);
	guard_branches(ex);
	ret = load_file(&ex->prog, ex->page);
	if (!ret && ex->has_interp)
		ret = load_file(&ex->interp, ex->page);
	if (!ret)
		ret = build_stack(ex, argv, envp, &st);
	if (!ret)
		ret = make_trampoline(ex);
	/* the holder lock outlives the image's descriptors, as mappings do */
	if (!ret)
		ret = xip_image_pin_lock(ex->img);
	if (ret)
		return ret < 0 && !xip_errcode() ?
		       xip_error(ret, "%s: cannot keep the segment's lock: %s",
				 ex->prog.name, strerror(-ret)) : ret;
	entry = ex->has_interp ? ex->interp.bias + ex->interp.plan.entry :
				 ex->prog.bias + ex->prog.plan.entry;
	/*
	 * The mappings keep the segment file, and its lock file, open
	 * (xip_seg_pin_lock).  Only the
	 * image's descriptor (and its view of the segment, when it mapped
	 * one) must go: the rest of the loader's memory is left behind as
	 * execve leaves the old image's.
	 */
	XIP_DBG(EXEC, "%s: stack at 0x%" PRIx64 ", jump to 0x%" PRIx64
		" (%s)", ex->prog.name, st.sp, entry,
		ex->has_interp ? ex->interp.name : "the program's entry");
	xip_image_abandon(ex->img);
	ex->img = NULL;
	/* a host interpreter's pages stay mapped without its descriptor */
	if (ex->interp.own_fd && ex->interp.fd >= 0) {
		close(ex->interp.fd);
		ex->interp.fd = -1;
	}
	teardown_and_jump(ex, &st, entry);
}
