// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool attach, detach, list and save: named memory segments filled
 * from images, optionally behind a kernel loop device.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <libsmartcols.h>

#include "cmd.h"

/* ---- attach -------------------------------------------------------------- */

static const char attach_usage[] =
	"[-n NAME] [-t TYPE] [--loop] [--file PATH] [--hugepages] [--size SIZE] [--raw] [--timeout SECONDS] [--root-hash HEX|--root-hash-file FILE] [--trust PATH] [--root-hash-signature FILE] [--populate WHEN] [--lazy] [--tls-verify=false] [--creds USER:PASSWORD|--authfile FILE] [IMAGE|NBD-URI|docker://HOST/REPO:TAG|@sha256:DIGEST]";

/* A pull from an NBD server: MiB done, on a TTY. */
static void pull_progress(void *arg, uint64_t done, uint64_t total)
{
	if (!cmd_progress_due(arg, done == total))
		return;
	fprintf(stderr, "\rxiptool attach: %llu/%llu MiB\033[K",
		(unsigned long long)(done >> 20),
		(unsigned long long)(total >> 20));
	fflush(stderr);
}

/*
 * Which options of attach go together: the one place that words them
 * (the library refuses the same requests in its own terms, for its
 * other callers).
 */
static int attach_check_args(const struct xip_attach_opts *o)
{
	bool nodata = o->type == XIP_SEGTYPE_SN || o->type == XIP_SEGTYPE_EN;
	const char *t = xip_seg_type_name(o->type);
	const char *v = o->root_hash ? "--root-hash" : "--trust";

	if (o->name && xip_registry_name_check(o->name))
		return cmd_usage_error("--name%s%.70s: %s",
				       *o->name ? " " : "", o->name,
				       xip_errmsg());
	if (!nodata && !o->image)
		return cmd_usage_error("missing IMAGE (only types sn and en take none)");
	if (nodata && o->image)
		return cmd_usage_error("type %s holds no data: give --size, not an image", t);
	if (nodata && !o->size)
		return cmd_usage_error("type %s needs --size", t);
	if (nodata && !o->name)
		return cmd_usage_error("type %s needs --name", t);
	if (nodata && o->file)
		return cmd_usage_error("--file needs an image");
	if (nodata && o->raw)
		return cmd_usage_error("--raw needs an image");
	if ((o->root_hash || o->trust) && o->type &&
	    (nodata || xip_seg_type_writable(o->type)))
		return cmd_usage_error("%s: type %s cannot be verified (only sr and er)",
				       v, t);
	if ((o->root_hash || o->trust) && o->raw)
		return cmd_usage_error("%s and --raw exclude each other", v);
	if ((o->root_hash || o->trust) && o->hugepages)
		return cmd_usage_error("%s and --hugepages exclude each other: hugetlbfs cannot seal a verified segment (no immutable flag)",
				       v);
	if (o->root_hash_sig && !o->trust)
		return cmd_usage_error("--root-hash-signature needs --trust PATH (no default trust store %s)",
				       XIP_VERITY_TRUST_DIR);
	if (o->lazy && !xip_nbd_is_uri(o->image))
		return cmd_usage_error("--lazy needs an NBD URI (nbd://, nbd+unix://)");
	if (o->lazy && o->trust)
		return cmd_usage_error("--lazy and --trust exclude each other: a lazy segment is checked against --root-hash");
	if (o->lazy && (o->loop || o->file))
		return cmd_usage_error("--lazy and --loop exclude each other: a loop device needs the whole image");
	if (o->lazy && o->hugepages)
		return cmd_usage_error("--lazy and --hugepages exclude each other: hugetlbfs files are filled through their mapping");
	if (o->lazy && o->type && xip_seg_type_writable(o->type))
		return cmd_usage_error("--lazy: type %s is writable: only sr and er segments are filled lazily",
				       t);
	return EXIT_OK;
}

