// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The read side of the engine: a read-only ext2 reader that needs nothing
 * but libc (see fsread.h).  Superblock, group descriptors, inodes, block
 * maps (direct, indirect, double and triple indirect), extent trees,
 * directories, symlinks and path lookup.  Every byte comes from the image
 * and is treated as hostile: every block number is checked against the
 * block count, the file system's metadata and the segment before a
 * pointer is formed from it.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsread.h"

#define U64(x) ((unsigned long long)(x))
#define SB_OFFSET 1024
#define LOCK_TIMEOUT_MS 5000
#define XIP_MAXSYMLINKS 40

/* ext2 on-disk values this file uses (the kernel's and e2fsprogs' names) */
#define SB_MAGIC		0xEF53
#define INCOMPAT_FILETYPE	0x0002
#define INCOMPAT_META_BG	0x0010
#define INCOMPAT_EXTENTS	0x0040
#define INCOMPAT_64BIT		0x0080
#define INCOMPAT_FLEX_BG	0x0200
#define INCOMPAT_LARGEDIR	0x4000
#define INCOMPAT_INLINE_DATA	0x8000
/* what this reader reads: compression, journal devices, dirdata not */
#define INCOMPAT_READ		(0x0002 | 0x0004 | 0x0010 | 0x0040 | 0x0080 | \
				 0x0100 | 0x0200 | 0x0400 | 0x2000 | 0x4000 | \
				 0x8000 | 0x10000 | 0x20000)
#define RO_SPARSE_SUPER		0x0001
#define RO_HUGE_FILE		0x0008
#define COMPAT_SPARSE_SUPER2	0x0200
#define FL_HUGE_FILE		0x00040000
#define FL_EXTENTS		0x00080000
#define FL_INLINE_DATA		0x10000000
#define EXT_HDR_MAGIC		0xF30A
#define EXT_DEPTH_MAX		5
#define EXT_LEN_INIT_MAX	32768U
#define NDIR_BLOCKS		12
#define IND_BLOCK		12
#define ROOT_INO		2
#define NAME_LEN		255
#define GOOD_OLD_INODE_SIZE	128

static uint64_t blocks_for(uint64_t size, uint64_t bs)
{
	return size / bs + (size % bs != 0);
}

static uint16_t le16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static uint32_t le32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

/* ---- superblock --------------------------------------------------------- */

static uint64_t sb_blocks_count(const struct ext2_super_block *sb)
{
	uint64_t n = le32toh(sb->s_blocks_count);

	if (le32toh(sb->s_feature_incompat) & INCOMPAT_64BIT)
		n |= (uint64_t)le32toh(sb->s_blocks_count_hi) << 32;
	return n;
}

/*
 * The checks the kernel makes in ext2_fill_super() before it trusts the
 * geometry, plus the image size against the block count.  This also
 * bounds every allocation made from superblock fields by the image size.
 */
