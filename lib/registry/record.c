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

#include "registry/xip_registry.h"
#include "registry/registry_int.h"
#include "util/xip_error.h"
#include "util/xip_util.h"
#include "segment/xip_segment.h"

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

/* An unsigned field: inode numbers and sizes may have the top bit set. */
static void sb_unum(struct sbuf *sb, const char *key, uint64_t val)
{
	char num[32];

	snprintf(num, sizeof(num), "%" PRIu64, val);
	sb_str(sb, key, num);
}

int xip_registry_format(const struct xip_seg_entry *e, char *buf, size_t len)
{
	struct sbuf sb = { buf, len, 0, false };

	/* first what opening the segment reads (a brief read stops there) */
	sb_str(&sb, "name", e->name);
	sb_str(&sb, "type", xip_seg_type_name(e->type));
	sb_unum(&sb, "size", e->size);
	sb_num(&sb, "populate", e->populate);
	if (e->lazy)
		sb_num(&sb, "lazy", 1);
	sb_str(&sb, "state", e->attaching ? "attaching" : "attached");
	if (e->attaching)
		sb_num(&sb, "pid", (int64_t)e->pid);
	sb_unum(&sb, "owner", e->owner);
	sb_unum(&sb, "dev", e->seg_dev);
	sb_unum(&sb, "ino", e->seg_ino);
	sb_unum(&sb, "fileuid", e->seg_uid);
	sb_str(&sb, "loop", e->loop);
	sb_str(&sb, "path", e->path);
	sb_str(&sb, "image", e->image);
	sb_num(&sb, "compressed", e->compressed);
	sb_num(&sb, "verified", e->verified);
	if (e->seal_ctime)
		sb_unum(&sb, "sealctime", e->seal_ctime);
	if (e->signer[0])
		sb_str(&sb, "signer", e->signer);
	sb_str(&sb, "file", e->file);
	sb_unum(&sb, "offset", e->offset);
	sb_unum(&sb, "sizelimit", e->sizelimit);
	sb_str(&sb, "label", e->label);
	sb_str(&sb, "uuid", e->uuid);
	sb_num(&sb, "created", e->created);
	if (e->image_mode) {
		char mode[16];

		sb_unum(&sb, "imageuid", e->image_uid);
		sb_unum(&sb, "imagegid", e->image_gid);
		snprintf(mode, sizeof(mode), "%o",
			 (unsigned int)e->image_mode);
		sb_str(&sb, "imagemode", mode);
	}
	if (len)
		buf[sb.used] = '\0';
	if (sb.overflow)
		return xip_error(-ENAMETOOLONG, "%s: state record too long",
				 e->name);
	return (int)sb.used;
}

/*
 * Unescape @src (up to @n bytes, with a backslash somewhere when
 * @escaped) into @dst of @len bytes.
 */
