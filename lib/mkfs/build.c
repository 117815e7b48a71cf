// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mkfs: build an ext2 image for execute-in-place from a directory tree.
 *
 * The tree is scanned into memory first (buildtree.c).  The layout is then
 * planned on a scratch file system of the same geometry: every file gets
 * one run of blocks for its data (first fit, largest first, so that only
 * files larger than a block group are split, and only at group
 * boundaries) and a separate run for its indirect blocks.  When the plan
 * fits, the image is created, the same geometry is initialised on it, and
 * every inode, directory block, indirect block and file byte is written
 * once, straight into the mapped segment.
 *
 * This file holds the driver (xip_build) and the plan: the geometry, the
 * block allocator, the placement of every file and the sizing of the
 * image.  The writing is in buildwrite.c, the image's identity (UUID,
 * hash seed, times) in buildid.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mkfs/xip_mkfs.h"
#include "mkfs/mkfs_int.h"
#include "util/xip_debug.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"
#include "segment/xip_segment.h"
#include "verity/xip_verity.h"

#define INODE_SIZE 256
#define MAX_SIZING_ROUNDS 32

/* ---- geometry ------------------------------------------------------------ */

struct bgeom {
	unsigned int bs;
	uint64_t blocks;
	uint64_t inodes;
	bool xattr;
};

static void geom_param(const struct bgeom *g, struct ext2_super_block *p)
{
	memset(p, 0, sizeof(*p));
	ext2fs_blocks_count_set(p, g->blocks);
	p->s_log_block_size = (uint32_t)(ffs((int)g->bs) - 1 -
					 EXT2_MIN_BLOCK_LOG_SIZE);
	p->s_rev_level = EXT2_DYNAMIC_REV;
	p->s_inode_size = INODE_SIZE;
	p->s_inodes_count = (uint32_t)g->inodes;
	p->s_feature_incompat = EXT2_FEATURE_INCOMPAT_FILETYPE;
	p->s_feature_ro_compat = EXT2_FEATURE_RO_COMPAT_SPARSE_SUPER |
				 EXT2_FEATURE_RO_COMPAT_LARGE_FILE;
	if (g->xattr)
		p->s_feature_compat = EXT2_FEATURE_COMPAT_EXT_ATTR;
}

/* Initialise a file system of geometry @g on channel @name. */
static int geom_init(const struct bgeom *g, const char *name, ext2_filsys *fsp)
{
	struct ext2_super_block param;
	ext2_filsys fs;
	errcode_t err;

	geom_param(g, &param);
	err = ext2fs_initialize(name, EXT2_FLAG_64BITS, &param, xip_io_manager,
				&fs);
	if (err)
		return xip_error_ext2(err, "%" PRIu64 " blocks of %u bytes",
				      g->blocks, g->bs);
	err = ext2fs_allocate_tables(fs);
	if (err) {
		ext2fs_free(fs);
		return xip_error_ext2(err, "allocating group tables");
	}
	*fsp = fs;
	return 0;
}

/* ---- the block allocator -------------------------------------------------- */

struct bext {
	blk64_t start, end;	/* free [start, end) */
};

struct balloc {
	struct bext *e;
	size_t n, cap;
	uint64_t maxfree;	/* largest free run of a fresh group */
	uint64_t align;		/* in blocks */
	bool strict;		/* split files only at group boundaries */
};

static int balloc_insert(struct balloc *a, size_t at, blk64_t s, blk64_t e)
{
	if (xip_grow((void **)&a->e, &a->cap, a->n + 1, sizeof(*a->e)))
		return -ENOMEM;
	memmove(&a->e[at + 1], &a->e[at], (a->n - at) * sizeof(*a->e));
	a->e[at].start = s;
	a->e[at].end = e;
	a->n++;
	return 0;
}

static int balloc_init(struct balloc *a, ext2_filsys fs)
{
	memset(a, 0, sizeof(*a));
	for (dgrp_t g = 0; g < fs->group_desc_count; g++) {
		blk64_t b = ext2fs_group_first_block2(fs, g);
		blk64_t last = ext2fs_group_last_block2(fs, g), z, s;

		while (b <= last) {
			if (ext2fs_find_first_zero_block_bitmap2(fs->block_map,
								 b, last, &z))
				break;
			if (ext2fs_find_first_set_block_bitmap2(fs->block_map,
								z, last, &s))
				s = last + 1;
			if (balloc_insert(a, a->n, z, s))
				return -ENOMEM;
			if (s - z > a->maxfree)
				a->maxfree = s - z;
			b = s;
		}
	}
	return 0;
}

