//! The Events of one action record (pure): one on the victim Pod, one on the Node.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ObjectReference, PodCondition};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use oomwarden_expr::TriggerExpr;
use oomwarden_model::{ActionRecord, Outcome, RecordKind, TriggerContext};

/// `reportingController` of every Event (a qualified name, as the API requires).
pub const REPORTING_CONTROLLER: &str = "oomwarden.io/oomwarden";
/// `reason` of a kill's Events.
pub const REASON_KILLED: &str = "OOMWardenKilled";
/// `reason` of a dry-run decision's Events.
pub const REASON_WOULD_KILL: &str = "OOMWardenWouldKill";
/// `reason` of the Events of a pod a `terminate` stage ended (SIGTERM, exited in its grace).
pub const REASON_TERMINATED: &str = "OOMWardenTerminated";
/// `reason` of the Node Event of a `warn` stage.
pub const REASON_WARNING: &str = "OOMWardenWarning";
/// `reason` of the Node Event of a `taint` stage's taint.
pub const REASON_TAINTED: &str = "OOMWardenTainted";
/// `reason` of the Node Event of the taint for one workload killed again and again.
pub const REASON_REPEATED_KILLS: &str = "OOMWardenRepeatedKills";
/// `reason` of the Node Event of the taint removed.
pub const REASON_UNTAINTED: &str = "OOMWardenUntainted";
/// The taint oomwarden puts on its node (effect `NoSchedule`): new pods stay off a node
/// being squeezed (those that tolerate it still come).
pub const TAINT_KEY: &str = "oomwarden.io/memory-pressure";
/// The value of oomwarden's taint: what tells it from an administrator's taint with the same
/// key, which oomwarden never removes.
pub const TAINT_VALUE: &str = "oomwarden";
/// The node condition set with the taint.
pub const CONDITION_MEMORY_PRESSURE: &str = "OOMWardenMemoryPressure";

/// What to do to the node for a `tainted` or `untainted` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeUpdate {
    /// Taint (and condition `True`), or remove the taint (condition `False`).
    pub taint: bool,
    /// The condition's reason (`RepeatedKills`, `Stage`).
    pub reason: String,
    /// The condition's message.
    pub message: String,
    /// When (RFC 3339, seconds).
    pub time: String,
}

/// The node update a record asks for: a `tainted` or `untainted` record's.
pub fn node_update_for(record: &ActionRecord, reporter: &Reporter) -> Option<NodeUpdate> {
    let taint = match record.outcome {
        Outcome::Tainted => true,
        Outcome::Untainted => false,
        _ => return None,
    };
    let time = record.time.parse::<Timestamp>().ok()?;
    Some(NodeUpdate {
        taint,
        reason: match (&record.stage, &record.workload) {
            (Some(_), _) => "Stage",
            (None, Some(_)) => "RepeatedKills",
            (None, None) => "Restarted",
        }
        .to_owned(),
        message: cut(taint_note(record, reporter), NOTE_LIMIT),
        time: time.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    })
}

/// What a taint's record says: the stage that holds, or the workload killed again and again.
fn taint_note(record: &ActionRecord, reporter: &Reporter) -> String {
    let verb = if record.outcome == Outcome::Tainted {
        "tainted"
    } else {
        "removed the taint of"
    };
    let cause = match (&record.stage, &record.workload) {
        (Some(stage), _) => format!("stage {stage}"),
        (None, Some(w)) => format!(
            "workload {w} killed {} times in the last hour",
            record.workload_kills.unwrap_or(0)
        ),
        // Neither: the taint a daemon before this start put there, let go after its hold-down.
        (None, None) => {
            "its taint from before oomwarden restarted, which nothing holds any more".to_owned()
        }
    };
    format!(
        "oomwarden {verb} node {} ({TAINT_KEY}={TAINT_VALUE}:NoSchedule): {cause}; record {}",
        reporter.node, record.id
    )
}
/// The API server refuses a longer `note`.
pub const NOTE_LIMIT: usize = 1024;
/// The kubelet's annotations on an eviction Event (`pkg/kubelet/eviction/helpers.go`), put on
/// the Pod Event of a kill so that what reads the kubelet's evictions (VPA's OOM observer,
/// right-sizers) can read oomwarden's kills: the containers killed, by name, comma-separated…
pub const ANNOTATION_OFFENDING_CONTAINERS: &str = "offending_containers";
/// … each one's working set, in the same order, as apimachinery writes a byte quantity
/// (`1536Ki`) …
pub const ANNOTATION_OFFENDING_CONTAINERS_USAGE: &str = "offending_containers_usage";
/// … and the resource the node was short of: `memory`.
pub const ANNOTATION_STARVED_RESOURCE: &str = "starved_resource";

