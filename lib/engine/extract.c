// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * extract: write a tree (or one subtree) of an image out to a directory,
 * reading every byte through the engine (xip_file_runs, xip_file_read,
 * xip_readlink, xip_stat_inode, xip_dir_list).
 *
 * The names in an image are hostile: a name with a '/', an empty name and
 * "." or ".." other than the directory's own are refused, and every entry
 * is created relative to the descriptor of its parent with O_NOFOLLOW and
 * O_EXCL (mkdirat, mknodat, symlinkat, linkat alike), so that nothing in
 * the destination is ever followed, nor anything made before opened
 * again: a name a damaged directory holds twice is refused.  A directory
 * met twice, and a file met more often than its link count, are refused:
 * an image whose directories are hard-linked into a DAG would otherwise
 * be written once per path.  The whole extraction happens in a private staging
 * directory (mode 0700, a new name next to DIR or inside it), which is
 * renamed into place (RENAME_NOREPLACE) when complete and removed on
 * failure or interruption: nothing partial is left behind.
 *
 * Holes stay holes (only the data runs are written, then the size is
 * set), hard links become hard links, directories get their metadata
 * after their contents, as tar does.
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
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "engine/xip_engine.h"
#include "engine/engine_int.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"
#include "reader/xip_image.h"
#include "reader/xip_reader.h"

#define COPY_BUF (1u << 20)
#define MAX_DEPTH 2048

struct xlink {
	ext2_ino_t ino;
	unsigned int names;	/* names met so far */
	char *rel;		/* first name, relative to the staging dir */
};

struct xctx {
	struct xip_image *img;
	const struct xip_extract_opts *o;
	struct xip_extract_result *res;
	int stage_fd;
	void *links;		/* ino -> first name (hard links) */
	void *seen;		/* directory inodes on the way (loops) */
	uint8_t *met;		/* a bit per inode met (directory DAGs) */
	uint64_t ninodes;
	char *buf;
	unsigned int depth;
	bool proc_fd;
};

static int xlink_cmp(const void *a, const void *b)
{
	const struct xlink *x = a, *y = b;

	return xip_cmp_u64(x->ino, y->ino);
}

static void xlink_free(void *p)
{
	struct xlink *l = p;

	free(l->rel);
	free(l);
}

static int ino_cmp(const void *a, const void *b)
{
	return xip_cmp_u64((uintptr_t)a, (uintptr_t)b);
}

static void nofree(void *p)
{
	(void)p;
}

/*
 * Mark inode @ino met; true if it was met before.  A directory, or a file
 * of one link, met twice would be written twice: in an image whose
 * directories are hard-linked into a DAG, 2^depth times.
 */
static bool met_before(struct xctx *x, ext2_ino_t ino)
{
	uint8_t bit = (uint8_t)(1u << (ino % 8));
	bool was;

	if (ino > x->ninodes)	/* the reader refuses it first */
		return false;
	was = x->met[ino / 8] & bit;
	x->met[ino / 8] |= bit;
	return was;
}

bool xip_extract_name_ok(const char *name)
{
	return *name && strcmp(name, ".") && strcmp(name, "..") &&
	       !strchr(name, '/');
}

/* @a/@b, without a doubled '/' after "/" and without one after "". */
static char *join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *s = malloc(la + lb + 2);

	if (!s)
		return NULL;
	memcpy(s, a, la);
	if (la && a[la - 1] != '/')
		s[la++] = '/';
	memcpy(s + la, b, lb + 1);
	return s;
}

static int sys_err(const char *ipath, const char *what)
{
	int err = errno;

	return xip_error(-err, "%s: %s: %s", ipath, what, strerror(err));
}

/*
 * Making the entry @ipath failed.  In the private staging directory a
 * name that exists already was made by this extraction: the image's
 * directory holds that name twice (damage; the kernel's ext2 never makes
 * it), and nothing already made is opened or replaced.
 */
static int create_err(const char *ipath, const char *what)
{
	if (errno == EEXIST)
		return xip_error(-EUCLEAN,
				 "%s: a second entry of that name in its directory; refused",
				 ipath);
	return sys_err(ipath, what);
}

