// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool info: identify an image and describe its geometry and XIP
 * capability.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static const char info_usage[] = "[--json] [--trust PATH] IMAGE";

/* the trust store the signature is checked against (--trust, default) */
static const char *info_trust;

/*
 * An attached segment's file is padded to whole 2 MiB sections past the
 * image (the guest's nd_pmem needs it): both sizes, each named.
 */
static void info_fill(struct kv *kv, const char *spec,
		      const struct xip_seg *seg,
		      const struct xip_image_info *in)
{
	kv_str(kv, "Image", "image", spec);
	kv_str(kv, "Type", "type", in->fstype);
	if (seg->name) {
		kv_u64(kv, "Image size", "size", in->size);
		kv_u64(kv, "Segment size", "segment-size", seg->size);
	} else {
		kv_u64(kv, "Size", "size", in->size);
	}
	kv_u64(kv, "Block size", "block-size", in->block_size);
	kv_u64(kv, "Page size", "page-size", in->page_size);
	kv_bool(kv, "XIP capable", "xip-capable", in->xip_capable);
	if (!in->xip_capable)
		kv_str(kv, "Not XIP capable because", "xip-reason",
		       in->xip_reason);
	kv_bool(kv, "Guest pmem", "pmem", in->pmem_capable);
	if (!in->pmem_capable)
		kv_str(kv, "Not pmem because", "pmem-reason", in->pmem_reason);
	kv_u64(kv, "Groups", "groups", in->groups);
	kv_u64(kv, "Blocks", "blocks", in->blocks);
	kv_u64(kv, "Blocks used", "blocks-used", in->blocks - in->blocks_free);
	kv_u64(kv, "Blocks free", "blocks-free", in->blocks_free);
	kv_u64(kv, "Blocks reserved", "blocks-reserved", in->blocks_reserved);
	kv_u64(kv, "Inodes", "inodes", in->inodes);
	kv_u64(kv, "Inodes used", "inodes-used", in->inodes - in->inodes_free);
	kv_u64(kv, "Inodes free", "inodes-free", in->inodes_free);
	kv_str(kv, "Label", "label", in->label);
	kv_str(kv, "UUID", "uuid", in->uuid);
	kv_str(kv, "State", "state",
	       (in->state & EXT2_ERROR_FS) ? "errors" :
	       (in->state & EXT2_VALID_FS) ? "clean" : "not clean");
}

/*
 * The signature block after the tree: "present (N bytes, signer WHO,
 * root hash HEX)" (the root hash of the tree's top block, the one it
 * signs when valid), "none", or why it is not valid; with a trust store
 * "valid against PATH (...)" or "invalid: REASON (...)".
 */
static void info_signature(struct kv *kv, const struct xip_seg *seg,
			   const struct xip_verity_info *vi)
{
	char who[512], vwho[512], text[1024];
	char hex[2 * XIP_VERITY_DIGEST_MAX + 1];
	char why[XIP_ERRMSG_MAX] = "";
	uint8_t root[XIP_VERITY_DIGEST_MAX];
	struct xip_verity_sig sig;
	size_t root_len = 0;
	int ret, chk = 0;

	ret = xip_verity_sig_read(seg->base, seg->data_size, vi, &sig);
	if (!ret && sig.present)
		ret = xip_verity_sig_signer(sig.der, sig.der_len, who,
					    sizeof(who));
	if (!ret && sig.present)
		ret = xip_verity_root(seg->base, seg->data_size, vi, root,
				      &root_len);
	if (!ret && sig.present && info_trust) {
		xip_hex_encode(root, root_len, hex);
		chk = xip_verity_sig_check(sig.der, sig.der_len, hex,
					   info_trust, vwho, sizeof(vwho));
		if (chk)
			snprintf(why, sizeof(why), "%s", xip_errmsg());
	}
	if (ret) {
		snprintf(text, sizeof(text), "invalid: %s", xip_errmsg());
		kv_str(kv, "Signature", "signature", text);
		return;
	}
	if (!sig.present) {
		kv_str(kv, "Signature", "signature", "none");
		return;
	}
	xip_hex_encode(root, root_len, hex);
	if (!info_trust)
		snprintf(text, sizeof(text),
			 "present (%zu bytes, signer %s, root hash %s)",
			 sig.der_len, who, hex);
	else if (!chk)
		snprintf(text, sizeof(text),
			 "valid against %s (%zu bytes, signer %s, root hash %s)",
			 info_trust, sig.der_len, vwho, hex);
	else
		snprintf(text, sizeof(text),
			 "invalid: %s (%zu bytes, signer %s, root hash %s)",
			 why, sig.der_len, who, hex);
	kv_str(kv, "Signature", "signature", text);
	kv_str(kv, "Signer", "signer", info_trust && !chk ? vwho : who);
	kv_str(kv, "Signed root hash", "signed-root-hash", hex);
	if (info_trust)
		kv_bool(kv, "Signature valid", "signature-valid", !chk);
}

