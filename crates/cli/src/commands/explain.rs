//! `oomwarden explain ID|NAMESPACE/POD|POD-UID`: why a pod was killed, on one screen.
//!
//! The record; the trigger's comparisons with the values they had (from the expression the
//! record names, else the configuration's); the victim's score against the other candidates
//! (every candidate from the flight recorder's window when one was saved and reproduces the
//! decision, else the runners-up the record lists); and the other records of the same pod
//! (the kernel's OOM kills before and after, oomwarden's other actions). Read from the history
//! file, and from the daemon when it answers (it may hold records the disk refused).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use oomwarden_config::Settings;
use oomwarden_daemon::{api, history};
use oomwarden_expr::{AnyValue, TriggerExpr};
use oomwarden_model::{ActionRecord, OomConstraint, Outcome, RecordKind, TriggerContext};
use serde::Serialize;

use crate::commands::actions::StateArgs;
use crate::exit::{Exit, Fail};
use crate::human;

/// Arguments of `oomwarden explain`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A record's id, a pod as NAMESPACE/NAME, or a pod's UID (its latest record).
    #[arg(value_name = "ID|NAMESPACE/POD|POD-UID")]
    what: String,
    #[command(flatten)]
    state: StateArgs,
    #[command(flatten)]
    output: crate::output::OutputArgs,
}

/// Everything `explain` says, as `-o json` prints it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Explanation {
    /// The record explained, whole.
    record: ActionRecord,
    /// Why the trigger fired (oomwarden's records only).
    #[serde(skip_serializing_if = "Option::is_none")]
    trigger: Option<Trigger>,
    /// Why this victim (oomwarden's records with a victim).
    #[serde(skip_serializing_if = "Option::is_none")]
    ranking: Option<Ranking>,
    /// The kernel's OOM kills of the same pod, before and after this record.
    kernel_oom_kills: Around,
    /// oomwarden's other records of the same pod.
    other_actions: Around,
    /// What could not be shown, and why.
    notes: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Trigger {
    expression: String,
    /// `record` (the expression recorded with the action) or `configuration` (the one in
    /// force now: the record predates the field).
    source: &'static str,
    comparisons: Vec<Compared>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Compared {
    text: String,
    left: String,
    op: &'static str,
    right: String,
    left_value: String,
    right_value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    left_number: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    right_number: Option<f64>,
    holds: Option<bool>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Ranking {
    #[serde(skip_serializing_if = "Option::is_none")]
    expression: Option<String>,
    /// `flight-recorder` (every candidate, from the window saved with the action) or
    /// `record` (the victim and the runners-up the record lists).
    source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    window: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    eligible: Option<u64>,
    /// How many were left out, by why (the record's `excluded`: `node-critical`, `empty`, …).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    excluded: std::collections::BTreeMap<String, u64>,
    candidates: Vec<Candidate>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    /// Its place in the order of choice (1: the victim); none for one that was not eligible.
    #[serde(skip_serializing_if = "Option::is_none")]
    rank: Option<usize>,
    cgroup: String,
    class: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    score: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pod_name: Option<String>,
    eligible: bool,
    reason: String,
    victim: bool,
}

/// Command lines shown in the text (all are in the record, `-o json`).
const MAX_PROCESSES_SHOWN: usize = 5;

#[derive(Debug, Default, Serialize)]
struct Around {
    before: Vec<ActionRecord>,
    after: Vec<ActionRecord>,
}

pub(crate) fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<Exit> {
    let dir = args.state.dir()?;
    let records = match load(&dir) {
        Ok(r) => r,
        Err(e) => {
            return Err(Fail::failure(format!("oomwarden: {e:#}")).into());
        }
    };
    let Some(record) = find(&records, &args.what) else {
        return Err(Fail::failure(format!("oomwarden: no record names {:?} ({} records in {}; give a record's id, NAMESPACE/POD or a pod UID)",
            args.what,
            records.len(),
            dir.join(history::FILE_NAME).display())).into());
    };
    if args.output.is_table() {
        // Names anyone on the node may have chosen: no control character is printed.
        let records: Vec<ActionRecord> =
            records.iter().map(crate::terminal::record_names).collect();
        let record = records.iter().find(|r| r.id == record.id).unwrap_or(record);
        text(&explain(record, &records, &args.state, &dir), out)?;
        return Ok(Exit::Ok);
    }
    let explanation = explain(record, &records, &args.state, &dir);
    args.output.structured(&explanation, out)?;
    Ok(Exit::Ok)
}

/// Every record: the file's, and the daemon's when it answers (records the disk refused are
/// kept in its memory), by id.
fn load(dir: &Path) -> anyhow::Result<Vec<ActionRecord>> {
    let mut by_id = BTreeMap::new();
    let file = history::read(dir);
    let daemon: Option<Vec<ActionRecord>> = api::request(dir, "actions")
        .ok()
        .and_then(|answer| serde_json::from_str(&answer).ok());
    if let (Err(e), None) = (&file, &daemon) {
        anyhow::bail!("{e}");
    }
    for r in file.map(|f| f.records).unwrap_or_default() {
        by_id.insert(r.id, r);
    }
    for r in daemon.unwrap_or_default() {
        by_id.insert(r.id, r);
    }
    Ok(by_id.into_values().collect())
}

/// The record `what` names: an id, or the latest record of a pod (oomwarden's before the
/// kernel's: "why was my pod killed" asks about the handler first).
fn find<'a>(records: &'a [ActionRecord], what: &str) -> Option<&'a ActionRecord> {
    if let Ok(id) = what.parse::<u64>() {
        return records.iter().find(|r| r.id == id);
    }
    let matches = |r: &ActionRecord| match what.split_once('/') {
        Some((ns, name)) => {
            r.namespace.as_deref() == Some(ns) && r.pod_name.as_deref() == Some(name)
        }
        // The systemd driver writes a UID with underscores.
        None => r.pod_uid.as_deref() == Some(what.replace('_', "-").as_str()),
    };
    let latest = |kind: RecordKind| records.iter().rev().find(|r| r.kind == kind && matches(r));
    latest(RecordKind::Oomwarden).or_else(|| latest(RecordKind::KernelOom))
}

