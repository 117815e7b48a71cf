// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Releasing attached segments.  Whether one is in use is the registry's
 * question (registry/busy.c).  A detach holds
 * the registry lock and the segment's exclusive lock until the file is
 * gone; it may save the segment first (save.c).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "attach/xip_attach.h"
#include "attach/attach_int.h"
#include "util/xip_error.h"
#include "util/xip_util.h"
#include "segment/xip_loop.h"
#include "segment/xip_segment.h"
#include "registry/xip_registry.h"

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
	int fd = -1, lfd = -1, ret = 0;

	if (serves && !force) {
		ret = xip_loop_busy(e->loop, why, sizeof(why));
		if (ret > 0)
			return xip_error_reason(-EBUSY, XIP_R_BUSY,
						"%s: busy: %s", e->name, why);
		if (ret < 0)
			return ret;
	}
	/* hold the lock until the file is gone: no new holder meanwhile */
	fd = xip_registry_claim(e, why, sizeof(why), &lfd);
	if (fd == -ESTALE)
		return detach_stale(e, XIP_ENTRY_FOREIGN);
	if (fd == -ENOENT)
		return detach_stale(e, XIP_ENTRY_GONE);
	if (fd == -EBUSY && !force)
		return xip_error_reason(-EBUSY, XIP_R_BUSY, "%s: busy: %s",
					e->name, why);
	if (fd < 0 && fd != -EBUSY)
		return fd;
	if (save)
		ret = xip_attach_save_entry(e, save, fd);
	/* a lazy segment's filler first: nothing lands after this */
	if (!ret && e->lazy)
		xip_attach_lazy_stop(e);
	if (!ret && serves)
		ret = xip_loop_detach(e->loop);
	/* a verified segment is sealed: unsealed to be removed */
	if (!ret && lstat(e->path, &st) == 0 && xip_registry_same_file(e, &st))
		xip_seg_unseal_path(e->path);
	if (!ret && lstat(e->path, &st) == 0 && xip_registry_same_file(e,
								       &st) &&
	    unlink(e->path) < 0 && errno != ENOENT)
		ret = xip_error(-errno, "%s: %s", e->path, strerror(errno));
	if (!ret)
		ret = xip_registry_remove(e->name);
	/* its lock file last, still held: see registry.c, "holder locks" */
	if (!ret)
		xip_registry_hold_remove(e);
	/* a lazy attach's fill state, complete or not */
	if (!ret)
		xip_registry_fill_remove(e);
	if (fd >= 0)
		close(fd);
	if (lfd >= 0)
		close(lfd);
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

/*
 * The last segment gone from the tmpfs with huge pages that attach mounts
 * beside the run directory (RUN.shm): unmount it, as nothing of ours is
 * left on it, so that no mount outlives the segments (a run directory of
 * the user's own, XIPTOOL_RUNDIR, can then be removed).  Holding the
 * registry lock, as attach does to mount it.  Best effort: a busy or
 * non-empty mount stays.
 */
static void shm_release(const char *path)
{
	char run[XIP_PATH_MAX], dir[XIP_PATH_MAX];
	struct stat st, parent;
	const char *slash = strrchr(path, '/');
	DIR *d;
	struct dirent *de;
	bool empty = true;
	int n;

	if (!slash || xip_registry_dir(run, sizeof(run)))
		return;
	n = snprintf(dir, sizeof(dir), "%s.shm", run);
	if (n < 0 || (size_t)n >= sizeof(dir) ||
	    (size_t)(slash - path) != strlen(dir) ||
	    strncmp(path, dir, (size_t)(slash - path)))
		return;
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    stat(run, &parent) < 0 || st.st_dev == parent.st_dev ||
	    st.st_uid != 0)
		return;
	d = opendir(dir);
	if (!d)
		return;
	while (empty && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = false;
	closedir(d);
	if (empty && umount2(dir, UMOUNT_NOFOLLOW) == 0)
		rmdir(dir);
}

/* @other: a segment of another user's registry (entered) */
static int detach_one(const char *what, const char *save, int flags,
		      bool other)
{
	struct xip_seg_entry *e;
	enum xip_entry_state state;
	int ret = xip_registry_lock_new(&e);

	if (ret)
		return ret;
	ret = detach_find(what, e, &state);
	if (!ret && state == XIP_ENTRY_LIVE) {
		ret = detach_entry(e, save, flags);
		if (!ret && !other)
			shm_release(e->path);
	}
	else if (!ret && state == XIP_ENTRY_ATTACHING)
		ret = xip_error(-EBUSY, "%s: still being attached (by process %d)",
				e->name, (int)e->pid);
	else if (!ret)
		ret = detach_stale(e, state);
	xip_registry_unlock();
	free(e);
	return ret;
}

/*
 * "UID:NAME" or "USER:NAME" (NAME may be "@NAME"): 1 with the owner in
 * @uid and the name in *@name, 0 when @what names no owner (a name, a
 * loop device), < 0 for an unknown user.
 */
static int owner_parse(const char *what, uid_t *uid, const char **name)
{
	const char *colon = strchr(what, ':');
	char user[256];
	struct passwd pw, *res = NULL;
	char buf[4096];
	unsigned long v;
	char *end;
	size_t n;

	if (what[0] == '/' || what[0] == '@' || !colon || colon == what)
		return 0;
	n = (size_t)(colon - what);
	*name = colon[1] == '@' ? colon + 2 : colon + 1;
	if (isdigit((unsigned char)what[0])) {
		errno = 0;
		v = strtoul(what, &end, 10);
		if (end != colon || errno || v >= (uid_t)-1)
			return xip_error(-ENOENT, "%.*s: no such user",
					 (int)n, what);
		*uid = (uid_t)v;
		return 1;
	}
	if (n < sizeof(user)) {
		memcpy(user, what, n);
		user[n] = '\0';
		if (getpwnam_r(user, &pw, buf, sizeof(buf), &res))
			res = NULL;
	}
	if (!res)
		return xip_error(-ENOENT, "%.*s: no such user", (int)n, what);
	*uid = res->pw_uid;
	return 1;
}

int xip_detach(const char *what, const char *save, int flags)
{
	const char *name = what;
	uid_t uid = 0;
	int ret = owner_parse(what, &uid, &name);

	if (ret <= 0 || uid == geteuid())
		return ret < 0 ? ret : detach_one(name, save, flags, false);
	/* another user's: root's to release, as it may a loop device */
	if (geteuid() != 0)
		return xip_error(-EPERM,
				 "%s: permission denied: only root detaches another user's segment",
				 what);
	if (save)
		return xip_error(-EINVAL,
				 "%s: --save of another user's segment: save it as that user",
				 what);
	ret = xip_registry_enter(uid);
	if (ret)
		return ret;
	ret = detach_one(name, NULL, flags, true);
	xip_registry_leave();
	return ret;
}
