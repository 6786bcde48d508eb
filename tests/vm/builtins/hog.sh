#!/bin/sh
# vm: --mem 1G --scratch-disk 2G --append transparent_hugepage=never
# Built-in recording "hog": a BestEffort pod takes most of RAM at once, then leaks; the node's
# own services stall and the default configuration kills the pod. A quiet BestEffort pod and a
# Burstable pod stay.
SCENARIO=builtin-hog
. /root/lib.sh
echo n > /sys/kernel/mm/lru_gen/enabled 2>/dev/null
node_layout
disk_services
start_oomwarden --record "$OUT/recording.rec"
Q=$(pod besteffort quiet)
start_in "$(ctr "$Q")" hog -s 8 -i 100 -m 24 -H -1 > /dev/null
W=$(pod burstable web)
start_in "$(ctr "$W")" hog -s 8 -i 100 -m 40 -H -1 > /dev/null
sleep 5
P=$(pod besteffort hog)
start_in "$(ctr "$P")" hog -s 16 -i 20 -m 450 -H -1 > /dev/null
LEAK=$(start_in "$(ctr "$P")" hog -s 5 -i 1000)
wait_for 240 sh -c "[ \$(grep -c '\"outcome\":\"killed\"' $STATE/actions.jsonl 2>/dev/null || echo 0) -gt 0 ]"
sleep 10
check "the hog's pod was killed" "$P" grep -q "\"victim\":\"$P\"" "$STATE/actions.jsonl"
finish
