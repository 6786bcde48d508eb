//! The built-in layouts on fixture trees modelled on real nodes: which subtrees feed each
//! class, which cgroups are candidates, and whom the default ranking picks.

// Test code: unwrap on expected outcomes is the assertion.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::type_complexity)]

use oomwarden_cgroupfs::CgroupFs;
use oomwarden_collect::Collector;
use oomwarden_expr::RankingExpr;
use oomwarden_model::{Layout, QosClass};
use oomwarden_policy::{rank, select};
use oomwarden_procfs::ProcFs;
use oomwarden_testkit::write;

const RANKING: &str = "memory_max.hasValue() ? 0.0 : {Besteffort: 1.0, Burstable: 0.5, Guaranteed: 0.0, Podruntime: 0.0, System: 0.0}[class] * double(memory_current.orValue(0u))";
const PAUSE: &str = "1111111111111111111111111111111111111111111111111111111111111111";
const APP: &str = "2222222222222222222222222222222222222222222222222222222222222222";

/// A cgroup with memory files and one process.
fn cg(root: &std::path::Path, dir: &str, current: u64, max: &str) {
    write(
        root,
        &format!("{dir}/memory.current"),
        &format!("{current}\n"),
    );
    write(root, &format!("{dir}/memory.max"), &format!("{max}\n"));
    write(
        root,
        &format!("{dir}/memory.pressure"),
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
    );
    write(
        root,
        &format!("{dir}/cgroup.events"),
        "populated 1\nfrozen 0\n",
    );
}

/// The metric subtrees of one class.
fn in_class(metrics: &[(String, Option<QosClass>)], class: QosClass) -> Vec<&str> {
    metrics
        .iter()
        .filter(|(_, c)| *c == Some(class))
        .map(|(d, _)| d.as_str())
        .collect()
}

fn classes_of(
    layout: Layout,
    root: &std::path::Path,
) -> (
    Vec<(String, Option<QosClass>)>,
    Vec<(String, QosClass)>,
    Option<String>,
) {
    let c = Collector::new(
        CgroupFs::new(root),
        ProcFs::new(oomwarden_testkit::proc_fixture()),
        layout,
        None,
    );
    let (sample, problems) = c.metrics(0);
    assert!(problems.is_empty(), "{problems:?}");
    let metrics = sample
        .subtrees
        .iter()
        .map(|s| (s.dir.clone(), s.class))
        .collect();
    let (cands, problems) = c.candidates();
    assert!(problems.is_empty(), "{problems:?}");
    let victim = select(
        &rank(&RankingExpr::compile(RANKING).unwrap(), &cands),
        &cands,
        true,
    )
    .map(|v| cands[v.index].dir.clone());
    (
        metrics,
        cands.iter().map(|c| (c.dir.clone(), c.class)).collect(),
        victim,
    )
}

