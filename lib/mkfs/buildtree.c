// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The image builder's tree as a data structure (struct btree, struct
 * bnode in mkfs_int.h): nodes and their entries (a hash table of the names
 * of each directory looked up in), owners, lost+found; then, once the tree
 * is whole, inodes numbered, link counts checked and the blocks each one
 * needs counted (xip_btree_finish); freeing it.  Also the small helpers the
 * options and the plan use (--uid-map, --uuid, device numbers, the
 * number of indirect and directory blocks).  The tree is filled by
 * buildscan.c (a source directory), buildtar.c (a tar archive) and
 * builddevtable.c (a device table).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "mkfs/xip_mkfs.h"
#include "mkfs/mkfs_int.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"

#define FAST_LINK_MAX 59	/* bytes that fit in i_block (60 with NUL) */

/* ---- small public helpers -------------------------------------------- */

static int parse_u32(const char *s, char **end, uint32_t *v)
{
	unsigned long long x;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	x = strtoull(s, end, 10);
	if (errno || x > UINT32_MAX)
		return -ERANGE;
	*v = (uint32_t)x;
	return 0;
}

int xip_idmap_parse(const char *text, struct xip_idmap *map)
{
	char *end;

	map->count = 1;
	if (parse_u32(text, &end, &map->from) || *end != ':' ||
	    parse_u32(end + 1, &end, &map->to))
		goto bad;
	if (*end == ':' && (parse_u32(end + 1, &end, &map->count) ||
			    map->count == 0))
		goto bad;
	if (*end)
		goto bad;
	if (map->count - 1 > UINT32_MAX - map->from ||
	    map->count - 1 > UINT32_MAX - map->to)
		return xip_error(-ERANGE, "id map '%s': range overflows", text);
	return 0;
bad:
	return xip_error(-EINVAL,
			 "invalid id map '%s' (expected FROM:TO[:COUNT])",
			 text);
}

uint32_t xip_idmap_apply(const struct xip_idmap *maps, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (id >= maps[i].from && id - maps[i].from < maps[i].count)
			return maps[i].to + (id - maps[i].from);
	return id;
}

int xip_uuid_parse(const char *text, uint8_t uuid[16])
{
	/* 8-4-4-4-12 hex digits: the groups of 4, 2, 2, 2 and 6 bytes */
	static const size_t group[] = { 8, 4, 4, 4, 12 };
	const char *p = text;
	char digits[13];

	for (int g = 0; g < 5; g++) {
		if (g && *p++ != '-')
			goto bad;
		if (strnlen(p, group[g]) < group[g])
			goto bad;
		memcpy(digits, p, group[g]);
		digits[group[g]] = '\0';
		if (xip_hex_decode(digits, uuid, group[g] / 2) !=
		    (int)group[g] / 2)
			goto bad;
		uuid += group[g] / 2;
		p += group[g];
	}
	if (*p)
		goto bad;
	return 0;
bad:
	return xip_error(-EINVAL, "invalid UUID '%s'", text);
}

void xip_build_encode_dev(dev_t rdev, uint32_t iblock[2])
{
	unsigned int ma = major(rdev), mi = minor(rdev);

	if (ma < 256 && mi < 256) {
		iblock[0] = (ma << 8) | mi;
		iblock[1] = 0;
	} else {
		iblock[0] = 0;
		iblock[1] = (mi & 0xff) | (ma << 8) | ((mi & ~0xffu) << 12);
	}
}

/* Distinct groups of @g blocks (aligned at @base) that hold data in
 * [base, end). */
static uint64_t count_groups(const struct xip_lrange *r, size_t n,
			     uint64_t base, uint64_t end, uint64_t g)
{
	uint64_t count = 0, last = UINT64_MAX;

	for (size_t i = 0; i < n; i++) {
		uint64_t a = r[i].start, b = r[i].start + r[i].len;
		uint64_t first, lastg;

		if (b <= base || a >= end || !r[i].len)
			continue;
		a = a < base ? base : a;
		b = b > end ? end : b;
		first = (a - base) / g;
		lastg = (b - 1 - base) / g;
		if (last != UINT64_MAX && first <= last)
			first = last + 1;
		if (lastg >= first)
			count += lastg - first + 1;
		if (last == UINT64_MAX || lastg > last)
			last = lastg;
	}
	return count;
}

