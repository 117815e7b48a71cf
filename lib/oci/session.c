// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A registry client made and freed: the reference's host and repository,
 * the credentials (--creds, an auth file, the containers' and docker's
 * auth files), the deadline, libcurl's multi handle.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oci/xip_oci.h"
#include "oci/oci_int.h"
#include "util/xip_error.h"
#include "util/xip_lazy.h"
#include "util/xip_util.h"

const char *xip_oci_client_name(const struct xip_oci_client *c)
{
	return c->name;
}

/* ---- the client
 * ---------------------------------------------------------------- */

static int creds_from_files(struct xip_oci_client *c, const char *host,
			    const char *given)
{
	const char *env = getenv("REGISTRY_AUTH_FILE");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	const char *home = getenv("HOME");
	char xdgf[4096], dockf[4096];
	const char *files[3];
	size_t n = 0;
	int ret = -ENOENT;

	if (given) {
		files[n++] = given;
	} else {
		if (env && *env)
			files[n++] = env;
		if (xdg && *xdg) {
			snprintf(xdgf, sizeof(xdgf), "%s/containers/auth.json",
				 xdg);
			files[n++] = xdgf;
		}
		if (home && *home) {
			snprintf(dockf, sizeof(dockf), "%s/.docker/config.json",
				 home);
			files[n++] = dockf;
		}
	}
	for (size_t i = 0; i < n && ret == -ENOENT; i++)
		ret =
		    xip_oci_authfile_lookup(files[i], host, &c->user, &c->pass);
	if (ret == -ENOENT && given)
		return xip_error(-ENOENT, "%s: no credentials for %s", given,
				 host);
	return ret == -ENOENT ? 0 : ret;
}

int xip_oci_client_new(const struct xip_oci_ref *ref,
		       const struct xip_oci_client_opts *o,
		       struct xip_oci_client **out)
{
	struct xip_oci_client *c;
	int ret;

	ret = xip_lazy_load(XIP_LAZY_CURL);
	if (ret)
		return ret;
	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		return xip_error(-ENOMEM, "libcurl: cannot initialize");
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->insecure = o->insecure;
	c->push = o->push;
	c->timeout = o->timeout ? o->timeout : TIMEOUT_DEFAULT;
	c->host =
	    strdup(strcmp(ref->host, "docker.io") ? ref->host
						  : "registry-1.docker.io");
	c->repo = strdup(ref->repo);
	if (asprintf(&c->name, "%s%s/%s", XIP_OCI_PREFIX, ref->host,
		     ref->repo) < 0)
		c->name = NULL;
	c->multi = curl_multi_init();
	ret = !c->host || !c->repo || !c->name || !c->multi ? -ENOMEM : 0;
	if (!ret && o->creds) {
		const char *colon = strchr(o->creds, ':');

		if (!colon || colon == o->creds)
			ret = xip_error(-EINVAL,
					"credentials: expected USER:PASSWORD");
		else if (!(c->user =
			       strndup(o->creds, (size_t)(colon - o->creds))) ||
			 !(c->pass = strdup(colon + 1)))
			ret = -ENOMEM;
	} else if (!ret) {
		ret = creds_from_files(c, ref->host, o->authfile);
	}
	if (ret) {
		xip_oci_client_free(c);
		return ret;
	}
	*out = c;
	return 0;
}

void xip_oci_client_free(struct xip_oci_client *c)
{
	if (!c)
		return;
	if (c->multi)
		curl_multi_cleanup(c->multi);
	free(c->name);
	free(c->host);
	free(c->repo);
	free(c->user);
	if (c->pass)
		explicit_bzero(c->pass, strlen(c->pass));
	free(c->pass);
	if (c->auth)
		explicit_bzero(c->auth, strlen(c->auth));
	free(c->auth);
	free(c);
}
