// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * verify --against: compare an image with the source tree it was built
 * from.  Type, mode, owner, mtime, content (crc32), symlink targets, device
 * numbers and hard-link grouping; names present on one side only.  Runs
 * after the structural walk, on inodes whose block maps it found sound.
 *
 * The source may belong to another user who changes it meanwhile: it is
 * walked from directory descriptors, every name opened or read with
 * openat(dirfd, name, O_NOFOLLOW) or fstatat(AT_SYMLINK_NOFOLLOW), and a
 * directory is entered only if it is still the one its parent listed.  A
 * directory swapped for a symbolic link is reported, never followed.
 */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <zlib.h>

#include "check/xip_check.h"
#include "check/check_int.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"

struct tree_ent {
	uint32_t dir, ino;
	size_t name_off;
};

struct tree_dir {
	uint32_t ino;
	size_t start, count;
};

struct tree_link {
	dev_t dev;
	ino_t sino;
	uint32_t ino;
	char *path;
};

struct chk_tree {
	int rootfd;			/* the source tree's top directory */
	struct tree_ent *ents;
	size_t n, cap;
	struct tree_dir *dirs;
	size_t nd, dcap;
	struct tree_link *links;
	size_t nl, lcap;
};

static struct chk_tree *tree_get(struct chk *c)
{
	if (!c->tree) {
		c->tree = calloc(1, sizeof(*c->tree));
		if (!c->tree)
			c->nomem = true;
		else
			c->tree->rootfd = -1;
	}
	return c->tree;
}

void xip_chk_tree_dir_start(struct chk *c, uint32_t dir)
{
	struct chk_tree *t = tree_get(c);
	struct tree_dir *d;

	if (!t || (t->nd && t->dirs[t->nd - 1].ino == dir))
		return;
	if (xip_chk_grow(c, (void **)&t->dirs, &t->dcap, t->nd, sizeof(*d)))
		return;
	d = &t->dirs[t->nd++];
	d->ino = dir;
	d->start = t->n;
	d->count = 0;
}

void xip_chk_tree_entry(struct chk *c, uint32_t dir, uint32_t ino,
			const char *name, unsigned int nlen)
{
	struct chk_tree *t = tree_get(c);
	struct tree_ent *e;

	if (!t)
		return;
	xip_chk_tree_dir_start(c, dir);
	if (!t->nd || xip_chk_grow(c, (void **)&t->ents, &t->cap, t->n,
			       sizeof(*e)))
		return;
	e = &t->ents[t->n];
	e->dir = dir;
	e->ino = ino;
	e->name_off = xip_chk_store_name(c, name, nlen);
	if (!e->name_off)
		return;
	t->n++;
	t->dirs[t->nd - 1].count++;
}

void xip_chk_tree_free(struct chk *c)
{
	struct chk_tree *t = c->tree;

	if (!t)
		return;
	if (t->rootfd >= 0)
		close(t->rootfd);
	for (size_t i = 0; i < t->nl; i++)
		free(t->links[i].path);
	free(t->links);
	free(t->ents);
	free(t->dirs);
	free(t);
	c->tree = NULL;
}

/* ---- differences ------------------------------------------------------ */

static void diff(struct chk *c, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void diff(struct chk *c, const char *path, const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	xip_chk_finding(c, XIP_CHECK_ERROR, "content", 0, 0, "%s: %s",
			path[0] ? path : "/", text);
}

static const char *type_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG: return "a regular file";
	case S_IFDIR: return "a directory";
	case S_IFLNK: return "a symlink";
	case S_IFCHR: return "a character device";
	case S_IFBLK: return "a block device";
	case S_IFIFO: return "a fifo";
	case S_IFSOCK: return "a socket";
	}
	return "of an unknown type";
}

/* ---- content ------------------------------------------------------------ */

