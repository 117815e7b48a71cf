// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Messages, exit codes and option parsing shared by all subcommands (and
 * by the front end, so nothing here may need libsmartcols, see table.c;
 * the front end links libc only: popt is left out of it).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"

int opt_verbose;
int opt_quiet;
const char *cmd_name;

/*
 * One line on stderr.  Messages name files of images, which come from
 * whoever made the image: the whole line is escaped (cmd_esc), so that no
 * byte of a name can end the line or reach the terminal as a control.
 */
static void vmsg(const char *kind, const char *fmt, va_list ap)
{
	char *text;

	fflush(stdout);
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	fprintf(stderr, "xiptool%s%s: %s%s\n", cmd_name ? " " : "",
		cmd_name ? cmd_name : "", kind,
		text ? cmd_esc(text) : "out of memory");
	free(text);
}

void msg_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

void msg_warn(const char *fmt, ...)
{
	va_list ap;

	if (opt_quiet)
		return;
	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

void msg_verbose(const char *fmt, ...)
{
	va_list ap;

	if (!opt_verbose)
		return;
	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

int exit_code_for(int err)
{
	(void)err;
	return EXIT_RUNTIME;
}

/*
 * What to do about the record of @err, in the commands' words (their
 * options), from its reason: "" when there is nothing obvious.  A
 * read-only segment (dcssblk's rule, registry) is written only through a
 * writable type; a name already attached takes another name or a detach.
 */
static const char *remedy(int err)
{
	if (err != xip_errcode())
		return "";	/* the record is about another failure */
	switch (xip_errreason()) {
	case XIP_R_SEG_READONLY:
		return ": attach it with -t sw to write to it";
	case XIP_R_NAME_TAKEN:
		return ": give another with -n OTHER, or detach it first";
	case XIP_R_NAME_NEEDED:
		return ": give one with --name";
	case XIP_R_BUSY:
		return " (use --force)";
	case XIP_R_NO_HUGETLBFS:
		return ": --hugepages needs one (mount -t hugetlbfs none /dev/hugepages)";
	default:
		return "";
	}
}

int msg_lib_error(int err)
{
	const char *m = xip_errmsg();

	if (m && *m)
		msg_error("%s%s", m, remedy(err));
	else
		msg_error("%s", strerror(-err));
	return exit_code_for(err);
}

/*
 * The record's message names its object when it has one: as it is when
 * that object is @path itself or lies outside the image (the command's
 * input or output); otherwise (the image, a file's data in it, another
 * file) after "@path: ".
 */
int msg_path_error(const char *path, int err)
{
	const char *m = xip_errmsg();
	enum xip_errobj obj = xip_errobj();

	if (!m || !*m)
		msg_error("%s: %s", path, strerror(-err));
	else if (obj == XIP_OBJ_FD ||
		 (obj != XIP_OBJ_NONE && !strcmp(xip_errobj_name(), path)))
		msg_error("%s%s", m, remedy(err));
	else
		msg_error("%s: %s%s", path, m, remedy(err));
	return exit_code_for(err);
}

#ifndef XIP_LIBC_ONLY
/*
 * @path did not resolve in @img: which of its directories is missing, or
 * which of its components is not a directory ("" when each resolves now).
 * @what says which.
 */
static void first_bad_component(struct xip_image *img, const char *path,
				char *prefix, size_t size, const char **what)
{
	struct ext2_inode_large in;
	const char *p = path;
	ext2_ino_t ino;
	int ret;

	*what = "";
	prefix[0] = '\0';
	while (*p) {
		const char *end = strchrnul(p + 1, '/');
		size_t len = (size_t)(end - path);

		p = end;
		while (*p == '/')
			p++;
		if (!*p || len >= size)
			return;		/* the last component: the file itself */
		memcpy(prefix, path, len);
		prefix[len] = '\0';
		ret = xip_lookup(img, prefix, 0, &ino);
		if (ret == -ENOENT) {
			*what = "missing";
			return;
		}
		if (ret)
			return;
		if (xip_read_inode(img, ino, &in) == 0 &&
		    !LINUX_S_ISDIR(in.i_mode)) {
			*what = "notdir";
			return;
		}
	}
}

int msg_image_path_error(struct xip_image *img, const char *spec,
			 const char *path, int err)
{
	const char *m = xip_errmsg(), *what;
	char prefix[4096], plain[4096 + 64];

	/* a record that says more than "NAME: strerror" is kept */
	snprintf(plain, sizeof(plain), "%s: %s", xip_errobj_name(),
		 strerror(-err));
	if ((err != -ENOENT && err != -ENOTDIR) ||
	    (m && *m && strcmp(m, plain) && strcmp(m, strerror(-err))))
		return msg_path_error(path, err);
	first_bad_component(img, path, prefix, sizeof(prefix), &what);
	if (!strcmp(what, "missing"))
		msg_error("%s: directory %s not found in %s", path, prefix,
			  spec);
	else if (!strcmp(what, "notdir"))
		msg_error("%s: %s is not a directory in %s", path, prefix,
			  spec);
	else if (err == -ENOTDIR)
		msg_error("%s: not a directory in %s", path, spec);
	else
		msg_error("%s: not found in %s", path, spec);
	return exit_code_for(err);
}
#endif

/* Length of the UTF-8 sequence at @p if it is valid and printable, else 0. */
static size_t utf8_printable(const unsigned char *p)
{
	unsigned int c, min;
	size_t n;

	if (p[0] >= 0x20 && p[0] < 0x7f)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, c = p[0] & 0x1f, min = 0x80;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, c = p[0] & 0x0f, min = 0x800;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, c = p[0] & 0x07, min = 0x10000;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	/*
	 * overlong forms, surrogates, beyond U+10FFFF; C1 controls, line and
	 * paragraph separators, bidirectional overrides and isolates
	 */
	if (c < min || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff ||
	    (c >= 0x80 && c <= 0x9f) || (c >= 0x2028 && c <= 0x202e) ||
	    (c >= 0x2066 && c <= 0x2069))
		return 0;
	return n;
}

/* Append the escaped form of @s to @out (room for 4 bytes per byte + 1). */
static void escape_into(char *out, const char *s)
{
	static const char named[] = "abtnvfr";
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	while (*p) {
		if (*p == '\\') {
			*out++ = '\\';
			*out++ = '\\';
			p++;
		} else if ((n = utf8_printable(p))) {
			memcpy(out, p, n);
			out += n;
			p += n;
		} else if (*p >= '\a' && *p <= '\r') {
			*out++ = '\\';
			*out++ = named[*p - '\a'];
			p++;
		} else {
			out += sprintf(out, "\\x%02x", *p++);
		}
	}
	*out = '\0';
}

/*
 * For JSON: ASCII as it is (libsmartcols escapes controls, quotes and
 * backslashes), printable UTF-8 as it is, every other byte as \xHH text.
 */
static void json_safe_into(char *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	while (*p) {
		if (*p < 0x80)
			*out++ = (char)*p++;
		else if ((n = utf8_printable(p))) {
			memcpy(out, p, n);
			out += n;
			p += n;
		} else {
			out += sprintf(out, "\\x%02x", *p++);
		}
	}
	*out = '\0';
}

/* One of four buffers in turn, of at least @need bytes; NULL if none. */
static char *ring_buffer(size_t need)
{
	static char *ring[4];
	static size_t size[4];
	static unsigned int next;
	unsigned int i = next++ % 4;

	if (xip_grow((void **)&ring[i], &size[i], need, 1))
		return NULL;
	return ring[i];
}

const char *cmd_esc(const char *s)
{
	char *buf;

	if (!s)
		return "(null)";
	buf = ring_buffer(strlen(s) * 4 + 1);
	if (!buf)
		return "(out of memory)";
	escape_into(buf, s);
	return buf;
}

const char *cmd_json_safe(const char *s)
{
	char *buf;

	if (!s)
		return NULL;
	buf = ring_buffer(strlen(s) * 4 + 1);
	if (!buf)
		return "(out of memory)";
	json_safe_into(buf, s);
	return buf;
}

unsigned int cmd_std_fds(void)
{
	struct pollfd p[3] = { { .fd = 0 }, { .fd = 1 }, { .fd = 2 } };
	unsigned int opened = 0;

	/* one probe for the three: POLLNVAL marks a closed one */
	if (poll(p, 3, 0) < 0)
		_exit(EXIT_RUNTIME);
	for (int fd = 0; fd <= 2; fd++) {
		if (!(p[fd].revents & POLLNVAL))
			continue;
		/* the lowest free number: @fd, as those below it are open */
		if (open("/dev/null", O_RDWR | O_NOCTTY | O_CLOEXEC) != fd)
			_exit(EXIT_RUNTIME);	/* no message is sure to land */
		opened |= 1u << fd;
	}
	return opened;
}

/*
 * Nonzero, with errno set (0: not known), when something written to @f
 * was lost: flushed, then a duplicate of its descriptor closed, which
 * reports what file systems such as NFS defer until close.
 */
static int flush_stream(FILE *f)
{
	int fd;

	errno = 0;
	if (ferror(f) || fflush(f))
		return EOF;
	fd = fileno(f);
	if (fd < 0 || (fd = dup(fd)) < 0 || close(fd))
		return errno == EBADF ? 0 : EOF;
	return 0;
}

void cmd_close_stdout(void)
{
	if (flush_stream(stdout) && errno != EPIPE) {
		if (errno)
			msg_error("write error: %s", strerror(errno));
		else
			msg_error("write error");
		_exit(EXIT_RUNTIME);
	}
	if (flush_stream(stderr))
		_exit(EXIT_RUNTIME);
}

int cmd_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try 'xiptool %s%s--help' for more information.\n",
		cmd_name ? cmd_name : "", cmd_name ? " " : "");
	return EXIT_USAGE;
}

