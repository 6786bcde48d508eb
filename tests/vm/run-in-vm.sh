#!/usr/bin/env bash
# run-in-vm.sh - oomwarden's VM harness (adapted from the team's reference harness):
# run a command as root inside a throw-away QEMU VM that boots a
# real Debian Linux kernel with a pure cgroup v2 hierarchy (memory controller
# enabled at the root), PSI on, no swap, no network, initramfs only.
#
#   run-in-vm.sh [options] [--] COMMAND [ARG...]
#
# Options:
#   --mem SIZE            guest RAM, QEMU -m syntax (default 1G)
#   --cpus N              guest vCPUs (default 2)
#   --timeout SEC         wall-clock limit for the whole run, boot included
#                         (default 300); on expiry qemu is killed by PID, exit 124
#   --add HOST[:GUEST]    copy a file or directory into the initramfs (repeatable).
#                         GUEST defaults to HOST's absolute path. Parent
#                         directories are created. Mode bits are kept.
#   --add-bin HOST[:GUEST]  like --add for a dynamically linked ELF: also copies
#                         every shared library ldd reports (same paths) + the loader
#   --module NAME         load kernel module NAME (plus its dependencies, from the
#                         guest kernel's own package) before COMMAND, e.g. zram
#   --disk IMG            attach raw image IMG as a virtio disk (/dev/vda, then
#                         /dev/vdb, ...; repeatable); loads virtio_blk
#   --scratch-disk SIZE   attach a new empty sparse disk of SIZE (e.g. 2G), deleted
#                         afterwards; the guest can mke2fs it (page-cache tests)
#   --out HOSTDIR         after COMMAND, copy the guest's /out directory
#                         (exported as $VMTEST_OUT) into HOSTDIR
#   --env NAME=VALUE      environment variable for COMMAND (repeatable)
#   --append ARGS         extra kernel command line arguments
#   --verbose-kernel      do not pass 'quiet' (all kernel messages on the console)
#   --cgroup-opts OPTS    cgroup2 mount options (default nsdelegate,memory_recursiveprot)
#   --kernel PATH         boot this bzImage instead of the cached Debian kernel
#   --kernel-suite SUITE  Debian suite to take linux-image-cloud-amd64 from:
#                         trixie (default, 6.12), bookworm (6.1),
#                         bookworm-backports, or "host" (the host's apt sources)
#   --accel tcg|kvm       accelerator (default tcg: the test machines have no usable
#                         KVM; kvm where /dev/kvm works is 15-25x faster)
#   --log FILE            also write the whole console log (CRs stripped) to FILE
#   --quiet               do not stream the console to stdout (use with --log)
#   --keep                keep the temporary work directory (printed on stderr)
#   -h, --help            this text
#
# Exit status: COMMAND's exit status (128+N when it died from signal N);
#   124 = timeout (qemu killed), 125 = harness/guest failure (no exit marker:
#   kernel panic, qemu error, ...), 2 = usage error.
#
# Environment: VMTEST_CACHE (default /var/cache/oomwarden-vm: the kernel, busybox and
#   package downloads, fetched once), VMTEST_KERNEL (same as
#   --kernel), VMTEST_KERNEL_SUITE (same as --kernel-suite), VMTEST_KERNEL_PKG
#   (default linux-image-cloud-amd64), VMTEST_DEBIAN_MIRROR (default: the
#   first Debian archive URI configured in the host's apt sources),
#   VMTEST_ACCEL (same as --accel), VMTEST_QEMU_EXTRA (extra qemu args, split on
#   spaces), VMTEST_BUSYBOX (static busybox to use; "download" = always the
#   cached busybox-static .deb instead of the host's /bin/busybox).
#
# The console (guest ttyS0: COMMAND's stdout/stderr + kernel messages of level
# err and above, or all with --verbose-kernel) is streamed to stdout.  Harness
# messages go to stderr, prefixed "run-in-vm:".
set -euo pipefail

SELF_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROG=run-in-vm

