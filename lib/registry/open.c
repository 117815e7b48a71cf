// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Opening a segment: an attached one by its record (@NAME), checked
 * against the identity recorded and held with its holder lock, or a plain
 * path, held in the caller's run directory (registry.c).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry/xip_registry.h"
#include "registry/registry_int.h"
#include "util/xip_debug.h"
#include "util/xip_error.h"
#include "util/xip_util.h"
#include "segment/xip_fill.h"
#include "segment/xip_segment.h"

/*
 * xip_registry_open_entry(), with the descriptor's fstat left in @st.
 * With @lockfd, the holder lock's descriptor goes there (opened here, just
 * after the segment file, when it is -1: exec closes the two neighbours
 * with one call; closed here on failure).  With @locked too, the shared
 * holder lock is taken first when it is free (*@locked tells), so that
 * the fstat after it says whether the file was still linked with the lock
 * held.
 */
static int open_entry_stat(const struct xip_seg_entry *e, int oflags,
			   struct stat *st, int *lockfd, bool *locked)
{
	bool opened = false;
	int fd;

	/* openat, not open: musl's open adds an fcntl for O_CLOEXEC */
	fd = openat(AT_FDCWD, e->path, (oflags & O_ACCMODE) | O_NOFOLLOW |
		    O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ELOOP)
		return xip_registry_foreign_error(e);
	if (fd < 0 && errno == ENOENT)
		return xip_error(-ENOENT, "@%s: no attached segment of that name",
				 e->name);
	if (fd < 0)
		return xip_error(-errno, "%s: %s", e->path, strerror(errno));
	if (lockfd && *lockfd < 0) {
		*lockfd = xip_registry_hold_open(e, false);
		if (*lockfd < 0) {
			int ret = *lockfd;

			*lockfd = -1;
			close(fd);
			return ret;
		}
		opened = true;
	}
	if (locked)
		*locked = !xip_seg_type_exclusive(e->type) &&
			  flock(*lockfd, LOCK_SH | LOCK_NB) == 0;
	if (fstat(fd, st) < 0 || !xip_registry_same_file(e, st)) {
		if (opened) {
			xip_close_two(fd, *lockfd);
			*lockfd = -1;
		} else {
			close(fd);
		}
		return xip_registry_foreign_error(e);
	}
#ifndef XIP_LIBC_ONLY
	/*
	 * A regular file: blocking or not makes no difference from here.
	 * The front end (exec) only maps it and closes it before the jump.
	 */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
#endif
	return fd;
}

int xip_registry_open_entry(const struct xip_seg_entry *e, int oflags)
{
	struct stat st;

	return open_entry_stat(e, oflags, &st, NULL, NULL);
}

/*
 * A live record's file opened for reading without judging it first: the
 * open (O_NOFOLLOW) and the fstat of the descriptor tell what the lstat
 * of entry_judge() would, in the order the judgement gives: gone (the
 * record is cleaned), another file, or the segment.
 */
static int open_live(struct xip_seg_entry *e, struct stat *st, int *lockfd,
		     bool *locked)
{
	int fd = open_entry_stat(e, O_RDONLY, st, lockfd, locked);

	if (fd == -ENOENT) {
		xip_registry_clean(e);	/* stale */
		return xip_error(-ENOENT, "@%s: no attached segment of that name",
				 e->name);
	}
	if (fd >= 0)
		xip_registry_live_loop_check(e);
	return fd;
}

/*
 * xip_registry_open(), with the descriptor's fstat left in @st; @lockfd
 * and @locked as for open_entry_stat() (*@locked false where the record
 * is judged first).  @brief: @e is zeroed and only what opening reads is
 * read of a live record (xip_registry_parse_brief).
 */
static int registry_open_stat(const char *name, int oflags,
			      struct xip_seg_entry *e, struct stat *st,
			      int *lockfd, bool *locked, bool brief)
{
	int ret = xip_registry_name_check(name);

	if (locked)
		*locked = false;
	if (ret)
		return xip_error(-ENOENT, "@%.70s%s: %s", name,
				 strlen(name) > 70 ? "..." : "", xip_errmsg());
	/* reading a record no attach holds: one open judges it */
	if ((oflags & O_ACCMODE) == O_RDONLY) {
		ret = xip_registry_record_read(name, e, brief);
		if (ret)
			return ret;
		if (!e->attaching)
			return open_live(e, st, lockfd, locked);
	}
	ret = xip_registry_get(name, e);
	if (ret)
		return ret;
	/* dcssblk's rule, before the file is opened for writing */
	if ((oflags & O_ACCMODE) != O_RDONLY &&
	    !xip_seg_type_writable(e->type))
		return xip_error_reason(-EROFS, XIP_R_SEG_READONLY,
					"@%s: segment is read-only (type %s)",
					name, xip_seg_type_name(e->type));
	ret = open_entry_stat(e, oflags, st, lockfd, NULL);
	if (ret == -ENOENT) {
		xip_registry_clean(e);	/* gone since: stale */
		ret = xip_error(-ENOENT, "@%s: no attached segment of that name",
				name);
	}
	return ret;
}

