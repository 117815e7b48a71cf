/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Libraries loaded at first use (lazy.c), for the rooms above util that
 * call them.  Not in the umbrella lib/xip.h: its macros rename the
 * functions of libarchive, libnbd, json-c and libcrypto, which a program
 * of its own (a command, the plugin, a test) must keep calling directly.
 */
#ifndef XIP_LAZY_H
#define XIP_LAZY_H

enum xip_lazy_which {
	XIP_LAZY_ARCHIVE,	/* libarchive: mkfs --tar, extract */
	XIP_LAZY_NBD,		/* libnbd: attach nbd:// */
	XIP_LAZY_JSON,		/* json-c: mkfs --oci */
	XIP_LAZY_CRYPTO,	/* libcrypto: mkfs --oci, dm-verity and its
				 * signatures (lib/verity) */
	XIP_LAZY_CURL,		/* libcurl: the registry client (lib/oci) */
	XIP_LAZY_MOUNT,		/* libmount: the mount table (mounts.c) */
};

/*
 * Load @which (once): 0, or -ENOSYS with an error naming the shared
 * object and why it could not be loaded.  Call it before the first
 * function of that library.
 */
int xip_lazy_load(enum xip_lazy_which which);

/*
 * The functions of those libraries that the library calls are defined in
 * lazy.c under names of its own: include this header before <archive.h>,
 * <archive_entry.h>, <libnbd.h>, <json-c/json.h>, <libmount.h> and the
 * OpenSSL headers
 * (<openssl/evp.h>, pem.h, pkcs7.h, x509.h, err.h), and their declarations
 * and every call
 * take the xip_lazy_ name.
 */