/* One run of @need blocks, first fit, optionally aligned. */
static int balloc_one(struct balloc *a, uint64_t need, uint64_t align,
		      blk64_t *start)
{
	for (size_t i = 0; i < a->n; i++) {
		struct bext *e = &a->e[i];
		blk64_t s = round_up(e->start, align);

		if (s >= e->end || e->end - s < need)
			continue;
		*start = s;
		if (s > e->start) {
			blk64_t old = e->start;

			e->start = s + need;
			if (balloc_insert(a, i, old, s))
				return -ENOMEM;
		} else {
			e->start += need;
		}
		if (a->e[i].start == a->e[i].end) {
			memmove(&a->e[i], &a->e[i + 1],
				(a->n - i - 1) * sizeof(*a->e));
			a->n--;
		}
		return 0;
	}
	return -ENOSPC;
}

/* Append a run to *@runs (*@n of them, room for *@cap). */
static int runs_add(struct prun **runs, size_t *n, size_t *cap, blk64_t s,
		    uint64_t len)
{
	if (xip_grow((void **)runs, cap, *n + 1, sizeof(**runs)))
		return -ENOMEM;
	(*runs)[*n].pblk = s;
	(*runs)[*n].len = len;
	(*n)++;
	return 0;
}

/* Several runs in address order, each extent taken from its start. */
static int balloc_many(struct balloc *a, uint64_t need, uint64_t align,
		       struct prun **runs, size_t *n, size_t *cap)
{
	uint64_t avail = 0, done = 0;
	size_t i;
	int ret;

	for (i = 0; i < a->n; i++)
		avail += a->e[i].end - a->e[i].start;
	if (avail < need)
		return -ENOSPC;
	for (i = 0; need && i < a->n;) {
		struct bext *e = &a->e[i];
		/* every run congruent to its file block modulo @align */
		blk64_t s = e->start + (done - e->start % align + align) % align;
		uint64_t take;

		if (s >= e->end) {
			i++;
			continue;
		}
		take = e->end - s < need ? e->end - s : need;
		ret = runs_add(runs, n, cap, s, take);
		if (ret)
			return ret;
		need -= take;
		done += take;
		if (s > e->start) {
			blk64_t old = e->start;

			e->start = s + take;
			if (balloc_insert(a, i, old, s))
				return -ENOMEM;
			i++;
			e = &a->e[i];
		} else {
			e->start += take;
		}
		if (e->start == e->end) {
			memmove(e, e + 1, (a->n - i - 1) * sizeof(*e));
			a->n--;
		} else {
			i++;
		}
	}
	return need ? -ENOSPC : 0;
}

static int place_runs(struct balloc *a, uint64_t need, uint64_t align,
		      bool splittable, struct prun **runs, size_t *n)
{
	size_t cap = *n;	/* the array holds at least that many */
	blk64_t s;
	int ret;

	if (!need)
		return 0;
	ret = balloc_one(a, need, align, &s);
	if (ret == 0)
		return runs_add(runs, n, &cap, s, need);
	if (ret != -ENOSPC)
		return ret;
	if (!splittable && a->strict && need <= a->maxfree)
		return -ENOSPC;
	return balloc_many(a, need, align, runs, n, &cap);
}

static int need_cmp(const void *x, const void *y)
{
	const struct bnode *a = *(struct bnode *const *)x;
	const struct bnode *b = *(struct bnode *const *)y;
	uint64_t na = a->data_blocks + a->ind_blocks;
	uint64_t nb = b->data_blocks + b->ind_blocks;

	/* the most blocks first, then in the tree's order */
	return xip_cmp_u64(nb, na) ?: xip_cmp_u64(a->order, b->order);
}

static void unplace(struct btree *t)
{
	for (size_t i = 0; i < t->nnodes; i++) {
		struct bnode *n = t->nodes[i];

		free(n->druns);
		free(n->iruns);
		n->druns = n->iruns = NULL;
		n->ndruns = n->niruns = 0;
	}
}

