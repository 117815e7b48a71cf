/* Unit tests of lib/extract.c. */
#include <dirent.h>
#include <sys/stat.h>

#include "unit.h"

static void test_name_ok(void **state)
{
	static const char *const yes[] = { "a", "...", ".hidden", "a\\b",
					   NULL };
	static const char *const no[] = { "", ".", "..", "a/b", "/", NULL };

	unit_pred_splits(xip_extract_name_ok, yes, no);
}

static void run(const char *cmd)
{
	if (system(cmd))
		fail_msg("failed: %s", cmd);
}

/* An image of a small tree: a file with a hole, a hard link, a symlink. */
static const char *make_image(const char *tag)
{
	char src[300], cmd[4000];
	const char *img = unit_path(tag);
	struct xip_build_opts o = { .source = src, .force = true };

	snprintf(src, sizeof(src), "%s.src", img);
	snprintf(cmd, sizeof(cmd),
		 "rm -rf '%s' && mkdir -p '%s/d' && printf x > '%s/d/aXb' && "
		 "printf y > '%s/zz' && ln '%s/zz' '%s/d/hard' && "
		 "ln -s ../zz '%s/d/sym' && "
		 "dd if=/dev/urandom of='%s/sparse' bs=4096 seek=5 count=1 "
		 "status=none && truncate -s 40000 '%s/sparse'",
		 src, src, src, src, src, src, src, src, src);
	run(cmd);
	if (xip_build(img, &o, NULL))
		fail_msg("%s", xip_errmsg());
	return img;
}

static void test_extract_tree(void **state)
{
	const char *img = make_image("x.img");
	const char *dir = unit_path("x.out");
	struct xip_extract_opts o = { .owners = geteuid() == 0,
				      .xattrs = true };
	struct xip_extract_result res;
	struct xip_image *xi;
	struct stat a, b;
	char path[600], cmd[1400];

	assert_int_equal(xip_image_open(img, 0, &xi), 0);
	assert_int_equal(xip_extract(xi, "/", dir, &o, &res), 0);
	assert_int_equal(res.files, 3);	/* aXb, zz, sparse */
	assert_int_equal(res.links, 1);
	assert_int_equal(res.others, 1);
	snprintf(path, sizeof(path), "%s/zz", dir);
	assert_int_equal(stat(path, &a), 0);
	snprintf(path, sizeof(path), "%s/d/hard", dir);
	assert_int_equal(stat(path, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(a.st_nlink, 2);
	snprintf(path, sizeof(path), "%s/sparse", dir);
	assert_int_equal(stat(path, &a), 0);
	assert_int_equal(a.st_size, 40000);
	assert_true(a.st_blocks * 512 <= 8192);
	snprintf(cmd, sizeof(cmd), "cmp '%s.src/sparse' '%s/sparse'", img, dir);
	run(cmd);
	/* a second extraction into the same new name is refused whole */
	assert_int_equal(xip_extract(xi, "/", dir, &o, &res), 0 - EEXIST);
	/* a subtree goes to DIR/<name>; twice is refused, nothing added */
	assert_int_equal(xip_extract(xi, "/d", dir, &o, &res), -EEXIST);
	snprintf(path, sizeof(path), "%s/sub", dir);
	assert_int_equal(xip_extract(xi, "/d", path, &o, &res), 0);
	snprintf(path, sizeof(path), "%s/sub/d/aXb", dir);
	assert_int_equal(lstat(path, &a), 0);
	assert_int_equal(xip_extract(xi, "/nope", path, &o, &res), -ENOENT);
	xip_image_close(xi);
}

/* Entries of @dir whose names start with @prefix. */
static int count_prefixed(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, prefix, strlen(prefix)))
			n++;
	closedir(d);
	return n;
}

/* A name with '/' written into a directory block: refused, nothing left. */
static void test_extract_hostile_name(void **state)
{
	const char *img = make_image("h.img");
	const char *dir = unit_path("h.out");
	struct xip_extract_opts o = { 0 };
	struct xip_extract_result res;
	struct xip_image *xi;
	char cmd[800];

	snprintf(cmd, sizeof(cmd),
		 "python3 -c \"import sys; p=sys.argv[1]; d=open(p,'rb').read(); "
		 "assert d.count(b'aXb')==1; open(p,'wb').write(d.replace(b'aXb', b'a/b'))\" '%s'",
		 img);
	run(cmd);
	assert_int_equal(xip_image_open(img, 0, &xi), 0);
	assert_int_equal(xip_extract(xi, "/", dir, &o, &res), -EUCLEAN);
	assert_non_null(strstr(xip_errmsg(), "/d: entry 'a/b'"));
	assert_int_equal(access(dir, F_OK), -1);
	xip_image_close(xi);
	/* nor the staging directory ".h.out.XXXXXXXX" beside it */
	assert_int_equal(count_prefixed(unit_tmpdir(), ".h.out"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_ok),
		cmocka_unit_test(test_extract_tree),
		cmocka_unit_test(test_extract_hostile_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
