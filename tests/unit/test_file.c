/* Unit tests of the write side of lib/engine/page.c and lib/file.c. */
#include <sys/syscall.h>

#include "unit.h"
#include "reader/reader_int.h"

#define BS 4096

/*
 * copy_file_range for the library, which fails with EIO once
 * @cfr_budget bytes have been copied (when it is not negative): a source
 * that breaks in the middle of a write.
 */
static long long cfr_budget = -1;

ssize_t copy_file_range(int in, off64_t *in_off, int out, off64_t *out_off,
			size_t len, unsigned int flags)
{
	ssize_t r;

	if (cfr_budget == 0) {
		errno = EIO;
		return -1;
	}
	if (cfr_budget > 0 && (long long)len > cfr_budget)
		len = (size_t)cfr_budget;
	r = syscall(SYS_copy_file_range, in, in_off, out, out_off, len, flags);
	if (r > 0 && cfr_budget > 0)
		cfr_budget -= r;
	return r;
}

static void fsck_clean(const char *p)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "e2fsck -fn '%s' >/dev/null 2>&1", p);
	assert_int_equal(system(cmd), 0);
}

static uint64_t free_blocks(struct xip_image *img)
{
	return ext2fs_free_blocks_count(img->fs->super);
}

/* A new image of @size at @p, opened for writing, with an empty /f. */
static struct xip_image *image_with_file(const char *p, const char *size,
					 ext2_ino_t *ino)
{
	struct xip_image *img;

	unit_mke2fs(p, size, BS, NULL);
	assert_int_equal(xip_image_open(p, XIP_IMG_WRITE, &img), 0);
	assert_int_equal(xip_create(img, "/f", 0644, ino), 0);
	return img;
}

static void test_create_write_read(void **state)
{
	const char *p = unit_path("w.img");
	static uint8_t buf[3 * BS], back[3 * BS];
	struct xip_image *img;
	struct ext2_inode_large in;
	ext2_ino_t ino, again;
	uint64_t f0;

	(void)state;
	unit_mke2fs(p, "16M", BS, NULL);
	assert_int_equal(xip_image_open(p, XIP_IMG_WRITE, &img), 0);
	f0 = free_blocks(img);
	assert_int_equal(xip_create(img, "/f", 0640, &ino), 0);
	assert_int_equal(xip_create(img, "/f", 0640, &again), -EEXIST);
	assert_int_equal(xip_errobj(), XIP_OBJ_FILE);
	assert_string_equal(xip_errobj_name(), "/f");
	assert_int_equal(xip_lookup(img, "/f/x", 0, &again), -ENOTDIR);
	assert_int_equal(xip_errobj(), XIP_OBJ_FILE);
	assert_string_equal(xip_errobj_name(), "/f/x");
	assert_int_equal(xip_lookup(img, "/f", 0, &again), 0);
	assert_int_equal(again, ino);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 13);
	/* straddle the direct/indirect boundary */
	assert_int_equal(xip_file_write(img, ino, 11 * BS + 100, buf, sizeof(buf)),
			 (ssize_t)sizeof(buf));
	assert_int_equal(xip_read_inode(img, ino, &in), 0);
	assert_int_equal(EXT2_I_SIZE(&in), 11 * BS + 100 + sizeof(buf));
	assert_int_equal(in.i_mode, LINUX_S_IFREG | 0640);
	/* 4 data blocks + the indirect block */
	assert_int_equal(f0 - free_blocks(img), 5);
	assert_int_equal(in.i_blocks, 5 * (BS / 512));
	assert_int_equal(xip_file_read(img, ino, 11 * BS + 100, back, sizeof(back)),
			 (ssize_t)sizeof(back));
	assert_memory_equal(buf, back, sizeof(buf));
	/* the hole before reads zero; new blocks were cleared */
	assert_int_equal(xip_file_read(img, ino, 11 * BS, back, 100), 100);
	for (int i = 0; i < 100; i++)
		assert_int_equal(back[i], 0);
	assert_int_equal(xip_image_close(img), 0);
	fsck_clean(p);
}

/*
 * A change below an indirect block that is already linked goes to a copy,
 * linked by the inode write; the old block is free afterwards, and no
 * other block was touched.
 */
