// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mkfs --tar: the tree of a tar archive (GNU, pax or ustar; plain, gzip,
 * xz or zstd), read with libarchive into the same in-memory tree that a
 * directory scan gives, so that the planner and the writer see no
 * difference.  File data goes to a private temporary file (the spool);
 * the data blocks of sparse members are kept there, their holes and
 * blocks of zeros left out, the data of a file that loses its last name
 * punched out, and the files named at any point must fit the image's
 * fixed size, if it has one.
 *
 * The tar reader reads the archive's bytes from a reader of their own
 * (libarchive's raw format, with the decompressor), so that their clean
 * end is told from a read or decompressor error: an archive that ends
 * right after its last member's data, without end-of-archive blocks, is
 * complete (a warning), a member cut short is not.
 *
 * Member names are hostile: leading "/" and "." components are dropped,
 * a ".." component is refused, and every name is placed below the root
 * of the tree being built, never anywhere else.  What a member replaces
 * follows GNU tar's extraction: a later member of the same name replaces
 * an earlier file; a directory member sets the metadata of a directory
 * already made.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mkfs/xip_mkfs.h"
#include "mkfs/mkfs_int.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_lazy.h"
#include "util/xip_util.h"

#include <archive.h>
#include <archive_entry.h>

#define NAME_MAX_EXT2 255

struct tarscan {
	struct btree *t;
	const struct xip_build_opts *o;
	struct archive *a;	/* the tar reader, reading @raw's data */
	struct archive *raw;	/* the archive's bytes, decompressed */
	bool raw_end;		/* ... read to their clean end */
	bool raw_failed;	/* ... a read or decompressor error */
	bool unterminated;	/* the archive ended right after its last
				 * member, without end-of-archive blocks */
	const char *name;	/* the archive, for messages */
	const char *member;	/* the member being read (normalised) */
	uint32_t layer;		/* OCI layer (from 1), 0: a plain archive */
};

int xip_build_tar_name(const char *name, char **out)
{
	char *s = malloc(strlen(name) + 1), *d = s;
	const char *p = name;

	if (!s)
		return -ENOMEM;
	while (*p) {
		const char *c = p;
		size_t n;

		while (*p && *p != '/')
			p++;
		n = (size_t)(p - c);
		if (*p)
			p++;
		if (!n || (n == 1 && c[0] == '.'))
			continue;
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			free(s);
			return -EPERM;
		}
		if (d != s)
			*d++ = '/';
		memcpy(d, c, n);
		d += n;
	}
	*d = '\0';
	*out = s;
	return 0;
}

static int tar_err(struct tarscan *ts, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int tar_err(struct tarscan *ts, int err, const char *fmt, ...)
{
	char why[XIP_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (ts->member)
		return xip_error(err, "%s: %s: %s", ts->name,
				 *ts->member ? ts->member : ".", why);
	return xip_error(err, "%s: %s", ts->name, why);
}

static int tar_lib_err(struct tarscan *ts, const char *what)
{
	/* the tar reader reports a failed read of its input as a short one */
	struct archive *a = ts->raw_failed || !ts->a ? ts->raw : ts->a;
	const char *m = archive_error_string(a);
	int e = archive_errno(a);

	if (ts->raw_failed) {
		what = "";
		if (!m)
			m = "truncated or damaged data";
	}
	return tar_err(ts, e == ENOMEM ? -ENOMEM : -EINVAL, "%s%s%s", what,
		       *what ? ": " : "", m ? m : "unreadable archive");
}

/* ---- the spool ------------------------------------------------------- */

static int spool_open(struct btree *t)
{
	const char *dir = secure_getenv("TMPDIR");
	int fd;

	if (!dir || !*dir)
		dir = "/tmp";
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC | O_EXCL, 0600);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR ||
		       errno == EINVAL)) {
		char tmpl[PATH_MAX];

		if (snprintf(tmpl, sizeof(tmpl), "%s/.xiptool-spool.XXXXXX",
			     dir) >= (int)sizeof(tmpl))
			return xip_error(-ENAMETOOLONG, "%s: name too long",
					 dir);
		fd = mkostemp(tmpl, O_CLOEXEC);
		if (fd >= 0)
			unlink(tmpl);
	}
	if (fd < 0)
		return xip_error(-errno,
				 "%s: temporary file for the archive's data: %s",
				 dir, strerror(errno));
	t->spool_fd = fd;
	return 0;
}

