/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libcurl's two variadic functions under lazy.c's names: include after
 * "util/xip_lazy.h" and <curl/curl.h>, whose own macros of the same names
 * (three arguments exactly) are replaced.  For the rooms above util
 * only (lib/oci): Not in the umbrella lib/xip.h.
 */
#ifndef XIP_LAZYCURL_H
#define XIP_LAZYCURL_H

#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_easy_setopt xip_lazy_curl_easy_setopt
#define curl_easy_getinfo xip_lazy_curl_easy_getinfo

CURLcode xip_lazy_curl_easy_setopt(CURL *c, CURLoption o, ...);
CURLcode xip_lazy_curl_easy_getinfo(CURL *c, CURLINFO i, ...);

#endif
