//! The collector: one layout, two readers, plain samples out.
//!
//! - [`Collector::metrics`] runs every cycle: the PSI and memory files of each metrics subtree
//!   (a handful of files plus four per Guaranteed pod).
//! - [`Collector::candidates`] runs only when the trigger fires: every candidate's memory
//!   files and whether it has a live process.
//!
//! Missing files and vanished cgroups are ordinary (zeros, or the candidate is skipped); any
//! other read failure is returned beside the sample as a [`Problem`] for the caller to log,
//! never a reason to fail the cycle, which is Talos's behaviour.

use std::collections::HashSet;
use std::fmt;

use oomwarden_cgroupfs::{CgroupFs, ReadError, join};
use oomwarden_model::variables::Source;
use oomwarden_model::{
    BuiltinLayout, CandidateSample, CandidateSource, EventCounters, LEFT_OUT, Layout,
    MemoryReading, MetricSource, MetricsSample, NodeMemory, NodeSwap, ProtectionReading, PsiKind,
    PsiReading, PsiSpan, QosClass, StatCounters, SubtreeSample, SwapReading, VmCounters,
    glob_match,
};
use oomwarden_procfs::ProcFs;

/// A read failure other than "not found", for the log.
#[derive(Debug)]
pub enum Problem {
    /// A file of a metrics subtree could not be read or parsed; the value counts as missing.
    Read(ReadError),
    /// A procfs file (`meminfo`) could not be read or parsed; its variables count as 0.
    Proc(oomwarden_procfs::ReadError),
    /// A candidate parent could not be listed (Talos: `cannot list cgroup members`).
    List {
        /// Relative directory.
        dir: String,
        /// The error.
        error: ReadError,
    },
}

impl Problem {
    /// Whether the read failed for want of file descriptors or memory (see
    /// [`ReadError::is_resource_exhaustion`]).
    pub fn is_resource_exhaustion(&self) -> bool {
        match self {
            Problem::Read(e) | Problem::List { error: e, .. } => e.is_resource_exhaustion(),
            Problem::Proc(_) => false,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Read(e) => write!(f, "{e}"),
            Problem::Proc(e) => write!(f, "{e}"),
            Problem::List { dir, error } => {
                write!(f, "cannot list cgroup members of {dir}: {error}")
            }
        }
    }
}

/// Why no layout was chosen.
#[derive(Debug, thiserror::Error)]
pub enum DetectError {
    /// No built-in layout matches the tree.
    #[error(
        "cannot recognise the cgroup tree at {root}: no built-in layout matches (talos: podruntime/ with init/ or system/; systemd: kubepods.slice/; cgroupfs: kubepods/ beside system.slice/; host: system.slice/ without Kubernetes). Set `layout` in the OOMWardenConfig document or --layout"
    )]
    Unknown {
        /// The cgroup root.
        root: String,
    },
    /// More than one matches.
    #[error("the cgroup tree at {root} matches several layouts ({}); refusing to guess. Set `layout` in the OOMWardenConfig document or --layout to one of them", .candidates.join(", "))]
    Ambiguous {
        /// The cgroup root.
        root: String,
        /// The layouts that match.
        candidates: Vec<&'static str>,
    },
}

/// Detects the layout of a cgroup tree from the directories at its root. Returns the layout
/// and the evidence, or an error when none or several match.
pub fn detect_layout(cgroups: &CgroupFs) -> Result<(Layout, String), DetectError> {
    let top = cgroups.children("").unwrap_or_default();
    let has = |name: &str| top.iter().any(|t| t == name);
    let mut matches: Vec<(BuiltinLayout, String)> = Vec::new();
    if has("podruntime") && (has("init") || has("system")) {
        matches.push((
            BuiltinLayout::Talos,
            "podruntime/ and init/ or system/ at the root".to_owned(),
        ));
    }
    if has("kubepods.slice") {
        matches.push((
            BuiltinLayout::Systemd,
            "kubepods.slice/ at the root (kubelet's systemd cgroup driver)".to_owned(),
        ));
    }
    if has("kubepods") && has("system.slice") {
        matches.push((
            BuiltinLayout::Cgroupfs,
            "kubepods/ beside system.slice/ (kubelet's cgroupfs driver on a systemd host)"
                .to_owned(),
        ));
    }
    if has("system.slice") && !has("kubepods") && !has("kubepods.slice") && !has("podruntime") {
        matches.push((
            BuiltinLayout::Host,
            "system.slice/ and no Kubernetes cgroups".to_owned(),
        ));
    }
    let root = cgroups.root().display().to_string();
    match matches.as_slice() {
        [] => Err(DetectError::Unknown { root }),
        [(layout, why)] => Ok((layout.layout(), why.clone())),
        many => Err(DetectError::Ambiguous {
            root,
            candidates: many.iter().map(|(b, _)| b.name()).collect(),
        }),
    }
}

