#!/usr/bin/env python3
"""e2fsck-leaks.py IMAGE: run e2fsck -fn on IMAGE and accept only what a
crash of an ordered writer may leave: blocks and inodes marked in use that
nothing uses (bitmap differences with '-' only), the free counts that
follow from them, and unattached zero-length inodes.  Exit 0 when the
image is clean or has leaks only, 1 (printing the rest) otherwise."""
import re
import subprocess
import sys

out = subprocess.run(["e2fsck", "-fn", sys.argv[1]], capture_output=True,
                     text=True)
if out.returncode == 0:
    sys.exit(0)
lines = out.stdout.splitlines()
bad = []
zero_len = set()
i = 0
ALLOWED = [
    r"^Pass \d[A-E]?: ",
    r"^$",
    r"^Fix\? no$",
    r"^Clear\? no$",
    r"^Connect to /lost\+found\? no$",
    r"^Free (blocks|inodes) count wrong( for group #\d+)? \(\d+, counted=\d+\)\.$",
    r"^.*: \*+ WARNING: Filesystem still has errors \*+$",
    r"^.*: \d+/\d+ files \(.*\), \d+/\d+ blocks$",
]
for line in lines:
    m = re.match(r"^Unattached zero-length inode (\d+)\.\s+Clear\? no$", line)
    if m:
        zero_len.add(m.group(1))
        continue
    m = re.match(r"^Unattached inode (\d+)$", line)
    if m and m.group(1) in zero_len:
        continue
    m = re.match(r"^(Block|Inode) bitmap differences:\s+(.*)$", line)
    if m:
        if all(t.startswith("-") for t in m.group(2).split()):
            continue
        bad.append(line)
        continue
    if any(re.match(p, line) for p in ALLOWED):
        continue
    bad.append(line)
if out.returncode not in (0, 4):
    bad.append("e2fsck exit status %d" % out.returncode)
if bad:
    print("e2fsck found more than leaks:", *bad, sep="\n  ")
    sys.exit(1)
sys.exit(0)
