//! The DaemonSet's pod, read from the manifest file users apply
//! (`deploy/kubernetes/oomwarden.yaml`), field by field, into what the kubelet would ask the
//! runtime for. Every field of the pod template must be one this module translates or one it
//! names as having nothing to translate on a node (scheduling, the API server's business); any
//! other field is an error naming it, so that VM scenario S19 fails when the manifest says
//! something the pod it runs would silently lack.
//!
//! What cannot be as on a real node, and why (docs/vm-tests.md, S19): the pod uses the node's
//! network (no CNI in the VM; the manifest's pod has its own network namespace with the
//! cluster's CNI); the service account's token is not projected (no API server: the daemon
//! says it is not in a cluster and counts its Events as dropped).

use std::collections::BTreeMap;

use anyhow::{Context as _, Result, bail};
use oomwarden_kube::Quantity;
use oomwarden_kube::pod::{FeatureGates, Pod, PodQos, PodScore, score};
use serde_json::{Map, Value};

/// The pod the DaemonSet would have the kubelet run on this node.
#[derive(Debug, Clone)]
pub(crate) struct PodPlan {
    /// The DaemonSet's namespace.
    pub(crate) namespace: String,
    /// The DaemonSet's name (pods are named after it).
    pub(crate) daemonset: String,
    /// The template's labels and annotations.
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) annotations: BTreeMap<String, String>,
    pub(crate) host_pid: bool,
    pub(crate) host_ipc: bool,
    /// `terminationGracePeriodSeconds` (the kubelet's default 30).
    pub(crate) grace_seconds: i64,
    /// The priority the Priority admission plugin resolves `priorityClassName` to.
    pub(crate) priority: i64,
    pub(crate) containers: Vec<ContainerPlan>,
    pub(crate) volumes: BTreeMap<String, Volume>,
    /// QoS class, each container's `oom_score_adj`, the pod cgroup's `memory.max`, as
    /// oomwarden-kube computes them from the kubelet's rules.
    pub(crate) score: PodScore,
}

#[derive(Debug, Clone)]
pub(crate) struct ContainerPlan {
    pub(crate) name: String,
    pub(crate) image: String,
    pub(crate) pull_policy: String,
    pub(crate) command: Vec<String>,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, EnvValue)>,
    pub(crate) privileged: bool,
    /// CPU request and limit in millicores; memory limit in bytes.
    pub(crate) cpu_request_milli: i64,
    pub(crate) cpu_limit_milli: Option<i64>,
    pub(crate) memory_limit: Option<i64>,
    pub(crate) mounts: Vec<MountPlan>,
    /// `containerPort`s (TCP unless said).
    pub(crate) ports: Vec<(i32, String)>,
    /// Its HTTP probes: (`liveness` or `readiness`, path, port number). The driver does not
    /// run them as the kubelet does, every `periodSeconds`: it says them, and the scenario
    /// asks each path once, as the kubelet's first probe would.
    pub(crate) probes: Vec<(String, String, i32)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EnvValue {
    Value(String),
    /// `valueFrom.fieldRef.fieldPath` (the downward API: the kubelet fills it in).
    Field(String),
}

#[derive(Debug, Clone)]
pub(crate) struct MountPlan {
    pub(crate) volume: String,
    pub(crate) path: String,
    pub(crate) read_only: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Volume {
    /// `hostPath` with its `type` (`""`, `Directory`, `DirectoryOrCreate`).
    HostPath { path: String, kind: String },
    /// A ConfigMap of the same file, its data.
    ConfigMap {
        name: String,
        data: BTreeMap<String, String>,
    },
}

/// The fields of `v` (a mapping at `at`), each one of `known`.
fn fields<'a>(v: &'a Value, at: &str, known: &[&str]) -> Result<&'a Map<String, Value>> {
    let map = v
        .as_object()
        .with_context(|| format!("{at}: expected a mapping, found {v}"))?;
    for key in map.keys() {
        if !known.contains(&key.as_str()) {
            bail!(
                "{at}.{key}: the driver does not know this field; teach tests/vm/cri-driver/src/daemonset.rs what the kubelet does with it (the pod S19 runs would otherwise lack it)"
            );
        }
    }
    Ok(map)
}

