// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mkfs: the output.  An image file is built in a new, private file in the
 * target's directory (O_TMPFILE, or a name made with O_CREAT | O_EXCL |
 * O_NOFOLLOW and mode 0600) and, once complete and on disk, linked or
 * renamed over the target, so that a failure or a kill leaves the old
 * file as it was and no half-made image.  Nothing is written through a
 * symlink or into a file another user planted in a shared directory.  A
 * block device or an attached segment cannot be renamed into: those are
 * written in place, a device opened O_EXCL (not mounted, not in use), a
 * segment only while no program holds it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "mkfs/xip_mkfs.h"
#include "mkfs/mkfs_int.h"
#include "util/xip_error.h"
#include "util/xip_util.h"
#include "segment/xip_loop.h"
#include "segment/xip_segment.h"
#include "registry/xip_registry.h"

/* ---- the named temporary file, for a signal handler ------------------- */

static volatile sig_atomic_t sig_armed;
static int sig_dirfd = -1;
static char sig_name[NAME_MAX + 1];

void xip_build_signal_cleanup(void)
{
	if (sig_armed) {
		sig_armed = 0;
		unlinkat(sig_dirfd, sig_name, 0);
	}
}

static void sig_arm(int dirfd, const char *name)
{
	sig_armed = 0;
	sig_dirfd = dirfd;
	snprintf(sig_name, sizeof(sig_name), "%s", name);
	sig_armed = 1;
}

/* ---- names --------------------------------------------------------------- */

int xip_build_split_target(const char *spec, char **dir, char **base)
{
	const char *slash = strrchr(spec, '/'), *b = slash ? slash + 1 : spec;
	size_t dlen = slash ? (size_t)(slash - spec) : 0;

	*dir = *base = NULL;
	if (!*b || !strcmp(b, ".") || !strcmp(b, ".."))
		return -EISDIR;
	*dir = slash ? strndup(spec, dlen ? dlen : 1) : strdup(".");
	*base = strdup(b);
	if (!*dir || !*base) {
		free(*dir);
		free(*base);
		*dir = *base = NULL;
		return -ENOMEM;
	}
	return 0;
}

int xip_build_temp_name(const char *base, char *buf, size_t len)
{
	return xip_temp_name(base, buf, len);
}

/* ---- probing: what the target is, and may we write it ------------------ */

static int changed(const struct btarget *tg)
{
	return xip_error(-ESTALE, "%s: changed while mkfs was checking it",
			 tg->spec);
}

static int probe_segment(struct btarget *tg, const char *name,
			 bool by_path)
{
	struct xip_seg_entry e;
	char why[256] = "", spec[XIP_SEG_NAME_MAX + 2];
	struct stat st;
	int ret;

	snprintf(spec, sizeof(spec), "@%s", name);
	ret = xip_registry_get(name, &e);
	if (ret)
		return ret;
	ret = xip_registry_busy(&e, why, sizeof(why));
	if (ret < 0)
		return ret;
	if (ret > 0)
		return by_path ?
		       xip_error(-EBUSY, "%s: busy: attached segment %s: %s",
				 tg->spec, spec, why) :
		       xip_error(-EBUSY, "%s: busy: %s", tg->spec, why);
	ret = xip_spec_open(spec, XIP_SEG_WRITE, &tg->seg);
	if (!ret)
		ret = xip_seg_lock(tg->seg, true, 1000);
	if (ret)
		return ret;
	if (by_path && (fstat(tg->seg->fd, &st) < 0 ||
			st.st_dev != tg->dev || st.st_ino != tg->ino))
		return changed(tg);
	tg->fixed = tg->seg->size;
	return 0;
}

/*
 * The name of the attached segment whose file is @st (a file on tmpfs or
 * hugetlbfs), into @name; 0 when it is none.
 */
static int find_segment(int fd, const struct stat *st, char *name,
			size_t len)
{
	struct xip_seg_entry *all;
	struct statfs sfs;
	struct stat s;
	size_t n;
	int found = 0;

	if (fstatfs(fd, &sfs) < 0 || (sfs.f_type != TMPFS_MAGIC &&
				      sfs.f_type != HUGETLBFS_MAGIC))
		return 0;
	if (xip_registry_list(&all, &n)) {
		xip_error_clear();
		return 0;
	}
	for (size_t i = 0; i < n && !found; i++) {
		if (stat(all[i].path, &s) == 0 && s.st_dev == st->st_dev &&
		    s.st_ino == st->st_ino) {
			snprintf(name, len, "%s", all[i].name);
			found = 1;
		}
	}
	free(all);
	return found;
}

