#!/bin/sh
# vm: --mem 1G --scratch-disk 2G --append transparent_hugepage=never
# needs: containerd
# needs: image
# S19 the DaemonSet: oomwarden as Kubernetes users run it. The image scripts/image built (an
# OCI archive, no registry) is imported into the distribution's containerd; the pod of the
# DaemonSet in deploy/kubernetes/oomwarden.yaml (the file itself: cri-driver reads its pod
# template field by field and fails on a field it does not know) runs through the CRI as the
# kubelet would run it: host PID namespace, privileged, the hostPath mounts, the ConfigMap's
# file in the kubelet's `..data` layout, its resources, oom_score_adj from system-node-critical.
# Its history starts at its bounds (10,000 records, just under 32 MiB). It starts in the manifest's dry run; the ConfigMap
# is updated as the kubelet updates it (the `..data` symlink swapped) to go live with the
# flight recorder on: the daemon reloads (dry run off at once; the flight recorder said to
# wait for the next start) and stops on SIGTERM within the pod's grace period when the
# DaemonSet is restarted; the new pod kills a hog pod made through the CRI, records it in the
# hostPath state directory with the flight recorder's window, names the pod from the runtime,
# and serves `oomwarden status` and `actions` through its socket to the host. Events are on
# with no API server: said, counted, nothing else changes. Writes /out/daemonset.json: the
# memory peak with all of that on.
SCENARIO=s19-daemonset
. /root/lib.sh
. /root/cri.sh
set_lru
node_layout
disk_services
start_containerd
T0=$(up)
# As docs/operations.md says to (a `sh -c`: lib.sh's ctr() is another thing).
need sh -c "ctr -n k8s.io images import --snapshotter native /root/oomwarden-image.tar > $OUT/image-import.txt 2>&1"
sh -c "ctr -n k8s.io images ls" > "$OUT/images.txt" 2>&1
log "image imported in $(awk -v a="$T0" -v b="$(up)" 'BEGIN{print b-a}')s: $(grep -o 'docker.io/library/oomwarden[^ ]*' "$OUT/images.txt" | head -n1)"
setup_ok
# The state directory (a hostPath) with its history at both its bounds: 10,000 records (its
# most) making just under 32 MiB (50 kB to spare: the ids widen the lines), our 4 KiB kill
# records and the kernel's 1 KiB ones mixed, so that the scenario's first record crosses the
# line bound and the file is rewritten.
STATE=/var/lib/oomwarden
mkdir -p "$STATE"
sed -n 1p /root/record.jsonl > /root/small.jsonl
sed -n 2p /root/record.jsonl > /root/big.jsonl
awk -v small="$(wc -c < /root/small.jsonl)" -v big="$(wc -c < /root/big.jsonl)" -v bound=33554432 '
    NR == FNR { s = $0; next }
    { b = $0; n = int((bound - 50000 - 10000 * small) / (big - small))
      for (i = 1; i <= 10000; i++) { l = (i <= n) ? b : s; sub(/"id":[0-9]+/, "\"id\":" i, l); print l } }' \
    /root/small.jsonl /root/big.jsonl > "$STATE/actions.jsonl"