/// The pod condition a kill sets with `events.podCondition` (`pods/status`), as the kubelet
/// sets it on a pod it evicts (with reason `TerminationByKubelet`): what Job
/// `podFailurePolicy` rules and disruption tooling read.
pub const CONDITION_DISRUPTION_TARGET: &str = "DisruptionTarget";
/// The condition's `reason`.
pub const REASON_TERMINATION: &str = "TerminationByOOMWarden";

/// Events about cluster-scoped objects (the Node) go to this namespace, as client-go puts
/// them.
pub const NODE_EVENT_NAMESPACE: &str = "default";

/// One Event to create, in its namespace.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// Where it is created (`POST /apis/events.k8s.io/v1/namespaces/<namespace>/events`).
    pub namespace: String,
    /// The object.
    pub event: Event,
}

/// The `DisruptionTarget` condition to set on a killed pod: a strategic-merge patch of its
/// status (conditions merge by `type`, so the pod's other conditions stay).
#[derive(Debug, Clone, PartialEq)]
pub struct ConditionPatch {
    /// The pod's namespace …
    pub namespace: String,
    /// … and name.
    pub name: String,
    /// `{"metadata": {"uid": …}, "status": {"conditions": [ … ]}}`: the UID, when known,
    /// makes the API server refuse the patch for another pod of the same name (a StatefulSet's
    /// pod made again after the kill).
    pub patch: serde_json::Value,
}

/// Who sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reporter {
    /// The Node oomwarden runs on.
    pub node: String,
}

impl Reporter {
    /// `reportingInstance`: at most 128 characters, as the API requires.
    pub fn instance(&self) -> String {
        let mut s = format!("oomwarden-{}", self.node);
        s.truncate(floor_char_boundary(&s, 128));
        s
    }
}

