#!/bin/sh
# vm: --mem 1G --scratch-disk 2G --timeout 600 --append transparent_hugepage=never
# needs: containerd
# S22 response stages (issue 34), on the distribution's containerd and runc: a `warn` stage and
# a `terminate` stage (grace 5 s) below a trigger that never fires. A BestEffort pod whose
# container traps SIGTERM and exits cleanly grows: the warning is recorded first, then the
# stage sends SIGTERM and records `terminated` (the runtime reports exit 0). Then a pod whose
# container ignores SIGTERM grows: warned again, SIGTERM, and killed when the grace ends (the
# record names the stage; exit 137). The trigger never kills.
SCENARIO=s22-stages
. /root/lib.sh
. /root/cri.sh
node_layout
start_containerd
cat > /root/oom.yaml <<'YAML'
apiVersion: v1alpha1
kind: OOMConfig
# The kill threshold, far above what the pods take: only the stages act.
triggerExpression: qos_memory_current[Besteffort] > 4096.0 * 1048576.0
sampleInterval: 200ms
---
apiVersion: oomwarden/v1alpha1
kind: OOMWardenConfig
stages:
  # Its hold-down (issue 54): the condition false for 2 s ends an episode, so the second pod's
  # growth is a new one and warns again (a flapping condition would warn once).
  - name: early
    when: qos_memory_current[Besteffort] > 100.0 * 1048576.0
    action: warn
    grace: 2s
  - name: shed
    when: qos_memory_current[Besteffort] > 150.0 * 1048576.0
    action: terminate
    grace: 5s
YAML
start_oomwarden --config /root/oom.yaml --metrics-listen 127.0.0.1:9465
# records OUTCOME -> the records with that outcome.
records() { local n; n=$(cat "$STATE/actions.jsonl" 2>/dev/null | grep -c "\"outcome\":\"$1\"") || true; echo "${n:-0}"; }
CLEAN=$(pod_uid 1)
need cri run --namespace shop --name clean-5d78c9869d-x2k4q --uid "$CLEAN" --qos besteffort \
    --container "app=oomwarden.test/hog:1 -t -s 16 -i 100 -m 200 -H -1"
setup_ok
need wait_for 120 sh -c "[ \$(cat $STATE/actions.jsonl 2>/dev/null | grep -c '\"outcome\":\"terminated\"') -ge 1 ]"
P1=$CG/kubepods/besteffort/pod$CLEAN
grep '"outcome":"warned"' "$STATE/actions.jsonl" | head -n1 > "$OUT/warned.json"
grep '"outcome":"terminated"' "$STATE/actions.jsonl" | head -n1 > "$OUT/terminated.json"
W=$(sed 's/^{"id":\([0-9]*\),.*/\1/' "$OUT/warned.json")
T=$(sed 's/^{"id":\([0-9]*\),.*/\1/' "$OUT/terminated.json")
check "the warn stage recorded first" "warned $W, terminated $T" [ "${W:-99}" -lt "${T:-0}" ]
check "the warning names its stage" "warned.json" grep -q '"stage":"early"' "$OUT/warned.json"
check "the terminated pod is the clean one" "$P1" grep -q "\"victim\":\"$P1\"" "$OUT/terminated.json"
check "the termination names its stage" "terminated.json" grep -q '"stage":"shed"' "$OUT/terminated.json"
MS=$(sed -n 's/.*"killDurationMs":\([0-9.]*\).*/\1/p' "$OUT/terminated.json")
check "it exited within its grace" "${MS} ms" awk -v ms="${MS:-99999}" 'BEGIN { exit !(ms < 5000) }'
wait_for 30 sh -c "cri-driver ps | grep '\"name\":\"app\"' | grep -q CONTAINER_EXITED"
cri-driver ps > "$OUT/ps-clean.jsonl"
check "the runtime reports the clean container exited 0" "ps-clean.jsonl" \
    sh -c "grep '\"name\":\"app\"' $OUT/ps-clean.jsonl | grep CONTAINER_EXITED | grep -q '\"exitCode\":0'"
