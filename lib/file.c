// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Files on top of get_xip_page: path lookup, directories, symlinks, stat,
 * and the seed's do_xip_mapping_read, generic_file_xip_write and
 * xip_truncate_page.  Every byte of file data is copied straight between
 * the caller's buffer and the segment; there is no cache and no bounce
 * buffer, and no read-ahead.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"

#define U64(x) ((unsigned long long)(x))

/* Holes read as this (block sizes go up to 64 KiB). */
static const uint8_t zero_page[65536];

static uint64_t blocks_for(uint64_t size, uint64_t bs)
{
	return size / bs + (size % bs != 0);
}

/*
 * Directories, symlinks, path lookup and stat are the reader's
 * (fsread.c), as are the block maps read here.
 */

/* ---- read: do_xip_mapping_read ------------------------------------------ */

struct pending {
	const uint8_t *p;
	size_t n;
};

static int pending_flush(struct pending *pd, xip_read_actor actor, void *ctx,
			 uint64_t *done)
{
	int ret = 0;

	if (pd->n)
		ret = actor(ctx, pd->p, pd->n);
	if (!ret)
		*done += pd->n;
	pd->n = 0;
	return ret;
}

static int emit_zeros(uint64_t n, xip_read_actor actor, void *ctx,
		      uint64_t *done)
{
	while (n) {
		size_t k = n < sizeof(zero_page) ? (size_t)n : sizeof(zero_page);
		int ret = actor(ctx, zero_page, k);

		if (ret)
			return ret;
		*done += k;
		n -= k;
	}
	return 0;
}

static int read_open(struct xip_image *img, ext2_ino_t ino, struct xip_map *m)
{
	int ret = map_open(img, ino, m);

	if (ret)
		return ret;
	if (LINUX_S_ISDIR(m->inode.i_mode))
		ret = xip_error(-EISDIR, "inode %u: is a directory", ino);
	else if (!LINUX_S_ISREG(m->inode.i_mode))
		ret = xip_error(-EINVAL, "inode %u: not a regular file", ino);
	if (ret)
		map_close(m);
	return ret;
}

/*
 * Pieces of [pos, end) in file order: holes as zeros, data as pointers
 * into the segment, adjacent pointers merged into one actor call.
 */
static int read_range(struct xip_map *m, uint64_t pos, uint64_t end,
		      xip_read_actor actor, void *ctx, uint64_t *done)
{
	struct xip_image *img = m->img;
	uint64_t bs = img->block_size, lblk, in, n, cnt;
	struct pending pd = { NULL, 0 };
	blk64_t pblk;
	void *p;
	int ret = 0;

	while (pos < end) {
		lblk = pos / bs;
		in = pos % bs;
		ret = map_block(m, lblk, &pblk, &cnt);
		if (ret)
			break;
		n = end - pos;
		if (cnt <= (n + in) / bs)
			n = cnt * bs - in;
		if (!pblk) {
			ret = pending_flush(&pd, actor, ctx, done);
			if (!ret)
				ret = emit_zeros(n, actor, ctx, done);
		} else {
			ret = engine_block_ptr(img, m->ino, pblk, &p);
			if (!ret)
				ret = segment_range(img->seg, pblk * bs + in, n,
						    &p);
			if (ret) {
				ret = xip_error(ret, "inode %u: block %llu: outside the segment",
						m->ino, U64(pblk));
				break;
			}
			if (pd.n && pd.p + pd.n == (const uint8_t *)p) {
				pd.n += n;
			} else {
				ret = pending_flush(&pd, actor, ctx, done);
				pd.p = p;
				pd.n = n;
			}
		}
		if (ret)
			break;
		pos += n;
	}
	if (!ret)
		ret = pending_flush(&pd, actor, ctx, done);
	return ret;
}

