// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The text of a registry record (registry.c stores and reads the files):
 * "key=value" lines, one per field, with backslash escapes for '\\' and
 * newlines.  Pure functions of their arguments: no file, no lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "xip.h"
#include "registry/registry_int.h"

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

int xip_registry_format(const struct xip_seg_entry *e, char *buf, size_t len)
{
	struct sbuf sb = { buf, len, 0, false };

	sb_str(&sb, "name", e->name);
	sb_str(&sb, "type", xip_seg_type_name(e->type));
	sb_num(&sb, "size", (int64_t)e->size);
	sb_str(&sb, "path", e->path);
	sb_str(&sb, "image", e->image);
	sb_num(&sb, "compressed", e->compressed);
	sb_num(&sb, "verified", e->verified);
	sb_num(&sb, "populate", e->populate);
	sb_str(&sb, "loop", e->loop);
	sb_str(&sb, "file", e->file);
	sb_num(&sb, "offset", (int64_t)e->offset);
	sb_num(&sb, "sizelimit", (int64_t)e->sizelimit);
	sb_str(&sb, "label", e->label);
	sb_str(&sb, "uuid", e->uuid);
	sb_num(&sb, "created", e->created);
	sb_num(&sb, "owner", (int64_t)e->owner);
	sb_num(&sb, "dev", (int64_t)e->seg_dev);
	sb_num(&sb, "ino", (int64_t)e->seg_ino);
	sb_num(&sb, "fileuid", (int64_t)e->seg_uid);
	if (e->image_mode) {
		char mode[16];

		sb_num(&sb, "imageuid", (int64_t)e->image_uid);
		sb_num(&sb, "imagegid", (int64_t)e->image_gid);
		snprintf(mode, sizeof(mode), "%o",
			 (unsigned int)e->image_mode);
		sb_str(&sb, "imagemode", mode);
	}
	sb_str(&sb, "state", e->attaching ? "attaching" : "attached");
	if (e->attaching)
		sb_num(&sb, "pid", (int64_t)e->pid);
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

	if (!memchr(src, '\\', n)) {	/* most values: nothing escaped */
		if (n >= len)
			return -ENAMETOOLONG;
		memcpy(dst, src, n);
		dst[n] = '\0';
		return 0;
	}

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

/*
 * Digits only, as written by record_format(): a decimal number, or an
 * octal one (@base 8) up to @max.  By hand: musl's strtoull() costs a
 * start of `xiptool exec` some 14,000 instructions for a record's fields.
 */
static int parse_digits(const char *v, unsigned int base, uint64_t max,
			uint64_t *out)
{
	uint64_t x = 0;

	if (!*v)
		return -EINVAL;
	for (; *v; v++) {
		unsigned int d = (unsigned int)(unsigned char)*v - '0';

		if (d >= base || x > (max - d) / base)
			return -EINVAL;
		x = x * base + d;
	}
	*out = x;
	return 0;
}

static int parse_num(const char *v, uint64_t *out)
{
	return parse_digits(v, 10, UINT64_MAX, out);
}

/* A file's mode (type and permission bits) in octal: "100640". */
static int parse_mode(const char *v, mode_t *out)
{
	uint64_t m;

	if (parse_digits(v, 8, 0177777, &m))
		return -EINVAL;
	*out = (mode_t)m;
	return 0;
}

/* The record's numeric fields: key, place and width in the entry. */
#define NUM_FIELD(k, m)                                                 \
	{ k, offsetof(struct xip_seg_entry, m),                         \
	  sizeof(((struct xip_seg_entry *)0)->m) }

static const struct num_field {
	const char *key;
	size_t off, len;
} num_fields[] = {
	NUM_FIELD("size", size),
	NUM_FIELD("offset", offset),
	NUM_FIELD("sizelimit", sizelimit),
	NUM_FIELD("created", created),
	NUM_FIELD("owner", owner),
	NUM_FIELD("compressed", compressed),
	NUM_FIELD("verified", verified),
	NUM_FIELD("populate", populate),
	NUM_FIELD("dev", seg_dev),
	NUM_FIELD("ino", seg_ino),
	NUM_FIELD("fileuid", seg_uid),
	NUM_FIELD("pid", pid),
	NUM_FIELD("imageuid", image_uid),
	NUM_FIELD("imagegid", image_gid),
};

static const struct num_field *num_field(const char *key)
{
	for (size_t i = 0; i < sizeof(num_fields) / sizeof(num_fields[0]); i++)
		if (key[0] == num_fields[i].key[0] &&
		    !strcmp(key, num_fields[i].key))
			return &num_fields[i];
	return NULL;
}

/* Store @v in @f's field: a flag is set by any value but 0. */
static void num_field_set(struct xip_seg_entry *e, const struct num_field *f,
			  uint64_t v)
{
	char *dst = (char *)e + f->off;
	uint32_t v32 = (uint32_t)v;
	bool flag = v != 0;

	_Static_assert(sizeof(bool) == 1, "a flag is one byte");
	if (f->len == sizeof(flag))
		memcpy(dst, &flag, sizeof(flag));
	else if (f->len == sizeof(v32))
		memcpy(dst, &v32, sizeof(v32));
	else if (f->len == sizeof(v))
		memcpy(dst, &v, sizeof(v));
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

	/* the first letter first: a record's start parses 23 keys */
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (key[0] == strs[i].key[0] && !strcmp(key, strs[i].key))
			return unescape(val, vlen, strs[i].dst, strs[i].len);
	const struct num_field *f = num_field(key);

	if (!f && strcmp(key, "type") && strcmp(key, "state") &&
	    strcmp(key, "imagemode"))
		return 0;	/* unknown keys are ignored */
	if (vlen >= sizeof(word))
		return -EINVAL;
	memcpy(word, val, vlen);
	word[vlen] = '\0';
	if (!strcmp(key, "type"))
		return xip_seg_type_parse(word, &e->type) ? -EINVAL : 0;
	if (!strcmp(key, "state")) {
		if (strcmp(word, "attached") && strcmp(word, "attaching"))
			return -EINVAL;
		e->attaching = !strcmp(word, "attaching");
		return 0;
	}
	if (!strcmp(key, "imagemode"))
		return parse_mode(word, &e->image_mode);
	if (parse_num(word, &v))
		return -EINVAL;
	num_field_set(e, f, v);
	return 0;
}

int xip_registry_parse(const char *text, struct xip_seg_entry *e)
{
	char key[32];

	memset(e, 0, sizeof(*e));
	while (*text) {
		const char *nl = strchr(text, '\n');
		size_t n = nl ? (size_t)(nl - text) : strlen(text);
		const char *eq = memchr(text, '=', n);
		int ret;

		if (!eq || (size_t)(eq - text) >= sizeof(key) ||
		    (size_t)(text + n - eq - 1) >= XIP_PATH_MAX * 2)
			return -EINVAL;
		memcpy(key, text, (size_t)(eq - text));
		key[eq - text] = '\0';
		ret = parse_field(e, key, eq + 1, (size_t)(text + n - eq - 1));
		if (ret)
			return ret;
		text += n + (nl ? 1 : 0);
	}
	if (xip_registry_name_check(e->name) || e->type == XIP_SEGTYPE_NONE ||
	    !e->path[0]) {
		xip_error_clear();
		return -EINVAL;
	}
	return 0;
}
