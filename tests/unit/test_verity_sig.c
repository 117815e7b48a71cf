/*
 * Unit tests of lib/verity/sig.c: the signature block's parser against
 * hostile bytes, signing, and the check of a signature made by OpenSSL's
 * own command (openssl smime) against trusted certificates.
 */
#include <stdio.h>
#include <stdlib.h>

#include "unit.h"

#define ROOT_HEX "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const uint8_t der_bytes[] = { 0x30, 0x03, 0x02, 0x01, 0x05 };

static uint8_t *block(size_t *len)
{
	uint8_t *blk;

	assert_int_equal(xip_verity_sig_block(der_bytes, sizeof(der_bytes),
					      &blk, len), 0);
	assert_int_equal(*len, 8192);
	return blk;
}

static void test_block_roundtrip(void **state)
{
	struct xip_verity_sig sig;
	size_t len;
	uint8_t *blk = block(&len);

	(void)state;
	assert_int_equal(xip_verity_sig_parse(blk, len, &sig), 0);
	assert_true(sig.present);
	assert_int_equal(sig.der_len, sizeof(der_bytes));
	assert_memory_equal(sig.der, der_bytes, sizeof(der_bytes));
	assert_true(sig.der == blk + 4096);
	assert_int_equal(sig.end, 8192);
	/* not a block at all: absent, not an error */
	blk[0] ^= 1;
	assert_int_equal(xip_verity_sig_parse(blk, len, &sig), 0);
	assert_false(sig.present);
	assert_int_equal(xip_verity_sig_parse(blk, 3, &sig), 0);
	assert_false(sig.present);
	free(blk);
}

/* @blk with the byte at @off xor @x: -EUCLEAN, the message has @what. */
static void refused(const uint8_t *blk, size_t len, size_t off, uint8_t x,
		    const char *what)
{
	struct xip_verity_sig sig;
	uint8_t *copy = malloc(len);

	assert_non_null(copy);
	memcpy(copy, blk, len);
	copy[off] ^= x;
	assert_int_equal(xip_verity_sig_parse(copy, len, &sig), -EUCLEAN);
	assert_false(sig.present);
	assert_non_null(strstr(xip_errmsg(), what));
	free(copy);
}

static void test_block_hostile(void **state)
{
	struct xip_verity_sig sig;
	size_t len;
	uint8_t *blk = block(&len);

	(void)state;
	refused(blk, len, 8, 2, "version 3");
	refused(blk, len, 13, 1, "malformed header");	/* header size */
	refused(blk, len, 20, 1, "malformed header");	/* flags */
	refused(blk, len, 4095, 1, "malformed header");	/* reserved */
	refused(blk, len, 24, 1, "does not match its digest");
	refused(blk, len, 4096, 1, "does not match its digest");
	refused(blk, len, 4096 + sizeof(der_bytes), 1, "bytes after");
	refused(blk, len, 8191, 0x80, "bytes after");
	/* a length of 0, past the cap, past the bytes */
	refused(blk, len, 16, sizeof(der_bytes), "a signature of 0 bytes");
	refused(blk, len, 19, 0x80, "a signature of 2147483653 bytes");
	refused(blk, len, 18, 0x01, "a signature of 65541 bytes");
	refused(blk, len, 17, 0x10, "truncated");
	/* the header cut short, the body cut short */
	assert_int_equal(xip_verity_sig_parse(blk, 4095, &sig), -EUCLEAN);
	assert_non_null(strstr(xip_errmsg(), "truncated header"));
	assert_int_equal(xip_verity_sig_parse(blk, 8191, &sig), -EUCLEAN);
	assert_non_null(strstr(xip_errmsg(), "truncated"));
	/* the largest length allowed still needs its bytes */
	blk[16] = 0;
	blk[17] = 0;
	blk[18] = 1;
	blk[19] = 0;
	assert_int_equal(xip_verity_sig_parse(blk, len, &sig), -EUCLEAN);
	assert_non_null(strstr(xip_errmsg(), "truncated"));
	free(blk);
	assert_int_equal(xip_verity_sig_block(der_bytes, 0, &blk, &len),
			 -EINVAL);
	assert_int_equal(xip_verity_sig_block(der_bytes, 65537, &blk, &len),
			 -EINVAL);
}