/// The directories a layout reads (its metric and candidate sources; for a pattern, the part
/// before its first `*`) that do not exist under the hierarchy, and how many it reads in all.
/// A layout given by hand on a node it does not fit reads nothing but zeros: its commands say
/// so instead.
pub fn missing_dirs(layout: &Layout, cgroups: &CgroupFs) -> (Vec<String>, usize) {
    let mut dirs: Vec<String> = Vec::new();
    for dir in source_dirs(layout) {
        let fixed: Vec<&str> = dir.split('/').take_while(|c| !c.contains('*')).collect();
        let fixed = fixed.join("/");
        if !fixed.is_empty() && !dirs.contains(&fixed) && !layout.is_optional(&fixed) {
            dirs.push(fixed);
        }
    }
    let total = dirs.len();
    let missing = dirs.into_iter().filter(|d| !cgroups.is_dir(d)).collect();
    (missing, total)
}

/// The directories a layout's metric and candidate sources name (patterns as written).
fn source_dirs(layout: &Layout) -> impl Iterator<Item = &str> {
    layout
        .metrics
        .iter()
        .filter_map(|m| match m {
            MetricSource::Root => None,
            MetricSource::Dir { dir, .. } | MetricSource::Children { dir, .. } => {
                Some(dir.as_str())
            }
        })
        .chain(layout.candidates.iter().map(|c| c.dir.as_str()))
}

/// What of the tree a layout leaves out, as (relative path, why): each directory at the
/// root that no source of the layout reads (with the reason from [`LEFT_OUT`] when the
/// directory is a known one), and each known directory that exists but is never a candidate
/// (`system/sandbox`). Name-sorted; an unreadable root gives none.
pub fn left_out(layout: &Layout, cgroups: &CgroupFs) -> Vec<(String, String)> {
    let known = |dir: &str| {
        LEFT_OUT
            .iter()
            .find(|(d, _)| *d == dir)
            .map(|(_, why)| (*why).to_owned())
    };
    let sources: Vec<&str> = source_dirs(layout).collect();
    let first = |dir: &str| dir.split('/').next().unwrap_or("").to_owned();
    let mut out = Vec::new();
    for top in cgroups.children("").unwrap_or_default() {
        if !sources.iter().any(|s| glob_match(&first(s), &top)) {
            let why = known(&top).unwrap_or_else(|| "read by no source of this layout".to_owned());
            out.push((top, why));
        }
    }
    for (dir, why) in LEFT_OUT {
        let Some((parent_dir, name)) = dir.rsplit_once('/') else {
            continue;
        };
        let candidate = layout
            .candidates
            .iter()
            .any(|c| glob_match(&c.dir, parent_dir) && c.filter.admits(name));
        if cgroups.is_dir(dir) && !candidate && !out.iter().any(|(d, _)| d == dir) {
            out.push(((*dir).to_owned(), (*why).to_owned()));
        }
    }
    out.sort();
    out
}

