//! The fake's objects (issue 39's controller): Namespaces, LimitRanges, the workload kinds,
//! Pods and Leases, each with a resource version from one counter, answered as the real
//! server answers: lists, watches (a stream of `ADDED`/`MODIFIED`/`DELETED` from a resource
//! version, kept open until `timeoutSeconds`), get, create (`409 AlreadyExists`), replace and
//! merge patch with the resource version checked (`409 Conflict`), delete with preconditions,
//! server-side apply of a Lease with field ownership of `spec.holderIdentity` (what
//! leader election relies on), and the LimitRange validation the seed names (a
//! `defaultRequest` above its `default` is `422 Invalid`). Failures a test scripts
//! (`403`, `5xx`) are matched by method and path.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::time::Duration;

use http_body_util::channel::Channel;
use hyper::body::{Bytes, Frame};
use serde_json::{Value, json};

use super::status_body;

/// A kind the fake holds: its API prefix, plural, kind and whether it is namespaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Kind {
    prefix: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
}

const KINDS: [Kind; 9] = [
    Kind {
        prefix: "/api/v1",
        plural: "namespaces",
        kind: "Namespace",
        namespaced: false,
    },
    Kind {
        prefix: "/api/v1",
        plural: "limitranges",
        kind: "LimitRange",
        namespaced: true,
    },
    Kind {
        prefix: "/api/v1",
        plural: "pods",
        kind: "Pod",
        namespaced: true,
    },
    Kind {
        prefix: "/apis/apps/v1",
        plural: "deployments",
        kind: "Deployment",
        namespaced: true,
    },
    Kind {
        prefix: "/apis/apps/v1",
        plural: "statefulsets",
        kind: "StatefulSet",
        namespaced: true,
    },
    Kind {
        prefix: "/apis/apps/v1",
        plural: "daemonsets",
        kind: "DaemonSet",
        namespaced: true,
    },
    Kind {
        prefix: "/apis/batch/v1",
        plural: "cronjobs",
        kind: "CronJob",
        namespaced: true,
    },
    Kind {
        prefix: "/apis/batch/v1",
        plural: "jobs",
        kind: "Job",
        namespaced: true,
    },
    Kind {
        prefix: "/apis/coordination.k8s.io/v1",
        plural: "leases",
        kind: "Lease",
        namespaced: true,
    },
];

impl Kind {
    fn api_version(self) -> &'static str {
        self.prefix
            .strip_prefix("/apis/")
            .or_else(|| self.prefix.strip_prefix("/api/"))
            .unwrap_or("v1")
    }

    /// The kind named by its `kind` (`LimitRange`).
    pub(crate) fn named(kind: &str) -> Option<Kind> {
        KINDS.iter().copied().find(|k| k.kind == kind)
    }
}

/// A request for objects: the kind, the namespace (for namespaced kinds) and the name.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    kind: Kind,
    namespace: Option<String>,
    name: Option<String>,
}

/// Reads an object path: `/api/v1/namespaces`, `/api/v1/namespaces/<n>`,
/// `/api/v1/limitranges`, `/api/v1/namespaces/<ns>/limitranges[/<name>]`, and the same
/// under `/apis/<group>/<version>`.
pub(crate) fn target(path: &str) -> Option<Target> {
    for kind in KINDS {
        let Some(rest) = path
            .strip_prefix(kind.prefix)
            .and_then(|r| r.strip_prefix('/'))
        else {
            continue;
        };
        let parts: Vec<&str> = rest.split('/').collect();
        let t = |namespace: Option<&str>, name: Option<&str>| {
            Some(Target {
                kind,
                namespace: namespace.map(str::to_owned),
                name: name.map(str::to_owned),
            })
        };
        match (kind.namespaced, parts.as_slice()) {
            (false, [p]) if *p == kind.plural => return t(None, None),
            (false, [p, name]) if *p == kind.plural => return t(None, Some(name)),
            (true, [p]) if *p == kind.plural => return t(None, None),
            (true, ["namespaces", ns, p]) if *p == kind.plural => return t(Some(ns), None),
            (true, ["namespaces", ns, p, name]) if *p == kind.plural => {
                return t(Some(ns), Some(name));
            }
            _ => {}
        }
    }
    None
}

/// One change, as a watch sends it.
#[derive(Debug, Clone)]
struct Change {
    rv: u64,
    kind: Kind,
    namespace: Option<String>,
    kind_of_change: &'static str,
    object: Value,
}

type Key = (Kind, String, String);

