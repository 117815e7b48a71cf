// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * verify: an independent walk of the raw structures of an ext2 image.
 *
 * Nothing here trusts libext2fs, nor the image: the superblock geometry is
 * validated first, every array is sized by the validated counts (so by the
 * image size), and every byte is reached through segment_range() after the
 * block number behind it was checked.  Each block is claimed at most once
 * and an indirect block is descended into only when its claim succeeded,
 * so the walk is linear in the size of the image whatever the bytes are.
 *
 * The passes follow e2fsck's: the superblock, the group descriptors and the
 * metadata they place; every inode and its block map (pass 1); directory
 * blocks (pass 2); connectivity (pass 3); link counts (pass 4); bitmaps and
 * free counts (pass 5); then XIP capability and, on request, a comparison
 * with a source tree (check_tree.c).
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

#include "check_int.h"

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

/* ---- small helpers ---------------------------------------------------- */

static inline bool bit_test(const uint8_t *map, uint64_t n)
{
	return map[n >> 3] & (1u << (n & 7));
}

static inline void bit_set(uint8_t *map, uint64_t n)
{
	map[n >> 3] |= (uint8_t)(1u << (n & 7));
}

static void *chk_calloc(struct chk *c, uint64_t n, size_t size)
{
	void *p;

	if (n > SIZE_MAX / size)
		return NULL;
	p = calloc(n ? n : 1, size);
	if (!p)
		c->nomem = true;
	return p;
}

static int chk_grow(struct chk *c, void **arr, size_t *cap, size_t n,
		    size_t size)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	if (ncap > SIZE_MAX / size) {
		c->nomem = true;
		return -ENOMEM;
	}
	p = realloc(*arr, ncap * size);
	if (!p) {
		c->nomem = true;
		return -ENOMEM;
	}
	*arr = p;
	*cap = ncap;
	return 0;
}

/*
 * A pointer to a whole block in the mapping, or NULL when it is not inside
 * the image: for file contents (--against).  Metadata is read with
 * xip_chk_pread(), in batches, rather than touched through the mapping, where
 * every page costs a page-table entry.
 */
const uint8_t *chk_block(struct chk *c, uint64_t blk)
{
	void *p;

	if (blk >= c->nblocks)
		return NULL;
	if (segment_range(c->seg, blk * c->bs, c->bs, &p))
		return NULL;
	return p;
}

