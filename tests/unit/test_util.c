/*
 * Unit tests of lib/util/util.c: rounding, xip_grow, the read and write
 * loops, the mount table; lib/util/outfile.c: output files.
 */
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "unit.h"
#include "util/xip_util.h"

/* ---- rounding ------------------------------------------------------------ */

static void test_rounding(void **state)
{
	assert_int_equal(div_round_up(0, 4), 0);
	assert_int_equal(div_round_up(1, 4), 1);
	assert_int_equal(div_round_up(4, 4), 1);
	assert_int_equal(div_round_up(5, 4), 2);
	assert_int_equal(div_round_up(10, 3), 4);
	/* n + d - 1 would wrap */
	assert_true(div_round_up(UINT64_MAX, 2) == (UINT64_C(1) << 63));
	assert_true(div_round_up(UINT64_MAX, UINT64_MAX) == 1);
	assert_int_equal(round_up(0, 4096), 0);
	assert_int_equal(round_up(1, 4096), 4096);
	assert_int_equal(round_up(4096, 4096), 4096);
	assert_int_equal(round_up(10, 3), 12);
	assert_int_equal(round_up(7, 1), 7);
	assert_int_equal(round_down(4095, 4096), 0);
	assert_int_equal(round_down(8193, 4096), 8192);
	assert_int_equal(round_down(10, 3), 9);
	assert_true(round_down(UINT64_MAX, 2) == UINT64_MAX - 1);
	/* U64() for %llu keeps every bit */
	assert_true(sizeof(U64(UINT64_C(1))) == sizeof(unsigned long long));
	assert_true(U64(UINT64_MAX) == ULLONG_MAX);
}

/* The sign of a three-way comparison, over the whole 64-bit range. */
static void test_cmp_u64(void **state)
{
	assert_int_equal(xip_cmp_u64(1, 2), -1);
	assert_int_equal(xip_cmp_u64(2, 1), 1);
	assert_int_equal(xip_cmp_u64(7, 7), 0);
	/* no subtraction: it would wrap or be cut to an int */
	assert_int_equal(xip_cmp_u64(0, UINT64_MAX), -1);
	assert_int_equal(xip_cmp_u64(UINT64_MAX, 0), 1);
	assert_int_equal(xip_cmp_u64(UINT64_C(1) << 32, 1), 1);
	assert_int_equal(xip_cmp_u64(1, UINT64_C(1) << 32), -1);
}

/* A shared mapping of a file, and a refused one naming the file. */
static void test_map_shared(void **state)
{
	const char *path = unit_path("mapped");
	void *map = NULL;
	char buf[3];
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(xip_pwrite_all(fd, "xip", 3, 0), 0);
	assert_int_equal(xip_map_shared(fd, 4096, PROT_READ, path, &map), 0);
	assert_memory_equal(map, "xip", 3);
	munmap(map, 4096);
	/* shared: what is written through the mapping is the file's */
	map = NULL;
	assert_int_equal(xip_map_shared(fd, 4096, PROT_READ | PROT_WRITE, path,
					&map),
			 0);
	memcpy(map, "XIP", 3);
	munmap(map, 4096);
	assert_int_equal(xip_pread_exact(fd, buf, 3, 0, path), 0);
	assert_memory_equal(buf, "XIP", 3);
	close(fd);
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	map = NULL;
	assert_int_equal(xip_map_shared(fd, 4096, PROT_READ, path, &map),
			 -EACCES);
	assert_null(map);
	assert_non_null(strstr(xip_errmsg(), path));
	assert_non_null(strstr(xip_errmsg(), ": cannot map: "));
	close(fd);
	unlink(path);
}

/* ---- xip_grow ------------------------------------------------------------ */

/*
 * realloc(3) as util.o calls it (linked with --wrap=realloc): the size of
 * the last request, how many were made, and a failure for requests above
 * realloc_limit.
 */
void *__real_realloc(void *p, size_t size);
void *__wrap_realloc(void *p, size_t size);
static size_t realloc_asked, realloc_calls, realloc_limit = SIZE_MAX;

void *__wrap_realloc(void *p, size_t size)
{
	realloc_asked = size;
	realloc_calls++;
	if (size > realloc_limit)
		return NULL;
	return __real_realloc(p, size);
}

