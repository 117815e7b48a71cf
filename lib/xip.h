/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libxip: execute-in-place images and memory segments.
 *
 * The one public header of the library.  Every function returns 0 (or a
 * non-negative count) on success and a negative errno on failure; the
 * detailed reason (which inode, which block) is left in a thread-local
 * error record that xip_errmsg() returns.  The library never prints and
 * never exits.
 */
#ifndef XIP_H
#define XIP_H

#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "util/xip_ext2.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "util/xip_util.h"
#include "util/xip_error.h"
#include "util/xip_debug.h"
#include "oci/xip_oci.h"
#include "segment/xip_segment.h"
#include "segment/xip_loop.h"
#include "segment/xip_kcopy.h"
#include "segment/xip_fill.h"
#include "verity/xip_verity.h"
#include "registry/xip_registry.h"
#include "reader/xip_reader.h"
#include "engine/xip_engine.h"
#include "exec/xip_elf.h"
#include "exec/xip_exec.h"
#include "attach/xip_attach.h"
#include "mkfs/xip_mkfs.h"
#include "check/xip_check.h"
#include "ps/xip_ps.h"

#ifdef __cplusplus
}
#endif

#endif /* XIP_H */
