// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A lazy attach (attach --lazy nbd://...): the attach returns once the
 * superblock, the group descriptors, the inode tables and every directory
 * are in the segment (and, with a root hash, the whole tree, checked from
 * the root down); a filler, one small process per segment, pulls the rest:
 * first the runs readers ask for, then everything in order, each block
 * checked against the tree before it is written and marked landed
 * (lib/segment/fill.c has the state readers wait on).
 *
 * The filler is the attach's grandchild (a double fork, in a session of
 * its own, descriptors 0-2 on /dev/null), named xiptool-fill, owned by the
 * attaching user.  It holds the exclusive flock of the fill state file as
 * long as it runs: when it dies the lock goes, and readers see the
 * segment failed.  SIGTERM stops it: the segment turns failed.  Once the
 * fill completes it records the segment as whole (the record's lazy flag
 * cleared; a verified segment sealed and its seal recorded).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach/xip_attach.h"
#include "attach/attach_int.h"
#include "attach/nbd_int.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"
#include "segment/xip_fill.h"
#include "segment/xip_segment.h"
#include "verity/xip_verity.h"
#include "registry/xip_registry.h"
#include "reader/xip_image.h"
#include "reader/xip_reader.h"

static volatile sig_atomic_t filler_stop;
static int filler_pipe[2] = { -1, -1 };

static void filler_on_stop(int sig)
{
	int saved = errno;

	filler_stop = sig;
	if (filler_pipe[1] >= 0)
		(void)!write(filler_pipe[1], "", 1);
	errno = saved;
}

/* The filler's own stop: SIGTERM; the terminal's signals are not its. */
static void filler_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = filler_on_stop;
	sigemptyset(&sa.sa_mask);
	if (pipe2(filler_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		filler_pipe[0] = filler_pipe[1] = -1;
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	xip_set_interrupt(&filler_stop);
	xip_set_interrupt_fd(filler_pipe[0]);
}

/*
 * The fill is complete: record the segment as whole, when its record is
 * still this segment's (a detach may have come first).
 */
static void filler_commit(const struct xip_seg_entry *e, int segfd,
			  bool verified)
{
	struct xip_seg_entry *cur;
	enum xip_entry_state state;
	struct stat st;

	if (verified && xip_seg_seal(segfd, true))
		return;
	if (xip_registry_lock_new(&cur))
		return;
	if (!xip_registry_read(e->name, cur, &state, false) &&
	    state == XIP_ENTRY_LIVE && cur->seg_ino == e->seg_ino &&
	    cur->seg_dev == e->seg_dev) {
		cur->lazy = false;
		if (verified && fstat(segfd, &st) == 0) {
			cur->verified = true;
			cur->seal_ctime = (uint64_t)st.st_ctim.tv_sec *
						  1000000000u +
					  (uint64_t)st.st_ctim.tv_nsec;
		}
		xip_registry_store(cur, 0);
	}
	xip_registry_unlock();
	free(cur);
}

/* The filler: pull the rest, then say how it ended.  Never returns. */
static void filler_run(const struct xip_attach_opts *o, struct segfile *sf,
		       struct xip_fill *fill, int sock,
		       struct xip_verity_stream *vs,
		       const struct xip_seg_entry *e, uint64_t size)
{
	struct xip_nbd *n = NULL;
	uint64_t got = 0, bad = UINT64_MAX;
	int ret, null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		if (null > 2)
			close(null);
	}
	prctl(PR_SET_NAME, "xiptool-fill");
	filler_signals();
	((struct xip_fill_hdr *)xip_fill_header(fill))->pid = getpid();
	ret = xip_nbd_open(o->image, o->timeout_ms, &n, &got);
	if (!ret && got != size)
		ret = xip_error(-ESTALE, "%s: the export changed size (%" PRIu64 " bytes, then %" PRIu64 ")",
				o->image, size, got);
	if (!ret)
		ret = xip_nbd_pull_lazy(n, sf->fd, sf->align, e->path, fill,
					sock, vs, &bad);
	xip_nbd_close(n);
	if (!ret && fallocate(sf->fd, 0, 0, (off_t)sf->cap) < 0 &&
	    errno != EOPNOTSUPP)
		ret = xip_error(-errno, "%s: cannot reserve memory: %s",
				e->path, strerror(errno));
	if (ret) {
		xip_fill_end(fill, XIP_FILL_FAILED, bad,
			     ret == -EINTR ? "the filler was stopped" :
					     xip_errmsg());
		_exit(3);
	}
	filler_commit(e, sf->fd, vs != NULL);
	xip_fill_end(fill, XIP_FILL_COMPLETE, UINT64_MAX, NULL);
	_exit(0);
}

/*
 * Start the filler: a grandchild, so that no process waits for it.  The
 * fill state's lock is taken here, before the fork: the filler holds it
 * from its first instant, and the attach lets go of its own descriptor.
 */
