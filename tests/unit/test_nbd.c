/* Unit tests of lib/attach/nbdpull.c and lib/engine/nbdmap.c: NBD URIs and segment
 * names, the byte map of a served file, and pulls from a real nbdkit
 * (its file plugin) into a file and, through xip_attach, a segment. */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "unit.h"
#include "attach/nbd_int.h"
#include "registry/registry_int.h"

static void test_is_uri(void **state)
{
	static const char *const yes[] = {
		"nbd://host/x", "nbd://host:10809", "nbds://host/x",
		"nbd+unix:///x?socket=/s", "nbds+unix:///?socket=/s",
		"nbd+vsock://2/x", NULL
	};
	static const char *const no[] = {
		"", "nbd:", "nbd:/x", "./nbd://x", "@nbd", "/images/nbd.img",
		"http://host/x", "NBD://host/x", NULL
	};

	unit_pred_splits(xip_nbd_is_uri, yes, no);
	assert_false(xip_nbd_is_uri(NULL));
}

static void expect_name(const char *uri, const char *name)
{
	char buf[80];

	assert_int_equal(xip_nbd_default_name(uri, buf, sizeof(buf)), 0);
	assert_string_equal(buf, name);
}

static void test_default_name(void **state)
{
	char buf[80];

	expect_name("nbd://host/rootfs", "rootfs");
	expect_name("nbd://host:10809/rootfs.img", "rootfs");
	expect_name("nbd://host/a/b/root.img.gz?tls=off", "root");
	expect_name("nbd+unix:///base%20os.ext2?socket=/run/s", "base_os");
	expect_name("nbd+unix:///?socket=/tmp/rootfs.sock", "nbd");
	expect_name("nbd://host", "nbd");
	expect_name("nbd://host/", "nbd");
	expect_name("nbd://host/..", "nbd");
	expect_name("nbd://host/@seg", "seg");
	expect_name("nbd://host/x%2", "x_2");
	assert_int_equal(xip_nbd_default_name("/img", buf, sizeof(buf)), -EINVAL);
	assert_string_equal(xip_errmsg(), "/img: not an NBD URI");
}

static void test_runs_check(void **state)
{
	struct xip_run ok[] = { { 0, 10, 2 }, { 2, 20, 1 }, { 5, 30, 3 } };
	struct xip_run order[] = { { 4, 10, 2 }, { 5, 20, 1 } };
	struct xip_run empty[] = { { 0, 10, 0 } };
	struct xip_run out[] = { { 0, 62, 3 } };
	struct xip_run wrap[] = { { UINT64_MAX / 4096, 1, 1 } };

	/* 64 blocks of 4096 */
	assert_int_equal(xip_nbd_runs_check(ok, 3, 4096, 64 * 4096, "/f"), 0);
	assert_int_equal(xip_nbd_runs_check(NULL, 0, 4096, 4096, "/f"), 0);
	assert_int_equal(xip_nbd_runs_check(order, 2, 4096, 64 * 4096, "/f"),
			 -EUCLEAN);
	assert_string_equal(xip_errmsg(), "/f: block map out of order at file block 5");
	assert_int_equal(xip_nbd_runs_check(empty, 1, 4096, 64 * 4096, "/f"),
			 -EUCLEAN);
	assert_int_equal(xip_nbd_runs_check(out, 1, 4096, 64 * 4096, "/f"),
			 -EUCLEAN);
	assert_string_equal(xip_errmsg(),
			    "/f: blocks 62-64 lie outside the image (64 blocks)");
	/* a partial last block of the segment is not a block */
	assert_int_equal(xip_nbd_runs_check(out, 1, 4096, 65 * 4096 - 1, "/f"),
			 -EUCLEAN);
	assert_int_equal(xip_nbd_runs_check(out, 1, 4096, 65 * 4096, "/f"), 0);
	assert_int_equal(xip_nbd_runs_check(wrap, 1, 4096, 64 * 4096, "/f"),
			 -EUCLEAN);
	assert_int_equal(xip_nbd_runs_check(ok, 3, 0, 64 * 4096, "/f"),
			 -EINVAL);
}

static void expect_piece(const struct xip_run *runs, size_t n, uint64_t off,
			 uint64_t len, bool hole, uint64_t seg_off,
			 uint64_t plen)
{
	struct xip_nbd_piece p;

	xip_nbd_piece(runs, n, 1024, off, len, &p);
	assert_int_equal(p.hole, hole);
	assert_int_equal(p.len, plen);
	if (!hole)
		assert_int_equal(p.seg_off, seg_off);
}

static void test_piece(void **state)
{
	/* blocks of 1024: file blocks 2-3 at 10-11, 4 at 20, 8-9 at 30-31 */
	struct xip_run runs[] = { { 2, 10, 2 }, { 4, 20, 1 }, { 8, 30, 2 } };

	/* a hole before the first run, cut at its start */
	expect_piece(runs, 3, 0, 100000, true, 0, 2048);
	expect_piece(runs, 3, 100, 50, true, 0, 50);
	/* inside a run, from an unaligned byte */
	expect_piece(runs, 3, 2048, 100000, false, 10240, 2048);
	expect_piece(runs, 3, 2500, 10, false, 10240 + 452, 10);
	expect_piece(runs, 3, 3071, 100000, false, 10240 + 1023, 1025);
	expect_piece(runs, 3, 4095, 100000, false, 11264 + 1023, 1);
	/* adjacent in the file, not in the segment: a piece each */
	expect_piece(runs, 3, 4096, 100000, false, 20480, 1024);
	/* the hole between runs, then past the last run to the end */
	expect_piece(runs, 3, 5120, 100000, true, 0, 3072);
	expect_piece(runs, 3, 9000, 100000, false, 30720 + 808, 1240);
	expect_piece(runs, 3, 10240, 4096, true, 0, 4096);
	/* no runs at all: one hole */
	expect_piece(NULL, 0, 12345, 777, true, 0, 777);
}

