# lib.sh - sourced by every scenario inside the guest (busybox sh).
# Builds a Talos-like node, starts processes in cgroups, runs oomwarden, and writes
# /out/result.json: {"scenario", "passed", "checks": [{"name", "ok", "detail"}], ...}.
set -u
CG=/sys/fs/cgroup
OUT=${VMTEST_OUT:-/out}
STATE=$OUT/state
SCENARIO=${SCENARIO:-unknown}
mkdir -p "$OUT" "$STATE"
: > "$OUT/checks.jsonl"
rm -f "$OUT/setup-failed"
FAILED=0

# The node layout to build: talos (default) or systemd (kubelet's systemd cgroup driver).
LAYOUT=${LAYOUT:-talos}
case "$LAYOUT" in
    talos) SYSTEM=system; PODRUNTIME=podruntime; OOMW_CG=system/oomwarden; RUNTIME_CG=podruntime/runtime ;;
    systemd) SYSTEM=system.slice; PODRUNTIME=system.slice/containerd.service; OOMW_CG=system.slice/oomwarden.service; RUNTIME_CG=system.slice/containerd.service ;;
    *) echo "lib.sh: unknown LAYOUT $LAYOUT"; exit 2 ;;
esac
CONTAINER_ID=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef

# The kernel's page reclaim: classic (the two LRU lists; default here, as measured in
# docs/vm-tests.md) or mglru (multi-gen LRU, what Debian's 6.12 ships switched on). A scenario
# name's `@mglru` suffix selects it (tests/vm/run.sh). `set_lru` applies it; result.json says
# which ran.
LRU=${LRU:-classic}
set_lru() {
    case "$LRU" in
        classic) want=n ;;
        mglru) want=y ;;
        *) log "unknown LRU $LRU"; exit 2 ;;
    esac
    echo "$want" > /sys/kernel/mm/lru_gen/enabled 2>/dev/null ||
        { log "cannot set lru_gen/enabled to $want"; echo "lru_gen $want" >> "$OUT/setup-failed"; }
    log "page reclaim: $LRU (lru_gen/enabled $(cat /sys/kernel/mm/lru_gen/enabled 2>/dev/null))"
}

up() { cut -d' ' -f1 /proc/uptime; }
log() { echo "[$SCENARIO $(up)] $*"; }

# need CMD... -> a setup step. A failed one is marked (also from inside $(...), where no
# exit can stop the scenario): `setup_ok` then stops the scenario at once (node_layout and
# start_oomwarden call it), and `finish` turns the mark into a failed check. Nothing after a
# failed setup step could pass for the right reason.
need() {
    "$@" && return 0
    log "setup failed: $*" >&2
    echo "$*" >> "$OUT/setup-failed"
    return 1
}
setup_ok() {
    [ -s "$OUT/setup-failed" ] || return 0
    finish
    exit 1
}
# put TEXT FILE -> writes TEXT (and a newline) to FILE.
put() { printf '%s\n' "$1" > "$2"; }

# node_layout: talos: init, system/, podruntime/{runtime,kubelet}, kubepods/{besteffort,burstable};
# systemd: init.scope, system.slice/{oomwarden,containerd,kubelet}.service,
# kubepods.slice/kubepods-{besteffort,burstable}.slice.
node_layout() {
    if [ "$LAYOUT" = systemd ]; then
        parents="system.slice kubepods.slice kubepods.slice/kubepods-besteffort.slice kubepods.slice/kubepods-burstable.slice"
        mkdir -p "$CG/init.scope"
    else
        parents="system podruntime kubepods kubepods/besteffort kubepods/burstable"
        mkdir -p "$CG/init"
    fi
    for d in $parents; do
        need mkdir -p "$CG/$d"
        need put "+memory +pids" "$CG/$d/cgroup.subtree_control"
    done
    if [ "$LAYOUT" = systemd ]; then
        need mkdir -p "$CG/$OOMW_CG" "$CG/$RUNTIME_CG" "$CG/system.slice/kubelet.service"
    else
        need mkdir -p "$CG/$OOMW_CG" "$CG/$RUNTIME_CG" "$CG/podruntime/kubelet"
    fi
    setup_ok
}

# svc_cg NAME -> the cgroup of a System service (relative).
svc_cg() { if [ "$LAYOUT" = systemd ]; then echo "system.slice/$1.service"; else echo "system/$1"; fi; }

