//! Events against a fake API server that checks each request as the real one does
//! (`oomwarden_testkit::apiserver`; no real API server runs on these machines).

use std::time::{Duration, Instant};

use oomwarden_events::{Dropped, Events, Options, REASON_KILLED, REASON_WOULD_KILL, Reporter};
use oomwarden_model::{ActionRecord, Outcome, QosClass, RecordKind};
use oomwarden_testkit::apiserver::{FakeApiServer, Reply};

fn kill(id: u64) -> ActionRecord {
    let mut r = ActionRecord::empty(
        RecordKind::Oomwarden,
        Outcome::Killed,
        format!("2026-11-29T15:31:{:02}.102Z", id % 60),
        id,
    );
    r.id = id;
    r.victim = Some("/sys/fs/cgroup/kubepods/besteffort/poda1b2".to_owned());
    r.class = Some(QosClass::Besteffort);
    r.pod_uid = Some("a1b2c3d4-0000-4000-8000-000000000001".to_owned());
    r.namespace = Some("shop".to_owned());
    r.pod_name = Some("cart-6b8f-zt9wd".to_owned());
    r.score = 1e9;
    r.trigger_expression = Some("memory_full_avg10 > 12.0".to_owned());
    r.trigger_context = "{\"memory_full_avg10\":14.5}".to_owned();
    r
}

