#!/usr/bin/env python3
"""Generate a directory tree holding every kind of inode ext2 can store.

Usage: gentree.py DIR [--big] [--many N]

Regular files of awkward sizes (0, 1, block-1, block, block+1, needing
single and double indirect blocks), holes (leading, middle, trailing, all
hole), directories (nested, sticky, setgid, one with many entries), fast
and slow symlinks, hard links across directories, character and block
devices (small and large numbers), fifos, sockets, names of 1 and 255
bytes with spaces, newlines, high bytes and invalid UTF-8, odd owners and
modes (setuid, setgid, sticky), times before 1970 and with nanoseconds,
and user./trusted./security. extended attributes.  Device nodes, owners
and trusted. attributes need root and are skipped without it.  The
content is a fixed function of the names: two runs give the same tree.
"""
import os
import socket
import stat
import sys

ROOT = os.geteuid() == 0


def data(seed, size):
    """Deterministic bytes that do not compress to holes."""
    out = bytearray()
    x = (seed * 2654435761 + 12345) & 0xFFFFFFFF
    chunk = bytearray()
    for _ in range(4096):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        chunk.append((x >> 16) & 0xFF)
    while len(out) < size:
        out += chunk
        chunk = chunk[1:] + chunk[:1]
    return bytes(out[:size])


def write(path, size, seed=1):
    with open(path, "wb") as f:
        f.write(data(seed, size))


def sparse(path, size, pieces):
    """A file of @size with data only at (offset, length) @pieces."""
    with open(path, "wb") as f:
        f.truncate(size)
        for i, (off, length) in enumerate(pieces):
            f.seek(off)
            f.write(data(100 + i, length))


def settime(path, sec, nsec=0, follow=False):
    ns = sec * 1000000000 + nsec
    os.utime(path, ns=(ns, ns), follow_symlinks=follow)