static int check_superblock(struct xip_segment *seg,
			    const struct ext2_super_block **sbp)
{
	const struct ext2_super_block *sb = NULL;
	uint64_t blocks, bs, groups;
	const char *p = seg->path;

	if (segment_range(seg, SB_OFFSET, sizeof(*sb), (void **)&sb))
		return xip_error(-EUCLEAN,
				 "%s: too small to hold an ext2 superblock (%" PRIu64 " bytes)",
				 p, seg->size);
	*sbp = sb;
	if (sb->s_magic != SB_MAGIC)
		return xip_error(-EUCLEAN,
				 "%s: no ext2 superblock (bad magic 0x%04x)", p,
				 sb->s_magic);
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
	groups = (blocks - sb->s_first_data_block + sb->s_blocks_per_group - 1) /
		 sb->s_blocks_per_group;
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
	fs->groups = (uint32_t)((fs->blocks - fs->first_data_block + fs->bpg - 1) /
				fs->bpg);
	fs->inode_size = sb->s_rev_level == EXT2_DYNAMIC_REV ?
			 sb->s_inode_size : GOOD_OLD_INODE_SIZE;
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
	if (fs->feat_incompat & INCOMPAT_64BIT) {
		fs->desc_size = sb->s_desc_size;
		if (fs->desc_size < 64 || fs->desc_size > fs->block_size ||
		    (fs->desc_size & (fs->desc_size - 1)))
			return xip_error(-EUCLEAN,
					 "%s: group descriptors: invalid descriptor size %u",
					 p, fs->desc_size);
	}
	dpb = fs->block_size / fs->desc_size;
	fs->desc_blocks = (fs->groups + dpb - 1) / dpb;
	fs->first_meta_bg = sb->s_first_meta_bg;
	fs->reserved_gdt = sb->s_reserved_gdt_blocks;
	fs->backup_bgs[0] = sb->s_backup_bgs[0];
	fs->backup_bgs[1] = sb->s_backup_bgs[1];
	fs->itb_per_group = ((uint64_t)fs->ipg * fs->inode_size +
			     fs->block_size - 1) / fs->block_size;
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
	if (fs->feat_compat & COMPAT_SPARSE_SUPER2)
		return g == fs->backup_bgs[0] || g == fs->backup_bgs[1];
	if (g == 1 || !(fs->feat_ro & RO_SPARSE_SUPER))
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

	if (!(fs->feat_incompat & INCOMPAT_META_BG) || mb < fs->first_meta_bg)
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
	    segment_range(fs->seg, blk * fs->block_size +
			  (uint64_t)(g % dpb) * fs->desc_size, fs->desc_size,
			  (void **)&d))
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
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct xip_fs_range *r = realloc(l->r, cap * sizeof(*r));

		if (!r)
			return xip_error(-ENOMEM, "out of memory");
		l->r = r;
		l->cap = cap;
	}
	l->r[l->n].start = blk;
	l->r[l->n].end = blk + num;
	l->n++;
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct xip_fs_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
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
	bool meta_bg = fs->feat_incompat & INCOMPAT_META_BG;
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
			if (!(fs->feat_incompat & INCOMPAT_FLEX_BG)) {
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

int xip_fs_open(struct xip_segment *seg, int flags, struct xip_fs **fsp)
{
	const struct ext2_super_block *sb = NULL;
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
	ret = fs_geometry(fs, sb);
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

int xip_image_open_segment_read(struct xip_segment *seg, int flags,
				struct xip_image **imgp)
{
	struct xip_image *img;
	int ret = 0;

	*imgp = NULL;
	img = calloc(1, sizeof(*img));
	if (!img) {
		segment_close(seg);
		return xip_error(-ENOMEM, "out of memory");
	}
	img->seg = seg;
	if (!(flags & XIP_IMG_NOLOCK))
		ret = segment_lock(seg, false, LOCK_TIMEOUT_MS);
	if (!ret)
		ret = xip_fs_open(seg, (flags & XIP_IMG_FORCE) ?
				  XIP_FS_NO_DESC_CHECK : 0, &img->rd);
	if (ret) {
		int saved = xip_errcode();
		char msg[XIP_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", xip_errmsg());
		xip_image_close(img);
		xip_error(saved ? saved : ret, "%s", msg);
		return ret;
	}
	img->block_size = img->rd->block_size;
	*imgp = img;
	return 0;
}

int xip_image_open_read(const char *spec, int flags, struct xip_image **imgp)
{
	struct xip_segment *seg;
	int ret;

	*imgp = NULL;
	ret = segment_open(spec, 0, &seg);
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
	segment_close(img->seg);
	free(img);
	return ret;
}

void xip_image_abandon(struct xip_image *img)
{
	if (img && img->seg)
		segment_release(img->seg);
}

int xip_image_xip_capable(const struct xip_image *img, unsigned int page_size,
			  char *why, size_t whylen)
{
	unsigned int bs = img->block_size;

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
	if (img->seg->size % page_size) {
		snprintf(why, whylen,
			 "image size %" PRIu64 " is not a multiple of the page size %u",
			 img->seg->size, page_size);
		return 0;
	}
	return 1;
}

/* ---- inodes ------------------------------------------------------------- */

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
	if (segment_range(fs->seg, off, fs->inode_size, &p))
		return xip_error(-EUCLEAN, "inode %u: outside the segment %s",
				 ino, fs->seg->path);
	n = fs->inode_size < sizeof(*inode) ? fs->inode_size : sizeof(*inode);
	memset(inode, 0, sizeof(*inode));
	memcpy(inode, p, n);
	if (fs->inode_size <= GOOD_OLD_INODE_SIZE)
		inode->i_extra_isize = 0;
	return 0;
}

int inode_read_checked(struct xip_image *img, ext2_ino_t ino,
		       struct ext2_inode_large *inode)
{
	return xip_fs_read_inode(img->rd, ino, inode);
}

int xip_read_inode(struct xip_image *img, ext2_ino_t ino,
		   struct ext2_inode_large *inode)
{
	return inode_read_checked(img, ino, inode);
}

uint64_t xip_fs_inode_size(const struct xip_fs *fs,
			   const struct ext2_inode_large *in)
{
	if (LINUX_S_ISREG(in->i_mode) ||
	    (LINUX_S_ISDIR(in->i_mode) && (fs->feat_incompat & INCOMPAT_LARGEDIR)))
		return EXT2_I_SIZE(in);
	return in->i_size;
}

/* ---- blocks ------------------------------------------------------------- */

int engine_check_block(struct xip_image *img, ext2_ino_t ino, blk64_t blk,
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

int engine_block_ptr(struct xip_image *img, ext2_ino_t ino, blk64_t blk,
		     void **ptr)
{
	struct xip_segment *seg = img->seg;
	uint64_t bs = img->block_size;
	int ret;

	if (blk >= img->rd->blocks)
		return xip_error(-EUCLEAN, "inode %u: block %llu beyond end of image",
				 ino, U64(blk));
	if (bs == seg->page_size && bs % 512 == 0)
		ret = segment_direct_access(seg, blk * (bs / 512), ptr);
	else
		ret = segment_range(seg, blk * bs, bs, ptr);
	if (ret)
		return xip_error(ret, "inode %u: block %llu: outside the segment %s",
				 ino, U64(blk), seg->path);
	return 0;
}

/* ---- extent-mapped files ------------------------------------------------ */

static int ext_add(struct xip_map *m, size_t *cap, uint64_t lblk,
		   uint64_t pblk, uint32_t len)
{
	struct xip_fs *fs = m->img->rd;
	struct xip_run *r;
	bool meta;
	int ret;

	if (m->next && lblk < m->ext[m->next - 1].lblk + m->ext[m->next - 1].len)
		return xip_error(-EUCLEAN,
				 "inode %u: extents out of order at file block %llu",
				 m->ino, U64(lblk));
	if (pblk < fs->first_data_block || pblk >= fs->blocks ||
	    len > fs->blocks - pblk)
		return xip_error(-EUCLEAN,
				 "inode %u: extent of %u blocks at block %llu (file block %llu) beyond end of image",
				 m->ino, len, U64(pblk), U64(lblk));
	ret = xip_fs_meta_overlaps(fs, pblk, len, &meta);
	if (ret)
		return ret;
	if (meta)
		return xip_error(-EUCLEAN,
				 "inode %u: extent at block %llu (file block %llu) overlaps file system metadata",
				 m->ino, U64(pblk), U64(lblk));
	if (m->next == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;

		r = realloc(m->ext, ncap * sizeof(*r));
		if (!r)
			return xip_error(-ENOMEM, "out of memory");
		m->ext = r;
		*cap = ncap;
	}
	r = &m->ext[m->next++];
	r->lblk = lblk;
	r->pblk = pblk;
	r->len = len;
	return 0;
}

struct ext_walk {
	struct xip_map *m;
	size_t cap;
	uint64_t steps, limit;
};

static int ext_bad(struct xip_map *m, const char *why, uint64_t blk)
{
	if (blk)
		return xip_error(-EUCLEAN,
				 "inode %u: extent tree: %s (node at block %llu)",
				 m->ino, why, U64(blk));
	return xip_error(-EUCLEAN, "inode %u: extent tree: %s (in the inode)",
			 m->ino, why);
}

/*
 * One node of the tree, @size bytes at @p (the inode's i_block or a tree
 * block @blk), expected at depth @depth (-1: the root, any depth).
 */
static int ext_node(struct ext_walk *w, const uint8_t *p, size_t size,
		    uint64_t blk, int depth)
{
	struct xip_map *m = w->m;
	uint16_t magic = le16(p), entries = le16(p + 2), max = le16(p + 4);
	uint16_t d = le16(p + 6);
	size_t cap = (size - 12) / 12;
	int ret;

	if (magic != EXT_HDR_MAGIC)
		return ext_bad(m, "bad header magic", blk);
	if (max == 0 || max > cap || entries > max)
		return ext_bad(m, "entry counts out of bounds", blk);
	if (d > EXT_DEPTH_MAX || (depth >= 0 && d != depth))
		return ext_bad(m, "bad depth", blk);
	for (unsigned int i = 0; i < entries; i++) {
		const uint8_t *e = p + 12 + 12 * (size_t)i;

		if (++w->steps > w->limit)
			return xip_error(-EUCLEAN, "inode %u: extent tree loops",
					 m->ino);
		if (d == 0) {
			uint32_t len = le16(e + 4);
			uint64_t pblk = le32(e + 8) |
					((uint64_t)le16(e + 6) << 32);

			if (len > EXT_LEN_INIT_MAX) {
				m->uninit = true; /* unwritten: reads as a hole */
				continue;
			}
			if (!len)
				continue;
			ret = ext_add(m, &w->cap, le32(e), pblk, len);
		} else {
			uint64_t child = le32(e + 4) |
					 ((uint64_t)le16(e + 8) << 32);
			void *c;

			ret = engine_check_block(m->img, m->ino, child,
						 "extent tree block", le32(e));
			if (!ret)
				ret = engine_block_ptr(m->img, m->ino, child, &c);
			if (!ret)
				ret = ext_node(w, c, m->img->block_size, child,
					       d - 1);
		}
		if (ret)
			return ret;
	}
	return 0;
}

/* Read the leaves of the extent tree (from the segment) once. */
int map_ext_load(struct xip_map *m)
{
	struct ext_walk w = { m, m->ext_cap, 0, m->img->rd->blocks * 4 + 64 };
	int ret;

	m->next = 0;
	m->uninit = false;
	/* all of i_block zero: an empty tree not yet written (libext2fs) */
	for (size_t i = 0; i < EXT2_N_BLOCKS; i++)
		if (m->inode.i_block[i])
			goto walk;
	return 0;
walk:
	ret = ext_node(&w, (const uint8_t *)m->inode.i_block,
		       sizeof(m->inode.i_block), 0, -1);
	m->ext_cap = w.cap;
	return ret;
}

static int ext_map(struct xip_map *m, uint64_t lblk, blk64_t *pblk,
		   uint64_t *count)
{
	size_t lo = 0, hi = m->next;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct xip_run *r = &m->ext[mid];

		if (lblk < r->lblk) {
			hi = mid;
		} else if (lblk >= r->lblk + r->len) {
			lo = mid + 1;
		} else {
			*pblk = r->pblk + (lblk - r->lblk);
			*count = r->len - (lblk - r->lblk);
			return 0;
		}
	}
	/* a hole up to the next extent */
	*pblk = 0;
	*count = lo < m->next ? m->ext[lo].lblk - lblk : map_limit(m) - lblk;
	if (!*count)
		*count = 1;
	return 0;
}

/* ---- block-mapped files ------------------------------------------------- */

uint64_t map_limit(const struct xip_map *m)
{
	uint64_t a = m->apb, n;

	if (m->extents || m->nomap)
		return 1ULL << 32;
	n = NDIR_BLOCKS + a + a * a + a * a * a;
	return n < (1ULL << 32) ? n : 1ULL << 32;
}

int map_ind_ptr(struct xip_map *m, int slot, blk64_t blk, uint64_t lblk,
		   uint32_t **ptr)
{
	int ret;

	if (m->cache[slot].ptr && m->cache[slot].blk == blk) {
		*ptr = m->cache[slot].ptr;
		return 0;
	}
	ret = engine_check_block(m->img, m->ino, blk, "indirect block", lblk);
	if (!ret)
		ret = engine_block_ptr(m->img, m->ino, blk, (void **)ptr);
	if (ret)
		return ret;
	m->cache[slot].blk = blk;
	m->cache[slot].ptr = *ptr;
	return 0;
}

/*
 * How many entries from @slot on continue the physical run of @blk (at
 * most @max); each of them is validated too, through the window cache.
 */
static int ind_run(struct xip_map *m, const uint32_t *slot, bool le,
		   uint64_t max, blk64_t blk, uint64_t lblk, uint64_t *count)
{
	uint64_t k = 1;
	int ret;

	while (k < max && (le ? le32toh(slot[k]) : slot[k]) == blk + k)
		k++;
	for (uint64_t i = 0; i < k; i++) {
		ret = engine_check_block(m->img, m->ino, blk + i, "block",
					 lblk + i);
		if (ret) {
			if (!i)
				return ret;
			k = i;	/* report the bad one when it is reached */
			break;
		}
	}
	*count = k;
	return 0;
}

static int ind_map(struct xip_map *m, uint64_t lblk, blk64_t *pblk,
		   uint64_t *count)
{
	uint64_t apb = m->apb, rel, span;
	unsigned int depth = 1;
	uint32_t *p;
	blk64_t blk;
	int ret;

	*pblk = 0;
	*count = 1;
	if (lblk < NDIR_BLOCKS) {
		blk = m->inode.i_block[lblk];
		if (!blk)
			return 0;
		ret = ind_run(m, &m->inode.i_block[lblk], false,
			      NDIR_BLOCKS - lblk, blk, lblk, count);
		if (!ret)
			*pblk = blk;
		return ret;
	}
	rel = lblk - NDIR_BLOCKS;
	span = apb;
	while (rel >= span) {
		rel -= span;
		if (++depth > 3)
			return xip_error(-EFBIG,
					 "inode %u: file block %llu beyond the largest a block map holds",
					 m->ino, U64(lblk));
		span *= apb;
	}
	blk = m->inode.i_block[IND_BLOCK + depth - 1];
	p = NULL;
	for (unsigned int level = 0; level < depth; level++) {
		if (!blk) {
			*count = span - rel;
			return 0;
		}
		ret = map_ind_ptr(m, (int)(depth * (depth - 1) / 2 + level), blk,
			      lblk, &p);
		if (ret)
			return ret;
		span /= apb;
		blk = le32toh(p[rel / span]);
		rel %= span;
	}
	if (!blk)
		return 0;
	/* p is the last indirect block; the run stays inside it */
	rel = (lblk - NDIR_BLOCKS) % apb;
	ret = ind_run(m, &p[rel], true, apb - rel, blk, lblk, count);
	if (!ret)
		*pblk = blk;
	return ret;
}

/* ---- the map of one inode ----------------------------------------------- */

static int map_check_flags(struct xip_map *m)
{
	uint32_t incompat = m->img->rd->feat_incompat;
	uint32_t fl = m->inode.i_flags;

	if (fl & FL_INLINE_DATA) {
		if (!(incompat & INCOMPAT_INLINE_DATA))
			return xip_error(-EUCLEAN,
					 "inode %u: inline-data flag set but the image lacks the inline_data feature",
					 m->ino);
		return xip_error(-EOPNOTSUPP,
				 "inode %u: inline data is not supported",
				 m->ino);
	}
	if (fl & FL_EXTENTS) {
		if (!(incompat & INCOMPAT_EXTENTS))
			return xip_error(-EUCLEAN,
					 "inode %u: extents flag set but the image lacks the extents feature",
					 m->ino);
		m->extents = true;
	}
	return 0;
}

/* A symlink whose target is kept in i_block itself. */
static bool fast_symlink(const struct ext2_inode_large *in)
{
	uint64_t size = EXT2_I_SIZE(in);

	return LINUX_S_ISLNK(in->i_mode) && size && size < sizeof(in->i_block);
}

int map_open(struct xip_image *img, ext2_ino_t ino, struct xip_map *m)
{
	uint16_t mode;
	int ret;

	memset(m, 0, sizeof(*m));
	m->img = img;
	m->ino = ino;
	m->apb = img->block_size / sizeof(uint32_t);
	ret = inode_read_checked(img, ino, &m->inode);
	if (ret)
		return ret;
	mode = m->inode.i_mode;
	if (!LINUX_S_ISREG(mode) && !LINUX_S_ISDIR(mode) &&
	    !LINUX_S_ISLNK(mode)) {
		/* devices keep their numbers in i_block: nothing to map */
		m->nomap = true;
		return 0;
	}
	ret = map_check_flags(m);
	if (ret)
		return ret;
	if (LINUX_S_ISLNK(mode) && !m->extents &&
	    fast_symlink(&m->inode)) {
		m->nomap = true;
		return 0;
	}
	if (m->extents) {
		ret = map_ext_load(m);
		if (ret)
			map_close(m);
	}
	return ret;
}

void map_close(struct xip_map *m)
{
	/* uncommitted: the old tree is still linked, nothing is freed */
	free(m->defer);
	m->defer = NULL;
	m->ndefer = 0;
	free(m->ext);
	m->ext = NULL;
	m->next = 0;
	m->ext_cap = 0;
}

int map_block(struct xip_map *m, uint64_t lblk, blk64_t *pblk,
	      uint64_t *count)
{
	uint64_t limit = map_limit(m);

	*pblk = 0;
	*count = 1;
	if (lblk >= limit)
		return xip_error(-EFBIG,
				 "inode %u: file block %llu beyond the largest the image can map",
				 m->ino, U64(lblk));
	if (m->nomap) {
		*count = limit - lblk;
		return 0;
	}
	if (m->extents)
		return ext_map(m, lblk, pblk, count);
	return ind_map(m, lblk, pblk, count);
}

/* ---- the public read engine: bmap and runs ----------------------------- */

int xip_bmap(struct xip_image *img, ext2_ino_t ino, uint64_t pgoff,
	     blk64_t *pblk)
{
	struct xip_map m;
	uint64_t n;
	int ret;

	*pblk = 0;
	ret = map_open(img, ino, &m);
	if (ret)
		return ret;
	ret = map_block(&m, pgoff, pblk, &n);
	map_close(&m);
	return ret;
}

static int runs_add(struct xip_run **runs, size_t *n, size_t *cap,
		    uint64_t lblk, blk64_t pblk, uint64_t len)
{
	struct xip_run *r;

	if (*n) {
		r = &(*runs)[*n - 1];
		if (r->lblk + r->len == lblk && r->pblk + r->len == pblk) {
			r->len += len;
			return 0;
		}
	}
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;

		r = realloc(*runs, ncap * sizeof(*r));
		if (!r)
			return xip_error(-ENOMEM, "out of memory");
		*runs = r;
		*cap = ncap;
	}
	r = &(*runs)[(*n)++];
	r->lblk = lblk;
	r->pblk = pblk;
	r->len = len;
	return 0;
}

int map_runs(struct xip_map *m, uint64_t end, struct xip_run **runs,
	     size_t *nruns)
{
	uint64_t lblk = 0, n, mapped = 0;
	uint64_t most = m->img->rd->blocks;
	size_t cap = 0;
	blk64_t pblk;
	int ret = 0;

	*runs = NULL;
	*nruns = 0;
	if (end > map_limit(m))
		end = map_limit(m);
	while (lblk < end && !ret) {
		ret = map_block(m, lblk, &pblk, &n);
		if (ret)
			break;
		if (n > end - lblk)
			n = end - lblk;
		/*
		 * A file cannot own more blocks than the image has: a map
		 * that repeats blocks would otherwise make runs without
		 * bound.
		 */
		if (pblk && (mapped += n) > most)
			ret = xip_error(-EUCLEAN,
					"inode %u: maps more blocks than the image holds (%llu)",
					m->ino, U64(most));
		else if (pblk)
			ret = runs_add(runs, nruns, &cap, lblk, pblk, n);
		lblk += n;
	}
	if (ret) {
		free(*runs);
		*runs = NULL;
		*nruns = 0;
	}
	return ret;
}

int xip_file_runs(struct xip_image *img, ext2_ino_t ino,
		  struct xip_run **runs, size_t *nruns)
{
	uint64_t bs = img->block_size, size;
	struct xip_map m;
	int ret;

	*runs = NULL;
	*nruns = 0;
	ret = map_open(img, ino, &m);
	if (ret)
		return ret;
	size = EXT2_I_SIZE(&m.inode);
	ret = map_runs(&m, size / bs + (size % bs != 0), runs, nruns);
	map_close(&m);
	return ret;
}

/* ---- directories -------------------------------------------------------- */

/* Called per live entry; a non-zero return stops the scan with it. */
typedef int (*dirent_fn)(void *ctx, ext2_ino_t ino, const char *name,
			 unsigned int len, unsigned int type);

/* A directory entry's record length (64 KiB blocks encode it). */
static unsigned int rec_len(unsigned int bs, uint16_t raw)
{
	if (bs < 65536)
		return raw;
	if (raw == 65535 || raw == 0)
		return bs;
	return (raw & 65532) | ((raw & 3) << 16);
}

static int dir_block_scan(struct xip_map *m, uint64_t lblk, const uint8_t *p,
			  dirent_fn fn, void *ctx)
{
	struct xip_fs *fs = m->img->rd;
	unsigned int bs = m->img->block_size, off = 0, rec, nlen;
	bool filetype = fs->feat_incompat & INCOMPAT_FILETYPE;
	uint32_t ino;
	int ret;

	while (off < bs) {
		if (bs - off < 8)
			goto corrupt;
		/* inode (32), rec_len (16), name_len (8), file type (8) */
		ino = le32(p + off);
		rec = rec_len(bs, le16(p + off + 4));
		nlen = p[off + 6];
		if (rec < 8 || rec % 4 || rec > bs - off || nlen + 8 > rec)
			goto corrupt;
		if (ino) {
			if (ino > fs->inodes_count || !nlen)
				goto corrupt;
			ret = fn(ctx, ino, (const char *)p + off + 8, nlen,
				 filetype ? p[off + 7] : 0);
			if (ret)
				return ret;
		}
		off += rec;
	}
	return 0;
corrupt:
	return xip_error(-EUCLEAN,
			 "directory inode %u: block %llu: corrupt entry at offset %u",
			 m->ino, U64(lblk), off);
}

/*
 * The blocks of one directory seen so far (an open-addressing set).  A
 * block the map hands out twice is corruption, and without this check a
 * block map that points back at itself lists the same entries without
 * bound.
 */
struct dir_seen {
	blk64_t first;
	blk64_t *set;		/* 0: empty slot */
	size_t n, cap;
};

static size_t seen_slot(const struct dir_seen *s, blk64_t blk)
{
	size_t i = (size_t)((blk * 0x9E3779B97F4A7C15ULL) >> 20) & (s->cap - 1);

	while (s->set[i] && s->set[i] != blk)
		i = (i + 1) & (s->cap - 1);
	return i;
}

static int seen_insert(struct dir_seen *s, blk64_t blk)
{
	if (2 * (s->n + 1) > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		blk64_t *old = s->set, *set = calloc(cap, sizeof(*set));
		size_t ocap = s->cap;

		if (!set)
			return xip_error(-ENOMEM, "out of memory");
		s->set = set;
		s->cap = cap;
		for (size_t i = 0; i < ocap; i++)
			if (old[i])
				s->set[seen_slot(s, old[i])] = old[i];
		free(old);
	}
	s->set[seen_slot(s, blk)] = blk;
	s->n++;
	return 0;
}

static int dir_seen_add(struct xip_map *m, struct dir_seen *s, blk64_t pblk,
			uint64_t lblk)
{
	int ret;

	if (!s->first) {
		s->first = pblk;	/* most directories stop here */
		return 0;
	}
	if (!s->set) {
		ret = seen_insert(s, s->first);
		if (ret)
			return ret;
	}
	/* engine_check_block() has made pblk a data block: never 0 */
	if (s->set[seen_slot(s, pblk)] == pblk)
		return xip_error(-EUCLEAN,
				 "directory inode %u: block %llu mapped twice (again at file block %llu)",
				 m->ino, U64(pblk), U64(lblk));
	return seen_insert(s, pblk);
}

static int dir_scan(struct xip_image *img, ext2_ino_t dir, dirent_fn fn,
		    void *ctx)
{
	struct dir_seen seen = { 0, NULL, 0, 0 };
	uint64_t lblk = 0, end, n;
	struct xip_map m;
	blk64_t pblk;
	void *p;
	int ret;

	ret = map_open(img, dir, &m);
	if (ret)
		return ret;
	if (!LINUX_S_ISDIR(m.inode.i_mode)) {
		map_close(&m);
		return xip_error(-ENOTDIR, "inode %u: not a directory", dir);
	}
	end = blocks_for(xip_fs_inode_size(img->rd, &m.inode), img->block_size);
	while (lblk < end) {
		ret = map_block(&m, lblk, &pblk, &n);
		if (ret)
			break;
		if (!pblk) {
			lblk += n;
			continue;
		}
		ret = dir_seen_add(&m, &seen, pblk, lblk);
		if (!ret)
			ret = engine_block_ptr(img, dir, pblk, &p);
		if (!ret)
			ret = dir_block_scan(&m, lblk, p, fn, ctx);
		if (ret)
			break;
		lblk++;
	}
	free(seen.set);
	map_close(&m);
	return ret;
}

struct find_ctx {
	const char *name;
	unsigned int len;
	ext2_ino_t ino;
};

static int find_fn(void *ctx, ext2_ino_t ino, const char *name,
		   unsigned int len, unsigned int type)
{
	struct find_ctx *f = ctx;

	(void)type;
	if (len != f->len || memcmp(name, f->name, len))
		return 0;
	f->ino = ino;
	return 1;
}

/* 0 and *ino, -ENOENT (no error record), or another error. */
int xip_dir_find(struct xip_image *img, ext2_ino_t dir, const char *name,
		 unsigned int len, ext2_ino_t *ino)
{
	struct find_ctx f = { name, len, 0 };
	int ret = dir_scan(img, dir, find_fn, &f);

	if (ret < 0)
		return ret;
	if (!f.ino)
		return -ENOENT;
	*ino = f.ino;
	return 0;
}

struct list_ctx {
	struct xip_dirent *ents;
	size_t n, cap;
};

static int list_fn(void *ctx, ext2_ino_t ino, const char *name,
		   unsigned int len, unsigned int type)
{
	struct list_ctx *l = ctx;
	struct xip_dirent *e;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;

		e = realloc(l->ents, cap * sizeof(*e));
		if (!e)
			return xip_error(-ENOMEM, "out of memory");
		l->ents = e;
		l->cap = cap;
	}
	e = &l->ents[l->n++];
	e->ino = ino;
	e->type = type;
	memcpy(e->name, name, len);
	e->name[len] = '\0';
	return 0;
}

