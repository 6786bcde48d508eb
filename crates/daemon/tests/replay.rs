//! Record cycles of the engine on an evolving fixture node, replay the recording, and compare.

// Test code: unwrap on expected outcomes is the assertion.
#![allow(
    clippy::unwrap_used,
    clippy::disallowed_methods,
    clippy::indexing_slicing
)]

use std::path::Path;
use std::sync::Arc;

use oomwarden_actuate_fake::{KillEffect, RecordingActuator};
use oomwarden_cgroupfs::{CgroupFs, Disk};
use oomwarden_collect::Collector;
use oomwarden_config::Settings;
use oomwarden_daemon::CycleOutcome as Replayed;
use oomwarden_daemon::recorder::CycleRecorder;
use oomwarden_daemon::replay;
use oomwarden_daemon::{CycleOutcome, Engine, EngineParts, History};
use oomwarden_model::{ActionRecord, Layout, Outcome, QosClass, Wakeup};
use oomwarden_procfs::ProcFs;
use oomwarden_recording::{Meta, Tap, parse};
use oomwarden_testkit::write;

const STEP_NS: u64 = 100_000_000;

fn psi(full_avg10: f64, total: u64) -> String {
    format!(
        "some avg10={full_avg10:.2} avg60=0.00 avg300=0.00 total={total}\nfull avg10={full_avg10:.2} avg60=0.00 avg300=0.00 total={total}\n"
    )
}

/// A Talos node with two BestEffort pods and a Burstable one, at step `i` of a slow squeeze:
/// pressure rises from step 10, the hog grows every step.
fn node_at(r: &Path, i: u64) {
    let avg = if i < 10 { 0.0 } else { (i - 10) as f64 * 3.0 };
    let total = i * i * 10_000;
    for f in [
        "memory.pressure",
        "init/memory.pressure",
        "system/memory.pressure",
        "podruntime/memory.pressure",
        "kubepods/besteffort/memory.pressure",
        "kubepods/burstable/memory.pressure",
    ] {
        write(r, f, &psi(avg, total));
    }
    // Reclaim counters that move (a daemon recording reads them whatever its trigger names;
    // the replay must compute the same rates: it once did not).
    for dir in ["system", "kubepods/besteffort"] {
        write(
            r,
            &format!("{dir}/memory.stat"),
            &format!(
                "anon 4096\nworkingset_refault_file {}\npgscan {}\n",
                i * 100,
                i * i * 50
            ),
        );
    }
    for (pod, current) in [
        ("besteffort/pod-hog", 100_000_000 + i * 20_000_000),
        ("besteffort/pod-quiet", 50_000_000),
        ("burstable/pod-web", 400_000_000),
    ] {
        let dir = format!("kubepods/{pod}");
        if i == 0 {
            write(
                r,
                &format!("{dir}/cgroup.events"),
                "populated 1\nfrozen 0\n",
            );
            write(r, &format!("{dir}/memory.max"), "max\n");
            write(r, &format!("{dir}/c/cgroup.procs"), "7\n");
        }
        write(r, &format!("{dir}/memory.current"), &format!("{current}\n"));
    }
}

fn settings(trigger: &str, extra_warden: &str, state: &Path) -> Settings {
    let text = format!(
        "apiVersion: v1alpha1\nkind: OOMConfig\ntriggerExpression: '{trigger}'\nsampleInterval: 100ms\n---\napiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\nstateDir: {}\n{extra_warden}",
        state.display()
    );
    Settings::from_yaml(&text, "test.yaml").unwrap()
}

const TRIGGER: &str = "memory_full_avg10 > 10.0 && time_since_trigger > duration(\"300ms\")";

fn meta(cg: &Path, proc: &Path) -> Meta {
    Meta {
        started_at: "2026-11-29T10:00:00.000Z".into(),
        start_ns: 0,
        cgroup_root: cg.display().to_string(),
        proc_root: proc.display().to_string(),
        layout: "talos".into(),
        layout_document: None,
        own_cgroup: None,
        last_trigger_ns: None,
        interval_ms: 100,
        source: "daemon".into(),
        version: "test".into(),
        config: None,
        hostname: None,
        kernel: None,
        description: None,
    }
}

/// A fixture node and an engine recording to a file.
struct Live {
    cg: tempfile::TempDir,
    _proc: tempfile::TempDir,
    rec: tempfile::NamedTempFile,
    engine: Engine,
}

