#!/bin/sh
# vm: --mem 1G --scratch-disk 4G --append transparent_hugepage=never
# S18 full but healthy (issue 19): the node held at 90-95 % used by a stable anonymous
# working set (a Guaranteed-sized steady pod, nothing growing), page cache churning beside it
# (a pod re-reading files larger than what is left), the node services running, for 3
# minutes. A policy must kill nothing here: the node is full, not running out. CONFIG names
# the configuration under test (default: the embedded defaults). Kept beside the benchmark
# until the recommended policy it is for exists (then in scenarios/, in the suite).
SCENARIO=s18-full-but-healthy
. /root/lib.sh
set_lru
node_layout
disk_services
big_files
OOM_BEFORE=$(oom_kills)
start_oomwarden ${CONFIG:+--config "$CONFIG"}
total=$(awk '/^MemTotal/{print $2}' /proc/meminfo)
avail=$(awk '/^MemAvailable/{print $2}' /proc/meminfo)
# Take what is available down to 7 % of the node, in one steady pod that then only re-touches.
want=$(( (avail - total * 7 / 100) / 1024 ))
S=$(pod burstable steady)
STEADY=$(start_in "$(ctr "$S")" hog -s 16 -i 50 -m "$want" -H -1)
log "steady pod takes ${want} MiB (MemTotal ${total} kB, MemAvailable ${avail} kB)"
wait_for 120 sh -c "[ \$(( \$(cat $S/memory.current) >> 20 )) -ge $((want - 8)) ]" || log "the steady pod did not reach ${want} MiB"
R=$(pod besteffort reader)
READER=$(start_in "$(ctr "$R")" sh -c 'while :; do cat /mnt/big/* > /dev/null; done')
min=100 max=0 i=0
while [ $i -lt ${DURATION:-180} ]; do
    used=$(awk '/^MemTotal/{t=$2} /^MemAvailable/{a=$2} END {printf "%d", (t - a) * 100 / t}' /proc/meminfo)
    [ "$used" -lt "$min" ] && min=$used
    [ "$used" -gt "$max" ] && max=$used
    [ $((i % 10)) = 0 ] && log "used ${used}% system[$(psi $SYSTEM)] podruntime[$(psi $PODRUNTIME)] node[$(psi "")] steady=$(( $(cat $S/memory.current) >> 20 ))MiB"
    sleep 1; i=$((i + 1))
done
check "the node stayed full: 88-97 % used (MemTotal - MemAvailable)" "min ${min}% max ${max}%" sh -c "[ $min -ge 88 ] && [ $max -le 97 ]"
check "no action was taken" "$(records) records" [ "$(records)" = 0 ]
check "every workload is alive" "$STEADY $READER $SVC1 $SVC2" sh -c "kill -0 $STEADY && kill -0 $READER && kill -0 $SVC1 && kill -0 $SVC2"
check "the kernel OOM killer did not fire" "oom_kill $OOM_BEFORE -> $(oom_kills)" [ "$(oom_kills)" = "$OOM_BEFORE" ]
finish
