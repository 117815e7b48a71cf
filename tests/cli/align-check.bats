#!/usr/bin/env bats
# xiptool align-check on real programs: busybox-static, programs built here
# with the host toolchain, laid out by mke2fs -d, debugfs and a block
# relayout checked by e2fsck -fn.

load ../lib/common
load ../lib/names

: "${CC:=cc}"

ino_of() {	# ino_of IMAGE PATH
	debugfs -R "stat $2" "$1" 2>/dev/null | sed -n 's/^Inode: \([0-9]*\).*/\1/p'
}

# Put the data blocks of PATH in IMAGE in one run (mke2fs -d puts the
# indirect block between blocks 11 and 12); e2fsck must still be clean.
relayout() {
	python3 "$TOP_SRCDIR/tests/lib/relayout.py" "$1" "$(ino_of "$1" "$2")"
}

hello() {
	printf '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n' > "$T/hello.c"
}

@test "busybox-static and a static-pie program, laid out contiguously, are xip-ready" {
	require_cmd busybox python3 "$CC"
	hello
	mkdir -p "$T/tree/bin"
	cp "$(command -v busybox)" "$T/tree/bin/busybox"
	"$CC" -static-pie -fPIE -O2 -o "$T/tree/bin/hello" "$T/hello.c"
	"$T/tree/bin/hello" | grepq -x hello
	echo 'not an ELF file' > "$T/tree/readme"
	mkimg "$T/img" 32M "$T/tree"
	relayout "$T/img" /bin/busybox
	relayout "$T/img" /bin/hello
	fsck_clean "$T/img"
	debugfs -R "dump /bin/busybox $T/bb" "$T/img" 2>/dev/null
	cmp "$T/bb" "$T/tree/bin/busybox"
	run xiptool verify "$T/img"
	[ "$status" -eq 0 ]
	run xiptool align-check "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^/bin/busybox: xip-ready: [0-9]* segments, [0-9]* mmaps, [0-9]* of [0-9]* file pages shared$' <<<"$output"
	grep -q '^/bin/hello: xip-ready: ' <<<"$output"
	[ "$(tail -1 <<<"$output")" = "$T/img: 2 ELF files checked: 2 xip-ready, 0 not; 1 other file skipped" ]
	# one mmap per PT_LOAD, as readelf counts them
	loads=$(readelf -lW "$T/tree/bin/busybox" | grep -c '^ *LOAD')
	grep -q "^/bin/busybox: xip-ready: $loads segments, $loads mmaps" <<<"$output"
}

@test "the same programs as mke2fs -d lays them out: not contiguous, flagged" {
	require_cmd busybox "$CC"
	hello
	mkdir -p "$T/tree"
	cp "$(command -v busybox)" "$T/tree/busybox"
	mkimg "$T/img" 32M "$T/tree"
	run xiptool align-check "$T/img" /busybox
	echo "$output"
	[ "$status" -eq 1 ]
	grep -q '^/busybox: not xip-ready: .*segment [0-9]* (r-x): its blocks are not contiguous (2 runs: 2 mmaps instead of 1)' <<<"$output"
}

@test "a program written by debugfs into fragmented free space is flagged" {
	require_cmd busybox debugfs
	mkdir -p "$T/tree/frag"
	for i in $(seq 200); do head -c 4096 /dev/urandom > "$T/tree/frag/f$i"; done
	mkimg "$T/img" 32M "$T/tree"
	for i in $(seq 1 2 200); do debugfs -w -R "rm /frag/f$i" "$T/img" 2>/dev/null; done
	debugfs -w -R "write $(command -v busybox) busybox" "$T/img" 2>/dev/null
	fsck_clean "$T/img"
	run xiptool align-check "$T/img" /busybox
	echo "$output"
	[ "$status" -eq 1 ]
	grep -Eq 'its blocks are not contiguous \(([3-9]|[1-9][0-9]+) runs' <<<"$output"
}