/* After a tree ending at @end: zeros to the block, the block, the end. */
static void test_block_after_tree(void **state)
{
	struct xip_verity_info vi = { .present = true, .end = 1024 };
	struct xip_verity_sig sig;
	uint8_t *img = calloc(1, 4096 + 8192 + 4096);
	size_t len;
	uint8_t *blk = block(&len);

	(void)state;
	assert_non_null(img);
	memcpy(img + 4096, blk, len);
	assert_int_equal(xip_verity_sig_read(img, 4096 + 8192, &vi, &sig), 0);
	assert_true(sig.present);
	assert_int_equal(sig.offset, 4096);
	assert_int_equal(sig.end, 4096 + 8192);
	assert_int_equal(xip_verity_image_end(img, 4096 + 8192, &vi),
			 4096 + 8192);
	/* bytes after the block */
	assert_int_equal(xip_verity_sig_read(img, 4096 + 8192 + 4096, &vi,
					     &sig), -EUCLEAN);
	assert_int_equal(xip_verity_image_end(img, 4096 + 8192 + 4096, &vi),
			 1024);
	/* a byte between the tree and the block: no block there */
	img[2000] = 1;
	assert_int_equal(xip_verity_sig_read(img, 4096 + 8192, &vi, &sig), 0);
	assert_false(sig.present);
	assert_int_equal(xip_verity_image_end(img, 4096 + 8192, &vi), 1024);
	/* the image ends with the tree */
	assert_int_equal(xip_verity_sig_read(img, 1024, &vi, &sig), 0);
	assert_false(sig.present);
	free(img);
	free(blk);
}

/* ---- with OpenSSL's command ------------------------------------------- */

static bool have_openssl(void)
{
	return system("command -v openssl >/dev/null 2>&1") == 0;
}

static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = malloc(65536);

	assert_non_null(f);
	assert_non_null(buf);
	*len = fread(buf, 1, 65536, f);
	fclose(f);
	return buf;
}

/*
 * ROOT_HEX signed by openssl smime with NAME-key.pem and NAME-cert.pem
 * in @dir (as veritysetup's users sign it): the DER, *@len bytes.
 */
static uint8_t *openssl_sign_root(const char *dir, const char *name,
				  size_t *len)
{
	char path[512];

	sh("cd %s && printf %%s %s > hash.txt && openssl smime -sign -nocerts "
	   "-noattr -binary -in hash.txt -inkey %s-key.pem -signer "
	   "%s-cert.pem -outform der -out %s.p7s", dir, ROOT_HEX, name, name,
	   name);
	snprintf(path, sizeof(path), "%s/%s.p7s", dir, name);
	return slurp(path, len);
}

/* A key and self-signed certificate NAME-key.pem, NAME-cert.pem. */
static void make_cert(const char *dir, const char *name, const char *days)
{
	sh("cd %s && openssl req -x509 -newkey rsa:2048 -nodes %s "
	   "-subj /CN=%s -keyout %s-key.pem -out %s-cert.pem 2>/dev/null",
	   dir, days, name, name, name);
}

static void test_openssl_signature_checks(void **state)
{
	const char *dir = unit_tmpdir();
	char signer[256], trust[512];
	uint8_t *der;
	size_t len;

	(void)state;
	if (!have_openssl())
		skip();
	make_cert(dir, "good", "-days 2");
	make_cert(dir, "other", "-days 2");
	der = openssl_sign_root(dir, "good", &len);
	snprintf(trust, sizeof(trust), "%s/good-cert.pem", dir);
	assert_int_equal(xip_verity_sig_check(der, len, ROOT_HEX, trust,
					      signer, sizeof(signer)), 0);
	assert_string_equal(signer, "/CN=good");
	/* another root hash, another certificate */
	assert_int_equal(xip_verity_sig_check(der, len,
					      ROOT_HEX "00", trust, signer,
					      sizeof(signer)), -EKEYREJECTED);
	snprintf(trust, sizeof(trust), "%s/other-cert.pem", dir);
	assert_int_equal(xip_verity_sig_check(der, len, ROOT_HEX, trust,
					      signer, sizeof(signer)),
			 -EKEYREJECTED);
	/* a directory of certificates: the signer's among them */
	sh("cd %s && mkdir -p trust && cp good-cert.pem other-cert.pem trust/",
	   dir);
	snprintf(trust, sizeof(trust), "%s/trust", dir);
	assert_int_equal(xip_verity_sig_check(der, len, ROOT_HEX, trust,
					      signer, sizeof(signer)), 0);
	assert_string_equal(signer, "/CN=good");
	/* a flipped byte, trailing bytes, a cut: refused, never accepted */
	der[len - 5] ^= 1;
	assert_true(xip_verity_sig_check(der, len, ROOT_HEX, trust, signer,
					 sizeof(signer)) < 0);
	der[len - 5] ^= 1;
	assert_int_equal(xip_verity_sig_check(der, len + 1, ROOT_HEX, trust,
					      signer, sizeof(signer)),
			 -EUCLEAN);
	assert_int_equal(xip_verity_sig_check(der, len / 2, ROOT_HEX, trust,
					      signer, sizeof(signer)),
			 -EUCLEAN);
	/* who signed, without checking: issuer and serial (no certificate) */
	assert_int_equal(xip_verity_sig_signer(der, len, signer,
					       sizeof(signer)), 0);
	assert_non_null(strstr(signer, "issuer /CN=good serial "));
	free(der);
}

