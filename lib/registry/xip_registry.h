/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The registry room: attached segments, their names and records.
 * Part of the public API (lib/xip.h includes it).
 */
#ifndef XIP_REGISTRY_H
#define XIP_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/xip_util.h"
#include "segment/xip_segment.h"

/* ------------------------------------------------------------------ */
/* Attached segments: the registry (registry.c)                        */
/* ------------------------------------------------------------------ */

#define XIP_SEG_NAME_MAX 64

/*
 * One attached segment, as recorded in its state file (one small file per
 * segment in the run directory: /run/xiptool for root,
 * $XDG_RUNTIME_DIR/xiptool otherwise, $XIPTOOL_RUNDIR when set).
 */
struct xip_seg_entry {
	/*
	 * First what opening the segment reads of its record, path last (a
	 * start of `xiptool exec` writes only these bytes of the entry)
	 */
	char name[XIP_SEG_NAME_MAX + 1];
	enum xip_seg_type type;
	uint64_t size;			/* bytes of data in the segment */
	/* exec maps a program's read-only pages at once (attach --populate) */
	bool populate;
	/*
	 * Attached lazily (attach --lazy): its fill state sits beside the
	 * record (.fill:DEV:INO in the run directory) until it is complete
	 */
	bool lazy;
	bool attaching;			/* claimed, being filled: not live */
	pid_t pid;			/* the attaching process */
	uid_t owner;
	/* the segment file's identity at attach: what every use checks */
	uint64_t seg_dev, seg_ino;
	uid_t seg_uid;
	char loop[64];			/* "/dev/loopN" or "" */
	char path[XIP_PATH_MAX];	/* the segment file (tmpfs, hugetlbfs) */
	/* the rest */
	bool compressed;		/* the image was gzip-compressed */
	/* admitted against a root hash (attach --root-hash) and sealed */
	bool verified;
	/*
	 * The segment file's st_ctim when it was sealed, in nanoseconds: any
	 * later change of its bytes or flags (chattr -i, a write) moves it,
	 * and root cannot set it back.  0: not recorded.
	 */
	uint64_t seal_ctime;
	/*
	 * The subject of the certificate whose signature of the root hash
	 * was checked against a trust store at attach ("" when none was)
	 */
	char signer[256];
	/* the image's owner, group and st_mode at attach (what save gives
	 * the file it writes); image_mode 0: no image file */
	uid_t image_uid;
	gid_t image_gid;
	mode_t image_mode;
	int64_t created;		/* seconds since the epoch */
	uint64_t offset;		/* loop offset (--file) */
	uint64_t sizelimit;		/* loop size limit (--file), 0: all */
	char label[128];		/* from libblkid ("" when none) */
	char uuid[64];
	char image[XIP_PATH_MAX];	/* source image ("" for sn/en) */
	char file[XIP_PATH_MAX];	/* --file: the file inside the image */
};

/*
 * Open what an image argument names: "@NAME" an attached segment, through
 * its record and with its type (read-only types refuse XIP_SEG_WRITE with
 * -EROFS), anything else a path (xip_seg_open()).
 */
int xip_spec_open(const char *spec, int flags, struct xip_seg **segp);
/* 1 to 64 of [A-Za-z0-9._-], not starting with '.': 0 or -EINVAL. */
int xip_registry_name_check(const char *name);
/* All live records sorted by name, stale ones removed; free() the array. */
int xip_registry_list(struct xip_seg_entry **entries, size_t *n);
/*
 * Every user's live records (root): its own registry, then each user's
 * in USERS/UID/xiptool (USERS: $XIPTOOL_USERS_RUNDIR, else /run/user),
 * read without changing anything there, sorted by owner, then name; the
 * owner is the registry's.  What root must not trust there (a run
 * directory not the user's, a record naming a file not theirs or outside
 * their segment directories, a damaged one) is left out and passed to
 * @warn (may be NULL) with the reason.  Another user gets their own.
 */
