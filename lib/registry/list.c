// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Listing the registry: the live records of the caller's run directory,
 * each reported as it is now (a loop device gone, a seal broken), and for
 * root every user's (list --all), read only and trusted only as far as
 * registry.c's checks of another user's records go.
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
#include "segment/xip_segment.h"

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct xip_seg_entry *)a)->name,
		      ((const struct xip_seg_entry *)b)->name);
}

/*
 * Is the file open on @fd still what was checked of the segment @e
 * records as verified: the file recorded (its device, inode and owner),
 * still sealed (FS_IMMUTABLE_FL, asked of that descriptor) and unchanged
 * since it was sealed (its ctime: unsealing it, writing it or sealing it
 * again moves it)?  Otherwise its bytes may be anyone's.
 */
static bool still_sealed(const struct xip_seg_entry *e, int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && xip_registry_same_file(e, &st) &&
	       xip_seg_sealed(fd) == 1 &&
	       (!e->seal_ctime ||
		(uint64_t)st.st_ctim.tv_sec * 1000000000u +
				(uint64_t)st.st_ctim.tv_nsec == e->seal_ctime);
}

/* still_sealed() of the file the record names (opened without following
 * a symlink) */
static bool still_verified(const struct xip_seg_entry *e)
{
	bool ok;
	int fd;

	fd = open(e->path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK |
		  O_CLOEXEC);
	if (fd < 0)
		return false;
	ok = still_sealed(e, fd);
	close(fd);
	return ok;
}

/*
 * A live record as it is now: verified only while still sealed and
 * unchanged, and a signer vouches for the sealed bytes only.  What a
 * record says of itself is never taken on its word: its owner writes it.
 */
static void judge_live(struct xip_seg_entry *e)
{
	if (e->verified && !still_verified(e))
		e->verified = false;
	if (!e->verified)
		e->signer[0] = '\0';
}

int xip_registry_admits(const struct xip_seg *seg,
			enum xip_policy_level level)
{
	enum xip_entry_state state;
	struct xip_seg_entry *e;
	int ret;

	if (level == XIP_POLICY_ANY)
		return 0;
	if (!seg->name)
		return xip_error(-EPERM, "not an attached segment (only a verified segment is)");
	e = malloc(sizeof(*e));
	if (!e)
		return xip_error(-ENOMEM, "out of memory");
	ret = xip_registry_read(seg->name, e, &state, false);
	if (ret == -ENOENT || (!ret && state != XIP_ENTRY_LIVE))
		ret = xip_error(-EPERM, "the segment's record is gone");
	else if (!ret && !e->verified)
		ret = xip_error(-EPERM, "the segment is not verified");
	else if (!ret && !still_sealed(e, seg->fd))
		ret = xip_error(-EPERM, "the segment was verified, but its seal is broken");
	else if (!ret && level >= XIP_POLICY_SIGNED && !e->signer[0])
		ret = xip_error(-EPERM, "the segment is verified but not signed (no signature checked against a trust store)");
	free(e);
	return ret;
}

/* Read record @name into @e: 1 when live, 0 when not (cleaned), < 0. */
static int list_one(const char *name, struct xip_seg_entry *e)
{
	enum xip_entry_state state;
	int ret = xip_registry_read(name, e, &state, false);

	if (ret == -ENOENT)
		return 0;		/* removed meanwhile */
	if (ret)
		return ret;
	if (state == XIP_ENTRY_LIVE) {
		if (e->loop[0] && !xip_registry_loop_serves(e))
			xip_registry_loop_forget(e);
		/* reported as it is now, not as it was at attach */
		judge_live(e);
		return 1;
	}
	/* stale, or an attach that may have died: judged again, locked */
	if (xip_registry_clean(e) < 0)
		xip_error_clear();	/* left for the next one */
	return 0;
}

int xip_registry_list(struct xip_seg_entry **entries, size_t *n)
{
	struct xip_seg_entry *v = NULL;
	char dir[XIP_PATH_MAX];
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int ret = 0, dfd = xip_registry_rundir_open(dir, sizeof(dir));

	*entries = NULL;
	*n = 0;
	if (dfd < 0)
		return dfd;
	d = fdopendir(dfd);
	if (!d) {
		ret = xip_error(-errno, "%s: %s", dir, strerror(errno));
		close(dfd);
		return ret;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || xip_registry_name_check(de->d_name))
			continue;	/* lock, temporary files, foreign names */
		if (xip_grow((void **)&v, &cap, cnt + 1, sizeof(*v))) {
			ret = xip_error(-ENOMEM, "out of memory");
			break;
		}
		ret = list_one(de->d_name, &v[cnt]);
		if (ret < 0)
			break;
		cnt += (size_t)ret;
		ret = 0;
	}
	closedir(d);
	if (ret) {
		free(v);
		return ret;
	}
	xip_error_clear();
	if (cnt)
		qsort(v, cnt, sizeof(*v), entry_cmp);
	*entries = v;
	*n = cnt;
	return 0;
}

