// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The registry of attached segments: one small state file per segment in
 * the run directory, named after the segment.  A state file is a list of
 * "key=value" lines (backslash escapes for '\\' and newlines), written to
 * a temporary file and linked or renamed into place, so a reader never
 * sees half a record.  An entry whose segment file is gone is stale and
 * removed when met.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xip.h"

#define STATE_MAX 32768

/* ---- the run directory ----------------------------------------------- */

static int rundir_path(char *buf, size_t len)
{
	const char *env = getenv("XIPTOOL_RUNDIR");
	int n;

	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/run/xiptool");
	else if ((env = getenv("XDG_RUNTIME_DIR")) && *env)
		n = snprintf(buf, len, "%s/xiptool", env);
	else
		return xip_error(-ENOENT,
				 "no run directory for the registry: set XDG_RUNTIME_DIR or XIPTOOL_RUNDIR");
	if (n < 0 || (size_t)n >= len)
		return xip_error(-ENAMETOOLONG, "%s: run directory name too long",
				 buf);
	return 0;
}

int registry_dir(char *buf, size_t len)
{
	struct stat st;
	int ret = rundir_path(buf, len);

	if (ret)
		return ret;
	if (stat(buf, &st) < 0) {
		if (errno != ENOENT)
			return xip_error(-errno, "%s: %s", buf, strerror(errno));
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return xip_error(-errno, "%s: cannot create run"
					 " directory: %s", buf,
					 strerror(errno));
		if (stat(buf, &st) < 0)
			return xip_error(-errno, "%s: %s", buf,
					 strerror(errno));
	}
	if (!S_ISDIR(st.st_mode))
		return xip_error(-ENOTDIR, "%s: run directory is not a directory",
				 buf);
	if (st.st_uid != geteuid() || (st.st_mode & 0022))
		return xip_error(-EPERM,
				 "%s: run directory must belong to uid %u and not be writable by others",
				 buf, (unsigned int)geteuid());
	return 0;
}

/* ---- names ------------------------------------------------------------ */

static bool name_char(int c)
{
	return isascii(c) && (isalnum(c) || c == '.' || c == '_' || c == '-');
}

int registry_name_check(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0)
		return xip_error(-EINVAL, "empty segment name");
	if (n > XIP_SEG_NAME_MAX)
		return xip_error(-EINVAL,
				 "%.70s...: segment name longer than %d characters",
				 name, XIP_SEG_NAME_MAX);
	if (name[0] == '.')
		return xip_error(-EINVAL,
				 "%s: segment name must not start with '.'",
				 name);
	for (size_t i = 0; i < n; i++)
		if (!name_char((unsigned char)name[i]))
			return xip_error(-EINVAL,
					 "%s: invalid segment name (use 1 to %d of A-Z a-z 0-9 . _ -)",
					 name, XIP_SEG_NAME_MAX);
	return 0;
}

static void strip_suffix(char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	if (n > m && !strcasecmp(s + n - m, suffix))
		s[n - m] = '\0';
}

int registry_default_name(const char *image, char *buf, size_t len)
{
	const char *base = strrchr(image, '/');
	char tmp[XIP_PATH_MAX];
	size_t o = 0;

	if (image[0] == '@')
		return xip_error(-EINVAL,
				 "%s: a copy of a segment needs a name (--name)",
				 image);
	base = base ? base + 1 : image;
	snprintf(tmp, sizeof(tmp), "%s", base);
	strip_suffix(tmp, ".gz");
	strip_suffix(tmp, ".img");
	strip_suffix(tmp, ".ext2");
	for (const char *p = tmp; *p && o < XIP_SEG_NAME_MAX && o + 1 < len;
	     p++) {
		if (o == 0 && *p == '.')
			continue;
		buf[o++] = name_char((unsigned char)*p) ? *p : '_';
	}
	if (len)
		buf[o < len ? o : len - 1] = '\0';
	if (o == 0)
		return xip_error(-EINVAL,
				 "%s: cannot derive a segment name from the image name: give one with --name",
				 image);
	return registry_name_check(buf);
}

/* ---- state file text ------------------------------------------------- */

struct sbuf {
	char *p;
	size_t len, used;
	bool overflow;
};

static void sb_putc(struct sbuf *sb, char c)
{
	if (sb->used + 1 < sb->len)
		sb->p[sb->used++] = c;
	else
		sb->overflow = true;
}

