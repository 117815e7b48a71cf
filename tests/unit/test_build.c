/* Unit tests of lib/mkfs/build.c, buildtree.c, builddevtable.c and buildtar.c. */
#include <archive.h>
#include <archive_entry.h>
#include <sys/resource.h>
#include <sys/sysmacros.h>

#include "unit.h"
#include "segment/xip_kcopy.h"
#include "mkfs/mkfs_int.h"
#include "reader/reader_int.h"

static void test_idmap(void **state)
{
	struct xip_idmap m[2];

	assert_int_equal(xip_idmap_parse("1000:0", &m[0]), 0);
	assert_int_equal(m[0].from, 1000);
	assert_int_equal(m[0].to, 0);
	assert_int_equal(m[0].count, 1);
	assert_int_equal(xip_idmap_parse("100:5000:10", &m[1]), 0);
	assert_int_equal(m[1].count, 10);
	assert_int_equal(xip_idmap_apply(m, 2, 1000), 0);
	assert_int_equal(xip_idmap_apply(m, 2, 1001), 1001);
	assert_int_equal(xip_idmap_apply(m, 2, 100), 5000);
	assert_int_equal(xip_idmap_apply(m, 2, 109), 5009);
	assert_int_equal(xip_idmap_apply(m, 2, 110), 110);
	assert_int_equal(xip_idmap_apply(m, 2, 99), 99);
	assert_int_equal(xip_idmap_parse("1000", &m[0]), -EINVAL);
	assert_non_null(strstr(xip_errmsg(), "invalid id map '1000'"));
	assert_int_equal(xip_idmap_parse("1:2:0", &m[0]), -EINVAL);
	assert_int_equal(xip_idmap_parse("a:2", &m[0]), -EINVAL);
	assert_int_equal(xip_idmap_parse("1:2:3x", &m[0]), -EINVAL);
	assert_int_equal(xip_idmap_parse("4294967295:0:2", &m[0]), -ERANGE);
	assert_int_equal(xip_idmap_parse("4294967296:0", &m[0]), -EINVAL);
}

static void test_uuid(void **state)
{
	static const uint8_t want[16] = { 0x0b, 0x6e, 0x1a, 0x02, 0x5d, 0x87,
					  0x4c, 0x5e, 0xa6, 0xa3, 0x6e, 0xf8,
					  0xa5, 0x5e, 0x7a, 0x1d };
	uint8_t u[16];

	assert_int_equal(xip_uuid_parse("0b6e1a02-5d87-4c5e-a6a3-6ef8a55e7a1d",
					u), 0);
	assert_memory_equal(u, want, 16);
	assert_int_equal(xip_uuid_parse("0B6E1A02-5D87-4C5E-A6A3-6EF8A55E7A1D",
					u), 0);
	assert_memory_equal(u, want, 16);
	assert_int_equal(xip_uuid_parse("0b6e1a02-5d87-4c5e-a6a3-6ef8a55e7a1", u),
			 -EINVAL);
	assert_int_equal(xip_uuid_parse("0b6e1a02-5d87-4c5e-a6a3-6ef8a55e7a1dd",
					u), -EINVAL);
	assert_int_equal(xip_uuid_parse("0b6e1a0205d87-4c5e-a6a3-6ef8a55e7a1d",
					u), -EINVAL);
	assert_int_equal(xip_uuid_parse("0b6e1a02-5d87-4c5e-a6a3-6ef8a55e7a1g",
					u), -EINVAL);
}

static void test_encode_dev(void **state)
{
	uint32_t ib[2];

	/* the kernel's old_encode_dev and new_encode_dev */
	xip_build_encode_dev(makedev(1, 3), ib);
	assert_int_equal(ib[0], 0x0103);
	assert_int_equal(ib[1], 0);
	xip_build_encode_dev(makedev(255, 255), ib);
	assert_int_equal(ib[0], 0xffff);
	xip_build_encode_dev(makedev(259, 300), ib);
	assert_int_equal(ib[0], 0);
	assert_int_equal(ib[1], 0x2c | (259 << 8) | (0x100 << 12));
	xip_build_encode_dev(makedev(8, 256), ib);
	assert_int_equal(ib[0], 0);
	assert_int_equal(ib[1], (8 << 8) | (0x100 << 12));
	xip_build_encode_dev(makedev(4095, 0xfffff), ib);
	assert_int_equal(ib[1], 0xff | (4095u << 8) | (0xfff00u << 12));
}

/*
 * The oracle for the indirect-block count: libext2fs itself maps the same
 * blocks (ext2fs_bmap2 with BMAP_ALLOC) into a fresh inode of a real
 * mke2fs image, and i_blocks minus the data blocks is what it needed.
 */
static uint64_t libext2fs_ind_blocks(ext2_filsys fs,
				     const struct xip_lrange *r, size_t n)
{
	struct ext2_inode inode;
	uint64_t data = 0;
	ext2_ino_t ino;
	blk64_t pblk;

	assert_int_equal(ext2fs_new_inode(fs, EXT2_ROOT_INO, LINUX_S_IFREG,
					  NULL, &ino), 0);
	ext2fs_inode_alloc_stats2(fs, ino, +1, 0);
	memset(&inode, 0, sizeof(inode));
	inode.i_mode = LINUX_S_IFREG | 0644;
	inode.i_links_count = 1;
	assert_int_equal(ext2fs_write_new_inode(fs, ino, &inode), 0);
	for (size_t i = 0; i < n; i++) {
		for (uint64_t b = r[i].start; b < r[i].start + r[i].len; b++) {
			pblk = 0;
			assert_int_equal(ext2fs_bmap2(fs, ino, &inode, NULL,
						      BMAP_ALLOC, b, NULL,
						      &pblk), 0);
			data++;
		}
	}
	return ext2fs_get_stat_i_blocks(fs, &inode) /
	       (fs->blocksize / 512) - data;
}

static void test_ind_blocks(void **state)
{
	const char *p = unit_path("ind.img");
	const struct xip_lrange sets[][3] = {
		{ { 0, 12 } },
		{ { 0, 13 } },
		{ { 0, 12 + 256 } },
		{ { 0, 12 + 257 } },
		{ { 12 + 256 + 256 * 3, 1 } },
		{ { 0, 1 }, { 12 + 256 + 1000, 600 }, { 20000, 3 } },
		{ { 5, 2 }, { 100, 1 }, { 200, 1 } },
		{ { 12 + 256 + 65536 - 1, 2 } },
		{ { 12 + 256 + 65536 + 5, 1 }, { 12 + 256 + 65536 * 2, 1 } },
	};
	const size_t nsets[] = { 1, 1, 1, 1, 1, 3, 3, 1, 2 };
	ext2_filsys fs;

	/* 1 KiB blocks: 256 pointers per block, triple indirect reachable */
	unit_mke2fs(p, "64M", 1024, "-N 64");
	assert_int_equal(ext2fs_open(p, EXT2_FLAG_RW | EXT2_FLAG_64BITS, 0, 0,
				     unix_io_manager, &fs), 0);
	assert_int_equal(ext2fs_read_bitmaps(fs), 0);
	for (size_t i = 0; i < sizeof(nsets) / sizeof(nsets[0]); i++)
		assert_int_equal(xip_build_ind_blocks(1024, sets[i], nsets[i]),
				 libext2fs_ind_blocks(fs, sets[i], nsets[i]));
	ext2fs_close_free(&fs);
	/* beyond triple indirect */
	{
		struct xip_lrange r = { 12 + 256 + 65536 + 16777216, 1 };

		assert_true(xip_build_ind_blocks(1024, &r, 1) == UINT64_MAX);
	}
	assert_int_equal(xip_build_ind_blocks(4096, NULL, 0), 0);
}

