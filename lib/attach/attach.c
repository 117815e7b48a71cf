// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Attaching a segment: named memory (a tmpfs or hugetlbfs file) filled from
 * an image, recorded in the registry, optionally bound to a kernel loop
 * device.  This is the user-space counterpart of the s390 DCSS segments
 * exposed by dcssblk: SR, ER and SC there, sr and er here, refuse writes.
 *
 * The segment file sits in a directory every user writes to (/dev/shm):
 * it is created O_EXCL|O_NOFOLLOW under a name nobody can guess and take
 * first (random bits), owned by the caller and no more readable than its
 * image, and its identity (device, inode, owner) is recorded; every later
 * use finds it through the record and checks it.  An
 * attach claims its name in the registry (a record "attaching", the file
 * locked) before the long work, and records the segment as attached only
 * when it is whole.
 *
 * This file: where segments live, opening the source image, creating the
 * segment file, the limits, the claim and its commit or undo, the label
 * and UUID (blkid), --file (the byte range of one file for the loop
 * device).  Filling the file from the image is in attach_fill.c; detach
 * in detach.c; the in-use test in registry/busy.c; save in save.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>
#include <blkid.h>

#include "attach/xip_attach.h"
#include "attach/attach_int.h"
#include "attach/nbd_int.h"
#include "util/xip_debug.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"
#include "segment/xip_loop.h"
#include "segment/xip_segment.h"
#include "verity/xip_verity.h"
#include "registry/xip_registry.h"
#include "reader/xip_image.h"
#include "reader/xip_reader.h"
#include "engine/xip_engine.h"
#include "exec/xip_exec.h"

/* ---- the source image --------------------------------------------------- */

static int source_open_attached(struct source *s, const char *name)
{
	struct xip_seg_entry *e = malloc(sizeof(*e));

	if (!e)
		return xip_error(-ENOMEM, "out of memory");
	s->fd = xip_registry_open(name, O_RDONLY, e);
	free(e);
	return s->fd < 0 ? s->fd : 0;
}

static int source_open(struct source *s, const char *path)
{
	unsigned char magic[2] = { 0, 0 }, trailer[4];
	int ret;

	s->path = path;
	if (path[0] == '@') {
		/* another segment: a copy of it (sr to sw, say) */
		ret = source_open_attached(s, path + 1);
		if (ret)
			return ret;
	} else {
		s->fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	}
	if (s->fd < 0)
		return xip_error(-errno, "%s: %s", path, strerror(errno));
	if (fstat(s->fd, &s->st) < 0)
		return xip_error(-errno, "%s: %s", path, strerror(errno));
	if (S_ISREG(s->st.st_mode))
		s->size = (uint64_t)s->st.st_size;
	else if (!S_ISBLK(s->st.st_mode) ||
		 ioctl(s->fd, BLKGETSIZE64, &s->size) < 0)
		return xip_error(-EINVAL,
				 "%s: not a regular file or block device", path);
	fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) & ~O_NONBLOCK);
	if (s->size == 0)
		return xip_error(-EINVAL, "%s: empty (size 0)", path);
	if (pread(s->fd, magic, 2, 0) == 2 && magic[0] == 0x1f &&
	    magic[1] == 0x8b) {
		s->gz = true;
		if (s->size >= 18 &&
		    pread(s->fd, trailer, 4, (off_t)s->size - 4) == 4)
			s->hint = trailer[0] | trailer[1] << 8 |
				  trailer[2] << 16 | (uint64_t)trailer[3] << 24;
	}
	return 0;
}

/* ---- the segment file ------------------------------------------------- */

/*
 * Create the segment file of @e in @dir (O_EXCL, O_NOFOLLOW), under a
 * fresh name when another file holds one: what another user planted
 * there is neither used nor touched.  Its path goes into @e->path.
 */
static int segfile_create(struct segfile *sf, const char *dir,
			  struct xip_seg_entry *e)
{
	char name[XIP_SEG_NAME_MAX + 48];
	struct statfs sfs;
	int dfd, n, ret = 0;

