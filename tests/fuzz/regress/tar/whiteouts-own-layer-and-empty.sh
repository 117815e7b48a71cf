#!/bin/sh
# fuzz target tar (read as layer 1, then again as layer 2): whiteouts of
# names their own layer gave (they stay: whiteouts remove what lower
# layers gave), an opaque whiteout of a directory that is empty below and
# of one whose last entry is the lower layer's, a whiteout of the opaque
# marker's own directory.  Pinned: the walk over a directory's entries
# while they are removed is where an opaque whiteout can skip an entry or
# read past the end.
# Writes the input to $1.
python3 - "$1" <<'PY'
import io, sys, tarfile
def m(name, kind=tarfile.REGTYPE, data=b""):
    ti = tarfile.TarInfo(name)
    ti.type, ti.mtime, ti.size = kind, 1700000000, len(data)
    return ti, io.BytesIO(data) if data else None
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
    for ti, f in (m("own", data=b"x"), m(".wh.own"),
                  m("empty/", tarfile.DIRTYPE), m("empty/.wh..wh..opq"),
                  m("last/", tarfile.DIRTYPE), m("last/a", data=b"a"),
                  m("last/z", data=b"z"), m("last/.wh..wh..opq"),
                  m("last/new", data=b"n"), m("gone/", tarfile.DIRTYPE),
                  m("gone/.wh..wh..opq"), m(".wh.gone")):
        t.addfile(ti, f)
    end = t.offset
open(sys.argv[1], "wb").write(buf.getvalue()[:end + 1024])
PY
