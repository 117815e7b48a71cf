// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool truncate: set the size of a file of an image.  Shrinking zeroes
 * the tail of the last block and frees the blocks past the end (indirect
 * blocks included); growing leaves a hole.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "cmd.h"

static const char truncate_usage[] = "IMAGE PATH SIZE";

int cmd_truncate(int argc, const char **argv)
{
	struct xip_image *img;
	struct cmd_args args;
	ext2_ino_t ino;
	uint64_t size;
	int rc = EXIT_OK, ret, cret;
	cmd_parse(argc, argv, NULL, truncate_usage, 3, 3, &args);
	rc = cmd_parse_size("SIZE", args.argv[2], &size);
	if (rc)
		goto out;
	/* a truncate is one commit: it finishes, then the signal counts */
	cmd_catch_stop_signals();
	ret = xip_image_open(args.argv[0], XIP_IMG_WRITE, &img);
	if (ret) {
		rc = msg_lib_error(ret);
		goto out;
	}
	ret = xip_lookup(img, args.argv[1], 0, &ino);
	if (ret)
		rc = msg_image_path_error(img, args.argv[0], args.argv[1],
					  ret);
	else if ((ret = xip_file_truncate(img, ino, size)))
		rc = msg_path_error(args.argv[1], ret);
	cret = xip_image_close(img);
	if (cret && !rc)
		rc = msg_lib_error(cret);
	rc = cmd_stop_status(rc);
out:
	cmd_args_free(&args);
	return rc;
}
