#!/bin/sh
# vm: --mem 1G --scratch-disk 2G --append transparent_hugepage=never
# S26 pid-namespace: the daemon in a PID namespace of its own, as a DaemonSet is under Talos's
# workload isolation (sandboxd) or with a hostPID that is not the host's: the node's services
# and the pods' processes are invisible to it (cgroup.procs lists each as 0), the cgroup tree
# is the host's. With the default configuration and S1's hog it must still kill the hog's pod
# whole, exactly once, verified from cgroup.events, before the kernel OOM killer; say at start
# what it cannot see (doctor's foreign-pid-namespace); and list no PID it cannot reach.
SCENARIO=s26-pid-namespace
. /root/lib.sh
set_lru
node_layout
disk_services
OOM_BEFORE=$(oom_kills)
OOMW_WRAP="unshare -p -f -m --mount-proc" start_oomwarden
# The daemon itself, by its PID here (the wrapper's child).
DAEMON=""
for d in /proc/[0-9]*; do [ "$(cat "$d/comm" 2>/dev/null)" = oomwarden ] && DAEMON=${d#/proc/}; done
check "the daemon runs in another PID namespace" "$(readlink /proc/$DAEMON/ns/pid) vs $(readlink /proc/self/ns/pid)" \
    sh -c "[ -n '$DAEMON' ] && [ \"\$(readlink /proc/$DAEMON/ns/pid)\" != \"\$(readlink /proc/self/ns/pid)\" ]"
wait_for 30 grep -q '"finding":"foreign-pid-namespace"' "$OUT/oomwarden.log" || true
check "it says at start what it cannot see" "see oomwarden.log" grep -q '"finding":"foreign-pid-namespace"' "$OUT/oomwarden.log"
P=$(pod besteffort hog)
FAST=$(start_in "$(ctr "$P")" hog -s 16 -i 20 -m ${FAST_MB:-450} -H -1)
LEAK=$(start_in "$(ctr "$P")" hog -s 5 -i 1000)
watch_hog "$P" 240
sleep 8   # would a second kill follow?
check "oomwarden killed the hog's pod" "$P" grep -q "\"kind\":\"oomwarden\",\"outcome\":\"killed\",\"victim\":\"$P\"" "$STATE/actions.jsonl"
check "exactly one kill" "$(count_outcome killed)" [ "$(count_outcome killed)" = 1 ]
check "the pod cgroup is empty" "$P" sh -c "! grep -q 'populated 1' $P/cgroup.events"
check "both hogs are gone" "$FAST $LEAK" sh -c "! kill -0 $FAST 2>/dev/null && ! kill -0 $LEAK 2>/dev/null"
PIDS=$(grep -o '"pids":\[[^]]*\]' "$STATE/actions.jsonl" | head -n1)
check "the record lists no PID it cannot reach (no 0)" "${PIDS:-no pids field}" sh -c "! echo '$PIDS' | grep -qE '[[,]0[],]'"
check "system and podruntime services survive" "$SVC1 $SVC2 $RUNTIME" sh -c "kill -0 $SVC1 && kill -0 $SVC2 && kill -0 $RUNTIME"
check "the kernel OOM killer did not fire" "oom_kill $OOM_BEFORE -> $(oom_kills)" [ "$(oom_kills)" = "$OOM_BEFORE" ]
OOMWARDEN=$DAEMON
finish
