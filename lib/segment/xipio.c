// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A libext2fs io_manager whose device is a segment.  Reads and writes are
 * plain memory copies to and from the mapping, with every offset checked
 * in 64 bits against the segment's size; there is no cache.  Flushing is
 * msync().
 *
 * With the "atomic" option (writers of an existing image), every write is
 * one pwrite(2) on the segment's descriptor instead of a memory copy: the
 * kernel copies a write within one page whole before it acts on a signal,
 * so an inode or a directory block written this way is never seen half
 * old, half new after a SIGKILL.  The page cache behind the descriptor is
 * the one behind the mapping, so both views stay the same.  Segments that
 * cannot be written with write(2) (device DAX, hugetlbfs) fall back to
 * the memory copy.
 *
 * With the "pio" option (mkfs, which writes a new image of any size),
 * reads are pread(2) too: nothing is touched through the mapping, whose
 * page-table entries would cost more than the copies, and a read of a
 * hole of a sparse image does not make the kernel read ahead around it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "segment/xip_segment.h"
#include "segment/segment_int.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"

struct xipio_private {
	struct xip_seg *seg;
	struct struct_io_stats stats;
	bool atomic;		/* write with pwrite(2) where it works */
	bool pio;		/* read with pread(2) where it works */
};

/*
 * The channel name carries the segment's address ("xipseg:0x5581...",
 * then libext2fs's "?options"): no table to fill, no limit on the
 * segments open at once.  Only names made here reach xipio_open: the
 * library passes them to ext2fs_open2()/ext2fs_initialize() itself.
 */
#define XIPIO_PREFIX "xipseg:"

int xip_io_register(struct xip_seg *seg, char *buf, size_t len)
{
	int n = snprintf(buf, len, XIPIO_PREFIX "%p", (void *)seg);

	if (n < 0 || (size_t)n >= len)
		return xip_error(-ENAMETOOLONG, "%s: channel name too long",
				 seg->path);
	return 0;
}

/* The segment a name of xip_io_register() gives, NULL if not one. */
static struct xip_seg *lookup(const char *name)
{
	char again[64];
	const char *end;
	void *p = NULL;
	size_t len;
	int n = 0;

	if (strncmp(name, XIPIO_PREFIX, strlen(XIPIO_PREFIX)))
		return NULL;
	end = strchr(name, '?');
	len = end ? (size_t)(end - name) : strlen(name);
	if (sscanf(name, XIPIO_PREFIX "%p%n", &p, &n) != 1 || !p ||
	    (size_t)n != len)
		return NULL;
	/* only the form xip_io_register writes */
	snprintf(again, sizeof(again), XIPIO_PREFIX "%p", p);
	if (strlen(again) != len || strncmp(again, name, len))
		return NULL;
	return p;
}

struct xip_seg *xip_io_segment(io_channel channel)
{
	struct xipio_private *priv;

	if (!channel || channel->manager != xip_io_manager)
		return NULL;
	priv = channel->private_data;
	return priv->seg;
}

static errcode_t xipio_open(const char *name, int flags, io_channel *channel)
{
	struct xipio_private *priv = NULL;
	struct xip_seg *seg;
	io_channel io = NULL;
	errcode_t ret;

	if (!name)
		return EXT2_ET_BAD_DEVICE_NAME;
	seg = lookup(name);
	if (!seg)
		return EXT2_ET_BAD_DEVICE_NAME;
	if ((flags & IO_FLAG_RW) && !seg->writable)
		return EROFS;
	ret = ext2fs_get_memzero(sizeof(*io), &io);
	if (ret)
		return ret;
	ret = ext2fs_get_memzero(sizeof(*priv), &priv);
	if (ret)
		goto fail;
	ret = ext2fs_get_mem(strlen(name) + 1, &io->name);
	if (ret)
		goto fail;
	strcpy(io->name, name);
	io->magic = EXT2_ET_MAGIC_IO_CHANNEL;
	io->manager = xip_io_manager;
	io->block_size = 1024;
	io->refcount = 1;
	io->flags = CHANNEL_FLAGS_DISCARD_ZEROES;
	priv->seg = seg;
	priv->stats.num_fields = 2;
	io->private_data = priv;
	*channel = io;
	return 0;
fail:
	ext2fs_free_mem(&priv);
	ext2fs_free_mem(&io);
	return ret;
}

