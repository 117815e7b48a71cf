// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * NBD URIs (nbd://, nbds://, nbd+unix://, ...): is a source one, and the
 * segment name an attach derives from it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "attach/xip_attach.h"
#include "attach/nbd_int.h"
#include "registry/xip_registry.h"
#include "util/xip_error.h"
#include "util/xip_util.h"

static const char *const schemes[] = {
	"nbd://", "nbds://", "nbd+unix://", "nbds+unix://", "nbd+vsock://",
	"nbds+vsock://",
};

bool xip_nbd_is_uri(const char *spec)
{
	if (!spec)
		return false;
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (!strncmp(spec, schemes[i], strlen(schemes[i])))
			return true;
	return false;
}

int xip_nbd_default_name(const char *uri, char *buf, size_t len)
{
	char exp[XIP_PATH_MAX];
	const char *p;
	size_t o = 0;

	if (!xip_nbd_is_uri(uri))
		return xip_error(-EINVAL, "%s: not an NBD URI", uri);
	p = strstr(uri, "://") + 3;
	p += strcspn(p, "/?#");		/* the authority */
	if (*p == '/')
		p++;
	/* the export name, percent-decoded, up to the query */
	for (; *p && *p != '?' && *p != '#' && o + 1 < sizeof(exp); p++) {
		if (*p == '%' && xip_hexval(p[1]) >= 0 && xip_hexval(p[2]) >= 0) {
			exp[o++] = (char)(xip_hexval(p[1]) * 16 + xip_hexval(p[2]));
			p += 2;
		} else {
			exp[o++] = *p;
		}
	}
	exp[o] = '\0';
	while (o && exp[o - 1] == '/')
		exp[--o] = '\0';
	p = exp + strspn(exp, "@");
	if (!*p || !strcmp(p, ".") || !strcmp(p, "..")) {
		snprintf(buf, len, "nbd");
		return 0;
	}
	return xip_registry_default_name(p, buf, len);
}