/* Blocks [0, end) added to the data ranges: one range, merged. */
static void test_ranges_dense(void **state)
{
	static const struct {
		struct xip_lrange in[3];
		size_t nin;
		uint64_t end;
		struct xip_lrange out[3];
		size_t nout;
	} cases[] = {
		/* headers, then the text after the linker's padding (a hole) */
		{ { { 0, 1 }, { 512, 100 } }, 2, 612, { { 0, 612 } }, 1 },
		/* a range reaching past @end is merged whole */
		{ { { 0, 1 }, { 512, 100 } }, 2, 520, { { 0, 612 } }, 1 },
		/* ranges after @end stay apart */
		{ { { 0, 1 }, { 512, 100 }, { 2000, 5 } }, 3, 612,
		  { { 0, 612 }, { 2000, 5 } }, 2 },
		/* a file whose first data lies past @end: a range in front */
		{ { { 700, 4 } }, 1, 600, { { 0, 600 }, { 700, 4 } }, 2 },
		/* a range that starts right at @end joins it */
		{ { { 0, 2 }, { 10, 3 } }, 2, 10, { { 0, 13 } }, 1 },
		/* no ELF file: nothing changes */
		{ { { 3, 1 }, { 9, 1 } }, 2, 0, { { 3, 1 }, { 9, 1 } }, 2 },
		/* an all-hole file */
		{ { { 0, 0 } }, 0, 4, { { 0, 4 } }, 1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = cases[i].nin, cap = n ? n : 0;
		struct xip_lrange *r = n ? malloc(n * sizeof(*r)) : NULL;

		if (n)
			memcpy(r, cases[i].in, n * sizeof(*r));
		assert_int_equal(xip_build_ranges_add(&r, &n, &cap, 0,
						      cases[i].end), 0);
		assert_int_equal(n, cases[i].nout);
		for (size_t j = 0; j < n; j++) {
			assert_int_equal(r[j].start, cases[i].out[j].start);
			assert_int_equal(r[j].len, cases[i].out[j].len);
		}
		free(r);
	}
}

/*
 * The linker's padding in front of each PT_LOAD becomes data; what a
 * header claims beyond it does not.
 */
static void test_elf_padding(void **state)
{
	const uint64_t M = 1 << 20, bs = 4096;
	static struct {
		struct xip_elf_load load[3];
		size_t nload;
		uint64_t size;
		struct xip_lrange in[2], out[2];
		size_t nin, nout;
	} cases[] = {
		/* text at 0x200000 after 2 MiB-aligned padding: filled */
		{ { { .offset = 0, .filesz = 0x1000, .align = 2 << 20 },
		    { .offset = 0x200000, .filesz = 0x3000, .align = 2 << 20 } },
		  2, 0x203000, { { 0, 1 }, { 0x200, 3 } }, { { 0, 0x203 } },
		  2, 1 },
		/* one PT_LOAD claiming 1 GiB of a sparse file: nothing filled */
		{ { { .offset = 0, .filesz = 1 << 30, .align = 0x1000 } },
		  1, 1 << 30, { { 0, 1 } }, { { 0, 1 } }, 1, 1 },
		/* a p_align of 1 GiB is no linker's padding */
		{ { { .offset = 0, .filesz = 0x1000, .align = 1 << 30 },
		    { .offset = (1 << 30) - 0x1000, .filesz = 0x1000,
		      .align = 1 << 30 } },
		  2, 1 << 30, { { 0, 1 }, { 0x3ffff, 1 } },
		  { { 0, 1 }, { 0x3ffff, 1 } }, 2, 2 },
		/* nor is a p_align of 4 MiB, whatever the gap */
		{ { { .offset = 0, .filesz = 0x1000, .align = 4 << 20 },
		    { .offset = 0x300000, .filesz = 0x1000, .align = 4 << 20 } },
		  2, 0x301000, { { 0, 1 }, { 0x300, 1 } },
		  { { 0, 1 }, { 0x300, 1 } }, 2, 2 },
		/* a gap as long as p_align is not padding either */
		{ { { .offset = 0, .filesz = 0x1000, .align = 0x10000 },
		    { .offset = 0x11000, .filesz = 0x1000, .align = 0x10000 } },
		  2, 0x12000, { { 0, 1 }, { 0x11, 1 } }, { { 0, 1 }, { 0x11, 1 } },
		  2, 2 },
		/* unsorted headers; a PT_LOAD without file bytes skipped */
		{ { { .offset = 0x10000, .filesz = 0x1000, .align = 0x10000 },
		    { .offset = 0x8000, .filesz = 0, .align = 0x10000 },
		    { .offset = 0, .filesz = 0x2000, .align = 0x10000 } },
		  3, 0x11000, { { 0, 2 }, { 0x10, 1 } }, { { 0, 0x11 } }, 2, 1 },
		/* a PT_LOAD past the end of the file fills no more than the file */
		{ { { .offset = 0, .filesz = 0x1000, .align = 0x10000 },
		    { .offset = 0x8000, .filesz = 0x1000, .align = 0x10000 } },
		  2, 0x3000, { { 0, 1 } }, { { 0, 3 } }, 1, 1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = cases[i].nin, cap = n;
		struct xip_lrange *r = malloc(n * sizeof(*r));

		assert_non_null(r);
		memcpy(r, cases[i].in, n * sizeof(*r));
		assert_int_equal(xip_build_elf_padding(cases[i].load,
						       cases[i].nload,
						       cases[i].size, bs, &r,
						       &n, &cap), 0);
		assert_int_equal(n, cases[i].nout);
		for (size_t j = 0; j < n; j++) {
			assert_int_equal(r[j].start, cases[i].out[j].start);
			assert_int_equal(r[j].len, cases[i].out[j].len);
		}
		free(r);
	}
	/* 16 PT_LOADs after 2 MiB of padding each: 8 MiB filled, no more */
	{
		struct xip_elf_load l[16];
		struct xip_lrange *r = NULL;
		size_t n = 0, cap = 0;
		uint64_t filled = 0;

		for (size_t i = 0; i < 16; i++) {
			l[i] = (struct xip_elf_load){ .offset = i * 2 * M,
						      .filesz = 0x1000,
						      .align = 2 * M };
			assert_int_equal(xip_build_ranges_add(&r, &n, &cap,
							      l[i].offset / bs,
							      1), 0);
		}
		assert_int_equal(xip_build_elf_padding(l, 16, 32 * M, bs, &r,
						       &n, &cap), 0);
		for (size_t j = 0; j < n; j++)
			filled += r[j].len;
		assert_true(filled * bs <= 16 * 0x1000 + 8 * M);
		assert_true(filled * bs >= 8 * M);
		free(r);
	}
}

static void test_dir_blocks(void **state)
{
	size_t lens[300];

	/* "." and ".." take 12 + 12 bytes; a 4-byte name takes 12 */
	for (size_t i = 0; i < 300; i++)
		lens[i] = 4;
	assert_int_equal(xip_build_dir_blocks(1024, lens, 0), 1);
	assert_int_equal(xip_build_dir_blocks(1024, lens, 83), 1);
	assert_int_equal(xip_build_dir_blocks(1024, lens, 84), 2);
	/* later blocks hold 1024 / 12 = 85 */
	assert_int_equal(xip_build_dir_blocks(1024, lens, 83 + 85), 2);
	assert_int_equal(xip_build_dir_blocks(1024, lens, 83 + 86), 3);
	/* 255-byte names take 264 bytes: three in the first 4 KiB block */
	for (size_t i = 0; i < 300; i++)
		lens[i] = 255;
	assert_int_equal(xip_build_dir_blocks(4096, lens, 15), 1);
	assert_int_equal(xip_build_dir_blocks(4096, lens, 16), 2);
}

static void test_devtable_parse(void **state)
{
	struct xip_devtable_entry e;

	assert_int_equal(xip_devtable_parse_line("", &e), 0);
	assert_int_equal(xip_devtable_parse_line("   # comment", &e), 0);
	assert_int_equal(xip_devtable_parse_line(
		"/dev/ttyS c 640 0 5 4 64 0 1 4", &e), 1);
	assert_string_equal(e.path, "/dev/ttyS");
	assert_int_equal(e.type, 'c');
	assert_int_equal(e.mode, 0640);
	assert_int_equal(e.gid, 5);
	assert_int_equal(e.major, 4);
	assert_int_equal(e.minor, 64);
	assert_int_equal(e.inc, 1);
	assert_int_equal(e.count, 4);
	assert_int_equal(xip_devtable_parse_line(
		"\t/dev  d  755 0 0 - - - - -  # trailing", &e), 1);
	assert_int_equal(e.type, 'd');
	assert_int_equal(e.mode, 0755);
	assert_int_equal(e.count, 0);
	assert_int_equal(xip_devtable_parse_line("/x c 600 0 0 1", &e),
			 -EINVAL);
	assert_non_null(strstr(xip_errmsg(), "expected 10 fields"));
	assert_int_equal(xip_devtable_parse_line("/x z 600 0 0 1 1 - - -", &e),
			 -EINVAL);
	assert_int_equal(xip_devtable_parse_line("/x c 800 0 0 1 1 - - -", &e),
			 -EINVAL);
	assert_non_null(strstr(xip_errmsg(), "invalid mode '800'"));
	assert_int_equal(xip_devtable_parse_line("/x c 600 a 0 1 1 - - -", &e),
			 -EINVAL);
	assert_int_equal(xip_devtable_parse_line("/x c 600 0 0 4096 1 - - -",
						 &e), -ERANGE);
	assert_int_equal(xip_devtable_parse_line(
		"/x c 600 0 0 1 1 - - - extra", &e), -EINVAL);
}

static void test_build_errors(void **state)
{
	struct xip_build_opts o = { 0 };
	const char *img = unit_path("err.img");

	o.source = unit_path("no-such-dir");
	assert_int_equal(xip_build(img, &o, NULL), -ENOENT);
	assert_non_null(strstr(xip_errmsg(), "no-such-dir: No such file"));
	assert_int_equal(access(img, F_OK), -1);
	o.source = NULL;
	o.align = 3 << 20;
	assert_int_equal(xip_build(img, &o, NULL), -EINVAL);
	o.align = 0;
	o.block_size = 3000;
	assert_int_equal(xip_build(img, &o, NULL), -EINVAL);
	o.block_size = 0;
	o.size = 4096;
	assert_int_equal(xip_build(img, &o, NULL), -ENOSPC);
	assert_non_null(strstr(xip_errmsg(), "image too small"));
	assert_int_equal(access(img, F_OK), -1);
}

static void test_build_empty(void **state)
{
	const char *img = unit_path("empty.img");
	struct xip_build_opts o = { 0 };
	struct xip_build_result res;
	struct xip_image *xi;
	ext2_ino_t ino;
	char cmd[600];

	o.label = "unit";
	o.have_timestamp = true;
	o.timestamp = 1234567890;
	assert_int_equal(xip_build(img, &o, &res), 0);
	assert_int_equal(res.block_size, xip_host_page_size());
	assert_int_equal(res.files, 0);
	snprintf(cmd, sizeof(cmd), "e2fsck -fn '%s' >/dev/null 2>&1", img);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(xip_image_open(img, 0, &xi), 0);
	assert_string_equal((char *)xi->fs->super->s_volume_name, "unit");
	assert_int_equal(xi->fs->super->s_mkfs_time, 1234567890);
	assert_int_equal(ext2fs_lookup(xi->fs, EXT2_ROOT_INO, "lost+found", 10,
				       NULL, &ino), 0);
	assert_int_equal(ino, 11);
	xip_image_close(xi);
	/* a second run refuses the non-empty file */
	assert_int_equal(xip_build(img, &o, NULL), -EEXIST);
	o.force = true;
	assert_int_equal(xip_build(img, &o, NULL), 0);
}

static void test_split_target(void **state)
{
	static const struct {
		const char *spec, *dir, *base;
	} ok[] = {
		{ "a/b/c.img", "a/b", "c.img" },
		{ "c.img", ".", "c.img" },
		{ "/c.img", "/", "c.img" },
		{ "./.c", ".", ".c" },
	};
	static const char *const bad[] = { "dir/", ".", "..", "a/..", "/", "" };
	char *dir, *base;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(xip_build_split_target(ok[i].spec, &dir,
							&base), 0);
		assert_string_equal(dir, ok[i].dir);
		assert_string_equal(base, ok[i].base);
		free(dir);
		free(base);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(xip_build_split_target(bad[i], &dir, &base),
				 -EISDIR);
		assert_null(dir);
		assert_null(base);
	}
}

static void test_temp_name(void **state)
{
	char a[256], b[256], longname[301], small[12];

	assert_int_equal(xip_build_temp_name("x.img", a, sizeof(a)), 0);
	assert_int_equal(xip_build_temp_name("x.img", b, sizeof(b)), 0);
	assert_int_equal(strlen(a), strlen(".x.img.") + 8);
	assert_memory_equal(a, ".x.img.", 7);
	for (size_t i = 7; i < strlen(a); i++)
		assert_non_null(strchr("abcdefghijklmnopqrstuvwxyz"
				       "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
				       a[i]));
	assert_string_not_equal(a, b);
	/* a long name is cut: the result stays a valid file name */
	memset(longname, 'n', 300);
	longname[300] = '\0';
	assert_int_equal(xip_build_temp_name(longname, a, sizeof(a)), 0);
	assert_int_equal(strlen(a), 1 + 200 + 1 + 8);
	assert_int_equal(xip_build_temp_name("x.img", small, sizeof(small)),
			 -ENAMETOOLONG);
}

/* Count the names in @dir (without . and ..). */
static int count_names(const char *dir)
{
	char cmd[600];
	FILE *f;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
	f = popen(cmd, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &n), 1);
	pclose(f);
	return n;
}

