#!/bin/sh
# musl-headers.sh CC DIR [CPPFLAGS...]: make DIR an include directory for
# compiling against musl that holds only the non-libc headers the front end
# needs (the libraries' and the kernel's), as links to where CC finds them.
# musl-gcc searches musl's headers and DIR, never glibc's.
set -e
cc=$1 dir=$2
shift 2
rm -rf "$dir"
mkdir -p "$dir"
# header path -> the top directory or file to link
for h in ext2fs/ext2fs.h et/com_err.h blkid/blkid.h popt.h zlib.h zconf.h \
	linux/types.h asm/types.h asm-generic/types.h; do
	f=$(echo "#include <$h>" | $cc "$@" -M -x c - 2>/dev/null |
		tr ' \\' '\n\n' | grep "/$h\$" | head -n 1)
	if [ -z "$f" ]; then
		echo "musl-headers: <$h>: not found by $cc" >&2
		exit 1
	fi
	top=${h%%/*}
	ln -s "${f%/$h}/$top" "$dir/$top"
done
