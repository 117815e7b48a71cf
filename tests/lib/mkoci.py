#!/usr/bin/env python3
"""Write an OCI image layout of the given layers, by hand.

Usage: mkoci.py LAYOUT [--gzip] [--sparse BYTES] LAYER.tar...

LAYOUT gets oci-layout, index.json (one manifest, tag "t"), the manifest,
a minimal config and one blob per layer, in order (the first is the
base).  --gzip stores the layers gzip-compressed.  --sparse BYTES makes
the last layer's blob a file of BYTES (its archive, then a hole) that its
descriptor declares whole, under the digest of the archive alone: a
reader that hashes it to its end finds a mismatch.
"""
import gzip
import hashlib
import json
import os
import sys


def blob(layout, data):
    digest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(layout, "blobs", "sha256", digest), "wb") as f:
        f.write(data)
    return "sha256:" + digest


def main():
    args = sys.argv[1:]
    layout = args.pop(0)
    compress, sparse = False, 0
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt == "--gzip":
            compress = True
        elif opt == "--sparse":
            sparse = int(args.pop(0))
        else:
            raise SystemExit("mkoci.py: unknown option " + opt)
    os.makedirs(os.path.join(layout, "blobs", "sha256"), exist_ok=True)
    with open(os.path.join(layout, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    layers, diff_ids = [], []
    mt = "application/vnd.oci.image.layer.v1.tar"
    for i, path in enumerate(args):
        with open(path, "rb") as f:
            data = f.read()
        diff_ids.append("sha256:" + hashlib.sha256(data).hexdigest())
        if compress:
            data = gzip.compress(data, mtime=0)
        digest = blob(layout, data)
        size = len(data)
        if sparse and i == len(args) - 1:
            os.truncate(os.path.join(layout, "blobs", "sha256",
                                     digest[7:]), sparse)
            size = sparse
        layers.append({"mediaType": mt + ("+gzip" if compress else ""),
                       "digest": digest, "size": size})
    config = json.dumps({"architecture": "amd64", "os": "linux",
                         "rootfs": {"type": "layers",
                                    "diff_ids": diff_ids}}).encode()
    manifest = json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": blob(layout, config), "size": len(config)},
        "layers": layers}).encode()
    index = {"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": blob(layout, manifest), "size": len(manifest),
        "annotations": {"org.opencontainers.image.ref.name": "t"}}]}
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump(index, f)


main()
