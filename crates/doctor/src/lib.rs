//! `oomwarden doctor`: one report of what on a node stands between it and good OOM handling.
//!
//! Two steps, so that the judgement is tested without a node: [`observe`] reads what the node
//! shows under three roots (the cgroup tree, procfs, and the host's own files: systemd's unit
//! directories, `/sys`, Talos's machine configuration), each read bounded and an absent file an
//! ordinary outcome; [`diagnose`] (pure) turns those [`Observations`] and the policy in force
//! into [`Finding`]s, each with a stable id, a severity, what was seen (path and value) and the
//! fix. The findings' ids are a contract with scripts and with the metric
//! `oomwarden_doctor_findings{id,severity}` (docs/operations.md lists them).

mod observe;
mod systemd;

use std::path::PathBuf;

use serde::Serialize;

pub use observe::{
    AgentProcess, LruGen, Observations, TalosConfig, UnitOom, observe, parse_talos_oom_trigger,
};
pub use systemd::{ManagedOom, managed_oom_of, parse_systemctl_show};

/// How much a finding stands in the way. Ordered: `Info` < `Warning` < `Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing to fix.
    Info,
    /// Something may get in the way of good OOM handling; look at it.
    Warning,
    /// Something gets in the way; fix it.
    Error,
}

impl Severity {
    /// Its name in output and in the metric's label.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// What was seen: a file (or a process, as `/proc/<pid>`) and its value there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Seen {
    /// The file, on the node's own paths where the roots are the node's.
    pub path: String,
    /// What it held (or `absent`).
    pub value: String,
}

impl Seen {
    fn new(path: impl Into<String>, value: impl Into<String>) -> Seen {
        Seen {
            path: path.into(),
            value: value.into(),
        }
    }
}

/// One thing the doctor found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// A stable identifier (`psi-missing`, `other-killer`, …).
    pub id: &'static str,
    /// How much it stands in the way.
    pub severity: Severity,
    /// What it means, in one or two sentences.
    pub summary: String,
    /// What was seen.
    pub seen: Vec<Seen>,
    /// What to do (empty for a note that needs nothing).
    pub fix: String,
}

/// Where the node is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    /// The cgroup v2 hierarchy (`/sys/fs/cgroup`).
    pub cgroup: PathBuf,
    /// procfs (`/proc`).
    pub proc: PathBuf,
    /// The host's own file system (`/`): `etc/systemd`, `usr/lib/systemd`, `run/systemd`,
    /// `sys/kernel/mm`, `sys/module/zswap`, `system/state/config.yaml` are read below it.
    pub host: PathBuf,
}

/// What of the policy in force the judgement needs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Policy {
    /// The PSI variables it reads (and `psiTriggers`): [`oomwarden_config::Settings::psi_reads`].
    pub psi_reads: Vec<&'static str>,
    /// The swap variables it reads: [`oomwarden_config::Settings::swap_reads`].
    pub swap_reads: Vec<&'static str>,
    /// Whether the layout is detected (`auto`) rather than given.
    pub layout_auto: bool,
}

impl Policy {
    /// The policy of `settings`.
    pub fn of(settings: &oomwarden_config::Settings) -> Policy {
        Policy {
            psi_reads: settings.psi_reads(),
            swap_reads: settings.swap_reads(),
            layout_auto: matches!(
                settings.warden.layout,
                oomwarden_config::LayoutSetting::Auto
            ),
        }
    }
}

/// The report: every finding, most severe first, then by id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The findings.
    pub findings: Vec<Finding>,
}

impl Report {
    /// The most severe finding's severity (`None`: no finding at all).
    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }

    /// How many findings have `severity`.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }
}

/// The doctor's whole run: observe the node under `roots`, judge it under `settings`.
pub fn examine(roots: &Roots, settings: &oomwarden_config::Settings) -> Report {
    diagnose(&observe(roots, settings), &Policy::of(settings))
}

