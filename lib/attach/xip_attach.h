/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The attach room: attach, detach, save, pulling from nbd://, pushing
 * images to registries.
 * Part of the public API: include "xip.h", which includes this header.
 */
#ifndef XIP_ATTACH_H
#define XIP_ATTACH_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/xip_util.h"
#include "segment/xip_segment.h"
#include "registry/xip_registry.h"
#include "oci/xip_oci.h"

/* ------------------------------------------------------------------ */
/* Attach, detach, save (attach.c, detach.c, save.c)                  */
/* ------------------------------------------------------------------ */

/*
 * attach --populate: whether exec maps a program's read-only pages at
 * once (MAP_POPULATE) or leaves them to faults; auto: this boot's
 * verdict (populate.c: measured once per boot, kept in the run
 * directory), never for hugetlbfs and sn/en
 */
enum xip_populate {
	XIP_POPULATE_AUTO = 0,
	XIP_POPULATE_ALWAYS,
	XIP_POPULATE_NEVER,
};

struct xip_attach_opts {
	const char *image;	/* source image (NULL for sn/en) */
	const char *name;	/* NULL: derived from the image's name */
	enum xip_seg_type type;	/* XIP_SEGTYPE_NONE: sr */
	uint64_t size;		/* segment size (sn/en), or a minimum */
	bool loop;		/* bind a loop device */
	bool hugepages;		/* back the segment by hugetlbfs */
	const char *file;	/* bind this file of the image instead */
	bool raw;		/* any bytes, not only an ext2 image */
	unsigned int timeout_ms; /* nbd://: give up on a server silent for
				    that long (0: 60 s) */
	/*
	 * Admit only the bytes of the image's dm-verity tree with this root
	 * hash (sr and er types, not on hugetlbfs), then seal the segment
	 * file (FS_IMMUTABLE_FL) before it is recorded.
	 */
	const uint8_t *root_hash;
	size_t root_hash_len;
	/*
	 * A trust store (xip_verity.h): the root hash is the one the image's
	 * signature (after its tree) signs, checked against it; the segment
	 * is then admitted as with root_hash, which, when also given, must be
	 * that one.  The record names the signer.
	 */
	const char *trust;
	/* a detached signature file used in place of the image's (trust) */
	const char *root_hash_sig;
	/* whether exec populates a program's read-only mappings */
	enum xip_populate populate;
	/*
	 * nbd:// only: return once the metadata (and the tree) are in; a
	 * filler process pulls the rest, readers wait for what they touch
	 */
	bool lazy;
	/*
	 * The policy file's attach rule (xiptool.conf(5), root's attach):
	 * what the segment must be before it is recorded, verified (sealed)
	 * or signed too (its record's signer); NULL or XIP_POLICY_ANY:
	 * anything.  A refusal is -EPERM naming the rule, nothing left.
	 */
	const struct xip_policy *policy;
	/* docker://: how to reach the registry (NULL: the defaults) */
	const struct xip_oci_client_opts *oci;
};

/*
 * Create a segment filled from the image (gzip decompressed on the fly),
 * record it, and bind a loop device when asked.  On success @e holds the
 * record.  On failure nothing is left behind.
 */
int xip_attach(const struct xip_attach_opts *o, struct xip_seg_entry *e);

#define XIP_DETACH_FORCE	0x01	/* even when mounted or held */

/*
 * Release the loop device, remove the segment file and the record.
 * @save (may be NULL) is written first.  Refuses with -EBUSY while in use
 * unless XIP_DETACH_FORCE.
 */
int xip_detach(const char *what, const char *save, int flags);
/* Write the segment's data to @dest atomically (temp file + rename). */
int xip_save(const char *what, const char *dest);
/*
 * Identify the segment's contents again (libblkid) and record a changed
 * label or UUID: writable segments change, sn/en ones get built into.
 */
int xip_seg_refresh(struct xip_seg_entry *e);

/* ------------------------------------------------------------------ */
/* Pulling NBD exports into segments (nbdpull.c)                      */
/* ------------------------------------------------------------------ */

/*
 * Is @spec an NBD URI (nbd://, nbds://, nbd+unix://, nbds+unix://,
 * nbd+vsock://, nbds+vsock://) rather than a path or @NAME?
 */
bool xip_nbd_is_uri(const char *spec);
/*
 * A segment name for an NBD URI: from the export name ("rootfs.img"
 * gives "rootfs"), "nbd" for the default (empty) export.
 */
int xip_nbd_default_name(const char *uri, char *buf, size_t len);

/* Progress of a pull: @done of @total bytes. */
typedef void (*xip_nbd_progress_fn)(void *arg, uint64_t done,
				    uint64_t total);
/*
 * Report the progress of the pulls this thread makes (xip_attach from an
 * NBD URI) to @fn; NULL turns it off.
 */
void xip_nbd_set_progress(xip_nbd_progress_fn fn, void *arg);

/* ------------------------------------------------------------------ */
/* Pushing images to registries as OCI artifacts (ocipush.c)          */
/* ------------------------------------------------------------------ */

#define XIP_OCI_MANIFEST_TYPE "application/vnd.oci.image.manifest.v1+json"
#define XIP_OCI_ARTIFACT_TYPE "application/vnd.xiptool.image.v1"
#define XIP_OCI_CONFIG_TYPE "application/vnd.xiptool.image.config.v1+json"
#define XIP_OCI_LAYER_TYPE "application/vnd.xiptool.image.layer.v1.ext2"

/* What the artifact says of an image. */
struct xip_push_meta {
	char title[256];	/* the image file's name */
	char label[17];
	char uuid[37];
	uint64_t size;		/* bytes of the image (the layer) */
	char root_hash[2 * 64 + 1]; /* hex, "" without a verity tree */
	bool is_signed;
	char layer_digest[80];	/* sha256:HEX of the image's bytes */
};

/* The config blob's JSON of @m into @out: 0, -ENAMETOOLONG. */
int xip_push_config(const struct xip_push_meta *m, char *out, size_t cap);
/* The image manifest of @m with its config blob: 0, -ENAMETOOLONG. */
int xip_push_manifest(const struct xip_push_meta *m, const char *config_digest,
		      size_t config_size, char *out, size_t cap);

struct xip_push_result {
	char digest[80];	 /* the manifest's */
	unsigned int uploaded;	 /* blobs sent */
	unsigned int skipped;	 /* blobs the repository had */
};

/*
 * Push the image @spec (a path or @NAME) to @dest (docker://HOST/REPO:TAG):
 * its blobs that the repository lacks, then the manifest under the tag.
 */
int xip_push(const char *spec, const char *dest,
	     const struct xip_oci_client_opts *opts, struct xip_push_result *r);

#endif /* XIP_ATTACH_H */
