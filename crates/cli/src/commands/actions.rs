//! `oomwarden actions` and `oomwarden status`: what the daemon did and is doing, from its
//! Unix socket, or from the persisted history when it is not running.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use oomwarden_daemon::api::{self, Status};
use oomwarden_daemon::history;
use oomwarden_model::{ActionRecord, QosClass, RecordKind};
use oomwarden_node::load_settings;
use serde::Serialize;

use crate::exit::{Exit, Fail};

/// Where the daemon keeps its state.
#[derive(Debug, clap::Args)]
pub(crate) struct StateArgs {
    /// State directory (default: `stateDir` of --config, else /var/lib/oomwarden).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Configuration file to take `stateDir` from.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

impl StateArgs {
    pub(crate) fn dir(&self) -> anyhow::Result<PathBuf> {
        if let Some(d) = &self.state_dir {
            return Ok(d.clone());
        }
        Ok(self.settings()?.warden.state_dir)
    }

    /// The configuration named by `--config`, else the default file or the embedded defaults.
    pub(crate) fn settings(&self) -> anyhow::Result<oomwarden_config::Settings> {
        Ok(load_settings(self.config.as_deref(), &Default::default())?)
    }
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// A table.
    Table,
    /// The table with the containers and the kernel's victim (PID, command) too.
    Wide,
    /// Full records, one JSON object per line.
    Json,
    /// `talosctl get oomactions -o yaml`-style documents.
    Yaml,
}

/// Arguments of `oomwarden actions`.
#[derive(Debug, clap::Args)]
pub(crate) struct ActionsArgs {
    #[command(flatten)]
    state: StateArgs,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    output: Format,
    /// Same as `-o json`.
    #[arg(long, conflicts_with = "output")]
    json: bool,
    /// Keep printing new records as they come (until interrupted).
    #[arg(long)]
    follow: bool,
    /// Only records of this kind: oomwarden's own actions, or the kernel's OOM kills.
    #[arg(long, value_enum)]
    kind: Option<KindArg>,
    /// Count the kills instead of listing the records: `workload`, one line per workload
    /// (Deployment, StatefulSet, DaemonSet, Job, or the pod itself) with its kills by
    /// oomwarden and by the kernel, most killed first.
    #[arg(long, value_enum, conflicts_with = "follow")]
    by: Option<ByArg>,
}

/// `--by` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ByArg {
    /// What made each killed pod (its namespace and owner).
    Workload,
}

/// One workload's kills (`actions --by workload`).
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct WorkloadRow {
    workload: oomwarden_model::Workload,
    /// oomwarden's kills (`killed`, `not-verified`; with `killMethod: kernel-oom` too).
    kills: u64,
    /// The kernel's own OOM kills (not those oomwarden asked for).
    kernel_kills: u64,
    /// The first and the last kill's record time.
    first: String,
    last: String,
}

/// The kills of `records` by workload, most killed first (then by name); and how many kills
/// had no known workload.
fn by_workload(records: &[ActionRecord]) -> (Vec<WorkloadRow>, u64) {
    let mut rows: std::collections::BTreeMap<oomwarden_model::Workload, WorkloadRow> =
        std::collections::BTreeMap::new();
    let mut unknown = 0;
    for r in records {
        // What the ranking's `workload_kills` counts.
        if !r.is_kill() {
            continue;
        }
        let Some(workload) = &r.workload else {
            unknown += 1;
            continue;
        };
        let row = rows.entry(workload.clone()).or_insert_with(|| WorkloadRow {
            workload: workload.clone(),
            kills: 0,
            kernel_kills: 0,
            first: r.time.clone(),
            last: r.time.clone(),
        });
        match r.kind {
            RecordKind::Oomwarden => row.kills += 1,
            RecordKind::KernelOom => row.kernel_kills += 1,
        }
        row.last.clone_from(&r.time);
    }
    let mut rows: Vec<WorkloadRow> = rows.into_values().collect();
    rows.sort_by(|a, b| {
        (b.kills + b.kernel_kills)
            .cmp(&(a.kills + a.kernel_kills))
            .then_with(|| a.workload.cmp(&b.workload))
    });
    (rows, unknown)
}

