/*
 * Unit tests of the reader (lib/reader/fsread.c) on images made by mke2fs and
 * debugfs: block-mapped ext2 (direct, indirect, double and triple
 * indirect blocks) and extent-mapped ext4, read without libext2fs
 * (xip_image_open_read) and compared with the source files; then damaged
 * copies, each of which must give a clean error.
 */
#include "unit.h"
#include "reader/reader_int.h"

/* unit_path() hands out four buffers in turn: a copy to keep. */
static const char *keep(const char *p)
{
	static char bufs[16][512];
	static unsigned int k;
	char *b = bufs[k++ % 16];

	snprintf(b, 512, "%s", p);
	return b;
}

/* Byte offset of inode @path's on-disk inode, from debugfs imap. */
static off_t inode_offset(const char *img, const char *path)
{
	char cmd[1024], line[512];
	unsigned long long blk = 0, off = 0, bs = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "debugfs -R 'imap %s' '%s' 2>/dev/null; dumpe2fs -h '%s' 2>/dev/null | grep '^Block size:'",
		 path, img, img);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "located at block ");

		if (p)
			sscanf(p, "located at block %llu, offset 0x%llx", &blk,
			       &off);
		if (!strncmp(line, "Block size:", 11))
			bs = strtoull(line + 11, NULL, 10);
	}
	pclose(f);
	assert_true(blk && bs);
	return (off_t)(blk * bs + off);
}

/* The whole file @ino read through its runs, straight from the segment. */
static uint8_t *read_runs(struct xip_image *img, ext2_ino_t ino, size_t *len)
{
	struct ext2_inode_large in;
	struct xip_run *runs;
	size_t nruns;
	uint64_t size, bs = img->block_size;
	uint8_t *buf;

	assert_int_equal(xip_read_inode(img, ino, &in), 0);
	size = EXT2_I_SIZE(&in);
	buf = calloc(1, size + 1);
	assert_non_null(buf);
	assert_int_equal(xip_file_runs(img, ino, &runs, &nruns), 0);
	for (size_t i = 0; i < nruns; i++) {
		for (uint64_t k = 0; k < runs[i].len; k++) {
			uint64_t off = (runs[i].lblk + k) * bs;
			uint64_t at = (runs[i].pblk + k) * bs;
			void *p;

			assert_int_equal(xip_seg_range(img->seg, at, bs,
							   &p), 0);
			if (off < size)
				memcpy(buf + off, p,
				       size - off < bs ? size - off : bs);
		}
	}
	free(runs);
	*len = size;
	return buf;
}

static void same_as_file(struct xip_image *img, const char *ipath,
			 const char *src)
{
	uint8_t *buf, *want;
	size_t len, wlen;
	ext2_ino_t ino;
	FILE *f = fopen(src, "r");

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	wlen = (size_t)ftell(f);
	rewind(f);
	want = calloc(1, wlen + 1);
	assert_int_equal(fread(want, 1, wlen, f), wlen);
	fclose(f);
	assert_int_equal(xip_lookup(img, ipath, 0, &ino), 0);
	buf = read_runs(img, ino, &len);
	assert_int_equal(len, wlen);
	assert_memory_equal(buf, want, wlen);
	free(buf);
	free(want);
}

/* A tree with files for every level of a block map, holes and links. */
static void make_tree(const char *dir)
{
	unit_sh("rm -rf '%s' && mkdir -p '%s/d/e' && "
		"head -c 5000 /dev/urandom > '%s/small' && "
		"head -c 100000 /dev/urandom > '%s/d/ind' && "
		"head -c 400000 /dev/urandom > '%s/d/e/dind' && "
		/* 1 KiB blocks: block 12 + 256 + 65536 is triple indirect */
		"printf tail | dd of='%s/sparse' bs=1024 seek=65810 conv=notrunc status=none && "
		"printf head | dd of='%s/sparse' conv=notrunc status=none && "
		/* every other block: many extents, a tree of depth 1 */
		"for i in 0 2 4 6 8 10 12 14 16 18 20 22; do "
		"head -c 4096 /dev/urandom | dd of='%s/holes' bs=4096 seek=$i conv=notrunc status=none; done && "
		"ln -s d/e/dind '%s/fast' && "
		"ln -s /d/./e/../e/dind'%0200d' '%s/slow' && "
		"ln -s ../small '%s/d/up'",
		dir, dir, dir, dir, dir, dir, dir, dir, dir, 0, dir, dir);
}