/* crc32 of @len zero bytes appended to @crc, in logarithmic time. */
static uLong crc_zeros(uLong crc, uint64_t len)
{
	static const uint8_t zero[4096];

	while (len >= sizeof(zero) * 64) {
		/* combine doubling blocks of zeros */
		uLong z = crc32(0, zero, sizeof(zero));
		uint64_t n = sizeof(zero);

		while (n * 2 <= len && n * 2 > n) {
			z = crc32_combine(z, z, (z_off_t)n);
			n *= 2;
		}
		crc = crc32_combine(crc, z, (z_off_t)n);
		len -= n;
	}
	while (len) {
		size_t n = len < sizeof(zero) ? (size_t)len : sizeof(zero);

		crc = crc32(crc, zero, (uInt)n);
		len -= n;
	}
	return crc;
}

struct crcctx {
	struct chk *c;
	uLong crc;
	uint64_t pos, size;
};

static int crc_block(void *arg, uint64_t lblk, uint64_t pblk)
{
	struct crcctx *x = arg;
	uint64_t off = lblk * x->c->bs, len;
	const uint8_t *b;

	if (off >= x->size)
		return 1;
	if (off > x->pos)
		x->crc = crc_zeros(x->crc, off - x->pos);
	b = xip_chk_block(x->c, pblk);
	len = x->size - off < x->c->bs ? x->size - off : x->c->bs;
	if (!b)
		return -1;
	x->crc = crc32(x->crc, b, (uInt)len);
	x->pos = off + len;
	return 0;
}

static int image_crc(struct chk *c, uint32_t ino, uint64_t size, uLong *crc)
{
	struct crcctx x = { .c = c, .crc = crc32(0, NULL, 0), .size = size };
	int ret = xip_chk_blocks(c, ino, crc_block, &x);

	if (ret < 0)
		return ret;
	if (x.pos < size)
		x.crc = crc_zeros(x.crc, size - x.pos);
	*crc = x.crc;
	return 0;
}

/*
 * The crc32 of the source file @name in @dfd, which fstatat saw as @st.
 * Opened without following a symlink and without blocking on a FIFO,
 * then compared with @st: a file swapped in the meantime is -ESTALE, not
 * read.
 */
static int source_crc(int dfd, const char *name, const struct stat *st,
		      uLong *crc)
{
	uint8_t buf[65536];
	struct stat fst;
	ssize_t n;
	int fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW |
			O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &fst) < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	if (!S_ISREG(fst.st_mode) || fst.st_dev != st->st_dev ||
	    fst.st_ino != st->st_ino) {
		close(fd);
		return -ESTALE;
	}
	*crc = crc32(0, NULL, 0);
	while ((n = xip_read_full(fd, buf, sizeof(buf))) > 0)
		*crc = crc32(*crc, buf, (uInt)n);
	close(fd);
	return n < 0 ? (int)n : 0;
}

static void cmp_content(struct chk *c, const char *path, const char *src,
			int dfd, const char *name, uint32_t ino,
			const struct ext2_inode_large *in,
			const struct stat *st)
{
	uint64_t size = xip_chk_isize(in);
	uLong a, b;
	int ret;

	if ((uint64_t)st->st_size != size) {
		diff(c, path, "size %" PRIu64 " in the image, %lld in the source",
		     size, (long long)st->st_size);
		return;
	}
	if (image_crc(c, ino, size, &a)) {
		diff(c, path, "content not compared: its block map is damaged");
		return;
	}
	xip_check_hook_pause(src);
	ret = source_crc(dfd, name, st, &b);
	if (ret == -ESTALE) {
		diff(c, path, "content not compared: %s: replaced while being compared",
		     src);
		return;
	}
	if (ret) {
		diff(c, path, "content not compared: %s: %s", src,
		     strerror(-ret));
		return;
	}
	if (a != b)
		diff(c, path, "content differs (crc32 %08lx in the image, %08lx in the source)",
		     a, b);
}

static void cmp_symlink(struct chk *c, const char *path, int dfd,
			const char *name, const struct ext2_inode_large *in)
{
	char target[65537], img[65537];
	uint64_t size = xip_chk_isize(in);
	ssize_t n;

	n = readlinkat(dfd, name, target, sizeof(target) - 1);
	if (n < 0) {
		diff(c, path, "cannot read the source symlink: %s",
		     strerror(errno));
		return;
	}
	target[n] = '\0';
	if (size >= sizeof(img) || size >= c->bs)
		return;	/* reported by the walk */
	if (size < sizeof(in->i_block)) {
		memcpy(img, in->i_block, size);
	} else {
		if (!xip_chk_read_block(c, le32toh(in->i_block[0]), c->scratch))
			return;
		memcpy(img, c->scratch, size);
	}
	img[size] = '\0';
	if (strcmp(img, target))
		diff(c, path, "symlink to '%s' in the image, to '%s' in the source",
		     img, target);
}

