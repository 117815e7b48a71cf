// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * verify, passes 2 to 4: directory blocks and their entries (pass 2),
 * connectivity from the root (pass 3) and link counts (pass 4).
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
#include "util/xip_util.h"

/* ---- pass 2: directories ------------------------------------------------ */

static const char *ftype_name(unsigned int t)
{
	static const char *const names[] = {
		"unknown", "regular file", "directory", "character device",
		"block device", "fifo", "socket", "symlink",
	};

	return t < 8 ? names[t] : "invalid";
}

struct dirctx {
	struct chk *c;
	uint32_t dir;
	uint64_t lblk, pblk;
	unsigned int idx;	/* entries seen in this directory block */
	unsigned int problems;
};

static void dir_problem(struct dirctx *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void dir_problem(struct dirctx *d, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	if (++d->problems > CHK_MAX_PER_INODE) {
		d->c->rep->errors++;
		d->c->rep->unlisted++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	chk_err(d->c, "directory", d->dir, d->pblk,
		"directory block %" PRIu64 " (block %" PRIu64 "): %s", d->lblk,
		d->pblk, text);
}

/* A printable copy of an entry name (control bytes as '?'). */
static void safe_name(char *out, size_t outlen, const char *name, size_t len)
{
	size_t i;

	if (len > outlen - 1)
		len = outlen - 1;
	for (i = 0; i < len; i++)
		out[i] = (unsigned char)name[i] < 0x20 ? '?' : name[i];
	out[i] = '\0';
}

/* The file type of an entry against its inode's (@want), as e2fsck. */
static void entry_ftype(struct dirctx *d, const char *shown, uint32_t ino,
			unsigned int ftype, unsigned int want)
{
	if (d->c->sb.s_feature_incompat & EXT2_FEATURE_INCOMPAT_FILETYPE) {
		if (ftype != want && want != EXT2_FT_UNKNOWN)
			dir_problem(d, "entry '%s' (inode %" PRIu32 ") has file type %s, the inode is a %s",
				    shown, ino, ftype_name(ftype),
				    ftype_name(want));
	} else if (ftype) {
		dir_problem(d, "entry '%s' has a file type without the filetype feature",
			    shown);
	}
}

static uint32_t name_hash(const char *name, unsigned int len)
{
	uint32_t h = 2166136261u;	/* FNV-1a */

	for (unsigned int i = 0; i < len; i++)
		h = (h ^ (uint8_t)name[i]) * 16777619u;
	return h;
}

static void dname_put(struct chk_dname *tab, size_t cap,
		      const struct chk_dname *e)
{
	size_t i = e->hash & (cap - 1);

	while (tab[i].gen == e->gen && tab[i].name)
		i = (i + 1) & (cap - 1);
	tab[i] = *e;
}

/*
 * Whether @name was already seen in the directory being read (e2fsck's
 * duplicate entry check); remembers it otherwise.  Linear: one hash
 * table for all directories, emptied by changing generation.
 */
static bool dname_seen(struct chk *c, const char *name, unsigned int len)
{
	struct chk_dname e = { 0, name_hash(name, len), c->dgen };
	size_t i;

	/*
	 * The names are kept: the block they are read from is not.  (A
	 * directory of more than 4 GiB of names is not looked at further.)
	 */
	if (c->nomem || len > 255 || c->dnalen + len + 1 >= UINT32_MAX)
		return false;
	if (xip_grow((void **)&c->dnarena, &c->dnacap, c->dnalen + len + 1,
		     1)) {
		c->nomem = true;
		return false;
	}
	if ((c->dnn + 1) * 2 > c->dncap) {
		size_t cap = c->dncap ? c->dncap * 2 : 256;
		struct chk_dname *tab = calloc(cap, sizeof(*tab));

		if (!tab) {
			c->nomem = true;
			return false;
		}
		for (i = 0; i < c->dncap; i++)
			if (c->dnames[i].gen == c->dgen && c->dnames[i].name)
				dname_put(tab, cap, &c->dnames[i]);
		free(c->dnames);
		c->dnames = tab;
		c->dncap = cap;
	}
	for (i = e.hash & (c->dncap - 1);
	     c->dnames[i].gen == c->dgen && c->dnames[i].name;
	     i = (i + 1) & (c->dncap - 1)) {
		const struct chk_dname *o = &c->dnames[i];

		if (o->hash == e.hash &&
		    (uint8_t)c->dnarena[o->name - 1] == len &&
		    !memcmp(c->dnarena + o->name, name, len))
			return true;
	}
	c->dnarena[c->dnalen] = (char)len;
	memcpy(c->dnarena + c->dnalen + 1, name, len);
	e.name = (uint32_t)(c->dnalen + 1);
	c->dnalen += len + 1;
	c->dnames[i] = e;
	c->dnn++;
	return false;
}

/* A new directory: forget the names of the last one. */
static void dname_reset(struct chk *c)
{
	c->dnn = 0;
	c->dnalen = 0;
	if (++c->dgen == 0) {	/* wrapped: old entries could look current */
		memset(c->dnames, 0, c->dncap * sizeof(*c->dnames));
		c->dgen = 1;
	}
}

static void dir_entry(struct dirctx *d, uint32_t ino, const char *name,
		      unsigned int nlen, unsigned int ftype)
{
	struct chk *c = d->c;
	bool dot = nlen == 1 && name[0] == '.';
	bool dotdot = nlen == 2 && name[0] == '.' && name[1] == '.';
	struct chk_ino *st;
	char shown[EXT2_NAME_LEN + 1];

	safe_name(shown, sizeof(shown), name, nlen);
	if (d->lblk == 0 && d->idx == 0) {
		if (!dot)
			dir_problem(d, "first entry is '%s', not '.'", shown);
		else if (ino != d->dir)
			dir_problem(d, "'.' points to inode %" PRIu32, ino);
		else
			xip_chk_stw(c, d->dir)->flags |= ST_HAS_DOT;
		/* a record holds at least 4 name bytes; e2fsck wants NULs */
		if (dot && name[1] != '\0')
			dir_problem(d, "'.' entry is not NUL-terminated");
		if (dot) {
			entry_ftype(d, shown, ino, ftype, EXT2_FT_DIR);
			xip_chk_stw(c, d->dir)->counted++;
			return;
		}
	} else if (d->lblk == 0 && d->idx == 1) {
		if (!dotdot) {
			dir_problem(d, "second entry is '%s', not '..'", shown);
		} else {
			xip_chk_stw(c, d->dir)->flags |= ST_HAS_DOTDOT;
			xip_chk_stw(c, d->dir)->dotdot = ino;
			if (name[2] != '\0')
				dir_problem(d, "'..' entry is not NUL-terminated");
		}
	} else if (dot || dotdot) {
		dir_problem(d, "extra '%s' entry", shown);
		return;
	}
	if (nlen == 0) {
		dir_problem(d, "entry with an empty name");
		return;
	}
	if (memchr(name, '/', nlen) || memchr(name, '\0', nlen)) {
		dir_problem(d, "entry '%s' has '/' or NUL in its name", shown);
		return;
	}
	if (!dotdot && dname_seen(c, name, nlen))
		dir_problem(d, "entry '%s' appears twice in the directory", shown);
	if (ino > c->ninodes) {
		dir_problem(d, "entry '%s' has invalid inode number %" PRIu32,
			    shown, ino);
		return;
	}
	if (ino < c->first_ino && ino != EXT2_ROOT_INO) {
		dir_problem(d, "entry '%s' points to reserved inode %" PRIu32,
			    shown, ino);
		return;
	}
	if (xip_chk_st(c, ino)->flags & ST_UNKNOWN)
		return;
	if (!(xip_chk_st(c, ino)->flags & ST_USED)) {
		dir_problem(d, "entry '%s' points to unused inode %" PRIu32,
			    shown, ino);
		return;
	}
	st = xip_chk_stw(c, ino);	/* in use: its group's state exists */
	entry_ftype(d, shown, ino, ftype, st->ftype);
	st->counted++;
	if (dotdot)
		return;
	if (!st->name_off) {
		st->name_off = xip_chk_store_name(c, name, nlen);
		st->parent = d->dir;
	} else if (st->flags & ST_DIR) {
		char *a = xip_chk_path(c, ino);

		dir_problem(d, "entry '%s' is a second link to directory inode %" PRIu32 " (%s)",
			    shown, ino, a ? a : "?");
		free(a);
	}
	if (c->opts->against)
		xip_chk_tree_entry(c, d->dir, ino, name, nlen);
}

static void chk_htree_root(struct dirctx *d, const uint8_t *b)
{
	const struct ext2_dx_root_info *ri =
		(const struct ext2_dx_root_info *)(b + 24);

	if (le32toh(ri->reserved_zero) || ri->info_length != 8 ||
	    ri->hash_version > EXT2_HASH_SIPHASH || ri->indirect_levels > 1)
		dir_problem(d, "invalid htree root (hash %u, levels %u, length %u)",
			    ri->hash_version, ri->indirect_levels,
			    ri->info_length);
}

static void chk_dir_block(struct chk *c, const struct chk_dblk *db,
			  const uint8_t *b, int64_t *expect)
{
	struct dirctx d = { .c = c, .dir = db->ino, .lblk = db->lblk,
			    .pblk = db->pblk };
	uint32_t off = 0;

	if ((int64_t)db->lblk != *expect)
		chk_err(c, "directory", db->ino, 0,
			"directory has a hole at block %" PRId64, *expect);
	*expect = (int64_t)db->lblk + 1;
	if (!b)
		return;
	if (db->lblk == 0 &&
	    (xip_chk_st(c, db->ino)->flags & ST_INDEX))
		chk_htree_root(&d, b);
	while (off < c->bs) {
		const struct ext2_dir_entry_2 *de =
			(const struct ext2_dir_entry_2 *)(b + off);
		unsigned int rec, nlen, ftype;

		if (c->bs - off < 12) {
			dir_problem(&d, "entry at offset %u is truncated", off);
			return;
		}
		rec = le16toh(de->rec_len);
		if (c->bs >= 65536 && (rec == 65535 || rec == 0))
			rec = 65536;
		nlen = de->name_len;
		ftype = de->file_type;
		if (!(c->sb.s_feature_incompat & EXT2_FEATURE_INCOMPAT_FILETYPE)) {
			if (ftype) {
				dir_problem(&d, "entry at offset %u: name length %u too large",
					    off, nlen | ftype << 8);
				return;
			}
		}
		if (rec < 12 || rec % 4 || rec > c->bs - off) {
			dir_problem(&d, "entry at offset %u: invalid rec_len %u",
				    off, rec);
			return;
		}
		if ((nlen + 8 + 3u) / 4 * 4 > rec) {
			dir_problem(&d, "entry at offset %u: name_len %u exceeds rec_len %u",
				    off, nlen, rec);
			return;
		}
		if (le32toh(de->inode)) {
			dir_entry(&d, le32toh(de->inode), de->name, nlen,
				  ftype);
			d.idx++;
		} else if (db->lblk == 0 && d.idx < 2) {
			dir_problem(&d, "missing '%s' entry",
				    d.idx ? ".." : ".");
			d.idx++;
		}
		off += rec;
	}
}

/* Pass 2 reads the directory blocks in runs of consecutive blocks. */
void xip_chk_dirs(struct chk *c)
{
	uint32_t max = CHK_IOBUF / c->bs;
	uint8_t *buf = c->iobuf;
	size_t bstart = 0, bn = 0;	/* db[bstart..+bn) are in buf */
	bool bok = false;
	int64_t expect = 0;
	uint32_t cur = 0;

	for (size_t i = 0; i < c->ndb; i++) {
		if (c->db[i].ino != cur) {
			cur = c->db[i].ino;
			expect = 0;
			dname_reset(c);
			if (c->opts->against)
				xip_chk_tree_dir_start(c, cur);
		}
		if (!(i & 4095)) {
			if (c->opts->progress)
				c->opts->progress(c->opts->progress_arg,
						  "directories", i, c->ndb);
		}
		if (i >= bstart + bn) {
			/* the next run of blocks that follow each other */
			bstart = i;
			bn = 1;
			while (bn < max && i + bn < c->ndb &&
			       c->db[i + bn].pblk == c->db[i].pblk + bn)
				bn++;
			bok = !xip_chk_pread(c, buf, bn * c->bs,
					 c->db[i].pblk * c->bs);
			if (!bok)
				bn = 1;	/* block by block then */
			if (!bok)
				bok = xip_chk_read_block(c, c->db[i].pblk, buf);
		}
		chk_dir_block(c, &c->db[i],
			      bok ? buf + (i - bstart) * c->bs : NULL,
			      &expect);
	}
}

/* ---- pass 3: connectivity ------------------------------------------------ */

void xip_chk_connect(struct chk *c)
{
	uint32_t *stack = NULL;
	size_t cap = 0;

	if (!(xip_chk_st(c, EXT2_ROOT_INO)->flags & ST_DIR))
		return;
	xip_chk_stw(c, EXT2_ROOT_INO)->flags |= ST_REACHABLE | ST_DONE;
	xip_chk_stw(c, EXT2_ROOT_INO)->parent = EXT2_ROOT_INO;
	for (uint32_t ino = 1; ino <= c->ninodes; ino++) {
		struct chk_ino *st;
		size_t n = 0;
		uint32_t p = ino;
		bool ok;

		if (!c->in[(ino - 1) / c->ipg]) {
			/* no inode of the group in use */
			ino += c->ipg - 1 - (ino - 1) % c->ipg;
			continue;
		}
		st = xip_chk_stw(c, ino);
		if (!(st->flags & ST_DIR) || (st->flags & ST_DONE))
			continue;
		/* climb the parents until a known directory or a loop */
		while (p && p <= c->ninodes &&
		       !(xip_chk_st(c, p)->flags & (ST_DONE | ST_BUSY)) &&
		       (xip_chk_st(c, p)->flags & ST_DIR)) {
			if (xip_chk_grow(c, (void **)&stack, &cap, n,
					 sizeof(*stack)))
				goto out;
			stack[n++] = p;
			xip_chk_stw(c, p)->flags |= ST_BUSY;
			p = xip_chk_st(c, p)->name_off ? xip_chk_st(c, p)->parent : 0;
		}
		ok = p && p <= c->ninodes &&
		     (xip_chk_st(c, p)->flags & ST_REACHABLE);
		if (p && p <= c->ninodes && (xip_chk_st(c, p)->flags & ST_BUSY))
			chk_err(c, "directory", p, 0,
				"directory is part of a loop, not reachable from /");
		while (n) {
			struct chk_ino *s = xip_chk_stw(c, stack[--n]);

			s->flags = (uint8_t)((s->flags & ~ST_BUSY) | ST_DONE |
					     (ok ? ST_REACHABLE : 0));
		}
	}
	for (uint32_t ino = 1; ino <= c->ninodes; ino++) {
		const struct chk_ino *st;
		uint32_t want;

		if (!c->in[(ino - 1) / c->ipg]) {
			ino += c->ipg - 1 - (ino - 1) % c->ipg;
			continue;
		}
		st = xip_chk_st(c, ino);
		want = ino == EXT2_ROOT_INO ? ino : st->parent;
		if (!(st->flags & ST_DIR))
			continue;
		if (!(st->flags & ST_REACHABLE) && st->name_off)
			chk_err(c, "directory", ino, 0,
				"directory is not reachable from /");
		else if (!(st->flags & ST_REACHABLE))
			chk_err(c, "directory", ino, 0,
				"directory is not in any directory");
		if (!(st->flags & ST_HAS_DOT))
			chk_err(c, "directory", ino, 0,
				"directory has no '.' entry");
		if (!(st->flags & ST_HAS_DOTDOT))
			chk_err(c, "directory", ino, 0,
				"directory has no '..' entry");
		else if (st->name_off || ino == EXT2_ROOT_INO) {
			if (st->dotdot != want)
				chk_err(c, "directory", ino, 0,
					"'..' is inode %" PRIu32 ", should be %" PRIu32,
					st->dotdot, want);
		}
	}
out:
	free(stack);
}

/* ---- pass 4: link counts ---------------------------------------------- */

void xip_chk_links(struct chk *c)
{
	for (uint32_t ino = 1; ino <= c->ninodes; ino++) {
		const struct chk_ino *st;

		if (!c->in[(ino - 1) / c->ipg]) {
			ino += c->ipg - 1 - (ino - 1) % c->ipg;
			continue;
		}
		st = xip_chk_st(c, ino);
		if (!(st->flags & ST_USED) || (st->flags & ST_UNKNOWN) ||
		    (ino < c->first_ino && ino != EXT2_ROOT_INO))
			continue;
		if (!st->counted) {
			chk_err(c, "inode", ino, 0,
				"in use (%u links) but in no directory",
				st->links);
			continue;
		}
		if (st->counted == st->links)
			continue;
		if ((st->flags & ST_DIR) && st->links == 1 &&
		    (c->sb.s_feature_ro_compat & EXT4_FEATURE_RO_COMPAT_DIR_NLINK) &&
		    st->counted >= EXT2_LINK_MAX)
			continue;
		chk_err(c, "inode", ino, 0, "link count %u, should be %u",
			st->links, st->counted);
	}
}
