//! A fake Kubernetes API server for the Events API and pods' status conditions only: no real
//! API server can run on the machines the suite runs on, so this one checks each request as
//! the real one does (method, path, credentials, and the fields `events.k8s.io/v1` requires on
//! create, after `k8s.io/kubernetes/pkg/apis/core/validation/events.go`; a strategic-merge
//! patch of `pods/<name>/status` as `ValidatePodConditions` and the immutable `metadata.uid`
//! check it) and answers as it does: `201` with the object, `409 AlreadyExists` for a name it
//! holds, `200` with the pod patched, `404 NotFound` for a pod it does not hold, `422 Invalid`
//! for a bad object, and any status a test scripts (`403`, `5xx`, a hang). Its validation is
//! written here independently of the product's code, so the product cannot agree with itself
//! by mistake.

// serde_json's `value["key"]` gives Null for anything missing: it cannot panic on a Value.
#![allow(clippy::indexing_slicing)]

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Either, Full};

mod objects;
use hyper::body::Bytes;
use regex::Regex;
use serde_json::{Value, json};

/// The bearer token the fake accepts (the kubeconfig it writes carries it).
pub const TOKEN: &str = "oomwarden-test-token";

/// What the fake answers to the next create.
#[derive(Debug, Clone)]
pub enum Reply {
    /// As the real server: `201`, or `409`/`422` as the object deserves.
    Normal,
    /// A `Status` failure with this code and reason (`403 Forbidden`, `503
    /// ServiceUnavailable`, `409 AlreadyExists`, `429 TooManyRequests` …).
    Status(u16, &'static str),
    /// The normal answer, sent this late (the object is made at once).
    Delay(Duration),
    /// This status with a body of this many bytes that is no JSON (a proxy's error page, or
    /// worse).
    Huge(u16, usize),
}

/// A lasting misbehaviour for the object requests (lists, watches) whose path contains a text,
/// until [`FakeApiServer::clear_quirks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quirk {
    /// `200` with a body that is no JSON (a proxy's page, a broken server).
    Garbage,
    /// A list's answer always carries a new `continue` token, whatever was asked (a server
    /// that never ends a pagination).
    EndlessContinue,
    /// A list's answer always carries the same `continue` token.
    SameContinue,
}

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Request {
    /// `POST` …
    pub method: String,
    /// `/apis/events.k8s.io/v1/namespaces/shop/events`.
    pub path: String,
    /// The body, when it was JSON.
    pub body: Value,
    /// What the real server would refuse in it (empty: a valid create).
    pub problems: Vec<String>,
    /// The status answered.
    pub status: u16,
}

#[derive(Debug, Default)]
struct State {
    script: VecDeque<Reply>,
    requests: Vec<Request>,
    created: HashSet<(String, String)>,
    /// Pods by namespace and name: their UID and status conditions.
    pods: HashMap<(String, String), (String, Vec<Value>)>,
    /// Nodes by name.
    nodes: HashMap<String, FakeNode>,
    /// Namespaces, LimitRanges, workloads, Pods and Leases (the limits controller's).
    objects: objects::Objects,
    /// Lasting misbehaviours: (a text the path contains, the quirk).
    quirks: Vec<(String, Quirk)>,
    /// Continue tokens handed out by [`Quirk::EndlessContinue`].
    tokens: u64,
}

/// A node the fake holds: its resource version, taints and status conditions.
#[derive(Debug, Default, Clone)]
pub struct FakeNode {
    /// Bumped by every change.
    pub resource_version: u64,
    /// `spec.taints`.
    pub taints: Vec<Value>,
    /// `status.conditions`.
    pub conditions: Vec<Value>,
}

impl FakeNode {
    fn object(&self, name: &str) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": { "name": name, "uid": name, "resourceVersion": self.resource_version.to_string() },
            "spec": { "taints": self.taints },
            "status": { "conditions": self.conditions },
        })
    }
}

