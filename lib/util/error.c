// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The error record: a negative errno plus a message with the context of
 * the failure, kept per thread.  Also a few small parsing helpers.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifndef XIP_LIBC_ONLY
#include <et/com_err.h>
#endif

#include "util/xip_debug.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"

static XIP_TLS char err_msg[XIP_ERRMSG_MAX];
static XIP_TLS int err_code;
static XIP_TLS enum xip_errobj err_obj;
static XIP_TLS char err_name[XIP_ERRMSG_MAX];
static XIP_TLS enum xip_reason err_reason;

const char *xip_errmsg(void)
{
	return err_msg;
}

int xip_errcode(void)
{
	return err_code;
}

enum xip_errobj xip_errobj(void)
{
	return err_obj;
}

const char *xip_errobj_name(void)
{
	return err_name;
}

enum xip_reason xip_errreason(void)
{
	return err_reason;
}

void xip_error_clear(void)
{
	err_msg[0] = '\0';
	err_code = 0;
	err_obj = XIP_OBJ_NONE;
	err_name[0] = '\0';
	err_reason = XIP_R_NONE;
}

int xip_verror(int err, const char *fmt, va_list ap)
{
	char msg[XIP_ERRMSG_MAX];

	/* the last message may be an argument: format apart, then copy */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	memcpy(err_msg, msg, strlen(msg) + 1);
	err_code = err;
	err_obj = XIP_OBJ_NONE;
	err_name[0] = '\0';
	err_reason = XIP_R_NONE;	/* a new record: no reason yet */
	return err;
}

int xip_error_set_reason(enum xip_reason reason)
{
	err_reason = reason;
	return err_code;
}

int xip_error_reason(int err, enum xip_reason reason, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	xip_verror(err, fmt, ap);
	va_end(ap);
	err_reason = reason;
	return err;
}

int xip_error_set_obj(enum xip_errobj obj, const char *name)
{
	err_obj = name ? obj : XIP_OBJ_NONE;
	snprintf(err_name, sizeof(err_name), "%s", name ? name : "");
	return err_code;
}

int xip_error_obj(int err, enum xip_errobj obj, const char *name,
		  const char *fmt, ...)
{
	char text[XIP_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	xip_error(err, "%s: %s", name ? name : "", text);
	xip_error_set_obj(obj, name);
	return err;
}

int xip_error(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	xip_verror(err, fmt, ap);
	va_end(ap);
	return err;
}

#ifndef XIP_LIBC_ONLY
int xip_errno_from_ext2(errcode_t code)
{
	if (code > 0 && code < 4096)
		return (int)-code;
	switch (code) {
	case EXT2_ET_NO_MEMORY:
		return -ENOMEM;
	case EXT2_ET_RO_FILSYS:
		return -EROFS;
	case EXT2_ET_BLOCK_ALLOC_FAIL:
	case EXT2_ET_INODE_ALLOC_FAIL:
	case EXT2_ET_DIR_NO_SPACE:
	case EXT2_ET_TOOSMALL:
		return -ENOSPC;
	case EXT2_ET_FILE_NOT_FOUND:
		return -ENOENT;
	case EXT2_ET_FILE_TOO_BIG:
		return -EFBIG;
	case EXT2_ET_NO_DIRECTORY:
		return -ENOTDIR;
	case EXT2_ET_DIR_EXISTS:
		return -EEXIST;
	case EXT2_ET_SHORT_READ:
	case EXT2_ET_SHORT_WRITE:
		return -EIO;
	case EXT2_ET_UNSUPP_FEATURE:
	case EXT2_ET_RO_UNSUPP_FEATURE:
	case EXT2_ET_UNIMPLEMENTED:
		return -EOPNOTSUPP;
	default:
		return -EUCLEAN;
	}
}

int xip_error_ext2(errcode_t code, const char *fmt, ...)
{
	char ctx[XIP_ERRMSG_MAX];
	const char *what = error_message(code);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ctx, sizeof(ctx), fmt, ap);
	va_end(ap);
	/* libext2fs messages start with a capital; ours are lower case */
	return xip_error(xip_errno_from_ext2(code), "%s%s%c%s", ctx,
			 ctx[0] ? ": " : "", what ? tolower((unsigned char)what[0]) : '?',
			 what && what[0] ? what + 1 : "");
}