#ifndef XIP_LIBC_ONLY
struct list_acc {
	struct xip_seg_entry *v;
	size_t cnt, cap;
	xip_registry_warn_fn warn;
	void *arg;
};

static void list_warn(struct list_acc *a)
{
	if (a->warn)
		a->warn(a->arg, xip_errmsg());
	xip_error_clear();
}

/*
 * The live records of the registry entered (xip_registry_enter()), read
 * only: nothing of the user's is cleaned or rewritten.  What is not a
 * record root may trust is a warning; what is stale is left out.
 */
static int list_other(struct list_acc *a)
{
	enum xip_entry_state state;
	char dir[XIP_PATH_MAX];
	struct dirent *de;
	DIR *d;
	int ret = 0, dfd = xip_registry_rundir_open(dir, sizeof(dir));

	if (dfd == -ENOENT) {
		xip_error_clear();	/* no registry: nothing attached */
		return 0;
	}
	if (dfd < 0) {
		list_warn(a);
		return 0;
	}
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return xip_error(-errno, "%s: %s", dir, strerror(errno));
	}
	while ((de = readdir(d))) {
		/* lock, temporary files, foreign names */
		if (de->d_name[0] == '.' || xip_registry_name_check(de->d_name))
			continue;
		if (xip_grow((void **)&a->v, &a->cap, a->cnt + 1,
			     sizeof(*a->v))) {
			ret = xip_error(-ENOMEM, "out of memory");
			break;
		}
		ret = xip_registry_read(de->d_name, &a->v[a->cnt], &state,
					false);
		if (ret == -ENOENT || (!ret && state != XIP_ENTRY_LIVE)) {
			ret = 0;	/* gone, stale, still being attached */
			continue;
		}
		if (ret == -ENOMEM)
			break;
		if (ret) {
			list_warn(a);
		} else {
			judge_live(&a->v[a->cnt]);
			a->cnt++;
		}
		ret = 0;
	}
	closedir(d);
	return ret;
}

/* Numbers only: the users' run directories are named by uid. */
static bool uid_name(const char *s, uid_t *uid)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)s[0]) || (s[0] == '0' && s[1]))
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end || errno || v >= (uid_t)-1)
		return false;
	*uid = (uid_t)v;
	return true;
}

static int list_users(struct list_acc *a)
{
	const char *base = xip_registry_users_dir();
	struct dirent *de;
	int ret = 0;
	uid_t uid;
	DIR *d = opendir(base);

	if (!d)
		return errno == ENOENT ? 0 :
		       xip_error(-errno, "%s: %s", base, strerror(errno));
	while (!ret && (de = readdir(d))) {
		/* root's registry is /run/xiptool, never one of these */
		if (!uid_name(de->d_name, &uid) || uid == 0)
			continue;
		ret = xip_registry_enter(uid);
		if (ret)
			break;
		ret = list_other(a);
		xip_registry_leave();
	}
	closedir(d);
	return ret;
}

static int entry_owner_cmp(const void *a, const void *b)
{
	const struct xip_seg_entry *x = a, *y = b;

	if (x->owner != y->owner)
		return x->owner < y->owner ? -1 : 1;
	return strcmp(x->name, y->name);
}

int xip_registry_list_all(struct xip_seg_entry **entries, size_t *n,
			  xip_registry_warn_fn warn, void *arg)
{
	struct list_acc a = { .warn = warn, .arg = arg };
	int ret = xip_registry_list(&a.v, &a.cnt);

	if (ret)
		return ret;
	a.cap = a.cnt;
	/* ours, whatever the records say */
	for (size_t i = 0; i < a.cnt; i++)
		a.v[i].owner = xip_registry_euid();
	/* a user sees their own registry: the others are not theirs */
	if (xip_registry_euid() == 0)
		ret = list_users(&a);
	if (ret) {
		free(a.v);
		return ret;
	}
	xip_error_clear();
	if (a.cnt)
		qsort(a.v, a.cnt, sizeof(*a.v), entry_owner_cmp);
	*entries = a.v;
	*n = a.cnt;
	return 0;
}
#endif

int xip_registry_find(const char *what, struct xip_seg_entry *e)
{
	struct xip_seg_entry *all;
	char real[XIP_PATH_MAX];
	size_t n;
	int ret;

	if (what[0] == '@')
		what++;
	if (strncmp(what, "/dev/", 5))
		return xip_registry_get(what, e);
	if (!realpath(what, real))
		snprintf(real, sizeof(real), "%s", what);
	ret = xip_registry_list(&all, &n);
	if (ret)
		return ret;
	ret = xip_error(-ENOENT, "%s: no attached segment uses this device",
			what);
	for (size_t i = 0; i < n; i++) {
		if (all[i].loop[0] && !strcmp(all[i].loop, real)) {
			*e = all[i];
			xip_error_clear();
			ret = 0;
			break;
		}
	}
	free(all);
	return ret;
}
