// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Test hooks: crash points of the engine's writers, pauses of mkfs, of
 * attach (before the claim, halfway through the fill, after the seal of a
 * verified segment) and of verify --against (at a source directory or
 * file).
 *
 * libxip.a (and with it xiptool, xiptool-main and the nbdkit plugin) gets
 * this file compiled without XIP_TEST_HOOKS: the hooks are empty functions
 * and nothing here reads the environment.  The test build compiles it
 * again with -DXIP_TEST_HOOKS (mk/hooks.mk) and links that object ahead
 * of libxip.a into the test programs (tests/hooks/xiptool-main, the unit
 * tests that use the hooks), whose hooks then do what engine_int.h and build_int.h
 * describe.  An environment variable alone can never make an installed
 * program kill itself or run a shell command: secure_getenv() does not
 * stop a root process started with another user's environment.
 */
#include <stdbool.h>

#include "attach/attach_int.h"
#include "build/build_int.h"
#include "check/check_int.h"
#include "engine/engine_int.h"

#ifdef XIP_TEST_HOOKS

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct xip_build_hooks xip_build_test_hooks;

void xip_engine_step(void)
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
static void hook_command(const char *var)
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
 * Create the file named by the environment variable VAR, if set, and wait
 * there until a stop signal sets the interrupt flag, or 60 s.
 */
static void hook_pause(const char *var)
{
	const char *path = secure_getenv(var);
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	int fd;

	if (!path || !*path)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < 6000 && !xip_interrupted(); i++)
		nanosleep(&tick, NULL);
}

/*
 * Create the file named by the environment variable VAR, if set, and wait
 * there until it is removed, or 60 s.
 */
static void hook_pause_until_removed(const char *var)
{
	const char *path = secure_getenv(var);
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	int fd;

	if (!path || !*path)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0)
		return;
	close(fd);
	for (int i = 0; i < 6000 && access(path, F_OK) == 0; i++)
		nanosleep(&tick, NULL);
}

void xip_check_hook_pause(const char *src)
{
	const char *at = secure_getenv("XIPTOOL_TEST_VERIFY_PAUSE_AT");

	if (at && !strcmp(at, src))
		hook_pause_until_removed("XIPTOOL_TEST_VERIFY_PAUSE");
}

void xip_build_hook_after_scan(void)
{
	if (xip_build_test_hooks.after_scan) {
		xip_build_test_hooks.after_scan(
			xip_build_test_hooks.after_scan_arg);
		return;
	}
	hook_command("XIPTOOL_TEST_MKFS_AFTER_SCAN");
}

void xip_attach_hook_before_claim(void)
{
	hook_command("XIPTOOL_TEST_ATTACH_BEFORE_CLAIM");
}

void xip_attach_hook_after_seal(void)
{
	hook_command("XIPTOOL_TEST_ATTACH_AFTER_SEAL");
}

void xip_attach_hook_fill(uint64_t done, uint64_t total)
{
	static atomic_bool paused;

	/* once, by the first thread past half of the fill */
	if (done * 2 < total || atomic_exchange(&paused, true))
		return;
	hook_pause("XIPTOOL_TEST_ATTACH_PAUSE");
}

bool xip_build_hook_named_temp(void)
{
	const char *v = secure_getenv("XIPTOOL_TEST_MKFS_NAMED_TEMP");

	return xip_build_test_hooks.named_temp || (v && !strcmp(v, "1"));
}

#else /* !XIP_TEST_HOOKS */

void xip_check_hook_pause(const char *src)
{
}

void xip_engine_step(void)
{
}

void xip_build_hook_after_scan(void)
{
}

void xip_attach_hook_before_claim(void)
{
}

void xip_attach_hook_after_seal(void)
{
}

void xip_attach_hook_fill(uint64_t done, uint64_t total)
{
}

bool xip_build_hook_named_temp(void)
{
	return false;
}

#endif
