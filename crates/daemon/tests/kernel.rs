//! The kernel-OOM watcher on a fixture tree and a kernel log file: kills the log reports,
//! kills only a counter shows, and a log that cannot be read.

// Test code: unwrap on expected outcomes is the assertion.
#![allow(clippy::unwrap_used, clippy::disallowed_methods)]

use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use oomwarden_actuate_fake::{KillEffect, RecordingActuator, SharedRecorder};
use oomwarden_cgroupfs::CgroupFs;
use oomwarden_collect::Collector;
use oomwarden_config::Settings;
use oomwarden_daemon::kernel::{GRACE_NS, KernelWatch};
use oomwarden_daemon::{Engine, EngineParts, History};
use oomwarden_model::{
    ActionRecord, DetectedBy, Layout, OomConstraint, Outcome, QosClass, RecordKind,
};
use oomwarden_node::monotonic_ns;
use oomwarden_procfs::ProcFs;
use oomwarden_testkit::write;

const UID: &str = "6983351e-0001-4c1b-9a3e-0f5d2b7c0001";
const CID: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// A memcg OOM kill of `hog` (PID 4242) in the BestEffort pod, as `/dev/kmsg` gives it.
fn report() -> String {
    format!(
        "4,1001,8523000000,-;hog invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=1000\n \
         SUBSYSTEM=memory\n\
         6,1002,8523000100,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/kubepods/besteffort/pod{UID},task_memcg=/kubepods/besteffort/pod{UID}/{CID},task=hog,pid=4242,uid=0\n\
         3,1003,8523000200,-;Memory cgroup out of memory: Killed process 4242 (hog) total-vm:200000kB, anon-rss:180000kB, file-rss:1000kB, shmem-rss:0kB, UID:0 pgtables:400kB oom_score_adj:1000\n"
    )
}

fn events(oom: u64, oom_kill: u64) -> String {
    format!("low 0\nhigh 0\nmax 0\noom {oom}\noom_kill {oom_kill}\noom_group_kill 0\n")
}

/// A Talos node with a BestEffort pod (one container) and a Burstable pod, every counter 0.
fn node(cg: &Path) {
    for dir in [
        "kubepods",
        "kubepods/besteffort",
        "kubepods/burstable",
        "podruntime",
        "system",
        &format!("kubepods/besteffort/pod{UID}"),
        &format!("kubepods/besteffort/pod{UID}/{CID}"),
        "kubepods/burstable/pod-limited",
    ] {
        write(cg, &format!("{dir}/memory.events"), &events(0, 0));
    }
}

