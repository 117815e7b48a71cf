/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Internals of verify: the state of one walk, shared by its files:
 * check.c (the driver), check_util.c (reading, state, findings, names),
 * check_super.c (superblock, group descriptors), check_inode.c (pass 1),
 * check_dir.c (passes 2-4), check_bitmap.c (pass 5) and check_tree.c
 * (--against).
 */
#ifndef XIP_CHECK_INT_H
#define XIP_CHECK_INT_H

#include <endian.h>
#include <stdarg.h>

#include "check/xip_check.h"
#include "util/xip_ext2.h"
#include "segment/xip_segment.h"
#include "reader/xip_reader.h"

/* group state */
#define G_BB_OK 0x01	/* block bitmap placed inside its group */
#define G_IB_OK 0x02	/* inode bitmap placed inside its group */
#define G_IT_OK 0x04	/* inode table placed inside its group */
#define G_SUPER 0x08	/* holds a copy of the superblock and descriptors */

/* inode state */
#define ST_USED		0x001	/* links > 0 (or reserved) */
#define ST_DIR		0x002
#define ST_UNKNOWN	0x004	/* its inode table cannot be read */
#define ST_MAP_OK	0x008	/* every block pointer valid, none shared */
#define ST_HAS_DOT	0x010
#define ST_HAS_DOTDOT	0x020
#define ST_INDEX	0x040	/* htree directory */
#define ST_REACHABLE	0x080
#define ST_DONE		0x100	/* connectivity known */
#define ST_BUSY		0x200	/* connectivity being worked out */

struct chk_ino {
	uint32_t counted;	/* directory entries naming it */
	uint32_t parent;	/* directory of the first entry naming it */
	uint32_t dotdot;	/* for directories: the '..' entry */
	size_t name_off;	/* 1 + offset of that entry's name, 0: none */
	uint16_t links;		/* i_links_count */
	uint16_t flags;
	uint8_t ftype;		/* EXT2_FT_* from i_mode */
};

struct chk_dblk {
	uint32_t ino;
	uint64_t lblk, pblk;
};

struct chk_tree;

struct chk {
	struct xip_seg *seg;
	const struct xip_check_opts *opts;
	struct xip_check_report *rep;
	struct ext2_super_block sb;	/* a copy, validated by chk_super() */
	uint32_t bs, apb, inode_size, first_ino, ngroups, bpg, ipg, itb;
	uint32_t ninodes;
	uint64_t nblocks, first_data, gdt_blocks, rsv_gdt;
	struct ext2_group_desc *gd;	/* a copy of the descriptors */
	uint8_t *gstate;
	/*
	 * Per-group state, allocated when the group is first used: a group
	 * nothing claims and no inode of which is in use costs a pointer.
	 * The blocks of the group metadata are known from the descriptors
	 * (chk_is_meta()), not stored.
	 */
	uint32_t **owner;		/* [ngroups][bpg]: owning inode, 0: none */
	uint8_t **ea;			/* [ngroups]: bitmap of xattr blocks */
	struct chk_ino **in;		/* [ngroups][ipg] */
	uint32_t *dirs_in_group;
	/* reading the image: pread on the segment's descriptor */
	bool use_pread;			/* else copies from the mapping */
	bool seek_data;			/* SEEK_DATA finds holes (regular file) */
	uint64_t hole_q, hole_d;	/* last SEEK_DATA: from hole_q, data at hole_d */
	uint8_t *lvl[3];		/* an indirect block per level */
	uint8_t *scratch;		/* one block */
	uint8_t *iobuf;			/* CHK_IOBUF bytes, for each pass */
	struct chk_dblk *db;		/* directory blocks, in inode order */
	size_t ndb, dbcap;
	uint64_t *earefs;
	size_t nea, eacap;
	char *names;			/* name arena */
	size_t nlen, ncap;
	size_t fcap;
	uint64_t used_inodes, used_blocks, files, dups;
	bool nomem;
	int verity_fatal;	/* the tree could not be checked at all (-ENOSYS) */
	struct chk_tree *tree;		/* --against state */
	/* names of the directory being read, to find duplicates: entries
	 * of generation dgen are the current directory's */
	struct chk_dname {
		uint32_t name;		/* 1 + offset in dnarena, 0: none */
		uint32_t hash, gen;
	} *dnames;
	size_t dncap, dnn;
	uint32_t dgen;
	char *dnarena;			/* the current directory's names,
					 * each a length byte and its bytes */
	size_t dnalen, dnacap;
};

