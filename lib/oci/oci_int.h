/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The oci room's own helpers. */
#ifndef XIP_OCI_INT_H
#define XIP_OCI_INT_H

#include <stddef.h>

/* @len bytes of @s in base64 (padded): a new string, NULL without memory. */
char *xip_oci_base64(const char *s, size_t len);

#endif
