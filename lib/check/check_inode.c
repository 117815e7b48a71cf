// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * verify, pass 1: every inode and its block map.  The indirect-block
 * walker claims each block at most once; extended-attribute blocks, sizes,
 * symlinks and the reserved inodes are checked here.
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

#include "check/xip_check.h"
#include "check/check_int.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"

/* ---- pass 1: inodes and their blocks ------------------------------------ */

/*
 * Read inode @ino into @buf (a whole struct ext2_inode_large, the bytes
 * beyond the on-disk inode zero); NULL when its table cannot be read.
 */
const struct ext2_inode_large *xip_chk_inode(struct chk *c, uint32_t ino,
					     struct ext2_inode_large *buf)
{
	uint32_t g, i;
	uint64_t off;
	size_t len = c->inode_size < sizeof(*buf) ? c->inode_size :
		     sizeof(*buf);

	if (ino == 0 || ino > c->ninodes)
		return NULL;
	g = (ino - 1) / c->ipg;
	i = (ino - 1) % c->ipg;
	if (!(c->gstate[g] & G_IT_OK))
		return NULL;
	off = (uint64_t)c->gd[g].bg_inode_table * c->bs +
	      (uint64_t)i * c->inode_size;
	memset(buf, 0, sizeof(*buf));
	if (xip_chk_pread(c, buf, len, off))
		return NULL;
	chk_inode_to_host(buf, c->inode_size);
	return buf;
}

/* Block pointer @i of an inode (on disk little-endian). */
static inline uint64_t iblock(const struct ext2_inode_large *in, int i)
{
	return le32toh(in->i_block[i]);
}

uint64_t xip_chk_isize(const struct ext2_inode_large *in)
{
	return in->i_size | ((uint64_t)in->i_size_high << 32);
}

struct walk {
	struct chk *c;
	uint32_t ino;
	bool claim;		/* pass 1: claim every block */
	bool is_dir;
	uint64_t nblocks;	/* nonzero pointers, data and indirect */
	int64_t last;		/* last mapped file block, -1: none */
	uint64_t runs;		/* physically contiguous data runs */
	uint64_t prev_pblk;
	int64_t prev_lblk;
	uint64_t first_pblk;	/* block of file page 0 (0: hole) */
	unsigned int problems;	/* block problems (listed up to a limit) */
	unsigned int unlisted;
	chk_block_fn fn;	/* called for each data block, in order */
	void *arg;
	int stop;
};

