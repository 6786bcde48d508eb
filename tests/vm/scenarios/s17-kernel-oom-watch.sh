#!/bin/sh
# S17 kernel-OOM watch: with its trigger off ("false"), oomwarden kills nothing, and records
# the kernel's own OOM kills: a container over its limit (memcg) and then the node out of
# memory (global), each with its victim's PID, command and pod, in the same history as its
# own actions (`kind: kernel-oom`), counted in the metrics and in `oomwarden status`. Then,
# without the kernel log, a container's kill known from the memory.events counters alone.
SCENARIO=s17-kernel-oom-watch
. /root/lib.sh
node_layout
cat > /root/oom.yaml <<'YAML'
apiVersion: v1alpha1
kind: OOMConfig
triggerExpression: "false"
sampleInterval: 200ms
YAML
gone() { grep -q 'populated 0' "$1/cgroup.events"; }
killed() { grep -q '^oom_kill [1-9]' "$1/memory.events"; }
died() { wait_for "$2" killed "$1" && wait_for 10 gone "$1"; }
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
start_oomwarden --config /root/oom.yaml --metrics-listen 127.0.0.1:9465
need wait_for 30 grep -q '"watching for kernel OOM kills"' "$OUT/oomwarden.log"
setup_ok
# kernel_record TEXT... -> a kernel-oom record holds every TEXT.
kernel_record() {
    grep '"kind":"kernel-oom"' "$STATE/actions.jsonl" 2>/dev/null > /tmp/k
    for t in "$@"; do grep -F "$t" /tmp/k > /tmp/k2 || return 1; mv /tmp/k2 /tmp/k; done
}

# 1. memcg: a container (its ID as containerd names it) limited to 64 MiB allocates 200 MiB.
UID1=5e170000-0000-4000-8000-000000000001
CID1=17aa17aa17aa17aa17aa17aa17aa17aa17aa17aa17aa17aa17aa17aa17aa17aa
P1=$(pod burstable "$UID1")
if [ "$LAYOUT" = systemd ]; then C1=$P1/cri-containerd-$CID1.scope; else C1=$P1/$CID1; fi
need mkdir -p "$C1"
need put 64M "$C1/memory.max"
setup_ok
M1=$(start_in "$C1" hog -s 8 -i 10 -m 200 -H -1)
check "the kernel killed the container's process (memcg)" "$M1" died "$C1" 60
check "a kernel-oom record for the memcg kill" "pid $M1" wait_for 15 kernel_record \
    '"constraint":"memcg"' "\"victimPid\":$M1," '"victimComm":"hog"' "\"victim\":\"$P1\"" \
    "\"podUID\":\"$UID1\"" "\"containerID\":\"$CID1\"" '"detectedBy":"kmsg"' "\"oomMemcg\":\"${C1#$CG}\""

# 2. global: a BestEffort pod without limits takes more than the node has.
UID2=5e170000-0000-4000-8000-000000000002
P2=$(pod besteffort "$UID2")
C2=$(ctr "$P2")
M2=$(start_in "$C2" hog -s 32 -i 10 -m 4000 -H -1)
check "the kernel killed the hog (global)" "$M2" died "$C2" 180
check "a kernel-oom record for the global kill" "pid $M2" wait_for 15 kernel_record \
    '"constraint":"global"' "\"victimPid\":$M2," '"victimComm":"hog"' "\"victim\":\"$P2\"" \
    '"class":"Besteffort"' "\"podUID\":\"$UID2\""
sleep 4   # past the grace period: a counter's rise the log explained gives no second record
log "records: $(cut -c1-300 "$STATE/actions.jsonl")"
check "exactly the two kernel kills, nothing of oomwarden's" "$(kernel_records) kernel, $(records) ours" \
    sh -c "[ $(kernel_records) = 2 ] && [ $(records) = 0 ]"