/// The Events of `record`: for a kill (`killed`, `not-verified`) reason `OOMWardenKilled`, for
/// a dry run `OOMWardenWouldKill`, for a `terminate` stage's pod that exited
/// `OOMWardenTerminated`, each on the Pod (when its namespace and name are known) and on the
/// Node; for a `warn` stage `OOMWardenWarning` on the Node; none for anything else (the
/// kernel's kills, no victim, a failed kill).
pub fn events_for(record: &ActionRecord, reporter: &Reporter) -> Vec<NewEvent> {
    if record.kind != RecordKind::Oomwarden {
        return Vec::new();
    }
    let Some((reason, action, verb)) = wording(record) else {
        return Vec::new();
    };
    let Ok(time) = record.time.parse::<Timestamp>() else {
        return Vec::new();
    };
    let why = why(record);
    let pod = match (&record.namespace, &record.pod_name) {
        (Some(ns), Some(name)) => Some(ObjectReference {
            api_version: Some("v1".to_owned()),
            kind: Some("Pod".to_owned()),
            namespace: Some(ns.clone()),
            name: Some(name.clone()),
            uid: record.pod_uid.clone(),
            ..ObjectReference::default()
        }),
        _ => None,
    };
    let node = ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some("Node".to_owned()),
        name: Some(reporter.node.clone()),
        // As the kubelet refers to its Node in Events.
        uid: Some(reporter.node.clone()),
        ..ObjectReference::default()
    };
    let victim = match (&record.namespace, &record.pod_name, &record.pod_uid) {
        (Some(ns), Some(name), _) => format!("pod {ns}/{name}"),
        (_, _, Some(uid)) => format!("pod {uid}"),
        _ => format!("cgroup {}", record.victim.as_deref().unwrap_or("?")),
    };
    let stage = record.stage.as_deref().unwrap_or("?");
    let node_note = match record.outcome {
        Outcome::Warned => format!(
            "oomwarden stage {stage} holds on node {}: {why}",
            reporter.node
        ),
        Outcome::Tainted | Outcome::Untainted => taint_note(record, reporter),
        _ => format!("oomwarden {verb} {victim}: {why}"),
    };
    let event =
        |namespace: &str, name: String, regarding, related, note: String, annotations| NewEvent {
            namespace: namespace.to_owned(),
            event: Event {
                metadata: ObjectMeta {
                    name: Some(name),
                    namespace: Some(namespace.to_owned()),
                    annotations,
                    ..ObjectMeta::default()
                },
                event_time: Some(MicroTime(time)),
                reporting_controller: Some(REPORTING_CONTROLLER.to_owned()),
                reporting_instance: Some(reporter.instance()),
                action: Some(action.to_owned()),
                reason: Some(reason.to_owned()),
                type_: Some("Warning".to_owned()),
                note: Some(cut(note, NOTE_LIMIT)),
                regarding: Some(regarding),
                related,
                ..Event::default()
            },
        };
    let suffix = unique_suffix(record, time);
    let mut out = Vec::new();
    if let (Some(pod_ref), Some(ns), Some(name)) = (&pod, &record.namespace, &record.pod_name) {
        out.push(event(
            ns,
            object_name(name, &suffix),
            pod_ref.clone(),
            Some(node.clone()),
            format!("oomwarden {verb} this pod on node {}: {why}", reporter.node),
            // A dry run killed nothing: automation that counts OOMs must not count it.
            (reason == REASON_KILLED).then(|| eviction_annotations(record)),
        ));
    }
    out.push(event(
        NODE_EVENT_NAMESPACE,
        object_name(&reporter.node, &suffix),
        node,
        pod,
        node_note,
        None,
    ));
    out
}

/// The kubelet's eviction annotations for the containers a kill ended: those with a name and
/// a working set, in the record's order; `starved_resource` is `memory`. The kubelet writes
/// the three keys on every eviction Event, empty lists included, and so does this.
fn eviction_annotations(record: &ActionRecord) -> BTreeMap<String, String> {
    let (names, usages): (Vec<&str>, Vec<String>) = record
        .container_names
        .iter()
        .zip(&record.container_working_set_bytes)
        .filter_map(|(name, ws)| {
            // A comma would split one name in two for every reader of the list.
            let name = (!name.is_empty() && !name.contains(',')).then_some(name.as_str())?;
            Some((name, oomwarden_kube::binary_si((*ws)?)))
        })
        .unzip();
    BTreeMap::from([
        (ANNOTATION_OFFENDING_CONTAINERS.to_owned(), names.join(",")),
        (
            ANNOTATION_OFFENDING_CONTAINERS_USAGE.to_owned(),
            usages.join(","),
        ),
        (ANNOTATION_STARVED_RESOURCE.to_owned(), "memory".to_owned()),
    ])
}

/// The `DisruptionTarget` condition for a kill's pod (`killed`, `not-verified`, the pod's
/// namespace and name known); `None` for anything else (a dry run killed nothing).
pub fn condition_for(record: &ActionRecord, reporter: &Reporter) -> Option<ConditionPatch> {
    if record.kind != RecordKind::Oomwarden
        || !matches!(record.outcome, Outcome::Killed | Outcome::NotVerified)
    {
        return None;
    }
    let (namespace, name) = (record.namespace.as_ref()?, record.pod_name.as_ref()?);
    let time = record.time.parse::<Timestamp>().ok()?;
    let condition = PodCondition {
        type_: CONDITION_DISRUPTION_TARGET.to_owned(),
        status: "True".to_owned(),
        reason: Some(REASON_TERMINATION.to_owned()),
        message: Some(cut(
            format!(
                "oomwarden killed this pod on node {}: {}",
                reporter.node,
                why(record)
            ),
            NOTE_LIMIT,
        )),
        last_transition_time: Some(Time(time)),
        ..PodCondition::default()
    };
    let mut patch = serde_json::json!({ "status": { "conditions": [condition] } });
    if let (Some(uid), Some(object)) = (&record.pod_uid, patch.as_object_mut()) {
        object.insert("metadata".to_owned(), serde_json::json!({ "uid": uid }));
    }
    Some(ConditionPatch {
        namespace: namespace.clone(),
        name: name.clone(),
        patch,
    })
}

