/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The reader room: the libc-only ext2 reader every read goes through
 * (the xiptool front end uses it without libext2fs).
 * Part of the public API: include "xip.h", which includes this header.
 */
#ifndef XIP_READER_H
#define XIP_READER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "reader/xip_image.h"
#include "util/xip_ext2.h"
#include "segment/xip_segment.h"

/* ------------------------------------------------------------------ */
/* Images, read side (fsread.c)                                       */
/* ------------------------------------------------------------------ */

struct xip_image;

/* xip_image_open() flags */
#define XIP_IMG_WRITE	0x01	/* open for writing (exclusive lock) */
#define XIP_IMG_NOLOCK	0x02	/* take no holder lock */
#define XIP_IMG_FORCE	0x04	/* skip the descriptor check (verify) */
/* read what is asked for, without mapping the segment (XIP_SEG_COPY) */
#define XIP_IMG_COPY	0x08
/*
 * open (and lock) the segment only: the file system is opened by the
 * first xip_image_open_fs(), which every other call needs first
 * (xip_image_open_read() only)
 */
#define XIP_IMG_DEFER_FS 0x10

/*
 * Open the image for reading only, without libext2fs (fsread.c): the
 * superblock and group descriptors are checked as by xip_image_open(),
 * and lookup, inodes, block maps, directories and symlinks work; writers
 * and xip_image_info() need xip_image_open().  XIP_IMG_NOLOCK,
 * XIP_IMG_FORCE and XIP_IMG_COPY are honoured.
 */
int xip_image_open_read(const char *spec, int flags, struct xip_image **imgp);
int xip_image_open_segment_read(struct xip_seg *seg, int flags,
				struct xip_image **imgp);
/*
 * The file system of an image opened with XIP_IMG_DEFER_FS, opened and
 * checked as xip_image_open_read() would (0 when it is open already).
 */
int xip_image_open_fs(struct xip_image *img);
/* Flush, mark clean (writers), close the file system and the segment. */
int xip_image_close(struct xip_image *img);

/* The segment an image lives on, and its block size. */
struct xip_seg *xip_image_seg(const struct xip_image *img);
unsigned int xip_image_block_size(const struct xip_image *img);

/* ------------------------------------------------------------------ */
/* Lookup, inodes, block maps (fsdir.c, fsmap.c, fsread.c)            */
/* ------------------------------------------------------------------ */

/*
 * The physical block behind file page @pgoff (0 for a hole), validated:
 * the seed's bmap, kept as the documented API beside xip_get_page; the
 * commands use whole runs (xip_file_runs), only tests call it today.
 */
int xip_bmap(struct xip_image *img, ext2_ino_t ino, uint64_t pgoff,
	     blk64_t *pblk);

/* xip_lookup() flags */
#define XIP_LOOKUP_NOFOLLOW	0x01	/* do not follow a final symlink */

/*
 * Resolve an absolute path inside the image ("." and ".." handled,
 * symlinks followed inside the image with a loop limit, never above the
 * root).  -ENOENT, -ENOTDIR, -ELOOP as the kernel would.
 */
int xip_lookup(struct xip_image *img, const char *path, int flags,
	       ext2_ino_t *ino);
/* Read an inode, its number checked against the image first. */
int xip_read_inode(struct xip_image *img, ext2_ino_t ino,
		   struct ext2_inode_large *inode);

/* A run of physically contiguous data blocks of a file. */
struct xip_run {
	uint64_t lblk;		/* first file page */
	blk64_t pblk;		/* first physical block */
	uint64_t len;		/* number of blocks */
};
/*
 * The data runs of a file in file order, holes left out (the array is
 * malloc'ed; free() it).
 */
int xip_file_runs(struct xip_image *img, ext2_ino_t ino,
		  struct xip_run **runs, size_t *nruns);
/*
 * The regular file at @path: its inode in *@in and its data runs, as
 * xip_file_runs() gives them (free() *@runs); -EINVAL when it is not a
 * regular file.
 */
int xip_file_runs_path(struct xip_image *img, const char *path,
		       struct ext2_inode_large *in, struct xip_run **runs,
		       size_t *nruns);

/* A directory entry (xip_dir_list). */
struct xip_dirent {
	ext2_ino_t ino;
	unsigned int type;		/* EXT2_FT_* from the entry */
	char name[EXT2_NAME_LEN + 1];
};
/*
 * The entries of directory @ino in on-disk order, "." and ".." included
 * (the array is malloc'ed; free() it).  -ENOTDIR for a non-directory.
 */
int xip_dir_list(struct xip_image *img, ext2_ino_t ino,
		 struct xip_dirent **ents, size_t *nents);

/* The target of symlink @ino, NUL-terminated; -EINVAL if not a symlink. */
int xip_readlink(struct xip_image *img, ext2_ino_t ino, char *buf,
		 size_t len);

/* What stat shows of an inode. */
struct xip_stat {
	ext2_ino_t ino;
	uint32_t mode;			/* type and permission bits */
	uint32_t uid, gid;
	uint32_t links;
	uint64_t size;
	uint64_t sectors;		/* i_blocks in 512-byte units */
	uint32_t flags;			/* i_flags */
	uint32_t generation;
	int64_t atime, mtime, ctime;	/* seconds since the epoch */
	uint32_t atime_ns, mtime_ns, ctime_ns;
	uint64_t rdev;			/* device files: the device number */
	bool extents;			/* mapped by an extent tree */
	uint64_t data_blocks;		/* mapped file pages below i_size */
	uint64_t hole_blocks;		/* unmapped file pages below i_size */
	size_t nruns;			/* physically contiguous runs */
	bool contiguous;		/* at most one run */
};
int xip_stat_inode(struct xip_image *img, ext2_ino_t ino, struct xip_stat *st);

/*
 * The device number of a device inode as ext2 stores it (i_block[0], the
 * old 16-bit form, else i_block[1], the new one: the kernel's
 * ext2_set_inode / new_encode_dev), and its major and minor numbers.
 */
uint32_t xip_inode_rdev(const struct ext2_inode_large *in);
void xip_rdev_split(uint64_t rdev, unsigned int *major, unsigned int *minor);

/*
 * Reverse the byte order of the fields of a copy of an on-disk inode of
 * @inode_size bytes (the copy: its first sizeof(*in) at most) but
 * i_block, whose meaning depends on the inode (block pointers, an extent
 * tree, a symlink's bytes): as ext2fs_swap_inode_full() does, the large
 * inode's fields only inside its i_extra_isize.  On a big-endian host,
 * the on-disk order to the host's; the reader's own inode reads add
 * i_block's block pointers.
 */
void xip_inode_swab_fields(struct ext2_inode_large *in,
			   unsigned int inode_size);

#endif /* XIP_READER_H */