int cmd_parse_size(const char *what, const char *text, uint64_t *bytes)
{
	if (xip_parse_size(text, bytes))
		return cmd_usage_error("%s: %s", what, xip_errmsg());
	return EXIT_OK;
}

int cmd_parse_offset(const char *what, const char *text, uint64_t *bytes)
{
	const char *m;

	if (!xip_parse_size(text, bytes))
		return EXIT_OK;
	/* the library's words are about a size: "invalid size 'x' ..." */
	m = xip_errmsg();
	if (!strncmp(m, "invalid size", 12))
		return cmd_usage_error("%s: invalid offset%s", what, m + 12);
	if (!strncmp(m, "size", 4))
		return cmd_usage_error("%s: offset%s", what, m + 4);
	return cmd_usage_error("%s: %s", what, m);
}

int cmd_parse_count(const char *what, const char *text, uint64_t max,
		    uint64_t *count)
{
	unsigned long long v;
	char *end;

	if (*text == '-')
		return cmd_usage_error("%s: invalid number '%s': negative", what,
				       text);
	if (!isdigit((unsigned char)*text))
		return cmd_usage_error("%s: invalid number '%s' (expected a"
				       " decimal number)", what, text);
	errno = 0;
	v = strtoull(text, &end, 10);
	if (*end)
		return cmd_usage_error("%s: invalid number '%s' (expected a"
				       " decimal number)", what, text);
	if (errno || v > max)
		return cmd_usage_error("%s: number '%s' is too large (at most"
				       " %" PRIu64 ")", what, text, max);
	*count = v;
	return EXIT_OK;
}

