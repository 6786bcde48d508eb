#!/usr/bin/env bash
# Fetches the distribution's container runtime for the CRI scenarios (s13-s16), once, into
# $VMTEST_CACHE/cri: Debian 12's containerd (1.6.20, its CRI plugin built in, with
# containerd-shim-runc-v2 and ctr) and runc (1.1.5), with `apt-get download` and
# `dpkg-deb -x`: nothing is installed on the host. Prints the unpacked root
# (usr/bin/containerd, usr/bin/containerd-shim-runc-v2, usr/bin/ctr, usr/sbin/runc).
# runc needs libseccomp.so.2: run-in-vm.sh --add-bin copies the host's (Debian's libseccomp2),
# or, when the host has none, the one unpacked here (usr/lib/x86_64-linux-gnu).
set -euo pipefail
cache=${VMTEST_CACHE:-/var/cache/oomwarden-vm}/cri
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
root=$cache/root
if [[ ! -x $root/usr/bin/containerd || ! -x $root/usr/sbin/runc ]]; then
    echo "cri/prepare.sh: fetching containerd, runc and libseccomp2 (once, into $cache)" >&2
    t=$(mktemp -d "$cache/.dl.XXXXXX")
    get() { (cd "$t" && apt-get -o APT::Sandbox::User=root download "$@" >&2); }
    get containerd runc libseccomp2 || { apt-get update >&2; get containerd runc libseccomp2; }
    rm -rf "$root.new"; mkdir -p "$root.new"
    for d in "$t"/*.deb; do dpkg-deb -x "$d" "$root.new"; done
    for b in usr/bin/containerd usr/bin/containerd-shim-runc-v2 usr/bin/ctr usr/sbin/runc; do
        [[ -x $root.new/$b ]] || { echo "cri/prepare.sh: the packages have no $b" >&2; exit 1; }
    done
    (cd "$t" && ls ./*.deb) > "$root.new/PACKAGES"
    rm -rf "$root"; mv "$root.new" "$root"; rm -rf "$t"
fi
echo "$root"
