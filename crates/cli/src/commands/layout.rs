//! `oomwarden layout`: the layout in use and the class and candidacy of every cgroup, so that a
//! user can see what would be eligible before enabling kills.

use std::io::Write;

use oomwarden_collect::Collector;
use oomwarden_model::{CandidateSample, Identities, Limit, MetricsSample, PodIdentity};
use oomwarden_policy::{Verdict, rank_with};
use oomwarden_procfs::ProcFs;
use serde_json::json;

use crate::commands::{LayoutArg, NodeArgs, NodeSetup, node_and_layout};
use crate::exit::Exit;
use crate::human;
use crate::output::OutputArgs;
use crate::terminal::clean;

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
    let left_out = oomwarden_collect::left_out(&layout, &cgroups);
    let talos_misreads = if name == "talos" {
        oomwarden_collect::talos_misreads(&cgroups)
    } else {
        Vec::new()
    };
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
    // The action history is the daemon's: `workload_kills` is 0 here.
    let ranking = rank_with(
        &settings.oom.ranking,
        &candidates,
        &identities,
        &oomwarden_model::WorkloadKills::default(),
        oomwarden_policy::Guards {
            node_critical: settings.warden.protect.node_critical,
        },
    );
    let listed = ranking.verdicts(candidates.len());
    let verdicts: Vec<Verdict> = (0..candidates.len())
        .map(|i| listed.get(i).cloned().unwrap_or_else(|| ranking.verdict(i)))
        .collect();
    let report = Report {
        name: &name,
        why: &why,
        sample: &sample,
        candidates: &candidates,
        verdicts: &verdicts,
        identities: &identities,
        left_out: &left_out,
        talos_misreads: &talos_misreads,
    };
    if !args.output.is_table() {
        args.output
            .structured(&report.data(&args.node.cgroup_root), out)?;
        return Ok(Exit::Ok);
    }
    report.print(&args.node.cgroup_root, args.output.is_wide(), out)?;
    Ok(Exit::Ok)
}

/// What `oomwarden layout` shows: the layout, its subtrees, its candidates as ranked.
struct Report<'a> {
    name: &'a str,
    why: &'a str,
    sample: &'a MetricsSample,
    candidates: &'a [CandidateSample],
    /// One per candidate, in the same order.
    verdicts: &'a [Verdict],
    identities: &'a Identities,
    /// What the layout leaves out, with why (`collect::left_out`).
    left_out: &'a [(String, String)],
    /// Where Talos's own controller reads the tree otherwise (the `talos` layout only).
    talos_misreads: &'a [String],
}

impl Report<'_> {
    /// The pod a cgroup belongs to, when known.
    fn pod_of(&self, dir: &str) -> Option<PodIdentity> {
        oomwarden_kube::decode_cgroup_path(dir)
            .pod_uid
            .and_then(|uid| self.identities.pod(&uid).cloned())
    }

    /// The report as data (`-o json|yaml`).
    fn data(&self, cgroup_root: &std::path::Path) -> serde_json::Value {
        let metrics: Vec<_> = self
            .sample
            .subtrees
            .iter()
            .map(|s| {
                json!({"cgroup": s.dir, "path": oomwarden_cgroupfs::node_path(&s.dir),
                       "class": s.class.map(|c| c.name())})
            })
            .collect();
        let cands: Vec<_> = self
            .candidates
            .iter()
            .zip(self.verdicts)
            .map(|(c, v)| {
                let (score, eligible, reason) = (v.score(), v.eligible(), v.reason());
                let pod = self.pod_of(&c.dir);
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
        let left_out: Vec<_> = self
            .left_out
            .iter()
            .map(|(dir, why)| {
                json!({"cgroup": dir, "path": oomwarden_cgroupfs::node_path(dir), "why": why})
            })
            .collect();
        json!({
            "layout": self.name, "reason": self.why,
            "cgroupRoot": cgroup_root.display().to_string(),
            "metrics": metrics, "candidates": cands, "leftOut": left_out,
            "talosMisreads": self.talos_misreads,
        })
    }

    /// The report as tables (`wide`: with each candidate's `memory.max`).
    fn print(
        &self,
        cgroup_root: &std::path::Path,
        wide: bool,
        out: &mut impl Write,
    ) -> std::io::Result<()> {
        writeln!(out, "layout: {} ({})", self.name, self.why)?;
        writeln!(out, "{}", super::tree_note(cgroup_root))?;
        writeln!(out, "\nmetrics, summed per class:")?;
        writeln!(out, "  {:<11} CGROUP", "CLASS")?;
        for s in &self.sample.subtrees {
            writeln!(
                out,
                "  {:<11} {}",
                s.class.map_or("(node)", |c| c.name()),
                if s.dir.is_empty() {
                    "/".into()
                } else {
                    clean(&s.dir)
                }
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
        let mut order: Vec<(&CandidateSample, &Verdict)> =
            self.candidates.iter().zip(self.verdicts).collect();
        order.sort_by_key(|(c, _)| (c.class, c.dir.clone()));
        for (c, v) in order {
            self.print_candidate(c, v, wide, out)?;
        }
        if !self.left_out.is_empty() {
            writeln!(out, "\nleft out (in no class, or never a candidate):")?;
            for (dir, why) in self.left_out {
                writeln!(out, "  {}: {}", clean(dir), clean(why))?;
            }
        }
        if !self.talos_misreads.is_empty() {
            writeln!(
                out,
                "\nwhere Talos's own controller reads this tree otherwise (what running oomwarden instead changes):"
            )?;
            for m in self.talos_misreads {
                writeln!(out, "  {}", clean(&m.to_string()))?;
            }
        }
        Ok(())
    }

    fn print_candidate(
        &self,
        c: &CandidateSample,
        v: &Verdict,
        wide: bool,
        out: &mut impl Write,
    ) -> std::io::Result<()> {
        let (score, eligible, reason) = (v.score(), v.eligible(), v.reason());
        let uid = oomwarden_kube::decode_cgroup_path(&c.dir)
            .pod_uid
            .unwrap_or_else(|| "-".to_owned());
        let pod = self.pod_of(&c.dir).map_or_else(String::new, |p| {
            format!(" ({})", clean(&p.qualified_name()))
        });
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
            clean(&uid),
            clean(&c.dir),
            pod,
            if eligible {
                String::new()
            } else {
                format!("  ({reason})")
            },
        )
    }
}
