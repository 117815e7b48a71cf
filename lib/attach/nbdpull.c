// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Pulling an NBD export into a segment: `xiptool attach nbd://...`.
 *
 * One libnbd connection, many read requests in flight (the server answers
 * them in parallel), the bytes written to the segment's descriptor at
 * their offsets (pwrite), or into its mapping for a hugetlbfs file.
 * Ranges the server reports as zeros (base:allocation) are not read: a
 * new segment reads as zeros there already.  The export must be an ext2
 * image: its superblock is looked at before the pull and the whole file
 * system is checked after it, like any image we open.
 *
 * Every step, the handshake included, uses libnbd's asynchronous calls
 * and one event loop (nbd_wait): poll(2) on libnbd's descriptor and on
 * the interrupt descriptor (xip_set_interrupt_fd), so that a server that
 * stops answering is given up after NBD_STALL_MS and a stop signal ends
 * the wait at once.  The stall clock restarts when a step or a request
 * completes, not when a byte arrives: a server that trickles its replies
 * a byte at a time is given up like one that sends nothing, and the pull
 * goes at least one request (NBD_REQ bytes at most) per stall limit.
 *
 * The segment's memory is reserved (fallocate) a request at a time,
 * before its bytes are asked for, not all at once: a pull that fails
 * early has taken only what it asked for.  The ranges the server reports
 * as zeros are reserved by the caller once the pull is done.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "attach/xip_attach.h"
#include "attach/attach_int.h"
#include "attach/nbd_int.h"
#include "util/xip_debug.h"
#include "util/xip_error.h"
#include "util/xip_lazy.h"
#include "util/xip_util.h"
#include "segment/xip_fill.h"
#include "segment/xip_segment.h"
#include "verity/xip_verity.h"
#include "registry/xip_registry.h"
#include "reader/xip_image.h"
#include "reader/xip_reader.h"
#include "engine/xip_engine.h"

#ifdef HAVE_LIBNBD
#include <libnbd.h>
#endif

#define NBD_REQ		(1u << 20)	/* bytes per read request */
#define NBD_INFLIGHT	16		/* requests in flight */
#define NBD_WINDOW	(256ull << 20)	/* bytes per block status request */
#define NBD_POLL_MS	1000		/* without an interrupt descriptor */
#define NBD_STALL_MS	60000		/* no reply for that long: give up */
#define SB_MAGIC_OFF	(1024 + 56)	/* s_magic in the first superblock */

static __thread xip_nbd_progress_fn progress_fn;
static __thread void *progress_arg;

void xip_nbd_set_progress(xip_nbd_progress_fn fn, void *arg)
{
	progress_fn = fn;
	progress_arg = arg;
}

#ifndef HAVE_LIBNBD

int xip_nbd_open(const char *uri, unsigned int stall_ms, struct xip_nbd **np,
		 uint64_t *size)
{
	*np = NULL;
	return xip_error(-EPROTONOSUPPORT,
			 "%s: this xiptool was built without libnbd: NBD URIs are not supported",
			 uri);
}

int xip_nbd_pull(struct xip_nbd *n, int fd, void *map, uint64_t align,
		 const char *path, struct xip_verity_stream *vs)
{
	return xip_error(-EPROTONOSUPPORT, "built without libnbd");
}

int xip_nbd_read(struct xip_nbd *n, void *buf, size_t len, uint64_t off)
{
	return xip_error(-EPROTONOSUPPORT, "built without libnbd");
}

void xip_nbd_close(struct xip_nbd *n)
{
}

int xip_nbd_pread(struct xip_nbd *n, void *buf, size_t len, uint64_t off)
{
	return xip_error(-EPROTONOSUPPORT, "built without libnbd");
}

int xip_nbd_pull_lazy(struct xip_nbd *n, int fd, uint64_t align,
		      const char *path, struct xip_fill *fill, int sock,
		      struct xip_verity_stream *vs, uint64_t *bad_block)
{
	return xip_error(-EPROTONOSUPPORT, "built without libnbd");
}

#else

enum slot_state { SLOT_FREE, SLOT_BUSY, SLOT_DONE };