/* limits */
#define CHK_MAX_FINDINGS 100000
#define CHK_MAX_PER_INODE 16
#define CHK_MAX_DEPTH 4096
/*
 * The buffer the passes read metadata into, one at a time: inode tables in
 * chunks of this size, directory blocks in runs up to it, bitmaps.  At
 * least two blocks of the largest size; shared, because fresh memory costs
 * a page fault per page.
 */
#define CHK_IOBUF (256u << 10)

/* bits of a little-endian bit array */
static inline bool bit_test(const uint8_t *map, uint64_t n)
{
	return map[n >> 3] & (1u << (n & 7));
}

static inline void bit_set(uint8_t *map, uint64_t n)
{
	map[n >> 3] |= (uint8_t)(1u << (n & 7));
}

/* The group of block @blk (first_data <= blk < nblocks). */
static inline uint32_t blk_group(const struct chk *c, uint64_t blk)
{
	return (uint32_t)((blk - c->first_data) / c->bpg);
}

/* findings */
#define chk_err(c, obj, ino, blk, ...) \
	xip_chk_finding(c, XIP_CHECK_ERROR, obj, ino, blk, __VA_ARGS__)
#define chk_warn(c, obj, ino, blk, ...) \
	xip_chk_finding(c, XIP_CHECK_WARNING, obj, ino, blk, __VA_ARGS__)

/* groups: the first block and the end of group @g */
static inline uint64_t group_first(const struct chk *c, uint32_t g)
{
	return c->first_data + (uint64_t)g * c->bpg;
}

static inline uint64_t group_end(const struct chk *c, uint32_t g)
{
	uint64_t end = group_first(c, g) + c->bpg;

	return end < c->nblocks ? end : c->nblocks;
}

/* The group a block of metadata belongs to (for messages). */
static inline uint32_t block_group(const struct chk *c, uint64_t blk)
{
	return blk < c->first_data ? 0 :
		(uint32_t)((blk - c->first_data) / c->bpg);
}

/* Whether block @blk of group @g is metadata of the group. */
static inline bool meta_in_group(const struct chk *c, uint32_t g,
				 uint64_t blk)
{
	const struct ext2_group_desc *d = &c->gd[g];
	uint8_t s = c->gstate[g];

	return ((s & G_SUPER) &&
		blk - group_first(c, g) < 1 + c->gdt_blocks + c->rsv_gdt) ||
	       ((s & G_BB_OK) && blk == d->bg_block_bitmap) ||
	       ((s & G_IB_OK) && blk == d->bg_inode_bitmap) ||
	       ((s & G_IT_OK) && blk >= d->bg_inode_table &&
		blk - d->bg_inode_table < c->itb);
}

/*
 * The fields of an on-disk inode of @inode_size bytes (at @in, a private
 * copy) from little-endian to host order, but for i_block: its meaning
 * depends on the inode (block pointers, an extent tree, a symlink's bytes),
 * so each reader of it converts what it reads there.  The reader's swap
 * (xip_inode_swab_fields): the large inode's fields only where the inode
 * has them.
 */
static inline void chk_inode_to_host(struct ext2_inode_large *in,
				     unsigned int inode_size)
{
#if __BYTE_ORDER == __BIG_ENDIAN
	xip_inode_swab_fields(in, inode_size);
#else
	(void)in;
	(void)inode_size;
#endif
}

typedef int (*chk_block_fn)(void *arg, uint64_t lblk, uint64_t pblk);

const uint8_t *xip_chk_block(struct chk *c, uint64_t blk);
int xip_chk_pread(struct chk *c, void *buf, size_t len, uint64_t off);
bool xip_chk_read_block(struct chk *c, uint64_t blk, void *buf);
const struct ext2_inode_large *xip_chk_inode(struct chk *c, uint32_t ino,
					     struct ext2_inode_large *buf);
