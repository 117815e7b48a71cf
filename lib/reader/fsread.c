// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The read side of the engine: a read-only ext2 reader that needs nothing
 * but libc (see reader_int.h).  Superblock, group descriptors, inodes, block
 * maps (direct, indirect, double and triple indirect), extent trees,
 * directories, symlinks and path lookup.  Every byte comes from the image
 * and is treated as hostile: every block number is checked against the
 * block count, the file system's metadata and the segment before a
 * pointer is formed from it.
 *
 * All on-disk values are little-endian and are read as such on any host:
 * the superblock and each inode are copied and converted to host order
 * field by field (xip_fs_super_swab, xip_fs_inode_swab: an inode as libext2fs
 * keeps it in memory); what is read in place, group descriptors, extent
 * tree nodes, indirect blocks and directory entries, goes through le16(),
 * le32() or le32toh() where it is read.
 *
 * This file holds the superblock, the group descriptors, the map of the
 * metadata blocks, images opened for reading, inodes and the checks of
 * data blocks.  The block maps and extent trees are in fsmap.c; the
 * directories, path lookup, symlinks and stat in fsdir.c.
 */
#include <byteswap.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/xip_image.h"
#include "reader/xip_reader.h"
#include "reader/reader_int.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"
#include "segment/xip_segment.h"
#include "registry/xip_registry.h"

#define LOCK_TIMEOUT_MS 5000

/* ---- superblock --------------------------------------------------------- */

/*
 * Every multi-byte field of the superblock, byte order reversed (the
 * bytes of s_reserved[] excepted), as ext2fs_swap_super() does; the
 * journal's backup of its block map (s_jnl_blocks) is reversed whole,
 * whatever it holds: this reader does not use it.
 */
