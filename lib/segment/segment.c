// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Segments: a file, tmpfs file, block device or DAX device mapped into
 * memory, and the block-device method direct_access on top of it.  Every pointer the
 * library forms into image bytes comes from xip_seg_direct_access() or
 * xip_seg_range(), which check it against the segment's bounds.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "segment/xip_fill.h"
#include "segment/xip_segment.h"
#include "segment/segment_int.h"
#include "util/xip_debug.h"
#include "util/xip_error.h"
#include "util/xip_util.h"

#define SECTOR_SIZE 512

static const char *const kind_names[] = {
	[XIP_SEG_FILE] = "file",
	[XIP_SEG_SHM] = "shared-memory file",
	[XIP_SEG_BLOCKDEV] = "block device",
	[XIP_SEG_DAX] = "DAX device",
};

static const char *const type_names[] = {
	[XIP_SEGTYPE_NONE] = "none",
	[XIP_SEGTYPE_SR] = "sr",
	[XIP_SEGTYPE_SW] = "sw",
	[XIP_SEGTYPE_ER] = "er",
	[XIP_SEGTYPE_EW] = "ew",
	[XIP_SEGTYPE_SN] = "sn",
	[XIP_SEGTYPE_EN] = "en",
};

const char *xip_seg_type_name(enum xip_seg_type type)
{
	if ((unsigned int)type >= sizeof(type_names) / sizeof(type_names[0]))
		return "unknown";
	return type_names[type];
}

int xip_seg_type_parse(const char *name, enum xip_seg_type *type)
{
	for (unsigned int i = XIP_SEGTYPE_SR;
	     i < sizeof(type_names) / sizeof(type_names[0]); i++) {
		if (!strcasecmp(name, type_names[i])) {
			*type = i;
			return 0;
		}
	}
	return xip_error(-EINVAL,
			 "unknown segment type '%s' (sr, sw, er, ew, sn or en)",
			 name);
}

bool xip_seg_type_writable(enum xip_seg_type type)
{
	/* dcssblk rejects writes to SR, ER (and SC) segments */
	return type != XIP_SEGTYPE_SR && type != XIP_SEGTYPE_ER;
}

bool xip_seg_type_exclusive(enum xip_seg_type type)
{
	return type == XIP_SEGTYPE_ER || type == XIP_SEGTYPE_EW ||
	       type == XIP_SEGTYPE_EN;
}

/* Size of a device-DAX character device, from sysfs. */
static int dax_size(const struct stat *st, uint64_t *size)
{
	char path[PATH_MAX];
	unsigned long long v;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/size",
		 major(st->st_rdev), minor(st->st_rdev));
	f = fopen(path, "re");
	if (!f)
		return -ENODEV;
	n = fscanf(f, "%llu", &v);
	fclose(f);
	if (n != 1)
		return -ENODEV;
	*size = v;
	return 0;
}

/* A device opened O_NONBLOCK by open_path() gets blocking I/O back. */
static void device_blocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0 && (fl & O_NONBLOCK))
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

static int segment_probe(struct xip_seg *seg, const struct stat *st)
{
	struct statfs sfs;
	uint64_t bytes;

	if (S_ISREG(st->st_mode)) {
		seg->kind = XIP_SEG_FILE;
		if (fstatfs(seg->fd, &sfs) == 0) {
			seg->fs_known = true;
			seg->fs_type = (uint64_t)sfs.f_type;
			seg->fs_bsize = (uint64_t)sfs.f_bsize;
			seg->fs_flags = (uint64_t)sfs.f_flags;
		}
		if (seg->fs_known && (sfs.f_type == TMPFS_MAGIC ||
				      sfs.f_type == HUGETLBFS_MAGIC))
			seg->kind = XIP_SEG_SHM;
		seg->size = (uint64_t)st->st_size;
		return 0;
	}
	if (S_ISBLK(st->st_mode)) {
		device_blocking(seg->fd);
		seg->kind = XIP_SEG_BLOCKDEV;
		if (ioctl(seg->fd, BLKGETSIZE64, &bytes) < 0)
			return xip_error(-errno, "%s: cannot get device size: %s",
					 seg->path, strerror(errno));
		seg->size = bytes;
		return 0;
	}
	if (S_ISCHR(st->st_mode) && dax_size(st, &bytes) == 0) {
		device_blocking(seg->fd);
		seg->kind = XIP_SEG_DAX;
		seg->size = bytes;
		return 0;
	}
	if (S_ISDIR(st->st_mode))
		return xip_error(-EISDIR, "%s: is a directory", seg->path);
	return xip_error(-ENODEV,
			 "%s: not a regular file, block device or DAX device",
			 seg->path);
}