#define mnt_new_table xip_lazy_mnt_new_table
#define mnt_unref_table xip_lazy_mnt_unref_table
#define mnt_new_iter xip_lazy_mnt_new_iter
#define mnt_free_iter xip_lazy_mnt_free_iter
#define mnt_table_parse_file xip_lazy_mnt_table_parse_file
#define mnt_table_next_fs xip_lazy_mnt_table_next_fs
#define mnt_fs_get_devno xip_lazy_mnt_fs_get_devno
#define mnt_fs_get_root xip_lazy_mnt_fs_get_root
#define mnt_fs_get_target xip_lazy_mnt_fs_get_target
#define mnt_fs_get_fstype xip_lazy_mnt_fs_get_fstype
#define mnt_fs_get_source xip_lazy_mnt_fs_get_source
#define json_tokener_new_ex xip_lazy_json_tokener_new_ex
#define json_tokener_free xip_lazy_json_tokener_free
#define json_tokener_parse_ex xip_lazy_json_tokener_parse_ex
#define json_tokener_get_error xip_lazy_json_tokener_get_error
#define json_tokener_error_desc xip_lazy_json_tokener_error_desc
#define json_object_put xip_lazy_json_object_put
#define json_object_is_type xip_lazy_json_object_is_type
#define json_object_object_get_ex xip_lazy_json_object_object_get_ex
#define json_object_get_string xip_lazy_json_object_get_string
#define json_object_get_int64 xip_lazy_json_object_get_int64
#define json_object_array_length xip_lazy_json_object_array_length
#define json_object_array_get_idx xip_lazy_json_object_array_get_idx
#define EVP_MD_CTX_new xip_lazy_EVP_MD_CTX_new
#define EVP_MD_CTX_free xip_lazy_EVP_MD_CTX_free
#define EVP_sha256 xip_lazy_EVP_sha256
#define EVP_DigestInit_ex xip_lazy_EVP_DigestInit_ex
#define EVP_DigestUpdate xip_lazy_EVP_DigestUpdate
#define EVP_DigestFinal_ex xip_lazy_EVP_DigestFinal_ex
#define EVP_MD_fetch xip_lazy_EVP_MD_fetch
#define EVP_MD_free xip_lazy_EVP_MD_free
#define EVP_DigestInit_ex2 xip_lazy_EVP_DigestInit_ex2
#define EVP_PKEY_free xip_lazy_EVP_PKEY_free
#define BIO_new_mem_buf xip_lazy_BIO_new_mem_buf
#define BIO_free xip_lazy_BIO_free
#define PEM_read_bio_PrivateKey xip_lazy_PEM_read_bio_PrivateKey
#define PEM_read_bio_X509 xip_lazy_PEM_read_bio_X509
#define PEM_read_bio_PKCS7 xip_lazy_PEM_read_bio_PKCS7
#define X509_free xip_lazy_X509_free
#define X509_check_private_key xip_lazy_X509_check_private_key
#define X509_get_subject_name xip_lazy_X509_get_subject_name
#define X509_NAME_oneline xip_lazy_X509_NAME_oneline
#define X509_find_by_issuer_and_serial xip_lazy_X509_find_by_issuer_and_serial
#define X509_STORE_new xip_lazy_X509_STORE_new
#define X509_STORE_free xip_lazy_X509_STORE_free
#define X509_STORE_add_cert xip_lazy_X509_STORE_add_cert
#define X509_STORE_set_flags xip_lazy_X509_STORE_set_flags
#define X509_STORE_set_purpose xip_lazy_X509_STORE_set_purpose
#define PKCS7_sign xip_lazy_PKCS7_sign
#define PKCS7_verify xip_lazy_PKCS7_verify
#define PKCS7_get_signer_info xip_lazy_PKCS7_get_signer_info
#define PKCS7_get0_signers xip_lazy_PKCS7_get0_signers
#define PKCS7_ctrl xip_lazy_PKCS7_ctrl
#define PKCS7_free xip_lazy_PKCS7_free
#define d2i_PKCS7 xip_lazy_d2i_PKCS7
#define i2d_PKCS7 xip_lazy_i2d_PKCS7
#define OBJ_obj2nid xip_lazy_OBJ_obj2nid
#define ASN1_STRING_length xip_lazy_ASN1_STRING_length
#define ASN1_STRING_get0_data xip_lazy_ASN1_STRING_get0_data
#define OPENSSL_sk_new_null xip_lazy_OPENSSL_sk_new_null
#define OPENSSL_sk_push xip_lazy_OPENSSL_sk_push
#define OPENSSL_sk_num xip_lazy_OPENSSL_sk_num
#define OPENSSL_sk_value xip_lazy_OPENSSL_sk_value
#define OPENSSL_sk_free xip_lazy_OPENSSL_sk_free
#define OPENSSL_sk_pop_free xip_lazy_OPENSSL_sk_pop_free
#define ERR_get_error xip_lazy_ERR_get_error
#define ERR_get_error_all xip_lazy_ERR_get_error_all
#define ERR_reason_error_string xip_lazy_ERR_reason_error_string
#define ERR_clear_error xip_lazy_ERR_clear_error
#define archive_read_new xip_lazy_archive_read_new
#define archive_read_free xip_lazy_archive_read_free
#define archive_read_support_format_tar xip_lazy_archive_read_support_format_tar
#define archive_read_support_format_raw xip_lazy_archive_read_support_format_raw
#define archive_read_support_filter_gzip xip_lazy_archive_read_support_filter_gzip
#define archive_read_support_filter_xz xip_lazy_archive_read_support_filter_xz
#define archive_read_support_filter_zstd xip_lazy_archive_read_support_filter_zstd
#define archive_read_open_fd xip_lazy_archive_read_open_fd
#define archive_read_open xip_lazy_archive_read_open
#define archive_read_next_header xip_lazy_archive_read_next_header
#define archive_read_data_block xip_lazy_archive_read_data_block
#define archive_errno xip_lazy_archive_errno
#define archive_error_string xip_lazy_archive_error_string
#define archive_filter_bytes xip_lazy_archive_filter_bytes
#define archive_read_header_position xip_lazy_archive_read_header_position
#define archive_entry_sparse_reset xip_lazy_archive_entry_sparse_reset
#define archive_entry_sparse_next xip_lazy_archive_entry_sparse_next
#define archive_entry_atime xip_lazy_archive_entry_atime
#define archive_entry_atime_is_set xip_lazy_archive_entry_atime_is_set
#define archive_entry_atime_nsec xip_lazy_archive_entry_atime_nsec
#define archive_entry_mtime xip_lazy_archive_entry_mtime
#define archive_entry_mtime_is_set xip_lazy_archive_entry_mtime_is_set
#define archive_entry_mtime_nsec xip_lazy_archive_entry_mtime_nsec
#define archive_entry_filetype xip_lazy_archive_entry_filetype
#define archive_entry_mode xip_lazy_archive_entry_mode
#define archive_entry_gid xip_lazy_archive_entry_gid
#define archive_entry_uid xip_lazy_archive_entry_uid
#define archive_entry_hardlink xip_lazy_archive_entry_hardlink
#define archive_entry_pathname xip_lazy_archive_entry_pathname
#define archive_entry_pathname_utf8 xip_lazy_archive_entry_pathname_utf8
#define archive_entry_rdev xip_lazy_archive_entry_rdev
#define archive_entry_size xip_lazy_archive_entry_size
#define archive_entry_symlink xip_lazy_archive_entry_symlink
#define archive_entry_xattr_reset xip_lazy_archive_entry_xattr_reset
#define archive_entry_xattr_next xip_lazy_archive_entry_xattr_next
/*
 * libcurl: include <curl/curl.h> after this header (CURL_DISABLE_TYPECHECK
 * keeps its type-checking macros out), then "util/xip_lazycurl.h" for the
 * two variadic functions, which curl.h defines as macros of their own.
 */
