// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Pulling an artifact that `xiptool push` made into a segment: `xiptool
 * attach docker://HOST/REPO:TAG|@sha256:...`.  The manifest must be an
 * xiptool artifact (a container image is refused, saying so); its layer
 * is streamed into the segment file, hashed (sha256) as it arrives and
 * compared with the manifest's digest at its end, and handed to the
 * verity check block by block as it lands.  A verified attach reads the
 * superblocks ahead with Range requests; the check at the end compares
 * them with what arrived.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attach/xip_attach.h"
#include "attach/attach_int.h"
#include "util/xip_error.h"
#include "util/xip_lazy.h"
#include "util/xip_util.h"
#include "segment/xip_segment.h"
#include "verity/xip_verity.h"
#include "reader/xip_reader.h"
#include "engine/xip_engine.h"
#include "oci/xip_oci.h"

#include <json-c/json.h>
#include <openssl/evp.h>

#define MANIFEST_MAX (4u << 20)
#define PULL_BUF (4u << 20) /* bytes written at a time: whole verity blocks */
#define ACCEPT_MANIFESTS                                                       \
	"application/vnd.oci.image.manifest.v1+json, "                         \
	"application/vnd.oci.image.index.v1+json, "                            \
	"application/vnd.docker.distribution.manifest.v2+json, "               \
	"application/vnd.docker.distribution.manifest.list.v2+json"

struct xip_ocipull {
	const char *spec;
	struct xip_oci_ref ref;
	struct xip_oci_client *c;
	char digest[80]; /* the layer's */
	uint64_t size;
};

