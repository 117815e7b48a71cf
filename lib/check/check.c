// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * verify: an independent walk of the raw structures of an ext2 image.
 *
 * Nothing here trusts libext2fs, nor the image: the superblock geometry is
 * validated first, every array is sized by the validated counts (so by the
 * image size), and every byte is reached through xip_seg_range() after the
 * block number behind it was checked.  Each block is claimed at most once
 * and an indirect block is descended into only when its claim succeeded,
 * so the walk is linear in the size of the image whatever the bytes are.
 *
 * The passes follow e2fsck's: the superblock, the group descriptors and the
 * metadata they place; every inode and its block map (pass 1); directory
 * blocks (pass 2); connectivity (pass 3); link counts (pass 4); bitmaps and
 * free counts (pass 5); then XIP capability and, on request, a comparison
 * with a source tree (check_tree.c).
 *
 * This file is the driver: the public entry points, the options, the order
 * of the passes and the report.  The passes live in check_super.c,
 * check_inode.c (pass 1), check_dir.c (passes 2-4), check_bitmap.c (pass 5)
 * and check_tree.c (--against); check_util.c holds what they share.
 *
 * verify is an independent reader of the on-disk format, on purpose: it
 * must not trust the engine it checks.  It calls none of the engine's
 * reading code (lib/reader/fsread.c, fsmap.c, fsdir.c) nor libext2fs (whose
 * header gives it the layout only), just xip_seg_range() and pread():
 * a checker that read the image through the code under test would share
 * its mistakes, and a block map that code walks wrongly would look sound
 * to both.  Instead, the two readers are compared: tests/unit/test_maps.c
 * runs the engine's block map walk and this one on the same images and
 * wants the same blocks.
 *
 * All on-disk values are little-endian, and are read as such on any host.
 * The copies this walk keeps, the superblock and the group descriptors
 * (check_super.c) and each inode (chk_inode_to_host() in check_int.h), are
 * converted to host order field by field as they are read, but for an
 * inode's i_block; what is read in place, i_block's block pointers,
 * indirect blocks, directory entries, htree roots, extended attribute
 * headers and bitmaps, goes through le16toh(), le32toh() or le64toh()
 * where it is read.  Extent trees are not walked: the extent feature is
 * not ext2, and an image with it is reported as such and not walked.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <endian.h>
#include <unistd.h>

#include "check/xip_check.h"
#include "check/check_int.h"
#include "util/xip_debug.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"
#include "segment/xip_segment.h"
#include "verity/xip_verity.h"
#include "exec/xip_exec.h"

static void chk_finish(struct chk *c)
{
	struct xip_check_report *rep = c->rep;

	for (size_t i = 0; i < rep->nfindings; i++) {
		struct xip_finding *f = &rep->findings[i];
		char *msg = NULL;

		if (f->ino)
			f->path = xip_chk_path(c, f->ino);
		if (f->ino && f->path &&
		    asprintf(&msg, "inode %" PRIu32 " (%s): %s", f->ino,
			     f->path, f->msg) < 0)
			msg = NULL;
		else if (f->ino && !f->path &&
			 asprintf(&msg, "inode %" PRIu32 ": %s", f->ino,
				  f->msg) < 0)
			msg = NULL;
		if (msg) {
			free(f->msg);
			f->msg = msg;
		}
	}
}

/* ---- XIP capability ------------------------------------------------------ */

static void chk_xip(struct chk *c)
{
	unsigned int ps = c->opts->page_size;

	if (!ps)
		ps = (unsigned int)xip_host_page_size();
	c->rep->page_size = ps;
	if (c->bs != ps)
		chk_err(c, "xip", 0, 0,
			"image: block size %u differs from page size %u: not XIP-capable",
			c->bs, ps);
	if (c->seg->size % ps)
		chk_err(c, "xip", 0, 0,
			"image: size %" PRIu64 " is not a multiple of the page size %u: not XIP-capable",
			c->seg->size, ps);
	c->rep->pmem_capable = xip_pmem_capable(c->seg->size, c->bs, ps,
						c->rep->pmem_reason,
						sizeof(c->rep->pmem_reason)) == 1;
}

/* ---- the whole check -------------------------------------------------------- */

static int chk_alloc(struct chk *c)
{
	xip_chk_reader_init(c);
	c->owner = xip_chk_calloc(c, c->ngroups, sizeof(*c->owner));
	c->ea = xip_chk_calloc(c, c->ngroups, sizeof(*c->ea));
	c->in = xip_chk_calloc(c, c->ngroups, sizeof(*c->in));
	c->dirs_in_group = xip_chk_calloc(c, c->ngroups, sizeof(uint32_t));
	for (int i = 0; i < 3; i++)
		c->lvl[i] = xip_chk_calloc(c, c->bs, 1);
	c->scratch = xip_chk_calloc(c, c->bs, 1);
	/* room for a whole struct ext2_inode_large after the last inode */
	c->iobuf = malloc(CHK_IOBUF + sizeof(struct ext2_inode_large));
	if (!c->iobuf)
		c->nomem = true;
	return c->nomem ? -ENOMEM : 0;
}

static void chk_free(struct chk *c)
{
	for (uint32_t g = 0; (c->owner || c->ea || c->in) && g < c->ngroups;
	     g++) {
		if (c->owner)
			free(c->owner[g]);
		if (c->ea)
			free(c->ea[g]);
		if (c->in)
			free(c->in[g]);
	}
	free(c->owner);
	free(c->ea);
	free(c->in);
	for (int i = 0; i < 3; i++)
		free(c->lvl[i]);
	free(c->scratch);
	free(c->iobuf);
	free(c->dirs_in_group);
	free(c->gd);
	free(c->gstate);
	free(c->db);
	free(c->earefs);
	free(c->names);
	free(c->dnames);
	free(c->dnarena);
	xip_chk_tree_free(c);
}

