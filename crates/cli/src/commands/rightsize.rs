//! `oomwarden rightsize`: for each pod and container on the node, what it asks for, what it
//! really used (the kernel's high-water mark included) and the request and limit that fit, with
//! the reason; from the running daemon's usage history, else its file.

use crate::terminal::clean;
use std::io::Write;
use std::path::{Path, PathBuf};

use oomwarden_daemon::api;
use oomwarden_kube::pod::{FeatureGates, Pod, PodQos, parse_pods, score};
use oomwarden_usage::{Recommendation, Stored, Usage};
use serde::Serialize;

use super::actions::StateArgs;
use super::read_input;
use crate::exit::{Exit, Fail};
use crate::human::bytes;
use crate::output::OutputArgs;

/// Arguments of `oomwarden rightsize`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    state: StateArgs,
    /// `kubectl get pods -A -o json` output: each container's request and limit, names for the
    /// containers, and the `oom_score_adj` the recommendation would give.
    #[arg(long, value_name = "FILE")]
    pods: Option<PathBuf>,
    /// Read this history file instead of asking the daemon (its `usage.json`, or a copy).
    #[arg(long, value_name = "FILE", conflicts_with = "state_dir")]
    from: Option<PathBuf>,
    /// The node's /proc, for its memory capacity (`MemTotal`).
    #[arg(long, value_name = "DIR", default_value = "/proc")]
    proc_root: PathBuf,
    #[command(flatten)]
    output: OutputArgs,
}

/// The report `-o json` prints.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Report {
    /// `daemon` or the file read.
    source: String,
    /// When the history was read or saved (RFC 3339).
    as_of: String,
    /// The node's memory and the sums over its pods.
    node: NodeRow,
    /// Pods with no memory request first (BestEffort: killed first by every OOM killer),
    /// then by namespace and name.
    pods: Vec<PodRow>,
}

/// The node's numbers.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct NodeRow {
    /// `MemTotal` (the kubelet's capacity), when read.
    capacity_bytes: Option<u64>,
    /// Sum of the pods' memory requests (pods of `--pods` on this node).
    requests_bytes: Option<u64>,
    /// Sum of the recommended requests.
    recommended_requests_bytes: u64,
    /// Sum of the pods' working sets now.
    working_set_bytes: u64,
    /// Sum of the pods' true peaks (each pod's own; they need not coincide).
    peaks_bytes: u64,
}

/// One pod.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct PodRow {
    namespace: Option<String>,
    pod: Option<String>,
    #[serde(rename = "podUID")]
    pod_uid: String,
    /// From `--pods`.
    qos_class: Option<PodQos>,
    /// No container asks for memory.
    no_request: Option<bool>,
    request_bytes: Option<u64>,
    working_set_bytes: u64,
    unreclaimable_bytes: u64,
    file_bytes: u64,
    swap_bytes: u64,
    /// The pod cgroup's true peak.
    peak_bytes: Option<u64>,
    recommended_request_bytes: u64,
    recommended_limit_bytes: u64,
    /// Seen at the history's last reading.
    running: bool,
    containers: Vec<ContainerRow>,
}

/// One container.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ContainerRow {
    name: String,
    request_bytes: Option<u64>,
    limit_bytes: Option<u64>,
    working_set_bytes: u64,
    unreclaimable_bytes: u64,
    file_bytes: u64,
    swap_bytes: u64,
    /// The highest `memory.peak` kept (the kernel's mark, a spike between readings included)
    /// and the two readings it fell between, the highest reading, what a scrape a minute saw.
    #[serde(flatten)]
    seen: oomwarden_usage::Seen,
    recommended_request_bytes: u64,
    recommended_limit_bytes: u64,
    /// The `oom_score_adj` the kubelet gives it now (from `--pods`).
    oom_score_adj: Option<i64>,
    /// … and would with the recommendation applied to the pod.
    recommended_oom_score_adj: Option<i64>,
    oom_kills: usize,
    history_seconds: i64,
    reason: String,
}

pub(crate) fn run(args: &Args, out: &mut impl Write, err: &mut impl Write) -> anyhow::Result<Exit> {
    let (stored, source) = match &args.from {
        Some(file) => (from_file(file)?, file.display().to_string()),
        None => from_daemon_or_file(&args.state, err)?,
    };
    let pods = match &args.pods {
        Some(file) => {
            let text = read_input(file).map_err(|e| Fail::failure(format!("oomwarden: {e:#}")))?;
            Some(parse_pods(&text).map_err(|e| Fail::failure(format!("{}: {e}", file.display())))?)
        }
        None => None,
    };
    let capacity = oomwarden_procfs::ProcFs::new(&args.proc_root)
        .node_memory()
        .ok()
        .map(|(total, _)| total);
    let report = build(&stored, pods.as_deref(), capacity, source)?;
    if args.output.structured(&report, out)? {
        return Ok(Exit::Ok);
    }
    print_table(&report, args.output.is_wide(), out)?;
    Ok(Exit::Ok)
}

