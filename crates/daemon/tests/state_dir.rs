//! The state directory under hostile conditions (issue 32, the fault suite): whatever another
//! user planted or owns, the daemon never writes, chmods or deletes through a link, and a
//! directory it cannot trust is refused with its path and why.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use oomwarden_daemon::History;
use oomwarden_daemon::statedir::StateDir;
use oomwarden_model::{ActionRecord, Outcome, RecordKind};

fn private() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn record(id: u64) -> ActionRecord {
    let mut r = ActionRecord::empty(
        RecordKind::Oomwarden,
        Outcome::Killed,
        "2026-12-03T00:00:00.000Z".to_owned(),
        1,
    );
    r.id = id;
    r
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

/// Found: `actions.jsonl` symlinked elsewhere got its target chmodded and appended to.
#[test]
fn a_symlinked_history_is_refused_and_its_target_untouched() {
    let dir = private();
    let target = dir.path().join("elsewhere");
    std::fs::write(&target, "theirs\n").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(&target, state.join("actions.jsonl")).unwrap();
    let e = oomwarden_daemon::open_state(&state)
        .err()
        .map(|e| e.to_string());
    let e = e.unwrap_or_default();
    assert!(e.contains("actions.jsonl") && e.contains("symlink"), "{e}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "theirs\n");
    assert_eq!(mode(&target), 0o644, "not chmodded through the link");
}

/// Found: a dangling `actions.jsonl.tmp` planted for the compaction made the daemon create a
/// file where it pointed. One there at start is removed (the link, not its target); one
/// planted later makes the compaction fail, never follow it.
#[test]
fn a_planted_temporary_file_is_never_followed() {
    let dir = private();
    let state = dir.path().join("state");
    let victim = dir.path().join("made-through-the-link");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(&victim, state.join("actions.jsonl.tmp")).unwrap();
    let (history, warnings) = History::open(&state).unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("removed the temporary file")),
        "{warnings:?}"
    );
    assert!(std::fs::symlink_metadata(state.join("actions.jsonl.tmp")).is_err());
    // Planted again while the daemon runs, before a compaction.
    let mut history = history.with_bounds(4, 2);
    std::os::unix::fs::symlink(&victim, state.join("actions.jsonl.tmp")).unwrap();
    let mut failed = false;
    for id in 0..6 {
        failed |= history.push(record(id)).is_err();
    }
    assert!(
        failed,
        "the compaction could not make its file, and said so"
    );
    assert!(!victim.exists(), "nothing was made through the link");
    // The failed compaction removed the planted link (the link itself); the next one ran.
    let text = std::fs::read_to_string(state.join("actions.jsonl")).unwrap();
    assert!(
        text.lines().last().is_some_and(|l| l.contains("\"id\":5")),
        "{text}"
    );
    assert!(std::fs::symlink_metadata(state.join("actions.jsonl.tmp")).is_err());
}

/// Found: a symlinked `recordings/` had another directory's files pruned.
#[test]
fn a_symlinked_recordings_directory_is_refused() {
    let dir = private();
    let state = dir.path().join("state");
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    for id in 0..5 {
        std::fs::write(other.join(format!("action-{id}.rec.gz")), "keep").unwrap();
    }
    let mut notes = Vec::new();
    let s = StateDir::open(&state, &mut notes).unwrap();
    std::os::unix::fs::symlink(&other, state.join("recordings")).unwrap();
    let e = s
        .subdir("recordings", &mut notes)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("recordings") && e.contains("symlink"), "{e}");
    assert_eq!(std::fs::read_dir(&other).unwrap().count(), 5);
}

/// Found: a state directory owned by another user let that user steer the root daemon. Needs
/// root to give a directory away; elsewhere this part says it did not run.
#[test]
fn a_directory_of_another_user_or_writable_by_others_is_refused() {
    let dir = private();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o733)).unwrap();
    let e = oomwarden_daemon::open_state(&state)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        e.contains("writable by its group or others (mode 733)"),
        "{e}"
    );
    assert!(e.contains(&state.display().to_string()), "{e}");
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    if !rustix::process::geteuid().is_root() {
        eprintln!("NOT RUN: the foreign-owner part needs root to chown a directory");
        return;
    }
    rustix::fs::chown(
        &state,
        Some(rustix::fs::Uid::from_raw(65534)),
        Some(rustix::fs::Gid::from_raw(65534)),
    )
    .unwrap();
    let e = oomwarden_daemon::open_state(&state)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("owned by uid 65534"), "{e}");
    assert!(
        std::fs::read_dir(&state).unwrap().next().is_none(),
        "nothing made in it"
    );
}
