//! What the collector reads in one cycle, as plain data (recorded and replayed as is).

use crate::{Limit, PsiKind, PsiSpan, QosClass};

/// PSI of one subtree.
#[derive(Debug, Clone, PartialEq)]
pub enum PsiReading {
    /// All eight values, indexed `[kind][span]`.
    Values([[f64; 4]; 2]),
    /// The file is missing or unreadable or malformed: counts as zeros (Talos: "e.g. during
    /// system boot").
    Missing,
    /// The file parses but lacks a line or field the trigger needs: the cycle must fail with
    /// this message (Talos: `cannot find memory pressure type: type: full`).
    Incomplete(String),
}

impl PsiReading {
    /// One value (0 when missing).
    pub fn get(&self, kind: PsiKind, span: PsiSpan) -> f64 {
        match self {
            PsiReading::Values(v) => v
                .get(kind as usize)
                .and_then(|k| k.get(span as usize))
                .copied()
                .unwrap_or(0.0),
            _ => 0.0,
        }
    }
}

/// Memory files of one subtree; `None` when unreadable.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MemoryReading {
    /// `memory.current`.
    pub current: Option<u64>,
    /// `memory.peak`.
    pub peak: Option<u64>,
    /// `memory.max`.
    pub max: Option<Limit>,
}

/// One metrics subtree of the layout.
#[derive(Debug, Clone, PartialEq)]
pub struct SubtreeSample {
    /// Relative path (`""` for the root).
    pub dir: String,
    /// The class it is summed into; `None` for the root.
    pub class: Option<QosClass>,
    /// Its PSI.
    pub psi: PsiReading,
    /// Its memory.
    pub memory: MemoryReading,
    /// Its cgroup id (the directory's inode, never given twice): a new id at the same path is
    /// another cgroup (a restarted unit), whose counters start again. `None` when unreadable,
    /// and for the root cgroup (never made again).
    pub cgroup_id: Option<u64>,
    /// Its `memory.stat` reclaim counters, read only when the trigger uses them; `None`
    /// otherwise or when unreadable.
    pub stat: Option<StatCounters>,
    /// Its `memory.swap.current`, read only when the trigger uses it; `None` otherwise or
    /// when unreadable (no swap accounting).
    pub swap_current: Option<u64>,
    /// Its `memory.events` counters, read only when the trigger uses them; `None` otherwise
    /// or when unreadable.
    pub events: Option<EventCounters>,
}

/// A cgroup's `memory.events` counters (hierarchical: its descendants' included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventCounters {
    /// `high`: throttled at `memory.high`.
    pub high: u64,
    /// `max`: at `memory.max`, about to reclaim or OOM.
    pub max: u64,
    /// `oom`: ran out of memory at its limit.
    pub oom: u64,
}

/// A cgroup's `memory.stat` counters the class rates are made of (pages since the cgroup was
/// made).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatCounters {
    /// `workingset_refault_file`.
    pub workingset_refault_file: u64,
    /// `pgscan`.
    pub pgscan: u64,
}

/// The node's `/proc/vmstat` counters the node rates are made of (pages since boot): the
/// reclaim counters summed over their sources (`pgscan_kswapd` + `pgscan_direct` +
/// `pgscan_khugepaged`, likewise `pgsteal_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VmCounters {
    /// `workingset_refault_file`.
    pub workingset_refault_file: u64,
    /// All `pgscan_*`.
    pub pgscan: u64,
    /// `pgscan_direct`.
    pub pgscan_direct: u64,
    /// All `pgsteal_*`.
    pub pgsteal: u64,
    /// `pswpin`: pages read from swap.
    pub pswpin: u64,
    /// `pswpout`: pages written to swap.
    pub pswpout: u64,
    /// `zswpin`: pages zswap gave back (decompressed on a fault), 0 without zswap.
    pub zswpin: u64,
    /// `zswpout`: pages zswap took in (compressed), 0 without zswap.
    pub zswpout: u64,
}

/// The node's swap from `/proc/meminfo`, bytes (0 for a line the kernel does not print).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NodeSwap {
    /// `SwapTotal`.
    pub total: u64,
    /// `SwapFree`.
    pub free: u64,
    /// `Zswap` (the compressed pool; kernels since 5.x with zswap).
    pub zswap: u64,
}

