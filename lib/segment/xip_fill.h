/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The fill state of a lazy segment (fill.c): a state file beside the
 * record, mapped shared, with a bit per block landed and checked; the
 * filler (attach) sets the bits, every reader of the segment waits on
 * them.  Part of the public API (lib/xip.h includes it).
 */
#ifndef XIP_FILL_H
#define XIP_FILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct xip_fill;

#define XIP_FILL_BLOCK	4096u	/* a bit of the bitmap */

enum xip_fill_state {
	XIP_FILL_FILLING = 1,
	XIP_FILL_COMPLETE = 2,
	XIP_FILL_FAILED = 3,
};

/*
 * The header page of the state file (its bitmap follows at 4096).  Its
 * layout is fixed: tools read requests at byte 48 and pid at byte 56.
 */
struct xip_fill_hdr {
	char magic[8];		/* "xipfill1" */
	uint32_t state;		/* enum xip_fill_state */
	uint32_t seq;		/* futex word: bumped at every change */
	uint64_t size;		/* bytes of the image */
	uint64_t nblocks;	/* bits of the bitmap */
	uint64_t filled;	/* bytes landed and checked */
	uint64_t bad_block;	/* the block that failed, or UINT64_MAX */
	uint64_t requests;	/* server reads made for readers' requests */
	int32_t pid;		/* the filler */
	uint32_t timeout_ms;	/* how long a reader waits */
	uint32_t ready;		/* the metadata are in: attach returned */
	uint32_t pad;
	char sock[64];		/* the filler's abstract socket */
	char msg[256];		/* why it failed */
};

/* Blocks of the bitmap for an image of @size bytes. */
uint64_t xip_fill_blocks(uint64_t size);
/*
 * The filler's state on the state file open for writing on @fd (taken
 * over): sized, every bit clear, state filling.
 */
int xip_fill_create(int fd, uint64_t size, unsigned int timeout_ms,
		    struct xip_fill **fp);
/* A reader's, read-only, checked (-EUCLEAN when damaged); @fd taken over */
int xip_fill_open(int fd, struct xip_fill **fp);
void xip_fill_close(struct xip_fill *f);
const struct xip_fill_hdr *xip_fill_header(const struct xip_fill *f);
/* The state; filling with the filler's lock not held is failed. */
enum xip_fill_state xip_fill_state(const struct xip_fill *f);
/* One test: complete? (no system call) */
bool xip_fill_complete(const struct xip_fill *f);
uint64_t xip_fill_filled(const struct xip_fill *f);
/* Has block @blk landed (and been checked)?  Past the image: true. */
bool xip_fill_has(const struct xip_fill *f, uint64_t blk);
/* The first of [@first, @first + @n) not landed, or @first + @n. */
uint64_t xip_fill_missing(const struct xip_fill *f, uint64_t first,
			  uint64_t n);
/*
 * Wait until every block of [@off, @off + @len) has landed, asking the
 * filler for them: 0; -EIO once the fill failed or its filler is gone,
 * naming the first missing block and @what; -ETIMEDOUT past the
 * segment's deadline; -EINTR once a stop signal came (xip_interrupted).
 */
int xip_fill_wait(struct xip_fill *f, uint64_t off, uint64_t len,
		  const char *what);
/* Wait for the whole fill (its deadline: no progress for that long). */
int xip_fill_wait_all(struct xip_fill *f, const char *what,
		      void (*progress)(void *arg, uint64_t done,
				       uint64_t total),
		      void *arg);
/* The filler's side: blocks [@first, @first + @n) landed and checked. */
void xip_fill_land(struct xip_fill *f, uint64_t first, uint64_t n);
void xip_fill_end(struct xip_fill *f, enum xip_fill_state state,
		  uint64_t bad_block, const char *msg);
void xip_fill_set_ready(struct xip_fill *f);
void xip_fill_count_request(struct xip_fill *f);
/* The filler's socket for requests (its name into the header). */
int xip_fill_listen(struct xip_fill *f);
/* One request from @sock: 1 with its run, 0 when none is waiting. */
int xip_fill_recv(int sock, uint64_t *first, uint64_t *n);

#endif /* XIP_FILL_H */
