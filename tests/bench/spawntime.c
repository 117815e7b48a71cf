// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * spawntime N CMD1 -- CMD2 -- ...: run the commands N times each,
 * interleaved (one spawn of each in turn, in rotating order), and print
 * the median wall time of a spawn-to-exit of each, in milliseconds, one
 * per line.  A command that fails stops it with status 1.
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	char **cmd[16];
	int ncmd = 0, n = argc > 1 ? atoi(argv[1]) : 0;
	double *t[16];

	if (n <= 0 || argc < 3) {
		fprintf(stderr, "usage: spawntime N CMD [-- CMD]...\n");
		return 2;
	}
	cmd[ncmd++] = &argv[2];
	for (int i = 2; i < argc && ncmd < 16; i++)
		if (!strcmp(argv[i], "--")) {
			argv[i] = NULL;
			cmd[ncmd++] = &argv[i + 1];
		}
	for (int c = 0; c < ncmd; c++)
		t[c] = calloc((size_t)n, sizeof(double));
	for (int r = 0; r < n; r++)
		for (int k = 0; k < ncmd; k++) {
			int c = (k + r) % ncmd, st;
			double t0 = now_ms();
			pid_t pid;

			if (posix_spawn(&pid, cmd[c][0], NULL, NULL, cmd[c],
					environ) ||
			    waitpid(pid, &st, 0) != pid || st != 0) {
				fprintf(stderr, "spawntime: %s failed\n",
					cmd[c][0]);
				return 1;
			}
			t[c][r] = now_ms() - t0;
		}
	for (int c = 0; c < ncmd; c++) {
		qsort(t[c], (size_t)n, sizeof(double), cmp);
		printf("%.3f\n", t[c][n / 2]);
	}
	return 0;
}
