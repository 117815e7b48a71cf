/*
 * Unit tests of lib/glibc-compat.c and of the arena as malloc, in the
 * musl build they serve (no cmocka: its library is built for glibc).
 * Prints TAP.  A failed check must abort, as glibc's __chk_fail does:
 * those cases run in a child and must die of SIGABRT.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <malloc.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int __fprintf_chk(FILE *f, int flag, const char *fmt, ...);
int __snprintf_chk(char *s, size_t n, int flag, size_t slen,
		   const char *fmt, ...);
int __sprintf_chk(char *s, int flag, size_t slen, const char *fmt, ...);
int __asprintf_chk(char **s, int flag, const char *fmt, ...);
void *__memcpy_chk(void *d, const void *s, size_t n, size_t dlen);
char *__strcpy_chk(char *d, const char *s, size_t dlen);
char *__stpcpy_chk(char *d, const char *s, size_t dlen);
char *__strcat_chk(char *d, const char *s, size_t dlen);
int __open_2(const char *path, int flags);
int fcntl64(int fd, int cmd, ...);
cpu_set_t *__sched_cpualloc(size_t count);
void __sched_cpufree(cpu_set_t *set);

static int n_test, failed;

static void ok(int cond, const char *what)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++n_test, what);
	failed |= !cond;
}

/* Does @fn, run in a child, die of SIGABRT? */
static int aborts(void (*fn)(void))
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		close(2);	/* the message is expected */
		fn();
		_exit(0);
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) &&
	       WTERMSIG(st) == SIGABRT;
}

/* hidden from the compiler, which would refuse the overflows below */
static char small_buf[8];
static char *volatile small = small_buf;
static volatile size_t small_len = sizeof(small_buf), ten = 10, big = 64;

static void overflow_memcpy(void)
{
	__memcpy_chk(small, "0123456789", ten, small_len);
}

static void overflow_strcpy(void)
{
	__strcpy_chk(small, "0123456789", small_len);
}

static void overflow_sprintf(void)
{
	__sprintf_chk(small, 1, small_len, "%s", "0123456789");
}

static void overflow_snprintf(void)
{
	__snprintf_chk(small, big, 1, small_len, "x");
}

static void open_creat_without_mode(void)
{
	__open_2("/tmp/never", O_CREAT | O_WRONLY);
}

int main(void)
{
	char buf[32], *s = NULL, *p;
	int fd;
	cpu_set_t *set;

	printf("1..12\n");
	ok(__snprintf_chk(buf, sizeof(buf), 1, sizeof(buf), "%d-%s", 7,
			  "x") == 3 && !strcmp(buf, "7-x"),
	   "__snprintf_chk formats like snprintf");
	ok(__sprintf_chk(buf, 1, sizeof(buf), "%05d", 42) == 5 &&
		   !strcmp(buf, "00042"),
	   "__sprintf_chk formats like sprintf");
	ok(__asprintf_chk(&s, 1, "%s/%s", "a", "b") == 3 && s &&
		   !strcmp(s, "a/b"),
	   "__asprintf_chk allocates the result");
	free(s);
	p = __stpcpy_chk(buf, "abc", sizeof(buf));
	ok(p == buf + 3 && !strcmp(__strcat_chk(buf, "def", sizeof(buf)),
				   "abcdef"),
	   "__stpcpy_chk and __strcat_chk");
	ok(__fprintf_chk(stdout, 1, "# %s\n", "fprintf") == 10,
	   "__fprintf_chk writes to the stream");
	fd = __open_2("/dev/null", O_RDONLY);
	ok(fd >= 0 && fcntl64(fd, F_SETFD, FD_CLOEXEC) == 0 &&
		   fcntl64(fd, F_GETFD) == FD_CLOEXEC,
	   "__open_2 opens, fcntl64 passes its argument");
	close(fd);
	set = __sched_cpualloc(1024);
	ok(set && CPU_COUNT_S(CPU_ALLOC_SIZE(1024), set) == 0,
	   "__sched_cpualloc gives a cleared set");
	__sched_cpufree(set);
	ok(aborts(overflow_memcpy), "__memcpy_chk aborts on overflow");
	ok(aborts(overflow_strcpy), "__strcpy_chk aborts on overflow");
	ok(aborts(overflow_sprintf) && aborts(overflow_snprintf),
	   "__sprintf_chk and __snprintf_chk abort on overflow");
	ok(aborts(open_creat_without_mode),
	   "__open_2 with O_CREAT (no mode) aborts");
	/* malloc is the arena here: 100 bytes take 112 and a 16-byte header */
	p = malloc(100);
	s = malloc(100);
	ok(p && s && s - p == 128 && malloc_usable_size(p) >= 100 &&
		   (free(s), malloc(100) == s),
	   "malloc is the arena: dense blocks, the last one taken back");
	return failed;
}