static errcode_t xipio_close(io_channel channel)
{
	if (--channel->refcount > 0)
		return 0;
	ext2fs_free_mem(&channel->private_data);
	ext2fs_free_mem(&channel->name);
	ext2fs_free_mem(&channel);
	return 0;
}

static errcode_t xipio_set_blksize(io_channel channel, int blksize)
{
	if (blksize <= 0)
		return EXT2_ET_INVALID_ARGUMENT;
	channel->block_size = blksize;
	return 0;
}

/* Byte range of a block request; counts below zero are byte counts. */
static errcode_t xipio_span(io_channel channel, unsigned long long block,
			    int count, uint64_t *off, uint64_t *len)
{
	uint64_t bs = (uint64_t)channel->block_size;

	*len = count < 0 ? (uint64_t)-(int64_t)count : (uint64_t)count * bs;
	if (block > UINT64_MAX / bs)
		return EXT2_ET_LLSEEK_FAILED;
	*off = block * bs;
	return 0;
}

/*
 * pread(2) of a checked range: true when done, false to copy from the
 * mapping instead (device DAX, or a descriptor that cannot be read).
 */
static bool pio_read(struct xip_seg *seg, uint64_t off, void *data,
		     uint64_t len)
{
	return seg->kind != XIP_SEG_DAX &&
	       xip_pread_full(seg->fd, data, len, off) == (ssize_t)len;
}

static errcode_t xipio_read_blk64(io_channel channel, unsigned long long block,
				  int count, void *data)
{
	struct xipio_private *priv = channel->private_data;
	uint64_t off, len;
	errcode_t ret;
	void *src;

	ret = xipio_span(channel, block, count, &off, &len);
	if (ret)
		return ret;
	if (xip_seg_range(priv->seg, off, len, &src)) {
		if (channel->read_error)
			return channel->read_error(channel, block, count, data,
						   len, 0, EXT2_ET_SHORT_READ);
		return EXT2_ET_SHORT_READ;
	}
	if (!priv->pio || !pio_read(priv->seg, off, data, len))
		memcpy(data, src, len);
	priv->stats.bytes_read += len;
	return 0;
}

static errcode_t xipio_read_blk(io_channel channel, unsigned long block,
				int count, void *data)
{
	return xipio_read_blk64(channel, block, count, data);
}

static errcode_t xipio_write_bytes(io_channel channel, uint64_t off,
				   uint64_t len, const void *data)
{
	struct xipio_private *priv = channel->private_data;
	void *dst;

	if (!priv->seg->writable)
		return EXT2_ET_RO_FILSYS;
	if (xip_seg_range(priv->seg, off, len, &dst))
		return EXT2_ET_SHORT_WRITE;
	priv->stats.bytes_written += len;
	/* EINVAL on hugetlbfs: through the mapping */
	if (priv->atomic && priv->seg->kind != XIP_SEG_DAX &&
	    !xip_pwrite_all(priv->seg->fd, data, len, off))
		return 0;
	memcpy(dst, data, len);
	return 0;
}

static errcode_t xipio_write_blk64(io_channel channel, unsigned long long block,
				   int count, const void *data)
{
	uint64_t off, len;
	errcode_t ret;

	ret = xipio_span(channel, block, count, &off, &len);
	if (ret)
		return ret;
	ret = xipio_write_bytes(channel, off, len, data);
	if (ret && channel->write_error)
		return channel->write_error(channel, block, count, data, len,
					    0, ret);
	return ret;
}

static errcode_t xipio_write_blk(io_channel channel, unsigned long block,
				 int count, const void *data)
{
	return xipio_write_blk64(channel, block, count, data);
}

static errcode_t xipio_write_byte(io_channel channel, unsigned long offset,
				  int size, const void *data)
{
	if (size < 0)
		return EXT2_ET_INVALID_ARGUMENT;
	return xipio_write_bytes(channel, offset, (uint64_t)size, data);
}

static errcode_t xipio_flush(io_channel channel)
{
	struct xipio_private *priv = channel->private_data;

	return xip_seg_sync(priv->seg) ? EXT2_ET_SHORT_WRITE : 0;
}

