#!/bin/sh
# The main job, end to end, on a small sample tree.
set -eu
XIPTOOL=${1:-./xiptool}
PATH=/usr/sbin:/sbin:$PATH
work=$(mktemp -d "${TMPDIR:-/tmp}/xipdemo.XXXXXX")
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/tree/bin" "$work/tree/etc"
echo "hello from an execute-in-place image" > "$work/tree/etc/motd"
if [ -x /bin/busybox ]; then
	cp /bin/busybox "$work/tree/bin/busybox"
fi

echo "== mke2fs -t ext2 -b 4096 -d tree demo.img"
mke2fs -q -F -t ext2 -b 4096 -L demo -d "$work/tree" "$work/demo.img" 16M
echo "== xiptool info demo.img"
"$XIPTOOL" info "$work/demo.img"
