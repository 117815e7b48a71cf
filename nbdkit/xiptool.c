// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * nbdkit-xiptool-plugin: serve an XIP image, an attached segment, or one
 * file inside an image over NBD.
 *
 *   nbdkit xiptool image=IMAGE|@NAME [file=PATH] [readonly=true]
 *                  [root-hash=HEX] [trust=PATH]
 *
 * With trust=, the image's root hash signature (the block after its
 * tree) is checked against the certificates of the trust store PATH
 * first, and the root hash it signs is the one the check below holds
 * every block to (a root-hash= given too must be that one).
 * With root-hash=, the image (or segment) is checked against its
 * dm-verity tree and that root hash before the first client, every data
 * and hash block, and served read-only; a mismatch stops the server from
 * starting, naming the first bad block.  As with attach --root-hash, the
 * export must end where the tree ends: bytes after it are refused, not
 * served unchecked.  The check holds only while the bytes stay as they
 * were: the image is held against writers first, as a read-only file=
 * export holds it (below), and a writer that comes later ends the export.
 *
 * The plugin is a user of libxip like the xiptool commands: it opens the
 * segment or image once, before the first client (.get_ready), with the
 * same holder locks (shared for a read-only export, exclusive for a
 * writable one), and serves requests from several threads at once.  The
 * bytes move with pread/pwrite on the segment's descriptor at the offsets
 * the engine gives (xip_file_runs); a file's holes read as zeros and are
 * reported by .extents.  Nothing here touches libext2fs after
 * .get_ready, so requests run in parallel.
 *
 * A writable whole export hands the file system to the client: the plugin
 * holds the exclusive lock and the image's loop devices (no local mount
 * meanwhile) but leaves the superblock alone; the client's own driver
 * follows ext2's clean-flag protocol.  A writable file= export writes
 * only inside the file's blocks, while the image is open for writing
 * (marked not clean until the server stops).
 *
 * A read-only file= export serves the runs of blocks the file had at
 * .get_ready: once the image changes, those blocks may belong to another
 * file.  xiptool's writers respect the shared lock, but a loop device
 * bound later (and a kernel mount on it) does not; re-reading the runs
 * would not help either, as a mount writes data and inodes back in any
 * order.  So the export holds a read lease (F_SETLEASE) on the image
 * file: nothing may have it open for writing when the export starts, and
 * any later open for writing or truncate (losetup, mount -o loop, an
 * editor, xiptool) breaks the lease first.  The break signal ends the
 * export: reads in flight finish, every later read or block status
 * fails with EIO, and then the lease is given back so that the writer's
 * open goes on.  A block device is held exclusively (O_EXCL) instead, so
 * that the kernel cannot mount it meanwhile; for root-hash= it must also
 * be read-only (BLKROGET), as a direct writer of the device is not seen.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "util/xip_util.h"
#include "xip.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL
#define LOCK_TIMEOUT_MS 5000
#define SB_OFFSET 1024
#define WATCH_JOIN_SECONDS 5

/* Parameters. */
static char *image;		/* image=: a path or @NAME */
static char *file;		/* file=: a path inside the image */
static uint8_t root_hash[XIP_VERITY_DIGEST_MAX];	/* root-hash= */
static size_t root_hash_len;
static char *trust;		/* trust=: the root hash a signature signs */
static int readonly = -1;	/* readonly=: -1 when not given */

/* The export, set up by .get_ready. */
static struct xip_seg *seg;	/* the segment (the image's, for file=) */
static struct xip_image *img;	/* file= only */
static bool writable;
static uint64_t size;
static unsigned int block_size;
static struct xip_run *runs;	/* file=: the file's runs, checked */
static size_t nruns;
static int *claims;		/* whole writable export: loop devices */
static size_t nclaims;

/* Read-only file= export: the image's lease (see the top). */
static int lease_fd = -1;	/* the segment's descriptor, leased */
static volatile sig_atomic_t lease_broken;
static volatile sig_atomic_t lease_stop;	/* the export ends */
static int lease_pipe[2] = { -1, -1 };	/* wakes the watcher */
static pthread_t lease_thread;
static bool lease_watching;
static pthread_rwlock_t serve_lock;	/* reads: shared; the end: exclusive */
static int device_claim = -1;	/* read-only file= of a block device */

