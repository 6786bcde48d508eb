#!/bin/sh
# vm: --mem 1G --scratch-disk 2G --append transparent_hugepage=never
# S1 hog: a BestEffort pod eats memory until the node's own services stall; oomwarden with the
# default configuration kills that pod's whole cgroup, exactly once, before the kernel has to.
SCENARIO=s1-hog
. /root/lib.sh
# Classic LRU: with MGLRU (6.12's default) few file refaults count as workingset restores,
# so PSI hardly sees the thrash (measured; see docs/vm-tests.md).
set_lru
node_layout
disk_services
OOM_BEFORE=$(oom_kills)
start_oomwarden
P=$(pod besteffort hog)
# Most of RAM at once, then a slow leak (5 MiB/s), both in the pod's container.
FAST=$(start_in "$(ctr "$P")" hog -s 16 -i 20 -m ${FAST_MB:-450} -H -1)
LEAK=$(start_in "$(ctr "$P")" hog -s 5 -i 1000)
watch_hog "$P" 240
sleep 8   # would a second kill follow?
check "oomwarden killed the hog's pod" "$P" grep -q "\"kind\":\"oomwarden\",\"outcome\":\"killed\",\"victim\":\"$P\"" "$STATE/actions.jsonl"
check "exactly one kill" "$(count_outcome killed)" [ "$(count_outcome killed)" = 1 ]
check "the pod cgroup is empty" "$P" sh -c "! grep -q 'populated 1' $P/cgroup.events"
check "both hogs are gone" "$FAST $LEAK" sh -c "! kill -0 $FAST 2>/dev/null && ! kill -0 $LEAK 2>/dev/null"
check "system and podruntime services survive" "$SVC1 $SVC2 $RUNTIME" sh -c "kill -0 $SVC1 && kill -0 $SVC2 && kill -0 $RUNTIME"
check "the kernel OOM killer did not fire" "oom_kill $OOM_BEFORE -> $(oom_kills)" [ "$(oom_kills)" = "$OOM_BEFORE" ]
finish
