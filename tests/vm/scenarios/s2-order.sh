#!/bin/sh
# S2 order: a large Burstable pod without a limit and a small BestEffort pod. With strict class
# ordering (the default) the BestEffort pod dies first; with strictCgroupClassOrdering: false
# the larger one does. The trigger fires once on memory use, so the ranking decides alone.
SCENARIO=s2-order
. /root/lib.sh
node_layout
trigger='qos_memory_current[Besteffort] + qos_memory_current[Burstable] > 250.0 * 1048576.0 && time_since_trigger > duration("1h")'
printf 'apiVersion: v1alpha1\nkind: OOMConfig\ntriggerExpression: %s\nsampleInterval: 200ms\n' "'$trigger'" > /root/strict.yaml
printf 'apiVersion: v1alpha1\nkind: OOMConfig\ntriggerExpression: %s\nsampleInterval: 200ms\nstrictCgroupClassOrdering: false\n' "'$trigger'" > /root/score.yaml

run_case() { # config label
    BE=$(pod besteffort small-$2); BU=$(pod burstable large-$2)
    SMALL=$(start_in "$(ctr "$BE")" hog -s 8 -i 20 -m 40 -H -1)
    LARGE=$(start_in "$(ctr "$BU")" hog -s 16 -i 20 -m 240 -H -1)
    rm -rf "$STATE"; mkdir -p "$STATE"
    start_oomwarden --config "$1"
    wait_for 60 grep -q '"kind":"oomwarden","outcome":"killed"' "$STATE/actions.jsonl"
    sleep 2
    kill -TERM "$OOMWARDEN"; wait "$OOMWARDEN" 2>/dev/null
    cp "$STATE/actions.jsonl" "$OUT/actions-$2.jsonl" 2>/dev/null
}

run_case /root/strict.yaml strict
check "strict: the small BestEffort pod is killed" "$BE" sh -c "! grep -q 'populated 1' $BE/cgroup.events"
check "strict: the large Burstable pod survives" "$BU" populated "$BU"
check "strict: one kill" "$(count_outcome killed)" [ "$(count_outcome killed)" = 1 ]
echo 1 > "$BU/cgroup.kill"; sleep 1

run_case /root/score.yaml score
check "non-strict: the larger Burstable pod is killed" "$BU" sh -c "! grep -q 'populated 1' $BU/cgroup.events"
check "non-strict: the small BestEffort pod survives" "$BE" populated "$BE"
check "non-strict: one kill" "$(count_outcome killed)" [ "$(count_outcome killed)" = 1 ]
OOMWARDEN=""
finish
