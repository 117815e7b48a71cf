#!/usr/bin/env python3
"""blockmap.py XIPTOOL IMAGE PATH: xiptool's block map of PATH is debugfs's,
block for block; `Data blocks` counts those blocks and i_blocks covers them
and the indirect blocks, nothing else.  Exit 1 with the difference."""
import re
import subprocess
import sys

xiptool, img, path = sys.argv[1:4]
ours = subprocess.run([xiptool, "stat", img, path], capture_output=True,
                      text=True, check=True).stdout
theirs = subprocess.run(["debugfs", "-R", "stat %s" % path, img],
                        capture_output=True, text=True, check=True).stdout


def field(name):
    return re.search(r"^%s:\s*(.*)$" % name, ours, re.M).group(1).strip()


mine = {}
runs = field("Block runs")
for run in ([] if runs in ("", "-") else runs.split(",")):
    lo_hi, p = run.split("@")
    lo, _, hi = lo_hi.partition("-")
    lo, hi, p = int(lo), int(hi or lo), int(p.partition("-")[0])
    for k in range(lo, hi + 1):
        mine[k] = p + k - lo
want, meta = {}, 0
m = re.search(r"^(BLOCKS|EXTENTS):\n(.*?)(^TOTAL:|\Z)", theirs, re.M | re.S)
if m:
    listing = m.group(2)
    for tag, phys in re.findall(r"\(([^)]*)\):([0-9-]+)", listing):
        plo, _, phi = phys.partition("-")
        plo, phi = int(plo), int(phi or plo)
        if tag in ("IND", "DIND", "TIND") or tag.startswith("ETB"):
            meta += phi - plo + 1
            continue
        lo, _, hi = tag.partition("-")
        for k in range(int(lo), int(hi or lo) + 1):
            want[k] = plo + k - int(lo)
if mine != want:
    diff = sorted(set(mine.items()) ^ set(want.items()))[:10]
    sys.exit("block maps differ (file block, block): %s" % diff)
if int(field("Data blocks")) != len(want):
    sys.exit("data blocks %s, debugfs maps %d" % (field("Data blocks"), len(want)))
if int(field("Sectors")) != (len(want) + meta) * 8:
    sys.exit("i_blocks %s sectors for %d data + %d indirect blocks"
             % (field("Sectors"), len(want), meta))
