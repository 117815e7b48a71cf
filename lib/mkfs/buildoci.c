// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mkfs --oci: the tree of an OCI image layout (image-spec v1: index.json,
 * blobs/sha256/...).  index.json gives the manifest of a tag (through an
 * image index of several platforms when it is one), the manifest gives
 * the layers, and each layer blob is streamed through libarchive onto the
 * in-memory tree that --tar builds (buildtar.c applies the whiteouts).
 *
 * The layout is untrusted: JSON documents are read up to a bound, digests
 * must be "sha256:" and 64 lowercase hex digits before they name a file,
 * blobs are opened below the layout's blobs/sha256 with no symbolic link
 * followed on the way (blobs/, sha256/ or the blob), and
 * every blob's size and digest is checked as its bytes go by.
 *
 * An image in a registry (docker://HOST/REPO[:TAG|@DIGEST]) is read the
 * same way through the registry client (lib/oci): the manifest of the
 * reference takes index.json's place, and manifests and blobs are fetched
 * by digest (GET /v2/REPO/manifests|blobs/DIGEST) instead of opened under
 * blobs/sha256, with the same bounds and the same checks on every byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "mkfs/xip_mkfs.h"
#include "mkfs/mkfs_int.h"
#include "util/xip_error.h"
#include "util/xip_lazy.h"
#include "util/xip_util.h"
#include "oci/xip_oci.h"

#include <archive.h>
#include <json-c/json.h>
#include <openssl/evp.h>

/*
 * What parsing an index or a manifest may cost: its bytes, its values
 * (json-c spends some 700 bytes on an empty object) and its depth.  Real
 * ones are a few KiB of a few hundred values, nested four deep.
 */
#define JSON_MAX (4u << 20)
#define JSON_VALUES_MAX 131072u
#define JSON_DEPTH_MAX 16
/*
 * What a layer blob may hold past the end of its archive: the padding of
 * the archive's last record (10240 bytes), compressed or not, with room
 * to spare.  After a reader's error, the blob is read on (to name a
 * damaged blob as such) only when so much is left.
 */
#define TAIL_MAX 65536u
#define DAMAGED_READ_MAX (64u << 20)
#define REF_NAME "org.opencontainers.image.ref.name"
#define MT_INDEX "application/vnd.oci.image.index.v1+json"
#define MT_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
/* what a registry is asked for: the two kinds of each, index or manifest */
#define ACCEPT_MANIFESTS MT_INDEX ", " MT_MANIFEST ", " MT_DOCKER_LIST ", " \
	MT_DOCKER_MANIFEST

#define mt_index(mt) (!strcmp(mt, MT_INDEX) || !strcmp(mt, MT_DOCKER_LIST))
#define mt_manifest(mt) \
	(!strcmp(mt, MT_MANIFEST) || !strcmp(mt, MT_DOCKER_MANIFEST))

/*
 * Where the blobs come from: a layout's directory or a registry.  Both
 * hand out a blob's bytes by its digest; struct blob checks them.
 */
struct oci_src {
	const char *name;		/* the layout, docker://HOST/REPO */
	int dirfd;			/* a layout's directory, else -1 */
	struct xip_oci_client *client;	/* a registry's, else NULL */
};

enum blob_kind { BK_MANIFEST, BK_LAYER };

int xip_oci_split(const char *spec, char **dir, char **tag)
{
	const char *colon = strrchr(spec, ':');
	struct stat st;

	*tag = NULL;
	if (stat(spec, &st) == 0 && S_ISDIR(st.st_mode))
		colon = NULL;
	if (colon && strchr(colon, '/'))
		colon = NULL;
	*dir = colon ? strndup(spec, (size_t)(colon - spec)) : strdup(spec);
	if (!*dir)
		return -ENOMEM;
	if (colon) {
		*tag = strdup(colon + 1);
		if (!*tag) {
			free(*dir);
			return -ENOMEM;
		}
	}
	if (!**dir || (*tag && !**tag)) {
		free(*dir);
		free(*tag);
		return xip_error(-EINVAL, "%s: expected LAYOUT[:TAG]", spec);
	}
	return 0;
}

/* Member @key of the JSON object @o when it has @type, else NULL. */
static struct json_object *jget(struct json_object *o, const char *key,
				json_type type)
{
	struct json_object *v;

	if (!o || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, type))
		return NULL;
	return v;
}

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key, json_type_string);

	return v ? json_object_get_string(v) : NULL;
}

