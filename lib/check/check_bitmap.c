// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * verify, pass 5: the block and inode bitmaps and the free counts of
 * the groups and the superblock, compared with what the walk found in use.
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

#include "check/check_int.h"
#include "util/xip_ext2.h"

/* ---- bitmaps ------------------------------------------------------------ */

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

/* Bits @i to @i + 63 of @map (at most @n bits, the others 0). */
static inline uint64_t bits64(const uint8_t *map, uint64_t i, uint64_t n)
{
	uint64_t left = n - i, v = 0;

	if (left >= 64)
		return load64(map + i / 8);
	for (uint64_t k = 0; k < (left + 7) / 8; k++)
		v |= (uint64_t)map[i / 8 + k] << (8 * k);
	return v & ((1ULL << left) - 1);
}

void xip_chk_set_bits(uint8_t *map, uint64_t from, uint64_t to)
{
	while (from < to && (from & 7))
		bit_set(map, from++);
	if (to - from >= 8 && from < to) {
		memset(map + from / 8, 0xff, (to - from) / 8);
		from += (to - from) / 8 * 8;
	}
	while (from < to)
		bit_set(map, from++);
}

uint64_t xip_chk_bitmap_cmp(const uint8_t *disk, const uint8_t *want,
			    uint64_t n, uint64_t nbits, bool *pad_ok,
			    xip_chk_run_fn run, void *arg)
{
	uint64_t used = 0, from = 0;
	int state = -1;		/* -1: no run of differences open */

	for (uint64_t i = 0; i < n; i += 64) {
		uint64_t w = bits64(want, i, n), d = bits64(disk, i, n);
		uint64_t diff = w ^ d;
		unsigned int k, lim = n - i < 64 ? (unsigned int)(n - i) : 64;

		used += (uint64_t)__builtin_popcountll(w);
		if (!diff) {
			if (state >= 0)
				run(arg, from, i - 1, state);
			state = -1;
			continue;
		}
		for (k = 0; k < lim; k++) {
			int s = (diff >> k & 1) ? (int)(w >> k & 1) : -1;

			if (s == state)
				continue;
			if (state >= 0)
				run(arg, from, i + k - 1, state);
			from = i + k;
			state = s;
		}
	}
	if (state >= 0)
		run(arg, from, n - 1, state);
	*pad_ok = true;
	for (uint64_t i = n; i < nbits;) {
		if ((i & 63) || nbits - i < 64) {
			if (!bit_test(disk, i)) {
				*pad_ok = false;
				break;
			}
			i++;
		} else {
			if (load64(disk + i / 8) != UINT64_MAX) {
				*pad_ok = false;
				break;
			}
			i += 64;
		}
	}
	return n - used;
}

/* ---- pass 5: bitmaps and free counts ----------------------------------- */

static void report_run(struct chk *c, uint32_t g, const char *what,
		       uint64_t from, uint64_t to, bool used)
{
	if (from == to)
		chk_err(c, "bitmap", 0, from,
			"group %u: %s %" PRIu64 " %s but marked %s in the bitmap",
			g, what, from, used ? "in use" : "free",
			used ? "free" : "in use");
	else
		chk_err(c, "bitmap", 0, from,
			"group %u: %ss %" PRIu64 "-%" PRIu64 " %s but marked %s in the bitmap",
			g, what, from, to, used ? "in use" : "free",
			used ? "free" : "in use");
}

struct runctx {
	struct chk *c;
	uint32_t g;
	const char *what;
	uint64_t base;
};

static void bitmap_run(void *arg, uint64_t from, uint64_t to, bool used)
{
	struct runctx *r = arg;

	report_run(r->c, r->g, r->what, r->base + from, r->base + to, used);
}

/*
 * A group's free @what count as recorded against @counted (-1: its bitmap
 * could not be checked: false); added to *@total.
 */
static bool free_count(struct chk *c, uint32_t g, const char *what,
		       uint32_t recorded, int64_t counted, uint64_t *total)
{
	if (counted < 0)
		return false;
	if ((uint64_t)counted != recorded)
		chk_err(c, "group", 0, 0,
			"group %u: free %s count %u, should be %" PRIu64, g,
			what, recorded, (uint64_t)counted);
	*total += (uint64_t)counted;
	return true;
}

/*
 * Compare a group's bitmap @disk with the truth @want: @n bits, padding
 * bits up to @nbits set.  Returns the free count, or -1 when the bitmap
 * could not be read (@disk NULL).
 */
static int64_t cmp_bitmap(struct chk *c, uint32_t g, const char *what,
			  const uint8_t *disk, const uint8_t *want,
			  uint64_t base, uint64_t n, uint64_t nbits)
{
	struct runctx r = { c, g, what, base };
	uint64_t free_count;
	bool pad_ok;

	if (!disk)
		return -1;
	free_count = xip_chk_bitmap_cmp(disk, want, n, nbits, &pad_ok,
					bitmap_run, &r);
	if (!pad_ok)
		chk_err(c, "bitmap", 0, 0,
			"group %u: padding at the end of the %s bitmap is not set",
			g, what);
	return (int64_t)free_count;
}

