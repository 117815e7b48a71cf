// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Filling an attached segment's file from its image (attach.c creates
 * the file and claims it): a plain image copied range by range
 * (copy_file_range, holes skipped with SEEK_DATA/SEEK_HOLE) or read into
 * the mapping on hugetlbfs; a gzip image decompressed straight into the
 * mapping, grown as needed but never past the limit; an NBD export pulled
 * (lib/attach/nbdpull.c).  And the ext2 superblock test an attach makes first.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <zlib.h>

#include "attach/xip_attach.h"
#include "attach/attach_int.h"
#include "attach/nbd_int.h"
#include "util/xip_debug.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"
#include "verity/xip_verity.h"
#include "registry/xip_registry.h"

#define CHUNK		(1u << 20)	/* bytes per read() or inflate() */
#define EXT2_MAGIC_OFF	1080		/* s_magic of the superblock */
#define GZIP_MAX_RATIO	1032		/* deflate expands at most this much */
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif
#define HUGE_PMD	(2ULL << 20)
#define VCHUNK		(2u << 20)	/* bytes a filling thread takes at once */
#define VPIECE		(1u << 20)	/* copied, then hashed, at once */
#define VTHREADS_MAX	8

/* ---- the segment file ------------------------------------------------- */

static int segfile_resize(struct segfile *sf, uint64_t bytes)
{
	if (sf->map) {
		munmap(sf->map, (size_t)sf->cap);
		sf->map = NULL;
	}
	bytes = round_up(bytes ? bytes : 1, sf->align);
	if (bytes > (uint64_t)SIZE_MAX / 2)
		return xip_error(-EFBIG, "%s: too large", sf->path);
	if (ftruncate(sf->fd, (off_t)bytes) < 0)
		return xip_error(-errno, "%s: cannot size the segment: %s",
				 sf->path, strerror(errno));
	/* reserve the memory now: a full tmpfs is an error, not a SIGBUS */
	if (bytes > sf->cap && fallocate(sf->fd, 0, 0, (off_t)bytes) < 0 &&
	    errno != EOPNOTSUPP)
		return xip_error(-errno,
				 "%s: cannot reserve %" PRIu64 " bytes of memory: %s",
				 sf->path, bytes, strerror(errno));
	sf->cap = bytes;
	return 0;
}

static int segfile_map(struct segfile *sf)
{
	void *p;
	int ret = xip_map_shared(sf->fd, (size_t)sf->cap,
				 PROT_READ | PROT_WRITE, sf->path, &p);

	if (!ret)
		sf->map = p;
	return ret;
}

/*
 * A filled segment on a tmpfs that allows it (mounted huge=advise, or
 * shmem_enabled force) is gathered into 2 MiB pages, so that exec maps
 * programs from it with 2 MiB entries.  On a tmpfs without huge pages
 * (/dev/shm when shmem_enabled is never) the kernel refuses at once, and
 * on one mounted huge=within_size the pages are huge already: nothing
 * to do either way, and no error.
 */
static void segfile_collapse(struct segfile *sf)
{
	struct statfs sfs;
	void *p;
	int r;

	if (sf->huge || sf->cap < HUGE_PMD || fstatfs(sf->fd, &sfs) ||
	    sfs.f_type != TMPFS_MAGIC)
		return;
	p = mmap(NULL, (size_t)sf->cap, PROT_READ, MAP_SHARED, sf->fd, 0);
	if (p == MAP_FAILED)
		return;
	madvise(p, (size_t)sf->cap, MADV_HUGEPAGE);
	r = madvise(p, (size_t)sf->cap, MADV_COLLAPSE);
	XIP_DBG(ATTACH, "%s: gathered into 2 MiB pages: %s", sf->path,
		r ? strerror(errno) : "done");
	munmap(p, (size_t)sf->cap);
}

/* ---- filling it ------------------------------------------------------- */
/*
 * Copy a plain image: read() straight into the mapping (hugetlbfs files
 * cannot be written with write()).
 */
