// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool ls: list a directory of an image (names sorted bytewise; -l
 * with mode, links, owner, size, modification time and link target).
 * Names and link targets are printed escaped (cmd_esc).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"

static const char ls_usage[] = "[-l] [-a] IMAGE [PATH]";

static char type_char(uint32_t mode)
{
	switch (mode & LINUX_S_IFMT) {
	case LINUX_S_IFDIR: return 'd';
	case LINUX_S_IFLNK: return 'l';
	case LINUX_S_IFCHR: return 'c';
	case LINUX_S_IFBLK: return 'b';
	case LINUX_S_IFIFO: return 'p';
	case LINUX_S_IFSOCK: return 's';
	default: return '-';
	}
}

static void mode_string(uint32_t mode, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";

	out[0] = type_char(mode);
	for (int i = 0; i < 9; i++)
		out[i + 1] = (mode & (0400u >> i)) ? rwx[i] : '-';
	if (mode & 04000)
		out[3] = (mode & 0100) ? 's' : 'S';
	if (mode & 02000)
		out[6] = (mode & 0010) ? 's' : 'S';
	if (mode & 01000)
		out[9] = (mode & 0001) ? 't' : 'T';
	out[10] = '\0';
}

static int ls_long(struct xip_image *img, ext2_ino_t ino, const char *name)
{
	struct ext2_inode_large in;
	char mode[11], when[32], target[4096];
	uint64_t size;
	time_t t;
	struct tm tm;
	int ret;

	ret = xip_read_inode(img, ino, &in);
	if (ret)
		return ret;
	mode_string(in.i_mode, mode);
	t = (time_t)(int32_t)in.i_mtime;
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
	size = EXT2_I_SIZE(&in);
	printf("%s %3u %5u %5u ", mode, in.i_links_count, inode_uid(in),
	       inode_gid(in));
	if (LINUX_S_ISCHR(in.i_mode) || LINUX_S_ISBLK(in.i_mode)) {
		unsigned int major, minor;

		/* as ls(1): MAJOR, MINOR where the size would be */
		xip_rdev_split(xip_inode_rdev(&in), &major, &minor);
		printf("%5u, %3u", major, minor);
	} else {
		printf("%10" PRIu64, size);
	}
	printf(" %s %s", when, cmd_esc(name));
	if (LINUX_S_ISLNK(in.i_mode)) {
		ret = xip_readlink(img, ino, target, sizeof(target));
		if (ret) {
			putchar('\n');
			return ret;
		}
		printf(" -> %s", cmd_esc(target));
	}
	putchar('\n');
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct xip_dirent *)a)->name,
		      ((const struct xip_dirent *)b)->name);
}

static int ls_dir(struct xip_image *img, const char *path, ext2_ino_t dir,
		  int lng, int all)
{
	struct xip_dirent *ents;
	size_t n;
	int ret, rc = EXIT_OK;

	ret = xip_dir_list(img, dir, &ents, &n);
	if (ret)
		return msg_path_error(path, ret);
	/* a damaged directory may list nothing, not even '.' */
	if (n)
		qsort(ents, n, sizeof(*ents), by_name);
	for (size_t i = 0; i < n; i++) {
		if (!all && ents[i].name[0] == '.')
			continue;
		if (!lng) {
			printf("%s\n", cmd_esc(ents[i].name));
			continue;
		}
		ret = ls_long(img, ents[i].ino, ents[i].name);
		if (ret) {
			fflush(stdout);
			rc = msg_path_error(ents[i].name, ret);
		}
	}
	free(ents);
	return rc;
}

int cmd_ls(int argc, const char **argv)
{
	struct ext2_inode_large in;
	struct xip_image *img;
	struct cmd_args args;
	const char *path;
	ext2_ino_t ino;
	int lng = 0, all = 0, rc = EXIT_OK, ret;
	const struct poptOption options[] = {
		{ "long", 'l', POPT_ARG_NONE, &lng, 0,
		  "long listing: mode, links, owner, size, time (UTC)", NULL },
		{ "all", 'a', POPT_ARG_NONE, &all, 0,
		  "include names starting with '.'", NULL },
		POPT_TABLEEND
	};

	cmd_parse(argc, argv, options, ls_usage, 1, 2, &args);
	path = args.argc > 1 ? args.argv[1] : "/";
	ret = xip_image_open(args.argv[0], 0, &img);
	if (ret) {
		rc = msg_lib_error(ret);
		goto out;
	}
	ret = xip_lookup(img, path, 0, &ino);
	if (ret)
		rc = msg_image_path_error(img, args.argv[0], path, ret);
	else if ((ret = xip_read_inode(img, ino, &in)))
		rc = msg_path_error(path, ret);
	else if (LINUX_S_ISDIR(in.i_mode))
		rc = ls_dir(img, path, ino, lng, all);
	else if (lng && (ret = ls_long(img, ino, path)))
		rc = msg_path_error(path, ret);
	else if (!lng)
		printf("%s\n", cmd_esc(path));
	xip_image_close(img);
out:
	cmd_args_free(&args);
	return rc;
}