uint64_t xip_build_ind_blocks(unsigned int bs, const struct xip_lrange *r,
			      size_t n)
{
	uint64_t p = bs / 4, d0 = EXT2_NDIR_BLOCKS, d1 = d0 + p;
	uint64_t d2 = d1 + p * p, d3 = d2 + p * p * p, count;

	if (n && r[n - 1].start + r[n - 1].len > d3)
		return UINT64_MAX;
	/* single-indirect blocks: every group of p blocks past the direct */
	count = count_groups(r, n, d0, d3, p);
	/* double: the one under i_block[13], those under the triple */
	count += count_groups(r, n, d1, d2, p * p);
	count += count_groups(r, n, d2, d3, p * p);
	/* triple */
	count += count_groups(r, n, d2, d3, p * p * p);
	return count;
}

static size_t dirent_len(size_t namelen)
{
	return (8 + namelen + 3) & ~(size_t)3;
}

uint64_t xip_build_dir_blocks(unsigned int bs, const size_t *namelens,
			      size_t n)
{
	uint64_t blocks = 1;
	size_t used = dirent_len(1) + dirent_len(2);

	for (size_t i = 0; i < n; i++) {
		size_t len = dirent_len(namelens[i]);

		if (used + len > bs) {
			blocks++;
			used = 0;
		}
		used += len;
	}
	return blocks;
}

/* ---- the names of a directory ------------------------------------------- */

/* Directories of up to this many entries are searched name by name. */
#define NAMES_WALK_MAX 8

/*
 * A hash table of a directory's names, open addressing with linear
 * probing: each slot holds 1 + the index of an entry in dir->kids, 0 when
 * free, and at most half the slots are used.
 */
struct bnames {
	size_t *slot;
	size_t mask;		/* slots - 1, a power of two */
	size_t count;
	uint64_t compared;	/* names compared by lookups */
};

static void names_drop(struct bnode *dir)
{
	if (!dir->names)
		return;
	free(dir->names->slot);
	free(dir->names);
	dir->names = NULL;
}

static void names_put(struct bnames *x, const struct bentry *kids, size_t i)
{
	size_t s = (size_t)xip_fnv1a64(kids[i].name) & x->mask;

	while (x->slot[s])
		s = (s + 1) & x->mask;
	x->slot[s] = i + 1;
	x->count++;
}

/* A new table of every entry of @dir, for twice as many at least. */
static int names_build(struct bnode *dir)
{
	struct bnames *x = calloc(1, sizeof(*x));
	size_t slots = 64;
	uint64_t compared = dir->names ? dir->names->compared : 0;

	while (slots / 4 < dir->nkids && slots < SIZE_MAX / 2 / sizeof(size_t))
		slots *= 2;
	if (x)
		x->slot = calloc(slots, sizeof(*x->slot));
	if (!x || !x->slot || slots / 2 < dir->nkids) {
		if (x)
			free(x->slot);
		free(x);
		names_drop(dir);
		return -ENOMEM;
	}
	x->mask = slots - 1;
	x->compared = compared;
	for (size_t i = 0; i < dir->nkids; i++)
		names_put(x, dir->kids, i);
	names_drop(dir);
	dir->names = x;
	return 0;
}

/* The entry just added to @dir into its table, if it has one. */
static void names_add_last(struct bnode *dir)
{
	struct bnames *x = dir->names;

	if (!x)
		return;
	if (2 * (x->count + 1) > x->mask + 1)
		names_build(dir);	/* without memory: names walked */
	else
		names_put(x, dir->kids, dir->nkids - 1);
}

