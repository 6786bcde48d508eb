//! `oomwarden top`: every cgroup of the node's layout down to the pods (and containers), with
//! the memory numbers people confuse (usage, working set, anon/"rss", page cache, kernel), its
//! limits, pressure and OOM kills, and whether the OOM handler may kill it; the node as the
//! kubelet and node-exporter see it; with `--pods`, the kubelet's eviction order.

use crate::terminal::clean;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use oomwarden_cgroupfs::{CgroupFs, Limit};
use oomwarden_collect::Collector;
use oomwarden_kube::node::{
    EvictionInput, NodeInputs, NodeView, Threshold, eviction_order, working_set,
};
use oomwarden_kube::pod::{FeatureGates, parse_pods, score_with_qos};
use oomwarden_model::{PsiKind, PsiSpan};
use oomwarden_policy::rank_with;
use oomwarden_procfs::ProcFs;
use serde::Serialize;

use crate::commands::{LayoutArg, NodeArgs, NodeSetup, node_and_layout, read_input};
use crate::exit::{Exit, Fail};
use crate::output::OutputArgs;

/// Arguments of `oomwarden top`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    node: NodeArgs,
    /// Root of procfs (`meminfo`, `zoneinfo`).
    #[arg(long, value_name = "DIR", default_value = "/proc")]
    proc_root: PathBuf,
    /// Also list each pod's container cgroups.
    #[arg(long)]
    containers: bool,
    /// `kubectl get pods -o json` output: join pods by UID, show usage against request and
    /// the kubelet's eviction order.
    #[arg(long, value_name = "FILE")]
    pods: Option<PathBuf>,
    /// The kubelet's hard eviction thresholds, kubelet syntax (`%` allowed); only
    /// `memory.available` is used.
    #[arg(long, value_name = "THRESHOLDS", default_value = "memory.available<100Mi", value_parser = parse_eviction_hard)]
    eviction_hard: EvictionHard,
    /// With `--pods`: also each pod's swap limit under the kubelet's
    /// `memorySwap.swapBehavior` (`LimitedSwap` or `NoSwap`), from the node's MemTotal and
    /// SwapTotal, beside the swap it uses.
    #[arg(long, value_name = "BEHAVIOR", value_parser = parse_swap_behavior, requires = "pods")]
    swap_behavior: Option<oomwarden_kube::pod::SwapBehavior>,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    layout: LayoutArg,
}

/// The `memory.available` threshold of `--eviction-hard`, if it sets one.
#[derive(Debug, Clone, Copy)]
struct EvictionHard(Option<Threshold>);

fn parse_eviction_hard(text: &str) -> Result<EvictionHard, String> {
    Threshold::parse_eviction_hard(text).map(EvictionHard)
}

/// The whole report, in this field order.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TopDoc<'a> {
    layout: &'a str,
    layout_reason: &'a str,
    /// Where the tree was read (`--cgroup-root`); each row's `path` is the node's.
    cgroup_root: String,
    node: &'a NodeView,
    cgroups: &'a [Row],
    #[serde(skip_serializing_if = "Option::is_none")]
    pods: Option<&'a [PodRow]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pods_not_on_this_node: Option<usize>,
}

/// A pod of `--pods` found on this node, as the eviction manager ranks it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct PodRow {
    pod: String,
    #[serde(rename = "podUID")]
    pod_uid: Option<String>,
    qos_class: oomwarden_kube::pod::PodQos,
    working_set_bytes: Option<u64>,
    request_bytes: i128,
    exceeds_request: Option<bool>,
    priority: i64,
    critical: bool,
    /// 1 = evicted first; `None` for critical pods, which are never evicted.
    eviction_rank: Option<usize>,
    /// The swap its cgroup uses (`memory.swap.current`).
    #[serde(skip_serializing_if = "Option::is_none")]
    swap_bytes: Option<u64>,
    /// The swap the kubelet lets its containers use, summed (`--swap-behavior`).
    #[serde(skip_serializing_if = "Option::is_none")]
    swap_limit_bytes: Option<i64>,
}

