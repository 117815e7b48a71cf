/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libxip: execute-in-place images and memory segments.
 *
 * The one public header of the library.  Every function returns 0 (or a
 * non-negative count) on success and a negative errno on failure; the
 * detailed reason (which inode, which block) is left in a thread-local
 * error record that xip_errmsg() returns.  The library never prints and
 * never exits.
 */
#ifndef XIP_H
#define XIP_H

#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#ifdef XIP_LIBC_ONLY
/*
 * The libc-only build (the xiptool front end): the on-disk definitions of
 * ext2 without libext2fs, and the few of its names this header uses.
 */
#include <ext2fs/ext2_fs.h>
typedef __u32 ext2_ino_t;
typedef __u64 blk64_t;
typedef long errcode_t;
typedef struct struct_ext2_filsys *ext2_filsys;
#define LINUX_S_IFMT	00170000
#define LINUX_S_IFSOCK	0140000
#define LINUX_S_IFLNK	0120000
#define LINUX_S_IFREG	0100000
#define LINUX_S_IFBLK	0060000
#define LINUX_S_IFDIR	0040000
#define LINUX_S_IFCHR	0020000
#define LINUX_S_IFIFO	0010000
#define LINUX_S_ISUID	0004000
#define LINUX_S_ISGID	0002000
#define LINUX_S_ISLNK(m)	(((m) & LINUX_S_IFMT) == LINUX_S_IFLNK)
#define LINUX_S_ISREG(m)	(((m) & LINUX_S_IFMT) == LINUX_S_IFREG)
#define LINUX_S_ISDIR(m)	(((m) & LINUX_S_IFMT) == LINUX_S_IFDIR)
#define LINUX_S_ISCHR(m)	(((m) & LINUX_S_IFMT) == LINUX_S_IFCHR)
#define LINUX_S_ISBLK(m)	(((m) & LINUX_S_IFMT) == LINUX_S_IFBLK)
#define EXT2_I_SIZE(i)	((i)->i_size | ((__u64)(i)->i_size_high << 32))
#else
#include <ext2fs/ext2fs.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#include "util/xip_util.h"
#include "util/xip_error.h"
#include "oci/xip_oci.h"
#include "segment/xip_segment.h"
#include "verity/xip_verity.h"
#include "registry/xip_registry.h"
#include "reader/xip_reader.h"
#include "engine/xip_engine.h"
#include "exec/xip_exec.h"
#include "attach/xip_attach.h"
#include "build/xip_build.h"
#include "check/xip_check.h"
#include "ps/xip_ps.h"

#ifdef __cplusplus
}
#endif

#endif /* XIP_H */
