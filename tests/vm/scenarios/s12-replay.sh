#!/bin/sh
# vm: --mem 1G --scratch-disk 2G --append transparent_hugepage=never
# S12 replay: S1's hog with the daemon recording every cycle (run --record) and its flight
# recorder on. Replayed in the guest, the recording gives exactly the daemon's decisions (time,
# outcome, victim, score, trigger context), and so does the window the flight recorder saved
# with the kill; the window fetched from the running daemon replays too.
SCENARIO=s12-replay
. /root/lib.sh
set_lru
node_layout
disk_services
cat > /root/warden.yaml <<'YAML'
apiVersion: oomwarden/v1alpha1
kind: OOMWardenConfig
flightRecorder:
  enabled: true
  window: 30s
YAML
start_oomwarden --config /root/warden.yaml --record "$OUT/recording.rec"
P=$(pod besteffort hog)
Q=$(pod besteffort quiet)
QUIET=$(start_in "$(ctr "$Q")" hog -s 8 -i 100 -m 24 -H -1)
FAST=$(start_in "$(ctr "$P")" hog -s 16 -i 20 -m ${FAST_MB:-450} -H -1)
LEAK=$(start_in "$(ctr "$P")" hog -s 5 -i 1000)
i=0
while [ $i -lt 240 ] && [ "$(count_outcome killed)" = 0 ] && alive "$LEAK"; do
    [ $((i % 10)) = 0 ] && log "pod=$(( $(cat $P/memory.current) >> 20 ))MiB system[$(psi $SYSTEM)] podruntime[$(psi $PODRUNTIME)]"
    sleep 1; i=$((i + 1))
done
# Fetch the window and stop the daemon well inside the 5 s cooldown: after it, Talos's default
# may rightly fire again if the node's services still stall, and kill the quiet pod (measured
# under TCG: Podruntime stalling 2.7 ms/s 5.5 s after the kill).
sleep 1
oomwarden record --from-daemon --state-dir "$STATE" --out "$OUT/window.rec" 2>> "$OUT/replay.log"
kill -TERM "$OOMWARDEN"; wait "$OOMWARDEN" 2>/dev/null
check "oomwarden killed the hog's pod" "$P" grep -q "\"kind\":\"oomwarden\",\"outcome\":\"killed\",\"victim\":\"$P\"" "$STATE/actions.jsonl"
oomwarden replay "$OUT/recording.rec" > "$OUT/replay.txt" 2>> "$OUT/replay.log"
check "the recording reproduces the daemon's decisions" "$(records) records, $(grep -c '^c ' "$OUT/recording.rec") cycles" \
    oomwarden replay "$OUT/recording.rec" --check-against "$STATE/actions.jsonl"
SAVED=$(sed -n 's/.*"recording":"\([^"]*\)".*/\1/p' "$STATE/actions.jsonl" | head -n1)
cp "$SAVED" "$OUT/saved-window.rec.gz" 2>/dev/null
check "the kill's record names its saved flight-recorder window" "$SAVED" test -s "$SAVED"
check "the saved window reproduces the kill" "$SAVED" \
    oomwarden replay "$SAVED" --check-against "$STATE/actions.jsonl"
check "the window fetched from the running daemon replays" "window.rec" \
    oomwarden replay "$OUT/window.rec" -o json
check "the quiet pod was not killed" "pid $QUIET" alive "$QUIET"
# Why was it killed? `explain` on the kill's record, with the daemon stopped (the history file).
ID=$(grep '"kind":"oomwarden","outcome":"killed"' "$STATE/actions.jsonl" | head -n1 | sed 's/^{"id":\([0-9]*\),.*/\1/')
oomwarden explain "$ID" --state-dir "$STATE" > "$OUT/explain.txt" 2>&1
oomwarden explain "$ID" --state-dir "$STATE" -o json > "$OUT/explain.json" 2>> "$OUT/explain.txt"
cat "$OUT/explain.txt"
check "explain names the kill" "explain.txt" grep -q "^Record $ID at .*: oomwarden killed cgroup $P$" "$OUT/explain.txt"
check "explain shows the trigger's thresholds, each held" "explain.txt" sh -c \
    "[ \$(grep -c ' > 3000.0   held\| > 5.0   held\|never > 5s   held' $OUT/explain.txt) = 3 ]"
check "explain ranks every candidate from the flight window, the victim first" "explain.json" sh -c \
    "grep -Eq '\"source\": ?\"flight-recorder\"' $OUT/explain.json && grep -q '^  1 .*$P   ◀ chosen' $OUT/explain.txt"
check "explain lists the quiet pod among the candidates" "$Q" grep -q " $Q$" "$OUT/explain.txt"
finish
