//! Node layouts as data: which cgroup directories are summed into each class, and whose
//! children are kill candidates. Built-in layouts: `talos`, `systemd` (kubelet's systemd
//! cgroup driver), `cgroupfs` (kubelet's cgroupfs driver on a systemd host) and `host` (a
//! systemd machine without Kubernetes).
//!
//! Directory paths are relative to the cgroup root and may contain `*` in a component
//! (`user.slice/user-*.slice`), matched against the existing directories; name filters
//! (`include`, `exclude`) are patterns with `*` too.

use crate::QosClass;

/// A source of metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetricSource {
    /// The root cgroup: fills the root scalars (`memory_*`), belongs to no class.
    Root,
    /// Every directory matching `dir`, summed into a class.
    Dir {
        /// Relative path, `*` allowed in components.
        dir: String,
        /// Its class.
        class: QosClass,
    },
    /// Every child directory of `dir` (name-sorted) admitted by the filter, each summed into a
    /// class.
    Children {
        /// Relative path of the parent, `*` allowed in components.
        dir: String,
        /// The children's class.
        class: QosClass,
        /// Which children.
        filter: NameFilter,
    },
}

/// Child names admitted: those matching any `include` pattern (all when empty) and no
/// `exclude` pattern. Patterns match whole names; `*` stands for any run of characters.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NameFilter {
    /// Patterns a name must match one of (empty: any name).
    pub include: Vec<String>,
    /// Patterns a name must match none of.
    pub exclude: Vec<String>,
}

impl NameFilter {
    /// Every name.
    pub fn any() -> Self {
        NameFilter::default()
    }

    /// Names matching one of `patterns`.
    pub fn only(patterns: &[&str]) -> Self {
        NameFilter {
            include: owned(patterns),
            exclude: Vec::new(),
        }
    }

    /// Names matching none of `patterns`.
    pub fn except(patterns: &[&str]) -> Self {
        NameFilter {
            include: Vec::new(),
            exclude: owned(patterns),
        }
    }

    /// Whether `name` is admitted.
    pub fn admits(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|p| glob_match(p, name)))
            && !self.exclude.iter().any(|p| glob_match(p, name))
    }
}

fn owned(patterns: &[&str]) -> Vec<String> {
    patterns.iter().map(|s| (*s).to_owned()).collect()
}

/// Whole-string match where `*` matches any run of characters (including none).
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(first) = parts.next() else {
        return name.is_empty();
    };
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let mut parts: Vec<&str> = parts.collect();
    let Some(last) = parts.pop() else {
        return rest.is_empty();
    };
    for part in parts {
        match rest.find(part) {
            Some(i) => rest = rest.get(i + part.len()..).unwrap_or(""),
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// A directory whose immediate children are kill candidates of a class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateSource {
    /// Relative path of the parent, `*` allowed in components.
    pub dir: String,
    /// The candidates' class.
    pub class: QosClass,
    /// Which children are candidates.
    pub filter: NameFilter,
}

/// How a node's cgroup tree maps to classes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Short name (`talos`, `systemd`, `cgroupfs`, `host`).
    pub name: String,
    /// Metric sources, in summation order.
    pub metrics: Vec<MetricSource>,
    /// Candidate sources, in enumeration order.
    pub candidates: Vec<CandidateSource>,
    /// Directories (relative paths) a node may lack: the sources at or below one are read
    /// where it exists and are no warning where it does not (Kubernetes 1.37's
    /// `kubepods/system` partition is on few nodes).
    pub optional: Vec<String>,
}

