// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Segment names: the characters a name may hold, and the name an image
 * gives when attach is given none.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "registry/xip_registry.h"
#include "registry/registry_int.h"
#include "util/xip_error.h"
#include "util/xip_util.h"

static bool name_char(int c)
{
	return isascii(c) && (isalnum(c) || c == '.' || c == '_' || c == '-');
}

int xip_registry_name_check(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	/* the reason only: callers name the segment as they were given it */
	if (n == 0)
		return xip_error(-EINVAL, "empty segment name");
	if (n > XIP_SEG_NAME_MAX)
		return xip_error(-EINVAL,
				 "segment name longer than %d characters",
				 XIP_SEG_NAME_MAX);
	if (name[0] == '.')
		return xip_error(-EINVAL,
				 "segment name must not start with '.'");
	for (size_t i = 0; i < n; i++)
		if (!name_char((unsigned char)name[i]))
			return xip_error(-EINVAL,
					 "invalid segment name (use 1 to %d of A-Z a-z 0-9 . _ -)",
					 XIP_SEG_NAME_MAX);
	return 0;
}

static void strip_suffix(char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	if (n > m && !strcasecmp(s + n - m, suffix))
		s[n - m] = '\0';
}

int xip_registry_default_name(const char *image, char *buf, size_t len)
{
	const char *base = strrchr(image, '/');
	char tmp[XIP_PATH_MAX];
	size_t o = 0;

	if (image[0] == '@')
		return xip_error_reason(-EINVAL, XIP_R_NAME_NEEDED,
					"%s: a copy of a segment needs a name",
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
		return xip_error_reason(-EINVAL, XIP_R_NAME_NEEDED,
					"%s: cannot derive a segment name from the image name",
					image);
	if (xip_registry_name_check(buf))
		return xip_error(-EINVAL, "%s: segment name %.70s: %s", image,
				 buf, xip_errmsg());
	return 0;
}