static int segment_mappable(const struct xip_seg *seg)
{
	if (seg->size == 0)
		return xip_error(-EINVAL, "%s: empty (size 0)", seg->path);
	if (seg->size > (uint64_t)SIZE_MAX / 2)
		return xip_error(-EFBIG, "%s: too large to map", seg->path);
	return 0;
}

static int segment_map(struct xip_seg *seg)
{
	int prot = PROT_READ | (seg->writable ? PROT_WRITE : 0);
	void *p;
	int ret = segment_mappable(seg);

	if (!ret)
		ret = xip_map_shared(seg->fd, (size_t)seg->size, prot,
				     seg->path, &p);
	if (!ret) {
		seg->base = p;
		seg->copies = false;
	}
	return ret;
}

/*
 * XIP_SEG_COPY: the bytes asked for are read into windows: the first
 * SEG_FIRST pages of the segment, where a range starts in them, else
 * SEG_AHEAD pages from the page it starts in (a directory's next block,
 * the rest of a file's block map), at most SEG_WINDOWS of them; past
 * that, or for a range no window holds, the segment is mapped.  A
 * loader's reads of a small image (superblock, descriptors, inodes,
 * directories, the ELF headers, an indirect block) take three.
 */
#define SEG_FIRST	8
#define SEG_AHEAD	2
#define SEG_WINDOWS	4

static int window_read(struct xip_seg *seg, uint64_t off, uint64_t len,
		       uint8_t **buf)
{
	uint8_t *p = malloc((size_t)len);
	ssize_t n;

	if (!p)
		return xip_error(-ENOMEM, "%s: out of memory", seg->path);
	n = xip_pread_full(seg->fd, p, (size_t)len, off);
	if (n < 0 || (uint64_t)n < len) {
		free(p);
		return xip_error(n < 0 ? (int)n : -EIO, "%s: cannot read %llu"
				 " bytes at %llu: %s", seg->path,
				 (unsigned long long)len,
				 (unsigned long long)off,
				 n < 0 ? strerror((int)-n) :
					 "the file shrank");
	}
	*buf = p;
	return 0;
}

/* [off, off + len), inside the segment: a window holding it, or the map */
/*
 * A lazy segment still filling: has every block of [@lo, @hi) landed?  A
 * window is a copy: one read before its blocks landed would keep serving
 * what was there then, so a window is read only where all have.
 */
static bool window_landed(const struct xip_seg *seg, uint64_t lo, uint64_t hi)
{
	uint64_t first = lo / XIP_FILL_BLOCK;
	uint64_t n = (hi + XIP_FILL_BLOCK - 1) / XIP_FILL_BLOCK - first;

	return !seg->fill || xip_fill_complete(seg->fill) ||
	       xip_fill_missing(seg->fill, first, n) == first + n;
}

static int window_range(struct xip_seg *seg, uint64_t off, uint64_t len,
			void **addr)
{
	struct xip_seg_window *w;
	static uint8_t none;	/* where an empty range points */
	uint64_t lo, hi, first;
	int ret;

	if (!len) {
		*addr = &none;
		return 0;
	}
	for (unsigned int i = 0; i < seg->nwin; i++) {
		w = &seg->win[i];
		if (off >= w->off && off + len <= w->off + w->len) {
			*addr = w->buf + (off - w->off);
			return 0;
		}
	}
	first = (uint64_t)SEG_FIRST * seg->page_size;
	lo = off < first ? 0 : off - off % seg->page_size;
	hi = lo + (off < first ? first : (uint64_t)SEG_AHEAD * seg->page_size);
	if (seg->nwin == SEG_WINDOWS || off + len > hi ||
	    !window_landed(seg, lo, hi)) {
		ret = segment_map(seg);
		if (!ret)
			*addr = seg->base + off;
		return ret;
	}
	if (!seg->win) {
		seg->win = calloc(SEG_WINDOWS, sizeof(*seg->win));
		if (!seg->win)
			return xip_error(-ENOMEM, "%s: out of memory",
					 seg->path);
	}
	w = &seg->win[seg->nwin];
	if (hi > seg->size)
		hi = seg->size;
	ret = window_read(seg, lo, hi - lo, &w->buf);
	if (ret)
		return ret;
	XIP_DBG(SEGMENT, "%s: read %llu bytes at %llu", seg->path,
		(unsigned long long)(hi - lo), (unsigned long long)lo);
	w->off = lo;
	w->len = hi - lo;
	seg->nwin++;
	*addr = w->buf + (off - lo);
	return 0;
}

