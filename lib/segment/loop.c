// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Kernel loop devices over segment files, so that the kernel itself can
 * mount a segment.  A free device is asked of /dev/loop-control and bound
 * in one step with LOOP_CONFIGURE; kernels without it get LOOP_SET_FD and
 * LOOP_SET_STATUS64.  Another process may take the same free device
 * between the two calls: the bind then fails with EBUSY and we ask again.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "segment/xip_loop.h"
#include "segment/xip_segment.h"
#include "segment/segment_int.h"
#include "util/xip_debug.h"
#include "util/xip_error.h"
#include "util/xip_util.h"

#define LOOP_CONTROL	"/dev/loop-control"
#define LOOP_TRIES	16		/* devices taken by others */
#define OPEN_TRIES	16		/* device node not there yet */
#define RETRY_MS	25

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* "/dev/loop3" -> "/sys/block/loop3/<what>" */
static int loop_sysfs(const char *dev, const char *what, char *buf,
		      size_t len)
{
	const char *base = strrchr(dev, '/');

	base = base ? base + 1 : dev;
	if (strncmp(base, "loop", 4) || strchr(base, '.'))
		return -EINVAL;
	if ((size_t)snprintf(buf, len, "/sys/block/%s/%s", base, what) >= len)
		return -ENAMETOOLONG;
	return 0;
}

static int sysfs_read(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

int xip_loop_backing_file(const char *dev, char *buf, size_t len)
{
	char path[256];
	int ret = loop_sysfs(dev, "loop/backing_file", path, sizeof(path));

	if (ret)
		return xip_error(ret, "%s: not a loop device", dev);
	ret = sysfs_read(path, buf, len);
	if (ret == -ENOENT)
		return xip_error(-ENXIO, "%s: loop device not bound", dev);
	if (ret)
		return xip_error(ret, "%s: %s", path, strerror(-ret));
	return 0;
}

int xip_loop_read_only(const char *dev)
{
	char path[256], val[16];
	int ret = loop_sysfs(dev, "ro", path, sizeof(path));

	if (!ret)
		ret = sysfs_read(path, val, sizeof(val));
	if (ret)
		return xip_error(ret, "%s: %s", dev, strerror(-ret));
	return val[0] == '1';
}

static int first_holder(const char *dev, char *name, size_t len)
{
	char path[256];
	struct dirent *de;
	int found = 0;
	DIR *d;

	if (loop_sysfs(dev, "holders", path, sizeof(path)))
		return 0;
	d = opendir(path);
	if (!d)
		return 0;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(name, len, "%s", de->d_name);
		found = 1;
	}
	closedir(d);
	return found;
}