impl Live {
    fn new(settings: Settings, window: Option<u64>) -> Live {
        let cg = tempfile::tempdir().unwrap();
        let proc = tempfile::tempdir().unwrap();
        write(proc.path(), "7/cmdline", "hog\0");
        write(
            proc.path(),
            "meminfo",
            "MemTotal: 1000 kB\nMemAvailable: 500 kB\n",
        );
        let rec = tempfile::NamedTempFile::new().unwrap();
        let tap = Tap::new(Arc::new(Disk));
        let cgroups = CgroupFs::with_files(cg.path(), tap.clone());
        let procfs = ProcFs::with_files(proc.path(), tap.clone());
        let (history, _) = History::open(&settings.warden.state_dir).unwrap();
        let collector = Collector::new(cgroups, procfs.clone(), Layout::talos(), None);
        let mut recorder = CycleRecorder::new(tap, meta(cg.path(), proc.path()), window)
            .writing_to(rec.path())
            .unwrap();
        if window.is_some() {
            let mut notes = Vec::new();
            let dir =
                oomwarden_daemon::statedir::StateDir::open(&settings.warden.state_dir, &mut notes)
                    .and_then(|d| d.subdir("recordings", &mut notes))
                    .unwrap();
            recorder = recorder.saving_to(dir, 2);
        }
        let engine = Engine::new(EngineParts {
            recorder: Some(recorder),
            ..EngineParts::new(
                settings.clone(),
                collector,
                procfs,
                history,
                Box::new(RecordingActuator::new(KillEffect::Empty)),
                Box::new(RecordingActuator::new(KillEffect::Empty)),
            )
        });
        Live {
            cg,
            _proc: proc,
            rec,
            engine,
        }
    }

    /// Step `i` of the fixture node, then a cycle (woken by PSI when `pressure`).
    fn step(&mut self, i: u64, pressure: bool) -> Option<ActionRecord> {
        node_at(self.cg.path(), i);
        write(
            self._proc.path(),
            "vmstat",
            &format!(
                "workingset_refault_file {}\npgscan_kswapd {}\npgscan_direct {}\npgsteal_kswapd {}\n",
                i * 300,
                i * i * 1000,
                i * 7,
                i * i * 900
            ),
        );
        let outcome = if pressure {
            self.engine.cycle_on_pressure(i * STEP_NS, "live")
        } else {
            self.engine.cycle(i * STEP_NS, "live")
        };
        match outcome {
            CycleOutcome::Acted(r) => Some(*r),
            _ => None,
        }
    }

    /// The recording so far (no end line yet: it reads as cut short).
    fn text(&self) -> String {
        std::fs::read_to_string(self.rec.path()).unwrap()
    }

    /// The recording, ended as the daemon ends it at a clean stop.
    fn finished_text(&mut self) -> String {
        self.engine.finish_recording();
        let text = self.text();
        assert!(text.ends_with(oomwarden_recording::END_LINE));
        text
    }
}

/// Runs `cycles` live cycles with recording on; returns the records and the recording text.
fn live(settings: Settings, cycles: u64, window: Option<u64>) -> (Vec<ActionRecord>, String) {
    let mut l = Live::new(settings, window);
    let records = (0..cycles).filter_map(|i| l.step(i, false)).collect();
    (records, l.finished_text())
}

fn replayed(text: &str, settings: Settings) -> replay::Replay {
    let recording = parse(text).unwrap();
    assert_eq!(recording.truncated, None);
    let (layout, warning) = replay::layout_for(&recording, &settings).unwrap();
    assert_eq!(warning, None);
    replay::replay(recording, settings, layout)
}

/// What must match between a live record and its replay (times of kills, memory waits and
/// wall clocks differ by nature).
fn decision(
    r: &ActionRecord,
) -> (
    u64,
    Outcome,
    Option<String>,
    Option<QosClass>,
    String,
    Vec<u32>,
) {
    (
        r.monotonic_ns,
        r.outcome,
        r.victim.clone(),
        r.class,
        format!(
            "{} {:?} {}",
            r.score, r.memory_current_bytes, r.trigger_context
        ),
        r.pids.clone(),
    )
}

/// The replay decided what the daemon decided, record by record.
fn assert_same_decisions(replay: &replay::Replay, live: &[ActionRecord]) {
    let got: Vec<_> = replay
        .decisions
        .iter()
        .map(|d| decision(&d.record))
        .collect();
    let want: Vec<_> = live.iter().map(decision).collect();
    assert_eq!(got, want);
}