fn parse_swap_behavior(text: &str) -> Result<oomwarden_kube::pod::SwapBehavior, String> {
    oomwarden_kube::pod::SwapBehavior::parse(text).ok_or_else(|| {
        format!("{text:?}: expected LimitedSwap or NoSwap (the kubelet's memorySwap.swapBehavior)")
    })
}

/// What a row of `top` is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum RowKind {
    /// The root: the whole node.
    #[default]
    Node,
    /// A class's subtree of the layout.
    Class,
    /// A candidate of the OOM handler.
    Candidate,
    /// A container below a candidate (`--containers`).
    Container,
}

impl RowKind {
    fn name(self) -> &'static str {
        match self {
            RowKind::Node => "node",
            RowKind::Class => "class",
            RowKind::Candidate => "candidate",
            RowKind::Container => "container",
        }
    }
}

/// One cgroup's numbers.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct Row {
    cgroup: String,
    /// The cgroup's path on the node (`/sys/fs/cgroup/...`), whatever root it was read under.
    path: String,
    /// `node`, `class`, `candidate` or `container`.
    kind: RowKind,
    class: Option<&'static str>,
    #[serde(rename = "podUID")]
    pod_uid: Option<String>,
    #[serde(rename = "containerID")]
    container_id: Option<String>,
    /// The pod's namespace and name, when the container runtime or the pod-log directories
    /// know its UID.
    namespace: Option<String>,
    pod_name: Option<String>,
    usage_bytes: Option<u64>,
    working_set_bytes: Option<u64>,
    anon_bytes: Option<u64>,
    file_bytes: Option<u64>,
    shmem_bytes: Option<u64>,
    kernel_bytes: Option<u64>,
    active_file_bytes: Option<u64>,
    inactive_file_bytes: Option<u64>,
    memory_max_bytes: Option<u64>,
    /// `memory.swap.current` (with swap accounting; none at the root).
    swap_bytes: Option<u64>,
    /// `memory.swap.max` when it is a limit.
    swap_max_bytes: Option<u64>,
    memory_high_bytes: Option<u64>,
    memory_low_bytes: Option<u64>,
    memory_min_bytes: Option<u64>,
    psi_some_avg10: Option<f64>,
    psi_full_avg10: Option<f64>,
    oom_kills: Option<u64>,
    oom_handler_may_kill: Option<bool>,
    score: Option<f64>,
    reason: Option<String>,
}

/// Kernel memory when `memory.stat` has no `kernel` line (kernels before 5.18).
const KERNEL_PARTS: [&str; 6] = [
    "kernel_stack",
    "pagetables",
    "percpu",
    "sock",
    "slab",
    "vmalloc",
];

fn stat_row(stat: &BTreeMap<String, u64>, row: &mut Row) {
    let get = |k: &str| stat.get(k).copied();
    row.anon_bytes = get("anon");
    row.file_bytes = get("file");
    row.shmem_bytes = get("shmem");
    row.kernel_bytes = get("kernel").or_else(|| {
        let parts: Vec<u64> = KERNEL_PARTS.iter().filter_map(|k| get(k)).collect();
        (!parts.is_empty()).then(|| parts.iter().sum())
    });
    row.active_file_bytes = get("active_file");
    row.inactive_file_bytes = get("inactive_file");
}