	sf->path = e->path;
	/* a guest's pmem device needs whole 2 MiB sections (nd_pmem) */
	sf->align = XIP_PMEM_ALIGN;
	if ((uint64_t)xip_host_page_size() > sf->align)
		sf->align = (uint64_t)xip_host_page_size();
	dfd = xip_attach_segdir_open(dir);
	if (dfd < 0)
		return dfd;
	for (int tries = 0; !ret && sf->fd < 0 && tries < 64; tries++) {
		ret = xip_attach_segfile_name(e->name, name, sizeof(name));
		n = snprintf(e->path, sizeof(e->path), "%s/%s", dir, name);
		if (!ret && (n < 0 || (size_t)n >= sizeof(e->path)))
			ret = xip_error(-ENAMETOOLONG, "%s: name too long",
					dir);
		if (!ret)
			sf->fd = openat(dfd, name, O_RDWR | O_CREAT | O_EXCL |
					O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
					0600);
		if (!ret && sf->fd < 0 && errno != EEXIST)
			ret = xip_error(-errno, "%s: %s", e->path,
					strerror(errno));
	}
	close(dfd);
	if (!ret && sf->fd < 0)
		ret = xip_error(-EEXIST, "%s: no free segment file name",
				dir);
	if (ret) {
		e->path[0] = '\0';
		return ret;
	}
	sf->created = true;
	if (fstatfs(sf->fd, &sfs) == 0 && sfs.f_type == HUGETLBFS_MAGIC) {
		sf->huge = true;
		if ((uint64_t)sfs.f_bsize > sf->align)
			sf->align = (uint64_t)sfs.f_bsize;
	}
	return 0;
}

/*
 * A segment belongs to whoever attached it, whoever owns the image:
 * nobody else may chmod it and rewrite what was attached (and checked).
 * Others read it as far as the image let them: its group's read bit
 * when the file can take the image's group, its others' read bit.  Write
 * bits for the owner of a writable type only.  The image's execute bits
 * go with its read bits, so that the kernel's check of the segment file
 * under SECBIT_EXEC_RESTRICT_FILE (exec, AT_EXECVE_CHECK) says what it
 * would of the image's; none when the attach itself runs with that bit
 * and the kernel would not execute the image (a noexec mount, an LSM's
 * no).  Set-id bits never.
 */
static int segfile_own(struct segfile *sf, const struct source *src,
		       enum xip_seg_type type)
{
	mode_t mode = xip_seg_type_writable(type) ? 0600 : 0400;

	if (src && src->fd >= 0) {
		/* the execute bits, but for the kernel's no under the bit */
		mode_t x = xip_exec_restrict_check(src->fd) ? 0 :
			   src->st.st_mode & 0111;

		mode |= x & 0100;
		if ((src->st.st_mode & 0040) &&
		    fchown(sf->fd, (uid_t)-1, src->st.st_gid) == 0)
			mode |= 0040 | (x & 0010);
		mode |= (src->st.st_mode & 0004) | (x & 0001);
	}
	if (fchmod(sf->fd, mode) < 0)
		return xip_error(-errno, "%s: %s", sf->path, strerror(errno));
	return 0;
}

/* Bytes free in the file system of the segment: UINT64_MAX when it sets
 * no limit (a tmpfs of size 0, a hugetlbfs without size=). */
static uint64_t segdir_free(const char *dir)
{
	struct statfs sfs;

	if (statfs(dir, &sfs) < 0 || sfs.f_blocks == 0)
		return UINT64_MAX;
	return (uint64_t)sfs.f_bavail * (uint64_t)sfs.f_bsize;
}

/* ---- identification ------------------------------------------------------ */

static void identify(int fd, struct xip_seg_entry *e)
{
	blkid_probe pr = blkid_new_probe();
	const char *v;

	if (!pr)
		return;
	if (blkid_probe_set_device(pr, fd, 0, (blkid_loff_t)e->size) == 0) {
		blkid_probe_enable_superblocks(pr, 1);
		blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_LABEL |
						  BLKID_SUBLKS_UUID |
						  BLKID_SUBLKS_TYPE);
		if (blkid_do_safeprobe(pr) == 0) {
			if (!blkid_probe_lookup_value(pr, "LABEL", &v, NULL))
				snprintf(e->label, sizeof(e->label), "%s", v);
			if (!blkid_probe_lookup_value(pr, "UUID", &v, NULL))
				snprintf(e->uuid, sizeof(e->uuid), "%s", v);
		}
	}
	blkid_free_probe(pr);
}

