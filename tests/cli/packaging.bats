#!/usr/bin/env bats
# The release path: `make dist` tarball -> .deb (dpkg-buildpackage, lintian)
# and -> .rpm (rpmbuild -tb), then what a user gets when installing them:
# the program runs, man finds and formats its pages, completions and docs
# sit where Debian's bash, zsh and man look for them.  The package builds
# run once per file, on a copy of the source tree, never in it.

load ../lib/common

# Copy the source tree (tracked and untracked-but-not-ignored files when it
# is the top of a git work tree; otherwise everything but build directories)
# to $2.
copy_tree() {
	local src=$1 dst=$2
	mkdir -p "$dst"
	if [ "$(git -C "$src" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$src" && pwd -P)" ]; then
		(cd "$src" && git ls-files -z --cached --others --exclude-standard |
			xargs -0 sh -c 'for f; do if [ -e "$f" ]; then printf "%s\0" "$f"; fi; done' sh |
			tar --null -T - -cf -) | tar -xf - -C "$dst"
	else
		(cd "$src" && tar --exclude-vcs --exclude=./_build --exclude=./_san \
			--exclude=./build -cf - .) | tar -xf - -C "$dst"
	fi
}

version() {
	sed -n 's/^AC_INIT(\[xiptool\], \[\([^]]*\)\].*/\1/p' "$TOP_SRCDIR/configure.ac"
}

setup_file() {
	D=$BATS_FILE_TMPDIR
	export D
	ls -a "$TOP_SRCDIR" >"$D/top-before"
	copy_tree "$TOP_SRCDIR" "$D/src"
	# configured as for a release: with the tests (their files are
	# distributed only when they are enabled)
	(cd "$D/src" && autoreconf -fi && ./configure --disable-fuzz &&
		nice -n 10 make dist-gzip) >"$D/dist.log" 2>&1 &&
		mv "$D/src/xiptool-$(version).tar.gz" "$D/" || true

	# the two packages from the tarball side by side (one core each)
	if command -v dpkg-buildpackage >/dev/null && [ -f "$D/xiptool-$(version).tar.gz" ]; then
		{ sh "$TOP_SRCDIR/packaging/build-deb.sh" -o "$D/deb" \
			"$D/xiptool-$(version).tar.gz" >"$D/deb.log" 2>&1 &&
			dpkg -x "$D/deb/xiptool_$(version)_"*.deb "$D/root" || true; } &
	fi
	if command -v rpmbuild >/dev/null && [ -f "$D/xiptool-$(version).tar.gz" ]; then
		{ nice -n 10 rpmbuild -tb --nodeps --define "_topdir $D/rpm" \
			"$D/xiptool-$(version).tar.gz" >"$D/rpm.log" 2>&1 || true; } &
	fi
	wait
	ls -a "$TOP_SRCDIR" >"$D/top-after"
}

require_dist() {
	[ -f "$D/xiptool-$(version).tar.gz" ] ||
		{ tail -30 "$D/dist.log"; echo "make dist failed"; false; }
}

require_deb() {
	require_cmd dpkg-buildpackage dpkg-deb
	require_dist
	[ -d "$D/root/usr" ] ||
		{ tail -40 "$D/deb.log"; echo "the .deb was not built"; false; }
	root=$D/root
}

@test "the dist tarball carries the Debian and RPM packaging" {
	require_dist
	run tar -tzf "$D/xiptool-$(version).tar.gz"
	[ "$status" -eq 0 ]
	for f in debian/control debian/rules debian/changelog debian/copyright \
		debian/source/format rpm/xiptool.spec build-deb.sh; do
		grep -qx "xiptool-$(version)/packaging/$f" <<<"$output" ||
			{ echo "tarball lacks packaging/$f"; false; }
	done
}