/// Where Talos 1.14's own controller reads this tree otherwise than oomwarden's `talos`
/// layout (so a user knows what a drop-in changes), one sentence each: the node system
/// partition read as one Guaranteed pod, `system/sandbox` as a System candidate.
pub fn talos_misreads(cgroups: &CgroupFs) -> Vec<String> {
    let mut out = Vec::new();
    if cgroups.is_dir("kubepods/system") {
        let pods: usize = ["kubepods/system/besteffort", "kubepods/system/burstable"]
            .iter()
            .map(|d| cgroups.children(d).map_or(0, |c| c.len()))
            .sum::<usize>()
            + cgroups.children("kubepods/system").map_or(0, |c| {
                c.iter()
                    .filter(|n| *n != "besteffort" && *n != "burstable")
                    .count()
            });
        out.push(format!(
            "kubepods/system (Kubernetes 1.37's node system partition, KEP-5894, {pods} {}): Talos's controller reads the whole partition as one Guaranteed pod, so none of its pods is ever a candidate there and all their memory and stall count as Guaranteed; oomwarden reads each of its pods in its own QoS class",
            if pods == 1 { "pod" } else { "pods" }
        ));
    }
    if cgroups.is_dir("system/sandbox") {
        out.push(
            "system/sandbox (workload isolation: every pod runs inside it): Talos's controller makes it a System candidate, so a ranking that scores System above 0 kills every pod at once; oomwarden's talos layout never makes it a candidate".to_owned(),
        );
    }
    out
}

/// The cgroup (relative path) whose `cgroup.procs` lists `pid`, searched depth-first, children
/// name-sorted, at most `max_depth` levels down; `None` when not found. For a process in a
/// private cgroup namespace, whose `/proc/self/cgroup` says only `/`: with the host's tree
/// mounted and the host's PIDs visible (a DaemonSet with `hostPID`), it finds itself by PID.
pub fn find_process_cgroup(cgroups: &CgroupFs, pid: u32, max_depth: usize) -> Option<String> {
    let mut stack = vec![(String::new(), 0_usize)];
    while let Some((dir, depth)) = stack.pop() {
        if !dir.is_empty()
            && cgroups
                .cgroup_procs(&dir)
                .is_ok_and(|pids| pids.contains(&pid))
        {
            return Some(dir);
        }
        if depth < max_depth {
            let mut children = cgroups.children(&dir).unwrap_or_default();
            children.sort();
            for child in children.iter().rev() {
                stack.push((join(&dir, child), depth + 1));
            }
        }
    }
    None
}

/// Reads a layout's files.
#[derive(Debug, Clone)]
pub struct Collector {
    cgroups: CgroupFs,
    proc: ProcFs,
    layout: Layout,
    self_cgroup: Option<String>,
    reads: Reads,
}

/// What a cycle reads beyond Talos's files, when the trigger uses it: each is a file a
/// quiet cycle would otherwise not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reads {
    /// `/proc/vmstat` (the `d_node_*` reclaim rates).
    pub vmstat: bool,
    /// Each metrics subtree's `memory.stat` (the `d_qos_workingset_refault_file` and
    /// `d_qos_pgscan` class rates).
    pub memory_stat: bool,
    /// `/proc/meminfo` whole, to its swap and zswap lines (`node_swap_*`, `node_zswap_bytes`).
    pub swap: bool,
    /// Each metrics subtree's `memory.swap.current` (`qos_memory_swap_current`).
    pub class_swap: bool,
    /// Each candidate's `memory.swap.current` and `memory.swap.max` (the ranking's
    /// `memory_swap_current`, `memory_swap_max`).
    pub candidate_swap: bool,
    /// Each candidate's `memory.min`, `memory.low`, `memory.high`.
    pub candidate_protection: bool,
    /// Each metrics subtree's `memory.events` (`d_qos_memory_events_*`).
    pub class_events: bool,
    /// Each candidate's `memory.pressure`.
    pub candidate_pressure: bool,
    /// Each candidate's `memory.current` about once a second between triggered cycles (the
    /// ranking's `d_memory_current`).
    pub candidate_growth: bool,
}

impl Reads {
    /// Everything (a recording: a replay may use another trigger).
    pub const ALL: Reads = Reads {
        vmstat: true,
        memory_stat: true,
        swap: true,
        class_swap: true,
        candidate_swap: true,
        candidate_protection: true,
        candidate_pressure: true,
        class_events: true,
        candidate_growth: true,
    };

