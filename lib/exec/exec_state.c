// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The process state after execve(2), set by the loader before it jumps
 * (the teardown of exec.c): signal dispositions reset, the C library's
 * rseq area unregistered, close-on-exec descriptors closed, the mm's
 * fields (arguments, environment, auxiliary vector, heap) set with
 * prctl(PR_SET_MM), the stack's protection, and where the program's heap
 * starts.  A fresh front end (xip_exec_opts.fresh) skips what execve
 * already did for it.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35)
#include <sys/rseq.h>		/* glibc registers rseq for every thread */
#define XIP_LIBC_RSEQ 1
#endif
#include <sys/syscall.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <linux/prctl.h>	/* musl's sys/prctl.h has prctl_mm_map itself */
#endif

#include "exec/exec_int.h"
#include "util/xip_ext2.h"

#define POLL_CHUNK	256		/* descriptors per poll(2) */
#define POLL_SCAN_MAX	1024		/* descriptors poll(2) looks at */
#define OWN_FDS_MAX	64		/* most xiptool holds at once */
#define RSEQ_UNREGISTER	1		/* RSEQ_FLAG_UNREGISTER */
#define RSEQ_AREA_SIZE	32		/* what glibc registers */

/* ---- signals, rseq, descriptors, threads, the mm ---------------------- */

struct k_sigaction {
	uint64_t handler, flags, restorer, mask;
};

/* Raw system calls: the sanitizers' interceptors must not be involved. */
void xip_exec_reset_signals(void)
{
	struct k_sigaction old, dfl = { 0 };
	stack_t ss = { .ss_flags = SS_DISABLE };

	for (int sig = 1; sig < 65; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		if (syscall(SYS_rt_sigaction, sig, NULL, &old, 8))
			continue;
		if (old.handler != (uint64_t)(uintptr_t)SIG_DFL &&
		    old.handler != (uint64_t)(uintptr_t)SIG_IGN)
			syscall(SYS_rt_sigaction, sig, &dfl, NULL, 8);
	}
	syscall(SYS_sigaltstack, &ss, NULL);
}

#ifdef XIP_LIBC_RSEQ
void xip_exec_unregister_rseq(void)
{
	void *area;

	if (!__rseq_size)
		return;
	area = (char *)__builtin_thread_pointer() + __rseq_offset;
	if (syscall(SYS_rseq, area, __rseq_size, RSEQ_UNREGISTER, RSEQ_SIG))
		syscall(SYS_rseq, area, RSEQ_AREA_SIZE, RSEQ_UNREGISTER,
			RSEQ_SIG);
}
#else
/* a C library that registers no rseq area (musl) leaves nothing to undo */
void xip_exec_unregister_rseq(void)
{
}
#endif

/* Close every descriptor /proc/self/fd lists that is marked close-on-exec. */
static void close_cloexec_proc(void)
{
	int fds[1024], n = 0;
	struct dirent *d;
	DIR *dir;

	do {
		dir = opendir("/proc/self/fd");
		if (!dir)
			break;
		n = 0;
		while ((d = readdir(dir)) && n < 1024) {
			int fd = atoi(d->d_name);
			int fl = fcntl(fd, F_GETFD);

			if (d->d_name[0] != '.' && fd != dirfd(dir) &&
			    fl >= 0 && (fl & FD_CLOEXEC))
				fds[n++] = fd;
		}
		closedir(dir);
		for (int i = 0; i < n; i++)
			close(fds[i]);
	} while (n == 1024);
}

static void close_if_cloexec(int fd)
{
	int fl = fcntl(fd, F_GETFD);

	if (fl >= 0 && (fl & FD_CLOEXEC))
		close(fd);
}

/*
 * Every close-on-exec descriptor here was opened by this process: those it
 * inherited with the flag were closed by the execve that started it.  A
 * descriptor is opened at the lowest free number, and xiptool never holds
 * more than OWN_FDS_MAX at once, so its own lie below POLL_SCAN_MAX unless
 * nearly all of those numbers are taken by inherited ones.  poll(2), with
 * no wait, tells which of them are open (POLLNVAL: not open): a few system
 * calls, where listing /proc/self/fd makes the kernel build an inode for
 * every descriptor.  False when that cannot be sure to have seen them all.
 */