#define CURL_DISABLE_TYPECHECK
#define curl_global_init xip_lazy_curl_global_init
#define curl_easy_init xip_lazy_curl_easy_init
#define curl_easy_cleanup xip_lazy_curl_easy_cleanup
#define curl_easy_reset xip_lazy_curl_easy_reset
#define curl_easy_pause xip_lazy_curl_easy_pause
#define curl_easy_strerror xip_lazy_curl_easy_strerror
#define curl_slist_append xip_lazy_curl_slist_append
#define curl_slist_free_all xip_lazy_curl_slist_free_all
#define curl_multi_init xip_lazy_curl_multi_init
#define curl_multi_cleanup xip_lazy_curl_multi_cleanup
#define curl_multi_add_handle xip_lazy_curl_multi_add_handle
#define curl_multi_remove_handle xip_lazy_curl_multi_remove_handle
#define curl_multi_perform xip_lazy_curl_multi_perform
#define curl_multi_poll xip_lazy_curl_multi_poll
#define curl_multi_info_read xip_lazy_curl_multi_info_read
#define curl_url xip_lazy_curl_url
#define curl_url_cleanup xip_lazy_curl_url_cleanup
#define curl_url_set xip_lazy_curl_url_set
#define curl_url_get xip_lazy_curl_url_get
#define curl_free xip_lazy_curl_free
#define curl_easy_escape xip_lazy_curl_easy_escape
#define nbd_create xip_lazy_nbd_create
#define nbd_close xip_lazy_nbd_close
#define nbd_get_error xip_lazy_nbd_get_error
#define nbd_get_errno xip_lazy_nbd_get_errno
#define nbd_add_meta_context xip_lazy_nbd_add_meta_context
#define nbd_aio_connect_uri xip_lazy_nbd_aio_connect_uri
#define nbd_aio_is_connecting xip_lazy_nbd_aio_is_connecting
#define nbd_aio_is_ready xip_lazy_nbd_aio_is_ready
#define nbd_aio_get_fd xip_lazy_nbd_aio_get_fd
#define nbd_aio_get_direction xip_lazy_nbd_aio_get_direction
#define nbd_aio_notify_read xip_lazy_nbd_aio_notify_read
#define nbd_aio_notify_write xip_lazy_nbd_aio_notify_write
#define nbd_aio_command_completed xip_lazy_nbd_aio_command_completed
#define nbd_can_meta_context xip_lazy_nbd_can_meta_context
#define nbd_get_size xip_lazy_nbd_get_size
#define nbd_get_block_size xip_lazy_nbd_get_block_size
#define nbd_aio_pread xip_lazy_nbd_aio_pread
#define nbd_aio_block_status xip_lazy_nbd_aio_block_status

#endif
