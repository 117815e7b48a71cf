#!/usr/bin/env bats
# The library's layout: its names, its public header, its rooms.
#
# The rooms of lib/, bottom to top (README "Layout"): a room calls only
# rooms below it, so no two rooms call each other.
#
#   util oci segment verity registry reader engine exec attach mkfs check ps

load ../lib/common

bats_require_minimum_version 1.5.0

LIBXIP=${TOP_BUILDDIR:-$PWD}/libxip.a
ROOMS="util oci segment verity registry reader engine exec attach mkfs check ps"

# "symbol room object" for every object of libxip.a: D for each global
# symbol it defines, U for each it leaves undefined
room_symbols() {
	local b=${TOP_BUILDDIR:-$PWD} m o
	for m in $(ar t "$LIBXIP"); do
		o=$(ls "$b"/lib/*/"$m")
		[ "$(wc -l <<<"$o")" -eq 1 ] || { echo "member $m: $o" >&2; return 1; }
		o=${o#"$b"/lib/}
		nm -g --defined-only "$b/lib/$o" 2>/dev/null |
			awk -v r="${o%%/*}" -v f="$o" 'NF == 3 { print "D", $3, r, f }'
		nm -u "$b/lib/$o" 2>/dev/null |
			awk -v r="${o%%/*}" -v f="$o" '{ print "U", $2, r, f }'
	done
}

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
	# util-linux's all-io.h); no room's internal header (front_mem.h: the
	# front end's own, in cmd/, read by its allocator and entry point)
	bad=$(grep -H '^#include "' cmd/*.c cmd/*.h nbdkit/*.c |
		grep -v -e '"cmd\.h"$' -e '"commands\.h"$' -e '"xip\.h"$' \
			-e '"util/xip_util\.h"$' -e '^cmd/[^:]*:#include "front_mem\.h"$' || true)
	[ -z "$bad" ] || { echo "$bad"; false; }
}

@test "layout: the public headers include no internal header" {
	cd "$TOP_SRCDIR"
	# public: lib/xip.h, an umbrella over lib/<room>/xip_*.h; internal:
	# lib/<room>/*_int.h, never included by a public one
	pub=$(ls lib/xip.h lib/*/xip_*.h)
	[ "$(wc -l <<<"$pub")" -ge 10 ]
	bad=$(grep -H '^#include "' $pub | grep -v '"[a-z]*/xip_[a-z0-9]*\.h"$' ||
		true)
	[ -z "$bad" ] || { echo "$bad"; false; }
	# every room's public header is in the umbrella, but those for the
	# rooms above only, which say so
	for h in lib/*/xip_*.h; do
		grepq "^#include \"${h#lib/}\"$" lib/xip.h ||
			grepq 'Not in the umbrella' "$h" ||
			{ echo "lib/xip.h does not include ${h#lib/}"; false; }
	done
	[ "$(wc -l < lib/xip.h)" -le 300 ]
}

# "FILE ROOM INCLUDED" for every quoted include of a file of lib/
lib_includes() {
	local f
	for f in lib/*/*.[ch]; do
		sed -n 's/^#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
			awk -v f="$f" '{ split(f, p, "/"); print f, p[2], $0 }'
	done
}

@test "layout: no file of lib/ includes the umbrella xip.h" {
	cd "$TOP_SRCDIR"
	lib_includes > "$T/inc"
	[ "$(wc -l < "$T/inc")" -gt 200 ]
	bad=$(awk '$3 == "xip.h" { print $1 " includes the umbrella xip.h" }' "$T/inc")
	[ -z "$bad" ] || { echo "$bad"; false; }
}

