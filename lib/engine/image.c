// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Images: an ext2 file system on a segment.  The reader (fsread.c) opens
 * it first and checks the superblock and the group descriptors against
 * the segment; libext2fs is then opened on top, through the segment
 * io_manager, for what writes, and closed by xip_image_close().
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <blkid.h>

#include "engine/xip_engine.h"
#include "engine/engine_int.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"
#include "segment/xip_loop.h"
#include "segment/xip_segment.h"
#include "registry/xip_registry.h"
#include "reader/xip_image.h"
#include "reader/xip_reader.h"

#define LOCK_TIMEOUT_MS 5000

static int open_fs(struct xip_image *img, int flags)
{
	int eflags = EXT2_FLAG_64BITS | EXT2_FLAG_IGNORE_CSUM_ERRORS;
	errcode_t err;

	if (flags & XIP_IMG_WRITE)
		eflags |= EXT2_FLAG_RW;
	/* writers: every metadata write is one pwrite (see xipio.c) */
	err = ext2fs_open2(img->chan_name,
			   (flags & XIP_IMG_WRITE) ? "atomic" : NULL, eflags, 0,
			   0, xip_io_manager, &img->fs);
	if (err) {
		img->fs = NULL;
		return xip_error_ext2(err, "%s", img->seg->path);
	}
	img->fs->priv_data = img;
	if (!(flags & XIP_IMG_FORCE)) {
		err = ext2fs_check_desc(img->fs);
		if (err)
			return xip_error_ext2(err, "%s: group descriptors",
					      img->seg->path);
	}
	img->block_size = img->fs->blocksize;
	return 0;
}

/* ---- writers: who else may be writing, and ext2's clean flag ----------- */

/*
 * The kernel is a writer too: refuse while it has the image mounted
 * through a loop device (or, for a block device, at all), and hold those
 * devices exclusively until the image is closed so that no mount starts
 * meanwhile.
 */
static int claim_devices(struct xip_image *img)
{
	struct xip_seg *seg = img->seg;
	char self[64];
	int fd, ret;

	ret = xip_loop_claim_backing(seg->fd, seg->path, &img->claims,
				     &img->nclaims);
	if (ret || seg->kind != XIP_SEG_BLOCKDEV)
		return ret;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", seg->fd);
	fd = open(self, O_RDONLY | O_EXCL | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == EBUSY)
		return xip_error(-EBUSY,
				 "%s: in use by the kernel (mounted or claimed)",
				 seg->path);
	if (fd < 0)
		return xip_error(-errno, "%s: %s", seg->path, strerror(errno));
	/* the claims so far stay (released at the close) */
	return xip_loop_claim_add(&img->claims, &img->nclaims, fd);
}

/* Write only the primary superblock's s_state (and its checksum), synced. */
static int write_state(struct xip_image *img, uint16_t state)
{
	ext2_filsys fs = img->fs;
	errcode_t err;

	fs->super->s_state = state;
	fs->flags |= EXT2_FLAG_SUPER_ONLY | EXT2_FLAG_DIRTY;
	err = ext2fs_flush2(fs, EXT2_FLAG_FLUSH_NO_SYNC);
	fs->flags &= ~EXT2_FLAG_SUPER_ONLY;
	if (err)
		return xip_error_ext2(err, "%s: writing the superblock",
				      img->seg->path);
	return xip_seg_sync(img->seg);
}

/*
 * As ext2_setup_super() on a read-write mount: refuse an image that is not
 * clean at the open; mark it unclean on disk before its first change
 * (xip_image_begin_change), so that a writer that changes nothing leaves the
 * image as it was, to the byte.
 */
static int writer_check(struct xip_image *img)
{
	uint16_t state = img->fs->super->s_state;
	const char *why = NULL;

	if (ext2fs_has_feature_journal_needs_recovery(img->fs->super))
		why = "its journal needs recovery";
	else if (state & EXT2_ERROR_FS)
		why = "errors were recorded in it";
	else if (!(state & EXT2_VALID_FS))
		why = "a write did not finish, or it is mounted read-write";
	if (why)
		return xip_error(-EUCLEAN,
				 "%s: file system not clean (%s): run e2fsck -fy on it before writing",
				 img->seg->path, why);
	img->clean_state = state;
	return 0;
}

