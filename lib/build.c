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
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "build.h"
#include "kcopy.h"

#define INODE_SIZE 256
#define MAX_SIZING_ROUNDS 32

/* ---- a 128-bit hash for the derived UUID -------------------------------- */

struct bhash {
	uint64_t a, b;
};

static void bhash_init(struct bhash *h)
{
	h->a = 0xcbf29ce484222325ULL;
	h->b = 0x84222325cbf29ce4ULL;
}

static void bhash_add(struct bhash *h, const void *data, size_t len)
{
	const uint8_t *p = data;

	for (size_t i = 0; i < len; i++) {
		h->a = (h->a ^ p[i]) * 0x100000001b3ULL;
		h->b = (h->b ^ p[i]) * 0x00000100000001b3ULL + (h->a >> 29);
	}
}

static void bhash_u64(struct bhash *h, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	bhash_add(h, b, 8);
}

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void bhash_final(const struct bhash *h, uint64_t salt, uint8_t out[16])
{
	uint64_t x = mix64(h->a ^ salt), y = mix64(h->b + x);

	for (int i = 0; i < 8; i++) {
		out[i] = (uint8_t)(x >> (8 * i));
		out[8 + i] = (uint8_t)(y >> (8 * i));
	}
}

static void tree_hash(const struct btree *t, const struct xip_build_opts *o,
		      struct bhash *h)
{
	bhash_init(h);
	bhash_u64(h, t->bs);
	if (o->label)
		bhash_add(h, o->label, strlen(o->label));
	for (size_t i = 0; i < t->nnodes; i++) {
		const struct bnode *n = t->nodes[i];

		bhash_u64(h, n->ino);
		bhash_u64(h, n->mode);
		bhash_u64(h, ((uint64_t)n->uid << 32) | n->gid);
		bhash_u64(h, n->size);
		bhash_u64(h, (uint64_t)n->mtime);
		bhash_u64(h, n->mtime_ns);
		bhash_u64(h, (uint64_t)n->rdev);
		if (n->target)
			bhash_add(h, n->target, strlen(n->target));
		for (size_t k = 0; k < n->nkids; k++)
			bhash_add(h, n->kids[k].name,
				  strlen(n->kids[k].name) + 1);
		for (size_t k = 0; k < n->nxattrs; k++) {
			bhash_add(h, n->xattrs[k].name,
				  strlen(n->xattrs[k].name) + 1);
			bhash_add(h, n->xattrs[k].value, n->xattrs[k].len);
		}
	}
}

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
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		struct bext *p = realloc(a->e, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		a->e = p;
		a->cap = cap;
	}
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