struct slot {
	struct xip_nbd *n;
	enum slot_state state;
	int err;		/* from the completion callback */
	uint64_t off;
	uint32_t len;
	uint8_t *buf;		/* NBD_REQ bytes (NULL: into the mapping) */
	bool demand;		/* a lazy fill's read for a reader */
};

struct range {
	uint64_t off, len;
};

struct status_ctx {
	struct xip_nbd *n;
	uint64_t end;		/* covered so far */
	int ret;
};

struct xip_nbd {
	struct nbd_handle *h;
	char *uri;
	int stall_ms;		/* the caller's limit, or NBD_STALL_MS */
	int64_t last_ms;	/* when the step began or a request completed */
	struct status_ctx status;	/* of the block status in flight */
	uint8_t sb[SB_MAGIC_OFF + 2];	/* the superblock's first bytes */
	uint8_t ahead[2048];		/* xip_nbd_read()'s, outliving a read
					 * given up */
	struct xip_verity_stream *vs;	/* hashing what arrives, or NULL */
	int fd;				/* the segment being pulled into */
	uint64_t align;			/* its reservation unit, 0: none */
	uint64_t reserved;		/* reserved up to here */
	uint64_t fd_size;		/* bytes of the file */
	uint64_t covered;		/* requested or zero up to here */
	uint64_t size;
	uint32_t req;		/* bytes per request */
	bool zero_status;	/* the server reports zero ranges */
	struct slot slots[NBD_INFLIGHT];
	/* data ranges of the current window, still to be requested */
	struct range *todo;
	size_t ntodo, todo_cap, todo_next;
	uint64_t window_end;	/* block status known up to here */
	uint64_t done;		/* bytes copied or skipped */
	/* a lazy fill (xip_nbd_pull_lazy): what readers wait for */
	struct xip_fill *fill;
	int sock;		/* readers' requests */
	uint64_t *asked;	/* a bit a block: asked for, or landed */
	struct range *demand;	/* runs of blocks readers asked for */
	size_t ndemand, demand_cap;
	uint64_t bad_block;	/* that failed its check, or UINT64_MAX */
	bool picked_demand;	/* lazy_pick() chose a reader's run */
};

#define LZ		XIP_FILL_BLOCK

static bool asked(const struct xip_nbd *n, uint64_t b)
{
	return n->asked[b / 64] & (1ull << (b % 64));
}

static void ask(struct xip_nbd *n, uint64_t first, uint64_t end)
{
	for (uint64_t b = first; b < end; b++)
		n->asked[b / 64] |= 1ull << (b % 64);
}