int xip_dir_list(struct xip_image *img, ext2_ino_t ino,
		 struct xip_dirent **ents, size_t *nents)
{
	struct list_ctx l = { NULL, 0, 0 };
	int ret = dir_scan(img, ino, list_fn, &l);

	if (ret) {
		free(l.ents);
		*ents = NULL;
		*nents = 0;
		return ret;
	}
	*ents = l.ents;
	*nents = l.n;
	return 0;
}

/* ---- symlinks ----------------------------------------------------------- */

int xip_readlink(struct xip_image *img, ext2_ino_t ino, char *buf, size_t len)
{
	struct xip_map m;
	uint64_t size, n;
	blk64_t pblk;
	void *p;
	int ret;

	ret = map_open(img, ino, &m);
	if (ret)
		return ret;
	size = EXT2_I_SIZE(&m.inode);
	if (!LINUX_S_ISLNK(m.inode.i_mode)) {
		ret = xip_error(-EINVAL, "inode %u: not a symbolic link", ino);
	} else if (size >= len || size >= img->block_size) {
		ret = xip_error(-ENAMETOOLONG,
				"inode %u: symbolic link of %llu bytes is too long",
				ino, U64(size));
	} else if (m.nomap) {
		memcpy(buf, m.inode.i_block, size);
		buf[size] = '\0';
	} else {
		ret = map_block(&m, 0, &pblk, &n);
		if (!ret && !pblk)
			ret = xip_error(-EUCLEAN,
					"inode %u: symbolic link without a block",
					ino);
		if (!ret)
			ret = engine_block_ptr(img, ino, pblk, &p);
		if (!ret) {
			memcpy(buf, p, size);
			buf[size] = '\0';
		}
	}
	map_close(&m);
	if (!ret && strlen(buf) != size)
		ret = xip_error(-EUCLEAN,
				"inode %u: symbolic link holds a NUL byte", ino);
	return ret;
}