fn explain(
    record: &ActionRecord,
    records: &[ActionRecord],
    state: &StateArgs,
    dir: &Path,
) -> Explanation {
    let mut notes = Vec::new();
    let mut trigger = None;
    let mut ranking = None;
    if record.kind == RecordKind::Oomwarden {
        let configured = || -> Option<Settings> { state.settings().ok() };
        trigger = explain_trigger(record, configured, &mut notes);
        if record.victim.is_some() {
            ranking = Some(explain_ranking(record, dir, &mut notes));
        }
    }
    let same_pod = |r: &&ActionRecord| {
        r.id != record.id && record.pod_uid.is_some() && r.pod_uid == record.pod_uid
    };
    let mut kernel = Around::default();
    let mut ours = Around::default();
    for r in records.iter().filter(same_pod) {
        let side = if r.kind == RecordKind::KernelOom {
            &mut kernel
        } else {
            &mut ours
        };
        if r.id < record.id {
            side.before.push(r.clone());
        } else {
            side.after.push(r.clone());
        }
    }
    if record.pod_uid.is_none() {
        notes.push("the victim is no pod: other records cannot be matched to it".to_owned());
    }
    Explanation {
        record: record.clone(),
        trigger,
        ranking,
        kernel_oom_kills: kernel,
        other_actions: ours,
        notes,
    }
}

fn explain_trigger(
    record: &ActionRecord,
    configured: impl FnOnce() -> Option<Settings>,
    notes: &mut Vec<String>,
) -> Option<Trigger> {
    let (expr, source) = match &record.trigger_expression {
        Some(text) => match TriggerExpr::compile(text) {
            Ok(e) => (e, "record"),
            Err(e) => {
                notes.push(format!(
                    "the recorded triggerExpression does not compile here: {e}"
                ));
                return None;
            }
        },
        None => {
            let Some(settings) = configured() else {
                notes.push(
                    "the record predates triggerExpression and the configuration cannot be read"
                        .to_owned(),
                );
                return None;
            };
            notes.push("the record predates triggerExpression: the configuration's expression in force now is shown".to_owned());
            (settings.oom.trigger, "configuration")
        }
    };
    let ctx = match TriggerContext::from_json(&record.trigger_context) {
        Ok(c) => c,
        Err(e) => {
            notes.push(format!("the record's triggerContext cannot be read: {e}"));
            return None;
        }
    };
    let comparisons = expr
        .evaluate_comparisons(&ctx)
        .into_iter()
        .map(|e| Compared {
            left_value: shown(&e.left, &e.comparison.left, e.comparison.left_constant),
            right_value: shown(&e.right, &e.comparison.right, e.comparison.right_constant),
            left_number: e.left.as_number().filter(|n| n.is_finite()),
            right_number: e.right.as_number().filter(|n| n.is_finite()),
            text: e.comparison.text,
            left: e.comparison.left,
            op: e.comparison.op,
            right: e.comparison.right,
            holds: e.holds,
        })
        .collect();
    Some(Trigger {
        expression: expr.source().to_owned(),
        source,
        comparisons,
    })
}