/// The daemon's history over its socket, else `<stateDir>/usage.json`.
fn from_daemon_or_file(
    state: &StateArgs,
    err: &mut impl Write,
) -> anyhow::Result<(Stored, String)> {
    let dir = state.dir()?;
    match api::request(&dir, "usage") {
        Ok(answer) => {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&answer)
                && let Some(e) = v.get("error").and_then(serde_json::Value::as_str)
            {
                return Err(Fail::failure(format!("oomwarden: the daemon says: {e}")).into());
            }
            let stored = oomwarden_usage::from_json(&answer).map_err(|e| {
                Fail::failure(format!("oomwarden: the daemon's usage history: {e}"))
            })?;
            Ok((stored, "daemon".to_owned()))
        }
        Err(e) => {
            let file = dir.join(oomwarden_usage::FILE_NAME);
            writeln!(
                err,
                "oomwarden is not running ({e}); reading the history it saved, {}",
                file.display()
            )?;
            Ok((from_file(&file)?, file.display().to_string()))
        }
    }
}

fn from_file(file: &Path) -> anyhow::Result<Stored> {
    let text = read_input(file).map_err(|e| Fail::failure(format!("oomwarden: {e:#}")))?;
    Ok(oomwarden_usage::from_json(&text)
        .map_err(|e| Fail::failure(format!("{}: {e}", file.display())))?)
}

/// The report: the history's pods and containers, joined by UID and name with `pods`.
pub(crate) fn build(
    stored: &Stored,
    pods: Option<&[Pod]>,
    capacity: Option<u64>,
    source: String,
) -> anyhow::Result<Report> {
    let usages = oomwarden_usage::usages(&stored.history);
    let newest = usages.iter().map(Usage::last_seen).max().unwrap_or(0);
    let cap = capacity.and_then(|c| i64::try_from(c).ok());
    let mut rows: Vec<PodRow> = Vec::new();
    let mut uids: Vec<&str> = usages.iter().map(|u| u.pod_uid.as_str()).collect();
    uids.dedup();
    for uid in uids {
        let mine: Vec<&Usage> = usages.iter().filter(|u| u.pod_uid == uid).collect();
        let manifest = pods.and_then(|p| p.iter().find(|p| p.metadata.uid.as_deref() == Some(uid)));
        rows.push(pod_row(uid, &mine, manifest, cap, newest, &stored.params)?);
    }
    rows.sort_by(|a, b| {
        (
            b.no_request == Some(true),
            !a.running,
            &a.namespace,
            &a.pod,
            &a.pod_uid,
        )
            .cmp(&(
                a.no_request == Some(true),
                !b.running,
                &b.namespace,
                &b.pod,
                &b.pod_uid,
            ))
    });
    let running: Vec<&PodRow> = rows.iter().filter(|p| p.running).collect();
    let node = NodeRow {
        capacity_bytes: capacity,
        requests_bytes: pods.map(|_| running.iter().filter_map(|p| p.request_bytes).sum()),
        recommended_requests_bytes: running.iter().map(|p| p.recommended_request_bytes).sum(),
        working_set_bytes: running.iter().map(|p| p.working_set_bytes).sum(),
        peaks_bytes: running.iter().filter_map(|p| p.peak_bytes).sum(),
    };
    Ok(Report {
        source,
        as_of: oomwarden_usage::stamp(if newest > 0 { newest } else { stored.saved_at }),
        node,
        pods: rows,
    })
}

