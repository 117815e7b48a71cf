// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Verify's test hook (check_int.h): a pause at one source path of verify
 * --against, until the test removes the file it made.  In the test build
 * only (util/xip_hooks.h); in libxip.a it does nothing.
 */
#include <string.h>

#include "check/check_int.h"
#include "util/xip_hooks.h"

#ifdef XIP_TEST_HOOKS

void xip_check_hook_pause(const char *src)
{
	const char *at = xip_hook_env("XIPTOOL_TEST_VERIFY_PAUSE_AT");

	if (at && !strcmp(at, src))
		xip_hook_pause_until_removed("XIPTOOL_TEST_VERIFY_PAUSE");
}

#else /* !XIP_TEST_HOOKS: no environment read, no name of one */

void xip_check_hook_pause(const char *src)
{
}

#endif
