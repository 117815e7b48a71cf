// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mkfs: the identity of an image.  One XXH3 128-bit hash (xxhash,
 * inlined, streamed: a few tenths of a second per GiB) of the tree
 * (names, inode numbers, modes, owners, sizes, times, link targets,
 * extended attributes), the label and the geometry, then of the files'
 * contents, derives the UUID (unless one is given, random or cleared):
 * libuuid's uuid_generate_sha1 (a version 5 UUID) in xiptool's namespace
 * over it, so that trees that differ only in the bytes of a file get
 * different UUIDs.  The contents are hashed as the writer copies them:
 * every run of a file's bytes (at most 1 MiB, hashed in the buffer it
 * is written from) after its place in the file, then the file's inode
 * number and size: one pass over the data, no per-file state kept.  The directory hash seed comes from the hash and the UUID.  The
 * superblock gets them with the label and the time of the build
 * (SOURCE_DATE_EPOCH or --timestamp make it reproducible: the same tree
 * gives the same image, UUID included).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <uuid/uuid.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "mkfs/xip_mkfs.h"
#include "mkfs/mkfs_int.h"
#include "util/xip_ext2.h"

/* ---- a 128-bit hash for the derived UUID -------------------------------- */

int xip_bld_hash_init(struct bhash *h)
{
	h->st = XXH3_createState();	/* aligned as XXH3 wants it */
	if (!h->st)
		return -ENOMEM;
	XXH3_128bits_reset(h->st);
	return 0;
}

void xip_bld_hash_free(struct bhash *h)
{
	XXH3_freeState(h->st);
	h->st = NULL;
}

static void bhash_add(struct bhash *h, const void *data, size_t len)
{
	XXH3_128bits_update(h->st, data, len);
}

/* little-endian on every host: the same tree, the same UUID */
static void bhash_u64(struct bhash *h, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	bhash_add(h, b, 8);
}

static void put128(XXH128_hash_t d, uint8_t out[16])
{
	for (int i = 0; i < 8; i++) {
		out[i] = (uint8_t)(d.low64 >> (8 * i));
		out[8 + i] = (uint8_t)(d.high64 >> (8 * i));
	}
}

static void tree_hash(const struct btree *t, const struct xip_build_opts *o,
		      struct bhash *h)
{
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

void xip_bld_hash_tree(const struct btree *t, const struct xip_build_opts *o,
		       ext2_filsys fs, struct bhash *h)
{
	tree_hash(t, o, h);
	bhash_u64(h, ext2fs_blocks_count(fs->super));
	bhash_u64(h, fs->super->s_inodes_count);
}

/* ---- the contents ----------------------------------------------------- */

void xip_bld_content_add(struct bhash *h, uint64_t off, const void *p,
			 size_t len)
{
	/* after where the run lies: the same bytes elsewhere differ */
	bhash_u64(h, off);
	bhash_add(h, p, len);
}

void xip_bld_content_done(struct bhash *h, uint64_t ino, uint64_t size)
{
	bhash_u64(h, ino);
	bhash_u64(h, size);
}

/* ---- the superblock: UUID, hash seed, label, times ----------------------- */

/* The namespace of xiptool's derived UUIDs (RFC 4122 version 5). */
static const uuid_t xip_uuid_ns = {
	0xd0, 0x4b, 0xdb, 0xee, 0xc8, 0x60, 0x41, 0xbc,
	0x80, 0xaa, 0x0a, 0x89, 0x1d, 0x36, 0x45, 0x9c,
};

void xip_bld_super_fill(ext2_filsys fs, const struct xip_build_opts *o,
			const struct bhash *h, int64_t now)
{
	struct ext2_super_block *sb = fs->super;
	uint8_t name[16], seed[32];

	/* the tree, then the contents: the name of the derived UUID */
	put128(XXH3_128bits_digest(h->st), name);

	switch (o->uuid_mode) {
	case XIP_UUID_GIVEN:
		memcpy(sb->s_uuid, o->uuid, 16);
		break;
	case XIP_UUID_RANDOM:
		if (getrandom(sb->s_uuid, 16, 0) != 16)
			put128(XXH3_128bits_withSeed(name, sizeof(name),
						     (uint64_t)time(NULL)),
			       sb->s_uuid);
		break;
	case XIP_UUID_CLEAR:
		memset(sb->s_uuid, 0, 16);
		break;
	default:
		uuid_generate_sha1(sb->s_uuid, xip_uuid_ns,
				   (const char *)name, sizeof(name));
		break;
	}
	if (o->uuid_mode == XIP_UUID_RANDOM) {
		/* version 4, RFC variant */
		sb->s_uuid[6] = (uint8_t)((sb->s_uuid[6] & 0x0f) | 0x40);
		sb->s_uuid[8] = (uint8_t)((sb->s_uuid[8] & 0x3f) | 0x80);
	}
	/* the directory hash seed: the hash and the UUID */
	memcpy(seed, name, 16);
	memcpy(seed + 16, sb->s_uuid, 16);
	put128(XXH3_128bits_withSeed(seed, sizeof(seed), 0x68617368),
	       (uint8_t *)sb->s_hash_seed);
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
	fs->now = (time_t)now;
	ext2fs_mark_super_dirty(fs);
}
