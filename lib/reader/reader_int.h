/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What only the reader's own files (fsread.c, fsmap.c, fsdir.c,
 * fsimage.c) share: on-disk constants and little-endian loads.  The
 * rooms above use xip_image.h.
 */
#ifndef XIP_READER_INT_H
#define XIP_READER_INT_H

#include <endian.h>
#include <string.h>

#include "reader/xip_image.h"
#include "util/xip_ext2.h"

#define SB_OFFSET 1024
#define XIP_MAXSYMLINKS 40

/*
 * The incompatible features this reader reads (<ext2fs/ext2_fs.h>'s
 * names): compression, journal devices and dirdata not.
 */
#define INCOMPAT_READ	(EXT2_FEATURE_INCOMPAT_FILETYPE | \
			 EXT3_FEATURE_INCOMPAT_RECOVER | \
			 EXT2_FEATURE_INCOMPAT_META_BG | \
			 EXT3_FEATURE_INCOMPAT_EXTENTS | \
			 EXT4_FEATURE_INCOMPAT_64BIT | \
			 EXT4_FEATURE_INCOMPAT_MMP | \
			 EXT4_FEATURE_INCOMPAT_FLEX_BG | \
			 EXT4_FEATURE_INCOMPAT_EA_INODE | \
			 EXT4_FEATURE_INCOMPAT_CSUM_SEED | \
			 EXT4_FEATURE_INCOMPAT_LARGEDIR | \
			 EXT4_FEATURE_INCOMPAT_INLINE_DATA | \
			 EXT4_FEATURE_INCOMPAT_ENCRYPT | \
			 EXT4_FEATURE_INCOMPAT_CASEFOLD)
/* the extent tree (ext3_extents.h, which the libc-only build lacks) */
#define EXT_HDR_MAGIC		0xF30A
#define EXT_DEPTH_MAX		5
#define EXT_LEN_INIT_MAX	32768U

static inline uint16_t le16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static inline uint32_t le32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

#endif /* XIP_READER_INT_H */