/*
 * Root's attach admits only what the policy file's attach rule says
 * (xiptool.conf(5)), judged by xip_attach(); other users are not bound.
 * A policy file that cannot be read or parsed is a runtime failure.
 */
static int attach_policy(struct xip_policy **policy,
			 struct xip_attach_opts *o)
{
	int ret;

	if (geteuid() != 0)
		return EXIT_OK;
	*policy = malloc(sizeof(**policy));
	ret = *policy ? xip_policy_load(*policy) :
			xip_error(-ENOMEM, "out of memory");
	if (ret)
		return msg_lib_error(ret);
	o->policy = *policy;
	/*
	 * A rule that asks for a verified segment, an attach that names no
	 * way to verify it: the default trust store, when there is one,
	 * vouches for a signed image (attach --trust without the path)
	 */
	if ((*policy)->attach.level >= XIP_POLICY_VERIFIED && !o->root_hash &&
	    !o->trust && !o->raw && !o->lazy) {
		o->trust = xip_verity_trust_default();
		if (o->trust)
			return attach_check_args(o);
	}
	return EXIT_OK;
}

int cmd_attach(int argc, const char **argv)
{
	struct xip_attach_opts o = { 0 };
	struct xip_policy *policy = NULL;
	struct cmd_progress pp = { 0 };
	struct xip_seg_entry *e;
	char *name = NULL, *type = NULL, *size = NULL, *file = NULL;
	char *timeout = NULL, *root = NULL, *root_file = NULL, *populate = NULL;
	char *trust = NULL, *sig = NULL;
	char *creds = NULL, *authfile = NULL, *tls_verify = NULL;
	struct xip_oci_client_opts oci = { 0 };
	uint8_t root_bytes[XIP_VERITY_DIGEST_MAX];
	uint64_t secs;
	int loop = 0, huge = 0, raw = 0, lazy = 0, rc = EXIT_OK, ret;
	struct cmd_args args;
	const struct poptOption options[] = {
		{ "name", 'n', POPT_ARG_STRING, &name, 0,
		  "name of the segment (default: from the image's name)",
		  "NAME" },
		{ "type", 't', POPT_ARG_STRING, &type, 0,
		  "sr (default), sw, er, ew, sn or en", "TYPE" },
		{ "loop", '\0', POPT_ARG_NONE, &loop, 0,
		  "bind a loop device and print its name", NULL },
		{ "file", '\0', POPT_ARG_STRING, &file, 0,
		  "bind this contiguous file of the image as the loop device",
		  "PATH" },
		{ "hugepages", 'H', POPT_ARG_NONE, &huge, 0,
		  "back the segment by huge pages (hugetlbfs)", NULL },
		{ "size", 's', POPT_ARG_STRING, &size, 0,
		  "segment size (sn, en; at least the image otherwise), a hard limit",
		  "SIZE" },
		{ "raw", '\0', POPT_ARG_NONE, &raw, 0,
		  "attach any bytes, not only an ext2 image", NULL },
		{ "timeout", 0, POPT_ARG_STRING, &timeout, 0,
		  "nbd://, docker://: give up on a server silent this long (default 60, 30)",
		  "SECONDS" },
		{ "root-hash", 0, POPT_ARG_STRING, &root, 0,
		  "admit only the bytes of the image's dm-verity tree with this root hash, then seal the segment",
		  "HEX" },
		{ "root-hash-file", 0, POPT_ARG_STRING, &root_file, 0,
		  "the same, the root hash read from FILE (as mkfs writes it)",
		  "FILE" },
		{ "trust", 0, POPT_ARG_STRING, &trust, 0,
		  "check the image's root hash signature against the certificates of PATH (a PEM file or a directory), then admit it against the signed root hash and seal it",
		  "PATH" },
		{ "root-hash-signature", 0, POPT_ARG_STRING, &sig, 0,
		  "a detached signature of the root hash (DER or PEM) in place of the image's (the trust store: --trust, else the default)",
		  "FILE" },
		{ "populate", 0, POPT_ARG_STRING, &populate, 0,
		  "auto (default: measured here), always or never: exec maps a program's read-only pages at once",
		  "WHEN" },
		{ "lazy", 0, POPT_ARG_NONE, &lazy, 0,
		  "nbd://: return once the metadata (and the tree) are in; a filler pulls the rest",
		  NULL },
		{ "creds", '\0', POPT_ARG_STRING, &creds, 0,
		  "docker://: credentials for the registry", "USER:PASSWORD" },
		{ "authfile", '\0', POPT_ARG_STRING, &authfile, 0,
		  "docker://: the registry's credentials from this auth.json",
		  "FILE" },
		{ "tls-verify", '\0', POPT_ARG_STRING, &tls_verify, 0,
		  "docker://: false allows plain HTTP and unverified certificates (test registries); default: true",
		  "BOOL" },
		POPT_TABLEEND
	};

	cmd_parse(argc, argv, options, attach_usage, 0, 1, &args);
	o.lazy = lazy;
	o.image = args.argc ? args.argv[0] : NULL;
	o.name = name;
	o.loop = loop;
	o.hugepages = huge;
	o.file = file;
	o.raw = raw;
	if (type && xip_seg_type_parse(type, &o.type))
		rc = cmd_usage_error("--type: %s", xip_errmsg());
	if (!rc && size)
		rc = cmd_parse_size("--size", size, &o.size);
	if (!rc && timeout) {
		rc = cmd_parse_count("--timeout", timeout, 86400, &secs);
		if (!rc && !secs)
			rc = cmd_usage_error("--timeout: must be at least 1");
		o.timeout_ms = (unsigned int)secs * 1000;
		oci.timeout = (unsigned int)secs;
	}
	if (!rc && (creds || authfile || tls_verify) &&
	    !xip_oci_is_remote(o.image))
		rc = cmd_usage_error("--creds, --authfile and --tls-verify only apply to docker://...");
	if (!rc)
		rc = cmd_registry_opts(creds, authfile, tls_verify, NULL, &oci);
	if (!rc && xip_oci_is_remote(o.image)) {
		struct xip_oci_ref ref;

		if (xip_oci_ref_parse(o.image, &ref))
			rc = cmd_usage_error("%s", xip_errmsg());
		else
			xip_oci_ref_free(&ref);
		o.oci = &oci;
	}
	if (!rc && populate) {
		if (!strcmp(populate, "auto"))
			o.populate = XIP_POPULATE_AUTO;
		else if (!strcmp(populate, "always"))
			o.populate = XIP_POPULATE_ALWAYS;
		else if (!strcmp(populate, "never"))
			o.populate = XIP_POPULATE_NEVER;
		else
			rc = cmd_usage_error("--populate: '%s': expected auto,"
					     " always or never", populate);
	}
	if (!rc)
		rc = cmd_root_hash(root, root_file, root_bytes,
				   sizeof(root_bytes), &o.root_hash_len);
	if (!rc && o.root_hash_len)
		o.root_hash = root_bytes;
	o.trust = trust;
	o.root_hash_sig = sig;
	if (sig && !trust)
		o.trust = xip_verity_trust_default();
	if (!rc)
		rc = attach_check_args(&o);
	if (!rc)
		rc = attach_policy(&policy, &o);
	if (rc)
		goto out;
	e = malloc(sizeof(*e));
	if (xip_nbd_is_uri(o.image) || xip_oci_is_remote(o.image) ||
	    o.root_hash || o.trust)
		/* a long pull or check stops cleanly, leaving nothing behind */
		cmd_catch_stop_signals();
	if (xip_nbd_is_uri(o.image)) {
		if (!opt_quiet && isatty(STDERR_FILENO))
			xip_nbd_set_progress(pull_progress, &pp);
	}
	ret = e ? xip_attach(&o, e) : xip_error(-ENOMEM, "out of memory");
	xip_nbd_set_progress(NULL, NULL);
	if (pp.shown)
		fputs("\r\033[K", stderr);
	if (!ret)
		msg_verbose("%s: %llu bytes of %s (%s%s) in %s", e->name,
			    (unsigned long long)e->size,
			    e->image[0] ? e->image : "zeros",
			    xip_seg_type_name(e->type),
			    e->compressed ? ", gzip" : "", e->path);
	if (ret && o.loop && (ret == -EACCES || ret == -EPERM) &&
	    geteuid() != 0 && strstr(xip_errmsg(), "/dev/loop")) {
		/* the kernel's loop devices are root's */
		msg_error("%s: --loop needs root (binding a loop device); a plain attach, without --loop, works for any user",
			  xip_errmsg());
		rc = EXIT_RUNTIME;
	} else if (ret)
		rc = cmd_stop_status(msg_lib_error(ret));
	else if (e->loop[0])
		printf("%s %s\n", e->name, e->loop);
	else
		printf("%s\n", e->name);
	free(e);
out:
	free(name);
	free(type);
	free(size);
	free(file);
	free(timeout);
	free(root);
	free(root_file);
	free(populate);
	free(trust);
	free(sig);
	free(creds);
	free(authfile);
	free(tls_verify);
	free(policy);
	cmd_args_free(&args);
	return rc;
}

