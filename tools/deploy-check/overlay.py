"""What a rendered overlay of deploy/overlays must hold, beyond the API schemas.

    overlay.py NAME RENDERED.yaml

Every path the daemon is told to read is mounted; the Namespace admits a privileged pod; the
configuration starts in a dry run and names a runtime socket and pod logs that are mounted;
the probes are the daemon's; and what the distribution needs (NAME) is there. Exits 1 with
every problem listed.
"""

import sys

import yaml

name, path = sys.argv[1], sys.argv[2]
docs = [d for d in yaml.safe_load_all(open(path)) if d]
problems = []


def one(kind, obj_name):
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == obj_name]
    if len(found) != 1:
        problems.append(f"{kind} {obj_name}: {len(found)} objects")
        return {}
    return found[0]


ns = one("Namespace", "oomwarden")
labels = ns.get("metadata", {}).get("labels", {})
if labels.get("pod-security.kubernetes.io/enforce") != "privileged":
    problems.append(f"the Namespace does not admit a privileged pod: {labels}")

ds = one("DaemonSet", "oomwarden")
pod = ds.get("spec", {}).get("template", {})
spec = pod.get("spec", {})
container = (spec.get("containers") or [{}])[0]
mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
volumes = {v["name"]: v for v in spec.get("volumes", [])}
annotations = pod.get("metadata", {}).get("annotations", {}) or {}
if any(k.startswith("prometheus.io/") for k in annotations):
    problems.append(f"prometheus.io annotations give the wrong job and instance: {annotations}")


def mounted(p):
    """The mount under which `p` is, if any."""
    best = None
    for m in mounts:
        if p == m or p.startswith(m.rstrip("/") + "/"):
            if best is None or len(m) > len(best):
                best = m
    return best


def host_path(mount):
    return volumes.get(mounts[mount], {}).get("hostPath", {}).get("path")


args = dict(a.split("=", 1) for a in container.get("args", []) if a.startswith("--") and "=" in a)
for flag in ["--cgroup-root", "--state-dir", "--config"]:
    if flag not in args:
        problems.append(f"no {flag}")
    elif not mounted(args[flag]):
        problems.append(f"{flag}={args[flag]} is not mounted")
host_root = args.get("--host-root")
if host_root is None:
    problems.append("no --host-root: the doctor at start reads the container's files, not the host's")
elif not any(m.startswith(host_root.rstrip("/") + "/") for m in mounts):
    problems.append(f"--host-root={host_root}: nothing of the host is mounted under it")

for probe, want in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")]:
    got = container.get(probe, {}).get("httpGet", {}).get("path")
    if got != want:
        problems.append(f"{probe} asks {got}, not {want}")
live = container.get("livenessProbe", {})
if live.get("periodSeconds", 10) * live.get("failureThreshold", 3) < 60:
    problems.append(f"the liveness probe restarts within a minute: {live}")

cm = one("ConfigMap", "oomwarden")
config = yaml.safe_load((cm.get("data") or {}).get("oomwarden.yaml", "{}")) or {}
if config.get("dryRun") is not True:
    problems.append("the configuration does not start in a dry run")
runtime = config.get("containerRuntime", {})
endpoint = runtime.get("endpoint", "")
socket = endpoint.removeprefix("unix://")
socket_mount = mounted(socket)
if not socket_mount:
    problems.append(f"the runtime's socket {socket} is not mounted")
logs = runtime.get("podLogs", "")
if not mounted(logs):
    problems.append(f"the pod logs {logs} are not mounted")

expected_runtime = {
    "talos": "/run/containerd",
    "kubeadm": "/run/containerd",
    "k3s": "/run/k3s/containerd",
}[name]
if socket_mount and host_path(socket_mount) != expected_runtime:
    problems.append(f"the runtime socket's directory is {host_path(socket_mount)}, not {expected_runtime}")
needed = {
    "talos": {"/host/system/state": "/system/state", "/host/sys/kernel/mm": "/sys/kernel/mm"},
    "kubeadm": {"/host/etc/systemd": "/etc/systemd", "/host/run/systemd": "/run/systemd",
                "/host/usr/lib/systemd": "/usr/lib/systemd", "/host/sys/kernel/mm": "/sys/kernel/mm"},
    "k3s": {"/host/etc/systemd": "/etc/systemd", "/host/run/systemd": "/run/systemd",
            "/host/sys/kernel/mm": "/sys/kernel/mm"},
}[name]
for mount, source in needed.items():
    if mount not in mounts:
        problems.append(f"{mount} is not mounted")
    elif host_path(mount) != source:
        problems.append(f"{mount} is {host_path(mount)}, not {source}")
    elif not next(m for m in container["volumeMounts"] if m["mountPath"] == mount).get("readOnly"):
        problems.append(f"{mount} is writable")

if problems:
    for p in problems:
        print(f"deploy-check: overlay {name}: {p}", file=sys.stderr)
    sys.exit(1)
print(f"deploy-check: overlay {name}: mounts, Pod Security, dry run, probes and runtime paths as they should be")
