//! Whole cycles on fixture trees with the recording actuator: each outcome and its record.

// Test code: unwrap on expected outcomes is the assertion.
#![allow(clippy::unwrap_used, clippy::disallowed_methods)]

use std::fs;
use std::path::Path;
use std::time::Duration;

use oomwarden_actuate_fake::{Call, KillEffect, RecordingActuator, SharedRecorder};
use oomwarden_cgroupfs::CgroupFs;
use oomwarden_collect::Collector;
use oomwarden_config::Settings;
use oomwarden_daemon::{CycleOutcome, Engine, EngineParts, History};
use oomwarden_model::{ActionRecord, CancelReason, Layout, Outcome, QosClass, Wakeup};
use oomwarden_procfs::ProcFs;
use oomwarden_testkit::write;

const HOT: &str = "some avg10=17.06 avg60=8.04 avg300=2.10 total=12172340\nfull avg10=14.54 avg60=6.97 avg300=1.82 total=10654831\n";

/// A Talos node: pressure everywhere, a BestEffort pod (2 processes), a limited Burstable pod,
/// a deleted BestEffort pod's empty leftover cgroup (larger than the live one).
fn node() -> (tempfile::TempDir, tempfile::TempDir) {
    let cg = tempfile::tempdir().unwrap();
    let r = cg.path();
    for f in [
        "memory.pressure",
        "init/memory.pressure",
        "system/memory.pressure",
        "podruntime/memory.pressure",
        "kubepods/besteffort/memory.pressure",
    ] {
        write(r, f, HOT);
    }
    write(
        r,
        "kubepods/besteffort/pod-live/cgroup.events",
        "populated 1\nfrozen 0\n",
    );
    write(
        r,
        "kubepods/besteffort/pod-live/memory.current",
        "222593024\n",
    );
    write(r, "kubepods/besteffort/pod-live/memory.max", "max\n");
    write(
        r,
        "kubepods/besteffort/pod-live/c1/cgroup.procs",
        "100\n101\n",
    );
    write(
        r,
        "kubepods/besteffort/pod-deleted/cgroup.events",
        "populated 0\nfrozen 0\n",
    );
    write(
        r,
        "kubepods/besteffort/pod-deleted/memory.current",
        "999999999\n",
    );
    write(r, "kubepods/besteffort/pod-deleted/memory.max", "max\n");
    write(
        r,
        "kubepods/burstable/pod-limited/cgroup.events",
        "populated 1\nfrozen 0\n",
    );
    write(
        r,
        "kubepods/burstable/pod-limited/memory.current",
        "5000000000\n",
    );
    write(
        r,
        "kubepods/burstable/pod-limited/memory.max",
        "6000000000\n",
    );
    let proc = tempfile::tempdir().unwrap();
    write(proc.path(), "100/cmdline", "stress-ng\0--vm\0\x31\0");
    write(proc.path(), "101/cmdline", "/pause\0");
    (cg, proc)
}

fn settings(extra_oom: &str, extra_warden: &str, state: &Path) -> Settings {
    let text = format!(
        "apiVersion: v1alpha1\nkind: OOMConfig\n{extra_oom}---\napiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\nstateDir: {}\n{extra_warden}",
        state.display()
    );
    Settings::from_yaml(&text, "test.yaml").unwrap()
}

/// The engine on a fixture node, with a recording fake as its actuator and hooks.
fn engine(cg: &Path, proc: &Path, settings: Settings, fake: impl Into<SharedRecorder>) -> Engine {
    Engine::new(parts(cg, proc, settings, fake))
}

/// The parts of [`engine`], for a test that gives one more.
fn parts(
    cg: &Path,
    proc: &Path,
    settings: Settings,
    fake: impl Into<SharedRecorder>,
) -> EngineParts {
    let shared = fake.into();
    parts_with(
        cg,
        proc,
        settings,
        Box::new(shared.clone()),
        Box::new(shared),
    )
}

fn engine_with(
    cg: &Path,
    proc: &Path,
    settings: Settings,
    actuator: Box<dyn oomwarden_actuate::Actuator + Send>,
    hooks: Box<dyn oomwarden_actuate::Hooks + Send>,
) -> Engine {
    Engine::new(parts_with(cg, proc, settings, actuator, hooks))
}