fn read_row(cgroups: &CgroupFs, dir: &str, kind: RowKind, class: Option<&'static str>) -> Row {
    let id = oomwarden_kube::decode_cgroup_path(dir);
    let mut row = Row {
        cgroup: if dir.is_empty() {
            "/".to_owned()
        } else {
            dir.to_owned()
        },
        path: oomwarden_cgroupfs::node_path(dir),
        kind,
        class,
        pod_uid: id.pod_uid,
        container_id: id.container_id,
        ..Row::default()
    };
    let stat: BTreeMap<String, u64> = cgroups
        .memory_stat(dir)
        .map(|v| v.into_iter().collect())
        .unwrap_or_default();
    stat_row(&stat, &mut row);
    // The root has no memory.current: cAdvisor (runc) takes anon + file from its memory.stat.
    row.usage_bytes = if dir.is_empty() {
        row.anon_bytes.zip(row.file_bytes).map(|(a, f)| a + f)
    } else {
        cgroups.memory_current(dir).ok()
    };
    row.working_set_bytes = row
        .usage_bytes
        .map(|u| working_set(u, row.inactive_file_bytes));
    let limit = |name: &str| match cgroups.memory_limit_file(dir, name) {
        Ok(Limit::Bytes(b)) => Some(b),
        _ => None,
    };
    row.memory_max_bytes = limit("memory.max");
    row.swap_bytes = cgroups.memory_swap_current(dir).ok();
    row.swap_max_bytes = limit("memory.swap.max");
    row.memory_high_bytes = limit("memory.high");
    row.memory_low_bytes = limit("memory.low");
    row.memory_min_bytes = limit("memory.min");
    if let Ok(p) = cgroups.memory_pressure(dir) {
        row.psi_some_avg10 = p.value(PsiKind::Some, PsiSpan::Avg10).ok();
        row.psi_full_avg10 = p.value(PsiKind::Full, PsiSpan::Avg10).ok();
    }
    row.oom_kills = cgroups
        .memory_events(dir)
        .ok()
        .and_then(|e| e.into_iter().find(|(k, _)| k == "oom_kill").map(|(_, v)| v));
    row
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
    let proc = ProcFs::new(&args.proc_root);
    let meminfo = proc
        .meminfo()
        .map_err(|e| Fail::failure(format!("oomwarden: {e}")))?;
    let layout_name = layout.name.clone();
    let collector = Collector::new(cgroups.clone(), proc.clone(), layout, None);
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
    let rows = cgroup_rows(
        &cgroups,
        &sample,
        &candidates,
        &ranking,
        &identities,
        args.containers,
    );

    // The node from both sides.
    let root = rows.first().cloned().unwrap_or_default();
    let m = |k: &str| meminfo.get(k).unwrap_or(0);
    let page = rustix::param::page_size() as u64;
    let inputs = NodeInputs {
        mem_total: m("MemTotal"),
        mem_available: m("MemAvailable"),
        shmem: m("Shmem"),
        kernel: m("Slab") + m("KernelStack") + m("PageTables"),
        anon: root.anon_bytes.unwrap_or(0),
        file: root.file_bytes.unwrap_or(0),
        active_file: root.active_file_bytes.unwrap_or(0),
        inactive_file: root.inactive_file_bytes.unwrap_or(0),
        watermark_low: proc
            .watermark_low_pages()
            .ok()
            .map(|p| p.saturating_mul(page)),
    };
    let view = NodeView::compute(&inputs, args.eviction_hard.0);

    // With --pods: join by UID and rank as the eviction manager would.
    let (pods_out, not_here) = match &args.pods {
        Some(file) => {
            let swap = args
                .swap_behavior
                .map(|behavior| oomwarden_kube::pod::NodeSwap {
                    behavior,
                    capacity: i64::try_from(m("SwapTotal")).unwrap_or(i64::MAX),
                });
            eviction_rows(file, inputs.mem_total, &rows, swap)?
        }
        None => (Vec::new(), 0),
    };

    if !args.output.is_table() {
        let doc = TopDoc {
            layout: &layout_name,
            layout_reason: &why,
            cgroup_root: args.node.cgroup_root.display().to_string(),
            node: &view,
            cgroups: &rows,
            pods: args.pods.is_some().then_some(pods_out.as_slice()),
            pods_not_on_this_node: args.pods.is_some().then_some(not_here),
        };
        args.output.structured(&doc, out)?;
        return Ok(Exit::Ok);
    }
    print_node(&view, args.eviction_hard.0.is_some(), out)?;
    print_cgroups(&rows, &layout_name, &args.node.cgroup_root, out)?;
    if args.pods.is_some() {
        print_pods(&pods_out, not_here, out)?;
    }
    Ok(Exit::Ok)
}

