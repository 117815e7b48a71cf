/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The segment room: a memory mapping with direct_access, byte moves
 * through its descriptor, and the kernel loop devices bound to it.
 * Part of the public API (lib/xip.h includes it), with xip_loop.h and
 * xip_kcopy.h.
 */
#ifndef XIP_SEGMENT_H
#define XIP_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/xip_ext2.h"
#include "util/xip_util.h"

/* ------------------------------------------------------------------ */
/* Segments (segment.c): a memory mapping with direct_access          */
/* ------------------------------------------------------------------ */

enum xip_seg_kind {
	XIP_SEG_FILE,		/* a regular file (image file) */
	XIP_SEG_SHM,		/* a file on tmpfs or hugetlbfs */
	XIP_SEG_BLOCKDEV,	/* a block device */
	XIP_SEG_DAX,		/* a device-DAX character device */
};

/* Segment types, after the s390 DCSS types. */
enum xip_seg_type {
	XIP_SEGTYPE_NONE = 0,	/* a plain image, not an attached segment */
	XIP_SEGTYPE_SR,		/* shared read-only */
	XIP_SEGTYPE_SW,		/* shared writable */
	XIP_SEGTYPE_ER,		/* exclusive read-only */
	XIP_SEGTYPE_EW,		/* exclusive writable */
	XIP_SEGTYPE_SN,		/* shared, no data (zero-filled) */
	XIP_SEGTYPE_EN,		/* exclusive, no data (zero-filled) */
};

/* xip_seg_open() flags */
#define XIP_SEG_WRITE	0x01	/* map PROT_WRITE (fails with -EROFS if not) */
#define XIP_SEG_EXCL	0x02	/* take the exclusive holder lock */
/* an attached segment: take the shared holder lock at once when it is
 * free, so that xip_seg_lock(seg, false, ...) has nothing left to do */
#define XIP_SEG_SHARED	0x04
/*
 * read-only, and not mapped where the kernel can read it (not a DAX
 * device): xip_seg_range() and xip_seg_direct_access() give copies,
 * read with pread(2) into a few windows kept until the segment is
 * released; past them the whole segment is mapped (xip_seg_map).  For
 * a reader of a few blocks, such as exec's loader: a mapping of the
 * whole segment costs more than reading them.  Not for a caller that
 * writes through those pointers or takes offsets from seg->base.
 */
#define XIP_SEG_COPY	0x08

struct xip_seg_window;
struct xip_fill;

struct xip_seg {
	char *path;		/* the backing file or device */
	char *name;		/* segment name when attached (@NAME) */
	int fd;			/* open on the backing file, O_CLOEXEC */
	enum xip_seg_kind kind;
	enum xip_seg_type type;
	bool writable;		/* mapped with PROT_WRITE */
	bool gone;		/* released: direct_access gives -ENODEV */
	uint8_t *base;		/* start of the mapping */
	uint64_t size;		/* bytes of the backing object */
	/*
	 * Bytes of data: an attached segment's recorded size (its file is
	 * padded to whole 2 MiB sections past it), else size.
	 */
	uint64_t data_size;
	unsigned int page_size;	/* the host page size */
	/*
	 * The statfs(2) of a regular file's file system, taken when it was
	 * opened (fs_known): its type (f_type), block size and mount flags
	 * (f_flags: ST_NOEXEC...), for those who would ask again.
	 */
	bool fs_known;
	uint64_t fs_type, fs_bsize, fs_flags;
	/*
	 * The holder lock's descriptor: a lock file of the registry's, in
	 * the run directory of the caller (xip_spec_open), which no other
	 * user can open and so none can take; -1 for a segment opened by
	 * path through this room alone (xip_seg_open), whose holder lock is
	 * the file's own, as any process that opens the file can take it.
	 */
	int lock_fd;
	/*
	 * A lock file of a plain path: its name, so that its last holder
	 * removes it (xip_seg_release) and a holder that finds it removed
	 * locks the one at its name now; NULL otherwise.
	 */
	char *lock_path;
	bool held_shared;	/* the shared holder lock, taken at open */
	bool held_excl;		/* the exclusive one, taken before opening */
	/*
	 * exec maps a program's read-only pages at once (MAP_POPULATE): an
	 * attached segment whose attach measured that it pays here
	 * (xip_seg_populate_pays, the record's populate field)
	 */
	bool populate;
	bool copies;		/* XIP_SEG_COPY, and not mapped yet */
	unsigned int nwin;	/* windows read (XIP_SEG_COPY) */
	struct xip_seg_window *win;
	/*
	 * A lazy segment still being filled (attach --lazy): every range
	 * handed out waits for its blocks first (segment_int.h); NULL once
	 * complete, and for every other segment
	 */
	struct xip_fill *fill;
};

/*
 * Open the segment at @path (image file, block device, DAX device, tmpfs
 * file).  Files without any write permission bit refuse XIP_SEG_WRITE
 * with -EROFS.  An "@NAME" argument is resolved above this layer, by
 * xip_spec_open().
 */
