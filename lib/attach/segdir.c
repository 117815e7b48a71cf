// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Where segment files live: root's own tmpfs (a huge-page one for
 * --hugepages where the kernel has it), /dev/shm, hugetlbfs; the
 * directory opened without following a link, and a file name nobody can
 * take first.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "attach/xip_attach.h"
#include "attach/attach_int.h"
#include "util/xip_debug.h"
#include "util/xip_error.h"
#include "util/xip_util.h"
#include "segment/xip_segment.h"
#include "registry/xip_registry.h"

#define SHM_DIR		"/dev/shm"

/* ---- where segments live ---------------------------------------------- */

struct mount_query {
	char *buf;
	size_t len;
};

static int match_hugetlbfs(const struct xip_mount *m, void *arg)
{
	struct mount_query *q = arg;

	if (strcmp(m->type, "hugetlbfs"))
		return 0;
	snprintf(q->buf, q->len, "%s", m->point);
	return 1;
}

static int hugetlbfs_dir(char *buf, size_t len)
{
	const char *env = getenv("XIPTOOL_HUGETLBFS");
	struct mount_query q = { buf, len };
	int ret;

	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return 0;
	}
	ret = xip_mounts_each(NULL, match_hugetlbfs, &q);
	if (ret == -ENOSYS)
		return ret;	/* libmount cannot be loaded: said */
	if (ret < 0)
		return xip_error(ret, "/proc/self/mountinfo: %s",
				 strerror(-ret));
	if (!ret)
		return xip_error_reason(-ENOENT, XIP_R_NO_HUGETLBFS,
					"no hugetlbfs is mounted");
	return 0;
}

/*
 * Mount a tmpfs with transparent huge pages (huge=within_size: a segment
 * is sized before it is filled, so every whole 2 MiB of it is one huge
 * page) at @dir beside the run directory @run, as large as /dev/shm,
 * unless a tmpfs is mounted there already.  Root's, writable by nobody
 * else (others read segments there as their modes allow, as in /dev/shm,
 * but plant nothing); whatever else is found there is not used.  exec maps a program's 2 MiB-congruent ranges from it with 2
 * MiB entries (/dev/shm has none when shmem_enabled is never).
 */
static int huge_tmpfs_mount(const char *run, const char *dir)
{
	struct stat st, parent;
	struct statfs sfs;
	char opts[128];
	uint64_t size = 0;
	int fd;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || stat(run, &parent) < 0 ||
	    fstatfs(fd, &sfs) < 0) {
		close(fd);
		return -errno;
	}
	close(fd);
	if (st.st_uid != 0 || (st.st_mode & 0022))
		return -EPERM;
	if (st.st_dev != parent.st_dev)	/* mounted already */
		return sfs.f_type == TMPFS_MAGIC ? 0 : -ENOTDIR;
	if (statfs(SHM_DIR, &sfs) == 0 && sfs.f_blocks)
		size = (uint64_t)sfs.f_blocks * (uint64_t)sfs.f_bsize;
	if (size)
		snprintf(opts, sizeof(opts),
			 "huge=within_size,mode=0755,size=%" PRIu64, size);
	else
		snprintf(opts, sizeof(opts), "huge=within_size,mode=0755");
	if (mount("xiptool", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return -errno;
	return 0;
}

/*
 * Root's segments live on a tmpfs with huge pages that xiptool mounts
 * beside its run directory (/run/xiptool.shm); when that cannot be (no
 * THP, no mount permission, another user's directory there), and for
 * other users, in /dev/shm.
 */
static int default_segment_dir(char *buf, size_t len)
{
	char run[XIP_PATH_MAX];
	int ret, n;

	snprintf(buf, len, "%s", SHM_DIR);
	if (geteuid() != 0 || xip_registry_dir(run, sizeof(run)))
		goto shm;
	n = snprintf(buf, len, "%s.shm", run);
	if (n < 0 || (size_t)n >= len)
		goto shm;
	ret = xip_registry_lock();
	if (ret)
		goto shm;
	ret = huge_tmpfs_mount(run, buf);
	xip_registry_unlock();
	if (!ret)
		return 0;
	XIP_DBG(SEGMENT, "%s: no tmpfs with huge pages there (%s): segments"
		" go to %s", buf, strerror(-ret), SHM_DIR);
shm:
	xip_error_clear();
	snprintf(buf, len, "%s", SHM_DIR);
	return 0;
}

/*
 * Under the registry lock, just before the segment file is created: when
 * @dir is the tmpfs with huge pages beside the run directory, make sure it
 * is (still) mounted.  The detach of the last segment on it unmounts it,
 * and that detach may have run since default_segment_dir() chose it.
 */
int xip_attach_huge_tmpfs_again(const char *dir)
{
	char run[XIP_PATH_MAX], shm[XIP_PATH_MAX];
	int ret, n;

	if (geteuid() != 0 || xip_registry_dir(run, sizeof(run)))
		return 0;
	n = snprintf(shm, sizeof(shm), "%s.shm", run);
	if (n < 0 || (size_t)n >= sizeof(shm) || strcmp(shm, dir))
		return 0;
	ret = huge_tmpfs_mount(run, dir);
	if (ret)
		return xip_error(ret, "%s: the tmpfs with huge pages for segments cannot be mounted again: %s",
				 dir, strerror(-ret));
	return 0;
}

int xip_attach_segment_dir(bool huge, char *buf, size_t len)
{
	const char *env = getenv("XIPTOOL_SHMDIR");

	if (huge)
		return hugetlbfs_dir(buf, len);
	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return 0;
	}
	return default_segment_dir(buf, len);
}

/*
 * The directory of segment files, opened: root's or the caller's, and
 * sticky when others may write to it (as /dev/shm is), so that nobody
 * else removes or renames what is created there.
 */
int xip_attach_segdir_open(const char *dir)
{
	struct stat st;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return xip_error(-errno, "%s: %s", dir, strerror(errno));
	if (fstat(fd, &st) < 0) {
		close(fd);
		return xip_error(-errno, "%s: %s", dir, strerror(errno));
	}
	if ((st.st_uid != 0 && st.st_uid != geteuid()) ||
	    ((st.st_mode & 0022) && !(st.st_mode & S_ISVTX))) {
		close(fd);
		return xip_error(-EPERM,
				 "%s: segment directory must belong to root or uid %u and be sticky when others may write to it",
				 dir, (unsigned int)geteuid());
	}
	return fd;
}

/*
 * A file name for the segment @name that nobody can take first, as the
 * directory is shared: xiptool-NAME. for root, xiptool-UID:NAME. for
 * other users, then 64 random bits.  Every use finds the file through
 * its record, never by guessing its name.
 */
int xip_attach_segfile_name(const char *name, char *buf, size_t len)
{
	uint64_t r;
	int n;

	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return xip_error(-errno, "getrandom: %s", strerror(errno));
	if (geteuid() == 0)
		n = snprintf(buf, len, "xiptool-%s.%016" PRIx64, name, r);
	else
		n = snprintf(buf, len, "xiptool-%u:%s.%016" PRIx64,
			     (unsigned int)geteuid(), name, r);
	if (n < 0 || (size_t)n >= len)
		return xip_error(-ENAMETOOLONG, "%s: name too long", name);
	return 0;
}