static void walk_problem(struct walk *w, uint64_t blk, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void walk_problem(struct walk *w, uint64_t blk, const char *fmt, ...)
{
	va_list ap;

	w->problems++;
	if (w->problems > CHK_MAX_PER_INODE) {
		w->unlisted++;
		return;
	}
	va_start(ap, fmt);
	xip_chk_vfinding(w->c, XIP_CHECK_ERROR, "inode", w->ino, blk, fmt, ap);
	va_end(ap);
}

/*
 * Claim a block for the inode of the walk; false when it is not a valid
 * block of this inode (reported).  Outside pass 1 only the range is
 * checked: pass 1 already proved the map of the inodes walked again.
 */
static bool walk_claim(struct walk *w, uint64_t blk, const char *what)
{
	struct chk *c = w->c;
	uint32_t other, g, *own;
	uint64_t idx;

	if (blk < c->first_data || blk >= c->nblocks) {
		if (w->claim)
			walk_problem(w, blk, "%s %" PRIu64 " beyond end of %s",
				     what, blk,
				     blk >= c->seg->size / c->bs ? "image" :
				     "file system");
		return false;
	}
	if (!w->claim)
		return true;
	g = blk_group(c, blk);
	if (meta_in_group(c, g, blk)) {
		walk_problem(w, blk, "%s %" PRIu64 " is the %s of group %u",
			     what, blk, xip_chk_meta_kind(c, blk),
			     block_group(c, blk));
		return false;
	}
	own = c->owner[g];
	idx = blk - group_first(c, g);
	other = own ? own[idx] : 0;
	if (other) {
		if (other == w->ino)
			walk_problem(w, blk,
				     "%s %" PRIu64 " is claimed twice by this inode",
				     what, blk);
		else
			walk_problem(w, blk,
				     "%s %" PRIu64 " is also claimed by inode %" PRIu32 "%s",
				     what, blk, other,
				     xip_chk_is_ea(c, blk) ?
				     " (extended attribute block)" : "");
		c->dups++;
		return false;
	}
	if (!own) {
		xip_chk_set_owner(c, blk, w->ino);
	} else {
		own[idx] = w->ino;
	}
	c->used_blocks++;
	return true;
}

static void walk_data(struct walk *w, uint64_t lblk, uint64_t pblk)
{
	struct chk *c = w->c;

	w->nblocks++;
	if (!walk_claim(w, pblk, "block")) {
		w->last = (int64_t)lblk;
		return;
	}
	if (lblk == 0)
		w->first_pblk = pblk;
	/* holes do not break a run: only where the stored blocks lie */
	if (w->prev_lblk < 0 || w->prev_pblk + 1 != pblk)
		w->runs++;
	w->prev_lblk = (int64_t)lblk;
	w->prev_pblk = pblk;
	w->last = (int64_t)lblk;
	if (w->claim && w->is_dir) {
		struct chk_dblk *d;

		if (!xip_chk_grow(c, (void **)&c->db, &c->dbcap, c->ndb,
				  sizeof(*d))) {
			d = &c->db[c->ndb++];
			d->ino = w->ino;
			d->lblk = lblk;
			d->pblk = pblk;
		}
	}
	if (w->fn && !w->stop)
		w->stop = w->fn(w->arg, lblk, pblk);
}

/* Walk an indirect block of @level (1: indirect) mapping from @lblk. */
static void walk_ind(struct walk *w, uint64_t blk, int level, uint64_t lblk)
{
	struct chk *c = w->c;
	const uint32_t *ptr;
	uint64_t span = 1;

	w->nblocks++;
	if (!walk_claim(w, blk, "indirect block"))
		return;
	/* one buffer per level: the levels above stay readable */
	ptr = (const uint32_t *)c->lvl[level - 1];
	if (!xip_chk_read_block(c, blk, c->lvl[level - 1]))
		return;
	for (int l = 1; l < level; l++)
		span *= c->apb;
	for (uint32_t i = 0; i < c->apb && !w->stop; i++) {
		uint64_t p = le32toh(ptr[i]);

		if (!p)
			continue;
		if (level == 1)
			walk_data(w, lblk + i, p);
		else
			walk_ind(w, p, level - 1, lblk + i * span);
	}
}

/* The direct blocks, then the single, double and triple indirect trees. */
static void walk_tree(struct walk *w, const struct ext2_inode_large *in)
{
	uint64_t base = EXT2_NDIR_BLOCKS, apb = w->c->apb;

	for (int i = 0; i < EXT2_NDIR_BLOCKS && !w->stop; i++)
		if (iblock(in, i))
			walk_data(w, (uint64_t)i, iblock(in, i));
	if (iblock(in, EXT2_IND_BLOCK) && !w->stop)
		walk_ind(w, iblock(in, EXT2_IND_BLOCK), 1, base);
	base += apb;
	if (iblock(in, EXT2_DIND_BLOCK) && !w->stop)
		walk_ind(w, iblock(in, EXT2_DIND_BLOCK), 2, base);
	base += apb * apb;
	if (iblock(in, EXT2_TIND_BLOCK) && !w->stop)
		walk_ind(w, iblock(in, EXT2_TIND_BLOCK), 3, base);
}

/*
 * Iterate over the data blocks of an inode whose map pass 1 found sound,
 * in file order, calling @fn(arg, file block, physical block) until it
 * returns nonzero.  Holes are skipped.
 */
int xip_chk_blocks(struct chk *c, uint32_t ino, chk_block_fn fn, void *arg)
{
	struct ext2_inode_large buf;
	const struct ext2_inode_large *in = xip_chk_inode(c, ino, &buf);
	struct walk w = { .c = c, .ino = ino, .fn = fn, .arg = arg,
			  .last = -1, .prev_lblk = -1 };

	if (!in || !(xip_chk_st(c, ino)->flags & ST_MAP_OK))
		return -EUCLEAN;
	walk_tree(&w, in);
	return w.stop;
}

static void walk_map(struct walk *w, const struct ext2_inode_large *in)
{
	walk_tree(w, in);
	if (w->unlisted)
		chk_err(w->c, "inode", w->ino, 0,
			"%u more bad block pointers not listed", w->unlisted);
}

static uint8_t mode_ftype(uint16_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return EXT2_FT_REG_FILE;
	case S_IFDIR: return EXT2_FT_DIR;
	case S_IFCHR: return EXT2_FT_CHRDEV;
	case S_IFBLK: return EXT2_FT_BLKDEV;
	case S_IFIFO: return EXT2_FT_FIFO;
	case S_IFSOCK: return EXT2_FT_SOCK;
	case S_IFLNK: return EXT2_FT_SYMLINK;
	}
	return EXT2_FT_UNKNOWN;
}