static void test_indirect_copied(void **state)
{
	const char *p = unit_path("cow.img");
	static uint8_t buf[20 * BS], back[21 * BS];
	struct ext2_inode_large in;
	struct xip_image *img;
	blk64_t ind, ind2, ind3;
	ext2_ino_t ino;
	uint64_t f0;

	(void)state;
	img = image_with_file(p, "16M", &ino);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 1);
	assert_int_equal(xip_file_write(img, ino, 0, buf, sizeof(buf)),
			 (ssize_t)sizeof(buf));
	assert_int_equal(xip_read_inode(img, ino, &in), 0);
	ind = in.i_block[EXT2_IND_BLOCK];
	assert_true(ind != 0);
	f0 = free_blocks(img);
	/* one more block: the indirect block moves, the count grows by 1 */
	assert_int_equal(xip_file_write(img, ino, sizeof(buf), buf, BS),
			 (ssize_t)BS);
	assert_int_equal(xip_read_inode(img, ino, &in), 0);
	ind2 = in.i_block[EXT2_IND_BLOCK];
	assert_true(ind2 != ind);
	assert_false(ext2fs_test_block_bitmap2(img->fs->block_map, ind));
	assert_true(ext2fs_test_block_bitmap2(img->fs->block_map, ind2));
	assert_int_equal(f0 - free_blocks(img), 1);
	assert_int_equal(in.i_blocks, 22 * (BS / 512));
	/* an overwrite in place changes no block map */
	assert_int_equal(xip_file_write(img, ino, 13 * BS, buf, BS), (ssize_t)BS);
	assert_int_equal(xip_read_inode(img, ino, &in), 0);
	assert_int_equal(in.i_block[EXT2_IND_BLOCK], ind2);
	/* a truncate inside the indirect range copies it once more */
	assert_int_equal(xip_file_truncate(img, ino, 15 * BS + 1), 0);
	assert_int_equal(xip_read_inode(img, ino, &in), 0);
	ind3 = in.i_block[EXT2_IND_BLOCK];
	assert_true(ind3 != ind2);
	assert_false(ext2fs_test_block_bitmap2(img->fs->block_map, ind2));
	assert_int_equal(in.i_blocks, 17 * (BS / 512));
	assert_int_equal(xip_file_read(img, ino, 0, back, sizeof(back)),
			 15 * BS + 1);
	memcpy(buf + 13 * BS, buf, BS);
	assert_memory_equal(back, buf, 15 * BS + 1);
	/* down to the direct blocks: the indirect block goes, no copy */
	assert_int_equal(xip_file_truncate(img, ino, 5 * BS), 0);
	assert_int_equal(xip_read_inode(img, ino, &in), 0);
	assert_int_equal(in.i_block[EXT2_IND_BLOCK], 0);
	assert_false(ext2fs_test_block_bitmap2(img->fs->block_map, ind3));
	assert_int_equal(in.i_blocks, 5 * (BS / 512));
	assert_int_equal(xip_image_close(img), 0);
	fsck_clean(p);
}

/* Once the interrupt flag is set, a write stops before it changes anything. */
static void test_interrupted(void **state)
{
	const char *p = unit_path("intr.img");
	static uint8_t buf[8 * BS];
	volatile sig_atomic_t flag = 0;
	struct ext2_inode_large in;
	struct xip_image *img;
	ext2_ino_t ino;

	(void)state;
	img = image_with_file(p, "16M", &ino);
	xip_set_interrupt(&flag);
	assert_false(xip_interrupted());
	assert_int_equal(xip_file_write(img, ino, 0, buf, sizeof(buf)),
			 (ssize_t)sizeof(buf));
	flag = SIGTERM;
	assert_true(xip_interrupted());
	assert_int_equal(xip_file_write(img, ino, 0, buf, sizeof(buf)), -EINTR);
	xip_set_interrupt(NULL);
	assert_int_equal(xip_read_inode(img, ino, &in), 0);
	assert_int_equal(EXT2_I_SIZE(&in), sizeof(buf));
	assert_int_equal(xip_image_close(img), 0);
	fsck_clean(p);
}

static void test_get_page_create(void **state)
{
	const char *p = unit_path("c.img");
	struct xip_image *img;
	ext2_ino_t ino;
	uint64_t f0;
	void *pg;

	(void)state;
	img = image_with_file(p, "16M", &ino);
	assert_int_equal(xip_file_truncate(img, ino, 2000 * BS), 0);
	f0 = free_blocks(img);
	assert_int_equal(xip_get_page(img, ino, 1500, false, &pg), -ENODATA);
	assert_int_equal(free_blocks(img), f0);
	assert_int_equal(xip_get_page(img, ino, 1500, true, &pg), 0);
	for (int i = 0; i < BS; i++)
		assert_int_equal(((uint8_t *)pg)[i], 0);
	/* dind + ind + data */
	assert_int_equal(f0 - free_blocks(img), 3);
	memset(pg, 'x', BS);
	assert_int_equal(xip_get_page(img, ino, 1500, false, &pg), 0);
	assert_int_equal(((uint8_t *)pg)[7], 'x');
	assert_int_equal(xip_image_close(img), 0);
	fsck_clean(p);
}

