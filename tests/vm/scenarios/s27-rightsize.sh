#!/bin/sh
# vm: --mem 1G --scratch-disk 1G
# S27 rightsize (issue 38): three pods under the daemon's embedded defaults (the usage history
# on, a reading every 10 s): a steady one (60 MiB), a spiky one (40 MiB, and every 30 s a 2 s
# spike of 140 MiB more) and a log-heavy one (8 MiB of its own, 150 MiB of a file it reads
# again and again: active page cache). After about four minutes `rightsize -o json --pods`
# must cover the spike with its limit (the kernel's high-water mark, which a reading every
# 10 s or a scrape a minute can miss), recommend for the log-heavy pod a request below its
# working set, and say the same from the saved file once the daemon is stopped. A sampler
# writes each container's numbers every second (samples-*.csv): the VPA-style and PromQL
# figures of docs/forensics.md are computed from them (crates/usage/tests/compare.rs).
# The systemd layout always: its container cgroups carry containerd's IDs, which the pod
# list's containerStatuses join to container names.
SCENARIO=s27-rightsize
LAYOUT=systemd
. /root/lib.sh
# The classic LRU (the suite's default): a file read again and again is promoted to the active
# list, the working set the kubelet and VPA read counts it (under MGLRU, pages read through
# read() stay in old generations and count as inactive: the log-heavy case hides).
set_lru
node_layout
mke2fs -q /dev/vda && mkdir -p /mnt && mount -t ext4 /dev/vda /mnt || { log "no scratch disk"; exit 1; }
STEADY_UID=a1111111-1111-4111-8111-111111111111
SPIKY_UID=b2222222-2222-4222-8222-222222222222
LOGS_UID=c3333333-3333-4333-8333-333333333333
STEADY=$(pod burstable $STEADY_UID)
SPIKY=$(pod burstable $SPIKY_UID)
LOGS=$(pod burstable $LOGS_UID)
# The pod list kubectl would give: requests as people guess them, the runtime's container IDs.
pods_json() {
    printf '{"apiVersion":"v1","kind":"List","items":['
    sep=
    for p in "steady $STEADY_UID 64Mi 128Mi" "spiky $SPIKY_UID 64Mi 256Mi" "logs $LOGS_UID 256Mi 512Mi"; do
        set -- $p
        printf '%s{"kind":"Pod","metadata":{"name":"%s-7d9f8","namespace":"shop","uid":"%s","labels":{"app":"%s","pod-template-hash":"7d9f8"}},' "$sep" "$1" "$2" "$1"
        printf '"spec":{"containers":[{"name":"app","resources":{"requests":{"memory":"%s"},"limits":{"memory":"%s"}}}]},' "$3" "$4"
        printf '"status":{"qosClass":"Burstable","containerStatuses":[{"name":"app","containerID":"containerd://%s"}]}}' "$CONTAINER_ID"
        sep=,
    done
    printf ']}\n'
}
pods_json > "$OUT/pods.json"

start_oomwarden
start_in "$(ctr "$STEADY")" hog -s 60 -m 60 -H -1 > /dev/null
start_in "$(ctr "$SPIKY")" hog -s 40 -m 40 -H -1 > /dev/null
start_in "$(ctr "$SPIKY")" sh -c 'sleep 7; while :; do hog -s 140 -m 140 -H 2; sleep 28; done' > /dev/null
start_in "$(ctr "$LOGS")" hog -s 8 -m 8 -H -1 > /dev/null
start_in "$(ctr "$LOGS")" sh -c 'dd if=/dev/urandom of=/mnt/log bs=1M count=150 2>/dev/null; while :; do cat /mnt/log > /dev/null; sleep 3; done' > /dev/null

# sample NAME CGROUP: a line a second, `t,current,inactive_file,file,shmem,peak` (the peak as
# any reader sees it: since the cgroup was made).
sample() {
    c=$CG/${2#$CG/}
    echo "t,current,inactive_file,file,shmem,peak" > "$OUT/samples-$1.csv"
    while :; do
        printf '%s,%s,%s\n' "$(date +%s)" "$(cat "$c/memory.current")" \
            "$(awk '$1=="inactive_file"{i=$2} $1=="file"{f=$2} $1=="shmem"{s=$2} END{printf "%s,%s,%s", i, f, s}' "$c/memory.stat"),$(cat "$c/memory.peak")" >> "$OUT/samples-$1.csv"
        sleep 1
    done
}
for n in steady spiky logs; do
    case $n in steady) p=$STEADY ;; spiky) p=$SPIKY ;; logs) p=$LOGS ;; esac
    sample $n "$(ctr "$p")" &