ssize_t xip_file_read_actor(struct xip_image *img, ext2_ino_t ino,
			    uint64_t off, size_t len, xip_read_actor actor,
			    void *ctx)
{
	uint64_t size, end, done = 0;
	struct xip_map m;
	int ret;

	ret = read_open(img, ino, &m);
	if (ret)
		return ret;
	size = EXT2_I_SIZE(&m.inode);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	end = off < size ? (len < size - off ? off + len : size) : off;
	ret = read_range(&m, off, end, actor, ctx, &done);
	map_close(&m);
	if (ret && !done)
		return ret;
	return (ssize_t)done;
}

struct copy_ctx {
	uint8_t *dst;
};

static int copy_actor(void *ctx, const void *data, size_t len)
{
	struct copy_ctx *c = ctx;

	memcpy(c->dst, data, len);
	c->dst += len;
	return 0;
}

ssize_t xip_file_read(struct xip_image *img, ext2_ino_t ino, uint64_t off,
		      void *buf, size_t len)
{
	struct copy_ctx c = { buf };

	return xip_file_read_actor(img, ino, off, len, copy_actor, &c);
}

/* ---- write and truncate ------------------------------------------------- */

/* mtime and ctime (and their extra fields on large inodes) to now. */
static void touch_mc(struct xip_image *img, struct ext2_inode_large *in)
{
	time_t now = img->fs->now ? img->fs->now : time(NULL);
	uint32_t epoch = (uint32_t)(((int64_t)now - (int32_t)(uint32_t)now) >> 32) &
			 EXT4_EPOCH_MASK;

	in->i_mtime = (uint32_t)now;
	in->i_ctime = (uint32_t)now;
	if (xip_fs_has_extra_times(img, in)) {
		in->i_mtime_extra = epoch;
		in->i_ctime_extra = epoch;
	}
}

static int write_open(struct xip_image *img, ext2_ino_t ino, struct xip_map *m)
{
	int ret = image_begin_change(img);

	return ret ? ret : read_open(img, ino, m);
}

/* The largest file size this image and this map allow. */
static uint64_t max_size(struct xip_map *m)
{
	uint64_t bs = m->img->block_size, lim = map_limit(m);

	/* i_blocks counts 512-byte sectors in 32 bits without huge_file */
	if (!ext2fs_has_feature_huge_file(m->img->fs->super) &&
	    lim > (1ULL << 32) / (bs / 512))
		lim = (1ULL << 32) / (bs / 512) - m->apb * 4;
	return lim * bs;
}

/* Zero [from, end of its block) when @from is inside a mapped block. */
static int zero_tail(struct xip_map *m, uint64_t from)
{
	uint64_t bs = m->img->block_size, n;
	blk64_t pblk;
	uint8_t *p;
	int ret;

	if (!(from % bs))
		return 0;
	ret = map_block(m, from / bs, &pblk, &n);
	if (ret || !pblk)
		return ret;
	ret = engine_block_ptr(m->img, m->ino, pblk, (void **)&p);
	if (!ret)
		memset(p + from % bs, 0, bs - from % bs);
	return ret;
}

/* Set i_size (large_file is turned on by libext2fs when needed). */
static int set_size(struct xip_map *m, uint64_t size)
{
	errcode_t err = ext2fs_inode_size_set(m->img->fs,
					      (struct ext2_inode *)&m->inode,
					      size);

	if (err)
		return xip_error_ext2(err, "inode %u: size %llu", m->ino,
				      U64(size));
	m->dirty = true;
	return 0;
}

/*
 * Commit what is written so far: the size grows to cover it in the same
 * inode write that links its blocks, so that no linked block ever lies
 * past i_size.
 */
static int write_commit(struct xip_map *m, uint64_t end)
{
	int ret = 0;

	if (end > EXT2_I_SIZE(&m->inode))
		ret = set_size(m, end);
	if (!ret && m->dirty)
		touch_mc(m->img, &m->inode);
	return ret ? ret : map_commit(m);
}

/*
 * Copy [off, off + len) in, allocating holes; *done is the bytes copied.
 * New blocks are filled before they are linked, and linked a transaction
 * at a time (map_commit), so that a write stopped anywhere leaves the
 * file as of the last commit plus blocks that e2fsck frees.  Stops with
 * -EINTR at a commit once the caller's interrupt flag is set.
 */