fn engine(cg: &Path, state: &Path) -> Engine {
    let settings = Settings::from_yaml(
        &format!(
            "apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\nstateDir: {}\n",
            state.display()
        ),
        "test.yaml",
    )
    .unwrap();
    fs::set_permissions(state, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let (history, _) = History::open(state).unwrap();
    let proc = oomwarden_testkit::proc_fixture();
    let collector = Collector::new(CgroupFs::new(cg), ProcFs::new(&proc), Layout::talos(), None);
    let fake = SharedRecorder::new(RecordingActuator::new(KillEffect::Empty));
    Engine::new(EngineParts::new(
        settings,
        collector,
        ProcFs::new(&proc),
        history,
        Box::new(fake.clone()),
        Box::new(fake),
    ))
}

fn watch_settings(kmsg: &Path) -> oomwarden_config::KernelOomWatchSettings {
    oomwarden_config::KernelOomWatchSettings {
        enabled: true,
        kmsg: kmsg.to_path_buf(),
        from_boot: false,
    }
}

/// Polls (as the cycles would) until `want` records came or 10 s passed.
fn poll_for(watch: &mut KernelWatch, engine: &mut Engine, want: usize) -> Vec<ActionRecord> {
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.len() < want && Instant::now() < deadline {
        got.extend(watch.poll(engine, monotonic_ns()));
        std::thread::sleep(Duration::from_millis(50));
    }
    got
}

fn metric(engine: &Engine, line_start: &str) -> String {
    engine
        .metrics()
        .encode()
        .lines()
        .find(|l| l.starts_with(line_start))
        .unwrap_or_default()
        .to_owned()
}

/// The record of [`report`]'s kill, in every field the report gives.
fn assert_is_the_reported_hog(r: &ActionRecord) {
    assert_eq!(r.kind, RecordKind::KernelOom);
    assert_eq!(r.outcome, Outcome::Killed);
    assert_eq!(r.constraint, Some(OomConstraint::Memcg));
    assert_eq!(r.detected_by, Some(DetectedBy::Kmsg));
    assert_eq!(
        r.victim.as_deref(),
        Some(format!("/sys/fs/cgroup/kubepods/besteffort/pod{UID}").as_str())
    );
    assert_eq!(r.class, Some(QosClass::Besteffort));
    assert_eq!(r.pod_uid.as_deref(), Some(UID));
    assert_eq!(r.container_id.as_deref(), Some(CID));
    assert_eq!(r.containers, vec![CID.to_owned()]);
    assert_eq!(
        (r.victim_pid, r.victim_comm.as_deref()),
        (Some(4242), Some("hog"))
    );
    assert_eq!(r.pids, vec![4242]);
    assert_eq!(
        r.task_memcg.as_deref(),
        Some(format!("/kubepods/besteffort/pod{UID}/{CID}").as_str())
    );
    // The kernel's clock: 8523.0001 s after boot.
    assert_eq!(r.monotonic_ns, 8_523_000_100_000);
}

#[test]
fn a_reported_kill_and_a_kill_only_a_counter_shows_become_records() {
    let cg = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    node(cg.path());
    let kmsg = state.path().join("kmsg");
    // What the log held before the start is not taken (fromBoot off).
    fs::write(&kmsg, report().replace("4242", "1111")).unwrap();
    let mut engine = engine(cg.path(), state.path());
    let mut watch = KernelWatch::start(&engine, &watch_settings(&kmsg), monotonic_ns()).unwrap();
    std::thread::sleep(Duration::from_millis(300));

    // The kernel kills the hog in its container: the log reports it, the counters rise.
    fs::OpenOptions::new()
        .append(true)
        .open(&kmsg)
        .unwrap()
        .write_all(report().as_bytes())
        .unwrap();
    for dir in [
        "kubepods".to_owned(),
        "kubepods/besteffort".to_owned(),
        format!("kubepods/besteffort/pod{UID}"),
        format!("kubepods/besteffort/pod{UID}/{CID}"),
    ] {
        write(cg.path(), &format!("{dir}/memory.events"), &events(1, 1));
    }
    let got = poll_for(&mut watch, &mut engine, 1);
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_is_the_reported_hog(&got[0]);
    // Explained by the log: the counters' rise gives no second record, even after the grace.
    let later = monotonic_ns() + 2 * GRACE_NS;
    assert!(watch.poll(&mut engine, later).is_empty());

    // A kill the log never reports (rate-limited, wrapped): the Burstable pod's counter rises
    // without its `oom` counter (no limit hit: a global OOM).
    for dir in [
        "kubepods",
        "kubepods/burstable",
        "kubepods/burstable/pod-limited",
    ] {
        let before = if dir == "kubepods" { (1, 1) } else { (0, 0) };
        write(
            cg.path(),
            &format!("{dir}/memory.events"),
            &events(before.0, before.1 + 1),
        );
    }
    let t = later + 1_000_000_000;
    assert!(
        watch.poll(&mut engine, t).is_empty(),
        "within the grace period"
    );
    let got = watch.poll(&mut engine, t + GRACE_NS);
    assert_eq!(got.len(), 1, "{got:#?}");
    let r = &got[0];
    assert_eq!(r.kind, RecordKind::KernelOom);
    assert_eq!(r.constraint, Some(OomConstraint::Global));
    assert_eq!(r.detected_by, Some(DetectedBy::MemoryEvents));
    assert_eq!(
        r.victim.as_deref(),
        Some("/sys/fs/cgroup/kubepods/burstable/pod-limited")
    );
    assert_eq!(r.class, Some(QosClass::Burstable));
    assert_eq!((r.pids.len(), r.pids_omitted), (0, 1));
    assert_eq!(r.monotonic_ns, t, "when the rise was first seen");

    // Both in the history, with ids of their own; counted by constraint.
    let kinds: Vec<_> = engine
        .history()
        .recent()
        .map(|r| (r.id, r.kind, r.constraint))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (0, RecordKind::KernelOom, Some(OomConstraint::Memcg)),
            (1, RecordKind::KernelOom, Some(OomConstraint::Global)),
        ]
    );
    let on_disk = History::open(state.path()).unwrap().0;
    assert_eq!(on_disk.recent().count(), 2);
    assert_eq!(watch.kills(), 2);
    assert!(
        metric(
            &engine,
            "oomwarden_kernel_oom_kills_total{constraint=\"memcg\"}"
        )
        .ends_with(" 1")
    );
    assert!(
        metric(
            &engine,
            "oomwarden_kernel_oom_kills_total{constraint=\"global\"}"
        )
        .ends_with(" 1")
    );
    watch.stop();
}

