// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the loader read of an image for one path, kept with the segment:
 * the kernel keeps a program's dentry, inode and page cache between two
 * execve(2)s of it; the loader, a new process each time, keeps what its
 * lookup, inode read, block map walk and ELF header reads gave it in an
 * extended attribute of the segment file (trusted.xiptool.exec.<hash of
 * the path>), so that the next start of the same program reads one
 * attribute instead of the superblock, descriptors, inodes, directories
 * and block maps.
 *
 * Only where nothing can change under it: a segment of a read-only type
 * (its image cannot be written while it is attached) on tmpfs, whose
 * file goes, and its attributes with it, when the segment is detached.
 * The trusted.* namespace is read and written by the administrator only
 * (CAP_SYS_ADMIN): nobody else can plant an entry, and other users'
 * starts read the image as before.  An entry is no verdict: the ELF
 * headers it holds are parsed and validated again, execute permission is
 * checked again against the caller's credentials, the runs against the
 * segment's size; an entry that does not decode, names another path or
 * does not replay is ignored (and replaced).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <linux/magic.h>

#include "exec/exec_int.h"
#include "util/xip_debug.h"
#include "util/xip_util.h"
#include "segment/xip_segment.h"
#include "reader/xip_reader.h"

#define CACHE_MAGIC	"XIPEXEC1"
#define CACHE_PREFIX	"trusted.xiptool.exec."
#define CACHE_MAX	65536	/* the kernel's largest attribute value */
#define CACHE_FIRST	2048	/* read at once; a larger one is asked again */

/* The fixed part of an entry, in the host's byte order. */
struct cache_head {
	char magic[8];
	uint64_t ino;
	uint64_t size;
	uint32_t mode, uid, gid, block_size;
	uint32_t pathlen, nruns, nreads, nbytes;
};

struct cache_run {
	uint64_t lblk, pblk, len;
};

struct cache_read {
	uint64_t off;
	uint32_t len, got;
};

void xip_exec_cached_free(struct xip_exec_cached *c)
{
	free(c->runs);
	free(c->reads);
	free(c->bytes);
	memset(c, 0, sizeof(*c));
}

int xip_exec_cached_log(struct xip_exec_cached *c, uint64_t off, size_t len,
			const void *data, size_t got)
{
	if (len > UINT32_MAX || c->nbytes + got > CACHE_MAX)
		return -EFBIG;
	if (xip_grow((void **)&c->reads, &c->reads_cap, c->nreads + 1,
		     sizeof(*c->reads)) ||
	    xip_grow((void **)&c->bytes, &c->bytes_cap, c->nbytes + got + 1, 1))
		return -ENOMEM;
	if (got)
		memcpy(c->bytes + c->nbytes, data, got);
	c->reads[c->nreads++] = (struct xip_exec_read){ off, (uint32_t)len,
						       (uint32_t)got,
						       c->nbytes };
	c->nbytes += got;
	return 0;
}

ssize_t xip_exec_cached_replay(struct xip_exec_cached *c, uint64_t off,
			       void *buf, size_t len)
{
	const struct xip_exec_read *r;

	/* the same reads in the same order, or the entry is not this file's */
	if (c->next >= c->nreads)
		return -ESTALE;
	r = &c->reads[c->next];
	if (r->off != off || r->len != len)
		return -ESTALE;
	c->next++;
	memcpy(buf, c->bytes + r->at, r->got);
	return (ssize_t)r->got;
}

int xip_exec_cache_encode(const char *path, const struct xip_exec_cached *c,
			  uint8_t **out, size_t *outlen)
{
	size_t pathlen = strlen(path), len;
	struct cache_head h = { .ino = c->ino, .size = c->size,
				.mode = c->mode, .uid = c->uid, .gid = c->gid,
				.block_size = c->block_size };
	uint8_t *buf, *p;

	*out = NULL;
	if (pathlen > XIP_PATH_MAX || c->nruns > CACHE_MAX / sizeof(struct cache_run) ||
	    c->nreads > CACHE_MAX / sizeof(struct cache_read) ||
	    c->nbytes > CACHE_MAX)
		return -EFBIG;
	len = sizeof(h) + pathlen + c->nruns * sizeof(struct cache_run) +
	      c->nreads * sizeof(struct cache_read) + c->nbytes;
	if (len > CACHE_MAX)
		return -EFBIG;
	memcpy(h.magic, CACHE_MAGIC, sizeof(h.magic));
	h.pathlen = (uint32_t)pathlen;
	h.nruns = (uint32_t)c->nruns;
	h.nreads = (uint32_t)c->nreads;
	h.nbytes = (uint32_t)c->nbytes;
	p = buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	memcpy(p, &h, sizeof(h));
	p += sizeof(h);
	memcpy(p, path, pathlen);
	p += pathlen;
	for (size_t i = 0; i < c->nruns; i++, p += sizeof(struct cache_run)) {
		struct cache_run r = { c->runs[i].lblk, c->runs[i].pblk,
				       c->runs[i].len };

		memcpy(p, &r, sizeof(r));
	}
	for (size_t i = 0; i < c->nreads; i++, p += sizeof(struct cache_read)) {
		struct cache_read r = { c->reads[i].off, c->reads[i].len,
					c->reads[i].got };

		memcpy(p, &r, sizeof(r));
	}
	if (c->nbytes)
		memcpy(p, c->bytes, c->nbytes);
	*out = buf;
	*outlen = len;
	return 0;
}

int xip_exec_cache_decode(const uint8_t *buf, size_t len, const char *path,
			  struct xip_exec_cached *c)
{
	struct cache_head h;
	const uint8_t *p = buf, *runs, *reads;
	size_t at = 0, need;