static void check_tree(struct xip_image *img, const char *dir)
{
	/* a path in the image, the file of the tree it leads to */
	static const char *const same[][2] = {
		{ "/small", "small" },
		{ "/d/ind", "d/ind" },
		{ "/d/e/dind", "d/e/dind" },
		{ "/fast", "d/e/dind" },
		{ "/d/e/../../d/./e/dind", "d/e/dind" },
		{ "/sparse", "sparse" },
		{ "/holes", "holes" },
		{ "/d/up", "small" },
	};
	char src[600], target[4096];
	ext2_ino_t ino, ino2;
	struct xip_dirent *ents;
	size_t n;
	bool seen_e = false;

	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		snprintf(src, sizeof(src), "%s/%s", dir, same[i][1]);
		same_as_file(img, same[i][0], src);
	}
	/* symlinks */
	assert_int_equal(xip_lookup(img, "/fast", XIP_LOOKUP_NOFOLLOW, &ino), 0);
	assert_int_equal(xip_readlink(img, ino, target, sizeof(target)), 0);
	assert_string_equal(target, "d/e/dind");
	assert_int_equal(xip_lookup(img, "/slow", XIP_LOOKUP_NOFOLLOW, &ino), 0);
	assert_int_equal(xip_readlink(img, ino, target, sizeof(target)), 0);
	assert_int_equal(strlen(target), strlen("/d/./e/../e/dind") + 200);
	assert_int_equal(xip_lookup(img, "/slow", 0, &ino), -ENOENT);
	/* lookup errors as the kernel's */
	assert_int_equal(xip_lookup(img, "/nothing", 0, &ino), -ENOENT);
	assert_int_equal(xip_lookup(img, "/small/x", 0, &ino), -ENOTDIR);
	assert_int_equal(xip_lookup(img, "/small/", 0, &ino), -ENOTDIR);
	assert_int_equal(xip_lookup(img, "/../../d", 0, &ino), 0);
	assert_int_equal(xip_lookup(img, "/d", 0, &ino2), 0);
	assert_int_equal(ino, ino2);
	/* directories */
	assert_int_equal(xip_dir_list(img, ino, &ents, &n), 0);
	assert_int_equal(n, 5);		/* . .. e ind up */
	for (size_t i = 0; i < n; i++)
		if (!strcmp(ents[i].name, "e"))
			seen_e = ents[i].type == EXT2_FT_DIR;
	assert_true(seen_e);
	free(ents);
	assert_int_equal(xip_lookup(img, "/small", 0, &ino), 0);
	assert_int_equal(xip_dir_list(img, ino, &ents, &n), -ENOTDIR);
}

/* make_tree() made into a new image @name by mke2fs @opts of @size. */
static const char *tree_image(const char *name, const char *opts,
			      const char *size)
{
	const char *dir = keep(unit_path("tree")), *p = keep(unit_path(name));

	make_tree(dir);
	unit_sh("rm -f '%s' && mke2fs -q -F %s -d '%s' '%s' %s >/dev/null 2>&1",
		p, opts, dir, p, size);
	return p;
}

