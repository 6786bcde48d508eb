// Test code: unwrap on expected outcomes is the assertion.
#![allow(clippy::unwrap_used)]

use oomwarden_model::{CandidateSource, MetricSource, NameFilter, QosClass};
use oomwarden_testkit::write;

use super::*;

/// A custom layout may name a directory twice; it is summed and offered once, for the first
/// source that names it.
#[test]
fn a_directory_named_twice_counts_once() {
    let tmp = tempfile::tempdir().unwrap();
    for dir in ["apps/a", "apps/b"] {
        write(tmp.path(), &format!("{dir}/memory.current"), "100\n");
    }
    use QosClass::*;
    let layout = Layout {
        name: "overlap".into(),
        metrics: vec![
            MetricSource::Root,
            MetricSource::Children {
                dir: "apps".into(),
                class: Besteffort,
                filter: NameFilter::only(&["a"]),
            },
            MetricSource::Children {
                dir: "apps".into(),
                class: Burstable,
                filter: NameFilter::any(),
            },
            MetricSource::Dir {
                dir: "apps/b".into(),
                class: System,
            },
        ],
        candidates: vec![
            CandidateSource {
                dir: "apps".into(),
                class: Besteffort,
                filter: NameFilter::only(&["a"]),
            },
            CandidateSource {
                dir: "apps".into(),
                class: Burstable,
                filter: NameFilter::any(),
            },
        ],
        optional: Vec::new(),
    };
    let c = Collector::new(
        CgroupFs::new(tmp.path()),
        ProcFs::new(oomwarden_testkit::proc_fixture()),
        layout,
        None,
    );
    let (sample, _) = c.metrics(0);
    let got: Vec<_> = sample
        .subtrees
        .iter()
        .map(|s| (s.dir.as_str(), s.class))
        .collect();
    assert_eq!(
        got,
        [
            ("", None),
            ("apps/a", Some(Besteffort)),
            ("apps/b", Some(Burstable))
        ]
    );
    let (cands, _) = c.candidates();
    let got: Vec<_> = cands.iter().map(|c| (c.dir.as_str(), c.class)).collect();
    assert_eq!(got, [("apps/a", Besteffort), ("apps/b", Burstable)]);
}

#[test]
fn node_memory_comes_from_meminfo_and_its_absence_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let with = Collector::new(
        CgroupFs::new(tmp.path()),
        ProcFs::new(oomwarden_testkit::proc_fixture()),
        Layout::talos(),
        None,
    );
    let (sample, problems) = with.metrics(0);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        sample.node_memory,
        Some(oomwarden_model::NodeMemory {
            total: 998_096 * 1024,
            available: 782_780 * 1024
        })
    );
    let proc = tempfile::tempdir().unwrap();
    write(proc.path(), "meminfo", "MemTotal: 1000 kB\n");
    for root in [proc.path(), std::path::Path::new("/nonexistent")] {
        let without = Collector::new(
            CgroupFs::new(tmp.path()),
            ProcFs::new(root),
            Layout::talos(),
            None,
        );
        let (sample, problems) = without.metrics(0);
        assert_eq!(sample.node_memory, None);
        assert!(
            matches!(problems.as_slice(), [Problem::Proc(_)]),
            "{problems:?}"
        );
    }
}

#[test]
fn a_process_is_found_by_pid_in_the_tree() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "cgroup.procs", "1\n4242\n");
    write(tmp.path(), "system/cgroup.procs", "10\n");
    write(
        tmp.path(),
        "kubepods/burstable/podx/ctr/cgroup.procs",
        "4241\n4242\n",
    );
    let cg = CgroupFs::new(tmp.path());
    // The root's own list does not count: a process there is in no candidate.
    assert_eq!(
        find_process_cgroup(&cg, 4242, 8).as_deref(),
        Some("kubepods/burstable/podx/ctr")
    );
    assert_eq!(
        find_process_cgroup(&cg, 4242, 2),
        None,
        "deeper than allowed"
    );
    assert_eq!(find_process_cgroup(&cg, 9, 8), None);
}