fn string(v: &Value, at: &str) -> Result<String> {
    v.as_str()
        .map(str::to_owned)
        .with_context(|| format!("{at}: expected a string, found {v}"))
}

fn strings(v: Option<&Value>, at: &str) -> Result<Vec<String>> {
    match v {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, s)| string(s, &format!("{at}[{i}]")))
            .collect(),
        Some(v) => bail!("{at}: expected a list, found {v}"),
    }
}

fn string_map(v: Option<&Value>, at: &str) -> Result<BTreeMap<String, String>> {
    match v {
        None => Ok(BTreeMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| Ok((k.clone(), string(v, &format!("{at}.{k}"))?)))
            .collect(),
        Some(v) => bail!("{at}: expected a mapping, found {v}"),
    }
}

fn items<'a>(v: Option<&'a Value>, at: &str) -> Result<&'a [Value]> {
    match v {
        None => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(v) => bail!("{at}: expected a list, found {v}"),
    }
}

fn flag(v: Option<&Value>, at: &str) -> Result<bool> {
    match v {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => bail!("{at}: expected true or false, found {v}"),
    }
}

/// What the Priority admission plugin gives the two built-in classes (any other class lives
/// in the API server, which the VM has not).
fn priority_of(class: &str) -> Result<i64> {
    match class {
        "system-node-critical" => Ok(2_000_001_000),
        "system-cluster-critical" => Ok(2_000_000_000),
        other => bail!(
            "priorityClassName {other:?}: not a built-in class; the driver has no API server to resolve it"
        ),
    }
}

