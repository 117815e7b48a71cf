// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Scanning a source directory into the builder's tree (buildtree.c):
 * types, owners, times, hard-link groups, data ranges found with
 * SEEK_DATA and SEEK_HOLE, extended attributes; every file and directory
 * opened O_NOFOLLOW and checked to be the inode listed.  And opening the
 * source files again for the copy (xip_btree_open_source), each still
 * the inode the scan saw.
 */
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
#include <sys/xattr.h>
#include <unistd.h>

#include "mkfs/xip_mkfs.h"
#include "mkfs/mkfs_int.h"
#include "util/xip_error.h"
#include "util/xip_util.h"
#include "exec/xip_elf.h"

#define NAME_MAX_EXT2 255

/* ---- scanning the source ----------------------------------------------- */

struct linkkey {
	dev_t dev;
	ino_t ino;
	struct bnode *node;
};

static int linkkey_cmp(const void *a, const void *b)
{
	const struct linkkey *x = a, *y = b;

	return xip_cmp_u64(x->dev, y->dev) ?: xip_cmp_u64(x->ino, y->ino);
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

/*
 * The linker pads between an ELF file's PT_LOADs with zeros it may leave
 * as holes (-z max-page-size=0x200000 leaves up to 2 MiB), so that each
 * PT_LOAD's file offset is congruent to its address modulo p_align.  Kept
 * as data, each file block keeps its place relative to the first, and a
 * placement aligned to p_align keeps offsets congruent to addresses (exec,
 * hugetlbfs).  Only that padding is filled: the gap in front of a PT_LOAD
 * shorter than its p_align, a p_align of at most PAD_ALIGN_MAX, and
 * PAD_TOTAL_MAX bytes in all.  What a header claims beyond that (a 1 GiB
 * PT_LOAD over a sparse file) stays as sparse as the source.
 */
#define PAD_ALIGN_MAX	(UINT64_C(2) << 20)
#define PAD_TOTAL_MAX	(UINT64_C(8) << 20)

static int cmp_load_offset(const void *a, const void *b)
{
	const struct xip_elf_load *x = a, *y = b;

	return xip_cmp_u64(x->offset, y->offset);
}

int xip_build_elf_padding(struct xip_elf_load *load, size_t nload,
			  uint64_t size, uint64_t bs, struct xip_lrange **rp,
			  size_t *nrp, size_t *cap)
{
	uint64_t prev = 0, total = 0;
	int ret = 0;

	qsort(load, nload, sizeof(*load), cmp_load_offset);
	for (size_t i = 0; i < nload && !ret; i++) {
		const struct xip_elf_load *l = &load[i];
		uint64_t to = l->offset < size ? l->offset : size, end;

		if (!l->filesz)
			continue;
		if (to > prev && l->align <= PAD_ALIGN_MAX &&
		    to - prev < l->align &&
		    to - prev <= PAD_TOTAL_MAX - total) {
			total += to - prev;
			ret = xip_build_ranges_add(rp, nrp, cap, prev / bs,
						   div_round_up(to, bs) -
						   prev / bs);
		}
		end = l->offset + l->filesz < l->offset ? UINT64_MAX :
		      l->offset + l->filesz;
		if (end > prev)
			prev = end;
	}
	return ret;
}

/* The linker's padding of the ELF file @fd as data in *@rp. */
static int elf_pad(int fd, uint64_t size, uint64_t bs, struct xip_lrange **rp,
		   size_t *nrp, size_t *cap)
{
	unsigned char magic[4];
	struct xip_elf elf;
	int ret;

	if (pread(fd, magic, sizeof(magic), 0) != (ssize_t)sizeof(magic) ||
	    memcmp(magic, "\177ELF", 4))
		return 0;
	if (xip_elf_parse_fd(fd, "elf", &elf)) {
		xip_error_clear();
		return 0;
	}
	ret = xip_build_elf_padding(elf.load, elf.nload, size, bs, rp, nrp,
				    cap);
	xip_elf_free(&elf);
	return ret;
}

int xip_build_ranges_add(struct xip_lrange **rp, size_t *nrp, size_t *cap,
			 uint64_t start, uint64_t len)
{
	struct xip_lrange *r = *rp;
	size_t nr = *nrp, i = 0, j;
	uint64_t end = start + len;

	if (!len)
		return 0;
	while (i < nr && r[i].start + r[i].len < start)
		i++;
	/* ranges [i, j) overlap or touch [start, end) */
	for (j = i; j < nr && r[j].start <= end; j++) {
		if (r[j].start < start)
			start = r[j].start;
		if (r[j].start + r[j].len > end)
			end = r[j].start + r[j].len;
	}
	if (j == i) {
		if (xip_grow((void **)rp, cap, nr + 1, sizeof(*r)))
			return -ENOMEM;
		r = *rp;
		memmove(&r[i + 1], &r[i], (nr - i) * sizeof(*r));
		nr++;
		j = i + 1;
	}
	r[i].start = start;
	r[i].len = end - start;
	memmove(&r[i + 1], &r[j], (nr - j) * sizeof(*r));
	*nrp = nr - (j - i) + 1;
	return 0;
}

/* Data ranges of a regular file, in blocks, holes left out. */
static int scan_ranges(struct btree *t, struct bnode *n, int dfd,
		       const char *dir, const char *name)
{
	uint64_t bs = t->bs, blocks = div_round_up(n->size, bs);
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
		b = div_round_up((uint64_t)hole, bs);
		if (nr && r[nr - 1].start + r[nr - 1].len >= a) {
			if (b > r[nr - 1].start + r[nr - 1].len)
				r[nr - 1].len = b - r[nr - 1].start;
		} else {
			if (xip_grow((void **)&r, &cap, nr + 1, sizeof(*r))) {
				free(r);
				close(fd);
				return -ENOMEM;
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
	ret = elf_pad(fd, n->size, bs, &r, &nr, &cap);
	close(fd);
	if (ret) {
		free(r);
		return ret;
	}
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
		void *value;

		if (!xip_btree_xattr_wanted(p))
			continue;
		vlen = xsrc_get(&x, p, NULL, 0);
		if (vlen < 0)
			continue;
		value = malloc(vlen ? (size_t)vlen : 1);
		if (!value)
			goto nomem;
		vlen = xsrc_get(&x, p, value, (size_t)vlen);
		ret = vlen < 0 ? 0 : xip_btree_xattr_add(n, p, value, (size_t)vlen);
		free(value);
		if (ret)
			goto nomem;
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
		uint64_t blocks = div_round_up(n->size, t->bs);

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

void xip_btree_dirs_pop(struct btree *t, size_t keep)
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
	if (xip_grow((void **)&t->dirs, &t->capdirs, depth, sizeof(*t->dirs)))
		return -ENOMEM;
	/* the common prefix: the entry at depth i is the ancestor at i */
	for (i = 0; i < t->ndirs && i < depth; i++) {
		size_t up = depth - 1 - i;

		for (p = d; up--; p = p->parent)
			;
		if (t->dirs[i].node != p)
			break;
	}
	xip_btree_dirs_pop(t, i);
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

	r = xip_btree_root_new(t, o->source);
	if (!r)
		return -ENOMEM;
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
		xip_btree_set_dir(t, r, o, 0755);
	}
	r->nlink = 2;	/* its own "." and ".." count below */
	return xip_btree_make_lpf(t, o);
}
