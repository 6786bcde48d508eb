#!/bin/sh
# vm: --timeout 780
# needs: containerd
# S14 CRI storm: a hog pod on a real containerd, re-made after each kill as the kubelet does for
# a Deployment's pod, killed 20 times under killScope pod (the sandbox dies too: the kubelet
# makes a new one), then 20 times under killScope containers (a pod with a sidecar: the
# sandbox spared, both containers restart in it). Afterwards: no orphaned shim, no leftover pause process, no
# leftover pod cgroup; never two kills inside one cooldown (3 s). The shim counts are in
# result.json and docs/vm-tests.md.
SCENARIO=s14-cri-storm
. /root/lib.sh
. /root/cri.sh
KILLS=${KILLS:-20}
node_layout
start_containerd
config() {
    cat > /root/oom.yaml <<YAML
apiVersion: v1alpha1
kind: OOMConfig
# Deterministic: the BestEffort pods hold more than 120 MiB, at most once every 3 s.
triggerExpression: qos_memory_current[Besteffort] > 120.0 * 1048576.0 && time_since_trigger > duration("3s")
sampleInterval: 200ms
---
apiVersion: oomwarden/v1alpha1
kind: OOMWardenConfig
killScope: $1
YAML
}
SHIMS0=$(shims) PAUSES0=$(pauses)
log "before the storms: $SHIMS0 shims, $PAUSES0 pause processes"
config pod
start_oomwarden --config /root/oom.yaml
# killed SCOPE -> kills recorded under that scope.
killed() { local n; n=$(grep '"kind":"oomwarden","outcome":"killed"' "$STATE/actions.jsonl" 2>/dev/null | grep -c "\"killScope\":\"$1\"") || true; echo "${n:-0}"; }

# hog_exits UID -> the hog container's exits with 137 that the runtime reported to the driver.
hog_exits() {
    local n; n=$(grep '"event":"container-exited"' "$CRI_EVENTS" | grep "\"uid\":\"$1\"" | grep '"container":"hog"' | grep -c '"exitCode":137') || true
    echo "${n:-0}"
}

# storm SCOPE N: the pod (uid N) kept by the kubelet-like driver until KILLS kills of SCOPE.
storm() {
    scope=$1 uid=$(pod_uid "$2")
    P=$CG/kubepods/besteffort/pod$uid
    # The hog starts last: the kill comes once the pod is whole (under killScope containers
    # a sidecar shows that every container is killed, the sandbox spared).
    sidecar=
    [ "$scope" = containers ] && sidecar="sidecar=oomwarden.test/pause:1"
    cri-driver kubelet --namespace batch-etl --name "storm-$scope-5c7d9" --uid "$uid" \
        ${sidecar:+--container "$sidecar"} \
        --container "hog=oomwarden.test/hog:1 -s 16 -i 20 -m 160 -H -1" >> "$CRI_EVENTS" 2>> "$OUT/cri-driver.log" &
    DRIVER=$!
    t0=$(up) max_shims=0 max_pauses=0
    while [ "$(killed "$scope")" -lt "$KILLS" ] && alive "$DRIVER" &&
          [ "$(awk -v a="$t0" -v b="$(up)" 'BEGIN{print int(b-a)}')" -lt 360 ]; do
        s=$(shims); [ "$s" -gt "$max_shims" ] && max_shims=$s
        s=$(pauses); [ "$s" -gt "$max_pauses" ] && max_pauses=$s
        sleep 0.5
    done
    took=$(awk -v a="$t0" -v b="$(up)" 'BEGIN{print b-a}')
    # The driver sees the last kill's exit at its next step.
    wait_for 20 sh -c "[ \$(grep '\"event\":\"container-exited\"' $CRI_EVENTS | grep '\"uid\":\"$uid\"' | grep '\"container\":\"hog\"' | grep -c '\"exitCode\":137') -ge $(killed "$scope") ]"
    log "$scope: $(killed "$scope") kills in ${took}s; at most $max_shims shims and $max_pauses pause processes at a time"
    running=$(alive "$DRIVER" && echo yes || echo no)
    kill -TERM "$DRIVER"; wait "$DRIVER"   # the driver deletes the pod, as the kubelet would
    check "$scope: $KILLS kills" "$(killed "$scope") in ${took}s" [ "$(killed "$scope")" -ge "$KILLS" ]
    check "$scope: the driver kept the pod all along" "running: $running" [ "$running" = yes ]
    bad=$(grep "\"killScope\":\"$scope\"" "$STATE/actions.jsonl" | grep -vc '"kind":"oomwarden","outcome":"killed"') || true
    check "$scope: every kill verified" "${bad:-0} not killed" [ "${bad:-0}" = 0 ]
    exits=$(hog_exits "$uid")
    check "$scope: the runtime saw the hog die (137) each time" "$exits exits" [ "$exits" -ge "$KILLS" ]
    sandboxes=$(grep '"event":"sandbox-started"' "$CRI_EVENTS" | grep -c "\"uid\":\"$uid\"") || true
    if [ "$scope" = pod ]; then
        check "pod: each kill took the sandbox (a new one each time)" "$sandboxes sandboxes" [ "$sandboxes" -ge "$KILLS" ]
    else
        check "containers: the sandbox was spared (one for the whole storm)" "$sandboxes sandboxes" [ "$sandboxes" = 1 ]
        named=$(grep '"killScope":"containers"' "$STATE/actions.jsonl" | grep -c '"containerNames":\[[^]]*"hog"') || true
        log "containers: $named of $(killed containers) records name the hog container"
    fi
    wait_for 20 sh -c "[ \$(ls -l /proc/[0-9]*/exe 2>/dev/null | grep -c /containerd-shim-runc-v2\$) = $SHIMS0 ]"
    check "$scope: no orphaned shim" "$SHIMS0 before, $(shims) after; at most $max_shims during" [ "$(shims)" = "$SHIMS0" ]
    check "$scope: no leftover pause process" "$PAUSES0 before, $(pauses) after; at most $max_pauses during" [ "$(pauses)" = "$PAUSES0" ]
    check "$scope: no leftover pod cgroup" "$P" [ ! -d "$P" ]
    check "$scope: no hog left" "$(count_exe /hog)" [ "$(count_exe /hog)" = 0 ]
    gaps=$(grep "\"killScope\":\"$scope\"" "$STATE/actions.jsonl" | sed -n 's/.*"monotonicNs":\([0-9]*\).*/\1/p' |
        awk 'NR > 1 { g = ($1 - p) / 1e9; if (min == "" || g < min) min = g } { p = $1 } END { print min }')
    check "$scope: kills at least one cooldown (3 s) apart" "smallest gap ${gaps}s" awk -v g="$gaps" 'BEGIN { exit !(g >= 3.0) }'
    printf '{"scope":"%s","kills":%s,"seconds":%s,"shimsBefore":%s,"shimsAfter":%s,"maxShims":%s,"maxPauses":%s}\n' \
        "$scope" "$(killed "$scope")" "$took" "$SHIMS0" "$(shims)" "$max_shims" "$max_pauses" >> "$OUT/storms.jsonl"
}

storm pod 1
config containers
kill -HUP "$OOMWARDEN"
need wait_for 30 grep -q 'configuration reloaded' "$OUT/oomwarden.log"
setup_ok
storm containers 2
check "containerd survives" "$CONTAINERD" alive "$CONTAINERD"
finish
