// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The image builder's tree: scan a source directory into memory (types,
 * owners, times, hard-link groups, data ranges found with SEEK_DATA and
 * SEEK_HOLE, extended attributes), apply a genext2fs device table, then
 * number the inodes and count the blocks each one needs.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "build.h"

#define NAME_MAX_EXT2 255
#define FAST_LINK_MAX 59	/* bytes that fit in i_block (60 with NUL) */

/* ---- small public helpers -------------------------------------------- */

static int parse_u32(const char *s, char **end, uint32_t *v)
{
	unsigned long long x;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	x = strtoull(s, end, 10);
	if (errno || x > UINT32_MAX)
		return -ERANGE;
	*v = (uint32_t)x;
	return 0;
}

int xip_idmap_parse(const char *text, struct xip_idmap *map)
{
	char *end;

	map->count = 1;
	if (parse_u32(text, &end, &map->from) || *end != ':' ||
	    parse_u32(end + 1, &end, &map->to))
		goto bad;
	if (*end == ':' && (parse_u32(end + 1, &end, &map->count) ||
			    map->count == 0))
		goto bad;
	if (*end)
		goto bad;
	if (map->count - 1 > UINT32_MAX - map->from ||
	    map->count - 1 > UINT32_MAX - map->to)
		return xip_error(-ERANGE, "id map '%s': range overflows", text);
	return 0;
bad:
	return xip_error(-EINVAL,
			 "invalid id map '%s' (expected FROM:TO[:COUNT])",
			 text);
}

uint32_t xip_idmap_apply(const struct xip_idmap *maps, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (id >= maps[i].from && id - maps[i].from < maps[i].count)
			return maps[i].to + (id - maps[i].from);
	return id;
}

int xip_uuid_parse(const char *text, uint8_t uuid[16])
{
	int k = 0;

	for (int i = 0; i < 36; i++) {
		char c = text[i];

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (c != '-')
				goto bad;
			continue;
		}
		if (!isxdigit((unsigned char)c))
			goto bad;
		c = (char)tolower((unsigned char)c);
		uuid[k / 2] = (uint8_t)((uuid[k / 2] << 4) |
			      (c <= '9' ? c - '0' : c - 'a' + 10));
		k++;
	}
	if (text[36])
		goto bad;
	return 0;
bad:
	return xip_error(-EINVAL, "invalid UUID '%s'", text);
}

void xip_build_encode_dev(dev_t rdev, uint32_t iblock[2])
{
	unsigned int ma = major(rdev), mi = minor(rdev);

	if (ma < 256 && mi < 256) {
		iblock[0] = (ma << 8) | mi;
		iblock[1] = 0;
	} else {
		iblock[0] = 0;
		iblock[1] = (mi & 0xff) | (ma << 8) | ((mi & ~0xffu) << 12);
	}
}

/* Distinct groups of @g blocks (aligned at @base) that hold data in
 * [base, end). */
static uint64_t count_groups(const struct xip_lrange *r, size_t n,
			     uint64_t base, uint64_t end, uint64_t g)
{
	uint64_t count = 0, last = UINT64_MAX;

	for (size_t i = 0; i < n; i++) {
		uint64_t a = r[i].start, b = r[i].start + r[i].len;
		uint64_t first, lastg;

		if (b <= base || a >= end || !r[i].len)
			continue;
		a = a < base ? base : a;
		b = b > end ? end : b;
		first = (a - base) / g;
		lastg = (b - 1 - base) / g;
		if (last != UINT64_MAX && first <= last)
			first = last + 1;
		if (lastg >= first)
			count += lastg - first + 1;
		if (last == UINT64_MAX || lastg > last)
			last = lastg;
	}
	return count;
}

uint64_t xip_build_ind_blocks(unsigned int bs, const struct xip_lrange *r,
			      size_t n)
{
	uint64_t p = bs / 4, d0 = EXT2_NDIR_BLOCKS, d1 = d0 + p;
	uint64_t d2 = d1 + p * p, d3 = d2 + p * p * p, count;

	if (n && r[n - 1].start + r[n - 1].len > d3)
		return UINT64_MAX;
	/* single-indirect blocks: every group of p blocks past the direct */
	count = count_groups(r, n, d0, d3, p);
	/* double: the one under i_block[13], those under the triple */
	count += count_groups(r, n, d1, d2, p * p);
	count += count_groups(r, n, d2, d3, p * p);
	/* triple */
	count += count_groups(r, n, d2, d3, p * p * p);
	return count;
}

static size_t dirent_len(size_t namelen)
{
	return (8 + namelen + 3) & ~(size_t)3;
}

uint64_t xip_build_dir_blocks(unsigned int bs, const size_t *namelens,
			      size_t n)
{
	uint64_t blocks = 1;
	size_t used = dirent_len(1) + dirent_len(2);

	for (size_t i = 0; i < n; i++) {
		size_t len = dirent_len(namelens[i]);

		if (used + len > bs) {
			blocks++;
			used = 0;
		}
		used += len;
	}
	return blocks;
}

/* ---- device table ----------------------------------------------------- */

static int dt_field(const char **p, char *buf, size_t len)
{
	size_t n = 0;

	while (isspace((unsigned char)**p))
		(*p)++;
	if (!**p)
		return -1;
	while (**p && !isspace((unsigned char)**p)) {
		if (n + 1 >= len)
			return -2;
		buf[n++] = *(*p)++;
	}
	buf[n] = '\0';
	return 0;
}

