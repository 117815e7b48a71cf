/* Unit tests of the write side of lib/page.c and lib/file.c. */
#include "unit.h"

#define BS 4096

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

static void test_readonly_and_full(void **state)
{
	const char *p = unit_path("r.img");
	static uint8_t buf[1 << 20];
	struct xip_image *img;
	ext2_ino_t ino, other;
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

	/* fill it: a short count, then ENOSPC */
	assert_int_equal(xip_image_open(p, XIP_IMG_WRITE, &img), 0);
	n = xip_file_write(img, ino, 0, buf, sizeof(buf));
	assert_true(n > 0);
	n = xip_file_write(img, ino, (uint64_t)n, buf, sizeof(buf));
	assert_true(n > 0 && n < (ssize_t)sizeof(buf));
	assert_int_equal(free_blocks(img), 0);
	assert_int_equal(xip_file_write(img, ino, 4 << 20, buf, 10), -ENOSPC);
	assert_non_null(strstr(xip_errmsg(), "no space left"));
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

/*
 * A source shorter than asked: what it had is written and committed, the
 * blocks allocated for the rest are given back, and the next call says
 * why.  The image stays clean.
 */
static void test_write_fd_short(void **state)
{
	const char *p = unit_path("wshort.img"), *sp = unit_path("wshort.src");
	const size_t have = 1024 * 1024 + 100;
	struct xip_image *img;
	struct ext2_inode_large in;
	ext2_ino_t ino;
	uint64_t f0;
	ssize_t k;
	int fd;

	(void)state;
	fd = source_file(sp, have, 3);
	img = image_with_file(p, "32M", &ino);
	f0 = free_blocks(img);
	k = xip_file_write_fd(img, ino, 0, fd, 0, 4 * 1024 * 1024, sp);
	assert_int_equal(k, (ssize_t)have);
	assert_int_equal(xip_read_inode(img, ino, &in), 0);
	assert_int_equal(EXT2_I_SIZE(&in), have);
	assert_int_equal(xip_file_write_fd(img, ino, have, fd, have, BS, sp),
			 -EIO);
	assert_non_null(strstr(xip_errmsg(), "shrank"));
	assert_int_equal(xip_read_inode(img, ino, &in), 0);
	assert_int_equal(EXT2_I_SIZE(&in), have);
	/* data blocks for @have bytes and one indirect block, nothing else */
	assert_int_equal(f0 - free_blocks(img), (have + BS - 1) / BS + 1);
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
		cmocka_unit_test(test_readonly_and_full),
		cmocka_unit_test(test_extents),
		cmocka_unit_test(test_write_fd),
		cmocka_unit_test(test_write_fd_short),
		cmocka_unit_test(test_read_fd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