/// A kernel OOM kill names the victim's memory cgroup; its candidate (the pod) and class are
/// found from the layout, also for a container cgroup already removed.
#[test]
fn the_candidate_containing_a_cgroup_is_found_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    for dir in [
        "kubepods/besteffort/pod-a/c1",
        "kubepods/burstable/pod-b",
        "kubepods/pod-g",
        "podruntime/runtime",
        "system/udevd",
        "init",
    ] {
        write(tmp.path(), &format!("{dir}/memory.current"), "1\n");
    }
    let c = Collector::new(
        CgroupFs::new(tmp.path()),
        ProcFs::new(oomwarden_testkit::proc_fixture()),
        Layout::talos(),
        None,
    );
    use QosClass::*;
    let found = |dir: &str| c.candidate_containing(dir);
    assert_eq!(
        found("/kubepods/besteffort/pod-a/c1"),
        Some(("kubepods/besteffort/pod-a".into(), Besteffort))
    );
    // Gone already: placed by its name.
    assert_eq!(
        found("kubepods/besteffort/pod-a/c2/deeper"),
        Some(("kubepods/besteffort/pod-a".into(), Besteffort))
    );
    assert_eq!(
        found("/kubepods/burstable/pod-b"),
        Some(("kubepods/burstable/pod-b".into(), Burstable))
    );
    assert_eq!(
        found("/kubepods/pod-g/ctr"),
        Some(("kubepods/pod-g".into(), Guaranteed))
    );
    assert_eq!(
        found("/podruntime/runtime"),
        Some(("podruntime/runtime".into(), Podruntime))
    );
    assert_eq!(
        found("/system/udevd"),
        Some(("system/udevd".into(), System))
    );
    // A class directory itself, `init` (never a candidate in Talos) and the root are none.
    assert_eq!(found("/kubepods/besteffort"), None);
    assert_eq!(found("/init"), None);
    assert_eq!(found("/"), None);
    let named = c.candidate_dirs_with_class();
    assert!(
        named.contains(&("kubepods/pod-g".into(), Guaranteed)),
        "{named:?}"
    );
    assert!(
        !named.iter().any(|(d, _)| d == "kubepods/besteffort"),
        "{named:?}"
    );
}

/// Issue 19: `/proc/vmstat` and each subtree's `memory.stat` are read only when asked, their
/// reclaim counters summed over their sources.
#[test]
fn reclaim_counters_are_read_when_asked() {
    let cg = tempfile::tempdir().unwrap();
    let proc = tempfile::tempdir().unwrap();
    write(
        cg.path(),
        "system/memory.stat",
        "anon 4096\nworkingset_refault_file 12\npgscan 340\npgsteal 300\n",
    );
    write(
        proc.path(),
        "vmstat",
        "nr_free_pages 1000\nworkingset_refault_file 77\npgscan_kswapd 100\npgscan_direct 20\npgscan_khugepaged 3\npgsteal_kswapd 90\npgsteal_direct 10\npgsteal_khugepaged 1\npswpin 5\npswpout 6\nzswpin 7\nzswpout 8\n",
    );
    let mut c = Collector::new(
        CgroupFs::new(cg.path()),
        ProcFs::new(proc.path()),
        Layout::talos(),
        None,
    );
    let (quiet, _) = c.metrics(0);
    assert_eq!(quiet.vmstat, None, "not read unless asked");
    assert!(quiet.subtrees.iter().all(|s| s.stat.is_none()));
    c.set_reads(Reads::ALL);
    let (s, problems) = c.metrics(0);
    assert_eq!(
        s.vmstat,
        Some(VmCounters {
            workingset_refault_file: 77,
            pgscan: 123,
            pgscan_direct: 20,
            pgsteal: 101,
            pswpin: 5,
            pswpout: 6,
            zswpin: 7,
            zswpout: 8,
        })
    );
    let system = s.subtrees.iter().find(|t| t.dir == "system").unwrap();
    assert_eq!(
        system.stat,
        Some(StatCounters {
            workingset_refault_file: 12,
            pgscan: 340
        })
    );
    // A subtree that is not there, and a kernel without vmstat, are no problems.
    assert!(
        problems.iter().all(|p| !p.to_string().contains("stat")),
        "{problems:?}"
    );
    std::fs::remove_file(proc.path().join("vmstat")).unwrap();
    let (s, problems) = c.metrics(0);
    assert_eq!(s.vmstat, None);
    assert!(
        problems.iter().all(|p| !p.to_string().contains("vmstat")),
        "{problems:?}"
    );
}

