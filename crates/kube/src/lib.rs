//! Kubernetes node semantics, as the kubelet and the container runtimes define them. Pure.
//!
//! - [`cgroup_identity`]: the pod UID, QoS class and container ID a cgroup path belongs to, for
//!   both kubelet cgroup drivers (`cgroupfs`: `kubepods/burstable/pod<uid>/<id>`; `systemd`:
//!   `kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/
//!   cri-containerd-<id>.scope`) and the runtimes' container names (containerd, CRI-O,
//!   docker/cri-dockerd).

mod path;

pub use path::{CgroupIdentity, cgroup_identity};
