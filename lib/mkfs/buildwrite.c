// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mkfs: writing the planned image.  Every inode, directory block,
 * indirect block, extended attribute block and file byte is written once,
 * straight into the target segment through its descriptor; libext2fs
 * keeps the bitmaps, group descriptors and superblock, which it writes
 * when build.c closes the file system.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mkfs/xip_mkfs.h"
#include "mkfs/mkfs_int.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"
#include "segment/xip_kcopy.h"
#include "segment/xip_segment.h"

/*
 * The indirect blocks of the file being mapped, built in memory and
 * written once each (xip_seg_pwrite): the blocks of a file are mapped
 * in ascending order, so at most one block per level of the tree is in
 * use at a time.  A block left and needed again is read back.
 */
#define IND_CACHE 8

struct iblk {
	blk64_t blk;
	uint32_t *tab;
	uint64_t used;		/* LRU stamp */
	bool valid;
};

struct bwriter {
	struct btree *t;
	const struct xip_build_opts *o;
	ext2_filsys fs;
	struct xip_seg *seg;
	unsigned int bs;
	struct xip_build_progress prog;
	char *dirbuf;
	/* the indirect-block pool of the inode being mapped */
	const struct bnode *n;
	size_t irun;
	uint64_t ioff;
	struct iblk ic[IND_CACHE];
	uint64_t tick;
	uint8_t *icbuf;
	struct bhash id;		/* the derived UUID's hash */
	uint8_t *cbuf;			/* a file's bytes on their way */
};

/*
 * A file's bytes move in runs of at most this many, each fed to the
 * contents hash after its place in the file (buildid.c).
 */
#define HASH_CHUNK (1u << 20)

/* Write @len bytes at block @blk of the image. */
static int write_blocks(struct bwriter *w, blk64_t blk, const void *buf,
			uint64_t len)
{
	uint64_t blocks = ext2fs_blocks_count(w->fs->super);
	int ret;

	if (blk >= blocks || div_round_up(len, w->bs) > blocks - blk)
		return xip_error(-ERANGE, "block %llu beyond the image",
				 (unsigned long long)blk);
	ret = xip_seg_pwrite(w->seg, (uint64_t)blk * w->bs, buf, len);
	if (ret)
		return xip_error(ret, "%s: block %llu: %s", w->seg->path,
				 (unsigned long long)blk, strerror(-ret));
	return 0;
}

static int ind_flush(struct bwriter *w)
{
	int ret = 0;

	for (int i = 0; i < IND_CACHE; i++) {
		struct iblk *c = &w->ic[i];

		if (c->valid && !ret)
			ret = write_blocks(w, c->blk, c->tab, w->bs);
		c->valid = false;
	}
	return ret;
}

/*
 * The indirect block @blk in memory: zeros when @fresh (just taken from
 * the pool), else as written (a new image reads as zeros where nothing
 * was written).
 */
static int ind_load(struct bwriter *w, blk64_t blk, bool fresh,
		    uint32_t **tab)
{
	struct iblk *c = NULL;
	int ret;

	for (int i = 0; i < IND_CACHE; i++) {
		if (w->ic[i].valid && w->ic[i].blk == blk) {
			c = &w->ic[i];
			goto found;
		}
	}
	for (int i = 0; i < IND_CACHE; i++)
		if (!c || !w->ic[i].valid ||
		    (c->valid && w->ic[i].used < c->used))
			c = &w->ic[i];
	if (c->valid) {
		ret = write_blocks(w, c->blk, c->tab, w->bs);
		if (ret)
			return ret;
		c->valid = false;
	}
	if (blk >= ext2fs_blocks_count(w->fs->super))
		return xip_error(-ERANGE, "block %llu beyond the image",
				 (unsigned long long)blk);
	if (fresh) {
		memset(c->tab, 0, w->bs);
	} else {
		ret = xip_seg_pread(w->seg, (uint64_t)blk * w->bs, c->tab,
				      w->bs);
		if (ret)
			return xip_error(ret, "%s: block %llu: %s",
					 w->seg->path,
					 (unsigned long long)blk,
					 strerror(-ret));
	}
	c->blk = blk;
	c->valid = true;
found:
	c->used = ++w->tick;
	*tab = c->tab;
	return 0;
}