static errcode_t xipio_set_option(io_channel channel, const char *option,
				  const char *arg)
{
	struct xipio_private *priv = channel->private_data;

	if (!strcmp(option, "atomic") && !arg) {
		priv->atomic = true;
		return 0;
	}
	if (!strcmp(option, "pio") && !arg) {
		priv->atomic = priv->pio = true;
		return 0;
	}
	return EXT2_ET_INVALID_ARGUMENT;
}

static errcode_t xipio_get_stats(io_channel channel, io_stats *stats)
{
	struct xipio_private *priv = channel->private_data;

	if (stats)
		*stats = &priv->stats;
	return 0;
}

/* Zeros at @off (@p in the mapping): written with pwrite(2) under "pio". */
static errcode_t zero_bytes(io_channel channel, uint64_t off, uint64_t len,
			    uint8_t *p)
{
	static const uint8_t zero[4096];
	struct xipio_private *priv = channel->private_data;
	errcode_t ret;

	if (!priv->pio) {
		memset(p, 0, len);
		return 0;
	}
	while (len) {
		uint64_t n = len < sizeof(zero) ? len : sizeof(zero);

		ret = xipio_write_bytes(channel, off, n, zero);
		if (ret)
			return ret;
		off += n;
		len -= n;
	}
	return 0;
}

/*
 * Zero a range.  On file-backed segments the page-aligned middle is
 * punched out (it then reads as zeros and occupies nothing), so zeroing
 * inode tables of a sparse image keeps it sparse; the rest is memset.
 */
static errcode_t xipio_zeroout(io_channel channel, unsigned long long block,
			       unsigned long long count)
{
	struct xipio_private *priv = channel->private_data;
	struct xip_seg *seg = priv->seg;
	uint64_t bs = (uint64_t)channel->block_size;
	uint64_t off, len, head, tail;
	errcode_t ret;
	uint8_t *p;

	if (!seg->writable)
		return EXT2_ET_RO_FILSYS;
	if (block > UINT64_MAX / bs || count > UINT64_MAX / bs)
		return EXT2_ET_INVALID_ARGUMENT;
	off = block * bs;
	len = count * bs;
	if (xip_seg_range(seg, off, len, (void **)&p))
		return EXT2_ET_SHORT_WRITE;
	head = (seg->page_size - off % seg->page_size) % seg->page_size;
	if ((seg->kind == XIP_SEG_FILE || seg->kind == XIP_SEG_SHM) &&
	    len > head + seg->page_size) {
		tail = (len - head) % seg->page_size;
		if (fallocate(seg->fd, FALLOC_FL_PUNCH_HOLE |
			      FALLOC_FL_KEEP_SIZE, (off_t)(off + head),
			      (off_t)(len - head - tail)) == 0) {
			ret = zero_bytes(channel, off, head, p);
			if (!ret)
				ret = zero_bytes(channel, off + len - tail,
						 tail, p + len - tail);
			return ret;
		}
	}
	return zero_bytes(channel, off, len, p);
}

static errcode_t xipio_discard(io_channel channel, unsigned long long block,
			       unsigned long long count)
{
	return xipio_zeroout(channel, block, count);
}

static errcode_t xipio_cache_readahead(io_channel channel,
				       unsigned long long block,
				       unsigned long long count)
{
	/* there is no cache: the data is already in memory */
	return 0;
}

static struct struct_io_manager xipio_manager = {
	.magic = EXT2_ET_MAGIC_IO_MANAGER,
	.name = "xiptool segment I/O manager",
	.open = xipio_open,
	.close = xipio_close,
	.set_blksize = xipio_set_blksize,
	.read_blk = xipio_read_blk,
	.write_blk = xipio_write_blk,
	.flush = xipio_flush,
	.write_byte = xipio_write_byte,
	.set_option = xipio_set_option,
	.get_stats = xipio_get_stats,
	.read_blk64 = xipio_read_blk64,
	.write_blk64 = xipio_write_blk64,
	.discard = xipio_discard,
	.cache_readahead = xipio_cache_readahead,
	.zeroout = xipio_zeroout,
};

io_manager xip_io_manager = &xipio_manager;