#[test]
fn a_log_that_cannot_be_read_is_counted_and_the_counters_still_see_kills() {
    let cg = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    node(cg.path());
    let mut engine = engine(cg.path(), state.path());
    let missing = state.path().join("no-kmsg");
    let mut watch = KernelWatch::start(&engine, &watch_settings(&missing), monotonic_ns()).unwrap();
    let t = monotonic_ns();
    // The follower's problem arrives once, whatever the number of polls.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !metric(
        &engine,
        "oomwarden_kernel_oom_watch_problems_total{reason=\"open\"}",
    )
    .ends_with(" 1")
        && Instant::now() < deadline
    {
        assert!(watch.poll(&mut engine, t).is_empty());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        metric(
            &engine,
            "oomwarden_kernel_oom_watch_problems_total{reason=\"open\"}"
        )
        .ends_with(" 1")
    );
    for dir in [
        "kubepods".to_owned(),
        "kubepods/besteffort".to_owned(),
        format!("kubepods/besteffort/pod{UID}"),
    ] {
        write(cg.path(), &format!("{dir}/memory.events"), &events(1, 1));
    }
    assert!(watch.poll(&mut engine, t + 1).is_empty());
    let got = watch.poll(&mut engine, t + 1 + GRACE_NS);
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(got[0].constraint, Some(OomConstraint::Memcg));
    assert_eq!(got[0].detected_by, Some(DetectedBy::MemoryEvents));
    assert_eq!(got[0].pod_uid.as_deref(), Some(UID));
    watch.stop();
}

#[test]
fn disabled_means_no_watch() {
    let cg = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    node(cg.path());
    let engine = engine(cg.path(), state.path());
    let settings = oomwarden_config::KernelOomWatchSettings {
        enabled: false,
        ..watch_settings(&state.path().join("kmsg"))
    };
    assert!(KernelWatch::start(&engine, &settings, monotonic_ns()).is_none());
}

/// Issue 32: with `fromBoot`, a restart looked for duplicates among the last 50 records only:
/// a log holding 60 reports was recorded again at every restart (120 → 240 → 360). The whole
/// history is looked up now.
#[test]
fn from_boot_after_a_restart_records_nothing_twice_beyond_fifty_records() {
    let cg = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    node(cg.path());
    let kmsg = state.path().join("kmsg");
    let nth = |i: u64| {
        report()
            .replace("4242", &(5000 + i).to_string())
            .replace(",85230", &format!(",{}", 90_000 + i))
    };
    fs::write(&kmsg, (0..60).map(nth).collect::<String>()).unwrap();
    let settings = oomwarden_config::KernelOomWatchSettings {
        from_boot: true,
        ..watch_settings(&kmsg)
    };
    let mut engine1 = engine(cg.path(), state.path());
    let mut watch = KernelWatch::start(&engine1, &settings, monotonic_ns()).unwrap();
    let got = poll_for(&mut watch, &mut engine1, 60);
    watch.stop();
    assert_eq!(got.len(), 60, "the first start records every report");
    drop(engine1);
    // One more kill, after the 60 in the log: the restart must record it, and it alone (it
    // comes last, so every older report has been looked at by then).
    fs::OpenOptions::new()
        .append(true)
        .open(&kmsg)
        .unwrap()
        .write_all(nth(60).as_bytes())
        .unwrap();
    let mut engine2 = engine(cg.path(), state.path());
    let mut watch = KernelWatch::start(&engine2, &settings, monotonic_ns()).unwrap();
    let got = poll_for(&mut watch, &mut engine2, 1);
    watch.stop();
    let pids: Vec<Option<u32>> = got.iter().map(|r| r.victim_pid).collect();
    assert_eq!(pids, [Some(5060)], "the restart recorded again what it had");
    let lines = fs::read_to_string(state.path().join("actions.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 61);
}
