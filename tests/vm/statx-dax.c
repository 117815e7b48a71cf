// SPDX-License-Identifier: GPL-2.0-or-later
/* Print "dax=1" or "dax=0" for each file: statx's STATX_ATTR_DAX. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#ifndef STATX_ATTR_DAX
#define STATX_ATTR_DAX 0x00200000
#endif

int main(int argc, char **argv)
{
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		struct statx stx;

		if (statx(AT_FDCWD, argv[i], 0, STATX_BASIC_STATS, &stx) < 0) {
			perror(argv[i]);
			rc = 1;
			continue;
		}
		printf("%s dax=%d known=%d\n", argv[i],
		       !!(stx.stx_attributes & STATX_ATTR_DAX),
		       !!(stx.stx_attributes_mask & STATX_ATTR_DAX));
	}
	return rc;
}
