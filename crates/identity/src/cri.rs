//! What the container runtime reports, as [`Identities`].

use std::collections::{BTreeMap, HashMap};

use oomwarden_cri::v1;
use oomwarden_model::{ContainerIdentity, Identities, IdentitySource, PodIdentity};

use crate::{MAX_CONTAINERS, MAX_POD_METADATA_BYTES, MAX_PODS};

/// The labels the kubelet adds to every sandbox (they are not the pod's own).
const KUBELET_SANDBOX_LABELS: [&str; 3] = [
    "io.kubernetes.pod.name",
    "io.kubernetes.pod.namespace",
    "io.kubernetes.pod.uid",
];

/// The identities in a runtime's pod sandboxes and containers. A pod with several sandboxes
/// (the old one not yet removed after a restart) is described by its ready one, else its
/// newest. Returns how many pods and containers were left out beyond the bounds. Ready
/// sandboxes are taken first, so that a bound, when reached, leaves out pods whose sandboxes
/// are gone (a node with thousands of exited sandboxes), never a running pod before them.
pub fn from_cri(
    mut sandboxes: Vec<v1::PodSandbox>,
    containers: Vec<v1::Container>,
) -> (Identities, u64) {
    // Stable: the runtime's order within each kind.
    sandboxes.sort_by_key(|s| s.state != v1::PodSandboxState::SandboxReady as i32);
    let mut left_out = 0u64;
    // Sandbox id → pod uid, and the sandbox chosen per uid: (ready, created_at).
    let mut uid_of_sandbox: HashMap<String, String> = HashMap::new();
    let mut chosen: HashMap<String, (bool, i64)> = HashMap::new();
    let mut ids = Identities::default();
    for sandbox in sandboxes {
        let Some(meta) = sandbox.metadata else {
            continue;
        };
        if meta.uid.is_empty() {
            continue;
        }
        uid_of_sandbox.insert(sandbox.id.clone(), meta.uid.clone());
        if ids.sandboxes.len() < MAX_CONTAINERS {
            ids.sandboxes.insert(sandbox.id.clone(), meta.uid.clone());
        }
        let ready = sandbox.state == v1::PodSandboxState::SandboxReady as i32;
        let rank = (ready, sandbox.created_at);
        if chosen.get(&meta.uid).is_some_and(|best| *best >= rank) {
            continue;
        }
        if !ids.pods.contains_key(&meta.uid) && ids.pods.len() >= MAX_PODS {
            left_out += 1;
            continue;
        }
        chosen.insert(meta.uid.clone(), rank);
        let mut labels: BTreeMap<String, String> = sandbox
            .labels
            .into_iter()
            .filter(|(k, _)| !KUBELET_SANDBOX_LABELS.contains(&k.as_str()))
            .collect();
        let mut annotations: BTreeMap<String, String> = sandbox.annotations.into_iter().collect();
        bound_metadata(&mut labels, &mut annotations);
        ids.pods.insert(
            meta.uid.clone(),
            PodIdentity {
                uid: meta.uid,
                namespace: meta.namespace,
                name: meta.name,
                labels,
                annotations,
                containers: Vec::new(),
                source: IdentitySource::Cri,
            },
        );
    }
    for c in containers {
        let Some(pod_uid) = uid_of_sandbox
            .get(&c.pod_sandbox_id)
            .cloned()
            .or_else(|| c.labels.get("io.kubernetes.pod.uid").cloned())
        else {
            continue;
        };
        if ids.containers.len() >= MAX_CONTAINERS {
            left_out += 1;
            continue;
        }
        let name = c.metadata.map(|m| m.name).unwrap_or_default();
        if let Some(pod) = ids.pods.get_mut(&pod_uid)
            && !name.is_empty()
            && !pod.containers.contains(&name)
        {
            pod.containers.push(name.clone());
        }
        ids.containers.insert(
            c.id.clone(),
            ContainerIdentity {
                id: c.id,
                name,
                image: c
                    .image
                    .map(|i| i.image)
                    .filter(|i| !i.is_empty())
                    .unwrap_or(c.image_ref),
                pod_uid,
            },
        );
    }
    for pod in ids.pods.values_mut() {
        pod.containers.sort();
    }
    (ids, left_out)
}

