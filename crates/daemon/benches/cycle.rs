//! Cost of one cycle against the cost of merely reading the same files (the floor).
//!
//! Trees are generated on tmpfs (`/dev/shm`, or `$TMPDIR`) with 10, 100 and 1,000 pods:
//! 30 % BestEffort, 60 % Burstable, 10 % Guaranteed, each with the files a real pod cgroup
//! has. Measured, with the release profile:
//!
//! - quiet cycle: read every metrics subtree, build the trigger context, evaluate the default
//!   trigger (false on an idle node);
//! - triggered cycle: the same with a trigger that is true, then read every candidate, rank
//!   them all with the default ranking and select a victim (no kill, no record written);
//! - floor: `read_to_string` of exactly the files each of these reads, and the same directory
//!   listings, in a tight loop.
//!
//! - recorded cycle: a quiet cycle read through the recording tap, plus the candidates (read in
//!   every cycle while recording), encoded by the recorder with a 5-minute window (the flight
//!   recorder), against the quiet cycle.
//!
//! - identity: the daemon's whole quiet cycle (`Engine::cycle`) with the pod identity off,
//!   with a cache that knows every pod (no refresher), and with a live cache (its refresher
//!   reading the kubelet's pod-log directories every second, its inotify watch on the pod
//!   cgroups): the cache must stay off the hot path.
//!
//! - growth: the daemon's quiet cycle with the default ranking against one with a ranking by
//!   growth (`d_memory_current`), which reads every candidate's `memory.current` once a second
//!   between triggers; and that scan alone.
//!
//! Batches of each are interleaved and the median batch is reported, so that machine noise
//! affects all alike. Run: `cargo bench -p oomwarden-daemon --bench cycle`
//! (`CYCLE_BENCH=identity` or `CYCLE_BENCH=growth` for that table alone).

// A benchmark binary: setup failures may panic.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::cast_precision_loss,
    clippy::indexing_slicing
)]

use std::fs;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use std::sync::Arc;

use oomwarden_cgroupfs::{CgroupFs, Disk};
use oomwarden_collect::Collector;
use oomwarden_config::{DEFAULT_RANKING_EXPRESSION, DEFAULT_TRIGGER_EXPRESSION};
use oomwarden_expr::{RankingExpr, TriggerExpr};
use oomwarden_model::{Identities, IdentitySource, Layout, PodIdentity};
use oomwarden_policy::{State, build_context, rank, select};
use oomwarden_procfs::ProcFs;

const PSI: &str = "some avg10=0.00 avg60=0.00 avg300=0.00 total=120034\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=80012\n";

fn write(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, content).unwrap();
}

fn cgroup(root: &Path, dir: &str, current: u64, limit: Option<u64>) {
    let d = root.join(dir);
    write(&d, "memory.pressure", PSI);
    write(&d, "memory.current", &format!("{current}\n"));
    write(&d, "memory.peak", &format!("{}\n", current + 4096));
    write(
        &d,
        "memory.max",
        &limit.map_or("max\n".to_owned(), |l| format!("{l}\n")),
    );
    write(&d, "memory.stat", "anon 1000\nfile 2000\n");
    write(&d, "cgroup.events", "populated 1\nfrozen 0\n");
    write(&d, "cgroup.procs", "4242\n");
}

/// A Talos node with `pods` pods.
fn tree(base: &Path, pods: usize) -> PathBuf {
    let root = base.join(format!("node-{pods}"));
    cgroup(&root, "", 0, None);
    for dir in [
        "init",
        "system",
        "system/apid",
        "system/trustd",
        "podruntime",
        "podruntime/runtime",
        "podruntime/kubelet",
        "kubepods",
        "kubepods/besteffort",
        "kubepods/burstable",
    ] {
        cgroup(&root, dir, 50_000_000, None);
    }
    for i in 0..pods {
        let (parent, limit) = match i % 10 {
            0..=2 => ("kubepods/besteffort", None),
            3..=8 => (
                "kubepods/burstable",
                if i % 2 == 0 { Some(1 << 30) } else { None },
            ),
            _ => ("kubepods", Some(1 << 30)),
        };
        let pod = format!("{parent}/pod{}", uid(i));
        cgroup(&root, &pod, 10_000_000 + i as u64 * 4096, limit);
        cgroup(
            &root,
            &format!("{pod}/cri-containerd-{i:064x}"),
            9_000_000,
            limit,
        );
    }
    root
}

