// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The xiptool front end.  It runs `xiptool exec` itself, so that a program
 * started from a segment pays for one small (usually static) process start
 * before its own, and hands every other command, unchanged, to the full
 * program, xiptool-main: next to this file (a build tree), else in
 * PKGLIBEXECDIR.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

#define MAIN_NAME "xiptool-main"

/*
 * Started by execve, the front end installs no signal handler and keeps
 * no descriptor of its own but the image's and 0-2 (cmd_std_fds), so the
 * loader need not probe for them (xip_exec_opts.fresh).  The sanitizers'
 * run-time installs handlers, an alternate stack and descriptors.
 */
#if defined(__SANITIZE_ADDRESS__)
#define FRONT_FRESH false
#else
#define FRONT_FRESH true
#endif

/*
 * The musl front end (its own allocator, XIP_FRONT_ALLOC) runs exec on a
 * stack of its own, the last XIP_FRONT_STACK_SIZE bytes of its arena
 * (cmd/front_mem.h, cmd/front_entry.S), so that the process's [stack]
 * keeps only what the kernel put there: the loader builds the program's
 * stack there, where execve(2) builds it (xip_exec_opts.own_stack), and
 * the front end's stack goes with its memory at the jump.
 */
#if defined(XIP_FRONT_ALLOC) && (defined(__x86_64__) || defined(__aarch64__))
#include "front_mem.h"

extern unsigned char xip_front_arena[];
int xip_front_on_stack(int (*fn)(void *), void *arg, void *top);

struct front_call {
	int (*fn)(int, const char **);
	int argc;
	const char **argv;
};

static int front_call(void *p)
{
	const struct front_call *c = p;

	return c->fn(c->argc, c->argv);
}

static int on_own_stack(int (*fn)(int, const char **), int argc,
			const char **argv)
{
	struct front_call c = { fn, argc, argv };

	/* its top at the start of a page: no page for a few bytes of it */
	uintptr_t top = (uintptr_t)(xip_front_arena + XIP_FRONT_ARENA_SIZE) &
			~(uintptr_t)4095;

	cmd_exec_own_stack = true;
	return xip_front_on_stack(front_call, &c, (void *)top);
}
#else
static int on_own_stack(int (*fn)(int, const char **), int argc,
			const char **argv)
{
	return fn(argc, argv);
}
#endif

#ifndef PKGLIBEXECDIR
#define PKGLIBEXECDIR "/usr/libexec/xiptool"
#endif

/* This file's path, from /proc/self/exe; "" when it cannot be read. */
static void self_path(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);

	buf[n > 0 ? n : 0] = '\0';
}

/* Our own directory; "" when it cannot be known. */
static void self_dir(char *dir, size_t size)
{
	char *slash;

	self_path(dir, size);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		dir[0] = '\0';
}

static int run_main(const char **argv)
{
	static const char *const rel[] = { "", "/../libexec/xiptool" };
	char dir[PATH_MAX], path[2 * PATH_MAX];
	int err = ENOENT;

	self_dir(dir, sizeof(dir));
	for (size_t i = 0; dir[0] && i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(path, sizeof(path), "%s%s/%s", dir, rel[i], MAIN_NAME);
		execv(path, (char *const *)argv);
		if (errno != ENOENT)
			err = errno;
	}
	snprintf(path, sizeof(path), "%s/%s", PKGLIBEXECDIR, MAIN_NAME);
	execv(path, (char *const *)argv);
	if (errno != ENOENT)
		err = errno;
	fprintf(stderr, "xiptool: cannot run %s: %s (looked in %s%s%s)\n",
		MAIN_NAME, strerror(err), dir[0] ? dir : "",
		dir[0] ? ", its ../libexec/xiptool and " : "", PKGLIBEXECDIR);
	return EXIT_RUNTIME;
}

/* Does @name (a path, or a command looked up in PATH) lead to this file? */
static bool names_self(const char *name)
{
	char self[PATH_MAX], real[PATH_MAX], cand[2 * PATH_MAX];
	const char *path = getenv("PATH"), *end;

	self_path(self, sizeof(self));
	if (!self[0] || !name || !*name)
		return false;
	if (strchr(name, '/'))
		return realpath(name, real) && !strcmp(real, self);
	for (; path && *path; path = *end ? end + 1 : end) {
		end = strchrnul(path, ':');
		snprintf(cand, sizeof(cand), "%.*s/%s", (int)(end - path),
			 end > path ? path : ".", name);
		if (access(cand, X_OK) == 0)
			return realpath(cand, real) && !strcmp(real, self);
	}
	return false;
}

/*
 * A program started by `xiptool exec` whose /proc/self/exe is this file
 * may run it again under its own names (busybox runs its applets that way,
 * argv[0] "ls", "cat"...).  Those arguments are not ours to read: they are
 * an xiptool command only when we are called by a name that begins with
 * "xiptool" or that leads to this file (a link of another name, given as
 * a path or found in PATH); otherwise the program's marker says what to
 * run again (cmd_exec_again).
 */
static bool called_as_xiptool(const char *argv0)
{
	const char *base = argv0 ? strrchr(argv0, '/') : NULL;

	base = base ? base + 1 : argv0;
	return base && (!strncmp(base, "xiptool", 7) || names_self(argv0));
}

static const char *again_marker;

static int exec_again(int argc, const char **argv)
{
	(void)argc;
	return cmd_exec_again(again_marker, argv);
}

int main(int argc, const char **argv)
{
	int i = 1;

	/* closed again by exec's hand-over, as they are close-on-exec */
	cmd_exec_std_opened = cmd_std_fds();
	if (!called_as_xiptool(argv[0])) {
		const char *marker = secure_getenv(XIP_EXEC_MARKER);

		if (marker) {
			cmd_name = "exec";
			atexit(cmd_close_stdout);
			cmd_exec_fresh = FRONT_FRESH;
			again_marker = marker;
			return on_own_stack(exec_again, argc, argv);
		}
		fprintf(stderr, "xiptool: started as '%s', not as xiptool, and"
			" without " XIP_EXEC_MARKER " in the environment:"
			" refusing to read its arguments as an xiptool"
			" command\n", cmd_esc(argv[0] ? argv[0] : ""));
		return EXIT_CANNOT_EXEC;
	}

	/* only the plain forms; anything else is the full program's job */
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose"))
			opt_verbose = 1;
		else if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet"))
			opt_quiet = 1;
		else
			break;
	}
	if (i < argc && !strcmp(argv[i], "exec")) {
		if (opt_quiet)
			opt_verbose = 0;
		cmd_name = "exec";
		atexit(cmd_close_stdout);
		cmd_exec_fresh = FRONT_FRESH;
		return on_own_stack(cmd_exec, argc - i, &argv[i]);
	}
	return run_main(argv);
}