static int probe_blockdev(struct btarget *tg, int dirfd, const char *path,
			  const struct stat *st, const struct xip_build_opts *o)
{
	struct stat now;
	uint64_t bytes;

	tg->blockdev = true;
	tg->fd = openat(dirfd, path, O_RDWR | O_CLOEXEC | O_NOFOLLOW |
			(o->force ? 0 : O_EXCL));
	if (tg->fd < 0 && errno == EBUSY)
		return xip_error(-EBUSY,
				 "%s: device is mounted or in use (use --force to overwrite it)",
				 tg->spec);
	if (tg->fd < 0)
		return xip_error(-errno, "%s: %s", tg->spec, strerror(errno));
	if (fstat(tg->fd, &now) < 0 || !S_ISBLK(now.st_mode) ||
	    now.st_rdev != st->st_rdev)
		return changed(tg);
	if (ioctl(tg->fd, BLKGETSIZE64, &bytes) < 0)
		return xip_error(-errno, "%s: cannot get device size: %s",
				 tg->spec, strerror(errno));
	tg->fixed = bytes;
	return 0;
}

/*
 * A symlink is followed only to a block device, and only when root or
 * the caller made it (udev's /dev/disk/by-* links): another user's link
 * is refused whatever it points to.
 */
static int probe_symlink(struct btarget *tg, const struct stat *lst,
			 const struct xip_build_opts *o)
{
	char *real;
	struct stat st;
	int ret;

	if ((lst->st_uid == 0 || lst->st_uid == geteuid()) &&
	    stat(tg->spec, &st) == 0 && S_ISBLK(st.st_mode)) {
		real = realpath(tg->spec, NULL);
		if (!real)
			return xip_error(-errno, "%s: %s", tg->spec,
					 strerror(errno));
		ret = probe_blockdev(tg, AT_FDCWD, real, &st, o);
		free(real);
		return ret;
	}
	return xip_error(-ELOOP,
			 "%s: is a symbolic link; refusing to write through it",
			 tg->spec);
}

static int probe_file(struct btarget *tg, const struct stat *st,
		      const struct xip_build_opts *o)
{
	char name[XIP_SEG_NAME_MAX + 1];
	struct stat now;
	int fd;

	tg->exists = true;
	tg->dev = st->st_dev;
	tg->ino = st->st_ino;
	if (st->st_uid != geteuid() && xip_shared_dir(tg->dirfd))
		return xip_error(-EPERM,
				 "%s: owned by another user (uid %u) in a shared directory; refusing to replace it",
				 tg->spec, (unsigned int)st->st_uid);
	/* the permission to write it, checked before anything changes */
	fd = openat(tg->dirfd, tg->base, O_RDWR | O_NOFOLLOW | O_NONBLOCK |
		    O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return xip_error(-errno, "%s: %s", tg->spec, strerror(errno));
	if (fstat(fd, &now) < 0 || now.st_dev != st->st_dev ||
	    now.st_ino != st->st_ino) {
		close(fd);
		return changed(tg);
	}
	if (st->st_size > 0 && !o->force) {
		close(fd);
		return xip_error(-EEXIST,
				 "%s: exists and is not empty (use --force to overwrite it)",
				 tg->spec);
	}
	if (find_segment(fd, &now, name, sizeof(name))) {
		close(fd);
		return probe_segment(tg, name, true);
	}
	/* the kernel has it mounted through a loop device: not behind its back */
	{
		int *claims, ret;
		size_t n;

		ret = xip_loop_claim_backing(fd, tg->spec, &claims, &n);
		if (ret) {
			close(fd);
			return ret;
		}
		xip_loop_release_claims(claims, n);
	}
	close(fd);
	tg->file = true;
	tg->replace = true;
	tg->old = *st;
	return 0;
}

static int open_dir(struct btarget *tg, const char *dir)
{
	tg->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tg->dirfd < 0 && errno == EACCES)
		tg->dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (tg->dirfd < 0)	/* named as given: "x/img: No such file..." */
		return xip_error(-errno, "%s: %s", tg->spec, strerror(errno));
	return 0;
}

