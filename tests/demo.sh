#!/bin/sh
# The main job, end to end: mkfs of the bundled sample tree (with
# busybox-static when installed), verify, align-check, attach, read and
# exec straight from the segment, detach.
set -eu
XIPTOOL=${1:-./xiptool}
SRCDIR=${2:-$(dirname "$0")/..}
PATH=/usr/sbin:/sbin:$PATH
work=$(mktemp -d "${TMPDIR:-/tmp}/xipdemo.XXXXXX")
# a private registry, so the demo never touches segments of the system
XIPTOOL_RUNDIR=$work/run
export XIPTOOL_RUNDIR
seg=demo-$$
cleanup() {
	"$XIPTOOL" detach --force "$seg" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

run() {
	echo "\$ xiptool $*"
	"$XIPTOOL" "$@"
}

cp -R "$SRCDIR/sample" "$work/tree"
chmod -R u+w "$work/tree"
mkdir -p "$work/tree/bin"
if [ -x /bin/busybox ]; then
	cp /bin/busybox "$work/tree/bin/busybox"
	for a in sh echo ls cat uname; do
		ln -s busybox "$work/tree/bin/$a"
	done
fi

echo "== build an XIP image from the sample tree"
run mkfs -q -L demo -d "$work/tree" "$work/demo.img"
run info "$work/demo.img"
echo
echo "== prove it sound and XIP-capable"
run verify --against "$work/tree" "$work/demo.img"
if [ -x "$work/tree/bin/busybox" ]; then
	run align-check "$work/demo.img"
fi
echo
echo "== attach it as a shared read-only memory segment"
echo "\$ xiptool attach -n $seg demo.img"
"$XIPTOOL" attach -n "$seg" "$work/demo.img"
run list
run read "@$seg" /etc/motd
if [ -x "$work/tree/bin/busybox" ]; then
	echo
	echo "== run a program mapped straight from the segment"
	run exec "@$seg" /bin/busybox echo "busybox, executed in place"
	run exec --argv0 uname "@$seg" /bin/busybox -s -m
fi
echo
echo "== detach"
run detach "$seg"
echo "demo: done"
