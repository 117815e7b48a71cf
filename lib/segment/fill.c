// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The fill state of a lazy segment (attach --lazy): which 4 KiB blocks of
 * the segment have landed and been checked, shared between the filler
 * that pulls them and every reader that waits for them.
 *
 * One small file beside the segment's record in the owner's run directory
 * (.fill:DEV:INO), mapped shared: a header page, then one bit a block.  A
 * bit is set only once its block is in the segment and, for a verified
 * segment, matched the hash tree: a reader that finds its bits set reads
 * the segment as it would read a complete one.  A reader that finds some
 * missing sends the run to the filler (a datagram on the filler's
 * abstract socket, checked by its credentials) and waits on the header's
 * sequence word (FUTEX_WAIT on the shared page), which the filler bumps
 * at every landing and every change of state, at most the segment's
 * deadline.  The filler holds an exclusive flock on the state file as long
 * as it runs: a state "filling" whose lock nobody holds is a filler that
 * died, and reads as failed.  Once complete, a reader makes one test and
 * no more.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "segment/xip_fill.h"
#include "segment/segment_int.h"
#include "util/xip_error.h"
#include "util/xip_util.h"

#define FILL_MAGIC	"xipfill1"
#define FILL_HDR	4096u
#define FILL_TICK_MS	200	/* a waiter looks at the filler this often */

_Static_assert(offsetof(struct xip_fill_hdr, requests) == 48 &&
		       offsetof(struct xip_fill_hdr, pid) == 56,
	       "the documented offsets of the fill state's header");

struct xip_fill {
	int fd;
	struct xip_fill_hdr *hdr;
	uint64_t *bits;
	size_t map_len;
	int sock;		/* a reader's socket for requests, or -1 */
	uint64_t asked_first, asked_n;	/* the last run asked for */
};

static uint64_t bitmap_bytes(uint64_t nblocks)
{
	return (nblocks + 63) / 64 * 8;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t xip_fill_blocks(uint64_t size)
{
	return (size + XIP_FILL_BLOCK - 1) / XIP_FILL_BLOCK;
}

static int fill_map(int fd, size_t len, bool writer, struct xip_fill **fp)
{
	struct xip_fill *f = calloc(1, sizeof(*f));
	void *p;

	if (!f)
		return xip_error(-ENOMEM, "out of memory");
	p = mmap(NULL, len, PROT_READ | (writer ? PROT_WRITE : 0), MAP_SHARED,
		 fd, 0);
	if (p == MAP_FAILED) {
		free(f);
		return xip_error(-errno, "fill state: mmap: %s",
				 strerror(errno));
	}
	f->fd = fd;
	f->hdr = p;
	f->bits = (uint64_t *)((uint8_t *)p + FILL_HDR);
	f->map_len = len;
	f->sock = -1;
	*fp = f;
	return 0;
}

int xip_fill_create(int fd, uint64_t size, unsigned int timeout_ms,
		    struct xip_fill **fp)
{
	uint64_t nblocks = xip_fill_blocks(size);
	uint64_t len = FILL_HDR + bitmap_bytes(nblocks);
	struct xip_fill_hdr *h;
	int ret;

	*fp = NULL;
	if (len > SIZE_MAX / 2)
		return xip_error(-EFBIG, "fill state: too large");
	if (ftruncate(fd, (off_t)len) < 0)
		return xip_error(-errno, "fill state: %s", strerror(errno));
	ret = fill_map(fd, (size_t)len, true, fp);
	if (ret)
		return ret;
	h = (*fp)->hdr;
	h->size = size;
	h->nblocks = nblocks;
	h->bad_block = UINT64_MAX;
	h->timeout_ms = timeout_ms;
	h->state = XIP_FILL_FILLING;
	memcpy(h->magic, FILL_MAGIC, sizeof(h->magic));
	return 0;
}

int xip_fill_open(int fd, struct xip_fill **fp)
{
	struct xip_fill_hdr h;
	struct stat st;
	int ret;

	*fp = NULL;
	if (fstat(fd, &st) < 0)
		return xip_error(-errno, "fill state: %s", strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)FILL_HDR ||
	    pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    memcmp(h.magic, FILL_MAGIC, sizeof(h.magic)) ||
	    h.nblocks != xip_fill_blocks(h.size) ||
	    (uint64_t)st.st_size < FILL_HDR + bitmap_bytes(h.nblocks) ||
	    (uint64_t)st.st_size > SIZE_MAX / 2)
		return xip_error(-EUCLEAN, "fill state: damaged");
	ret = fill_map(fd, (size_t)st.st_size, false, fp);
	if (ret)
		return ret;
	/* what was checked is what is used: the mapping's own numbers */
	if ((*fp)->hdr->nblocks != h.nblocks || (*fp)->hdr->size != h.size) {
		(*fp)->fd = -1;
		xip_fill_close(*fp);
		*fp = NULL;
		return xip_error(-EUCLEAN, "fill state: changed");
	}
	return 0;
}

