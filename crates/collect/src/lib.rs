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

use std::fmt;

use oomwarden_cgroupfs::{CgroupFs, ReadError, join};
use oomwarden_model::{
    CandidateSample, Layout, MemoryReading, MetricSource, MetricsSample, PsiKind, PsiReading,
    PsiSpan, SubtreeSample,
};
use oomwarden_procfs::ProcFs;

/// A read failure other than "not found", for the log.
#[derive(Debug)]
pub enum Problem {
    /// A file of a metrics subtree could not be read or parsed; the value counts as missing.
    Read(ReadError),
    /// A candidate parent could not be listed (Talos: `cannot list cgroup members`).
    List {
        /// Relative directory.
        dir: String,
        /// The error.
        error: ReadError,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Read(e) => write!(f, "{e}"),
            Problem::List { dir, error } => {
                write!(f, "cannot list cgroup members of {dir}: {error}")
            }
        }
    }
}

/// Reads a layout's files.
#[derive(Debug, Clone)]
pub struct Collector {
    cgroups: CgroupFs,
    proc: ProcFs,
    layout: Layout,
    self_cgroup: Option<String>,
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
        }
    }

    /// The cgroup hierarchy read.
    pub fn cgroups(&self) -> &CgroupFs {
        &self.cgroups
    }

    /// The layout in use.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Reads every metrics subtree. `at_ns` is the monotonic time to stamp the sample with.
    pub fn metrics(&self, at_ns: u64) -> (MetricsSample, Vec<Problem>) {
        let mut problems = Vec::new();
        let mut subtrees = Vec::new();
        for source in &self.layout.metrics {
            match source {
                MetricSource::Root => subtrees.push(self.subtree("", None, &mut problems)),
                MetricSource::Dir { dir, class } => {
                    subtrees.push(self.subtree(dir, Some(*class), &mut problems))
                }
                MetricSource::Children {
                    dir,
                    class,
                    exclude,
                } => match self.cgroups.children(dir) {
                    Ok(children) => {
                        for child in children.iter().filter(|c| !exclude.contains(c)) {
                            subtrees.push(self.subtree(
                                &join(dir, child),
                                Some(*class),
                                &mut problems,
                            ));
                        }
                    }
                    // Talos: an unreadable parent means no such subtrees, without an error.
                    Err(e) if e.is_not_found() => {}
                    Err(e) => problems.push(Problem::Read(e)),
                },
            }
        }
        (MetricsSample { at_ns, subtrees }, problems)
    }

    fn subtree(
        &self,
        dir: &str,
        class: Option<oomwarden_model::QosClass>,
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
        SubtreeSample {
            dir: dir.to_owned(),
            class,
            psi,
            memory: self.memory(dir, problems, &mut Vec::new()),
        }
    }

    /// The three memory files, best effort. Failures other than "not found" go to `problems`;
    /// every failure is also listed in `errors` as (file, message) for candidates.
    fn memory(
        &self,
        dir: &str,
        problems: &mut Vec<Problem>,
        errors: &mut Vec<(String, String)>,
    ) -> MemoryReading {
        let mut note = |file: &str, e: ReadError| {
            errors.push((file.to_owned(), e.to_string()));
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
            let children = match self.cgroups.children(&source.dir) {
                Ok(children) => children,
                Err(e) if e.is_not_found() => continue,
                Err(error) => {
                    problems.push(Problem::List {
                        dir: source.dir.clone(),
                        error,
                    });
                    continue;
                }
            };
            for child in children.iter().filter(|c| !source.exclude.contains(c)) {
                let dir = join(&source.dir, child);
                if !self.cgroups.dir(&dir).is_dir() {
                    continue; // removed since the listing
                }
                let mut read_errors = Vec::new();
                let memory = self.memory(&dir, &mut problems, &mut read_errors);
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
                out.push(CandidateSample {
                    path: self.cgroups.dir(&dir).display().to_string(),
                    dir,
                    class: source.class,
                    memory,
                    populated,
                    contains_self,
                    read_errors,
                });
            }
        }
        (out, problems)
    }
}

#[cfg(test)]
mod tests;