struct swap {
	const char *file;	/* replaced by a new file of the same size */
	const char *dir;	/* with a named temporary file in it */
	int names;		/* names in @dir seen from the hook */
	bool cleanup;		/* call the signal handler's cleanup */
};

static void swap_hook(void *arg)
{
	struct swap *s = arg;

	if (s->dir)
		s->names = count_names(s->dir);
	if (s->cleanup)
		xip_build_signal_cleanup();
	if (s->file) {
		assert_int_equal(unlink(s->file), 0);
		unit_fill_file(s->file, 5000, 'S');
	}
}

static void test_build_target(void **state)
{
	const char *src = unit_path("tsrc"), *out = unit_path("tout");
	char img[300], link[300], file[300], old[4096], now[4096];
	struct xip_build_opts o = { .source = src, .uuid_mode = XIP_UUID_CLEAR };
	struct swap sw = { 0 };
	int fd;

	assert_int_equal(mkdir(src, 0755), 0);
	assert_int_equal(mkdir(out, 0755), 0);
	snprintf(file, sizeof(file), "%s/f", src);
	unit_fill_file(file, 5000, 'a');
	snprintf(img, sizeof(img), "%s/img", out);
	snprintf(link, sizeof(link), "%s/link", out);
	/* a symlink as the target is refused; what it points to is untouched */
	assert_int_equal(symlink(img, link), 0);
	assert_int_equal(xip_build(link, &o, NULL), -ELOOP);
	assert_non_null(strstr(xip_errmsg(), "is a symbolic link"));
	assert_int_equal(access(img, F_OK), -1);
	assert_int_equal(unlink(link), 0);
	/* a good image, then a failed rebuild: the old one stays */
	assert_int_equal(xip_build(img, &o, NULL), 0);
	fd = open(img, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, old, sizeof(old), 1024), sizeof(old));
	close(fd);
	o.force = true;
	o.label = "new";
	sw.file = file;
	xip_build_test_hooks.after_scan = swap_hook;
	xip_build_test_hooks.after_scan_arg = &sw;
	assert_int_equal(xip_build(img, &o, NULL), -ESTALE);
	assert_non_null(strstr(xip_errmsg(), "/f: changed during the scan"));
	fd = open(img, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, now, sizeof(now), 1024), sizeof(now));
	close(fd);
	assert_memory_equal(old, now, sizeof(old));
	assert_int_equal(count_names(out), 1);
	/* a named temporary file, removed by the signal cleanup */
	sw.file = NULL;
	sw.dir = out;
	sw.cleanup = true;
	xip_build_test_hooks.named_temp = true;
	assert_int_equal(xip_build(img, &o, NULL), -ENOENT);
	assert_int_equal(sw.names, 2);
	assert_int_equal(count_names(out), 1);
	/* and without trouble, the new image replaces the old */
	sw.cleanup = false;
	assert_int_equal(xip_build(img, &o, NULL), 0);
	assert_int_equal(sw.names, 2);
	assert_int_equal(count_names(out), 1);
	fd = open(img, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, now, sizeof(now), 1024), sizeof(now));
	close(fd);
	assert_memory_not_equal(old, now, sizeof(old));
	memset(&xip_build_test_hooks, 0, sizeof(xip_build_test_hooks));
}

