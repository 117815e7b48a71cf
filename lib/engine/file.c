// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Files on top of get_xip_page: path lookup, directories, symlinks, stat,
 * and the kernel's execute-in-place do_xip_mapping_read, generic_file_xip_write and
 * xip_truncate_page.  Every byte of file data is copied straight between
 * the caller's buffer and the segment; there is no cache and no bounce
 * buffer, and no read-ahead.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/xip_engine.h"
#include "engine/engine_int.h"
#include "util/xip_debug.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"
#include "segment/xip_kcopy.h"
#include "segment/xip_segment.h"
#include "reader/xip_image.h"

/* Holes read as this (block sizes go up to 64 KiB). */
static const uint8_t zero_page[65536];

/*
 * Directories, symlinks, path lookup and stat are the reader's
 * (fsread.c), as are the block maps read here.
 */

/* ---- read: do_xip_mapping_read ------------------------------------------ */

/*
 * Where the pieces of a read go: to an actor (pointers into the segment,
 * adjacent ones merged into one call) or to a descriptor (the kernel
 * copies each contiguous run out of the segment's file).
 */
struct sink {
	xip_read_actor actor;
	void *ctx;
	struct xip_kcopy_out *out;	/* else the actor */
	const char *out_name;
	struct xip_seg *seg;
	const uint8_t *p;		/* the pending run */
	uint64_t off;			/* its offset in the segment */
	size_t n;
	uint64_t done;			/* bytes delivered */
};

static int sink_error(const struct sink *s, int err)
{
	if (err == -EIO && s->out)
		return xip_error_obj(err, XIP_OBJ_IMAGE, s->seg->path,
				     "the segment's file shrank");
	return xip_error_obj(err, XIP_OBJ_FD, s->out_name, "write error: %s",
			     strerror(-err));
}

static int sink_flush(struct sink *s)
{
	int ret = 0;

	if (!s->n)
		return 0;
	if (s->out) {
		ret = xip_kcopy_out(s->out, s->seg, s->off, s->n);
		if (ret)
			ret = sink_error(s, ret);
	} else {
		ret = s->actor(s->ctx, s->p, s->n);
	}
	if (!ret)
		s->done += s->n;
	s->n = 0;
	return ret;
}

static int sink_data(struct sink *s, const uint8_t *p, size_t n)
{
	if (s->n && s->p + s->n == p) {
		s->n += n;
		return 0;
	}
	int ret = sink_flush(s);

	s->p = p;
	s->off = (uint64_t)(p - s->seg->base);
	s->n = n;
	return ret;
}

static int sink_zeros(struct sink *s, uint64_t n)
{
	int ret = sink_flush(s);

	if (ret)
		return ret;
	if (s->out) {
		ret = xip_kcopy_zeros(s->out, n);
		if (ret)
			return sink_error(s, ret);
		s->done += n;
		return 0;
	}
	while (n) {
		size_t k = n < sizeof(zero_page) ? (size_t)n : sizeof(zero_page);

		ret = s->actor(s->ctx, zero_page, k);
		if (ret)
			return ret;
		s->done += k;
		n -= k;
	}
	return 0;
}

static int read_open(struct xip_image *img, ext2_ino_t ino, struct xip_map *m)
{
	int ret = xip_map_open(img, ino, m);

	if (ret)
		return ret;
	if (LINUX_S_ISDIR(m->inode.i_mode))
		ret = xip_error(-EISDIR, "inode %u: is a directory", ino);
	else if (!LINUX_S_ISREG(m->inode.i_mode))
		ret = xip_error(-EINVAL, "inode %u: not a regular file", ino);
	if (ret)
		xip_map_close(m);
	return ret;
}

/*
 * Pieces of [pos, end) in file order: holes as zeros, data where the
 * engine finds it in the segment.
 */
static int read_range(struct xip_map *m, uint64_t pos, uint64_t end,
		      struct sink *s)
{
	struct xip_image *img = m->img;
	uint64_t bs = img->block_size, lblk, in, n, cnt;
	blk64_t pblk;
	void *p;
	int ret = 0;

