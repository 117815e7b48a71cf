/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The registry room: attached segments, their names and records.
 * Part of the public API: include "xip.h", which includes this header.
 */
#ifndef XIP_REGISTRY_H
#define XIP_REGISTRY_H

/* ------------------------------------------------------------------ */
/* Attached segments: the registry (registry.c)                        */
/* ------------------------------------------------------------------ */

#define XIP_SEG_NAME_MAX 64
#define XIP_PATH_MAX 4096

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

#endif /* XIP_REGISTRY_H */