int xip_registry_open(const char *name, int oflags, struct xip_seg_entry *e)
{
	struct stat st;

	return registry_open_stat(name, oflags, e, &st, NULL, NULL, false);
}

/*
 * A lazy segment: its fill state, until it is complete (then nothing is
 * kept, and nothing more is tested).
 */
static int seg_fill_attach(struct xip_seg *seg, const struct xip_seg_entry *e)
{
	struct xip_fill *f;
	int fd = xip_registry_fill_open(e, false), ret;

	if (fd == -ENOENT) {
		/* gone: complete and forgotten, or never made */
		xip_error_clear();
		return xip_error(-EIO, "@%s: lazy segment without its fill state: the attach or its filler died",
				 e->name);
	}
	if (fd < 0)
		return fd;
	ret = xip_fill_open(fd, &f);
	if (ret) {
		close(fd);
		return ret;
	}
	if (xip_fill_complete(f))
		xip_fill_close(f);
	else
		seg->fill = f;
	return 0;
}

/*
 * Open the attached segment @name: its file through its record (never
 * following a symlink, only the file recorded at attach), with the
 * segment's type; a read-only type refuses XIP_SEG_WRITE before the file
 * is opened for writing.
 */
static int open_attached(const char *name, int flags,
			 struct xip_seg **segp)
{
	/* zeroed for a brief read: its first bytes written, not 12 KiB */
	struct xip_seg_entry *e = calloc(1, sizeof(*e));
	bool write = flags & XIP_SEG_WRITE, locked = false;
	struct stat st;
	int fd, lockfd = -1;

	if (!e)
		return xip_error(-ENOMEM, "out of memory");
	/*
	 * No open for writing while others hold it (see segment_int.h): a
	 * writer takes the exclusive holder lock first, and keeps it
	 */
	fd = 0;
	if (write && !xip_registry_name_check(name) &&
	    !xip_registry_get(name, e) && xip_seg_type_writable(e->type)) {
		lockfd = xip_registry_hold_open(e, false);
		fd = lockfd < 0 ? lockfd :
		     xip_seg_flock_wait(lockfd, LOCK_EX, XIP_LOCK_WAIT_MS);
		if (fd == -EWOULDBLOCK)
			fd = xip_error(-EBUSY, "%s: busy: another xiptool holds it open",
				       name);
		else if (fd < 0 && lockfd >= 0)
			fd = xip_error(fd, "%s: lock: %s", name, strerror(-fd));
		if (!fd)
			flags |= XIP_SEG_HELD_EX;
	}
	if (!fd)
		fd = registry_open_stat(name, write ? O_RDWR : O_RDONLY, e,
					&st, &lockfd,
					(flags & XIP_SEG_SHARED) && !write ?
						&locked : NULL, !write);
	if (fd < 0 && lockfd >= 0) {
		close(lockfd);
		lockfd = -1;
	}
	if (write && (fd == -EACCES || fd == -EPERM))
		fd = xip_error(-EROFS, "@%s: read-only: %s", name,
			       strerror(-fd));
	/*
	 * A brief entry is cut to what was read of it, up to its path's end
	 * (nothing past it is read from here on), so that what is allocated
	 * next (the segment's names) follows those bytes, not 12 KiB later
	 */
	if (fd >= 0 && !write) {
		struct xip_seg_entry *cut = realloc(
			e, offsetof(struct xip_seg_entry, path) +
				   strlen(e->path) + 1);

		if (cut)
			e = cut;
	}
	if (fd >= 0) {
		XIP_DBG(REGISTRY, "@%s is %s (type %s)", name, e->path,
			xip_seg_type_name(e->type));
		fd = xip_seg_adopt_stat(fd, &st, lockfd, e->path, name,
					e->type,
					locked ? flags : flags & ~XIP_SEG_SHARED,
					segp);
	}
	/* the data, not the padding after it */
	if (fd >= 0 && e->size && e->size < (*segp)->size)
		(*segp)->data_size = e->size;
	if (fd >= 0)
		(*segp)->populate = e->populate;
	if (fd >= 0 && e->lazy) {
		fd = seg_fill_attach(*segp, e);
		if (fd < 0) {
			xip_seg_close(*segp);
			*segp = NULL;
		}
	}
	free(e);
	return fd;
}

