// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * attach --populate auto: whether exec maps a program's read-only pages at
 * once or leaves them to faults is a property of the machine (what a
 * page-table entry costs against a fault), not of an image.  It is
 * measured once per boot (xip_seg_populate_pays on a scratch memfd of
 * 2 MiB past a page, tmpfs like /dev/shm) and kept in the run directory
 * as ".populate" (a dot: no segment name has one): the boot's id
 * (/proc/sys/kernel/random/boot_id) and "yes" or "no", one line.  Every
 * attach of that boot reads the same verdict, so one image gets the same
 * record on every attach.
 *
 * The file is read only when it is a regular file of the caller's, one
 * link, not writable by group or others, of a few bytes in exactly that
 * form, opened without following a symlink; anything else is measured
 * again and replaced (a new file renamed over the name: never written in
 * place, never half written).  XIPTOOL_POPULATE_AUTO=yes|no decides
 * without measuring or reading (tests force each outcome with it).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attach/attach_int.h"
#include "util/xip_debug.h"
#include "util/xip_error.h"
#include "util/xip_util.h"
#include "segment/xip_segment.h"
#include "registry/xip_registry.h"

#define CACHE_NAME	".populate"
#define BOOT_ID_PATH	"/proc/sys/kernel/random/boot_id"
#define BOOT_ID_LEN	36	/* 8-4-4-4-12 hex digits */
#define SCRATCH_SPAN	(2 * 1024 * 1024)
#define CACHE_MAX	64	/* a valid file is 40 or 41 bytes */

/* "8-4-4-4-12" lower-case hex digits and dashes */
static bool boot_id_ok(const char *s)
{
	for (int i = 0; i < BOOT_ID_LEN; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' :
			   !((s[i] >= '0' && s[i] <= '9') ||
			     (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return true;
}

/* This boot's id into @id (BOOT_ID_LEN + 1 bytes): 0, or -errno. */
static int boot_id(char *id)
{
	char buf[BOOT_ID_LEN + 2];
	int fd = open(BOOT_ID_PATH, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = xip_read_full(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return (int)n;
	if (n != BOOT_ID_LEN + 1 || buf[BOOT_ID_LEN] != '\n' ||
	    !boot_id_ok(buf))
		return -EINVAL;
	memcpy(id, buf, BOOT_ID_LEN);
	id[BOOT_ID_LEN] = '\0';
	return 0;
}

/*
 * The verdict kept in the run directory @dfd for boot @id: 1 (*@pays
 * set), or 0 when there is none to trust.
 */
static bool cache_file_ok(const struct stat *st)
{
	return S_ISREG(st->st_mode) &&
	       st->st_uid == geteuid() && st->st_nlink == 1 &&
	       !(st->st_mode & (S_IWGRP | S_IWOTH)) && st->st_size < CACHE_MAX;
}

static int cache_read(int dfd, const char *id, bool *pays)
{
	char buf[CACHE_MAX];
	struct stat ls, st;
	ssize_t n;
	int fd;

	/* a device or a FIFO there is never opened */
	if (fstatat(dfd, CACHE_NAME, &ls, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !cache_file_ok(&ls))
		return 0;
	fd = openat(dfd, CACHE_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !cache_file_ok(&st) ||
	    st.st_dev != ls.st_dev || st.st_ino != ls.st_ino) {
		close(fd);
		return 0;
	}
	n = xip_read_full(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= BOOT_ID_LEN)
		return 0;
	buf[n] = '\0';
	if (memcmp(buf, id, BOOT_ID_LEN) || buf[BOOT_ID_LEN] != ' ')
		return 0;
	if (!strcmp(buf + BOOT_ID_LEN + 1, "yes\n"))
		*pays = true;
	else if (!strcmp(buf + BOOT_ID_LEN + 1, "no\n"))
		*pays = false;
	else
		return 0;
	return 1;
}

/*
 * Keep @pays for boot @id in the run directory @dfd: an unnamed file of
 * the caller's, 0600, written whole, then named and renamed over the name
 * (util's xip_temp_name, xip_link_unnamed): a kill while it is written
 * leaves nothing.  Best effort: a verdict not kept is measured again by
 * the next attach.
 */
static void cache_write(int dfd, const char *id, bool pays)
{
	char tmp[64], line[CACHE_MAX];
	int fd, len;
	bool ok;

	fd = openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	len = snprintf(line, sizeof(line), "%s %s\n", id, pays ? "yes" : "no");
	ok = fchmod(fd, 0600) == 0 && xip_write_all(fd, line, (size_t)len) == 0;
	if (ok && !xip_temp_name(CACHE_NAME, tmp, sizeof(tmp)) &&
	    !xip_link_unnamed(fd, dfd, tmp) &&
	    renameat(dfd, tmp, dfd, CACHE_NAME) < 0)
		unlinkat(dfd, tmp, 0);
	close(fd);
}

/* Measure it here: a scratch memfd of bytes, as tmpfs holds a segment. */
static int measure(bool *pays)
{
	long page = xip_host_page_size();
	uint64_t size = (uint64_t)page + SCRATCH_SPAN;
	int fd = memfd_create("xiptool-populate", MFD_CLOEXEC);
	uint8_t *buf;
	int ret;

	if (fd < 0)
		return -errno;
	buf = malloc((size_t)size);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	/* pages of bytes, not holes: holes map the shared zero page */
	memset(buf, 0x5a, (size_t)size);
	ret = xip_write_all(fd, buf, (size_t)size);
	free(buf);
	if (!ret)
		ret = xip_seg_populate_pays(fd, size, pays);
	close(fd);
	return ret;
}

int xip_attach_populate_auto(bool *pays)
{
	const char *env = secure_getenv("XIPTOOL_POPULATE_AUTO");
	char dir[XIP_PATH_MAX], id[BOOT_ID_LEN + 1];
	struct stat st;
	int dfd, ret;

	*pays = false;
	if (env && *env) {
		if (strcmp(env, "yes") && strcmp(env, "no"))
			return xip_error(-EINVAL,
					 "XIPTOOL_POPULATE_AUTO: '%s': expected yes or no",
					 env);
		*pays = !strcmp(env, "yes");
		return 0;
	}
	dfd = xip_registry_rundir_open(dir, sizeof(dir));
	if (dfd < 0)
		return dfd;
	/* a run directory of another user's (root in theirs): not kept */
	if (fstat(dfd, &st) < 0 || st.st_uid != geteuid() ||
	    boot_id(id)) {
		close(dfd);
		dfd = -1;
	}
	if (dfd >= 0 && cache_read(dfd, id, pays) == 1) {
		XIP_DBG(ATTACH, "populate: %s (measured this boot)",
			*pays ? "yes" : "no");
		close(dfd);
		return 0;
	}
	ret = measure(pays);
	if (ret) {
		if (dfd >= 0)
			close(dfd);
		return xip_error(ret, "measuring page faults: %s",
				 strerror(-ret));
	}
	XIP_DBG(ATTACH, "populate: %s (measured now)", *pays ? "yes" : "no");
	if (dfd >= 0) {
		cache_write(dfd, id, *pays);
		close(dfd);
	}
	return 0;
}
