#!/usr/bin/env python3
# Seed corpora of the fuzz targets "tar" and "oci" (called by seeds.sh):
#
#   seeds.py tar OUTDIR TMPDIR    small archives of python's tarfile (ustar,
#                                 GNU long names, pax headers and extended
#                                 attributes, OCI whiteouts) and of GNU tar
#                                 (sparse members of every sparse format)
#   seeds.py oci OUTDIR TMPDIR    OCI layouts made by umoci (when it is
#                                 installed) and by hand, as the input of
#                                 fuzz_oci.c: index.json, then the blobs,
#                                 between lines "@@@@", digests and sizes
#                                 of the blobs as "@dK" and "@sK"
#
# Fixed times, owners and names (but GNU tar names a pax sparse member
# GNUSparseFile.PID: those seeds differ from one run to the next).
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile

MTIME = 1700000000
SEP = b"\n@@@@\n"


def member(name, kind=tarfile.REGTYPE, data=b"", **kw):
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.mtime = kw.pop("mtime", MTIME)
    ti.mode = kw.pop("mode", 0o755 if kind == tarfile.DIRTYPE else 0o644)
    ti.uid = kw.pop("uid", 0)
    ti.gid = kw.pop("gid", 0)
    for k, v in kw.items():
        setattr(ti, k, v)
    if kind == tarfile.REGTYPE:
        ti.size = len(data)
    return ti, data


