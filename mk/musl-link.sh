#!/bin/sh
# musl-link CC MUSL_LIBDIR [LINKER ARGS...]: link a static PIE against musl
# and nothing else.  Debian's musl-gcc wrapper cannot (its specs always ask
# for the dynamic loader), so CC links with musl's start files and libc.a
# and CC's own libgcc and crtbeginS/crtendS around the arguments, in the
# order ld needs; -nostdlib keeps every glibc object out.
set -e
cc=$1 libdir=$2
shift 2
for f in rcrt1.o crti.o crtn.o libc.a; do
	if [ ! -f "$libdir/$f" ]; then
		echo "musl-link: $libdir/$f: not found (is musl-dev installed?)" >&2
		exit 1
	fi
done
exec $cc -static-pie -nostdlib "$libdir/rcrt1.o" "$libdir/crti.o" \
	"$($cc -print-file-name=crtbeginS.o)" "$@" "$libdir/libc.a" \
	"$($cc -print-libgcc-file-name)" "$($cc -print-file-name=crtendS.o)" \
	"$libdir/crtn.o"