int xip_image_begin_change(struct xip_image *img)
{
	int ret;

	if (!img->writable)
		return xip_error(-EROFS, "%s: opened read-only", img->seg->path);
	if (img->unclean)
		return 0;
	ret = write_state(img, img->clean_state & ~EXT2_VALID_FS);
	if (ret)
		return ret;
	img->unclean = true;
	xip_engine_step();
	return 0;
}

static void close_fs(struct xip_image *img)
{
	int ret = 0;

	if (img->fs) {
		ret = xip_image_flush(img);
		/* everything is on its way to the disk: clean again */
		if (!ret && img->writable && img->unclean) {
			xip_engine_step();
			ret = write_state(img, img->clean_state);
		}
		/* already flushed: close must not write again */
		img->fs->flags &= ~EXT2_FLAG_DIRTY;
		xip_engine_free(img);
		ext2fs_close_free(&img->fs);
	}
	xip_loop_release_claims(img->claims, img->nclaims);
	img->claims = NULL;
	img->nclaims = 0;
	img->close_ret = ret;
}

/*
 * The reader's open (fsread.c: the lock, the superblock and descriptors
 * checked), then libext2fs on top for what writes.
 */
int xip_image_open_segment(struct xip_seg *seg, int flags,
			   struct xip_image **imgp)
{
	struct xip_image *img;
	int ret;

