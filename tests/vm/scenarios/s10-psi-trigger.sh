#!/bin/sh
# vm: --mem 1G --scratch-disk 2G --append transparent_hugepage=never
# S10 PSI triggers: as S1, but sampling only every 20 s, with kernel PSI triggers registered on
# the System and Podruntime cgroups, and the default trigger's stall-rate clause alone (the
# 10-second averages of the second clause lag any wake-up). The stall wakes a cycle at once: the
# hog's pod is killed by a cycle the kernel woke (its record says `wakeup: pressure`), long
# before the next tick, and the kernel OOM killer did not fire.
SCENARIO=s10-psi-trigger
. /root/lib.sh
set_lru
node_layout
disk_services
cat > /root/oom.yaml <<'YAML'
apiVersion: v1alpha1
kind: OOMConfig
triggerExpression: |-
  multiply_qos_vectors(d_qos_memory_full_total, {System: 8.0, Podruntime: 4.0}) > 3000.0 &&
  time_since_trigger > duration("5s")
sampleInterval: 20s
---
apiVersion: oomwarden/v1alpha1
kind: OOMWardenConfig
psiTriggers:
  enabled: true
  kind: full
  stall: 50ms
  window: 1s
YAML
OOM_BEFORE=$(oom_kills)
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
start_oomwarden --config /root/oom.yaml --metrics-listen 127.0.0.1:9465
# The line comes after "oomwarden started" (which start_oomwarden waits for): give it time.
check "triggers are registered" "oomwarden.log" wait_for 10 grep -q 'PSI triggers registered' "$OUT/oomwarden.log"
P=$(pod besteffort hog)
FAST=$(start_in "$(ctr "$P")" hog -s 16 -i 20 -m ${FAST_MB:-450} -H -1)
LEAK=$(start_in "$(ctr "$P")" hog -s 5 -i 1000)
i=0
while [ $i -lt 240 ] && [ "$(count_outcome killed)" = 0 ] && alive "$LEAK"; do sleep 1; i=$((i + 1)); done
# The hogs die at the kill; the record follows the verification (up to killTimeout): wait for it.
wait_for 10 grep -q '"kind":"oomwarden","outcome":"killed"' "$STATE/actions.jsonl"
wget -qO "$OUT/metrics.txt" http://127.0.0.1:9465/metrics
check "oomwarden killed the hog's pod" "$P" grep -q "\"kind\":\"oomwarden\",\"outcome\":\"killed\",\"victim\":\"$P\"" "$STATE/actions.jsonl"
check "the kill was a cycle the kernel woke" "actions.jsonl" grep -q '"kind":"oomwarden","outcome":"killed".*"wakeup":"pressure"' "$STATE/actions.jsonl"
check "cycles ran on pressure events" "$(grep '^oomwarden_pressure_events_total' "$OUT/metrics.txt")" \
    grep -q '^oomwarden_pressure_events_total [1-9]' "$OUT/metrics.txt"
check "the kernel OOM killer did not fire" "$OOM_BEFORE -> $(oom_kills)" [ "$(oom_kills)" = "$OOM_BEFORE" ]
check "system and podruntime services survive" "$SVC1 $SVC2 $RUNTIME" sh -c "kill -0 $SVC1 && kill -0 $SVC2 && kill -0 $RUNTIME"
finish
