//! Prometheus/OpenMetrics metrics of the OOM handler, and the HTTP endpoint serving them.
//!
//! Names follow the Prometheus conventions: `oomwarden_` prefix, base units (seconds, bytes,
//! ratios), `_total` counters. Labels are classes, outcomes and expression kinds, never pod
//! names or command lines.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use oomwarden_model::{
    ActionRecord, OomConstraint, Outcome, PerClass, PsiKind, PsiSpan, QosClass, Scalar,
    TriggerContext,
};
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// Writes a label value that is one of a fixed set of names.
fn label(encoder: &mut LabelValueEncoder<'_>, name: &str) -> Result<(), std::fmt::Error> {
    std::fmt::Write::write_str(encoder, name)
}

/// A label value from outside (a namespace the runtime named, a build's commit), escaped as
/// the exposition format says (`\\`, `\"`, `\n`): prometheus-client writes label values
/// as they are, and a namespace holding a quote and a newline injected a series and broke the
/// whole scrape (found by the fault suite).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct LabelText(pub String);

impl EncodeLabelValue for LabelText {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        use std::fmt::Write;
        for c in self.0.chars() {
            match c {
                '\\' => encoder.write_str("\\\\")?,
                '"' => encoder.write_str("\\\"")?,
                '\n' => encoder.write_str("\\n")?,
                c => encoder.write_char(c)?,
            }
        }
        Ok(())
    }
}

/// A class as a label value: its name as in expressions (`Besteffort` … `System`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Class(pub QosClass);

impl EncodeLabelValue for Class {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        label(encoder, self.0.name())
    }
}

/// A PSI kind as a label value (`some`, `full`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Kind(pub PsiKind);

impl EncodeLabelValue for Kind {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        label(encoder, self.0.name())
    }
}

/// An action's outcome as a label value (`killed`, `kill-failed`, …, as in records).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OutcomeLabel(pub Outcome);

impl EncodeLabelValue for OutcomeLabel {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        label(encoder, self.0.name())
    }
}

/// `class` label.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ClassLabel {
    /// The class.
    pub class: Class,
}

/// `class` and PSI `kind` (`some`, `full`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct PressureLabels {
    /// The class.
    pub class: Class,
    /// `some` or `full`.
    pub kind: Kind,
}

/// A kill's class and outcome.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct KillLabels {
    /// The victim's class.
    pub class: Class,
    /// Its outcome.
    pub outcome: OutcomeLabel,
    /// The victim pod's namespace (`""` when it is no pod, or its pod is unknown).
    pub namespace: LabelText,
}

/// A response stage's firing.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct StageLabels {
    /// The stage's name.
    pub stage: LabelText,
    /// What came of it (`warned`, `terminated`, or a kill's outcome after its grace).
    pub outcome: OutcomeLabel,
}

/// Which expression failed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelValue)]
pub enum Expression {
    /// The trigger expression.
    Trigger,
    /// The ranking expression.
    Ranking,
}

/// `expression` label.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ExpressionLabel {
    /// `Trigger` or `Ranking`.
    pub expression: Expression,
}

/// A resource bound (docs/operations.md, "Bounds").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bound {
    /// Connections to the metrics endpoint: the oldest closed for a new one.
    MetricsConnections,
    /// A metrics request's head over 16 KiB.
    MetricsRequestHead,
    /// A metrics request's head not sent within 5 s.
    MetricsHeaderTimeout,
    /// A metrics connection over 10 s.
    MetricsConnectionTime,
    /// Clients of the action API: the oldest closed for a new one.
    ApiConnections,
    /// An API client out of time.
    ApiClientTime,
    /// PIDs not listed in a record.
    RecordPids,
    /// Command lines not read for a record.
    RecordProcesses,
    /// Container IDs not listed in a record.
    RecordContainers,
    /// A command line cut in a record.
    CmdlineBytes,
    /// The action history rewritten with its newest records.
    History,
    /// A post-kill hook skipped: as many were running as may.
    HooksInFlight,
    /// The walk for a victim's PIDs stopped at its bound (4,096 cgroups, 64 levels).
    VictimWalk,
    /// A pod with more child cgroups than a kill by containers takes, killed whole.
    KillParts,
}

impl Bound {
    /// Every bound.
    pub const ALL: [Bound; 14] = [
        Bound::MetricsConnections,
        Bound::MetricsRequestHead,
        Bound::MetricsHeaderTimeout,
        Bound::MetricsConnectionTime,
        Bound::ApiConnections,
        Bound::ApiClientTime,
        Bound::RecordPids,
        Bound::RecordProcesses,
        Bound::RecordContainers,
        Bound::CmdlineBytes,
        Bound::History,
        Bound::HooksInFlight,
        Bound::VictimWalk,
        Bound::KillParts,
    ];

    /// Its label value and log name.
    pub fn name(self) -> &'static str {
        match self {
            Bound::MetricsConnections => "metrics_connections",
            Bound::MetricsRequestHead => "metrics_request_head",
            Bound::MetricsHeaderTimeout => "metrics_header_timeout",
            Bound::MetricsConnectionTime => "metrics_connection_time",
            Bound::ApiConnections => "api_connections",
            Bound::ApiClientTime => "api_client_time",
            Bound::RecordPids => "record_pids",
            Bound::RecordProcesses => "record_processes",
            Bound::RecordContainers => "record_containers",
            Bound::CmdlineBytes => "cmdline_bytes",
            Bound::History => "history",
            Bound::HooksInFlight => "hooks_in_flight",
            Bound::VictimWalk => "victim_walk",
            Bound::KillParts => "kill_parts",
        }
    }
}