void xip_fs_super_swab(struct ext2_super_block *sb)
{
	sb->s_inodes_count = bswap_32(sb->s_inodes_count);
	sb->s_blocks_count = bswap_32(sb->s_blocks_count);
	sb->s_r_blocks_count = bswap_32(sb->s_r_blocks_count);
	sb->s_free_blocks_count = bswap_32(sb->s_free_blocks_count);
	sb->s_free_inodes_count = bswap_32(sb->s_free_inodes_count);
	sb->s_first_data_block = bswap_32(sb->s_first_data_block);
	sb->s_log_block_size = bswap_32(sb->s_log_block_size);
	sb->s_log_cluster_size = bswap_32(sb->s_log_cluster_size);
	sb->s_blocks_per_group = bswap_32(sb->s_blocks_per_group);
	sb->s_clusters_per_group = bswap_32(sb->s_clusters_per_group);
	sb->s_inodes_per_group = bswap_32(sb->s_inodes_per_group);
	sb->s_mtime = bswap_32(sb->s_mtime);
	sb->s_wtime = bswap_32(sb->s_wtime);
	sb->s_mnt_count = bswap_16(sb->s_mnt_count);
	sb->s_max_mnt_count = (__s16)bswap_16((uint16_t)sb->s_max_mnt_count);
	sb->s_magic = bswap_16(sb->s_magic);
	sb->s_state = bswap_16(sb->s_state);
	sb->s_errors = bswap_16(sb->s_errors);
	sb->s_minor_rev_level = bswap_16(sb->s_minor_rev_level);
	sb->s_lastcheck = bswap_32(sb->s_lastcheck);
	sb->s_checkinterval = bswap_32(sb->s_checkinterval);
	sb->s_creator_os = bswap_32(sb->s_creator_os);
	sb->s_rev_level = bswap_32(sb->s_rev_level);
	sb->s_def_resuid = bswap_16(sb->s_def_resuid);
	sb->s_def_resgid = bswap_16(sb->s_def_resgid);
	sb->s_first_ino = bswap_32(sb->s_first_ino);
	sb->s_inode_size = bswap_16(sb->s_inode_size);
	sb->s_block_group_nr = bswap_16(sb->s_block_group_nr);
	sb->s_feature_compat = bswap_32(sb->s_feature_compat);
	sb->s_feature_incompat = bswap_32(sb->s_feature_incompat);
	sb->s_feature_ro_compat = bswap_32(sb->s_feature_ro_compat);
	sb->s_algorithm_usage_bitmap = bswap_32(sb->s_algorithm_usage_bitmap);
	sb->s_reserved_gdt_blocks = bswap_16(sb->s_reserved_gdt_blocks);
	sb->s_journal_inum = bswap_32(sb->s_journal_inum);
	sb->s_journal_dev = bswap_32(sb->s_journal_dev);
	sb->s_last_orphan = bswap_32(sb->s_last_orphan);
	sb->s_desc_size = bswap_16(sb->s_desc_size);
	sb->s_default_mount_opts = bswap_32(sb->s_default_mount_opts);
	sb->s_first_meta_bg = bswap_32(sb->s_first_meta_bg);
	sb->s_mkfs_time = bswap_32(sb->s_mkfs_time);
	sb->s_blocks_count_hi = bswap_32(sb->s_blocks_count_hi);
	sb->s_r_blocks_count_hi = bswap_32(sb->s_r_blocks_count_hi);
	sb->s_free_blocks_hi = bswap_32(sb->s_free_blocks_hi);
	sb->s_min_extra_isize = bswap_16(sb->s_min_extra_isize);
	sb->s_want_extra_isize = bswap_16(sb->s_want_extra_isize);
	sb->s_flags = bswap_32(sb->s_flags);
	sb->s_raid_stride = bswap_16(sb->s_raid_stride);
	sb->s_mmp_update_interval = bswap_16(sb->s_mmp_update_interval);
	sb->s_mmp_block = bswap_64(sb->s_mmp_block);
	sb->s_raid_stripe_width = bswap_32(sb->s_raid_stripe_width);
	sb->s_kbytes_written = bswap_64(sb->s_kbytes_written);
	sb->s_snapshot_inum = bswap_32(sb->s_snapshot_inum);
	sb->s_snapshot_id = bswap_32(sb->s_snapshot_id);
	sb->s_snapshot_r_blocks_count = bswap_64(sb->s_snapshot_r_blocks_count);
	sb->s_snapshot_list = bswap_32(sb->s_snapshot_list);
	sb->s_error_count = bswap_32(sb->s_error_count);
	sb->s_first_error_time = bswap_32(sb->s_first_error_time);
	sb->s_first_error_ino = bswap_32(sb->s_first_error_ino);
	sb->s_first_error_block = bswap_64(sb->s_first_error_block);
	sb->s_first_error_line = bswap_32(sb->s_first_error_line);
	sb->s_last_error_time = bswap_32(sb->s_last_error_time);
	sb->s_last_error_ino = bswap_32(sb->s_last_error_ino);
	sb->s_last_error_line = bswap_32(sb->s_last_error_line);
	sb->s_last_error_block = bswap_64(sb->s_last_error_block);
	sb->s_usr_quota_inum = bswap_32(sb->s_usr_quota_inum);
	sb->s_grp_quota_inum = bswap_32(sb->s_grp_quota_inum);
	sb->s_overhead_clusters = bswap_32(sb->s_overhead_clusters);
	sb->s_lpf_ino = bswap_32(sb->s_lpf_ino);
	sb->s_prj_quota_inum = bswap_32(sb->s_prj_quota_inum);
	sb->s_checksum_seed = bswap_32(sb->s_checksum_seed);
	sb->s_encoding = bswap_16(sb->s_encoding);
	sb->s_encoding_flags = bswap_16(sb->s_encoding_flags);
	sb->s_orphan_file_inum = bswap_32(sb->s_orphan_file_inum);
	sb->s_checksum = bswap_32(sb->s_checksum);
	for (size_t i = 0; i < 4; i++)
		sb->s_hash_seed[i] = bswap_32(sb->s_hash_seed[i]);
	for (size_t i = 0; i < 17; i++)
		sb->s_jnl_blocks[i] = bswap_32(sb->s_jnl_blocks[i]);
	for (size_t i = 0; i < 2; i++)
		sb->s_backup_bgs[i] = bswap_32(sb->s_backup_bgs[i]);
}

/* A copy of the superblock in host order. */
static void sb_to_host(struct ext2_super_block *sb)
{
#if __BYTE_ORDER == __BIG_ENDIAN
	xip_fs_super_swab(sb);		/* little-endian on disk */
#else
	(void)sb;
#endif
}

/* (of a host-order copy) */
static uint64_t sb_blocks_count(const struct ext2_super_block *sb)
{
	uint64_t n = sb->s_blocks_count;

	if (sb->s_feature_incompat & EXT4_FEATURE_INCOMPAT_64BIT)
		n |= (uint64_t)sb->s_blocks_count_hi << 32;
	return n;
}

/* No ext2 superblock: say what the image holds when its signature tells. */
static int not_ext2(struct xip_seg *seg)
{
	uint64_t len = seg->size < XIP_FS_SIGNATURE_BYTES ?
			       seg->size : XIP_FS_SIGNATURE_BYTES;
	void *head;
	const char *type = NULL;

	if (!xip_seg_range(seg, 0, len, &head))
		type = xip_fs_signature(head, (size_t)len);
	return xip_error_not_ext2(-EUCLEAN, xip_seg_label(seg), type);
}

/*
 * The checks the kernel makes in ext2_fill_super() before it trusts the
 * geometry, plus the image size against the block count.  This also
 * bounds every allocation made from superblock fields by the image size.
 */
static int check_superblock(struct xip_seg *seg,
			    struct ext2_super_block *sb)
{
	uint64_t blocks, bs, groups;
	const char *p = seg->path;
	void *disk;