int xip_seg_refresh(struct xip_seg_entry *e)
{
	char label[sizeof(e->label)], uuid[sizeof(e->uuid)];
	struct xip_seg_entry *cur;
	enum xip_entry_state state;
	int ret, fd = xip_registry_open_entry(e, O_RDONLY);

	if (fd < 0)
		return fd;
	memcpy(label, e->label, sizeof(label));
	memcpy(uuid, e->uuid, sizeof(uuid));
	e->label[0] = e->uuid[0] = '\0';
	identify(fd, e);
	close(fd);
	if (!strcmp(label, e->label) && !strcmp(uuid, e->uuid))
		return 0;
	/* record the change only in the record of this very segment */
	ret = xip_registry_lock_new(&cur);
	if (ret)
		return ret;
	ret = xip_registry_read(e->name, cur, &state, false);
	if (!ret && state == XIP_ENTRY_LIVE && cur->seg_ino == e->seg_ino &&
	    cur->seg_dev == e->seg_dev) {
		memcpy(cur->label, e->label, sizeof(cur->label));
		memcpy(cur->uuid, e->uuid, sizeof(cur->uuid));
		ret = xip_registry_store(cur, 0);
	}
	xip_registry_unlock();
	free(cur);
	return ret;
}

/* --file: the byte range of a contiguous file inside the image (read
 * through the segment's descriptor, not its name). */
static int file_range(int fd, const char *segpath, const char *image,
		      const char *file, uint64_t *offset, uint64_t *len)
{
	struct ext2_inode_large inode;
	struct xip_seg *seg;
	struct xip_image *img;
	struct xip_run *runs = NULL;
	size_t nruns = 0;
	uint64_t size, blocks;
	int ret;

	ret = xip_seg_open_fd(fd, segpath, 0, &seg);
	if (ret)
		return ret;
	ret = xip_image_open_segment(seg, XIP_IMG_NOLOCK, &img);
	if (ret)
		return ret;
	ret = xip_file_runs_path(img, file, &inode, &runs, &nruns);
	if (ret == -ENOENT || ret == -ENOTDIR)	/* a path in the image */
		ret = xip_error(ret, "%s: %s in %s", file,
				ret == -ENOENT ? "not found" : "not a directory",
				image ? image : segpath);
	if (ret)
		goto out;
	size = EXT2_I_SIZE(&inode);
	blocks = div_round_up(size, img->block_size);
	if (size == 0)
		ret = xip_error(-EINVAL, "%s: empty file: nothing to bind", file);
	else if (nruns != 1 || runs[0].lblk != 0 || runs[0].len < blocks)
		ret = xip_error(-EINVAL,
				"%s: not contiguous in the image (%zu run%s of blocks%s): cannot be one loop device; rebuild the image with xiptool mkfs",
				file, nruns, nruns == 1 ? "" : "s",
				nruns && runs[0].lblk ? ", starts with a hole" :
				nruns == 1 ? ", holes" : "");
	if (!ret) {
		*offset = (uint64_t)runs[0].pblk * img->block_size;
		/* a block device is whole sectors: round up to 512 */
		*len = round_up(size, 512);
	}
out:
	free(runs);
	xip_image_close(img);
	return ret;
}

/* ---- attach -------------------------------------------------------------- */

/* Is the segment admitted against a root hash (given or signed)? */
static bool verifying(const struct xip_attach_opts *o)
{
	return o->root_hash || o->trust;
}

/* A request that asks for incompatible things: -EINVAL, said so. */
#define refuse(...) xip_error_reason(-EINVAL, XIP_R_EXCLUSIVE_OPTS, __VA_ARGS__)

/*
 * What a segment of @type can be asked for, in the library's terms: the
 * commands word the same rules with their options first (attach.c).
 */
static int attach_check(const struct xip_attach_opts *o,
			enum xip_seg_type type)
{
	bool nodata = type == XIP_SEGTYPE_SN || type == XIP_SEGTYPE_EN;
	const char *t = xip_seg_type_name(type);

	if (nodata && o->image)
		return refuse("%s: type %s holds no data: it takes a size, not an image",
			      o->image, t);
	if (nodata && !o->size)
		return refuse("type %s needs a size", t);
	if (!nodata && !o->image)
		return refuse("type %s needs an image", t);
	if (nodata && !o->name)
		return refuse("type %s needs a name", t);
	if (nodata && (o->file || o->raw))
		return refuse("type %s holds no data: no file to bind, no bytes to take",
			      t);
	if (verifying(o) && xip_seg_type_writable(type))
		return refuse("type %s is writable: only sr and er segments can be verified",
			      t);
	if (verifying(o) && nodata)
		return refuse("type %s holds no data to verify", t);
	if (verifying(o) && o->raw)
		return refuse("raw bytes cannot be verified (the tree's place is the file system's size)");
	if (verifying(o) && o->hugepages)
		return refuse("hugetlbfs cannot seal a verified segment (no immutable flag)");
	if (o->root_hash_sig && !o->trust)
		return refuse("a detached root hash signature needs a trust store");
	if (o->lazy && !xip_nbd_is_uri(o->image))
		return refuse("%s: only an NBD export is attached lazily",
			      o->image ? o->image : "");
	if (o->lazy && o->trust)
		return refuse("a lazy segment is checked against a given root hash, not a signed one");
	if (o->lazy && (o->loop || o->file))
		return refuse("a loop device needs the whole image: not lazily");
	if (o->lazy && o->hugepages)
		return refuse("hugetlbfs files are filled through their mapping: not lazily");
	if (o->lazy && xip_seg_type_writable(type))
		return refuse("type %s is writable: only sr and er segments are filled lazily",
			      t);
	return 0;
}

