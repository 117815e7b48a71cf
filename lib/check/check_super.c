// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * verify, first pass: the superblock (geometry, features, backups)
 * and the group descriptors, with the metadata they place.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <endian.h>
#include <unistd.h>

#include "check/check_int.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"
#include "segment/xip_segment.h"

/* ---- the superblock ----------------------------------------------------- */

/*
 * The superblock copy from little-endian to host order: every field this
 * walk reads (the rest, bytes and fields it never looks at, as on disk).
 */
static void sb_to_host(struct ext2_super_block *sb)
{
	sb->s_inodes_count = le32toh(sb->s_inodes_count);
	sb->s_blocks_count = le32toh(sb->s_blocks_count);
	sb->s_r_blocks_count = le32toh(sb->s_r_blocks_count);
	sb->s_free_blocks_count = le32toh(sb->s_free_blocks_count);
	sb->s_free_inodes_count = le32toh(sb->s_free_inodes_count);
	sb->s_first_data_block = le32toh(sb->s_first_data_block);
	sb->s_log_block_size = le32toh(sb->s_log_block_size);
	sb->s_log_cluster_size = le32toh(sb->s_log_cluster_size);
	sb->s_blocks_per_group = le32toh(sb->s_blocks_per_group);
	sb->s_clusters_per_group = le32toh(sb->s_clusters_per_group);
	sb->s_inodes_per_group = le32toh(sb->s_inodes_per_group);
	sb->s_magic = le16toh(sb->s_magic);
	sb->s_state = le16toh(sb->s_state);
	sb->s_rev_level = le32toh(sb->s_rev_level);
	sb->s_first_ino = le32toh(sb->s_first_ino);
	sb->s_inode_size = le16toh(sb->s_inode_size);
	sb->s_feature_compat = le32toh(sb->s_feature_compat);
	sb->s_feature_incompat = le32toh(sb->s_feature_incompat);
	sb->s_feature_ro_compat = le32toh(sb->s_feature_ro_compat);
	sb->s_reserved_gdt_blocks = le16toh(sb->s_reserved_gdt_blocks);
	sb->s_journal_inum = le32toh(sb->s_journal_inum);
	sb->s_journal_dev = le32toh(sb->s_journal_dev);
	sb->s_desc_size = le16toh(sb->s_desc_size);
	sb->s_usr_quota_inum = le32toh(sb->s_usr_quota_inum);
	sb->s_grp_quota_inum = le32toh(sb->s_grp_quota_inum);
	sb->s_backup_bgs[0] = le32toh(sb->s_backup_bgs[0]);
	sb->s_backup_bgs[1] = le32toh(sb->s_backup_bgs[1]);
	sb->s_prj_quota_inum = le32toh(sb->s_prj_quota_inum);
	sb->s_orphan_file_inum = le32toh(sb->s_orphan_file_inum);
}

/* A group descriptor copy from little-endian to host order. */
static void gd_to_host(struct ext2_group_desc *d)
{
	d->bg_block_bitmap = le32toh(d->bg_block_bitmap);
	d->bg_inode_bitmap = le32toh(d->bg_inode_bitmap);
	d->bg_inode_table = le32toh(d->bg_inode_table);
	d->bg_free_blocks_count = le16toh(d->bg_free_blocks_count);
	d->bg_free_inodes_count = le16toh(d->bg_free_inodes_count);
	d->bg_used_dirs_count = le16toh(d->bg_used_dirs_count);
	d->bg_flags = le16toh(d->bg_flags);
	d->bg_exclude_bitmap_lo = le32toh(d->bg_exclude_bitmap_lo);
	d->bg_block_bitmap_csum_lo = le16toh(d->bg_block_bitmap_csum_lo);
	d->bg_inode_bitmap_csum_lo = le16toh(d->bg_inode_bitmap_csum_lo);
	d->bg_itable_unused = le16toh(d->bg_itable_unused);
	d->bg_checksum = le16toh(d->bg_checksum);
}