static uint64_t max_file_size(const struct chk *c)
{
	uint64_t apb = c->apb;

	return (EXT2_NDIR_BLOCKS + apb + apb * apb + apb * apb * apb) * c->bs;
}

static void chk_max_size(struct chk *c, uint32_t ino,
			 const struct ext2_inode_large *in)
{
	if (xip_chk_isize(in) > max_file_size(c))
		chk_err(c, "inode", ino, 0,
			"size %" PRIu64 " exceeds the largest file of this block size",
			xip_chk_isize(in));
}

/* The extended attribute block of an inode, shared by reference count. */
static uint64_t chk_ea_block(struct chk *c, uint32_t ino,
			     const struct ext2_inode_large *in)
{
	uint64_t blk = in->i_file_acl;
	uint32_t hdr[2];

	if (!blk)
		return 0;
	if (!(c->sb.s_feature_compat & EXT2_FEATURE_COMPAT_EXT_ATTR)) {
		chk_err(c, "inode", ino, blk,
			"extended attribute block %" PRIu64 " (i_file_acl) without the ext_attr feature",
			blk);
		return 1;
	}
	if (blk < c->first_data || blk >= c->nblocks) {
		chk_err(c, "inode", ino, blk,
			"extended attribute block %" PRIu64 " (i_file_acl) beyond end of %s",
			blk, blk >= c->seg->size / c->bs ? "image" : "file system");
		return 1;
	}
	if (xip_chk_is_meta(c, blk)) {
		chk_err(c, "inode", ino, blk,
			"extended attribute block %" PRIu64 " (i_file_acl) is the %s of group %u",
			blk, xip_chk_meta_kind(c, blk), block_group(c, blk));
		return 1;
	}
	if (xip_chk_owner(c, blk) && !xip_chk_is_ea(c, blk)) {
		chk_err(c, "inode", ino, blk,
			"extended attribute block %" PRIu64 " is also claimed by inode %" PRIu32,
			blk, xip_chk_owner(c, blk));
		c->dups++;
		return 1;
	}
	if (!xip_chk_owner(c, blk)) {
		if (xip_chk_pread(c, hdr, sizeof(hdr), blk * c->bs) ||
		    (le32toh(hdr[0]) != EXT2_EXT_ATTR_MAGIC &&
		     le32toh(hdr[0]) != EXT2_EXT_ATTR_MAGIC_v1)) {
			chk_err(c, "inode", ino, blk,
				"extended attribute block %" PRIu64 " has a bad magic number",
				blk);
			return 1;
		}
		xip_chk_set_owner(c, blk, ino);
		c->used_blocks++;
		xip_chk_set_ea(c, blk);
	}
	if (!xip_chk_grow(c, (void **)&c->earefs, &c->eacap, c->nea,
			  sizeof(*c->earefs)))
		c->earefs[c->nea++] = blk;
	return 1;
}

