#!/bin/sh
# S7 reload: SIGHUP with a broken config keeps the old one working; a valid one takes effect.
SCENARIO=s7-reload
. /root/lib.sh
node_layout
printf 'apiVersion: v1alpha1\nkind: OOMConfig\ntriggerExpression: "false"\nsampleInterval: 200ms\n' > /root/oom.yaml
P=$(pod besteffort hog)
HOG=$(start_in "$(ctr "$P")" hog -s 16 -i 50 -m 100 -H -1)
start_oomwarden --config /root/oom.yaml
printf 'apiVersion: v1alpha1\nkind: OOMConfig\ntriggerExpression: qos_memory_current[Besteffort] > 1\n' > /root/oom.yaml
kill -HUP "$OOMWARDEN"
check "a broken config is rejected" "log" wait_for 30 grep -q 'configuration reload rejected' "$OUT/oomwarden.log"
sleep 3
check "the daemon still runs" "pid $OOMWARDEN" alive "$OOMWARDEN"
check "the old trigger (false) stays: nothing recorded, hog alive" "$(records) records" sh -c "[ $(records) = 0 ] && kill -0 $HOG"
printf 'apiVersion: v1alpha1\nkind: OOMConfig\ntriggerExpression: qos_memory_current[Besteffort] > 50.0 * 1048576.0 && time_since_trigger > duration("1h")\nsampleInterval: 200ms\n' > /root/oom.yaml
kill -HUP "$OOMWARDEN"
check "a valid config is applied" "log" wait_for 30 grep -q 'configuration reloaded' "$OUT/oomwarden.log"
check "the new trigger kills the pod" "record" wait_for 60 grep -q '"kind":"oomwarden","outcome":"killed"' "$STATE/actions.jsonl"
check "the hog is gone" "pid $HOG" sh -c "! kill -0 $HOG 2>/dev/null || { sleep 1; ! kill -0 $HOG 2>/dev/null; }"
check "the pod cgroup is empty" "$P" sh -c "! grep -q 'populated 1' $P/cgroup.events"
check "oomwarden survived its own kill decision" "pid $OOMWARDEN" alive "$OOMWARDEN"
finish