typedef void (*xip_registry_warn_fn)(void *arg, const char *msg);
int xip_registry_list_all(struct xip_seg_entry **entries, size_t *n,
			  xip_registry_warn_fn warn, void *arg);

/*
 * Does the attached segment @seg, as open now, meet @level of the policy
 * file (xip_policy_load): XIP_POLICY_VERIFIED, its record says verified
 * and the file open on @seg->fd is the recorded one, still sealed and
 * unchanged since it was sealed (list's VERIFIED); XIP_POLICY_SIGNED, and
 * its record names the signer.  0, or -EPERM with the reason ("the
 * segment is not verified"); a path, not an attached segment, is never
 * verified.
 */
int xip_registry_admits(const struct xip_seg *seg,
			enum xip_policy_level level);

/*
 * How much of the segment @e has arrived: "complete" (all of it: every
 * segment but a lazy one still being filled), "filling" or "failed" (a
 * fill that failed, or whose filler or state is gone); the bytes landed
 * (and checked) in *@filled; the filler's pid in *@filler while it runs
 * (its lock held), else 0.
 */
const char *xip_registry_fill_status(const struct xip_seg_entry *e,
				     uint64_t *filled, pid_t *filler);

/* ------------------------------------------------------------------ */
/* Records, the registry lock and holder locks, for attach and detach  */
/* ------------------------------------------------------------------ */

/* What a record stands for, judged against its segment file. */
enum xip_entry_state {
	XIP_ENTRY_LIVE,		/* the recorded file is in place */
	XIP_ENTRY_GONE,		/* the segment file is gone: stale */
	XIP_ENTRY_FOREIGN,	/* another file is in its place: stale */
	XIP_ENTRY_ATTACHING,	/* claimed by an attach still running */
	XIP_ENTRY_ABANDONED,	/* claimed by an attach that died: stale */
};

struct stat;

/*
 * Open the segment file of the attached segment @name with @oflags'
 * access mode (O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC added) and
 * check with fstat that it is the file recorded at attach (device, inode,
 * owner).  The record goes into @e.  Returns the descriptor, -ENOENT (not
 * attached), -EBUSY (still being attached), -ESTALE (another file) or
 * -EROFS (a read-only type, sr or er, asked for writing: refused before
 * the file is opened).
 */
int xip_registry_open(const char *name, int oflags, struct xip_seg_entry *e);
/* Same, for a record in hand. */
int xip_registry_open_entry(const struct xip_seg_entry *e, int oflags);
/* Is @st the segment file recorded in @e? */
bool xip_registry_same_file(const struct xip_seg_entry *e,
			    const struct stat *st);
/* Is the record's loop device still bound to the recorded file
 * (LOOP_GET_STATUS64: device and inode)? */
bool xip_registry_loop_serves(const struct xip_seg_entry *e);
/*
 * The run directory (created 0700 when missing), written into @buf.  It
 * must be a directory, not a symlink, owned by the caller and not
 * writable by group or others.  Test-only: the library opens it with
 * rundir_open() (registry.c).
 */
int xip_registry_dir(char *buf, size_t len);
/*
 * The caller's run directory, checked as xip_registry_dir() does, opened
 * (O_DIRECTORY, no link followed): the descriptor, its path in @buf; or
 * < 0 with the reason recorded.  Files beside the records (lock files,
 * fill states, the populate verdict) are opened from it with openat().
 */
int xip_registry_rundir_open(char *buf, size_t len);
/*
 * Root: from here on, this thread's registry is uid @uid's
 * (USERS/UID/xiptool, see xip_registry_list_all()), until
 * xip_registry_leave().  Its run directory and lock must be that user's,
 * and a record of it is read only when it names a file of theirs in a
 * segment directory reached without a symlink through directories only
 * root can rename, and a loop device or none (-EPERM otherwise).
 * Entered with the registry unlocked: -EBUSY otherwise.
 */
int xip_registry_enter(uid_t uid);
void xip_registry_leave(void);
/* A valid segment name derived from an image file name ("rootfs.img.gz"
 * gives "rootfs"). */
