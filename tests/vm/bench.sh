#!/usr/bin/env bash
# The reaction benchmark: the same episode (see bench/episode.sh) under the kernel alone,
# earlyoom, oomwarden with the default configuration and oomwarden with a memory-level trigger, REPS times each, interleaved, one VM per run. Prints a table of
# medians and writes target/vm/bench/results.json.
#   tests/vm/bench.sh [REPS=3]
#   CONTENDERS="earlyoom oomwarden-memory" tests/vm/bench.sh 1   # a subset
#   LRU=mglru tests/vm/bench.sh 3        # one page-reclaim mode (default: classic and mglru)
# earlyoom is Debian's package, unpacked into the cache and copied into the VM with its
# libraries; it is never installed on the host.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
reps=${1:-3}
bin="$("$here/build.sh")"
cache=${VMTEST_CACHE:-/var/cache/oomwarden-vm}
eo="$cache/earlyoom"
if [[ ! -x $eo/x/usr/bin/earlyoom ]]; then
    echo "bench: fetching Debian's earlyoom package (unpacked, not installed)" >&2
    mkdir -p "$eo"
    (cd "$eo" && { apt-get -o APT::Sandbox::User=root download earlyoom >&2 || { apt-get update >&2 && apt-get -o APT::Sandbox::User=root download earlyoom >&2; }; } && dpkg-deb -x earlyoom_*.deb x)
fi
out="$root/target/vm/bench"
rm -rf "$out"; mkdir -p "$out"
for ((r = 1; r <= reps; r++)); do
  for lru in ${LRU:-classic mglru}; do
    for c in ${CONTENDERS:-kernel earlyoom oomwarden oomwarden-memory oomwarden-psi}; do
        d="$out/$c-$lru-$r"
        echo "=== bench: $c ($lru) run $r/$reps" >&2
        "$here/run-in-vm.sh" --timeout 420 --quiet --log "$d.console.log" --out "$d" \
            --mem 1G --scratch-disk 2G --append transparent_hugepage=never \
            --add "$bin/oomwarden:/usr/local/bin/oomwarden" --add "$bin/hog:/usr/local/bin/hog" \
            --add "$bin/service:/usr/local/bin/service" --add "$bin/canary:/usr/local/bin/canary" \
            --add-bin "$eo/x/usr/bin/earlyoom:/usr/local/bin/earlyoom" \
            --add "$here/lib.sh:/root/lib.sh" --add "$here/bench/episode.sh:/root/episode.sh" \
            --add "$root/examples/config/memory-level.yaml:/root/memory-level.yaml" \
            --env "LRU=$lru" -- /bin/sh /root/episode.sh "$c" || echo "bench: $c ($lru) run $r failed" >&2
        cat "$d/episode.json" 2>/dev/null >&2 || true
    done
  done
done
python3 - "$out" "$reps" <<'PY'
import json, statistics, sys, pathlib
out, reps = pathlib.Path(sys.argv[1]), int(sys.argv[2])
runs = {}
for f in sorted(out.glob("*/episode.json")):
    e = json.loads(f.read_text())
    # Runs of versions without the field were classic.
    runs.setdefault(f'{e["contender"]} ({e.get("lru", "classic")})', []).append(e)
rows = {}
for lru in ["classic", "mglru"]:
  for c in ["kernel", "earlyoom", "oomwarden", "oomwarden-memory", "oomwarden-psi", "earlyoom-oomwarden-idle"]:
    c = f"{c} ({lru})"
    es = runs.get(c, [])
    if not es:
        continue
    med = lambda k: statistics.median(k(e) for e in es)
    # The canary's worst delay in the 10 s before the hog died and the 3 s after (the stall
    # a contender lets happen and the kill itself); the canary lists periods later than 5 ms,
    # so 5 means "none later than 5 ms".
    def near_death(e):
        end = e["hogEndMs"]
        return max([d for t, d in e["canary"]["late"] if end - 10000 <= t <= end + 3000], default=5.0)
    rows[c] = {
        "runs": len(es),
        "canaryWorstMs": med(lambda e: e["canary"]["worstMs"]),
        "canaryP99Ms": med(lambda e: e["canary"]["p99Ms"]),
        "canaryWorstNearDeathMs": med(near_death),
        "systemFullStallSeconds": med(lambda e: e["systemFullStallSeconds"]),
        "hogLifeSeconds": med(lambda e: e["hogLifeSeconds"]),
        "kills": med(lambda e: e["kills"]),
        "kernelOomKills": med(lambda e: e["kernelOomKills"]),
        "died": sorted({e["died"] for e in es}),
    }
(out / "results.json").write_text(json.dumps({"medians": rows, "runs": runs}, indent=2))
print("| contender | runs | canary worst (ms) | canary worst near the death (ms) | canary p99 (ms) | System full stall (s) | hog start to death (s) | kills | kernel OOM kills | what died |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for c, r in rows.items():
    print(f"| {c} | {r['runs']} | {r['canaryWorstMs']:.0f} | {r['canaryWorstNearDeathMs']:.0f} | {r['canaryP99Ms']:.1f} | {r['systemFullStallSeconds']:.2f} | {r['hogLifeSeconds']:.1f} | {r['kills']:g} | {r['kernelOomKills']:g} | {'; '.join(r['died'])} |")
PY
