//! The kill sequence: exact calls with the recording fake on fixture trees, failures and
//! races, and a real kill of real processes in a cgroup created under the host's cgroup2.

// Test code: unwrap on expected outcomes is the assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use oomwarden_actuate::{
    ActOutcome, GoneReason, LinuxActuator, SystemClock, VirtualClock, kernel_oom_kill, kill_cgroup,
    subtree_pids,
};
use oomwarden_actuate_fake::{Call, KillEffect, RecordingActuator};
use oomwarden_cgroupfs::CgroupFs;
use oomwarden_procfs::ProcFs;
use oomwarden_testkit::write;

/// A pod with two containers (one nested deeper) and a proc tree for their command lines.
fn pod() -> (tempfile::TempDir, tempfile::TempDir) {
    let cg = tempfile::tempdir().unwrap();
    write(
        cg.path(),
        "kubepods/besteffort/pod1/cgroup.events",
        "populated 1\nfrozen 0\n",
    );
    write(cg.path(), "kubepods/besteffort/pod1/cgroup.procs", "");
    write(
        cg.path(),
        "kubepods/besteffort/pod1/b-app/cgroup.procs",
        "30\n31\n",
    );
    write(
        cg.path(),
        "kubepods/besteffort/pod1/a-pause/cgroup.procs",
        "10\n",
    );
    write(
        cg.path(),
        "kubepods/besteffort/pod1/a-pause/nested/cgroup.procs",
        "20\n",
    );
    let proc = tempfile::tempdir().unwrap();
    write(proc.path(), "10/cmdline", "/pause\0");
    write(proc.path(), "20/cmdline", "");
    write(proc.path(), "30/cmdline", "stress-ng\0--vm\0\x31\0");
    // 31 exits before its command line is read.
    (cg, proc)
}

#[test]
fn pids_are_walked_depth_first_in_name_order() {
    let (cg, _) = pod();
    assert_eq!(
        subtree_pids(&CgroupFs::new(cg.path()), "kubepods/besteffort/pod1"),
        [10, 20, 30, 31]
    );
}

#[test]
fn kill_sequence_is_exact() {
    let (cg, proc) = pod();
    let (cgroups, procfs) = (CgroupFs::new(cg.path()), ProcFs::new(proc.path()));
    let mut fake = RecordingActuator::new(KillEffect::Empty);
    fake.gone = vec![31];
    let mut report = None;
    let logs = oomwarden_testkit::capture_logs(|| {
        report = Some(kill_cgroup(
            &mut fake,
            &SystemClock,
            &cgroups,
            &procfs,
            "kubepods/besteffort/pod1",
            None,
            Duration::from_secs(2),
        ));
    });
    let report = report.unwrap();
    // Talos's messages: the node's path, and a pidfd failure logged even for a process that
    // is already gone.
    assert!(
        logs.contains("Sending SIGKILL to cgroup cgroup=/sys/fs/cgroup/kubepods/besteffort/pod1"),
        "{logs}"
    );
    assert!(
        logs.lines()
            .any(|l| l.contains("failed to open pidfd") && l.contains("pid=31")),
        "{logs}"
    );
    let dir = cg.path().join("kubepods/besteffort/pod1");
    assert_eq!(
        fake.calls,
        [
            Call::OpenPidfd(10),
            Call::OpenPidfd(20),
            Call::OpenPidfd(30),
            Call::OpenPidfd(31),
            Call::WriteCgroupKill(dir),
            Call::ReleaseMemory(10),
            Call::ReleaseMemory(20),
            Call::ReleaseMemory(30),
            Call::ReleaseMemory(31),
            Call::CloseAll,
        ]
    );
    assert_eq!(report.outcome, ActOutcome::Killed);
    assert_eq!(report.pids, [10, 20, 30, 31]);
    assert_eq!(
        report.processes,
        ["/pause", "", "stress-ng --vm 1"],
        "Talos D23: an exited process is absent"
    );
    assert!(report.duration.unwrap() < Duration::from_secs(1));
}

#[test]
fn a_kill_that_leaves_processes_is_not_verified() {
    let (cg, proc) = pod();
    let mut fake = RecordingActuator::new(KillEffect::Nothing);
    let timeout = Duration::from_millis(60);
    let report = kill_cgroup(
        &mut fake,
        &SystemClock,
        &CgroupFs::new(cg.path()),
        &ProcFs::new(proc.path()),
        "kubepods/besteffort/pod1",
        None,
        timeout,
    );
    assert_eq!(report.outcome, ActOutcome::NotVerified { stopping: false });
    assert!(report.duration.unwrap() >= timeout);
}