/// The rows: the node, the class subtrees, the candidates (once each, with the ranking's
/// verdict), their containers with `containers`; pods named from `identities`.
fn cgroup_rows(
    cgroups: &CgroupFs,
    sample: &oomwarden_model::MetricsSample,
    candidates: &[oomwarden_model::CandidateSample],
    ranking: &oomwarden_policy::Ranking,
    identities: &oomwarden_model::Identities,
    containers: bool,
) -> Vec<Row> {
    let mut rows = vec![read_row(cgroups, "", RowKind::Node, None)];
    for s in sample.subtrees.iter().filter(|s| !s.dir.is_empty()) {
        if candidates.iter().any(|c| c.dir == s.dir) {
            continue;
        }
        rows.push(read_row(
            cgroups,
            &s.dir,
            RowKind::Class,
            s.class.map(|c| c.name()),
        ));
    }
    for (c, verdict) in candidates.iter().zip(ranking.verdicts(candidates.len())) {
        let (score, eligible, reason) = (verdict.score(), verdict.eligible(), verdict.reason());
        let mut row = read_row(cgroups, &c.dir, RowKind::Candidate, Some(c.class.name()));
        row.oom_handler_may_kill = Some(eligible);
        row.score = score;
        row.reason = Some(reason);
        rows.push(row);
        if containers {
            for child in cgroups.children(&c.dir).unwrap_or_default() {
                let dir = oomwarden_cgroupfs::join(&c.dir, &child);
                rows.push(read_row(
                    cgroups,
                    &dir,
                    RowKind::Container,
                    Some(c.class.name()),
                ));
            }
        }
    }
    for row in &mut rows {
        if let Some(pod) = row.pod_uid.as_deref().and_then(|uid| identities.pod(uid)) {
            row.namespace = Some(pod.namespace.clone());
            row.pod_name = Some(pod.name.clone());
        }
    }
    rows
}

/// The pods of `file` on this node (joined by UID with the candidate rows), in the order the
/// kubelet's eviction manager would evict them; and how many pods of the file are not here.
fn eviction_rows(
    file: &std::path::Path,
    mem_total: u64,
    rows: &[Row],
    swap: Option<oomwarden_kube::pod::NodeSwap>,
) -> anyhow::Result<(Vec<PodRow>, usize)> {
    let text = read_input(file).map_err(|e| Fail::failure(format!("oomwarden: {e:#}")))?;
    let pods = parse_pods(&text).map_err(|e| Fail::failure(format!("{}: {e}", file.display())))?;
    let capacity = i64::try_from(mem_total).unwrap_or(i64::MAX);
    let mut joined = Vec::new();
    let mut not_here = 0;
    for p in &pods {
        let s = score_with_qos(p, capacity, FeatureGates::default(), None, swap).map_err(|e| {
            Fail::failure(format!(
                "{}: pod {}: {e}",
                file.display(),
                clean(&p.metadata.name)
            ))
        })?;
        let row = s.pod_uid.as_ref().and_then(|uid| {
            rows.iter()
                .find(|r| r.kind == RowKind::Candidate && r.pod_uid.as_ref() == Some(uid))
        });
        match row {
            Some(r) => joined.push((s, r.working_set_bytes, r.swap_bytes)),
            None => not_here += 1,
        }
    }
    let inputs: Vec<EvictionInput> = joined
        .iter()
        .map(|(s, ws, _)| EvictionInput {
            usage: *ws,
            // Requests are never negative; one past u64 compares as the largest.
            request: u64::try_from(s.memory_request_bytes).unwrap_or(u64::MAX),
            priority: s.priority,
            critical: s.critical,
        })
        .collect();
    let order = eviction_order(&inputs);
    let mut pods_out = Vec::new();
    for (i, (s, ws, swap_bytes)) in joined.iter().enumerate() {
        let rank = order.iter().position(|j| *j == i).map(|r| r + 1);
        let request = u64::try_from(s.memory_request_bytes).unwrap_or(u64::MAX);
        pods_out.push(PodRow {
            pod: s.pod.clone(),
            pod_uid: s.pod_uid.clone(),
            qos_class: s.qos_class,
            working_set_bytes: *ws,
            request_bytes: s.memory_request_bytes,
            exceeds_request: ws.map(|w| w > request),
            priority: s.priority,
            critical: s.critical,
            eviction_rank: rank,
            swap_bytes: *swap_bytes,
            swap_limit_bytes: swap.map(|_| {
                s.containers
                    .iter()
                    .filter_map(|c| c.swap.map(|w| w.memory_swap_max_bytes))
                    .fold(0_i64, i64::saturating_add)
            }),
        });
    }
    pods_out.sort_by_key(|p| p.eviction_rank.unwrap_or(usize::MAX));
    Ok((pods_out, not_here))
}

