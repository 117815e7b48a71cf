// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Attached segments: named memory (a tmpfs or hugetlbfs file) filled from
 * an image, recorded in the registry, optionally bound to a kernel loop
 * device; and their release and saving.  This is the user-space
 * counterpart of the s390 DCSS segments exposed by dcssblk: SR, ER and SC
 * there, sr and er here, refuse writes.
 *
 * The segment file sits in a directory every user writes to (/dev/shm):
 * it is created O_EXCL|O_NOFOLLOW under a name no other user's segment
 * can have, with its image's owner and permissions, and its identity
 * (device, inode, owner) is recorded; every later use checks it.  An
 * attach claims its name in the registry (a record "attaching", the file
 * locked) before the long work, and records the segment as attached only
 * when it is whole.
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <blkid.h>
#include <zlib.h>

#include "xip.h"
#include "kcopy.h"
#include "segment_int.h"
#include "registry_int.h"
#include "nbd_int.h"

#define SHM_DIR		"/dev/shm"
#define CHUNK		(1u << 20)	/* bytes per read() or inflate() */
#define SAVE_LOCK_MS	5000
#define EXT2_MAGIC_OFF	1080		/* s_magic of the superblock */
#define GZIP_MAX_RATIO	1032		/* deflate expands at most this much */

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* ---- where segments live ---------------------------------------------- */

static int hugetlbfs_dir(char *buf, size_t len)
{
	const char *env = getenv("XIPTOOL_HUGETLBFS");
	char line[4096], dir[4096], type[64];
	int found = 0;
	FILE *f;

	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return 0;
	}
	f = fopen("/proc/self/mounts", "re");
	if (!f)
		return xip_error(-errno, "/proc/self/mounts: %s",
				 strerror(errno));
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %4095s %63s", dir, type) == 2 &&
		    !strcmp(type, "hugetlbfs")) {
			snprintf(buf, len, "%s", dir);
			found = 1;
		}
	fclose(f);
	if (!found)
		return xip_error(-ENOENT,
				 "--hugepages: no hugetlbfs is mounted (mount -t hugetlbfs none /dev/hugepages)");
	return 0;
}

static int segment_dir(bool huge, char *buf, size_t len)
{
	const char *env = getenv("XIPTOOL_SHMDIR");

	if (huge)
		return hugetlbfs_dir(buf, len);
	snprintf(buf, len, "%s", env && *env ? env : SHM_DIR);
	return 0;
}

/*
 * The segment file of @name: xiptool-NAME for root, xiptool-UID:NAME for
 * other users.  A name never holds ':', so no two users' names meet.
 */
static int segment_file_path(const char *name, bool huge, char *buf,
			     size_t len)
{
	char dir[XIP_PATH_MAX];
	int n, ret = segment_dir(huge, dir, sizeof(dir));

	if (ret)
		return ret;
	if (geteuid() == 0)
		n = snprintf(buf, len, "%s/xiptool-%s", dir, name);
	else
		n = snprintf(buf, len, "%s/xiptool-%u:%s", dir,
			     (unsigned int)geteuid(), name);
	if (n < 0 || (size_t)n >= len)
		return xip_error(-ENAMETOOLONG, "%s: name too long", dir);
	return 0;
}

/* ---- the source image --------------------------------------------------- */

struct source {
	const char *path;
	int fd;
	struct stat st;		/* its owner and mode go to the segment */
	uint64_t size;		/* bytes of the file */
	bool gz;
	uint64_t hint;		/* gzip: the trailer's size (mod 2^32) */
};

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

struct segfile {
	const char *path;
	int fd;
	uint64_t align;		/* XIP_PMEM_ALIGN or the huge page size */
	bool huge;		/* on hugetlbfs: fill through the mapping */
	uint64_t cap;		/* bytes of the file and the mapping */
	uint8_t *map;
	bool created;		/* by this attach: removed when it fails */
};

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
	void *p = mmap(NULL, (size_t)sf->cap, PROT_READ | PROT_WRITE,
		       MAP_SHARED, sf->fd, 0);

	if (p == MAP_FAILED)
		return xip_error(-errno, "%s: cannot map: %s", sf->path,
				 strerror(errno));
	sf->map = p;
	return 0;
}