int xip_loop_busy(const char *dev, char *why, size_t len)
{
	char where[4096];
	struct stat st;
	int fd;

	if (stat(dev, &st) < 0)
		return xip_error(-errno, "%s: %s", dev, strerror(errno));
	if (!S_ISBLK(st.st_mode))
		return xip_error(-ENOTBLK, "%s: not a block device", dev);
	if (xip_mount_point(NULL, st.st_rdev, false, where,
			    sizeof(where)) == 1) {
		snprintf(why, len, "%s is mounted on %s", dev, where);
		return 1;
	}
	if (first_holder(dev, where, sizeof(where))) {
		snprintf(why, len, "%s is held by %s", dev, where);
		return 1;
	}
	/* a mount in another namespace still claims the device */
	fd = open(dev, O_RDONLY | O_EXCL | O_CLOEXEC);
	if (fd < 0 && errno == EBUSY) {
		snprintf(why, len, "%s is in use (mounted or claimed)", dev);
		return 1;
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

/* Open a device node udev may not have created yet. */
static int open_device(const char *dev, int mode)
{
	int fd = -1;

	for (int i = 0; i < OPEN_TRIES; i++) {
		fd = open(dev, mode | O_CLOEXEC);
		if (fd >= 0 || (errno != ENOENT && errno != ENXIO))
			break;
		sleep_ms(RETRY_MS);
	}
	return fd < 0 ? -errno : fd;
}

static int set_status(int dfd, const struct loop_info64 *info)
{
	for (int i = 0; i < LOOP_TRIES; i++) {
		if (ioctl(dfd, LOOP_SET_STATUS64, info) == 0)
			return 0;
		if (errno != EAGAIN)
			return -errno;
		sleep_ms(10 * RETRY_MS);
	}
	return -EAGAIN;
}

/* Bind @ffd to the open loop device @dfd; -EBUSY if taken meanwhile. */
static int bind_device(int dfd, int ffd, const struct loop_info64 *info)
{
	struct loop_config cfg;
	int ret;

	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = (unsigned int)ffd;
	cfg.info = *info;
	if (ioctl(dfd, LOOP_CONFIGURE, &cfg) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOTTY && errno != ENOSYS)
		return -errno;
	/* before Linux 5.8: two steps */
	if (ioctl(dfd, LOOP_SET_FD, ffd) < 0)
		return -errno;
	ret = set_status(dfd, info);
	if (ret)
		ioctl(dfd, LOOP_CLR_FD, 0);
	return ret;
}

static int get_free(int ctl, char *dev, size_t len)
{
	int nr = ioctl(ctl, LOOP_CTL_GET_FREE);

	if (nr < 0)
		return xip_error(-errno, "%s: no free loop device: %s",
				 LOOP_CONTROL, strerror(errno));
	snprintf(dev, len, "/dev/loop%d", nr);
	return 0;
}

static int attach_fd(int ffd, const struct loop_info64 *info, bool ro,
		     char *dev, size_t len)
{
	int ctl, dfd, ret = -EBUSY;

	ctl = open(LOOP_CONTROL, O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return xip_error(-errno, "%s: %s", LOOP_CONTROL,
				 strerror(errno));
	for (int i = 0; i < LOOP_TRIES && ret == -EBUSY; i++) {
		ret = get_free(ctl, dev, len);
		if (ret)
			break;
		dfd = open_device(dev, ro ? O_RDONLY : O_RDWR);
		if (dfd < 0) {
			ret = xip_error(dfd, "%s: %s", dev, strerror(-dfd));
			break;
		}
		ret = bind_device(dfd, ffd, info);
		close(dfd);
		if (ret == -EBUSY)
			sleep_ms(RETRY_MS);
		else if (ret)
			ret = xip_error(ret, "%s: cannot bind: %s", dev,
					strerror(-ret));
	}
	if (ret == -EBUSY)
		ret = xip_error(-EBUSY, "no loop device could be bound (all taken)");
	close(ctl);
	return ret;
}

int xip_loop_attach(const char *path, uint64_t offset, uint64_t sizelimit,
		    int flags, char *dev, size_t len)
{
	bool ro = flags & XIP_LOOP_RDONLY;
	struct loop_info64 info;
	int ffd, ret;

	ffd = open(path, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NOFOLLOW);
	if (ffd < 0)
		return xip_error(-errno, "%s: %s", path, strerror(errno));
	memset(&info, 0, sizeof(info));
	info.lo_offset = offset;
	info.lo_sizelimit = sizelimit;
	info.lo_flags = ro ? LO_FLAGS_READ_ONLY : 0;
	snprintf((char *)info.lo_file_name, sizeof(info.lo_file_name), "%s",
		 path);
	ret = attach_fd(ffd, &info, ro, dev, len);
	close(ffd);
	if (!ret)
		XIP_DBG(LOOP, "%s bound to %s (offset %llu, size limit %llu%s)",
			dev, path, (unsigned long long)offset,
			(unsigned long long)sizelimit, ro ? ", read-only" : "");
	return ret;
}

int xip_loop_detach(const char *dev)
{
	char backing[XIP_PATH_MAX], now[XIP_PATH_MAX];
	int fd, ret = 0;

	if (xip_loop_backing_file(dev, backing, sizeof(backing))) {
		xip_error_clear();
		return 0;		/* not bound: nothing to do */
	}
	fd = open(dev, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return xip_error(-errno, "%s: %s", dev, strerror(errno));
	if (ioctl(fd, LOOP_CLR_FD, 0) < 0 && errno != ENXIO)
		ret = xip_error(-errno, "%s: cannot release: %s", dev,
				strerror(errno));
	close(fd);
	if (ret)
		return ret;
	/*
	 * The kernel clears a device that is still open elsewhere (udev
	 * probing it) on its last close: wait a little for that.
	 */
	for (int i = 0; i < 40; i++) {
		if (xip_loop_backing_file(dev, now, sizeof(now)) ||
		    strcmp(now, backing))
			break;	/* released (or already someone else's) */
		sleep_ms(RETRY_MS);
	}
	XIP_DBG(LOOP, "%s released from %s", dev, backing);
	xip_error_clear();
	return 0;
}

/* Is the bound loop device /dev/@name backed by the file (@dev, @ino)? */
static bool backed_by(const char *node, dev_t dev, ino_t ino)
{
	struct loop_info64 info;
	bool same;
	int fd = open(node, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return false;
	same = ioctl(fd, LOOP_GET_STATUS64, &info) == 0 &&
	       info.lo_device == (uint64_t)dev && info.lo_inode == (uint64_t)ino;
	close(fd);
	return same;
}

int xip_loop_claim_add(int **fds, size_t *n, int fd)
{
	size_t cap = *n;	/* the array holds at least that many */

	if (xip_grow((void **)fds, &cap, *n + 1, sizeof(**fds))) {
		close(fd);
		return xip_error(-ENOMEM, "out of memory");
	}
	(*fds)[(*n)++] = fd;
	return 0;
}

void xip_loop_release_claims(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
}

int xip_loop_claim_backing(int fd, const char *what, int **fdsp, size_t *np)
{
	char node[300], why[4400];
	struct dirent *de;
	struct stat st;
	int ret = 0;
	DIR *d;

	*fdsp = NULL;
	*np = 0;
	if (fstat(fd, &st) < 0)
		return xip_error(-errno, "%s: %s", what, strerror(errno));
	d = opendir("/sys/block");
	if (!d)
		return 0;		/* no sysfs: no loop devices to find */
	while (!ret && (de = readdir(d))) {
		int dfd;

		if (strncmp(de->d_name, "loop", 4) ||
		    strlen(de->d_name) > 200)
			continue;
		snprintf(node, sizeof(node), "/dev/%s", de->d_name);
		if (!backed_by(node, st.st_dev, st.st_ino))
			continue;
		/* the kernel's own test: a mount holds the device exclusively */
		dfd = open(node, O_RDONLY | O_EXCL | O_CLOEXEC | O_NONBLOCK);
		if (dfd < 0 && errno == EBUSY) {
			if (xip_loop_busy(node, why, sizeof(why)) != 1)
				snprintf(why, sizeof(why),
					 "%s is in use (mounted or claimed)",
					 node);
			ret = xip_error(-EBUSY,
					"%s: the kernel has it open through a loop device: %s",
					what, why);
		} else if (dfd < 0) {
			ret = xip_error(-errno, "%s: %s", node,
					strerror(errno));
		} else {
			ret = xip_loop_claim_add(fdsp, np, dfd);
		}
	}
	closedir(d);
	if (ret) {
		xip_loop_release_claims(*fdsp, *np);
		*fdsp = NULL;
		*np = 0;
	}
	return ret;
}