static bool sb_has_super(const struct chk *c, uint32_t g)
{
	uint32_t n;

	if (g == 0)
		return true;
	if (c->sb.s_feature_compat & EXT4_FEATURE_COMPAT_SPARSE_SUPER2)
		return g == c->sb.s_backup_bgs[0] || g == c->sb.s_backup_bgs[1];
	if (!(c->sb.s_feature_ro_compat & EXT2_FEATURE_RO_COMPAT_SPARSE_SUPER))
		return true;
	if (g == 1)
		return true;
	if (!(g & 1))
		return false;
	for (uint32_t base = 3; base <= 7; base += 2) {
		for (n = g; n % base == 0; n /= base)
			;
		if (n == 1)
			return true;
	}
	return false;
}

/* Find a backup superblock when the primary's magic is gone. */
static int64_t sb_find_backup(struct chk *c)
{
	for (unsigned int log = 0; log <= 6; log++) {
		uint64_t bs = 1024u << log, blk = (bs == 1024) + 8 * bs;
		const struct ext2_super_block *b;
		void *p;

		if (xip_seg_range(c->seg, blk * bs, sizeof(*b), &p))
			continue;
		b = p;
		if (le16toh(b->s_magic) == EXT2_SUPER_MAGIC &&
		    le32toh(b->s_log_block_size) == log)
			return (int64_t)blk;
	}
	return -1;
}

#define SUPP_INCOMPAT (EXT2_FEATURE_INCOMPAT_FILETYPE)
#define SUPP_RO_COMPAT (EXT2_FEATURE_RO_COMPAT_SPARSE_SUPER | \
			EXT2_FEATURE_RO_COMPAT_LARGE_FILE | \
			EXT4_FEATURE_RO_COMPAT_DIR_NLINK | \
			EXT4_FEATURE_RO_COMPAT_EXTRA_ISIZE)

static const struct {
	uint32_t bit;
	bool ro;
	const char *name;
} feature_names[] = {
	{ EXT3_FEATURE_INCOMPAT_JOURNAL_DEV, false, "journal_dev" },
	{ EXT2_FEATURE_INCOMPAT_META_BG, false, "meta_bg" },
	{ EXT3_FEATURE_INCOMPAT_EXTENTS, false, "extent" },
	{ EXT4_FEATURE_INCOMPAT_64BIT, false, "64bit" },
	{ EXT4_FEATURE_INCOMPAT_MMP, false, "mmp" },
	{ EXT4_FEATURE_INCOMPAT_FLEX_BG, false, "flex_bg" },
	{ EXT4_FEATURE_INCOMPAT_EA_INODE, false, "ea_inode" },
	{ EXT4_FEATURE_INCOMPAT_CSUM_SEED, false, "metadata_csum_seed" },
	{ EXT4_FEATURE_INCOMPAT_LARGEDIR, false, "large_dir" },
	{ EXT4_FEATURE_INCOMPAT_INLINE_DATA, false, "inline_data" },
	{ EXT4_FEATURE_INCOMPAT_ENCRYPT, false, "encrypt" },
	{ EXT4_FEATURE_INCOMPAT_CASEFOLD, false, "casefold" },
	{ EXT4_FEATURE_RO_COMPAT_HUGE_FILE, true, "huge_file" },
	{ EXT4_FEATURE_RO_COMPAT_GDT_CSUM, true, "uninit_bg" },
	{ EXT4_FEATURE_RO_COMPAT_BIGALLOC, true, "bigalloc" },
	{ EXT4_FEATURE_RO_COMPAT_QUOTA, true, "quota" },
	{ EXT4_FEATURE_RO_COMPAT_METADATA_CSUM, true, "metadata_csum" },
	{ EXT4_FEATURE_RO_COMPAT_READONLY, true, "read-only" },
	{ EXT4_FEATURE_RO_COMPAT_PROJECT, true, "project" },
	{ EXT4_FEATURE_RO_COMPAT_SHARED_BLOCKS, true, "shared_blocks" },
	{ EXT4_FEATURE_RO_COMPAT_VERITY, true, "verity" },
};

