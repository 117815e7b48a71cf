// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xiptool info: identify an image and describe its geometry and XIP
 * capability.
 */
#include <errno.h>
#include <stdio.h>

#include "cmd.h"

static const char info_usage[] = "[--json] IMAGE";

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
 * The signature block after the tree: "present (N bytes, signer WHO)",
 * "none", or why it is not valid.
 */
static void info_signature(struct kv *kv, const struct xip_seg *seg,
			   const struct xip_verity_info *vi)
{
	struct xip_verity_sig sig;
	char who[512], text[640];
	int ret;

	ret = xip_verity_sig_read(seg->base, seg->data_size, vi, &sig);
	if (!ret && sig.present)
		ret = xip_verity_sig_signer(sig.der, sig.der_len, who,
					    sizeof(who));
	if (ret)
		snprintf(text, sizeof(text), "invalid: %s", xip_errmsg());
	else if (sig.present)
		snprintf(text, sizeof(text), "present (%zu bytes, signer %s)",
			 sig.der_len, who);
	else
		snprintf(text, sizeof(text), "none");
	kv_str(kv, "Signature", "signature", text);
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
	const struct poptOption options[] = {
		CMD_OPT_JSON(&json, "the result"),
		POPT_TABLEEND
	};

	cmd_parse(argc, argv, options, info_usage, 1, 1, &args);
	spec = args.argv[0];
	ret = xip_spec_open(spec, 0, &seg);
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
		return rc;
	}
	xip_image_info(img, &in);
	kv = kv_new("image");
	info_fill(kv, spec, seg, &in);
	info_verity(kv, xip_image_seg(img));
	rc = kv_print(kv, json) ? EXIT_RUNTIME : EXIT_OK;
	kv_free(kv);
	xip_image_close(img);
	cmd_args_free(&args);
	return rc;
}
