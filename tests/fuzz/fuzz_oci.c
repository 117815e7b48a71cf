// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target "oci": an OCI image layout read as `mkfs --oci` reads it
 * (xip_btree_scan_oci(): index.json, an image index, the manifest, its
 * config and layer descriptors, every blob's size and digest, the layers
 * onto the tree), then the tree numbered and counted.
 *
 * The input is the layout's files, separated by lines "@@@@": index.json
 * first, then up to FUZZ_OCI_PARTS - 1 blobs, each stored under
 * blobs/sha256/ by its own digest.  So that the documents can name each
 * other, "@dK" in a file becomes "sha256:" and the digest of file K, and
 * "@sK" its size in bytes (K from 1 to 9, of a later file only: a file's
 * digest is taken after its own names are filled in).  The seeds
 * (seeds.py) come from layouts umoci made and from hand-made ones; see
 * the oci.dict dictionary.  The image is the one tagged "latest" when
 * the input names that tag, else the only one; a third of the inputs ask
 * for the platform linux/arm64/v8, the others for the host's.
 *
 * The layout lives in a private directory (mkdtemp, 0700, under TMPDIR,
 * else /dev/shm) whose files each input replaces and which is removed at
 * exit; the layers' data goes to a memfd spool.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "fuzz_build.h"
#include "util/xip_lazy.h"

#include <openssl/evp.h>

#define FUZZ_OCI_PARTS 10
#define SEP "\n@@@@\n"

struct part {
	const uint8_t *data;
	size_t size;
	uint8_t *text;		/* with the names filled in (malloc'ed) */
	size_t len;
	char hex[65];
};

static char layout[4096];
static int layout_fd = -1, blobs_fd = -1;

static void rm_files(int dirfd)
{
	DIR *d;
	struct dirent *de;

	/* not a dup: that would share (and leave at the end) the offset */
	d = fdopendir(openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_type == DT_REG)
			unlinkat(dirfd, de->d_name, 0);
	closedir(d);
}

static void layout_remove(void)
{
	char path[4200];

	if (layout_fd < 0)
		return;
	if (blobs_fd >= 0)
		rm_files(blobs_fd);
	rm_files(layout_fd);
	snprintf(path, sizeof(path), "%s/blobs/sha256", layout);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/blobs", layout);
	rmdir(path);
	rmdir(layout);
}