static void sb_str(struct sbuf *sb, const char *key, const char *val)
{
	for (const char *k = key; *k; k++)
		sb_putc(sb, *k);
	sb_putc(sb, '=');
	for (const char *v = val; *v; v++) {
		if (*v == '\\' || *v == '\n') {
			sb_putc(sb, '\\');
			sb_putc(sb, *v == '\n' ? 'n' : '\\');
		} else {
			sb_putc(sb, *v);
		}
	}
	sb_putc(sb, '\n');
}

static void sb_num(struct sbuf *sb, const char *key, int64_t val)
{
	char num[32];

	snprintf(num, sizeof(num), "%" PRId64, val);
	sb_str(sb, key, num);
}

int registry_format(const struct xip_seg_entry *e, char *buf, size_t len)
{
	struct sbuf sb = { buf, len, 0, false };

	sb_str(&sb, "name", e->name);
	sb_str(&sb, "type", segment_type_name(e->type));
	sb_num(&sb, "size", (int64_t)e->size);
	sb_str(&sb, "path", e->path);
	sb_str(&sb, "image", e->image);
	sb_num(&sb, "compressed", e->compressed);
	sb_str(&sb, "loop", e->loop);
	sb_str(&sb, "file", e->file);
	sb_num(&sb, "offset", (int64_t)e->offset);
	sb_num(&sb, "sizelimit", (int64_t)e->sizelimit);
	sb_str(&sb, "label", e->label);
	sb_str(&sb, "uuid", e->uuid);
	sb_num(&sb, "created", e->created);
	sb_num(&sb, "owner", (int64_t)e->owner);
	if (len)
		buf[sb.used] = '\0';
	if (sb.overflow)
		return xip_error(-ENAMETOOLONG, "%s: state record too long",
				 e->name);
	return (int)sb.used;
}

/* Unescape @src (up to @n bytes) into @dst of @len bytes. */
static int unescape(const char *src, size_t n, char *dst, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = src[i];

		if (c == '\\' && i + 1 < n) {
			c = src[++i] == 'n' ? '\n' : src[i];
		}
		if (o + 1 >= len)
			return -ENAMETOOLONG;
		dst[o++] = c;
	}
	dst[o] = '\0';
	return 0;
}

