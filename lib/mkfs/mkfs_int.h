/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Internal interface of the image builder: the in-memory tree
 * (buildtree.c) that buildscan.c scans from the source (buildtar.c from
 * a tar archive, builddevtable.c adds to), build.c plans, buildwrite.c
 * writes and buildid.c derives the image's identity from.
 */
#ifndef XIP_MKFS_INT_H
#define XIP_MKFS_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "mkfs/xip_mkfs.h"
#include "util/xip_ext2.h"
#include "segment/xip_segment.h"
#include "exec/xip_elf.h"

/* A run of physical blocks. */
struct prun {
	blk64_t pblk;
	uint64_t len;
};

struct bxattr {
	char *name;
	void *value;
	size_t len;
};

struct bentry;
struct bnames;

/* One inode of the image (several entries may share it: hard links). */
struct bnode {
	mode_t mode;
	uint32_t uid, gid;
	int64_t atime, mtime, ctime;
	uint32_t atime_ns, mtime_ns, ctime_ns;
	uint64_t size;
	dev_t rdev;
	uint32_t nlink;			/* names in the image */
	ext2_ino_t ino;
	char *target;			/* symlink target */
	struct bentry *kids;		/* directory entries (sorted by name
					 * once the tree is finished) */
	size_t nkids, capkids;
	struct bnames *names;		/* @kids by name, once looked up */
	uint32_t subdirs;
	struct bnode *parent;		/* first parent: source path */
	char *name;			/* first name: source path */
	bool from_source;		/* read from the source tree */
	dev_t dev;			/* the source inode the scan saw */
	ino_t ino_src;
	struct timespec ctime_src;	/* its change time (inode reuse) */
	bool is_lpf;
	/* data ranges in blocks (regular files, directories, slow links) */
	struct xip_lrange *ranges;
	size_t nranges;
	uint64_t data_blocks, ind_blocks;
	struct bxattr *xattrs;
	size_t nxattrs, capxattrs;
	/* placement */
	struct prun *druns, *iruns;
	size_t ndruns, niruns;
	size_t order;			/* preorder index, for ties */
	/* read from an archive: the data is in btree.spool_fd at
	 * spool_off + the file offset */
	bool spooled;
	uint64_t spool_off;
};

struct bentry {
	char *name;
	struct bnode *node;
	uint32_t layer;			/* OCI layer that gave the name */
};

/* An open directory of the source, checked against the scan. */
struct bdir {
	const struct bnode *node;
	int fd;
};

struct btree {
	struct bnode *root, *lpf;
	struct bnode **nodes;		/* unique inodes, preorder */
	size_t nnodes, capnodes;
	void *links;			/* (dev, ino) -> node, for hard links */
	const char *src;
	int root_fd;			/* the source's top, open from the scan
					 * to the copy; -1 when none */
	bool proc_fd;			/* /proc/self/fd reaches O_PATH fds */
	struct bdir *dirs;		/* open source directories: a path */
	size_t ndirs, capdirs;
	unsigned int bs;
	int64_t now;			/* time for created inodes */
	bool clamp;
	int64_t clamp_time;
	bool has_xattrs;
	uint64_t files, bytes;		/* regular files, their bytes */
	uint64_t ea_blocks;		/* xattr blocks (estimate) */
	int spool_fd;			/* file data of an archive, or -1 */
	uint64_t spool_end;		/* bytes of the spool in use */
	uint64_t spool_blocks;		/* data blocks of its files still
					 * named */
	uint64_t data_max;		/* bytes the image may hold (its
					 * fixed size), 0: no bound */
	bool skip;			/* leave out the image itself */
	dev_t skip_dev;
	ino_t skip_ino;
};

/* The output of mkfs (buildtarget.c). */
struct btarget {
	const char *spec;
	int fd;			/* the output file, device or segment */
	int dirfd;		/* a file's directory, or -1 */
	char *base;		/* a file's name in it */
	char *tmpname;		/* the named temporary file, if any */
	bool file;		/* built in a new file, then put in place */
	bool replace;		/* ... over the existing file @old */
	bool blockdev;		/* a block device, written in place */
	bool named_temp;	/* no O_TMPFILE (a test hook) */
	bool exists;		/* @dev, @ino: the existing target */
	dev_t dev;
	ino_t ino;
	struct stat old;
	bool touched;		/* xip_target_open() began to change it */
	uint64_t fixed;		/* fixed size (device, segment), 0: file */
	struct xip_seg *seg;
};