static bool close_cloexec_poll(void)
{
	struct pollfd p[POLL_CHUNK];
	struct rlimit rl;
	rlim_t end = POLL_SCAN_MAX, used = 0;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		rl.rlim_cur = RLIM_INFINITY;
	if (rl.rlim_cur < end)
		end = rl.rlim_cur;
	for (rlim_t base = 0; base < end; base += POLL_CHUNK) {
		nfds_t n = end - base < POLL_CHUNK ? (nfds_t)(end - base) :
						     POLL_CHUNK;

		for (nfds_t i = 0; i < n; i++)
			p[i] = (struct pollfd){ .fd = (int)(base + i) };
		if (poll(p, n, 0) < 0)
			return false;
		for (nfds_t i = 0; i < n; i++) {
			if (p[i].revents & POLLNVAL)
				continue;
			used++;
			close_if_cloexec(p[i].fd);
		}
	}
	/* all numbers above the limit were beyond reach of our own opens */
	return end == rl.rlim_cur || used + OWN_FDS_MAX < end;
}

/*
 * Close every descriptor marked close-on-exec, as execve does.  A fresh
 * process (xip_exec_opts.fresh) holds none of its own but what it opened
 * at 0-2 in place of closed ones: every inherited close-on-exec descriptor
 * was closed by the execve that started it.
 */
void xip_exec_close_cloexec(const struct xip_exec *ex)
{
	if (ex->fresh) {
		for (int fd = 0; fd <= 2; fd++)
			if (ex->std_opened & (1u << fd))
				close(fd);
		return;
	}
	if (!close_cloexec_poll())
		close_cloexec_proc();
}

/* Field 20 of /proc/self/stat, the number of threads; -1 when unread. */
static long stat_threads(void)
{
	char buf[2048], *p;
	long v = -1;
	int fd, n = 0;
	ssize_t len;

	fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -1;
	buf[len] = '\0';
	p = strrchr(buf, ')');
	/* the first field after the command is field 3 */
	while (p && n < 18 && (p = strchr(p + 1, ' ')))
		if (++n == 18)
			v = strtol(p + 1, NULL, 10);
	return v;
}

/*
 * Whether we are the only thread: unshare(CLONE_VM) succeeds, changing
 * nothing, exactly when no other thread (or vfork parent) shares our
 * memory.  Where it is filtered, field 20 of /proc/self/stat counts them.
 * No kernel counts 0 threads there: 0 is qemu-user's emulated stat, whose
 * own helper threads make unshare fail; the guest's threads cannot be
 * counted then, and the caller's word that it runs alone is taken.
 */
bool xip_exec_single_threaded(void)
{
	bool others;
	long n;

	if (syscall(SYS_unshare, CLONE_VM) == 0)
		return true;
	others = errno == EINVAL;
	n = stat_threads();
	return n == 0 || (n == 1 && !others);
}

void xip_exec_set_mm(const struct xip_exec *ex, const struct xip_stack_out *st,
		   uint64_t start_brk, uint64_t brk)
{
	const struct exec_file *p = &ex->prog;
	struct prctl_mm_map m = {
		.start_code = p->bias + p->plan.start_code,
		.end_code = p->bias + p->plan.end_code,
		.start_data = p->bias + p->plan.start_data,
		.end_data = p->bias + p->plan.end_data,
		.start_brk = start_brk,
		.brk = brk,
		.start_stack = st->sp,
		.arg_start = st->arg_start,
		.arg_end = st->arg_end,
		.env_start = st->env_start,
		.env_end = st->env_end,
		.auxv = (void *)(uintptr_t)st->auxv,
		.auxv_size = (__u32)st->auxv_bytes,
		.exe_fd = (__u32)-1,
	};

	if (m.end_data < m.start_data)
		m.end_data = m.start_data;
	if (!prctl(PR_SET_MM, PR_SET_MM_MAP, &m, sizeof(m), 0))
		return;
	m.auxv = NULL;
	m.auxv_size = 0;
	if (!prctl(PR_SET_MM, PR_SET_MM_MAP, &m, sizeof(m), 0))
		return;
	/* older interface; the order keeps arg_start <= arg_end */
	if (prctl(PR_SET_MM, PR_SET_MM_ARG_START, st->arg_start, 0, 0))
		prctl(PR_SET_MM, PR_SET_MM_ARG_END, st->arg_end, 0, 0);
	prctl(PR_SET_MM, PR_SET_MM_ARG_START, st->arg_start, 0, 0);
	prctl(PR_SET_MM, PR_SET_MM_ARG_END, st->arg_end, 0, 0);
}