impl EncodeLabelValue for Bound {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        label(encoder, self.name())
    }
}

/// `bound` label: which resource bound was hit.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct BoundLabel {
    /// The bound.
    pub bound: Bound,
}

/// How a reload ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReloadResult {
    /// Applied.
    Success,
    /// Rejected; the running configuration stays.
    Failure,
}

impl EncodeLabelValue for ReloadResult {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        label(
            encoder,
            match self {
                ReloadResult::Success => "success",
                ReloadResult::Failure => "failure",
            },
        )
    }
}

/// `result` label of reloads.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ResultLabel {
    /// `success` or `failure`.
    pub result: ReloadResult,
}

/// A kernel OOM kill's constraint as a label value (`memcg`, `global`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConstraintLabel(pub OomConstraint);

impl EncodeLabelValue for ConstraintLabel {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        label(encoder, self.0.name())
    }
}

/// `constraint` label of kernel OOM kills.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct KernelKillLabels {
    /// `memcg` or `global`.
    pub constraint: ConstraintLabel,
}

/// `reason` label of the kernel-OOM watcher's problems (`open`, `read`, `lost`,
/// `incomplete`, `dropped`, `unparsed`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct WatchProblemLabels {
    /// The problem's short name.
    pub reason: &'static str,
}

/// `id` and `severity` labels of `oomwarden doctor`'s findings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct FindingLabels {
    /// The finding's id (`psi-missing`, `other-killer`, …).
    pub id: &'static str,
    /// `info`, `warning` or `error`.
    pub severity: &'static str,
}

/// A container's labels on its usage series: who it is, and the workload that made its pod
/// (as kill records name it), so a fleet's Prometheus aggregates a workload over its nodes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ContainerLabels {
    /// The pod's namespace (empty when the node does not know it).
    pub namespace: LabelText,
    /// The pod's name (its UID when the node does not know it).
    pub pod: LabelText,
    /// The container's name (its ID when the node does not know it).
    pub container: LabelText,
    /// The workload's kind (`Deployment`, `StatefulSet`, `DaemonSet`, `Job`, `Pod`).
    pub workload_kind: LabelText,
    /// The workload's name.
    pub workload: LabelText,
}

/// A container's usage series as exported: who, and its recommendation.
#[derive(Debug, Clone)]
pub struct ContainerUsage {
    /// Its pod (empty when the node does not know it).
    pub pod: oomwarden_usage::PodRef,
    /// Its pod's UID.
    pub pod_uid: String,
    /// Its name (its ID when the node does not know it).
    pub container: String,
    /// Its peak and recommendation.
    pub recommendation: oomwarden_usage::Recommendation,
}

/// `reason` label of the usage history's dropped series.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct DropLabel {
    /// `evicted` (the series limit) or `expired` (no reading within the history's span).
    pub reason: &'static str,
}

/// `version` label of the build info.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct VersionLabel {
    /// The crate version.
    pub version: LabelText,
    /// The commit it was built from (`unknown` when the build could not tell).
    pub commit: LabelText,
}

type FloatGauge = Gauge<f64, AtomicU64>;