static struct json_object *jarr(struct json_object *o, const char *key)
{
	return jget(o, key, json_type_array);
}

/*
 * The values of the JSON text @s at most, read before it is parsed: each
 * is the root or an element of an object or array, which has one more
 * than the commas in it.  So: 1, plus the objects and arrays, plus the
 * commas (brackets and commas inside strings count too: a bound).
 */
static size_t json_values_bound(const char *s, size_t len)
{
	bool in_str = false;
	size_t n = 1;

	for (size_t i = 0; i < len; i++) {
		if (in_str) {
			if (s[i] == '\\')
				i++;
			else if (s[i] == '"')
				in_str = false;
		} else if (s[i] == '"') {
			in_str = true;
		} else if (s[i] == '{' || s[i] == '[' || s[i] == ',') {
			n++;
		}
	}
	return n;
}

static int jparse(const char *json, size_t len, const char *what,
		  struct json_object **out)
{
	struct json_tokener *tok;
	enum json_tokener_error err;
	struct json_object *o;

	if (len > JSON_MAX)
		return xip_error(-EFBIG, "%s: larger than %u bytes", what,
				 JSON_MAX);
	if (json_values_bound(json, len) > JSON_VALUES_MAX)
		return xip_error(-EFBIG, "%s: more than %u JSON values", what,
				 JSON_VALUES_MAX);
	tok = json_tokener_new_ex(JSON_DEPTH_MAX);
	if (!tok)
		return -ENOMEM;
	o = json_tokener_parse_ex(tok, json, (int)len);
	err = json_tokener_get_error(tok);
	if (o && err == json_tokener_success &&
	    tok->char_offset < (int)len) {
		/* trailing bytes other than white space */
		for (size_t i = (size_t)tok->char_offset; i < len; i++)
			if (!strchr(" \t\r\n", json[i]))
				err = json_tokener_error_parse_unexpected;
	}
	json_tokener_free(tok);
	if (!o || err != json_tokener_success ||
	    !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return xip_error(-EINVAL, "%s: not a JSON object%s%s", what,
				 err != json_tokener_success ? ": " : "",
				 err != json_tokener_success ?
				 json_tokener_error_desc(err) : "");
	}
	*out = o;
	return 0;
}

/* The platform string of this host, as OCI names it ("linux/amd64"). */
static void host_platform(char *buf, size_t len)
{
	struct utsname u;
	const char *arch = "unknown";

	if (uname(&u) == 0) {
		arch = u.machine;
		if (!strcmp(arch, "x86_64"))
			arch = "amd64";
		else if (!strcmp(arch, "aarch64"))
			arch = "arm64";
		else if (!strcmp(arch, "i686") || !strcmp(arch, "i386"))
			arch = "386";
		else if (!strncmp(arch, "armv7", 5))
			arch = "arm";
	}
	snprintf(buf, len, "linux/%s", arch);
}

static bool platform_match(struct json_object *d, const char *want)
{
	struct json_object *p;
	const char *os, *arch, *var;
	char have[256];

	if (!json_object_object_get_ex(d, "platform", &p))
		return false;
	os = jstr(p, "os");
	arch = jstr(p, "architecture");
	var = jstr(p, "variant");
	if (!os || !arch)
		return false;
	snprintf(have, sizeof(have), "%s/%s", os, arch);
	if (!strcmp(have, want))
		return true;
	if (!var)
		return false;
	snprintf(have, sizeof(have), "%s/%s/%s", os, arch, var);
	return !strcmp(have, want);
}

static int desc_out(struct json_object *d, const char *what, char **digest,
		    char **media)
{
	const char *dg = jstr(d, "digest"), *mt = jstr(d, "mediaType");

	if (!dg || !xip_oci_digest_ok(dg))
		return xip_error(-EINVAL, "%s: no sha256 digest", what);
	*digest = strdup(dg);
	*media = strdup(mt ? mt : MT_MANIFEST);
	if (!*digest || !*media) {
		free(*digest);
		free(*media);
		return -ENOMEM;
	}
	return 0;
}

