//! Action records: one per triggered cycle, kept in memory and appended to `actions.jsonl`.

use serde::{Deserialize, Serialize};

use crate::{IdentitySource, KillMethod, KillScope, Workload};

use crate::QosClass;

/// Why a cycle ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Wakeup {
    /// The sample interval's tick.
    Tick,
    /// A kernel PSI trigger (`psiTriggers`).
    Pressure,
}

impl Wakeup {
    /// Both.
    pub const ALL: [Wakeup; 2] = [Wakeup::Tick, Wakeup::Pressure];

    /// `tick` or `pressure`, as in action records and recordings: its serde name.
    pub fn name(self) -> &'static str {
        crate::serde_name(&self)
    }
}

/// Who killed: oomwarden (a triggered cycle) or the kernel's OOM killer (seen by the daemon's
/// kernel-OOM watcher). Records of versions without the field are oomwarden's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RecordKind {
    /// A decision of oomwarden's (a kill, a dry run, no eligible cgroup, …).
    #[default]
    Oomwarden,
    /// A kill by the kernel's OOM killer.
    KernelOom,
}

impl RecordKind {
    /// Both.
    pub const ALL: [RecordKind; 2] = [RecordKind::Oomwarden, RecordKind::KernelOom];

    /// `oomwarden` or `kernel-oom`, as in records: its serde name.
    pub fn name(self) -> &'static str {
        crate::serde_name(&self)
    }
}

/// What made the kernel's OOM killer act: a memory cgroup at its limit, or the whole node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OomConstraint {
    /// A memory cgroup reached `memory.max` (a container's or a pod's limit).
    Memcg,
    /// The node ran out of memory.
    Global,
}

impl OomConstraint {
    /// Both.
    pub const ALL: [OomConstraint; 2] = [OomConstraint::Memcg, OomConstraint::Global];

    /// `memcg` or `global`, as in records and metric labels: its serde name.
    pub fn name(self) -> &'static str {
        crate::serde_name(&self)
    }
}

/// How the kernel-OOM watcher learnt of a kernel OOM kill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DetectedBy {
    /// The kernel's log (`/dev/kmsg`): the report with its victim.
    Kmsg,
    /// Only the `oom_kill` counter of a cgroup's `memory.events` (the kernel log was unreadable
    /// or lost the report): the cgroup and the count, no process.
    MemoryEvents,
}

/// What a triggered cycle did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The victim was killed and its cgroup emptied within the verification timeout.
    Killed,
    /// Writing `cgroup.kill` failed (see `error`).
    KillFailed,
    /// `cgroup.kill` was written but the cgroup still had processes at the timeout.
    NotVerified,
    /// The trigger fired but no candidate was eligible.
    NoEligibleCgroup,
    /// Dry run: the victim that would have been killed.
    DryRun,
    /// The ranked cgroup was gone, or replaced by another under the same path (a restarted
    /// unit, a new pod sandbox), when the kill was due: nothing was killed.
    Gone,
    /// A `warn` stage's condition became true (`stage` names it): nothing was done.
    Warned,
    /// A `terminate` stage's victim, sent SIGTERM, exited within the stage's grace.
    Terminated,
    /// The node was tainted (`oomwarden.io/memory-pressure:NoSchedule`) and its condition
    /// `OOMWardenMemoryPressure` set: a `taint` stage's condition became true, or one
    /// workload was killed again and again (`workload` names it).
    Tainted,
    /// What `tainted` asked for ended (the stage's condition false for its hold-down, or the
    /// workload's kills out of the window): the taint is removed when nothing else holds it.
    Untainted,
    /// A `terminate` stage's victim, sent SIGTERM, was not killed: the configuration in force
    /// when its grace ended, or at a reload before that, would not choose it
    /// (`cancelReason` says why). Its processes were left as they were.
    Cancelled,
}

impl Outcome {
    /// Every outcome, in declaration order.
    pub const ALL: [Outcome; 11] = [
        Outcome::Killed,
        Outcome::KillFailed,
        Outcome::NotVerified,
        Outcome::NoEligibleCgroup,
        Outcome::DryRun,
        Outcome::Gone,
        Outcome::Warned,
        Outcome::Terminated,
        Outcome::Tainted,
        Outcome::Untainted,
        Outcome::Cancelled,
    ];

    /// The name written in records (`killed`, `kill-failed`, …): its serde name.
    pub fn name(self) -> &'static str {
        crate::serde_name(&self)
    }
}

