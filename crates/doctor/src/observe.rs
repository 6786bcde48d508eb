//! What the node shows, read under the [`Roots`]: every read bounded, an absent file an
//! ordinary outcome (the finding it would feed is simply not made).

use std::path::Path;

use oomwarden_cgroupfs::{CgroupFs, read_regular};
use oomwarden_model::NodeSwap;
use oomwarden_procfs::ProcFs;

use crate::{NODE_AGENTS, OTHER_KILLERS, Roots};

/// A file the doctor reads is small; anything larger is not what it expects.
const MAX_FILE: u64 = 1 << 20;

/// At most this many PIDs are looked at (a node has far fewer; a bound all the same).
const MAX_PIDS: usize = 200_000;

/// A process the doctor watches: an OOM killer, a node agent or oomwarden itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentProcess {
    /// Its PID, as this process sees it.
    pub pid: u32,
    /// `/proc/<pid>/comm`.
    pub comm: String,
    /// Its command line (as Talos formats them).
    pub cmdline: String,
    /// `/proc/<pid>/oom_score_adj`, when readable.
    pub oom_score_adj: Option<i64>,
    /// Its cgroup (relative to the root), when readable.
    pub cgroup: Option<String>,
    /// Its cgroup's `memory.min`, when readable (none for the root cgroup).
    pub memory_min: Option<u64>,
}

/// A systemd-oomd setting that makes it kill below a unit holding the kubelet, the runtime
/// or pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitOom {
    /// The unit (`-.slice`, `system.slice`, …).
    pub unit: String,
    /// `ManagedOOMMemoryPressure` or `ManagedOOMSwap`.
    pub key: &'static str,
    /// Its value (`kill`).
    pub value: String,
    /// What the unit holds, in words.
    pub holds: &'static str,
    /// The files that set it, in the order applied.
    pub files: Vec<String>,
}

/// Talos's machine configuration, where it can be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TalosConfig {
    /// Not there (not Talos, or not visible from here).
    Absent,
    /// There but not readable.
    Unreadable {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
    /// Read.
    Read {
        /// The file.
        path: String,
        /// The `OOMConfig` document's `triggerExpression` (none: no such document, the
        /// built-in default trigger).
        trigger: Option<String>,
    },
}

/// MGLRU's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LruGen {
    /// `lru_gen/enabled` is not 0.
    pub enabled: bool,
    /// `lru_gen/min_ttl_ms`.
    pub min_ttl_ms: u64,
    /// The `min_ttl_ms` file.
    pub path: String,
}

/// Everything the doctor saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observations {
    /// The cgroup root, as given.
    pub cgroup_root: String,
    /// The procfs root, as given.
    pub proc_root: String,
    /// cgroup v2 with the memory controller, or why not.
    pub host: Result<(), String>,
    /// PSI, or why not.
    pub psi: Result<(), String>,
    /// The `psi=` word of the kernel command line that turned PSI off.
    pub psi_off_word: Option<String>,
    /// `/proc/self/ns/pid`'s link (`pid:[4026531836]` in the host's namespace).
    pub pid_namespace: Option<String>,
    /// The layout in use and why, or why none.
    pub layout: Result<(String, String), String>,
    /// The directories at the cgroup root.
    pub top_dirs: Vec<String>,
    /// A layout given by hand: its directories that do not exist.
    pub missing_dirs: Vec<String>,
    /// The `talos` layout: where Talos's own controller reads the tree otherwise.
    pub talos_misreads: Vec<String>,
    /// The processes watched.
    pub processes: Vec<AgentProcess>,
    /// systemd-oomd settings over the node's agents or pods.
    pub oomd_units: Vec<UnitOom>,
    /// Talos's machine configuration.
    pub talos_config: TalosConfig,
    /// `vm.panic_on_oom`.
    pub panic_on_oom: Option<u64>,
    /// `vm.overcommit_memory`.
    pub overcommit_memory: Option<u64>,
    /// MGLRU's settings (none: the kernel has no MGLRU).
    pub lru_gen: Option<LruGen>,
    /// The swap lines of `/proc/meminfo`.
    pub swap: Option<NodeSwap>,
    /// zswap's `enabled` parameter (none: no zswap in this kernel).
    pub zswap_enabled: Option<bool>,
    /// The root's `cgroup.stat` `nr_dying_descendants`.
    pub dying_descendants: Option<u64>,
}

