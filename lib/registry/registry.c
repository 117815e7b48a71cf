// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The registry of attached segments: one small state file per segment in
 * the run directory, named after the segment.  A state file is a list of
 * "key=value" lines (backslash escapes for '\\' and newlines), written to
 * a temporary file and linked or renamed into place, so a reader never
 * sees half a record.
 *
 * A record names its segment file and that file's identity (device,
 * inode, owner) at attach; every use opens the file without following a
 * symlink and compares.  A record whose file is gone, or replaced by
 * another, is stale.  Every change (attach, detach, cleaning a stale
 * record, a loop device released) is made holding the registry lock, a
 * flock on .lock in the run directory; readers take no lock, and clean
 * what they find stale only under it, after reading the record again.
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
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "registry/xip_registry.h"
#include "registry/registry_int.h"
#include "util/xip_debug.h"
#include "util/xip_error.h"
#include "util/xip_util.h"
#include "segment/xip_fill.h"
#include "segment/xip_loop.h"
#include "segment/xip_segment.h"

#define STATE_MAX 32768
#define LOCK_NAME ".lock"
/* how long root waits for another user's registry lock */
#define OTHER_LOCK_WAIT_MS 5000

/* ---- the run directory ----------------------------------------------- */

/*
 * Another user's registry, entered by root (xip_registry_enter()): every
 * run directory, record and lock of this thread is then that user's, in
 * USERS/UID/xiptool, checked to be theirs; its records are trusted only
 * as far as foreign_record_check() says.
 */
static XIP_TLS bool other_on;
static XIP_TLS uid_t other_uid;

const char *xip_registry_users_dir(void)
{
	const char *env = getenv("XIPTOOL_USERS_RUNDIR");

	return env && *env ? env : "/run/user";
}

int xip_registry_rundir_path(char *buf, size_t len, uid_t euid)
{
	const char *env = getenv("XIPTOOL_RUNDIR");
	int n;

	if (other_on) {
		n = snprintf(buf, len, "%s/%u/xiptool", xip_registry_users_dir(),
			     (unsigned int)other_uid);
		n = n < 0 || (size_t)n >= len;
	} else if (env && *env)
		n = xip_str_join(buf, len, env, NULL);
	else if (euid == 0)
		n = xip_str_join(buf, len, "/run/xiptool", NULL);
	else if ((env = getenv("XDG_RUNTIME_DIR")) && *env)
		n = xip_str_join(buf, len, env, "/xiptool");
	else
		return xip_error(-ENOENT,
				 "no run directory for the registry: set XDG_RUNTIME_DIR or XIPTOOL_RUNDIR");
	if (n)
		return xip_error(-ENAMETOOLONG, "%s: run directory name too long",
				 buf);
	return 0;
}

int xip_registry_rundir_refuse(const char *dir, const struct stat *st, uid_t euid)
{
	if (S_ISLNK(st->st_mode))
		return xip_error(-ELOOP,
				 "%s: run directory is a symbolic link: refusing",
				 dir);
	if (!S_ISDIR(st->st_mode))
		return xip_error(-ENOTDIR, "%s: run directory is not a directory",
				 dir);
	if (st->st_uid != euid || (st->st_mode & 0022))
		return xip_error(-EPERM,
				 "%s: run directory must belong to uid %u and not be writable by others",
				 dir, (unsigned int)euid);
	return 0;
}

/*
 * Our effective uid.  The front end (XIP_LIBC_ONLY) changes no
 * credentials: its own are still those its execve gave it, which the
 * auxiliary vector holds.
 */
uid_t xip_registry_euid(void)
{
	if (other_on)
		return other_uid;
#ifdef XIP_LIBC_ONLY
	return (uid_t)getauxval(AT_EUID);
#else
	return geteuid();
#endif
}

