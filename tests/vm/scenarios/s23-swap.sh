#!/bin/sh
# vm: --mem 1G --scratch-disk 1G --timeout 420 --append transparent_hugepage=never
# S23 swap (issue 35): a node with 1 GiB of swap on a virtio disk, under
# examples/config/recommended-swap.yaml. A Burstable pod grows 8 MiB every 100 ms and never
# touches a page again; another Burstable pod holds 400 MiB and touches it every second. The
# kernel writes the hog's old pages to swap. The policy acts when the node thrashes (the
# resident pod's pages read back from swap) or when three quarters of swap are in use and pages
# still go out, before swap runs out (which comes first varies from run to run): it kills the
# hog (ranked by memory_current + memory_swap_current), whose pages are in swap, not the
# resident pod, and the kernel's OOM killer never fires.
SCENARIO=s23-swap
. /root/lib.sh
set_lru
node_layout
swap_on /dev/vda
setup_ok
OOM_BEFORE=$(oom_kills)
# Recorded (every file a replay needs: tests replay it under other policies).
start_oomwarden --config /root/config/recommended-swap.yaml --record "$OUT/recording.rec"
# The hog starts first: its first pages are then the oldest on the LRU, and reclaim reaches them
# before the resident pod's. Started second (as until 2026-12-05), the resident pod's pages came
# first, and on a slower host reclaim took 31 MiB of them before any of the hog's: they were read
# back at once and the thrash path killed the hog with nothing of it in swap (CI, twice in a row).
# Started first, in three runs on a loaded host, none of the resident pod's pages went to swap
# (7 to 51 MiB did before).
H=$(pod burstable hog)
LEAK=$(start_in "$(ctr "$H")" hog -s 8 -i 100)
need wait_for 60 sh -c "[ \$(cat $H/memory.current) -gt $((64 << 20)) ]"
R=$(pod burstable resident)
RES=$(start_in "$(ctr "$R")" hog -s 16 -i 20 -m 400 -H -1)
need wait_for 90 sh -c "[ \$(cat $R/memory.current) -gt $((380 << 20)) ]"
setup_ok
mib() { echo $(( $(cat "$1" 2>/dev/null || echo 0) >> 20 )); }
i=0
while [ $i -lt 240 ] && [ "$(count_outcome killed)" = 0 ] && alive "$LEAK" && [ "$(oom_kills)" = "$OOM_BEFORE" ]; do
    [ $((i % 5)) = 0 ] && log "hog=$(mib $H/memory.current)MiB+swap $(mib $H/memory.swap.current)MiB resident=$(mib $R/memory.current)MiB+swap $(mib $R/memory.swap.current)MiB SwapFree=$(awk '/^SwapFree/{print $2}' /proc/meminfo)kB avail=$(awk '/MemAvailable/{print $2}' /proc/meminfo)kB"
    sleep 1; i=$((i + 1))
done
wait_for 10 sh -c "! kill -0 $LEAK 2>/dev/null"
ours | grep '"outcome":"killed"' | head -n1 > "$OUT/kill.json"
log "kill: $(cat "$OUT/kill.json")"
HP=/sys/fs/cgroup/kubepods/burstable/podhog
check "oomwarden killed once" "$(count_outcome killed) kills" [ "$(count_outcome killed)" = 1 ]
check "the victim is the swapped-out hog" "kill.json" grep -q "\"victim\":\"$HP\"" "$OUT/kill.json"
SWAPPED=$(sed -n 's/.*"swapBytes":\([0-9]*\).*/\1/p' "$OUT/kill.json")
CURRENT=$(sed -n 's/.*"memoryCurrentBytes":\([0-9]*\).*/\1/p' "$OUT/kill.json")
check "the hog's pages were in swap" "memory.current ${CURRENT:-?}, swap ${SWAPPED:-?}" \
    awk -v s="${SWAPPED:-0}" 'BEGIN { exit !(s > 0) }'
# The trigger context is a JSON string inside the record: its quotes are escaped.
FREE=$(sed -n 's/.*node_swap_free\\":\([0-9.e+]*\).*/\1/p' "$OUT/kill.json")
check "swap had not run out" "node_swap_free ${FREE:-absent}" awk -v f="${FREE:-0}" 'BEGIN { exit !(f > 0) }'
check "the resident pod is alive" "$RES" alive "$RES"
check "the kernel OOM killer did not fire" "oom_kill $OOM_BEFORE -> $(oom_kills)" [ "$(oom_kills)" = "$OOM_BEFORE" ]
check "oomwarden survives" "$OOMWARDEN" alive "$OOMWARDEN"
finish