#ifndef XIP_LIBC_ONLY
int cmd_registry_opts(const char *creds, const char *authfile,
		      const char *tls_verify, const char *timeout,
		      struct xip_oci_client_opts *r)
{
	uint64_t secs = 0;
	int rc;

	if (creds && authfile)
		return cmd_usage_error("--creds and --authfile exclude each other");
	if (creds && (!strchr(creds, ':') || *creds == ':'))
		return cmd_usage_error("--creds: expected USER:PASSWORD");
	if (tls_verify && strcmp(tls_verify, "true") &&
	    strcmp(tls_verify, "false"))
		return cmd_usage_error("--tls-verify: '%s': expected true or false",
				       tls_verify);
	if (timeout) {
		rc = cmd_parse_count("--timeout", timeout, 3600, &secs);
		if (rc)
			return rc;
		if (!secs)
			return cmd_usage_error("--timeout: must be at least 1 second");
		r->timeout = (unsigned int)secs;
	}
	r->creds = creds;
	r->authfile = authfile;
	r->insecure = tls_verify && !strcmp(tls_verify, "false");
	return EXIT_OK;
}
#endif

int cmd_parse_page_size(const char *text, unsigned int *page_size)
{
	uint64_t ps;
	int rc = cmd_parse_size("--page-size", text, &ps);

	if (rc)
		return rc;
	if (ps < 1024 || ps > 65536 || (ps & (ps - 1)))
		return cmd_usage_error("--page-size: %s: not a power of two between 1K and 64K",
				       text);
	*page_size = (unsigned int)ps;
	return EXIT_OK;
}

#ifndef XIP_LIBC_ONLY
/*
 * -h, --help (and popt's -?) and --usage, as in every command: popt's own
 * help table has no -h.
 */
