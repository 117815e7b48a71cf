// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool extract: write the tree (or one subtree) of an image out to a
 * directory, keeping owners, modes, times, xattrs, hard links, devices
 * and holes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

static const char extract_usage[] =
	"[--no-owner] [--no-xattrs] IMAGE DIR [PATH]";

int cmd_extract(int argc, const char **argv)
{
	struct xip_extract_opts o = { .owners = geteuid() == 0,
				      .xattrs = true };
	struct xip_extract_result res;
	struct cmd_args args = { 0 };
	struct xip_image *img = NULL;
	int no_owner = 0, no_xattrs = 0, rc = EXIT_OK, ret;
	char *path = NULL;
	const struct poptOption options[] = {
		{ "no-owner", '\0', POPT_ARG_NONE, &no_owner, 0,
		  "do not set owners (the default when not root)", NULL },
		{ "no-xattrs", '\0', POPT_ARG_NONE, &no_xattrs, 0,
		  "do not copy extended attributes", NULL },
		POPT_TABLEEND
	};

	cmd_parse(argc, argv, options, extract_usage, 2, 3, &args);
	if (no_owner)
		o.owners = false;
	if (no_xattrs)
		o.xattrs = false;
	if (args.argc == 3) {
		const char *p = args.argv[2];

		path = malloc(strlen(p) + 2);
		if (!path) {
			rc = msg_lib_error(-ENOMEM);
			goto out;
		}
		sprintf(path, "%s%s", *p == '/' ? "" : "/", p);
	}
	ret = xip_image_open(args.argv[0], 0, &img);
	if (ret) {
		rc = msg_lib_error(ret);
		goto out;
	}
	/* a signal stops the extraction, which removes what it wrote; once
	 * the tree is being moved into place it completes (exit 0) */
	cmd_catch_stop_signals();
	ret = xip_extract(img, path ? path : "/", args.argv[1], &o, &res);
	if (ret) {
		rc = msg_path_error(args.argv[0], ret);
		if (ret == -EINTR)
			rc = cmd_stop_status(rc);
		goto out;
	}
	msg_verbose("%s: %" PRIu64 " files (%" PRIu64 " bytes), %" PRIu64
		    " hard links, %" PRIu64 " other entries", args.argv[1],
		    res.files, res.bytes, res.links, res.others);
out:
	if (img)
		xip_image_close(img);
	free(path);
	cmd_args_free(&args);
	return rc;
}