# pod CLASS NAME [LIMIT] -> creates the pod cgroup (CLASS: besteffort|burstable|guaranteed) with
# one container cgroup `ctr` (processes go there: cgroup v2 allows no processes in a cgroup
# whose controllers are enabled for children); LIMIT sets the pod's memory.max. Prints the pod.
pod() {
    case "$LAYOUT:$1" in
        talos:guaranteed) p=$CG/kubepods/pod$2 ;;
        talos:*) p=$CG/kubepods/$1/pod$2 ;;
        systemd:guaranteed) p=$CG/kubepods.slice/kubepods-pod$2.slice ;;
        systemd:*) p=$CG/kubepods.slice/kubepods-$1.slice/kubepods-$1-pod$2.slice ;;
    esac
    need mkdir -p "$p"
    need put "+memory +pids" "$p/cgroup.subtree_control"
    need mkdir -p "$(ctr "$p")"
    [ -z "${3:-}" ] || need put "$3" "$p/memory.max"
    echo "$p"
}

# ctr POD -> the pod's container cgroup (`ctr` on Talos, as containerd names it on systemd).
ctr() { if [ "$LAYOUT" = systemd ]; then echo "$1/cri-containerd-$CONTAINER_ID.scope"; else echo "$1/ctr"; fi; }

# start_in CGROUP CMD... -> runs CMD in CGROUP in the background; prints its PID.
start_in() {
    cg=$1; shift
    sh -c 'echo $$ > "$0/cgroup.procs"; exec "$@"' "$cg" "$@" > /dev/null 2>&1 &
    echo $!
}

# start_oomwarden ARGS... -> runs oomwarden in system/oomwarden, logging to $OUT/oomwarden.log.
# OOMW_WRAP, when set, is a command the daemon runs under (S26: `unshare -p -f -m --mount-proc`,
# a PID namespace of its own); $OOMWARDEN is then the wrapper's PID.
start_oomwarden() {
    setup_ok
    # shellcheck disable=SC2086
    ${OOMW_WRAP:-} sh -c 'echo $$ > '"$CG/$OOMW_CG"'/cgroup.procs; exec oomwarden run --log-format json --state-dir '"$STATE"' "$@"' oomwarden "$@" \
        > /dev/null 2>> "$OUT/oomwarden.log" &
    OOMWARDEN=$!
    # A daemon that does not start fails the scenario at once: nothing after it could pass
    # for the right reason.
    if ! wait_for 30 grep -q '"oomwarden started"' "$OUT/oomwarden.log"; then
        log "oomwarden did not start"; cat "$OUT/oomwarden.log"
        check "oomwarden started" "see oomwarden.log" false
        finish
        exit 1
    fi
}

# bench_node -> the benchmark's node: the page-reclaim mode, the layout, S1's services with hot
# file working sets, and the canary in system/ (its PID in $CANARY, its report in
# $OUT/canary.json).
bench_node() {
    set_lru
    node_layout
    disk_services
    dd if=/dev/urandom of=/mnt/canary bs=1M count=8 2>/dev/null
    mkdir -p "$CG/system/canary"
    CANARY=$(start_in "$CG/system/canary" canary /mnt/canary "$OUT/canary.json")
}

# system_full_total -> the System class's `full` stall so far (µs): an episode's stall is the
# difference between its end and its start.
system_full_total() { awk '/^full/{split($5, t, "="); print t[2]}' "$CG/system/memory.pressure"; }

# episode_end -> the end of a benchmark episode (bench/episode.sh, bench/swap-episode.sh): T1,
# when the workload ended; 3 s for a kill's aftermath; the canary stopped and its report
# written (CANARY_ALIVE says whether it outlived the episode); FULL1, the System stall so far.
episode_end() {
    T1=$(up)
    sleep 3
    CANARY_ALIVE=yes; alive "$CANARY" || CANARY_ALIVE=no
    kill -TERM "$CANARY"; wait_for 10 test -s "$OUT/canary.json"
    FULL1=$(system_full_total)
}

# services_died -> " system/svc1 …": the node's services and the canary that died (after
# episode_end), each with a leading space.
services_died() {
    alive "$SVC1" || printf ' system/svc1'
    alive "$SVC2" || printf ' system/svc2'
    alive "$RUNTIME" || printf ' podruntime/runtime'
    [ "$CANARY_ALIVE" = yes ] || printf ' system/canary'
}

# episode_quit -> stops oomwarden and keeps its records and the kernel log in $OUT.
episode_quit() {
    [ -n "${OOMWARDEN:-}" ] && alive "$OOMWARDEN" && kill -TERM "$OOMWARDEN" && wait "$OOMWARDEN"
    cp "$STATE/actions.jsonl" "$OUT/" 2>/dev/null
    dmesg > "$OUT/dmesg.txt"
}