/* ---- detach -------------------------------------------------------------- */

static const char detach_usage[] =
	"[--save IMAGE] [--force] NAME|UID:NAME|USER:NAME|/dev/loopN... | --all";

static int detach_all(const char *save, int flags)
{
	struct xip_seg_entry *all;
	int rc = EXIT_OK, ret;
	size_t n;

	ret = xip_registry_list(&all, &n);
	if (ret)
		return msg_lib_error(ret);
	for (size_t i = 0; i < n; i++) {
		ret = xip_detach(all[i].name, save, flags);
		if (ret)
			rc = msg_lib_error(ret);
	}
	free(all);
	return rc;
}

int cmd_detach(int argc, const char **argv)
{
	char *save = NULL;
	int force = 0, all = 0, rc = EXIT_OK, ret;
	struct cmd_args args;
	const struct poptOption options[] = {
		{ "save", '\0', POPT_ARG_STRING, &save, 0,
		  "write the segment to an image file first (atomically)",
		  "IMAGE" },
		{ "force", 'f', POPT_ARG_NONE, &force, 0,
		  "detach even while mounted or held by a running program",
		  NULL },
		{ "all", 'a', POPT_ARG_NONE, &all, 0,
		  "detach every attached segment", NULL },
		POPT_TABLEEND
	};

	cmd_parse(argc, argv, options, detach_usage, 0, -1, &args);
	if (all && args.argc)
		rc = cmd_usage_error("--all takes no segment names");
	else if (!all && !args.argc)
		rc = cmd_usage_error("missing NAME (or --all)");
	else if (save && (all || args.argc > 1))
		rc = cmd_usage_error("--save takes one segment");
	if (rc)
		goto out;
	if (all) {
		rc = detach_all(save, force ? XIP_DETACH_FORCE : 0);
		goto out;
	}
	for (int i = 0; i < args.argc; i++) {
		ret = xip_detach(args.argv[i], save,
				 force ? XIP_DETACH_FORCE : 0);
		if (ret)
			rc = msg_lib_error(ret);
	}
out:
	free(save);
	cmd_args_free(&args);
	return rc;
}

