/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The build room: mkfs from a tree, a tar archive or OCI layers.
 * Part of the public API: include "xip.h", which includes this header.
 */
#ifndef XIP_MKFS_H
#define XIP_MKFS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "oci/xip_oci.h"
#include "verity/xip_verity.h"

/* ------------------------------------------------------------------ */
/* Building images from a tree (build.c)                               */
/* ------------------------------------------------------------------ */

/* One range of an id map: ids from..from+count-1 become to..to+count-1. */
struct xip_idmap {
	uint32_t from, to, count;
};

/* Parse "FROM:TO[:COUNT]" (COUNT defaults to 1). */
int xip_idmap_parse(const char *text, struct xip_idmap *map);
/* Map @id through @maps (the first range that holds it), else @id. */
uint32_t xip_idmap_apply(const struct xip_idmap *maps, size_t n, uint32_t id);
/* Parse a UUID "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx". */
int xip_uuid_parse(const char *text, uint8_t uuid[16]);

/* How the image's UUID is chosen. */
enum xip_uuid_mode {
	XIP_UUID_DERIVED = 0,	/* hashed from the tree: reproducible */
	XIP_UUID_GIVEN,		/* xip_build_opts.uuid */
	XIP_UUID_RANDOM,	/* from getrandom() */
	XIP_UUID_CLEAR,		/* all zero */
};

/* Counters handed to the progress callback. */
struct xip_build_progress {
	uint64_t files_done, files_total;
	uint64_t bytes_done, bytes_total;
};

struct xip_oci_client_opts;

struct xip_build_opts {
	const char *source;		/* tree to copy; NULL: empty fs */
	const char *tar;		/* or a tar archive ("-": stdin) */
	unsigned int block_size;	/* 0: the host page size */
	uint64_t size;			/* bytes; 0: automatic */
	uint64_t extra;			/* bytes added to an automatic size */
	uint64_t inodes;		/* 0: automatic */
	uint64_t align;			/* files >= align start aligned; 0: off */
	const char *label;
	enum xip_uuid_mode uuid_mode;
	uint8_t uuid[16];
	bool have_timestamp;		/* clamp every time to @timestamp */
	int64_t timestamp;
	bool squash;			/* everything owned by 0:0 */
	bool have_owner;		/* everything owned by owner_uid:gid */
	uint32_t owner_uid, owner_gid;
	const struct xip_idmap *uid_map, *gid_map;
	size_t n_uid_map, n_gid_map;
	const char *device_table;	/* genext2fs device table file */
	bool force;			/* overwrite a non-empty image */
	/*
	 * A dm-verity hash tree after the file system (lib/verity/): with
	 * @salt (@salt_len bytes), else one derived from the image's
	 * identity when have_timestamp (reproducible), else a random one.
	 * Only for an image file: a device or segment has no room after.
	 */
	bool verity;
	const uint8_t *salt;
	size_t salt_len;
	/*
	 * With verity: sign the root hash with @signer and put the
	 * signature block after the tree (xip_verity.h).
	 */
	const struct xip_verity_signer *signer;
	void (*progress)(const struct xip_build_progress *p, void *arg);
	void *progress_arg;
	/*
	 * Something about the input worth knowing that does not stop the
	 * build (an archive without its end-of-archive blocks, say): one
	 * line, "OBJECT: REASON", for the caller to show.  NULL: none.
	 */
	void (*warn)(const char *msg, void *arg);
	void *warn_arg;
	/*
	 * xip_build_oci() of docker://...: how to reach the registry
	 * (credentials, TLS, timeout; xip_oci.h).  NULL: the defaults.
	 */
	const struct xip_oci_client_opts *registry;
};

struct xip_build_result {
	uint64_t size;			/* bytes of the image */
	uint64_t blocks, blocks_used;
	uint64_t inodes, inodes_used;
	unsigned int block_size;
	uint64_t files, bytes;		/* regular files and their bytes */
	/* with opts->verity: the tree's place and the root hash */
	uint64_t hash_offset;		/* the file system's bytes */
	uint8_t root_hash[XIP_VERITY_DIGEST_MAX];
	size_t root_hash_len;
	/* with opts->signer: the DER signature (free() it), its length */
	uint8_t *signature;
	size_t signature_len;
};

/*
 * Create an ext2 image at @image (a new file, an existing file, a block
 * device or @NAME) holding the tree opts->source, every regular file's
 * data contiguous (split only at block group boundaries).  A file is
 * built in a private new file and renamed over @image when complete; a
 * symlink, another user's file in a sticky shared directory and a busy
 * segment are refused.  On failure nothing is left behind: an existing
 * file is left as it was, the start of a device or segment is cleared.
 */
int xip_build(const char *image, const struct xip_build_opts *opts,
	      struct xip_build_result *res);

/*
 * Remove the temporary file of an xip_build() in progress, if it has a
 * name.  Async-signal-safe: for a command's SIGINT and SIGTERM handlers,
 * which then let the signal end the process.
 */
void xip_build_signal_cleanup(void);

/* ------------------------------------------------------------------ */
/* Building an image from an OCI image layout (lib/mkfs/buildoci.c)   */
/* ------------------------------------------------------------------ */

/*
 * xip_build() of the image @layout ("DIR[:TAG]", an OCI image layout; no
 * TAG: its only image; or "docker://HOST[:PORT]/REPO[:TAG|@DIGEST]", an
 * image in a registry, reached as opts->registry says) names: its
 * layers applied in order, whiteouts
 * removing what lower layers gave.  @platform ("linux/arm64"; NULL: this
 * host's) picks one image of a multi-platform index.  Every blob's size
 * and sha256 digest are checked as it is read; on failure nothing is left.
 * opts->source and opts->tar must be NULL.
 */
int xip_build_oci(const char *image, const char *layout,
		  const char *platform, const struct xip_build_opts *opts,
		  struct xip_build_result *res);

#endif /* XIP_MKFS_H */