/* ---- metadata ------------------------------------------------------------ */

struct xa_ctx {
	int fd;			/* fsetxattr on it, or -1: setxattr(path) */
	const char *path;
	const char *ipath;
	bool root;
	int ret;
};

static int xa_one(char *name, char *value, size_t len, void *data)
{
	struct xa_ctx *c = data;
	int r;

	if (strncmp(name, "user.", 5) && strncmp(name, "trusted.", 8) &&
	    strncmp(name, "security.", 9) &&
	    strcmp(name, "system.posix_acl_access") &&
	    strcmp(name, "system.posix_acl_default"))
		return 0;
	r = c->fd >= 0 ? fsetxattr(c->fd, name, value, len, 0) :
	    setxattr(c->path, name, value, len, 0);
	if (r < 0 && !(errno == EPERM && !c->root) && errno != ENOTSUP) {
		c->ret = xip_error(-errno, "%s: extended attribute %s: %s",
				   c->ipath, name, strerror(errno));
		return XATTR_ABORT;
	}
	return 0;
}

/* Copy the inode's extended attributes (libext2fs reads them). */
static int x_xattrs(struct xctx *x, ext2_ino_t ino, int fd, const char *path,
		    const char *ipath)
{
	ext2_filsys fs = x->img->fs;
	struct xa_ctx c = { fd, path, ipath, geteuid() == 0, 0 };
	struct ext2_xattr_handle *h;
	struct ext2_inode_large in;
	errcode_t err;
	int ret;

	if (!x->o->xattrs || !ext2fs_has_feature_xattr(fs->super))
		return 0;
	ret = xip_read_inode(x->img, ino, &in);
	if (ret)
		return ret;
	if (ext2fs_file_acl_block(fs, (struct ext2_inode *)&in) >=
	    ext2fs_blocks_count(fs->super))
		return xip_error(-EUCLEAN,
				 "%s: inode %u: xattr block beyond the image",
				 ipath, ino);
	err = ext2fs_xattrs_open(fs, ino, &h);
	if (err)
		return xip_error_ext2(err, "%s: extended attributes", ipath);
	err = ext2fs_xattrs_read(h);
	if (!err)
		err = ext2fs_xattrs_iterate(h, xa_one, &c);
	ext2fs_xattrs_close(&h);
	if (c.ret)
		return c.ret;
	if (err)
		return xip_error_ext2(err, "%s: extended attributes", ipath);
	return 0;
}

static void x_times(const struct xip_stat *st, struct timespec ts[2])
{
	ts[0].tv_sec = st->atime;
	ts[0].tv_nsec = st->atime_ns < 1000000000 ? st->atime_ns : 0;
	ts[1].tv_sec = st->mtime;
	ts[1].tv_nsec = st->mtime_ns < 1000000000 ? st->mtime_ns : 0;
}

/* Owner, xattrs, mode, times of what @fd is open on (not a symlink). */
static int x_meta_fd(struct xctx *x, int fd, const struct xip_stat *st,
		     const char *ipath)
{
	struct timespec ts[2];
	int ret;

	ret = x_xattrs(x, st->ino, fd, NULL, ipath);
	if (ret)
		return ret;
	if (x->o->owners && fchown(fd, st->uid, st->gid) < 0)
		return sys_err(ipath, "chown");
	if (fchmod(fd, st->mode & 07777) < 0)
		return sys_err(ipath, "chmod");
	x_times(st, ts);
	if (futimens(fd, ts) < 0)
		return sys_err(ipath, "setting times");
	return 0;
}

/* ---- entries ----------------------------------------------------------- */

static int x_tree(struct xctx *x, int dfd, const char *ipath,
		  const char *rel, ext2_ino_t ino);