/* openat, not open: musl's open adds an fcntl for O_CLOEXEC */
/* @path_only: a descriptor only to look up in and fstat (O_PATH) */
static int rundir_openat(const char *dir, bool path_only)
{
	return openat(AT_FDCWD, dir, (path_only ? O_PATH : O_RDONLY) |
			      O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/*
 * Why the run directory @dir did not open (errno): what lstat finds in
 * its place (a symlink, no directory, another's), else the open's error.
 */
static int rundir_open_error(const char *dir, uid_t euid)
{
	int err = errno, ret;
	struct stat lst;

	if (lstat(dir, &lst) == 0) {
		ret = xip_registry_rundir_refuse(dir, &lst, euid);
		if (ret)
			return ret;
	}
	if (err == ELOOP || err == ENOTDIR)
		return xip_error(-ELOOP, "%s: run directory is a symbolic link: refusing",
				 dir);
	return xip_error(-err, "%s: %s", dir, strerror(err));
}

/*
 * Open the run directory, creating it when missing, and check it as ssh
 * and tmux check theirs, on the descriptor: opened O_NOFOLLOW|O_DIRECTORY
 * (no symlink, a directory), then fstat (ours, not writable by others).
 * Returns the descriptor; the path is left in @buf.
 */
static int rundir_open_as(char *buf, size_t len, bool path_only)
{
	uid_t euid = xip_registry_euid();
	struct stat st;
	int fd, ret = xip_registry_rundir_path(buf, len, euid);

	if (ret)
		return ret;
	fd = rundir_openat(buf, path_only);
	/* another user's is theirs to create */
	if (fd < 0 && errno == ENOENT && !other_on) {
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return xip_error(-errno,
					 "%s: cannot create run directory: %s",
					 buf, strerror(errno));
		fd = rundir_openat(buf, path_only);
	}
	if (fd < 0)
		return rundir_open_error(buf, euid);
	if (fstat(fd, &st) < 0)
		ret = xip_error(-errno, "%s: %s", buf, strerror(errno));
	else
		ret = xip_registry_rundir_refuse(buf, &st, euid);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

int xip_registry_rundir_open(char *buf, size_t len)
{
	return rundir_open_as(buf, len, false);
}

int xip_registry_dir(char *buf, size_t len)
{
	int fd = xip_registry_rundir_open(buf, len);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* ---- the lock ----------------------------------------------------------- */

static XIP_TLS int lock_fd = -1;
static XIP_TLS unsigned int lock_depth;

/* Another user's lock: a regular file of theirs (not a link to ours). */
static bool lock_theirs(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	       st.st_uid == other_uid;
}

int xip_registry_lock(void)
{
	char dir[XIP_PATH_MAX];
	int dfd, fd;

	if (lock_depth) {
		lock_depth++;
		return 0;
	}
	dfd = xip_registry_rundir_open(dir, sizeof(dir));
	if (dfd < 0)
		return dfd;
	/* another user's lock is theirs: never created by root */
	fd = openat(dfd, LOCK_NAME, O_RDWR | (other_on ? 0 : O_CREAT) |
		    O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC, 0600);
	close(dfd);
	if (fd < 0)
		return xip_error(-errno, "%s/%s: %s", dir, LOCK_NAME,
				 strerror(errno));
	if (other_on && !lock_theirs(fd)) {
		close(fd);
		return xip_error(-EPERM,
				 "%s/%s: not a file of uid %u: refusing", dir,
				 LOCK_NAME, (unsigned int)other_uid);
	}
	/* another user holds theirs as long as they like: root waits 5 s */
	for (int waited = 0;
	     flock(fd, LOCK_EX | (other_on ? LOCK_NB : 0)) < 0;) {
		struct timespec pause = { 0, 10 * 1000 * 1000 };

		if (errno == EINTR)
			continue;
		if (errno == EWOULDBLOCK && other_on &&
		    waited < OTHER_LOCK_WAIT_MS) {
			nanosleep(&pause, NULL);
			waited += 10;
			continue;
		}
		close(fd);
		if (errno == EWOULDBLOCK)
			return xip_error(-EBUSY,
					 "%s/%s: held by another process for %d s: uid %u's registry is busy",
					 dir, LOCK_NAME, OTHER_LOCK_WAIT_MS / 1000,
					 (unsigned int)other_uid);
		return xip_error(-errno, "%s/%s: lock: %s", dir, LOCK_NAME,
				 strerror(errno));
	}
	lock_fd = fd;
	lock_depth = 1;
	return 0;
}

void xip_registry_unlock(void)
{
	if (!lock_depth || --lock_depth)
		return;
	close(lock_fd);		/* drops the flock */
	lock_fd = -1;
}

/* ---- holder locks ------------------------------------------------------ */

/*
 * The holder lock of a segment (writers exclusive; readers, running
 * programs, save shared; detach exclusive, without waiting) is a flock on
 * a lock file in the run directory of the segment's owner, named after
 * the segment file's device and inode: ".lock:DEV:INO".  The run directory
 * is the owner's, made 0700 and refused when others may write to it
 * (rundir_refuse), and the lock file is 0600: only the owner's processes
 * and root can open it,
 * and so only they can take the lock.  A flock on the segment file itself
 * could be taken by any user who may open the file for reading (a shared
 * segment is often 0444), and so block everyone's exec, read and verify
 * (LOCK_EX) or root's write, truncate and detach (LOCK_SH).
 *
 * Other users never take the owner's lock: they cannot write the segment
 * anyway, and what they read of it they read as they find it.  A segment
 * named by path (not @NAME) is locked the same way, in the caller's own
 * run directory, by its device and inode: the caller's processes
 * coordinate with each other, and with its attached segment when the path
 * names one; other users' processes are neither waited for nor blocked.
 * Only where the caller has no run directory at all (a user without
 * XDG_RUNTIME_DIR or XIPTOOL_RUNDIR) does a path keep the file's own lock.
 *
 * An attach creates its segment's lock file (a fresh one) and holds it
 * while it fills the segment; a detach removes it after the segment file,
 * holding it: whoever opens the name after that locks a new file, and
 * then finds the segment file gone (segment_still_attached).  The lock
 * file of a plain path is removed by its last holder, when it closes the
 * segment and finds no one else holding it (a program run by exec keeps
 * it); a holder that finds it removed locks the one at its name now
 * (xip_seg_lockfile_take).
 */
#define HOLD_FMT "/.lock:%" PRIu64 ":%" PRIu64

/* The lock file of @dev/@ino, named in @buf from the run directory's path */
static int hold_path(uint64_t dev, uint64_t ino, char *buf, size_t len)
{
	int ret = xip_registry_rundir_path(buf, len, xip_registry_euid());
	size_t n;
	int m;

	if (ret)
		return ret;
	n = strlen(buf);
	m = snprintf(buf + n, len - n, HOLD_FMT, dev, ino);
	if (m < 0 || (size_t)m >= len - n)
		return xip_error(-ENAMETOOLONG, "%s: run directory name too long",
				 buf);
	return 0;
}

/*
 * Root in another user's registry (xip_registry_enter): the lock file is
 * opened from the run directory's checked descriptor, never created, and
 * taken only when it is a regular file of that user's: a name the user
 * planted (a link to a file of root's, a directory swapped after the
 * check) is neither followed nor made.
 */
static int other_hold_open(uint64_t dev, uint64_t ino)
{
	char dir[XIP_PATH_MAX], name[64];
	struct stat st;
	int dfd, fd;

	snprintf(name, sizeof(name), HOLD_FMT + 1, dev, ino);
	dfd = xip_registry_rundir_open(dir, sizeof(dir));
	if (dfd < 0)
		return dfd;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK |
		    O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return xip_error(-errno, "%s/%s: %s", dir, name,
				 strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != other_uid || st.st_nlink != 1) {
		close(fd);
		return xip_error(-EPERM,
				 "%s/%s: not a lock file of uid %u: refusing",
				 dir, name, (unsigned int)other_uid);
	}
	return fd;
}

/*
 * Open (create) the lock file of @dev/@ino by its path: the run directory
 * was opened and checked just before (it is ours and no one else writes
 * in it or above it).  Its name on the stack when short (exec's deepest
 * frames), else on the heap; into @name when given (XIP_PATH_MAX bytes).
 * @fresh: a new file, any old one removed.
 */
int xip_registry_hold_open_path(uint64_t dev, uint64_t ino, bool fresh,
			  char *name)
{
	char small[256], *path = name ? name : small;
	int fd, ret = hold_path(dev, ino, path,
				name ? XIP_PATH_MAX : sizeof(small));

	if (ret == -ENAMETOOLONG) {
		xip_error_clear();
		path = malloc(XIP_PATH_MAX);
		ret = path ? hold_path(dev, ino, path, XIP_PATH_MAX) :
			     xip_error(-ENOMEM, "out of memory");
	}
	if (ret) {
		if (path != small && path != name)
			free(path);
		return ret;
	}
	if (other_on) {		/* another user's: never by path, never made */
		if (path != small && path != name)
			free(path);
		return other_hold_open(dev, ino);
	}
	if (fresh && unlink(path) < 0 && errno != ENOENT)
		fd = -1;
	else
		/* openat, not open: musl's open adds an fcntl for O_CLOEXEC */
		fd = openat(AT_FDCWD, path, O_RDONLY | O_CREAT | O_NOFOLLOW |
			    O_NOCTTY | O_NONBLOCK | O_CLOEXEC |
			    (fresh ? O_EXCL : 0), 0600);
	if (fd < 0)
		fd = xip_error(-errno, "%s: %s", path, strerror(errno));
	if (path != small && path != name)
		free(path);
	return fd;
}

int xip_registry_hold_open(const struct xip_seg_entry *e, bool fresh)
{
	return xip_registry_hold_open_path(e->seg_dev, e->seg_ino, fresh, NULL);
}

void xip_registry_hold_remove(const struct xip_seg_entry *e)
{
	char path[XIP_PATH_MAX];
	int dfd;

	if (other_on) {		/* from the checked descriptor, not by path */
		dfd = xip_registry_rundir_open(path, sizeof(path));
		snprintf(path, sizeof(path), HOLD_FMT + 1, e->seg_dev,
			 e->seg_ino);
		if (dfd >= 0) {
			unlinkat(dfd, path, 0);
			close(dfd);
		}
	} else if (!hold_path(e->seg_dev, e->seg_ino, path, sizeof(path))) {
		unlink(path);
	}
	xip_error_clear();
}

/*
 * The holder lock's descriptor for the file @st opened by path, from the
 * caller's run directory (checked here), its name in @name (XIP_PATH_MAX
 * bytes), or < 0; *@none without a run directory (the file's own lock,
 * see above).
 */
int xip_registry_hold_open_plain(const struct stat *st, bool *none, char *name)
{
	char dir[XIP_PATH_MAX];
	int dfd;

	*none = xip_registry_rundir_path(dir, sizeof(dir), xip_registry_euid()) == -ENOENT;
	if (*none) {
		xip_error_clear();
		return -ENOENT;
	}
	dfd = xip_registry_rundir_open(dir, sizeof(dir));
	if (dfd < 0)
		return dfd;
	close(dfd);
	return xip_registry_hold_open_path((uint64_t)st->st_dev, (uint64_t)st->st_ino,
			      false, name);
}

/* ---- state files ------------------------------------------------------ */

/*
 * The run directory, opened and checked, for the record @name; @path_only:
 * a descriptor only to look up in (O_PATH, cheaper to open and close).
 */
static int state_dir(const char *name, char *dir, size_t len, bool path_only)
{
	int ret = xip_registry_name_check(name);

	return ret ? ret : rundir_open_as(dir, len, path_only);
}

/* Write the record to a new temporary file in @dfd; its name in @tmp. */
static int state_write_tmp(int dfd, const char *dir,
			   const struct xip_seg_entry *e, char *tmp,
			   size_t len)
{
	static XIP_TLS unsigned int seq;
	char *text = malloc(STATE_MAX);
	struct timespec ts;
	int fd = -1, n, ret = 0;

	tmp[0] = '\0';
	if (!text)
		return xip_error(-ENOMEM, "out of memory");
	n = xip_registry_format(e, text, STATE_MAX);
	if (n < 0) {
		free(text);
		return n;
	}
	/* a name of its own (".NAME.PID.SEQ.NSEC"), never a stale one */
	for (int tries = 0; fd < 0 && tries < 100; tries++) {
		clock_gettime(CLOCK_REALTIME, &ts);
		snprintf(tmp, len, ".%s.%d.%u.%ld", e->name, (int)getpid(),
			 seq++, ts.tv_nsec);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			    O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		ret = xip_error(-errno, "%s/%s: %s", dir, tmp, strerror(errno));
		free(text);
		tmp[0] = '\0';	/* not ours */
		return ret;
	}
	ret = xip_write_all(fd, text, (size_t)n);
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	if (ret)
		ret = xip_error(ret, "%s/%s: cannot write state file: %s", dir,
				tmp, strerror(-ret));
	if (close(fd) < 0 && !ret)
		ret = xip_error(-errno, "%s/%s: %s", dir, tmp, strerror(errno));
	free(text);
	if (ret) {
		unlinkat(dfd, tmp, 0);
		tmp[0] = '\0';
	}
	return ret;
}

/*
 * One function for a new record (link: refuses a name in use) and a
 * replaced one (rename over it).
 */
int xip_registry_store(const struct xip_seg_entry *e, int flags)
{
	char dir[XIP_PATH_MAX], tmp[XIP_SEG_NAME_MAX + 64];
	bool create = flags & XIP_REG_CREATE;
	int dfd, ret = xip_registry_lock();

	if (ret)
		return ret;
	dfd = state_dir(e->name, dir, sizeof(dir), false);
	if (dfd < 0) {
		xip_registry_unlock();
		return dfd;
	}
	ret = state_write_tmp(dfd, dir, e, tmp, sizeof(tmp));
	if (!ret && (create ? linkat(dfd, tmp, dfd, e->name, 0) :
			      renameat(dfd, tmp, dfd, e->name)) < 0)
		ret = create && errno == EEXIST ?
		      xip_error_reason(-EEXIST, XIP_R_NAME_TAKEN,
				       "%s: a segment of that name is already attached",
				       e->name) :
		      xip_error(-errno, "%s/%s: %s", dir, e->name,
				strerror(errno));
	if (!ret)
		XIP_DBG(REGISTRY, "%s record %s (type %s, file %s%s%s)",
			create ? "new" : "updated", e->name,
			xip_seg_type_name(e->type), e->path,
			e->loop[0] ? ", loop " : "", e->loop);
	/* what is left of ours: the link's source, a failed rename's */
	if (tmp[0] && (create || ret))
		unlinkat(dfd, tmp, 0);
	close(dfd);
	xip_registry_unlock();
	return ret;
}

int xip_registry_remove(const char *name)
{
	char dir[XIP_PATH_MAX];
	int dfd, ret = xip_registry_lock();

	if (ret)
		return ret;
	dfd = state_dir(name, dir, sizeof(dir), false);
	if (dfd < 0) {
		xip_registry_unlock();
		return dfd;
	}
	if (unlinkat(dfd, name, 0) < 0)
		ret = xip_error(-errno, "%s/%s: %s", dir, name, strerror(errno));
	else
		XIP_DBG(REGISTRY, "record %s removed", name);
	close(dfd);
	xip_registry_unlock();
	return ret;
}

/*
 * Read record @name of the directory @dfd into @e; @dfd is closed with
 * the record's descriptor (xip_close_two: one system call on every exec).
 * A record fits in STATE_FIRST bytes, read on the stack without asking
 * its size (a start of exec allocates nothing for it); the
 * directory is ours and not writable by others, and what is not a
 * regular file in it fails here (a directory) or has nothing to read (a
 * FIFO: opened without waiting) and fails to parse.
 */
#define STATE_FIRST 1024

static int state_read(int dfd, const char *name, struct xip_seg_entry *e,
		      bool brief)
{
	char first[STATE_FIRST], *text = first;
	ssize_t n, m = 0;
	int fd, ret;

	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY |
		    O_NONBLOCK);
	if (fd < 0) {
		ret = errno == ELOOP ? -EINVAL : -errno;
		close(dfd);
		return ret;
	}
	/* one read: short only at the end of a regular file */
	do
		n = read(fd, first, sizeof(first) - 1);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		n = -errno;
	if (n == (ssize_t)sizeof(first) - 1) {	/* a long one: the rest */
		text = malloc(STATE_MAX);
		if (text) {
			memcpy(text, first, (size_t)n);
			m = xip_read_full(fd, text + n, STATE_MAX - 1 - (size_t)n);
			n = m < 0 ? m : n + m;
		} else {
			text = first;
			n = -ENOMEM;
		}
	}
	xip_close_two(dfd, fd);
	if (n >= 0) {
		text[n] = '\0';
		ret = brief ? xip_registry_parse_brief(text, e) :
			      xip_registry_parse(text, e);
	} else {
		ret = n == -EISDIR ? -EINVAL : (int)n;
	}
	if (text != first)
		free(text);
	return ret;
}

/* ---- identity ---------------------------------------------------------- */

bool xip_registry_same_file(const struct xip_seg_entry *e,
			    const struct stat *st)
{
	return S_ISREG(st->st_mode) && e->seg_ino != 0 &&
	       (uint64_t)st->st_dev == e->seg_dev &&
	       (uint64_t)st->st_ino == e->seg_ino && st->st_uid == e->seg_uid;
}

int xip_registry_foreign_error(const struct xip_seg_entry *e)
{
	return xip_error(-ESTALE,
			 "@%s: %s is not the segment that was attached (device/inode changed): refusing",
			 e->name, e->path);
}

/* Is the recorded loop device still bound to the recorded file? */
bool xip_registry_loop_serves(const struct xip_seg_entry *e)
{
	struct loop_info64 li;
	struct stat st;
	bool ret;
	int fd;

	if (!e->loop[0] || strncmp(e->loop, "/dev/", 5))
		return false;
	fd = open(e->loop, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ret = fstat(fd, &st) == 0 && S_ISBLK(st.st_mode) &&
	      ioctl(fd, LOOP_GET_STATUS64, &li) == 0 &&
	      li.lo_device == e->seg_dev && li.lo_inode == e->seg_ino;
	close(fd);
	return ret;
}

/* Judge a record against its segment file (see enum xip_entry_state). */
static enum xip_entry_state entry_judge(const struct xip_seg_entry *e,
					bool probe)
{
	enum xip_entry_state state;
	struct stat st;
	int fd;

	if (lstat(e->path, &st) < 0)
		return errno == ENOENT ? XIP_ENTRY_GONE :
		       e->attaching ? XIP_ENTRY_ATTACHING : XIP_ENTRY_LIVE;
	if (!xip_registry_same_file(e, &st))
		return XIP_ENTRY_FOREIGN;
	if (!e->attaching)
		return XIP_ENTRY_LIVE;
	if (!probe)
		return XIP_ENTRY_ATTACHING;
	/*
	 * A running attach holds the segment's lock until it is recorded
	 * (it made the lock file before it recorded its claim: one created
	 * here is free, as the claim was abandoned).
	 */
	fd = xip_registry_hold_open(e, false);
	if (fd < 0) {
		xip_error_clear();
		return XIP_ENTRY_ATTACHING;
	}
	state = flock(fd, LOCK_EX | LOCK_NB) == 0 ? XIP_ENTRY_ABANDONED :
						    XIP_ENTRY_ATTACHING;
	close(fd);
	return state;
}

/* ---- another user's records ------------------------------------------ */

/*
 * May a directory @st, entered from @parent, lie on the path to a segment
 * of uid @uid that root acts on?  Nobody but root may rename what leads
 * to it: every directory above the segment's is root's, and where others
 * may write to one, only its sticky bit keeps them from renaming a root
 * entry.  The segment's own directory is the user's (in a directory
 * only root writes to) or root's and sticky, written by everyone, as
 * /dev/shm: a segment directory of theirs, as attach picks one.
 */
static bool segpath_dir_ok(const struct stat *parent, const struct stat *st,
			   bool last, uid_t uid)
{
	bool shared = (parent->st_mode & 0022) != 0;

	if (!S_ISDIR(st->st_mode))
		return false;
	if (shared && (!(parent->st_mode & S_ISVTX) || st->st_uid != 0))
		return false;
	if (!last)
		return st->st_uid == 0;
	return st->st_uid == uid ||
	       (st->st_uid == 0 && (st->st_mode & S_ISVTX) &&
		(st->st_mode & 0002));
}

/*
 * Is @path a file in a segment directory of uid @uid, reached from "/"
 * one directory at a time without following a symlink (openat,
 * O_NOFOLLOW), each of them one that only root can rename?  Then what
 * root does by that path afterwards (open, lstat, unlink) stays there.
 */
static bool segpath_ok(const char *path, uid_t uid)
{
	const char *p = path, *slash;
	struct stat parent, st;
	char comp[256];
	int dfd, fd;
	bool ok = true;

	if (path[0] != '/')
		return false;
	dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &parent) < 0) {
		if (dfd >= 0)
			close(dfd);
		return false;
	}
	while (ok && (slash = strchr(p + 1, '/'))) {
		size_t n = (size_t)(slash - p - 1);

		if (n == 0 || n >= sizeof(comp)) {
			ok = false;
			break;
		}
		memcpy(comp, p + 1, n);
		comp[n] = '\0';
		fd = openat(dfd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW |
			    O_CLOEXEC);
		ok = fd >= 0 && strcmp(comp, ".") && strcmp(comp, "..") &&
		     fstat(fd, &st) == 0 &&
		     segpath_dir_ok(&parent, &st, !strchr(slash + 1, '/'),
				    uid);
		close(dfd);
		dfd = fd;
		parent = st;
		p = slash;
	}
	if (dfd >= 0)
		close(dfd);
	/* a file name after the last directory */
	return ok && p != path && p[1] && strcmp(p + 1, ".") &&
	       strcmp(p + 1, "..");
}

/* "/dev/loopN", the only loop device a record of another user names. */
static bool loop_name_ok(const char *loop)
{
	const char *d = loop + strlen("/dev/loop");

	if (!loop[0])
		return true;
	if (strncmp(loop, "/dev/loop", strlen("/dev/loop")) || !*d)
		return false;
	return strspn(d, "0123456789") == strlen(d);
}

/*
 * A record of another user's registry is what that user wrote: root acts
 * on it only when it names a file of theirs (the identity every use
 * compares), in a segment directory of theirs, and a loop device.  The
 * owner is the registry's.
 */
static int foreign_record_check(const char *dir, const char *name,
				struct xip_seg_entry *e)
{
	if (e->seg_uid != other_uid || !loop_name_ok(e->loop) ||
	    !segpath_ok(e->path, other_uid))
		return xip_error(-EPERM,
				 "%s/%s: records %s, not a segment file of uid %u: refusing",
				 dir, name, e->path, (unsigned int)other_uid);
	e->owner = other_uid;
	return 0;
}

/* ---- records -------------------------------------------------------------- */

/*
 * Read the record @name as it is, not judged yet; @brief: into a zeroed
 * @e, only what opening the segment reads (xip_registry_parse_brief).
 * The run directory's name on the stack when it is short, else on the
 * heap: exec's deepest frames are these, and they fit a page of stack.
 */
int xip_registry_record_read(const char *name, struct xip_seg_entry *e, bool brief)
{
	char small[256], *dir = small;
	int dfd = state_dir(name, small, sizeof(small), true), ret;

	if (dfd == -ENAMETOOLONG) {
		xip_error_clear();
		dir = malloc(XIP_PATH_MAX);
		dfd = dir ? state_dir(name, dir, XIP_PATH_MAX, true) :
			    xip_error(-ENOMEM, "out of memory");
	}
	if (dfd < 0) {
		if (dir != small)
			free(dir);
		return dfd;
	}
	ret = state_read(dfd, name, e, brief);
	if (ret == -ENOENT)
		ret = xip_error(-ENOENT, "@%s: no attached segment of that name",
				name);
	else if (ret == -EINVAL)
		ret = xip_error(-EUCLEAN, "%s/%s: damaged state file", dir,
				name);
	else if (ret)
		ret = xip_error(ret, "%s/%s: %s", dir, name, strerror(-ret));
	else if (strcmp(e->name, name))
		ret = xip_error(-EUCLEAN, "%s/%s: state file names '%s'", dir,
				name, e->name);
	else if (other_on)
		ret = foreign_record_check(dir, name, e);
	if (dir != small)
		free(dir);
	return ret;
}

int xip_registry_read(const char *name, struct xip_seg_entry *e,
		      enum xip_entry_state *state, bool probe)
{
	int ret = xip_registry_record_read(name, e, false);

	if (!ret)
		*state = entry_judge(e, probe);
	return ret;
}

int xip_registry_lock_new(struct xip_seg_entry **e)
{
	int ret;

	*e = malloc(sizeof(**e));
	if (!*e)
		return xip_error(-ENOMEM, "out of memory");
	ret = xip_registry_lock();
	if (ret) {
		free(*e);
		*e = NULL;
	}
	return ret;
}

int xip_registry_clean(const struct xip_seg_entry *e)
{
	struct xip_seg_entry *cur;
	enum xip_entry_state state;
	struct stat st;
	int ret = xip_registry_lock_new(&cur);

	if (ret)
		return ret;
	ret = xip_registry_read(e->name, cur, &state, true);
	if (ret == -ENOENT) {
		ret = 0;		/* someone else was first */
		goto out;
	}
	if (ret || state == XIP_ENTRY_LIVE || state == XIP_ENTRY_ATTACHING ||
	    cur->seg_dev != e->seg_dev || cur->seg_ino != e->seg_ino)
		goto out;		/* not (or no longer) this stale record */
	if (state == XIP_ENTRY_ABANDONED && lstat(cur->path, &st) == 0 &&
	    xip_registry_same_file(cur, &st))
		xip_seg_unseal_path(cur->path);
	if (state == XIP_ENTRY_ABANDONED && lstat(cur->path, &st) == 0 &&
	    xip_registry_same_file(cur, &st) && unlink(cur->path) < 0 &&
	    errno != ENOENT) {
		ret = xip_error(-errno, "%s: %s", cur->path, strerror(errno));
		goto out;
	}
	/* still bound to the recorded file: released, at its last close when
	 * mounted, as detach --force does */
	if (xip_registry_loop_serves(cur))
		xip_loop_detach(cur->loop);
	/* its lock file, after the segment file (see "holder locks") */
	if (state == XIP_ENTRY_ABANDONED || state == XIP_ENTRY_GONE)
		xip_registry_hold_remove(cur);
	XIP_DBG(REGISTRY, "stale record %s (%s) cleaned", cur->name,
		state == XIP_ENTRY_ABANDONED ? "attach died" :
		state == XIP_ENTRY_GONE ? "file gone" : "another file");
	ret = xip_registry_remove(cur->name);
	if (!ret) {
		xip_error_clear();
		ret = 1;
	}
out:
	xip_registry_unlock();
	free(cur);
	return ret;
}

/* The loop device was released behind our back: forget it (locked). */
void xip_registry_loop_forget(struct xip_seg_entry *e)
{
	struct xip_seg_entry *cur = malloc(sizeof(*cur));
	enum xip_entry_state state;

	if (!cur || xip_registry_lock()) {
		free(cur);
		return;
	}
	if (!xip_registry_read(e->name, cur, &state, false) &&
	    state == XIP_ENTRY_LIVE && cur->seg_ino == e->seg_ino &&
	    cur->seg_dev == e->seg_dev && !strcmp(cur->loop, e->loop) &&
	    !xip_registry_loop_serves(cur)) {
		cur->loop[0] = '\0';
		xip_registry_store(cur, 0);
	}
	xip_registry_unlock();
	xip_error_clear();
	free(cur);
	e->loop[0] = '\0';
}

/* A live record: forget its loop device if it was released meanwhile. */
void xip_registry_live_loop_check(struct xip_seg_entry *e)
{
	if (e->loop[0] && !xip_registry_loop_serves(e))
		xip_registry_loop_forget(e);
	xip_error_clear();
}

int xip_registry_get(const char *name, struct xip_seg_entry *e)
{
	enum xip_entry_state state;
	int ret = xip_registry_read(name, e, &state, false);

	if (ret)
		return ret;
	switch (state) {
	case XIP_ENTRY_LIVE:
		xip_registry_live_loop_check(e);
		return 0;
	case XIP_ENTRY_ATTACHING:
		return xip_error(-EBUSY,
				 "@%s: still being attached (by process %d)",
				 name, (int)e->pid);
	case XIP_ENTRY_FOREIGN:
		return xip_registry_foreign_error(e);
	default:
		xip_registry_clean(e);
		return xip_error(-ENOENT, "@%s: no attached segment of that name",
				 name);
	}
}


int xip_registry_enter(uid_t uid)
{
	if (other_on || lock_depth)
		return xip_error(-EBUSY, "uid %u: a registry is in use",
				 (unsigned int)uid);
	other_uid = uid;
	other_on = true;
	return 0;
}

void xip_registry_leave(void)
{
	other_on = false;
}
