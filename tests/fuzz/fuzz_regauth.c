// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target "regauth": what a registry, or a user, hands the registry
 * client as text (lib/oci): the first byte picks the parser, the rest is
 * its input.
 *   0  an image reference (xip_oci_ref_parse): one that parses has a
 *      host, a repository and a tag or a digest;
 *   1  a WWW-Authenticate header (xip_oci_challenge_parse): a Bearer
 *      challenge that parses has a realm;
 *   2  a token server's answer (xip_oci_token_parse): a token that
 *      parses is not empty and has no line break (it becomes a header).
 * See regauth.dict; the seeds are written by seeds.sh.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

static void reference(const char *s)
{
	struct xip_oci_ref r;

	if (xip_oci_ref_parse(s, &r))
		return;
	if (!r.host || !r.repo || !xip_oci_ref_reference(&r))
		abort();
	xip_oci_ref_free(&r);
}

static void challenge(const char *s)
{
	struct xip_oci_challenge c;

	if (xip_oci_challenge_parse(s, &c))
		return;
	if (c.bearer && (!c.realm || !*c.realm))
		abort();
	xip_oci_challenge_free(&c);
}

static void token(const uint8_t *data, size_t size)
{
	char *t = NULL;

	if (xip_oci_token_parse((const char *)data, size, &t))
		return;
	if (!*t || strpbrk(t, "\r\n"))
		abort();
	free(t);
}

FUZZ_TARGET(regauth)
{
	char *s;

	if (!size || size > 65536)
		return 0;
	if (data[0] % 3 == 2) {
		token(data + 1, size - 1);
	} else {
		s = strndup((const char *)data + 1, size - 1);
		if (!s)
			return 0;
		if (data[0] % 3 == 0)
			reference(s);
		else
			challenge(s);
		free(s);
	}
	xip_error_clear();
	return 0;
}
