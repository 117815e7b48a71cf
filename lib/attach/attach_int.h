/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Internals of the attach room, shared by its files: attach.c (attach:
 * names, limits, the claim in the registry, the loop device),
 * attach_fill.c (filling the segment file from the image: plain, gzip,
 * NBD), detach.c (is a segment in use; detach) and save.c (a segment
 * copied to a file).
 */
#ifndef XIP_ATTACH_INT_H
#define XIP_ATTACH_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "attach/xip_attach.h"
#include "attach/nbd_int.h"
#include "util/xip_util.h"
#include "segment/xip_kcopy.h"
#include "segment/xip_segment.h"
#include "verity/xip_verity.h"
#include "registry/xip_registry.h"

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* The image an attach copies from. */
struct source {
	const char *path;
	int fd;
	struct stat st;		/* its owner and mode go to the segment */
	uint64_t size;		/* bytes of the file */
	bool gz;
	uint64_t hint;		/* gzip: the trailer's size (mod 2^32) */
};

/* The segment file being filled. */
struct segfile {
	const char *path;
	int fd;
	int lock_fd;		/* its holder lock, held while attaching */
	uint64_t align;		/* XIP_PMEM_ALIGN or the huge page size */
	bool huge;		/* on hugetlbfs: fill through the mapping */
	uint64_t cap;		/* bytes of the file and the mapping */
	uint8_t *map;
	bool created;		/* by this attach: removed when it fails */
};

/* The most a segment may hold, and how to say it was passed. */
struct limit {
	uint64_t bytes;
	const char *dir;	/* the segment's directory */
	uint64_t free;		/* bytes free there */
	bool given;		/* --size */
};

/* attach_fill.c */
int xip_attach_source_check_ext2(struct source *src);
/* Fill the segment; with @vs every block is hashed as it is copied. */
int xip_attach_fill(const struct xip_attach_opts *o, struct segfile *sf,
		    struct source *src, const struct limit *lim,
		    struct xip_verity_stream *vs, struct xip_seg_entry *e);
int xip_attach_fill_nbd(const struct xip_attach_opts *o, struct segfile *sf,
			struct xip_nbd *n, uint64_t size,
			struct xip_verity_stream *vs, struct xip_seg_entry *e);

/*
 * Test hook (attach_hooks.c): @done of @total pieces of a fill are
 * in.  In the test build, with XIPTOOL_TEST_ATTACH_PAUSE=FILE, the first
 * call past half creates FILE and waits there until a stop signal (the
 * interrupt flag) or 60 s; elsewhere it does nothing.
 */
void xip_attach_hook_fill(uint64_t done, uint64_t total);

/* lazy.c */
/*
 * attach --lazy: the segment sized, its fill state made, the tree (with
 * @vs) pulled and checked, the filler started (it takes over the
 * pull; *@nbdp is closed), the metadata brought in: then the caller
 * records the segment (e->lazy).
 */
int xip_attach_lazy(const struct xip_attach_opts *o, struct segfile *sf,
		    struct xip_nbd **nbdp, uint64_t size,
		    struct xip_verity_stream *vs, struct xip_seg_entry *e);
/* Stop the filler of the lazy segment @e, if it runs (SIGTERM, then wait
 * for its lock to go, at most XIP_LOCK_WAIT_MS). */
void xip_attach_lazy_stop(const struct xip_seg_entry *e);
/*
 * What cannot wait per block waits for the whole (save, detach --save):
 * 0 at once for a segment that is not lazy or is complete; else as
 * xip_fill_wait_all().
 */
int xip_attach_lazy_wait(const struct xip_seg_entry *e);

/* detach.c */

/*
 * attach_hooks.c: in the test build only, run the shell command
 * XIPTOOL_TEST_ATTACH_BEFORE_CLAIM between the choice of the segment
 * directory and the claim of the name (an empty function elsewhere).
 */
void xip_attach_hook_before_claim(void);

/*
 * attach_hooks.c: in the test build only, run the shell command
 * XIPTOOL_TEST_ATTACH_AFTER_SEAL once a verified segment is sealed, before
 * it is recorded (an empty function elsewhere).
 */
void xip_attach_hook_after_seal(void);
/*
 * attach_hooks.c: an ordering step (util/xip_hooks.h's xip_hook_step):
 * with XIPTOOL_TEST_CRASH_AFTER=N, the test build kills the attach there.
 */
void xip_attach_hook_step(void);

/*
 * populate.c: attach --populate auto's verdict, *@pays: measured once per
 * boot and kept in the run directory, or XIPTOOL_POPULATE_AUTO=yes|no.
 * 0, or -errno with an error.
 */
int xip_attach_populate_auto(bool *pays);

/* save.c */
int xip_attach_save_entry(const struct xip_seg_entry *e, const char *dest,
			  int locked);

/* segdir.c: where segment files live */

/* The directory of a new segment file (--hugepages: a huge-page one). */
int xip_attach_segment_dir(bool huge, char *buf, size_t len);
/* Mount root's huge-page tmpfs again when a detach unmounted it. */
int xip_attach_huge_tmpfs_again(const char *dir);
/* The segment directory opened without following a link, checked. */
int xip_attach_segdir_open(const char *dir);
/* A file name for the segment @name nobody can take first. */
int xip_attach_segfile_name(const char *name, char *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Pulling xiptool artifacts from registries (ocipull.c)              */
/* ------------------------------------------------------------------ */

struct xip_ocipull;
/*
 * The artifact @o->image (docker://...): its manifest fetched and
 * checked, the layer's size in *@size.  -EMEDIUMTYPE saying what it is
 * when it is not an xiptool artifact.
 */
int xip_ocipull_open(const struct xip_attach_opts *o, struct xip_ocipull **p,
		     uint64_t *size);
void xip_ocipull_close(struct xip_ocipull *p);
/* The layer of the manifest @json, when it is an xiptool artifact. */
int xip_ocipull_manifest(const char *json, size_t len, const char *what,
			 char *digest, size_t dlen, uint64_t *size);
/* The segment name of a reference: the repository's last component. */
int xip_ocipull_default_name(const char *spec, char *buf, size_t len);
/* A verity read-ahead (xip_verity_read_fn): a Range request. */
int xip_ocipull_read(void *ctx, void *buf, size_t len, uint64_t off);
/*
 * Stream the layer into @fd (or @map), hashed as it arrives, handed to
 * @vs (may be NULL): -EBADMSG when its digest or length is not the
 * manifest's, nothing of it to keep.
 */
int xip_ocipull_pull(struct xip_ocipull *p, int fd, void *map,
		     const char *path, struct xip_verity_stream *vs);
/* The segment file filled from the artifact (attach_fill.c). */
int xip_attach_fill_oci(const struct xip_attach_opts *o, struct segfile *sf,
			struct xip_ocipull *p, uint64_t size,
			struct xip_verity_stream *vs, struct xip_seg_entry *e);

/* ------------------------------------------------------------------ */
/* The policy file's attach rule (admit.c)                             */
/* ------------------------------------------------------------------ */

/*
 * Before anything is made: -EPERM naming the rule when the attach @o
 * checks nothing (no root hash) and its policy asks for verified or
 * signed.  Every way an attach verifies the image's bytes belongs there.
 */
int xip_attach_admit_early(const struct xip_attach_opts *o);
/*
 * What was made (@e), before it is recorded: verified and sealed, and
 * signed (its signer) when the policy asks; -EPERM naming the rule.
 */
int xip_attach_admit_made(const struct xip_attach_opts *o,
			  const struct xip_seg_entry *e);

#endif