int xip_target_probe(struct btarget *tg, const struct xip_build_opts *o)
{
	struct stat st;
	char *dir;
	int ret;

	tg->fd = tg->dirfd = -1;
	tg->named_temp = xip_build_hook_named_temp();
	if (tg->spec[0] == '@')
		return probe_segment(tg, tg->spec + 1, false);
	ret = xip_build_split_target(tg->spec, &dir, &tg->base);
	if (ret == -EISDIR)
		return xip_error(-ENODEV,
				 "%s: not a regular file or block device",
				 tg->spec);
	if (ret)
		return ret;
	ret = open_dir(tg, dir);
	free(dir);
	if (ret)
		return ret;
	if (fstatat(tg->dirfd, tg->base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			return xip_error(-errno, "%s: %s", tg->spec,
					 strerror(errno));
		tg->file = true;
		return 0;
	}
	if (S_ISLNK(st.st_mode))
		return probe_symlink(tg, &st, o);
	if (S_ISREG(st.st_mode))
		return probe_file(tg, &st, o);
	if (S_ISBLK(st.st_mode))
		return probe_blockdev(tg, tg->dirfd, tg->base, &st, o);
	return xip_error(-ENODEV, "%s: not a regular file or block device",
			 tg->spec);
}

/* ---- writing ------------------------------------------------------------- */

/*
 * Zero the part of a device or segment the image will cover, at the cost
 * of a hole punched or the device's own zeroing, never a write of every
 * byte through the mapping.
 */
static int zero_segment(struct xip_seg *seg, uint64_t len)
{
	int ret = xip_build_zero(seg, 0, len);

	if (ret == -ERANGE)
		return xip_error(ret, "%s: smaller than the image", seg->path);
	if (ret)
		return xip_error(ret, "%s: cannot zero it: %s", seg->path,
				 strerror(-ret));
	return 0;
}

/* A new private file in the target's directory: unnamed when possible. */
static int temp_create(struct btarget *tg)
{
	char name[NAME_MAX + 1];
	int ret;

	if (!tg->named_temp) {
		tg->fd = openat(tg->dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC,
				0600);
		if (tg->fd >= 0)
			return 0;
		if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
			return xip_error(-errno,
					 "%s: cannot create the image: %s",
					 tg->spec, strerror(errno));
	}
	for (int tries = 0; tries < 100; tries++) {
		ret = xip_build_temp_name(tg->base, name, sizeof(name));
		if (ret)
			return xip_error(ret, "%s: %s", tg->spec,
					 strerror(-ret));
		tg->fd = openat(tg->dirfd, name, O_RDWR | O_CREAT | O_EXCL |
				O_NOFOLLOW | O_CLOEXEC, 0600);
		if (tg->fd >= 0) {
			tg->tmpname = strdup(name);
			sig_arm(tg->dirfd, name);
			if (!tg->tmpname)
				return -ENOMEM;
			return 0;
		}
		if (errno != EEXIST)
			break;
	}
	return xip_error(-errno, "%s: cannot create the image: %s", tg->spec,
			 strerror(errno));
}

int xip_target_open(struct btarget *tg, uint64_t bytes)
{
	int ret;

	tg->touched = true;
	if (tg->file) {
		ret = temp_create(tg);
		if (ret)
			return ret;
		if (ftruncate(tg->fd, (off_t)bytes) < 0)
			return xip_error(-errno, "%s: %s", tg->spec,
					 strerror(errno));
		/* a new file is all holes: nothing to zero */
		return xip_seg_open_fd(tg->fd, tg->spec, XIP_SEG_WRITE,
					   &tg->seg);
	}
	if (!tg->seg) {
		ret = xip_seg_open_fd(tg->fd, tg->spec, XIP_SEG_WRITE,
					  &tg->seg);
		/* the holder lock readers of its path take */
		if (!ret)
			ret = xip_registry_hold_seg(tg->seg);
		if (!ret)
			ret = xip_seg_lock(tg->seg, true, 5000);
		if (ret)
			return ret;
	}
	return zero_segment(tg->seg, bytes);
}

/* The final mode: the replaced file's, else 0666 less the umask. */
static int temp_finish(struct btarget *tg)
{
	mode_t mode, mask;
	struct stat st;

	if (tg->replace) {
		mode = tg->old.st_mode & 0777;
		if (fstat(tg->fd, &st) == 0 && (st.st_uid != tg->old.st_uid ||
						 st.st_gid != tg->old.st_gid) &&
		    fchown(tg->fd, tg->old.st_uid, tg->old.st_gid) < 0 &&
		    errno != EPERM)
			return xip_error(-errno, "%s: %s", tg->spec,
					 strerror(errno));
	} else {
		mask = umask(077);
		umask(mask);
		mode = 0666 & ~mask;
	}
	if (fchmod(tg->fd, mode) < 0 || fsync(tg->fd) < 0)
		return xip_error(-errno, "%s: %s", tg->spec, strerror(errno));
	return 0;
}

/*
 * Is the target still what was probed: absent (0), the same file (1),
 * or something else (-ESTALE)?
 */
static int target_still(struct btarget *tg)
{
	struct stat st;

	if (fstatat(tg->dirfd, tg->base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT && !tg->replace ? 0 : changed(tg);
	if (!tg->replace || !S_ISREG(st.st_mode) || st.st_dev != tg->dev ||
	    st.st_ino != tg->ino)
		return changed(tg);
	return 1;
}

/* Put the complete image in place: link it (new) or rename it over. */
static int target_link(struct btarget *tg)
{
	char name[NAME_MAX + 1];
	int ret = target_still(tg);

	if (ret < 0)
		return ret;
	if (!tg->replace) {
		ret = tg->tmpname ? (linkat(tg->dirfd, tg->tmpname, tg->dirfd,
					    tg->base, 0) ? -errno : 0) :
		      xip_link_unnamed(tg->fd, tg->dirfd, tg->base);
		if (ret == -EEXIST)
			return xip_error(ret, "%s: made by someone else while mkfs ran; left alone",
					 tg->spec);
		if (ret)
			return xip_error(ret, "%s: %s", tg->spec,
					 strerror(-ret));
		if (tg->tmpname)
			unlinkat(tg->dirfd, tg->tmpname, 0);
		return 0;
	}
	if (!tg->tmpname) {
		ret = xip_build_temp_name(tg->base, name, sizeof(name));
		if (!ret)
			ret = xip_link_unnamed(tg->fd, tg->dirfd, name);
		if (ret)
			return xip_error(ret, "%s: %s", tg->spec,
					 strerror(-ret));
		tg->tmpname = strdup(name);
		if (!tg->tmpname) {
			unlinkat(tg->dirfd, name, 0);
			return -ENOMEM;
		}
	}
	if (renameat(tg->dirfd, tg->tmpname, tg->dirfd, tg->base) < 0)
		return xip_error(-errno, "%s: %s", tg->spec, strerror(errno));
	free(tg->tmpname);
	tg->tmpname = NULL;
	return 0;
}

int xip_target_commit(struct btarget *tg)
{
	int ret;

	if (!tg->file)
		return 0;
	ret = temp_finish(tg);
	if (!ret)
		ret = target_link(tg);
	if (ret)
		return ret;
	sig_armed = 0;
	/* the new name on disk too (an O_PATH directory cannot be synced) */
	if (fsync(tg->dirfd) < 0 && errno != EBADF && errno != EINVAL)
		return xip_error(-errno, "%s: %s", tg->spec, strerror(errno));
	return 0;
}

/* Leave nothing half-made behind. */
void xip_target_abort(struct btarget *tg)
{
	if (!tg->touched)
		return;
	if (tg->file) {
		if (tg->tmpname)
			unlinkat(tg->dirfd, tg->tmpname, 0);
		sig_armed = 0;
	} else if (tg->seg && xip_build_zero(tg->seg, 0,
					     tg->seg->size < 65536 ?
					     tg->seg->size : 65536) == 0) {
		xip_seg_sync(tg->seg);
	}
}

void xip_target_close(struct btarget *tg)
{
	sig_armed = 0;
	xip_seg_close(tg->seg);
	tg->seg = NULL;
	if (tg->fd >= 0)
		close(tg->fd);
	tg->fd = -1;
	if (tg->dirfd >= 0)
		close(tg->dirfd);
	tg->dirfd = -1;
	free(tg->base);
	free(tg->tmpname);
	tg->base = tg->tmpname = NULL;
}
