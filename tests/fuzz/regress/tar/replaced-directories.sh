#!/bin/sh
# fuzz target tar: a directory replaced by a file while names below it
# are still to come, a file replaced by a directory, a hard link to a
# name a later member replaces, and a member naming the directory it is
# in ("d/.", "./d/./").  Pinned: what a replaced subtree's link counts
# and counted bytes become (tar_unlink_tree), in a plain archive (refused
# there) and as OCI layers.
# Writes the input to $1.
python3 - "$1" <<'PY'
import io, sys, tarfile
def m(name, kind=tarfile.REGTYPE, data=b"", link=""):
    ti = tarfile.TarInfo(name)
    ti.type, ti.mtime, ti.size, ti.linkname = kind, 1700000000, len(data), link
    return ti, io.BytesIO(data) if data else None
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
    for ti, f in (m("d/", tarfile.DIRTYPE), m("d/f", data=b"f"),
                  m("d/sub/x", data=b"x"), m("h", tarfile.LNKTYPE, link="d/f"),
                  m("d/.", tarfile.DIRTYPE), m("./d/./", tarfile.DIRTYPE),
                  m("f2d", data=b"file"), m("f2d/", tarfile.DIRTYPE),
                  m("d", data=b"now a file"), m("d/again", data=b"a"),
                  m("h", data=b"replaced link")):
        t.addfile(ti, f)
    end = t.offset
open(sys.argv[1], "wb").write(buf.getvalue()[:end + 1024])
PY
