/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz targets of libxip.  Every target is a function
 *
 *	int fuzz_target_<name>(const uint8_t *data, size_t size);
 *
 * listed in targets.h.  The libFuzzer build links one target per binary
 * through libfuzzer_main.c; the replay program (replay.c) links all of
 * them, built with the compiler and sanitizers of the main build, and runs
 * stored inputs through them in `make check`.
 */
#ifndef XIP_FUZZ_H
#define XIP_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "xip.h"

#define FUZZ_TARGET(name) int fuzz_target_##name(const uint8_t *data, size_t size)

#define XIP_FUZZ_TARGET(name) FUZZ_TARGET(name);
#include "targets.h"
#undef XIP_FUZZ_TARGET

/*
 * A private in-memory copy of the input as a segment: a memfd holding
 * @size bytes of @data, mapped through xip_seg_open_fd() like any image
 * file (writable when @flags has XIP_SEG_WRITE).  The input itself is
 * never written.
 */
int fuzz_open_segment(const uint8_t *data, size_t size, int flags,
		 struct xip_seg **segp);
/*
 * Open the input as an image (no holder lock): flags as for
 * xip_image_open().  Returns 0 or a negative errno like the library.
 */
int fuzz_open_image(const uint8_t *data, size_t size, int flags,
	       struct xip_image **imgp);

/*
 * Bounds on the work one input may cause inside a target (the library's
 * own bounds are what is being tested; these only keep a target from
 * looping over a huge but valid directory tree).
 */
#define FUZZ_MAX_FILES 256
#define FUZZ_MAX_READ (256 * 1024)

#endif /* XIP_FUZZ_H */
