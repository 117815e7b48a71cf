// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target "file": the read side of the engine on a fuzzed image.
 * Walks the tree from the root as `ls -R` does (xip_dir_list, stat), looks
 * every path up again (following symlinks and not), reads every regular
 * file (xip_file_read, the read actor, get_xip_page, the runs) and every
 * symlink, then the same on the first inodes by number, linked or not.
 *
 * Oracle beyond the sanitizers: what xip_file_read returns for a page
 * must be what get_xip_page points at (zeros for a hole).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "reader/reader_int.h"

#define FUZZ_MAX_DEPTH 12
#define FUZZ_MAX_INODES 48

static const uint8_t zeros[65536];

struct walk {
	struct xip_image *img;
	unsigned int files;
	uint8_t *buf;
};

static const char *const fixed_paths[] = {
	"/", "/.", "/..", "/../..", "/hello.txt", "/dir/sub/forty",
	"/rel-link", "/abs-link/forty", "/dir/sub/up/hello.txt", "/loop-a",
	"/dangling", "/fast-link/", "/dir/sub/deeper/../../sub/./forty",
	"/sparse", "/big", "/dir/slow-link-with-a-target-longer-than-sixty-bytes",
	"/lost+found", "/missing/x", "//dir//sub//",
};

static int count_actor(void *ctx, const void *data, size_t len)
{
	const uint8_t **pos = ctx;

	/* the pieces come in file order and must match the copy */
	if (memcmp(*pos, data, len)) {
		fprintf(stderr, "fuzz: read actor and xip_file_read differ\n");
		abort();
	}
	*pos += len;
	return 0;
}

/* Every page xip_file_read returned must be what get_xip_page maps. */
static void check_pages(struct xip_image *img, ext2_ino_t ino,
			const uint8_t *buf, size_t n)
{
	size_t bs = img->block_size;

	for (size_t off = 0; off < n; off += bs) {
		size_t len = n - off < bs ? n - off : bs;
		void *p;
		int ret = xip_get_page(img, ino, off / bs, false, &p);

		if (ret == -ENODATA) {
			if (memcmp(buf + off, zeros, len)) {
				fprintf(stderr, "fuzz: inode %u: hole page %zu reads non-zero\n",
					ino, off / bs);
				abort();
			}
		} else if (!ret && memcmp(p, buf + off, len)) {
			fprintf(stderr, "fuzz: inode %u: page %zu differs from read\n",
				ino, off / bs);
			abort();
		}
	}
}

static void fuzz_read(struct walk *w, ext2_ino_t ino)
{
	struct xip_run *runs;
	const uint8_t *pos;
	size_t nruns;
	blk64_t pblk;
	ssize_t n;

	n = xip_file_read(w->img, ino, 0, w->buf, FUZZ_MAX_READ);
	if (n > 0) {
		check_pages(w->img, ino, w->buf, (size_t)n);
		pos = w->buf;
		xip_file_read_actor(w->img, ino, 0, (size_t)n, count_actor,
				    &pos);
	}
	/* unaligned reads across page boundaries, and far past the end */
	xip_file_read(w->img, ino, 4095, w->buf, 8193);
	xip_file_read(w->img, ino, (1ULL << 40) - 3, w->buf, 7);
	xip_file_read(w->img, ino, UINT64_MAX - 1, w->buf, 2);
	if (!xip_file_runs(w->img, ino, &runs, &nruns))
		free(runs);
	xip_bmap(w->img, ino, 0, &pblk);
	xip_bmap(w->img, ino, 12, &pblk);
	xip_bmap(w->img, ino, 12 + 1024, &pblk);
	xip_bmap(w->img, ino, UINT32_MAX, &pblk);
}

static void fuzz_inode(struct walk *w, ext2_ino_t ino)
{
	struct xip_stat st;
	char target[4096];

	if (xip_stat_inode(w->img, ino, &st))
		return;
	if (LINUX_S_ISREG(st.mode))
		fuzz_read(w, ino);
	else if (LINUX_S_ISLNK(st.mode))
		xip_readlink(w->img, ino, target, sizeof(target));
}

static void fuzz_dir(struct walk *w, ext2_ino_t dir, const char *path,
		     unsigned int depth)
{
	struct xip_dirent *ents;
	size_t n;

	if (depth > FUZZ_MAX_DEPTH || xip_dir_list(w->img, dir, &ents, &n))
		return;
	for (size_t i = 0; i < n && w->files < FUZZ_MAX_FILES; i++) {
		const char *name = ents[i].name;
		char sub[1024];
		ext2_ino_t ino;

		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		w->files++;
		snprintf(sub, sizeof(sub), "%s/%s", path, name);
		xip_lookup(w->img, sub, 0, &ino);
		if (xip_lookup(w->img, sub, XIP_LOOKUP_NOFOLLOW, &ino))
			continue;
		fuzz_inode(w, ino);
		if (ents[i].type == EXT2_FT_DIR || ents[i].type == 0)
			fuzz_dir(w, ino, sub, depth + 1);
	}
	free(ents);
}

FUZZ_TARGET(file)
{
	struct walk w = { NULL, 0, NULL };
	ext2_ino_t ino;

	if (fuzz_open_image(data, size, 0, &w.img))
		return 0;
	w.buf = malloc(FUZZ_MAX_READ);
	if (w.buf) {
		fuzz_dir(&w, EXT2_ROOT_INO, "", 0);
		for (size_t i = 0; i < sizeof(fixed_paths) / sizeof(*fixed_paths);
		     i++) {
			if (!xip_lookup(w.img, fixed_paths[i], 0, &ino))
				fuzz_inode(&w, ino);
		}
		for (ino = 1; ino <= FUZZ_MAX_INODES; ino++)
			fuzz_inode(&w, ino);
		fuzz_inode(&w, w.img->fs->super->s_inodes_count);
		fuzz_inode(&w, w.img->fs->super->s_inodes_count + 1);
	}
	free(w.buf);
	xip_image_close(w.img);
	return 0;
}