done
log "running for 240 s"
sleep 240

oomwarden rightsize --state-dir "$STATE" --pods "$OUT/pods.json" -o json > "$OUT/rightsize.json" 2> "$OUT/rightsize.err"
check "rightsize answers from the daemon" "exit $? $(head -c 300 "$OUT/rightsize.err")" grep -q '"source": "daemon"' "$OUT/rightsize.json"
oomwarden rightsize --state-dir "$STATE" --pods "$OUT/pods.json" -o wide > "$OUT/rightsize.txt" 2>&1
cat "$OUT/rightsize.txt"

# field POD KEY -> KEY of the pod's container in rightsize.json.
field() { awk -v pod="\"pod\": \"$1-7d9f8\"" -v key="\"$2\": " 'index($0, pod) { on = 1 } on && index($0, "\"containers\"") { c = 1 } c && index($0, key) { sub(/.*: /, ""); sub(/,$/, ""); print; exit }' "$OUT/rightsize.json"; }
MIB=1048576
spiky_peak=$(cat "$(ctr "$SPIKY")/memory.peak")
spiky_limit=$(field spiky recommendedLimitBytes)
spiky_read=$(field spiky readMaxBytes)
spiky_scraped=$(field spiky scrapedMaxBytes)
check "the spiky pod's spikes happened (its memory.peak passed 170 MiB)" "$spiky_peak" [ "$spiky_peak" -gt $((170 * MIB)) ]
check "the recommended limit covers the spike" "limit $spiky_limit, memory.peak $spiky_peak" [ "${spiky_limit:-0}" -ge "$spiky_peak" ]
check "the peak rightsize names is the kernel's" "$(field spiky peakBytes) vs $spiky_peak" [ "$(field spiky peakBytes)" -ge $((spiky_peak * 95 / 100)) ]
check "what a scrape a minute saw is recorded beside it" "scraped $spiky_scraped, readings $spiky_read" [ -n "$spiky_scraped" ] && [ "$spiky_scraped" -le "$spiky_peak" ]
logs_ws=$(field logs workingSetBytes)
logs_req=$(field logs recommendedRequestBytes)
check "the log-heavy pod's working set is mostly page cache" "working set $logs_ws, unreclaimable $(field logs unreclaimableBytes)" [ "${logs_ws:-0}" -gt $((100 * MIB)) ]
check "the log-heavy pod's recommended request is below its working set" "request $logs_req, working set $logs_ws" [ "${logs_req:-0}" -gt 0 ] && [ "$logs_req" -lt "$logs_ws" ]
steady_req=$(field steady recommendedRequestBytes)
check "the steady pod's request covers its 60 MiB" "$steady_req" [ "${steady_req:-0}" -ge $((60 * MIB)) ] && [ "$steady_req" -le $((90 * MIB)) ]
check "oom_score_adj with the recommendation is shown" "$(field steady recommendedOomScoreAdj)" [ -n "$(field steady recommendedOomScoreAdj)" ]

# Stopped: the history is saved and read from the file.
kill -TERM "$OOMWARDEN"; wait "$OOMWARDEN" 2>/dev/null
check "the usage history is saved at the stop" "$(ls -l "$STATE/usage.json" 2>&1)" test -s "$STATE/usage.json"
check "the saved history records per-reader peaks" "" grep -q '"peakResets":true' "$STATE/usage.json"
cp "$STATE/usage.json" "$OUT/usage.json"
oomwarden rightsize --state-dir "$STATE" --pods "$OUT/pods.json" -o json > "$OUT/rightsize-file.json" 2> "$OUT/rightsize-file.err"
check "rightsize reads the saved history when the daemon is down" "$(head -c 300 "$OUT/rightsize-file.err")" grep -q "usage.json" "$OUT/rightsize-file.json"
check "and recommends the same limit" "$(grep -c "\"recommendedLimitBytes\": $spiky_limit" "$OUT/rightsize-file.json")" grep -q "\"recommendedLimitBytes\": $spiky_limit" "$OUT/rightsize-file.json"
finish