#[test]
fn systemd_driver_node() {
    use QosClass::*;
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    cg(r, "init.scope", 10, "max");
    for unit in [
        "containerd.service",
        "kubelet.service",
        "sshd.service",
        "systemd-journald.service",
    ] {
        cg(r, &format!("system.slice/{unit}"), 100, "max");
    }
    let be = "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod6b86b273_ff34_4fce_96e3_6b3e0e2d5a2f.slice";
    cg(r, be, 500, "max");
    cg(r, &format!("{be}/cri-containerd-{PAUSE}.scope"), 1, "max");
    cg(r, &format!("{be}/cri-containerd-{APP}.scope"), 499, "max");
    let bu = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poda1b2c3d4_0000_4000_8000_000000000001.slice";
    cg(r, bu, 900, "max");
    cg(r, "kubepods.slice/kubepods-besteffort.slice", 500, "max");
    cg(r, "kubepods.slice/kubepods-burstable.slice", 900, "max");
    // A Guaranteed pod and a static (hash-UID) Guaranteed pod.
    cg(
        r,
        "kubepods.slice/kubepods-poddeadbeef_0000_4000_8000_000000000002.slice",
        300,
        "314572800",
    );
    cg(
        r,
        "kubepods.slice/kubepods-pod0123456789abcdef0123456789abcdef.slice",
        300,
        "314572800",
    );
    let (metrics, cands, victim) = classes_of(Layout::systemd(), r);
    let m = |class| in_class(&metrics, class);
    assert_eq!(
        m(System),
        [
            "init.scope",
            "system.slice/sshd.service",
            "system.slice/systemd-journald.service"
        ]
    );
    assert_eq!(
        m(Podruntime),
        [
            "system.slice/containerd.service",
            "system.slice/kubelet.service"
        ]
    );
    assert_eq!(m(Besteffort), ["kubepods.slice/kubepods-besteffort.slice"]);
    assert_eq!(m(Burstable), ["kubepods.slice/kubepods-burstable.slice"]);
    assert_eq!(
        m(Guaranteed).len(),
        2,
        "the two Guaranteed pods, not the QoS slices"
    );
    let of = |class| cands.iter().filter(|(_, c)| *c == class).count();
    assert_eq!(
        (
            of(Besteffort),
            of(Burstable),
            of(Guaranteed),
            of(Podruntime),
            of(System)
        ),
        (1, 1, 2, 2, 2)
    );
    assert_eq!(
        victim.as_deref(),
        Some(be),
        "the BestEffort pod, not its containers"
    );

    // The pod_uid extension lets a ranking exempt one pod by UID (decoded, dashes restored).
    let c = Collector::new(
        CgroupFs::new(r),
        ProcFs::new(oomwarden_testkit::proc_fixture()),
        Layout::systemd(),
        None,
    );
    let (cands, _) = c.candidates();
    let exempt = RankingExpr::compile(&format!(
        "pod_uid == '6b86b273-ff34-4fce-96e3-6b3e0e2d5a2f' ? 0.0 : {RANKING}"
    ))
    .unwrap();
    let v = select(&rank(&exempt, &cands), &cands, true).map(|v| cands[v.index].dir.clone());
    assert_eq!(
        v.as_deref(),
        Some(bu),
        "the exempted BestEffort pod is skipped"
    );
}

#[test]
fn cgroupfs_driver_on_a_systemd_host() {
    use QosClass::*;
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    cg(r, "init.scope", 10, "max");
    cg(r, "system.slice/crio.service", 100, "max");
    cg(r, "system.slice/kubelet.service", 100, "max");
    cg(r, "system.slice/chronyd.service", 100, "max");
    cg(
        r,
        "kubepods/besteffort/pod6b86b273-ff34-4fce-96e3-6b3e0e2d5a2f",
        50,
        "max",
    );
    cg(
        r,
        &format!("kubepods/besteffort/pod6b86b273-ff34-4fce-96e3-6b3e0e2d5a2f/crio-{APP}"),
        50,
        "max",
    );
    cg(
        r,
        "kubepods/burstable/poda1b2c3d4-0000-4000-8000-000000000001",
        900,
        "max",
    );
    cg(
        r,
        "kubepods/podc0ffee00-0000-4000-8000-000000000003",
        300,
        "314572800",
    );
    let (metrics, cands, victim) = classes_of(Layout::cgroupfs(), r);
    let m = |class| in_class(&metrics, class);
    assert_eq!(m(System), ["init.scope", "system.slice/chronyd.service"]);
    assert_eq!(
        m(Podruntime),
        ["system.slice/crio.service", "system.slice/kubelet.service"]
    );
    assert_eq!(
        m(Guaranteed),
        ["kubepods/podc0ffee00-0000-4000-8000-000000000003"]
    );
    assert_eq!(cands.iter().filter(|(_, c)| *c == Guaranteed).count(), 1);
    assert_eq!(
        victim.as_deref(),
        Some("kubepods/besteffort/pod6b86b273-ff34-4fce-96e3-6b3e0e2d5a2f")
    );
}