/* ---- path lookup -------------------------------------------------------- */

static bool is_dir(struct xip_image *img, ext2_ino_t ino, int *err)
{
	struct ext2_inode_large in;

	*err = inode_read_checked(img, ino, &in);
	return !*err && LINUX_S_ISDIR(in.i_mode);
}

int xip_path_error(int err, const char *path)
{
	return xip_error(err, "%s: %s", path, strerror(-err));
}

/* Replace the rest of the walk with "<target><rest>". */
static int splice_link(char **buf, const char **rest, const char *target)
{
	size_t tl = strlen(target), rl = strlen(*rest);
	char *n;

	if (tl + rl + 2 > PATH_MAX * 4)
		return -ENAMETOOLONG;
	n = malloc(tl + rl + 2);
	if (!n)
		return -ENOMEM;
	memcpy(n, target, tl);
	memcpy(n + tl, *rest, rl + 1);
	free(*buf);
	*buf = n;
	*rest = n;
	return 0;
}

struct walk {
	struct xip_image *img;
	const char *path;		/* for messages */
	int flags;
	int links;
	ext2_ino_t cur;
};

/*
 * One component @c (length @n) in directory w->cur.  @more: components
 * (or a trailing slash) follow.  May splice a symlink into the walk.
 */
static int walk_step(struct walk *w, const char *c, size_t n, bool more,
		     char **buf, const char **rest)
{
	char target[PATH_MAX];
	struct ext2_inode_large in;
	ext2_ino_t child;
	int ret;

	if (!is_dir(w->img, w->cur, &ret))
		return ret ? ret : xip_path_error(-ENOTDIR, w->path);
	if (n == 1 && c[0] == '.')
		return 0;
	if (n == 2 && c[0] == '.' && c[1] == '.') {
		/* never above the image root */
		if (w->cur == EXT2_ROOT_INO)
			return 0;
		ret = xip_dir_find(w->img, w->cur, "..", 2, &child);
		if (ret == -ENOENT)
			return xip_error(-EUCLEAN,
					 "%s: directory inode %u has no '..' entry",
					 w->path, w->cur);
		if (!ret)
			w->cur = child;
		return ret;
	}
	if (n > EXT2_NAME_LEN)
		return xip_path_error(-ENAMETOOLONG, w->path);
	ret = xip_dir_find(w->img, w->cur, c, (unsigned int)n, &child);
	if (ret == -ENOENT)
		return xip_path_error(-ENOENT, w->path);
	if (!ret)
		ret = inode_read_checked(w->img, child, &in);
	if (ret)
		return ret;
	if (LINUX_S_ISLNK(in.i_mode) &&
	    (more || !(w->flags & XIP_LOOKUP_NOFOLLOW))) {
		if (++w->links > XIP_MAXSYMLINKS)
			return xip_path_error(-ELOOP, w->path);
		ret = xip_readlink(w->img, child, target, sizeof(target));
		if (ret)
			return ret;
		if (!target[0])
			return xip_path_error(-ENOENT, w->path);
		if (target[0] == '/')
			w->cur = EXT2_ROOT_INO;
		ret = splice_link(buf, rest, target);
		return ret ? xip_path_error(ret, w->path) : 0;
	}
	w->cur = child;
	return 0;
}

