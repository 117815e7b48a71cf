// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Root hash signatures of verity images: made with a private key and its
 * certificate (PKCS7_sign, as openssl smime -sign -nocerts -noattr
 * -binary does), carried in a signature block after the hash tree (its
 * layout in xip_verity.h), and checked against trusted certificates
 * (PKCS7_verify with an X509_STORE), as the kernel's dm-verity checks a
 * --root-hash-signature against its keyrings.  libcrypto is loaded at
 * first use (util/lazy.c); every length read from an image is checked
 * before it is used, and nothing is allocated from one.
 */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "verity/xip_verity.h"
#include "verity/verity_int.h"
#include "util/xip_error.h"
#include "util/xip_lazy.h"
#include "util/xip_util.h"
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/pkcs7.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>


#define PEM_MAX		(1u << 20)	/* a key or certificate file */

static const uint8_t sig_magic[8] = { 'x', 'i', 'p', 's', 'i', 'g', '1', 0 };

/* The header of a signature block, little-endian on disk. */
struct sig_hdr {
	uint8_t magic[8];
	uint32_t version;
	uint32_t header_size;
	uint32_t der_len;
	uint32_t flags;
	uint8_t der_sha256[32];
} __attribute__((packed));

static bool zeros(const uint8_t *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static int sha256(const uint8_t *p, size_t len, uint8_t *out)
{
	unsigned int n;
	EVP_MD_CTX *ctx;
	int ok = xip_lazy_load(XIP_LAZY_CRYPTO);

	if (ok)
		return ok;
	ctx = EVP_MD_CTX_new();
	ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
	     EVP_DigestUpdate(ctx, p, len) && EVP_DigestFinal_ex(ctx, out, &n);
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : xip_error(-ENOMEM, "sha256 failed");
}

/* ---- the signature block --------------------------------------------- */

int xip_verity_sig_parse(const uint8_t *p, uint64_t len,
			 struct xip_verity_sig *sig)
{
	uint8_t d[32];
	struct sig_hdr h;
	uint64_t body;
	int ret;

	memset(sig, 0, sizeof(*sig));
	if (len < sizeof(sig_magic) || memcmp(p, sig_magic, sizeof(sig_magic)))
		return 0;
	if (len < XIP_VERITY_SIG_HDR)
		return xip_error(-EUCLEAN,
				 "signature block: truncated header (%" PRIu64 " of %d bytes)",
				 len, XIP_VERITY_SIG_HDR);
	memcpy(&h, p, sizeof(h));
	if (le32toh(h.version) != 1)
		return xip_error(-EUCLEAN,
				 "signature block: version %u (only 1)",
				 le32toh(h.version));
	if (le32toh(h.header_size) != XIP_VERITY_SIG_HDR || h.flags ||
	    !zeros(p + sizeof(h), XIP_VERITY_SIG_HDR - sizeof(h)))
		return xip_error(-EUCLEAN,
				 "signature block: malformed header");
	sig->der_len = le32toh(h.der_len);
	if (!sig->der_len || sig->der_len > XIP_VERITY_SIG_MAX)
		return xip_error(-EUCLEAN,
				 "signature block: a signature of %zu bytes (1 to %d)",
				 sig->der_len, XIP_VERITY_SIG_MAX);
	body = round_up(sig->der_len, XIP_VERITY_SIG_ALIGN);
	if (len - XIP_VERITY_SIG_HDR < body)
		return xip_error(-EUCLEAN,
				 "signature block: truncated (%zu signature bytes, %" PRIu64 " present)",
				 sig->der_len, len - XIP_VERITY_SIG_HDR);
	sig->der = p + XIP_VERITY_SIG_HDR;
	if (!zeros(sig->der + sig->der_len, body - sig->der_len))
		return xip_error(-EUCLEAN,
				 "signature block: bytes after the signature");
	ret = sha256(sig->der, sig->der_len, d);
	if (ret)
		return ret;
	if (memcmp(d, h.der_sha256, sizeof(d)))
		return xip_error(-EUCLEAN,
				 "signature block: the signature does not match its digest");
	sig->present = true;
	sig->end = XIP_VERITY_SIG_HDR + body;
	return 0;
}

int xip_verity_sig_read(const uint8_t *base, uint64_t size,
			const struct xip_verity_info *vi,
			struct xip_verity_sig *sig)
{
	uint64_t off;
	int ret;

	memset(sig, 0, sizeof(*sig));
	if (!vi->present || vi->end >= size)
		return 0;
	off = round_up(vi->end, XIP_VERITY_SIG_ALIGN);
	if (off >= size || !zeros(base + vi->end, off - vi->end))
		return 0;
	ret = xip_verity_sig_parse(base + off, size - off, sig);
	if (ret || !sig->present)
		return ret;
	sig->offset = off;
	sig->end += off;
	if (sig->end != size)
		return xip_error(-EUCLEAN,
				 "signature block: %" PRIu64 " bytes after it",
				 size - sig->end);
	return 0;
}

uint64_t xip_verity_image_end(const uint8_t *base, uint64_t size,
			      const struct xip_verity_info *vi)
{
	struct xip_verity_sig sig;

	if (xip_verity_sig_read(base, size, vi, &sig) || !sig.present)
		return vi->end;
	return sig.end;
}

int xip_verity_sig_block(const uint8_t *der, size_t der_len, uint8_t **blk,
			 size_t *blk_len)
{
	struct sig_hdr h = { 0 };
	size_t n;
	int ret;

	*blk = NULL;
	if (!der_len || der_len > XIP_VERITY_SIG_MAX)
		return xip_error(-EINVAL, "a signature of %zu bytes (1 to %d)",
				 der_len, XIP_VERITY_SIG_MAX);
	memcpy(h.magic, sig_magic, sizeof(h.magic));
	h.version = htole32(1);
	h.header_size = htole32(XIP_VERITY_SIG_HDR);
	h.der_len = htole32((uint32_t)der_len);
	ret = sha256(der, der_len, h.der_sha256);
	if (ret)
		return ret;
	n = XIP_VERITY_SIG_HDR + round_up(der_len, XIP_VERITY_SIG_ALIGN);
	*blk = calloc(1, n);
	if (!*blk)
		return xip_error(-ENOMEM, "out of memory");
	memcpy(*blk, &h, sizeof(h));
	memcpy(*blk + XIP_VERITY_SIG_HDR, der, der_len);
	*blk_len = n;
	return 0;
}

/* ---- keys and certificates ------------------------------------------- */

/*
 * libcrypto's reason for its first failure and what it added (a
 * certificate's verify error: "certificate has expired"), or @dflt; the
 * queue emptied.
 */
static const char *ssl_reason(const char *dflt)
{
	static __thread char buf[256];
	const char *r = NULL, *d;
	char data[160] = "";
	unsigned long e;
	int flags;

	/* the data is the queue's: copied before the next entry is taken */
	while ((e = ERR_get_error_all(NULL, NULL, NULL, &d, &flags))) {
		if (!r)
			r = ERR_reason_error_string(e);
		if (!data[0] && d && *d && (flags & ERR_TXT_STRING))
			snprintf(data, sizeof(data), "%s", d);
	}
	if (!r)
		r = dflt;
	if (data[0])
		snprintf(buf, sizeof(buf), "%s (%s)", r, data);
	else
		snprintf(buf, sizeof(buf), "%s", r);
	return buf;
}

/*
 * May @st (of @path) be trusted: owned by root or, for a caller who is not
 * root, by the caller, and writable by nobody else (no group or other
 * write bit)?  Anyone else who can change it could make us trust a key of
 * theirs.
 */
static int trust_mode_ok(const char *path, const struct stat *st)
{
	if (st->st_uid != 0 && st->st_uid != geteuid())
		return xip_error(-EPERM,
				 "%s: owned by another user (uid %u); refusing to use it",
				 path, (unsigned int)st->st_uid);
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return xip_error(-EPERM,
				 "%s: writable by other users (mode %04o); refusing to trust it",
				 path, (unsigned int)(st->st_mode & 07777));
	return 0;
}

/*
 * The file open at @fd (@path, at most PEM_MAX bytes) in a new buffer.
 * Owned by root or the caller only: another user's certificate is not
 * trusted, nor another user's key used; a certificate to trust (@trust)
 * must not be writable by others either.
 */
static int read_small_fd(int fd, const char *path, bool trust, char **buf,
			 size_t *len)
{
	struct stat st;
	ssize_t got;
	int ret = 0;

	*buf = NULL;
	if (fstat(fd, &st) < 0)
		ret = xip_error(-errno, "%s: %s", path, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		ret = xip_error(-EINVAL, "%s: not a regular file", path);
	else if (trust)
		ret = trust_mode_ok(path, &st);
	else if (st.st_uid != 0 && st.st_uid != geteuid())
		ret = xip_error(-EPERM,
				"%s: owned by another user (uid %u); refusing to use it",
				path, (unsigned int)st.st_uid);
	if (!ret && st.st_size > PEM_MAX)
		ret = xip_error(-EFBIG, "%s: larger than %u bytes", path,
				PEM_MAX);
	if (!ret) {
		*buf = malloc((size_t)st.st_size + 1);
		if (!*buf)
			ret = xip_error(-ENOMEM, "out of memory");
	}
	if (!ret) {
		got = xip_read_full(fd, *buf, (size_t)st.st_size);
		if (got != st.st_size)
			ret = xip_error(got < 0 ? (int)got : -EIO,
					"%s: cannot read it", path);
		else
			*len = (size_t)got;
	}
	if (ret) {
		free(*buf);
		*buf = NULL;
	}
	return ret;
}

#define OPEN_FLAGS	(O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)

/* The file @path (a key or a certificate to sign with) in a new buffer. */
static int read_small(const char *path, char **buf, size_t *len)
{
	int fd = open(path, OPEN_FLAGS);
	int ret;

	*buf = NULL;
	if (fd < 0)
		return xip_error(-errno, "%s: %s", path, strerror(errno));
	ret = read_small_fd(fd, path, false, buf, len);
	close(fd);
	return ret;
}

/* No passphrase is asked for: an encrypted key fails to load. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

struct xip_verity_signer {
	EVP_PKEY *key;
	X509 *cert;
};

void xip_verity_signer_free(struct xip_verity_signer *s)
{
	if (!s)
		return;
	/* both set only once libcrypto is loaded */
	if (s->key)
		EVP_PKEY_free(s->key);
	if (s->cert)
		X509_free(s->cert);
	free(s);
}

static int load_pem(const char *path, bool key, struct xip_verity_signer *s)
{
	char *text;
	size_t len;
	BIO *b;
	int ret = read_small(path, &text, &len);

	if (ret)
		return ret;
	b = BIO_new_mem_buf(text, (int)len);
	if (b && key)
		s->key = PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL);
	else if (b)
		s->cert = PEM_read_bio_X509(b, NULL, no_passphrase, NULL);
	if (b)
		BIO_free(b);
	explicit_bzero(text, len);
	free(text);
	if (key ? !s->key : !s->cert)
		return xip_error(-EINVAL, "%s: no PEM %s in it (%s)", path,
				 key ? "private key (an unencrypted one)" :
				 "certificate",
				 ssl_reason("unreadable"));
	return 0;
}

