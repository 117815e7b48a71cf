// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool write: copy stdin (or a file) into a file of an image, in place:
 * holes and new blocks are allocated through get_xip_page (filled or
 * cleared before they are linked in) and the bytes go straight into the
 * segment: from a regular file by the kernel (copy_file_range).  Input
 * from a pipe or terminal is first gathered (in memory, past 16 MiB in an
 * unlinked temporary file), so that the whole input goes in with one
 * library write, which is all or nothing: a write that fails leaves the
 * file as it was.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "util/xip_util.h"

static const char write_usage[] =
	"[--offset N | --append] [--create [--mode MODE]] [-i FILE] IMAGE PATH [FILE]";

#define PIPE_CHUNK (1u << 20)
#define STREAM_MEM (16u << 20)	/* gathered in memory; more is spooled */

struct wjob {
	struct xip_image *img;
	ext2_ino_t ino;
	uint64_t off;		/* where the write goes */
	int fd;
	const char *in_name;
};

/* A regular input file: one write, the kernel copies it into the blocks. */
static int copy_file(struct wjob *w, int fd, uint64_t start, uint64_t size)
{
	ssize_t k;

	if (size > SSIZE_MAX)
		return xip_error_obj(-EFBIG, XIP_OBJ_FD, w->in_name,
				     "too large");
	k = xip_file_write_fd(w->img, w->ino, w->off, fd, start, (size_t)size,
			      w->in_name);
	return k < 0 ? (int)k : 0;
}

/* An unlinked temporary file for a stream. */
static int spool_open(void)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	int fd;

	if (!dir || !*dir)
		dir = "/tmp";
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR &&
			errno != EINVAL))
		return fd;
	snprintf(path, sizeof(path), "%s/xiptool-write.XXXXXX", dir);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd >= 0)
		unlink(path);
	return fd;
}

/* Append @len bytes of @buf to the spool at @at. */
static int spool_put(struct wjob *w, int tmp, const char *buf, size_t len,
		     uint64_t at)
{
	int ret = xip_pwrite_all(tmp, buf, len, at);

	if (ret)
		return xip_error(ret, "a temporary file for %s: %s",
				 w->in_name, strerror(-ret));
	return 0;
}

/*
 * A pipe or terminal: gathered whole, then written with one call, which
 * is all or nothing.  Up to STREAM_MEM bytes are gathered in memory and
 * go in with pwrite; more go to an unlinked temporary file that the
 * kernel then copies into the blocks (copy_file_range).
 */
