/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The engine room: images opened with libext2fs, get_xip_page, read,
 * write, truncate, create, extract.
 * Part of the public API: include "xip.h", which includes this header.
 */
#ifndef XIP_ENGINE_H
#define XIP_ENGINE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/xip_ext2.h"
#include "segment/xip_segment.h"
#include "reader/xip_image.h"
#include "reader/xip_reader.h"

/* ------------------------------------------------------------------ */
/* Images, writers and libext2fs (image.c)                            */
/* ------------------------------------------------------------------ */

/*
 * Open the ext2 file system on a segment (path or @NAME).  The superblock
 * is validated against the segment before libext2fs sees it; the group
 * descriptors are checked with ext2fs_check_desc().
 */
int xip_image_open(const char *spec, int flags, struct xip_image **imgp);
/* Same, on a segment the caller opened; the image takes ownership. */
int xip_image_open_segment(struct xip_seg *seg, int flags,
			   struct xip_image **imgp);
/*
 * Writers (XIP_IMG_WRITE) follow ext2's own protocol, as the kernel does
 * on a read-write mount: an image whose s_state is not clean (an earlier
 * writer stopped before its close, errors were recorded, or the kernel
 * has it mounted read-write) is refused with -EUCLEAN; otherwise
 * EXT2_VALID_FS is cleared on disk (and synced) before the first change
 * and set again by xip_image_close() after the final flush.  The loop
 * devices of the image (and a block device image itself) are claimed with
 * O_EXCL for as long as the image is open: -EBUSY while the kernel has one
 * mounted.
 */
/*
 * Mark a writer's image not clean on disk now, as a read-write mount does,
 * for writers that change it behind the engine's back (a served file's
 * blocks); the file operations do it themselves at their first change.
 */
int xip_image_begin_change(struct xip_image *img);
/* Write back dirty metadata (when writable) and msync; s_state stays. */
int xip_image_flush(struct xip_image *img);

/*
 * Identify what a segment holds with libblkid.  Returns 0 for ext2/3/4
 * (type written to @type), -EMEDIUMTYPE for another known format (its name
 * in @type and the error record), -ENODATA when nothing is recognised.
 */
int xip_identify(struct xip_seg *seg, char *type, size_t len);

struct xip_image_info {
	uint64_t size;			/* bytes of the segment */
	unsigned int block_size;
	unsigned int page_size;		/* host page size */
	bool xip_capable;
	char xip_reason[256];		/* why not, when !xip_capable */
	bool pmem_capable;		/* xip_pmem_capable() */
	char pmem_reason[256];		/* why not, when !pmem_capable */
	uint32_t groups;
	uint64_t blocks, blocks_free, blocks_reserved;
	uint32_t inodes, inodes_free;
	char label[EXT2_LABEL_LEN + 1];
	char uuid[37];
	char fstype[16];		/* ext2, ext3 or ext4 */
	uint16_t state;
	uint32_t rev_level;
	uint32_t features_compat, features_incompat, features_ro_compat;
};
int xip_image_info(const struct xip_image *img, struct xip_image_info *info);

/* ------------------------------------------------------------------ */
/* The get_xip_page engine and file operations (page.c, file.c)       */
/* ------------------------------------------------------------------ */

/*
 * The address-space method get_xip_page: a pointer to the bytes of file page @pgoff
 * (pages of the image's block size) of inode @ino inside the segment.  The
 * block number is validated against the image and the segment before the
 * pointer is formed.  A hole gives -ENODATA unless @create, which
 * allocates a block near the file's others, clears it, then links it in.
 * The seed-named entry point of the engine (get_xip_page), kept as the
 * documented API; the commands move bytes by runs (xip_file_read_fd),
 * so only the unit tests and the fuzzers call it today.
 */
int xip_get_page(struct xip_image *img, ext2_ino_t ino, uint64_t pgoff,
		 bool create, void **ptr);

/* do_xip_mapping_read: up to @len bytes at @off, stops at i_size. */
ssize_t xip_file_read(struct xip_image *img, ext2_ino_t ino, uint64_t off,
		      void *buf, size_t len);
/*
 * generic_file_xip_write: allocates holes, grows i_size, updates times.
 * All or nothing: @len, or a negative errno with the file as it was (size,
 * blocks, i_blocks, times; the blocks it had taken free again).  Every
 * block the write needs is allocated before a byte is copied, so -ENOSPC
 * and -EFBIG change nothing at all; -EINTR when the interrupt flag is set.
 */
ssize_t xip_file_write(struct xip_image *img, ext2_ino_t ino, uint64_t off,
		       const void *buf, size_t len);
/*
 * The same, the bytes taken from the regular file @fd at @fd_off (its
 * position is not used): the kernel copies them into the segment
 * (copy_file_range), a run of blocks at a time.  @fd_name names it in
 * errors.  All or nothing, as xip_file_write: never a short count.  A
 * source shorter than @fd_off + @len fails with -EIO before anything
 * changes; one that fails or ends early while it is being copied (it
 * shrank, or a read error) gives its error (-EIO when it ended) with the
 * file's size, blocks and free blocks as they were.  The new blocks are
 * filled before any old block is overwritten: only a source that fails
 * while old blocks are overwritten leaves some of them changed.
 */