/// A record's Event `reason`, `action`, and the verb its note says; `None` when it makes no
/// Event.
fn wording(record: &ActionRecord) -> Option<(&'static str, &'static str, &'static str)> {
    Some(match record.outcome {
        Outcome::Killed | Outcome::NotVerified => (REASON_KILLED, "Kill", "killed"),
        Outcome::DryRun => (
            REASON_WOULD_KILL,
            "DryRunKill",
            "would have killed (dry run)",
        ),
        Outcome::Terminated => (
            REASON_TERMINATED,
            "Terminate",
            "terminated (SIGTERM; it exited within its grace)",
        ),
        Outcome::Warned => (REASON_WARNING, "Warn", "warns"),
        Outcome::Tainted if record.stage.is_none() => {
            (REASON_REPEATED_KILLS, "Taint", "tainted the node")
        }
        Outcome::Tainted => (REASON_TAINTED, "Taint", "tainted the node"),
        Outcome::Untainted => (REASON_UNTAINTED, "Untaint", "removed the node's taint"),
        // Nothing happened to a pod Kubernetes could be told of. Every outcome is named, so a
        // new one does not compile until it is decided here.
        // A cancelled termination's victim got SIGTERM and was then left as it was: its pod's
        // own Events (the container's exit, or none) say what became of it.
        Outcome::KillFailed | Outcome::NoEligibleCgroup | Outcome::Gone | Outcome::Cancelled => {
            return None;
        }
    })
}

/// The same for every attempt (a retry after a timeout that did create it gets 409, which is
/// success) and different for every record: the record's id and time.
fn unique_suffix(record: &ActionRecord, time: Timestamp) -> String {
    format!("oomwarden-{}-{:x}", record.id, time.as_nanosecond())
}

/// `<object>.<suffix>`, cut to the 253 characters a name may have (client-go's
/// `<name>.<hex time>` form).
fn object_name(object: &str, suffix: &str) -> String {
    let room = 253usize.saturating_sub(suffix.len() + 1);
    let head = object
        .get(..floor_char_boundary(object, room))
        .unwrap_or(object);
    let head = head.trim_end_matches(['-', '.']);
    format!("{head}.{suffix}")
}