/*
 * An attached segment (@NAME): verified and signed as list tells it now
 * (a seal gone, the segment is neither any more).
 */
static void info_segment(struct kv *kv, const struct xip_seg *seg)
{
	struct xip_seg_entry *all;
	size_t n;

	if (!seg->name || xip_registry_list(&all, &n)) {
		xip_error_clear();
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (strcmp(all[i].name, seg->name))
			continue;
		kv_bool(kv, "Segment verified", "segment-verified",
			all[i].verified);
		if (all[i].signer[0])
			kv_str(kv, "Segment signer", "segment-signer",
			       all[i].signer);
	}
	free(all);
}

/* The dm-verity tree after the file system, when there is one. */
static void info_verity(struct kv *kv, const struct xip_seg *seg)
{
	char salt[2 * XIP_VERITY_SALT_MAX + 1];
	struct xip_verity_info vi;
	int ret;

	ret = xip_verity_probe(seg->base, seg->data_size, &vi);
	kv_bool(kv, "Verity tree", "verity", vi.present);
	if (!vi.present)
		return;
	if (ret)
		kv_str(kv, "Verity problem", "verity-problem", xip_errmsg());
	kv_u64(kv, "Verity offset", "verity-offset", vi.hash_offset);
	kv_str(kv, "Verity algorithm", "verity-algorithm", vi.algorithm);
	kv_u64(kv, "Verity data block size", "verity-data-block-size",
	       vi.data_block_size);
	kv_u64(kv, "Verity hash block size", "verity-hash-block-size",
	       vi.hash_block_size);
	kv_u64(kv, "Verity data blocks", "verity-data-blocks",
	       vi.data_blocks);
	if (ret)
		return;
	kv_u64(kv, "Verity hash blocks", "verity-hash-blocks",
	       vi.tree_blocks);
	xip_hex_encode(vi.salt, vi.salt_size, salt);
	kv_str(kv, "Verity salt", "verity-salt", salt);
	info_signature(kv, seg, &vi);
	xip_error_clear();
}

int cmd_info(int argc, const char **argv)
{
	struct xip_image_info in;
	struct xip_seg *seg;
	struct xip_image *img;
	struct cmd_args args;
	const char *spec;
	char fstype[64];
	int json = 0, rc = EXIT_OK, ret;
	struct kv *kv;
	char *trust = NULL;
	const struct poptOption options[] = {
		CMD_OPT_JSON(&json, "the result"),
		{ "trust", '\0', POPT_ARG_STRING, &trust, 0,
		  "say whether the image's root hash signature verifies against the certificates of PATH (a PEM file or a directory; default: the default trust store, when it exists)",
		  "PATH" },
		POPT_TABLEEND
	};

	cmd_parse(argc, argv, options, info_usage, 1, 1, &args);
	info_trust = trust ? trust : xip_verity_trust_default();
	spec = args.argv[0];
	ret = xip_spec_open(spec, 0, &seg);
	/* the verity and signature fields read the tree's raw bytes */
	if (!ret && (ret = cmd_wait_filled(seg)))
		xip_seg_close(seg);
	if (!ret) {
		ret = xip_identify(seg, fstype, sizeof(fstype));
		if (ret == -ENODATA)
			ret = 0;	/* let the superblock check say why */
		if (ret)
			xip_seg_close(seg);
	}
	if (!ret)
		ret = xip_image_open_segment(seg, 0, &img);
	if (ret) {
		rc = msg_lib_error(ret);
		cmd_args_free(&args);
		free(trust);
		return rc;
	}
	xip_image_info(img, &in);
	kv = kv_new("image");
	info_fill(kv, spec, seg, &in);
	info_verity(kv, xip_image_seg(img));
	info_segment(kv, xip_image_seg(img));
	rc = kv_print(kv, json) ? EXIT_RUNTIME : EXIT_OK;
	kv_free(kv);
	xip_image_close(img);
	cmd_args_free(&args);
	free(trust);
	return rc;
}