	if (xip_seg_range(seg, SB_OFFSET, sizeof(*sb), &disk))
		return xip_error(-EUCLEAN,
				 "%s: too small to hold an ext2 superblock (%" PRIu64 " bytes)",
				 p, seg->size);
	memcpy(sb, disk, sizeof(*sb));
	sb_to_host(sb);
	if (sb->s_magic != EXT2_SUPER_MAGIC)
		return not_ext2(seg);
	if (sb->s_log_block_size > EXT2_MAX_BLOCK_LOG_SIZE - EXT2_MIN_BLOCK_LOG_SIZE)
		return xip_error(-EUCLEAN,
				 "%s: superblock: invalid block size (log %u)",
				 p, sb->s_log_block_size);
	bs = (uint64_t)EXT2_MIN_BLOCK_SIZE << sb->s_log_block_size;
	blocks = sb_blocks_count(sb);
	if (sb->s_first_data_block != (bs == 1024 ? 1u : 0u) &&
	    sb->s_first_data_block != 0)
		return xip_error(-EUCLEAN,
				 "%s: superblock: invalid first data block %u",
				 p, sb->s_first_data_block);
	if (blocks <= sb->s_first_data_block)
		return xip_error(-EUCLEAN,
				 "%s: superblock: invalid block count %" PRIu64,
				 p, blocks);
	if (blocks > seg->size / bs)
		return xip_error(-EUCLEAN,
				 "%s: superblock claims %" PRIu64 " blocks of %" PRIu64
				 " bytes but the image holds only %" PRIu64 " bytes",
				 p, blocks, bs, seg->size);
	if (sb->s_blocks_per_group < 8 || sb->s_blocks_per_group > 8 * bs ||
	    sb->s_blocks_per_group % 8)
		return xip_error(-EUCLEAN,
				 "%s: superblock: invalid blocks per group %u",
				 p, sb->s_blocks_per_group);
	groups = div_round_up(blocks - sb->s_first_data_block,
			      sb->s_blocks_per_group);
	if (sb->s_inodes_per_group == 0 || sb->s_inodes_per_group > 8 * bs ||
	    (uint64_t)sb->s_inodes_per_group * groups != sb->s_inodes_count)
		return xip_error(-EUCLEAN,
				 "%s: superblock: invalid inode count %u (%u per group, %" PRIu64 " groups)",
				 p, sb->s_inodes_count, sb->s_inodes_per_group,
				 groups);
	if (sb->s_rev_level > EXT2_DYNAMIC_REV)
		return xip_error(-EOPNOTSUPP,
				 "%s: superblock: unsupported revision %u", p,
				 sb->s_rev_level);
	if (sb->s_rev_level == EXT2_DYNAMIC_REV &&
	    (sb->s_inode_size < EXT2_GOOD_OLD_INODE_SIZE ||
	     sb->s_inode_size > bs ||
	     (sb->s_inode_size & (sb->s_inode_size - 1))))
		return xip_error(-EUCLEAN,
				 "%s: superblock: invalid inode size %u", p,
				 sb->s_inode_size);
	return 0;
}

/* The geometry of a superblock check_superblock() has accepted. */
static int fs_geometry(struct xip_fs *fs, const struct ext2_super_block *sb)
{
	const char *p = fs->seg->path;
	uint64_t dpb;

	fs->block_size = EXT2_MIN_BLOCK_SIZE << sb->s_log_block_size;
	fs->blocks = sb_blocks_count(sb);
	fs->first_data_block = sb->s_first_data_block;
	fs->bpg = sb->s_blocks_per_group;
	fs->ipg = sb->s_inodes_per_group;
	fs->inodes_count = sb->s_inodes_count;
	fs->groups = (uint32_t)div_round_up(fs->blocks - fs->first_data_block,
					    fs->bpg);
	fs->inode_size = sb->s_rev_level == EXT2_DYNAMIC_REV ?
			 sb->s_inode_size : EXT2_GOOD_OLD_INODE_SIZE;
	fs->feat_compat = sb->s_feature_compat;
	fs->feat_incompat = sb->s_feature_incompat;
	fs->feat_ro = sb->s_feature_ro_compat;
	if (sb->s_rev_level == EXT2_GOOD_OLD_REV)
		fs->feat_compat = fs->feat_incompat = fs->feat_ro = 0;
	if (fs->feat_incompat & ~INCOMPAT_READ)
		return xip_error(-EOPNOTSUPP,
				 "%s: unsupported file system features (incompat 0x%x)",
				 p, fs->feat_incompat & ~INCOMPAT_READ);
	fs->desc_size = 32;
	if (fs->feat_incompat & EXT4_FEATURE_INCOMPAT_64BIT) {
		fs->desc_size = sb->s_desc_size;
		if (fs->desc_size < 64 || fs->desc_size > fs->block_size ||
		    (fs->desc_size & (fs->desc_size - 1)))
			return xip_error(-EUCLEAN,
					 "%s: group descriptors: invalid descriptor size %u",
					 p, fs->desc_size);
	}
	dpb = fs->block_size / fs->desc_size;
	fs->desc_blocks = div_round_up(fs->groups, dpb);
	fs->first_meta_bg = sb->s_first_meta_bg;
	fs->reserved_gdt = sb->s_reserved_gdt_blocks;
	fs->backup_bgs[0] = sb->s_backup_bgs[0];
	fs->backup_bgs[1] = sb->s_backup_bgs[1];
	fs->itb_per_group = div_round_up((uint64_t)fs->ipg * fs->inode_size,
					 fs->block_size);
	return 0;
}

