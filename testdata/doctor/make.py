#!/usr/bin/env python3
"""Writes the doctor's fixture nodes (see README.md): each a cgroup tree, a procfs and the
host's own files, as `oomwarden doctor --cgroup-root N/cgroup --proc-root N/proc --host-root
N/host` reads them. Run from anywhere; it replaces them."""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
PSI = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
INIT_NS = "pid:[4026531836]"


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def cgroups(root, dirs, psi=True, extra=None):
    write(os.path.join(root, "cgroup.controllers"), "cpuset cpu io memory pids\n")
    for rel, files in [("", {})] + dirs:
        d = os.path.join(root, rel)
        os.makedirs(d, exist_ok=True)
        base = {"memory.current": "1000000\n", "cgroup.events": "populated 1\nfrozen 0\n"}
        if psi:
            base["memory.pressure"] = PSI
        base.update(files)
        for name, text in base.items():
            write(os.path.join(d, name), text)
    for rel, text in (extra or {}).items():
        write(os.path.join(root, rel), text)


def proc(root, cmdline, meminfo, processes, ns=INIT_NS, psi=True, sysctl=(0, 0)):
    write(os.path.join(root, "cmdline"), cmdline + "\n")
    write(os.path.join(root, "meminfo"), meminfo)
    if psi:
        write(os.path.join(root, "pressure/memory"), PSI)
    write(os.path.join(root, "sys/vm/panic_on_oom"), f"{sysctl[0]}\n")
    write(os.path.join(root, "sys/vm/overcommit_memory"), f"{sysctl[1]}\n")
    os.makedirs(os.path.join(root, "self/ns"), exist_ok=True)
    os.symlink(ns, os.path.join(root, "self/ns/pid"))
    for pid, comm, cmd, adj, cgroup in processes:
        d = os.path.join(root, str(pid))
        write(os.path.join(d, "comm"), comm + "\n")
        write(os.path.join(d, "cmdline"), "\0".join(cmd.split()) + "\0")
        write(os.path.join(d, "oom_score_adj"), f"{adj}\n")
        write(os.path.join(d, "cgroup"), f"0::/{cgroup}\n")


def node(name):
    root = os.path.join(HERE, name)
    shutil.rmtree(root, ignore_errors=True)
    return root


MEMINFO = "MemTotal:        4000000 kB\nMemFree:          1000000 kB\nMemAvailable:     2000000 kB\n"
SWAP = "SwapTotal:        2097152 kB\nSwapFree:         1048576 kB\nZswap:              10240 kB\n"

# clean: a Talos node with nothing to fix.
root = node("clean")
cgroups(f"{root}/cgroup", [
    ("init", {}), ("system", {}), ("system/apid", {}), ("podruntime", {}),
    ("podruntime/kubelet", {"memory.min": "67108864\n"}),
    ("podruntime/containerd", {"memory.min": "33554432\n"}),
    ("kubepods", {}), ("kubepods/besteffort", {}), ("kubepods/burstable", {}),
], extra={"cgroup.stat": "nr_descendants 12\nnr_dying_descendants 3\n"})
proc(f"{root}/proc", "BOOT_IMAGE=/vmlinuz talos.platform=metal", MEMINFO + "SwapTotal:              0 kB\nSwapFree:               0 kB\n", [
    (100, "kubelet", "/usr/local/bin/kubelet --config=/etc/kubernetes/kubelet.yaml", -999, "podruntime/kubelet"),
    (101, "containerd", "/bin/containerd --address /run/containerd/containerd.sock", -999, "podruntime/containerd"),
    (102, "oomwarden", "oomwarden run --config /etc/oomwarden/oomwarden.yaml", -1000, "system/oomwarden"),
])
write(f"{root}/host/sys/kernel/mm/lru_gen/enabled", "0x0007\n")
write(f"{root}/host/sys/kernel/mm/lru_gen/min_ttl_ms", "0\n")
write(f"{root}/host/sys/module/zswap/parameters/enabled", "N\n")
write(f"{root}/host/system/state/config.yaml",
      "version: v1alpha1\nmachine:\n  type: worker\n---\napiVersion: v1alpha1\nkind: OOMConfig\ntriggerExpression: 'false'\n")

