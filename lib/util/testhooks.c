// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the rooms' test hooks share (util/xip_hooks.h): run a command,
 * pause, count writer steps, each driven by an environment variable.
 *
 * libxip.a (and with it xiptool, xiptool-main and the nbdkit plugin) gets
 * this file and every room's hook file (engine/engine_hooks.c,
 * attach/attach_hooks.c, build/build_hooks.c, check/check_hooks.c)
 * compiled without XIP_TEST_HOOKS: the hooks are empty functions and
 * nothing here reads the environment.  The test build compiles them again
 * with -DXIP_TEST_HOOKS (mk/hooks.mk) and links those objects ahead of
 * libxip.a into the test programs (tests/hooks/xiptool-main, the unit
 * tests that use the hooks).  An environment variable alone can never
 * make an installed program kill itself or run a shell command:
 * secure_getenv() does not stop a root process started with another
 * user's environment.
 */
#include <stdbool.h>
#include <stddef.h>

#include "util/xip_hooks.h"
#include "util/xip_util.h"

#ifdef XIP_TEST_HOOKS

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


const char *xip_hook_env(const char *var)
{
	return secure_getenv(var);
}

void xip_hook_step(void)
{
	static long left = -1;

	if (left < 0) {
		const char *v = secure_getenv("XIPTOOL_TEST_CRASH_AFTER");

		left = v && *v ? strtol(v, NULL, 10) : 0;
		if (left <= 0)
			left = 0;
	}
	if (left && !--left)
		raise(SIGKILL);
}

/* Run the shell command in the environment variable VAR, if set. */
void xip_hook_command(const char *var)
{
	const char *cmd = secure_getenv(var);
	char sh[] = "sh", c[] = "-c";
	int status;
	pid_t pid;

	if (!cmd || !*cmd)
		return;
	{
		char *const argv[] = { sh, c, (char *)cmd, NULL };

		if (!posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ))
			waitpid(pid, &status, 0);
	}
}

/*
 * Create the file named by the environment variable @var, if set: its
 * path (NULL when unset), *@made whether this call created it.
 */
static const char *hook_file(const char *var, bool *made)
{
	const char *path = secure_getenv(var);
	int fd;

	*made = false;
	if (!path || !*path)
		return NULL;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd >= 0) {
		close(fd);
		*made = true;
	}
	return path;
}

/* Wait until a stop signal sets the interrupt flag (or @path is gone
 * when @until_removed), or 60 s. */
static void hook_wait(const char *path, bool until_removed)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };

	for (int i = 0; i < 6000; i++) {
		if (until_removed ? access(path, F_OK) != 0 : xip_interrupted())
			return;
		nanosleep(&tick, NULL);
	}
}

/*
 * Create the file named by the environment variable VAR, if set, and wait
 * there until a stop signal sets the interrupt flag, or 60 s.
 */
void xip_hook_pause(const char *var)
{
	bool made;
	const char *path = hook_file(var, &made);

	if (path)
		hook_wait(path, false);
}

/*
 * Create the file named by the environment variable VAR, if set, and wait
 * there until it is removed, or 60 s.
 */
void xip_hook_pause_until_removed(const char *var)
{
	bool made;
	const char *path = hook_file(var, &made);

	if (path && made)
		hook_wait(path, true);
}

#else /* !XIP_TEST_HOOKS */

const char *xip_hook_env(const char *var)
{
	return NULL;
}

void xip_hook_step(void)
{
}

void xip_hook_command(const char *var)
{
}

void xip_hook_pause(const char *var)
{
}

void xip_hook_pause_until_removed(const char *var)
{
}

#endif
