/* Unit tests of lib/ps/ps.c. */
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/sysmacros.h>

#include "unit.h"
#include "registry/registry_int.h"
#include "ps/ps_int.h"

static void test_parse_map(void **state)
{
	struct xip_ps_map m;

	assert_int_equal(xip_ps_parse_map(
		"7f1c2a000000-7f1c2a022000 r-xp 00003000 00:1a 123456    "
		"/dev/shm/xiptool-seg (deleted)\n", &m), 0);
	assert_int_equal(m.start, 0x7f1c2a000000ULL);
	assert_int_equal(m.end, 0x7f1c2a022000ULL);
	assert_int_equal(m.offset, 0x3000);
	assert_int_equal(major(m.dev), 0);
	assert_int_equal(minor(m.dev), 0x1a);
	assert_int_equal(m.ino, 123456);
	assert_true(m.exec);
	assert_false(m.shared);
	assert_string_equal(m.path, "/dev/shm/xiptool-seg (deleted)");
	/* a shared mapping (QEMU's memory backend, nbdkit) */
	assert_int_equal(xip_ps_parse_map(
		"7f0000000000-7f0004000000 r--s 00000000 00:1a 77 /dev/shm/s\n",
		&m), 0);
	assert_true(m.shared);
	assert_false(m.exec);
	/* anonymous: no path */
	assert_int_equal(xip_ps_parse_map(
		"7ffd0000-7ffd1000 rw-p 00000000 00:00 0 \n", &m), 0);
	assert_string_equal(m.path, "");
	assert_false(m.exec);
	/* a loop device with a big minor */
	assert_int_equal(xip_ps_parse_map(
		"400000-401000 r--p 00000000 07:1f3 12 /mnt/bin/a b\n", &m), 0);
	assert_int_equal(major(m.dev), 7);
	assert_int_equal(minor(m.dev), 0x1f3);
	assert_string_equal(m.path, "/mnt/bin/a b");
	/* smaps fields are not mappings */
	assert_int_equal(xip_ps_parse_map("Rss:                  12 kB\n", &m),
			 -EINVAL);
	assert_int_equal(xip_ps_parse_map("VmFlags: rd ex mr mw me\n", &m),
			 -EINVAL);
	assert_int_equal(xip_ps_parse_map("2000-1000 r--p 0 00:00 0\n", &m),
			 -EINVAL);
}

/*
 * A child that maps the segment file PATH privately with PROT, reads its
 * first NREAD pages, writes the first NCOPY of them (copies), says so and
 * waits to be killed.  A child that cannot map the file (a noexec mount)
 * skips the test; one that dies otherwise fails it.
 */
static pid_t map_child(const char *path, long pg, int prot, int nread,
		       int ncopy)
{
	pid_t parent = getpid(), pid;
	int pipefd[2], st;
	char c;

	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		volatile char *p;
		char sum = 0;
		int fd;

		/* a failed assertion ends the parent: the child goes too */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 ||
		    getppid() != parent)
			_exit(1);
		close(pipefd[0]);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			_exit(1);
		p = mmap(NULL, 8 * pg, prot, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED)
			_exit(2);
		for (int i = 0; i < nread; i++)
			sum += p[i * pg];
		for (int i = 0; i < ncopy; i++)
			p[i * pg] = sum;
		if (write(pipefd[1], &sum, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &c, 1) == 1) {
		close(pipefd[0]);
		return pid;
	}
	close(pipefd[0]);
	waitpid(pid, &st, 0);
	xip_registry_remove("unitps");
	if (WIFEXITED(st) && WEXITSTATUS(st) == 2)
		skip();		/* a noexec mount */
	fail_msg("the child mapping the file died");
	return -1;
}

static void end_child(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * This process as a segment's user: a file registered as an attached
 * segment, mapped privately, partly written (copied) and partly read.
 * Its code is not in the segment: it maps the file (mmap), it was not
 * started by xiptool exec.
 */
static void test_ps_self_child(void **state)
{
	char dir[600], path[700], cmd[1500];
	struct xip_ps_report r;
	long pg = xip_host_page_size();
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/run", unit_tmpdir());
	setenv("XIPTOOL_RUNDIR", dir, 1);
	snprintf(path, sizeof(path), "%s/seg", unit_tmpdir());
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && head -c %ld /dev/urandom > '%s'",
		 dir, 8 * pg, path);
	assert_int_equal(system(cmd), 0);
	{
		struct xip_seg_entry e = { 0 };
		struct stat st;

		assert_int_equal(stat(path, &st), 0);
		e.seg_dev = st.st_dev;
		e.seg_ino = st.st_ino;
		e.seg_uid = st.st_uid;
		snprintf(e.name, sizeof(e.name), "unitps");
		e.type = XIP_SEGTYPE_SR;
		e.size = 8 * (uint64_t)pg;
		snprintf(e.path, sizeof(e.path), "%s", path);
		e.owner = getuid();
		assert_int_equal(xip_registry_store(&e, XIP_REG_CREATE), 0);
	}
	/* 8 pages resident, 2 of them copied */
	pid = map_child(path, pg, PROT_READ | PROT_WRITE, 8, 2);
	assert_int_equal(xip_ps(NULL, 0, &r), 0);
	assert_int_equal(r.nsegs, 1);
	assert_string_equal(r.segs[0].name, "unitps");
	assert_int_equal(r.n, 1);
	assert_int_equal(r.procs[0].pid, pid);
	assert_int_equal(r.procs[0].how, XIP_PS_MMAP);
	assert_null(r.procs[0].program);
	assert_int_equal(r.procs[0].copied, 2);
	assert_int_equal(r.procs[0].shared, 6);
	assert_int_equal(r.segs[0].procs, 1);
	assert_int_equal(r.segs[0].shared, 6);
	xip_ps_report_free(&r);
	{
		const char *names[] = { "nosuch", NULL };

		assert_int_equal(xip_ps(names, 1, &r), -ENOENT);
	}
	end_child(pid);

	/*
	 * A private executable mapping of the segment file, as the loader
	 * makes: exec, even where the loader could not set the start of
	 * code (here it is this program's own).
	 */
	pid = map_child(path, pg, PROT_READ | PROT_EXEC, 3, 0);
	assert_int_equal(xip_ps(NULL, 0, &r), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.procs[0].pid, pid);
	assert_int_equal(r.procs[0].how, XIP_PS_EXEC);
	/* 3 pages read, and those the kernel maps around a fault */
	assert_in_range(r.procs[0].shared, 3, 8);
	assert_int_equal(r.procs[0].copied, 0);
	xip_ps_report_free(&r);
	end_child(pid);
	xip_registry_remove("unitps");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_map),
		cmocka_unit_test(test_ps_self_child),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