/* ---- save ---------------------------------------------------------------- */

int cmd_save(int argc, const char **argv)
{
	struct cmd_args args;
	int rc = EXIT_OK, ret;
	cmd_parse(argc, argv, NULL, "NAME|/dev/loopN IMAGE", 2, 2, &args);
	ret = xip_save(args.argv[0], args.argv[1]);
	if (ret)
		rc = msg_lib_error(ret);
	cmd_args_free(&args);
	return rc;
}

/* ---- list ---------------------------------------------------------------- */

enum col_kind { COL_STR, COL_NUM, COL_BOOL };

struct column {
	const char *name;
	enum col_kind kind;
	double width;
	const char *help;
};

static const struct column columns[] = {
	{ "NAME", COL_STR, 0.1, "segment name (@NAME)" },
	{ "TYPE", COL_STR, 2, "segment type (sr, sw, er, ew, sn, en)" },
	{ "SIZE", COL_NUM, 6, "bytes of data" },
	{ "LOOP", COL_STR, 0.1, "loop device" },
	{ "IMAGE", COL_STR, 0.3, "source image" },
	{ "LABEL", COL_STR, 0.1, "file system label" },
	{ "UUID", COL_STR, 36, "file system UUID" },
	{ "PATH", COL_STR, 0.3, "segment file" },
	{ "FILE", COL_STR, 0.2, "file of the image bound to the loop device" },
	{ "OFFSET", COL_NUM, 5, "loop device offset" },
	{ "SIZELIMIT", COL_NUM, 5, "loop device size limit" },
	{ "RO", COL_BOOL, 1, "read-only type" },
	{ "COMPRESSED", COL_BOOL, 1, "image was gzip-compressed" },
	{ "CREATED", COL_STR, 20, "creation time" },
	{ "OWNER", COL_NUM, 5, "owner uid" },
	{ "VERIFIED", COL_BOOL, 1, "admitted against a root hash and sealed" },
	{ "POPULATE", COL_BOOL, 1, "exec maps a program's read-only pages at once" },
	{ "FILLED", COL_NUM, 6, "bytes arrived (and checked) of a lazy attach" },
	{ "STATE", COL_STR, 8, "filling, complete or failed (attach --lazy)" },
	{ "SIGNER", COL_STR, 0.2, "subject of the certificate whose signature of the root hash was checked (attach --trust), while sealed" },
	{ "FILLER", COL_NUM, 6, "pid of the filler of a lazy attach, while it runs" },
};
#define N_COLUMNS (sizeof(columns) / sizeof(columns[0]))
#define DEFAULT_COLUMNS "NAME,TYPE,SIZE,FILLED,STATE,LOOP,IMAGE,LABEL,UUID,VERIFIED"
/* list --json: who signed it too (null when nobody's signature was checked) */
#define JSON_COLUMNS DEFAULT_COLUMNS ",SIGNER,FILLER"
/* list --all: whose each segment is */
#define ALL_COLUMNS "OWNER," DEFAULT_COLUMNS

