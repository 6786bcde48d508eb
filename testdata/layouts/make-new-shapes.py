#!/usr/bin/env python3
"""Writes the fixture trees of issue 36's node shapes (see README.md): talos-1.15,
talos-partition, systemd-partition, cgroupfs-partition. Run from anywhere; it replaces them."""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
PSI = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
U = [
    "6b86b273-ff34-4fce-96e3-6b3e0e2d5a2f",  # a BestEffort pod
    "a1b2c3d4-0000-4000-8000-000000000001",  # a Burstable pod
    "0123456789abcdef0123456789abcdef",  # a static Guaranteed pod
    "5ee0aa01-0000-4000-8000-000000000011",  # system partition: BestEffort
    "5ee0aa02-0000-4000-8000-000000000012",  # system partition: Burstable
    "5ee0aa03-0000-4000-8000-000000000013",  # system partition: Guaranteed
]


def cg(root, rel, current, limit="max"):
    d = os.path.join(root, rel)
    os.makedirs(d, exist_ok=True)
    for name, text in [
        ("memory.current", f"{current}\n"),
        ("memory.max", f"{limit}\n"),
        ("memory.pressure", PSI),
        ("cgroup.events", "populated 1\nfrozen 0\n"),
    ]:
        with open(os.path.join(d, name), "w") as f:
            f.write(text)


def tree(name, cgroups):
    root = os.path.join(HERE, name)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    with open(os.path.join(root, "cgroup.controllers"), "w") as f:
        f.write("cpuset cpu io memory pids\n")
    cg(root, "", 3_000_000_000)
    for rel, current, *limit in cgroups:
        cg(root, rel, current, *limit)


def systemd_uid(u):
    return u.replace("-", "_")


talos_base = [
    ("init", 30_000_000),
    ("system", 200_000_000),
    ("system/apid", 40_000_000),
    ("system/trustd", 20_000_000),
    ("podruntime", 300_000_000),
    ("podruntime/containerd", 100_000_000),
    ("podruntime/kubelet", 150_000_000),
    ("kubepods", 1_500_000_000),
    ("kubepods/besteffort", 600_000_000),
    (f"kubepods/besteffort/pod{U[0]}", 600_000_000),
    ("kubepods/burstable", 700_000_000),
    (f"kubepods/burstable/pod{U[1]}", 700_000_000),
    (f"kubepods/pod{U[2]}", 200_000_000, 268435456),
]
# Talos 1.15: a ContainerConfig container, and 1.14's workload isolation (system/sandbox).
tree("talos-1.15", talos_base + [
    ("system/sandbox", 90_000_000),
    ("taloscontainers", 64_000_000),
    ("taloscontainers/spegel", 64_000_000, 134217728),
])
# Kubernetes 1.37's node system partition on Talos (cgroupfs names).
tree("talos-partition", talos_base + [
    ("kubepods/system", 450_000_000, 1073741824),
    ("kubepods/system/besteffort", 100_000_000),
    (f"kubepods/system/besteffort/pod{U[3]}", 100_000_000),
    ("kubepods/system/burstable", 250_000_000),
    (f"kubepods/system/burstable/pod{U[4]}", 250_000_000),
    (f"kubepods/system/pod{U[5]}", 100_000_000, 134217728),
])
# The same partition with the kubelet's systemd cgroup driver.
k = "kubepods.slice"
ks = f"{k}/kubepods-system.slice"
tree("systemd-partition", [
    ("init.scope", 10_000_000),
    ("system.slice", 400_000_000),
    ("system.slice/containerd.service", 80_000_000),
    ("system.slice/kubelet.service", 120_000_000),
    ("system.slice/sshd.service", 5_000_000),
    (k, 1_950_000_000),
    (f"{k}/kubepods-besteffort.slice", 600_000_000),
    (f"{k}/kubepods-besteffort.slice/kubepods-besteffort-pod{systemd_uid(U[0])}.slice", 600_000_000),
    (f"{k}/kubepods-burstable.slice", 700_000_000),
    (f"{k}/kubepods-burstable.slice/kubepods-burstable-pod{systemd_uid(U[1])}.slice", 700_000_000),
    (f"{k}/kubepods-pod{U[2]}.slice", 200_000_000, 268435456),
    (ks, 450_000_000, 1073741824),
    (f"{ks}/kubepods-system-besteffort.slice", 100_000_000),
    (f"{ks}/kubepods-system-besteffort.slice/kubepods-system-besteffort-pod{systemd_uid(U[3])}.slice", 100_000_000),
    (f"{ks}/kubepods-system-burstable.slice", 250_000_000),
    (f"{ks}/kubepods-system-burstable.slice/kubepods-system-burstable-pod{systemd_uid(U[4])}.slice", 250_000_000),
    (f"{ks}/kubepods-system-pod{systemd_uid(U[5])}.slice", 100_000_000, 134217728),
])
# And with the cgroupfs driver on a systemd host.
tree("cgroupfs-partition", [
    ("init.scope", 10_000_000),
    ("system.slice", 400_000_000),
    ("system.slice/containerd.service", 80_000_000),
    ("system.slice/kubelet.service", 120_000_000),
    ("kubepods", 1_950_000_000),
    ("kubepods/besteffort", 600_000_000),
    (f"kubepods/besteffort/pod{U[0]}", 600_000_000),
    ("kubepods/burstable", 700_000_000),
    (f"kubepods/burstable/pod{U[1]}", 700_000_000),
    (f"kubepods/pod{U[2]}", 200_000_000, 268435456),
    ("kubepods/system", 450_000_000, 1073741824),
    ("kubepods/system/besteffort", 100_000_000),
    (f"kubepods/system/besteffort/pod{U[3]}", 100_000_000),
    ("kubepods/system/burstable", 250_000_000),
    (f"kubepods/system/burstable/pod{U[4]}", 250_000_000),
    (f"kubepods/system/pod{U[5]}", 100_000_000, 134217728),
])
