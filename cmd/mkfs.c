// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool mkfs: build an ext2 image for execute-in-place from a tree.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"

static const char mkfs_usage[] = "[OPTION...] [-d DIR | --tar FILE | --oci LAYOUT[:TAG] | --oci docker://HOST/REPO[:TAG|@DIGEST]] IMAGE";

static void mkfs_progress(const struct xip_build_progress *p, void *arg)
{
	if (!cmd_progress_due(arg, p->files_done == p->files_total))
		return;
	fprintf(stderr, "\rxiptool mkfs: %" PRIu64 "/%" PRIu64
		" files, %" PRIu64 "/%" PRIu64 " MiB\033[K",
		p->files_done, p->files_total, p->bytes_done >> 20,
		p->bytes_total >> 20);
	fflush(stderr);
}

/* A warning of the build, on a line of its own (after any progress). */
static void mkfs_warn(const char *msg, void *arg)
{
	struct cmd_progress *mp = arg;

	if (mp->shown)
		fputs("\r\033[K", stderr);
	msg_warn("%s", msg);
}

static int parse_idmaps(const char *what, const char **texts,
			struct xip_idmap **maps, size_t *n)
{
	size_t count = 0;

	while (texts && texts[count])
		count++;
	*n = 0;
	*maps = count ? calloc(count, sizeof(**maps)) : NULL;
	if (count && !*maps)
		return EXIT_RUNTIME;
	for (size_t i = 0; i < count; i++)
		if (xip_idmap_parse(texts[i], &(*maps)[i]))
			return cmd_usage_error("%s: %s", what, xip_errmsg());
	*n = count;
	return EXIT_OK;
}

static int parse_epoch(const char *what, const char *text, int64_t *t)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(text, &end, 10);
	if (!*text || *end || errno || (!isdigit((unsigned char)*text) &&
					 *text != '-'))
		return cmd_usage_error("%s: invalid time '%s' (seconds since 1970)",
				       what, text);
	*t = v;
	return EXIT_OK;
}

static int parse_owner(const char *text, struct xip_build_opts *o)
{
	unsigned long long u, g;
	char *end;

	errno = 0;
	u = strtoull(text, &end, 10);
	if (!isdigit((unsigned char)*text) || *end != ':' ||
	    !isdigit((unsigned char)end[1]))
		goto bad;
	g = strtoull(end + 1, &end, 10);
	if (*end || errno || u > UINT32_MAX || g > UINT32_MAX)
		goto bad;
	o->have_owner = true;
	o->owner_uid = (uint32_t)u;
	o->owner_gid = (uint32_t)g;
	return EXIT_OK;
bad:
	return cmd_usage_error("--owner: invalid owner '%s' (expected UID:GID)",
			       text);
}

static int parse_uuid(const char *text, struct xip_build_opts *o)
{
	if (!strcmp(text, "random")) {
		o->uuid_mode = XIP_UUID_RANDOM;
	} else if (!strcmp(text, "clear")) {
		o->uuid_mode = XIP_UUID_CLEAR;
	} else {
		if (xip_uuid_parse(text, o->uuid))
			return cmd_usage_error("--uuid: %s", xip_errmsg());
		o->uuid_mode = XIP_UUID_GIVEN;
	}
	return EXIT_OK;
}

/* A signal that ends mkfs first removes its half-made temporary file. */
static void mkfs_on_signal(int sig)
{
	xip_build_signal_cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void mkfs_signals(bool cleanup)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

	cmd_catch_signals(sigs, sizeof(sigs) / sizeof(sigs[0]),
			  cleanup ? mkfs_on_signal : SIG_DFL);
}

struct mkfs_args {
	char *root, *tar, *size, *extra, *page_size, *align, *label, *uuid;
	char *timestamp, *owner, *devtable, *inodes, *oci, *platform;
	char *salt, *root_hash_file, *key, *cert, *sig_file;
	char *creds, *authfile, *tls_verify, *timeout;
	const char **uid_map, **gid_map;
	int squash, force, quiet, verity;
	uint8_t salt_bytes[XIP_VERITY_SALT_MAX];
};