/* ---- group descriptors -------------------------------------------------- */

static uint64_t group_first(const struct xip_fs *fs, uint32_t g)
{
	return fs->first_data_block + (uint64_t)g * fs->bpg;
}

static uint64_t group_last(const struct xip_fs *fs, uint32_t g)
{
	uint64_t last = group_first(fs, g) + fs->bpg - 1;

	return last < fs->blocks - 1 ? last : fs->blocks - 1;
}

static bool power_of(uint32_t n, uint32_t b)
{
	while (n > 1 && n % b == 0)
		n /= b;
	return n == 1;
}

bool xip_fs_group_has_super(const struct xip_fs *fs, uint32_t g)
{
	if (g == 0)
		return true;
	if (fs->feat_compat & EXT4_FEATURE_COMPAT_SPARSE_SUPER2)
		return g == fs->backup_bgs[0] || g == fs->backup_bgs[1];
	if (g == 1 || !(fs->feat_ro & EXT2_FEATURE_RO_COMPAT_SPARSE_SUPER))
		return true;
	if (!(g & 1))
		return false;
	return power_of(g, 3) || power_of(g, 5) || power_of(g, 7);
}

/* The block a group's copies start at (1 for group 0 of 1 KiB blocks). */
static uint64_t group_base(const struct xip_fs *fs, uint32_t g)
{
	uint64_t b = group_first(fs, g);

	return b == 0 && fs->block_size == 1024 ? 1 : b;
}

static uint64_t desc_block(const struct xip_fs *fs, uint32_t g)
{
	uint32_t dpb = fs->block_size / fs->desc_size, mb = g / dpb;

	if (!(fs->feat_incompat & EXT2_FEATURE_INCOMPAT_META_BG) || mb < fs->first_meta_bg)
		return group_base(fs, 0) + 1 + mb;
	return group_base(fs, mb * dpb) +
	       (xip_fs_group_has_super(fs, mb * dpb) ? 1 : 0);
}

int xip_fs_group(struct xip_fs *fs, uint32_t g, uint64_t *block_bitmap,
		 uint64_t *inode_bitmap, uint64_t *inode_table)
{
	uint32_t dpb = fs->block_size / fs->desc_size;
	uint64_t blk = desc_block(fs, g);
	const uint8_t *d;

	if (g >= fs->groups || blk >= fs->blocks ||
	    xip_seg_range(fs->seg, blk * fs->block_size +
				  (uint64_t)(g % dpb) * fs->desc_size,
				  fs->desc_size, (void **)&d))
		return xip_error(-EUCLEAN,
				 "%s: group descriptors: descriptor of group %u at block %llu outside the image",
				 fs->seg->path, g, U64(blk));
	*block_bitmap = le32(d + 0);
	*inode_bitmap = le32(d + 4);
	*inode_table = le32(d + 8);
	if (fs->desc_size >= 64) {
		*block_bitmap |= (uint64_t)le32(d + 0x20) << 32;
		*inode_bitmap |= (uint64_t)le32(d + 0x24) << 32;
		*inode_table |= (uint64_t)le32(d + 0x28) << 32;
	}
	return 0;
}

/* ---- the metadata map --------------------------------------------------- */

struct range_list {
	struct xip_fs_range *r;
	size_t n, cap;
};

/* Add [blk, blk + num) clamped to the data blocks of the image. */
static int range_add(const struct xip_fs *fs, struct range_list *l,
		     uint64_t blk, uint64_t num)
{
	uint64_t first = fs->first_data_block, end = fs->blocks;

	if (blk < first) {
		if (num <= first - blk)
			return 0;
		num -= first - blk;
		blk = first;
	}
	if (blk >= end || !num)
		return 0;
	if (num > end - blk)
		num = end - blk;
	if (xip_grow((void **)&l->r, &l->cap, l->n + 1, sizeof(*l->r)))
		return xip_error(-ENOMEM, "out of memory");
	l->r[l->n].start = blk;
	l->r[l->n].end = blk + num;
	l->n++;
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct xip_fs_range *x = a, *y = b;

	return xip_cmp_u64(x->start, y->start);
}