static int dt_num(const char *s, unsigned long *v, int base)
{
	char *end;

	if (!strcmp(s, "-")) {
		*v = 0;
		return 0;
	}
	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	*v = strtoul(s, &end, base);
	return errno || *end ? -1 : 0;
}

int xip_devtable_parse_line(const char *line, struct xip_devtable_entry *e)
{
	static const char *const names[] = { "mode", "uid", "gid", "major",
					     "minor", "start", "inc", "count" };
	unsigned long v[8];
	char f[10][4096];
	const char *p = line;
	int n = 0, r;

	memset(e, 0, sizeof(*e));
	while (isspace((unsigned char)*p))
		p++;
	if (!*p || *p == '#')
		return 0;
	while (n < 10 && (r = dt_field(&p, f[n], sizeof(f[n]))) == 0)
		n++;
	if (n == 10) {
		while (isspace((unsigned char)*p))
			p++;
		if (*p && *p != '#')
			return xip_error(-EINVAL, "too many fields");
	}
	if (r == -2)
		return xip_error(-ENAMETOOLONG, "field too long");
	if (n < 10)
		return xip_error(-EINVAL,
				 "expected 10 fields (name type mode uid gid major minor start inc count), found %d",
				 n);
	snprintf(e->path, sizeof(e->path), "%s", f[0]);
	if (strlen(f[1]) != 1 || !strchr("fdcbp", f[1][0]))
		return xip_error(-EINVAL, "unknown type '%s' (f, d, c, b or p)",
				 f[1]);
	e->type = f[1][0];
	for (int i = 0; i < 8; i++)
		if (dt_num(f[i + 2], &v[i], i == 0 ? 8 : 10))
			return xip_error(-EINVAL, "invalid %s '%s'", names[i],
					 f[i + 2]);
	if (v[0] > 07777)
		return xip_error(-EINVAL, "invalid mode '%s'", f[2]);
	if (v[1] > UINT32_MAX || v[2] > UINT32_MAX || v[3] > 4095 ||
	    v[4] > 0xfffff)
		return xip_error(-ERANGE, "value out of range");
	e->mode = (unsigned int)v[0];
	e->uid = (uint32_t)v[1];
	e->gid = (uint32_t)v[2];
	e->major = (unsigned int)v[3];
	e->minor = (unsigned int)v[4];
	e->start = v[5];
	e->inc = v[6];
	e->count = v[7];
	if (e->count && (e->start > ULONG_MAX - e->count ||
			 e->minor + (e->count - 1) * e->inc > 0xfffff))
		return xip_error(-ERANGE, "device range out of range");
	return 1;
}

/* ---- the tree ---------------------------------------------------------- */

struct linkkey {
	dev_t dev;
	ino_t ino;
	struct bnode *node;
};