/*
 * A lazy segment still filling (attach --lazy): the plugin holds its fill
 * state, taken from the segment once the export is ready, so that no
 * thread of the parallel model closes it under another.  A request whose
 * blocks have all landed is served at once; one that needs a block waits
 * for it (one waiter at a time asks the filler: the state's request
 * socket is not shared between threads).
 */
static struct xip_fill *fill;
static pthread_mutex_t fill_lock = PTHREAD_MUTEX_INITIALIZER;

static void lease_end(void);
static int hold_image(void);

/* Close the image or segment and let go of the locks and devices. */
static void release(void)
{
	int ret;

	lease_end();
	if (device_claim >= 0)
		close(device_claim);
	device_claim = -1;
	xip_fill_close(fill);
	fill = NULL;

	if (img) {
		/* writers: flushed and marked clean again */
		ret = xip_image_close(img);
		if (ret)
			nbdkit_error("%s: %s", image, xip_errmsg());
		img = NULL;
	} else if (seg) {
		if (xip_seg_sync(seg))
			nbdkit_error("%s: %s", image, xip_errmsg());
		xip_seg_close(seg);
	}
	seg = NULL;
	xip_loop_release_claims(claims, nclaims);
	claims = NULL;
	nclaims = 0;
	free(runs);
	runs = NULL;
	nruns = 0;
}

static void plugin_unload(void)
{
	release();
	free(image);
	free(file);
	free(trust);
}

static int plugin_config(const char *key, const char *value)
{
	char **dst;

	if (!strcmp(key, "image") || !strcmp(key, "file")) {
		dst = !strcmp(key, "image") ? &image : &file;
		if (*dst) {
			nbdkit_error("%s given twice", key);
			return -1;
		}
		if (!*value) {
			nbdkit_error("%s: empty value", key);
			return -1;
		}
		/* nbdkit changes directory when it goes to the background */
		if (dst == &image && value[0] != '@')
			*dst = nbdkit_absolute_path(value);
		else
			*dst = strdup(value);
		if (!*dst) {
			nbdkit_error("%s: out of memory", key);
			return -1;
		}
		return 0;
	}
	if (!strcmp(key, "root-hash")) {
		int n = xip_hex_decode(value, root_hash,
					     sizeof(root_hash));

		if (n < 0 || root_hash_len) {
			nbdkit_error("root-hash=%s: %s", value, n < 0 ?
				     "not a hash in hex digits" : "given twice");
			return -1;
		}
		root_hash_len = (size_t)n;
		return 0;
	}
	if (!strcmp(key, "trust")) {
		if (trust || !*value) {
			nbdkit_error("trust=%s: %s", value,
				     trust ? "given twice" : "empty value");
			return -1;
		}
		/* nbdkit changes directory when it goes to the background */
		trust = nbdkit_absolute_path(value);
		return trust ? 0 : -1;
	}
	if (!strcmp(key, "readonly")) {
		readonly = nbdkit_parse_bool(value);
		return readonly < 0 ? -1 : 0;
	}
	nbdkit_error("unknown parameter '%s' (image=, file=, readonly=, root-hash=, trust=)", key);
	return -1;
}

static int plugin_config_complete(void)
{
	if (!image) {
		nbdkit_error("the image parameter is required: image=IMAGE or image=@NAME");
		return -1;
	}
	if ((root_hash_len || trust) && readonly == 0) {
		nbdkit_error("%s serves a verified image read-only: not with readonly=false",
			     trust ? "trust=" : "root-hash=");
		return -1;
	}
	if (root_hash_len || trust)
		readonly = 1;
	if (file && file[0] != '/') {
		nbdkit_error("file=%s: a path inside the image starts with /",
			     file);
		return -1;
	}
	return 0;
}

/* The image's block size from its superblock, else the page size. */
static unsigned int whole_block_size(void)
{
	const struct ext2_super_block *sb;
	void *p;

	if (!xip_seg_range(seg, SB_OFFSET, sizeof(*sb), &p)) {
		sb = p;
		uint32_t log = le32toh(sb->s_log_block_size);

		/* little-endian on disk, whatever the host */
		if (le16toh(sb->s_magic) == EXT2_SUPER_MAGIC &&
		    log <= EXT2_MAX_BLOCK_LOG_SIZE - EXT2_MIN_BLOCK_LOG_SIZE)
			return EXT2_MIN_BLOCK_SIZE << log;
	}
	return seg->page_size;
}

