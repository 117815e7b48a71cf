// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The engine's test hook: an ordering step of a writer (engine_int.h),
 * where the test build can kill it (util/xip_hooks.h); nothing in libxip.a.
 */
#include "engine/engine_int.h"
#include "util/xip_hooks.h"

void xip_engine_step(void)
{
	xip_hook_step();
}
