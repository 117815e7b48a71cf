// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * genext2fs device tables (mkfs --devtable): lines parsed, then applied
 * to the builder's tree: device nodes, FIFOs, directories and files
 * added, or owners and modes of those already there changed, with
 * numbered series (name0, name1, ...).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "mkfs/mkfs_int.h"
#include "util/xip_error.h"

#define NAME_MAX_EXT2 255

/* ---- device table ----------------------------------------------------- */

static int dt_field(const char **p, char *buf, size_t len)
{
	size_t n = 0;

	while (isspace((unsigned char)**p))
		(*p)++;
	if (!**p)
		return -1;
	while (**p && !isspace((unsigned char)**p)) {
		if (n + 1 >= len)
			return -2;
		buf[n++] = *(*p)++;
	}
	buf[n] = '\0';
	return 0;
}

static int dt_num(const char *s, unsigned long *v, int base)
{
	char *end;

	if (!strcmp(s, "-")) {
		*v = 0;
		return 0;
	}
	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	*v = strtoul(s, &end, base);
	return errno || *end ? -1 : 0;
}

int xip_devtable_parse_line(const char *line, struct xip_devtable_entry *e)
{
	static const char *const names[] = { "mode", "uid", "gid", "major",
					     "minor", "start", "inc", "count" };
	unsigned long v[8];
	char f[10][4096];
	const char *p = line;
	int n = 0, r;

	memset(e, 0, sizeof(*e));
	while (isspace((unsigned char)*p))
		p++;
	if (!*p || *p == '#')
		return 0;
	while (n < 10 && (r = dt_field(&p, f[n], sizeof(f[n]))) == 0)
		n++;
	if (n == 10) {
		while (isspace((unsigned char)*p))
			p++;
		if (*p && *p != '#')
			return xip_error(-EINVAL, "too many fields");
	}
	if (r == -2)
		return xip_error(-ENAMETOOLONG, "field too long");
	if (n < 10)
		return xip_error(-EINVAL,
				 "expected 10 fields (name type mode uid gid major minor start inc count), found %d",
				 n);
	snprintf(e->path, sizeof(e->path), "%s", f[0]);
	if (strlen(f[1]) != 1 || !strchr("fdcbp", f[1][0]))
		return xip_error(-EINVAL, "unknown type '%s' (f, d, c, b or p)",
				 f[1]);
	e->type = f[1][0];
	for (int i = 0; i < 8; i++)
		if (dt_num(f[i + 2], &v[i], i == 0 ? 8 : 10))
			return xip_error(-EINVAL, "invalid %s '%s'", names[i],
					 f[i + 2]);
	if (v[0] > 07777)
		return xip_error(-EINVAL, "invalid mode '%s'", f[2]);
	if (v[1] > UINT32_MAX || v[2] > UINT32_MAX || v[3] > 4095 ||
	    v[4] > 0xfffff)
		return xip_error(-ERANGE, "value out of range");
	e->mode = (unsigned int)v[0];
	e->uid = (uint32_t)v[1];
	e->gid = (uint32_t)v[2];
	e->major = (unsigned int)v[3];
	e->minor = (unsigned int)v[4];
	e->start = v[5];
	e->inc = v[6];
	e->count = v[7];
	if (e->count && (e->start > ULONG_MAX - e->count ||
			 e->minor + (e->count - 1) * e->inc > 0xfffff))
		return xip_error(-ERANGE, "device range out of range");
	return 1;
}


/* ---- applying it to the tree ---------------------------------------- */

static int dt_parent(struct btree *t, char *path, struct bnode **dirp,
		     char **namep)
{
	struct bnode *dir = t->root;
	char *p = path, *slash;

	while (*p == '/')
		p++;
	if (!*p)
		return -EINVAL;
	while ((slash = strchr(p, '/'))) {
		struct bentry *e;

		*slash = '\0';
		if (*p) {
			e = xip_btree_find_entry(dir, p);
			if (!e || !S_ISDIR(e->node->mode))
				return -ENOENT;
			dir = e->node;
		}
		p = slash + 1;
	}
	if (!*p || strlen(p) > NAME_MAX_EXT2)
		return *p ? -ENAMETOOLONG : -EINVAL;
	*dirp = dir;
	*namep = p;
	return 0;
}