static int linkkey_cmp(const void *a, const void *b)
{
	const struct linkkey *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

struct bnode *xip_btree_node_new(struct btree *t)
{
	struct bnode *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	if (t->nnodes == t->capnodes) {
		size_t cap = t->capnodes ? t->capnodes * 2 : 256;
		struct bnode **p = realloc(t->nodes, cap * sizeof(*p));

		if (!p) {
			free(n);
			return NULL;
		}
		t->nodes = p;
		t->capnodes = cap;
	}
	t->nodes[t->nnodes++] = n;
	return n;
}

int xip_btree_add_entry(struct bnode *dir, const char *name, struct bnode *n)
{
	struct bentry *e;

	if (dir->nkids == dir->capkids) {
		size_t cap = dir->capkids ? dir->capkids * 2 : 8;

		e = realloc(dir->kids, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		dir->kids = e;
		dir->capkids = cap;
	}
	e = &dir->kids[dir->nkids];
	e->name = strdup(name);
	if (!e->name)
		return -ENOMEM;
	e->node = n;
	dir->nkids++;
	n->nlink++;
	return 0;
}

struct bentry *xip_btree_find_entry(struct bnode *dir, const char *name)
{
	for (size_t i = 0; i < dir->nkids; i++)
		if (!strcmp(dir->kids[i].name, name))
			return &dir->kids[i];
	return NULL;
}

char *xip_btree_path(const struct btree *t, const struct bnode *n)
{
	size_t len = strlen(t->src ? t->src : "") + 1, off;
	const struct bnode *p;
	char *s;

	if (!n->from_source)
		return strdup("(device table)");
	for (p = n; p && p->name; p = p->parent)
		len += strlen(p->name) + 1;
	s = malloc(len);
	if (!s)
		return NULL;
	off = len - 1;
	s[off] = '\0';
	for (p = n; p && p->name; p = p->parent) {
		size_t l = strlen(p->name);

		off -= l;
		memcpy(s + off, p->name, l);
		s[--off] = '/';
	}
	memcpy(s, t->src ? t->src : "", off);
	return s;
}

void xip_btree_set_owner(struct bnode *n, const struct xip_build_opts *o,
			 uint32_t uid, uint32_t gid)
{
	if (o->squash) {
		n->uid = n->gid = 0;
	} else if (o->have_owner) {
		n->uid = o->owner_uid;
		n->gid = o->owner_gid;
	} else {
		n->uid = xip_idmap_apply(o->uid_map, o->n_uid_map, uid);
		n->gid = xip_idmap_apply(o->gid_map, o->n_gid_map, gid);
	}
}

static void node_from_stat(struct bnode *n, const struct stat *st,
			   const struct xip_build_opts *o)
{
	n->mode = st->st_mode;
	xip_btree_set_owner(n, o, st->st_uid, st->st_gid);
	n->atime = st->st_atim.tv_sec;
	n->atime_ns = (uint32_t)st->st_atim.tv_nsec;
	n->mtime = st->st_mtim.tv_sec;
	n->mtime_ns = (uint32_t)st->st_mtim.tv_nsec;
	n->ctime = st->st_ctim.tv_sec;
	n->ctime_ns = (uint32_t)st->st_ctim.tv_nsec;
	n->size = S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0;
	n->rdev = st->st_rdev;
	n->from_source = true;
	n->dev = st->st_dev;
	n->ino_src = st->st_ino;
	n->ctime_src = st->st_ctim;
}

static int path_error(int err, const char *dir, const char *name,
		      const char *what)
{
	return xip_error(err, "%s%s%s: %s%s%s", dir, name ? "/" : "",
			 name ? name : "", what ? what : "",
			 what ? ": " : "", strerror(-err));
}

static int changed_error(const char *dir, const char *name)
{
	return xip_error(-ESTALE, "%s%s%s: changed during the scan", dir,
			 name ? "/" : "", name ? name : "");
}

/*
 * An open that found something else at the name than the scan saw: gone
 * (ENOENT), a symlink now (ELOOP, ENOTDIR under O_NOFOLLOW), a socket
 * (ENXIO) or a device without a driver (ENODEV).
 */
static bool open_changed(int err)
{
	return err == ENOENT || err == ELOOP || err == ENOTDIR ||
	       err == ENXIO || err == ENODEV;
}

/*
 * Is @st the inode of node @n: device, inode number and type, and for a
 * regular file its change time too, which a new inode that reuses the
 * number (or a write since the scan) does not keep?  A directory's change
 * time moves with every name made in it, so it is not compared.
 */
static bool same_inode(const struct stat *st, const struct bnode *n)
{
	if (st->st_dev != n->dev || st->st_ino != n->ino_src ||
	    (st->st_mode & S_IFMT) != (n->mode & S_IFMT))
		return false;
	return !S_ISREG(st->st_mode) ||
	       (st->st_ctim.tv_sec == n->ctime_src.tv_sec &&
		st->st_ctim.tv_nsec == n->ctime_src.tv_nsec);
}

/*
 * Open @name in @dfd without following a symlink, blocking on a FIFO or
 * taking a terminal, and check that it is the inode the scan saw as @n.
 * 1 with *fdp set, -errno from the open, 0 when something else is there.
 */
static int open_checked(int dfd, const char *name, int flags,
			const struct bnode *n, int *fdp)
{
	int fd, err;
	struct stat st;

	flags |= O_NOFOLLOW | O_CLOEXEC | O_NOCTTY;
	fd = openat(dfd, name, flags | O_NOATIME);
	if (fd < 0 && errno == EPERM)
		fd = openat(dfd, name, flags);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		err = errno;
		close(fd);
		errno = err;
		return -err;
	}
	if (!same_inode(&st, n)) {
		close(fd);
		return 0;
	}
	*fdp = fd;
	return 1;
}

/* Data ranges of a regular file, in blocks, holes left out. */
static int scan_ranges(struct btree *t, struct bnode *n, int dfd,
		       const char *dir, const char *name)
{
	uint64_t bs = t->bs, blocks = (n->size + bs - 1) / bs;
	struct xip_lrange *r = NULL;
	size_t nr = 0, cap = 0;
	off_t data, hole = 0;
	int fd = -1, ret;

	if (!blocks)
		return 0;
	ret = open_checked(dfd, name, O_RDONLY | O_NONBLOCK, n, &fd);
	if (ret < 0 && !open_changed(-ret))
		return path_error(ret, dir, name, NULL);
	if (ret <= 0)
		return changed_error(dir, name);
	for (;;) {
		uint64_t a, b;

		data = lseek(fd, hole, SEEK_DATA);
		if (data < 0 || (uint64_t)data >= n->size)
			break;
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0 || (uint64_t)hole > n->size)
			hole = (off_t)n->size;
		a = (uint64_t)data / bs;
		b = ((uint64_t)hole + bs - 1) / bs;
		if (nr && r[nr - 1].start + r[nr - 1].len >= a) {
			if (b > r[nr - 1].start + r[nr - 1].len)
				r[nr - 1].len = b - r[nr - 1].start;
		} else {
			if (nr == cap) {
				struct xip_lrange *p;

				cap = cap ? cap * 2 : 4;
				p = realloc(r, cap * sizeof(*r));
				if (!p) {
					free(r);
					close(fd);
					return -ENOMEM;
				}
				r = p;
			}
			r[nr].start = a;
			r[nr].len = b - a;
			nr++;
		}
		if ((uint64_t)hole >= n->size)
			break;
	}
	if (data < 0 && errno != ENXIO) {
		int err = -errno;

		free(r);
		close(fd);
		return path_error(err, dir, name, "SEEK_DATA");
	}
	close(fd);
	n->ranges = r;
	n->nranges = nr;
	return 0;
}

int xip_btree_whole_range(struct bnode *n, uint64_t blocks)
{
	if (!blocks)
		return 0;
	n->ranges = calloc(1, sizeof(*n->ranges));
	if (!n->ranges)
		return -ENOMEM;
	n->ranges[0].len = blocks;
	n->nranges = 1;
	return 0;
}