static int segfile_create(struct segfile *sf, const char *path)
{
	struct statfs sfs;

	sf->path = path;
	/* a guest's pmem device needs whole 2 MiB sections (nd_pmem) */
	sf->align = XIP_PMEM_ALIGN;
	if ((uint64_t)xip_host_page_size() > sf->align)
		sf->align = (uint64_t)xip_host_page_size();
	sf->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY |
		      O_CLOEXEC, 0600);
	if (sf->fd < 0 && errno == EEXIST)
		return xip_error(-EEXIST,
				 "%s: segment file exists (attached through another registry, or left over)",
				 path);
	if (sf->fd < 0)
		return xip_error(-errno, "%s: %s", path, strerror(errno));
	sf->created = true;
	if (fstatfs(sf->fd, &sfs) == 0 && sfs.f_type == HUGETLBFS_MAGIC) {
		sf->huge = true;
		if ((uint64_t)sfs.f_bsize > sf->align)
			sf->align = (uint64_t)sfs.f_bsize;
	}
	return 0;
}

/*
 * A segment is no more readable than its image: the image's owner, group
 * and permission bits, without write bits for read-only types (with the
 * owner's write bit for writable ones); set-id bits never.  A caller who
 * cannot give the file away keeps it, with the image's bits for others,
 * its group's only when the group could be kept too.  No image: 0600.
 */
static int segfile_own(struct segfile *sf, const struct source *src,
		       enum xip_seg_type type)
{
	mode_t mode = 0600;