/// The node's memory from `/proc/meminfo`, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeMemory {
    /// `MemTotal`.
    pub total: u64,
    /// `MemAvailable`.
    pub available: u64,
}

/// A candidate's swap files (with swap accounting; `None` each when unreadable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SwapReading {
    /// `memory.swap.current`, bytes.
    pub current: Option<u64>,
    /// `memory.swap.max`.
    pub max: Option<Limit>,
}

/// A candidate's protection files (each `None` when unreadable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProtectionReading {
    /// `memory.min`.
    pub min: Option<u64>,
    /// `memory.low`.
    pub low: Option<u64>,
    /// `memory.high`.
    pub high: Option<Limit>,
}

/// Everything the trigger reads in one cycle.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsSample {
    /// Monotonic time of the sample, nanoseconds (any fixed origin).
    pub at_ns: u64,
    /// In the layout's order; Guaranteed pods name-sorted.
    pub subtrees: Vec<SubtreeSample>,
    /// `None` when `/proc/meminfo` could not be read (the variables are then 0).
    pub node_memory: Option<NodeMemory>,
    /// `/proc/vmstat`, read only when the trigger uses the node's reclaim rates; `None`
    /// otherwise or when unreadable.
    pub vmstat: Option<VmCounters>,
    /// The swap lines of `/proc/meminfo`, read only when the trigger uses them; `None`
    /// otherwise or when unreadable.
    pub swap: Option<NodeSwap>,
}

/// One kill candidate, read when the trigger fires.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateSample {
    /// Its swap files, read only when the ranking uses them; `None` otherwise.
    pub swap: Option<SwapReading>,
    /// Its protection files (`memory.min`, `.low`, `.high`), read only when the ranking uses
    /// them; `None` otherwise.
    pub protection: Option<ProtectionReading>,
    /// Its `memory.pressure` avg10 (`some`, `full`), read only when the ranking uses them;
    /// `None` otherwise (zeros when unreadable).
    pub pressure: Option<[f64; 2]>,
    /// The cgroup's path on the node, `/sys/fs/cgroup/...` whatever root it was read under
    /// (the ranking's `path`, as Talos gives it).
    pub path: String,
    /// Relative path.
    pub dir: String,
    /// Its class.
    pub class: QosClass,
    /// Its memory files.
    pub memory: MemoryReading,
    /// Any live process in it (`cgroup.events` `populated`, or a PID below it).
    pub populated: bool,
    /// It is, or contains, oomwarden's own cgroup.
    pub contains_self: bool,
    /// Files that could not be read: (file, error), logged as `cannot read property for cgroup`.
    pub read_errors: Vec<(String, String)>,
    /// The cgroup's id when it was read (its directory's inode): the kill checks it is still
    /// the same cgroup. `None` when it could not be read.
    pub cgroup_id: Option<u64>,
    /// The lowest `/proc/<pid>/oom_score_adj` of its processes, the pod sandbox's (−998, which
    /// the kubelet gives every pod's pause process) left out; `None` when no process was read
    /// (the ranking's `oom_score_adj` is then 0).
    pub oom_score_adj: Option<i64>,
    /// Its growth, bytes per second of `memory.current` over the last 1 to 2 s: filled by the
    /// policy from its state (`State::fill_growth`), `None` without an earlier reading.
    pub growth: Option<f64>,
}

impl CandidateSample {
    /// A live candidate at `dir` (relative to the hierarchy) of `class`, nothing read yet:
    /// what tests and tools start from, setting what they need.
    pub fn new(dir: &str, class: QosClass) -> Self {
        CandidateSample {
            swap: None,
            protection: None,
            pressure: None,
            path: format!("/sys/fs/cgroup/{dir}"),
            dir: dir.to_owned(),
            class,
            memory: MemoryReading::default(),
            populated: true,
            contains_self: false,
            read_errors: Vec::new(),
            cgroup_id: None,
            oom_score_adj: None,
            growth: None,
        }
    }
}