static int parse_num(const char *v, uint64_t *out)
{
	char *end;

	if (!isdigit((unsigned char)*v))
		return -EINVAL;
	errno = 0;
	*out = strtoull(v, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

/* @val: @vlen bytes, not terminated */
static int parse_field(struct xip_seg_entry *e, const char *key,
		       const char *val, size_t vlen)
{
	struct { const char *key; char *dst; size_t len; } strs[] = {
		{ "name", e->name, sizeof(e->name) },
		{ "path", e->path, sizeof(e->path) },
		{ "image", e->image, sizeof(e->image) },
		{ "loop", e->loop, sizeof(e->loop) },
		{ "file", e->file, sizeof(e->file) },
		{ "label", e->label, sizeof(e->label) },
		{ "uuid", e->uuid, sizeof(e->uuid) },
	};
	char word[32];			/* a type or a number */
	uint64_t v;

	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (!strcmp(key, strs[i].key))
			return unescape(val, vlen, strs[i].dst, strs[i].len);
	if (strcmp(key, "type") && strcmp(key, "size") &&
	    strcmp(key, "offset") && strcmp(key, "sizelimit") &&
	    strcmp(key, "created") && strcmp(key, "owner") &&
	    strcmp(key, "compressed"))
		return 0;	/* unknown keys are ignored */
	if (vlen >= sizeof(word))
		return -EINVAL;
	memcpy(word, val, vlen);
	word[vlen] = '\0';
	if (!strcmp(key, "type"))
		return segment_type_parse(word, &e->type) ? -EINVAL : 0;
	if (parse_num(word, &v))
		return -EINVAL;
	if (!strcmp(key, "size"))
		e->size = v;
	else if (!strcmp(key, "offset"))
		e->offset = v;
	else if (!strcmp(key, "sizelimit"))
		e->sizelimit = v;
	else if (!strcmp(key, "created"))
		e->created = (int64_t)v;
	else if (!strcmp(key, "owner"))
		e->owner = (uid_t)v;
	else if (!strcmp(key, "compressed"))
		e->compressed = v != 0;
	return 0;
}

int registry_parse(const char *text, struct xip_seg_entry *e)
{
	char key[32];

	memset(e, 0, sizeof(*e));
	while (*text) {
		const char *nl = strchr(text, '\n');
		const char *eq = strchr(text, '=');
		size_t n = nl ? (size_t)(nl - text) : strlen(text);
		int ret;

		if (!eq || eq > text + n || (size_t)(eq - text) >= sizeof(key) ||
		    (size_t)(text + n - eq - 1) >= XIP_PATH_MAX * 2)
			return -EINVAL;
		memcpy(key, text, (size_t)(eq - text));
		key[eq - text] = '\0';
		ret = parse_field(e, key, eq + 1, (size_t)(text + n - eq - 1));
		if (ret)
			return ret;
		text += n + (nl ? 1 : 0);
	}
	if (registry_name_check(e->name) || e->type == XIP_SEGTYPE_NONE ||
	    !e->path[0]) {
		xip_error_clear();
		return -EINVAL;
	}
	return 0;
}

/* ---- state files ------------------------------------------------------ */

static int state_path(const char *name, char *buf, size_t len)
{
	int ret = registry_name_check(name);
	size_t n;

	if (!ret)
		ret = registry_dir(buf, len);
	if (ret)
		return ret;
	n = strlen(buf);
	if ((size_t)snprintf(buf + n, len - n, "/%s", name) >= len - n)
		return xip_error(-ENAMETOOLONG, "%.*s/%s: name too long",
				 (int)n, buf, name);
	return 0;
}

/* Write the record to a temporary file next to @final; its name in @tmp. */
static int state_write_tmp(const struct xip_seg_entry *e, const char *final,
			   char *tmp, size_t len)
{
	char *text = malloc(STATE_MAX);
	int fd, n, ret = 0;

	if (!text)
		return xip_error(-ENOMEM, "out of memory");
	n = registry_format(e, text, STATE_MAX);
	if (n < 0) {
		free(text);
		return n;
	}
	snprintf(tmp, len, "%.*s.%s.XXXXXX",
		 (int)(strrchr(final, '/') - final + 1), final, e->name);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		ret = xip_error(-errno, "%s: %s", tmp, strerror(errno));
		free(text);
		return ret;
	}
	if (write(fd, text, (size_t)n) != n || fsync(fd) < 0)
		ret = xip_error(-EIO, "%s: cannot write state file: %s", tmp,
				strerror(errno ? errno : EIO));
	if (close(fd) < 0 && !ret)
		ret = xip_error(-errno, "%s: %s", tmp, strerror(errno));
	free(text);
	if (ret)
		unlink(tmp);
	return ret;
}

int registry_add(const struct xip_seg_entry *e)
{
	char final[XIP_PATH_MAX], tmp[XIP_PATH_MAX + 32];
	int ret = state_path(e->name, final, sizeof(final));

	if (!ret)
		ret = state_write_tmp(e, final, tmp, sizeof(tmp));
	if (ret)
		return ret;
	/* link() refuses an existing name: two attaches cannot both win */
	if (link(tmp, final) < 0)
		ret = errno == EEXIST ?
		      xip_error(-EEXIST, "%s: a segment of that name is already attached",
				e->name) :
		      xip_error(-errno, "%s: %s", final, strerror(errno));
	unlink(tmp);
	return ret;
}

int registry_update(const struct xip_seg_entry *e)
{
	char final[XIP_PATH_MAX], tmp[XIP_PATH_MAX + 32];
	int ret = state_path(e->name, final, sizeof(final));

	if (!ret)
		ret = state_write_tmp(e, final, tmp, sizeof(tmp));
	if (ret)
		return ret;
	if (rename(tmp, final) < 0) {
		ret = xip_error(-errno, "%s: %s", final, strerror(errno));
		unlink(tmp);
	}
	return ret;
}

int registry_remove(const char *name)
{
	char final[XIP_PATH_MAX];
	int ret = state_path(name, final, sizeof(final));

	if (ret)
		return ret;
	if (unlink(final) < 0)
		return xip_error(-errno, "%s: %s", final, strerror(errno));
	return 0;
}

static int state_read(const char *path, struct xip_seg_entry *e)
{
	struct stat st;
	size_t cap;
	char *text;
	ssize_t n;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	/* a buffer the size of the record (it is read on every exec) */
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	cap = st.st_size > 0 && st.st_size < STATE_MAX ?
		      (size_t)st.st_size + 1 : STATE_MAX;
	text = malloc(cap);
	if (!text) {
		close(fd);
		return xip_error(-ENOMEM, "out of memory");
	}
	n = read(fd, text, cap - 1);
	close(fd);
	if (n < 0) {
		ret = -errno;
		free(text);
		return ret;
	}
	text[n] = '\0';
	ret = registry_parse(text, e);
	free(text);
	return ret;
}

/* The segment file still there?  A loop device still bound to it? */
static bool entry_stale(struct xip_seg_entry *e, bool *changed)
{
	char backing[XIP_PATH_MAX];
	struct stat st;

	if (lstat(e->path, &st) < 0 && errno == ENOENT)
		return true;
	if (e->loop[0] &&
	    (loop_backing_file(e->loop, backing, sizeof(backing)) ||
	     strcmp(backing, e->path))) {
		/* someone released the loop device behind our back */
		e->loop[0] = '\0';
		*changed = true;
	}
	xip_error_clear();
	return false;
}

/* Read, check and clean one record; -ENOENT when missing or stale. */
static int entry_load(const char *name, struct xip_seg_entry *e)
{
	char path[XIP_PATH_MAX];
	bool changed = false;
	int ret = state_path(name, path, sizeof(path));

	if (ret)
		return ret;
	ret = state_read(path, e);
	if (ret == -ENOENT)
		return ret;
	if (ret == -EINVAL)
		return xip_error(-EUCLEAN, "%s: damaged state file", path);
	if (ret)
		return xip_error(ret, "%s: %s", path, strerror(-ret));
	if (strcmp(e->name, name))
		return xip_error(-EUCLEAN, "%s: state file names '%s'", path,
				 e->name);
	if (entry_stale(e, &changed)) {
		unlink(path);
		return -ENOENT;
	}
	if (changed)
		registry_update(e);
	xip_error_clear();
	return 0;
}

int registry_get(const char *name, struct xip_seg_entry *e)
{
	int ret = entry_load(name, e);

	if (ret == -ENOENT)
		return xip_error(-ENOENT, "@%s: no attached segment of that name",
				 name);
	return ret;
}

int registry_resolve(const char *name, char **pathp, enum xip_seg_type *typep)
{
	struct xip_seg_entry *e = malloc(sizeof(*e));
	int ret;

	*pathp = NULL;
	*typep = XIP_SEGTYPE_NONE;
	if (!e)
		return xip_error(-ENOMEM, "out of memory");
	ret = registry_name_check(name);
	if (ret)
		ret = xip_error(-ENOENT, "@%s: %s", name, xip_errmsg());
	else
		ret = registry_get(name, e);
	if (!ret) {
		*pathp = strdup(e->path);
		*typep = e->type;
		if (!*pathp)
			ret = xip_error(-ENOMEM, "out of memory");
	}
	free(e);
	return ret;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct xip_seg_entry *)a)->name,
		      ((const struct xip_seg_entry *)b)->name);
}