static void test_block_mapped(void **state)
{
	const char *p = tree_image("ext2.img", "-t ext2 -b 1024", "8M");
	struct xip_image *img, *full;
	struct xip_run *r1, *r2;
	size_t n1, n2;
	ext2_ino_t ino;
	blk64_t pblk;

	assert_int_equal(xip_image_open_read(p, 0, &img), 0);
	assert_null(img->fs);
	assert_int_equal(img->block_size, 1024);
	check_tree(img, unit_path("tree"));
	/* the triple indirect block, and a hole */
	assert_int_equal(xip_lookup(img, "/sparse", 0, &ino), 0);
	assert_int_equal(xip_bmap(img, ino, 65810, &pblk), 0);
	assert_true(pblk != 0);
	assert_int_equal(xip_bmap(img, ino, 30000, &pblk), 0);
	assert_int_equal(pblk, 0);
	/* the same runs through xiptool-main's open */
	assert_int_equal(xip_image_open(p, 0, &full), 0);
	assert_non_null(full->fs);
	assert_int_equal(xip_file_runs(img, ino, &r1, &n1), 0);
	assert_int_equal(xip_file_runs(full, ino, &r2, &n2), 0);
	assert_int_equal(n1, n2);
	assert_memory_equal(r1, r2, n1 * sizeof(*r1));
	free(r1);
	free(r2);
	assert_int_equal(xip_image_close(full), 0);
	assert_int_equal(xip_image_close(img), 0);
}

static void test_extents(void **state)
{
	const char *p = tree_image("ext4.img",
				   "-t ext4 -O ^has_journal -b 4096", "64M");
	struct ext2_inode_large in;
	struct xip_image *img;
	struct xip_stat st;
	ext2_ino_t ino;

	assert_int_equal(xip_image_open_read(p, 0, &img), 0);
	check_tree(img, unit_path("tree"));
	assert_int_equal(xip_lookup(img, "/holes", 0, &ino), 0);
	assert_int_equal(xip_read_inode(img, ino, &in), 0);
	assert_true(in.i_flags & EXT4_EXTENTS_FL);
	/* 12 extents do not fit in the inode: a tree of depth 1 */
	assert_int_equal(((const uint16_t *)in.i_block)[3], 1);
	assert_int_equal(xip_stat_inode(img, ino, &st), 0);
	assert_true(st.extents);
	assert_int_equal(st.nruns, 12);
	assert_int_equal(st.data_blocks, 12);
	assert_int_equal(st.hole_blocks, 11);
	assert_int_equal(xip_image_close(img), 0);
}

/* ---- byte order ------------------------------------------------------ */

/*
 * xip_fs_inode_swab() against libext2fs's own swap: every inode of an
 * image, turned into the other byte order by ext2fs_swap_inode_full(),
 * must come back as xip_read_inode() has it (and as libext2fs reads it):
 * block pointers swapped, extent trees and fast symlink targets not.
 */