/// The objects and their history.
#[derive(Debug)]
pub(crate) struct Objects {
    rv: u64,
    items: BTreeMap<Key, Value>,
    log: Vec<Change>,
    changed: tokio::sync::broadcast::Sender<()>,
    /// The field manager owning each Lease's `spec.holderIdentity`.
    holder_manager: HashMap<Key, String>,
    /// Scripted failures: (method, a text the path contains, code, reason), each used once.
    failures: Vec<(String, String, u16, &'static str)>,
}

impl Default for Objects {
    fn default() -> Self {
        Objects {
            rv: 100,
            items: BTreeMap::new(),
            log: Vec::new(),
            changed: tokio::sync::broadcast::channel(1024).0,
            holder_manager: HashMap::new(),
            failures: Vec::new(),
        }
    }
}

fn key(kind: Kind, namespace: Option<&str>, name: &str) -> Key {
    (kind, namespace.unwrap_or("").to_owned(), name.to_owned())
}

fn not_found(kind: Kind, name: &str) -> (u16, Value) {
    (
        404,
        status_body(
            404,
            "NotFound",
            &format!("{} \"{name}\" not found", kind.plural),
        ),
    )
}

fn conflict(kind: Kind, name: &str) -> (u16, Value) {
    (
        409,
        status_body(
            409,
            "Conflict",
            &format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                kind.plural
            ),
        ),
    )
}

/// RFC 7386 JSON merge patch.
fn merge(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = json!({});
            }
            if let Value::Object(t) = target {
                for (k, v) in p {
                    if v.is_null() {
                        t.remove(k);
                    } else {
                        merge(t.entry(k.clone()).or_insert(Value::Null), v);
                    }
                }
            }
        }
        other => *target = other.clone(),
    }
}

/// What the real server refuses in a LimitRange (the rules the controller could break).
fn limit_range_problems(object: &Value) -> Vec<String> {
    let mut p = Vec::new();
    for (i, item) in object["spec"]["limits"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let bytes = |field: &str| item[field]["memory"].as_str().and_then(oomwarden_quantity);
        if let (Some(d), Some(r)) = (bytes("default"), bytes("defaultRequest"))
            && r > d
        {
            p.push(format!(
                "spec.limits[{i}].defaultRequest[memory]: Invalid value: {}: must be less than or equal to memory default limit",
                item["defaultRequest"]["memory"]
            ));
        }
        if item["type"] != "Container"
            && item["type"] != "Pod"
            && item["type"] != "PersistentVolumeClaim"
        {
            p.push(format!(
                "spec.limits[{i}].type: Unsupported value: {}",
                item["type"]
            ));
        }
    }
    p
}

/// Bytes of a memory quantity written with a binary suffix or none (what the tests use).
fn oomwarden_quantity(q: &str) -> Option<u128> {
    let (n, shift) = [("Ki", 10), ("Mi", 20), ("Gi", 30), ("Ti", 40)]
        .iter()
        .find_map(|(s, b)| q.strip_suffix(s).map(|n| (n, *b)))
        .unwrap_or((q, 0));
    n.parse::<u128>().ok().map(|n| n << shift)
}

impl Objects {
    /// The failure scripted for this request, if any (used once).
    pub(crate) fn scripted(&mut self, method: &str, path: &str) -> Option<(u16, Value)> {
        let i = self
            .failures
            .iter()
            .position(|(m, p, _, _)| m == method && path.contains(p.as_str()))?;
        let (_, _, code, reason) = self.failures.remove(i);
        Some((
            code,
            status_body(code, reason, &format!("scripted {code} {reason}")),
        ))
    }

    pub(crate) fn fail(&mut self, method: &str, path: &str, code: u16, reason: &'static str) {
        self.failures
            .push((method.to_owned(), path.to_owned(), code, reason));
    }

    fn record(
        &mut self,
        kind: Kind,
        namespace: Option<String>,
        kind_of_change: &'static str,
        object: Value,
    ) {
        self.log.push(Change {
            rv: self.rv,
            kind,
            namespace,
            kind_of_change,
            object,
        });
        let _ = self.changed.send(());
    }

    /// Stores `object` as another client would (created or replaced, a new resource version).
    pub(crate) fn put(&mut self, mut object: Value) -> Value {
        let kind =
            Kind::named(object["kind"].as_str().unwrap_or("")).expect("a kind the fake holds");
        object["apiVersion"] = json!(kind.api_version());
        let name = object["metadata"]["name"].as_str().unwrap_or("").to_owned();
        let ns = object["metadata"]["namespace"].as_str().map(str::to_owned);
        let k = key(kind, ns.as_deref(), &name);
        self.rv += 1;
        object["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        if object["metadata"]["uid"].is_null() {
            object["metadata"]["uid"] = json!(format!("uid-{}", self.rv));
        }
        let change = if self.items.contains_key(&k) {
            "MODIFIED"
        } else {
            "ADDED"
        };
        self.items.insert(k, object.clone());
        self.record(kind, ns, change, object.clone());
        object
    }