static void test_tar_name(void **state)
{
	static const char *const ok[][2] = {
		{ "a", "a" }, { "./a/b", "a/b" }, { "/abs/x", "abs/x" },
		{ "//a//b/", "a/b" }, { "./", "" }, { "/", "" }, { ".", "" },
		{ "a/./b/.", "a/b" }, { "...", "..." }, { "..a/b..", "..a/b.." },
	};
	static const char *const bad[] = { "..", "../x", "a/../b", "a/..",
					   "/..", "./../etc" };
	char *out;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(xip_build_tar_name(ok[i][0], &out), 0);
		assert_string_equal(out, ok[i][1]);
		free(out);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(xip_build_tar_name(bad[i], &out), -EPERM);
}

/* One member of a test archive: type 'f' file, 'd' dir, 'l' symlink,
 * 'h' hard link, 's' sparse file (data at 0 and at 3 blocks, size 5). */
struct tmember {
	const char *name;
	char type;
	const char *arg;
};

static void write_tar(const char *path, const struct tmember *m, size_t n)
{
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();

	assert_non_null(a);
	assert_int_equal(archive_write_set_format_pax(a), ARCHIVE_OK);
	assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		long bs = xip_host_page_size();

		archive_entry_clear(e);
		archive_entry_set_pathname(e, m[i].name);
		archive_entry_set_mtime(e, 1000000, 0);
		archive_entry_set_uid(e, 1234);
		archive_entry_set_gid(e, 99);
		switch (m[i].type) {
		case 'f':
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_perm(e, 0640);
			archive_entry_set_size(e, (la_int64_t)strlen(m[i].arg));
			break;
		case 's':
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_perm(e, 0644);
			archive_entry_set_size(e, 5 * bs);
			archive_entry_sparse_add_entry(e, 0, 10);
			archive_entry_sparse_add_entry(e, 3 * bs, 10);
			break;
		case 'd':
			archive_entry_set_filetype(e, AE_IFDIR);
			archive_entry_set_perm(e, 0711);
			break;
		case 'l':
			archive_entry_set_filetype(e, AE_IFLNK);
			archive_entry_set_perm(e, 0777);
			archive_entry_set_symlink(e, m[i].arg);
			break;
		case 'h':
			archive_entry_set_hardlink(e, m[i].arg);
			break;
		}
		assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
		if (m[i].type == 'f')
			assert_int_equal(archive_write_data(a, m[i].arg,
							    strlen(m[i].arg)),
					 (ssize_t)strlen(m[i].arg));
		if (m[i].type == 's') {
			/* the whole file: the writer leaves out the holes */
			char *all = calloc(5, (size_t)bs);

			assert_non_null(all);
			memcpy(all, "0123456789", 10);
			memcpy(all + 3 * bs, "0123456789", 10);
			assert_int_equal(archive_write_data(a, all, 5 * bs),
					 5 * bs);
			free(all);
		}
	}
	archive_entry_free(e);
	assert_int_equal(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
}

static ext2_ino_t look(struct xip_image *xi, const char *path)
{
	ext2_ino_t ino = 0;

	assert_int_equal(xip_lookup(xi, path, XIP_LOOKUP_NOFOLLOW, &ino), 0);
	return ino;
}

static void test_build_tar(void **state)
{
	static const struct tmember m[] = {
		{ "./", 'd', NULL },
		{ "/etc/passwd", 'f', "root\n" },	/* made relative */
		{ "deep/er/file", 'f', "x" },		/* parents made */
		{ "deep", 'd', NULL },			/* after its contents */
		{ "link", 'l', "/etc/passwd" },
		{ "hard", 'h', "/etc/passwd" },
		{ "dup", 'f', "first" },
		{ "dup", 'f', "second!" },		/* replaces it */
		{ "sparse", 's', NULL },
	};
	const char *tar = unit_path("t.tar"), *img = unit_path("tar.img");
	long bs = xip_host_page_size();
	struct xip_build_opts o = { .tar = tar };
	struct xip_build_result res;
	struct xip_image *xi;
	struct xip_stat st;
	char buf[16] = "";
	char cmd[600];

	write_tar(tar, m, sizeof(m) / sizeof(m[0]));
	if (xip_build(img, &o, &res))
		fail_msg("%s", xip_errmsg());
	/* passwd+hard, file, dup (the first one gone), sparse */
	assert_int_equal(res.files, 4);
	snprintf(cmd, sizeof(cmd), "e2fsck -fn '%s' >/dev/null 2>&1", img);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(xip_image_open(img, 0, &xi), 0);
	assert_int_equal(xip_stat_inode(xi, EXT2_ROOT_INO, &st), 0);
	assert_int_equal(st.mode, S_IFDIR | 0711);
	assert_int_equal(st.uid, 1234);
	assert_int_equal(look(xi, "/etc/passwd"), look(xi, "/hard"));
	assert_int_equal(xip_stat_inode(xi, look(xi, "/hard"), &st), 0);
	assert_int_equal(st.links, 2);
	assert_int_equal(st.mode, S_IFREG | 0640);
	assert_int_equal(st.gid, 99);
	assert_int_equal(st.mtime, 1000000);
	assert_int_equal(xip_stat_inode(xi, look(xi, "/deep"), &st), 0);
	assert_int_equal(st.mode, S_IFDIR | 0711);
	assert_int_equal(xip_stat_inode(xi, look(xi, "/etc"), &st), 0);
	assert_int_equal(st.mode, S_IFDIR | 0755);
	assert_int_equal(st.uid, 0);
	assert_int_equal(xip_file_read(xi, look(xi, "/dup"), 0, buf,
				       sizeof(buf)), 7);
	assert_string_equal(buf, "second!");
	assert_int_equal(xip_readlink(xi, look(xi, "/link"), buf, sizeof(buf)),
			 0);
	assert_string_equal(buf, "/etc/passwd");
	/* the sparse member: data in blocks 0 and 3 only */
	assert_int_equal(xip_stat_inode(xi, look(xi, "/sparse"), &st), 0);
	assert_int_equal(st.size, 5 * bs);
	assert_int_equal(st.data_blocks, 2);
	assert_int_equal(st.hole_blocks, 3);
	assert_int_equal(xip_file_read(xi, look(xi, "/sparse"), 3 * bs, buf,
				       10), 10);
	assert_memory_equal(buf, "0123456789", 10);
	xip_image_close(xi);
}