MEM=1G
CPUS=2
TIMEOUT=300
ACCEL=${VMTEST_ACCEL:-tcg}
KERNEL=${VMTEST_KERNEL:-}
KERNEL_PKG=${VMTEST_KERNEL_PKG:-linux-image-cloud-amd64}
KERNEL_SUITE=${VMTEST_KERNEL_SUITE:-trixie}
host_debian_mirror() {
    # The first plain Debian archive URI the host's apt is already set up with.
    local f uri
    for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -r $f ]] || continue
        uri=$(grep -hoE '(^URIs:[[:space:]]*|^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?)[a-z]+://[^[:space:]]+/debian/?([[:space:]]|$)' "$f" 2>/dev/null \
              | grep -oE '[a-z]+://[^[:space:]]+' | head -n1) || true
        [[ -n $uri ]] && { echo "${uri%/}"; return; }
    done
}
DEBIAN_MIRROR=${VMTEST_DEBIAN_MIRROR:-$(host_debian_mirror)}
CACHE=${VMTEST_CACHE:-/var/cache/oomwarden-vm}
APPEND_EXTRA=""
QUIET_KERNEL=1
CG_OPTS=""
OUTDIR=""
LOGFILE=""
STREAM=1
KEEP=0
ADDS=()
ADDBINS=()
MODULES=()
ENVS=()
DISKS=()
SCRATCH=()

die() { echo "$PROG: $*" >&2; exit 2; }
info() { echo "$PROG: $*" >&2; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

while (($#)); do
    case "$1" in
        --mem) MEM=${2:?}; shift 2 ;;
        --cpus) CPUS=${2:?}; shift 2 ;;
        --timeout) TIMEOUT=${2:?}; shift 2 ;;
        --add) ADDS+=("${2:?}"); shift 2 ;;
        --add-bin) ADDBINS+=("${2:?}"); shift 2 ;;
        --module) MODULES+=("${2:?}"); shift 2 ;;
        --disk) [[ -f ${2:?} ]] || die "--disk: $2 is not a file"; DISKS+=("$(readlink -f "$2")"); shift 2 ;;
        --scratch-disk) SCRATCH+=("${2:?}"); shift 2 ;;
        --out) OUTDIR=${2:?}; shift 2 ;;
        --env) ENVS+=("${2:?}"); shift 2 ;;
        --append) APPEND_EXTRA+=" ${2:?}"; shift 2 ;;
        --verbose-kernel) QUIET_KERNEL=0; shift ;;
        --cgroup-opts) CG_OPTS=${2:?}; shift 2 ;;
        --kernel) KERNEL=${2:?}; shift 2 ;;
        --kernel-suite) KERNEL_SUITE=${2:?}; shift 2 ;;
        --accel) ACCEL=${2:?}; shift 2 ;;
        --log) LOGFILE=${2:?}; shift 2 ;;
        --quiet) STREAM=0; shift ;;
        --keep) KEEP=1; shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift; break ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) break ;;
    esac
