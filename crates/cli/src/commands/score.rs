//! `oomwarden score FILE…`: per pod its QoS class, the pod cgroup's `memory.max` and whether
//! oomwarden's default ranking can kill it; per container its kind and the `oom_score_adj` the
//! kubelet gives it.

use crate::terminal::clean;
use std::io::Write;
use std::path::PathBuf;

use oomwarden_kube::Quantity;
use oomwarden_kube::pod::{
    ContainerSwap, FeatureGates, MemoryQos, MemoryQosValues, NodeSwap, PodScore, SwapBehavior,
    parse_pods, score_with_qos,
};
use oomwarden_procfs::ProcFs;
use serde_json::json;

use crate::commands::read_input;
use crate::exit::{Exit, Fail};

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
    /// Also show the memory.high/min/low the kubelet writes under MemoryQoS (cgroup v2,
    /// Kubernetes 1.36+ semantics).
    #[arg(long)]
    memory_qos: bool,
    /// MemoryQoS `memoryThrottlingFactor` (0 < F ≤ 1); unset (the 1.37 default) writes no
    /// memory.high.
    #[arg(long, value_name = "F", value_parser = parse_factor, requires = "memory_qos")]
    memory_throttling_factor: Option<f64>,
    /// MemoryQoS `memoryReservationPolicy`.
    #[arg(long, value_name = "POLICY", default_value = "None", value_parser = ["None", "TieredReservation"], requires = "memory_qos")]
    memory_reservation_policy: String,
    /// Node allocatable memory (stands in for an absent container limit in memory.high).
    /// Default: the node memory.
    #[arg(long, value_name = "BYTES|QUANTITY", value_parser = parse_memory, requires = "memory_qos")]
    node_allocatable: Option<i64>,
    /// Also show each container's swap limit (`memory.swap.max`) under the kubelet's
    /// `memorySwap.swapBehavior`: `LimitedSwap` (Burstable containers swap in proportion to
    /// their memory request) or `NoSwap` (none does; the kubelet's default).
    #[arg(long, value_name = "BEHAVIOR", value_parser = parse_swap_behavior)]
    swap_behavior: Option<SwapBehavior>,
    /// The node's swap capacity (SwapTotal), bytes or a quantity. Default: this machine's.
    #[arg(long, value_name = "BYTES|QUANTITY", value_parser = parse_swap, requires = "swap_behavior")]
    node_swap: Option<i64>,
    #[command(flatten)]
    output: crate::output::OutputArgs,
}

fn parse_factor(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 1.0 => Ok(f),
        _ => Err(format!(
            "{text:?}: memoryThrottlingFactor must be greater than 0 and at most 1"
        )),
    }
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

fn parse_swap(text: &str) -> Result<i64, String> {
    let q = Quantity::parse(text).map_err(|e| e.to_string())?;
    match q.value() {
        Some(v) if v >= 0 => Ok(v),
        _ => Err(format!("{text:?}: the node swap must be 0 bytes or more")),
    }
}

fn parse_swap_behavior(text: &str) -> Result<SwapBehavior, String> {
    SwapBehavior::parse(text).ok_or_else(|| {
        format!("{text:?}: expected LimitedSwap or NoSwap (the kubelet's memorySwap.swapBehavior)")
    })
}

fn parse_gates(text: &str) -> Result<FeatureGates, String> {
    FeatureGates::parse(text).map_err(|e| e.to_string())
}

pub(crate) fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<Exit> {
    let (capacity, source) = match args.node_memory {
        Some(m) => (m, "--node-memory"),
        None => match ProcFs::new("/proc").node_memory() {
            Ok((total, _)) => (
                i64::try_from(total).unwrap_or(i64::MAX),
                "this machine's MemTotal",
            ),
            Err(e) => {
                return Err(Fail::failure(format!(
                    "oomwarden: {e}; give the node's memory with --node-memory"
                ))
                .into());
            }
        },
    };
    let memory_qos = args.memory_qos.then(|| MemoryQos {
        throttling_factor: args.memory_throttling_factor,
        tiered_reservation: args.memory_reservation_policy == "TieredReservation",
        node_allocatable: args.node_allocatable.unwrap_or(capacity),
    });
    let swap = match args.swap_behavior {
        None => None,
        Some(behavior) => Some(NodeSwap {
            behavior,
            capacity: match args.node_swap {
                Some(s) => s,
                None => this_machines_swap()?,
            },
        }),
    };
    let scores = score_files(args, capacity, memory_qos, swap)?;
    if !args.output.is_table() {
        let doc = json!({
            "nodeMemoryBytes": capacity,
            "featureGates": {"PodLevelResources": args.feature_gates.pod_level_resources},
            "memoryQoS": memory_qos.map(|m| json!({
                "memoryThrottlingFactor": m.throttling_factor,
                "memoryReservationPolicy": args.memory_reservation_policy,
                "nodeAllocatableBytes": m.node_allocatable,
            })),
            "swap": swap.map(|s| json!({
                "swapBehavior": s.behavior,
                "nodeSwapBytes": s.capacity,
            })),
            "pods": scores,
        });
        args.output.structured(&doc, out)?;
        return Ok(Exit::Ok);
    }
    writeln!(
        out,
        "node memory: {} ({source})",
        size(i128::from(capacity))
    )?;
    if let Some(s) = swap {
        let source = if args.node_swap.is_some() {
            "--node-swap"
        } else {
            "this machine's SwapTotal"
        };
        writeln!(
            out,
            "node swap: {} ({source}), swapBehavior {:?}",
            size(i128::from(s.capacity)),
            s.behavior
        )?;
    }
    for s in &scores {
        print_pod(s, out)?;
    }
    Ok(Exit::Ok)
}