/* The slot of @dir's table that holds its entry @i, SIZE_MAX if none. */
static size_t names_slot_of(const struct bnode *dir, size_t i)
{
	const struct bnames *x = dir->names;
	size_t s = (size_t)xip_fnv1a64(dir->kids[i].name) & x->mask;

	for (; x->slot[s]; s = (s + 1) & x->mask)
		if (x->slot[s] == i + 1)
			return s;
	return SIZE_MAX;
}

/*
 * Free the slot @s of @dir's table: the entries after it in its run move
 * back where their probe starts allow (deletion in linear probing, no
 * tombstones), so that every lookup still reaches its name.
 */
static void names_unslot(struct bnode *dir, size_t s)
{
	struct bnames *x = dir->names;
	size_t j = s;

	x->slot[s] = 0;
	x->count--;
	for (;;) {
		size_t h;

		j = (j + 1) & x->mask;
		if (!x->slot[j])
			return;
		h = (size_t)xip_fnv1a64(dir->kids[x->slot[j] - 1].name) &
		    x->mask;
		/* stays when its home lies cyclically in (s, j] */
		if (s <= j ? (h > s && h <= j) : (h > s || h <= j))
			continue;
		x->slot[s] = x->slot[j];
		x->slot[j] = 0;
		s = j;
	}
}

static struct bentry *names_find(struct bnode *dir, const char *name)
{
	struct bnames *x = dir->names;
	size_t s = (size_t)xip_fnv1a64(name) & x->mask;

	for (; x->slot[s]; s = (s + 1) & x->mask) {
		struct bentry *e = &dir->kids[x->slot[s] - 1];

		x->compared++;
		if (!strcmp(e->name, name))
			return e;
	}
	return NULL;
}

void xip_btree_names_stats(const struct bnode *dir, size_t *indexed,
			   uint64_t *compared)
{
	*indexed = dir->names ? dir->names->count : 0;
	*compared = dir->names ? dir->names->compared : 0;
}

/* ---- the tree ---------------------------------------------------------- */

struct bnode *xip_btree_node_new(struct btree *t)
{
	struct bnode *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	if (xip_grow((void **)&t->nodes, &t->capnodes, t->nnodes + 1,
		     sizeof(*t->nodes))) {
		free(n);
		return NULL;
	}
	t->nodes[t->nnodes++] = n;
	return n;
}

void xip_btree_set_dir(struct btree *t, struct bnode *n,
			const struct xip_build_opts *o, unsigned int perm)
{
	n->mode = S_IFDIR | perm;
	xip_btree_set_owner(n, o, 0, 0);
	xip_btree_node_set_now(t, n);
}

struct bnode *xip_btree_root_new(struct btree *t, const char *src)
{
	t->src = src;
	t->root_fd = -1;
	t->root = xip_btree_node_new(t);
	return t->root;
}

int xip_btree_add_entry(struct bnode *dir, const char *name, struct bnode *n)
{
	struct bentry *e;

	if (xip_grow((void **)&dir->kids, &dir->capkids, dir->nkids + 1,
		     sizeof(*e)))
		return -ENOMEM;
	e = &dir->kids[dir->nkids];
	e->name = strdup(name);
	if (!e->name)
		return -ENOMEM;
	e->node = n;
	e->layer = 0;
	dir->nkids++;
	n->nlink++;
	names_add_last(dir);
	return 0;
}

void xip_btree_remove_entry(struct bnode *dir, struct bentry *e)
{
	size_t i = (size_t)(e - dir->kids), last = dir->nkids - 1;

	/* the last entry takes its place: the table follows both */
	if (dir->names) {
		size_t s = names_slot_of(dir, i), m;

		if (s != SIZE_MAX)
			names_unslot(dir, s);
		m = i == last ? 0 : names_slot_of(dir, last);
		if (s == SIZE_MAX || m == SIZE_MAX)
			names_drop(dir);	/* lost track: made anew */
		else if (i != last)
			dir->names->slot[m] = i + 1;
	}
	free(e->name);
	if (i != last)
		*e = dir->kids[last];
	dir->nkids--;
}