/// Reads what the doctor judges, under `roots`, for `settings`.
pub fn observe(roots: &Roots, settings: &oomwarden_config::Settings) -> Observations {
    let cgroups = CgroupFs::new(&roots.cgroup);
    let proc = ProcFs::new(&roots.proc);
    let text = |path: &Path| {
        read_regular(path, MAX_FILE)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    };
    let number = |path: &Path| text(path).and_then(|t| t.trim().parse::<u64>().ok());
    let layout = oomwarden_node::resolve_layout(settings, &cgroups);
    let (missing_dirs, talos_misreads) = match &layout {
        Ok((l, _)) => (
            if matches!(
                settings.warden.layout,
                oomwarden_config::LayoutSetting::Auto
            ) {
                Vec::new()
            } else {
                oomwarden_collect::missing_dirs(l, &cgroups).0
            },
            if l.name == "talos" {
                oomwarden_collect::talos_misreads(&cgroups)
            } else {
                Vec::new()
            },
        ),
        Err(_) => (Vec::new(), Vec::new()),
    };
    let lru = roots.host.join("sys/kernel/mm/lru_gen");
    let ttl_path = lru.join("min_ttl_ms");
    let lru_gen = text(&lru.join("enabled")).map(|enabled| LruGen {
        enabled: u64::from_str_radix(enabled.trim().trim_start_matches("0x"), 16)
            .is_ok_and(|v| v != 0),
        min_ttl_ms: number(&ttl_path).unwrap_or(0),
        path: ttl_path.display().to_string(),
    });
    let swap = proc.meminfo().ok().map(|m| NodeSwap {
        total: m.get("SwapTotal").unwrap_or(0),
        free: m.get("SwapFree").unwrap_or(0),
        zswap: m.get("Zswap").unwrap_or(0),
    });
    Observations {
        cgroup_root: roots.cgroup.display().to_string(),
        proc_root: roots.proc.display().to_string(),
        host: oomwarden_node::check_host(&cgroups, &proc).map_err(|e| e.to_string()),
        psi: oomwarden_node::check_psi(&cgroups, &proc).map_err(|e| e.to_string()),
        psi_off_word: text(&roots.proc.join("cmdline"))
            .and_then(|c| oomwarden_node::psi_off_on_cmdline(&c)),
        pid_namespace: std::fs::read_link(roots.proc.join("self/ns/pid"))
            .ok()
            .map(|l| l.display().to_string()),
        layout: layout
            .map(|(l, why)| (l.name, why))
            .map_err(|e| e.to_string()),
        top_dirs: cgroups.children("").unwrap_or_default(),
        missing_dirs,
        talos_misreads,
        processes: processes(&roots.proc, &proc, &cgroups),
        oomd_units: crate::systemd::managed_oom_units(&roots.host),
        talos_config: talos_config(&roots.host),
        panic_on_oom: number(&roots.proc.join("sys/vm/panic_on_oom")),
        overcommit_memory: number(&roots.proc.join("sys/vm/overcommit_memory")),
        lru_gen,
        swap,
        zswap_enabled: text(&roots.host.join("sys/module/zswap/parameters/enabled"))
            .map(|v| matches!(v.trim(), "Y" | "y" | "1")),
        dying_descendants: cgroups.read("", "cgroup.stat").ok().and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("nr_dying_descendants "))
                .and_then(|v| v.trim().parse().ok())
        }),
    }
}

/// The watched processes: each PID's `comm` read, the watched ones read further. A process
/// gone meanwhile is skipped.
fn processes(root: &Path, proc: &ProcFs, cgroups: &CgroupFs) -> Vec<AgentProcess> {
    let Ok(dir) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .take(MAX_PIDS)
        .collect();
    pids.sort_unstable();
    let watched = |comm: &str| {
        OTHER_KILLERS.contains(&comm)
            || NODE_AGENTS.contains(&comm)
            || comm == "systemd-oomd"
            || comm == "oomwarden"
    };
    let mut out = Vec::new();
    for pid in pids {
        let Ok(bytes) = read_regular(&root.join(format!("{pid}/comm")), 4096) else {
            continue;
        };
        let comm = String::from_utf8_lossy(&bytes).trim_end().to_owned();
        if !watched(&comm) {
            continue;
        }
        let cgroup = proc.cgroup_of(&pid.to_string()).ok();
        let memory_min = cgroup
            .as_deref()
            .filter(|c| !c.is_empty())
            .and_then(|c| cgroups.memory_protection(c, "memory.min").ok());
        out.push(AgentProcess {
            pid,
            cmdline: proc.cmdline(pid).unwrap_or_default(),
            oom_score_adj: proc.oom_score_adj(pid).ok(),
            comm,
            cgroup,
            memory_min,
        });
    }
    out
}

/// Where Talos keeps the machine configuration on the node.
const TALOS_CONFIG: &str = "system/state/config.yaml";

fn talos_config(host: &Path) -> TalosConfig {
    let path = host.join(TALOS_CONFIG);
    let shown = path.display().to_string();
    match read_regular(&path, MAX_FILE * 4) {
        Ok(bytes) => match parse_talos_oom_trigger(&String::from_utf8_lossy(&bytes)) {
            Ok(trigger) => TalosConfig::Read {
                trigger,
                path: shown,
            },
            Err(why) => TalosConfig::Unreadable { path: shown, why },
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => TalosConfig::Absent,
        Err(e) => TalosConfig::Unreadable {
            path: shown,
            why: e.to_string(),
        },
    }
}

/// The `triggerExpression` of the `OOMConfig` document of a Talos machine configuration (a
/// stream of YAML documents); none when there is no such document or it has no trigger (the
/// built-in default is on either way); an error when the stream is not YAML.
pub fn parse_talos_oom_trigger(text: &str) -> Result<Option<String>, String> {
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(text).map_err(|e| format!("not YAML: {e}"))?;
    Ok(docs
        .iter()
        .find(|d| d.get("kind").and_then(|k| k.as_str()) == Some("OOMConfig"))
        .and_then(|d| d.get("triggerExpression"))
        .and_then(|t| t.as_str())
        .map(str::to_owned))
}