/// This machine's swap capacity, as the kubelet reads it (`SwapTotal`; 0 without swap).
fn this_machines_swap() -> anyhow::Result<i64> {
    match ProcFs::new("/proc").meminfo() {
        Ok(m) => Ok(i64::try_from(m.get("SwapTotal").unwrap_or(0)).unwrap_or(i64::MAX)),
        Err(e) => Err(Fail::failure(format!(
            "oomwarden: {e}; give the node's swap with --node-swap"
        ))
        .into()),
    }
}

/// Sizes for people; a negative or too large a size as its number.
fn size(b: i128) -> String {
    u64::try_from(b).map_or_else(|_| b.to_string(), crate::human::bytes)
}

/// Every pod of every file, scored; every file's and pod's problem is said, then the command
/// fails.
fn score_files(
    args: &Args,
    capacity: i64,
    memory_qos: Option<MemoryQos>,
    swap: Option<NodeSwap>,
) -> anyhow::Result<Vec<PodScore>> {
    let mut scores: Vec<PodScore> = Vec::new();
    let mut problems = Vec::new();
    for file in &args.files {
        let name = file.display();
        let text = match read_input(file) {
            Ok(t) => t,
            Err(e) => {
                problems.push(format!("oomwarden: {e:#}"));
                continue;
            }
        };
        let pods = match parse_pods(&text) {
            Ok(p) => p,
            Err(e) => {
                problems.push(format!("{name}: {e}"));
                continue;
            }
        };
        for pod in &pods {
            match score_with_qos(pod, capacity, args.feature_gates, memory_qos, swap) {
                Ok(s) => scores.push(s),
                Err(e) => problems.push(format!("{name}: pod {}: {e}", clean(&pod.metadata.name))),
            }
        }
    }
    if problems.is_empty() {
        Ok(scores)
    } else {
        Err(Fail::failure(problems.join("\n")).into())
    }
}

/// One pod's report: its class, its cgroup's limit, the ranking's verdict, its containers.
fn print_pod(s: &PodScore, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "{} {:?}{}{}",
        clean(&s.pod),
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
            .map_or_else(|| "max (unlimited)".to_owned(), size)
    )?;
    writeln!(
        out,
        "  oomwarden default ranking can kill it: {}",
        clean(&s.oom_handler_reason)
    )?;
    if let Some(q) = &s.memory_qos {
        writeln!(out, "  pod cgroup MemoryQoS: {}", qos_text(q))?;
    }
    writeln!(
        out,
        "  {:<24} {:<8} {:>16} {:>16} {:>13}",
        "CONTAINER", "KIND", "MEMORY REQUEST", "MEMORY LIMIT", "OOM_SCORE_ADJ"
    )?;
    for c in &s.containers {
        writeln!(
            out,
            "  {:<24} {:<8} {:>16} {:>16} {:>13}",
            clean(&c.name),
            format!("{:?}", c.kind).to_lowercase(),
            size(c.memory_request_bytes),
            c.memory_limit_bytes.map_or_else(|| "-".to_owned(), size),
            c.oom_score_adj
        )?;
        if let Some(q) = &c.memory_qos {
            writeln!(out, "  {:<24} MemoryQoS: {}", "", qos_text(q))?;
        }
        if let Some(s) = &c.swap {
            writeln!(out, "  {:<24} swap: {}", "", swap_text(s))?;
        }
    }
    Ok(())
}

fn swap_text(s: &ContainerSwap) -> String {
    format!(
        "{:?}, memory.swap.max {} ({})",
        s.behavior,
        size(i128::from(s.memory_swap_max_bytes)),
        s.reason.describe()
    )
}

fn qos_text(q: &MemoryQosValues) -> String {
    let v = |x: Option<i64>| x.map_or_else(|| "-".to_owned(), |b| b.to_string());
    format!(
        "memory.high {}, memory.min {}, memory.low {}",
        v(q.memory_high),
        v(q.memory_min),
        v(q.memory_low)
    )
}
