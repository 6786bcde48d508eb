#!/usr/bin/env bash
# What process_mrelease buys (issue 19): a 600 MiB victim killed with cgroup.kill alone and with
# cgroup.kill then process_mrelease on each process (what oomwarden does), REPS times each,
# alternating, in one VM per page-reclaim mode. Prints the medians; every kill's times are in
# target/vm/bench/mrelease/<lru>/mrelease.jsonl.
#   tests/vm/bench/mrelease.sh [REPS=5]        LRU=classic|mglru picks one mode (default both)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
root="$(cd "$here/../.." && pwd)"
reps=${1:-5}
bin="$("$here/build.sh")"
out="$root/target/vm/bench/mrelease"
mkdir -p "$out"
for lru in ${LRU:-classic mglru}; do
    d="$out/$lru"
    rm -rf "$d"; mkdir -p "$d"
    echo "=== bench: mrelease ($lru), $reps kills each way" >&2
    "$here/run-in-vm.sh" --timeout 600 --quiet --log "$d/console.log" --out "$d" \
        --mem 1G --append transparent_hugepage=never \
        --add "$bin/hog:/usr/local/bin/hog" --add "$bin/reclaim:/usr/local/bin/reclaim" \
        --add "$here/lib.sh:/root/lib.sh" --add "$here/bench/mrelease-episode.sh:/root/episode.sh" \
        --env "LRU=$lru" --env "REPS=$reps" -- /bin/sh /root/episode.sh || echo "bench: mrelease ($lru) failed (see $d)" >&2
done
python3 - "$out" <<'PY'
import json, pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])
rows = [json.loads(l) for f in sorted(out.glob("*/mrelease.jsonl")) for l in f.read_text().splitlines() if l.strip()]
print("| page reclaim | kill | kills | process_mrelease returned (ms) | memory.current under 1 MiB (ms) [per kill] | MemAvailable back by 570 MiB (ms) [per kill] |")
print("|---|---|---:|---:|---:|---:|")
for lru in ["classic", "mglru"]:
    for mode in ["kill", "mrelease"]:
        rs = [r for r in rows if r["lru"] == lru and r["mode"] == mode]
        if not rs:
            continue
        ms = lambda k: [r[k] / 1000 for r in rs]
        med = lambda k: statistics.median(ms(k))
        each = lambda k: ", ".join(f"{v:.1f}" for v in ms(k))
        rel = f"{med('mreleaseReturnedUs'):.1f}" if mode == "mrelease" else "-"
        name = "cgroup.kill + process_mrelease" if mode == "mrelease" else "cgroup.kill alone"
        print(f"| {lru} | {name} | {len(rs)} | {rel} | {med('memoryCurrentUnder1MiBUs'):.1f} [{each('memoryCurrentUnder1MiBUs')}] | {med('memAvailableBackUs'):.1f} [{each('memAvailableBackUs')}] |")
PY