/// Reads the manifest's DaemonSet (there must be one) and the ConfigMaps its pod mounts;
/// `capacity` is the node's memory (`MemTotal`, bytes) for the kubelet's `oom_score_adj`.
#[allow(
    clippy::too_many_lines,
    reason = "the pod template's fields in the manifest's order, each checked and translated where it is read"
)]
pub(crate) fn plan(manifest: &str, capacity: i64) -> Result<PodPlan> {
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(manifest).context("the manifest is not YAML")?;
    let mut daemonsets = docs
        .iter()
        .filter(|d| d.get("kind").is_some_and(|k| k == "DaemonSet"));
    let ds = daemonsets.next().context("the manifest has no DaemonSet")?;
    if daemonsets.next().is_some() {
        bail!("the manifest has more than one DaemonSet; the driver runs one");
    }
    let ds_map = fields(ds, "DaemonSet", &["apiVersion", "kind", "metadata", "spec"])?;
    let meta = fields(
        ds_map.get("metadata").unwrap_or(&Value::Null),
        "DaemonSet.metadata",
        &["name", "namespace", "labels", "annotations"],
    )?;
    let daemonset = string(
        meta.get("name").unwrap_or(&Value::Null),
        "DaemonSet.metadata.name",
    )?;
    let namespace = match meta.get("namespace") {
        Some(n) => string(n, "DaemonSet.metadata.namespace")?,
        None => "default".to_owned(),
    };
    // The selector and the update strategy are the DaemonSet controller's, not the kubelet's.
    let spec = fields(
        ds_map.get("spec").unwrap_or(&Value::Null),
        "DaemonSet.spec",
        &["selector", "updateStrategy", "template"],
    )?;
    let template = fields(
        spec.get("template").unwrap_or(&Value::Null),
        "spec.template",
        &["metadata", "spec"],
    )?;
    let tmeta = fields(
        template.get("metadata").unwrap_or(&Value::Null),
        "spec.template.metadata",
        &["labels", "annotations"],
    )?;
    let labels = string_map(tmeta.get("labels"), "spec.template.metadata.labels")?;
    let annotations = string_map(
        tmeta.get("annotations"),
        "spec.template.metadata.annotations",
    )?;
    // The API server refuses a selector that does not match the template.
    let selector = spec
        .get("selector")
        .and_then(|s| s.get("matchLabels"))
        .cloned();
    for (k, v) in string_map(selector.as_ref(), "spec.selector.matchLabels")? {
        if labels.get(&k) != Some(&v) {
            bail!("spec.selector.matchLabels {k}={v} does not select the template's labels");
        }
    }
    let pod_spec = template.get("spec").unwrap_or(&Value::Null);
    let p = "spec.template.spec";
    let ps = fields(
        pod_spec,
        p,
        &[
            "priorityClassName",
            "hostPID",
            "hostIPC",
            // The service account's token: not projected here (no API server, see above).
            "serviceAccountName",
            "automountServiceAccountToken",
            // No services in the VM, so no service variables either way.
            "enableServiceLinks",
            "terminationGracePeriodSeconds",
            // Scheduling: the pod is on this node.
            "tolerations",
            "containers",
            "volumes",
        ],
    )?;
    let priority_class = ps
        .get("priorityClassName")
        .map(|c| string(c, &format!("{p}.priorityClassName")))
        .transpose()?;
    let priority = priority_class.as_deref().map_or(Ok(0), priority_of)?;
    let grace_seconds = match ps.get("terminationGracePeriodSeconds") {
        None => 30,
        Some(v) => v
            .as_i64()
            .with_context(|| format!("{p}.terminationGracePeriodSeconds: {v}"))?,
    };
    let mut volumes = BTreeMap::new();
    for (i, v) in items(ps.get("volumes"), &format!("{p}.volumes"))?
        .iter()
        .enumerate()
    {
        let at = format!("{p}.volumes[{i}]");
        let m = fields(v, &at, &["name", "hostPath", "configMap"])?;
        let name = string(m.get("name").unwrap_or(&Value::Null), &format!("{at}.name"))?;
        let volume = match (m.get("hostPath"), m.get("configMap")) {
            (Some(h), None) => {
                let h = fields(h, &format!("{at}.hostPath"), &["path", "type"])?;
                let kind = match h.get("type") {
                    Some(t) => string(t, &format!("{at}.hostPath.type"))?,
                    None => String::new(),
                };
                if !["", "Directory", "DirectoryOrCreate"].contains(&kind.as_str()) {
                    bail!(
                        "{at}.hostPath.type {kind}: the driver knows Directory and DirectoryOrCreate"
                    );
                }
                Volume::HostPath {
                    path: string(
                        h.get("path").unwrap_or(&Value::Null),
                        &format!("{at}.hostPath.path"),
                    )?,
                    kind,
                }
            }
            (None, Some(c)) => {
                let c = fields(c, &format!("{at}.configMap"), &["name"])?;
                let cm_name = string(
                    c.get("name").unwrap_or(&Value::Null),
                    &format!("{at}.configMap.name"),
                )?;
                let cm = docs
                    .iter()
                    .find(|d| {
                        let meta = |k: &str| d.get("metadata").and_then(|m| m.get(k));
                        d.get("kind").is_some_and(|k| k == "ConfigMap")
                            && meta("name").is_some_and(|n| n == cm_name.as_str())
                            && meta("namespace").is_some_and(|n| n == namespace.as_str())
                    })
                    .with_context(|| {
                        format!("{at}: ConfigMap {namespace}/{cm_name} is not in the manifest")
                    })?;
                fields(
                    cm,
                    &format!("ConfigMap {cm_name}"),
                    &["apiVersion", "kind", "metadata", "data"],
                )?;
                Volume::ConfigMap {
                    data: string_map(cm.get("data"), &format!("ConfigMap {cm_name}.data"))?,
                    name: cm_name,
                }
            }
            _ => bail!("{at}: the driver knows hostPath and configMap volumes, one per volume"),
        };
        volumes.insert(name, volume);
    }
    let mut containers = Vec::new();
    for (i, c) in items(ps.get("containers"), &format!("{p}.containers"))?
        .iter()
        .enumerate()
    {
        containers.push(container(c, &format!("{p}.containers[{i}]"), &volumes)?);
    }
    if containers.is_empty() {
        bail!("{p}.containers: none");
    }
    // The kubelet's numbers, from the pod as admission leaves it (the priority resolved).
    let mut admitted = pod_spec.clone();
    if let Some(o) = admitted.as_object_mut() {
        o.insert("priority".to_owned(), priority.into());
    }
    let pod: Pod = serde_json::from_value(serde_json::json!({"kind": "Pod", "spec": admitted}))
        .context("the pod template as a Pod")?;
    let score = score(&pod, capacity, FeatureGates::default()).context("the pod's numbers")?;
    Ok(PodPlan {
        namespace,
        daemonset,
        labels,
        annotations,
        host_pid: flag(ps.get("hostPID"), &format!("{p}.hostPID"))?,
        host_ipc: flag(ps.get("hostIPC"), &format!("{p}.hostIPC"))?,
        grace_seconds,
        priority,
        containers,
        volumes,
        score,
    })
}

