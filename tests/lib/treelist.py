#!/usr/bin/env python3
"""Print a canonical listing of a directory tree, one line per name.

Usage: treelist.py DIR [--holes] [--xattrs] [--no-lpf] [--no-ctime]

Each line: path, type, permission bits, uid, gid, nlink, mtime, ctime,
then per type: size and sha256 (regular files), target (symlinks),
major:minor (devices); a hard-link group is named by its first path.
--holes adds the data map from SEEK_DATA/SEEK_HOLE in 4 KiB blocks,
--xattrs the user., trusted. and security. attributes, --no-lpf leaves out
/lost+found (and its link from /).  Lines are sorted by the bytes of the path, so listings of
two trees compare with diff.
"""
import hashlib
import os
import stat
import sys


def data_map(path, size):
    runs = []
    fd = os.open(path, os.O_RDONLY)
    try:
        off = 0
        while off < size:
            try:
                d = os.lseek(fd, off, os.SEEK_DATA)
            except OSError:
                break
            h = os.lseek(fd, d, os.SEEK_HOLE)
            runs.append("%d-%d" % (d // 4096, (h + 4095) // 4096))
            off = h
    finally:
        os.close(fd)
    return ",".join(runs) or "none"


def xattrs(path):
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return "unsupported"
    out = []
    for n in sorted(names):
        if not n.startswith(("user.", "trusted.", "security.")):
            continue
        v = os.getxattr(path, n, follow_symlinks=False)
        out.append("%s=%s" % (n, hashlib.sha256(v).hexdigest()[:16]))
    return ";".join(out)


def main():
    top = os.fsencode(sys.argv[1])
    opts = set(sys.argv[2:])
    entries = []
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            entries.append(os.path.join(dirpath, name))
    entries.append(top)
    firsts = {}
    lines = []
    for p in sorted(entries):
        rel = b"/" if p == top else b"/" + os.path.relpath(p, top)
        if "--no-lpf" in opts and rel == b"/lost+found":
            continue
        st = os.lstat(p)
        mode = st.st_mode
        nlink = st.st_nlink
        if rel == b"/" and "--no-lpf" in opts and \
                os.path.isdir(os.path.join(top, b"lost+found")):
            nlink -= 1
        f = [repr(rel)[2:-1], oct(stat.S_IFMT(mode)), "%04o" % stat.S_IMODE(mode),
             str(st.st_uid), str(st.st_gid), "n%d" % nlink,
             "m%d" % (st.st_mtime_ns // 1000000000)]
        if "--no-ctime" not in opts:
            f.append("c%d" % (st.st_ctime_ns // 1000000000))
        if stat.S_ISREG(mode):
            with open(p, "rb") as fh:
                f.append("s%d" % st.st_size)
                f.append(hashlib.sha256(fh.read()).hexdigest())
            if "--holes" in opts:
                f.append("map=" + data_map(p, st.st_size))
        elif stat.S_ISLNK(mode):
            f.append("->" + repr(os.readlink(p))[2:-1])
        elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            f.append("%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev)))
        if not stat.S_ISDIR(mode) and st.st_nlink > 1:
            key = (st.st_dev, st.st_ino)
            firsts.setdefault(key, f[0])
            f.append("group=" + firsts[key])
        if "--xattrs" in opts:
            f.append("x:" + xattrs(p))
        lines.append(" ".join(f))
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