/// Drops annotations, then labels, until a pod's metadata fits [`MAX_POD_METADATA_BYTES`].
fn bound_metadata(
    labels: &mut BTreeMap<String, String>,
    annotations: &mut BTreeMap<String, String>,
) {
    let size =
        |m: &BTreeMap<String, String>| m.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>();
    while size(labels) + size(annotations) > MAX_POD_METADATA_BYTES {
        if annotations.pop_last().is_none() && labels.pop_last().is_none() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox(
        id: &str,
        uid: &str,
        ns: &str,
        name: &str,
        ready: bool,
        created_at: i64,
    ) -> v1::PodSandbox {
        v1::PodSandbox {
            id: id.to_owned(),
            metadata: Some(v1::PodSandboxMetadata {
                name: name.to_owned(),
                uid: uid.to_owned(),
                namespace: ns.to_owned(),
                attempt: 0,
            }),
            state: if ready {
                v1::PodSandboxState::SandboxReady as i32
            } else {
                v1::PodSandboxState::SandboxNotready as i32
            },
            created_at,
            labels: [
                ("app".to_owned(), name.to_owned()),
                ("io.kubernetes.pod.uid".to_owned(), uid.to_owned()),
                ("io.kubernetes.pod.name".to_owned(), name.to_owned()),
                ("io.kubernetes.pod.namespace".to_owned(), ns.to_owned()),
            ]
            .into_iter()
            .collect(),
            annotations: [("kubernetes.io/config.source".to_owned(), "api".to_owned())]
                .into_iter()
                .collect(),
            runtime_handler: String::new(),
        }
    }

    fn container(id: &str, sandbox: &str, name: &str) -> v1::Container {
        v1::Container {
            id: id.to_owned(),
            pod_sandbox_id: sandbox.to_owned(),
            metadata: Some(v1::ContainerMetadata {
                name: name.to_owned(),
                attempt: 0,
            }),
            image: Some(v1::ImageSpec {
                image: format!("registry.example/{name}:1"),
                ..v1::ImageSpec::default()
            }),
            ..v1::Container::default()
        }
    }

    /// Issue 36: past the pod bound, the pods left out are those whose sandboxes are gone,
    /// whatever the runtime's order: every running pod keeps its identity (a namespace
    /// exemption must not lapse on a node of thousands of exited sandboxes).
    #[test]
    fn past_the_pod_bound_running_pods_are_kept_first() {
        let dead = (0..MAX_PODS).map(|i| {
            sandbox(
                &format!("d{i}"),
                &format!("dead-{i}"),
                "batch",
                "job",
                false,
                1,
            )
        });
        let running = (0..100).map(|i| {
            sandbox(
                &format!("r{i}"),
                &format!("run-{i}"),
                "kube-system",
                "dns",
                true,
                2,
            )
        });
        let (ids, left_out) = from_cri(dead.chain(running).collect(), Vec::new());
        assert_eq!(ids.pods.len(), MAX_PODS);
        assert_eq!(left_out, 100);
        assert!((0..100).all(|i| ids.pod(&format!("run-{i}")).is_some()));
    }

    #[test]
    fn pods_and_containers_by_uid_and_id() {
        let (ids, left_out) = from_cri(
            vec![
                sandbox("s-old", "u1", "shop", "web", false, 1),
                sandbox("s-new", "u1", "shop", "web", true, 2),
                sandbox("s2", "u2", "kube-system", "dns", true, 3),
            ],
            vec![
                container("c1", "s-new", "nginx"),
                container("c0", "s-old", "nginx"),
                container("c2", "s-new", "sidecar"),
                container("c3", "s2", "coredns"),
            ],
        );
        assert_eq!(left_out, 0);
        let web = ids
            .pod("u1")
            .map(|p| (p.qualified_name(), p.containers.clone()));
        assert_eq!(
            web,
            Some((
                "shop/web".to_owned(),
                vec!["nginx".to_owned(), "sidecar".to_owned()]
            ))
        );
        let labels = ids.pod("u1").map(|p| p.labels.clone()).unwrap_or_default();
        assert_eq!(
            labels.into_iter().collect::<Vec<_>>(),
            [("app".to_owned(), "web".to_owned())],
            "the kubelet's own sandbox labels are not the pod's"
        );
        assert_eq!(
            ids.container("c0")
                .map(|c| (c.name.as_str(), c.pod_uid.as_str())),
            Some(("nginx", "u1")),
            "a container of the old sandbox still names its pod"
        );
        assert_eq!(
            ids.container("c3").map(|c| c.image.as_str()),
            Some("registry.example/coredns:1")
        );
        assert_eq!(ids.pod("u2").map(|p| p.source), Some(IdentitySource::Cri));
        assert!(ids.is_sandbox("s-old") && ids.is_sandbox("s-new") && !ids.is_sandbox("c1"));
        assert_eq!(ids.sandboxes.get("s2").map(String::as_str), Some("u2"));
    }

    #[test]
    fn metadata_is_bounded() {
        let mut labels: BTreeMap<String, String> =
            [("a".to_owned(), "x".repeat(100))].into_iter().collect();
        let mut annotations: BTreeMap<String, String> = (0..100)
            .map(|i| (format!("k{i:03}"), "y".repeat(10_000)))
            .collect();
        bound_metadata(&mut labels, &mut annotations);
        let total: usize = labels
            .iter()
            .chain(annotations.iter())
            .map(|(k, v)| k.len() + v.len())
            .sum();
        assert!(total <= MAX_POD_METADATA_BYTES, "{total}");
        assert_eq!(labels.len(), 1, "labels are kept before annotations");
    }
}