#[allow(
    clippy::too_many_lines,
    reason = "a container's fields in the manifest's order, each checked and translated where it is read"
)]
fn container(c: &Value, at: &str, volumes: &BTreeMap<String, Volume>) -> Result<ContainerPlan> {
    let m = fields(
        c,
        at,
        &[
            "name",
            "image",
            "imagePullPolicy",
            "command",
            "args",
            "env",
            "securityContext",
            "resources",
            "ports",
            "volumeMounts",
            "livenessProbe",
            "readinessProbe",
        ],
    )?;
    let name = string(m.get("name").unwrap_or(&Value::Null), &format!("{at}.name"))?;
    let image = string(
        m.get("image").unwrap_or(&Value::Null),
        &format!("{at}.image"),
    )?;
    let pull_policy = match m.get("imagePullPolicy") {
        Some(v) => string(v, &format!("{at}.imagePullPolicy"))?,
        // The API server's default for a tag other than `latest`.
        None => "IfNotPresent".to_owned(),
    };
    let mut env = Vec::new();
    for (i, e) in items(m.get("env"), &format!("{at}.env"))?
        .iter()
        .enumerate()
    {
        let eat = format!("{at}.env[{i}]");
        let em = fields(e, &eat, &["name", "value", "valueFrom"])?;
        let ename = string(
            em.get("name").unwrap_or(&Value::Null),
            &format!("{eat}.name"),
        )?;
        let value = match (em.get("value"), em.get("valueFrom")) {
            (Some(v), None) => EnvValue::Value(string(v, &format!("{eat}.value"))?),
            (None, Some(from)) => {
                let from = fields(from, &format!("{eat}.valueFrom"), &["fieldRef"])?;
                let field = fields(
                    from.get("fieldRef").unwrap_or(&Value::Null),
                    &format!("{eat}.valueFrom.fieldRef"),
                    &["fieldPath", "apiVersion"],
                )?;
                let path = string(
                    field.get("fieldPath").unwrap_or(&Value::Null),
                    &format!("{eat}.valueFrom.fieldRef.fieldPath"),
                )?;
                if ![
                    "spec.nodeName",
                    "metadata.name",
                    "metadata.namespace",
                    "metadata.uid",
                ]
                .contains(&path.as_str())
                {
                    bail!(
                        "{eat}.valueFrom.fieldRef.fieldPath {path}: the driver fills in spec.nodeName and metadata.name, namespace, uid"
                    );
                }
                EnvValue::Field(path)
            }
            _ => bail!("{eat}: one of value and valueFrom"),
        };
        env.push((ename, value));
    }
    let privileged = match m.get("securityContext") {
        None => false,
        Some(s) => {
            let s = fields(s, &format!("{at}.securityContext"), &["privileged"])?;
            flag(
                s.get("privileged"),
                &format!("{at}.securityContext.privileged"),
            )?
        }
    };
    let (mut cpu_request_milli, mut cpu_limit_milli, mut memory_limit) = (0, None, None);
    if let Some(r) = m.get("resources") {
        let r = fields(r, &format!("{at}.resources"), &["requests", "limits"])?;
        for (which, v) in r {
            let rat = format!("{at}.resources.{which}");
            for (resource, q) in fields(v, &rat, &["cpu", "memory"])? {
                let text = match q {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    other => bail!("{rat}.{resource}: {other} is not a quantity"),
                };
                let q = Quantity::parse(&text).with_context(|| format!("{rat}.{resource}"))?;
                let milli = || {
                    q.scaled_nanos()
                        .and_then(|n| i64::try_from(n / 1_000_000).ok())
                        .with_context(|| format!("{rat}.{resource}: {text} out of range"))
                };
                match (which.as_str(), resource.as_str()) {
                    ("requests", "cpu") => cpu_request_milli = milli()?,
                    ("limits", "cpu") => cpu_limit_milli = Some(milli()?),
                    ("limits", "memory") => {
                        memory_limit = Some(
                            q.value_exact()
                                .and_then(|b| i64::try_from(b).ok())
                                .with_context(|| format!("{rat}.memory: {text} out of range"))?,
                        );
                    }
                    // The memory request sets nothing on the node (oomwarden-kube counts it
                    // for the QoS class).
                    _ => {}
                }
            }
        }
        // The API server's default: a limit without a request requests the limit.
        let cpu_requested = r.get("requests").is_some_and(|q| q.get("cpu").is_some());
        if !cpu_requested && let Some(limit) = cpu_limit_milli {
            cpu_request_milli = limit;
        }
    }
    let mut ports = Vec::new();
    let mut port_names = BTreeMap::new();
    for (i, port) in items(m.get("ports"), &format!("{at}.ports"))?
        .iter()
        .enumerate()
    {
        let pat = format!("{at}.ports[{i}]");
        let pm = fields(port, &pat, &["name", "containerPort", "protocol"])?;
        if let (Some(name), Some(number)) = (
            pm.get("name").and_then(Value::as_str),
            pm.get("containerPort").and_then(Value::as_i64),
        ) {
            port_names.insert(name.to_owned(), number);
        }
        let number = pm
            .get("containerPort")
            .and_then(Value::as_i64)
            .and_then(|n| i32::try_from(n).ok())
            .with_context(|| format!("{pat}.containerPort"))?;
        let protocol = match pm.get("protocol") {
            Some(v) => string(v, &format!("{pat}.protocol"))?,
            None => "TCP".to_owned(),
        };
        ports.push((number, protocol));
    }
    let mut mounts = Vec::new();
    for (i, mount) in items(m.get("volumeMounts"), &format!("{at}.volumeMounts"))?
        .iter()
        .enumerate()
    {
        let mat = format!("{at}.volumeMounts[{i}]");
        let mm = fields(mount, &mat, &["name", "mountPath", "readOnly"])?;
        let volume = string(
            mm.get("name").unwrap_or(&Value::Null),
            &format!("{mat}.name"),
        )?;
        if !volumes.contains_key(&volume) {
            bail!("{mat}.name {volume}: no such volume");
        }
        mounts.push(MountPlan {
            volume,
            path: string(
                mm.get("mountPath").unwrap_or(&Value::Null),
                &format!("{mat}.mountPath"),
            )?,
            read_only: flag(mm.get("readOnly"), &format!("{mat}.readOnly"))?,
        });
    }
    let mut probes = Vec::new();
    for kind in ["livenessProbe", "readinessProbe"] {
        let Some(probe) = m.get(kind) else {
            continue;
        };
        let pat = format!("{at}.{kind}");
        let pm = fields(
            probe,
            &pat,
            &[
                "httpGet",
                "initialDelaySeconds",
                "periodSeconds",
                "timeoutSeconds",
                "failureThreshold",
            ],
        )?;
        let get = fields(
            pm.get("httpGet").unwrap_or(&Value::Null),
            &format!("{pat}.httpGet"),
            &["path", "port"],
        )?;
        let path = string(
            get.get("path").unwrap_or(&Value::Null),
            &format!("{pat}.httpGet.path"),
        )?;
        // A port by name is one of the container's; by number, that number.
        let port = match get.get("port") {
            Some(Value::String(name)) => port_names
                .get(name)
                .copied()
                .with_context(|| format!("{pat}.httpGet.port {name}: no such port"))?,
            Some(v) => v
                .as_i64()
                .with_context(|| format!("{pat}.httpGet.port: a name or a number"))?,
            None => bail!("{pat}.httpGet.port: required"),
        };
        probes.push((
            kind.trim_end_matches("Probe").to_owned(),
            path,
            i32::try_from(port).with_context(|| format!("{pat}.httpGet.port"))?,
        ));
    }
    Ok(ContainerPlan {
        probes,
        name,
        image,
        pull_policy,
        command: strings(m.get("command"), &format!("{at}.command"))?,
        args: strings(m.get("args"), &format!("{at}.args"))?,
        env,
        privileged,
        cpu_request_milli,
        cpu_limit_milli,
        memory_limit,
        mounts,
        ports,
    })
}