log "history prefilled: $(wc -l < "$STATE/actions.jsonl") records, $(wc -c < "$STATE/actions.jsonl") bytes"
# oomwarden_pod UID [--configmap ...] -> the DaemonSet's pod; sets OWCG, OWLOG, OWCTR, OWPID and
# follows the container's log into $OUT/oomwarden-UID.log (the pod's deletion removes it).
oomwarden_pod() {
    uid=$1; shift
    need cri daemonset --manifest /root/deploy/oomwarden.yaml --uid "$uid" "$@"
    setup_ok
    OWCG=$CG/kubepods/burstable/pod$uid
    OWLOG=$(ls -d /var/log/pods/oomwarden_oomwarden-*_"$uid")/oomwarden/0.log
    wait_for 60 grep -q '"oomwarden started"' "$OWLOG"
    tail -n +1 -f "$OWLOG" > "$OUT/oomwarden-$uid.log" 2>&1 &
    TAIL=$!
    OWCTR=""
    for d in "$OWCG"/*/; do
        p=$(head -n1 "$d/cgroup.procs" 2>/dev/null)
        [ -n "$p" ] && grep -q '^oomwarden$' "/proc/$p/comm" 2>/dev/null && OWCTR=${d%/} && OWPID=$p
    done
    log "oomwarden: pid ${OWPID:-?} in ${OWCTR#$CG/}"
}
# stop_pod UID -> deleted as the kubelet deletes a pod: SIGTERM, SIGKILL after the manifest's
# terminationGracePeriodSeconds (5).
stop_pod() {
    need cri delete --uid "$1" --grace 5
    sleep 1
    kill "$TAIL" 2>/dev/null
}
text_profile_start
OWUID=$(pod_uid 19)
oomwarden_pod "$OWUID"
check "the DaemonSet's pod runs oomwarden from the image, in the manifest's dry run" "$OWLOG" \
    sh -c "grep '\"oomwarden started\"' $OWLOG | grep -q '\"dry_run\":true'"
# The manifest's probes, asked once as the kubelet's would be (the driver says them; it does
# not run them every period): ready after the first cycle, live while the loop advances.
check "the manifest's probes are the daemon's /healthz and /readyz" "$CRI_EVENTS" \
    sh -c "grep '\"container-started\"' $CRI_EVENTS | grep -q '\"kind\":\"liveness\",\"path\":\"/healthz\",\"port\":9465'"
check "/readyz answers ready" "127.0.0.1:9465/readyz" wait_for 30 sh -c "wget -qO- http://127.0.0.1:9465/readyz | grep -q '^ready'"
check "/healthz answers ok" "127.0.0.1:9465/healthz" sh -c "wget -qO- http://127.0.0.1:9465/healthz | grep -q '^ok: the last cycle ended'"
check "in the Burstable class: no CPU limit" "$(cat "$OWCTR/cpu.max" 2>/dev/null || echo 'no cpu controller')" \
    sh -c "[ ! -f $OWCTR/cpu.max ] || grep -q '^max ' $OWCTR/cpu.max"
check "the pod cgroup's memory.max is the manifest's limit" "$(cat "$OWCG/memory.max")" [ "$(cat "$OWCG/memory.max")" = 67108864 ]
check "the kubelet's score was -997 and oomwarden lowered its own to -1000" "$(cat /proc/$OWPID/oom_score_adj)" \
    sh -c "grep -q '\"oomScoreAdj\":-997' $CRI_EVENTS && [ \$(cat /proc/$OWPID/oom_score_adj) = -1000 ]"
check "it found its own cgroup from inside its cgroup namespace" "${OWCTR#$CG/}" \
    grep -q "\"own_cgroup\":\"${OWCTR#$CG/}\"" "$OWLOG"
check "it read the history at its bound without a complaint" "$OWLOG" sh -c "! grep -q '\"level\":\"ERROR\".*history' $OWLOG"
check "Events without an API server: said, and the daemon goes on" "$OWLOG" grep -q 'not in a cluster' "$OWLOG"
# The image's build puts the code the daemon runs in one range and the daemon locks it at
# start (the kill path with it); the text profile's build is not ordered, and says so.
if [ -n "${TEXT_PROFILE:-}" ]; then
    check "the profile's build says its text is not ordered" "$OWLOG" grep -q 'text is not ordered' "$OWLOG"
else
    check "it locked the code it runs at start, kill path included" "$OWLOG" grep -q 'locked the code the daemon runs' "$OWLOG"
fi
# Going live as a user does: the ConfigMap edited (dry run off, the flight recorder on), the
# kubelet swapping the volume's ..data.
VOL=/var/lib/kubelet/pods/$OWUID/volumes/kubernetes.io~configmap/config
sed 's/^dryRun: true/dryRun: false/' "$VOL/oomwarden.yaml" > /root/live.yaml
printf 'flightRecorder:\n  enabled: true\n' >> /root/live.yaml
need cri configmap-update --uid "$OWUID" --volume config --file oomwarden.yaml=/root/live.yaml
wait_for 30 grep -q '"configuration reloaded"' "$OWLOG"
check "the ConfigMap's update was seen and loaded" "$OWLOG" \
    sh -c "grep -q 'the configuration file changed on disk; reloading' $OWLOG && grep -q '\"configuration reloaded\"' $OWLOG"
oomwarden status --state-dir "$STATE" -o json > "$OUT/status-reloaded.json" 2>&1
check "the reload turned the dry run off at once (status through the pod's socket, from the host)" "status-reloaded.json" \
    sh -c "grep -q 'dryRun: false' $OUT/status-reloaded.json && grep -Eq '\"pid\": ?$OWPID\\b' $OUT/status-reloaded.json"
check "the flight recorder is said to wait for the next start" "$OWLOG" \
    grep -q 'flightRecorder changed; it takes effect at the next start' "$OWLOG"
# The DaemonSet restarted (kubectl rollout restart): the old pod stops, a new one starts with
# the ConfigMap as it is now.
OLDPID=$OWPID OLDLOG=$OUT/oomwarden-$OWUID.log
text_profile_pages "$OWPID"
stop_pod "$OWUID"
check "the old pod stopped on SIGTERM within its grace period" "oomwarden-$OWUID.log" \
    sh -c "! kill -0 $OLDPID 2>/dev/null && grep -q '\"oomwarden stopping\"' $OLDLOG"
OWUID=$(pod_uid 20)
oomwarden_pod "$OWUID" --configmap oomwarden/oomwarden.yaml=/root/live.yaml
check "the new pod runs live with the flight recorder" "$OWLOG" \
    sh -c "grep '\"oomwarden started\"' $OWLOG | grep -q '\"dry_run\":false' && grep -q '\"flight recorder on\"' $OWLOG"
# A hog pod, as in S13.
HOG=$(pod_uid 2)
P=$CG/kubepods/besteffort/pod$HOG
need cri run --namespace shop --name checkout-7f9c6d-hq2lm --uid "$HOG" --qos besteffort \
    --container "hog=oomwarden.test/hog:1 -s 16 -i 20 -m 600 -H -1" \
    --container "leak=oomwarden.test/hog:1 -s 5 -i 1000"
setup_ok
# Records about the hog's pod (the history's 10,000 are about other pods).
about_hog() { n=$(grep "\"outcome\":\"$1\",\"victim\":\"$P\"" "$STATE/actions.jsonl" | grep -c '"kind":"oomwarden"') || true; echo "${n:-0}"; }
i=0
while [ $i -lt 240 ] && [ "$(about_hog killed)" = 0 ] && populated "$P"; do sleep 1; i=$((i + 1)); done
R=$OUT/record.json
grep "\"kind\":\"oomwarden\",\"outcome\":\"killed\",\"victim\":\"$P\"" "$STATE/actions.jsonl" | tail -n1 > "$R"
check "it killed the hog's pod" "$P" grep -q "\"victim\":\"$P\"" "$R"
check "the record names the pod from the runtime" "identitySource" \
    sh -c "grep -q '\"podName\":\"checkout-7f9c6d-hq2lm\"' $R && grep -q '\"identitySource\":\"cri\"' $R"
REC=$(grep -o '"recording":"[^"]*"' "$R" | cut -d'"' -f4)
check "the flight recorder saved the kill's window in the state directory" "${REC:-no recording field}" \
    sh -c "[ -n '$REC' ] && ls $STATE/recordings/ | grep -q \"\$(basename '$REC')\""
oomwarden status --state-dir "$STATE" > "$OUT/status-from-host.txt" 2>&1
check "oomwarden status on the host answers through the pod's socket" "status-from-host.txt" \
    grep -q "^oomwarden .* (pid $OWPID)" "$OUT/status-from-host.txt"
oomwarden actions --state-dir "$STATE" -o json > "$OUT/actions-from-host.json" 2> "$OUT/actions-from-host.err"
check "oomwarden actions on the host lists the kill" "actions-from-host.json" grep -q "$P" "$OUT/actions-from-host.json"
sleep 5
PEAK=$(cat "$OWCG/memory.peak")
# What the peak is made of, mapping by mapping (docs/performance.md reads it).
cat "/proc/$OWPID/smaps" > "$OUT/smaps.txt" 2>/dev/null
HWM=$(awk '/^VmHWM:/ { print $2 }' "/proc/$OWPID/status")
text_profile_pages "$OWPID"
OWOOM=$(awk '/^oom_kill /{print $2}' "$OWCG/memory.events")
printf '{"podMemoryPeakBytes":%s,"vmHwmKb":%s,"podMemoryMaxBytes":%s,"oomKillsInPod":%s,"historyLines":%s,"historyBytes":%s}\n' \
    "$PEAK" "$HWM" "$(cat "$OWCG/memory.max")" "$OWOOM" "$(wc -l < "$STATE/actions.jsonl")" "$(wc -c < "$STATE/actions.jsonl")" > "$OUT/daemonset.json"
cat "$OUT/daemonset.json"
check "the pod stayed within its memory limit" "peak $((PEAK >> 10)) KiB, VmHWM $HWM kB, oom_kill $OWOOM" [ "$OWOOM" = 0 ]
check "the history crossed its bound and was rewritten" "$(wc -l < "$STATE/actions.jsonl") lines" \
    [ "$(wc -l < "$STATE/actions.jsonl")" -lt 10000 ]
check "oomwarden still runs" "$OWPID" alive "$OWPID"
need cri delete --uid "$HOG"
stop_pod "$OWUID"
cat "$OUT"/oomwarden-*.log > "$OUT/oomwarden.log"
check "the kernel OOM killer did not fire" "$(oom_kills)" [ "$(oom_kills)" = 0 ]
finish
