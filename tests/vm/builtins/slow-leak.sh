#!/bin/sh
# vm: --mem 1G --scratch-disk 2G --append transparent_hugepage=never
# Built-in recording "slow-leak": a Burstable pod without a memory limit holds 350 MiB and leaks
# 4 MiB a second; a second Burstable pod and a Guaranteed pod (limited) run steadily. When the
# node's services stall, the default configuration kills the leaking pod, and (in the recorded
# run) the steady Burstable pod too once its 5 s cooldown ends with the services still stalled.
SCENARIO=builtin-slow-leak
. /root/lib.sh
echo n > /sys/kernel/mm/lru_gen/enabled 2>/dev/null
node_layout
disk_services
start_oomwarden --record "$OUT/recording.rec"
W=$(pod burstable web)
start_in "$(ctr "$W")" hog -s 8 -i 100 -m 60 -H -1 > /dev/null
G=$(pod guaranteed db 128M)
start_in "$(ctr "$G")" hog -s 8 -i 100 -m 64 -H -1 > /dev/null
L=$(pod burstable leaky)
start_in "$(ctr "$L")" hog -s 16 -i 50 -m 350 -H -1 > /dev/null
start_in "$(ctr "$L")" hog -s 4 -i 1000 > /dev/null
wait_for 400 sh -c "[ \$(grep -c '\"outcome\":\"killed\"' $STATE/actions.jsonl 2>/dev/null || echo 0) -gt 0 ]"
sleep 10
check "the leaking pod was killed" "$L" grep -q "\"victim\":\"$L\"" "$STATE/actions.jsonl"
finish