/// Why a `terminate` stage's kill was called off (a record `cancelled`): the configuration in
/// force would not choose its victim. No signal is ever sent under a configuration other than
/// the one in force at that instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CancelReason {
    /// `dryRun` is true now: nothing is killed.
    DryRun,
    /// The stage that sent SIGTERM is gone from the configuration (or is no `terminate` stage
    /// any more).
    StageRemoved,
    /// The ranking in force does not make the victim eligible (a score not above 0, an
    /// exemption, an error).
    Exempt,
    /// The victim is no candidate of the layout in force.
    NotACandidate,
}

impl CancelReason {
    /// Every reason, in declaration order.
    pub const ALL: [CancelReason; 4] = [
        CancelReason::DryRun,
        CancelReason::StageRemoved,
        CancelReason::Exempt,
        CancelReason::NotACandidate,
    ];

    /// `dry-run`, `stage-removed`, `exempt`, `not-a-candidate`: its serde name.
    pub fn name(self) -> &'static str {
        crate::serde_name(&self)
    }
}

/// A cgroup's memory by kind, bytes (each `None` when its line or file was not there).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryBreakdown {
    /// `memory.stat` `anon`: process memory, which only swap can take away.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anon_bytes: Option<u64>,
    /// `file`: page cache, `shmem` included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_bytes: Option<u64>,
    /// `shmem`: tmpfs and shared memory, reclaimable only to swap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shmem_bytes: Option<u64>,
    /// `kernel` (Linux 5.18+): slab, stacks, page tables and the like.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_bytes: Option<u64>,
    /// `memory.swap.current`: what went out to swap (not in `memory.current`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_bytes: Option<u64>,
}

