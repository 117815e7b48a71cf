// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `xiptool push`: an image into a registry as an OCI artifact.  One
 * config blob (what the image is: label, UUID, size, verity root hash,
 * signed or not) and one layer blob (the image's bytes), then the image
 * manifest (artifactType application/vnd.xiptool.image.v1) under the
 * tag.  Blobs the repository has already (HEAD) are not sent again; the
 * manifest goes last, so a tag never names a partial push.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/xip_attach.h"
#include "util/xip_error.h"
#include "util/xip_lazy.h"
#include "util/xip_util.h"
#include "segment/xip_segment.h"
#include "verity/xip_verity.h"
#include "reader/xip_reader.h"
#include "engine/xip_engine.h"
#include "oci/xip_oci.h"

#include <openssl/evp.h>

#define PUSH_CHUNK (16u << 20) /* bytes per PATCH of a large blob */

/* Text into a caller's buffer, remembering when it did not fit. */
struct jbuf {
	char *p;
	size_t len, cap;
	bool over;
};

static void jb_add(struct jbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->over)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= b->cap - b->len) {
		b->over = true;
		b->p[b->len] = '\0';
		return;
	}
	b->len += (size_t)n;
}

/* @s as a JSON string: quoted, '"', '\\' and control bytes escaped */
static void jb_str(struct jbuf *b, const char *s)
{
	jb_add(b, "\"");
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			jb_add(b, "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)
			jb_add(b, "\\u%04x", ch);
		else
			jb_add(b, "%c", ch);
	}
	jb_add(b, "\"");
}

/* "KEY":"VALUE", after a comma unless @first */
static void jb_kv(struct jbuf *b, bool first, const char *key, const char *val)
{
	if (!first)
		jb_add(b, ",");
	jb_str(b, key);
	jb_add(b, ":");
	jb_str(b, val);
}

int xip_push_config(const struct xip_push_meta *m, char *out, size_t cap)
{
	struct jbuf b = {.p = out, .cap = cap};

	if (!cap)
		return -ENAMETOOLONG;
	out[0] = '\0';
	jb_add(&b, "{");
	jb_kv(&b, true, "label", m->label);
	jb_kv(&b, false, "uuid", m->uuid);
	jb_add(&b, ",\"size\":%" PRIu64, m->size);
	if (m->root_hash[0])
		jb_kv(&b, false, "rootHash", m->root_hash);
	jb_add(&b, ",\"signed\":%s}", m->is_signed ? "true" : "false");
	return b.over ? -ENAMETOOLONG : 0;
}

int xip_push_manifest(const struct xip_push_meta *m, const char *config_digest,
		      size_t config_size, char *out, size_t cap)
{
	struct jbuf b = {.p = out, .cap = cap};
	char size[32];

	if (!cap)
		return -ENAMETOOLONG;
	out[0] = '\0';
	snprintf(size, sizeof(size), "%" PRIu64, m->size);
	jb_add(&b,
	       "{\"schemaVersion\":2,\"mediaType\":\"%s\","
	       "\"artifactType\":\"%s\","
	       "\"config\":{\"mediaType\":\"%s\",\"digest\":\"%s\","
	       "\"size\":%zu},"
	       "\"layers\":[{\"mediaType\":\"%s\",\"digest\":\"%s\","
	       "\"size\":%s}],\"annotations\":{",
	       XIP_OCI_MANIFEST_TYPE, XIP_OCI_ARTIFACT_TYPE,
	       XIP_OCI_CONFIG_TYPE, config_digest, config_size,
	       XIP_OCI_LAYER_TYPE, m->layer_digest, size);
	jb_kv(&b, true, "org.opencontainers.image.title", m->title);
	jb_kv(&b, false, "org.xiptool.image.label", m->label);
	jb_kv(&b, false, "org.xiptool.image.uuid", m->uuid);
	jb_kv(&b, false, "org.xiptool.image.size", size);
	if (m->root_hash[0])
		jb_kv(&b, false, "org.xiptool.image.root-hash", m->root_hash);
	jb_add(&b, "}}");
	return b.over ? -ENAMETOOLONG : 0;
}