static const char *feature_name(uint32_t in, uint32_t ro)
{
	for (size_t i = 0; i < sizeof(feature_names) / sizeof(feature_names[0]); i++) {
		uint32_t mask = feature_names[i].ro ? ro : in;

		if (mask & feature_names[i].bit)
			return feature_names[i].name;
	}
	return in ? "(incompatible)" : "(read-only compatible)";
}

/* Features this walk does not implement: the image is not ext2. */
static int sb_features(struct chk *c)
{
	const struct ext2_super_block *sb = &c->sb;
	uint32_t in = sb->s_feature_incompat & ~SUPP_INCOMPAT;
	uint32_t ro = sb->s_feature_ro_compat & ~SUPP_RO_COMPAT;

	if (in & ~EXT2_LIB_FEATURE_INCOMPAT_SUPP) {
		chk_err(c, "superblock", 0, 0,
			"superblock: unknown incompatible features 0x%x (s_feature_incompat)",
			in & ~EXT2_LIB_FEATURE_INCOMPAT_SUPP);
		return 1;
	}
	if (ro & ~EXT2_LIB_FEATURE_RO_COMPAT_SUPP) {
		chk_err(c, "superblock", 0, 0,
			"superblock: unknown read-only features 0x%x (s_feature_ro_compat)",
			ro & ~EXT2_LIB_FEATURE_RO_COMPAT_SUPP);
		return 1;
	}
	if (sb->s_feature_compat & ~EXT2_LIB_FEATURE_COMPAT_SUPP)
		chk_err(c, "superblock", 0, 0,
			"superblock: unknown compatible features 0x%x (s_feature_compat)",
			sb->s_feature_compat & ~EXT2_LIB_FEATURE_COMPAT_SUPP);
	if (in & EXT3_FEATURE_INCOMPAT_RECOVER) {
		chk_err(c, "superblock", 0, 0,
			"superblock: the journal needs recovery");
		in &= ~EXT3_FEATURE_INCOMPAT_RECOVER;
	}
	/*
	 * ext3/ext4 features: e2fsck reads such an image (and reports what
	 * a damaged feature field breaks); an ext2 walk would not know what
	 * they change.  A problem that stops the walk, not an unreadable
	 * image: an XIP image cannot have them.
	 */
	if (in || ro) {
		chk_err(c, "superblock", 0, 0,
			"superblock: feature %s is not ext2 (%s 0x%x): not an XIP ext2 image",
			feature_name(in, ro),
			in ? "s_feature_incompat" : "s_feature_ro_compat",
			in ? sb->s_feature_incompat : sb->s_feature_ro_compat);
		return 1;
	}
	return 0;
}

static uint64_t sb_blocks(const struct ext2_super_block *sb)
{
	return sb->s_blocks_count;	/* 64bit is refused in sb_features() */
}

/*
 * Check the fields the geometry depends on.  Returns 0 when the image can
 * be walked, 1 when a field is reported and the walk must stop, a negative
 * errno when the bytes are not an ext2 file system at all.
 */
static const uint8_t zero_uuid[16];

/* No ext2 superblock, nor a backup: say what the image holds, if known. */
static int not_ext2(struct chk *c)
{
	uint64_t len = c->seg->size < XIP_FS_SIGNATURE_BYTES ?
			       c->seg->size : XIP_FS_SIGNATURE_BYTES;
	const char *type = NULL;
	void *head;

	if (!xip_seg_range(c->seg, 0, len, &head))
		type = xip_fs_signature(head, (size_t)len);
	return xip_error_not_ext2(-EUCLEAN, xip_seg_label(c->seg), type);
}