static void chk_sizes(struct chk *c, uint32_t ino,
		      const struct ext2_inode_large *in, const struct walk *w,
		      uint64_t ea)
{
	uint64_t size = xip_chk_isize(in), want, have;
	uint16_t mode = in->i_mode;

	have = in->i_blocks;
	if (c->sb.s_feature_ro_compat & EXT4_FEATURE_RO_COMPAT_HUGE_FILE)
		have |= (uint64_t)in->osd2.linux2.l_i_blocks_hi << 32;
	want = (w->nblocks + ea) * (c->bs / 512);
	if (have != want)
		chk_err(c, "inode", ino, 0,
			"i_blocks is %" PRIu64 ", should be %" PRIu64, have,
			want);
	if (S_ISDIR(mode)) {
		if (size % c->bs || size / c->bs != (uint64_t)(w->last + 1))
			chk_err(c, "inode", ino, 0,
				"directory size %" PRIu64 " does not match its %" PRId64 " blocks",
				size, w->last + 1);
	} else if (S_ISREG(mode)) {
		if (w->last >= 0 && size < (uint64_t)w->last * c->bs)
			chk_err(c, "inode", ino, 0,
				"size %" PRIu64 " ends before its last block (file block %" PRId64 ")",
				size, w->last);
		else
			chk_max_size(c, ino, in);
		if (size > 0x7fffffffULL &&
		    !(c->sb.s_feature_ro_compat & EXT2_FEATURE_RO_COMPAT_LARGE_FILE))
			chk_err(c, "inode", ino, 0,
				"size %" PRIu64 " needs the large_file feature the superblock lacks",
				size);
	}
}

static void chk_symlink(struct chk *c, uint32_t ino,
			const struct ext2_inode_large *in, struct walk *w)
{
	uint64_t size = xip_chk_isize(in);
	const char *buf;
	size_t len, max;

	if (size == 0 || in->i_size_high) {
		chk_err(c, "inode", ino, 0, "symlink size %" PRIu64 " invalid",
			size);
		return;
	}
	if (size < sizeof(in->i_block)) {
		buf = (const char *)in->i_block;
		max = sizeof(in->i_block);
	} else {
		for (int i = 1; i < EXT2_N_BLOCKS; i++)
			if (in->i_block[i]) {
				chk_err(c, "inode", ino, 0,
					"slow symlink has more than one block");
				return;
			}
		if (size >= c->bs) {
			chk_err(c, "inode", ino, 0,
				"symlink size %" PRIu64 " exceeds a block",
				size);
			return;
		}
		if (!w->first_pblk)
			return;	/* its block was reported */
		if (!xip_chk_read_block(c, w->first_pblk, c->scratch))
			return;
		buf = (const char *)c->scratch;
		max = c->bs;
	}
	len = strnlen(buf, max);
	if (len != size)
		chk_err(c, "inode", ino, 0,
			"symlink target is %zu bytes long, i_size says %" PRIu64,
			len, size);
}

static bool is_elf(struct chk *c, uint64_t pblk)
{
	uint8_t b[4];

	return pblk && pblk < c->nblocks &&
	       !xip_chk_pread(c, b, sizeof(b), pblk * c->bs) &&
	       !memcmp(b, "\177ELF", 4);
}

/* The resize inode: its double indirect block lists the reserved GDT. */
static void chk_resize_inode(struct chk *c, const struct ext2_inode_large *in)
{
	uint64_t dind = iblock(in, EXT2_DIND_BLOCK), pblk;
	const uint32_t *ptr;
	uint64_t off;

	if (!S_ISREG(in->i_mode) || !in->i_links_count ||
	    (in->i_flags & (EXT4_EXTENTS_FL | EXT4_INLINE_DATA_FL))) {
		chk_err(c, "inode", EXT2_RESIZE_INO, 0,
			"resize inode: invalid mode 0%o, links %u or flags 0x%x",
			in->i_mode, in->i_links_count, in->i_flags);
		return;
	}
	for (int i = 0; i < EXT2_N_BLOCKS; i++)
		if (i != EXT2_DIND_BLOCK && iblock(in, i)) {
			chk_err(c, "inode", EXT2_RESIZE_INO, 0,
				"resize inode has an unexpected block pointer (i_block[%d])",
				i);
			return;
		}
	if (!dind || dind < c->first_data || dind >= c->nblocks ||
	    xip_chk_is_meta(c, dind) || xip_chk_owner(c, dind)) {
		chk_err(c, "inode", EXT2_RESIZE_INO, dind,
			"resize inode: invalid double indirect block %" PRIu64,
			dind);
		return;
	}
	xip_chk_set_owner(c, dind, EXT2_RESIZE_INO);
	c->used_blocks++;
	if (!c->rsv_gdt)
		return;
	ptr = xip_chk_read_block(c, dind, c->scratch) ?
	      (const uint32_t *)c->scratch : NULL;
	off = c->gdt_blocks;
	pblk = c->first_data + 1 + c->gdt_blocks;
	for (uint64_t i = 0; ptr && i < c->rsv_gdt; i++, off++, pblk++) {
		off %= c->apb;
		if (le32toh(ptr[off]) != pblk) {
			chk_err(c, "inode", EXT2_RESIZE_INO, dind,
				"resize inode: reserved descriptor block %" PRIu64 " is not listed",
				pblk);
			return;
		}
	}
}