static void test_truncate_frees(void **state)
{
	const char *p = unit_path("t.img");
	static uint8_t buf[64 * BS];
	struct xip_image *img;
	ext2_ino_t ino;
	uint64_t f0;
	uint8_t b;

	(void)state;
	unit_mke2fs(p, "32M", BS, NULL);
	memset(buf, 0xab, sizeof(buf));
	assert_int_equal(xip_image_open(p, XIP_IMG_WRITE, &img), 0);
	f0 = free_blocks(img);
	assert_int_equal(xip_create(img, "/f", 0644, &ino), 0);
	for (uint64_t off = 0; off < 1100 * BS; off += sizeof(buf))
		assert_int_equal(xip_file_write(img, ino, off, buf, sizeof(buf)),
				 (ssize_t)sizeof(buf));
	assert_int_equal(xip_file_truncate(img, ino, 10 * BS + 7), 0);
	assert_int_equal(f0 - free_blocks(img), 11);
	/* the tail of the last block is zero: grow and look */
	assert_int_equal(xip_file_truncate(img, ino, 11 * BS), 0);
	assert_int_equal(xip_file_read(img, ino, 10 * BS + 6, &b, 1), 1);
	assert_int_equal(b, 0xab);
	assert_int_equal(xip_file_read(img, ino, 10 * BS + 7, &b, 1), 1);
	assert_int_equal(b, 0);
	assert_int_equal(f0 - free_blocks(img), 11);
	assert_int_equal(xip_file_truncate(img, ino, 0), 0);
	assert_int_equal(free_blocks(img), f0);
	assert_int_equal(xip_image_close(img), 0);
	fsck_clean(p);
}

/* The bytes of file page @pg from @from to its end are all @byte. */
static void page_tail_is(struct xip_image *img, ext2_ino_t ino, uint64_t pg,
			 size_t from, int byte)
{
	uint8_t *p;

	assert_int_equal(xip_get_page(img, ino, pg, false, (void **)&p), 0);
	for (size_t i = from; i < BS; i++)
		if (p[i] != byte)
			fail_msg("page %llu byte %zu is 0x%02x, not 0x%02x",
				 (unsigned long long)pg, i, p[i], byte);
}

/* Put non-zero bytes past the end of file page @pg, as a peer may. */
static void soil_tail(struct xip_image *img, ext2_ino_t ino, uint64_t pg,
		      size_t from)
{
	uint8_t *p;

	assert_int_equal(xip_get_page(img, ino, pg, false, (void **)&p), 0);
	memset(p + from, 0x5a, BS - from);
}

/*
 * xip_truncate_page: a shrink to a size inside a block zeroes the rest of
 * that block in the segment (a mapping of the last page shows it); a grow
 * and a write past the end zero the old tail before it becomes file data.
 */
static void test_truncate_zeroes_tail(void **state)
{
	const char *p = unit_path("z.img");
	static uint8_t buf[3 * BS], back[3 * BS];
	struct xip_image *img;
	ext2_ino_t ino;

	(void)state;
	img = image_with_file(p, "8M", &ino);
	memset(buf, 0xab, sizeof(buf));
	assert_int_equal(xip_file_write(img, ino, 0, buf, sizeof(buf)),
			 (ssize_t)sizeof(buf));
	assert_int_equal(xip_file_truncate(img, ino, BS + 100), 0);
	page_tail_is(img, ino, 1, 100, 0);

	/* growing: the old tail reads as zeros */
	soil_tail(img, ino, 1, 100);
	assert_int_equal(xip_file_truncate(img, ino, 3 * BS), 0);
	page_tail_is(img, ino, 1, 100, 0);
	assert_int_equal(xip_file_read(img, ino, 0, back, sizeof(back)),
			 (ssize_t)sizeof(back));
	memset(buf + BS + 100, 0, sizeof(buf) - BS - 100);
	assert_memory_equal(back, buf, sizeof(buf));

	/* a write past the end: the bytes in between read as zeros */
	assert_int_equal(xip_file_truncate(img, ino, BS + 100), 0);
	soil_tail(img, ino, 1, 100);
	assert_int_equal(xip_file_write(img, ino, BS + 300, "z", 1), 1);
	assert_int_equal(xip_file_read(img, ino, BS, back, 301), 301);
	for (int i = 100; i < 300; i++)
		assert_int_equal(back[i], 0);
	assert_int_equal(back[300], 'z');
	assert_int_equal(xip_image_close(img), 0);
	fsck_clean(p);
}