# start_contender NAME -> starts one of the OOM handlers the benchmark compares (tests/vm/bench.sh),
# each from what the runner copied into /root: `oomwarden` (the embedded defaults, as every
# suite scenario runs it), `oomwarden-memory` (examples/config/memory-level.yaml),
# `oomwarden-recommended` (examples/config/recommended.yaml), `oomwarden-recommended-swap` and
# `oomwarden-culprit` (examples/config/, in /root/config), `oomwarden-psi` (the defaults and
# kernel PSI triggers), `earlyoom` (Debian's, its defaults), `earlyoom-oomwarden-idle` (earlyoom
# beside an oomwarden that never acts: what sampling costs), `observer` (an oomwarden that never
# acts and records everything it reads every 100 ms), `nohang` (Debian's nohang 0.2.0 with its
# shipped configuration, on the host's Python), `oomd` (Debian's oomd 0.5.0 with the rules of
# its shipped configuration, pointed at the pods: bench/peers/oomd.json), `kernel` (nothing).
start_contender() {
    case "$1" in
        oomwarden) start_oomwarden ;;
        oomwarden-memory) start_oomwarden --config /root/memory-level.yaml ;;
        oomwarden-recommended) start_oomwarden --config /root/recommended.yaml ;;
        oomwarden-recommended-swap) start_oomwarden --config /root/config/recommended-swap.yaml ;;
        oomwarden-culprit) start_oomwarden --config /root/config/culprit.yaml ;;
        oomwarden-psi)
            printf 'apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\npsiTriggers:\n  enabled: true\n' > /root/psi.yaml
            start_oomwarden --config /root/psi.yaml ;;
        earlyoom|earlyoom-oomwarden-idle)
            if [ "$1" = earlyoom-oomwarden-idle ]; then
                printf 'apiVersion: v1alpha1\nkind: OOMConfig\ntriggerExpression: "false"\nsampleInterval: 100ms\n' > /root/idle.yaml
                start_oomwarden --config /root/idle.yaml
            fi
            mkdir -p "$CG/system/earlyoom"
            start_in "$CG/system/earlyoom" sh -c "exec earlyoom -r 5 > $OUT/earlyoom.log 2>&1" > /dev/null ;;
        observer)
            printf 'apiVersion: v1alpha1\nkind: OOMConfig\ntriggerExpression: "false"\nsampleInterval: 100ms\n' > /root/observer.yaml
            start_oomwarden --config /root/observer.yaml --record "$OUT/recording.rec" ;;
        nohang)
            mkdir -p "$CG/system/nohang"
            start_in "$CG/system/nohang" sh -c "exec python3 -S /usr/sbin/nohang --monitor --config /etc/nohang/nohang.conf > $OUT/nohang.log 2>&1" > /dev/null ;;
        oomd)
            mkdir -p "$CG/system/oomd"
            start_in "$CG/system/oomd" sh -c "exec oomd --config /etc/oomd/oomd.json --interval 1 > $OUT/oomd.log 2>&1" > /dev/null ;;
        kernel) ;;
        *) log "unknown contender $1"; exit 2 ;;
    esac
}

# contender_kills NAME -> how many kills the contender made so far.
contender_kills() {
    case "$1" in
        oomwarden|oomwarden-*) count_outcome killed ;;
        earlyoom*) n=$(grep -c 'sending SIG[A-Z]* to process' "$OUT/earlyoom.log" 2>/dev/null) || true; echo "${n:-0}" ;;
        nohang) n=$(grep -c 'Implementing a corrective action' "$OUT/nohang.log" 2>/dev/null) || true; echo "${n:-0}" ;;
        oomd) n=$(grep -c 'Killed ' "$OUT/oomd.log" 2>/dev/null) || true; echo "${n:-0}" ;;
        *) echo 0 ;;
    esac
}

# wait_for SECONDS CMD... -> polls CMD every 0.2 s; status 0 when it succeeds in time.
wait_for() {
    t=$1; shift
    end=$(( $(cut -d. -f1 /proc/uptime) + t ))
    while [ "$(cut -d. -f1 /proc/uptime)" -lt "$end" ]; do
        "$@" && return 0
        sleep 0.2
    done
    return 1
}