static int ind_next(struct bwriter *w, blk64_t *blk)
{
	const struct bnode *n = w->n;

	while (w->irun < n->niruns && w->ioff >= n->iruns[w->irun].len) {
		w->irun++;
		w->ioff = 0;
	}
	if (w->irun >= n->niruns)
		return xip_error(-EFAULT, "inode %u: indirect blocks miscounted",
				 n->ino);
	*blk = n->iruns[w->irun].pblk + w->ioff++;
	return 0;
}

/* The slot that maps @idx in the indirect block @blk. */
static int ind_slot(struct bwriter *w, blk64_t blk, bool fresh, uint64_t idx,
		    uint32_t **slot)
{
	uint32_t *tab = NULL;
	int ret = ind_load(w, blk, fresh, &tab);

	if (ret)
		return ret;
	*slot = &tab[idx];
	return 0;
}

/* The block a slot points to, taken from the pool (@fresh) if none. */
static int ind_get(struct bwriter *w, uint32_t *slot, blk64_t *blk,
		   bool *fresh)
{
	int ret;

	*fresh = false;
	if (*slot) {
		*blk = ext2fs_le32_to_cpu(*slot);
		return 0;
	}
	ret = ind_next(w, blk);
	if (!ret) {
		*slot = ext2fs_cpu_to_le32((uint32_t)*blk);
		*fresh = true;
	}
	return ret;
}

/* Map file block @l to @p through i_block and the indirect blocks. */
static int bw_map_block(struct bwriter *w, struct ext2_inode_large *in,
			 uint64_t l, blk64_t p)
{
	uint64_t P = w->bs / 4, idx[3];
	bool fresh = false;
	uint32_t *slot;
	int depth, ret;
	blk64_t b;

	if (l < EXT2_NDIR_BLOCKS) {
		in->i_block[l] = (uint32_t)p;
		return 0;
	}
	l -= EXT2_NDIR_BLOCKS;
	if (l < P) {
		depth = 1;
		slot = &in->i_block[EXT2_IND_BLOCK];
		idx[0] = l;
	} else if ((l -= P) < P * P) {
		depth = 2;
		slot = &in->i_block[EXT2_DIND_BLOCK];
		idx[0] = l / P;
		idx[1] = l % P;
	} else {
		l -= P * P;
		depth = 3;
		slot = &in->i_block[EXT2_TIND_BLOCK];
		idx[0] = l / (P * P);
		idx[1] = (l / P) % P;
		idx[2] = l % P;
	}
	/* the top slot lives in the inode, in CPU byte order */
	if (!*slot) {
		ret = ind_next(w, &b);
		if (ret)
			return ret;
		*slot = (uint32_t)b;
		fresh = true;
	}
	b = *slot;
	for (int i = 0; i < depth; i++) {
		ret = ind_slot(w, b, fresh, idx[i], &slot);
		if (ret)
			return ret;
		if (i == depth - 1)
			break;
		ret = ind_get(w, slot, &b, &fresh);
		if (ret)
			return ret;
	}
	*slot = ext2fs_cpu_to_le32((uint32_t)p);
	return 0;
}

struct chunk {
	uint64_t lblk;
	blk64_t pblk;
	uint64_t len;
};

typedef int (*chunk_fn)(struct bwriter *w, const struct bnode *n,
			const struct chunk *c, void *arg);

/*
 * Walk the file's data ranges against its physical runs, map every block
 * and call @fn for each piece contiguous on both sides.
 */
