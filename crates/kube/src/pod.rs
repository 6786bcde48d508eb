//! Pods as the kubelet sees them: QoS class, each container's `oom_score_adj`, the pod cgroup's
//! `memory.max`, and whether oomwarden's default ranking can choose the pod.
//!
//! The rules are the kubelet's (pkg/kubelet/qos/policy.go and helpers.go, pkg/apis/core/v1/
//! helper/qos, component-helpers resource helpers, kubelet cm `ResourceConfigForPod`), as
//! `kube-semantics.md` §1, §2 and §7 record them. Manifests are taken as written, with the API
//! server's one defaulting that matters here applied first: a resource with a limit and no
//! request gets the limit as its request.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::quantity::{Quantity, QuantityError};

/// `oom_score_adj` of Guaranteed and node-critical pods' containers.
pub const GUARANTEED_OOM_SCORE_ADJ: i64 = -997;
/// `oom_score_adj` of BestEffort pods' containers.
pub const BESTEFFORT_OOM_SCORE_ADJ: i64 = 1000;
/// `spec.priority` from which a pod is critical (`SystemCriticalPriority`).
pub const SYSTEM_CRITICAL_PRIORITY: i64 = 2_000_000_000;

/// Kubelet feature gates that change these computations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureGates {
    /// `PodLevelResources` (beta and on by default since Kubernetes 1.34).
    pub pod_level_resources: bool,
}

impl Default for FeatureGates {
    fn default() -> Self {
        FeatureGates {
            pod_level_resources: true,
        }
    }
}

/// Why `--feature-gates` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    /// Not `Name=true|false`.
    #[error("invalid feature gate {0:?}: expected Name=true or Name=false")]
    Syntax(String),
    /// A gate that changes the results but is not modelled: refusing beats a wrong number.
    #[error(
        "feature gate {0} is not modelled (its oom_score_adj tie-break is not computed); remove it or set it to false"
    )]
    Unsupported(String),
}

impl FeatureGates {
    /// Parses kubelet syntax: `PodLevelResources=false,OtherGate=true`. Gates that do not
    /// affect these computations are accepted and ignored.
    pub fn parse(text: &str) -> Result<FeatureGates, GateError> {
        let mut gates = FeatureGates::default();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, value) = item
                .split_once('=')
                .ok_or_else(|| GateError::Syntax(item.to_owned()))?;
            let on = match value.trim() {
                "true" => true,
                "false" => false,
                _ => return Err(GateError::Syntax(item.to_owned())),
            };
            match name.trim() {
                "PodLevelResources" => gates.pod_level_resources = on,
                "KubeletOOMScoreAdjTieBreak" | "DRANodeAllocatableResources" if on => {
                    return Err(GateError::Unsupported(name.trim().to_owned()));
                }
                _ => {}
            }
        }
        Ok(gates)
    }
}

/// The pod fields these rules read. Unknown fields are ignored.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Pod {
    /// `kind` (`Pod` when given).
    pub kind: Option<String>,
    /// Name, namespace, UID, annotations.
    pub metadata: Metadata,
    /// The spec.
    pub spec: PodSpec,
    /// `status.qosClass`, which wins over computing it.
    pub status: PodStatus,
}

/// `metadata`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Metadata {
    /// `name`.
    pub name: String,
    /// `namespace`.
    pub namespace: Option<String>,
    /// `uid`.
    pub uid: Option<String>,
    /// `annotations`.
    pub annotations: BTreeMap<String, String>,
}

/// `spec`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodSpec {
    /// `containers`.
    pub containers: Vec<Container>,
    /// `initContainers`.
    pub init_containers: Vec<Container>,
    /// `priority`.
    pub priority: Option<i64>,
    /// `priorityClassName`.
    pub priority_class_name: Option<String>,
    /// Pod-level `resources`.
    pub resources: Option<Resources>,
    /// `overhead` (RuntimeClass).
    pub overhead: BTreeMap<String, Value>,
}