/*
 * Plan every file's blocks on @fs (largest first).  Returns 0, -ENOSPC
 * with the blocks still unplaced in *short_by, or another error.
 */
static int place_all(struct btree *t, ext2_filsys fs,
		     const struct xip_build_opts *o, bool strict,
		     uint64_t *short_by)
{
	struct bnode **order;
	struct balloc a;
	size_t i;
	int ret;

	*short_by = 0;
	unplace(t);
	ret = balloc_init(&a, fs);
	order = malloc(t->nnodes * sizeof(*order));
	if (ret || !order) {
		free(a.e);
		free(order);
		return -ENOMEM;
	}
	a.strict = strict;
	memcpy(order, t->nodes, t->nnodes * sizeof(*order));
	qsort(order, t->nnodes, sizeof(*order), need_cmp);
	for (i = 0; i < t->nnodes; i++) {
		struct bnode *n = order[i];
		uint64_t align = 1;

		if (!n->data_blocks)
			break;
		if (o->align && S_ISREG(n->mode) && n->size >= o->align)
			align = o->align / t->bs;
		ret = place_runs(&a, n->data_blocks, align, false, &n->druns,
				 &n->ndruns);
		if (!ret)
			ret = place_runs(&a, n->ind_blocks, 1, true, &n->iruns,
					 &n->niruns);
		if (ret)
			break;
	}
	if (ret == -ENOSPC) {
		for (; i < t->nnodes; i++)
			*short_by += order[i]->data_blocks +
				     order[i]->ind_blocks;
	}
	free(order);
	free(a.e);
	return ret;
}

/* ---- sizing -------------------------------------------------------------- */

struct bplan {
	struct bgeom g;
	uint64_t image_bytes;	/* size of the image file */
	uint64_t need;		/* blocks of files, directories, xattrs */
	uint64_t min_inodes;
	struct xip_seg scratch;
	char chan[64];
};

static uint64_t tree_need(const struct btree *t)
{
	uint64_t need = t->ea_blocks;

	for (size_t i = 0; i < t->nnodes; i++)
		need += t->nodes[i]->data_blocks + t->nodes[i]->ind_blocks;
	return need;
}

/*
 * Try geometry p->g on the scratch channel: 0 when the whole tree fits,
 * -ENOSPC with *more set to the blocks to add, another error otherwise.
 */
static int plan_try(struct btree *t, struct bplan *p,
		    const struct xip_build_opts *o, bool strict,
		    uint64_t margin, uint64_t *more)
{
	uint64_t free_blocks, short_by;
	ext2_filsys fs;
	int ret;

	*more = 0;
	ret = geom_init(&p->g, p->chan, &fs);
	if (ret) {
		/* too small for the geometry (or the inodes) */
		*more = p->g.blocks < 64 ? 64 : p->g.blocks / 2;
		return -ENOSPC;
	}
	if (fs->super->s_inodes_count < p->min_inodes) {
		*more = p->g.blocks / 4 + 64;
		ext2fs_free(fs);
		return -ENOSPC;
	}
	free_blocks = ext2fs_free_blocks_count(fs->super);
	if (free_blocks < p->need + margin) {
		*more = p->need + margin - free_blocks;
		ext2fs_free(fs);
		return -ENOSPC;
	}
	ret = place_all(t, fs, o, strict, &short_by);
	ext2fs_free(fs);
	if (ret == -ENOSPC)
		*more = short_by + short_by / 8 + p->g.blocks / 32 + 1;
	return ret;
}

static int plan_auto(struct btree *t, struct bplan *p,
		     const struct xip_build_opts *o, uint64_t extra)
{
	uint64_t itb, more, margin = p->need / 64 + 32 + extra;
	int ret = -ENOSPC;

	itb = div_round_up(p->g.inodes * INODE_SIZE, p->g.bs);
	p->g.blocks = p->need + margin + itb + 16;
	for (int round = 0; round < MAX_SIZING_ROUNDS; round++) {
		ret = plan_try(t, p, o, true, margin, &more);
		if (ret != -ENOSPC)
			break;
		p->g.blocks += more;
	}
	if (ret == -ENOSPC)
		return xip_error(ret, "cannot find a size that holds the tree");
	return ret;
}

