#!/bin/sh
# Install every build and test dependency of xiptool on Debian 12.
# Idempotent: packages already installed are skipped.
#
#   install-deps.sh              the native build and its tests
#   install-deps.sh --arch arm64 also the cross build for aarch64 and its
#                                tests under qemu-user (make check-cross)
set -eu

arch=""
while [ $# -gt 0 ]; do
	case $1 in
	--arch) [ $# -ge 2 ] || { echo "install-deps: --arch needs a value" >&2; exit 2; }
		arch=$2; shift 2 ;;
	--arch=*) arch=${1#--arch=}; shift ;;
	-h|--help) sed -n '2,8s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "install-deps: unknown argument: $1" >&2; exit 2 ;;
	esac
done
case $arch in
""|arm64) ;;
*) echo "install-deps: unsupported --arch $arch (only arm64)" >&2; exit 2 ;;
esac

# Build
BUILD="build-essential autoconf automake libtool pkg-config
libext2fs-dev comerr-dev libpopt-dev libblkid-dev libmount-dev uuid-dev zlib1g-dev
libsmartcols-dev
libxxhash-dev
libarchive-dev libjson-c-dev libssl-dev libcurl4-openssl-dev
musl-tools libnbd-dev nbdkit-plugin-dev"
# Tests and peers the tests compare against
TEST="libcmocka-dev bats e2fsprogs busybox-static squashfs-tools dosfstools
util-linux mount xxd python3 groff-base man-db bash-completion zsh gzip
libnbd-bin nbdkit qemu-utils genext2fs clang libclang-rt-14-dev llvm time tar xz-utils
zstd attr erofs-utils umoci skopeo cryptsetup-bin openssl python3-cryptography
docker-registry apache2-utils curl
qemu-system-x86 linux-image-amd64 cpio kmod file strace"
# Packaging checks
PACKAGING="debhelper devscripts lintian rpm dpkg-dev fakeroot"
# The cross build for arm64: the toolchain, qemu-user, binfmt_misc
# registration, and the arm64 -dev packages (multiarch).  libext2fs-dev is
# not Multi-Arch: same on Debian 12 (it cannot sit beside the amd64 one):
# its arm64 libraries are unpacked into $CROSS_LOCAL instead, below.
CROSS=""
if [ "$arch" = arm64 ]; then
	CROSS="gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static
binfmt-support
libext2fs2:arm64 comerr-dev:arm64 libpopt-dev:arm64 libblkid-dev:arm64 libmount-dev:arm64
uuid-dev:arm64
zlib1g-dev:arm64 libsmartcols-dev:arm64 libarchive-dev:arm64
libjson-c-dev:arm64 libssl-dev:arm64 libcurl4-openssl-dev:arm64
libcmocka-dev:arm64 libc6:arm64"
fi
TRIPLET=aarch64-linux-gnu
CROSS_LOCAL=/usr/local/lib/$TRIPLET
PERSONALITY=/usr/share/pkgconfig/personality.d/$TRIPLET.personality

need_root()
{
	if [ "$(id -u)" -ne 0 ]; then
		echo "install-deps: need root to install: $1" >&2
		exit 1
	fi
}

want=""
for p in $BUILD $TEST $PACKAGING $CROSS; do
	if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed'; then
		want="$want $p"
	fi
done
export DEBIAN_FRONTEND=noninteractive
if [ -n "$arch" ] && ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
	need_root "the $arch architecture"
	echo "install-deps: adding the $arch architecture"
	dpkg --add-architecture "$arch"
	want="$want "
fi
if [ -n "$want" ] && [ -n "${want# }" ]; then
	need_root "$want"
	echo "install-deps: installing:$want"
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends $want
elif [ -z "$arch" ]; then
	echo "install-deps: all dependencies are installed"
	exit 0
fi
[ -z "$arch" ] && exit 0

# The triplet's pkg-config: pkgconf picks its search path from the name it
# is called by, through a personality (Debian 12 ships one for the native
# architecture only).
if [ ! -f "$PERSONALITY" ] || ! command -v $TRIPLET-pkg-config >/dev/null ||
   [ ! -f "$CROSS_LOCAL/libext2fs.a" ] || [ ! -x "$CROSS_LOCAL/busybox" ]; then
	need_root "the $TRIPLET pkg-config and libext2fs-dev:$arch"
fi
if [ ! -f "$PERSONALITY" ] || ! grep -q "^DefaultSearchPaths: $CROSS_LOCAL/pkgconfig:" "$PERSONALITY"; then
	mkdir -p "$(dirname "$PERSONALITY")"
	cat > "$PERSONALITY" <<_EOF
Triplet: $TRIPLET
DefaultSearchPaths: $CROSS_LOCAL/pkgconfig:/usr/lib/$TRIPLET/pkgconfig:/usr/share/pkgconfig
SystemIncludePaths: /usr/include/$TRIPLET:/usr/include
SystemLibraryPaths: /usr/lib/$TRIPLET:/lib/$TRIPLET
_EOF
fi
if ! command -v $TRIPLET-pkg-config >/dev/null; then
	ln -sf /usr/bin/pkgconf /usr/local/bin/$TRIPLET-pkg-config
fi

# libext2fs-dev:arm64 and busybox-static:arm64 (which would replace the
# amd64 packages), unpacked: the libraries and .pc files into $CROSS_LOCAL
# (the headers are the same as the amd64 ones), busybox as
# $CROSS_LOCAL/busybox for the exec tests.
if [ ! -f "$CROSS_LOCAL/libext2fs.a" ] || [ ! -x "$CROSS_LOCAL/busybox" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	# apt downloads as _apt where it can write
	chown _apt "$tmp" 2>/dev/null || true
	(cd "$tmp" && apt-get download -qq "libext2fs-dev:$arch" "busybox-static:$arch")
	dpkg-deb -x "$tmp"/libext2fs-dev_*_"$arch".deb "$tmp/e2fs"
	dpkg-deb -x "$tmp"/busybox-static_*_"$arch".deb "$tmp/bb"
	mkdir -p "$CROSS_LOCAL/pkgconfig"
	cp -a "$tmp/e2fs/usr/lib/$TRIPLET"/lib* "$CROSS_LOCAL/"
	for pc in "$tmp/e2fs/usr/lib/$TRIPLET/pkgconfig"/*.pc; do
		sed "s|^libdir=.*|libdir=$CROSS_LOCAL|" "$pc" > "$CROSS_LOCAL/pkgconfig/${pc##*/}"
	done
	install -m 0755 "$tmp/bb/bin/busybox" "$CROSS_LOCAL/busybox"
fi

# binfmt_misc runs arm64 programs directly (the CLI tests start xiptool,
# which starts xiptool-main); a container may have to mount it first.
if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
	mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null || true
fi
if [ -e /proc/sys/fs/binfmt_misc/register ] && [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
	update-binfmts --enable qemu-aarch64 2>/dev/null || true
fi
echo "install-deps: $arch cross build ready ($TRIPLET-pkg-config, qemu-aarch64-static)"
