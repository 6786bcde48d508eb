#!/bin/sh
# S6 dry-run: the decision is recorded, nothing dies; the metrics endpoint counts it, and the
# action API (oomwarden status / actions on the daemon's socket) shows it.
SCENARIO=s6-dry-run
. /root/lib.sh
node_layout
cat > /root/oom.yaml <<'YAML'
apiVersion: v1alpha1
kind: OOMConfig
# Fires once the BestEffort pods hold 150 MiB (a deterministic trigger for this scenario).
triggerExpression: qos_memory_current[Besteffort] > 150.0 * 1048576.0 && time_since_trigger > duration("1h")
sampleInterval: 200ms
YAML
P=$(pod besteffort hog)
HOG=$(start_in "$(ctr "$P")" hog -s 16 -i 50 -m 200 -H -1)
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
start_oomwarden --config /root/oom.yaml --dry-run --metrics-listen 127.0.0.1:9465
check "a dry-run record is written" "actions.jsonl" wait_for 60 grep -q '"kind":"oomwarden","outcome":"dry-run"' "$STATE/actions.jsonl"
sleep 2
check "the victim is the hog's pod" "$P" grep -q "\"kind\":\"oomwarden\",\"outcome\":\"[a-z-]*\",\"victim\":\"$P\"" "$STATE/actions.jsonl"
check "the record lists the hog's PID" "pid $HOG" grep -q "\"pids\":\[$HOG\]" "$STATE/actions.jsonl"
check "the hog is alive" "pid $HOG" alive "$HOG"
check "the pod is still populated" "$P" populated "$P"
check "exactly one record (1 h cooldown)" "$(records)" [ "$(records)" = 1 ]
wget -qO "$OUT/metrics.txt" http://127.0.0.1:9465/metrics
check "the metrics endpoint counts the dry-run decision" "metrics.txt" \
    grep -q '^oomwarden_kills_total{class="Besteffort",outcome="dry-run",namespace=""} 1$' "$OUT/metrics.txt"
check "and the trigger's firings" "metrics.txt" grep -q '^oomwarden_trigger_firings_total 1$' "$OUT/metrics.txt"
check "the action API socket is root-only" "$(ls -l "$STATE/oomwarden.sock")" sh -c "ls -l $STATE/oomwarden.sock | grep -q '^srw------- '"
oomwarden status --json --state-dir "$STATE" > "$OUT/status.json" 2>&1
check "oomwarden status answers from the daemon" "status.json" sh -c "grep -q '\"lastCycleResult\": \"quiet\"' $OUT/status.json && grep -q 'dryRun: true' $OUT/status.json && grep -q '\"lastTriggerAt\": \"20' $OUT/status.json"
oomwarden actions --state-dir "$STATE" > "$OUT/actions.txt" 2>&1
check "oomwarden actions lists the decision from the daemon" "actions.txt" sh -c "grep -q 'dry-run' $OUT/actions.txt && ! grep -q 'not answering' $OUT/actions.txt"
finish