static int copy_stream(struct wjob *w)
{
	size_t cap = PIPE_CHUNK, len = 0;
	char *buf = malloc(cap);
	uint64_t spooled = 0;
	int ret = 0, tmp = -1;
	ssize_t n;

	if (!buf)
		return xip_error(-ENOMEM, "out of memory");
	for (;;) {
		if (len == cap && cap < STREAM_MEM) {
			/* twice the capacity */
			if (xip_grow((void **)&buf, &cap, cap + 1, 1)) {
				ret = xip_error(-ENOMEM, "out of memory");
				break;
			}
		} else if (len == cap) {
			if (tmp < 0)
				tmp = spool_open();
			if (tmp < 0) {
				ret = xip_error(-errno,
						"a temporary file for %s: %s",
						w->in_name, strerror(errno));
				break;
			}
			ret = spool_put(w, tmp, buf, len, spooled);
			if (ret)
				break;
			spooled += len;
			len = 0;
		}
		n = read(w->fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR && !cmd_stop_signal)
			continue;
		if (n < 0 && cmd_stop_signal) {
			ret = xip_error(-EINTR, "interrupted");
			break;
		}
		if (n < 0) {
			ret = xip_error_obj(-errno, XIP_OBJ_FD, w->in_name,
					    "%s", strerror(errno));
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (!ret && tmp >= 0) {
		ret = spool_put(w, tmp, buf, len, spooled);
		if (!ret)
			ret = copy_file(w, tmp, 0, spooled + len);
	} else if (!ret && len) {
		n = xip_file_write(w->img, w->ino, w->off, buf, len);
		ret = n < 0 ? (int)n : 0;
	}
	free(buf);
	if (tmp >= 0)
		close(tmp);
	return ret;
}

static int copy_in(struct wjob *w)
{
	struct stat st;
	off_t pos;

	if (fstat(w->fd, &st) == 0 && S_ISREG(st.st_mode)) {
		pos = lseek(w->fd, 0, SEEK_CUR);
		if (pos < 0)
			pos = 0;
		if (st.st_size <= pos)
			return 0;
		return copy_file(w, w->fd, (uint64_t)pos,
				 (uint64_t)(st.st_size - pos));
	}
	return copy_stream(w);
}

/* Find or create the file; its size before the write in *old. */
static int open_target(struct xip_image *img, const char *path, int create,
		       unsigned int mode, ext2_ino_t *ino, uint64_t *old)
{
	struct ext2_inode_large in;
	int ret;

	ret = xip_lookup(img, path, 0, ino);
	if (ret == -ENOENT && create)
		ret = xip_create(img, path, mode, ino);
	if (!ret)
		ret = xip_read_inode(img, *ino, &in);
	if (ret)
		return ret;
	if (LINUX_S_ISDIR(in.i_mode))
		return xip_error_obj(-EISDIR, XIP_OBJ_FILE, path,
				     "Is a directory");
	if (!LINUX_S_ISREG(in.i_mode))
		return xip_error_obj(-EINVAL, XIP_OBJ_FILE, path,
				     "not a regular file");
	*old = EXT2_I_SIZE(&in);
	return 0;
}

static int parse_mode(const char *text, unsigned int *mode)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(text, &end, 8);
	if (errno || !*text || *end || v > 07777)
		return cmd_usage_error("--mode: invalid mode '%s' (octal, at most 7777)",
				       text);
	*mode = (unsigned int)v;
	return EXIT_OK;
}

static int do_write(const char *spec, const char *path, struct wjob *w,
		    int append, int create, unsigned int mode)
{
	uint64_t old = 0;
	int ret, cret;

	ret = xip_image_open(spec, XIP_IMG_WRITE, &w->img);
	if (ret)
		return msg_lib_error(ret);
	ret = open_target(w->img, path, create, mode, &w->ino, &old);
	if (ret) {
		msg_image_path_error(w->img, spec, path, ret);
	} else {
		if (append)
			w->off = old;
		/* all or nothing: a failed write left the file as it was */
		ret = copy_in(w);
		if (ret && !cmd_stop_signal)
			msg_path_error(path, ret);
	}
	cret = xip_image_close(w->img);
	if (cret && !ret) {
		ret = cret;
		msg_lib_error(ret);
	}
	return ret ? exit_code_for(ret) : EXIT_OK;
}

int cmd_write(int argc, const char **argv)
{
	char *offset_s = NULL, *mode_s = NULL, *input = NULL;
	struct wjob w = { NULL, 0, 0, STDIN_FILENO, "stdin" };
	int append = 0, create = 0, rc = EXIT_OK;
	unsigned int mode = 0644;
	struct cmd_args args;
	const struct poptOption options[] = {
		{ "offset", '\0', POPT_ARG_STRING, &offset_s, 0,
		  "write at byte N of the file (K, M, G suffixes)", "N" },
		{ "append", '\0', POPT_ARG_NONE, &append, 0,
		  "write at the end of the file", NULL },
		{ "create", 'c', POPT_ARG_NONE, &create, 0,
		  "create the file if it does not exist", NULL },
		{ "mode", 'm', POPT_ARG_STRING, &mode_s, 0,
		  "permission bits of a created file (octal, default 0644)",
		  "MODE" },
		{ "input", '\0', POPT_ARG_STRING, &input, 0,
		  "read from FILE instead of stdin", "FILE" },
		POPT_TABLEEND
	};

	cmd_parse(argc, argv, options, write_usage, 2, 3, &args);
	if (args.argc == 3 && input)
		rc = cmd_usage_error("give the input as -i FILE or as FILE, not both");
	else if (args.argc == 3 && !(input = strdup(args.argv[2])))
		rc = EXIT_RUNTIME;
	else if (offset_s && append)
		rc = cmd_usage_error("--offset and --append exclude each other");
	else if (mode_s && !create)
		rc = cmd_usage_error("--mode needs --create");
	if (!rc && offset_s)
		rc = cmd_parse_offset("--offset", offset_s, &w.off);
	if (!rc && mode_s)
		rc = parse_mode(mode_s, &mode);
	if (!rc && input) {
		w.in_name = input;
		w.fd = open(input, O_RDONLY | O_CLOEXEC);
		if (w.fd < 0) {
			msg_error("%s: %s", input, strerror(errno));
			rc = EXIT_RUNTIME;
		}
	}
	if (!rc) {
		cmd_catch_stop_signals();
		rc = cmd_stop_status(do_write(args.argv[0], args.argv[1], &w,
					      append, create, mode));
	}
	if (input && w.fd >= 0)
		close(w.fd);
	free(offset_s);
	free(mode_s);
	free(input);
	cmd_args_free(&args);
	return rc;
}