static bool is_journal(const struct chk *c, uint32_t ino)
{
	return (c->sb.s_feature_compat & EXT3_FEATURE_COMPAT_HAS_JOURNAL) &&
	       c->sb.s_journal_inum == ino;
}

/* Inodes below s_first_ino, as e2fsck's pass 1 sees them. */
static void chk_reserved_inode(struct chk *c, uint32_t ino,
			       const struct ext2_inode_large *in)
{
	struct walk w = { .c = c, .ino = ino, .claim = true, .last = -1,
			  .prev_lblk = -1 };
	bool bad_mode;

	if (ino == EXT2_RESIZE_INO &&
	    (c->sb.s_feature_compat & EXT2_FEATURE_COMPAT_RESIZE_INODE)) {
		chk_resize_inode(c, in);
		chk_max_size(c, ino, in);
		return;
	}
	if (ino == EXT4_USR_QUOTA_INO || ino == EXT4_GRP_QUOTA_INO ||
	    ino == EXT2_JOURNAL_INO) {
		if (in->i_links_count || in->i_blocks || iblock(in, 0))
			chk_err(c, "inode", ino, 0,
				"reserved %s inode is not clear",
				ino == EXT2_JOURNAL_INO ? "journal" : "quota");
		return;
	}
	/* e2fsck clears a bad blocks inode with any of these set */
	if (ino == EXT2_BAD_INO &&
	    (in->i_mode || in->i_uid || in->i_gid || in->i_links_count ||
	     (in->i_flags & EXT4_INLINE_DATA_FL) || in->i_file_acl)) {
		chk_err(c, "inode", ino, 0,
			"bad blocks inode is invalid: mode 0%o, owner %u:%u,"
			" links %u, flags 0x%x, xattr block %u", in->i_mode,
			in->i_uid, in->i_gid, in->i_links_count, in->i_flags,
			in->i_file_acl);
		return;
	}
	if (ino == EXT2_BOOT_LOADER_INO)
		bad_mode = S_ISDIR(in->i_mode);
	else if (ino == EXT2_RESIZE_INO)
		bad_mode = in->i_mode && !S_ISREG(in->i_mode);
	else
		bad_mode = ino != EXT2_BAD_INO && in->i_mode;
	if (bad_mode)
		chk_err(c, "inode", ino, 0, "reserved inode has mode 0%o",
			in->i_mode);
	/* e2fsck checks these of every inode it walks */
	if (in->i_file_acl)
		chk_err(c, "inode", ino, 0,
			"reserved inode has an extended attribute block %u",
			in->i_file_acl);
	chk_max_size(c, ino, in);
	if (in->i_flags & (EXT4_EXTENTS_FL | EXT4_INLINE_DATA_FL))
		return;
	walk_map(&w, in);
	if (!w.problems)
		xip_chk_stw(c, ino)->flags |= ST_MAP_OK;	/* made by the caller */
	if (in->i_blocks != w.nblocks * (c->bs / 512))
		chk_err(c, "inode", ino, 0,
			"i_blocks is %u, should be %" PRIu64, in->i_blocks,
			w.nblocks * (c->bs / 512));
}

/* Flags of features an ext2 image does not have. */
#define FOREIGN_FLAGS (EXT4_CASEFOLD_FL | EXT4_ENCRYPT_FL | EXT4_VERITY_FL | \
		       EXT4_EA_INODE_FL | EXT4_HUGE_FILE_FL)