fn parts_with(
    cg: &Path,
    proc: &Path,
    settings: Settings,
    actuator: Box<dyn oomwarden_actuate::Actuator + Send>,
    hooks: Box<dyn oomwarden_actuate::Hooks + Send>,
) -> EngineParts {
    // As the daemon makes it (tempfile makes 0755, which the history would tighten and say).
    fs::set_permissions(
        &settings.warden.state_dir,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let (history, warnings) = History::open(&settings.warden.state_dir).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let collector = Collector::new(CgroupFs::new(cg), ProcFs::new(proc), Layout::talos(), None);
    EngineParts::new(
        settings,
        collector,
        ProcFs::new(proc),
        history,
        actuator,
        hooks,
    )
}

/// A fixture node's directories, kept alive with the engine that uses them.
struct Dirs {
    _cg: tempfile::TempDir,
    _proc: tempfile::TempDir,
    state: tempfile::TempDir,
}

/// The fixture node with a trigger that is always true and a fake kill that empties the cgroup.
fn always_triggered() -> (Dirs, Engine) {
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let e = engine(
        cg.path(),
        proc.path(),
        settings("triggerExpression: \"true\"\n", "", state.path()),
        RecordingActuator::new(KillEffect::Empty),
    );
    (
        Dirs {
            _cg: cg,
            _proc: proc,
            state,
        },
        e,
    )
}

fn acted(outcome: CycleOutcome) -> ActionRecord {
    match outcome {
        CycleOutcome::Acted(r) => *r,
        other => panic!("expected an action, got {other:?}"),
    }
}

fn persisted(state: &Path) -> Vec<ActionRecord> {
    fs::read_to_string(state.join("actions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_triggered_cycle_kills_the_live_pod_and_records_why() {
    let (dirs, mut e) = always_triggered();
    let r = acted(e.cycle(5_000_000_000, "2026-11-29T12:00:00.000Z"));
    // The node's path, whatever root the fixture tree is read under.
    let victim = "/sys/fs/cgroup/kubepods/besteffort/pod-live";
    assert_eq!(r.outcome, Outcome::Killed);
    assert_eq!(
        r.victim.as_deref(),
        Some(victim),
        "not the larger, empty leftover cgroup"
    );
    assert_eq!(r.class, Some(QosClass::Besteffort));
    assert_eq!(r.score, 222593024.0);
    assert_eq!(r.pids, [100, 101]);
    assert_eq!(r.processes, ["stress-ng --vm 1", "/pause"]);
    assert_eq!(r.memory_current_bytes, Some(222593024));
    assert!(r.kill_duration_ms.is_some());
    assert_eq!(
        (r.id, r.monotonic_ns, r.time.as_str()),
        (0, 5_000_000_000, "2026-11-29T12:00:00.000Z")
    );
    assert!(
        r.trigger_context.starts_with("{\"d_memory_full_avg10\":0,")
            && r.trigger_context.contains("\"memory_full_avg10\":14.54,")
    );
    assert_eq!(persisted(dirs.state.path()), std::slice::from_ref(&r));
    assert_eq!(e.history().recent().count(), 1);
    // The next trigger is recorded with the next id, and the killed pod is now empty.
    let r2 = acted(e.cycle(6_000_000_000, "2026-11-29T12:00:01.000Z"));
    assert_eq!(r2.id, 1);
    assert_eq!(
        r2.outcome,
        Outcome::NoEligibleCgroup,
        "the killed pod is empty, the other is limited"
    );
    assert_eq!(r2.victim, None);
}

#[test]
fn the_exact_kill_sequence_reaches_the_actuator() {
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let s = settings("triggerExpression: \"true\"\n", "", state.path());
    // Keep a handle on the calls: run the same sequence through a shared recorder.
    let recorder = SharedRecorder::new(RecordingActuator::new(KillEffect::Empty));
    let mut e = engine(cg.path(), proc.path(), s, recorder.clone());
    acted(e.cycle(1, "t"));
    let calls = recorder.lock().calls.clone();
    assert_eq!(
        calls,
        [
            Call::OpenPidfd(100),
            Call::OpenPidfd(101),
            Call::WriteCgroupKill(cg.path().join("kubepods/besteffort/pod-live")),
            Call::ReleaseMemory(100),
            Call::ReleaseMemory(101),
            Call::CloseAll,
        ]
    );
}

#[test]
fn dry_run_decides_and_records_but_never_kills() {
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let mut e = engine(
        cg.path(),
        proc.path(),
        settings(
            "triggerExpression: \"true\"\n",
            "dryRun: true\n",
            state.path(),
        ),
        RecordingActuator::new(KillEffect::Fail(1)),
    );
    let r = acted(e.cycle(1, "t"));
    assert_eq!(r.outcome, Outcome::DryRun);
    assert!(r.victim.unwrap().ends_with("pod-live"));
    assert_eq!(r.pids, [100, 101]);
    assert_eq!(r.kill_duration_ms, None);
    assert!(
        cg.path()
            .join("kubepods/besteffort/pod-live/c1/cgroup.procs")
            .exists()
    );
    assert_eq!(
        fs::read_to_string(cg.path().join("kubepods/besteffort/pod-live/cgroup.events")).unwrap(),
        "populated 1\nfrozen 0\n"
    );
}

#[test]
fn unverified_and_failed_kills_are_recorded_as_such() {
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let s = settings(
        "triggerExpression: \"true\"\n",
        "killTimeout: 50ms\n",
        state.path(),
    );
    assert_eq!(s.warden.kill_timeout, Duration::from_millis(50));
    let mut e = engine(
        cg.path(),
        proc.path(),
        s,
        RecordingActuator::new(KillEffect::Nothing),
    );
    let r = acted(e.cycle(1, "t"));
    assert_eq!(r.outcome, Outcome::NotVerified);
    assert!(r.error.unwrap().contains("processes remain"));
    assert!(r.kill_duration_ms.unwrap() >= 50.0);

    let state = tempfile::tempdir().unwrap();
    let mut e = engine(
        cg.path(),
        proc.path(),
        settings("triggerExpression: \"true\"\n", "", state.path()),
        RecordingActuator::new(KillEffect::Fail(13)),
    );
    let r = acted(e.cycle(1, "t"));
    assert_eq!(r.outcome, Outcome::KillFailed);
    assert!(r.error.unwrap().contains("Permission denied"));
    assert_eq!(r.processes.len(), 2);
}

#[test]
fn no_eligible_cgroup_is_recorded_and_starts_the_cooldown() {
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let s = settings(
        "triggerExpression: time_since_trigger > duration(\"5s\")\ncgroupRankingExpression: \"0.0\"\n",
        "",
        state.path(),
    );
    let mut e = engine(
        cg.path(),
        proc.path(),
        s,
        RecordingActuator::new(KillEffect::Empty),
    );
    let r = acted(e.cycle(10_000_000_000, "t"));
    assert_eq!(r.outcome, Outcome::NoEligibleCgroup);
    assert_eq!((r.victim, r.score, r.pids.len()), (None, 0.0, 0));
    assert_eq!(
        e.cycle(14_000_000_000, "t"),
        CycleOutcome::Quiet,
        "4 s later: cooling down"
    );
    assert!(
        matches!(e.cycle(15_500_000_000, "t"), CycleOutcome::Acted(_)),
        "5.5 s later"
    );
}

#[test]
fn quiet_and_failing_cycles_record_nothing() {
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let mut e = engine(
        cg.path(),
        proc.path(),
        settings("", "", state.path()),
        RecordingActuator::new(KillEffect::Empty),
    );
    assert_eq!(
        e.cycle(1, "t"),
        CycleOutcome::Quiet,
        "default trigger, first cycle: every d_ is 0"
    );
    let mut e = engine(
        cg.path(),
        proc.path(),
        settings(
            "triggerExpression: qos_memory_full_avg10[9] > 0.0\n",
            "",
            state.path(),
        ),
        RecordingActuator::new(KillEffect::Empty),
    );
    assert_eq!(
        e.cycle(1, "t"),
        CycleOutcome::Skipped(oomwarden_policy::Skip::Trigger(
            "cannot evaluate expression: no such key: 9".into()
        ))
    );
    write(
        cg.path(),
        "system/memory.pressure",
        "some avg10=1.00 avg60=1.00 avg300=1.00 total=1\n",
    );
    assert_eq!(
        e.cycle(2, "t"),
        CycleOutcome::Skipped(oomwarden_policy::Skip::Context(
            "cannot find memory pressure type: type: full".into()
        ))
    );
    assert!(!state.path().join("actions.jsonl").exists());
}

#[test]
fn a_candidate_vanishing_after_the_listing_is_harmless() {
    let (cg, proc) = node();
    // A pod cgroup whose files are already gone (removed between listing and reading).
    fs::create_dir_all(cg.path().join("kubepods/besteffort/pod-vanishing")).unwrap();
    let state = tempfile::tempdir().unwrap();
    let mut e = engine(
        cg.path(),
        proc.path(),
        settings("triggerExpression: \"true\"\n", "", state.path()),
        RecordingActuator::new(KillEffect::Empty),
    );
    let r = acted(e.cycle(1, "t"));
    assert!(r.victim.unwrap().ends_with("pod-live"));
}

#[test]
fn records_name_the_pod_and_its_containers() {
    let (cg, proc) = node();
    let uid = "6b86b273-ff34-4fce-96e3-6b3e0e2d5a2f";
    let pod = format!("kubepods/besteffort/pod{uid}");
    let (pause, app) = ("a".repeat(64), "b".repeat(64));
    write(
        cg.path(),
        &format!("{pod}/cgroup.events"),
        "populated 1\nfrozen 0\n",
    );
    write(cg.path(), &format!("{pod}/memory.current"), "999999999\n");
    write(cg.path(), &format!("{pod}/memory.max"), "max\n");
    write(cg.path(), &format!("{pod}/{pause}/cgroup.procs"), "7\n");
    write(cg.path(), &format!("{pod}/{app}/cgroup.procs"), "8\n");
    let state = tempfile::tempdir().unwrap();
    let mut e = engine(
        cg.path(),
        proc.path(),
        settings(
            "triggerExpression: \"true\"\n",
            "dryRun: true\n",
            state.path(),
        ),
        RecordingActuator::new(KillEffect::Empty),
    );
    let r = acted(e.cycle(1, "t"));
    assert!(r.victim.unwrap().ends_with(&pod));
    assert_eq!(r.pod_uid.as_deref(), Some(uid));
    assert_eq!(r.containers, [pause, app]);
    let line = std::fs::read_to_string(state.path().join("actions.jsonl")).unwrap();
    assert!(line.contains(&format!("\"podUID\":\"{uid}\"")), "{line}");
}

/// An HTTP GET on the metrics endpoint: (status line, body).
fn http_get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

/// (name, sorted labels, value) of one sample.
type Sample = (String, String, f64);

/// Parses the OpenMetrics text: `# TYPE` lines into (name, type), samples into
/// (name, sorted labels, value). Any other line fails the test.
fn parse_exposition(body: &str) -> (Vec<(String, String)>, Vec<Sample>) {
    let mut types = Vec::new();
    let mut samples = Vec::new();
    let mut lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines.pop(), Some("# EOF"), "OpenMetrics ends with # EOF");
    for line in &lines {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            types.push((name.to_owned(), kind.to_owned()));
        } else if line.starts_with("# HELP ") || line.starts_with("# UNIT ") {
        } else {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let (name, labels) = match series.split_once('{') {
                Some((n, l)) => (n, l.strip_suffix('}').unwrap()),
                None => (series, ""),
            };
            let mut labels: Vec<&str> = labels.split(',').filter(|l| !l.is_empty()).collect();
            labels.sort_unstable();
            for l in &labels {
                let (k, v) = l.split_once('=').unwrap();
                assert!(
                    k.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                    "{line}"
                );
                assert!(v.starts_with('"') && v.ends_with('"'), "{line}");
            }
            assert!(name.starts_with("oomwarden_"), "{line}");
            samples.push((name.to_owned(), labels.join(","), value.parse().unwrap()));
        }
    }
    (types, samples)
}

#[test]
fn metrics_are_served_scraped_and_parsed() {
    let (_dirs, mut e) = always_triggered();
    acted(e.cycle(5_000_000_000, "2026-11-29T12:00:00.000Z"));
    acted(e.cycle(6_000_000_000, "2026-11-29T12:00:01.000Z"));
    e.metrics().reloaded(false);
    let addr =
        oomwarden_daemon::metrics::serve("127.0.0.1:0".parse().unwrap(), e.metrics()).unwrap();
    let (status, body) = http_get(addr, "/metrics");
    assert!(status.contains("200"), "{status}");
    assert!(
        !body.contains("stress-ng") && !body.contains("pod-live"),
        "no command lines or paths"
    );
    let (types, samples) = parse_exposition(&body);
    let kind = |n: &str| types.iter().find(|(t, _)| t == n).map(|(_, k)| k.as_str());
    for (name, want) in [
        ("oomwarden_class_memory_pressure_avg10_ratio", "gauge"),
        ("oomwarden_class_memory_pressure_stalled_seconds", "gauge"),
        ("oomwarden_class_memory_usage_bytes", "gauge"),
        ("oomwarden_node_memory_available_bytes", "gauge"),
        ("oomwarden_trigger_evaluations", "counter"),
        ("oomwarden_trigger_firings", "counter"),
        ("oomwarden_kills", "counter"),
        ("oomwarden_triggers_without_victim", "counter"),
        ("oomwarden_kill_verification_seconds", "histogram"),
        ("oomwarden_cycle_duration_seconds", "histogram"),
        ("oomwarden_evaluation_errors", "counter"),
        ("oomwarden_collection_errors", "counter"),
        ("oomwarden_config_reloads", "counter"),
        ("oomwarden_build_info", "gauge"),
    ] {
        assert_eq!(kind(name), Some(want), "{name}");
    }
    let value = |name: &str, labels: &str| {
        samples
            .iter()
            .find(|(n, l, _)| n == name && l == labels)
            .map(|(_, _, v)| *v)
    };
    assert_eq!(value("oomwarden_trigger_evaluations_total", ""), Some(2.0));
    assert_eq!(value("oomwarden_trigger_firings_total", ""), Some(2.0));
    assert_eq!(
        value(
            "oomwarden_kills_total",
            "class=\"Besteffort\",namespace=\"\",outcome=\"killed\""
        ),
        Some(1.0)
    );
    assert_eq!(
        value("oomwarden_triggers_without_victim_total", ""),
        Some(1.0)
    );
    assert_eq!(
        value("oomwarden_kill_verification_seconds_count", ""),
        Some(1.0)
    );
    assert_eq!(
        value("oomwarden_config_reloads_total", "result=\"failure\""),
        Some(1.0)
    );
    // System = init + system, 14.54 % full each.
    let full = value(
        "oomwarden_class_memory_pressure_avg10_ratio",
        "class=\"System\",kind=\"full\"",
    )
    .unwrap();
    assert!((full - 0.2908).abs() < 1e-9, "{full}");
    assert_eq!(
        value(
            "oomwarden_build_info",
            &format!(
                "commit=\"{}\",version=\"{}\"",
                oomwarden_node::COMMIT,
                env!("CARGO_PKG_VERSION")
            )
        ),
        Some(1.0)
    );
    let (status, _) = http_get(addr, "/");
    assert!(status.contains("404"), "{status}");
}

#[test]
fn hooks_run_around_the_kill_and_a_failing_one_does_not_stop_it() {
    use oomwarden_actuate::{HookCall, HookResult};
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let warden = "hooks:\n  preKill:\n    command: [/usr/local/bin/pre, --flag]\n    timeout: 500ms\n  postKill:\n    command: [/usr/local/bin/post]\n";
    let s = settings("triggerExpression: \"true\"\n", warden, state.path());
    let mut fake = RecordingActuator::new(KillEffect::Empty);
    fake.hook_result = HookResult::TimedOut;
    let recorder = SharedRecorder::new(fake);
    let mut e = engine(cg.path(), proc.path(), s, recorder.clone());
    let r = acted(e.cycle(5_000_000_000, "2026-11-29T12:00:00.000Z"));
    assert_eq!(
        r.outcome,
        Outcome::Killed,
        "a timed-out pre-kill hook does not stop the kill"
    );
    let calls = recorder.lock().calls.clone();
    let pre = calls
        .iter()
        .position(|c| matches!(c, Call::RunHook(_)))
        .unwrap();
    let kill = calls
        .iter()
        .position(|c| matches!(c, Call::WriteCgroupKill(_)))
        .unwrap();
    let post = calls
        .iter()
        .position(|c| matches!(c, Call::SpawnHook(_)))
        .unwrap();
    assert!(pre < kill && kill < post, "{calls:?}");
    let (Call::RunHook(pre), Call::SpawnHook(post)) = (&calls[pre], &calls[post]) else {
        unreachable!()
    };
    assert_eq!(pre.argv, ["/usr/local/bin/pre", "--flag"]);
    assert_eq!(pre.timeout, Duration::from_millis(500));
    let env = |h: &HookCall, k: &str| h.env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    assert_eq!(env(pre, "OOMWARDEN_EVENT").as_deref(), Some("pre-kill"));
    assert_eq!(env(pre, "OOMWARDEN_CLASS").as_deref(), Some("Besteffort"));
    assert_eq!(env(pre, "OOMWARDEN_DRY_RUN").as_deref(), Some("false"));
    assert!(
        env(pre, "OOMWARDEN_VICTIM")
            .unwrap()
            .ends_with("kubepods/besteffort/pod-live")
    );
    assert!(
        !pre.env.iter().any(|(_, v)| v.contains("stress-ng")),
        "no command lines in the environment"
    );
    assert_eq!(env(post, "OOMWARDEN_OUTCOME").as_deref(), Some("killed"));
    assert_eq!(env(post, "OOMWARDEN_PIDS").as_deref(), Some("100 101"));
    assert_eq!(post.timeout, Duration::from_secs(10));
    let sent: ActionRecord = serde_json::from_slice(&post.stdin).unwrap();
    assert_eq!(sent, r, "the post-kill hook gets the record on stdin");
}

#[test]
fn records_say_what_woke_their_cycle() {
    let (_dirs, mut e) = always_triggered();
    let r = acted(e.cycle_on_pressure(1, "t"));
    assert_eq!(r.wakeup, Some(Wakeup::Pressure));
    let r = acted(e.cycle(2, "t"));
    assert_eq!(r.wakeup, Some(Wakeup::Tick));
}

#[test]
fn a_dry_run_runs_the_pre_kill_hook_and_says_so() {
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let warden = "dryRun: true\nhooks:\n  preKill:\n    command: [/usr/local/bin/pre]\n";
    let s = settings("triggerExpression: \"true\"\n", warden, state.path());
    let recorder = SharedRecorder::new(RecordingActuator::new(KillEffect::Empty));
    let mut e = engine(cg.path(), proc.path(), s, recorder.clone());
    assert_eq!(acted(e.cycle(1, "t")).outcome, Outcome::DryRun);
    let calls = recorder.lock().calls.clone();
    assert!(
        !calls.iter().any(|c| matches!(c, Call::WriteCgroupKill(_))),
        "{calls:?}"
    );
    let Some(Call::RunHook(pre)) = calls.first() else {
        panic!("{calls:?}")
    };
    assert!(
        pre.env
            .contains(&("OOMWARDEN_DRY_RUN".to_owned(), "true".to_owned()))
    );
}

/// A ranking that divides by zero gives `+Inf` (cel-go's IEEE division), which is above 0 and
/// so eligible: the victim is chosen, recorded with score "+Inf", and the record is still
/// there, with its id, after a restart.
#[test]
fn an_infinite_score_is_eligible_recorded_and_kept() {
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let mut e = engine(
        cg.path(),
        proc.path(),
        settings(
            "triggerExpression: \"true\"\ncgroupRankingExpression: 'path.endsWith(\"pod-live\") ? 1.0 / 0.0 : 0.0'\n",
            "",
            state.path(),
        ),
        RecordingActuator::new(KillEffect::Empty),
    );
    let r = acted(e.cycle(5_000_000_000, "2026-11-29T12:00:00.000Z"));
    assert_eq!(r.outcome, Outcome::Killed);
    assert_eq!(r.score, f64::INFINITY);
    assert_eq!(
        r.victim.as_deref(),
        Some("/sys/fs/cgroup/kubepods/besteffort/pod-live")
    );
    let line = fs::read_to_string(state.path().join("actions.jsonl")).unwrap();
    assert!(line.contains(r#""score":"+Inf""#), "{line}");
    let (history, warnings) = History::open(state.path()).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        history
            .recent()
            .map(|r| (r.id, r.score))
            .collect::<Vec<_>>(),
        [(0, f64::INFINITY)]
    );
    assert_eq!(history.next_id(), 1);
}

/// The cooldown survives a restart: a new engine on the same history, given the trigger time
/// `restored_trigger` finds in it (what `run` does at start), stays quiet inside the cooldown
/// and acts after it.
#[test]
fn a_restart_inside_the_cooldown_does_not_act_again() {
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let config = || {
        settings(
            "triggerExpression: 'time_since_trigger > duration(\"5s\")'\n",
            "dryRun: true\n",
            state.path(),
        )
    };
    let s = 1_000_000_000_u64;
    let mut first = engine(
        cg.path(),
        proc.path(),
        config(),
        RecordingActuator::new(KillEffect::Empty),
    );
    acted(first.cycle(100 * s, "2026-11-29T12:00:00.000Z"));
    drop(first);
    // Restarted 2 s later.
    let (history, _) = History::open(state.path()).unwrap();
    let last = history.recent().last().unwrap().clone();
    let wall_now = |text: &str| chrono::DateTime::parse_from_rfc3339(text).unwrap().to_utc();
    let at = oomwarden_daemon::history::restored_trigger(
        &last,
        102 * s,
        wall_now("2026-11-29T12:00:02.000Z"),
    )
    .expect("the record is from this boot");
    assert_eq!(at, 100 * s);
    let mut second = Engine::new(EngineParts {
        last_trigger_ns: Some(at),
        ..parts(
            cg.path(),
            proc.path(),
            config(),
            RecordingActuator::new(KillEffect::Empty),
        )
    });
    assert!(matches!(
        second.cycle(103 * s, "2026-11-29T12:00:03.000Z"),
        CycleOutcome::Quiet
    ));
    let again = acted(second.cycle(106 * s, "2026-11-29T12:00:06.000Z"));
    assert_eq!(again.id, 1, "ids continue after the restart");
}

/// Issue 14: idle connections used to take one descriptor (and one thread) each without
/// limit, starving the cycle's cgroup reads. Now at most 32 are held, each new one past that
/// closing the oldest (counted), so a scrape is served at once however many idle clients
/// there are.
#[test]
fn idle_connections_to_the_metrics_port_are_bounded() {
    use oomwarden_daemon::metrics::{MAX_METRICS_CONNECTIONS, Metrics, serve};
    let metrics = std::sync::Arc::new(Metrics::new());
    let addr = serve(
        "127.0.0.1:0".parse().unwrap(),
        std::sync::Arc::clone(&metrics),
    )
    .unwrap();
    let idle: Vec<std::net::TcpStream> = (0..300)
        .map(|_| std::net::TcpStream::connect(addr).unwrap())
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while metrics.bound_hits(oomwarden_daemon::metrics::Bound::MetricsConnections)
        < 300 - MAX_METRICS_CONNECTIONS as u64
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(metrics.metrics_connections() <= i64::try_from(MAX_METRICS_CONNECTIONS).unwrap());
    assert_eq!(
        metrics.bound_hits(oomwarden_daemon::metrics::Bound::MetricsConnections),
        300 - MAX_METRICS_CONNECTIONS as u64
    );
    // A scrape now closes the oldest idle connection and is served.
    let (status, body) = http_get(addr, "/metrics");
    assert!(status.contains("200"), "{status}");
    assert!(
        body.contains("oomwarden_bound_hits_total{bound=\"metrics_connections\"}"),
        "{body}"
    );
    drop(idle);
}

/// Issue 14: one request with a 1 GB header grew the daemon to 2 GB. The request head is
/// bounded (16 KiB): the server stops reading and answers or closes at once.
#[test]
fn an_oversized_request_head_costs_nothing() {
    use oomwarden_daemon::metrics::{Metrics, serve};
    use std::io::{Read, Write};
    let metrics = std::sync::Arc::new(Metrics::new());
    let addr = serve(
        "127.0.0.1:0".parse().unwrap(),
        std::sync::Arc::clone(&metrics),
    )
    .unwrap();
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_write_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let _ = write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ");
    let chunk = vec![b'a'; 64 * 1024];
    let mut sent = 0usize;
    // The server must refuse long before 64 MiB; a write fails once it has closed.
    while sent < 64 << 20 {
        if s.write_all(&chunk).is_err() {
            break;
        }
        sent += chunk.len();
    }
    assert!(
        sent < 64 << 20,
        "the server kept reading a {sent}-byte header"
    );
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 431"),
        "{text}"
    );
    assert!(metrics.bound_hits(oomwarden_daemon::metrics::Bound::MetricsRequestHead) <= 1);
    let (status, _) = http_get(addr, "/metrics");
    assert!(status.contains("200"), "{status}");
}

/// Files that fail with EMFILE once the test says so, as a daemon whose descriptors were all
/// taken by a flood of connections.
#[derive(Debug)]
struct Starved(std::sync::atomic::AtomicBool);

impl oomwarden_cgroupfs::Files for Starved {
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        if self.0.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(std::io::Error::from_raw_os_error(
                rustix::io::Errno::MFILE.raw_os_error(),
            ));
        }
        oomwarden_cgroupfs::Disk.read(path)
    }
    fn subdirs(&self, path: &Path) -> std::io::Result<Vec<String>> {
        oomwarden_cgroupfs::Disk.subdirs(path)
    }
    fn is_dir(&self, path: &Path) -> bool {
        oomwarden_cgroupfs::Disk.is_dir(path)
    }
    fn cgroup_id(&self, path: &Path) -> std::io::Result<u64> {
        oomwarden_cgroupfs::Disk.cgroup_id(path)
    }
}