static void test_build_tar_refused(void **state)
{
	static const struct tmember up[] = { { "a/../../x", 'f', "x" } };
	static const struct tmember hl[] = { { "h", 'h', "nowhere" } };
	static const struct tmember dir[] = { { "d/f", 'f', "x" },
					      { "d", 'f', "y" } };
	const char *tar = unit_path("bad.tar"), *img = unit_path("bad.img");
	struct xip_build_opts o = { .tar = tar };

	write_tar(tar, up, 1);
	assert_int_equal(xip_build(img, &o, NULL), -EPERM);
	assert_non_null(strstr(xip_errmsg(), "a/../../x: a name with '..'"));
	assert_int_equal(access(img, F_OK), -1);
	write_tar(tar, hl, 1);
	assert_int_equal(xip_build(img, &o, NULL), -ENOENT);
	assert_non_null(strstr(xip_errmsg(), "h: hard link to 'nowhere'"));
	write_tar(tar, dir, 2);
	assert_int_equal(xip_build(img, &o, NULL), -EEXIST);
	/* not an archive at all */
	assert_int_equal(xip_build(img, &o, NULL) < 0, 1);
	o.tar = unit_path("t.tar");
	o.source = unit_tmpdir();
	assert_int_equal(xip_build(img, &o, NULL), -EINVAL);
	o.source = NULL;
	o.tar = "/etc/hostname";
	assert_int_equal(xip_build(img, &o, NULL), -EINVAL);
	assert_non_null(strstr(xip_errmsg(), "not a tar archive"));
	assert_int_equal(access(img, F_OK), -1);
}

/*
 * The names of a directory: a lookup among 131072 names compares about one
 * name, not a walk of them (an operation count, not a time): the hash
 * table is made at the first lookup, follows every entry added after it,
 * is dropped when xip_btree_finish sorts the entries, and answers for
 * names absent too.  A small directory is walked without a table.
 */
/* A new empty file @name in @dir. */
static int add_file(struct btree *t, struct bnode *dir, const char *name)
{
	struct bnode *n = xip_btree_node_new(t);

	if (!n)
		return -ENOMEM;
	n->mode = S_IFREG | 0644;
	return xip_btree_add_entry(dir, name, n);
}

static void test_btree_names(void **state)
{
	enum { N = 131072, MORE = 1000 };
	struct btree t = { .bs = 4096, .root_fd = -1, .spool_fd = -1 };
	struct xip_build_opts o = { 0 };
	struct bnode *dir, *small;
	uint64_t compared;
	size_t indexed;
	char name[32];

	dir = xip_btree_root_new(&t, "src");
	assert_non_null(dir);
	xip_btree_set_dir(&t, dir, &o, 0755);
	small = xip_btree_node_new(&t);
	assert_non_null(small);
	xip_btree_set_dir(&t, small, &o, 0755);
	assert_int_equal(xip_btree_add_entry(dir, "small", small), 0);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "f%07d", i);
		assert_int_equal(add_file(&t, dir, name), 0);
	}
	xip_btree_names_stats(dir, &indexed, &compared);
	assert_int_equal(indexed, 0);	/* made at the first lookup */
	assert_non_null(xip_btree_find_entry(dir, "f0000000"));
	xip_btree_names_stats(dir, &indexed, &compared);
	assert_int_equal(indexed, N + 1);
	assert_true(compared >= 1);
	assert_true(compared <= 4);
	for (int i = 0; i < N; i++) {
		struct bentry *e;

		snprintf(name, sizeof(name), "f%07d", i);
		e = xip_btree_find_entry(dir, name);
		assert_non_null(e);
		assert_string_equal(e->name, name);
		snprintf(name, sizeof(name), "g%07d", i);
		assert_null(xip_btree_find_entry(dir, name));
	}
	xip_btree_names_stats(dir, &indexed, &compared);
	assert_int_equal(indexed, N + 1);
	/* at least the N names found; a walk would compare ~N * N */
	assert_true(compared >= N + 1);
	assert_true(compared <= 4 * (uint64_t)N);
	for (int i = 0; i < MORE; i++) {
		snprintf(name, sizeof(name), "h%07d", i);
		assert_int_equal(add_file(&t, dir, name), 0);
	}
	xip_btree_names_stats(dir, &indexed, &compared);
	assert_int_equal(indexed, N + 1 + MORE);
	for (int i = 0; i < MORE; i++) {
		snprintf(name, sizeof(name), "h%07d", i);
		assert_non_null(xip_btree_find_entry(dir, name));
	}
	assert_non_null(xip_btree_find_entry(dir, "small"));
	/* a small directory: its names are walked */
	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		assert_int_equal(add_file(&t, small, name), 0);
	}
	assert_non_null(xip_btree_find_entry(small, "s7"));
	assert_null(xip_btree_find_entry(small, "s8"));
	xip_btree_names_stats(small, &indexed, &compared);
	assert_int_equal(indexed, 0);
	/* numbering sorts the entries: the table goes, lookups still work */
	assert_int_equal(xip_btree_finish(&t, &o), 0);
	xip_btree_names_stats(dir, &indexed, &compared);
	assert_int_equal(indexed, 0);
	assert_ptr_equal(xip_btree_find_entry(dir, "f0000000"), &dir->kids[0]);
	assert_string_equal(xip_btree_find_entry(dir, "h0000999")->name,
			    "h0000999");
	xip_btree_free(&t);
}

/*
 * Removing names (OCI whiteouts) keeps the hash table: it holds every
 * entry left after each removal, never one removed (a name added again
 * is one entry), and lookups between removals build no new table (its
 * comparison count goes on growing instead of starting again).
 */
static void test_btree_names_remove(void **state)
{
	enum { N = 4096 };
	struct btree t = { .bs = 4096, .root_fd = -1, .spool_fd = -1 };
	struct xip_build_opts o = { 0 };
	uint64_t compared, before;
	struct bnode *dir;
	struct bentry *e;
	size_t indexed;
	char name[32];

	dir = xip_btree_root_new(&t, "src");
	assert_non_null(dir);
	xip_btree_set_dir(&t, dir, &o, 0755);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "f%05d", i);
		assert_int_equal(add_file(&t, dir, name), 0);
	}
	assert_non_null(xip_btree_find_entry(dir, "f00000"));
	xip_btree_names_stats(dir, &indexed, &before);
	for (int i = 0; i < N; i += 2) {
		snprintf(name, sizeof(name), "f%05d", i);
		e = xip_btree_find_entry(dir, name);
		assert_non_null(e);
		xip_btree_remove_entry(dir, e);
		xip_btree_names_stats(dir, &indexed, &compared);
		assert_int_equal(indexed, dir->nkids);
		assert_true(compared > before);
		before = compared;
		assert_null(xip_btree_find_entry(dir, name));
	}
	assert_int_equal(dir->nkids, N / 2);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "f%05d", i);
		e = xip_btree_find_entry(dir, name);
		if (i % 2) {
			assert_non_null(e);
			assert_true(e >= dir->kids && e < dir->kids + dir->nkids);
			assert_string_equal(e->name, name);
		} else {
			assert_null(e);
		}
	}
	/* a name removed and added again is there once */
	assert_int_equal(add_file(&t, dir, "f00000"), 0);
	assert_string_equal(xip_btree_find_entry(dir, "f00000")->name,
			    "f00000");
	assert_int_equal(dir->nkids, N / 2 + 1);
	/* the first entry each time, the last one taking its place */
	while (dir->nkids) {
		snprintf(name, sizeof(name), "%s", dir->kids[0].name);
		xip_btree_remove_entry(dir, &dir->kids[0]);
		assert_null(xip_btree_find_entry(dir, name));
		if (dir->nkids)
			assert_ptr_equal(xip_btree_find_entry(dir,
							      dir->kids[0].name),
					 &dir->kids[0]);
		xip_btree_names_stats(dir, &indexed, &compared);
		assert_int_equal(indexed, dir->nkids);
	}
	xip_btree_names_stats(dir, &indexed, &compared);
	assert_int_equal(indexed, 0);
	assert_int_equal(xip_btree_finish(&t, &o), 0);
	xip_btree_free(&t);
}

/*
 * Names added and removed at random (a fixed sequence) among 600: every
 * lookup agrees with a plain record of which are there, through the
 * table's growth and the runs its removals close.
 */
