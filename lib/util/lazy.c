// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Libraries loaded when first needed: libarchive (mkfs --tar, extract),
 * libnbd (attach nbd://), json-c and libcrypto (OCI, dm-verity), libmount
 * (the mount table: libselinux and PCRE2 come with it).  Linked in, they and what they pull in (ICU,
 * libxml2, GnuTLS, libstdc++: some 20 shared objects) cost every command
 * a start-up of tens of milliseconds where a page fault is dear.  So
 * xiptool-main does not link them: the functions the library calls are
 * defined here, under xip_lazy_ names (xip_lazy.h) with the prototypes of the
 * libraries' own headers, and call through pointers that xip_lazy_load()
 * fills with dlopen/dlsym.
 * Every entry point that uses one of them loads it first and reports a
 * library that cannot be loaded as an error naming it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>

#include "util/xip_error.h"
#include "util/xip_lazy.h"

#include <archive.h>
#include <archive_entry.h>
#ifdef HAVE_LIBNBD
#include <libnbd.h>
#endif
#include <json-c/json.h>
#include <libmount.h>
#include <openssl/evp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/pkcs7.h>
#include <openssl/x509.h>
#include <curl/curl.h>
#include "util/xip_lazycurl.h"

struct lazy_lib {
	const char *soname;
	void *handle;
	const char *const *names;	/* NULL-terminated */
	void **slots;
	int err;			/* 0, or the load's error (sticky) */
	char why[256];
};

/*
 * One list drives everything: LAZY_ARCHIVE(ret, name, params, args) for
 * each function, in the order of the slots.
 */
#define ARCHIVE_FUNCS(X) \
	X(struct archive *, archive_read_new, (void), ()) \
	X(int, archive_read_free, (struct archive *a), (a)) \
	X(int, archive_read_support_format_tar, (struct archive *a), (a)) \
	X(int, archive_read_support_format_raw, (struct archive *a), (a)) \
	X(int, archive_read_support_filter_gzip, (struct archive *a), (a)) \
	X(int, archive_read_support_filter_xz, (struct archive *a), (a)) \
	X(int, archive_read_support_filter_zstd, (struct archive *a), (a)) \
	X(int, archive_read_open_fd, (struct archive *a, int fd, size_t bs), (a, fd, bs)) \
	X(int, archive_read_open, (struct archive *a, void *c, archive_open_callback *o, archive_read_callback *r, archive_close_callback *cl), (a, c, o, r, cl)) \
	X(int, archive_read_next_header, (struct archive *a, struct archive_entry **e), (a, e)) \
	X(int, archive_read_data_block, (struct archive *a, const void **b, size_t *s, la_int64_t *o), (a, b, s, o)) \
	X(int, archive_errno, (struct archive *a), (a)) \
	X(const char *, archive_error_string, (struct archive *a), (a)) \
	X(la_int64_t, archive_filter_bytes, (struct archive *a, int n), (a, n)) \
	X(la_int64_t, archive_read_header_position, (struct archive *a), (a)) \
	X(int, archive_entry_sparse_reset, (struct archive_entry *e), (e)) \
	X(int, archive_entry_sparse_next, (struct archive_entry *e, la_int64_t *o, la_int64_t *l), (e, o, l)) \
	X(time_t, archive_entry_atime, (struct archive_entry *e), (e)) \
	X(int, archive_entry_atime_is_set, (struct archive_entry *e), (e)) \
	X(long, archive_entry_atime_nsec, (struct archive_entry *e), (e)) \
	X(time_t, archive_entry_mtime, (struct archive_entry *e), (e)) \
	X(int, archive_entry_mtime_is_set, (struct archive_entry *e), (e)) \
	X(long, archive_entry_mtime_nsec, (struct archive_entry *e), (e)) \
	X(__LA_MODE_T, archive_entry_filetype, (struct archive_entry *e), (e)) \
	X(__LA_MODE_T, archive_entry_mode, (struct archive_entry *e), (e)) \
	X(la_int64_t, archive_entry_gid, (struct archive_entry *e), (e)) \
	X(la_int64_t, archive_entry_uid, (struct archive_entry *e), (e)) \
	X(const char *, archive_entry_hardlink, (struct archive_entry *e), (e)) \
	X(const char *, archive_entry_pathname, (struct archive_entry *e), (e)) \
	X(const char *, archive_entry_pathname_utf8, (struct archive_entry *e), (e)) \
	X(dev_t, archive_entry_rdev, (struct archive_entry *e), (e)) \
	X(la_int64_t, archive_entry_size, (struct archive_entry *e), (e)) \
	X(const char *, archive_entry_symlink, (struct archive_entry *e), (e)) \
	X(int, archive_entry_xattr_reset, (struct archive_entry *e), (e)) \
	X(int, archive_entry_xattr_next, (struct archive_entry *e, const char **n, const void **v, size_t *s), (e, n, v, s))

#define LAZY_NAME(ret, name, params, args) #name,
#define LAZY_SLOT(ret, name, params, args) void *name;
/*
 * The stubs take the names xip_lazy.h gives (xip_lazy_archive_read_new for
 * archive_read_new); LAZY_NAME's # keeps the library's own name for
 * dlsym.  Hidden: nothing outside the library calls them.
 */
#define LAZY_STUB(lib, ret, name, params, args) \
	__attribute__((visibility("hidden"))) ret name params \
	{ \
		return ((ret(*) params)lazy_##lib##_slots.name) args; \
	}

/*
 * A library's names for dlsym, its slots, its stubs (@stub: LAZY_STUB
 * bound to @lib) and its lazy_lib, from its X-list @funcs.
 */
#define LAZY_LIB(lib, funcs, stub, soname) \
	static const char *const lib##_names[] = { funcs(LAZY_NAME) NULL }; \
	static struct { funcs(LAZY_SLOT) } lazy_##lib##_slots; \
	funcs(stub) \
	static struct lazy_lib lib_##lib = { \
		soname, NULL, lib##_names, (void **)&lazy_##lib##_slots, 0, "" \
	};

#define ARCHIVE_STUB(ret, name, params, args) LAZY_STUB(archive, ret, name, params, args)
LAZY_LIB(archive, ARCHIVE_FUNCS, ARCHIVE_STUB, XIP_LIBARCHIVE_SONAME)

#define JSON_FUNCS(X) \
	X(struct json_tokener *, json_tokener_new_ex, (int depth), (depth)) \
	X(void, json_tokener_free, (struct json_tokener *t), (t)) \
	X(struct json_object *, json_tokener_parse_ex, (struct json_tokener *t, const char *s, int len), (t, s, len)) \
	X(enum json_tokener_error, json_tokener_get_error, (struct json_tokener *t), (t)) \
	X(const char *, json_tokener_error_desc, (enum json_tokener_error e), (e)) \
	X(int, json_object_put, (struct json_object *o), (o)) \
	X(int, json_object_is_type, (const struct json_object *o, enum json_type t), (o, t)) \
	X(json_bool, json_object_object_get_ex, (const struct json_object *o, const char *k, struct json_object **v), (o, k, v)) \
	X(const char *, json_object_get_string, (struct json_object *o), (o)) \
	X(int64_t, json_object_get_int64, (const struct json_object *o), (o)) \
	X(size_t, json_object_array_length, (const struct json_object *o), (o)) \
	X(struct json_object *, json_object_array_get_idx, (const struct json_object *o, size_t i), (o, i))

#define JSON_STUB(ret, name, params, args) LAZY_STUB(json, ret, name, params, args)
LAZY_LIB(json, JSON_FUNCS, JSON_STUB, XIP_LIBJSONC_SONAME)

#define CRYPTO_FUNCS(X) \
	X(EVP_MD_CTX *, EVP_MD_CTX_new, (void), ()) \
	X(void, EVP_MD_CTX_free, (EVP_MD_CTX *c), (c)) \
	X(const EVP_MD *, EVP_sha256, (void), ()) \
	X(int, EVP_DigestInit_ex, (EVP_MD_CTX *c, const EVP_MD *t, ENGINE *e), (c, t, e)) \
	X(int, EVP_DigestUpdate, (EVP_MD_CTX *c, const void *d, size_t n), (c, d, n)) \
	X(int, EVP_DigestFinal_ex, (EVP_MD_CTX *c, unsigned char *md, unsigned int *n), (c, md, n)) \
	X(EVP_MD *, EVP_MD_fetch, (OSSL_LIB_CTX *x, const char *a, const char *p), (x, a, p)) \
	X(void, EVP_MD_free, (EVP_MD *m), (m)) \
	X(int, EVP_DigestInit_ex2, (EVP_MD_CTX *c, const EVP_MD *t, const OSSL_PARAM *p), (c, t, p)) \
	X(void, EVP_PKEY_free, (EVP_PKEY *k), (k)) \
	X(BIO *, BIO_new_mem_buf, (const void *b, int n), (b, n)) \
	X(int, BIO_free, (BIO *b), (b)) \
	X(EVP_PKEY *, PEM_read_bio_PrivateKey, (BIO *b, EVP_PKEY **k, pem_password_cb *cb, void *u), (b, k, cb, u)) \
	X(X509 *, PEM_read_bio_X509, (BIO *b, X509 **x, pem_password_cb *cb, void *u), (b, x, cb, u)) \
	X(PKCS7 *, PEM_read_bio_PKCS7, (BIO *b, PKCS7 **x, pem_password_cb *cb, void *u), (b, x, cb, u)) \
	X(void, X509_free, (X509 *x), (x)) \
	X(int, X509_check_private_key, (const X509 *x, const EVP_PKEY *k), (x, k)) \
	X(X509_NAME *, X509_get_subject_name, (const X509 *x), (x)) \
	X(char *, X509_NAME_oneline, (const X509_NAME *n, char *b, int s), (n, b, s)) \
	X(X509 *, X509_find_by_issuer_and_serial, (STACK_OF(X509) *sk, const X509_NAME *n, const ASN1_INTEGER *s), (sk, n, s)) \
	X(X509_STORE *, X509_STORE_new, (void), ()) \
	X(void, X509_STORE_free, (X509_STORE *s), (s)) \
	X(int, X509_STORE_add_cert, (X509_STORE *s, X509 *x), (s, x)) \
	X(int, X509_STORE_set_flags, (X509_STORE *s, unsigned long f), (s, f)) \
	X(int, X509_STORE_set_purpose, (X509_STORE *s, int p), (s, p)) \
	X(PKCS7 *, PKCS7_sign, (X509 *x, EVP_PKEY *k, STACK_OF(X509) *c, BIO *d, int f), (x, k, c, d, f)) \
	X(int, PKCS7_verify, (PKCS7 *p, STACK_OF(X509) *c, X509_STORE *s, BIO *d, BIO *o, int f), (p, c, s, d, o, f)) \
	X(STACK_OF(PKCS7_SIGNER_INFO) *, PKCS7_get_signer_info, (PKCS7 *p), (p)) \
	X(STACK_OF(X509) *, PKCS7_get0_signers, (PKCS7 *p, STACK_OF(X509) *c, int f), (p, c, f)) \
	X(long, PKCS7_ctrl, (PKCS7 *p, int c, long l, char *a), (p, c, l, a)) \
	X(void, PKCS7_free, (PKCS7 *p), (p)) \
	X(PKCS7 *, d2i_PKCS7, (PKCS7 **p, const unsigned char **in, long n), (p, in, n)) \
	X(int, i2d_PKCS7, (const PKCS7 *p, unsigned char **out), (p, out)) \
	X(int, OBJ_obj2nid, (const ASN1_OBJECT *o), (o)) \
	X(int, ASN1_STRING_length, (const ASN1_STRING *s), (s)) \
	X(const unsigned char *, ASN1_STRING_get0_data, (const ASN1_STRING *s), (s)) \
	X(OPENSSL_STACK *, OPENSSL_sk_new_null, (void), ()) \
	X(int, OPENSSL_sk_push, (OPENSSL_STACK *s, const void *d), (s, d)) \
	X(int, OPENSSL_sk_num, (const OPENSSL_STACK *s), (s)) \
	X(void *, OPENSSL_sk_value, (const OPENSSL_STACK *s, int i), (s, i)) \
	X(void, OPENSSL_sk_free, (OPENSSL_STACK *s), (s)) \
	X(void, OPENSSL_sk_pop_free, (OPENSSL_STACK *s, void (*f)(void *)), (s, f)) \
	X(unsigned long, ERR_get_error, (void), ()) \
	X(unsigned long, ERR_get_error_all, (const char **f, int *l, const char **fn, const char **d, int *fl), (f, l, fn, d, fl)) \
	X(const char *, ERR_reason_error_string, (unsigned long e), (e)) \
	X(void, ERR_clear_error, (void), ())

#define CRYPTO_STUB(ret, name, params, args) LAZY_STUB(crypto, ret, name, params, args)
LAZY_LIB(crypto, CRYPTO_FUNCS, CRYPTO_STUB, XIP_LIBCRYPTO_SONAME)

#define MOUNT_FUNCS(X) \
	X(struct libmnt_table *, mnt_new_table, (void), ()) \
	X(void, mnt_unref_table, (struct libmnt_table *tb), (tb)) \
	X(struct libmnt_iter *, mnt_new_iter, (int direction), (direction)) \
	X(void, mnt_free_iter, (struct libmnt_iter *itr), (itr)) \
	X(int, mnt_table_parse_file, (struct libmnt_table *tb, const char *filename), (tb, filename)) \
	X(int, mnt_table_next_fs, (struct libmnt_table *tb, struct libmnt_iter *itr, struct libmnt_fs **fs), (tb, itr, fs)) \
	X(dev_t, mnt_fs_get_devno, (struct libmnt_fs *fs), (fs)) \
	X(const char *, mnt_fs_get_root, (struct libmnt_fs *fs), (fs)) \
	X(const char *, mnt_fs_get_target, (struct libmnt_fs *fs), (fs)) \
	X(const char *, mnt_fs_get_fstype, (struct libmnt_fs *fs), (fs)) \
	X(const char *, mnt_fs_get_source, (struct libmnt_fs *fs), (fs))

#define MOUNT_STUB(ret, name, params, args) LAZY_STUB(mount, ret, name, params, args)
LAZY_LIB(mount, MOUNT_FUNCS, MOUNT_STUB, XIP_LIBMOUNT_SONAME)

#ifdef HAVE_LIBNBD
#define NBD_FUNCS(X) \
	X(struct nbd_handle *, nbd_create, (void), ()) \
	X(void, nbd_close, (struct nbd_handle *h), (h)) \
	X(const char *, nbd_get_error, (void), ()) \
	X(int, nbd_get_errno, (void), ()) \
	X(int, nbd_add_meta_context, (struct nbd_handle *h, const char *name), (h, name)) \
	X(int, nbd_aio_connect_uri, (struct nbd_handle *h, const char *uri), (h, uri)) \
	X(int, nbd_aio_is_connecting, (struct nbd_handle *h), (h)) \
	X(int, nbd_aio_is_ready, (struct nbd_handle *h), (h)) \
	X(int, nbd_aio_get_fd, (struct nbd_handle *h), (h)) \
	X(unsigned, nbd_aio_get_direction, (struct nbd_handle *h), (h)) \
	X(int, nbd_aio_notify_read, (struct nbd_handle *h), (h)) \
	X(int, nbd_aio_notify_write, (struct nbd_handle *h), (h)) \
	X(int, nbd_aio_command_completed, (struct nbd_handle *h, uint64_t cookie), (h, cookie)) \
	X(int, nbd_can_meta_context, (struct nbd_handle *h, const char *name), (h, name)) \
	X(int64_t, nbd_get_size, (struct nbd_handle *h), (h)) \
	X(int64_t, nbd_get_block_size, (struct nbd_handle *h, int size_type), (h, size_type)) \
	X(int64_t, nbd_aio_pread, (struct nbd_handle *h, void *buf, size_t count, uint64_t offset, nbd_completion_callback cb, uint32_t flags), (h, buf, count, offset, cb, flags)) \
	X(int64_t, nbd_aio_block_status, (struct nbd_handle *h, uint64_t count, uint64_t offset, nbd_extent_callback ecb, nbd_completion_callback ccb, uint32_t flags), (h, count, offset, ecb, ccb, flags))

#define NBD_STUB(ret, name, params, args) LAZY_STUB(nbd, ret, name, params, args)
LAZY_LIB(nbd, NBD_FUNCS, NBD_STUB, XIP_LIBNBD_SONAME)
#endif

/*
 * libcurl (the registry client, lib/oci).  curl_easy_setopt and
 * curl_easy_getinfo are variadic: their stubs below take the one
 * argument by the type the option's number says (curl's own rule).
 */
#define CURL_FUNCS(X) \
	X(CURLcode, curl_global_init, (long f), (f)) \
	X(CURL *, curl_easy_init, (void), ()) \
	X(void, curl_easy_cleanup, (CURL *c), (c)) \
	X(void, curl_easy_reset, (CURL *c), (c)) \
	X(CURLcode, curl_easy_pause, (CURL *c, int b), (c, b)) \
	X(const char *, curl_easy_strerror, (CURLcode e), (e)) \
	X(struct curl_slist *, curl_slist_append, (struct curl_slist *l, const char *s), (l, s)) \
	X(void, curl_slist_free_all, (struct curl_slist *l), (l)) \
	X(CURLM *, curl_multi_init, (void), ()) \
	X(CURLMcode, curl_multi_cleanup, (CURLM *m), (m)) \
	X(CURLMcode, curl_multi_add_handle, (CURLM *m, CURL *c), (m, c)) \
	X(CURLMcode, curl_multi_remove_handle, (CURLM *m, CURL *c), (m, c)) \
	X(CURLMcode, curl_multi_perform, (CURLM *m, int *n), (m, n)) \
	X(CURLMcode, curl_multi_poll, (CURLM *m, struct curl_waitfd e[], unsigned int n, int ms, int *r), (m, e, n, ms, r)) \
	X(CURLMsg *, curl_multi_info_read, (CURLM *m, int *n), (m, n)) \
	X(CURLU *, curl_url, (void), ()) \
	X(void, curl_url_cleanup, (CURLU *u), (u)) \
	X(CURLUcode, curl_url_set, (CURLU *u, CURLUPart w, const char *p, unsigned int f), (u, w, p, f)) \
	X(CURLUcode, curl_url_get, (CURLU *u, CURLUPart w, char **p, unsigned int f), (u, w, p, f)) \
	X(void, curl_free, (void *p), (p)) \
	X(char *, curl_easy_escape, (CURL *c, const char *s, int n), (c, s, n)) \
	X(CURLcode, curl_easy_setopt, (CURL *c, CURLoption o, ...), ()) \
	X(CURLcode, curl_easy_getinfo, (CURL *c, CURLINFO i, ...), ())

/* the variadic two are written by hand below */
#define CURL_STUB(ret, name, params, args) CURL_STUB_##name(ret, name, params, args)
#define CURL_STUB_ONE(ret, name, params, args) LAZY_STUB(curl, ret, name, params, args)
#define CURL_STUB_curl_global_init CURL_STUB_ONE
#define CURL_STUB_curl_easy_init CURL_STUB_ONE
#define CURL_STUB_curl_easy_cleanup CURL_STUB_ONE
#define CURL_STUB_curl_easy_reset CURL_STUB_ONE
#define CURL_STUB_curl_easy_pause CURL_STUB_ONE
#define CURL_STUB_curl_easy_strerror CURL_STUB_ONE
#define CURL_STUB_curl_slist_append CURL_STUB_ONE
#define CURL_STUB_curl_slist_free_all CURL_STUB_ONE
#define CURL_STUB_curl_multi_init CURL_STUB_ONE
#define CURL_STUB_curl_multi_cleanup CURL_STUB_ONE
#define CURL_STUB_curl_multi_add_handle CURL_STUB_ONE
#define CURL_STUB_curl_multi_remove_handle CURL_STUB_ONE
#define CURL_STUB_curl_multi_perform CURL_STUB_ONE
#define CURL_STUB_curl_multi_poll CURL_STUB_ONE
#define CURL_STUB_curl_multi_info_read CURL_STUB_ONE
#define CURL_STUB_curl_url CURL_STUB_ONE
#define CURL_STUB_curl_url_cleanup CURL_STUB_ONE
#define CURL_STUB_curl_url_set CURL_STUB_ONE
#define CURL_STUB_curl_url_get CURL_STUB_ONE
#define CURL_STUB_curl_free CURL_STUB_ONE
#define CURL_STUB_curl_easy_escape CURL_STUB_ONE
#define CURL_STUB_curl_easy_setopt(ret, name, params, args)
#define CURL_STUB_curl_easy_getinfo(ret, name, params, args)
LAZY_LIB(curl, CURL_FUNCS, CURL_STUB, XIP_LIBCURL_SONAME)

__attribute__((visibility("hidden"))) CURLcode
xip_lazy_curl_easy_setopt(CURL *c, CURLoption o, ...)
{
	typedef CURLcode (*setopt_long)(CURL *, CURLoption, long);
	typedef CURLcode (*setopt_ptr)(CURL *, CURLoption, void *);
	typedef CURLcode (*setopt_off)(CURL *, CURLoption, curl_off_t);
	void *f = lazy_curl_slots.curl_easy_setopt;
	CURLcode ret;
	va_list ap;

	va_start(ap, o);
	if (o < CURLOPTTYPE_OBJECTPOINT)
		ret = ((setopt_long)f)(c, o, va_arg(ap, long));
	else if (o < CURLOPTTYPE_OFF_T)
		ret = ((setopt_ptr)f)(c, o, va_arg(ap, void *));
	else if (o < CURLOPTTYPE_BLOB)
		ret = ((setopt_off)f)(c, o, va_arg(ap, curl_off_t));
	else
		ret = ((setopt_ptr)f)(c, o, va_arg(ap, void *));
	va_end(ap);
	return ret;
}

__attribute__((visibility("hidden"))) CURLcode
xip_lazy_curl_easy_getinfo(CURL *c, CURLINFO i, ...)
{
	typedef CURLcode (*getinfo_ptr)(CURL *, CURLINFO, void *);
	void *f = lazy_curl_slots.curl_easy_getinfo;
	CURLcode ret;
	va_list ap;

	va_start(ap, i);
	ret = ((getinfo_ptr)f)(c, i, va_arg(ap, void *));
	va_end(ap);
	return ret;
}

static int lazy_open(struct lazy_lib *l)
{
	const char *err;

	if (l->handle)
		return 0;
	if (l->err)
		return xip_error(l->err, "%s", l->why);
	dlerror();
	l->handle = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
	if (!l->handle) {
		err = dlerror();
		l->err = -ENOSYS;
		snprintf(l->why, sizeof(l->why), "cannot load %s: %s",
			 l->soname, err ? err : "unknown error");
		return xip_error(l->err, "%s", l->why);
	}
	for (size_t i = 0; l->names[i]; i++) {
		l->slots[i] = dlsym(l->handle, l->names[i]);
		if (!l->slots[i]) {
			l->err = -ENOSYS;
			snprintf(l->why, sizeof(l->why),
				 "%s has no function %s (too old?)", l->soname,
				 l->names[i]);
			dlclose(l->handle);
			l->handle = NULL;
			return xip_error(l->err, "%s", l->why);
		}
	}
	return 0;
}

static int lazy_load(enum xip_lazy_which which)
{
	switch (which) {
	case XIP_LAZY_ARCHIVE:
		return lazy_open(&lib_archive);
	case XIP_LAZY_JSON:
		return lazy_open(&lib_json);
	case XIP_LAZY_CRYPTO:
		return lazy_open(&lib_crypto);
	case XIP_LAZY_CURL:
		return lazy_open(&lib_curl);
	case XIP_LAZY_MOUNT:
		return lazy_open(&lib_mount);
#ifdef HAVE_LIBNBD
	case XIP_LAZY_NBD:
		return lazy_open(&lib_nbd);
#endif
	default:
		return xip_error(-ENOSYS, "built without that library");
	}
}

/* One load at a time: the hashing threads of a verified attach ask too. */
int xip_lazy_load(enum xip_lazy_which which)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	int ret;

	pthread_mutex_lock(&lock);
	ret = lazy_load(which);
	pthread_mutex_unlock(&lock);
	return ret;
}