static int column_find(const char *name, size_t len)
{
	for (size_t i = 0; i < N_COLUMNS; i++)
		if (strlen(columns[i].name) == len &&
		    !strncasecmp(columns[i].name, name, len))
			return (int)i;
	return -1;
}

/* "A,B" or "+C,D" (appended to the default); indices into @cols. */
static int columns_parse(const char *spec, const char *def, int *cols,
			 size_t *ncols)
{
	char list[512];
	const char *p;

	if (spec && *spec == '+')
		snprintf(list, sizeof(list), "%s,%s", def, spec + 1);
	else
		snprintf(list, sizeof(list), "%s", spec ? spec : def);
	*ncols = 0;
	for (p = list; *p;) {
		size_t len = strcspn(p, ",");
		int c = column_find(p, len);

		if (c < 0)
			return cmd_usage_error("--output: unknown column '%.*s'",
					       (int)len, p);
		if (*ncols == N_COLUMNS * 2)
			return cmd_usage_error("--output: too many columns");
		cols[(*ncols)++] = c;
		p += len + (p[len] == ',');
	}
	if (!*ncols)
		return cmd_usage_error("--output: no columns");
	return EXIT_OK;
}

static void cell_text(const struct xip_seg_entry *e, int col, char *buf,
		      size_t len)
{
	const char *state;
	uint64_t filled;
	pid_t filler;
	struct tm tm;
	time_t t;

	buf[0] = '\0';
	switch (col) {
	case 17:
	case 18:
	case 20:
		state = xip_registry_fill_status(e, &filled, &filler);
		if (col == 17)
			snprintf(buf, len, "%llu", (unsigned long long)filled);
		else if (col == 18)
			snprintf(buf, len, "%s", state);
		else if (filler > 0)
			snprintf(buf, len, "%d", (int)filler);
		break;
	case 0: snprintf(buf, len, "%s", e->name); break;
	case 1: snprintf(buf, len, "%s", xip_seg_type_name(e->type)); break;
	case 2: snprintf(buf, len, "%llu", (unsigned long long)e->size); break;
	case 3: snprintf(buf, len, "%s", e->loop); break;
	case 4: snprintf(buf, len, "%s", e->image); break;
	case 5: snprintf(buf, len, "%s", e->label); break;
	case 6: snprintf(buf, len, "%s", e->uuid); break;
	case 7: snprintf(buf, len, "%s", e->path); break;
	case 8: snprintf(buf, len, "%s", e->file); break;
	case 9: snprintf(buf, len, "%llu", (unsigned long long)e->offset); break;
	case 10:
		snprintf(buf, len, "%llu", (unsigned long long)e->sizelimit);
		break;
	case 11:
		snprintf(buf, len, "%s",
			 xip_seg_type_writable(e->type) ? "0" : "1");
		break;
	case 12: snprintf(buf, len, "%s", e->compressed ? "1" : "0"); break;
	case 13:
		t = (time_t)e->created;
		if (localtime_r(&t, &tm))
			strftime(buf, len, "%Y-%m-%dT%H:%M:%S%z", &tm);
		break;
	case 14: snprintf(buf, len, "%u", (unsigned int)e->owner); break;
	case 15: snprintf(buf, len, "%s", e->verified ? "1" : "0"); break;
	case 16: snprintf(buf, len, "%s", e->populate ? "1" : "0"); break;
	case 19: snprintf(buf, len, "%s", e->signer); break;
	}
}