#endif

static int bad_size(const char *text)
{
	return xip_error(-EINVAL, "invalid size '%s' (expected a decimal number"
			 " with an optional K, M, G or T suffix)", text);
}

int xip_parse_size(const char *text, uint64_t *bytes)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (text && *text == '-')
		return xip_error(-EINVAL, "invalid size '%s': negative", text);
	if (!text || !*text || !isdigit((unsigned char)*text))
		return bad_size(text ? text : "");
	/* base 10: a leading zero is not octal, "0x" not hex */
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno)
		return xip_error(-ERANGE, "size '%s' is too large", text);
	switch (toupper((unsigned char)*end)) {
	case '\0':
		break;
	case 'K':
		shift = 10;
		break;
	case 'M':
		shift = 20;
		break;
	case 'G':
		shift = 30;
		break;
	case 'T':
		shift = 40;
		break;
	default:
		return bad_size(text);
	}
	if (*end) {
		end++;
		/* accept K, KB, KiB and the like */
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'B' || *end == 'b')
			end++;
		if (*end)
			return bad_size(text);
	}
	if (shift && v > (UINT64_MAX >> shift))
		return xip_error(-ERANGE, "size '%s' is too large", text);
	*bytes = (uint64_t)v << shift;
	return 0;
}

long xip_host_page_size(void)
{
	static long page;

	if (!page)
		page = sysconf(_SC_PAGESIZE);
	return page;
}

/* Signatures of the formats an image is mistaken for (blkid's names). */
static const struct fs_magic {
	const char *name;
	size_t off, len;
	const char *magic;
} fs_magics[] = {
	{ "erofs", 1024, 4, "\xe2\xe1\xf5\xe0" },
	{ "squashfs", 0, 4, "hsqs" },
	{ "squashfs", 0, 4, "sqsh" },
	{ "cramfs", 0, 4, "\x45\x3d\xcd\x28" },
	{ "romfs", 0, 8, "-rom1fs-" },
	{ "xfs", 0, 4, "XFSB" },
	{ "f2fs", 1024, 4, "\x10\x20\xf5\xf2" },
	{ "iso9660", 32769, 5, "CD001" },
	{ "btrfs", 65600, 8, "_BHRfS_M" },
	{ "ntfs", 3, 8, "NTFS    " },
	{ "gpt partition table", 512, 8, "EFI PART" },
	{ "gzip data", 0, 2, "\x1f\x8b" },
	{ "zstd data", 0, 4, "\x28\xb5\x2f\xfd" },
	{ "xz data", 0, 6, "\xfd" "7zXZ\0" },
	{ "tar archive", 257, 5, "ustar" },
	{ "qcow2 image", 0, 4, "QFI\xfb" },
	{ "ELF file", 0, 4, "\x7f" "ELF" },
};

const char *xip_fs_signature(const unsigned char *head, size_t len)
{
	for (size_t i = 0; i < sizeof(fs_magics) / sizeof(fs_magics[0]); i++) {
		const struct fs_magic *m = &fs_magics[i];

		if (m->off <= len && m->len <= len - m->off &&
		    !memcmp(head + m->off, m->magic, m->len))
			return m->name;
	}
	return NULL;
}

int xip_error_not_ext2(int err, const char *what, const char *type)
{
	if (type)
		return xip_error_reason(err, XIP_R_NOT_EXT2,
					"%s: holds %s, not an ext2 file system",
					what, type);
	return xip_error_reason(err, XIP_R_NOT_EXT2,
				"%s: not an ext2 file system (no ext2 superblock)",
				what);
}
