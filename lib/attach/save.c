// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Saving an attached segment to a file: under the segment's shared lock
 * (writers finished, a detach refused meanwhile), copied a chunk at a
 * time into a temporary file next to the destination, zero blocks left
 * as holes, given the image's owner and no wider permissions, then
 * renamed into place: an output file (util/outfile.c), so a symbolic link
 * there or another user's file in a shared sticky directory is refused,
 * and a failure leaves the old file as it was.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "attach/xip_attach.h"
#include "attach/attach_int.h"
#include "util/xip_error.h"
#include "util/xip_util.h"
#include "segment/xip_kcopy.h"
#include "segment/xip_loop.h"
#include "segment/xip_segment.h"
#include "registry/xip_registry.h"

#define SAVE_LOCK_MS	5000
/* ---- save ---------------------------------------------------------------- */

static bool all_zero(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && !memcmp(p, p + 1, n - 1));
}

/* Write @n bytes of @data at @off of @fd, leaving zero blocks as holes. */
static int put_sparse(int fd, const uint8_t *data, size_t n, uint64_t off,
		      const char *path)
{
	const size_t blk = 4096;

	for (size_t i = 0, j; i < n; i = j) {
		size_t k = n - i < blk ? n - i : blk;

		j = i + k;
		if (all_zero(data + i, k))
			continue;
		/* one write for the whole run of non-zero blocks */
		while (j < n) {
			k = n - j < blk ? n - j : blk;
			if (all_zero(data + j, k))
				break;
			j += k;
		}
		int ret = xip_pwrite_all(fd, data + i, j - i, off + i);

		if (ret)
			return xip_error(ret, "%s: %s", path, strerror(-ret));
	}
	return 0;
}

/*
 * Copy the segment to @fd, zero blocks left as holes: read through the
 * segment's file a chunk at a time (pread; no page-table entry per page),
 * through its mapping where the file cannot be read (device DAX).
 */
static int write_sparse(int fd, struct xip_seg *seg, uint64_t size,
			const char *path)
{
	const size_t chunk = 1u << 20;
	uint8_t *buf = NULL;
	int ret = 0;

	if (seg->kind != XIP_SEG_DAX && !(buf = malloc(chunk)))
		return xip_error(-ENOMEM, "out of memory");
	for (uint64_t off = 0; !ret && off < size;) {
		size_t n = size - off < chunk ? (size_t)(size - off) : chunk;
		const uint8_t *data = seg->base + off;
		ssize_t r = buf ? xip_pread_full(seg->fd, buf, n, off) :
				  (ssize_t)n;

		if (buf && off == 0 && (r == -EINVAL || r == -ENODEV)) {
			free(buf);	/* not readable: the mapping */
			buf = NULL;
			continue;
		}
		if (r < 0) {
			ret = xip_error((int)r, "%s: %s", seg->path,
					strerror((int)-r));
			break;
		}
		if ((size_t)r < n) {
			ret = xip_error(-EIO, "%s: shrank while being saved",
					seg->path);
			break;
		}
		ret = put_sparse(fd, buf ? buf : data, (size_t)r, off, path);
		off += (uint64_t)r;
	}
	free(buf);
	if (!ret && (ftruncate(fd, (off_t)size) < 0 || fsync(fd) < 0))
		ret = xip_error(-errno, "%s: %s", path, strerror(errno));
	return ret;
}

/*
 * Wait for writers to finish: the shared holder lock (the segment's lock
 * file, opened into *@lfd).  Then the segment file @fd must still be
 * attached: a detach that came first unlinked it; one that comes later
 * sees the lock and refuses.
 */
static int lock_shared(int fd, const struct xip_seg_entry *e, int *lfd)
{
	struct stat st;
	char why[256];
	int ret;

	*lfd = xip_registry_hold_open(e, false);
	if (*lfd < 0)
		return *lfd;
	ret = xip_seg_flock_wait(*lfd, LOCK_SH, SAVE_LOCK_MS);
	if (ret == -EWOULDBLOCK) {
		xip_registry_holder(*lfd, why, sizeof(why));
		return xip_error(-EBUSY, "%s: busy: %s", e->name, why);
	}
	if (ret)
		return xip_error(ret, "%s: lock: %s", e->path, strerror(-ret));
	if (fstat(fd, &st) == 0 && st.st_nlink == 0)
		return xip_error(-ENOENT,
				 "@%s: no attached segment of that name (detached)",
				 e->name);
	return 0;
}

