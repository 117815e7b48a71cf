/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the rooms' test hooks share (testhooks.c).  Each room has its hook
 * points in a file of its own (engine_hooks.c, attach_hooks.c, ...); in
 * the test build only (XIP_TEST_HOOKS) these read the environment, in
 * libxip.a they do nothing.  Not in the umbrella lib/xip.h: programs have
 * no business with them.
 */
#ifndef XIP_HOOKS_H
#define XIP_HOOKS_H

/* secure_getenv(@var) in the test build; NULL elsewhere. */
const char *xip_hook_env(const char *var);
/*
 * An ordering step of a writer: with XIPTOOL_TEST_CRASH_AFTER=N, the
 * process kills itself (SIGKILL) at its N-th step, counted from 1 over
 * every room's steps.
 */
void xip_hook_step(void);
/* Run the shell command in the environment variable @var, if set. */
void xip_hook_command(const char *var);
/*
 * Create the file named by @var, if set, and wait there until a stop
 * signal sets the interrupt flag, or 60 s.
 */
void xip_hook_pause(const char *var);
/* Same, waiting until the file is removed, or 60 s. */
void xip_hook_pause_until_removed(const char *var);

#endif /* XIP_HOOKS_H */