	*imgp = NULL;
	if ((flags & XIP_IMG_WRITE) && !seg->writable) {
		xip_seg_close(seg);
		return xip_error(-EROFS, "%s: opened read-only", seg->path);
	}
	if (flags & XIP_IMG_WRITE) {
		/* writers hold the exclusive lock: take it before the reader */
		ret = 0;
		if (!(flags & XIP_IMG_NOLOCK))
			ret = xip_seg_lock(seg, true, LOCK_TIMEOUT_MS);
		if (ret) {
			xip_seg_close(seg);
			return ret;
		}
		flags |= XIP_IMG_NOLOCK;
	}
	ret = xip_image_open_segment_read(seg, flags & ~XIP_IMG_WRITE, &img);
	if (ret)
		return ret;
	img->writable = flags & XIP_IMG_WRITE;
	img->close_fs = close_fs;
	if (img->writable)
		ret = claim_devices(img);
	if (!ret)
		ret = xip_io_register(seg, img->chan_name,
				      sizeof(img->chan_name));
	if (!ret)
		ret = open_fs(img, flags);
	if (!ret && img->writable)
		ret = writer_check(img);
	if (ret) {
		int saved = xip_errcode();
		char msg[XIP_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", xip_errmsg());
		img->writable = false;	/* nothing to write back */
		xip_image_close(img);
		xip_error(saved ? saved : ret, "%s", msg);
		return ret;
	}
	*imgp = img;
	return 0;
}

int xip_image_open(const char *spec, int flags, struct xip_image **imgp)
{
	struct xip_seg *seg;
	int ret;

	*imgp = NULL;
	ret = xip_spec_open(spec,
			       (flags & XIP_IMG_WRITE) ? XIP_SEG_WRITE : 0,
			       &seg);
	if (ret)
		return ret;
	return xip_image_open_segment(seg, flags, imgp);
}

int xip_image_flush(struct xip_image *img)
{
	errcode_t err;

	if (!img->writable)
		return 0;
	/* the bitmaps too: ext2fs_flush() leaves them to ext2fs_close() */
	if (img->fs && (img->fs->flags & EXT2_FLAG_RW)) {
		err = ext2fs_write_bitmaps(img->fs);
		if (err)
			return xip_error_ext2(err, "%s: writing bitmaps",
					      img->seg->path);
	}
	if (img->fs && (img->fs->flags & EXT2_FLAG_DIRTY)) {
		err = ext2fs_flush(img->fs);
		if (err)
			return xip_error_ext2(err, "%s: writing metadata",
					      img->seg->path);
	}
	return xip_seg_sync(img->seg);
}

int xip_identify(struct xip_seg *seg, char *type, size_t len)
{
	const char *value = NULL;
	blkid_probe pr;
	int ret;

	type[0] = '\0';
	pr = blkid_new_probe();
	if (!pr)
		return xip_error(-ENOMEM, "out of memory");
	if (blkid_probe_set_device(pr, seg->fd, 0, (blkid_loff_t)seg->size)) {
		blkid_free_probe(pr);
		return xip_error(-EIO, "%s: cannot probe", seg->path);
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
	blkid_probe_enable_partitions(pr, 1);
	ret = blkid_do_safeprobe(pr);
	if (ret == 0 && !blkid_probe_lookup_value(pr, "TYPE", &value, NULL))
		snprintf(type, len, "%s", value);
	else if (ret == 0 &&
		 !blkid_probe_lookup_value(pr, "PTTYPE", &value, NULL))
		snprintf(type, len, "%s partition table", value);
	blkid_free_probe(pr);
	if (ret == -2)
		return xip_error(-EMEDIUMTYPE,
				 "%s: ambiguous: more than one file system signature",
				 seg->path);
	if (!type[0])
		return xip_error(-ENODATA, "%s: no known file system found",
				 seg->path);
	if (!strcmp(type, "ext2") || !strcmp(type, "ext3") ||
	    !strcmp(type, "ext4"))
		return 0;
	return xip_error_not_ext2(-EMEDIUMTYPE, xip_seg_label(seg), type);
}

static void format_uuid(const uint8_t *u, char *out)
{
	/* 8-4-4-4-12 digits: the groups of 4, 2, 2, 2 and 6 bytes */
	static const int group[] = { 4, 2, 2, 2, 6 };

	for (int g = 0; g < 5; g++) {
		if (g)
			*out++ = '-';
		xip_hex_encode(u, (size_t)group[g], out);
		u += group[g];
		out += 2 * group[g];
	}
}

static const char *fs_type(const struct ext2_super_block *sb)
{
	if (sb->s_feature_incompat & ~(EXT2_FEATURE_INCOMPAT_FILETYPE |
				       EXT2_FEATURE_INCOMPAT_META_BG |
				       EXT3_FEATURE_INCOMPAT_RECOVER |
				       EXT3_FEATURE_INCOMPAT_JOURNAL_DEV))
		return "ext4";
	if (sb->s_feature_ro_compat & ~(EXT2_FEATURE_RO_COMPAT_SPARSE_SUPER |
					EXT2_FEATURE_RO_COMPAT_LARGE_FILE))
		return "ext4";
	if (sb->s_feature_compat & EXT3_FEATURE_COMPAT_HAS_JOURNAL)
		return "ext3";
	return "ext2";
}

int xip_image_info(const struct xip_image *img, struct xip_image_info *info)
{
	struct ext2_super_block *sb = img->fs->super;

	memset(info, 0, sizeof(*info));
	/* @NAME: the size of the image attached, not the segment's padding */
	info->size = img->seg->data_size;
	info->block_size = img->fs->blocksize;
	info->page_size = (unsigned int)xip_host_page_size();
	info->xip_capable = xip_image_xip_capable(img, 0, info->xip_reason,
						  sizeof(info->xip_reason)) == 1;
	info->pmem_capable = xip_pmem_capable(img->seg->size,
					      info->block_size, info->page_size,
					      info->pmem_reason,
					      sizeof(info->pmem_reason)) == 1;
	info->groups = img->fs->group_desc_count;
	info->blocks = ext2fs_blocks_count(sb);
	info->blocks_free = ext2fs_free_blocks_count(sb);
	info->blocks_reserved = ext2fs_r_blocks_count(sb);
	info->inodes = sb->s_inodes_count;
	info->inodes_free = sb->s_free_inodes_count;
	memcpy(info->label, sb->s_volume_name, EXT2_LABEL_LEN);
	info->label[EXT2_LABEL_LEN] = '\0';
	format_uuid(sb->s_uuid, info->uuid);
	snprintf(info->fstype, sizeof(info->fstype), "%s", fs_type(sb));
	info->state = sb->s_state;
	info->rev_level = sb->s_rev_level;
	info->features_compat = sb->s_feature_compat;
	info->features_incompat = sb->s_feature_incompat;
	info->features_ro_compat = sb->s_feature_ro_compat;
	return 0;
}
