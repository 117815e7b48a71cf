// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool push: an image into an OCI registry as an artifact (its
 * manifest, config and layer: lib/attach/ocipush.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static const char push_usage[] =
	"[-q] [--tls-verify=false] [--creds USER:PASSWORD | --authfile FILE] [--timeout SECONDS] IMAGE docker://HOST[:PORT]/REPO:TAG";

struct push_args {
	char *creds, *authfile, *tls_verify, *timeout;
};

static int push_opts(const struct push_args *a, const char *dest,
		     struct xip_oci_client_opts *r)
{
	struct xip_oci_ref ref;
	int rc;

	if (!xip_oci_is_remote(dest))
		return cmd_usage_error("%s: expected docker://HOST/REPO:TAG",
				       dest);
	if (xip_oci_ref_parse(dest, &ref))
		return cmd_usage_error("%s", xip_errmsg());
	rc = ref.digest ? cmd_usage_error("%s: push needs a tag, not a digest",
					  dest)
			: EXIT_OK;
	xip_oci_ref_free(&ref);
	if (rc)
		return rc;
	return cmd_registry_opts(a->creds, a->authfile, a->tls_verify,
				 a->timeout, r);
}

int cmd_push(int argc, const char **argv)
{
	struct xip_oci_client_opts o = { 0 };
	struct xip_push_result r;
	struct push_args a = { 0 };
	struct cmd_args args;
	int rc, ret, quiet = 0;
	const struct poptOption options[] = {
		{ "quiet", 'q', POPT_ARG_NONE, &quiet, 0,
		  "print nothing on success", NULL },
		{ "creds", '\0', POPT_ARG_STRING, &a.creds, 0,
		  "credentials for the registry", "USER:PASSWORD" },
		{ "authfile", '\0', POPT_ARG_STRING, &a.authfile, 0,
		  "the registry's credentials from this auth.json; default: $REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json, ~/.docker/config.json",
		  "FILE" },
		{ "tls-verify", '\0', POPT_ARG_STRING, &a.tls_verify, 0,
		  "false: allow plain HTTP and unverified certificates (test registries); default: true",
		  "BOOL" },
		{ "timeout", '\0', POPT_ARG_STRING, &a.timeout, 0,
		  "give up on a registry silent for that long (default: 30)",
		  "SECONDS" },
		POPT_TABLEEND
	};

	cmd_parse(argc, argv, options, push_usage, 2, 2, &args);
	rc = push_opts(&a, args.argv[1], &o);
	if (!rc) {
		ret = xip_push(args.argv[0], args.argv[1], &o, &r);
		if (ret)
			rc = msg_lib_error(ret);
		else if (!quiet && !opt_quiet)
			printf("%s: pushed to %s (%s; %u blob%s sent, %u already there)\n",
			       args.argv[0], args.argv[1], r.digest, r.uploaded,
			       r.uploaded == 1 ? "" : "s", r.skipped);
	}
	cmd_args_free(&args);
	free(a.creds);
	free(a.authfile);
	free(a.tls_verify);
	free(a.timeout);
	return rc;
}