static bool all_zero(const unsigned char *p, size_t len)
{
	return !len || (!p[0] && !memcmp(p, p + 1, len - 1));
}

static int spool_pwrite(struct tarscan *ts, const void *buf, size_t len,
			uint64_t off)
{
	int ret = xip_pwrite_all(ts->t->spool_fd, buf, len, off);

	if (ret)
		return tar_err(ts, ret, "temporary file for the data: %s",
			       strerror(-ret));
	return 0;
}

/*
 * @len bytes at @off of the spool, whose blocks there were never written:
 * the blocks all zero are left out (holes, read as zeros), the others
 * written in runs.
 */
static int spool_write(struct tarscan *ts, const void *buf, size_t len,
		       uint64_t off)
{
	const unsigned char *p = buf;
	uint64_t bs = ts->t->bs;
	size_t at = 0, run = 0;
	int ret;

	while (at < len) {
		size_t chunk = (size_t)(bs - (off + at) % bs);

		if (chunk > len - at)
			chunk = len - at;
		if (!all_zero(p + at, chunk)) {
			run += chunk;
		} else if (run) {
			ret = spool_pwrite(ts, p + at - run, run,
					   off + at - run);
			if (ret)
				return ret;
			run = 0;
		}
		at += chunk;
	}
	return run ? spool_pwrite(ts, p + len - run, run, off + len - run) :
		     0;
}

/*
 * The spool's blocks of @n, a file that lost its last name: punched out
 * (where the file system cannot, they stay: only the space is lost).
 */
static void spool_drop(struct btree *t, struct bnode *n)
{
	uint64_t blocks = 0;

	if (!n->spooled)
		return;
	for (size_t i = 0; i < n->nranges; i++)
		blocks += n->ranges[i].len;
	t->spool_blocks -= blocks;
	(void)fallocate(t->spool_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			(off_t)n->spool_off, (off_t)round_up(n->size, t->bs));
	n->spooled = false;
}

/* Add blocks [@a, @b) to the ranges of @n (room for *@cap of them). */
static int range_add(struct bnode *n, size_t *cap, uint64_t a, uint64_t b)
{
	struct xip_lrange *r;

	if (n->nranges && n->ranges[n->nranges - 1].start +
	    n->ranges[n->nranges - 1].len >= a) {
		r = &n->ranges[n->nranges - 1];
		if (b > r->start + r->len)
			r->len = b - r->start;
		return 0;
	}
	if (xip_grow((void **)&n->ranges, cap, n->nranges + 1, sizeof(*r)))
		return -ENOMEM;
	r = &n->ranges[n->nranges++];
	r->start = a;
	r->len = b - a;
	return 0;
}

/* The largest file ext2 maps with blocks of @bs bytes. */
static uint64_t max_file_bytes(uint64_t bs)
{
	uint64_t p = bs / 4;

	return (EXT2_NDIR_BLOCKS + p + p * p + p * p * p) * bs;
}

/*
 * Count blocks [@a, @b) of @n's data, about to be spooled, against what
 * the image may hold: the files named so far must fit it at every point
 * (so that an archive that expands to more than that stops there).
 */