static mode_t dt_type(char type)
{
	switch (type) {
	case 'd':
		return S_IFDIR;
	case 'c':
		return S_IFCHR;
	case 'b':
		return S_IFBLK;
	case 'p':
		return S_IFIFO;
	default:
		return S_IFREG;
	}
}

static int dt_apply_one(struct btree *t, const struct xip_devtable_entry *e,
			const char *name, unsigned int minor, struct bnode *dir)
{
	mode_t type = dt_type(e->type);
	struct bentry *ent = xip_btree_find_entry(dir, name);
	struct bnode *n;

	if (ent) {
		n = ent->node;
		if ((n->mode & S_IFMT) != type)
			return -EEXIST;
	} else {
		if (e->type == 'f')
			return -ENOENT;
		n = xip_btree_node_new(t);
		if (!n || xip_btree_add_entry(dir, name, n))
			return -ENOMEM;
		n->parent = dir;
		xip_btree_node_set_now(t, n);
	}
	n->mode = type | e->mode;
	n->uid = e->uid;
	n->gid = e->gid;
	if (type == S_IFCHR || type == S_IFBLK)
		n->rdev = makedev(e->major, minor);
	return 0;
}

static int dt_apply(struct btree *t, const struct xip_devtable_entry *e)
{
	char path[sizeof(e->path) + 24], *name;
	struct bnode *dir;
	int ret;

	if (!e->count || (e->type != 'c' && e->type != 'b')) {
		snprintf(path, sizeof(path), "%s", e->path);
		ret = dt_parent(t, path, &dir, &name);
		return ret ? ret : dt_apply_one(t, e, name, e->minor, dir);
	}
	for (unsigned long i = e->start; i < e->start + e->count; i++) {
		snprintf(path, sizeof(path), "%s%lu", e->path, i);
		ret = dt_parent(t, path, &dir, &name);
		if (!ret)
			ret = dt_apply_one(t, e, name,
					   e->minor + (unsigned int)((i - e->start) * e->inc),
					   dir);
		if (ret)
			return ret;
	}
	return 0;
}

static const char *dt_reason(int err)
{
	switch (err) {
	case -ENOENT:
		return "no such file or parent directory in the tree";
	case -EEXIST:
		return "exists with another file type";
	case -ENAMETOOLONG:
		return "name too long (at most 255 bytes)";
	case -EINVAL:
		return "invalid path";
	default:
		return strerror(-err);
	}
}

int xip_btree_devtable(struct btree *t, const char *file)
{
	struct xip_devtable_entry *e;
	size_t cap = 0;
	char *line = NULL;
	unsigned int lineno = 0;
	int ret = 0;
	FILE *f;

	f = fopen(file, "re");
	if (!f)
		return xip_error(-errno, "%s: %s", file, strerror(errno));
	e = malloc(sizeof(*e));
	if (!e) {
		fclose(f);
		return -ENOMEM;
	}
	while (!ret && getline(&line, &cap, f) > 0) {
		lineno++;
		line[strcspn(line, "\n")] = '\0';
		ret = xip_devtable_parse_line(line, e);
		if (ret < 0) {
			char msg[XIP_ERRMSG_MAX];

			snprintf(msg, sizeof(msg), "%s", xip_errmsg());
			ret = xip_error(ret, "%s:%u: %s", file, lineno, msg);
			break;
		}
		if (ret == 0)
			continue;
		ret = dt_apply(t, e);
		if (ret)
			ret = xip_error(ret == -ENOMEM ? ret : -EINVAL,
					"%s:%u: %s: %s", file, lineno, e->path,
					dt_reason(ret));
	}
	if (!ret && ferror(f))
		ret = xip_error(-EIO, "%s: read error", file);
	free(line);
	free(e);
	fclose(f);
	return ret;
}