static int desc_size(struct json_object *d, uint64_t *size);

/* Tags of @arr, for the message of an ambiguous or missing tag. */
static void tag_list(struct json_object *arr, char *buf, size_t len)
{
	size_t n = json_object_array_length(arr), at = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && at < len; i++) {
		const char *t = NULL;
		struct json_object *an;

		if (json_object_object_get_ex(json_object_array_get_idx(arr, i),
					      "annotations", &an))
			t = jstr(an, REF_NAME);
		at += (size_t)snprintf(buf + at, len - at, "%s%s",
				       at ? ", " : "", t ? t : "(untagged)");
	}
}

/* Do descriptors @a and @b name one manifest (the same digest)? */
static bool same_digest(struct json_object *a, struct json_object *b)
{
	const char *da = jstr(a, "digest"), *db = jstr(b, "digest");

	return da && db && !strcmp(da, db);
}

int xip_oci_pick(const char *json, size_t len, const char *tag,
		 const char *platform, char **digest, char **media,
		 uint64_t *size)
{
	struct json_object *idx, *arr, *pick = NULL, *first = NULL;
	char tags[512], host[128];
	size_t n;
	int ret, matches = 0;
	bool several = false;	/* matches of more than one digest */

	ret = xip_lazy_load(XIP_LAZY_JSON);
	if (!ret)
		ret = jparse(json, len, "index", &idx);
	if (ret)
		return ret;
	arr = jarr(idx, "manifests");
	n = arr ? json_object_array_length(arr) : 0;
	if (!n) {
		json_object_put(idx);
		return xip_error(-EINVAL, "index: no manifests");
	}
	if (!platform) {
		host_platform(host, sizeof(host));
		platform = host;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *d = json_object_array_get_idx(arr, i), *an;
		const char *name = NULL;

		if (json_object_object_get_ex(d, "annotations", &an))
			name = jstr(an, REF_NAME);
		if (tag && (!name || strcmp(name, tag)))
			continue;
		if (!first)
			first = d;
		else if (!same_digest(first, d))
			several = true;
		matches++;
		/* several platforms: the one asked for, else the host's */
		if (!pick && platform_match(d, platform))
			pick = d;
	}
	/* tags naming one manifest: one image */
	if (!pick && !several)
		pick = first;
	tag_list(arr, tags, sizeof(tags));
	if (!matches && tag)
		ret = xip_error(-ENOENT, "no tag '%s' in the index (tags: %s)",
				tag, tags);
	else if (!pick)
		ret = xip_error(-EINVAL,
				"several images and none for %s: name one of the tags: %s",
				platform, tags);
	else if (desc_size(pick, size))
		ret = xip_error(-EINVAL, "index: a manifest without a size");
	else
		ret = desc_out(pick, "index", digest, media);
	json_object_put(idx);
	return ret;
}

/* ---- blobs ------------------------------------------------------------- */

struct blob {
	int fd;
	struct xip_oci_body *body;	/* from a registry */
	const char *what;	/* for messages */
	const char *digest;	/* NULL: not known (a manifest by tag) */
	uint64_t size, seen;	/* declared, read so far */
	EVP_MD_CTX *md;
	bool too_long;
	int err;		/* a failed read, its message: */
	char err_msg[XIP_ERRMSG_MAX];
	char buf[65536];
};

/*
 * PATH below DIRFD, no component of it a symbolic link: the layout's
 * blobs/ and blobs/sha256/ are opened one level at a time with
 * O_NOFOLLOW, the blob last (non-blocking: a FIFO planted as a blob does
 * not stall us; the caller refuses anything but a regular file).
 */