static int too_big(const char *what, uint64_t need, const struct limit *lim)
{
	return xip_error(-ENOSPC,
			 "%s: %" PRIu64 " bytes do not fit in %s (%" PRIu64 " bytes free)",
			 what, need, lim->dir, lim->free);
}

/*
 * The most the segment may hold: --size, else the smaller of
 * XIP_ATTACH_DEFAULT_MAX and the free space of its file system.  Sizes
 * known now are checked now, before anything is created.
 */
static int attach_limit(const struct xip_attach_opts *o,
			const struct source *src, const struct xip_seg_entry *e,
			struct limit *lim, char *dir, size_t len)
{
	uint64_t page = XIP_PMEM_ALIGN, need;	/* the padding */
	int ret = xip_attach_segment_dir(o->hugepages, dir, len);

	if (ret)
		return ret;
	lim->dir = dir;
	lim->free = segdir_free(dir);
	lim->given = o->size != 0;
	lim->bytes = o->size ? o->size :
			       min_u64(XIP_ATTACH_DEFAULT_MAX, lim->free);
	if (!src || src->fd < 0) {
		need = round_up(o->size, page);
		return need > lim->free ? too_big(e->name, need, lim) : 0;
	}
	if (src->gz)
		return o->size && round_up(o->size, page) > lim->free ?
		       too_big(src->path, round_up(o->size, page), lim) : 0;
	if (o->size && o->size < src->size)
		return xip_error(-EINVAL,
				 "%s: --size %" PRIu64 " is smaller than the image (%" PRIu64 " bytes)",
				 src->path, o->size, src->size);
	need = round_up(src->size > o->size ? src->size : o->size, page);
	if (need > lim->free)
		return too_big(src->path, need, lim);
	if (!o->size && src->size > XIP_ATTACH_DEFAULT_MAX)
		return xip_error(-EFBIG,
				 "%s: %" PRIu64 " bytes, more than %" PRIu64 ", the most without --size",
				 src->path, src->size, lim->bytes);
	return 0;
}

/* Open an NBD source and check that its export fits the limits. */
static int nbd_source(const struct xip_attach_opts *o, struct xip_nbd **n,
		      uint64_t *size)
{
	int ret = xip_nbd_open(o->image, o->timeout_ms, n, size);

	if (!ret && o->size && o->size < *size)
		ret = xip_error(-EINVAL,
				"%s: --size %" PRIu64 " is smaller than the export (%" PRIu64 " bytes)",
				o->image, o->size, *size);
	if (!ret && !o->size && *size > XIP_ATTACH_DEFAULT_MAX)
		ret = xip_error(-EFBIG,
				"%s: %" PRIu64 " bytes, more than %" PRIu64 ", the most without --size",
				o->image, *size, (uint64_t)XIP_ATTACH_DEFAULT_MAX);
	return ret;
}

/* Open a registry's artifact and check that it fits the limits. */
static int oci_source(const struct xip_attach_opts *o,
		      struct xip_ocipull **p, uint64_t *size)
{
	int ret;

	if (o->lazy)
		return xip_error(-EINVAL, "%s: --lazy: nbd:// sources only",
				 o->image);
	ret = xip_ocipull_open(o, p, size);
	if (!ret && o->size && o->size < *size)
		ret = xip_error(-EINVAL,
				"%s: --size %" PRIu64 " is smaller than the image (%" PRIu64 " bytes)",
				o->image, o->size, *size);
	if (!ret && !o->size && *size > XIP_ATTACH_DEFAULT_MAX)
		ret = xip_error(-EFBIG,
				"%s: %" PRIu64 " bytes, more than %" PRIu64 ", the most without --size",
				o->image, *size, (uint64_t)XIP_ATTACH_DEFAULT_MAX);
	if (ret && *p) {
		xip_ocipull_close(*p);
		*p = NULL;
	}
	return ret;
}