static void swab_every_inode(const char *p, unsigned int want_ext,
			     unsigned int want_dev, bool want_crtime)
{
	struct xip_image *img, *full;
	unsigned int isz, n = 0, ext = 0, fast = 0, mapped = 0, dev = 0;
	bool crtime = false;

	assert_int_equal(xip_image_open_read(p, 0, &img), 0);
	assert_int_equal(xip_image_open(p, 0, &full), 0);
	isz = EXT2_INODE_SIZE(full->fs->super);
	for (ext2_ino_t ino = 1; ino <= full->fs->super->s_inodes_count;
	     ino++) {
		struct ext2_inode_large in, lib, sw;

		memset(&lib, 0, sizeof(lib));
		assert_int_equal(ext2fs_read_inode_full(full->fs, ino,
							(struct ext2_inode *)&lib,
							sizeof(lib)), 0);
		if (!lib.i_links_count)
			continue;
		n++;
		assert_int_equal(xip_read_inode(img, ino, &in), 0);
		if (isz <= EXT2_GOOD_OLD_INODE_SIZE)
			lib.i_extra_isize = 0;
		assert_memory_equal(&in, &lib,
				    isz < sizeof(in) ? isz : sizeof(in));
		memset(&sw, 0, sizeof(sw));
		ext2fs_swap_inode_full(full->fs, &sw, &in, 1,
				       isz < sizeof(in) ? (int)isz :
							  (int)sizeof(in));
		if (in.i_flags & EXT4_EXTENTS_FL) {
			ext++;
			assert_memory_equal(sw.i_block, in.i_block,
					    sizeof(in.i_block));
		} else if (LINUX_S_ISLNK(in.i_mode) && !in.i_blocks) {
			fast++;
			assert_memory_equal(sw.i_block, in.i_block,
					    sizeof(in.i_block));
		} else {
			for (int i = 0; i < EXT2_N_BLOCKS; i++) {
				if (!in.i_block[i])
					continue;
				mapped++;
				dev += LINUX_S_ISCHR(in.i_mode) ||
				       LINUX_S_ISBLK(in.i_mode);
				assert_int_equal(sw.i_block[i],
						 __builtin_bswap32(in.i_block[i]));
				break;
			}
		}
		assert_int_equal(sw.i_mode, __builtin_bswap16(in.i_mode));
		crtime |= isz > EXT2_GOOD_OLD_INODE_SIZE &&
			  in.i_crtime == 0x11223344;
		xip_fs_inode_swab(&sw, isz);
		if (isz <= EXT2_GOOD_OLD_INODE_SIZE)
			sw.i_extra_isize = 0;
		assert_memory_equal(&sw, &in,
				    isz < sizeof(in) ? isz : sizeof(in));
		/* the fields alone (the checker's swap): i_block untouched */
		memset(&sw, 0, sizeof(sw));
		ext2fs_swap_inode_full(full->fs, &sw, &in, 1,
				       isz < sizeof(in) ? (int)isz :
							  (int)sizeof(in));
		memcpy(sw.i_block, in.i_block, sizeof(in.i_block));
		xip_inode_swab_fields(&sw, isz);
		if (isz <= EXT2_GOOD_OLD_INODE_SIZE)
			sw.i_extra_isize = 0;
		assert_memory_equal(&sw, &in,
				    isz < sizeof(in) ? isz : sizeof(in));
	}
	assert_true(n > 10 && mapped > 0);
	assert_int_equal(fast, 2);
	assert_true(ext >= want_ext);
	assert_int_equal(dev, want_dev);
	assert_int_equal(crtime, want_crtime);
	assert_int_equal(xip_image_close(full), 0);
	assert_int_equal(xip_image_close(img), 0);
}

static void test_inode_swab(void **state)
{
	const char *dir = keep(unit_path("tree")), *p = keep(unit_path("swab.img"));

	(void)state;
	make_tree(dir);
	unit_sh("ln -s '%0100d' '%s/d/slow2' && mkfifo '%s/fifo'", 0, dir, dir);
	/* block maps, 256-byte inodes: extra times, a device number */
	unit_sh("rm -f '%s' && mke2fs -q -F -t ext2 -b 1024 -d '%s' '%s' 8M >/dev/null 2>&1 && "
		"debugfs -w -f - '%s' >/dev/null 2>&1 <<EOF\n"
		"mknod /cdev c 136 7\nmknod /bdev b 259 3\n"
		"sif /small crtime 0x11223344\nsif /small crtime_extra 0x55667788\n"
		"sif /small mtime_extra 0x12345678\nsif /small generation 0xdeadbeef\n"
		"sif /small uid_hi 0x0102\nsif /small version_hi 0x0a0b0c0d\n"
		"sif /small uid 0x0304\nsif /small gid 0x0506\n"
		"EOF", p, dir, p, p);
	swab_every_inode(p, 0, 2, true);
	/* the good old 128-byte inode */
	unit_sh("rm -f '%s' && mke2fs -q -F -t ext2 -I 128 -b 4096 -d '%s' '%s' 8M >/dev/null 2>&1",
		p, dir, p);
	swab_every_inode(p, 0, 0, false);
	/* extent trees */
	unit_sh("rm -f '%s' && mke2fs -q -F -t ext4 -O ^has_journal -b 4096 -d '%s' '%s' 64M >/dev/null 2>&1",
		p, dir, p);
	swab_every_inode(p, 10, 0, false);
}

