//! The action history on a state filesystem that fills up (issue 14, item 6): a small tmpfs,
//! so the test needs root (CI and the development host are root); elsewhere it says it was
//! skipped.

// Test code: unwrap on expected outcomes is the assertion.
#![allow(clippy::unwrap_used, clippy::disallowed_methods)]

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use oomwarden_daemon::History;
use oomwarden_model::{ActionRecord, Outcome};

fn record(id: u64) -> ActionRecord {
    let mut r: ActionRecord = serde_json::from_str(
        r#"{"id":0,"time":"2026-11-30T12:00:00.000Z","monotonicNs":1,"outcome":"killed","triggerContext":"{}"}"#,
    )
    .unwrap();
    r.id = id;
    r.outcome = Outcome::Killed;
    r.processes = vec!["x".repeat(3000)];
    r
}

/// A mounted tmpfs, unmounted when dropped (also when an assertion fails).
struct Mount(tempfile::TempDir);

impl Mount {
    fn path(&self) -> &std::path::Path {
        self.0.path()
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

/// Mounts a tmpfs of `size` at a fresh directory (the test fails when it cannot: it is run
/// only where root is available).
fn small_tmpfs(size: &str) -> Mount {
    assert!(
        rustix::process::geteuid().is_root(),
        "the full-disk history test needs root to mount a small tmpfs"
    );
    let dir = tempfile::tempdir().unwrap();
    let ok = Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            &format!("size={size},mode=0700"),
            "tmpfs",
        ])
        .arg(dir.path())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mount -t tmpfs failed");
    Mount(dir)
}

/// Needs root, so it is ignored by default and never passes by doing nothing: `scripts/test`
/// runs it (`--ignored`) as root, and says so.
#[test]
#[ignore = "needs root to mount a small tmpfs; scripts/test runs it as root"]
fn a_record_after_a_full_disk_is_not_glued_onto_a_torn_one() {
    let mount = small_tmpfs("64k");
    let state = mount.path().join("state");
    let (mut history, warnings) = History::open(&state).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    // Fill the filesystem but for about one page, so that a record is cut in the middle.
    let filler = mount.path().join("filler");
    let _ = std::fs::write(&filler, vec![0u8; 56 << 10]);
    let mut failed = 0;
    for id in 0..30 {
        if history.push(record(id)).is_err() {
            failed += 1;
        }
    }
    assert!(failed > 0, "the disk never filled");
    // Space returns; the next record must be whole and on its own line.
    std::fs::remove_file(&filler).unwrap();
    let next = history.next_id();
    history.push(record(next)).unwrap();
    let text = std::fs::read_to_string(state.join("actions.jsonl")).unwrap();
    for (n, line) in text.lines().enumerate() {
        assert!(
            serde_json::from_str::<ActionRecord>(line).is_ok(),
            "line {}: not a whole record: {}",
            n + 1,
            line.get(..80).unwrap_or(line)
        );
    }
    let (reopened, warnings) = History::open(&state).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(reopened.recent().last().map(|r| r.id), Some(next));
    let mode = std::fs::metadata(&state).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
}

/// Issue 32: a read-only state filesystem stopped the handler from starting at all. Now it
/// runs without history (loudly): the records there are loaded (the cooldown and the ids go
/// on), new ones are kept in memory, no lock or socket is made.
#[test]
#[ignore = "needs root to mount a read-only tmpfs; scripts/test runs it as root"]
fn a_read_only_state_filesystem_means_running_without_history() {
    let mount = small_tmpfs("1m");
    let state = mount.path().join("state");
    {
        let (mut history, _) = History::open(&state).unwrap();
        history.push(record(7)).unwrap();
    }
    let ok = Command::new("mount")
        .args(["-o", "remount,ro"])
        .arg(mount.path())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mount -o remount,ro failed");
    let mut setup = None;
    let logs = oomwarden_testkit::capture_logs(|| {
        setup = Some(oomwarden_daemon::open_state(&state).unwrap());
    });
    let mut setup = setup.unwrap();
    assert!(logs.contains("running WITHOUT action history"), "{logs}");
    assert!(setup.dir.is_none() && setup.lock.is_none());
    assert!(!setup.history.persists());
    assert_eq!(setup.history.recent().last().map(|r| r.id), Some(7));
    assert_eq!(setup.history.next_id(), 8);
    setup.history.push(record(8)).unwrap();
    assert_eq!(setup.history.recent().count(), 2, "kept in memory");
    // A state directory that cannot even be made there: the same.
    let missing = mount.path().join("never-made");
    let setup = oomwarden_daemon::open_state(&missing).unwrap();
    assert!(setup.dir.is_none());
}
