/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The oci room: a client of OCI distribution registries (the registry
 * HTTP API v2) over libcurl: references (ref.c), credentials and
 * challenges (auth.c), requests with authentication, redirects, retries
 * and deadlines, their bodies streamed, uploads (client.c).  It knows nothing of
 * images: mkfs --oci (lib/mkfs) reads manifests and blobs through it.
 * Part of the public API: include "xip.h", which includes this header.
 */
#ifndef XIP_OCI_H
#define XIP_OCI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ------------------------------------------------------------------ */
/* References: docker://HOST[:PORT]/REPO[:TAG][@sha256:DIGEST]  (ref.c) */
/* ------------------------------------------------------------------ */

#define XIP_OCI_PREFIX "docker://"

struct xip_oci_ref {
	char *host;   /* "HOST[:PORT]", as credentials are keyed */
	char *repo;   /* "library/alpine", "team/app" */
	char *tag;    /* NULL when absent */
	char *digest; /* "sha256:<64 hex>", NULL when absent */
};

/* Does @spec name a registry image (docker://...)? */
bool xip_oci_is_remote(const char *spec);

/*
 * Parse @spec (with or without "docker://").  A first component without
 * a dot, a colon or "localhost" names a repository on docker.io (as
 * skopeo's docker transport does; one component gains "library/").  No
 * tag and no digest: "latest".  -EINVAL with a message on a bad one.
 */
int xip_oci_ref_parse(const char *spec, struct xip_oci_ref *ref);
void xip_oci_ref_free(struct xip_oci_ref *ref);
/* Is @d a content digest as OCI writes one: "sha256:" and 64 lower-case
 * hex digits? */
bool xip_oci_digest_ok(const char *d);
/* The manifest reference: the digest when given, else the tag. */
const char *xip_oci_ref_reference(const struct xip_oci_ref *ref);

/* ------------------------------------------------------------------ */
/* Credentials and challenges (auth.c)                                  */
/* ------------------------------------------------------------------ */

/*
 * A WWW-Authenticate challenge: "Basic realm=..." or "Bearer
 * realm=...,service=...,scope=...".  Parameters are tokens or quoted
 * strings (RFC 7235).  -EINVAL on a malformed header or another scheme.
 */
struct xip_oci_challenge {
	bool bearer;
	char *realm, *service, *scope;
};

int xip_oci_challenge_parse(const char *header, struct xip_oci_challenge *c);
void xip_oci_challenge_free(struct xip_oci_challenge *c);

/*
 * The credentials for @host in the auth file @path (containers
 * auth.json or docker config.json: {"auths": {"HOST": {"auth":
 * base64("USER:PASS")}}}): 0 with *@user and *@pass set, -ENOENT when
 * the file or the entry is missing, -EINVAL on a malformed one.
 */
int xip_oci_authfile_lookup(const char *path, const char *host, char **user,
			    char **pass);

/* The token of a token server's answer ({"token"|"access_token": ...}). */
int xip_oci_token_parse(const char *json, size_t len, char **token);

/* ------------------------------------------------------------------ */
/* The client (client.c)                                                */
/* ------------------------------------------------------------------ */

struct xip_oci_client_opts {
	const char *creds; /* "USER:PASS", or NULL */
	/*
	 * The auth file; NULL: $REGISTRY_AUTH_FILE, else
	 * $XDG_RUNTIME_DIR/containers/auth.json, else
	 * ~/.docker/config.json (missing files are skipped).
	 */
	const char *authfile;
	/*
	 * true: plain HTTP (after HTTPS fails) and unverified certificates
	 * are allowed; the caller says so to its user.  false: HTTPS only,
	 * certificates checked against the system's store ($SSL_CERT_FILE).
	 */
	bool insecure;
	unsigned int timeout; /* seconds: connection, stall; 0: 30 */
	bool push;	      /* a token for pull,push (not only pull) */
};

struct xip_oci_client;
struct xip_oci_body;

/* A client of the registry of @ref (its credentials resolved). */
int xip_oci_client_new(const struct xip_oci_ref *ref,
		       const struct xip_oci_client_opts *opts,
		       struct xip_oci_client **out);
void xip_oci_client_free(struct xip_oci_client *c);

/*
 * GET (or HEAD, @method) /v2/REPO/@kind/@ref ("manifests", "blobs"),
 * with @accept (NULL: none): authentication on a challenge, redirects
 * followed (credentials only to the registry's own host), retries on a
 * 5xx or a broken connection before the body.  Returns once the answer
 * is 200, its body to read with xip_oci_body_read(); -ENOENT on 404,
 * -EACCES on 401/403, -ETIMEDOUT, -EINTR on xip_interrupted(), -EIO.
 */
int xip_oci_request(struct xip_oci_client *c, const char *method,
		    const char *kind, const char *ref, const char *accept,
		    struct xip_oci_body **out);
/* GET @len bytes at @off of the blob @digest (a Range request, 206). */
int xip_oci_blob_range(struct xip_oci_client *c, const char *digest,
		       uint64_t off, uint64_t len, struct xip_oci_body **out);
/* Up to @len bytes of the body: 0 at its end, else -errno. */
ssize_t xip_oci_body_read(struct xip_oci_body *b, void *buf, size_t len);
/* The answer's Content-Type, Docker-Content-Digest (NULL: none). */
const char *xip_oci_body_type(const struct xip_oci_body *b);
const char *xip_oci_body_digest(const struct xip_oci_body *b);
/* Its Content-Length, -1 when not given. */
int64_t xip_oci_body_length(const struct xip_oci_body *b);
void xip_oci_body_close(struct xip_oci_body *b);

/*
 * Pushing (the distribution spec's uploads).  Is the blob @digest in the
 * repository (HEAD)?  0 yes, -ENOENT no, else -errno.
 */
int xip_oci_blob_exists(struct xip_oci_client *c, const char *digest);
/*
 * Upload the @len bytes at @data as the blob @digest: POST an upload,
 * then one PUT ?digest=, or (@chunk non-zero and @len above it) PATCHes
 * of @chunk bytes with Content-Range and a closing PUT.
 */
int xip_oci_blob_upload(struct xip_oci_client *c, const char *digest,
			const void *data, size_t len, size_t chunk);
/* PUT the manifest @json (@len bytes, media type @type) under @ref. */
int xip_oci_manifest_put(struct xip_oci_client *c, const char *ref,
			 const char *type, const char *json, size_t len);

/* "docker://HOST/REPO", for messages. */
const char *xip_oci_client_name(const struct xip_oci_client *c);

#endif /* XIP_OCI_H */
