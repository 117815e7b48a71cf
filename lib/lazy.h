/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Libraries loaded at first use (lazy.c). */
#ifndef XIP_LAZY_H
#define XIP_LAZY_H

enum xip_lazy_which {
	XIP_LAZY_ARCHIVE,	/* libarchive: mkfs --tar, extract */
	XIP_LAZY_NBD,		/* libnbd: attach nbd:// */
};

/*
 * Load @which (once): 0, or -ENOSYS with an error naming the shared
 * object and why it could not be loaded.  Call it before the first
 * function of that library.
 */
int xip_lazy_load(enum xip_lazy_which which);

#endif