/// What a request asks for.
enum Route {
    /// `POST /apis/events.k8s.io/v1/namespaces/<ns>/events`.
    CreateEvent(String),
    /// `PATCH /api/v1/namespaces/<ns>/pods/<name>/status`.
    PatchPodStatus(String, String),
    /// `GET /api/v1/nodes/<name>`.
    GetNode(String),
    /// `PATCH /api/v1/nodes/<name>` (a JSON merge patch).
    PatchNode(String),
    /// `PATCH /api/v1/nodes/<name>/status`.
    PatchNodeStatus(String),
    Unknown,
}

fn route(method: &str, path: &str) -> Route {
    if let Some(ns) = path
        .strip_prefix("/apis/events.k8s.io/v1/namespaces/")
        .and_then(|rest| rest.strip_suffix("/events"))
        .filter(|ns| !ns.contains('/'))
        && method == "POST"
    {
        return Route::CreateEvent(ns.to_owned());
    }
    if let Some((ns, name)) = path
        .strip_prefix("/api/v1/namespaces/")
        .and_then(|rest| rest.strip_suffix("/status"))
        .and_then(|rest| rest.split_once("/pods/"))
        .filter(|(ns, name)| !ns.contains('/') && !name.contains('/'))
        && method == "PATCH"
    {
        return Route::PatchPodStatus(ns.to_owned(), name.to_owned());
    }
    if let Some(rest) = path.strip_prefix("/api/v1/nodes/") {
        return match (method, rest.split_once('/')) {
            ("GET", None) => Route::GetNode(rest.to_owned()),
            ("PATCH", None) => Route::PatchNode(rest.to_owned()),
            ("PATCH", Some((name, "status"))) => Route::PatchNodeStatus(name.to_owned()),
            _ => Route::Unknown,
        };
    }
    Route::Unknown
}