/*
 * xip_fs_super_swab() against libext2fs's ext2fs_swap_super(): the
 * superblock of each image, turned to the other byte order both ways,
 * the same bytes; back again, the disk's bytes.
 */
static void swab_super(const char *p)
{
	struct ext2_super_block disk, lib, ours;
	int fd = open(p, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &disk, sizeof(disk), 1024), sizeof(disk));
	close(fd);
	memcpy(&lib, &disk, sizeof(disk));
	memcpy(&ours, &disk, sizeof(disk));
	ext2fs_swap_super(&lib);
	xip_fs_super_swab(&ours);
	assert_memory_equal(&ours, &lib, sizeof(ours));
	assert_int_equal(ours.s_magic, __builtin_bswap16(EXT2_SUPER_MAGIC));
	xip_fs_super_swab(&ours);
	assert_memory_equal(&ours, &disk, sizeof(ours));
}

static void test_super_swab(void **state)
{
	const char *p = keep(unit_path("sbswab.img"));

	(void)state;
	/* every field a mke2fs sets, and the ones tune2fs and debugfs add */
	unit_sh("rm -f '%s' && mke2fs -q -F -t ext2 -b 1024 -E stride=7,stripe_width=21 '%s' 8M >/dev/null 2>&1 && "
		"tune2fs -c 33 -i 5d -e remount-ro -r 77 -g 12 -u 13 '%s' >/dev/null 2>&1 && "
		"debugfs -w -R 'ssv mkfs_time 0x01020304' '%s' >/dev/null 2>&1",
		p, p, p, p);
	swab_super(p);
	unit_sh("rm -f '%s' && mke2fs -q -F -t ext4 -O ^has_journal,64bit,metadata_csum,quota,project -b 4096 '%s' 64M >/dev/null 2>&1",
		p, p);
	swab_super(p);
}

/* ---- damaged images: a clean error each ----------------------------- */

static const char *copy_of(const char *src, const char *name)
{
	const char *p = unit_path(name);

	unit_sh("cp '%s' '%s'", src, p);
	return p;
}

static int open_err(const char *p, const char *want)
{
	struct xip_image *img;
	int ret = xip_image_open_read(p, 0, &img);

	assert_true(ret < 0);
	assert_null(img);
	if (want && !strstr(xip_errmsg(), want)) {
		fprintf(stderr, "message: %s\n", xip_errmsg());
		fail();
	}
	return ret;
}

static void poke32(const char *p, off_t off, uint32_t v)
{
	unit_poke(p, off, &v, sizeof(v));
}

static void poke16(const char *p, off_t off, uint16_t v)
{
	unit_poke(p, off, &v, sizeof(v));
}

/* Look @path up and map the whole file: the error of the first failure. */
/* A copy of @good named @name with the 32 bits at @off set to @v. */
static const char *poked(const char *good, const char *name, off_t off,
			 uint32_t v)
{
	const char *p = copy_of(good, name);

	poke32(p, off, v);
	return p;
}

/* The same with 16 bits. */
static const char *poked16(const char *good, const char *name, off_t off,
			   uint16_t v)
{
	const char *p = copy_of(good, name);

	poke16(p, off, v);
	return p;
}

/* open_err() of such a copy */
static int poked_open_err(const char *good, const char *name, off_t off,
			  uint32_t v, const char *want)
{
	return open_err(poked(good, name, off, v), want);
}

