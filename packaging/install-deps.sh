#!/bin/sh
# Install every build and test dependency of xiptool on Debian 12.
# Idempotent: packages already installed are skipped.
set -eu

# Build
BUILD="build-essential autoconf automake libtool pkg-config
libext2fs-dev comerr-dev libpopt-dev libblkid-dev zlib1g-dev libsmartcols-dev
libarchive-dev
musl-tools libnbd-dev nbdkit-plugin-dev"
# Tests and peers the tests compare against
TEST="libcmocka-dev bats e2fsprogs busybox-static squashfs-tools dosfstools
util-linux mount xxd python3 groff-base man-db bash-completion zsh gzip
libnbd-bin nbdkit qemu-utils genext2fs clang libclang-rt-14-dev llvm time tar xz-utils
zstd attr erofs-utils
qemu-system-x86 linux-image-amd64 cpio kmod file"
# Packaging checks
PACKAGING="debhelper devscripts lintian rpm dpkg-dev fakeroot"

want=""
for p in $BUILD $TEST $PACKAGING; do
	if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed'; then
		want="$want $p"
	fi
done
if [ -z "$want" ]; then
	echo "install-deps: all dependencies are installed"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: need root to install:$want" >&2
	exit 1
fi
echo "install-deps: installing:$want"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $want