static int mkfs_verity_opts(struct mkfs_args *a, struct xip_build_opts *o)
{
	int n;

	o->verity = a->verity;
	if ((a->salt || a->root_hash_file) && !a->verity)
		return cmd_usage_error("--salt and --root-hash-file need --verity");
	if ((a->key || a->cert || a->sig_file) && !a->verity)
		return cmd_usage_error("--private-key, --certificate and --signature-file need --verity");
	if (!a->key != !a->cert || (a->sig_file && !a->key))
		return cmd_usage_error("--private-key and --certificate go together (and --signature-file needs them)");
	if (!a->salt)
		return EXIT_OK;
	n = xip_hex_decode(a->salt, a->salt_bytes,
				 sizeof(a->salt_bytes));
	if (n < 0)
		return cmd_usage_error("--salt: '%s': must be 1 to %d bytes in hex digits",
				       a->salt, XIP_VERITY_SALT_MAX);
	o->salt = a->salt_bytes;
	o->salt_len = (size_t)n;
	return EXIT_OK;
}

/*
 * "root hash: HEX" on stdout, and HEX in --root-hash-file, whose new file
 * @hf was made before the image (a destination refused is refused before
 * anything is built).
 */
static int mkfs_root_hash(const struct mkfs_args *a, struct xip_outfile *hf,
			  const struct xip_build_result *r)
{
	char hex[2 * XIP_VERITY_DIGEST_MAX + 2];
	int ret;

	xip_hex_encode(r->root_hash, r->root_hash_len, hex);
	printf("root hash: %s\n", hex);
	if (!a->root_hash_file)
		return EXIT_OK;
	strcat(hex, "\n");
	ret = xip_write_all(hf->fd, hex, strlen(hex));
	if (ret) {
		xip_outfile_abort(hf);
		msg_error("%s: %s", a->root_hash_file, strerror(-ret));
		return EXIT_RUNTIME;
	}
	ret = xip_outfile_commit(hf);
	return ret ? msg_lib_error(ret) : EXIT_OK;
}

/* The signature in --signature-file, whose new file @sf was made first. */
static int mkfs_signature(const struct mkfs_args *a, struct xip_outfile *sf,
			  const struct xip_build_result *r)
{
	int ret;

	if (!a->sig_file)
		return EXIT_OK;
	ret = xip_write_all(sf->fd, r->signature, r->signature_len);
	if (ret) {
		xip_outfile_abort(sf);
		msg_error("%s: %s", cmd_esc(a->sig_file), strerror(-ret));
		return EXIT_RUNTIME;
	}
	ret = xip_outfile_commit(sf);
	return ret ? msg_lib_error(ret) : EXIT_OK;
}

/*
 * What is opened before anything is built: the signing key and
 * certificate, the --root-hash-file and --signature-file destinations.
 */
static int mkfs_prepare(const struct mkfs_args *a, struct xip_build_opts *o,
			struct xip_verity_signer **signer,
			struct xip_outfile *hf, struct xip_outfile *sf)
{
	int ret = 0;

	if (a->key)
		ret = xip_verity_signer_load(a->key, a->cert, signer);
	o->signer = *signer;
	if (!ret && a->root_hash_file)
		ret = xip_outfile_open(hf, a->root_hash_file, 0);
	if (!ret && a->sig_file) {
		ret = xip_outfile_open(sf, a->sig_file, 0);
		if (ret && a->root_hash_file)
			xip_outfile_abort(hf);
	}
	return ret ? msg_lib_error(ret) : EXIT_OK;
}

static int mkfs_sizes(const struct mkfs_args *a, struct xip_build_opts *o)
{
	uint64_t v;
	int rc;

	if (a->size && (rc = cmd_parse_size("--size", a->size, &o->size)))
		return rc;
	if (a->extra && (rc = cmd_parse_size("--extra", a->extra, &o->extra)))
		return rc;
	if (a->align && (rc = cmd_parse_size("--align", a->align, &o->align)))
		return rc;
	if (a->page_size) {
		rc = cmd_parse_size("--page-size", a->page_size, &v);
		if (rc)
			return rc;
		if (v != 4096 && v != 16384 && v != 65536)
			return cmd_usage_error("--page-size: %s: must be 4096, 16384 or 65536",
					       a->page_size);
		o->block_size = (unsigned int)v;
	}
	if (o->align && (o->align & (o->align - 1)))
		return cmd_usage_error("--align: %s: must be a power of two",
				       a->align);
	if (a->inodes &&
	    (rc = cmd_parse_count("--inodes", a->inodes, UINT32_MAX,
				  &o->inodes)))
		return rc;
	if (o->size && o->extra)
		return cmd_usage_error("--extra only applies to a computed size (without --size)");
	return EXIT_OK;
}

