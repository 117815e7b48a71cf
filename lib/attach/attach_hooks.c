// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Attach's test hooks (attach_int.h): a command before the claim and
 * after the seal, a pause halfway through the fill, a crash point before
 * the check of a verified segment.  They act in the test build only
 * (util/xip_hooks.h); in libxip.a they do nothing.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "attach/attach_int.h"
#include "util/xip_hooks.h"

void xip_attach_hook_step(void)
{
	xip_hook_step();
}

#ifdef XIP_TEST_HOOKS

void xip_attach_hook_before_claim(void)
{
	xip_hook_command("XIPTOOL_TEST_ATTACH_BEFORE_CLAIM");
}

void xip_attach_hook_after_seal(void)
{
	xip_hook_command("XIPTOOL_TEST_ATTACH_AFTER_SEAL");
}

void xip_attach_hook_fill(uint64_t done, uint64_t total)
{
	static atomic_bool paused;

	/* once, by the first thread past half of the fill */
	if (done * 2 < total || atomic_exchange(&paused, true))
		return;
	xip_hook_pause("XIPTOOL_TEST_ATTACH_PAUSE");
}

#else /* !XIP_TEST_HOOKS: no environment read, no name of one */

void xip_attach_hook_before_claim(void)
{
}

void xip_attach_hook_after_seal(void)
{
}

void xip_attach_hook_fill(uint64_t done, uint64_t total)
{
}

#endif