int xip_chk_super(struct chk *c)
{
	struct ext2_super_block *sb = &c->sb;
	const char *p = c->seg->path;
	uint64_t img_blocks, itb;
	int64_t backup;
	void *q;
	int ret;

	if (xip_seg_range(c->seg, 1024, sizeof(*sb), &q))
		return xip_error(-EUCLEAN,
				 "%s: too small to hold an ext2 superblock (%" PRIu64 " bytes)",
				 p, c->seg->size);
	memcpy(sb, q, sizeof(*sb));
	sb_to_host(sb);
	if (sb->s_magic != EXT2_SUPER_MAGIC) {
		backup = sb_find_backup(c);
		if (backup < 0)
			return not_ext2(c);
		chk_err(c, "superblock", 0, 0,
			"superblock: bad magic 0x%04x (s_magic); a backup superblock is intact at block %" PRId64,
			sb->s_magic, backup);
		return 1;
	}
	if (sb->s_rev_level > EXT2_DYNAMIC_REV) {
		chk_err(c, "superblock", 0, 0,
			"superblock: invalid revision %u (s_rev_level)",
			sb->s_rev_level);
		return 1;
	}
	if (sb->s_rev_level == EXT2_GOOD_OLD_REV) {
		sb->s_first_ino = EXT2_GOOD_OLD_FIRST_INO;
		sb->s_inode_size = EXT2_GOOD_OLD_INODE_SIZE;
		sb->s_feature_compat = sb->s_feature_incompat = 0;
		sb->s_feature_ro_compat = 0;
	}
	ret = sb_features(c);
	if (ret)
		return ret;
	if (sb->s_log_block_size > EXT2_MAX_BLOCK_LOG_SIZE - EXT2_MIN_BLOCK_LOG_SIZE) {
		chk_err(c, "superblock", 0, 0,
			"superblock: invalid block size (s_log_block_size %u)",
			sb->s_log_block_size);
		return 1;
	}
	c->bs = 1024u << sb->s_log_block_size;
	c->apb = c->bs / 4;
	c->nblocks = sb_blocks(sb);
	c->first_data = sb->s_first_data_block;
	img_blocks = c->seg->size / c->bs;
	if (c->first_data != (c->bs == 1024 ? 1u : 0u)) {
		chk_err(c, "superblock", 0, 0,
			"superblock: invalid first data block %" PRIu64 " (s_first_data_block)",
			c->first_data);
		return 1;
	}
	if (c->nblocks <= c->first_data + 1) {
		chk_err(c, "superblock", 0, 0,
			"superblock: invalid block count %" PRIu64 " (s_blocks_count)",
			c->nblocks);
		return 1;
	}
	if (c->nblocks > img_blocks) {
		chk_err(c, "superblock", 0, 0,
			"superblock: block count %" PRIu64 " (s_blocks_count) exceeds the image (%" PRIu64 " blocks of %u bytes)",
			c->nblocks, img_blocks, c->bs);
		return 1;
	}
	if (sb->s_log_cluster_size != sb->s_log_block_size) {
		chk_err(c, "superblock", 0, 0,
			"superblock: cluster size (s_log_cluster_size %u) differs from the block size",
			sb->s_log_cluster_size);
		return 1;
	}
	c->bpg = sb->s_blocks_per_group;
	if (c->bpg < 8 || c->bpg > 8 * c->bs || c->bpg % 8) {
		chk_err(c, "superblock", 0, 0,
			"superblock: invalid blocks per group %u (s_blocks_per_group)",
			c->bpg);
		return 1;
	}
	if (sb->s_clusters_per_group != c->bpg) {
		chk_err(c, "superblock", 0, 0,
			"superblock: clusters per group %u (s_clusters_per_group) differs from blocks per group %u",
			sb->s_clusters_per_group, c->bpg);
		return 1;
	}
	c->ngroups = (uint32_t)div_round_up(c->nblocks - c->first_data, c->bpg);
	c->inode_size = sb->s_inode_size;
	if (c->inode_size < EXT2_GOOD_OLD_INODE_SIZE ||
	    c->inode_size > c->bs || (c->inode_size & (c->inode_size - 1))) {
		chk_err(c, "superblock", 0, 0,
			"superblock: invalid inode size %u (s_inode_size)",
			c->inode_size);
		return 1;
	}
	c->ipg = sb->s_inodes_per_group;
	itb = div_round_up((uint64_t)c->ipg * c->inode_size, c->bs);
	if (c->ipg == 0 || c->ipg > 8 * c->bs || c->ipg % 8 ||
	    itb > c->bpg - 3) {
		chk_err(c, "superblock", 0, 0,
			"superblock: invalid inodes per group %u (s_inodes_per_group)",
			c->ipg);
		return 1;
	}
	c->itb = (uint32_t)itb;
	if ((uint64_t)c->ipg * c->ngroups != sb->s_inodes_count) {
		chk_err(c, "superblock", 0, 0,
			"superblock: inode count %u (s_inodes_count) is not %u groups (s_blocks_count %" PRIu64 ") of %u inodes",
			sb->s_inodes_count, c->ngroups, c->nblocks, c->ipg);
		return 1;
	}
	c->ninodes = sb->s_inodes_count;
	c->first_ino = sb->s_first_ino;
	if (c->first_ino < EXT2_GOOD_OLD_FIRST_INO ||
	    c->first_ino >= c->ninodes) {
		chk_err(c, "superblock", 0, 0,
			"superblock: invalid first inode %u (s_first_ino)",
			c->first_ino);
		return 1;
	}
	c->gdt_blocks = div_round_up((uint64_t)c->ngroups * EXT2_MIN_DESC_SIZE,
				     c->bs);
	c->rsv_gdt = 0;
	if (sb->s_feature_compat & EXT2_FEATURE_COMPAT_RESIZE_INODE)
		c->rsv_gdt = sb->s_reserved_gdt_blocks;
	if (c->rsv_gdt > c->apb ||
	    1 + c->gdt_blocks + c->rsv_gdt >
	    (c->nblocks - c->first_data < c->bpg ? c->nblocks - c->first_data
						 : c->bpg)) {
		chk_err(c, "superblock", 0, 0,
			"superblock: %" PRIu64 " descriptor and %" PRIu64 " reserved descriptor blocks (s_reserved_gdt_blocks) do not fit in group 0",
			c->gdt_blocks, c->rsv_gdt);
		return 1;
	}
	/* Fields the walk does not depend on: reported, the walk goes on. */
	if (!(sb->s_feature_compat & EXT3_FEATURE_COMPAT_HAS_JOURNAL) &&
	    (sb->s_journal_inum || sb->s_journal_dev ||
	     memcmp(sb->s_journal_uuid, zero_uuid, sizeof(zero_uuid))))
		chk_err(c, "superblock", 0, 0,
			"superblock: journal fields (s_journal_inum, s_journal_dev, s_journal_uuid) set without the has_journal feature");
	/* e2fsck refuses the whole image for this, 64bit or not */
	if (sb->s_desc_size > EXT2_MAX_DESC_SIZE ||
	    (sb->s_desc_size & (sb->s_desc_size - 1)))
		chk_err(c, "superblock", 0, 0,
			"superblock: invalid group descriptor size %u (s_desc_size)",
			sb->s_desc_size);
	/* e2fsck treats these inodes as quota files, in use */
	if (sb->s_usr_quota_inum || sb->s_grp_quota_inum ||
	    sb->s_prj_quota_inum)
		chk_err(c, "superblock", 0, 0,
			"superblock: quota inodes %u, %u, %u (s_usr_quota_inum, s_grp_quota_inum, s_prj_quota_inum) set without the quota feature",
			sb->s_usr_quota_inum, sb->s_grp_quota_inum,
			sb->s_prj_quota_inum);
	/* e2fsck treats that inode as the (ext4) orphan file's */
	if (sb->s_orphan_file_inum)
		chk_err(c, "superblock", 0, 0,
			"superblock: orphan file inode %u (s_orphan_file_inum) set on an ext2 file system",
			sb->s_orphan_file_inum);
	if (sb->s_free_blocks_count > c->nblocks)
		chk_err(c, "superblock", 0, 0,
			"superblock: free block count %u (s_free_blocks_count) exceeds the block count",
			sb->s_free_blocks_count);
	if (sb->s_free_inodes_count > c->ninodes)
		chk_err(c, "superblock", 0, 0,
			"superblock: free inode count %u (s_free_inodes_count) exceeds the inode count",
			sb->s_free_inodes_count);
	if (sb->s_r_blocks_count > c->nblocks / 2)
		chk_err(c, "superblock", 0, 0,
			"superblock: reserved block count %u (s_r_blocks_count) exceeds half the blocks",
			sb->s_r_blocks_count);
	if (sb->s_state & EXT2_ERROR_FS)
		chk_err(c, "superblock", 0, 0,
			"superblock: the file system is marked as having errors (s_state)");
	else if (!(sb->s_state & EXT2_VALID_FS))
		chk_warn(c, "superblock", 0, 0,
			 "superblock: the file system was not cleanly unmounted or a write did not finish (s_state): run e2fsck -fy before writing");
	return 0;
}

