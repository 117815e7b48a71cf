// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * This machine's page-table cost, the yardstick for every other figure:
 * microseconds per 4 KiB page to populate the page-table entries of a
 * shared mapping of a tmpfs file (MADV_POPULATE_READ, then by first
 * touch, one fault per page), against pread(2) of the same bytes, which
 * copies them without any entry.  Prints the best of @rounds:
 *   populate_us touch_us pread_us   (per 4 KiB page)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t size = (size_t)512 << 20, chunk = (size_t)1 << 20, pages;
	double best[3] = { 1e9, 1e9, 1e9 };
	int rounds = argc > 2 ? atoi(argv[2]) : 3, fd;
	char *buf;

	if (argc < 2) {
		fprintf(stderr, "usage: pagetable FILE-ON-TMPFS [ROUNDS]\n");
		return 2;
	}
	pages = size / 4096;
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	buf = malloc(chunk);
	if (fd < 0 || !buf) {
		perror(argv[1]);
		return 1;
	}
	memset(buf, 0x5a, chunk);
	for (size_t off = 0; off < size; off += chunk)
		if (pwrite(fd, buf, chunk, (off_t)off) != (ssize_t)chunk) {
			perror(argv[1]);
			return 1;
		}
	for (int r = 0; r < rounds; r++) {
		volatile char sum = 0;
		double t0, t[3];
		char *p;

		t0 = now();
		p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED || madvise(p, size, MADV_POPULATE_READ)) {
			perror("populate");
			return 1;
		}
		t[0] = now() - t0;
		munmap(p, size);
		t0 = now();
		p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		for (size_t off = 0; off < size; off += 4096)
			sum += p[off];
		t[1] = now() - t0;
		munmap(p, size);
		t0 = now();
		for (size_t off = 0; off < size; off += chunk)
			if (pread(fd, buf, chunk, (off_t)off) != (ssize_t)chunk) {
				perror("pread");
				return 1;
			}
		t[2] = now() - t0;
		for (int i = 0; i < 3; i++)
			if (t[i] < best[i])
				best[i] = t[i];
	}
	printf("%.3f %.3f %.3f\n", best[0] * 1e6 / (double)pages,
	       best[1] * 1e6 / (double)pages, best[2] * 1e6 / (double)pages);
	unlink(argv[1]);
	return 0;
}