bool xip_btree_xattr_wanted(const char *name)
{
	return !strncmp(name, "user.", 5) || !strncmp(name, "trusted.", 8) ||
	       !strncmp(name, "security.", 9) ||
	       !strcmp(name, "system.posix_acl_access") ||
	       !strcmp(name, "system.posix_acl_default");
}

int xip_btree_xattr_cmp(const void *a, const void *b)
{
	return strcmp(((const struct bxattr *)a)->name,
		      ((const struct bxattr *)b)->name);
}

/*
 * Where the xattrs of an inode open as @fd (O_PATH) are read: its
 * /proc/self/fd link, which reaches that very inode whatever is at its
 * name now.  Without /proc, its path.
 */
struct xsrc {
	char proc[32];
	const char *name;
	bool follow;		/* the name is the /proc link */
};

static int xsrc_init(struct xsrc *x, const struct btree *t, int fd,
		     const char *dir, const char *name, char **path)
{
	*path = NULL;
	if (t->proc_fd) {
		snprintf(x->proc, sizeof(x->proc), "/proc/self/fd/%d", fd);
		x->name = x->proc;
		x->follow = true;
		return 0;
	}
	*path = name ? malloc(strlen(dir) + strlen(name) + 2) : strdup(dir);
	if (!*path)
		return -ENOMEM;
	if (name)
		sprintf(*path, "%s/%s", dir, name);
	x->name = *path;
	x->follow = false;
	return 0;
}

static ssize_t xsrc_list(const struct xsrc *x, char *buf, size_t len)
{
	return x->follow ? listxattr(x->name, buf, len) :
	       llistxattr(x->name, buf, len);
}

static ssize_t xsrc_get(const struct xsrc *x, const char *key, void *buf,
			size_t len)
{
	return x->follow ? getxattr(x->name, key, buf, len) :
	       lgetxattr(x->name, key, buf, len);
}

static int scan_xattrs(struct btree *t, struct bnode *n, int fd,
		       const char *dir, const char *name)
{
	ssize_t len, vlen;
	char *list, *p, *path;
	struct xsrc x;
	int ret;

	ret = xsrc_init(&x, t, fd, dir, name, &path);
	if (ret)
		return ret;
	len = xsrc_list(&x, NULL, 0);
	if (len <= 0) {
		ret = (len < 0 && errno != ENOTSUP && errno != ENODATA) ?
		      path_error(-errno, dir, name, "listing xattrs") : 0;
		free(path);
		return ret;
	}
	list = malloc((size_t)len);
	if (!list)
		goto nomem;
	len = xsrc_list(&x, list, (size_t)len);
	for (p = list; len > 0 && p < list + len; p += strlen(p) + 1) {
		struct bxattr *xa;

		if (!xip_btree_xattr_wanted(p))
			continue;
		vlen = xsrc_get(&x, p, NULL, 0);
		if (vlen < 0)
			continue;
		xa = realloc(n->xattrs, (n->nxattrs + 1) * sizeof(*xa));
		if (!xa)
			goto nomem;
		n->xattrs = xa;
		xa = &n->xattrs[n->nxattrs];
		xa->name = strdup(p);
		xa->value = malloc(vlen ? (size_t)vlen : 1);
		if (!xa->name || !xa->value) {
			free(xa->name);
			free(xa->value);
			goto nomem;
		}
		vlen = xsrc_get(&x, p, xa->value, (size_t)vlen);
		if (vlen < 0) {
			free(xa->name);
			free(xa->value);
			continue;
		}
		xa->len = (size_t)vlen;
		n->nxattrs++;
	}
	free(list);
	free(path);
	if (n->nxattrs) {
		qsort(n->xattrs, n->nxattrs, sizeof(*n->xattrs),
		      xip_btree_xattr_cmp);
		t->has_xattrs = true;
	}
	return 0;
nomem:
	free(list);
	free(path);
	return -ENOMEM;
}

static char *join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *s = malloc(a + b + 2);

	if (s) {
		memcpy(s, dir, a);
		s[a] = '/';
		memcpy(s + a + 1, name, b + 1);
	}
	return s;
}

/* Type-specific contents of the entry @name of @dfd, open as @fd (O_PATH). */
static int scan_node(struct btree *t, struct bnode *n, int fd, int dfd,
		     const char *dir, const char *name, const struct stat *st)
{
	int ret = 0;

	if (S_ISLNK(st->st_mode)) {
		char buf[PATH_MAX];
		/* the link the scan stat'ed, not whatever is at its name */
		ssize_t len = readlinkat(fd, "", buf, sizeof(buf));

		if (len < 0)
			return path_error(-errno, dir, name, "readlink");
		if ((size_t)len >= t->bs || len == sizeof(buf))
			return xip_error(-ENAMETOOLONG,
					 "%s/%s: symlink target too long (%zd bytes, at most %u)",
					 dir, name, len, t->bs - 1);
		n->target = strndup(buf, (size_t)len);
		if (!n->target)
			return -ENOMEM;
		n->size = (uint64_t)len;
	} else if (S_ISREG(st->st_mode)) {
		uint64_t blocks = (n->size + t->bs - 1) / t->bs;

		if ((uint64_t)st->st_blocks * 512 < n->size)
			ret = scan_ranges(t, n, dfd, dir, name);
		else
			ret = xip_btree_whole_range(n, blocks);
		t->files++;
		t->bytes += n->size;
	} else if (!S_ISDIR(st->st_mode) && !S_ISCHR(st->st_mode) &&
		   !S_ISBLK(st->st_mode) && !S_ISFIFO(st->st_mode) &&
		   !S_ISSOCK(st->st_mode)) {
		ret = xip_error(-EOPNOTSUPP,
				"%s/%s: file type 0%o cannot be represented in ext2",
				dir, name, st->st_mode & S_IFMT);
	}
	if (!ret)
		ret = scan_xattrs(t, n, fd, dir, name);
	return ret;
}