static void test_btree_names_churn(void **state)
{
	enum { POOL = 600, OPS = 60000 };
	struct btree t = { .bs = 4096, .root_fd = -1, .spool_fd = -1 };
	struct xip_build_opts o = { 0 };
	bool there[POOL] = { false };
	uint32_t seed = 12345;
	size_t count = 0, indexed;
	uint64_t compared;
	struct bnode *dir;
	char name[32];

	dir = xip_btree_root_new(&t, "src");
	assert_non_null(dir);
	xip_btree_set_dir(&t, dir, &o, 0755);
	for (int op = 0; op < OPS; op++) {
		struct bentry *e;
		unsigned int k;

		seed = seed * 1103515245 + 12345;
		k = (seed >> 8) % POOL;
		snprintf(name, sizeof(name), "n%u", k);
		e = xip_btree_find_entry(dir, name);
		assert_int_equal(e != NULL, there[k]);
		if (e) {
			assert_true(e >= dir->kids && e < dir->kids + dir->nkids);
			assert_string_equal(e->name, name);
			if ((seed >> 4) & 1) {
				xip_btree_remove_entry(dir, e);
				there[k] = false;
				count--;
			}
		} else {
			assert_int_equal(add_file(&t, dir, name), 0);
			there[k] = true;
			count++;
		}
		assert_int_equal(dir->nkids, count);
	}
	xip_btree_names_stats(dir, &indexed, &compared);
	assert_int_equal(indexed, count);
	for (unsigned int k = 0; k < POOL; k++) {
		snprintf(name, sizeof(name), "n%u", k);
		assert_int_equal(xip_btree_find_entry(dir, name) != NULL,
				 there[k]);
	}
	xip_btree_free(&t);
}

/*
 * xip_btree_finish on @subdirs directories in /big and @names names of
 * one file in /f: 0 or -EMLINK.
 */
static int finish_links(unsigned int subdirs, unsigned int names)
{
	struct btree t = { .bs = 4096, .root_fd = -1, .spool_fd = -1 };
	struct xip_build_opts o = { 0 };
	struct bnode *root, *big, *f;
	char name[32];
	int ret;

	root = xip_btree_root_new(&t, "src");
	big = xip_btree_node_new(&t);
	f = xip_btree_node_new(&t);
	assert_non_null(root);
	assert_non_null(big);
	assert_non_null(f);
	xip_btree_set_dir(&t, root, &o, 0755);
	xip_btree_set_dir(&t, big, &o, 0755);
	root->from_source = big->from_source = f->from_source = true;
	big->name = strdup("big");
	f->name = strdup("f");
	big->parent = f->parent = root;
	f->mode = S_IFREG | 0644;
	assert_int_equal(xip_btree_add_entry(root, "big", big), 0);
	for (unsigned int i = 0; i < subdirs; i++) {
		struct bnode *d = xip_btree_node_new(&t);

		assert_non_null(d);
		xip_btree_set_dir(&t, d, &o, 0755);
		snprintf(name, sizeof(name), "d%05u", i);
		assert_int_equal(xip_btree_add_entry(big, name, d), 0);
	}
	for (unsigned int i = 0; i < names; i++) {
		snprintf(name, sizeof(name), "l%05u", i);
		assert_int_equal(xip_btree_add_entry(root, name, f), 0);
	}
	ret = xip_btree_finish(&t, &o);
	if (!ret) {
		assert_int_equal(big->nlink, 2 + subdirs);
		assert_int_equal(f->nlink, names);
	}
	xip_btree_free(&t);
	return ret;
}

/* Link counts: 2 + 31998 subdirectories and 65000 names, not one more. */
static void test_btree_links(void **state)
{
	assert_int_equal(finish_links(31998, 65000), 0);
	assert_int_equal(finish_links(31999, 1), -EMLINK);
	assert_string_equal(xip_errmsg(),
			    "src/big: 31999 subdirectories: ext2 allows at most 31998 (32000 links)");
	assert_int_equal(finish_links(0, 65001), -EMLINK);
	assert_string_equal(xip_errmsg(),
			    "src/f: 65001 names for one inode: ext2 allows at most 65000 links");
	/* what a 16-bit count would wrap to 0 and 1 */
	assert_int_equal(finish_links(65534, 1), -EMLINK);
	assert_int_equal(finish_links(0, 65537), -EMLINK);
}

/* Minor page faults of this process so far. */
static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* pwrite and pread of a segment: bounds, read-only, no page touched. */
static void test_build_pio(void **state)
{
	const char *p = unit_path("pio");
	struct xip_seg *seg;
	uint8_t buf[4096], out[4096];
	long before;

	unit_fill_file(p, 64 * 4096, 0x11);
	assert_int_equal(xip_seg_open(p, XIP_SEG_WRITE, &seg), 0);
	memset(buf, 0x5a, sizeof(buf));
	memset(out, 0, sizeof(out));
	/* 32 pages written and read back: a copy through the shared mapping
	 * would fault on each one */
	before = minflt();
	for (int i = 0; i < 32; i++) {
		buf[0] = (uint8_t)i;
		assert_int_equal(xip_seg_pwrite(seg, (uint64_t)i * 8192, buf,
						  4096), 0);
		assert_int_equal(xip_seg_pread(seg, (uint64_t)i * 8192 + 1,
						 out, 4095), 0);
	}
	assert_true(minflt() - before < 8);
	assert_int_equal(out[0], 0x5a);
	unit_peek(p, 31 * 8192, out, 1);
	assert_int_equal(out[0], 31);
	unit_peek(p, 8192 - 1, out, 1);
	assert_int_equal(out[0], 0x11);
	/* nothing outside the segment */
	assert_int_equal(xip_seg_pwrite(seg, 64 * 4096 - 1, buf, 2), -ERANGE);
	assert_int_equal(xip_seg_pread(seg, 64 * 4096, out, 1), -ERANGE);
	assert_int_equal(xip_seg_pwrite(seg, UINT64_MAX - 1, buf, 4),
			 -ERANGE);
	assert_int_equal(xip_seg_pwrite(seg, 64 * 4096, buf, 0), 0);
	xip_seg_close(seg);
	assert_int_equal(xip_seg_open(p, 0, &seg), 0);
	assert_int_equal(xip_seg_pwrite(seg, 0, buf, 1), -EROFS);
	assert_int_equal(xip_build_zero(seg, 0, 4096), -EROFS);
	xip_seg_close(seg);
	unit_peek(p, 0, out, 1);
	assert_int_equal(out[0], 0);
}

/* copy_in: the bytes land at the offset; a short source says so. */
static void test_build_copy_in(void **state)
{
	const char *p = unit_path("cpin"), *src = unit_path("cpsrc");
	static uint8_t data[3 * 1048576 + 77], out[4096];
	struct xip_seg *seg;
	uint64_t done;
	int fd;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + i / 4096);
	fd = open(src, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, sizeof(data)), (ssize_t)sizeof(data));
	unit_fill_file(p, 4 * 1048576, 0x11);
	assert_int_equal(xip_seg_open(p, XIP_SEG_WRITE, &seg), 0);
	assert_int_equal(xip_seg_copy_in(seg, 8192, fd, 100,
					   sizeof(data) - 100, &done), 0);
	assert_int_equal(done, sizeof(data) - 100);
	/* the source ends early: what there was, and no error */
	assert_int_equal(xip_seg_copy_in(seg, 3 * 1048576 + 8192, fd,
					   sizeof(data) - 10, 4096, &done), 0);
	assert_int_equal(done, 10);
	assert_int_equal(xip_seg_copy_in(seg, 4 * 1048576 - 10, fd, 0, 11,
					   &done), -ERANGE);
	xip_seg_close(seg);
	close(fd);
	for (uint64_t off = 0; off < sizeof(data) - 100; off += 4000) {
		uint64_t n = sizeof(data) - 100 - off;

		n = n < sizeof(out) ? n : sizeof(out);
		unit_peek(p, (off_t)(8192 + off), out, n);
		assert_memory_equal(out, data + 100 + off, n);
	}
	unit_peek(p, 8191, out, 1);
	assert_int_equal(out[0], 0x11);
	unit_peek(p, 3 * 1048576 + 8192, out, 11);
	assert_memory_equal(out, data + sizeof(data) - 10, 10);
	assert_int_equal(out[10], 0x11);
}