/// `status`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodStatus {
    /// `qosClass`.
    pub qos_class: Option<String>,
    /// `containerStatuses`: which container ID runs which container now.
    pub container_statuses: Vec<ContainerStatus>,
    /// `initContainerStatuses`.
    pub init_container_statuses: Vec<ContainerStatus>,
}

/// A container's status: its name and the ID its cgroup is named by.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerStatus {
    /// `name`.
    pub name: String,
    /// `containerID` (`containerd://<64 hex digits>`; empty before it runs).
    #[serde(rename = "containerID")]
    pub container_id: String,
}

impl ContainerStatus {
    /// The ID without the runtime's scheme.
    pub fn id(&self) -> &str {
        self.container_id
            .split_once("://")
            .map_or(self.container_id.as_str(), |(_, id)| id)
    }
}

/// A container.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Container {
    /// `name`.
    pub name: String,
    /// `resources`.
    pub resources: Resources,
    /// `restartPolicy` (`Always` makes an init container a sidecar).
    pub restart_policy: Option<String>,
}

/// `requests` and `limits`, quantities as written (strings or numbers).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Resources {
    /// `requests`.
    pub requests: BTreeMap<String, Value>,
    /// `limits`.
    pub limits: BTreeMap<String, Value>,
}

/// The pod QoS class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum PodQos {
    /// Every container has equal, non-zero cpu and memory requests and limits.
    Guaranteed,
    /// Anything between.
    Burstable,
    /// No cpu or memory request or limit anywhere.
    BestEffort,
}

/// What kind of container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ContainerKind {
    /// A non-restartable init container.
    Init,
    /// A restartable init container (`restartPolicy: Always`).
    Sidecar,
    /// A regular container.
    Regular,
}

/// A quantity that could not be read, with where it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {error}")]
pub struct FieldError {
    /// JSON path of the field (`spec.containers[0].resources.limits.memory`).
    pub path: String,
    /// The quantity error.
    pub error: QuantityError,
}

/// A quantity as written: a string, or a YAML/JSON number.
pub(crate) fn quantity_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn read(
    map: &BTreeMap<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<Quantity>, FieldError> {
    let Some(v) = map.get(key) else {
        return Ok(None);
    };
    let text = quantity_text(v);
    let fail = |error| FieldError {
        path: format!("{path}.{key}"),
        error,
    };
    let q = Quantity::parse(&text).map_err(fail)?;
    let refuse = |reason| {
        fail(crate::quantity::QuantityError {
            text: text.clone(),
            reason,
        })
    };
    // As the API server's validation: requests and limits are never negative.
    if q.is_negative() {
        return Err(refuse("must be greater than or equal to 0"));
    }
    // Exact in bytes and in billionths of a cpu, or refused (never read as 0).
    if q.scaled_nanos().is_none() {
        return Err(refuse("too large to compute with exactly"));
    }
    Ok(Some(q))
}

/// A container's cpu and memory, after defaulting, as nanounits (cpu) and bytes (memory).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Amounts {
    cpu_request: i128,
    cpu_limit: i128,
    memory_request: i128,
    memory_limit: i128,
    /// Any request or limit at all (any resource), before defaulting.
    any: bool,
    has_memory_limit: bool,
}

fn nano(q: Option<Quantity>) -> i128 {
    q.and_then(|q| q.scaled_nanos()).unwrap_or(0)
}

/// A memory quantity in bytes, exact (a limit of `8Ei` is 2^63, not 0); 0 when absent.
fn bytes(q: Option<Quantity>) -> i128 {
    q.and_then(|q| q.value_exact()).unwrap_or(0)
}

fn amounts(r: &Resources, path: &str) -> Result<Amounts, FieldError> {
    let rq = format!("{path}.requests");
    let lm = format!("{path}.limits");
    let (cpu_l, mem_l) = (
        read(&r.limits, "cpu", &lm)?,
        read(&r.limits, "memory", &lm)?,
    );
    // API defaulting: a limit without a request makes the request.
    let cpu_r = read(&r.requests, "cpu", &rq)?.or(cpu_l);
    let mem_r = read(&r.requests, "memory", &rq)?.or(mem_l);
    Ok(Amounts {
        cpu_request: nano(cpu_r),
        cpu_limit: nano(cpu_l),
        memory_request: bytes(mem_r),
        memory_limit: bytes(mem_l),
        any: !r.requests.is_empty() || !r.limits.is_empty(),
        has_memory_limit: mem_l.is_some(),
    })
}