int xip_registry_default_name(const char *image, char *buf, size_t len);
/*
 * The registry lock (flock on .lock in the run directory): every change
 * of a record, segment file or loop device is made holding it, and a
 * reader that finds a stale record cleans it only under it, after reading
 * the record again.  Nests within one thread.
 */
int xip_registry_lock(void);
void xip_registry_unlock(void);
/*
 * The holder lock of the attached segment @e: its lock file in the run
 * directory, by the segment file's device and inode (registry.c, "holder
 * locks": a file only the owner and root can open, so that no other user
 * can take the lock), opened or created; @fresh: a new one, any old file
 * there removed first (attach).  The descriptor, or < 0.
 */
int xip_registry_hold_open(const struct xip_seg_entry *e, bool fresh);
/*
 * Give @seg, opened by descriptor (xip_seg_open_fd), the holder lock a
 * path of its file has (its lock file in the caller's run directory), as
 * xip_spec_open() would.  0 or < 0.
 */
int xip_registry_hold_seg(struct xip_seg *seg);
/*
 * The fill state file of the lazy segment @e (lib/segment/fill.c) in the
 * run directory, opened from its checked descriptor without following a
 * link: a new one for writing (@create, any old one removed first), else
 * read-only; it must be a regular file of the segment's owner.
 */
int xip_registry_fill_open(const struct xip_seg_entry *e, bool create);
void xip_registry_fill_remove(const struct xip_seg_entry *e);
/* Remove the lock file of @e (detach, after its segment file). */
void xip_registry_hold_remove(const struct xip_seg_entry *e);
/*
 * A new record to read into, with the registry locked: 0, or
 * -errno with nothing held.  Undone by xip_registry_unlock() and free().
 */
int xip_registry_lock_new(struct xip_seg_entry **e);
/*
 * Write a record atomically: a new one (XIP_REG_CREATE: -EEXIST when the
 * name is taken) or over the existing one.  Takes the lock.
 */
#define XIP_REG_CREATE	0x01
int xip_registry_store(const struct xip_seg_entry *e, int flags);
/*
 * Read one record as it is and judge it (*state): -ENOENT when there is
 * none.  @probe (with the lock held) tells an attach that died from one
 * still running.
 */
int xip_registry_read(const char *name, struct xip_seg_entry *e,
		      enum xip_entry_state *state, bool probe);
/*
 * Under the lock, read the record of @e->name again and, when it still
 * is the same stale record, remove it: a segment file only when it is
 * the one recorded (an abandoned attach), a loop device only when it
 * still serves the recorded file (at its last close when in use).
 * 1 when removed.
 */
int xip_registry_clean(const struct xip_seg_entry *e);
/*
 * Read one live record: -ENOENT when missing or its file is gone (then
 * removed), -ESTALE when another file is in its place, -EBUSY while it
 * is being attached.
 */
int xip_registry_get(const char *name, struct xip_seg_entry *e);
int xip_registry_remove(const char *name);
/* Find by name, "@NAME" or by loop device path ("/dev/loop3"). */
int xip_registry_find(const char *what, struct xip_seg_entry *e);

/* ------------------------------------------------------------------ */
/* In use? (busy.c)                                                    */
/* ------------------------------------------------------------------ */

/*
 * Is the segment in use: its loop device mounted or claimed, or its file
 * locked by a running program?  Returns 1 with the reason in @why, 0 when
 * free, negative on error.
 */
int xip_registry_busy(const struct xip_seg_entry *e, char *why, size_t len);
/*
 * Take the exclusive holder lock of @e (its lock file) without waiting,
 * and open its segment file, checked to be the one recorded: the segment
 * file's descriptor, the locked one in *@lockfd; -EBUSY with the reason
 * in @why while a running program or another holder has it, or < 0.
 */
int xip_registry_claim(const struct xip_seg_entry *e, char *why, size_t len,
		       int *lockfd);
/* The process holding a lock on @fd, as "held by process N (comm)". */
void xip_registry_holder(int fd, char *why, size_t len);

#endif /* XIP_REGISTRY_H */
