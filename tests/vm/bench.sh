#!/usr/bin/env bash
# The reaction benchmark: the same episode (see bench/episode.sh) under each contender (the
# kernel alone, earlyoom, nohang, oomd, oomwarden with the default configuration, with a
# memory-level trigger and with the recommended policy; lib.sh's start_contender), REPS times
# each, interleaved, one VM per run, on both page-reclaim modes. Prints a table of medians and
# writes target/vm/bench/reaction/results.json.
#   tests/vm/bench.sh [REPS=3]
#   CONTENDERS="earlyoom oomwarden-memory" tests/vm/bench.sh 1   # a subset
#   LRU=mglru tests/vm/bench.sh 3        # one page-reclaim mode (default: classic and mglru)
#   SHAPES="hog full-but-healthy" tests/vm/bench.sh 3
#   BENCH_OUT=DIR tests/vm/bench.sh 1    # results elsewhere (default target/vm/bench/reaction);
#   tests/vm/bench/summarize.py DIR... makes one table of several such runs
# SHAPES (default hog): hog (the episode: 450 MiB at once, then 5 MiB/s), slow-leak (600 MiB,
# then 1 MiB/s), full-but-healthy (S18: the node held at 90-95 % used, nothing growing, for
# 3 minutes: a kill there is a false kill), page-cache (S4: page-cache churn larger than RAM),
# fast-leak (16 MiB, then 40 MiB/s), cold-services (the hog beside services without a hot file
# working set); bench/shapes.sh.
# The peers are Debian 12's packages (earlyoom 1.7, nohang 0.2.0, oomd 0.5.0), unpacked into
# the cache and copied into the VM with their libraries (nohang with the host's Python 3 and
# its standard library); never installed on the host.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
reps=${1:-3}
bin="$("$here/build.sh")"
. "$here/bench/shapes.sh"
cache=${VMTEST_CACHE:-/var/cache/oomwarden-vm}
peers="$cache/peers"
# fetch PACKAGE... -> unpacked into $peers/x once.
fetch() {
    mkdir -p "$peers"
    (cd "$peers" && for p in "$@"; do
        ls "${p}"_*.deb > /dev/null 2>&1 && continue
        echo "bench: fetching Debian's $p package (unpacked, not installed)" >&2
        apt-get -o APT::Sandbox::User=root download "$p" >&2 || { apt-get update >&2 && apt-get -o APT::Sandbox::User=root download "$p" >&2; }
        dpkg-deb -x "${p}"_*.deb x
    done)
}
fetch earlyoom nohang oomd libjsoncpp25
x=$peers/x
# nohang runs on the distribution's Python 3 (it needs nothing but the standard library),
# copied into the guest without what nohang never imports (not a python3 from PATH: pyenv's
# is a shell script).
python=$(readlink -f /usr/bin/python3) || { echo "bench: nohang needs the distribution's /usr/bin/python3" >&2; exit 1; }
pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
stdlib="$peers/python$pyver"
if [[ ! -d $stdlib ]]; then
    mkdir -p "$stdlib"
    (cd "/usr/lib/python$pyver" && tar -cf - --exclude=test --exclude=idlelib --exclude=tkinter \
        --exclude=ensurepip --exclude=lib2to3 --exclude=__pycache__ --exclude=site-packages \
        --exclude=dist-packages --exclude='config-*' .) | tar -xf - -C "$stdlib"
fi
ctypes_so=$(ls "$stdlib"/lib-dynload/_ctypes.*.so)
out=${BENCH_OUT:-$root/target/vm/bench/reaction}
rm -rf "$out"; mkdir -p "$out"
for ((r = 1; r <= reps; r++)); do
 for shape in ${SHAPES:-hog}; do
  shape "$shape" || exit 2
  for lru in ${LRU:-classic mglru}; do
    for c in ${CONTENDERS:-kernel earlyoom nohang oomd oomwarden oomwarden-memory oomwarden-recommended}; do
        d="$out/$shape-$c-$lru-$r"
        echo "=== bench: $shape, $c ($lru) run $r/$reps" >&2
        # shellcheck disable=SC2086
        LD_LIBRARY_PATH="$x/usr/lib/x86_64-linux-gnu" "$here/run-in-vm.sh" --timeout "$timeout" --quiet \
            --log "$d.console.log" --out "$d" $vmopts \
            --add "$bin/oomwarden:/usr/local/bin/oomwarden" --add "$bin/hog:/usr/local/bin/hog" \
            --add "$bin/service:/usr/local/bin/service" --add "$bin/canary:/usr/local/bin/canary" \
            --add-bin "$x/usr/bin/earlyoom:/usr/local/bin/earlyoom" \
            --add-bin "$x/usr/bin/oomd:/usr/local/bin/oomd" --add "$here/bench/peers/oomd.json:/etc/oomd/oomd.json" \
            --add "$x/usr/lib/x86_64-linux-gnu/libjsoncpp.so.25:/usr/lib/x86_64-linux-gnu/libjsoncpp.so.25" \
            --add-bin "$python:/usr/bin/python3" --add "$stdlib:/usr/lib/python$pyver" --add-bin "$ctypes_so:/usr/lib/python$pyver${ctypes_so#"$stdlib"}" \
            --add "$x/usr/sbin/nohang:/usr/sbin/nohang" --add "$x/etc/nohang/nohang.conf:/etc/nohang/nohang.conf" \
            --add "$here/lib.sh:/root/lib.sh" --add "$script:/root/episode.sh" \
            --add "$root/examples/config/memory-level.yaml:/root/memory-level.yaml" \
            --add "$root/examples/config/recommended.yaml:/root/recommended.yaml" --add "$root/examples/config:/root/config" \
            --env "LRU=$lru" --env "CONTENDER=$c" --env "SHAPE=$shape" "${shape_env[@]}" -- /bin/sh /root/episode.sh "$c" || echo "bench: $shape, $c ($lru) run $r failed" >&2
        cat "$d/episode.json" 2>/dev/null >&2 || true
    done
  done
 done
done
python3 "$here/bench/summarize.py" "$out"