# kubeadm-troubled: a kubeadm node (systemd driver) on Fedora with systemd-oomd-defaults,
# booted with psi=0, earlyoom installed, swap without a swap policy, panic_on_oom, strict
# overcommit, the kubelet unprotected.
root = node("kubeadm-troubled")
cgroups(f"{root}/cgroup", [
    ("init.scope", {}), ("system.slice", {}),
    ("system.slice/kubelet.service", {"memory.min": "0\n"}),
    ("system.slice/containerd.service", {"memory.min": "0\n"}),
    ("system.slice/earlyoom.service", {}), ("system.slice/systemd-oomd.service", {}),
    ("kubepods.slice", {}), ("kubepods.slice/kubepods-besteffort.slice", {}),
    ("kubepods.slice/kubepods-burstable.slice", {}),
], psi=False, extra={"cgroup.stat": "nr_descendants 40\nnr_dying_descendants 12\n"})
proc(f"{root}/proc", "BOOT_IMAGE=/vmlinuz-6.12 root=/dev/vda1 psi=0 quiet", MEMINFO + SWAP, [
    (200, "systemd-oomd", "/usr/lib/systemd/systemd-oomd", -900, "system.slice/systemd-oomd.service"),
    (201, "earlyoom", "/usr/bin/earlyoom -r 3600 -s 10", -100, "system.slice/earlyoom.service"),
    (202, "kubelet", "/usr/bin/kubelet --config=/var/lib/kubelet/config.yaml", 0, "system.slice/kubelet.service"),
    (203, "containerd", "/usr/bin/containerd", -999, "system.slice/containerd.service"),
    (204, "oomwarden", "/usr/local/bin/oomwarden run --config /etc/oomwarden.yaml", 0, "system.slice/oomwarden.service"),
], psi=False, sysctl=(1, 2))
write(f"{root}/host/usr/lib/systemd/system/-.slice.d/10-oomd-root-slice-defaults.conf",
      "# systemd-oomd-defaults\n[Slice]\nManagedOOMSwap=kill\n")
write(f"{root}/host/usr/lib/systemd/system/system.slice.d/10-oomd-per-slice-defaults.conf",
      "# systemd-oomd-defaults\n[Slice]\nManagedOOMMemoryPressure=kill\nManagedOOMMemoryPressureLimit=80%\n")
write(f"{root}/host/sys/module/zswap/parameters/enabled", "Y\n")

# talos-troubled: a Talos node whose own OOM controller is still on, with the node system
# partition, MGLRU's min_ttl_ms set, thousands of dying cgroups, and oomwarden seen from a
# DaemonSet in workload isolation's PID namespace (the sandbox's, not the host's).
root = node("talos-troubled")
cgroups(f"{root}/cgroup", [
    ("init", {}), ("system", {}), ("system/sandbox", {}), ("podruntime", {}),
    ("kubepods", {}), ("kubepods/besteffort", {}), ("kubepods/burstable", {}),
    ("kubepods/system", {}), ("kubepods/system/burstable", {}),
    ("kubepods/system/burstable/pod5ee0aa02-0000-4000-8000-000000000012", {}),
], extra={"cgroup.stat": "nr_descendants 30\nnr_dying_descendants 4242\n"})
proc(f"{root}/proc", "BOOT_IMAGE=/vmlinuz talos.platform=metal", MEMINFO + "SwapTotal:              0 kB\nSwapFree:               0 kB\n", [
    (1, "oomwarden", "oomwarden run --config /etc/oomwarden/oomwarden.yaml", -1000, "kubepods/besteffort/podX/ctr"),
], ns="pid:[4026532413]")
write(f"{root}/host/sys/kernel/mm/lru_gen/enabled", "0x0007\n")
write(f"{root}/host/sys/kernel/mm/lru_gen/min_ttl_ms", "1000\n")
write(f"{root}/host/system/state/config.yaml",
      "version: v1alpha1\nmachine:\n  type: worker\n")
