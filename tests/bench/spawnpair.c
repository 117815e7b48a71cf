// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * spawnpair N CMD_A... -- CMD_B...: start CMD_A and CMD_B alternately N
 * times each with posix_spawn, waiting for each, and print the median
 * wall time of one start-to-exit of each in milliseconds, then the
 * median CPU time (user + system, from wait4) of each: "A B CPU_A CPU_B".
 * The CPU times hold better than wall times on a loaded machine.
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static double tv_ms(struct timeval t)
{
	return t.tv_sec * 1e3 + t.tv_usec / 1e3;
}

static double once(char **argv, double *cpu)
{
	struct timespec t0, t1;
	struct rusage ru;
	pid_t pid;
	int st;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) ||
	    wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st)) {
		fprintf(stderr, "spawnpair: %s failed\n", argv[0]);
		exit(1);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*cpu = tv_ms(ru.ru_utime) + tv_ms(ru.ru_stime);
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
	double *a, *b, *ca, *cb;

	while (sep < argc && strcmp(argv[sep], "--"))
		sep++;
	if (n < 1 || sep == 2 || sep >= argc - 1) {
		fprintf(stderr, "usage: spawnpair N CMD_A... -- CMD_B...\n");
		return 2;
	}
	argv[sep] = NULL;
	a = calloc(n, sizeof(*a));
	b = calloc(n, sizeof(*b));
	ca = calloc(n, sizeof(*ca));
	cb = calloc(n, sizeof(*cb));
	if (!a || !b || !ca || !cb)
		return 1;
	for (int i = 0; i < n; i++) {
		if (i % 2) {
			b[i] = once(&argv[sep + 1], &cb[i]);
			a[i] = once(&argv[2], &ca[i]);
		} else {
			a[i] = once(&argv[2], &ca[i]);
			b[i] = once(&argv[sep + 1], &cb[i]);
		}
	}
	qsort(a, n, sizeof(*a), cmp);
	qsort(b, n, sizeof(*b), cmp);
	qsort(ca, n, sizeof(*ca), cmp);
	qsort(cb, n, sizeof(*cb), cmp);
	printf("%.4f %.4f %.4f %.4f\n", a[n / 2], b[n / 2], ca[n / 2],
	       cb[n / 2]);
	return 0;
}
