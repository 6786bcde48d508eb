#!/bin/sh
# vm: --mem 1G --scratch-disk 4G --append transparent_hugepage=never
# S18 full but healthy (issue 19): the node held at 90-95 % used by a stable anonymous
# working set (a Guaranteed-sized steady pod, nothing growing), page cache churning beside it
# (a pod re-reading files larger than what is left), the node services running, for 3
# minutes. A policy must kill nothing here: the node is full, not running out. CONTENDER names
# the OOM handler under test (lib.sh's start_contender; default: oomwarden with the embedded
# defaults); /out/episode.json gets its kills for the benchmark.
SCENARIO=s18-full-but-healthy
. /root/lib.sh
set_lru
node_layout
# The services' hot file sets (3 x 12 MiB) must still fit beside the steady pod: with S1's
# (3 x 30 MiB) a node at 92 % thrashes them (measured: System and Podruntime `full` avg10 18 %),
# which is a node in trouble, not a full one.
SERVICE_MB=${SERVICE_MB:-4}
disk_services
big_files
OOM_BEFORE=$(oom_kills)
C=${CONTENDER:-oomwarden}
start_contender "$C"
total=$(awk '/^MemTotal/{print $2}' /proc/meminfo)
avail=$(awk '/^MemAvailable/{print $2}' /proc/meminfo)
# Take what is available down to 9 % of the node, in one steady pod that then only re-touches.
want=$(( (avail - total * 9 / 100) / 1024 ))
S=$(pod burstable steady)
STEADY=$(start_in "$(ctr "$S")" hog -s 16 -i 50 -m "$want" -H -1)
log "steady pod takes ${want} MiB (MemTotal ${total} kB, MemAvailable ${avail} kB)"
wait_for 120 sh -c "[ \$(( \$(cat $S/memory.current) >> 20 )) -ge $((want - 8)) ]" || log "the steady pod did not reach ${want} MiB"
R=$(pod besteffort reader)
# At most about 25 MiB/s (a log shipper, a backup): streaming at full speed keeps a node
# this full in direct reclaim, and its services then stall (measured: System and Podruntime
# `full` avg10 15-20 %), which is a node in trouble, not a full one.
READER=$(start_in "$(ctr "$R")" sh -c 'while :; do for f in /mnt/big/*; do cat "$f" > /dev/null; sleep 4; done; done')
# The node's services' stall, as the Talos default trigger sums it (System + Podruntime full
# avg10), at its highest; in hundredths.
full10() { awk '/^full/{split($2, a, "="); printf "%d", a[2] * 100}' "$CG/$1/memory.pressure"; }
min=100 max=0 stall=0 i=0
while [ $i -lt ${DURATION:-180} ]; do
    used=$(awk '/^MemTotal/{t=$2} /^MemAvailable/{a=$2} END {printf "%d", (t - a) * 100 / t}' /proc/meminfo)
    [ "$used" -lt "$min" ] && min=$used
    [ "$used" -gt "$max" ] && max=$used
    s=$(( $(full10 $SYSTEM) + $(full10 $PODRUNTIME) ))
    [ "$s" -gt "$stall" ] && stall=$s
    [ $((i % 10)) = 0 ] && log "used ${used}% system[$(psi $SYSTEM)] podruntime[$(psi $PODRUNTIME)] node[$(psi "")] steady=$(( $(cat $S/memory.current) >> 20 ))MiB"
    sleep 1; i=$((i + 1))
done
check "the node stayed full: 88-97 % used (MemTotal - MemAvailable)" "min ${min}% max ${max}%" sh -c "[ $min -ge 88 ] && [ $max -le 97 ]"
check "and healthy: the services' stall (System + Podruntime full avg10) stayed under 5 %" "at most $((stall / 100)).$((stall % 100 / 10))$((stall % 10)) %" [ "$stall" -lt 500 ]
printf '{"contender":"%s","lru":"%s","shape":"full-but-healthy","kills":%s,"kernelOomKills":%s,"usedPercentMin":%s,"usedPercentMax":%s,"serviceStallMax":%s}\n' \
    "$C" "$LRU" "$(contender_kills "$C")" "$(( $(oom_kills) - OOM_BEFORE ))" "$min" "$max" "$((stall / 100)).$((stall % 100 / 10))$((stall % 10))" > "$OUT/episode.json"
check "no action was taken" "$(records) records, $(contender_kills "$C") kills" sh -c "[ $(records) = 0 ] && [ $(contender_kills "$C") = 0 ]"
check "every workload is alive" "$STEADY $READER $SVC1 $SVC2" sh -c "kill -0 $STEADY && kill -0 $READER && kill -0 $SVC1 && kill -0 $SVC2"
check "the kernel OOM killer did not fire" "oom_kill $OOM_BEFORE -> $(oom_kills)" [ "$(oom_kills)" = "$OOM_BEFORE" ]
finish