/*
 * A block given to a file is cleared before it is linked in (as the
 * kernel's ext2_clear_xip_target): a freed block, full of old data, comes
 * back as zeros in a hole made page and around a small write.
 */
static void test_new_blocks_cleared(void **state)
{
	const char *p = unit_path("n.img");
	static uint8_t buf[16 * BS], back[BS];
	struct xip_image *img;
	ext2_ino_t ino;
	uint8_t *pg;

	(void)state;
	img = image_with_file(p, "8M", &ino);
	memset(buf, 0xab, sizeof(buf));
	assert_int_equal(xip_file_write(img, ino, 0, buf, sizeof(buf)),
			 (ssize_t)sizeof(buf));
	assert_int_equal(xip_file_truncate(img, ino, 0), 0);
	assert_int_equal(xip_file_truncate(img, ino, sizeof(buf)), 0);
	assert_int_equal(xip_get_page(img, ino, 3, true, (void **)&pg), 0);
	for (int i = 0; i < BS; i++)
		assert_int_equal(pg[i], 0);
	assert_int_equal(xip_file_write(img, ino, 9 * BS + 10, "y", 1), 1);
	assert_int_equal(xip_file_read(img, ino, 9 * BS, back, BS), BS);
	for (int i = 0; i < BS; i++)
		assert_int_equal(back[i], i == 10 ? 'y' : 0);
	assert_int_equal(xip_image_close(img), 0);
	fsck_clean(p);
}

static void test_readonly_and_full(void **state)
{
	const char *p = unit_path("r.img");
	static uint8_t buf[1 << 20];
	struct ext2_inode_large in;
	struct xip_image *img;
	ext2_ino_t ino, other;
	uint64_t f0;
	ssize_t n;
	void *pg;

	(void)state;
	img = image_with_file(p, "2M", &ino);
	assert_int_equal(xip_image_close(img), 0);

	assert_int_equal(xip_image_open(p, 0, &img), 0);
	assert_int_equal(xip_file_write(img, ino, 0, "x", 1), -EROFS);
	assert_int_equal(xip_file_truncate(img, ino, 0), -EROFS);
	assert_int_equal(xip_get_page(img, ino, 0, true, &pg), -EROFS);
	assert_int_equal(xip_create(img, "/g", 0644, &other), -EROFS);
	assert_int_equal(xip_image_close(img), 0);

	/* too large for what is free: nothing written, nothing taken */
	assert_int_equal(xip_image_open(p, XIP_IMG_WRITE, &img), 0);
	n = xip_file_write(img, ino, 0, buf, sizeof(buf));
	assert_int_equal(n, (ssize_t)sizeof(buf));
	f0 = free_blocks(img);
	assert_int_equal(xip_file_write(img, ino, (uint64_t)n, buf,
					sizeof(buf)), -ENOSPC);
	assert_non_null(strstr(xip_errmsg(), "no space left"));
	assert_int_equal(free_blocks(img), f0);
	assert_int_equal(xip_read_inode(img, ino, &in), 0);
	assert_int_equal(EXT2_I_SIZE(&in), sizeof(buf));
	/* fill it a block at a time: the last free block holds data too */
	while ((n = xip_file_write(img, ino, EXT2_I_SIZE(&in), buf, BS)) == BS)
		assert_int_equal(xip_read_inode(img, ino, &in), 0);
	assert_int_equal(n, -ENOSPC);
	assert_int_equal(free_blocks(img), 0);
	assert_int_equal(xip_file_write(img, ino, 4 << 20, buf, 10), -ENOSPC);
	assert_int_equal(xip_image_close(img), 0);
	fsck_clean(p);
}