@test "the dist tarball holds every file of the source tree" {
	require_dist
	[ "$(git -C "$TOP_SRCDIR" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$TOP_SRCDIR" && pwd -P)" ] ||
		skip "not a git work tree: no list of source files to compare with"
	run comm -23 <(git -C "$TOP_SRCDIR" ls-files | grep -vx '.gitignore' | LC_ALL=C sort) \
		<(tar -tzf "$D/xiptool-$(version).tar.gz" | sed 's|^[^/]*/||' | LC_ALL=C sort)
	[ "$status" -eq 0 ]
	[ -z "$output" ] || { echo "not in EXTRA_DIST (or another dist variable):"; echo "$output"; false; }
}

@test "the package versions agree with configure.ac" {
	local v
	v=$(version)
	[ -n "$v" ]
	if command -v dpkg-parsechangelog >/dev/null; then
		run dpkg-parsechangelog -l "$TOP_SRCDIR/packaging/debian/changelog" -S Version
		[ "$output" = "$v" ] || { echo "debian/changelog: $output, configure.ac: $v"; false; }
	fi
	run sed -n 's/^Version:[[:space:]]*//p' "$TOP_SRCDIR/packaging/rpm/xiptool.spec"
	[ "$output" = "$v" ] || { echo "xiptool.spec: $output, configure.ac: $v"; false; }
	run "$XIPTOOL" --version
	[ "$output" = "xiptool $v" ]
}

@test "the .deb builds from the tarball, lintian-clean, without touching the tree" {
	require_deb
	# build-deb.sh runs lintian --fail-on error,warning; make sure it did
	# run, and that nothing is left but the overrides' own notes
	if command -v lintian >/dev/null; then
		run lintian --fail-on error,warning "$D/deb/"xiptool_*.changes
		[ "$status" -eq 0 ] || { echo "$output"; false; }
		if grep -q '^[EW]: ' <<<"$output"; then echo "$output"; false; fi
	fi
	# the libraries loaded at first use (dlopen: no shlibs entry)
	run dpkg-deb -f "$D/deb/xiptool_$(version)_"*.deb Depends Recommends
	[ "$status" -eq 0 ]
	echo "$output"
	grep -q '^Depends: .*libarchive13' <<<"$output"
	grep -q '^Depends: .*libjson-c5' <<<"$output"
	grep -q '^Depends: .*libssl3' <<<"$output"
	grep -q '^Depends: .*libcurl4' <<<"$output"
	grep -q '^Depends: .*libmount1' <<<"$output"
	grep -q '^Recommends: .*libnbd0' <<<"$output"
	run dpkg-deb -f "$D/deb/xiptool_$(version)_"*.deb Package Version Depends
	[ "$status" -eq 0 ]
	grep -qx 'Package: xiptool' <<<"$output"
	grep -qx "Version: $(version)" <<<"$output"
	# shlibs found the libraries xiptool links with
	grep -q 'libext2fs2' <<<"$output"
	grep -q 'libsmartcols1' <<<"$output"
	grep -q 'libuuid1' <<<"$output"
	# the static front end names what it was built from: its C library
	run dpkg-deb -f "$D/deb/xiptool_$(version)_"*.deb Built-Using
	# its C library: musl when musl-gcc was there to build it, else glibc
	if command -v musl-gcc >/dev/null; then
		[[ "$output" == *"musl (= "* && "$output" != *"glibc"* ]]
	else
		[[ "$output" == *"glibc (= "* ]]
	fi
	# and nothing else: the front end links no other library
	[[ "$output" != *"e2fsprogs"* && "$output" != *"util-linux"* ]]
	[[ "$output" != *"popt"* && "$output" != *"zlib"* ]]
	# nothing of the package build lands in the source tree
	[ ! -e "$TOP_SRCDIR/debian" ]
	diff <(grep -E '^(debian|rpmbuild|.*\.(deb|changes|buildinfo|dsc))$' "$D/top-before") \
		<(grep -E '^(debian|rpmbuild|.*\.(deb|changes|buildinfo|dsc))$' "$D/top-after")
}