static int unescape(const char *src, size_t n, bool escaped, char *dst,
		    size_t len)
{
	size_t o = 0;

	if (!escaped) {		/* most values: nothing escaped */
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
 * octal one (@base 8) up to @max, of @n bytes at @v.  By hand: musl's
 * strtoull() costs a start of `xiptool exec` some 14,000 instructions
 * for a record's fields.
 */
static int parse_digits(const char *v, size_t n, unsigned int base,
			uint64_t max, uint64_t *out)
{
	/* one division, not one a digit (some 40 cycles each) */
	uint64_t x = 0, cut = max / base, rest = max % base;

	if (!n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		unsigned int d = (unsigned int)(unsigned char)v[i] - '0';

		if (d >= base || x > cut || (x == cut && d > rest))
			return -EINVAL;
		x = x * base + d;
	}
	*out = x;
	return 0;
}

/* What a record's key names in the entry, and how its value is read. */
#define NFIELDS_MAX 32
enum field_kind { F_STR, F_NUM, F_TYPE, F_STATE, F_MODE };

#define FIELD(k, kind, m)                                               \
	{ k, sizeof(k) - 1, kind, offsetof(struct xip_seg_entry, m),    \
	  sizeof(((struct xip_seg_entry *)0)->m), 0 }
/*
 * A number: at most what its field holds (a flag takes any), so that
 * nothing is cut short and what xip_registry_format() writes back is
 * the same number.
 */
#define ENTRY_M(m) (((struct xip_seg_entry *)0)->m)
#define SIGNED_M(m) ((__typeof__(ENTRY_M(m)))-1 < 1)
#define NUM_MAX(m)                                                      \
	(sizeof(ENTRY_M(m)) == 1 ? UINT64_MAX :                         \
	 sizeof(ENTRY_M(m)) == 4 ? (SIGNED_M(m) ? INT32_MAX : UINT32_MAX) : \
	 (SIGNED_M(m) ? INT64_MAX : UINT64_MAX))
#define NUMBER(k, m)                                                    \
	{ k, sizeof(k) - 1, F_NUM, offsetof(struct xip_seg_entry, m),   \
	  sizeof(ENTRY_M(m)), NUM_MAX(m) }

static const struct field {
	const char *key;
	size_t keylen;
	enum field_kind kind;
	size_t off, len;
	uint64_t max;		/* of a number */
} fields[] = {
	/* in the order records are written (xip_registry_format) */
	FIELD("name", F_STR, name),
	FIELD("type", F_TYPE, type),
	NUMBER("size", size),
	NUMBER("populate", populate),
	NUMBER("lazy", lazy),
	FIELD("state", F_STATE, attaching),
	NUMBER("pid", pid),
	NUMBER("owner", owner),
	NUMBER("dev", seg_dev),
	NUMBER("ino", seg_ino),
	NUMBER("fileuid", seg_uid),
	FIELD("loop", F_STR, loop),
	FIELD("path", F_STR, path),
	FIELD("image", F_STR, image),
	NUMBER("compressed", compressed),
	NUMBER("verified", verified),
	NUMBER("sealctime", seal_ctime),
	FIELD("signer", F_STR, signer),
	FIELD("file", F_STR, file),
	NUMBER("offset", offset),
	NUMBER("sizelimit", sizelimit),
	FIELD("label", F_STR, label),
	FIELD("uuid", F_STR, uuid),
	NUMBER("created", created),
	NUMBER("imageuid", image_uid),
	NUMBER("imagegid", image_gid),
	FIELD("imagemode", F_MODE, image_mode),
};

_Static_assert(NFIELDS_MAX >= sizeof(fields) / sizeof(fields[0]),
	       "a bit a field");

/* Store @v in @f's field: a flag is set by any value but 0. */
static void num_field_set(struct xip_seg_entry *e, const struct field *f,
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

static bool value_is(const char *val, size_t vlen, const char *word)
{
	return strlen(word) == vlen && !memcmp(val, word, vlen);
}

#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

/*
 * The field of key @key (@klen bytes), looked for from *@next on (a
 * record lists them in the table's order), which is left after it; NULL
 * for a key of no field.
 */
static const struct field *field_find(const char *key, size_t klen,
				      size_t *next)
{
	for (size_t k = 0; k < NFIELDS; k++) {
		size_t i = (*next + k) % NFIELDS;

		if (fields[i].keylen == klen &&
		    !memcmp(fields[i].key, key, klen)) {
			*next = i + 1;
			return &fields[i];
		}
	}
	return NULL;
}

/*
 * The line "@key=@val" (@klen and @vlen bytes, not terminated; a
 * backslash in the value when @escaped) of field @f.
 */
static int parse_field(struct xip_seg_entry *e, const struct field *f,
		       const char *val, size_t vlen, bool escaped)
{
	char word[32];			/* a type */
	uint64_t v;

	switch (f->kind) {
	case F_STR:
		return unescape(val, vlen, escaped, (char *)e + f->off, f->len);
	case F_TYPE:
		if (vlen >= sizeof(word))
			return -EINVAL;
		memcpy(word, val, vlen);
		word[vlen] = '\0';
		return xip_seg_type_parse(word, &e->type) ? -EINVAL : 0;
	case F_STATE:
		if (!value_is(val, vlen, "attached") &&
		    !value_is(val, vlen, "attaching"))
			return -EINVAL;
		e->attaching = value_is(val, vlen, "attaching");
		return 0;
	case F_MODE:
		if (parse_digits(val, vlen, 8, 0177777, &v))
			return -EINVAL;
		e->image_mode = (mode_t)v;
		return 0;
	default:
		if (parse_digits(val, vlen, 10, f->max, &v))
			return -EINVAL;
		num_field_set(e, f, v);
		return 0;
	}
}

/* The record @text into @e (zeroed); @brief: only the entry's first fields. */
/* Does field @f belong to a brief read (the entry's first, through path)? */
static bool brief_field(const struct field *f)
{
	return f->off <= offsetof(struct xip_seg_entry, path);
}

/*
 * The fields a brief read reads, as bits of their indexes; the pid's in
 * *@pid.  Every record has them (the attaching process's pid while it is
 * attaching), and xip_registry_format() writes them first.
 */
static unsigned int brief_fields(unsigned int *pid)
{
	unsigned int all = 0;

	*pid = 0;
	for (size_t i = 0; i < NFIELDS; i++) {
		if (brief_field(&fields[i]))
			all |= 1U << i;
		/* the pid, and the lazy flag only a lazy segment's has */
		if (fields[i].off == offsetof(struct xip_seg_entry, pid) ||
		    fields[i].off == offsetof(struct xip_seg_entry, lazy))
			*pid |= 1U << i;
	}
	return all;
}

/* The pid's own bit (a record being attached has it). */
static unsigned int pid_bit(void)
{
	for (size_t i = 0; i < NFIELDS; i++)
		if (fields[i].off == offsetof(struct xip_seg_entry, pid))
			return 1U << i;
	return 0;
}

static int parse_text(const char *text, struct xip_seg_entry *e, bool brief)
{
	unsigned int seen = 0, pid = 0, want = brief ? brief_fields(&pid) : 0;
	size_t next = 0;

	/* a line at a time, each byte looked at once */
	while (*text) {
		const char *eq = text, *val, *end;
		const struct field *f;
		bool escaped = false;
		int ret;

		while (*eq && *eq != '=' && *eq != '\n')
			eq++;
		if (*eq != '=' || eq - text >= 32)
			return -EINVAL;
		for (end = val = eq + 1; *end && *end != '\n'; end++)
			escaped |= *end == '\\';
		if ((size_t)(end - val) >= XIP_PATH_MAX * 2)
			return -EINVAL;
		f = field_find(text, (size_t)(eq - text), &next);
		/* unknown keys are ignored, and the rest in a brief read */
		ret = f && (!brief || brief_field(f)) ?
			      parse_field(e, f, val, (size_t)(end - val),
					  escaped) :
			      0;
		if (ret)
			return ret;
		text = *end ? end + 1 : end;
		/* a brief read stops once it has what it reads */
		if (brief && f && brief_field(f)) {
			seen |= 1U << (f - fields);
			if ((seen | (e->attaching ? pid & ~pid_bit() : pid)) ==
			    want)
				break;
		}
	}
	if (xip_registry_name_check(e->name) || e->type == XIP_SEGTYPE_NONE ||
	    !e->path[0]) {
		xip_error_clear();
		return -EINVAL;
	}
	return 0;
}

int xip_registry_parse(const char *text, struct xip_seg_entry *e)
{
	memset(e, 0, sizeof(*e));
	return parse_text(text, e, false);
}

int xip_registry_parse_brief(const char *text, struct xip_seg_entry *e)
{
	return parse_text(text, e, true);
}
