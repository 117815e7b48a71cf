// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool verify: prove an image sound and XIP-ready, optionally equal to
 * the source tree it was built from.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

static const char verify_usage[] =
	"[--json] [--against DIR] [--page-size N] [--pmem] [--root-hash HEX|--root-hash-file FILE|--trust PATH] [--root-hash-signature FILE] IMAGE";

/* --pmem: the guest-pmem verdict too (info always shows it) */
static int show_pmem;

static const char *pmem_reason(const struct xip_check_report *rep)
{
	return rep->pmem_reason[0] ? rep->pmem_reason :
	       "not judged: the image is not an ext2 file system xiptool can walk";
}

struct progress {
	const char *last_phase;
	int last_pct;
	bool shown;
};

static void verify_progress(void *arg, const char *phase, uint64_t done,
			    uint64_t total)
{
	struct progress *p = arg;
	int pct = total ? (int)(done * 100 / total) : 100;

	if (!phase) {
		if (p->shown)
			fputs("\r\033[K", stderr);
		p->shown = false;
		return;
	}
	if (phase == p->last_phase && pct == p->last_pct)
		return;
	p->last_phase = phase;
	p->last_pct = pct;
	p->shown = true;
	fprintf(stderr, "\rxiptool verify: %s %3d%%", phase, pct);
	fflush(stderr);
}

/* The findings, with the verity and pmem verdicts next to them. */
static int print_json(const struct xip_check_report *rep)
{
	struct cmd_json j;

	cmd_json_begin(&j);
	cmd_json_array_begin(&j, "findings");
	for (size_t i = 0; i < rep->nfindings; i++) {
		const struct xip_finding *f = &rep->findings[i];

		cmd_json_object_begin(&j);
		cmd_json_str(&j, "severity", f->severity == XIP_CHECK_ERROR ?
			     "error" : "warning");
		cmd_json_str(&j, "object", f->object);
		cmd_json_u64(&j, "inode", f->ino, f->ino);
		cmd_json_u64(&j, "block", f->block, f->block);
		cmd_json_str(&j, "path", f->path);
		cmd_json_str(&j, "message", f->msg);
		cmd_json_object_end(&j);
	}
	cmd_json_array_end(&j);
	if (show_pmem)
		cmd_json_bool(&j, "pmem", rep->pmem_capable);
	if (rep->verity_checked)
		cmd_json_bool(&j, "verity", rep->verity_ok);
	if (show_pmem && !rep->pmem_capable)
		cmd_json_str(&j, "pmem-reason", pmem_reason(rep));
	return cmd_json_end(&j);
}

static void print_text(const char *spec, const struct xip_check_report *rep)
{
	for (size_t i = 0; i < rep->nfindings; i++) {
		const struct xip_finding *f = &rep->findings[i];

		printf("%s%s\n", f->severity == XIP_CHECK_ERROR ? "" :
		       "warning: ", cmd_esc(f->msg));
	}
	if (rep->unlisted)
		printf("(%" PRIu64 " more findings not listed)\n",
		       rep->unlisted);
	printf("%s: %s%" PRIu64 " problem%s, %" PRIu64 " warning%s",
	       cmd_esc(spec), rep->errors ? "" : "clean: ", rep->errors,
	       rep->errors == 1 ? "" : "s", rep->warnings,
	       rep->warnings == 1 ? "" : "s");
	if (rep->walked)
		printf(" (%" PRIu64 " inodes, %" PRIu64 " blocks in use, %" PRIu64 " files)",
		       rep->inodes_used, rep->blocks_used, rep->files);
	else
		printf(" (the image could not be walked)");
	putchar('\n');
	if (show_pmem && rep->pmem_capable)
		printf("pmem: yes\n");
	else if (show_pmem)
		printf("pmem: no: %s\n", cmd_esc(pmem_reason(rep)));
	if (rep->verity_checked && rep->verity_ok)
		printf("verity: every block matches the root hash (%" PRIu64
		       " data blocks, %" PRIu64 " hash blocks, %s)\n",
		       rep->verity.data_blocks, rep->verity.tree_blocks,
		       rep->verity.algorithm);
	else if (rep->verity_checked)
		printf("verity: mismatch\n");
}

/* What --trust checks: the store, a detached signature; defaulted? */
struct verify_trust {
	const char *path;		/* the trust store, or NULL */
	bool dflt;			/* the default store, not --trust */
	uint8_t *der;			/* --root-hash-signature, or NULL */
	size_t der_len;
};

/*
 * --trust: the signature after the tree (or the detached one) checked
 * against PATH, over the root hash of the tree's top block, which the
 * check then holds every block to.  A missing or bad signature is a
 * problem found (exit 1).
 */
static int verify_trust(const char *spec, struct xip_seg *seg,
			const struct verify_trust *t, struct xip_check_opts *o,
			uint8_t *root, bool json)
{
	char signer[512];
	int ret;

	ret = xip_verity_sig_verify_detached(seg->base, seg->data_size, t->der,
					     t->der_len, t->path, root,
					     &o->root_hash_len, signer,
					     sizeof(signer));
	if (ret == -ENOKEY || ret == -EKEYREJECTED || ret == -EUCLEAN) {
		msg_error("%s: %s", cmd_esc(spec), xip_errmsg());
		return EXIT_PROBLEMS;
	}
	if (ret)
		return msg_lib_error(ret);
	o->root_hash = root;
	if (!json)
		printf("%s: signature verified, signer %s\n", spec, signer);
	return EXIT_OK;
}