int xip_seg_open(const char *path, int flags, struct xip_seg **segp);
/* Map an already open file descriptor (dup'ed; the caller keeps @fd). */
int xip_seg_open_fd(int fd, const char *path, int flags,
			struct xip_seg **segp);
/* Unmap the segment and close its descriptor; @seg itself stays. */
void xip_seg_release(struct xip_seg *seg);
/* Map the whole segment, if it is not (XIP_SEG_COPY). */
int xip_seg_map(struct xip_seg *seg);

/*
 * Does a read-only private mapping of the file @fd (@size bytes) cost
 * less to populate at once (MAP_POPULATE) than the faults it saves?  The
 * answer in *@pays: measured on this machine, this file (its first 2 MiB
 * past the first page), the best of a few rounds of each; populating
 * must cost less than half of a fault in every window the kernel maps
 * around one.  Files under 256 KiB are not measured (false).  Only reads
 * the file's pages.  0, or a negative errno when it cannot be mapped.
 */
int xip_seg_populate_pays(int fd, uint64_t size, bool *pays);
void xip_seg_close(struct xip_seg *seg);

/*
 * The block-device method direct_access: @sector is in 512-byte units and must be
 * page aligned (-EINVAL); the whole page must lie inside the segment
 * (-ERANGE); a released segment gives -ENODEV.  On success *addr points
 * at the page's bytes.
 */
int xip_seg_direct_access(struct xip_seg *seg, uint64_t sector,
			      void **addr);
/*
 * A bounds-checked pointer to @len bytes at byte offset @off (any
 * alignment), computed in 64 bits: -ERANGE if any byte lies outside.
 */
int xip_seg_range(struct xip_seg *seg, uint64_t off, uint64_t len,
		      void **addr);
/*
 * A lazy segment still being filled (attach --lazy): wait until every
 * block of [@off, @off + @len) has landed and been checked, asking the
 * filler for them first, at most the segment's deadline: 0 (at once for
 * any other segment), -EIO once the fill failed (naming the block),
 * -ETIMEDOUT.  xip_seg_range() and xip_seg_direct_access() wait so;
 * whoever maps the segment's descriptor waits first.  _all: the whole
 * segment (save, a loop device), @progress (may be NULL) told as it goes.
 */
int xip_seg_fill_wait(struct xip_seg *seg, uint64_t off, uint64_t len);
int xip_seg_fill_wait_all(struct xip_seg *seg,
			  void (*progress)(void *arg, uint64_t done,
					   uint64_t total),
			  void *arg);
/* msync for file-backed segments; fsync for block devices. */
int xip_seg_sync(struct xip_seg *seg);
/*
 * Into and out of a segment through its descriptor (pwrite, pread), not
 * its mapping: a page-table entry of a shared file mapping costs more
 * than a copy of the page on some machines.  Into the mapping only where
 * the descriptor cannot go (device DAX, hugetlbfs).  Every range is
 * checked against the segment's size (-ERANGE); a segment opened
 * read-only gives -EROFS.  0 or a negative errno; no error record.
 */
int xip_seg_pwrite(struct xip_seg *seg, uint64_t off, const void *buf,
		   uint64_t len);
int xip_seg_pread(struct xip_seg *seg, uint64_t off, void *buf,
		  uint64_t len);
/* Zeros written over [off, off + len) (the memory stays reserved). */
int xip_seg_zero(struct xip_seg *seg, uint64_t off, uint64_t len);
/*
 * Advisory holder lock (flock on seg->lock_fd, see there): writers take
 * it exclusive, readers and running programs shared.  Waits at most
 * @timeout_ms milliseconds, then -EBUSY.
 */
int xip_seg_lock(struct xip_seg *seg, bool exclusive, int timeout_ms);
/* What messages call the segment: @NAME when attached, else its path. */
const char *xip_seg_label(const struct xip_seg *seg);
/*
 * Keep the holder lock for as long as the segment's pages stay mapped
 * once its descriptors are closed (exec's jump): a flock belongs to the
 * open file, which a mapping keeps, so the lock file is mapped too (one
 * page, PROT_NONE, never touched).  0 or a negative errno.
 */
int xip_seg_pin_lock(struct xip_seg *seg);
const char *xip_seg_type_name(enum xip_seg_type type);
int xip_seg_type_parse(const char *name, enum xip_seg_type *type);
bool xip_seg_type_writable(enum xip_seg_type type);
bool xip_seg_type_exclusive(enum xip_seg_type type);

/* ------------------------------------------------------------------ */
/* Kernel loop devices (loop.c)                                        */
/* ------------------------------------------------------------------ */

/*
 * Claim every loop device bound to the file open on @fd (the same device
 * and inode) with O_EXCL, as the kernel claims a device it mounts.  When
 * one is mounted or held, -EBUSY names it and where it is mounted (@what
 * names the file in the message); otherwise the claims are returned in
 * *@fdsp (release with xip_loop_release_claims) and keep anyone from
 * mounting those devices while they are held.
 */
int xip_loop_claim_backing(int fd, const char *what, int **fdsp, size_t *np);
void xip_loop_release_claims(int *fds, size_t n);

/* ------------------------------------------------------------------ */
/* Opening with a holder lock (segment.c), for the registry            */
/* ------------------------------------------------------------------ */

