// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Is an attached segment in use?  Its loop device held open, or a lock on
 * its file (a running program holds a shared one, found with its process
 * in /proc/locks).  Asked by detach, save and mkfs's target check.
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

#include "registry/registry_int.h"
#include "segment/segment_int.h"

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
 * Take the exclusive lock on the segment file, opened and checked to be
 * the one recorded: fails while a running program (exec holds a shared
 * lock) or an exclusive holder has it.  Returns the locked descriptor,
 * -EBUSY with the reason, or < 0 (-ESTALE: another file in its place).
 */
int xip_registry_claim(const struct xip_seg_entry *e, char *why,
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
	xip_registry_holder(fd, why, len);
	close(fd);
	return -EBUSY;
}

int xip_registry_busy(const struct xip_seg_entry *e, char *why, size_t len)
{
	int ret = 0, fd;

	if (e->loop[0])
		ret = xip_loop_busy(e->loop, why, len);
	if (ret)
		return ret;
	fd = xip_registry_claim(e, why, len);
	if (fd == -EBUSY)
		return 1;
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}
