// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * glibc entry points for the musl-linked front end.
 *
 * The front end links the distribution's static libext2fs, libcom_err,
 * libblkid, popt and zlib, which were compiled against glibc with
 * _FORTIFY_SOURCE: they call the checked variants (__fprintf_chk, ...)
 * and a few glibc names (fcntl64, __open_2, __sched_cpualloc) that musl
 * does not have.  Each one here does what glibc documents: the check,
 * then the plain function.  A failed check aborts, as glibc's
 * __chk_fail does.  Only built into the musl front end.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int __fprintf_chk(FILE *f, int flag, const char *fmt, ...);
int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap);
int __printf_chk(int flag, const char *fmt, ...);
int __vprintf_chk(int flag, const char *fmt, va_list ap);
int __snprintf_chk(char *s, size_t n, int flag, size_t slen,
		   const char *fmt, ...);
int __vsnprintf_chk(char *s, size_t n, int flag, size_t slen,
		    const char *fmt, va_list ap);
int __sprintf_chk(char *s, int flag, size_t slen, const char *fmt, ...);
int __vsprintf_chk(char *s, int flag, size_t slen, const char *fmt,
		   va_list ap);
int __asprintf_chk(char **s, int flag, const char *fmt, ...);
int __vasprintf_chk(char **s, int flag, const char *fmt, va_list ap);
void *__memcpy_chk(void *d, const void *s, size_t n, size_t dlen);
void *__memmove_chk(void *d, const void *s, size_t n, size_t dlen);
void *__memset_chk(void *d, int c, size_t n, size_t dlen);
char *__strcpy_chk(char *d, const char *s, size_t dlen);
char *__stpcpy_chk(char *d, const char *s, size_t dlen);
char *__strcat_chk(char *d, const char *s, size_t dlen);
char *__strncpy_chk(char *d, const char *s, size_t n, size_t dlen);
void __explicit_bzero_chk(void *d, size_t n, size_t dlen);
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int fcntl64(int fd, int cmd, ...);
cpu_set_t *__sched_cpualloc(size_t count);
void __sched_cpufree(cpu_set_t *set);

static void chk_fail(void)
{
	static const char msg[] = "*** buffer overflow detected ***: terminated\n";

	fwrite(msg, 1, sizeof(msg) - 1, stderr);
	abort();
}

/*
 * The variadic entry points all take the same path: their v-variant,
 * through this macro.
 */
#define VA_CALL(last, call)			\
	do {					\
		va_list ap;			\
		int r;				\
						\
		va_start(ap, last);		\
		r = call;			\
		va_end(ap);			\
		return r;			\
	} while (0)

int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap)
{
	return vfprintf(f, fmt, ap);
}

int __fprintf_chk(FILE *f, int flag, const char *fmt, ...)
{
	VA_CALL(fmt, __vfprintf_chk(f, flag, fmt, ap));
}

int __vprintf_chk(int flag, const char *fmt, va_list ap)
{
	return vprintf(fmt, ap);
}

int __printf_chk(int flag, const char *fmt, ...)
{
	VA_CALL(fmt, __vprintf_chk(flag, fmt, ap));
}

int __vsnprintf_chk(char *s, size_t n, int flag, size_t slen,
		    const char *fmt, va_list ap)
{
	if (n > slen)
		chk_fail();
	return vsnprintf(s, n, fmt, ap);
}

int __snprintf_chk(char *s, size_t n, int flag, size_t slen,
		   const char *fmt, ...)
{
	VA_CALL(fmt, __vsnprintf_chk(s, n, flag, slen, fmt, ap));
}

int __vsprintf_chk(char *s, int flag, size_t slen, const char *fmt,
		   va_list ap)
{
	int r;

	if (slen == 0)
		chk_fail();
	r = vsnprintf(s, slen, fmt, ap);
	if (r >= 0 && (size_t)r >= slen)
		chk_fail();
	return r;
}

int __sprintf_chk(char *s, int flag, size_t slen, const char *fmt, ...)
{
	VA_CALL(fmt, __vsprintf_chk(s, flag, slen, fmt, ap));
}

int __vasprintf_chk(char **s, int flag, const char *fmt, va_list ap)
{
	return vasprintf(s, fmt, ap);
}

int __asprintf_chk(char **s, int flag, const char *fmt, ...)
{
	VA_CALL(fmt, __vasprintf_chk(s, flag, fmt, ap));
}

void *__memcpy_chk(void *d, const void *s, size_t n, size_t dlen)
{
	if (n > dlen)
		chk_fail();
	return memcpy(d, s, n);
}

void *__memmove_chk(void *d, const void *s, size_t n, size_t dlen)
{
	if (n > dlen)
		chk_fail();
	return memmove(d, s, n);
}

void *__memset_chk(void *d, int c, size_t n, size_t dlen)
{
	if (n > dlen)
		chk_fail();
	return memset(d, c, n);
}

char *__strcpy_chk(char *d, const char *s, size_t dlen)
{
	if (strlen(s) >= dlen)
		chk_fail();
	return strcpy(d, s);
}

char *__stpcpy_chk(char *d, const char *s, size_t dlen)
{
	if (strlen(s) >= dlen)
		chk_fail();
	return stpcpy(d, s);
}

char *__strcat_chk(char *d, const char *s, size_t dlen)
{
	if (strlen(d) + strlen(s) >= dlen)
		chk_fail();
	return strcat(d, s);
}

char *__strncpy_chk(char *d, const char *s, size_t n, size_t dlen)
{
	if (n > dlen)
		chk_fail();
	return strncpy(d, s, n);
}

void __explicit_bzero_chk(void *d, size_t n, size_t dlen)
{
	if (n > dlen)
		chk_fail();
	explicit_bzero(d, n);
}

/* glibc's checks for a missing mode: O_CREAT and O_TMPFILE need one */
static void open_check(int flags)
{
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
		static const char msg[] =
			"*** invalid open call: O_CREAT or O_TMPFILE without mode ***: terminated\n";

		fwrite(msg, 1, sizeof(msg) - 1, stderr);
		abort();
	}
}

int __open_2(const char *path, int flags)
{
	open_check(flags);
	return open(path, flags);
}

int __open64_2(const char *path, int flags)
{
	open_check(flags);
	return open(path, flags);
}

int __openat_2(int dirfd, const char *path, int flags)
{
	open_check(flags);
	return openat(dirfd, path, flags);
}

/* x86-64: off_t is 64 bits, so fcntl64 is fcntl */
int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl(fd, cmd, arg);
}

cpu_set_t *__sched_cpualloc(size_t count)
{
	return calloc(1, CPU_ALLOC_SIZE(count));
}

void __sched_cpufree(cpu_set_t *set)
{
	free(set);
}