fn print_by_workload(
    records: &[ActionRecord],
    format: Format,
    out: &mut impl Write,
    err: &mut impl Write,
) -> anyhow::Result<()> {
    let (rows, unknown) = by_workload(records);
    match format {
        Format::Json => {
            for row in &rows {
                writeln!(out, "{}", serde_json::to_string(row)?)?;
            }
        }
        Format::Yaml => write!(out, "{}", serde_saphyr::to_string(&rows)?)?,
        Format::Table | Format::Wide => {
            writeln!(
                out,
                "{:<16} {:<12} {:<32} {:>6} {:>7} {:<25} LAST",
                "NAMESPACE", "KIND", "NAME", "KILLS", "KERNEL", "FIRST"
            )?;
            for row in &rows {
                let w = &row.workload;
                writeln!(
                    out,
                    "{:<16} {:<12} {:<32} {:>6} {:>7} {:<25} {}",
                    crate::terminal::clean(&w.namespace),
                    format!("{:?}", w.kind),
                    crate::terminal::clean(&w.name),
                    row.kills,
                    row.kernel_kills,
                    row.first,
                    row.last
                )?;
            }
        }
    }
    if unknown > 0 {
        let kills = if unknown == 1 { "kill" } else { "kills" };
        writeln!(
            err,
            "({unknown} {kills} of pods whose namespace and name were not known, or of cgroups that are no pod, not listed)"
        )?;
    }
    Ok(())
}

/// `--kind` values (the records' `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum KindArg {
    /// What oomwarden did (kills, dry runs, no eligible cgroup).
    Oomwarden,
    /// OOM kills the kernel did.
    KernelOom,
}

impl KindArg {
    fn admits(self, record: &ActionRecord) -> bool {
        record.kind
            == match self {
                KindArg::Oomwarden => RecordKind::Oomwarden,
                KindArg::KernelOom => RecordKind::KernelOom,
            }
    }
}

/// Arguments of `oomwarden status`.
#[derive(Debug, clap::Args)]
pub(crate) struct StatusArgs {
    #[command(flatten)]
    state: StateArgs,
    #[command(flatten)]
    output: crate::output::OutputArgs,
}

/// Records from the daemon (`actions since=N`), or from the file when it does not answer.
fn fetch(dir: &Path, since: Option<u64>) -> anyhow::Result<(Vec<ActionRecord>, &'static str)> {
    let line = since.map_or("actions".to_owned(), |s| format!("actions since={s}"));
    match api::request(dir, &line) {
        Ok(answer) => Ok((serde_json::from_str(&answer)?, "daemon")),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(anyhow::anyhow!(
            "{}: permission denied: the action API and history are root-only (they hold command lines)",
            dir.join(api::SOCKET_NAME).display()
        )),
        Err(_) => {
            let read = history::read(dir)?;
            let records = read
                .records
                .into_iter()
                .filter(|r| since.is_none_or(|s| r.id > s))
                .collect();
            Ok((records, "file"))
        }
    }
}

pub(crate) fn actions(
    args: &ActionsArgs,
    out: &mut impl Write,
    err: &mut impl Write,
) -> anyhow::Result<Exit> {
    let dir = args.state.dir()?;
    let format = if args.json { Format::Json } else { args.output };
    let (records, source) = match fetch(&dir, None) {
        Ok(r) => r,
        Err(e) => {
            return Err(Fail::failure(format!("oomwarden: {e:#}")).into());
        }
    };
    let file = dir.join(history::FILE_NAME);
    if source == "file" && !file.exists() {
        // Not an error: a node where nothing was ever recorded.
        writeln!(
            err,
            "oomwarden: no action history at {} (the daemon is not answering and has recorded nothing there)",
            file.display()
        )?;
    } else if source == "file" && matches!(format, Format::Table | Format::Wide) {
        writeln!(
            err,
            "(the daemon is not answering; read {})",
            file.display()
        )?;
    }
    let mut last = records.last().map(|r| r.id);
    let wanted = |r: &ActionRecord| args.kind.is_none_or(|k| k.admits(r));
    let records: Vec<ActionRecord> = records.into_iter().filter(wanted).collect();
    if args.by == Some(ByArg::Workload) {
        print_by_workload(&records, format, out, err)?;
        return Ok(Exit::Ok);
    }
    print(&records, format, true, out)?;
    if !args.follow {
        return Ok(Exit::Ok);
    }
    loop {
        out.flush()?;
        std::thread::sleep(Duration::from_secs(1));
        let (new, _) = match fetch(&dir, last) {
            Ok(r) => r,
            Err(e) => {
                writeln!(err, "oomwarden: {e:#}")?;
                continue;
            }
        };
        if let Some(r) = new.last() {
            last = Some(r.id);
        }
        let new: Vec<ActionRecord> = new.into_iter().filter(wanted).collect();
        print(&new, format, false, out)?;
    }
}