/// Every metric, registered. Cheap to update from the cycle (atomics); shared with the HTTP
/// thread through an `Arc`.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// The endpoint's full connections said once.
    said_connections_full: std::sync::atomic::AtomicBool,
    /// Whether the loop advances (`/healthz`, `/readyz`).
    health: crate::health::Health,
    /// Per class (`QosClass::index`), per kind (some, full): handles created once, so that a
    /// cycle updates atomics without building label sets or locking the families.
    class_pressure: [[FloatGauge; 2]; 5],
    class_stalled: [[FloatGauge; 2]; 5],
    class_memory: [FloatGauge; 5],
    node_available: FloatGauge,
    node_total: FloatGauge,
    evaluations: Counter,
    firings: Counter,
    kills: Family<KillLabels, Counter>,
    stage_actions: Family<StageLabels, Counter>,
    no_victim: Counter,
    verification: Histogram,
    cycle: Histogram,
    eval_errors: Family<ExpressionLabel, Counter>,
    collection_errors: Counter,
    reloads: Family<ResultLabel, Counter>,
    pressure_events: Counter,
    bounds: Family<BoundLabel, Counter>,
    http_connections: Gauge,
    runtime_up: Gauge,
    runtime_failures: Counter,
    pods_known: Gauge,
    runtime_refresh: FloatGauge,
    identity_age: FloatGauge,
    kernel_kills: Family<KernelKillLabels, Counter>,
    kernel_watch_problems: Family<WatchProblemLabels, Counter>,
    sample_interval: FloatGauge,
    dry_run: Gauge,
    events_sent: Counter,
    events_dropped: Family<WatchProblemLabels, Counter>,
    events_retries: Counter,
    pod_conditions_set: Counter,
    pod_conditions_dropped: Family<WatchProblemLabels, Counter>,
    node_updates: Counter,
    node_updates_dropped: Family<WatchProblemLabels, Counter>,
    doctor_findings: Family<FindingLabels, Gauge>,
    usage_series: Gauge,
    usage_dropped: Family<DropLabel, Counter>,
    usage_save_failures: Counter,
    container_peak: Family<ContainerLabels, Gauge>,
    container_request: Family<ContainerLabels, Gauge>,
    container_limit: Family<ContainerLabels, Gauge>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// All metrics, at zero, with `oomwarden_build_info` set.
    #[allow(
        clippy::too_many_lines,
        reason = "one registration per metric, in the order of docs/metrics.md; splitting it would scatter the list"
    )]
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("oomwarden");
        let class_pressure = Family::<PressureLabels, FloatGauge>::default();
        registry.register_with_unit(
            "class_memory_pressure_avg10",
            "PSI memory pressure of each class over the last 10 s (some or full), summed over its cgroups as the trigger sees it",
            Unit::Other("ratio".to_owned()),
            class_pressure.clone(),
        );
        let class_stalled = Family::<PressureLabels, FloatGauge>::default();
        registry.register_with_unit(
            "class_memory_pressure_stalled",
            "PSI memory stall time of each class since its cgroups were created (some or full), summed; drops when a cgroup goes away",
            Unit::Seconds,
            class_stalled.clone(),
        );
        let class_memory = Family::<ClassLabel, FloatGauge>::default();
        registry.register_with_unit(
            "class_memory_usage",
            "memory.current of each class, summed over its cgroups",
            Unit::Bytes,
            class_memory.clone(),
        );
        let node_available = FloatGauge::default();
        registry.register_with_unit(
            "node_memory_available",
            "MemAvailable of /proc/meminfo",
            Unit::Bytes,
            node_available.clone(),
        );
        let node_total = FloatGauge::default();
        registry.register_with_unit(
            "node_memory_total",
            "MemTotal of /proc/meminfo",
            Unit::Bytes,
            node_total.clone(),
        );
        let evaluations = Counter::default();
        registry.register(
            "trigger_evaluations",
            "Times the trigger expression was evaluated",
            evaluations.clone(),
        );
        let firings = Counter::default();
        registry.register(
            "trigger_firings",
            "Times the trigger expression was true",
            firings.clone(),
        );
        let kills = Family::<KillLabels, Counter>::default();
        registry.register(
            "kills",
            "Victims chosen, by class, outcome (killed, kill-failed, not-verified, dry-run, gone) and the pod's namespace (empty when unknown)",
            kills.clone(),
        );
        let stage_actions = Family::<StageLabels, Counter>::default();
        registry.register(
            "stage_actions",
            "What the response stages (OOMWardenConfig.stages) did, by stage and outcome (warned, terminated, or the kill at the end of a termination's grace)",
            stage_actions.clone(),
        );
        let no_victim = Counter::default();
        registry.register(
            "triggers_without_victim",
            "Firings that found no eligible cgroup",
            no_victim.clone(),
        );
        let verification = Histogram::new([
            0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
        ]);
        registry.register_with_unit(
            "kill_verification",
            "Time from the kill to the victim cgroup found empty",
            Unit::Seconds,
            verification.clone(),
        );
        let cycle = Histogram::new([
            0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0,
        ]);
        registry.register_with_unit(
            "cycle_duration",
            "Time one sample-decide(-kill) cycle took",
            Unit::Seconds,
            cycle.clone(),
        );
        let eval_errors = Family::<ExpressionLabel, Counter>::default();
        registry.register(
            "evaluation_errors",
            "Expression evaluations that failed (Trigger: the cycle is skipped; Ranking: that cgroup is not a candidate)",
            eval_errors.clone(),
        );
        let collection_errors = Counter::default();
        registry.register(
            "collection_errors",
            "cgroup or proc files that could not be read or parsed (a vanished cgroup is not an error)",
            collection_errors.clone(),
        );
        let reloads = Family::<ResultLabel, Counter>::default();
        registry.register(
            "config_reloads",
            "Configuration reloads on SIGHUP, by result (success, failure)",
            reloads.clone(),
        );
        let pressure_events = Counter::default();
        registry.register(
            "pressure_events",
            "Cycles run at once because a kernel PSI trigger fired (psiTriggers)",
            pressure_events.clone(),
        );
        let bounds = Family::<BoundLabel, Counter>::default();
        registry.register(
            "bound_hits",
            "Times a resource bound was hit (a connection refused, a header too large, a command line cut …), by bound",
            bounds.clone(),
        );
        let http_connections = Gauge::default();
        registry.register(
            "metrics_connections",
            "Connections to the metrics endpoint being served now (at most 32)",
            http_connections.clone(),
        );
        let runtime_up = Gauge::default();
        registry.register(
            "container_runtime_up",
            "1 when the container runtime answered the last identity refresh, 0 when pods are named from the pod-log directories or their cgroup paths",
            runtime_up.clone(),
        );
        let runtime_failures = Counter::default();
        registry.register(
            "container_runtime_failures",
            "Identity refreshes where the container runtime did not answer (unreachable, slow or failing)",
            runtime_failures.clone(),
        );
        let pods_known = Gauge::default();
        registry.register(
            "pods_known",
            "Pods whose namespace and name are known (from the runtime or the pod-log directories)",
            pods_known.clone(),
        );
        let runtime_refresh = FloatGauge::default();
        registry.register_with_unit(
            "container_runtime_refresh",
            "How long the last identity refresh the container runtime answered took (ListPodSandbox, ListContainers and their decoding); 0 before the first",
            Unit::Seconds,
            runtime_refresh.clone(),
        );
        let identity_age = FloatGauge::default();
        registry.register_with_unit(
            "pod_identity_age",
            "How old the pod identities in use are: the time since the container runtime last answered (their labels are kept while it does not); 0 before its first answer",
            Unit::Seconds,
            identity_age.clone(),
        );
        let kernel_kills = Family::<KernelKillLabels, Counter>::default();
        registry.register(
            "kernel_oom_kills",
            "OOM kills done by the kernel itself (not by oomwarden), by constraint (memcg: a cgroup's limit; global: the node ran out), from the kernel log or the memory.events counters",
            kernel_kills.clone(),
        );
        let kernel_watch_problems = Family::<WatchProblemLabels, Counter>::default();
        for reason in oomwarden_kernelwatch::kmsg::Problem::REASONS {
            kernel_watch_problems
                .get_or_create(&WatchProblemLabels { reason })
                .inc_by(0);
        }
        registry.register(
            "kernel_oom_watch_problems",
            "Problems of the kernel-OOM watcher, by reason (open, read, lost, incomplete, dropped); each is logged once",
            kernel_watch_problems.clone(),
        );
        let dry_run = Gauge::default();
        registry.register(
            "dry_run",
            "1 when the configuration in force is a dry run (dryRun: decisions are recorded, nothing is killed), else 0",
            dry_run.clone(),
        );
        let events_sent = Counter::default();
        registry.register(
            "events_sent",
            "Kubernetes Events created for oomwarden's kills and dry runs (events.enabled)",
            events_sent.clone(),
        );
        let events_dropped = dropped_family(
            &mut registry,
            "events_dropped",
            "Kubernetes Events not created, by reason (queue-full, rejected, failed, unconfigured); each reason is logged once",
        );
        let pod_conditions_set = Counter::default();
        registry.register(
            "pod_conditions_set",
            "Killed pods given the DisruptionTarget condition (events.podCondition)",
            pod_conditions_set.clone(),
        );
        let pod_conditions_dropped = dropped_family(
            &mut registry,
            "pod_conditions_dropped",
            "Killed pods' DisruptionTarget conditions not set, by reason (queue-full, rejected, failed, unconfigured); each reason is logged once",
        );
        let node_updates = Counter::default();
        registry.register(
            "node_updates",
            "Node taint and OOMWardenMemoryPressure condition updates made (taint stages, repeated kills)",
            node_updates.clone(),
        );
        let node_updates_dropped = dropped_family(
            &mut registry,
            "node_updates_dropped",
            "Node taint and condition updates not made, by reason (queue-full, rejected, failed, unconfigured); each reason is logged once",
        );
        let events_retries = Counter::default();
        registry.register(
            "events_retries",
            "Kubernetes Event requests sent again after a failure (unreachable, a deadline, 429 or 5xx)",
            events_retries.clone(),
        );
        let sample_interval = FloatGauge::default();
        registry.register_with_unit(
            "sample_interval",
            "The configured sampleInterval: cycles per second times this is the share of ticks that ran (below 1: cycles overran)",
            Unit::Seconds,
            sample_interval.clone(),
        );
        let doctor_findings = Family::<FindingLabels, Gauge>::default();
        registry.register(
            "doctor_findings",
            "oomwarden doctor's findings about this node at the daemon's start, by id and severity: how many of each (docs/operations.md, Doctor)",
            doctor_findings.clone(),
        );
        let usage_series = Gauge::default();
        registry.register(
            "usage_history_series",
            "Pod and container series the usage history keeps (usageHistory; oomwarden rightsize)",
            usage_series.clone(),
        );
        let usage_dropped = Family::<DropLabel, Counter>::default();
        registry.register(
            "usage_history_series_dropped",
            "Usage history series dropped: evicted (the maxSeries bound, the longest unseen first) or expired (no reading within the history's span)",
            usage_dropped.clone(),
        );
        let usage_save_failures = Counter::default();
        registry.register(
            "usage_history_save_failures",
            "Saves of <stateDir>/usage.json that failed (a full disk): the last saved file stays",
            usage_save_failures.clone(),
        );
        let container_peak = Family::<ContainerLabels, Gauge>::default();
        registry.register_with_unit(
            "container_memory_peak",
            "The highest memory.peak of the container over the history kept (spikes between readings included), for the containers read last, at most 1000",
            Unit::Bytes,
            container_peak.clone(),
        );
        let container_request = Family::<ContainerLabels, Gauge>::default();
        registry.register_with_unit(
            "container_memory_recommended_request",
            "oomwarden rightsize's recommended memory request of the container (a high percentile of its unreclaimable usage plus a margin)",
            Unit::Bytes,
            container_request.clone(),
        );
        let container_limit = Family::<ContainerLabels, Gauge>::default();
        registry.register_with_unit(
            "container_memory_recommended_limit",
            "oomwarden rightsize's recommended memory limit of the container (its true peak plus a margin, raised after OOM kills)",
            Unit::Bytes,
            container_limit.clone(),
        );
        for reason in ["evicted", "expired"] {
            drop(usage_dropped.get_or_create(&DropLabel { reason }));
        }
        let build = Family::<VersionLabel, Gauge>::default();
        build
            .get_or_create(&VersionLabel {
                version: LabelText(env!("CARGO_PKG_VERSION").to_owned()),
                commit: LabelText(oomwarden_node::COMMIT.to_owned()),
            })
            .set(1);
        registry.register(
            "build_info",
            "oomwarden's version and the commit it was built from, as labels",
            build,
        );
        // Known label values start at 0, so that rates and alerts see the series from the
        // start rather than from their first event.
        for expression in [Expression::Trigger, Expression::Ranking] {
            drop(eval_errors.get_or_create(&ExpressionLabel { expression }));
        }
        for result in [ReloadResult::Success, ReloadResult::Failure] {
            drop(reloads.get_or_create(&ResultLabel { result }));
        }
        for constraint in [OomConstraint::Memcg, OomConstraint::Global] {
            drop(kernel_kills.get_or_create(&KernelKillLabels {
                constraint: ConstraintLabel(constraint),
            }));
        }
        for class in QosClass::ALL {
            for outcome in Outcome::ALL.into_iter().filter(|o| counted_as_kill(*o)) {
                drop(kills.get_or_create(&KillLabels {
                    class: Class(class),
                    outcome: OutcomeLabel(outcome),
                    namespace: LabelText::default(),
                }));
            }
        }
        let per_kind = |family: &Family<PressureLabels, FloatGauge>, class: QosClass| {
            PsiKind::ALL.map(|kind| {
                family
                    .get_or_create(&PressureLabels {
                        class: Class(class),
                        kind: Kind(kind),
                    })
                    .clone()
            })
        };
        let class_pressure = QosClass::ALL.map(|c| per_kind(&class_pressure, c));
        let class_stalled = QosClass::ALL.map(|c| per_kind(&class_stalled, c));
        let class_memory = QosClass::ALL.map(|c| {
            class_memory
                .get_or_create(&ClassLabel { class: Class(c) })
                .clone()
        });
        Metrics {
            said_connections_full: std::sync::atomic::AtomicBool::new(false),
            health: crate::health::Health::default(),
            registry,
            class_pressure,
            class_stalled,
            class_memory,
            node_available,
            node_total,
            evaluations,
            firings,
            kills,
            stage_actions,
            no_victim,
            verification,
            cycle,
            eval_errors,
            collection_errors,
            reloads,
            pressure_events,
            bounds,
            http_connections,
            runtime_up,
            runtime_failures,
            pods_known,
            runtime_refresh,
            identity_age,
            kernel_kills,
            kernel_watch_problems,
            sample_interval,
            dry_run,
            events_sent,
            events_dropped,
            events_retries,
            pod_conditions_set,
            pod_conditions_dropped,
            node_updates,
            node_updates_dropped,
            doctor_findings,
            usage_series,
            usage_dropped,
            usage_save_failures,
            container_peak,
            container_request,
            container_limit,
        }
    }

    /// The usage history's size after a reading, and the series it dropped.
    pub fn usage_history(&self, series: usize, evicted: usize, expired: usize) {
        self.usage_series
            .set(i64::try_from(series).unwrap_or(i64::MAX));
        for (reason, n) in [("evicted", evicted), ("expired", expired)] {
            self.usage_dropped
                .get_or_create(&DropLabel { reason })
                .inc_by(u64::try_from(n).unwrap_or(u64::MAX));
        }
    }

    /// Counts a failed save of the usage history.
    pub fn usage_save_failed(&self) {
        self.usage_save_failures.inc();
    }

    /// The containers' peaks and recommendations, replacing the last (a container gone is
    /// gone from the exposition).
    pub fn container_usage(&self, rows: &[ContainerUsage]) {
        for family in [
            &self.container_peak,
            &self.container_request,
            &self.container_limit,
        ] {
            family.clear();
        }
        let gauge = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        for ContainerUsage {
            pod,
            pod_uid: uid,
            container,
            recommendation: r,
        } in rows
        {
            let labels = ContainerLabels {
                namespace: LabelText(pod.namespace.clone()),
                pod: LabelText(if pod.name.is_empty() {
                    uid.clone()
                } else {
                    pod.name.clone()
                }),
                container: LabelText(container.clone()),
                workload_kind: LabelText(pod.owner_kind.clone()),
                workload: LabelText(pod.owner_name.clone()),
            };
            self.container_peak
                .get_or_create(&labels)
                .set(gauge(r.seen.peak_bytes));
            self.container_request
                .get_or_create(&labels)
                .set(gauge(r.request_bytes));
            self.container_limit
                .get_or_create(&labels)
                .set(gauge(r.limit_bytes));
        }
    }

    /// The doctor's findings at start: one series per (id, severity), its value how many.
    pub fn doctor_findings(&self, findings: &[(&'static str, &'static str)]) {
        for (id, severity) in findings {
            self.doctor_findings
                .get_or_create(&FindingLabels { id, severity })
                .inc();
        }
    }

    /// Counts a bound that was hit; the caller logs the first time.
    pub fn bound_hit(&self, bound: Bound) {
        self.bound_hits_by(bound, 1);
    }

    /// Counts `times` hits of a bound at once.
    pub fn bound_hits_by(&self, bound: Bound, times: u64) {
        self.bounds
            .get_or_create(&BoundLabel { bound })
            .inc_by(times);
    }

    /// How many times `bound` was hit.
    pub fn bound_hits(&self, bound: Bound) -> u64 {
        self.bounds.get_or_create(&BoundLabel { bound }).get()
    }

    /// Connections to the metrics endpoint being served now.
    pub fn metrics_connections(&self) -> i64 {
        self.http_connections.get()
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// Records the per-class and node gauges of a cycle's context.
    pub fn observe_context(&self, ctx: &TriggerContext) {
        for (i, class) in QosClass::ALL.into_iter().enumerate() {
            for (j, kind) in [PsiKind::Some, PsiKind::Full].into_iter().enumerate() {
                let avg10 = ctx
                    .class_map(PerClass::psi(false, kind, PsiSpan::Avg10))
                    .get(class);
                let total = ctx
                    .class_map(PerClass::psi(false, kind, PsiSpan::Total))
                    .get(class);
                if let Some(g) = self.class_pressure.get(i).and_then(|k| k.get(j)) {
                    g.set(avg10 / 100.0);
                }
                if let Some(g) = self.class_stalled.get(i).and_then(|k| k.get(j)) {
                    g.set(total / 1e6);
                }
            }
            if let Some(g) = self.class_memory.get(i) {
                g.set(ctx.class_map(PerClass::QosMemoryCurrent).get(class));
            }
        }
        self.node_available
            .set(ctx.get(Scalar::NodeMemoryAvailable));
        self.node_total.set(ctx.get(Scalar::NodeMemoryTotal));
    }

    /// A trigger evaluation, fired or not (`None`: it failed).
    pub fn evaluated(&self, fired: Option<bool>) {
        self.evaluations.inc();
        match fired {
            Some(true) => {
                self.firings.inc();
            }
            Some(false) => {}
            None => {
                self.eval_errors
                    .get_or_create(&ExpressionLabel {
                        expression: Expression::Trigger,
                    })
                    .inc();
            }
        }
    }

    /// Ranking evaluations that failed.
    pub fn ranking_errors(&self, n: u64) {
        if n > 0 {
            self.eval_errors
                .get_or_create(&ExpressionLabel {
                    expression: Expression::Ranking,
                })
                .inc_by(n);
        }
    }

    /// Files that could not be read.
    pub fn collection_errors(&self, n: u64) {
        self.collection_errors.inc_by(n);
    }

    /// A victim's outcome, its pod's namespace (`""` when unknown), and how long its kill
    /// took to verify (seconds).
    /// A triggered cycle's record: a kill attempt by class, outcome and namespace, or a
    /// firing with no victim.
    pub fn action(&self, record: &ActionRecord) {
        if let Some(stage) = &record.stage {
            self.stage_actions
                .get_or_create(&StageLabels {
                    stage: LabelText(stage.clone()),
                    outcome: OutcomeLabel(record.outcome),
                })
                .inc();
        }
        match record.class {
            Some(class) if counted_as_kill(record.outcome) => self.killed(
                class,
                record.outcome,
                record.namespace.as_deref().unwrap_or(""),
                record.kill_duration_ms.map(|ms| ms / 1000.0),
            ),
            _ if record.outcome == Outcome::NoEligibleCgroup => self.no_victim(),
            _ => {}
        }
    }

    /// A kill attempt (see [`Metrics::action`]).
    pub fn killed(
        &self,
        class: QosClass,
        outcome: Outcome,
        namespace: &str,
        verification_seconds: Option<f64>,
    ) {
        self.kills
            .get_or_create(&KillLabels {
                class: Class(class),
                outcome: OutcomeLabel(outcome),
                namespace: LabelText(namespace.to_owned()),
            })
            .inc();
        if let Some(s) = verification_seconds {
            self.verification.observe(s);
        }
    }

    /// The identity cache's state: whether the runtime answers, its failures so far, the
    /// pods known, how long its last refresh took.
    pub fn identity(&self, health: oomwarden_identity::Health) {
        self.runtime_up.set(i64::from(health.runtime_up));
        let seen = self.runtime_failures.get();
        self.runtime_failures
            .inc_by(health.runtime_failures.saturating_sub(seen));
        self.pods_known
            .set(i64::try_from(health.pods).unwrap_or(i64::MAX));
        self.runtime_refresh
            .set(health.last_refresh.map_or(0.0, |d| d.as_secs_f64()));
        self.identity_age
            .set(health.age.map_or(0.0, |d| d.as_secs_f64()));
    }

    /// Kernel OOM kills seen (one per report of the kernel log; per process for kills known
    /// from a counter alone).
    pub fn kernel_oom_kills(&self, constraint: OomConstraint, n: u64) {
        self.kernel_kills
            .get_or_create(&KernelKillLabels {
                constraint: ConstraintLabel(constraint),
            })
            .inc_by(n);
    }

    /// A problem of the kernel-OOM watcher (`reason` as [`WatchProblemLabels`] says).
    pub fn kernel_oom_watch_problem(&self, reason: &'static str) {
        self.kernel_oom_watch_problems(reason, 1);
    }

    /// `n` problems of the kernel-OOM watcher at once (reports dropped on a full queue).
    pub fn kernel_oom_watch_problems(&self, reason: &'static str, n: u64) {
        self.kernel_watch_problems
            .get_or_create(&WatchProblemLabels { reason })
            .inc_by(n);
    }

    /// The Events sender's counts so far (read each cycle; counters only move forward).
    pub fn events(&self, counts: &oomwarden_events::Counts) {
        let forward = |c: &Counter, total: u64| {
            c.inc_by(total.saturating_sub(c.get()));
        };
        forward(&self.events_sent, counts.sent);
        forward(&self.events_retries, counts.retries);
        forward(&self.pod_conditions_set, counts.conditions_set);
        forward(&self.node_updates, counts.node_updates);
        for reason in oomwarden_events::Dropped::ALL {
            let labels = WatchProblemLabels {
                reason: reason.name(),
            };
            forward(
                &self.events_dropped.get_or_create(&labels),
                counts.dropped(reason),
            );
            forward(
                &self.pod_conditions_dropped.get_or_create(&labels),
                counts.conditions_dropped(reason),
            );
            forward(
                &self.node_updates_dropped.get_or_create(&labels),
                counts.node_updates_dropped(reason),
            );
        }
    }

    /// The sample interval and the dry run in force (at start and after each reload).
    pub fn settings(&self, interval: Duration, dry_run: bool) {
        self.sample_interval.set(interval.as_secs_f64());
        self.dry_run.set(i64::from(dry_run));
    }

    /// A firing that found no victim.
    pub fn no_victim(&self) {
        self.no_victim.inc();
    }

    /// One cycle's duration.
    pub fn cycle(&self, seconds: f64) {
        self.cycle.observe(seconds);
    }

    /// Whether the loop advances (`/healthz`, `/readyz`).
    pub fn health(&self) -> &crate::health::Health {
        &self.health
    }

    /// A cycle run on a PSI trigger.
    pub fn pressure_event(&self) {
        self.pressure_events.inc();
    }

    /// A configuration reload.
    pub fn reloaded(&self, ok: bool) {
        self.reloads
            .get_or_create(&ResultLabel {
                result: if ok {
                    ReloadResult::Success
                } else {
                    ReloadResult::Failure
                },
            })
            .inc();
    }
}