static int spool_room(struct tarscan *ts, struct bnode *n, uint64_t a,
		      uint64_t b)
{
	struct btree *t = ts->t;
	uint64_t have = 0, more;

	if (n->nranges)
		have = n->ranges[n->nranges - 1].start +
		       n->ranges[n->nranges - 1].len;
	more = b > have ? b - (a > have ? a : have) : 0;
	if (t->data_max && (t->spool_blocks + more) > t->data_max / t->bs)
		return tar_err(ts, -EFBIG,
			       "the files need more than the image's %" PRIu64 " bytes",
			       t->data_max);
	t->spool_blocks += more;
	return 0;
}

/*
 * Copy the member's data into the spool at a block-aligned place; the
 * data ranges are the blocks libarchive returns data for (all of them
 * but the holes of a sparse member).
 */
static int tar_data(struct tarscan *ts, struct bnode *n, uint64_t stored)
{
	struct btree *t = ts->t;
	uint64_t bs = t->bs, base, end = 0, got = 0;
	const void *buf;
	size_t len, cap = n->nranges;	/* n->ranges holds at least that */
	la_int64_t off;
	int r, ret;

	if (n->size > max_file_bytes(bs))
		return tar_err(ts, -EFBIG,
			       "too large for ext2 with %" PRIu64 "-byte blocks",
			       bs);
	if (!n->size)
		return 0;
	if (t->spool_fd < 0 && (ret = spool_open(t)))
		return ret;
	base = round_up(t->spool_end, bs);
	n->spooled = true;
	n->spool_off = base;
	for (;;) {
		r = archive_read_data_block(ts->a, &buf, &len, &off);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN && got == stored && ts->raw_end) {
			/*
			 * All of the member's data, then the end of the
			 * input where its padding should be: the archive
			 * has no end-of-archive blocks (umoci insert's
			 * layers; Go's archive/tar reads them).  A member
			 * cut short is refused below.
			 */
			ts->unterminated = true;
			break;
		}
		if (r < ARCHIVE_WARN)
			return tar_lib_err(ts, "");
		if (!len)
			continue;
		if (off < 0 || (uint64_t)off < end || (uint64_t)off > n->size ||
		    len > n->size - (uint64_t)off)
			return tar_err(ts, -EINVAL,
				       "data out of order or beyond the size (%" PRIu64 " bytes)",
				       n->size);
		ret = spool_room(ts, n, (uint64_t)off / bs,
				 div_round_up((uint64_t)off + len, bs));
		if (!ret)
			ret = spool_write(ts, buf, len, base + (uint64_t)off);
		if (ret)
			return ret;
		end = (uint64_t)off + len;
		got += len;
		ret = range_add(n, &cap, (uint64_t)off / bs,
				div_round_up(end, bs));
		if (ret)
			return ret;
	}
	/* holes at the end read as zeros, up to the size */
	t->spool_end = base + n->size;
	if (ftruncate(t->spool_fd, (off_t)t->spool_end) < 0)
		return tar_err(ts, -errno, "temporary file for the data: %s",
			       strerror(errno));
	return 0;
}

/* ---- metadata ---------------------------------------------------------- */

static int tar_xattrs(struct tarscan *ts, struct bnode *n,
		      struct archive_entry *ae)
{
	const char *name;
	const void *value;
	size_t size;

	archive_entry_xattr_reset(ae);
	while (archive_entry_xattr_next(ae, &name, &value, &size) ==
	       ARCHIVE_OK) {
		if (!name || !xip_btree_xattr_wanted(name))
			continue;
		if (strlen(name) > 255 || size > 65536)
			return tar_err(ts, -EINVAL,
				       "extended attribute %s too large", name);
		if (xip_btree_xattr_add(n, name, value, size))
			return -ENOMEM;
	}
	if (n->nxattrs) {
		qsort(n->xattrs, n->nxattrs, sizeof(*n->xattrs),
		      xip_btree_xattr_cmp);
		ts->t->has_xattrs = true;
	}
	return 0;
}