static int map_file(struct bwriter *w, const struct bnode *n,
		    struct ext2_inode_large *in, chunk_fn fn, void *arg)
{
	size_t run = 0;
	uint64_t roff = 0;
	int ret;

	w->n = n;
	w->irun = 0;
	w->ioff = 0;
	for (size_t r = 0; r < n->nranges; r++) {
		uint64_t l = n->ranges[r].start, left = n->ranges[r].len;

		while (left) {
			struct chunk c;

			while (run < n->ndruns && roff >= n->druns[run].len) {
				run++;
				roff = 0;
			}
			if (run >= n->ndruns)
				return xip_error(-EFAULT,
						 "inode %u: data blocks miscounted",
						 n->ino);
			c.lblk = l;
			c.pblk = n->druns[run].pblk + roff;
			c.len = n->druns[run].len - roff;
			if (c.len > left)
				c.len = left;
			for (uint64_t k = 0; k < c.len; k++) {
				ret = bw_map_block(w, in, c.lblk + k,
						    c.pblk + k);
				if (ret)
					return ret;
			}
			if (fn && (ret = fn(w, n, &c, arg)))
				return ret;
			l += c.len;
			left -= c.len;
			roff += c.len;
		}
	}
	return ind_flush(w);
}

/* Where a file's bytes are read: its source file, or the spool at @base. */
struct csrc {
	int fd;
	uint64_t base;
};

/*
 * Copy @len bytes of the source at @src_off to byte @at of the image
 * (byte @off of the file), hashing them as they pass: one read, one write
 * (copy_file_range(2) would spare the read into memory, but the hash
 * would then read every byte back from the image).  0, -ENODATA when the
 * source ended early, or -errno with *@wrote saying whose it was.
 */
static int copy_hashed(struct bwriter *w, const struct csrc *src,
		       uint64_t at, uint64_t off, uint64_t len, bool *wrote)
{
	*wrote = false;
	if (!w->cbuf && !(w->cbuf = malloc(HASH_CHUNK)))
		return -ENOMEM;
	while (len) {
		size_t n = len < HASH_CHUNK ? (size_t)len : HASH_CHUNK;
		ssize_t r = xip_pread_full(src->fd, w->cbuf, n, src->base + off);
		int ret;

		if (r < 0)
			return (int)r;
		if ((size_t)r < n)
			return -ENODATA;
		xip_bld_content_add(&w->id, off, w->cbuf, n);
		ret = xip_seg_pwrite(w->seg, at, w->cbuf, n);
		if (ret) {
			*wrote = true;
			return ret;
		}
		at += n;
		off += n;
		len -= n;
	}
	return 0;
}

static int copy_chunk(struct bwriter *w, const struct bnode *n,
		      const struct chunk *c, void *arg)
{
	const struct csrc *src = arg;
	uint64_t off = c->lblk * w->bs, len = c->len * w->bs;
	uint64_t blocks = ext2fs_blocks_count(w->fs->super);
	bool wrote;
	char *p;
	int ret;

	if (off + len > n->size)
		len = n->size - off;
	if (c->pblk >= blocks || c->len > blocks - c->pblk)
		return xip_error(-ERANGE, "block %llu beyond the image",
				 (unsigned long long)c->pblk);
	ret = copy_hashed(w, src, (uint64_t)c->pblk * w->bs, off, len, &wrote);
	if (!ret)
		return 0;
	if (ret == -ENOMEM)
		return xip_error(ret, "out of memory");
	p = xip_btree_path(w->t, n);
	if (wrote || !p)
		ret = xip_error(ret, "%s: %s", w->seg->path, strerror(-ret));
	else if (ret == -ENODATA)
		ret = xip_error(-EIO, "%s: file shrank while being copied", p);
	else
		ret = xip_error(ret, "%s: %s", p, strerror(-ret));
	free(p);
	return ret;
}

static int copy_file(struct bwriter *w, const struct bnode *n,
		     struct ext2_inode_large *in)
{
	struct csrc src = { -1, 0 };
	int ret;

