#!/bin/sh
# exec.bats, and the loader's part of front.bats, with the front end linked
# against musl (tests/musl/xiptool, built when the installed front end is
# the glibc one, as with sanitizers): both C libraries' front ends are
# tested in every configuration where musl-gcc is installed.
set -e
XIPTOOL="$TOP_BUILDDIR/tests/musl/xiptool"
export XIPTOOL
# a build whose installed front end is the musl one has no second one
if [ ! -x "$XIPTOOL" ]; then
	echo "1..0 # SKIP no $XIPTOOL: the front end is the musl one"
	exit 0
fi
exec bats --tap -f '^exec|^nothing of the loader' \
	"$TOP_SRCDIR/tests/cli/exec.bats" "$TOP_SRCDIR/tests/cli/front.bats"