static blk64_t round_up(blk64_t v, uint64_t align)
{
	return align > 1 ? (v + align - 1) / align * align : v;
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

static int runs_add(struct prun **runs, size_t *n, blk64_t s, uint64_t len)
{
	struct prun *p = realloc(*runs, (*n + 1) * sizeof(*p));

	if (!p)
		return -ENOMEM;
	p[*n].pblk = s;
	p[*n].len = len;
	*runs = p;
	(*n)++;
	return 0;
}

/* Several runs in address order, each extent taken from its start. */
static int balloc_many(struct balloc *a, uint64_t need, uint64_t align,
		       struct prun **runs, size_t *n)
{
	uint64_t avail = 0;
	size_t i;
	int ret;

	for (i = 0; i < a->n; i++)
		avail += a->e[i].end - a->e[i].start;
	if (avail < need)
		return -ENOSPC;
	for (i = 0; need && i < a->n;) {
		struct bext *e = &a->e[i];
		blk64_t s = *n == 0 ? round_up(e->start, align) : e->start;
		uint64_t take;

		if (s >= e->end) {
			i++;
			continue;
		}
		take = e->end - s < need ? e->end - s : need;
		ret = runs_add(runs, n, s, take);
		if (ret)
			return ret;
		need -= take;
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
	blk64_t s;
	int ret;

	if (!need)
		return 0;
	ret = balloc_one(a, need, align, &s);
	if (ret == 0)
		return runs_add(runs, n, s, need);
	if (ret != -ENOSPC)
		return ret;
	if (!splittable && a->strict && need <= a->maxfree)
		return -ENOSPC;
	return balloc_many(a, need, align, runs, n);
}

static int need_cmp(const void *x, const void *y)
{
	const struct bnode *a = *(struct bnode *const *)x;
	const struct bnode *b = *(struct bnode *const *)y;
	uint64_t na = a->data_blocks + a->ind_blocks;
	uint64_t nb = b->data_blocks + b->ind_blocks;

	if (na != nb)
		return na > nb ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
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
	struct xip_segment scratch;
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

	itb = (p->g.inodes * INODE_SIZE + p->g.bs - 1) / p->g.bs;
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
	ret = xipio_register(&p->scratch, p->chan, sizeof(p->chan));
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

		xipio_unregister(&p->scratch);
		ret = plan(t, &need, o, 0);
		if (ret)
			return ret;
		xipio_unregister(&need.scratch);
		return xip_error(-ENOSPC,
				 "image too small: %" PRIu64 " bytes given, needs %" PRIu64 " (%" PRIu64 " MiB)",
				 fixed_bytes, need.image_bytes,
				 (need.image_bytes + (1 << 20) - 1) >> 20);
	}
out:
	xipio_unregister(&p->scratch);
	return ret;
}

/* ---- writing --------------------------------------------------------------- */

/*
 * The indirect blocks of the file being mapped, built in memory and
 * written once each (xip_seg_pwrite): the blocks of a file are mapped
 * in ascending order, so at most one block per level of the tree is in
 * use at a time.  A block left and needed again is read back.
 */
#define IND_CACHE 8

struct iblk {
	blk64_t blk;
	uint32_t *tab;
	uint64_t used;		/* LRU stamp */
	bool valid;
};

struct bwriter {
	struct btree *t;
	const struct xip_build_opts *o;
	ext2_filsys fs;
	struct xip_segment *seg;
	unsigned int bs;
	struct xip_build_progress prog;
	char *dirbuf;
	/* the indirect-block pool of the inode being mapped */
	const struct bnode *n;
	size_t irun;
	uint64_t ioff;
	struct iblk ic[IND_CACHE];
	uint64_t tick;
	uint8_t *icbuf;
};

/* Write @len bytes at block @blk of the image. */
static int write_blocks(struct bwriter *w, blk64_t blk, const void *buf,
			uint64_t len)
{
	uint64_t blocks = ext2fs_blocks_count(w->fs->super);
	int ret;

	if (blk >= blocks || (len + w->bs - 1) / w->bs > blocks - blk)
		return xip_error(-ERANGE, "block %llu beyond the image",
				 (unsigned long long)blk);
	ret = xip_seg_pwrite(w->seg, (uint64_t)blk * w->bs, buf, len);
	if (ret)
		return xip_error(ret, "%s: block %llu: %s", w->seg->path,
				 (unsigned long long)blk, strerror(-ret));
	return 0;
}

static int ind_flush(struct bwriter *w)
{
	int ret = 0;

	for (int i = 0; i < IND_CACHE; i++) {
		struct iblk *c = &w->ic[i];

		if (c->valid && !ret)
			ret = write_blocks(w, c->blk, c->tab, w->bs);
		c->valid = false;
	}
	return ret;
}

/*
 * The indirect block @blk in memory: zeros when @fresh (just taken from
 * the pool), else as written (a new image reads as zeros where nothing
 * was written).
 */
static int ind_load(struct bwriter *w, blk64_t blk, bool fresh,
		    uint32_t **tab)
{
	struct iblk *c = NULL;
	int ret;

	for (int i = 0; i < IND_CACHE; i++) {
		if (w->ic[i].valid && w->ic[i].blk == blk) {
			c = &w->ic[i];
			goto found;
		}
	}
	for (int i = 0; i < IND_CACHE; i++)
		if (!c || !w->ic[i].valid ||
		    (c->valid && w->ic[i].used < c->used))
			c = &w->ic[i];
	if (c->valid) {
		ret = write_blocks(w, c->blk, c->tab, w->bs);
		if (ret)
			return ret;
		c->valid = false;
	}
	if (blk >= ext2fs_blocks_count(w->fs->super))
		return xip_error(-ERANGE, "block %llu beyond the image",
				 (unsigned long long)blk);
	if (fresh) {
		memset(c->tab, 0, w->bs);
	} else {
		ret = xip_seg_pread(w->seg, (uint64_t)blk * w->bs, c->tab,
				      w->bs);
		if (ret)
			return xip_error(ret, "%s: block %llu: %s",
					 w->seg->path,
					 (unsigned long long)blk,
					 strerror(-ret));
	}
	c->blk = blk;
	c->valid = true;
found:
	c->used = ++w->tick;
	*tab = c->tab;
	return 0;
}

static int ind_next(struct bwriter *w, blk64_t *blk)
{
	const struct bnode *n = w->n;

	while (w->irun < n->niruns && w->ioff >= n->iruns[w->irun].len) {
		w->irun++;
		w->ioff = 0;
	}
	if (w->irun >= n->niruns)
		return xip_error(-EFAULT, "inode %u: indirect blocks miscounted",
				 n->ino);
	*blk = n->iruns[w->irun].pblk + w->ioff++;
	return 0;
}

/* The slot that maps @idx in the indirect block @blk. */
static int ind_slot(struct bwriter *w, blk64_t blk, bool fresh, uint64_t idx,
		    uint32_t **slot)
{
	uint32_t *tab = NULL;
	int ret = ind_load(w, blk, fresh, &tab);

	if (ret)
		return ret;
	*slot = &tab[idx];
	return 0;
}

/* The block a slot points to, taken from the pool (@fresh) if none. */
static int ind_get(struct bwriter *w, uint32_t *slot, blk64_t *blk,
		   bool *fresh)
{
	int ret;

	*fresh = false;
	if (*slot) {
		*blk = ext2fs_le32_to_cpu(*slot);
		return 0;
	}
	ret = ind_next(w, blk);
	if (!ret) {
		*slot = ext2fs_cpu_to_le32((uint32_t)*blk);
		*fresh = true;
	}
	return ret;
}

/* Map file block @l to @p through i_block and the indirect blocks. */
static int map_block(struct bwriter *w, struct ext2_inode_large *in,
		     uint64_t l, blk64_t p)
{
	uint64_t P = w->bs / 4, idx[3];
	bool fresh = false;
	uint32_t *slot;
	int depth, ret;
	blk64_t b;

	if (l < EXT2_NDIR_BLOCKS) {
		in->i_block[l] = (uint32_t)p;
		return 0;
	}
	l -= EXT2_NDIR_BLOCKS;
	if (l < P) {
		depth = 1;
		slot = &in->i_block[EXT2_IND_BLOCK];
		idx[0] = l;
	} else if ((l -= P) < P * P) {
		depth = 2;
		slot = &in->i_block[EXT2_DIND_BLOCK];
		idx[0] = l / P;
		idx[1] = l % P;
	} else {
		l -= P * P;
		depth = 3;
		slot = &in->i_block[EXT2_TIND_BLOCK];
		idx[0] = l / (P * P);
		idx[1] = (l / P) % P;
		idx[2] = l % P;
	}
	/* the top slot lives in the inode, in CPU byte order */
	if (!*slot) {
		ret = ind_next(w, &b);
		if (ret)
			return ret;
		*slot = (uint32_t)b;
		fresh = true;
	}
	b = *slot;
	for (int i = 0; i < depth; i++) {
		ret = ind_slot(w, b, fresh, idx[i], &slot);
		if (ret)
			return ret;
		if (i == depth - 1)
			break;
		ret = ind_get(w, slot, &b, &fresh);
		if (ret)
			return ret;
	}
	*slot = ext2fs_cpu_to_le32((uint32_t)p);
	return 0;
}

struct chunk {
	uint64_t lblk;
	blk64_t pblk;
	uint64_t len;
};

typedef int (*chunk_fn)(struct bwriter *w, const struct bnode *n,
			const struct chunk *c, void *arg);

/*
 * Walk the file's data ranges against its physical runs, map every block
 * and call @fn for each piece contiguous on both sides.
 */
static int map_file(struct bwriter *w, const struct bnode *n,
		    struct ext2_inode_large *in, chunk_fn fn, void *arg)
{
	size_t run = 0;
	uint64_t roff = 0;
	int ret;

	w->n = n;
	w->irun = 0;
	w->ioff = 0;
	for (size_t r = 0; r < n->nranges; r++) {
		uint64_t l = n->ranges[r].start, left = n->ranges[r].len;

		while (left) {
			struct chunk c;

			while (run < n->ndruns && roff >= n->druns[run].len) {
				run++;
				roff = 0;
			}
			if (run >= n->ndruns)
				return xip_error(-EFAULT,
						 "inode %u: data blocks miscounted",
						 n->ino);
			c.lblk = l;
			c.pblk = n->druns[run].pblk + roff;
			c.len = n->druns[run].len - roff;
			if (c.len > left)
				c.len = left;
			for (uint64_t k = 0; k < c.len; k++) {
				ret = map_block(w, in, c.lblk + k, c.pblk + k);
				if (ret)
					return ret;
			}
			if (fn && (ret = fn(w, n, &c, arg)))
				return ret;
			l += c.len;
			left -= c.len;
			roff += c.len;
		}
	}
	return ind_flush(w);
}

/* Where a file's bytes are read: its source file, or the spool at @base. */
struct csrc {
	int fd;
	uint64_t base;
};

static int copy_chunk(struct bwriter *w, const struct bnode *n,
		      const struct chunk *c, void *arg)
{
	const struct csrc *src = arg;
	uint64_t off = c->lblk * w->bs, len = c->len * w->bs, done;
	uint64_t blocks = ext2fs_blocks_count(w->fs->super);
	char *p;
	int ret;

	if (off + len > n->size)
		len = n->size - off;
	if (c->pblk >= blocks || c->len > blocks - c->pblk)
		return xip_error(-ERANGE, "block %llu beyond the image",
				 (unsigned long long)c->pblk);
	ret = xip_seg_copy_in(w->seg, (uint64_t)c->pblk * w->bs, src->fd,
				src->base + off, len, &done);
	if (!ret && done == len)
		return 0;
	p = btree_path(w->t, n);
	if (ret == -ERANGE || ret == -EROFS || (ret && !p))
		ret = xip_error(ret, "%s: %s", w->seg->path, strerror(-ret));
	else
		ret = ret ? xip_error(ret, "%s: %s", p, strerror(-ret)) :
		      xip_error(-EIO, "%s: file shrank while being copied", p);
	free(p);
	return ret;
}

static int copy_file(struct bwriter *w, const struct bnode *n,
		     struct ext2_inode_large *in)
{
	struct csrc src = { -1, 0 };
	int ret;

	if (n->spooled) {
		src.fd = w->t->spool_fd;
		src.base = n->spool_off;
	} else if (n->nranges) {
		ret = btree_open_source(w->t, n, &src.fd);
		if (ret)
			return ret;
	}
	ret = map_file(w, n, in, copy_chunk, &src);
	if (src.fd >= 0 && !n->spooled)
		close(src.fd);
	w->prog.files_done++;
	w->prog.bytes_done += n->size;
	if (w->o->progress)
		w->o->progress(&w->prog, w->o->progress_arg);
	return ret;
}

static int ftype(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return EXT2_FT_REG_FILE;
	case S_IFDIR:
		return EXT2_FT_DIR;
	case S_IFCHR:
		return EXT2_FT_CHRDEV;
	case S_IFBLK:
		return EXT2_FT_BLKDEV;
	case S_IFIFO:
		return EXT2_FT_FIFO;
	case S_IFSOCK:
		return EXT2_FT_SOCK;
	case S_IFLNK:
		return EXT2_FT_SYMLINK;
	default:
		return EXT2_FT_UNKNOWN;
	}
}