def archive(members, fmt=tarfile.USTAR_FORMAT, pax=None):
    """The archive, cut after its end-of-archive blocks (no padding)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt,
                      pax_headers=pax or {}) as tf:
        for ti, data in members:
            tf.addfile(ti, io.BytesIO(data) if data else None)
        end = tf.offset
    return buf.getvalue()[:end + 1024]


def tar_seeds(out, tmp):
    w = {}
    w["ustar-types"] = archive([
        member("./", tarfile.DIRTYPE, mode=0o700),
        member("dir/", tarfile.DIRTYPE),
        member("dir/file", data=b"hello, xip\n", uid=1000, gid=100),
        member("dir/setuid", data=b"#!/bin/sh\n", mode=0o4755),
        member("dir/link", tarfile.SYMTYPE, linkname="file"),
        member("dir/hard", tarfile.LNKTYPE, linkname="dir/file"),
        member("fifo", tarfile.FIFOTYPE),
        member("null", tarfile.CHRTYPE, devmajor=1, devminor=3),
        member("sda", tarfile.BLKTYPE, devmajor=8, devminor=0),
        member("implicit/parent/file", data=b"x"),
        member("dir/file", data=b"replaced\n"),
        member("/abs/./name//x", data=b"abs"),
    ])
    w["gnu-long-names"] = archive([
        member("d" * 90 + "/" + "n" * 120, data=b"long\n"),
        member("l" * 110, tarfile.SYMTYPE, linkname="t" * 300),
        member("h" * 150, tarfile.LNKTYPE,
               linkname="d" * 90 + "/" + "n" * 120),
    ], fmt=tarfile.GNU_FORMAT)
    xattr = {"SCHILY.xattr.user.comment": "seed",
             "SCHILY.xattr.security.capability":
                 "\x01\x00\x00\x02\x00\x04\x00\x00" + "\x00" * 12,
             "SCHILY.xattr.trusted.x": "t",
             "SCHILY.xattr.system.posix_acl_access":
                 "\x02\x00\x00\x00\x01\x00\x06\x00\xff\xff\xff\xff",
             "SCHILY.xattr.other.ignored": "o"}
    w["pax-xattrs-times"] = archive([
        member("f", data=b"pax\n", pax_headers=dict(xattr),
               mtime=MTIME + 0.25),
        member("p" * 200 + "/q", data=b"deep\n",
               pax_headers={"atime": "1600000000.5", "uid": "70000",
                            "gid": "70000", "uname": "someone"}),
        member("dir", tarfile.DIRTYPE,
               pax_headers={"SCHILY.xattr.user.d": "dir"}),
        member("dir", tarfile.DIRTYPE, mode=0o711),
    ], fmt=tarfile.PAX_FORMAT, pax={"comment": "global header"})
    w["oci-whiteouts"] = archive([
        member("etc/", tarfile.DIRTYPE),
        member("etc/motd", data=b"hi\n"),
        member("etc/.wh.motd"),
        member("opq/", tarfile.DIRTYPE),
        member("opq/.wh..wh..opq"),
        member("opq/new", data=b"new\n"),
        member(".wh.gone"),
        member("nodir/.wh.x"),
        member("f2d", data=b"file\n"),
        member("f2d/", tarfile.DIRTYPE),
        member("d2f/", tarfile.DIRTYPE),
        member("d2f/x", data=b"x"),
        member("d2f", data=b"now a file\n"),
    ])
    w["hostile-names"] = archive([
        member("ok", data=b"ok"),
        member("a/../../etc/passwd", data=b"no"),
    ])
    # each refused member after a good one: the refusal's own path
    for name, bad, fmt in (
            ("hl-dir", member("hl", tarfile.LNKTYPE, linkname="dir"),
             tarfile.USTAR_FORMAT),
            ("hl-missing", member("hl", tarfile.LNKTYPE,
                                  linkname="missing"), tarfile.USTAR_FORMAT),
            ("hl-up", member("hl", tarfile.LNKTYPE, linkname="../x"),
             tarfile.USTAR_FORMAT),
            ("long-component", member("n" * 300, data=b"long"),
             tarfile.GNU_FORMAT),
            ("empty-symlink", member("sl", tarfile.SYMTYPE, linkname=""),
             tarfile.USTAR_FORMAT),
            ("not-a-dir", member("file/x", data=b"x"),
             tarfile.USTAR_FORMAT)):
        w["hostile-" + name] = archive([member("dir/", tarfile.DIRTYPE),
                                        member("file", data=b"f"), bad],
                                       fmt=fmt)
    w["ustar-types.gz"] = gzip.compress(w["ustar-types"], mtime=0)
    for name, data in w.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    gnu_tar_sparse(out, tmp)


def gnu_tar_sparse(out, tmp):
    """Sparse members as GNU tar writes them (old GNU and pax 0.0-1.0)."""
    src = os.path.join(tmp, "sparse-src")
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, "sparse"), "wb") as f:
        f.write(b"head")
        f.seek(64 * 1024)
        f.write(b"middle")
        f.seek(300 * 1024)
        f.write(b"tail")
    with open(os.path.join(src, "hole-at-end"), "wb") as f:
        f.write(b"data")
        f.truncate(40 * 1024)
    os.utime(os.path.join(src, "sparse"), (MTIME, MTIME))
    os.utime(os.path.join(src, "hole-at-end"), (MTIME, MTIME))
    for name, opts in (("gnu-sparse", ["--format=gnu"]),
                       ("pax-sparse-0.0", ["--format=posix",
                                           "--sparse-version=0.0"]),
                       ("pax-sparse-0.1", ["--format=posix",
                                           "--sparse-version=0.1"]),
                       ("pax-sparse-1.0", ["--format=posix",
                                           "--sparse-version=1.0"])):
        dst = os.path.join(out, name)
        cmd = ["tar", "-C", src, "--sparse", "-b", "1", "--numeric-owner",
               "--owner=0", "--group=0", "--mtime=@%d" % MTIME] + opts + \
              ["-cf", dst, "sparse", "hole-at-end"]
        if "--format=posix" in opts:
            cmd[1:1] = ["--pax-option=exthdr.name=%d/PaxHeaders/%f,"
                        "delete=atime,delete=ctime"]
        if subprocess.call(cmd, stderr=subprocess.DEVNULL) != 0:
            try:
                os.unlink(dst)
            except OSError:
                pass


# ---- OCI layouts ---------------------------------------------------------

MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_TAR = "application/vnd.oci.image.layer.v1.tar"


def compact(obj):
    return json.dumps(obj, separators=(",", ":"), sort_keys=True).encode()


def fuzz_input(parts):
    return SEP.join(parts)


def desc(mt, k, **kw):
    """A descriptor of part K by placeholders; "size" filled in later."""
    d = {"mediaType": mt, "digest": "@d%d" % k, "size": "@@s%d@@" % k}
    d.update(kw)
    return d


def doc(obj):
    text = compact(obj)
    for k in range(1, 10):
        text = text.replace(b'"@@s%d@@"' % k, b"@s%d" % k)
    return text


def config(arch="amd64"):
    return compact({"architecture": arch, "os": "linux",
                    "config": {"Env": ["PATH=/bin"], "Cmd": ["/bin/sh"]},
                    "rootfs": {"type": "layers", "diff_ids": []}})


def hand_layouts(out):
    layer1 = archive([member("bin/", tarfile.DIRTYPE),
                      member("bin/sh", data=b"\x7fELF", mode=0o755),
                      member("etc/motd", data=b"hi\n"),
                      member("gone", data=b"x")])
    layer2 = archive([member(".wh.gone"), member("etc/.wh..wh..opq"),
                      member("etc/new", data=b"new\n")])
    ref = {"org.opencontainers.image.ref.name": "latest"}
    plat = {"os": "linux", "architecture": "amd64"}
    # index -> manifest -> config, two uncompressed layers (tagged)
    man = doc({"schemaVersion": 2, "mediaType": MT_MANIFEST,
               "config": desc(MT_CONFIG, 2),
               "layers": [desc(MT_TAR, 3), desc(MT_TAR, 4)]})
    idx = doc({"schemaVersion": 2, "manifests": [
        desc(MT_MANIFEST, 1, annotations=ref)]})
    seeds = {"hand-two-layers": [idx, man, config(), layer1, layer2]}
    # index -> image index of two platforms -> manifest (gzip layer)
    man = doc({"schemaVersion": 2, "mediaType": MT_MANIFEST,
               "config": desc(MT_CONFIG, 3),
               "layers": [desc(MT_TAR + "+gzip", 4)]})
    arm = dict(plat, architecture="arm64", variant="v8")
    nested = doc({"schemaVersion": 2, "mediaType": MT_INDEX, "manifests": [
        desc(MT_MANIFEST, 2, platform=plat),
        desc(MT_MANIFEST, 2, platform=arm)]})
    idx = doc({"schemaVersion": 2, "manifests": [
        desc(MT_INDEX, 1, annotations=ref)]})
    seeds["hand-image-index"] = [idx, nested, man, config(),
                                 gzip.compress(layer1, mtime=0)]
    # two tags, two platforms, a docker layer type
    man = doc({"schemaVersion": 2, "mediaType": MT_MANIFEST,
               "config": desc(MT_CONFIG, 2),
               "layers": [desc("application/vnd.docker.image.rootfs."
                               "diff.tar.gzip", 3)]})
    idx = doc({"schemaVersion": 2, "manifests": [
        desc(MT_MANIFEST, 1, platform=plat, annotations=ref),
        desc(MT_MANIFEST, 1, platform=arm,
             annotations={"org.opencontainers.image.ref.name": "arm"})]})
    seeds["hand-two-tags"] = [idx, man, config(),
                              gzip.compress(layer2, mtime=0)]
    for name, parts in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(fuzz_input(parts))


def blob(layout, digest):
    with open(os.path.join(layout, "blobs", "sha256",
                           digest.split(":", 1)[1]), "rb") as f:
        return f.read()


def from_layout(layout, tag, placeholders):
    """The input of a layout's tag: its files as they are, or with the
    digests and sizes as placeholders (what mutations keep valid)."""
    with open(os.path.join(layout, "index.json"), "rb") as f:
        index_raw = f.read()
    index = json.loads(index_raw)
    md = [m for m in index["manifests"]
          if m.get("annotations", {}).get(
              "org.opencontainers.image.ref.name") == tag][0]
    man_raw = blob(layout, md["digest"])
    man = json.loads(man_raw)
    descs = [man["config"]] + man["layers"]
    blobs = [blob(layout, d["digest"]) for d in descs]
    if not placeholders:
        return fuzz_input([index_raw, man_raw] + blobs)
    index["manifests"] = [dict(md, digest="@d1", size="@@s1@@")]
    for k, d in enumerate(descs):
        d["digest"] = "@d%d" % (k + 2)
        d["size"] = "@@s%d@@" % (k + 2)
    return fuzz_input([doc(index), doc(man)] + blobs)


def umoci_layouts(out, tmp):
    if not shutil.which("umoci"):
        return
    lay = os.path.join(tmp, "L")
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(MTIME))

    def run(*args):
        subprocess.check_call(("umoci",) + args, env=env, cwd=tmp,
                              stdout=subprocess.DEVNULL)

    run("init", "--layout", lay)
    run("new", "--image", lay + ":old")
    run("unpack", "--rootless", "--image", lay + ":old", "b")
    root = os.path.join(tmp, "b", "rootfs")
    os.makedirs(os.path.join(root, "etc"))
    os.makedirs(os.path.join(root, "gone"))
    with open(os.path.join(root, "etc", "motd"), "w") as f:
        f.write("hi\n")
    os.link(os.path.join(root, "etc", "motd"),
            os.path.join(root, "etc", "motd.hl"))
    os.symlink("motd", os.path.join(root, "etc", "sl"))
    with open(os.path.join(root, "gone", "f"), "w") as f:
        f.write("x\n")
    run("repack", "--image", lay + ":old", "b")
    shutil.rmtree(os.path.join(root, "gone"))
    with open(os.path.join(root, "new"), "w") as f:
        f.write("new\n")
    run("repack", "--image", lay + ":latest", "b")
    for tag in ("old", "latest"):
        with open(os.path.join(out, "umoci-" + tag), "wb") as f:
            f.write(from_layout(lay, tag, True))
    with open(os.path.join(out, "umoci-literal"), "wb") as f:
        f.write(from_layout(lay, "latest", False))


def main():
    kind, out, tmp = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    if kind == "tar":
        tar_seeds(out, tmp)
    else:
        hand_layouts(out)
        umoci_layouts(out, tmp)


if __name__ == "__main__":
    main()
