//! The identity cache against a runtime that is slow, failing, oversized or sends strings that
//! are not UTF-8 (the fake CRI server of `oomwarden-testkit`; no containerd runs outside the
//! VM). Each test pins a defect of the fault suite (docs/operations.md): a label exemption
//! must never lapse because the runtime had a bad moment.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::time::{Duration, Instant};

use oomwarden_cri::v1;
use oomwarden_identity::{Cache, Config, Endpoint};
use oomwarden_model::IdentitySource;
use oomwarden_testkit::cri::{CriAnswer, FakeCri, LIST_CONTAINERS, LIST_POD_SANDBOX};
use prost::Message;

const PROTECTED: &str = "d4735e3a-265e-4ce8-a0f0-2c7a1b3e2f4a";
const NEWCOMER: &str = "6b86b273-ff34-4fce-96e3-6b3e0e2d5a2f";

fn sandbox(id: &str, uid: &str, name: &str, labels: &[(&str, &str)]) -> v1::PodSandbox {
    v1::PodSandbox {
        id: id.to_owned(),
        metadata: Some(v1::PodSandboxMetadata {
            name: name.to_owned(),
            uid: uid.to_owned(),
            namespace: "shop".to_owned(),
            attempt: 0,
        }),
        state: v1::PodSandboxState::SandboxReady as i32,
        created_at: 1,
        labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        annotations: Default::default(),
        runtime_handler: String::new(),
    }
}

fn sandboxes(items: Vec<v1::PodSandbox>) -> Vec<u8> {
    v1::ListPodSandboxResponse { items }.encode_to_vec()
}

/// `count` ready pods, each with an annotation of `note_bytes`.
fn annotated_pods(count: usize, note_bytes: usize) -> Vec<v1::PodSandbox> {
    (0..count)
        .map(|i| {
            let mut s = sandbox(
                &format!("s{i}"),
                &format!("uid-{i}"),
                &format!("pod-{i}"),
                &[("app", "web")],
            );
            s.annotations
                .insert("note".to_owned(), "x".repeat(note_bytes));
            s
        })
        .collect()
}

fn protected_answer() -> Vec<u8> {
    sandboxes(vec![sandbox(
        "s1",
        PROTECTED,
        "db",
        &[("oomwarden.io/protect", "true")],
    )])
}

fn config(cri: &FakeCri, logs: &std::path::Path, timeout: Duration) -> Config {
    Config {
        endpoint: Endpoint::Unix(cri.socket().to_owned()),
        pod_logs: logs.to_owned(),
        refresh_every: Duration::from_millis(200),
        timeout,
    }
}

fn protected_label(cache: &Cache) -> Option<String> {
    cache
        .snapshot()
        .pod(PROTECTED)
        .and_then(|p| p.labels.get("oomwarden.io/protect").cloned())
}

/// Waits (generously: a busy machine is slow, never wrong) until `cond` holds.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < end, "never: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Found by the fault suite: the first cycle after a start ranked with an empty cache 8 ms
/// before the runtime's first answer. `wait_first_answer` returns with the answer in force.
#[test]
fn the_first_ranking_has_the_runtimes_first_answer() {
    let dir = tempfile::tempdir().unwrap();
    let cri = FakeCri::start(dir.path());
    cri.set(
        LIST_POD_SANDBOX,
        CriAnswer::Message(protected_answer(), Duration::from_millis(700)),
    );
    let cache = Cache::start(config(&cri, dir.path(), Duration::from_secs(5))).unwrap();
    assert!(
        cache.wait_first_answer(),
        "the first answer came within the wait"
    );
    assert_eq!(protected_label(&cache).as_deref(), Some("true"));
    cache.stop();
}