static int x_file_data(struct xctx *x, int fd, const struct xip_stat *st,
		       const char *ipath)
{
	uint64_t bs = x->img->block_size;
	struct xip_run *runs;
	size_t nruns;
	int ret;

	ret = xip_file_runs(x->img, st->ino, &runs, &nruns);
	if (ret)
		return ret;
	for (size_t i = 0; !ret && i < nruns; i++) {
		uint64_t off, end;

		if (runs[i].lblk > st->size / bs)
			break;
		off = runs[i].lblk * bs;
		/* the run ends at the size at the latest */
		end = runs[i].len > (st->size - off) / bs ?
		      st->size : off + runs[i].len * bs;
		while (!ret && off < end) {
			size_t want = end - off < COPY_BUF ? end - off : COPY_BUF;
			ssize_t n;

			if (xip_interrupted()) {
				ret = -EINTR;
				break;
			}
			n = xip_file_read(x->img, st->ino, off, x->buf, want);
			if (n <= 0) {
				ret = n < 0 ? (int)n :
				      xip_error(-EIO, "%s: short read", ipath);
				break;
			}
			ret = xip_pwrite_all(fd, x->buf, (size_t)n, off);
			if (ret)
				ret = xip_error(ret, "%s: write: %s", ipath,
						strerror(-ret));
			off += (uint64_t)n;
			x->res->bytes += (uint64_t)n;
		}
	}
	free(runs);
	if (!ret && ftruncate(fd, (off_t)st->size) < 0)
		ret = sys_err(ipath, "setting the size");
	return ret;
}

static int x_file(struct xctx *x, int dfd, const char *name,
		  const struct xip_stat *st, const char *ipath)
{
	int fd, ret;

	if (st->size > INT64_MAX)
		return xip_error(-EFBIG, "%s: size %" PRIu64 " too large",
				 ipath, st->size);
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0)
		return create_err(ipath, "create");
	ret = x_file_data(x, fd, st, ipath);
	if (!ret)
		ret = x_meta_fd(x, fd, st, ipath);
	close(fd);
	x->res->files++;
	return ret;
}