/// The comm names of the OOM killers other than oomwarden (earlyoom, nohang, Meta's oomd, the
/// Android lmkd; systemd-oomd is judged by the units it manages, `systemd-oomd-managed`).
pub const OTHER_KILLERS: &[&str] = &["earlyoom", "nohang", "oomd", "lmkd"];

/// The comm names of the node agents a kernel OOM kill must never take before a pod: the
/// kubelet and the container runtimes.
pub const NODE_AGENTS: &[&str] = &[
    "kubelet",
    "containerd",
    "crio",
    "dockerd",
    "k3s-server",
    "k3s-agent",
    "rke2",
];

/// The `oom_score_adj` the kubelet gives Guaranteed pods: a node agent above it can be taken
/// by the kernel's OOM killer before them.
pub const GUARANTEED_OOM_SCORE_ADJ: i64 = -997;

/// `nr_dying_descendants` at or above which the dying cgroups are a finding: each holds
/// kernel memory no one can free until its last page goes (oomd's detector watches the same
/// counter).
pub const DYING_CGROUPS_WARN: u64 = 1000;

/// The inode of the initial PID namespace (the kernel's `PROC_PID_INIT_INO`): `/proc/self/ns/pid`
/// reads `pid:[4026531836]` in the host's own namespace.
pub const INIT_PID_NAMESPACE: &str = "pid:[4026531836]";

/// Judges what was observed under the policy: pure.
pub fn diagnose(obs: &Observations, policy: &Policy) -> Report {
    let mut findings = Vec::new();
    host_findings(obs, policy, &mut findings);
    layout_findings(obs, policy, &mut findings);
    killer_findings(obs, &mut findings);
    kernel_findings(obs, policy, &mut findings);
    agent_findings(obs, &mut findings);
    findings.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.id.cmp(b.id)));
    Report { findings }
}

/// cgroup v2 with the memory controller, PSI, the PID namespace.
fn host_findings(obs: &Observations, policy: &Policy, out: &mut Vec<Finding>) {
    if let Err(why) = &obs.host {
        out.push(Finding {
            id: "cgroup-v2-memory",
            severity: Severity::Error,
            summary: "the cgroup v2 memory controller is not available: no OOM handler that reads cgroups can run".into(),
            seen: vec![Seen::new(obs.cgroup_root.clone(), why.clone())],
            fix: "boot with systemd.unified_cgroup_hierarchy=1 (or cgroup_no_v1=memory), or point --cgroup-root at the cgroup2 mount".into(),
        });
    }
    if obs.psi.is_err() {
        let needed = !policy.psi_reads.is_empty();
        let mut seen = vec![Seen::new(
            format!("{}/pressure/memory", obs.proc_root),
            "absent",
        )];
        if let Some(word) = &obs.psi_off_word {
            seen.push(Seen::new(
                format!("{}/cmdline", obs.proc_root),
                word.clone(),
            ));
        }
        out.push(Finding {
            id: "psi-missing",
            severity: if needed { Severity::Error } else { Severity::Warning },
            summary: if needed {
                format!(
                    "memory pressure (PSI) is off, and the policy reads it ({}): oomwarden run refuses to start",
                    policy.psi_reads.join(", ")
                )
            } else {
                "memory pressure (PSI) is off; the policy reads none, so it runs on memory figures alone and cannot see the node's services stall while memory looks plentiful".to_owned()
            },
            seen,
            fix: "remove psi=0 from the kernel command line (on OpenShift, the MachineConfig that sets it) and reboot; until then run a policy without PSI variables (examples/config/no-psi.yaml)".into(),
        });
    }
    if let Some(ns) = &obs.pid_namespace
        && ns != INIT_PID_NAMESPACE
    {
        out.push(Finding {
            id: "foreign-pid-namespace",
            severity: Severity::Warning,
            summary: "this process runs in a PID namespace that is not the host's (a DaemonSet under Talos's workload isolation, or a hostPID that is not the host's): the processes of the node's services (system/*, init) are invisible, so their command lines, PIDs and process_mrelease are out of reach; kills still end whole cgroups through cgroup.kill and are verified from cgroup.events".into(),
            seen: vec![Seen::new(format!("{}/self/ns/pid", obs.proc_root), ns.clone())],
            fix: "nothing for pods; to see the node's services too, run oomwarden in the host's PID namespace (on Talos with workload isolation, as a system extension service rather than a DaemonSet)".into(),
        });
    }
}