/// QoS shape of one `ResourceRequirements` (`kube-semantics.md` §2, step 3).
fn shape(a: &Amounts) -> PodQos {
    if !a.any {
        return PodQos::BestEffort;
    }
    let one = |req: i128, lim: i128| {
        if req != lim {
            PodQos::Burstable
        } else if req == 0 {
            PodQos::BestEffort
        } else {
            PodQos::Guaranteed
        }
    };
    match (
        one(a.cpu_request, a.cpu_limit),
        one(a.memory_request, a.memory_limit),
    ) {
        (x, y) if x == y => x,
        _ => PodQos::Burstable,
    }
}

/// Everything computed about one pod.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodScore {
    /// `namespace/name` (or `name`).
    pub pod: String,
    /// Its QoS class.
    pub qos_class: PodQos,
    /// The QoS class came from `status.qosClass`.
    pub qos_from_status: bool,
    /// `metadata.uid`, when the manifest has it.
    #[serde(rename = "podUID")]
    pub pod_uid: Option<String>,
    /// Critical (static or mirror pod, or priority ≥ 2e9): never evicted by the kubelet.
    pub critical: bool,
    /// Node-critical: critical and `system-node-critical`.
    pub node_critical: bool,
    /// `spec.priority` (0 when unset).
    pub priority: i64,
    /// The pod's memory request (PodRequests): a pod-level request, or the containers'
    /// aggregate plus the RuntimeClass overhead.
    pub memory_request_bytes: i128,
    /// `memory.max` the kubelet writes on the pod cgroup; `None` is unlimited.
    pub pod_memory_max_bytes: Option<i128>,
    /// oomwarden's default ranking can choose this pod (its guards on: a static, mirror or
    /// node-critical pod never).
    pub oom_handler_candidate: bool,
    /// Why or why not.
    pub oom_handler_reason: String,
    /// Per container: init containers first, then regular ones.
    pub containers: Vec<ContainerScore>,
    /// The pod cgroup's `memory.min`/`memory.low` under MemoryQoS, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_qos: Option<MemoryQosValues>,
}

/// MemoryQoS (KEP-2570, Kubernetes 1.36+) settings, as in the kubelet configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryQos {
    /// `memoryThrottlingFactor`; `None` (the 1.37 default) writes no `memory.high`.
    pub throttling_factor: Option<f64>,
    /// `memoryReservationPolicy: TieredReservation` (otherwise `None`: no `memory.min`/`low`).
    pub tiered_reservation: bool,
    /// Node allocatable memory, bytes: stands in for an absent container limit.
    pub node_allocatable: i64,
}

/// Page size the kubelet rounds `memory.high` down to (`os.Getpagesize()` on x86-64).
pub const PAGE_SIZE: i64 = 4096;

/// Values the kubelet writes under MemoryQoS; `None` is "not written".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryQosValues {
    /// `memory.high` (containers only).
    pub memory_high: Option<i64>,
    /// `memory.min` (Guaranteed, TieredReservation).
    pub memory_min: Option<i64>,
    /// `memory.low` (Burstable, TieredReservation).
    pub memory_low: Option<i64>,
}

/// One container's numbers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerScore {
    /// `name`.
    pub name: String,
    /// `init`, `sidecar` or `regular`.
    pub kind: ContainerKind,
    /// Memory request after defaulting, bytes (0 when none); exact beyond 2^63.
    pub memory_request_bytes: i128,
    /// Memory limit, bytes; exact beyond 2^63.
    pub memory_limit_bytes: Option<i128>,
    /// The `oom_score_adj` the kubelet gives it.
    pub oom_score_adj: i64,
    /// The container cgroup's MemoryQoS values, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_qos: Option<MemoryQosValues>,
    /// The swap the kubelet gives it (`memory.swap.max`), when the node's swap is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swap: Option<ContainerSwap>,
}