/// A value as people read it: `never` for the saturated `time_since_trigger`, durations in
/// Go's form, doubles rounded; a constant double as its author wrote it (`3000.0`).
fn shown(v: &AnyValue, source: &str, constant: bool) -> String {
    if constant && v.type_name == "double" {
        return source.to_owned();
    }
    v.shown()
}

fn explain_ranking(record: &ActionRecord, dir: &Path, notes: &mut Vec<String>) -> Ranking {
    if let Some(window) = &record.recording {
        match from_window(record, window, dir) {
            Ok(r) => return r,
            Err(e) => notes.push(format!(
                "the flight recorder's window {window} could not be used ({e:#}): the candidates are the record's"
            )),
        }
    }
    let mut candidates = vec![Candidate {
        rank: Some(1),
        cgroup: record.victim.clone().unwrap_or_default(),
        class: record
            .class
            .map(|c| c.name().to_owned())
            .unwrap_or_default(),
        score: Some(record.score),
        namespace: record.namespace.clone(),
        pod_name: record.pod_name.clone(),
        eligible: true,
        reason: "eligible".to_owned(),
        victim: true,
    }];
    candidates.extend(
        record
            .runners_up
            .iter()
            .enumerate()
            .map(|(i, r)| Candidate {
                rank: Some(i + 2),
                cgroup: r.cgroup.clone(),
                class: r.class.name().to_owned(),
                score: Some(r.score),
                namespace: r.namespace.clone(),
                pod_name: r.pod_name.clone(),
                eligible: true,
                reason: "eligible".to_owned(),
                victim: false,
            }),
    );
    Ranking {
        expression: record.ranking_expression.clone(),
        source: "record",
        window: None,
        eligible: record.eligible,
        excluded: record.excluded.clone(),
        candidates,
    }
}

/// Every candidate of the action's cycle, from the flight recorder's window replayed under
/// the configuration it names.
fn from_window(record: &ActionRecord, window: &str, dir: &Path) -> anyhow::Result<Ranking> {
    // The daemon names the file as it sees it; in a container that may be another mount.
    let mut path = PathBuf::from(window);
    if !path.exists()
        && let Some(name) = path.file_name()
    {
        path = dir.join("recordings").join(name);
    }
    // A path from a record: only a regular file is read, non-blocking (found by the fault
    // suite: a record naming a FIFO hung `explain`).
    let bytes = oomwarden_cgroupfs::read_regular(&path, crate::commands::MAX_INPUT_BYTES)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let recording = crate::commands::replay::decode(&path.display().to_string(), &bytes)?;
    let settings = match &recording.meta.config {
        Some(text) => Settings::from_yaml(text, "the window's configuration")
            .map_err(|e| anyhow::anyhow!("{e}"))?,
        None => Settings::defaults().map_err(|e| anyhow::anyhow!("{e}"))?,
    };
    let expression = settings.oom.ranking.source().to_owned();
    let (layout, _) =
        oomwarden_daemon::replay::layout_for(&recording, &settings).map_err(anyhow::Error::msg)?;
    let replay = oomwarden_daemon::replay::replay(recording, settings, layout);
    let decision = replay
        .decisions
        .into_iter()
        .find(|d| d.record.monotonic_ns == record.monotonic_ns)
        .ok_or_else(|| anyhow::anyhow!("its replay does not reach this action's cycle"))?;
    if decision.record.victim != record.victim {
        anyhow::bail!(
            "its replay chose {} instead",
            decision.record.victim.as_deref().unwrap_or("no victim")
        );
    }
    // Eligible ones in the order of choice, the others after them.
    let mut eligible: Vec<&oomwarden_daemon::RankedCandidate> =
        decision.ranking.iter().filter(|c| c.eligible).collect();
    let place = |c: &oomwarden_daemon::RankedCandidate| {
        if Some(&c.path) == record.victim.as_ref() {
            0
        } else {
            record
                .runners_up
                .iter()
                .position(|r| r.cgroup == c.path)
                .map_or(usize::MAX, |p| p + 1)
        }
    };
    eligible.sort_by(|a, b| {
        place(a)
            .cmp(&place(b))
            .then_with(|| b.score.unwrap_or(0.0).total_cmp(&a.score.unwrap_or(0.0)))
    });
    let named = |c: &oomwarden_daemon::RankedCandidate| {
        if Some(&c.path) == record.victim.as_ref() {
            return (record.namespace.clone(), record.pod_name.clone());
        }
        record
            .runners_up
            .iter()
            .find(|r| r.cgroup == c.path)
            .map_or((None, None), |r| (r.namespace.clone(), r.pod_name.clone()))
    };
    let mut candidates: Vec<Candidate> = eligible
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (namespace, pod_name) = named(c);
            Candidate {
                rank: Some(i + 1),
                cgroup: c.path.clone(),
                class: c.class.name().to_owned(),
                score: c.score,
                namespace,
                pod_name,
                eligible: true,
                reason: c.reason.clone(),
                victim: Some(&c.path) == record.victim.as_ref(),
            }
        })
        .collect();
    candidates.extend(
        decision
            .ranking
            .iter()
            .filter(|c| !c.eligible)
            .map(|c| Candidate {
                rank: None,
                cgroup: c.path.clone(),
                class: c.class.name().to_owned(),
                score: c.score,
                namespace: None,
                pod_name: None,
                eligible: false,
                reason: c.reason.clone(),
                victim: false,
            }),
    );
    Ok(Ranking {
        expression: Some(expression),
        source: "flight-recorder",
        window: Some(path.display().to_string()),
        eligible: Some(u64::try_from(eligible.len()).unwrap_or(u64::MAX)),
        excluded: record.excluded.clone(),
        candidates,
    })
}