/// Quick retries, so that the tests do not wait seconds.
fn options(server: &FakeApiServer, dir: &std::path::Path) -> Options {
    let mut o = Options::new(
        Some(server.kubeconfig(dir)),
        Reporter {
            node: "worker-1".to_owned(),
        },
    );
    o.backoff = Duration::from_millis(20);
    o.timeout = Duration::from_secs(2);
    o
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_kill_creates_the_pod_event_and_the_node_event() {
    let server = FakeApiServer::start();
    let dir = tempfile::tempdir().unwrap();
    let events = Events::start(options(&server, dir.path())).unwrap();
    events.offer(&kill(12));
    wait_until("two events", || events.counts().sent == 2);
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    for r in &requests {
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert_eq!(r.method, "POST");
    }
    assert_eq!(
        requests[0].path,
        "/apis/events.k8s.io/v1/namespaces/shop/events"
    );
    assert_eq!(
        requests[1].path,
        "/apis/events.k8s.io/v1/namespaces/default/events"
    );
    let pod = &requests[0].body;
    assert_eq!(pod["reason"], REASON_KILLED);
    assert_eq!(pod["type"], "Warning");
    assert_eq!(pod["regarding"]["kind"], "Pod");
    assert_eq!(pod["regarding"]["name"], "cart-6b8f-zt9wd");
    assert_eq!(
        pod["regarding"]["uid"],
        "a1b2c3d4-0000-4000-8000-000000000001"
    );
    assert_eq!(pod["related"]["kind"], "Node");
    let note = pod["note"].as_str().unwrap();
    assert!(note.contains("memory_full_avg10 = 14.5 > 12.0"), "{note}");
    assert!(note.contains("record 12"), "{note}");
    let node = &requests[1].body;
    assert_eq!(node["regarding"]["kind"], "Node");
    assert_eq!(node["regarding"]["name"], "worker-1");
    assert_eq!(node["reportingInstance"], "oomwarden-worker-1");
}

#[test]
fn a_dry_run_says_would_kill() {
    let server = FakeApiServer::start();
    let dir = tempfile::tempdir().unwrap();
    let events = Events::start(options(&server, dir.path())).unwrap();
    let mut r = kill(3);
    r.outcome = Outcome::DryRun;
    events.offer(&r);
    wait_until("two events", || events.counts().sent == 2);
    assert!(
        server
            .created()
            .iter()
            .all(|e| e["reason"] == REASON_WOULD_KILL)
    );
}

#[test]
fn server_errors_are_retried_and_delivered_once() {
    let server = FakeApiServer::start();
    server.script([
        Reply::Status(503, "ServiceUnavailable"),
        Reply::Status(500, "InternalError"),
        Reply::Status(429, "TooManyRequests"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let events = Events::start(options(&server, dir.path())).unwrap();
    events.offer(&kill(1));
    wait_until("two events", || events.counts().sent == 2);
    let c = events.counts();
    assert_eq!(c.retries, 3);
    assert_eq!(server.created().len(), 2);
    assert_eq!(server.requests().len(), 5);
}

/// A 409 AlreadyExists means an earlier attempt (that timed out for us) did create it: the
/// Event's name is the same on every attempt.
#[test]
fn already_exists_is_success_and_a_timed_out_create_is_not_made_twice() {
    let server = FakeApiServer::start();
    // The first answer comes after the client's deadline; the server still creates it.
    server.script([Reply::Delay(Duration::from_millis(2500))]);
    let dir = tempfile::tempdir().unwrap();
    let events = Events::start(options(&server, dir.path())).unwrap();
    events.offer(&kill(2));
    wait_until("two events", || events.counts().sent == 2);
    let statuses: Vec<u16> = server
        .wait_for_requests(3, Duration::from_secs(10))
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(server.created().len(), 2, "{statuses:?}");
    assert!(statuses.contains(&409), "{statuses:?}");
    assert_eq!(events.counts().dropped, [0; 4]);
}

#[test]
fn forbidden_is_dropped_at_once_and_counted() {
    let server = FakeApiServer::start();
    server.script([
        Reply::Status(403, "Forbidden"),
        Reply::Status(403, "Forbidden"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let events = Events::start(options(&server, dir.path())).unwrap();
    events.offer(&kill(4));
    wait_until("two refusals", || {
        events.counts().dropped(Dropped::Rejected) == 2
    });
    assert_eq!(server.requests().len(), 2, "no retry of a 403");
    assert_eq!(events.counts().sent, 0);
}

#[test]
fn an_unreachable_server_never_blocks_the_caller_and_is_counted() {
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(
        &path,
        format!("apiVersion: v1\nkind: Config\nclusters:\n- name: x\n  cluster:\n    server: http://127.0.0.1:{port}\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context: {{cluster: x, user: u}}\ncurrent-context: x\n"),
    )
    .unwrap();
    let mut o = Options::new(
        Some(path),
        Reporter {
            node: "n1".to_owned(),
        },
    );
    o.backoff = Duration::from_millis(10);
    o.attempts = 3;
    let events = Events::start(o).unwrap();
    // That an offer never waits for the server is shown by the hanging server below (an offer
    // that waited would take its 30 s); here only the retries count.
    events.offer(&kill(5));
    wait_until("two failures", || {
        events.counts().dropped(Dropped::Failed) == 2
    });
    assert_eq!(events.counts().retries, 4);
}

/// A server that does not answer: the queue fills, the rest is dropped, the caller never
/// waits.
#[test]
fn a_hanging_server_fills_the_bounded_queue_and_the_rest_is_dropped() {
    let server = FakeApiServer::start();
    server.script((0..50).map(|_| Reply::Delay(Duration::from_secs(30))));
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(&server, dir.path());
    o.queue = 2;
    let events = Events::start(o).unwrap();
    let t = Instant::now();
    for i in 0..10 {
        events.offer(&kill(100 + i));
    }
    // Each answer is held 30 s: ten offers that waited for one would take that long; 10 s
    // holds on a loaded machine.
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    // One record is being sent, two wait: the other seven records' 14 Events are dropped.
    wait_until("the drops", || {
        events.counts().dropped(Dropped::QueueFull) >= 12
    });
    let dropped = events.counts().dropped(Dropped::QueueFull);
    assert!((12..=16).contains(&dropped), "{dropped}");
}

#[test]
fn without_credentials_events_are_dropped_as_unconfigured() {
    // No kubeconfig, and not in a cluster (the suite never runs with a service account).
    if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
        eprintln!("SKIPPED: this test runs outside a cluster only");
        return;
    }
    let events = Events::start(Options::new(
        None,
        Reporter {
            node: "n1".to_owned(),
        },
    ))
    .unwrap();
    events.offer(&kill(6));
    wait_until("the drop", || {
        events.counts().dropped(Dropped::Unconfigured) == 2
    });
}

#[test]
fn the_rate_limit_spaces_events_out() {
    let server = FakeApiServer::start();
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(&server, dir.path());
    o.burst = 2;
    o.refill = Duration::from_millis(300);
    let events = Events::start(o).unwrap();
    let t = Instant::now();
    events.offer(&kill(7));
    events.offer(&kill(8));
    wait_until("four events", || events.counts().sent == 4);
    // Two at once, then one per 300 ms.
    assert!(
        t.elapsed() >= Duration::from_millis(550),
        "{:?}",
        t.elapsed()
    );
}

/// Found by the fault suite: an API server (or a proxy) answering with a huge body had it
/// read whole and logged whole (1.5 GB: 4.4 GB of RSS and a 1.5 GB log line). The body is
/// read up to a bound, and what is logged of it is short.
#[test]
fn a_huge_answer_is_read_to_a_bound_and_never_logged_whole() {
    let server = FakeApiServer::start();
    server.script((0..10).map(|_| Reply::Huge(503, 8 << 20)));
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(&server, dir.path());
    o.attempts = 2;
    let mut events = None;
    let logs = oomwarden_testkit::capture_logs(|| {
        let e = Events::start(o).unwrap();
        e.offer(&kill(9));
        wait_until("the drops", || e.counts().dropped(Dropped::Failed) == 2);
        events = Some(e);
    });
    assert!(events.is_some());
    let longest = logs.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 4096, "a log line of {longest} bytes");
    assert!(logs.contains("could not be sent"), "{logs}");
}

/// Found by the fault suite: the Events thread hung for ever on a FIFO kubeconfig and read
/// `/dev/zero` as one until memory ran out. Either is refused at once, said, and the Events
/// are counted as unconfigured; a kubeconfig naming a FIFO as its CA is refused the same way.
#[test]
fn a_kubeconfig_that_is_a_fifo_a_device_or_points_to_one_is_refused() {
    let server = FakeApiServer::start();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    oomwarden_testkit::fifo(&fifo);
    let pointing = dir.path().join("pointing");
    let good = std::fs::read_to_string(server.kubeconfig(dir.path())).unwrap();
    std::fs::write(
        &pointing,
        good.replace(
            "    server:",
            &format!("    certificate-authority: {}\n    server:", fifo.display()),
        ),
    )
    .unwrap();
    for (kubeconfig, said) in [
        (fifo.clone(), "kubeconfig"),
        (
            std::path::PathBuf::from("/dev/zero"),
            "kubeconfig /dev/zero",
        ),
        (pointing, "certificate-authority"),
    ] {
        let mut o = options(&server, dir.path());
        o.kubeconfig = Some(kubeconfig.clone());
        let logs = oomwarden_testkit::capture_logs(|| {
            let events = Events::start(o).unwrap();
            events.offer(&kill(3));
            wait_until("the drop", || {
                events.counts().dropped(Dropped::Unconfigured) == 2
            });
        });
        assert!(
            logs.contains("not a regular file") && logs.contains(said),
            "{}: {logs}",
            kubeconfig.display()
        );
    }
}

#[test]
fn a_kills_pod_event_carries_the_eviction_annotations_the_server_accepts() {
    let server = FakeApiServer::start();
    let dir = tempfile::tempdir().unwrap();
    let events = Events::start(options(&server, dir.path())).unwrap();
    let mut r = kill(5);
    r.containers = vec!["c1".to_owned()];
    r.container_names = vec!["cart".to_owned()];
    r.container_working_set_bytes = vec![Some(512 << 20)];
    events.offer(&r);
    wait_until("two events", || events.counts().sent == 2);
    let pod = &server.requests()[0];
    assert!(pod.problems.is_empty(), "{:?}", pod.problems);
    let a = &pod.body["metadata"]["annotations"];
    assert_eq!(a["offending_containers"], "cart");
    assert_eq!(a["offending_containers_usage"], "512Mi");
    assert_eq!(a["starved_resource"], "memory");
}

fn with_condition(server: &FakeApiServer, dir: &std::path::Path) -> Options {
    Options {
        pod_condition: true,
        ..options(server, dir)
    }
}

#[test]
fn with_pod_condition_a_killed_pod_gets_disruption_target_and_keeps_its_other_conditions() {
    let server = FakeApiServer::start();
    server.add_pod(
        "shop",
        "cart-6b8f-zt9wd",
        "a1b2c3d4-0000-4000-8000-000000000001",
    );
    let dir = tempfile::tempdir().unwrap();
    let events = Events::start(with_condition(&server, dir.path())).unwrap();
    events.offer(&kill(7));
    wait_until("the condition", || events.counts().conditions_set == 1);
    assert_eq!(events.counts().sent, 2);
    let patch = server
        .requests()
        .into_iter()
        .find(|r| r.method == "PATCH")
        .unwrap();
    assert_eq!(
        patch.path,
        "/api/v1/namespaces/shop/pods/cart-6b8f-zt9wd/status"
    );
    assert!(patch.problems.is_empty(), "{:?}", patch.problems);
    let conditions = server.pod_conditions("shop", "cart-6b8f-zt9wd");
    assert_eq!(conditions.len(), 1, "{conditions:?}");
    assert_eq!(conditions[0]["type"], "DisruptionTarget");
    assert_eq!(conditions[0]["reason"], "TerminationByOOMWarden");
    assert_eq!(conditions[0]["status"], "True");
    // A second kill of the same pod replaces its condition (merged by type), not a second one.
    events.offer(&kill(8));
    wait_until("the second condition", || {
        events.counts().conditions_set == 2
    });
    assert_eq!(server.pod_conditions("shop", "cart-6b8f-zt9wd").len(), 1);
}

#[test]
fn a_condition_for_another_pod_of_the_same_name_is_refused_and_counted() {
    let server = FakeApiServer::start();
    // The StatefulSet made the pod again after the kill: same name, another UID.
    server.add_pod(
        "shop",
        "cart-6b8f-zt9wd",
        "ffffffff-0000-4000-8000-000000000002",
    );
    let dir = tempfile::tempdir().unwrap();
    let events = Events::start(with_condition(&server, dir.path())).unwrap();
    events.offer(&kill(9));
    wait_until("the refusal", || {
        events.counts().conditions_dropped(Dropped::Rejected) == 1
    });
    assert!(server.pod_conditions("shop", "cart-6b8f-zt9wd").is_empty());
    assert_eq!(events.counts().sent, 2, "the Events are sent all the same");
}

#[test]
fn without_pod_condition_or_for_a_dry_run_no_pod_is_patched() {
    let server = FakeApiServer::start();
    server.add_pod(
        "shop",
        "cart-6b8f-zt9wd",
        "a1b2c3d4-0000-4000-8000-000000000001",
    );
    let dir = tempfile::tempdir().unwrap();
    let events = Events::start(options(&server, dir.path())).unwrap();
    events.offer(&kill(10));
    wait_until("two events", || events.counts().sent == 2);
    drop(events);
    let events = Events::start(with_condition(&server, dir.path())).unwrap();
    let mut dry = kill(11);
    dry.outcome = Outcome::DryRun;
    events.offer(&dry);
    wait_until("two more events", || events.counts().sent == 2);
    assert!(server.requests().iter().all(|r| r.method == "POST"));
    assert_eq!(events.counts().conditions_set, 0);
}

fn taint_record(id: u64, outcome: Outcome) -> ActionRecord {
    let mut r = ActionRecord::empty(
        RecordKind::Oomwarden,
        outcome,
        format!("2026-12-04T08:00:{:02}.000Z", id % 60),
        id,
    );
    r.id = id;
    r.stage = Some("squeeze".to_owned());
    r
}

/// Issue 34: a `tainted` record taints the node (keeping another controller's taints) and
/// sets its condition; `untainted` removes only oomwarden's taint and clears the condition;
/// each with a Node Event.
#[test]
fn taint_and_untaint_the_node_keeping_other_taints() {
    let server = FakeApiServer::start();
    server.add_node("worker-1");
    server.add_taint(
        "worker-1",
        serde_json::json!({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}),
    );
    let dir = tempfile::tempdir().unwrap();
    let events = Events::start(options(&server, dir.path())).unwrap();
    events.offer(&taint_record(20, Outcome::Tainted));
    wait_until("the taint", || events.counts().node_updates == 1);
    let node = server.node("worker-1").unwrap();
    let keys: Vec<&str> = node
        .taints
        .iter()
        .map(|t| t["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["dedicated", "oomwarden.io/memory-pressure"]);
    assert_eq!(node.taints[1]["effect"], "NoSchedule");
    assert_eq!(node.conditions[0]["type"], "OOMWardenMemoryPressure");
    assert_eq!(node.conditions[0]["status"], "True");
    assert_eq!(node.conditions[0]["reason"], "Stage");
    assert!(server.requests().iter().all(|r| r.problems.is_empty()));
    wait_until("the Node Event", || events.counts().sent == 1);
    assert!(
        server
            .created()
            .iter()
            .any(|e| e["reason"] == "OOMWardenTainted" && e["regarding"]["kind"] == "Node")
    );
    events.offer(&taint_record(21, Outcome::Untainted));
    wait_until("the untaint", || events.counts().node_updates == 2);
    let node = server.node("worker-1").unwrap();
    let keys: Vec<&str> = node
        .taints
        .iter()
        .map(|t| t["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["dedicated"]);
    assert_eq!(node.conditions[0]["status"], "False");
}

/// A node changed between the read and the write (409 Conflict) is read again and written.
#[test]
fn a_conflicting_node_write_is_read_again() {
    let server = FakeApiServer::start();
    server.add_node("worker-1");
    // The first request (the read) answers; the write then finds the node moved on.
    let dir = tempfile::tempdir().unwrap();
    let events = Events::start(options(&server, dir.path())).unwrap();
    server.script([Reply::Normal, Reply::Status(409, "Conflict")]);
    events.offer(&taint_record(22, Outcome::Tainted));
    wait_until("the taint", || events.counts().node_updates == 1);
    assert!(events.counts().retries >= 1);
    let node = server.node("worker-1").unwrap();
    assert_eq!(node.taints.len(), 1);
}

/// Without the RBAC (403) the taint is refused, counted (once), and the Event still goes out;
/// the taint is tried again until made.
#[test]
fn a_refused_taint_is_counted_and_the_event_still_sent() {
    let server = FakeApiServer::start();
    server.add_node("worker-1");
    server.script([Reply::Status(403, "Forbidden")]);
    let dir = tempfile::tempdir().unwrap();
    let events = Events::start(options(&server, dir.path())).unwrap();
    events.offer(&taint_record(23, Outcome::Tainted));
    wait_until("the refusal", || {
        events.counts().node_updates_dropped(Dropped::Rejected) == 1
    });
    wait_until("the Event", || events.counts().sent == 1);
    // Issue 54 (3): the node's state is written until made (here, the RBAC granted after the
    // first refusal), not dropped.
    wait_until("the taint, made later", || {
        events.counts().node_updates == 1
    });
    assert_eq!(server.node("worker-1").unwrap().taints.len(), 1);
}

/// [`options`], reading the Node at the start as the daemon does.
fn finding_taint(server: &FakeApiServer, dir: &std::path::Path) -> Options {
    Options {
        find_taint_at_start: true,
        ..options(server, dir)
    }
}

/// Waits until the sender has read the Node at its start.
fn read_at_start(events: &Events) -> bool {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(found) = events.taint_found_at_start() {
            return found;
        }
        assert!(Instant::now() < end, "the node was never read");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Issue 54 (3): a removal whose writes fail for longer than the Events' retries (five
/// attempts, about 20 s in production) was dropped and the node stayed tainted for ever; it is
/// now written until made.
#[test]
fn a_removal_that_keeps_failing_is_retried_until_made() {
    let server = FakeApiServer::start();
    server.add_node("worker-1");
    let dir = tempfile::tempdir().unwrap();
    let events = Events::start(finding_taint(&server, dir.path())).unwrap();
    assert!(!read_at_start(&events));
    events.offer(&taint_record(30, Outcome::Tainted));
    wait_until("the taint", || events.counts().node_updates == 1);
    wait_until("its Event", || events.counts().sent == 1);
    // Twelve failures in a row: more than the five attempts an Event gets.
    server.script(std::iter::repeat_n(
        Reply::Status(503, "ServiceUnavailable"),
        12,
    ));
    events.offer(&taint_record(31, Outcome::Untainted));
    let end = Instant::now() + Duration::from_secs(60);
    while events.counts().node_updates < 2 {
        assert!(Instant::now() < end, "{:?}", events.counts());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(server.node("worker-1").unwrap().taints.is_empty());
    assert_eq!(events.counts().node_updates_dropped(Dropped::Failed), 0);
}

/// Issue 54 (3): a full Events queue dropped the removal with the Events; the node's state is
/// kept beside the queue and made whatever the queue holds.
#[test]
fn a_full_queue_never_drops_the_taints_removal() {
    let server = FakeApiServer::start();
    server.add_node("worker-1");
    let dir = tempfile::tempdir().unwrap();
    let mut o = finding_taint(&server, dir.path());
    o.queue = 1;
    let events = Events::start(o).unwrap();
    read_at_start(&events);
    events.offer(&taint_record(40, Outcome::Tainted));
    wait_until("the taint", || events.counts().node_updates == 1);
    // The sender busy on slow answers while the queue overflows.
    server.script(std::iter::repeat_n(
        Reply::Delay(Duration::from_millis(300)),
        4,
    ));
    for id in 41..46 {
        events.offer(&kill(id));
    }
    events.offer(&taint_record(46, Outcome::Untainted));
    assert!(
        events.counts().dropped(Dropped::QueueFull) > 0,
        "the queue overflowed"
    );
    wait_until("the removal", || events.counts().node_updates == 2);
    assert!(server.node("worker-1").unwrap().taints.is_empty());
}

/// Issue 54 (3, 6): only oomwarden's own taint (its value) is ever removed; an administrator's
/// with the same key is neither doubled (taints are unique by key and effect) nor removed. The
/// sender says at its start whether the Node carries oomwarden's taint.
#[test]
fn an_administrators_taint_with_the_key_is_left_alone() {
    let server = FakeApiServer::start();
    server.add_node("worker-1");
    server.add_taint(
        "worker-1",
        serde_json::json!({"key": "oomwarden.io/memory-pressure", "effect": "NoSchedule"}),
    );
    let dir = tempfile::tempdir().unwrap();
    let events = Events::start(finding_taint(&server, dir.path())).unwrap();
    assert!(
        !read_at_start(&events),
        "an administrator's taint is not ours"
    );
    events.offer(&taint_record(50, Outcome::Tainted));
    wait_until("the taint", || events.counts().node_updates == 1);
    events.offer(&taint_record(51, Outcome::Untainted));
    wait_until("the untaint", || events.counts().node_updates == 2);
    let node = server.node("worker-1").unwrap();
    assert_eq!(
        node.taints,
        [serde_json::json!({"key": "oomwarden.io/memory-pressure", "effect": "NoSchedule"})]
    );
    assert!(server.requests().iter().all(|r| r.problems.is_empty()));
    // oomwarden's own, from before a restart, is found.
    let server = FakeApiServer::start();
    server.add_node("worker-1");
    server.add_taint(
        "worker-1",
        serde_json::json!({"key": "oomwarden.io/memory-pressure", "value": "oomwarden", "effect": "NoSchedule"}),
    );
    let events = Events::start(finding_taint(&server, dir.path())).unwrap();
    assert!(read_at_start(&events));
}