static int x_symlink(struct xctx *x, int dfd, const char *name,
		     const struct xip_stat *st, const char *ipath)
{
	char target[EXT2_MAX_BLOCK_SIZE + 1];
	struct timespec ts[2];
	int ret;

	ret = xip_readlink(x->img, st->ino, target, sizeof(target));
	if (ret)
		return ret;
	if (symlinkat(target, dfd, name) < 0)
		return create_err(ipath, "symlink");
	if (x->o->owners &&
	    fchownat(dfd, name, st->uid, st->gid, AT_SYMLINK_NOFOLLOW) < 0)
		return sys_err(ipath, "chown");
	x_times(st, ts);
	if (utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return sys_err(ipath, "setting times");
	x->res->others++;
	return 0;
}

/* Devices, FIFOs, sockets: made with mknodat, then set through O_PATH. */
static int x_special(struct xctx *x, int dfd, const char *name,
		     const struct xip_stat *st, const char *ipath)
{
	unsigned int major, minor;
	dev_t rdev;
	struct timespec ts[2];
	char proc[40];
	struct stat sb;
	int fd, ret = 0;

	xip_rdev_split(st->rdev, &major, &minor);
	rdev = makedev(major, minor);

	if (mknodat(dfd, name, (st->mode & S_IFMT) | 0600, rdev) < 0)
		return create_err(ipath, "mknod");
	fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sys_err(ipath, "open");
	if (fstat(fd, &sb) < 0 || (sb.st_mode & S_IFMT) != (st->mode & S_IFMT)) {
		close(fd);
		return xip_error(-ESTALE, "%s: replaced while being made",
				 ipath);
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (x->proc_fd)
		ret = x_xattrs(x, st->ino, -1, proc, ipath);
	if (!ret && x->o->owners &&
	    fchownat(fd, "", st->uid, st->gid, AT_EMPTY_PATH) < 0)
		ret = sys_err(ipath, "chown");
	if (!ret && x->proc_fd && chmod(proc, st->mode & 07777) < 0)
		ret = sys_err(ipath, "chmod");
	x_times(st, ts);
	if (!ret && utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		ret = sys_err(ipath, "setting times");
	close(fd);
	x->res->others++;
	return ret;
}

static int x_dir(struct xctx *x, int dfd, const char *name,
		 const struct xip_stat *st, const char *ipath,
		 const char *rel)
{
	int fd, ret;

	if (mkdirat(dfd, name, 0700) < 0)
		return create_err(ipath, "mkdir");
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	if (fd < 0)
		return sys_err(ipath, "open");
	ret = x_tree(x, fd, ipath, rel, st->ino);
	if (!ret)
		ret = x_meta_fd(x, fd, st, ipath);
	close(fd);
	return ret;
}

static int too_many_names(const struct xip_stat *st, const char *ipath)
{
	return xip_error(-EUCLEAN,
			 "%s: inode %u has more names than its link count (%u); refused",
			 ipath, st->ino, st->links);
}

/*
 * Hard links: a second name of an inode links to the first; an inode met
 * more often than its link count is refused.
 */
static int x_linked(struct xctx *x, int dfd, const char *name,
		    const struct xip_stat *st, const char *ipath,
		    const char *rel, bool *done)
{
	struct xlink key = { .ino = st->ino }, *l, **found;

	*done = false;
	if (S_ISDIR(st->mode))
		return 0;
	if (st->links < 2)
		return met_before(x, st->ino) ? too_many_names(st, ipath) : 0;
	found = tfind(&key, &x->links, xlink_cmp);
	if (found) {
		if (++(*found)->names > st->links)
			return too_many_names(st, ipath);
		*done = true;
		if (linkat(x->stage_fd, (*found)->rel, dfd, name, 0) < 0)
			return create_err(ipath, "link");
		x->res->links++;
		return 0;
	}
	l = malloc(sizeof(*l));
	if (!l || !(l->rel = strdup(rel))) {
		free(l);
		return -ENOMEM;
	}
	l->ino = st->ino;
	l->names = 1;
	if (!tsearch(l, &x->links, xlink_cmp)) {
		xlink_free(l);
		return -ENOMEM;
	}
	return 0;
}

/* Entry @name of @dfd for inode @ino (@ipath in the image, @rel here). */
static int x_entry(struct xctx *x, int dfd, const char *name,
		   ext2_ino_t ino, const char *ipath, const char *rel)
{
	struct xip_stat st;
	bool done;
	int ret;

	ret = xip_stat_inode(x->img, ino, &st);
	if (ret)
		return ret;
	ret = x_linked(x, dfd, name, &st, ipath, rel, &done);
	if (ret || done)
		return ret;
	switch (st.mode & S_IFMT) {
	case S_IFDIR:
		return x_dir(x, dfd, name, &st, ipath, rel);
	case S_IFREG:
		return x_file(x, dfd, name, &st, ipath);
	case S_IFLNK:
		return x_symlink(x, dfd, name, &st, ipath);
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFSOCK:
		return x_special(x, dfd, name, &st, ipath);
	default:
		return xip_error(-EUCLEAN, "%s: inode %u: unknown file type 0%o",
				 ipath, ino, st.mode & S_IFMT);
	}
}

/* The entries of directory @ino into the directory open as @dfd. */
static int x_tree(struct xctx *x, int dfd, const char *ipath,
		  const char *rel, ext2_ino_t ino)
{
	struct xip_dirent *ents;
	size_t n;
	int ret;

	if (x->depth >= MAX_DEPTH)
		return xip_error(-ELOOP, "%s: directories nested too deeply",
				 ipath);
	if (tfind((void *)(uintptr_t)ino, &x->seen, ino_cmp))
		return xip_error(-ELOOP,
				 "%s: directory inode %u is its own ancestor",
				 ipath, ino);
	if (met_before(x, ino))
		return xip_error(-EUCLEAN,
				 "%s: directory inode %u has a second name; refused",
				 ipath, ino);
	if (!tsearch((void *)(uintptr_t)ino, &x->seen, ino_cmp))
		return -ENOMEM;
	ret = xip_dir_list(x->img, ino, &ents, &n);
	if (ret)
		return ret;
	x->depth++;
	for (size_t i = 0; !ret && i < n; i++) {
		const char *name = ents[i].name;
		char *ip, *r;

		/* ext2 keeps a directory's own "." and ".." first */
		if ((i == 0 && !strcmp(name, ".")) ||
		    (i == 1 && !strcmp(name, "..")))
			continue;
		if (xip_interrupted()) {
			ret = -EINTR;
			break;
		}
		if (!xip_extract_name_ok(name) || ents[i].ino == 0) {
			ret = xip_error(-EUCLEAN,
					"%s: entry '%s': a name that would leave the directory; refused",
					ipath, name);
			break;
		}
		ip = join(ipath, name);
		r = join(rel, name);
		ret = ip && r ? x_entry(x, dfd, name, ents[i].ino, ip, r) :
		      -ENOMEM;
		free(ip);
		free(r);
	}
	x->depth--;
	tdelete((void *)(uintptr_t)ino, &x->seen, ino_cmp);
	free(ents);
	return ret;
}

/* ---- staging -------------------------------------------------------------- */

/* Remove what the extraction made below @dfd/@name (ours, private). */
static void rm_tree(int dfd, const char *name)
{
	struct dirent *de;
	DIR *d;
	int fd;

	if (!unlinkat(dfd, name, 0) || (errno != EISDIR && errno != EPERM))
		return;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		unlinkat(dfd, name, 0);
		return;
	}
	fchmod(fd, 0700);
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rm_tree(dirfd(d), de->d_name);
	closedir(d);
	unlinkat(dfd, name, AT_REMOVEDIR);
}

/* A new private directory ".PREFIX.XXXXXXXX" in @dfd. */
static int stage_make(int dfd, const char *prefix, char *name, size_t len)
{
	static const char chars[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

	for (int tries = 0; tries < 100; tries++) {
		unsigned char r[8];
		char suffix[9];

		if (getrandom(r, sizeof(r), 0) != sizeof(r))
			return -errno;
		for (int i = 0; i < 8; i++)
			suffix[i] = chars[r[i] % (sizeof(chars) - 1)];
		suffix[8] = '\0';
		snprintf(name, len, ".%.200s.%s", prefix, suffix);
		if (!mkdirat(dfd, name, 0700))
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* Move every entry of the staging dir into @dfd, or none of them. */
static int stage_move_all(int sfd, int dfd, const char *dir)
{
	struct dirent *de;
	char **moved = NULL;
	size_t n = 0, cap = 0;
	int ret = 0, fd;
	DIR *d;

	fd = openat(sfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return xip_error(-errno, "%s: %s", dir, strerror(errno));
	}
	while (!ret && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (renameat2(sfd, de->d_name, dfd, de->d_name,
			      RENAME_NOREPLACE) < 0) {
			ret = xip_error(-errno, "%s/%s: %s", dir, de->d_name,
					errno == EEXIST ? "exists already" :
					strerror(errno));
			break;
		}
		if (xip_grow((void **)&moved, &cap, n + 1, sizeof(*moved)) ||
		    !(moved[n] = strdup(de->d_name))) {
			renameat2(dfd, de->d_name, sfd, de->d_name,
				  RENAME_NOREPLACE);
			ret = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	for (size_t i = 0; i < n; i++) {
		if (ret)	/* put back what was moved */
			renameat2(dfd, moved[i], sfd, moved[i],
				  RENAME_NOREPLACE);
		free(moved[i]);
	}
	free(moved);
	return ret;
}

/* ---- the destination ----------------------------------------------------- */

/*
 * Can only root or the caller change directory @st (@shown)?  Owned by
 * another user, or writable by the group or others without the sticky
 * bit, it is refused: whoever can write to it could swap what lies below
 * it for a symlink to anywhere (the rule of sshd's StrictModes).
 */
static int dest_trusted(const char *shown, const struct stat *st)
{
	uid_t me = geteuid();

	if (st->st_uid != 0 && st->st_uid != me)
		return xip_error(-EPERM,
				 "%s: owned by user %u, neither root nor the caller; refused",
				 shown, (unsigned int)st->st_uid);
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
		return xip_error(-EPERM,
				 "%s: writable by %s without the sticky bit; refused",
				 shown, st->st_mode & S_IWOTH ? "others" :
				 "its group");
	return 0;
}

static int dest_check(int fd, const char *shown)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return sys_err(shown, "stat");
	return dest_trusted(shown, &st);
}

/* Open @name of @fd (@shown) as a directory, never a symlink. */
static int dest_step(int fd, const char *name, const char *shown, int *nfd)
{
	struct stat ls;
	int err;

	*nfd = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*nfd >= 0)
		return 0;
	err = errno;
	if (err == ENOENT)
		return -ENOENT;
	if (!fstatat(fd, name, &ls, AT_SYMLINK_NOFOLLOW) && S_ISLNK(ls.st_mode))
		return xip_error(-ELOOP,
				 "%s: a symbolic link; the destination is not reached through one",
				 shown);
	return xip_error(-err, "%s: %s", shown, strerror(err));
}

/*
 * Open the directory @dir from "/" (a relative @dir below the working
 * directory's path), component by component with O_NOFOLLOW, each one
 * trusted (dest_trusted).  When only the last component is missing,
 * *@fdp is its parent and *@base its name; else *@base is NULL.
 */
static int dest_open(const char *dir, int *fdp, char **base)
{
	char *abs, *cwd;
	size_t i = 0;
	int fd, nfd, ret;

	*fdp = -1;
	*base = NULL;
	if (dir[0] == '/') {
		abs = strdup(dir);
	} else {
		cwd = getcwd(NULL, 0);
		if (!cwd)
			return xip_error(-errno,
					 "%s: the working directory: %s", dir,
					 strerror(errno));
		abs = join(cwd, dir);
		free(cwd);
	}
	if (!abs)
		return -ENOMEM;
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	ret = fd < 0 ? sys_err("/", "open") : dest_check(fd, "/");
	while (!ret) {
		size_t start, end;
		bool last;
		char c;

		while (abs[i] == '/')
			i++;
		if (!abs[i])
			break;
		start = i;
		while (abs[i] && abs[i] != '/')
			i++;
		end = i;
		while (abs[i] == '/')
			i++;
		last = !abs[i];
		c = abs[end];
		abs[end] = '\0';
		if (strcmp(abs + start, ".")) {
			ret = dest_step(fd, abs + start, abs, &nfd);
			if (ret == -ENOENT && last) {
				*base = strdup(abs + start);
				ret = *base ? 0 : -ENOMEM;
				abs[end] = c;
				break;
			}
			if (ret == -ENOENT)
				ret = xip_error(ret, "%s: %s", abs,
						strerror(ENOENT));
			if (!ret) {
				close(fd);
				fd = nfd;
				ret = dest_check(fd, abs);
			}
		}
		abs[end] = c;
	}
	free(abs);
	if (ret && fd >= 0)
		close(fd);
	else
		*fdp = fd;
	return ret;
}

struct xjob {
	const char *dir;
	const char *path;	/* in the image, "/" for all */
	ext2_ino_t ino;
	const char *name;	/* the object's name in DIR (subtree) */
	int pfd;		/* DIR's parent (DIR missing, whole tree) */
	char *base;		/* DIR's last name then */
	int dfd;		/* DIR, when it exists */
	char stage[260];
	int sfd;
};

static int x_run(struct xctx *x, struct xjob *j)
{
	struct xip_stat st;
	int ret;

	ret = xip_stat_inode(x->img, j->ino, &st);
	if (ret)
		return ret;
	if (!j->name) {
		/* the top: its entries into the staging dir, which becomes
		 * DIR with the top's metadata when DIR is new */
		if (!S_ISDIR(st.mode))
			return xip_error(-ENOTDIR, "%s: not a directory",
					 j->path);
		ret = x_tree(x, j->sfd, "/", "", j->ino);
		if (!ret && j->dfd < 0)
			ret = x_meta_fd(x, j->sfd, &st, "/");
		return ret;
	}
	return x_entry(x, j->sfd, j->name, j->ino, j->path, j->name);
}

static int x_finish(struct xjob *j)
{
	if (j->dfd < 0) {
		if (renameat2(j->pfd, j->stage, j->pfd, j->base,
			      RENAME_NOREPLACE) < 0)
			return xip_error(-errno, "%s: %s", j->dir,
					 errno == EEXIST ? "exists already" :
					 strerror(errno));
		return 0;
	}
	return stage_move_all(j->sfd, j->dfd, j->dir);
}

static int x_open_dest(struct xjob *j)
{
	int fd, ret;

	j->pfd = j->dfd = j->sfd = -1;
	ret = dest_open(j->dir, &fd, &j->base);
	if (ret)
		return ret;
	if (!j->base) {
		j->dfd = fd;
	} else {
		j->pfd = fd;
		if (j->name) {
			/* a subtree into a new DIR: DIR is made first */
			if (mkdirat(j->pfd, j->base, 0777) < 0)
				return xip_error(-errno, "%s: %s", j->dir,
						 strerror(errno));
			j->dfd = openat(j->pfd, j->base, O_PATH |
					O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (j->dfd < 0) {
				ret = xip_error(-errno, "%s: %s", j->dir,
						strerror(errno));
				unlinkat(j->pfd, j->base, AT_REMOVEDIR);
				return ret;
			}
			/* pfd and base stay: DIR is removed on failure */
		}
	}
	ret = stage_make(j->dfd >= 0 ? j->dfd : j->pfd,
			 j->dfd >= 0 ? "xiptool-extract" : j->base,
			 j->stage, sizeof(j->stage));
	if (ret)
		return xip_error(ret, "%s: staging directory: %s", j->dir,
				 strerror(-ret));
	j->sfd = openat(j->dfd >= 0 ? j->dfd : j->pfd, j->stage,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (j->sfd < 0)
		return xip_error(-errno, "%s: staging directory: %s", j->dir,
				 strerror(errno));
	return 0;
}

int xip_extract(struct xip_image *img, const char *path, const char *dir,
		const struct xip_extract_opts *o,
		struct xip_extract_result *res)
{
	struct xctx x = { .img = img, .o = o, .res = res };
	struct xjob j = { .dir = dir, .path = path && *path ? path : "/" };
	bool made_dir = false;
	const char *last;
	int ret;

	memset(res, 0, sizeof(*res));
	j.pfd = j.dfd = j.sfd = -1;
	ret = xip_lookup(img, j.path, XIP_LOOKUP_NOFOLLOW, &j.ino);
	if (ret)
		return ret;
	last = strrchr(j.path, '/');
	last = last ? last + 1 : j.path;
	if (j.ino != EXT2_ROOT_INO) {
		if (!xip_extract_name_ok(last))
			return xip_error(-EINVAL,
					 "%s: name a file by its own name (no '.' or '..' at the end)",
					 j.path);
		j.name = last;
	}
	x.buf = malloc(COPY_BUF);
	if (!x.buf)
		return -ENOMEM;
	x.proc_fd = access("/proc/self/fd", X_OK) == 0;
	x.ninodes = img->fs->super->s_inodes_count;
	x.met = calloc(x.ninodes / 8 + 1, 1);
	if (!x.met) {
		free(x.buf);
		return -ENOMEM;
	}
	ret = x_open_dest(&j);
	made_dir = j.name && j.pfd >= 0 && j.dfd >= 0;
	if (!ret) {
		x.stage_fd = j.sfd;
		ret = x_run(&x, &j);
	}
	if (!ret && xip_interrupted())
		ret = -EINTR;
	if (ret == -EINTR)
		ret = xip_error(-EINTR, "%s: interrupted, nothing written",
				dir);
	if (!ret)
		ret = x_finish(&j);
	if (ret && j.sfd >= 0)
		rm_tree(j.dfd >= 0 ? j.dfd : j.pfd, j.stage);
	else if (!ret && j.dfd >= 0)
		unlinkat(j.dfd, j.stage, AT_REMOVEDIR);
	if (ret && made_dir)
		unlinkat(j.pfd, j.base, AT_REMOVEDIR);
	if (j.sfd >= 0)
		close(j.sfd);
	if (j.dfd >= 0)
		close(j.dfd);
	if (j.pfd >= 0)
		close(j.pfd);
	free(j.base);
	free(x.met);
	free(x.buf);
	tdestroy(x.links, xlink_free);
	tdestroy(x.seen, nofree);
	return ret;
}