static void test_extents(void **state)
{
	const char *p = unit_path("e4.img");
	static uint8_t buf[5 * BS], back[5 * BS];
	struct xip_image *img;
	struct xip_stat st;
	char cmd[1024];
	ext2_ino_t ino;
	uint64_t f0;

	(void)state;
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s' && head -c 9000 /dev/zero > '%s/f' && "
		 "mke2fs -q -F -t ext4 -b 4096 -d '%s' '%s' 16M >/dev/null 2>&1",
		 unit_path("e4tree"), unit_path("e4tree"), unit_path("e4tree"), p);
	assert_int_equal(system(cmd), 0);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 3 + 1);
	assert_int_equal(xip_image_open(p, XIP_IMG_WRITE, &img), 0);
	assert_int_equal(xip_lookup(img, "/f", 0, &ino), 0);
	assert_int_equal(xip_stat_inode(img, ino, &st), 0);
	assert_true(st.extents);
	f0 = free_blocks(img);
	assert_int_equal(xip_file_write(img, ino, 100 * BS, buf, sizeof(buf)),
			 (ssize_t)sizeof(buf));
	assert_int_equal(f0 - free_blocks(img), 5);
	assert_int_equal(xip_file_read(img, ino, 100 * BS, back, sizeof(back)),
			 (ssize_t)sizeof(back));
	assert_memory_equal(buf, back, sizeof(buf));
	assert_int_equal(xip_file_truncate(img, ino, 101 * BS + 1), 0);
	assert_int_equal(f0 - free_blocks(img), 2);
	assert_int_equal(xip_image_close(img), 0);
	fsck_clean(p);
}

/* A file of @n bytes (pattern @seed) to write from; its descriptor. */
static int source_file(const char *p, size_t n, unsigned int seed)
{
	uint8_t *b = malloc(n ? n : 1);
	int fd;

	assert_non_null(b);
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 7 + seed + i / 4096);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, n), (ssize_t)n);
	free(b);
	return fd;
}

/*
 * Writing from a descriptor: whole runs of new blocks filled by the
 * kernel, partial blocks and holes inside the file block by block, and
 * every byte where a buffer write would have put it.
 */
static void test_write_fd(void **state)
{
	const char *p = unit_path("wfd.img"), *sp = unit_path("wfd.src");
	const size_t n = 3 * 1024 * 1024 + 1234;	/* crosses indirect blocks */
	uint8_t *want = malloc(n), *back = malloc(n + 3 * BS);
	struct xip_image *img;
	struct ext2_inode_large in;
	ext2_ino_t ino;
	int fd;

	(void)state;
	assert_non_null(want);
	assert_non_null(back);
	fd = source_file(sp, n, 1);
	assert_int_equal(pread(fd, want, n, 0), (ssize_t)n);
	img = image_with_file(p, "32M", &ino);
	/* unaligned start: a partial first block, then whole ones */
	assert_int_equal(xip_file_write_fd(img, ino, 100, fd, 0, n, sp),
			 (ssize_t)n);
	assert_int_equal(xip_file_read(img, ino, 0, back, n + 100),
			 (ssize_t)(n + 100));
	for (int i = 0; i < 100; i++)
		assert_int_equal(back[i], 0);
	assert_memory_equal(back + 100, want, n);
	/* in long runs: an indirect block is made once, not copied per block */
	{
		struct xip_run *runs;
		size_t nruns;

		assert_int_equal(xip_file_runs(img, ino, &runs, &nruns), 0);
		assert_true(nruns <= 4);
		free(runs);
	}
	/* a hole inside the file: filled block by block, from an offset */
	assert_int_equal(xip_file_truncate(img, ino, 0), 0);
	assert_int_equal(xip_file_truncate(img, ino, 40 * BS), 0);
	assert_int_equal(xip_file_write_fd(img, ino, 5 * BS, fd, 7, 3 * BS, sp),
			 3 * BS);
	assert_int_equal(xip_file_read(img, ino, 5 * BS, back, 3 * BS), 3 * BS);
	assert_memory_equal(back, want + 7, 3 * BS);
	/* over existing blocks: in place */
	assert_int_equal(xip_file_write_fd(img, ino, 5 * BS + 1, fd, 0, BS, sp),
			 BS);
	assert_int_equal(xip_file_read(img, ino, 5 * BS + 1, back, BS), BS);
	assert_memory_equal(back, want, BS);
	assert_int_equal(xip_read_inode(img, ino, &in), 0);
	assert_int_equal(EXT2_I_SIZE(&in), 40 * BS);
	assert_int_equal(xip_image_close(img), 0);
	fsck_clean(p);
	close(fd);
	free(want);
	free(back);
}