@test "a tiny page size, -N and text relocations are flagged with the right reason" {
	require_cmd "$CC"
	hello
	mkdir -p "$T/tree"
	"$CC" -static -O2 -Wl,-z,max-page-size=0x10 -o "$T/tree/tiny" "$T/hello.c"
	printf 'void _start(void) { __asm__ volatile("mov $60, %%eax; xor %%edi, %%edi; syscall"); }\n' > "$T/start.c"
	"$CC" -static -nostdlib -Wl,-N -o "$T/tree/omagic" "$T/start.c" 2>/dev/null
	printf 'long x;\nlong get(void) { return (long)&x; }\nint main(void) { return get() == 0; }\n' > "$T/tr.c"
	"$CC" -fno-pic -mcmodel=large -O2 -c -o "$T/tr.o" "$T/tr.c"
	"$CC" -pie -Wl,-z,notext -o "$T/tree/textrel" "$T/tr.o"
	readelf -d "$T/tree/textrel" | grepq TEXTREL
	mkimg "$T/img" 32M "$T/tree"
	run xiptool align-check "$T/img"
	echo "$output"
	[ "$status" -eq 1 ]
	grep -q '^/tiny: not xip-ready: .*segment [0-9]* (r-x): p_align 0x[0-9a-f]* smaller than the page size 4096' <<<"$output"
	grep -q '^/omagic: not xip-ready: segment [0-9]* (rwx): p_align 0x[0-9a-f]* smaller than the page size 4096; segment [0-9]* (rwx): writable and executable$' <<<"$output"
	grep -q '^/textrel: not xip-ready: text relocations (DT_TEXTREL): the pages they patch are copied$' <<<"$output"
	[ "$(tail -1 <<<"$output")" = "$T/img: 3 ELF files checked: 0 xip-ready, 3 not; 0 other files skipped" ]
}

@test "--huge: why a 2 MiB segment cannot be mapped with huge pages" {
	require_cmd "$CC"
	mkdir -p "$T/tree"
	# 3 MiB of read-only data and 3 MiB of initialised writable data
	printf 'const char ro[3 << 20] = { 1 };\nchar rw[3 << 20] = { 1 };\nint main(int c, char **v) { return ro[c] + rw[c]; }\n' > "$T/big.c"
	"$CC" -static-pie -fPIE -O2 -o "$T/tree/big" "$T/big.c"
	mkimg "$T/img" 64M "$T/tree"
	run xiptool align-check "$T/img" /big
	[[ "$output" != *"2 MiB"* ]]
	run xiptool align-check --huge "$T/img" /big
	echo "$output"
	[ "$status" -eq 1 ]
	grep -q 'no 2 MiB mapping: p_align 0x1000: a position-independent file is loaded at an address aligned to less than 2 MiB' <<<"$output"
	grep -q '(rw-): no 2 MiB mapping: writable: its pages are copied' <<<"$output"
	run xiptool -v align-check --huge "$T/img" /big
	grep -q '^  segment [0-9]* r-- offset 0x[0-9a-f]* .*0 2 MiB mappings: p_align' <<<"$output"
}

@test "--json: the same verdicts; naming a non-ELF or missing file is an error" {
	require_cmd python3 "$CC"
	hello
	mkdir -p "$T/tree"
	"$CC" -static -O2 -Wl,-z,max-page-size=0x10 -o "$T/tree/tiny" "$T/hello.c"
	"$CC" -static-pie -fPIE -O2 -o "$T/tree/small" "$T/hello.c"
	echo text > "$T/tree/notes"
	mkimg "$T/img" 32M "$T/tree"
	python3 "$TOP_SRCDIR/tests/lib/relayout.py" "$T/img" "$(ino_of "$T/img" /small)"
	run xiptool align-check --json "$T/img"
	[ "$status" -eq 1 ]
	printf '%s' "$output" | python3 -c '
import json, sys
files = {f["path"]: f for f in json.load(sys.stdin)["files"]}
assert set(files) == {"/tiny", "/small"}, files
assert files["/small"]["ready"] is True and files["/small"]["reasons"] is None
assert files["/tiny"]["ready"] is False and "p_align" in files["/tiny"]["reasons"]
assert files["/small"]["mmaps"] == files["/small"]["segments"]
assert files["/small"]["shared-pages"] > 0 and files["/small"]["copied-pages"] > 0'
	run xiptool align-check "$T/img" /small /notes
	[ "$status" -eq 3 ]
	grep -qx "xiptool align-check: /notes: not an ELF file" <<<"$output"
	grep -q '^/small: xip-ready' <<<"$output"
	run xiptool align-check "$T/img" /nope
	[ "$status" -eq 3 ]
	[[ "$output" == *"/nope"* ]]
	run xiptool align-check "$T/img" /small
	[ "$status" -eq 0 ]
	run xiptool align-check --page-size 3000 "$T/img"
	[ "$status" -eq 2 ]
	run xiptool align-check
	[ "$status" -eq 2 ]
}