/// One action record. Field names are a stable contract (`docs/operations.md`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionRecord {
    /// Sequence number, from 0, continuing across restarts (loaded from the history).
    pub id: u64,
    /// Wall-clock time of the trigger, RFC 3339 in UTC.
    pub time: String,
    /// Monotonic clock reading of the trigger, nanoseconds since boot (`CLOCK_MONOTONIC`).
    pub monotonic_ns: u64,
    /// Whose action this is: `oomwarden` or `kernel-oom` (absent in older records: oomwarden).
    /// Written just before `outcome`, so that a line filter can match both at once
    /// (`"kind":"oomwarden","outcome":"killed"`).
    #[serde(default)]
    pub kind: RecordKind,
    /// What happened (a kernel OOM kill is `killed`).
    pub outcome: Outcome,
    /// Absolute cgroup path of the victim; absent when there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub victim: Option<String>,
    /// Class of the victim (`Besteffort` …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<QosClass>,
    /// The victim pod's UID, decoded from its cgroup path (absent for non-pod cgroups).
    #[serde(rename = "podUID", default, skip_serializing_if = "Option::is_none")]
    pub pod_uid: Option<String>,
    /// IDs of the victim's containers (its child cgroups named by the runtime), its pod's
    /// sandbox left out when the runtime named it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<String>,
    /// The ID of the victim pod's sandbox (the pause container), when the runtime named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// The victim pod's namespace, when known (from the container runtime or the kubelet's
    /// pod-log directories).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The victim pod's name, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_name: Option<String>,
    /// The names of `containers`, in the same order (`""` for one nobody named).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub container_names: Vec<String>,
    /// Each of `containers`' working set when the victim was chosen, in the same order:
    /// `memory.current` less `inactive_file` of its cgroup, as the kubelet and cAdvisor count
    /// it (`null` for one that could not be read). What the Pod Event's
    /// `offending_containers_usage` says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub container_working_set_bytes: Vec<Option<u64>>,
    /// Where `namespace`, `podName` and `containerNames` came from: `cri`, `pod-logs`, or
    /// `path` (only the pod UID was known). Absent for a victim that is no pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_source: Option<IdentitySource>,
    /// How old, in milliseconds, the pod identities were that named the victim and gave the
    /// ranking its labels: the time since the container runtime last answered. Large when the
    /// runtime stopped answering (its last answer is kept, labels included); absent without
    /// a runtime answer or for a victim that is no pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_age_ms: Option<u64>,
    /// What the kill of a pod ended: `pod` (the whole pod cgroup) or `containers` (each
    /// container cgroup, the sandbox spared). Absent for a victim that is no pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill_scope: Option<KillScope>,
    /// The response stage (`OOMWardenConfig.stages`) whose firing this record is: a warning,
    /// a termination, or the kill that ended a termination's grace. Absent for the trigger's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    /// On a `cancelled` record: why the configuration in force would not choose the victim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_reason: Option<CancelReason>,
    /// On the `tainted` record of a workload killed again and again: its kills in the last
    /// hour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_kills: Option<u64>,
    /// What made the victim pod (its namespace and owner, from its labels: kills of the pods a
    /// Deployment makes again are kills of one workload). Absent when the pod's namespace
    /// and name are not known, or for a victim that is no pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<Workload>,
    /// `kernel-oom` when the kernel's OOM killer was asked to end the victim
    /// (`killMethod: kernel-oom`); absent for `cgroup.kill`, the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill_method: Option<KillMethod>,
    /// With `killMethod: kernel-oom`: the kernel's OOM killer did not empty a cgroup within
    /// `killTimeout`, and `cgroup.kill` finished it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kill_fallback: bool,
    /// On a `kernel-oom` record: the kill was one oomwarden asked the kernel for
    /// (`killMethod: kernel-oom`), in its record with this id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordered_by: Option<u64>,
    /// With `killScope: containers`: the container cgroups killed (node paths).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub killed_cgroups: Vec<String>,
    /// The victim's score (0 when there was none). A non-finite score (`+Inf` is eligible: it
    /// is above 0) is written as the string `"+Inf"`, `"-Inf"` or `"NaN"`, as Prometheus and Go
    /// spell them, since JSON has no such numbers (older versions wrote `null`, read as NaN).
    #[serde(default, with = "score_json")]
    pub score: f64,
    /// PIDs found in the victim's subtree before the kill: the first [`MAX_PIDS_LISTED`]
    /// (all of them were killed).
    #[serde(default)]
    pub pids: Vec<u32>,
    /// PIDs found beyond the first [`MAX_PIDS_LISTED`], counted, not listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pids_omitted: u64,
    /// Their command lines, formatted as Talos does (a process that exited first is absent):
    /// at most [`MAX_PROCESSES_LISTED`], each cut at 4 KiB (see `oomwarden_procfs`), and no
    /// more once [`MAX_RECORD_CMDLINE_BYTES`] are listed.
    #[serde(default)]
    pub processes: Vec<String>,
    /// PIDs whose command lines were not read: beyond the first [`MAX_PROCESSES_LISTED`], or
    /// after [`MAX_RECORD_CMDLINE_BYTES`] of command lines.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub processes_omitted: u64,
    /// The victim's `memory.current` before the kill.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_current_bytes: Option<u64>,
    /// What the victim's memory was when it was chosen: its `memory.stat` parts and its swap
    /// (absent in older records, and for the kernel's kills).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_breakdown: Option<MemoryBreakdown>,
    /// The victim's growth when it was chosen: its `memory.current`'s change per second over
    /// the last 1 to 2 s (the ranking's `d_memory_current`); absent without an earlier
    /// reading of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub growth_bytes_per_second: Option<f64>,
    /// From writing `cgroup.kill` to the cgroup being empty (or the timeout), milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill_duration_ms: Option<f64>,
    /// Why the kill failed or was not verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The whole trigger context, byte-for-byte in Talos's `triggerContext` JSON format
    /// (absent, read as empty, in a kernel OOM kill's record).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub trigger_context: String,
    /// Kernel OOM kill: `memcg` (a cgroup's limit) or `global` (the node ran out); absent when
    /// the report was cut before saying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraint: Option<OomConstraint>,
    /// Kernel OOM kill: the PID the kernel chose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub victim_pid: Option<u32>,
    /// Kernel OOM kill: the victim's command name (at most 15 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub victim_comm: Option<String>,
    /// Kernel OOM kill: the memory cgroup whose limit was hit (`oom_memcg=`), as the kernel
    /// prints it (relative to the cgroup root; `/` for a global OOM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_memcg: Option<String>,
    /// Kernel OOM kill: the victim's memory cgroup (`task_memcg=`), as the kernel prints it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_memcg: Option<String>,
    /// Kernel OOM kill: the victim's container ID, decoded from `taskMemcg`.
    #[serde(
        rename = "containerID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub container_id: Option<String>,
    /// Kernel OOM kill: how it was learnt, `kmsg` or `memory-events`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detected_by: Option<DetectedBy>,
    /// What woke the cycle: `tick` (the sampling interval) or `pressure` (a kernel PSI
    /// trigger). Absent in records of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeup: Option<Wakeup>,
    /// The flight recorder's window saved with this action (`oomwarden replay` reads it);
    /// absent when the flight recorder is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording: Option<String>,
    /// The `triggerExpression` that fired (absent in a kernel OOM kill's record and in
    /// records of older versions), so that `oomwarden explain` shows its thresholds as they
    /// were, whatever was reloaded since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_expression: Option<String>,
    /// The `cgroupRankingExpression` that scored the candidates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranking_expression: Option<String>,
    /// How many candidates were eligible (scored above 0), the victim included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eligible: Option<u64>,
    /// How many candidates were left out, by why: `node-critical` (`protect.nodeCritical`:
    /// never a candidate, whatever the ranking), `empty` (no live process), `own-cgroup`,
    /// `not-positive` (the ranking scored 0 or less), `eval-error`. Absent when none was.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub excluded: std::collections::BTreeMap<String, u64>,
    /// The next [`MAX_RUNNERS_UP`] eligible candidates in the order the victim was chosen in:
    /// what would have been killed instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runners_up: Vec<RunnerUp>,
}