/// The wait is bounded: a runtime that never answers costs the first ranking at most
/// `first_answer_wait`, and then the fallback is in force.
#[test]
fn the_first_answer_is_waited_for_within_a_bound() {
    let dir = tempfile::tempdir().unwrap();
    let cri = FakeCri::start(dir.path());
    cri.set(
        LIST_POD_SANDBOX,
        CriAnswer::Message(protected_answer(), Duration::from_secs(3600)),
    );
    let config = config(&cri, dir.path(), Duration::from_millis(300));
    assert_eq!(
        oomwarden_identity::first_answer_wait(&config),
        Duration::from_millis(800)
    );
    let cache = Cache::start(config).unwrap();
    // The refresh gives up at its deadline and the fallback answers: the wait ends.
    assert!(cache.wait_first_answer());
    let status = cache.status();
    assert!(!status.runtime_up);
    assert_eq!(status.source, IdentitySource::PodLogs);
    cache.stop();
}

/// Found by the fault suite: one refresh slower than the deadline (or failing) replaced the
/// last good identities with the pod-log fallback, which has no labels: every label exemption
/// lapsed until the next refresh. Now the last answer stays, with its age, and the fallback
/// only names pods it did not know.
#[test]
fn a_failing_or_slow_runtime_keeps_the_last_answer_and_its_labels() {
    for failure in [
        CriAnswer::Error(13, "containerd is busy".to_owned()),
        CriAnswer::Message(protected_answer(), Duration::from_secs(3600)),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("pods");
        // The kubelet's pod-log directories: the protected pod (no labels there) and one the
        // runtime never named.
        oomwarden_testkit::write(&logs, &format!("shop_db_{PROTECTED}/db/0.log"), "");
        oomwarden_testkit::write(&logs, &format!("shop_new_{NEWCOMER}/app/0.log"), "");
        let cri = FakeCri::start(dir.path());
        cri.script(
            LIST_POD_SANDBOX,
            [CriAnswer::Message(protected_answer(), Duration::ZERO)],
        );
        cri.set(LIST_POD_SANDBOX, failure.clone());
        let cache = Cache::start(config(&cri, &logs, Duration::from_millis(300))).unwrap();
        assert!(cache.wait_first_answer());
        assert!(
            cache.status().runtime_up,
            "the first answer is the runtime's"
        );
        wait_until("a refresh where the runtime failed", || {
            cache.status().runtime_failures >= 2
        });
        let status = cache.status();
        assert!(!status.runtime_up, "{failure:?}");
        assert_eq!(
            protected_label(&cache).as_deref(),
            Some("true"),
            "{failure:?}: the label is kept"
        );
        assert_eq!(
            cache.snapshot().pod(PROTECTED).map(|p| p.source),
            Some(IdentitySource::Cri)
        );
        assert_eq!(
            cache
                .snapshot()
                .pod(NEWCOMER)
                .map(|p| (p.qualified_name(), p.source)),
            Some(("shop/new".to_owned(), IdentitySource::PodLogs)),
            "a pod the last answer did not know is named from the fallback"
        );
        let age = status.age().expect("an age");
        assert!(
            cache.health().age.is_some_and(|a| a >= age),
            "the age grows"
        );
        assert!(status.last_error.is_some(), "{status:?}");
        cache.stop();
    }
}

/// Found by the fault suite: an answer over gRPC's default 4 MiB was refused whole. A node
/// of 3,000 pods with 2 KiB of annotations each is 6 MiB.
#[test]
fn an_answer_over_four_mebibytes_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let cri = FakeCri::start(dir.path());
    let bytes = sandboxes(annotated_pods(3000, 2048));
    assert!(bytes.len() > 6 << 20, "{}", bytes.len());
    cri.set(LIST_POD_SANDBOX, CriAnswer::Message(bytes, Duration::ZERO));
    let cache = Cache::start(config(&cri, dir.path(), Duration::from_secs(20))).unwrap();
    assert!(cache.wait_first_answer());
    let status = cache.status();
    assert!(status.runtime_up, "{status:?}");
    assert_eq!(cache.snapshot().pods.len(), 3000);
    cache.stop();
}