static int map_all(const char *p, const char *path)
{
	struct xip_image *img;
	struct xip_run *runs = NULL;
	size_t n;
	ext2_ino_t ino;
	int ret;

	assert_int_equal(xip_image_open_read(p, 0, &img), 0);
	ret = xip_lookup(img, path, 0, &ino);
	if (!ret)
		ret = xip_file_runs(img, ino, &runs, &n);
	free(runs);
	xip_image_close(img);
	return ret;
}

static void test_damaged_superblock(void **state)
{
	const char *good = tree_image("good2.img", "-t ext2 -b 1024", "8M");
	const char *p;
	uint32_t v;

	p = copy_of(good, "magic.img");
	poke16(p, 1024 + 56, 0x1234);
	assert_int_equal(open_err(p, "not an ext2 file system"), -EUCLEAN);
	/* more blocks than the file holds */
	assert_int_equal(poked_open_err(good, "count.img", 1024 + 4, 1u << 30,
					"superblock claims"), -EUCLEAN);
	/* a log block size past 64 KiB */
	assert_int_equal(poked_open_err(good, "bsize.img", 1024 + 24, 9,
					"block size"), -EUCLEAN);
	/* an unknown incompatible feature */
	p = copy_of(good, "feature.img");
	unit_peek(p, 1024 + 96, &v, sizeof(v));
	poke32(p, 1024 + 96, v | 0x80000000u);
	assert_int_equal(open_err(p, "unsupported"), -EOPNOTSUPP);
	/* too small for a superblock */
	p = unit_path("tiny.img");
	unit_fill_file(p, 1500, 0);
	assert_int_equal(open_err(p, "too small"), -EUCLEAN);
}

static void test_damaged_descriptors(void **state)
{
	const char *good = tree_image("good3.img", "-t ext2 -b 1024", "20M");
	const char *p;
	uint32_t bb;

	/* group 0's descriptor at block 2: inode table past the end */
	assert_int_equal(poked_open_err(good, "itab.img", 2048 + 8, 100000,
					"group descriptors"), -EUCLEAN);
	/* block bitmap on the superblock */
	assert_int_equal(poked_open_err(good, "bbsb.img", 2048 + 0, 1,
					"group descriptors"), -EUCLEAN);
	/* inode bitmap on the block bitmap */
	p = copy_of(good, "ibbb.img");
	unit_peek(p, 2048 + 0, &bb, sizeof(bb));
	poke32(p, 2048 + 4, bb);
	assert_int_equal(open_err(p, "overlap"), -EUCLEAN);
	/* a block bitmap in another group (three groups, no flex_bg) */
	assert_int_equal(poked_open_err(good, "bbout.img", 2048 + 0, 10000,
					"outside its group"), -EUCLEAN);
}

