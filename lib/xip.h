/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libxip: execute-in-place images and memory segments.
 *
 * The one public header of the library.  Every function returns 0 (or a
 * non-negative count) on success and a negative errno on failure; the
 * detailed reason (which inode, which block) is left in a thread-local
 * error record that xip_errmsg() returns.  The library never prints and
 * never exits.
 */
#ifndef XIP_H
#define XIP_H

#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#ifdef XIP_LIBC_ONLY
/*
 * The libc-only build (the xiptool front end): the on-disk definitions of
 * ext2 without libext2fs, and the few of its names this header uses.
 */
#include <ext2fs/ext2_fs.h>
typedef __u32 ext2_ino_t;
typedef __u64 blk64_t;
typedef long errcode_t;
typedef struct struct_ext2_filsys *ext2_filsys;
#define LINUX_S_IFMT	00170000
#define LINUX_S_IFSOCK	0140000
#define LINUX_S_IFLNK	0120000
#define LINUX_S_IFREG	0100000
#define LINUX_S_IFBLK	0060000
#define LINUX_S_IFDIR	0040000
#define LINUX_S_IFCHR	0020000
#define LINUX_S_IFIFO	0010000
#define LINUX_S_ISUID	0004000
#define LINUX_S_ISGID	0002000
#define LINUX_S_ISLNK(m)	(((m) & LINUX_S_IFMT) == LINUX_S_IFLNK)
#define LINUX_S_ISREG(m)	(((m) & LINUX_S_IFMT) == LINUX_S_IFREG)
#define LINUX_S_ISDIR(m)	(((m) & LINUX_S_IFMT) == LINUX_S_IFDIR)
#define LINUX_S_ISCHR(m)	(((m) & LINUX_S_IFMT) == LINUX_S_IFCHR)
#define LINUX_S_ISBLK(m)	(((m) & LINUX_S_IFMT) == LINUX_S_IFBLK)
#define EXT2_I_SIZE(i)	((i)->i_size | ((__u64)(i)->i_size_high << 32))
#else
#include <ext2fs/ext2fs.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Error record (error.c)                                              */
/* ------------------------------------------------------------------ */

#define XIP_ERRMSG_MAX 512