static int tar_time(struct tarscan *ts, int64_t sec, long nsec, int64_t *s,
		    uint32_t *ns)
{
	if (nsec < 0 || nsec > 999999999)
		return tar_err(ts, -EINVAL, "invalid time");
	*s = sec;
	*ns = (uint32_t)nsec;
	return 0;
}

/*
 * Type, permissions, owner and times of a member.  The member's modes
 * and numeric ids are kept as they are (GNU tar --numeric-owner --same-
 * permissions); atime is the archive's when it has one, else mtime; the
 * change time is the time of the build, as an extraction would have it.
 */
static int tar_meta(struct tarscan *ts, struct bnode *n,
		    struct archive_entry *ae)
{
	struct btree *t = ts->t;
	la_int64_t uid = archive_entry_uid(ae), gid = archive_entry_gid(ae);
	int ret = 0;

	if (uid < 0 || uid > UINT32_MAX || gid < 0 || gid > UINT32_MAX)
		return tar_err(ts, -ERANGE, "owner %lld:%lld out of range",
			       (long long)uid, (long long)gid);
	n->mode = archive_entry_mode(ae) & (S_IFMT | 07777);
	xip_btree_set_owner(n, ts->o, (uint32_t)uid, (uint32_t)gid);
	xip_btree_node_set_now(t, n);
	if (archive_entry_mtime_is_set(ae))
		ret = tar_time(ts, archive_entry_mtime(ae),
			       archive_entry_mtime_nsec(ae), &n->mtime,
			       &n->mtime_ns);
	n->atime = n->mtime;
	n->atime_ns = n->mtime_ns;
	if (!ret && archive_entry_atime_is_set(ae))
		ret = tar_time(ts, archive_entry_atime(ae),
			       archive_entry_atime_nsec(ae), &n->atime,
			       &n->atime_ns);
	n->from_source = true;
	return ret;
}

/* The bytes of a member's data the archive holds: all but its holes. */
static uint64_t tar_stored(struct archive_entry *ae, uint64_t size)
{
	la_int64_t off, len;
	uint64_t sum = 0;

	if (!archive_entry_sparse_reset(ae))
		return size;
	while (archive_entry_sparse_next(ae, &off, &len) == ARCHIVE_OK)
		sum += (uint64_t)len;
	return sum;
}

/* The contents of a new node of the member's type. */
static int tar_node_body(struct tarscan *ts, struct bnode *n,
			 struct archive_entry *ae)
{
	struct btree *t = ts->t;
	const char *target;
	size_t len;

	switch (n->mode & S_IFMT) {
	case S_IFREG:
		if (archive_entry_size(ae) < 0)
			return tar_err(ts, -EINVAL, "negative size");
		n->size = (uint64_t)archive_entry_size(ae);
		t->files++;
		t->bytes += n->size;
		return tar_data(ts, n, tar_stored(ae, n->size));
	case S_IFLNK:
		target = archive_entry_symlink(ae);
		len = target ? strlen(target) : 0;
		if (!len)
			return tar_err(ts, -EINVAL, "symlink without a target");
		if (len >= t->bs)
			return tar_err(ts, -ENAMETOOLONG,
				       "symlink target too long (%zu bytes, at most %u)",
				       len, t->bs - 1);
		n->target = strdup(target);
		if (!n->target)
			return -ENOMEM;
		n->size = len;
		return 0;
	case S_IFCHR:
	case S_IFBLK:
		n->rdev = archive_entry_rdev(ae);
		return 0;
	case S_IFDIR:
	case S_IFIFO:
		return 0;
	default:
		return tar_err(ts, -EOPNOTSUPP,
			       "file type 0%o cannot be represented in ext2",
			       (unsigned int)(n->mode & S_IFMT));
	}
}

/* ---- placing names ------------------------------------------------------- */

