// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * verify: what every pass shares.  Reading the image (pread on the
 * segment's descriptor, or copies from the mapping), the per-group state of
 * blocks and inodes, findings, and the names and paths of inodes.
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
#include "util/xip_ext2.h"
#include "util/xip_util.h"
#include "segment/xip_segment.h"

/* ---- small helpers ---------------------------------------------------- */

void *xip_chk_calloc(struct chk *c, uint64_t n, size_t size)
{
	void *p;

	if (n > SIZE_MAX / size)
		return NULL;
	p = calloc(n ? n : 1, size);
	if (!p)
		c->nomem = true;
	return p;
}

int xip_chk_grow(struct chk *c, void **arr, size_t *cap, size_t n,
		 size_t size)
{
	if (n < SIZE_MAX && !xip_grow(arr, cap, n + 1, size))
		return 0;
	c->nomem = true;
	return -ENOMEM;
}

/*
 * A pointer to a whole block in the mapping, or NULL when it is not inside
 * the image: for file contents (--against).  Metadata is read with
 * xip_chk_pread(), in batches, rather than touched through the mapping, where
 * every page costs a page-table entry.
 */
const uint8_t *xip_chk_block(struct chk *c, uint64_t blk)
{
	void *p;

	if (blk >= c->nblocks)
		return NULL;
	if (xip_seg_range(c->seg, blk * c->bs, c->bs, &p))
		return NULL;
	return p;
}

/* Read @len bytes of the image at @off: 0 or a negative errno. */
int xip_chk_pread(struct chk *c, void *buf, size_t len, uint64_t off)
{
	ssize_t n;
	void *p;

	if (off > c->seg->size || len > c->seg->size - off)
		return -ERANGE;
	if (!c->use_pread) {
		if (xip_seg_range(c->seg, off, len, &p))
			return -ERANGE;
		memcpy(buf, p, len);
		return 0;
	}
	n = xip_pread_full(c->seg->fd, buf, len, off);
	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EIO;
}

/* Read block @blk of the file system into @buf (c->bs bytes). */
bool xip_chk_read_block(struct chk *c, uint64_t blk, void *buf)
{
	if (blk >= c->nblocks)
		return false;
	return xip_chk_pread(c, buf, c->bs, blk * c->bs) == 0;
}

/* pread where the descriptor allows it (not a DAX device), else copies. */
void xip_chk_reader_init(struct chk *c)
{
	struct stat st;
	char sb[1024];

	c->use_pread = c->seg->fd >= 0 && c->seg->size >= 2048 &&
		       pread(c->seg->fd, sb, sizeof(sb), 1024) ==
		       (ssize_t)sizeof(sb);
	c->seek_data = c->use_pread && !fstat(c->seg->fd, &st) &&
		       S_ISREG(st.st_mode);
	c->hole_q = c->hole_d = UINT64_MAX;
}

/*
 * Whether [off, off + len) of the image may hold anything but zeros:
 * false only when the file has a hole over all of it.  The last answer of
 * SEEK_DATA is kept: from hole_q on, the next data is at hole_d, so one
 * call serves every range in between.
 */
bool xip_chk_may_hold_data(struct chk *c, uint64_t off, uint64_t len)
{
	off_t d;

	if (!c->seek_data)
		return true;
	if (c->hole_q == UINT64_MAX || off < c->hole_q || off > c->hole_d) {
		d = lseek(c->seg->fd, (off_t)off, SEEK_DATA);
		if (d < 0 && errno != ENXIO) {
			c->seek_data = false;
			return true;
		}
		c->hole_q = off;
		c->hole_d = d < 0 ? UINT64_MAX : (uint64_t)d;
	}
	return c->hole_d < off + len;
}

/* ---- per-group state -------------------------------------------------- */

static const struct chk_ino st_none, st_unknown = { .flags = ST_UNKNOWN };

/* The state of inode @ino (a shared all-zero one when nothing is known). */
const struct chk_ino *xip_chk_st(const struct chk *c, uint32_t ino)
{
	uint32_t g;

	if (!c->in || !c->gstate || ino == 0 || ino > c->ninodes)
		return &st_none;
	g = (ino - 1) / c->ipg;
	if (c->in[g])
		return &c->in[g][(ino - 1) % c->ipg];
	return (c->gstate[g] & G_IT_OK) ? &st_none : &st_unknown;
}

/* The state of inode @ino to change; NULL when out of memory. */
struct chk_ino *xip_chk_stw(struct chk *c, uint32_t ino)
{
	uint32_t g;

	if (!c->in || ino == 0 || ino > c->ninodes)
		return NULL;
	g = (ino - 1) / c->ipg;
	if (!c->in[g]) {
		c->in[g] = xip_chk_calloc(c, c->ipg, sizeof(**c->in));
		if (!c->in[g])
			return NULL;
	}
	return &c->in[g][(ino - 1) % c->ipg];
}