    /// Removes an object as another client would.
    pub(crate) fn remove(&mut self, kind: &str, namespace: Option<&str>, name: &str) -> bool {
        let Some(kind) = Kind::named(kind) else {
            return false;
        };
        match self.items.remove(&key(kind, namespace, name)) {
            Some(mut object) => {
                self.rv += 1;
                object["metadata"]["resourceVersion"] = json!(self.rv.to_string());
                self.record(kind, namespace.map(str::to_owned), "DELETED", object);
                true
            }
            None => false,
        }
    }

    /// An object as it is now.
    pub(crate) fn get(&self, kind: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let kind = Kind::named(kind)?;
        self.items.get(&key(kind, namespace, name)).cloned()
    }

    /// Every object of a kind.
    pub(crate) fn all(&self, kind: &str) -> Vec<Value> {
        let Some(kind) = Kind::named(kind) else {
            return Vec::new();
        };
        self.items
            .iter()
            .filter(|((k, _, _), _)| *k == kind)
            .map(|(_, v)| v.clone())
            .collect()
    }

    fn list(&self, t: &Target) -> (u16, Value) {
        let items: Vec<Value> = self
            .items
            .iter()
            .filter(|((k, ns, _), _)| *k == t.kind && t.namespace.as_ref().is_none_or(|n| n == ns))
            .map(|(_, v)| v.clone())
            .collect();
        (
            200,
            json!({
                "apiVersion": t.kind.api_version(), "kind": format!("{}List", t.kind.kind),
                "metadata": { "resourceVersion": self.rv.to_string() },
                "items": items,
            }),
        )
    }

    /// Answers a non-watch request for objects.
    pub(crate) fn answer(
        &mut self,
        method: &str,
        t: &Target,
        query: &HashMap<String, String>,
        content_type: &str,
        body: &Value,
    ) -> (u16, Value) {
        let kind = t.kind;
        let ns = t.namespace.as_deref();
        match (method, t.name.as_deref()) {
            ("GET", None) => self.list(t),
            ("GET", Some(name)) => match self.items.get(&key(kind, ns, name)) {
                Some(v) => (200, v.clone()),
                None => not_found(kind, name),
            },
            ("POST", None) => self.create(t, body),
            ("PUT", Some(name)) => {
                let k = key(kind, ns, name);
                let Some(current) = self.items.get(&k) else {
                    return not_found(kind, name);
                };
                if body["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"] {
                    return conflict(kind, name);
                }
                let mut object = body.clone();
                object["metadata"]["uid"] = current["metadata"]["uid"].clone();
                object["metadata"]["namespace"] = json!(ns);
                object["kind"] = json!(kind.kind);
                if kind.kind == "LimitRange" {
                    let p = limit_range_problems(&object);
                    if !p.is_empty() {
                        return (422, status_body(422, "Invalid", &p.join("; ")));
                    }
                }
                (200, self.put(object))
            }
            ("PATCH", Some(name)) => self.patch(t, name, query, content_type, body),
            ("DELETE", Some(name)) => {
                let k = key(kind, ns, name);
                let Some(current) = self.items.get(&k) else {
                    return not_found(kind, name);
                };
                let pre = &body["preconditions"];
                for field in ["resourceVersion", "uid"] {
                    if !pre[field].is_null() && pre[field] != current["metadata"][field] {
                        return conflict(kind, name);
                    }
                }
                self.remove(kind.kind, ns, name);
                (200, status_body(200, "", "deleted"))
            }
            _ => (
                405,
                status_body(
                    405,
                    "MethodNotAllowed",
                    "the server does not allow this method",
                ),
            ),
        }
    }

    fn create(&mut self, t: &Target, body: &Value) -> (u16, Value) {
        let kind = t.kind;
        let name = body["metadata"]["name"].as_str().unwrap_or("").to_owned();
        if name.is_empty() {
            return (
                422,
                status_body(422, "Invalid", "metadata.name: Required value"),
            );
        }
        if let Some(ns) = &t.namespace {
            if !self.items.contains_key(&key(KINDS[0], None, ns)) {
                return (
                    404,
                    status_body(404, "NotFound", &format!("namespaces \"{ns}\" not found")),
                );
            }
            if body["metadata"]["namespace"]
                .as_str()
                .is_some_and(|n| n != ns)
            {
                return (
                    400,
                    status_body(
                        400,
                        "BadRequest",
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ),
                );
            }
        }
        if self
            .items
            .contains_key(&key(kind, t.namespace.as_deref(), &name))
        {
            return (
                409,
                status_body(
                    409,
                    "AlreadyExists",
                    &format!("{} \"{name}\" already exists", kind.plural),
                ),
            );
        }
        let mut object = body.clone();
        object["kind"] = json!(kind.kind);
        if let Some(ns) = &t.namespace {
            object["metadata"]["namespace"] = json!(ns);
        }
        object["metadata"]["uid"] = Value::Null;
        if kind.kind == "LimitRange" {
            let p = limit_range_problems(&object);
            if !p.is_empty() {
                return (422, status_body(422, "Invalid", &p.join("; ")));
            }
        }
        (201, self.put(object))
    }

