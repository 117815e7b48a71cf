#!/bin/sh
# fuzz target oci: an image index inside an image index inside index.json
# (buildoci.c follows one level of image index, then refuses).
# Writes the input (fuzz_oci.c's format: files between "@@@@" lines,
# "@dK"/"@sK" the digest and size of file K) to $1.
mi='"mediaType":"application/vnd.oci.image.index.v1+json"'
desc() { printf '{%s,"digest":"@d%s","size":@s%s}' "$mi" "$1" "$1"; }
{
	printf '{"schemaVersion":2,"manifests":[%s]}\n@@@@\n' "$(desc 1)"
	printf '{"schemaVersion":2,%s,"manifests":[%s]}\n@@@@\n' "$mi" "$(desc 2)"
	printf '{"schemaVersion":2,%s,"manifests":[%s]}\n@@@@\n' "$mi" "$(desc 3)"
	printf '{"schemaVersion":2,%s,"manifests":[]}' "$mi"
} > "$1"
