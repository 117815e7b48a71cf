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
#include "kcopy.h"

#define U64(x) ((unsigned long long)(x))
#define XIP_MAXSYMLINKS 40

/* Holes read as this (block sizes go up to 64 KiB). */
static const uint8_t zero_page[65536];

static uint64_t blocks_for(uint64_t size, uint64_t bs)
{
	return size / bs + (size % bs != 0);
}

/* ---- directories -------------------------------------------------------- */

/* Called per live entry; a non-zero return stops the scan with it. */
typedef int (*dirent_fn)(void *ctx, ext2_ino_t ino, const char *name,
			 unsigned int len, unsigned int type);

static int dir_block_scan(struct xip_map *m, uint64_t lblk, const uint8_t *p,
			  dirent_fn fn, void *ctx)
{
	ext2_filsys fs = m->img->fs;
	unsigned int bs = m->img->block_size, off = 0, rec, nlen;
	const struct ext2_dir_entry *de;
	int ret;

	while (off < bs) {
		if (bs - off < 8)
			goto corrupt;
		de = (const struct ext2_dir_entry *)(p + off);
		if (ext2fs_get_rec_len(fs, (struct ext2_dir_entry *)de, &rec))
			goto corrupt;
		nlen = (unsigned int)ext2fs_dirent_name_len(de);
		if (rec < 8 || rec % 4 || rec > bs - off || nlen + 8 > rec)
			goto corrupt;
		if (de->inode) {
			if (de->inode > fs->super->s_inodes_count || !nlen)
				goto corrupt;
			ret = fn(ctx, de->inode, de->name, nlen,
				 ext2fs_has_feature_filetype(fs->super) ?
				 (unsigned int)ext2fs_dirent_file_type(de) : 0);
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
 * The size the kernel sees: 64 bits for regular files (and directories on
 * largedir images); other inodes keep only i_size, ext2's i_dir_acl being
 * the high word (ext2_iget(), ext4_isize()).
 */
static uint64_t inode_size(struct xip_image *img,
			   const struct ext2_inode_large *in)
{
	if (LINUX_S_ISREG(in->i_mode) ||
	    (LINUX_S_ISDIR(in->i_mode) &&
	     ext2fs_has_feature_largedir(img->fs->super)))
		return EXT2_I_SIZE(in);
	return in->i_size;
}

/*
 * The blocks of one directory seen so far.  A block the map hands out
 * twice is corruption, and without this check a block map that points
 * back at itself lists the same entries without bound.
 */
struct dir_seen {
	ext2fs_block_bitmap map;
	blk64_t first;
};

static int dir_seen_add(struct xip_map *m, struct dir_seen *s, blk64_t pblk,
			uint64_t lblk)
{
	ext2_filsys fs = m->img->fs;
	__u16 saved;
	errcode_t err;

	if (!s->first) {
		s->first = pblk;	/* most directories stop here */
		return 0;
	}
	if (!s->map) {
		saved = fs->default_bitmap_type;
		fs->default_bitmap_type = EXT2FS_BMAP64_RBTREE;
		err = ext2fs_allocate_block_bitmap(fs, "directory blocks",
						   &s->map);
		fs->default_bitmap_type = saved;
		if (err)
			return xip_error_ext2(err, "directory inode %u",
					      m->ino);
		ext2fs_mark_block_bitmap2(s->map, s->first);
	}
	/* engine_check_block() has put pblk inside the bitmap's range */
	if (ext2fs_test_block_bitmap2(s->map, pblk))
		return xip_error(-EUCLEAN,
				 "directory inode %u: block %llu mapped twice (again at file block %llu)",
				 m->ino, U64(pblk), U64(lblk));
	ext2fs_mark_block_bitmap2(s->map, pblk);
	return 0;
}

static int dir_scan(struct xip_image *img, ext2_ino_t dir, dirent_fn fn,
		    void *ctx)
{
	struct dir_seen seen = { NULL, 0 };
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
	end = blocks_for(inode_size(img, &m.inode), img->block_size);
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
	if (seen.map)
		ext2fs_free_block_bitmap(seen.map);
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
static int dir_find(struct xip_image *img, ext2_ino_t dir, const char *name,
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

static int path_error(int err, const char *path)
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
		return ret ? ret : path_error(-ENOTDIR, w->path);
	if (n == 1 && c[0] == '.')
		return 0;
	if (n == 2 && c[0] == '.' && c[1] == '.') {
		/* never above the image root */
		if (w->cur == EXT2_ROOT_INO)
			return 0;
		ret = dir_find(w->img, w->cur, "..", 2, &child);
		if (ret == -ENOENT)
			return xip_error(-EUCLEAN,
					 "%s: directory inode %u has no '..' entry",
					 w->path, w->cur);
		if (!ret)
			w->cur = child;
		return ret;
	}
	if (n > EXT2_NAME_LEN)
		return path_error(-ENAMETOOLONG, w->path);
	ret = dir_find(w->img, w->cur, c, (unsigned int)n, &child);
	if (ret == -ENOENT)
		return path_error(-ENOENT, w->path);
	if (!ret)
		ret = inode_read_checked(w->img, child, &in);
	if (ret)
		return ret;
	if (LINUX_S_ISLNK(in.i_mode) &&
	    (more || !(w->flags & XIP_LOOKUP_NOFOLLOW))) {
		if (++w->links > XIP_MAXSYMLINKS)
			return path_error(-ELOOP, w->path);
		ret = xip_readlink(w->img, child, target, sizeof(target));
		if (ret)
			return ret;
		if (!target[0])
			return path_error(-ENOENT, w->path);
		if (target[0] == '/')
			w->cur = EXT2_ROOT_INO;
		ret = splice_link(buf, rest, target);
		return ret ? path_error(ret, w->path) : 0;
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
		return path_error(-ENAMETOOLONG, w->path);
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
		ret = ret ? ret : path_error(-ENOTDIR, w->path);
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
		return path_error(-EISDIR, path);
	slash = strrchr(path, '/');
	last = slash ? slash + 1 : path;
	if (!strcmp(last, ".") || !strcmp(last, ".."))
		return path_error(-EISDIR, path);
	if (strlen(last) > EXT2_NAME_LEN)
		return path_error(-ENAMETOOLONG, path);
	dpath = strndup(path, slash ? (size_t)(slash - path) + 1 : 0);
	if (!dpath)
		return xip_error(-ENOMEM, "out of memory");
	ret = xip_lookup(img, dpath[0] ? dpath : "/", 0, dir);
	if (!ret && !is_dir(img, *dir, &ret))
		ret = ret ? ret : path_error(-ENOTDIR, path);
	if (ret == -ENOENT || ret == -ENOTDIR)
		path_error(ret, path);
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

static bool has_extra_times(struct xip_image *img,
			    const struct ext2_inode_large *in)
{
	return EXT2_INODE_SIZE(img->fs->super) > EXT2_GOOD_OLD_INODE_SIZE &&
	       EXT2_GOOD_OLD_INODE_SIZE + in->i_extra_isize >=
	       offsetof(struct ext2_inode_large, i_crtime);
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
	x = has_extra_times(img, in);
	st->ino = ino;
	st->mode = in->i_mode;
	st->uid = inode_uid(*in);
	st->gid = inode_gid(*in);
	st->links = in->i_links_count;
	st->size = inode_size(img, in);
	st->sectors = ext2fs_get_stat_i_blocks(img->fs, (struct ext2_inode *)in);
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
	struct xip_segment *seg;
	const uint8_t *p;		/* the pending run */
	uint64_t off;			/* its offset in the segment */
	size_t n;
	uint64_t done;			/* bytes delivered */
};

static int sink_error(const struct sink *s, int err)
{
	if (err == -EIO && s->out)
		return xip_error(err, "%s: the segment's file shrank",
				 s->seg->path);
	return xip_error(err, "%s: write error: %s", s->out_name,
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
		ret = map_block(m, lblk, &pblk, &cnt);
		if (ret)
			break;
		n = end - pos;
		if (cnt <= (n + in) / bs)
			n = cnt * bs - in;
		if (!pblk) {
			ret = sink_zeros(s, n);
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
	map_close(&m);
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
	if (has_extra_times(img, in)) {
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

/* Where the bytes of a write come from. */
struct wsrc {
	const uint8_t *buf;	/* the bytes, or NULL: */
	int fd;			/* a regular file, read from @fd_off on */
	uint64_t fd_off;
	const char *name;	/* names @fd in errors */
	uint8_t *bounce;	/* one block of @fd, for map_alloc's fill */
};

/*
 * Bytes [pos, pos + n) of the write to byte @at of the segment; *@moved
 * (when given) is what arrived before a failure.
 */
static int src_copy_part(struct xip_map *m, struct wsrc *src, uint64_t pos,
			 uint64_t at, uint64_t n, uint64_t *moved)
{
	struct xip_segment *seg = m->img->seg;
	uint64_t o = src->fd_off + pos;
	int ret;

	if (src->buf) {
		ret = xip_seg_pwrite(seg, src->buf + pos, (size_t)n, at);
		o += ret ? 0 : n;
	} else {
		ret = xip_kcopy_in(seg, at, src->fd, &o, n);
	}
	if (moved)
		*moved = o - (src->fd_off + pos);
	if (ret == -ENODATA)
		return xip_error(-EIO, "%s: shrank while being read",
				 src->name);
	if (ret)
		return xip_error(ret, "inode %u: copying %s into %s: %s",
				 m->ino, src->buf ? "the data" : src->name,
				 seg->path, strerror(-ret));
	return 0;
}

static int src_copy(struct xip_map *m, struct wsrc *src, uint64_t pos,
		    uint64_t at, uint64_t n)
{
	return src_copy_part(m, src, pos, at, n, NULL);
}

/* One whole block of the write at @pos, in memory (map_alloc's fill). */
static const void *src_block(struct xip_map *m, struct wsrc *src,
			     uint64_t pos, int *ret)
{
	size_t bs = m->img->block_size, have = 0;

	if (src->buf)
		return src->buf + pos;
	if (!src->bounce && !(src->bounce = malloc(bs))) {
		*ret = xip_error(-ENOMEM, "out of memory");
		return NULL;
	}
	while (have < bs) {
		ssize_t r = pread(src->fd, src->bounce + have, bs - have,
				  (off_t)(src->fd_off + pos + have));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			*ret = r ? xip_error(-errno, "%s: %s", src->name,
					     strerror(errno)) :
				   xip_error(-EIO, "%s: shrank while being read",
					     src->name);
			return NULL;
		}
		have += (size_t)r;
	}
	return src->bounce;
}

#define WRITE_BATCH 256		/* blocks allocated before one copy */

/*
 * Whole new blocks past the file's old end (@lblk on): allocate up to
 * @max of them without clearing, move the data in with one kernel call
 * per contiguous run, and only then let the commit link them.  *@bytes is
 * what was written: all of the blocks, or, when the source ended early,
 * what it had (the rest of its last block cleared, the blocks after it
 * given back).  -ENOSPC with nothing allocated: the caller goes block by
 * block.
 */
static int write_batch(struct xip_map *m, struct wsrc *src, uint64_t pos,
		       uint64_t lblk, uint64_t max, blk64_t *goal,
		       uint64_t *bytes)
{
	uint64_t bs = m->img->block_size, k = 0, ok = 0, part = 0;
	blk64_t list[WRITE_BATCH];
	int ret = 0;

	*bytes = 0;
	if (max > WRITE_BATCH)
		max = WRITE_BATCH;
	while (k < max) {
		if (k && map_txn_due(m, lblk + k))
			break;
		ret = map_alloc(m, lblk + k, *goal, XIP_FILL_LATER, &list[k]);
		if (ret)
			break;
		*goal = list[k] + 1;
		k++;
	}
	if (ret == -ENOSPC && k) {
		xip_error_clear();
		ret = 0;
	}
	for (uint64_t i = 0, j; !ret && i < k; i = j) {
		for (j = i + 1; j < k && list[j] == list[j - 1] + 1; j++)
			;
		ret = src_copy_part(m, src, pos + i * bs, list[i] * bs,
				    (j - i) * bs, &part);
		ok = i * bs + (ret ? part : (j - i) * bs);
	}
	if (ret && k) {
		uint64_t keep = ok / bs + (ok % bs != 0);
		int saved = xip_errcode();
		char msg[XIP_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", xip_errmsg());
		/* no stale bytes in the part of the last block kept */
		if (ok % bs && xip_seg_zero(m->img->seg,
					    list[keep - 1] * bs + ok % bs,
					    bs - ok % bs))
			keep--, ok = keep * bs;
		if (keep < k && map_free_from(m, lblk + keep))
			ok = 0;		/* not unlinked: not committed either */
		*bytes = ok;
		return xip_error(saved ? saved : ret, "%s", msg);
	}
	*bytes = k * bs;
	return ret;
}

/*
 * Copy [off, off + len) in, allocating holes; *done is the bytes copied.
 * New blocks are filled before they are linked, and linked a transaction
 * at a time (map_commit), so that a write stopped anywhere leaves the
 * file as of the last commit plus blocks that e2fsck frees.  Stops with
 * -EINTR at a commit once the caller's interrupt flag is set.  The bytes
 * go in through the segment's file (pwrite, copy_file_range), a run of
 * blocks at a time, not through its mapping.
 */
static int write_range(struct xip_map *m, uint64_t off, struct wsrc *src,
		       size_t len, size_t *done)
{
	struct xip_image *img = m->img;
	uint64_t bs = img->block_size, lblk, in, cnt, n;
	uint64_t old_end = blocks_for(EXT2_I_SIZE(&m->inode), bs);
	blk64_t pblk, goal = 0;
	void *p;
	int ret = 0;

	*done = 0;
	while (*done < len) {
		lblk = (off + *done) / bs;
		in = (off + *done) % bs;
		n = bs - in < len - *done ? bs - in : len - *done;

		if (map_txn_due(m, lblk)) {
			ret = write_commit(m, off + *done);
			if (!ret && xip_interrupted())
				ret = xip_error(-EINTR, "interrupted");
			if (ret)
				break;
		}
		ret = map_block(m, lblk, &pblk, &cnt);
		if (ret)
			break;
		if (pblk) {
			/* mapped: overwrite in place, a run at a time */
			uint64_t run = cnt * bs - in;

			if (run > len - *done)
				run = len - *done;
			ret = engine_block_ptr(img, m->ino, pblk, &p);
			if (!ret)
				ret = engine_block_ptr(img, m->ino,
						       pblk + (in + run - 1) / bs,
						       &p);
			if (!ret)
				ret = src_copy(m, src, *done, pblk * bs + in,
					       run);
			if (ret)
				break;
			*done += run;
			goal = pblk + (in + run - 1) / bs + 1;
			continue;
		}
		if (!goal && lblk && !map_block(m, lblk - 1, &goal, &cnt) &&
		    goal)
			goal++;
		if (!in && len - *done >= bs && lblk >= old_end &&
		    map_alloc_links_late(m)) {
			uint64_t got;

			ret = write_batch(m, src, *done, lblk,
					  (len - *done) / bs, &goal, &got);
			*done += got;
			if (ret && (ret != -ENOSPC || got))
				break;
			xip_error_clear();
			ret = 0;
			if (got)
				continue;
		}
		const void *fill = n == bs ? src_block(m, src, *done, &ret) :
					     NULL;

		if (ret)
			break;
		ret = map_alloc(m, lblk, goal, fill, &pblk);
		/*
		 * Full, but the commit frees the blocks that copies replaced:
		 * commit, then change in place from here on, so that the last
		 * free block holds data.
		 */
		if (ret == -ENOSPC && !m->no_copy && !m->extents &&
		    (m->ndefer || m->nfresh)) {
			ret = write_commit(m, off + *done);
			m->no_copy = true;
			if (!ret)
				ret = map_alloc(m, lblk, goal, fill, &pblk);
		}
		if (!ret && !fill)
			ret = src_copy(m, src, *done, pblk * bs + in, n);
		if (ret)
			break;
		*done += n;
		goal = pblk + 1;
	}
	return ret;
}

static ssize_t write_from(struct xip_image *img, ext2_ino_t ino, uint64_t off,
			  struct wsrc *src, size_t len)
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
		ret = write_range(&m, off, src, len, &done);
	free(src->bounce);
	src->bounce = NULL;
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
	ret = dir_find(img, dir, name, (unsigned int)strlen(name), &found);
	if (!ret)
		return path_error(-EEXIST, path);
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