@test "the installed xiptool runs and reports its version" {
	require_deb
	[ -x "$root/usr/bin/xiptool" ]
	[ -x "$root/usr/libexec/xiptool/xiptool-main" ]
	run "$root/usr/bin/xiptool" --version
	[ "$status" -eq 0 ]
	[ "$output" = "xiptool $(version)" ]
	run "$root/usr/bin/xiptool" --help
	[ "$status" -eq 0 ]
	grep -q '^Commands:' <<<"$output"
}

@test "every command's man page is installed and man formats it cleanly" {
	require_deb
	require_cmd man
	local c m pages
	pages="xiptool $("$XIPTOOL" --help | sed -n '/^Commands:/,/^$/p' |
		awk 'NF && !/Commands:/ && $1 != "help" { print "xiptool-" $1 }')"
	for c in $pages; do
		m=$root/usr/share/man/man1/$c.1.gz
		[ -f "$m" ] || { echo "$c.1.gz is not installed"; false; }
		run env MANWIDTH=80 man --warnings -l "$m"
		[ "$status" -eq 0 ] || { echo "man -l $m: $output"; false; }
		grep -q "^NAME" <<<"$output"
		grep -qE "^ *${c} +- " <<<"$output" || { echo "$m: NAME is not $c"; false; }
		out=$(MANWIDTH=80 man --warnings -l "$m" 2>&1 >/dev/null)
		[ -z "$out" ] || { echo "$m: $out"; false; }
		# man finds it by name under the package's man directory
		run man -M "$root/usr/share/man" -w "$c"
		[ "$output" = "$m" ] || { echo "man -w $c: $output"; false; }
	done
}

@test "completions are installed where bash-completion and zsh look" {
	require_deb
	local bdir=/usr/share/bash-completion/completions
	if command -v pkg-config >/dev/null && pkg-config --exists bash-completion; then
		bdir=$(pkg-config --variable=completionsdir bash-completion)
	fi
	[ -f "$root$bdir/xiptool" ]
	cmp "$root$bdir/xiptool" "$TOP_SRCDIR/completions/xiptool"
	if [ -f /usr/share/bash-completion/bash_completion ]; then
		run bash -c "source /usr/share/bash-completion/bash_completion
			source '$root$bdir/xiptool'
			complete -p xiptool"
		[ "$status" -eq 0 ]
		grep -q -- '-F _xiptool' <<<"$output"
	fi
	[ -f "$root/usr/share/zsh/vendor-completions/_xiptool" ]
	head -1 "$root/usr/share/zsh/vendor-completions/_xiptool" | grepq -x '#compdef xiptool'
	if command -v zsh >/dev/null; then
		# Debian's zsh searches vendor-completions by default
		zsh -c 'print -l $fpath' | grepq -x /usr/share/zsh/vendor-completions
		zsh -n "$root/usr/share/zsh/vendor-completions/_xiptool"
	fi
}

@test "README, copyright and changelog are installed under /usr/share/doc" {
	require_deb
	local doc=$root/usr/share/doc/xiptool
	if [ -f "$doc/README.md.gz" ]; then
		zcat "$doc/README.md.gz" | cmp - "$TOP_SRCDIR/README.md"
	else
		cmp "$doc/README.md" "$TOP_SRCDIR/README.md"
	fi
	grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' "$doc/copyright"
	grep -q '/usr/share/common-licenses/GPL-2' "$doc/copyright"
	grep -q 'GNU General Public License' "$TOP_SRCDIR/LICENSE"
	[ -f "$doc/changelog.gz" ]
	# nothing outside /usr
	run sh -c "cd '$root' && ls"
	[ "$output" = usr ]
}