/// Issue 15: the verification is timed by the clock it is given; a minute passes on a
/// virtual clock without waiting, polled every 5 ms.
#[test]
fn verification_waits_on_the_injected_clock() {
    let (cg, proc) = pod();
    let mut fake = RecordingActuator::new(KillEffect::Nothing);
    let clock = VirtualClock::new();
    let timeout = Duration::from_secs(60);
    let started = std::time::Instant::now();
    let report = kill_cgroup(
        &mut fake,
        &clock,
        &CgroupFs::new(cg.path()),
        &ProcFs::new(proc.path()),
        "kubepods/besteffort/pod1",
        None,
        timeout,
    );
    assert_eq!(report.outcome, ActOutcome::NotVerified { stopping: false });
    assert_eq!(
        report.duration,
        Some(timeout),
        "ends on the first poll at the deadline"
    );
    assert_eq!(clock.elapsed(), timeout);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        report.error().as_deref(),
        Some("processes remain in the cgroup after 60000ms")
    );
}

/// Kills the fixture's `pod1` through `fake`, timed by a virtual clock.
fn kill_pod1(fake: &mut RecordingActuator, timeout: Duration) -> oomwarden_actuate::ActReport {
    let (cg, proc) = pod();
    kill_cgroup(
        fake,
        &VirtualClock::new(),
        &CgroupFs::new(cg.path()),
        &ProcFs::new(proc.path()),
        "kubepods/besteffort/pod1",
        None,
        timeout,
    )
}

/// Issue 14: a pod with more processes than the open-file limit made one error line per PID;
/// now the pidfds stop at the first EMFILE, said once, and the kill goes on.
#[test]
fn running_out_of_descriptors_for_pidfds_still_kills() {
    let mut fake = RecordingActuator::new(KillEffect::Empty);
    fake.pidfd_limit = Some(1);
    let report = kill_pod1(&mut fake, Duration::from_secs(1));
    assert_eq!(report.outcome, ActOutcome::Killed);
    let opens = fake
        .calls
        .iter()
        .filter(|c| matches!(c, Call::OpenPidfd(_)))
        .count();
    assert_eq!(
        opens, 2,
        "one opened, one EMFILE, then no more: {:?}",
        fake.calls
    );
    assert!(
        fake.calls
            .iter()
            .any(|c| matches!(c, Call::WriteCgroupKill(_)))
    );
}

/// Issue 14, item 7: once the daemon is stopping, verification waits at most the grace.
#[test]
fn a_stopping_daemon_ends_the_verification_after_the_grace() {
    use oomwarden_actuate::{Actuator, STOPPING_GRACE};
    let mut fake = RecordingActuator::new(KillEffect::Nothing);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    fake.set_stop(stop);
    let report = kill_pod1(&mut fake, Duration::from_secs(30));
    assert_eq!(report.outcome, ActOutcome::NotVerified { stopping: true });
    assert_eq!(
        report.duration,
        Some(STOPPING_GRACE),
        "{:?}",
        report.duration
    );
    assert_eq!(
        report.error().as_deref(),
        Some("oomwarden was stopping: processes still remained in the cgroup after 300 ms")
    );
}

#[test]
fn a_failed_write_is_reported_and_nothing_is_released() {
    let (cg, proc) = pod();
    let mut fake = RecordingActuator::new(KillEffect::Fail(libc_eacces()));
    let report = kill_cgroup(
        &mut fake,
        &SystemClock,
        &CgroupFs::new(cg.path()),
        &ProcFs::new(proc.path()),
        "kubepods/besteffort/pod1",
        None,
        Duration::from_secs(1),
    );
    assert!(
        matches!(
            report.outcome,
            ActOutcome::Failed { errno: Some(13), ref path, ref message }
                if message.contains("Permission denied") && path.ends_with("pod1/cgroup.kill")
        ),
        "{:?}",
        report.outcome
    );
    assert!(
        !fake
            .calls
            .iter()
            .any(|c| matches!(c, Call::ReleaseMemory(_)))
    );
    assert_eq!(fake.calls.last(), Some(&Call::CloseAll));
    assert_eq!(
        report.processes.len(),
        3,
        "command lines gathered before the failure are kept (Talos D24)"
    );
}

fn libc_eacces() -> i32 {
    13
}

