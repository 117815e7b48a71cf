/* Shared helpers of the cmocka unit tests. */
#ifndef XIP_UNIT_H
#define XIP_UNIT_H

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "xip.h"
#include "exec/xip_elf.h"

/* A fresh temporary directory for the test binary, removed at exit. */
static char unit_dir[256];

static void unit_cleanup(void)
{
	char cmd[300];

	if (unit_dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", unit_dir);
		if (system(cmd))
			fprintf(stderr, "cannot remove %s\n", unit_dir);
	}
}

static inline const char *unit_tmpdir(void)
{
	if (!unit_dir[0]) {
		const char *base = getenv("TMPDIR");

		snprintf(unit_dir, sizeof(unit_dir), "%s/xipunit.XXXXXX",
			 base ? base : "/tmp");
		if (!mkdtemp(unit_dir))
			abort();
		atexit(unit_cleanup);
	}
	return unit_dir;
}

static inline char *unit_path(const char *name)
{
	static char buf[4][512];
	static int k;
	char *p = buf[k++ & 3];

	snprintf(p, 512, "%s/%s", unit_tmpdir(), name);
	return p;
}

/* Write @len bytes of @byte into a new file. */
static inline void unit_fill_file(const char *path, size_t len, int byte)
{
	FILE *f = fopen(path, "w");
	char buf[4096];

	assert_non_null(f);
	memset(buf, byte, sizeof(buf));
	while (len) {
		size_t n = len < sizeof(buf) ? len : sizeof(buf);

		assert_int_equal(fwrite(buf, 1, n, f), n);
		len -= n;
	}
	assert_int_equal(fclose(f), 0);
}

/* Run the shell command printed from @fmt: it must succeed. */
static inline void unit_sh(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static inline void unit_sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(cmd));
	assert_int_equal(system(cmd), 0);
}

/* Make an ext2 image with the real mke2fs. */
static inline void unit_mke2fs(const char *path, const char *size,
			       unsigned int block_size, const char *extra)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd),
		 "rm -f '%s' && mke2fs -q -F -t ext2 -b %u -L unitlabel %s '%s' %s >/dev/null 2>&1",
		 path, block_size, extra ? extra : "", path, size);
	assert_int_equal(system(cmd), 0);
}

/* Overwrite bytes of a file at an offset. */
static inline void unit_poke(const char *path, off_t off, const void *data,
			     size_t len)
{
	int fd = open(path, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, data, len, off), (ssize_t)len);
	close(fd);
}

static inline void unit_peek(const char *path, off_t off, void *data, size_t len)
{
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, data, len, off), (ssize_t)len);
	close(fd);
}

/*
 * A cross build's tests meet the build machine's programs (/usr/bin/true
 * of x86-64 under qemu-aarch64): true when @path is an ELF file for
 * another machine than the one the library was built for, in a cross
 * build only (natively such a file is a failure to report).
 */
static inline bool unit_foreign_elf(const char *path)
{
#ifdef XIP_CROSS_BUILD
	unsigned char h[20];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : pread(fd, h, sizeof(h), 0);

	if (fd >= 0)
		close(fd);
	if (n == (ssize_t)sizeof(h) && !memcmp(h, "\177ELF", 4) &&
	    (h[18] | h[19] << 8) != xip_elf_host_machine()) {
		printf("# %s: for another machine, left out\n", path);
		return true;
	}
#endif
	return false;
}

/*
 * Parse an ELF file of this machine into *@elf: false (nothing to free)
 * when @path is not there or is for another machine.
 */
static inline __attribute__((warn_unused_result)) bool
unit_parse_host_elf(const char *path, struct xip_elf *elf)
{
	int fd;

	if (unit_foreign_elf(path))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		print_message("# %s: not present\n", path);
		return false;
	}
	assert_int_equal(xip_elf_parse_fd(fd, path, elf), 0);
	close(fd);
	return true;
}

/* @pred holds for every string of @yes, for none of @no (NULL-ended). */
static inline void unit_pred_splits(bool (*pred)(const char *),
				    const char *const *yes,
				    const char *const *no)
{
	for (; *yes; yes++)
		if (!pred(*yes))
			fail_msg("false for \"%s\"", *yes);
	for (; *no; no++)
		if (pred(*no))
			fail_msg("true for \"%s\"", *no);
}

/* Under qemu-user: its emulated /proc/self/stat counts 0 threads. */
static inline bool unit_emulated(void)
{
	char buf[1024], *p;
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC), n = 0;
	ssize_t len = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	if (len <= 0)
		return false;
	buf[len] = '\0';
	p = strrchr(buf, ')');
	while (p && n < 18 && (p = strchr(p + 1, ' ')))
		n++;
	return p && n == 18 && strtol(p + 1, NULL, 10) == 0;
}

#endif