/// Why the endpoint could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot serve metrics on {addr}: {message}")]
pub struct ServeError {
    /// The address.
    pub addr: SocketAddr,
    /// Why.
    pub message: String,
}

/// At most this many connections to the metrics endpoint are served at once; a new one past
/// that closes the one open longest (counted as `metrics_connections`), so no client can take
/// the file descriptors the OOM loop reads cgroups with, nor lock out a scrape.
pub const MAX_METRICS_CONNECTIONS: usize = 32;
/// A request's headers must arrive within this time.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// A connection is closed after this long, whatever it is doing.
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a request may send before its headers end (hyper's read buffer; 8 KiB minimum).
pub const MAX_REQUEST_HEAD_BYTES: usize = 16 * 1024;

/// Serves `GET /metrics` (OpenMetrics text), `/healthz` and `/readyz` on `addr` from a thread
/// of its own; any other path is 404. Returns the address bound (with the port chosen when
/// `addr` has port 0).
///
/// The side services' one server (`oomwarden-serve`), bounded: [`MAX_METRICS_CONNECTIONS`]
/// connections (the oldest makes room for a new one), [`MAX_REQUEST_HEAD_BYTES`] of request
/// head, [`HEADER_READ_TIMEOUT`], [`CONNECTION_TIMEOUT`], no keep-alive. A slow or hostile
/// client holds one descriptor for at most 10 s, and never a thread or a lock the OOM loop
/// needs.
pub fn serve(addr: SocketAddr, metrics: Arc<Metrics>) -> Result<SocketAddr, ServeError> {
    let limits = oomwarden_serve::Limits {
        connections: MAX_METRICS_CONNECTIONS,
        head_bytes: MAX_REQUEST_HEAD_BYTES,
        header_timeout: HEADER_READ_TIMEOUT,
        connection_timeout: CONNECTION_TIMEOUT,
    };
    let served = Arc::clone(&metrics);
    let respond: oomwarden_serve::Respond =
        Arc::new(move |method, path| respond(&served, method, path));
    oomwarden_serve::serve_on_thread(addr, "metrics", limits, respond, metrics).map_err(|e| {
        ServeError {
            addr,
            message: e.source.to_string(),
        }
    })
}

impl oomwarden_serve::Observer for Metrics {
    fn hit(&self, hit: oomwarden_serve::Hit) {
        let bound = match hit {
            oomwarden_serve::Hit::Connections => Bound::MetricsConnections,
            oomwarden_serve::Hit::RequestHead => Bound::MetricsRequestHead,
            oomwarden_serve::Hit::HeaderTimeout => Bound::MetricsHeaderTimeout,
            oomwarden_serve::Hit::ConnectionTime => Bound::MetricsConnectionTime,
        };
        self.bound_hit(bound);
        if hit == oomwarden_serve::Hit::Connections
            && !self
                .said_connections_full
                .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            tracing::warn!(
                limit = MAX_METRICS_CONNECTIONS,
                "metrics endpoint: too many connections; the oldest are closed to serve new ones (logged once)"
            );
        }
    }

    fn connection(&self, open: bool) {
        if open {
            self.http_connections.inc();
        } else {
            self.http_connections.dec();
        }
    }
}