/// `namespace/name`, else `pod <uid>`, else the cgroup.
fn pod_of(r: &ActionRecord) -> String {
    match (&r.namespace, &r.pod_name, &r.pod_uid) {
        (Some(ns), Some(name), _) => format!("{ns}/{name}"),
        (_, _, Some(uid)) => format!("pod {uid}"),
        _ => format!(
            "cgroup {}",
            r.victim
                .as_deref()
                .or(r.task_memcg.as_deref())
                .unwrap_or("-")
        ),
    }
}

fn headline(r: &ActionRecord) -> String {
    let pod = pod_of(r);
    match (r.kind, r.outcome) {
        (RecordKind::KernelOom, _) => match r.victim_pid {
            Some(pid) => format!(
                "the kernel's OOM killer killed {} (pid {pid}) of {pod}",
                r.victim_comm.as_deref().unwrap_or("a process"),
            ),
            None => format!(
                "the kernel's OOM killer killed {} of {pod}",
                match r.pids_total() {
                    1 => "a process".to_owned(),
                    n => format!("{n} processes"),
                }
            ),
        },
        (_, Outcome::Killed) => format!("oomwarden killed {pod}"),
        (_, Outcome::DryRun) => format!("oomwarden would have killed {pod} (dry run)"),
        (_, Outcome::NotVerified) => {
            format!("oomwarden killed {pod}, but it was not empty in time")
        }
        (_, Outcome::KillFailed) => format!("oomwarden failed to kill {pod}"),
        (_, Outcome::Gone) => {
            format!("oomwarden chose {pod}, but it was gone when the kill was due")
        }
        (_, Outcome::NoEligibleCgroup) => {
            "oomwarden's trigger fired, but no cgroup was eligible".to_owned()
        }
        (_, Outcome::Warned) => format!(
            "oomwarden's stage {} warned: its condition became true",
            r.stage.as_deref().unwrap_or("?")
        ),
        (_, Outcome::Tainted) => match (&r.stage, &r.workload) {
            (Some(stage), _) => format!("oomwarden's stage {stage} tainted the node"),
            (None, Some(w)) => format!(
                "oomwarden tainted the node: workload {w} was killed {} times in the last hour",
                r.workload_kills.unwrap_or(0)
            ),
            (None, None) => "oomwarden tainted the node".to_owned(),
        },
        (_, Outcome::Untainted) => "oomwarden removed the node's taint".to_owned(),
        (_, Outcome::Cancelled) => format!(
            "oomwarden's stage {} sent SIGTERM to {pod}, then did not kill it: the configuration in force would not choose it ({}{})",
            r.stage.as_deref().unwrap_or("?"),
            r.cancel_reason
                .map_or("?", oomwarden_model::CancelReason::name),
            r.error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ),
        (_, Outcome::Terminated) => format!(
            "oomwarden's stage {} terminated {pod}: it exited within its grace after SIGTERM",
            r.stage.as_deref().unwrap_or("?")
        ),
    }
}