struct dirfill {
	const struct bnode *dir;
	size_t next;		/* next child to place */
	bool dots_done;
};

static struct ext2_dir_entry *dirent_put(struct bwriter *w, size_t *used,
					 ext2_ino_t ino, const char *name,
					 size_t len, int type)
{
	struct ext2_dir_entry *de = (void *)(w->dirbuf + *used);
	size_t rec = (8 + len + 3) & ~(size_t)3;

	de->inode = ino;
	ext2fs_dirent_set_name_len(de, (int)len);
	ext2fs_dirent_set_file_type(de, type);
	memcpy(de->name, name, len);
	ext2fs_set_rec_len(w->fs, (unsigned int)rec, de);
	*used += rec;
	return de;
}

static int dir_chunk(struct bwriter *w, const struct bnode *n,
		     const struct chunk *c, void *arg)
{
	struct dirfill *f = arg;
	errcode_t err;

	for (uint64_t k = 0; k < c->len; k++) {
		struct ext2_dir_entry *last = NULL;
		size_t used = 0;

		memset(w->dirbuf, 0, w->bs);
		if (!f->dots_done) {
			ext2_ino_t up = n->parent && n != w->t->root ?
					n->parent->ino : EXT2_ROOT_INO;

			dirent_put(w, &used, n->ino, ".", 1, EXT2_FT_DIR);
			last = dirent_put(w, &used, up, "..", 2, EXT2_FT_DIR);
			f->dots_done = true;
		}
		while (f->next < n->nkids) {
			const struct bentry *e = &n->kids[f->next];
			size_t len = strlen(e->name);

			if (used + ((8 + len + 3) & ~(size_t)3) > w->bs)
				break;
			last = dirent_put(w, &used, e->node->ino, e->name, len,
					  ftype(e->node->mode));
			f->next++;
		}
		if (!last) {
			last = (void *)w->dirbuf;
			last->inode = 0;
		}
		ext2fs_set_rec_len(w->fs, w->bs - (unsigned int)((char *)last -
								 w->dirbuf),
				   last);
		err = ext2fs_write_dir_block4(w->fs, c->pblk + k, w->dirbuf, 0,
					      n->ino);
		if (err)
			return xip_error_ext2(err, "inode %u: directory block",
					      n->ino);
	}
	return 0;
}