static int write_range(struct xip_map *m, uint64_t off, const uint8_t *buf,
		       size_t len, size_t *done)
{
	struct xip_image *img = m->img;
	uint64_t bs = img->block_size, lblk, in, cnt, n;
	blk64_t pblk, goal = 0, prefaulted = 0;
	uint8_t *p;
	int ret = 0;

	*done = 0;
	while (*done < len) {
		lblk = (off + *done) / bs;
		in = (off + *done) % bs;
		n = bs - in < len - *done ? bs - in : len - *done;
		const uint8_t *fill = n == bs ? buf + *done : NULL;

		if (map_txn_due(m, lblk)) {
			ret = write_commit(m, off + *done);
			if (!ret && xip_interrupted())
				ret = xip_error(-EINTR, "interrupted");
			if (ret)
				break;
		}
		ret = map_block(m, lblk, &pblk, &cnt);
		if (!ret && !pblk) {
			if (!goal && lblk && !map_block(m, lblk - 1, &goal, &cnt) &&
			    goal)
				goal++;
			if (goal && goal >= prefaulted && len - *done >= 64 * bs) {
				uint64_t ahead = (len - *done) / bs;

				ahead = ahead < 512 ? ahead : 512;
				engine_prefault_free(img, goal, ahead);
				prefaulted = goal + ahead;
			}
			ret = map_alloc(m, lblk, goal, fill, &pblk);
			/*
			 * Full, but the commit frees the blocks that copies
			 * replaced: commit, then change in place from here
			 * on, so that the last free block holds data.
			 */
			if (ret == -ENOSPC && !m->no_copy && !m->extents &&
			    (m->ndefer || m->nfresh)) {
				ret = write_commit(m, off + *done);
				m->no_copy = true;
				if (!ret)
					ret = map_alloc(m, lblk, goal, fill,
							&pblk);
			}
		} else {
			fill = NULL;
		}
		if (ret)
			break;
		if (!fill) {
			ret = engine_block_ptr(img, m->ino, pblk, (void **)&p);
			if (ret)
				break;
			memcpy(p + in, buf + *done, n);
		}
		*done += n;
		goal = pblk + 1;
	}
	return ret;
}

ssize_t xip_file_write(struct xip_image *img, ext2_ino_t ino, uint64_t off,
		       const void *buf, size_t len)
{
	uint64_t size;
	struct xip_map m;
	size_t done = 0;
	int ret, wret;

	if (xip_interrupted())
		return xip_error(-EINTR, "interrupted");
	ret = write_open(img, ino, &m);
	if (ret)
		return ret;
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	if (off > max_size(&m) || len > max_size(&m) - off) {
		map_close(&m);
		return xip_error(-EFBIG,
				 "inode %u: a write up to byte %llu exceeds the largest file size (%llu)",
				 ino, U64(off + len), U64(max_size(&m)));
	}
	size = EXT2_I_SIZE(&m.inode);
	/* bytes past the old end of the last block must read as zeros */
	ret = off > size ? zero_tail(&m, size) : 0;
	if (!ret)
		ret = write_range(&m, off, buf, len, &done);
	/* what was copied is committed, even when the rest failed */
	if (done)
		m.dirty = true;
	wret = write_commit(&m, done ? off + done : 0);
	map_close(&m);
	if (wret)
		return wret;
	if (ret && !done)
		return ret;
	return (ssize_t)done;
}

