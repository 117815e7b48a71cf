// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Registry credentials: WWW-Authenticate challenges (RFC 7235: a scheme,
 * then name=value parameters, values tokens or quoted strings), the auth
 * files of containers-auth.json(5) and docker's config.json, and the
 * token server's answer of the token flow (distribution's token spec).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ext2fs/ext2fs.h>

#include "oci/xip_oci.h"
#include "oci/oci_int.h"
#include "util/xip_error.h"
#include "util/xip_lazy.h"
#include "util/xip_util.h"

#include <json-c/json.h>

/* an auth file or a token answer: a few KiB in practice */
#define AUTH_JSON_MAX (1u << 20)
#define AUTH_DEPTH_MAX 16
#define PARAM_MAX 4096

/* ---- base64 (RFC 4648, with padding) ----------------------------------- */

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *xip_oci_base64(const char *s, size_t len)
{
	char *out = malloc(4 * ((len + 2) / 3) + 1), *o = out;
	const unsigned char *p = (const unsigned char *)s;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i += 3) {
		unsigned int v = p[i] << 16;

		if (i + 1 < len)
			v |= p[i + 1] << 8;
		if (i + 2 < len)
			v |= p[i + 2];
		*o++ = b64[v >> 18];
		*o++ = b64[(v >> 12) & 63];
		*o++ = i + 1 < len ? b64[(v >> 6) & 63] : '=';
		*o++ = i + 2 < len ? b64[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* Decode @s: a new string (NUL-terminated), or NULL when not base64. */
static char *unbase64(const char *s)
{
	size_t len = strlen(s), n = 0;
	unsigned int v = 0, bits = 0;
	char *out = malloc(len / 4 * 3 + 4);

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		const char *c = s[i] ? strchr(b64, s[i]) : NULL;

		if (s[i] == '=') {
			/* padding only at the end */
			while (i < len && s[i] == '=')
				i++;
			if (i != len)
				goto bad;
			break;
		}
		if (!c)
			goto bad;
		v = (v << 6) | (unsigned int)(c - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (char)((v >> bits) & 0xff);
		}
	}
	out[n] = '\0';
	if (strlen(out) != n)
		goto bad; /* a NUL inside */
	return out;
bad:
	free(out);
	return NULL;
}

/* ---- WWW-Authenticate ---------------------------------------------------- */

void xip_oci_challenge_free(struct xip_oci_challenge *c)
{
	free(c->realm);
	free(c->service);
	free(c->scope);
	memset(c, 0, sizeof(*c));
}

static bool tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/*
 * One parameter at @p: NAME=VALUE (VALUE a token or a quoted string with
 * \-escapes) into @name and @val (at most PARAM_MAX bytes each); the
 * position after it, or NULL when malformed.
 */
static const char *param(const char *p, char *name, char *val)
{
	size_t n = 0;

	while (tchar(*p) && n < PARAM_MAX - 1)
		name[n++] = *p++;
	name[n] = '\0';
	p = skip_ws(p);
	if (!n || *p++ != '=')
		return NULL;
	p = skip_ws(p);
	n = 0;
	if (*p == '"') {
		for (p++; *p != '"'; p++) {
			if (*p == '\\')
				p++;
			if (!*p || n >= PARAM_MAX - 1)
				return NULL;
			val[n++] = *p;
		}
		p++;
	} else {
		while (tchar(*p) && n < PARAM_MAX - 1)
			val[n++] = *p++;
		if (!n)
			return NULL;
	}
	val[n] = '\0';
	return skip_ws(p);
}

static int set_param(struct xip_oci_challenge *c, const char *name,
		     const char *val)
{
	char **slot = !strcasecmp(name, "realm")     ? &c->realm
		      : !strcasecmp(name, "service") ? &c->service
		      : !strcasecmp(name, "scope")   ? &c->scope
						     : NULL;

	if (!slot)
		return 0; /* error=, charset=: not ours */
	if (*slot)
		return -EINVAL; /* twice */
	*slot = strdup(val);
	return *slot ? 0 : -ENOMEM;
}

int xip_oci_challenge_parse(const char *header, struct xip_oci_challenge *c)
{
	const char *p = skip_ws(header);
	char *name = malloc(PARAM_MAX), *val = malloc(PARAM_MAX);
	int ret = 0;

	memset(c, 0, sizeof(*c));
	if (!name || !val) {
		ret = -ENOMEM;
		goto out;
	}
	if (!strncasecmp(p, "Bearer", 6) && (p[6] == ' ' || p[6] == '\t')) {
		c->bearer = true;
		p += 6;
	} else if (!strncasecmp(p, "Basic", 5) &&
		   (p[5] == ' ' || p[5] == '\t' || !p[5])) {
		p += 5;
	} else {
		ret =
		    xip_error(-EINVAL, "WWW-Authenticate: not Basic or Bearer");
		goto out;
	}
	p = skip_ws(p);
	while (*p) {
		p = param(p, name, val);
		if (!p) {
			ret = xip_error(
			    -EINVAL, "WWW-Authenticate: malformed parameters");
			goto out;
		}
		ret = set_param(c, name, val);
		if (ret == -EINVAL)
			ret =
			    xip_error(ret, "WWW-Authenticate: %s twice", name);
		if (ret)
			goto out;
		if (*p == ',')
			p = skip_ws(p + 1);
		else if (*p) {
			ret = xip_error(
			    -EINVAL, "WWW-Authenticate: malformed parameters");
			goto out;
		}
	}
	if (c->bearer && (!c->realm || !*c->realm))
		ret = xip_error(-EINVAL,
				"WWW-Authenticate: Bearer without a realm");
out:
	free(name);
	free(val);
	if (ret)
		xip_oci_challenge_free(c);
	return ret;
}

/* ---- JSON: auth files, token answers --------------------------------------
 */

static int parse_json(const char *s, size_t len, const char *what,
		      struct json_object **out)
{
	struct json_tokener *tok;
	struct json_object *o;
	enum json_tokener_error err;
	int ret = xip_lazy_load(XIP_LAZY_JSON);

	if (ret)
		return ret;
	if (len > AUTH_JSON_MAX)
		return xip_error(-EFBIG, "%s: larger than %u bytes", what,
				 AUTH_JSON_MAX);
	tok = json_tokener_new_ex(AUTH_DEPTH_MAX);
	if (!tok)
		return -ENOMEM;
	o = json_tokener_parse_ex(tok, s, (int)len);
	err = json_tokener_get_error(tok);
	json_tokener_free(tok);
	if (!o || err != json_tokener_success ||
	    !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return xip_error(-EINVAL, "%s: not a JSON object", what);
	}
	*out = o;
	return 0;
}

static const char *member_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

int xip_oci_token_parse(const char *json, size_t len, char **token)
{
	struct json_object *o;
	const char *t;
	int ret = parse_json(json, len, "token server", &o);

	if (ret)
		return ret;
	t = member_str(o, "token");
	if (!t || !*t)
		t = member_str(o, "access_token");
	if (!t || !*t)
		ret =
		    xip_error(-EINVAL, "token server: no token in its answer");
	else if (strpbrk(t, "\r\n"))
		ret = xip_error(-EINVAL,
				"token server: a token with a line break");
	else if (!(*token = strdup(t)))
		ret = -ENOMEM;
	json_object_put(o);
	return ret;
}

/* The whole of the file @path, at most AUTH_JSON_MAX bytes. */
static int slurp(const char *path, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	ssize_t r;
	char *s;

	if (fd < 0)
		return errno == ENOENT
			   ? -ENOENT
			   : xip_error(-errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return xip_error(-EINVAL, "%s: not a regular file", path);
	}
	if ((uint64_t)st.st_size > AUTH_JSON_MAX) {
		close(fd);
		return xip_error(-EFBIG, "%s: larger than %u bytes", path,
				 AUTH_JSON_MAX);
	}
	s = malloc((size_t)st.st_size + 1);
	r = s ? xip_pread_full(fd, s, (size_t)st.st_size, 0) : -ENOMEM;
	close(fd);
	if (r < 0 || r != st.st_size) {
		free(s);
		return r == -ENOMEM ? -ENOMEM
				    : xip_error(r < 0 ? (int)r : -EIO,
						"%s: cannot read", path);
	}
	s[r] = '\0';
	*out = s;
	*len = (size_t)r;
	return 0;
}

int xip_oci_authfile_lookup(const char *path, const char *host, char **user,
			    char **pass)
{
	struct json_object *o, *auths, *e = NULL;
	const char *enc;
	char *s = NULL, *dec, *colon;
	size_t len = 0;
	int ret = slurp(path, &s, &len);

	if (ret)
		return ret;
	ret = parse_json(s, len, path, &o);
	free(s);
	if (ret)
		return ret;
	if (json_object_object_get_ex(o, "auths", &auths) &&
	    json_object_is_type(auths, json_type_object)) {
		if (!json_object_object_get_ex(auths, host, &e) &&
		    !strcmp(host, "docker.io"))
			json_object_object_get_ex(
			    auths, "https://index.docker.io/v1/", &e);
	}
	enc = member_str(e, "auth");
	if (!e || !enc) {
		json_object_put(o);
		return -ENOENT;
	}
	dec = unbase64(enc);
	json_object_put(o);
	colon = dec ? strchr(dec, ':') : NULL;
	if (!colon) {
		free(dec);
		return xip_error(
		    -EINVAL, "%s: %s: \"auth\" is not base64 of USER:PASSWORD",
		    path, host);
	}
	*colon = '\0';
	*user = strdup(dec);
	*pass = strdup(colon + 1);
	free(dec);
	if (!*user || !*pass) {
		free(*user);
		free(*pass);
		return -ENOMEM;
	}
	return 0;
}