	s->seg = img->seg;
	while (pos < end) {
		lblk = pos / bs;
		in = pos % bs;
		ret = xip_map_block(m, lblk, &pblk, &cnt);
		if (ret)
			break;
		n = end - pos;
		if (cnt <= (n + in) / bs)
			n = cnt * bs - in;
		if (!pblk) {
			ret = sink_zeros(s, n);
		} else {
			ret = xip_engine_block_ptr(img, m->ino, pblk, &p);
			if (!ret)
				ret = xip_seg_range(img->seg,
							pblk * bs + in, n,
							&p);
			/* a lazy fill's failure is said already */
			if (ret && ret != -EIO && ret != -ETIMEDOUT)
				ret = xip_error(ret, "inode %u: block %llu: outside the segment",
						m->ino, U64(pblk));
			if (ret)
				break;
			ret = sink_data(s, p, (size_t)n);
		}
		if (ret)
			break;
		pos += n;
	}
	if (!ret)
		ret = sink_flush(s);
	return ret;
}

static ssize_t read_to_sink(struct xip_image *img, ext2_ino_t ino,
			    uint64_t off, size_t len, struct sink *s)
{
	uint64_t size, end;
	struct xip_map m;
	int ret;

	ret = read_open(img, ino, &m);
	if (ret)
		return ret;
	size = EXT2_I_SIZE(&m.inode);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	end = off < size ? (len < size - off ? off + len : size) : off;
	ret = read_range(&m, off, end, s);
	xip_map_close(&m);
	/* a descriptor's position is past what failed: no partial count */
	if (ret && (!s->done || s->out))
		return ret;
	return (ssize_t)s->done;
}

ssize_t xip_file_read_actor(struct xip_image *img, ext2_ino_t ino,
			    uint64_t off, size_t len, xip_read_actor actor,
			    void *ctx)
{
	struct sink s = { .actor = actor, .ctx = ctx };

	return read_to_sink(img, ino, off, len, &s);
}

ssize_t xip_file_read_fd(struct xip_image *img, ext2_ino_t ino, uint64_t off,
			 size_t len, int fd, const char *fd_name)
{
	struct xip_kcopy_out out;
	struct sink s = { .out = &out, .out_name = fd_name };

	xip_kcopy_out_init(&out, fd);
	return read_to_sink(img, ino, off, len, &s);
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
	int ret = xip_image_begin_change(img);

	return ret ? ret : read_open(img, ino, m);
}

/* The largest file size this image and this map allow. */
static uint64_t max_size(struct xip_map *m)
{
	uint64_t bs = m->img->block_size, lim = xip_map_limit(m);

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
	ret = xip_map_block(m, from / bs, &pblk, &n);
	if (ret || !pblk)
		return ret;
	ret = xip_engine_block_ptr(m->img, m->ino, pblk, (void **)&p);
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
	return ret ? ret : xip_map_commit(m);
}

/* Where the bytes of a write come from. */
struct wsrc {
	const uint8_t *buf;	/* the bytes, or NULL: */
	int fd;			/* a regular file, read from @fd_off on */
	uint64_t fd_off;
	const char *name;	/* names @fd in errors */
};

/* Bytes [pos, pos + n) of the write to byte @at of the segment. */
static int src_copy(struct xip_map *m, struct wsrc *src, uint64_t pos,
		    uint64_t at, uint64_t n)
{
	struct xip_seg *seg = m->img->seg;
	uint64_t done = 0;
	int ret;

	if (src->buf) {
		ret = xip_seg_pwrite(seg, at, src->buf + pos, n);
	} else {
		ret = xip_seg_copy_in(seg, at, src->fd, src->fd_off + pos, n,
				      &done);
		if (!ret && done < n)
			ret = -ENODATA;
	}
	if (ret == -ENODATA)
		return xip_error_obj(-EIO, XIP_OBJ_FD, src->name,
				     "shrank while being read");
	if (ret)
		return xip_error(ret, "inode %u: copying %s into %s: %s",
				 m->ino, src->buf ? "the data" : src->name,
				 seg->path, strerror(-ret));
	return 0;
}

/* A run of file blocks of the write: holes it filled, or old blocks. */
struct wpiece {
	uint64_t lblk, n;
	bool fresh;
};

struct wplan {
	struct wpiece *p;
	size_t n, cap;
};

static int plan_add(struct wplan *pl, uint64_t lblk, uint64_t n, bool fresh)
{
	struct wpiece *last = pl->n ? &pl->p[pl->n - 1] : NULL;

	if (last && last->fresh == fresh && last->lblk + last->n == lblk) {
		last->n += n;
		return 0;
	}
	if (xip_grow((void **)&pl->p, &pl->cap, pl->n + 1, sizeof(*pl->p)))
		return xip_error(-ENOMEM, "out of memory");
	pl->p[pl->n++] = (struct wpiece){ lblk, n, fresh };
	return 0;
}