static int read_all(struct xip_oci_body *b, char **out, size_t *len,
		    const char *what)
{
	char *buf = malloc(MANIFEST_MAX + 1);
	size_t n = 0;
	ssize_t r;

	if (!buf)
		return -ENOMEM;
	while ((r = xip_oci_body_read(b, buf + n, MANIFEST_MAX + 1 - n)) > 0) {
		n += (size_t)r;
		if (n > MANIFEST_MAX) {
			free(buf);
			return xip_error(-EFBIG, "%s: larger than %u bytes",
					 what, MANIFEST_MAX);
		}
	}
	if (r < 0) {
		free(buf);
		return (int)r;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static bool digest_ok(const char *d)
{
	if (!d || strncmp(d, "sha256:", 7) || strlen(d) != 71)
		return false;
	for (d += 7; *d; d++)
		if (!strchr("0123456789abcdef", *d))
			return false;
	return true;
}

/* What a manifest that is not an xiptool artifact is, in a few words. */
static const char *not_ours(const char *mt, const char *cfg_mt)
{
	if (mt && (strstr(mt, "index") || strstr(mt, "manifest.list")))
		return "an image index (several images): name one of them by "
		       "its digest";
	if (cfg_mt &&
	    (!strcmp(cfg_mt, "application/vnd.oci.image.config.v1+json") ||
	     !strcmp(cfg_mt, "application/vnd.docker.container.image.v1+json")))
		return "a container image: use mkfs --oci for container images";
	return "not an xiptool image artifact";
}

/* The manifest's one layer, when it is an xiptool artifact. */
int xip_ocipull_manifest(const char *json, size_t len, const char *what,
			 char *digest, size_t dlen, uint64_t *size)
{
	struct json_object *m, *cfg = NULL, *layers = NULL, *l, *sz;
	enum json_tokener_error err;
	struct json_tokener *tok;
	const char *mt, *at, *cmt, *lmt, *ld;
	int ret = xip_lazy_load(XIP_LAZY_JSON);

	if (ret)
		return ret;
	tok = json_tokener_new_ex(16);
	if (!tok)
		return -ENOMEM;
	m = json_tokener_parse_ex(tok, json, (int)len);
	err = json_tokener_get_error(tok);
	json_tokener_free(tok);
	if (!m || err != json_tokener_success ||
	    !json_object_is_type(m, json_type_object)) {
		json_object_put(m);
		return xip_error(-EINVAL, "%s: the manifest is not JSON", what);
	}
	mt = jstr(m, "mediaType");
	at = jstr(m, "artifactType");
	json_object_object_get_ex(m, "config", &cfg);
	cmt = jstr(cfg, "mediaType");
	if ((!at || strcmp(at, XIP_OCI_ARTIFACT_TYPE)) &&
	    (!cmt || strcmp(cmt, XIP_OCI_CONFIG_TYPE))) {
		ret =
		    xip_error(-EMEDIUMTYPE, "%s: %s", what, not_ours(mt, cmt));
		goto out;
	}
	if (!json_object_object_get_ex(m, "layers", &layers) ||
	    !json_object_is_type(layers, json_type_array) ||
	    json_object_array_length(layers) != 1) {
		ret = xip_error(-EINVAL,
				"%s: an xiptool artifact has one layer", what);
		goto out;
	}
	l = json_object_array_get_idx(layers, 0);
	lmt = jstr(l, "mediaType");
	ld = jstr(l, "digest");
	if (!lmt || strcmp(lmt, XIP_OCI_LAYER_TYPE)) {
		ret = xip_error(-EMEDIUMTYPE, "%s: a layer of type %s", what,
				lmt ? lmt : "(none)");
		goto out;
	}
	if (!digest_ok(ld) || !json_object_object_get_ex(l, "size", &sz) ||
	    !json_object_is_type(sz, json_type_int) ||
	    json_object_get_int64(sz) <= 0) {
		ret = xip_error(-EINVAL,
				"%s: the layer has no sha256 digest "
				"or size",
				what);
		goto out;
	}
	snprintf(digest, dlen, "%s", ld);
	*size = (uint64_t)json_object_get_int64(sz);
out:
	json_object_put(m);
	return ret;
}

/* "sha256:HEX" of the bytes hashed in @ctx into @out (80 bytes) */
static int digest_end(EVP_MD_CTX *ctx, char *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	if (!EVP_DigestFinal_ex(ctx, md, &n) || n != 32)
		return -EIO;
	memcpy(out, "sha256:", 7);
	xip_hex_encode(md, 32, out + 7);
	return 0;
}

int xip_ocipull_open(const struct xip_attach_opts *o, struct xip_ocipull **pp,
		     uint64_t *size)
{
	struct xip_oci_client_opts none = {0};
	struct xip_ocipull *p = calloc(1, sizeof(*p));
	struct xip_oci_body *b = NULL;
	char *json = NULL, got[80];
	size_t len = 0;
	int ret;

	if (!p)
		return -ENOMEM;
	p->spec = o->image;
	ret = xip_oci_ref_parse(o->image, &p->ref);
	if (!ret)
		ret = xip_lazy_load(XIP_LAZY_JSON);
	if (!ret)
		ret = xip_lazy_load(XIP_LAZY_CRYPTO);
	if (!ret)
		ret =
		    xip_oci_client_new(&p->ref, o->oci ? o->oci : &none, &p->c);
	if (!ret)
		ret = xip_oci_request(p->c, "GET", "manifests",
				      xip_oci_ref_reference(&p->ref),
				      ACCEPT_MANIFESTS, &b);
	if (!ret)
		ret = read_all(b, &json, &len, o->image);
	xip_oci_body_close(b);
	if (!ret && p->ref.digest) {
		EVP_MD_CTX *ctx = EVP_MD_CTX_new();

		ret = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
			      EVP_DigestUpdate(ctx, json, len)
			  ? digest_end(ctx, got)
			  : -ENOMEM;
		EVP_MD_CTX_free(ctx);
		if (!ret && strcmp(got, p->ref.digest))
			ret = xip_error(-EBADMSG,
					"%s: the manifest's digest is %s",
					o->image, got);
	}
	if (!ret)
		ret = xip_ocipull_manifest(json, len, o->image, p->digest,
					   sizeof(p->digest), &p->size);
	free(json);
	if (ret) {
		xip_ocipull_close(p);
		return ret;
	}
	*size = p->size;
	*pp = p;
	return 0;
}

void xip_ocipull_close(struct xip_ocipull *p)
{
	if (!p)
		return;
	xip_oci_client_free(p->c);
	xip_oci_ref_free(&p->ref);
	free(p);
}

int xip_ocipull_default_name(const char *spec, char *buf, size_t len)
{
	struct xip_oci_ref ref;
	const char *slash;
	int ret = xip_oci_ref_parse(spec, &ref);

	if (ret)
		return ret;
	slash = strrchr(ref.repo, '/');
	ret = xip_registry_name_check(slash ? slash + 1 : ref.repo);
	if (!ret)
		snprintf(buf, len, "%s", slash ? slash + 1 : ref.repo);
	else
		ret = xip_error(ret, "%s: no segment name from it (--name)",
				spec);
	xip_oci_ref_free(&ref);
	return ret;
}

/* The verity check's read-ahead: a Range request of the blob. */
int xip_ocipull_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct xip_ocipull *p = ctx;
	struct xip_oci_body *b;
	size_t n = 0;
	ssize_t r = 0;
	int ret;

	if (off > p->size || len > p->size - off)
		return xip_error(-EINVAL, "%s: a read past the blob's end",
				 p->spec);
	ret = xip_oci_blob_range(p->c, p->digest, off, len, &b);
	if (ret)
		return ret;
	while (n < len &&
	       (r = xip_oci_body_read(b, (char *)buf + n, len - n)) > 0)
		n += (size_t)r;
	xip_oci_body_close(b);
	if (r < 0)
		return (int)r;
	return n == len ? 0 : xip_error(-EIO, "%s: a short range", p->spec);
}

/* The pulled bytes must be an ext2 file system we can open. */
static int check_image(int fd, const char *what)
{
	struct xip_seg *seg;
	struct xip_image *img;
	int ret;

	ret = xip_seg_open_fd(fd, what, 0, &seg);
	if (!ret)
		ret = xip_image_open_segment(seg, XIP_IMG_NOLOCK, &img);
	if (!ret)
		xip_image_close(img);
	return ret;
}

/* @n bytes at @off of the segment (its file @fd, or @map): written, hashed */
static int land(int fd, uint8_t *map, const char *path,
		struct xip_verity_stream *vs, const uint8_t *buf, size_t n,
		uint64_t off)
{
	int ret = 0;

	if (map) {
		memcpy(map + off, buf, n);
	} else if (fallocate(fd, 0, (off_t)off, (off_t)n) < 0 &&
		   errno != EOPNOTSUPP) {
		/* reserved before it is written, as a pull from NBD is */
		ret = xip_error(-errno,
				"%s: cannot reserve %zu bytes of memory: %s",
				path, n, strerror(errno));
	} else if ((ret = xip_pwrite_all(fd, buf, n, off))) {
		ret = xip_error(ret, "%s: %s", path, strerror(-ret));
	}
	if (!ret && vs)
		ret = xip_verity_stream_hash(vs, off, buf, n);
	return ret;
}

/*
 * The layer's sha256 on a thread of its own, a buffer behind the writes:
 * hashing 1.4 GB/s is as slow as the network here, so the two overlap.
 */
struct hasher {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	EVP_MD_CTX *ctx;
	const uint8_t *p; /* a buffer to hash, or NULL */
	size_t len;
	bool stop, failed;
};

static void *hash_run(void *arg)
{
	struct hasher *h = arg;

	pthread_mutex_lock(&h->lock);
	for (;;) {
		while (!h->p && !h->stop)
			pthread_cond_wait(&h->cond, &h->lock);
		if (!h->p)
			break;
		pthread_mutex_unlock(&h->lock);
		if (!EVP_DigestUpdate(h->ctx, h->p, h->len))
			h->failed = true;
		pthread_mutex_lock(&h->lock);
		h->p = NULL;
		pthread_cond_broadcast(&h->cond);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

/* Wait until the hasher is idle; then hand it @p (NULL: just wait). */
static void hash_give(struct hasher *h, const uint8_t *p, size_t len)
{
	pthread_mutex_lock(&h->lock);
	while (h->p)
		pthread_cond_wait(&h->cond, &h->lock);
	h->p = p;
	h->len = len;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

static void hash_stop(struct hasher *h, pthread_t tid)
{
	hash_give(h, NULL, 0);
	pthread_mutex_lock(&h->lock);
	h->stop = true;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	pthread_join(tid, NULL);
}

/* Fill @buf (@cap bytes) from the body, or up to its end: bytes read. */
static ssize_t body_fill(struct xip_oci_body *b, uint8_t *buf, size_t cap)
{
	size_t n = 0;
	ssize_t r = 1;

	while (n < cap && (r = xip_oci_body_read(b, buf + n, cap - n)) > 0)
		n += (size_t)r;
	return r < 0 ? r : (ssize_t)n;
}

int xip_ocipull_pull(struct xip_ocipull *p, int fd, void *map, const char *path,
		     struct xip_verity_stream *vs)
{
	struct hasher h = {.lock = PTHREAD_MUTEX_INITIALIZER,
			   .cond = PTHREAD_COND_INITIALIZER};
	struct xip_oci_body *b = NULL;
	uint8_t *buf[2] = {malloc(PULL_BUF), malloc(PULL_BUF)};
	uint64_t off = 0;
	unsigned int i = 0;
	bool started = false;
	pthread_t tid;
	char got[80];
	ssize_t r;
	int ret = 0;

	h.ctx = EVP_MD_CTX_new();
	if (!h.ctx || !buf[0] || !buf[1] ||
	    !EVP_DigestInit_ex(h.ctx, EVP_sha256(), NULL))
		ret = -ENOMEM;
	if (!ret && pthread_create(&tid, NULL, hash_run, &h))
		ret = -EAGAIN;
	started = !ret;
	if (!ret)
		ret =
		    xip_oci_request(p->c, "GET", "blobs", p->digest, NULL, &b);
	while (!ret) {
		/* buf[i] is not the hasher's: it has at most the other */
		r = body_fill(b, buf[i], PULL_BUF);
		if (r < 0) {
			ret = (int)r;
			break;
		}
		if (r == 0)
			break;
		if ((uint64_t)r > p->size - off) {
			ret = xip_error(-EBADMSG,
					"%s: the blob is longer than "
					"its %" PRIu64 " bytes",
					p->spec, p->size);
			break;
		}
		ret = land(fd, map, path, vs, buf[i], (size_t)r, off);
		if (ret)
			break;
		hash_give(&h, buf[i], (size_t)r);
		off += (uint64_t)r;
		i ^= 1;
	}
	if (started)
		hash_stop(&h, tid);
	xip_oci_body_close(b);
	if (!ret && off != p->size)
		ret = xip_error(-EBADMSG,
				"%s: the blob ended after %" PRIu64
				" of %" PRIu64 " bytes",
				p->spec, off, p->size);
	if (!ret && h.failed)
		ret = -EIO;
	if (!ret)
		ret = digest_end(h.ctx, got);
	if (!ret && strcmp(got, p->digest))
		ret =
		    xip_error(-EBADMSG, "%s: the layer's digest is %s, not %s",
			      p->spec, got, p->digest);
	EVP_MD_CTX_free(h.ctx);
	free(buf[0]);
	free(buf[1]);
	if (!ret)
		ret = check_image(fd, p->spec);
	return ret;
}
