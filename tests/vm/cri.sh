# cri.sh - sourced after lib.sh by the scenarios that run a real containerd (a line
# "# needs: containerd" makes run.sh copy in containerd, its shim, ctr, runc, cri-driver,
# the images and /etc/containerd/config.toml).
CRI_EVENTS=$OUT/cri-events.jsonl
: > "$CRI_EVENTS"

# start_containerd -> containerd in the runtime's cgroup (Talos: podruntime/runtime), the
# images imported; $CONTAINERD is its PID. Its log: $OUT/containerd.log.
start_containerd() {
    # RunPodSandbox fails without /etc/hosts (measured); resolv.conf and hostname it copies too.
    printf '127.0.0.1 localhost\n::1 localhost\n' > /etc/hosts
    : > /etc/resolv.conf
    hostname > /etc/hostname
    mkdir -p /var/lib/containerd /run/containerd /var/log/pods
    ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up   # pods use the node's network
    sh -c 'echo $$ > '"$CG/$RUNTIME_CG"'/cgroup.procs; exec containerd --config /etc/containerd/config.toml' \
        >> "$OUT/containerd.log" 2>&1 &
    CONTAINERD=$!
    t0=$(up)
    need wait_for 60 sh -c 'ctr version > /dev/null 2>&1'
    log "containerd answers after $(awk -v a="$t0" -v b="$(up)" 'BEGIN{print b-a}')s"
    for image in /root/images/*.tar; do
        need sh -c "ctr -n k8s.io images import --snapshotter native $image > /dev/null"
    done
    setup_ok
}

# stop_containerd -> SIGTERM, waits for it to exit (the shims and the containers stay).
stop_containerd() {
    kill -TERM "$CONTAINERD" 2>/dev/null
    wait "$CONTAINERD" 2>/dev/null
}

# count_exe SUFFIX -> how many processes run a binary whose path ends in SUFFIX.
count_exe() { ls -l /proc/[0-9]*/exe 2>/dev/null | grep -c -- "$1\$"; }
shims() { count_exe /containerd-shim-runc-v2; }
pauses() { count_exe /pause; }

# cri ARGS... -> cri-driver, its events appended to $CRI_EVENTS.
cri() { cri-driver "$@" >> "$CRI_EVENTS"; }

# cri_events EVENT [FIELD] -> how many events of that kind (with FIELD, a "k":v fragment).
cri_events() {
    local n; n=$(grep "\"event\":\"$1\"" "$CRI_EVENTS" | grep -c -- "${2:-}") || true; echo "${n:-0}"
}

# pod_uid N -> a pod UID as the API server makes them (fixed, so runs compare).
pod_uid() { printf '6983351e-%04x-4c1b-9a3e-0f5d2b7c%04x\n' "$1" "$1"; }