static int tar_check_name(struct tarscan *ts, const char *name)
{
	if (strlen(name) > NAME_MAX_EXT2)
		return tar_err(ts, -ENAMETOOLONG,
			       "name too long (%zu bytes, at most %d)",
			       strlen(name), NAME_MAX_EXT2);
	return 0;
}

/* Directory @name in @dir, made (0755, owned by root) when missing. */
static int tar_subdir(struct tarscan *ts, struct bnode *dir, const char *name,
		      struct bnode **subp)
{
	struct bentry *e = xip_btree_find_entry(dir, name);
	struct bnode *n;
	int ret;

	if (e) {
		if (!S_ISDIR(e->node->mode))
			return tar_err(ts, -ENOTDIR,
				       "%s: not a directory in the archive",
				       name);
		*subp = e->node;
		return 0;
	}
	ret = tar_check_name(ts, name);
	if (ret)
		return ret;
	n = xip_btree_node_new(ts->t);
	if (!n)
		return -ENOMEM;
	n->mode = S_IFDIR | 0755;
	xip_btree_set_owner(n, ts->o, 0, 0);
	xip_btree_node_set_now(ts->t, n);
	n->from_source = true;
	n->parent = dir;
	n->name = strdup(name);
	if (!n->name)
		return -ENOMEM;
	*subp = n;
	ret = xip_btree_add_entry(dir, name, n);
	if (!ret)
		dir->kids[dir->nkids - 1].layer = ts->layer;
	return ret;
}

/*
 * Walk @rel (normalised, modified in place) down from the root: its
 * directory (made when missing unless @lookup) and its last name.
 */
static int tar_walk(struct tarscan *ts, char *rel, bool lookup,
		    struct bnode **dirp, char **lastp)
{
	struct bnode *dir = ts->t->root;
	char *p = rel, *slash;
	int ret;

	while ((slash = strchr(p, '/'))) {
		*slash = '\0';
		if (lookup) {
			struct bentry *e = xip_btree_find_entry(dir, p);

			ret = !e ? -ENOENT : !S_ISDIR(e->node->mode) ?
			      -ENOTDIR : 0;
			if (!ret)
				dir = e->node;
		} else {
			ret = tar_subdir(ts, dir, p, &dir);
		}
		*slash = '/';
		if (ret)
			return ret;
		p = slash + 1;
	}
	*dirp = dir;
	*lastp = p;
	return tar_check_name(ts, p);
}

/* A name that goes away: the inode stays while other names hold it. */
static void tar_unlink(struct btree *t, struct bnode *n)
{
	if (--n->nlink || !S_ISREG(n->mode))
		return;
	t->files--;
	t->bytes -= n->size;
	spool_drop(t, n);
}

/* A name that goes away with everything below it (an OCI layer's). */
static void tar_unlink_tree(struct btree *t, struct bnode *n)
{
	if (!S_ISDIR(n->mode)) {
		tar_unlink(t, n);
		return;
	}
	n->nlink--;
	for (size_t i = 0; i < n->nkids; i++)
		tar_unlink_tree(t, n->kids[i].node);
}

/* Remove the entry @e of @dir and what hangs below it. */
static void tar_remove(struct btree *t, struct bnode *dir, struct bentry *e)
{
	tar_unlink_tree(t, e->node);
	xip_btree_remove_entry(dir, e);
}

/*
 * An OCI whiteout @last in @dir: ".wh..wh..opq" removes every name lower
 * layers gave @dir, ".wh.NAME" removes NAME when a lower layer gave it.
 */
static void tar_whiteout(struct tarscan *ts, struct bnode *dir,
			 const char *last)
{
	struct bentry *e;

	if (!strcmp(last, ".wh..wh..opq")) {
		/* a removal moves the last entry, already seen, to @i */
		for (size_t i = dir->nkids; i-- > 0;)
			if (dir->kids[i].layer < ts->layer)
				tar_remove(ts->t, dir, &dir->kids[i]);
		return;
	}
	e = xip_btree_find_entry(dir, last + 4);
	if (e && e->layer < ts->layer)
		tar_remove(ts->t, dir, e);
}

