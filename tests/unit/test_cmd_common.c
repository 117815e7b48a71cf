// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The command layer's shared helpers (cmd/common.c): escaping of names for
 * output, descriptors 0-2, size parsing, and whom an error message
 * blames (the error record's object).
 */
#include "unit.h"
#include "../../cmd/cmd.h"

static void test_esc_plain(void **state)
{
	(void)state;
	assert_string_equal(cmd_esc(""), "");
	assert_string_equal(cmd_esc("bin/busybox"), "bin/busybox");
	assert_string_equal(cmd_esc("a b.~-"), "a b.~-");
	/* printable UTF-8 is kept */
	assert_string_equal(cmd_esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
			    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
}

static void test_esc_controls(void **state)
{
	(void)state;
	assert_string_equal(cmd_esc("a\\b"), "a\\\\b");
	assert_string_equal(cmd_esc("evil\nxiptool: forged"),
			    "evil\\nxiptool: forged");
	assert_string_equal(cmd_esc("\a\b\t\n\v\f\r"),
			    "\\a\\b\\t\\n\\v\\f\\r");
	assert_string_equal(cmd_esc("\x1b]0;title\a"), "\\x1b]0;title\\a");
	assert_string_equal(cmd_esc("\x01\x1f\x7f"), "\\x01\\x1f\\x7f");
	/* the escaped form of an escape is not taken for one */
	assert_string_equal(cmd_esc("\\x1b"), "\\\\x1b");
}

static void test_esc_bad_utf8(void **state)
{
	(void)state;
	/* invalid bytes, truncated and overlong sequences, surrogates */
	assert_string_equal(cmd_esc("\xff"), "\\xff");
	assert_string_equal(cmd_esc("\xc3"), "\\xc3");
	assert_string_equal(cmd_esc("\xc3x"), "\\xc3x");
	assert_string_equal(cmd_esc("\xc0\xaf"), "\\xc0\\xaf");
	assert_string_equal(cmd_esc("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");
	assert_string_equal(cmd_esc("\xed\xa0\x80"), "\\xed\\xa0\\x80");
	assert_string_equal(cmd_esc("\xf4\x90\x80\x80"),
			    "\\xf4\\x90\\x80\\x80");
	/* C1 controls (CSI), line separator, right-to-left override */
	assert_string_equal(cmd_esc("\xc2\x9b" "2J"), "\\xc2\\x9b2J");
	assert_string_equal(cmd_esc("\xe2\x80\xa8"), "\\xe2\\x80\\xa8");
	assert_string_equal(cmd_esc("\xe2\x80\xae" "txt"),
			    "\\xe2\\x80\\xaetxt");
}

static void test_esc_ring(void **state)
{
	char big[5000];
	const char *a, *b, *c, *d;

	(void)state;
	a = cmd_esc("one\n");
	b = cmd_esc("two\t");
	c = cmd_esc("three");
	memset(big, '\x1b', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	d = cmd_esc(big);
	/* four results live at once */
	assert_string_equal(a, "one\\n");
	assert_string_equal(b, "two\\t");
	assert_string_equal(c, "three");
	assert_int_equal(strlen(d), 4 * (sizeof(big) - 1));
	assert_memory_equal(d, "\\x1b\\x1b", 8);
	assert_string_equal(cmd_esc(NULL), "(null)");
}

static void test_json_safe(void **state)
{
	(void)state;
	assert_null(cmd_json_safe(NULL));
	/* ASCII, controls included, is libsmartcols' to escape */
	assert_string_equal(cmd_json_safe("a\\b\n\x1b\"q\""), "a\\b\n\x1b\"q\"");
	assert_string_equal(cmd_json_safe("caf\xc3\xa9"), "caf\xc3\xa9");
	/* what JSON cannot hold, or a terminal would act on */
	assert_string_equal(cmd_json_safe("bad\xff"), "bad\\xff");
	assert_string_equal(cmd_json_safe("\x9b" "2J"), "\\x9b2J");
	assert_string_equal(cmd_json_safe("\xc2\x9b" "2J"), "\\xc2\\x9b2J");
	assert_string_equal(cmd_json_safe("\xe2\x80\xae"), "\\xe2\\x80\\xae");
}

static void test_std_fds(void **state)
{
	int saved = dup(0), fl;
	struct stat st, null;

	(void)state;
	assert_true(saved > 2);
	assert_int_equal(close(0), 0);
	cmd_std_fds();
	assert_int_equal(fstat(0, &st), 0);
	assert_int_equal(stat("/dev/null", &null), 0);
	assert_true(st.st_rdev == null.st_rdev && S_ISCHR(st.st_mode));
	fl = fcntl(0, F_GETFL);
	assert_int_equal(fl & O_ACCMODE, O_RDWR);
	/* closed again by whatever execs next */
	assert_true(fcntl(0, F_GETFD) & FD_CLOEXEC);
	/* open descriptors are left alone */
	assert_int_equal(dup2(saved, 0), 0);
	cmd_std_fds();
	assert_int_equal(fstat(0, &st), 0);
	assert_false(fcntl(0, F_GETFD) & FD_CLOEXEC);
	close(saved);
}

static void test_parse_size_decimal(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(xip_parse_size("010", &v), 0);
	assert_int_equal(v, 10);
	assert_int_equal(xip_parse_size("08", &v), 0);
	assert_int_equal(v, 8);
	assert_int_equal(xip_parse_size("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(xip_parse_size("010K", &v), 0);
	assert_int_equal(v, 10240);
	assert_int_equal(xip_parse_size("16T", &v), 0);
	assert_int_equal(v, 16ULL << 40);
	assert_int_equal(xip_parse_size("18446744073709551615", &v), 0);
	assert_int_equal(v, UINT64_MAX);
	assert_int_equal(xip_parse_size("0x10", &v), -EINVAL);
	assert_int_equal(xip_parse_size("-0", &v), -EINVAL);
	assert_int_equal(xip_parse_size("-1", &v), -EINVAL);
	assert_int_equal(xip_parse_size("+1", &v), -EINVAL);
	assert_int_equal(xip_parse_size(" 1", &v), -EINVAL);
	assert_int_equal(xip_parse_size("1 ", &v), -EINVAL);
	assert_int_equal(xip_parse_size("1.5K", &v), -EINVAL);
	assert_int_equal(xip_parse_size("1KK", &v), -EINVAL);
	assert_int_equal(xip_parse_size("18446744073709551616", &v), -ERANGE);
	assert_int_equal(xip_parse_size("16777216T", &v), -ERANGE);
	assert_int_equal(xip_parse_size("16777215T", &v), 0);
}

static void test_cmd_parse_size(void **state)
{
	uint64_t v = 7;
	int err = dup(2), null = open("/dev/null", O_WRONLY);

	(void)state;
	cmd_name = "test";
	assert_int_equal(cmd_parse_size("--offset", "010", &v), EXIT_OK);
	assert_int_equal(v, 10);
	/* usage errors (their message to /dev/null) */
	dup2(null, 2);
	assert_int_equal(cmd_parse_size("--offset", "0x10", &v), EXIT_USAGE);
	assert_int_equal(cmd_parse_size("--offset", "-1", &v), EXIT_USAGE);
	assert_int_equal(cmd_parse_size("--offset", "99999999999999999999",
					 &v), EXIT_USAGE);
	dup2(err, 2);
	close(err);
	close(null);
	assert_int_equal(v, 10);
}

static void test_cmd_parse_count(void **state)
{
	uint64_t v = 7;
	int err = dup(2), null = open("/dev/null", O_WRONLY);

	(void)state;
	cmd_name = "test";
	assert_int_equal(cmd_parse_count("--inodes", "010", 100, &v), EXIT_OK);
	assert_int_equal(v, 10);
	assert_int_equal(cmd_parse_count("--inodes", "100", 100, &v), EXIT_OK);
	assert_int_equal(v, 100);
	dup2(null, 2);
	assert_int_equal(cmd_parse_count("--inodes", "101", 100, &v),
			 EXIT_USAGE);
	assert_int_equal(cmd_parse_count("--inodes", "0x10", 100, &v),
			 EXIT_USAGE);
	assert_int_equal(cmd_parse_count("--inodes", "-1", 100, &v),
			 EXIT_USAGE);
	assert_int_equal(cmd_parse_count("--inodes", "1K", 100, &v),
			 EXIT_USAGE);
	assert_int_equal(cmd_parse_count("--inodes", "", 100, &v), EXIT_USAGE);
	assert_int_equal(cmd_parse_count("--inodes", "99999999999999999999",
					 UINT64_MAX, &v), EXIT_USAGE);
	dup2(err, 2);
	close(err);
	close(null);
	assert_int_equal(v, 100);
}

/* The error record: the object beside the message, reset by every record. */
static void test_error_object(void **state)
{
	(void)state;
	xip_error_clear();
	assert_int_equal(xip_errobj(), XIP_OBJ_NONE);
	assert_string_equal(xip_errobj_name(), "");
	assert_int_equal(xip_error_obj(-ENOENT, XIP_OBJ_FILE, "/a/b", "%s %d",
				       "gone", 7), -ENOENT);
	assert_int_equal(xip_errcode(), -ENOENT);
	assert_string_equal(xip_errmsg(), "/a/b: gone 7");
	assert_int_equal(xip_errobj(), XIP_OBJ_FILE);
	assert_string_equal(xip_errobj_name(), "/a/b");
	/* a new record has no object until it is given one */
	assert_int_equal(xip_error(-EIO, "/a/b: looks like it"), -EIO);
	assert_int_equal(xip_errobj(), XIP_OBJ_NONE);
	assert_string_equal(xip_errobj_name(), "");
	assert_int_equal(xip_error_set_obj(XIP_OBJ_IMAGE, "img"), -EIO);
	assert_int_equal(xip_errobj(), XIP_OBJ_IMAGE);
	assert_string_equal(xip_errobj_name(), "img");
	assert_string_equal(xip_errmsg(), "/a/b: looks like it");
	assert_int_equal(xip_error_obj(-EPIPE, XIP_OBJ_FD, "stdout",
				       "write error"), -EPIPE);
	assert_int_equal(xip_errobj(), XIP_OBJ_FD);
	xip_error_clear();
	assert_int_equal(xip_errobj(), XIP_OBJ_NONE);
	assert_string_equal(xip_errobj_name(), "");
	assert_int_equal(xip_errcode(), 0);
}

/* What msg_path_error() prints for the record: @path in front or not. */
static const char *path_message(const char *path)
{
	static char out[1024];
	const char *p = unit_path("stderr");
	int fd, saved;
	ssize_t n;

	fflush(stderr);
	saved = dup(2);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(saved >= 0 && fd >= 0);
	assert_int_equal(dup2(fd, 2), 2);
	assert_int_equal(msg_path_error(path, xip_errcode()), EXIT_RUNTIME);
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	n = pread(fd, out, sizeof(out) - 1, 0);
	assert_true(n > 0);
	out[n - (out[n - 1] == '\n')] = '\0';
	close(fd);
	return out;
}

static void test_msg_path_error(void **state)
{
	static const struct {
		int err;
		enum xip_errobj obj;
		const char *name, *text, *want;
	} cases[] = {
		/* the file itself, named in the message: as it is */
		{ -ENOENT, XIP_OBJ_FILE, "/f", "No such file or directory",
		  "xiptool test: /f: No such file or directory" },
		/* another file: the one asked for in front */
		{ -ENOTDIR, XIP_OBJ_FILE, "/d", "Not a directory",
		  "xiptool test: /f: /d: Not a directory" },
		/* the command's output or input: blamed alone */
		{ -EPIPE, XIP_OBJ_FD, "stdout", "write error: Broken pipe",
		  "xiptool test: stdout: write error: Broken pipe" },
		/* the image, or none said: @path in front, whatever the text */
		{ -EIO, XIP_OBJ_IMAGE, "x.img", "the file shrank",
		  "xiptool test: /f: x.img: the file shrank" },
		{ -EUCLEAN, XIP_OBJ_NONE, NULL, "/f: inode 12: bad block",
		  "xiptool test: /f: /f: inode 12: bad block" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].obj == XIP_OBJ_NONE)
			xip_error(cases[i].err, "%s", cases[i].text);
		else
			xip_error_obj(cases[i].err, cases[i].obj, cases[i].name,
				      "%s", cases[i].text);
		assert_string_equal(path_message("/f"), cases[i].want);
	}
	xip_error_clear();
}

/* stderr into a file between capture_begin() and capture_end(). */
static int capture_fd = -1, capture_saved = -1;

static void capture_begin(void)
{
	fflush(stderr);
	capture_saved = dup(2);
	capture_fd = open(unit_path("capture"),
			  O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(capture_saved >= 0 && capture_fd >= 0);
	assert_int_equal(dup2(capture_fd, 2), 2);
}

/* What was written, without its last newline. */
static const char *capture_end(void)
{
	static char out[1024];
	ssize_t n;

	fflush(stderr);
	assert_int_equal(dup2(capture_saved, 2), 2);
	close(capture_saved);
	n = pread(capture_fd, out, sizeof(out) - 1, 0);
	close(capture_fd);
	assert_true(n > 0);
	out[n - (out[n - 1] == '\n')] = '\0';
	return out;
}

static void test_cmd_parse_offset(void **state)
{
	uint64_t v = 7;

	(void)state;
	cmd_name = "test";
	assert_int_equal(cmd_parse_offset("--offset", "4K", &v), EXIT_OK);
	assert_int_equal(v, 4096);
	/* an offset is not called a size */
	capture_begin();
	assert_int_equal(cmd_parse_offset("--offset", "xyz", &v), EXIT_USAGE);
	assert_string_equal(capture_end(),
			    "xiptool test: --offset: invalid offset 'xyz'"
			    " (expected a decimal number with an optional K,"
			    " M, G or T suffix)\n"
			    "Try 'xiptool test --help' for more information.");
	capture_begin();
	assert_int_equal(cmd_parse_offset("--offset", "-1", &v), EXIT_USAGE);
	assert_string_equal(capture_end(),
			    "xiptool test: --offset: invalid offset '-1':"
			    " negative\n"
			    "Try 'xiptool test --help' for more information.");
	capture_begin();
	assert_int_equal(cmd_parse_offset("--offset", "99999999999999999999",
					  &v), EXIT_USAGE);
	assert_string_equal(capture_end(),
			    "xiptool test: --offset: offset"
			    " '99999999999999999999' is too large\n"
			    "Try 'xiptool test --help' for more information.");
	assert_int_equal(v, 4096);
}

/* The remedies added to the records that have an obvious one. */
static void test_msg_remedy(void **state)
{
	(void)state;
	cmd_name = "test";
	xip_error_reason(-EROFS, XIP_R_SEG_READONLY,
			 "@seg: segment is read-only (type sr)");
	capture_begin();
	assert_int_equal(msg_lib_error(-EROFS), EXIT_RUNTIME);
	assert_string_equal(capture_end(), "xiptool test: @seg: segment is"
			    " read-only (type sr): attach it with -t sw to"
			    " write to it");
	/* through msg_path_error too (a write names the file) */
	xip_error_reason(-EROFS, XIP_R_SEG_READONLY,
			 "@seg: segment is read-only (type er)");
	capture_begin();
	msg_path_error("/f", -EROFS);
	assert_string_equal(capture_end(), "xiptool test: /f: @seg: segment"
			    " is read-only (type er): attach it with -t sw to"
			    " write to it");
	xip_error_reason(-EEXIST, XIP_R_NAME_TAKEN,
			 "seg: a segment of that name is already attached");
	capture_begin();
	msg_lib_error(-EEXIST);
	assert_string_equal(capture_end(), "xiptool test: seg: a segment of"
			    " that name is already attached: give another"
			    " with -n OTHER, or detach it first");
	xip_error_reason(-EBUSY, XIP_R_BUSY, "seg: busy: /dev/loop0 is mounted");
	capture_begin();
	msg_lib_error(-EBUSY);
	assert_string_equal(capture_end(), "xiptool test: seg: busy:"
			    " /dev/loop0 is mounted (use --force)");
	xip_error_reason(-EINVAL, XIP_R_NAME_NEEDED,
			 "@a: a copy of a segment needs a name");
	capture_begin();
	msg_lib_error(-EINVAL);
	assert_string_equal(capture_end(), "xiptool test: @a: a copy of a"
			    " segment needs a name: give one with --name");
	xip_error_reason(-ENOENT, XIP_R_NO_HUGETLBFS, "no hugetlbfs is mounted");
	capture_begin();
	msg_lib_error(-ENOENT);
	assert_string_equal(capture_end(), "xiptool test: no hugetlbfs is"
			    " mounted: --hugepages needs one (mount -t"
			    " hugetlbfs none /dev/hugepages)");
	/* the reason, not the text: the same words without one get none */
	xip_error(-EROFS, "@seg: segment is read-only (type sr)");
	capture_begin();
	msg_lib_error(-EROFS);
	assert_string_equal(capture_end(),
			    "xiptool test: @seg: segment is read-only (type sr)");
	/* nor a record of another failure than the one reported */
	xip_error_reason(-EBUSY, XIP_R_BUSY, "seg: busy: held");
	capture_begin();
	msg_lib_error(-EIO);
	assert_string_equal(capture_end(), "xiptool test: seg: busy: held");
	/* other records get none, even with the same errno */
	xip_error(-EROFS, "x.img: read-only file system");
	capture_begin();
	msg_lib_error(-EROFS);
	assert_string_equal(capture_end(),
			    "xiptool test: x.img: read-only file system");
	xip_error_clear();
}

/*
 * A JSON document: libsmartcols' layout, null for what is absent, every
 * string escaped (quotes, backslashes, controls; bytes that are not UTF-8
 * as \\xHH text), the verdicts after the array.
 */
static void test_json_document(void **state)
{
	static char out[2048];
	struct cmd_json j;
	int fd, saved;
	ssize_t n;

	(void)state;
	fflush(stdout);
	saved = dup(1);
	fd = open(unit_path("json"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
		  0600);
	assert_true(saved >= 0 && fd >= 0);
	assert_int_equal(dup2(fd, 1), 1);
	cmd_json_begin(&j);
	cmd_json_array_begin(&j, "none");
	cmd_json_array_end(&j);
	cmd_json_array_begin(&j, "two");
	cmd_json_object_begin(&j);
	cmd_json_str(&j, "s", "a\"b\\c\n\x01\xff");
	cmd_json_u64(&j, "n", 18446744073709551615ULL, true);
	cmd_json_object_end(&j);
	cmd_json_object_begin(&j);
	cmd_json_str(&j, "s", NULL);
	cmd_json_u64(&j, "n", 0, false);
	cmd_json_object_end(&j);
	cmd_json_array_end(&j);
	cmd_json_bool(&j, "t", true);
	cmd_json_bool(&j, "f", false);
	assert_int_equal(cmd_json_end(&j), 0);
	assert_int_equal(dup2(saved, 1), 1);
	close(saved);
	n = pread(fd, out, sizeof(out) - 1, 0);
	close(fd);
	assert_true(n > 0);
	out[n] = '\0';
	assert_string_equal(out,
			    "{\n"
			    "   \"none\": [\n"
			    "\n"
			    "   ],\n"
			    "   \"two\": [\n"
			    "      {\n"
			    "         \"s\": \"a\\\"b\\\\c\\u000a\\u0001\\\\xff\",\n"
			    "         \"n\": 18446744073709551615\n"
			    "      },{\n"
			    "         \"s\": null,\n"
			    "         \"n\": null\n"
			    "      }\n"
			    "   ],\n"
			    "   \"t\": true,\n"
			    "   \"f\": false\n"
			    "}\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_esc_plain),
		cmocka_unit_test(test_esc_controls),
		cmocka_unit_test(test_esc_bad_utf8),
		cmocka_unit_test(test_esc_ring),
		cmocka_unit_test(test_json_safe),
		cmocka_unit_test(test_std_fds),
		cmocka_unit_test(test_parse_size_decimal),
		cmocka_unit_test(test_cmd_parse_size),
		cmocka_unit_test(test_cmd_parse_count),
		cmocka_unit_test(test_error_object),
		cmocka_unit_test(test_msg_path_error),
		cmocka_unit_test(test_cmd_parse_offset),
		cmocka_unit_test(test_msg_remedy),
		cmocka_unit_test(test_json_document),
	};

	return cmocka_run_group_tests_name("cmd_common", tests, NULL, NULL);
}
