//! Cluster objects (`kubectl get … -o json`) audited for memory limits: which pods and workload
//! templates stay candidates of an OOM handler whose ranking skips cgroups with `memory.max`
//! (some container, init containers included, has no memory limit), and which containers a
//! namespace default limit (a LimitRange `default.memory`) would get rejected at admission (a
//! request above that default and no limit of their own), as seed 003 describes.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::pod::{Container, ManifestError, PodSpec};
use crate::quantity::Quantity;

/// One pod or workload template found in the input.
#[derive(Debug, Clone)]
struct Object {
    namespace: String,
    kind: String,
    name: String,
    spec: PodSpec,
}

/// An object whose pods stay OOM-handler candidates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    /// Namespace.
    pub namespace: String,
    /// `Kind/name`.
    pub object: String,
    /// Containers (init ones included) that declare no memory limit.
    pub containers_without_limit: Vec<String>,
}

/// A container a default limit would get rejected at admission.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Blocker {
    /// Namespace.
    pub namespace: String,
    /// `Kind/name` of the pod or workload.
    pub object: String,
    /// Container name.
    pub container: String,
    /// The request as written.
    pub request: String,
    /// The request in bytes.
    pub request_bytes: i64,
}

/// What the audit found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Audit {
    /// Objects read (pods and workload templates), after namespace selection.
    pub objects: usize,
    /// Objects skipped as finished (Succeeded/Failed pods, completed or failed Jobs).
    pub finished_skipped: usize,
    /// Pods and templates that stay candidates.
    pub candidates: Vec<Candidate>,
    /// With a default limit: the containers it would get rejected, largest request first.
    pub blockers: Vec<Blocker>,
}

/// Why the audit cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuditError {
    /// A file could not be read as manifests.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// A quantity in an object is invalid.
    #[error("{object}: {path}: {message}")]
    Quantity {
        /// `namespace/Kind/name`.
        object: String,
        /// Field path.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A namespace selector was given but no Namespace matches: an empty result would read as
    /// a clean bill of health.
    #[error(
        "no Namespace in the input carries the label {0}; include `kubectl get namespaces -o json` in the input, or drop --namespace-selector"
    )]
    NoNamespace(String),
}

const WORKLOADS: [&str; 5] = ["Deployment", "DaemonSet", "StatefulSet", "Job", "CronJob"];

/// Collects pods and workload templates (and Namespace labels) from parsed documents.
#[derive(Debug, Default)]
pub struct Input {
    objects: Vec<Object>,
    finished: usize,
    namespaces: BTreeMap<String, BTreeMap<String, String>>,
}

impl Input {
    /// An empty input.
    pub fn new() -> Input {
        Input::default()
    }

    /// Adds a file's text: YAML or JSON, documents or `List`s of Pods, Deployments,
    /// DaemonSets, StatefulSets, Jobs, CronJobs and Namespaces. Other kinds are ignored.
    pub fn add(&mut self, text: &str) -> Result<(), ManifestError> {
        let documents = crate::pod::documents(text)?;
        for (i, doc) in documents.into_iter().enumerate() {
            let bad = |message: String| ManifestError::Document {
                document: i + 1,
                message,
            };
            let items = match doc.get("kind").and_then(Value::as_str) {
                _ if doc.is_null() => continue,
                Some(k) if k.ends_with("List") => match doc {
                    Value::Object(mut map) => match map.remove("items") {
                        Some(Value::Array(items)) => items,
                        _ => Vec::new(),
                    },
                    _ => Vec::new(),
                },
                Some(_) => vec![doc],
                None => return Err(bad("no kind".to_owned())),
            };
            for (j, item) in items.iter().enumerate() {
                self.add_value(item)
                    .map_err(|m| bad(format!("items[{j}]: {m}")))?;
            }
        }
        Ok(())
    }

