/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Internal interface of the NBD client (nbdpull.c): pulling an export
 * into a segment file for xip_attach.  Not part of the public API.
 */
#ifndef XIP_NBD_INT_H
#define XIP_NBD_INT_H


struct xip_nbd;
/*
 * Connect to the export @uri (libnbd) and read its size.  The export
 * must start with an ext2 superblock (-EMEDIUMTYPE otherwise).
 * -EPROTONOSUPPORT when built without libnbd; a server that cannot be
 * reached gives -ECONNREFUSED (or its errno) with libnbd's reason.
 * Like the pull, it gives up on a server that sends nothing for the
 * stall limit, @stall_ms (0: NBD_STALL_MS, 60 s), with -ETIMEDOUT naming
 * the step (each step must complete within it, however many bytes of it
 * arrive), and stops at once with -EINTR once xip_interrupted() (woken
 * by xip_interrupt_fd()).
 */
int xip_nbd_open(const char *uri, unsigned int stall_ms, struct xip_nbd **np,
		 uint64_t *size);
/*
 * Copy the whole export into @fd (at least that size already) with
 * requests in parallel: written with pwrite, or straight into @map (the
 * mapping of @fd, for hugetlbfs files) when not NULL.  Zero ranges the
 * server reports are skipped (@fd must read as zeros there).  With
 * @align (a page or huge page size; 0: none), the memory of each request
 * is reserved (fallocate, in whole units of @align) before it is sent,
 * -ENOSPC when it cannot be; the zero ranges are not: the caller
 * reserves the rest once the pull succeeded.  Then check that @fd holds
 * an ext2 file system (@path names it).  With @vs (from
 * xip_verity_stream_open() over xip_nbd_read()) every block is hashed as
 * it arrives.  A server that fails or goes away gives -EIO (or the errno
 * it sent) naming the URI; -ETIMEDOUT when no request completes for the
 * stall limit (bytes trickling in do not count); xip_interrupted() stops
 * it with -EINTR.
 */
struct xip_verity_stream;
int xip_nbd_pull(struct xip_nbd *n, int fd, void *map, uint64_t align,
		 const char *path, struct xip_verity_stream *vs);
/*
 * Read @len (<= 2048) bytes at @off of the export into @buf, before the
 * pull (a verity check reads the superblocks ahead): 0, or -EIO (or the
 * errno the server sent), -ETIMEDOUT, -EINTR as xip_nbd_pull().  With a
 * verity check, xip_nbd_pull() hashes each request's bytes before it
 * writes them (requests of whole blocks), and the blocks of zero ranges
 * are known zeros.
 */
int xip_nbd_read(struct xip_nbd *n, void *buf, size_t len, uint64_t off);
void xip_nbd_close(struct xip_nbd *n);
/* Read @len bytes (any number) at @off, before a pull. */
int xip_nbd_pread(struct xip_nbd *n, void *buf, size_t len, uint64_t off);
/*
 * A lazy fill (attach --lazy) into @fd: the runs readers ask for on
 * @sock first (xip_fill_recv), then the rest in order, zero ranges
 * skipped; with @vs (its tree checked: xip_verity_stream_tree) each
 * block is checked before it is written; each block is marked in @fill
 * once written.  Blocks @fill has already are not asked for.  As
 * xip_nbd_pull() otherwise; a block that fails its check gives -EBADMSG
 * and its number in *@bad_block.
 */
struct xip_fill;
int xip_nbd_pull_lazy(struct xip_nbd *n, int fd, uint64_t align,
		      const char *path, struct xip_fill *fill, int sock,
		      struct xip_verity_stream *vs, uint64_t *bad_block);

#endif