static int link_chunk(struct bwriter *w, const struct bnode *n,
		      const struct chunk *c, void *arg)
{
	if (n->size > w->bs)
		return xip_error(-EFAULT, "inode %u: link target too long",
				 n->ino);
	memset(w->dirbuf, 0, w->bs);
	memcpy(w->dirbuf, n->target, n->size);
	return write_blocks(w, c->pblk, w->dirbuf, w->bs);
}

static void set_time(uint32_t *lo, uint32_t *extra, int64_t sec, uint32_t ns)
{
	*lo = (uint32_t)sec;
	*extra = (uint32_t)(((sec - (int32_t)sec) >> 32) & EXT4_EPOCH_MASK) |
		 (ns << EXT4_EPOCH_BITS);
}

static void inode_fill(struct bwriter *w, const struct bnode *n,
		       struct ext2_inode_large *in)
{
	memset(in, 0, sizeof(*in));
	in->i_mode = (uint16_t)(n->mode & 0xffff);
	in->i_uid = (uint16_t)n->uid;
	ext2fs_set_i_uid_high(*in, n->uid >> 16);
	in->i_gid = (uint16_t)n->gid;
	ext2fs_set_i_gid_high(*in, n->gid >> 16);
	in->i_links_count = (uint16_t)n->nlink;
	in->i_size = (uint32_t)n->size;
	in->i_size_high = (uint32_t)(n->size >> 32);
	in->i_extra_isize = sizeof(struct ext2_inode_large) -
			    EXT2_GOOD_OLD_INODE_SIZE;
	set_time(&in->i_atime, &in->i_atime_extra, n->atime, n->atime_ns);
	set_time(&in->i_mtime, &in->i_mtime_extra, n->mtime, n->mtime_ns);
	set_time(&in->i_ctime, &in->i_ctime_extra, n->ctime, n->ctime_ns);
	in->i_blocks = (uint32_t)((n->data_blocks + n->ind_blocks) *
				  (w->bs / 512));
}

