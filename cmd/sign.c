// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool sign: sign the root hash of a verity image (or sign it again),
 * its signature block after the tree; the file system and the tree are
 * left as they are.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static const char sign_usage[] =
	"--private-key KEY --certificate CERT [--signature-file FILE] IMAGE";

static int sign_run(const char *image, const char *key, const char *cert,
		    const char *sig_file)
{
	struct xip_verity_signer *signer = NULL;
	struct xip_outfile sf;
	uint8_t *der = NULL;
	size_t der_len = 0;
	int ret;

	ret = xip_verity_signer_load(key, cert, &signer);
	if (ret)
		return msg_lib_error(ret);
	if (sig_file) {
		ret = xip_outfile_open(&sf, sig_file, 0);
		if (ret) {
			xip_verity_signer_free(signer);
			return msg_lib_error(ret);
		}
	}
	ret = xip_verity_sign_image(image, signer, &der, &der_len);
	xip_verity_signer_free(signer);
	if (!ret && sig_file) {
		ret = xip_write_all(sf.fd, der, der_len);
		if (ret)
			xip_error(ret, "%s: %s", sig_file, strerror(-ret));
		else
			ret = xip_outfile_commit(&sf);
	}
	if (ret && sig_file)
		xip_outfile_abort(&sf);
	free(der);
	if (ret)
		return msg_lib_error(ret);
	if (!opt_quiet)
		printf("%s: signed (%zu bytes of signature)\n", image, der_len);
	return EXIT_OK;
}

int cmd_sign(int argc, const char **argv)
{
	char *key = NULL, *cert = NULL, *sig_file = NULL;
	struct cmd_args args;
	int rc;
	const struct poptOption options[] = {
		{ "private-key", '\0', POPT_ARG_STRING, &key, 0,
		  "sign with this PEM private key", "KEY" },
		{ "certificate", '\0', POPT_ARG_STRING, &cert, 0,
		  "the PEM certificate of the private key", "CERT" },
		{ "signature-file", '\0', POPT_ARG_STRING, &sig_file, 0,
		  "also write the signature (DER) to FILE", "FILE" },
		POPT_TABLEEND
	};

	cmd_parse(argc, argv, options, sign_usage, 1, 1, &args);
	if (!key || !cert)
		rc = cmd_usage_error("--private-key and --certificate are required");
	else
		rc = sign_run(args.argv[0], key, cert, sig_file);
	cmd_args_free(&args);
	free(key);
	free(cert);
	free(sig_file);
	return rc;
}