int xip_verity_signer_load(const char *key, const char *cert,
			   struct xip_verity_signer **sp)
{
	struct xip_verity_signer *s;
	int ret;

	*sp = NULL;
	ret = xip_lazy_load(XIP_LAZY_CRYPTO);
	if (ret)
		return ret;
	s = calloc(1, sizeof(*s));
	if (!s)
		return xip_error(-ENOMEM, "out of memory");
	ret = load_pem(key, true, s);
	if (!ret)
		ret = load_pem(cert, false, s);
	if (!ret && X509_check_private_key(s->cert, s->key) != 1) {
		ssl_reason("");
		ret = xip_error(-EKEYREJECTED,
				"%s: the private key does not match the certificate %s",
				key, cert);
	}
	if (ret) {
		xip_verity_signer_free(s);
		return ret;
	}
	*sp = s;
	return 0;
}

int xip_verity_sign(const struct xip_verity_signer *s, const uint8_t *root,
		    size_t root_len, uint8_t **der, size_t *der_len)
{
	char hex[2 * XIP_VERITY_DIGEST_MAX + 1];
	unsigned char *out;
	PKCS7 *p7 = NULL;
	BIO *data;
	int n;

	*der = NULL;
	if (root_len > XIP_VERITY_DIGEST_MAX || !root_len)
		return xip_error(-EINVAL, "a root hash of %zu bytes", root_len);
	xip_hex_encode(root, root_len, hex);
	data = BIO_new_mem_buf(hex, (int)strlen(hex));
	if (data)
		p7 = PKCS7_sign(s->cert, s->key, NULL, data,
				PKCS7_DETACHED | PKCS7_BINARY |
				PKCS7_NOATTR | PKCS7_NOCERTS);
	if (data)
		BIO_free(data);
	if (!p7)
		return xip_error(-EKEYREJECTED, "signing failed: %s",
				 ssl_reason("out of memory"));
	n = i2d_PKCS7(p7, NULL);
	if (n <= 0 || n > XIP_VERITY_SIG_MAX) {
		PKCS7_free(p7);
		return xip_error(-EINVAL, "a signature of %d bytes (1 to %d)",
				 n, XIP_VERITY_SIG_MAX);
	}
	*der = malloc((size_t)n);
	out = *der;
	if (out)
		n = i2d_PKCS7(p7, &out);
	PKCS7_free(p7);
	if (!*der)
		return xip_error(-ENOMEM, "out of memory");
	*der_len = (size_t)n;
	return 0;
}