static int write_node(struct bwriter *w, const struct bnode *n)
{
	struct ext2_inode_large in;
	struct dirfill f = { n, 0, false };
	uint32_t dev[2];
	errcode_t err;
	int ret = 0;

	inode_fill(w, n, &in);
	switch (n->mode & S_IFMT) {
	case S_IFREG:
		ret = copy_file(w, n, &in);
		break;
	case S_IFDIR:
		ret = map_file(w, n, &in, dir_chunk, &f);
		if (!ret && f.next != n->nkids)
			ret = xip_error(-EFAULT,
					"inode %u: directory blocks miscounted",
					n->ino);
		break;
	case S_IFLNK:
		if (n->data_blocks)
			ret = map_file(w, n, &in, link_chunk, NULL);
		else
			memcpy(in.i_block, n->target, n->size);
		break;
	case S_IFCHR:
	case S_IFBLK:
		xip_build_encode_dev(n->rdev, dev);
		in.i_block[0] = dev[0];
		in.i_block[1] = dev[1];
		break;
	}
	if (ret)
		return ret;
	err = ext2fs_write_inode_full(w->fs, n->ino, (struct ext2_inode *)&in,
				      sizeof(in));
	if (err)
		return xip_error_ext2(err, "inode %u", n->ino);
	ext2fs_inode_alloc_stats2(w->fs, n->ino, +1, S_ISDIR(n->mode));
	return 0;
}