/* Open the segment writable when the image, its type and readonly= allow. */
static int open_segment(void)
{
	int ret = -EROFS;

	if (readonly != 1) {
		ret = xip_spec_open(image, XIP_SEG_WRITE, &seg);
		if (ret == -EROFS && readonly == -1)
			nbdkit_debug("%s: %s: serving read-only", image,
				     xip_errmsg());
	}
	if (ret == -EROFS && readonly != 0)
		ret = xip_spec_open(image, 0, &seg);
	if (ret)
		return ret;
	writable = seg->writable;
	return 0;
}

static int ready_whole(void)
{
	int ret = xip_seg_lock(seg, writable, LOCK_TIMEOUT_MS);

	if (!ret)
		ret = hold_image();
	if (!ret && writable)
		ret = xip_loop_claim_backing(seg->fd, seg->path, &claims,
					     &nclaims);
	if (ret)
		return ret;
	/* an attached segment's data, as list and save see it */
	size = seg->data_size;
	block_size = whole_block_size();
	return 0;
}

/* ---- the read lease of a read-only file= or root-hash= export -------- */

/* What the export serves, for the messages about its end. */
static const char *served(void)
{
	return file ? file : "the verified image";
}

static void on_lease_break(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	if (lease_fd >= 0 && si->si_fd == lease_fd) {
		lease_broken = 1;
		if (lease_pipe[1] >= 0)
			(void)!write(lease_pipe[1], "", 1);
	}
	errno = saved;
}

/*
 * The lease, before the file's runs are read: refused while anything has
 * the image open for writing.  Its break signal (SIGIO, with the
 * descriptor in si_fd) is caught from now on.
 */
static int lease_take(void)
{
	struct sigaction sa;
	pthread_rwlockattr_t attr;

	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr,
			PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&serve_lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_lease_break;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGIO, &sa, NULL);
	lease_fd = seg->fd;
	if (fcntl(lease_fd, F_SETSIG, SIGIO) == 0 &&
	    fcntl(lease_fd, F_SETLEASE, F_RDLCK) == 0)
		return 0;
	lease_fd = -1;
	if (errno == EAGAIN)
		return xip_error(-EBUSY,
				 "%s: open for writing elsewhere (a loop device bound read-write, a writer): %s needs every writer gone",
				 image, file ? "a read-only file= export" :
				 "root-hash=");
	return xip_error(-errno,
			 "%s: cannot take a read lease: %s (%s needs the image's owner or CAP_LEASE)",
			 image, strerror(errno),
			 file ? "a file= export" : "root-hash=");
}

/*
 * The lease was broken: no read may start from now on; the ones in
 * flight end before the lease is given back and the writer goes on.
 */
static void lease_revoke(void)
{
	pthread_rwlock_wrlock(&serve_lock);
	/* logged before the writer goes on: its open returns after this */
	nbdkit_error("%s: opened for writing by another process: %s is no longer served (its blocks may change)",
		     image, served());
	fcntl(lease_fd, F_SETLEASE, F_UNLCK);
	pthread_rwlock_unlock(&serve_lock);
}

static void *lease_watch(void *arg)
{
	struct f_owner_ex owner = { F_OWNER_TID, gettid() };
	char c;

	/* the break signal to this thread, not to nbdkit's */
	fcntl(lease_fd, F_SETOWN_EX, &owner);
	/* broken before (nbdkit forked since: the signal went elsewhere) */
	if (fcntl(lease_fd, F_GETLEASE) != F_RDLCK)
		lease_broken = 1;
	while (!lease_broken && !lease_stop) {
		ssize_t n = read(lease_pipe[0], &c, 1);

		if (n == 0 || (n < 0 && errno != EINTR))
			return NULL;
	}
	if (lease_broken && !lease_stop)
		lease_revoke();
	return NULL;
}

/* Is the export still valid?  Takes the shared lock when it is. */
static int lease_enter(void)
{
	if (lease_fd < 0)
		return 0;
	pthread_rwlock_rdlock(&serve_lock);
	if (!lease_broken)
		return 0;
	pthread_rwlock_unlock(&serve_lock);
	nbdkit_error("%s: %s is no longer served: the image was opened for writing",
		     image, served());
	nbdkit_set_error(EIO);
	return -1;
}

static void lease_leave(void)
{
	if (lease_fd >= 0)
		pthread_rwlock_unlock(&serve_lock);
}