/// The root's memory files have no variables and the kernel has none: they are not read (a
/// root `memory.current` that could not be read would be a problem every cycle).
#[test]
fn the_roots_memory_files_are_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "apps/a/memory.current", "100\n");
    std::fs::create_dir_all(tmp.path().join("memory.current")).unwrap();
    write(tmp.path(), "memory.max", "12345\n");
    let layout = Layout {
        name: "root".into(),
        metrics: vec![
            MetricSource::Root,
            MetricSource::Dir {
                dir: "apps/a".into(),
                class: QosClass::Besteffort,
            },
        ],
        candidates: Vec::new(),
        optional: Vec::new(),
    };
    let c = Collector::new(
        CgroupFs::new(tmp.path()),
        ProcFs::new(oomwarden_testkit::proc_fixture()),
        layout,
        None,
    );
    let (sample, problems) = c.metrics(0);
    let root = sample.subtrees.iter().find(|s| s.dir.is_empty()).unwrap();
    assert_eq!(root.memory, MemoryReading::default());
    let a = sample.subtrees.iter().find(|s| s.dir == "apps/a").unwrap();
    assert_eq!(a.memory.current, Some(100));
    assert!(
        !problems
            .iter()
            .any(|p| p.to_string().contains("memory.current")),
        "{problems:?}"
    );
}

/// Each variable read from `/proc/vmstat` or `memory.stat` turns on that read, and only those
/// do: Talos's files are read whatever the trigger names.
#[test]
fn the_extra_reads_follow_the_catalogue() {
    use oomwarden_model::TriggerVar;
    use oomwarden_model::variables::Source;
    for v in TriggerVar::all() {
        let reads = Reads::for_sources([v.definition().source]);
        let name = v.name();
        assert_eq!(
            reads.vmstat,
            name.starts_with("d_node_pg")
                || name.starts_with("d_node_pswp")
                || name.starts_with("d_node_zswp")
                || name == "d_node_workingset_refault_file",
            "{name}"
        );
        assert_eq!(
            reads.swap,
            matches!(
                name,
                "node_swap_total" | "node_swap_free" | "node_zswap_bytes" | "d_node_swap_free"
            ),
            "{name}"
        );
        assert_eq!(
            reads.memory_stat,
            matches!(name, "d_qos_pgscan" | "d_qos_workingset_refault_file"),
            "{name}"
        );
    }
    assert_eq!(
        Reads::for_sources([
            Source::Vmstat,
            Source::ClassMemoryStat,
            Source::MeminfoSwap,
            Source::ClassMemorySwap,
            Source::CandidateMemorySwap,
            Source::CandidateProtection,
            Source::CandidatePressure,
            Source::ClassMemoryEvents,
            Source::CandidateGrowth
        ]),
        Reads::ALL
    );
}

