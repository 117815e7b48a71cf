/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What only the registry's own files (registry.c, record.c, open.c,
 * list.c, names.c, busy.c) and its tests use; the rooms above use
 * xip_registry.h.
 */
#ifndef XIP_REGISTRY_INT_H
#define XIP_REGISTRY_INT_H

#include "registry/xip_registry.h"
#include "segment/xip_segment.h"

/* State file text: format and parse (exposed for the unit tests). */
int xip_registry_format(const struct xip_seg_entry *e, char *buf, size_t len);
int xip_registry_parse(const char *text, struct xip_seg_entry *e);
/*
 * Parse into @e, which the caller zeroed, only the fields that opening
 * the segment reads (name to path, struct xip_seg_entry): the others
 * stay 0.  The bytes of @e written are those of its first fields.
 */
int xip_registry_parse_brief(const char *text, struct xip_seg_entry *e);

/*
 * Shared by the registry's files (registry.c: the run directory, holder
 * locks, records and identity; open.c: opening a segment; list.c).
 */
const char *xip_registry_users_dir(void);
uid_t xip_registry_euid(void);
int xip_registry_rundir_path(char *buf, size_t len, uid_t euid);
int xip_registry_rundir_refuse(const char *dir, const struct stat *st,
			       uid_t euid);
int xip_registry_hold_open_path(uint64_t dev, uint64_t ino, bool fresh,
				char *name);
int xip_registry_hold_open_plain(const struct stat *st, bool *none,
				 char *name);
int xip_registry_record_read(const char *name, struct xip_seg_entry *e,
			     bool brief);
int xip_registry_foreign_error(const struct xip_seg_entry *e);
void xip_registry_loop_forget(struct xip_seg_entry *e);
void xip_registry_live_loop_check(struct xip_seg_entry *e);

#endif