/* zero: the range reads as zeros, the rest is kept; a file is punched. */
static void test_build_zero(void **state)
{
	const char *p = unit_path("zero");
	struct xip_seg *seg;
	uint8_t out[4096];
	struct stat before, after;

	unit_fill_file(p, 256 * 4096, 0x11);
	assert_int_equal(stat(p, &before), 0);
	assert_int_equal(xip_seg_open(p, XIP_SEG_WRITE, &seg), 0);
	assert_int_equal(xip_build_zero(seg, 4096 + 100, 200 * 4096), 0);
	assert_int_equal(xip_build_zero(seg, 255 * 4096, 4097), -ERANGE);
	assert_int_equal(xip_build_zero(seg, 0, 0), 0);
	xip_seg_close(seg);
	assert_int_equal(stat(p, &after), 0);
	assert_int_equal(after.st_size, before.st_size);
	/* the whole pages in the middle hold nothing any more */
	assert_true(after.st_blocks < before.st_blocks);
	unit_peek(p, 4096 + 99, out, 1);
	assert_int_equal(out[0], 0x11);
	for (uint64_t off = 4096 + 100; off < 201 * 4096 + 100; off += 4096) {
		uint64_t n = 201 * 4096 + 100 - off;

		n = n < sizeof(out) ? n : sizeof(out);
		unit_peek(p, (off_t)off, out, n);
		for (uint64_t i = 0; i < n; i++)
			assert_int_equal(out[i], 0);
	}
	unit_peek(p, 201 * 4096 + 100, out, 1);
	assert_int_equal(out[0], 0x11);
}

/* reserve: blocks allocated, still zeros, the size kept. */
static void test_build_reserve(void **state)
{
	const char *p = unit_path("reserve");
	struct xip_seg *seg;
	struct stat before, after;
	uint8_t out[4096];
	int fd;

	fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 30), 0);
	close(fd);
	assert_int_equal(stat(p, &before), 0);
	assert_int_equal(xip_seg_open(p, XIP_SEG_WRITE, &seg), 0);
	assert_int_equal(xip_build_reserve(seg, (1 << 30) - 4096, 8192),
			 -ERANGE);
	if (seg->kind != XIP_SEG_FILE ||	/* tmpfs: nothing to do */
	    xip_build_reserve(seg, 512 << 20, 64 * 4096) == -EOPNOTSUPP) {
		xip_seg_close(seg);
		skip();
	}
	xip_seg_close(seg);
	assert_int_equal(stat(p, &after), 0);
	assert_int_equal(after.st_size, 1 << 30);
	assert_true((after.st_blocks - before.st_blocks) * 512 >= 64 * 4096);
	unit_peek(p, 512 << 20, out, sizeof(out));
	for (size_t i = 0; i < sizeof(out); i++)
		assert_int_equal(out[i], 0);
}

/* ---- OCI: index selection and whiteouts ---------------------------- */

#define D(c) "sha256:" c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c \
	c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c
#define DESC(c, extra) "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\"," \
	"\"digest\":\"" D(c) "\",\"size\":7" extra "}"
#define TAG(t) ",\"annotations\":{\"org.opencontainers.image.ref.name\":\"" t "\"}"
#define PLAT(a) ",\"platform\":{\"os\":\"linux\",\"architecture\":\"" a "\"}"

static int pick(const char *json, const char *tag, const char *plat,
		char **digest)
{
	char *media = NULL;
	uint64_t size = 0;
	int ret;

	*digest = NULL;
	ret = xip_oci_pick(json, strlen(json), tag, plat, digest, &media,
			   &size);
	if (!ret) {
		assert_string_equal(media,
				    "application/vnd.oci.image.manifest.v1+json");
		assert_int_equal(size, 7);
	}
	free(media);
	return ret;
}

static void test_oci_pick(void **state)
{
	static const char one[] = "{\"manifests\":[" DESC("a", "") "]}";
	static const char tags[] = "{\"manifests\":[" DESC("a", TAG("t1")) ","
		DESC("b", TAG("t2")) "]}";
	static const char plats[] = "{\"manifests\":[" DESC("a", PLAT("amd64"))
		"," DESC("b", PLAT("arm64")) "]}";
	/* two tags of one manifest, a third of another */
	static const char same[] = "{\"manifests\":[" DESC("a", TAG("base"))
		"," DESC("a", TAG("v2")) "]}";
	static const char same_other[] = "{\"manifests\":["
		DESC("a", TAG("base")) "," DESC("a", TAG("v2")) ","
		DESC("b", TAG("v3")) "]}";
	char *d;

	(void)state;
	assert_int_equal(pick(one, NULL, NULL, &d), 0);
	assert_string_equal(d, D("a"));
	free(d);
	assert_int_equal(pick(tags, "t2", NULL, &d), 0);
	assert_string_equal(d, D("b"));
	free(d);
	assert_int_equal(pick(tags, NULL, NULL, &d), -EINVAL);
	assert_non_null(strstr(xip_errmsg(), "t1, t2"));
	assert_int_equal(pick(tags, "t3", NULL, &d), -ENOENT);
	assert_non_null(strstr(xip_errmsg(), "no tag 't3'"));
	assert_int_equal(pick(plats, NULL, "linux/arm64", &d), 0);
	assert_string_equal(d, D("b"));
	free(d);
	assert_int_equal(pick(plats, NULL, "linux/amd64", &d), 0);
	assert_string_equal(d, D("a"));
	free(d);
	assert_int_equal(pick(plats, NULL, "linux/s390x", &d), -EINVAL);
	/* one manifest under two tags is one image, whatever the platform */
	assert_int_equal(pick(same, NULL, "linux/s390x", &d), 0);
	assert_string_equal(d, D("a"));
	free(d);
	assert_int_equal(pick(same, "v2", NULL, &d), 0);
	assert_string_equal(d, D("a"));
	free(d);
	assert_int_equal(pick(same_other, NULL, "linux/s390x", &d), -EINVAL);
	assert_non_null(strstr(xip_errmsg(), "base, v2, v3"));
	assert_int_equal(pick(same_other, "base", NULL, &d), 0);
	assert_string_equal(d, D("a"));
	free(d);
	assert_int_equal(pick("{\"manifests\": [", NULL, NULL, &d), -EINVAL);
	assert_int_equal(pick("[]", NULL, NULL, &d), -EINVAL);
	assert_int_equal(pick("{\"manifests\":[]} x", NULL, NULL, &d), -EINVAL);
	/* a digest that could name another file is no digest */
	assert_int_equal(pick("{\"manifests\":[{\"digest\":\"sha256:../../x\",\"size\":1}]}",
			      NULL, NULL, &d), -EINVAL);
	assert_int_equal(pick("{\"manifests\":[{\"digest\":\"sha256:../../../../aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"size\":1}]}",
			      NULL, NULL, &d), -EINVAL);
}

static void test_oci_split(void **state)
{
	char *dir, *tag;

	(void)state;
	assert_int_equal(xip_oci_split("/nonexistent/L:v1.2", &dir, &tag), 0);
	assert_string_equal(dir, "/nonexistent/L");
	assert_string_equal(tag, "v1.2");
	free(dir);
	free(tag);
	assert_int_equal(xip_oci_split("/nonexistent/a:b/L", &dir, &tag), 0);
	assert_string_equal(dir, "/nonexistent/a:b/L");
	assert_null(tag);
	free(dir);
	assert_int_equal(xip_oci_split("/nonexistent/L:", &dir, &tag), -EINVAL);
}

