/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The oci room's own helpers. */
#ifndef XIP_OCI_INT_H
#define XIP_OCI_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "oci/xip_oci.h"
#include "util/xip_lazy.h"

#include <curl/curl.h>
#include "util/xip_lazycurl.h"

/* @len bytes of @s in base64 (padded): a new string, NULL without memory. */
char *xip_oci_base64(const char *s, size_t len);

/*
 * The client's and a request's state (client.c), shared with the
 * uploads (upload.c).
 */
#define ERRBODY_MAX 2048
/* seconds a request may stall (--timeout) */
#define TIMEOUT_DEFAULT 30

struct xip_oci_client {
	char *name; /* docker://HOST/REPO */
	char *host; /* where to connect: HOST[:PORT] */
	char *repo;
	char *user, *pass;
	char *auth; /* the Authorization header once known, or NULL */
	bool insecure;
	bool plain; /* http:// (insecure only, after https failed) */
	bool scheme_known;
	bool push; /* token scope pull,push */
	unsigned int timeout;
	CURLM *multi;
};

struct xip_oci_body {
	struct xip_oci_client *c;
	CURL *easy;
	struct curl_slist *hdrs;
	/* the answer being received */
	long status;
	bool headers_done;
	char *type, *digest, *location, *challenge;
	int64_t length;
	/* the body: buf[off, len) not read yet */
	char *buf;
	size_t off, len;
	bool paused, done, delivered;
	CURLcode result;
	char errbody[ERRBODY_MAX];
	size_t errlen;
	struct timespec last; /* the last byte or header seen */
	/* a request's body to send (upload), sent again on every try */
	const char *up, *up_type, *up_range;
	size_t up_len, up_off;
	char range[64]; /* a GET of part of a blob: "bytes=A-B", or "" */
};

struct sendbody {
	const char *data, *type, *range;
	size_t len;
};

int xip_oci_do_request(struct xip_oci_client *c, const char *method,
		      const char *kind, const char *ref, const char *fixed,
		      const char *accept, const struct sendbody *sb,
		      const char *range, struct xip_oci_body **out);
char *xip_oci_registry_url(struct xip_oci_client *c, const char *kind,
			  const char *ref);
char *xip_oci_resolve(const char *base, const char *location);

#endif