static int scan_dir(struct btree *t, struct bnode *dir, int fd,
		    const char *path, const struct xip_build_opts *o);

static int scan_new_node(struct btree *t, struct bnode *dir, int fd,
			 int dfd, const char *path, const char *name,
			 const struct stat *st, const struct xip_build_opts *o)
{
	struct linkkey *k;
	struct bnode *n;
	int ret;

	n = xip_btree_node_new(t);
	if (!n)
		return -ENOMEM;
	node_from_stat(n, st, o);
	n->parent = dir;
	n->name = strdup(name);
	if (!n->name)
		return -ENOMEM;
	ret = xip_btree_add_entry(dir, name, n);
	if (ret)
		return ret;
	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1) {
		k = malloc(sizeof(*k));
		if (!k)
			return -ENOMEM;
		k->dev = st->st_dev;
		k->ino = st->st_ino;
		k->node = n;
		if (!tsearch(k, &t->links, linkkey_cmp)) {
			free(k);
			return -ENOMEM;
		}
	}
	return scan_node(t, n, fd, dfd, path, name, st);
}

/*
 * One name of directory @dfd: the inode is opened O_PATH without
 * following a symlink and everything (type, owner, times, link target,
 * xattrs) is read from that descriptor, so that it all describes one
 * inode, whose device and inode numbers are kept for the copy.
 */
static int scan_entry(struct btree *t, struct bnode *dir, int dfd,
		      const char *path, const char *name,
		      const struct xip_build_opts *o)
{
	struct linkkey key, **found;
	struct stat st;
	int fd, ret;

	if (strlen(name) > NAME_MAX_EXT2)
		return xip_error(-ENAMETOOLONG,
				 "%s/%s: name too long (%zu bytes, at most %d)",
				 path, name, strlen(name), NAME_MAX_EXT2);
	fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return path_error(-errno, path, name, NULL);
	if (fstat(fd, &st) < 0) {
		ret = path_error(-errno, path, name, NULL);
		close(fd);
		return ret;
	}
	if (t->skip && st.st_dev == t->skip_dev && st.st_ino == t->skip_ino) {
		close(fd);
		return 0;	/* the image being made, inside the tree */
	}
	if (!S_ISDIR(st.st_mode) && st.st_nlink > 1) {
		key.dev = st.st_dev;
		key.ino = st.st_ino;
		found = tfind(&key, &t->links, linkkey_cmp);
		if (found) {
			close(fd);
			return xip_btree_add_entry(dir, name, (*found)->node);
		}
	}
	ret = scan_new_node(t, dir, fd, dfd, path, name, &st, o);
	close(fd);
	return ret;
}

/* Open subdirectory @k (named @name in @dfd) as the scan saw it. */
static int scan_open_subdir(int dfd, const char *path, const char *name,
			    const struct bnode *k, int *fdp)
{
	int ret = open_checked(dfd, name, O_RDONLY | O_DIRECTORY, k, fdp);

	if (ret < 0 && !open_changed(-ret))
		return path_error(ret, path, name, NULL);
	return ret <= 0 ? changed_error(path, name) : 0;
}

/* Scan the directory open as @fd (taken over) into @dir, then its
 * subdirectories. */
static int scan_dir(struct btree *t, struct bnode *dir, int fd,
		    const char *path, const struct xip_build_opts *o)
{
	struct dirent *de;
	size_t first;
	int ret = 0;
	DIR *d;

	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return xip_error(-errno, "%s: %s", path, strerror(errno));
	}
	first = dir->nkids;
	while (!ret) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				ret = xip_error(-errno, "%s: reading directory: %s",
						path, strerror(errno));
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		ret = scan_entry(t, dir, dirfd(d), path, de->d_name, o);
	}
	for (size_t i = first; !ret && i < dir->nkids; i++) {
		struct bnode *k = dir->kids[i].node;
		char *sub;
		int sfd;

		if (!S_ISDIR(k->mode) || k->parent != dir)
			continue;
		ret = scan_open_subdir(dirfd(d), path, dir->kids[i].name, k,
				       &sfd);
		if (ret)
			break;
		sub = join(path, dir->kids[i].name);
		if (!sub) {
			close(sfd);
			ret = -ENOMEM;
			break;
		}
		ret = scan_dir(t, k, sfd, sub, o);
		free(sub);
	}
	closedir(d);
	return ret;
}

/* ---- reading the source again for the copy ----------------------------- */

static void dirs_pop(struct btree *t, size_t keep)
{
	while (t->ndirs > keep)
		close(t->dirs[--t->ndirs].fd);
}

/*
 * Make t->dirs the open directories from the top's child down to @d,
 * reusing those already open (the copy goes in preorder).  The top itself
 * is t->root_fd.
 */