static int walk_path(struct walk *w, const char *path)
{
	const char *rest, *c;
	bool must_dir = false;
	char *buf;
	size_t n;
	int ret = 0;

	if (strlen(path) >= PATH_MAX)
		return xip_path_error(-ENAMETOOLONG, w->path);
	buf = strdup(path);
	if (!buf)
		return xip_error(-ENOMEM, "out of memory");
	rest = buf;
	w->cur = EXT2_ROOT_INO;
	for (;;) {
		while (*rest == '/')
			rest++;
		if (!*rest)
			break;
		c = rest;
		n = strcspn(rest, "/");
		rest += n;
		must_dir = *rest == '/';
		ret = walk_step(w, c, n, must_dir, &buf, &rest);
		if (ret)
			break;
	}
	if (!ret && must_dir && !is_dir(w->img, w->cur, &ret))
		ret = ret ? ret : xip_path_error(-ENOTDIR, w->path);
	free(buf);
	return ret;
}

int xip_lookup(struct xip_image *img, const char *path, int flags,
	       ext2_ino_t *ino)
{
	struct walk w = { img, path, flags, 0, EXT2_ROOT_INO };
	int ret;

	*ino = 0;
	if (!path || !*path)
		return xip_error(-ENOENT, "empty path");
	ret = walk_path(&w, path);
	if (!ret)
		*ino = w.cur;
	return ret;
}