#[test]
fn a_replay_under_the_same_configuration_decides_what_the_daemon_decided() {
    let state = tempfile::tempdir().unwrap();
    let s = settings(TRIGGER, "", state.path());
    let (live, text) = live(s.clone(), 30, None);
    assert!(live.len() >= 2, "the scenario must kill: {live:?}");
    assert_eq!(live[0].outcome, Outcome::Killed);
    let replay = replayed(&text, s);
    assert_eq!(replay.cycles.len(), 30);
    assert_eq!(replay.not_replayed, 0);
    assert_same_decisions(&replay, &live);
    // The ranking behind the first kill: the hog above the quiet pod; Burstable only ranked.
    let first = &replay.decisions[0];
    assert!(
        first
            .ranking
            .iter()
            .any(|c| c.path.ends_with("pod-hog") && c.eligible)
    );
    assert_eq!(replay.cycles[0].result, Replayed::Quiet);
    assert!(replay.cycles[0].context.is_some());
    assert!(
        first.record.time.starts_with("2026-11-29T10:00:"),
        "{}",
        first.record.time
    );
}

#[test]
fn a_replayed_kill_removes_the_victim_from_later_cycles() {
    // Live in dry run: the same hog is "killed" at every trigger.
    let state = tempfile::tempdir().unwrap();
    let (live, text) = live(settings(TRIGGER, "dryRun: true\n", state.path()), 30, None);
    let victims: Vec<_> = live.iter().filter_map(|r| r.victim.clone()).collect();
    assert!(
        victims.len() >= 2 && victims.iter().all(|v| v.ends_with("pod-hog")),
        "{victims:?}"
    );
    assert!(live.iter().all(|r| r.outcome == Outcome::DryRun));
    // Replayed for real: the hog goes at the first trigger, then the quiet pod.
    let replay = replayed(&text, settings(TRIGGER, "", state.path()));
    let victims: Vec<_> = replay
        .decisions
        .iter()
        .filter_map(|d| d.record.victim.clone())
        .collect();
    assert!(victims[0].ends_with("pod-hog"), "{victims:?}");
    assert!(victims[1].ends_with("pod-quiet"), "{victims:?}");
    assert_eq!(victims.iter().filter(|v| v.ends_with("pod-hog")).count(), 1);
    assert!(
        replay
            .decisions
            .iter()
            .all(|d| d.record.outcome != Outcome::DryRun)
    );
}

#[test]
fn another_configuration_decides_differently_on_the_same_recording() {
    let state = tempfile::tempdir().unwrap();
    let (_, text) = live(settings(TRIGGER, "", state.path()), 30, None);
    // A lazier trigger fires later.
    let lazy = replayed(
        &text,
        settings(
            "memory_full_avg10 > 40.0 && time_since_trigger > duration(\"300ms\")",
            "",
            state.path(),
        ),
    );
    let eager = replayed(&text, settings(TRIGGER, "", state.path()));
    assert!(lazy.decisions[0].record.monotonic_ns > eager.decisions[0].record.monotonic_ns);
    // A coarser interval replays every other recorded cycle.
    let coarse = replayed(
        &text,
        Settings::from_yaml(
            &format!(
                "apiVersion: v1alpha1\nkind: OOMConfig\ntriggerExpression: 'false'\nsampleInterval: 200ms\n---\napiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\nstateDir: {}\n",
                state.path().display()
            ),
            "t.yaml",
        )
        .unwrap(),
    );
    assert_eq!(coarse.cycles.len(), 15);
    assert_eq!(coarse.not_replayed, 15);
    assert!(coarse.decisions.is_empty());
}

