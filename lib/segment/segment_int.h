/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Internal interface of the segment room: attach sizes and alignment
 * (segment.c), kernel loop devices (loop.c) and the libext2fs io_manager
 * whose device is a segment (xipio.c).  Not part of the public API.
 */
#ifndef XIP_SEGMENT_INT_H
#define XIP_SEGMENT_INT_H

#include "xip.h"

/*
 * xip_seg_populate_pays's rule: populating a span must cost less than
 * half of faulting in every window of it (a program's start touches
 * most of its text's windows: busybox 17 of 25).
 */
bool xip_populate_beats_faults(uint64_t fault_ns, uint64_t populate_ns);

/* A window of copies of a segment opened with XIP_SEG_COPY (segment.c) */
struct xip_seg_window {
	uint64_t off, len;	/* the bytes of the segment it holds */
	uint8_t *buf;
};

/*
 * Set up a segment on @fd, which it takes over (closed on failure):
 * @name and @type are an attached segment's (the registry opens those),
 * NULL and XIP_SEGTYPE_NONE for a plain path.
 */
int xip_seg_adopt(int fd, const char *path, const char *name,
		      enum xip_seg_type type, int flags,
		      struct xip_seg **segp);
/*
 * Same, with @st the fstat of @fd the caller has just made (not
 * repeated) and @lock_fd the holder lock's descriptor (taken over too;
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
/* The fill state of a lazy segment (fill.c)                          */
/* ------------------------------------------------------------------ */

#define XIP_FILL_BLOCK	4096u	/* a bit of the bitmap */

enum xip_fill_state {
	XIP_FILL_FILLING = 1,
	XIP_FILL_COMPLETE = 2,
	XIP_FILL_FAILED = 3,
};

/* The header page of the state file (its bitmap follows at 4096). */
struct xip_fill_hdr {
	char magic[8];		/* "xipfill1" */
	uint32_t state;		/* enum xip_fill_state */
	uint32_t seq;		/* futex word: bumped at every change */
	uint64_t size;		/* bytes of the image */
	uint64_t nblocks;	/* bits of the bitmap */
	uint64_t filled;	/* bytes landed and checked */
	uint64_t bad_block;	/* the block that failed, or UINT64_MAX */
	uint64_t requests;	/* server reads made for readers' requests */
	int32_t pid;		/* the filler */
	uint32_t timeout_ms;	/* how long a reader waits */
	uint32_t ready;		/* the metadata are in: attach returned */
	uint32_t pad;
	char sock[64];		/* the filler's abstract socket */
	char msg[256];		/* why it failed */
};

/* Blocks of the bitmap for an image of @size bytes. */
uint64_t xip_fill_blocks(uint64_t size);
/*
 * The filler's state on the state file open for writing on @fd (taken
 * over): sized, every bit clear, state filling.
 */
int xip_fill_create(int fd, uint64_t size, unsigned int timeout_ms,
		    struct xip_fill **fp);
/* A reader's, read-only, checked (-EUCLEAN when damaged); @fd taken over */
int xip_fill_open(int fd, struct xip_fill **fp);
void xip_fill_close(struct xip_fill *f);
const struct xip_fill_hdr *xip_fill_header(const struct xip_fill *f);
/* The state; filling with the filler's lock not held is failed. */
enum xip_fill_state xip_fill_state(const struct xip_fill *f);
/* One test: complete? (no system call) */
bool xip_fill_complete(const struct xip_fill *f);
uint64_t xip_fill_filled(const struct xip_fill *f);
/* Has block @blk landed (and been checked)?  Past the image: true. */
bool xip_fill_has(const struct xip_fill *f, uint64_t blk);
/* The first of [@first, @first + @n) not landed, or @first + @n. */
uint64_t xip_fill_missing(const struct xip_fill *f, uint64_t first,
			  uint64_t n);
/*
 * Wait until every block of [@off, @off + @len) has landed, asking the
 * filler for them: 0; -EIO once the fill failed or its filler is gone,
 * naming the first missing block and @what; -ETIMEDOUT past the
 * segment's deadline.
 */
int xip_fill_wait(struct xip_fill *f, uint64_t off, uint64_t len,
		  const char *what);
/* Wait for the whole fill (its deadline: no progress for that long). */
int xip_fill_wait_all(struct xip_fill *f, const char *what,
		      void (*progress)(void *arg, uint64_t done,
				       uint64_t total),
		      void *arg);
/* The filler's side: blocks [@first, @first + @n) landed and checked. */
void xip_fill_land(struct xip_fill *f, uint64_t first, uint64_t n);
void xip_fill_end(struct xip_fill *f, enum xip_fill_state state,
		  uint64_t bad_block, const char *msg);
void xip_fill_set_ready(struct xip_fill *f);
void xip_fill_count_request(struct xip_fill *f);
/* The filler's socket for requests (its name into the header). */
int xip_fill_listen(struct xip_fill *f);
/* One request from @sock: 1 with its run, 0 when none is waiting. */
int xip_fill_recv(int sock, uint64_t *first, uint64_t *n);

/* ------------------------------------------------------------------ */
/* Kernel loop devices (loop.c)                                        */
/* ------------------------------------------------------------------ */

#define XIP_LOOP_RDONLY	0x01

/*
 * Bind a free loop device to @path (LOOP_CTL_GET_FREE, LOOP_CONFIGURE,
 * falling back to LOOP_SET_FD + LOOP_SET_STATUS64), retrying when another
 * process takes the device first.  The device name goes into @dev.
 */
int xip_loop_attach(const char *path, uint64_t offset, uint64_t sizelimit,
		    int flags, char *dev, size_t len);
/* Unbind (LOOP_CLR_FD); a device still open is cleared on last close. */
int xip_loop_detach(const char *dev);
/* The backing file of a bound loop device (-ENXIO when unbound). */
int xip_loop_backing_file(const char *dev, char *buf, size_t len);
/* Is the device mounted or claimed?  1 with the reason, 0, or < 0. */
int xip_loop_busy(const char *dev, char *why, size_t len);
/* Is the loop device read-only?  1, 0 or < 0. */
int xip_loop_read_only(const char *dev);
/*
 * Add the claim @fd to the claims *@fdsp (*@np of them), as
 * xip_loop_claim_backing() does: 0, or -ENOMEM with @fd closed.
 */
int xip_loop_claim_add(int **fdsp, size_t *np, int fd);

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
/* The segment behind an io_channel of xip_io_manager (NULL otherwise).
 * Test-only. */
struct xip_seg *xip_io_segment(io_channel channel);
#endif

#endif