/* A trace line at the end of each pass: the findings so far. */
#define PASS_DONE(c, what)                                                 \
	XIP_DBG(CHECK, "%s: %s done, %zu finding(s)", (c)->seg->path, what, \
		(c)->rep->nfindings)

static int chk_walk(struct chk *c)
{
	int ret;

	ret = xip_chk_super(c);
	PASS_DONE(c, "superblock");
	if (ret)
		return ret < 0 ? ret : 0;
	chk_xip(c);
	ret = chk_alloc(c);
	if (ret)
		return ret;
	ret = xip_chk_groups(c);
	PASS_DONE(c, "group descriptors");
	if (ret)
		return ret < 0 ? ret : 0;
	ret = xip_chk_inodes(c);
	PASS_DONE(c, "pass 1 (inodes and block maps)");
	if (ret)
		return ret;
	xip_chk_ea_refs(c);
	xip_chk_dirs(c);
	PASS_DONE(c, "pass 2 (directories)");
	if (c->nomem)
		return -ENOMEM;
	xip_chk_connect(c);
	xip_chk_links(c);
	PASS_DONE(c, "passes 3 and 4 (connectivity, link counts)");
	xip_chk_bitmaps(c);
	PASS_DONE(c, "pass 5 (bitmaps, free counts)");
	c->rep->walked = true;
	c->rep->inodes_used = c->used_inodes;
	c->rep->blocks_used = c->used_blocks;
	c->rep->files = c->files;
	if (c->opts->against)
		return xip_chk_tree_compare(c);
	return 0;
}

/*
 * The dm-verity tree against the root hash: a finding of object "verity"
 * naming the first bad block and what holds it (its path).
 */
static void chk_verity(struct chk *c)
{
	struct xip_root_hash_report vr;
	struct xip_check_report *rep = c->rep;
	int ret;

	rep->verity_checked = true;
	ret = xip_root_hash_check(c->seg, c->opts->root_hash,
				  c->opts->root_hash_len, &vr);
	rep->verity = vr.info;
	if (ret == -ENOMEM) {
		c->nomem = true;
		return;
	}
	/* no libcrypto: nothing was checked, which is not a mismatch */
	if (ret == -ENOSYS) {
		c->verity_fatal = ret;
		return;
	}
	if (!ret) {
		rep->verity_ok = true;
		return;
	}
	chk_err(c, "verity", 0, vr.bad.block, "%s", xip_errmsg());
	if (rep->nfindings && vr.owner[0] && vr.bad.where == XIP_VERITY_DATA)
		rep->findings[rep->nfindings - 1].path = strdup(vr.owner);
}

int xip_check(struct xip_seg *seg, const struct xip_check_opts *opts,
	      struct xip_check_report *rep)
{
	static const struct xip_check_opts no_opts;
	struct chk c = { .seg = seg, .opts = opts ? opts : &no_opts,
			 .rep = rep };
	int ret;

	memset(rep, 0, sizeof(*rep));
	if (c.opts->root_hash)
		chk_verity(&c);
	if (c.verity_fatal) {
		chk_free(&c);
		return c.verity_fatal;	/* the loader's message stands */
	}
	ret = chk_walk(&c);
	if (!ret && c.nomem)
		ret = -ENOMEM;
	if (ret == -ENOMEM)
		xip_error(ret, "%s: out of memory", seg->path);
	if (!ret)
		chk_finish(&c);
	else
		xip_check_report_free(rep);	/* nothing to free on failure */
	chk_free(&c);
	if (c.opts->progress)
		c.opts->progress(c.opts->progress_arg, NULL, 1, 1);
	return ret;
}

/*
 * The data blocks of inode @ino as verify's walk finds them: the superblock,
 * the descriptors and pass 1 as in xip_check(), then the walk of that
 * inode's map, calling @fn(arg, file block, physical block) in file order.
 * -EUCLEAN when the walk cannot get there or pass 1 found the map unsound
 * (extent-mapped files included: verify walks block maps only).  For
 * tests, which compare it with the engine's walk.
 */
int xip_chk_file_blocks(struct xip_seg *seg, uint32_t ino,
			chk_block_fn fn, void *arg)
{
	static const struct xip_check_opts no_opts;
	struct xip_check_report rep;
	struct chk c = { .seg = seg, .opts = &no_opts, .rep = &rep };
	int ret;

	memset(&rep, 0, sizeof(rep));
	ret = xip_chk_super(&c);
	if (!ret)
		ret = chk_alloc(&c);
	if (!ret)
		ret = xip_chk_groups(&c);
	if (!ret)
		ret = xip_chk_inodes(&c);
	if (ret > 0)
		ret = -EUCLEAN;	/* a problem that stops the walk */
	if (!ret)
		ret = xip_chk_blocks(&c, ino, fn, arg);
	xip_check_report_free(&rep);
	chk_free(&c);
	return ret;
}

void xip_check_report_free(struct xip_check_report *rep)
{
	for (size_t i = 0; i < rep->nfindings; i++) {
		free(rep->findings[i].msg);
		free(rep->findings[i].path);
	}
	free(rep->findings);
	memset(rep, 0, sizeof(*rep));
}