/// A candidate that was not chosen, as a record lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunnerUp {
    /// Its cgroup's node path.
    pub cgroup: String,
    /// Its class.
    pub class: QosClass,
    /// Its score.
    #[serde(with = "score_json")]
    pub score: f64,
    /// Its pod's namespace, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its pod's name, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_name: Option<String>,
}

/// At most this many runners-up per record.
pub const MAX_RUNNERS_UP: usize = 5;

/// A score in JSON: a number when finite, else `"+Inf"`, `"-Inf"` or `"NaN"`. Reading also
/// takes `"Inf"`, `"inf"` and `null` (what older versions wrote for any non-finite score:
/// read as NaN, since the sign is lost).
pub(crate) mod score_json {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Serializes a score.
    pub(crate) fn serialize<S: Serializer>(score: &f64, s: S) -> Result<S::Ok, S::Error> {
        if score.is_finite() {
            s.serialize_f64(*score)
        } else {
            s.serialize_str(&crate::format_number(*score))
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Number(f64),
        Text(String),
        Null(()),
    }

    /// Deserializes a score.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        match Option::<Repr>::deserialize(d)? {
            Some(Repr::Number(x)) => Ok(x),
            Some(Repr::Text(t)) => match t.as_str() {
                "+Inf" | "Inf" | "inf" | "+inf" | "Infinity" => Ok(f64::INFINITY),
                "-Inf" | "-inf" | "-Infinity" => Ok(f64::NEG_INFINITY),
                "NaN" | "nan" => Ok(f64::NAN),
                other => Err(serde::de::Error::custom(format!(
                    "invalid score {other:?}: expected a number, \"+Inf\", \"-Inf\" or \"NaN\""
                ))),
            },
            Some(Repr::Null(())) | None => Ok(f64::NAN),
        }
    }
}

/// At most this many command lines are read and kept per record; the rest are counted in
/// `processesOmitted`. A pod with thousands of processes must not make a record (or the
/// daemon's memory) grow with it.
pub const MAX_PROCESSES_LISTED: usize = 100;

/// The command lines of one record take at most this many bytes (the last one listed may
/// pass it by one command line, itself at most 4 KiB); the processes after it are counted in
/// `processesOmitted`.
pub const MAX_RECORD_CMDLINE_BYTES: usize = 64 << 10;

/// At most this many PIDs are listed in a record (about 128 KiB of JSON); the rest are
/// counted in `pidsOmitted`. Every PID is killed whatever the record lists.
pub const MAX_PIDS_LISTED: usize = 16_384;

/// At most this many container IDs are listed in a record.
pub const MAX_CONTAINERS_LISTED: usize = 256;