static void test_sign_matches_openssl(void **state)
{
	const char *dir = unit_tmpdir();
	struct xip_verity_signer *s;
	char key[512], cert[512], signer[256];
	uint8_t root[32], *der, *ref;
	size_t len, ref_len;

	(void)state;
	if (!have_openssl())
		skip();
	make_cert(dir, "mine", "-days 2");
	snprintf(key, sizeof(key), "%s/mine-key.pem", dir);
	snprintf(cert, sizeof(cert), "%s/mine-cert.pem", dir);
	assert_int_equal(xip_hex_decode(ROOT_HEX, root, sizeof(root)),
			 32);
	assert_int_equal(xip_verity_signer_load(key, cert, &s), 0);
	assert_int_equal(xip_verity_sign(s, root, 32, &der, &len), 0);
	xip_verity_signer_free(s);
	ref = openssl_sign_root(dir, "mine", &ref_len);
	assert_int_equal(len, ref_len);
	assert_memory_equal(der, ref, len);
	assert_int_equal(xip_verity_sig_check(der, len, ROOT_HEX, cert,
					      signer, sizeof(signer)), 0);
	free(der);
	free(ref);
	/* a certificate that is not the key's */
	make_cert(dir, "theirs", "-days 2");
	snprintf(cert, sizeof(cert), "%s/theirs-cert.pem", dir);
	assert_int_equal(xip_verity_signer_load(key, cert, &s),
			 -EKEYREJECTED);
	assert_null(s);
}

/* A key and a certificate that expired in 2020 (python3-cryptography). */
static const char expired_py[] =
	"import datetime as d\n"
	"from cryptography import x509\n"
	"from cryptography.hazmat.primitives import hashes, serialization as s\n"
	"from cryptography.hazmat.primitives.asymmetric import rsa\n"
	"from cryptography.x509.oid import NameOID\n"
	"k = rsa.generate_private_key(public_exponent=65537, key_size=2048)\n"
	"n = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'old')])\n"
	"c = (x509.CertificateBuilder().subject_name(n).issuer_name(n)\n"
	"     .public_key(k.public_key()).serial_number(7)\n"
	"     .not_valid_before(d.datetime(2020, 1, 1))\n"
	"     .not_valid_after(d.datetime(2020, 1, 2))\n"
	"     .sign(k, hashes.SHA256()))\n"
	"open('old-key.pem', 'wb').write(k.private_bytes(s.Encoding.PEM,\n"
	"    s.PrivateFormat.PKCS8, s.NoEncryption()))\n"
	"open('old-cert.pem', 'wb').write(c.public_bytes(s.Encoding.PEM))\n";