def xattr(path, name, value, follow=True):
    try:
        os.setxattr(path, name, value, follow_symlinks=follow)
    except OSError:
        pass


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: gentree.py DIR [--big] [--many N]")
    top = os.fsencode(sys.argv[1])
    big = "--big" in sys.argv
    many = 700
    if "--many" in sys.argv:
        many = int(sys.argv[sys.argv.index("--many") + 1])
    os.makedirs(top, exist_ok=True)
    j = lambda *p: os.path.join(top, *[os.fsencode(x) if isinstance(x, str) else x for x in p])

    # regular files of awkward sizes
    os.mkdir(j("files"))
    for i, size in enumerate([0, 1, 4095, 4096, 4097, 12 * 4096,
                              12 * 4096 + 1, 100000, 5 * 1024 * 1024]):
        write(j("files", "size-%d" % size), size, seed=i)
    if big:
        write(j("files", "big-20M"), 20 * 1024 * 1024, seed=99)

    # holes
    os.mkdir(j("holes"))
    M = 1024 * 1024
    sparse(j("holes", "leading"), 3 * M, [(2 * M, 5000)])
    sparse(j("holes", "middle"), 3 * M, [(0, 8192), (2 * M + 4096, 4096)])
    sparse(j("holes", "trailing"), 6 * M, [(0, 70000)])
    sparse(j("holes", "all-hole"), 4 * M, [])
    sparse(j("holes", "indirect"), 20 * M, [(0, 4096), (5 * M, 4096),
                                             (19 * M, 4096)])

    # directories
    os.makedirs(j("dirs", "a", "b", "c", "d"))
    os.mkdir(j("dirs", "sticky"))
    os.chmod(j("dirs", "sticky"), 0o1777)
    os.mkdir(j("dirs", "setgid"))
    os.chmod(j("dirs", "setgid"), 0o2750)
    os.mkdir(j("dirs", "empty"))
    os.mkdir(j("dirs", "lost+found"))
    os.mkdir(j("many"))
    for i in range(many):
        with open(j("many", "entry-%05d" % i), "wb") as f:
            f.write(b"%d\n" % i)

    # symlinks
    os.mkdir(j("links"))
    os.symlink(b"../files/size-1", j("links", "fast"))
    os.symlink(b"x" * 59, j("links", "fast-59"))
    os.symlink(b"y" * 60, j("links", "slow-60"))
    os.symlink(b"/" + b"z/" * 1000, j("links", "slow-2001"))
    os.symlink(b"dangling", j("links", "dangling"))
    os.symlink(b"../dirs/a", j("links", "to-dir"))

    # hard links across directories
    os.mkdir(j("hard"))
    write(j("hard", "one"), 9000, seed=7)
    os.link(j("hard", "one"), j("hard", "two"))
    os.link(j("hard", "one"), j("dirs", "a", "three"))
    sparse(j("hard", "sparse-one"), 2 * M, [(M, 100)])
    os.link(j("hard", "sparse-one"), j("hard", "sparse-two"))

    # special files
    os.mkdir(j("special"))
    os.mkfifo(j("special", "fifo"))
    s = socket.socket(socket.AF_UNIX)
    s.bind(j("special", "socket"))
    s.close()
    if ROOT:
        os.mknod(j("special", "null"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.mknod(j("special", "sda"), 0o660 | stat.S_IFBLK, os.makedev(8, 0))
        os.mknod(j("special", "bigchr"), 0o600 | stat.S_IFCHR,
                 os.makedev(511, 1048575))
        os.mknod(j("special", "bigblk"), 0o640 | stat.S_IFBLK,
                 os.makedev(259, 300))
        os.link(j("special", "null"), j("special", "null-link"))

    # names
    os.mkdir(j("names"))
    for name in [b"a", b"n" * 255, b"with space", b"new\nline", b"tab\tx",
                 b"-dash", b"\xff\xfe invalid utf-8", "caf\u00e9".encode(),
                 "\u65e5\u672c".encode(), b"UPPER", b"lower", b"Zed", b"_u",
                 b".hidden", b"..dots", b"#hash", b"back\\slash"]:
        write(os.path.join(j("names"), name), len(name), seed=len(name))

    # modes and owners
    os.mkdir(j("modes"))
    for mode in [0o4755, 0o2755, 0o1755, 0o6711, 0o600, 0o444, 0o000, 0o777]:
        p = j("modes", "m%04o" % mode)
        write(p, 10, seed=mode)
        os.chmod(p, mode)
    if ROOT:
        for uid, gid in [(1, 2), (1234, 5678), (65534, 65534),
                         (100000, 200000), (4000000000, 3)]:
            p = j("modes", "owner-%d-%d" % (uid, gid))
            write(p, 3, seed=uid)
            os.chown(p, uid, gid)
        os.lchown(j("links", "fast"), 77, 88)
        os.chown(j("dirs", "a"), 10, 20)

    # extended attributes
    os.mkdir(j("xattr"))
    p = j("xattr", "small")
    write(p, 100, seed=3)
    xattr(p, "user.mime_type", b"text/plain")
    xattr(p, "user.empty", b"")
    p = j("xattr", "large")
    write(p, 100, seed=4)
    xattr(p, "user.big", bytes(range(256)) * 6)
    xattr(p, "user.second", b"2")
    xattr(j("xattr"), "user.dir", b"on a directory")
    if ROOT:
        xattr(p, "trusted.t", b"trusted value")
        xattr(j("xattr", "small"), "security.s", b"security value")

    # times: before 1970, with nanoseconds, on symlinks and directories
    settime(j("files", "size-1"), -86400 * 365, 0)
    settime(j("files", "size-4096"), 1000000000, 123456789)
    settime(j("links", "fast"), 1234567890, 0)
    for d in ["dirs", "holes", "links", "hard", "special", "names",
              "modes", "xattr", "many", "files"]:
        settime(j(d), 1500000000, 5)
    settime(top, 1600000000, 0)


if __name__ == "__main__":
    main()