/* ---- group descriptors and the metadata they place ---------------------- */


const char *xip_chk_meta_kind(struct chk *c, uint64_t blk)
{
	uint32_t g;
	uint64_t first;

	if (blk < c->first_data)
		return "boot block";
	g = (uint32_t)((blk - c->first_data) / c->bpg);
	first = group_first(c, g);
	if (g < c->ngroups && c->gd) {
		const struct ext2_group_desc *d = &c->gd[g];

		if (blk == d->bg_block_bitmap)
			return "block bitmap";
		if (blk == d->bg_inode_bitmap)
			return "inode bitmap";
		if (blk >= d->bg_inode_table &&
		    blk < (uint64_t)d->bg_inode_table + c->itb)
			return "inode table";
	}
	if (sb_has_super(c, g)) {
		if (blk == first)
			return "superblock";
		if (blk <= first + c->gdt_blocks)
			return "group descriptors";
		if (blk <= first + c->gdt_blocks + c->rsv_gdt)
			return "reserved group descriptors";
	}
	return "metadata";
}


/* Blocks of the superblock copy and descriptors at the start of group @g. */
uint64_t xip_chk_super_blocks(const struct chk *c, uint32_t g)
{
	uint64_t first = group_first(c, g), end = group_end(c, g);
	uint64_t n = 1 + c->gdt_blocks + c->rsv_gdt;

	if (!(c->gstate[g] & G_SUPER))
		return 0;
	return n < end - first ? n : end - first;
}

