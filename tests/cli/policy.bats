#!/usr/bin/env bats
# The policy file (xiptool.conf(5)): root's attach admits, and root's
# exec runs programs from, only what its rules say; the file itself is
# trusted only when root's and nobody else may write it.  Under
# SECBIT_EXEC_RESTRICT_FILE exec asks the kernel (AT_EXECVE_CHECK).

load ../lib/common
load ../lib/attach

bats_require_minimum_version 1.5.0

setup() {
	attach_setup
	require_root
	require_cmd busybox chattr
	mkdir -p "$T/tree/bin"
	cp "$(command -v busybox)" "$T/tree/bin/busybox"
	run -0 env SOURCE_DATE_EPOCH=1700000000 "$XIPTOOL" mkfs -q --verity \
		-d "$T/tree" "$T/img"
	ROOT=$(sed -n 's/^root hash: //p' <<<"$output")
	[ ${#ROOT} -eq 64 ]
	export XIPTOOL_CONF=$T/xiptool.conf
	conf '# no rule'
}

teardown() { attach_teardown; }

# conf LINE...: the policy file, one rule a line, root's, mode 0644
conf() {
	printf '%s\n' "$@" > "$XIPTOOL_CONF"
	chmod 0644 "$XIPTOOL_CONF"
}

# nothing of an attach named $1 left: no record, no segment file
nothing_left() {
	[ ! -e "$T/run/$1" ]
	[ -z "$(find "$T" -maxdepth 2 -name "xiptool-$1.*")" ]
}

# restricted CMD...: CMD run with SECBIT_EXEC_RESTRICT_FILE set
# (prctl(PR_SET_SECUREBITS), Linux 6.14); 125 when the kernel has no such bit
restricted() {
	"$PY" - "$@" <<'PYEOF'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
PR_GET_SECUREBITS, PR_SET_SECUREBITS = 27, 28
if libc.prctl(PR_SET_SECUREBITS, libc.prctl(PR_GET_SECUREBITS) | 1 << 8) != 0:
    sys.exit(125)
os.execvp(sys.argv[1], sys.argv[1:])
PYEOF
}

require_exec_restrict() {
	restricted true || skip "no SECBIT_EXEC_RESTRICT_FILE in this kernel (6.14+)"
}

@test "attach = verified: an unverified image refused (3, one line naming the rule, nothing left), admitted with --root-hash" {
	conf '# only what was checked' 'attach = verified'
	fails_with 3 "xiptool attach: $T/img: refused by $XIPTOOL_CONF line 2 (attach = verified): the image would not be verified (attach it with --root-hash or --trust)" \
		xiptool attach -n "$SEG" "$T/img"
	nothing_left "$SEG"
	run -0 xiptool attach -n "$SEG" --root-hash "$ROOT" "$T/img"
	[ "$output" = "$SEG" ]
	[ "$(seg_col "$SEG" VERIFIED)" = 1 ]
	# a file whose rule lets anything in: today's attach
	conf 'attach = any'
	run -0 xiptool attach -n "p$SEG" "$T/img"
	[ "$output" = "p$SEG" ]
}

@test "attach = signed: a verified segment no signature was checked for is refused and undone" {
	conf 'exec = any' 'attach = signed'
	fails_with 3 "xiptool attach: $T/img: refused by $XIPTOOL_CONF line 2 (attach = signed): the segment is not signed (no signature of its root hash checked against a trust store)" \
		xiptool attach -n "$SEG" --root-hash "$ROOT" "$T/img"
	nothing_left "$SEG"
	fails_with 3 "xiptool attach: $T/img: refused by $XIPTOOL_CONF line 2 (attach = signed): the image would not be verified (attach it with --root-hash or --trust)" \
		xiptool attach -n "$SEG" "$T/img"
	nothing_left "$SEG"
}

@test "exec = verified: a path and an unverified segment refused (126), a verified one runs; a broken seal refused" {
	xiptool attach -n "p$SEG" "$T/img"
	xiptool attach -n "$SEG" --root-hash "$ROOT" "$T/img"
	conf 'exec = verified'
	fails_with 126 "xiptool exec: $T/img: refused by $XIPTOOL_CONF line 1 (exec = verified): not an attached segment (only a verified segment is)" \
		xiptool exec "$T/img" /bin/busybox echo ran
	fails_with 126 "xiptool exec: @p$SEG: refused by $XIPTOOL_CONF line 1 (exec = verified): the segment is not verified" \
		xiptool exec "@p$SEG" /bin/busybox echo ran
	run -0 xiptool exec "@$SEG" /bin/busybox echo ran
	[ "$output" = ran ]
	# the seal is checked as it is now: unsealed, or sealed again (its
	# ctime moved), the bytes may be anyone's
	path=$(seg_col "$SEG" PATH)
	chattr -i "$path"
	fails_with 126 "xiptool exec: @$SEG: refused by $XIPTOOL_CONF line 1 (exec = verified): the segment was verified, but its seal is broken" \
		xiptool exec "@$SEG" /bin/busybox echo ran
	chattr +i "$path"
	fails_with 126 "xiptool exec: @$SEG: refused by $XIPTOOL_CONF line 1 (exec = verified): the segment was verified, but its seal is broken" \
		xiptool exec "@$SEG" /bin/busybox echo ran
	# another user is not bound by root's policy (they could run a
	# loader of their own): the image path runs for them
	chmod 0755 "$T"
	chmod 0644 "$T/img"
	mkdir -m 0700 "$T/nobody"
	chown 65534:65534 "$T/nobody"
	run -0 setpriv --reuid=65534 --regid=65534 --clear-groups \
		env XIPTOOL_RUNDIR="$T/nobody" "$XIPTOOL" exec "$T/img" /bin/busybox echo ran
	[ "$output" = ran ]
}

@test "exec = signed: a verified segment without a signer refused, one whose record names its signer runs" {
	xiptool attach -n "$SEG" --root-hash "$ROOT" "$T/img"
	conf 'exec = signed'
	fails_with 126 "xiptool exec: @$SEG: refused by $XIPTOOL_CONF line 1 (exec = signed): the segment is verified but not signed (no signature checked against a trust store)" \
		xiptool exec "@$SEG" /bin/busybox echo ran
	# the record as an attach that checked a signature writes it
	printf 'signer=CN=xiptool-test\n' >> "$T/run/$SEG"
	run -0 xiptool exec "@$SEG" /bin/busybox echo ran
	[ "$output" = ran ]
}

@test "exec = signed: a segment attached with --trust runs" {
	xiptool attach --help | grepq -- --trust || skip "needs attach --trust"
	require_cmd openssl
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=xiptool-policy \
		-keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null
	run -0 env SOURCE_DATE_EPOCH=1700000000 "$XIPTOOL" mkfs -q --verity \
		--private-key "$T/key.pem" --certificate "$T/cert.pem" \
		-d "$T/tree" "$T/simg"
	conf 'attach = signed' 'exec = signed'
	xiptool attach -n "$SEG" --trust "$T/cert.pem" "$T/simg"
	run -0 xiptool exec "@$SEG" /bin/busybox echo ran
	[ "$output" = ran ]
}

@test "attach = signed and the default trust store: a plain attach of a signed image is checked with it; an unsigned one refused" {
	require_cmd openssl
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=xiptool-default \
		-keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null
	run -0 env SOURCE_DATE_EPOCH=1700000000 "$XIPTOOL" mkfs -q --verity \
		--private-key "$T/key.pem" --certificate "$T/cert.pem" \
		-d "$T/tree" "$T/simg"
	mkdir -m 0755 "$T/trust.d"
	install -m 0644 "$T/cert.pem" "$T/trust.d/builder.pem"
	export XIPTOOL_TRUST_DIR=$T/trust.d
	conf 'attach = signed' 'exec = signed'
	xiptool attach -n "$SEG" "$T/simg"
	run -0 xiptool list --json "$SEG"
	printf '%s' "$output" > "$T/list.json"
	"$PY" - "$T/list.json" <<'PYEOF'
import json, sys
s = json.load(open(sys.argv[1]))["segments"]
assert s[0]["verified"] is True and s[0]["signer"] == "/CN=xiptool-default", s
PYEOF
	run -0 xiptool exec "@$SEG" /bin/busybox echo ran
	[ "$output" = ran ]
	xiptool detach "$SEG"
	# an image with no signature: the store's check refuses it, nothing left
	run -3 xiptool attach -n "$SEG" "$T/img"
	[ "${#lines[@]}" -eq 1 ]
	grepq 'signature' <<<"$output"
	nothing_left "$SEG"
	# without the store, the rule asks for a way to verify
	export XIPTOOL_TRUST_DIR=$T/none
	fails_with 3 "xiptool attach: $T/simg: refused by $XIPTOOL_CONF line 1 (attach = signed): the image would not be verified (attach it with --root-hash or --trust)" \
		xiptool attach -n "$SEG" "$T/simg"
	nothing_left "$SEG"
}

@test "the policy file: others may write it, another user's, another user's symbolic link: refused, and nothing runs" {
	conf 'exec = any'
	chmod 0666 "$XIPTOOL_CONF"
	fails_with 126 "xiptool exec: $XIPTOOL_CONF: writable by others (mode 0666): not trusted" \
		xiptool exec "$T/img" /bin/busybox echo ran
	fails_with 3 "xiptool attach: $XIPTOOL_CONF: writable by others (mode 0666): not trusted" \
		xiptool attach -n "$SEG" "$T/img"
	nothing_left "$SEG"
	chmod 0664 "$XIPTOOL_CONF"
	fails_with 126 "xiptool exec: $XIPTOOL_CONF: writable by its group (mode 0664): not trusted" \
		xiptool exec "$T/img" /bin/busybox echo ran
	chmod 0644 "$XIPTOOL_CONF"
	chown 65534:65534 "$XIPTOOL_CONF"
	fails_with 126 "xiptool exec: $XIPTOOL_CONF: owned by uid 65534, neither root nor the caller: not trusted" \
		xiptool exec "$T/img" /bin/busybox echo ran
	# a symbolic link another user planted, to a file of root's: not
	# followed (whatever fs.protected_symlinks says)
	conf 'exec = any'
	chown 0:0 "$XIPTOOL_CONF"
	ln -s "$XIPTOOL_CONF" "$T/planted.conf"
	chown -h 65534:65534 "$T/planted.conf"
	fails_with 126 "xiptool exec: $T/planted.conf: a symbolic link of uid 65534's (neither root's nor the caller's): not followed" \
		env XIPTOOL_CONF="$T/planted.conf" "$XIPTOOL" exec "$T/img" /bin/busybox echo ran
	# root's own link is followed
	chown -h 0:0 "$T/planted.conf"
	run -0 env XIPTOOL_CONF="$T/planted.conf" "$XIPTOOL" exec "$T/img" /bin/busybox echo ran
	[ "$output" = ran ]
}

@test "the policy file: an unknown key or value, a key given twice: an error naming the file and line" {
	conf '# rules' 'exec = verified' '' 'run = any'
	fails_with 126 "xiptool exec: $XIPTOOL_CONF line 4: unknown key 'run' (expected attach or exec)" \
		xiptool exec "$T/img" /bin/busybox echo ran
	fails_with 3 "xiptool attach: $XIPTOOL_CONF line 4: unknown key 'run' (expected attach or exec)" \
		xiptool attach -n "$SEG" "$T/img"
	nothing_left "$SEG"
	conf 'attach = strict'
	fails_with 3 "xiptool attach: $XIPTOOL_CONF line 1: attach = 'strict': expected any, verified or signed" \
		xiptool attach -n "$SEG" "$T/img"
	conf 'exec = any' 'exec = verified'
	fails_with 126 "xiptool exec: $XIPTOOL_CONF line 2: exec given again (first on line 1)" \
		xiptool exec "$T/img" /bin/busybox echo ran
	# named but missing: an error too, not "no rule"
	fails_with 126 "xiptool exec: $T/none.conf: No such file or directory" \
		env XIPTOOL_CONF="$T/none.conf" "$XIPTOOL" exec "$T/img" /bin/busybox echo ran
}

@test "SECBIT_EXEC_RESTRICT_FILE: an image on a noexec mount or without execute permission refused (126), an executable one runs" {
	require_exec_restrict
	unset XIPTOOL_CONF
	mkdir "$T/noexec"
	mount -t tmpfs -o noexec,size=8M tmpfs "$T/noexec"
	cp "$T/img" "$T/noexec/img"
	chmod 0755 "$T/noexec/img" "$T/img"
	fails_with 126 "xiptool exec: $T/noexec/img: the kernel would not execute it (AT_EXECVE_CHECK under SECBIT_EXEC_RESTRICT_FILE): Permission denied" \
		restricted "$XIPTOOL" exec "$T/noexec/img" /bin/busybox echo ran
	run -0 restricted "$XIPTOOL" exec "$T/img" /bin/busybox echo ran
	[ "$output" = ran ]
	chmod 0644 "$T/img"
	fails_with 126 "xiptool exec: $T/img: the kernel would not execute it (AT_EXECVE_CHECK under SECBIT_EXEC_RESTRICT_FILE): Permission denied" \
		restricted "$XIPTOOL" exec "$T/img" /bin/busybox echo ran
	# without the bit the kernel is not asked: a program's file need not
	# be executable itself
	run -0 xiptool exec "$T/img" /bin/busybox echo ran
	[ "$output" = ran ]
}

@test "SECBIT_EXEC_RESTRICT_FILE: a segment carries its image's execute bits (none where an attach under the bit had the kernel refuse the image), and the kernel's check of its file" {
	require_exec_restrict
	unset XIPTOOL_CONF
	chmod 0644 "$T/img"
	xiptool attach -n "$SEG" "$T/img"
	[ "$(stat -c %a "$(seg_col "$SEG" PATH)")" = 444 ]
	fails_with 126 "xiptool exec: @$SEG: the kernel would not execute it (AT_EXECVE_CHECK under SECBIT_EXEC_RESTRICT_FILE): Permission denied" \
		restricted "$XIPTOOL" exec "@$SEG" /bin/busybox echo ran
	chmod 0755 "$T/img"
	xiptool attach -n "x$SEG" "$T/img"
	[ "$(stat -c %a "$(seg_col "x$SEG" PATH)")" = 555 ]
	run -0 restricted "$XIPTOOL" exec "@x$SEG" /bin/busybox echo ran
	[ "$output" = ran ]
	# an executable image on a noexec mount: attached under the bit, the
	# kernel's no carried (no execute bits); without it, its bits
	mkdir "$T/noexec"
	mount -t tmpfs -o noexec,size=8M tmpfs "$T/noexec"
	cp -p "$T/img" "$T/noexec/img"
	run -0 restricted "$XIPTOOL" attach -n "n$SEG" "$T/noexec/img"
	[ "$(stat -c %a "$(seg_col "n$SEG" PATH)")" = 444 ]
	fails_with 126 "xiptool exec: @n$SEG: the kernel would not execute it (AT_EXECVE_CHECK under SECBIT_EXEC_RESTRICT_FILE): Permission denied" \
		restricted "$XIPTOOL" exec "@n$SEG" /bin/busybox echo ran
	xiptool attach -n "m$SEG" "$T/noexec/img"
	[ "$(stat -c %a "$(seg_col "m$SEG" PATH)")" = 555 ]
}