/// Issue 14: with every descriptor taken, each cgroup read failed, was "counted as missing",
/// pressure read as 0 and the trigger stayed quiet while it should have fired. Now the cycle
/// is skipped with an error that says why, and the next cycle with descriptors acts.
#[test]
fn out_of_descriptors_is_a_skipped_cycle_not_zeros() {
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let files = std::sync::Arc::new(Starved(std::sync::atomic::AtomicBool::new(true)));
    let collector = Collector::new(
        CgroupFs::with_files(cg.path(), files.clone()),
        ProcFs::new(proc.path()),
        Layout::talos(),
        None,
    );
    let settings = settings(
        "triggerExpression: memory_full_avg10 > 12.0\n",
        "",
        state.path(),
    );
    let (history, _) = History::open(&settings.warden.state_dir).unwrap();
    let mut e = Engine::new(EngineParts::new(
        settings,
        collector,
        ProcFs::new(proc.path()),
        history,
        Box::new(RecordingActuator::new(KillEffect::Empty)),
        Box::new(RecordingActuator::new(KillEffect::Empty)),
    ));
    match e.cycle(5_000_000_000, "2026-11-29T12:00:00.000Z") {
        CycleOutcome::Skipped(error) => {
            assert!(
                matches!(&error, oomwarden_policy::Skip::Context(e) if e.contains("the cycle is skipped, not taken as zeros")),
                "{error}"
            );
        }
        other => panic!("expected a skipped cycle, got {other:?}"),
    }
    files.0.store(false, std::sync::atomic::Ordering::SeqCst);
    acted(e.cycle(6_000_000_000, "2026-11-29T12:00:01.000Z"));
}

/// Issue 14: with 17,000 PIDs, `OOMWARDEN_PIDS` passed the kernel's 128 KiB limit on one
/// environment string and the hook could not start (E2BIG). The first 1,000 are listed, the
/// total given; the record on stdin lists the first 16,384 and counts the rest.
#[test]
fn a_post_kill_hook_starts_whatever_the_number_of_pids() {
    use oomwarden_actuate::HookCall;
    let (cg, proc) = node();
    let procs: String = (1000..18_000).map(|p| format!("{p}\n")).collect();
    write(
        cg.path(),
        "kubepods/besteffort/pod-live/c1/cgroup.procs",
        &procs,
    );
    let state = tempfile::tempdir().unwrap();
    let warden = "hooks:\n  postKill:\n    command: [/usr/local/bin/post]\n";
    let s = settings("triggerExpression: \"true\"\n", warden, state.path());
    let recorder = SharedRecorder::new(RecordingActuator::new(KillEffect::Empty));
    let mut e = engine(cg.path(), proc.path(), s, recorder.clone());
    let r = acted(e.cycle(5_000_000_000, "2026-11-29T12:00:00.000Z"));
    assert_eq!(r.pids.len(), oomwarden_model::MAX_PIDS_LISTED);
    assert_eq!(r.pids_omitted, 17_000 - 16_384);
    assert_eq!(r.pids.last(), Some(&(1000 + 16_384 - 1)));
    assert_eq!(r.processes_omitted, 16_900);
    let calls = recorder.lock().calls.clone();
    let post: &HookCall = calls
        .iter()
        .find_map(|c| match c {
            Call::SpawnHook(h) => Some(h),
            _ => None,
        })
        .unwrap();
    let env = |k: &str| {
        post.env
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
    };
    let pids = env("OOMWARDEN_PIDS").unwrap();
    assert_eq!(pids.split(' ').count(), 1000);
    assert!(pids.len() < 128 << 10);
    assert_eq!(env("OOMWARDEN_PIDS_TOTAL").as_deref(), Some("17000"));
    let sent: ActionRecord = serde_json::from_slice(&post.stdin).unwrap();
    assert_eq!(sent.pids_total(), 17_000);
    assert_eq!(sent, r);
    // The record's list is bounded; the kill is not: every PID's memory is released.
    let released = calls
        .iter()
        .filter(|c| matches!(c, Call::ReleaseMemory(_)))
        .count();
    assert_eq!(released, 17_000);
}

/// Issue 14, item 8: a cgroup whose name is not UTF-8 was skipped when listing, so it could
/// grow unseen. It is a candidate like any other: ranked, killed under its own bytes, and
/// shown escaped in the record.
#[test]
fn a_cgroup_named_with_bytes_that_are_not_utf8_is_a_candidate() {
    use std::os::unix::ffi::OsStrExt;
    let (cg, proc) = node();
    let name = std::ffi::OsStr::from_bytes(b"pod-\xff\xfe");
    let dir = cg.path().join("kubepods/besteffort").join(name);
    fs::create_dir_all(dir.join("c1")).unwrap();
    fs::write(dir.join("cgroup.events"), "populated 1\nfrozen 0\n").unwrap();
    // Larger than pod-live: it is the victim.
    fs::write(dir.join("memory.current"), "999000000\n").unwrap();
    fs::write(dir.join("memory.max"), "max\n").unwrap();
    fs::write(dir.join("c1/cgroup.procs"), "100\n").unwrap();
    let state = tempfile::tempdir().unwrap();
    let s = settings("triggerExpression: \"true\"\n", "", state.path());
    let recorder = SharedRecorder::new(RecordingActuator::new(KillEffect::Empty));
    let mut e = engine(cg.path(), proc.path(), s, recorder.clone());
    let r = acted(e.cycle(5_000_000_000, "2026-11-29T12:00:00.000Z"));
    assert_eq!(r.outcome, Outcome::Killed);
    assert_eq!(
        r.victim.as_deref(),
        Some("/sys/fs/cgroup/kubepods/besteffort/pod-\\xff\\xfe")
    );
    assert_eq!(r.pids, [100]);
    let calls = recorder.lock().calls.clone();
    assert!(
        calls.contains(&Call::WriteCgroupKill(dir.clone())),
        "cgroup.kill is written under the name's own bytes: {calls:?}"
    );
}

/// Issue 14, item 1: the history's bound being hit is counted and said once, like every bound.
#[test]
fn the_history_bound_is_counted() {
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    fs::set_permissions(
        state.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let s = settings(
        "triggerExpression: \"true\"\n",
        "dryRun: true\n",
        state.path(),
    );
    let (history, _) = History::open(state.path()).unwrap();
    let collector = Collector::new(
        CgroupFs::new(cg.path()),
        ProcFs::new(proc.path()),
        Layout::talos(),
        None,
    );
    let mut e = Engine::new(EngineParts::new(
        s,
        collector,
        ProcFs::new(proc.path()),
        history.with_bounds(3, 2),
        Box::new(RecordingActuator::new(KillEffect::Empty)),
        Box::new(RecordingActuator::new(KillEffect::Empty)),
    ));
    for i in 0..4u64 {
        acted(e.cycle((5 + i) * 1_000_000_000, "2026-11-29T12:00:00.000Z"));
    }
    assert_eq!(
        e.metrics()
            .bound_hits(oomwarden_daemon::metrics::Bound::History),
        1
    );
    assert_eq!(persisted(state.path()).len(), 2);
}

/// Issue 15: the pre-kill hook may run for a minute between the choice and the kill, and a
/// restarted unit or a new pod sandbox takes the same path. A cgroup replaced meanwhile is
/// not killed: the record says `gone`, and nothing is written to `cgroup.kill`.
#[test]
fn a_cgroup_replaced_during_the_pre_kill_hook_is_gone() {
    /// Hooks whose pre-kill hook replaces the victim's cgroup by another at the same path.
    #[derive(Debug)]
    struct Replacing {
        inner: RecordingActuator,
        victim: std::path::PathBuf,
    }
    impl oomwarden_actuate::Hooks for Replacing {
        fn run_hook(
            &mut self,
            hook: &oomwarden_actuate::HookCall,
        ) -> oomwarden_actuate::HookResult {
            // Renamed away (its inode stays in use) and a new cgroup made at its path.
            let away = self.victim.with_file_name("replaced-away");
            fs::rename(&self.victim, away).unwrap();
            write(&self.victim, "cgroup.events", "populated 1\nfrozen 0\n");
            write(&self.victim, "new/cgroup.procs", "101\n");
            self.inner.run_hook(hook)
        }
        fn spawn_hook(&mut self, hook: oomwarden_actuate::HookCall) {
            self.inner.spawn_hook(hook);
        }
    }
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let warden = "hooks:\n  preKill:\n    command: [/usr/local/bin/pre]\n";
    let s = settings("triggerExpression: \"true\"\n", warden, state.path());
    let victim = cg.path().join("kubepods/besteffort/pod-live");
    let mut e = engine_with(
        cg.path(),
        proc.path(),
        s,
        Box::new(RecordingActuator::new(KillEffect::Empty)),
        Box::new(Replacing {
            inner: RecordingActuator::new(KillEffect::Empty),
            victim: victim.clone(),
        }),
    );
    let r = acted(e.cycle(5_000_000_000, "2026-11-29T12:00:00.000Z"));
    assert_eq!(r.outcome, Outcome::Gone, "{r:?}");
    assert_eq!(
        r.victim.as_deref(),
        Some("/sys/fs/cgroup/kubepods/besteffort/pod-live")
    );
    assert!(
        r.error
            .as_deref()
            .is_some_and(|e| e.contains("another cgroup has taken its path")),
        "{r:?}"
    );
    assert!(r.pids.is_empty() && r.kill_duration_ms.is_none(), "{r:?}");
    // The fake's `cgroup.kill` would have emptied every `cgroup.procs` below it.
    assert_eq!(
        fs::read_to_string(victim.join("new/cgroup.procs")).unwrap(),
        "101\n",
        "the newcomer is untouched"
    );
    assert_eq!(persisted(state.path())[0].outcome, Outcome::Gone);
    assert_eq!(
        serde_json::to_value(&r).unwrap()["outcome"],
        serde_json::json!("gone")
    );
}

/// Issue 15, item 5: a ranking error that repeats in every triggered cycle is logged once a
/// minute per cgroup, and the line after the minute says how many were left out.
#[test]
fn a_ranking_error_repeated_every_cycle_is_logged_once_a_minute_with_the_count() {
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let mut e = Engine::new(EngineParts {
        // Each unverified kill waits out killTimeout: on a virtual clock, without waiting.
        clock: Box::new(oomwarden_actuate::VirtualClock::new()),
        ..parts(
            cg.path(),
            proc.path(),
            settings(
                "triggerExpression: \"true\"\ncgroupRankingExpression: 'memory_max.value() > 0u ? 1.0 : 2.0'\n",
                "",
                state.path(),
            ),
            RecordingActuator::new(KillEffect::Nothing),
        )
    });
    let second = 1_000_000_000;
    let logs = oomwarden_testkit::capture_logs(|| {
        for t in 1..=5 {
            e.cycle(t * second, "2026-12-01T00:00:00.000Z");
        }
        e.cycle(70 * second, "2026-12-01T00:01:10.000Z");
    });
    let lines: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("cannot calculate score for cgroup") && l.contains("pod-live"))
        .collect();
    assert_eq!(lines.len(), 2, "{logs}");
    assert!(lines[0].contains("left_out=0"), "{}", lines[0]);
    assert!(lines[1].contains("left_out=4"), "{}", lines[1]);
    assert!(lines[0].contains("optional has no value"), "{}", lines[0]);
    // Every cycle still ranked (and counted the error): only the log is limited.
    assert_eq!(e.history().recent().count(), 6);
}

/// Issue 16: a ranking that exempts a namespace spares the larger pod, and the record names
/// the victim as its users know it (namespace, pod, container names, where that came from).
#[test]
fn a_namespace_exemption_spares_a_pod_and_the_record_names_the_victim() {
    use oomwarden_model::{ContainerIdentity, Identities, IdentitySource, PodIdentity};
    let system_uid = "6b86b273-ff34-4fce-96e3-6b3e0e2d5a2f";
    let shop_uid = "d4735e3a-265e-4ce8-a0f0-2c7a1b3e2f4a";
    let ctr = "a".repeat(64);
    let cg = tempfile::tempdir().unwrap();
    let r = cg.path();
    write(r, "memory.pressure", HOT);
    besteffort_pods(
        r,
        &[
            (system_uid, "900000000\n", "100\n"),
            (shop_uid, "200000000\n", "200\n"),
        ],
        &ctr,
    );
    let proc = tempfile::tempdir().unwrap();
    write(proc.path(), "100/cmdline", "coredns\0");
    write(proc.path(), "200/cmdline", "nginx\0");
    let state = tempfile::tempdir().unwrap();
    let fake = SharedRecorder::new(RecordingActuator::new(KillEffect::Empty));
    let mut e = engine_with(
        r,
        proc.path(),
        settings(
            "triggerExpression: \"true\"\ncgroupRankingExpression: 'pod_namespace == \"kube-system\" ? 0.0 : double(memory_current.orValue(0u))'\n",
            "",
            state.path(),
        ),
        Box::new(fake.clone()),
        Box::new(fake),
    );
    let mut ids = Identities::default();
    for (uid, ns, name) in [
        (system_uid, "kube-system", "coredns-1"),
        (shop_uid, "shop", "web-1"),
    ] {
        ids.pods.insert(
            uid.to_owned(),
            PodIdentity {
                uid: uid.to_owned(),
                namespace: ns.to_owned(),
                name: name.to_owned(),
                containers: vec!["main".to_owned()],
                source: IdentitySource::Cri,
                ..PodIdentity::default()
            },
        );
    }
    // The same container id under both pods in this fixture: it names the shop pod's.
    ids.containers.insert(
        ctr.clone(),
        ContainerIdentity {
            id: ctr.clone(),
            name: "main".to_owned(),
            image: "nginx:1".to_owned(),
            pod_uid: shop_uid.to_owned(),
        },
    );
    e.set_identity(oomwarden_identity::Cache::fixed(ids, IdentitySource::Cri));
    let mut outcome = None;
    let logs = oomwarden_testkit::capture_logs(|| {
        outcome = Some(e.cycle(1_000_000_000, "2026-12-01T00:00:00.000Z"));
    });
    let rec = acted(outcome.unwrap());
    assert_eq!(
        rec.pod_uid.as_deref(),
        Some(shop_uid),
        "kube-system is exempt"
    );
    assert_eq!(rec.namespace.as_deref(), Some("shop"));
    assert_eq!(rec.pod_name.as_deref(), Some("web-1"));
    assert_eq!(rec.container_names, ["main"]);
    assert_eq!(rec.identity_source, Some(IdentitySource::Cri));
    assert!(
        logs.lines().any(
            |l| l.contains("victim{pod=shop/web-1}") && l.contains("Sending SIGKILL to cgroup")
        ),
        "{logs}"
    );
    let text = e.metrics().encode();
    assert!(
        text.contains(
            "oomwarden_kills_total{class=\"Besteffort\",outcome=\"killed\",namespace=\"shop\"} 1"
        ),
        "{text}"
    );
}