/// The pod UID of the `i`th pod of [`tree`].
fn uid(i: usize) -> String {
    format!("{i:08x}-1111-2222-3333-444455556666")
}

/// A whole daemon engine on `root` (recording fake actuator, the default configuration).
fn engine(root: &Path, state: &Path) -> oomwarden_daemon::Engine {
    engine_with(root, state, "")
}

/// [`engine`] with `oom` added to the `OOMConfig` document.
fn engine_with(root: &Path, state: &Path, oom: &str) -> oomwarden_daemon::Engine {
    let settings = oomwarden_config::Settings::from_yaml(
        &format!(
            "apiVersion: v1alpha1\nkind: OOMConfig\n{oom}---\napiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\nstateDir: {}\n",
            state.display()
        ),
        "bench.yaml",
    )
    .unwrap();
    fs::set_permissions(state, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let (history, _) = oomwarden_daemon::History::open(state).unwrap();
    let proc = oomwarden_testkit::proc_fixture();
    let fake = oomwarden_actuate_fake::SharedRecorder::new(
        oomwarden_actuate_fake::RecordingActuator::new(oomwarden_actuate_fake::KillEffect::Empty),
    );
    oomwarden_daemon::Engine::new(oomwarden_daemon::EngineParts::new(
        settings,
        Collector::new(
            CgroupFs::new(root),
            ProcFs::new(&proc),
            Layout::talos(),
            None,
        ),
        ProcFs::new(&proc),
        history,
        Box::new(fake.clone()),
        Box::new(fake),
    ))
}

/// The daemon's quiet cycle with the identity off, known (a fixed cache) and live (refresher
/// and watch running), at 100 and 1,000 pods.
fn identity_table(base: &Path) {
    println!();
    println!(
        "| pods | quiet cycle, identity off | identity known (fixed cache) | ratio | identity live (refresher every 1 s, watch) | ratio |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    for pods in [100usize, 1000] {
        let root = tree(base, pods);
        let logs = base.join(format!("pod-logs-{pods}"));
        let mut ids = Identities::default();
        for i in 0..pods {
            let uid = uid(i);
            fs::create_dir_all(logs.join(format!("shop_app-{i}_{uid}/app"))).unwrap();
            ids.pods.insert(
                uid.clone(),
                PodIdentity {
                    uid,
                    namespace: "shop".to_owned(),
                    name: format!("app-{i}"),
                    containers: vec!["app".to_owned()],
                    source: IdentitySource::Cri,
                    ..PodIdentity::default()
                },
            );
        }
        let states: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let mut off = engine(&root, states[0].path());
        let mut known = engine(&root, states[1].path());
        known.set_identity(oomwarden_identity::Cache::fixed(ids, IdentitySource::Cri));
        let mut live = engine(&root, states[2].path());
        let cache = oomwarden_identity::Cache::start(oomwarden_identity::Config {
            endpoint: oomwarden_identity::Endpoint::Off,
            pod_logs: logs,
            refresh_every: Duration::from_secs(1),
            timeout: Duration::from_secs(2),
        })
        .unwrap();
        cache
            .watch(live.pod_parents(), |name| {
                oomwarden_kube::decode_cgroup_path(name).pod_uid.is_some()
            })
            .unwrap();
        live.set_identity(cache.clone());
        let iters = (20_000 / (pods + 20)).max(5);
        let wall = "2026-12-01T00:00:00.000Z";
        let cycle = |e: &mut oomwarden_daemon::Engine, t: &mut u64| {
            *t += 500_000_000;
            assert!(matches!(
                e.cycle(*t, wall),
                oomwarden_daemon::CycleOutcome::Quiet
            ));
        };
        let (mut t0, mut t1, mut t2) = (0u64, 0u64, 0u64);
        let mut a = || cycle(&mut off, &mut t0);
        let mut b = || cycle(&mut known, &mut t1);
        let mut c = || cycle(&mut live, &mut t2);
        let m = measure(15, iters, &mut [&mut a, &mut b, &mut c]);
        cache.stop();
        println!(
            "| {pods} | {} | {} | {:.2}x | {} | {:.2}x |",
            us(m[0]),
            us(m[1]),
            m[1].as_secs_f64() / m[0].as_secs_f64(),
            us(m[2]),
            m[2].as_secs_f64() / m[0].as_secs_f64()
        );
    }
}

/// The growth scan (a ranking that names `d_memory_current`): the daemon's quiet cycle every
/// 500 ms (the default interval) with the default ranking, and with a ranking by growth, which
/// reads every candidate's `memory.current` once a second (every other cycle).
fn growth_table(base: &Path) {
    println!();
    println!(
        "| pods | quiet cycle, default ranking | quiet cycle, ranking by growth (a scan every other cycle) | ratio | the scan alone |"
    );
    println!("|---:|---:|---:|---:|---:|");
    for pods in [10usize, 100, 1000] {
        let root = tree(base, pods);
        let states: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
        let mut plain = engine(&root, states[0].path());
        let mut growth = engine_with(
            &root,
            states[1].path(),
            "cgroupRankingExpression: d_memory_current\n",
        );
        let scanner = Collector::new(
            CgroupFs::new(&root),
            ProcFs::new(oomwarden_testkit::proc_fixture()),
            Layout::talos(),
            None,
        );
        let iters = (20_000 / (pods + 20)).max(6) & !1; // even: as many scans in each batch
        let wall = "2026-12-01T00:00:00.000Z";
        let cycle = |e: &mut oomwarden_daemon::Engine, t: &mut u64| {
            *t += 500_000_000;
            assert!(matches!(
                e.cycle(*t, wall),
                oomwarden_daemon::CycleOutcome::Quiet
            ));
        };
        let (mut t0, mut t1) = (0u64, 0u64);
        let mut a = || cycle(&mut plain, &mut t0);
        let mut b = || cycle(&mut growth, &mut t1);
        let mut c = || {
            black_box(scanner.candidate_currents());
        };
        let m = measure(15, iters, &mut [&mut a, &mut b, &mut c]);
        assert!(growth.growth_remembered() > 0, "the scan ran");
        println!(
            "| {pods} | {} | {} | {:.2}x | {} |",
            us(m[0]),
            us(m[1]),
            m[1].as_secs_f64() / m[0].as_secs_f64(),
            us(m[2])
        );
    }
}

/// The files and listings a quiet cycle reads, as the collector would.
fn quiet_files(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut dirs = vec![root.to_owned()];
    for d in [
        "init",
        "system",
        "podruntime",
        "kubepods/besteffort",
        "kubepods/burstable",
    ] {
        dirs.push(root.join(d));
    }
    let mut names: Vec<String> = fs::read_dir(root.join("kubepods"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    names.sort();
    dirs.extend(
        names
            .iter()
            .filter(|n| *n != "besteffort" && *n != "burstable")
            .map(|n| root.join("kubepods").join(n)),
    );
    let mut files: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|d| {
            [
                "memory.pressure",
                "memory.current",
                "memory.peak",
                "memory.max",
            ]
            .map(|f| d.join(f))
        })
        .collect();
    // The node's memory (`node_memory_*`), read every cycle too.
    files.push(oomwarden_testkit::proc_fixture().join("meminfo"));
    (files, vec![root.join("kubepods")])
}

/// The extra files and listings of a triggered cycle (every candidate).
fn candidate_files(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let parents: Vec<PathBuf> = [
        "kubepods/besteffort",
        "kubepods/burstable",
        "kubepods",
        "podruntime",
        "system",
    ]
    .iter()
    .map(|d| root.join(d))
    .collect();
    let mut files = Vec::new();
    for p in &parents {
        let mut children: Vec<PathBuf> = fs::read_dir(p)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().unwrap().is_dir())
            .map(|e| e.path())
            .collect();
        children.sort();
        for c in children
            .iter()
            .filter(|c| !c.ends_with("besteffort") && !c.ends_with("burstable"))
        {
            for f in [
                "memory.current",
                "memory.peak",
                "memory.max",
                "cgroup.events",
            ] {
                files.push(c.join(f));
            }
        }
    }
    (files, parents)
}

fn read_all(files: &[PathBuf], dirs: &[PathBuf]) {
    for d in dirs {
        for e in fs::read_dir(d).unwrap() {
            black_box(e.unwrap().file_type().unwrap());
        }
    }
    for f in files {
        black_box(fs::read_to_string(f).unwrap());
    }
}

/// Median time per iteration over `batches` interleaved batches of each closure.
fn measure(batches: usize, iters: usize, jobs: &mut [&mut dyn FnMut()]) -> Vec<Duration> {
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); jobs.len()];
    for _ in 0..batches {
        for (i, job) in jobs.iter_mut().enumerate() {
            let start = Instant::now();
            for _ in 0..iters {
                job();
            }
            samples[i].push(start.elapsed() / u32::try_from(iters).unwrap());
        }
    }
    samples
        .into_iter()
        .map(|mut s| {
            s.sort();
            s[s.len() / 2]
        })
        .collect()
}

fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

#[allow(
    clippy::too_many_lines,
    reason = "a benchmark: one block per measured case"
)]
fn main() {
    // `CYCLE_BENCH=identity` (or `growth`) runs that table alone.
    let only = std::env::var("CYCLE_BENCH").ok();
    let base_dir = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let base = tempfile::tempdir_in(base_dir).unwrap();
    let trigger = TriggerExpr::compile(DEFAULT_TRIGGER_EXPRESSION).unwrap();
    let always = TriggerExpr::compile("true").unwrap();
    let ranking = RankingExpr::compile(DEFAULT_RANKING_EXPRESSION).unwrap();
    println!(
        "oomwarden cycle benchmark (tmpfs at {}; median of interleaved batches; µs per cycle)",
        base.path().display()
    );
    match only.as_deref() {
        Some("identity") => return identity_table(base.path()),
        Some("growth") => return growth_table(base.path()),
        _ => {}
    }
    println!();
    println!(
        "| pods | floor quiet | quiet cycle | ratio | floor triggered | triggered cycle | ratio | candidates |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for pods in [10usize, 100, 1000] {
        let root = tree(base.path(), pods);
        let collector = Collector::new(
            CgroupFs::new(&root),
            ProcFs::new(oomwarden_testkit::proc_fixture()),
            Layout::talos(),
            None,
        );
        let (qf, qd) = quiet_files(&root);
        let (cf, cd) = candidate_files(&root);
        let (tf, td) = ([qf.clone(), cf].concat(), [qd.clone(), cd].concat());
        let mut state = State::new();
        let mut t = 0u64;
        let (_, n_candidates) = {
            let (c, _) = collector.candidates();
            ((), c.len())
        };
        let iters = (20_000 / (pods + 20)).max(5);
        let mut floor_quiet = || read_all(&qf, &qd);
        let mut quiet = || {
            t += 500_000_000;
            let (s, _) = collector.metrics(t);
            let ctx = build_context(&s, &mut state).unwrap();
            assert!(!trigger.eval(&ctx).unwrap());
        };
        let mut state2 = State::new();
        let mut t2 = 0u64;
        let mut floor_trig = || read_all(&tf, &td);
        let mut triggered = || {
            t2 += 500_000_000;
            let (s, _) = collector.metrics(t2);
            let ctx = build_context(&s, &mut state2).unwrap();
            assert!(always.eval(&ctx).unwrap());
            let (c, _) = collector.candidates();
            let r = rank(&ranking, &c);
            black_box(select(&r, &c, true));
        };
        let m = measure(
            15,
            iters,
            &mut [
                &mut floor_quiet,
                &mut quiet,
                &mut floor_trig,
                &mut triggered,
            ],
        );
        let ratio = |a: Duration, b: Duration| format!("{:.2}x", a.as_secs_f64() / b.as_secs_f64());
        println!(
            "| {pods} | {} | {} | {} | {} | {} | {} | {n_candidates} |",
            us(m[0]),
            us(m[1]),
            ratio(m[1], m[0]),
            us(m[2]),
            us(m[3]),
            ratio(m[3], m[2])
        );
    }
    println!();
    println!(
        "| pods | quiet cycle | floor recorded (its reads) | recorded cycle (flight recorder) | ratio to the quiet cycle | ratio to its floor |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    for pods in [10usize, 100, 1000] {
        let root = tree(base.path(), pods);
        let proc = oomwarden_testkit::proc_fixture();
        let plain = Collector::new(
            CgroupFs::new(&root),
            ProcFs::new(&proc),
            Layout::talos(),
            None,
        );
        let tap = oomwarden_recording::Tap::new(Arc::new(Disk));
        let tapped = Collector::new(
            CgroupFs::with_files(&root, tap.clone()),
            ProcFs::with_files(&proc, tap.clone()),
            Layout::talos(),
            None,
        );
        let meta: oomwarden_recording::Meta = serde_json::from_value(serde_json::json!({
            "startedAt": "2026-11-29T00:00:00Z", "startNs": 0, "cgroupRoot": "/", "procRoot": "/proc",
            "layout": "talos", "intervalMs": 500, "source": "bench", "version": "bench"
        }))
        .unwrap();
        let mut recorder = oomwarden_recording::Recorder::new(meta, Some(300_000_000_000));
        let iters = (20_000 / (pods + 20)).max(5);
        let (qf, qd) = quiet_files(&root);
        let (cf, cd) = candidate_files(&root);
        let (rf, rd) = ([qf, cf].concat(), [qd, cd].concat());
        let mut floor = || read_all(&rf, &rd);
        let (mut state, mut t) = (State::new(), 0u64);
        let mut quiet = || {
            t += 500_000_000;
            let (s, _) = plain.metrics(t);
            let ctx = build_context(&s, &mut state).unwrap();
            assert!(!trigger.eval(&ctx).unwrap());
        };
        let (mut state2, mut t2) = (State::new(), 0u64);
        let mut recorded = || {
            t2 += 500_000_000;
            let (s, _) = tapped.metrics(t2);
            let ctx = build_context(&s, &mut state2).unwrap();
            assert!(!trigger.eval(&ctx).unwrap());
            black_box(tapped.candidates());
            black_box(recorder.cycle(t2, oomwarden_recording::Wakeup::Tick, tap.take()));
        };
        let m = measure(15, iters, &mut [&mut quiet, &mut floor, &mut recorded]);
        println!(
            "| {pods} | {} | {} | {} | {:.2}x | {:.2}x |",
            us(m[0]),
            us(m[1]),
            us(m[2]),
            m[2].as_secs_f64() / m[0].as_secs_f64(),
            m[2].as_secs_f64() / m[1].as_secs_f64()
        );
    }
    identity_table(base.path());
    growth_table(base.path());
}