fn respond(metrics: &Metrics, method: &hyper::Method, path: &str) -> oomwarden_serve::Answer {
    use oomwarden_serve::Answer;
    let probe = |(ok, body): crate::health::Answer| Answer::text(if ok { 200 } else { 503 }, body);
    match (method, path) {
        (&hyper::Method::GET, "/metrics") => Answer {
            status: 200,
            content_type: "application/openmetrics-text; version=1.0.0; charset=utf-8",
            body: metrics.encode(),
        },
        (&hyper::Method::GET, "/healthz") => {
            probe(metrics.health.live(oomwarden_node::monotonic_ns()))
        }
        (&hyper::Method::GET, "/readyz") => probe(metrics.health.ready()),
        _ => Answer::not_found(),
    }
}

/// A counter family by the reason a write to the API server was dropped, every series there
/// from the start at 0.
fn dropped_family(
    registry: &mut Registry,
    name: &str,
    help: &str,
) -> Family<WatchProblemLabels, Counter> {
    let family = Family::<WatchProblemLabels, Counter>::default();
    for reason in oomwarden_events::Dropped::ALL {
        family
            .get_or_create(&WatchProblemLabels {
                reason: reason.name(),
            })
            .inc_by(0);
    }
    registry.register(name, help, family.clone());
    family
}