int xip_seg_map(struct xip_seg *seg)
{
	if (!seg || seg->gone || seg->fd < 0)
		return -ENODEV;
	return seg->base ? 0 : segment_map(seg);
}

/*
 * xip_seg_populate_pays: the file's bytes from one page in (so that no
 * 2 MiB page is mapped whole: a program's mappings rarely are), faulted
 * in one touch per FAULT_WINDOW (the kernel's default fault-around
 * window) or populated, each POPULATE_ROUNDS times, the best kept.
 */
#define POPULATE_SPAN		(2 * 1024 * 1024)
#define POPULATE_MIN_SPAN	(256 * 1024)
#define FAULT_WINDOW		(64 * 1024)
#define POPULATE_ROUNDS		5

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ns to map @len bytes at @off of @fd and touch them, or populate them */
static int populate_time(int fd, size_t len, off_t off, bool populate,
			 uint64_t *ns)
{
	uint64_t t0 = now_ns();
	volatile const uint8_t *p = mmap(NULL, len, PROT_READ,
					 MAP_PRIVATE | (populate ? MAP_POPULATE : 0),
					 fd, off);
	uint8_t sum = 0;

	if (p == MAP_FAILED)
		return -errno;
	if (!populate)
		for (size_t i = 0; i < len; i += FAULT_WINDOW)
			sum += p[i];
	*ns = now_ns() - t0;
	(void)sum;
	munmap((void *)p, len);
	return 0;
}

bool xip_populate_beats_faults(uint64_t fault_ns, uint64_t populate_ns)
{
	return populate_ns < fault_ns / 2;
}

int xip_seg_populate_pays(int fd, uint64_t size, bool *pays)
{
	long page = xip_host_page_size();
	uint64_t fault = UINT64_MAX, pop = UINT64_MAX, ns;
	size_t len;
	int ret = 0;

	*pays = false;
	if (size < (uint64_t)page + POPULATE_MIN_SPAN)
		return 0;
	len = size - (uint64_t)page < POPULATE_SPAN ?
		      (size_t)(size - (uint64_t)page) : POPULATE_SPAN;
	len -= len % FAULT_WINDOW;
	for (int i = 0; i < POPULATE_ROUNDS && !ret; i++) {
		ret = populate_time(fd, len, page, false, &ns);
		if (!ret && ns < fault)
			fault = ns;
		if (!ret)
			ret = populate_time(fd, len, page, true, &ns);
		if (!ret && ns < pop)
			pop = ns;
	}
	if (ret)
		return ret;
	*pays = xip_populate_beats_faults(fault, pop);
	XIP_DBG(SEGMENT, "%zu bytes: faults %llu ns, populated %llu ns: %s",
		len, (unsigned long long)fault, (unsigned long long)pop,
		*pays ? "populate" : "leave to faults");
	return 0;
}

static void windows_free(struct xip_seg *seg)
{
	for (unsigned int i = 0; i < seg->nwin; i++)
		free(seg->win[i].buf);
	free(seg->win);
	seg->win = NULL;
	seg->nwin = 0;
}

/* -ENOENT for an attached segment whose file @st is no longer linked. */
static int segment_linked(const struct xip_seg *seg, const struct stat *st)
{
	if (!seg->name || st->st_nlink > 0)
		return 0;
	return xip_error(-ENOENT, "@%s: no attached segment of that name (detached)",
			 seg->name);
}