/* What a failed write must leave as it found it. */
struct fstate {
	uint64_t size, iblocks, free;
	uint32_t mtime;
	uint8_t *bytes;
};

static void state_get(struct xip_image *img, ext2_ino_t ino, struct fstate *st)
{
	struct ext2_inode_large in;

	assert_int_equal(xip_read_inode(img, ino, &in), 0);
	st->size = EXT2_I_SIZE(&in);
	st->iblocks = in.i_blocks;
	st->mtime = in.i_mtime;
	st->free = free_blocks(img);
	st->bytes = malloc(st->size + 1);
	assert_non_null(st->bytes);
	assert_int_equal(xip_file_read(img, ino, 0, st->bytes, st->size),
			 (ssize_t)st->size);
}

static void state_same(struct xip_image *img, ext2_ino_t ino,
		       struct fstate *was)
{
	struct fstate now;

	state_get(img, ino, &now);
	assert_int_equal(now.size, was->size);
	assert_int_equal(now.iblocks, was->iblocks);
	assert_int_equal(now.mtime, was->mtime);
	assert_int_equal(now.free, was->free);
	assert_memory_equal(now.bytes, was->bytes, was->size);
	free(now.bytes);
	free(was->bytes);
}

/*
 * A file with holes and data in its direct, indirect and double indirect
 * ranges, and another that takes all but @spare free blocks.
 */
static void nearly_full(const char *p, struct xip_image **imgp,
			ext2_ino_t *ino, uint64_t spare)
{
	static uint8_t buf[64 * BS];
	struct xip_image *img;
	ext2_ino_t filler;
	uint64_t end = 0;

	unit_mke2fs(p, "8M", BS, NULL);
	assert_int_equal(xip_image_open(p, XIP_IMG_WRITE, &img), 0);
	assert_int_equal(xip_create(img, "/f", 0644, ino), 0);
	memset(buf, 0x5a, sizeof(buf));
	assert_int_equal(xip_file_write(img, *ino, 3 * BS, buf, 2 * BS),
			 2 * BS);
	assert_int_equal(xip_file_write(img, *ino, 20 * BS + 9, buf, 3 * BS),
			 3 * BS);
	assert_int_equal(xip_file_write(img, *ino, 1100 * BS, buf, BS + 100),
			 BS + 100);
	assert_int_equal(xip_create(img, "/filler", 0644, &filler), 0);
	while (xip_file_write(img, filler, end, buf, BS) == BS)
		end += BS;
	assert_int_equal(free_blocks(img), 0);
	assert_int_equal(xip_file_truncate(img, filler, end - spare * BS), 0);
	/* and the filler's indirect blocks past the new end */
	assert_true(free_blocks(img) >= spare &&
		    free_blocks(img) <= spare + 3);
	*imgp = img;
}

/*
 * On a nearly_full() image with @spare blocks free, a write of @len
 * bytes at @off (back from the file's end when negative) finds no room:
 * -ENOSPC, and the file and the free blocks are as they were (the blocks
 * are taken before a byte is copied).  Then @fit bytes at @off go in.
 */
static void enospc_then_fit(const char *name, uint64_t spare, int64_t off,
			    size_t len, size_t fit)
{
	const char *p = unit_path(name);
	static uint8_t buf[1200 * BS];
	struct xip_image *img;
	struct fstate was;
	ext2_ino_t ino;
	uint64_t at;

	assert_true(len <= sizeof(buf) && fit < len);
	memset(buf, 0xc3, len);
	nearly_full(p, &img, &ino, spare);
	state_get(img, ino, &was);
	at = off < 0 ? was.size - (uint64_t)-off : (uint64_t)off;
	assert_int_equal(xip_file_write(img, ino, at, buf, len), -ENOSPC);
	state_same(img, ino, &was);
	assert_int_equal(xip_file_write(img, ino, at, buf, fit), fit);
	assert_int_equal(xip_image_close(img), 0);
	fsck_clean(p);
}

/*
 * No room for a write that extends the file: nothing changes, and the
 * blocks it had taken before it ran out are free again; what fits still
 * goes in.
 */
static void test_write_enospc_extend(void **state)
{
	(void)state;
	enospc_then_fit("nospc1.img", 20, -50, 40 * BS, 10 * BS);
}

/*
 * No room for the holes a write covers, inside the file and past its
 * end (from the first hole over every old block): no byte of the old
 * data changes either.  Into the holes of the direct range only: fits.
 */