#[test]
fn plain_systemd_host() {
    use QosClass::*;
    let t = tempfile::tempdir().unwrap();
    let r = t.path();
    cg(r, "init.scope", 10, "max");
    cg(r, "system.slice/sshd.service", 100, "max");
    cg(r, "system.slice/postgresql.service", 4000, "max");
    let user = "user.slice/user-1000.slice";
    cg(r, &format!("{user}/session-2.scope"), 200, "max");
    cg(
        r,
        &format!("{user}/user@1000.service/app.slice/app-firefox-1234.scope"),
        3000,
        "max",
    );
    cg(
        r,
        &format!("{user}/user@1000.service/app.slice/app-gnome\\x2dterminal-99.scope"),
        100,
        "max",
    );
    let (metrics, cands, victim) = classes_of(Layout::host(), r);
    let m = |class| in_class(&metrics, class);
    assert_eq!(m(System), ["init.scope", "system.slice"]);
    assert_eq!(
        m(Besteffort),
        ["user.slice/user-1000.slice/user@1000.service/app.slice"]
    );
    assert_eq!(m(Burstable), ["user.slice/user-1000.slice/session-2.scope"]);
    assert_eq!(cands.iter().filter(|(_, c)| *c == Besteffort).count(), 2);
    assert_eq!(
        victim.as_deref(),
        Some("user.slice/user-1000.slice/user@1000.service/app.slice/app-firefox-1234.scope"),
        "the largest app, never postgresql"
    );
}

#[test]
fn auto_detection_names_its_evidence_and_refuses_to_guess() {
    use oomwarden_collect::detect_layout;
    let detect = |dirs: &[&str]| {
        let t = tempfile::tempdir().unwrap();
        for d in dirs {
            std::fs::create_dir_all(t.path().join(d)).unwrap();
        }
        detect_layout(&CgroupFs::new(t.path()))
            .map(|(l, why)| (l.name, why))
            .map_err(|e| e.to_string())
    };
    assert_eq!(
        detect(&["init", "system", "podruntime", "kubepods"])
            .unwrap()
            .0,
        "talos"
    );
    assert_eq!(
        detect(&["init.scope", "system.slice", "user.slice", "kubepods.slice"])
            .unwrap()
            .0,
        "systemd"
    );
    assert_eq!(
        detect(&["init.scope", "system.slice", "kubepods"])
            .unwrap()
            .0,
        "cgroupfs"
    );
    assert_eq!(
        detect(&["init.scope", "system.slice", "user.slice"])
            .unwrap()
            .0,
        "host"
    );
    let (_, why) = detect(&["system.slice", "kubepods.slice"]).unwrap();
    assert!(why.contains("kubepods.slice"), "{why}");
    let e = detect(&["system.slice", "kubepods", "kubepods.slice"]).unwrap_err();
    assert!(
        e.contains("several layouts (systemd, cgroupfs)") && e.contains("refusing to guess"),
        "{e}"
    );
    let e = detect(&["something"]).unwrap_err();
    assert!(e.contains("cannot recognise"), "{e}");
    assert!(detect(&[]).is_err());
}

/// The root cgroup's id is not asked (it is never made again, and asking it walked the mount
/// point's path every cycle); each class subtree's is (a unit made again is another cgroup).
#[test]
fn the_root_has_no_cgroup_id_and_the_classes_have_theirs() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path();
    write(
        r,
        "memory.pressure",
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
    );
    cg(r, "init.scope", 10, "max");
    cg(r, "system.slice/sshd.service", 100, "max");
    cg(r, "kubepods.slice/kubepods-burstable.slice", 900, "max");
    let c = Collector::new(
        CgroupFs::new(r),
        ProcFs::new(oomwarden_testkit::proc_fixture()),
        Layout::systemd(),
        None,
    );
    let (sample, _) = c.metrics(0);
    let root = sample.subtrees.iter().find(|s| s.dir.is_empty()).unwrap();
    assert_eq!(root.cgroup_id, None);
    // Those that are there (the layout names some this tree lacks).
    let classes: Vec<_> = sample
        .subtrees
        .iter()
        .filter(|s| s.class.is_some() && r.join(&s.dir).is_dir())
        .collect();
    assert_eq!(classes.len(), 3, "{classes:?}");
    for s in classes {
        assert!(s.cgroup_id.is_some(), "{}: no cgroup id", s.dir);
    }
}
