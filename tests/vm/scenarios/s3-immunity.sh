#!/bin/sh
# S3 immunity: the largest pod has memory.max set, so the default ranking scores it 0 and it is
# never killed: with a small unlimited pod beside it, the small one goes; alone, nothing does.
SCENARIO=s3-immunity
. /root/lib.sh
node_layout
printf 'apiVersion: v1alpha1\nkind: OOMConfig\ntriggerExpression: %s\nsampleInterval: 200ms\n' \
    "'qos_memory_current[Burstable] > 200.0 * 1048576.0 && time_since_trigger > duration(\"3s\")'" > /root/oom.yaml
BIG=$(pod burstable big-limited 600M)
LIMITED=$(start_in "$(ctr "$BIG")" hog -s 16 -i 20 -m 320 -H -1)
SMALL_POD=$(pod burstable small-unlimited)
SMALL=$(start_in "$(ctr "$SMALL_POD")" hog -s 8 -i 20 -m 40 -H -1)
wait_for 30 sh -c "[ \$(cat $BIG/memory.current) -gt 300000000 ]"
start_oomwarden --config /root/oom.yaml
check "the small unlimited pod is killed" "$SMALL_POD" wait_for 60 grep -q "\"kind\":\"oomwarden\",\"outcome\":\"killed\",\"victim\":\"$SMALL_POD\"" "$STATE/actions.jsonl"
# Triggers keep firing every 3 s; with only the limited pod left nothing is eligible.
check "then nothing is eligible" "record" wait_for 30 grep -q '"kind":"oomwarden","outcome":"no-eligible-cgroup"' "$STATE/actions.jsonl"
sleep 4
check "the largest, limited pod is never killed" "$BIG" sh -c "kill -0 $LIMITED && grep -q 'populated 1' $BIG/cgroup.events"
check "it was never chosen" "records" sh -c "! grep -q '\"kind\":\"oomwarden\",\"outcome\":\"[a-z-]*\",\"victim\":\"$BIG\"' $STATE/actions.jsonl"
finish