/// Whether an outcome has an `oomwarden_kills_total` series (pre-registered at 0 for every
/// class). Every outcome is named, so a new one does not compile until it is decided here.
fn counted_as_kill(outcome: Outcome) -> bool {
    match outcome {
        Outcome::Killed
        | Outcome::KillFailed
        | Outcome::NotVerified
        | Outcome::DryRun
        | Outcome::Gone => true,
        // The trigger held and nobody could be chosen: `oomwarden_triggers_total` and the
        // record say so; no kill was attempted.
        Outcome::NoEligibleCgroup => false,
        // A stage's, in `oomwarden_stage_actions_total`: no kill.
        Outcome::Warned
        | Outcome::Terminated
        | Outcome::Tainted
        | Outcome::Untainted
        | Outcome::Cancelled => false,
    }
}

#[cfg(test)]
mod bound_names {
    use super::Bound;

    /// Every bound is documented where operators look: its metric label and its row.
    #[test]
    fn every_bound_is_documented() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
        let read = |f: &str| std::fs::read_to_string(root.join(f)).unwrap_or_default();
        let (metrics, operations) = (read("metrics.md"), read("operations.md"));
        for b in Bound::ALL {
            let quoted = format!("`{}`", b.name());
            assert!(metrics.contains(&quoted), "docs/metrics.md lacks {quoted}");
            assert!(
                operations.contains(&quoted),
                "docs/operations.md lacks {quoted}"
            );
        }
    }
}