static int attach_loop(const struct xip_attach_opts *o,
		       struct xip_seg_entry *e, struct segfile *sf)
{
	int flags = xip_seg_type_writable(e->type) ? 0 : XIP_LOOP_RDONLY;
	int ret;

	if (o->file) {
		ret = file_range(sf->fd, e->path, o->image, o->file, &e->offset,
				 &e->sizelimit);
		if (ret)
			return ret;
		snprintf(e->file, sizeof(e->file), "%s", o->file);
	} else if (sf->cap != e->size) {
		e->sizelimit = e->size;	/* the file is padded past it */
	}
	return xip_loop_attach(e->path, e->offset, e->sizelimit, flags, e->loop,
			       sizeof(e->loop));
}

static int entry_init(const struct xip_attach_opts *o, enum xip_seg_type type,
		      struct xip_seg_entry *e)
{
	char tmp[XIP_PATH_MAX];
	int ret;

	e->type = type;
	if (o->name) {
		ret = xip_registry_name_check(o->name);
		if (ret)
			ret = xip_error(ret, "%.70s: %s", o->name,
					xip_errmsg());
		else
			snprintf(e->name, sizeof(e->name), "%s", o->name);
	} else if (xip_nbd_is_uri(o->image)) {
		ret = xip_nbd_default_name(o->image, e->name, sizeof(e->name));
	} else if (xip_oci_is_remote(o->image)) {
		ret = xip_ocipull_default_name(o->image, e->name,
					       sizeof(e->name));
	} else {
		ret = xip_registry_default_name(o->image, e->name,
						sizeof(e->name));
	}
	if (ret)
		return ret;
	if (o->image && (o->image[0] == '@' || xip_nbd_is_uri(o->image) ||
			 xip_oci_is_remote(o->image)))
		snprintf(e->image, sizeof(e->image), "%s", o->image);
	else if (o->image && realpath(o->image, tmp))
		snprintf(e->image, sizeof(e->image), "%s", tmp);
	else if (o->image)
		snprintf(e->image, sizeof(e->image), "%s", o->image);
	e->created = (int64_t)time(NULL);
	e->owner = geteuid();
	return 0;
}

/* The name is free, or only held by a stale record (then removed). */
static int name_free(const char *name)
{
	struct xip_seg_entry *old = malloc(sizeof(*old));
	enum xip_entry_state state;
	int ret;

	if (!old)
		return xip_error(-ENOMEM, "out of memory");
	ret = xip_registry_read(name, old, &state, true);
	if (ret == -ENOENT) {
		ret = 0;
	} else if (!ret && (state == XIP_ENTRY_LIVE ||
			    state == XIP_ENTRY_ATTACHING)) {
		ret = xip_error_reason(-EEXIST, XIP_R_NAME_TAKEN,
				       "%s: a segment of that name is already attached",
				       name);
	} else if (!ret) {
		ret = xip_registry_clean(old);
		ret = ret < 0 ? ret : 0;
	}
	free(old);
	if (!ret)
		xip_error_clear();
	return ret;
}

static void record_identity(struct xip_seg_entry *e, const struct stat *st)
{
	e->seg_dev = (uint64_t)st->st_dev;
	e->seg_ino = (uint64_t)st->st_ino;
	e->seg_uid = st->st_uid;
}

/*
 * Claim the name, under the registry lock: refuse one in use, create the
 * segment file (O_EXCL), give it its owner and mode, create its lock file
 * and lock it (the attach is running while the lock is held) and record
 * it as "attaching".
 */
static int attach_claim(struct segfile *sf, const char *dir,
			const struct source *src, struct xip_seg_entry *e)
{
	struct stat st;
	int ret = xip_registry_lock();

	if (ret)
		return ret;
	if (src && src->fd >= 0) {
		e->image_uid = src->st.st_uid;
		e->image_gid = src->st.st_gid;
		e->image_mode = src->st.st_mode;
	}
	ret = name_free(e->name);
	if (!ret)
		ret = xip_attach_huge_tmpfs_again(dir);
	if (!ret)
		ret = segfile_create(sf, dir, e);
	if (!ret)
		ret = segfile_own(sf, src, e->type);
	if (!ret && fstat(sf->fd, &st) < 0)
		ret = xip_error(-errno, "%s: %s", e->path, strerror(errno));
	if (!ret) {
		record_identity(e, &st);
		sf->lock_fd = xip_registry_hold_open(e, true);
		if (sf->lock_fd < 0)
			ret = sf->lock_fd;
	}
	if (!ret && flock(sf->lock_fd, LOCK_EX | LOCK_NB) < 0)
		ret = xip_error(-errno, "%s: lock: %s", e->path,
				strerror(errno));
	if (!ret) {
		e->attaching = true;
		e->pid = getpid();
		ret = xip_registry_store(e, XIP_REG_CREATE);
	}
	xip_registry_unlock();
	return ret;
}