	memset(c, 0, sizeof(*c));
	if (len < sizeof(h))
		return -EINVAL;
	memcpy(&h, p, sizeof(h));
	if (memcmp(h.magic, CACHE_MAGIC, sizeof(h.magic)) ||
	    h.pathlen != strlen(path) || h.nruns > CACHE_MAX ||
	    h.nreads > CACHE_MAX || h.nbytes > CACHE_MAX || !h.block_size)
		return -EINVAL;
	need = sizeof(h) + (size_t)h.pathlen +
	       (size_t)h.nruns * sizeof(struct cache_run) +
	       (size_t)h.nreads * sizeof(struct cache_read) + h.nbytes;
	if (need != len || memcmp(p + sizeof(h), path, h.pathlen))
		return -EINVAL;
	runs = p + sizeof(h) + h.pathlen;
	reads = runs + (size_t)h.nruns * sizeof(struct cache_run);
	c->runs = calloc(h.nruns + 1, sizeof(*c->runs));
	c->reads = calloc(h.nreads + 1, sizeof(*c->reads));
	c->bytes = malloc((size_t)h.nbytes + 1);
	if (!c->runs || !c->reads || !c->bytes) {
		xip_exec_cached_free(c);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < h.nruns; i++) {
		struct cache_run r;

		memcpy(&r, runs + i * sizeof(r), sizeof(r));
		/* in file order, each at least a block, none wrapping */
		if (!r.len || r.lblk + r.len < r.lblk ||
		    r.pblk + r.len < r.pblk ||
		    (i && r.lblk < c->runs[i - 1].lblk + c->runs[i - 1].len))
			goto bad;
		c->runs[i] = (struct xip_run){ r.lblk, r.pblk, r.len };
	}
	for (uint32_t i = 0; i < h.nreads; i++) {
		struct cache_read r;

		memcpy(&r, reads + i * sizeof(r), sizeof(r));
		if (r.got > r.len || r.got > h.nbytes - at)
			goto bad;
		c->reads[i] = (struct xip_exec_read){ r.off, r.len, r.got, at };
		at += r.got;
	}
	if (at != h.nbytes)
		goto bad;
	memcpy(c->bytes, reads + (size_t)h.nreads * sizeof(struct cache_read),
	       h.nbytes);
	c->nruns = h.nruns;
	c->nreads = h.nreads;
	c->nbytes = h.nbytes;
	c->ino = h.ino;
	c->size = h.size;
	c->mode = h.mode;
	c->uid = h.uid;
	c->gid = h.gid;
	c->block_size = h.block_size;
	return 0;
bad:
	xip_exec_cached_free(c);
	return -EINVAL;
}

/* The attribute's name: FNV-1a of the path, in hex. */
static void cache_name(const char *path, char name[64])
{
	uint64_t h = xip_fnv1a64(path);
	size_t n = sizeof(CACHE_PREFIX) - 1;
	uint8_t be[8];

	/* most significant digit first, as "%016llx" */
	for (int i = 7; i >= 0; i--, h >>= 8)
		be[i] = (uint8_t)h;
	memcpy(name, CACHE_PREFIX, n);
	xip_hex_encode(be, sizeof(be), name + n);
}

bool xip_exec_cache_usable(const struct xip_seg *seg, bool fresh)
{
	/* a fresh process still has the credentials its execve gave it */
	uid_t euid = fresh ? (uid_t)getauxval(AT_EUID) : geteuid();

	return euid == 0 && seg && seg->type != XIP_SEGTYPE_NONE &&
	       !xip_seg_type_writable(seg->type) && !seg->writable &&
	       seg->fs_known && seg->fs_type == TMPFS_MAGIC && seg->fd >= 0;
}

int xip_exec_cache_get(const struct xip_seg *seg, const char *path,
		       struct xip_exec_cached *c)
{
	char name[64];
	size_t cap = CACHE_FIRST;
	uint8_t *buf = malloc(cap), *more;
	ssize_t n;
	int ret;

	memset(c, 0, sizeof(*c));
	if (!buf)
		return -ENOMEM;
	cache_name(path, name);
	n = fgetxattr(seg->fd, name, buf, cap);
	if (n < 0 && errno == ERANGE) {	/* a larger one: ask its size */
		n = fgetxattr(seg->fd, name, NULL, 0);
		more = n > 0 && n <= CACHE_MAX ? realloc(buf, (size_t)n) : NULL;
		if (more) {
			buf = more;
			n = fgetxattr(seg->fd, name, buf, (size_t)n);
		} else {
			n = -1;
			errno = n > CACHE_MAX ? EFBIG : ENOMEM;
		}
	}
	ret = n < 0 ? -errno : xip_exec_cache_decode(buf, (size_t)n, path, c);
	free(buf);
	XIP_DBG(EXEC, "%s: %s in the segment's %s", path,
		!ret ? "read" : ret == -ENODATA ? "nothing" : "no usable entry",
		name);
	return ret;
}

void xip_exec_cache_put(const struct xip_seg *seg, const char *path,
			const struct xip_exec_cached *c)
{
	char name[64];
	uint8_t *buf;
	size_t len;
	int ret;

	cache_name(path, name);
	ret = xip_exec_cache_encode(path, c, &buf, &len);
	if (!ret && fsetxattr(seg->fd, name, buf, len, 0))
		ret = -errno;
	free(buf);
	XIP_DBG(EXEC, "%s: %s %s", path, ret ? "could not keep" : "kept in",
		name);
}