/* ---- checking ---------------------------------------------------------- */

/* A signed, detached PKCS#7 of exactly @len bytes, or NULL (error set). */
static PKCS7 *parse_der(const uint8_t *der, size_t len)
{
	const unsigned char *p = der;
	PKCS7 *p7;

	if (!len || len > XIP_VERITY_SIG_MAX) {
		xip_error(-EUCLEAN, "a signature of %zu bytes (1 to %d)", len,
			  XIP_VERITY_SIG_MAX);
		return NULL;
	}
	p7 = d2i_PKCS7(NULL, &p, (long)len);
	if (!p7) {
		xip_error(-EUCLEAN, "the signature is not PKCS#7 DER: %s",
			  ssl_reason("malformed"));
		return NULL;
	}
	if (p != der + len || !PKCS7_type_is_signed(p7) ||
	    !p7->d.sign || !PKCS7_get_detached(p7) ||
	    sk_PKCS7_SIGNER_INFO_num(PKCS7_get_signer_info(p7)) < 1) {
		PKCS7_free(p7);
		xip_error(-EUCLEAN,
			  "the signature is not a detached PKCS#7 signature with a signer");
		return NULL;
	}
	return p7;
}

/* The certificates of the PEM text @text (@len bytes) onto @certs. */
static int add_pem_certs(const char *path, const char *text, size_t len,
			 STACK_OF(X509) *certs)
{
	BIO *b = BIO_new_mem_buf(text, (int)len);
	int n = 0;
	X509 *x;

	if (!b)
		return xip_error(-ENOMEM, "out of memory");
	while ((x = PEM_read_bio_X509(b, NULL, no_passphrase, NULL))) {
		if (!sk_X509_push(certs, x)) {
			X509_free(x);
			BIO_free(b);
			return xip_error(-ENOMEM, "out of memory");
		}
		n++;
	}
	BIO_free(b);
	ERR_clear_error();	/* the end of the text */
	if (!n)
		return xip_error(-EINVAL, "%s: no PEM certificate in it", path);
	return 0;
}

