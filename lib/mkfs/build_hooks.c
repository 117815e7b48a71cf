// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Test hooks of xip_build() (mkfs_int.h): after the scan, and a named
 * temporary file instead of O_TMPFILE.  The unit tests set
 * xip_build_test_hooks; the bats tests, environment variables.  They act
 * in the test build only (util/xip_hooks.h): libxip.a has no
 * xip_build_test_hooks and hooks that do nothing.
 */
#include <stdbool.h>
#include <string.h>

#include "mkfs/mkfs_int.h"
#include "util/xip_hooks.h"

#ifdef XIP_TEST_HOOKS

struct xip_build_hooks xip_build_test_hooks;

void xip_build_hook_after_scan(void)
{
	if (xip_build_test_hooks.after_scan) {
		xip_build_test_hooks.after_scan(
			xip_build_test_hooks.after_scan_arg);
		return;
	}
	xip_hook_command("XIPTOOL_TEST_MKFS_AFTER_SCAN");
}

bool xip_build_hook_named_temp(void)
{
	const char *v = xip_hook_env("XIPTOOL_TEST_MKFS_NAMED_TEMP");

	return xip_build_test_hooks.named_temp || (v && !strcmp(v, "1"));
}

#else /* !XIP_TEST_HOOKS */

void xip_build_hook_after_scan(void)
{
}

bool xip_build_hook_named_temp(void)
{
	return false;
}

#endif