/*
 * The first block of [blk, blk + count) inside group @g that is already
 * metadata of the group, UINT64_MAX when none: the metadata of a group lies
 * inside it (place_meta() makes sure), so its ranges are all to look at.
 */
static uint64_t meta_overlap(const struct chk *c, uint32_t g, uint64_t blk,
			     uint64_t count)
{
	const struct ext2_group_desc *d = &c->gd[g];
	uint64_t r[4][2], best = UINT64_MAX, first = group_first(c, g);
	int n = 0;

	r[n][0] = first;
	r[n++][1] = first + xip_chk_super_blocks(c, g);
	if (c->gstate[g] & G_BB_OK) {
		r[n][0] = d->bg_block_bitmap;
		r[n++][1] = (uint64_t)d->bg_block_bitmap + 1;
	}
	if (c->gstate[g] & G_IB_OK) {
		r[n][0] = d->bg_inode_bitmap;
		r[n++][1] = (uint64_t)d->bg_inode_bitmap + 1;
	}
	if (c->gstate[g] & G_IT_OK) {
		r[n][0] = d->bg_inode_table;
		r[n++][1] = (uint64_t)d->bg_inode_table + c->itb;
	}
	for (int i = 0; i < n; i++) {
		uint64_t from = r[i][0] > blk ? r[i][0] : blk;

		if (r[i][0] < r[i][1] && r[i][0] < blk + count &&
		    r[i][1] > blk && from < best)
			best = from;
	}
	return best;
}