static dev_t image_rdev(const struct ext2_inode_large *in)
{
	uint32_t b;

	if (in->i_block[0]) {
		b = le32toh(in->i_block[0]);
		return makedev((b >> 8) & 0xff, b & 0xff);
	}
	b = le32toh(in->i_block[1]);
	return makedev((b & 0xfff00) >> 8, (b & 0xff) | ((b >> 12) & 0xfff00));
}

static void add_link(struct chk *c, const char *path, uint32_t ino,
		     const struct stat *st)
{
	struct chk_tree *t = c->tree;
	struct tree_link *l;

	if (xip_chk_grow(c, (void **)&t->links, &t->lcap, t->nl, sizeof(*l)))
		return;
	l = &t->links[t->nl];
	l->path = strdup(path);
	if (!l->path) {
		c->nomem = true;
		return;
	}
	l->dev = st->st_dev;
	l->sino = st->st_ino;
	l->ino = ino;
	t->nl++;
}

static void cmp_node(struct chk *c, const char *path, const char *src,
		     int dfd, const char *name, uint32_t ino,
		     const struct stat *st)
{
	struct ext2_inode_large buf;
	const struct ext2_inode_large *in = xip_chk_inode(c, ino, &buf);
	uint32_t uid, gid;
	mode_t m;

	if (!in || !(xip_chk_st(c, ino)->flags & ST_USED))
		return;	/* reported by the walk */
	m = in->i_mode;
	if ((m & S_IFMT) != (st->st_mode & S_IFMT)) {
		diff(c, path, "%s in the image, %s in the source",
		     type_name(m), type_name(st->st_mode));
		return;
	}
	if ((m & 07777) != (st->st_mode & 07777))
		diff(c, path, "mode %04o in the image, %04o in the source",
		     m & 07777, (unsigned int)(st->st_mode & 07777));
	uid = in->i_uid | (uint32_t)in->osd2.linux2.l_i_uid_high << 16;
	gid = in->i_gid | (uint32_t)in->osd2.linux2.l_i_gid_high << 16;
	if (uid != st->st_uid)
		diff(c, path, "owner %u in the image, %u in the source", uid,
		     (unsigned int)st->st_uid);
	if (gid != st->st_gid)
		diff(c, path, "group %u in the image, %u in the source", gid,
		     (unsigned int)st->st_gid);
	if (in->i_mtime != (uint32_t)st->st_mtime)
		diff(c, path, "mtime %u in the image, %lld in the source",
		     in->i_mtime, (long long)st->st_mtime);
	if (S_ISREG(m))
		cmp_content(c, path, src, dfd, name, ino, in, st);
	else if (S_ISLNK(m))
		cmp_symlink(c, path, dfd, name, in);
	else if ((S_ISCHR(m) || S_ISBLK(m)) && image_rdev(in) != st->st_rdev)
		diff(c, path, "device %u:%u in the image, %u:%u in the source",
		     major(image_rdev(in)), minor(image_rdev(in)),
		     major(st->st_rdev), minor(st->st_rdev));
	if (!S_ISDIR(m) && (st->st_nlink > 1 || in->i_links_count > 1))
		add_link(c, path, ino, st);
}

/* ---- the walk over both trees ------------------------------------------ */

static const struct chk *sort_chk;	/* for qsort: names live in the arena */

static int cmp_ent(const void *a, const void *b)
{
	const struct tree_ent *x = a, *y = b;

	return strcmp(sort_chk->names + x->name_off - 1,
		      sort_chk->names + y->name_off - 1);
}