check "nothing was killed yet" "$(records killed) killed" [ "$(records killed)" = 0 ]
# The second pod: its container ignores SIGTERM.
STUB=$(pod_uid 2)
P2=$CG/kubepods/besteffort/pod$STUB
need cri run --namespace shop --name stubborn-7f9c6d-hq2lm --uid "$STUB" --qos besteffort \
    --container "app=oomwarden.test/hog:1 -T -s 16 -i 100 -m 200 -H -1"
setup_ok
need wait_for 120 sh -c "[ \$(cat $STATE/actions.jsonl | grep -c '\"outcome\":\"killed\"') -ge 1 ]"
grep '"outcome":"killed"' "$STATE/actions.jsonl" | head -n1 > "$OUT/killed.json"
check "the stubborn pod was killed" "$P2" grep -q "\"victim\":\"$P2\"" "$OUT/killed.json"
check "the kill names the stage" "killed.json" grep -q '"stage":"shed"' "$OUT/killed.json"
check "warned again before" "$(records warned) warned" [ "$(records warned)" = 2 ]
# The kill came when the grace ended: after the log's SIGTERM to the pod's container.
SIGTERM_AT=$(grep 'Sending SIGTERM to cgroup' "$OUT/oomwarden.log" | grep "pod$STUB" | head -n1 | sed 's/.*"timestamp":"\([^"]*\)".*/\1/')
KILL_AT=$(sed 's/.*"time":"\([^"]*\)".*/\1/' "$OUT/killed.json")
# Seconds of the day of an RFC 3339 time (the guest's date cannot parse one).
secs() { echo "$1" | sed 's/.*T\([0-9:.]*\).*/\1/' | awk -F: '{ print $1 * 3600 + $2 * 60 + $3 }'; }
GAP=$(awk -v a="$(secs "$SIGTERM_AT")" -v b="$(secs "$KILL_AT")" 'BEGIN { print b - a }')
# The grace counts from the start of the cycle that signalled; the log line comes later in
# that cycle, and the record's time is its own cycle's start: within one sample interval.
check "the kill waited out the grace" "SIGTERM $SIGTERM_AT, kill $KILL_AT (${GAP} s)" \
    awk -v g="$GAP" 'BEGIN { exit !(g >= 4.8) }'
wait_for 30 sh -c "cri-driver ps | grep '\"name\":\"app\"' | grep CONTAINER_EXITED | grep -q '\"exitCode\":137'"
cri-driver ps > "$OUT/ps-stubborn.jsonl"
check "the runtime reports the stubborn container exited 137" "ps-stubborn.jsonl" \
    sh -c "grep '\"name\":\"app\"' $OUT/ps-stubborn.jsonl | grep CONTAINER_EXITED | grep -q '\"exitCode\":137'"
check "the trigger never fired" "records without a stage" \
    sh -c "! grep '\"kind\":\"oomwarden\"' $STATE/actions.jsonl | grep -vq '\"stage\"'"
wget -qO "$OUT/metrics.txt" http://127.0.0.1:9465/metrics
check "the stage metrics count them" "metrics.txt" sh -c \
    "grep -q '^oomwarden_stage_actions_total{stage=\"early\",outcome=\"warned\"} 2$' $OUT/metrics.txt && grep -q '^oomwarden_stage_actions_total{stage=\"shed\",outcome=\"terminated\"} 1$' $OUT/metrics.txt && grep -q '^oomwarden_stage_actions_total{stage=\"shed\",outcome=\"killed\"} 1$' $OUT/metrics.txt"
check "containerd survives" "$CONTAINERD" alive "$CONTAINERD"
check "oomwarden survives" "$OOMWARDEN" alive "$OOMWARDEN"
finish