/* The kernel may hold writes to the loop device in its cache. */
static void flush_loop(const struct xip_seg_entry *e)
{
	int fd;

	if (!e->loop[0] || xip_loop_read_only(e->loop) != 0)
		return;
	fd = open(e->loop, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	xip_error_clear();
}

/*
 * The saved file is never more open than the image was, nor than the
 * file it replaces: the image's permission bits (recorded at attach),
 * without those of the replaced file, and for a new file without the
 * umask's.  It belongs to the image's owner and group when the caller
 * can give it away (root); a group it cannot take loses its bits.  With
 * no image file (sn, en, NBD), the segment file's bits and the caller.
 */
static int save_own(struct xip_outfile *of, const struct xip_seg_entry *e,
		    int sfd, const struct stat *old, const char *dest)
{
	int fd = of->fd;
	mode_t mask = umask(0), mode;
	gid_t gid = (gid_t)-1;
	struct stat st;

	umask(mask);
	if (e->image_mode) {
		mode = e->image_mode & 0666;
		gid = e->image_gid;
	} else if (fstat(sfd, &st) == 0) {
		mode = 0600 | (st.st_mode & 0044);
		gid = st.st_gid;
	} else {
		mode = 0600;
	}
	mode &= old->st_mode ? old->st_mode : ~mask;
	if (geteuid() == 0 && e->image_mode &&
	    fchown(fd, e->image_uid, e->image_gid) < 0)
		return xip_error(-errno, "%s: %s", dest, strerror(errno));
	if (gid != (gid_t)-1 && (fchown(fd, (uid_t)-1, gid) < 0 ||
				 fstat(fd, &st) < 0 || st.st_gid != gid))
		mode &= ~(mode_t)0070;
	/* the commit gives it this mode, and keeps the owner given here */
	of->mode = mode;
	of->keep_owner = false;
	return 0;
}

static int save_data(const struct xip_seg_entry *e, int sfd, const char *dest)
{
	struct xip_outfile of;
	struct xip_seg *seg;
	struct stat none = { 0 };
	void *map;
	int ret;

	ret = xip_seg_open_fd(sfd, e->path, 0, &seg);
	if (ret)
		return ret;
	if (xip_seg_range(seg, 0, e->size, &map)) {
		xip_seg_close(seg);
		return xip_error(-EIO, "%s: segment file shorter than recorded",
				 e->path);
	}
	ret = xip_outfile_open(&of, dest, XIP_OUTFILE_REGULAR);
	if (ret) {
		xip_seg_close(seg);
		return ret;
	}
	ret = write_sparse(of.fd, seg, e->size, dest);
	if (!ret)
		ret = save_own(&of, e, sfd, of.replace ? &of.old : &none, dest);
	if (!ret)
		ret = xip_outfile_commit(&of);
	else
		xip_outfile_abort(&of);
	xip_seg_close(seg);
	return ret;
}

/*
 * Save through @locked (the segment file's descriptor, its holder lock
 * held by the caller), or open and lock here.
 */
int xip_attach_save_entry(const struct xip_seg_entry *e, const char *dest,
			  int locked)
{
	int fd = locked, lfd = -1, ret = xip_attach_lazy_wait(e);

	if (ret)
		return ret;
	if (fd < 0) {
		fd = xip_registry_open_entry(e, O_RDONLY);
		if (fd < 0)
			return fd;
		ret = lock_shared(fd, e, &lfd);
	}
	flush_loop(e);
	if (!ret)
		ret = save_data(e, fd, dest);
	if (fd != locked)
		close(fd);
	if (lfd >= 0)
		close(lfd);
	return ret;
}

/*
 * Save takes no registry lock: it holds the segment's shared holder lock
 * while it copies, which a detach respects (it refuses a held segment),
 * and checks after taking it that the segment is still attached.
 */
int xip_save(const char *what, const char *dest)
{
	struct xip_seg_entry *e = malloc(sizeof(*e));
	int ret;

	if (!e)
		return xip_error(-ENOMEM, "out of memory");
	ret = xip_registry_find(what, e);
	if (!ret)
		ret = xip_attach_save_entry(e, dest, -1);
	free(e);
	return ret;
}
