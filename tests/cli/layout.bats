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
	# util/xip_util.h: the EINTR loops and roundings, for programs too (like
	# util-linux's all-io.h); no room's internal header
	bad=$(grep -H '^#include "' cmd/*.c cmd/*.h nbdkit/*.c |
		grep -v -e '"cmd\.h"$' -e '"commands\.h"$' -e '"xip\.h"$' \
			-e '"util/xip_util\.h"$' || true)
	[ -z "$bad" ] || { echo "$bad"; false; }
	# and the public header includes no internal one: only the rooms'
	# public headers (lib/<room>/xip_<name>.h)
	[ -z "$(grep '^#include "' lib/xip.h | grep -v '^#include "[a-z]*/xip_[a-z_]*\.h"$')" ]
	[ -z "$(grep -h '^#include "' lib/*/xip_*.h | grep '_int\.h"')" ]
}

@test "layout: the segment layer does not call up into the registry" {
	cd "$TOP_SRCDIR"
	for f in lib/segment/segment.c lib/segment/loop.c lib/segment/kcopy.c; do
		[ -z "$(grep -n 'xip_registry_\|registry_int\.h' "$f")" ] ||
			{ echo "$f calls the registry"; false; }
	done
}

@test "layout: no file of the library is over 1,200 lines" {
	cd "$TOP_SRCDIR"
	big=$(wc -l lib/*.h lib/*/*.[chS] | awk '$2 != "total" && $1 > 1200')
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

# The files tests/lib/testlint.py reads: the bats tests, their helpers,
# the guest tests and the cmocka tests.
lint_files() {
	ls tests/cli/*.bats tests/lib/*.bash tests/vm/*.bats tests/vm/*.bash \
		tests/unit/*.c
}

@test "layout: no test assertion that cannot fail (tests/lib/testlint.py)" {
	cd "$TOP_SRCDIR"
	files=$(lint_files)
	[ "$(grep -c '\.bats$' <<<"$files")" -ge 36 ]
	run "$PY" tests/lib/testlint.py $files
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "layout: testlint.py finds each shape it refuses, and only those" {
	mkdir -p "$T/lib" "$T/cli"
	echo 'set -o pipefail' > "$T/lib/common.bash"
	# the samples are kept out of .bats files, which the lint itself reads
	cp "$TOP_SRCDIR/tests/lib/testlint-samples/a.sample" "$T/cli/a.bats"
	cat > "$T/cli/b.bats" <<-'EOF'
	load ../lib/other

	%test "b" {
		true
	}
	EOF
	# (%test: bats would take @test at the start of a line for its own)
	sed -i 's/^%test/@test/' "$T/cli/b.bats"
	cat > "$T/t.c" <<-'EOF'
	static void test_one(void **state)
	{
		if (access("/x", F_OK))
			return;
		assert_true(1);
	}

	static void test_two(void **state)
	{
		if (access("/x", F_OK)) {
			skip();
			return;
		}
		assert_true(1);
		if (access("/y", F_OK))
			return;
	}

	static void helper(const char *p)
	{
		if (!p)
			return;
	}
	EOF
	run "$PY" "$TOP_SRCDIR/tests/lib/testlint.py" "$T/cli/a.bats" \
		"$T/cli/b.bats" "$T/t.c"
	echo "$output"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 6 ]
	[[ "${lines[0]}" == "$T/cli/a.bats:4: assertions chained with &&"* ]]
	[[ "${lines[1]}" == "$T/cli/a.bats:7: assertions chained with &&"* ]]
	[[ "${lines[2]}" == "$T/cli/a.bats:11: bare \`! cmd\`"* ]]
	[[ "${lines[3]}" == "$T/cli/a.bats:16: a pipe into \`grep -q\`"* ]]
	[[ "${lines[4]}" == "$T/cli/b.bats:1: does not load tests/lib/common.bash"* ]]
	[[ "${lines[5]}" == "$T/t.c:4: silent return in a test body"* ]]
	# clean files: no finding, status 0
	run "$PY" "$TOP_SRCDIR/tests/lib/testlint.py" "$T/lib/common.bash"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}