check "the kernel killed two processes in all" "$(oom_kills) in /proc/vmstat" [ "$(oom_kills)" = 2 ]
wget -qO "$OUT/metrics.txt" http://127.0.0.1:9465/metrics
check "the metrics count one memcg and one global kill" "metrics.txt" sh -c \
    "grep -q '^oomwarden_kernel_oom_kills_total{constraint=\"memcg\"} 1$' $OUT/metrics.txt && grep -q '^oomwarden_kernel_oom_kills_total{constraint=\"global\"} 1$' $OUT/metrics.txt"
check "and no oomwarden kill" "metrics.txt" sh -c "! grep -q '^oomwarden_kills_total{.*outcome=\"killed\".*} [1-9]' $OUT/metrics.txt"
oomwarden status --state-dir "$STATE" > "$OUT/status.txt" 2>&1
check "oomwarden status counts them" "status.txt" grep -q 'kernel OOM kills since start: 2' "$OUT/status.txt"
oomwarden actions --kind kernel-oom --state-dir "$STATE" > "$OUT/actions.txt" 2>&1
cat "$OUT/actions.txt"
check "oomwarden actions --kind kernel-oom lists both" "actions.txt" sh -c \
    "[ \$(grep -c '^[0-9].*kernel-oom.*killed (memcg)' $OUT/actions.txt) = 1 ] && [ \$(grep -c '^[0-9].*kernel-oom.*killed (global)' $OUT/actions.txt) = 1 ]"
oomwarden explain "$UID1" --state-dir "$STATE" > "$OUT/explain-memcg.txt" 2>&1
oomwarden explain "$UID2" --state-dir "$STATE" > "$OUT/explain-global.txt" 2>&1
check "explain says why the kernel killed, by pod UID" "explain-*.txt" sh -c \
    "grep -q \"killed hog (pid $M1)\" $OUT/explain-memcg.txt && grep -q '^  constraint   memcg: ' $OUT/explain-memcg.txt && grep -q \"killed hog (pid $M2)\" $OUT/explain-global.txt && grep -q '^  constraint   global: ' $OUT/explain-global.txt"

# 3. Without the kernel log (a DaemonSet without /dev/kmsg): the memory.events counters
# still record a kill. The daemon reads a counter only after the kernel says (inotify) that
# its file changed, and reads them all once a minute; the record must come well before such
# a walk could find it (the daemon started just before: its first walk is a minute away).
kill -TERM "$OOMWARDEN"; wait "$OOMWARDEN" 2>/dev/null
mv "$OUT/oomwarden.log" "$OUT/oomwarden-kmsg.log"
cat > /root/oom-nokmsg.yaml <<'YAML'
apiVersion: v1alpha1
kind: OOMConfig
triggerExpression: "false"
sampleInterval: 200ms
---
apiVersion: oomwarden/v1alpha1
kind: OOMWardenConfig
kernelOomWatch:
  kmsg: /nonexistent/kmsg
YAML
start_oomwarden --config /root/oom-nokmsg.yaml
need wait_for 30 grep -q '"watching for kernel OOM kills"' "$OUT/oomwarden.log"
setup_ok
upi() { cut -d. -f1 /proc/uptime; }
STARTED=$(upi)
UID3=5e170000-0000-4000-8000-000000000003
P3=$(pod burstable "$UID3")
C3=$(ctr "$P3")
need mkdir -p "$C3"
need put 64M "$C3/memory.max"
setup_ok
sleep 2   # a few quiet cycles first: the counters are read only when they change
M3=$(start_in "$C3" hog -s 8 -i 10 -m 200 -H -1)
check "the kernel killed the container's process (memcg, no kernel log)" "$M3" died "$C3" 60
KILLED=$(upi)
check "a kernel-oom record from the counters alone" "pid $M3" wait_for 12 kernel_record \
    '"constraint":"memcg"' "\"victim\":\"$P3\"" "\"podUID\":\"$UID3\"" '"detectedBy":"memory-events"'
RECORDED=$(upi)
check "and before the first once-a-minute walk could have found it" \
    "started $STARTED, killed $KILLED, recorded $RECORDED (uptime s)" \
    sh -c "grep -q '\"detectedBy\":\"memory-events\"' $STATE/actions.jsonl && [ $((RECORDED - STARTED)) -lt 55 ]"
finish
