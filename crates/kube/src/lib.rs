//! Kubernetes node semantics, as the kubelet and the container runtimes define them. Pure.
//!
//! - [`decode_cgroup_path`]: the pod UID, QoS class and container ID a cgroup path belongs to, for
//!   both kubelet cgroup drivers (`cgroupfs`: `kubepods/burstable/pod<uid>/<id>`; `systemd`:
//!   `kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/
//!   cri-containerd-<id>.scope`) and the runtimes' container names (containerd, CRI-O,
//!   docker/cri-dockerd).

//! - [`workload`]: what made a pod (Deployment, StatefulSet, DaemonSet, Job, or the pod
//!   itself), from its name and its controller's labels.
//! - [`Quantity`]: resource quantities, parsed exactly (`Value()` semantics).
//! - [`audit::Input`]: workloads and pods that stay OOM-handler candidates, and containers a
//!   default memory limit would block at admission.
//! - [`node`]: the node's memory as the kubelet and node-exporter see it, the eviction
//!   threshold and order.
//! - [`pod::score`]: a pod's QoS class, each container's `oom_score_adj`, the pod cgroup's
//!   `memory.max` and whether oomwarden's default ranking can choose it.

pub mod audit;
mod names;
pub mod node;
mod path;
pub mod pod;
mod quantity;
mod workload;

pub use names::{is_dns_subdomain, is_qualified_name};
pub use path::{CgroupPathInfo, decode_cgroup_path};
pub use quantity::{Quantity, QuantityError, binary_si};
pub use workload::workload;