/* Sort and merge overlapping or touching ranges. */
static void range_merge(struct range_list *l)
{
	size_t k = 0;

	if (!l->n)
		return;
	qsort(l->r, l->n, sizeof(*l->r), range_cmp);
	for (size_t i = 1; i < l->n; i++) {
		if (l->r[i].start <= l->r[k].end) {
			if (l->r[i].end > l->r[k].end)
				l->r[k].end = l->r[i].end;
		} else {
			l->r[++k] = l->r[i];
		}
	}
	l->n = k + 1;
}

/* The first range of the sorted list whose end lies above @blk. */
static size_t range_find(const struct xip_fs_range *r, size_t n, uint64_t blk)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].end <= blk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool range_hits(const struct range_list *l, uint64_t blk, uint64_t n)
{
	size_t i = range_find(l->r, l->n, blk);

	return i < l->n && l->r[i].start < blk + n;
}

/* The superblock copies and descriptor blocks of every group. */
static int super_and_desc(struct xip_fs *fs, struct range_list *l)
{
	uint32_t dpb = fs->block_size / fs->desc_size;
	bool meta_bg = fs->feat_incompat & EXT2_FEATURE_INCOMPAT_META_BG;
	uint64_t old = meta_bg ? fs->first_meta_bg :
				 fs->desc_blocks + fs->reserved_gdt;
	int ret = 0;

	for (uint32_t g = 0; g < fs->groups && !ret; g++) {
		uint64_t base = group_base(fs, g);
		bool has = xip_fs_group_has_super(fs, g);
		uint32_t r = g % dpb;

		if (has || g == 0)
			ret = range_add(fs, l, has ? base : 0, 1);
		if (ret)
			break;
		if (!meta_bg || g / dpb < fs->first_meta_bg) {
			if (has)
				ret = range_add(fs, l, base + 1, old);
		} else if (r == 0 || r == 1 || r == dpb - 1) {
			ret = range_add(fs, l, base + (has ? 1 : 0), 1);
		}
	}
	return ret;
}

static int desc_bad(struct xip_fs *fs, uint32_t g, const char *what,
		    uint64_t blk, const char *why)
{
	return xip_error(-EUCLEAN,
			 "%s: group descriptors: group %u: %s at block %llu %s",
			 fs->seg->path, g, what, U64(blk), why);
}

/*
 * Build the metadata map; with @check, refuse descriptors whose bitmaps
 * or inode table lie outside their group (the image with flex_bg), or on
 * the superblock, the descriptors or another group's metadata.
 */
static int build_meta(struct xip_fs *fs, bool check)
{
	struct range_list sup = { 0 }, own = { 0 };
	uint64_t bb, ib, it, first, last, itb = fs->itb_per_group;
	int ret;

	ret = super_and_desc(fs, &sup);
	if (!ret)
		range_merge(&sup);
	for (uint32_t g = 0; g < fs->groups && !ret; g++) {
		ret = xip_fs_group(fs, g, &bb, &ib, &it);
		if (ret)
			break;
		if (check) {
			first = fs->first_data_block;
			last = fs->blocks - 1;
			if (!(fs->feat_incompat & EXT4_FEATURE_INCOMPAT_FLEX_BG)) {
				first = group_first(fs, g);
				last = group_last(fs, g);
			}
			if (bb < first || bb > last)
				ret = desc_bad(fs, g, "block bitmap", bb,
					       "outside its group");
			else if (ib < first || ib > last)
				ret = desc_bad(fs, g, "inode bitmap", ib,
					       "outside its group");
			else if (it < first || it > last ||
				 itb > last - it + 1)
				ret = desc_bad(fs, g, "inode table", it,
					       "outside its group");
			else if (range_hits(&sup, bb, 1))
				ret = desc_bad(fs, g, "block bitmap", bb,
					       "on the superblock or descriptors");
			else if (range_hits(&sup, ib, 1))
				ret = desc_bad(fs, g, "inode bitmap", ib,
					       "on the superblock or descriptors");
			else if (range_hits(&sup, it, itb))
				ret = desc_bad(fs, g, "inode table", it,
					       "on the superblock or descriptors");
			if (ret)
				break;
		}
		ret = range_add(fs, &own, bb, 1);
		if (!ret)
			ret = range_add(fs, &own, ib, 1);
		if (!ret)
			ret = range_add(fs, &own, it, itb);
	}
	if (!ret && check && own.n) {
		/* bitmaps and tables: none on another (or on itself) */
		qsort(own.r, own.n, sizeof(*own.r), range_cmp);
		for (size_t i = 1; i < own.n && !ret; i++)
			if (own.r[i].start < own.r[i - 1].end)
				ret = xip_error(-EUCLEAN,
						"%s: group descriptors: bitmaps or inode tables overlap at block %llu",
						fs->seg->path,
						U64(own.r[i].start));
	}
	for (size_t i = 0; i < own.n && !ret; i++)
		ret = range_add(fs, &sup, own.r[i].start,
				own.r[i].end - own.r[i].start);
	free(own.r);
	if (ret) {
		free(sup.r);
		return ret;
	}
	range_merge(&sup);
	free(fs->meta);
	fs->meta = sup.r;
	fs->nmeta = sup.n;
	fs->clean_lo = fs->clean_hi = 0;
	return 0;
}