/// The layout and how Talos reads the same tree.
fn layout_findings(obs: &Observations, policy: &Policy, out: &mut Vec<Finding>) {
    match &obs.layout {
        Ok((name, why)) => out.push(Finding {
            id: "layout",
            severity: Severity::Info,
            summary: format!("the {name} layout reads this node ({why})"),
            seen: vec![Seen::new(obs.cgroup_root.clone(), name.clone())],
            fix: String::new(),
        }),
        Err(why) => out.push(Finding {
            id: "layout-unknown",
            severity: Severity::Error,
            summary: format!("no layout reads this node: {why}"),
            seen: vec![Seen::new(obs.cgroup_root.clone(), obs.top_dirs.join(" "))],
            fix: "set layout: to a built-in layout, or write a custom one (docs/layouts.md)".into(),
        }),
    }
    if !policy.layout_auto && !obs.missing_dirs.is_empty() {
        out.push(Finding {
            id: "layout-missing-dirs",
            severity: Severity::Warning,
            summary: "cgroups of the layout given do not exist: their classes read as empty and their pods are never candidates".into(),
            seen: obs
                .missing_dirs
                .iter()
                .map(|d| Seen::new(format!("{}/{d}", obs.cgroup_root), "absent"))
                .collect(),
            fix: "check the layout against `oomwarden layout`, or use layout: auto".into(),
        });
    }
    for m in &obs.talos_misreads {
        out.push(Finding {
            id: "talos-misread",
            severity: Severity::Info,
            summary: format!("Talos's own controller reads this tree otherwise: {m}"),
            seen: vec![Seen::new(obs.cgroup_root.clone(), "talos layout")],
            fix: String::new(),
        });
    }
}

/// Other OOM killers on the node: processes, systemd-oomd's managed units, Talos's own
/// controller.
fn killer_findings(obs: &Observations, out: &mut Vec<Finding>) {
    for p in obs
        .processes
        .iter()
        .filter(|p| OTHER_KILLERS.contains(&p.comm.as_str()))
    {
        out.push(Finding {
            id: "other-killer",
            severity: Severity::Warning,
            summary: format!(
                "{} runs beside oomwarden: two userspace OOM killers race, and the other knows nothing of pods, QoS classes or oomwarden's records",
                p.comm
            ),
            seen: vec![Seen::new(format!("{}/{}", obs.proc_root, p.pid), p.cmdline.clone())],
            fix: format!("stop and disable {} on Kubernetes nodes, or run oomwarden in dry run beside it", p.comm),
        });
    }
    let oomd_runs = obs.processes.iter().any(|p| p.comm == "systemd-oomd");
    for u in &obs.oomd_units {
        out.push(Finding {
            id: "systemd-oomd-managed",
            severity: if oomd_runs { Severity::Error } else { Severity::Info },
            summary: format!(
                "{}={} on {}, which holds {}: systemd-oomd kills the cgroups below it under pressure or when swap fills ({})",
                u.key,
                u.value,
                u.unit,
                u.holds,
                if oomd_runs { "systemd-oomd is running" } else { "systemd-oomd is not running now; it would act once started" }
            ),
            seen: u.files.iter().map(|f| Seen::new(f.clone(), format!("{}={}", u.key, u.value))).collect(),
            fix: format!(
                "add a drop-in for {} setting {}=auto (or stop and mask systemd-oomd on Kubernetes nodes; Fedora's systemd-oomd-defaults package ships these settings)",
                u.unit, u.key
            ),
        });
    }
    match &obs.talos_config {
        TalosConfig::Absent => {}
        TalosConfig::Unreadable { path, why } => out.push(Finding {
            id: "talos-oom-controller",
            severity: Severity::Info,
            summary: format!("Talos's machine configuration cannot be read ({why}): whether Talos's own OOM controller still acts beside oomwarden is unknown"),
            seen: vec![Seen::new(path.clone(), "unreadable")],
            fix: "check that the machine configuration's OOMConfig document has triggerExpression: \"false\" (talosctl get machineconfig -o yaml)".into(),
        }),
        TalosConfig::Read { path, trigger } => {
            let off = trigger.as_deref().is_some_and(|t| t.trim() == "false");
            if !off {
                out.push(Finding {
                    id: "talos-oom-controller",
                    severity: Severity::Warning,
                    summary: "Talos's own OOM controller is on (its OOMConfig trigger is not false): it and oomwarden both kill, each unaware of the other".into(),
                    seen: vec![Seen::new(
                        path.clone(),
                        trigger.clone().map_or_else(
                            || "no OOMConfig document (the built-in default trigger is on)".to_owned(),
                            |t| format!("triggerExpression: {t}"),
                        ),
                    )],
                    fix: "set triggerExpression: \"false\" in the machine configuration's OOMConfig document (talosctl patch mc)".into(),
                });
            }
        }
    }
}

