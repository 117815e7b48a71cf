/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The ps room's internals (ps.c), for its unit tests. */
#ifndef XIP_PS_INT_H
#define XIP_PS_INT_H

#include "util/xip_util.h"

/* ------------------------------------------------------------------ */
/* Processes that map attached segments (ps.c)                         */
/* ------------------------------------------------------------------ */

/* One line of /proc/PID/maps (or a mapping header of smaps). */
struct xip_ps_map {
	uint64_t start, end, offset;
	dev_t dev;
	uint64_t ino;
	bool exec;
	bool shared;			/* 's': MAP_SHARED */
	char path[XIP_PATH_MAX];
};
/* Parse @line: 0, or -EINVAL when it is not a mapping line. */
int xip_ps_parse_map(const char *line, struct xip_ps_map *m);

#endif