populated() { grep -q 'populated 1' "$1/cgroup.events"; }
alive() { kill -0 "$1" 2>/dev/null; }
oom_kills() { awk '/^oom_kill /{print $2}' /proc/vmstat; }
# One number each. (`grep -c` prints 0 *and* fails when nothing matches, so the former
# `… && grep -c … || echo 0` printed two lines and the "wait for a kill" loops ended at once.)
# Records of oomwarden's own actions (the kernel's OOM kills are recorded too, `kind: kernel-oom`).
ours() { grep -h '"kind":"oomwarden"' "$STATE/actions.jsonl" 2>/dev/null; }
records() { local n; n=$(ours | grep -c .) || true; echo "${n:-0}"; }
kernel_records() { local n; n=$(grep -c '"kind":"kernel-oom"' "$STATE/actions.jsonl" 2>/dev/null) || true; echo "${n:-0}"; }
count_outcome() { local n; n=$(grep -c "\"kind\":\"oomwarden\",\"outcome\":\"$1\"" "$STATE/actions.jsonl" 2>/dev/null) || true; echo "${n:-0}"; }

json_str() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g' | tr '\n' ' ')"; }

# watch_hog POD LIMIT -> waits up to LIMIT seconds for oomwarden's first kill, logging the pod's
# memory, the services' stall and MemAvailable every 5 s; stops early when $LEAK dies or the
# kernel OOM killer fires (against $OOM_BEFORE), and logs how long it took from now.
watch_hog() {
    T0=$(up); i=0
    while [ $i -lt "$2" ] && [ "$(count_outcome killed)" = 0 ] && alive "$LEAK" && [ "$(oom_kills)" = "$OOM_BEFORE" ]; do
        [ $((i % 5)) = 0 ] && log "pod=$(( $(cat "$1"/memory.current) >> 20 ))MiB system[$(psi $SYSTEM)] podruntime[$(psi $PODRUNTIME)] avail=$(awk '/MemAvailable/{print $2}' /proc/meminfo)kB"
        sleep 1; i=$((i + 1))
    done
    log "first action after $(awk -v a="$T0" -v b="$(up)" 'BEGIN{print b-a}')s"
}

# text_profile_start / text_profile_pages PID: with TEXT_PROFILE set (tests/vm/bench/text-profile.sh),
# the pages of its binary's text a daemon has touched, for scripts/text-order/profile. The kernel
# maps a file's pages 64 KiB around each page faulted in; set to one page (fault_around_bytes,
# debugfs), a page is present in the daemon's page table only if it was touched, so
# /proc/PID/pagemap (bit 63) lists them. Appends the binary's file page numbers to
# $OUT/text-pages.txt. Both do nothing without TEXT_PROFILE.
text_profile_start() {
    [ -n "${TEXT_PROFILE:-}" ] || return 0
    mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
    echo 4096 > /sys/kernel/debug/fault_around_bytes
    log "text profile: fault_around_bytes $(cat /sys/kernel/debug/fault_around_bytes)"
}
text_profile_pages() {
    [ -n "${TEXT_PROFILE:-}" ] || return 0
    awk '$2 == "r-xp" && $6 ~ /oomwarden$/ { split($1, r, "-"); print r[1], r[2], $3; exit }' "/proc/$1/maps" > /tmp/text-vma
    read -r lo hi off < /tmp/text-vma || { log "text profile: no text mapping in /proc/$1/maps"; return 1; }
    first=$(( 0x$lo / 4096 )) n=$(( (0x$hi - 0x$lo) / 4096 )) base=$(( 0x$off / 4096 ))
    dd if="/proc/$1/pagemap" bs=8 skip="$first" count="$n" 2>/dev/null | od -An -v -tx8 -w8 |
        awk -v base="$base" '$1 ~ /^[89a-f]/ { print base + NR - 1 }' >> "$OUT/text-pages.txt"
    sha256sum "/proc/$1/exe" | cut -d' ' -f1 > "$OUT/text-binary.sha256"
    log "text profile: $(sort -u "$OUT/text-pages.txt" | wc -l) pages of $n touched so far (pid $1)"
}

# check NAME DETAIL CMD... -> records whether CMD succeeds.
check() {
    name=$1; detail=$2; shift 2
    if "$@"; then ok=true; log "PASS $name ($detail)"; else ok=false; FAILED=1; log "FAIL $name ($detail)"; fi
    printf '{"name":%s,"ok":%s,"detail":%s}\n' "$(json_str "$name")" "$ok" "$(json_str "$detail")" >> "$OUT/checks.jsonl"
}