fn print(
    records: &[ActionRecord],
    format: Format,
    header: bool,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    match format {
        Format::Json => {
            for r in records {
                writeln!(out, "{}", serde_json::to_string(r)?)?;
            }
        }
        Format::Yaml => {
            for r in records {
                write!(out, "{}", talos_yaml(r)?)?;
            }
        }
        Format::Table | Format::Wide => {
            let wide = format == Format::Wide;
            if header {
                writeln!(
                    out,
                    "{:<5} {:<10} {:<25} {:<19} {:<11} {:>14} {:<16} {:<24} {:<36} {}VICTIM",
                    "ID",
                    "KIND",
                    "TIME",
                    "OUTCOME",
                    "CLASS",
                    "SCORE",
                    "NAMESPACE",
                    "POD",
                    "POD UID",
                    if wide {
                        format!("{:<24} {:<24} ", "CONTAINERS", "KERNEL VICTIM")
                    } else {
                        String::new()
                    }
                )?;
            }
            for r in records {
                // Names anyone on the node may have chosen: no control character is printed.
                let r = &crate::terminal::record_names(r);
                // The kernel's kills have no score; their constraint says why instead.
                let (outcome, score) = match r.kind {
                    RecordKind::Oomwarden => (
                        r.outcome.name().to_owned(),
                        oomwarden_model::format_number(r.score),
                    ),
                    RecordKind::KernelOom => (
                        format!(
                            "{} ({})",
                            r.outcome.name(),
                            r.constraint
                                .map_or("?", oomwarden_model::OomConstraint::name)
                        ),
                        "-".to_owned(),
                    ),
                };
                let extra = if wide {
                    let names: Vec<&str> = r
                        .container_names
                        .iter()
                        .map(String::as_str)
                        .filter(|n| !n.is_empty())
                        .collect();
                    let victim = match (&r.victim_comm, r.victim_pid) {
                        (Some(comm), Some(pid)) => format!("{comm} ({pid})"),
                        (None, Some(pid)) => pid.to_string(),
                        _ => "-".to_owned(),
                    };
                    format!(
                        "{:<24} {:<24} ",
                        if names.is_empty() {
                            "-".to_owned()
                        } else {
                            names.join(",")
                        },
                        victim
                    )
                } else {
                    String::new()
                };
                writeln!(
                    out,
                    "{:<5} {:<10} {:<25} {:<19} {:<11} {:>14} {:<16} {:<24} {:<36} {extra}{}",
                    r.id,
                    r.kind.name(),
                    r.time,
                    outcome,
                    r.class.map_or("-", QosClass::name),
                    score,
                    r.namespace.as_deref().unwrap_or("-"),
                    r.pod_name.as_deref().unwrap_or("-"),
                    r.pod_uid.as_deref().unwrap_or("-"),
                    r.victim.as_deref().unwrap_or("-"),
                )?;
            }
        }
    }
    Ok(())
}

/// A record as `talosctl get oomactions -o yaml` prints an `OOMAction`: metadata, then the
/// spec with Talos's fields first (`triggerContext`, `score`, `processes`) and oomwarden's
/// after them.
fn talos_yaml(r: &ActionRecord) -> anyhow::Result<String> {
    #[derive(Serialize)]
    struct Metadata<'a> {
        namespace: &'a str,
        #[serde(rename = "type")]
        kind: &'a str,
        id: String,
        version: u32,
        owner: &'a str,
        phase: &'a str,
        created: &'a str,
        updated: &'a str,
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Spec<'a> {
        // Talos's fields, `omitempty` as in Talos.
        #[serde(skip_serializing_if = "str::is_empty")]
        trigger_context: &'a str,
        #[serde(skip_serializing_if = "is_zero")]
        score: f64,
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        processes: &'a [String],
        outcome: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        victim: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        class: Option<&'a str>,
        #[serde(rename = "podUID", skip_serializing_if = "Option::is_none")]
        pod_uid: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        namespace: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pod_name: Option<&'a str>,
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        container_names: &'a [String],
        #[serde(skip_serializing_if = "Option::is_none")]
        identity_source: Option<&'a str>,
        #[serde(skip_serializing_if = "<[u32]>::is_empty")]
        pids: &'a [u32],
        #[serde(skip_serializing_if = "Option::is_none")]
        memory_current_bytes: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        kill_duration_ms: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a str>,
        // A kernel OOM kill's fields (absent from oomwarden's own records, as in Talos).
        #[serde(skip_serializing_if = "Option::is_none")]
        kind: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        constraint: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        victim_pid: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        victim_comm: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        task_memcg: Option<&'a str>,
    }
    #[derive(Serialize)]
    struct Doc<'a> {
        metadata: Metadata<'a>,
        spec: Spec<'a>,
    }
    let doc = Doc {
        metadata: Metadata {
            namespace: "runtime",
            kind: "OOMActions.talos.dev",
            id: r.id.to_string(),
            version: 1,
            owner: "oomwarden",
            phase: "running",
            created: &r.time,
            updated: &r.time,
        },
        spec: Spec {
            trigger_context: &r.trigger_context,
            score: r.score,
            processes: &r.processes,
            outcome: r.outcome.name(),
            victim: r.victim.as_deref(),
            class: r.class.map(QosClass::name),
            pod_uid: r.pod_uid.as_deref(),
            namespace: r.namespace.as_deref(),
            pod_name: r.pod_name.as_deref(),
            container_names: &r.container_names,
            identity_source: r.identity_source.map(oomwarden_model::IdentitySource::name),
            pids: &r.pids,
            memory_current_bytes: r.memory_current_bytes,
            kill_duration_ms: r.kill_duration_ms,
            error: r.error.as_deref(),
            kind: (r.kind != RecordKind::Oomwarden).then(|| r.kind.name()),
            constraint: r.constraint.map(oomwarden_model::OomConstraint::name),
            victim_pid: r.victim_pid,
            victim_comm: r.victim_comm.as_deref(),
            task_memcg: r.task_memcg.as_deref(),
        },
    };
    let text = go_yaml_score(&serde_saphyr::to_string(&doc)?, r.score);
    Ok(format!("---\n{text}\n"))
}