int xip_lookup_parent(struct xip_image *img, const char *path,
		      ext2_ino_t *dir, char name[EXT2_NAME_LEN + 1])
{
	const char *slash, *last;
	size_t len = path ? strlen(path) : 0;
	char *dpath;
	int ret;

	*dir = 0;
	if (!len)
		return xip_error(-ENOENT, "empty path");
	if (path[len - 1] == '/')
		return xip_path_error(-EISDIR, path);
	slash = strrchr(path, '/');
	last = slash ? slash + 1 : path;
	if (!strcmp(last, ".") || !strcmp(last, ".."))
		return xip_path_error(-EISDIR, path);
	if (strlen(last) > EXT2_NAME_LEN)
		return xip_path_error(-ENAMETOOLONG, path);
	dpath = strndup(path, slash ? (size_t)(slash - path) + 1 : 0);
	if (!dpath)
		return xip_error(-ENOMEM, "out of memory");
	ret = xip_lookup(img, dpath[0] ? dpath : "/", 0, dir);
	if (!ret && !is_dir(img, *dir, &ret))
		ret = ret ? ret : xip_path_error(-ENOTDIR, path);
	if (ret == -ENOENT || ret == -ENOTDIR)
		xip_path_error(ret, path);
	free(dpath);
	if (!ret)
		snprintf(name, EXT2_NAME_LEN + 1, "%s", last);
	return ret;
}