/* Does the image carry a signature block (valid or not) after its tree? */
static bool carries_signature(const struct xip_seg *seg)
{
	struct xip_verity_info vi;
	struct xip_verity_sig sig;
	bool yes;

	yes = !xip_verity_probe(seg->base, seg->data_size, &vi) &&
	      vi.present &&
	      (xip_verity_sig_read(seg->base, seg->data_size, &vi, &sig) ||
	       sig.present);
	xip_error_clear();
	return yes;
}

static int verify_run(const char *spec, const struct verify_trust *trust,
		      struct xip_check_opts *o, bool json)
{
	uint8_t root[XIP_VERITY_DIGEST_MAX];
	struct xip_check_report rep;
	struct xip_seg *seg;
	char fstype[64];
	int ret, rc;

	ret = xip_spec_open(spec, 0, &seg);
	if (ret)
		return msg_lib_error(ret);
	ret = xip_seg_lock(seg, false, 5000);
	/* the checker reads the raw structures: the whole image, landed */
	if (!ret)
		ret = cmd_wait_filled(seg);
	/* the default store checks only an image that carries a signature */
	if (!ret && trust->path &&
	    (!trust->dflt || trust->der || carries_signature(seg))) {
		rc = verify_trust(spec, seg, trust, o, root, json);
		if (rc) {
			xip_seg_close(seg);
			return rc;
		}
	}
	if (!ret)
		ret = xip_check(seg, o, &rep);
	if (ret == -EUCLEAN) {
		/* no ext2 superblock: say what the image holds, if known */
		char msg[XIP_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", xip_errmsg());
		if (xip_identify(seg, fstype, sizeof(fstype)) != -EMEDIUMTYPE)
			xip_error(ret, "%s", msg);
		else
			ret = -EMEDIUMTYPE;
	}
	if (ret) {
		rc = msg_lib_error(ret);
		xip_seg_close(seg);
		return rc;
	}
	if (json)
		rc = print_json(&rep) ? EXIT_RUNTIME : EXIT_OK;
	else {
		print_text(spec, &rep);
		rc = EXIT_OK;
	}
	if (!rc && rep.errors)
		rc = EXIT_PROBLEMS;
	xip_check_report_free(&rep);
	xip_seg_close(seg);
	return rc;
}

int cmd_verify(int argc, const char **argv)
{
	struct xip_check_opts o = { 0 };
	struct progress prog = { 0 };
	char *against = NULL, *page = NULL, *root = NULL, *root_file = NULL;
	char *trust = NULL, *sig = NULL;
	struct verify_trust t = { 0 };
	uint8_t root_bytes[XIP_VERITY_DIGEST_MAX];
	struct cmd_args args;
	int json = 0, rc = EXIT_OK;
	const struct poptOption options[] = {
		CMD_OPT_JSON(&json, "the findings"),
		{ "against", '\0', POPT_ARG_STRING, &against, 0,
		  "compare the files with the source tree DIR", "DIR" },
		CMD_OPT_PAGE_SIZE(&page, "check XIP capability"),
		{ "pmem", '\0', POPT_ARG_NONE, &show_pmem, 0,
		  "also say whether the image can be a guest's pmem device",
		  NULL },
		{ "root-hash", '\0', POPT_ARG_STRING, &root, 0,
		  "also check every block against the image's dm-verity tree and this root hash",
		  "HEX" },
		{ "root-hash-file", '\0', POPT_ARG_STRING, &root_file, 0,
		  "the same, the root hash read from FILE (as mkfs writes it)",
		  "FILE" },
		{ "trust", '\0', POPT_ARG_STRING, &trust, 0,
		  "check the image's root hash signature against the certificates of PATH (a PEM file or a directory), then every block against the signed root hash",
		  "PATH" },
		{ "root-hash-signature", '\0', POPT_ARG_STRING, &sig, 0,
		  "a detached signature of the root hash (DER or PEM) in place of the image's",
		  "FILE" },
		POPT_TABLEEND
	};

	cmd_parse(argc, argv, options, verify_usage, 1, 1, &args);
	rc = page ? cmd_parse_page_size(page, &o.page_size) : EXIT_OK;
	if (rc)
		goto out;
	o.against = against;
	rc = cmd_root_hash(root, root_file, root_bytes, sizeof(root_bytes),
			   &o.root_hash_len);
	if (rc)
		goto out;
	if (o.root_hash_len)
		o.root_hash = root_bytes;
	if ((trust || sig) && o.root_hash_len) {
		rc = cmd_usage_error("%s excludes --root-hash and --root-hash-file",
				     trust ? "--trust" : "--root-hash-signature");
		goto out;
	}
	/* the default trust store, for an image that carries a signature */
	t.path = trust;
	if (!trust && !o.root_hash_len) {
		t.path = xip_verity_trust_default();
		t.dflt = t.path != NULL;
	}
	if (sig && !t.path) {
		rc = cmd_usage_error("--root-hash-signature needs --trust PATH (no default trust store %s)",
				     XIP_VERITY_TRUST_DIR);
		goto out;
	}
	if (sig && xip_verity_sig_load(sig, &t.der, &t.der_len)) {
		rc = msg_lib_error(xip_errcode());
		goto out;
	}
	if (isatty(STDERR_FILENO) && !opt_quiet) {
		o.progress = verify_progress;
		o.progress_arg = &prog;
	}
	rc = verify_run(args.argv[0], &t, &o, json);
out:
	cmd_args_free(&args);
	free(against);
	free(page);
	free(root);
	free(root_file);
	free(trust);
	free(sig);
	free(t.der);
	return rc;
}
