#!/bin/sh
# fuzz target oci: a manifest whose layer descriptor gives a size past
# the blob's (2^40 bytes for a blob of a few hundred: read to its end,
# then refused as a size mismatch, the reader's own error kept second).
# Writes the input (fuzz_oci.c's format: files between "@@@@" lines,
# "@dK"/"@sK" the digest and size of file K) to $1.
mm='"mediaType":"application/vnd.oci.image.manifest.v1+json"'
lt='"mediaType":"application/vnd.oci.image.layer.v1.tar"'
{
	printf '{"schemaVersion":2,"manifests":[{%s,"digest":"@d1","size":@s1}]}\n@@@@\n' "$mm"
	printf '{"schemaVersion":2,%s,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"@d2","size":@s2},"layers":[{%s,"digest":"@d3","size":1099511627776}]}\n@@@@\n' "$mm" "$lt"
	printf '{"architecture":"amd64","os":"linux"}\n@@@@\n'
	printf 'not a tar archive, and shorter than its size'
} > "$1"