static void chk_one_inode(struct chk *c, uint32_t ino,
			  const struct ext2_inode_large *in)
{
	struct chk_ino *st;
	uint16_t mode = in->i_mode;
	struct walk w = { .c = c, .ino = ino, .claim = true, .last = -1,
			  .prev_lblk = -1 };
	bool walk_blocks, reserved = ino < c->first_ino;
	uint64_t ea;

	if (!in->i_links_count && in->i_dtime && in->i_dtime < c->ninodes)
		chk_err(c, "inode", ino, 0,
			"deletion time %u looks like a link of the orphan list (i_dtime)",
			in->i_dtime);
	if (!in->i_links_count &&
	    !(reserved && ino != EXT2_ROOT_INO && !is_journal(c, ino))) {
		/* unused: no state, only what the fields say */
		if (in->i_mode && !in->i_dtime && ino >= c->first_ino)
			chk_err(c, "inode", ino, 0,
				"deleted inode (no links) has no deletion time (i_dtime)");
		return;
	}
	st = xip_chk_stw(c, ino);
	if (!st)
		return;		/* out of memory: c->nomem */
	st->links = in->i_links_count;
	st->ftype = mode_ftype(mode);
	if (reserved && ino != EXT2_ROOT_INO && !is_journal(c, ino)) {
		st->flags |= ST_USED;
		chk_reserved_inode(c, ino, in);
		return;
	}
	st->flags |= ST_USED;
	c->used_inodes++;
	if (in->i_dtime)
		chk_err(c, "inode", ino, 0,
			"in use but has a deletion time (i_dtime %u)",
			in->i_dtime);
	if (st->ftype == EXT2_FT_UNKNOWN)
		chk_err(c, "inode", ino, 0, "invalid mode 0%o (i_mode)", mode);
	if (S_ISDIR(mode)) {
		st->flags |= ST_DIR;
		/* what chk_dir_block() looks for in block 0 */
		if (in->i_flags & EXT2_INDEX_FL)
			st->flags |= ST_INDEX;
		c->dirs_in_group[(ino - 1) / c->ipg]++;
	}
	if (ino == EXT2_ROOT_INO && !S_ISDIR(mode))
		chk_err(c, "inode", ino, 0, "the root inode is not a directory (mode 0%o)",
			mode);
	if (in->i_flags & (EXT4_EXTENTS_FL | EXT4_INLINE_DATA_FL)) {
		chk_err(c, "inode", ino, 0,
			"has the %s flag on a file system without that feature (i_flags 0x%x)",
			(in->i_flags & EXT4_EXTENTS_FL) ? "extents" :
			"inline data", in->i_flags);
		return;
	}
	if (in->i_flags & FOREIGN_FLAGS)
		chk_err(c, "inode", ino, 0,
			"has flags of features the file system lacks (i_flags 0x%x)",
			in->i_flags);
	if (in->i_faddr)
		chk_err(c, "inode", ino, 0, "i_faddr is %u, should be 0",
			in->i_faddr);
	if (in->osd2.linux2.l_i_blocks_hi &&
	    !(c->sb.s_feature_ro_compat & EXT4_FEATURE_RO_COMPAT_HUGE_FILE))
		chk_err(c, "inode", ino, 0, "i_blocks_hi is %u, should be 0",
			in->osd2.linux2.l_i_blocks_hi);
	if (in->osd2.linux2.l_i_file_acl_high)
		chk_err(c, "inode", ino, 0,
			"i_file_acl_high is %u, should be 0",
			in->osd2.linux2.l_i_file_acl_high);
	if ((in->i_flags & EXT2_INDEX_FL) &&
	    (!S_ISDIR(mode) ||
	     !(c->sb.s_feature_compat & EXT2_FEATURE_COMPAT_DIR_INDEX)))
		chk_err(c, "inode", ino, 0,
			"has the htree index flag %s (i_flags 0x%x)",
			S_ISDIR(mode) ? "without the dir_index feature" :
			"but is not a directory", in->i_flags);
	if (c->inode_size > EXT2_GOOD_OLD_INODE_SIZE &&
	    (in->i_extra_isize & 3 ||
	     in->i_extra_isize > c->inode_size - EXT2_GOOD_OLD_INODE_SIZE))
		chk_err(c, "inode", ino, 0,
			"invalid extra inode size %u (i_extra_isize)",
			in->i_extra_isize);
	walk_blocks = S_ISDIR(mode) || S_ISREG(mode) ||
		      (S_ISLNK(mode) &&
		       xip_chk_isize(in) >= sizeof(in->i_block)) ||
		      st->ftype == EXT2_FT_UNKNOWN;
	w.is_dir = S_ISDIR(mode);
	if (walk_blocks)
		walk_map(&w, in);
	if (!w.problems)
		st->flags |= ST_MAP_OK;
	ea = chk_ea_block(c, ino, in);
	if (st->ftype == EXT2_FT_UNKNOWN)
		return;
	chk_sizes(c, ino, in, &w, ea);
	if (S_ISLNK(mode))
		chk_symlink(c, ino, in, &w);
	else if (!walk_blocks && xip_chk_isize(in))
		chk_err(c, "inode", ino, 0,
			"special file has size %" PRIu64 ", should be 0",
			xip_chk_isize(in));
	if (S_ISREG(mode) && w.runs > 1 && !w.problems) {
		bool elf = is_elf(c, w.first_pblk);

		xip_chk_finding(c, elf ? XIP_CHECK_ERROR : XIP_CHECK_WARNING,
				"xip",
				ino, 0,
				"%s data is not contiguous (%" PRIu64 " runs)",
				elf ? "ELF file" : "file", w.runs);
	}
	if (S_ISREG(mode))
		c->files++;
}