    /// Adds one object (a Pod, a workload or a Namespace; other kinds are ignored), as the API
    /// server or a `List`'s `items` give it.
    pub fn add_value(&mut self, item: &Value) -> Result<(), String> {
        let s = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_owned();
        let kind = s(item.get("kind"));
        let meta = item.get("metadata");
        let name = s(meta.and_then(|m| m.get("name")));
        let namespace = s(meta.and_then(|m| m.get("namespace")));
        if kind == "Namespace" {
            let labels = meta
                .and_then(|m| m.get("labels"))
                .and_then(Value::as_object)
                .map(|l| {
                    l.iter()
                        .map(|(k, v)| (k.clone(), s(Some(v))))
                        .collect::<BTreeMap<_, _>>()
                })
                .unwrap_or_default();
            self.namespaces.insert(name, labels);
            return Ok(());
        }
        let spec = match kind.as_str() {
            "Pod" => {
                let phase = s(item.get("status").and_then(|st| st.get("phase")));
                if phase == "Succeeded" || phase == "Failed" {
                    self.finished += 1;
                    return Ok(());
                }
                item.get("spec")
            }
            "CronJob" => item.pointer("/spec/jobTemplate/spec/template/spec"),
            "Job" if job_finished(item) => {
                self.finished += 1;
                return Ok(());
            }
            k if WORKLOADS.contains(&k) => item.pointer("/spec/template/spec"),
            _ => return Ok(()),
        };
        let spec: PodSpec = match spec {
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|e| format!("{kind}/{name}: not a valid pod spec: {e}"))?,
            None => PodSpec::default(),
        };
        self.objects.push(Object {
            namespace,
            kind,
            name,
            spec,
        });
        Ok(())
    }

    /// Runs the audit. `selector` (`key=value`) keeps objects in namespaces whose Namespace
    /// object carries that label; `default_limit` (bytes) lists the containers it would block.
    pub fn audit(
        &self,
        selector: Option<&str>,
        default_limit: Option<i64>,
    ) -> Result<Audit, AuditError> {
        let allowed: Option<Vec<&String>> = match selector {
            None => None,
            Some(sel) => {
                let (k, v) = sel.split_once('=').unwrap_or((sel, ""));
                let names: Vec<&String> = self
                    .namespaces
                    .iter()
                    .filter(|(_, labels)| labels.get(k).is_some_and(|x| x == v))
                    .map(|(n, _)| n)
                    .collect();
                if names.is_empty() {
                    return Err(AuditError::NoNamespace(sel.to_owned()));
                }
                Some(names)
            }
        };
        let objects: Vec<&Object> = self
            .objects
            .iter()
            .filter(|o| allowed.as_ref().is_none_or(|a| a.contains(&&o.namespace)))
            .collect();
        let mut candidates = Vec::new();
        let mut blockers = Vec::new();
        for o in &objects {
            let object = format!("{}/{}", o.kind, o.name);
            let err = |path: String, message: String| AuditError::Quantity {
                object: format!("{}/{object}", o.namespace),
                path,
                message,
            };
            let pod_level_limit = o
                .spec
                .resources
                .as_ref()
                .is_some_and(|r| r.limits.contains_key("memory"));
            let all: Vec<(&Container, String)> = o
                .spec
                .init_containers
                .iter()
                .enumerate()
                .map(|(i, c)| (c, format!("initContainers[{i}]")))
                .chain(
                    o.spec
                        .containers
                        .iter()
                        .enumerate()
                        .map(|(i, c)| (c, format!("containers[{i}]"))),
                )
                .collect();
            let unlimited: Vec<&(&Container, String)> = all
                .iter()
                .filter(|(c, _)| !c.resources.limits.contains_key("memory"))
                .collect();
            if !unlimited.is_empty() && !pod_level_limit {
                candidates.push(Candidate {
                    namespace: o.namespace.clone(),
                    object: object.clone(),
                    containers_without_limit: unlimited
                        .iter()
                        .map(|(c, _)| c.name.clone())
                        .collect(),
                });
            }
            let Some(limit) = default_limit else { continue };
            for (c, at) in unlimited {
                let Some(v) = c.resources.requests.get("memory") else {
                    continue;
                };
                let text = crate::pod::quantity_text(v);
                let path = format!("spec.{at}.resources.requests.memory");
                let q = Quantity::parse(&text).map_err(|e| err(path.clone(), e.to_string()))?;
                let bytes = q
                    .value()
                    .ok_or_else(|| err(path.clone(), "out of range".to_owned()))?;
                // A request equal to the defaulted limit is admissible.
                if bytes > limit {
                    blockers.push(Blocker {
                        namespace: o.namespace.clone(),
                        object: object.clone(),
                        container: c.name.clone(),
                        request: text,
                        request_bytes: bytes,
                    });
                }
            }
        }
        blockers.sort_by(|a, b| {
            b.request_bytes.cmp(&a.request_bytes).then_with(|| {
                (&a.namespace, &a.object, &a.container).cmp(&(
                    &b.namespace,
                    &b.object,
                    &b.container,
                ))
            })
        });
        Ok(Audit {
            objects: objects.len(),
            finished_skipped: self.finished,
            candidates,
            blockers,
        })
    }
}