static void test_write_enospc_holes(void **state)
{
	(void)state;
	enospc_then_fit("nospc2.img", 30, 100, 1200 * BS, 20 * BS);
}

/*
 * A source that fails in the middle (EIO from copy_file_range): while
 * the new blocks are filled, before any old block is overwritten, the
 * file stays exactly as it was; later, its size, its blocks and the free
 * blocks still are.  The image is clean either way.
 */
static void test_write_source_fails(void **state)
{
	const char *p = unit_path("srcfail.img");
	const char *sp = unit_path("srcfail.src");
	const size_t n = 1200 * BS;
	struct xip_image *img;
	struct fstate was;
	ext2_ino_t ino;
	int fd;

	(void)state;
	fd = source_file(sp, n, 5);
	nearly_full(p, &img, &ino, 1500);
	state_get(img, ino, &was);
	cfr_budget = 100 * BS + 7;
	assert_int_equal(xip_file_write_fd(img, ino, 100, fd, 0, n, sp), -EIO);
	cfr_budget = -1;
	assert_non_null(strstr(xip_errmsg(), sp));
	state_same(img, ino, &was);
	/* the same, the source failing after every new block is filled */
	state_get(img, ino, &was);
	cfr_budget = (long long)n - 5 * BS;
	assert_int_equal(xip_file_write_fd(img, ino, 100, fd, 0, n, sp), -EIO);
	cfr_budget = -1;
	{
		struct ext2_inode_large in;

		assert_int_equal(xip_read_inode(img, ino, &in), 0);
		assert_int_equal(EXT2_I_SIZE(&in), was.size);
		assert_int_equal(in.i_blocks, was.iblocks);
		assert_int_equal(free_blocks(img), was.free);
		free(was.bytes);
	}
	/* and with a working source, the whole write */
	assert_int_equal(xip_file_write_fd(img, ino, 100, fd, 0, n, sp),
			 (ssize_t)n);
	assert_int_equal(xip_image_close(img), 0);
	fsck_clean(p);
	close(fd);
}

/*
 * An extent-mapped file (ext4): no room for a write into its holes and
 * past its end; the blocks libext2fs linked are punched out again.
 */
static void test_write_enospc_extents(void **state)
{
	const char *p = unit_path("nospc4.img"), *tree = unit_path("e4full");
	static uint8_t buf[64 * BS];
	struct xip_image *img;
	struct fstate was;
	ext2_ino_t ino, filler;
	uint64_t end = 0;
	char cmd[1024];

	(void)state;
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s' && head -c 9000 /dev/urandom > '%s/f' && "
		 "mke2fs -q -F -t ext4 -O ^has_journal -b 4096 -d '%s' '%s' 8M"
		 " >/dev/null 2>&1", tree, tree, tree, p);
	assert_int_equal(system(cmd), 0);
	memset(buf, 0x77, sizeof(buf));
	assert_int_equal(xip_image_open(p, XIP_IMG_WRITE, &img), 0);
	assert_int_equal(xip_lookup(img, "/f", 0, &ino), 0);
	/* a hole, then data, past the old end */
	assert_int_equal(xip_file_write(img, ino, 20 * BS, buf, BS), BS);
	assert_int_equal(xip_create(img, "/filler", 0644, &filler), 0);
	while (xip_file_write(img, filler, end, buf, BS) == BS)
		end += BS;
	assert_int_equal(xip_file_truncate(img, filler, end - 12 * BS), 0);
	state_get(img, ino, &was);
	assert_int_equal(xip_file_write(img, ino, 5000, buf, 40 * BS), -ENOSPC);
	state_same(img, ino, &was);
	assert_int_equal(xip_image_close(img), 0);
	fsck_clean(p);
}

/*
 * A source shorter than asked: the write fails with -EIO and writes
 * nothing (all or nothing: no short count).  The image stays clean.
 */