static void test_expired_certificate(void **state)
{
	const char *dir = unit_tmpdir();
	char signer[256], path[512], trust[512];
	uint8_t *der;
	size_t len;
	FILE *f;

	(void)state;
	if (!have_openssl() ||
	    system("python3 -c 'import cryptography' 2>/dev/null"))
		skip();
	snprintf(path, sizeof(path), "%s/expired.py", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(expired_py, f);
	fclose(f);
	sh("cd %s && python3 expired.py", dir);
	der = openssl_sign_root(dir, "old", &len);
	snprintf(trust, sizeof(trust), "%s/old-cert.pem", dir);
	assert_int_equal(xip_verity_sig_check(der, len, ROOT_HEX, trust,
					      signer, sizeof(signer)),
			 -EKEYREJECTED);
	assert_non_null(strstr(xip_errmsg(), "expired"));
	free(der);
}

/* xip_verity_trust_check(@dir/@name): @err, the message has @what. */
static void trust_is(const char *dir, const char *name, int err,
		     const char *what)
{
	char trust[512];

	snprintf(trust, sizeof(trust), "%s/%s", dir, name);
	assert_int_equal(xip_verity_trust_check(trust), err);
	if (what)
		assert_non_null(strstr(xip_errmsg(), what));
}

/*
 * A trust store is root's (or the caller's) and writable by no one
 * else, itself and each entry of a directory; no symbolic link in it.
 */
static void test_trust_store_rules(void **state)
{
	const char *dir = unit_tmpdir();
	char path[512];

	(void)state;
	if (!have_openssl())
		skip();
	make_cert(dir, "ts", "-days 2");
	sh("cd %s && rm -rf store && mkdir store && chmod 755 store && "
	   "cp ts-cert.pem store/ && chmod 644 ts-cert.pem store/ts-cert.pem "
	   "&& touch store/README && chmod 644 store/README", dir);
	trust_is(dir, "store", 0, NULL);
	trust_is(dir, "ts-cert.pem", 0, NULL);
	/* writable by a group or by everyone: the file, an entry, the dir */
	sh("chmod g+w %s/ts-cert.pem", dir);
	trust_is(dir, "ts-cert.pem", -EPERM, "writable by other users (mode 0664)");
	sh("chmod 644 %s/ts-cert.pem && chmod o+w %s/store/ts-cert.pem", dir,
	   dir);
	trust_is(dir, "store", -EPERM, "store/ts-cert.pem: writable by other users");
	sh("chmod 644 %s/store/ts-cert.pem && chmod o+w %s/store/README", dir,
	   dir);
	trust_is(dir, "store", -EPERM, "store/README: writable by other users");
	sh("chmod 644 %s/store/README && chmod 777 %s/store", dir, dir);
	trust_is(dir, "store", -EPERM, "store: writable by other users (mode 0777)");
	sh("chmod 755 %s/store", dir);
	trust_is(dir, "store", 0, NULL);
	/* a symbolic link: in the store, or the store itself */
	sh("cd %s && ln -s ../ts-cert.pem store/link.pem", dir);
	trust_is(dir, "store", -ELOOP, "store/link.pem: a symbolic link");
	sh("cd %s && rm store/link.pem && ln -s store store-link", dir);
	trust_is(dir, "store-link", -ELOOP, "store-link: a symbolic link");
	trust_is(dir, "store", 0, NULL);
	/* another user's: only as root can the test give it away */
	if (geteuid() == 0) {
		sh("chown 65534 %s/store/ts-cert.pem", dir);
		trust_is(dir, "store", -EPERM, "owned by another user (uid 65534)");
		sh("chown 0 %s/store/ts-cert.pem && chown 65534 %s/store", dir,
		   dir);
		trust_is(dir, "store", -EPERM, "store: owned by another user");
		sh("chown 0 %s/store", dir);
	}
	/* the default: $XIPTOOL_TRUST_DIR when it exists */
	snprintf(path, sizeof(path), "%s/store", dir);
	setenv("XIPTOOL_TRUST_DIR", path, 1);
	assert_string_equal(xip_verity_trust_default(), path);
	snprintf(path, sizeof(path), "%s/none", dir);
	setenv("XIPTOOL_TRUST_DIR", path, 1);
	assert_null(xip_verity_trust_default());
	unsetenv("XIPTOOL_TRUST_DIR");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_block_roundtrip),
		cmocka_unit_test(test_block_hostile),
		cmocka_unit_test(test_block_after_tree),
		cmocka_unit_test(test_openssl_signature_checks),
		cmocka_unit_test(test_sign_matches_openssl),
		cmocka_unit_test(test_expired_certificate),
		cmocka_unit_test(test_trust_store_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