static void test_damaged_block_maps(void **state)
{
	const char *good = tree_image("good4.img", "-t ext2 -b 1024", "8M");
	const char *p;
	off_t io;
	uint32_t b0;

	io = inode_offset(good, "/d/e/dind");
	/* a direct block past the end of the image */
	assert_int_equal(map_all(poked(good, "direct.img", io + 40,
				       0xfffffff0u), "/d/e/dind"), -EUCLEAN);
	assert_non_null(strstr(xip_errmsg(), "beyond end of image"));
	/* a direct block on the group descriptors */
	assert_int_equal(map_all(poked(good, "meta.img", io + 40, 2),
				 "/d/e/dind"), -EUCLEAN);
	assert_non_null(strstr(xip_errmsg(), "metadata"));
	/* a run of two blocks whose second lies past the end: each block of
	 * a run is checked, not only its first */
	p = copy_of(good, "runend.img");
	poke32(p, io + 40, 8191);
	poke32(p, io + 44, 8192);
	assert_int_equal(map_all(p, "/d/e/dind"), -EUCLEAN);
	assert_non_null(strstr(xip_errmsg(), "block 8192 (file block 1)"));
	/* the double indirect block past the end */
	assert_int_equal(map_all(poked(good, "dind.img", io + 40 + 13 * 4,
				       0x7fffffffu), "/d/e/dind"), -EUCLEAN);
	/* a directory whose map gives the same block twice */
	io = inode_offset(good, "/d");
	p = copy_of(good, "dirloop.img");
	unit_peek(p, io + 40, &b0, sizeof(b0));
	poke32(p, io + 44, b0);
	poke32(p, io + 4, 2048);	/* i_size: two blocks */
	{
		struct xip_image *img;
		struct xip_dirent *ents;
		size_t n;
		ext2_ino_t ino;

		assert_int_equal(xip_image_open_read(p, 0, &img), 0);
		assert_int_equal(xip_lookup(img, "/d", 0, &ino), 0);
		assert_int_equal(xip_dir_list(img, ino, &ents, &n), -EUCLEAN);
		assert_non_null(strstr(xip_errmsg(), "mapped twice"));
		assert_int_equal(xip_lookup(img, "/d/nothing", 0, &ino),
				 -EUCLEAN);
		xip_image_close(img);
	}
	/* a directory entry whose record length runs past the block */
	p = copy_of(good, "reclen.img");
	unit_peek(p, io + 40, &b0, sizeof(b0));
	poke16(p, (off_t)b0 * 1024 + 4, 4000);
	assert_int_equal(map_all(p, "/d/ind"), -EUCLEAN);
	assert_non_null(strstr(xip_errmsg(), "corrupt entry"));
	/* an inode number past the inode count in an entry */
	assert_int_equal(map_all(poked(good, "entino.img", (off_t)b0 * 1024,
				       0x7fffffffu), "/d/ind"), -EUCLEAN);
}

static void test_damaged_extents(void **state)
{
	const char *good = tree_image("good5.img",
				      "-t ext4 -O ^has_journal -b 4096", "64M");
	off_t io;

	io = inode_offset(good, "/holes");
	assert_int_equal(map_all(good, "/holes"), 0);
	/* header magic */
	assert_int_equal(map_all(poked16(good, "emagic.img", io + 40, 0x1234),
				 "/holes"), -EUCLEAN);
	assert_non_null(strstr(xip_errmsg(), "magic"));
	/* entries beyond eh_max, eh_max beyond what i_block holds */
	assert_int_equal(map_all(poked16(good, "eentries.img", io + 40 + 2, 5),
				 "/holes"), -EUCLEAN);
	assert_int_equal(map_all(poked16(good, "emax.img", io + 40 + 4, 300),
				 "/holes"), -EUCLEAN);
	/* depth beyond the bound, and a depth the index block does not have */
	assert_int_equal(map_all(poked16(good, "edepth.img", io + 40 + 6, 9),
				 "/holes"), -EUCLEAN);
	assert_int_equal(map_all(poked16(good, "edepth2.img", io + 40 + 6, 3),
				 "/holes"), -EUCLEAN);
	/* the index entry's block past the end, and on the superblock */
	assert_int_equal(map_all(poked(good, "eindex.img", io + 40 + 12 + 4,
				       0x7ffffff0u), "/holes"), -EUCLEAN);
	assert_int_equal(map_all(poked(good, "eindex0.img", io + 40 + 12 + 4,
				       0), "/holes"), -EUCLEAN);
	/* a leaf's physical block past the end (a small file: leaf in inode) */
	io = inode_offset(good, "/small");
	assert_int_equal(map_all(poked(good, "eleaf.img", io + 40 + 12 + 8,
				       0x7ffffff0u), "/small"), -EUCLEAN);
	assert_non_null(strstr(xip_errmsg(), "beyond end of image"));
	/* a leaf that starts on the last block and runs past the end */
	assert_int_equal(map_all(poked16(poked(good, "elast.img",
					       io + 40 + 12 + 8, 16383),
					 "elen.img", io + 40 + 12 + 4, 8),
				 "/small"), -EUCLEAN);
	assert_non_null(strstr(xip_errmsg(),
			       "extent of 8 blocks at block 16383"));
}