/*
 * Decide what @tg->spec is and whether it may be written, before anything
 * is read or changed: a symlink (but root's or the caller's to a block
 * device) and another user's file in a sticky shared directory are
 * refused, an attached segment in use is -EBUSY, a device in use too
 * (unless --force), a non-empty file needs --force, and a file we may
 * not write is -EACCES.
 */
int xip_target_probe(struct btarget *tg, const struct xip_build_opts *o);
/* A private new file of @bytes (holes), or the device or segment zeroed. */
int xip_target_open(struct btarget *tg, uint64_t bytes);
/* fsync the new file, give it its mode and put it in place atomically. */
int xip_target_commit(struct btarget *tg);
/* Remove the temporary file, or clear the start of a device or segment. */
void xip_target_abort(struct btarget *tg);
void xip_target_close(struct btarget *tg);

/* buildtree.c: the tree itself */
/* The tree's lost+found: the one in the tree, else a new one. */
int xip_btree_make_lpf(struct btree *t, const struct xip_build_opts *o);
struct bnode *xip_btree_node_new(struct btree *t);
/* @n: a directory of @perm owned by root (as mapped for the tree), now. */
void xip_btree_set_dir(struct btree *t, struct bnode *n,
			const struct xip_build_opts *o, unsigned int perm);
/* The root node of a tree scanned from @src (for messages): NULL, no memory. */
struct bnode *xip_btree_root_new(struct btree *t, const char *src);
void xip_btree_node_free(struct bnode *n);
/*
 * Add the extended attribute @name with a copy of its @len bytes @value
 * to @n (in the order given: sort them with xip_btree_xattr_cmp): 0 or
 * -ENOMEM.
 */
int xip_btree_xattr_add(struct bnode *n, const char *name, const void *value,
			size_t len);
/* Free @n's extended attributes; it is left with none. */
void xip_btree_xattrs_free(struct bnode *n);
/* Add the name @name in @dir for @n (counted in n->nlink). */
int xip_btree_add_entry(struct bnode *dir, const char *name, struct bnode *n);
/*
 * The entry @name of @dir, NULL when none.  A directory of more than a few
 * entries gets a hash table of its names at its first lookup, kept up to
 * date by xip_btree_add_entry: an archive of many members in one directory
 * costs no walk of the names already there for each new one.
 */
struct bentry *xip_btree_find_entry(struct bnode *dir, const char *name);
/*
 * Remove the entry @e of @dir (its node's link count is the caller's):
 * the last entry takes its place (the entries are in no order until
 * xip_btree_finish sorts them) and the hash table of the names, if any,
 * follows both, so that removals cost no rebuild of it.
 */
void xip_btree_remove_entry(struct bnode *dir, struct bentry *e);
/*
 * The entries of @dir its hash table holds (0: it has none, its names are
 * walked) and the names its lookups have compared so far.  Test-only.
 */
void xip_btree_names_stats(const struct bnode *dir, size_t *indexed,
			   uint64_t *compared);
/* Owner from the source ids, after --squash, --owner and the id maps. */
void xip_btree_set_owner(struct bnode *n, const struct xip_build_opts *o,
			 uint32_t uid, uint32_t gid);