/// The running fake; it stops with the test process.
#[derive(Debug, Clone)]
pub struct FakeApiServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl FakeApiServer {
    /// Listens on a free loopback port (its own thread and runtime).
    pub fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    let state = Arc::clone(&shared);
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req| {
                            let state = Arc::clone(&state);
                            async move { Ok::<_, std::convert::Infallible>(answer(req, &state).await) }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                            .await;
                    });
                }
            });
        });
        FakeApiServer { addr, state }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The answers to the next creates, in order; then [`Reply::Normal`].
    pub fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        self.state.lock().unwrap().script.extend(replies);
    }

    /// Holds a pod (its status patches are answered; others get `404`).
    pub fn add_pod(&self, namespace: &str, name: &str, uid: &str) {
        self.state.lock().unwrap().pods.insert(
            (namespace.to_owned(), name.to_owned()),
            (uid.to_owned(), Vec::new()),
        );
    }

    /// A pod's status conditions, as patched so far.
    pub fn pod_conditions(&self, namespace: &str, name: &str) -> Vec<Value> {
        self.state
            .lock()
            .unwrap()
            .pods
            .get(&(namespace.to_owned(), name.to_owned()))
            .map(|(_, c)| c.clone())
            .unwrap_or_default()
    }

    /// Holds a node without taints or conditions.
    pub fn add_node(&self, name: &str) {
        self.state
            .lock()
            .unwrap()
            .nodes
            .insert(name.to_owned(), FakeNode::default());
    }

    /// A node as it is now.
    pub fn node(&self, name: &str) -> Option<FakeNode> {
        self.state.lock().unwrap().nodes.get(name).cloned()
    }

    /// Another controller's taint on the node (its resource version moves on).
    pub fn add_taint(&self, name: &str, taint: Value) {
        if let Some(n) = self.state.lock().unwrap().nodes.get_mut(name) {
            n.taints.push(taint);
            n.resource_version += 1;
        }
    }

    /// Stores an object as another client would (created or replaced with a new resource
    /// version; watches see it): a Namespace, LimitRange, Deployment, StatefulSet, DaemonSet,
    /// CronJob, Job, Pod or Lease. Returns it as stored.
    pub fn put_object(&self, object: Value) -> Value {
        self.state.lock().unwrap().objects.put(object)
    }

    /// Deletes an object as another client would; false when there was none.
    pub fn delete_object(&self, kind: &str, namespace: Option<&str>, name: &str) -> bool {
        self.state
            .lock()
            .unwrap()
            .objects
            .remove(kind, namespace, name)
    }

    /// An object as it is now (`kind` as in `LimitRange`).
    pub fn object(&self, kind: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        self.state
            .lock()
            .unwrap()
            .objects
            .get(kind, namespace, name)
    }

    /// Every object of a kind.
    pub fn objects(&self, kind: &str) -> Vec<Value> {
        self.state.lock().unwrap().objects.all(kind)
    }

    /// The next request for objects with this method whose path contains `path` fails with
    /// `code` and `reason` (`403 Forbidden`, `503 ServiceUnavailable`, `409 Conflict`).
    pub fn fail_next(&self, method: &str, path: &str, code: u16, reason: &'static str) {
        self.state
            .lock()
            .unwrap()
            .objects
            .fail(method, path, code, reason);
    }

    /// From now on, every object request (list, watch, get) whose path contains `path`
    /// misbehaves as `quirk` says.
    pub fn quirk(&self, path: &str, quirk: Quirk) {
        self.state
            .lock()
            .unwrap()
            .quirks
            .push((path.to_owned(), quirk));
    }

    /// Ends every quirk.
    pub fn clear_quirks(&self) {
        self.state.lock().unwrap().quirks.clear();
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().unwrap().requests.clone()
    }

    /// The Events created, in order.
    pub fn created(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r.status == 201)
            .map(|r| r.body)
            .collect()
    }

    /// Writes a kubeconfig for this server (token authentication) into `dir`.
    pub fn kubeconfig(&self, dir: &Path) -> PathBuf {
        let path = dir.join("kubeconfig");
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}\nusers:\n- name: oomwarden\n  user:\n    token: {TOKEN}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: oomwarden\ncurrent-context: fake\n",
            self.url()
        );
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Waits up to `timeout` for `n` requests.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> Vec<Request> {
        let end = std::time::Instant::now() + timeout;
        loop {
            let r = self.requests();
            if r.len() >= n || std::time::Instant::now() > end {
                return r;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

type Response = hyper::Response<
    Either<Full<Bytes>, http_body_util::channel::Channel<Bytes, std::convert::Infallible>>,
>;

async fn answer(req: hyper::Request<hyper::body::Incoming>, state: &Arc<Mutex<State>>) -> Response {
    let method = req.method().to_string();
    let path = req.uri().path().to_owned();
    let query = query_of(req.uri());
    let auth = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let content_type = req
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let bytes = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if matches!(route(&method, &path), Route::Unknown)
        && let Some(target) = objects::target(&path)
    {
        return answer_objects(
            state,
            &method,
            &path,
            &target,
            &query,
            &content_type,
            auth,
            body,
        );
    }
    let reply = state
        .lock()
        .unwrap()
        .script
        .pop_front()
        .unwrap_or(Reply::Normal);
    let route = route(&method, &path);
    let mut problems = Vec::new();
    let (status, out) = if auth.as_deref() != Some(&format!("Bearer {TOKEN}")) {
        (401, status_body(401, "Unauthorized", "Unauthorized"))
    } else {
        match (route, &reply) {
            (Route::Unknown, _) => (
                404,
                status_body(
                    404,
                    "NotFound",
                    "the server could not find the requested resource",
                ),
            ),
            (_, Reply::Status(code, reason)) => (
                *code,
                status_body(*code, reason, &format!("scripted {code} {reason}")),
            ),
            (Route::PatchPodStatus(ns, name), _) => {
                patch_pod_status(state, &ns, &name, &content_type, &body, &mut problems)
            }
            (Route::CreateEvent(ns), _) => {
                create_event(state, ns, &content_type, &body, &mut problems)
            }
            (Route::GetNode(name), _) => match state.lock().unwrap().nodes.get(&name) {
                Some(n) => (200, n.object(&name)),
                None => (
                    404,
                    status_body(404, "NotFound", &format!("nodes \"{name}\" not found")),
                ),
            },
            (Route::PatchNode(name), _) => {
                patch_node(state, &name, &content_type, &body, &mut problems)
            }
            (Route::PatchNodeStatus(name), _) => {
                patch_node_status(state, &name, &content_type, &body, &mut problems)
            }
        }
    };
    state.lock().unwrap().requests.push(Request {
        method,
        path,
        body,
        problems,
        status,
    });
    // The object is made at once; only the answer is late (a client that gives up has it
    // made all the same, as with a real server behind a slow network).
    if let Reply::Delay(d) = reply {
        tokio::time::sleep(d).await;
    }
    if let Reply::Huge(code, bytes) = reply {
        return huge(code, bytes);
    }
    json_response(status, &out)
}

/// A request's query parameters (`watch=true`, `resourceVersion=…`).
fn query_of(uri: &hyper::Uri) -> HashMap<String, String> {
    uri.query()
        .unwrap_or("")
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn json_response(status: u16, out: &Value) -> Response {
    hyper::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Either::Left(Full::new(Bytes::from(out.to_string()))))
        .unwrap()
}

/// A request for the objects of the limits controller: checked, recorded, answered.
#[allow(clippy::too_many_arguments)]
fn answer_objects(
    state: &Arc<Mutex<State>>,
    method: &str,
    path: &str,
    target: &objects::Target,
    query: &HashMap<String, String>,
    content_type: &str,
    auth: Option<String>,
    body: Value,
) -> Response {
    let mut s = state.lock().unwrap();
    let quirk = s
        .quirks
        .iter()
        .find(|(p, _)| path.contains(p.as_str()))
        .map(|(_, q)| *q);
    if quirk == Some(Quirk::Garbage) {
        s.requests.push(Request {
            method: method.to_owned(),
            path: path.to_owned(),
            body,
            problems: Vec::new(),
            status: 200,
        });
        drop(s);
        return hyper::Response::builder()
            .status(200)
            .header("content-type", "application/json")
            .body(Either::Left(Full::new(Bytes::from_static(
                b"<html>502 Bad Gateway</html>",
            ))))
            .unwrap();
    }
    let (status, mut out) = if auth.as_deref() != Some(&format!("Bearer {TOKEN}")) {
        (401, status_body(401, "Unauthorized", "Unauthorized"))
    } else if let Some(failure) = s.objects.scripted(method, path) {
        failure
    } else if method == "GET"
        && matches!(query.get("watch").map(String::as_str), Some("true" | "1"))
    {
        s.requests.push(Request {
            method: method.to_owned(),
            path: path.to_owned(),
            body,
            problems: Vec::new(),
            status: 200,
        });
        drop(s);
        let channel = objects::Objects::watch(state, target, query);
        return hyper::Response::builder()
            .status(200)
            .header("content-type", "application/json")
            .body(Either::Right(channel))
            .unwrap();
    } else {
        s.objects.answer(method, target, query, content_type, &body)
    };
    if status == 200 && out["items"].is_array() {
        match quirk {
            Some(Quirk::EndlessContinue) => {
                s.tokens += 1;
                out["metadata"]["continue"] = json!(format!("more-{}", s.tokens));
            }
            Some(Quirk::SameContinue) => out["metadata"]["continue"] = json!("more"),
            _ => {}
        }
    }
    s.requests.push(Request {
        method: method.to_owned(),
        path: path.to_owned(),
        body,
        problems: Vec::new(),
        status,
    });
    drop(s);
    json_response(status, &out)
}

/// A `code` answer of `bytes` bytes that are no JSON.
fn huge(code: u16, bytes: usize) -> Response {
    hyper::Response::builder()
        .status(code)
        .header("content-type", "text/html")
        .body(Either::Left(Full::new(Bytes::from(vec![b'x'; bytes]))))
        .unwrap()
}

fn status_body(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code,
    })
}

/// A create of an Event in namespace `ns`.
fn create_event(
    state: &Mutex<State>,
    ns: String,
    content_type: &str,
    body: &Value,
    problems: &mut Vec<String>,
) -> (u16, Value) {
    if !content_type.starts_with("application/json") {
        problems.push(format!("content type {content_type:?}"));
    }
    problems.extend(validate(body, &ns));
    if !problems.is_empty() {
        return (422, status_body(422, "Invalid", &problems.join("; ")));
    }
    let name = body["metadata"]["name"].as_str().unwrap_or("").to_owned();
    let fresh = state.lock().unwrap().created.insert((ns, name.clone()));
    if fresh {
        let mut created = body.clone();
        created["metadata"]["uid"] = json!("00000000-0000-4000-8000-00000000e7e1");
        created["metadata"]["resourceVersion"] = json!("1");
        created["metadata"]["creationTimestamp"] = json!("2026-12-01T00:00:00Z");
        (201, created)
    } else {
        (
            409,
            status_body(
                409,
                "AlreadyExists",
                &format!("events.events.k8s.io \"{name}\" already exists"),
            ),
        )
    }
}

/// A JSON merge patch of a node: `spec.taints` replaced whole (a list without a merge key),
/// refused with 409 Conflict when it carries a `resourceVersion` that is not the node's.
fn patch_node(
    state: &Mutex<State>,
    name: &str,
    content_type: &str,
    body: &Value,
    problems: &mut Vec<String>,
) -> (u16, Value) {
    let mut state = state.lock().unwrap();
    let Some(node) = state.nodes.get_mut(name) else {
        return (
            404,
            status_body(404, "NotFound", &format!("nodes \"{name}\" not found")),
        );
    };
    if content_type != "application/merge-patch+json" {
        problems.push(format!("content type {content_type:?}"));
    }
    if let Some(rv) = body["metadata"]["resourceVersion"].as_str()
        && rv != node.resource_version.to_string()
    {
        return (
            409,
            status_body(
                409,
                "Conflict",
                &format!(
                    "Operation cannot be fulfilled on nodes \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
                ),
            ),
        );
    }
    let qualified = Regex::new(r"^(([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$").unwrap();
    let taints = body["spec"]["taints"].as_array().cloned();
    // `validateNodeTaints`: a value is a label value, and taints are unique by key and effect.
    let label_value = Regex::new(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$").unwrap();
    let mut pairs = HashSet::new();
    for t in taints.iter().flatten() {
        let value = t["value"].as_str().unwrap_or("");
        if value.len() > 63 || !label_value.is_match(value) {
            problems.push(format!("spec.taints.value: Invalid value: {}", t["value"]));
        }
        if !pairs.insert((t["key"].to_string(), t["effect"].to_string())) {
            problems.push(format!(
                "spec.taints: Duplicate value: {}: taints must be unique by key and effect pair",
                t["key"]
            ));
        }
        if !qualified.is_match(t["key"].as_str().unwrap_or("")) {
            problems.push(format!("spec.taints.key: Invalid value: {}", t["key"]));
        }
        if !["NoSchedule", "PreferNoSchedule", "NoExecute"]
            .contains(&t["effect"].as_str().unwrap_or(""))
        {
            problems.push(format!(
                "spec.taints.effect: Unsupported value: {}",
                t["effect"]
            ));
        }
    }
    if !problems.is_empty() {
        return (422, status_body(422, "Invalid", &problems.join("; ")));
    }
    if let Some(t) = taints {
        node.taints = t;
    }
    node.resource_version += 1;
    (200, node.object(name))
}

/// A strategic-merge patch of a node's status: conditions merged by `type`.
fn patch_node_status(
    state: &Mutex<State>,
    name: &str,
    content_type: &str,
    body: &Value,
    problems: &mut Vec<String>,
) -> (u16, Value) {
    let mut state = state.lock().unwrap();
    let Some(node) = state.nodes.get_mut(name) else {
        return (
            404,
            status_body(404, "NotFound", &format!("nodes \"{name}\" not found")),
        );
    };
    strategic_merge(content_type, problems);
    let patched = status_conditions(body, problems);
    if !problems.is_empty() {
        return (422, status_body(422, "Invalid", &problems.join("; ")));
    }
    merge_conditions(&mut node.conditions, patched);
    node.resource_version += 1;
    (200, node.object(name))
}

/// A status patch that merges conditions by `type` is a strategic-merge patch.
fn strategic_merge(content_type: &str, problems: &mut Vec<String>) {
    if content_type != "application/strategic-merge-patch+json" {
        problems.push(format!(
            "content type {content_type:?} (a status patch that merges conditions by type is a strategic-merge patch)"
        ));
    }
}

/// The conditions a status patch sets, checked as `ValidatePodConditions` and
/// `validateNodeConditions` check them: a `type`, a `status` of `True`, `False` or `Unknown`,
/// a CamelCase `reason`, RFC 3339 times.
fn status_conditions(body: &Value, problems: &mut Vec<String>) -> Vec<Value> {
    let reason_re = Regex::new(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$").unwrap();
    let time = Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)$").unwrap();
    let patched = body["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if patched.is_empty() {
        problems.push("status.conditions: the patch sets none".to_owned());
    }
    for c in &patched {
        let text = |k: &str| c[k].as_str().unwrap_or("").to_owned();
        if text("type").is_empty() {
            problems.push("status.conditions.type: Required value".to_owned());
        }
        if !["True", "False", "Unknown"].contains(&text("status").as_str()) {
            problems.push(format!(
                "status.conditions.status: Unsupported value: {}",
                c["status"]
            ));
        }
        if !c["reason"].is_null() && !reason_re.is_match(&text("reason")) {
            problems.push(format!(
                "status.conditions.reason: Invalid value: {}",
                c["reason"]
            ));
        }
        for key in ["lastTransitionTime", "lastHeartbeatTime"] {
            if !c[key].is_null() && !time.is_match(&text(key)) {
                problems.push(format!(
                    "status.conditions.{key}: not an RFC 3339 time: {}",
                    c[key]
                ));
            }
        }
    }
    patched
}

/// A strategic merge of conditions: by `type`, the others kept.
fn merge_conditions(conditions: &mut Vec<Value>, patched: Vec<Value>) {
    for c in patched {
        match conditions.iter_mut().find(|old| old["type"] == c["type"]) {
            Some(old) => *old = c,
            None => conditions.push(c),
        }
    }
}

/// A strategic-merge patch of a pod's status: conditions merged by `type`.
fn patch_pod_status(
    state: &Mutex<State>,
    ns: &str,
    name: &str,
    content_type: &str,
    body: &Value,
    problems: &mut Vec<String>,
) -> (u16, Value) {
    let mut state = state.lock().unwrap();
    let Some((uid, conditions)) = state.pods.get_mut(&(ns.to_owned(), name.to_owned())) else {
        return (
            404,
            status_body(404, "NotFound", &format!("pods \"{name}\" not found")),
        );
    };
    strategic_merge(content_type, problems);
    if let Some(sent) = body["metadata"]["uid"].as_str()
        && sent != uid
    {
        problems.push(format!(
            "metadata.uid: Invalid value: {sent:?}: field is immutable"
        ));
    }
    let patched = status_conditions(body, problems);
    if !problems.is_empty() {
        return (422, status_body(422, "Invalid", &problems.join("; ")));
    }
    merge_conditions(conditions, patched);
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": name, "namespace": ns, "uid": uid.clone(), "resourceVersion": "2" },
        "status": { "conditions": conditions.clone() },
    });
    (200, pod)
}