/* Blocks between two looks at the interrupt flag. */
#define CHECK_EVERY 256

/*
 * The first pass: every hole of [off, off + len) gets its block before a
 * byte is copied, so that a full image or a map that cannot grow is found
 * while the file is still as it was.  Blocks the write covers whole are
 * filled by the second pass before the commit links them (left as they
 * are here where the commit links them, cleared where they are linked at
 * once); blocks it covers in part are cleared.
 */
static int write_reserve(struct xip_map *m, uint64_t off, size_t len,
			 struct wplan *pl)
{
	uint64_t bs = m->img->block_size, first = off / bs;
	uint64_t last = (off + len - 1) / bs, lblk = first, cnt, seen = 0;
	blk64_t pblk, goal = 0;
	int ret;

	pl->n = 0;
	if (first && !xip_map_block(m, first - 1, &goal, &cnt) && goal)
		goal++;
	while (lblk <= last) {
		ret = xip_map_block(m, lblk, &pblk, &cnt);
		if (ret)
			return ret;
		if (cnt > last - lblk + 1)
			cnt = last - lblk + 1;
		if (pblk) {
			ret = plan_add(pl, lblk, cnt, false);
			if (ret)
				return ret;
			goal = pblk + cnt;
			lblk += cnt;
			continue;
		}
		for (uint64_t end = lblk + cnt; lblk < end; lblk++) {
			bool whole = lblk * bs >= off &&
				     (lblk + 1) * bs <= off + len;
			const void *fill = NULL;

			if (whole && xip_map_alloc_links_late(m))
				fill = XIP_FILL_LATER;

			if (++seen % CHECK_EVERY == 0 && xip_interrupted())
				return xip_error(-EINTR, "interrupted");
			ret = xip_map_alloc(m, lblk, goal, fill, &pblk);
			if (!ret)
				ret = plan_add(pl, lblk, 1, true);
			if (ret)
				return ret;
			goal = pblk + 1;
		}
	}
	return 0;
}

/*
 * Between the passes, once every block is allocated and every changed
 * indirect block copied: no old block the write would overwrite holds the
 * file's block map (a copy, an indirect block looked up, or one the commit
 * frees).  A damaged image can name one as a data block; writing there
 * would overwrite the map.  Refused before any byte is written.
 */
static int write_check_old(struct xip_map *m, const struct wplan *pl)
{
	for (size_t i = 0; i < pl->n; i++) {
		const struct wpiece *pc = &pl->p[i];
		uint64_t lblk = pc->lblk, stop = pc->lblk + pc->n, cnt;
		blk64_t pblk;
		int ret;

		while (!pc->fresh && lblk < stop) {
			ret = xip_map_block(m, lblk, &pblk, &cnt);
			if (ret)
				return ret;
			if (cnt > stop - lblk)
				cnt = stop - lblk;
			if (pblk && xip_map_run_holds_map(m, pblk, cnt))
				return xip_error(-EUCLEAN, "inode %u: file blocks"
						 " from %llu are in blocks from %llu,"
						 " one of which holds the file's block"
						 " map (a damaged image)", m->ino,
						 U64(lblk), U64(pblk));
			lblk += cnt ? cnt : 1;
		}
	}
	return 0;
}

/*
 * The second pass: the bytes of the pieces that are (@fresh) or are not
 * new blocks, a physically contiguous run at a time, through the
 * segment's file (pwrite, copy_file_range), not through its mapping.
 */
static int write_copy(struct xip_map *m, uint64_t off, size_t len,
		      struct wsrc *src, const struct wplan *pl, bool fresh)
{
	struct xip_image *img = m->img;
	uint64_t bs = img->block_size, end = off + len, seen = 0;
	int ret;

