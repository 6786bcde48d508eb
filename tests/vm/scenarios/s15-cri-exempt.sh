#!/bin/sh
# vm: --mem 1280M
# needs: containerd
# S15 CRI exempt: four BestEffort pods on a real containerd: the largest a node-critical one
# (its containers at the kubelet's oom_score_adj -997, as for a static or system-node-critical
# pod), the next in kube-system, the next labelled oomwarden.io/protect=true, the smallest in
# shop. Talos's default ranking would kill the largest; examples/config/pod-identity.yaml's
# ranking spares kube-system and the protected label but would choose the node-critical pod;
# protect.nodeCritical (on by default) leaves it out whatever the ranking says (issue 55); the
# shop pod is killed, and only it.
SCENARIO=s15-cri-exempt
. /root/lib.sh
. /root/cri.sh
node_layout
start_containerd
# The ranking of examples/config/pod-identity.yaml; a deterministic trigger for this scenario.
cat > /root/oom.yaml <<'YAML'
apiVersion: v1alpha1
kind: OOMConfig
triggerExpression: qos_memory_current[Besteffort] > 640.0 * 1048576.0 && time_since_trigger > duration("1h")
sampleInterval: 200ms
cgroupRankingExpression: |-
  pod_namespace == "kube-system" ? 0.0 :
  ("oomwarden.io/protect" in labels && labels["oomwarden.io/protect"] == "true") ? 0.0 :
  (memory_max.hasValue() ? 0.0 :
    {Besteffort: 1.0, Burstable: 0.5, Guaranteed: 0.0, Podruntime: 0.0, System: 0.0}[class] *
      double(memory_current.orValue(0u))) *
  (pod_namespace.startsWith("batch-") ? 4.0 : 1.0)
YAML
start_oomwarden --config /root/oom.yaml
SYS=$(pod_uid 1) PROT=$(pod_uid 2) SHOP=$(pod_uid 3) CRIT=$(pod_uid 4)
need cri run --namespace ops --name node-agent-4t7xk --uid "$CRIT" --oom-score-adj -997 \
    --container "agent=oomwarden.test/hog:1 -s 16 -i 20 -m 230 -H -1"
need cri run --namespace kube-system --name metrics-agent-8x2kq --uid "$SYS" \
    --container "agent=oomwarden.test/hog:1 -s 16 -i 20 -m 208 -H -1"
need cri run --namespace payments --name ledger-0 --uid "$PROT" --label oomwarden.io/protect=true \
    --container "db=oomwarden.test/hog:1 -s 16 -i 20 -m 160 -H -1"
setup_ok
# The smallest last, once the others hold their memory: the trigger fires when it grows.
wait_for 60 sh -c "[ \$(cat $CG/kubepods/besteffort/pod$PROT/memory.current) -gt 167772160 ]"
wait_for 60 sh -c "[ \$(cat $CG/kubepods/besteffort/pod$CRIT/memory.current) -gt 234881024 ]"
CRIT_BYTES=$(cat $CG/kubepods/besteffort/pod$CRIT/memory.current)
SYS_BYTES=$(cat $CG/kubepods/besteffort/pod$SYS/memory.current)
PROT_BYTES=$(cat $CG/kubepods/besteffort/pod$PROT/memory.current)
need cri run --namespace shop --name cart-6b8f-zt9wd --uid "$SHOP" \
    --container "cart=oomwarden.test/hog:1 -s 16 -i 20 -m 96 -H -1"
setup_ok
check "one kill" "actions.jsonl" wait_for 90 grep -q '"kind":"oomwarden","outcome":"killed"' "$STATE/actions.jsonl"
sleep 3
log "records: $(cat "$STATE/actions.jsonl" | cut -c1-400)"
check "exactly one record" "$(records)" [ "$(records)" = 1 ]
check "the victim is the shop pod" "pod$SHOP" grep -q "\"kind\":\"oomwarden\",\"outcome\":\"[a-z-]*\",\"victim\":\"$CG/kubepods/besteffort/pod$SHOP\"" "$STATE/actions.jsonl"
check "named from the runtime" "shop/cart-6b8f-zt9wd, cri" \
    sh -c "grep -q '\"namespace\":\"shop\",\"podName\":\"cart-6b8f-zt9wd\"' $STATE/actions.jsonl && grep -q '\"identitySource\":\"cri\"' $STATE/actions.jsonl"
for u in "$CRIT" "$SYS" "$PROT"; do
    check "pod $u (exempt, larger) lives" "$CG/kubepods/besteffort/pod$u" populated "$CG/kubepods/besteffort/pod$u"
done
check "the node-critical pod was left out by the guard" "excluded" \
    grep -q '"excluded":{[^}]*"node-critical":1' "$STATE/actions.jsonl"
# Talos's default ranking (memory.current) would have killed the node-critical pod, and this
# ranking, which does not exempt its namespace, too.
check "the node-critical pod was the largest" "$((CRIT_BYTES >> 20)) MiB > $((SYS_BYTES >> 20)) MiB > $((PROT_BYTES >> 20)) MiB > 96 MiB" \
    sh -c "[ $CRIT_BYTES -gt $SYS_BYTES ] && [ $SYS_BYTES -gt $PROT_BYTES ] && [ $PROT_BYTES -gt $((96 << 20)) ]"
for u in "$CRIT" "$SYS" "$PROT" "$SHOP"; do need cri delete --uid "$u"; done
finish