int xip_fs_meta_overlaps(struct xip_fs *fs, uint64_t blk, uint64_t n,
			 bool *overlaps)
{
	size_t i;
	int ret;

	if (!fs->meta) {
		ret = build_meta(fs, false);
		if (ret)
			return ret;
	}
	i = range_find(fs->meta, fs->nmeta, blk);
	*overlaps = i < fs->nmeta && fs->meta[i].start < blk + n;
	return 0;
}

int xip_fs_open(struct xip_seg *seg, int flags, struct xip_fs **fsp)
{
	struct ext2_super_block sb;
	struct xip_fs *fs;
	int ret;

	*fsp = NULL;
	ret = check_superblock(seg, &sb);
	if (ret)
		return ret;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return xip_error(-ENOMEM, "out of memory");
	fs->seg = seg;
	ret = fs_geometry(fs, &sb);
	if (!ret && !(flags & XIP_FS_NO_DESC_CHECK))
		ret = build_meta(fs, true);
	if (ret) {
		xip_fs_close(fs);
		return ret;
	}
	*fsp = fs;
	return 0;
}

void xip_fs_close(struct xip_fs *fs)
{
	if (!fs)
		return;
	free(fs->meta);
	free(fs);
}

/* ---- images opened for reading ------------------------------------------ */

int xip_image_open_segment_read(struct xip_seg *seg, int flags,
				struct xip_image **imgp)
{
	struct xip_image *img;
	int ret = 0;