    /// What the variables read from these sources need beyond Talos's files.
    pub fn for_sources(sources: impl IntoIterator<Item = Source>) -> Reads {
        sources
            .into_iter()
            .fold(Reads::default(), |reads, source| Reads {
                vmstat: reads.vmstat || source == Source::Vmstat,
                memory_stat: reads.memory_stat || source == Source::ClassMemoryStat,
                swap: reads.swap || source == Source::MeminfoSwap,
                class_swap: reads.class_swap || source == Source::ClassMemorySwap,
                candidate_swap: reads.candidate_swap || source == Source::CandidateMemorySwap,
                candidate_protection: reads.candidate_protection
                    || source == Source::CandidateProtection,
                candidate_pressure: reads.candidate_pressure || source == Source::CandidatePressure,
                class_events: reads.class_events || source == Source::ClassMemoryEvents,
                candidate_growth: reads.candidate_growth || source == Source::CandidateGrowth,
            })
    }
}

/// The counters of a `key value` file (`memory.stat`, `memory.events`) that `set` takes; a
/// vanished cgroup is no problem, another error is one.
fn counters<T: Default>(
    read: Result<Vec<(String, u64)>, ReadError>,
    problems: &mut Vec<Problem>,
    set: impl Fn(&mut T, &str, u64),
) -> Option<T> {
    match read {
        Ok(pairs) => {
            let mut c = T::default();
            for (key, value) in pairs {
                set(&mut c, &key, value);
            }
            Some(c)
        }
        Err(e) if e.is_not_found() => None,
        Err(e) => {
            problems.push(Problem::Read(e));
            None
        }
    }
}

impl Collector {
    /// A collector over `cgroups` and `proc`. `self_cgroup` is oomwarden's own cgroup
    /// (relative), never a candidate nor inside one.
    pub fn new(
        cgroups: CgroupFs,
        proc: ProcFs,
        layout: Layout,
        self_cgroup: Option<String>,
    ) -> Self {
        Collector {
            cgroups,
            proc,
            layout,
            self_cgroup,
            reads: Reads::default(),
        }
    }

    /// What it reads beyond Talos's files.
    pub fn reads(&self) -> Reads {
        self.reads
    }

    /// Reads these files too from the next cycle on.
    pub fn set_reads(&mut self, reads: Reads) {
        self.reads = reads;
    }

    /// The cgroup hierarchy read.
    pub fn cgroups(&self) -> &CgroupFs {
        &self.cgroups
    }

    /// The layout in use.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Uses another layout from the next read on.
    pub fn set_layout(&mut self, layout: Layout) {
        self.layout = layout;
    }

    /// Reads every metrics subtree. `at_ns` is the monotonic time to stamp the sample with.
    pub fn metrics(&self, at_ns: u64) -> (MetricsSample, Vec<Problem>) {
        let mut problems = Vec::new();
        let mut subtrees = Vec::new();
        // A directory two sources name (possible in a custom layout) counts once, for the
        // first: summing it twice would double its class's stall and memory.
        let mut seen = HashSet::new();
        for source in &self.layout.metrics {
            match source {
                MetricSource::Root => subtrees.push(self.subtree("", None, &mut problems)),
                MetricSource::Dir { dir, class } => {
                    for d in self.expand(dir, &mut problems) {
                        if seen.insert(d.clone()) {
                            subtrees.push(self.subtree(&d, Some(*class), &mut problems));
                        }
                    }
                }
                MetricSource::Children { dir, class, filter } => {
                    for parent in self.expand(dir, &mut problems) {
                        match self.cgroups.children(&parent) {
                            Ok(children) => {
                                for child in children.iter().filter(|c| filter.admits(c)) {
                                    let d = join(&parent, child);
                                    if seen.insert(d.clone()) {
                                        subtrees.push(self.subtree(
                                            &d,
                                            Some(*class),
                                            &mut problems,
                                        ));
                                    }
                                }
                            }
                            // Talos: an unreadable parent means no such subtrees, without an error.
                            Err(e) if e.is_not_found() => {}
                            Err(e) => problems.push(Problem::Read(e)),
                        }
                    }
                }
            }
        }
        let (node_memory, swap) = if self.reads.swap {
            self.whole_meminfo(&mut problems)
        } else {
            (self.node_memory(&mut problems), None)
        };
        let vmstat = if self.reads.vmstat {
            self.vmstat(&mut problems)
        } else {
            None
        };
        (
            MetricsSample {
                at_ns,
                subtrees,
                node_memory,
                vmstat,
                swap,
            },
            problems,
        )
    }

