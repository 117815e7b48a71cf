# packaging: the Debian and RPM packages of xiptool.
#
#   make deb   the .deb (and -dbgsym) from the `make dist` tarball, built in
#              a scratch directory by packaging/build-deb.sh; lintian errors
#              and warnings fail it.  Output in DEB_OUTDIR (default: the build directory).
#   make rpm   binary RPMs from the same tarball with rpmbuild -tb, under
#              RPM_TOPDIR (default: rpmbuild/ in the build directory).
EXTRA_DIST += m4/.keep build-aux/.keep \
	packaging/build-deb.sh \
	packaging/debian/changelog packaging/debian/control \
	packaging/debian/copyright packaging/debian/rules \
	packaging/debian/source/format packaging/debian/xiptool.docs \
	packaging/debian/xiptool.lintian-overrides \
	packaging/rpm/xiptool.spec

DEB_OUTDIR = $(abs_top_builddir)
RPM_TOPDIR = $(abs_top_builddir)/rpmbuild
# rpmbuild on a system without an RPM database of the build dependencies
# (Debian) needs --nodeps; debuginfo extraction needs find-debuginfo.
RPMBUILD_FLAGS = --nodeps

.PHONY: deb rpm
deb: dist-gzip
	$(SHELL) $(top_srcdir)/packaging/build-deb.sh -o '$(DEB_OUTDIR)' \
		'$(abs_top_builddir)/$(distdir).tar.gz'

rpm: dist-gzip
	nice -n 10 rpmbuild -tb $(RPMBUILD_FLAGS) \
		--define '_topdir $(RPM_TOPDIR)' \
		'$(abs_top_builddir)/$(distdir).tar.gz'

clean-local: clean-packaging
.PHONY: clean-packaging
clean-packaging:
	rm -rf '$(RPM_TOPDIR)'

if ENABLE_TESTS
TESTS += tests/cli/completion.bats tests/cli/packaging.bats tests/cli/layout.bats
EXTRA_DIST += tests/cli/completion.bats tests/cli/packaging.bats \
	tests/cli/layout.bats tests/lib/testlint.py tests/lib/testlint-samples
endif