	*imgp = NULL;
	img = calloc(1, sizeof(*img));
	if (!img) {
		xip_seg_close(seg);
		return xip_error(-ENOMEM, "out of memory");
	}
	img->seg = seg;
	img->rd_flags = (flags & XIP_IMG_FORCE) ? XIP_FS_NO_DESC_CHECK : 0;
	if (!(flags & XIP_IMG_NOLOCK))
		ret = xip_seg_lock(seg, false, LOCK_TIMEOUT_MS);
	if (!ret && !(flags & XIP_IMG_DEFER_FS))
		ret = xip_image_open_fs(img);
	if (ret) {
		int saved = xip_errcode();
		char msg[XIP_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", xip_errmsg());
		xip_image_close(img);
		xip_error(saved ? saved : ret, "%s", msg);
		return ret;
	}
	*imgp = img;
	return 0;
}

int xip_image_open_fs(struct xip_image *img)
{
	int ret;

	if (img->rd)
		return 0;
	ret = xip_fs_open(img->seg, img->rd_flags, &img->rd);
	if (!ret)
		img->block_size = img->rd->block_size;
	return ret;
}

int xip_image_open_read(const char *spec, int flags, struct xip_image **imgp)
{
	struct xip_seg *seg;
	int ret;

	*imgp = NULL;
	ret = xip_spec_open(spec, ((flags & XIP_IMG_NOLOCK) ? 0 : XIP_SEG_SHARED) |
				  ((flags & XIP_IMG_COPY) ? XIP_SEG_COPY : 0),
			    &seg);
	if (ret)
		return ret;
	return xip_image_open_segment_read(seg, flags, imgp);
}

int xip_image_close(struct xip_image *img)
{
	int ret = 0;

	if (!img)
		return 0;
	if (img->close_fs) {
		img->close_fs(img);
		ret = img->close_ret;
	}
	xip_fs_close(img->rd);
	xip_seg_close(img->seg);
	free(img);
	return ret;
}

int xip_image_pin_lock(struct xip_image *img)
{
	return img && img->seg ? xip_seg_pin_lock(img->seg) : 0;
}

void xip_image_abandon(struct xip_image *img)
{
	if (img && img->seg)
		xip_seg_release(img->seg);
}

int xip_image_xip_capable(const struct xip_image *img, unsigned int page_size,
			  char *why, size_t whylen)
{
	return xip_seg_xip_capable(img->seg, img->block_size, page_size, why,
				   whylen);
}

int xip_seg_xip_capable(const struct xip_seg *seg, unsigned int bs,
			unsigned int page_size, char *why, size_t whylen)
{
	if (!page_size)
		page_size = (unsigned int)xip_host_page_size();
	if (why && whylen)
		why[0] = '\0';
	if (bs != page_size) {
		snprintf(why, whylen,
			 "block size %u differs from page size %u", bs,
			 page_size);
		return 0;
	}
	if (seg->size % page_size) {
		snprintf(why, whylen,
			 "image size %" PRIu64 " is not a multiple of the page size %u",
			 seg->size, page_size);
		return 0;
	}
	return 1;
}

/* ---- inodes ------------------------------------------------------------- */

/* Does an inode copy of @n bytes hold @field? */
#define INODE_HAS(n, field) \
	((n) >= offsetof(struct ext2_inode_large, field) + \
		sizeof(((struct ext2_inode_large *)0)->field))

/* The large inode field @field of @in reversed, when its copy holds it. */
#define SWAB_IF_HELD(n, in, field, bits)				\
	do {								\
		if (INODE_HAS(n, field))				\
			(in)->field = bswap_##bits((in)->field);	\
	} while (0)

void xip_inode_swab_fields(struct ext2_inode_large *in,
			   unsigned int inode_size)
{
	size_t n = inode_size < sizeof(*in) ? inode_size : sizeof(*in);
	unsigned int extra;

	in->i_mode = bswap_16(in->i_mode);
	in->i_uid = bswap_16(in->i_uid);
	in->i_size = bswap_32(in->i_size);
	in->i_atime = bswap_32(in->i_atime);
	in->i_ctime = bswap_32(in->i_ctime);
	in->i_mtime = bswap_32(in->i_mtime);
	in->i_dtime = bswap_32(in->i_dtime);
	in->i_gid = bswap_16(in->i_gid);
	in->i_links_count = bswap_16(in->i_links_count);
	in->i_blocks = bswap_32(in->i_blocks);
	in->i_flags = bswap_32(in->i_flags);
	in->osd1.linux1.l_i_version = bswap_32(in->osd1.linux1.l_i_version);
	in->i_generation = bswap_32(in->i_generation);
	in->i_file_acl = bswap_32(in->i_file_acl);
	in->i_size_high = bswap_32(in->i_size_high);
	in->i_faddr = bswap_32(in->i_faddr);
	in->osd2.linux2.l_i_blocks_hi = bswap_16(in->osd2.linux2.l_i_blocks_hi);
	in->osd2.linux2.l_i_file_acl_high =
		bswap_16(in->osd2.linux2.l_i_file_acl_high);
	in->osd2.linux2.l_i_uid_high = bswap_16(in->osd2.linux2.l_i_uid_high);
	in->osd2.linux2.l_i_gid_high = bswap_16(in->osd2.linux2.l_i_gid_high);
	in->osd2.linux2.l_i_checksum_lo =
		bswap_16(in->osd2.linux2.l_i_checksum_lo);
	if (!INODE_HAS(n, i_extra_isize))
		return;
	in->i_extra_isize = bswap_16(in->i_extra_isize);
	extra = in->i_extra_isize;
	if (extra > inode_size - EXT2_GOOD_OLD_INODE_SIZE)
		return;		/* too large: libext2fs leaves the fields */
	if (n > EXT2_GOOD_OLD_INODE_SIZE + extra)
		n = EXT2_GOOD_OLD_INODE_SIZE + extra;
	SWAB_IF_HELD(n, in, i_checksum_hi, 16);
	SWAB_IF_HELD(n, in, i_ctime_extra, 32);
	SWAB_IF_HELD(n, in, i_mtime_extra, 32);
	SWAB_IF_HELD(n, in, i_atime_extra, 32);
	SWAB_IF_HELD(n, in, i_crtime, 32);
	SWAB_IF_HELD(n, in, i_crtime_extra, 32);
	SWAB_IF_HELD(n, in, i_version_hi, 32);
	SWAB_IF_HELD(n, in, i_projid, 32);
}

/*
 * The byte order of every field of an inode copy reversed, from the
 * other order to this host's, the way libext2fs's ext2fs_swap_inode_full()
 * reads an inode (so the copy is what the writers, which hand it to
 * libext2fs, expect): i_block's block pointers too, but not where i_block
 * holds bytes (an extent tree, inline data, a fast symlink's target:
 * those are read as little-endian where they are read).  A symlink is
 * fast by its size, as xip_map_open() has it (libext2fs: by its lack of
 * data blocks, which is the same for what mke2fs, xiptool and the kernel
 * write).
 */
void xip_fs_inode_swab(struct ext2_inode_large *in, unsigned int inode_size)
{
	xip_inode_swab_fields(in, inode_size);
	if (!(in->i_flags & (EXT4_EXTENTS_FL | EXT4_INLINE_DATA_FL)) &&
	    !xip_fs_fast_symlink(in))
		for (size_t i = 0; i < EXT2_N_BLOCKS; i++)
			in->i_block[i] = bswap_32(in->i_block[i]);
}

int xip_fs_read_inode(struct xip_fs *fs, ext2_ino_t ino,
		      struct ext2_inode_large *inode)
{
	uint64_t bb, ib, it, off;
	uint32_t g, idx;
	size_t n;
	void *p;
	int ret;