    /// The reclaim counters of `/proc/vmstat` (a counter the kernel does not have is 0).
    fn vmstat(&self, problems: &mut Vec<Problem>) -> Option<VmCounters> {
        let pairs = match self.proc.vmstat() {
            Ok(p) => p,
            // A fixture tree or an older recording has none: the rates are 0.
            Err(oomwarden_procfs::ReadError::Gone { .. }) => return None,
            Err(e) => {
                problems.push(Problem::Proc(e));
                return None;
            }
        };
        let mut c = VmCounters::default();
        for (key, value) in pairs {
            match key.as_str() {
                "workingset_refault_file" => c.workingset_refault_file = value,
                "pgscan_direct" => {
                    c.pgscan_direct = value;
                    c.pgscan = c.pgscan.saturating_add(value);
                }
                "pgscan_kswapd" | "pgscan_khugepaged" => c.pgscan = c.pgscan.saturating_add(value),
                "pgsteal_kswapd" | "pgsteal_direct" | "pgsteal_khugepaged" => {
                    c.pgsteal = c.pgsteal.saturating_add(value);
                }
                "pswpin" => c.pswpin = value,
                "pswpout" => c.pswpout = value,
                "zswpin" => c.zswpin = value,
                "zswpout" => c.zswpout = value,
                _ => {}
            }
        }
        Some(c)
    }

    /// A subtree's `memory.events` counters; a vanished cgroup is no problem.
    fn events(&self, dir: &str, problems: &mut Vec<Problem>) -> Option<EventCounters> {
        counters(
            self.cgroups.memory_events(dir),
            problems,
            |c: &mut EventCounters, key, value| match key {
                "high" => c.high = value,
                "max" => c.max = value,
                "oom" => c.oom = value,
                _ => {}
            },
        )
    }

    /// A subtree's `memory.stat` counters; a vanished cgroup is no problem.
    fn stat(&self, dir: &str, problems: &mut Vec<Problem>) -> Option<StatCounters> {
        counters(
            self.cgroups.memory_stat(dir),
            problems,
            |c: &mut StatCounters, key, value| match key {
                "workingset_refault_file" => c.workingset_refault_file = value,
                "pgscan" => c.pgscan = value,
                _ => {}
            },
        )
    }

    /// `/proc/meminfo` read whole, once: `MemTotal` and `MemAvailable` (`None`, with a problem,
    /// when either is missing) and the swap lines (0 for one the kernel does not print).
    fn whole_meminfo(&self, problems: &mut Vec<Problem>) -> (Option<NodeMemory>, Option<NodeSwap>) {
        let meminfo = match self.proc.meminfo() {
            Ok(m) => m,
            Err(e) => {
                problems.push(Problem::Proc(e));
                return (None, None);
            }
        };
        let memory = match (meminfo.get("MemTotal"), meminfo.get("MemAvailable")) {
            (Some(total), Some(available)) => Some(NodeMemory { total, available }),
            _ => {
                problems.push(Problem::Proc(oomwarden_procfs::ReadError::Parse {
                    path: self.proc.root().join("meminfo"),
                    reason: "no MemTotal or MemAvailable line".to_owned(),
                }));
                None
            }
        };
        let swap = NodeSwap {
            total: meminfo.get("SwapTotal").unwrap_or(0),
            free: meminfo.get("SwapFree").unwrap_or(0),
            zswap: meminfo.get("Zswap").unwrap_or(0),
        };
        (memory, Some(swap))
    }

    /// `MemTotal` and `MemAvailable`; `None` (with a problem) when either is missing.
    fn node_memory(&self, problems: &mut Vec<Problem>) -> Option<NodeMemory> {
        self.proc
            .node_memory()
            .map(|(total, available)| NodeMemory { total, available })
            .map_err(|e| problems.push(Problem::Proc(e)))
            .ok()
    }