void xip_exec_set_stack_prot(const struct xip_exec *ex, uint64_t sp)
{
	int prot = PROT_READ | PROT_WRITE |
		   (ex->prog.elf.exec_stack ? PROT_EXEC : 0);

	/* a fresh xiptool's own stack is already read+write, not exec */
	if (ex->fresh && !ex->prog.elf.exec_stack)
		return;

	/* PROT_GROWSDOWN extends the change to the whole [stack] */
	mprotect((void *)(uintptr_t)(sp & ~(ex->page - 1)), ex->page,
		 prot | PROT_GROWSDOWN);
}

/*
 * Is the break randomized (PF_RANDOMIZE and randomize_va_space 2), and
 * with what random bits?  A fresh front end that never moved its break
 * (its heap is an arena of its own) still has the kernel's start of it:
 * ELF_ET_DYN_BASE exactly when there is no randomization, else that plus
 * a random offset below 1 GiB, which nobody has used.  Anybody else asks
 * the kernel.
 */
#if defined(__x86_64__)
#define ET_DYN_BASE	(0x7ffffffff000ULL / 3 * 2)	/* DEFAULT_MAP_WINDOW */
#elif defined(__aarch64__)
#define ET_DYN_BASE	(2 * (1ULL << 48) / 3)		/* DEFAULT_MAP_WINDOW_64 */
#endif
#ifndef ADDR_NO_RANDOMIZE
#define ADDR_NO_RANDOMIZE 0x0040000
#endif

static bool brk_randomized(const struct xip_exec *ex, uint64_t cur,
			   uint64_t *rnd)
{
	char level = '2';
	int fd;

#ifdef ET_DYN_BASE
	if (ex->fresh && ex->own_memory_only && ex->own_memory_only()) {
		*rnd = cur;
		return cur != ((ET_DYN_BASE + ex->page - 1) & ~(ex->page - 1));
	}
#endif
	if (syscall(SYS_personality, 0xffffffffUL) & ADDR_NO_RANDOMIZE)
		return false;
	fd = open("/proc/sys/kernel/randomize_va_space", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, &level, 1) != 1)
			level = '2';
		close(fd);
	}
	if (level < '2')
		return false;
	if (getrandom(rnd, sizeof(*rnd), GRND_NONBLOCK) != sizeof(*rnd))
		*rnd = cur;
	return true;
}

/*
 * Where execve(2) would start the program's heap (binfmt_elf), given
 * @cur, our own break.  A fixed-address program (ET_EXEC) gets it past
 * the end of its bss: right there without randomization, else a page
 * further on plus a random offset below 1 GiB (arch_randomize_brk).
 * Position-independent programs, which we map among the other mappings
 * (mmap's region), keep ours: the area the kernel keeps for them and
 * their heap.
 */
#define BRK_RANDOM_RANGE	(1ULL << 30)

uint64_t xip_exec_program_brk(const struct xip_exec *ex, uint64_t cur)
{
	const struct exec_file *p = &ex->prog;
	uint64_t mask = ex->page - 1, end = (p->bias + p->plan.hi + mask) & ~mask;
	uint64_t rnd = 0;

	if (p->elf.type != ET_EXEC)
		return cur;
	if (!brk_randomized(ex, cur, &rnd))
		return end;
	return end + ex->page + ((rnd & (BRK_RANDOM_RANGE - 1)) & ~mask);
}