ssize_t xip_file_write_fd(struct xip_image *img, ext2_ino_t ino, uint64_t off,
			  int fd, uint64_t fd_off, size_t len,
			  const char *fd_name);
/* xip_truncate_page + block freeing; growing leaves a hole. */
int xip_file_truncate(struct xip_image *img, ext2_ino_t ino, uint64_t size);

/*
 * The read actor of the kernel's do_xip_mapping_read: called with consecutive pieces of the file in
 * file order, each a pointer straight into the segment (or to a page of
 * zeros for a hole).  A negative return stops the read with that error.
 */
typedef int (*xip_read_actor)(void *ctx, const void *data, size_t len);
/*
 * do_xip_mapping_read with an actor: up to @len bytes at @off, stops at
 * i_size.  Returns the bytes passed to the actor; an error after some
 * bytes returns the count (the next call reports the error).
 */
ssize_t xip_file_read_actor(struct xip_image *img, ext2_ino_t ino,
			    uint64_t off, size_t len, xip_read_actor actor,
			    void *ctx);
/*
 * The same bytes written to @fd at its file position by the kernel
 * (copy_file_range to a regular file, splice to a pipe, sendfile to the
 * rest: one call per contiguous run of blocks, holes as zeros), without
 * mapping the data in; through the mapping where the kernel has no path.
 * @fd_name names @fd in errors.  Returns the bytes written, or -errno (no
 * partial count).
 */
ssize_t xip_file_read_fd(struct xip_image *img, ext2_ino_t ino, uint64_t off,
			 size_t len, int fd, const char *fd_name);

/*
 * Create an empty regular file @path (its parent must exist) with the
 * permission bits @mode; -EEXIST if the name exists.
 */
int xip_create(struct xip_image *img, const char *path, unsigned int mode,
	       ext2_ino_t *ino);

/* ------------------------------------------------------------------ */
/* Extracting a tree from an image (extract.c)                         */
/* ------------------------------------------------------------------ */

struct xip_extract_opts {
	bool owners;		/* set owners (chown): root's default */
	bool xattrs;		/* copy user., trusted., security., ACLs */
};

struct xip_extract_result {
	uint64_t files, bytes;	/* regular files (first names), data bytes */
	uint64_t links;		/* further names of an inode (hard links) */
	uint64_t others;	/* symlinks, devices, FIFOs, sockets */
};

/*
 * Write @path of @img (the whole tree for "/") into the directory @dir,
 * reading through the engine.  For "/" the image's top becomes @dir (a
 * new one, which gets the top's metadata; in an existing @dir the
 * entries are added); otherwise @dir/<last name of @path> is made, @dir
 * itself when missing.  @dir is reached from "/" component by component
 * with O_NOFOLLOW: a symlink on the way is -ELOOP, a directory that
 * another user owns or that its group or others can write to without the
 * sticky bit is -EPERM.  Every entry is made relative to its parent's
 * descriptor, O_NOFOLLOW and O_EXCL, in a private staging directory that
 * is renamed into place when complete and removed on failure.  A name of
 * the image that could leave its directory ("", ".", "..", a '/'), a
 * directory met twice and a file met more often than its link count are
 * -EUCLEAN, a directory loop -ELOOP; a name that exists in @dir
 * already is -EEXIST; once the library's interrupt flag is set
 * (xip_set_interrupt) it stops with -EINTR: then nothing is left behind.
 */
int xip_extract(struct xip_image *img, const char *path, const char *dir,
		const struct xip_extract_opts *o,
		struct xip_extract_result *res);
/* Is @name one entry of a directory: not empty, ".", ".." nor with '/'? */
bool xip_extract_name_ok(const char *name);

/* ------------------------------------------------------------------ */
/* Serving a file over NBD (nbdmap.c; the server: nbdkit/xiptool.c)   */
/* ------------------------------------------------------------------ */

/* One piece of a byte range of a file, as the plugin serves it. */
struct xip_nbd_piece {
	uint64_t len;		/* bytes of the piece (> 0) */
	bool hole;		/* no block behind it: reads as zeros */
	uint64_t seg_off;	/* byte offset in the segment (not a hole) */
};
/*
 * Check the runs of a file (xip_file_runs) before serving them: in file
 * order, not overlapping, every block inside the segment of @seg_size
 * bytes with blocks of @bs bytes.  -EUCLEAN names @what otherwise.
 */
int xip_nbd_runs_check(const struct xip_run *runs, size_t nruns,
		       unsigned int bs, uint64_t seg_size, const char *what);
/*
 * The piece of a file at byte @off, at most @len bytes long (len > 0):
 * inside a run, or a hole up to the next run.  @runs were checked.
 */
void xip_nbd_piece(const struct xip_run *runs, size_t nruns,
		   unsigned int bs, uint64_t off, uint64_t len,
		   struct xip_nbd_piece *p);

#endif /* XIP_ENGINE_H */
