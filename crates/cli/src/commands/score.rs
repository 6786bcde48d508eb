//! `oomwarden score FILE…`: per pod its QoS class, the pod cgroup's `memory.max` and whether
//! oomwarden's default ranking can kill it; per container its kind and the `oom_score_adj` the
//! kubelet gives it.

use std::io::Write;
use std::path::PathBuf;

use oomwarden_kube::Quantity;
use oomwarden_kube::pod::{FeatureGates, PodScore, parse_pods, score};
use oomwarden_procfs::ProcFs;
use serde_json::json;

use crate::commands::read_input;
use crate::exit::Exit;

/// Arguments of `oomwarden score`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Pod manifests: YAML or JSON, a Pod, a List (`kubectl get pods -o json`) or several
    /// documents; `-` for standard input.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The node's memory capacity (MemTotal), bytes or a quantity such as 16Gi. Default: this
    /// machine's.
    #[arg(long, value_name = "BYTES|QUANTITY", value_parser = parse_memory)]
    node_memory: Option<i64>,
    /// Kubelet feature gates, kubelet syntax: `PodLevelResources=false,...`.
    #[arg(long, value_name = "GATES", value_parser = parse_gates, default_value = "")]
    feature_gates: FeatureGates,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn parse_memory(text: &str) -> Result<i64, String> {
    let q = Quantity::parse(text).map_err(|e| e.to_string())?;
    match q.value() {
        Some(v) if v > 0 => Ok(v),
        _ => Err(format!(
            "{text:?}: the node memory must be more than 0 bytes"
        )),
    }
}

fn parse_gates(text: &str) -> Result<FeatureGates, String> {
    FeatureGates::parse(text).map_err(|e| e.to_string())
}

pub(crate) fn run(args: &Args, out: &mut impl Write, err: &mut impl Write) -> anyhow::Result<Exit> {
    let (capacity, source) = match args.node_memory {
        Some(m) => (m, "--node-memory"),
        None => match ProcFs::new("/proc").node_memory() {
            Ok((total, _)) => (
                i64::try_from(total).unwrap_or(i64::MAX),
                "this machine's MemTotal",
            ),
            Err(e) => {
                writeln!(
                    err,
                    "oomwarden: {e}; give the node's memory with --node-memory"
                )?;
                return Ok(Exit::Failure);
            }
        },
    };
    let mut scores: Vec<PodScore> = Vec::new();
    let mut failed = false;
    for file in &args.files {
        let name = file.display();
        let text = match read_input(file) {
            Ok(t) => t,
            Err(e) => {
                writeln!(err, "oomwarden: {e:#}")?;
                failed = true;
                continue;
            }
        };
        let pods = match parse_pods(&text) {
            Ok(p) => p,
            Err(e) => {
                writeln!(err, "{name}: {e}")?;
                failed = true;
                continue;
            }
        };
        for pod in &pods {
            match score(pod, capacity, args.feature_gates) {
                Ok(s) => scores.push(s),
                Err(e) => {
                    writeln!(err, "{name}: pod {}: {e}", pod.metadata.name)?;
                    failed = true;
                }
            }
        }
    }
    if failed {
        return Ok(Exit::Failure);
    }
    if args.json {
        let doc = json!({
            "nodeMemoryBytes": capacity,
            "featureGates": {"PodLevelResources": args.feature_gates.pod_level_resources},
            "pods": scores,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(Exit::Ok);
    }
    writeln!(out, "node memory: {capacity} bytes ({source})")?;
    for s in &scores {
        writeln!(out)?;
        writeln!(
            out,
            "{} {:?}{}{}",
            s.pod,
            s.qos_class,
            if s.qos_from_status {
                " (status.qosClass)"
            } else {
                ""
            },
            if s.node_critical {
                ", node-critical"
            } else {
                ""
            },
        )?;
        writeln!(
            out,
            "  pod cgroup memory.max: {}",
            s.pod_memory_max_bytes
                .map_or_else(|| "max (unlimited)".to_owned(), |b| b.to_string())
        )?;
        writeln!(
            out,
            "  oomwarden default ranking can kill it: {}",
            s.oom_handler_reason
        )?;
        writeln!(
            out,
            "  {:<24} {:<8} {:>16} {:>16} {:>13}",
            "CONTAINER", "KIND", "MEMORY REQUEST", "MEMORY LIMIT", "OOM_SCORE_ADJ"
        )?;
        for c in &s.containers {
            writeln!(
                out,
                "  {:<24} {:<8} {:>16} {:>16} {:>13}",
                c.name,
                format!("{:?}", c.kind).to_lowercase(),
                c.memory_request_bytes,
                c.memory_limit_bytes
                    .map_or_else(|| "-".to_owned(), |b| b.to_string()),
                c.oom_score_adj
            )?;
        }
    }
    Ok(Exit::Ok)
}