	if (n->spooled) {
		src.fd = w->t->spool_fd;
		src.base = n->spool_off;
	} else if (n->nranges) {
		ret = xip_btree_open_source(w->t, n, &src.fd);
		if (ret)
			return ret;
	}
	ret = map_file(w, n, in, copy_chunk, &src);
	if (!ret)
		xip_bld_content_done(&w->id, n->ino, n->size);
	if (src.fd >= 0 && !n->spooled)
		close(src.fd);
	w->prog.files_done++;
	w->prog.bytes_done += n->size;
	if (w->o->progress)
		w->o->progress(&w->prog, w->o->progress_arg);
	return ret;
}

static int ftype(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return EXT2_FT_REG_FILE;
	case S_IFDIR:
		return EXT2_FT_DIR;
	case S_IFCHR:
		return EXT2_FT_CHRDEV;
	case S_IFBLK:
		return EXT2_FT_BLKDEV;
	case S_IFIFO:
		return EXT2_FT_FIFO;
	case S_IFSOCK:
		return EXT2_FT_SOCK;
	case S_IFLNK:
		return EXT2_FT_SYMLINK;
	default:
		return EXT2_FT_UNKNOWN;
	}
}

struct dirfill {
	const struct bnode *dir;
	size_t next;		/* next child to place */
	bool dots_done;
};

static struct ext2_dir_entry *dirent_put(struct bwriter *w, size_t *used,
					 ext2_ino_t ino, const char *name,
					 size_t len, int type)
{
	struct ext2_dir_entry *de = (void *)(w->dirbuf + *used);
	size_t rec = (8 + len + 3) & ~(size_t)3;

	de->inode = ino;
	ext2fs_dirent_set_name_len(de, (int)len);
	ext2fs_dirent_set_file_type(de, type);
	memcpy(de->name, name, len);
	ext2fs_set_rec_len(w->fs, (unsigned int)rec, de);
	*used += rec;
	return de;
}

static int dir_chunk(struct bwriter *w, const struct bnode *n,
		     const struct chunk *c, void *arg)
{
	struct dirfill *f = arg;
	errcode_t err;

	for (uint64_t k = 0; k < c->len; k++) {
		struct ext2_dir_entry *last = NULL;
		size_t used = 0;

		memset(w->dirbuf, 0, w->bs);
		if (!f->dots_done) {
			ext2_ino_t up = n->parent && n != w->t->root ?
					n->parent->ino : EXT2_ROOT_INO;

			dirent_put(w, &used, n->ino, ".", 1, EXT2_FT_DIR);
			last = dirent_put(w, &used, up, "..", 2, EXT2_FT_DIR);
			f->dots_done = true;
		}
		while (f->next < n->nkids) {
			const struct bentry *e = &n->kids[f->next];
			size_t len = strlen(e->name);

			if (used + ((8 + len + 3) & ~(size_t)3) > w->bs)
				break;
			last = dirent_put(w, &used, e->node->ino, e->name, len,
					  ftype(e->node->mode));
			f->next++;
		}
		if (!last) {
			last = (void *)w->dirbuf;
			last->inode = 0;
		}
		ext2fs_set_rec_len(w->fs, w->bs - (unsigned int)((char *)last -
								 w->dirbuf),
				   last);
		err = ext2fs_write_dir_block4(w->fs, c->pblk + k, w->dirbuf, 0,
					      n->ino);
		if (err)
			return xip_error_ext2(err, "inode %u: directory block",
					      n->ino);
	}
	return 0;
}

static int link_chunk(struct bwriter *w, const struct bnode *n,
		      const struct chunk *c, void *arg)
{
	if (n->size > w->bs)
		return xip_error(-EFAULT, "inode %u: link target too long",
				 n->ino);
	memset(w->dirbuf, 0, w->bs);
	memcpy(w->dirbuf, n->target, n->size);
	return write_blocks(w, c->pblk, w->dirbuf, w->bs);
}

