#!/usr/bin/env python3
"""Lay out one file of an ext2 image contiguously, for tests.

    relayout.py IMAGE INODE

mke2fs -d (and the kernel) put a file's indirect block between its data
blocks 11 and 12, so a file longer than 12 blocks is in two runs.  When the
data and indirect blocks of the file together fill one range of blocks (as
on a freshly made image), this permutes their contents inside that range:
the data blocks first, in file order, then the indirect blocks.  The set of
blocks in use does not change, so bitmaps, counts and i_blocks stay right;
e2fsck -fn must still find the image clean.  Handles direct, indirect and
double indirect blocks; no checksums (plain ext2).
"""
import struct
import sys


def main():
    path, ino = sys.argv[1], int(sys.argv[2])
    f = open(path, 'r+b')

    def read(off, n):
        f.seek(off)
        return f.read(n)

    sb = read(1024, 1024)
    first_data, log_bs = struct.unpack_from('<II', sb, 20)
    ipg = struct.unpack_from('<I', sb, 40)[0]
    rev = struct.unpack_from('<I', sb, 76)[0]
    isz = struct.unpack_from('<H', sb, 88)[0] if rev else 128
    bs = 1024 << log_bs
    apb = bs // 4
    g, i = (ino - 1) // ipg, (ino - 1) % ipg
    gd = read((first_data + 1) * bs + 32 * g, 32)
    itable = struct.unpack_from('<I', gd, 8)[0]
    ioff = itable * bs + i * isz
    iblock = list(struct.unpack_from('<15I', read(ioff + 40, 60)))

    def ptrs(blk):
        return list(struct.unpack('<%dI' % apb, read(blk * bs, bs)))

    data, meta = [], []     # data: (lblk, pblk); meta: indirect blocks
    for n in range(12):
        if iblock[n]:
            data.append((n, iblock[n]))
    if iblock[12]:
        meta.append(iblock[12])
        for n, p in enumerate(ptrs(iblock[12])):
            if p:
                data.append((12 + n, p))
    if iblock[13]:
        meta.append(iblock[13])
        for k, ind in enumerate(ptrs(iblock[13])):
            if not ind:
                continue
            meta.append(ind)
            for n, p in enumerate(ptrs(ind)):
                if p:
                    data.append((12 + apb + k * apb + n, p))
    if iblock[14]:
        sys.exit('triple indirect blocks are not handled')
    blocks = sorted([p for _, p in data] + meta)
    start = blocks[0]
    if blocks != list(range(start, start + len(blocks))):
        sys.exit('the blocks of inode %d are not one range' % ino)
    data.sort()
    if [l for l, _ in data] != list(range(len(data))):
        sys.exit('inode %d has holes' % ino)

    content = {p: read(p * bs, bs) for p in blocks}
    new = {l: start + l for l, _ in data}
    nxt = start + len(data)
    out = {}
    for l, p in data:
        out[new[l]] = content[p]
    nblk = list(iblock)
    for n in range(min(12, len(data))):
        nblk[n] = new[n]

    def ind_block(first):
        tab = [new.get(first + n, 0) for n in range(apb)]
        return struct.pack('<%dI' % apb, *tab)

    if iblock[12]:
        nblk[12] = nxt
        out[nxt] = ind_block(12)
        nxt += 1
    if iblock[13]:
        dind = nxt
        nxt += 1
        tab = []
        for k in range(apb):
            first = 12 + apb + k * apb
            if first in new:
                out[nxt] = ind_block(first)
                tab.append(nxt)
                nxt += 1
            else:
                tab.append(0)
        out[dind] = struct.pack('<%dI' % apb, *tab)
        nblk[13] = dind
    assert sorted(out) == blocks
    for p, b in out.items():
        f.seek(p * bs)
        f.write(b)
    f.seek(ioff + 40)
    f.write(struct.pack('<15I', *nblk))
    f.close()


main()
