#!/bin/sh
# needs: containerd
# S16 CRI down: containerd is stopped while oomwarden runs. The next identity refresh fails:
# the log says so once and oomwarden_container_runtime_up drops to 0; pods keep the identity
# of the runtime's last answer (its age in the record and the metrics); the kill still comes, and the quiet cycles take no longer than with
# the runtime up (the runtime is asked off the decision path). containerd started again is
# noticed.
SCENARIO=s16-cri-down
. /root/lib.sh
. /root/cri.sh
node_layout
start_containerd
cat > /root/oom.yaml <<'YAML'
apiVersion: v1alpha1
kind: OOMConfig
triggerExpression: qos_memory_current[Besteffort] > 150.0 * 1048576.0 && time_since_trigger > duration("1h")
sampleInterval: 200ms
---
apiVersion: oomwarden/v1alpha1
kind: OOMWardenConfig
containerRuntime:
  refreshEvery: 2s
YAML
start_oomwarden --config /root/oom.yaml --metrics-listen 127.0.0.1:9465
HOG=$(pod_uid 1)
P=$CG/kubepods/besteffort/pod$HOG
# The hog waits for SIGUSR1: it grows once the runtime is down.
need cri run --namespace shop --name report-5f6d7-kq8vz --uid "$HOG" \
    --container "report=oomwarden.test/hog:1 -W -s 16 -i 20 -m 200 -H -1"
setup_ok
metric() { wget -qO - http://127.0.0.1:9465/metrics | awk -v m="$1" '$1 == m { print $2 }'; }
need wait_for 30 sh -c '[ "$(wget -qO - http://127.0.0.1:9465/metrics | awk "\$1 == \"oomwarden_pods_known\" { print \$2 }")" = 1 ]'
setup_ok
# Quiet cycles with the runtime up: mean duration over 10 s.
c1=$(metric oomwarden_cycle_duration_seconds_count) s1=$(metric oomwarden_cycle_duration_seconds_sum)
sleep 10
c2=$(metric oomwarden_cycle_duration_seconds_count) s2=$(metric oomwarden_cycle_duration_seconds_sum)
check "the runtime is up" "oomwarden_container_runtime_up" [ "$(metric oomwarden_container_runtime_up)" = 1 ]
stop_containerd
log "containerd stopped; $(shims) shims and the pod's processes stay: $(cat $P/*/cgroup.procs | wc -l)"
check "the log says the runtime is unreachable" "log" wait_for 30 grep -q 'container runtime unreachable' "$OUT/oomwarden.log"
check "the runtime is down in the metrics" "oomwarden_container_runtime_up" [ "$(metric oomwarden_container_runtime_up)" = 0 ]
check "and its failures are counted" "oomwarden_container_runtime_failures_total" \
    awk -v n="$(metric oomwarden_container_runtime_failures_total)" 'BEGIN { exit !(n >= 1) }'
# Quiet cycles with the runtime down, over 10 s (five failed refreshes), once containerd's own
# exit has settled (under TCG a process exiting slows every other for a moment).
# Bucket, count and sum come from one scrape each: two scrapes can straddle a cycle (a run once
# counted "52 of 51").
sleep 3
cycles() { wget -qO - http://127.0.0.1:9465/metrics | awk '
    $1 == "oomwarden_cycle_duration_seconds_bucket{le=\"1.0\"}" { b = $2 }
    $1 == "oomwarden_cycle_duration_seconds_count" { c = $2 }
    $1 == "oomwarden_cycle_duration_seconds_sum" { s = $2 }
    END { print b, c, s }'; }
# shellcheck disable=SC2046
set -- $(cycles); b3=$1 c3=$2 s3=$3
sleep 10
# shellcheck disable=SC2046
set -- $(cycles); b4=$1 c4=$2 s4=$3
up_ms=$(awk -v a="$s1" -v b="$s2" -v c="$c1" -v d="$c2" 'BEGIN { printf "%.3f", (b - a) / (d - c) * 1000 }')
down_ms=$(awk -v a="$s3" -v b="$s4" -v c="$c3" -v d="$c4" 'BEGIN { printf "%.3f", (b - a) / (d - c) * 1000 }')
echo "{\"quietCycleMsRuntimeUp\":$up_ms,\"quietCycleMsRuntimeDown\":$down_ms,\"cyclesUp\":$((c2 - c1)),\"cyclesDown\":$((c4 - c3))}" > "$OUT/cycles.json"
# No cycle waited on the runtime (its deadline is 2 s): every one under 1 s. The bound is not
# 100 ms: under TCG a quiet cycle now and then takes over 100 ms with nothing to wait on (a suite
# run: 48 of 50, mean 36 ms, on a slow host). And the mean within TCG's noise (measured 10.0 /
# 11.1 ms, and 12.0 / 25.2 ms without the settling).
check "no quiet cycle waited with the runtime down" "$((b4 - b3)) of $((c4 - c3)) under 1 s" [ $((b4 - b3)) = $((c4 - c3)) ]
check "quiet cycles as fast with the runtime down" "mean ${up_ms} ms up, ${down_ms} ms down" \
    awk -v u="$up_ms" -v d="$down_ms" 'BEGIN { exit !(d <= 2 * u + 5) }'
check "cycles kept their pace" "$((c2 - c1)) cycles up, $((c4 - c3)) down in 10 s" [ $((c4 - c3)) -ge $(( (c2 - c1) * 8 / 10 )) ]
kill -USR1 $(cat $P/*/cgroup.procs | while read -r pid; do [ "$(cat /proc/$pid/oom_score_adj)" = 1000 ] && echo "$pid"; done)
check "the kill still comes" "actions.jsonl" wait_for 60 grep -q '"kind":"oomwarden","outcome":"killed"' "$STATE/actions.jsonl"
check "the victim is the hog's pod" "$P" grep -q "\"kind\":\"oomwarden\",\"outcome\":\"[a-z-]*\",\"victim\":\"$P\"" "$STATE/actions.jsonl"
# The runtime's last answer stays in force, labels included, and the record says how old it
# was (the runtime has been down for over 20 s by now).
age=$(sed -n 's/.*"kind":"oomwarden","outcome":"killed".*"identityAgeMs":\([0-9]*\).*/\1/p' "$STATE/actions.jsonl" | head -n1)
check "named from the runtime's last answer" "shop/report-5f6d7-kq8vz, cri, ${age:-?} ms old" \
    sh -c "grep -q '\"namespace\":\"shop\",\"podName\":\"report-5f6d7-kq8vz\"' $STATE/actions.jsonl && grep -q '\"identitySource\":\"cri\"' $STATE/actions.jsonl && [ \"${age:-0}\" -ge 10000 ]"
check "the identities' age in the metrics" "oomwarden_pod_identity_age_seconds" \
    awk -v a="$(metric oomwarden_pod_identity_age_seconds)" 'BEGIN { exit !(a >= 10) }'
check "unreachable said once" "$(grep -c 'container runtime unreachable' "$OUT/oomwarden.log")" \
    [ "$(grep -c 'container runtime unreachable' "$OUT/oomwarden.log")" = 1 ]
start_containerd
check "the runtime's return is noticed" "log" wait_for 30 sh -c "[ \$(grep -c 'pod identity from the container runtime' $OUT/oomwarden.log) -ge 2 ]"
check "and in the metrics" "oomwarden_container_runtime_up" wait_for 10 sh -c '[ "$(wget -qO - http://127.0.0.1:9465/metrics | awk "\$1 == \"oomwarden_container_runtime_up\" { print \$2 }")" = 1 ]'
need cri delete --uid "$HOG"
finish
