// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Uploads to a registry (push): is a blob there already (HEAD), a blob
 * uploaded (POST, then one PUT or PATCH chunks and the closing PUT), a
 * manifest put under its tag, last.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oci/xip_oci.h"
#include "oci/oci_int.h"
#include "util/xip_error.h"
#include "util/xip_util.h"

/* ---- uploads (the distribution spec's push) -------------------------------
 */

int xip_oci_blob_exists(struct xip_oci_client *c, const char *digest)
{
	struct xip_oci_body *b;
	int ret = xip_oci_request(c, "HEAD", "blobs", digest, NULL, &b);

	if (ret == -ENOENT) {
		xip_error_clear();
		return -ENOENT;
	}
	if (!ret)
		xip_oci_body_close(b);
	return ret;
}

/* The answer's Location resolved against the registry: a new string. */
static int next_location(struct xip_oci_client *c, struct xip_oci_body *b,
			 char **loc)
{
	char *base = xip_oci_registry_url(c, "blobs", "uploads/"), *r;

	if (!base)
		return -ENOMEM;
	if (!b->location) {
		free(base);
		return xip_error(-EIO, "%s: upload: no Location in the answer",
				 c->name);
	}
	r = xip_oci_resolve(base, b->location);
	free(base);
	if (!r)
		return xip_error(-EIO, "%s: upload: a bad Location", c->name);
	free(*loc);
	*loc = strdup(r);
	curl_free(r);
	return *loc ? 0 : -ENOMEM;
}

/* @loc with "digest=@digest" added to its query: a new string. */
static char *with_digest(const char *loc, const char *digest)
{
	char *url;

	if (asprintf(&url, "%s%sdigest=%s", loc, strchr(loc, '?') ? "&" : "?",
		     digest) < 0)
		return NULL;
	return url;
}

int xip_oci_blob_upload(struct xip_oci_client *c, const char *digest,
			const void *data, size_t len, size_t chunk)
{
	struct sendbody sb = {.type = "application/octet-stream"};
	struct xip_oci_body *b = NULL;
	char *loc = NULL, *url = NULL, range[64];
	size_t off = 0;
	int ret;

	ret = xip_oci_do_request(c, "POST", "blobs", "uploads/", NULL, NULL, &sb, NULL,
			 &b);
	if (!ret)
		ret = next_location(c, b, &loc);
	xip_oci_body_close(b);
	b = NULL;
	/* chunks: PATCH with Content-Range, each answer the next Location */
	while (!ret && chunk && len - off > chunk) {
		size_t n = len - off < chunk ? len - off : chunk;

		snprintf(range, sizeof(range), "%zu-%zu", off, off + n - 1);
		sb.data = (const char *)data + off;
		sb.len = n;
		sb.range = range;
		ret = xip_oci_do_request(c, "PATCH", "blobs", digest, loc, NULL, &sb,
				 NULL, &b);
		if (!ret)
			ret = next_location(c, b, &loc);
		xip_oci_body_close(b);
		b = NULL;
		off += n;
	}
	if (!ret && !(url = with_digest(loc, digest)))
		ret = -ENOMEM;
	if (!ret) {
		sb.data = (const char *)data + off;
		sb.len = len - off;
		sb.range = NULL;
		ret = xip_oci_do_request(c, "PUT", "blobs", digest, url, NULL, &sb,
				 NULL, &b);
	}
	if (!ret && b->digest && strcmp(b->digest, digest))
		ret = xip_error(-EIO, "%s: blobs/%s: stored as %s", c->name,
				digest, b->digest);
	xip_oci_body_close(b);
	free(loc);
	free(url);
	return ret;
}

int xip_oci_manifest_put(struct xip_oci_client *c, const char *ref,
			 const char *type, const char *json, size_t len)
{
	struct sendbody sb = {.data = json, .len = len, .type = type};
	struct xip_oci_body *b;
	int ret = xip_oci_do_request(c, "PUT", "manifests", ref, NULL, NULL, &sb, NULL,
			     &b);

	if (!ret)
		xip_oci_body_close(b);
	return ret;
}

