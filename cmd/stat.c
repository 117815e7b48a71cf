// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool stat: an inode of an image: type, mode, owner, size, times, and
 * how its data lies in the image (block runs, holes, contiguous or not).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"

static const char stat_usage[] = "[--json] IMAGE PATH";

static const char *type_name(uint32_t mode)
{
	switch (mode & LINUX_S_IFMT) {
	case LINUX_S_IFREG: return "regular file";
	case LINUX_S_IFDIR: return "directory";
	case LINUX_S_IFLNK: return "symbolic link";
	case LINUX_S_IFCHR: return "character device";
	case LINUX_S_IFBLK: return "block device";
	case LINUX_S_IFIFO: return "fifo";
	case LINUX_S_IFSOCK: return "socket";
	default: return "unknown";
	}
}

static void kv_time(struct kv *kv, const char *label, const char *key,
		    int64_t sec, uint32_t ns)
{
	char buf[64], date[40];
	time_t t = (time_t)sec;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, sizeof(buf), "%s.%09uZ", date, ns);
	kv_str(kv, label, key, buf);
}

/* "FILE-BLOCKS@IMAGE-BLOCKS" per run: "0-11@1000-1011,12-20@1013-1021". */
static char *runs_string(struct xip_image *img, ext2_ino_t ino, int *err)
{
	struct xip_run *runs;
	size_t n, len = 1, off = 0;
	char *s;

	*err = xip_file_runs(img, ino, &runs, &n);
	if (*err)
		return NULL;
	s = malloc(n * 96 + 1);
	if (!s) {
		free(runs);
		*err = -ENOMEM;
		return NULL;
	}
	s[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		len = (size_t)snprintf(s + off, 96, "%s%" PRIu64 "-%" PRIu64
				       "@%llu-%llu", i ? "," : "", runs[i].lblk,
				       runs[i].lblk + runs[i].len - 1,
				       (unsigned long long)runs[i].pblk,
				       (unsigned long long)(runs[i].pblk +
							    runs[i].len - 1));
		off += len;
	}
	free(runs);
	return s;
}

static int stat_fill(struct kv *kv, struct xip_image *img, const char *path,
		     ext2_ino_t ino)
{
	char buf[4096], *runs;
	struct xip_stat st;
	int ret;

	ret = xip_stat_inode(img, ino, &st);
	if (ret)
		return ret;
	kv_str(kv, "Path", "path", path);
	kv_u64(kv, "Inode", "inode", st.ino);
	kv_str(kv, "Type", "type", type_name(st.mode));
	snprintf(buf, sizeof(buf), "%04o", st.mode & 07777);
	kv_str(kv, "Mode", "mode", buf);
	kv_u64(kv, "Links", "links", st.links);
	kv_u64(kv, "UID", "uid", st.uid);
	kv_u64(kv, "GID", "gid", st.gid);
	kv_u64(kv, "Size", "size", st.size);
	kv_u64(kv, "Sectors", "sectors", st.sectors);
	kv_u64(kv, "Block size", "block-size", xip_image_block_size(img));
	kv_time(kv, "Access", "atime", st.atime, st.atime_ns);
	kv_time(kv, "Modify", "mtime", st.mtime, st.mtime_ns);
	kv_time(kv, "Change", "ctime", st.ctime, st.ctime_ns);
	snprintf(buf, sizeof(buf), "0x%08x", st.flags);
	kv_str(kv, "Flags", "flags", buf);
	kv_bool(kv, "Extents", "extents", st.extents);
	if (LINUX_S_ISLNK(st.mode)) {
		ret = xip_readlink(img, ino, buf, sizeof(buf));
		if (ret)
			return ret;
		kv_str(kv, "Target", "target", buf);
	}
	if (LINUX_S_ISCHR(st.mode) || LINUX_S_ISBLK(st.mode)) {
		snprintf(buf, sizeof(buf), "0x%" PRIx64, st.rdev);
		kv_str(kv, "Device", "device", buf);
	}
	kv_u64(kv, "Data blocks", "data-blocks", st.data_blocks);
	kv_u64(kv, "Hole blocks", "hole-blocks", st.hole_blocks);
	kv_u64(kv, "Runs", "runs", st.nruns);
	kv_bool(kv, "Contiguous", "contiguous", st.contiguous);
	runs = runs_string(img, ino, &ret);
	if (ret)
		return ret;
	kv_str(kv, "Block runs", "block-runs", runs);
	free(runs);
	return 0;
}

int cmd_stat(int argc, const char **argv)
{
	struct xip_image *img;
	struct cmd_args args;
	const char *path;
	ext2_ino_t ino;
	struct kv *kv;
	int json = 0, rc = EXIT_OK, ret;
	const struct poptOption options[] = {
		CMD_OPT_JSON(&json, "the result"),
		POPT_TABLEEND
	};

	cmd_parse(argc, argv, options, stat_usage, 2, 2, &args);
	path = args.argv[1];
	ret = xip_image_open(args.argv[0], 0, &img);
	if (ret) {
		rc = msg_lib_error(ret);
		goto out;
	}
	kv = kv_new("stat");
	ret = xip_lookup(img, path, XIP_LOOKUP_NOFOLLOW, &ino);
	if (ret)
		rc = msg_image_path_error(img, args.argv[0], path, ret);
	else if ((ret = stat_fill(kv, img, path, ino)))
		rc = msg_path_error(path, ret);
	else if (kv_print(kv, json))
		rc = EXIT_RUNTIME;
	kv_free(kv);
	xip_image_close(img);
out:
	cmd_args_free(&args);
	return rc;
}