/* Is our claim still there?  Nobody removes it while we hold the file. */
static int claim_held(const struct xip_seg_entry *e)
{
	struct xip_seg_entry *cur = malloc(sizeof(*cur));
	enum xip_entry_state state;
	int ret;

	if (!cur)
		return xip_error(-ENOMEM, "out of memory");
	ret = xip_registry_read(e->name, cur, &state, false);
	if (!ret && (!cur->attaching || cur->seg_ino != e->seg_ino ||
		     cur->seg_dev != e->seg_dev || state != XIP_ENTRY_ATTACHING))
		ret = xip_error(-ESTALE,
				"%s: the record changed while the segment was being filled",
				e->name);
	free(cur);
	return ret;
}

/* Bind the loop device and record the segment as attached (locked). */
static int attach_commit(const struct xip_attach_opts *o, struct segfile *sf,
			 struct xip_seg_entry *e)
{
	int ret = xip_registry_lock();

	if (ret)
		return ret;
	ret = claim_held(e);
	if (!ret && (o->loop || o->file))
		ret = attach_loop(o, e, sf);
	if (!ret && e->loop[0] && !xip_registry_loop_serves(e))
		ret = xip_error(-ESTALE,
				"%s: the loop device does not serve the segment file",
				e->loop);
	if (!ret) {
		e->attaching = false;
		e->pid = 0;
		ret = xip_registry_store(e, 0);
	}
	xip_registry_unlock();
	return ret;
}

/* Take back what a failed attach made, keeping its error. */
static void attach_undo(struct segfile *sf, struct xip_seg_entry *e)
{
	int saved = xip_errcode();
	char msg[XIP_ERRMSG_MAX];
	struct stat st, now;
	bool locked, held;

	snprintf(msg, sizeof(msg), "%s", xip_errmsg());
	locked = xip_registry_lock() == 0;
	held = e->seg_ino && claim_held(e) == 0;
	if (e->loop[0] && xip_registry_loop_serves(e))
		xip_loop_detach(e->loop);
	if (sf->created && fstat(sf->fd, &st) == 0 &&
	    lstat(e->path, &now) == 0 && st.st_dev == now.st_dev &&
	    st.st_ino == now.st_ino) {
		xip_seg_seal(sf->fd, false);
		unlink(e->path);
		if (sf->lock_fd >= 0)
			xip_registry_hold_remove(e);
	}
	if (e->lazy) {
		xip_attach_lazy_stop(e);
		xip_registry_fill_remove(e);
	}
	if (held)
		xip_registry_remove(e->name);
	if (locked)
		xip_registry_unlock();
	xip_error(saved ? saved : -EIO, "%s", msg);
}

/* attach --trust: the signature checked and the root hash it signs. */
struct signed_root {
	uint8_t *der;			/* a detached signature, or NULL */
	size_t der_len;
	uint8_t root[XIP_VERITY_DIGEST_MAX];
	size_t root_len;
	char signer[256];
};

/*
 * Before anything is created: the trust store, loaded once to refuse a
 * bad one early, and the detached signature.
 */
static int signed_root_open(const struct xip_attach_opts *o,
			    struct signed_root *sr)
{
	int ret;

	if (!o->trust)
		return 0;
	ret = xip_verity_trust_check(o->trust);
	if (!ret && o->root_hash_sig)
		ret = xip_verity_sig_load(o->root_hash_sig, &sr->der,
					  &sr->der_len);
	return ret;
}

/*
 * The signature of the segment's tree (the detached one, else the block
 * after the tree: in the segment, whatever the source) against the trust
 * store, over the root hash of the tree's top block: that root hash, the
 * signed one, is the one every block is then held to.  A root hash given
 * too must be it.
 */
static int signed_root(const struct xip_attach_opts *o,
		       const struct xip_seg *seg, uint64_t size,
		       struct signed_root *sr)
{
	char hex[2 * XIP_VERITY_DIGEST_MAX + 1], msg[XIP_ERRMSG_MAX];
	int ret;