static int plan_inodes(struct btree *t, struct bplan *p,
		       const struct xip_build_opts *o)
{
	p->min_inodes = t->nnodes + EXT2_GOOD_OLD_FIRST_INO - 2;
	if (o->inodes) {
		if (o->inodes < p->min_inodes)
			return xip_error(-ENOSPC,
					 "%" PRIu64 " inodes are too few: the tree needs %" PRIu64,
					 o->inodes, p->min_inodes);
		if (o->inodes > UINT32_MAX)
			return xip_error(-ERANGE, "too many inodes (%" PRIu64 ")",
					 o->inodes);
		p->g.inodes = o->inodes;
	} else {
		p->g.inodes = p->min_inodes + p->min_inodes / 8 + 16;
	}
	return 0;
}

static int plan(struct btree *t, struct bplan *p,
		const struct xip_build_opts *o, uint64_t fixed_bytes)
{
	uint64_t bs = t->bs, more;
	int ret;

	memset(p, 0, sizeof(*p));
	p->g.bs = t->bs;
	p->g.xattr = t->has_xattrs;
	p->need = tree_need(t);
	ret = plan_inodes(t, p, o);
	if (ret)
		return ret;
	p->scratch.path = (char *)"(sizing)";
	p->scratch.fd = -1;
	p->scratch.writable = true;
	ret = xip_io_register(&p->scratch, p->chan, sizeof(p->chan));
	if (ret)
		return ret;
	if (!fixed_bytes) {
		ret = plan_auto(t, p, o, o->extra / bs);
		p->image_bytes = p->g.blocks * bs;
		goto out;
	}
	p->g.blocks = fixed_bytes / bs;
	p->image_bytes = fixed_bytes;
	ret = plan_try(t, p, o, false, 0, &more);
	if (ret == -ENOSPC) {
		struct bplan need;
		uint64_t tenths;

		ret = plan(t, &need, o, 0);
		if (ret)
			return ret;
		/* tenths of a MiB, rounded up: never less than needed */
		tenths = (need.image_bytes * 10 + (1 << 20) - 1) >> 20;
		return xip_error(-ENOSPC,
				 "image too small: %" PRIu64 " bytes given, needs %" PRIu64 " (%" PRIu64 ".%" PRIu64 " MiB): give at least %" PRIu64 " MiB",
				 fixed_bytes, need.image_bytes, tenths / 10,
				 tenths % 10, (tenths + 9) / 10);
	}
out:
	return ret;
}

static uint64_t verity_area(const struct bplan *p,
			    const struct xip_build_opts *o)
{
	return o->verity ? xip_verity_area_size(p->g.blocks, p->g.bs) : 0;
}

/*
 * The root hash signed, its signature block after the tree (which ends
 * on a block boundary, a multiple of 4096 bytes): the file grows to hold
 * it.
 */
static int build_sign(struct btarget *tg, const struct bplan *p,
		      const struct xip_build_opts *o, const uint8_t *root,
		      size_t root_len, struct xip_build_result *res)
{
	uint64_t off = round_up(p->image_bytes + verity_area(p, o),
				XIP_VERITY_SIG_ALIGN);
	uint8_t *der, *blk = NULL;
	size_t der_len, blk_len;
	int ret;

	ret = xip_verity_sign(o->signer, root, root_len, &der, &der_len);
	if (!ret)
		ret = xip_verity_sig_block(der, der_len, &blk, &blk_len);
	if (!ret) {
		ret = xip_pwrite_all(tg->seg->fd, blk, blk_len, off);
		if (ret)
			xip_error(ret, "%s: writing the signature: %s",
				  tg->spec, strerror(-ret));
	}
	free(blk);
	if (!ret && res) {
		res->signature = der;
		res->signature_len = der_len;
	} else {
		free(der);
	}
	return ret;
}

/*
 * The dm-verity tree over the file system just written, after it: the
 * salt given, derived from the image's UUID and hash seed (themselves
 * derived from the tree when the build is reproducible), or random.
 */