/// Issue 35: the swap lines of `/proc/meminfo` are read (the whole file, once) only when
/// asked; a kernel without swap or zswap lines gives zeros, no problem.
#[test]
fn swap_lines_are_read_when_asked() {
    let cg = tempfile::tempdir().unwrap();
    let proc = tempfile::tempdir().unwrap();
    write(
        proc.path(),
        "meminfo",
        "MemTotal:        2000000 kB\nMemFree:          100000 kB\nMemAvailable:     500000 kB\nSwapTotal:       4194304 kB\nSwapFree:        1048576 kB\nZswap:             20480 kB\nZswapped:          81920 kB\n",
    );
    let mut c = Collector::new(
        CgroupFs::new(cg.path()),
        ProcFs::new(proc.path()),
        Layout::talos(),
        None,
    );
    let (quiet, _) = c.metrics(0);
    assert_eq!(quiet.swap, None, "not read unless asked");
    c.set_reads(Reads {
        swap: true,
        ..Reads::default()
    });
    let (s, problems) = c.metrics(0);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        s.swap,
        Some(oomwarden_model::NodeSwap {
            total: 4 << 30,
            free: 1 << 30,
            zswap: 20 << 20
        })
    );
    assert_eq!(s.node_memory.map(|m| m.available), Some(500_000 * 1024));
    write(
        proc.path(),
        "meminfo",
        "MemTotal:        2000000 kB\nMemAvailable:     500000 kB\n",
    );
    let (s, problems) = c.metrics(0);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(s.swap, Some(oomwarden_model::NodeSwap::default()));
    // Each class's metrics cgroups' swap, when asked; none without the file.
    write(cg.path(), "system/memory.swap.current", "1048576\n");
    let system = |s: &oomwarden_model::MetricsSample| {
        s.subtrees
            .iter()
            .find(|t| t.dir == "system")
            .and_then(|t| t.swap_current)
    };
    assert_eq!(system(&c.metrics(0).0), None, "not read unless asked");
    c.set_reads(Reads::ALL);
    let (s, problems) = c.metrics(0);
    assert_eq!(system(&s), Some(1 << 20));
    assert!(
        s.subtrees
            .iter()
            .filter(|t| t.dir != "system")
            .all(|t| t.swap_current.is_none())
    );
    assert!(problems.is_empty(), "{problems:?}");
}

/// Issue 35: each candidate's `memory.swap.current` and `memory.swap.max`, read only when the
/// ranking names them; `max` is no limit; a missing file (no swap accounting) is none.
#[test]
fn candidates_swap_files_are_read_when_asked() {
    let cg = tempfile::tempdir().unwrap();
    let proc = tempfile::tempdir().unwrap();
    write(
        cg.path(),
        "kubepods/besteffort/poda/memory.current",
        "1000\n",
    );
    write(
        cg.path(),
        "kubepods/besteffort/poda/memory.swap.current",
        "5000\n",
    );
    write(
        cg.path(),
        "kubepods/besteffort/poda/memory.swap.max",
        "max\n",
    );
    write(
        cg.path(),
        "kubepods/besteffort/podb/memory.current",
        "1000\n",
    );
    let mut c = Collector::new(
        CgroupFs::new(cg.path()),
        ProcFs::new(proc.path()),
        Layout::talos(),
        None,
    );
    let swap = |c: &Collector| -> Vec<Option<oomwarden_model::SwapReading>> {
        let (candidates, problems) = c.candidates();
        assert!(problems.is_empty(), "{problems:?}");
        let mut v: Vec<_> = candidates
            .iter()
            .filter(|c| c.dir.starts_with("kubepods/besteffort/pod"))
            .map(|c| (c.dir.clone(), c.swap))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v.into_iter().map(|(_, s)| s).collect()
    };
    assert_eq!(swap(&c), [None, None], "not read unless asked");
    c.set_reads(Reads {
        candidate_swap: true,
        ..Reads::default()
    });
    assert_eq!(
        swap(&c),
        [
            Some(oomwarden_model::SwapReading {
                current: Some(5000),
                max: Some(oomwarden_model::Limit::Max)
            }),
            Some(oomwarden_model::SwapReading::default())
        ]
    );
}