int xip_file_truncate(struct xip_image *img, ext2_ino_t ino, uint64_t size)
{
	uint64_t old, bs = img->block_size;
	struct xip_map m;
	int ret;

	ret = write_open(img, ino, &m);
	if (ret)
		return ret;
	if (size > max_size(&m)) {
		map_close(&m);
		return xip_error(-EFBIG,
				 "inode %u: size %llu exceeds the largest file size (%llu)",
				 ino, U64(size), U64(max_size(&m)));
	}
	old = EXT2_I_SIZE(&m.inode);
	if (size < old) {
		/* xip_truncate_page, then the blocks past the end */
		ret = zero_tail(&m, size);
		if (!ret)
			ret = map_free_from(&m, blocks_for(size, bs));
	} else if (size > old) {
		ret = zero_tail(&m, old);	/* growing leaves a hole */
		/* blocks a damaged map holds past the old end must not show */
		if (!ret)
			ret = map_free_from(&m, blocks_for(old, bs));
	}
	/* the new size and the unlinked blocks go to the image at once */
	if (!ret && size != old)
		ret = set_size(&m, size);
	if (!ret) {
		touch_mc(img, &m.inode);
		m.dirty = true;
		ret = map_commit(&m);
	}
	map_close(&m);		/* on failure: the file as it was */
	return ret;
}

int xip_create(struct xip_image *img, const char *path, unsigned int mode,
	       ext2_ino_t *ino)
{
	char name[EXT2_NAME_LEN + 1];
	struct ext2_inode_large in;
	ext2_filsys fs = img->fs;
	ext2_ino_t dir, found;
	errcode_t err;
	int ret;

	*ino = 0;
	if (!img->writable)
		return xip_error(-EROFS, "%s: opened read-only", img->seg->path);
	ret = xip_lookup_parent(img, path, &dir, name);
	if (ret)
		return ret;
	ret = xip_dir_find(img, dir, name, (unsigned int)strlen(name), &found);
	if (!ret)
		return xip_path_error(-EEXIST, path);
	if (ret != -ENOENT)
		return ret;
	ret = engine_load_bitmaps(img);
	if (ret)
		return ret;
	/*
	 * In the order a crash can only leak: the inode in use in the bitmaps
	 * (the image's too), then written whole, then named.  Stopped before
	 * the name, it is an unattached empty inode that e2fsck -p clears.
	 */
	err = ext2fs_new_inode(fs, dir, LINUX_S_IFREG | 0600, NULL, ino);
	if (err)
		return xip_error_ext2(err, "%s", path);
	ext2fs_inode_alloc_stats2(fs, *ino, +1, 0);
	engine_mark_inode(img, *ino);
	engine_step();
	memset(&in, 0, sizeof(in));
	in.i_mode = (uint16_t)(LINUX_S_IFREG | (mode & 07777));
	in.i_uid = (uint16_t)geteuid();
	ext2fs_set_i_uid_high(in, geteuid() >> 16);
	in.i_gid = (uint16_t)getegid();
	ext2fs_set_i_gid_high(in, getegid() >> 16);
	in.i_links_count = 1;
	touch_mc(img, &in);
	in.i_atime = in.i_mtime;
	err = ext2fs_write_new_inode(fs, *ino, (struct ext2_inode *)&in);
	if (err)
		return xip_error_ext2(err, "%s: writing inode %u", path, *ino);
	engine_step();
	err = ext2fs_link(fs, dir, name, *ino, EXT2_FT_REG_FILE);
	if (err == EXT2_ET_DIR_NO_SPACE) {
		err = ext2fs_expand_dir(fs, dir);
		if (!err)
			err = ext2fs_link(fs, dir, name, *ino, EXT2_FT_REG_FILE);
	}
	if (err) {
		/* unnamed: give the inode back, as if it had never been */
		in.i_links_count = 0;
		in.i_dtime = in.i_mtime;
		ext2fs_write_inode_full(fs, *ino, (struct ext2_inode *)&in,
					sizeof(in));
		ext2fs_inode_alloc_stats2(fs, *ino, -1, 0);
		*ino = 0;
		return xip_error_ext2(err, "%s", path);
	}
	engine_step();
	/* the parent changed */
	ret = inode_read_checked(img, dir, &in);
	if (!ret) {
		touch_mc(img, &in);
		err = ext2fs_write_inode_full(fs, dir, (struct ext2_inode *)&in,
					      sizeof(in));
		if (err)
			ret = xip_error_ext2(err, "%s: directory inode %u",
					     path, dir);
	}
	return ret;
}