static int build_verity(struct btarget *tg, const struct bplan *p,
			const struct xip_build_opts *o,
			struct xip_build_result *res)
{
	const struct ext2_super_block *sb =
		(const void *)(tg->seg->base + SUPERBLOCK_OFFSET);
	uint8_t salt[XIP_VERITY_SALT_MAX], root[XIP_VERITY_DIGEST_MAX];
	uint8_t seed[32];
	size_t salt_len = XIP_VERITY_SALT_DEFAULT, root_len;
	int ret;

	if (!tg->seg->base ||
	    tg->seg->size < p->image_bytes + verity_area(p, o))
		return xip_error(-EINVAL, "%s: not mapped for the verity tree",
				 tg->spec);
	if (o->salt) {
		salt_len = o->salt_len;
		memcpy(salt, o->salt, salt_len);
	} else {
		memcpy(seed, sb->s_uuid, 16);
		memcpy(seed + 16, sb->s_hash_seed, 16);
		ret = xip_verity_salt(o->have_timestamp ? seed : NULL,
				      sizeof(seed), salt);
		if (ret)
			return ret;
	}
	ret = xip_verity_write(tg->seg->base, p->g.blocks, p->g.bs, salt,
			       salt_len, sb->s_uuid, tg->seg->fd, root,
			       &root_len);
	if (ret) {
		char msg[XIP_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", xip_errmsg());
		return xip_error(ret, "%s: %s", tg->spec, msg);
	}
	if (res) {
		res->hash_offset = p->image_bytes;
		memcpy(res->root_hash, root, root_len);
		res->root_hash_len = root_len;
	}
	return o->signer ? build_sign(tg, p, o, root, root_len, res) : 0;
}

static int build_on(struct btarget *tg, struct btree *t, struct bplan *p,
		    const struct xip_build_opts *o, struct xip_build_result *res)
{
	ext2_filsys fs = NULL;
	char chan[64];
	errcode_t err;
	int ret;

	ret = xip_target_open(tg, p->image_bytes + verity_area(p, o));
	if (ret)
		return ret;
	ret = xip_io_register(tg->seg, chan, sizeof(chan));
	if (ret)
		return ret;
	ret = geom_init(&p->g, chan, &fs);
	if (ret)
		goto out;
	/* every block written with pwrite(2), nothing through the mapping */
	err = io_channel_set_options(fs->io, "pio");
	if (err) {
		ret = xip_error_ext2(err, "%s: writing", tg->spec);
		goto out;
	}
	ret = xip_bld_write(t, o, fs, tg->seg);
	if (ret)
		goto out;
	if (res) {
		res->size = p->image_bytes;
		res->block_size = t->bs;
		res->blocks = ext2fs_blocks_count(fs->super);
		res->blocks_used = res->blocks -
				   ext2fs_free_blocks_count(fs->super);
		res->inodes = fs->super->s_inodes_count;
		res->inodes_used = res->inodes -
				   fs->super->s_free_inodes_count;
		res->files = t->files;
		res->bytes = t->bytes;
	}
	err = ext2fs_close_free(&fs);
	if (err)
		ret = xip_error_ext2(err, "%s: writing metadata", tg->spec);
	if (!ret && o->verity)
		ret = build_verity(tg, p, o, res);
	if (!ret)
		ret = xip_seg_sync(tg->seg);
out:
	if (fs)
		ext2fs_free(fs);
	return ret;
}

static int check_opts(const struct xip_build_opts *o, unsigned int bs)
{
	if (bs < 1024 || bs > 65536 || (bs & (bs - 1)))
		return xip_error(-EINVAL,
				 "block size %u: must be a power of two from 1024 to 65536",
				 bs);
	if (o->align && (o->align & (o->align - 1)))
		return xip_error(-EINVAL, "alignment %" PRIu64
				 ": must be a power of two", o->align);
	if (o->align && o->align < bs)
		return xip_error(-EINVAL, "alignment %" PRIu64
				 ": must be at least the block size %u",
				 o->align, bs);
	if (o->tar && o->source)
		return xip_error(-EINVAL,
				 "a tar archive and a source tree exclude each other");
	if (o->salt && (o->salt_len > XIP_VERITY_SALT_MAX || !o->verity))
		return xip_error(-EINVAL, o->verity ?
				 "a salt of at most 256 bytes" :
				 "a salt without --verity");
	if (o->signer && !o->verity)
		return xip_error(-EINVAL, "a signature without --verity");
	if (o->label && strlen(o->label) > EXT2_LABEL_LEN)
		return xip_error(-EINVAL,
				 "label '%s' is too long (at most %d bytes)",
				 o->label, EXT2_LABEL_LEN);
	return 0;
}

static int build_any(const char *image, const struct xip_build_opts *o,
		     const char *oci, const char *platform,
		     struct xip_build_result *res)
{
	unsigned int bs = o->block_size ? o->block_size :
			  (unsigned int)xip_host_page_size();
	struct btarget tg = { .spec = image, .fd = -1, .dirfd = -1 };
	struct btree t = { .bs = bs, .root_fd = -1, .spool_fd = -1 };
	uint64_t fixed;
	struct bplan p;
	int ret;