/* --creds, --authfile, --tls-verify, --timeout: for docker:// only */
static int mkfs_registry_opts(const struct mkfs_args *a,
			      struct xip_oci_client_opts *r)
{
	if ((a->creds || a->authfile || a->tls_verify || a->timeout) &&
	    !(a->oci && xip_oci_is_remote(a->oci)))
		return cmd_usage_error("--creds, --authfile, --tls-verify and --timeout only apply to --oci docker://...");
	if (a->oci && xip_oci_is_remote(a->oci)) {
		struct xip_oci_ref ref;

		if (xip_oci_ref_parse(a->oci, &ref))
			return cmd_usage_error("%s", xip_errmsg());
		xip_oci_ref_free(&ref);
	}
	return cmd_registry_opts(a->creds, a->authfile, a->tls_verify,
				 a->timeout, r);
}

static int mkfs_opts(struct mkfs_args *a, struct xip_build_opts *o,
		     struct xip_idmap **um, struct xip_idmap **gm)
{
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	int rc;

	o->source = a->root;
	o->tar = a->tar;
	if (!!a->root + !!a->tar + !!a->oci > 1)
		return cmd_usage_error("-d, --tar and --oci exclude each other");
	if (a->platform && !a->oci)
		return cmd_usage_error("--platform only applies to --oci");
	o->label = a->label;
	o->device_table = a->devtable;
	o->squash = a->squash;
	o->force = a->force;
	rc = mkfs_sizes(a, o);
	if (!rc)
		rc = mkfs_verity_opts(a, o);
	if (!rc && a->uuid)
		rc = parse_uuid(a->uuid, o);
	if (!rc && a->owner)
		rc = parse_owner(a->owner, o);
	if (!rc && a->timestamp)
		rc = parse_epoch("--timestamp", a->timestamp, &o->timestamp);
	else if (!rc && sde && *sde)
		rc = parse_epoch("SOURCE_DATE_EPOCH", sde, &o->timestamp);
	o->have_timestamp = !rc && (a->timestamp || (sde && *sde));
	if (!rc)
		rc = parse_idmaps("--uid-map", a->uid_map, um, &o->n_uid_map);
	if (!rc)
		rc = parse_idmaps("--gid-map", a->gid_map, gm, &o->n_gid_map);
	o->uid_map = *um;
	o->gid_map = *gm;
	if (!rc && o->label && strlen(o->label) > EXT2_LABEL_LEN)
		rc = cmd_usage_error("--label: '%s' is longer than %d bytes",
				     o->label, EXT2_LABEL_LEN);
	if (!rc && (o->squash + o->have_owner +
		    (o->n_uid_map || o->n_gid_map)) > 1)
		rc = cmd_usage_error("--squash, --owner and --uid-map/--gid-map exclude each other");
	return rc;
}

static void mkfs_report(const char *image, const struct xip_build_result *r)
{
	printf("%s: %" PRIu64 " files (%" PRIu64 " bytes), %" PRIu64
	       " bytes: %" PRIu64 " blocks of %u (%" PRIu64 " used), %"
	       PRIu64 " inodes (%" PRIu64 " used)\n",
	       image, r->files, r->bytes, r->size, r->blocks, r->block_size,
	       r->blocks_used, r->inodes, r->inodes_used);
}