/* The private directory of the layout, made at the first input. */
static int layout_init(void)
{
	const char *tmp = getenv("TMPDIR");
	struct stat st;
	int fd;

	if (layout_fd >= 0)
		return blobs_fd < 0 ? -1 : 0;	/* made, or failed for good */
	/* in memory where there is a tmpfs for it: files made every input */
	if (!tmp || !*tmp)
		tmp = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ?
		      "/dev/shm" : "/tmp";
	snprintf(layout, sizeof(layout), "%s/xipfuzz-oci.XXXXXX", tmp);
	if (!mkdtemp(layout))
		return -1;
	layout_fd = open(layout, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (layout_fd < 0) {
		rmdir(layout);
		return -1;
	}
	atexit(layout_remove);
	if (mkdirat(layout_fd, "blobs", 0700) ||
	    (fd = openat(layout_fd, "blobs", O_RDONLY | O_DIRECTORY |
			 O_NOFOLLOW | O_CLOEXEC)) < 0)
		return -1;
	if (mkdirat(fd, "sha256", 0700) ||
	    (blobs_fd = openat(fd, "sha256", O_RDONLY | O_DIRECTORY |
			       O_NOFOLLOW | O_CLOEXEC)) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static int put_file(int dirfd, const char *name, const void *data,
		    size_t size)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC |
			O_NOFOLLOW | O_CLOEXEC, 0600);
	int ret = fd < 0 ? -1 : 0;

	while (!ret && size) {
		ssize_t n = write(fd, data, size);

		if (n <= 0)
			ret = -1;
		else
			data = (const uint8_t *)data + n, size -= (size_t)n;
	}
	if (fd >= 0)
		close(fd);
	return ret;
}

static size_t split(const uint8_t *data, size_t size, struct part *p)
{
	size_t n = 0, seplen = strlen(SEP);

	while (n < FUZZ_OCI_PARTS - 1) {
		const uint8_t *s = memmem(data, size, SEP, seplen);

		if (!s)
			break;
		p[n].data = data;
		p[n++].size = (size_t)(s - data);
		size -= (size_t)(s - data) + seplen;
		data = s + seplen;
	}
	p[n].data = data;
	p[n++].size = size;
	return n;
}

/* Append @n bytes at @s to *@out (*@len used, room for *@cap). */
static int append(uint8_t **out, size_t *len, size_t *cap, const void *s,
		  size_t n)
{
	if (*len + n > *cap) {
		size_t want = 2 * (*len + n);
		uint8_t *more = realloc(*out, want);

		if (!more)
			return -1;
		*out = more;
		*cap = want;
	}
	memcpy(*out + *len, s, n);
	*len += n;
	return 0;
}

/* Part @i with "@dK" and "@sK" of the parts after it filled in. */
static int fill(struct part *p, size_t n, size_t i)
{
	const uint8_t *at = p[i].data, *end = at + p[i].size, *c;
	size_t cap = p[i].size + 1, len = 0;
	uint8_t *out = malloc(cap);
	int ret = out ? 0 : -1;

	while (!ret && at < end) {
		char word[80];
		size_t k;

		c = memchr(at, '@', (size_t)(end - at));
		if (!c)
			c = end;
		ret = append(&out, &len, &cap, at, (size_t)(c - at));
		at = c;
		if (ret || at == end)
			break;
		if (end - at >= 3 && (at[1] == 'd' || at[1] == 's') &&
		    at[2] >= '1' && at[2] <= '9' &&
		    (k = (size_t)(at[2] - '0')) > i && k < n) {
			if (at[1] == 'd')
				snprintf(word, sizeof(word), "sha256:%s",
					 p[k].hex);
			else
				snprintf(word, sizeof(word), "%zu", p[k].len);
			ret = append(&out, &len, &cap, word, strlen(word));
			at += 3;
		} else {
			ret = append(&out, &len, &cap, at++, 1);
		}
	}
	if (ret) {
		free(out);
		return ret;
	}
	p[i].text = out;
	p[i].len = len;
	return 0;
}

static int digest(struct part *p)
{
	static const char hexdigits[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
		 EVP_DigestUpdate(ctx, p->text, p->len) &&
		 EVP_DigestFinal_ex(ctx, md, &mdlen) && mdlen == 32;

	EVP_MD_CTX_free(ctx);
	for (unsigned int i = 0; ok && i < mdlen; i++) {
		p->hex[2 * i] = hexdigits[md[i] >> 4];
		p->hex[2 * i + 1] = hexdigits[md[i] & 15];
	}
	p->hex[64] = '\0';
	return ok ? 0 : -1;
}

/*
 * The blobs of the last input: a blob's name is its digest, so one of the
 * same name holds the same bytes and stays (most inputs change one file).
 */
static char kept[FUZZ_OCI_PARTS][65];
static size_t nkept;

static bool named(const struct part *p, size_t n, const char *hex)
{
	for (size_t i = 1; i < n; i++)
		if (!strcmp(p[i].hex, hex))
			return true;
	return false;
}

static bool was_kept(const char *hex)
{
	for (size_t i = 0; i < nkept; i++)
		if (!strcmp(kept[i], hex))
			return true;
	return false;
}

static int put_blobs(const struct part *p, size_t n)
{
	size_t was = nkept;
	int ret = 0;

	for (size_t i = 0; i < was; i++)
		if (!named(p, n, kept[i]))
			unlinkat(blobs_fd, kept[i], 0);
	for (size_t i = 1; !ret && i < n; i++)
		if (!was_kept(p[i].hex))
			ret = put_file(blobs_fd, p[i].hex, p[i].text, p[i].len);
	nkept = 0;
	for (size_t i = 1; i < n; i++) {
		if (ret)	/* none kept that may be half written */
			unlinkat(blobs_fd, p[i].hex, 0);
		else
			memcpy(kept[nkept++], p[i].hex, sizeof(kept[0]));
	}
	return ret;
}

/* The layout of the input's parts: 0 when written. */
static int write_layout(const uint8_t *data, size_t size)
{
	struct part p[FUZZ_OCI_PARTS] = { 0 };
	size_t n = split(data, size, p);
	int ret = 0;

	for (size_t i = n; !ret && i-- > 0;) {
		ret = fill(p, n, i);
		if (!ret && i)
			ret = digest(&p[i]);
	}
	if (!ret)
		ret = put_blobs(p, n);
	if (!ret)
		ret = put_file(layout_fd, "index.json", p[0].text, p[0].len);
	for (size_t i = 0; i < n; i++)
		free(p[i].text);
	return ret;
}

FUZZ_TARGET(oci)
{
	struct xip_build_opts o = { 0 };
	struct btree t;
	char spec[4200];

	if (xip_lazy_load(XIP_LAZY_CRYPTO) || layout_init() ||
	    write_layout(data, size))
		return 0;
	/* the image tagged "latest" when that name is there, else the only one */
	snprintf(spec, sizeof(spec), "%s%s", layout,
		 memmem(data, size, "\"latest\"", 8) ? ":latest" : "");
	/* --platform (with a variant) for a third of the inputs */
	if (!fuzz_tree_init(&t, 4096) &&
	    !xip_btree_scan_oci(&t, &o, spec,
				size % 3 ? NULL : "linux/arm64/v8"))
		xip_btree_finish(&t, &o);
	fuzz_tree_free(&t);
	xip_error_clear();
	return 0;
}