/* ---- stat --------------------------------------------------------------- */

static void xtime(const struct ext2_inode_large *in, bool extra, uint32_t t,
		  uint32_t x, int64_t *sec, uint32_t *ns)
{
	*sec = (int32_t)t;
	*ns = 0;
	if (extra) {
		*sec += (int64_t)(x & EXT4_EPOCH_MASK) << 32;
		*ns = x >> EXT4_EPOCH_BITS;
	}
	(void)in;
}

bool xip_fs_has_extra_times(struct xip_image *img,
			    const struct ext2_inode_large *in)
{
	return img->rd->inode_size > EXT2_GOOD_OLD_INODE_SIZE &&
	       EXT2_GOOD_OLD_INODE_SIZE + in->i_extra_isize >=
	       offsetof(struct ext2_inode_large, i_crtime);
}

/* i_blocks in 512-byte units, as stat(2) shows them. */
static uint64_t stat_sectors(const struct xip_fs *fs,
			     const struct ext2_inode_large *in)
{
	uint64_t n = in->i_blocks;

	if (fs->feat_ro & RO_HUGE_FILE) {
		n |= (uint64_t)in->osd2.linux2.l_i_blocks_hi << 32;
		if (in->i_flags & FL_HUGE_FILE)
			n *= fs->block_size / 512;
	}
	return n;
}