static void test_grow(void **state)
{
	uint32_t *a = NULL, *before;
	size_t cap = 0;

	/* first room: what is asked, no more */
	assert_int_equal(xip_grow((void **)&a, &cap, 1, sizeof(*a)), 0);
	assert_non_null(a);
	assert_int_equal(cap, 1);
	assert_int_equal(realloc_asked, sizeof(*a));
	a[0] = 0;
	/* one more: twice the capacity, contents kept */
	assert_int_equal(xip_grow((void **)&a, &cap, 2, sizeof(*a)), 0);
	assert_int_equal(cap, 2);
	assert_int_equal(a[0], 0);
	assert_int_equal(xip_grow((void **)&a, &cap, 3, sizeof(*a)), 0);
	assert_int_equal(cap, 4);
	for (uint32_t i = 0; i < 4; i++)
		a[i] = i;
	/* enough room: nothing moves */
	before = a;
	realloc_asked = 0;
	assert_int_equal(xip_grow((void **)&a, &cap, 4, sizeof(*a)), 0);
	assert_ptr_equal(a, before);
	assert_int_equal(cap, 4);
	assert_int_equal(realloc_asked, 0);
	/* more than twice: exactly what is asked */
	assert_int_equal(xip_grow((void **)&a, &cap, 1000, sizeof(*a)), 0);
	assert_int_equal(cap, 1000);
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(a[i], i);
	a[999] = 7;
	/* out of memory: the array stays as it was */
	before = a;
	realloc_limit = 1000 * sizeof(*a);
	assert_int_equal(xip_grow((void **)&a, &cap, 1001, sizeof(*a)),
			 -ENOMEM);
	realloc_limit = SIZE_MAX;
	assert_ptr_equal(a, before);
	assert_int_equal(cap, 1000);
	assert_int_equal(a[999], 7);
	free(a);
}

/* Appending one at a time: every element kept, a logarithmic number of
 * reallocations. */
static void test_grow_appends(void **state)
{
	uint32_t *a = NULL;
	size_t cap = 0, n = 0;

	realloc_calls = 0;
	for (uint32_t i = 0; i < 100000; i++) {
		assert_int_equal(xip_grow((void **)&a, &cap, n + 1, sizeof(*a)),
				 0);
		assert_true(cap > n);
		a[n++] = i * 2654435761u;
	}
	assert_int_equal(cap, 131072);
	assert_int_equal(realloc_calls, 18);	/* 1, 2, 4 ... 131072 */
	for (uint32_t i = 0; i < 100000; i++)
		assert_int_equal(a[i], i * 2654435761u);
	free(a);
}

static void test_grow_overflow(void **state)
{
	uint64_t *a = NULL;
	size_t cap = 0;
	void *p = NULL;

	/* need * elsize does not fit a size_t: refused before realloc */
	realloc_asked = 0;
	assert_int_equal(xip_grow((void **)&a, &cap, SIZE_MAX / 8 + 1, 8),
			 -ENOMEM);
	assert_int_equal(xip_grow(&p, &cap, SIZE_MAX, 2), -ENOMEM);
	assert_int_equal(xip_grow(&p, &cap, 2, SIZE_MAX), -ENOMEM);
	assert_int_equal(xip_grow(&p, &cap, 1, 0), -ENOMEM);
	assert_int_equal(realloc_asked, 0);
	assert_null(a);
	assert_null(p);
	assert_int_equal(cap, 0);

	/* the same with elements in the array: it stays as it was */
	assert_int_equal(xip_grow((void **)&a, &cap, 3, sizeof(*a)), 0);
	a[0] = 1, a[1] = 2, a[2] = 3;
	p = a;
	realloc_asked = 0;
	assert_int_equal(xip_grow((void **)&a, &cap, SIZE_MAX / 8 + 1, 8),
			 -ENOMEM);
	assert_int_equal(realloc_asked, 0);
	assert_ptr_equal(a, p);
	assert_int_equal(cap, 3);
	assert_int_equal(a[0], 1);
	assert_int_equal(a[1], 2);
	assert_int_equal(a[2], 3);
	free(a);
	p = NULL;

	/*
	 * Twice the capacity does not fit, @need does: exactly @need is asked
	 * for (failed here by the wrapper, not by the machine's memory).
	 */
	cap = SIZE_MAX / 16 + 1;
	realloc_limit = 4096;
	assert_int_equal(xip_grow(&p, &cap, cap + 1, 8), -ENOMEM);
	assert_true(realloc_asked == (SIZE_MAX / 16 + 2) * 8);
	assert_true(cap == SIZE_MAX / 16 + 1);
	assert_null(p);
	/* a capacity whose double overflows size_t itself */
	cap = SIZE_MAX / 2 + 1;
	assert_int_equal(xip_grow(&p, &cap, cap + 1, 1), -ENOMEM);
	assert_true(realloc_asked == SIZE_MAX / 2 + 2);
	realloc_limit = SIZE_MAX;
}