/*
 * xip_seg_adopt() (segment_int.h) with @st the fstat of @fd the caller
 * has just made (not repeated) and @lock_fd the holder lock's descriptor (taken over too;
 * -1: the file's own, see struct xip_seg); XIP_SEG_SHARED in @flags: the
 * caller took the shared holder lock before that fstat, XIP_SEG_HELD_EX:
 * the exclusive one before it opened @fd.
 */
#define XIP_SEG_HELD_EX	0x100
struct stat;
int xip_seg_adopt_stat(int fd, const struct stat *st, int lock_fd,
		       const char *path, const char *name,
		       enum xip_seg_type type, int flags,
		       struct xip_seg **segp);
/*
 * The open of xip_seg_open(): the descriptor, or < 0 with the error
 * recorded.  Without XIP_SEG_HELD_EX, a writer waits for the file's own
 * holder lock first (xip_seg_wait_unheld).
 */
int xip_seg_open_path(const char *path, int flags);
/*
 * xip_seg_open() of a path whose holder lock is @lock_fd (taken over,
 * closed on failure), the lock file @lock_path (see struct xip_seg);
 * XIP_SEG_HELD_EX in @flags: the caller holds it exclusive already.
 */
int xip_seg_open_locked(const char *path, int flags, int lock_fd,
			const char *lock_path, struct xip_seg **segp);
/*
 * xip_seg_flock_wait() on the lock file *@fd named @path, which its last
 * holder may remove (NULL: never removed): when the file locked is no
 * longer linked, the one at @path now (created) replaces it in *@fd and
 * is locked instead.
 */
int xip_seg_lockfile_take(int *fd, const char *path, int op,
			  int timeout_ms);
/*
 * Take the holder lock on @fd (LOCK_EX or LOCK_SH), waiting at most
 * @timeout_ms milliseconds: 0, -EWOULDBLOCK when it stayed held, or
 * another negative errno.  No error record.
 */
int xip_seg_flock_wait(int fd, int op, int timeout_ms);
/*
 * Before a writer opens the regular file @path for writing, where its
 * holder lock is the file's own (no lock file, see struct xip_seg): wait,
 * at most @timeout_ms, until no other xiptool holds it (the holder lock,
 * taken through a read-only descriptor and let go at once), else -EBUSY
 * naming @what.  An open for writing breaks the read lease of a read-only NBD
 * file export (the nbdkit plugin) even when the writer then finds the
 * segment busy; this way a refused writer leaves it alone.
 */
int xip_seg_wait_unheld(const char *path, const char *what,
			    int timeout_ms);
/* How long writers wait for other holders, as xip_seg_lock does. */
#define XIP_LOCK_WAIT_MS	5000

/* ------------------------------------------------------------------ */
/* Sizes of segments for attach and for guests (segment.c)            */
/* ------------------------------------------------------------------ */

/* Without --size, a segment holds at most this, and what fits in the
 * file system of its file (the free space statfs reports). */
#define XIP_ATTACH_DEFAULT_MAX	(16ULL << 30)
/*
 * Segment files are padded to a multiple of this, so that a guest can map
 * one as a pmem device (virtio-pmem or an nvdimm): nd_pmem refuses a region
 * that is not made of whole 2 MiB subsections ("misaligned, unable to
 * map").  The registry's size and save keep the image's own size.
 */
#define XIP_PMEM_ALIGN		(2ULL << 20)

/*
 * Can a guest map a segment of @size as pmem under DAX: @block_size ==
 * @page_size (the guest's ext4 refuses DAX otherwise) and a whole number
 * of XIP_PMEM_ALIGN sections?  1, or 0 with the reason in @why.
 */
int xip_pmem_capable(uint64_t size, unsigned int block_size,
		     unsigned int page_size, char *why, size_t whylen);

/*
 * Seal (or unseal) the segment file open on @fd: FS_IMMUTABLE_FL, which
 * tmpfs supports since Linux 6.0; then not even root opens it for
 * writing, nor unlinks it, without CAP_LINUX_IMMUTABLE.  -EOPNOTSUPP
 * where the file system has no such flag (hugetlbfs).
 */
int xip_seg_seal(int fd, bool on);
/* Is the file open on @fd sealed?  1, 0, or < 0. */
int xip_seg_sealed(int fd);
/* Unseal the file at @path if it is sealed (before an unlink). */
void xip_seg_unseal_path(const char *path);

/* ------------------------------------------------------------------ */
/* The segment io_manager (xipio.c)                                    */
/* ------------------------------------------------------------------ */

#ifndef XIP_LIBC_ONLY
/* A libext2fs io_manager whose device is a segment: memcpy, no cache. */
extern io_manager xip_io_manager;

/*
 * Write the channel name of @seg to pass to ext2fs_open2() or
 * ext2fs_initialize() into @buf: it names @seg itself (its address), so
 * it is good while @seg is open, and nothing is to be undone.  0, or
 * -ENAMETOOLONG when @len is too small.
 */
int xip_io_register(struct xip_seg *seg, char *buf, size_t len);
#endif

#endif /* XIP_SEGMENT_H */
