#!/bin/sh
# vm: --mem 1G --timeout 420 --append transparent_hugepage=never
# S24 the culprit (issue 35): an idle BestEffort pod (20 MiB, never touched again) beside a
# Burstable pod without a limit that grows 8 MiB every 200 ms, under
# examples/config/culprit.yaml: one pool (no strict class order), each pod ranked by what it
# will hold in a minute at its growth (d_memory_current, read once a second between
# triggers). The grower is killed, the idle pod is not (Talos's strict order would kill the
# BestEffort pod first), and the record says how fast the victim grew.
SCENARIO=s24-culprit
. /root/lib.sh
set_lru
node_layout
OOM_BEFORE=$(oom_kills)
start_oomwarden --config /root/config/culprit.yaml
I=$(pod besteffort idle)
IDLE=$(start_in "$(ctr "$I")" hog -s 4 -i 10 -m 20 -c)
need wait_for 60 sh -c "[ \$(cat $I/memory.current) -ge $((20 << 20)) ]"
setup_ok
# The trigger's trend (examples/config/recommended.yaml's) speaks only once it has seen 20 s.
sleep 20
G=$(pod burstable grower)
GROW=$(start_in "$(ctr "$G")" hog -s 8 -i 200)
i=0
while [ $i -lt 240 ] && [ "$(count_outcome killed)" = 0 ] && alive "$GROW" && [ "$(oom_kills)" = "$OOM_BEFORE" ]; do
    [ $((i % 5)) = 0 ] && log "grower=$(( $(cat $G/memory.current) >> 20 ))MiB idle=$(( $(cat $I/memory.current) >> 20 ))MiB avail=$(awk '/MemAvailable/{print $2}' /proc/meminfo)kB"
    sleep 1; i=$((i + 1))
done
# Time for a second decision, had the policy taken one.
sleep 12
ours | grep '"outcome":"killed"' | head -n1 > "$OUT/kill.json"
log "kill: $(cat "$OUT/kill.json")"
check "oomwarden killed once" "$(count_outcome killed) kills" [ "$(count_outcome killed)" = 1 ]
check "the victim is the grower" "kill.json" grep -q '"victim":"/sys/fs/cgroup/kubepods/burstable/podgrower"' "$OUT/kill.json"
GROWTH=$(sed -n 's/.*"growthBytesPerSecond":\([0-9.e+]*\).*/\1/p' "$OUT/kill.json")
check "the record says it grew" "growthBytesPerSecond ${GROWTH:-absent}" \
    awk -v g="${GROWTH:-0}" 'BEGIN { exit !(g > 1048576) }'
check "the idle pod is alive" "$IDLE" alive "$IDLE"
check "the kernel OOM killer did not fire" "oom_kill $OOM_BEFORE -> $(oom_kills)" [ "$(oom_kills)" = "$OOM_BEFORE" ]
check "oomwarden survives" "$OOMWARDEN" alive "$OOMWARDEN"
finish
