//! Who a pod is, as Kubernetes users know it, kept in a cache that a cycle reads without
//! waiting.
//!
//! ```text
//!   refresher thread (every refreshEvery, or soon after an unknown pod UID is seen
//!                     or a pod or container cgroup is made: the watch thread, inotify)
//!     CRI ListPodSandbox + ListContainers ──ok──▶ identities (source cri)
//!        │ unreachable, slow, failing (said once, counted)
//!        ▼
//!     the last answer kept (its age in status, metrics, records) + for pods it did not
//!     know: /var/log/pods/<namespace>_<name>_<uid>/<container>/ (source pod-logs)
//!                                    │
//!                       Arc<Identities> swapped in ──▶ Engine::cycle takes a snapshot
//! ```
//!
//! [`from_cri`] and [`pod_logs`] turn what they read into
//! [`Identities`](oomwarden_model::Identities); [`Cache`] runs the
//! refresher. A kill never waits on the runtime: a cycle takes the last snapshot; only the
//! first ranking after a start waits for the first answer, at most [`first_answer_wait`].

mod cache;
mod cri;
mod pod_logs;
mod watch;

pub use cache::{Cache, CacheStatus, Config, Endpoint, Health, first_answer_wait, read_once};
pub use cri::from_cri;
pub use pod_logs::{PodLogsError, pod_logs};
pub use watch::{IsPod, MAX_WATCHED_PODS};

/// The kubelet's pod-log directory.
pub const POD_LOGS_DIR: &str = "/var/log/pods";

/// At most this many pods are kept (the kubelet's default is 110 per node; KEP-5825 measured
/// nodes past 14,000 pods, exited sandboxes included), ready ones first: the rest are left
/// out, counted.
pub const MAX_PODS: usize = 20_000;
/// At most this many containers are kept.
pub const MAX_CONTAINERS: usize = 50_000;
/// At most this many bytes of labels and annotations are kept per pod (the API server
/// allows 256 KiB of annotations per object); beyond, annotations are dropped, then labels.
pub const MAX_POD_METADATA_BYTES: usize = 256 << 10;
