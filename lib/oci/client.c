// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The registry client: requests of the registry HTTP API v2 over
 * libcurl's multi interface, their bodies pulled by the caller
 * (xip_oci_body_read) as they arrive, a transfer paused while its buffer
 * is full.  One multi handle per client keeps the connections for reuse.
 *
 * What the network may do to us is bounded: a connection and every wait
 * for a byte have a deadline (the client's timeout), a 5xx or a broken
 * connection before the body is retried a few times with a growing
 * pause, redirects are followed by hand (at most REDIRECTS_MAX) so that
 * the Authorization header goes to the registry's own origin only, and
 * plain http:// is used only when the caller allowed it (insecure).  A
 * stop signal (xip_interrupted) ends every wait at once.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <ext2fs/ext2fs.h>

#include "oci/xip_oci.h"
#include "oci/oci_int.h"
#include "util/xip_error.h"
#include "util/xip_lazy.h"
#include "util/xip_util.h"


#define TRIES 3
#define BACKOFF_MS 250
#define REDIRECTS_MAX 5
#define BUF_CAP (1u << 20)
#define TOKEN_MAX (1u << 20)
#define HEADER_MAX 8192


static const char *hdr_value(const char *line, size_t n, const char *name,
			     size_t *vlen)
{
	size_t k = strlen(name);
	const char *v;

	if (n <= k || strncasecmp(line, name, k) || line[k] != ':')
		return NULL;
	v = line + k + 1;
	n -= k + 1;
	while (n && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
		n--;
	*vlen = n;
	return v;
}

static void keep(char **slot, const char *v, size_t n)
{
	free(*slot);
	*slot = strndup(v, n);
}

static void now(struct timespec *t)
{
	clock_gettime(CLOCK_MONOTONIC, t);
}

static void answer_reset(struct xip_oci_body *b)
{
	free(b->type);
	free(b->digest);
	free(b->location);
	free(b->challenge);
	b->type = b->digest = b->location = b->challenge = NULL;
	b->length = -1;
	b->headers_done = false;
}

static size_t on_header(char *line, size_t size, size_t n, void *arg)
{
	struct xip_oci_body *b = arg;
	const char *v;
	size_t vlen;

	(void)size;
	now(&b->last);
	if (n > HEADER_MAX)
		return 0; /* a header line that long: refused */
	if (n >= 5 && !strncmp(line, "HTTP/", 5)) {
		const char *sp = memchr(line, ' ', n);

		answer_reset(b);
		b->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		return n;
	}
	if (n <= 2 && (line[0] == '\r' || line[0] == '\n')) {
		/* the end of an answer's headers; 1xx ones go on */
		b->headers_done = b->status >= 200;
		return n;
	}
	if ((v = hdr_value(line, n, "content-type", &vlen)))
		keep(&b->type, v, vlen);
	else if ((v = hdr_value(line, n, "docker-content-digest", &vlen)))
		keep(&b->digest, v, vlen);
	else if ((v = hdr_value(line, n, "location", &vlen)))
		keep(&b->location, v, vlen);
	else if ((v = hdr_value(line, n, "www-authenticate", &vlen)) &&
		 !b->challenge)
		keep(&b->challenge, v, vlen);
	else if ((v = hdr_value(line, n, "content-length", &vlen)))
		b->length = strtoll(v, NULL, 10);
	return n;
}

static bool ok_status(long s)
{
	return s == 200 || s == 206;
}

static size_t on_data(char *data, size_t size, size_t n, void *arg)
{
	struct xip_oci_body *b = arg;

	(void)size;
	now(&b->last);
	if (!ok_status(b->status)) {
		/* an error's body: its start, for the message */
		size_t take = ERRBODY_MAX - 1 - b->errlen;

		if (take > n)
			take = n;
		memcpy(b->errbody + b->errlen, data, take);
		b->errlen += take;
		b->errbody[b->errlen] = '\0';
		return n;
	}
	if (b->off && b->len + n > BUF_CAP) {
		memmove(b->buf, b->buf + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
	}
	if (b->len + n > BUF_CAP) {
		b->paused = true;
		return CURL_WRITEFUNC_PAUSE;
	}
	memcpy(b->buf + b->len, data, n);
	b->len += n;
	return n;
}

static size_t on_send(char *out, size_t size, size_t n, void *arg)
{
	struct xip_oci_body *b = arg;
	size_t take = b->up_len - b->up_off;

	now(&b->last);
	if (take > size * n)
		take = size * n;
	memcpy(out, b->up + b->up_off, take);
	b->up_off += take;
	return take;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut,
		       curl_off_t un)
{
	(void)arg;
	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return xip_interrupted() ? 1 : 0;
}

static long elapsed_ms(const struct timespec *t)
{
	struct timespec n;

	now(&n);
	return (n.tv_sec - t->tv_sec) * 1000L +
	       (n.tv_nsec - t->tv_nsec) / 1000000L;
}

/* ---- one transfer ----------------------------------------------------------
 */

static void transfer_end(struct xip_oci_body *b)
{
	if (b->easy) {
		curl_multi_remove_handle(b->c->multi, b->easy);
		curl_easy_cleanup(b->easy);
	}
	b->easy = NULL;
	curl_slist_free_all(b->hdrs);
	b->hdrs = NULL;
	answer_reset(b);
	b->status = 0;
	b->off = b->len = 0;
	b->paused = b->done = b->delivered = false;
	b->result = CURLE_OK;
	b->errlen = 0;
	b->errbody[0] = '\0';
}

static int add_header(struct xip_oci_body *b, const char *name,
		      const char *value)
{
	char *h;
	struct curl_slist *l;

	if (asprintf(&h, "%s: %s", name, value) < 0)
		return -ENOMEM;
	l = curl_slist_append(b->hdrs, h);
	free(h);
	if (!l)
		return -ENOMEM;
	b->hdrs = l;
	return 0;
}

static int transfer_start(struct xip_oci_body *b, const char *method,
			  const char *url, const char *auth, const char *accept)
{
	struct xip_oci_client *c = b->c;
	const char *cafile = getenv("SSL_CERT_FILE");
	const char *capath = getenv("SSL_CERT_DIR");
	const char *protos = c->insecure ? "http,https" : "https";
	int ret = 0;

	transfer_end(b);
	b->easy = curl_easy_init();
	if (!b->easy)
		return -ENOMEM;
	if (auth)
		ret = add_header(b, "Authorization", auth);
	if (!ret && accept)
		ret = add_header(b, "Accept", accept);
	if (!ret && b->up && b->up_type)
		ret = add_header(b, "Content-Type", b->up_type);
	if (!ret && b->up && b->up_range)
		ret = add_header(b, "Content-Range", b->up_range);
	if (!ret && b->up)
		ret = add_header(b, "Expect", ""); /* no 100-continue wait */
	if (!ret && b->range[0])
		ret = add_header(b, "Range", b->range);
	if (ret)
		return ret;
	curl_easy_setopt(b->easy, CURLOPT_URL, url);
	curl_easy_setopt(b->easy, CURLOPT_PROTOCOLS_STR, protos);
	curl_easy_setopt(b->easy, CURLOPT_REDIR_PROTOCOLS_STR, protos);
	/* redirects are ours to follow (who gets the credentials) */
	curl_easy_setopt(b->easy, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(b->easy, CURLOPT_UNRESTRICTED_AUTH, 0L);
	curl_easy_setopt(b->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(b->easy, CURLOPT_USERAGENT,
			 "xiptool/" PACKAGE_VERSION);
	curl_easy_setopt(b->easy, CURLOPT_HTTPHEADER, b->hdrs);
	if (!strcmp(method, "HEAD"))
		curl_easy_setopt(b->easy, CURLOPT_NOBODY, 1L);
	if (b->up) {
		b->up_off = 0;
		curl_easy_setopt(b->easy, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(b->easy, CURLOPT_INFILESIZE_LARGE,
				 (curl_off_t)b->up_len);
		curl_easy_setopt(b->easy, CURLOPT_READFUNCTION, on_send);
		curl_easy_setopt(b->easy, CURLOPT_READDATA, b);
		if (strcmp(method, "PUT"))
			curl_easy_setopt(b->easy, CURLOPT_CUSTOMREQUEST, method);
	}
	curl_easy_setopt(b->easy, CURLOPT_CONNECTTIMEOUT, (long)c->timeout);
	curl_easy_setopt(b->easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(b->easy, CURLOPT_LOW_SPEED_TIME, (long)c->timeout);
	if (c->insecure) {
		curl_easy_setopt(b->easy, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(b->easy, CURLOPT_SSL_VERIFYHOST, 0L);
	} else {
		/* what OpenSSL's own default store honours, libcurl does not */
		if (cafile && *cafile)
			curl_easy_setopt(b->easy, CURLOPT_CAINFO, cafile);
		if (capath && *capath)
			curl_easy_setopt(b->easy, CURLOPT_CAPATH, capath);
	}
	curl_easy_setopt(b->easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(b->easy, CURLOPT_HEADERDATA, b);
	/* fewer, larger callbacks for blobs of hundreds of MiB */
	curl_easy_setopt(b->easy, CURLOPT_BUFFERSIZE, 512L * 1024);
	curl_easy_setopt(b->easy, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(b->easy, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(b->easy, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(b->easy, CURLOPT_XFERINFOFUNCTION, on_progress);
	now(&b->last);
	if (curl_multi_add_handle(c->multi, b->easy) != CURLM_OK)
		return -ENOMEM;
	return 0;
}

enum wait_for { W_HEADERS, W_BYTES, W_END };

static bool arrived(const struct xip_oci_body *b, enum wait_for w)
{
	return b->done || (w == W_HEADERS && b->headers_done) ||
	       (w == W_BYTES && b->len > b->off);
}

/*
 * Let the transfer move until @w arrived, waiting for the network (or a
 * stop signal) a quarter of a second at a time: 0, -EINTR, or
 * -ETIMEDOUT when nothing came for the client's timeout.
 */
static int pump(struct xip_oci_body *b, enum wait_for w)
{
	struct curl_waitfd stop = {.fd = xip_interrupt_fd(),
				   .events = CURL_WAIT_POLLIN};
	int running = 0, left;
	CURLMsg *m;

	for (;;) {
		if (xip_interrupted())
			return -EINTR;
		if (curl_multi_perform(b->c->multi, &running) != CURLM_OK)
			return -EIO;
		while ((m = curl_multi_info_read(b->c->multi, &left)))
			if (m->msg == CURLMSG_DONE &&
			    m->easy_handle == b->easy) {
				b->done = true;
				b->result = m->data.result;
			}
		if (arrived(b, w))
			return 0;
		if (elapsed_ms(&b->last) > (long)b->c->timeout * 1000L)
			return -ETIMEDOUT;
		curl_multi_poll(b->c->multi, stop.fd >= 0 ? &stop : NULL,
				stop.fd >= 0 ? 1 : 0, 250, NULL);
	}
}

/* Until the answer's headers are in (or the transfer ended). */
static int await_headers(struct xip_oci_body *b)
{
	return pump(b, W_HEADERS);
}

/* The rest of a small answer (an error's, a redirect's). */
static int await_end(struct xip_oci_body *b)
{
	return pump(b, W_END);
}

/* A TLS client speaking to a plain HTTP server sees one of these. */
static bool not_tls(CURLcode r)
{
	return r == CURLE_SSL_CONNECT_ERROR || r == CURLE_RECV_ERROR ||
	       r == CURLE_WEIRD_SERVER_REPLY || r == CURLE_GOT_NOTHING;
}

static int curl_failure(struct xip_oci_body *b, const char *what)
{
	struct xip_oci_client *c = b->c;

	if (b->result == CURLE_OPERATION_TIMEDOUT)
		return xip_error(-ETIMEDOUT,
				 "%s: %s: nothing received for %u s", c->name,
				 what, c->timeout);
	if (b->result == CURLE_ABORTED_BY_CALLBACK)
		return xip_error(-EINTR, "%s: %s: interrupted", c->name, what);
	if (b->result == CURLE_PEER_FAILED_VERIFICATION ||
	    b->result == CURLE_SSL_CACERT_BADFILE)
		return xip_error(
		    -EACCES,
		    "%s: %s: %s (--tls-verify=false to skip the check)",
		    c->name, what, curl_easy_strerror(b->result));
	if (!c->insecure && !c->scheme_known &&
	    b->result == CURLE_SSL_CONNECT_ERROR)
		return xip_error(-EIO,
				 "%s: %s: %s (a plain HTTP registry? "
				 "--tls-verify=false allows it)",
				 c->name, what, curl_easy_strerror(b->result));
	return xip_error(-EIO, "%s: %s: %s", c->name, what,
			 curl_easy_strerror(b->result));
}

static int wait_failure(struct xip_oci_body *b, int ret, const char *what)
{
	if (ret == -ETIMEDOUT)
		return xip_error(ret, "%s: %s: nothing received for %u s",
				 b->c->name, what, b->c->timeout);
	if (ret == -EINTR)
		return xip_error(ret, "%s: %s: interrupted", b->c->name, what);
	return xip_error(ret, "%s: %s: %s", b->c->name, what, strerror(-ret));
}

/* Sleep @ms, or less when a stop signal comes. */
static int backoff(int ms)
{
	struct pollfd p = {.fd = xip_interrupt_fd(), .events = POLLIN};

	poll(&p, p.fd >= 0 ? 1 : 0, ms);
	return xip_interrupted() ? -EINTR : 0;
}

/* ---- origins and redirects ----------------------------------------------- */

/*
 * @url's scheme, host and port (the port made explicit) into @out:
 * "https://host:443".  -EINVAL when it is not a URL.
 */
static int origin(const char *url, char *out, size_t len)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL;
	int ret = -EINVAL;

	if (!u)
		return -ENOMEM;
	if (!curl_url_set(u, CURLUPART_URL, url, 0) &&
	    !curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) &&
	    !curl_url_get(u, CURLUPART_HOST, &host, 0) &&
	    !curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT)) {
		snprintf(out, len, "%s://%s:%s", scheme, host, port);
		ret = 0;
	}
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return ret;
}

/* @location resolved against @base: a new string (curl_free), or NULL. */
char *xip_oci_resolve(const char *base, const char *location)
{
	CURLU *u = curl_url();
	char *out = NULL;

	if (!u)
		return NULL;
	if (curl_url_set(u, CURLUPART_URL, base, 0) ||
	    curl_url_set(u, CURLUPART_URL, location, 0) ||
	    curl_url_get(u, CURLUPART_URL, &out, 0))
		out = NULL;
	curl_url_cleanup(u);
	return out;
}

char *xip_oci_registry_url(struct xip_oci_client *c, const char *kind,
			  const char *ref)
{
	char *url;

	if (asprintf(&url, "%s://%s/v2/%s/%s/%s", c->plain ? "http" : "https",
		     c->host, c->repo, kind, ref) < 0)
		return NULL;
	return url;
}

/* Is @url on the registry's own origin (where credentials may go)? */
static bool same_origin(struct xip_oci_client *c, const char *url)
{
	char a[512], b[512], *home = xip_oci_registry_url(c, "", "");
	bool same;

	same = home && !origin(home, a, sizeof(a)) &&
	       !origin(url, b, sizeof(b)) && !strcmp(a, b);
	free(home);
	return same;
}

/* ---- authentication ---------------------------------------------------------
 */

static char *basic_header(struct xip_oci_client *c)
{
	char *up, *enc, *h = NULL;

	if (asprintf(&up, "%s:%s", c->user, c->pass) < 0)
		return NULL;
	enc = xip_oci_base64(up, strlen(up));
	free(up);
	if (enc && asprintf(&h, "Basic %s", enc) < 0)
		h = NULL;
	free(enc);
	return h;
}

/* The message in a registry's error body ({"errors":[{"message":...}]}). */
static void error_detail(const struct xip_oci_body *b, char *out, size_t len)
{
	const char *m = strstr(b->errbody, "\"message\":\"");
	size_t n = 0;

	out[0] = '\0';
	if (!m)
		return;
	for (m += 11; *m && *m != '"' && n + 1 < len; m++)
		out[n++] = (*m >= ' ' && *m < 0x7f) ? *m : '?';
	out[n] = '\0';
}

static int fetch_token(struct xip_oci_client *c,
		       const struct xip_oci_challenge *ch)
{
	struct xip_oci_body *b = calloc(1, sizeof(*b));
	char *url = NULL, *scope = NULL, *basic = NULL;
	char *json = NULL, *token = NULL, o[512], detail[128];
	size_t len = 0;
	int ret = 0;

	if (!b || !(b->buf = malloc(BUF_CAP))) {
		free(b);
		return -ENOMEM;
	}
	b->c = c;
	b->length = -1;
	if (origin(ch->realm, o, sizeof(o)) ||
	    (strncmp(o, "https:", 6) &&
	     !(c->insecure && !strncmp(o, "http:", 5)))) {
		ret = xip_error(-EACCES,
				"%s: token realm %s: not an https:// URL",
				c->name, ch->realm);
		goto out;
	}
	if (!ch->scope && asprintf(&scope, "repository:%s:%s", c->repo,
				   c->push ? "pull,push" : "pull") < 0) {
		ret = -ENOMEM;
		goto out;
	}
	b->easy = curl_easy_init();
	if (!b->easy) {
		ret = -ENOMEM;
		goto out;
	}
	{
		char *s =
		    curl_easy_escape(b->easy, ch->scope ? ch->scope : scope, 0);
		char *v = ch->service
			      ? curl_easy_escape(b->easy, ch->service, 0)
			      : NULL;

		if (!s || asprintf(&url, "%s%sscope=%s%s%s", ch->realm,
				   strchr(ch->realm, '?') ? "&" : "?", s,
				   v ? "&service=" : "", v ? v : "") < 0)
			url = NULL;
		curl_free(s);
		curl_free(v);
	}
	if (!url) {
		ret = -ENOMEM;
		goto out;
	}
	if (c->user && !(basic = basic_header(c))) {
		ret = -ENOMEM;
		goto out;
	}
	ret = transfer_start(b, "GET", url, basic, "application/json");
	if (!ret)
		ret = await_headers(b);
	if (ret) {
		ret = wait_failure(b, ret, "token server");
		goto out;
	}
	if (b->done && b->result != CURLE_OK && !b->headers_done) {
		ret = curl_failure(b, "token server");
		goto out;
	}
	if (!ok_status(b->status)) {
		await_end(b);
		error_detail(b, detail, sizeof(detail));
		ret = xip_error(
		    b->status == 401 || b->status == 403 ? -EACCES : -EIO,
		    "%s: token server: HTTP %ld%s%s%s", c->name, b->status,
		    *detail ? " (" : "", detail, *detail ? ")" : "");
		if (ret == -EACCES && c->user)
			xip_error(ret,
				  "%s: authentication failed: credentials "
				  "refused by the token server",
				  c->name);
		goto out;
	}
	while (!ret) {
		char chunk[16384];
		ssize_t r = xip_oci_body_read(b, chunk, sizeof(chunk));
		char *grown;

		if (r <= 0) {
			ret = (int)r;
			break;
		}
		if (len + (size_t)r > TOKEN_MAX) {
			ret = xip_error(
			    -EFBIG, "%s: token server: an answer over %u bytes",
			    c->name, TOKEN_MAX);
			break;
		}
		grown = realloc(json, len + (size_t)r + 1);
		if (!grown) {
			ret = -ENOMEM;
			break;
		}
		json = grown;
		memcpy(json + len, chunk, (size_t)r);
		len += (size_t)r;
	}
	if (!ret)
		ret = xip_oci_token_parse(json ? json : "", len, &token);
	if (!ret) {
		free(c->auth);
		if (asprintf(&c->auth, "Bearer %s", token) < 0) {
			c->auth = NULL;
			ret = -ENOMEM;
		}
	}
out:
	xip_oci_body_close(b);
	free(url);
	free(scope);
	free(basic);
	free(json);
	free(token);
	return ret;
}

/* Answer a 401: credentials as the challenge asks, once. */
static int authenticate(struct xip_oci_client *c, struct xip_oci_body *b,
			bool *tried)
{
	struct xip_oci_challenge ch;
	int ret;

	if (*tried)
		return xip_error(-EACCES, "%s: authentication failed%s",
				 c->name,
				 c->user ? " (wrong credentials?)" : "");
	*tried = true;
	if (!b->challenge)
		return xip_error(-EACCES, "%s: HTTP 401 without a challenge",
				 c->name);
	ret = xip_oci_challenge_parse(b->challenge, &ch);
	if (ret) {
		char msg[XIP_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", xip_errmsg());
		return xip_error(ret, "%s: %s", c->name, msg);
	}
	if (ch.bearer) {
		ret = fetch_token(c, &ch);
	} else if (!c->user) {
		ret = xip_error(-EACCES,
				"%s: the registry asks for credentials "
				"(--creds or --authfile)",
				c->name);
	} else {
		free(c->auth);
		c->auth = basic_header(c);
		ret = c->auth ? 0 : -ENOMEM;
	}
	xip_oci_challenge_free(&ch);
	return ret;
}

/* ---- requests
 * ---------------------------------------------------------------- */

static bool transient(CURLcode r)
{
	return r == CURLE_RECV_ERROR || r == CURLE_SEND_ERROR ||
	       r == CURLE_GOT_NOTHING || r == CURLE_PARTIAL_FILE ||
	       r == CURLE_COULDNT_CONNECT;
}

static int http_failure(struct xip_oci_body *b, const char *what)
{
	char detail[128];
	long s = b->status;
	int err = s == 404 ? -ENOENT : s == 401 || s == 403 ? -EACCES : -EIO;

	await_end(b);
	error_detail(b, detail, sizeof(detail));
	return xip_error(err, "%s: %s: %s (HTTP %ld%s%s)", b->c->name, what,
			 s == 404		? "not found"
			 : s == 401 || s == 403 ? "access denied"
						: "the registry failed",
			 s, *detail ? ": " : "", detail);
}

/*
 * One step of a request: 1 to try again (after a redirect, a challenge,
 * a transient failure), 0 with @b's answer a 200, else -errno.
 */
static int request_step(struct xip_oci_body *b, const char *method, char **url,
			const char *accept, const char *what, int *tries,
			int *redirects, bool *auth_tried)
{
	struct xip_oci_client *c = b->c;
	bool mine = same_origin(c, *url);
	char *next;
	int ret;

	ret = transfer_start(b, method, *url, mine ? c->auth : NULL, accept);
	if (!ret)
		ret = await_headers(b);
	if (ret)
		return ret == -ENOMEM ? ret : wait_failure(b, ret, what);
	if (!b->headers_done) {
		/* no answer at all */
		if (c->insecure && !c->plain && !c->scheme_known &&
		    not_tls(b->result)) {
			c->plain = true;
			return -EAGAIN; /* rebuilt by the caller */
		}
		if (transient(b->result) && ++*tries < TRIES)
			return backoff(BACKOFF_MS << *tries) ?: 1;
		return curl_failure(b, what);
	}
	c->scheme_known = true;
	if (ok_status(b->status) ||
	    (b->up && b->status >= 200 && b->status < 300))
		return 0;
	if (b->status == 401 && mine) {
		await_end(b);
		ret = authenticate(c, b, auth_tried);
		return ret ? ret : 1;
	}
	if (b->status >= 300 && b->status < 400 && b->location) {
		await_end(b);
		if (++*redirects > REDIRECTS_MAX)
			return xip_error(-ELOOP,
					 "%s: %s: more than %d redirects",
					 c->name, what, REDIRECTS_MAX);
		next = xip_oci_resolve(*url, b->location);
		if (!next)
			return xip_error(-EINVAL,
					 "%s: %s: a redirect to a bad URL",
					 c->name, what);
		if (strncmp(next, "https:", 6) &&
		    !(c->insecure && !strncmp(next, "http:", 5))) {
			curl_free(next);
			return xip_error(
			    -EACCES,
			    "%s: %s: a redirect away from https:// (refused)",
			    c->name, what);
		}
		free(*url);
		*url = strdup(next);
		curl_free(next);
		return *url ? 1 : -ENOMEM;
	}
	if (b->status >= 500 && ++*tries < TRIES) {
		await_end(b);
		return backoff(BACKOFF_MS << *tries) ?: 1;
	}
	return http_failure(b, what);
}

/* What a request sends: a body (may be empty) and its headers. */

/* The URL of a request: @fixed (a Location, its scheme as now), or kind/ref */
static char *request_url(struct xip_oci_client *c, const char *fixed,
			 const char *kind, const char *ref)
{
	char *url;

	if (!fixed)
		return xip_oci_registry_url(c, kind, ref);
	if (c->plain && !strncmp(fixed, "https://", 8)) {
		if (asprintf(&url, "http://%s", fixed + 8) < 0)
			return NULL;
		return url;
	}
	return strdup(fixed);
}

int xip_oci_do_request(struct xip_oci_client *c, const char *method,
		      const char *kind, const char *ref, const char *fixed,
		      const char *accept, const struct sendbody *sb,
		      const char *range, struct xip_oci_body **out)
{
	struct xip_oci_body *b = calloc(1, sizeof(*b));
	int tries = 0, redirects = 0, ret = 1;
	bool auth_tried = false;
	char *url = NULL, what[300];

	snprintf(what, sizeof(what), "%s/%s", kind, ref);
	if (!b)
		return -ENOMEM;
	b->c = c;
	b->length = -1;
	b->buf = malloc(BUF_CAP);
	if (range)
		snprintf(b->range, sizeof(b->range), "%s", range);
	if (sb) {
		b->up = sb->data ? sb->data : "";
		b->up_len = sb->len;
		b->up_type = sb->type;
		b->up_range = sb->range;
	}
	url = request_url(c, fixed, kind, ref);
	if (!b->buf || !url)
		ret = -ENOMEM;
	while (ret > 0 || ret == -EAGAIN) {
		if (ret == -EAGAIN) {
			free(url);
			url = request_url(c, fixed, kind, ref);
			if (!url) {
				ret = -ENOMEM;
				break;
			}
		}
		ret = request_step(b, method, &url, accept, what, &tries,
				   &redirects, &auth_tried);
	}
	free(url);
	if (ret) {
		xip_oci_body_close(b);
		return ret;
	}
	*out = b;
	return 0;
}

int xip_oci_request(struct xip_oci_client *c, const char *method,
		    const char *kind, const char *ref, const char *accept,
		    struct xip_oci_body **out)
{
	return xip_oci_do_request(c, method, kind, ref, NULL, accept, NULL, NULL, out);
}

int xip_oci_blob_range(struct xip_oci_client *c, const char *digest,
		       uint64_t off, uint64_t len, struct xip_oci_body **out)
{
	char range[64];
	int ret;

	if (!len)
		return -EINVAL;
	snprintf(range, sizeof(range), "bytes=%" PRIu64 "-%" PRIu64, off,
		 off + len - 1);
	ret = xip_oci_do_request(c, "GET", "blobs", digest, NULL, NULL, NULL, range,
			 out);
	if (!ret && (*out)->status != 206) {
		xip_oci_body_close(*out);
		return xip_error(-EIO, "%s: blobs/%s: no ranges served",
				 c->name, digest);
	}
	return ret;
}

ssize_t xip_oci_body_read(struct xip_oci_body *b, void *buf, size_t len)
{
	int ret;

	for (;;) {
		if (b->len > b->off) {
			size_t n = b->len - b->off;

			if (n > len)
				n = len;
			memcpy(buf, b->buf + b->off, n);
			b->off += n;
			if (b->off == b->len)
				b->off = b->len = 0;
			b->delivered = true;
			if (b->paused) {
				b->paused = false;
				curl_easy_pause(b->easy, CURLPAUSE_CONT);
			}
			return (ssize_t)n;
		}
		if (b->done)
			break;
		ret = pump(b, W_BYTES);
		if (ret)
			return wait_failure(b, ret, "body");
	}
	if (b->result != CURLE_OK)
		return curl_failure(b, "body");
	return 0;
}

const char *xip_oci_body_type(const struct xip_oci_body *b)
{
	return b->type;
}

const char *xip_oci_body_digest(const struct xip_oci_body *b)
{
	return b->digest;
}

int64_t xip_oci_body_length(const struct xip_oci_body *b)
{
	return b->length;
}

void xip_oci_body_close(struct xip_oci_body *b)
{
	if (!b)
		return;
	transfer_end(b);
	free(b->buf);
	free(b);
}