	if (ino < 1 || ino > fs->inodes_count)
		return xip_error(-EINVAL, "inode %u out of range (1 to %u)", ino,
				 fs->inodes_count);
	g = (ino - 1) / fs->ipg;
	idx = (ino - 1) % fs->ipg;
	ret = xip_fs_group(fs, g, &bb, &ib, &it);
	if (ret)
		return ret;
	if (it < fs->first_data_block || it >= fs->blocks ||
	    fs->itb_per_group > fs->blocks - it)
		return xip_error(-EUCLEAN,
				 "inode %u: inode table of group %u at block %llu outside the image",
				 ino, g, U64(it));
	off = it * fs->block_size + (uint64_t)idx * fs->inode_size;
	ret = xip_seg_range(fs->seg, off, fs->inode_size, &p);
	if (ret == -EIO || ret == -ETIMEDOUT)	/* a lazy fill's, said */
		return ret;
	if (ret)
		return xip_error(-EUCLEAN, "inode %u: outside the segment %s",
				 ino, fs->seg->path);
	n = fs->inode_size < sizeof(*inode) ? fs->inode_size : sizeof(*inode);
	memset(inode, 0, sizeof(*inode));
	memcpy(inode, p, n);
#if __BYTE_ORDER == __BIG_ENDIAN
	xip_fs_inode_swab(inode, fs->inode_size);	/* little-endian on disk */
#endif
	if (fs->inode_size <= EXT2_GOOD_OLD_INODE_SIZE)
		inode->i_extra_isize = 0;
	return 0;
}

int xip_inode_read_checked(struct xip_image *img, ext2_ino_t ino,
			   struct ext2_inode_large *inode)
{
	return xip_fs_read_inode(img->rd, ino, inode);
}

int xip_read_inode(struct xip_image *img, ext2_ino_t ino,
		   struct ext2_inode_large *inode)
{
	return xip_inode_read_checked(img, ino, inode);
}

uint64_t xip_fs_inode_size(const struct xip_fs *fs,
			   const struct ext2_inode_large *in)
{
	if (LINUX_S_ISREG(in->i_mode) ||
	    (LINUX_S_ISDIR(in->i_mode) && (fs->feat_incompat & EXT4_FEATURE_INCOMPAT_LARGEDIR)))
		return EXT2_I_SIZE(in);
	return in->i_size;
}

/* ---- blocks ------------------------------------------------------------- */

int xip_engine_check_block(struct xip_image *img, ext2_ino_t ino, blk64_t blk,
			   const char *what, uint64_t lblk)
{
	struct xip_fs *fs = img->rd;
	blk64_t count = fs->blocks;
	size_t i;
	int ret;

	if (blk < fs->first_data_block || blk >= count)
		return xip_error(-EUCLEAN,
				 "inode %u: %s %llu (file block %llu) beyond end of image (%llu blocks)",
				 ino, what, U64(blk), U64(lblk), U64(count));
	if (blk >= fs->clean_lo && blk < fs->clean_hi)
		return 0;
	if (!fs->meta) {
		ret = build_meta(fs, false);
		if (ret)
			return ret;
	}
	i = range_find(fs->meta, fs->nmeta, blk);
	if (i < fs->nmeta && fs->meta[i].start <= blk)
		return xip_error(-EUCLEAN,
				 "inode %u: %s %llu (file block %llu) lies in file system metadata",
				 ino, what, U64(blk), U64(lblk));
	/* remember the stretch up to the next metadata block */
	fs->clean_lo = blk;
	fs->clean_hi = i < fs->nmeta ? fs->meta[i].start : count;
	return 0;
}

int xip_engine_check_run(struct xip_image *img, ext2_ino_t ino, blk64_t blk,
			 uint64_t n, uint64_t lblk, uint64_t *good)
{
	uint64_t i = 0;
	int ret = 0;

	while (i < n) {
		ret = xip_engine_check_block(img, ino, blk + i, "block",
					     lblk + i);
		if (ret)
			break;
		/* the stretch free of metadata holds blk + i: skip it */
		i = img->rd->clean_hi - blk > i + 1 ? img->rd->clean_hi - blk :
						       i + 1;
	}
	*good = i < n ? i : n;
	return ret;
}

int xip_engine_block_ptr(struct xip_image *img, ext2_ino_t ino, blk64_t blk,
			 void **ptr)
{
	struct xip_seg *seg = img->seg;
	uint64_t bs = img->block_size;
	int ret;

	if (blk >= img->rd->blocks)
		return xip_error(-EUCLEAN, "inode %u: block %llu beyond end of image",
				 ino, U64(blk));
	if (bs == seg->page_size && bs % 512 == 0)
		ret = xip_seg_direct_access(seg, blk * (bs / 512), ptr);
	else
		ret = xip_seg_range(seg, blk * bs, bs, ptr);
	if (ret == -EIO || ret == -ETIMEDOUT)	/* a lazy fill's, said */
		return ret;
	if (ret)
		return xip_error(ret, "inode %u: block %llu: outside the segment %s",
				 ino, U64(blk), seg->path);
	return 0;
}
