// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target "write": the engine's write side on a private writable copy
 * of the input (a memfd segment).  The last 48 bytes of the input, XORed
 * with a key so that an all-zero tail still means something, are six
 * operations: write, truncate, create + write, append, on the regular
 * files found in the first directories.
 *
 * Oracles beyond the sanitizers:
 *  - what a write reports written reads back; a truncated file has the
 *    new size and reads zeros where it grew;
 *  - an image that xip_check() finds clean before is clean afterwards
 *    (findings about XIP contiguity aside).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

#define NOPS 6
#define OP_BYTES 8
#define MAX_FILES 24
#define MAX_LEN 20000

/* all-zero tail: write, truncate, create, append, grow, write far */
static const uint8_t key[NOPS][OP_BYTES] = {
	{ 0, 0, 0xa0, 0x0f, 0x00, 0, 0x28, 0x23 },	/* 4000: 9000 bytes */
	{ 1, 1, 0x64, 0x00, 0x00, 0, 0, 0 },		/* truncate to 100 */
	{ 2, 0, 0x00, 0x00, 0x00, 0, 0x10, 0x27 },	/* new file, 10000 */
	{ 3, 2, 0x00, 0x00, 0x00, 0, 0x88, 0x13 },	/* append 5000 */
	{ 1, 3, 0x01, 0x00, 0x00, 20, 0, 0 },		/* grow to 1 MiB */
	{ 0, 4, 0x11, 0x01, 0x00, 12, 0x00, 0x02 },	/* at ~1.1 MiB */
};

struct files {
	ext2_ino_t ino[MAX_FILES];
	unsigned int n;
	unsigned int created;
};

static uint8_t buf[MAX_LEN], back[MAX_LEN];
static const uint8_t zeros[MAX_LEN];

static void fail(const char *what, ext2_ino_t ino, uint64_t a, uint64_t b)
{
	fprintf(stderr, "fuzz: inode %u: %s (%llu, %llu): %s\n", ino, what,
		(unsigned long long)a, (unsigned long long)b, xip_errmsg());
	abort();
}

static void collect(struct xip_image *img, ext2_ino_t dir, int depth,
		    struct files *f)
{
	struct xip_dirent *ents;
	size_t n;

	if (depth > 2 || xip_dir_list(img, dir, &ents, &n))
		return;
	for (size_t i = 0; i < n && f->n < MAX_FILES; i++) {
		struct xip_stat st;

		if (ents[i].name[0] == '.' || ents[i].ino == dir ||
		    xip_stat_inode(img, ents[i].ino, &st))
			continue;
		if (LINUX_S_ISREG(st.mode))
			f->ino[f->n++] = ents[i].ino;
		else if (LINUX_S_ISDIR(st.mode))
			collect(img, ents[i].ino, depth + 1, f);
	}
	free(ents);
}

static void do_write(struct xip_image *img, ext2_ino_t ino, uint64_t off,
		     size_t len, uint8_t seed)
{
	struct xip_stat st;
	ssize_t n, r;

	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed + i * 31 + (i >> 8));
	n = xip_file_write(img, ino, off, buf, len);
	if (n <= 0)
		return;
	r = xip_file_read(img, ino, off, back, (size_t)n);
	if (r != n || memcmp(buf, back, (size_t)n))
		fail("written bytes do not read back", ino, off, (uint64_t)n);
	/* stat may fail on damage elsewhere in the file: compare when not */
	if (!xip_stat_inode(img, ino, &st) && st.size < off + (uint64_t)n)
		fail("size after write", ino, off, (uint64_t)n);
}

static void do_truncate(struct xip_image *img, ext2_ino_t ino, uint64_t size)
{
	struct xip_stat st;
	uint64_t old;
	ssize_t r;
	size_t k;

	if (xip_stat_inode(img, ino, &st))
		return;
	old = st.size;
	if (xip_file_truncate(img, ino, size))
		return;
	if (!xip_stat_inode(img, ino, &st) && st.size != size)
		fail("size after truncate", ino, size, st.size);
	if (xip_file_read(img, ino, size, back, 1) != 0)
		fail("bytes past the end after truncate", ino, size, 0);
	if (size > old) {
		k = size - old < MAX_LEN ? (size_t)(size - old) : MAX_LEN;
		r = xip_file_read(img, ino, old, back, k);
		if (r == (ssize_t)k && memcmp(back, zeros, k))
			fail("grown part is not zero", ino, old, size);
	}
}

static void run_ops(struct xip_image *img, const uint8_t *tail)
{
	struct files f = { { 0 }, 0, 0 };
	char path[64];

	collect(img, EXT2_ROOT_INO, 0, &f);
	for (int i = 0; i < NOPS; i++) {
		uint8_t o[OP_BYTES];
		ext2_ino_t ino;
		uint64_t off;
		size_t len;

		for (int j = 0; j < OP_BYTES; j++)
			o[j] = tail[i * OP_BYTES + j] ^ key[i][j];
		off = (uint64_t)(o[2] | o[3] << 8 | o[4] << 16) << (o[5] % 34);
		len = (size_t)(o[6] | o[7] << 8) % MAX_LEN;
		ino = f.n ? f.ino[o[1] % f.n] : (ext2_ino_t)o[1];
		switch (o[0] % 4) {
		case 0:
			do_write(img, ino, off, len, o[1]);
			break;
		case 1:
			do_truncate(img, ino, off);
			break;
		case 2:
			snprintf(path, sizeof(path), "%s/new-%u",
				 o[1] & 1 ? "/dir" : "", f.created++);
			if (!xip_create(img, path, 0644, &ino)) {
				if (f.n < MAX_FILES)
					f.ino[f.n++] = ino;
				do_write(img, ino, off, len, o[1]);
			}
			break;
		case 3: {
			struct xip_stat st;

			if (!xip_stat_inode(img, ino, &st))
				do_write(img, ino, st.size, len, o[1]);
			break;
		}
		}
	}
}

/* Errors of xip_check, XIP contiguity and alignment findings aside; -1
 * when the check did not run or did not list everything. */
static long check_errors(int fd)
{
	struct xip_check_report rep = { 0 };
	struct xip_check_opts opts = { 0 };
	struct xip_seg *seg;
	long errors = 0;

	if (xip_seg_open_fd(fd, "fuzz.img", 0, &seg))
		return -1;
	if (xip_check(seg, &opts, &rep)) {
		xip_seg_close(seg);
		return -1;
	}
	for (size_t i = 0; i < rep.nfindings; i++)
		if (rep.findings[i].severity == XIP_CHECK_ERROR &&
		    strcmp(rep.findings[i].object, "xip"))
			errors++;
	if (rep.unlisted || !rep.walked)
		errors = -1;
	xip_check_report_free(&rep);
	xip_seg_close(seg);
	return errors;
}

FUZZ_TARGET(write)
{
	struct xip_seg *seg;
	struct xip_image *img;
	long before, after;
	int fd;

	if (size < 2048 + NOPS * OP_BYTES)
		return 0;
	fd = memfd_create("fuzz.img", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	before = check_errors(fd);
	if (!xip_seg_open_fd(fd, "fuzz.img", XIP_SEG_WRITE, &seg) &&
	    !xip_image_open_segment(seg, XIP_IMG_WRITE | XIP_IMG_NOLOCK,
				    &img)) {
		run_ops(img, data + size - NOPS * OP_BYTES);
		xip_image_close(img);
		after = check_errors(fd);
		if (before == 0 && after != 0) {
			fprintf(stderr, "fuzz: a clean image has %ld errors after writing\n",
				after);
			abort();
		}
	}
	close(fd);
	return 0;
}
