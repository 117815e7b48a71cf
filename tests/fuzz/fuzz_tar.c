// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target "tar": the members of a tar archive onto the in-memory
 * tree of mkfs, as `mkfs --tar` reads them (xip_btree_scan_tar(): names,
 * types, owners, times, hard links, extended attributes, sparse data) and
 * as `mkfs --oci` reads its layers (xip_btree_tar_layer(): the same input
 * as layer 1, then again as layer 2, whose whiteouts remove what layer 1
 * gave), each tree then numbered and counted (xip_btree_finish()).
 *
 * Nothing touches the disk: the archive is read from a memfd (the plain
 * archive, through its /proc/self/fd name) or from memory (the layers),
 * and the spool of the members' data is a memfd, emptied after each
 * input.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "fuzz_build.h"
#include "util/xip_lazy.h"

#include <archive.h>

struct memsrc {
	const uint8_t *data;
	size_t size;
	bool done;
};

static la_ssize_t mem_read(struct archive *a, void *arg, const void **buf)
{
	struct memsrc *m = arg;

	(void)a;
	if (m->done)
		return 0;
	m->done = true;
	*buf = m->data;
	return (la_ssize_t)m->size;
}

/* The input in a memfd of the process (one write, no new file). */
static int memfd_of(const uint8_t *data, size_t size)
{
	static int fd = -1;

	if (fd < 0)
		fd = memfd_create("fuzz.tar", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) < 0 ||
	    xip_pwrite_all(fd, data, size, 0))
		return -1;
	return fd;
}

/* `mkfs --tar FILE` up to the tree (4 KiB blocks). */
static void fuzz_plain(const uint8_t *data, size_t size)
{
	struct xip_build_opts o = { 0 };
	struct btree t;
	char name[64];
	int fd = memfd_of(data, size);

	if (fd < 0)
		return;
	snprintf(name, sizeof(name), "/proc/self/fd/%d", fd);
	o.tar = name;
	if (!fuzz_tree_init(&t, 4096)) {
		if (!xip_btree_scan_tar(&t, &o))
			xip_btree_finish(&t, &o);
	}
	fuzz_tree_free(&t);
}

/* One layer read from memory as one_layer() (buildoci.c) reads a blob. */
static int fuzz_layer(struct btree *t, const struct xip_build_opts *o,
		      const uint8_t *data, size_t size, uint32_t layer)
{
	struct memsrc m = { data, size, false };
	struct archive *a = archive_read_new();
	bool unterminated;
	int ret;

	if (!a)
		return -ENOMEM;
	archive_read_support_filter_gzip(a);
	archive_read_support_format_raw(a);
	if (archive_read_open(a, &m, NULL, mem_read, NULL) != ARCHIVE_OK)
		ret = -EINVAL;
	else
		ret = xip_btree_tar_layer(t, o, a, "fuzz layer", layer,
					  &unterminated);
	archive_read_free(a);
	return ret;
}

/* `mkfs --oci` of two layers, both the input (1 KiB blocks). */
static void fuzz_layers(const uint8_t *data, size_t size)
{
	struct xip_build_opts o = { 0 };
	struct btree t;
	int ret;

	ret = fuzz_tree_init(&t, 1024);
	if (!ret)
		ret = xip_btree_oci_begin(&t, &o, "fuzz");
	if (!ret)
		ret = fuzz_layer(&t, &o, data, size, 1);
	if (!ret)
		ret = fuzz_layer(&t, &o, data, size, 2);
	if (!ret)
		ret = xip_btree_make_lpf(&t, &o);
	if (!ret)
		xip_btree_finish(&t, &o);
	fuzz_tree_free(&t);
}

FUZZ_TARGET(tar)
{
	fuzz_plain(data, size);
	fuzz_layers(data, size);
	xip_error_clear();
	return 0;
}