/// Computes a pod's numbers on a node with `capacity` bytes of memory (`MemTotal`).
pub fn score(pod: &Pod, capacity: i64, gates: FeatureGates) -> Result<PodScore, FieldError> {
    score_with_qos(pod, capacity, gates, None, None)
}

/// [`score`], plus the MemoryQoS values the kubelet would write under `qos` and each
/// container's swap limit on a node with `swap`.
#[allow(
    clippy::too_many_lines,
    reason = "the kubelet's steps in its order (QoS, aggregation, oom_score_adj, memory.max, requests), each commented against its source"
)]
pub fn score_with_qos(
    pod: &Pod,
    capacity: i64,
    gates: FeatureGates,
    memory_qos: Option<MemoryQos>,
    swap: Option<NodeSwap>,
) -> Result<PodScore, FieldError> {
    let spec = &pod.spec;
    let init: Vec<Amounts> = spec
        .init_containers
        .iter()
        .enumerate()
        .map(|(i, c)| amounts(&c.resources, &format!("spec.initContainers[{i}].resources")))
        .collect::<Result<_, _>>()?;
    let regular: Vec<Amounts> = spec
        .containers
        .iter()
        .enumerate()
        .map(|(i, c)| amounts(&c.resources, &format!("spec.containers[{i}].resources")))
        .collect::<Result<_, _>>()?;
    let pod_level = match (&spec.resources, gates.pod_level_resources) {
        (Some(r), true) => Some((amounts(r, "spec.resources")?, r)),
        _ => None,
    };
    let sidecar = |c: &Container| c.restart_policy.as_deref() == Some("Always");

    // QoS: status wins; else pod-level resources alone (gate on), else every container.
    let status_qos = match pod.status.qos_class.as_deref() {
        Some("Guaranteed") => Some(PodQos::Guaranteed),
        Some("Burstable") => Some(PodQos::Burstable),
        Some("BestEffort") => Some(PodQos::BestEffort),
        _ => None,
    };
    let computed = match &pod_level {
        Some((a, _)) => shape(a),
        None => {
            let mut class: Option<PodQos> = None;
            for s in init.iter().chain(regular.iter()).map(shape) {
                class = Some(match (class, s) {
                    (_, PodQos::Burstable) | (Some(PodQos::Burstable), _) => PodQos::Burstable,
                    (Some(c), s) if c != s => PodQos::Burstable,
                    (_, s) => s,
                });
            }
            class.unwrap_or(PodQos::BestEffort)
        }
    };
    let qos = status_qos.unwrap_or(computed);

    let annotations = &pod.metadata.annotations;
    let static_pod = annotations
        .get("kubernetes.io/config.source")
        .is_some_and(|s| s != "api");
    let mirror = annotations.contains_key("kubernetes.io/config.mirror");
    let critical = static_pod || mirror || spec.priority.unwrap_or(0) >= SYSTEM_CRITICAL_PRIORITY;
    let node_critical =
        critical && spec.priority_class_name.as_deref() == Some("system-node-critical");

    // Aggregate container memory requests and limits (component-helpers): regular + sidecars,
    // or an init container's peak (its own + the sidecars before it), whichever is larger.
    let aggregate = |f: fn(&Amounts) -> i128| -> i128 {
        let mut sidecars = 0_i128;
        let mut peak = 0_i128;
        for (c, a) in spec.init_containers.iter().zip(init.iter()) {
            if sidecar(c) {
                sidecars = sidecars.saturating_add(f(a));
                peak = peak.max(sidecars);
            } else {
                peak = peak.max(f(a).saturating_add(sidecars));
            }
        }
        (regular
            .iter()
            .map(f)
            .fold(0_i128, i128::saturating_add)
            .saturating_add(sidecars))
        .max(peak)
    };

    // Pod-level requests spread over the containers (KEP-2837).
    let containers_count = i128::try_from(spec.containers.len() + spec.init_containers.len())
        .unwrap_or(i128::MAX)
        .max(1);
    let remaining = match &pod_level {
        Some((a, r))
            if r.requests
                .keys()
                .any(|k| k == "cpu" || k == "memory" || k.starts_with("hugepages-")) =>
        {
            if a.memory_request == 0 {
                0
            } else {
                a.memory_request
                    .saturating_sub(aggregate(|a| a.memory_request))
                    / containers_count
            }
        }
        _ => 0,
    };
    let cap = i128::from(capacity.max(1));
    let formula = |req: i128| 1000 - 1000_i128.saturating_mul(req) / cap;
    let min_regular = regular
        .iter()
        .map(|a| a.memory_request.saturating_add(remaining))
        .min();
    let adj = |c: &Container, a: &Amounts| -> i64 {
        if node_critical || qos == PodQos::Guaranteed {
            return GUARANTEED_OOM_SCORE_ADJ;
        }
        if qos == PodQos::BestEffort {
            return BESTEFFORT_OOM_SCORE_ADJ;
        }
        let mut v = formula(a.memory_request.saturating_add(remaining));
        if sidecar(c)
            && spec.init_containers.iter().any(|i| i.name == c.name)
            && let Some(min) = min_regular
        {
            v = v.min(formula(min));
        }
        if v < 1000 + i128::from(GUARANTEED_OOM_SCORE_ADJ) {
            v = 1000 + i128::from(GUARANTEED_OOM_SCORE_ADJ);
        }
        if v >= 1000 {
            // 1000 is BestEffort's; requests are never negative (refused when read), so
            // more cannot happen: the kernel's range ends at 1000 anyway.
            v = 999;
        }
        i64::try_from(v).unwrap_or(999)
    };
    let swap_of = |a: &Amounts| {
        swap.map(|node| {
            let limit = if a.has_memory_limit {
                a.memory_limit
            } else {
                0
            };
            swap::container_swap(node, capacity, qos, critical, a.memory_request, limit)
        })
    };
    let mut containers = Vec::new();
    for (c, a) in spec.init_containers.iter().zip(init.iter()) {
        // Sidecars are only init containers with restartPolicy Always.
        let kind = if sidecar(c) {
            ContainerKind::Sidecar
        } else {
            ContainerKind::Init
        };
        containers.push(ContainerScore {
            name: c.name.clone(),
            kind,
            memory_request_bytes: a.memory_request,
            memory_limit_bytes: a.has_memory_limit.then_some(a.memory_limit),
            oom_score_adj: adj(c, a),
            memory_qos: memory_qos.map(|m| container_qos(&m, qos, a)),
            swap: swap_of(a),
        });
    }
    for (c, a) in spec.containers.iter().zip(regular.iter()) {
        containers.push(ContainerScore {
            name: c.name.clone(),
            kind: ContainerKind::Regular,
            memory_request_bytes: a.memory_request,
            memory_limit_bytes: a.has_memory_limit.then_some(a.memory_limit),
            oom_score_adj: adj(c, a),
            memory_qos: memory_qos.map(|m| container_qos(&m, qos, a)),
            swap: swap_of(a),
        });
    }

    // Pod cgroup memory.max (ResourceConfigForPod): a pod-level limit, else the aggregate of
    // the containers' limits (plus overhead) when every container has one, else unlimited.
    let pod_level_limit = pod_level
        .as_ref()
        .filter(|(a, _)| a.has_memory_limit)
        .map(|(a, _)| a.memory_limit);
    let all_limited = init
        .iter()
        .chain(regular.iter())
        .all(|a| a.has_memory_limit)
        && !(init.is_empty() && regular.is_empty());
    let overhead = overhead_request(spec)?;
    let pod_memory_max = match pod_level_limit {
        Some(l) => Some(l),
        None if all_limited => {
            let sum = aggregate(|a| a.memory_limit);
            Some(if sum > 0 {
                sum.saturating_add(overhead)
            } else {
                sum
            })
        }
        None => None,
    };

    // The pod's memory request (PodRequests): a pod-level request, else the containers'
    // aggregate plus the RuntimeClass overhead.
    let pod_request = match &pod_level {
        Some((a, r)) if r.requests.contains_key("memory") => a.memory_request,
        _ => aggregate(|a| a.memory_request).saturating_add(overhead_request(spec)?),
    };
    let pod_qos = memory_qos.map(|m| reservation(&m, qos, pod_request));

    let (candidate, reason) = match (pod_memory_max, qos) {
        (Some(_), _) => (
            false,
            "no: the pod cgroup has memory.max (every container has a memory limit), so the default ranking scores it 0".to_owned(),
        ),
        (None, PodQos::Guaranteed) => (false, "no: Guaranteed scores 0".to_owned()),
        (None, PodQos::BestEffort) => (
            true,
            "yes: BestEffort without a limit, scored by its memory.current".to_owned(),
        ),
        (None, PodQos::Burstable) => (
            true,
            "yes: a container has no memory limit, so the pod cgroup has none; scored at half its memory.current".to_owned(),
        ),
    };
    // oomwarden's guard (`protect.nodeCritical`, on by default) leaves out what the node tells
    // apart: a static or mirror pod (the runtime has its annotations), a node-critical one
    // (the kubelet runs it at −997). A priority alone is not seen on the node.
    let guarded = static_pod || mirror || node_critical;
    let (candidate, reason) = if candidate && guarded {
        let what = if static_pod {
            "a static pod"
        } else if mirror {
            "a mirror pod"
        } else {
            "node-critical (the kubelet runs it at oom_score_adj -997)"
        };
        (
            false,
            format!(
                "no: {what}, never a candidate while protect.nodeCritical is on (the default); Talos's own controller, or protect.nodeCritical: false, would score it: {}",
                reason.trim_start_matches("yes: ")
            ),
        )
    } else {
        (candidate, reason)
    };
    let name = match &pod.metadata.namespace {
        Some(ns) => format!("{ns}/{}", pod.metadata.name),
        None => pod.metadata.name.clone(),
    };
    Ok(PodScore {
        pod: name,
        qos_class: qos,
        qos_from_status: status_qos.is_some(),
        pod_uid: pod.metadata.uid.clone(),
        critical,
        node_critical,
        priority: spec.priority.unwrap_or(0),
        memory_request_bytes: pod_request,
        pod_memory_max_bytes: pod_memory_max,
        oom_handler_candidate: candidate,
        oom_handler_reason: reason,
        containers,
        memory_qos: pod_qos.map(|(min, low)| MemoryQosValues {
            memory_high: None,
            memory_min: min,
            memory_low: low,
        }),
    })
}