/* The libnbd failure as an error record: its errno, its reason. */
static int nbd_failure(struct xip_nbd *n, const char *what)
{
	int err = nbd_get_errno();
	const char *msg = nbd_get_error();

	return xip_error(err > 0 ? -err : -EIO, "%s: %s: %s", n->uri, what,
			 msg ? msg : strerror(err > 0 ? err : EIO));
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The stall limit: the caller's (attach --timeout), or NBD_STALL_MS. */
static int stall_limit(unsigned int ms)
{
	return ms && ms <= INT_MAX ? (int)ms : NBD_STALL_MS;
}

/* The requests readers sent: runs of blocks, first come first served. */
static int demand_take(struct xip_nbd *n)
{
	uint64_t first, cnt, nblocks = xip_fill_blocks(n->size);
	int r;

	while ((r = xip_fill_recv(n->sock, &first, &cnt)) > 0) {
		if (first >= nblocks || !cnt)
			continue;
		if (cnt > nblocks - first)
			cnt = nblocks - first;
		if (xip_grow((void **)&n->demand, &n->demand_cap,
			     n->ndemand + 1, sizeof(*n->demand)))
			return xip_error(-ENOMEM, "out of memory");
		n->demand[n->ndemand++] = (struct range){ first, cnt };
	}
	return 0;
}

/*
 * One round of the event loop, while @step waits for the server: poll
 * libnbd's descriptor in the direction it wants and the interrupt
 * descriptor, then let libnbd move.  -EINTR once a stop signal came,
 * -ETIMEDOUT when nothing has completed for the stall limit (bytes that
 * arrive do not count: only a whole reply moves the clock, last_ms).
 */
static int nbd_wait(struct xip_nbd *n, const char *step)
{
	struct pollfd p[3] = { { .fd = -1 }, { .fd = xip_interrupt_fd() },
			       { .fd = n->fill ? n->sock : -1,
				 .events = POLLIN } };
	unsigned int dir = nbd_aio_get_direction(n->h);
	int64_t left = n->last_ms + n->stall_ms - now_ms();
	int r, tick = p[1].fd >= 0 ? n->stall_ms : NBD_POLL_MS;

	if (xip_interrupted())
		return xip_error(-EINTR, "%s: interrupted", n->uri);
	if (left <= 0)
		return xip_error(-ETIMEDOUT,
				 "%s: %s: no complete reply from the server for %d s",
				 n->uri, step, (n->stall_ms + 500) / 1000);
	p[0].fd = nbd_aio_get_fd(n->h);
	if (p[0].fd < 0)
		return nbd_failure(n, step);
	p[0].events = (dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0) |
		      (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0);
	p[1].events = POLLIN;
	r = poll(p, 3, (int)(left < tick ? left : tick));
	if (r < 0 && errno != EINTR)
		return xip_error(-errno, "%s: poll: %s", n->uri,
				 strerror(errno));
	if (r > 0 && p[2].revents) {
		r = demand_take(n);
		if (r)
			return r;
	}
	if (r <= 0 || !p[0].revents)
		return 0;	/* the next round looks at the flag, the time */
	if ((dir & LIBNBD_AIO_DIRECTION_READ) &&
	    (p[0].revents & (POLLIN | POLLHUP | POLLERR)))
		r = nbd_aio_notify_read(n->h);
	else if ((dir & LIBNBD_AIO_DIRECTION_WRITE) &&
		 (p[0].revents & (POLLOUT | POLLHUP | POLLERR)))
		r = nbd_aio_notify_write(n->h);
	else
		r = 0;
	if (r < 0) {
		char what[64];

		snprintf(what, sizeof(what), "connection lost during the %s",
			 step);
		return nbd_failure(n, what);
	}
	return 0;
}

/*
 * Wait for the command @cookie (what nbd_aio_* returned for it) to
 * complete: 0, or why it failed (@failed: also when it was not issued).
 */
static int nbd_wait_command(struct xip_nbd *n, int64_t cookie,
			    const char *step, const char *failed)
{
	int r, ret;

	if (cookie < 0)
		return nbd_failure(n, failed);
	n->last_ms = now_ms();		/* the step's own limit */
	while (!(r = nbd_aio_command_completed(n->h, (uint64_t)cookie))) {
		ret = nbd_wait(n, step);
		if (ret)
			return ret;
	}
	n->last_ms = now_ms();
	return r < 0 ? nbd_failure(n, failed) : 0;
}

/* Connect and negotiate, as nbd_connect_uri does, without blocking. */
static int nbd_handshake(struct xip_nbd *n)
{
	int ret;

	n->last_ms = now_ms();
	if (nbd_aio_connect_uri(n->h, n->uri) < 0)
		return nbd_failure(n, "cannot connect");
	while (!nbd_aio_is_ready(n->h)) {
		if (!nbd_aio_is_connecting(n->h))
			return nbd_failure(n, "cannot connect");
		ret = nbd_wait(n, "handshake");
		if (ret)
			return ret;
	}
	return 0;
}

void xip_nbd_close(struct xip_nbd *n)
{
	if (!n)
		return;
	/* first the connection: no callback may write to a slot after this */
	if (n->h)
		nbd_close(n->h);
	for (int i = 0; i < NBD_INFLIGHT; i++)
		free(n->slots[i].buf);
	free(n->todo);
	free(n->uri);
	free(n);
}

/* The first bytes must hold an ext2 superblock: say so before the pull. */
static int check_magic(struct xip_nbd *n)
{
	uint8_t *sb = n->sb;	/* a read given up may still land there */
	int64_t cookie;
	int ret;

	if (n->size < sizeof(n->sb))
		return xip_error(-EMEDIUMTYPE,
				 "%s: export of %" PRIu64 " bytes is too small to hold an ext2 image",
				 n->uri, n->size);
	cookie = nbd_aio_pread(n->h, sb, sizeof(n->sb), 0, NBD_NULL_COMPLETION,
			       0);
	ret = nbd_wait_command(n, cookie, "superblock read",
			       "cannot read the superblock");
	if (ret)
		return ret;
	if (sb[SB_MAGIC_OFF] != 0x53 || sb[SB_MAGIC_OFF + 1] != 0xef)
		return xip_error(-EMEDIUMTYPE,
				 "%s: the export holds no ext2 image (no superblock magic)",
				 n->uri);
	return 0;
}

static uint32_t request_size(struct xip_nbd *n)
{
	int64_t max = nbd_get_block_size(n->h, LIBNBD_SIZE_MAXIMUM);
	int64_t pref = nbd_get_block_size(n->h, LIBNBD_SIZE_PREFERRED);
	uint32_t req = NBD_REQ;

	if (max > 0 && (uint64_t)max < req)
		req = (uint32_t)max;
	/* whole preferred blocks when they fit */
	if (pref > 0 && (uint64_t)pref <= req)
		req -= req % (uint32_t)pref;
	return req ? req : 512;
}

int xip_nbd_open(const char *uri, unsigned int stall_ms, struct xip_nbd **np,
		 uint64_t *size)
{
	struct xip_nbd *n = calloc(1, sizeof(*n));
	int64_t sz;
	int ret;

	*np = NULL;
	ret = xip_lazy_load(XIP_LAZY_NBD);
	if (ret) {
		free(n);
		return ret;
	}
	if (!n || !(n->uri = strdup(uri))) {
		free(n);
		return xip_error(-ENOMEM, "out of memory");
	}
	n->h = nbd_create();
	if (!n->h) {
		ret = nbd_failure(n, "libnbd");
		goto fail;
	}
	n->stall_ms = stall_limit(stall_ms);
	nbd_add_meta_context(n->h, LIBNBD_CONTEXT_BASE_ALLOCATION);
	ret = nbd_handshake(n);
	if (ret)
		goto fail;
	sz = nbd_get_size(n->h);
	if (sz < 0) {
		ret = nbd_failure(n, "cannot get the export size");
		goto fail;
	}
	n->size = (uint64_t)sz;
	n->req = request_size(n);
	n->zero_status = nbd_can_meta_context(n->h,
					      LIBNBD_CONTEXT_BASE_ALLOCATION) == 1;
	ret = check_magic(n);
	if (ret)
		goto fail;
	XIP_DBG(NBD, "%s: %" PRIu64 " bytes, requests of %u bytes, %s", uri,
		n->size, n->req, n->zero_status ? "zero ranges reported" :
		"no base:allocation");
	*size = n->size;
	*np = n;
	return 0;
fail:
	xip_nbd_close(n);
	return ret;
}

static int todo_add(struct xip_nbd *n, uint64_t off, uint64_t len)
{
	uint64_t end = off + len;

	if (n->vs || n->fill) {
		/* whole blocks: each is hashed from one request */
		uint64_t bs = n->vs ?
			xip_verity_stream_info(n->vs)->hash_block_size : LZ;

		off = round_down(off, bs);
		end = round_up(end, bs) < n->size ? round_up(end, bs) : n->size;
		if (off < n->covered)
			off = n->covered;
		if (end <= off)
			return 0;
		len = end - off;
	}
	if (end > n->covered)
		n->covered = end;
	if (n->ntodo && n->todo[n->ntodo - 1].off + n->todo[n->ntodo - 1].len == off) {
		n->todo[n->ntodo - 1].len += len;
		return 0;
	}
	if (xip_grow((void **)&n->todo, &n->todo_cap, n->ntodo + 1,
		     sizeof(*n->todo)))
		return xip_error(-ENOMEM, "out of memory");
	n->todo[n->ntodo++] = (struct range){ off, len };
	return 0;
}

/*
 * A range the server says is zeros, in a lazy fill: its whole blocks
 * land at once where the tree says zeros too (the segment holds zeros
 * there); the others are read like data.
 */
static int lazy_zero(struct xip_nbd *n, uint64_t off, uint64_t len)
{
	uint64_t b = div_round_up(off, LZ), end = (off + len) / LZ;
	const struct xip_verity_info *vi = n->vs ?
		xip_verity_stream_info(n->vs) : NULL;
	int ret = 0;

	if (off % LZ)
		ret = todo_add(n, off, b * LZ - off);
	for (; !ret && b < end; b++) {
		if (asked(n, b))
			continue;
		if (vi && (b >= vi->data_blocks ||
			   !xip_verity_stream_is_zero(n->vs, b))) {
			ret = todo_add(n, b * LZ, LZ);
			continue;
		}
		ask(n, b, b + 1);
		xip_fill_land(n->fill, b, 1);
	}
	if (!ret && end * LZ < off + len && end >= b)
		ret = todo_add(n, end * LZ, off + len - end * LZ);
	return ret;
}

static int status_extent(void *user_data, const char *metacontext,
			 uint64_t offset, uint32_t *entries, size_t nr_entries,
			 int *error)
{
	struct status_ctx *c = user_data;
	uint64_t off = offset;

	if (strcmp(metacontext, LIBNBD_CONTEXT_BASE_ALLOCATION))
		return 0;
	for (size_t i = 0; i + 1 < nr_entries && !c->ret; i += 2) {
		uint64_t len = entries[i];

		if (off >= c->n->window_end + NBD_WINDOW ||
		    off >= c->n->size || !len)
			break;
		if (len > c->n->size - off)
			len = c->n->size - off;
		if (!(entries[i + 1] & LIBNBD_STATE_ZERO))
			c->ret = todo_add(c->n, off, len);
		else if (c->n->fill)
			c->ret = lazy_zero(c->n, off, len);
		else if (c->n->vs)	/* its whole blocks: zeros */
			xip_verity_stream_zero(c->n->vs, off, len);
		off += len;
	}
	if (off > c->end)
		c->end = off;
	return 0;
}

/* The data ranges of the next window: from block status, else all of it. */
static int next_window(struct xip_nbd *n)
{
	uint64_t start = n->window_end;
	uint64_t len = n->size - start < NBD_WINDOW ? n->size - start :
		NBD_WINDOW;
	struct status_ctx *c = &n->status;
	int64_t cookie;
	int ret;

	n->ntodo = n->todo_next = 0;
	if (n->zero_status) {
		*c = (struct status_ctx){ n, start, 0 };
		cookie = nbd_aio_block_status(n->h, len, start,
					      (nbd_extent_callback){
						      .callback = status_extent,
						      .user_data = c },
					      NBD_NULL_COMPLETION, 0);
		ret = nbd_wait_command(n, cookie, "block status",
				       "block status");
		if (ret)
			return ret;
		if (c->ret)
			return c->ret;
		if (c->end <= start)
			return xip_error(-EIO,
					 "%s: block status at offset %" PRIu64 " covers nothing",
					 n->uri, start);
		n->done += (c->end - start);	/* counted as they complete: */
		for (size_t i = 0; i < n->ntodo; i++)
			n->done -= n->todo[i].len;
		n->window_end = c->end;
		return 0;
	}
	n->window_end = start + len;
	return todo_add(n, start, len);
}

static int read_done(void *user_data, int *error)
{
	struct slot *s = user_data;

	s->err = *error;
	s->state = SLOT_DONE;
	s->n->last_ms = now_ms();	/* a whole reply: progress */
	return 1;
}

/*
 * The memory of [@off, @off + @len) of the segment, reserved before its
 * bytes are asked for (whole units of n->align): a full tmpfs is an
 * error here, not a SIGBUS in the mapping, and no more is taken than
 * was asked for.
 */
static int reserve(struct xip_nbd *n, uint64_t off, uint64_t len,
		   const char *path)
{
	uint64_t start, end;

	if (!n->align)
		return 0;
	start = round_down(off, n->align);
	end = min_u64(round_up(off + len, n->align), n->fd_size);
	if (start < n->reserved)
		start = n->reserved;
	if (end <= start)
		return 0;
	if (fallocate(n->fd, 0, (off_t)start, (off_t)(end - start)) < 0 &&
	    errno != EOPNOTSUPP)
		return xip_error(-errno,
				 "%s: cannot reserve %" PRIu64 " bytes of memory: %s",
				 path, end - start, strerror(errno));
	n->reserved = end;
	return 0;
}

#define LAZY_SWEEP_INFLIGHT	2

/* Has the sweep asked for everything? */
static bool lazy_swept(const struct xip_nbd *n)
{
	return n->window_end >= n->size && n->todo_next == n->ntodo;
}

/* Reads of the sweep in flight. */
static int sweeping(const struct xip_nbd *n)
{
	int k = 0;

	for (int i = 0; i < NBD_INFLIGHT; i++)
		k += n->slots[i].state == SLOT_BUSY && !n->slots[i].demand;
	return k;
}

/* The next range still to read in @r, moving the window on; NULL at the end. */
static int todo_range(struct xip_nbd *n, struct range **r)
{
	int ret;

	while (n->todo_next == n->ntodo) {
		if (n->window_end >= n->size) {
			*r = NULL;
			return 0;
		}
		ret = next_window(n);
		if (ret)
			return ret;
	}
	*r = &n->todo[n->todo_next];
	return 0;
}

/*
 * A lazy fill's next read: the first run a reader asked for that is not
 * asked for yet, else the next of the sweep; blocks asked for or landed
 * are skipped.  0 with *@len 0 when nothing is left of either.
 */
static int lazy_pick(struct xip_nbd *n, uint64_t *off, uint32_t *len)
{
	uint64_t nblocks = xip_fill_blocks(n->size), most = n->req / LZ;
	uint64_t b, e;
	int ret;

	*len = 0;
	while (n->ndemand) {
		struct range *d = &n->demand[0];

		for (b = d->off; b < d->off + d->len && asked(n, b); b++)
			;
		if (b == d->off + d->len) {
			memmove(n->demand, n->demand + 1,
				--n->ndemand * sizeof(*n->demand));
			continue;
		}
		for (e = b; e < d->off + d->len && e - b < most &&
			    !asked(n, e); e++)
			;
		d->len -= e - d->off;
		d->off = e;
		xip_fill_count_request(n->fill);
		n->picked_demand = true;
		goto found;
	}
	/*
	 * the sweep keeps few reads in flight: a reader's request waits for
	 * those at most, not for a full pipeline of them
	 */
	if (sweeping(n) >= LAZY_SWEEP_INFLIGHT)
		return 0;
	for (;;) {
		struct range *r;

		ret = todo_range(n, &r);
		if (ret || !r)
			return ret;
		for (b = r->off / LZ; b * LZ < r->off + r->len && asked(n, b);
		     b++)
			;
		if (b * LZ >= r->off + r->len) {
			n->todo_next++;
			continue;
		}
		for (e = b; e * LZ < r->off + r->len && e - b < most &&
			    !asked(n, e); e++)
			;
		r->len = r->off + r->len > e * LZ ? r->off + r->len - e * LZ :
						    0;
		r->off = e * LZ;
		break;
	}
found:
	if (e > nblocks)
		e = nblocks;
	ask(n, b, e);
	*off = b * LZ;
	*len = (uint32_t)(min_u64(e * LZ, n->size) - *off);
	return 0;
}

/* Start one more read into a free slot; 0 when nothing was left to do. */
static int issue(struct xip_nbd *n, struct slot *s, uint8_t *map,
		 const char *path)
{
	struct range *r;
	int ret;

	if (n->fill) {
		uint64_t off;
		uint32_t len;

		n->picked_demand = false;
		ret = lazy_pick(n, &off, &len);
		if (ret || !len)
			return ret;
		s->off = off;
		s->len = len;
		s->demand = n->picked_demand;
		goto send;
	}
	ret = todo_range(n, &r);
	if (ret || !r)
		return ret;
	s->off = r->off;
	s->len = r->len < n->req ? (uint32_t)r->len : n->req;
	r->off += s->len;
	r->len -= s->len;
	if (!r->len)
		n->todo_next++;
send:
	if (!map && !s->buf && !(s->buf = malloc(n->req)))
		return xip_error(-ENOMEM, "out of memory");
	ret = reserve(n, s->off, s->len, path);
	if (ret)
		return ret;
	s->n = n;
	s->state = SLOT_BUSY;
	s->err = 0;
	if (nbd_aio_pread(n->h, map ? map + s->off : s->buf, s->len, s->off,
			  (nbd_completion_callback){ .callback = read_done,
						     .user_data = s },
			  0) < 0) {
		s->state = SLOT_FREE;
		return nbd_failure(n, "read request");
	}
	return 1;
}

/*
 * A read of a lazy fill: each block checked against the tree (with a
 * root hash), then written, then marked landed: a reader never finds a
 * block marked that was not checked, nor reads one that failed.
 */
static int lazy_land(struct xip_nbd *n, struct slot *s, int fd,
		     const char *path)
{
	struct xip_verity_bad bad;
	int ret = 0;

	for (uint64_t o = 0; n->vs && o < s->len && !ret; o += LZ) {
		ret = xip_verity_stream_check(n->vs, (s->off + o) / LZ,
					      s->buf + o, &bad);
		if (ret)
			n->bad_block = (s->off + o) / LZ;
	}
	if (!ret && (ret = xip_pwrite_all(fd, s->buf, s->len, s->off)))
		ret = xip_error(ret, "%s: %s", path, strerror(-ret));
	if (!ret)
		xip_fill_land(n->fill, s->off / LZ,
			      div_round_up(s->len, LZ));
	s->state = SLOT_FREE;
	n->done += s->len;
	return ret;
}

/* A completed read: its bytes into the segment. */
static int harvest(struct xip_nbd *n, struct slot *s, int fd, uint8_t *map,
		   const char *path)
{
	int ret = 0;

	if (s->err == ENOTCONN || s->err == ESHUTDOWN)
		return xip_error(-s->err,
				 "%s: the server went away during the pull (%" PRIu64 " of %" PRIu64 " bytes received)",
				 n->uri, n->done, n->size);
	if (s->err)
		return xip_error(-s->err,
				 "%s: the server failed to send bytes %" PRIu64 "-%" PRIu64 ": %s",
				 n->uri, s->off, s->off + s->len - 1,
				 strerror(s->err));
	if (n->fill)
		return lazy_land(n, s, fd, path);
	/* hashed while it is in the cache, then written as hashed */
	if (n->vs)
		ret = xip_verity_stream_hash(n->vs, s->off, s->buf, s->len);
	if (!ret && !map && (ret = xip_pwrite_all(fd, s->buf, s->len, s->off)))
		ret = xip_error(ret, "%s: %s", path, strerror(-ret));
	s->state = SLOT_FREE;
	n->done += s->len;
	return ret;
}

static int pull_loop(struct xip_nbd *n, int fd, uint8_t *map,
		     const char *path)
{
	int busy, ret = 0, more = 1;

	for (;;) {
		busy = 0;
		for (int i = 0; i < NBD_INFLIGHT && !ret; i++) {
			struct slot *s = &n->slots[i];

			if (s->state == SLOT_DONE)
				ret = harvest(n, s, fd, map, path);
			if (!ret && s->state == SLOT_FREE && more) {
				ret = issue(n, s, map, path);
				more = ret > 0;
				ret = ret < 0 ? ret : 0;
			}
			busy += s->state == SLOT_BUSY;
		}
		if (ret)
			return ret;
		if (progress_fn)
			progress_fn(progress_arg, n->done, n->size);
		xip_attach_hook_fill(n->done, n->size);
		if (!busy && !more && !n->ndemand)
			return 0;
		if (n->fill && !more && (n->ndemand || !lazy_swept(n)))
			more = 1;	/* a request came, or the sweep waits */
		ret = nbd_wait(n, "pull");
		if (ret)
			return ret;
	}
}

/* The pulled bytes must be an ext2 file system we can open. */
static int check_image(int fd, const char *path)
{
	struct xip_seg *seg;
	struct xip_image *img;
	int ret;

	ret = xip_seg_open_fd(fd, path, 0, &seg);
	if (!ret)
		ret = xip_image_open_segment(seg, XIP_IMG_NOLOCK, &img);
	if (!ret)
		xip_image_close(img);
	return ret;
}

int xip_nbd_read(struct xip_nbd *n, void *buf, size_t len, uint64_t off)
{
	int64_t cookie;
	int ret;

	if (len > sizeof(n->ahead))
		return xip_error(-EINVAL, "%s: a read ahead of %zu bytes",
				 n->uri, len);
	cookie = nbd_aio_pread(n->h, n->ahead, len, off, NBD_NULL_COMPLETION,
			       0);
	ret = nbd_wait_command(n, cookie, "read", "read");
	if (!ret)
		memcpy(buf, n->ahead, len);
	return ret;
}

/* What a pull into @fd (@path), whole or lazy, starts from. */
static int pull_start(struct xip_nbd *n, int fd, uint64_t align,
		      const char *path, struct xip_verity_stream *vs)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return xip_error(-errno, "%s: %s", path, strerror(errno));
	n->fd = fd;
	n->fd_size = (uint64_t)st.st_size;
	n->align = align;
	n->vs = vs;
	return 0;
}