@test "rpmbuild builds binary RPMs from the dist tarball" {
	if ! command -v rpmbuild >/dev/null; then
		require_cmd rpmspec
		rpmspec -P "$TOP_SRCDIR/packaging/rpm/xiptool.spec" >/dev/null
		skip "rpmbuild is not installed (the spec parses)"
	fi
	require_dist
	local rpm
	rpm=$(ls "$D/rpm/RPMS/"*/xiptool-"$(version)"-*.rpm 2>/dev/null | head -1)
	[ -n "$rpm" ] || { tail -40 "$D/rpm.log"; echo "no rpm was built"; false; }
	run rpm -qlp "$rpm"
	[ "$status" -eq 0 ]
	for f in /usr/bin/xiptool /usr/libexec/xiptool/xiptool-main \
		/usr/share/bash-completion/completions/xiptool \
		/usr/share/zsh/site-functions/_xiptool; do
		grep -qx "$f" <<<"$output" || { echo "rpm lacks $f"; false; }
	done
	grep -q '^/usr/share/man/man1/xiptool\.1' <<<"$output"
	grep -q '^/usr/share/licenses/xiptool[^/]*/LICENSE$' <<<"$output"
	grep -q '^/usr/share/doc/xiptool[^/]*/README.md$' <<<"$output"
	if command -v rpm2cpio >/dev/null && command -v cpio >/dev/null; then
		mkdir "$T/rroot"
		(cd "$T/rroot" && rpm2cpio "$rpm" | cpio -idm --quiet)
		run "$T/rroot/usr/bin/xiptool" --version
		[ "$output" = "xiptool $(version)" ]
	fi
}

@test "no test hook in what is installed: make install has no XIPTOOL_TEST_, the test build has them" {
	require_cmd strings
	local f n=0 inst=$T/inst
	# the test build does carry them: the check below can see them
	strings -a "$TOP_BUILDDIR/tests/hooks/xiptool-main" | grepq XIPTOOL_TEST_CRASH_AFTER
	strings -a "$TOP_BUILDDIR/tests/hooks/xiptool-main" | grepq XIPTOOL_TEST_MKFS_AFTER_SCAN
	strings -a "$TOP_BUILDDIR/tests/hooks/xiptool-main" | grepq XIPTOOL_TEST_ATTACH_BEFORE_CLAIM
	strings -a "$TOP_BUILDDIR/tests/hooks/xiptool-main" | grepq XIPTOOL_TEST_ATTACH_PAUSE
	strings -a "$TOP_BUILDDIR/tests/hooks/xiptool-main" | grepq XIPTOOL_TEST_VERIFY_PAUSE
	strings -a "$TOP_BUILDDIR/tests/hooks/xiptool-main" | grepq XIPTOOL_TEST_ATTACH_AFTER_SEAL
	make -s -C "$TOP_BUILDDIR" install DESTDIR="$inst" >"$T/install.log" 2>&1 ||
		{ cat "$T/install.log"; false; }
	for f in $(find "$inst" -type f -perm -u+x \( -name xiptool \
		-o -name xiptool-main -o -name 'nbdkit-xiptool-plugin.so' \) | sort); do
		echo "$f"
		n=$((n + 1))
		run grep -c XIPTOOL_TEST_ <(strings -a "$f")
		[ "$output" = 0 ] || { strings -a "$f" | grep XIPTOOL_TEST_; false; }
	done
	# the front end, the main program, and the plugin where it is built
	if [ -f "$TOP_BUILDDIR/nbdkit-xiptool-plugin.so" ]; then
		[ "$n" -eq 3 ]
	else
		[ "$n" -eq 2 ]
	fi
	# and in the .deb, built from the dist tarball
	if [ -d "${D:-}/root/usr" ]; then
		for f in "$D/root/usr/bin/xiptool" "$D/root/usr/libexec/xiptool/xiptool-main"; do
			run grep -c XIPTOOL_TEST_ <(strings -a "$f")
			[ "$output" = 0 ]
		done
	fi
}