/// A process of a fixture: PID, command line, `oom_score_adj`.
type Process<'a> = (&'a str, &'a str, &'a str);

/// A Talos node with one BestEffort pod `uid` (500 MB, pressure everywhere) whose child
/// cgroups hold the given processes: `(child, [(pid, cmdline, oom_score_adj)])`.
fn pod_with_children(
    uid: &str,
    children: &[(&str, &[Process<'_>])],
) -> (tempfile::TempDir, tempfile::TempDir, String) {
    let cg = tempfile::tempdir().unwrap();
    let r = cg.path();
    write(r, "memory.pressure", HOT);
    let pod = format!("kubepods/besteffort/pod{uid}");
    write(
        r,
        &format!("{pod}/cgroup.events"),
        "populated 1\nfrozen 0\n",
    );
    write(r, &format!("{pod}/memory.current"), "500000000\n");
    write(r, &format!("{pod}/memory.max"), "max\n");
    let proc = tempfile::tempdir().unwrap();
    for (child, processes) in children {
        let pids: String = processes
            .iter()
            .map(|(pid, _, _)| format!("{pid}\n"))
            .collect();
        write(r, &format!("{pod}/{child}/cgroup.procs"), &pids);
        for (pid, cmd, adj) in *processes {
            write(proc.path(), &format!("{pid}/cmdline"), cmd);
            write(proc.path(), &format!("{pid}/oom_score_adj"), adj);
        }
    }
    (cg, proc, pod)
}

/// An engine that fires at once with `killScope: containers`, acting through `fake`.
fn containers_engine(
    r: &std::path::Path,
    proc: &std::path::Path,
    state: &std::path::Path,
    fake: &SharedRecorder,
) -> Engine {
    engine_with(
        r,
        proc,
        settings(
            "triggerExpression: \"true\"\n",
            "killScope: containers\n",
            state,
        ),
        Box::new(fake.clone()),
        Box::new(fake.clone()),
    )
}

/// The cgroups `fake` wrote `cgroup.kill` to, in order.
fn cgroup_kill_writes(fake: &SharedRecorder) -> Vec<std::path::PathBuf> {
    fake.lock()
        .calls
        .iter()
        .filter_map(|c| match c {
            Call::WriteCgroupKill(dir) => Some(dir.clone()),
            _ => None,
        })
        .collect()
}

/// Issue 36: a pod with more child cgroups than a kill by containers takes (a pod that makes
/// cgroups of its own, KEP-5474) is killed whole under `killScope: containers`: one
/// `cgroup.kill` on the pod, `killScope: pod` in the record, the bound counted.
#[test]
fn kill_scope_containers_kills_a_pod_of_too_many_cgroups_whole() {
    let uid = "d4735e3a-265e-4ce8-a0f0-2c7a1b3e2f4b";
    let names: Vec<String> = (0..300).map(|i| format!("{i:064x}")).collect();
    let app: &[Process<'_>] = &[("20", "app\0", "1000\n")];
    let children: Vec<(&str, &[Process<'_>])> = names.iter().map(|n| (n.as_str(), app)).collect();
    let (cg, proc, pod) = pod_with_children(uid, &children);
    let r = cg.path();
    let state = tempfile::tempdir().unwrap();
    let fake = SharedRecorder::new(RecordingActuator::new(KillEffect::Empty));
    let mut e = containers_engine(r, proc.path(), state.path(), &fake);
    let rec = acted(e.cycle(1_000_000_000, "2026-12-01T00:00:00.000Z"));
    assert_eq!(rec.outcome, Outcome::Killed, "{rec:?}");
    assert_eq!(rec.kill_scope, Some(oomwarden_model::KillScope::Pod));
    let writes = cgroup_kill_writes(&fake);
    assert_eq!(writes, [r.join(&pod)]);
    let text = e.metrics().encode();
    assert!(
        text.contains("oomwarden_bound_hits_total{bound=\"kill_parts\"} 1"),
        "{text}"
    );
}

/// Issue 16, item 4: `killScope: containers` kills each container cgroup of the pod and spares
/// the sandbox, told apart here without a runtime by its pause process's oom_score_adj (−998).
#[test]
fn kill_scope_containers_spares_the_sandbox() {
    let uid = "d4735e3a-265e-4ce8-a0f0-2c7a1b3e2f4a";
    let (sandbox, app) = ("s".repeat(64), "a".repeat(64));
    let (cg, proc, pod) = pod_with_children(
        uid,
        &[
            (&sandbox, &[("10", "/pause\0", "-998\n")]),
            (
                &app,
                &[("20", "app\0", "1000\n"), ("21", "app\0-w\0", "1000\n")],
            ),
        ],
    );
    let r = cg.path();
    let state = tempfile::tempdir().unwrap();
    let fake = SharedRecorder::new(RecordingActuator::new(KillEffect::Empty));
    let mut e = containers_engine(r, proc.path(), state.path(), &fake);
    let rec = acted(e.cycle(1_000_000_000, "2026-12-01T00:00:00.000Z"));
    assert_eq!(rec.outcome, Outcome::Killed, "{rec:?}");
    assert_eq!(rec.kill_scope, Some(oomwarden_model::KillScope::Containers));
    let app_path = format!("/sys/fs/cgroup/{pod}/{app}");
    assert_eq!(rec.killed_cgroups, [app_path]);
    assert_eq!(rec.pids, [20, 21], "the pause process is spared");
    let writes = cgroup_kill_writes(&fake);
    assert_eq!(writes, [r.join(&pod).join(&app)]);
    // The default scope kills the whole pod, sandbox included, as Talos does.
    let state = tempfile::tempdir().unwrap();
    write(r, &format!("{pod}/{app}/cgroup.procs"), "20\n21\n");
    write(r, &format!("{pod}/{sandbox}/cgroup.procs"), "10\n");
    write(
        r,
        &format!("{pod}/cgroup.events"),
        "populated 1\nfrozen 0\n",
    );
    let fake = SharedRecorder::new(RecordingActuator::new(KillEffect::Empty));
    let mut e = engine_with(
        r,
        proc.path(),
        settings("triggerExpression: \"true\"\n", "", state.path()),
        Box::new(fake.clone()),
        Box::new(fake.clone()),
    );
    let rec = acted(e.cycle(1_000_000_000, "2026-12-01T00:00:00.000Z"));
    assert_eq!(rec.kill_scope, Some(oomwarden_model::KillScope::Pod));
    assert!(rec.killed_cgroups.is_empty());
    assert_eq!(rec.pids, [20, 21, 10]);
}

/// Issue 34: `killMethod: kernel-oom` asks the kernel's OOM killer of each container (the
/// sandbox spared, whatever `killScope` says: a container reaching its own limit ends so), no
/// `cgroup.kill`; the record says the method; the engine knows the kill as its own when the
/// kernel's report comes (`orderedBy`).
#[test]
fn kill_method_kernel_oom_asks_the_kernel_for_each_container() {
    let uid = "d4735e3a-265e-4ce8-a0f0-2c7a1b3e2f4a";
    let (sandbox, app) = ("s".repeat(64), "a".repeat(64));
    let (cg, proc, pod) = pod_with_children(
        uid,
        &[
            (&sandbox, &[("10", "/pause\0", "-998\n")]),
            (&app, &[("20", "app\0", "1000\n")]),
        ],
    );
    let r = cg.path();
    let state = tempfile::tempdir().unwrap();
    let fake = SharedRecorder::new(RecordingActuator::new(KillEffect::Empty));
    let mut e = engine_with(
        r,
        proc.path(),
        settings(
            "triggerExpression: \"true\"\n",
            "killMethod: kernel-oom\n",
            state.path(),
        ),
        Box::new(fake.clone()),
        Box::new(fake.clone()),
    );
    let rec = acted(e.cycle(1_000_000_000, "2026-12-01T00:00:00.000Z"));
    assert_eq!(rec.outcome, Outcome::Killed, "{rec:?}");
    assert_eq!(
        rec.kill_method,
        Some(oomwarden_model::KillMethod::KernelOom)
    );
    assert!(!rec.kill_fallback);
    assert_eq!(rec.kill_scope, Some(oomwarden_model::KillScope::Containers));
    assert_eq!(rec.pids, [20], "the pause process is spared");
    let calls = fake.lock().calls.clone();
    assert_eq!(calls, [Call::StartMemcgOom(r.join(&pod).join(&app))]);
    let line = std::fs::read_to_string(state.path().join("actions.jsonl")).unwrap();
    assert!(line.contains("\"killMethod\":\"kernel-oom\""), "{line}");
    // The kernel's report of that kill names the container's memcg: it is the one asked for.
    let memcg = format!("/{pod}/{app}");
    assert_eq!(e.ordered_by(&memcg, 2_000_000_000), Some(rec.id));
    assert_eq!(
        e.ordered_by(&format!("/{pod}/{sandbox}"), 2_000_000_000),
        None
    );
    assert_eq!(
        e.ordered_by(&memcg, 1_000_000_000 + 121_000_000_000),
        None,
        "only for two minutes"
    );
}

/// A pod made after the last identity refresh is named within seconds, while the cycles are
/// still quiet: a namespace or label exemption must hold for it when the trigger fires (s15
/// found a 30 s refresh leaving a new kube-system pod unnamed, and killed).
#[test]
fn a_new_pod_is_named_before_any_trigger_fires() {
    let (cg, proc) = node();
    let uid = "6983351e-0001-4c1b-9a3e-0f5d2b7c0001";
    let logs = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let mut e = engine(
        cg.path(),
        proc.path(),
        settings("triggerExpression: \"false\"\n", "", state.path()),
        RecordingActuator::new(KillEffect::Empty),
    );
    let cache = oomwarden_identity::Cache::start(oomwarden_identity::Config {
        endpoint: oomwarden_identity::Endpoint::Off,
        pod_logs: logs.path().to_owned(),
        // Far away: only a request can refresh within this test.
        refresh_every: Duration::from_secs(600),
        timeout: Duration::from_secs(1),
    })
    .unwrap();
    let started = std::time::Instant::now();
    while cache.status().refreshes < 1 && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    e.set_identity(cache.clone());
    // The pod appears after the first refresh.
    write(
        cg.path(),
        &format!("kubepods/besteffort/pod{uid}/cgroup.events"),
        "populated 1\nfrozen 0\n",
    );
    write(
        logs.path(),
        &format!("kube-system_coredns-1_{uid}/coredns/0.log"),
        "",
    );
    let mut now = 1_000_000_000;
    while cache.snapshot().pod(uid).is_none() && started.elapsed() < Duration::from_secs(20) {
        assert!(matches!(
            e.cycle(now, "2026-12-01T00:00:00.000Z"),
            CycleOutcome::Quiet
        ));
        now += 500_000_000;
        std::thread::sleep(Duration::from_millis(100));
    }
    cache.stop();
    assert_eq!(
        cache.snapshot().pod(uid).map(|p| p.qualified_name()),
        Some("kube-system/coredns-1".to_owned()),
        "named by a refresh the quiet cycles asked for"
    );
}

/// `killScope: containers` with a container restarted since the last identity refresh: the
/// runtime names the sidecar but not the new hog (its ID is new). The hog must be killed with
/// the sidecar, the sandbox (−998) spared: sparing every unnamed child spared the memory (the
/// rule before s14).
#[test]
fn kill_scope_containers_kills_a_container_nobody_has_named_yet() {
    use oomwarden_model::{ContainerIdentity, Identities, IdentitySource, PodIdentity};
    let uid = "d4735e3a-265e-4ce8-a0f0-2c7a1b3e2f4a";
    let (sandbox, sidecar, hog) = ("b".repeat(64), "c".repeat(64), "d".repeat(64));
    let (cg, proc, pod) = pod_with_children(
        uid,
        &[
            (&sandbox, &[("10", "/pause\0", "-998\n")]),
            (&sidecar, &[("20", "/pause\0", "1000\n")]),
            (&hog, &[("30", "/hog\0", "1000\n")]),
        ],
    );
    let r = cg.path();
    let state = tempfile::tempdir().unwrap();
    let fake = SharedRecorder::new(RecordingActuator::new(KillEffect::Empty));
    let mut e = engine_with(
        r,
        proc.path(),
        settings(
            "triggerExpression: \"true\"\n",
            "killScope: containers\n",
            state.path(),
        ),
        Box::new(fake.clone()),
        Box::new(fake.clone()),
    );
    let mut ids = Identities::default();
    ids.pods.insert(
        uid.to_owned(),
        PodIdentity {
            uid: uid.to_owned(),
            namespace: "batch".to_owned(),
            name: "storm".to_owned(),
            containers: vec!["hog".to_owned(), "sidecar".to_owned()],
            source: IdentitySource::Cri,
            ..PodIdentity::default()
        },
    );
    ids.containers.insert(
        sidecar.clone(),
        ContainerIdentity {
            id: sidecar.clone(),
            name: "sidecar".to_owned(),
            image: "pause".to_owned(),
            pod_uid: uid.to_owned(),
        },
    );
    e.set_identity(oomwarden_identity::Cache::fixed(ids, IdentitySource::Cri));
    let rec = acted(e.cycle(1_000_000_000, "2026-12-01T00:00:00.000Z"));
    assert_eq!(rec.outcome, Outcome::Killed, "{rec:?}");
    assert_eq!(rec.kill_scope, Some(oomwarden_model::KillScope::Containers));
    let mut killed = rec.killed_cgroups.clone();
    killed.sort();
    assert_eq!(
        killed,
        [
            format!("/sys/fs/cgroup/{pod}/{sidecar}"),
            format!("/sys/fs/cgroup/{pod}/{hog}")
        ]
    );
    let mut pids = rec.pids.clone();
    pids.sort_unstable();
    assert_eq!(
        pids,
        [20, 30],
        "the pause process is spared, the hog is not"
    );
}

/// A node whose BestEffort pod is named `shop/cart-1` by the runtime, with Events sent to a
/// fake API server (`oomwarden_testkit::apiserver`, which checks each request as the real one
/// does: no real API server runs here).
fn node_with_events(
    server: &oomwarden_testkit::apiserver::FakeApiServer,
    dry_run: bool,
) -> (Dirs, tempfile::TempDir, Engine) {
    node_with_events_and(server, dry_run, "")
}

/// The same, with more lines in the `events` section (`  podCondition: true\n`).
fn node_with_events_and(
    server: &oomwarden_testkit::apiserver::FakeApiServer,
    dry_run: bool,
    events: &str,
) -> (Dirs, tempfile::TempDir, Engine) {
    use oomwarden_model::{Identities, IdentitySource, PodIdentity};
    let (cg, proc) = node();
    let uid = "5a5a5a5a-0000-4000-8000-000000000001";
    let pod = format!("kubepods/besteffort/pod{uid}");
    write(
        cg.path(),
        &format!("{pod}/cgroup.events"),
        "populated 1\nfrozen 0\n",
    );
    write(cg.path(), &format!("{pod}/memory.current"), "999999999\n");
    write(cg.path(), &format!("{pod}/memory.max"), "max\n");
    let container = "c".repeat(64);
    write(
        cg.path(),
        &format!("{pod}/{container}/cgroup.procs"),
        "100\n",
    );
    // A working set of 900 MiB: 1000 MiB in use, 100 MiB of it inactive page cache.
    write(
        cg.path(),
        &format!("{pod}/{container}/memory.current"),
        &format!("{}\n", 1000u64 << 20),
    );
    write(
        cg.path(),
        &format!("{pod}/{container}/memory.stat"),
        &format!("anon {}\ninactive_file {}\n", 900u64 << 20, 100u64 << 20),
    );
    let state = tempfile::tempdir().unwrap();
    let kube = tempfile::tempdir().unwrap();
    let kubeconfig = server.kubeconfig(kube.path());
    let warden = format!(
        "dryRun: {dry_run}\nevents:\n  enabled: true\n  kubeconfig: {}\n  nodeName: worker-1\n{events}",
        kubeconfig.display()
    );
    let mut e = engine(
        cg.path(),
        proc.path(),
        settings(
            "triggerExpression: \"memory_full_avg10 > 12.0\"\n",
            &warden,
            state.path(),
        ),
        RecordingActuator::new(KillEffect::Empty),
    );
    let mut ids = Identities::default();
    ids.containers.insert(
        container.clone(),
        oomwarden_model::ContainerIdentity {
            id: container.clone(),
            name: "cart".to_owned(),
            pod_uid: uid.to_owned(),
            ..oomwarden_model::ContainerIdentity::default()
        },
    );
    ids.pods.insert(
        uid.to_owned(),
        PodIdentity {
            uid: uid.to_owned(),
            namespace: "shop".to_owned(),
            name: "cart-1".to_owned(),
            containers: vec!["cart".to_owned()],
            source: IdentitySource::Cri,
            ..PodIdentity::default()
        },
    );
    e.set_identity(oomwarden_identity::Cache::fixed(ids, IdentitySource::Cri));
    let options = oomwarden_daemon::events_options(&e.settings().warden.events);
    e.set_events(Some(oomwarden_events::Events::start(options).unwrap()));
    (
        Dirs {
            _cg: cg,
            _proc: proc,
            state,
        },
        kube,
        e,
    )
}

fn wait_for_created(
    server: &oomwarden_testkit::apiserver::FakeApiServer,
    n: usize,
) -> Vec<serde_json::Value> {
    let end = std::time::Instant::now() + Duration::from_secs(20);
    while server.created().len() < n && std::time::Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    server.created()
}

/// Issue 17: a kill makes a Warning Event on the Pod and one on the Node, after its record
/// is written; every request is one the API server accepts; the metrics count them.
#[test]
fn a_kill_makes_two_kubernetes_events() {
    let server = oomwarden_testkit::apiserver::FakeApiServer::start();
    let (dirs, _kube, mut e) = node_with_events(&server, false);
    let rec = acted(e.cycle(5_000_000_000, "2026-11-29T12:00:00.000Z"));
    assert_eq!(rec.outcome, Outcome::Killed);
    assert_eq!(
        persisted(dirs.state.path()).len(),
        1,
        "the record is written first"
    );
    let created = wait_for_created(&server, 2);
    assert_eq!(created.len(), 2, "{:?}", server.requests());
    assert!(server.requests().iter().all(|r| r.problems.is_empty()));
    let (pod, node) = (&created[0], &created[1]);
    assert_eq!(pod["metadata"]["namespace"], "shop");
    assert_eq!(pod["regarding"]["name"], "cart-1");
    assert_eq!(pod["reason"], "OOMWardenKilled");
    assert_eq!(pod["type"], "Warning");
    // In the kubelet's words, as an eviction's Event says it (issue 34).
    assert_eq!(rec.container_names, ["cart"]);
    assert_eq!(rec.container_working_set_bytes, [Some(900 << 20)]);
    assert_eq!(
        pod["metadata"]["annotations"]["offending_containers"],
        "cart"
    );
    assert_eq!(
        pod["metadata"]["annotations"]["offending_containers_usage"],
        "900Mi"
    );
    assert_eq!(pod["metadata"]["annotations"]["starved_resource"], "memory");
    let note = pod["note"].as_str().unwrap();
    assert!(
        note.starts_with(
            "oomwarden killed this pod on node worker-1: class Besteffort, score 999999999"
        ),
        "{note}"
    );
    assert!(note.contains("memory_full_avg10 = 14.54 > 12.0"), "{note}");
    assert!(note.contains(&format!("record {}", rec.id)), "{note}");
    assert_eq!(node["metadata"]["namespace"], "default");
    assert_eq!(node["regarding"]["kind"], "Node");
    assert_eq!(node["regarding"]["name"], "worker-1");
    // The next cycle's metrics count them (once the client has the answers: the server
    // records a create before its answer reaches the sender).
    let end = std::time::Instant::now() + Duration::from_secs(20);
    while e.events().unwrap().counts().sent < 2 && std::time::Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    e.cycle(6_000_000_000, "2026-11-29T12:00:01.000Z");
    let text = e.metrics().encode();
    assert!(text.contains("oomwarden_events_sent_total 2\n"), "{text}");
    assert!(
        text.contains("oomwarden_events_dropped_total{reason=\"queue-full\"} 0\n"),
        "{text}"
    );
}

/// Issue 34: with `events.podCondition`, the killed pod gets the kubelet's `DisruptionTarget`
/// condition, guarded by its UID; the metrics count it.
#[test]
fn a_kill_sets_the_pods_disruption_target_condition() {
    let server = oomwarden_testkit::apiserver::FakeApiServer::start();
    server.add_pod("shop", "cart-1", "5a5a5a5a-0000-4000-8000-000000000001");
    let (_dirs, _kube, mut e) = node_with_events_and(&server, false, "  podCondition: true\n");
    let rec = acted(e.cycle(5_000_000_000, "2026-11-29T12:00:00.000Z"));
    assert_eq!(rec.outcome, Outcome::Killed);
    let end = std::time::Instant::now() + Duration::from_secs(20);
    while e.events().unwrap().counts().conditions_set < 1 && std::time::Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    let conditions = server.pod_conditions("shop", "cart-1");
    assert_eq!(conditions.len(), 1, "{:?}", server.requests());
    assert_eq!(conditions[0]["type"], "DisruptionTarget");
    assert_eq!(conditions[0]["reason"], "TerminationByOOMWarden");
    assert!(server.requests().iter().all(|r| r.problems.is_empty()));
    e.cycle(6_000_000_000, "2026-11-29T12:00:01.000Z");
    let text = e.metrics().encode();
    assert!(
        text.contains("oomwarden_pod_conditions_set_total 1\n"),
        "{text}"
    );
    assert!(
        text.contains("oomwarden_pod_conditions_dropped_total{reason=\"rejected\"} 0\n"),
        "{text}"
    );
}

/// Issue 34: a kill's record names its workload (the pod's owner from its labels; here a pod
/// without any, so the pod itself), and the history counts it for the ranking's
/// `workload_kills` for an hour.
#[test]
fn a_kill_is_counted_for_its_workload() {
    let server = oomwarden_testkit::apiserver::FakeApiServer::start();
    let (_dirs, _kube, mut e) = node_with_events(&server, false);
    let rec = acted(e.cycle(5_000_000_000, "2026-11-29T12:00:00.000Z"));
    let workload = rec.workload.clone().expect("the pod is known");
    assert_eq!(workload.to_string(), "shop/Pod/cart-1");
    assert_eq!(e.history().workload_kills(6_000_000_000).get(&workload), 1);
    assert_eq!(
        e.history()
            .workload_kills(5_000_000_000 + 3_601_000_000_000)
            .get(&workload),
        0,
        "an hour later it is forgotten"
    );
}

#[test]
fn a_dry_run_makes_would_kill_events() {
    let server = oomwarden_testkit::apiserver::FakeApiServer::start();
    let (_dirs, _kube, mut e) = node_with_events(&server, true);
    let r = acted(e.cycle(5_000_000_000, "2026-11-29T12:00:00.000Z"));
    assert_eq!(r.outcome, Outcome::DryRun);
    let created = wait_for_created(&server, 2);
    assert_eq!(created.len(), 2, "{:?}", server.requests());
    assert!(
        created.iter().all(|c| c["reason"] == "OOMWardenWouldKill"),
        "{created:?}"
    );
}

/// An API server that never answers costs the cycle nothing: the kill and its record come as
/// fast as without Events; what cannot be sent is dropped and counted.
#[test]
fn a_hanging_api_server_never_delays_a_kill() {
    use oomwarden_testkit::apiserver::Reply;
    let server = oomwarden_testkit::apiserver::FakeApiServer::start();
    server.script((0..1000).map(|_| Reply::Delay(Duration::from_secs(60))));
    let (_dirs, _kube, mut e) = node_with_events(&server, true);
    for i in 0..100u64 {
        let t = std::time::Instant::now();
        // A dry run acts every cycle (the trigger holds, nothing is killed).
        let wall = format!("2026-11-29T12:{:02}:{:02}.000Z", i / 60, i % 60);
        let r = acted(e.cycle(5_000_000_000 + i * 1_000_000_000, &wall));
        assert_eq!(r.outcome, Outcome::DryRun);
        // The server holds every answer 60 s: a cycle that waited on it would take that long.
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "cycle {i}: {:?}",
            t.elapsed()
        );
    }
    let text = e.metrics().encode();
    let dropped: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("oomwarden_events_dropped_total{reason=\"queue-full\"} "))
        .and_then(|n| n.parse().ok())
        .unwrap();
    // 64 records wait in the queue, one is being sent: the others' Events are dropped.
    assert!(dropped >= 2 * (100 - 66), "{dropped}\n{text}");
}

/// Found by the fault suite (issue 32): at start the first cycle ranked with an empty identity
/// cache and killed (in dry run) the pod labelled `oomwarden.io/protect=true`, 8 ms before
/// the runtime's first answer. The first ranking now waits, bounded, for that answer; the
/// record names the sandbox apart from the containers and says how old the identities were.
#[test]
fn the_first_cycle_after_a_start_ranks_with_the_runtimes_answer() {
    let protected_uid = "6b86b273-ff34-4fce-96e3-6b3e0e2d5a2f";
    let other_uid = "d4735e3a-265e-4ce8-a0f0-2c7a1b3e2f4a";
    let sandbox_id = "b".repeat(64);
    let ctr = "a".repeat(64);
    let cg = tempfile::tempdir().unwrap();
    let r = cg.path();
    write(r, "memory.pressure", HOT);
    besteffort_pods(
        r,
        &[
            (protected_uid, "900000000\n", "100\n"),
            (other_uid, "200000000\n", "200\n"),
        ],
        &ctr,
    );
    for uid in [protected_uid, other_uid] {
        let procs = format!("kubepods/besteffort/pod{uid}/{sandbox_id}/cgroup.procs");
        write(r, &procs, "");
    }
    let proc = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let fake = SharedRecorder::new(RecordingActuator::new(KillEffect::Empty));
    let mut e = engine_with(
        r,
        proc.path(),
        settings(
            "triggerExpression: \"true\"\ncgroupRankingExpression: 'labels[?\"oomwarden.io/protect\"].orValue(\"\") == \"true\" ? 0.0 : double(memory_current.orValue(0u))'\n",
            "dryRun: true\n",
            state.path(),
        ),
        Box::new(fake.clone()),
        Box::new(fake),
    );
    let dir = tempfile::tempdir().unwrap();
    let cri = slow_runtime(dir.path(), protected_uid, other_uid, &sandbox_id, &ctr);
    let cache = oomwarden_identity::Cache::start(oomwarden_identity::Config {
        endpoint: oomwarden_identity::Endpoint::Unix(cri.socket().to_owned()),
        pod_logs: dir.path().join("no-pod-logs"),
        refresh_every: Duration::from_secs(600),
        timeout: Duration::from_secs(10),
    })
    .unwrap();
    e.set_identity(cache.clone());
    let rec = acted(e.cycle(1_000_000_000, "2026-12-01T00:00:00.000Z"));
    cache.stop();
    assert_eq!(
        rec.pod_uid.as_deref(),
        Some(other_uid),
        "the protected pod is spared in the very first cycle"
    );
    assert_eq!(rec.pod_name.as_deref(), Some("web"));
    assert_eq!(rec.containers, [ctr]);
    assert_eq!(
        rec.container_names,
        ["nginx"],
        "no unnamed sandbox among them"
    );
    assert_eq!(rec.sandbox.as_deref(), Some(sandbox_id.as_str()));
    assert!(rec.identity_age_ms.is_some(), "{rec:?}");
}

/// A fake container runtime that names the protected pod (label `oomwarden.io/protect=true`)
/// and the other one (its sandbox and container `nginx`), answering its first list after
/// 600 ms.
fn slow_runtime(
    dir: &Path,
    protected_uid: &str,
    other_uid: &str,
    sandbox_id: &str,
    ctr: &str,
) -> oomwarden_testkit::cri::FakeCri {
    use oomwarden_testkit::cri::{CriAnswer, FakeCri, LIST_CONTAINERS, LIST_POD_SANDBOX};
    let cri = FakeCri::start(dir);
    let sandbox = |id: &str, uid: &str, name: &str, protect: bool| oomwarden_cri::v1::PodSandbox {
        id: id.to_owned(),
        metadata: Some(oomwarden_cri::v1::PodSandboxMetadata {
            name: name.to_owned(),
            uid: uid.to_owned(),
            namespace: "shop".to_owned(),
            attempt: 0,
        }),
        state: oomwarden_cri::v1::PodSandboxState::SandboxReady as i32,
        labels: protect
            .then(|| ("oomwarden.io/protect".to_owned(), "true".to_owned()))
            .into_iter()
            .collect(),
        ..Default::default()
    };
    let answer = oomwarden_cri::v1::ListPodSandboxResponse {
        items: vec![
            sandbox("p-sandbox", protected_uid, "db", true),
            sandbox(sandbox_id, other_uid, "web", false),
        ],
    };
    cri.set(
        LIST_POD_SANDBOX,
        CriAnswer::Message(
            prost::Message::encode_to_vec(&answer),
            Duration::from_millis(600),
        ),
    );
    let containers = oomwarden_cri::v1::ListContainersResponse {
        containers: vec![oomwarden_cri::v1::Container {
            id: ctr.to_owned(),
            pod_sandbox_id: sandbox_id.to_owned(),
            metadata: Some(oomwarden_cri::v1::ContainerMetadata {
                name: "nginx".to_owned(),
                attempt: 0,
            }),
            ..Default::default()
        }],
    };
    cri.set(
        LIST_CONTAINERS,
        CriAnswer::Message(prost::Message::encode_to_vec(&containers), Duration::ZERO),
    );
    cri
}

/// BestEffort pods without a limit: (UID, `memory.current`, the PID in its container `ctr`).
fn besteffort_pods(r: &Path, pods: &[(&str, &str, &str)], ctr: &str) {
    for (uid, bytes, pid) in pods {
        let pod = format!("kubepods/besteffort/pod{uid}");
        write(
            r,
            &format!("{pod}/cgroup.events"),
            "populated 1\nfrozen 0\n",
        );
        write(r, &format!("{pod}/memory.current"), bytes);
        write(r, &format!("{pod}/memory.max"), "max\n");
        write(r, &format!("{pod}/{ctr}/cgroup.procs"), pid);
    }
}

/// The root's pressure with nothing stalled.
const COLD: &str = "some avg10=0.00 avg60=0.00 avg300=0.00 total=12172340\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=10654831\n";

/// A node whose trigger never fires, with `stages` (a YAML list, indented two spaces).
fn staged(stages: &str, fake: RecordingActuator) -> (Dirs, Engine, SharedRecorder) {
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let fake = SharedRecorder::new(fake);
    let e = engine_with(
        cg.path(),
        proc.path(),
        settings(
            "triggerExpression: \"false\"\n",
            &format!("stages:\n{stages}"),
            state.path(),
        ),
        Box::new(fake.clone()),
        Box::new(fake.clone()),
    );
    (
        Dirs {
            _cg: cg,
            _proc: proc,
            state,
        },
        e,
        fake,
    )
}

fn quiet(outcome: &CycleOutcome) -> bool {
    matches!(outcome, CycleOutcome::Quiet)
}

/// Issue 34: a `warn` stage records once each time its condition becomes true (after it has
/// been false for its hold-down: issue 54), never while it stays true; nothing is done to any
/// cgroup.
#[test]
fn a_warn_stage_records_each_time_its_condition_becomes_true() {
    let (dirs, mut e, fake) = staged(
        "  - name: early\n    when: memory_full_avg10 > 12.0\n    action: warn\n    grace: 1s\n",
        RecordingActuator::new(KillEffect::Empty),
    );
    let root = dirs._cg.path().join("memory.pressure");
    let r = acted(e.cycle(1_000_000_000, "2026-12-01T00:00:01.000Z"));
    assert_eq!(r.outcome, Outcome::Warned);
    assert_eq!(r.stage.as_deref(), Some("early"));
    assert_eq!(
        r.trigger_expression.as_deref(),
        Some("memory_full_avg10 > 12.0")
    );
    assert!(r.victim.is_none());
    assert!(
        quiet(&e.cycle(2_000_000_000, "2026-12-01T00:00:02.000Z")),
        "still true: once"
    );
    fs::write(&root, COLD).unwrap();
    assert!(quiet(&e.cycle(3_000_000_000, "2026-12-01T00:00:03.000Z")));
    assert!(quiet(&e.cycle(4_000_000_000, "2026-12-01T00:00:04.000Z")));
    fs::write(&root, HOT).unwrap();
    let again = acted(e.cycle(5_000_000_000, "2026-12-01T00:00:05.000Z"));
    assert_eq!(again.outcome, Outcome::Warned);
    assert!(fake.lock().calls.is_empty(), "{:?}", fake.lock().calls);
    assert_eq!(persisted(dirs.state.path()).len(), 2);
    let text = e.metrics().encode();
    assert!(
        text.contains("oomwarden_stage_actions_total{stage=\"early\",outcome=\"warned\"} 2\n"),
        "{text}"
    );
    assert!(
        text.contains("oomwarden_triggers_without_victim_total 0\n"),
        "{text}"
    );
}

/// Issue 54 (6): a flapping condition (true and false every other second) wrote 99 warnings
/// in 20 s, filling the Events queue and the history; a `warn` stage now warns once per
/// episode, which ends when its condition has been false for its hold-down (default 1 m).
#[test]
fn a_flapping_warn_stage_warns_once_per_episode() {
    let (dirs, mut e, _fake) = staged(
        "  - name: early\n    when: memory_full_avg10 > 12.0\n    action: warn\n",
        RecordingActuator::new(KillEffect::Empty),
    );
    let root = dirs._cg.path().join("memory.pressure");
    let mut warnings = 0;
    for s in 1..=40u64 {
        fs::write(&root, if s % 2 == 1 { HOT } else { COLD }).unwrap();
        if let CycleOutcome::Acted(r) = e.cycle(s * 1_000_000_000, "2026-12-01T00:00:01.000Z") {
            assert_eq!(r.outcome, Outcome::Warned);
            warnings += 1;
        }
    }
    assert_eq!(warnings, 1, "one episode, one warning");
    // False for the hold-down: the episode ends; the next time it holds, a warning.
    fs::write(&root, COLD).unwrap();
    for s in 41..=101u64 {
        assert!(quiet(
            &e.cycle(s * 1_000_000_000, "2026-12-01T00:01:00.000Z")
        ));
    }
    fs::write(&root, HOT).unwrap();
    let r = acted(e.cycle(102_000_000_000, "2026-12-01T00:01:42.000Z"));
    assert_eq!(r.outcome, Outcome::Warned);
}

/// A `terminate` stage sends SIGTERM to the ranked victim's processes and waits, across
/// cycles, for them to exit within its grace: `terminated`, no kill.
#[test]
fn a_terminate_stage_whose_victim_exits_records_terminated() {
    let (dirs, mut e, fake) = staged(
        "  - name: shed\n    when: memory_full_avg10 > 12.0\n    action: terminate\n    grace: 5s\n",
        RecordingActuator::new(KillEffect::Empty),
    );
    let live = dirs._cg.path().join("kubepods/besteffort/pod-live");
    fake.lock().exit_on_sigterm = vec![live.join("c1")];
    assert!(
        quiet(&e.cycle(1_000_000_000, "2026-12-01T00:00:01.000Z")),
        "signals, no record yet"
    );
    assert_eq!(
        fake.lock().calls,
        [Call::SendSigterm(100), Call::SendSigterm(101)]
    );
    // The container's processes are gone; the pod cgroup empties with them.
    fs::write(live.join("cgroup.events"), "populated 0\nfrozen 0\n").unwrap();
    let r = acted(e.cycle(2_000_000_000, "2026-12-01T00:00:02.000Z"));
    assert_eq!(r.outcome, Outcome::Terminated);
    assert_eq!(r.stage.as_deref(), Some("shed"));
    assert_eq!(
        r.victim.as_deref(),
        Some("/sys/fs/cgroup/kubepods/besteffort/pod-live")
    );
    assert_eq!(r.pids, [100, 101]);
    assert_eq!(r.kill_duration_ms, Some(1000.0));
    assert!(
        !fake
            .lock()
            .calls
            .iter()
            .any(|c| matches!(c, Call::WriteCgroupKill(_))),
        "no kill"
    );
}

/// A victim that ignores SIGTERM is killed when the grace ends (the record names the stage);
/// the trigger, when it fires meanwhile, is never delayed by a waiting termination.
#[test]
fn a_terminate_stage_kills_after_its_grace_and_never_delays_the_trigger() {
    let (_dirs, mut e, fake) = staged(
        "  - name: shed\n    when: memory_full_avg10 > 12.0\n    action: terminate\n    grace: 2s\n",
        RecordingActuator::new(KillEffect::Empty),
    );
    assert!(quiet(&e.cycle(1_000_000_000, "2026-12-01T00:00:01.000Z")));
    assert!(
        quiet(&e.cycle(2_000_000_000, "2026-12-01T00:00:02.000Z")),
        "within its grace"
    );
    let r = acted(e.cycle(3_000_000_000, "2026-12-01T00:00:03.000Z"));
    assert_eq!(r.outcome, Outcome::Killed);
    assert_eq!(r.stage.as_deref(), Some("shed"));
    assert!(
        fake.lock()
            .calls
            .iter()
            .any(|c| matches!(c, Call::WriteCgroupKill(_))),
        "{:?}",
        fake.lock().calls
    );
    // Now with a trigger that fires: the stage's condition holds too, the trigger kills.
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let fake = SharedRecorder::new(RecordingActuator::new(KillEffect::Empty));
    let mut e = engine_with(
        cg.path(),
        proc.path(),
        settings(
            "triggerExpression: \"memory_full_avg10 > 12.0\"\n",
            "stages:\n  - name: shed\n    when: memory_full_avg10 > 10.0\n    action: terminate\n",
            state.path(),
        ),
        Box::new(fake.clone()),
        Box::new(fake.clone()),
    );
    let r = acted(e.cycle(1_000_000_000, "2026-12-01T00:00:01.000Z"));
    assert_eq!(r.outcome, Outcome::Killed);
    assert!(r.stage.is_none(), "the trigger's kill");
    assert!(
        !fake
            .lock()
            .calls
            .iter()
            .any(|c| matches!(c, Call::SendSigterm(_))),
        "no stage acts in a cycle the trigger fires"
    );
}

/// In a dry run a `terminate` stage signals nothing and records what it would terminate.
#[test]
fn a_terminate_stage_in_a_dry_run_records_what_it_would_do() {
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let fake = SharedRecorder::new(RecordingActuator::new(KillEffect::Empty));
    let mut e = engine_with(
        cg.path(),
        proc.path(),
        settings(
            "triggerExpression: \"false\"\n",
            "dryRun: true\nstages:\n  - name: shed\n    when: \"true\"\n    action: terminate\n",
            state.path(),
        ),
        Box::new(fake.clone()),
        Box::new(fake.clone()),
    );
    let r = acted(e.cycle(1_000_000_000, "2026-12-01T00:00:01.000Z"));
    assert_eq!(r.outcome, Outcome::DryRun);
    assert_eq!(r.stage.as_deref(), Some("shed"));
    assert_eq!(r.pids, [100, 101]);
    assert!(fake.lock().calls.is_empty(), "{:?}", fake.lock().calls);
}

/// Issue 34: a `taint` stage taints the node through the API server when its condition
/// becomes true, and removes the taint once it has been false for its hold-down.
#[test]
fn a_taint_stage_taints_the_node_and_lets_go_after_its_hold_down() {
    let server = oomwarden_testkit::apiserver::FakeApiServer::start();
    server.add_node("worker-1");
    let kube = tempfile::tempdir().unwrap();
    let kubeconfig = server.kubeconfig(kube.path());
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let mut e = engine(
        cg.path(),
        proc.path(),
        settings(
            "triggerExpression: \"false\"\n",
            &format!(
                "events:\n  enabled: true\n  kubeconfig: {}\n  nodeName: worker-1\nstages:\n  - name: squeeze\n    when: memory_full_avg10 > 12.0\n    action: taint\n    grace: 2s\n",
                kubeconfig.display()
            ),
            state.path(),
        ),
        RecordingActuator::new(KillEffect::Empty),
    );
    let options = oomwarden_daemon::events_options(&e.settings().warden.events);
    e.set_events(Some(oomwarden_events::Events::start(options).unwrap()));
    let r = acted(e.cycle(1_000_000_000, "2026-12-01T00:00:01.000Z"));
    assert_eq!(r.outcome, Outcome::Tainted);
    assert_eq!(r.stage.as_deref(), Some("squeeze"));
    wait_for_node_updates(&e, 1);
    let node = server.node("worker-1").unwrap();
    assert_eq!(node.taints[0]["key"], "oomwarden.io/memory-pressure");
    assert_eq!(node.conditions[0]["status"], "True");
    // The condition goes false: the taint stays for the hold-down, then goes.
    fs::write(cg.path().join("memory.pressure"), COLD).unwrap();
    assert!(quiet(&e.cycle(2_000_000_000, "2026-12-01T00:00:02.000Z")));
    assert!(quiet(&e.cycle(3_000_000_000, "2026-12-01T00:00:03.000Z")));
    let r = acted(e.cycle(4_000_000_000, "2026-12-01T00:00:04.000Z"));
    assert_eq!(r.outcome, Outcome::Untainted);
    wait_for_node_updates(&e, 2);
    let node = server.node("worker-1").unwrap();
    assert!(node.taints.is_empty(), "{:?}", node.taints);
    assert_eq!(node.conditions[0]["status"], "False");
    assert!(server.requests().iter().all(|r| r.problems.is_empty()));
}

/// Issue 34: one workload killed `events.taintAfterKills` times in the hour taints the node
/// (at the next quiet cycle: the trigger is never delayed), the record naming the workload.
#[test]
fn a_workload_killed_again_and_again_taints_the_node() {
    let server = oomwarden_testkit::apiserver::FakeApiServer::start();
    server.add_node("worker-1");
    let (dirs, _kube, mut e) = node_with_events_and(&server, false, "  taintAfterKills: 2\n");
    let uid = "5a5a5a5a-0000-4000-8000-000000000001";
    let pod = dirs
        ._cg
        .path()
        .join(format!("kubepods/besteffort/pod{uid}"));
    let container = pod.join("c".repeat(64));
    for (i, at) in [5_000_000_000u64, 6_000_000_000].into_iter().enumerate() {
        // The pod made again, as its controller would.
        fs::write(pod.join("cgroup.events"), "populated 1\nfrozen 0\n").unwrap();
        fs::write(container.join("cgroup.procs"), "100\n").unwrap();
        let r = acted(e.cycle(at, &format!("2026-11-29T12:00:0{i}.000Z")));
        assert_eq!(r.outcome, Outcome::Killed, "kill {i}");
    }
    fs::write(dirs._cg.path().join("memory.pressure"), COLD).unwrap();
    for f in ["init", "system", "podruntime", "kubepods/besteffort"] {
        fs::write(dirs._cg.path().join(f).join("memory.pressure"), COLD).unwrap();
    }
    let r = acted(e.cycle(7_000_000_000, "2026-11-29T12:00:02.000Z"));
    assert_eq!(r.outcome, Outcome::Tainted);
    assert_eq!(r.stage, None);
    assert_eq!(
        r.workload.as_ref().map(ToString::to_string).as_deref(),
        Some("shop/Pod/cart-1")
    );
    assert_eq!(r.workload_kills, Some(2));
    assert!(
        quiet(&e.cycle(8_000_000_000, "2026-11-29T12:00:03.000Z")),
        "once"
    );
    wait_for_node_updates(&e, 1);
    assert_eq!(
        server.node("worker-1").unwrap().conditions[0]["reason"],
        "RepeatedKills"
    );
    // Two Events a kill, then the Node's for the taint.
    let created = wait_for_created(&server, 5);
    assert!(
        created
            .iter()
            .any(|e| e["reason"] == "OOMWardenRepeatedKills"),
        "{created:?}"
    );
}

/// Waits up to 20 s for the Events sender to have made `n` node updates.
fn wait_for_node_updates(e: &Engine, n: u64) {
    let end = std::time::Instant::now() + Duration::from_secs(20);
    while e.events().unwrap().counts().node_updates < n && std::time::Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Issue 35: a ranking that names `memory_swap_current` has the candidates' swap read (the
/// engine's reads follow the ranking too): the pod whose memory went to swap is the victim,
/// though another holds more resident memory.
#[test]
fn a_ranking_by_swap_reads_the_candidates_swap() {
    let (cg, proc) = node();
    write(
        cg.path(),
        "kubepods/besteffort/pod-live/memory.swap.current",
        "10000000000\n",
    );
    let state = tempfile::tempdir().unwrap();
    let mut e = engine(
        cg.path(),
        proc.path(),
        settings(
            "triggerExpression: \"true\"\ncgroupRankingExpression: double(memory_current.orValue(0u) + memory_swap_current.orValue(0u))\n",
            "",
            state.path(),
        ),
        RecordingActuator::new(KillEffect::Empty),
    );
    let r = acted(e.cycle(1_000_000_000, "2026-12-01T00:00:01.000Z"));
    assert_eq!(
        r.victim.as_deref(),
        Some("/sys/fs/cgroup/kubepods/besteffort/pod-live")
    );
    assert_eq!(r.score, 10_222_593_024.0);
}

/// Issue 35: the record says what the victim's memory was: its `memory.stat` parts and its
/// swap, read when it was chosen (`explain` shows them).
#[test]
fn a_kills_record_breaks_the_victims_memory_down() {
    let (cg, proc) = node();
    let live = "kubepods/besteffort/pod-live";
    write(
        cg.path(),
        &format!("{live}/memory.stat"),
        "anon 104857600\nfile 52428800\nkernel 1048576\nshmem 4096\n",
    );
    write(cg.path(), &format!("{live}/memory.swap.current"), "8192\n");
    let state = tempfile::tempdir().unwrap();
    let mut e = engine(
        cg.path(),
        proc.path(),
        settings("triggerExpression: \"true\"\n", "", state.path()),
        RecordingActuator::new(KillEffect::Empty),
    );
    let r = acted(e.cycle(1_000_000_000, "2026-12-01T00:00:01.000Z"));
    assert_eq!(
        r.victim.as_deref(),
        Some("/sys/fs/cgroup/kubepods/besteffort/pod-live")
    );
    assert_eq!(
        r.memory_breakdown,
        Some(oomwarden_model::MemoryBreakdown {
            anon_bytes: Some(104_857_600),
            file_bytes: Some(52_428_800),
            shmem_bytes: Some(4096),
            kernel_bytes: Some(1_048_576),
            swap_bytes: Some(8192),
        })
    );
}

/// Issue 34: the engine hands the history's workload kills to a ranking that reads them.
#[test]
fn a_ranking_reads_its_workloads_kills() {
    let server = oomwarden_testkit::apiserver::FakeApiServer::start();
    let (dirs, _kube, mut e) = node_with_events_and(&server, false, "  taintAfterKills: 0\n");
    let mut s = e.settings().clone();
    s.oom.ranking = oomwarden_expr::RankingExpr::compile("double(workload_kills) + 1.0").unwrap();
    e.set_settings(s);
    let uid = "5a5a5a5a-0000-4000-8000-000000000001";
    let pod = dirs
        ._cg
        .path()
        .join(format!("kubepods/besteffort/pod{uid}"));
    let first = acted(e.cycle(5_000_000_000, "2026-11-29T12:00:00.000Z"));
    assert_eq!(first.score, 1.0);
    fs::write(pod.join("cgroup.events"), "populated 1\nfrozen 0\n").unwrap();
    fs::write(pod.join("c".repeat(64)).join("cgroup.procs"), "100\n").unwrap();
    let second = acted(e.cycle(6_000_000_000, "2026-11-29T12:00:01.000Z"));
    assert_eq!(second.score, 2.0, "one kill of its workload before");
}

/// Issue 35: a ranking by growth (`d_memory_current`) has the candidates' `memory.current`
/// read once a second between triggers; when the trigger fires the grower is the victim, not
/// the larger pod that stands still, and its record says how fast it grew.
#[test]
fn a_ranking_by_growth_kills_the_grower() {
    let (cg, proc) = node();
    let live = "kubepods/besteffort/pod-live/memory.current";
    let state = tempfile::tempdir().unwrap();
    let ranking = "cgroupRankingExpression: d_memory_current\n";
    let mut e = engine(
        cg.path(),
        proc.path(),
        settings(
            &format!("triggerExpression: \"false\"\n{ranking}"),
            "",
            state.path(),
        ),
        RecordingActuator::new(KillEffect::Empty),
    );
    const S: u64 = 1_000_000_000;
    // Quiet cycles every 200 ms for two seconds: the BestEffort pod grows 100 MiB/s, the
    // Burstable pod (larger) stands still.
    for i in 0..=10u64 {
        write(
            cg.path(),
            live,
            &format!("{}\n", 222_593_024 + i * (100 << 20) / 5),
        );
        assert!(matches!(
            e.cycle(i * S / 5, "2026-12-04T00:00:00.000Z"),
            CycleOutcome::Quiet
        ));
    }
    write(
        cg.path(),
        live,
        &format!("{}\n", 222_593_024 + (250u64 << 20)),
    );
    let mut s = e.settings().clone();
    s.oom.trigger = oomwarden_expr::TriggerExpr::compile("true").unwrap();
    e.set_settings(s);
    let r = acted(e.cycle(5 * S / 2, "2026-12-04T00:00:02.500Z"));
    assert_eq!(
        r.victim.as_deref(),
        Some("/sys/fs/cgroup/kubepods/besteffort/pod-live")
    );
    // Against the reading kept at 2 s (1 s spacing): 50 MiB in 0.5 s is too short a span, so
    // the 1 s reading: 150 MiB in 1.5 s.
    assert_eq!(r.growth_bytes_per_second, Some(f64::from(100u32 << 20)));
    assert_eq!(r.score, f64::from(100u32 << 20));
}

/// Issue 35: the growth scan is not made when nothing names `d_memory_current` (a quiet
/// cycle reads no candidate's file), and is made at most once a second when something does.
#[test]
fn the_growth_scan_runs_only_when_named_and_once_a_second() {
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let live = "kubepods/besteffort/pod-live/memory.current";
    let mut e = engine(
        cg.path(),
        proc.path(),
        settings("triggerExpression: \"false\"\n", "", state.path()),
        RecordingActuator::new(KillEffect::Empty),
    );
    const S: u64 = 1_000_000_000;
    e.cycle(0, "2026-12-04T00:00:00.000Z");
    assert_eq!(
        e.growth_remembered(),
        0,
        "the default ranking does not name it"
    );
    let mut s = e.settings().clone();
    s.oom.ranking = oomwarden_expr::RankingExpr::compile("d_memory_current").unwrap();
    e.set_settings(s);
    e.cycle(S, "2026-12-04T00:00:01.000Z");
    assert_eq!(
        e.growth_remembered(),
        3,
        "every candidate, the empty one too"
    );
    // Half a second later the pod grew, but no scan is due: the kept reading stands.
    write(cg.path(), live, "999\n");
    fs::remove_dir_all(cg.path().join("kubepods/besteffort/pod-deleted")).unwrap();
    e.cycle(3 * S / 2, "2026-12-04T00:00:01.500Z");
    assert_eq!(e.growth_remembered(), 3);
    e.cycle(2 * S, "2026-12-04T00:00:02.000Z");
    assert_eq!(e.growth_remembered(), 2, "the removed cgroup is forgotten");
}

/// Talos sets `ActionTriggered` after the kill attempt: the cooldown counts from the end of the
/// kill, here a verification that waits out a 5 s `killTimeout` (on a virtual clock).
#[test]
fn the_cooldown_counts_from_the_end_of_the_kill() {
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let s = settings(
        "triggerExpression: time_since_trigger > duration(\"5s\")\n",
        "killTimeout: 5s\n",
        state.path(),
    );
    let mut p = parts(
        cg.path(),
        proc.path(),
        s,
        RecordingActuator::new(KillEffect::Nothing),
    );
    p.clock = Box::new(oomwarden_actuate::VirtualClock::new());
    let mut e = Engine::new(p);
    let r = acted(e.cycle(10_000_000_000, "t"));
    assert_eq!(r.outcome, Outcome::NotVerified, "the kill waited its 5 s");
    assert_eq!(
        e.cycle(15_500_000_000, "t"),
        CycleOutcome::Quiet,
        "5.5 s after the cycle began, 0.5 s after the kill ended: cooling down"
    );
    assert!(
        matches!(e.cycle(20_500_000_000, "t"), CycleOutcome::Acted(_)),
        "5.5 s after the kill ended"
    );
}

/// The settings of the termination tests: a trigger that never fires, a `terminate` stage
/// `shed` (grace 3 s) unless `stage` is false, `ranking` as the ranking, and `dry_run`.
fn shed_settings(state: &Path, ranking: Option<&str>, stage: bool, dry_run: bool) -> Settings {
    let ranking = ranking
        .map(|r| format!("cgroupRankingExpression: '{r}'\n"))
        .unwrap_or_default();
    let mut warden = format!("dryRun: {dry_run}\n");
    if stage {
        warden.push_str(
            "stages:\n  - name: shed\n    when: memory_full_avg10 > 12.0\n    action: terminate\n    grace: 3s\n",
        );
    }
    settings(
        &format!("triggerExpression: \"false\"\n{ranking}"),
        &warden,
        state,
    )
}

/// A ranking that exempts the pod the stage terminates (`pod-live`), as an operator writes on
/// seeing a wanted pod get SIGTERM.
const EXEMPT_LIVE: &str = "path.contains(\"pod-live\") ? 0.0 : 1.0";

fn sigkills(fake: &SharedRecorder) -> usize {
    fake.lock()
        .calls
        .iter()
        .filter(|c| matches!(c, Call::WriteCgroupKill(_) | Call::StartMemcgOom(_)))
        .count()
}

/// Issue 54 (1): a reload mid-grace to a configuration that would not choose the stage's
/// victim (the ranking exempts it, the stage is gone, a dry run) ends the termination without
/// a kill, at the first cycle after the reload, with a record `cancelled` saying why; a
/// reload that would still choose it leaves the kill at the grace's end.
#[test]
fn a_reload_mid_grace_is_judged_before_any_kill() {
    // (name, ranking, stage kept, dry run, the reason a kill is called off)
    type Case<'a> = (&'a str, Option<&'a str>, bool, bool, Option<CancelReason>);
    let cases: [Case<'_>; 4] = [
        (
            "exempt",
            Some(EXEMPT_LIVE),
            true,
            false,
            Some(CancelReason::Exempt),
        ),
        (
            "stage removed",
            None,
            false,
            false,
            Some(CancelReason::StageRemoved),
        ),
        ("dry run", None, true, true, Some(CancelReason::DryRun)),
        ("the same choice", None, true, false, None),
    ];
    for (name, ranking, stage, dry_run, expected) in cases {
        let (dirs, mut e, fake) = staged(
            "  - name: shed\n    when: memory_full_avg10 > 12.0\n    action: terminate\n    grace: 3s\n",
            RecordingActuator::new(KillEffect::Empty),
        );
        assert!(quiet(&e.cycle(1_000_000_000, "2026-12-01T00:00:01.000Z")));
        assert_eq!(
            fake.lock().calls,
            [Call::SendSigterm(100), Call::SendSigterm(101)],
            "{name}"
        );
        e.set_settings(shed_settings(dirs.state.path(), ranking, stage, dry_run));
        let next = e.cycle(2_000_000_000, "2026-12-01T00:00:02.000Z");
        match expected {
            Some(reason) => {
                let r = acted(next);
                assert_eq!(r.outcome, Outcome::Cancelled, "{name}");
                assert_eq!(r.cancel_reason, Some(reason), "{name}");
                assert_eq!(r.stage.as_deref(), Some("shed"), "{name}");
                assert_eq!(
                    r.victim.as_deref(),
                    Some("/sys/fs/cgroup/kubepods/besteffort/pod-live"),
                    "{name}"
                );
                // Nothing more happens to it: not at the grace's end, not later.
                for t in 3..8u64 {
                    let _ = e.cycle(t * 1_000_000_000, &format!("2026-12-01T00:00:0{t}.000Z"));
                }
                assert_eq!(sigkills(&fake), 0, "{name}: {:?}", fake.lock().calls);
            }
            None => {
                assert!(quiet(&next), "{name}");
                assert!(quiet(&e.cycle(3_000_000_000, "2026-12-01T00:00:03.000Z")));
                let r = acted(e.cycle(4_000_000_000, "2026-12-01T00:00:04.000Z"));
                assert_eq!(r.outcome, Outcome::Killed, "{name}");
                assert_eq!(r.stage.as_deref(), Some("shed"), "{name}");
                assert_eq!(sigkills(&fake), 1, "{name}");
            }
        }
        let persisted = persisted(dirs.state.path());
        assert!(
            persisted.iter().all(|r| r.outcome != Outcome::Killed) || expected.is_none(),
            "{name}: {persisted:?}"
        );
    }
}

/// Issue 54 (1): the configuration is judged at the grace's end too, whatever happened
/// before it: a ranking that stops choosing the victim by itself (here: its memory is now
/// what the ranking exempts) cancels the kill.
#[test]
fn the_grace_end_is_judged_under_the_configuration_in_force() {
    let (cg, proc) = node();
    let state = tempfile::tempdir().unwrap();
    let fake = SharedRecorder::new(RecordingActuator::new(KillEffect::Empty));
    // Exempt once the victim's memory falls under 100 MB (as a ranking by usage would).
    let s = shed_settings(
        state.path(),
        Some("memory_current.orValue(0u) > 100000000u ? 1.0 : 0.0"),
        true,
        false,
    );
    let mut e = engine_with(
        cg.path(),
        proc.path(),
        s,
        Box::new(fake.clone()),
        Box::new(fake.clone()),
    );
    assert!(quiet(&e.cycle(1_000_000_000, "2026-12-01T00:00:01.000Z")));
    assert_eq!(fake.lock().calls.len(), 2, "{:?}", fake.lock().calls);
    fs::write(
        cg.path()
            .join("kubepods/besteffort/pod-live/memory.current"),
        "5000000\n",
    )
    .unwrap();
    assert!(quiet(&e.cycle(2_000_000_000, "2026-12-01T00:00:02.000Z")));
    let r = acted(e.cycle(4_000_000_000, "2026-12-01T00:00:04.000Z"));
    assert_eq!(r.outcome, Outcome::Cancelled);
    assert_eq!(r.cancel_reason, Some(CancelReason::Exempt));
    assert_eq!(r.error.as_deref(), Some("score is not above 0"));
    assert_eq!(sigkills(&fake), 0);
}

/// One step of the model of a daemon with a `terminate` stage.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// A cycle, this many seconds after the last.
    Cycle(u64),
    /// A reload to one of the configurations of [`Variant`].
    Reload(Variant),
    /// The victim's processes exit.
    Exit,
    /// The daemon stops and starts again (a new engine on the same state directory).
    Restart,
}

/// The configurations a reload may bring.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Variant {
    /// The stage, the default ranking (which chooses `pod-live`).
    Base,
    /// The ranking exempts every pod (`pod-live` among them).
    Exempt,
    /// No stage.
    NoStage,
    /// A dry run.
    DryRun,
}

impl Variant {
    fn settings(self, state: &Path) -> Settings {
        match self {
            Variant::Base => shed_settings(state, None, true, false),
            Variant::Exempt => shed_settings(state, Some("0.0"), true, false),
            Variant::NoStage => shed_settings(state, None, false, false),
            Variant::DryRun => shed_settings(state, None, true, true),
        }
    }

    /// Whether this configuration may signal `pod-live` at all.
    fn may_signal_live(self) -> bool {
        self == Variant::Base
    }
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    let variant = prop_oneof![
        Just(Variant::Base),
        Just(Variant::Exempt),
        Just(Variant::NoStage),
        Just(Variant::DryRun),
    ];
    prop_oneof![
        4 => (1u64..4).prop_map(Step::Cycle),
        3 => variant.prop_map(Step::Reload),
        1 => Just(Step::Exit),
        1 => Just(Step::Restart),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Issue 54 (1), the invariant over interleavings of reloads, restarts, exits, grace ends
    /// and cycles: no signal is ever sent under a configuration other than the one in force at
    /// that instant (each signal is seen in the step it was sent in, under that step's
    /// configuration), and a kill of the stage's victim only ever follows its SIGTERM by the
    /// same daemon.
    #[test]
    fn no_signal_under_a_configuration_not_in_force(steps in proptest::collection::vec(step(), 1..24)) {
        let (cg, proc) = node();
        let state = tempfile::tempdir().unwrap();
        let fake = SharedRecorder::new(RecordingActuator::new(KillEffect::Nothing));
        let make = |v: Variant| {
            engine_with(cg.path(), proc.path(), v.settings(state.path()), Box::new(fake.clone()), Box::new(fake.clone()))
        };
        let mut variant = Variant::Base;
        let mut e = make(variant);
        let mut now = 1_000_000_000u64;
        let mut sigterm_by_this_daemon = false;
        let live = cg.path().join("kubepods/besteffort/pod-live");
        let mut seen = 0;
        for step in steps {
            match step {
                Step::Cycle(s) => {
                    now += s * 1_000_000_000;
                    let _ = e.cycle(now, "2026-12-01T00:00:00.000Z");
                }
                Step::Reload(v) => {
                    variant = v;
                    e.set_settings(v.settings(state.path()));
                }
                Step::Exit => {
                    fs::write(live.join("cgroup.events"), "populated 0\nfrozen 0\n").unwrap();
                    fs::write(live.join("c1/cgroup.procs"), "").unwrap();
                }
                Step::Restart => {
                    drop(e);
                    e = make(variant);
                    sigterm_by_this_daemon = false;
                }
            }
            let calls = fake.lock().calls.clone();
            for call in calls.iter().skip(seen) {
                match call {
                    Call::SendSigterm(_) => {
                        proptest::prop_assert!(variant.may_signal_live(), "SIGTERM under {variant:?} at {step:?}");
                        sigterm_by_this_daemon = true;
                    }
                    Call::WriteCgroupKill(dir) | Call::StartMemcgOom(dir) => {
                        proptest::prop_assert!(dir.starts_with(&live), "{dir:?}");
                        proptest::prop_assert!(variant.may_signal_live(), "kill under {variant:?} at {step:?}");
                        proptest::prop_assert!(sigterm_by_this_daemon, "a kill without this daemon's SIGTERM at {step:?}");
                    }
                    _ => {}
                }
            }
            seen = calls.len();
        }
    }
}

/// A kernel OOM kill of the pod `shop/cart-1` (as the kernel-OOM watch records it), by
/// `constraint`.
fn kernel_kill_of_cart(at: u64, constraint: oomwarden_model::OomConstraint) -> ActionRecord {
    let mut r = ActionRecord::empty(
        oomwarden_model::RecordKind::KernelOom,
        Outcome::Killed,
        "2026-11-29T12:00:00.000Z".to_owned(),
        at,
    );
    r.constraint = Some(constraint);
    r.workload = Some(oomwarden_model::Workload {
        namespace: "shop".to_owned(),
        kind: oomwarden_model::WorkloadKind::Pod,
        name: "cart-1".to_owned(),
    });
    r
}

/// Cools the fixture node's pressure so that the trigger does not fire.
fn cool(cg: &Path) {
    for f in ["", "init", "system", "podruntime", "kubepods/besteffort"] {
        fs::write(cg.join(f).join("memory.pressure"), COLD).unwrap();
    }
}

/// Issue 54 (4): the kernel's memcg kills (a container over its own limit, which says nothing
/// about the node's memory) never count toward `taintAfterKills`: a CrashLoopBackOff
/// `OOMKilled` container tainted its node in 15 minutes. The kernel's global kills do; and a
/// dry run never taints for repeated kills.
#[test]
fn only_kills_that_say_something_about_the_node_taint_it() {
    use oomwarden_model::OomConstraint;
    for (constraint, dry_run, taints) in [
        (OomConstraint::Memcg, false, false),
        (OomConstraint::Global, false, true),
        (OomConstraint::Global, true, false),
    ] {
        let server = oomwarden_testkit::apiserver::FakeApiServer::start();
        server.add_node("worker-1");
        let (dirs, _kube, mut e) = node_with_events_and(&server, dry_run, "  taintAfterKills: 3\n");
        cool(dirs._cg.path());
        for i in 0..3u64 {
            e.record_kernel_kill(kernel_kill_of_cart(1_000_000_000 + i, constraint), 1);
        }
        let outcome = e.cycle(2_000_000_000, "2026-11-29T12:00:02.000Z");
        let case = format!("{constraint:?}, dry run {dry_run}");
        if taints {
            let r = acted(outcome);
            assert_eq!(r.outcome, Outcome::Tainted, "{case}");
            assert_eq!(r.workload_kills, Some(3), "{case}");
        } else {
            assert!(quiet(&outcome), "{case}: {outcome:?}");
            assert!(
                quiet(&e.cycle(3_000_000_000, "2026-11-29T12:00:03.000Z")),
                "{case}"
            );
        }
        // The ranking's `workload_kills` still counts every kill (it damps one workload's
        // repeats, whatever killed it).
        assert_eq!(
            e.history()
                .workload_kills(2_000_000_000)
                .iter()
                .map(|(_, n)| n)
                .sum::<u64>(),
            3,
            "{case}"
        );
    }
}

/// Issue 54 (3): a daemon restarted while the node carried its taint never looked at the Node
/// again, and the node stayed tainted for ever. The taint found at the start is held for the
/// hold-down (no `taint` stage: 5 minutes), then removed when nothing holds it; an
/// administrator's taint with the same key is left alone.
#[test]
fn a_taint_found_at_the_start_is_let_go_after_the_hold_down() {
    let server = oomwarden_testkit::apiserver::FakeApiServer::start();
    server.add_node("worker-1");
    server.add_taint(
        "worker-1",
        serde_json::json!({"key": "oomwarden.io/memory-pressure", "value": "oomwarden", "effect": "NoSchedule"}),
    );
    server.add_taint(
        "worker-1",
        serde_json::json!({"key": "dedicated", "value": "db", "effect": "NoSchedule"}),
    );
    let (dirs, _kube, mut e) = node_with_events(&server, false);
    cool(dirs._cg.path());
    let end = std::time::Instant::now() + Duration::from_secs(20);
    while e.events().unwrap().taint_found_at_start().is_none() {
        assert!(std::time::Instant::now() < end, "the node was never read");
        std::thread::sleep(Duration::from_millis(10));
    }
    let start = 10_000_000_000u64;
    assert!(quiet(&e.cycle(start, "2026-11-29T12:00:10.000Z")));
    assert!(
        quiet(&e.cycle(start + 299_000_000_000, "2026-11-29T12:05:09.000Z")),
        "held for the hold-down"
    );
    let r = acted(e.cycle(start + 300_000_000_000, "2026-11-29T12:05:10.000Z"));
    assert_eq!(r.outcome, Outcome::Untainted);
    assert_eq!(r.stage, None);
    assert_eq!(r.workload, None);
    wait_for_node_updates(&e, 1);
    let node = server.node("worker-1").unwrap();
    assert_eq!(node.taints.len(), 1, "{:?}", node.taints);
    assert_eq!(node.taints[0]["key"], "dedicated");
    assert_eq!(node.conditions[0]["status"], "False");
    assert_eq!(node.conditions[0]["reason"], "Restarted");
}

/// Issue 55 (1): an etcd-like static pod (Burstable: requests, no limit; its processes at
/// the kubelet's −997) is the largest unlimited Burstable pod. Talos's default ranking scores
/// it and would kill it; `protect.nodeCritical` (on by default) leaves it out, whatever the
/// ranking, and the record counts it in `excluded`; off, Talos's exact selection kills it.
#[test]
fn a_node_critical_pod_is_never_the_victim_unless_the_guard_is_off() {
    for guard in [true, false] {
        let cg = tempfile::tempdir().unwrap();
        let proc = tempfile::tempdir().unwrap();
        let r = cg.path();
        for f in [
            "memory.pressure",
            "init/memory.pressure",
            "system/memory.pressure",
            "podruntime/memory.pressure",
            "kubepods/burstable/memory.pressure",
        ] {
            write(r, f, HOT);
        }
        for (pod, bytes, pid, adj) in [
            ("pod-etcd", "8000000000\n", "200", "-997\n"),
            ("pod-app", "3000000000\n", "300", "937\n"),
        ] {
            let dir = format!("kubepods/burstable/{pod}");
            write(
                r,
                &format!("{dir}/cgroup.events"),
                "populated 1\nfrozen 0\n",
            );
            write(r, &format!("{dir}/memory.current"), bytes);
            write(r, &format!("{dir}/memory.max"), "max\n");
            write(r, &format!("{dir}/c1/cgroup.procs"), &format!("{pid}\n"));
            write(proc.path(), &format!("{pid}/cmdline"), "etcd\0");
            write(proc.path(), &format!("{pid}/oom_score_adj"), adj);
        }
        let state = tempfile::tempdir().unwrap();
        let mut e = engine(
            cg.path(),
            proc.path(),
            settings(
                "triggerExpression: \"memory_full_avg10 > 12.0\"\n",
                &format!("protect:\n  nodeCritical: {guard}\n"),
                state.path(),
            ),
            RecordingActuator::new(KillEffect::Empty),
        );
        let rec = acted(e.cycle(5_000_000_000, "2026-11-29T12:00:00.000Z"));
        assert_eq!(rec.outcome, Outcome::Killed, "guard {guard}");
        let victim = rec.victim.as_deref().unwrap_or("");
        if guard {
            assert!(victim.ends_with("pod-app"), "{victim}");
            assert_eq!(
                rec.excluded.get("node-critical"),
                Some(&1),
                "{:?}",
                rec.excluded
            );
            assert!(
                e.last_ranking().iter().any(|c| c.path.ends_with("pod-etcd")
                    && c.reason.contains("node-critical")
                    && c.reason.contains("-997")),
                "{:?}",
                e.last_ranking()
            );
        } else {
            assert!(victim.ends_with("pod-etcd"), "{victim}");
            assert!(rec.excluded.is_empty(), "{:?}", rec.excluded);
        }
    }
}
