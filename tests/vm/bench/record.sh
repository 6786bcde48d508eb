#!/usr/bin/env bash
# Records what the node goes through when nothing but the kernel acts, so that trigger policies
# can be tried on it offline (`oomwarden replay REC --config A --config B`): each run is one
# shape of the benchmark's workloads with an oomwarden that never acts (trigger "false"),
# samples every 100 ms and records everything it reads, the node's vmstat and meminfo included.
#   tests/vm/bench/record.sh [SHAPE[@LRU]...]
# SHAPE: hog (the reaction benchmark's episode), slow-leak (the same hog taking 600 MiB, then
# leaking 1 MiB/s), full-but-healthy (S18), page-cache (S4). LRU: classic or mglru (default:
# both). Default: every shape on both. Recordings: target/vm/recordings/SHAPE@LRU.rec.gz,
# beside each run's episode.json or result.json and console log. A shape is a measurement, not
# a test: a run whose own checks fail still leaves its recording (and says so).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="$("$here/build.sh")"
. "$here/bench/shapes.sh"
out="$root/target/vm/recordings"
mkdir -p "$out"
runs=("$@")
if ((${#runs[@]} == 0)); then
    for s in hog slow-leak full-but-healthy page-cache; do runs+=("$s@classic" "$s@mglru"); done
fi
for run in "${runs[@]}"; do
    shape=${run%@*} lru=classic
    [[ $run == *@* ]] && lru=${run#*@}
    case $lru in classic|mglru) ;; *) echo "record: $run: LRU is classic or mglru" >&2; exit 2 ;; esac
    shape "$shape" || exit 2
    d="$out/$shape@$lru"
    rm -rf "$d"; mkdir -p "$d"
    echo "=== record: $shape ($lru)" >&2
    # shellcheck disable=SC2086
    "$here/run-in-vm.sh" --timeout "$timeout" --quiet --log "$d/console.log" --out "$d" $vmopts \
        --add "$bin/oomwarden:/usr/local/bin/oomwarden" --add "$bin/hog:/usr/local/bin/hog" \
        --add "$bin/service:/usr/local/bin/service" --add "$bin/canary:/usr/local/bin/canary" \
        --add "$here/lib.sh:/root/lib.sh" --add "$script:/root/run.sh" \
        --env "LRU=$lru" --env CONTENDER=observer --env "SHAPE=$shape" "${shape_env[@]}" -- /bin/sh /root/run.sh observer || echo "record: $shape ($lru): the run's own checks failed (see $d)" >&2
    if [[ -s $d/recording.rec ]]; then
        gzip -n -c "$d/recording.rec" > "$out/$shape@$lru.rec.gz"
        echo "=== record: $shape ($lru): $(grep -c '^c ' "$d/recording.rec") cycles -> $out/$shape@$lru.rec.gz" >&2
    else
        echo "record: $shape ($lru): no recording (see $d/console.log)" >&2
    fi
done
