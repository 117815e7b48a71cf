// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Test hooks: crash points of the engine's writers, pauses of mkfs and
 * of attach.
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
#include "engine/engine_int.h"

#ifdef XIP_TEST_HOOKS

#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

bool xip_build_hook_named_temp(void)
{
	const char *v = secure_getenv("XIPTOOL_TEST_MKFS_NAMED_TEMP");

	return xip_build_test_hooks.named_temp || (v && !strcmp(v, "1"));
}

#else /* !XIP_TEST_HOOKS */

void xip_engine_step(void)
{
}

void xip_build_hook_after_scan(void)
{
}

void xip_attach_hook_before_claim(void)
{
}

bool xip_build_hook_named_temp(void)
{
	return false;
}

#endif