fn pod_row(
    uid: &str,
    usages: &[&Usage],
    manifest: Option<&Pod>,
    capacity: Option<i64>,
    newest: i64,
    params: &oomwarden_usage::Params,
) -> anyhow::Result<PodRow> {
    let own = usages.iter().find(|u| u.container.is_none());
    let now = own.map(|u| u.now()).unwrap_or_default();
    let known = usages.iter().find_map(|u| u.pod.clone());
    // Container IDs → names, from the manifest's statuses (the daemon may not have known).
    let id_names: Vec<(&str, &str)> = manifest
        .map(|m| {
            m.status
                .container_statuses
                .iter()
                .chain(&m.status.init_container_statuses)
                .map(|s| (s.id(), s.name.as_str()))
                .collect()
        })
        .unwrap_or_default();
    let score_now = match (manifest, capacity) {
        (Some(m), Some(c)) => Some(
            score(m, c, FeatureGates::default())
                .map_err(|e| Fail::failure(format!("pod {}: {e}", m.metadata.name)))?,
        ),
        _ => None,
    };
    let mut containers = Vec::new();
    for u in usages.iter().filter(|u| u.container.is_some()) {
        let Some(r) = oomwarden_usage::recommend(u, params) else {
            continue;
        };
        let raw = u.container.clone().unwrap_or_default();
        let name = id_names
            .iter()
            .find(|(id, _)| *id == raw)
            .map_or(raw, |(_, n)| (*n).to_owned());
        // A container the manifest does not name (a sandbox the runtime did not say was one).
        if manifest.is_some_and(|m| {
            !m.spec
                .containers
                .iter()
                .chain(&m.spec.init_containers)
                .any(|c| c.name == name)
        }) {
            continue;
        }
        containers.push((name, *u, r));
    }
    containers.sort_by(|a, b| a.0.cmp(&b.0));
    // The pod as it would be with the recommendations applied.
    let score_after = manifest
        .zip(capacity)
        .and_then(|(m, c)| applied(m, &containers, c));
    let rows: Vec<ContainerRow> = containers
        .into_iter()
        .map(|(name, u, r)| {
            container_row(
                name,
                u,
                r,
                score_now.as_ref(),
                score_after.as_ref(),
                manifest,
            )
        })
        .collect();
    let peak = own
        .and_then(|u| oomwarden_usage::recommend(u, params))
        .map(|r| r.seen.peak_bytes);
    let request = score_now
        .as_ref()
        .map(|s| u64::try_from(s.memory_request_bytes).unwrap_or(u64::MAX))
        .or_else(|| manifest.map(|_| 0));
    Ok(PodRow {
        namespace: manifest
            .and_then(|m| m.metadata.namespace.clone())
            .or_else(|| known.as_ref().map(|k| k.namespace.clone())),
        pod: manifest
            .map(|m| m.metadata.name.clone())
            .or_else(|| known.as_ref().map(|k| k.name.clone())),
        pod_uid: uid.to_owned(),
        qos_class: score_now.as_ref().map(|s| s.qos_class),
        no_request: request.map(|r| r == 0),
        request_bytes: request,
        working_set_bytes: now.working_set_bytes,
        unreclaimable_bytes: now.unreclaimable_bytes,
        file_bytes: now.file_bytes,
        swap_bytes: now.swap_bytes,
        peak_bytes: peak,
        recommended_request_bytes: rows.iter().map(|c| c.recommended_request_bytes).sum(),
        recommended_limit_bytes: rows.iter().map(|c| c.recommended_limit_bytes).sum(),
        running: usages.iter().any(|u| u.last_seen() == newest),
        containers: rows,
    })
}

/// The pod's numbers with each container's recommended request and limit written in (its QoS
/// class computed again, not taken from its status).
fn applied(
    manifest: &Pod,
    containers: &[(String, &Usage, Recommendation)],
    capacity: i64,
) -> Option<oomwarden_kube::pod::PodScore> {
    let mut after = manifest.clone();
    for spec in after
        .spec
        .containers
        .iter_mut()
        .chain(after.spec.init_containers.iter_mut())
    {
        if let Some((_, _, r)) = containers.iter().find(|(n, _, _)| *n == spec.name) {
            spec.resources.requests.insert(
                "memory".into(),
                serde_json::json!(r.request_bytes.to_string()),
            );
            spec.resources.limits.insert(
                "memory".into(),
                serde_json::json!(r.limit_bytes.to_string()),
            );
        }
    }
    after.status.qos_class = None;
    score(&after, capacity, FeatureGates::default()).ok()
}