/// Issue 36: KEP-5825 found the CRI's list calls breaking past about 14,000 pods (gRPC's
/// 16 MB). The CRI has no paging; oomwarden takes answers up to 64 MiB: 15,000 pods with
/// 1 KiB of annotations each (17 MB) are all read.
#[test]
fn fifteen_thousand_pods_past_the_sixteen_megabyte_limit_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let cri = FakeCri::start(dir.path());
    let bytes = sandboxes(annotated_pods(15_000, 1024));
    assert!(bytes.len() > 16_000_000, "{}", bytes.len());
    cri.set(LIST_POD_SANDBOX, CriAnswer::Message(bytes, Duration::ZERO));
    let cache = Cache::start(config(&cri, dir.path(), Duration::from_secs(20))).unwrap();
    assert!(cache.wait_first_answer());
    assert!(cache.status().runtime_up, "{:?}", cache.status());
    assert_eq!(cache.snapshot().pods.len(), 15_000);
    cache.stop();
}

/// Found by the fault suite: one sandbox name that is not UTF-8 made the whole answer fail
/// to decode, and every pod lost its labels. Now that one string is replaced and counted.
#[test]
fn one_sandbox_name_that_is_not_utf8_costs_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let cri = FakeCri::start(dir.path());
    let mut bytes = sandboxes(vec![
        sandbox("s1", PROTECTED, "db", &[("oomwarden.io/protect", "true")]),
        sandbox("s2", NEWCOMER, "QbadQ", &[]),
    ]);
    let at = bytes.windows(5).position(|w| w == b"QbadQ").unwrap();
    bytes[at] = 0xff;
    cri.set(LIST_POD_SANDBOX, CriAnswer::Message(bytes, Duration::ZERO));
    cri.set(
        LIST_CONTAINERS,
        CriAnswer::Message(Vec::new(), Duration::ZERO),
    );
    let cache = Cache::start(config(&cri, dir.path(), Duration::from_secs(5))).unwrap();
    assert!(cache.wait_first_answer());
    let status = cache.status();
    assert!(status.runtime_up, "{status:?}");
    assert_eq!(status.not_utf8, 1);
    assert_eq!(protected_label(&cache).as_deref(), Some("true"));
    assert_eq!(
        cache.snapshot().pod(NEWCOMER).map(|p| p.name.clone()),
        Some("\u{fffd}badQ".to_owned())
    );
    cache.stop();
}

/// A reload that changes `containerRuntime` starts a new cache: the old identities stay in
/// force until the new runtime answers, so no cycle ranks with none.
#[test]
fn a_replacing_cache_keeps_the_old_identities_until_it_answers() {
    let dir = tempfile::tempdir().unwrap();
    let old_dir = dir.path().join("old");
    let new_dir = dir.path().join("new");
    std::fs::create_dir_all(&old_dir).unwrap();
    std::fs::create_dir_all(&new_dir).unwrap();
    let old_cri = FakeCri::start(&old_dir);
    old_cri.set(
        LIST_POD_SANDBOX,
        CriAnswer::Message(protected_answer(), Duration::ZERO),
    );
    let old = Cache::start(config(&old_cri, dir.path(), Duration::from_secs(5))).unwrap();
    assert!(old.wait_first_answer());
    let new_cri = FakeCri::start(&new_dir);
    new_cri.set(
        LIST_POD_SANDBOX,
        CriAnswer::Message(sandboxes(Vec::new()), Duration::from_secs(3600)),
    );
    let new =
        Cache::start_after(config(&new_cri, dir.path(), Duration::from_secs(60)), &old).unwrap();
    old.stop();
    assert!(new.wait_first_answer(), "carried identities are an answer");
    assert_eq!(protected_label(&new).as_deref(), Some("true"));
    assert!(new.status().answered_at.is_some(), "with their age");
    new.stop();
}
