// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The marker `xiptool exec` puts into a program's environment: what it
 * runs (the image, the program's path in it, where its interpreter comes
 * from), so that the front end, executed again by that program through
 * /proc/self/exe under another name, runs the same program again as the
 * kernel would have run the program's own file.
 *
 *	XIPTOOL_EXEC=1:INTERP:IMAGE:PATH
 *
 * INTERP is auto, host or image; IMAGE is "@NAME" or an absolute path;
 * PATH is absolute inside the image.  In IMAGE and PATH the bytes '%',
 * ':' and the control characters are written %XX (upper-case hex), every
 * other byte as itself; any other spelling is refused, so that a marker
 * has exactly one form.  The marker grants nothing: whoever reads it
 * opens the image and the program with its own rights, as the command
 * it stands for would.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/xip_exec.h"
#include "exec/exec_int.h"
#include "util/xip_error.h"
#include "util/xip_util.h"
#include "registry/xip_registry.h"

static const char *const interp_names[] = {
	[XIP_INTERP_AUTO] = "auto",
	[XIP_INTERP_HOST] = "host",
	[XIP_INTERP_IMAGE] = "image",
};

static bool needs_escape(unsigned char c)
{
	return c < 0x20 || c == 0x7f || c == '%' || c == ':';
}

/* Append @s, escaped, at @out; the end of what was written. */
static char *escape(char *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (needs_escape(c)) {
			char two[3];

			xip_hex_encode_upper(&c, 1, two);
			*out++ = '%';
			*out++ = two[0];
			*out++ = two[1];
		} else {
			*out++ = (char)c;
		}
	}
	return out;
}

/*
 * The byte of the escape "%XX" whose digits are at @s (@avail bytes
 * there), in @c: 0, or -EINVAL unless they are two upper-case hex
 * digits, as escape() writes them.
 */
static int unescape_byte(const char *s, size_t avail, unsigned char *c)
{
	char two[3] = "", canon[3];

	if (avail < 2)
		return -EINVAL;
	memcpy(two, s, 2);
	if (xip_hex_decode(two, c, 1) != 1)
		return -EINVAL;
	xip_hex_encode_upper(c, 1, canon);
	return strcmp(canon, two) ? -EINVAL : 0;
}

/*
 * Decode the field @s of @len bytes into @out (@size bytes with its
 * NUL): 0, or -EINVAL for a spelling that is not the one escape() writes
 * or a value of @size bytes or more.
 */
static int unescape(const char *s, size_t len, char *out, size_t size,
		    const char *what)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '%') {
			if (unescape_byte(s + i + 1, len - i - 1, &c))
				return xip_error(-EINVAL, "%s: %%%.2s: not an"
						 " escape (%%XX, upper-case"
						 " hex)", what, s + i + 1);
			if (!needs_escape(c) || !c)
				return xip_error(-EINVAL, "%s: %%%.2s: escapes"
						 " a byte that is written as"
						 " itself", what, s + i + 1);
			i += 2;
		} else if (needs_escape(c)) {
			return xip_error(-EINVAL, "%s: control character"
					 " 0x%02x not escaped", what, c);
		}
		if (n + 1 >= size)
			return xip_error(-EINVAL, "%s: longer than %zu bytes",
					 what, size - 1);
		out[n++] = (char)c;
	}
	out[n] = '\0';
	return 0;
}

static int check_image(const char *image)
{
	if (image[0] == '@') {
		if (xip_registry_name_check(image + 1))
			return xip_error(-EINVAL, "%.70s: %s", image,
					 xip_errmsg());
		return 0;
	}
	if (image[0] != '/')
		return xip_error(-EINVAL, "image '%s': neither @NAME nor an"
				 " absolute path", image);
	return 0;
}

static int check_path(const char *path)
{
	if (path[0] != '/')
		return xip_error(-EINVAL, "program '%s': not an absolute path"
				 " in the image", path);
	return 0;
}

/*
 * The kernel's name of the file open on @fd (/proc/self/fd/N): what
 * realpath(3) of the path it was opened by gives, in one system call
 * instead of one a component; NULL when it has none (no /proc, a file
 * removed since).
 */
static char *fd_path(int fd)
{
	static const char deleted[] = " (deleted)";
	char link[32], *buf;
	ssize_t n;

	if (fd < 0 || !(buf = malloc(XIP_PATH_MAX)))
		return NULL;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, XIP_PATH_MAX);
	if (n > 0 && n < XIP_PATH_MAX && buf[0] == '/') {
		buf[n] = '\0';
		if ((size_t)n < sizeof(deleted) ||
		    strcmp(buf + n - (sizeof(deleted) - 1), deleted))
			return buf;
	}
	free(buf);
	return NULL;
}

