// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * spawnpair N CMD_A... -- CMD_B...: start CMD_A and CMD_B alternately N
 * times each with posix_spawn, waiting for each, and print the median
 * wall time of one start-to-exit of each in milliseconds: "A B".
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static double once(char **argv)
{
	struct timespec t0, t1;
	pid_t pid;
	int st;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) ||
	    waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "spawnpair: %s failed\n", argv[0]);
		exit(1);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0, sep = 2;
	double *a, *b;

	while (sep < argc && strcmp(argv[sep], "--"))
		sep++;
	if (n < 1 || sep == 2 || sep >= argc - 1) {
		fprintf(stderr, "usage: spawnpair N CMD_A... -- CMD_B...\n");
		return 2;
	}
	argv[sep] = NULL;
	a = calloc(n, sizeof(*a));
	b = calloc(n, sizeof(*b));
	if (!a || !b)
		return 1;
	for (int i = 0; i < n; i++) {
		if (i % 2) {
			b[i] = once(&argv[sep + 1]);
			a[i] = once(&argv[2]);
		} else {
			a[i] = once(&argv[2]);
			b[i] = once(&argv[sep + 1]);
		}
	}
	qsort(a, n, sizeof(*a), cmp);
	qsort(b, n, sizeof(*b), cmp);
	printf("%.4f %.4f\n", a[n / 2], b[n / 2]);
	return 0;
}