static int write_xattrs(struct bwriter *w, const struct bnode *n)
{
	struct ext2_xattr_handle *h;
	errcode_t err;
	size_t i = 0;

	err = ext2fs_xattrs_open(w->fs, n->ino, &h);
	if (err)
		goto fail;
	err = ext2fs_xattrs_read(h);
	for (; !err && i < n->nxattrs; i++)
		err = ext2fs_xattr_set(h, n->xattrs[i].name, n->xattrs[i].value,
				       n->xattrs[i].len);
	ext2fs_xattrs_close(&h);
	if (!err)
		return 0;
fail:
	{
		char *p = btree_path(w->t, n);
		int ret = xip_error_ext2(err, "%s: extended attribute %s",
					 p ? p : "?",
					 i && i <= n->nxattrs ?
					 n->xattrs[i - 1].name : "");

		free(p);
		return ret;
	}
}

static int mark_runs(ext2_filsys fs, const struct prun *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ext2fs_block_alloc_stats_range(fs, r[i].pblk,
					       (blk_t)r[i].len, +1);
	return 0;
}

static void super_fill(struct bwriter *w, const struct xip_build_opts *o,
		       const struct bhash *h)
{
	struct ext2_super_block *sb = w->fs->super;
	int64_t now = w->t->now;

	switch (o->uuid_mode) {
	case XIP_UUID_GIVEN:
		memcpy(sb->s_uuid, o->uuid, 16);
		break;
	case XIP_UUID_RANDOM:
		if (getrandom(sb->s_uuid, 16, 0) != 16)
			bhash_final(h, (uint64_t)time(NULL), sb->s_uuid);
		break;
	case XIP_UUID_CLEAR:
		memset(sb->s_uuid, 0, 16);
		break;
	default:
		bhash_final(h, 0x75756964, sb->s_uuid);
		break;
	}
	if (o->uuid_mode == XIP_UUID_DERIVED || o->uuid_mode == XIP_UUID_RANDOM) {
		/* version 8 (derived) or 4 (random), RFC variant */
		sb->s_uuid[6] = (uint8_t)((sb->s_uuid[6] & 0x0f) |
					  (o->uuid_mode == XIP_UUID_DERIVED ?
					   0x80 : 0x40));
		sb->s_uuid[8] = (uint8_t)((sb->s_uuid[8] & 0x3f) | 0x80);
	}
	{
		struct bhash hs = *h;

		bhash_add(&hs, sb->s_uuid, 16);
		bhash_final(&hs, 0x68617368, (uint8_t *)sb->s_hash_seed);
	}
	sb->s_def_hash_version = EXT2_HASH_HALF_MD4;
	sb->s_flags |= ((char)0xff < 0) ? EXT2_FLAGS_SIGNED_HASH :
					  EXT2_FLAGS_UNSIGNED_HASH;
	memset(sb->s_volume_name, 0, sizeof(sb->s_volume_name));
	if (o->label)
		memcpy(sb->s_volume_name, o->label, strlen(o->label));
	sb->s_max_mnt_count = (uint16_t)-1;
	sb->s_checkinterval = 0;
	sb->s_mkfs_time = (uint32_t)now;
	sb->s_wtime = (uint32_t)now;
	sb->s_lastcheck = (uint32_t)now;
	sb->s_mtime = 0;
	sb->s_kbytes_written = 0;
	w->fs->now = (time_t)now;
	ext2fs_mark_super_dirty(w->fs);
}