int registry_list(struct xip_seg_entry **entries, size_t *n)
{
	struct xip_seg_entry *v = NULL;
	char dir[XIP_PATH_MAX];
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int ret = registry_dir(dir, sizeof(dir));

	*entries = NULL;
	*n = 0;
	if (ret)
		return ret;
	d = opendir(dir);
	if (!d)
		return xip_error(-errno, "%s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || registry_name_check(de->d_name))
			continue;	/* temporary files, foreign names */
		if (cnt == cap) {
			struct xip_seg_entry *p;

			cap = cap ? cap * 2 : 8;
			p = realloc(v, cap * sizeof(*v));
			if (!p) {
				ret = xip_error(-ENOMEM, "out of memory");
				break;
			}
			v = p;
		}
		ret = entry_load(de->d_name, &v[cnt]);
		if (ret == -ENOENT) {
			ret = 0;
			continue;
		}
		if (ret)
			break;
		cnt++;
	}
	closedir(d);
	if (ret) {
		free(v);
		return ret;
	}
	xip_error_clear();
	if (cnt)
		qsort(v, cnt, sizeof(*v), entry_cmp);
	*entries = v;
	*n = cnt;
	return 0;
}

int registry_find(const char *what, struct xip_seg_entry *e)
{
	struct xip_seg_entry *all;
	char real[XIP_PATH_MAX];
	size_t n;
	int ret;

	if (what[0] == '@')
		what++;
	if (strncmp(what, "/dev/", 5))
		return registry_get(what, e);
	if (!realpath(what, real))
		snprintf(real, sizeof(real), "%s", what);
	ret = registry_list(&all, &n);
	if (ret)
		return ret;
	ret = xip_error(-ENOENT, "%s: no attached segment uses this device",
			what);
	for (size_t i = 0; i < n; i++) {
		if (all[i].loop[0] && !strcmp(all[i].loop, real)) {
			*e = all[i];
			xip_error_clear();
			ret = 0;
			break;
		}
	}
	free(all);
	return ret;
}
