#!/bin/sh
# vm: --mem 4G --timeout 1200
# needs: containerd
# The cost of pod identity on a real containerd, at PODS pods (default 100), outside the suite:
#   tests/vm/run.sh --retries 0 tests/vm/bench/cri-refresh.sh
# 1. one identity refresh (ListPodSandbox + ListContainers + decoding), as the daemon's
#    oomwarden_container_runtime_refresh_seconds reports it, refreshing every second for 30 s;
# 2. containerd's CPU time over those 30 s, against 30 s with the identity off;
# 3. the daemon's quiet cycle (oomwarden_cycle_duration_seconds) in both.
# Results: target/vm/results/cri-refresh/cri-refresh.json.
SCENARIO=cri-refresh
. /root/lib.sh
. /root/cri.sh
N=${PODS:-100}
node_layout
start_containerd
t0=$(up)
i=0
# Four at a time (containerd serves CRI calls concurrently; under TCG a pod takes ~8 s alone).
while [ $i -lt "$N" ]; do
    pids=
    for j in 0 1 2 3; do
        [ $((i + j)) -lt "$N" ] || break
        cri run --namespace bench --name "app-$((i + j))" --uid "$(pod_uid $((i + j + 1)))" \
            --container "app=oomwarden.test/pause:1" || echo "pod $((i + j))" >> "$OUT/setup-failed" &
        pids="$pids $!"
    done
    # shellcheck disable=SC2086
    wait $pids   # not containerd, a job of this shell too
    setup_ok
    i=$((i + 4))
done
log "$N pods in $(awk -v a="$t0" -v b="$(up)" 'BEGIN{print b-a}')s; $(shims) shims; $(awk '/MemAvailable/{print $2}' /proc/meminfo) kB available"
metric() { wget -qO - http://127.0.0.1:9465/metrics | awk -v m="$1" '$1 == m { print $2 }'; }
cpu() { awk '{ print $14 + $15 }' "/proc/$CONTAINERD/stat"; }   # clock ticks (USER_HZ)
# phase ENDPOINT -> "refresh samples|cycle mean ms|containerd ticks" over 30 s
phase() {
    printf 'apiVersion: v1alpha1\nkind: OOMConfig\ntriggerExpression: "false"\n---\napiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\ncontainerRuntime:\n  endpoint: %s\n  refreshEvery: 1s\n' "$1" > /root/oom.yaml
    : > "$OUT/oomwarden.log"
    start_oomwarden --config /root/oom.yaml --metrics-listen 127.0.0.1:9465
    if [ "$1" = auto ]; then
        need wait_for 60 sh -c "[ \"\$(wget -qO - http://127.0.0.1:9465/metrics | awk '\$1 == \"oomwarden_pods_known\" { print \$2 }')\" = $N ]"
        setup_ok
    fi
    sleep 2
    c1=$(metric oomwarden_cycle_duration_seconds_count) s1=$(metric oomwarden_cycle_duration_seconds_sum) k1=$(cpu)
    : > "$OUT/refresh-$1.txt"
    j=0
    while [ $j -lt 30 ]; do metric oomwarden_container_runtime_refresh_seconds >> "$OUT/refresh-$1.txt"; sleep 1; j=$((j + 1)); done
    c2=$(metric oomwarden_cycle_duration_seconds_count) s2=$(metric oomwarden_cycle_duration_seconds_sum) k2=$(cpu)
    kill -TERM "$OOMWARDEN"; wait "$OOMWARDEN"
    cp "$OUT/oomwarden.log" "$OUT/oomwarden-$1.log"
    CYCLE_MS=$(awk -v a="$s1" -v b="$s2" -v c="$c1" -v d="$c2" 'BEGIN { printf "%.3f", (b - a) / (d - c) * 1000 }')
    TICKS=$((k2 - k1))
}
phase auto
ON_MS=$CYCLE_MS ON_TICKS=$TICKS
phase none
OFF_MS=$CYCLE_MS OFF_TICKS=$TICKS
REFRESH=$(sort -n "$OUT/refresh-auto.txt" | awk '{ v[NR] = $1 * 1000 } END { printf "{\"min\":%.1f,\"median\":%.1f,\"max\":%.1f,\"samples\":%d}", v[1], v[int((NR + 1) / 2)], v[NR], NR }')
printf '{"pods":%s,"refreshMs":%s,"quietCycleMsIdentityOn":%s,"quietCycleMsIdentityOff":%s,"containerdTicks30sIdentityOn":%s,"containerdTicks30sIdentityOff":%s,"userHz":100}\n' \
    "$N" "$REFRESH" "$ON_MS" "$OFF_MS" "$ON_TICKS" "$OFF_TICKS" > "$OUT/cri-refresh.json"
cat "$OUT/cri-refresh.json"
check "the refreshes were measured" "$REFRESH" grep -q '"median":[1-9]' "$OUT/cri-refresh.json"
finish