/*
 * The watcher is told to stop, not left to see the pipe's end: a process
 * nbdkit forked (the parent that runs --run's command) may hold a copy of
 * any descriptor.  It ends at once; a watcher that does not is left
 * behind with its lock rather than waited for.
 */
static int lease_watch_stop(void)
{
	struct timespec deadline;
	int err;

	lease_stop = 1;
	(void)!write(lease_pipe[1], "", 1);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += WATCH_JOIN_SECONDS;
	err = pthread_timedjoin_np(lease_thread, NULL, &deadline);
	lease_watching = false;
	if (!err)
		return 0;
	nbdkit_error("%s: the lease watcher did not end within %d s: %s",
		     image, WATCH_JOIN_SECONDS, strerror(err));
	pthread_detach(lease_thread);
	return -1;
}

static void lease_end(void)
{
	bool joined = true;

	if (lease_watching)
		joined = lease_watch_stop() == 0;
	if (lease_fd >= 0) {
		fcntl(lease_fd, F_SETLEASE, F_UNLCK);
		if (joined)
			pthread_rwlock_destroy(&serve_lock);
	}
	if (!joined) {
		/* still the watcher's: left open */
		lease_fd = -1;
		return;
	}
	lease_fd = -1;
	for (int i = 0; i < 2; i++) {
		if (lease_pipe[i] >= 0)
			close(lease_pipe[i]);
		lease_pipe[i] = -1;
	}
}

/* Nobody mounts a block device while its file is served read-only. */
static int device_hold(void)
{
	char self[64];

	snprintf(self, sizeof(self), "/proc/self/fd/%d", seg->fd);
	device_claim = open(self, O_RDONLY | O_EXCL | O_CLOEXEC);
	if (device_claim < 0 && errno == EBUSY)
		return xip_error(-EBUSY,
				 "%s: in use by the kernel (mounted or claimed)",
				 image);
	if (device_claim < 0)
		return xip_error(-errno, "%s: %s", image, strerror(errno));
	return 0;
}

/* root-hash=: a device whose bytes nobody may change while it is served. */
static int device_read_only(void)
{
	int ro = 0;

	if (seg->kind == XIP_SEG_DAX)
		return xip_error(-EPERM,
				 "%s: a DAX device cannot be held against writers: root-hash= serves files, segments and read-only block devices",
				 image);
	if (seg->kind != XIP_SEG_BLOCKDEV)
		return 0;
	if (ioctl(seg->fd, BLKROGET, &ro) < 0)
		return xip_error(-errno, "%s: %s", image, strerror(errno));
	if (!ro)
		return xip_error(-EPERM,
				 "%s: a writable block device may change after the check: root-hash= needs it read-only (losetup -r, blockdev --setro)",
				 image);
	return 0;
}

/*
 * A read-only export whose bytes must stay as they were read (file=: the
 * file's runs; root-hash=: the checked bytes) holds the image against
 * writers before it reads them: they hold while it holds.
 */
static int hold_image(void)
{
	int ret = 0;

	if (writable || (!file && !root_hash_len && !trust))
		return 0;
	if (root_hash_len || trust)
		ret = device_read_only();
	if (!ret && (seg->kind == XIP_SEG_FILE || seg->kind == XIP_SEG_SHM))
		ret = lease_take();
	else if (!ret && seg->kind == XIP_SEG_BLOCKDEV)
		ret = device_hold();
	return ret;
}

static int ready_file(void)
{
	struct ext2_inode_large inode;
	int ret;

	ret = hold_image();
	if (ret) {
		xip_seg_close(seg);
		seg = NULL;
		return ret;
	}
	ret = xip_image_open_segment(seg, writable ? XIP_IMG_WRITE : 0, &img);
	seg = NULL;			/* the image owns it now */
	if (ret)
		return ret;
	seg = xip_image_seg(img);
	block_size = xip_image_block_size(img);
	ret = xip_file_runs_path(img, file, &inode, &runs, &nruns);
	if (!ret)
		ret = xip_nbd_runs_check(runs, nruns, block_size, seg->size,
					 file);
	/* a writer for as long as it serves, like a read-write mount */
	if (!ret && writable)
		ret = xip_image_begin_change(img);
	size = EXT2_I_SIZE(&inode);
	return ret;
}

/*
 * trust=: the image's signature (after its tree) checked against the
 * trust store, over the root hash of the tree's top block: that signed
 * root hash is the one every block is held to (root-hash=, when given
 * too, must be it).
 */