/*
 * Open @name in @dirfd (@path) to trust it: never through a symbolic
 * link, whoever made it (it could be pointed elsewhere after any check).
 */
static int trust_open(int dirfd, const char *name, const char *path)
{
	int fd = openat(dirfd, name, OPEN_FLAGS | O_NOFOLLOW);

	if (fd < 0 && errno == ELOOP)
		return xip_error(-ELOOP,
				 "%s: a symbolic link; a trust store is not read through links",
				 path);
	if (fd < 0)
		return xip_error(-errno, "%s: %s", path, strerror(errno));
	return fd;
}

/* The certificates of the PEM file open at @fd onto @certs. */
static int add_cert_fd(int fd, const char *path, STACK_OF(X509) *certs)
{
	char *text;
	size_t len;
	int ret = read_small_fd(fd, path, true, &text, &len);

	if (ret)
		return ret;
	ret = add_pem_certs(path, text, len, certs);
	free(text);
	return ret;
}

static bool cert_name(const char *name)
{
	size_t n = strlen(name);

	return name[0] != '.' && n > 4 && (!strcmp(name + n - 4, ".pem") ||
					   !strcmp(name + n - 4, ".crt"));
}

/*
 * Entry @name of the trust directory @dfd (@path): every one is held to
 * the rules (no symbolic link, root's or the caller's, writable by no one
 * else); the *.pem and *.crt files are read.
 */