/// The class, score, memory and the trigger's comparisons that held, with their values.
fn why(record: &ActionRecord) -> String {
    let mut parts = Vec::new();
    if let Some(class) = record.class {
        parts.push(format!("class {}", class.name()));
    }
    parts.push(format!(
        "score {}",
        oomwarden_model::format_number(record.score)
    ));
    if let Some(m) = record.memory_current_bytes {
        parts.push(format!("memory.current {} MiB", m >> 20));
    }
    let mut text = parts.join(", ");
    let held = record
        .trigger_expression
        .as_deref()
        .and_then(|t| TriggerExpr::compile(t).ok())
        .zip(TriggerContext::from_json(&record.trigger_context).ok())
        .map(|(expr, ctx)| {
            expr.evaluate_comparisons(&ctx)
                .into_iter()
                .filter(|c| c.holds == Some(true))
                .map(|c| {
                    let value = c.left.shown();
                    format!(
                        "{} = {value} {} {}",
                        shorten(&c.comparison.left, 80),
                        c.comparison.op,
                        c.comparison.right
                    )
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    if !held.is_empty() {
        text.push_str("; trigger: ");
        text.push_str(&held.join(", "));
    }
    if record.outcome == Outcome::NotVerified {
        text.push_str("; the cgroup was not empty within killTimeout");
    }
    text.push_str(&format!(
        "; record {} (oomwarden explain {})",
        record.id, record.id
    ));
    text
}

fn shorten(s: &str, max: usize) -> String {
    let one_line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.len() <= max {
        return one_line;
    }
    let cut_at = floor_char_boundary(&one_line, max.saturating_sub(1));
    format!("{}…", one_line.get(..cut_at).unwrap_or(""))
}

fn cut(mut s: String, max: usize) -> String {
    if s.len() > max {
        let at = floor_char_boundary(&s, max.saturating_sub('…'.len_utf8()));
        s.truncate(at);
        s.push('…');
    }
    s
}

/// The largest char boundary at or below `at`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    (0..=at.min(s.len()))
        .rev()
        .find(|i| s.is_char_boundary(*i))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use oomwarden_model::QosClass;

    use super::*;

    fn kill() -> ActionRecord {
        let mut r = ActionRecord::empty(
            RecordKind::Oomwarden,
            Outcome::Killed,
            "2026-11-29T15:31:44.102Z".to_owned(),
            1,
        );
        r.id = 12;
        r.victim = Some("/sys/fs/cgroup/kubepods/besteffort/poda1".to_owned());
        r.class = Some(QosClass::Besteffort);
        r.pod_uid = Some("a1".to_owned());
        r.namespace = Some("shop".to_owned());
        r.pod_name = Some("cart-6b8f-zt9wd".to_owned());
        r.score = 844_935_168.0;
        r.memory_current_bytes = Some(844_935_168);
        r.containers = vec!["c1".to_owned(), "c2".to_owned(), "c3".to_owned()];
        r.container_names = vec!["cart".to_owned(), "istio-proxy".to_owned(), String::new()];
        r.container_working_set_bytes = vec![Some(805_306_368), Some(39_628_800), Some(1 << 20)];
        r.trigger_expression =
            Some("memory_full_avg10 > 12.0 && time_since_trigger > duration(\"5s\")".to_owned());
        r.trigger_context = "{\"memory_full_avg10\":14.54}".to_owned();
        r
    }

    fn reporter() -> Reporter {
        Reporter {
            node: "worker-1".to_owned(),
        }
    }

    #[test]
    fn a_kill_makes_a_pod_event_and_a_node_event() {
        let e = events_for(&kill(), &reporter());
        assert_eq!(e.len(), 2);
        let pod = &e[0];
        assert_eq!(pod.namespace, "shop");
        let name = pod.event.metadata.name.as_deref().unwrap();
        assert!(name.starts_with("cart-6b8f-zt9wd.oomwarden-12-"), "{name}");
        assert!(oomwarden_kube::is_dns_subdomain(name), "{name}");
        assert_eq!(pod.event.reason.as_deref(), Some(REASON_KILLED));
        assert_eq!(pod.event.type_.as_deref(), Some("Warning"));
        assert_eq!(
            pod.event.regarding.as_ref().unwrap().kind.as_deref(),
            Some("Pod")
        );
        assert_eq!(
            pod.event.related.as_ref().unwrap().kind.as_deref(),
            Some("Node")
        );
        let note = pod.event.note.as_deref().unwrap();
        assert!(note.contains("class Besteffort, score 844935168"), "{note}");
        assert!(note.contains("memory_full_avg10 = 14.54 > 12.0"), "{note}");
        assert!(
            note.contains("time_since_trigger = never > duration(\"5s\")"),
            "{note}"
        );
        assert!(note.contains("record 12"), "{note}");
        let node = &e[1];
        assert_eq!(node.namespace, NODE_EVENT_NAMESPACE);
        assert_eq!(
            node.event.regarding.as_ref().unwrap().name.as_deref(),
            Some("worker-1")
        );
        assert!(
            node.event
                .note
                .as_deref()
                .unwrap()
                .starts_with("oomwarden killed pod shop/cart-6b8f-zt9wd: ")
        );
        assert!(oomwarden_kube::is_qualified_name(REPORTING_CONTROLLER));
    }

    #[test]
    fn a_kills_pod_event_carries_the_kubelets_eviction_annotations() {
        let e = events_for(&kill(), &reporter());
        let annotations = e[0].event.metadata.annotations.as_ref().unwrap();
        // The unnamed third container cannot be listed: a reader matches names to containers.
        assert_eq!(
            annotations,
            &BTreeMap::from([
                (
                    "offending_containers".to_owned(),
                    "cart,istio-proxy".to_owned()
                ),
                (
                    "offending_containers_usage".to_owned(),
                    "768Mi,38700Ki".to_owned()
                ),
                ("starved_resource".to_owned(), "memory".to_owned()),
            ])
        );
        assert!(e[1].event.metadata.annotations.is_none(), "not on the Node");
        let mut unread = kill();
        unread.container_working_set_bytes = vec![None, Some(1024), None];
        let e = events_for(&unread, &reporter());
        let a = e[0].event.metadata.annotations.as_ref().unwrap();
        assert_eq!(a["offending_containers"], "istio-proxy");
        assert_eq!(a["offending_containers_usage"], "1Ki");
        let mut dry = kill();
        dry.outcome = Outcome::DryRun;
        assert!(
            events_for(&dry, &reporter())[0]
                .event
                .metadata
                .annotations
                .is_none(),
            "a dry run killed nothing"
        );
    }

    #[test]
    fn a_kill_sets_the_disruption_target_condition_of_its_pod_only() {
        let c = condition_for(&kill(), &reporter()).unwrap();
        assert_eq!(
            (c.namespace.as_str(), c.name.as_str()),
            ("shop", "cart-6b8f-zt9wd")
        );
        assert_eq!(c.patch["metadata"]["uid"], "a1");
        let condition = &c.patch["status"]["conditions"][0];
        assert_eq!(condition["type"], "DisruptionTarget");
        assert_eq!(condition["status"], "True");
        assert_eq!(condition["reason"], "TerminationByOOMWarden");
        assert_eq!(condition["lastTransitionTime"], "2026-11-29T15:31:44Z");
        let message = condition["message"].as_str().unwrap();
        assert!(
            message.starts_with("oomwarden killed this pod on node worker-1: class Besteffort"),
            "{message}"
        );
        let mut r = kill();
        r.pod_uid = None;
        let c = condition_for(&r, &reporter()).unwrap();
        assert!(c.patch.get("metadata").is_none());
        for outcome in [Outcome::DryRun, Outcome::KillFailed, Outcome::Gone] {
            r.outcome = outcome;
            assert!(condition_for(&r, &reporter()).is_none(), "{outcome:?}");
        }
        let mut unnamed = kill();
        unnamed.pod_name = None;
        assert!(condition_for(&unnamed, &reporter()).is_none());
    }

    #[test]
    fn a_dry_run_would_kill_and_other_records_make_none() {
        let mut r = kill();
        r.outcome = Outcome::DryRun;
        let e = events_for(&r, &reporter());
        assert_eq!(e[0].event.reason.as_deref(), Some(REASON_WOULD_KILL));
        for outcome in [
            Outcome::KillFailed,
            Outcome::Gone,
            Outcome::NoEligibleCgroup,
        ] {
            r.outcome = outcome;
            assert!(events_for(&r, &reporter()).is_empty(), "{outcome:?}");
        }
        let mut k = kill();
        k.kind = RecordKind::KernelOom;
        assert!(events_for(&k, &reporter()).is_empty());
    }

    #[test]
    fn an_unnamed_pod_gets_the_node_event_only() {
        let mut r = kill();
        r.namespace = None;
        r.pod_name = None;
        let e = events_for(&r, &reporter());
        assert_eq!(e.len(), 1);
        assert!(
            e[0].event
                .note
                .as_deref()
                .unwrap()
                .starts_with("oomwarden killed pod a1: ")
        );
        assert!(e[0].event.related.is_none());
    }

    #[test]
    fn names_and_notes_stay_within_the_apis_limits() {
        let mut r = kill();
        r.pod_name = Some(format!("{}-x", "a".repeat(251)));
        r.trigger_expression = Some(
            (0..40)
                .map(|i| format!("memory_full_avg10 > {i}.0"))
                .collect::<Vec<_>>()
                .join(" && "),
        );
        let long = Reporter {
            node: "n".repeat(200),
        };
        for e in events_for(&r, &long) {
            let name = e.event.metadata.name.as_deref().unwrap();
            assert!(oomwarden_kube::is_dns_subdomain(name), "{name}");
            assert!(e.event.note.as_deref().unwrap().len() <= NOTE_LIMIT);
            assert!(e.event.reporting_instance.as_deref().unwrap().len() <= 128);
        }
    }
}