/// Kernel settings: panic_on_oom, overcommit, MGLRU's min_ttl_ms, swap, dying cgroups.
fn kernel_findings(obs: &Observations, policy: &Policy, out: &mut Vec<Finding>) {
    let sysctl = |name: &str| format!("{}/sys/vm/{name}", obs.proc_root);
    if let Some(v) = obs.panic_on_oom.filter(|v| *v != 0) {
        out.push(Finding {
            id: "panic-on-oom",
            severity: Severity::Warning,
            summary: "vm.panic_on_oom is set: when memory runs out before oomwarden acts, the kernel panics (the node reboots) instead of killing one process".into(),
            seen: vec![Seen::new(sysctl("panic_on_oom"), v.to_string())],
            fix: "sysctl vm.panic_on_oom=0 (and in /etc/sysctl.d), unless a reboot on OOM is wanted".into(),
        });
    }
    if obs.overcommit_memory == Some(2) {
        out.push(Finding {
            id: "overcommit-never",
            severity: Severity::Info,
            summary: "vm.overcommit_memory is 2 (never overcommit): allocations fail with ENOMEM before memory runs out, so programs see errors where other nodes would see an OOM kill".into(),
            seen: vec![Seen::new(sysctl("overcommit_memory"), "2")],
            fix: String::new(),
        });
    }
    if let Some(lru) = &obs.lru_gen
        && lru.enabled
        && lru.min_ttl_ms > 0
    {
        out.push(Finding {
            id: "mglru-min-ttl",
            severity: Severity::Warning,
            summary: format!(
                "MGLRU's min_ttl_ms is {} ms: the kernel OOM-kills, by design, whenever the working set of the last {} ms cannot be kept, before pressure builds for oomwarden to act on",
                lru.min_ttl_ms, lru.min_ttl_ms
            ),
            seen: vec![Seen::new(lru.path.clone(), lru.min_ttl_ms.to_string())],
            fix: "echo 0 > /sys/kernel/mm/lru_gen/min_ttl_ms, unless the kernel's thrashing prevention is wanted".into(),
        });
    }
    if let Some(swap) = &obs.swap {
        let zswap = match obs.zswap_enabled {
            Some(true) => "zswap on",
            Some(false) => "zswap off",
            None => "no zswap in this kernel",
        };
        if swap.total > 0 && policy.swap_reads.is_empty() {
            out.push(Finding {
                id: "swap-blind-policy",
                severity: Severity::Warning,
                summary: format!(
                    "the node has {} MiB of swap ({zswap}) and the policy reads no swap variable: a hog whose pages went to swap ranks by what is left resident, and swap thrash is invisible to the trigger",
                    swap.total >> 20
                ),
                seen: vec![Seen::new(format!("{}/meminfo", obs.proc_root), format!("SwapTotal {} kB, SwapFree {} kB", swap.total >> 10, swap.free >> 10))],
                fix: "use examples/config/recommended-swap.yaml (swap running out, swap thrash, ranking with memory_swap_current)".into(),
            });
        } else {
            out.push(Finding {
                id: "swap",
                severity: Severity::Info,
                summary: if swap.total > 0 {
                    format!(
                        "swap: {} MiB, {} MiB free, {zswap}; the policy reads {}",
                        swap.total >> 20,
                        swap.free >> 20,
                        policy.swap_reads.join(", ")
                    )
                } else {
                    format!("no swap ({zswap})")
                },
                seen: vec![Seen::new(
                    format!("{}/meminfo", obs.proc_root),
                    format!("SwapTotal {} kB", swap.total >> 10),
                )],
                fix: String::new(),
            });
        }
    }
    if let Some(n) = obs.dying_descendants.filter(|n| *n >= DYING_CGROUPS_WARN) {
        out.push(Finding {
            id: "dying-cgroups",
            severity: Severity::Warning,
            summary: format!(
                "{n} dying cgroups: removed cgroups still pinned by pages they charged; each holds kernel memory that no kill frees, and they slow every walk of the tree"
            ),
            seen: vec![Seen::new(format!("{}/cgroup.stat", obs.cgroup_root), format!("nr_dying_descendants {n}"))],
            fix: "find what creates and removes cgroups at a high rate (a crash-looping pod, a job per second); the memory returns as their page cache is reclaimed".into(),
        });
    }
}