static int add_dir_entry(int dfd, const char *name, const char *path,
			 STACK_OF(X509) *certs)
{
	struct stat st;
	int fd, ret;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return xip_error(-errno, "%s: %s", path, strerror(errno));
	if (S_ISLNK(st.st_mode))
		return xip_error(-ELOOP,
				 "%s: a symbolic link; a trust store is not read through links",
				 path);
	ret = trust_mode_ok(path, &st);	/* read or not */
	if (ret || !cert_name(name))
		return ret;
	fd = trust_open(dfd, name, path);
	if (fd < 0)
		return fd;
	ret = add_cert_fd(fd, path, certs);
	close(fd);
	return ret;
}

static int add_dir(int dfd, const char *trust, STACK_OF(X509) *certs)
{
	char path[XIP_PATH_MAX];
	struct dirent *de;
	int ret = 0;
	DIR *d;

	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return xip_error(-ENOMEM, "out of memory");
	}
	while (!ret && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", trust, de->d_name);
		ret = add_dir_entry(dirfd(d), de->d_name, path, certs);
	}
	closedir(d);
	if (!ret && !sk_X509_num(certs))
		ret = xip_error(-ENOENT, "%s: no certificate (*.pem, *.crt) in it",
				trust);
	return ret;
}

/*
 * The certificates of the trust store @trust: a PEM file, or every *.pem
 * and *.crt file of a directory.  The store, and every entry of a
 * directory, must be root's (or the caller's) and writable by no one
 * else; symbolic links are refused, not followed.
 */
static int load_trust(const char *trust, STACK_OF(X509) *certs)
{
	struct stat st;
	int fd, ret;

	fd = trust_open(AT_FDCWD, trust, trust);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		ret = xip_error(-errno, "%s: %s", trust, strerror(errno));
	else
		ret = trust_mode_ok(trust, &st);
	if (!ret && S_ISDIR(st.st_mode))
		return add_dir(fd, trust, certs);	/* closes fd */
	if (!ret)
		ret = add_cert_fd(fd, trust, certs);
	close(fd);
	return ret;
}

int xip_verity_trust_check(const char *trust)
{
	STACK_OF(X509) *certs;
	int ret = xip_lazy_load(XIP_LAZY_CRYPTO);

	if (ret)
		return ret;
	certs = sk_X509_new_null();
	if (!certs)
		return xip_error(-ENOMEM, "out of memory");
	ret = load_trust(trust, certs);
	sk_X509_pop_free(certs, X509_free);
	return ret;
}

const char *xip_verity_trust_default(void)
{
	const char *dir = getenv("XIPTOOL_TRUST_DIR");
	struct stat st;

	if (!dir || !*dir)
		dir = XIP_VERITY_TRUST_DIR;
	return lstat(dir, &st) == 0 ? dir : NULL;
}

static void subject_of(X509 *x, char *buf, size_t len)
{
	if (!len)
		return;
	buf[0] = '\0';
	if (x && !X509_NAME_oneline(X509_get_subject_name(x), buf,
				    len > INT32_MAX ? INT32_MAX : (int)len))
		buf[0] = '\0';
}