/* Give @n the name @name in @dir, replacing a file of that name. */
static int tar_place(struct tarscan *ts, struct bnode *dir, const char *name,
		     struct bnode *n)
{
	struct bentry *e = xip_btree_find_entry(dir, name);

	if (!n->name) {
		n->parent = dir;
		n->name = strdup(name);
		if (!n->name)
			return -ENOMEM;
	}
	if (!e) {
		int ret = xip_btree_add_entry(dir, name, n);

		if (!ret)
			dir->kids[dir->nkids - 1].layer = ts->layer;
		return ret;
	}
	if (e->node == n)
		return 0;
	if (S_ISDIR(e->node->mode) && !ts->layer)
		return tar_err(ts, -EEXIST,
			       "a directory of that name is already in the archive");
	if (S_ISDIR(e->node->mode) && e->node == dir)
		return tar_err(ts, -EINVAL, "replaces its own directory");
	tar_unlink_tree(ts->t, e->node);
	e->node = n;
	e->layer = ts->layer;
	n->nlink++;
	return 0;
}

/* A directory member over a directory already made: its metadata. */
static void tar_update_dir(struct bnode *old, struct bnode *n)
{
	xip_btree_xattrs_free(old);
	old->xattrs = n->xattrs;
	old->nxattrs = n->nxattrs;
	old->capxattrs = n->capxattrs;
	n->xattrs = NULL;
	n->nxattrs = n->capxattrs = 0;
	old->mode = n->mode;
	old->uid = n->uid;
	old->gid = n->gid;
	old->atime = n->atime;
	old->atime_ns = n->atime_ns;
	old->mtime = n->mtime;
	old->mtime_ns = n->mtime_ns;
	old->ctime = n->ctime;
	old->ctime_ns = n->ctime_ns;
}

static int tar_hardlink(struct tarscan *ts, struct bnode *dir,
			const char *name, const char *link)
{
	struct bnode *ldir;
	struct bentry *e;
	char *rel, *last;
	int ret = xip_build_tar_name(link, &rel);

	if (ret == -EPERM)
		return tar_err(ts, -EPERM, "hard link to '%s': leaves the top",
			       link);
	if (ret)
		return ret;
	ret = *rel ? tar_walk(ts, rel, true, &ldir, &last) : -EISDIR;
	e = ret ? NULL : xip_btree_find_entry(ldir, last);
	if (!ret && !e)
		ret = -ENOENT;
	if (!ret && S_ISDIR(e->node->mode))
		ret = -EISDIR;
	if (ret && ret != -ENOMEM && ret != -ENAMETOOLONG)
		ret = tar_err(ts, ret,
			      "hard link to '%s': %s", link,
			      ret == -EISDIR ? "a directory" :
			      "no such file earlier in the archive");
	free(rel);
	return ret ? ret : tar_place(ts, dir, name, e->node);
}

/* The node of a member, before it has a name. */
static int tar_new_node(struct tarscan *ts, struct archive_entry *ae,
			struct bnode **np)
{
	struct bnode *n = xip_btree_node_new(ts->t);
	int ret;

	if (!n)
		return -ENOMEM;
	*np = n;
	ret = tar_meta(ts, n, ae);
	if (!ret)
		ret = tar_xattrs(ts, n, ae);
	if (!ret)
		ret = tar_node_body(ts, n, ae);
	return ret;
}