/// What the API server refuses in a create of `events.k8s.io/v1` Event in namespace `ns`.
fn validate(e: &Value, ns: &str) -> Vec<String> {
    let subdomain =
        Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$").unwrap();
    let qualified =
        Regex::new(r"^(([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$").unwrap();
    let micro_time =
        Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?(Z|[+-]\d\d:\d\d)$").unwrap();
    let text = |v: &Value| v.as_str().unwrap_or("").to_owned();
    let mut p = Vec::new();
    if e["apiVersion"] != "events.k8s.io/v1" || e["kind"] != "Event" {
        p.push(format!("apiVersion/kind {}/{}", e["apiVersion"], e["kind"]));
    }
    let name = text(&e["metadata"]["name"]);
    if name.len() > 253 || !subdomain.is_match(&name) {
        p.push(format!("metadata.name {name:?}: not a DNS-1123 subdomain"));
    }
    // apimachinery's ValidateAnnotations: keys are qualified names, 256 KiB in all.
    if let Some(annotations) = e["metadata"]["annotations"].as_object() {
        let mut size = 0;
        for (k, v) in annotations {
            size += k.len() + v.as_str().map_or(0, str::len);
            if !qualified.is_match(k) || !v.is_string() {
                p.push(format!("metadata.annotations {k:?}: {v}: invalid"));
            }
        }
        if size > 256 << 10 {
            p.push("metadata.annotations: Too long: must have at most 262144 bytes".to_owned());
        }
    }
    match e["metadata"]["namespace"].as_str() {
        None => {}
        Some(n) if n == ns => {}
        Some(n) => p.push(format!(
            "the namespace of the provided object ({n}) does not match the namespace sent on the request ({ns})"
        )),
    }
    if !micro_time.is_match(&text(&e["eventTime"])) {
        p.push(format!(
            "eventTime: Required value (or not a MicroTime: {})",
            e["eventTime"]
        ));
    }
    let kind = text(&e["type"]);
    if kind != "Normal" && kind != "Warning" {
        p.push(format!("type: has invalid value: {kind}"));
    }
    let controller = text(&e["reportingController"]);
    if !qualified.is_match(&controller) {
        p.push(format!(
            "reportingController {controller:?}: not a qualified name"
        ));
    }
    for (field, limit) in [("reportingInstance", 128), ("action", 128), ("reason", 128)] {
        let v = text(&e[field]);
        if v.is_empty() || v.len() > limit {
            p.push(format!(
                "{field}: required, at most {limit} characters (found {})",
                v.len()
            ));
        }
    }
    if text(&e["note"]).len() > 1024 {
        p.push("note: can have at most 1024 characters".to_owned());
    }
    for field in [
        "deprecatedCount",
        "deprecatedFirstTimestamp",
        "deprecatedLastTimestamp",
        "deprecatedSource",
    ] {
        if !e[field].is_null() {
            p.push(format!("{field}: needs to be unset"));
        }
    }
    let regarding = &e["regarding"];
    if text(&regarding["kind"]).is_empty() || text(&regarding["name"]).is_empty() {
        p.push("regarding: kind and name are needed".to_owned());
    }
    match regarding["namespace"].as_str() {
        None | Some("") => {
            if ns != "default" && ns != "kube-system" {
                p.push(format!("regarding.namespace: a cluster-scoped object's Event must be in default or kube-system, not {ns}"));
            }
        }
        // Stricter than the API server, on purpose: `kubectl describe pod` finds a Pod's
        // Events in the Pod's namespace only.
        Some(n) if n != ns => p.push(format!(
            "regarding.namespace {n} does not match the Event's namespace {ns}"
        )),
        Some(_) => {}
    }
    p
}
