// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Is an attached segment in use?  Its loop device held open, or a lock on
 * its file (a running program holds a shared one; its holder is found
 * through /proc/locks and the descriptors of /proc/PID/fdinfo).  Asked by detach, save and mkfs's target check.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "registry/xip_registry.h"
#include "registry/registry_int.h"
#include "util/xip_error.h"
#include "util/xip_util.h"
#include "segment/xip_loop.h"
#include "segment/xip_segment.h"

/*
 * One lock line of /proc/locks or of a "lock:" line of fdinfo ("1: FLOCK
 * ADVISORY WRITE PID MAJ:MIN:INO START END"): 1 with its owner's pid when
 * it is a lock (not a waiter, "->") on @dev/@ino.
 */
static int lock_on(const char *line, dev_t dev, ino_t ino, int *pid)
{
	unsigned int maj, min;
	unsigned long i;

	if (strstr(line, "->"))
		return 0;	/* a waiter */
	return sscanf(line, "%*d: %*s %*s %*s %d %x:%x:%lu", pid, &maj, &min,
		      &i) == 4 && i == ino && makedev(maj, min) == dev;
}

/* The pid /proc/locks records for a lock on the file, or 0. */
static pid_t locks_owner(const struct stat *st)
{
	char line[256];
	pid_t found = 0;
	FILE *f;
	int pid;

	f = fopen("/proc/locks", "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		if (lock_on(line, st->st_dev, st->st_ino, &pid))
			found = pid;
	fclose(f);
	return found;
}

/* Does descriptor @fd of process @pid carry a lock on the file? */
static bool fd_locked(pid_t pid, const char *fd, const struct stat *st)
{
	char path[320], line[256];
	bool found = false;
	FILE *f;
	int owner;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", (int)pid, fd);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = !strncmp(line, "lock:", 5) &&
			lock_on(line + 5 + strspn(line + 5, " \t"), st->st_dev,
				st->st_ino, &owner);
	fclose(f);
	return found;
}

/* Does process @pid hold an open file of @st with a lock on it? */
static bool holds_lock(pid_t pid, const struct stat *st)
{
	char path[64], fdpath[340];
	struct dirent *de;
	struct stat fst;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(fdpath, sizeof(fdpath), "%s/%s", path, de->d_name);
		if (stat(fdpath, &fst) == 0 && fst.st_dev == st->st_dev &&
		    fst.st_ino == st->st_ino)
			found = fd_locked(pid, de->d_name, st);
	}
	closedir(d);
	return found;
}

static int lock_held_by(pid_t pid, void *st)
{
	return holds_lock(pid, st) ? (int)pid : 0;
}

/*
 * The process holding a lock on the file, or 0.  /proc/locks names the
 * process that took the lock; a flock belongs to the open file, which a
 * forked child keeps after its parent is gone (nbdkit opens its image,
 * then forks into the background): then the holder is the process with
 * the locked file among its descriptors (/proc/PID/fdinfo's "lock:").
 */
static pid_t lock_holder(int fd)
{
	struct stat st;
	pid_t owner, found;

	if (fstat(fd, &st) < 0)
		return 0;
	owner = locks_owner(&st);
	if (owner > 0 && holds_lock(owner, &st))
		return owner;
	found = xip_pids_each(lock_held_by, &st);
	return found > 0 ? found : owner;
}

void xip_registry_holder(int fd, char *why, size_t len)
{
	pid_t pid = lock_holder(fd);
	char path[64], comm[64] = "";
	int cfd;
	ssize_t n;

	if (pid <= 0) {
		snprintf(why, len, "the segment is held by another process");
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	cfd = open(path, O_RDONLY | O_CLOEXEC);
	if (cfd >= 0) {
		n = read(cfd, comm, sizeof(comm) - 1);
		comm[n > 0 ? n : 0] = '\0';
		comm[strcspn(comm, "\n")] = '\0';
		close(cfd);
	}
	snprintf(why, len, "the segment is held by process %d%s%s%s",
		 (int)pid, comm[0] ? " (" : "", comm, comm[0] ? ")" : "");
}

/*
 * Take the exclusive holder lock (the segment's lock file, see registry.c)
 * and open the segment file, checked to be the one recorded: fails while
 * a running program (exec holds a shared lock) or an exclusive holder has
 * it.  Returns the segment file's descriptor (the lock's in *@lockfd),
 * -EBUSY with the reason, or < 0 (-ESTALE: another file in its place).
 */
int xip_registry_claim(const struct xip_seg_entry *e, char *why,
			 size_t len, int *lockfd)
{
	int lfd, fd = xip_registry_open_entry(e, O_RDONLY);

	*lockfd = -1;
	if (fd < 0)
		return fd;
	lfd = xip_registry_hold_open(e, false);
	if (lfd < 0) {
		close(fd);
		return lfd;
	}
	if (flock(lfd, LOCK_EX | LOCK_NB) < 0) {
		int err = errno;

		if (err == EWOULDBLOCK)
			xip_registry_holder(lfd, why, len);
		xip_close_two(fd, lfd);
		return err == EWOULDBLOCK ? -EBUSY :
		       xip_error(-err, "%s: lock: %s", e->path, strerror(err));
	}
	*lockfd = lfd;
	return fd;
}

int xip_registry_busy(const struct xip_seg_entry *e, char *why, size_t len)
{
	int ret = 0, fd, lfd;

	if (e->loop[0])
		ret = xip_loop_busy(e->loop, why, len);
	if (ret)
		return ret;

	fd = xip_registry_claim(e, why, len, &lfd);
	if (fd == -EBUSY)
		return 1;
	if (fd < 0)
		return fd;
	xip_close_two(fd, lfd);
	return 0;
}
