// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The libFuzzer entry point of one target: compiled once per target with
 * -DFUZZ_NAME=<name>, linked with fuzz_<name>.c.
 */
#include "fuzz.h"

#define FUZZ_CAT2(a, b) a##b
#define FUZZ_CAT(a, b) FUZZ_CAT2(a, b)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FUZZ_CAT(fuzz_target_, FUZZ_NAME)(data, size);
	return 0;
}