	ret = xip_verity_sig_verify_detached(seg->base, size, sr->der,
					     sr->der_len, o->trust, sr->root,
					     &sr->root_len, sr->signer,
					     sizeof(sr->signer));
	if (!ret && o->root_hash &&
	    (o->root_hash_len != sr->root_len ||
	     memcmp(o->root_hash, sr->root, sr->root_len))) {
		xip_hex_encode(sr->root, sr->root_len, hex);
		ret = xip_error(-EKEYREJECTED,
				"the root hash given is not the signed one (%s)",
				hex);
	}
	if (!ret && !sr->signer[0])
		snprintf(sr->signer, sizeof(sr->signer), "(no subject)");
	if (ret) {
		snprintf(msg, sizeof(msg), "%s", xip_errmsg());
		return xip_error(ret, "%s: %s", o->image, msg);
	}
	return 0;
}

/*
 * The segment file, filled, against the root hash: every data and hash
 * block of the tree it carries, hashed from the mapping; then sealed.
 * Before anything is published: a mismatch is the attach's failure.
 */
static int attach_verify(const struct xip_attach_opts *o, struct segfile *sf,
			 struct xip_verity_stream *vs, struct signed_root *sr,
			 struct xip_seg_entry *e)
{
	const uint8_t *root = o->root_hash;
	size_t root_len = o->root_hash_len;
	struct xip_root_hash_report r;
	struct xip_seg *seg;
	struct stat st;
	uint64_t end;
	int ret;

	ret = xip_seg_open_fd(sf->fd, e->path, 0, &seg);
	if (ret)
		return ret;
	seg->data_size = e->size;
	xip_attach_hook_step();
	if (o->trust) {
		/* the root hash the signature signs, the tree held to it */
		ret = signed_root(o, seg, e->size, sr);
		root = sr->root;
		root_len = sr->root_len;
		if (ret) {
			xip_seg_close(seg);
			return ret;
		}
	}
	if (vs) {
		/* every block was hashed as it came: compare with the tree */
		memset(&r, 0, sizeof(r));
		ret = xip_verity_stream_finish(vs, sf->fd, e->path, root,
					       root_len, &r.info, &r.bad);
		ret = xip_root_hash_explain(seg, ret, &r);
	} else {
		ret = xip_root_hash_check(seg, root, root_len, &r);
	}
	/* a signature block may follow the tree; nothing else */
	end = ret ? 0 : xip_verity_image_end(seg->base, e->size, &r.info);
	xip_seg_close(seg);
	if (!ret && end != e->size)
		ret = xip_error(-EUCLEAN,
				"%" PRIu64 " bytes after the verity tree (it ends at %" PRIu64 ")",
				e->size - end, end);
	if (ret) {
		char msg[XIP_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", xip_errmsg());
		return xip_error(ret == -EINVAL ? -EINVAL : -EBADMSG,
				 "%s: %s", o->image, msg);
	}
	ret = xip_seg_seal(sf->fd, true);
	if (ret)
		return xip_error(ret, "%s: cannot seal the segment: %s",
				 e->path, strerror(-ret));
	/* what list compares: any later change of the file moves it */
	if (fstat(sf->fd, &st) < 0)
		return xip_error(-errno, "%s: %s", e->path, strerror(errno));
	e->seal_ctime = (uint64_t)st.st_ctim.tv_sec * 1000000000u +
			(uint64_t)st.st_ctim.tv_nsec;
	xip_attach_hook_step();
	xip_attach_hook_after_seal();
	e->verified = true;
	if (o->trust)
		snprintf(e->signer, sizeof(e->signer), "%s", sr->signer);
	return 0;
}

static int source_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct source *src = ctx;

	return xip_pread_exact(src->fd, buf, len, off, src->path);
}

static int nbd_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	return xip_nbd_read(ctx, buf, len, off);
}

/* A remote source: an NBD export or a registry's artifact. */
struct remote {
	struct xip_nbd *nbd;
	struct xip_ocipull *oci;
	uint64_t size;
};

/*
 * The check of a verified attach, set up before anything is created: the
 * superblocks read ahead, so that each block is hashed as it arrives.  A
 * gzip image has its salt at its end: it is checked once inflated (NULL).
 */