static int open_beneath(int dirfd, const char *path)
{
	char part[128];
	const char *p = path, *slash;
	int fd = dirfd, next, err;
	struct stat st;

	while ((slash = strchr(p, '/'))) {
		if ((size_t)(slash - p) >= sizeof(part)) {
			next = -1;
			errno = ENAMETOOLONG;
		} else {
			memcpy(part, p, (size_t)(slash - p));
			part[slash - p] = '\0';
			next = openat(fd, part, O_RDONLY | O_DIRECTORY |
				      O_CLOEXEC | O_NOFOLLOW);
		}
		err = errno;
		if (next < 0 && err == ENOTDIR &&
		    !fstatat(fd, part, &st, AT_SYMLINK_NOFOLLOW) &&
		    S_ISLNK(st.st_mode))
			err = ELOOP;	/* O_DIRECTORY answers ENOTDIR */
		if (fd != dirfd)
			close(fd);
		if (next < 0) {
			errno = err;
			return -1;
		}
		fd = next;
		p = slash + 1;
	}
	next = openat(fd, p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY |
		      O_NONBLOCK);
	err = errno;
	if (fd != dirfd)
		close(fd);
	errno = err;
	return next;
}

static int blob_md(struct blob *b)
{
	b->md = EVP_MD_CTX_new();
	if (!b->md || !EVP_DigestInit_ex(b->md, EVP_sha256(), NULL))
		return xip_error(-ENOMEM, "%s: sha256 unavailable", b->what);
	return 0;
}

/* A manifest or layer from the registry, by digest (or by tag: @ref). */
static int blob_get(const struct oci_src *s, enum blob_kind k,
		    const char *ref, struct blob *b)
{
	int ret = xip_oci_request(s->client, "GET",
				  k == BK_LAYER ? "blobs" : "manifests", ref,
				  k == BK_LAYER ? NULL : ACCEPT_MANIFESTS,
				  &b->body);
	int64_t len;

	if (ret)
		return ret;
	len = xip_oci_body_length(b->body);
	if (len > 0 && (uint64_t)len > b->size)
		return xip_error(-EFBIG,
				 "%s: size %" PRId64 " exceeds the %" PRIu64 " bytes of its descriptor",
				 b->what, len, b->size);
	return blob_md(b);
}

static int blob_open(const struct oci_src *s, enum blob_kind k,
		     const char *digest, uint64_t size, const char *what,
		     struct blob *b)
{
	char path[128];
	struct stat st;

	memset(b, 0, offsetof(struct blob, err_msg));
	b->fd = -1;
	b->what = what;
	b->digest = digest;
	b->size = size;
	if (!xip_oci_digest_ok(digest))
		return xip_error(-EINVAL, "%s: digest '%s' is not sha256",
				 what, digest);
	if (s->client)
		return blob_get(s, k, digest, b);
	snprintf(path, sizeof(path), "blobs/sha256/%s", digest + 7);
	b->fd = open_beneath(s->dirfd, path);
	if (b->fd < 0 && errno == ELOOP)
		return xip_error(-ELOOP, "%s: %s: a symbolic link on the way "
				 "(refused)", what, path);
	if (b->fd < 0)
		return xip_error(-errno, "%s: %s: %s", what, path,
				 strerror(errno));
	if (fstat(b->fd, &st) < 0 || !S_ISREG(st.st_mode))
		return xip_error(-EINVAL, "%s: %s: not a regular file", what,
				 path);
	return blob_md(b);
}

static void blob_close(struct blob *b)
{
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
	xip_oci_body_close(b->body);
	b->body = NULL;
	EVP_MD_CTX_free(b->md);
	b->md = NULL;
}

/* Up to sizeof(buf) more bytes of the blob, hashed: 0 at its end. */
static ssize_t blob_read(struct blob *b)
{
	ssize_t r;

	if (b->err)
		return b->err;	/* a registry is not asked twice */
	if (b->body) {
		r = xip_oci_body_read(b->body, b->buf, sizeof(b->buf));
		if (r < 0) {
			char msg[XIP_ERRMSG_MAX];

			snprintf(msg, sizeof(msg), "%s", xip_errmsg());
			b->err = xip_error((int)r, "%s: %s", b->what, msg);
			snprintf(b->err_msg, sizeof(b->err_msg), "%s",
				 xip_errmsg());
			return r;
		}
	} else {
		do
			r = read(b->fd, b->buf, sizeof(b->buf));
		while (r < 0 && errno == EINTR);
		if (r < 0)
			return -errno;
	}
	b->seen += (uint64_t)r;
	if (b->seen > b->size) {
		b->too_long = true;
		return -EFBIG;
	}
	if (r && !EVP_DigestUpdate(b->md, b->buf, (size_t)r))
		return -ENOMEM;
	return r;
}