static int write_all(struct bwriter *w, const struct bhash *h)
{
	struct btree *t = w->t;
	int ret = 0;

	for (size_t i = 0; i < t->nnodes; i++) {
		mark_runs(w->fs, t->nodes[i]->druns, t->nodes[i]->ndruns);
		mark_runs(w->fs, t->nodes[i]->iruns, t->nodes[i]->niruns);
	}
	for (ext2_ino_t ino = 1; ino < EXT2_GOOD_OLD_FIRST_INO; ino++)
		if (ino != EXT2_ROOT_INO)
			ext2fs_inode_alloc_stats2(w->fs, ino, +1, 0);
	w->prog.files_total = t->files;
	w->prog.bytes_total = t->bytes;
	for (size_t i = 0; !ret && i < t->nnodes; i++)
		ret = write_node(w, t->nodes[i]);
	for (size_t i = 0; !ret && i < t->nnodes; i++)
		if (t->nodes[i]->nxattrs)
			ret = write_xattrs(w, t->nodes[i]);
	if (!ret)
		super_fill(w, w->o, h);
	return ret;
}

/*
 * The blocks libext2fs writes in every group (superblock and descriptor
 * backups, bitmaps), allocated in the image file in ascending order
 * before anything is written, as one range where they touch: a sparse
 * image of a large size then flushes them as a few long writes.  Only an
 * optimisation: a failure is left to the writes to report.
 */
static void reserve_meta(struct bwriter *w)
{
	ext2_filsys fs = w->fs;
	blk64_t run = 0, end = 0;

	for (dgrp_t g = 0; g < fs->group_desc_count; g++) {
		blk64_t b[3][2], first = ext2fs_group_first_block2(fs, g);
		int n = 0;

		if (ext2fs_bg_has_super(fs, (int)g)) {
			b[n][0] = first;
			b[n++][1] = first + 1 + fs->desc_blocks +
				    fs->super->s_reserved_gdt_blocks;
		}
		b[n][0] = ext2fs_block_bitmap_loc(fs, g);
		b[n][1] = b[n][0] + 1;
		n++;
		b[n][0] = ext2fs_inode_bitmap_loc(fs, g);
		b[n][1] = b[n][0] + 1;
		n++;
		for (int i = 0; i < n; i++) {
			if (b[i][0] == end) {
				end = b[i][1];
				continue;
			}
			if (end > run)
				xip_build_reserve(w->seg, run * w->bs,
						  (end - run) * w->bs);
			run = b[i][0];
			end = b[i][1];
		}
	}
	if (end > run)
		xip_build_reserve(w->seg, run * w->bs, (end - run) * w->bs);
}