/* ---- against a real server -------------------------------------------- */

static pid_t server;
static char sock[300], uri[400];

static bool have_nbdkit(void)
{
	return system("command -v nbdkit >/dev/null 2>&1") == 0;
}

/* nbdkit's own file plugin serving @path on a unix socket. */
static void serve(const char *path)
{
	char pidfile[300];
	struct timespec t = { 0, 20 * 1000 * 1000 };
	int fd;

	snprintf(sock, sizeof(sock), "%s", unit_path("sock"));
	snprintf(pidfile, sizeof(pidfile), "%s", unit_path("pid"));
	unlink(sock);
	unlink(pidfile);
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s", sock);
	server = fork();
	assert_true(server >= 0);
	if (server == 0) {
		fd = open("/dev/null", O_RDWR);
		dup2(fd, 0);
		dup2(fd, 1);
		execlp("nbdkit", "nbdkit", "-f", "-r", "-U", sock, "--pidfile",
		       pidfile, "file", path, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500 && access(pidfile, F_OK); i++)
		nanosleep(&t, NULL);
	assert_int_equal(access(pidfile, F_OK), 0);
}

static void stop(void)
{
	kill(server, SIGTERM);
	waitpid(server, NULL, 0);
	server = 0;
}

static void assert_same(const char *a, const char *b, size_t len)
{
	char *x = malloc(len), *y = malloc(len);

	assert_non_null(x);
	assert_non_null(y);
	unit_peek(a, 0, x, len);
	unit_peek(b, 0, y, len);
	assert_memory_equal(x, y, len);
	free(x);
	free(y);
}

static uint64_t seen_done, seen_total;
static int calls;

static void progress(void *arg, uint64_t done, uint64_t total)
{
	assert_true(done <= total);
	assert_true(done >= seen_done);
	seen_done = done;
	seen_total = total;
	calls++;
}

static void test_pull(void **state)
{
	char *img = unit_path("pull.img"), *out = unit_path("pull.out");
	struct xip_nbd *n;
	uint64_t size = 0;
	int fd;

	if (!have_nbdkit())
		skip();
	unit_mke2fs(img, "8M", 4096, NULL);
	/* data past the file system's metadata, and a hole */
	{
		char buf[8192];

		memset(buf, 0x5a, sizeof(buf));
		unit_poke(img, 5 << 20, buf, sizeof(buf));
	}
	serve(img);
	assert_int_equal(xip_nbd_open(uri, 0, &n, &size), 0);
	assert_int_equal(size, 8 << 20);
	fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	xip_nbd_set_progress(progress, NULL);
	assert_int_equal(xip_nbd_pull(n, fd, NULL, 4096, out, NULL), 0);
	xip_nbd_set_progress(NULL, NULL);
	assert_true(calls > 0);
	assert_int_equal(seen_done, size);
	assert_int_equal(seen_total, size);
	close(fd);
	xip_nbd_close(n);
	stop();
	assert_same(img, out, 8 << 20);
}

static void test_pull_refused(void **state)
{
	char *noise = unit_path("noise.img");
	struct xip_nbd *n = NULL;
	uint64_t size = 0;

	assert_int_equal(xip_nbd_open("nbd+unix:///?socket=/nonexistent/s", 0,
				      &n, &size), -ENOENT);
	assert_null(n);
	assert_non_null(strstr(xip_errmsg(),
			       "nbd+unix:///?socket=/nonexistent/s: cannot connect: "));
	if (!have_nbdkit())
		skip();
	unit_fill_file(noise, 1 << 20, 0x33);
	serve(noise);
	assert_int_equal(xip_nbd_open(uri, 0, &n, &size), -EMEDIUMTYPE);
	assert_null(n);
	assert_non_null(strstr(xip_errmsg(), "holds no ext2 image"));
	stop();
}

static void test_attach_uri(void **state)
{
	char *img = unit_path("att.img"), dir[400];
	struct xip_attach_opts o = { 0 };
	struct xip_seg_entry e;

	if (!have_nbdkit())
		skip();
	snprintf(dir, sizeof(dir), "%s", unit_path("run"));
	setenv("XIPTOOL_RUNDIR", dir, 1);
	setenv("XIPTOOL_SHMDIR", unit_tmpdir(), 1);
	unit_mke2fs(img, "4M", 4096, NULL);
	serve(img);
	o.image = uri;
	o.type = XIP_SEGTYPE_SW;
	/* the default name comes from the (empty) export name */
	assert_int_equal(xip_attach(&o, &e), 0);
	assert_string_equal(e.name, "nbd");
	assert_string_equal(e.image, uri);
	assert_int_equal(e.size, 4 << 20);
	assert_string_equal(e.label, "unitlabel");
	assert_same(img, e.path, 4 << 20);
	/* --size: at least the export */
	o.name = "small";
	o.size = 4096;
	assert_int_equal(xip_attach(&o, &e), -EINVAL);
	assert_non_null(strstr(xip_errmsg(), "is smaller than the export"));
	assert_int_equal(xip_registry_get("small", &e), -ENOENT);
	stop();
	assert_int_equal(xip_detach("nbd", NULL, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_is_uri),
		cmocka_unit_test(test_default_name),
		cmocka_unit_test(test_runs_check),
		cmocka_unit_test(test_piece),
		cmocka_unit_test(test_pull),
		cmocka_unit_test(test_pull_refused),
		cmocka_unit_test(test_attach_uri),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("nbd", tests, NULL, NULL);
}