fn text(e: &Explanation, out: &mut impl Write) -> anyhow::Result<()> {
    text_record(&e.record, out)?;
    if let Some(t) = &e.trigger {
        text_trigger(t, out)?;
    }
    if let Some(rk) = &e.ranking {
        text_ranking(rk, out)?;
    }
    let r = &e.record;
    if r.pod_uid.is_some() {
        text_around("Kernel OOM kills of this pod", &e.kernel_oom_kills, out)?;
        text_around(
            "oomwarden's other actions on this pod",
            &e.other_actions,
            out,
        )?;
    }
    for n in &e.notes {
        writeln!(out, "\nnote: {n}")?;
    }
    Ok(())
}

/// What the victim's memory was: `memory.current`, its parts, its growth (as `explain`
/// shows them: a field name, or "" to go on under the last).
fn memory_lines(r: &ActionRecord) -> Vec<(&'static str, String)> {
    let mut lines = Vec::new();
    if let Some(m) = r.memory_current_bytes {
        lines.push((
            "memory",
            format!("{} (memory.current before the kill)", human::bytes(m)),
        ));
    }
    if let Some(b) = &r.memory_breakdown {
        let parts: Vec<String> = [
            ("anon", b.anon_bytes),
            ("file", b.file_bytes),
            ("of it shmem", b.shmem_bytes),
            ("kernel", b.kernel_bytes),
            ("swap (beside memory.current)", b.swap_bytes),
        ]
        .into_iter()
        .filter_map(|(what, v)| v.map(|v| format!("{what} {}", human::bytes(v))))
        .collect();
        if !parts.is_empty() {
            lines.push(("", parts.join(", ")));
        }
    }
    if let Some(g) = r.growth_bytes_per_second {
        let verb = if g < 0.0 { "shrinking" } else { "growing" };
        // Shown to the byte: `as` saturates (NaN is 0).
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let per_second = human::bytes(g.abs() as u64);
        lines.push(("growth", format!("{verb} {per_second}/s when chosen")));
    }
    lines
}

fn text_record(r: &ActionRecord, out: &mut impl Write) -> anyhow::Result<()> {
    writeln!(out, "Record {} at {}: {}", r.id, r.time, headline(r))?;
    let mut field = |name: &str, value: String| writeln!(out, "  {name:<12} {value}");
    if let Some(uid) = &r.pod_uid {
        let source = r
            .identity_source
            .map(|s| format!(" (named from {})", s.name()))
            .unwrap_or_default();
        field("pod UID", format!("{uid}{source}"))?;
    }
    if let Some(v) = &r.victim {
        field("cgroup", v.clone())?;
    }
    if let Some(c) = r.class {
        field("class", c.name().to_owned())?;
    }
    // The sandbox's cgroup is listed with an empty name.
    let named: Vec<&str> = r
        .container_names
        .iter()
        .map(String::as_str)
        .filter(|n| !n.is_empty())
        .collect();
    if !named.is_empty() {
        field("containers", named.join(", "))?;
    }
    if r.kind == RecordKind::KernelOom {
        let why = match r.constraint {
            Some(OomConstraint::Memcg) => format!(
                "memcg: {} reached its memory.max (a container's or pod's limit); oomwarden acts on node pressure, not on limits",
                r.oom_memcg.as_deref().unwrap_or("a cgroup")
            ),
            Some(OomConstraint::Global) => {
                "global: the node ran out of memory before oomwarden acted".to_owned()
            }
            None => "not said (the report was cut)".to_owned(),
        };
        field("constraint", why)?;
        if let Some(m) = &r.task_memcg {
            field("task memcg", m.clone())?;
        }
        if let Some(d) = r.detected_by {
            field(
                "seen in",
                match d {
                    oomwarden_model::DetectedBy::Kmsg => "the kernel log".to_owned(),
                    oomwarden_model::DetectedBy::MemoryEvents => {
                        "memory.events only (the kernel log missed it: no PID, no name)".to_owned()
                    }
                },
            )?;
        }
    } else if r.victim.is_some() {
        let listed = r.processes.len();
        field("processes", format!("{} killed", r.pids_total()))?;
        for p in r.processes.iter().take(MAX_PROCESSES_SHOWN) {
            field("", p.clone())?;
        }
        if listed > MAX_PROCESSES_SHOWN {
            field(
                "",
                format!(
                    "… and {} more command lines in the record",
                    listed - MAX_PROCESSES_SHOWN
                ),
            )?;
        }
        for (name, value) in memory_lines(r) {
            field(name, value)?;
        }
        if let Some(ms) = r.kill_duration_ms {
            field(
                "verified",
                format!("empty {} ms after cgroup.kill", human::number(ms)),
            )?;
        }
        if let Some(err) = &r.error {
            field("error", err.clone())?;
        }
    }
    Ok(())
}

