#!/usr/bin/env bash
# Builds what the VM scenarios copy into the guest, into target/vm/:
# a static (glibc, crt-static) release oomwarden and cri-driver, the static C helpers, and the
# container images of the CRI scenarios (images/pause.tar, images/hog.tar).
# Prints the output directory.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/target/vm"
mkdir -p "$out"
command -v gcc >/dev/null || { echo "build.sh: installing gcc" >&2; apt-get install -y --no-install-recommends gcc libc6-dev >&2; }
for h in hog service canary pause reclaim; do
    src="$root/tests/vm/helpers/$h.c"
    if [[ ! -x $out/$h || $src -nt $out/$h ]]; then
        gcc -static -O2 -Wall -o "$out/$h" "$src" >&2
    fi
done
bin="$("$root/scripts/build-static" -p oomwarden -p oomwarden-cri-driver)"
cp "$bin/oomwarden" "$out/oomwarden"
cp "$bin/cri-driver" "$out/cri-driver"
"$root/tests/vm/cri/images.sh" "$out/images" "pause=$out/pause" "hog=$out/hog" >&2
echo "$out"