/*
 * A holder lock taken on an attached segment counts only while the file
 * is still linked: a detach that came first removed it (and would have
 * refused, had the lock been held before).
 */
static int segment_still_attached(struct xip_seg *seg)
{
	struct stat st;

	if (!seg->name || fstat(seg->fd, &st) < 0)
		return 0;
	return segment_linked(seg, &st);
}

/* The descriptor the holder lock is taken on (see struct xip_seg). */
static int holder_fd(const struct xip_seg *seg)
{
	return seg->lock_fd >= 0 ? seg->lock_fd : seg->fd;
}

/* @known: the fstat of seg->fd just made by the caller, or NULL */
static int segment_setup(struct xip_seg *seg, int flags,
			 const struct stat *known)
{
	struct stat st;
	int ret;

	if (known)
		st = *known;
	else if (fstat(seg->fd, &st) < 0)
		return xip_error(-errno, "%s: %s", seg->path, strerror(errno));
	ret = segment_probe(seg, &st);
	if (ret)
		return ret;
	if ((flags & XIP_SEG_WRITE) && S_ISREG(st.st_mode) &&
	    !(st.st_mode & 0222))
		return xip_error(-EROFS, "%s: read-only (no write permission)",
				 seg->path);
	if (xip_seg_type_exclusive(seg->type) && !(flags & XIP_SEG_HELD_EX) &&
	    flock(holder_fd(seg), LOCK_EX | LOCK_NB) < 0)
		return xip_error(-EBUSY,
				 "%s: exclusive segment (type %s) is held by another process",
				 seg->name ? seg->name : seg->path,
				 xip_seg_type_name(seg->type));
	/* a lock taken just now: linked after it; else @st tells */
	ret = xip_seg_type_exclusive(seg->type) ?
		      segment_still_attached(seg) : segment_linked(seg, &st);
	if (ret)
		return ret;
	seg->writable = flags & XIP_SEG_WRITE;
	seg->held_shared = known && (flags & XIP_SEG_SHARED) &&
			   !xip_seg_type_exclusive(seg->type);
	seg->held_excl = flags & XIP_SEG_HELD_EX;
	seg->page_size = (unsigned int)xip_host_page_size();
	/* a device-dax file has no read(2): only its mapping */
	if ((flags & XIP_SEG_COPY) && !seg->writable &&
	    seg->kind != XIP_SEG_DAX) {
		seg->copies = true;
		return segment_mappable(seg);
	}
	return segment_map(seg);
}

static struct xip_seg *segment_alloc(const char *path)
{
	struct xip_seg *seg = calloc(1, sizeof(*seg));

	if (!seg)
		return NULL;
	seg->fd = -1;
	seg->lock_fd = -1;
	seg->path = strdup(path);
	if (!seg->path) {
		free(seg);
		return NULL;
	}
	return seg;
}

int xip_seg_flock_wait(int fd, int op, int timeout_ms)
{
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	int waited = 0;

	while (flock(fd, op | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (waited >= timeout_ms)
			return -EWOULDBLOCK;
		nanosleep(&pause, NULL);
		waited += 10;
	}
	return 0;
}

int xip_seg_lockfile_take(int *fd, const char *path, int op,
			  int timeout_ms)
{
	struct stat st;
	int ret, nfd;

	for (;;) {
		ret = xip_seg_flock_wait(*fd, op, timeout_ms);
		if (ret || !path)
			return ret;
		if (fstat(*fd, &st) < 0)
			return -errno;
		if (st.st_nlink > 0)
			return 0;
		/* its last holder removed it meanwhile */
		nfd = openat(AT_FDCWD, path, O_RDONLY | O_CREAT | O_NOFOLLOW |
			     O_NOCTTY | O_NONBLOCK | O_CLOEXEC, 0600);
		if (nfd < 0)
			return -errno;
		close(*fd);
		*fd = nfd;
	}
}

/*
 * The last holder of a plain path's lock file removes it: when no one
 * else holds it (LOCK_EX at once), and while it is still the file at its
 * name (linked: lock files are removed, never renamed).
 */
static void lockfile_drop(struct xip_seg *seg)
{
	struct stat st;

	if (seg->lock_path && seg->lock_fd >= 0 &&
	    flock(seg->lock_fd, LOCK_EX | LOCK_NB) == 0 &&
	    fstat(seg->lock_fd, &st) == 0 && st.st_nlink > 0)
		unlink(seg->lock_path);
}

int xip_seg_wait_unheld(const char *path, const char *what,
			    int timeout_ms)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
			    O_CLOEXEC);
	struct stat st;
	int ret = 0;

	if (fd < 0)
		return 0;	/* the open for writing says why */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		ret = xip_seg_flock_wait(fd, LOCK_EX, timeout_ms);
	close(fd);		/* the lock goes with it */
	if (ret == -EWOULDBLOCK)
		return xip_error(-EBUSY, "%s: busy: another xiptool holds it open",
				 what);
	return 0;
}