/// Talos's `score` as Go's YAML writes a float64 (`8.44935168e+08`, not `844935168.0`): the
/// spec's one line at its indentation (the trigger context before it is one JSON line).
fn go_yaml_score(yaml: &str, score: f64) -> String {
    yaml.lines()
        .map(|l| {
            if l.starts_with("  score: ") {
                format!("  score: {}", oomwarden_model::format_go_yaml_float(score))
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

pub(crate) fn status(args: &StatusArgs, out: &mut impl Write) -> anyhow::Result<Exit> {
    let dir = args.state.dir()?;
    let status: Status = match api::request(&dir, "status") {
        Ok(answer) => serde_json::from_str(&answer)?,
        Err(e) => {
            let why = if e.kind() == std::io::ErrorKind::PermissionDenied {
                "permission denied (the action API is root-only)".to_owned()
            } else {
                format!("oomwarden is not running ({e})")
            };
            let mut lines = vec![format!("{}: {why}", dir.join(api::SOCKET_NAME).display())];
            if let Ok(read) = history::read(&dir)
                && let Some(last) = read.records.last()
            {
                lines.push(format!(
                    "last recorded action: #{} {} {} {}",
                    last.id,
                    last.time,
                    last.outcome.name(),
                    last.victim.as_deref().unwrap_or("-")
                ));
            }
            return Err(Fail::failure(lines.join("\n")).into());
        }
    };
    if args.output.structured(&status, out)? {
        return Ok(Exit::Ok);
    }
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".to_owned());
    writeln!(
        out,
        "oomwarden {} (pid {}), running since {}",
        status.version, status.pid, status.started_at
    )?;
    writeln!(out, "layout: {} ({})", status.layout, status.layout_reason)?;
    writeln!(
        out,
        "cycles: {}; last at {} ({} ms): {}",
        status.cycles,
        opt(&status.last_cycle_at),
        status
            .last_cycle_ms
            .map_or("-".to_owned(), |m| m.to_string()),
        opt(&status.last_cycle_result)
    )?;
    writeln!(out, "last trigger: {}", opt(&status.last_trigger_at))?;
    writeln!(
        out,
        "kernel OOM kills since start: {}",
        status
            .kernel_oom_kills
            .map_or("not watched".to_owned(), |n| n.to_string())
    )?;
    if let Some(p) = &status.pod_identity {
        writeln!(
            out,
            "pod identity: {} pods from {}; runtime {}; age {}{}",
            p.pods,
            p.source,
            if p.runtime_up { "up" } else { "not answering" },
            p.age_ms
                .map_or("-".to_owned(), |ms| format!("{:.1} s", ms as f64 / 1000.0)),
            p.last_error
                .as_deref()
                .map_or(String::new(), |e| format!("; last error: {e}"))
        )?;
    }
    writeln!(
        out,
        "errors: {}; last: {}",
        status.errors,
        opt(&status.last_error)
    )?;
    writeln!(out, "configuration ({}):", status.config_file)?;
    for line in status.configuration.lines() {
        writeln!(out, "  {line}")?;
    }
    Ok(Exit::Ok)
}