#[cfg(test)]
mod escaping {
    use super::*;

    /// Found by the fault suite: a namespace from the runtime holding `"`, `}` and a newline
    /// wrote a series of its own into the scrape and broke the rest of it.
    #[test]
    fn a_label_value_from_outside_cannot_inject_a_series() {
        let m = Metrics::new();
        m.killed(
            QosClass::Besteffort,
            Outcome::Killed,
            "shop\"} 1\nevil_series{a=\"b\\",
            None,
        );
        let text = m.encode();
        assert!(
            !text.lines().any(|l| l.starts_with("evil_series")),
            "{text}"
        );
        assert!(
            text.contains(
                "oomwarden_kills_total{class=\"Besteffort\",outcome=\"killed\",namespace=\"shop\\\"} 1\\nevil_series{a=\\\"b\\\\\"} 1"
            ),
            "{text}"
        );
    }

    /// A strict reading of one line of the text exposition: a comment, or
    /// `name{label="value",…} number` with every value escaped as the format says.
    fn strict_line(line: &str) -> bool {
        let re = regex::Regex::new(
            r#"^(# (HELP|TYPE|UNIT) [a-zA-Z_:][a-zA-Z0-9_:]* .*|# EOF|[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="(\\[\\"n]|[^"\\\n])*"(,[a-zA-Z_][a-zA-Z0-9_]*="(\\[\\"n]|[^"\\\n])*")*\})? [-+0-9.eEa-zA-Z]+)$"#,
        )
        .unwrap();
        re.is_match(line)
    }