/*
 * Opened without waiting (O_NONBLOCK: a FIFO named as an image has no
 * writer to wait for, and is refused by segment_probe() as what it is);
 * devices get blocking I/O back there.
 */
int xip_seg_open_path(const char *path, int flags)
{
	int oflags = O_CLOEXEC | O_NONBLOCK | O_NOCTTY |
		     ((flags & XIP_SEG_WRITE) ? O_RDWR : O_RDONLY);
	int fd, ret;

	/* the file's own holder lock: wait until no one holds it */
	if ((flags & XIP_SEG_WRITE) && !(flags & XIP_SEG_HELD_EX)) {
		ret = xip_seg_wait_unheld(path, path, XIP_LOCK_WAIT_MS);
		if (ret)
			return ret;
	}
	/* openat, not open: musl's open adds an fcntl for O_CLOEXEC */
	fd = openat(AT_FDCWD, path, oflags);
	if (fd >= 0)
		return fd;
	if ((flags & XIP_SEG_WRITE) && (errno == EROFS || errno == EACCES ||
					errno == EPERM))
		return xip_error(-EROFS, "%s: read-only: %s", path,
				 strerror(errno));
	return xip_error(-errno, "%s: %s", path, strerror(errno));
}

/*
 * Set up a segment on @fd (taken over, closed on failure): @name and
 * @type are those of an attached segment (NULL, XIP_SEGTYPE_NONE for a
 * plain path).
 */
int xip_seg_adopt(int fd, const char *path, const char *name,
		      enum xip_seg_type type, int flags,
		      struct xip_seg **segp)
{
	return xip_seg_adopt_stat(fd, NULL, -1, path, name, type, flags, segp);
}

int xip_seg_adopt_stat(int fd, const struct stat *st, int lock_fd,
		       const char *path, const char *name,
		       enum xip_seg_type type, int flags,
		       struct xip_seg **segp)
{
	struct xip_seg *seg;
	int ret;

	*segp = NULL;
	seg = segment_alloc(path);
	if (!seg) {
		xip_close_two(fd, lock_fd);
		return xip_error(-ENOMEM, "%s: out of memory", path);
	}
	seg->fd = fd;
	seg->lock_fd = lock_fd;
	seg->type = type;
	if (name && !(seg->name = strdup(name))) {
		xip_seg_close(seg);
		return xip_error(-ENOMEM, "%s: out of memory", path);
	}
	ret = segment_setup(seg, flags, st);
	if (ret) {
		xip_seg_close(seg);
		return ret;
	}
	seg->data_size = seg->size;
	XIP_DBG(SEGMENT, "%s: %s of %llu bytes mapped %s at %p%s%s", path,
		kind_names[seg->kind], (unsigned long long)seg->size,
		seg->writable ? "read-write" : "read-only", (void *)seg->base,
		name ? ", type " : "", name ? xip_seg_type_name(type) : "");
	*segp = seg;
	return 0;
}

int xip_seg_open(const char *path, int flags, struct xip_seg **segp)
{
	int fd;

	*segp = NULL;
	if (!path || !*path)
		return xip_error(-EINVAL, "empty image name");
	fd = xip_seg_open_path(path, flags);
	if (fd < 0)
		return fd;
	return xip_seg_adopt(fd, path, NULL, XIP_SEGTYPE_NONE, flags, segp);
}