int xip_registry_hold_seg(struct xip_seg *seg)
{
	char lock[XIP_PATH_MAX];
	struct stat st;
	bool none;
	int fd;

	if (seg->lock_fd >= 0)
		return 0;
	if (fstat(seg->fd, &st) < 0)
		return xip_error(-errno, "%s: %s", seg->path, strerror(errno));
	fd = xip_registry_hold_open_plain(&st, &none, lock);
	if (none)
		return 0;
	if (fd < 0)
		return fd;
	seg->lock_path = strdup(lock);
	if (!seg->lock_path) {
		close(fd);
		return xip_error(-ENOMEM, "out of memory");
	}
	seg->lock_fd = fd;
	return 0;
}

/*
 * The lock file of the file @st opened by path for reading, its name in
 * @name (XIP_PATH_MAX bytes): as xip_registry_hold_open_plain(), in fewer system calls
 * (exec): the run directory checked with lstat, as the open of a checked
 * descriptor would be (both check its last component), then the lock file
 * opened by its path; the directory is made (and checked) only where it
 * is missing.
 */
static int hold_open_read(const struct stat *st, bool *none, char *name)
{
	struct stat dst;
	int ret;

	*none = xip_registry_rundir_path(name, XIP_PATH_MAX, xip_registry_euid()) == -ENOENT;
	if (*none) {
		xip_error_clear();
		return -ENOENT;
	}
	if (lstat(name, &dst) < 0)
		return xip_registry_hold_open_plain(st, none, name);
	ret = xip_registry_rundir_refuse(name, &dst, xip_registry_euid());
	return ret ? ret : xip_registry_hold_open_path((uint64_t)st->st_dev,
					  (uint64_t)st->st_ino, false, name);
}

/* open_plain() of a reader: the file first, its fstat names the lock */
static int open_plain_read(const char *path, int flags, struct xip_seg **segp)
{
	char lock[XIP_PATH_MAX];
	struct stat st;
	int fd, lockfd, ret;
	bool none;

	fd = xip_seg_open_path(path, flags);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		close(fd);
		return xip_error(ret, "%s: %s", path, strerror(-ret));
	}
	lockfd = hold_open_read(&st, &none, lock);
	if (!none && lockfd < 0) {
		close(fd);
		return lockfd;
	}
	ret = xip_seg_adopt_stat(fd, &st, none ? -1 : lockfd, path, NULL,
				 XIP_SEGTYPE_NONE, flags & ~XIP_SEG_SHARED,
				 segp);
	if (!ret && !none && !((*segp)->lock_path = strdup(lock))) {
		xip_seg_close(*segp);
		*segp = NULL;
		ret = xip_error(-ENOMEM, "out of memory");
	}
	return ret;
}

/*
 * A segment named by path, its holder lock in the caller's run directory
 * by the file's identity (see "holder locks"); without a run directory,
 * the file's own (xip_seg_open).
 */
static int open_plain(const char *path, int flags, struct xip_seg **segp)
{
	char lock[XIP_PATH_MAX];
	struct stat st, now;
	int lockfd, ret;
	bool none;

	if (path && *path && !(flags & XIP_SEG_WRITE))
		return open_plain_read(path, flags, segp);
	/* the file that open will find names the lock; open says why not */
	if (!path || !*path || stat(path, &st) < 0)
		return xip_seg_open(path, flags, segp);
	lockfd = xip_registry_hold_open_plain(&st, &none, lock);
	if (none)		/* no run directory: the file's own lock */
		return xip_seg_open(path, flags, segp);
	if (lockfd < 0)
		return lockfd;
	if (flags & XIP_SEG_WRITE) {
		ret = xip_seg_lockfile_take(&lockfd, lock, LOCK_EX,
					    XIP_LOCK_WAIT_MS);
		if (ret) {
			close(lockfd);
			return ret == -EWOULDBLOCK ?
			       xip_error(-EBUSY, "%s: busy: another xiptool holds it open",
					 path) :
			       xip_error(ret, "%s: lock: %s", path,
					 strerror(-ret));
		}
		flags |= XIP_SEG_HELD_EX;
	}
	ret = xip_seg_open_locked(path, flags, lockfd, lock, segp);
	if (ret)
		return ret;
	/* replaced between the stat and the open: another file's lock */
	if (fstat((*segp)->fd, &now) < 0 || now.st_dev != st.st_dev ||
	    now.st_ino != st.st_ino) {
		xip_seg_close(*segp);
		*segp = NULL;
		return xip_error(-EAGAIN, "%s: replaced while it was being opened",
				 path);
	}
	return 0;
}

int xip_spec_open(const char *spec, int flags, struct xip_seg **segp)
{
	*segp = NULL;
	if (spec && spec[0] == '@')
		return open_attached(spec + 1, flags, segp);
	return open_plain(spec, flags, segp);
}