/* Read @len bytes of the image at @off: 0 or a negative errno. */
int xip_chk_pread(struct chk *c, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	void *p;

	if (off > c->seg->size || len > c->seg->size - off)
		return -ERANGE;
	if (!c->use_pread) {
		if (segment_range(c->seg, off, len, &p))
			return -ERANGE;
		memcpy(buf, p, len);
		return 0;
	}
	while (done < len) {
		ssize_t n = pread(c->seg->fd, (char *)buf + done, len - done,
				  (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* Read block @blk of the file system into @buf (c->bs bytes). */
bool xip_chk_read_block(struct chk *c, uint64_t blk, void *buf)
{
	if (blk >= c->nblocks)
		return false;
	return xip_chk_pread(c, buf, c->bs, blk * c->bs) == 0;
}

/* pread where the descriptor allows it (not a DAX device), else copies. */
static void chk_reader_init(struct chk *c)
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
static bool chk_may_hold_data(struct chk *c, uint64_t off, uint64_t len)
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
		c->in[g] = chk_calloc(c, c->ipg, sizeof(**c->in));
		if (!c->in[g])
			return NULL;
	}
	return &c->in[g][(ino - 1) % c->ipg];
}

static inline uint32_t blk_group(const struct chk *c, uint64_t blk)
{
	return (uint32_t)((blk - c->first_data) / c->bpg);
}

/* The inode claiming block @blk (first_data <= blk < nblocks), 0: none. */
static uint32_t owner_of(const struct chk *c, uint64_t blk)
{
	const uint32_t *o = c->owner[blk_group(c, blk)];

	return o ? o[(blk - c->first_data) % c->bpg] : 0;
}

static void set_owner(struct chk *c, uint64_t blk, uint32_t ino)
{
	uint32_t g = blk_group(c, blk);

	if (!c->owner[g]) {
		c->owner[g] = chk_calloc(c, c->bpg, sizeof(uint32_t));
		if (!c->owner[g])
			return;
	}
	c->owner[g][(blk - c->first_data) % c->bpg] = ino;
}

static bool is_ea(const struct chk *c, uint64_t blk)
{
	const uint8_t *m = c->ea[blk_group(c, blk)];

	return m && bit_test(m, (blk - c->first_data) % c->bpg);
}

static void set_ea(struct chk *c, uint64_t blk)
{
	uint32_t g = blk_group(c, blk);

	if (!c->ea[g]) {
		c->ea[g] = chk_calloc(c, (c->bpg + 7) / 8, 1);
		if (!c->ea[g])
			return;
	}
	bit_set(c->ea[g], (blk - c->first_data) % c->bpg);
}

/* ---- findings ----------------------------------------------------------- */

void chk_vfinding(struct chk *c, enum xip_check_severity sev,
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
	if (chk_grow(c, (void **)&rep->findings, &c->fcap, rep->nfindings,
		     sizeof(*f))) {
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

void chk_finding(struct chk *c, enum xip_check_severity sev,
		 const char *object, uint32_t ino, uint64_t blk,
		 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	chk_vfinding(c, sev, object, ino, blk, fmt, ap);
	va_end(ap);
}

#define chk_err(c, obj, ino, blk, ...) \
	chk_finding(c, XIP_CHECK_ERROR, obj, ino, blk, __VA_ARGS__)
#define chk_warn(c, obj, ino, blk, ...) \
	chk_finding(c, XIP_CHECK_WARNING, obj, ino, blk, __VA_ARGS__)

/* ---- names and paths ---------------------------------------------------- */

/* Store a name in the arena: returns 1 + its offset, 0 when out of memory. */
size_t chk_store_name(struct chk *c, const char *name, size_t len)
{
	size_t off = c->nlen;

	while (c->nlen + len + 1 > c->ncap) {
		size_t ncap = c->ncap ? c->ncap * 2 : 65536;
		char *p = realloc(c->names, ncap);

		if (!p) {
			c->nomem = true;
			return 0;
		}
		c->names = p;
		c->ncap = ncap;
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
char *chk_path(struct chk *c, uint32_t ino)
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

static void chk_finish(struct chk *c)
{
	struct xip_check_report *rep = c->rep;

	for (size_t i = 0; i < rep->nfindings; i++) {
		struct xip_finding *f = &rep->findings[i];
		char *msg = NULL;

		if (f->ino)
			f->path = chk_path(c, f->ino);
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

/* ---- the superblock ----------------------------------------------------- */

static bool sb_has_super(const struct chk *c, uint32_t g)
{
	uint32_t n;

	if (g == 0)
		return true;
	if (c->sb.s_feature_compat & EXT4_FEATURE_COMPAT_SPARSE_SUPER2)
		return g == c->sb.s_backup_bgs[0] || g == c->sb.s_backup_bgs[1];
	if (!(c->sb.s_feature_ro_compat & EXT2_FEATURE_RO_COMPAT_SPARSE_SUPER))
		return true;
	if (g == 1)
		return true;
	if (!(g & 1))
		return false;
	for (uint32_t base = 3; base <= 7; base += 2) {
		for (n = g; n % base == 0; n /= base)
			;
		if (n == 1)
			return true;
	}
	return false;
}

/* Find a backup superblock when the primary's magic is gone. */
static int64_t sb_find_backup(struct chk *c)
{
	for (unsigned int log = 0; log <= 6; log++) {
		uint64_t bs = 1024u << log, blk = (bs == 1024) + 8 * bs;
		const struct ext2_super_block *b;
		void *p;

		if (segment_range(c->seg, blk * bs, sizeof(*b), &p))
			continue;
		b = p;
		if (b->s_magic == EXT2_SUPER_MAGIC && b->s_log_block_size == log)
			return (int64_t)blk;
	}
	return -1;
}

#define SUPP_INCOMPAT (EXT2_FEATURE_INCOMPAT_FILETYPE)
#define SUPP_RO_COMPAT (EXT2_FEATURE_RO_COMPAT_SPARSE_SUPER | \
			EXT2_FEATURE_RO_COMPAT_LARGE_FILE | \
			EXT4_FEATURE_RO_COMPAT_DIR_NLINK | \
			EXT4_FEATURE_RO_COMPAT_EXTRA_ISIZE)

static const struct {
	uint32_t bit;
	bool ro;
	const char *name;
} feature_names[] = {
	{ EXT3_FEATURE_INCOMPAT_JOURNAL_DEV, false, "journal_dev" },
	{ EXT2_FEATURE_INCOMPAT_META_BG, false, "meta_bg" },
	{ EXT3_FEATURE_INCOMPAT_EXTENTS, false, "extent" },
	{ EXT4_FEATURE_INCOMPAT_64BIT, false, "64bit" },
	{ EXT4_FEATURE_INCOMPAT_MMP, false, "mmp" },
	{ EXT4_FEATURE_INCOMPAT_FLEX_BG, false, "flex_bg" },
	{ EXT4_FEATURE_INCOMPAT_EA_INODE, false, "ea_inode" },
	{ EXT4_FEATURE_INCOMPAT_CSUM_SEED, false, "metadata_csum_seed" },
	{ EXT4_FEATURE_INCOMPAT_LARGEDIR, false, "large_dir" },
	{ EXT4_FEATURE_INCOMPAT_INLINE_DATA, false, "inline_data" },
	{ EXT4_FEATURE_INCOMPAT_ENCRYPT, false, "encrypt" },
	{ EXT4_FEATURE_INCOMPAT_CASEFOLD, false, "casefold" },
	{ EXT4_FEATURE_RO_COMPAT_HUGE_FILE, true, "huge_file" },
	{ EXT4_FEATURE_RO_COMPAT_GDT_CSUM, true, "uninit_bg" },
	{ EXT4_FEATURE_RO_COMPAT_BIGALLOC, true, "bigalloc" },
	{ EXT4_FEATURE_RO_COMPAT_QUOTA, true, "quota" },
	{ EXT4_FEATURE_RO_COMPAT_METADATA_CSUM, true, "metadata_csum" },
	{ EXT4_FEATURE_RO_COMPAT_READONLY, true, "read-only" },
	{ EXT4_FEATURE_RO_COMPAT_PROJECT, true, "project" },
	{ EXT4_FEATURE_RO_COMPAT_SHARED_BLOCKS, true, "shared_blocks" },
	{ EXT4_FEATURE_RO_COMPAT_VERITY, true, "verity" },
};

static const char *feature_name(uint32_t in, uint32_t ro)
{
	for (size_t i = 0; i < sizeof(feature_names) / sizeof(feature_names[0]); i++) {
		uint32_t mask = feature_names[i].ro ? ro : in;

		if (mask & feature_names[i].bit)
			return feature_names[i].name;
	}
	return in ? "(incompatible)" : "(read-only compatible)";
}

/* Features this walk does not implement: the image is not ext2. */
static int sb_features(struct chk *c)
{
	const struct ext2_super_block *sb = &c->sb;
	uint32_t in = sb->s_feature_incompat & ~SUPP_INCOMPAT;
	uint32_t ro = sb->s_feature_ro_compat & ~SUPP_RO_COMPAT;

	if (in & ~EXT2_LIB_FEATURE_INCOMPAT_SUPP) {
		chk_err(c, "superblock", 0, 0,
			"superblock: unknown incompatible features 0x%x (s_feature_incompat)",
			in & ~EXT2_LIB_FEATURE_INCOMPAT_SUPP);
		return 1;
	}
	if (ro & ~EXT2_LIB_FEATURE_RO_COMPAT_SUPP) {
		chk_err(c, "superblock", 0, 0,
			"superblock: unknown read-only features 0x%x (s_feature_ro_compat)",
			ro & ~EXT2_LIB_FEATURE_RO_COMPAT_SUPP);
		return 1;
	}
	if (sb->s_feature_compat & ~EXT2_LIB_FEATURE_COMPAT_SUPP)
		chk_err(c, "superblock", 0, 0,
			"superblock: unknown compatible features 0x%x (s_feature_compat)",
			sb->s_feature_compat & ~EXT2_LIB_FEATURE_COMPAT_SUPP);
	if (in & EXT3_FEATURE_INCOMPAT_RECOVER) {
		chk_err(c, "superblock", 0, 0,
			"superblock: the journal needs recovery");
		in &= ~EXT3_FEATURE_INCOMPAT_RECOVER;
	}
	/*
	 * ext3/ext4 features: e2fsck reads such an image (and reports what
	 * a damaged feature field breaks); an ext2 walk would not know what
	 * they change.  A problem that stops the walk, not an unreadable
	 * image: an XIP image cannot have them.
	 */
	if (in || ro) {
		chk_err(c, "superblock", 0, 0,
			"superblock: feature %s is not ext2 (%s 0x%x): not an XIP ext2 image",
			feature_name(in, ro),
			in ? "s_feature_incompat" : "s_feature_ro_compat",
			in ? sb->s_feature_incompat : sb->s_feature_ro_compat);
		return 1;
	}
	return 0;
}

static uint64_t sb_blocks(const struct ext2_super_block *sb)
{
	return sb->s_blocks_count;	/* 64bit is refused in sb_features() */
}

/*
 * Check the fields the geometry depends on.  Returns 0 when the image can
 * be walked, 1 when a field is reported and the walk must stop, a negative
 * errno when the bytes are not an ext2 file system at all.
 */
static const uint8_t zero_uuid[16];

static int chk_super(struct chk *c)
{
	struct ext2_super_block *sb = &c->sb;
	const char *p = c->seg->path;
	uint64_t img_blocks, itb;
	int64_t backup;
	void *q;
	int ret;

	if (segment_range(c->seg, 1024, sizeof(*sb), &q))
		return xip_error(-EUCLEAN,
				 "%s: too small to hold an ext2 superblock (%" PRIu64 " bytes)",
				 p, c->seg->size);
	memcpy(sb, q, sizeof(*sb));
	if (sb->s_magic != EXT2_SUPER_MAGIC) {
		backup = sb_find_backup(c);
		if (backup < 0)
			return xip_error(-EUCLEAN,
					 "%s: no ext2 superblock (bad magic 0x%04x)",
					 p, sb->s_magic);
		chk_err(c, "superblock", 0, 0,
			"superblock: bad magic 0x%04x (s_magic); a backup superblock is intact at block %" PRId64,
			sb->s_magic, backup);
		return 1;
	}
	if (sb->s_rev_level > EXT2_DYNAMIC_REV) {
		chk_err(c, "superblock", 0, 0,
			"superblock: invalid revision %u (s_rev_level)",
			sb->s_rev_level);
		return 1;
	}
	if (sb->s_rev_level == EXT2_GOOD_OLD_REV) {
		sb->s_first_ino = EXT2_GOOD_OLD_FIRST_INO;
		sb->s_inode_size = EXT2_GOOD_OLD_INODE_SIZE;
		sb->s_feature_compat = sb->s_feature_incompat = 0;
		sb->s_feature_ro_compat = 0;
	}
	ret = sb_features(c);
	if (ret)
		return ret;
	if (sb->s_log_block_size > EXT2_MAX_BLOCK_LOG_SIZE - EXT2_MIN_BLOCK_LOG_SIZE) {
		chk_err(c, "superblock", 0, 0,
			"superblock: invalid block size (s_log_block_size %u)",
			sb->s_log_block_size);
		return 1;
	}
	c->bs = 1024u << sb->s_log_block_size;
	c->apb = c->bs / 4;
	c->nblocks = sb_blocks(sb);
	c->first_data = sb->s_first_data_block;
	img_blocks = c->seg->size / c->bs;
	if (c->first_data != (c->bs == 1024 ? 1u : 0u)) {
		chk_err(c, "superblock", 0, 0,
			"superblock: invalid first data block %" PRIu64 " (s_first_data_block)",
			c->first_data);
		return 1;
	}
	if (c->nblocks <= c->first_data + 1) {
		chk_err(c, "superblock", 0, 0,
			"superblock: invalid block count %" PRIu64 " (s_blocks_count)",
			c->nblocks);
		return 1;
	}
	if (c->nblocks > img_blocks) {
		chk_err(c, "superblock", 0, 0,
			"superblock: block count %" PRIu64 " (s_blocks_count) exceeds the image (%" PRIu64 " blocks of %u bytes)",
			c->nblocks, img_blocks, c->bs);
		return 1;
	}
	if (sb->s_log_cluster_size != sb->s_log_block_size) {
		chk_err(c, "superblock", 0, 0,
			"superblock: cluster size (s_log_cluster_size %u) differs from the block size",
			sb->s_log_cluster_size);
		return 1;
	}
	c->bpg = sb->s_blocks_per_group;
	if (c->bpg < 8 || c->bpg > 8 * c->bs || c->bpg % 8) {
		chk_err(c, "superblock", 0, 0,
			"superblock: invalid blocks per group %u (s_blocks_per_group)",
			c->bpg);
		return 1;
	}
	if (sb->s_clusters_per_group != c->bpg) {
		chk_err(c, "superblock", 0, 0,
			"superblock: clusters per group %u (s_clusters_per_group) differs from blocks per group %u",
			sb->s_clusters_per_group, c->bpg);
		return 1;
	}
	c->ngroups = (uint32_t)((c->nblocks - c->first_data + c->bpg - 1) /
				c->bpg);
	c->inode_size = sb->s_inode_size;
	if (c->inode_size < EXT2_GOOD_OLD_INODE_SIZE ||
	    c->inode_size > c->bs || (c->inode_size & (c->inode_size - 1))) {
		chk_err(c, "superblock", 0, 0,
			"superblock: invalid inode size %u (s_inode_size)",
			c->inode_size);
		return 1;
	}
	c->ipg = sb->s_inodes_per_group;
	itb = ((uint64_t)c->ipg * c->inode_size + c->bs - 1) / c->bs;
	if (c->ipg == 0 || c->ipg > 8 * c->bs || c->ipg % 8 ||
	    itb > c->bpg - 3) {
		chk_err(c, "superblock", 0, 0,
			"superblock: invalid inodes per group %u (s_inodes_per_group)",
			c->ipg);
		return 1;
	}
	c->itb = (uint32_t)itb;
	if ((uint64_t)c->ipg * c->ngroups != sb->s_inodes_count) {
		chk_err(c, "superblock", 0, 0,
			"superblock: inode count %u (s_inodes_count) is not %u groups (s_blocks_count %" PRIu64 ") of %u inodes",
			sb->s_inodes_count, c->ngroups, c->nblocks, c->ipg);
		return 1;
	}
	c->ninodes = sb->s_inodes_count;
	c->first_ino = sb->s_first_ino;
	if (c->first_ino < EXT2_GOOD_OLD_FIRST_INO ||
	    c->first_ino >= c->ninodes) {
		chk_err(c, "superblock", 0, 0,
			"superblock: invalid first inode %u (s_first_ino)",
			c->first_ino);
		return 1;
	}
	c->gdt_blocks = ((uint64_t)c->ngroups * EXT2_MIN_DESC_SIZE + c->bs - 1) /
			c->bs;
	c->rsv_gdt = 0;
	if (sb->s_feature_compat & EXT2_FEATURE_COMPAT_RESIZE_INODE)
		c->rsv_gdt = sb->s_reserved_gdt_blocks;
	if (c->rsv_gdt > c->apb ||
	    1 + c->gdt_blocks + c->rsv_gdt >
	    (c->nblocks - c->first_data < c->bpg ? c->nblocks - c->first_data
						 : c->bpg)) {
		chk_err(c, "superblock", 0, 0,
			"superblock: %" PRIu64 " descriptor and %" PRIu64 " reserved descriptor blocks (s_reserved_gdt_blocks) do not fit in group 0",
			c->gdt_blocks, c->rsv_gdt);
		return 1;
	}
	/* Fields the walk does not depend on: reported, the walk goes on. */
	if (!(sb->s_feature_compat & EXT3_FEATURE_COMPAT_HAS_JOURNAL) &&
	    (sb->s_journal_inum || sb->s_journal_dev ||
	     memcmp(sb->s_journal_uuid, zero_uuid, sizeof(zero_uuid))))
		chk_err(c, "superblock", 0, 0,
			"superblock: journal fields (s_journal_inum, s_journal_dev, s_journal_uuid) set without the has_journal feature");
	/* e2fsck refuses the whole image for this, 64bit or not */
	if (sb->s_desc_size > EXT2_MAX_DESC_SIZE ||
	    (sb->s_desc_size & (sb->s_desc_size - 1)))
		chk_err(c, "superblock", 0, 0,
			"superblock: invalid group descriptor size %u (s_desc_size)",
			sb->s_desc_size);
	/* e2fsck treats these inodes as quota files, in use */
	if (sb->s_usr_quota_inum || sb->s_grp_quota_inum ||
	    sb->s_prj_quota_inum)
		chk_err(c, "superblock", 0, 0,
			"superblock: quota inodes %u, %u, %u (s_usr_quota_inum, s_grp_quota_inum, s_prj_quota_inum) set without the quota feature",
			sb->s_usr_quota_inum, sb->s_grp_quota_inum,
			sb->s_prj_quota_inum);
	/* e2fsck treats that inode as the (ext4) orphan file's */
	if (sb->s_orphan_file_inum)
		chk_err(c, "superblock", 0, 0,
			"superblock: orphan file inode %u (s_orphan_file_inum) set on an ext2 file system",
			sb->s_orphan_file_inum);
	if (sb->s_free_blocks_count > c->nblocks)
		chk_err(c, "superblock", 0, 0,
			"superblock: free block count %u (s_free_blocks_count) exceeds the block count",
			sb->s_free_blocks_count);
	if (sb->s_free_inodes_count > c->ninodes)
		chk_err(c, "superblock", 0, 0,
			"superblock: free inode count %u (s_free_inodes_count) exceeds the inode count",
			sb->s_free_inodes_count);
	if (sb->s_r_blocks_count > c->nblocks / 2)
		chk_err(c, "superblock", 0, 0,
			"superblock: reserved block count %u (s_r_blocks_count) exceeds half the blocks",
			sb->s_r_blocks_count);
	if (sb->s_state & EXT2_ERROR_FS)
		chk_err(c, "superblock", 0, 0,
			"superblock: the file system is marked as having errors (s_state)");
	else if (!(sb->s_state & EXT2_VALID_FS))
		chk_warn(c, "superblock", 0, 0,
			 "superblock: the file system was not cleanly unmounted or a write did not finish (s_state): run e2fsck -fy before writing");
	return 0;
}

/* ---- group descriptors and the metadata they place ---------------------- */

static uint64_t group_first(const struct chk *c, uint32_t g)
{
	return c->first_data + (uint64_t)g * c->bpg;
}

static uint64_t group_end(const struct chk *c, uint32_t g)
{
	uint64_t end = group_first(c, g) + c->bpg;

	return end < c->nblocks ? end : c->nblocks;
}

static const char *meta_kind(struct chk *c, uint64_t blk)
{
	uint32_t g;
	uint64_t first;

	if (blk < c->first_data)
		return "boot block";
	g = (uint32_t)((blk - c->first_data) / c->bpg);
	first = group_first(c, g);
	if (g < c->ngroups && c->gd) {
		const struct ext2_group_desc *d = &c->gd[g];

		if (blk == d->bg_block_bitmap)
			return "block bitmap";
		if (blk == d->bg_inode_bitmap)
			return "inode bitmap";
		if (blk >= d->bg_inode_table &&
		    blk < (uint64_t)d->bg_inode_table + c->itb)
			return "inode table";
	}
	if (sb_has_super(c, g)) {
		if (blk == first)
			return "superblock";
		if (blk <= first + c->gdt_blocks)
			return "group descriptors";
		if (blk <= first + c->gdt_blocks + c->rsv_gdt)
			return "reserved group descriptors";
	}
	return "metadata";
}

/* The group a block of metadata belongs to (for messages). */
static uint32_t block_group(const struct chk *c, uint64_t blk)
{
	return blk < c->first_data ? 0 :
		(uint32_t)((blk - c->first_data) / c->bpg);
}

/* Blocks of the superblock copy and descriptors at the start of group @g. */
static uint64_t super_blocks(const struct chk *c, uint32_t g)
{
	uint64_t first = group_first(c, g), end = group_end(c, g);
	uint64_t n = 1 + c->gdt_blocks + c->rsv_gdt;

	if (!(c->gstate[g] & G_SUPER))
		return 0;
	return n < end - first ? n : end - first;
}

/*
 * The first block of [blk, blk + count) inside group @g that is already
 * metadata of the group, UINT64_MAX when none: the metadata of a group lies
 * inside it (place_meta() makes sure), so its ranges are all to look at.
 */
static uint64_t meta_overlap(const struct chk *c, uint32_t g, uint64_t blk,
			     uint64_t count)
{
	const struct ext2_group_desc *d = &c->gd[g];
	uint64_t r[4][2], best = UINT64_MAX, first = group_first(c, g);
	int n = 0;

	r[n][0] = first;
	r[n++][1] = first + super_blocks(c, g);
	if (c->gstate[g] & G_BB_OK) {
		r[n][0] = d->bg_block_bitmap;
		r[n++][1] = (uint64_t)d->bg_block_bitmap + 1;
	}
	if (c->gstate[g] & G_IB_OK) {
		r[n][0] = d->bg_inode_bitmap;
		r[n++][1] = (uint64_t)d->bg_inode_bitmap + 1;
	}
	if (c->gstate[g] & G_IT_OK) {
		r[n][0] = d->bg_inode_table;
		r[n++][1] = (uint64_t)d->bg_inode_table + c->itb;
	}
	for (int i = 0; i < n; i++) {
		uint64_t from = r[i][0] > blk ? r[i][0] : blk;

		if (r[i][0] < r[i][1] && r[i][0] < blk + count &&
		    r[i][1] > blk && from < best)
			best = from;
	}
	return best;
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

/* Whether block @blk is group metadata (or before the first group). */
static bool chk_is_meta(const struct chk *c, uint64_t blk)
{
	if (blk < c->first_data)
		return true;
	if (blk >= c->nblocks)
		return false;
	return meta_in_group(c, blk_group(c, blk), blk);
}

/* Place one piece of group metadata; report it when it is misplaced. */
static bool place_meta(struct chk *c, uint32_t g, const char *what,
		       uint64_t blk, uint64_t count)
{
	uint64_t first = group_first(c, g), end = group_end(c, g), b;

	if (blk >= c->nblocks || count > c->nblocks - blk) {
		chk_err(c, "group", 0, blk,
			"group %u: %s at block %" PRIu64 " beyond end of image",
			g, what, blk);
		return false;
	}
	if (blk < first || blk + count > end) {
		chk_err(c, "group", 0, blk,
			"group %u: %s at block %" PRIu64 " outside the group (blocks %" PRIu64 "-%" PRIu64 ")",
			g, what, blk, first, end - 1);
		return false;
	}
	b = meta_overlap(c, g, blk, count);
	if (b != UINT64_MAX) {
		chk_err(c, "group", 0, b,
			"group %u: %s at block %" PRIu64 " overlaps the %s of group %u",
			g, what, b, meta_kind(c, b), block_group(c, b));
		return false;
	}
	return true;
}

static int chk_groups(struct chk *c)
{
	uint64_t gdt = c->first_data + 1;
	void *p;

	if (segment_range(c->seg, gdt * c->bs,
			  (uint64_t)c->ngroups * EXT2_MIN_DESC_SIZE, &p)) {
		chk_err(c, "group", 0, gdt,
			"group descriptors: beyond end of image");
		return 1;
	}
	c->gd = chk_calloc(c, c->ngroups, sizeof(*c->gd));
	c->gstate = chk_calloc(c, c->ngroups, 1);
	if (!c->gd || !c->gstate)
		return -ENOMEM;
	if (xip_chk_pread(c, c->gd, (size_t)c->ngroups * sizeof(*c->gd),
		      gdt * c->bs)) {
		chk_err(c, "group", 0, gdt,
			"group descriptors: cannot be read");
		return 1;
	}
	for (uint32_t g = 0; g < c->ngroups; g++)
		if (sb_has_super(c, g))
			c->gstate[g] |= G_SUPER;
	for (uint32_t g = 0; g < c->ngroups; g++) {
		struct ext2_group_desc *d = &c->gd[g];

		if (place_meta(c, g, "block bitmap", d->bg_block_bitmap, 1))
			c->gstate[g] |= G_BB_OK;
		if (place_meta(c, g, "inode bitmap", d->bg_inode_bitmap, 1))
			c->gstate[g] |= G_IB_OK;
		if (place_meta(c, g, "inode table", d->bg_inode_table, c->itb))
			c->gstate[g] |= G_IT_OK;
		if ((d->bg_flags & (EXT2_BG_INODE_UNINIT | EXT2_BG_BLOCK_UNINIT)) ||
		    d->bg_itable_unused)
			chk_err(c, "group", 0, 0,
				"group %u: marked uninitialised (bg_flags 0x%x, bg_itable_unused %u) without uninit_bg",
				g, d->bg_flags, d->bg_itable_unused);
	}
	return 0;
}

/* ---- pass 1: inodes and their blocks ------------------------------------ */

/*
 * Read inode @ino into @buf (a whole struct ext2_inode_large, the bytes
 * beyond the on-disk inode zero); NULL when its table cannot be read.
 */
const struct ext2_inode_large *chk_inode(struct chk *c, uint32_t ino,
					 struct ext2_inode_large *buf)
{
	uint32_t g, i;
	uint64_t off;
	size_t len = c->inode_size < sizeof(*buf) ? c->inode_size :
		     sizeof(*buf);

	if (ino == 0 || ino > c->ninodes)
		return NULL;
	g = (ino - 1) / c->ipg;
	i = (ino - 1) % c->ipg;
	if (!(c->gstate[g] & G_IT_OK))
		return NULL;
	off = (uint64_t)c->gd[g].bg_inode_table * c->bs +
	      (uint64_t)i * c->inode_size;
	memset(buf, 0, sizeof(*buf));
	if (xip_chk_pread(c, buf, len, off))
		return NULL;
	return buf;
}

/* Block pointer @i of an inode (on disk little-endian). */
static inline uint64_t iblock(const struct ext2_inode_large *in, int i)
{
	return le32toh(in->i_block[i]);
}

uint64_t chk_isize(const struct ext2_inode_large *in)
{
	return in->i_size | ((uint64_t)in->i_size_high << 32);
}

struct walk {
	struct chk *c;
	uint32_t ino;
	bool claim;		/* pass 1: claim every block */
	bool is_dir;
	uint64_t nblocks;	/* nonzero pointers, data and indirect */
	int64_t last;		/* last mapped file block, -1: none */
	uint64_t runs;		/* physically contiguous data runs */
	uint64_t prev_pblk;
	int64_t prev_lblk;
	uint64_t first_pblk;	/* block of file page 0 (0: hole) */
	unsigned int problems;	/* block problems (listed up to a limit) */
	unsigned int unlisted;
	chk_block_fn fn;	/* called for each data block, in order */
	void *arg;
	int stop;
};

static void walk_problem(struct walk *w, uint64_t blk, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void walk_problem(struct walk *w, uint64_t blk, const char *fmt, ...)
{
	va_list ap;

	w->problems++;
	if (w->problems > CHK_MAX_PER_INODE) {
		w->unlisted++;
		return;
	}
	va_start(ap, fmt);
	chk_vfinding(w->c, XIP_CHECK_ERROR, "inode", w->ino, blk, fmt, ap);
	va_end(ap);
}

/*
 * Claim a block for the inode of the walk; false when it is not a valid
 * block of this inode (reported).  Outside pass 1 only the range is
 * checked: pass 1 already proved the map of the inodes walked again.
 */
static bool walk_claim(struct walk *w, uint64_t blk, const char *what)
{
	struct chk *c = w->c;
	uint32_t other, g, *own;
	uint64_t idx;

	if (blk < c->first_data || blk >= c->nblocks) {
		if (w->claim)
			walk_problem(w, blk, "%s %" PRIu64 " beyond end of %s",
				     what, blk,
				     blk >= c->seg->size / c->bs ? "image" :
				     "file system");
		return false;
	}
	if (!w->claim)
		return true;
	g = blk_group(c, blk);
	if (meta_in_group(c, g, blk)) {
		walk_problem(w, blk, "%s %" PRIu64 " is the %s of group %u",
			     what, blk, meta_kind(c, blk), block_group(c, blk));
		return false;
	}
	own = c->owner[g];
	idx = blk - group_first(c, g);
	other = own ? own[idx] : 0;
	if (other) {
		if (other == w->ino)
			walk_problem(w, blk,
				     "%s %" PRIu64 " is claimed twice by this inode",
				     what, blk);
		else
			walk_problem(w, blk,
				     "%s %" PRIu64 " is also claimed by inode %" PRIu32 "%s",
				     what, blk, other,
				     is_ea(c, blk) ?
				     " (extended attribute block)" : "");
		c->dups++;
		return false;
	}
	if (!own) {
		set_owner(c, blk, w->ino);
	} else {
		own[idx] = w->ino;
	}
	c->used_blocks++;
	return true;
}

static void walk_data(struct walk *w, uint64_t lblk, uint64_t pblk)
{
	struct chk *c = w->c;

	w->nblocks++;
	if (!walk_claim(w, pblk, "block")) {
		w->last = (int64_t)lblk;
		return;
	}
	if (lblk == 0)
		w->first_pblk = pblk;
	/* holes do not break a run: only where the stored blocks lie */
	if (w->prev_lblk < 0 || w->prev_pblk + 1 != pblk)
		w->runs++;
	w->prev_lblk = (int64_t)lblk;
	w->prev_pblk = pblk;
	w->last = (int64_t)lblk;
	if (w->claim && w->is_dir) {
		struct chk_dblk *d;

		if (!chk_grow(c, (void **)&c->db, &c->dbcap, c->ndb,
			      sizeof(*d))) {
			d = &c->db[c->ndb++];
			d->ino = w->ino;
			d->lblk = lblk;
			d->pblk = pblk;
		}
	}
	if (w->fn && !w->stop)
		w->stop = w->fn(w->arg, lblk, pblk);
}

/* Walk an indirect block of @level (1: indirect) mapping from @lblk. */
static void walk_ind(struct walk *w, uint64_t blk, int level, uint64_t lblk)
{
	struct chk *c = w->c;
	const uint32_t *ptr;
	uint64_t span = 1;

	w->nblocks++;
	if (!walk_claim(w, blk, "indirect block"))
		return;
	/* one buffer per level: the levels above stay readable */
	ptr = (const uint32_t *)c->lvl[level - 1];
	if (!xip_chk_read_block(c, blk, c->lvl[level - 1]))
		return;
	for (int l = 1; l < level; l++)
		span *= c->apb;
	for (uint32_t i = 0; i < c->apb && !w->stop; i++) {
		uint64_t p = le32toh(ptr[i]);

		if (!p)
			continue;
		if (level == 1)
			walk_data(w, lblk + i, p);
		else
			walk_ind(w, p, level - 1, lblk + i * span);
	}
}

/*
 * Iterate over the data blocks of an inode whose map pass 1 found sound,
 * in file order, calling @fn(arg, file block, physical block) until it
 * returns nonzero.  Holes are skipped.
 */
int chk_blocks(struct chk *c, uint32_t ino, chk_block_fn fn, void *arg)
{
	struct ext2_inode_large buf;
	const struct ext2_inode_large *in = chk_inode(c, ino, &buf);
	struct walk w = { .c = c, .ino = ino, .fn = fn, .arg = arg,
			  .last = -1, .prev_lblk = -1 };
	uint64_t base = EXT2_NDIR_BLOCKS, apb = c->apb;

	if (!in || !(xip_chk_st(c, ino)->flags & ST_MAP_OK))
		return -EUCLEAN;
	for (int i = 0; i < EXT2_NDIR_BLOCKS && !w.stop; i++)
		if (iblock(in, i))
			walk_data(&w, (uint64_t)i, iblock(in, i));
	if (iblock(in, EXT2_IND_BLOCK) && !w.stop)
		walk_ind(&w, iblock(in, EXT2_IND_BLOCK), 1, base);
	base += apb;
	if (iblock(in, EXT2_DIND_BLOCK) && !w.stop)
		walk_ind(&w, iblock(in, EXT2_DIND_BLOCK), 2, base);
	base += apb * apb;
	if (iblock(in, EXT2_TIND_BLOCK) && !w.stop)
		walk_ind(&w, iblock(in, EXT2_TIND_BLOCK), 3, base);
	return w.stop;
}

static void walk_map(struct walk *w, const struct ext2_inode_large *in)
{
	uint64_t base = EXT2_NDIR_BLOCKS, apb = w->c->apb;

	for (int i = 0; i < EXT2_NDIR_BLOCKS; i++)
		if (iblock(in, i))
			walk_data(w, (uint64_t)i, iblock(in, i));
	if (iblock(in, EXT2_IND_BLOCK))
		walk_ind(w, iblock(in, EXT2_IND_BLOCK), 1, base);
	base += apb;
	if (iblock(in, EXT2_DIND_BLOCK))
		walk_ind(w, iblock(in, EXT2_DIND_BLOCK), 2, base);
	base += apb * apb;
	if (iblock(in, EXT2_TIND_BLOCK))
		walk_ind(w, iblock(in, EXT2_TIND_BLOCK), 3, base);
	if (w->unlisted)
		chk_err(w->c, "inode", w->ino, 0,
			"%u more bad block pointers not listed", w->unlisted);
}

static uint8_t mode_ftype(uint16_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return EXT2_FT_REG_FILE;
	case S_IFDIR: return EXT2_FT_DIR;
	case S_IFCHR: return EXT2_FT_CHRDEV;
	case S_IFBLK: return EXT2_FT_BLKDEV;
	case S_IFIFO: return EXT2_FT_FIFO;
	case S_IFSOCK: return EXT2_FT_SOCK;
	case S_IFLNK: return EXT2_FT_SYMLINK;
	}
	return EXT2_FT_UNKNOWN;
}

static uint64_t max_file_size(const struct chk *c)
{
	uint64_t apb = c->apb;

	return (EXT2_NDIR_BLOCKS + apb + apb * apb + apb * apb * apb) * c->bs;
}

static void chk_max_size(struct chk *c, uint32_t ino,
			 const struct ext2_inode_large *in)
{
	if (chk_isize(in) > max_file_size(c))
		chk_err(c, "inode", ino, 0,
			"size %" PRIu64 " exceeds the largest file of this block size",
			chk_isize(in));
}

/* The extended attribute block of an inode, shared by reference count. */
static uint64_t chk_ea_block(struct chk *c, uint32_t ino,
			     const struct ext2_inode_large *in)
{
	uint64_t blk = le32toh(in->i_file_acl);
	uint32_t hdr[2];

	if (!blk)
		return 0;
	if (!(c->sb.s_feature_compat & EXT2_FEATURE_COMPAT_EXT_ATTR)) {
		chk_err(c, "inode", ino, blk,
			"extended attribute block %" PRIu64 " (i_file_acl) without the ext_attr feature",
			blk);
		return 1;
	}
	if (blk < c->first_data || blk >= c->nblocks) {
		chk_err(c, "inode", ino, blk,
			"extended attribute block %" PRIu64 " (i_file_acl) beyond end of %s",
			blk, blk >= c->seg->size / c->bs ? "image" : "file system");
		return 1;
	}
	if (chk_is_meta(c, blk)) {
		chk_err(c, "inode", ino, blk,
			"extended attribute block %" PRIu64 " (i_file_acl) is the %s of group %u",
			blk, meta_kind(c, blk), block_group(c, blk));
		return 1;
	}
	if (owner_of(c, blk) && !is_ea(c, blk)) {
		chk_err(c, "inode", ino, blk,
			"extended attribute block %" PRIu64 " is also claimed by inode %" PRIu32,
			blk, owner_of(c, blk));
		c->dups++;
		return 1;
	}
	if (!owner_of(c, blk)) {
		if (xip_chk_pread(c, hdr, sizeof(hdr), blk * c->bs) ||
		    (le32toh(hdr[0]) != EXT2_EXT_ATTR_MAGIC &&
		     le32toh(hdr[0]) != EXT2_EXT_ATTR_MAGIC_v1)) {
			chk_err(c, "inode", ino, blk,
				"extended attribute block %" PRIu64 " has a bad magic number",
				blk);
			return 1;
		}
		set_owner(c, blk, ino);
		c->used_blocks++;
		set_ea(c, blk);
	}
	if (!chk_grow(c, (void **)&c->earefs, &c->eacap, c->nea,
		      sizeof(*c->earefs)))
		c->earefs[c->nea++] = blk;
	return 1;
}

static void chk_sizes(struct chk *c, uint32_t ino,
		      const struct ext2_inode_large *in, const struct walk *w,
		      uint64_t ea)
{
	uint64_t size = chk_isize(in), want, have;
	uint16_t mode = in->i_mode;

	have = in->i_blocks;
	if (c->sb.s_feature_ro_compat & EXT4_FEATURE_RO_COMPAT_HUGE_FILE)
		have |= (uint64_t)in->osd2.linux2.l_i_blocks_hi << 32;
	want = (w->nblocks + ea) * (c->bs / 512);
	if (have != want)
		chk_err(c, "inode", ino, 0,
			"i_blocks is %" PRIu64 ", should be %" PRIu64, have,
			want);
	if (S_ISDIR(mode)) {
		if (size % c->bs || size / c->bs != (uint64_t)(w->last + 1))
			chk_err(c, "inode", ino, 0,
				"directory size %" PRIu64 " does not match its %" PRId64 " blocks",
				size, w->last + 1);
	} else if (S_ISREG(mode)) {
		if (w->last >= 0 && size < (uint64_t)w->last * c->bs)
			chk_err(c, "inode", ino, 0,
				"size %" PRIu64 " ends before its last block (file block %" PRId64 ")",
				size, w->last);
		else
			chk_max_size(c, ino, in);
		if (size > 0x7fffffffULL &&
		    !(c->sb.s_feature_ro_compat & EXT2_FEATURE_RO_COMPAT_LARGE_FILE))
			chk_err(c, "inode", ino, 0,
				"size %" PRIu64 " needs the large_file feature the superblock lacks",
				size);
	}
}

static void chk_symlink(struct chk *c, uint32_t ino,
			const struct ext2_inode_large *in, struct walk *w)
{
	uint64_t size = chk_isize(in);
	const char *buf;
	size_t len, max;

	if (size == 0 || in->i_size_high) {
		chk_err(c, "inode", ino, 0, "symlink size %" PRIu64 " invalid",
			size);
		return;
	}
	if (size < sizeof(in->i_block)) {
		buf = (const char *)in->i_block;
		max = sizeof(in->i_block);
	} else {
		for (int i = 1; i < EXT2_N_BLOCKS; i++)
			if (in->i_block[i]) {
				chk_err(c, "inode", ino, 0,
					"slow symlink has more than one block");
				return;
			}
		if (size >= c->bs) {
			chk_err(c, "inode", ino, 0,
				"symlink size %" PRIu64 " exceeds a block",
				size);
			return;
		}
		if (!w->first_pblk)
			return;	/* its block was reported */
		if (!xip_chk_read_block(c, w->first_pblk, c->scratch))
			return;
		buf = (const char *)c->scratch;
		max = c->bs;
	}
	len = strnlen(buf, max);
	if (len != size)
		chk_err(c, "inode", ino, 0,
			"symlink target is %zu bytes long, i_size says %" PRIu64,
			len, size);
}

static bool is_elf(struct chk *c, uint64_t pblk)
{
	uint8_t b[4];

	return pblk && pblk < c->nblocks &&
	       !xip_chk_pread(c, b, sizeof(b), pblk * c->bs) &&
	       !memcmp(b, "\177ELF", 4);
}

/* The resize inode: its double indirect block lists the reserved GDT. */
static void chk_resize_inode(struct chk *c, const struct ext2_inode_large *in)
{
	uint64_t dind = iblock(in, EXT2_DIND_BLOCK), pblk;
	const uint32_t *ptr;
	uint64_t off;

	if (!S_ISREG(in->i_mode) || !in->i_links_count ||
	    (in->i_flags & (EXT4_EXTENTS_FL | EXT4_INLINE_DATA_FL))) {
		chk_err(c, "inode", EXT2_RESIZE_INO, 0,
			"resize inode: invalid mode 0%o, links %u or flags 0x%x",
			in->i_mode, in->i_links_count, in->i_flags);
		return;
	}
	for (int i = 0; i < EXT2_N_BLOCKS; i++)
		if (i != EXT2_DIND_BLOCK && iblock(in, i)) {
			chk_err(c, "inode", EXT2_RESIZE_INO, 0,
				"resize inode has an unexpected block pointer (i_block[%d])",
				i);
			return;
		}
	if (!dind || dind < c->first_data || dind >= c->nblocks ||
	    chk_is_meta(c, dind) || owner_of(c, dind)) {
		chk_err(c, "inode", EXT2_RESIZE_INO, dind,
			"resize inode: invalid double indirect block %" PRIu64,
			dind);
		return;
	}
	set_owner(c, dind, EXT2_RESIZE_INO);
	c->used_blocks++;
	if (!c->rsv_gdt)
		return;
	ptr = xip_chk_read_block(c, dind, c->scratch) ?
	      (const uint32_t *)c->scratch : NULL;
	off = c->gdt_blocks;
	pblk = c->first_data + 1 + c->gdt_blocks;
	for (uint64_t i = 0; ptr && i < c->rsv_gdt; i++, off++, pblk++) {
		off %= c->apb;
		if (le32toh(ptr[off]) != pblk) {
			chk_err(c, "inode", EXT2_RESIZE_INO, dind,
				"resize inode: reserved descriptor block %" PRIu64 " is not listed",
				pblk);
			return;
		}
	}
}

static bool is_journal(const struct chk *c, uint32_t ino)
{
	return (c->sb.s_feature_compat & EXT3_FEATURE_COMPAT_HAS_JOURNAL) &&
	       c->sb.s_journal_inum == ino;
}

/* Inodes below s_first_ino, as e2fsck's pass 1 sees them. */
static void chk_reserved_inode(struct chk *c, uint32_t ino,
			       const struct ext2_inode_large *in)
{
	struct walk w = { .c = c, .ino = ino, .claim = true, .last = -1,
			  .prev_lblk = -1 };
	bool bad_mode;

	if (ino == EXT2_RESIZE_INO &&
	    (c->sb.s_feature_compat & EXT2_FEATURE_COMPAT_RESIZE_INODE)) {
		chk_resize_inode(c, in);
		chk_max_size(c, ino, in);
		return;
	}
	if (ino == EXT4_USR_QUOTA_INO || ino == EXT4_GRP_QUOTA_INO ||
	    ino == EXT2_JOURNAL_INO) {
		if (in->i_links_count || in->i_blocks || iblock(in, 0))
			chk_err(c, "inode", ino, 0,
				"reserved %s inode is not clear",
				ino == EXT2_JOURNAL_INO ? "journal" : "quota");
		return;
	}
	/* e2fsck clears a bad blocks inode with any of these set */
	if (ino == EXT2_BAD_INO &&
	    (in->i_mode || in->i_uid || in->i_gid || in->i_links_count ||
	     (in->i_flags & EXT4_INLINE_DATA_FL) || in->i_file_acl)) {
		chk_err(c, "inode", ino, 0,
			"bad blocks inode is invalid: mode 0%o, owner %u:%u,"
			" links %u, flags 0x%x, xattr block %u", in->i_mode,
			in->i_uid, in->i_gid, in->i_links_count, in->i_flags,
			in->i_file_acl);
		return;
	}
	if (ino == EXT2_BOOT_LOADER_INO)
		bad_mode = S_ISDIR(in->i_mode);
	else if (ino == EXT2_RESIZE_INO)
		bad_mode = in->i_mode && !S_ISREG(in->i_mode);
	else
		bad_mode = ino != EXT2_BAD_INO && in->i_mode;
	if (bad_mode)
		chk_err(c, "inode", ino, 0, "reserved inode has mode 0%o",
			in->i_mode);
	/* e2fsck checks these of every inode it walks */
	if (in->i_file_acl)
		chk_err(c, "inode", ino, 0,
			"reserved inode has an extended attribute block %u",
			in->i_file_acl);
	chk_max_size(c, ino, in);
	if (in->i_flags & (EXT4_EXTENTS_FL | EXT4_INLINE_DATA_FL))
		return;
	walk_map(&w, in);
	if (!w.problems)
		xip_chk_stw(c, ino)->flags |= ST_MAP_OK;	/* made by the caller */
	if (in->i_blocks != w.nblocks * (c->bs / 512))
		chk_err(c, "inode", ino, 0,
			"i_blocks is %u, should be %" PRIu64, in->i_blocks,
			w.nblocks * (c->bs / 512));
}

/* Flags of features an ext2 image does not have. */
#define FOREIGN_FLAGS (EXT4_CASEFOLD_FL | EXT4_ENCRYPT_FL | EXT4_VERITY_FL | \
		       EXT4_EA_INODE_FL | EXT4_HUGE_FILE_FL)

static void chk_one_inode(struct chk *c, uint32_t ino,
			  const struct ext2_inode_large *in)
{
	struct chk_ino *st;
	uint16_t mode = in->i_mode;
	struct walk w = { .c = c, .ino = ino, .claim = true, .last = -1,
			  .prev_lblk = -1 };
	bool walk_blocks, reserved = ino < c->first_ino;
	uint64_t ea;

	if (!in->i_links_count && in->i_dtime && in->i_dtime < c->ninodes)
		chk_err(c, "inode", ino, 0,
			"deletion time %u looks like a link of the orphan list (i_dtime)",
			in->i_dtime);
	if (!in->i_links_count &&
	    !(reserved && ino != EXT2_ROOT_INO && !is_journal(c, ino))) {
		/* unused: no state, only what the fields say */
		if (in->i_mode && !in->i_dtime && ino >= c->first_ino)
			chk_err(c, "inode", ino, 0,
				"deleted inode (no links) has no deletion time (i_dtime)");
		return;
	}
	st = xip_chk_stw(c, ino);
	if (!st)
		return;		/* out of memory: c->nomem */
	st->links = in->i_links_count;
	st->ftype = mode_ftype(mode);
	if (reserved && ino != EXT2_ROOT_INO && !is_journal(c, ino)) {
		st->flags |= ST_USED;
		chk_reserved_inode(c, ino, in);
		return;
	}
	st->flags |= ST_USED;
	c->used_inodes++;
	if (in->i_dtime)
		chk_err(c, "inode", ino, 0,
			"in use but has a deletion time (i_dtime %u)",
			in->i_dtime);
	if (st->ftype == EXT2_FT_UNKNOWN)
		chk_err(c, "inode", ino, 0, "invalid mode 0%o (i_mode)", mode);
	if (S_ISDIR(mode)) {
		st->flags |= ST_DIR;
		/* what chk_dir_block() looks for in block 0 */
		if (in->i_flags & EXT2_INDEX_FL)
			st->flags |= ST_INDEX;
		c->dirs_in_group[(ino - 1) / c->ipg]++;
	}
	if (ino == EXT2_ROOT_INO && !S_ISDIR(mode))
		chk_err(c, "inode", ino, 0, "the root inode is not a directory (mode 0%o)",
			mode);
	if (in->i_flags & (EXT4_EXTENTS_FL | EXT4_INLINE_DATA_FL)) {
		chk_err(c, "inode", ino, 0,
			"has the %s flag on a file system without that feature (i_flags 0x%x)",
			(in->i_flags & EXT4_EXTENTS_FL) ? "extents" :
			"inline data", in->i_flags);
		return;
	}
	if (in->i_flags & FOREIGN_FLAGS)
		chk_err(c, "inode", ino, 0,
			"has flags of features the file system lacks (i_flags 0x%x)",
			in->i_flags);
	if (in->i_faddr)
		chk_err(c, "inode", ino, 0, "i_faddr is %u, should be 0",
			in->i_faddr);
	if (in->osd2.linux2.l_i_blocks_hi &&
	    !(c->sb.s_feature_ro_compat & EXT4_FEATURE_RO_COMPAT_HUGE_FILE))
		chk_err(c, "inode", ino, 0, "i_blocks_hi is %u, should be 0",
			in->osd2.linux2.l_i_blocks_hi);
	if (in->osd2.linux2.l_i_file_acl_high)
		chk_err(c, "inode", ino, 0,
			"i_file_acl_high is %u, should be 0",
			in->osd2.linux2.l_i_file_acl_high);
	if ((in->i_flags & EXT2_INDEX_FL) &&
	    (!S_ISDIR(mode) ||
	     !(c->sb.s_feature_compat & EXT2_FEATURE_COMPAT_DIR_INDEX)))
		chk_err(c, "inode", ino, 0,
			"has the htree index flag %s (i_flags 0x%x)",
			S_ISDIR(mode) ? "without the dir_index feature" :
			"but is not a directory", in->i_flags);
	if (c->inode_size > EXT2_GOOD_OLD_INODE_SIZE &&
	    (in->i_extra_isize & 3 ||
	     in->i_extra_isize > c->inode_size - EXT2_GOOD_OLD_INODE_SIZE))
		chk_err(c, "inode", ino, 0,
			"invalid extra inode size %u (i_extra_isize)",
			in->i_extra_isize);
	walk_blocks = S_ISDIR(mode) || S_ISREG(mode) ||
		      (S_ISLNK(mode) && chk_isize(in) >= sizeof(in->i_block)) ||
		      st->ftype == EXT2_FT_UNKNOWN;
	w.is_dir = S_ISDIR(mode);
	if (walk_blocks)
		walk_map(&w, in);
	if (!w.problems)
		st->flags |= ST_MAP_OK;
	ea = chk_ea_block(c, ino, in);
	if (st->ftype == EXT2_FT_UNKNOWN)
		return;
	chk_sizes(c, ino, in, &w, ea);
	if (S_ISLNK(mode))
		chk_symlink(c, ino, in, &w);
	else if (!walk_blocks && chk_isize(in))
		chk_err(c, "inode", ino, 0,
			"special file has size %" PRIu64 ", should be 0",
			chk_isize(in));
	if (S_ISREG(mode) && w.runs > 1 && !w.problems) {
		bool elf = is_elf(c, w.first_pblk);

		chk_finding(c, elf ? XIP_CHECK_ERROR : XIP_CHECK_WARNING, "xip",
			    ino, 0,
			    "%s data is not contiguous (%" PRIu64 " runs)",
			    elf ? "ELF file" : "file", w.runs);
	}
	if (S_ISREG(mode))
		c->files++;
}

/*
 * Pass 1 reads the inode tables in chunks of CHK_IOBUF.  A chunk where the
 * image file has a hole is zeros: no inode in it is in use, and none but
 * the reserved ones needs a look.
 */

static void chk_itable_chunk(struct chk *c, uint8_t *buf, uint32_t g,
			     uint32_t i0, uint32_t n)
{
	uint64_t off = (uint64_t)c->gd[g].bg_inode_table * c->bs +
		       (uint64_t)i0 * c->inode_size;
	uint32_t ino0 = g * c->ipg + i0 + 1;
	size_t len = (size_t)n * c->inode_size;

	/* below 64 KiB, reading zeros costs less than asking for a hole */
	if (len >= (64u << 10) && !chk_may_hold_data(c, off, len)) {
		if (ino0 >= c->first_ino)
			return;
		memset(buf, 0, len);
	} else if (xip_chk_pread(c, buf, len, off)) {
		for (uint32_t i = 0; i < n; i++) {
			struct chk_ino *st = xip_chk_stw(c, ino0 + i);

			if (st)
				st->flags |= ST_UNKNOWN;
		}
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct ext2_inode_large *in =
			(const void *)(buf + (size_t)i * c->inode_size);
		uint32_t ino = ino0 + i;

		/* never used: nothing to look at (the common case) */
		if (!in->i_links_count && !in->i_mode && !in->i_dtime &&
		    ino >= c->first_ino)
			continue;
		chk_one_inode(c, ino, in);
		if (c->nomem)
			return;
	}
}

static int chk_inodes(struct chk *c)
{
	uint32_t per = CHK_IOBUF / c->inode_size;
	uint8_t *buf = c->iobuf;

	if (per > c->ipg)
		per = c->ipg;
	for (uint32_t g = 0; g < c->ngroups && !c->nomem; g++) {
		if (c->opts->progress && !(g & 63))
			c->opts->progress(c->opts->progress_arg, "inodes", g,
					  c->ngroups);
		if (!(c->gstate[g] & G_IT_OK))
			continue;	/* ST_UNKNOWN, by xip_chk_st() */
		for (uint32_t i = 0; i < c->ipg && !c->nomem; i += per)
			chk_itable_chunk(c, buf, g, i,
					 c->ipg - i < per ? c->ipg - i : per);
	}
	return c->nomem ? -ENOMEM : 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Shared extended attribute blocks: reference counts against the users. */
static void chk_ea_refs(struct chk *c)
{
	if (!c->nea)
		return;
	qsort(c->earefs, c->nea, sizeof(*c->earefs), cmp_u64);
	for (size_t i = 0; i < c->nea;) {
		size_t j = i;
		uint32_t hdr[2];

		while (j < c->nea && c->earefs[j] == c->earefs[i])
			j++;
		if (!xip_chk_pread(c, hdr, sizeof(hdr), c->earefs[i] * c->bs) &&
		    le32toh(hdr[1]) != j - i)
			chk_err(c, "block", 0, c->earefs[i],
				"extended attribute block %" PRIu64 ": reference count %u, should be %zu",
				c->earefs[i], le32toh(hdr[1]), j - i);
		i = j;
	}
}

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
	while (c->dnalen + len + 1 > c->dnacap) {
		size_t ncap = c->dnacap ? c->dnacap * 2 : 65536;
		char *p = realloc(c->dnarena, ncap);

		if (!p) {
			c->nomem = true;
			return false;
		}
		c->dnarena = p;
		c->dnacap = ncap;
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
		st->name_off = chk_store_name(c, name, nlen);
		st->parent = d->dir;
	} else if (st->flags & ST_DIR) {
		char *a = chk_path(c, ino);

		dir_problem(d, "entry '%s' is a second link to directory inode %" PRIu32 " (%s)",
			    shown, ino, a ? a : "?");
		free(a);
	}
	if (c->opts->against)
		chk_tree_entry(c, d->dir, ino, name, nlen);
}

static void chk_htree_root(struct dirctx *d, const uint8_t *b)
{
	const struct ext2_dx_root_info *ri =
		(const struct ext2_dx_root_info *)(b + 24);

	if (ri->reserved_zero || ri->info_length != 8 ||
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
		if (de->inode) {
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
static void chk_dirs(struct chk *c)
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
				chk_tree_dir_start(c, cur);
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

static void chk_connect(struct chk *c)
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
			if (chk_grow(c, (void **)&stack, &cap, n,
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

static void chk_links(struct chk *c)
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
	xip_chk_set_bits(want, 0, super_blocks(c, g));
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

static void chk_bitmaps(struct chk *c)
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
		if (fb >= 0) {
			if ((uint64_t)fb != d->bg_free_blocks_count)
				chk_err(c, "group", 0, 0,
					"group %u: free block count %u, should be %" PRIu64,
					g, d->bg_free_blocks_count, (uint64_t)fb);
			free_blocks += (uint64_t)fb;
		} else {
			sums = false;
		}
		if ((c->gstate[g] & G_IB_OK) && (c->gstate[g] & G_IT_OK)) {
			used_inodes(c, g, want);
			fi = cmp_bitmap(c, g, "inode", ib, want,
					(uint64_t)g * c->ipg + 1, c->ipg,
					(uint64_t)c->bs * 8);
		}
		if (fi >= 0) {
			if ((uint64_t)fi != d->bg_free_inodes_count)
				chk_err(c, "group", 0, 0,
					"group %u: free inode count %u, should be %" PRIu64,
					g, d->bg_free_inodes_count, (uint64_t)fi);
			free_inodes += (uint64_t)fi;
			if (d->bg_used_dirs_count != c->dirs_in_group[g])
				chk_err(c, "group", 0, 0,
					"group %u: directory count %u, should be %u",
					g, d->bg_used_dirs_count,
					c->dirs_in_group[g]);
		} else {
			sums = false;
		}
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
	chk_reader_init(c);
	c->owner = chk_calloc(c, c->ngroups, sizeof(*c->owner));
	c->ea = chk_calloc(c, c->ngroups, sizeof(*c->ea));
	c->in = chk_calloc(c, c->ngroups, sizeof(*c->in));
	c->dirs_in_group = chk_calloc(c, c->ngroups, sizeof(uint32_t));
	for (int i = 0; i < 3; i++)
		c->lvl[i] = chk_calloc(c, c->bs, 1);
	c->scratch = chk_calloc(c, c->bs, 1);
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
	chk_tree_free(c);
}

static int chk_walk(struct chk *c)
{
	int ret;

	ret = chk_super(c);
	if (ret)
		return ret < 0 ? ret : 0;
	chk_xip(c);
	ret = chk_alloc(c);
	if (ret)
		return ret;
	ret = chk_groups(c);
	if (ret)
		return ret < 0 ? ret : 0;
	ret = chk_inodes(c);
	if (ret)
		return ret;
	chk_ea_refs(c);
	chk_dirs(c);
	if (c->nomem)
		return -ENOMEM;
	chk_connect(c);
	chk_links(c);
	chk_bitmaps(c);
	c->rep->walked = true;
	c->rep->inodes_used = c->used_inodes;
	c->rep->blocks_used = c->used_blocks;
	c->rep->files = c->files;
	if (c->opts->against)
		return chk_tree_compare(c);
	return 0;
}

int xip_check(struct xip_segment *seg, const struct xip_check_opts *opts,
	      struct xip_check_report *rep)
{
	static const struct xip_check_opts no_opts;
	struct chk c = { .seg = seg, .opts = opts ? opts : &no_opts,
			 .rep = rep };
	int ret;

	memset(rep, 0, sizeof(*rep));
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

void xip_check_report_free(struct xip_check_report *rep)
{
	for (size_t i = 0; i < rep->nfindings; i++) {
		free(rep->findings[i].msg);
		free(rep->findings[i].path);
	}
	free(rep->findings);
	memset(rep, 0, sizeof(*rep));
}