static int dirs_reach(struct btree *t, const struct bnode *d)
{
	const struct bnode *p;
	size_t depth = 0, i;

	for (p = d; p && p != t->root; p = p->parent)
		depth++;
	if (!p)
		return xip_error(-EFAULT, "a directory outside the source");
	if (!depth)
		return 0;	/* the top: t->root_fd, keep the others open */
	if (depth > t->capdirs) {
		struct bdir *nd = realloc(t->dirs, depth * sizeof(*nd));

		if (!nd)
			return -ENOMEM;
		t->dirs = nd;
		t->capdirs = depth;
	}
	/* the common prefix: the entry at depth i is the ancestor at i */
	for (i = 0; i < t->ndirs && i < depth; i++) {
		size_t up = depth - 1 - i;

		for (p = d; up--; p = p->parent)
			;
		if (t->dirs[i].node != p)
			break;
	}
	dirs_pop(t, i);
	for (; i < depth; i++) {
		size_t up = depth - 1 - i;
		int pfd = i ? t->dirs[i - 1].fd : t->root_fd, fd = -1, ret;

		for (p = d; up--; p = p->parent)
			;
		ret = open_checked(pfd, p->name, O_PATH | O_DIRECTORY, p, &fd);
		if (ret <= 0) {
			char *path = xip_btree_path(t, p);

			if (ret < 0 && !open_changed(-ret))
				ret = path_error(ret, path ? path : "?", NULL,
						 NULL);
			else
				ret = changed_error(path ? path : "?", NULL);
			free(path);
			return ret;
		}
		t->dirs[t->ndirs].node = p;
		t->dirs[t->ndirs].fd = fd;
		t->ndirs++;
	}
	return 0;
}

int xip_btree_open_source(struct btree *t, const struct bnode *n, int *fdp)
{
	char *path;
	int ret;

	if (!n->from_source || !n->parent || t->root_fd < 0)
		return xip_error(-EFAULT, "inode %u: no source file", n->ino);
	ret = dirs_reach(t, n->parent);
	if (ret)
		return ret;
	ret = open_checked(n->parent == t->root || !t->ndirs ? t->root_fd :
			   t->dirs[t->ndirs - 1].fd,
			   n->name, O_RDONLY | O_NONBLOCK, n, fdp);
	if (ret > 0)
		return 0;
	path = xip_btree_path(t, n);
	if (ret < 0 && !open_changed(-ret))
		ret = path_error(ret, path ? path : "?", NULL, NULL);
	else
		ret = changed_error(path ? path : "?", NULL);
	free(path);
	return ret;
}

void xip_btree_node_set_now(struct btree *t, struct bnode *n)
{
	n->atime = n->mtime = n->ctime = t->now;
	n->atime_ns = n->mtime_ns = n->ctime_ns = 0;
}

int xip_btree_make_lpf(struct btree *t, const struct xip_build_opts *o)
{
	struct bentry *e = xip_btree_find_entry(t->root, "lost+found");
	struct bnode *n;

	if (e) {
		if (!S_ISDIR(e->node->mode)) {
			char *p = xip_btree_path(t, e->node);
			int ret = xip_error(-EEXIST,
					    "%s: must be a directory (the image's lost+found)",
					    p ? p : "lost+found");

			free(p);
			return ret;
		}
		e->node->is_lpf = true;
		t->lpf = e->node;
		return 0;
	}
	n = xip_btree_node_new(t);
	if (!n)
		return -ENOMEM;
	n->mode = S_IFDIR | 0700;
	xip_btree_set_owner(n, o, 0, 0);
	xip_btree_node_set_now(t, n);
	n->is_lpf = true;
	n->parent = t->root;
	t->lpf = n;
	return xip_btree_add_entry(t->root, "lost+found", n);
}

/* Open the source's top (the path given may hold symlinks: its owner's). */
static int open_root(struct btree *t, const char *src, struct stat *st)
{
	int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY;

	t->root_fd = open(src, flags | O_NOATIME);
	if (t->root_fd < 0 && errno == EPERM)
		t->root_fd = open(src, flags);
	if (t->root_fd < 0)
		return errno == ENOTDIR ?
		       xip_error(-ENOTDIR, "%s: not a directory", src) :
		       xip_error(-errno, "%s: %s", src, strerror(errno));
	if (fstat(t->root_fd, st) < 0)
		return xip_error(-errno, "%s: %s", src, strerror(errno));
	t->proc_fd = access("/proc/self/fd", X_OK) == 0;
	return 0;
}

