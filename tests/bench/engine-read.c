/*
 * In-process benchmark: the engine's read (xip_file_read into a buffer)
 * against a plain memcpy of the same bytes out of the segment.  Prints
 * the best throughput of each in MiB/s.
 *
 *   engine-read IMAGE PATH [REPEAT]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xip.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* memcpy of the same bytes, run by run, straight out of the segment */
static void copy_runs(struct xip_image *img, const struct xip_run *runs,
		      size_t nruns, uint8_t *buf, uint64_t size)
{
	uint64_t bs = xip_image_block_size(img);
	const uint8_t *base = xip_image_seg(img)->base;

	for (size_t i = 0; i < nruns; i++) {
		uint64_t off = runs[i].lblk * bs;
		uint64_t len = runs[i].len * bs;

		if (off + len > size)
			len = size - off;
		memcpy(buf + off, base + runs[i].pblk * bs, len);
	}
}

int main(int argc, char **argv)
{
	struct xip_image *img;
	struct xip_run *runs;
	size_t nruns;
	ext2_ino_t ino;
	struct ext2_inode_large in;
	int repeat = argc > 3 ? atoi(argv[3]) : 5;
	double best_e = 1e30, best_m = 1e30;
	uint64_t size;
	uint8_t *buf;

	if (argc < 3) {
		fprintf(stderr, "usage: %s IMAGE PATH [REPEAT]\n", argv[0]);
		return 2;
	}
	if (xip_image_open(argv[1], 0, &img) || xip_lookup(img, argv[2], 0, &ino) ||
	    xip_read_inode(img, ino, &in) ||
	    xip_file_runs(img, ino, &runs, &nruns)) {
		fprintf(stderr, "engine-read: %s\n", xip_errmsg());
		return 1;
	}
	size = EXT2_I_SIZE(&in);
	buf = malloc(size);
	if (!buf)
		return 1;
	memset(buf, 1, size);	/* fault the buffer in for both */
	/* alternate the order, so that neither profits from going second */
	for (int r = 0; r < 2 * repeat; r++) {
		double t;

		if ((r & 1) == (r / 2 & 1)) {
			t = now();
			if (xip_file_read(img, ino, 0, buf, size) != (ssize_t)size) {
				fprintf(stderr, "engine-read: %s\n", xip_errmsg());
				return 1;
			}
			t = now() - t;
			best_e = t < best_e ? t : best_e;
		} else {
			t = now();
			copy_runs(img, runs, nruns, buf, size);
			t = now() - t;
			best_m = t < best_m ? t : best_m;
		}
	}
	printf("engine %.1f memcpy %.1f\n", (double)size / 1048576 / best_e,
	       (double)size / 1048576 / best_m);
	free(runs);
	free(buf);
	xip_image_close(img);
	return 0;
}