    /// Issue 54 (6): the containers' usage series wrote their label values unescaped (a
    /// strict parser rejected the page). Every family that carries a name from outside the
    /// daemon (a namespace, a pod, a container, a workload, a stage, a version) is fed hostile
    /// names, and the whole page is read strictly, line by line.
    #[test]
    fn every_label_from_outside_is_escaped_and_the_page_parses_strictly() {
        let hostile = "x\"} 1\nevil_series{a=\"b\\";
        let m = Metrics::new();
        m.killed(QosClass::Besteffort, Outcome::Killed, hostile, None);
        m.container_usage(&[ContainerUsage {
            pod: oomwarden_usage::PodRef {
                namespace: hostile.to_owned(),
                name: hostile.to_owned(),
                owner_kind: hostile.to_owned(),
                owner_name: hostile.to_owned(),
            },
            pod_uid: hostile.to_owned(),
            container: hostile.to_owned(),
            recommendation: oomwarden_usage::Recommendation {
                request_bytes: 1,
                limit_bytes: 2,
                seen: oomwarden_usage::Seen::default(),
                unreclaimable_percentile_bytes: 1,
                oom_kills: 0,
                oom_floor_bytes: 0,
                history_seconds: 10,
                reason: hostile.to_owned(),
            },
        }]);
        let text = m.encode();
        let bad: Vec<&str> = text.lines().filter(|l| !strict_line(l)).collect();
        assert!(bad.is_empty(), "{bad:#?}");
        assert!(!text.lines().any(|l| l.starts_with("evil_series")));
        assert!(
            text.contains(
                "oomwarden_container_memory_peak_bytes{namespace=\"x\\\"} 1\\nevil_series"
            )
        );
    }

    /// So that the next family cannot forget: no label set of the daemon's metrics carries a
    /// raw `String` (prometheus-client writes those unescaped); a value from outside is a
    /// [`LabelText`].
    #[test]
    fn no_label_set_carries_a_raw_string() {
        let source = include_str!("metrics.rs");
        let mut raw = Vec::new();
        for (i, _) in source.match_indices("EncodeLabelSet)]") {
            let body = source.get(i..).unwrap_or_default();
            let end = body.find("\n}").unwrap_or(body.len());
            for line in body.get(..end).unwrap_or_default().lines() {
                if line.trim_end().ends_with(": String,") {
                    raw.push(line.trim().to_owned());
                }
            }
        }
        assert!(raw.is_empty(), "label fields that are raw Strings: {raw:?}");
    }
}
