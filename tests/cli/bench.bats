#!/usr/bin/env bats
# The benchmark harness (not the benchmarks): BENCH lines from
# tests/bench/common.bash and the table of tests/bench/run-benchmarks.

load ../lib/common

bats_require_minimum_version 1.5.0

run_bench() {
	bash "$TOP_SRCDIR/tests/bench/run-benchmarks" --logdir "$T/logs" "$@"
}

@test "bench_report computes the ratio and checks the target" {
	. "$TOP_SRCDIR/tests/bench/common.bash"
	run bench_report "copy [s] vs cp" 2 4 "<=1.05"
	[ "$output" = $'BENCH\tcopy [s] vs cp\t2\t4\t0.50\t<=1.05\tyes' ]
	run bench_report "copy [s] vs cp" 5 4 "<=1.05"
	[ "$output" = $'BENCH\tcopy [s] vs cp\t5\t4\t1.25\t<=1.05\tno' ]
	run bench_report "rate [MiB/s] vs memcpy" 900 1000 ">=0.9"
	[ "$(cut -f5,7 <<<"$output")" = $'0.90\tyes' ]
	run bench_report "rate [MiB/s] vs memcpy" 899 1000 ">0.9"
	[ "$(cut -f5,7 <<<"$output")" = $'0.90\tno' ]
	run bench_report "x" 1 0 "<=1"
	[ "$(cut -f5,7 <<<"$output")" = $'-\tno' ]
	run bench_report "x" 1 1 "~1"
	[ "$status" -eq 1 ]
	[ "$output" = "bench: bad target: ~1" ]
}

# A clock of the test's own: bench_now reads $T/clock (nanoseconds), and
# takes NAME advances it by the next of NAME's durations (ms, one a line
# in $T/NAME.ms) and logs NAME in $T/order: times and runs are counted,
# not measured, whatever the machine's load.
fake_clock() {
	echo 1000000000 > "$T/clock"
	: > "$T/order"
	bench_now() { cat "$T/clock"; }
}

takes() {
	local ms
	ms=$(sed -n "$(($(grep -cx "$1" "$T/order") + 1))p" "$T/$1.ms")
	[ -n "$ms" ]
	echo $(($(cat "$T/clock") + ms * 1000000)) > "$T/clock"
	echo "$1" >> "$T/order"
}

@test "bench_time prints the best wall time and fails with the command" {
	. "$TOP_SRCDIR/tests/bench/common.bash"
	fake_clock
	BENCH_REPEAT=3
	printf '%s\n' 300 120 250 > "$T/a.ms"
	run bench_time takes a
	[ "$status" -eq 0 ]
	[ "$output" = 0.120000 ]
	# each run once
	[ "$(tr -d '\n' <"$T/order")" = aaa ]
	run bench_time false
	[ "$status" -eq 1 ]
	[ "$output" = "bench: command failed: false" ]
}

@test "run-benchmarks prints one table of every script's lines" {
	mkdir "$T/b"
	printf '#!/bin/bash\necho noise\nprintf "BENCH\\tone [s] vs cp\\t1\\t2\\t0.50\\t<=1\\tyes\\n"\n' >"$T/b/a.sh"
	printf '#!/bin/bash\nprintf "BENCH\\ttwo [MiB/s] vs dd\\t3\\t2\\t1.50\\t>=1\\tyes\\n"\nprintf "BENCH\\tbroken\\n"\n' >"$T/b/b.sh"
	run run_bench --tsv "$T/rows" "$T/b/a.sh" "$T/b/b.sh"
	[ "$status" -eq 0 ]
	grep -qE '^MEASURE +XIPTOOL +PEER +RATIO +TARGET +WITHIN$' <<<"$output"
	grep -qE '^one \[s\] vs cp +1 +2 +0\.50 +<=1 +yes$' <<<"$output"
	grep -qE '^two \[MiB/s\] vs dd +3 +2 +1\.50 +>=1 +yes$' <<<"$output"
	grep -q 'malformed line' <<<"$output"
	[ "$(wc -l <"$T/rows")" -eq 2 ]
	grep -qx noise "$T/logs/a.log"
}

@test "run-benchmarks reports a failing script and exits 1" {
	mkdir "$T/b"
	printf '#!/bin/bash\necho oops >&2\nexit 4\n' >"$T/b/bad.sh"
	run run_bench "$T/b/bad.sh"
	[ "$status" -eq 1 ]
	grep -qE '^bad +- +- +- +- +failed \(exit 4\)$' <<<"$output"
	run run_bench --markdown "$T/b/bad.sh"
	grep -qx '| bad | - | - | - | - | failed (exit 4) |' <<<"$output"
}

@test "bench_pair interleaves two commands and prints the best time of each" {
	. "$TOP_SRCDIR/tests/bench/common.bash"
	fake_clock
	BENCH_ROUNDS=4
	printf '%s\n' 400 200 350 210 > "$T/s.ms"
	printf '%s\n' 30 20 25 40 > "$T/f.ms"
	s() { takes s; }
	f() { takes f; }
	run bench_pair s f
	[ "$status" -eq 0 ]
	[ "$output" = "0.200000 0.020000" ]
	# the order alternates: s f, f s, s f, f s
	[ "$(tr -d '\n' <"$T/order")" = sffssffs ]
	run bench_pair s false
	[ "$status" -eq 1 ]
	[ "$output" = "bench: command failed: false" ]
}

@test "every benchmark program builds against this tree, as its script builds it" {
	# the benchmarks run only on demand (make bench): a change to the
	# library they use is caught here
	require_cmd pkg-config
	[ -f "$TOP_BUILDDIR/libxip.a" ] || skip "libxip.a is not built"
	. "$TOP_SRCDIR/tests/bench/common.bash"
	local src n=0
	for src in "$TOP_SRCDIR"/tests/bench/*.c; do
		bench_cc "$T/${src##*/}.bin" "${src##*/}"
		[ -x "$T/${src##*/}.bin" ]
		n=$((n + 1))
	done
	[ "$n" -ge 4 ]
	# engine-read runs: the engine and memcpy, in MiB/s
	mkdir -p "$T/tree"
	head -c 300000 /dev/urandom > "$T/tree/f"
	xiptool mkfs -q -d "$T/tree" "$T/img"
	run -0 "$T/engine-read.c.bin" "$T/img" /f 1
	[[ "$output" =~ ^engine\ [0-9.]+\ memcpy\ [0-9.]+$ ]]
}