static int signed_root(uint8_t *root, size_t *root_len)
{
	char signer[256], hex[2 * XIP_VERITY_DIGEST_MAX + 1];
	int ret;

	ret = xip_verity_sig_verify_image(seg->base, seg->data_size, trust,
					  root, root_len, signer,
					  sizeof(signer));
	if (!ret && root_hash_len &&
	    (root_hash_len != *root_len ||
	     memcmp(root_hash, root, *root_len))) {
		xip_hex_encode(root, *root_len, hex);
		ret = xip_error(-EKEYREJECTED,
				"root-hash= is not the signed root hash (%s)",
				hex);
	}
	if (!ret)
		nbdkit_debug("%s: signature verified, signer %s", image,
			     signer);
	return ret;
}

/* root-hash=, trust=: every block of the image against its tree. */
static int ready_verify(void)
{
	uint8_t signed_hash[XIP_VERITY_DIGEST_MAX];
	const uint8_t *root = root_hash;
	size_t root_len = root_hash_len;
	struct xip_root_hash_report r;
	char msg[XIP_ERRMSG_MAX];
	uint64_t end;
	int ret = 0;

	if (trust) {
		ret = signed_root(signed_hash, &root_len);
		root = signed_hash;
	}
	if (!ret)
		ret = xip_root_hash_check(seg, root, root_len, &r);
	if (ret) {
		snprintf(msg, sizeof(msg), "%s", xip_errmsg());
		return xip_error(ret, "%s: %s", image, msg);
	}
	/* what attach --root-hash refuses is not served either */
	end = xip_verity_image_end(seg->base, seg->data_size, &r.info);
	if (end != seg->data_size)
		return xip_error(-EBADMSG,
				 "%s: %" PRIu64 " bytes after the verity tree (it ends at %" PRIu64 ")",
				 image, seg->data_size - end, end);
	/* a writer came while it was read: what was checked is gone */
	if (lease_fd >= 0 && fcntl(lease_fd, F_GETLEASE) != F_RDLCK)
		return xip_error(-EBUSY,
				 "%s: opened for writing while it was checked",
				 image);
	nbdkit_debug("%s: every block matches the root hash", image);
	return 0;
}

static int plugin_get_ready(void)
{
	int ret = open_segment();

	if (!ret)
		ret = file ? ready_file() : ready_whole();
	/* the check of root-hash= and trust= reads every byte: all landed */
	if (!ret && (root_hash_len || trust))
		ret = xip_seg_fill_wait_all(seg, NULL, NULL);
	if (!ret && (root_hash_len || trust))
		ret = ready_verify();
	if (!ret) {
		fill = seg->fill;
		seg->fill = NULL;
	}
	if (ret) {
		const char *m = xip_errmsg();

		if (m && *m)
			nbdkit_error("%s", m);
		else
			nbdkit_error("%s: %s", image, strerror(-ret));
		/* a writer's image is marked clean again at once */
		release();
		return -1;
	}
	nbdkit_debug("%s%s%s: %" PRIu64 " bytes, %s, block size %u", image,
		     file ? " " : "", file ? file : "", size,
		     writable ? "writable" : "read-only", block_size);
	return 0;
}

/*
 * The watcher of the lease: a thread, so after nbdkit's forks, and its
 * pipe too, so that no other process holds it.
 */
static int plugin_after_fork(void)
{
	int err;

	if (lease_fd < 0)
		return 0;
	if (pipe2(lease_pipe, O_CLOEXEC) < 0) {
		nbdkit_error("%s: pipe: %s", image, strerror(errno));
		return -1;
	}
	err = pthread_create(&lease_thread, NULL, lease_watch, NULL);
	if (err) {
		nbdkit_error("%s: cannot start the lease watcher: %s", image,
			     strerror(err));
		return -1;
	}
	lease_watching = true;
	return 0;
}

static void *plugin_open(int ro)
{
	return NBDKIT_HANDLE_NOT_NEEDED;
}

static int64_t plugin_get_size(void *handle)
{
	return (int64_t)size;
}

static int plugin_block_size(void *handle, uint32_t *minimum,
			     uint32_t *preferred, uint32_t *maximum)
{
	*minimum = 1;
	*preferred = block_size;
	*maximum = 0xffffffff;
	return 0;
}

static int plugin_can_write(void *handle)
{
	return writable;
}

