//! Node layouts as data: which cgroup directories are summed into each class, and whose
//! children are kill candidates. Talos's layout is built in; other layouts are data too.

use crate::QosClass;

/// A source of metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetricSource {
    /// The root cgroup: fills the root scalars (`memory_*`), belongs to no class.
    Root,
    /// One directory summed into a class.
    Dir {
        /// Relative path.
        dir: String,
        /// Its class.
        class: QosClass,
    },
    /// Every child directory of `dir` (name-sorted) except `exclude`, each summed into a class.
    Children {
        /// Relative path of the parent.
        dir: String,
        /// The children's class.
        class: QosClass,
        /// Child names that are not part of it.
        exclude: Vec<String>,
    },
}

/// A directory whose immediate children are kill candidates of a class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateSource {
    /// Relative path of the parent.
    pub dir: String,
    /// The candidates' class.
    pub class: QosClass,
    /// Child names that are never candidates.
    pub exclude: Vec<String>,
}

/// How a node's cgroup tree maps to classes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Short name (`talos`).
    pub name: String,
    /// Metric sources, in summation order.
    pub metrics: Vec<MetricSource>,
    /// Candidate sources, in enumeration order.
    pub candidates: Vec<CandidateSource>,
}

fn dir(dir: &str, class: QosClass) -> MetricSource {
    MetricSource::Dir {
        dir: dir.to_owned(),
        class,
    }
}

fn parent(dir: &str, class: QosClass, exclude: &[&str]) -> CandidateSource {
    CandidateSource {
        dir: dir.to_owned(),
        class,
        exclude: exclude.iter().map(|s| (*s).to_owned()).collect(),
    }
}

impl Layout {
    /// Talos 1.14 (§2.3 of the spec): System = `init` + `system`; Guaranteed pods sit directly
    /// under `kubepods`; `init` is never a candidate.
    pub fn talos() -> Layout {
        use QosClass::*;
        let pods_exclude = ["besteffort", "burstable"];
        Layout {
            name: "talos".to_owned(),
            metrics: vec![
                MetricSource::Root,
                dir("init", System),
                dir("system", System),
                dir("podruntime", Podruntime),
                dir("kubepods/besteffort", Besteffort),
                dir("kubepods/burstable", Burstable),
                MetricSource::Children {
                    dir: "kubepods".to_owned(),
                    class: Guaranteed,
                    exclude: pods_exclude.iter().map(|s| (*s).to_owned()).collect(),
                },
            ],
            candidates: vec![
                parent("kubepods/besteffort", Besteffort, &[]),
                parent("kubepods/burstable", Burstable, &[]),
                parent("kubepods", Guaranteed, &pods_exclude),
                parent("podruntime", Podruntime, &[]),
                parent("system", System, &[]),
            ],
        }
    }
}