int xip_verity_sig_check(const uint8_t *der, size_t der_len,
			 const char *root_hex, const char *trust,
			 char *signer, size_t signer_len)
{
	STACK_OF(X509) *certs = NULL, *signers;
	X509_STORE *store = NULL;
	BIO *data = NULL;
	PKCS7 *p7;
	int ret = xip_lazy_load(XIP_LAZY_CRYPTO);

	if (signer_len)
		signer[0] = '\0';
	if (ret)
		return ret;
	p7 = parse_der(der, der_len);
	if (!p7)
		return -EUCLEAN;
	certs = sk_X509_new_null();
	store = X509_STORE_new();
	data = BIO_new_mem_buf(root_hex, (int)strlen(root_hex));
	if (!certs || !store || !data) {
		ret = xip_error(-ENOMEM, "out of memory");
		goto out;
	}
	ret = load_trust(trust, certs);
	for (int i = 0; !ret && i < sk_X509_num(certs);
	     i++)
		if (!X509_STORE_add_cert(store, sk_X509_value(certs, i)))
			ret = xip_error(-ENOMEM, "out of memory");
	if (ret)
		goto out;
	/* a trusted certificate is an anchor, as a key in a keyring is */
	X509_STORE_set_flags(store, X509_V_FLAG_PARTIAL_CHAIN);
	X509_STORE_set_purpose(store, X509_PURPOSE_ANY);
	if (PKCS7_verify(p7, certs, store, data, NULL, PKCS7_BINARY) != 1) {
		ret = xip_error(-EKEYREJECTED,
				"the signature does not verify against %s: %s",
				trust, ssl_reason("rejected"));
		goto out;
	}
	signers = PKCS7_get0_signers(p7, certs, 0);
	if (signers) {
		subject_of(sk_X509_value(signers, 0), signer, signer_len);
		sk_X509_free(signers);
	}
	ERR_clear_error();
out:
	if (data)
		BIO_free(data);
	if (store)
		X509_STORE_free(store);
	if (certs)
		sk_X509_pop_free(certs, X509_free);
	PKCS7_free(p7);
	return ret;
}

int xip_verity_sig_signer(const uint8_t *der, size_t der_len, char *buf,
			  size_t len)
{
	char issuer[256], serial[2 * 32 + 1];
	const ASN1_INTEGER *sn;
	PKCS7_SIGNER_INFO *si;
	PKCS7 *p7;
	X509 *x;
	int n, ret = xip_lazy_load(XIP_LAZY_CRYPTO);

	if (len)
		buf[0] = '\0';
	if (ret)
		return ret;
	p7 = parse_der(der, der_len);
	if (!p7)
		return -EUCLEAN;
	si = sk_PKCS7_SIGNER_INFO_value(PKCS7_get_signer_info(p7), 0);
	if (!si || !si->issuer_and_serial || !si->issuer_and_serial->issuer ||
	    !si->issuer_and_serial->serial) {
		PKCS7_free(p7);
		return xip_error(-EUCLEAN, "the signature names no signer");
	}
	x = X509_find_by_issuer_and_serial(p7->d.sign->cert,
					   si->issuer_and_serial->issuer,
					   si->issuer_and_serial->serial);
	if (x) {
		subject_of(x, buf, len);
	} else {
		sn = si->issuer_and_serial->serial;
		n = ASN1_STRING_length(sn);
		if (n < 0 || n > 32)
			n = 0;
		xip_hex_encode(ASN1_STRING_get0_data(sn), (size_t)n, serial);
		if (!X509_NAME_oneline(si->issuer_and_serial->issuer, issuer,
				       sizeof(issuer)))
			issuer[0] = '\0';
		snprintf(buf, len, "issuer %s serial %s", issuer,
			 n ? serial : "?");
	}
	ERR_clear_error();
	PKCS7_free(p7);
	return 0;
}

/*
 * The signature @der (NULL: the block after the tree) over the root hash
 * of the tree of the image at @base, checked against @trust.
 */