fn container_row(
    name: String,
    u: &Usage,
    r: Recommendation,
    now: Option<&oomwarden_kube::pod::PodScore>,
    after: Option<&oomwarden_kube::pod::PodScore>,
    manifest: Option<&Pod>,
) -> ContainerRow {
    let of = |s: Option<&oomwarden_kube::pod::PodScore>| {
        s.and_then(|s| s.containers.iter().find(|c| c.name == name).cloned())
    };
    let (c_now, c_after) = (of(now), of(after));
    let n = u.now();
    ContainerRow {
        request_bytes: c_now
            .as_ref()
            .map(|c| u64::try_from(c.memory_request_bytes).unwrap_or(u64::MAX))
            .or_else(|| manifest.map(|_| 0)),
        limit_bytes: match &c_now {
            Some(c) => c.memory_limit_bytes.and_then(|l| u64::try_from(l).ok()),
            None => n.max_bytes,
        },
        working_set_bytes: n.working_set_bytes,
        unreclaimable_bytes: n.unreclaimable_bytes,
        file_bytes: n.file_bytes,
        swap_bytes: n.swap_bytes,
        seen: r.seen,
        recommended_request_bytes: r.request_bytes,
        recommended_limit_bytes: r.limit_bytes,
        oom_score_adj: c_now.as_ref().map(|c| c.oom_score_adj),
        recommended_oom_score_adj: c_after.as_ref().map(|c| c.oom_score_adj),
        oom_kills: r.oom_kills,
        history_seconds: r.history_seconds,
        reason: r.reason,
        name,
    }
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_owned(), bytes)
}

/// The table: a line per container under its pod, then the node's sums and the
/// `oom_score_adj` changes; `wide` adds the reasons.
fn print_table(report: &Report, wide: bool, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "usage history: {} (as of {})",
        report.source, report.as_of
    )?;
    let mut lines = vec![vec![
        "POD".to_owned(),
        "CONTAINER".into(),
        "REQUEST".into(),
        "LIMIT".into(),
        "WSET".into(),
        "UNRECLAIMABLE".into(),
        "PEAK".into(),
        "REC REQUEST".into(),
        "REC LIMIT".into(),
        "OOM KILLS".into(),
    ]];
    let mut changes = Vec::new();
    let mut reasons = Vec::new();
    for p in &report.pods {
        // Names from the node (the runtime's, the pod-log directories'): one line each.
        let pod = match (&p.namespace, &p.pod) {
            (Some(ns), Some(name)) => format!("{}/{}", clean(ns), clean(name)),
            _ => clean(&p.pod_uid).into_owned(),
        };
        let pod = if p.no_request == Some(true) {
            format!("{pod} (no request)")
        } else {
            pod
        };
        let pod = if p.running {
            pod
        } else {
            format!("{pod} (gone)")
        };
        for c in &p.containers {
            let name = clean(&c.name);
            lines.push(vec![
                pod.clone(),
                name.clone().into_owned(),
                opt(c.request_bytes),
                opt(c.limit_bytes),
                bytes(c.working_set_bytes),
                bytes(c.unreclaimable_bytes),
                bytes(c.seen.peak_bytes),
                bytes(c.recommended_request_bytes),
                bytes(c.recommended_limit_bytes),
                c.oom_kills.to_string(),
            ]);
            if let (Some(a), Some(b)) = (c.oom_score_adj, c.recommended_oom_score_adj)
                && a != b
            {
                changes.push(format!("  {pod} {name}: {a} -> {b}"));
            }
            reasons.push(format!("  {pod} {name}: {}", clean(&c.reason)));
        }
    }
    columns(&lines, out)?;
    let n = &report.node;
    writeln!(
        out,
        "\nnode: capacity {}, requests {}, recommended requests {}, working set now {}, sum of peaks {}",
        opt(n.capacity_bytes),
        opt(n.requests_bytes),
        bytes(n.recommended_requests_bytes),
        bytes(n.working_set_bytes),
        bytes(n.peaks_bytes),
    )?;
    if !changes.is_empty() {
        writeln!(out, "\noom_score_adj with the recommendations applied:")?;
        for c in &changes {
            writeln!(out, "{c}")?;
        }
    }
    if wide {
        writeln!(out, "\nwhy:")?;
        for r in &reasons {
            writeln!(out, "{r}")?;
        }
    }
    Ok(())
}

/// Rows in columns as wide as their widest cell (the first two left-aligned, numbers right).
fn columns(rows: &[Vec<String>], out: &mut impl Write) -> std::io::Result<()> {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            let w = cell.chars().count();
            match widths.get_mut(i) {
                Some(x) => *x = (*x).max(w),
                None => widths.push(w),
            }
        }
    }
    for row in rows {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
            let pad = " ".repeat(w.saturating_sub(cell.chars().count()));
            if i > 0 {
                line.push_str("  ");
            }
            if i < 2 {
                line.push_str(cell);
                line.push_str(&pad);
            } else {
                line.push_str(&pad);
                line.push_str(cell);
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}
