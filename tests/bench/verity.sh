#!/usr/bin/env bash
# Verified attach: xiptool attach --root-hash of a 512 MiB verified image
# (every data and hash block checked, then the segment sealed) against
# `veritysetup verify` of the same file (the peer that checks the same
# tree in user space, target <= 1.1); against a plain attach (the cost of
# verifying, reported); and from nbd:// (nbdkit's file plugin) against a
# plain attach from the same server (reported).  Each attach is followed
# by its detach.  And attach --trust of the same image signed (the
# signature after the tree checked against a trust store, then the same
# check against the signed root hash) against attach --root-hash of it:
# the signature is one check, not a second pass (target <= 1.02).
# BENCH_VERITY_MB sets the image size (default 512).
set -euo pipefail
. "$(dirname "$0")/common.bash"
bench_segments
mb=${BENCH_VERITY_MB:-512}
name=vbench$$

command -v veritysetup >/dev/null || { echo "verity.sh: veritysetup is not installed (cryptsetup-bin)" >&2; exit 0; }
mkdir "$B/tree"
head -c $((mb * 15 / 16))M /dev/urandom > "$B/tree/random"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-days 2 -subj /CN=bench -keyout "$B/key.pem" -out "$B/cert.pem" 2>/dev/null
mkdir -m 755 "$B/trust"
install -m 644 "$B/cert.pem" "$B/trust/"
root=$(SOURCE_DATE_EPOCH=1 "$XIPTOOL" mkfs -q --verity --extra 4M -d "$B/tree" "$B/img" |
	sed -n 's/^root hash: //p')
cp "$B/img" "$B/signed"
"$XIPTOOL" sign --private-key "$B/key.pem" --certificate "$B/cert.pem" "$B/signed" >/dev/null
rm -rf "$B/tree"
fsb=$(( $(dumpe2fs -h "$B/img" 2>/dev/null | sed -n 's/^Block count:[[:space:]]*//p') * 4096 ))

verified() {
	"$XIPTOOL" attach --root-hash "$root" -n "$name" "$@" >/dev/null &&
		"$XIPTOOL" detach "$name"
}
plain() {
	"$XIPTOOL" attach -n "$name" "$@" >/dev/null && "$XIPTOOL" detach "$name"
}
peer() {
	veritysetup verify "$B/img" "$B/img" "$root" --hash-offset="$fsb"
}
v_file() { verified "$B/img"; }
p_file() { plain "$B/img"; }

read -r x p < <(bench_pair v_file peer)
bench_report "attach --root-hash+detach ${mb} MiB [s] vs veritysetup verify" \
	"$(bench_fmt "$x" 3)" "$(bench_fmt "$p" 3)" "<=1.1"
read -r x p < <(bench_pair v_file p_file)
bench_report "attach --root-hash+detach ${mb} MiB [s] vs plain attach+detach" \
	"$(bench_fmt "$x" 3)" "$(bench_fmt "$p" 3)" "<=3"

t_signed() {
	"$XIPTOOL" attach --trust "$B/trust" -n "$name" "$B/signed" >/dev/null &&
		"$XIPTOOL" detach "$name"
}
v_signed() { verified "$B/signed"; }
read -r x p < <(bench_pair t_signed v_signed)
bench_report "attach --trust+detach ${mb} MiB signed [s] vs attach --root-hash+detach" \
	"$(bench_fmt "$x" 3)" "$(bench_fmt "$p" 3)" "<=1.02"
rm -f "$B/signed"

if command -v nbdkit >/dev/null; then
	nbdkit -U "$B/nbd.sock" --pidfile "$B/nbd.pid" -r file "$B/img"
	for _ in $(seq 100); do [ -s "$B/nbd.pid" ] && break; sleep 0.05; done
	trap 'kill "$(cat "$B/nbd.pid")" 2>/dev/null; bench_cleanup' EXIT
	uri="nbd+unix:///?socket=$B/nbd.sock"
	v_nbd() { verified "$uri"; }
	p_nbd() { plain "$uri"; }
	read -r x p < <(bench_pair v_nbd p_nbd)
	bench_report "attach --root-hash+detach ${mb} MiB from nbd:// [s] vs plain attach from nbd://" \
		"$(bench_fmt "$x" 3)" "$(bench_fmt "$p" 3)" "<=3"
fi