int cmd_mkfs(int argc, const char **argv)
{
	struct xip_idmap *um = NULL, *gm = NULL;
	struct xip_build_opts o = { 0 };
	struct xip_oci_client_opts reg = { 0 };
	struct xip_build_result res;
	struct mkfs_args a = { 0 };
	struct xip_outfile hf, sf;
	struct xip_verity_signer *signer = NULL;
	struct cmd_progress mp = { 0 };
	struct cmd_args args = { 0 };
	int rc = EXIT_OK, ret;
	const struct poptOption options[] = {
		{ "root", 'd', POPT_ARG_STRING, &a.root, 0,
		  "copy the tree DIR into the image", "DIR" },
		{ "size", 's', POPT_ARG_STRING, &a.size, 0,
		  "image size (K, M, G, T suffixes); default: computed",
		  "SIZE" },
		{ "extra", '\0', POPT_ARG_STRING, &a.extra, 0,
		  "free space to add to the computed size", "SIZE" },
		{ "tar", '\0', POPT_ARG_STRING, &a.tar, 0,
		  "copy the tree of a tar archive (GNU, pax, ustar; gzip, xz, zstd); - for stdin",
		  "FILE" },
		{ "oci", '\0', POPT_ARG_STRING, &a.oci, 0,
		  "copy the tree of an OCI image layout or of an image in a registry (docker://HOST[:PORT]/REPO[:TAG|@DIGEST]), its layers applied (TAG: the layout's only image, the registry's latest, when not given)",
		  "LAYOUT[:TAG]|docker://REF" },
		{ "creds", '\0', POPT_ARG_STRING, &a.creds, 0,
		  "credentials for the registry of --oci docker://",
		  "USER:PASSWORD" },
		{ "authfile", '\0', POPT_ARG_STRING, &a.authfile, 0,
		  "the registry's credentials from this auth.json; default: $REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json, ~/.docker/config.json",
		  "FILE" },
		{ "tls-verify", '\0', POPT_ARG_STRING, &a.tls_verify, 0,
		  "false: allow plain HTTP and unverified certificates (test registries); default: true",
		  "BOOL" },
		{ "timeout", '\0', POPT_ARG_STRING, &a.timeout, 0,
		  "give up on a registry that sends nothing for SECONDS (default: 30)",
		  "SECONDS" },
		{ "platform", '\0', POPT_ARG_STRING, &a.platform, 0,
		  "the image of a multi-platform OCI index for OS/ARCH[/VARIANT]; default: this host's",
		  "OS/ARCH" },
		{ "inodes", 'N', POPT_ARG_STRING, &a.inodes, 0,
		  "number of inodes; default: computed", "N" },
		{ "page-size", '\0', POPT_ARG_STRING, &a.page_size, 0,
		  "page size of the target, used as block size (4096, 16384, 65536); default: this host's",
		  "SIZE" },
		{ "align", '\0', POPT_ARG_STRING, &a.align, 0,
		  "start files of SIZE bytes or more on a SIZE boundary (e.g. 2M)",
		  "SIZE" },
		{ "label", 'L', POPT_ARG_STRING, &a.label, 0,
		  "file system label (at most 16 bytes)", "LABEL" },
		{ "uuid", 'U', POPT_ARG_STRING, &a.uuid, 0,
		  "UUID, 'random' or 'clear'; default: derived from the tree",
		  "UUID" },
		{ "timestamp", '\0', POPT_ARG_STRING, &a.timestamp, 0,
		  "clamp every time to EPOCH; default: $SOURCE_DATE_EPOCH",
		  "EPOCH" },
		{ "squash", '\0', POPT_ARG_NONE, &a.squash, 0,
		  "make every file owned by root:root", NULL },
		{ "owner", '\0', POPT_ARG_STRING, &a.owner, 0,
		  "make every file owned by UID:GID", "UID:GID" },
		{ "uid-map", '\0', POPT_ARG_ARGV, &a.uid_map, 0,
		  "map source uids FROM.. to TO.. (repeatable)",
		  "FROM:TO[:COUNT]" },
		{ "gid-map", '\0', POPT_ARG_ARGV, &a.gid_map, 0,
		  "map source gids FROM.. to TO.. (repeatable)",
		  "FROM:TO[:COUNT]" },
		{ "devtable", 'D', POPT_ARG_STRING, &a.devtable, 0,
		  "add device nodes, set modes and owners from a genext2fs device table",
		  "FILE" },
		{ "force", 'f', POPT_ARG_NONE, &a.force, 0,
		  "overwrite an existing non-empty image or an in-use device",
		  NULL },
		{ "quiet", 'q', POPT_ARG_NONE, &a.quiet, 0,
		  "print no progress and no summary", NULL },
		{ "verity", '\0', POPT_ARG_NONE, &a.verity, 0,
		  "append a dm-verity hash tree (sha256) after the file system and print its root hash",
		  NULL },
		{ "salt", '\0', POPT_ARG_STRING, &a.salt, 0,
		  "the verity salt; default: derived with $SOURCE_DATE_EPOCH, else random",
		  "HEX" },
		{ "root-hash-file", '\0', POPT_ARG_STRING, &a.root_hash_file, 0,
		  "also write the root hash to FILE", "FILE" },
		{ "private-key", '\0', POPT_ARG_STRING, &a.key, 0,
		  "sign the root hash with this PEM private key (PKCS#7, after the tree)",
		  "KEY" },
		{ "certificate", '\0', POPT_ARG_STRING, &a.cert, 0,
		  "the PEM certificate of the private key", "CERT" },
		{ "signature-file", '\0', POPT_ARG_STRING, &a.sig_file, 0,
		  "also write the signature (DER) to FILE", "FILE" },
		POPT_TABLEEND
	};

	cmd_parse(argc, argv, options, mkfs_usage, 1, 2, &args);
	if (args.argc == 2) {
		/* mkfs.erofs' order, IMAGE DIR: the tree is given with -d */
		struct stat st;

		if (!a.root && !a.tar && !a.oci &&
		    !stat(args.argv[1], &st) && S_ISDIR(st.st_mode))
			rc = cmd_usage_error("too many arguments: give the tree with -d (xiptool mkfs -d %s %s)",
					     cmd_esc(args.argv[1]),
					     cmd_esc(args.argv[0]));
		else
			rc = cmd_usage_error("too many arguments (usage: xiptool mkfs %s)",
					     mkfs_usage);
		goto out;
	}
	rc = mkfs_opts(&a, &o, &um, &gm);
	if (!rc)
		rc = mkfs_registry_opts(&a, &reg);
	if (rc)
		goto out;
	o.registry = &reg;
	if (reg.insecure)
		msg_warn("%s: --tls-verify=false: plain HTTP and unverified certificates allowed",
			 cmd_esc(a.oci));
	o.warn = mkfs_warn;
	o.warn_arg = &mp;
	if (!a.quiet && !opt_quiet && isatty(STDERR_FILENO)) {
		o.progress = mkfs_progress;
		o.progress_arg = &mp;
	}
	rc = mkfs_prepare(&a, &o, &signer, &hf, &sf);
	if (rc)
		goto out;
	mkfs_signals(true);
	ret = a.oci ? xip_build_oci(args.argv[0], a.oci, a.platform, &o, &res) :
	      xip_build(args.argv[0], &o, &res);
	mkfs_signals(false);
	if (mp.shown)
		fputs("\r\033[K", stderr);
	if (ret)
		rc = msg_lib_error(ret);
	else if (!a.quiet && !opt_quiet)
		mkfs_report(args.argv[0], &res);
	if (!ret && o.verity)
		rc = mkfs_root_hash(&a, &hf, &res);
	else if (a.root_hash_file)
		xip_outfile_abort(&hf);
	if (!ret && !rc)
		rc = mkfs_signature(&a, &sf, &res);
	else if (a.sig_file)
		xip_outfile_abort(&sf);
	if (!ret)
		free(res.signature);
out:
	xip_verity_signer_free(signer);
	free(a.key);
	free(a.cert);
	free(a.sig_file);
	free(um);
	free(gm);
	free(a.root);
	free(a.tar);
	free(a.oci);
	free(a.platform);
	free(a.inodes);
	free(a.size);
	free(a.extra);
	free(a.page_size);
	free(a.align);
	free(a.label);
	free(a.uuid);
	free(a.timestamp);
	free(a.owner);
	free(a.devtable);
	free(a.salt);
	free(a.root_hash_file);
	free(a.creds);
	free(a.authfile);
	free(a.tls_verify);
	free(a.timeout);
	if (a.uid_map)
		for (size_t i = 0; a.uid_map[i]; i++)
			free((void *)a.uid_map[i]);
	if (a.gid_map)
		for (size_t i = 0; a.gid_map[i]; i++)
			free((void *)a.gid_map[i]);
	free(a.uid_map);
	free(a.gid_map);
	cmd_args_free(&args);
	return rc;
}