	if (src && src->fd >= 0) {
		mode = src->st.st_mode & 0777;
		if (fchown(sf->fd, src->st.st_uid, src->st.st_gid) < 0) {
			mode = (mode & 0007) | 0400;
			if (fchown(sf->fd, (uid_t)-1, src->st.st_gid) == 0)
				mode |= src->st.st_mode & 0070;
		}
		mode = xip_segment_type_writable(type) ? mode | 0200 :
						     mode & ~0222;
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

/* Copy a plain image: read() straight into the mapping (hugetlbfs files
 * cannot be written with write()). */
static int fill_plain(struct segfile *sf, struct source *src)
{
	uint64_t off = 0;

	while (off < src->size) {
		size_t n = src->size - off < CHUNK ? src->size - off : CHUNK;
		ssize_t r = pread(src->fd, sf->map + off, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return xip_error(-errno, "%s: %s", src->path,
					 strerror(errno));
		if (r == 0)
			return xip_error(-EIO, "%s: shrank while being read",
					 src->path);
		off += (uint64_t)r;
	}
	return 0;
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
		ssize_t r = pread(src->fd, buf, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			ret = r ? xip_error(-errno, "%s: %s", src->path,
					    strerror(errno)) :
				  xip_error(-EIO, "%s: shrank while being read",
					    src->path);
			break;
		}
		if (pwrite(sf->fd, buf, (size_t)r, (off_t)off) != r)
			ret = xip_error(errno ? -errno : -EIO, "%s: %s",
					sf->path, strerror(errno ? errno : EIO));
		off += (uint64_t)r;
		len -= (uint64_t)r;
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

/*
 * A plain image into a tmpfs segment: only the source's data ranges are
 * copied (holes stay zero), then the whole segment is reserved, so that
 * writes through a mapping never meet a full tmpfs.
 */
static int fill_copy(struct segfile *sf, struct source *src, uint64_t min)
{
	uint64_t want = round_up(src->size > min ? src->size : min, sf->align);
	off_t data = 0, hole;
	int ret = 0;

	if (ftruncate(sf->fd, (off_t)want) < 0)
		return xip_error(-errno, "%s: cannot size the segment: %s",
				 sf->path, strerror(errno));
	sf->cap = want;
	while (!ret && (uint64_t)data < src->size) {
		off_t d = lseek(src->fd, data, SEEK_DATA), h;

		if (d < 0 && errno == ENXIO)
			break;		/* only a hole is left */
		hole = (off_t)src->size;
		if (d >= 0) {		/* else no SEEK_DATA: copy it all */
			data = d;
			h = lseek(src->fd, data, SEEK_HOLE);
			if (h >= 0)
				hole = h;
		}
		if ((uint64_t)hole > src->size)
			hole = (off_t)src->size;
		ret = copy_range(src, sf, (uint64_t)data,
				 (uint64_t)(hole - data));
		data = hole;
	}
	if (!ret && fallocate(sf->fd, 0, 0, (off_t)want) < 0 &&
	    errno != EOPNOTSUPP)
		ret = xip_error(-errno,
				"%s: cannot reserve %" PRIu64 " bytes of memory: %s",
				sf->path, want, strerror(errno));
	return ret;
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
	r = pread(src->fd, z->in, CHUNK, (off_t)z->in_off);
	if (r < 0)
		return xip_error(-errno, "%s: %s", src->path, strerror(errno));
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

/* The most a segment may hold, and how to say it was passed. */
struct limit {
	uint64_t bytes;
	const char *dir;	/* the segment's directory */
	uint64_t free;		/* bytes free there */
	bool given;		/* --size */
};

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

/* An ext2 superblock where it belongs, in the first decompressed bytes. */
static int source_check_ext2(struct source *src)
{
	uint8_t sb[EXT2_MAGIC_OFF + 2];
	struct inflater z;
	uint64_t got = 0;
	ssize_t r;
	int ret = 0;

	if (src->gz) {
		ret = inflater_init(&z, src);
		if (ret)
			return ret;
		ret = inflate_into(&z, src, sb, sizeof(sb), &got);
		inflater_end(&z);
		if (ret)
			return ret;
	} else {
		r = pread(src->fd, sb, sizeof(sb), 0);
		if (r < 0)
			return xip_error(-errno, "%s: %s", src->path,
					 strerror(errno));
		got = (uint64_t)r;
	}
	if (got < sizeof(sb) || sb[EXT2_MAGIC_OFF] != 0x53 ||
	    sb[EXT2_MAGIC_OFF + 1] != 0xef)
		return xip_error(-EMEDIUMTYPE,
				 "%s: not an ext2 image (no ext2 superblock): give --raw to attach it anyway",
				 src->path);
	return 0;
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

int xip_segment_refresh(struct xip_seg_entry *e)
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
	cur = malloc(sizeof(*cur));
	if (!cur)
		return xip_error(-ENOMEM, "out of memory");
	ret = xip_registry_lock();
	if (ret) {
		free(cur);
		return ret;
	}
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
static int file_range(int fd, const char *segpath, const char *file,
		      uint64_t *offset, uint64_t *len)
{
	struct ext2_inode_large inode;
	struct xip_segment *seg;
	struct xip_image *img;
	struct xip_run *runs = NULL;
	size_t nruns = 0;
	uint64_t size, blocks;
	ext2_ino_t ino;
	int ret;

	ret = xip_segment_open_fd(fd, segpath, 0, &seg);
	if (ret)
		return ret;
	ret = xip_image_open_segment(seg, XIP_IMG_NOLOCK, &img);
	if (ret)
		return ret;
	ret = xip_lookup(img, file, 0, &ino);
	if (!ret)
		ret = xip_read_inode(img, ino, &inode);
	if (!ret && !LINUX_S_ISREG(inode.i_mode))
		ret = xip_error(-EINVAL, "%s: not a regular file", file);
	if (!ret)
		ret = xip_file_runs(img, ino, &runs, &nruns);
	if (ret)
		goto out;
	size = EXT2_I_SIZE(&inode);
	blocks = (size + img->block_size - 1) / img->block_size;
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

static int attach_check(const struct xip_attach_opts *o,
			enum xip_seg_type type)
{
	bool nodata = type == XIP_SEGTYPE_SN || type == XIP_SEGTYPE_EN;

	if (nodata && o->image)
		return xip_error(-EINVAL,
				 "%s: type %s holds no data: give --size, not an image",
				 o->image, xip_segment_type_name(type));
	if (nodata && !o->size)
		return xip_error(-EINVAL, "type %s needs --size",
				 xip_segment_type_name(type));
	if (!nodata && !o->image)
		return xip_error(-EINVAL, "type %s needs an image",
				 xip_segment_type_name(type));
	if (nodata && !o->name)
		return xip_error(-EINVAL, "type %s needs a name (--name)",
				 xip_segment_type_name(type));
	if (nodata && o->file)
		return xip_error(-EINVAL, "--file needs an image");
	if (nodata && o->raw)
		return xip_error(-EINVAL, "--raw needs an image");
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
	int ret = segment_dir(o->hugepages, dir, len);

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

/* An NBD export (lib/nbdpull.c), opened already: pulled into the file. */
static int fill_nbd(const struct xip_attach_opts *o, struct segfile *sf,
		    struct xip_nbd *n, uint64_t size, struct xip_seg_entry *e)
{
	int ret;

	e->size = size > o->size ? size : o->size;
	ret = segfile_resize(sf, e->size);
	if (!ret && sf->huge)
		ret = segfile_map(sf);
	if (!ret)
		ret = xip_nbd_pull(n, sf->fd, sf->map, e->path);
	if (sf->map) {
		munmap(sf->map, (size_t)sf->cap);
		sf->map = NULL;
	}
	return ret;
}

/* Open an NBD source and check that its export fits the limits. */
static int nbd_source(const struct xip_attach_opts *o, struct xip_nbd **n,
		      uint64_t *size)
{
	int ret = xip_nbd_open(o->image, n, size);

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

/* Fill the created segment file; e->size is the data size. */
static int attach_fill(const struct xip_attach_opts *o, struct segfile *sf,
		       struct source *src, const struct limit *lim,
		       struct xip_seg_entry *e)
{
	uint64_t out = 0;
	int ret;

	if (!o->image) {
		e->size = o->size;
		return segfile_resize(sf, o->size);
	}
	if (!src->gz && !sf->huge) {
		ret = fill_copy(sf, src, o->size);
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
	return ret;
}

static int attach_loop(const struct xip_attach_opts *o,
		       struct xip_seg_entry *e, struct segfile *sf)
{
	int flags = xip_segment_type_writable(e->type) ? 0 : XIP_LOOP_RDONLY;
	int ret;

	if (o->file) {
		ret = file_range(sf->fd, e->path, o->file, &e->offset,
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

	memset(e, 0, sizeof(*e));
	e->type = type;
	if (o->name) {
		ret = xip_registry_name_check(o->name);
		if (!ret)
			snprintf(e->name, sizeof(e->name), "%s", o->name);
	} else if (xip_nbd_is_uri(o->image)) {
		ret = xip_nbd_default_name(o->image, e->name, sizeof(e->name));
	} else {
		ret = xip_registry_default_name(o->image, e->name,
						sizeof(e->name));
	}
	if (ret)
		return ret;
	if (o->image && (o->image[0] == '@' || xip_nbd_is_uri(o->image)))
		snprintf(e->image, sizeof(e->image), "%s", o->image);
	else if (o->image && realpath(o->image, tmp))
		snprintf(e->image, sizeof(e->image), "%s", tmp);
	else if (o->image)
		snprintf(e->image, sizeof(e->image), "%s", o->image);
	e->created = (int64_t)time(NULL);
	e->owner = geteuid();
	return segment_file_path(e->name, o->hugepages, e->path,
				 sizeof(e->path));
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
		ret = xip_error(-EEXIST,
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
 * segment file (O_EXCL), give it its owner and mode, lock it (the attach
 * is running while the lock is held) and record it as "attaching".
 */
static int attach_claim(struct segfile *sf, const struct source *src,
			struct xip_seg_entry *e)
{
	struct stat st;
	int ret = xip_registry_lock();

	if (ret)
		return ret;
	ret = name_free(e->name);
	if (!ret)
		ret = segfile_create(sf, e->path);
	if (!ret)
		ret = segfile_own(sf, src, e->type);
	if (!ret && (flock(sf->fd, LOCK_EX | LOCK_NB) < 0 ||
		     fstat(sf->fd, &st) < 0))
		ret = xip_error(-errno, "%s: %s", e->path, strerror(errno));
	if (!ret) {
		record_identity(e, &st);
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
	    st.st_ino == now.st_ino)
		unlink(e->path);
	if (held)
		xip_registry_remove(e->name);
	if (locked)
		xip_registry_unlock();
	xip_error(saved ? saved : -EIO, "%s", msg);
}

int xip_attach(const struct xip_attach_opts *o, struct xip_seg_entry *e)
{
	enum xip_seg_type type = o->type ? o->type : XIP_SEGTYPE_SR;
	struct segfile sf = { .fd = -1 };
	struct source src = { .fd = -1 };
	struct xip_nbd *nbd = NULL;
	char dir[XIP_PATH_MAX];
	uint64_t nbd_size = 0;
	struct limit lim;
	int ret;

	ret = attach_check(o, type);
	if (!ret)
		ret = entry_init(o, type, e);
	if (!ret && o->image && xip_nbd_is_uri(o->image)) {
		ret = nbd_source(o, &nbd, &nbd_size);
	} else if (!ret && o->image) {
		ret = source_open(&src, o->image);
		e->compressed = src.gz;
		if (!ret && !o->raw)
			ret = source_check_ext2(&src);
	}
	if (!ret)
		ret = attach_limit(o, &src, e, &lim, dir, sizeof(dir));
	if (!ret && nbd && round_up(nbd_size, XIP_PMEM_ALIGN) > lim.free)
		ret = too_big(o->image, round_up(nbd_size, XIP_PMEM_ALIGN),
			      &lim);
	if (!ret)
		ret = attach_claim(&sf, &src, e);
	if (!ret)
		ret = nbd ? fill_nbd(o, &sf, nbd, nbd_size, e) :
			    attach_fill(o, &sf, &src, &lim, e);
	if (nbd)
		xip_nbd_close(nbd);
	if (!ret)
		identify(sf.fd, e);
	if (!ret)
		ret = attach_commit(o, &sf, e);
	if (ret && (sf.created || e->seg_ino))
		attach_undo(&sf, e);
	if (src.fd >= 0)
		close(src.fd);
	if (sf.fd >= 0)
		close(sf.fd);		/* the end of the claim's lock */
	return ret;
}

/* ---- in use? --------------------------------------------------------- */

/* The process holding a lock on the file (from /proc/locks), or 0. */
static pid_t lock_holder(int fd)
{
	unsigned int maj, min;
	unsigned long ino;
	char line[256];
	struct stat st;
	pid_t found = 0;
	FILE *f;
	int pid;

	if (fstat(fd, &st) < 0)
		return 0;
	f = fopen("/proc/locks", "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		if (strstr(line, "->"))
			continue;	/* a waiter */
		if (sscanf(line, "%*d: %*s %*s %*s %d %x:%x:%lu", &pid, &maj,
			   &min, &ino) == 4 && ino == st.st_ino &&
		    makedev(maj, min) == st.st_dev)
			found = pid;
	}
	fclose(f);
	return found;
}

static void describe_holder(int fd, char *why, size_t len)
{
	pid_t pid = lock_holder(fd);
	char path[64], comm[64] = "";
	int cfd;
	ssize_t n;

	if (pid <= 0) {
		snprintf(why, len, "the segment is held by another process");
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	cfd = open(path, O_RDONLY | O_CLOEXEC);
	if (cfd >= 0) {
		n = read(cfd, comm, sizeof(comm) - 1);
		comm[n > 0 ? n : 0] = '\0';
		comm[strcspn(comm, "\n")] = '\0';
		close(cfd);
	}
	snprintf(why, len, "the segment is held by process %d%s%s%s",
		 (int)pid, comm[0] ? " (" : "", comm, comm[0] ? ")" : "");
}

/*
 * Take the exclusive lock on the segment file, opened and checked to be
 * the one recorded: fails while a running program (exec holds a shared
 * lock) or an exclusive holder has it.  Returns the locked descriptor,
 * -EBUSY with the reason, or < 0 (-ESTALE: another file in its place).
 */
static int segment_claim(const struct xip_seg_entry *e, char *why,
			 size_t len)
{
	int fd = xip_registry_open_entry(e, O_RDONLY);

	if (fd < 0)
		return fd;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	if (errno != EWOULDBLOCK) {
		int err = errno;

		close(fd);
		return xip_error(-err, "%s: lock: %s", e->path, strerror(err));
	}
	describe_holder(fd, why, len);
	close(fd);
	return -EBUSY;
}

int xip_segment_busy(const struct xip_seg_entry *e, char *why, size_t len)
{
	int ret = 0, fd;

	if (e->loop[0])
		ret = xip_loop_busy(e->loop, why, len);
	if (ret)
		return ret;
	fd = segment_claim(e, why, len);
	if (fd == -EBUSY)
		return 1;
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* ---- save ---------------------------------------------------------------- */

static bool all_zero(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && !memcmp(p, p + 1, n - 1));
}

/* Write @n bytes of @data at @off of @fd, leaving zero blocks as holes. */
static int put_sparse(int fd, const uint8_t *data, size_t n, uint64_t off,
		      const char *path)
{
	const size_t blk = 4096;

	for (size_t i = 0, j; i < n; i = j) {
		size_t k = n - i < blk ? n - i : blk;

		j = i + k;
		if (all_zero(data + i, k))
			continue;
		/* one write for the whole run of non-zero blocks */
		while (j < n) {
			k = n - j < blk ? n - j : blk;
			if (all_zero(data + j, k))
				break;
			j += k;
		}
		int ret = xip_pwrite_all(fd, data + i, j - i, off + i);

		if (ret)
			return xip_error(ret, "%s: %s", path, strerror(-ret));
	}
	return 0;
}

/*
 * Copy the segment to @fd, zero blocks left as holes: read through the
 * segment's file a chunk at a time (pread; no page-table entry per page),
 * through its mapping where the file cannot be read (device DAX).
 */
static int write_sparse(int fd, struct xip_segment *seg, uint64_t size,
			const char *path)
{
	const size_t chunk = 1u << 20;
	uint8_t *buf = NULL;
	int ret = 0;

	if (seg->kind != XIP_SEG_DAX && !(buf = malloc(chunk)))
		return xip_error(-ENOMEM, "out of memory");
	for (uint64_t off = 0; !ret && off < size;) {
		size_t n = size - off < chunk ? (size_t)(size - off) : chunk;
		const uint8_t *data = seg->base + off;
		ssize_t r = buf ? pread(seg->fd, buf, n, (off_t)off) : (ssize_t)n;

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && buf && off == 0 && (errno == EINVAL || errno == ENODEV)) {
			free(buf);	/* not readable: the mapping */
			buf = NULL;
			continue;
		}
		if (r <= 0) {
			ret = r ? xip_error(-errno, "%s: %s", seg->path,
					    strerror(errno)) :
				  xip_error(-EIO, "%s: shrank while being saved",
					    seg->path);
			break;
		}
		ret = put_sparse(fd, buf ? buf : data, (size_t)r, off, path);
		off += (uint64_t)r;
	}
	free(buf);
	if (!ret && (ftruncate(fd, (off_t)size) < 0 || fsync(fd) < 0))
		ret = xip_error(-errno, "%s: %s", path, strerror(errno));
	return ret;
}

/*
 * Wait for writers to finish: a shared lock on the segment file.  Then
 * the segment must still be attached: a detach that came first unlinked
 * it; one that comes later sees the lock and refuses.
 */
static int lock_shared(int fd, const struct xip_seg_entry *e)
{
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	struct stat st;
	char why[256];

	for (int waited = 0; flock(fd, LOCK_SH | LOCK_NB) < 0; waited += 10) {
		if (errno != EWOULDBLOCK)
			return xip_error(-errno, "%s: lock: %s", e->path,
					 strerror(errno));
		if (waited >= SAVE_LOCK_MS) {
			describe_holder(fd, why, sizeof(why));
			return xip_error(-EBUSY, "%s: busy: %s", e->name, why);
		}
		nanosleep(&pause, NULL);
	}
	if (fstat(fd, &st) == 0 && st.st_nlink == 0)
		return xip_error(-ENOENT,
				 "@%s: no attached segment of that name (detached)",
				 e->name);
	return 0;
}

/* The kernel may hold writes to the loop device in its cache. */
static void flush_loop(const struct xip_seg_entry *e)
{
	int fd;

	if (!e->loop[0] || xip_loop_read_only(e->loop) != 0)
		return;
	fd = open(e->loop, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	xip_error_clear();
}

static int temp_next_to(const char *dest, char *tmp, size_t len)
{
	int fd;

	if ((size_t)snprintf(tmp, len, "%s.XXXXXX", dest) >= len)
		return xip_error(-ENAMETOOLONG, "%s: name too long", dest);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return xip_error(-errno, "%s: cannot create: %s", dest,
				 strerror(errno));
	return fd;
}

static int save_data(const struct xip_seg_entry *e, int sfd, const char *dest)
{
	char tmp[XIP_PATH_MAX + 16];
	mode_t mask = umask(0);
	struct xip_segment *seg;
	struct stat st;
	void *map;
	int fd, ret;

	umask(mask);
	if (stat(dest, &st) == 0 && !S_ISREG(st.st_mode))
		return xip_error(-EINVAL, "%s: not a regular file", dest);
	ret = xip_segment_open_fd(sfd, e->path, 0, &seg);
	if (ret)
		return ret;
	if (xip_segment_range(seg, 0, e->size, &map)) {
		xip_segment_close(seg);
		return xip_error(-EIO, "%s: segment file shorter than recorded",
				 e->path);
	}
	fd = temp_next_to(dest, tmp, sizeof(tmp));
	ret = fd < 0 ? fd : write_sparse(fd, seg, e->size, tmp);
	if (!ret && fchmod(fd, 0666 & ~mask) < 0)
		ret = xip_error(-errno, "%s: %s", tmp, strerror(errno));
	if (fd >= 0 && close(fd) < 0 && !ret)
		ret = xip_error(-errno, "%s: %s", tmp, strerror(errno));
	if (!ret && rename(tmp, dest) < 0)
		ret = xip_error(-errno, "%s: %s", dest, strerror(errno));
	if (ret && fd >= 0)
		unlink(tmp);
	xip_segment_close(seg);
	return ret;
}

/* Save through @locked (a descriptor holding a lock), or lock here. */
static int save_entry(const struct xip_seg_entry *e, const char *dest,
		      int locked)
{
	int fd = locked, ret = 0;

	if (fd < 0) {
		fd = xip_registry_open_entry(e, O_RDONLY);
		if (fd < 0)
			return fd;
		ret = lock_shared(fd, e);
	}
	flush_loop(e);
	if (!ret)
		ret = save_data(e, fd, dest);
	if (fd != locked)
		close(fd);
	return ret;
}

/*
 * Save takes no registry lock: it holds the segment's shared holder lock
 * while it copies, which a detach respects (it refuses a held segment),
 * and checks after taking it that the segment is still attached.
 */
int xip_save(const char *what, const char *dest)
{
	struct xip_seg_entry *e = malloc(sizeof(*e));
	int ret;

	if (!e)
		return xip_error(-ENOMEM, "out of memory");
	ret = xip_registry_find(what, e);
	if (!ret)
		ret = save_entry(e, dest, -1);
	free(e);
	return ret;
}

/* ---- detach -------------------------------------------------------------- */

/* A stale record met by detach: removed, and said so. */
static int detach_stale(const struct xip_seg_entry *e,
			enum xip_entry_state state)
{
	int ret = xip_registry_clean(e);

	if (ret < 0)
		return ret;
	if (state == XIP_ENTRY_FOREIGN)
		return xip_error(-ESTALE,
				 "%s: %s is not the segment that was attached (device/inode changed): entry removed, the file left alone",
				 e->name, e->path);
	return xip_error(-ENOENT, "@%s: no attached segment of that name",
			 e->name);
}

/*
 * Release a live segment, holding the registry lock: refuse while in use
 * (unless forced), save it, unbind its loop device (only while it serves
 * this very file), remove the file (only while it is the recorded one),
 * then the record.  Success means all three are gone.
 */
static int detach_entry(const struct xip_seg_entry *e, const char *save,
			int flags)
{
	bool force = flags & XIP_DETACH_FORCE;
	bool serves = e->loop[0] && xip_registry_loop_serves(e);
	char why[512] = "";
	struct stat st;
	int fd = -1, ret = 0;

	if (serves && !force) {
		ret = xip_loop_busy(e->loop, why, sizeof(why));
		if (ret > 0)
			return xip_error(-EBUSY, "%s: busy: %s (use --force)",
					 e->name, why);
		if (ret < 0)
			return ret;
	}
	/* hold the lock until the file is gone: no new holder meanwhile */
	fd = segment_claim(e, why, sizeof(why));
	if (fd == -ESTALE)
		return detach_stale(e, XIP_ENTRY_FOREIGN);
	if (fd == -ENOENT)
		return detach_stale(e, XIP_ENTRY_GONE);
	if (fd == -EBUSY && !force)
		return xip_error(-EBUSY, "%s: busy: %s (use --force)", e->name,
				 why);
	if (fd < 0 && fd != -EBUSY)
		return fd;
	if (save)
		ret = save_entry(e, save, fd);
	if (!ret && serves)
		ret = xip_loop_detach(e->loop);
	if (!ret && lstat(e->path, &st) == 0 && xip_registry_same_file(e,
								       &st) &&
	    unlink(e->path) < 0 && errno != ENOENT)
		ret = xip_error(-errno, "%s: %s", e->path, strerror(errno));
	if (!ret)
		ret = xip_registry_remove(e->name);
	if (fd >= 0)
		close(fd);
	return ret;
}

/* Find the record to detach: by name (any state) or by loop device. */
static int detach_find(const char *what, struct xip_seg_entry *e,
		       enum xip_entry_state *state)
{
	const char *name = what[0] == '@' ? what + 1 : what;

	*state = XIP_ENTRY_LIVE;
	if (!strncmp(name, "/dev/", 5))
		return xip_registry_find(name, e);
	if (xip_registry_name_check(name))
		return xip_error(-ENOENT, "@%s: no attached segment of that name",
				 name);
	return xip_registry_read(name, e, state, true);
}

int xip_detach(const char *what, const char *save, int flags)
{
	struct xip_seg_entry *e = malloc(sizeof(*e));
	enum xip_entry_state state;
	int ret;

	if (!e)
		return xip_error(-ENOMEM, "out of memory");
	ret = xip_registry_lock();
	if (ret) {
		free(e);
		return ret;
	}
	ret = detach_find(what, e, &state);
	if (!ret && state == XIP_ENTRY_LIVE)
		ret = detach_entry(e, save, flags);
	else if (!ret && state == XIP_ENTRY_ATTACHING)
		ret = xip_error(-EBUSY, "%s: still being attached (by process %d)",
				e->name, (int)e->pid);
	else if (!ret)
		ret = detach_stale(e, state);
	xip_registry_unlock();
	free(e);
	return ret;
}
