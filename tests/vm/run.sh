#!/usr/bin/env bash
# Runs the real-kernel scenarios, each in its own VM, and summarises the results.
#   tests/vm/run.sh [SCENARIO...]      (default: every tests/vm/scenarios/*.sh)
# Results: target/vm/results/<scenario>/{result.json,oomwarden.log,actions.jsonl,dmesg.txt,console.log}
# and target/vm/results/summary.json. Exit 0 when every scenario passed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="$("$here/build.sh")"
results="$root/target/vm/results"
mkdir -p "$results"
scenarios=("$@")
if ((${#scenarios[@]} == 0)); then
    for f in "$here"/scenarios/*.sh; do scenarios+=("$(basename "$f" .sh)"); done
fi
passed=0 failed=0
summary="["
for s in "${scenarios[@]}"; do
    script="$here/scenarios/$s.sh"
    [[ -f $script ]] || { echo "vm: no scenario $s" >&2; exit 2; }
    # A scenario may ask for VM options in a line "# vm: --mem 1G --scratch-disk 2G".
    opts=$(sed -n 's/^# vm: //p' "$script" | head -n1)
    out="$results/$s"
    rm -rf "$out"; mkdir -p "$out"
    echo "=== vm: $s ($opts)" >&2
    rc=0
    # shellcheck disable=SC2086
    "$here/run-in-vm.sh" --timeout 420 --quiet --log "$out/console.log" --out "$out" $opts \
        --add "$bin/oomwarden:/usr/local/bin/oomwarden" --add "$bin/hog:/usr/local/bin/hog" \
        --add "$bin/service:/usr/local/bin/service" --add "$here/lib.sh:/root/lib.sh" \
        --add "$script:/root/scenario.sh" -- /bin/sh /root/scenario.sh || rc=$?
    if ((rc == 0)) && [[ -f $out/result.json ]]; then
        passed=$((passed + 1)); echo "=== vm: $s passed" >&2
    else
        failed=$((failed + 1)); echo "=== vm: $s FAILED (exit $rc); console tail:" >&2
        tail -n 40 "$out/console.log" >&2 || true
    fi
    [[ $summary == "[" ]] || summary+=","
    summary+="{\"scenario\":\"$s\",\"exit\":$rc,\"result\":$(cat "$out/result.json" 2>/dev/null || echo null)}"
done
echo "$summary]" > "$results/summary.json"
echo "vm: $passed passed, $failed failed"
((failed == 0))