	for (size_t i = 0; i < pl->n; i++) {
		const struct wpiece *pc = &pl->p[i];
		uint64_t lblk = pc->lblk, stop = pc->lblk + pc->n, cnt;

		if (pc->fresh != fresh)
			continue;
		while (lblk < stop) {
			uint64_t from, to, at;
			blk64_t pblk;
			void *p;

			ret = xip_map_block(m, lblk, &pblk, &cnt);
			if (!ret && !pblk)
				ret = xip_error(-EUCLEAN, "inode %u: file block %llu: lost its block",
						m->ino, U64(lblk));
			if (ret)
				return ret;
			if (cnt > stop - lblk)
				cnt = stop - lblk;
			/* old blocks: checked as the reader checks them */
			if (!fresh)
				ret = xip_engine_block_ptr(img, m->ino, pblk,
							   &p);
			if (!fresh && !ret)
				ret = xip_engine_block_ptr(img, m->ino,
							   pblk + cnt - 1, &p);
			if (ret)
				return ret;
			from = lblk * bs > off ? lblk * bs : off;
			to = (lblk + cnt) * bs < end ? (lblk + cnt) * bs : end;
			at = pblk * bs + (from - lblk * bs);
			ret = src_copy(m, src, from - off, at, to - from);
			if (ret)
				return ret;
			seen += cnt;
			if (seen >= CHECK_EVERY) {
				seen = 0;
				if (xip_interrupted())
					return xip_error(-EINTR, "interrupted");
			}
			lblk += cnt;
		}
	}
	return 0;
}

/*
 * All or nothing.  The holes get their blocks first (write_reserve), then
 * the new blocks get their bytes, then the old blocks, and one commit
 * writes the inode that links the new blocks and covers them with the new
 * size.  Whatever fails before the commit is taken back (xip_map_undo):
 * the file keeps its size, its blocks, its i_blocks and its times, and the
 * blocks allocated for it are free again.  Only a source that fails while
 * old blocks are being overwritten leaves the bytes it overwrote.  On a
 * full image whose indirect blocks would have to be copied, the write is
 * tried once more with them changed in place (their old bytes kept by the
 * undo log): the last free block can hold data.  A crash leaves the file
 * as it was plus blocks e2fsck frees (on a full image: changed indirect
 * blocks, which e2fsck -p corrects).
 */
static ssize_t write_from(struct xip_image *img, ext2_ino_t ino, uint64_t off,
			  struct wsrc *src, size_t len)
{
	struct xip_undo undo;
	struct wplan plan = { 0 };
	struct xip_map m;
	uint64_t size;
	int ret;

	if (xip_interrupted())
		return xip_error(-EINTR, "interrupted");
	ret = write_open(img, ino, &m);
	if (ret)
		return ret;
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	if (off > max_size(&m) || len > max_size(&m) - off) {
		xip_map_close(&m);
		return xip_error(-EFBIG,
				 "inode %u: a write up to byte %llu exceeds the largest file size (%llu)",
				 ino, U64(off + len), U64(max_size(&m)));
	}
	if (!len) {
		xip_map_close(&m);
		return 0;
	}
	if (!src->buf) {
		struct stat st;

		/* a source known to be short fails before anything changes */
		if (!fstat(src->fd, &st) && S_ISREG(st.st_mode) &&
		    (uint64_t)st.st_size < src->fd_off + len) {
			xip_map_close(&m);
			return xip_error_obj(-EIO, XIP_OBJ_FD, src->name,
					     "%llu bytes from byte %llu asked, it has %llu",
					     U64(len), U64(src->fd_off),
					     U64(st.st_size));
		}
	}
	size = EXT2_I_SIZE(&m.inode);
	XIP_DBG(ENGINE, "inode %u: write of %zu bytes at %llu (size %llu)%s%s",
		ino, len, U64(off), U64(size), src->buf ? "" : " from ",
		src->buf ? "" : src->name);
	ret = xip_map_undo_begin(&m, &undo);
	if (ret) {
		xip_map_close(&m);
		return ret;
	}
	ret = write_reserve(&m, off, len, &plan);
	if (ret == -ENOSPC && !m.extents && !m.no_copy && m.ndefer) {
		/* full: try again changing the indirect blocks in place */
		ret = xip_map_undo(&m);
		m.no_copy = true;
		if (!ret) {
			xip_error_clear();
			ret = write_reserve(&m, off, len, &plan);
		}
	}
	if (!ret)
		ret = write_check_old(&m, &plan);
	/* bytes past the old end of the last block must read as zeros */
	if (!ret && off > size)
		ret = zero_tail(&m, size);
	if (!ret)
		ret = write_copy(&m, off, len, src, &plan, true);
	if (!ret)
		ret = write_copy(&m, off, len, src, &plan, false);
	if (!ret && undo.lost)
		ret = xip_error(-ENOMEM, "out of memory");
	if (!ret) {
		m.dirty = true;
		ret = write_commit(&m, off + len);
	}
	XIP_DBG(ENGINE, "inode %u: write %s", ino,
		ret ? "failed: taken back" : "committed");
	/* the record stays the failure's: the undo records only its own */
	if (ret)
		xip_map_undo(&m);
	xip_map_undo_end(&m);
	xip_map_close(&m);
	free(plan.p);
	return ret ? ret : (ssize_t)len;
}