int xip_seg_open_locked(const char *path, int flags, int lock_fd,
			const char *lock_path, struct xip_seg **segp)
{
	char *name = lock_path ? strdup(lock_path) : NULL;
	int fd, ret;

	*segp = NULL;
	if (lock_path && !name) {
		close(lock_fd);
		return xip_error(-ENOMEM, "%s: out of memory", path);
	}
	fd = xip_seg_open_path(path, flags);
	if (fd < 0) {
		close(lock_fd);
		free(name);
		return fd;
	}
	ret = xip_seg_adopt_stat(fd, NULL, lock_fd, path, NULL,
				 XIP_SEGTYPE_NONE, flags & ~XIP_SEG_SHARED,
				 segp);
	if (ret)
		free(name);
	else
		(*segp)->lock_path = name;
	return ret;
}

int xip_seg_open_fd(int fd, const char *path, int flags,
			struct xip_seg **segp)
{
	int dup;

	*segp = NULL;
	if (!path)
		path = "(fd)";
	dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (dup < 0)
		return xip_error(-errno, "%s: %s", path, strerror(errno));
	return xip_seg_adopt(dup, path, NULL, XIP_SEGTYPE_NONE, flags,
				 segp);
}

int xip_seg_fill_wait(struct xip_seg *seg, uint64_t off, uint64_t len)
{
	int ret;

	if (!seg->fill)
		return 0;
	if (xip_fill_complete(seg->fill)) {
		/* one test, then none: the segment is whole */
		xip_fill_close(seg->fill);
		seg->fill = NULL;
		return 0;
	}
	ret = xip_fill_wait(seg->fill, off, len, xip_seg_label(seg));
	return ret;
}

int xip_seg_fill_wait_all(struct xip_seg *seg,
			  void (*progress)(void *arg, uint64_t done,
					   uint64_t total),
			  void *arg)
{
	int ret;

	if (!seg->fill)
		return 0;
	ret = xip_fill_wait_all(seg->fill, xip_seg_label(seg), progress, arg);
	if (!ret) {
		xip_fill_close(seg->fill);
		seg->fill = NULL;
	}
	return ret;
}

void xip_seg_release(struct xip_seg *seg)
{
	if (seg->base)
		XIP_DBG(SEGMENT, "%s: unmapped", seg->path);
	if (seg->base)
		munmap(seg->base, (size_t)seg->size);
	seg->base = NULL;
	seg->copies = false;
	windows_free(seg);
	lockfile_drop(seg);
	xip_fill_close(seg->fill);
	seg->fill = NULL;
	/* neighbours, usually: one system call for both (exec's jump) */
	xip_close_two(seg->fd, seg->lock_fd);
	seg->fd = -1;
	seg->lock_fd = -1;
}

void xip_seg_close(struct xip_seg *seg)
{
	if (!seg)
		return;
	xip_seg_release(seg);
	free(seg->lock_path);
	free(seg->path);
	free(seg->name);
	free(seg);
}

int xip_seg_direct_access(struct xip_seg *seg, uint64_t sector,
			      void **addr)
{
	uint64_t per_page, pgoff;

	if (!seg || seg->gone || (!seg->base && !seg->copies))
		return -ENODEV;
	per_page = seg->page_size / SECTOR_SIZE;
	if (sector % per_page)
		return -EINVAL;
	pgoff = sector / per_page;
	if (pgoff >= seg->size / seg->page_size)
		return -ERANGE;
	if (seg->fill) {
		int ret = xip_seg_fill_wait(seg, pgoff * seg->page_size,
					    seg->page_size);

		if (ret)
			return ret;
	}
	if (!seg->base)
		return window_range(seg, pgoff * seg->page_size,
				    seg->page_size, addr);
	*addr = seg->base + pgoff * seg->page_size;
	return 0;
}

int xip_seg_range(struct xip_seg *seg, uint64_t off, uint64_t len,
		      void **addr)
{
	if (!seg || seg->gone || (!seg->base && !seg->copies))
		return -ENODEV;
	if (off > seg->size || len > seg->size - off)
		return -ERANGE;
	if (seg->fill) {
		int ret = xip_seg_fill_wait(seg, off, len);

		if (ret)
			return ret;
	}
	if (!seg->base)
		return window_range(seg, off, len, addr);
	*addr = seg->base + off;
	return 0;
}

