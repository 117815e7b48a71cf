// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool read: copy a file of an image to stdout or a file, straight from
 * the segment (the kernel copies each run of blocks out of the segment's
 * file: copy_file_range, splice or sendfile; holes as zeros).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

static const char read_usage[] =
	"[--offset N] [--length N] [-o FILE] IMAGE PATH";

struct out {
	int fd;
	const char *name;
};

static int read_copy(struct xip_image *img, const char *spec,
		     const char *path, uint64_t off, uint64_t len,
		     struct out *o)
{
	struct ext2_inode_large in;
	ext2_ino_t ino;
	ssize_t n;
	int ret;

	ret = xip_lookup(img, path, 0, &ino);
	if (ret)
		return msg_image_path_error(img, spec, path, ret);
	ret = xip_read_inode(img, ino, &in);
	if (ret)
		return msg_path_error(path, ret);
	if (LINUX_S_ISDIR(in.i_mode)) {
		msg_error("%s: is a directory in %s: list it with 'xiptool ls"
			  " %s %s'", path, spec, spec, path);
		return EXIT_RUNTIME;
	}
	while (len) {
		n = xip_file_read_fd(img, ino, off, len > SSIZE_MAX ? SSIZE_MAX :
				     (size_t)len, o->fd, o->name);
		/* the output's own failures name the output, not @path */
		if (n < 0)
			return msg_path_error(path, (int)n);
		if (n == 0)
			break;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return EXIT_OK;
}

int cmd_read(int argc, const char **argv)
{
	char *offset_s = NULL, *length_s = NULL, *output = NULL;
	uint64_t off = 0, len = UINT64_MAX;
	struct out o = { STDOUT_FILENO, "stdout" };
	struct xip_outfile of;
	struct xip_image *img;
	struct cmd_args args;
	int rc = EXIT_OK, ret;
	const struct poptOption options[] = {
		{ "offset", '\0', POPT_ARG_STRING, &offset_s, 0,
		  "start at byte N of the file (K, M, G suffixes)", "N" },
		{ "length", '\0', POPT_ARG_STRING, &length_s, 0,
		  "copy at most N bytes", "N" },
		{ "output", 'o', POPT_ARG_STRING, &output, 0,
		  "write to FILE instead of stdout", "FILE" },
		POPT_TABLEEND
	};

	cmd_parse(argc, argv, options, read_usage, 2, 2, &args);
	if (offset_s)
		rc = cmd_parse_offset("--offset", offset_s, &off);
	if (!rc && length_s)
		rc = cmd_parse_size("--length", length_s, &len);
	if (rc)
		goto out;
	ret = xip_image_open(args.argv[0], 0, &img);
	if (ret) {
		rc = msg_lib_error(ret);
		goto out;
	}
	if (output) {
		o.name = output;
		ret = xip_outfile_open(&of, output, 0);
		if (ret)
			rc = msg_lib_error(ret);
		o.fd = of.fd;
	}
	if (!rc)
		rc = read_copy(img, args.argv[0], args.argv[1], off, len, &o);
	/* the old file stays as it was unless the whole copy is there */
	if (output && !rc) {
		ret = xip_outfile_commit(&of);
		if (ret)
			rc = msg_lib_error(ret);
	} else if (output) {
		xip_outfile_abort(&of);
	}
	xip_image_close(img);
out:
	free(offset_s);
	free(length_s);
	free(output);
	cmd_args_free(&args);
	return rc;
}