@test "layout: a file of lib/ includes its own room's headers and public headers of rooms below only (so no cycle)" {
	cd "$TOP_SRCDIR"
	lib_includes > "$T/inc"
	[ "$(wc -l < "$T/inc")" -gt 200 ]
	bad=$(awk -v rooms="$ROOMS" '
		BEGIN { n = split(rooms, r, " "); for (i = 1; i <= n; i++) rank[r[i]] = i }
		{
			if ($3 !~ /\//) { print $1 ": " $3 ": name the room (\"room/name.h\")"; next }
			split($3, q, "/")
			if (!(q[1] in rank)) { print $1 ": " $3 ": no such room"; next }
			if (q[1] == $2) next
			if (rank[q[1]] > rank[$2]) print $1 " (" $2 ") includes " $3 " of " q[1] ", a room above it"
			else if (q[2] !~ /^xip_[a-z0-9]*\.h$/) print $1 " (" $2 ") includes " $3 ", another room'"'"'s internal header"
		}' "$T/inc")
	[ -z "$bad" ] || { echo "$bad"; false; }
	# a public header includes public headers only, of its room or below
	bad=$(awk '$1 ~ /\/xip_[a-z0-9]*\.h$/ && $3 !~ /\/xip_[a-z0-9]*\.h$/ { print $1 " (public) includes " $3 }' "$T/inc")
	[ -z "$bad" ] || { echo "$bad"; false; }
}

@test "layout: every folder of lib/ is a room of the table" {
	cd "$TOP_SRCDIR"
	for d in lib/*/; do
		d=${d#lib/}
		d=${d%/}
		[[ " $ROOMS " == *" $d "* ]] ||
			{ echo "lib/$d is not in the table of rooms (layout.bats, README Layout)"; false; }
	done
}

@test "layout: README's Layout lists the rooms of the table, files and headers" {
	cd "$TOP_SRCDIR"
	rows=$(sed -n '/^## Layout/,/^## /p' README.md | grep '^  | `')
	[ "$(awk -F'|' '{ gsub(/[ `]/, "", $2); printf "%s ", $2 }' <<<"$rows")" == "$ROOMS " ]
	for d in $ROOMS; do
		row=$(grep "^  | \`$d\` |" <<<"$rows")
		for f in lib/$d/*.[chS]; do
			f=${f##*/}
			[[ $f == exec-*.S ]] && f='exec-<arch>.S'
			[[ "$row" == *"\`$f\`"* ]] ||
				{ echo "README Layout: $d does not list $f"; false; }
		done
	done
}

@test "layout: a room calls only rooms below it (nm of libxip.a's objects)" {
	require_cmd nm ar
	[ -f "$LIBXIP" ] || skip "libxip.a is not built"
	room_symbols > "$T/syms"
	[ "$(grep -c '^D ' "$T/syms")" -gt 200 ]
	bad=$(awk -v rooms="$ROOMS" '
		BEGIN { n = split(rooms, r, " "); for (i = 1; i <= n; i++) rank[r[i]] = i }
		!($3 in rank) { print $4 ": room " $3 " is not in the table"; next }
		$1 == "D" { def[$2] = $3; next }
		{ use[++k] = $0 }
		END {
			for (i = 1; i <= k; i++) {
				split(use[i], u, " ")
				d = def[u[2]]
				if (d != "" && d != u[3] && rank[d] > rank[u[3]])
					print u[4] " (" u[3] ") calls " u[2] " of " d ", a room above it"
			}
		}' "$T/syms")
	[ -z "$bad" ] || { echo "$bad"; false; }
}

@test "layout: no file of the library is over 1,000 lines" {
	cd "$TOP_SRCDIR"
	big=$(wc -l lib/*.h lib/*/*.[chS] | awk '$2 != "total" && $1 > 1000')
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
		tests/unit/*.c tests/unit/*.h
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
	cp "$TOP_SRCDIR/tests/lib/testlint-samples/h.sample" "$T/h.c"
	run "$PY" "$TOP_SRCDIR/tests/lib/testlint.py" "$T/cli/a.bats" \
		"$T/cli/b.bats" "$T/t.c" "$T/h.c"
	echo "$output"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 7 ]
	[[ "${lines[0]}" == "$T/cli/a.bats:4: assertions chained with &&"* ]]
	[[ "${lines[1]}" == "$T/cli/a.bats:7: assertions chained with &&"* ]]
	[[ "${lines[2]}" == "$T/cli/a.bats:11: bare \`! cmd\`"* ]]
	[[ "${lines[3]}" == "$T/cli/a.bats:16: a pipe into \`grep -q\`"* ]]
	[[ "${lines[4]}" == "$T/cli/b.bats:1: does not load tests/lib/common.bash"* ]]
	[[ "${lines[5]}" == "$T/t.c:4: silent return in a test body"* ]]
	[[ "${lines[6]}" == "$T/h.c:5: silent return in a test helper"* ]]
	# runs nothing checks, `|| true` after a comparison
	cp "$TOP_SRCDIR/tests/lib/testlint-samples/r.sample" "$T/cli/r.bats"
	run "$PY" "$TOP_SRCDIR/tests/lib/testlint.py" "$T/cli/r.bats"
	echo "$output"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 5 ]
	[[ "${lines[0]}" == "$T/cli/r.bats:8: a \`run\` whose status nothing checks"* ]]
	[[ "${lines[1]}" == "$T/cli/r.bats:12: \`|| true\` after a comparison"* ]]
	[[ "${lines[2]}" == "$T/cli/r.bats:13: \`|| true\` after a comparison"* ]]
	[[ "${lines[3]}" == "$T/cli/r.bats:14: \`|| true\` after a comparison"* ]]
	[[ "${lines[4]}" == "$T/cli/r.bats:25: a \`run\` whose status nothing checks"* ]]
	# clean files: no finding, status 0
	run "$PY" "$TOP_SRCDIR/tests/lib/testlint.py" "$T/lib/common.bash"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}
