//! What made a pod (its workload), and how often each workload was killed lately.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The kind of object that made a pod, as far as the node can tell from the pod's name and
/// the labels its controller put on it (`oomwarden_kube::workload` reads them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum WorkloadKind {
    /// A Deployment's pod (label `pod-template-hash`).
    Deployment,
    /// A StatefulSet's pod (`controller-revision-hash` and
    /// `statefulset.kubernetes.io/pod-name`).
    StatefulSet,
    /// A DaemonSet's pod (`controller-revision-hash` and `pod-template-generation`).
    DaemonSet,
    /// A Job's pod (`batch.kubernetes.io/job-name`, or `job-name` before Kubernetes 1.27).
    Job,
    /// A pod made by nothing the labels tell (a bare or static pod, or labels unknown): the
    /// pod itself.
    Pod,
}

/// A pod's workload: the object that made it, in its namespace. Kills of the pods one
/// workload makes again and again are kills of one workload.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Workload {
    /// The namespace.
    pub namespace: String,
    /// What made the pod.
    pub kind: WorkloadKind,
    /// Its name (the pod's own for [`WorkloadKind::Pod`]).
    pub name: String,
}

impl fmt::Display for Workload {
    /// `namespace/Kind/name`: `shop/Deployment/checkout`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{:?}/{}", self.namespace, self.kind, self.name)
    }
}

/// How far back the ranking's `workload_kills` counts a workload's kills.
pub const WORKLOAD_KILLS_WINDOW: Duration = Duration::from_secs(3600);

/// How many times each workload was killed in the recent window (oomwarden's kills and the
/// kernel's own), as the ranking's `workload_kills` reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkloadKills {
    counts: BTreeMap<Workload, u64>,
}

impl WorkloadKills {
    /// The workload a record is a kill of ([`crate::ActionRecord::is_kill`]), when known.
    pub fn counts(record: &crate::ActionRecord) -> Option<&Workload> {
        record.workload.as_ref().filter(|_| record.is_kill())
    }

    /// Counts one more kill of `workload`.
    pub fn add(&mut self, workload: &Workload) {
        *self.counts.entry(workload.clone()).or_default() += 1;
    }

    /// The kills of `workload` (0 when none).
    pub fn get(&self, workload: &Workload) -> u64 {
        self.counts.get(workload).copied().unwrap_or(0)
    }

    /// Every workload killed, with its count.
    pub fn iter(&self) -> impl Iterator<Item = (&Workload, u64)> {
        self.counts.iter().map(|(w, n)| (w, *n))
    }
}