static void set_time(uint32_t *lo, uint32_t *extra, int64_t sec, uint32_t ns)
{
	*lo = (uint32_t)sec;
	*extra = (uint32_t)(((sec - (int32_t)sec) >> 32) & EXT4_EPOCH_MASK) |
		 (ns << EXT4_EPOCH_BITS);
}

static void inode_fill(struct bwriter *w, const struct bnode *n,
		       struct ext2_inode_large *in)
{
	memset(in, 0, sizeof(*in));
	in->i_mode = (uint16_t)(n->mode & 0xffff);
	in->i_uid = (uint16_t)n->uid;
	ext2fs_set_i_uid_high(*in, n->uid >> 16);
	in->i_gid = (uint16_t)n->gid;
	ext2fs_set_i_gid_high(*in, n->gid >> 16);
	in->i_links_count = (uint16_t)n->nlink; /* <= 65000 (finish) */
	in->i_size = (uint32_t)n->size;
	in->i_size_high = (uint32_t)(n->size >> 32);
	in->i_extra_isize = sizeof(struct ext2_inode_large) -
			    EXT2_GOOD_OLD_INODE_SIZE;
	set_time(&in->i_atime, &in->i_atime_extra, n->atime, n->atime_ns);
	set_time(&in->i_mtime, &in->i_mtime_extra, n->mtime, n->mtime_ns);
	set_time(&in->i_ctime, &in->i_ctime_extra, n->ctime, n->ctime_ns);
	in->i_blocks = (uint32_t)((n->data_blocks + n->ind_blocks) *
				  (w->bs / 512));
}

static int write_node(struct bwriter *w, const struct bnode *n)
{
	struct ext2_inode_large in;
	struct dirfill f = { n, 0, false };
	uint32_t dev[2];
	errcode_t err;
	int ret = 0;

	inode_fill(w, n, &in);
	switch (n->mode & S_IFMT) {
	case S_IFREG:
		ret = copy_file(w, n, &in);
		break;
	case S_IFDIR:
		ret = map_file(w, n, &in, dir_chunk, &f);
		if (!ret && f.next != n->nkids)
			ret = xip_error(-EFAULT,
					"inode %u: directory blocks miscounted",
					n->ino);
		break;
	case S_IFLNK:
		if (n->data_blocks)
			ret = map_file(w, n, &in, link_chunk, NULL);
		else
			memcpy(in.i_block, n->target, n->size);
		break;
	case S_IFCHR:
	case S_IFBLK:
		xip_build_encode_dev(n->rdev, dev);
		in.i_block[0] = dev[0];
		in.i_block[1] = dev[1];
		break;
	}
	if (ret)
		return ret;
	err = ext2fs_write_inode_full(w->fs, n->ino, (struct ext2_inode *)&in,
				      sizeof(in));
	if (err)
		return xip_error_ext2(err, "inode %u", n->ino);
	ext2fs_inode_alloc_stats2(w->fs, n->ino, +1, S_ISDIR(n->mode));
	return 0;
}

static int write_xattrs(struct bwriter *w, const struct bnode *n)
{
	struct ext2_xattr_handle *h;
	errcode_t err;
	size_t i = 0;

	err = ext2fs_xattrs_open(w->fs, n->ino, &h);
	if (err)
		goto fail;
	err = ext2fs_xattrs_read(h);
	for (; !err && i < n->nxattrs; i++)
		err = ext2fs_xattr_set(h, n->xattrs[i].name, n->xattrs[i].value,
				       n->xattrs[i].len);
	ext2fs_xattrs_close(&h);
	if (!err)
		return 0;
fail:
	{
		char *p = xip_btree_path(w->t, n);
		int ret = xip_error_ext2(err, "%s: extended attribute %s",
					 p ? p : "?",
					 i && i <= n->nxattrs ?
					 n->xattrs[i - 1].name : "");

		free(p);
		return ret;
	}
}

