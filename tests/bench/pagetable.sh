#!/usr/bin/env bash
# This machine's page-table cost, printed beside every table so that the
# other figures can be read against it: microseconds per 4 KiB page to
# populate the page-table entries of a shared mapping of a 512 MiB tmpfs
# file (MADV_POPULATE_READ; then one fault per page), against pread(2) of
# the same bytes, which needs no entry.  Not a target: on some virtual
# machines an entry costs more than copying its page, which is why bulk
# data in xiptool moves through descriptors, not mappings.
set -euo pipefail
. "$(dirname "$0")/common.bash"
bench_scratch
bench_cc "$B/pagetable" pagetable.c
read -r pop touch pread < <("$B/pagetable" "$B/file" "$BENCH_REPEAT")
echo "page-table cost: populate $pop us, touch $touch us, pread $pread us per 4 KiB page"
bench_report "page-table cost: populate a shared tmpfs mapping [us/4 KiB page] vs pread" \
	"$(bench_fmt "$pop" 3)" "$(bench_fmt "$pread" 3)" ">0"
bench_report "page-table cost: one fault per page [us/4 KiB page] vs pread" \
	"$(bench_fmt "$touch" 3)" "$(bench_fmt "$pread" 3)" ">0"