struct bentry *xip_btree_find_entry(struct bnode *dir, const char *name)
{
	if (!dir->names && dir->nkids > NAMES_WALK_MAX)
		names_build(dir);	/* without memory: names walked */
	if (dir->names)
		return names_find(dir, name);
	for (size_t i = 0; i < dir->nkids; i++)
		if (!strcmp(dir->kids[i].name, name))
			return &dir->kids[i];
	return NULL;
}

char *xip_btree_path(const struct btree *t, const struct bnode *n)
{
	size_t len = strlen(t->src ? t->src : "") + 1, off;
	const struct bnode *p;
	char *s;

	if (!n->from_source)
		return strdup("(device table)");
	for (p = n; p && p->name; p = p->parent)
		len += strlen(p->name) + 1;
	s = malloc(len);
	if (!s)
		return NULL;
	off = len - 1;
	s[off] = '\0';
	for (p = n; p && p->name; p = p->parent) {
		size_t l = strlen(p->name);

		off -= l;
		memcpy(s + off, p->name, l);
		s[--off] = '/';
	}
	memcpy(s, t->src ? t->src : "", off);
	return s;
}

void xip_btree_set_owner(struct bnode *n, const struct xip_build_opts *o,
			 uint32_t uid, uint32_t gid)
{
	if (o->squash) {
		n->uid = n->gid = 0;
	} else if (o->have_owner) {
		n->uid = o->owner_uid;
		n->gid = o->owner_gid;
	} else {
		n->uid = xip_idmap_apply(o->uid_map, o->n_uid_map, uid);
		n->gid = xip_idmap_apply(o->gid_map, o->n_gid_map, gid);
	}
}

void xip_btree_warn(const struct xip_build_opts *o, const char *fmt, ...)
{
	char msg[XIP_ERRMSG_MAX];
	va_list ap;

	if (!o->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	o->warn(msg, o->warn_arg);
}

void xip_btree_node_set_now(struct btree *t, struct bnode *n)
{
	n->atime = n->mtime = n->ctime = t->now;
	n->atime_ns = n->mtime_ns = n->ctime_ns = 0;
}

int xip_btree_make_lpf(struct btree *t, const struct xip_build_opts *o)
{
	struct bentry *e = xip_btree_find_entry(t->root, "lost+found");
	struct bnode *n;

	if (e) {
		if (!S_ISDIR(e->node->mode)) {
			char *p = xip_btree_path(t, e->node);
			int ret = xip_error(-EEXIST,
					    "%s: must be a directory (the image's lost+found)",
					    p ? p : "lost+found");

			free(p);
			return ret;
		}
		e->node->is_lpf = true;
		t->lpf = e->node;
		return 0;
	}
	n = xip_btree_node_new(t);
	if (!n)
		return -ENOMEM;
	xip_btree_set_dir(t, n, o, 0700);
	n->is_lpf = true;
	n->parent = t->root;
	t->lpf = n;
	return xip_btree_add_entry(t->root, "lost+found", n);
}


/* ---- numbering and counting ------------------------------------------- */

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct bentry *)a)->name,
		      ((const struct bentry *)b)->name);
}

static void clamp(const struct btree *t, int64_t *sec, uint32_t *ns)
{
	if (t->clamp && *sec >= t->clamp_time) {
		if (*sec > t->clamp_time || *ns)
			*ns = 0;
		*sec = t->clamp_time;
	}
}

/* Bytes of the xattrs in ext2's entry format, to guess if they fit the
 * inode or need a block. */
static size_t xattr_bytes(const struct bnode *n)
{
	size_t sum = 4;

	for (size_t i = 0; i < n->nxattrs; i++)
		sum += 16 + ((strlen(n->xattrs[i].name) + 3) & ~3u) +
		       ((n->xattrs[i].len + 3) & ~(size_t)3);
	return sum;
}

