#!/usr/bin/env bats
# The library's layout: its names, its public header, its layers.

load ../lib/common

bats_require_minimum_version 1.5.0

LIBXIP=${TOP_BUILDDIR:-$PWD}/libxip.a

@test "layout: every global name libxip.a defines starts with xip_" {
	require_cmd nm
	[ -f "$LIBXIP" ] || skip "libxip.a is not built"
	names=$(nm -g --defined-only "$LIBXIP" 2>/dev/null |
		awk 'NF == 3 && $2 ~ /[TDBRCVW]/ { print $3 }' | sort -u)
	[ "$(wc -l <<<"$names")" -gt 200 ]
	bad=$(grep -v -e '^xip_' -e '^__odr_asan\.xip_' <<<"$names" || true)
	[ -z "$bad" ] || { echo "without the prefix: $bad"; false; }
}

@test "layout: the commands and the nbdkit plugin use the public header only" {
	cd "$TOP_SRCDIR"
	# util.h: the EINTR loops and roundings, for programs too (like
	# util-linux's all-io.h); no room's internal header
	bad=$(grep -H '^#include "' cmd/*.c cmd/*.h nbdkit/*.c |
		grep -v -e '"cmd\.h"$' -e '"commands\.h"$' -e '"xip\.h"$' \
			-e '"util\.h"$' || true)
	[ -z "$bad" ] || { echo "$bad"; false; }
	# and the public header includes no internal one
	[ -z "$(grep '^#include "' lib/xip.h)" ]
}

@test "layout: the segment layer does not call up into the registry" {
	cd "$TOP_SRCDIR"
	for f in lib/segment.c lib/loop.c lib/kcopy.c; do
		[ -z "$(grep -n 'xip_registry_\|registry_int\.h' "$f")" ] ||
			{ echo "$f calls the registry"; false; }
	done
}

@test "layout: no file of the library is over 1,200 lines" {
	cd "$TOP_SRCDIR"
	big=$(wc -l lib/*.c lib/*.h | awk '$2 != "total" && $1 > 1200')
	[ -z "$big" ] || { echo "$big"; false; }
}

@test "layout: pipefail holds inside a test body" {
	[[ -o pipefail ]]
	if false | true; then
		echo "false | true succeeded: pipefail is not set"
		false
	fi
	run bash -c 'exit 3'
	[ "$status" -eq 3 ]
	# still set after run, which saves and restores the shell's flags
	[[ -o pipefail ]]
}
