// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Image references of the docker transport: docker://HOST[:PORT]/REPO
 * followed by :TAG, @sha256:DIGEST or both (the digest then names the
 * manifest).  The grammar is the distribution project's: a repository of
 * lowercase components joined by '/', a tag of at most 128 characters.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <ext2fs/ext2fs.h>

#include "oci/xip_oci.h"
#include "util/xip_error.h"

#define REPO_MAX 255
#define TAG_MAX 128
#define DEFAULT_HOST "docker.io"

bool xip_oci_is_remote(const char *spec)
{
	return spec && !strncmp(spec, XIP_OCI_PREFIX, strlen(XIP_OCI_PREFIX));
}

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* HOST[:PORT]: letters, digits, dots, dashes; [v6] too; a port of digits */
static bool host_ok(const char *h)
{
	const char *colon, *p = h;

	if (*p == '[') {
		p = strchr(p, ']');
		if (!p || p == h + 1)
			return false;
		for (const char *q = h + 1; q < p; q++)
			if (!strchr("0123456789abcdefABCDEF:.", *q))
				return false;
		p++;
		colon = *p ? p : NULL;
	} else {
		colon = strchr(h, ':');
		for (; *p && p != colon; p++)
			if (!strchr("abcdefghijklmnopqrstuvwxyz"
				    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-",
				    *p))
				return false;
		if (p == h)
			return false;
	}
	if (!colon)
		return true;
	if (*colon != ':' || !colon[1] || strlen(colon + 1) > 5)
		return false;
	for (p = colon + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/* components [a-z0-9]+ joined by '/', each with inner '.', '_', '__', '-' */
static bool repo_ok(const char *r)
{
	size_t len = strlen(r);

	if (!len || len > REPO_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = r[i];
		bool edge = i == 0 || i + 1 == len || r[i - 1] == '/' ||
			    r[i + 1] == '/';

		if (is_lower_alnum(c))
			continue;
		if (c == '/' && i && i + 1 < len && r[i - 1] != '/')
			continue;
		if ((c == '.' || c == '_' || c == '-') && !edge)
			continue;
		return false;
	}
	return true;
}

static bool tag_ok(const char *t)
{
	size_t len = strlen(t);

	if (!len || len > TAG_MAX || *t == '.' || *t == '-')
		return false;
	for (; *t; t++)
		if (!is_lower_alnum(*t) && !(*t >= 'A' && *t <= 'Z') &&
		    !strchr("_.-", *t))
			return false;
	return true;
}

bool xip_oci_digest_ok(const char *d)
{
	if (strncmp(d, "sha256:", 7) || strlen(d) != 7 + 64)
		return false;
	for (d += 7; *d; d++)
		if (!((*d >= '0' && *d <= '9') || (*d >= 'a' && *d <= 'f')))
			return false;
	return true;
}

void xip_oci_ref_free(struct xip_oci_ref *ref)
{
	free(ref->host);
	free(ref->repo);
	free(ref->tag);
	free(ref->digest);
	memset(ref, 0, sizeof(*ref));
}

static int bad(const char *spec, const char *why)
{
	return xip_error(
	    -EINVAL,
	    "%s: %s (expected docker://HOST[:PORT]/REPO[:TAG|@sha256:DIGEST])",
	    spec, why);
}

static int split(const char *spec, char *s, struct xip_oci_ref *ref)
{
	char *slash = strchr(s, '/'), *at, *colon, *name = s;
	const char *host = DEFAULT_HOST;
	bool library = false;

	if (slash && (memchr(s, '.', (size_t)(slash - s)) ||
		      memchr(s, ':', (size_t)(slash - s)) ||
		      memchr(s, '[', (size_t)(slash - s)) ||
		      !strncmp(s, "localhost/", 10))) {
		*slash = '\0';
		host = s;
		name = slash + 1;
		if (!host_ok(host))
			return bad(spec, "not a host name");
	} else if (!slash) {
		library = true;
	}
	at = strchr(name, '@');
	if (at) {
		*at = '\0';
		if (!xip_oci_digest_ok(at + 1))
			return bad(spec,
				   "the digest is not sha256:<64 hex digits>");
		ref->digest = strdup(at + 1);
	}
	colon = strrchr(name, ':');
	if (colon && !strchr(colon, '/')) {
		*colon = '\0';
		if (!tag_ok(colon + 1))
			return bad(spec, "not a tag");
		ref->tag = strdup(colon + 1);
	} else if (!at) {
		ref->tag = strdup("latest");
	}
	if (!repo_ok(name))
		return bad(spec, "not a repository name");
	ref->host = strdup(host);
	if (library && !strcmp(host, DEFAULT_HOST)) {
		ref->repo = malloc(strlen(name) + 9);
		if (ref->repo)
			strcat(strcpy(ref->repo, "library/"), name);
	} else {
		ref->repo = strdup(name);
	}
	if (!ref->host || !ref->repo || (at && !ref->digest) ||
	    (!at && !ref->tag))
		return -ENOMEM;
	return 0;
}

int xip_oci_ref_parse(const char *spec, struct xip_oci_ref *ref)
{
	const char *p = spec;
	char *s;
	int ret;

	memset(ref, 0, sizeof(*ref));
	if (xip_oci_is_remote(p))
		p += strlen(XIP_OCI_PREFIX);
	if (!*p)
		return bad(spec, "no repository");
	s = strdup(p);
	if (!s)
		return -ENOMEM;
	ret = split(spec, s, ref);
	free(s);
	if (ret)
		xip_oci_ref_free(ref);
	return ret;
}

const char *xip_oci_ref_reference(const struct xip_oci_ref *ref)
{
	return ref->digest ? ref->digest : ref->tag;
}