/// The node agents' and the daemon's own protection.
fn agent_findings(obs: &Observations, out: &mut Vec<Finding>) {
    for p in &obs.processes {
        let path = format!("{}/{}/oom_score_adj", obs.proc_root, p.pid);
        if NODE_AGENTS.contains(&p.comm.as_str())
            && let Some(adj) = p.oom_score_adj
            && adj > GUARANTEED_OOM_SCORE_ADJ
        {
            out.push(Finding {
                id: "node-agent-oom-score-adj",
                severity: Severity::Warning,
                summary: format!(
                    "{} (pid {}) has oom_score_adj {adj}, above a Guaranteed pod's {GUARANTEED_OOM_SCORE_ADJ}: the kernel's OOM killer can take it before the pods it runs",
                    p.comm, p.pid
                ),
                seen: vec![Seen::new(path.clone(), adj.to_string())],
                fix: "give it -999 as the kubelet gives itself and the runtime (OOMScoreAdjust=-999 in its unit)".into(),
            });
        }
        if NODE_AGENTS.contains(&p.comm.as_str()) && p.memory_min == Some(0) {
            out.push(Finding {
                id: "node-agent-memory-min",
                severity: Severity::Info,
                summary: format!(
                    "{} (pid {}) has no memory.min protection: under pressure, reclaim takes its pages like anyone's and it may stall",
                    p.comm, p.pid
                ),
                seen: vec![Seen::new(
                    format!("{}/{}/memory.min", obs.cgroup_root, p.cgroup.as_deref().unwrap_or("")),
                    "0",
                )],
                fix: "MemoryMin= in its unit (systemd-oomd protects itself with MemoryMin=64M)".into(),
            });
        }
        if p.comm == "oomwarden"
            && p.cmdline.split_whitespace().any(|w| w == "run")
            && let Some(adj) = p.oom_score_adj
            && adj > -998
        {
            out.push(Finding {
                id: "daemon-protection",
                severity: Severity::Warning,
                summary: format!(
                    "the running oomwarden daemon (pid {}) has oom_score_adj {adj}: it sets -1000 at start, so something else changed it or it cannot (no CAP_SYS_RESOURCE); the kernel may kill the handler first",
                    p.pid
                ),
                seen: vec![Seen::new(path, adj.to_string())],
                fix: "run it as root with CAP_SYS_RESOURCE (deploy/kubernetes/oomwarden.yaml does)".into(),
            });
        }
    }
}

#[cfg(test)]
mod tests;