static int verity_open(const struct xip_attach_opts *o, struct source *src,
		       const struct remote *rm, struct xip_verity_stream **vs)
{
	struct xip_root_hash_report r;
	char msg[XIP_ERRMSG_MAX];
	int ret;

	*vs = NULL;
	if (!verifying(o) || (!rm->nbd && !rm->oci && src->gz))
		return 0;
	memset(&r, 0, sizeof(r));
	ret = rm->nbd ? xip_verity_stream_open(rm->size, nbd_read, rm->nbd, vs,
					       &r.bad) :
	      rm->oci ? xip_verity_stream_open(rm->size, xip_ocipull_read,
					       rm->oci, vs, &r.bad) :
			xip_verity_stream_open(src->size, source_read, src, vs,
					       &r.bad);
	if (!ret || r.bad.where == XIP_VERITY_OK)
		return ret;		/* the source's own failure */
	ret = xip_root_hash_explain(NULL, ret, &r);
	snprintf(msg, sizeof(msg), "%s", xip_errmsg());
	return xip_error(-EBADMSG, "%s: %s", o->image, msg);
}

/* Whether exec populates the new segment's programs (attach --populate). */
static int decide_populate(const struct xip_attach_opts *o,
			   struct xip_seg_entry *e)
{
	bool pays = false;
	int ret;

	if (o->populate != XIP_POPULATE_AUTO || o->lazy) {
		e->populate = o->populate == XIP_POPULATE_ALWAYS;
		return 0;
	}
	e->populate = false;
	/* huge pages are mapped whole; zeros are not run */
	if (o->hugepages || !o->image)
		return 0;
	/* this boot's verdict, the same for every image (populate.c) */
	ret = xip_attach_populate_auto(&pays);
	if (ret)
		return ret;
	e->populate = pays;
	return 0;
}

int xip_attach(const struct xip_attach_opts *o, struct xip_seg_entry *e)
{
	enum xip_seg_type type = o->type ? o->type : XIP_SEGTYPE_SR;
	struct segfile sf = { .fd = -1, .lock_fd = -1 };
	struct source src = { .fd = -1 };
	struct remote rm = { 0 };
	struct xip_verity_stream *vs = NULL;
	struct signed_root sr = { 0 };
	char dir[XIP_PATH_MAX];
	struct limit lim;
	int ret;

	memset(e, 0, sizeof(*e));	/* what undo reads is never stale */
	ret = attach_check(o, type);
	if (!ret)
		ret = xip_attach_admit_early(o);
	if (!ret)
		ret = entry_init(o, type, e);
	if (!ret && o->image && xip_nbd_is_uri(o->image)) {
		ret = nbd_source(o, &rm.nbd, &rm.size);
	} else if (!ret && o->image && xip_oci_is_remote(o->image)) {
		ret = oci_source(o, &rm.oci, &rm.size);
	} else if (!ret && o->image) {
		ret = source_open(&src, o->image);
		e->compressed = src.gz;
		if (!ret && !o->raw)
			ret = xip_attach_source_check_ext2(&src);
	}
	if (!ret)
		ret = attach_limit(o, &src, e, &lim, dir, sizeof(dir));
	if (!ret && (rm.nbd || rm.oci) &&
	    round_up(rm.size, XIP_PMEM_ALIGN) > lim.free)
		ret = too_big(o->image, round_up(rm.size, XIP_PMEM_ALIGN),
			      &lim);
	if (!ret)
		ret = verity_open(o, &src, &rm, &vs);
	if (!ret)
		ret = signed_root_open(o, &sr);
	if (!ret) {
		xip_attach_hook_before_claim();
		ret = attach_claim(&sf, dir, &src, e);
	}
	if (!ret && o->lazy)
		ret = xip_attach_lazy(o, &sf, &rm.nbd, rm.size, vs, e);
	else if (!ret && rm.nbd)
		ret = xip_attach_fill_nbd(o, &sf, rm.nbd, rm.size, vs, e);
	else if (!ret && rm.oci)
		ret = xip_attach_fill_oci(o, &sf, rm.oci, rm.size, vs, e);
	else if (!ret)
		ret = xip_attach_fill(o, &sf, &src, &lim, vs, e);
	if (rm.nbd)
		xip_nbd_close(rm.nbd);
	xip_ocipull_close(rm.oci);
	if (!ret && verifying(o) && !o->lazy)
		ret = attach_verify(o, &sf, vs, &sr, e);
	xip_verity_stream_free(vs);
	if (!ret)
		ret = decide_populate(o, e);
	if (!ret)
		identify(sf.fd, e);
	if (!ret)
		ret = xip_attach_admit_made(o, e);
	if (!ret)
		ret = attach_commit(o, &sf, e);
	if (ret && (sf.created || e->seg_ino))
		attach_undo(&sf, e);
	if (src.fd >= 0)
		close(src.fd);
	if (sf.fd >= 0)
		close(sf.fd);
	if (sf.lock_fd >= 0)
		close(sf.lock_fd);	/* the end of the claim's lock */
	free(sr.der);
	return ret;
}