/// Sizes in MiB with one decimal, `-` when unknown.
fn mib(b: Option<u64>) -> String {
    #[allow(clippy::cast_precision_loss)] // display only
    b.map_or_else(
        || "-".to_owned(),
        |b| format!("{:.1}", b as f64 / 1_048_576.0),
    )
}

/// The table of cgroups.
fn print_cgroups(
    rows: &[Row],
    layout_name: &str,
    cgroup_root: &std::path::Path,
    out: &mut impl Write,
) -> std::io::Result<()> {
    writeln!(out, "\ncgroups (layout {layout_name}; sizes in MiB):")?;
    writeln!(out, "  {}", super::tree_note(cgroup_root))?;
    writeln!(
        out,
        "  {:<10} {:<11} {:>8} {:>8} {:>8} {:>8} {:>7} {:>7} {:>8} {:>8} {:>8} {:>7} {:>7} {:>6} {:>6} {:>4} {:<5} CGROUP",
        "KIND",
        "CLASS",
        "USAGE",
        "WSET",
        "ANON",
        "FILE",
        "SHMEM",
        "KERNEL",
        "ACTIVEF",
        "INACTF",
        "MAX",
        "SWAP",
        "SWAPMAX",
        "SOME10",
        "FULL10",
        "OOMK",
        "KILL?"
    )?;
    let pct = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
    for r in rows {
        writeln!(
            out,
            "  {:<10} {:<11} {:>8} {:>8} {:>8} {:>8} {:>7} {:>7} {:>8} {:>8} {:>8} {:>7} {:>7} {:>6} {:>6} {:>4} {:<5} {}",
            r.kind.name(),
            r.class.unwrap_or("-"),
            mib(r.usage_bytes),
            mib(r.working_set_bytes),
            mib(r.anon_bytes),
            mib(r.file_bytes),
            mib(r.shmem_bytes),
            mib(r.kernel_bytes),
            mib(r.active_file_bytes),
            mib(r.inactive_file_bytes),
            mib(r.memory_max_bytes),
            mib(r.swap_bytes),
            mib(r.swap_max_bytes),
            pct(r.psi_some_avg10),
            pct(r.psi_full_avg10),
            r.oom_kills
                .map_or_else(|| "-".to_owned(), |k| k.to_string()),
            match r.oom_handler_may_kill {
                Some(true) => "yes",
                Some(false) => "no",
                None => "-",
            },
            match (&r.namespace, &r.pod_name) {
                (Some(ns), Some(name)) =>
                    format!("{} ({}/{})", clean(&r.cgroup), clean(ns), clean(name)),
                _ => clean(&r.cgroup).into_owned(),
            },
        )?;
    }
    // What the guards leave out, whatever the ranking says: said, so a "no" is not a puzzle.
    let guarded: Vec<&Row> = rows
        .iter()
        .filter(|r| {
            r.reason
                .as_deref()
                .is_some_and(|w| w.starts_with("node-critical"))
        })
        .collect();
    if !guarded.is_empty() {
        writeln!(
            out,
            "
  never candidates (protect.nodeCritical):"
        )?;
        for r in guarded {
            writeln!(
                out,
                "    {}: {}",
                clean(&r.cgroup),
                clean(r.reason.as_deref().unwrap_or_default())
            )?;
        }
    }
    Ok(())
}