fn text_trigger(t: &Trigger, out: &mut impl Write) -> anyhow::Result<()> {
    writeln!(
        out,
        "\nWhy it fired ({}):",
        if t.source == "record" {
            "the triggerExpression recorded with the action"
        } else {
            "the triggerExpression in force now"
        }
    )?;
    if t.comparisons.is_empty() {
        writeln!(
            out,
            "  {} (no comparison to show)",
            t.expression.replace('\n', " ")
        )?;
    }
    for c in &t.comparisons {
        let verdict = match c.holds {
            Some(true) => "held",
            Some(false) => "did not hold",
            None => "error",
        };
        writeln!(out, "  {}", c.left)?;
        writeln!(
            out,
            "      {} {} {}   {verdict}",
            c.left_value, c.op, c.right_value
        )?;
    }
    Ok(())
}

fn text_ranking(rk: &Ranking, out: &mut impl Write) -> anyhow::Result<()> {
    writeln!(
        out,
        "\nWhy this one ({}{}):",
        match rk.source {
            "flight-recorder" => "every candidate, from the flight recorder's window",
            _ => "the victim and the runners-up the record lists",
        },
        rk.eligible
            .map(|n| format!("; {n} eligible"))
            .unwrap_or_default()
    )?;
    if let Some(x) = &rk.expression {
        writeln!(out, "  ranking: {}", x.replace('\n', " "))?;
    }
    if !rk.excluded.is_empty() {
        let parts: Vec<String> = rk
            .excluded
            .iter()
            .map(|(why, n)| match why.as_str() {
                "node-critical" => {
                    format!("{n} node-critical (protect.nodeCritical: never a candidate)")
                }
                other => format!("{n} {other}"),
            })
            .collect();
        writeln!(out, "  left out: {}", parts.join(", "))?;
    }
    writeln!(
        out,
        "  {:<4} {:>16} {:<11} {:<32} CGROUP",
        "#", "SCORE", "CLASS", "POD"
    )?;
    for c in &rk.candidates {
        let pod = match (&c.namespace, &c.pod_name) {
            (Some(ns), Some(n)) => format!("{ns}/{n}"),
            _ => "-".to_owned(),
        };
        let mark = if c.victim {
            "   ◀ chosen".to_owned()
        } else if c.eligible {
            String::new()
        } else {
            format!("   ({})", c.reason)
        };
        writeln!(
            out,
            "  {:<4} {:>16} {:<11} {:<32} {}{mark}",
            c.rank.map_or_else(|| "-".to_owned(), |n| n.to_string()),
            c.score.map_or_else(|| "-".to_owned(), human::number),
            c.class,
            pod,
            c.cgroup,
        )?;
    }
    Ok(())
}

fn text_around(name: &str, around: &Around, out: &mut impl Write) -> anyhow::Result<()> {
    writeln!(out, "\n{name}:")?;
    for (when, records) in [("before", &around.before), ("after", &around.after)] {
        if records.is_empty() {
            writeln!(out, "  {when:<7}none")?;
        }
        for (i, o) in records.iter().enumerate() {
            let label = if i == 0 { when } else { "" };
            writeln!(
                out,
                "  {label:<7}#{} {} {}{}",
                o.id,
                o.time,
                o.outcome.name(),
                match (o.kind, o.constraint) {
                    (RecordKind::KernelOom, Some(c)) => format!(
                        " ({}) {} pid {}",
                        c.name(),
                        o.victim_comm.as_deref().unwrap_or("?"),
                        o.victim_pid
                            .map_or_else(|| "?".to_owned(), |p| p.to_string())
                    ),
                    _ => String::new(),
                }
            )?;
        }
    }
    Ok(())
}