# finish -> stops oomwarden, writes result.json, exits 0 if every check passed.
finish() {
    if [ -n "${OOMWARDEN:-}" ] && alive "$OOMWARDEN"; then kill -TERM "$OOMWARDEN"; wait "$OOMWARDEN" 2>/dev/null; fi
    if [ -s "$OUT/setup-failed" ] && ! grep -q '"name":"setup"' "$OUT/checks.jsonl"; then
        check "setup" "$(tr '\n' ';' < "$OUT/setup-failed")" false
    fi
    dmesg > "$OUT/dmesg.txt" 2>/dev/null
    cp "$STATE/actions.jsonl" "$OUT/actions.jsonl" 2>/dev/null
    passed=true; [ "$FAILED" = 0 ] || passed=false
    {
        printf '{"scenario":%s,"layout":"%s","lru":"%s","swap":"%s","passed":%s,"kernel":%s,"uptime":%s,"records":%s,"kernelRecords":%s,"kernelOomKills":%s,"checks":[' \
            "$(json_str "$SCENARIO")" "$LAYOUT" "$LRU" "$SWAP" "$passed" "$(json_str "$(uname -r)")" "$(up)" "$(records)" "$(kernel_records)" "$(oom_kills)"
        sed '$!s/$/,/' "$OUT/checks.jsonl" | tr -d '\n'
        printf ']}\n'
    } > "$OUT/result.json"
    cat "$OUT/result.json"
    [ "$FAILED" = 0 ]
}

# disk_services: formats the scratch disk, writes file sets for two System services and the
# runtime, and starts them. Their working sets are file-backed (binaries and data) and hot:
# SERVICE_MB x 3 MiB each, SERVICE_PAGES pages touched in scattered order every 100 ms, so every
# page is touched about every 1.5 s (a node agent's hot set, not a cold cache).
disk_services() {
    mke2fs -q /dev/vda && mkdir -p /mnt && mount -t ext4 /dev/vda /mnt || { log "no scratch disk"; exit 1; }
    for s in sys1 sys2 rt; do
        mkdir -p /mnt/$s
        for i in 0 1 2; do dd if=/dev/urandom of=/mnt/$s/f$i bs=1M count=${SERVICE_MB:-10} 2>/dev/null; done
    done
    sync; echo 3 > /proc/sys/vm/drop_caches
    mkdir -p "$CG/$(svc_cg svc1)" "$CG/$(svc_cg svc2)"
    SVC1=$(start_in "$CG/$(svc_cg svc1)" service /mnt/sys1 ${SERVICE_PAGES:-512} 100)
    SVC2=$(start_in "$CG/$(svc_cg svc2)" service /mnt/sys2 ${SERVICE_PAGES:-512} 100)
    RUNTIME=$(start_in "$CG/$RUNTIME_CG" service /mnt/rt ${SERVICE_PAGES:-512} 100)
    sleep 3
}

# big_files: 1.2 GB of files on the scratch disk (/mnt/big/f0..f11, 100 MiB each), more than
# the VM's RAM, out of the page cache: reading them over and over churns the cache.
big_files() {
    mkdir -p /mnt/big
    i=0; while [ $i -lt 12 ]; do dd if=/dev/zero of=/mnt/big/f$i bs=1M count=100 2>/dev/null; i=$((i + 1)); done
    sync; echo 3 > /proc/sys/vm/drop_caches
}

# swap_on DEVICE -> swap on DEVICE (a scratch disk); with SWAP=zswap, the kernel's compressed
# cache in front of it too (zswap: what Talos ships). Logs what the kernel took. result.json
# says which ran (`off` without swap).
SWAP=${SWAP:-off}
swap_on() {
    need mkswap "$1" > /dev/null && need swapon "$1" || return 1
    [ "$SWAP" != off ] || SWAP=disk
    case "$SWAP" in
        disk) put N /sys/module/zswap/parameters/enabled 2>/dev/null || true ;;
        zswap) need put Y /sys/module/zswap/parameters/enabled ;;
        *) log "unknown SWAP $SWAP"; exit 2 ;;
    esac
    log "swap: $SWAP ($(awk '/^SwapTotal/{print $2}' /proc/meminfo) kB; zswap $(cat /sys/module/zswap/parameters/enabled 2>/dev/null || echo absent))"
}

# psi CG -> "some10 full10" of a cgroup (relative or absolute; "" for /proc/pressure/memory)
psi() {
    case "$1" in /*) f=$1/memory.pressure ;; *) f=$CG/$1/memory.pressure ;; esac
    [ -z "$1" ] && f=/proc/pressure/memory
    awk '{ split($2, a, "="); printf "%s=%s ", $1, a[2] }' "$f"
}