const struct chk_ino *xip_chk_st(const struct chk *c, uint32_t ino);
struct chk_ino *xip_chk_stw(struct chk *c, uint32_t ino);
uint64_t xip_chk_isize(const struct ext2_inode_large *in);
int xip_chk_blocks(struct chk *c, uint32_t ino, chk_block_fn fn, void *arg);
size_t xip_chk_store_name(struct chk *c, const char *name, size_t len);
char *xip_chk_path(struct chk *c, uint32_t ino);
void xip_chk_vfinding(struct chk *c, enum xip_check_severity sev,
		      const char *object, uint32_t ino, uint64_t blk,
		      const char *fmt, va_list ap)
	__attribute__((format(printf, 6, 0)));
void xip_chk_finding(struct chk *c, enum xip_check_severity sev,
		     const char *object, uint32_t ino, uint64_t blk,
		     const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/*
 * Compare the first @n bits of the bitmap @disk with @want, 64 bits at a
 * time: @run(arg, from, to, used) is called for each run of bits where
 * they differ and @want has the same value @used.  *@pad_ok tells whether
 * bits @n to @nbits of @disk are all set.  Returns the number of clear bits
 * among the first @n of @want.  Both bitmaps are little-endian bit arrays
 * of at least (@nbits + 7) / 8 bytes.
 */
typedef void (*xip_chk_run_fn)(void *arg, uint64_t from, uint64_t to,
			       bool used);
uint64_t xip_chk_bitmap_cmp(const uint8_t *disk, const uint8_t *want,
			    uint64_t n, uint64_t nbits, bool *pad_ok,
			    xip_chk_run_fn run, void *arg);
/* Set bits @from to @to - 1 of @map. */
void xip_chk_set_bits(uint8_t *map, uint64_t from, uint64_t to);

/* check_util.c: memory, reading the image, per-group state */
void *xip_chk_calloc(struct chk *c, uint64_t n, size_t size);
/* xip_grow() for element @n, out of memory recorded in c->nomem */
int xip_chk_grow(struct chk *c, void **arr, size_t *cap, size_t n,
		 size_t size);
void xip_chk_reader_init(struct chk *c);
bool xip_chk_may_hold_data(struct chk *c, uint64_t off, uint64_t len);
uint32_t xip_chk_owner(const struct chk *c, uint64_t blk);
void xip_chk_set_owner(struct chk *c, uint64_t blk, uint32_t ino);
bool xip_chk_is_ea(const struct chk *c, uint64_t blk);
void xip_chk_set_ea(struct chk *c, uint64_t blk);

/* check.c: the data blocks of one inode as the walk finds them.
 * Test-only (test_maps compares them with the reader's runs). */
int xip_chk_file_blocks(struct xip_seg *seg, uint32_t ino,
			chk_block_fn fn, void *arg);

/* check_super.c: the superblock and the group descriptors */
int xip_chk_super(struct chk *c);
int xip_chk_groups(struct chk *c);
const char *xip_chk_meta_kind(struct chk *c, uint64_t blk);
uint64_t xip_chk_super_blocks(const struct chk *c, uint32_t g);
bool xip_chk_is_meta(const struct chk *c, uint64_t blk);

/* check_inode.c: pass 1 */
int xip_chk_inodes(struct chk *c);
void xip_chk_ea_refs(struct chk *c);

/* check_dir.c: passes 2, 3 and 4 */
void xip_chk_dirs(struct chk *c);
void xip_chk_connect(struct chk *c);
void xip_chk_links(struct chk *c);

/* check_bitmap.c: pass 5 */
void xip_chk_bitmaps(struct chk *c);

/* check_tree.c: --against */
void xip_chk_tree_dir_start(struct chk *c, uint32_t dir);
void xip_chk_tree_entry(struct chk *c, uint32_t dir, uint32_t ino,
			const char *name, unsigned int nlen);
int xip_chk_tree_compare(struct chk *c);
void xip_chk_tree_free(struct chk *c);
/*
 * check_hooks.c: in the test build, a pause at the source path @src (once a
 * directory has been compared, before a file is opened for its crc32)
 * when it is XIPTOOL_TEST_VERIFY_PAUSE_AT; empty otherwise.
 */
void xip_check_hook_pause(const char *src);

#endif