static void help_cb(poptContext pc, enum poptCallbackReason reason,
		    const struct poptOption *opt, const char *arg,
		    const void *data)
{
	(void)reason;
	(void)arg;
	(void)data;
	if (!opt)
		return;
	if (opt->val == 'u')
		poptPrintUsage(pc, stdout, 0);
	else
		poptPrintHelp(pc, stdout, 0);
	exit(ferror(stdout) || fflush(stdout) ? EXIT_RUNTIME : EXIT_OK);
}

static struct poptOption help_options[] = {
	{ NULL, '\0', POPT_ARG_CALLBACK, (void *)help_cb, 0, NULL, NULL },
	{ "help", 'h', POPT_ARG_NONE, NULL, 'h', "Show this help message",
	  NULL },
	{ NULL, '?', POPT_ARG_NONE | POPT_ARGFLAG_DOC_HIDDEN, NULL, '?', NULL,
	  NULL },
	{ "usage", '\0', POPT_ARG_NONE, NULL, 'u',
	  "Display brief usage message", NULL },
	POPT_TABLEEND
};

int cmd_root_hash(const char *hex, const char *file, uint8_t *out,
		  size_t max, size_t *len)
{
	char text[2 * XIP_VERITY_DIGEST_MAX + 2];
	ssize_t n = 0;
	struct stat st;
	int fd, got;

	*len = 0;
	if (hex && file)
		return cmd_usage_error("--root-hash and --root-hash-file exclude each other");
	if (hex) {
		got = xip_hex_decode(hex, out, max);
		if (got < 0)
			return cmd_usage_error("--root-hash: '%s': not a hash in hex digits",
					       hex);
		*len = (size_t)got;
		return EXIT_OK;
	}
	if (!file)
		return EXIT_OK;
	fd = open(file, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		msg_error("%s: %s", cmd_esc(file), strerror(errno));
		if (fd >= 0)
			close(fd);
		return EXIT_RUNTIME;
	}
	if (S_ISREG(st.st_mode) && st.st_size < (off_t)sizeof(text))
		n = xip_read_full(fd, text, sizeof(text) - 1);
	else
		n = -EFBIG;
	close(fd);
	if (n >= 0 && n > 0 && text[n - 1] == '\n')
		n--;
	if (n >= 0) {
		text[n] = '\0';
		got = xip_hex_decode(text, out, max);
	}
	if (n < 0 || got < 0) {
		msg_error("%s: %s", cmd_esc(file),
			  n == -EFBIG ? "not a root hash file (a regular file of hex digits)" :
			  n < 0 ? strerror((int)-n) : "not a root hash in hex digits");
		return EXIT_RUNTIME;
	}
	*len = (size_t)got;
	return EXIT_OK;
}

/* popt: xiptool-main only (the front end parses exec's options itself) */
static int parse_args(int argc, const char **argv,
		      const struct poptOption *options, const char *usage,
		      int min_args, int max_args, struct cmd_args *args)
{
	struct poptOption table[] = {
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, (void *)options, 0, NULL,
		  NULL },
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, help_options, 0,
		  "Help options:", NULL },
		POPT_TABLEEND
	};
	int rc, n = 0;

	memset(args, 0, sizeof(*args));
	snprintf(args->prog, sizeof(args->prog), "xiptool %s", cmd_name);
	/* popt names the program in --help after argv[0] */
	args->argv0 = calloc((size_t)argc + 1, sizeof(*argv));
	if (!args->argv0)
		return EXIT_RUNTIME;
	memcpy(args->argv0, argv, (size_t)argc * sizeof(*argv));
	args->argv0[0] = args->prog;
	args->pc = poptGetContext(args->prog, argc, args->argv0,
				  options ? table : table + 1, 0);
	poptSetOtherOptionHelp(args->pc, usage);
	while ((rc = poptGetNextOpt(args->pc)) > 0)
		;
	if (rc < -1) {
		rc = cmd_usage_error("%s: %s",
				     poptBadOption(args->pc, POPT_BADOPTION_NOALIAS),
				     poptStrerror(rc));
		cmd_args_free(args);
		return rc;
	}
	args->argv = poptGetArgs(args->pc);
	while (args->argv && args->argv[n])
		n++;
	args->argc = n;
	if (n < min_args || (max_args >= 0 && n > max_args)) {
		rc = cmd_usage_error("%s (usage: xiptool %s %s)",
				     n < min_args ? "missing argument" :
				     "too many arguments", cmd_name, usage);
		cmd_args_free(args);
		return rc;
	}
	return EXIT_OK;
}