static int list_columns(struct libscols_table *tb, const int *cols,
			size_t ncols, bool json)
{
	for (size_t i = 0; i < ncols; i++) {
		const struct column *c = &columns[cols[i]];
		struct libscols_column *cl;
		char lower[32];
		size_t k;

		for (k = 0; c->name[k] && k + 1 < sizeof(lower); k++)
			lower[k] = (char)tolower((unsigned char)c->name[k]);
		lower[k] = '\0';
		cl = scols_table_new_column(tb, json ? lower : c->name,
					    c->width,
					    c->kind == COL_NUM ? SCOLS_FL_RIGHT :
					    0);
		if (!cl)
			return -ENOMEM;
		scols_column_set_json_type(cl, c->kind == COL_NUM ?
					   SCOLS_JSON_NUMBER :
					   c->kind == COL_BOOL ?
					   SCOLS_JSON_BOOLEAN :
					   SCOLS_JSON_STRING);
	}
	return 0;
}

static int list_line(struct libscols_table *tb, const struct xip_seg_entry *e,
		     const int *cols, size_t ncols)
{
	struct libscols_line *ln = scols_table_new_line(tb, NULL);
	char buf[XIP_PATH_MAX];

	if (!ln)
		return -ENOMEM;
	for (size_t i = 0; i < ncols; i++) {
		/* booleans are "0" and "1": JSON false and true */
		cell_text(e, cols[i], buf, sizeof(buf));
		/* empty strings stay unset: null in JSON, like losetup */
		if (buf[0] && scols_line_set_data(ln, i, buf))
			return -ENOMEM;
	}
	return 0;
}

static bool entry_named(const struct xip_seg_entry *e, const char *name)
{
	const char *colon = strchr(name, ':');
	char *end;

	/* UID:NAME (list --all) */
	if (colon && isdigit((unsigned char)name[0])) {
		if (strtoul(name, &end, 10) != e->owner || end != colon)
			return false;
		name = colon + 1;
	}
	if (name[0] == '@')
		name++;
	return !strcmp(name, e->name) || (e->loop[0] && !strcmp(name, e->loop));
}