fn overhead_request(spec: &PodSpec) -> Result<i128, FieldError> {
    Ok(bytes(read(&spec.overhead, "memory", "spec.overhead")?))
}

/// `memory.min`/`memory.low` of a cgroup with this request under TieredReservation.
fn reservation(m: &MemoryQos, qos: PodQos, request: i128) -> (Option<i64>, Option<i64>) {
    let r = i64::try_from(request).ok();
    match (m.tiered_reservation, qos) {
        (true, PodQos::Guaranteed) => (r, None),
        (true, PodQos::Burstable) if request > 0 => (None, r),
        _ => (None, None),
    }
}

/// A container cgroup's MemoryQoS values (`kube-semantics.md` §6).
fn container_qos(m: &MemoryQos, qos: PodQos, a: &Amounts) -> MemoryQosValues {
    let (min, low) = reservation(m, qos, a.memory_request);
    let high = m.throttling_factor.and_then(|factor| {
        // A container whose request equals its limit keeps memory.high at max.
        if a.has_memory_limit && a.memory_limit > 0 && a.memory_request == a.memory_limit {
            return None;
        }
        let limit = if a.has_memory_limit && a.memory_limit > 0 {
            a.memory_limit
        } else {
            i128::from(m.node_allocatable)
        };
        #[allow(clippy::cast_precision_loss)] // the kubelet computes in float64 too
        let (req, lim) = (a.memory_request as f64, limit as f64);
        #[allow(clippy::cast_precision_loss)]
        let page = PAGE_SIZE as f64;
        let high = ((req + factor * (lim - req)) / page).floor() * page;
        #[allow(clippy::cast_possible_truncation)] // bounded by the limit
        let high = high as i64;
        (high > 0 && i128::from(high) > a.memory_request).then_some(high)
    });
    MemoryQosValues {
        memory_high: high,
        memory_min: min,
        memory_low: low,
    }
}

