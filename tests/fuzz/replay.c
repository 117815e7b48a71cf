// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Replays stored inputs through the fuzz targets without libFuzzer:
 *
 *	fuzz-replay TARGET FILE|DIR...
 *	fuzz-replay --list
 *
 * Built with the compiler and sanitizers of the main build, so that the
 * regression inputs and seed corpora run under `make check` everywhere
 * (ASan and UBSan report and abort on any fault).  Prints one line per
 * input; exits 0 when every input ran, 2 on a usage error, 3 when an input
 * could not be read.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static const struct {
	const char *name;
	int (*fn)(const uint8_t *data, size_t size);
} targets[] = {
#define XIP_FUZZ_TARGET(name) { #name, fuzz_target_##name },
#include "targets.h"
#undef XIP_FUZZ_TARGET
};

#define NTARGETS (sizeof(targets) / sizeof(targets[0]))

static int read_file(const char *path, uint8_t **datap, size_t *sizep)
{
	uint8_t *data = NULL;
	size_t size = 0, cap = 0;
	FILE *f = fopen(path, "rb");

	if (!f)
		return -errno;
	for (;;) {
		size_t n;

		if (size == cap) {
			uint8_t *p;

			cap = cap ? 2 * cap : 65536;
			p = realloc(data, cap);
			if (!p) {
				free(data);
				fclose(f);
				return -ENOMEM;
			}
			data = p;
		}
		n = fread(data + size, 1, cap - size, f);
		size += n;
		if (n == 0)
			break;
	}
	fclose(f);
	*datap = data;
	*sizep = size;
	return 0;
}

static int replay_file(int (*fn)(const uint8_t *, size_t), const char *path)
{
	uint8_t *data = NULL;
	size_t size = 0;
	int ret;

	ret = read_file(path, &data, &size);
	if (ret) {
		fprintf(stderr, "fuzz-replay: %s: %s\n", path, strerror(-ret));
		return 3;
	}
	printf("%s (%zu bytes)\n", path, size);
	fflush(stdout);
	fn(data, size);
	free(data);
	return 0;
}

static int replay_path(int (*fn)(const uint8_t *, size_t), const char *path)
{
	struct dirent **names;
	struct stat st;
	int n, rc = 0;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "fuzz-replay: %s: %s\n", path, strerror(errno));
		return 3;
	}
	if (!S_ISDIR(st.st_mode))
		return replay_file(fn, path);
	n = scandir(path, &names, NULL, alphasort);
	if (n < 0) {
		fprintf(stderr, "fuzz-replay: %s: %s\n", path, strerror(errno));
		return 3;
	}
	for (int i = 0; i < n; i++) {
		char sub[4096];

		if (names[i]->d_name[0] != '.') {
			snprintf(sub, sizeof(sub), "%s/%s", path,
				 names[i]->d_name);
			if (replay_path(fn, sub))
				rc = 3;
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 0;

	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < NTARGETS; i++)
			printf("%s\n", targets[i].name);
		return 0;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: fuzz-replay TARGET FILE|DIR...\ntargets:");
		for (size_t i = 0; i < NTARGETS; i++)
			fprintf(stderr, " %s", targets[i].name);
		fprintf(stderr, "\n");
		return 2;
	}
	for (size_t i = 0; i < NTARGETS; i++) {
		if (strcmp(argv[1], targets[i].name))
			continue;
		for (int a = 2; a < argc; a++)
			if (replay_path(targets[i].fn, argv[a]))
				rc = 3;
		return rc;
	}
	fprintf(stderr, "fuzz-replay: unknown target '%s'\n", argv[1]);
	return 2;
}
