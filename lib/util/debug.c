// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Tracing on standard error when XIPTOOL_DEBUG asks for it (xip_debug.h).
 * Each line is formatted first and written with one write(2), so that
 * lines of several threads or processes do not mix.  Names in a line may
 * come from an image or an ELF file: control bytes are shown as '?', so
 * that a hostile name cannot drive the terminal.  C library only: the
 * exec front end traces too.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "util/xip_debug.h"
#include "util/xip_util.h"

#define MASK_UNSET	(~0u)

static const struct {
	const char *name;
	unsigned int bit;
} rooms[] = {
	{ "segment", XIP_DBG_SEGMENT },	{ "registry", XIP_DBG_REGISTRY },
	{ "loop", XIP_DBG_LOOP },	{ "attach", XIP_DBG_ATTACH },
	{ "engine", XIP_DBG_ENGINE },	{ "exec", XIP_DBG_EXEC },
	{ "build", XIP_DBG_BUILD },	{ "check", XIP_DBG_CHECK },
	{ "nbd", XIP_DBG_NBD },
};

#define NROOMS	(sizeof(rooms) / sizeof(rooms[0]))

static unsigned int mask = MASK_UNSET;

unsigned int xip_debug_parse(const char *value)
{
	unsigned int m = 0;
	const char *p = value;

	while (p && *p) {
		size_t n = strcspn(p, ", ");

		if (n == 3 && !strncasecmp(p, "all", 3))
			m |= ~0u >> 1;
		for (size_t i = 0; i < NROOMS; i++)
			if (strlen(rooms[i].name) == n &&
			    !strncasecmp(p, rooms[i].name, n))
				m |= rooms[i].bit;
		p += n;
		p += strspn(p, ", ");
	}
	return m;
}

unsigned int xip_debug_mask(void)
{
	unsigned int m = __atomic_load_n(&mask, __ATOMIC_RELAXED);

	if (m == MASK_UNSET) {
		m = xip_debug_parse(secure_getenv("XIPTOOL_DEBUG"));
		__atomic_store_n(&mask, m, __ATOMIC_RELAXED);
	}
	return m;
}

void xip_debug(enum xip_debug_room room, const char *fmt, ...)
{
	const char *name = "?";
	int saved = errno;
	char line[512];
	va_list ap;
	int n, k;

	for (size_t i = 0; i < NROOMS; i++)
		if (rooms[i].bit == (unsigned int)room)
			name = rooms[i].name;
	n = snprintf(line, sizeof(line), "xiptool[%d]: %s: ", (int)getpid(),
		     name);
	va_start(ap, fmt);
	k = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (k < 0)
		k = 0;
	n += k;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	for (int i = 0; i < n; i++)
		if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
			line[i] = '?';
	line[n++] = '\n';
	xip_write_all(STDERR_FILENO, line, (size_t)n);
	errno = saved;
}