static void test_symlink_loop(void **state)
{
	const char *p = unit_path("loop.img");
	struct xip_image *img;
	ext2_ino_t ino;

	(void)state;
	unit_mke2fs(p, "4M", 4096, NULL);
	unit_sh("debugfs -w -R 'symlink /a /b' '%s' >/dev/null 2>&1 && "
		"debugfs -w -R 'symlink /b /a' '%s' >/dev/null 2>&1", p, p);
	assert_int_equal(xip_image_open_read(p, 0, &img), 0);
	assert_int_equal(xip_lookup(img, "/a", 0, &ino), -ELOOP);
	assert_int_equal(xip_lookup(img, "/a", XIP_LOOKUP_NOFOLLOW, &ino), 0);
	assert_int_equal(xip_lookup(img, "/a/x", XIP_LOOKUP_NOFOLLOW, &ino),
			 -ELOOP);
	xip_image_close(img);
}

/* What a writer puts in through libext2fs, the reader sees at once. */
/* device numbers as the kernel encodes them (new_encode_dev) */
static void test_rdev(void **state)
{
	struct ext2_inode_large in;
	unsigned int major, minor;

	(void)state;
	memset(&in, 0, sizeof(in));
	in.i_block[0] = 0x0103;		/* old form: 1, 3 */
	xip_rdev_split(xip_inode_rdev(&in), &major, &minor);
	assert_int_equal(major, 1);
	assert_int_equal(minor, 3);
	in.i_block[0] = 0;		/* new form: 300, 70000 */
	in.i_block[1] = (70000 & 0xff) | (300 << 8) | ((70000 & ~0xffu) << 12);
	xip_rdev_split(xip_inode_rdev(&in), &major, &minor);
	assert_int_equal(major, 300);
	assert_int_equal(minor, 70000);
}

static void test_sees_writes(void **state)
{
	const char *p = unit_path("w.img");
	static uint8_t buf[5 * 4096];
	struct xip_image *img;
	struct xip_stat st;
	ext2_ino_t ino, again;
	uint8_t *back;
	size_t len;

	(void)state;
	unit_mke2fs(p, "8M", 4096, NULL);
	assert_int_equal(xip_image_open(p, XIP_IMG_WRITE, &img), 0);
	assert_int_equal(xip_create(img, "/new", 0644, &ino), 0);
	assert_int_equal(xip_lookup(img, "/new", 0, &again), 0);
	assert_int_equal(again, ino);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7);
	assert_int_equal(xip_file_write(img, ino, 0, buf, sizeof(buf)),
			 (ssize_t)sizeof(buf));
	back = read_runs(img, ino, &len);
	assert_int_equal(len, sizeof(buf));
	assert_memory_equal(back, buf, sizeof(buf));
	free(back);
	assert_int_equal(xip_stat_inode(img, ino, &st), 0);
	assert_int_equal(st.size, sizeof(buf));
	assert_int_equal(st.data_blocks, 5);
	assert_int_equal(xip_file_truncate(img, ino, 4096), 0);
	assert_int_equal(xip_stat_inode(img, ino, &st), 0);
	assert_int_equal(st.data_blocks, 1);
	assert_int_equal(xip_image_close(img), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_block_mapped),
		cmocka_unit_test(test_extents),
		cmocka_unit_test(test_inode_swab),
		cmocka_unit_test(test_super_swab),
		cmocka_unit_test(test_damaged_superblock),
		cmocka_unit_test(test_damaged_descriptors),
		cmocka_unit_test(test_damaged_block_maps),
		cmocka_unit_test(test_damaged_extents),
		cmocka_unit_test(test_symlink_loop),
		cmocka_unit_test(test_sees_writes),
		cmocka_unit_test(test_rdev),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
