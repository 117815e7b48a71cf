// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Output files: every file a command creates (a root hash, a file read out
 * of an image, a saved segment) is written as mkfs writes an image.  The
 * new contents go to a new, private file in the destination's directory
 * (O_TMPFILE, or a name made with O_CREAT | O_EXCL | O_NOFOLLOW and mode
 * 0600) which, once complete and on disk, is linked or renamed over the
 * destination: a failure or a kill leaves the old file or the new one,
 * never a partial one.  A symbolic link at the destination is refused, not
 * followed; another user's file in a shared sticky directory (/tmp) is
 * refused, never written into nor replaced; a file the caller could not
 * write is not replaced.  A character device (/dev/null) is written in
 * place: it cannot be renamed over and holds nothing to lose.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/xip_error.h"
#include "util/xip_util.h"

int xip_temp_name(const char *base, char *buf, size_t len)
{
	static const char chars[] = "abcdefghijklmnopqrstuvwxyz"
				    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	uint8_t rnd[8];
	char suffix[9];
	int n;

	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -EIO;
	for (size_t i = 0; i < sizeof(rnd); i++)
		suffix[i] = chars[rnd[i] % (sizeof(chars) - 1)];
	suffix[8] = '\0';
	/* a dot file beside the target, short enough for NAME_MAX */
	n = snprintf(buf, len, ".%.200s.%s", base, suffix);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int xip_link_unnamed(int fd, int dirfd, const char *name)
{
	char proc[32];

	if (linkat(fd, "", dirfd, name, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno != ENOENT && errno != EPERM)
		return -errno;
	/* without CAP_DAC_READ_SEARCH: through its /proc link */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW) ?
	       -errno : 0;
}

bool xip_shared_dir(int dirfd)
{
	struct stat st;

	return fstat(dirfd, &st) == 0 && (st.st_mode & S_ISVTX) &&
	       (st.st_mode & (S_IWOTH | S_IWGRP));
}

static int split(struct xip_outfile *of, const char *path)
{
	const char *slash = strrchr(path, '/'), *b = slash ? slash + 1 : path;
	size_t dlen = slash ? (size_t)(slash - path) : 0;
	char *dir;

	if (!*b || !strcmp(b, ".") || !strcmp(b, ".."))
		return xip_error(-EISDIR, "%s: is a directory", path);
	dir = slash ? strndup(path, dlen ? dlen : 1) : strdup(".");
	of->base = strdup(b);
	of->path = strdup(path);
	if (!dir || !of->base || !of->path) {
		free(dir);
		return -ENOMEM;
	}
	of->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (of->dirfd < 0)
		return xip_error(-errno, "%s: %s", path, strerror(errno));
	return 0;
}

static int changed(const struct xip_outfile *of)
{
	return xip_error(-ESTALE, "%s: changed while it was being written",
			 of->path);
}

/* A character device: written where it is, if it is still @st. */
static int open_device(struct xip_outfile *of, const struct stat *st)
{
	struct stat now;

	if (st->st_uid != 0 && st->st_uid != geteuid())
		return xip_error(-EPERM,
				 "%s: a device owned by another user (uid %u); refusing to write to it",
				 of->path, (unsigned int)st->st_uid);
	of->fd = openat(of->dirfd, of->base, O_WRONLY | O_NOFOLLOW |
			O_NOCTTY | O_CLOEXEC);
	if (of->fd < 0)
		return xip_error(-errno, "%s: %s", of->path, strerror(errno));
	if (fstat(of->fd, &now) < 0 || !S_ISCHR(now.st_mode) ||
	    now.st_rdev != st->st_rdev)
		return changed(of);
	of->inplace = true;
	return 0;
}

/* A regular file to replace: may the caller write it? */
static int probe_file(struct xip_outfile *of, const struct stat *st)
{
	struct stat now;
	int fd;

	fd = openat(of->dirfd, of->base, O_WRONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return xip_error(-errno, "%s: %s", of->path, strerror(errno));
	if (fstat(fd, &now) < 0 || now.st_dev != st->st_dev ||
	    now.st_ino != st->st_ino) {
		close(fd);
		return changed(of);
	}
	close(fd);
	of->replace = true;
	of->old = *st;
	of->mode = st->st_mode & 0777;
	return 0;
}

static int probe(struct xip_outfile *of, unsigned int flags)
{
	struct stat st;

	if (fstatat(of->dirfd, of->base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			return xip_error(-errno, "%s: %s", of->path,
					 strerror(errno));
		return 0;
	}
	if (S_ISLNK(st.st_mode))
		return xip_error(-ELOOP,
				 "%s: is a symbolic link; refusing to write through it",
				 of->path);
	if (st.st_uid != geteuid() && xip_shared_dir(of->dirfd))
		return xip_error(-EPERM,
				 "%s: owned by another user (uid %u) in a shared directory; refusing to replace it",
				 of->path, (unsigned int)st.st_uid);
	if (S_ISCHR(st.st_mode) && !(flags & XIP_OUTFILE_REGULAR))
		return open_device(of, &st);
	if (!S_ISREG(st.st_mode))
		return xip_error(-EINVAL, "%s: not a regular file", of->path);
	return probe_file(of, &st);
}

/* A new private file in the destination's directory, unnamed if possible. */
static int temp_create(struct xip_outfile *of)
{
	char name[NAME_MAX + 1];
	int ret;

	of->fd = openat(of->dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (of->fd >= 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return xip_error(-errno, "%s: cannot create it: %s", of->path,
				 strerror(errno));
	for (int tries = 0; tries < 100; tries++) {
		ret = xip_temp_name(of->base, name, sizeof(name));
		if (ret)
			return xip_error(ret, "%s: %s", of->path,
					 strerror(-ret));
		of->fd = openat(of->dirfd, name, O_RDWR | O_CREAT | O_EXCL |
				O_NOFOLLOW | O_CLOEXEC, 0600);
		if (of->fd >= 0) {
			of->tmpname = strdup(name);
			return of->tmpname ? 0 : -ENOMEM;
		}
		if (errno != EEXIST)
			break;
	}
	return xip_error(-errno, "%s: cannot create it: %s", of->path,
			 strerror(errno));
}

int xip_outfile_open(struct xip_outfile *of, const char *path,
		     unsigned int flags)
{
	mode_t mask = umask(077);
	int ret;

	umask(mask);
	memset(of, 0, sizeof(*of));
	of->fd = of->dirfd = -1;
	of->mode = 0666 & ~mask;
	of->keep_owner = true;
	ret = split(of, path);
	if (!ret)
		ret = probe(of, flags);
	if (!ret && !of->inplace)
		ret = temp_create(of);
	if (ret)
		xip_outfile_abort(of);
	return ret;
}

/*
 * Is the destination still what was probed: absent (0), the same file
 * (1), or something else (-ESTALE)?
 */
static int still(struct xip_outfile *of)
{
	struct stat st;

	if (fstatat(of->dirfd, of->base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT && !of->replace ? 0 : changed(of);
	if (!of->replace || !S_ISREG(st.st_mode) ||
	    st.st_dev != of->old.st_dev || st.st_ino != of->old.st_ino)
		return changed(of);
	return 1;
}

static int finish(struct xip_outfile *of)
{
	struct stat st;

	if (of->replace && of->keep_owner && fstat(of->fd, &st) == 0 &&
	    (st.st_uid != of->old.st_uid || st.st_gid != of->old.st_gid) &&
	    fchown(of->fd, of->old.st_uid, of->old.st_gid) < 0 &&
	    errno != EPERM)
		return xip_error(-errno, "%s: %s", of->path, strerror(errno));
	if (fchmod(of->fd, of->mode) < 0 || fsync(of->fd) < 0)
		return xip_error(-errno, "%s: %s", of->path, strerror(errno));
	return 0;
}

/* Put the complete file in place: link it (new) or rename it over. */
static int put_in_place(struct xip_outfile *of)
{
	char name[NAME_MAX + 1];
	int ret = still(of);

	if (ret < 0)
		return ret;
	if (!of->replace) {
		ret = of->tmpname ? (linkat(of->dirfd, of->tmpname, of->dirfd,
					    of->base, 0) ? -errno : 0) :
		      xip_link_unnamed(of->fd, of->dirfd, of->base);
		if (ret == -EEXIST)
			return xip_error(ret, "%s: made by someone else meanwhile; left alone",
					 of->path);
		if (ret)
			return xip_error(ret, "%s: %s", of->path,
					 strerror(-ret));
		if (of->tmpname)
			unlinkat(of->dirfd, of->tmpname, 0);
		free(of->tmpname);
		of->tmpname = NULL;
		return 0;
	}
	if (!of->tmpname) {
		ret = xip_temp_name(of->base, name, sizeof(name));
		if (!ret)
			ret = xip_link_unnamed(of->fd, of->dirfd, name);
		if (ret)
			return xip_error(ret, "%s: %s", of->path,
					 strerror(-ret));
		of->tmpname = strdup(name);
		if (!of->tmpname) {
			unlinkat(of->dirfd, name, 0);
			return -ENOMEM;
		}
	}
	if (renameat(of->dirfd, of->tmpname, of->dirfd, of->base) < 0)
		return xip_error(-errno, "%s: %s", of->path, strerror(errno));
	free(of->tmpname);
	of->tmpname = NULL;
	return 0;
}

int xip_outfile_open_old(const struct xip_outfile *of)
{
	struct stat st;
	int fd;

	if (!of->replace)
		return xip_error(-ENOENT, "%s: %s", of->path, strerror(ENOENT));
	fd = openat(of->dirfd, of->base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return xip_error(-errno, "%s: %s", of->path, strerror(errno));
	if (fstat(fd, &st) < 0 || st.st_dev != of->old.st_dev ||
	    st.st_ino != of->old.st_ino) {
		close(fd);
		return changed(of);
	}
	return fd;
}

int xip_outfile_commit(struct xip_outfile *of)
{
	int ret = 0;

	if (of->inplace) {
		if (close(of->fd) < 0)
			ret = xip_error(-errno, "%s: %s", of->path,
					strerror(errno));
		of->fd = -1;
	} else {
		ret = finish(of);
		if (!ret)
			ret = put_in_place(of);
		/* the new name on disk too */
		if (!ret && fsync(of->dirfd) < 0 && errno != EINVAL)
			ret = xip_error(-errno, "%s: %s", of->path,
					strerror(errno));
	}
	xip_outfile_abort(of);
	return ret;
}

void xip_outfile_abort(struct xip_outfile *of)
{
	if (of->tmpname && of->dirfd >= 0)
		unlinkat(of->dirfd, of->tmpname, 0);
	if (of->fd >= 0)
		close(of->fd);
	if (of->dirfd >= 0)
		close(of->dirfd);
	free(of->tmpname);
	free(of->base);
	free(of->path);
	of->tmpname = of->base = of->path = NULL;
	of->fd = of->dirfd = -1;
}
