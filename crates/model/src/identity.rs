//! Who a pod is, as Kubernetes users know it: its namespace, name, labels and annotations,
//! and its containers' names, keyed by what a cgroup path tells (the pod UID, a container
//! ID).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Where a pod's namespace and name came from.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum IdentitySource {
    /// The container runtime (CRI `ListPodSandbox`, `ListContainers`): namespace, name,
    /// labels, annotations, container names.
    Cri,
    /// The kubelet's `/var/log/pods/<namespace>_<name>_<uid>/<container>/` directories:
    /// namespace, name and container names, no labels.
    PodLogs,
    /// Only the cgroup path: the pod UID.
    #[default]
    Path,
}

impl IdentitySource {
    /// All three.
    pub const ALL: [IdentitySource; 3] = [
        IdentitySource::Cri,
        IdentitySource::PodLogs,
        IdentitySource::Path,
    ];

    /// `cri`, `pod-logs` or `path`, as records and metrics say: its serde name.
    pub fn name(self) -> &'static str {
        crate::serde_name(&self)
    }
}

/// What a kill of a pod ends.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum KillScope {
    /// The whole pod cgroup, the sandbox (pause) included, as Talos does: the kubelet makes
    /// a new sandbox.
    #[default]
    Pod,
    /// Each container cgroup of the pod, the sandbox spared: the kubelet restarts the
    /// containers in the same sandbox, without new network setup.
    Containers,
}

impl KillScope {
    /// Both.
    pub const ALL: [KillScope; 2] = [KillScope::Pod, KillScope::Containers];

    /// `pod` or `containers`, as the configuration and records say: its serde name.
    pub fn name(self) -> &'static str {
        crate::serde_name(&self)
    }

    /// The scope a name says.
    pub fn from_name(name: &str) -> Option<Self> {
        KillScope::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// How a victim is killed.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum KillMethod {
    /// `cgroup.kill` (SIGKILL to the whole subtree at once) and `process_mrelease`, as Talos
    /// does. The runtime reports the containers `Error`, exit code 137.
    #[default]
    Cgroup,
    /// The kernel's own memcg OOM killer, in each container cgroup of the victim (or the
    /// victim's cgroup when it is no pod): `memory.swap.max` and `memory.max` set to 0, so the
    /// kernel reclaims what it can and then OOM-kills (the whole container with
    /// `memory.oom.group`, as the kubelet sets it). The runtime reports each container
    /// `OOMKilled`. A cgroup not empty within `killTimeout` is finished with `cgroup.kill`.
    KernelOom,
}

impl KillMethod {
    /// Both.
    pub const ALL: [KillMethod; 2] = [KillMethod::Cgroup, KillMethod::KernelOom];

    /// `cgroup` or `kernel-oom`, as the configuration and records say: its serde name.
    pub fn name(self) -> &'static str {
        crate::serde_name(&self)
    }

    /// The method a name says.
    pub fn from_name(name: &str) -> Option<Self> {
        KillMethod::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// A pod.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PodIdentity {
    /// Its UID (with dashes, as the API server has it).
    pub uid: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its labels (empty from the pod-log directories).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Its annotations (empty from the pod-log directories).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Its containers' names (sorted; the sandbox is none of them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<String>,
    /// Where this came from.
    pub source: IdentitySource,
}

impl PodIdentity {
    /// `namespace/name`, as log lines name a pod.
    pub fn qualified_name(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// A container.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ContainerIdentity {
    /// Its ID (64 hex digits, as its cgroup is named).
    pub id: String,
    /// Its name in the pod spec.
    pub name: String,
    /// Its image, as the runtime reports it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub image: String,
    /// The UID of its pod.
    pub pod_uid: String,
}

/// What is known about the node's pods: by pod UID and by container ID (ordered, so that a
/// recording of it reads the same every time).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Identities {
    /// Pods by UID.
    #[serde(default)]
    pub pods: BTreeMap<String, PodIdentity>,
    /// Containers by ID.
    #[serde(default)]
    pub containers: BTreeMap<String, ContainerIdentity>,
    /// Pod sandboxes (the pause container the runtime makes for each pod) by ID: the UID of
    /// their pod. A sandbox's cgroup sits beside the containers' and is named by this ID.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sandboxes: BTreeMap<String, String>,
}

impl Identities {
    /// The pod with this UID (a static pod's is its 32-digit config hash, as its cgroup and
    /// its sandbox's `io.kubernetes.pod.uid` label both say).
    pub fn pod(&self, uid: &str) -> Option<&PodIdentity> {
        self.pods.get(uid)
    }

    /// The container with this ID.
    pub fn container(&self, id: &str) -> Option<&ContainerIdentity> {
        self.containers.get(id)
    }

    /// Whether `id` is a pod sandbox's.
    pub fn is_sandbox(&self, id: &str) -> bool {
        self.sandboxes.contains_key(id)
    }

    /// Whether nothing is known.
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty() && self.containers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_static_pod_is_found_by_its_hash() {
        let mut ids = Identities::default();
        ids.pods.insert(
            "0123456789abcdef0123456789abcdef".to_owned(),
            PodIdentity {
                uid: "0123456789abcdef0123456789abcdef".to_owned(),
                namespace: "kube-system".to_owned(),
                name: "etcd-node".to_owned(),
                ..PodIdentity::default()
            },
        );
        assert_eq!(
            ids.pod("0123456789abcdef0123456789abcdef")
                .map(PodIdentity::qualified_name),
            Some("kube-system/etcd-node".to_owned())
        );
        assert!(ids.pod("6b86b273-ff34-4fce-96e3-6b3e0e2d5a2f").is_none());
    }

    #[test]
    fn sources_are_named_as_records_say() {
        for (source, name) in [
            (IdentitySource::Cri, "\"cri\""),
            (IdentitySource::PodLogs, "\"pod-logs\""),
            (IdentitySource::Path, "\"path\""),
        ] {
            assert_eq!(serde_json::to_string(&source).ok().as_deref(), Some(name));
            assert_eq!(format!("\"{}\"", source.name()), name);
        }
    }
}
