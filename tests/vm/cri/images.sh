#!/usr/bin/env bash
# images.sh OUTDIR NAME=STATIC_BINARY... -> one docker-archive per image, OUTDIR/NAME.tar,
# tagged oomwarden.test/NAME:1, entrypoint /BINARY: a single layer holding the binary. The VM
# has no registry; the scenarios import these with `ctr -n k8s.io images import`.
# Reproducible (sorted, owner 0, mtime 0): the same binary gives the same image ID.
set -euo pipefail
out=${1:?}; shift
mkdir -p "$out"
for spec in "$@"; do
    name=${spec%%=*} bin=${spec#*=}
    exe=$(basename "$bin")
    t=$(mktemp -d)
    mkdir -p "$t/layer" "$t/archive"
    install -m 0755 "$bin" "$t/layer/$exe"
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$t/layer" -cf "$t/layer.tar" "$exe"
    layer=$(sha256sum "$t/layer.tar" | cut -d' ' -f1)
    mkdir "$t/archive/$layer"
    mv "$t/layer.tar" "$t/archive/$layer/layer.tar"
    printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/%s"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
        "$exe" "$layer" > "$t/config.json"
    config=$(sha256sum "$t/config.json" | cut -d' ' -f1)
    mv "$t/config.json" "$t/archive/$config.json"
    printf '[{"Config":"%s.json","RepoTags":["oomwarden.test/%s:1"],"Layers":["%s/layer.tar"]}]' \
        "$config" "$name" "$layer" > "$t/archive/manifest.json"
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$t/archive" \
        -cf "$out/$name.tar" manifest.json "$config.json" "$layer"
    rm -rf "$t"
done