done
(($#)) || die "no COMMAND given (see --help)"
[[ $TIMEOUT =~ ^[0-9]+$ ]] || die "--timeout must be whole seconds"
USER_MODULES=${#MODULES[@]}
if ((${#DISKS[@]} + ${#SCRATCH[@]})); then
    MODULES=(virtio_pci virtio_blk "${MODULES[@]}")   # built in on some kernels: skipped then
fi
[[ $CPUS =~ ^[0-9]+$ ]] || die "--cpus must be a number"
case "$ACCEL" in tcg|kvm) ;; *) die "--accel must be tcg or kvm" ;; esac

# ---------------------------------------------------------------- dependencies
APT_UPDATED=0
apt_install() {
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y --no-install-recommends "$@" >&2; then
        apt-get update >&2 && APT_UPDATED=1
        apt-get install -y --no-install-recommends "$@" >&2
    fi
}
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v cpio >/dev/null || need+=(cpio)
command -v zstd >/dev/null || need+=(zstd)        # to unpack the 6.12 bzImage for PVH boot
if ((${#MODULES[@]})); then
    command -v xz >/dev/null || need+=(xz-utils)
    command -v zstd >/dev/null || need+=(zstd)
fi
if ((${#need[@]})); then
    info "installing ${need[*]}"
    apt_install "${need[@]}"
fi

# A static busybox for the guest: the host's /bin/busybox if it is static
# (package busybox-static), else busybox-static's binary fetched with
# 'apt-get download' into $CACHE (the host's busybox package is left alone).
is_static() { [[ -x $1 ]] && ! ldd "$1" >/dev/null 2>&1; }
BUSYBOX=${VMTEST_BUSYBOX:-}
if [[ -z $BUSYBOX || $BUSYBOX == download ]]; then
    if [[ -z $BUSYBOX ]] && is_static /bin/busybox; then
        BUSYBOX=/bin/busybox
    else
        BUSYBOX=$CACHE/busybox-static/bin/busybox
        if ! is_static "$BUSYBOX"; then
            mkdir -p "$CACHE"
            (
                exec 9>"$CACHE/.lock"; flock 9
                if ! is_static "$BUSYBOX"; then
                    info "fetching busybox-static (once, into $CACHE)"
                    t=$(mktemp -d "$CACHE/.bb.XXXXXX")
                    if ! (cd "$t" && apt-get -o APT::Sandbox::User=root download busybox-static >&2); then
                        apt-get update >&2
                        (cd "$t" && apt-get -o APT::Sandbox::User=root download busybox-static >&2)
                    fi
                    dpkg-deb -x "$t"/busybox-static_*.deb "$t/x"
                    rm -rf "$CACHE/busybox-static"; mkdir -p "$CACHE/busybox-static/bin"
                    for b in "$t/x/bin/busybox" "$t/x/usr/bin/busybox"; do
                        if [[ -f $b && ! -L $b ]]; then mv "$b" "$BUSYBOX"; break; fi
                    done
                    rm -rf "$t"
                fi
            )
        fi
    fi
fi
is_static "$BUSYBOX" || die "no static busybox ($BUSYBOX)"

# ---------------------------------------------------------------- kernel
# Cached as $CACHE/<krel>/{vmlinuz,config,lib/modules/<krel>/}; the file
# $CACHE/KREL.<suite>.<pkg> names the release used for that suite + package.
# Obtained with 'apt-get download' + 'dpkg-deb -x': nothing is installed into
# the host's /boot, no initramfs hooks run.  For a suite other than "host" a
# private apt configuration under $CACHE/apt/<suite> is used, so the host's apt
# sources are not touched.
apt_opts=()
kernel_apt_setup() {
    if [[ $KERNEL_SUITE == host ]]; then apt_opts=(); return; fi
    local d=$CACHE/apt/$KERNEL_SUITE
    mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
    echo "deb $DEBIAN_MIRROR $KERNEL_SUITE main" > "$d/sources.list"
    apt_opts=(-o "Dir::Etc::SourceList=$d/sources.list" -o Dir::Etc::SourceParts=/dev/null
              -o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d/cache" -o APT::Sandbox::User=root)
}
resolve_kernel_pkg() {
    { apt-cache "${apt_opts[@]}" depends "$KERNEL_PKG" 2>/dev/null || true; } | awk '/Depends: linux-image-/{print $2; exit}'
}
fetch_kernel() {
    mkdir -p "$CACHE"
    exec 9>"$CACHE/.lock"
    flock 9
    local kfile=$CACHE/KREL.$KERNEL_SUITE.$KERNEL_PKG
    if [[ -s $kfile && -s $CACHE/$(cat "$kfile")/vmlinuz ]]; then
        flock -u 9; return
    fi
    kernel_apt_setup
    local pkg dl tmp vmlinuz krel m
    pkg=$(resolve_kernel_pkg)
    if [[ -z $pkg ]]; then
        info "apt-get update (${KERNEL_SUITE} package lists)"
        apt-get "${apt_opts[@]}" update >&2 || true
        pkg=$(resolve_kernel_pkg)
    fi
    [[ -n $pkg ]] || { echo "$PROG: cannot resolve kernel package $KERNEL_PKG in suite $KERNEL_SUITE" >&2; exit 125; }
    info "downloading guest kernel package $pkg ($KERNEL_SUITE; once, into $CACHE)"
    tmp=$(mktemp -d "$CACHE/.dl.XXXXXX")
    if ! (cd "$tmp" && apt-get "${apt_opts[@]}" -o APT::Sandbox::User=root download "$pkg" >&2); then
        rm -rf "$tmp"; echo "$PROG: apt-get download $pkg failed" >&2; exit 125
    fi
    dl=$(ls "$tmp"/*.deb)
    mkdir "$tmp/x"
    dpkg-deb -x "$dl" "$tmp/x"
    vmlinuz=$(ls "$tmp"/x/boot/vmlinuz-* | head -n1)
    krel=${vmlinuz##*/vmlinuz-}
    rm -rf "${CACHE:?}/$krel"
    mkdir -p "$CACHE/$krel/lib/modules"
    mv "$vmlinuz" "$CACHE/$krel/vmlinuz"
    mv "$tmp"/x/boot/config-* "$CACHE/$krel/config" 2>/dev/null || true
    for m in "$tmp/x/lib/modules/$krel" "$tmp/x/usr/lib/modules/$krel"; do
        if [[ -d $m && ! -L $m ]]; then mv "$m" "$CACHE/$krel/lib/modules/$krel"; break; fi
    done
    rm -rf "$tmp"
    echo "$krel" > "$kfile"
    flock -u 9
}
# Uncompressed ELF vmlinux from a bzImage (like the kernel's scripts/extract-vmlinux).
# QEMU boots it directly through its PVH entry point, skipping the real-mode
# setup and the decompressor: about 2 s faster under TCG for the zstd-packed 6.12.
extract_vmlinux() {
    local in=$1 out=$2 magic tool off
    command -v readelf >/dev/null || return 1          # (binutils) to check the PVH note
    for magic in '\x28\xb5\x2f\xfd:zstd -qdc' '\x02\x21\x4c\x18:lz4 -qdc' '\xfd\x37\x7a\x58\x5a\x00:xz -qdc' '\x1f\x8b\x08:gzip -qdc'; do
        tool=${magic#*:}
        command -v "${tool%% *}" >/dev/null || continue
        for off in $(LC_ALL=C grep -obUaP "${magic%%:*}" "$in" 2>/dev/null | cut -d: -f1 | head -n 5); do
            tail -c +$((off + 1)) "$in" | $tool > "$out.tmp" 2>/dev/null
            if [[ $(head -c 4 "$out.tmp" 2>/dev/null | od -An -tx1 | tr -d ' ') == 7f454c46 ]] &&
               readelf -n "$out.tmp" 2>/dev/null | grep -q 'Xen.*(0x00000012)'; then   # PHYS32_ENTRY
                mv "$out.tmp" "$out"; return 0
            fi
        done
    done
    rm -f "$out.tmp"
    return 1
}
KREL=""
MODDIR=""
if [[ -z $KERNEL ]]; then
    fetch_kernel
    KREL=$(cat "$CACHE/KREL.$KERNEL_SUITE.$KERNEL_PKG")
    KERNEL=$CACHE/$KREL/vmlinuz
    if [[ ! -s $CACHE/$KREL/vmlinux && ! -e $CACHE/$KREL/vmlinux.none ]]; then
        ( exec 9>"$CACHE/.lock"; flock 9
          [[ -s $CACHE/$KREL/vmlinux ]] || extract_vmlinux "$KERNEL" "$CACHE/$KREL/vmlinux" ||
              touch "$CACHE/$KREL/vmlinux.none" )
    fi
    if [[ -s $CACHE/$KREL/vmlinux ]]; then KERNEL=$CACHE/$KREL/vmlinux; fi   # PVH direct boot, faster
    MODDIR=$CACHE/$KREL/lib/modules/$KREL
fi
[[ -r $KERNEL ]] || die "kernel $KERNEL not readable"
if ((${#MODULES[@]})) && [[ ! -d $MODDIR ]]; then
    ((USER_MODULES == 0)) || die "--module needs the cached Debian kernel's modules (not available with --kernel)"
    info "custom kernel: assuming virtio_blk is built in"
    MODULES=()
fi
if ((${#MODULES[@]})); then
    if [[ ! -s $MODDIR/modules.dep ]]; then
        # the .deb ships no modules.dep (its postinst runs depmod); make one
        command -v depmod >/dev/null || { info "installing kmod (for depmod)"; apt_install kmod; }
        ( exec 9>"$CACHE/.lock"; flock 9; [[ -s $MODDIR/modules.dep ]] || depmod -b "$CACHE/$KREL" "$KREL" )
    fi
fi

# ---------------------------------------------------------------- work dir
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vmtest.XXXXXX")
QPID=""
SPID=""
cleanup() {
    local rc=$?
    if [[ -n $QPID ]] && kill -0 "$QPID" 2>/dev/null; then
        kill -KILL "$QPID" 2>/dev/null || true
    fi
    if [[ -n $SPID ]] && kill -0 "$SPID" 2>/dev/null; then
        kill "$SPID" 2>/dev/null || true
    fi
    if ((KEEP)); then info "work dir kept: $WORK"; else rm -rf "$WORK"; fi
    return $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ROOT=$WORK/root
mkdir -p "$ROOT"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,etc,proc,sys,dev,tmp,run,root,out,vmtest,lib,lib64}
cp "$BUSYBOX" "$ROOT/bin/busybox"
install -m 0755 "$SELF_DIR/guest-init.sh" "$ROOT/init"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "$ROOT/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$ROOT/etc/group"
echo vmtest > "$ROOT/etc/hostname"

# COMMAND, each word single-quoted for the guest's /bin/sh
sq() { local s=${1//\'/\'\\\'\'}; printf "'%s'" "$s"; }
{
    printf 'exec'
    for a in "$@"; do printf ' %s' "$(sq "$a")"; done
    printf '\n'
} > "$ROOT/vmtest/cmd"
: > "$ROOT/vmtest/env"
for e in "${ENVS[@]}"; do
    [[ $e == *=* ]] || die "--env wants NAME=VALUE, got $e"
    n=${e%%=*}
    [[ $n =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "bad --env name $n"
    printf 'export %s=%s\n' "$n" "$(sq "${e#*=}")" >> "$ROOT/vmtest/env"
done
[[ -n $CG_OPTS ]] && printf '%s\n' "$CG_OPTS" > "$ROOT/vmtest/cgroup_opts"
[[ -n $OUTDIR ]] && : > "$ROOT/vmtest/want_out"

split_spec() { # HOST[:GUEST] -> SPEC_HOST SPEC_GUEST (absolute)
    local spec=$1
    if [[ $spec == *:* ]]; then SPEC_HOST=${spec%%:*}; SPEC_GUEST=${spec#*:}; else SPEC_HOST=$spec; SPEC_GUEST=""; fi
    [[ -e $SPEC_HOST ]] || die "--add: $SPEC_HOST does not exist"
    [[ -n $SPEC_GUEST ]] || SPEC_GUEST=$(realpath -s "$SPEC_HOST")
    [[ $SPEC_GUEST == /* ]] || die "guest path must be absolute: $SPEC_GUEST"
}
put() { # host guest
    mkdir -p "$ROOT$(dirname "$2")"
    if [[ -d $1 ]]; then
        mkdir -p "$ROOT$2"
        cp -rL --preserve=mode "$1/." "$ROOT$2/"
    else
        rm -f "$ROOT$2"
        cp -L --preserve=mode "$1" "$ROOT$2"
    fi
}
for spec in "${ADDS[@]}"; do split_spec "$spec"; put "$SPEC_HOST" "$SPEC_GUEST"; done
for spec in "${ADDBINS[@]}"; do
    split_spec "$spec"
    put "$SPEC_HOST" "$SPEC_GUEST"
    # shared libraries + dynamic loader, at the same paths as on the host
    while read -r lib; do
        [[ -n $lib && -e $lib ]] || continue
        [[ -e $ROOT$lib ]] || put "$lib" "$lib"
    done < <(ldd "$SPEC_HOST" 2>/dev/null | awk '/=> \//{print $3} /^[[:space:]]*\/[^ ]+ \(/{print $1}')
done

if ((${#MODULES[@]})); then
    : > "$ROOT/vmtest/modules"
    declare -A seen=()
    mod_path() { # module name -> path relative to $MODDIR, from modules.dep
        awk -F: -v n="${1//-/_}" '{f=$1; sub(/.*\//,"",f); sub(/\.ko(\.[a-z]+)?$/,"",f); gsub(/-/,"_",f); if (f==n) {print $1; exit}}' "$MODDIR/modules.dep"
    }
    add_mod() { # appends the module's dependencies, then the module (insmod order)
        local path deps d dst
        path=$(mod_path "$1")
        if [[ -z $path ]]; then
            if grep -q "/${1//[-_]/[-_]}\.ko" "$MODDIR/modules.builtin" 2>/dev/null; then
                info "--module $1: built into the kernel, nothing to load"; return 0
            fi
            die "--module: $1 not found in $MODDIR/modules.dep"
        fi
        [[ -z ${seen[$path]:-} ]] || return 0
        seen[$path]=1
        deps=$(awk -F': *' -v p="$path" '$1==p{print $2; exit}' "$MODDIR/modules.dep")
        for d in $deps; do
            d=${d##*/}; add_mod "${d%%.ko*}"
        done
        dst=/lib/modules/$KREL/${path%.ko*}.ko   # packed uncompressed (busybox insmod)
        mkdir -p "$ROOT$(dirname "$dst")"
        case "$path" in
            *.ko.xz) xz -dc "$MODDIR/$path" > "$ROOT$dst" ;;
            *.ko.zst) zstd -qdc "$MODDIR/$path" > "$ROOT$dst" ;;
            *.ko.gz) gzip -dc "$MODDIR/$path" > "$ROOT$dst" ;;
            *) cp "$MODDIR/$path" "$ROOT$dst" ;;
        esac
        echo "$dst" >> "$ROOT/vmtest/modules"
    }
    for m in "${MODULES[@]}"; do add_mod "$m"; done
fi

(cd "$ROOT" && find . -print0 | cpio --null -o -H newc -R 0:0 --quiet) > "$WORK/initrd.cpio"

n=0
for sz in "${SCRATCH[@]}"; do
    truncate -s "$sz" "$WORK/scratch$n.img"
    DISKS+=("$WORK/scratch$n.img")
    n=$((n + 1))
done

# ---------------------------------------------------------------- boot
CONSOLE=$WORK/console.log
CTL=$WORK/ctl.log
KAPPEND="console=ttyS0 panic=-1 rdinit=/init cgroup_no_v1=all systemd.unified_cgroup_hierarchy=1 psi=1"
((QUIET_KERNEL)) && KAPPEND+=" quiet"
KAPPEND+="$APPEND_EXTRA"
QARGS=(-nodefaults -display none -no-reboot -m "$MEM" -smp "$CPUS"
       -kernel "$KERNEL" -initrd "$WORK/initrd.cpio" -append "$KAPPEND"
       -chardev "file,id=con0,path=$CONSOLE" -serial chardev:con0
       -chardev "file,id=ctl0,path=$CTL" -serial chardev:ctl0)
for d in "${DISKS[@]}"; do
    QARGS+=(-drive "file=${d//,/,,},if=virtio,format=raw")
done
if [[ $ACCEL == kvm ]]; then
    QARGS+=(-accel kvm -cpu host)
else
    QARGS+=(-accel tcg,thread=multi -cpu max,la57=off)
fi
# shellcheck disable=SC2206
[[ -n ${VMTEST_QEMU_EXTRA:-} ]] && QARGS+=($VMTEST_QEMU_EXTRA)

# A guest that dies before its /init runs COMMAND is booted again (up to 3 boots in all, within
# the one --timeout): nothing of the run has started, and under TCG with several vCPUs the
# kernel sometimes oopses while it patches its own text at boot (`Oops: int3` in
# sched_clock_cpu, 2 boots of 21 on 2026-12-02). Each failed boot's console is kept as
# --log FILE.bootN.
deadline=$((SECONDS + TIMEOUT))
BOOTS=3
for ((boot = 1; boot <= BOOTS; boot++)); do
    : > "$CONSOLE"; : > "$CTL"
    info "booting ${KREL:-$KERNEL} ($ACCEL, ${CPUS} vCPU, $MEM RAM, timeout ${TIMEOUT}s, initramfs $(( $(stat -c %s "$WORK/initrd.cpio") / 1024 )) KiB)"
    T0=$(date +%s.%N)
    qemu-system-x86_64 "${QARGS[@]}" </dev/null >"$WORK/qemu.err" 2>&1 &
    QPID=$!
    if ((STREAM)); then
        # follow the console until qemu is gone (by PID); sed -u: no buffering
        tail -s 0.2 -n +1 -f --pid="$QPID" "$CONSOLE" | sed -u 's/\r$//' &
        SPID=$!
    fi
    TIMED_OUT=0
    READY_WALL=""
    while kill -0 "$QPID" 2>/dev/null; do
        if [[ -z $READY_WALL ]] && grep -q '^VMTEST-READY' "$CTL" 2>/dev/null; then
            READY_WALL=$(date +%s.%N)
        fi
        if ((SECONDS >= deadline)); then
            TIMED_OUT=1
            info "timeout after ${TIMEOUT}s: killing qemu (pid $QPID)"
            kill -TERM "$QPID" 2>/dev/null || true
            for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$QPID" 2>/dev/null || break; sleep 0.5; done
            kill -KILL "$QPID" 2>/dev/null || true
            break
        fi
        if [[ -z $READY_WALL ]]; then sleep 0.05; else sleep 0.25; fi
    done
    QRC=0
    wait "$QPID" || QRC=$?
    QPID=""
    if [[ -n $SPID ]]; then wait "$SPID" 2>/dev/null || true; SPID=""; fi
    T1=$(date +%s.%N)
    if ((!TIMED_OUT)) && ! grep -q '^VMTEST-READY' "$CTL" && ((boot < BOOTS)); then
        info "the guest died before running COMMAND (no VMTEST-READY): booting again ($((boot + 1))/$BOOTS)"
        [[ -n $LOGFILE ]] && sed 's/\r$//' "$CONSOLE" > "$LOGFILE.boot$boot"
        if ((!STREAM)); then tail -n 5 "$CONSOLE" | sed "s/^/$PROG: console: /" >&2; fi
        continue
    fi
    break
done

[[ -n $LOGFILE ]] && sed 's/\r$//' "$CONSOLE" > "$LOGFILE"

READY=$(sed -n 's/^VMTEST-READY \([0-9.]*\).*/\1/p' "$CTL" | head -n1)
STATUS=$(sed -n 's/^VMTEST-EXIT \([0-9]*\).*/\1/p' "$CTL" | tail -n1)

if [[ -n $OUTDIR ]] && grep -q '^VMTEST-OUT-END' "$CTL"; then
    mkdir -p "$OUTDIR"
    if ! sed -n '/^VMTEST-OUT-BEGIN/,/^VMTEST-OUT-END/p' "$CTL" | sed '1d;$d' | base64 -d | tar -xzf - -C "$OUTDIR"; then
        info "could not unpack the guest's /out into $OUTDIR"
    fi
fi

info "$(awk -v a="$T0" -v b="$T1" -v w="${READY_WALL:-}" -v r="${READY:-?}" -v q="$QRC" 'BEGIN {
    printf "wall %.1fs; guest /init ran COMMAND %s (guest uptime %ss); qemu exit %s",
        b - a, (w == "" ? "?" : sprintf("%.1fs after qemu start", w - a)), r, q }')"
if ((TIMED_OUT)); then
    exit 124
fi
if [[ -z $STATUS ]]; then
    info "no exit marker from the guest (kernel panic, qemu error or guest crash)"
    [[ -s $WORK/qemu.err ]] && sed "s/^/$PROG: qemu: /" "$WORK/qemu.err" >&2
    if ((!STREAM)); then tail -n 30 "$CONSOLE" | sed "s/^/$PROG: console: /" >&2; fi
    exit 125
fi
exit "$STATUS"