static int count_node(struct btree *t, struct bnode *n)
{
	unsigned int bs = t->bs;

	clamp(t, &n->mtime, &n->mtime_ns);
	clamp(t, &n->ctime, &n->ctime_ns);
	if (t->clamp) {
		/* reading a file or a link may move its atime: not stable */
		n->atime = n->mtime;
		n->atime_ns = n->mtime_ns;
	}
	if (S_ISDIR(n->mode)) {
		size_t *lens = malloc((n->nkids + 1) * sizeof(*lens));
		uint64_t blocks;

		if (!lens)
			return -ENOMEM;
		for (size_t i = 0; i < n->nkids; i++)
			lens[i] = strlen(n->kids[i].name);
		blocks = xip_build_dir_blocks(bs, lens, n->nkids);
		free(lens);
		if (n->is_lpf) {
			uint64_t min = div_round_up(16384, bs);

			min = min < 2 ? 2 : min > 12 ? 12 : min;
			blocks = blocks < min ? min : blocks;
		}
		free(n->ranges);
		n->ranges = NULL;
		n->nranges = 0;
		if (xip_btree_whole_range(n, blocks))
			return -ENOMEM;
		n->size = blocks * bs;
	} else if (S_ISLNK(n->mode) && n->size > FAST_LINK_MAX) {
		if (xip_btree_whole_range(n, 1))
			return -ENOMEM;
	}
	n->data_blocks = 0;
	for (size_t i = 0; i < n->nranges; i++)
		n->data_blocks += n->ranges[i].len;
	n->ind_blocks = xip_build_ind_blocks(bs, n->ranges, n->nranges);
	if (n->ind_blocks == UINT64_MAX ||
	    (n->data_blocks + n->ind_blocks + 1) * (bs / 512) > UINT32_MAX) {
		char *p = xip_btree_path(t, n);
		int ret = xip_error(-EFBIG,
				    "%s: too large for ext2 with %u-byte blocks",
				    p ? p : "?", bs);

		free(p);
		return ret;
	}
	if (n->nxattrs && xattr_bytes(n) > 256 - EXT2_GOOD_OLD_INODE_SIZE - 32)
		t->ea_blocks++;
	return 0;
}