impl ActionRecord {
    /// A record with only its id, time and outcome set (every other field empty), for the
    /// builders that fill in the rest.
    pub fn empty(kind: RecordKind, outcome: Outcome, time: String, monotonic_ns: u64) -> Self {
        ActionRecord {
            id: 0,
            kind,
            time,
            monotonic_ns,
            outcome,
            victim: None,
            class: None,
            pod_uid: None,
            containers: Vec::new(),
            sandbox: None,
            namespace: None,
            pod_name: None,
            container_names: Vec::new(),
            container_working_set_bytes: Vec::new(),
            identity_source: None,
            identity_age_ms: None,
            kill_scope: None,
            stage: None,
            cancel_reason: None,
            workload_kills: None,
            workload: None,
            kill_method: None,
            kill_fallback: false,
            ordered_by: None,
            killed_cgroups: Vec::new(),
            score: 0.0,
            pids: Vec::new(),
            pids_omitted: 0,
            processes: Vec::new(),
            processes_omitted: 0,
            memory_current_bytes: None,
            memory_breakdown: None,
            growth_bytes_per_second: None,
            kill_duration_ms: None,
            error: None,
            trigger_context: String::new(),
            constraint: None,
            victim_pid: None,
            victim_comm: None,
            oom_memcg: None,
            task_memcg: None,
            container_id: None,
            detected_by: None,
            wakeup: None,
            recording: None,
            trigger_expression: None,
            ranking_expression: None,
            eligible: None,
            excluded: std::collections::BTreeMap::new(),
            runners_up: Vec::new(),
        }
    }

    /// Whether the record is a kill: oomwarden's (`killed`, `not-verified`) or the kernel's own
    /// (not one oomwarden asked for: that one is oomwarden's record already).
    pub fn is_kill(&self) -> bool {
        match self.kind {
            RecordKind::Oomwarden => matches!(self.outcome, Outcome::Killed | Outcome::NotVerified),
            RecordKind::KernelOom => self.ordered_by.is_none(),
        }
    }

    /// Whether the kill says something about the node's memory: oomwarden's own (the node was
    /// under pressure), or the kernel's global OOM kill (the node ran out). A kernel memcg kill
    /// (a container or pod over its own `memory.max`) says nothing about the node: one
    /// CrashLoopBackOff container or a leaking Deployment would otherwise taint every node
    /// it runs on (`events.taintAfterKills`).
    pub fn is_node_kill(&self) -> bool {
        self.is_kill()
            && match self.kind {
                RecordKind::Oomwarden => true,
                RecordKind::KernelOom => self.constraint == Some(OomConstraint::Global),
            }
    }

    /// How many PIDs were found, listed or not.
    pub fn pids_total(&self) -> u64 {
        u64::try_from(self.pids.len())
            .unwrap_or(u64::MAX)
            .saturating_add(self.pids_omitted)
    }
}

/// The first [`MAX_PIDS_LISTED`] of `all` (what a record lists), and how many are left out.
pub fn listed_pids(mut all: Vec<u32>) -> (Vec<u32>, u64) {
    let omitted = all.len().saturating_sub(MAX_PIDS_LISTED);
    all.truncate(MAX_PIDS_LISTED);
    all.shrink_to_fit();
    (all, u64::try_from(omitted).unwrap_or(u64::MAX))
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if takes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod score_round_trip {
    use super::*;

    /// The smallest record the format takes, with this score.
    fn record(score: f64) -> ActionRecord {
        let minimal =
            r#"{"id":1,"time":"t","monotonicNs":1,"outcome":"dry-run","triggerContext":"{}"}"#;
        let mut r: ActionRecord = serde_json::from_str(minimal).unwrap_or_else(|e| panic!("{e}"));
        r.score = score;
        r
    }

    #[test]
    fn non_finite_scores_round_trip() {
        for (score, text) in [
            (f64::INFINITY, r#""score":"+Inf""#),
            (f64::NEG_INFINITY, r#""score":"-Inf""#),
            (f64::NAN, r#""score":"NaN""#),
            (1.5, r#""score":1.5"#),
            (0.0, r#""score":0.0"#),
        ] {
            let json = serde_json::to_string(&record(score)).unwrap_or_default();
            assert!(json.contains(text), "{json}");
            let back: ActionRecord =
                serde_json::from_str(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
            assert_eq!(back.score.to_bits(), score.to_bits(), "{json}");
        }
    }

    #[test]
    fn older_null_scores_and_missing_scores_load() {
        let json = serde_json::to_string(&record(1.0)).unwrap_or_default();
        let null = json.replace(r#""score":1.0"#, r#""score":null"#);
        let back: ActionRecord =
            serde_json::from_str(&null).unwrap_or_else(|e| panic!("{null}: {e}"));
        assert!(back.score.is_nan());
        let missing = json.replace(r#""score":1.0,"#, "");
        let back: ActionRecord =
            serde_json::from_str(&missing).unwrap_or_else(|e| panic!("{missing}: {e}"));
        assert_eq!(back.score, 0.0);
        let bad = json.replace(r#""score":1.0"#, r#""score":"lots""#);
        assert!(serde_json::from_str::<ActionRecord>(&bad).is_err());
    }
}