static void read_layer(struct btree *t, const struct xip_build_opts *o,
		       const char *path, uint32_t layer)
{
	struct archive *a = archive_read_new();
	bool unterminated = true;

	assert_non_null(a);
	archive_read_support_format_raw(a);
	assert_int_equal(archive_read_open_filename(a, path, 10240),
			 ARCHIVE_OK);
	assert_int_equal(xip_btree_tar_layer(t, o, a, path, layer,
					     &unterminated), 0);
	assert_false(unterminated);
	archive_read_free(a);
}

/* The bytes of the file @path (malloc'ed), *@len of them. */
static char *slurp(const char *path, size_t *len)
{
	struct stat st;
	char *data;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	data = malloc((size_t)st.st_size);
	assert_non_null(data);
	assert_int_equal(xip_pread_full(fd, data, (size_t)st.st_size, 0),
			 st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return data;
}

/* An archive in memory, handed out 100 bytes at a time, then its end. */
struct cutsrc {
	const char *data;
	size_t len, at;
	bool fail;	/* the end is a read error */
};

static la_ssize_t cut_read(struct archive *a, void *arg, const void **buf)
{
	struct cutsrc *c = arg;
	size_t n = c->len - c->at < 100 ? c->len - c->at : 100;

	if (!n && c->fail) {
		archive_set_error(a, EIO, "read error at the end");
		return -1;
	}
	*buf = c->data + c->at;
	c->at += n;
	return (la_ssize_t)n;
}

/* xip_btree_tar_layer() of the first @len bytes of @data. */
static int cut_layer(const char *data, size_t len, bool fail, bool *unterm)
{
	struct xip_build_opts o = { 0 };
	struct btree t = { .bs = 4096, .root_fd = -1, .spool_fd = -1 };
	struct cutsrc c = { data, len, 0, fail };
	struct archive *a = archive_read_new();
	int ret;

	assert_non_null(a);
	archive_read_support_format_raw(a);
	assert_int_equal(archive_read_open(a, &c, NULL, cut_read, NULL),
			 ARCHIVE_OK);
	assert_int_equal(xip_btree_oci_begin(&t, &o, "L"), 0);
	*unterm = true;
	ret = xip_btree_tar_layer(&t, &o, a, "layer", 1, unterm);
	if (!ret) {
		/* every member there, the sparse one's data too */
		assert_non_null(xip_btree_find_entry(t.root, "a"));
		assert_non_null(xip_btree_find_entry(t.root, "s"));
		assert_int_equal(t.files, 2);
	}
	archive_read_free(a);
	xip_btree_free(&t);
	return ret;
}

/*
 * An archive that ends right after its last member's data (no padding,
 * no end-of-archive blocks) is complete; cut a byte shorter, or ended by
 * a read error instead of its end, it is not.
 */
static void test_tar_unterminated(void **state)
{
	static const struct tmember last_file[] = {
		{ "s", 's', NULL }, { "a", 'f', "hello\n" },
	};
	static const struct tmember last_sparse[] = {
		{ "a", 'f', "hello\n" }, { "s", 's', NULL },
	};
	const struct tmember *lists[] = { last_file, last_sparse };
	const char *tar = unit_path("cut.tar");
	bool unterm;

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		char *data;
		size_t len, end;

		write_tar(tar, lists[i], 2);
		data = slurp(tar, &len);
		/* the last member's data ends in a byte that is not zero */
		for (end = len; end && !data[end - 1]; end--)
			;
		assert_true(end % 512);
		assert_int_equal(cut_layer(data, len, false, &unterm), 0);
		assert_false(unterm);
		assert_int_equal(cut_layer(data, end, false, &unterm), 0);
		assert_true(unterm);
		assert_int_equal(cut_layer(data, end - 1, false, &unterm),
				 -EINVAL);
		assert_non_null(strstr(xip_errmsg(), "Truncated tar archive"));
		assert_false(unterm);
		assert_int_equal(cut_layer(data, end, true, &unterm), -EINVAL);
		assert_non_null(strstr(xip_errmsg(), "read error at the end"));
		assert_false(unterm);
		free(data);
	}
	unlink(tar);
}

static void test_oci_whiteouts(void **state)
{
	static const struct tmember lower[] = {
		{ "d/a", 'f', "a" }, { "d/b", 'f', "b" }, { "gone", 'f', "g" },
		{ "dir2/x", 'f', "x" }, { "keep", 'f', "k" },
		{ "d/sub/deep", 'f', "deep" }, { "hl", 'h', "d/a" },
	};
	static const struct tmember upper[] = {
		{ "d/c", 'f', "c" }, { "d/.wh..wh..opq", 'f', "" },
		{ ".wh.gone", 'f', "" }, { "dir2", 'f', "now a file" },
		{ ".wh.nothing", 'f', "" }, { "no/.wh.such", 'f', "" },
	};
	struct xip_build_opts o = { 0 };
	struct btree t = { .bs = 4096, .root_fd = -1, .spool_fd = -1 };
	char l1[] = "/tmp/xipt-l1.XXXXXX", l2[] = "/tmp/xipt-l2.XXXXXX";
	struct bentry *e;
	struct bnode *d;

	(void)state;
	close(mkstemp(l1));
	close(mkstemp(l2));
	write_tar(l1, lower, sizeof(lower) / sizeof(lower[0]));
	write_tar(l2, upper, sizeof(upper) / sizeof(upper[0]));
	assert_int_equal(xip_btree_oci_begin(&t, &o, "L"), 0);
	read_layer(&t, &o, l1, 1);
	read_layer(&t, &o, l2, 2);
	unlink(l1);
	unlink(l2);
	/* the opaque d keeps only what its own layer gave it */
	e = xip_btree_find_entry(t.root, "d");
	assert_non_null(e);
	d = e->node;
	assert_int_equal(d->nkids, 1);
	assert_string_equal(d->kids[0].name, "c");
	assert_null(xip_btree_find_entry(t.root, "gone"));
	assert_null(xip_btree_find_entry(t.root, ".wh.gone"));
	assert_null(xip_btree_find_entry(t.root, ".wh.nothing"));
	assert_null(xip_btree_find_entry(t.root, "no"));
	e = xip_btree_find_entry(t.root, "dir2");
	assert_non_null(e);
	assert_true(S_ISREG(e->node->mode));
	/* hl keeps d/a's inode, now its only name */
	e = xip_btree_find_entry(t.root, "hl");
	assert_non_null(e);
	assert_int_equal(e->node->nlink, 1);
	/* hl, keep, d/c and dir2 */
	assert_int_equal(t.files, 4);
	assert_int_equal(xip_btree_finish(&t, &o), 0);
	xip_btree_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idmap),
		cmocka_unit_test(test_uuid),
		cmocka_unit_test(test_ranges_dense),
		cmocka_unit_test(test_elf_padding),
		cmocka_unit_test(test_encode_dev),
		cmocka_unit_test(test_ind_blocks),
		cmocka_unit_test(test_dir_blocks),
		cmocka_unit_test(test_devtable_parse),
		cmocka_unit_test(test_build_errors),
		cmocka_unit_test(test_build_empty),
		cmocka_unit_test(test_split_target),
		cmocka_unit_test(test_temp_name),
		cmocka_unit_test(test_build_target),
		cmocka_unit_test(test_tar_name),
		cmocka_unit_test(test_oci_pick),
		cmocka_unit_test(test_oci_split),
		cmocka_unit_test(test_oci_whiteouts),
		cmocka_unit_test(test_tar_unterminated),
		cmocka_unit_test(test_build_tar),
		cmocka_unit_test(test_build_tar_refused),
		cmocka_unit_test(test_btree_names),
		cmocka_unit_test(test_btree_names_remove),
		cmocka_unit_test(test_btree_names_churn),
		cmocka_unit_test(test_btree_links),
		cmocka_unit_test(test_build_pio),
		cmocka_unit_test(test_build_copy_in),
		cmocka_unit_test(test_build_zero),
		cmocka_unit_test(test_build_reserve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