/// Why a manifest file holds no pods it can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// Not YAML (or JSON).
    #[error("invalid YAML or JSON: {0}")]
    Syntax(String),
    /// A document that is not a Pod or a list of them.
    #[error("document {document}: {message}")]
    Document {
        /// 1-based document number.
        document: usize,
        /// What is wrong.
        message: String,
    },
}

/// The documents of a manifest text. JSON (what `kubectl get -o json` writes) is read as JSON:
/// a cluster's pod list is millions of nodes, past a YAML parser's default budget. YAML gets a
/// node and event budget that grows with the text (a node takes at least a byte or two, so a
/// real file never meets it), while aliases, which are what let a small text expand, keep
/// the parser's default caps.
pub fn documents(text: &str) -> Result<Vec<Value>, ManifestError> {
    let json_error = if text.trim_start().starts_with(['{', '[']) {
        match serde_json::Deserializer::from_str(text)
            .into_iter::<Value>()
            .collect::<Result<Vec<Value>, _>>()
        {
            Ok(docs) => return Ok(docs),
            Err(e) => Some(e),
        }
    } else {
        None
    };
    let mut budget = serde_saphyr::Budget::default();
    budget.max_nodes = budget.max_nodes.max(text.len());
    budget.max_events = budget.max_events.max(text.len().saturating_mul(2));
    budget.max_total_scalar_bytes = budget.max_total_scalar_bytes.max(text.len());
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    serde_saphyr::from_multiple_with_options(text, options).map_err(|e| {
        ManifestError::Syntax(match json_error {
            // It looked like JSON: say what JSON found wrong.
            Some(json) => format!("{json} (read as JSON)"),
            None => e.to_string(),
        })
    })
}

