// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target "verity": the verity superblock and its tree, as `info`
 * reads them on any image (xip_verity_probe), as `verify --root-hash`
 * checks them in place (xip_verity_check) and as `attach --root-hash`
 * checks them while the bytes arrive (the superblocks read ahead, every
 * block hashed or known zero, the tree compared from a file).
 *
 * The input is a root hash of XIP_VERITY_DIGEST_MAX bytes (the first
 * digest-size bytes count), then the image.  The seeds carry their right
 * root hash, so that mutations of the tree or the data reach every level
 * of the comparison, not only the root's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "verity/verity_int.h"

#define ROOT_LEN	XIP_VERITY_DIGEST_MAX
#define MAX_HASHED	(1u << 20)	/* image bytes hashed per input */
#define PIECE		3000		/* not a multiple of a block */

struct mem {
	const uint8_t *base;
	uint64_t size;
};

static int mem_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	const struct mem *m = ctx;

	if (off > m->size || len > m->size - off)
		return -EIO;
	memcpy(buf, m->base + off, len);
	return 0;
}

/* All zeros?  One memcmp: a byte loop is instrumented at every byte. */
static bool zeros(const uint8_t *p, uint64_t n)
{
	return !n || (!p[0] && !memcmp(p, p + 1, n - 1));
}

/* What a successful probe says must hold: the tree inside the image. */
static void probe_sound(const struct xip_verity_info *vi, uint64_t size)
{
	if (vi->end > size || vi->tree_offset > vi->end ||
	    vi->tree_offset < vi->hash_offset + XIP_VERITY_SB_SIZE ||
	    vi->digest_size > XIP_VERITY_DIGEST_MAX ||
	    vi->salt_size > XIP_VERITY_SALT_MAX || !vi->hash_block_size ||
	    vi->data_blocks * vi->data_block_size != vi->hash_offset ||
	    vi->tree_blocks * vi->hash_block_size != vi->end - vi->tree_offset)
		abort();
}

/* The image streamed in pieces that straddle blocks, then finished. */
static void stream(const uint8_t *img, uint64_t size, const uint8_t *root,
		   size_t root_len)
{
	struct mem m = { img, size };
	struct xip_verity_stream *vs;
	struct xip_verity_info vi;
	struct xip_verity_bad bad;
	int fd;

	if (xip_verity_stream_open(size, mem_read, &m, &vs, &bad))
		return;
	for (uint64_t off = 0; off < size; off += PIECE) {
		uint64_t n = size - off < PIECE ? size - off : PIECE;

		if (zeros(img + off, n))
			xip_verity_stream_zero(vs, off, n);
		else if (xip_verity_stream_hash(vs, off, img + off, n))
			goto out;
	}
	fd = memfd_create("fuzz.img", MFD_CLOEXEC);
	if (fd < 0)
		goto out;
	if (pwrite(fd, img, size, 0) == (ssize_t)size)
		xip_verity_stream_finish(vs, fd, "fuzz.img", root, root_len,
					 &vi, &bad);
	close(fd);
out:
	xip_verity_stream_free(vs);
}

FUZZ_TARGET(verity)
{
	struct xip_verity_info vi, vc;
	struct xip_verity_bad bad;
	const uint8_t *img = data + ROOT_LEN;
	uint64_t n;

	if (size < ROOT_LEN)
		return 0;
	n = size - ROOT_LEN;
	if (xip_verity_probe(img, n, &vi) || !vi.present)
		return 0;
	probe_sound(&vi, n);
	if (vi.end > MAX_HASHED)
		return 0;
	if (!xip_verity_check(img, n, data, vi.digest_size, 1, &vc, &bad) &&
	    memcmp(&vi, &vc, sizeof(vi)))
		abort();
	stream(img, n, data, vi.digest_size);
	return 0;
}