/* Every name asked for must be attached. */
static int list_check_names(const struct xip_seg_entry *all, size_t n,
			    const char **names)
{
	for (int k = 0; names && names[k]; k++) {
		size_t i;

		for (i = 0; i < n && !entry_named(&all[i], names[k]); i++)
			;
		if (i == n)
			return xip_error(-ENOENT, "%s: no attached segment of that name",
					 names[k]);
	}
	return 0;
}

static int list_print(struct xip_seg_entry *all, size_t n, const char **names,
		      const int *cols, size_t ncols, int json, int noheadings,
		      int raw)
{
	struct libscols_table *tb;
	int ret = list_check_names(all, n, names);

	if (ret)
		return ret;
	tb = scols_new_table();

	if (!tb)
		return -ENOMEM;
	scols_table_enable_json(tb, json);
	scols_table_set_name(tb, "segments");
	scols_table_enable_noheadings(tb, noheadings);
	scols_table_enable_raw(tb, raw);
	ret = list_columns(tb, cols, ncols, json);
	for (size_t i = 0; !ret && i < n; i++) {
		bool want = !names || !names[0];

		for (int k = 0; !want && names[k]; k++)
			want = entry_named(&all[i], names[k]);
		if (want)
			ret = list_line(tb, &all[i], cols, ncols);
	}
	if (!ret && (n || json))
		ret = scols_print_table(tb);
	scols_unref_table(tb);
	return ret;
}

static const char list_usage[] =
	"[--all] [--json] [-o COLUMNS] [--noheadings] [--raw] [NAME|UID:NAME...]";

/* list --all: a registry root may not trust, left out */
static void list_warn(void *arg, const char *msg)
{
	(void)arg;
	msg_warn("%s", msg);
}

int cmd_list(int argc, const char **argv)
{
	int json = 0, noheadings = 0, raw = 0, every = 0, rc = EXIT_OK, ret,
	    cols[N_COLUMNS * 2];
	struct xip_seg_entry *all = NULL;
	char *output = NULL;
	struct cmd_args args;
	size_t ncols, n;
	const struct poptOption options[] = {
		{ "all", '\0', POPT_ARG_NONE, &every, 0,
		  "every user's segments (root; a user's own otherwise), with their OWNER",
		  NULL },
		CMD_OPT_JSON(&json, "the list"),
		{ "output", 'o', POPT_ARG_STRING, &output, 0,
		  "columns to print (+COLUMNS adds to the default)",
		  "COLUMNS" },
		{ "noheadings", '\0', POPT_ARG_NONE, &noheadings, 0,
		  "do not print the heading line", NULL },
		{ "raw", 'r', POPT_ARG_NONE, &raw, 0,
		  "raw output (no column alignment)", NULL },
		POPT_TABLEEND
	};

	cmd_parse(argc, argv, options, list_usage, 0, -1, &args);
	rc = columns_parse(output, every ? (json ? "OWNER," JSON_COLUMNS :
					       ALL_COLUMNS) :
				    json ? JSON_COLUMNS : DEFAULT_COLUMNS,
			   cols, &ncols);
	if (rc)
		goto out;
	ret = every ? xip_registry_list_all(&all, &n, list_warn, NULL) :
		      xip_registry_list(&all, &n);
	/* what a writable segment holds may have changed since attach (our
	 * own: another user's registry is theirs to write) */
	for (size_t i = 0; !ret && i < n; i++)
		if ((!every || all[i].owner == geteuid()) &&
		    xip_seg_type_writable(all[i].type) &&
		    xip_seg_refresh(&all[i]))
			xip_error_clear();	/* keep what was recorded */
	if (!ret)
		ret = list_print(all, n, args.argv, cols, ncols, json,
				 noheadings, raw);
	if (ret)
		rc = msg_lib_error(ret);
	free(all);
out:
	free(output);
	cmd_args_free(&args);
	return rc;
}
