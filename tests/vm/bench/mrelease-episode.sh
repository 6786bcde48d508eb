#!/bin/sh
# vm: --mem 1G --append transparent_hugepage=never
# In the guest (tests/vm/bench/mrelease.sh): a 600 MiB BestEffort pod killed REPS times with
# cgroup.kill alone and with cgroup.kill then process_mrelease (as oomwarden kills), alternating;
# each kill's times in /out/mrelease.jsonl.
SCENARIO=bench-mrelease
. /root/lib.sh
set_lru
node_layout
: > "$OUT/mrelease.jsonl"
r=1
while [ $r -le "${REPS:-5}" ]; do
    for mode in kill mrelease; do
        P=$(pod besteffort victim$r$mode)
        H=$(start_in "$(ctr "$P")" hog -s 16 -i 0 -m 600 -H -1)
        wait_for 120 sh -c "[ \$(( \$(cat $(ctr "$P")/memory.current) >> 20 )) -ge 599 ]" || log "the victim did not reach 600 MiB"
        sleep 1
        line=$(reclaim "$(ctr "$P")" "$mode" 570)
        log "$line"
        echo "$line" | sed "s/^{/{\"lru\":\"$LRU\",\"rep\":$r,/" >> "$OUT/mrelease.jsonl"
        wait "$H" 2>/dev/null
        rmdir "$(ctr "$P")" "$P"
    done
    r=$((r + 1))
done
check "every kill gave its memory back" "$(grep -c . "$OUT/mrelease.jsonl") kills" sh -c "! grep -Eq '\"(memoryCurrentUnder1MiBUs|memAvailableBackUs)\":-1' $OUT/mrelease.jsonl"
finish
