//! `oomwarden layout`: the layout in use and the class and candidacy of every cgroup, so that a
//! user can see what would be eligible before enabling kills.

use std::io::Write;

use oomwarden_collect::Collector;
use oomwarden_model::Limit;
use oomwarden_policy::rank_with;
use oomwarden_procfs::ProcFs;
use serde_json::json;

use crate::commands::{LayoutArg, NodeArgs, NodeSetup, node_and_layout};
use crate::exit::Exit;
use crate::human;
use crate::output::OutputArgs;

/// Arguments of `oomwarden layout`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    node: NodeArgs,
    /// Root of procfs (what the host offers: `cgroups`, `pressure/memory`).
    #[arg(long, value_name = "DIR", default_value = oomwarden_procfs::DEFAULT_PROC_ROOT)]
    proc_root: std::path::PathBuf,
    #[command(flatten)]
    output: OutputArgs,
    /// Print the layout in use as data: an OOMWardenConfig document with a custom layout, to
    /// copy and edit.
    #[arg(long, conflicts_with_all = ["output", "json"])]
    definition: bool,
    #[command(flatten)]
    layout: LayoutArg,
}

#[allow(
    clippy::too_many_lines,
    reason = "one report (tree, layout, subtrees, candidates) printed as a table or data from the same locals"
)]
pub(crate) fn run(args: &Args, out: &mut impl Write, err: &mut impl Write) -> anyhow::Result<Exit> {
    let NodeSetup {
        settings,
        cgroups,
        layout,
        why,
    } = node_and_layout(
        &args.node,
        &args.proc_root,
        &args.layout.to_overrides(),
        err,
    )?;
    if args.definition {
        writeln!(
            out,
            "# the {} layout written as a custom layout; in use because: {why}",
            layout.name
        )?;
        write!(out, "{}", oomwarden_config::layout_document(&layout))?;
        return Ok(Exit::Ok);
    }
    let name = layout.name.clone();
    let collector = Collector::new(cgroups, ProcFs::new(&args.proc_root), layout, None);
    let (sample, problems) = collector.metrics(0);
    let (candidates, more) = collector.candidates();
    for p in problems.iter().chain(more.iter()) {
        writeln!(err, "warning: {p}")?;
    }
    // Who the pods are, as the daemon would rank them (`containerRuntime`).
    let (identities, _, _) = oomwarden_identity::read_once(&oomwarden_node::identity_config(
        &settings.warden.container_runtime,
    ));
    let pod_of = |dir: &str| {
        oomwarden_kube::decode_cgroup_path(dir)
            .pod_uid
            .and_then(|uid| identities.pod(&uid).cloned())
    };
    let ranking = rank_with(&settings.oom.ranking, &candidates, &identities);
    let verdicts = ranking.verdicts(candidates.len());
    let verdict = |i: usize| {
        verdicts
            .get(i)
            .cloned()
            .unwrap_or_else(|| ranking.verdict(i))
    };
    if !args.output.is_table() {
        let metrics: Vec<_> = sample
            .subtrees
            .iter()
            .map(|s| {
                json!({"cgroup": s.dir, "path": oomwarden_cgroupfs::node_path(&s.dir),
                       "class": s.class.map(|c| c.name())})
            })
            .collect();
        let cands: Vec<_> = candidates
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let v = verdict(i);
                let (score, eligible, reason) = (v.score(), v.eligible(), v.reason());
                let pod = pod_of(&c.dir);
                json!({
                    "cgroup": c.dir, "path": oomwarden_cgroupfs::node_path(&c.dir),
                    "class": c.class.name(),
                    "podUID": oomwarden_kube::decode_cgroup_path(&c.dir).pod_uid,
                    "namespace": pod.as_ref().map(|p| p.namespace.clone()),
                    "podName": pod.as_ref().map(|p| p.name.clone()),
                    "populated": c.populated, "memoryCurrentBytes": c.memory.current,
                    "memoryMaxBytes": c.memory.max.and_then(Limit::bytes),
                    "score": score, "eligible": eligible, "reason": reason,
                })
            })
            .collect();
        let doc = json!({
            "layout": name, "reason": why,
            "cgroupRoot": args.node.cgroup_root.display().to_string(),
            "metrics": metrics, "candidates": cands,
        });
        args.output.structured(&doc, out)?;
        return Ok(Exit::Ok);
    }
    let wide = args.output.is_wide();
    writeln!(out, "layout: {name} ({why})")?;
    writeln!(out, "{}", super::tree_note(&args.node.cgroup_root))?;
    writeln!(out, "\nmetrics, summed per class:")?;
    writeln!(out, "  {:<11} CGROUP", "CLASS")?;
    for s in &sample.subtrees {
        writeln!(
            out,
            "  {:<11} {}",
            s.class.map_or("(node)", |c| c.name()),
            if s.dir.is_empty() { "/" } else { &s.dir }
        )?;
    }
    writeln!(out, "\nkill candidates, in class order:")?;
    writeln!(
        out,
        "  {:<11} {:>10} {}{:>12} {:<9} {:<36} CGROUP",
        "CLASS",
        "MEMORY",
        if wide {
            format!("{:>10} ", "MAX")
        } else {
            String::new()
        },
        "SCORE",
        "ELIGIBLE",
        "POD UID"
    )?;
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by_key(|i| candidates.get(*i).map(|c| (c.class, c.dir.clone())));
    for i in order {
        let Some(c) = candidates.get(i) else { continue };
        let v = verdict(i);
        let (score, eligible, reason) = (v.score(), v.eligible(), v.reason());
        let uid = oomwarden_kube::decode_cgroup_path(&c.dir)
            .pod_uid
            .unwrap_or_else(|| "-".to_owned());
        let pod = pod_of(&c.dir).map_or_else(String::new, |p| format!(" ({})", p.qualified_name()));
        let max = match c.memory.max {
            Some(Limit::Max) => "max".to_owned(),
            Some(Limit::Bytes(b)) => human::bytes(b),
            None => "-".to_owned(),
        };
        writeln!(
            out,
            "  {:<11} {:>10} {}{:>12} {:<9} {:<36} {}{}{}",
            c.class.name(),
            c.memory.current.map_or("-".to_owned(), human::bytes),
            if wide {
                format!("{max:>10} ")
            } else {
                String::new()
            },
            score.map_or("-".to_owned(), oomwarden_model::format_number),
            if eligible { "yes" } else { "no" },
            uid,
            c.dir,
            pod,
            if eligible {
                String::new()
            } else {
                format!("  ({reason})")
            },
        )?;
    }
    Ok(Exit::Ok)
}
