// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The fill state file of a lazy segment (segment/fill.c) beside its
 * record in the owner's run directory: opened from the checked directory
 * descriptor without following a link, judged, removed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry/xip_registry.h"
#include "registry/registry_int.h"
#include "util/xip_error.h"
#include "util/xip_util.h"
#include "segment/xip_fill.h"

#define FILL_FMT ".fill:%" PRIu64 ":%" PRIu64

int xip_registry_fill_open(const struct xip_seg_entry *e, bool create)
{
	char dir[XIP_PATH_MAX], name[96];
	struct stat st;
	int dfd, fd;

	dfd = xip_registry_rundir_open(dir, sizeof(dir));
	if (dfd < 0)
		return dfd;
	snprintf(name, sizeof(name), FILL_FMT, e->seg_dev, e->seg_ino);
	if (create)
		unlinkat(dfd, name, 0);
	fd = openat(dfd, name, (create ? O_RDWR | O_CREAT | O_EXCL : O_RDONLY) |
		    O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC, 0600);
	close(dfd);
	if (fd < 0)
		return xip_error(-errno, "@%s: fill state %s/%s: %s", e->name,
				 dir, name, strerror(errno));
	/* the owner's own regular file, nothing planted */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != e->seg_uid || st.st_nlink != 1) {
		close(fd);
		return xip_error(-EPERM, "@%s: fill state %s/%s: not the owner's file",
				 e->name, dir, name);
	}
	return fd;
}

const char *xip_registry_fill_status(const struct xip_seg_entry *e,
				     uint64_t *filled, pid_t *filler)
{
	static const char *const names[] = {
		[XIP_FILL_FILLING] = "filling",
		[XIP_FILL_COMPLETE] = "complete",
		[XIP_FILL_FAILED] = "failed",
	};
	enum xip_fill_state st;
	struct xip_fill *f;
	int fd;

	*filled = e->size;
	*filler = 0;
	if (!e->lazy)
		return names[XIP_FILL_COMPLETE];
	*filled = 0;
	fd = xip_registry_fill_open(e, false);
	if (fd < 0 || xip_fill_open(fd, &f)) {
		if (fd >= 0)
			close(fd);
		xip_error_clear();
		return names[XIP_FILL_FAILED];
	}
	st = xip_fill_state(f);
	*filled = st == XIP_FILL_COMPLETE ? e->size : xip_fill_filled(f);
	if (st == XIP_FILL_FILLING)
		*filler = xip_fill_header(f)->pid;
	xip_fill_close(f);
	return names[st];
}

void xip_registry_fill_remove(const struct xip_seg_entry *e)
{
	char dir[XIP_PATH_MAX], name[96];
	int dfd = xip_registry_rundir_open(dir, sizeof(dir));

	if (dfd >= 0) {
		snprintf(name, sizeof(name), FILL_FMT, e->seg_dev, e->seg_ino);
		unlinkat(dfd, name, 0);
		close(dfd);
	}
	xip_error_clear();
}
