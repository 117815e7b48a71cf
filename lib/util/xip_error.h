/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libxip's error record (util/error.c): every library function returns 0
 * (or a count) or a negative errno, and leaves the reason here.
 * Part of the public API: include "xip.h", which includes this header.
 */
#ifndef XIP_ERROR_H
#define XIP_ERROR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/xip_ext2.h"

/* ------------------------------------------------------------------ */
/* Error record (error.c)                                             */
/* ------------------------------------------------------------------ */

#define XIP_ERRMSG_MAX 512

/* The message of the last failure in this thread ("" when none). */
const char *xip_errmsg(void);
/* The negative errno of the last failure in this thread (0 when none). */
int xip_errcode(void);
/* Record a failure and return @err (a negative errno) for tail calls. */
int xip_error(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int xip_verror(int err, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Record a libext2fs failure: the message keeps libext2fs' own text. */
int xip_error_ext2(errcode_t code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Map a libext2fs error code to a negative errno. */
int xip_errno_from_ext2(errcode_t code);
void xip_error_clear(void);

/*
 * The file system or format whose signature the first @len bytes of an
 * image carry (blkid's names: "erofs", "squashfs", ...), or NULL.
 */
const char *xip_fs_signature(const unsigned char *head, size_t len);
/* How many bytes of the image's start xip_fs_signature() looks at. */
#define XIP_FS_SIGNATURE_BYTES 65608
/*
 * The one message for an image that holds no ext2 file system, from
 * whichever command found it: "@what: holds TYPE, not an ext2 file
 * system" (@type NULL: "not an ext2 file system (no ext2 superblock)").
 */
int xip_error_not_ext2(int err, const char *what, const char *type);

/*
 * What a failure is about, kept in the record beside the message, so
 * that callers can tell whom to blame without reading the text.  Every
 * xip_error*() call starts a record without an object; xip_error_obj()
 * and xip_error_set_obj() give it one.
 */
enum xip_errobj {
	XIP_OBJ_NONE = 0,	/* not said (the image, a file's data) */
	XIP_OBJ_IMAGE,		/* the image (its segment), by its path */
	XIP_OBJ_FILE,		/* a file in the image, by its path */
	XIP_OBJ_FD,		/* the caller's input or output, by name */
};
/*
 * Record a failure of @obj, named @name: the message is "@name: " and
 * then @fmt.
 */
int xip_error_obj(int err, enum xip_errobj obj, const char *name,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Give the record just made its object; returns its code. */
int xip_error_set_obj(enum xip_errobj obj, const char *name);
/* The object of this thread's last failure and its name ("" when none). */
enum xip_errobj xip_errobj(void);
const char *xip_errobj_name(void);

/*
 * Why a request failed, when a caller can do something about it: kept in
 * the record beside the message, so that a caller words its own remedy
 * (the commands name their options) without reading the text.  Every
 * xip_error*() call starts a record with XIP_R_NONE; xip_error_reason()
 * and xip_error_set_reason() give it one.
 */
enum xip_reason {
	XIP_R_NONE = 0,		/* nothing more to say */
	XIP_R_NOT_EXT2,		/* the image holds no ext2 file system */
	XIP_R_SEG_READONLY,	/* a write to a segment of a read-only type */
	XIP_R_NAME_TAKEN,	/* a segment of that name is attached */
	XIP_R_NAME_NEEDED,	/* no segment name given, none derived */
	XIP_R_BUSY,		/* in use (mounted, held) and not forced */
	XIP_R_NO_HUGETLBFS,	/* huge pages asked for, no hugetlbfs */
	XIP_R_EXCLUSIVE_OPTS,	/* the request asks for incompatible things */
};
/* Record a failure for @reason: as xip_error(), then the reason. */
int xip_error_reason(int err, enum xip_reason reason, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Give the record just made its reason; returns its code. */
int xip_error_set_reason(enum xip_reason reason);
/* The reason of this thread's last failure (XIP_R_NONE when none). */
enum xip_reason xip_errreason(void);

#endif /* XIP_ERROR_H */