/* Read what is left and compare size and digest. */
static int blob_finish(struct blob *b)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char hex[2 * EVP_MAX_MD_SIZE + 1];
	ssize_t r;

	while ((r = blob_read(b)) > 0)
		;
	if (b->err)
		return xip_error(b->err, "%s", b->err_msg);
	if (r < 0 && !b->too_long)
		return xip_error((int)r, "%s: %s", b->what, strerror((int)-r));
	if (b->too_long || b->seen != b->size)
		return xip_error(-EINVAL,
				 "%s: size %s the %llu bytes of its descriptor",
				 b->what, b->too_long ? "exceeds" : "differs from",
				 (unsigned long long)b->size);
	if (!EVP_DigestFinal_ex(b->md, md, &mdlen))
		return -ENOMEM;
	xip_hex_encode(md, mdlen, hex);
	if (b->digest && strcmp(hex, b->digest + 7))
		return xip_error(-EINVAL, "%s: digest mismatch (sha256:%s)",
				 b->what, hex);
	return 0;
}

/*
 * Close @b; on success the @at bytes read into @s (one more for its NUL)
 * become the text in *@out, *@len; on failure @s is freed: @ret.
 */
static int blob_text_done(struct blob *b, int ret, char *s, size_t at,
			  char **out, size_t *len)
{
	blob_close(b);
	free(b);
	if (ret) {
		free(s);
		return ret;
	}
	s[at] = '\0';
	*out = s;
	*len = at;
	return 0;
}

/* A whole JSON blob (bounded), its size and digest checked. */
static int blob_slurp(const struct oci_src *src, const char *digest,
		      uint64_t size, const char *what, char **out, size_t *len)
{
	struct blob *b = malloc(sizeof(*b));
	char *s = NULL;
	size_t at = 0;
	ssize_t r;
	int ret;

	if (!b)
		return -ENOMEM;
	if (size > JSON_MAX) {
		free(b);
		return xip_error(-EFBIG, "%s: larger than %u bytes", what,
				 JSON_MAX);
	}
	ret = blob_open(src, BK_MANIFEST, digest, size, what, b);
	if (!ret && !(s = malloc(size + 1)))
		ret = -ENOMEM;
	while (!ret && (r = blob_read(b)) > 0) {
		memcpy(s + at, b->buf, (size_t)r);
		at += (size_t)r;
	}
	if (!ret)
		ret = blob_finish(b);
	return blob_text_done(b, ret, s, at, out, len);
}

/*
 * The manifest a registry gives for the reference (a tag or a digest),
 * read up to JSON_MAX: checked against the digest asked for, else
 * against the one the registry names (Docker-Content-Digest), if any.
 * *@media: its Content-Type (the document's mediaType wins).
 */
static int top_manifest(const struct oci_src *src,
			const struct xip_oci_ref *ref, char **out,
			size_t *len, char **media)
{
	struct blob *b = malloc(sizeof(*b));
	const char *named;
	char *s = NULL, what[300];
	size_t at = 0;
	ssize_t r;
	int ret;

	if (!b)
		return -ENOMEM;
	memset(b, 0, offsetof(struct blob, err_msg));
	b->fd = -1;
	b->what = what;
	b->size = JSON_MAX;
	snprintf(what, sizeof(what), "%s%s%s", src->name,
		 ref->digest ? "@" : ":", xip_oci_ref_reference(ref));
	ret = blob_get(src, BK_MANIFEST, xip_oci_ref_reference(ref), b);
	if (ret == -EFBIG)	/* its Content-Length */
		ret = xip_error(-EFBIG, "%s: larger than %u bytes", what,
				JSON_MAX);
	if (!ret) {
		named = xip_oci_body_digest(b->body);
		b->digest = ref->digest ? ref->digest :
			    named && xip_oci_digest_ok(named) ? named : NULL;
		*media = strdup(xip_oci_body_type(b->body) ?
				xip_oci_body_type(b->body) : MT_MANIFEST);
		s = malloc(JSON_MAX + 1);
		if (!s || !*media)
			ret = -ENOMEM;
	}
	while (!ret && (r = blob_read(b)) > 0) {
		memcpy(s + at, b->buf, (size_t)r);
		at += (size_t)r;
	}
	if (!ret && b->too_long)
		ret = xip_error(-EFBIG, "%s: larger than %u bytes", what,
				JSON_MAX);
	if (!ret) {
		b->size = b->seen;	/* whatever it was: the digest counts */
		ret = blob_finish(b);
	}
	return blob_text_done(b, ret, s, at, out, len);
}