static void test_write_fd_short(void **state)
{
	const char *p = unit_path("wshort.img"), *sp = unit_path("wshort.src");
	const size_t have = 1024 * 1024 + 100;
	struct xip_image *img;
	struct fstate was;
	ext2_ino_t ino;
	int fd;

	(void)state;
	fd = source_file(sp, have, 3);
	unit_mke2fs(p, "32M", BS, NULL);
	assert_int_equal(xip_image_open(p, XIP_IMG_WRITE, &img), 0);
	assert_int_equal(xip_create(img, "/f", 0644, &ino), 0);
	state_get(img, ino, &was);
	assert_int_equal(xip_file_write_fd(img, ino, 0, fd, 0, 4 * 1024 * 1024,
					   sp), -EIO);
	assert_non_null(strstr(xip_errmsg(), sp));
	assert_int_equal(xip_errobj(), XIP_OBJ_FD);
	assert_string_equal(xip_errobj_name(), sp);
	state_same(img, ino, &was);
	assert_int_equal(xip_file_write_fd(img, ino, 0, fd, 0, have, sp),
			 (ssize_t)have);
	state_get(img, ino, &was);
	assert_int_equal(xip_file_write_fd(img, ino, have, fd, have, BS, sp),
			 -EIO);
	state_same(img, ino, &was);
	assert_int_equal(xip_image_close(img), 0);
	fsck_clean(p);
	close(fd);
}

/* Reading to a descriptor: a file, a pipe and /dev/null, holes as zeros. */
static void test_read_fd(void **state)
{
	const char *p = unit_path("rfd.img"), *op = unit_path("rfd.out");
	const size_t n = 2 * 1024 * 1024;
	uint8_t *buf = malloc(n), *back = malloc(n + 64 * BS);
	struct xip_image *img;
	ext2_ino_t ino;
	int out, pfd[2], dn;
	size_t got = 0;

	(void)state;
	assert_non_null(buf);
	assert_non_null(back);
	for (size_t i = 0; i < n; i++)
		buf[i] = (uint8_t)(i * 31 + i / 777);
	img = image_with_file(p, "16M", &ino);
	/* 64 blocks of hole first */
	assert_int_equal(xip_file_write(img, ino, 64 * BS, buf, n), (ssize_t)n);
	out = open(op, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(out >= 0);
	assert_int_equal(write(out, "x", 1), 1);	/* at its position */
	assert_int_equal(xip_file_read_fd(img, ino, 0, SIZE_MAX, out, op),
			 (ssize_t)(n + 64 * BS));
	assert_int_equal(pread(out, back, n + 64 * BS, 1),
			 (ssize_t)(n + 64 * BS));
	for (size_t i = 0; i < 64 * BS; i++)
		assert_int_equal(back[i], 0);
	assert_memory_equal(back + 64 * BS, buf, n);
	close(out);
	/* a pipe, read in small pieces (--offset/--length) */
	assert_int_equal(pipe(pfd), 0);
	assert_int_equal(xip_file_read_fd(img, ino, 64 * BS + 5, 1000, pfd[1],
					  "pipe"), 1000);
	while (got < 1000) {
		ssize_t r = read(pfd[0], back + got, 1000 - got);

		assert_true(r > 0);
		got += (size_t)r;
	}
	assert_memory_equal(back, buf + 5, 1000);
	close(pfd[0]);
	/* a pipe nobody reads: the error names the output */
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(xip_file_read_fd(img, ino, 0, n, pfd[1], "pipe"),
			 -EPIPE);
	assert_non_null(strstr(xip_errmsg(), "pipe: write error"));
	assert_int_equal(xip_errobj(), XIP_OBJ_FD);
	assert_string_equal(xip_errobj_name(), "pipe");
	close(pfd[1]);
	dn = open("/dev/null", O_WRONLY | O_CLOEXEC);
	assert_true(dn >= 0);
	assert_int_equal(xip_file_read_fd(img, ino, 0, SIZE_MAX, dn, "null"),
			 (ssize_t)(n + 64 * BS));
	close(dn);
	assert_int_equal(xip_image_close(img), 0);
	free(buf);
	free(back);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_write_read),
		cmocka_unit_test(test_indirect_copied),
		cmocka_unit_test(test_interrupted),
		cmocka_unit_test(test_get_page_create),
		cmocka_unit_test(test_truncate_frees),
		cmocka_unit_test(test_truncate_zeroes_tail),
		cmocka_unit_test(test_new_blocks_cleared),
		cmocka_unit_test(test_readonly_and_full),
		cmocka_unit_test(test_extents),
		cmocka_unit_test(test_write_fd),
		cmocka_unit_test(test_write_fd_short),
		cmocka_unit_test(test_write_enospc_extend),
		cmocka_unit_test(test_write_enospc_holes),
		cmocka_unit_test(test_write_source_fails),
		cmocka_unit_test(test_write_enospc_extents),
		cmocka_unit_test(test_read_fd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
