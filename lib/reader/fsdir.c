// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The libc-only reader (reader_int.h): directories (scanned block by block,
 * every record checked, a block seen twice refused), lookup of names and
 * paths with symbolic links followed, readlink and stat.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/xip_image.h"
#include "reader/xip_reader.h"
#include "reader/reader_int.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"

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
	bool filetype = fs->feat_incompat & EXT2_FEATURE_INCOMPAT_FILETYPE;
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
	/* xip_engine_check_block() has made pblk a data block: never 0 */
	if (s->set[seen_slot(s, pblk)] == pblk)
		return xip_error(-EUCLEAN,
				 "directory inode %u: block %llu mapped twice (again at file block %llu)",
				 m->ino, U64(pblk), U64(lblk));
	return seen_insert(s, pblk);
}

/*
 * xip_map_open() of inode @ino, which must be of type @fmt (LINUX_S_IF*):
 * else @err, "inode N: not WHAT", and nothing left open.
 */
static int map_open_as(struct xip_image *img, ext2_ino_t ino, unsigned int fmt,
		       int err, const char *what, struct xip_map *m)
{
	int ret = xip_map_open(img, ino, m);

	if (ret)
		return ret;
	if ((m->inode.i_mode & LINUX_S_IFMT) != fmt) {
		xip_map_close(m);
		return xip_error(err, "inode %u: not %s", ino, what);
	}
	return 0;
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

	ret = map_open_as(img, dir, LINUX_S_IFDIR, -ENOTDIR, "a directory", &m);
	if (ret)
		return ret;
	end = div_round_up(xip_fs_inode_size(img->rd, &m.inode), img->block_size);
	while (lblk < end) {
		ret = xip_map_block(&m, lblk, &pblk, &n);
		if (ret)
			break;
		if (!pblk) {
			lblk += n;
			continue;
		}
		ret = dir_seen_add(&m, &seen, pblk, lblk);
		if (!ret)
			ret = xip_engine_block_ptr(img, dir, pblk, &p);
		if (!ret)
			ret = dir_block_scan(&m, lblk, p, fn, ctx);
		if (ret)
			break;
		lblk++;
	}
	free(seen.set);
	xip_map_close(&m);
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

	if (xip_grow((void **)&l->ents, &l->cap, l->n + 1, sizeof(*e)))
		return xip_error(-ENOMEM, "out of memory");
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

	ret = map_open_as(img, ino, LINUX_S_IFLNK, -EINVAL, "a symbolic link",
			  &m);
	if (ret)
		return ret;
	size = EXT2_I_SIZE(&m.inode);
	if (size >= len || size >= img->block_size) {
		ret = xip_error(-ENAMETOOLONG,
				"inode %u: symbolic link of %llu bytes is too long",
				ino, U64(size));
	} else if (m.nomap) {
		memcpy(buf, m.inode.i_block, size);
		buf[size] = '\0';
	} else {
		ret = xip_map_block(&m, 0, &pblk, &n);
		if (!ret && !pblk)
			ret = xip_error(-EUCLEAN,
					"inode %u: symbolic link without a block",
					ino);
		if (!ret)
			ret = xip_engine_block_ptr(img, ino, pblk, &p);
		if (!ret) {
			memcpy(buf, p, size);
			buf[size] = '\0';
		}
	}
	xip_map_close(&m);
	if (!ret && strlen(buf) != size)
		ret = xip_error(-EUCLEAN,
				"inode %u: symbolic link holds a NUL byte", ino);
	return ret;
}

/* ---- path lookup -------------------------------------------------------- */

static bool is_dir(struct xip_image *img, ext2_ino_t ino, int *err)
{
	struct ext2_inode_large in;

	*err = xip_inode_read_checked(img, ino, &in);
	return !*err && LINUX_S_ISDIR(in.i_mode);
}

int xip_path_error(int err, const char *path)
{
	return xip_error_obj(err, XIP_OBJ_FILE, path, "%s", strerror(-err));
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
			return xip_error_obj(-EUCLEAN, XIP_OBJ_FILE, w->path,
					     "directory inode %u has no '..' entry",
					     w->cur);
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
		ret = xip_inode_read_checked(w->img, child, &in);
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

	if (fs->feat_ro & EXT4_FEATURE_RO_COMPAT_HUGE_FILE) {
		n |= (uint64_t)in->osd2.linux2.l_i_blocks_hi << 32;
		if (in->i_flags & EXT4_HUGE_FILE_FL)
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
	ret = xip_map_open(img, ino, &m);
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
		st->rdev = xip_inode_rdev(in);
	if (!m.nomap) {
		end = div_round_up(st->size, img->block_size);
		ret = xip_map_runs(&m, end, &runs, &st->nruns);
		for (size_t i = 0; !ret && i < st->nruns; i++)
			mapped += runs[i].len;
		st->data_blocks = mapped;
		st->hole_blocks = end > mapped ? end - mapped : 0;
		free(runs);
	}
	st->contiguous = st->nruns <= 1;
	xip_map_close(&m);
	return ret;
}

uint32_t xip_inode_rdev(const struct ext2_inode_large *in)
{
	return in->i_block[0] ? in->i_block[0] : in->i_block[1];
}

void xip_rdev_split(uint64_t rdev, unsigned int *major, unsigned int *minor)
{
	uint32_t dev = (uint32_t)rdev;

	/* new_decode_dev(), which reads the old form alike */
	*major = (dev & 0xfff00) >> 8;
	*minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
}
