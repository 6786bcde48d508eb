//! What the decisions look at, per namespace: the Namespace's labels and annotations, its
//! LimitRanges, and the pods and workload templates the blocker scan reads (through
//! `oomwarden-kube`'s audit, the same code as `oomwarden audit`).

use std::collections::{BTreeMap, BTreeSet};

use oomwarden_kube::audit::Input;
use oomwarden_kube::pod::{ManifestError, documents};
use serde_json::Value;

/// A LimitRange as observed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LimitRangeView {
    /// Its name.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// `spec.limits`.
    pub limits: Vec<Value>,
}

impl LimitRangeView {
    /// Reads a LimitRange object.
    pub fn from_value(v: &Value) -> LimitRangeView {
        LimitRangeView {
            name: text(v.pointer("/metadata/name")),
            labels: strings(v.pointer("/metadata/labels")),
            limits: v
                .pointer("/spec/limits")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        }
    }

    /// The memory-bearing fields of its Container- and Pod-scope items (`Container.max`, …):
    /// empty when it bounds only cpu or storage.
    pub fn memory_fields(&self) -> Vec<String> {
        let mut out = Vec::new();
        for item in &self.limits {
            let scope = item.get("type").and_then(Value::as_str).unwrap_or("");
            if scope != "Container" && scope != "Pod" {
                continue;
            }
            for field in [
                "default",
                "defaultRequest",
                "max",
                "min",
                "maxLimitRequestRatio",
            ] {
                if item.get(field).and_then(|f| f.get("memory")).is_some() {
                    out.push(format!("{scope}.{field}"));
                }
            }
        }
        out
    }

    /// The `Container` item's `default.memory` and `defaultRequest.memory`, as written.
    pub fn container_defaults(&self) -> (Option<String>, Option<String>) {
        let item = self
            .limits
            .iter()
            .find(|i| i.get("type").and_then(Value::as_str) == Some("Container"));
        let get = |field: &str| {
            item.and_then(|i| i.get(field))
                .and_then(|f| f.get("memory"))
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
        };
        (get("default"), get("defaultRequest"))
    }
}

/// One Namespace and what is in it.
#[derive(Debug, Default)]
pub struct NamespaceView {
    /// Its name.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its annotations.
    pub annotations: BTreeMap<String, String>,
    /// Its LimitRanges.
    pub limit_ranges: Vec<LimitRangeView>,
    /// Its pods and workloads, for the blocker scan.
    pub objects: Input,
}

impl NamespaceView {
    /// A view of a Namespace object, with nothing in it yet.
    pub fn from_namespace(v: &Value) -> NamespaceView {
        NamespaceView {
            name: text(v.pointer("/metadata/name")),
            labels: strings(v.pointer("/metadata/labels")),
            annotations: strings(v.pointer("/metadata/annotations")),
            ..NamespaceView::default()
        }
    }
}

/// Everything observed, by namespace (a dump, or the controller's caches).
#[derive(Debug, Default)]
pub struct Cluster {
    /// Namespaces by name.
    pub namespaces: BTreeMap<String, NamespaceView>,
    /// Namespaces that objects name but that were not in the input.
    pub unseen: BTreeSet<String>,
    objects: Vec<Value>,
}

impl Cluster {
    /// An empty cluster.
    pub fn new() -> Cluster {
        Cluster::default()
    }

    /// Reads `kubectl get namespaces,limitranges,deployments,statefulsets,daemonsets,cronjobs,jobs,pods -A -o json`
    /// (or any YAML or JSON documents and `List`s of those kinds; others are ignored).
    pub fn add_text(&mut self, text: &str) -> Result<(), ManifestError> {
        for (i, doc) in documents(text)?.into_iter().enumerate() {
            let bad = |message: String| ManifestError::Document {
                document: i + 1,
                message,
            };
            if doc.is_null() {
                continue;
            }
            let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
            if kind.is_empty() {
                return Err(bad("no kind".to_owned()));
            }
            if kind.ends_with("List") {
                let items = doc
                    .get("items")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                for (j, item) in items.iter().enumerate() {
                    self.add_value(item)
                        .map_err(|m| bad(format!("items[{j}]: {m}")))?;
                }
            } else {
                self.add_value(&doc).map_err(bad)?;
            }
        }
        Ok(())
    }

    /// Adds one object.
    pub fn add_value(&mut self, v: &Value) -> Result<(), String> {
        match v.get("kind").and_then(Value::as_str).unwrap_or("") {
            "Namespace" => {
                let view = NamespaceView::from_namespace(v);
                if view.name.is_empty() {
                    return Err("a Namespace without a name".to_owned());
                }
                self.namespaces.insert(view.name.clone(), view);
            }
            "LimitRange" | "Pod" | "Deployment" | "StatefulSet" | "DaemonSet" | "CronJob"
            | "Job" => self.objects.push(v.clone()),
            _ => {}
        }
        Ok(())
    }

    /// Sorts the objects into their namespaces (call once, after every `add`).
    pub fn finish(mut self) -> Result<Cluster, String> {
        for v in std::mem::take(&mut self.objects) {
            let ns = text(v.pointer("/metadata/namespace"));
            let Some(view) = self.namespaces.get_mut(&ns) else {
                self.unseen.insert(ns);
                continue;
            };
            if v.get("kind").and_then(Value::as_str) == Some("LimitRange") {
                view.limit_ranges.push(LimitRangeView::from_value(&v));
            } else {
                view.objects.add_value(&v)?;
            }
        }
        Ok(self)
    }
}

fn text(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or("").to_owned()
}

fn strings(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}
