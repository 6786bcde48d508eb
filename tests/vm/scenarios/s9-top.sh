#!/bin/sh
# vm: --mem 1G --scratch-disk 1G
# S9 top: pods with anonymous memory, page cache and shmem on a real kernel. The cgroup and
# proc files are snapshotted into /out/snap; `oomwarden top` on that snapshot must agree with
# a hand computation from the same memory.stat files (working set = memory.current −
# inactive_file; root usage = anon + file; memory.available = MemTotal − root working set),
# and `oomwarden top` on the live tree must run. The snapshot is kept as a test fixture.
SCENARIO=s9-top
. /root/lib.sh
node_layout
mke2fs -q /dev/vda && mkdir -p /mnt && mount -t ext4 /dev/vda /mnt || { log "no scratch disk"; exit 1; }
dd if=/dev/urandom of=/mnt/data bs=1M count=96 2>/dev/null
sync; echo 3 > /proc/sys/vm/drop_caches
# Pod UIDs as names, so that `top --pods` can join them (testdata/top/pods.json).
ANON=$(pod besteffort 11111111-1111-4111-8111-111111111111)
A=$(start_in "$(ctr "$ANON")" hog -s 8 -i 10 -m 120 -H -1)
CACHE=$(pod burstable 22222222-2222-4222-8222-222222222222)
echo 200M > "$(ctr "$CACHE")/memory.high"
echo 32M > "$(ctr "$CACHE")/memory.low"
# Read the file twice from the pod: the second read promotes pages to the active list.
start_in "$(ctr "$CACHE")" sh -c 'cat /mnt/data > /dev/null; cat /mnt/data > /dev/null; exec sleep 600' > /dev/null
SHM=$(pod burstable 33333333-3333-4333-8333-333333333333 256M)
start_in "$(ctr "$SHM")" sh -c 'dd if=/dev/zero of=/dev/shm/blob bs=1M count=40 2>/dev/null; exec sleep 600' > /dev/null
echo 16M > "$(ctr "$SHM")/memory.min"
wait_for 30 sh -c "[ \$(cat $ANON/memory.current) -gt 120000000 ]"
wait_for 60 sh -c "[ \$(awk '\$1 == \"file\" {print \$2}' $CACHE/memory.stat) -gt 90000000 ]"
wait_for 30 sh -c "[ \$(awk '\$1 == \"shmem\" {print \$2}' $SHM/memory.stat) -ge 41943040 ]"
sleep 2

# Snapshot every file top reads, for the directories of the layout.
SNAP=$OUT/snap
for d in $(cd "$CG" && find . -type d); do
    mkdir -p "$SNAP/cgroup/$d"
    for f in memory.current memory.stat memory.max memory.high memory.low memory.min memory.pressure memory.events memory.peak cgroup.events cgroup.controllers; do
        [ -r "$CG/$d/$f" ] && cat "$CG/$d/$f" > "$SNAP/cgroup/$d/$f" 2>/dev/null
    done
done
mkdir -p "$SNAP/proc/pressure"
cat /proc/meminfo > "$SNAP/proc/meminfo"; cat /proc/zoneinfo > "$SNAP/proc/zoneinfo"
cat /proc/pressure/memory > "$SNAP/proc/pressure/memory"

oomwarden top --json --containers --cgroup-root "$SNAP/cgroup" --proc-root "$SNAP/proc" > "$OUT/top-snap.json" 2> "$OUT/top-snap.err"
check "top runs on the snapshot" "exit $?" test -s "$OUT/top-snap.json"
oomwarden top --containers > "$OUT/top-live.txt" 2>&1
check "top runs on the live tree" "exit $?" grep -q 'kubelet view' "$OUT/top-live.txt"
cat "$OUT/top-live.txt"

# field CGROUP KEY -> the value of KEY in top's JSON row of CGROUP.
field() { awk -v cg="\"cgroup\": \"$1\"," -v key="\"$2\": " 'index($0, cg) { on = 1 } on && index($0, key) { sub(/.*: /, ""); sub(/,$/, ""); print; exit }' "$OUT/top-snap.json"; }
stat() { awk -v k="$2" '$1 == k { print $2 }' "$SNAP/cgroup/$1/memory.stat"; }
for p in "${ANON#$CG/}" "${CACHE#$CG/}" "${SHM#$CG/}"; do
    want=$(( $(cat "$SNAP/cgroup/$p/memory.current") - $(stat "$p" inactive_file) ))
    [ "$want" -lt 0 ] && want=0
    check "working set of $p = memory.current - inactive_file" "$want vs $(field "$p" workingSetBytes)" [ "$(field "$p" workingSetBytes)" = "$want" ]
    check "anon of $p from memory.stat" "$(stat "$p" anon)" [ "$(field "$p" anonBytes)" = "$(stat "$p" anon)" ]
done
check "the page-cache pod holds the file in its page cache" "$(stat "${CACHE#$CG/}" active_file) $(stat "${CACHE#$CG/}" inactive_file)" \
    sh -c "[ $(stat "${CACHE#$CG/}" file) -gt 50000000 ]"
check "the shmem pod's shmem is counted" "$(field "${SHM#$CG/}" shmemBytes)" sh -c "[ $(field "${SHM#$CG/}" shmemBytes) -ge 40000000 ]"
check "memory.high and memory.min are read" "" sh -c "grep -q '\"memoryHighBytes\": 209715200' $OUT/top-snap.json && grep -q '\"memoryMinBytes\": 16777216' $OUT/top-snap.json"
RU=$(( $(stat "" anon) + $(stat "" file) ))
RWS=$(( RU - $(stat "" inactive_file) ))
TOTAL=$(( $(awk '/^MemTotal:/{print $2}' "$SNAP/proc/meminfo") * 1024 ))
check "root usage = anon + file" "$RU" grep -q "\"rootUsageBytes\": $RU," "$OUT/top-snap.json"
check "root working set = usage - inactive_file" "$RWS" grep -q "\"rootWorkingSetBytes\": $RWS," "$OUT/top-snap.json"
check "memory.available = MemTotal - root working set" "$((TOTAL - RWS))" grep -q "\"kubeletMemoryAvailableBytes\": $((TOTAL - RWS))," "$OUT/top-snap.json"
check "distance to memory.available<100Mi" "$((TOTAL - RWS - 104857600))" grep -q "\"distanceToEvictionBytes\": $((TOTAL - RWS - 104857600))," "$OUT/top-snap.json"
finish