/* A warning for o->warn, if set: one line, the build goes on. */
void xip_btree_warn(const struct xip_build_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Every time of @n set to the time of the build. */
void xip_btree_node_set_now(struct btree *t, struct bnode *n);
int xip_btree_finish(struct btree *t, const struct xip_build_opts *o);
void xip_btree_free(struct btree *t);
/* The source path of a node (malloc'ed), "(device table)" when none. */
char *xip_btree_path(const struct btree *t, const struct bnode *n);

/* buildscan.c: a source directory scanned into the tree */
int xip_btree_scan(struct btree *t, const struct xip_build_opts *o);
/* One data range of @blocks blocks from the start. */
int xip_btree_whole_range(struct bnode *n, uint64_t blocks);
/* The extended attributes ext2 keeps (user., trusted., security., ACLs). */
bool xip_btree_xattr_wanted(const char *name);
int xip_btree_xattr_cmp(const void *a, const void *b);
/*
 * Open the source file of regular node @n for reading: every directory
 * on its path is opened from the source's top with O_NOFOLLOW and, like
 * the file, must still be the inode the scan saw (-ESTALE, "changed during
 * the scan", otherwise).  A FIFO or device swapped in does not block.
 */
int xip_btree_open_source(struct btree *t, const struct bnode *n, int *fdp);
/* Close the open directories of the source but the first @keep. */
void xip_btree_dirs_pop(struct btree *t, size_t keep);

/*
 * buildtar.c: the tree of a tar archive (opts->tar, "-" for stdin) read
 * with libarchive, instead of xip_btree_scan().  File data goes to a private
 * spool file (t->spool_fd), holes of sparse members and blocks of zeros
 * left out as holes, the data of a file that loses its last name punched
 * out; the data of the files named at any point must fit t->data_max.
 * An archive that ends right after its last member, complete, without
 * end-of-archive blocks is read, with a warning (o->warn).
 */
int xip_btree_scan_tar(struct btree *t, const struct xip_build_opts *o);
/*
 * One layer (@layer from 1) of an OCI image onto the tree, its tar archive
 * read from @raw: an archive the caller opened with libarchive's "raw"
 * format and the layer's decompression filter (its data is the archive's
 * bytes).  Whiteouts (.wh.NAME, .wh..wh..opq) remove what lower layers
 * gave and never reach the tree, a later entry replaces an earlier one of
 * any type.  @name names the layer in messages.  *@unterminated: the
 * archive ended right after its last member, complete, with no end-of-
 * archive blocks (accepted, as Go's archive/tar does; the caller warns).
 * The tree gets its root from xip_btree_oci_begin and its lost+found from
 * xip_btree_make_lpf once every layer is read.
 */
int xip_btree_oci_begin(struct btree *t, const struct xip_build_opts *o,
			const char *src);
struct archive;
int xip_btree_tar_layer(struct btree *t, const struct xip_build_opts *o,
			struct archive *raw, const char *name, uint32_t layer,
			bool *unterminated);
/* The warning of an archive that has no end-of-archive blocks. */
#define XIP_TAR_UNTERMINATED \
	"no end-of-archive blocks after the last member (read as complete)"

/* buildoci.c: the layers of an OCI image layout, onto the tree */
int xip_btree_scan_oci(struct btree *t, const struct xip_build_opts *o,
		       const char *spec, const char *platform);

/* The parts of an OCI image layout, for the unit tests (buildoci.c). */
/*
 * Split "LAYOUT[:TAG]": the whole @spec when it is a directory, else at
 * its last ':' (TAG without '/').  *dir and *tag (NULL: none) malloc'ed.
 */
int xip_oci_split(const char *spec, char **dir, char **tag);
/*
 * The manifest descriptor of index JSON @json for @tag (NULL: the only
 * one; entries of one digest, tags of one manifest, are one): its digest
 * and media type (malloc'ed).  -ENOENT for a missing
 * tag, -EINVAL for ambiguity or bad JSON (reason in the error record).
 */
int xip_oci_pick(const char *json, size_t len, const char *tag,
		 const char *platform, char **digest, char **media,
		 uint64_t *size);

/* builddevtable.c: a genext2fs device table applied to the tree */
int xip_btree_devtable(struct btree *t, const char *file);

/*
 * buildid.c: the 128-bit hash the derived UUID comes from, one XXH3
 * stream: the tree, the label and the geometry, then the files' contents
 * in the order written.
 */
struct XXH3_state_s;
struct bhash {
	struct XXH3_state_s *st;
};

/* 0, or -ENOMEM; xip_bld_hash_free() gives it back. */
int xip_bld_hash_init(struct bhash *h);
void xip_bld_hash_free(struct bhash *h);
/* Tree @t with the label and the geometry of @fs. */
void xip_bld_hash_tree(const struct btree *t, const struct xip_build_opts *o,
		       ext2_filsys fs, struct bhash *h);
/*
 * The files' contents, fed as the writer copies them: each run of a
 * file's bytes after where it lies in the file, then the file's inode
 * number and size.
 */
void xip_bld_content_add(struct bhash *h, uint64_t off, const void *p,
			 size_t len);
void xip_bld_content_done(struct bhash *h, uint64_t ino, uint64_t size);
/*
 * The superblock's identity: UUID (given, random, cleared or derived from
 * @h), directory hash seed, label, and the times of the build (@now).
 */
void xip_bld_super_fill(ext2_filsys fs, const struct xip_build_opts *o,
			const struct bhash *h, int64_t now);

/*
 * buildwrite.c: write every inode, directory, indirect block, extended
 * attribute block and file byte of the placed tree @t into @seg, the
 * target of @fs (initialised with the planned geometry); the superblock
 * gets the image's identity.  libext2fs writes the rest at its close.
 */
int xip_bld_write(struct btree *t, const struct xip_build_opts *o,
		  ext2_filsys fs, struct xip_seg *seg);

/* ------------------------------------------------------------------ */
/* Helpers of mkfs, for the unit tests (buildtarget.c, buildtar.c,     */
/* buildtree.c, buildio.c, builddevtable.c, build.c; build_hooks.c)   */
/* ------------------------------------------------------------------ */

/* Helpers of xip_build, public for the unit tests. */

/*
 * Split an image path into its directory ("." when none, "/" at the top)
 * and its last name (malloc'ed both): -EISDIR when the last name is empty,
 * "." or "..".
 */
int xip_build_split_target(const char *spec, char **dir, char **base);
/*
 * The name a tar member gets in the image, relative to its top: "/" and
 * "." components dropped ("" is the top itself), -EPERM when a ".."
 * component would leave the top.  *out is malloc'ed.
 */
int xip_build_tar_name(const char *name, char **out);
/* ".BASE.XXXXXXXX" (BASE cut to 200 bytes, 8 random [A-Za-z0-9]). */
int xip_build_temp_name(const char *base, char *buf, size_t len);

/* A data range of a file in blocks: [start, start + len). */
struct xip_lrange {
	uint64_t start, len;
};
/*
 * Indirect blocks (single, double, triple) an ext2 file with blocks of
 * @bs bytes needs to map the sorted ranges: UINT64_MAX if unmappable.
 */
uint64_t xip_build_ind_blocks(unsigned int bs, const struct xip_lrange *r,
			      size_t n);
/*
 * Add blocks [@start, @start + @len) to the sorted ranges *@rp (*@nrp of
 * them, room for *@cap, grown with xip_grow) as data, merged with the
 * ranges they touch.  0 or -ENOMEM.
 */
int xip_build_ranges_add(struct xip_lrange **rp, size_t *nrp, size_t *cap,
			 uint64_t start, uint64_t len);
/*
 * The linker's padding in front of each of the @nload PT_LOADs of an ELF
 * file of @size bytes (sorted here by offset) added to *@rp as data, in
 * blocks of @bs: a gap shorter than the PT_LOAD's p_align, which is at
 * most 2 MiB, and 8 MiB in all (buildscan.c).  0 or -ENOMEM.
 */
struct xip_elf_load;
int xip_build_elf_padding(struct xip_elf_load *load, size_t nload,
			  uint64_t size, uint64_t bs, struct xip_lrange **rp,
			  size_t *nrp, size_t *cap);
/* Blocks of a directory holding names of the given lengths (with . ..). */
uint64_t xip_build_dir_blocks(unsigned int bs, const size_t *namelens,
			      size_t n);
/* The kernel's ext2 encoding of a device number into i_block[0..1]. */
void xip_build_encode_dev(dev_t rdev, uint32_t iblock[2]);

/*
 * Make [off, off + len) of @seg read as zeros at the least cost: a hole
 * punched in a file, BLKZEROOUT on a block device, large writes of zeros
 * where neither works, a memset on device DAX.
 */
int xip_build_zero(struct xip_seg *seg, uint64_t off, uint64_t len);
/*
 * Allocate the blocks of a range of a file segment that is about to be
 * written (fallocate, the size kept): a file system that allocates only
 * at write-back would scatter blocks written far apart in the file over
 * its disk, and flush them as many small writes.  Elsewhere nothing.
 */
int xip_build_reserve(struct xip_seg *seg, uint64_t off, uint64_t len);

/* One line of a genext2fs device table. */
struct xip_devtable_entry {
	char path[4096];
	char type;		/* f d c b p */
	unsigned int mode;	/* permission bits */
	uint32_t uid, gid;
	unsigned int major, minor;
	unsigned long start, inc, count;
};
/*
 * Parse one device-table line: 1 when an entry was read, 0 for a blank or
 * comment line, negative on a syntax error (reason in the error record).
 */
int xip_devtable_parse_line(const char *line, struct xip_devtable_entry *e);

/*
 * Test hooks of xip_build(), which exist only in the test build
 * (build_hooks.c compiled with XIP_TEST_HOOKS, linked into the test
 * programs; libxip.a has empty functions and no xip_build_test_hooks).
 * after_scan runs once the tree is scanned and the output is created,
 * before any file's bytes are copied: the tests change the tree there.
 * named_temp makes a new image file a named temporary file even where
 * O_TMPFILE works.  The unit tests set them here; a test program gets
 * them from its environment: XIPTOOL_TEST_MKFS_AFTER_SCAN (a shell
 * command) and XIPTOOL_TEST_MKFS_NAMED_TEMP=1.
 */
struct xip_build_hooks {
	void (*after_scan)(void *arg);
	void *after_scan_arg;
	bool named_temp;
};
extern struct xip_build_hooks xip_build_test_hooks;
/* Run the after_scan hook, if any (nothing outside the test build). */
void xip_build_hook_after_scan(void);
/* Is the named_temp hook set?  (false outside the test build) */
bool xip_build_hook_named_temp(void);

#endif