/// A Job whose `Complete` or `Failed` condition is `True` runs no more pods.
fn job_finished(job: &Value) -> bool {
    job.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                matches!(
                    c.get("type").and_then(Value::as_str),
                    Some("Complete" | "Failed")
                ) && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OBJECTS: &str = r#"{"kind": "List", "items": [
      {"kind": "Namespace", "metadata": {"name": "cozy-system", "labels": {"cozystack.io/system": "true"}}},
      {"kind": "Namespace", "metadata": {"name": "tenant-a"}},
      {"kind": "Deployment", "metadata": {"name": "api", "namespace": "cozy-system"}, "spec": {"replicas": 0, "template": {"spec": {
        "initContainers": [{"name": "wait", "resources": {"requests": {"memory": "48Gi"}}}],
        "containers": [{"name": "api", "resources": {"requests": {"memory": "1Gi"}, "limits": {"memory": "2Gi"}}}]}}}},
      {"kind": "StatefulSet", "metadata": {"name": "vmselect", "namespace": "cozy-system"}, "spec": {"template": {"spec": {
        "containers": [{"name": "vmselect", "resources": {"requests": {"memory": "32Gi"}}}]}}}},
      {"kind": "CronJob", "metadata": {"name": "backup", "namespace": "cozy-system"}, "spec": {"suspend": true, "jobTemplate": {"spec": {"template": {"spec": {
        "containers": [{"name": "backup", "resources": {"requests": {"memory": "40000Mi"}}}]}}}}}},
      {"kind": "Job", "metadata": {"name": "done", "namespace": "cozy-system"}, "spec": {"template": {"spec": {
        "containers": [{"name": "x", "resources": {"requests": {"memory": "64Gi"}}}]}}},
        "status": {"conditions": [{"type": "Complete", "status": "True"}]}},
      {"kind": "Pod", "metadata": {"name": "vmselect-0", "namespace": "cozy-system"}, "spec": {
        "containers": [{"name": "vmselect", "resources": {"requests": {"memory": "36Gi"}}}]}, "status": {"phase": "Running"}},
      {"kind": "Pod", "metadata": {"name": "old", "namespace": "cozy-system"}, "spec": {
        "containers": [{"name": "x", "resources": {"requests": {"memory": "99Gi"}}}]}, "status": {"phase": "Succeeded"}},
      {"kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "tenant-a"}, "spec": {"template": {"spec": {
        "resources": {"limits": {"memory": "1Gi"}},
        "containers": [{"name": "agent", "resources": {"requests": {"memory": "64Gi"}}}]}}}}
    ]}"#;

    fn input() -> Input {
        let mut i = Input::new();
        i.add(OBJECTS).unwrap();
        i
    }

    #[test]
    fn candidates_and_blockers() {
        let a = input().audit(None, Some(32 << 30)).unwrap();
        assert_eq!((a.objects, a.finished_skipped), (5, 2));
        let c: Vec<(&str, Vec<&str>)> = a
            .candidates
            .iter()
            .map(|c| {
                (
                    c.object.as_str(),
                    c.containers_without_limit
                        .iter()
                        .map(String::as_str)
                        .collect(),
                )
            })
            .collect();
        // The DaemonSet has a pod-level limit: its pods get memory.max.
        assert_eq!(
            c,
            [
                ("Deployment/api", vec!["wait"]),
                ("StatefulSet/vmselect", vec!["vmselect"]),
                ("CronJob/backup", vec!["backup"]),
                ("Pod/vmselect-0", vec!["vmselect"]),
            ]
        );
        // 32Gi equals the limit: admissible. Largest request first, compared as numbers
        // (40000Mi is 39.06Gi). The DaemonSet's pod-level limit keeps its pods out
        // of the handler's reach, but a Container-scope default still reaches its container.
        let b: Vec<(&str, &str, i64)> = a
            .blockers
            .iter()
            .map(|b| (b.object.as_str(), b.container.as_str(), b.request_bytes))
            .collect();
        assert_eq!(
            b,
            [
                ("DaemonSet/agent", "agent", 64 << 30),
                ("Deployment/api", "wait", 48 << 30),
                ("CronJob/backup", "backup", 40000 << 20),
                ("Pod/vmselect-0", "vmselect", 36 << 30),
            ]
        );
    }

    #[test]
    fn namespace_selection_refuses_an_empty_match() {
        let a = input()
            .audit(Some("cozystack.io/system=true"), None)
            .unwrap();
        assert_eq!(a.objects, 4);
        assert!(a.blockers.is_empty());
        assert!(matches!(
            input().audit(Some("cozystack.io/system=false"), None),
            Err(AuditError::NoNamespace(_))
        ));
    }

    #[test]
    fn bad_quantities_name_the_object() {
        let mut i = Input::new();
        i.add("kind: Pod\nmetadata: {name: p, namespace: ns1}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {memory: 1GB}}\n").unwrap();
        let e = i.audit(None, Some(1 << 30)).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "ns1/Pod/p: spec.containers[0].resources.requests.memory: invalid quantity"
            ),
            "{e}"
        );
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_read_or_refused(text in "\\PC{0,200}") {
            let mut i = Input::new();
            if i.add(&text).is_ok() {
                let _ = i.audit(None, Some(1));
            }
        }
    }
}