static int mark_runs(ext2_filsys fs, const struct prun *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ext2fs_block_alloc_stats_range(fs, r[i].pblk,
					       (blk_t)r[i].len, +1);
	return 0;
}

static int write_all(struct bwriter *w)
{
	struct btree *t = w->t;
	int ret = 0;

	for (size_t i = 0; i < t->nnodes; i++) {
		mark_runs(w->fs, t->nodes[i]->druns, t->nodes[i]->ndruns);
		mark_runs(w->fs, t->nodes[i]->iruns, t->nodes[i]->niruns);
	}
	for (ext2_ino_t ino = 1; ino < EXT2_GOOD_OLD_FIRST_INO; ino++)
		if (ino != EXT2_ROOT_INO)
			ext2fs_inode_alloc_stats2(w->fs, ino, +1, 0);
	w->prog.files_total = t->files;
	w->prog.bytes_total = t->bytes;
	for (size_t i = 0; !ret && i < t->nnodes; i++)
		ret = write_node(w, t->nodes[i]);
	for (size_t i = 0; !ret && i < t->nnodes; i++)
		if (t->nodes[i]->nxattrs)
			ret = write_xattrs(w, t->nodes[i]);
	if (!ret)
		xip_bld_super_fill(w->fs, w->o, &w->id, w->t->now);
	return ret;
}

/*
 * The blocks libext2fs writes in every group (superblock and descriptor
 * backups, bitmaps), allocated in the image file in ascending order
 * before anything is written, as one range where they touch: a sparse
 * image of a large size then flushes them as a few long writes.  Only an
 * optimisation: a failure is left to the writes to report.
 */
static void reserve_meta(struct bwriter *w)
{
	ext2_filsys fs = w->fs;
	blk64_t run = 0, end = 0;

	for (dgrp_t g = 0; g < fs->group_desc_count; g++) {
		blk64_t b[3][2], first = ext2fs_group_first_block2(fs, g);
		int n = 0;

		if (ext2fs_bg_has_super(fs, (int)g)) {
			b[n][0] = first;
			b[n++][1] = first + 1 + fs->desc_blocks +
				    fs->super->s_reserved_gdt_blocks;
		}
		b[n][0] = ext2fs_block_bitmap_loc(fs, g);
		b[n][1] = b[n][0] + 1;
		n++;
		b[n][0] = ext2fs_inode_bitmap_loc(fs, g);
		b[n][1] = b[n][0] + 1;
		n++;
		for (int i = 0; i < n; i++) {
			if (b[i][0] == end) {
				end = b[i][1];
				continue;
			}
			if (end > run)
				xip_build_reserve(w->seg, run * w->bs,
						  (end - run) * w->bs);
			run = b[i][0];
			end = b[i][1];
		}
	}
	if (end > run)
		xip_build_reserve(w->seg, run * w->bs, (end - run) * w->bs);
}

int xip_bld_write(struct btree *t, const struct xip_build_opts *o,
		  ext2_filsys fs, struct xip_seg *seg)
{
	struct bwriter w = { .t = t, .o = o, .fs = fs, .seg = seg,
			     .bs = t->bs };
	int ret;

	w.dirbuf = calloc(1, t->bs);
	w.icbuf = malloc((size_t)IND_CACHE * t->bs);
	if (!w.dirbuf || !w.icbuf || xip_bld_hash_init(&w.id)) {
		ret = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < IND_CACHE; i++)
		w.ic[i].tab = (uint32_t *)(w.icbuf + (size_t)i * t->bs);
	reserve_meta(&w);
	xip_build_hook_after_scan();
	xip_bld_hash_tree(t, o, fs, &w.id);
	ret = write_all(&w);
out:
	xip_bld_hash_free(&w.id);
	free(w.dirbuf);
	free(w.icbuf);
	free(w.cbuf);
	return ret;
}