/* Whether block @blk is group metadata (or before the first group). */
bool xip_chk_is_meta(const struct chk *c, uint64_t blk)
{
	if (blk < c->first_data)
		return true;
	if (blk >= c->nblocks)
		return false;
	return meta_in_group(c, blk_group(c, blk), blk);
}

/* Place one piece of group metadata; report it when it is misplaced. */
static bool place_meta(struct chk *c, uint32_t g, const char *what,
		       uint64_t blk, uint64_t count)
{
	uint64_t first = group_first(c, g), end = group_end(c, g), b;

	if (blk >= c->nblocks || count > c->nblocks - blk) {
		chk_err(c, "group", 0, blk,
			"group %u: %s at block %" PRIu64 " beyond end of image",
			g, what, blk);
		return false;
	}
	if (blk < first || blk + count > end) {
		chk_err(c, "group", 0, blk,
			"group %u: %s at block %" PRIu64 " outside the group (blocks %" PRIu64 "-%" PRIu64 ")",
			g, what, blk, first, end - 1);
		return false;
	}
	b = meta_overlap(c, g, blk, count);
	if (b != UINT64_MAX) {
		chk_err(c, "group", 0, b,
			"group %u: %s at block %" PRIu64 " overlaps the %s of group %u",
			g, what, b, xip_chk_meta_kind(c, b),
			block_group(c, b));
		return false;
	}
	return true;
}

int xip_chk_groups(struct chk *c)
{
	uint64_t gdt = c->first_data + 1;
	void *p;

	if (xip_seg_range(c->seg, gdt * c->bs,
			      (uint64_t)c->ngroups * EXT2_MIN_DESC_SIZE, &p)) {
		chk_err(c, "group", 0, gdt,
			"group descriptors: beyond end of image");
		return 1;
	}
	c->gd = xip_chk_calloc(c, c->ngroups, sizeof(*c->gd));
	c->gstate = xip_chk_calloc(c, c->ngroups, 1);
	if (!c->gd || !c->gstate)
		return -ENOMEM;
	if (xip_chk_pread(c, c->gd, (size_t)c->ngroups * sizeof(*c->gd),
		      gdt * c->bs)) {
		chk_err(c, "group", 0, gdt,
			"group descriptors: cannot be read");
		return 1;
	}
	for (uint32_t g = 0; g < c->ngroups; g++) {
		gd_to_host(&c->gd[g]);
		if (sb_has_super(c, g))
			c->gstate[g] |= G_SUPER;
	}
	for (uint32_t g = 0; g < c->ngroups; g++) {
		struct ext2_group_desc *d = &c->gd[g];

		if (place_meta(c, g, "block bitmap", d->bg_block_bitmap, 1))
			c->gstate[g] |= G_BB_OK;
		if (place_meta(c, g, "inode bitmap", d->bg_inode_bitmap, 1))
			c->gstate[g] |= G_IB_OK;
		if (place_meta(c, g, "inode table", d->bg_inode_table, c->itb))
			c->gstate[g] |= G_IT_OK;
		if ((d->bg_flags & (EXT2_BG_INODE_UNINIT | EXT2_BG_BLOCK_UNINIT)) ||
		    d->bg_itable_unused)
			chk_err(c, "group", 0, 0,
				"group %u: marked uninitialised (bg_flags 0x%x, bg_itable_unused %u) without uninit_bg",
				g, d->bg_flags, d->bg_itable_unused);
	}
	return 0;
}