/// The kubelet's `MilliCPUToShares` (pkg/kubelet/cm/helpers_linux.go): 1024 a core, at
/// least 2.
pub(crate) fn cpu_shares(milli: i64) -> i64 {
    (milli.saturating_mul(1024) / 1000).max(2)
}

/// The kubelet's `MilliCPUToQuota` with the default 100 ms period: 0 (none) without a limit.
pub(crate) fn cpu_quota(limit_milli: Option<i64>) -> i64 {
    limit_milli.map_or(0, |m| (m.saturating_mul(100_000) / 1000).max(1000))
}

/// The pod cgroup under the cgroupfs driver.
pub(crate) fn pod_cgroup(qos: PodQos, uid: &str) -> String {
    match qos {
        PodQos::Guaranteed => format!("kubepods/pod{uid}"),
        PodQos::Burstable => format!("kubepods/burstable/pod{uid}"),
        PodQos::BestEffort => format!("kubepods/besteffort/pod{uid}"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    const MANIFEST: &str = include_str!("../../../../deploy/kubernetes/oomwarden.yaml");

    #[test]
    fn the_manifest_reads_as_the_pod_the_kubelet_would_run() {
        let plan = plan(MANIFEST, 1 << 30).unwrap();
        assert_eq!(plan.namespace, "oomwarden");
        assert!(plan.host_pid);
        assert_eq!(plan.priority, 2_000_001_000);
        assert_eq!(plan.score.qos_class, PodQos::Burstable);
        assert_eq!(plan.containers.len(), 1);
        let c = &plan.containers[0];
        assert!(c.privileged);
        assert_eq!(c.cpu_limit_milli, None);
        assert_eq!(cpu_shares(c.cpu_request_milli), 51);
        assert_eq!(c.memory_limit, Some(64 << 20));
        assert_eq!(plan.score.pod_memory_max_bytes, Some(64 << 20));
        assert_eq!(plan.score.containers[0].oom_score_adj, -997);
        assert!(c.env.contains(&(
            "NODE_NAME".to_owned(),
            EnvValue::Field("spec.nodeName".into())
        )));
        let config = c
            .mounts
            .iter()
            .find(|m| m.path == "/etc/oomwarden")
            .unwrap();
        assert!(config.read_only);
        match &plan.volumes[&config.volume] {
            Volume::ConfigMap { data, .. } => assert!(data.contains_key("oomwarden.yaml")),
            other => panic!("{other:?}"),
        }
        assert!(c.mounts.iter().any(|m| m.path == "/host/sys/fs/cgroup"));
    }

    #[test]
    fn a_field_the_driver_does_not_know_fails_and_is_named() {
        let changed = MANIFEST.replace(
            "      hostPID: true\n",
            "      hostPID: true\n      runtimeClassName: gvisor\n",
        );
        assert_ne!(changed, MANIFEST);
        let err = format!("{:#}", plan(&changed, 1 << 30).unwrap_err());
        assert!(err.contains("spec.template.spec.runtimeClassName"), "{err}");
        let changed = MANIFEST.replace(
            "          privileged: true\n",
            "          privileged: true\n          readOnlyRootFilesystem: true\n",
        );
        assert_ne!(changed, MANIFEST);
        let err = format!("{:#}", plan(&changed, 1 << 30).unwrap_err());
        assert!(
            err.contains("containers[0].securityContext.readOnlyRootFilesystem"),
            "{err}"
        );
    }

    #[test]
    fn the_kubelet_cpu_arithmetic() {
        assert_eq!(cpu_shares(0), 2);
        assert_eq!(cpu_shares(1000), 1024);
        assert_eq!(cpu_quota(None), 0);
        assert_eq!(cpu_quota(Some(50)), 5000);
    }
}