int xip_seg_sync(struct xip_seg *seg)
{
	if (seg && !seg->gone && seg->copies)
		return 0;	/* read-only */
	if (!seg || seg->gone || !seg->base)
		return -ENODEV;
	if (!seg->writable)
		return 0;
	if (msync(seg->base, (size_t)seg->size, MS_SYNC) < 0)
		return xip_error(-errno, "%s: msync: %s", seg->path,
				 strerror(errno));
	if (seg->kind == XIP_SEG_BLOCKDEV && fsync(seg->fd) < 0)
		return xip_error(-errno, "%s: fsync: %s", seg->path,
				 strerror(errno));
	return 0;
}

const char *xip_seg_label(const struct xip_seg *seg)
{
	static XIP_TLS char label[80];	/* "@" and a registry name */

	if (!seg->name)
		return seg->path;
	label[0] = '@';
	snprintf(label + 1, sizeof(label) - 1, "%s", seg->name);
	return label;
}

int xip_seg_lock(struct xip_seg *seg, bool exclusive, int timeout_ms)
{
	int ret;

	if (!seg || seg->fd < 0)
		return -ENODEV;
	/* an exclusive segment type holds LOCK_EX from xip_seg_open() */
	if (xip_seg_type_exclusive(seg->type))
		return 0;
	/* taken at open, and the file was still linked after it */
	if ((!exclusive && seg->held_shared) || (exclusive && seg->held_excl))
		return 0;
	seg->held_shared = seg->held_excl = false;
	if (seg->lock_fd >= 0)
		ret = xip_seg_lockfile_take(&seg->lock_fd, seg->lock_path,
					    exclusive ? LOCK_EX : LOCK_SH,
					    timeout_ms);
	else
		ret = xip_seg_flock_wait(seg->fd, exclusive ? LOCK_EX : LOCK_SH,
					 timeout_ms);
	if (ret == -EWOULDBLOCK)
		return xip_error(-EBUSY,
				 "%s: busy: another xiptool holds it %s",
				 seg->name ? seg->name : seg->path,
				 exclusive ? "open" : "open for writing");
	if (ret)
		return xip_error(ret, "%s: lock: %s", seg->path,
				 strerror(-ret));
	return segment_still_attached(seg);
}

int xip_seg_pin_lock(struct xip_seg *seg)
{
	void *p;

	if (!seg || seg->lock_fd < 0)
		return 0;	/* the segment's own mappings keep it */
	p = mmap(NULL, (size_t)seg->page_size, PROT_NONE, MAP_PRIVATE,
		 seg->lock_fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	/* held on: the lock file is not this holder's to remove */
	free(seg->lock_path);
	seg->lock_path = NULL;
	return 0;
}

int xip_pmem_capable(uint64_t size, unsigned int block_size,
		     unsigned int page_size, char *why, size_t whylen)
{
	if (why && whylen)
		why[0] = '\0';
	if (block_size != page_size) {
		snprintf(why, whylen,
			 "block size %u differs from page size %u: the guest's ext4 refuses DAX",
			 block_size, page_size);
		return 0;
	}
	if (size == 0 || size % XIP_PMEM_ALIGN) {
		snprintf(why, whylen,
			 "size %" PRIu64 " is not a multiple of 2 MiB: the guest's nd_pmem refuses it (attach pads segments)",
			 size);
		return 0;
	}
	return 1;
}

int xip_seg_seal(int fd, bool on)
{
	int flags;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
		return errno == ENOTTY || errno == EINVAL ? -EOPNOTSUPP :
		       -errno;
	flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
	if (ioctl(fd, FS_IOC_SETFLAGS, &flags) < 0)
		return errno == ENOTTY || errno == EINVAL ? -EOPNOTSUPP :
		       -errno;
	return 0;
}

int xip_seg_sealed(int fd)
{
	int flags;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
		return errno == ENOTTY || errno == EINVAL ? 0 : -errno;
	return (flags & FS_IMMUTABLE_FL) != 0;
}

void xip_seg_unseal_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return;
	if (xip_seg_sealed(fd) == 1)
		xip_seg_seal(fd, false);
	close(fd);
}
