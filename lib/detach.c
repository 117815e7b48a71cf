// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Releasing attached segments, and the test for a segment in use: its
 * loop device held open, or a lock on its file (a running program holds
 * a shared one, found with its process in /proc/locks).  A detach holds
 * the registry lock and the segment's exclusive lock until the file is
 * gone; it may save the segment first (save.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "attach_int.h"

/* ---- in use? --------------------------------------------------------- */

/* The process holding a lock on the file (from /proc/locks), or 0. */
static pid_t lock_holder(int fd)
{
	unsigned int maj, min;
	unsigned long ino;
	char line[256];
	struct stat st;
	pid_t found = 0;
	FILE *f;
	int pid;

	if (fstat(fd, &st) < 0)
		return 0;
	f = fopen("/proc/locks", "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		if (strstr(line, "->"))
			continue;	/* a waiter */
		if (sscanf(line, "%*d: %*s %*s %*s %d %x:%x:%lu", &pid, &maj,
			   &min, &ino) == 4 && ino == st.st_ino &&
		    makedev(maj, min) == st.st_dev)
			found = pid;
	}
	fclose(f);
	return found;
}

void xip_attach_describe_holder(int fd, char *why, size_t len)
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
 * Take the exclusive lock on the segment file, opened and checked to be
 * the one recorded: fails while a running program (exec holds a shared
 * lock) or an exclusive holder has it.  Returns the locked descriptor,
 * -EBUSY with the reason, or < 0 (-ESTALE: another file in its place).
 */
static int segment_claim(const struct xip_seg_entry *e, char *why,
			 size_t len)
{
	int fd = xip_registry_open_entry(e, O_RDONLY);

	if (fd < 0)
		return fd;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	if (errno != EWOULDBLOCK) {
		int err = errno;

		close(fd);
		return xip_error(-err, "%s: lock: %s", e->path, strerror(err));
	}
	xip_attach_describe_holder(fd, why, len);
	close(fd);
	return -EBUSY;
}

int xip_segment_busy(const struct xip_seg_entry *e, char *why, size_t len)
{
	int ret = 0, fd;

	if (e->loop[0])
		ret = xip_loop_busy(e->loop, why, len);
	if (ret)
		return ret;
	fd = segment_claim(e, why, len);
	if (fd == -EBUSY)
		return 1;
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}


/* ---- detach -------------------------------------------------------------- */

/* A stale record met by detach: removed, and said so. */
static int detach_stale(const struct xip_seg_entry *e,
			enum xip_entry_state state)
{
	int ret = xip_registry_clean(e);

	if (ret < 0)
		return ret;
	if (state == XIP_ENTRY_FOREIGN)
		return xip_error(-ESTALE,
				 "%s: %s is not the segment that was attached (device/inode changed): entry removed, the file left alone",
				 e->name, e->path);
	return xip_error(-ENOENT, "@%s: no attached segment of that name",
			 e->name);
}

/*
 * Release a live segment, holding the registry lock: refuse while in use
 * (unless forced), save it, unbind its loop device (only while it serves
 * this very file), remove the file (only while it is the recorded one),
 * then the record.  Success means all three are gone.
 */
static int detach_entry(const struct xip_seg_entry *e, const char *save,
			int flags)
{
	bool force = flags & XIP_DETACH_FORCE;
	bool serves = e->loop[0] && xip_registry_loop_serves(e);
	char why[512] = "";
	struct stat st;
	int fd = -1, ret = 0;

	if (serves && !force) {
		ret = xip_loop_busy(e->loop, why, sizeof(why));
		if (ret > 0)
			return xip_error(-EBUSY, "%s: busy: %s (use --force)",
					 e->name, why);
		if (ret < 0)
			return ret;
	}
	/* hold the lock until the file is gone: no new holder meanwhile */
	fd = segment_claim(e, why, sizeof(why));
	if (fd == -ESTALE)
		return detach_stale(e, XIP_ENTRY_FOREIGN);
	if (fd == -ENOENT)
		return detach_stale(e, XIP_ENTRY_GONE);
	if (fd == -EBUSY && !force)
		return xip_error(-EBUSY, "%s: busy: %s (use --force)", e->name,
				 why);
	if (fd < 0 && fd != -EBUSY)
		return fd;
	if (save)
		ret = xip_attach_save_entry(e, save, fd);
	if (!ret && serves)
		ret = xip_loop_detach(e->loop);
	if (!ret && lstat(e->path, &st) == 0 && xip_registry_same_file(e,
								       &st) &&
	    unlink(e->path) < 0 && errno != ENOENT)
		ret = xip_error(-errno, "%s: %s", e->path, strerror(errno));
	if (!ret)
		ret = xip_registry_remove(e->name);
	if (fd >= 0)
		close(fd);
	return ret;
}

/* Find the record to detach: by name (any state) or by loop device. */
static int detach_find(const char *what, struct xip_seg_entry *e,
		       enum xip_entry_state *state)
{
	const char *name = what[0] == '@' ? what + 1 : what;

	*state = XIP_ENTRY_LIVE;
	if (!strncmp(name, "/dev/", 5))
		return xip_registry_find(name, e);
	if (xip_registry_name_check(name))
		return xip_error(-ENOENT, "@%s: no attached segment of that name",
				 name);
	return xip_registry_read(name, e, state, true);
}

int xip_detach(const char *what, const char *save, int flags)
{
	struct xip_seg_entry *e;
	enum xip_entry_state state;
	int ret = xip_registry_lock_new(&e);

	if (ret)
		return ret;
	ret = detach_find(what, e, &state);
	if (!ret && state == XIP_ENTRY_LIVE)
		ret = detach_entry(e, save, flags);
	else if (!ret && state == XIP_ENTRY_ATTACHING)
		ret = xip_error(-EBUSY, "%s: still being attached (by process %d)",
				e->name, (int)e->pid);
	else if (!ret)
		ret = detach_stale(e, state);
	xip_registry_unlock();
	free(e);
	return ret;
}