/* Preorder numbering: root 2, lost+found 11, the rest from 12. */
static int number(struct btree *t, struct bnode *dir, ext2_ino_t *next,
		  size_t *order)
{
	int ret;

	names_drop(dir);	/* the entries move */
	if (dir->nkids > 1)
		qsort(dir->kids, dir->nkids, sizeof(*dir->kids), entry_cmp);
	for (size_t i = 0; i < dir->nkids; i++) {
		struct bnode *n = dir->kids[i].node;

		if (n->ino)
			continue;
		if (n->is_lpf) {
			n->ino = 11;
		} else {
			if (*next == 0)
				return -EOVERFLOW;
			n->ino = (*next)++;
		}
		t->nodes[(*order)++] = n;
		if (S_ISDIR(n->mode)) {
			dir->subdirs++;
			n->nlink = 2;
			ret = number(t, n, next, order);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/*
 * Free the nodes that no name reaches (a member of an archive replaced by
 * a later one of the same name): numbering keeps only the reachable ones.
 */
static int number_all(struct btree *t, ext2_ino_t *next, size_t *order)
{
	size_t n = t->nnodes;
	struct bnode **all = malloc(n * sizeof(*all));
	int ret;

	if (!all)
		return -ENOMEM;
	memcpy(all, t->nodes, n * sizeof(*all));
	t->root->ino = EXT2_ROOT_INO;
	t->nodes[0] = t->root;
	ret = number(t, t->root, next, order);
	if (!ret) {
		for (size_t i = 0; i < n; i++)
			if (!all[i]->ino)
				xip_btree_node_free(all[i]);
		t->nnodes = *order;
	}
	free(all);
	return ret;
}

/*
 * Link counts.  The kernel's ext2 driver gives no inode more than
 * EXT2_LINK_MAX (32000, fs/ext2/ext2.h: its s_max_links) links; its ext4
 * driver (EXT4_LINK_MAX, fs/ext4/ext4.h) and e2fsck (EXT2_LINK_MAX of
 * libext2fs) take up to 65000.  A directory's count is 2 + its
 * subdirectories, held to the ext2 driver's limit (ext4's dir_nlink,
 * which stores 1 past it, is not an ext2 feature); a file's is its names,
 * held to 65000.  Either way the 16-bit i_links_count never wraps.
 */
#define DIR_LINKS_MAX 32000
#define FILE_LINKS_MAX 65000

static int check_links(const struct btree *t, const struct bnode *n)
{
	char *p;
	int ret;

	if (S_ISDIR(n->mode) ? n->nlink <= DIR_LINKS_MAX :
	    n->nlink <= FILE_LINKS_MAX)
		return 0;
	p = xip_btree_path(t, n);
	if (S_ISDIR(n->mode))
		ret = xip_error(-EMLINK,
				"%s: %u subdirectories: ext2 allows at most %u (%u links)",
				p ? p : "?", n->subdirs, DIR_LINKS_MAX - 2,
				DIR_LINKS_MAX);
	else
		ret = xip_error(-EMLINK,
				"%s: %u names for one inode: ext2 allows at most %u links",
				p ? p : "?", n->nlink, FILE_LINKS_MAX);
	free(p);
	return ret;
}

int xip_btree_finish(struct btree *t, const struct xip_build_opts *o)
{
	ext2_ino_t next = 12;
	size_t order = 1;
	int ret;

	(void)o;
	ret = number_all(t, &next, &order);
	if (ret)
		return ret == -ENOMEM ? ret : xip_error(ret, "too many files");
	for (size_t i = 0; i < t->nnodes; i++) {
		struct bnode *n = t->nodes[i];

		n->order = i;
		if (S_ISDIR(n->mode))
			n->nlink = 2 + n->subdirs;
		ret = check_links(t, n);
		if (!ret)
			ret = count_node(t, n);
		if (ret)
			return ret;
	}
	return 0;
}

int xip_btree_xattr_add(struct bnode *n, const char *name, const void *value,
			size_t len)
{
	struct bxattr *xa;

	if (xip_grow((void **)&n->xattrs, &n->capxattrs, n->nxattrs + 1,
		     sizeof(*xa)))
		return -ENOMEM;
	xa = &n->xattrs[n->nxattrs];
	xa->name = strdup(name);
	xa->value = malloc(len ? len : 1);
	if (!xa->name || !xa->value) {
		free(xa->name);
		free(xa->value);
		return -ENOMEM;
	}
	if (len)
		memcpy(xa->value, value, len);
	xa->len = len;
	n->nxattrs++;
	return 0;
}

void xip_btree_xattrs_free(struct bnode *n)
{
	for (size_t i = 0; i < n->nxattrs; i++) {
		free(n->xattrs[i].name);
		free(n->xattrs[i].value);
	}
	free(n->xattrs);
	n->xattrs = NULL;
	n->nxattrs = n->capxattrs = 0;
}

void xip_btree_node_free(struct bnode *n)
{
	names_drop(n);
	for (size_t i = 0; i < n->nkids; i++)
		free(n->kids[i].name);
	xip_btree_xattrs_free(n);
	free(n->kids);
	free(n->target);
	free(n->name);
	free(n->ranges);
	free(n->druns);
	free(n->iruns);
	free(n);
}

static void nofree(void *p)
{
	free(p);
}

void xip_btree_free(struct btree *t)
{
	xip_btree_dirs_pop(t, 0);
	if (t->spool_fd > 0)
		close(t->spool_fd);
	free(t->dirs);
	if (t->root_fd >= 0)
		close(t->root_fd);
	for (size_t i = 0; i < t->nnodes; i++)
		xip_btree_node_free(t->nodes[i]);
	free(t->nodes);
	tdestroy(t->links, nofree);
	memset(t, 0, sizeof(*t));
}