ssize_t xip_file_write(struct xip_image *img, ext2_ino_t ino, uint64_t off,
		       const void *buf, size_t len)
{
	struct wsrc src = { .buf = buf, .fd = -1 };

	return write_from(img, ino, off, &src, len);
}

ssize_t xip_file_write_fd(struct xip_image *img, ext2_ino_t ino, uint64_t off,
			  int fd, uint64_t fd_off, size_t len,
			  const char *fd_name)
{
	struct wsrc src = { .fd = fd, .fd_off = fd_off, .name = fd_name };

	return write_from(img, ino, off, &src, len);
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
		xip_map_close(&m);
		return xip_error(-EFBIG,
				 "inode %u: size %llu exceeds the largest file size (%llu)",
				 ino, U64(size), U64(max_size(&m)));
	}
	old = EXT2_I_SIZE(&m.inode);
	XIP_DBG(ENGINE, "inode %u: truncate from %llu to %llu bytes", ino,
		U64(old), U64(size));
	if (size < old) {
		/* xip_truncate_page, then the blocks past the end */
		ret = zero_tail(&m, size);
		if (!ret)
			ret = xip_map_free_from(&m, div_round_up(size, bs));
	} else if (size > old) {
		ret = zero_tail(&m, old);	/* growing leaves a hole */
		/* blocks a damaged map holds past the old end must not show */
		if (!ret)
			ret = xip_map_free_from(&m, div_round_up(old, bs));
	}
	/* the new size and the unlinked blocks go to the image at once */
	if (!ret && size != old)
		ret = set_size(&m, size);
	if (!ret) {
		touch_mc(img, &m.inode);
		m.dirty = true;
		ret = xip_map_commit(&m);
	}
	xip_map_close(&m);		/* on failure: the file as it was */
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
		return xip_error_obj(-EROFS, XIP_OBJ_IMAGE, img->seg->path,
				     "opened read-only");
	ret = xip_lookup_parent(img, path, &dir, name);
	if (ret)
		return ret;
	ret = xip_dir_find(img, dir, name, (unsigned int)strlen(name), &found);
	if (!ret)
		return xip_path_error(-EEXIST, path);
	if (ret != -ENOENT)
		return ret;
	ret = xip_engine_load_bitmaps(img);
	if (ret)
		return ret;
	/*
	 * In the order a crash can only leak: the inode in use in the bitmaps
	 * (the image's too), then written whole, then named.  Stopped before
	 * the name, it is an unattached empty inode that e2fsck -p clears.
	 */
	err = ext2fs_new_inode(fs, dir, LINUX_S_IFREG | 0600, NULL, ino);
	if (err) {
		xip_error_ext2(err, "%s", path);
		return xip_error_set_obj(XIP_OBJ_FILE, path);
	}
	ext2fs_inode_alloc_stats2(fs, *ino, +1, 0);
	xip_engine_mark_inode(img, *ino);
	xip_engine_step();
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
	if (err) {
		xip_error_ext2(err, "%s: writing inode %u", path, *ino);
		return xip_error_set_obj(XIP_OBJ_FILE, path);
	}
	xip_engine_step();
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
		xip_error_ext2(err, "%s", path);
		return xip_error_set_obj(XIP_OBJ_FILE, path);
	}
	xip_engine_step();
	/* the parent changed */
	ret = xip_inode_read_checked(img, dir, &in);
	if (!ret) {
		touch_mc(img, &in);
		err = ext2fs_write_inode_full(fs, dir, (struct ext2_inode *)&in,
					      sizeof(in));
		if (err) {
			xip_error_ext2(err, "%s: directory inode %u", path,
				       dir);
			ret = xip_error_set_obj(XIP_OBJ_FILE, path);
		}
	}
	return ret;
}