/// Issue 35: each candidate's protection (`memory.min`, `.low`, `.high`) and its own
/// `memory.pressure`, read only when the ranking names them.
#[test]
fn candidates_protection_and_pressure_are_read_when_asked() {
    let cg = tempfile::tempdir().unwrap();
    let proc = tempfile::tempdir().unwrap();
    let pod = "kubepods/burstable/poda";
    write(cg.path(), &format!("{pod}/memory.current"), "1000\n");
    write(cg.path(), &format!("{pod}/memory.min"), "0\n");
    write(cg.path(), &format!("{pod}/memory.low"), "268435456\n");
    write(cg.path(), &format!("{pod}/memory.high"), "max\n");
    write(
        cg.path(),
        &format!("{pod}/memory.pressure"),
        "some avg10=12.50 avg60=1.00 avg300=0.20 total=100\nfull avg10=7.25 avg60=0.50 avg300=0.10 total=50\n",
    );
    let mut c = Collector::new(
        CgroupFs::new(cg.path()),
        ProcFs::new(proc.path()),
        Layout::talos(),
        None,
    );
    let read = |c: &Collector| {
        let (candidates, problems) = c.candidates();
        assert!(problems.is_empty(), "{problems:?}");
        let a = candidates.into_iter().find(|c| c.dir == pod).unwrap();
        (a.protection, a.pressure)
    };
    assert_eq!(read(&c), (None, None), "not read unless asked");
    c.set_reads(Reads::ALL);
    assert_eq!(
        read(&c),
        (
            Some(oomwarden_model::ProtectionReading {
                min: Some(0),
                low: Some(256 << 20),
                high: Some(oomwarden_model::Limit::Max),
            }),
            Some([12.5, 7.25])
        )
    );
}

/// Issue 35: each metrics subtree's `memory.events`, read only when the trigger names a
/// `d_qos_memory_events_*` rate.
#[test]
fn class_memory_events_are_read_when_asked() {
    let cg = tempfile::tempdir().unwrap();
    let proc = tempfile::tempdir().unwrap();
    write(
        cg.path(),
        "system/memory.events",
        "low 0\nhigh 12\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n",
    );
    write(
        proc.path(),
        "meminfo",
        "MemTotal:        2000000 kB\nMemAvailable:     500000 kB\n",
    );
    let mut c = Collector::new(
        CgroupFs::new(cg.path()),
        ProcFs::new(proc.path()),
        Layout::talos(),
        None,
    );
    let system = |c: &Collector| {
        let (s, problems) = c.metrics(0);
        assert!(problems.is_empty(), "{problems:?}");
        s.subtrees
            .into_iter()
            .find(|t| t.dir == "system")
            .and_then(|t| t.events)
    };
    assert_eq!(system(&c), None, "not read unless asked");
    c.set_reads(Reads {
        class_events: true,
        ..Reads::default()
    });
    assert_eq!(
        system(&c),
        Some(oomwarden_model::EventCounters {
            high: 12,
            max: 3,
            oom: 1
        })
    );
}

/// Issue 35: the growth scan reads each candidate's `memory.current` and nothing else; a
/// candidate without the file (vanished) is left out quietly, one whose file cannot be read is
/// left out and reported.
#[test]
fn candidate_currents_read_memory_current_only() {
    let cg = tempfile::tempdir().unwrap();
    let proc = tempfile::tempdir().unwrap();
    write(
        cg.path(),
        "kubepods/besteffort/poda/memory.current",
        "1000\n",
    );
    write(
        cg.path(),
        "kubepods/burstable/podb/memory.current",
        "2000\n",
    );
    std::fs::create_dir_all(cg.path().join("kubepods/burstable/podgone")).unwrap();
    // A directory where the file should be: EISDIR, a read that failed.
    std::fs::create_dir_all(cg.path().join("kubepods/burstable/podbad/memory.current")).unwrap();
    let c = Collector::new(
        CgroupFs::new(cg.path()),
        ProcFs::new(proc.path()),
        Layout::talos(),
        None,
    );
    let (mut currents, problems) = c.candidate_currents();
    currents.sort();
    assert_eq!(
        currents,
        [
            ("kubepods/besteffort/poda".to_owned(), 1000),
            ("kubepods/burstable/podb".to_owned(), 2000)
        ]
    );
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].to_string().contains("podbad/memory.current"),
        "{}",
        problems[0]
    );
}