/* ---- read and write loops ------------------------------------------------ */

static volatile sig_atomic_t ticks;

static void on_tick(int sig)
{
	ticks++;
}

/* SIGALRM every @usec microseconds, without SA_RESTART: calls fail EINTR */
static void ticker(long usec)
{
	struct itimerval it = { { 0, usec }, { 0, usec } };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = usec ? on_tick : SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;
	if (usec)
		assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
	if (!usec)
		sigaction(SIGALRM, &sa, NULL);
}

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 7 + i / 251);
}

/* A child that writes @len pattern bytes in @pieces, pausing between. */
static pid_t slow_writer(int fd, size_t len, int pieces)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		uint8_t buf[4096];	/* len <= 4096 */
		size_t from = 0;

		for (size_t i = 0; i < len; i++)
			buf[i] = pattern(i);
		for (int k = 1; k <= pieces; k++) {
			size_t to = len * (size_t)k / (size_t)pieces;

			usleep(30000);
			if (write(fd, buf + from, to - from) !=
			    (ssize_t)(to - from))
				_exit(1);
			from = to;
		}
		_exit(0);
	}
	return pid;
}

static void test_read_full_pipe_eintr(void **state)
{
	uint8_t buf[4096 + 16];
	int fds[2], status;
	ssize_t n;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = slow_writer(fds[1], 4096, 4);
	close(fds[1]);
	ticks = 0;
	ticker(2000);
	/* four short reads, each one after several interrupted ones */
	n = xip_read_full(fds[0], buf, sizeof(buf));
	ticker(0);
	assert_int_equal(n, 4096);
	assert_true(ticks > 0);
	for (size_t i = 0; i < 4096; i++)
		assert_int_equal(buf[i], pattern(i));
	/* at the end of the pipe: 0 */
	assert_int_equal(xip_read_full(fds[0], buf, sizeof(buf)), 0);
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_read_full_interrupt_flag(void **state)
{
	static volatile sig_atomic_t stop;
	uint8_t buf[64];
	int fds[2], status;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = slow_writer(fds[1], 10, 1);
	/* the flag is not set: the loop waits through the signals */
	stop = 0;
	xip_set_interrupt(&stop);
	ticks = 0;
	ticker(2000);
	assert_int_equal(xip_read_full(fds[0], buf, 10), 10);
	assert_true(ticks > 0);
	/* set: a read blocked on the empty pipe returns at the next signal */
	stop = 1;
	assert_int_equal(xip_read_full(fds[0], buf, sizeof(buf)), -EINTR);
	ticker(0);
	xip_set_interrupt(NULL);
	close(fds[0]);
	close(fds[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

static void test_write_all_pipe_eintr(void **state)
{
	size_t len = 1 << 20;	/* far more than a pipe holds */
	uint8_t *buf = malloc(len);
	int fds[2], status;
	pid_t pid;

	assert_non_null(buf);
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern(i);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* a slow reader: the writer blocks, is interrupted, goes on */
		uint8_t in[8192];
		size_t got = 0;
		ssize_t r;

		close(fds[1]);
		while ((r = read(fds[0], in, sizeof(in))) > 0) {
			for (ssize_t i = 0; i < r; i++)
				if (in[i] != pattern(got + (size_t)i))
					_exit(2);
			got += (size_t)r;
			if (got % (128 << 10) < sizeof(in))
				usleep(10000);
		}
		_exit(got == len ? 0 : 3);
	}
	close(fds[0]);
	ticks = 0;
	ticker(1000);
	assert_int_equal(xip_write_all(fds[1], buf, len), 0);
	ticker(0);
	assert_true(ticks > 0);
	close(fds[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	free(buf);
}

static void test_file_loops(void **state)
{
	const char *path = unit_path("loops");
	uint8_t buf[100], back[200];
	void (*old)(int);
	int fd, fds[2];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = pattern(i);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(xip_pwrite_all(fd, buf, sizeof(buf), 50), 0);
	assert_int_equal(xip_write_all(fd, buf, 10), 0);	/* at 0 */
	/* a read past the end: what is there */
	assert_int_equal(xip_pread_full(fd, back, sizeof(back), 50), 100);
	assert_memory_equal(back, buf, 100);
	assert_int_equal(xip_pread_full(fd, back, 10, 150), 0);
	assert_int_equal(xip_pread_full(fd, back, 10, 0), 10);
	assert_memory_equal(back, buf, 10);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(xip_read_full(fd, back, sizeof(back)), 150);
	/* exactly: all there, or an error that names the file */
	assert_int_equal(xip_pread_exact(fd, back, 100, 50, "src"), 0);
	assert_memory_equal(back, buf, 100);
	assert_int_equal(xip_pread_exact(fd, back, 101, 50, "src"), -EIO);
	assert_string_equal(xip_errmsg(), "src: shrank while being read");
	assert_int_equal(xip_pread_exact(-1, back, 1, 0, "src"), -EBADF);
	assert_string_equal(xip_errmsg(), "src: Bad file descriptor");
	/* offsets that do not fit an off_t */
	assert_int_equal(xip_pwrite_all(fd, buf, 1, UINT64_MAX), -EINVAL);
	assert_int_equal(xip_pread_full(fd, back, 1, UINT64_MAX), -EINVAL);
	/* errors come back as -errno */
	assert_int_equal(xip_write_all(-1, buf, 1), -EBADF);
	assert_int_equal(xip_read_full(-1, back, 1), -EBADF);
	close(fd);
	fd = open(path, O_RDONLY);
	assert_int_equal(xip_pwrite_all(fd, buf, 1, 0), -EBADF);
	close(fd);
	old = signal(SIGPIPE, SIG_IGN);
	assert_int_equal(pipe(fds), 0);
	close(fds[0]);
	assert_int_equal(xip_write_all(fds[1], buf, 1), -EPIPE);
	close(fds[1]);
	signal(SIGPIPE, old);
}

/* ---- the mount table ----------------------------------------------------- */

struct seen {
	int n;
	char point[8][64], root[8][64], type[8][32], source[8][64];
	unsigned int major[8], minor[8];
	int stop_at;
};

static int collect(const struct xip_mount *m, void *arg)
{
	struct seen *s = arg;
	int i = s->n++;

	assert_true(i < 8);
	snprintf(s->point[i], sizeof(s->point[i]), "%s", m->point);
	snprintf(s->root[i], sizeof(s->root[i]), "%s", m->root);
	snprintf(s->type[i], sizeof(s->type[i]), "%s", m->type);
	snprintf(s->source[i], sizeof(s->source[i]), "%s", m->source);
	s->major[i] = m->major;
	s->minor[i] = m->minor;
	return s->n == s->stop_at ? 7 : 0;
}

static void test_mounts(void **state)
{
	const char *path = unit_path("mountinfo");
	FILE *f = fopen(path, "w");
	struct seen s = { 0 };

	assert_non_null(f);
	/* a space, a tab, a newline and a backslash, as the kernel writes them */
	fputs("22 1 7:3 / /mnt/a\\040b\\011c\\012d\\134e rw,relatime shared:1 - ext2 /dev/loop3 ro\n"
	      "this line is not a mount\n"
	      "23 1 0:45 / /dev/hugepages rw,relatime - hugetlbfs none rw,pagesize=2M\n"
	      "24 1 259:1 /sub/dir /srv/x\\ rw master:2 propagate_from:3 - ext4 /dev/pmem0 rw\n"
	      "25 1 8:1 / /no/separator rw ext4 /dev/sda1 rw\n"
	      "26 1 8:x / /bad/dev rw - ext4 /dev/sda1 rw\n"
	      "27 1 8:2 / /last rw - ext4 /dev/sda2 rw", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(xip_mounts_each(path, collect, &s), 0);
	assert_int_equal(s.n, 4);
	assert_string_equal(s.point[0], "/mnt/a b\tc\nd\\e");
	assert_string_equal(s.root[0], "/");
	assert_string_equal(s.type[0], "ext2");
	assert_string_equal(s.source[0], "/dev/loop3");
	assert_int_equal(s.major[0], 7);
	assert_int_equal(s.minor[0], 3);
	assert_string_equal(s.point[1], "/dev/hugepages");
	assert_string_equal(s.type[1], "hugetlbfs");
	assert_int_equal(s.minor[1], 45);
	/* optional fields skipped; a lone backslash is kept */
	assert_string_equal(s.root[2], "/sub/dir");
	assert_string_equal(s.point[2], "/srv/x\\");
	assert_string_equal(s.type[2], "ext4");
	assert_int_equal(s.major[2], 259);
	/* the last line has no newline */
	assert_string_equal(s.point[3], "/last");
	assert_int_equal(s.minor[3], 2);
	/* the callback's value ends the walk */
	memset(&s, 0, sizeof(s));
	s.stop_at = 2;
	assert_int_equal(xip_mounts_each(path, collect, &s), 7);
	assert_int_equal(s.n, 2);
	assert_int_equal(xip_mounts_each(unit_path("nosuch"), collect, &s),
			 -ENOENT);
	/* the real table: at least one mount, an absolute path */
	memset(&s, 0, sizeof(s));
	s.stop_at = 1;
	assert_int_equal(xip_mounts_each(NULL, collect, &s), 7);
	assert_int_equal(s.point[0][0], '/');
}

/* A device mounted twice: a directory of it first, then its root. */
static void test_mount_point(void **state)
{
	const char *path = unit_path("mountinfo2");
	FILE *f = fopen(path, "w");
	char buf[64];

	assert_non_null(f);
	fputs("30 1 7:3 /sub /srv/sub rw - ext2 /dev/loop3 ro\n"
	      "31 1 7:4 / /mnt/other rw - ext2 /dev/loop4 ro\n"
	      "32 1 7:3 / /mnt/a\\040b rw - ext2 /dev/loop3 ro\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(xip_mount_point(path, makedev(7, 3), false, buf,
					 sizeof(buf)), 1);
	assert_string_equal(buf, "/srv/sub");
	assert_int_equal(xip_mount_point(path, makedev(7, 3), true, buf,
					 sizeof(buf)), 1);
	assert_string_equal(buf, "/mnt/a b");
	assert_int_equal(xip_mount_point(path, makedev(7, 5), false, buf,
					 sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(xip_mount_point(unit_path("nosuch"), makedev(7, 3),
					 false, buf, sizeof(buf)), -ENOENT);
}

static int find_pid(pid_t pid, void *arg)
{
	pid_t *want = arg;

	if (pid == getpid())
		return -EINVAL;		/* never this process */
	return pid == *want ? 1 : 0;
}

/* The process walk sees a child, not this process itself. */
static void test_pids_each(void **state)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(60);	/* a failed assertion leaves it behind */
		pause();
		_exit(0);
	}
	assert_int_equal(xip_pids_each(find_pid, &pid), 1);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	pid = 0;
	assert_int_equal(xip_pids_each(find_pid, &pid), 0);
}

/* Is @fd open? */
static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/*
 * xip_close_two closes both neighbours, in either order, and both of two
 * that are not neighbours, never the descriptor between them; -1 is
 * skipped.  Each case: which two of three descriptors opened one after
 * the other it closes (3: -1).
 */
/* xip_str_join: both strings, one, nothing; what fits and no more. */
static void test_str_join(void **state)
{
	const char *two = "ab";
	char buf[8];

	(void)state;
	assert_int_equal(xip_str_join(buf, sizeof(buf), "/run", "/x"), 0);
	assert_string_equal(buf, "/run/x");
	assert_int_equal(xip_str_join(buf, sizeof(buf), "abc", NULL), 0);
	assert_string_equal(buf, "abc");
	/* the same string twice, given once or as two literals */
	assert_int_equal(xip_str_join(buf, sizeof(buf), two, two), 0);
	assert_string_equal(buf, "abab");
	assert_int_equal(xip_str_join(buf, sizeof(buf), "", ""), 0);
	assert_string_equal(buf, "");
	/* seven bytes and the terminator fit exactly */
	assert_int_equal(xip_str_join(buf, sizeof(buf), "abcd", "efg"), 0);
	assert_string_equal(buf, "abcdefg");
	assert_int_equal(xip_str_join(buf, sizeof(buf), "abcd", "efgh"),
			 -ENAMETOOLONG);
	assert_string_equal(buf, "abcdefg");
	assert_int_equal(xip_str_join(buf, sizeof(buf), "abcdefghij", "x"),
			 -ENAMETOOLONG);
	assert_string_equal(buf, "abcdefg");
	assert_int_equal(xip_str_join(buf, 0, "a", NULL), -ENAMETOOLONG);
	assert_int_equal(xip_str_join(buf, 1, "a", NULL), -ENAMETOOLONG);
	assert_string_equal(buf, "");
}

/* the last message given as an argument of the next: no garbling */
static void test_error_wraps_itself(void **state)
{
	(void)state;
	xip_error(-EINVAL, "empty segment name");
	assert_int_equal(xip_error(-ENOENT, "@%s: %s", "a", xip_errmsg()),
			 -ENOENT);
	assert_string_equal(xip_errmsg(), "@a: empty segment name");
	xip_error(-EIO, "%s", xip_errmsg());
	assert_string_equal(xip_errmsg(), "@a: empty segment name");
	assert_int_equal(xip_errcode(), -EIO);
}

/* what an image holds when it is not ext2, and the one message for it */
/*
 * The reason beside the message: set by xip_error_reason() and
 * xip_error_set_reason(), reset by every new record and by a clear.
 */
static void test_error_reason(void **state)
{
	(void)state;
	assert_int_equal(xip_error_reason(-EBUSY, XIP_R_BUSY, "%s: busy: %s",
					  "seg", "mounted"), -EBUSY);
	assert_string_equal(xip_errmsg(), "seg: busy: mounted");
	assert_int_equal(xip_errcode(), -EBUSY);
	assert_int_equal(xip_errreason(), XIP_R_BUSY);
	/* a record made from the last one's message has no reason */
	xip_error(-EIO, "%s", xip_errmsg());
	assert_string_equal(xip_errmsg(), "seg: busy: mounted");
	assert_int_equal(xip_errreason(), XIP_R_NONE);
	xip_error(-EEXIST, "x: exists");
	assert_int_equal(xip_error_set_reason(XIP_R_NAME_TAKEN), -EEXIST);
	assert_int_equal(xip_errreason(), XIP_R_NAME_TAKEN);
	/* an object given after keeps the reason */
	xip_error_set_obj(XIP_OBJ_IMAGE, "x");
	assert_int_equal(xip_errreason(), XIP_R_NAME_TAKEN);
	xip_error_obj(-EROFS, XIP_OBJ_IMAGE, "y", "read-only");
	assert_int_equal(xip_errreason(), XIP_R_NONE);
	xip_error_not_ext2(-EMEDIUMTYPE, "x.img", NULL);
	assert_int_equal(xip_errreason(), XIP_R_NOT_EXT2);
	xip_error_clear();
	assert_int_equal(xip_errreason(), XIP_R_NONE);
	assert_int_equal(xip_errcode(), 0);
}

static void test_fs_signature(void **state)
{
	static unsigned char head[XIP_FS_SIGNATURE_BYTES];

	(void)state;
	memset(head, 0, sizeof(head));
	assert_null(xip_fs_signature(head, sizeof(head)));
	memcpy(head + 1024, "\xe2\xe1\xf5\xe0", 4);
	assert_string_equal(xip_fs_signature(head, sizeof(head)), "erofs");
	/* a signature past the bytes given is not seen */
	assert_null(xip_fs_signature(head, 1027));
	memset(head, 0, sizeof(head));
	memcpy(head + 65600, "_BHRfS_M", 8);
	assert_string_equal(xip_fs_signature(head, sizeof(head)), "btrfs");
	assert_null(xip_fs_signature(head, 65607));
	memcpy(head, "hsqs", 4);
	assert_string_equal(xip_fs_signature(head, 4), "squashfs");
	assert_null(xip_fs_signature(head, 3));
	assert_int_equal(xip_error_not_ext2(-EUCLEAN, "@a", "erofs"), -EUCLEAN);
	assert_string_equal(xip_errmsg(), "@a: holds erofs, not an ext2 file system");
	xip_error_not_ext2(-EMEDIUMTYPE, "x.img", NULL);
	assert_string_equal(xip_errmsg(), "x.img: not an ext2 file system (no ext2 superblock)");
	assert_int_equal(xip_errcode(), -EMEDIUMTYPE);
}

static void test_close_two(void **state)
{
	static const int cases[][2] = { { 1, 0 }, { 0, 1 }, { 0, 2 },
					{ 3, 1 }, { 2, 3 } };
	int fd[4];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (int k = 0; k < 3; k++) {
			fd[k] = open("/dev/null", O_RDONLY);
			assert_int_equal(fd[k], fd[0] + k);
		}
		fd[3] = -1;
		xip_close_two(fd[cases[i][0]], fd[cases[i][1]]);
		for (int k = 0; k < 3; k++) {
			bool closed = k == cases[i][0] || k == cases[i][1];

			assert_int_equal(fd_open(fd[k]), !closed);
			if (!closed)
				close(fd[k]);
		}
	}
}

/* ---- output files -------------------------------------------------------- */

static char *out_path(const char *dir, const char *name)
{
	static char buf[4][512];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, name);
	return buf[k];
}

static void put_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(xip_write_all(fd, text, strlen(text)), 0);
	close(fd);
}

static void assert_file(const char *path, const char *text)
{
	char buf[256];
	int fd = open(path, O_RDONLY | O_NOFOLLOW);
	ssize_t n;

	assert_true(fd >= 0);
	n = xip_read_full(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, text);
}

/* The names in @dir, sorted, joined by spaces. */
static const char *names_in(const char *dir)
{
	static char out[1024];
	struct dirent **l;
	int n = scandir(dir, &l, NULL, alphasort);

	assert_true(n >= 0);
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (strcmp(l[i]->d_name, ".") && strcmp(l[i]->d_name, "..")) {
			strcat(out, out[0] ? " " : "");
			strcat(out, l[i]->d_name);
		}
		free(l[i]);
	}
	free(l);
	return out;
}

static void test_outfile_new_and_replace(void **state)
{
	char dir[300];
	struct xip_outfile of;
	struct stat a, b;
	mode_t mask;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/out1", unit_tmpdir());
	assert_int_equal(mkdir(dir, 0755), 0);
	/* new: nothing there until the commit, then the umask's mode */
	mask = umask(027);
	assert_int_equal(xip_outfile_open(&of, out_path(dir, "f"), 0), 0);
	umask(mask);
	assert_int_equal(xip_write_all(of.fd, "new\n", 4), 0);
	assert_string_equal(names_in(dir), "");
	assert_int_equal(xip_outfile_commit(&of), 0);
	assert_int_equal(of.fd, -1);
	assert_file(out_path(dir, "f"), "new\n");
	assert_int_equal(stat(out_path(dir, "f"), &a), 0);
	assert_int_equal(a.st_mode & 0777, 0640);
	/* replaced: a new inode with the old one's mode, the old intact */
	assert_int_equal(chmod(out_path(dir, "f"), 0604), 0);
	assert_int_equal(xip_outfile_open(&of, out_path(dir, "f"), 0), 0);
	assert_int_equal(xip_write_all(of.fd, "second\n", 7), 0);
	assert_file(out_path(dir, "f"), "new\n");
	assert_int_equal(xip_outfile_commit(&of), 0);
	assert_file(out_path(dir, "f"), "second\n");
	assert_int_equal(stat(out_path(dir, "f"), &b), 0);
	assert_true(b.st_ino != a.st_ino);
	assert_int_equal(b.st_mode & 0777, 0604);
	assert_string_equal(names_in(dir), "f");
	/* aborted: the old file as it was, nothing else */
	assert_int_equal(xip_outfile_open(&of, out_path(dir, "f"), 0), 0);
	assert_int_equal(xip_write_all(of.fd, "lost\n", 5), 0);
	xip_outfile_abort(&of);
	assert_file(out_path(dir, "f"), "second\n");
	assert_string_equal(names_in(dir), "f");
	/* a character device is written where it is */
	assert_int_equal(xip_outfile_open(&of, "/dev/null", 0), 0);
	assert_int_equal(xip_write_all(of.fd, "x", 1), 0);
	assert_int_equal(xip_outfile_commit(&of), 0);
	/* unless only a regular file will do */
	assert_int_equal(xip_outfile_open(&of, "/dev/null",
					  XIP_OUTFILE_REGULAR), -EINVAL);
}

static void test_outfile_refused(void **state)
{
	char dir[300];
	struct xip_outfile of;
	struct stat st;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/out2", unit_tmpdir());
	assert_int_equal(mkdir(dir, 0755), 0);
	put_file(out_path(dir, "victim"), "precious\n");
	/* a symbolic link: refused, never followed, even dangling */
	assert_int_equal(symlink("victim", out_path(dir, "link")), 0);
	assert_int_equal(xip_outfile_open(&of, out_path(dir, "link"), 0),
			 -ELOOP);
	assert_non_null(strstr(xip_errmsg(), "is a symbolic link"));
	assert_int_equal(of.fd, -1);
	assert_int_equal(symlink("created", out_path(dir, "dangling")), 0);
	assert_int_equal(xip_outfile_open(&of, out_path(dir, "dangling"), 0),
			 -ELOOP);
	assert_file(out_path(dir, "victim"), "precious\n");
	/* a directory, a FIFO */
	assert_int_equal(mkdir(out_path(dir, "d"), 0755), 0);
	assert_int_equal(xip_outfile_open(&of, out_path(dir, "d"), 0), -EINVAL);
	assert_int_equal(mkfifo(out_path(dir, "fifo"), 0666), 0);
	assert_int_equal(xip_outfile_open(&of, out_path(dir, "fifo"), 0),
			 -EINVAL);
	assert_int_equal(xip_outfile_open(&of, out_path(dir, "."), 0), -EISDIR);
	assert_string_equal(names_in(dir), "d dangling fifo link victim");
	/* another user's file in a sticky directory others may write */
	if (geteuid() != 0)
		return;
	assert_int_equal(chmod(dir, 01777), 0);
	assert_int_equal(chown(out_path(dir, "victim"), 65534, 65534), 0);
	assert_int_equal(xip_outfile_open(&of, out_path(dir, "victim"), 0),
			 -EPERM);
	assert_non_null(strstr(xip_errmsg(), "owned by another user"));
	assert_int_equal(lstat(out_path(dir, "victim"), &st), 0);
	assert_int_equal(st.st_uid, 65534);
	assert_file(out_path(dir, "victim"), "precious\n");
	/* not sticky: replaced by a new file, the old inode untouched */
	assert_int_equal(chmod(dir, 0755), 0);
	assert_int_equal(xip_outfile_open(&of, out_path(dir, "victim"), 0), 0);
	assert_int_equal(xip_outfile_commit(&of), 0);
	assert_int_equal(lstat(out_path(dir, "victim"), &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_uid, 65534);
}

static void test_outfile_changed_meanwhile(void **state)
{
	char dir[300];
	struct xip_outfile of;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/out3", unit_tmpdir());
	assert_int_equal(mkdir(dir, 0755), 0);
	/* made by someone else between the open and the commit: left alone */
	assert_int_equal(xip_outfile_open(&of, out_path(dir, "f"), 0), 0);
	assert_int_equal(xip_write_all(of.fd, "mine\n", 5), 0);
	put_file(out_path(dir, "f"), "theirs\n");
	assert_true(xip_outfile_commit(&of) < 0);
	assert_file(out_path(dir, "f"), "theirs\n");
	assert_string_equal(names_in(dir), "f");
	/* replaced by a symbolic link meanwhile: not written through */
	put_file(out_path(dir, "v"), "precious\n");
	assert_int_equal(xip_outfile_open(&of, out_path(dir, "f"), 0), 0);
	assert_int_equal(unlink(out_path(dir, "f")), 0);
	assert_int_equal(symlink("v", out_path(dir, "f")), 0);
	assert_int_equal(xip_outfile_commit(&of), -ESTALE);
	assert_file(out_path(dir, "v"), "precious\n");
	assert_string_equal(names_in(dir), "f v");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rounding),
		cmocka_unit_test(test_error_wraps_itself),
		cmocka_unit_test(test_error_reason),
		cmocka_unit_test(test_fs_signature),
		cmocka_unit_test(test_cmp_u64),
		cmocka_unit_test(test_map_shared),
		cmocka_unit_test(test_grow),
		cmocka_unit_test(test_grow_appends),
		cmocka_unit_test(test_grow_overflow),
		cmocka_unit_test(test_read_full_pipe_eintr),
		cmocka_unit_test(test_read_full_interrupt_flag),
		cmocka_unit_test(test_write_all_pipe_eintr),
		cmocka_unit_test(test_file_loops),
		cmocka_unit_test(test_mounts),
		cmocka_unit_test(test_mount_point),
		cmocka_unit_test(test_pids_each),
		cmocka_unit_test(test_close_two),
		cmocka_unit_test(test_str_join),
		cmocka_unit_test(test_outfile_new_and_replace),
		cmocka_unit_test(test_outfile_refused),
		cmocka_unit_test(test_outfile_changed_meanwhile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