/* The message of the last failure in this thread ("" when none). */
const char *xip_errmsg(void);
/* The negative errno of the last failure in this thread (0 when none). */
int xip_errcode(void);
/* Record a failure and return @err (a negative errno) for tail calls. */
int xip_error(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int xip_verror(int err, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
/* Record a libext2fs failure: the message keeps libext2fs' own text. */
int xip_error_ext2(errcode_t code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Map a libext2fs error code to a negative errno. */
int xip_errno_from_ext2(errcode_t code);
void xip_error_clear(void);

/*
 * What a failure is about, kept in the record beside the message, so
 * that callers can tell whom to blame without reading the text.  Every
 * xip_error*() call starts a record without an object; xip_error_obj()
 * and xip_error_set_obj() give it one.
 */
enum xip_errobj {
	XIP_OBJ_NONE = 0,	/* not said (the image, a file's data) */
	XIP_OBJ_IMAGE,		/* the image (its segment), by its path */
	XIP_OBJ_FILE,		/* a file in the image, by its path */
	XIP_OBJ_FD,		/* the caller's input or output, by name */
};
/*
 * Record a failure of @obj, named @name: the message is "@name: " and
 * then @fmt.
 */
int xip_error_obj(int err, enum xip_errobj obj, const char *name,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Give the record just made its object; returns its code. */
int xip_error_set_obj(enum xip_errobj obj, const char *name);
/* The object of this thread's last failure and its name ("" when none). */
enum xip_errobj xip_errobj(void);
const char *xip_errobj_name(void);

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
 * Advisory holder lock on the backing object (flock): writers take it
 * exclusive, readers and running programs shared.  Waits at most
 * @timeout_ms milliseconds, then -EBUSY.
 */
int xip_seg_lock(struct xip_seg *seg, bool exclusive, int timeout_ms);
const char *xip_seg_type_name(enum xip_seg_type type);
int xip_seg_type_parse(const char *name, enum xip_seg_type *type);
bool xip_seg_type_writable(enum xip_seg_type type);
bool xip_seg_type_exclusive(enum xip_seg_type type);


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
	char name[XIP_SEG_NAME_MAX + 1];
	enum xip_seg_type type;
	uint64_t size;			/* bytes of data in the segment */
	char path[XIP_PATH_MAX];	/* the segment file (tmpfs, hugetlbfs) */
	char image[XIP_PATH_MAX];	/* source image ("" for sn/en) */
	char loop[64];			/* "/dev/loopN" or "" */
	char file[XIP_PATH_MAX];	/* --file: the file inside the image */
	uint64_t offset;		/* loop offset (--file) */
	uint64_t sizelimit;		/* loop size limit (--file), 0: all */
	char label[128];		/* from libblkid ("" when none) */
	char uuid[64];
	int64_t created;		/* seconds since the epoch */
	uid_t owner;
	bool compressed;		/* the image was gzip-compressed */
	/* the image's owner, group and st_mode at attach (what save gives
	 * the file it writes); image_mode 0: no image file */
	uid_t image_uid;
	gid_t image_gid;
	mode_t image_mode;
	/* the segment file's identity at attach: what every use checks */
	uint64_t seg_dev, seg_ino;
	uid_t seg_uid;
	bool attaching;			/* claimed, being filled: not live */
	pid_t pid;			/* the attaching process */
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

/* ------------------------------------------------------------------ */
/* Attach, detach, save (attach.c)                                     */
/* ------------------------------------------------------------------ */

struct xip_attach_opts {
	const char *image;	/* source image (NULL for sn/en) */
	const char *name;	/* NULL: derived from the image's name */
	enum xip_seg_type type;	/* XIP_SEGTYPE_NONE: sr */
	uint64_t size;		/* segment size (sn/en), or a minimum */
	bool loop;		/* bind a loop device */
	bool hugepages;		/* back the segment by hugetlbfs */
	const char *file;	/* bind this file of the image instead */
	bool raw;		/* any bytes, not only an ext2 image */
	unsigned int timeout_ms; /* nbd://: give up on a server silent for
				    that long (0: 60 s) */
};

/*
 * Create a segment filled from the image (gzip decompressed on the fly),
 * record it, and bind a loop device when asked.  On success @e holds the
 * record.  On failure nothing is left behind.
 */
int xip_attach(const struct xip_attach_opts *o, struct xip_seg_entry *e);

#define XIP_DETACH_FORCE	0x01	/* even when mounted or held */

/*
 * Release the loop device, remove the segment file and the record.
 * @save (may be NULL) is written first.  Refuses with -EBUSY while in use
 * unless XIP_DETACH_FORCE.
 */
int xip_detach(const char *what, const char *save, int flags);
/* Write the segment's data to @dest atomically (temp file + rename). */
int xip_save(const char *what, const char *dest);
/*
 * Identify the segment's contents again (libblkid) and record a changed
 * label or UUID: writable segments change, sn/en ones get built into.
 */
int xip_seg_refresh(struct xip_seg_entry *e);

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
/* The segment io_manager (xipio.c)                                    */
/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* Images (image.c)                                                    */
/* ------------------------------------------------------------------ */

struct xip_fs;

/* xip_image_open() flags */
#define XIP_IMG_WRITE	0x01	/* open for writing (exclusive lock) */
#define XIP_IMG_NOLOCK	0x02	/* take no holder lock */
#define XIP_IMG_FORCE	0x04	/* skip the descriptor check (verify) */

struct xip_image {
	struct xip_seg *seg;
	/*
	 * The read side (fsread.c, libc only): the superblock's geometry and
	 * the checked group descriptors, read straight from the segment.
	 */
	struct xip_fs *rd;
	/* libext2fs, for writers, mkfs and verify (image.c); NULL when the
	 * image was opened with xip_image_open_read() */
	ext2_filsys fs;
	void (*close_fs)(struct xip_image *img);
	int close_ret;			/* what close_fs() reported */
	unsigned int block_size;
	bool writable;
	char chan_name[64];
	struct xip_engine *engine;	/* page.c's private state (lazy) */
	/* writers */
	bool unclean;			/* s_state marked not clean on disk */
	uint16_t clean_state;		/* s_state to write back at close */
	int *claims;			/* devices held with O_EXCL */
	size_t nclaims;
};

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
 * Open the image for reading only, without libext2fs (fsread.c): the
 * superblock and group descriptors are checked as by xip_image_open(),
 * and lookup, inodes, block maps, directories and symlinks work; writers
 * and xip_image_info() need xip_image_open().  XIP_IMG_NOLOCK and
 * XIP_IMG_FORCE are honoured.
 */
int xip_image_open_read(const char *spec, int flags, struct xip_image **imgp);
int xip_image_open_segment_read(struct xip_seg *seg, int flags,
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
/* Flush, mark clean (writers), close the file system and the segment. */
int xip_image_close(struct xip_image *img);

/*
 * Writers stop at the next safe point, between two committed steps, once
 * *@flag is non-zero (set from a SIGINT/SIGTERM handler): the file
 * operation returns -EINTR and the image can be closed clean.  NULL
 * turns it off.
 */
void xip_set_interrupt(volatile sig_atomic_t *flag);
bool xip_interrupted(void);
/*
 * A descriptor that becomes readable when the flag is set (the read end
 * of a pipe the handler writes to), for the work that waits in poll(2):
 * the NBD client.  -1 (the default) when there is none.
 */
void xip_set_interrupt_fd(int fd);
int xip_interrupt_fd(void);

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
/* Path lookup and the get_xip_page engine (page.c, file.c)            */
/* ------------------------------------------------------------------ */

/*
 * The address-space method get_xip_page: a pointer to the bytes of file page @pgoff
 * (pages of the image's block size) of inode @ino inside the segment.  The
 * block number is validated against the image and the segment before the
 * pointer is formed.  A hole gives -ENODATA unless @create, which
 * allocates a block near the file's others, clears it, then links it in.
 */
int xip_get_page(struct xip_image *img, ext2_ino_t ino, uint64_t pgoff,
		 bool create, void **ptr);
/* The physical block behind file page @pgoff (0 for a hole), validated. */
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
 * Create an empty regular file @path (its parent must exist) with the
 * permission bits @mode; -EEXIST if the name exists.
 */
int xip_create(struct xip_image *img, const char *path, unsigned int mode,
	       ext2_ino_t *ino);

/* ------------------------------------------------------------------ */
/* ELF parsing and validation (elf.c)                                  */
/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* XIP readiness of ELF files in an image (align.c)                    */
/* ------------------------------------------------------------------ */

struct xip_align_opts {
	unsigned int page_size;	/* 0: the host's */
	bool huge;		/* also check 2 MiB mappings */
};

/* One PT_LOAD as it would be mapped from the segment. */
struct xip_align_seg {
	unsigned int index;	/* in the program header table */
	uint32_t flags;		/* PF_R | PF_W | PF_X */
	uint64_t offset, vaddr, filesz, memsz, align;
	uint64_t runs;		/* runs of image blocks: one mmap each */
	uint64_t pages;		/* file pages behind it */
	uint64_t shared;	/* of those, mapped straight from the segment */
	uint64_t copied;	/* written (data, relro, text relocations, a
				 * last page the loader zeroes): copied */
	bool huge_checked;	/* --huge and p_memsz >= 2 MiB */
	uint64_t huge_pages;	/* 2 MiB mappings possible */
	char huge_why[192];	/* why not (the first obstacle) */
};

struct xip_align_file {
	char *path;
	ext2_ino_t ino;
	bool elf;		/* an ELF file: the rest is meaningful */
	bool ready;		/* XIP-ready: no reasons */
	char *reasons;		/* "; "-separated, NULL when ready */
	unsigned int nreasons;
	uint16_t type, machine;
	bool textrel, exec_stack;
	struct xip_align_seg *segs;
	size_t nsegs;
	uint64_t mmaps, shared, copied, huge_pages;
};

/*
 * Check regular file @ino of @img (named @path in the result).  Returns 0
 * when the file was examined: f->elf false for a file that is not ELF,
 * else f->ready and f->reasons; a negative errno when it cannot be read.
 * Free @f with xip_align_file_free() in both cases.
 */
int xip_align_check(struct xip_image *img, ext2_ino_t ino, const char *path,
		    const struct xip_align_opts *o, struct xip_align_file *f);
void xip_align_file_free(struct xip_align_file *f);

/*
 * Call @fn for every regular file reachable from the root of @img, each
 * inode once (the first path found), depth first in on-disk order.  A
 * nonzero return from @fn stops the walk and is returned.
 */
typedef int (*xip_walk_fn)(void *arg, const char *path, ext2_ino_t ino);
int xip_walk_files(struct xip_image *img, xip_walk_fn fn, void *arg);

/* ------------------------------------------------------------------ */
/* Verify (check.c, check_tree.c)                                      */
/* ------------------------------------------------------------------ */

enum xip_check_severity {
	XIP_CHECK_ERROR,	/* the image is damaged or not XIP-ready */
	XIP_CHECK_WARNING,	/* worth knowing; does not fail the check */
};

struct xip_finding {
	enum xip_check_severity severity;
	/* what is concerned: "superblock", "group", "inode", "directory",
	 * "block", "bitmap", "xip" or "content" (--against) */
	const char *object;
	uint32_t ino;		/* the inode concerned, 0 when none */
	uint64_t block;		/* the block concerned, 0 when none */
	char *path;		/* the inode's path in the image, or NULL */
	char *msg;		/* the whole message, one line, no newline */
};

struct xip_check_opts {
	unsigned int page_size;	/* XIP page size, 0: the host's */
	const char *against;	/* a source tree to compare with, or NULL */
	/* called now and then during long walks; phase NULL: done */
	void (*progress)(void *arg, const char *phase, uint64_t done,
			 uint64_t total);
	void *progress_arg;
};

struct xip_check_report {
	struct xip_finding *findings;
	size_t nfindings;
	uint64_t errors, warnings;	/* counting those not listed */
	uint64_t unlisted;		/* findings beyond the list's limit */
	bool walked;			/* the whole structure was walked */
	unsigned int page_size;		/* the page size checked against */
	bool pmem_capable;		/* xip_pmem_capable() */
	char pmem_reason[256];		/* why not, when !pmem_capable */
	uint64_t inodes_used, blocks_used, files;
};

/*
 * Verify the ext2 image on @seg from its raw bytes: superblock, group
 * descriptors, inodes and block maps, directories, connectivity, link
 * counts, bitmaps and free counts, XIP capability and contiguity, and with
 * opts->against a comparison with a source tree.  Returns 0 when the check
 * ran (problems are in @rep: errors > 0; free it with
 * xip_check_report_free), a negative errno when the image cannot be read
 * at all (not ext2, unsupported features, no memory): then @rep is empty
 * and holds nothing to free, whatever the walk had found before.
 * Linear in the image size; reads only inside the segment.
 */
int xip_check(struct xip_seg *seg, const struct xip_check_opts *opts,
	      struct xip_check_report *rep);
void xip_check_report_free(struct xip_check_report *rep);

/* ------------------------------------------------------------------ */
/* Building images from a tree (build.c)                               */
/* ------------------------------------------------------------------ */

/* One range of an id map: ids from..from+count-1 become to..to+count-1. */
struct xip_idmap {
	uint32_t from, to, count;
};

/* Parse "FROM:TO[:COUNT]" (COUNT defaults to 1). */
int xip_idmap_parse(const char *text, struct xip_idmap *map);
/* Map @id through @maps (the first range that holds it), else @id. */
uint32_t xip_idmap_apply(const struct xip_idmap *maps, size_t n, uint32_t id);
/* Parse a UUID "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx". */
int xip_uuid_parse(const char *text, uint8_t uuid[16]);

/* How the image's UUID is chosen. */
enum xip_uuid_mode {
	XIP_UUID_DERIVED = 0,	/* hashed from the tree: reproducible */
	XIP_UUID_GIVEN,		/* xip_build_opts.uuid */
	XIP_UUID_RANDOM,	/* from getrandom() */
	XIP_UUID_CLEAR,		/* all zero */
};

/* Counters handed to the progress callback. */
struct xip_build_progress {
	uint64_t files_done, files_total;
	uint64_t bytes_done, bytes_total;
};

struct xip_build_opts {
	const char *source;		/* tree to copy; NULL: empty fs */
	const char *tar;		/* or a tar archive ("-": stdin) */
	unsigned int block_size;	/* 0: the host page size */
	uint64_t size;			/* bytes; 0: automatic */
	uint64_t extra;			/* bytes added to an automatic size */
	uint64_t inodes;		/* 0: automatic */
	uint64_t align;			/* files >= align start aligned; 0: off */
	const char *label;
	enum xip_uuid_mode uuid_mode;
	uint8_t uuid[16];
	bool have_timestamp;		/* clamp every time to @timestamp */
	int64_t timestamp;
	bool squash;			/* everything owned by 0:0 */
	bool have_owner;		/* everything owned by owner_uid:gid */
	uint32_t owner_uid, owner_gid;
	const struct xip_idmap *uid_map, *gid_map;
	size_t n_uid_map, n_gid_map;
	const char *device_table;	/* genext2fs device table file */
	bool force;			/* overwrite a non-empty image */
	void (*progress)(const struct xip_build_progress *p, void *arg);
	void *progress_arg;
};

struct xip_build_result {
	uint64_t size;			/* bytes of the image */
	uint64_t blocks, blocks_used;
	uint64_t inodes, inodes_used;
	unsigned int block_size;
	uint64_t files, bytes;		/* regular files and their bytes */
};

/*
 * Create an ext2 image at @image (a new file, an existing file, a block
 * device or @NAME) holding the tree opts->source, every regular file's
 * data contiguous (split only at block group boundaries).  A file is
 * built in a private new file and renamed over @image when complete; a
 * symlink, another user's file in a sticky shared directory and a busy
 * segment are refused.  On failure nothing is left behind: an existing
 * file is left as it was, the start of a device or segment is cleared.
 */
int xip_build(const char *image, const struct xip_build_opts *opts,
	      struct xip_build_result *res);

/*
 * Remove the temporary file of an xip_build() in progress, if it has a
 * name.  Async-signal-safe: for a command's SIGINT and SIGTERM handlers,
 * which then let the signal end the process.
 */
void xip_build_signal_cleanup(void);

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
/* Processes that map attached segments (ps.c)                         */
/* ------------------------------------------------------------------ */

enum xip_ps_how {
	XIP_PS_EXEC,		/* xiptool exec: maps the segment file */
	XIP_PS_MOUNT,		/* files of a mount of its loop device */
};

/* A process and one segment it maps (one entry per way of mapping). */
struct xip_ps_proc {
	pid_t pid;
	char comm[17];
	size_t seg;			/* index in xip_ps_report.segs */
	enum xip_ps_how how;
	char *program;			/* path in the image, NULL: unknown */
	uint64_t mappings;
	uint64_t shared;		/* resident pages still the segment's */
	uint64_t copied;		/* pages copied on write (private) */
	/* private to ps.c */
	bool have_code;
	uint64_t code_off;
	char first_path[XIP_PATH_MAX];
};

struct xip_ps_seg {
	char name[XIP_SEG_NAME_MAX + 1];
	char loop[64];
	char mount[XIP_PATH_MAX];	/* where the loop device is mounted */
	uint64_t procs, shared, copied;	/* totals */
};

struct xip_ps_report {
	struct xip_ps_seg *segs;	/* the segments looked at, by name */
	size_t nsegs;
	struct xip_ps_proc *procs;	/* by PID */
	size_t n;
};

/*
 * Find the processes that map the attached segments named in @names (all
 * when @nnames is 0; "@NAME", NAME or its loop device): every /proc/PID/
 * smaps readable is read, mappings are matched by device and inode.
 * -ENOENT when a name is not an attached segment.
 */
int xip_ps(const char *const *names, size_t nnames, struct xip_ps_report *r);
void xip_ps_report_free(struct xip_ps_report *r);

/* ------------------------------------------------------------------ */
/* The user-space ELF loader (exec.c, exec-<arch>.S)                   */
/* ------------------------------------------------------------------ */

enum xip_interp_from {
	XIP_INTERP_AUTO,	/* from the image when there, else the host */
	XIP_INTERP_HOST,
	XIP_INTERP_IMAGE,
};

struct xip_exec_opts {
	const char *path;		/* the program inside the image */
	enum xip_interp_from interp_from;
	/*
	 * The caller was started by execve(2) and has since installed no
	 * signal handler, set no alternate signal stack, changed no
	 * credentials and keeps no close-on-exec descriptor open but 0-2
	 * and the image's (the xiptool front end), and runs one thread:
	 * xip_exec_run() then leaves the signal dispositions as the kernel
	 * set them, closes only the descriptors of @std_opened and takes
	 * the ids from the auxiliary vector, instead of probing the whole
	 * process state.
	 */
	bool fresh;
	/* with @fresh: bit N set when descriptor N (0-2) was closed at
	 * start and the caller opened it (close-on-exec) in its place */
	unsigned int std_opened;
};

/* What xip_exec_prepare() found; read-only for callers. */
struct xip_exec_info {
	bool setid_ignored;		/* setuid/setgid bit not honoured */
	bool interp_from_image;
	const char *interp;		/* NULL for a static program */
	uint16_t type;			/* ET_EXEC or ET_DYN */
};

struct xip_exec;

/*
 * Look @opts->path up in @img (symlinks followed), check that it is a
 * regular file with an execute bit for us, parse and validate it and its
 * interpreter, and get their data runs.  -ENOENT (or -ENOTDIR, -ELOOP)
 * when the program or its interpreter does not exist, -EACCES or
 * -ENOEXEC (or another error) when it cannot be executed.  The image
 * stays owned by the caller until xip_exec_run().
 */
int xip_exec_prepare(struct xip_image *img, const struct xip_exec_opts *opts,
		     struct xip_exec **exp);
const struct xip_exec_info *xip_exec_info(const struct xip_exec *ex);
/*
 * Replace the running process by the prepared program: map it from the
 * segment (its holder lock stays with the mappings), build the stack
 * from @argv and @envp, close the image, reset the process state as
 * execve does (caught signals, alternate signal stack, close-on-exec
 * descriptors, rseq) and jump.  Returns only on failure, with the image
 * still open; mappings made so far are left behind.
 */
int xip_exec_run(struct xip_exec *ex, const char *const *argv,
		 const char *const *envp);
void xip_exec_free(struct xip_exec *ex);

/* ------------------------------------------------------------------ */
/* Small helpers (error.c)                                             */
/* ------------------------------------------------------------------ */

/*
 * Parse "123", "4K", "2M", "1G", "1T" (binary units; "KiB", "KB" alike)
 * into bytes.  Decimal only: "010" is ten; a sign, a space, "0x" or any
 * other character is -EINVAL, a value beyond 64 bits -ERANGE.
 */
int xip_parse_size(const char *text, uint64_t *bytes);
long xip_host_page_size(void);

/* ------------------------------------------------------------------ */
/* NBD: pulling exports into segments, serving files (nbdpull.c,       */
/* nbdmap.c; the server itself is nbdkit with nbdkit/xiptool.c)        */
/* ------------------------------------------------------------------ */

/*
 * Is @spec an NBD URI (nbd://, nbds://, nbd+unix://, nbds+unix://,
 * nbd+vsock://, nbds+vsock://) rather than a path or @NAME?
 */
bool xip_nbd_is_uri(const char *spec);
/*
 * A segment name for an NBD URI: from the export name ("rootfs.img"
 * gives "rootfs"), "nbd" for the default (empty) export.
 */
int xip_nbd_default_name(const char *uri, char *buf, size_t len);

/* Progress of a pull: @done of @total bytes. */
typedef void (*xip_nbd_progress_fn)(void *arg, uint64_t done,
				    uint64_t total);
/*
 * Report the progress of the pulls this thread makes (xip_attach from an
 * NBD URI) to @fn; NULL turns it off.
 */
void xip_nbd_set_progress(xip_nbd_progress_fn fn, void *arg);

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

#ifdef __cplusplus
}
#endif

#endif /* XIP_H */
