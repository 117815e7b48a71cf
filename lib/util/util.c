// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Read and write loops, growing arrays, the interrupt flag and the walk
 * of /proc (xip_util.h); the mount table is in mounts.c.
 * Only the C library: the libc-only front end links this file too.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "util/xip_error.h"
#include "util/xip_util.h"

static volatile sig_atomic_t *interrupt_flag;
static int interrupt_fd = -1;

void xip_set_interrupt(volatile sig_atomic_t *flag)
{
	interrupt_flag = flag;
}

void xip_set_interrupt_fd(int fd)
{
	interrupt_fd = fd;
}

int xip_interrupt_fd(void)
{
	return interrupt_fd;
}

bool xip_interrupted(void)
{
	return interrupt_flag && *interrupt_flag;
}

/* pwrite(2) when @off is not negative, else write(2) */
static int write_loop(int fd, const void *buf, size_t len, int64_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = off < 0 ? write(fd, p, len) :
				      pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
		if (off >= 0)
			off += n;
	}
	return 0;
}

int xip_write_all(int fd, const void *buf, size_t len)
{
	return write_loop(fd, buf, len, -1);
}

int xip_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	if (off > INT64_MAX)
		return -EINVAL;
	return write_loop(fd, buf, len, (int64_t)off);
}

/* pread(2) when @off is not negative, else read(2) */
static ssize_t read_loop(int fd, void *buf, size_t len, int64_t off)
{
	char *p = buf;
	size_t done = 0;

	if (len > SSIZE_MAX)
		return -EINVAL;
	while (done < len) {
		ssize_t n = off < 0 ? read(fd, p + done, len - done) :
				      pread(fd, p + done, len - done,
					    (off_t)off + (off_t)done);

		if (n < 0 && errno == EINTR && !xip_interrupted())
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

void xip_close_two(int a, int b)
{
	int lo = a < b ? a : b;

	/* nothing lies between two neighbours: only they are closed */
	if (lo >= 0 && (a > b ? a : b) == lo + 1 &&
	    syscall(SYS_close_range, (unsigned int)lo, (unsigned int)lo + 1,
		    0) == 0)
		return;
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
}

ssize_t xip_read_full(int fd, void *buf, size_t len)
{
	return read_loop(fd, buf, len, -1);
}

ssize_t xip_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	if (off > INT64_MAX)
		return -EINVAL;
	return read_loop(fd, buf, len, (int64_t)off);
}

int xip_pread_exact(int fd, void *buf, size_t len, uint64_t off,
		    const char *name)
{
	ssize_t n = xip_pread_full(fd, buf, len, off);

	if (n < 0)
		return xip_error((int)n, "%s: %s", name, strerror((int)-n));
	if ((size_t)n < len)
		return xip_error(-EIO, "%s: shrank while being read", name);
	return 0;
}

int xip_map_shared(int fd, size_t len, int prot, const char *name,
		   void **map)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return xip_error(-errno, "%s: cannot map: %s", name,
				 strerror(errno));
	*map = p;
	return 0;
}

uint64_t xip_fnv1a64(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

int xip_str_join(char *buf, size_t len, const char *a, const char *b)
{
	const char *part[2] = { a, b };
	size_t o = 0;

	if (!len)
		return -ENAMETOOLONG;
	for (size_t i = 0; i < 2 && part[i]; i++) {
		const char *s = part[i];
		size_t n = strlen(s), room = len - 1 - o;

		memcpy(buf + o, s, n < room ? n : room);
		o += n < room ? n : room;
		if (n > room) {
			buf[o] = '\0';
			return -ENAMETOOLONG;
		}
	}
	buf[o] = '\0';
	return 0;
}

int xip_grow(void **arr, size_t *cap, size_t need, size_t elsize)
{
	size_t max, ncap;
	void *p;

	if (need <= *cap)
		return 0;
	if (!elsize)
		return -ENOMEM;
	max = SIZE_MAX / elsize;	/* the most elements that fit */
	if (need > max)
		return -ENOMEM;
	/* twice the capacity; exactly what is asked where that is more (the
	 * first room) or where twice does not fit */
	ncap = *cap > max / 2 ? need : *cap * 2;
	if (ncap < need)
		ncap = need;
	p = realloc(*arr, ncap * elsize);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

int xip_pids_each(int (*fn)(pid_t pid, void *arg), void *arg)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int ret = 0;

	if (!d)
		return -errno;
	while (!ret && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid == getpid())
			continue;
		ret = fn((pid_t)pid, arg);
	}
	closedir(d);
	return ret;
}

/* ---- hex ------------------------------------------------------------------ */

int xip_hex_decode(const char *hex, uint8_t *out, size_t max)
{
	size_t n = strlen(hex);

	if (!n || n % 2 || n / 2 > max)
		return -EINVAL;
	for (size_t i = 0; i < n / 2; i++) {
		int hi = xip_hexval(hex[2 * i]), lo = xip_hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return (int)(n / 2);
}

static void hex_encode(const uint8_t *in, size_t len, char *buf,
		       const char *digits)
{
	for (size_t i = 0; i < len; i++) {
		buf[2 * i] = digits[in[i] >> 4];
		buf[2 * i + 1] = digits[in[i] & 15];
	}
	buf[2 * len] = '\0';
}

void xip_hex_encode(const uint8_t *in, size_t len, char *buf)
{
	hex_encode(in, len, buf, "0123456789abcdef");
}

void xip_hex_encode_upper(const uint8_t *in, size_t len, char *buf)
{
	hex_encode(in, len, buf, "0123456789ABCDEF");
}