	if (res) {
		res->signature = NULL;
		res->signature_len = 0;
	}
	ret = check_opts(o, bs);
	if (!ret && oci && (o->tar || o->source))
		ret = xip_error(-EINVAL,
				"an OCI image excludes a tar archive and a source tree");
	if (ret)
		return ret;
	t.clamp = o->have_timestamp;
	t.clamp_time = o->timestamp;
	t.now = o->have_timestamp ? o->timestamp : (int64_t)time(NULL);
	/* refuse a target that must not be written before reading the tree */
	ret = xip_target_probe(&tg, o);
	if (ret)
		goto out;
	/* what the archive's files may need of the spool */
	t.data_max = o->size ? o->size : tg.fixed;
	if (tg.exists) {
		t.skip = true;	/* the old image inside the tree */
		t.skip_dev = tg.dev;
		t.skip_ino = tg.ino;
	}
	ret = oci ? xip_btree_scan_oci(&t, o, oci, platform) :
	      o->tar ? xip_btree_scan_tar(&t, o) : xip_btree_scan(&t, o);
	if (!ret && o->device_table)
		ret = xip_btree_devtable(&t, o->device_table);
	if (!ret)
		ret = xip_btree_finish(&t, o);
	if (ret)
		goto out;
	XIP_DBG(BUILD, "%s: tree of %zu inodes, %" PRIu64 " files, %" PRIu64
		" bytes", oci ? oci : o->tar ? o->tar : o->source ? o->source : "(empty)",
		t.nnodes, t.files, t.bytes);
	fixed = o->size ? o->size : tg.fixed;
	if (tg.fixed && fixed > tg.fixed) {
		ret = xip_error(-ENOSPC, "%s: size %" PRIu64
				" is larger than the device (%" PRIu64 " bytes)",
				image, fixed, tg.fixed);
		goto out;
	}
	fixed -= fixed % bs;
	if (o->verity && tg.fixed) {
		ret = xip_error(-EINVAL, "%s: --verity needs an image file (a device or segment has no room after its file system)",
				image);
		goto out;
	}
	ret = plan(&t, &p, o, fixed);
	if (ret) {
		char msg[XIP_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", xip_errmsg());
		xip_error(ret, "%s: %s", image, msg);
	}
	if (!ret)
		XIP_DBG(BUILD, "%s: plan: %" PRIu64 " bytes, %" PRIu64
			" blocks needed, at least %" PRIu64 " inodes", image,
			p.image_bytes, p.need, p.min_inodes);
	if (!ret)
		ret = build_on(&tg, &t, &p, o, res);
	if (!ret)
		ret = xip_target_commit(&tg);
	if (ret)
		xip_target_abort(&tg);
	if (ret && res) {
		free(res->signature);
		res->signature = NULL;
	}
	XIP_DBG(BUILD, "%s: %s", image, ret ? "abandoned" : "in place");
out:
	xip_target_close(&tg);
	xip_btree_free(&t);
	return ret;
}

int xip_build(const char *image, const struct xip_build_opts *o,
	      struct xip_build_result *res)
{
	return build_any(image, o, NULL, NULL, res);
}

int xip_build_oci(const char *image, const char *layout,
		  const char *platform, const struct xip_build_opts *o,
		  struct xip_build_result *res)
{
	return build_any(image, o, layout, platform, res);
}