static int fill_plain(struct segfile *sf, struct source *src)
{
	return xip_pread_exact(src->fd, sf->map, src->size, 0, src->path);
}

/* Copy @len bytes at @off with read() and write(), through @buf. */
static int copy_rw(struct source *src, struct segfile *sf, uint64_t off,
		   uint64_t len)
{
	char *buf = malloc(CHUNK);
	int ret = 0;

	if (!buf)
		return xip_error(-ENOMEM, "out of memory");
	while (!ret && len) {
		size_t n = len < CHUNK ? len : CHUNK;

		ret = xip_pread_exact(src->fd, buf, n, off, src->path);
		if (!ret && (ret = xip_pwrite_all(sf->fd, buf, n, off)))
			ret = xip_error(ret, "%s: %s", sf->path,
					strerror(-ret));
		off += n;
		len -= n;
	}
	free(buf);
	return ret;
}

/* Copy a byte range in the kernel (copy_file_range), else by hand. */
static int copy_range(struct source *src, struct segfile *sf, uint64_t off,
		      uint64_t len)
{
	while (len) {
		loff_t in = (loff_t)off, out = (loff_t)off;
		size_t n = len < (1u << 30) ? len : (1u << 30);
		ssize_t r = copy_file_range(src->fd, &in, sf->fd, &out, n, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EXDEV || errno == EINVAL ||
			      errno == ENOSYS || errno == EOPNOTSUPP))
			return copy_rw(src, sf, off, len);
		if (r < 0)
			return xip_error(-errno, "%s: %s", sf->path,
					 strerror(errno));
		if (r == 0)
			return xip_error(-EIO, "%s: shrank while being read",
					 src->path);
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
	return 0;
}

/* ---- a plain image ---------------------------------------------------- */
/*
 * A plain image into a tmpfs segment: only the source's data ranges are
 * copied (holes stay zero), in the kernel (copy_range), in one pass;
 * then the whole segment is reserved, so that writes through a mapping
 * never meet a full tmpfs.
 *
 * With a verity check (attach --root-hash) a thread per CPU takes a
 * VCHUNK at a time, and each VPIECE of it is hashed from a
 * mapping of the segment right after it was copied, while it is in the
 * cache: the bytes hashed are the bytes the segment holds, whatever the
 * source does meanwhile.  The blocks of the source's holes are zeros in
 * the new segment, and their digest is known.  The threads block every
 * signal: the caller's thread takes them and sets the interrupt flag,
 * which every thread looks at between two pieces.
 */
struct vfill {
	struct source *src;
	struct segfile *sf;
	struct xip_verity_stream *vs;
	const uint8_t *map;		/* the segment, read-only, with @vs */
	uint64_t bs, chunk, piece, nchunks;
	_Atomic uint64_t next;		/* the next chunk to take */
	_Atomic uint64_t done;		/* chunks finished */
	_Atomic bool stop;
	pthread_mutex_t lock;
	int err;			/* the first failure, its message */
	char msg[XIP_ERRMSG_MAX];
};

static void vfill_fail(struct vfill *v, int err)
{
	pthread_mutex_lock(&v->lock);
	if (!v->err) {
		v->err = err;
		snprintf(v->msg, sizeof(v->msg), "%s", xip_errmsg());
	}
	pthread_mutex_unlock(&v->lock);
	v->stop = true;
}

/* The data range of the source in [@off, @end), rounded out to blocks. */
static void vfill_data(struct vfill *v, uint64_t off, uint64_t end,
		       uint64_t *d, uint64_t *h)
{
	off_t r = lseek(v->src->fd, (off_t)off, SEEK_DATA);

	*d = off;
	*h = end;
	if (r < 0 && errno == ENXIO) {
		*d = *h = end;		/* only a hole is left */
		return;
	}
	if (r < 0)
		return;			/* no SEEK_DATA: all of it is data */
	*d = round_down((uint64_t)r, v->bs);
	r = lseek(v->src->fd, r, SEEK_HOLE);
	if (r >= 0 && round_up((uint64_t)r, v->bs) < end)
		*h = round_up((uint64_t)r, v->bs);
	if (*d < off)
		*d = off;
	if (*d > end)
		*d = *h = end;
}

