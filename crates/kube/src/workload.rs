//! A pod's workload from what the node knows of it: its namespace, its name and the labels
//! its controller put on it (the container runtime reports them; no API server is asked).

use std::collections::BTreeMap;

use oomwarden_model::{Workload, WorkloadKind};

/// The label the Deployment controller puts on its ReplicaSets' pods
/// (`pkg/controller/deployment/util`): the pod is named `<deployment>-<hash>-<suffix>`.
const POD_TEMPLATE_HASH: &str = "pod-template-hash";
/// The label of a StatefulSet's and a DaemonSet's pods (`controller-revision-hash`).
const CONTROLLER_REVISION_HASH: &str = "controller-revision-hash";
/// A StatefulSet's pod's own name (`<statefulset>-<ordinal>`).
const STATEFULSET_POD_NAME: &str = "statefulset.kubernetes.io/pod-name";
/// A DaemonSet's pods carry their template's generation.
const POD_TEMPLATE_GENERATION: &str = "pod-template-generation";
/// A Job's pods (Kubernetes 1.27 on); `job-name` before, and still set beside it.
const JOB_NAME: &str = "batch.kubernetes.io/job-name";
/// The older form of [`JOB_NAME`].
const LEGACY_JOB_NAME: &str = "job-name";

/// The workload of pod `namespace/name` with `labels`: a Job's (its name from the label), a
/// Deployment's (the pod's name less `-<pod-template-hash>-<suffix>`), a StatefulSet's (less
/// `-<ordinal>`), a DaemonSet's (less `-<suffix>`); else the pod itself, also when the name
/// does not have the form its labels say (no guess is better than a wrong one).
pub fn workload(namespace: &str, name: &str, labels: &BTreeMap<String, String>) -> Workload {
    let of = |kind, owner: &str| Workload {
        namespace: namespace.to_owned(),
        kind,
        name: owner.to_owned(),
    };
    let label = |key: &str| {
        labels
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    };
    if let Some(job) = label(JOB_NAME).or_else(|| label(LEGACY_JOB_NAME)) {
        return of(WorkloadKind::Job, job);
    }
    if let Some(hash) = label(POD_TEMPLATE_HASH)
        && let Some((head, _suffix)) = name.rsplit_once('-')
        && let Some(deployment) = head.strip_suffix(hash).and_then(|d| d.strip_suffix('-'))
        && !deployment.is_empty()
    {
        return of(WorkloadKind::Deployment, deployment);
    }
    if label(CONTROLLER_REVISION_HASH).is_some() {
        if label(STATEFULSET_POD_NAME) == Some(name)
            && let Some((set, ordinal)) = name.rsplit_once('-')
            && !set.is_empty()
            && !ordinal.is_empty()
            && ordinal.bytes().all(|b| b.is_ascii_digit())
        {
            return of(WorkloadKind::StatefulSet, set);
        }
        if label(POD_TEMPLATE_GENERATION).is_some()
            && let Some((set, suffix)) = name.rsplit_once('-')
            && !set.is_empty()
            && !suffix.is_empty()
        {
            return of(WorkloadKind::DaemonSet, set);
        }
    }
    of(WorkloadKind::Pod, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn shown(name: &str, pairs: &[(&str, &str)]) -> String {
        workload("shop", name, &labels(pairs)).to_string()
    }

    #[test]
    fn each_controller_is_read_from_its_labels() {
        for (name, pairs, want) in [
            (
                "checkout-7f9c6d5b8-hq2lm",
                &[("pod-template-hash", "7f9c6d5b8"), ("app", "checkout")][..],
                "shop/Deployment/checkout",
            ),
            (
                "redis-ha-server-2",
                &[
                    ("controller-revision-hash", "redis-ha-server-6d4f"),
                    ("statefulset.kubernetes.io/pod-name", "redis-ha-server-2"),
                ][..],
                "shop/StatefulSet/redis-ha-server",
            ),
            (
                "fluent-bit-x8k2p",
                &[
                    ("controller-revision-hash", "5d9b8c7f6"),
                    ("pod-template-generation", "3"),
                ][..],
                "shop/DaemonSet/fluent-bit",
            ),
            (
                "nightly-report-29312640-7xk2q",
                &[
                    ("batch.kubernetes.io/job-name", "nightly-report-29312640"),
                    ("job-name", "nightly-report-29312640"),
                    ("controller-uid", "a"),
                ][..],
                "shop/Job/nightly-report-29312640",
            ),
            (
                "migrate-abcde",
                &[("job-name", "migrate")][..],
                "shop/Job/migrate",
            ),
            ("debug", &[][..], "shop/Pod/debug"),
            (
                "kube-apiserver-node-1",
                &[("component", "kube-apiserver")][..],
                "shop/Pod/kube-apiserver-node-1",
            ),
        ] {
            assert_eq!(shown(name, pairs), want, "{name}");
        }
    }

    /// Labels that do not fit the name make no guess: the pod itself.
    #[test]
    fn a_name_that_does_not_fit_its_labels_is_the_pod_itself() {
        for (name, pairs) in [
            ("checkout", &[("pod-template-hash", "7f9c6d5b8")][..]),
            (
                "checkout-abc-hq2lm",
                &[("pod-template-hash", "7f9c6d5b8")][..],
            ),
            (
                "-7f9c6d5b8-hq2lm",
                &[("pod-template-hash", "7f9c6d5b8")][..],
            ),
            (
                "web-x",
                &[
                    ("controller-revision-hash", "1"),
                    ("statefulset.kubernetes.io/pod-name", "web-x"),
                ][..],
            ),
            ("web", &[("controller-revision-hash", "1")][..]),
            ("", &[("job-name", "")][..]),
        ] {
            assert_eq!(
                workload("shop", name, &labels(pairs)).kind,
                WorkloadKind::Pod,
                "{name} {pairs:?}"
            );
        }
    }

    proptest::proptest! {
        /// Any name and labels: no panic, and the owner's name is a part of what was given.
        #[test]
        fn any_pod_has_a_workload(name in ".{0,40}", hash in ".{0,12}", job in proptest::option::of(".{0,12}")) {
            let mut l = labels(&[("pod-template-hash", &hash), ("controller-revision-hash", &hash)]);
            if let Some(j) = &job {
                l.insert("job-name".to_owned(), j.clone());
            }
            let w = workload("ns", &name, &l);
            proptest::prop_assert!(name.contains(&w.name) || job.as_deref() == Some(w.name.as_str()));
        }
    }
}
