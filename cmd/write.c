// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool write: copy stdin (or a file) into a file of an image, in place:
 * holes and new blocks are allocated through get_xip_page (filled or
 * cleared before they are linked in) and the bytes go straight into the
 * segment: from a regular file by the kernel (copy_file_range), from a
 * pipe or terminal through one reused buffer (pwrite).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "util.h"

static const char write_usage[] =
	"[--offset N | --append] [--create [--mode MODE]] [-i FILE] IMAGE PATH [FILE]";

#define PIPE_CHUNK (1u << 20)
#define FILE_CHUNK (1ull << 30)

struct wjob {
	struct xip_image *img;
	ext2_ino_t ino;
	uint64_t off;		/* where the next byte goes */
	uint64_t written;
	int fd;
	const char *in_name;
};

static int put(struct wjob *w, const void *buf, size_t len)
{
	while (len) {
		ssize_t n = xip_file_write(w->img, w->ino, w->off, buf, len);

		if (n < 0)
			return (int)n;
		w->off += (uint64_t)n;
		w->written += (uint64_t)n;
		buf = (const uint8_t *)buf + n;
		len -= (size_t)n;
	}
	return 0;
}

/* A regular input file: the kernel copies it into the blocks. */
static int copy_file(struct wjob *w, uint64_t start, uint64_t size)
{
	uint64_t done = 0;

	while (done < size) {
		uint64_t n = size - done < FILE_CHUNK ? size - done : FILE_CHUNK;
		ssize_t k = xip_file_write_fd(w->img, w->ino, w->off, w->fd,
					      start + done, (size_t)n,
					      w->in_name);

		if (k < 0)
			return (int)k;
		w->off += (uint64_t)k;
		w->written += (uint64_t)k;
		done += (uint64_t)k;
	}
	return 0;
}

static int copy_stream(struct wjob *w)
{
	char *buf = malloc(PIPE_CHUNK);
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		/* fill the chunk: fewer, larger writes */
		ssize_t n = xip_read_full(w->fd, buf, PIPE_CHUNK);

		if (n == -EINTR) {
			ret = xip_error(-EINTR, "interrupted");
			break;
		}
		if (n < 0) {
			ret = xip_error((int)n, "%s: %s", w->in_name,
					strerror((int)-n));
			break;
		}
		if (n)
			ret = put(w, buf, (size_t)n);
		if (ret || n < PIPE_CHUNK)
			break;
	}
	free(buf);
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
		return copy_file(w, (uint64_t)pos,
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
		return xip_error(-EISDIR, "%s: Is a directory", path);
	if (!LINUX_S_ISREG(in.i_mode))
		return xip_error(-EINVAL, "%s: not a regular file", path);
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
	uint64_t old = UINT64_MAX;	/* no rollback until it is known */
	int ret, cret;

	ret = xip_image_open(spec, XIP_IMG_WRITE, &w->img);
	if (ret)
		return msg_lib_error(ret);
	ret = open_target(w->img, path, create, mode, &w->ino, &old);
	if (!ret) {
		if (append)
			w->off = old;
		ret = copy_in(w);
	}
	if (ret) {
		struct ext2_inode_large in;
		int saved = xip_errcode();
		char msg[XIP_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", xip_errmsg());
		/* nothing half-written past the old end stays visible */
		if (w->ino && !xip_read_inode(w->img, w->ino, &in) &&
		    EXT2_I_SIZE(&in) > old)
			xip_file_truncate(w->img, w->ino, old);
		xip_error(saved ? saved : ret, "%s", msg);
		if (!cmd_stop_signal)
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
	struct wjob w = { NULL, 0, 0, 0, STDIN_FILENO, "stdin" };
	int append = 0, create = 0, rc = EXIT_OK;
	unsigned int mode = 0644;
	struct cmd_args args;
	const struct poptOption options[] = {
		{ "offset", '\0', POPT_ARG_STRING, &offset_s, 0,
		  "write at byte N of the file (K, M, G suffixes)", "N" },
		{ "append", 'a', POPT_ARG_NONE, &append, 0,
		  "write at the end of the file", NULL },
		{ "create", 'c', POPT_ARG_NONE, &create, 0,
		  "create the file if it does not exist", NULL },
		{ "mode", 'm', POPT_ARG_STRING, &mode_s, 0,
		  "permission bits of a created file (octal, default 0644)",
		  "MODE" },
		{ "input", 'i', POPT_ARG_STRING, &input, 0,
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
		rc = cmd_parse_size("--offset", offset_s, &w.off);
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