impl Layout {
    /// Whether `dir` is, or lies below, one of the layout's optional directories.
    pub fn is_optional(&self, dir: &str) -> bool {
        self.optional.iter().any(|o| {
            dir.strip_prefix(o.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
    }
}

/// Directories a node may hold that the built-in layouts deliberately leave out of every
/// class, or out of the candidates: (path relative to the root, why). `oomwarden layout`
/// shows each that exists with its reason; a custom layout can name any of them.
pub const LEFT_OUT: &[(&str, &str)] = &[
    (
        "taloscontainers",
        "Talos 1.15's ContainerConfig containers (oom_score_adj -600, memory.max from the container's limit): Talos counts them in no OOM class, only in the root's figures, and never kills them; a custom layout can make their children candidates of a class",
    ),
    (
        "system/sandbox",
        "Talos's workload isolation (sandboxd): the CRI, the kubelet and every pod run inside it, so killing it tears down every pod; read in System's figures, never a candidate unless a custom layout names it",
    ),
];

fn dir(dir: &str, class: QosClass) -> MetricSource {
    MetricSource::Dir {
        dir: dir.to_owned(),
        class,
    }
}

fn children(dir: &str, class: QosClass, filter: NameFilter) -> MetricSource {
    MetricSource::Children {
        dir: dir.to_owned(),
        class,
        filter,
    }
}

fn parent(dir: &str, class: QosClass, filter: NameFilter) -> CandidateSource {
    CandidateSource {
        dir: dir.to_owned(),
        class,
        filter,
    }
}

/// Where a kubelet puts the pods of each QoS class: (directory, which children are pods).
struct PodDirs {
    besteffort: (&'static str, NameFilter),
    burstable: (&'static str, NameFilter),
    guaranteed: (&'static str, NameFilter),
}

/// The sources of one set of pod directories, appended to a layout's: the Besteffort and
/// Burstable directories summed whole, each Guaranteed pod on its own.
fn pod_sources(
    pods: PodDirs,
    metrics: &mut Vec<MetricSource>,
    candidates: &mut Vec<CandidateSource>,
) {
    use QosClass::*;
    let (be, be_pods) = pods.besteffort;
    let (bu, bu_pods) = pods.burstable;
    let (gu, gu_pods) = pods.guaranteed;
    metrics.extend([
        dir(be, Besteffort),
        dir(bu, Burstable),
        children(gu, Guaranteed, gu_pods.clone()),
    ]);
    candidates.extend([
        parent(be, Besteffort, be_pods),
        parent(bu, Burstable, bu_pods),
        parent(gu, Guaranteed, gu_pods),
    ]);
}

/// Kubernetes on a systemd host: node services in `system.slice` (the runtime and kubelet units
/// are Podruntime, the others System, plus `init.scope` for metrics), pods where `pods` says,
/// and the pods of Kubernetes 1.37's node system partition (KEP-5894) where `partition` says,
/// each in its QoS class.
fn kubernetes_on_systemd(name: &str, pods: PodDirs, partition: (&str, PodDirs)) -> Layout {
    use QosClass::*;
    let mut metrics = vec![
        MetricSource::Root,
        dir("init.scope", System),
        children("system.slice", System, NameFilter::except(RUNTIME_UNITS)),
        children("system.slice", Podruntime, NameFilter::only(RUNTIME_UNITS)),
    ];
    let mut candidates = Vec::new();
    pod_sources(pods, &mut metrics, &mut candidates);
    let (partition_dir, partition_pods) = partition;
    pod_sources(partition_pods, &mut metrics, &mut candidates);
    candidates.extend([
        parent("system.slice", Podruntime, NameFilter::only(RUNTIME_UNITS)),
        parent("system.slice", System, NameFilter::except(RUNTIME_UNITS)),
    ]);
    Layout {
        name: name.to_owned(),
        metrics,
        candidates,
        optional: vec![partition_dir.to_owned()],
    }
}

/// systemd units of the container runtime and the kubelet (the Podruntime class on systemd
/// hosts).
pub const RUNTIME_UNITS: &[&str] = &[
    "containerd.service",
    "crio.service",
    "docker.service",
    "cri-docker.service",
    "kubelet.service",
    "k3s.service",
    "k3s-agent.service",
    "rke2-server.service",
    "rke2-agent.service",
    "snap.microk8s.*.service",
];

/// The built-in layouts: the one list that configuration, detection and the CLI use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BuiltinLayout {
    /// Talos Linux.
    Talos,
    /// The kubelet's systemd cgroup driver.
    Systemd,
    /// The kubelet's cgroupfs driver on a systemd host.
    Cgroupfs,
    /// A plain systemd host without Kubernetes.
    Host,
}

impl BuiltinLayout {
    /// Every built-in layout, in the order documentation and messages list them.
    pub const ALL: [BuiltinLayout; 4] = [
        BuiltinLayout::Talos,
        BuiltinLayout::Systemd,
        BuiltinLayout::Cgroupfs,
        BuiltinLayout::Host,
    ];

    /// Its name in configurations, flags and recordings.
    pub fn name(self) -> &'static str {
        match self {
            BuiltinLayout::Talos => "talos",
            BuiltinLayout::Systemd => "systemd",
            BuiltinLayout::Cgroupfs => "cgroupfs",
            BuiltinLayout::Host => "host",
        }
    }

    /// The built-in layout of this name.
    pub fn from_name(name: &str) -> Option<BuiltinLayout> {
        BuiltinLayout::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The layout itself.
    pub fn layout(self) -> Layout {
        match self {
            BuiltinLayout::Talos => Layout::talos(),
            BuiltinLayout::Systemd => Layout::systemd(),
            BuiltinLayout::Cgroupfs => Layout::cgroupfs(),
            BuiltinLayout::Host => Layout::host(),
        }
    }
}

impl Layout {
    /// The built-in layout of this name.
    pub fn builtin(name: &str) -> Option<Layout> {
        BuiltinLayout::from_name(name).map(BuiltinLayout::layout)
    }

    /// Names of the built-in layouts ([`BuiltinLayout::ALL`]'s names).
    pub const BUILTIN: [&'static str; 4] = ["talos", "systemd", "cgroupfs", "host"];

    /// Talos 1.14 (§2.3 of the spec): System = `init` + `system`; Guaranteed pods sit directly
    /// under `kubepods`; `init` is never a candidate, nor `system/sandbox` (workload
    /// isolation: every pod runs inside it). Kubernetes 1.37's node system partition
    /// (`kubepods/system/{besteffort,burstable,pod<uid>}`, KEP-5894) has its pods in their
    /// classes, where Talos itself reads the partition as one Guaranteed pod. Talos 1.15's
    /// `taloscontainers/` is in no class, as on Talos ([`LEFT_OUT`]).
    pub fn talos() -> Layout {
        use QosClass::*;
        let mut metrics = vec![
            MetricSource::Root,
            dir("init", System),
            dir("system", System),
            dir("podruntime", Podruntime),
        ];
        let mut candidates = Vec::new();
        pod_sources(
            PodDirs {
                besteffort: ("kubepods/besteffort", NameFilter::any()),
                burstable: ("kubepods/burstable", NameFilter::any()),
                guaranteed: (
                    "kubepods",
                    NameFilter::except(&["besteffort", "burstable", "system"]),
                ),
            },
            &mut metrics,
            &mut candidates,
        );
        pod_sources(
            PodDirs {
                besteffort: ("kubepods/system/besteffort", NameFilter::any()),
                burstable: ("kubepods/system/burstable", NameFilter::any()),
                guaranteed: (
                    "kubepods/system",
                    NameFilter::except(&["besteffort", "burstable"]),
                ),
            },
            &mut metrics,
            &mut candidates,
        );
        candidates.extend([
            parent("podruntime", Podruntime, NameFilter::any()),
            parent("system", System, NameFilter::except(&["sandbox"])),
        ]);
        Layout {
            name: "talos".to_owned(),
            metrics,
            candidates,
            optional: vec!["kubepods/system".to_owned()],
        }
    }

    /// The kubelet's systemd cgroup driver (kubeadm's default): pods under
    /// `kubepods.slice/kubepods-{besteffort,burstable}.slice/…-pod<uid>.slice`, Guaranteed pods
    /// directly under `kubepods.slice`; Podruntime = the runtime and kubelet units of
    /// `system.slice`; System = its other units plus `init.scope`.
    pub fn systemd() -> Layout {
        kubernetes_on_systemd(
            "systemd",
            PodDirs {
                besteffort: (
                    "kubepods.slice/kubepods-besteffort.slice",
                    NameFilter::only(&["kubepods-besteffort-pod*.slice"]),
                ),
                burstable: (
                    "kubepods.slice/kubepods-burstable.slice",
                    NameFilter::only(&["kubepods-burstable-pod*.slice"]),
                ),
                guaranteed: ("kubepods.slice", NameFilter::only(&["kubepods-pod*.slice"])),
            },
            (
                "kubepods.slice/kubepods-system.slice",
                PodDirs {
                    besteffort: (
                        "kubepods.slice/kubepods-system.slice/kubepods-system-besteffort.slice",
                        NameFilter::only(&["kubepods-system-besteffort-pod*.slice"]),
                    ),
                    burstable: (
                        "kubepods.slice/kubepods-system.slice/kubepods-system-burstable.slice",
                        NameFilter::only(&["kubepods-system-burstable-pod*.slice"]),
                    ),
                    guaranteed: (
                        "kubepods.slice/kubepods-system.slice",
                        NameFilter::only(&["kubepods-system-pod*.slice"]),
                    ),
                },
            ),
        )
    }

    /// The kubelet's cgroupfs driver on a systemd host: pods under `kubepods/…` as on Talos,
    /// node services in `system.slice` as with the systemd driver.
    pub fn cgroupfs() -> Layout {
        let guaranteed = NameFilter {
            include: owned(&["pod*"]),
            exclude: owned(&["besteffort", "burstable"]),
        };
        kubernetes_on_systemd(
            "cgroupfs",
            PodDirs {
                besteffort: ("kubepods/besteffort", NameFilter::only(&["pod*"])),
                burstable: ("kubepods/burstable", NameFilter::only(&["pod*"])),
                guaranteed: ("kubepods", guaranteed.clone()),
            },
            (
                "kubepods/system",
                PodDirs {
                    besteffort: ("kubepods/system/besteffort", NameFilter::only(&["pod*"])),
                    burstable: ("kubepods/system/burstable", NameFilter::only(&["pod*"])),
                    guaranteed: ("kubepods/system", guaranteed),
                },
            ),
        )
    }

    /// A systemd machine without Kubernetes. The classes keep their Kubernetes names, with
    /// these meanings: Besteffort = applications a user started (each scope or service in a
    /// user manager's `app.slice`), Burstable = login sessions (`session-*.scope`), System =
    /// system services and `init.scope`. No Guaranteed or Podruntime cgroups. With the
    /// default ranking an application is killed first, a whole session only when no
    /// application is eligible, a system service never.
    pub fn host() -> Layout {
        use QosClass::*;
        let apps = "user.slice/user-*.slice/user@*.service/app.slice";
        let sessions = "user.slice/user-*.slice";
        Layout {
            name: "host".to_owned(),
            metrics: vec![
                MetricSource::Root,
                dir("init.scope", System),
                dir("system.slice", System),
                dir(apps, Besteffort),
                children(sessions, Burstable, NameFilter::only(&["session-*.scope"])),
            ],
            candidates: vec![
                parent(apps, Besteffort, NameFilter::any()),
                parent(sessions, Burstable, NameFilter::only(&["session-*.scope"])),
                parent("system.slice", System, NameFilter::any()),
            ],
            optional: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matches_whole_names() {
        for (p, n, want) in [
            ("*", "anything", true),
            ("*", "", true),
            ("pod*", "pod123", true),
            ("pod*", "xpod123", false),
            ("kubepods-pod*.slice", "kubepods-pod1_2.slice", true),
            ("kubepods-pod*.slice", "kubepods-burstable.slice", false),
            ("kubepods-pod*.slice", "kubepods-pod.slice", true),
            (
                "snap.microk8s.*.service",
                "snap.microk8s.daemon-kubelite.service",
                true,
            ),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "aXcYb", false),
            ("abc", "abc", true),
            ("abc", "abcd", false),
            ("a*a", "a", false),
            ("", "", true),
            ("", "x", false),
        ] {
            assert_eq!(glob_match(p, n), want, "{p} ~ {n}");
        }
    }

    #[test]
    fn filters() {
        let runtime = NameFilter::only(RUNTIME_UNITS);
        assert!(runtime.admits("containerd.service") && runtime.admits("k3s.service"));
        assert!(!runtime.admits("sshd.service"));
        let system = NameFilter::except(RUNTIME_UNITS);
        assert!(system.admits("sshd.service") && !system.admits("kubelet.service"));
        assert!(NameFilter::any().admits("x"));
    }

    #[test]
    fn builtins_by_name() {
        for name in Layout::BUILTIN {
            assert_eq!(Layout::builtin(name).map(|l| l.name), Some(name.to_owned()));
        }
        assert_eq!(Layout::builtin("other"), None);
        // One list: the names are the enum's.
        assert_eq!(BuiltinLayout::ALL.map(BuiltinLayout::name), Layout::BUILTIN);
        for b in BuiltinLayout::ALL {
            assert_eq!(BuiltinLayout::from_name(b.name()), Some(b));
            assert_eq!(b.layout().name, b.name());
        }
    }

    /// Issue 36: the node system partition's pods are candidates in their classes, the
    /// partition itself never one Guaranteed pod, on every Kubernetes layout; `system/sandbox`
    /// is never a Talos candidate; the partition is optional.
    #[test]
    fn the_node_system_partition_and_the_sandbox() {
        let talos = Layout::talos();
        let candidate = |l: &Layout, parent: &str, name: &str| {
            l.candidates
                .iter()
                .filter(|c| c.dir == parent && c.filter.admits(name))
                .map(|c| c.class)
                .collect::<Vec<_>>()
        };
        use QosClass::*;
        assert_eq!(candidate(&talos, "kubepods", "system"), vec![]);
        assert_eq!(candidate(&talos, "kubepods", "podabc"), vec![Guaranteed]);
        assert_eq!(
            candidate(&talos, "kubepods/system", "podabc"),
            vec![Guaranteed]
        );
        assert_eq!(candidate(&talos, "kubepods/system", "burstable"), vec![]);
        assert_eq!(
            candidate(&talos, "kubepods/system/burstable", "podabc"),
            vec![Burstable]
        );
        assert_eq!(candidate(&talos, "system", "sandbox"), vec![]);
        assert_eq!(candidate(&talos, "system", "apid"), vec![System]);
        assert!(talos.is_optional("kubepods/system/besteffort"));
        assert!(!talos.is_optional("kubepods"));
        let systemd = Layout::systemd();
        let ks = "kubepods.slice/kubepods-system.slice";
        assert_eq!(
            candidate(&systemd, "kubepods.slice", "kubepods-system.slice"),
            vec![]
        );
        assert_eq!(
            candidate(&systemd, ks, "kubepods-system-pod1_2.slice"),
            vec![Guaranteed]
        );
        assert_eq!(
            candidate(
                &systemd,
                &format!("{ks}/kubepods-system-besteffort.slice"),
                "kubepods-system-besteffort-pod1_2.slice"
            ),
            vec![Besteffort]
        );
        let cgroupfs = Layout::cgroupfs();
        assert_eq!(candidate(&cgroupfs, "kubepods", "system"), vec![]);
        assert_eq!(
            candidate(&cgroupfs, "kubepods/system", "podx"),
            vec![Guaranteed]
        );
        assert_eq!(
            candidate(&cgroupfs, "kubepods/system", "besteffort"),
            vec![]
        );
        assert!(Layout::host().optional.is_empty());
    }

    proptest::proptest! {
        #[test]
        fn glob_never_panics_and_star_matches_all(p in "[a-z*.]{0,12}", n in "[a-z.]{0,12}") {
            let _ = glob_match(&p, &n);
            proptest::prop_assert!(glob_match("*", &n));
            proptest::prop_assert!(glob_match(&n, &n));
        }
    }
}