/*
 * Pass 1 reads the inode tables in chunks of CHK_IOBUF.  A chunk where the
 * image file has a hole is zeros: no inode in it is in use, and none but
 * the reserved ones needs a look.
 */

static void chk_itable_chunk(struct chk *c, uint8_t *buf, uint32_t g,
			     uint32_t i0, uint32_t n)
{
	uint64_t off = (uint64_t)c->gd[g].bg_inode_table * c->bs +
		       (uint64_t)i0 * c->inode_size;
	uint32_t ino0 = g * c->ipg + i0 + 1;
	size_t len = (size_t)n * c->inode_size;

	/* below 64 KiB, reading zeros costs less than asking for a hole */
	if (len >= (64u << 10) && !xip_chk_may_hold_data(c, off, len)) {
		if (ino0 >= c->first_ino)
			return;
		memset(buf, 0, len);
	} else if (xip_chk_pread(c, buf, len, off)) {
		for (uint32_t i = 0; i < n; i++) {
			struct chk_ino *st = xip_chk_stw(c, ino0 + i);

			if (st)
				st->flags |= ST_UNKNOWN;
		}
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct ext2_inode_large *in =
			(void *)(buf + (size_t)i * c->inode_size);
		uint32_t ino = ino0 + i;

		chk_inode_to_host(in, c->inode_size);

		/* never used: nothing to look at (the common case) */
		if (!in->i_links_count && !in->i_mode && !in->i_dtime &&
		    ino >= c->first_ino)
			continue;
		chk_one_inode(c, ino, in);
		if (c->nomem)
			return;
	}
}

int xip_chk_inodes(struct chk *c)
{
	uint32_t per = CHK_IOBUF / c->inode_size;
	uint8_t *buf = c->iobuf;

	if (per > c->ipg)
		per = c->ipg;
	for (uint32_t g = 0; g < c->ngroups && !c->nomem; g++) {
		if (c->opts->progress && !(g & 63))
			c->opts->progress(c->opts->progress_arg, "inodes", g,
					  c->ngroups);
		if (!(c->gstate[g] & G_IT_OK))
			continue;	/* ST_UNKNOWN, by xip_chk_st() */
		for (uint32_t i = 0; i < c->ipg && !c->nomem; i += per)
			chk_itable_chunk(c, buf, g, i,
					 c->ipg - i < per ? c->ipg - i : per);
	}
	return c->nomem ? -ENOMEM : 0;
}

static int cmp_u64(const void *a, const void *b)
{
	return xip_cmp_u64(*(const uint64_t *)a, *(const uint64_t *)b);
}

/* Shared extended attribute blocks: reference counts against the users. */
void xip_chk_ea_refs(struct chk *c)
{
	if (!c->nea)
		return;
	qsort(c->earefs, c->nea, sizeof(*c->earefs), cmp_u64);
	for (size_t i = 0; i < c->nea;) {
		size_t j = i;
		uint32_t hdr[2];

		while (j < c->nea && c->earefs[j] == c->earefs[i])
			j++;
		if (!xip_chk_pread(c, hdr, sizeof(hdr), c->earefs[i] * c->bs) &&
		    le32toh(hdr[1]) != j - i)
			chk_err(c, "block", 0, c->earefs[i],
				"extended attribute block %" PRIu64 ": reference count %u, should be %zu",
				c->earefs[i], le32toh(hdr[1]), j - i);
		i = j;
	}
}
