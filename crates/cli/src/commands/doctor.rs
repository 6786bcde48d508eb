//! `oomwarden doctor`: what on this node stands between it and good OOM handling, each
//! finding with an id, a severity, what was seen and the fix (`oomwarden-doctor`).

use crate::terminal::clean;
use std::io::Write;

use oomwarden_doctor::{Finding, Report, Roots, Severity};
use serde_json::json;

use crate::commands::NodeArgs;
use crate::exit::{Exit, Fail};
use crate::output::OutputArgs;

/// Arguments of `oomwarden doctor`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    node: NodeArgs,
    /// Root of procfs.
    #[arg(long, value_name = "DIR", default_value = oomwarden_procfs::DEFAULT_PROC_ROOT)]
    proc_root: std::path::PathBuf,
    /// Root of the host's own files: systemd's unit directories (`etc/systemd`,
    /// `usr/lib/systemd`, `run/systemd`), `sys/kernel/mm/lru_gen`, `sys/module/zswap` and
    /// Talos's `system/state/config.yaml` are read below it (the DaemonSet mounts the host at
    /// `/host`).
    #[arg(long, value_name = "DIR", default_value = "/")]
    host_root: std::path::PathBuf,
    #[command(flatten)]
    output: OutputArgs,
}

pub(crate) fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<Exit> {
    let settings = oomwarden_node::load_settings(args.node.config.as_deref(), &Default::default())
        .map_err(|e| Fail::failure(e.to_string()))?;
    let roots = Roots {
        cgroup: args.node.cgroup_root.clone(),
        proc: args.proc_root.clone(),
        host: args.host_root.clone(),
    };
    let report = oomwarden_doctor::examine(&roots, &settings);
    let counts = |s| report.count(s);
    let data = json!({
        "findings": report.findings,
        "counts": {"error": counts(Severity::Error), "warning": counts(Severity::Warning), "info": counts(Severity::Info)},
    });
    if !args.output.structured(&data, out)? {
        print(&report, out)?;
    }
    Ok(match report.worst() {
        Some(Severity::Error) => Exit::DoctorErrors,
        Some(Severity::Warning) => Exit::DoctorWarnings,
        _ => Exit::Ok,
    })
}

/// The report for people: a summary line, then each finding, most severe first.
fn print(report: &Report, out: &mut impl Write) -> std::io::Result<()> {
    let n = |s| report.count(s);
    writeln!(
        out,
        "{} error(s), {} warning(s), {} note(s)",
        n(Severity::Error),
        n(Severity::Warning),
        n(Severity::Info)
    )?;
    for f in &report.findings {
        print_finding(f, out)?;
    }
    Ok(())
}

fn print_finding(f: &Finding, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, "\n{:<7} {}", f.severity.name().to_uppercase(), f.id)?;
    // Names the node gave (commands, cgroups, paths) may hold anything: each line stays one.
    writeln!(out, "  {}", clean(&f.summary))?;
    for s in &f.seen {
        writeln!(out, "  seen: {}: {}", clean(&s.path), clean(&s.value))?;
    }
    if !f.fix.is_empty() {
        writeln!(out, "  fix:  {}", clean(&f.fix))?;
    }
    Ok(())
}
