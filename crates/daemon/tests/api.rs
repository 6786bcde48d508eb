//! The action API socket: permissions, requests, a stale socket replaced, a second daemon
//! refused.

// Test code: unwrap on expected outcomes is the assertion.
#![allow(clippy::unwrap_used, clippy::disallowed_methods)]

use std::os::unix::fs::PermissionsExt;

use oomwarden_daemon::api::{self, ApiError, SOCKET_NAME, Shared, SharedState, Status};
use oomwarden_model::{ActionRecord, Outcome, RecordKind};

fn record(id: u64) -> ActionRecord {
    ActionRecord {
        id,
        victim: Some("/sys/fs/cgroup/kubepods/besteffort/podx".into()),
        class: Some(oomwarden_model::QosClass::Besteffort),
        score: 1.0,
        pids: vec![100],
        processes: vec!["secret --token=xyz".into()],
        memory_current_bytes: Some(1),
        kill_duration_ms: Some(1.0),
        trigger_context: "{}".into(),
        ..ActionRecord::empty(
            RecordKind::Oomwarden,
            Outcome::Killed,
            format!("2026-11-29T12:00:0{id}.000Z"),
            id,
        )
    }
}

#[test]
fn the_socket_is_root_only_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    // A stale socket, as a crash leaves it: bound, then nobody listening.
    drop(std::os::unix::net::UnixListener::bind(dir.path().join(SOCKET_NAME)).unwrap());
    let shared: SharedState = std::sync::Arc::new(std::sync::Mutex::new(Shared {
        status: Status {
            version: "0.1.0".into(),
            layout: "talos".into(),
            cycles: 7,
            ..Default::default()
        },
        records: vec![record(0), record(1), record(2)],
        flight_recorder: None,
        usage: None,
    }));
    let path = api::serve(dir.path(), shared.clone()).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{mode:o}");

    let status: Status =
        serde_json::from_str(&api::request(dir.path(), "status").unwrap()).unwrap();
    assert_eq!((status.layout.as_str(), status.cycles), ("talos", 7));
    let all: Vec<ActionRecord> =
        serde_json::from_str(&api::request(dir.path(), "actions").unwrap()).unwrap();
    assert_eq!(all.len(), 3);
    let newer: Vec<ActionRecord> =
        serde_json::from_str(&api::request(dir.path(), "actions since=0").unwrap()).unwrap();
    assert_eq!(newer.iter().map(|r| r.id).collect::<Vec<_>>(), [1, 2]);
    // The flight recorder's window: refused while it is off, served once it is on.
    let off: serde_json::Value =
        serde_json::from_str(&api::request(dir.path(), "recording").unwrap()).unwrap();
    assert!(
        off["error"].as_str().unwrap().contains("flightRecorder"),
        "{off}"
    );
    let meta: oomwarden_recording::Meta = serde_json::from_value(serde_json::json!({
        "startedAt": "2026-11-29T00:00:00Z", "startNs": 0, "cgroupRoot": "/sys/fs/cgroup",
        "procRoot": "/proc", "layout": "talos", "intervalMs": 500, "source": "daemon", "version": "t"
    }))
    .unwrap();
    let mut recorder = oomwarden_recording::Recorder::new(meta, Some(60_000_000_000));
    recorder.cycle(5, oomwarden_recording::Wakeup::Tick, Vec::new());
    shared.lock().unwrap().flight_recorder =
        Some(std::sync::Arc::new(std::sync::Mutex::new(recorder)));
    let on: serde_json::Value =
        serde_json::from_str(&api::request(dir.path(), "recording").unwrap()).unwrap();
    let text = on["recording"].as_str().unwrap();
    let window = oomwarden_recording::parse(text).unwrap();
    assert_eq!(window.meta.source, "flight-recorder");
    assert_eq!(window.cycles.len(), 1);
    // The usage history: refused while it is off, served (as usage.json holds it) once on.
    let off: serde_json::Value =
        serde_json::from_str(&api::request(dir.path(), "usage").unwrap()).unwrap();
    assert!(
        off["error"].as_str().unwrap().contains("usageHistory"),
        "{off}"
    );
    let params = oomwarden_usage::Params {
        request_percentile: 0.9,
        ..Default::default()
    };
    shared.lock().unwrap().usage = Some(std::sync::Arc::new(std::sync::Mutex::new(
        oomwarden_daemon::usage::UsageState {
            history: oomwarden_usage::History::default(),
            params,
        },
    )));
    let usage = oomwarden_usage::from_json(&api::request(dir.path(), "usage").unwrap()).unwrap();
    assert_eq!(usage.params, params);
    assert!(usage.history.is_empty());
    let bad: serde_json::Value =
        serde_json::from_str(&api::request(dir.path(), "kill everything").unwrap()).unwrap();
    assert!(bad["error"].as_str().unwrap().contains("unknown request"));

    // The loop's updates are what the next request sees.
    shared.lock().unwrap().status.cycles = 8;
    let status: Status =
        serde_json::from_str(&api::request(dir.path(), "status").unwrap()).unwrap();
    assert_eq!(status.cycles, 8);

    // A second daemon on the same state directory is refused.
    let second = api::serve(dir.path(), shared);
    assert!(matches!(second, Err(ApiError::Running(_))), "{second:?}");
}

/// Issue 14: a client trickling a byte at a time held the socket for minutes (the timeout was
/// per read), so `oomwarden status` said the daemon was not running. Now a client has 2 s in
/// all, and a status request behind it is answered.
#[test]
fn a_trickling_client_cannot_hold_the_socket() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let shared: SharedState = std::sync::Arc::new(std::sync::Mutex::new(Shared::default()));
    api::serve(dir.path(), shared).unwrap();
    let path = dir.path().join(SOCKET_NAME);
    let trickler = std::thread::spawn(move || {
        let mut s = std::os::unix::net::UnixStream::connect(path).unwrap();
        for _ in 0..40 {
            if s.write_all(b"s").is_err() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    let started = std::time::Instant::now();
    let answer = api::request(dir.path(), "status").unwrap();
    assert!(answer.contains("\"version\""), "{answer}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(4),
        "status waited {:?} behind a trickling client",
        started.elapsed()
    );
    trickler.join().unwrap();
}