/* index.json: not a blob, read up to JSON_MAX. */
static int read_index(int dirfd, const char *layout, char **out, size_t *len)
{
	int fd = openat(dirfd, "index.json",
			O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	char *s;
	int ret;

	if (fd < 0)
		return xip_error(-errno, "%s/index.json: %s", layout,
				 strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return xip_error(-EINVAL, "%s/index.json: not a regular file",
				 layout);
	}
	if ((uint64_t)st.st_size > JSON_MAX) {
		close(fd);
		return xip_error(-EFBIG, "%s/index.json: larger than %u bytes",
				 layout, JSON_MAX);
	}
	s = malloc((size_t)st.st_size + 1);
	if (!s) {
		ret = -ENOMEM;
	} else {
		ssize_t r = xip_pread_full(fd, s, (size_t)st.st_size, 0);

		ret = r < 0 ? (int)r : r != st.st_size ? -EIO : 0;
	}
	close(fd);
	if (ret) {
		free(s);
		return ret == -ENOMEM ? ret :
		       xip_error(ret, "%s/index.json: %s", layout,
				 strerror(-ret));
	}
	s[st.st_size] = '\0';
	*out = s;
	*len = (size_t)st.st_size;
	return 0;
}

/* ---- layers ------------------------------------------------------------ */

static la_ssize_t layer_read_cb(struct archive *a, void *arg,
				const void **buf)
{
	struct blob *b = arg;
	ssize_t r = blob_read(b);

	(void)a;
	*buf = b->buf;
	return r < 0 ? -1 : r;
}

enum layer_filter { LF_NONE, LF_GZIP, LF_ZSTD };

static int layer_filter(const char *mt, enum layer_filter *f)
{
	static const char *const oci = "application/vnd.oci.image.layer.";
	const char *plus = strrchr(mt, '+');

	if (!strncmp(mt, "application/vnd.docker.image.rootfs.diff.tar", 45)) {
		*f = !strcmp(mt + 45, ".gzip") ? LF_GZIP : LF_NONE;
		return mt[45] && *f == LF_NONE ? -EOPNOTSUPP : 0;
	}
	if (strncmp(mt, oci, strlen(oci)))
		return -EOPNOTSUPP;
	if (!plus) {
		*f = LF_NONE;
		return strcmp(mt + strlen(mt) - 4, ".tar") ? -EOPNOTSUPP : 0;
	}
	if (!strcmp(plus, "+gzip"))
		*f = LF_GZIP;
	else if (!strcmp(plus, "+zstd"))
		*f = LF_ZSTD;
	else
		return -EOPNOTSUPP;
	return 0;
}

static int one_layer(struct btree *t, const struct xip_build_opts *o,
		     const struct oci_src *src, struct json_object *d,
		     uint32_t layer)
{
	const char *layout = src->name;
	const char *dg = jstr(d, "digest"), *mt = jstr(d, "mediaType");
	struct blob *b;
	struct archive *a;
	enum layer_filter f;
	char what[256];
	uint64_t size, left;
	bool unterminated = false;
	int ret, fin;

	snprintf(what, sizeof(what), "%s: layer %u (%.19s)", layout, layer,
		 dg ? dg : "?");
	if (!dg || !mt || desc_size(d, &size))
		return xip_error(-EINVAL, "%s: no digest, media type or size",
				 what);
	if (layer_filter(mt, &f))
		return xip_error(-EOPNOTSUPP, "%s: media type %s is not a layer",
				 what, mt);
	b = malloc(sizeof(*b));
	if (!b)
		return -ENOMEM;
	ret = blob_open(src, BK_LAYER, dg, size, what, b);
	a = ret ? NULL : archive_read_new();
	if (!ret && !a)
		ret = -ENOMEM;
	if (!ret) {
		if (f == LF_GZIP)
			archive_read_support_filter_gzip(a);
		else if (f == LF_ZSTD)
			archive_read_support_filter_zstd(a);
		archive_read_support_format_raw(a);
		if (archive_read_open(a, b, NULL, layer_read_cb, NULL) !=
		    ARCHIVE_OK)
			ret = xip_error(-EINVAL, "%s: not a tar archive: %s",
					what, archive_error_string(a) ?
					archive_error_string(a) : "?");
		else
			ret = xip_btree_tar_layer(t, o, a, what, layer,
						  &unterminated);
	}
	left = b->seen < b->size ? b->size - b->seen : 0;
	if (!ret && left > TAIL_MAX) {
		/* a small archive declared large: not read to its end */
		ret = xip_error(-EINVAL,
				"%s: %" PRIu64 " bytes past the end of its archive (at most %u)",
				what, left, TAIL_MAX);
	} else if (b->md && (!ret || left <= DAMAGED_READ_MAX)) {
		/* a damaged blob is named as such before what it did to the
		 * reader */
		char msg[XIP_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", ret ? xip_errmsg() : "");
		fin = blob_finish(b);
		if (fin)
			ret = fin;
		else if (ret && ret != -ENOMEM)
			xip_error(ret, "%s", msg);
	}
	/* the blob as its digest says: what umoci insert writes */
	if (!ret && unterminated)
		xip_btree_warn(o, "%s: layer %u (%s): %s", layout, layer, dg,
			       XIP_TAR_UNTERMINATED);
	if (a)
		archive_read_free(a);
	blob_close(b);
	free(b);
	return ret;
}

/* A descriptor's size: a JSON integer of at least 0. */
static int desc_size(struct json_object *d, uint64_t *size)
{
	struct json_object *sz;
	int64_t v;

	if (!json_object_object_get_ex(d, "size", &sz) ||
	    !json_object_is_type(sz, json_type_int) ||
	    (v = json_object_get_int64(sz)) < 0)
		return -EINVAL;
	*size = (uint64_t)v;
	return 0;
}

/* The manifest descriptor of index.json for @tag. */
static int layout_pick(const struct oci_src *src, const char *tag,
		       const char *platform, char **digest, char **media,
		       uint64_t *size)
{
	char *json = NULL;
	size_t len = 0;
	int ret = read_index(src->dirfd, src->name, &json, &len);

	if (!ret) {
		ret = xip_oci_pick(json, len, tag, platform, digest, media,
				   size);
		if (ret && ret != -ENOMEM) {
			char msg[XIP_ERRMSG_MAX];

			snprintf(msg, sizeof(msg), "%s", xip_errmsg());
			xip_error(ret, "%s: %s", src->name, msg);
		}
	}
	free(json);
	return ret;
}

/*
 * The manifest of the image: from a layout, index.json's descriptor for
 * the tag, then an image index if any; from a registry, the manifest of
 * the reference, an image index (a manifest list) if any.  An index
 * leads to the manifest for @platform, fetched by digest.
 */
static int load_manifest(const struct oci_src *src, const char *tag,
			 const struct xip_oci_ref *ref, const char *platform,
			 struct json_object **man)
{
	char *json = NULL, *digest = NULL, *media = NULL, what[300];
	uint64_t size = 0;
	size_t len = 0;
	int ret, depth;
	struct json_object *o = NULL;

	if (src->client) {
		ret = top_manifest(src, ref, &json, &len, &media);
		snprintf(what, sizeof(what), "%s%s%s", src->name,
			 ref->digest ? "@" : ":", xip_oci_ref_reference(ref));
	} else {
		ret = layout_pick(src, tag, platform, &digest, &media, &size);
	}
	for (depth = 0; !ret; depth++) {
		const char *mt;

		if (!json) {
			snprintf(what, sizeof(what), "%s%s%s", src->name,
				 src->client ? "@" : ": ", digest);
			ret = blob_slurp(src, digest, size, what, &json, &len);
		}
		if (!ret)
			ret = jparse(json, len, what, &o);
		if (ret)
			break;
		mt = jstr(o, "mediaType");
		if (!mt)
			mt = media;
		if (mt_index(mt) && depth == 0) {
			/* several platforms: the one asked for */
			char *d2 = NULL, *m2 = NULL;

			ret = xip_oci_pick(json, len, NULL, platform, &d2, &m2,
					   &size);
			json_object_put(o);
			o = NULL;
			free(json);
			json = NULL;
			free(digest);
			free(media);
			digest = d2;
			media = m2;
			if (ret && ret != -ENOMEM) {
				char msg[XIP_ERRMSG_MAX];

				snprintf(msg, sizeof(msg), "%s", xip_errmsg());
				xip_error(ret, "%s: %s", what, msg);
			}
			continue;
		}
		if (!mt_manifest(mt) || !jarr(o, "layers") ||
		    !json_object_object_get_ex(o, "config", NULL))
			ret = xip_error(-EINVAL, "%s: not an image manifest (%s)",
					what, mt);
		break;
	}
	free(json);
	free(digest);
	free(media);
	if (ret) {
		json_object_put(o);
		return ret;
	}
	*man = o;
	return 0;
}

/* The layers of the manifest, in order, onto the tree. */
static int scan_manifest(struct btree *t, const struct xip_build_opts *o,
			 const struct oci_src *src, const char *tag,
			 const struct xip_oci_ref *ref, const char *platform)
{
	struct json_object *man = NULL, *layers;
	int ret = load_manifest(src, tag, ref, platform, &man);
	size_t n;

	if (ret)
		return ret;
	layers = jarr(man, "layers");
	n = json_object_array_length(layers);
	for (size_t i = 0; !ret && i < n; i++)
		ret = one_layer(t, o, src, json_object_array_get_idx(layers, i),
				(uint32_t)(i + 1));
	json_object_put(man);
	return ret;
}

static int scan_registry(struct btree *t, const struct xip_build_opts *o,
			 const char *spec, const char *platform)
{
	static const struct xip_oci_client_opts none;
	struct oci_src src = { .dirfd = -1 };
	struct xip_oci_ref ref;
	int ret = xip_oci_ref_parse(spec, &ref);

	if (ret)
		return ret;
	ret = xip_oci_client_new(&ref, o->registry ? o->registry : &none,
				 &src.client);
	if (!ret) {
		src.name = xip_oci_client_name(src.client);
		ret = scan_manifest(t, o, &src, NULL, &ref, platform);
	}
	xip_oci_client_free(src.client);
	xip_oci_ref_free(&ref);
	return ret;
}

int xip_btree_scan_oci(struct btree *t, const struct xip_build_opts *o,
		       const char *spec, const char *platform)
{
	struct oci_src src = { .dirfd = -1 };
	char *layout = NULL, *tag = NULL;
	int ret;

	ret = xip_btree_oci_begin(t, o, spec);
	if (!ret)
		ret = xip_lazy_load(XIP_LAZY_JSON);
	if (!ret)
		ret = xip_lazy_load(XIP_LAZY_CRYPTO);
	if (!ret && xip_oci_is_remote(spec))
		ret = scan_registry(t, o, spec, platform);
	else if (!ret)
		ret = xip_oci_split(spec, &layout, &tag);
	if (ret || !layout)
		goto out;
	src.name = layout;
	src.dirfd = open(layout, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (src.dirfd < 0)
		ret = xip_error(-errno, "%s: %s", layout, strerror(errno));
	else
		ret = scan_manifest(t, o, &src, tag, NULL, platform);
out:
	if (!ret)
		ret = xip_btree_make_lpf(t, o);
	if (src.dirfd >= 0)
		close(src.dirfd);
	free(layout);
	free(tag);
	return ret;
}