static int verify_image(const uint8_t *base, uint64_t size,
			const uint8_t *der, size_t der_len, const char *trust,
			uint8_t *root, size_t *root_len, char *signer,
			size_t signer_len)
{
	char hex[2 * XIP_VERITY_DIGEST_MAX + 1];
	struct xip_verity_info vi;
	struct xip_verity_sig sig = { 0 };
	int ret;

	if (signer_len)
		signer[0] = '\0';
	ret = xip_verity_probe(base, size, &vi);
	if (!ret && !vi.present)
		return xip_error(-ENOKEY,
				 "not signed: no verity tree after the file system");
	if (!ret && !der)
		ret = xip_verity_sig_read(base, size, &vi, &sig);
	if (!ret && !der && !sig.present)
		return xip_error(-ENOKEY,
				 "not signed: no signature block after the verity tree");
	if (!ret)
		ret = xip_verity_root(base, size, &vi, root, root_len);
	if (ret)
		return ret;
	xip_hex_encode(root, *root_len, hex);
	return der ? xip_verity_sig_check(der, der_len, hex, trust, signer,
					  signer_len) :
		     xip_verity_sig_check(sig.der, sig.der_len, hex, trust,
					  signer, signer_len);
}

int xip_verity_sig_verify_image(const uint8_t *base, uint64_t size,
				const char *trust, uint8_t *root,
				size_t *root_len, char *signer,
				size_t signer_len)
{
	return verify_image(base, size, NULL, 0, trust, root, root_len,
			    signer, signer_len);
}

int xip_verity_sig_verify_detached(const uint8_t *base, uint64_t size,
				   const uint8_t *der, size_t der_len,
				   const char *trust, uint8_t *root,
				   size_t *root_len, char *signer,
				   size_t signer_len)
{
	if (!der)
		return xip_verity_sig_verify_image(base, size, trust, root,
						   root_len, signer,
						   signer_len);
	return verify_image(base, size, der, der_len, trust, root, root_len,
			    signer, signer_len);
}

/* PEM text ("-----BEGIN PKCS7-----") of a signature: its DER in @der. */
static int pem_to_der(const char *path, const char *text, size_t len,
		      uint8_t **der, size_t *der_len)
{
	BIO *b = BIO_new_mem_buf(text, (int)len);
	unsigned char *out;
	PKCS7 *p7 = NULL;
	int n;

	if (b)
		p7 = PEM_read_bio_PKCS7(b, NULL, no_passphrase, NULL);
	if (b)
		BIO_free(b);
	if (!p7)
		return xip_error(-EUCLEAN, "%s: not a PEM PKCS#7 signature: %s",
				 path, ssl_reason("malformed"));
	n = i2d_PKCS7(p7, NULL);
	*der = n > 0 && n <= XIP_VERITY_SIG_MAX ? malloc((size_t)n) : NULL;
	out = *der;
	if (out)
		n = i2d_PKCS7(p7, &out);
	PKCS7_free(p7);
	if (!*der)
		return xip_error(n > 0 && n <= XIP_VERITY_SIG_MAX ? -ENOMEM :
				 -EUCLEAN, "%s: a signature of %d bytes (1 to %d)",
				 path, n, XIP_VERITY_SIG_MAX);
	*der_len = (size_t)n;
	return 0;
}