    fn patch(
        &mut self,
        t: &Target,
        name: &str,
        query: &HashMap<String, String>,
        content_type: &str,
        body: &Value,
    ) -> (u16, Value) {
        let kind = t.kind;
        let k = key(kind, t.namespace.as_deref(), name);
        let manager = query.get("fieldManager").cloned().unwrap_or_default();
        let apply = content_type.starts_with("application/apply-patch");
        let current = self.items.get(&k).cloned();
        let mut object = match (current, apply) {
            (Some(c), _) => c,
            (None, true) => {
                json!({"kind": kind.kind, "metadata": {"name": name, "namespace": t.namespace}})
            }
            (None, false) => return not_found(kind, name),
        };
        if !apply
            && !matches!(
                content_type,
                "application/merge-patch+json" | "application/strategic-merge-patch+json"
            )
        {
            return (415, status_body(415, "UnsupportedMediaType", content_type));
        }
        let sent_rv = &body["metadata"]["resourceVersion"];
        if !sent_rv.is_null() && *sent_rv != object["metadata"]["resourceVersion"] {
            return conflict(kind, name);
        }
        // Server-side apply: a field another manager owns with another value is a conflict.
        let holder = &body["spec"]["holderIdentity"];
        if kind.kind == "Lease" && body["spec"].get("holderIdentity").is_some() {
            if apply
                && let Some(owner) = self.holder_manager.get(&k)
                && *owner != manager
                && !object["spec"]["holderIdentity"].is_null()
                && object["spec"]["holderIdentity"] != *holder
            {
                return (
                    409,
                    status_body(
                        409,
                        "Conflict",
                        &format!(
                            "Apply failed with 1 conflict: conflict with \"{owner}\": .spec.holderIdentity"
                        ),
                    ),
                );
            }
            if holder.is_null() {
                self.holder_manager.remove(&k);
            } else {
                self.holder_manager.insert(k.clone(), manager);
            }
        }
        let mut patch = body.clone();
        if let Some(m) = patch.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        merge(&mut object, &patch);
        object["kind"] = json!(kind.kind);
        (200, self.put(object))
    }

    /// A watch from `rv`: the changes since, then each new one, until `timeout`.
    pub(crate) fn watch(
        state: &std::sync::Arc<std::sync::Mutex<super::State>>,
        t: &Target,
        query: &HashMap<String, String>,
    ) -> Channel<Bytes, Infallible> {
        let from: u64 = query
            .get("resourceVersion")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        // A test's watch ends sooner than a real one (30 s at most), so re-watches are
        // exercised too.
        let timeout = query
            .get("timeoutSeconds")
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(30)
            .min(30);
        let (mut tx, body) = Channel::<Bytes, Infallible>::new(64);
        let mut changes = state.lock().unwrap().objects.changed.subscribe();
        let state = std::sync::Arc::clone(state);
        let t = t.clone();
        tokio::spawn(async move {
            let end = tokio::time::Instant::now() + Duration::from_secs(timeout);
            let mut sent = from;
            loop {
                let pending: Vec<Change> = {
                    let s = state.lock().unwrap();
                    s.objects
                        .log
                        .iter()
                        .filter(|c| {
                            c.rv > sent
                                && c.kind == t.kind
                                && t.namespace
                                    .as_ref()
                                    .is_none_or(|n| c.namespace.as_ref() == Some(n))
                        })
                        .cloned()
                        .collect()
                };
                for c in pending {
                    sent = sent.max(c.rv);
                    let line = format!(
                        "{}\n",
                        json!({"type": c.kind_of_change, "object": c.object})
                    );
                    if tx.send(Frame::data(Bytes::from(line))).await.is_err() {
                        return;
                    }
                }
                tokio::select! {
                    _ = tokio::time::sleep_until(end) => return,
                    r = changes.recv() => if let Err(tokio::sync::broadcast::error::RecvError::Closed) = r { return },
                }
            }
        });
        body
    }
}
