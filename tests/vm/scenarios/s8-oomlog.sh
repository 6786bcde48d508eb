#!/bin/sh
# S8 oomlog: the kernel's own OOM kills, as `oomwarden oomlog` reports them on this kernel: a
# memcg OOM (a container over its limit), a memory.oom.group kill (the whole container), and a
# global OOM (the node out of memory, no handler running). The live /dev/kmsg reading and the
# saved dmesg must give the same events.
SCENARIO=s8-oomlog
. /root/lib.sh
node_layout
gone() { grep -q 'populated 0' "$1/cgroup.events"; }
# died CGROUP SECONDS: the kernel OOM-killed a process of it (memory.events oom_kill counts
# kills by any OOM killer), then all of it is gone. An empty cgroup alone proves nothing:
# `start_in` moves the process in the background.
killed() { grep -q '^oom_kill [1-9]' "$1/memory.events"; }
died() { wait_for "$2" killed "$1" && wait_for 10 gone "$1"; }

# 1. memcg: a container limited to 64 MiB allocates 200 MiB.
P1=$(pod burstable memcg)
C1=$(ctr "$P1")
echo 64M > "$C1/memory.max"
M1=$(start_in "$C1" hog -s 8 -i 10 -m 200 -H -1)
check "memcg OOM killed the container's process" "$M1" died "$C1" 60

# 2. group: the same with memory.oom.group=1 and a second, small process that must die too.
P2=$(pod burstable group)
C2=$(ctr "$P2")
echo 64M > "$C2/memory.max"
echo 1 > "$C2/memory.oom.group"
S2=$(start_in "$C2" hog -s 1 -i 10 -m 1 -H -1)
sleep 1
wait_for 10 populated "$C2"
M2=$(start_in "$C2" hog -s 8 -i 10 -m 200 -H -1)
check "group OOM killed the whole container" "$M2 $S2" died "$C2" 60

# 3. global: a BestEffort pod without limits takes more than the node has.
P3=$(pod besteffort global)
C3=$(ctr "$P3")
M3=$(start_in "$C3" hog -s 32 -i 10 -m 4000 -H -1)
check "global OOM killed the hog" "$M3" died "$C3" 180

oomwarden oomlog --json > "$OUT/oomlog-live.json" 2> "$OUT/oomlog-live.err"
check "oomlog reads the live kernel log" "exit $?" test -s "$OUT/oomlog-live.json"
dmesg > "$OUT/dmesg.txt"
oomwarden oomlog "$OUT/dmesg.txt" --json > "$OUT/oomlog-dmesg.json"
oomwarden oomlog "$OUT/dmesg.txt" > "$OUT/oomlog-dmesg.txt"
cat "$OUT/oomlog-dmesg.txt"
L=$OUT/oomlog-live.json
count() { grep -c "$1" "$L"; }
check "three events: two memcg, one global" "$(count '"kind": "memcg"') $(count '"kind": "global"')" \
    sh -c "[ $(count '"kind": "memcg"') = 2 ] && [ $(count '"kind": "global"') = 1 ] && [ $(count '"victimPid"') = 3 ]"
check "the memcg victims and the global one are the hogs" "$M1 $M2 $M3" \
    sh -c "grep -q '\"victimPid\": $M1,' $L && grep -q '\"victimPid\": $M2,' $L && grep -q '\"victimPid\": $M3,' $L"
check "the memcg OOM names the container's memory cgroup" "${C1#$CG}" grep -q "\"oomMemcg\": \"${C1#$CG}\"" "$L"
check "the group kill is marked and lists the small process too" "$S2" \
    sh -c "[ $(count '"groupKill": true') = 1 ] && grep -q '\"pid\": $S2,' $L"
check "only the global OOM is a kubelet SystemOOM" "$(count '"kubeletSystemOOM": true')" \
    sh -c "[ $(count '"kubeletSystemOOM": true') = 1 ]"
check "every event has its uptime and a wall time" "" \
    sh -c "[ $(count '"uptimeSeconds": [0-9]') = 3 ] && [ $(count '"time": "20') = 3 ]"
grep -v '"time":' "$L" > /tmp/a; grep -v '"time":' "$OUT/oomlog-dmesg.json" > /tmp/b
check "the saved dmesg gives the same events" "" cmp -s /tmp/a /tmp/b
finish