#[test]
fn the_flight_recorder_saves_its_window_with_each_action() {
    let state = tempfile::tempdir().unwrap();
    let s = settings(TRIGGER, "", state.path());
    let (live, _) = live(s.clone(), 30, Some(1_000_000_000));
    let saved: Vec<_> = live.iter().filter_map(|r| r.recording.clone()).collect();
    assert_eq!(saved.len(), live.len());
    // Only the newest two are kept.
    let dir = state.path().join("recordings");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
    let last = live.last().unwrap();
    let bytes = std::fs::read(last.recording.as_ref().unwrap()).unwrap();
    let (text, warning) = oomwarden_recording::decode(&bytes).unwrap();
    assert_eq!(warning, None);
    let window = parse(&text).unwrap();
    assert_eq!(window.meta.source, "flight-recorder");
    // The window ends with the action's cycle.
    assert_eq!(window.cycles.last().unwrap().at_ns, last.monotonic_ns);
    assert!(window.cycles.len() >= 10);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(last.recording.as_ref().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn a_window_that_starts_mid_run_keeps_the_cooldown() {
    // 15 s of cycles: the 1 s window holds only the second 10 s segment, after many triggers.
    let state = tempfile::tempdir().unwrap();
    let s = settings(TRIGGER, "", state.path());
    let (live, _) = live(s.clone(), 150, Some(1_000_000_000));
    let last = live.last().unwrap();
    let bytes = std::fs::read(last.recording.as_ref().unwrap()).unwrap();
    let (text, _) = oomwarden_recording::decode(&bytes).unwrap();
    let window = parse(&text).unwrap();
    let first = window.cycles[0].at_ns;
    assert_eq!(first, 10_000_000_000);
    assert!(window.meta.last_trigger_ns.is_some_and(|t| t < first));
    let replay = replayed(&text, s);
    let key = |r: &ActionRecord| (r.monotonic_ns, r.outcome, r.victim.clone());
    let want: Vec<_> = live
        .iter()
        .filter(|r| r.monotonic_ns >= first)
        .map(key)
        .collect();
    let got: Vec<_> = replay.decisions.iter().map(|d| key(&d.record)).collect();
    assert!(want.len() >= 3, "{want:?}");
    assert_eq!(got, want);
}

#[test]
fn reads_between_cycles_are_not_recorded_once_discarded() {
    let state = tempfile::tempdir().unwrap();
    let mut l = Live::new(settings(TRIGGER, "", state.path()), None);
    l.step(0, false);
    // A reload's layout detection reads through the same readers between cycles.
    // (a candidate's memory.stat: a file the cycles themselves never read; they read the
    // classes' subtrees' memory.stat while recording.)
    let extra = l.cg.path().join("kubepods/besteffort/pod-hog/memory.stat");
    std::fs::write(&extra, "anon 1\n").unwrap();
    l.engine
        .cgroups()
        .memory_stat("kubepods/besteffort/pod-hog")
        .unwrap();
    l.engine.discard_reads();
    l.step(1, false);
    assert!(
        !l.text().contains("pod-hog/memory.stat"),
        "a discarded read reached the recording"
    );
    // Without the discard it would have been the next cycle's first read of that file.
    l.engine
        .cgroups()
        .memory_stat("kubepods/besteffort/pod-hog")
        .unwrap();
    l.step(2, false);
    assert!(l.text().contains("pod-hog/memory.stat"));
}

#[test]
fn a_reload_names_the_new_configuration_in_later_windows() {
    let state = tempfile::tempdir().unwrap();
    let mut l = Live::new(settings(TRIGGER, "", state.path()), Some(60_000_000_000));
    for i in 0..25 {
        l.step(i, false);
    }
    let lazy = settings("memory_full_avg10 > 99.0", "", state.path());
    l.engine.set_settings(lazy);
    let record = (25..40).find_map(|i| l.step(i, false));
    assert!(record.is_none(), "the lazy trigger never fires");
    // Windows saved before the reload name the configuration of the recording's start
    // (none in this test's meta).
    let first = std::fs::read_dir(state.path().join("recordings"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let (text, _) = oomwarden_recording::decode(&std::fs::read(first).unwrap()).unwrap();
    assert_eq!(parse(&text).unwrap().meta.config, None);
    // A new action after the reload saves a window naming the new trigger.
    l.engine
        .set_settings(settings("memory_full_avg10 > 1.0", "", state.path()));
    let record = (40..45).find_map(|i| l.step(i, false)).unwrap();
    let (text, _) =
        oomwarden_recording::decode(&std::fs::read(record.recording.unwrap()).unwrap()).unwrap();
    let config = parse(&text).unwrap().meta.config.unwrap_or_default();
    assert!(config.contains("memory_full_avg10 > 1.0"), "{config}");
}

#[test]
fn pressure_woken_cycles_replay_only_with_psi_triggers() {
    let state = tempfile::tempdir().unwrap();
    let mut l = Live::new(settings(TRIGGER, "", state.path()), None);
    // Every third cycle woken by the kernel.
    let live: Vec<ActionRecord> = (0..30).filter_map(|i| l.step(i, i % 3 == 1)).collect();
    assert!(
        live.iter().any(|r| r.wakeup == Some(Wakeup::Pressure)),
        "{live:?}"
    );
    let text = l.finished_text();
    let with = replayed(
        &text,
        settings(TRIGGER, "psiTriggers: {enabled: true}\n", state.path()),
    );
    assert_eq!(with.cycles.len(), 30);
    let key = |r: &ActionRecord| (r.monotonic_ns, r.wakeup, r.victim.clone());
    assert_eq!(
        with.decisions
            .iter()
            .map(|d| key(&d.record))
            .collect::<Vec<_>>(),
        live.iter().map(key).collect::<Vec<_>>()
    );
    let without = replayed(&text, settings(TRIGGER, "", state.path()));
    assert_eq!((without.cycles.len(), without.not_replayed), (20, 10));
    assert!(
        without
            .decisions
            .iter()
            .all(|d| d.record.wakeup == Some(Wakeup::Tick))
    );
}

#[test]
fn a_configuration_naming_another_layout_is_warned_about() {
    let state = tempfile::tempdir().unwrap();
    let (_, text) = live(settings(TRIGGER, "", state.path()), 3, None);
    let recording = parse(&text).unwrap();
    let (layout, warning) = replay::layout_for(
        &recording,
        &settings(TRIGGER, "layout: systemd\n", state.path()),
    )
    .unwrap();
    assert_eq!(layout.name, "systemd");
    assert!(
        warning
            .unwrap()
            .contains("differs from the recording's (talos)")
    );
    let (layout, warning) =
        replay::layout_for(&recording, &settings(TRIGGER, "", state.path())).unwrap();
    assert_eq!((layout.name.as_str(), warning), ("talos", None));
}

/// Issue 16: the recording keeps the pod identities the daemon ranked with, so that a replay
/// ranks exactly as it did: here a ranking that spares kube-system. Without them (an older
/// recording), the replay would choose the larger, exempt pod.
#[test]
fn a_replay_ranks_with_the_identities_the_daemon_had() {
    use oomwarden_model::{Identities, IdentitySource, PodIdentity};
    let system_uid = "6b86b273-ff34-4fce-96e3-6b3e0e2d5a2f";
    let shop_uid = "d4735e3a-265e-4ce8-a0f0-2c7a1b3e2f4a";
    let state = tempfile::tempdir().unwrap();
    let ranking = "pod_namespace == \"kube-system\" ? 0.0 : double(memory_current.orValue(0u))";
    let s = Settings::from_yaml(
        &format!(
            "apiVersion: v1alpha1\nkind: OOMConfig\ntriggerExpression: '{TRIGGER}'\ncgroupRankingExpression: '{ranking}'\nsampleInterval: 100ms\n---\napiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\nstateDir: {}\n",
            state.path().display()
        ),
        "t.yaml",
    )
    .unwrap();
    let mut l = Live::new(s.clone(), None);
    for (uid, bytes) in [(system_uid, "3000000000\n"), (shop_uid, "2000000000\n")] {
        let dir = format!("kubepods/besteffort/pod{uid}");
        write(
            l.cg.path(),
            &format!("{dir}/cgroup.events"),
            "populated 1\nfrozen 0\n",
        );
        write(l.cg.path(), &format!("{dir}/memory.max"), "max\n");
        write(l.cg.path(), &format!("{dir}/memory.current"), bytes);
        write(l.cg.path(), &format!("{dir}/c/cgroup.procs"), "7\n");
    }
    let mut ids = Identities::default();
    for (uid, ns) in [(system_uid, "kube-system"), (shop_uid, "shop")] {
        ids.pods.insert(
            uid.to_owned(),
            PodIdentity {
                uid: uid.to_owned(),
                namespace: ns.to_owned(),
                name: format!("{ns}-pod"),
                source: IdentitySource::Cri,
                ..PodIdentity::default()
            },
        );
    }
    l.engine
        .set_identity(oomwarden_identity::Cache::fixed(ids, IdentitySource::Cri));
    let live: Vec<ActionRecord> = (0..20).filter_map(|i| l.step(i, false)).collect();
    let text = l.finished_text();
    let first = live.first().expect("the scenario must act");
    assert!(
        first.victim.as_deref().unwrap().contains(shop_uid),
        "{first:?}"
    );
    assert_eq!(first.namespace.as_deref(), Some("shop"));
    assert_eq!(
        text.lines().filter(|l| l.starts_with("n ")).count(),
        1,
        "written once"
    );
    let replay = replayed(&text, s.clone());
    assert_same_decisions(&replay, &live);
    assert_eq!(
        replay.decisions[0].record.namespace.as_deref(),
        Some("shop")
    );
    // The same recording without its identities: the exemption cannot hold.
    let without: String = text
        .lines()
        .filter(|l| !l.starts_with("n "))
        .map(|l| format!("{l}\n"))
        .collect();
    let blind = replayed(&without, s);
    assert!(
        blind.decisions[0]
            .record
            .victim
            .as_deref()
            .unwrap()
            .contains(system_uid)
    );
}