static int plugin_can_flush(void *handle)
{
	return 1;
}

static int plugin_can_fua(void *handle)
{
	return writable ? NBDKIT_FUA_NATIVE : NBDKIT_FUA_NONE;
}

static int plugin_can_multi_conn(void *handle)
{
	return !writable;
}

static int plugin_can_zero(void *handle)
{
	return 1;
}

static int plugin_can_extents(void *handle)
{
	return img != NULL;
}

static int fail(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(int err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	nbdkit_error("%s", msg);
	nbdkit_set_error(err);
	return -1;
}

/* The failed transfer of xip_seg_pread() and the like, to the client. */
static int seg_failed(int ret, const char *what, uint64_t off)
{
	if (ret == -ERANGE)
		return fail(EIO, "%s: %s past the end of the segment, or the segment is gone",
			    image, what);
	return fail(-ret, "%s: %s at %" PRIu64 ": %s", image, what, off,
		    strerror(-ret));
}

/*
 * A lazy segment's bytes [@off, @off + @len) have landed, or this waits
 * for them: never serve a byte the filler has not brought and checked.
 */
static int fill_wait(uint64_t len, uint64_t off)
{
	uint64_t first = off / XIP_FILL_BLOCK, n;
	int ret;

	if (!fill || !len || xip_fill_complete(fill))
		return 0;
	n = (off + len - 1) / XIP_FILL_BLOCK + 1 - first;
	if (xip_fill_missing(fill, first, n) == first + n)
		return 0;
	pthread_mutex_lock(&fill_lock);
	ret = xip_fill_wait(fill, off, len, image);
	pthread_mutex_unlock(&fill_lock);
	if (ret)
		return fail(-ret, "%s", xip_errmsg());
	return 0;
}

/* @len bytes at segment offset @off, checked against the segment. */
static int seg_read(void *buf, uint64_t len, uint64_t off)
{
	int ret = fill_wait(len, off);

	if (ret)
		return ret;
	ret = xip_seg_pread(seg, off, buf, len);

	return ret ? seg_failed(ret, "read", off) : 0;
}

static int seg_write(const void *buf, uint64_t len, uint64_t off)
{
	int ret = xip_seg_pwrite(seg, off, buf, len);

	return ret ? seg_failed(ret, "write", off) : 0;
}

static int seg_zero(uint64_t len, uint64_t off)
{
	int ret = xip_seg_zero(seg, off, len);

	return ret ? seg_failed(ret, "zero", off) : 0;
}

/* FUA: msync the pages written (the whole segment for flush). */
static int seg_sync(uint64_t len, uint64_t off)
{
	uint64_t page = seg->page_size, start = round_down(off, page);

	if (!writable)
		return 0;
	if (!len) {
		if (xip_seg_sync(seg))
			return fail(EIO, "%s", xip_errmsg());
		return 0;
	}
	if (msync(seg->base + start, (size_t)(off + len - start), MS_SYNC) < 0)
		return fail(errno, "%s: msync: %s", image, strerror(errno));
	if (seg->kind == XIP_SEG_BLOCKDEV && fdatasync(seg->fd) < 0)
		return fail(errno, "%s: fsync: %s", image, strerror(errno));
	return 0;
}

static int plugin_pread(void *handle, void *buf, uint32_t count,
			uint64_t offset, uint32_t flags)
{
	struct xip_nbd_piece p;
	uint8_t *b = buf;

	int ret = 0;

	if (lease_enter())
		return -1;
	if (!img) {
		ret = seg_read(buf, count, offset);
		count = 0;
	}
	while (count && !ret) {
		xip_nbd_piece(runs, nruns, block_size, offset, count, &p);
		if (p.hole)
			memset(b, 0, p.len);
		else
			ret = seg_read(b, p.len, p.seg_off);
		b += p.len;
		offset += p.len;
		count -= (uint32_t)p.len;
	}
	lease_leave();
	return ret;
}

/*
 * A file export writes inside the file's blocks only: allocating would
 * change the image's metadata under the readers' feet.  Check the whole
 * request first, so that a refused write changes nothing.
 */
static int file_check_allocated(uint64_t offset, uint32_t count)
{
	struct xip_nbd_piece p;

	while (count) {
		xip_nbd_piece(runs, nruns, block_size, offset, count, &p);
		if (p.hole)
			return fail(ENOSPC,
				    "%s: write into a hole at byte %" PRIu64
				    ": only the file's allocated blocks can be written over NBD",
				    file, offset);
		offset += p.len;
		count -= (uint32_t)p.len;
	}
	return 0;
}

static int plugin_pwrite(void *handle, const void *buf, uint32_t count,
			 uint64_t offset, uint32_t flags)
{
	struct xip_nbd_piece p;
	const uint8_t *b = buf;
	uint64_t off = offset;
	uint32_t left = count;

	if (!img) {
		if (seg_write(buf, count, offset))
			return -1;
		return (flags & NBDKIT_FLAG_FUA) ? seg_sync(count, offset) : 0;
	}
	if (file_check_allocated(offset, count))
		return -1;
	while (left) {
		xip_nbd_piece(runs, nruns, block_size, off, left, &p);
		if (seg_write(b, p.len, p.seg_off))
			return -1;
		if ((flags & NBDKIT_FLAG_FUA) && seg_sync(p.len, p.seg_off))
			return -1;
		b += p.len;
		off += p.len;
		left -= (uint32_t)p.len;
	}
	return 0;
}

static int plugin_zero(void *handle, uint32_t count, uint64_t offset,
		       uint32_t flags)
{
	struct xip_nbd_piece p;

	if (!img) {
		if (seg_zero(count, offset))
			return -1;
		return (flags & NBDKIT_FLAG_FUA) ? seg_sync(count, offset) : 0;
	}
	/* a hole reads as zeros already */
	while (count) {
		xip_nbd_piece(runs, nruns, block_size, offset, count, &p);
		if (!p.hole && seg_zero(p.len, p.seg_off))
			return -1;
		if (!p.hole && (flags & NBDKIT_FLAG_FUA) &&
		    seg_sync(p.len, p.seg_off))
			return -1;
		offset += p.len;
		count -= (uint32_t)p.len;
	}
	return 0;
}

static int plugin_flush(void *handle, uint32_t flags)
{
	return seg_sync(0, 0);
}

static int plugin_extents(void *handle, uint32_t count, uint64_t offset,
			  uint32_t flags, struct nbdkit_extents *extents)
{
	struct xip_nbd_piece p;
	int ret = 0;

	if (lease_enter())
		return -1;
	while (count) {
		xip_nbd_piece(runs, nruns, block_size, offset, count, &p);
		ret = nbdkit_add_extent(extents, offset, p.len,
					p.hole ? NBDKIT_EXTENT_HOLE |
					NBDKIT_EXTENT_ZERO : 0);
		if (ret < 0 || (flags & NBDKIT_FLAG_REQ_ONE))
			break;
		offset += p.len;
		count -= (uint32_t)p.len;
	}
	lease_leave();
	return ret < 0 ? -1 : 0;
}

static void plugin_dump(void)
{
	printf("xiptool_version=%s\n", PACKAGE_VERSION);
}

#define CONFIG_HELP \
	"image=IMAGE|@NAME  (required) the image file, device or attached segment.\n" \
	"file=PATH          serve this regular file inside the image.\n" \
	"readonly=BOOL      never write (share the segment with other readers).\n" \
	"root-hash=HEX      serve only an image whose dm-verity tree matches HEX."

static struct nbdkit_plugin plugin = {
	.name = "xiptool",
	.longname = "nbdkit xiptool plugin",
	.version = PACKAGE_VERSION,
	.description = "Serve XIP images, attached segments and files inside them",
	.unload = plugin_unload,
	.config = plugin_config,
	.config_complete = plugin_config_complete,
	.config_help = CONFIG_HELP,
	.magic_config_key = "image",
	.get_ready = plugin_get_ready,
	.after_fork = plugin_after_fork,
	.dump_plugin = plugin_dump,
	.open = plugin_open,
	.get_size = plugin_get_size,
	.block_size = plugin_block_size,
	.can_write = plugin_can_write,
	.can_flush = plugin_can_flush,
	.can_fua = plugin_can_fua,
	.can_multi_conn = plugin_can_multi_conn,
	.can_zero = plugin_can_zero,
	.can_extents = plugin_can_extents,
	.pread = plugin_pread,
	.pwrite = plugin_pwrite,
	.zero = plugin_zero,
	.flush = plugin_flush,
	.extents = plugin_extents,
	.errno_is_preserved = 0,
};

NBDKIT_REGISTER_PLUGIN(plugin)