static int cmp_dirent(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int skip_dots(const struct dirent *d)
{
	return strcmp(d->d_name, ".") && strcmp(d->d_name, "..");
}

static struct tree_dir *find_dir(struct chk_tree *t, uint32_t ino)
{
	size_t lo = 0, hi = t->nd;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->dirs[mid].ino == ino)
			return &t->dirs[mid];
		if (t->dirs[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

struct pending {
	uint32_t ino;
	char *path;
	dev_t dev;		/* the source directory as its parent listed it */
	ino_t sino;
};

static int push(struct chk *c, struct pending **st, size_t *n, size_t *cap,
		uint32_t ino, char *path, const struct stat *sst)
{
	if (xip_chk_grow(c, (void **)st, cap, *n, sizeof(**st))) {
		free(path);
		return -ENOMEM;
	}
	(*st)[*n].ino = ino;
	(*st)[*n].dev = sst->st_dev;
	(*st)[*n].sino = sst->st_ino;
	(*st)[(*n)++].path = path;
	return 0;
}

/* Is @st the directory its parent listed as @p? */
static bool same_dir(const struct stat *st, const struct pending *p)
{
	return st->st_dev == p->dev && st->st_ino == p->sino;
}

/*
 * The source directory of @p ("/a/b" below the top), opened a name at a
 * time from the top's descriptor, never through a symbolic link, and
 * still the directory its parent listed: a descriptor, or -errno.
 */
static int open_source_dir(const struct chk_tree *t, const struct pending *p)
{
	char *copy = strdup(p->path), *save = NULL, *name;
	int fd = dup(t->rootfd), next, err;
	struct stat st;

	if (!copy || fd < 0) {
		err = !copy ? -ENOMEM : -errno;
		free(copy);
		if (fd >= 0)
			close(fd);
		return err;
	}
	for (name = strtok_r(copy, "/", &save); name;
	     name = strtok_r(NULL, "/", &save)) {
		next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			      O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		err = -errno;
		close(fd);
		if (next < 0) {
			free(copy);
			return err == -ELOOP ? -ENOTDIR : err;
		}
		fd = next;
	}
	free(copy);
	if (fstat(fd, &st) < 0 || !same_dir(&st, p)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* Compare one directory's entries; push the subdirectories to visit. */
static int cmp_dir(struct chk *c, const struct pending *pd,
		   struct pending **st, size_t *n, size_t *cap, uint8_t *seen)
{
	uint32_t dir = pd->ino;
	const char *path = pd->path;
	struct chk_tree *t = c->tree;
	struct tree_dir *td = find_dir(t, dir);
	struct tree_ent *ents = td ? t->ents + td->start : NULL;
	size_t ne = td ? td->count : 0, i = 0, j = 0;
	struct dirent **sl = NULL;
	char *src;
	int ns = -1, ret = 0, dfd;

	if (asprintf(&src, "%s%s", c->opts->against, path) < 0)
		return -ENOMEM;
	dfd = open_source_dir(t, pd);
	if (dfd >= 0)
		ns = scandirat(dfd, ".", &sl, skip_dots, cmp_dirent);
	if (ns < 0) {
		diff(c, path, "cannot read the source directory %s: %s", src,
		     dfd == -ESTALE ?
		     "replaced while being compared" :
		     strerror(dfd < 0 ? -dfd : errno));
		ns = 0;
	}
	sort_chk = c;
	if (ne)
		qsort(ents, ne, sizeof(*ents), cmp_ent);
	while (i < ne || j < (size_t)ns) {
		const char *en = i < ne ? c->names + ents[i].name_off - 1 : NULL;
		const char *sn = j < (size_t)ns ? sl[j]->d_name : NULL;
		int k = !en ? 1 : !sn ? -1 : strcmp(en, sn);
		char *p = NULL, *s = NULL;
		struct stat sst;

		if (asprintf(&p, "%s/%s", path, k <= 0 ? en : sn) < 0) {
			ret = -ENOMEM;
			break;
		}
		if (k < 0) {
			if (!(dir == EXT2_ROOT_INO && !strcmp(en, "lost+found")))
				diff(c, p, "only in the image");
			i++;
		} else if (k > 0) {
			diff(c, p, "missing from the image");
			j++;
		} else if (asprintf(&s, "%s%s", c->opts->against, p) < 0) {
			ret = -ENOMEM;
		} else if (fstatat(dfd, sn, &sst, AT_SYMLINK_NOFOLLOW)) {
			diff(c, p, "cannot stat the source: %s", strerror(errno));
			i++, j++;
		} else {
			uint32_t ino = ents[i].ino;

			cmp_node(c, p, s, dfd, sn, ino, &sst);
			if (S_ISDIR(sst.st_mode) && (xip_chk_st(c, ino)->flags & ST_DIR) &&
			    !(seen[ino / 8] & (1u << (ino % 8)))) {
				seen[ino / 8] |= (uint8_t)(1u << (ino % 8));
				ret = push(c, st, n, cap, ino, p, &sst);
				p = NULL;
			}
			i++, j++;
		}
		free(s);
		free(p);
		if (ret)
			break;
	}
	for (int k = 0; k < ns; k++)
		free(sl[k]);
	free(sl);
	xip_check_hook_pause(src);
	free(src);
	if (dfd >= 0)
		close(dfd);
	return ret;
}

static int cmp_link_src(const void *a, const void *b)
{
	const struct tree_link *x = a, *y = b;

	return xip_cmp_u64(x->dev, y->dev) ?: xip_cmp_u64(x->sino, y->sino) ?:
	       strcmp(x->path, y->path);
}

static int cmp_link_img(const void *a, const void *b)
{
	const struct tree_link *x = a, *y = b;

	return xip_cmp_u64(x->ino, y->ino) ?: strcmp(x->path, y->path);
}

/* Hard links: the same grouping on both sides. */
static void cmp_links(struct chk *c)
{
	struct chk_tree *t = c->tree;
	struct tree_link *l = t->links;

	if (t->nl < 2)
		return;
	qsort(l, t->nl, sizeof(*l), cmp_link_src);
	for (size_t i = 1; i < t->nl; i++)
		if (l[i].dev == l[i - 1].dev && l[i].sino == l[i - 1].sino &&
		    l[i].ino != l[i - 1].ino)
			diff(c, l[i].path,
			     "a hard link of %s in the source, not in the image",
			     l[i - 1].path);
	qsort(l, t->nl, sizeof(*l), cmp_link_img);
	for (size_t i = 1; i < t->nl; i++)
		if (l[i].ino == l[i - 1].ino &&
		    (l[i].dev != l[i - 1].dev || l[i].sino != l[i - 1].sino))
			diff(c, l[i].path,
			     "a hard link of %s in the image, not in the source",
			     l[i - 1].path);
}

int xip_chk_tree_compare(struct chk *c)
{
	struct pending *st = NULL;
	size_t n = 0, cap = 0;
	struct stat rst;
	uint8_t *seen;
	int ret = 0;

	if (!tree_get(c))
		return -ENOMEM;
	if (!(xip_chk_st(c, EXT2_ROOT_INO)->flags & ST_DIR))
		return 0;	/* reported by the walk */
	if (lstat(c->opts->against, &rst))
		return xip_error(-errno, "%s: %s", c->opts->against,
				 strerror(errno));
	if (!S_ISDIR(rst.st_mode))
		return xip_error(-ENOTDIR, "%s: not a directory",
				 c->opts->against);
	c->tree->rootfd = open(c->opts->against, O_RDONLY | O_DIRECTORY |
			       O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (c->tree->rootfd < 0)
		return xip_error(-errno, "%s: %s", c->opts->against,
				 strerror(errno));
	seen = calloc((size_t)c->ninodes / 8 + 1, 1);
	if (!seen)
		return -ENOMEM;
	/* the root's own attributes are the image's, not the tree's */
	seen[EXT2_ROOT_INO / 8] |= 1u << (EXT2_ROOT_INO % 8);
	ret = push(c, &st, &n, &cap, EXT2_ROOT_INO, strdup(""), &rst);
	while (!ret && n) {
		struct pending p = st[--n];

		if (!p.path) {
			ret = -ENOMEM;
			break;
		}
		ret = cmp_dir(c, &p, &st, &n, &cap, seen);
		free(p.path);
	}
	while (n)
		free(st[--n].path);
	free(st);
	free(seen);
	if (!ret && !c->nomem)
		cmp_links(c);
	return ret ? ret : c->nomem ? -ENOMEM : 0;
}