@test "busybox-static and a static-pie program in an image made by xiptool mkfs are xip-ready" {
	require_cmd busybox "$CC"
	hello
	mkdir -p "$T/tree/bin"
	cp "$(command -v busybox)" "$T/tree/bin/busybox"
	"$CC" -static-pie -fPIE -O2 -o "$T/tree/bin/hello" "$T/hello.c"
	xiptool mkfs -q -d "$T/tree" "$T/img"
	run xiptool align-check "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^/bin/busybox: xip-ready: ' <<<"$output"
	grep -q '^/bin/hello: xip-ready: ' <<<"$output"
}

@test "--huge: a program linked for 2 MiB pages, placed by mkfs --align 2M, maps huge" {
	require_cmd "$CC"
	mkdir -p "$T/tree"
	# 3 MiB of random read-only bytes (no zero page: no hole in the file)
	head -c 3145728 /dev/urandom > "$T/blob.bin"
	printf '__asm__(".section .rodata\\n.globl blob\\nblob: .incbin \\"%s\\"\\n.previous");\nextern const char blob[];\nint main(int c, char **v) { return blob[c]; }\n' "$T/blob.bin" > "$T/hb.c"
	"$CC" -static -O2 -Wl,-z,noseparate-code -Wl,-z,max-page-size=0x200000 -o "$T/tree/hb" "$T/hb.c"
	readelf -lW "$T/tree/hb" | grepq 'LOAD  *0x000000 0x0*400000 .* R E 0x200000'
	xiptool mkfs -q --align 2M -d "$T/tree" "$T/img"
	run xiptool -v align-check --huge "$T/img" /hb
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^/hb: xip-ready: 2 segments, 2 mmaps, .*, 1 2 MiB mapping$' <<<"$output"
	grep -q '^  segment 0 r-x offset 0x0 vaddr 0x400000 .*: 1 mmap, .*, 1 2 MiB mapping$' <<<"$output"
}

@test "names from the image are escaped in verdicts; --json is valid and holds them" {
	require_cmd python3
	hostile_tree "$T/tree"
	cp /usr/bin/true "$T/tree/$EVIL.elf"
	mkimg "$T/img" 8M "$T/tree"
	run xiptool align-check "$T/img"
	[ "${#lines[@]}" -eq 2 ]
	[[ ${lines[0]} == "/$EVIL_ESC.elf: "*"xip-ready"* ]]
	if printf '%s' "$output" | LC_ALL=C grep -q '[[:cntrl:]]'; then
		echo "raw control bytes in: $output"
		false
	fi
	run xiptool align-check "$T/img" "/$EVIL.elf"
	[[ ${lines[0]} == "/$EVIL_ESC.elf: "*"xip-ready"* ]]
	run xiptool align-check "$T/img" "/$EVIL"
	[ "$status" -eq 3 ]
	[ "${lines[0]}" = "xiptool align-check: /$EVIL_ESC: not an ELF file" ]
	xiptool align-check --json "$T/img" > "$T/out.json" || [ $? -eq 1 ]
	python3 - "$T/out.json" "/$EVIL.elf" <<'PY'
import json, sys
raw = open(sys.argv[1], "rb").read()
assert all(b >= 0x20 or b == 0x0a for b in raw), raw
files = json.loads(raw.decode("utf-8"))["files"]
assert [f["path"] for f in files] == [sys.argv[2]], files
PY
}

@test "a relocatable object in a good tree is skipped, not a failure; named, it is reported" {
	require_cmd busybox "$CC"
	printf 'int f(void) { return 1; }\n' > "$T/f.c"
	mkdir -p "$T/tree/bin" "$T/tree/lib"
	cp "$(command -v busybox)" "$T/tree/bin/busybox"
	"$CC" -c -o "$T/tree/lib/f.o" "$T/f.c"
	run xiptool mkfs -d "$T/tree" "$T/img"
	[ "$status" -eq 0 ]
	run xiptool align-check "$T/img"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "$T/img: 1 ELF file checked: 1 xip-ready, 0 not; 1 other file skipped" ]
	[[ "$output" != *f.o* ]]
	run xiptool align-check "$T/img" /lib/f.o
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "/lib/f.o: not xip-ready: a relocatable object, not an executable" ]
}