/// The kubelet's eviction order of the pods of `--pods`.
fn print_pods(pods: &[PodRow], not_here: usize, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "\nkubelet eviction order under memory pressure (pods of the file not on this node: {}):",
        not_here
    )?;
    writeln!(
        out,
        "  {:<5} {:<40} {:>10} {:>10} {:>8} {:>9} {:>9} {:>9} QOS",
        "RANK", "POD", "WSET MIB", "REQ MIB", "EXCEEDS", "PRIORITY", "SWAP MIB", "SWAPLIMIT"
    )?;
    for p in pods {
        writeln!(
            out,
            "  {:<5} {:<40} {:>10} {:>10} {:>8} {:>9} {:>9} {:>9} {:?}",
            p.eviction_rank
                .map_or_else(|| "never".to_owned(), |r| r.to_string()),
            clean(&p.pod),
            mib(p.working_set_bytes),
            {
                #[allow(clippy::cast_precision_loss)] // display only
                let mib = p.request_bytes as f64 / 1_048_576.0;
                format!("{mib:.1}")
            },
            match p.exceeds_request {
                Some(true) => "yes",
                Some(false) => "no",
                None => "no stats",
            },
            p.priority,
            mib(p.swap_bytes),
            mib(p.swap_limit_bytes.and_then(|b| u64::try_from(b).ok())),
            p.qos_class,
        )?;
    }
    Ok(())
}

fn print_node(v: &NodeView, threshold: bool, out: &mut impl Write) -> std::io::Result<()> {
    #[allow(clippy::cast_precision_loss)]
    let gib = |b: u64| format!("{:.3} GiB", b as f64 / 1_073_741_824.0);
    #[allow(clippy::cast_precision_loss)]
    let gib_i = |b: i64| format!("{:.3} GiB", b as f64 / 1_073_741_824.0);
    writeln!(
        out,
        "node-exporter view: MemTotal {}, MemAvailable {} → usage {:.1} % (1 − MemAvailable/MemTotal)",
        gib(v.mem_total_bytes),
        gib(v.mem_available_bytes),
        v.node_exporter_usage_ratio * 100.0
    )?;
    writeln!(
        out,
        "kubelet view: root usage (anon + file) {}, working set {} → memory.available {}, usage {:.1} %",
        gib(v.root_usage_bytes),
        gib(v.root_working_set_bytes),
        gib_i(v.kubelet_memory_available_bytes),
        v.kubelet_usage_ratio * 100.0
    )?;
    match (v.eviction_threshold_bytes, v.distance_to_eviction_bytes) {
        (Some(t), Some(d)) if threshold => writeln!(
            out,
            "eviction: memory.available < {} → {} {}",
            gib_i(t),
            gib_i(d.abs()),
            if d >= 0 {
                "to go before the kubelet evicts"
            } else {
                "below the threshold: the kubelet is evicting"
            }
        )?,
        _ => writeln!(out, "eviction: no memory.available threshold")?,
    }
    writeln!(out, "why the two views differ:")?;
    for f in &v.factors {
        writeln!(
            out,
            "  {:<28} {:>12}  raises the {} view: {}",
            f.name,
            gib(f.bytes),
            if f.raises == "kubelet" {
                "kubelet"
            } else {
                "node-exporter"
            },
            f.description
        )?;
    }
    Ok(())
}