void cmd_parse(int argc, const char **argv, const struct poptOption *options,
	       const char *usage, int min_args, int max_args,
	       struct cmd_args *args)
{
	int rc = parse_args(argc, argv, options, usage, min_args, max_args,
			    args);

	if (rc)
		exit(rc);
}

bool cmd_progress_due(struct cmd_progress *p, bool final)
{
	struct timespec now;
	long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (now.tv_sec - p->last.tv_sec) * 1000 +
	     (now.tv_nsec - p->last.tv_nsec) / 1000000;
	if (ms < 100 && !final)
		return false;
	p->last = now;
	p->shown = true;
	return true;
}

struct fill_progress {
	struct cmd_progress p;
	const char *label;
};

static void fill_progress(void *arg, uint64_t done, uint64_t total)
{
	struct fill_progress *fp = arg;

	if (!cmd_progress_due(&fp->p, done == total))
		return;
	fprintf(stderr, "\rxiptool %s: %s: filling %3d%%", cmd_name,
		fp->label, total ? (int)(done * 100 / total) : 100);
	fflush(stderr);
}

int cmd_wait_filled(struct xip_seg *seg)
{
	struct fill_progress fp = { .label = xip_seg_label(seg) };
	bool tty = isatty(STDERR_FILENO) && !opt_quiet;
	int ret;

	ret = xip_seg_fill_wait_all(seg, tty ? fill_progress : NULL, &fp);
	if (fp.p.shown)
		fputs("\r\033[K", stderr);
	return ret;
}

void cmd_args_free(struct cmd_args *args)
{
	if (args->pc)
		poptFreeContext(args->pc);
	free(args->argv0);
	args->argv0 = NULL;
	args->pc = NULL;
	args->argv = NULL;
}
#endif

/* ---- JSON documents ----------------------------------------------------- */

static void json_string(const char *s)
{
	putchar('"');
	for (const char *p = cmd_json_safe(s); *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* The separator and indent of the next value at this depth. */
static void json_next(struct cmd_json *j)
{
	printf("%s\n%*s", j->count[j->depth]++ ? "," : "", 3 * j->depth, "");
}

static void json_key(struct cmd_json *j, const char *key)
{
	json_next(j);
	json_string(key);
	fputs(": ", stdout);
}

/* One level deeper (past the last level: stays, a caller's bug). */
static void json_push(struct cmd_json *j)
{
	if (j->depth + 1 < CMD_JSON_DEPTH)
		j->depth++;
	j->count[j->depth] = 0;
}

void cmd_json_begin(struct cmd_json *j)
{
	j->depth = 0;
	putchar('{');
	json_push(j);
}

int cmd_json_end(struct cmd_json *j)
{
	(void)j;
	puts("\n}");
	return fflush(stdout) || ferror(stdout) ? -EIO : 0;
}

void cmd_json_str(struct cmd_json *j, const char *key, const char *val)
{
	json_key(j, key);
	if (val)
		json_string(val);
	else
		fputs("null", stdout);
}

void cmd_json_u64(struct cmd_json *j, const char *key, uint64_t val,
		  bool present)
{
	json_key(j, key);
	if (present)
		printf("%" PRIu64, val);
	else
		fputs("null", stdout);
}

void cmd_json_bool(struct cmd_json *j, const char *key, bool val)
{
	json_key(j, key);
	fputs(val ? "true" : "false", stdout);
}

void cmd_json_array_begin(struct cmd_json *j, const char *key)
{
	json_key(j, key);
	putchar('[');
	json_push(j);
}

void cmd_json_array_end(struct cmd_json *j)
{
	bool empty = !j->count[j->depth];

	j->depth--;
	printf("%s\n%*s]", empty ? "\n" : "", 3 * j->depth, "");
}

void cmd_json_object_begin(struct cmd_json *j)
{
	/* "},{" between an array's objects, as libsmartcols writes them */
	if (j->count[j->depth]++)
		putchar(',');
	else
		printf("\n%*s", 3 * j->depth, "");
	putchar('{');
	json_push(j);
}

void cmd_json_object_end(struct cmd_json *j)
{
	j->depth--;
	printf("\n%*s}", 3 * j->depth, "");
}
