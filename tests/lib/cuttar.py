#!/usr/bin/env python3
"""Cut a tar archive where its end-of-archive blocks would matter.

Usage: cuttar.py IN OUT HOW

OUT gets the bytes of the tar archive IN up to a place of its last member:
  end     right after the member's data (no padding, no end-of-archive
          blocks: what umoci insert writes)
  pad     half of the padding after it (the data must need some)
  inside  one byte before the end of the data (a member cut short)
  header  right after the member's header (its data all missing)
"""
import sys
import tarfile


def main():
    src, out, how = sys.argv[1:4]
    with tarfile.open(src) as t:
        last = t.getmembers()[-1]
    end = last.offset_data + last.size
    pad = -end % 512
    assert how != "pad" or pad > 1
    cut = {"end": end, "pad": end + pad // 2, "inside": end - 1,
           "header": last.offset_data}[how]
    with open(src, "rb") as f:
        data = f.read()
    assert cut <= len(data)
    with open(out, "wb") as f:
        f.write(data[:cut])


main()