static int filler_start(const struct xip_attach_opts *o, struct segfile *sf,
			struct xip_fill *fill, int fillfd, int sock,
			struct xip_verity_stream *vs,
			const struct xip_seg_entry *e, uint64_t size)
{
	pid_t pid;
	int status;

	if (flock(fillfd, LOCK_EX | LOCK_NB) < 0)
		return xip_error(-errno, "@%s: fill state: lock: %s", e->name,
				 strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return xip_error(-errno, "fork: %s", strerror(errno));
	if (pid == 0) {
		setsid();
		if (sf->lock_fd >= 0)
			close(sf->lock_fd);	/* the attach's claim */
		if (fork() != 0)
			_exit(0);
		filler_run(o, sf, fill, sock, vs, e, size);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return 0;
}

void xip_attach_lazy_stop(const struct xip_seg_entry *e)
{
	struct xip_fill *f;
	pid_t pid;
	int fd = xip_registry_fill_open(e, false), lockfd;

	if (fd < 0 || (lockfd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0 ||
	    xip_fill_open(lockfd, &f)) {
		if (fd >= 0)
			close(fd);
		xip_error_clear();
		return;
	}
	pid = xip_fill_header(f)->pid;
	/* its lock held: the pid is the filler's, not a later process's */
	if (pid > 0 && flock(fd, LOCK_SH | LOCK_NB) < 0) {
		kill(pid, SIGTERM);
		xip_seg_flock_wait(fd, LOCK_SH, XIP_LOCK_WAIT_MS);
	}
	close(fd);
	xip_fill_close(f);
	xip_error_clear();
}

int xip_attach_lazy_wait(const struct xip_seg_entry *e)
{
	struct xip_fill *f;
	char what[XIP_SEG_NAME_MAX + 2];
	int fd, ret;

	if (!e->lazy)
		return 0;
	fd = xip_registry_fill_open(e, false);
	if (fd < 0)
		return xip_error(-EIO, "@%s: lazy segment without its fill state: the attach or its filler died",
				 e->name);
	ret = xip_fill_open(fd, &f);
	if (ret) {
		close(fd);
		return ret;
	}
	snprintf(what, sizeof(what), "@%s", e->name);
	ret = xip_fill_wait_all(f, what, NULL, NULL);
	xip_fill_close(f);
	return ret;
}

/* Wait for the filler's pid in the header (its first step). */
static void filler_wait_pid(struct xip_fill *f)
{
	struct timespec ts = { 0, 1000000 };

	for (int i = 0; i < 5000 && !xip_fill_header(f)->pid; i++)
		nanosleep(&ts, NULL);
}

/*
 * The tree (with a root hash): the verity superblock's block to the end
 * of the image, read at once, checked from the root down, written and
 * marked landed; then the first block, checked against the tree and
 * against the superblock read ahead.
 */
static int pull_tree(const struct xip_attach_opts *o, struct segfile *sf,
		     struct xip_nbd *nbd, struct xip_verity_stream *vs,
		     struct xip_fill *fill, uint64_t size)
{
	const struct xip_verity_info *vi = xip_verity_stream_info(vs);
	uint64_t from = vi->hash_offset, len = size - from;
	struct xip_verity_bad bad;
	struct xip_verity_sig sig;
	const uint8_t *head;
	size_t head_len;
	uint8_t *buf;
	int ret;

	if (from % XIP_FILL_BLOCK || vi->hash_block_size != XIP_FILL_BLOCK ||
	    vi->end > size)
		return xip_error(-EOPNOTSUPP,
				 "%s: a lazy attach needs a tree of 4096-byte blocks after the file system",
				 o->image);
	buf = malloc(len > XIP_FILL_BLOCK ? len : XIP_FILL_BLOCK);
	if (!buf)
		return xip_error(-ENOMEM, "out of memory");
	ret = xip_nbd_pread(nbd, buf, len, from);
	if (!ret)
		ret = xip_verity_stream_tree(vs, buf, o->root_hash,
					     o->root_hash_len, &bad);
	/* after the tree, a signature block or nothing */
	if (!ret && size > vi->end) {
		uint64_t at = round_up(vi->end, XIP_VERITY_SIG_ALIGN);

		ret = at >= size ? -EUCLEAN :
		      xip_verity_sig_parse(buf + (at - from), size - at, &sig);
		if (!ret && (!sig.present || sig.end != size - at))
			ret = -EUCLEAN;
		if (ret)
			ret = xip_error(-EUCLEAN,
					"%" PRIu64 " bytes after the verity tree (it ends at %" PRIu64 ")",
					size - vi->end, vi->end);
	}
	if (!ret && (ret = xip_pwrite_all(sf->fd, buf, len, from)))
		ret = xip_error(ret, "%s: %s", sf->path, strerror(-ret));
	if (!ret)
		xip_fill_land(fill, from / XIP_FILL_BLOCK,
			      xip_fill_blocks(size) - from / XIP_FILL_BLOCK);
	/* block 0: the superblock the layout was read from */
	if (!ret)
		ret = xip_nbd_pread(nbd, buf, XIP_FILL_BLOCK, 0);
	if (!ret)
		ret = xip_verity_stream_check(vs, 0, buf, &bad);
	head = xip_verity_stream_head(vs, &head_len);
	if (!ret && memcmp(buf, head, head_len < XIP_FILL_BLOCK ? head_len :
				      XIP_FILL_BLOCK))
		ret = xip_error(-EIO, "the superblock changed after it was read ahead");
	if (!ret && (ret = xip_pwrite_all(sf->fd, buf, XIP_FILL_BLOCK, 0)))
		ret = xip_error(ret, "%s: %s", sf->path, strerror(-ret));
	if (!ret)
		xip_fill_land(fill, 0, 1);
	free(buf);
	if (ret && ret != -ENOMEM && ret != -EINTR && ret != -ETIMEDOUT) {
		char msg[XIP_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", xip_errmsg());
		return xip_error(ret == -EINVAL ? -EINVAL : -EBADMSG, "%s: %s",
				 o->image, msg);
	}
	return ret;
}

/* Every directory under @ino, its blocks brought in by reading them. */
static int walk_dirs(struct xip_image *img, ext2_ino_t ino, int depth)
{
	struct xip_dirent *ents = NULL;
	size_t n = 0;
	int ret;

	if (depth > 256)
		return 0;
	ret = xip_dir_list(img, ino, &ents, &n);
	for (size_t i = 0; !ret && i < n; i++) {
		if (ents[i].type != EXT2_FT_DIR || !strcmp(ents[i].name, ".") ||
		    !strcmp(ents[i].name, ".."))
			continue;
		ret = walk_dirs(img, ents[i].ino, depth + 1);
	}
	free(ents);
	return ret;
}

/*
 * The metadata, brought in through the segment like any reader's: the
 * superblock and group descriptors (opening the image), every group's
 * inode table, every directory.
 */
static int pull_metadata(struct segfile *sf, const struct xip_seg_entry *e)
{
	struct xip_fill *f;
	struct xip_image *img;
	struct xip_seg *seg;
	int fd, ret;

	ret = xip_seg_open_fd(sf->fd, e->path, 0, &seg);
	if (ret)
		return ret;
	seg->data_size = e->size;
	fd = xip_registry_fill_open(e, false);
	if (fd < 0) {
		xip_seg_close(seg);
		return fd;
	}
	ret = xip_fill_open(fd, &f);
	if (ret) {
		close(fd);
		xip_seg_close(seg);
		return ret;
	}
	seg->fill = f;
	free(seg->name);
	seg->name = strdup(e->name);
	ret = xip_image_open_segment_read(seg, XIP_IMG_NOLOCK, &img);
	if (ret)
		return ret;
	for (uint32_t g = 0; !ret && g < img->rd->groups; g++) {
		uint64_t bb, ib, it;

		ret = xip_fs_group(img->rd, g, &bb, &ib, &it);
		if (!ret)
			ret = xip_seg_fill_wait(seg, it * img->block_size,
						img->rd->itb_per_group *
							img->block_size);
	}
	if (!ret)
		ret = walk_dirs(img, EXT2_ROOT_INO, 0);
	xip_image_close(img);
	return ret;
}

int xip_attach_lazy(const struct xip_attach_opts *o, struct segfile *sf,
		    struct xip_nbd **nbdp, uint64_t size,
		    struct xip_verity_stream *vs, struct xip_seg_entry *e)
{
	struct xip_fill *fill = NULL;
	uint64_t bytes;
	int fillfd, sock = -1, ret = 0;

	e->size = size > o->size ? size : o->size;
	bytes = round_up(e->size ? e->size : 1, sf->align);
	if (sf->huge)
		return xip_error(-EOPNOTSUPP,
				 "hugetlbfs files are filled through their mapping: not lazily");
	if (ftruncate(sf->fd, (off_t)bytes) < 0)
		return xip_error(-errno, "%s: cannot size the segment: %s",
				 sf->path, strerror(errno));
	sf->cap = bytes;
	fillfd = xip_registry_fill_open(e, true);
	if (fillfd < 0)
		return fillfd;
	ret = xip_fill_create(fillfd, size, o->timeout_ms, &fill);
	if (ret) {
		close(fillfd);
		return ret;
	}
	if (vs)
		ret = pull_tree(o, sf, *nbdp, vs, fill, size);
	/* the filler makes its own connection */
	xip_nbd_close(*nbdp);
	*nbdp = NULL;
	if (!ret)
		ret = sock = xip_fill_listen(fill);
	if (ret >= 0)
		ret = filler_start(o, sf, fill, fillfd, sock, vs, e, size);
	if (sock >= 0)
		close(sock);
	if (!ret) {
		filler_wait_pid(fill);
		ret = pull_metadata(sf, e);
	}
	e->lazy = true;
	if (!ret)
		xip_fill_set_ready(fill);
	xip_fill_close(fill);	/* its descriptor: the filler keeps its own */
	if (ret)
		xip_attach_lazy_stop(e);
	return ret;
}
