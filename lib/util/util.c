// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Read and write loops, growing arrays, the interrupt flag and the mount
 * table (xip_util.h).
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
#include <sys/sysmacros.h>

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

/* ---- the mount table ----------------------------------------------------- */

/* Undo the kernel's \ooo escapes (show_mountinfo's mangle()) in place. */
static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++, d++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				    (s[3] - '0'));
			s += 3;
		} else {
			*d = *s;
		}
	}
	*d = '\0';
}

/* The next field of @*line separated by one space, or NULL at the end. */
static char *next_field(char **line)
{
	char *f = *line, *sp;

	if (!f)
		return NULL;
	sp = strchr(f, ' ');
	if (sp) {
		*sp = '\0';
		*line = sp + 1;
	} else {
		*line = NULL;
	}
	return f;
}

/*
 * "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw": the
 * optional fields end at "-", then type, source and super options.
 */
static bool parse_mount(char *line, struct xip_mount *m)
{
	char *f[5], *dev, *end, *opt;

	for (int i = 0; i < 5; i++)
		if (!(f[i] = next_field(&line)))
			return false;
	if (!next_field(&line))		/* the mount options */
		return false;
	do {
		opt = next_field(&line);
		if (!opt)
			return false;
	} while (strcmp(opt, "-"));
	m->type = next_field(&line);
	m->source = next_field(&line);
	if (!m->type || !m->source)
		return false;
	dev = f[2];
	m->major = (unsigned int)strtoul(dev, &end, 10);
	if (end == dev || *end != ':')
		return false;
	dev = end + 1;
	m->minor = (unsigned int)strtoul(dev, &end, 10);
	if (end == dev || *end)
		return false;
	unescape(f[3]);
	unescape(f[4]);
	unescape((char *)m->type);
	unescape((char *)m->source);
	m->root = f[3];
	m->point = f[4];
	return true;
}

int xip_mounts_each(const char *table,
		    int (*fn)(const struct xip_mount *m, void *arg),
		    void *arg)
{
	FILE *f = fopen(table ? table : "/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int ret = 0;

	if (!f)
		return -errno;
	errno = 0;
	while (!ret && (n = getline(&line, &cap, f)) >= 0) {
		struct xip_mount m;

		if (n > 0 && line[n - 1] == '\n')
			line[n - 1] = '\0';
		if (parse_mount(line, &m))
			ret = fn(&m, arg);
		errno = 0;
	}
	if (!ret && ferror(f))
		ret = errno ? -errno : -EIO;
	else if (!ret && errno == ENOMEM)
		ret = -ENOMEM;
	free(line);
	fclose(f);
	return ret;
}

struct point_query {
	dev_t dev;
	bool whole;
	char *buf;
	size_t len;
};

static int match_point(const struct xip_mount *m, void *arg)
{
	struct point_query *q = arg;

	if (makedev(m->major, m->minor) != q->dev ||
	    (q->whole && strcmp(m->root, "/")))
		return 0;
	snprintf(q->buf, q->len, "%s", m->point);
	return 1;
}

int xip_mount_point(const char *table, dev_t dev, bool whole, char *buf,
		    size_t len)
{
	struct point_query q = { dev, whole, buf, len };

	buf[0] = '\0';
	return xip_mounts_each(table, match_point, &q);
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

void xip_hex_encode(const uint8_t *in, size_t len, char *buf)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		buf[2 * i] = digits[in[i] >> 4];
		buf[2 * i + 1] = digits[in[i] & 15];
	}
	buf[2 * len] = '\0';
}