/* The inode claiming block @blk (first_data <= blk < nblocks), 0: none. */
uint32_t xip_chk_owner(const struct chk *c, uint64_t blk)
{
	const uint32_t *o = c->owner[blk_group(c, blk)];

	return o ? o[(blk - c->first_data) % c->bpg] : 0;
}

void xip_chk_set_owner(struct chk *c, uint64_t blk, uint32_t ino)
{
	uint32_t g = blk_group(c, blk);

	if (!c->owner[g]) {
		c->owner[g] = xip_chk_calloc(c, c->bpg, sizeof(uint32_t));
		if (!c->owner[g])
			return;
	}
	c->owner[g][(blk - c->first_data) % c->bpg] = ino;
}

bool xip_chk_is_ea(const struct chk *c, uint64_t blk)
{
	const uint8_t *m = c->ea[blk_group(c, blk)];

	return m && bit_test(m, (blk - c->first_data) % c->bpg);
}

void xip_chk_set_ea(struct chk *c, uint64_t blk)
{
	uint32_t g = blk_group(c, blk);

	if (!c->ea[g]) {
		c->ea[g] = xip_chk_calloc(c, (c->bpg + 7) / 8, 1);
		if (!c->ea[g])
			return;
	}
	bit_set(c->ea[g], (blk - c->first_data) % c->bpg);
}

/* ---- findings ----------------------------------------------------------- */

void xip_chk_vfinding(struct chk *c, enum xip_check_severity sev,
		      const char *object, uint32_t ino, uint64_t blk,
		      const char *fmt, va_list ap)
{
	struct xip_check_report *rep = c->rep;
	struct xip_finding *f;
	char *text;

	if (sev == XIP_CHECK_ERROR)
		rep->errors++;
	else
		rep->warnings++;
	if (rep->nfindings >= CHK_MAX_FINDINGS) {
		rep->unlisted++;
		return;
	}
	if (vasprintf(&text, fmt, ap) < 0) {
		c->nomem = true;
		return;
	}
	if (xip_chk_grow(c, (void **)&rep->findings, &c->fcap,
			 rep->nfindings, sizeof(*f))) {
		free(text);
		return;
	}
	f = &rep->findings[rep->nfindings++];
	memset(f, 0, sizeof(*f));
	f->severity = sev;
	f->object = object;
	f->ino = ino;
	f->block = blk;
	f->msg = text;	/* completed with the object in chk_finish() */
}

void xip_chk_finding(struct chk *c, enum xip_check_severity sev,
		     const char *object, uint32_t ino, uint64_t blk,
		     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	xip_chk_vfinding(c, sev, object, ino, blk, fmt, ap);
	va_end(ap);
}


/* ---- names and paths ---------------------------------------------------- */

/* Store a name in the arena: returns 1 + its offset, 0 when out of memory. */
size_t xip_chk_store_name(struct chk *c, const char *name, size_t len)
{
	size_t off = c->nlen;

	if (xip_grow((void **)&c->names, &c->ncap, c->nlen + len + 1, 1)) {
		c->nomem = true;
		return 0;
	}
	memcpy(c->names + off, name, len);
	c->names[off + len] = '\0';
	c->nlen += len + 1;
	return off + 1;
}

/*
 * The path of an inode in the image from the first directory entry that
 * names it, "/" for the root; NULL when no entry names it.  Bounded: a
 * cycle or a too deep chain gives a path starting with "...".
 */
char *xip_chk_path(struct chk *c, uint32_t ino)
{
	size_t cap = 256, len = 0;
	const char *parts[CHK_MAX_DEPTH];
	int n = 0, depth;
	bool cut = false;
	char *out;

	if (!c->in || ino == 0 || ino > c->ninodes)
		return NULL;
	if (ino == EXT2_ROOT_INO)
		return strdup("/");
	if (!xip_chk_st(c, ino)->name_off)
		return NULL;
	for (depth = 0; ino != EXT2_ROOT_INO; depth++) {
		if (ino == 0 || ino > c->ninodes || !xip_chk_st(c, ino)->name_off ||
		    depth >= CHK_MAX_DEPTH || len > 4096) {
			cut = true;
			break;
		}
		parts[n++] = c->names + xip_chk_st(c, ino)->name_off - 1;
		len += strlen(parts[n - 1]) + 1;
		ino = xip_chk_st(c, ino)->parent;
	}
	cap = len + 8;
	out = malloc(cap);
	if (!out)
		return NULL;
	len = 0;
	if (cut)
		len += (size_t)snprintf(out, cap, "...");
	while (n > 0) {
		const char *s = parts[--n];
		size_t l = strlen(s);

		out[len++] = '/';
		memcpy(out + len, s, l);
		len += l;
	}
	out[len] = '\0';
	return out;
}
