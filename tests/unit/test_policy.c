/*
 * Unit tests of lib/util/policy.c: the policy file's text (keys, values,
 * comments, errors naming the line) and which files are trusted.
 */
#include <sys/stat.h>

#include "unit.h"
#include "util/xip_util.h"

static int parse(struct xip_policy *p, const char *text)
{
	memset(p, 0xa5, sizeof(*p));
	strcpy(p->path, "/etc/xiptool/xiptool.conf");
	return xip_policy_parse(p, text, strlen(text));
}

static void test_parse_levels(void **state)
{
	struct xip_policy p;

	(void)state;
	assert_int_equal(parse(&p, ""), 0);
	assert_int_equal(p.attach.level, XIP_POLICY_ANY);
	assert_int_equal(p.attach.line, 0);
	assert_int_equal(p.exec.level, XIP_POLICY_ANY);
	assert_int_equal(p.exec.line, 0);
	assert_int_equal(parse(&p, "# comment\n\n  \t\nattach = verified\n"
				   "exec=signed   # trailing comment\n"), 0);
	assert_int_equal(p.attach.level, XIP_POLICY_VERIFIED);
	assert_int_equal(p.attach.line, 4);
	assert_int_equal(p.exec.level, XIP_POLICY_SIGNED);
	assert_int_equal(p.exec.line, 5);
	/* blanks and a CR around words, no final newline */
	assert_int_equal(parse(&p, "\texec\t=\tany\r\n attach = signed"), 0);
	assert_int_equal(p.exec.level, XIP_POLICY_ANY);
	assert_int_equal(p.exec.line, 1);
	assert_int_equal(p.attach.level, XIP_POLICY_SIGNED);
	assert_int_equal(p.attach.line, 2);
	assert_int_equal(parse(&p, "exec = verified\n"), 0);
	assert_int_equal(p.exec.level, XIP_POLICY_VERIFIED);
	assert_int_equal(p.attach.level, XIP_POLICY_ANY);
	assert_string_equal(xip_policy_level_name(XIP_POLICY_ANY), "any");
	assert_string_equal(xip_policy_level_name(XIP_POLICY_VERIFIED),
			    "verified");
	assert_string_equal(xip_policy_level_name(XIP_POLICY_SIGNED), "signed");
}

static void test_parse_errors(void **state)
{
	struct xip_policy p;

	(void)state;
	assert_int_equal(parse(&p, "# x\nrun = verified\n"), -EINVAL);
	assert_string_equal(xip_errmsg(), "/etc/xiptool/xiptool.conf line 2: unknown key 'run' (expected attach or exec)");
	assert_int_equal(parse(&p, "\n\n\nexec = Verified\n"), -EINVAL);
	assert_string_equal(xip_errmsg(), "/etc/xiptool/xiptool.conf line 4: exec = 'Verified': expected any, verified or signed");
	assert_int_equal(parse(&p, "attach = \n"), -EINVAL);
	assert_string_equal(xip_errmsg(), "/etc/xiptool/xiptool.conf line 1: attach = '': expected any, verified or signed");
	assert_int_equal(parse(&p, "exec = any\nattach = any\nexec = signed\n"),
			 -EINVAL);
	assert_string_equal(xip_errmsg(), "/etc/xiptool/xiptool.conf line 3: exec given again (first on line 1)");
	assert_int_equal(parse(&p, "exec verified\n"), -EINVAL);
	assert_string_equal(xip_errmsg(), "/etc/xiptool/xiptool.conf line 1: expected 'key = value'");
	assert_int_equal(parse(&p, "exec = verified signed\n"), -EINVAL);
	assert_int_equal(parse(&p, "= verified\n"), -EINVAL);
	assert_int_equal(parse(&p, "exec = verified = any\n"), -EINVAL);
	assert_int_equal(xip_policy_parse(&p, "exec = any\n\0x", 13), -EINVAL);
	assert_string_equal(xip_errmsg(), "/etc/xiptool/xiptool.conf: holds a NUL byte: not a text file");
}

static void put(const char *path, const char *text, mode_t mode)
{
	FILE *f;

	unlink(path);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static int load_from(const char *path, struct xip_policy *p)
{
	setenv("XIPTOOL_CONF", path, 1);
	return xip_policy_load(p);
}

static void test_load(void **state)
{
	const char *conf = unit_path("xiptool.conf");
	struct xip_policy p;

	(void)state;
	put(conf, "exec = verified\n", 0644);
	assert_int_equal(load_from(conf, &p), 0);
	assert_string_equal(p.path, conf);
	assert_int_equal(p.exec.level, XIP_POLICY_VERIFIED);
	assert_int_equal(p.exec.line, 1);
	/* named, but missing: an error, not "no rule" */
	assert_int_equal(load_from(unit_path("none.conf"), &p), -ENOENT);
	/* others or the group may write it: not trusted */
	put(conf, "exec = verified\n", 0646);
	assert_int_equal(load_from(conf, &p), -EPERM);
	assert_non_null(strstr(xip_errmsg(), "writable by others (mode 0646): not trusted"));
	put(conf, "exec = verified\n", 0664);
	assert_int_equal(load_from(conf, &p), -EPERM);
	assert_non_null(strstr(xip_errmsg(), "writable by its group (mode 0664)"));
	put(conf, "exec = verified\n", 0600);
	assert_int_equal(load_from(conf, &p), 0);
	/* a directory, a FIFO: no policy file (and no wait on the FIFO) */
	assert_int_equal(load_from(unit_tmpdir(), &p), -EINVAL);
	assert_int_equal(mkfifo(unit_path("fifo"), 0600), 0);
	assert_int_equal(load_from(unit_path("fifo"), &p), -EINVAL);
	/* too large to be a policy file */
	unit_fill_file(unit_path("big"), 65537, '#');
	assert_int_equal(load_from(unit_path("big"), &p), -EFBIG);
	/* a symbolic link of our own (relative, to a link) is followed */
	assert_int_equal(symlink("xiptool.conf", unit_path("l1")), 0);
	assert_int_equal(symlink(unit_path("l1"), unit_path("l2")), 0);
	assert_int_equal(load_from(unit_path("l2"), &p), 0);
	assert_int_equal(p.exec.level, XIP_POLICY_VERIFIED);
	/* a loop of links ends */
	assert_int_equal(symlink("loop2", unit_path("loop1")), 0);
	assert_int_equal(symlink("loop1", unit_path("loop2")), 0);
	assert_int_equal(load_from(unit_path("loop1"), &p), -ELOOP);
	unsetenv("XIPTOOL_CONF");
}

/* Root: another user's file, or another user's symbolic link to ours. */
static void test_load_others(void **state)
{
	const char *conf = unit_path("theirs.conf");
	struct xip_policy p;

	(void)state;
	if (geteuid() != 0)
		skip();
	put(conf, "exec = any\n", 0644);
	assert_int_equal(chown(conf, 65534, 65534), 0);
	assert_int_equal(load_from(conf, &p), -EPERM);
	assert_non_null(strstr(xip_errmsg(), "owned by uid 65534, neither root nor the caller: not trusted"));
	put(unit_path("ours.conf"), "exec = signed\n", 0644);
	assert_int_equal(symlink(unit_path("ours.conf"), unit_path("planted")),
			 0);
	assert_int_equal(lchown(unit_path("planted"), 65534, 65534), 0);
	assert_int_equal(load_from(unit_path("planted"), &p), -EPERM);
	assert_non_null(strstr(xip_errmsg(), "a symbolic link of uid 65534's (neither root's nor the caller's): not followed"));
	unsetenv("XIPTOOL_CONF");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_levels),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_load_others),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