void xip_fill_close(struct xip_fill *f)
{
	if (!f)
		return;
	if (f->hdr)
		munmap(f->hdr, f->map_len);
	if (f->sock >= 0)
		close(f->sock);
	if (f->fd >= 0)
		close(f->fd);
	free(f);
}

const struct xip_fill_hdr *xip_fill_header(const struct xip_fill *f)
{
	return f->hdr;
}

/* Is the filler's lock held (by the filler: nobody else takes it)? */
static bool filler_alive(const struct xip_fill *f)
{
	if (flock(f->fd, LOCK_SH | LOCK_NB) == 0) {
		flock(f->fd, LOCK_UN);
		return false;
	}
	return errno == EWOULDBLOCK;
}

enum xip_fill_state xip_fill_state(const struct xip_fill *f)
{
	uint32_t s = __atomic_load_n(&f->hdr->state, __ATOMIC_ACQUIRE);

	if (s == XIP_FILL_FILLING && !filler_alive(f))
		return XIP_FILL_FAILED;
	if (s != XIP_FILL_COMPLETE && s != XIP_FILL_FILLING)
		return XIP_FILL_FAILED;
	return (enum xip_fill_state)s;
}

bool xip_fill_complete(const struct xip_fill *f)
{
	return __atomic_load_n(&f->hdr->state, __ATOMIC_ACQUIRE) ==
	       XIP_FILL_COMPLETE;
}

uint64_t xip_fill_filled(const struct xip_fill *f)
{
	return __atomic_load_n(&f->hdr->filled, __ATOMIC_RELAXED);
}

bool xip_fill_has(const struct xip_fill *f, uint64_t blk)
{
	if (blk >= f->hdr->nblocks)
		return true;	/* the padding past the image: zeros */
	return __atomic_load_n(&f->bits[blk / 64], __ATOMIC_ACQUIRE) &
	       (1ull << (blk % 64));
}

/* The first block of [@first, @first + @n) that has not landed, or end. */
uint64_t xip_fill_missing(const struct xip_fill *f, uint64_t first,
			  uint64_t n)
{
	uint64_t end = first + n;

	if (end > f->hdr->nblocks)
		end = f->hdr->nblocks;
	for (uint64_t b = first; b < end; b++) {
		uint64_t w = __atomic_load_n(&f->bits[b / 64],
					     __ATOMIC_ACQUIRE);

		if (!(b % 64) && w == ~0ull && end - b >= 64) {
			b += 63;
			continue;
		}
		if (!(w & (1ull << (b % 64))))
			return b;
	}
	return first + n;
}

