#!/bin/sh
# vm: --mem 1G --scratch-disk 4G --append transparent_hugepage=never
# S4 no false kill: heavy page-cache churn (re-reading files larger than RAM) and a pod
# thrashing inside its own memory limit, with the node services running: the default
# configuration must kill nothing. Same kernel settings as S1, so that quiet is not blindness.
# CONTENDER (the benchmark's page-cache shape) runs another OOM handler in oomwarden's place
# (lib.sh's start_contender) and writes its kills to /out/episode.json.
SCENARIO=s4-no-false-kill
. /root/lib.sh
set_lru
node_layout
disk_services
big_files
OOM_BEFORE=$(oom_kills)
C=${CONTENDER:-oomwarden}
start_contender "$C"
# A Burstable pod streams 1.2 GB of files over and over (more than RAM).
R=$(pod burstable reader)
READER=$(start_in "$(ctr "$R")" sh -c 'while :; do cat /mnt/big/* > /dev/null; done')
# A pod limited to 128 MiB: its hog holds 100 MiB and it reads files, thrashing in its limit.
L=$(pod burstable limited 128M)
log "limited pod memory.max: $(cat $L/memory.max)"
LHOG=$(start_in "$(ctr "$L")" hog -s 10 -i 50 -m 100 -H -1)
LREAD=$(start_in "$(ctr "$L")" sh -c 'while :; do cat /mnt/sys1/* /mnt/big/f0 > /dev/null; done')
i=0
while [ $i -lt ${DURATION:-60} ]; do
    [ $((i % 10)) = 0 ] && log "system[$(psi $SYSTEM)] podruntime[$(psi $PODRUNTIME)] limited[$(psi $L)] node[$(psi "")] cache=$(awk '/^Cached/{print $2}' /proc/meminfo)kB"
    sleep 1; i=$((i + 1))
done
high=$(awk '/^high /{print $2}' "$L/memory.events")
check "the limited pod was under pressure in its limit" "memory.events high/max: $(grep -E '^(high|max) ' $L/memory.events | tr '\n' ' ')" sh -c "grep -q '^max [1-9]' $L/memory.events || [ ${high:-0} -gt 0 ] || awk '/some/{split(\$4,t,\"=\"); exit !(t[2] > 0)}' $L/memory.pressure"
printf '{"contender":"%s","lru":"%s","shape":"page-cache","kills":%s,"kernelOomKills":%s}\n' \
    "$C" "$LRU" "$(contender_kills "$C")" "$(( $(oom_kills) - OOM_BEFORE ))" > "$OUT/episode.json"
check "no action was taken" "$(records) records, $(contender_kills "$C") kills" sh -c "[ $(records) = 0 ] && [ $(contender_kills "$C") = 0 ]"
check "every workload is alive" "$READER $LHOG $LREAD $SVC1" sh -c "kill -0 $READER && kill -0 $LHOG && kill -0 $LREAD && kill -0 $SVC1"
check "the kernel OOM killer did not fire" "oom_kill $OOM_BEFORE -> $(oom_kills)" [ "$(oom_kills)" = "$OOM_BEFORE" ]
finish
