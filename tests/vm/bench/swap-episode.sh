#!/bin/sh
# vm: --mem 1G --scratch-disk 2G --scratch-disk 1G --module crc32c_generic --module ext4 --append transparent_hugepage=never
# One episode of the swap and culprit shapes (issue 35) under one contender, on the benchmark's
# node (bench_node: S1's services with hot file working sets on /dev/vda, the canary in
# system/). SWAP=disk: 1 GiB of swap on /dev/vdb; SWAP=zswap: the same with zswap in front of
# it (what Talos ships); SWAP=off: none. SHAPE:
#   swap-hog   a Burstable pod holds 250 MiB and touches it every second (resident); another
#              Burstable pod grows 8 MiB every 50 ms and never touches a page again, so its old
#              pages go to swap (the hog). The hog should be the victim, before swap runs out.
#   swap-cold  an idle BestEffort pod (300 MiB) and an idle System service (200 MiB) allocate
#              once and never touch their memory again; then a Burstable pod takes 350 MiB
#              and keeps it hot. The kernel writes idle pages to swap and the node settles;
#              then the contender starts and watches a node whose swap holds cold pages and
#              where nothing grows, for 120 s. Any kill is a false kill. (Measured first with
#              the contender started before: every policy, Talos's default too, killed the
#              idle pod while the busy one took its memory and the services stalled: that is
#              a node running out, not the shape.)
#   culprit    (SWAP=off) an idle BestEffort pod (20 MiB) beside a Burstable pod without a
#              limit growing 8 MiB every 200 ms, started 20 s after the contender (the
#              recommended trend's window). The grower is the culprit.
# Writes /out/episode.json with the reaction benchmark's fields (bench/episode.sh), `swap` and
# `victims` (the pods and services that died: the contender's kills and the kernel's).
CONTENDER=$1
SCENARIO=bench-$SHAPE-$CONTENDER
. /root/lib.sh
bench_node
[ "$SWAP" = off ] || swap_on /dev/vdb
setup_ok
# start -> the contender, then the measurement's start (a shape may settle the node first).
start() {
    start_contender "$CONTENDER"
    sleep 2
    FULL0=$(system_full_total)
    OOM0=$(oom_kills)
    T0=$(up)
}
# The processes whose death is counted: NAME=PID pairs.
WATCH=""
case "$SHAPE" in
    swap-hog*)
        start
        R=$(pod burstable resident)
        WATCH="resident=$(start_in "$(ctr "$R")" hog -s 16 -i 20 -m 250 -H -1)"
        wait_for 60 sh -c "[ \$(cat $R/memory.current) -gt $((230 << 20)) ]"
        H=$(pod burstable hog)
        GROWER=$(start_in "$(ctr "$H")" hog -s 8 -i 50)
        WATCH="$WATCH hog=$GROWER"
        LIMIT=${EPISODE_LIMIT:-2400} ;;
    swap-cold*)
        I=$(pod besteffort idle)
        WATCH="idle-pod=$(start_in "$(ctr "$I")" hog -s 16 -i 20 -m 300 -c)"
        mkdir -p "$CG/system/idle"
        WATCH="$WATCH idle-service=$(start_in "$CG/system/idle" hog -s 16 -i 20 -m 200 -c)"
        sleep 10
        B=$(pod burstable busy)
        WATCH="$WATCH busy=$(start_in "$(ctr "$B")" hog -s 16 -i 20 -m 350 -H -1)"
        # Settled: the busy pod holds its memory and swap has stopped filling for 5 s.
        wait_for 120 sh -c "[ \$(cat $B/memory.current) -gt $((340 << 20)) ]"
        last=0; same=0
        while [ $same -lt 5 ]; do
            used=$(awk '/^SwapTotal/{t=$2} /^SwapFree/{f=$2} END{print t - f}' /proc/meminfo)
            if [ $((used - last)) -lt 1024 ]; then same=$((same + 1)); else same=0; fi
            last=$used; sleep 1
        done
        log "settled: $(awk '/^SwapTotal/{t=$2} /^SwapFree/{f=$2} END{print t - f}' /proc/meminfo) kB in swap, $(awk '/MemAvailable/{print $2}' /proc/meminfo) kB available"
        start
        GROWER=""
        LIMIT=1200 ;;
    culprit*)
        start
        I=$(pod besteffort idle)
        WATCH="idle-pod=$(start_in "$(ctr "$I")" hog -s 4 -i 10 -m 20 -c)"
        sleep 20
        G=$(pod burstable grower)
        GROWER=$(start_in "$(ctr "$G")" hog -s 8 -i 200)
        WATCH="$WATCH grower=$GROWER"
        LIMIT=${EPISODE_LIMIT:-2400} ;;
    *) log "unknown SHAPE $SHAPE"; exit 2 ;;
esac
i=0
while [ $i -lt "$LIMIT" ]; do
    [ -z "$GROWER" ] || alive "$GROWER" || break
    [ $((i % 100)) = 0 ] && log "avail=$(awk '/MemAvailable/{print $2}' /proc/meminfo)kB swapfree=$(awk '/^SwapFree/{print $2}' /proc/meminfo)kB kills=$(contender_kills "$CONTENDER") oom=$(( $(oom_kills) - OOM0 ))"
    sleep 0.1; i=$((i + 1))
done
episode_end
died=""
for w in $WATCH; do alive "${w#*=}" || died="$died ${w%%=*}"; done
died="$died$(services_died)"
kills=$(contender_kills "$CONTENDER")
printf '{"contender":"%s","shape":"%s","lru":"%s","swap":"%s","hogStartMs":%s,"hogEndMs":%s,"hogLifeSeconds":%s,"systemFullStallSeconds":%s,"kills":%s,"kernelOomKills":%s,"died":"%s","swapUsedAtEndKiB":%s,"canary":%s}\n' \
    "$CONTENDER" "$SHAPE" "$LRU" "$SWAP" "$(awk -v a="$T0" 'BEGIN{printf "%.0f", a * 1000}')" "$(awk -v b="$T1" 'BEGIN{printf "%.0f", b * 1000}')" \
    "$(awk -v a="$T0" -v b="$T1" 'BEGIN{printf "%.1f", b - a}')" \
    "$(awk -v a="$FULL0" -v b="$FULL1" 'BEGIN{printf "%.3f", (b - a) / 1e6}')" \
    "$kills" "$(( $(oom_kills) - OOM0 ))" "$(echo $died)" \
    "$(awk '/^SwapTotal/{t=$2} /^SwapFree/{f=$2} END{print t - f}' /proc/meminfo)" "$(cat "$OUT/canary.json")" > "$OUT/episode.json"
cat "$OUT/episode.json"
episode_quit
exit 0
