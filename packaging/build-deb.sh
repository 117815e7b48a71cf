#!/bin/sh
# Build the xiptool .deb without touching the source tree.
#
#   packaging/build-deb.sh [-o OUTDIR] [-k] [SOURCE]
#
# SOURCE is a `make dist` tarball (xiptool-VERSION.tar.gz) or a source
# directory (default: the tree this script belongs to; in a git work tree
# the tracked and untracked-but-not-ignored files are taken, so build
# products never leak in).  SOURCE is copied into a scratch directory,
# packaging/debian is put in place there as debian/, and
# `dpkg-buildpackage -us -uc -b` builds it.  The .deb, .buildinfo and
# .changes files land in OUTDIR (default: the current directory); with
# lintian installed, the .deb is checked and any error or warning fails
# the build.
# -k keeps the scratch directory.
set -eu

usage() {
	echo "usage: $0 [-o OUTDIR] [-k] [SOURCE]" >&2
	exit 2
}

here=$(cd "$(dirname "$0")/.." && pwd)
outdir=$PWD
keep=no
while getopts o:kh opt; do
	case $opt in
	o) outdir=$OPTARG ;;
	k) keep=yes ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage
src=${1:-$here}

for c in dpkg-buildpackage dh fakeroot; do
	command -v "$c" >/dev/null 2>&1 || {
		echo "build-deb: $c not found: install debhelper, dpkg-dev and fakeroot" >&2
		exit 3
	}
done

mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/xiptool-deb.XXXXXX")
cleanup() {
	if [ "$keep" = yes ]; then
		echo "build-deb: kept $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tree=$work/xiptool
if [ -f "$src" ]; then
	mkdir "$tree"
	tar -xzf "$src" -C "$tree" --strip-components=1
elif [ "$(git -C "$src" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$src" && pwd -P)" ]; then
	mkdir "$tree"
	(cd "$src" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
		tar --null -T - -cf -) | tar -xf - -C "$tree"
elif [ -d "$src" ]; then
	mkdir "$tree"
	(cd "$src" && tar --exclude-vcs --exclude=./_build --exclude=./_san \
		--exclude=./build --exclude=./debian -cf - .) | tar -xf - -C "$tree"
else
	echo "build-deb: $src: no such file or directory" >&2
	exit 3
fi

[ -d "$tree/packaging/debian" ] || {
	echo "build-deb: $src: packaging/debian is missing" >&2
	exit 3
}
rm -rf "$tree/debian"
cp -a "$tree/packaging/debian" "$tree/debian"

cd "$tree"
nice -n 10 dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1 || {
	tail -40 "$work/build.log" >&2
	echo "build-deb: dpkg-buildpackage failed (log above)" >&2
	exit 3
}
cd "$work"
set -- *.deb
[ -f "$1" ] || { echo "build-deb: no .deb was built" >&2; exit 3; }
if command -v lintian >/dev/null 2>&1 && [ "${XIP_NO_LINTIAN:-}" != 1 ]; then
	lintian --fail-on error,warning --suppress-tags-from-file /dev/null *.changes \
		>"$work/lintian.log" 2>&1 || {
		cat "$work/lintian.log" >&2
		echo "build-deb: lintian reports errors or warnings" >&2
		exit 3
	}
	grep -v "running with root privileges" "$work/lintian.log" >&2 || true
fi
cp -- *.deb *.buildinfo *.changes "$outdir"/
for f in *.deb; do
	echo "$outdir/$f"
done