static int tar_member(struct tarscan *ts, struct archive_entry *ae)
{
	const char *path = archive_entry_pathname(ae), *link;
	struct bnode *dir, *n = NULL;
	struct bentry *e;
	char *rel, *last, *shown;
	int ret;

	if (!path)
		path = archive_entry_pathname_utf8(ae);
	if (!path)
		return tar_err(ts, -EINVAL, "a member without a name");
	ret = xip_build_tar_name(path, &rel);
	if (ret == -EPERM) {
		ts->member = path;
		return tar_err(ts, -EPERM,
			       "a name with '..' would leave the top");
	}
	if (ret)
		return ret;
	shown = strdup(rel);	/* rel is cut up while walking */
	if (!shown) {
		free(rel);
		return -ENOMEM;
	}
	ts->member = shown;
	link = archive_entry_hardlink(ae);
	if (!*rel) {
		/* "./": the top itself */
		ret = link ? tar_err(ts, -EINVAL, "the top as a hard link") :
		      archive_entry_filetype(ae) != AE_IFDIR ?
		      tar_err(ts, -ENOTDIR, "the top is not a directory") :
		      tar_new_node(ts, ae, &n);
		if (!ret)
			tar_update_dir(ts->t->root, n);
		goto out;
	}
	if (ts->layer && (last = strrchr(rel, '/') ? strrchr(rel, '/') + 1 :
			  rel) && !strncmp(last, ".wh.", 4)) {
		/* a whiteout of what is not there removes nothing */
		ret = tar_walk(ts, rel, true, &dir, &last);
		if (!ret)
			tar_whiteout(ts, dir, last);
		else if (ret == -ENOENT || ret == -ENOTDIR)
			ret = 0;
		goto out;
	}
	ret = tar_walk(ts, rel, false, &dir, &last);
	if (ret)
		goto out;
	/* a file this member replaces goes first: its data leaves the spool
	 * before the member's comes in */
	e = link ? NULL : xip_btree_find_entry(dir, last);
	if (e && !S_ISDIR(e->node->mode))
		tar_remove(ts->t, dir, e);
	if (link) {
		ret = tar_hardlink(ts, dir, last, link);
		goto out;
	}
	ret = tar_new_node(ts, ae, &n);
	if (ret)
		goto out;
	e = xip_btree_find_entry(dir, last);
	if (S_ISDIR(n->mode) && e && S_ISDIR(e->node->mode)) {
		tar_update_dir(e->node, n);
		e->layer = ts->layer;
		goto out;
	}
	ret = tar_place(ts, dir, last, n);
out:
	/* a node that got no name is freed by xip_btree_finish, unreached */
	ts->member = NULL;
	free(shown);
	free(rel);
	return ret;
}

static int tar_open(struct tarscan *ts, int *fdp)
{
	struct stat st;
	int fd;

	if (!strcmp(ts->name, "-")) {
		*fdp = STDIN_FILENO;
		return 0;
	}
	fd = open(ts->name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return xip_error(-errno, "%s: %s", ts->name, strerror(errno));
	if (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode)) {
		int err = S_ISDIR(st.st_mode) ? EISDIR : errno;

		close(fd);
		return xip_error(-err, "%s: %s", ts->name, strerror(err));
	}
	*fdp = fd;
	return 0;
}

static int tar_read_all(struct tarscan *ts)
{
	struct archive_entry *ae;
	bool first = true;
	int r, ret;

	for (;;) {
		r = archive_read_next_header(ts->a, &ae);
		if (r == ARCHIVE_EOF) {
			/*
			 * The end of the input where a header would start:
			 * no end-of-archive block was read (libarchive
			 * reads one, or two, before it says EOF).
			 */
			if (!first && ts->raw_end &&
			    archive_filter_bytes(ts->a, 0) ==
			    archive_read_header_position(ts->a))
				ts->unterminated = true;
			return 0;
		}
		if (r < ARCHIVE_WARN)
			return tar_lib_err(ts, first ? "not a tar archive" :
					   "");
		first = false;
		ret = tar_member(ts, ae);
		/* the reader is done after a member that ends the input */
		if (ret || ts->unterminated)
			return ret;
	}
}

