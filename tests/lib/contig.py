#!/usr/bin/env python3
"""Check that every regular file of an image has contiguous data.

Usage: contig.py IMAGE MOUNTDIR [--align BYTES]

The inode numbers come from the mounted image (MOUNTDIR), the block lists
from debugfs ("stat <ino>": data blocks in file order; the indirect
blocks it lists as (IND), (DIND), (TIND) are left out).  A file passes when its data blocks are consecutive, or break
only where one block group ends and the next one's data begins.  With
--align, files of BYTES or more must start on a BYTES boundary.  Prints
"files N runs R splits S" and exits 1 after listing any offender.
"""
import os
import stat
import subprocess
import sys
import tempfile


def field(image, name):
    out = subprocess.run(["dumpe2fs", "-h", image], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        if line.startswith(name + ":"):
            return int(line.split(":", 1)[1])
    raise SystemExit("dumpe2fs: no field " + name)


def main():
    image, top = sys.argv[1], os.fsencode(sys.argv[2])
    align = 0
    if "--align" in sys.argv:
        align = int(sys.argv[sys.argv.index("--align") + 1])
    bpg = field(image, "Blocks per group")
    first = field(image, "First block")
    bs = field(image, "Block size")
    files = {}
    for dirpath, _, names in os.walk(top):
        for n in names:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                files[st.st_ino] = (p, st.st_size)
    with tempfile.NamedTemporaryFile("w", suffix=".cmd") as cmd:
        for ino in sorted(files):
            cmd.write("stat <%d>\n" % ino)
        cmd.flush()
        out = subprocess.run(["debugfs", "-f", cmd.name, image],
                             capture_output=True, text=True).stdout
    lists, cur = {}, None
    for line in out.splitlines():
        if line.startswith("debugfs: stat <"):
            cur = int(line[len("debugfs: stat <"):].rstrip(">"))
            lists[cur] = []
            continue
        if cur is None or not line.startswith("("):
            continue
        for tok in line.replace(",", " ").split():
            lo, _, phys = tok.partition("):")
            if not phys or not lo[1:2].isdigit():
                continue
            a, _, b = phys.partition("-")
            a = int(a)
            lists[cur] += list(range(a, int(b or a) + 1))
    bad = runs = splits = 0
    for ino, (path, size) in sorted(files.items()):
        blocks = lists.get(ino)
        if blocks is None:
            print("no block list for inode %d %r" % (ino, path))
            bad += 1
            continue
        if not blocks:
            continue
        runs += 1
        for a, b in zip(blocks, blocks[1:]):
            if b == a + 1:
                continue
            ga, gb = (a - first) // bpg, (b - first) // bpg
            if (a - first) % bpg == bpg - 1 and gb == ga + 1:
                runs += 1
                splits += 1
                continue
            print("inode %d %r: break %d -> %d inside a group" %
                  (ino, path, a, b))
            bad += 1
            break
        if align and size >= align and (blocks[0] * bs) % align:
            print("inode %d %r: starts at block %d, not %d-aligned" %
                  (ino, path, blocks[0], align))
            bad += 1
    print("files %d runs %d splits %d" % (len(files), runs, splits))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