#[test]
fn race_cgroup_vanishes_between_choosing_and_killing() {
    let (cg, proc) = pod();
    fs::remove_dir_all(cg.path().join("kubepods/besteffort/pod1")).unwrap();
    let report = kill_cgroup(
        &mut LinuxActuator::new(),
        &SystemClock,
        &CgroupFs::new(cg.path()),
        &ProcFs::new(proc.path()),
        "kubepods/besteffort/pod1",
        None,
        Duration::from_millis(50),
    );
    assert!(report.pids.is_empty());
    // Issue 15: a vanished cgroup is `Gone`, not a failed kill.
    assert!(
        matches!(report.outcome, ActOutcome::Gone(GoneReason::Removed)),
        "{:?}",
        report.outcome
    );
}

/// Issue 15: the cgroup ranked was replaced under the same path (a restarted unit, a new pod
/// sandbox) between choosing and killing: nothing is killed, and nothing is written.
#[test]
fn race_cgroup_replaced_between_choosing_and_killing() {
    let (cg, proc) = pod();
    let cgroups = CgroupFs::new(cg.path());
    let dir = "kubepods/besteffort/pod1";
    let ranked = cgroups.cgroup_id(dir).unwrap();
    // Renamed away (so that its inode stays in use) and a new one made at its path.
    fs::rename(cg.path().join(dir), cg.path().join("kubepods/old-pod1")).unwrap();
    fs::create_dir_all(cg.path().join(dir).join("new-ctr")).unwrap();
    fs::write(cg.path().join(dir).join("new-ctr/cgroup.procs"), "77\n").unwrap();
    let mut fake = RecordingActuator::new(KillEffect::Empty);
    let report = kill_cgroup(
        &mut fake,
        &SystemClock,
        &cgroups,
        &ProcFs::new(proc.path()),
        dir,
        Some(ranked),
        Duration::from_secs(1),
    );
    assert!(
        matches!(
            report.outcome,
            ActOutcome::Gone(GoneReason::Replaced { .. })
        ),
        "{:?}",
        report.outcome
    );
    assert!(
        report.pids.is_empty(),
        "the newcomer's processes are not the victim's"
    );
    assert!(
        fake.calls.is_empty(),
        "nothing was opened or written: {:?}",
        fake.calls
    );
    // The same cgroup, still there: killed.
    let same = cgroups.cgroup_id(dir).unwrap();
    let report = kill_cgroup(
        &mut fake,
        &SystemClock,
        &cgroups,
        &ProcFs::new(proc.path()),
        dir,
        Some(same),
        Duration::from_secs(1),
    );
    assert_eq!(report.outcome, ActOutcome::Killed);
    assert_eq!(report.pids, [77]);
}

#[test]
fn race_child_cgroup_vanishes_during_the_walk() {
    let (cg, _) = pod();
    fs::remove_dir_all(cg.path().join("kubepods/besteffort/pod1/a-pause/nested")).unwrap();
    assert_eq!(
        subtree_pids(&CgroupFs::new(cg.path()), "kubepods/besteffort/pod1"),
        [10, 30, 31]
    );
}

/// The host's cgroup2 mount point, from /proc/mounts.
fn cgroup2_mount() -> Option<PathBuf> {
    fs::read_to_string("/proc/mounts")
        .ok()?
        .lines()
        .find_map(|l| {
            let mut f = l.split_whitespace();
            let (_, point, fstype) = (f.next()?, f.next()?, f.next()?);
            (fstype == "cgroup2").then(|| PathBuf::from(point))
        })
}

