#!/bin/sh
# vm: --mem 1G --scratch-disk 2G --append transparent_hugepage=never
# needs: containerd
# S13 CRI kill: the distribution's containerd and runc run the pods, made through the CRI as the
# kubelet makes them. A BestEffort pod hogs until the node's services stall; oomwarden with the
# default configuration kills it; its record names the pod as a user knows it (namespace, name,
# container names, identitySource cri); the runtime reports the containers exited (137); after
# the kubelet-like clean-up the shims are as many as before the pod.
SCENARIO=s13-cri-kill
. /root/lib.sh
. /root/cri.sh
set_lru
node_layout
disk_services
start_containerd
# A bystander: a Guaranteed kube-system pod (oom_score_adj -997), which must live on.
DNS=$(pod_uid 1)
need cri run --namespace kube-system --name coredns-5d78c9869d-x2k4q --uid "$DNS" --qos guaranteed \
    --memory-max 67108864 --container "coredns=oomwarden.test/pause:1"
setup_ok
SHIMS_BEFORE=$(shims)
PAUSES_BEFORE=$(pauses)
log "before the hog: $SHIMS_BEFORE shims, $PAUSES_BEFORE pause processes"
OOM_BEFORE=$(oom_kills)
start_oomwarden --metrics-listen 127.0.0.1:9465
HOG=$(pod_uid 2)
P=$CG/kubepods/besteffort/pod$HOG
# As s1: most of RAM at once, then a slow leak, in two containers of the pod.
need cri run --namespace shop --name checkout-7f9c6d-hq2lm --uid "$HOG" --qos besteffort \
    --container "hog=oomwarden.test/hog:1 -s 16 -i 20 -m ${FAST_MB:-600} -H -1" \
    --container "leak=oomwarden.test/hog:1 -s 5 -i 1000"
setup_ok
log "the hog pod runs: $(shims) shims; $(cat $P/cgroup.procs | wc -l) processes in $P"
i=0
while [ $i -lt 240 ] && [ "$(count_outcome killed)" = 0 ] && populated "$P"; do
    [ $((i % 5)) = 0 ] && log "pod=$(( $(cat $P/memory.current) >> 20 ))MiB system[$(psi $SYSTEM)] avail=$(awk '/MemAvailable/{print $2}' /proc/meminfo)kB"
    sleep 1; i=$((i + 1))
done
sleep 5   # would a second kill follow?
R=$OUT/record.json
grep '"kind":"oomwarden","outcome":"killed"' "$STATE/actions.jsonl" | head -n1 > "$R"
check "oomwarden killed the hog's pod" "$P" grep -q "\"victim\":\"$P\"" "$R"
check "exactly one kill" "$(count_outcome killed)" [ "$(count_outcome killed)" = 1 ]
check "the record names the namespace" "namespace" grep -q '"namespace":"shop"' "$R"
check "the record names the pod" "podName" grep -q '"podName":"checkout-7f9c6d-hq2lm"' "$R"
check "the record names both containers" "containerNames" \
    sh -c "grep -q '\"containerNames\":\[[^]]*\"hog\"' $R && grep -q '\"containerNames\":\[[^]]*\"leak\"' $R"
check "the identity came from the runtime" "identitySource" grep -q '"identitySource":"cri"' "$R"
check "the log names the victim pod" "pod=shop/checkout-…" grep -q '"pod":"shop/checkout-7f9c6d-hq2lm"' "$OUT/oomwarden.log"
oomwarden explain shop/checkout-7f9c6d-hq2lm --state-dir "$STATE" > "$OUT/explain.txt" 2>&1
check "explain finds the kill by NAMESPACE/POD" "explain.txt" sh -c \
    "grep -q ': oomwarden killed shop/checkout-7f9c6d-hq2lm$' $OUT/explain.txt && grep -q '(named from cri)' $OUT/explain.txt && grep -Eq 'containers   (hog, leak|leak, hog)$' $OUT/explain.txt"
wget -qO "$OUT/metrics.txt" http://127.0.0.1:9465/metrics
check "the kills metric carries the namespace" "metrics.txt" \
    grep -q '^oomwarden_kills_total{class="Besteffort",outcome="killed",namespace="shop"} 1$' "$OUT/metrics.txt"
check "the runtime is up in the metrics" "metrics.txt" grep -q '^oomwarden_container_runtime_up 1$' "$OUT/metrics.txt"
cri-driver ps > "$OUT/ps-after-kill.jsonl"
for c in hog leak; do
    check "the runtime reports $c exited 137" "ps-after-kill.jsonl" \
        sh -c "grep '\"name\":\"$c\"' $OUT/ps-after-kill.jsonl | grep '\"state\":\"CONTAINER_EXITED\"' | grep -q '\"exitCode\":137'"
done
check "the hog's sandbox is not ready" "ps-after-kill.jsonl" \
    sh -c "grep '\"uid\":\"$HOG\"' $OUT/ps-after-kill.jsonl | grep -q SANDBOX_NOTREADY"
# What the kubelet does when it sees the pod's containers dead (a Job's pod: no restart).
need cri delete --uid "$HOG"
wait_for 20 sh -c "[ \$(ls -l /proc/[0-9]*/exe 2>/dev/null | grep -c /containerd-shim-runc-v2\$) = $SHIMS_BEFORE ]"
check "after the clean-up the shims are as before" "$SHIMS_BEFORE -> $(shims)" [ "$(shims)" = "$SHIMS_BEFORE" ]
check "no pause process is left over" "$PAUSES_BEFORE -> $(pauses)" [ "$(pauses)" = "$PAUSES_BEFORE" ]
check "the pod cgroup is gone" "$P" [ ! -d "$P" ]
check "the kube-system bystander lives" "coredns" sh -c "cri-driver ps | grep '\"uid\":\"$DNS\"' | grep -q SANDBOX_READY"
check "system and podruntime services survive" "$SVC1 $SVC2 $RUNTIME" sh -c "kill -0 $SVC1 && kill -0 $SVC2 && kill -0 $RUNTIME"
check "containerd survives" "$CONTAINERD" alive "$CONTAINERD"
check "the kernel OOM killer did not fire" "oom_kill $OOM_BEFORE -> $(oom_kills)" [ "$(oom_kills)" = "$OOM_BEFORE" ]
finish