int xip_btree_scan(struct btree *t, const struct xip_build_opts *o)
{
	struct stat st;
	struct bnode *r;
	int ret, fd;

	t->src = o->source;
	t->root_fd = -1;
	r = xip_btree_node_new(t);
	if (!r)
		return -ENOMEM;
	t->root = r;
	if (o->source) {
		ret = open_root(t, o->source, &st);
		if (ret)
			return ret;
		node_from_stat(r, &st, o);
		ret = scan_xattrs(t, r, t->root_fd, o->source, NULL);
		if (ret)
			return ret;
		fd = fcntl(t->root_fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			return xip_error(-errno, "%s: %s", o->source,
					 strerror(errno));
		ret = scan_dir(t, r, fd, o->source, o);
		if (ret)
			return ret;
	} else {
		r->mode = S_IFDIR | 0755;
		xip_btree_set_owner(r, o, 0, 0);
		xip_btree_node_set_now(t, r);
	}
	r->nlink = 2;	/* its own "." and ".." count below */
	return xip_btree_make_lpf(t, o);
}

/* ---- device table ----------------------------------------------------- */

static int dt_parent(struct btree *t, char *path, struct bnode **dirp,
		     char **namep)
{
	struct bnode *dir = t->root;
	char *p = path, *slash;

	while (*p == '/')
		p++;
	if (!*p)
		return -EINVAL;
	while ((slash = strchr(p, '/'))) {
		struct bentry *e;

		*slash = '\0';
		if (*p) {
			e = xip_btree_find_entry(dir, p);
			if (!e || !S_ISDIR(e->node->mode))
				return -ENOENT;
			dir = e->node;
		}
		p = slash + 1;
	}
	if (!*p || strlen(p) > NAME_MAX_EXT2)
		return *p ? -ENAMETOOLONG : -EINVAL;
	*dirp = dir;
	*namep = p;
	return 0;
}

static mode_t dt_type(char type)
{
	switch (type) {
	case 'd':
		return S_IFDIR;
	case 'c':
		return S_IFCHR;
	case 'b':
		return S_IFBLK;
	case 'p':
		return S_IFIFO;
	default:
		return S_IFREG;
	}
}

static int dt_apply_one(struct btree *t, const struct xip_devtable_entry *e,
			const char *name, unsigned int minor, struct bnode *dir)
{
	mode_t type = dt_type(e->type);
	struct bentry *ent = xip_btree_find_entry(dir, name);
	struct bnode *n;

	if (ent) {
		n = ent->node;
		if ((n->mode & S_IFMT) != type)
			return -EEXIST;
	} else {
		if (e->type == 'f')
			return -ENOENT;
		n = xip_btree_node_new(t);
		if (!n || xip_btree_add_entry(dir, name, n))
			return -ENOMEM;
		n->parent = dir;
		xip_btree_node_set_now(t, n);
	}
	n->mode = type | e->mode;
	n->uid = e->uid;
	n->gid = e->gid;
	if (type == S_IFCHR || type == S_IFBLK)
		n->rdev = makedev(e->major, minor);
	return 0;
}

static int dt_apply(struct btree *t, const struct xip_devtable_entry *e)
{
	char path[sizeof(e->path) + 24], *name;
	struct bnode *dir;
	int ret;

	if (!e->count || (e->type != 'c' && e->type != 'b')) {
		snprintf(path, sizeof(path), "%s", e->path);
		ret = dt_parent(t, path, &dir, &name);
		return ret ? ret : dt_apply_one(t, e, name, e->minor, dir);
	}
	for (unsigned long i = e->start; i < e->start + e->count; i++) {
		snprintf(path, sizeof(path), "%s%lu", e->path, i);
		ret = dt_parent(t, path, &dir, &name);
		if (!ret)
			ret = dt_apply_one(t, e, name,
					   e->minor + (unsigned int)((i - e->start) * e->inc),
					   dir);
		if (ret)
			return ret;
	}
	return 0;
}

static const char *dt_reason(int err)
{
	switch (err) {
	case -ENOENT:
		return "no such file or parent directory in the tree";
	case -EEXIST:
		return "exists with another file type";
	case -ENAMETOOLONG:
		return "name too long (at most 255 bytes)";
	case -EINVAL:
		return "invalid path";
	default:
		return strerror(-err);
	}
}

int xip_btree_devtable(struct btree *t, const char *file)
{
	struct xip_devtable_entry *e;
	size_t cap = 0;
	char *line = NULL;
	unsigned int lineno = 0;
	int ret = 0;
	FILE *f;

	f = fopen(file, "re");
	if (!f)
		return xip_error(-errno, "%s: %s", file, strerror(errno));
	e = malloc(sizeof(*e));
	if (!e) {
		fclose(f);
		return -ENOMEM;
	}
	while (!ret && getline(&line, &cap, f) > 0) {
		lineno++;
		line[strcspn(line, "\n")] = '\0';
		ret = xip_devtable_parse_line(line, e);
		if (ret < 0) {
			char msg[XIP_ERRMSG_MAX];

			snprintf(msg, sizeof(msg), "%s", xip_errmsg());
			ret = xip_error(ret, "%s:%u: %s", file, lineno, msg);
			break;
		}
		if (ret == 0)
			continue;
		ret = dt_apply(t, e);
		if (ret)
			ret = xip_error(ret == -ENOMEM ? ret : -EINVAL,
					"%s:%u: %s: %s", file, lineno, e->path,
					dt_reason(ret));
	}
	if (!ret && ferror(f))
		ret = xip_error(-EIO, "%s: read error", file);
	free(line);
	free(e);
	fclose(f);
	return ret;
}

/* ---- numbering and counting ------------------------------------------- */

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct bentry *)a)->name,
		      ((const struct bentry *)b)->name);
}

static void clamp(const struct btree *t, int64_t *sec, uint32_t *ns)
{
	if (t->clamp && *sec >= t->clamp_time) {
		if (*sec > t->clamp_time || *ns)
			*ns = 0;
		*sec = t->clamp_time;
	}
}

/* Bytes of the xattrs in ext2's entry format, to guess if they fit the
 * inode or need a block. */
static size_t xattr_bytes(const struct bnode *n)
{
	size_t sum = 4;

	for (size_t i = 0; i < n->nxattrs; i++)
		sum += 16 + ((strlen(n->xattrs[i].name) + 3) & ~3u) +
		       ((n->xattrs[i].len + 3) & ~(size_t)3);
	return sum;
}