static void fill_wake(struct xip_fill *f)
{
	__atomic_add_fetch(&f->hdr->seq, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &f->hdr->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void xip_fill_land(struct xip_fill *f, uint64_t first, uint64_t n)
{
	uint64_t end = first + n, added = 0;

	if (end > f->hdr->nblocks)
		end = f->hdr->nblocks;
	for (uint64_t b = first; b < end; b++) {
		uint64_t bit = 1ull << (b % 64);
		uint64_t old = __atomic_fetch_or(&f->bits[b / 64], bit,
						 __ATOMIC_RELEASE);

		if (!(old & bit))
			added++;
	}
	if (added) {
		uint64_t bytes = added * XIP_FILL_BLOCK;
		uint64_t now = f->hdr->filled + bytes;

		__atomic_store_n(&f->hdr->filled,
				 now > f->hdr->size ? f->hdr->size : now,
				 __ATOMIC_RELEASE);
	}
	fill_wake(f);
}

void xip_fill_end(struct xip_fill *f, enum xip_fill_state state,
		  uint64_t bad_block, const char *msg)
{
	if (msg)
		snprintf(f->hdr->msg, sizeof(f->hdr->msg), "%s", msg);
	f->hdr->bad_block = bad_block;
	__atomic_store_n(&f->hdr->state, state, __ATOMIC_RELEASE);
	fill_wake(f);
}

void xip_fill_set_ready(struct xip_fill *f)
{
	__atomic_store_n(&f->hdr->ready, 1, __ATOMIC_RELEASE);
	fill_wake(f);
}

void xip_fill_count_request(struct xip_fill *f)
{
	__atomic_add_fetch(&f->hdr->requests, 1, __ATOMIC_RELAXED);
}

/* ---- requests ----------------------------------------------------------- */

static socklen_t abstract_addr(const char *name, struct sockaddr_un *a)
{
	size_t n = strnlen(name, sizeof(((struct xip_fill_hdr *)0)->sock));

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	memcpy(a->sun_path + 1, name, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

int xip_fill_listen(struct xip_fill *f)
{
	struct sockaddr_un a;
	uint64_t r;
	int one = 1, fd;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return xip_error(-errno, "fill: socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
	for (int tries = 0; tries < 16; tries++) {
		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
			close(fd);
			return xip_error(-EIO, "fill: no random bits");
		}
		snprintf(f->hdr->sock, sizeof(f->hdr->sock),
			 "xiptool-fill.%u.%016" PRIx64, (unsigned int)getpid(),
			 r);
		if (bind(fd, (struct sockaddr *)&a,
			 abstract_addr(f->hdr->sock, &a)) == 0)
			return fd;
		if (errno != EADDRINUSE)
			break;
	}
	close(fd);
	return xip_error(-errno, "fill: bind: %s", strerror(errno));
}

int xip_fill_recv(int sock, uint64_t *first, uint64_t *n)
{
	uint64_t msg[2];
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { msg, sizeof(msg) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	ssize_t r;

	for (;;) {
		r = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (r < 0)
			return errno == EAGAIN ? 0 : -errno;
		c = CMSG_FIRSTHDR(&mh);
		/* only the owner's and root's requests count */
		if (r == (ssize_t)sizeof(msg) && c &&
		    c->cmsg_level == SOL_SOCKET &&
		    c->cmsg_type == SCM_CREDENTIALS) {
			struct ucred cr;

			memcpy(&cr, CMSG_DATA(c), sizeof(cr));
			if (cr.uid == geteuid() || cr.uid == 0) {
				*first = msg[0];
				*n = msg[1];
				return 1;
			}
		}
		mh.msg_controllen = sizeof(u.buf);
	}
}

static void fill_request(struct xip_fill *f, uint64_t first, uint64_t n)
{
	struct sockaddr_un a;
	uint64_t msg[2] = { first, n };
	socklen_t alen;

	if (f->asked_n && f->asked_first == first && f->asked_n == n)
		return;		/* asked already; the filler remembers */
	if (f->sock < 0)
		f->sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (f->sock < 0)
		return;		/* the sweep brings it anyway */
	alen = abstract_addr(f->hdr->sock, &a);
	if (sendto(f->sock, msg, sizeof(msg), MSG_DONTWAIT,
		   (struct sockaddr *)&a, alen) == (ssize_t)sizeof(msg)) {
		f->asked_first = first;
		f->asked_n = n;
	}
}

/* ---- waiting ------------------------------------------------------------ */

static int fill_failed(const struct xip_fill *f, uint64_t blk,
		       const char *what)
{
	const struct xip_fill_hdr *h = f->hdr;
	uint32_t s = __atomic_load_n(&h->state, __ATOMIC_ACQUIRE);

	if (s == XIP_FILL_FAILED && h->msg[0])
		return xip_error(-EIO, "%s: block %" PRIu64 " never arrived: %.200s",
				 what, blk, h->msg);
	return xip_error(-EIO, "%s: block %" PRIu64 " never arrived: the filler is gone",
			 what, blk);
}

int xip_fill_wait(struct xip_fill *f, uint64_t off, uint64_t len,
		  const char *what)
{
	uint64_t first, n, miss;
	int64_t deadline;
	uint32_t seq;

	if (xip_fill_complete(f) || !len)
		return 0;
	first = off / XIP_FILL_BLOCK;
	n = (off + len - 1) / XIP_FILL_BLOCK + 1 - first;
	miss = xip_fill_missing(f, first, n);
	if (miss >= first + n)
		return 0;
	deadline = now_ms() + (f->hdr->timeout_ms ? f->hdr->timeout_ms :
			       60000);
	for (;;) {
		struct timespec ts;
		int64_t left;

		seq = __atomic_load_n(&f->hdr->seq, __ATOMIC_ACQUIRE);
		miss = xip_fill_missing(f, miss, first + n - miss);
		if (miss >= first + n || xip_fill_complete(f))
			return 0;
		if (xip_fill_state(f) == XIP_FILL_FAILED)
			return fill_failed(f, miss, what);
		if (xip_interrupted())
			return xip_error(-EINTR, "%s: interrupted waiting for block %" PRIu64,
					 what, miss);
		left = deadline - now_ms();
		if (left <= 0)
			return xip_error(-ETIMEDOUT,
					 "%s: block %" PRIu64 " did not arrive within %u s",
					 what, miss,
					 (f->hdr->timeout_ms ?
					  f->hdr->timeout_ms : 60000) / 1000);
		fill_request(f, miss, first + n - miss);
		if (left > FILL_TICK_MS)
			left = FILL_TICK_MS;
		ts.tv_sec = left / 1000;
		ts.tv_nsec = (left % 1000) * 1000000;
		syscall(SYS_futex, &f->hdr->seq, FUTEX_WAIT, seq, &ts, NULL, 0);
	}
}

int xip_fill_wait_all(struct xip_fill *f, const char *what,
		      void (*progress)(void *arg, uint64_t done,
				       uint64_t total),
		      void *arg)
{
	int64_t last = now_ms(), limit;
	uint64_t before = xip_fill_filled(f);
	uint32_t seq;

	limit = f->hdr->timeout_ms ? f->hdr->timeout_ms : 60000;
	while (!xip_fill_complete(f)) {
		struct timespec ts = { 0, FILL_TICK_MS * 1000000L };
		uint64_t now = xip_fill_filled(f);

		if (xip_interrupted())
			return xip_error(-EINTR, "%s: interrupted", what);
		seq = __atomic_load_n(&f->hdr->seq, __ATOMIC_ACQUIRE);
		if (xip_fill_complete(f))
			break;
		if (xip_fill_state(f) == XIP_FILL_FAILED)
			return fill_failed(f, xip_fill_missing(f, 0,
							       f->hdr->nblocks),
					   what);
		if (now != before) {
			before = now;
			last = now_ms();
		} else if (now_ms() - last > limit) {
			return xip_error(-ETIMEDOUT,
					 "%s: the fill made no progress for %" PRId64 " s",
					 what, limit / 1000);
		}
		if (progress)
			progress(arg, now, f->hdr->size);
		syscall(SYS_futex, &f->hdr->seq, FUTEX_WAIT, seq, &ts, NULL, 0);
	}
	if (progress)
		progress(arg, f->hdr->size, f->hdr->size);
	return 0;
}