    fn subtree(
        &self,
        dir: &str,
        class: Option<QosClass>,
        problems: &mut Vec<Problem>,
    ) -> SubtreeSample {
        let pressure = match self.cgroups.memory_pressure(dir) {
            // The root cgroup's file mirrors /proc/pressure/memory; use that where it is absent.
            Err(e) if e.is_not_found() && dir.is_empty() => self.proc.pressure_memory().ok(),
            Err(e) if e.is_not_found() => None,
            Err(e) => {
                problems.push(Problem::Read(e));
                None
            }
            Ok(p) => Some(p),
        };
        let psi = match pressure {
            None => PsiReading::Missing,
            Some(p) => {
                let mut values = [[0.0; 4]; 2];
                let mut incomplete = None;
                'all: for kind in PsiKind::ALL {
                    for span in PsiSpan::ALL {
                        match p.value(kind, span) {
                            Ok(v) => {
                                if let Some(slot) = values
                                    .get_mut(kind as usize)
                                    .and_then(|k| k.get_mut(span as usize))
                                {
                                    *slot = v;
                                }
                            }
                            Err(e) => {
                                incomplete = Some(e.to_string());
                                break 'all;
                            }
                        }
                    }
                }
                incomplete.map_or(PsiReading::Values(values), PsiReading::Incomplete)
            }
        };
        let stat = if self.reads.memory_stat {
            self.stat(dir, problems)
        } else {
            None
        };
        // The root's memory files have no variables (Talos reads and discards them), and the
        // kernel has none at the root (`memory.current`, `.peak`, `.max` exist on non-root
        // cgroups only): three failed path walks a cycle for nothing.
        let memory = if class.is_some() {
            self.memory(dir, problems, None)
        } else {
            MemoryReading::default()
        };
        SubtreeSample {
            dir: dir.to_owned(),
            class,
            psi,
            memory,
            // The root cgroup is never removed and made again at its path, so it has no id to
            // compare; asking would walk the mount point's path each cycle (its parent is not
            // cgroup2, where directory answers are kept).
            cgroup_id: (!dir.is_empty())
                .then(|| self.cgroups.cgroup_id(dir).ok())
                .flatten(),
            stat,
            // Without swap accounting there is no file: 0, no problem.
            swap_current: (self.reads.class_swap && class.is_some())
                .then(|| self.cgroups.memory_swap_current(dir).ok())
                .flatten(),
            events: (self.reads.class_events && class.is_some())
                .then(|| self.events(dir, problems))
                .flatten(),
        }
    }

    /// The three memory files, best effort. Failures other than "not found" go to `problems`;
    /// for candidates every failure is also listed in `errors` as (file, message).
    fn memory(
        &self,
        dir: &str,
        problems: &mut Vec<Problem>,
        mut errors: Option<&mut Vec<(String, String)>>,
    ) -> MemoryReading {
        let mut note = |file: &str, e: ReadError| {
            if let Some(errors) = errors.as_deref_mut() {
                errors.push((file.to_owned(), e.to_string()));
            }
            if !e.is_not_found() {
                problems.push(Problem::Read(e));
            }
        };
        let current = self
            .cgroups
            .memory_current(dir)
            .map_err(|e| note("memory.current", e))
            .ok();
        let peak = self
            .cgroups
            .memory_peak(dir)
            .map_err(|e| note("memory.peak", e))
            .ok();
        let max = self
            .cgroups
            .memory_max(dir)
            .map_err(|e| note("memory.max", e))
            .ok();
        MemoryReading { current, peak, max }
    }

    /// Enumerates and reads every kill candidate: the immediate children of the layout's
    /// candidate directories. A candidate that vanished is left out.
    pub fn candidates(&self) -> (Vec<CandidateSample>, Vec<Problem>) {
        let mut problems = Vec::new();
        let mut out = Vec::new();
        for source in &self.layout.candidates {
            for parent in self.expand(&source.dir, &mut problems) {
                self.candidates_of(&parent, source, &mut out, &mut problems);
            }
        }
        // A cgroup two sources admit (possible in a custom layout) is one candidate, of the
        // first source's class: two entries would let it be ranked twice.
        let mut seen = HashSet::new();
        out.retain(|c| seen.insert(c.dir.clone()));
        (out, problems)
    }

    /// The directories whose children are the kill candidates (the layout's patterns
    /// expanded), relative to the cgroup root.
    pub fn candidate_parents(&self) -> Vec<String> {
        let mut problems = Vec::new();
        self.layout
            .candidates
            .iter()
            .flat_map(|source| self.expand(&source.dir, &mut problems))
            .collect()
    }

    /// The directories of the kill candidates, named only (nothing read): what is cheap to
    /// ask every cycle, to learn of a new pod before it is a candidate of a fired trigger.
    /// A directory that cannot be listed is left out (the next `candidates` reports it).
    pub fn candidate_dirs(&self) -> Vec<String> {
        self.candidate_dirs_with_class()
            .into_iter()
            .map(|(dir, _)| dir)
            .collect()
    }

    /// [`Self::candidate_dirs`] with each one's class.
    pub fn candidate_dirs_with_class(&self) -> Vec<(String, QosClass)> {
        let mut problems = Vec::new();
        let mut out = Vec::new();
        for source in &self.layout.candidates {
            for parent in self.expand(&source.dir, &mut problems) {
                if let Ok(children) = self.cgroups.children(&parent) {
                    out.extend(
                        children
                            .iter()
                            .filter(|c| source.filter.admits(c))
                            .map(|c| (join(&parent, c), source.class)),
                    );
                }
            }
        }
        out
    }

    /// Every candidate's `memory.current` (nothing else read): what the ranking's growth,
    /// `d_memory_current`, needs between triggered cycles. One listing per candidate parent
    /// and one read per candidate; a candidate that vanished is left out (its growth is 0
    /// until it is read twice), one that cannot be read is left out and its error returned.
    pub fn candidate_currents(&self) -> (Vec<(String, u64)>, Vec<Problem>) {
        let mut problems = Vec::new();
        let currents = self
            .candidate_dirs()
            .into_iter()
            .filter_map(|dir| match self.cgroups.memory_current(&dir) {
                Ok(current) => Some((dir, current)),
                Err(e) if e.is_not_found() => None,
                Err(e) => {
                    problems.push(Problem::Read(e));
                    None
                }
            })
            .collect();
        (currents, problems)
    }

    /// The kill candidate that `dir` (relative to the cgroup root) is or lies in, with its
    /// class: where a process the kernel killed belonged, in the layout's terms. Nothing is
    /// read but the candidate parents' names, so a cgroup already removed is placed too.
    pub fn candidate_containing(&self, dir: &str) -> Option<(String, QosClass)> {
        let dir = dir.trim_matches('/');
        let mut problems = Vec::new();
        for source in &self.layout.candidates {
            for parent in self.expand(&source.dir, &mut problems) {
                let rest = if parent.is_empty() {
                    Some(dir)
                } else {
                    dir.strip_prefix(parent.as_str())
                        .and_then(|r| r.strip_prefix('/'))
                };
                let Some(child) = rest.and_then(|r| r.split('/').next()) else {
                    continue;
                };
                if !child.is_empty() && source.filter.admits(child) {
                    return Some((join(&parent, child), source.class));
                }
            }
        }
        None
    }

    /// Directories matching a layout path: components with `*` are matched against the
    /// existing directories (name-sorted); a path without `*` is returned as is, existing or
    /// not (a missing class directory reads as zeros, as in Talos).
    fn expand(&self, pattern: &str, problems: &mut Vec<Problem>) -> Vec<String> {
        if !pattern.contains('*') {
            // An optional directory a node does not have (the node system partition) is no
            // subtree at all, rather than one read as missing every cycle.
            if self.layout.is_optional(pattern) && !self.cgroups.is_dir(pattern) {
                return Vec::new();
            }
            return vec![pattern.to_owned()];
        }
        let mut found = vec![String::new()];
        for component in pattern.split('/').filter(|c| !c.is_empty()) {
            let mut next = Vec::new();
            for prefix in &found {
                if component.contains('*') {
                    match self.cgroups.children(prefix) {
                        Ok(children) => next.extend(
                            children
                                .iter()
                                .filter(|c| glob_match(component, c))
                                .map(|c| join(prefix, c)),
                        ),
                        Err(e) if e.is_not_found() => {}
                        Err(e) => problems.push(Problem::Read(e)),
                    }
                } else {
                    next.push(join(prefix, component));
                }
            }
            found = next;
        }
        found
    }

    /// The candidates among the children of `parent`.
    fn candidates_of(
        &self,
        parent: &str,
        source: &CandidateSource,
        out: &mut Vec<CandidateSample>,
        problems: &mut Vec<Problem>,
    ) {
        let children = match self.cgroups.children(parent) {
            Ok(children) => children,
            Err(e) if e.is_not_found() => return,
            Err(error) => {
                problems.push(Problem::List {
                    dir: parent.to_owned(),
                    error,
                });
                return;
            }
        };
        for child in children.iter().filter(|c| source.filter.admits(c)) {
            let dir = join(parent, child);
            if !self.cgroups.is_dir(&dir) {
                continue; // removed since the listing
            }
            let mut read_errors = Vec::new();
            let memory = self.memory(&dir, problems, Some(&mut read_errors));
            let populated = match self.cgroups.is_populated(&dir) {
                Ok(p) => p,
                Err(e) => {
                    // Unknown: do not exclude it on that ground.
                    read_errors.push(("cgroup.events".to_owned(), e.to_string()));
                    true
                }
            };
            let contains_self = self.self_cgroup.as_deref().is_some_and(|own| {
                own == dir
                    || own
                        .strip_prefix(dir.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            });
            let cgroup_id = self.cgroups.cgroup_id(&dir).ok();
            let oom_score_adj = self.lowest_oom_score_adj(&dir);
            // Without swap accounting there are no such files: none, no problem.
            let swap = self.reads.candidate_swap.then(|| SwapReading {
                current: self.cgroups.memory_swap_current(&dir).ok(),
                max: self.cgroups.memory_swap_max(&dir).ok(),
            });
            let protection = self.reads.candidate_protection.then(|| ProtectionReading {
                min: self.cgroups.memory_protection(&dir, "memory.min").ok(),
                low: self.cgroups.memory_protection(&dir, "memory.low").ok(),
                high: self.cgroups.memory_limit_file(&dir, "memory.high").ok(),
            });
            // Unreadable (a kernel without PSI for it): zeros, as the trigger takes them.
            let pressure = self.reads.candidate_pressure.then(|| {
                self.cgroups.memory_pressure(&dir).map_or([0.0, 0.0], |p| {
                    [PsiKind::Some, PsiKind::Full]
                        .map(|k| p.value(k, PsiSpan::Avg10).unwrap_or(0.0))
                })
            });
            out.push(CandidateSample {
                growth: None,
                swap,
                protection,
                pressure,
                path: oomwarden_cgroupfs::node_path(&dir),
                dir,
                class: source.class,
                memory,
                populated,
                contains_self,
                read_errors,
                cgroup_id,
                oom_score_adj,
            });
        }
    }

    /// The lowest `oom_score_adj` of the processes below `dir`, the pod sandbox's (−998) left
    /// out. Processes inherit it, and a container's are all given the same, so the first few
    /// PIDs of each cgroup of the subtree are read, not every process.
    fn lowest_oom_score_adj(&self, dir: &str) -> Option<i64> {
        const PIDS_PER_CGROUP: usize = 4;
        const MAX_CGROUPS: usize = 256;
        let mut lowest: Option<i64> = None;
        let mut stack = vec![dir.to_owned()];
        let mut walked = 0;
        while let Some(current) = stack.pop() {
            walked += 1;
            if walked > MAX_CGROUPS {
                break;
            }
            for pid in self
                .cgroups
                .cgroup_procs(&current)
                .unwrap_or_default()
                .into_iter()
                .take(PIDS_PER_CGROUP)
            {
                match self.proc.oom_score_adj(pid) {
                    Ok(POD_SANDBOX_OOM_SCORE_ADJ) | Err(_) => {}
                    Ok(adj) => lowest = Some(lowest.map_or(adj, |l| l.min(adj))),
                }
            }
            if let Ok(children) = self.cgroups.children(&current) {
                stack.extend(children.iter().map(|c| join(&current, c)));
            }
        }
        lowest
    }
}

/// The kubelet's `oom_score_adj` for a pod's sandbox (pause) process (`qos.PodInfraOOMAdj`).
const POD_SANDBOX_OOM_SCORE_ADJ: i64 = -998;

#[cfg(test)]
mod tests;