int xip_stat_inode(struct xip_image *img, ext2_ino_t ino, struct xip_stat *st)
{
	struct xip_run *runs = NULL;
	struct ext2_inode_large *in;
	uint64_t end, mapped = 0;
	struct xip_map m;
	bool x;
	int ret;

	memset(st, 0, sizeof(*st));
	ret = map_open(img, ino, &m);
	if (ret)
		return ret;
	in = &m.inode;
	x = xip_fs_has_extra_times(img, in);
	st->ino = ino;
	st->mode = in->i_mode;
	st->uid = inode_uid(*in);
	st->gid = inode_gid(*in);
	st->links = in->i_links_count;
	st->size = xip_fs_inode_size(img->rd, in);
	st->sectors = stat_sectors(img->rd, in);
	st->flags = in->i_flags;
	st->generation = in->i_generation;
	xtime(in, x, in->i_atime, in->i_atime_extra, &st->atime, &st->atime_ns);
	xtime(in, x, in->i_mtime, in->i_mtime_extra, &st->mtime, &st->mtime_ns);
	xtime(in, x, in->i_ctime, in->i_ctime_extra, &st->ctime, &st->ctime_ns);
	st->extents = m.extents;
	if (LINUX_S_ISCHR(in->i_mode) || LINUX_S_ISBLK(in->i_mode))
		st->rdev = in->i_block[0] ? in->i_block[0] : in->i_block[1];
	if (!m.nomap) {
		end = blocks_for(st->size, img->block_size);
		ret = map_runs(&m, end, &runs, &st->nruns);
		for (size_t i = 0; !ret && i < st->nruns; i++)
			mapped += runs[i].len;
		st->data_blocks = mapped;
		st->hole_blocks = end > mapped ? end - mapped : 0;
		free(runs);
	}
	st->contiguous = st->nruns <= 1;
	map_close(&m);
	return ret;
}