/// The pods in a manifest text: YAML or JSON, one or several documents, each a Pod or a
/// `List`/`PodList` of them (`kubectl get pods -o json`).
pub fn parse_pods(text: &str) -> Result<Vec<Pod>, ManifestError> {
    let documents = documents(text)?;
    let mut pods = Vec::new();
    for (i, doc) in documents.into_iter().enumerate() {
        let document = i + 1;
        let bad = |message: String| ManifestError::Document { document, message };
        let kind = doc.get("kind").and_then(Value::as_str).map(str::to_owned);
        match kind.as_deref() {
            _ if doc.is_null() => {}
            Some("Pod") => pods.push(pod_from(doc, "").map_err(bad)?),
            Some("List" | "PodList") => {
                let items = match doc {
                    Value::Object(mut map) => match map.remove("items") {
                        Some(Value::Array(items)) => items,
                        _ => Vec::new(),
                    },
                    _ => Vec::new(),
                };
                for (j, item) in items.into_iter().enumerate() {
                    match item.get("kind").and_then(Value::as_str) {
                        Some("Pod") | None => {
                            pods.push(pod_from(item, &format!("items[{j}]: ")).map_err(bad)?)
                        }
                        Some(other) => {
                            return Err(bad(format!(
                                "items[{j}]: kind {other} is not a Pod (oomwarden audit reads workloads)"
                            )));
                        }
                    }
                }
            }
            Some(other) => {
                return Err(bad(format!(
                    "kind {other} is not a Pod or a List of pods (oomwarden audit reads workloads)"
                )));
            }
            None => return Err(bad("no kind; expected a Pod or a List".to_owned())),
        }
    }
    Ok(pods)
}

fn pod_from(v: Value, at: &str) -> Result<Pod, String> {
    serde_json::from_value(v).map_err(|e| format!("{at}not a valid Pod: {e}"))
}

mod swap;

pub use swap::{ContainerSwap, NodeSwap, SwapBehavior, SwapReason};

#[cfg(test)]
mod tests;
