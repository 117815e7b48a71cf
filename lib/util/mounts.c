// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The mount table (xip_util.h), read with libmount: the kernel's
 * /proc/self/mountinfo, its \ooo escapes decoded and its optional fields
 * skipped by util-linux's own parser.  Lines it cannot parse are skipped
 * (libmount's default without a parser error callback).  libmount is
 * loaded at the first walk (lazy.c): it brings libselinux and PCRE2,
 * which every other command would pay for at start-up.  The libc-only
 * front end does not link this file: nothing it runs walks the table.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "util/xip_lazy.h"
#include "util/xip_util.h"
#include <libmount.h>


#define MOUNTINFO "/proc/self/mountinfo"

/* @fs as a struct xip_mount: false when a field is missing. */
static bool mount_of(struct libmnt_fs *fs, struct xip_mount *m)
{
	dev_t dev = mnt_fs_get_devno(fs);

	m->major = major(dev);
	m->minor = minor(dev);
	m->root = mnt_fs_get_root(fs);
	m->point = mnt_fs_get_target(fs);
	m->type = mnt_fs_get_fstype(fs);
	m->source = mnt_fs_get_source(fs);
	return m->root && m->point && m->type && m->source;
}

int xip_mounts_each(const char *table,
		    int (*fn)(const struct xip_mount *m, void *arg),
		    void *arg)
{
	struct libmnt_table *tb;
	struct libmnt_iter *it;
	struct libmnt_fs *fs;
	int ret = xip_lazy_load(XIP_LAZY_MOUNT);

	if (ret)
		return ret;
	tb = mnt_new_table();
	it = mnt_new_iter(MNT_ITER_FORWARD);
	ret = -ENOMEM;
	if (!tb || !it)
		goto out;
	ret = mnt_table_parse_file(tb, table ? table : MOUNTINFO);
	if (ret > 0)
		ret = -EIO;
	while (!ret && mnt_table_next_fs(tb, it, &fs) == 0) {
		struct xip_mount m;

		if (mount_of(fs, &m))
			ret = fn(&m, arg);
	}
out:
	mnt_free_iter(it);
	mnt_unref_table(tb);
	return ret;
}

struct point_query {
	dev_t dev;
	bool whole;
	char *buf;
	size_t len;
};

static int match_point(const struct xip_mount *m, void *arg)
{
	struct point_query *q = arg;

	if (makedev(m->major, m->minor) != q->dev ||
	    (q->whole && strcmp(m->root, "/")))
		return 0;
	snprintf(q->buf, q->len, "%s", m->point);
	return 1;
}

int xip_mount_point(const char *table, dev_t dev, bool whole, char *buf,
		    size_t len)
{
	struct point_query q = { dev, whole, buf, len };

	buf[0] = '\0';
	return xip_mounts_each(table, match_point, &q);
}