int xip_verity_sig_load(const char *path, uint8_t **der, size_t *der_len)
{
	static const char pem[] = "-----BEGIN";
	uint8_t *buf = NULL;
	struct stat st;
	ssize_t got;
	int fd, ret = 0;

	*der = NULL;
	ret = xip_lazy_load(XIP_LAZY_CRYPTO);
	if (ret)
		return ret;
	fd = open(path, OPEN_FLAGS);
	if (fd < 0)
		return xip_error(-errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0)
		ret = xip_error(-errno, "%s: %s", path, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		ret = xip_error(-EINVAL, "%s: not a regular file", path);
	else if (!st.st_size || st.st_size > 2 * XIP_VERITY_SIG_MAX)
		ret = xip_error(-EUCLEAN,
				"%s: not a signature (%jd bytes)", path,
				(intmax_t)st.st_size);
	if (!ret && !(buf = malloc((size_t)st.st_size)))
		ret = xip_error(-ENOMEM, "out of memory");
	if (!ret) {
		got = xip_read_full(fd, buf, (size_t)st.st_size);
		if (got != st.st_size)
			ret = xip_error(got < 0 ? (int)got : -EIO,
					"%s: cannot read it", path);
	}
	close(fd);
	if (!ret && (size_t)st.st_size > sizeof(pem) - 1 &&
	    !memcmp(buf, pem, sizeof(pem) - 1)) {
		ret = pem_to_der(path, (const char *)buf, (size_t)st.st_size,
				 der, der_len);
		free(buf);
		return ret;
	}
	if (!ret && st.st_size > XIP_VERITY_SIG_MAX)
		ret = xip_error(-EUCLEAN, "%s: a signature of %jd bytes (1 to %d)",
				path, (intmax_t)st.st_size, XIP_VERITY_SIG_MAX);
	if (ret) {
		free(buf);
		return ret;
	}
	*der = buf;
	*der_len = (size_t)st.st_size;
	return 0;
}

/* ---- signing an image file ------------------------------------------- */

/* The image mapped from @fd, checked against its own tree: its root. */
static int image_root(const char *image, const uint8_t *base, uint64_t size,
		      struct xip_verity_info *vi, uint8_t *root,
		      size_t *root_len)
{
	char msg[XIP_ERRMSG_MAX];
	int ret = xip_verity_probe(base, size, vi);

	if (!ret && !vi->present)
		return xip_error(-EINVAL,
				 "%s: not a verity image (no verity superblock after the file system)",
				 image);
	if (!ret)
		ret = xip_verity_root(base, size, vi, root, root_len);
	if (!ret)
		ret = xip_verity_check(base, size, root, *root_len, 0, vi,
				       NULL);
	if (ret) {
		snprintf(msg, sizeof(msg), "%s", xip_errmsg());
		return xip_error(ret, "%s: %s", image, msg);
	}
	return 0;
}

/* The image up to its tree, then the block, into @of. */
static int write_signed(struct xip_outfile *of, const uint8_t *base,
			const struct xip_verity_info *vi, const uint8_t *blk,
			size_t blk_len)
{
	uint64_t off = round_up(vi->end, XIP_VERITY_SIG_ALIGN);
	int ret;

	ret = xip_pwrite_all(of->fd, base, vi->end, 0);
	if (!ret)
		ret = xip_pwrite_all(of->fd, blk, blk_len, off);
	if (!ret && ftruncate(of->fd, (off_t)(off + blk_len)) < 0)
		ret = -errno;
	return ret ? xip_error(ret, "%s: %s", of->path, strerror(-ret)) : 0;
}

int xip_verity_sign_image(const char *image,
			  const struct xip_verity_signer *s, uint8_t **der,
			  size_t *der_len)
{
	uint8_t root[XIP_VERITY_DIGEST_MAX], *blk = NULL;
	struct xip_verity_info vi;
	struct xip_outfile of;
	size_t root_len, blk_len;
	void *map = NULL;
	struct stat st;
	int fd, ret;

	*der = NULL;
	ret = xip_outfile_open(&of, image, XIP_OUTFILE_REGULAR);
	if (ret)
		return ret;
	fd = xip_outfile_open_old(&of);
	if (fd < 0) {
		xip_outfile_abort(&of);
		return fd;
	}
	if (fstat(fd, &st) < 0)
		ret = xip_error(-errno, "%s: %s", image, strerror(errno));
	else if (st.st_size < 2048)
		ret = xip_error(-EINVAL, "%s: not a verity image (%jd bytes)",
				image, (intmax_t)st.st_size);
	else
		ret = xip_map_shared(fd, (size_t)st.st_size, PROT_READ, image,
				     &map);
	close(fd);
	if (!ret)
		ret = image_root(image, map, (uint64_t)st.st_size, &vi, root,
				 &root_len);
	if (!ret)
		ret = xip_verity_sign(s, root, root_len, der, der_len);
	if (!ret)
		ret = xip_verity_sig_block(*der, *der_len, &blk, &blk_len);
	if (!ret)
		ret = write_signed(&of, map, &vi, blk, blk_len);
	if (map)
		munmap(map, (size_t)st.st_size);
	free(blk);
	if (!ret)
		return xip_outfile_commit(&of);
	xip_outfile_abort(&of);
	free(*der);
	*der = NULL;
	return ret;
}