/*
 * The tar reader's input: the data of @ts->raw, the archive's bytes as
 * their decompressor gives them.  Read apart so that their clean end is
 * told from a read or decompressor error, which the tar reader would
 * report alike ("Truncated input file").
 */
static la_ssize_t tar_raw_read(struct archive *a, void *arg, const void **buf)
{
	struct tarscan *ts = arg;
	la_int64_t off;
	size_t len;
	int r;

	(void)a;
	if (ts->raw_end || ts->raw_failed)
		return ts->raw_end ? 0 : -1;
	r = archive_read_data_block(ts->raw, buf, &len, &off);
	if (r == ARCHIVE_EOF) {
		ts->raw_end = true;
		return 0;
	}
	if (r < ARCHIVE_WARN) {
		ts->raw_failed = true;
		return -1;
	}
	return (la_ssize_t)len;
}

/* The tar archive whose bytes @ts->raw (opened) gives. */
static int tar_read_raw(struct tarscan *ts)
{
	struct archive_entry *ae;
	int ret;

	if (archive_read_next_header(ts->raw, &ae) < ARCHIVE_WARN) {
		ts->raw_failed = true;
		return tar_lib_err(ts, "not a tar archive");
	}
	ts->a = archive_read_new();
	if (!ts->a)
		return -ENOMEM;
	archive_read_support_format_tar(ts->a);
	if (archive_read_open(ts->a, ts, NULL, tar_raw_read, NULL) !=
	    ARCHIVE_OK)
		ret = tar_lib_err(ts, "not a tar archive");
	else
		ret = tar_read_all(ts);
	archive_read_free(ts->a);
	ts->a = NULL;
	return ret;
}

int xip_btree_scan_tar(struct btree *t, const struct xip_build_opts *o)
{
	struct tarscan ts = { .t = t, .o = o, .name = o->tar };
	struct bnode *r;
	int fd = -1, ret;

	r = xip_btree_root_new(t, o->tar);
	if (!r)
		return -ENOMEM;
	xip_btree_set_dir(t, r, o, 0755);
	r->from_source = true;
	ret = xip_lazy_load(XIP_LAZY_ARCHIVE);
	if (ret)
		return ret;
	ret = tar_open(&ts, &fd);
	if (ret)
		return ret;
	ts.raw = archive_read_new();
	if (!ts.raw) {
		ret = -ENOMEM;
		goto out;
	}
	archive_read_support_filter_gzip(ts.raw);
	archive_read_support_filter_xz(ts.raw);
	archive_read_support_filter_zstd(ts.raw);
	archive_read_support_format_raw(ts.raw);
	if (archive_read_open_fd(ts.raw, fd, 65536) != ARCHIVE_OK)
		ret = tar_lib_err(&ts, "not a tar archive");
	else
		ret = tar_read_raw(&ts);
	archive_read_free(ts.raw);
out:
	if (fd > STDIN_FILENO)
		close(fd);
	if (ret)
		return ret;
	if (ts.unterminated)
		xip_btree_warn(o, "%s: %s", o->tar, XIP_TAR_UNTERMINATED);
	r->nlink = 2;
	return xip_btree_make_lpf(t, o);
}

int xip_btree_oci_begin(struct btree *t, const struct xip_build_opts *o,
			const char *src)
{
	struct bnode *r = xip_btree_root_new(t, src);

	if (!r)
		return -ENOMEM;
	xip_btree_set_dir(t, r, o, 0755);
	r->from_source = true;
	r->nlink = 2;
	return xip_lazy_load(XIP_LAZY_ARCHIVE);
}

int xip_btree_tar_layer(struct btree *t, const struct xip_build_opts *o,
			struct archive *raw, const char *name, uint32_t layer,
			bool *unterminated)
{
	struct tarscan ts = { .t = t, .o = o, .raw = raw, .name = name,
			      .layer = layer };
	int ret = tar_read_raw(&ts);

	*unterminated = !ret && ts.unterminated;
	return ret;
}