static int count_node(struct btree *t, struct bnode *n)
{
	unsigned int bs = t->bs;

	clamp(t, &n->mtime, &n->mtime_ns);
	clamp(t, &n->ctime, &n->ctime_ns);
	if (t->clamp) {
		/* reading a file or a link may move its atime: not stable */
		n->atime = n->mtime;
		n->atime_ns = n->mtime_ns;
	}
	if (S_ISDIR(n->mode)) {
		size_t *lens = malloc((n->nkids + 1) * sizeof(*lens));
		uint64_t blocks;

		if (!lens)
			return -ENOMEM;
		for (size_t i = 0; i < n->nkids; i++)
			lens[i] = strlen(n->kids[i].name);
		blocks = xip_build_dir_blocks(bs, lens, n->nkids);
		free(lens);
		if (n->is_lpf) {
			uint64_t min = (16384 + bs - 1) / bs;

			min = min < 2 ? 2 : min > 12 ? 12 : min;
			blocks = blocks < min ? min : blocks;
		}
		free(n->ranges);
		n->ranges = NULL;
		n->nranges = 0;
		if (xip_btree_whole_range(n, blocks))
			return -ENOMEM;
		n->size = blocks * bs;
	} else if (S_ISLNK(n->mode) && n->size > FAST_LINK_MAX) {
		if (xip_btree_whole_range(n, 1))
			return -ENOMEM;
	}
	n->data_blocks = 0;
	for (size_t i = 0; i < n->nranges; i++)
		n->data_blocks += n->ranges[i].len;
	n->ind_blocks = xip_build_ind_blocks(bs, n->ranges, n->nranges);
	if (n->ind_blocks == UINT64_MAX ||
	    (n->data_blocks + n->ind_blocks + 1) * (bs / 512) > UINT32_MAX) {
		char *p = xip_btree_path(t, n);
		int ret = xip_error(-EFBIG,
				    "%s: too large for ext2 with %u-byte blocks",
				    p ? p : "?", bs);

		free(p);
		return ret;
	}
	if (n->nxattrs && xattr_bytes(n) > 256 - EXT2_GOOD_OLD_INODE_SIZE - 32)
		t->ea_blocks++;
	return 0;
}

/* Preorder numbering: root 2, lost+found 11, the rest from 12. */
static int number(struct btree *t, struct bnode *dir, ext2_ino_t *next,
		  size_t *order)
{
	int ret;

	if (dir->nkids > 1)
		qsort(dir->kids, dir->nkids, sizeof(*dir->kids), entry_cmp);
	for (size_t i = 0; i < dir->nkids; i++) {
		struct bnode *n = dir->kids[i].node;

		if (n->ino)
			continue;
		if (n->is_lpf) {
			n->ino = 11;
		} else {
			if (*next == 0)
				return -EOVERFLOW;
			n->ino = (*next)++;
		}
		t->nodes[(*order)++] = n;
		if (S_ISDIR(n->mode)) {
			dir->subdirs++;
			n->nlink = 2;
			ret = number(t, n, next, order);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/*
 * Free the nodes that no name reaches (a member of an archive replaced by
 * a later one of the same name): numbering keeps only the reachable ones.
 */
static int number_all(struct btree *t, ext2_ino_t *next, size_t *order)
{
	size_t n = t->nnodes;
	struct bnode **all = malloc(n * sizeof(*all));
	int ret;

	if (!all)
		return -ENOMEM;
	memcpy(all, t->nodes, n * sizeof(*all));
	t->root->ino = EXT2_ROOT_INO;
	t->nodes[0] = t->root;
	ret = number(t, t->root, next, order);
	if (!ret) {
		for (size_t i = 0; i < n; i++)
			if (!all[i]->ino)
				xip_btree_node_free(all[i]);
		t->nnodes = *order;
	}
	free(all);
	return ret;
}

int xip_btree_finish(struct btree *t, const struct xip_build_opts *o)
{
	ext2_ino_t next = 12;
	size_t order = 1;
	int ret;

	(void)o;
	ret = number_all(t, &next, &order);
	if (ret)
		return ret == -ENOMEM ? ret : xip_error(ret, "too many files");
	for (size_t i = 0; i < t->nnodes; i++) {
		struct bnode *n = t->nodes[i];

		n->order = i;
		if (S_ISDIR(n->mode))
			n->nlink = 2 + n->subdirs;
		ret = count_node(t, n);
		if (ret)
			return ret;
	}
	return 0;
}

void xip_btree_node_free(struct bnode *n)
{
	for (size_t i = 0; i < n->nkids; i++)
		free(n->kids[i].name);
	for (size_t i = 0; i < n->nxattrs; i++) {
		free(n->xattrs[i].name);
		free(n->xattrs[i].value);
	}
	free(n->xattrs);
	free(n->kids);
	free(n->target);
	free(n->name);
	free(n->ranges);
	free(n->druns);
	free(n->iruns);
	free(n);
}

static void nofree(void *p)
{
	free(p);
}

void xip_btree_free(struct btree *t)
{
	dirs_pop(t, 0);
	if (t->spool_fd > 0)
		close(t->spool_fd);
	free(t->dirs);
	if (t->root_fd >= 0)
		close(t->root_fd);
	for (size_t i = 0; i < t->nnodes; i++)
		xip_btree_node_free(t->nodes[i]);
	free(t->nodes);
	tdestroy(t->links, nofree);
	memset(t, 0, sizeof(*t));
}