/* "sha256:<hex>" of @len bytes at @p into @out (72 bytes) */
static int sha256_digest(const void *p, size_t len, char *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx;
	int ok;

	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return -ENOMEM;
	ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
	     EVP_DigestUpdate(ctx, p, len) &&
	     EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	if (!ok || mdlen != 32)
		return xip_error(-EIO, "sha256: failed");
	memcpy(out, "sha256:", 7);
	xip_hex_encode(md, 32, out + 7);
	return 0;
}

/* What the image is: label, UUID, size, its root hash and signature. */
static int push_meta(struct xip_image *img, const char *spec,
		     struct xip_push_meta *m)
{
	struct xip_seg *seg = xip_image_seg(img);
	struct xip_image_info in;
	struct xip_verity_info vi;
	struct xip_verity_sig sig;
	uint8_t root[XIP_VERITY_DIGEST_MAX];
	size_t root_len = 0;
	const char *slash = strrchr(spec, '/');
	int ret;

	memset(m, 0, sizeof(*m));
	ret = xip_image_info(img, &in);
	if (ret)
		return ret;
	snprintf(m->label, sizeof(m->label), "%s", in.label);
	snprintf(m->uuid, sizeof(m->uuid), "%s", in.uuid);
	snprintf(m->title, sizeof(m->title), "%s", slash ? slash + 1 : spec);
	m->size = seg->data_size;
	ret = xip_verity_probe(seg->base, seg->data_size, &vi);
	if (ret)
		return ret;
	if (!vi.present)
		return 0;
	ret = xip_verity_root(seg->base, seg->data_size, &vi, root, &root_len);
	if (ret)
		return ret;
	xip_hex_encode(root, root_len, m->root_hash);
	ret = xip_verity_sig_read(seg->base, seg->data_size, &vi, &sig);
	if (ret)
		return ret;
	m->is_signed = sig.present;
	return 0;
}

/* A blob, unless the repository has it already. */
static int push_blob(struct xip_oci_client *c, const char *digest,
		     const void *p, size_t len, struct xip_push_result *r)
{
	int ret = xip_oci_blob_exists(c, digest);

	if (ret && ret != -ENOENT)
		return ret;
	if (ret == 0) {
		r->skipped++;
		return 0;
	}
	r->uploaded++;
	return xip_oci_blob_upload(c, digest, p, len, PUSH_CHUNK);
}

int xip_push(const char *spec, const char *dest,
	     const struct xip_oci_client_opts *opts, struct xip_push_result *r)
{
	struct xip_oci_client_opts o = *opts;
	struct xip_oci_client *c = NULL;
	struct xip_image *img = NULL;
	struct xip_oci_ref ref = {0};
	struct xip_push_meta m;
	char config[2048], manifest[4096], cdigest[80];
	struct xip_seg *seg;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = xip_oci_ref_parse(dest, &ref);
	if (!ret && (ref.digest || !ref.tag))
		ret = xip_error(-EINVAL, "%s: push needs a tag, not a digest",
				dest);
	if (!ret)
		ret = xip_lazy_load(XIP_LAZY_CRYPTO);
	if (!ret)
		ret = xip_image_open(spec, 0, &img);
	if (!ret)
		ret = push_meta(img, spec, &m);
	seg = img ? xip_image_seg(img) : NULL;
	if (!ret)
		ret = sha256_digest(seg->base, seg->data_size, m.layer_digest);
	if (!ret)
		ret = xip_push_config(&m, config, sizeof(config));
	if (!ret)
		ret = sha256_digest(config, strlen(config), cdigest);
	if (!ret)
		ret = xip_push_manifest(&m, cdigest, strlen(config), manifest,
					sizeof(manifest));
	o.push = true;
	if (!ret)
		ret = xip_oci_client_new(&ref, &o, &c);
	if (!ret)
		ret =
		    push_blob(c, m.layer_digest, seg->base, seg->data_size, r);
	if (!ret)
		ret = push_blob(c, cdigest, config, strlen(config), r);
	/* last: the tag names the artifact only once its blobs are in */
	if (!ret)
		ret = xip_oci_manifest_put(c, ref.tag, XIP_OCI_MANIFEST_TYPE,
					   manifest, strlen(manifest));
	if (!ret)
		ret = sha256_digest(manifest, strlen(manifest), r->digest);
	xip_oci_client_free(c);
	if (img)
		xip_image_close(img);
	xip_oci_ref_free(&ref);
	return ret;
}
