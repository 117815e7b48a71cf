#!/bin/sh
# fuzz target oci: a manifest descriptor whose digest would name a path
# outside blobs/sha256 ("sha256:" then "../"), refused before any file is
# opened (digest_ok: 64 lowercase hex digits).
# Writes the input (fuzz_oci.c's format) to $1.
printf '%s' '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:../../../../../../../../../../../../etc/passwd/../../../../../..","size":1}]}' > "$1"
