#!/bin/sh
# vm: --mem 1G --scratch-disk 2G --append transparent_hugepage=never --append psi=0
# S25 no-psi: a kernel booted with psi=0 (no /proc/pressure, no memory.pressure files). The
# default configuration reads PSI (Talos's stall clause): `oomwarden run` refuses with exit 3
# and a message naming psi=0 and the variables it reads. A policy that reads no PSI
# (examples/config/no-psi.yaml, the recommended trend clause alone) starts, says it runs
# without PSI, and kills S20's hog before the kernel OOM killer does.
SCENARIO=s25-no-psi
. /root/lib.sh
set_lru
node_layout
disk_services
check "the kernel has no PSI" "$(ls /proc/pressure "$CG/memory.pressure" 2>&1)" \
    sh -c "[ ! -e /proc/pressure/memory ] && [ ! -e $CG/memory.pressure ]"
OOM_BEFORE=$(oom_kills)
rc=0
oomwarden run --state-dir /tmp/refused > /dev/null 2> "$OUT/refused.log" || rc=$?
check "the default configuration is refused with exit 3" "rc=$rc" [ "$rc" = 3 ]
check "the refusal names psi=0 and what reads PSI" "$(cat "$OUT/refused.log")" \
    sh -c "grep -q 'booted with psi=0' '$OUT/refused.log' && grep -q 'qos_memory_full_avg10' '$OUT/refused.log'"
start_oomwarden --config /root/config/no-psi.yaml
check "the daemon says it runs without PSI" "see oomwarden.log" \
    grep -q 'running without memory pressure (PSI)' "$OUT/oomwarden.log"
P=$(pod besteffort hog)
FAST=$(start_in "$(ctr "$P")" hog -s 16 -i 20 -m 450 -H -1)
LEAK=$(start_in "$(ctr "$P")" hog -s 5 -i 1000)
watch_hog "$P" 150
sleep 5   # would a second kill follow?
check "oomwarden killed the hog's pod" "$P" grep -q "\"kind\":\"oomwarden\",\"outcome\":\"killed\",\"victim\":\"$P\"" "$STATE/actions.jsonl"
check "exactly one kill" "$(count_outcome killed)" [ "$(count_outcome killed)" = 1 ]
check "the kernel OOM killer did not fire" "oom_kill $OOM_BEFORE -> $(oom_kills)" [ "$(oom_kills)" = "$OOM_BEFORE" ]
check "system and podruntime services survive" "$SVC1 $SVC2 $RUNTIME" sh -c "kill -0 $SVC1 && kill -0 $SVC2 && kill -0 $RUNTIME"
# A missing pressure file is no read problem: the only lines about pressure are the start's
# (the daemon's, and the doctor's psi-missing finding).
PRESSURE_LINES=$(grep -E '"(WARN|ERROR)"' "$OUT/oomwarden.log" | grep -v -e 'running without memory pressure' -e '"finding":"psi-missing"' | grep -c 'pressure' || true)
check "the doctor's finding at start says PSI is off" "see oomwarden.log" grep -q '"finding":"psi-missing"' "$OUT/oomwarden.log"
check "no warning or error about pressure files after the start" "$PRESSURE_LINES lines" [ "$PRESSURE_LINES" = 0 ]
finish