/// Needs what a host may lack, so it is ignored by default and never passes by doing nothing:
/// `scripts/test` runs it (`--ignored`) where the host has what it needs, and says so.
#[test]
#[ignore = "needs root and a writable cgroup2 with cgroup.kill (kernel 5.14+); scripts/test runs it where the host has them"]
fn real_kill_of_real_processes_in_a_host_cgroup() {
    let mount = cgroup2_mount().expect("no cgroup2 mount on this host");
    let name = format!("oomwarden-test-{}", std::process::id());
    let dir = mount.join(&name);
    fs::create_dir(&dir).unwrap_or_else(|e| {
        panic!(
            "cannot create {}: {e} (needs root and a writable cgroup2)",
            dir.display()
        )
    });
    if !dir.join("cgroup.kill").exists() {
        let _ = fs::remove_dir(&dir);
        panic!("{} has no cgroup.kill (kernel < 5.14)", dir.display());
    }
    fs::create_dir(dir.join("inner")).unwrap();
    let mut children: Vec<std::process::Child> = (0..3)
        .map(|_| {
            std::process::Command::new("sleep")
                .arg("1000")
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, child) in children.iter().enumerate() {
        let target = if i == 2 {
            dir.join("inner/cgroup.procs")
        } else {
            dir.join("cgroup.procs")
        };
        fs::write(target, child.id().to_string()).unwrap();
    }
    let cgroups = CgroupFs::new(&mount);
    assert!(cgroups.is_populated(&name).unwrap());
    // Its id as ranked, read from the real cgroup2 tree: the same cgroup, so it is killed.
    let cgroup_id = cgroups.cgroup_id(&name).ok();
    assert!(cgroup_id.is_some());
    let report = kill_cgroup(
        &mut LinuxActuator::new(),
        &SystemClock,
        &cgroups,
        &ProcFs::new("/proc"),
        &name,
        cgroup_id,
        Duration::from_secs(10),
    );
    let statuses: Vec<_> = children.iter_mut().map(|c| c.wait().unwrap()).collect();
    // Clean up before asserting, so a failure leaves nothing behind.
    let _ = fs::remove_dir(dir.join("inner"));
    let removed = fs::remove_dir(&dir);
    assert_eq!(report.outcome, ActOutcome::Killed, "{report:?}");
    let mut expected: Vec<u32> = children.iter().map(std::process::Child::id).collect();
    let mut got = report.pids.clone();
    expected.sort_unstable();
    got.sort_unstable();
    assert_eq!(got, expected);
    assert!(
        report.processes.iter().all(|p| p == "sleep 1000"),
        "{:?}",
        report.processes
    );
    use std::os::unix::process::ExitStatusExt;
    assert!(
        statuses.iter().all(|s| s.signal() == Some(9)),
        "{statuses:?}"
    );
    removed.unwrap();
}

#[test]
fn a_directory_without_cgroup_procs_still_has_its_children_walked() {
    let (cg, _) = pod();
    fs::remove_file(cg.path().join("kubepods/besteffort/pod1/cgroup.procs")).unwrap();
    fs::remove_file(
        cg.path()
            .join("kubepods/besteffort/pod1/a-pause/cgroup.procs"),
    )
    .unwrap();
    assert_eq!(
        subtree_pids(&CgroupFs::new(cg.path()), "kubepods/besteffort/pod1"),
        [20, 30, 31]
    );
}

mod hooks {
    use std::time::{Duration, Instant};

    use oomwarden_actuate::{HookCall, HookResult, run_command};

    fn call(argv: &[&str], timeout_ms: u64) -> HookCall {
        HookCall {
            event: oomwarden_actuate::HookEvent::PreKill,
            argv: argv.iter().map(|s| (*s).to_owned()).collect(),
            env: vec![("OOMWARDEN_CLASS".into(), "Besteffort".into())],
            stdin: b"{\"id\":7}".to_vec(),
            timeout: Duration::from_millis(timeout_ms),
        }
    }

    #[test]
    fn exit_status_environment_and_stdin() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let script = format!(
            "cat > {0}; echo \"$OOMWARDEN_CLASS\" >> {0}; exit 3",
            out.display()
        );
        assert_eq!(
            run_command(&call(&["/bin/sh", "-c", &script], 5000)),
            HookResult::Exited(3)
        );
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "{\"id\":7}Besteffort\n"
        );
    }

    #[test]
    fn a_hook_past_its_timeout_is_killed_promptly() {
        let started = Instant::now();
        let r = run_command(&call(&["/bin/sleep", "30"], 200));
        assert_eq!(r, HookResult::TimedOut);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn a_stop_ends_a_running_hook_and_its_children() {
        use oomwarden_actuate::run_command_until;
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("child");
        let script = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
        let stop = Arc::new(AtomicBool::new(false));
        let setter = {
            let stop = Arc::clone(&stop);
            let pid_file = pid_file.clone();
            std::thread::spawn(move || {
                while !pid_file.exists() {
                    std::thread::sleep(Duration::from_millis(10));
                }
                stop.store(true, Ordering::SeqCst);
                Instant::now()
            })
        };
        let r = run_command_until(&call(&["/bin/sh", "-c", &script], 60_000), &stop);
        let stopped_at = setter.join().unwrap();
        assert_eq!(r, HookResult::Stopped);
        // Without the stop the hook would run 30 s (its child's sleep): 10 s apart is shown by
        // structure, and holds on a loaded machine.
        assert!(
            stopped_at.elapsed() < Duration::from_secs(10),
            "{:?}",
            stopped_at.elapsed()
        );
        assert!(ended(&pid_file), "the hook's child outlived it");
    }

    #[test]
    fn a_missing_program_is_reported() {
        let r = run_command(&call(&["/nonexistent/hook"], 200));
        assert!(
            matches!(&r, HookResult::SpawnFailed(e) if e.contains("/nonexistent/hook")),
            "{r:?}"
        );
        assert!(matches!(
            run_command(&call(&[], 200)),
            HookResult::SpawnFailed(_)
        ));
        // A signal: the hook kills itself.
        assert_eq!(
            run_command(&call(&["/bin/sh", "-c", "kill -9 $$"], 5000)),
            HookResult::Signaled
        );
    }

    /// The process a hook left behind, from the pid file it wrote: gone (or a zombie) within
    /// two seconds?
    fn ended(pid_file: &std::path::Path) -> bool {
        let pid = std::fs::read_to_string(pid_file).unwrap();
        let stat = format!("/proc/{}/stat", pid.trim());
        let until = Instant::now() + Duration::from_secs(2);
        loop {
            let alive = std::fs::read_to_string(&stat).is_ok_and(|s| {
                s.rsplit(") ")
                    .next()
                    .is_some_and(|rest| !rest.starts_with('Z'))
            });
            if !alive {
                return true;
            }
            if Instant::now() > until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    // Issue 32: post-kill hooks were unbounded (122 in flight after 6 s at a 50 ms interval,
    // then EMFILE) and outlived the daemon at SIGTERM (11 of 11 orphaned under PID 1).
    #[test]
    fn at_most_32_post_kill_hooks_run_and_the_stop_ends_every_one() {
        use oomwarden_actuate::{CommandHooks, Hooks, MAX_HOOKS_IN_FLIGHT};
        let dir = tempfile::tempdir().unwrap();
        let mut hooks = CommandHooks::new();
        for n in 0..40 {
            let script = format!(
                "sleep 60 & echo $! > {}/child-{n}; wait",
                dir.path().display()
            );
            hooks.spawn_hook(call(&["/bin/sh", "-c", &script], 120_000));
        }
        assert_eq!(MAX_HOOKS_IN_FLIGHT, 32);
        assert_eq!(
            hooks.skipped(),
            8,
            "the hooks beyond 32 are skipped and counted"
        );
        let children = || {
            std::fs::read_dir(dir.path())
                .unwrap()
                .filter_map(Result::ok)
                .filter(|e| std::fs::read_to_string(e.path()).is_ok_and(|p| !p.trim().is_empty()))
                .map(|e| e.path())
                .collect::<Vec<_>>()
        };
        let started = Instant::now();
        while children().len() < 32 {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{} hooks started",
                children().len()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        hooks.finish(Duration::from_secs(10));
        for child in children() {
            assert!(ended(&child), "{}: outlived the stop", child.display());
        }
    }

    // Issue 14: the timeout killed the hook only; a shell script's children outlived it and
    // the daemon.
    #[test]
    fn a_hooks_children_end_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("child");
        // Past its timeout, waiting for its child.
        let script = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
        assert_eq!(
            run_command(&call(&["/bin/sh", "-c", &script], 300)),
            HookResult::TimedOut
        );
        assert!(
            ended(&pid_file),
            "the timed-out hook's child is still running"
        );
        // Exited at once, leaving its child behind.
        let script = format!("sleep 30 & echo $! > {}", pid_file.display());
        assert_eq!(
            run_command(&call(&["/bin/sh", "-c", &script], 5000)),
            HookResult::Exited(0)
        );
        assert!(ended(&pid_file), "the hook's child outlived it");
    }

    // A hook that never reads a large record must still meet its timeout.
    #[test]
    fn a_hook_that_ignores_a_large_stdin_still_times_out() {
        let mut c = call(&["/bin/sleep", "30"], 300);
        c.stdin = vec![b'x'; 4 << 20];
        let started = Instant::now();
        assert_eq!(run_command(&c), HookResult::TimedOut);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }
}

/// `act` on `pod1` of a fresh fixture, with `hooks` and a pre-kill hook.
fn act_on_pod1(
    actuator: &mut dyn oomwarden_actuate::Actuator,
    hooks: &mut dyn oomwarden_actuate::Hooks,
    cg: &std::path::Path,
    proc: &std::path::Path,
    dry_run: bool,
) -> oomwarden_actuate::ActReport {
    let cgroups = CgroupFs::new(cg);
    let dir = "kubepods/besteffort/pod1";
    let order = oomwarden_actuate::Order {
        dir,
        cgroup_id: cgroups.cgroup_id(dir).ok(),
        parts: Vec::new(),
        dry_run,
        timeout: Duration::from_secs(1),
        method: oomwarden_model::KillMethod::Cgroup,
        pre_kill: Some(pre_kill_call()),
    };
    oomwarden_actuate::act(
        actuator,
        hooks,
        &VirtualClock::new(),
        &cgroups,
        &ProcFs::new(proc),
        &order,
    )
}

fn pre_kill_call() -> oomwarden_actuate::HookCall {
    oomwarden_actuate::HookCall {
        event: oomwarden_actuate::HookEvent::PreKill,
        argv: vec!["/bin/true".to_owned()],
        env: Vec::new(),
        stdin: Vec::new(),
        timeout: Duration::from_secs(60),
    }
}

/// `act` on a fresh `pod1` with one recording fake as actuator and hooks: the report and
/// every call, in order.
fn act_recorded(dry_run: bool) -> (oomwarden_actuate::ActReport, Vec<Call>) {
    let (cg, proc) = pod();
    let shared =
        oomwarden_actuate_fake::SharedRecorder::new(RecordingActuator::new(KillEffect::Empty));
    let report = act_on_pod1(
        &mut shared.clone(),
        &mut shared.clone(),
        cg.path(),
        proc.path(),
        dry_run,
    );
    let calls = shared.lock().calls.clone();
    (report, calls)
}

#[test]
fn act_runs_the_pre_kill_hook_then_kills() {
    let (report, calls) = act_recorded(false);
    assert_eq!(report.outcome, ActOutcome::Killed);
    assert_eq!(calls.first(), Some(&Call::RunHook(pre_kill_call())));
    assert!(
        matches!(calls.get(1), Some(Call::OpenPidfd(10))),
        "{calls:?}"
    );
    assert!(calls.iter().any(|c| matches!(c, Call::WriteCgroupKill(_))));
}

#[test]
fn a_dry_run_lists_the_processes_and_makes_no_system_call() {
    let (report, calls) = act_recorded(true);
    assert_eq!(report.outcome, ActOutcome::DryRun);
    assert_eq!(report.pids, [10, 20, 30, 31]);
    assert_eq!(report.processes, ["/pause", "", "stress-ng --vm 1"]);
    assert_eq!((report.duration, report.error()), (None, None));
    assert_eq!(
        calls,
        [Call::RunHook(pre_kill_call())],
        "the pre-kill hook runs in a dry run too, and nothing else"
    );
}

/// A pre-kill hook that takes its time, during which the pod's cgroup is replaced under the
/// same path (a new sandbox of a pod with the same UID, a restarted unit).
struct ReplacingHook {
    cg: PathBuf,
}

impl oomwarden_actuate::Hooks for ReplacingHook {
    fn run_hook(&mut self, _hook: &oomwarden_actuate::HookCall) -> oomwarden_actuate::HookResult {
        let dir = self.cg.join("kubepods/besteffort/pod1");
        fs::rename(&dir, self.cg.join("kubepods/besteffort/pod1-old")).unwrap();
        fs::create_dir_all(dir.join("newcomer")).unwrap();
        fs::write(dir.join("newcomer/cgroup.procs"), "99\n").unwrap();
        oomwarden_actuate::HookResult::Exited(0)
    }

    fn spawn_hook(&mut self, _hook: oomwarden_actuate::HookCall) {}
}

/// Issue 15's done-when: the ranked cgroup is replaced between choice and kill (here while
/// the pre-kill hook runs): the kill is refused as `Gone`, nothing is opened or written.
#[test]
fn a_cgroup_replaced_while_the_pre_kill_hook_runs_is_gone_and_untouched() {
    let (cg, proc) = pod();
    let mut fake = RecordingActuator::new(KillEffect::Empty);
    let mut hooks = ReplacingHook {
        cg: cg.path().to_owned(),
    };
    let report = act_on_pod1(&mut fake, &mut hooks, cg.path(), proc.path(), false);
    assert!(
        matches!(
            &report.outcome,
            ActOutcome::Gone(GoneReason::Replaced { .. })
        ),
        "{report:?}"
    );
    assert!(fake.calls.is_empty(), "{:?}", fake.calls);
    assert!(report.pids.is_empty() && report.duration.is_none());
}

/// Asks the fixture's `pod1` of the kernel's OOM killer through `fake`, timed by a virtual
/// clock; the tree, to look at after.
fn kernel_oom_pod1(
    fake: &mut RecordingActuator,
    timeout: Duration,
) -> (oomwarden_actuate::ActReport, tempfile::TempDir) {
    let (cg, proc) = pod();
    let report = kernel_oom_kill(
        fake,
        &VirtualClock::new(),
        &CgroupFs::new(cg.path()),
        &ProcFs::new(proc.path()),
        "kubepods/besteffort/pod1",
        None,
        timeout,
    );
    (report, cg)
}

/// Issue 34: `killMethod: kernel-oom` lowers the limits and lets the kernel kill: no
/// `cgroup.kill`, no pidfd; verified as a kill is; the cgroup's `oom_kill` counted (what the
/// runtime reads to say `OOMKilled`).
#[test]
fn the_kernels_oom_killer_ends_the_cgroup_without_cgroup_kill() {
    let mut fake = RecordingActuator::new(KillEffect::Empty);
    let (report, cg) = kernel_oom_pod1(&mut fake, Duration::from_secs(1));
    assert_eq!(report.outcome, ActOutcome::Killed);
    assert!(!report.fallback);
    assert_eq!(report.pids, [10, 20, 30, 31]);
    let dir = cg.path().join("kubepods/besteffort/pod1");
    assert_eq!(fake.calls, [Call::StartMemcgOom(dir.clone())]);
    let events = fs::read_to_string(dir.join("memory.events")).unwrap();
    assert!(events.contains("oom_kill 1"), "{events}");
}

/// The kernel's OOM killer that leaves processes (a process in uninterruptible sleep, a
/// limit the kernel could not enforce) is finished with `cgroup.kill`, after `timeout`, and
/// the report says so.
#[test]
fn a_cgroup_the_kernel_did_not_empty_is_finished_with_cgroup_kill() {
    let mut fake = RecordingActuator::new(KillEffect::Empty);
    fake.oom_effect = Some(KillEffect::Nothing);
    let timeout = Duration::from_secs(2);
    let (report, cg) = kernel_oom_pod1(&mut fake, timeout);
    assert_eq!(report.outcome, ActOutcome::Killed);
    assert!(report.fallback);
    assert!(report.duration.unwrap() >= timeout, "{report:?}");
    assert_eq!(
        report.pids,
        [10, 20, 30, 31],
        "the processes asked of the kernel"
    );
    let dir = cg.path().join("kubepods/besteffort/pod1");
    assert_eq!(fake.calls.first(), Some(&Call::StartMemcgOom(dir.clone())));
    assert!(
        fake.calls.contains(&Call::WriteCgroupKill(dir)),
        "{:?}",
        fake.calls
    );
}

/// Limits that cannot be written (read-only cgroupfs, no permission) fall back to
/// `cgroup.kill` at once; a cgroup that vanished as they were written is gone, as for
/// `cgroup.kill`.
#[test]
fn limits_that_cannot_be_written_fall_back_and_a_vanished_cgroup_is_gone() {
    let mut fake = RecordingActuator::new(KillEffect::Empty);
    fake.oom_effect = Some(KillEffect::Fail(libc::EACCES));
    let (report, _cg) = kernel_oom_pod1(&mut fake, Duration::from_secs(1));
    assert_eq!(report.outcome, ActOutcome::Killed);
    assert!(report.fallback);
    assert!(
        fake.calls
            .iter()
            .any(|c| matches!(c, Call::WriteCgroupKill(_))),
        "{:?}",
        fake.calls
    );
    let mut fake = RecordingActuator::new(KillEffect::Empty);
    fake.oom_effect = Some(KillEffect::Fail(libc::ENOENT));
    let (report, _cg) = kernel_oom_pod1(&mut fake, Duration::from_secs(1));
    assert_eq!(
        report.outcome,
        ActOutcome::Gone(GoneReason::VanishedAtKill {
            errno: libc::ENOENT
        })
    );
    assert!(
        !fake
            .calls
            .iter()
            .any(|c| matches!(c, Call::WriteCgroupKill(_)))
    );
}

/// `act` with `kernel-oom` asks it of each part (each container; the sandbox is not a part),
/// or of the whole victim when it has none.
#[test]
fn act_asks_the_kernel_for_each_part_or_the_whole() {
    let (cg, proc) = pod();
    let cgroups = CgroupFs::new(cg.path());
    let dir = "kubepods/besteffort/pod1";
    let part = "kubepods/besteffort/pod1/b-app";
    let mut order = oomwarden_actuate::Order {
        dir,
        cgroup_id: cgroups.cgroup_id(dir).ok(),
        parts: vec![oomwarden_actuate::Part {
            dir: part.to_owned(),
            cgroup_id: cgroups.cgroup_id(part).ok(),
        }],
        dry_run: false,
        timeout: Duration::from_secs(1),
        method: oomwarden_model::KillMethod::KernelOom,
        pre_kill: None,
    };
    let mut fake = RecordingActuator::new(KillEffect::Empty);
    let mut hooks = RecordingActuator::new(KillEffect::Empty);
    let report = oomwarden_actuate::act(
        &mut fake,
        &mut hooks,
        &VirtualClock::new(),
        &cgroups,
        &ProcFs::new(proc.path()),
        &order,
    );
    assert_eq!(report.outcome, ActOutcome::Killed);
    assert_eq!(report.pids, [30, 31], "the sandbox's processes are spared");
    assert_eq!(fake.calls, [Call::StartMemcgOom(cg.path().join(part))]);
    let (cg, proc) = pod();
    let cgroups = CgroupFs::new(cg.path());
    order.parts = Vec::new();
    order.cgroup_id = cgroups.cgroup_id(dir).ok();
    let mut fake = RecordingActuator::new(KillEffect::Empty);
    oomwarden_actuate::act(
        &mut fake,
        &mut hooks,
        &VirtualClock::new(),
        &cgroups,
        &ProcFs::new(proc.path()),
        &order,
    );
    assert_eq!(fake.calls, [Call::StartMemcgOom(cg.path().join(dir))]);
}

/// Issue 36: a pod that made thousands of cgroups of its own (Kubernetes 1.37's writable
/// cgroups, KEP-5474) or a chain deeper than the walk goes: the walk for PIDs stops at its
/// bounds (4,096 cgroups, 64 levels), the kill is still `cgroup.kill` on the whole pod, and the
/// report and the log say the walk was cut.
#[test]
fn a_pod_of_thousands_of_cgroups_is_killed_whole_after_a_bounded_walk() {
    use oomwarden_actuate::{MAX_WALK_DEPTH, MAX_WALKED_CGROUPS, subtree_pids_bounded};
    let cg = tempfile::tempdir().unwrap();
    let dir = "kubepods/burstable/podmany";
    write(
        cg.path(),
        &format!("{dir}/cgroup.events"),
        "populated 1\nfrozen 0\n",
    );
    write(cg.path(), &format!("{dir}/cgroup.procs"), "");
    for i in 0..5000 {
        write(
            cg.path(),
            &format!("{dir}/c{i:05}/cgroup.procs"),
            &format!("{}\n", 100 + i),
        );
    }
    let cgroups = CgroupFs::new(cg.path());
    let (pids, truncated) = subtree_pids_bounded(&cgroups, dir);
    assert!(truncated);
    // The pod itself, then its first 4,095 children in name order.
    assert_eq!(pids.len(), MAX_WALKED_CGROUPS - 1);
    assert_eq!(pids.first(), Some(&100));
    let proc = tempfile::tempdir().unwrap();
    let mut fake = RecordingActuator::new(KillEffect::Empty);
    let mut report = None;
    let logs = oomwarden_testkit::capture_logs(|| {
        report = Some(kill_cgroup(
            &mut fake,
            &VirtualClock::new(),
            &cgroups,
            &ProcFs::new(proc.path()),
            dir,
            None,
            Duration::from_secs(1),
        ));
    });
    let report = report.unwrap();
    assert_eq!(report.outcome, ActOutcome::Killed);
    assert!(report.walk_truncated);
    assert!(
        fake.calls
            .iter()
            .any(|c| matches!(c, Call::WriteCgroupKill(p) if p.ends_with(dir))),
        "{:?}",
        fake.calls.iter().rev().take(3).collect::<Vec<_>>()
    );
    assert!(
        logs.contains("cgroup.kill ends every process below it all the same"),
        "{logs}"
    );

    // A chain deeper than the walk goes: the levels below it are not walked.
    let deep = tempfile::tempdir().unwrap();
    let mut path = dir.to_owned();
    for level in 0..(MAX_WALK_DEPTH + 3) {
        path.push_str(&format!("/d{level}"));
        write(
            deep.path(),
            &format!("{path}/cgroup.procs"),
            &format!("{}\n", 1 + level),
        );
    }
    let (pids, truncated) = subtree_pids_bounded(&CgroupFs::new(deep.path()), dir);
    assert!(truncated);
    assert_eq!(pids.len(), MAX_WALK_DEPTH);
    // Within the bounds nothing is cut.
    let (cg, _) = pod();
    assert!(!subtree_pids_bounded(&CgroupFs::new(cg.path()), "kubepods/besteffort/pod1").1);
}
