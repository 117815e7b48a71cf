/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Kernel loop devices (loop.c), for attach --loop, detach and the checks
 * of the rooms above whether a device still serves a segment.
 */
#ifndef XIP_LOOP_H
#define XIP_LOOP_H

#include <stddef.h>
#include <stdint.h>

#define XIP_LOOP_RDONLY	0x01

/*
 * Bind a free loop device to @path (LOOP_CTL_GET_FREE, LOOP_CONFIGURE,
 * falling back to LOOP_SET_FD + LOOP_SET_STATUS64), retrying when another
 * process takes the device first.  The device name goes into @dev.
 */
int xip_loop_attach(const char *path, uint64_t offset, uint64_t sizelimit,
		    int flags, char *dev, size_t len);
/* Unbind (LOOP_CLR_FD); a device still open is cleared on last close. */
int xip_loop_detach(const char *dev);
/* The backing file of a bound loop device (-ENXIO when unbound). */
int xip_loop_backing_file(const char *dev, char *buf, size_t len);
/* Is the device mounted or claimed?  1 with the reason, 0, or < 0. */
int xip_loop_busy(const char *dev, char *why, size_t len);
/* Is the loop device read-only?  1, 0 or < 0. */
int xip_loop_read_only(const char *dev);
/*
 * Add the claim @fd to the claims *@fdsp (*@np of them), as
 * xip_loop_claim_backing() does: 0, or -ENOMEM with @fd closed.
 */
int xip_loop_claim_add(int **fdsp, size_t *np, int fd);

#endif /* XIP_LOOP_H */
