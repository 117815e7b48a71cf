/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The segment room: a memory mapping with direct_access, byte moves
 * through its descriptor, and the kernel loop devices bound to it.
 * Part of the public API: include "xip.h", which includes this header.
 */
#ifndef XIP_SEGMENT_H
#define XIP_SEGMENT_H

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

#endif /* XIP_SEGMENT_H */
