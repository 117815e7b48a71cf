#!/bin/sh
# musl-headers.sh CC DIR [CPPFLAGS...]: make DIR an include directory for
# compiling the front end against musl.  musl-gcc searches musl's headers
# and DIR, never glibc's; the front end needs, besides the C library, the
# kernel's headers and <ext2fs/ext2_fs.h> (ext2's on-disk structures and
# constants: no library), linked here from where CC finds them.
set -e
cc=$1 dir=$2
shift 2
rm -rf "$dir"
mkdir -p "$dir"
# header path -> the top directory to link
for h in ext2fs/ext2_fs.h linux/types.h asm/types.h asm-generic/types.h; do
	f=$(echo "#include <$h>" | $cc "$@" -M -x c - 2>/dev/null |
		tr ' \\' '\n\n' | grep "/$h\$" | head -n 1)
	if [ -z "$f" ]; then
		echo "musl-headers: <$h>: not found by $cc" >&2
		exit 1
	fi
	top=${h%%/*}
	ln -s "${f%/$h}/$top" "$dir/$top"
done