int xip_exec_marker_format(const char *image, int fd, const char *path,
			   enum xip_interp_from from, char **out)
{
	/* on the heap: the front end's stack is its memory (8 KiB less) */
	char *real = NULL, *abs = NULL, *p;
	const char *img = image;
	int ret = 0;

	*out = NULL;
	if ((unsigned int)from >= sizeof(interp_names) / sizeof(*interp_names))
		return xip_error(-EINVAL, "unknown interpreter source %d",
				 (int)from);
	if (image[0] != '@') {
		real = fd_path(fd);
		if (!real)
			real = realpath(image, NULL);
		if (!real)
			return xip_error(-errno, "%s: %s", image,
					 strerror(errno));
		img = real;
	}
	if (strlen(img) >= XIP_PATH_MAX)
		ret = xip_error(-ENAMETOOLONG, "%s: path too long", img);
	else if (!(abs = malloc(strlen(path) + 2)))
		ret = xip_error(-ENOMEM, "out of memory");
	else if (strlen(strcpy(abs + (path[0] != '/'), path)) + 1 +
		 (path[0] != '/') > XIP_PATH_MAX)
		ret = xip_error(-ENAMETOOLONG, "%s: path too long", path);
	if (abs)
		abs[0] = '/';	/* a relative path, made absolute */
	if (!ret)
		ret = check_image(img);
	if (!ret)
		ret = check_path(abs);
	if (!ret) {
		*out = malloc(sizeof(XIP_EXEC_MARKER "=1:image::") +
			      3 * (strlen(img) + strlen(abs)));
		if (!*out)
			ret = xip_error(-ENOMEM, "out of memory");
	}
	if (!ret) {
		/* NAME=1:FROM:IMAGE:PATH, without printf (a start's cost) */
		p = stpcpy(stpcpy(stpcpy(*out, XIP_EXEC_MARKER "=1:"),
				  interp_names[from]), ":");
		p = escape(p, img);
		*p++ = ':';
		p = escape(p, abs);
		*p = '\0';
	}
	free(abs);
	free(real);
	return ret;
}

static int bad(const char *why)
{
	return xip_error(-EINVAL, "%s: %s", XIP_EXEC_MARKER, why);
}

int xip_exec_marker_parse(const char *value, struct xip_exec_marker *m)
{
	const char *f[4], *end;
	size_t len[4], n, i;
	int ret;

	memset(m, 0, sizeof(*m));
	if (!value || !*value)
		return bad("empty");
	n = strnlen(value, XIP_EXEC_MARKER_MAX + 1);
	if (n > XIP_EXEC_MARKER_MAX)
		return xip_error(-EINVAL, "%s: longer than %d bytes",
				 XIP_EXEC_MARKER, XIP_EXEC_MARKER_MAX);
	/* four fields: VERSION:INTERP:IMAGE:PATH */
	for (i = 0, f[0] = value; i < 4; i++) {
		end = strchrnul(f[i], ':');
		len[i] = (size_t)(end - f[i]);
		if (i < 3 && !*end)
			return bad("expected VERSION:INTERP:IMAGE:PATH");
		if (i < 3)
			f[i + 1] = end + 1;
		else if (*end)
			return bad("more than four fields (VERSION:INTERP:"
				   "IMAGE:PATH)");
	}
	if (len[0] != 1 || f[0][0] != '1')
		return bad("unknown version (this xiptool writes 1)");
	for (i = 0; i < sizeof(interp_names) / sizeof(*interp_names); i++)
		if (len[1] == strlen(interp_names[i]) &&
		    !strncmp(f[1], interp_names[i], len[1]))
			break;
	if (i == sizeof(interp_names) / sizeof(*interp_names))
		return bad("interpreter source: expected auto, host or image");
	m->interp_from = (enum xip_interp_from)i;
	ret = unescape(f[2], len[2], m->image, sizeof(m->image),
		       XIP_EXEC_MARKER ": image");
	if (!ret)
		ret = unescape(f[3], len[3], m->path, sizeof(m->path),
			       XIP_EXEC_MARKER ": program");
	if (ret)
		return ret;
	if (!m->image[0])
		return bad("no image");
	ret = check_image(m->image);
	if (!ret)
		ret = check_path(m->path);
	if (ret) {
		char why[XIP_ERRMSG_MAX];

		snprintf(why, sizeof(why), "%s", xip_errmsg());
		return bad(why);
	}
	return 0;
}