static int vfill_chunk(struct vfill *v, uint64_t off, uint64_t end)
{
	uint64_t d, h;
	int ret;

	while (off < end) {
		vfill_data(v, off, end, &d, &h);
		if (v->vs)
			xip_verity_stream_zero(v->vs, off, d - off);
		for (off = d; off < h; off += v->piece) {
			uint64_t n = min_u64(v->piece, h - off);

			if (v->stop || xip_interrupted())
				return xip_error(-EINTR, "interrupted");
			ret = copy_range(v->src, v->sf, off, n);
			if (!ret && v->vs)
				ret = xip_verity_stream_hash(v->vs, off,
							     v->map + off, n);
			if (ret)
				return ret;
		}
		off = h;
	}
	return 0;
}

static void *vfill_run(void *arg)
{
	struct vfill *v = arg;
	uint64_t c;
	int ret = 0;

	while (!ret && !v->stop && (c = v->next++) < v->nchunks) {
		uint64_t off = c * v->chunk;

		ret = vfill_chunk(v, off, min_u64(off + v->chunk, v->src->size));
		if (!ret)
			xip_attach_hook_fill(++v->done, v->nchunks);
	}
	if (!ret && !v->stop && xip_interrupted())
		ret = xip_error(-EINTR, "interrupted");
	if (ret)
		vfill_fail(v, ret);
	return NULL;
}

static unsigned int vfill_threads(uint64_t nchunks)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t t = cpus > 0 ? (uint64_t)cpus : 1;

	t = min_u64(min_u64(t, VTHREADS_MAX), nchunks);
	return t ? (unsigned int)t : 1;
}

static int fill_copy(struct segfile *sf, struct source *src,
		     struct xip_verity_stream *vs, uint64_t min)
{
	uint64_t want = round_up(src->size > min ? src->size : min, sf->align);
	/* without a check: all of it at once, the kernel's fastest */
	struct vfill v = {
		.src = src, .sf = sf, .vs = vs, .bs = 1,
		.chunk = src->size ? src->size : 1, .nchunks = 1,
	};
	pthread_t tid[VTHREADS_MAX];
	unsigned int t = 1, started = 0;
	sigset_t all, old;
	void *map = NULL;
	int ret;