static int build_on(struct btarget *tg, struct btree *t, struct bplan *p,
		    const struct xip_build_opts *o, struct xip_build_result *res)
{
	struct bwriter w = { .t = t, .o = o, .bs = t->bs };
	char chan[64];
	struct bhash h;
	errcode_t err;
	int ret;

	ret = target_open(tg, p->image_bytes);
	if (ret)
		return ret;
	w.seg = tg->seg;
	ret = xipio_register(tg->seg, chan, sizeof(chan));
	if (ret)
		return ret;
	ret = geom_init(&p->g, chan, &w.fs);
	if (ret)
		goto out;
	/* every block written with pwrite(2), nothing through the mapping */
	err = io_channel_set_options(w.fs->io, "pio");
	if (err) {
		ret = xip_error_ext2(err, "%s: writing", tg->spec);
		goto out;
	}
	w.dirbuf = calloc(1, t->bs);
	w.icbuf = malloc((size_t)IND_CACHE * t->bs);
	if (!w.dirbuf || !w.icbuf) {
		ret = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < IND_CACHE; i++)
		w.ic[i].tab = (uint32_t *)(w.icbuf + (size_t)i * t->bs);
	reserve_meta(&w);
	if (o->test_after_scan)
		o->test_after_scan(o->test_after_scan_arg);
	tree_hash(t, o, &h);
	bhash_u64(&h, ext2fs_blocks_count(w.fs->super));
	bhash_u64(&h, w.fs->super->s_inodes_count);
	ret = write_all(&w, &h);
	if (ret)
		goto out;
	if (res) {
		res->size = p->image_bytes;
		res->block_size = t->bs;
		res->blocks = ext2fs_blocks_count(w.fs->super);
		res->blocks_used = res->blocks -
				   ext2fs_free_blocks_count(w.fs->super);
		res->inodes = w.fs->super->s_inodes_count;
		res->inodes_used = res->inodes -
				   w.fs->super->s_free_inodes_count;
		res->files = t->files;
		res->bytes = t->bytes;
	}
	err = ext2fs_close_free(&w.fs);
	if (err)
		ret = xip_error_ext2(err, "%s: writing metadata", tg->spec);
	if (!ret)
		ret = segment_sync(tg->seg);
out:
	if (w.fs)
		ext2fs_free(w.fs);
	free(w.dirbuf);
	free(w.icbuf);
	xipio_unregister(tg->seg);
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
	if (o->label && strlen(o->label) > EXT2_LABEL_LEN)
		return xip_error(-EINVAL,
				 "label '%s' is too long (at most %d bytes)",
				 o->label, EXT2_LABEL_LEN);
	return 0;
}

int xip_build(const char *image, const struct xip_build_opts *o,
	      struct xip_build_result *res)
{
	unsigned int bs = o->block_size ? o->block_size :
			  (unsigned int)xip_host_page_size();
	struct btarget tg = { .spec = image, .fd = -1, .dirfd = -1 };
	struct btree t = { .bs = bs, .root_fd = -1, .spool_fd = -1 };
	uint64_t fixed;
	struct bplan p;
	int ret;

	ret = check_opts(o, bs);
	if (ret)
		return ret;
	t.clamp = o->have_timestamp;
	t.clamp_time = o->timestamp;
	t.now = o->have_timestamp ? o->timestamp : (int64_t)time(NULL);
	/* refuse a target that must not be written before reading the tree */
	ret = target_probe(&tg, o);
	if (ret)
		goto out;
	if (tg.exists) {
		t.skip = true;	/* the old image inside the tree */
		t.skip_dev = tg.dev;
		t.skip_ino = tg.ino;
	}
	ret = o->tar ? btree_scan_tar(&t, o) : btree_scan(&t, o);
	if (!ret && o->device_table)
		ret = btree_devtable(&t, o->device_table);
	if (!ret)
		ret = btree_finish(&t, o);
	if (ret)
		goto out;
	fixed = o->size ? o->size : tg.fixed;
	if (tg.fixed && fixed > tg.fixed) {
		ret = xip_error(-ENOSPC, "%s: size %" PRIu64
				" is larger than the device (%" PRIu64 " bytes)",
				image, fixed, tg.fixed);
		goto out;
	}
	fixed -= fixed % bs;
	ret = plan(&t, &p, o, fixed);
	if (ret) {
		char msg[XIP_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", xip_errmsg());
		xip_error(ret, "%s: %s", image, msg);
	}
	if (!ret)
		ret = build_on(&tg, &t, &p, o, res);
	if (!ret)
		ret = target_commit(&tg);
	if (ret)
		target_abort(&tg);
out:
	target_close(&tg);
	btree_free(&t);
	return ret;
}