/* The blocks of group @g in use, as they should be in its bitmap. */
static void used_blocks(struct chk *c, uint32_t g, uint8_t *want, uint64_t n)
{
	const struct ext2_group_desc *d = &c->gd[g];
	const uint32_t *own = c->owner[g];
	uint64_t first = group_first(c, g);

	memset(want, 0, c->bs);
	if (own)
		for (uint64_t i = 0; i < n; i++)
			if (own[i])
				bit_set(want, i);
	xip_chk_set_bits(want, 0, xip_chk_super_blocks(c, g));
	if (c->gstate[g] & G_BB_OK)
		bit_set(want, d->bg_block_bitmap - first);
	if (c->gstate[g] & G_IB_OK)
		bit_set(want, d->bg_inode_bitmap - first);
	if (c->gstate[g] & G_IT_OK)
		xip_chk_set_bits(want, d->bg_inode_table - first,
				 d->bg_inode_table - first + c->itb);
}

/* The inodes of group @g in use. */
static void used_inodes(struct chk *c, uint32_t g, uint8_t *want)
{
	const struct chk_ino *st = c->in[g];

	memset(want, 0, c->bs);
	if (st)
		for (uint32_t i = 0; i < c->ipg; i++)
			if (st[i].flags & ST_USED)
				bit_set(want, i);
}

/*
 * Read the block and inode bitmaps of group @g (those placed) into @buf
 * (two blocks): one read when they follow each other, as mke2fs and
 * xiptool mkfs lay them out.
 */
static void read_bitmaps(struct chk *c, uint32_t g, uint8_t *buf,
			 const uint8_t **bb, const uint8_t **ib)
{
	const struct ext2_group_desc *d = &c->gd[g];
	bool bok = c->gstate[g] & G_BB_OK, iok = c->gstate[g] & G_IB_OK;
	uint64_t b = d->bg_block_bitmap, i = d->bg_inode_bitmap;

	*bb = *ib = NULL;
	if (bok && iok && (i == b + 1 || b == i + 1)) {
		uint64_t lo = b < i ? b : i;

		if (!xip_chk_pread(c, buf, 2 * (size_t)c->bs, lo * c->bs)) {
			*bb = buf + (b - lo) * c->bs;
			*ib = buf + (i - lo) * c->bs;
			return;
		}
	}
	if (bok && xip_chk_read_block(c, b, buf))
		*bb = buf;
	if (iok && xip_chk_read_block(c, i, buf + c->bs))
		*ib = buf + c->bs;
}

void xip_chk_bitmaps(struct chk *c)
{
	uint64_t free_blocks = 0, free_inodes = 0;
	uint8_t *want = c->scratch, *buf = c->iobuf;
	bool sums = true;

	for (uint32_t g = 0; g < c->ngroups; g++) {
		const struct ext2_group_desc *d = &c->gd[g];
		uint64_t first = group_first(c, g), n = group_end(c, g) - first;
		int64_t fb = -1, fi = -1;
		const uint8_t *bb, *ib;

		if (c->opts->progress && !(g & 63))
			c->opts->progress(c->opts->progress_arg, "bitmaps", g,
					  c->ngroups);
		read_bitmaps(c, g, buf, &bb, &ib);
		if (c->gstate[g] & G_BB_OK) {
			used_blocks(c, g, want, n);
			fb = cmp_bitmap(c, g, "block", bb, want, first, n,
					c->bpg);
		}
		sums &= free_count(c, g, "block", d->bg_free_blocks_count, fb,
				   &free_blocks);
		if ((c->gstate[g] & G_IB_OK) && (c->gstate[g] & G_IT_OK)) {
			used_inodes(c, g, want);
			fi = cmp_bitmap(c, g, "inode", ib, want,
					(uint64_t)g * c->ipg + 1, c->ipg,
					(uint64_t)c->bs * 8);
		}
		sums &= free_count(c, g, "inode", d->bg_free_inodes_count, fi,
				   &free_inodes);
		if (fi >= 0 && d->bg_used_dirs_count != c->dirs_in_group[g])
			chk_err(c, "group", 0, 0,
				"group %u: directory count %u, should be %u",
				g, d->bg_used_dirs_count, c->dirs_in_group[g]);
	}
	if (!sums)
		return;
	c->used_blocks = c->nblocks - c->first_data - free_blocks;
	if (free_blocks != c->sb.s_free_blocks_count)
		chk_err(c, "superblock", 0, 0,
			"superblock: free block count %u (s_free_blocks_count), should be %" PRIu64,
			c->sb.s_free_blocks_count, free_blocks);
	if (free_inodes != c->sb.s_free_inodes_count)
		chk_err(c, "superblock", 0, 0,
			"superblock: free inode count %u (s_free_inodes_count), should be %" PRIu64,
			c->sb.s_free_inodes_count, free_inodes);
}