int xip_nbd_pull(struct xip_nbd *n, int fd, void *map, uint64_t align,
		 const char *path, struct xip_verity_stream *vs)
{
	int ret = pull_start(n, fd, align, path, vs);

	if (ret)
		return ret;
	n->reserved = 0;
	n->covered = 0;
	if (vs) {
		uint32_t bs = xip_verity_stream_info(vs)->hash_block_size;

		if (n->req < bs || map)
			return xip_error(-EOPNOTSUPP,
					 "%s: requests of %u bytes cannot carry whole verity blocks of %u",
					 n->uri, n->req, bs);
		n->req -= n->req % bs;
	}
	n->done = 0;
	n->last_ms = now_ms();
	n->window_end = 0;
	n->ntodo = n->todo_next = 0;
	ret = pull_loop(n, fd, map, path);
	XIP_DBG(NBD, "%s: pulled into %s%s", n->uri, path,
		ret ? " (failed)" : "");
	if (ret)
		return ret;
	/* messages about the file system name where it came from */
	return check_image(fd, n->uri);
}

int xip_nbd_pread(struct xip_nbd *n, void *buf, size_t len, uint64_t off)
{
	while (len) {
		size_t k = len < n->req ? len : n->req;
		int64_t cookie = nbd_aio_pread(n->h, buf, k, off,
					       NBD_NULL_COMPLETION, 0);
		int ret = nbd_wait_command(n, cookie, "read", "read");

		if (ret)
			return ret;
		buf = (uint8_t *)buf + k;
		off += k;
		len -= k;
	}
	return 0;
}

int xip_nbd_pull_lazy(struct xip_nbd *n, int fd, uint64_t align,
		      const char *path, struct xip_fill *fill, int sock,
		      struct xip_verity_stream *vs, uint64_t *bad_block)
{
	uint64_t nblocks = xip_fill_blocks(n->size);
	int ret;

	*bad_block = UINT64_MAX;
	ret = pull_start(n, fd, align, path, vs);
	if (ret)
		return ret;
	n->fill = fill;
	n->sock = sock;
	n->bad_block = UINT64_MAX;
	n->asked = calloc((nblocks + 63) / 64, sizeof(uint64_t));
	if (!n->asked)
		return xip_error(-ENOMEM, "out of memory");
	/* what landed before the filler started (the tree, the head) */
	for (uint64_t b = 0; b < nblocks; b++)
		if (xip_fill_has(fill, b))
			ask(n, b, b + 1);
	n->req -= n->req % LZ;
	n->last_ms = now_ms();
	ret = pull_loop(n, fd, NULL, path);
	*bad_block = n->bad_block;
	free(n->asked);
	n->asked = NULL;
	free(n->demand);
	n->demand = NULL;
	n->fill = NULL;
	return ret;
}

#endif /* HAVE_LIBNBD */