	v.piece = v.chunk;
	if (vs) {
		v.bs = xip_verity_stream_info(vs)->hash_block_size;
		v.chunk = VCHUNK;
		v.nchunks = div_round_up(src->size, VCHUNK);
		v.piece = v.bs > VPIECE ? v.bs : VPIECE;
		if (VCHUNK % v.piece)
			return xip_error(-EOPNOTSUPP, "%s: verity blocks of %" PRIu64 " bytes",
					 src->path, v.bs);
		t = vfill_threads(v.nchunks);
	}
	if (ftruncate(sf->fd, (off_t)want) < 0)
		return xip_error(-errno, "%s: cannot size the segment: %s",
				 sf->path, strerror(errno));
	sf->cap = want;
	if (vs && want) {
		ret = xip_map_shared(sf->fd, (size_t)want, PROT_READ, sf->path,
				     &map);
		if (ret)
			return ret;
		v.map = map;
	}
	pthread_mutex_init(&v.lock, NULL);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned int i = 1; i < t; i++) {
		if (pthread_create(&tid[started], NULL, vfill_run, &v))
			break;
		started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	vfill_run(&v);
	for (unsigned int i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	pthread_mutex_destroy(&v.lock);
	if (map)
		munmap(map, (size_t)want);
	if (v.err)
		return xip_error(v.err, "%s", v.msg);
	if (fallocate(sf->fd, 0, 0, (off_t)want) < 0 && errno != EOPNOTSUPP)
		return xip_error(-errno,
				 "%s: cannot reserve %" PRIu64 " bytes of memory: %s",
				 sf->path, want, strerror(errno));
	return 0;
}

struct inflater {
	z_stream zs;
	unsigned char *in;
	uint64_t in_off;	/* bytes of the source consumed into @in */
	bool eof;
	bool done;		/* the last member ended */
};

static int inflater_init(struct inflater *z, struct source *src)
{
	memset(z, 0, sizeof(*z));
	z->in = malloc(CHUNK);
	if (!z->in)
		return xip_error(-ENOMEM, "out of memory");
	if (inflateInit2(&z->zs, 16 + MAX_WBITS) != Z_OK) {
		free(z->in);
		return xip_error(-ENOMEM, "%s: zlib: cannot initialise",
				 src->path);
	}
	return 0;
}

static void inflater_end(struct inflater *z)
{
	inflateEnd(&z->zs);
	free(z->in);
}

static int inflate_refill(struct inflater *z, struct source *src)
{
	ssize_t r;

	if (z->zs.avail_in || z->eof)
		return 0;
	r = xip_pread_full(src->fd, z->in, CHUNK, z->in_off);
	if (r < 0)
		return xip_error((int)r, "%s: %s", src->path,
				 strerror((int)-r));
	z->eof = r == 0;
	z->in_off += (uint64_t)r;
	z->zs.next_in = z->in;
	z->zs.avail_in = (uInt)r;
	return 0;
}

/* At the end of a gzip member: another member follows? */
static bool inflate_next_member(struct inflater *z, struct source *src)
{
	if (inflate_refill(z, src) || z->zs.avail_in < 2 ||
	    z->zs.next_in[0] != 0x1f || z->zs.next_in[1] != 0x8b)
		return false;	/* the end, or trailing bytes (ignored) */
	return inflateReset(&z->zs) == Z_OK;
}

/*
 * Decompress into @buf until it is full or the last member ends (then
 * z->done); *got is the bytes written.  Never more than @len.
 */
static int inflate_into(struct inflater *z, struct source *src, uint8_t *buf,
			uint64_t len, uint64_t *got)
{
	uint64_t out = 0;
	int zr, ret;

	while (out < len && !z->done) {
		ret = inflate_refill(z, src);
		if (ret)
			return ret;
		z->zs.next_out = buf + out;
		z->zs.avail_out = (uInt)min_u64(len - out, CHUNK);
		zr = inflate(&z->zs, Z_NO_FLUSH);
		out = (uint64_t)(z->zs.next_out - buf);
		*got = out;
		if (zr == Z_STREAM_END) {
			z->done = !inflate_next_member(z, src);
			continue;
		}
		if (zr == Z_BUF_ERROR && z->eof)
			return xip_error(-EIO, "%s: gzip data is truncated",
					 src->path);
		if (zr != Z_OK && zr != Z_BUF_ERROR)
			return xip_error(-EIO, "%s: gzip data is corrupt: %s",
					 src->path, z->zs.msg ? z->zs.msg :
					 zError(zr));
	}
	*got = out;
	return 0;
}

static int limit_exceeded(const struct limit *lim, const struct source *src)
{
	if (lim->given)
		return xip_error(-EFBIG,
				 "%s: decompresses to more than --size (%" PRIu64 " bytes)",
				 src->path, lim->bytes);
	if (lim->bytes == lim->free)
		return xip_error(-ENOSPC,
				 "%s: decompresses to more than the free memory of %s (%" PRIu64 " bytes)",
				 src->path, lim->dir, lim->bytes);
	return xip_error(-EFBIG,
			 "%s: decompresses to more than %" PRIu64 " bytes, the most without --size",
			 src->path, lim->bytes);
}

/* The room to reserve first: what the trailer claims when deflate could
 * have produced it, never more than the limit. */
static uint64_t gzip_first_room(const struct source *src,
				const struct limit *lim)
{
	uint64_t most = src->size > UINT64_MAX / GZIP_MAX_RATIO ? UINT64_MAX :
			src->size * GZIP_MAX_RATIO;
	uint64_t want = src->hint > src->size && src->hint <= most ?
			src->hint : 4 * src->size;

	if (lim->given)
		want = lim->bytes;	/* the segment's size in any case */
	return min_u64(want, lim->bytes);
}

/*
 * Decompress straight into the mapped segment, growing it as needed but
 * never past the limit: stop as soon as the data would exceed it.
 */
static int fill_gzip(struct segfile *sf, struct source *src,
		     const struct limit *lim, uint64_t *out)
{
	struct inflater z;
	uint64_t got;
	uint8_t extra;
	int ret = inflater_init(&z, src);

	if (ret)
		return ret;
	*out = 0;
	ret = segfile_resize(sf, gzip_first_room(src, lim));
	if (!ret)
		ret = segfile_map(sf);
	while (!ret) {
		uint64_t room = min_u64(sf->cap, lim->bytes);

		ret = inflate_into(&z, src, sf->map + *out, room - *out, &got);
		*out += got;
		if (ret || z.done)
			break;
		if (room == lim->bytes) {
			/* full to the limit: one more byte is too many */
			ret = inflate_into(&z, src, &extra, 1, &got);
			if (!ret && got)
				ret = limit_exceeded(lim, src);
			break;
		}
		ret = segfile_resize(sf, min_u64(sf->cap * 2, lim->bytes));
		if (!ret)
			ret = segfile_map(sf);
	}
	inflater_end(&z);
	return ret;
}

/*
 * An ext2 superblock where it belongs, in the first decompressed bytes;
 * else what they hold, in the words of every other command.
 */
int xip_attach_source_check_ext2(struct source *src)
{
	uint8_t *head = malloc(XIP_FS_SIGNATURE_BYTES);
	struct inflater z;
	uint64_t got = 0;
	ssize_t r;
	int ret = 0;

	if (!head)
		return xip_error(-ENOMEM, "out of memory");
	if (src->gz) {
		ret = inflater_init(&z, src);
		if (!ret) {
			ret = inflate_into(&z, src, head,
					   XIP_FS_SIGNATURE_BYTES, &got);
			inflater_end(&z);
		}
	} else {
		r = xip_pread_full(src->fd, head, XIP_FS_SIGNATURE_BYTES, 0);
		if (r < 0)
			ret = xip_error((int)r, "%s: %s", src->path,
					strerror((int)-r));
		got = r < 0 ? 0 : (uint64_t)r;
	}
	if (!ret && (got < EXT2_MAGIC_OFF + 2 || head[EXT2_MAGIC_OFF] != 0x53 ||
		     head[EXT2_MAGIC_OFF + 1] != 0xef))
		ret = xip_error_not_ext2(-EMEDIUMTYPE, src->path,
					 xip_fs_signature(head, (size_t)got));
	free(head);
	return ret;
}

/* The whole file reserved, holes included (after a fill that reserved
 * only what it wrote). */
static int segfile_reserve(struct segfile *sf)
{
	if (fallocate(sf->fd, 0, 0, (off_t)sf->cap) < 0 && errno != EOPNOTSUPP)
		return xip_error(-errno,
				 "%s: cannot reserve %" PRIu64 " bytes of memory: %s",
				 sf->path, sf->cap, strerror(errno));
	return 0;
}

/* What pulls a remote image into a segment file */
struct puller {
	struct xip_nbd *nbd;		/* an NBD export, or */
	struct xip_ocipull *oci;	/* an artifact of a registry */
	struct xip_verity_stream *vs;
};

/*
 * A remote image (an NBD export: nbdpull.c; an artifact of a registry:
 * ocipull.c), opened already: pulled into the file, whose memory is
 * reserved as the requests go out, and all of it once the pull is done:
 * a server that stalls or trickles holds no more than it was asked for.
 */
static int fill_pulled(const struct xip_attach_opts *o, struct segfile *sf,
		       const struct puller *p, uint64_t size,
		       struct xip_seg_entry *e)
{
	uint64_t bytes;
	int ret = 0;

	e->size = size > o->size ? size : o->size;
	bytes = round_up(e->size ? e->size : 1, sf->align);
	if (bytes > (uint64_t)SIZE_MAX / 2)
		ret = xip_error(-EFBIG, "%s: too large", sf->path);
	else if (ftruncate(sf->fd, (off_t)bytes) < 0)
		ret = xip_error(-errno, "%s: cannot size the segment: %s",
				sf->path, strerror(errno));
	sf->cap = ret ? 0 : bytes;
	if (!ret && sf->huge)
		ret = segfile_map(sf);
	if (!ret && p->nbd)
		ret = xip_nbd_pull(p->nbd, sf->fd, sf->map, sf->align, e->path,
				   p->vs);
	else if (!ret)
		ret = xip_ocipull_pull(p->oci, sf->fd, sf->map, e->path, p->vs);
	if (sf->map) {
		munmap(sf->map, (size_t)sf->cap);
		sf->map = NULL;
	}
	if (!ret)
		ret = segfile_reserve(sf);
	return ret;
}

int xip_attach_fill_nbd(const struct xip_attach_opts *o, struct segfile *sf,
			struct xip_nbd *n, uint64_t size,
			struct xip_verity_stream *vs, struct xip_seg_entry *e)
{
	const struct puller p = { .nbd = n, .vs = vs };

	return fill_pulled(o, sf, &p, size, e);
}

int xip_attach_fill_oci(const struct xip_attach_opts *o, struct segfile *sf,
			struct xip_ocipull *pull, uint64_t size,
			struct xip_verity_stream *vs, struct xip_seg_entry *e)
{
	const struct puller p = { .oci = pull, .vs = vs };

	return fill_pulled(o, sf, &p, size, e);
}

/* Fill the created segment file; e->size is the data size. */
int xip_attach_fill(const struct xip_attach_opts *o, struct segfile *sf,
		    struct source *src, const struct limit *lim,
		    struct xip_verity_stream *vs, struct xip_seg_entry *e)
{
	uint64_t out = 0;
	int ret;

	if (!o->image) {
		e->size = o->size;
		return segfile_resize(sf, o->size);
	}
	XIP_DBG(ATTACH, "%s -> %s: %s", o->image, sf->path,
		src->gz ? "gzip, inflated" :
		sf->huge ? "mapped and copied (hugetlbfs)" :
		vs ? "copy_file_range, hashed from the segment, on threads" :
		"copy_file_range");
	if (!src->gz && !sf->huge) {
		ret = fill_copy(sf, src, vs, o->size);
	} else {
		ret = segfile_resize(sf, src->gz ? gzip_first_room(src, lim) :
					     src->size);
		if (!ret)
			ret = src->gz ? fill_gzip(sf, src, lim, &out) :
			      segfile_map(sf);
		if (!ret && !src->gz)
			ret = fill_plain(sf, src);
	}
	if (!src->gz)
		out = src->size;
	if (!ret && out == 0)
		ret = xip_error(-EINVAL, "%s: holds no data", o->image);
	e->size = out > o->size ? out : o->size;
	if (sf->map) {
		munmap(sf->map, (size_t)sf->cap);
		sf->map = NULL;
	}
	/* trim the room gzip needed, or grow to --size (zero-filled) */
	if (!ret && round_up(e->size, sf->align) != sf->cap) {
		uint64_t want = round_up(e->size, sf->align);

		if (want < sf->cap && ftruncate(sf->fd, (off_t)want) == 0)
			sf->cap = want;
		else if (want > sf->cap)
			ret = segfile_resize(sf, want);
	}
	if (!ret)
		segfile_collapse(sf);
	return ret;
}
