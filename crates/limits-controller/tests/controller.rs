//! The controller against the test suite's API server (`oomwarden_testkit::apiserver`: lists,
//! watches, resource versions, conflicts, 403 and 5xx; no real API server runs on these
//! machines). Each test seeds objects, runs the controller on a thread of its own and waits
//! (generously) for what it must write, as a cluster's administrator would see it.

// Test code: unwrap on expected outcomes is the assertion.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use oomwarden_limits::{Preset, Settings};
use oomwarden_limits_controller::{LeaseOptions, Metrics, Options, run};
use oomwarden_testkit::apiserver::FakeApiServer;
use serde_json::{Value, json};

const LR: &str = "cozystack-system-defaults";
const STATE: &str = "operator.cozystack.io/system-memory-state";
const ACK: &str = "operator.cozystack.io/system-memory-ack";
const LABEL: &str = "cozystack.io/system";
const MANAGED: &str = "cozystack-package-controller";
/// Long enough for a busy machine; the conditions are met in well under a second normally.
const PATIENCE: Duration = Duration::from_secs(60);

struct Running {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    /// The run's result and its log.
    thread: Option<std::thread::JoinHandle<(Result<(), String>, String)>>,
    metrics: Arc<Metrics>,
}

impl Running {
    /// Stops the controller; its log.
    fn stop(mut self) -> Result<String, String> {
        self.finish()
    }

    fn finish(&mut self) -> Result<String, String> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take() {
            Some(t) => {
                let (result, log) = t.join().unwrap();
                result.map(|()| log)
            }
            None => Ok(String::new()),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

fn settings(limit: &str) -> Settings {
    let p = Preset::Cozystack;
    Settings::new(p.names(), p.selection(), limit, "").unwrap()
}

fn start(server: &FakeApiServer, dir: &Path, limit: &str, lease: Option<LeaseOptions>) -> Running {
    let options = Options {
        kubeconfig: Some(server.kubeconfig(dir)),
        settings: settings(limit),
        resync: Duration::from_secs(2),
        lease,
        instance: "limits-0".to_owned(),
    };
    let metrics = Arc::new(Metrics::new());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let m = Arc::clone(&metrics);
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // One thread runs the controller and its reconciles: its log is captured whole.
        let mut result = Ok(());
        let log = oomwarden_testkit::capture_logs(|| {
            result = rt
                .block_on(run(options, m, async move {
                    let _ = rx.await;
                }))
                .map_err(|e| e.to_string());
        });
        (result, log)
    });
    Running {
        stop: Some(tx),
        thread: Some(thread),
        metrics,
    }
}

fn wait_for(what: &str, f: impl FnMut() -> bool) {
    wait_up_to(PATIENCE, what, f);
}

fn wait_up_to(patience: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + patience;
    while !f() {
        assert!(Instant::now() < end, "waited {patience:?} for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn namespace(server: &FakeApiServer, name: &str) -> Value {
    server
        .object("Namespace", None, name)
        .unwrap_or_else(|| panic!("namespace {name}"))
}

fn state(server: &FakeApiServer, ns: &str) -> Option<Value> {
    namespace(server, ns)["metadata"]["annotations"][STATE]
        .as_str()
        .map(|s| serde_json::from_str(s).unwrap())
}

fn has_lr(server: &FakeApiServer, ns: &str) -> bool {
    server.object("LimitRange", Some(ns), LR).is_some()
}

fn lr_limit(server: &FakeApiServer, ns: &str) -> Option<String> {
    server.object("LimitRange", Some(ns), LR).and_then(|lr| {
        lr["spec"]["limits"][0]["default"]["memory"]
            .as_str()
            .map(str::to_owned)
    })
}

fn seed(server: &FakeApiServer, names: &[&str]) {
    for n in names {
        server.put_object(json!({"kind": "Namespace", "metadata": {"name": n}}));
    }
}

fn annotate(server: &FakeApiServer, ns: &str, key: &str, value: &str) {
    let mut n = namespace(server, ns);
    n["metadata"]["annotations"][key] = json!(value);
    server.put_object(n);
}

fn big_deployment(ns: &str, request: &str) -> Value {
    json!({"kind": "Deployment", "metadata": {"name": "big", "namespace": ns},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": request}}}]}}}})
}

fn events(server: &FakeApiServer, reason: &str) -> Vec<Value> {
    server
        .created()
        .into_iter()
        .filter(|e| e["reason"] == reason)
        .collect()
}

#[test]
fn applies_holds_takes_an_acknowledgement_and_keeps_tenants_out() {
    let server = FakeApiServer::start();
    let dir = tempfile::tempdir().unwrap();
    seed(&server, &["kube-system", "cozy-system", "tenant-a"]);
    let running = start(&server, dir.path(), "", None);

    wait_for("the defaults", || {
        has_lr(&server, "kube-system") && has_lr(&server, "cozy-system")
    });
    let lr = server
        .object("LimitRange", Some("kube-system"), LR)
        .unwrap();
    assert_eq!(
        lr["spec"]["limits"],
        json!([{"type": "Container", "default": {"memory": "32Gi"}, "defaultRequest": {"memory": "32Mi"}}])
    );
    assert_eq!(
        lr["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        MANAGED
    );
    wait_for("the label and the state", || {
        namespace(&server, "kube-system")["metadata"]["labels"][LABEL] == "true"
            && state(&server, "kube-system") == Some(json!({"version": 1, "lastLimit": "32Gi"}))
    });
    assert!(!has_lr(&server, "tenant-a"));
    assert!(namespace(&server, "tenant-a")["metadata"]["labels"][LABEL].is_null());
    wait_for("the metrics", || {
        running
            .metrics
            .encode()
            .contains("oomwarden_limits_namespaces{state=\"defaulted\"} 2")
    });

    // A visible blocker: withdrawn and held, said in an Event.
    server.put_object(big_deployment("cozy-system", "40Gi"));
    wait_for("the hold", || {
        !has_lr(&server, "cozy-system")
            && state(&server, "cozy-system").is_some_and(|s| s["hold"].is_string())
    });
    let held = state(&server, "cozy-system").unwrap();
    assert_eq!(held["target"], "32Gi");
    assert!(
        held["reason"]
            .as_str()
            .unwrap()
            .contains("Deployment/big container c requests 40Gi")
    );
    let token = format!("{}:32Gi", held["hold"].as_str().unwrap());
    assert!(namespace(&server, "cozy-system")["metadata"]["labels"][LABEL].is_null());
    wait_for("the Event", || {
        !events(&server, "DefaultWithheld").is_empty()
    });
    let e = &events(&server, "DefaultWithheld")[0];
    assert_eq!(e["regarding"]["kind"], "Namespace");
    assert_eq!(e["regarding"]["name"], "cozy-system");
    assert!(
        e["note"]
            .as_str()
            .unwrap()
            .contains(&format!("{ACK}={token}")),
        "{e}"
    );
    wait_for("the held metric", || {
        running
            .metrics
            .encode()
            .contains("oomwarden_limits_namespaces{state=\"held\"} 1")
    });

    // An acknowledgement met by the still-visible blocker: rejected and removed.
    annotate(&server, "cozy-system", ACK, &token);
    wait_for("the rejection", || {
        !events(&server, "AcknowledgementRejected").is_empty()
    });
    wait_for("the token removed", || {
        namespace(&server, "cozy-system")["metadata"]["annotations"][ACK].is_null()
    });
    assert!(!has_lr(&server, "cozy-system"));
    assert_eq!(state(&server, "cozy-system").unwrap()["hold"], held["hold"]);

    // The blocker goes: the hold stays (a reconcile runs every 2 s here; several pass).
    assert!(server.delete_object("Deployment", Some("cozy-system"), "big"));
    let before = running.metrics.reconciles();
    wait_for("a few reconciles", || {
        running.metrics.reconciles() > before + 6
    });
    assert!(!has_lr(&server, "cozy-system"));
    assert_eq!(state(&server, "cozy-system").unwrap()["hold"], held["hold"]);

    // The acknowledgement and a clean scan: applied, the token consumed.
    annotate(&server, "cozy-system", ACK, &token);
    wait_for("the default again", || has_lr(&server, "cozy-system"));
    wait_for("the state", || {
        state(&server, "cozy-system") == Some(json!({"version": 1, "lastLimit": "32Gi"}))
    });
    assert!(namespace(&server, "cozy-system")["metadata"]["annotations"][ACK].is_null());
    // Said where operators grep for it: the namespace, the reason and the token.
    let log = running.stop().unwrap();
    let line = log
        .lines()
        .find(|l| l.contains("withholding the default container memory limit"))
        .unwrap_or_else(|| panic!("no withholding line in:\n{log}"));
    assert!(line.contains("namespace=cozy-system"), "{line}");
    assert!(line.contains(&format!("acknowledgement={token}")), "{line}");
    assert!(
        line.contains("Deployment/big container c requests 40Gi"),
        "{line}"
    );
}

#[test]
fn a_foreign_limit_range_wins_and_a_same_named_one_is_never_touched() {
    let server = FakeApiServer::start();
    let dir = tempfile::tempdir().unwrap();
    seed(&server, &["kube-system", "monitoring", "squatted"]);
    let squatter = json!({"kind": "LimitRange", "metadata": {"name": LR, "namespace": "squatted"},
        "spec": {"limits": [{"type": "Container", "default": {"cpu": "1"}}]}});
    let squatter = server.put_object(squatter);
    let running = start(&server, dir.path(), "", None);
    wait_for("the defaults", || {
        has_lr(&server, "kube-system") && has_lr(&server, "monitoring")
    });

    server.put_object(
        json!({"kind": "LimitRange", "metadata": {"name": "admin", "namespace": "monitoring"},
        "spec": {"limits": [{"type": "Pod", "max": {"memory": "8Gi"}}]}}),
    );
    wait_for("the withdrawal", || !has_lr(&server, "monitoring"));
    wait_for("the foreign metric", || {
        running
            .metrics
            .encode()
            .contains("oomwarden_limits_namespaces{state=\"foreign\"} 1")
    });
    // A CPU-only one elsewhere coexists.
    server.put_object(
        json!({"kind": "LimitRange", "metadata": {"name": "cpu", "namespace": "kube-system"},
        "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]}}),
    );
    std::thread::sleep(Duration::from_secs(3));
    assert!(has_lr(&server, "kube-system"));
    // The squatter is as it was, and its namespace has no default and no label.
    assert_eq!(
        server.object("LimitRange", Some("squatted"), LR).unwrap(),
        squatter
    );
    assert!(namespace(&server, "squatted")["metadata"]["labels"][LABEL].is_null());
    // The foreign policy goes: the default comes back (nothing was lowered).
    assert!(server.delete_object("LimitRange", Some("monitoring"), "admin"));
    wait_for("the default back", || has_lr(&server, "monitoring"));
    running.stop().unwrap();
}

#[test]
fn a_lowered_target_holds_and_a_changed_target_rotates_the_hold() {
    let server = FakeApiServer::start();
    let dir = tempfile::tempdir().unwrap();
    seed(&server, &["kube-system"]);
    let running = start(&server, dir.path(), "32Gi", None);
    wait_for("the default", || {
        lr_limit(&server, "kube-system").as_deref() == Some("32Gi")
    });
    running.stop().unwrap();

    // Lowered to 16Gi: held, no blocker needed.
    let running = start(&server, dir.path(), "16Gi", None);
    wait_for("the hold", || {
        state(&server, "kube-system").is_some_and(|s| s["target"] == "16Gi")
    });
    assert!(!has_lr(&server, "kube-system"));
    let first = state(&server, "kube-system").unwrap()["hold"]
        .as_str()
        .unwrap()
        .to_owned();
    running.stop().unwrap();

    // Changed to 8Gi while held: a new generation; the old token authorises nothing.
    annotate(&server, "kube-system", ACK, &format!("{first}:16Gi"));
    let running = start(&server, dir.path(), "8Gi", None);
    wait_for("the rotation", || {
        state(&server, "kube-system").is_some_and(|s| s["target"] == "8Gi")
    });
    let second = state(&server, "kube-system").unwrap()["hold"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(second.parse::<i64>().unwrap() > first.parse::<i64>().unwrap());
    wait_for("the rotation's Event", || {
        !events(&server, "HoldRotated").is_empty()
    });
    std::thread::sleep(Duration::from_secs(3));
    assert!(!has_lr(&server, "kube-system"));
    // The new token applies 8Gi.
    annotate(&server, "kube-system", ACK, &format!("{second}:8Gi"));
    wait_for("8Gi applied", || {
        lr_limit(&server, "kube-system").as_deref() == Some("8Gi")
    });
    wait_for("the state", || {
        state(&server, "kube-system") == Some(json!({"version": 1, "lastLimit": "8Gi"}))
    });
    running.stop().unwrap();
}

#[test]
fn disabling_removes_every_owned_limit_range_and_keeps_the_states() {
    let server = FakeApiServer::start();
    let dir = tempfile::tempdir().unwrap();
    seed(&server, &["kube-system", "tenant-old"]);
    // A leftover of ours in a namespace no longer selected, and a foreign one of the same name.
    server.put_object(
        json!({"kind": "LimitRange", "metadata": {"name": LR, "namespace": "tenant-old",
        "labels": {"app.kubernetes.io/managed-by": MANAGED}}, "spec": {"limits": []}}),
    );
    let running = start(&server, dir.path(), "", None);
    wait_for("the default", || has_lr(&server, "kube-system"));
    wait_for("the leftover gone", || !has_lr(&server, "tenant-old"));
    running.stop().unwrap();
    let kept = state(&server, "kube-system").unwrap();

    server.put_object(
        json!({"kind": "LimitRange", "metadata": {"name": "old", "namespace": "kube-system",
        "labels": {"app.kubernetes.io/managed-by": MANAGED}}, "spec": {"limits": []}}),
    );
    let running = start(&server, dir.path(), "0", None);
    wait_for("every owned one gone", || {
        server.objects("LimitRange").is_empty()
    });
    wait_for("the label gone", || {
        namespace(&server, "kube-system")["metadata"]["labels"][LABEL].is_null()
    });
    assert_eq!(state(&server, "kube-system").unwrap(), kept);
    running.stop().unwrap();
}

#[test]
fn conflicts_refusals_and_server_errors_are_retried() {
    let server = FakeApiServer::start();
    let dir = tempfile::tempdir().unwrap();
    seed(&server, &["kube-system"]);
    server.fail_next("PATCH", "/api/v1/namespaces/kube-system", 409, "Conflict");
    server.fail_next(
        "POST",
        "/namespaces/kube-system/limitranges",
        403,
        "Forbidden",
    );
    server.fail_next(
        "GET",
        "/namespaces/kube-system/limitranges/",
        503,
        "ServiceUnavailable",
    );
    let running = start(&server, dir.path(), "", None);
    wait_for("the default despite the failures", || {
        has_lr(&server, "kube-system")
    });
    let failed: Vec<u16> = server
        .requests()
        .iter()
        .filter(|r| !r.path.contains("events"))
        .map(|r| r.status)
        .filter(|s| *s >= 400 && *s != 404)
        .collect();
    assert!(
        failed.contains(&409) && failed.contains(&403) && failed.contains(&503),
        "{failed:?}"
    );
    assert!(
        running
            .metrics
            .encode()
            .contains("oomwarden_limits_reconcile_errors_total 3"),
        "{}",
        running.metrics.encode()
    );
    running.stop().unwrap();
}

#[test]
fn only_the_lease_holder_writes() {
    let server = FakeApiServer::start();
    let dir = tempfile::tempdir().unwrap();
    seed(&server, &["kube-system", "cozy-system"]);
    // Another replica holds the Lease (30 s) and renews it every second.
    let renew = |server: &FakeApiServer| {
        let now = serde_json::to_value(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
            k8s_openapi::jiff::Timestamp::now(),
        ))
        .unwrap();
        let mut l = server
            .object("Lease", Some("cozy-system"), "limits")
            .unwrap_or_else(|| json!({"kind": "Lease", "metadata": {"name": "limits", "namespace": "cozy-system"}}));
        l["spec"] = json!({"holderIdentity": "other", "leaseDurationSeconds": 30, "acquireTime": now, "renewTime": now});
        server.put_object(l);
    };
    renew(&server);
    let lease = LeaseOptions {
        namespace: "cozy-system".to_owned(),
        name: "limits".to_owned(),
        identity: "limits-0".to_owned(),
        duration: 15,
        grace: 5,
    };
    let running = start(&server, dir.path(), "", Some(lease));
    // It reconciles (every 2 s here) while the other holds the Lease, but writes nothing.
    while running.metrics.reconciles() < 6 {
        renew(&server);
        std::thread::sleep(Duration::from_secs(1));
    }
    assert!(server.objects("LimitRange").is_empty());
    assert!(
        running
            .metrics
            .encode()
            .contains("oomwarden_limits_leader 0")
    );
    // The other replica stops renewing: once the Lease expires this one takes it and writes.
    // It sleeps until the expiry it last read, reads the renewals, sleeps again: up to two
    // lease durations after the last renewal.
    wait_up_to(Duration::from_secs(150), "the Lease taken", || {
        server
            .object("Lease", Some("cozy-system"), "limits")
            .unwrap()["spec"]["holderIdentity"]
            == "limits-0"
    });
    wait_for("the defaults", || {
        has_lr(&server, "kube-system") && has_lr(&server, "cozy-system")
    });
    assert!(
        running
            .metrics
            .encode()
            .contains("oomwarden_limits_leader 1")
    );
    running.stop().unwrap();
    // Stopping releases it.
    wait_for("the Lease released", || {
        server
            .object("Lease", Some("cozy-system"), "limits")
            .unwrap()["spec"]["holderIdentity"]
            .is_null()
    });
}

/// Issue 54 (6): a list that never succeeds (an answer that is no JSON) kept every reconcile
/// waiting on the caches' readiness for ever, so `limits run` could not stop; and nothing was
/// said at the default level. Now each failure is counted and said at warn (with its kind), a
/// reconcile fails after a bounded wait, and the stop completes within its grace.
#[test]
fn a_list_that_never_succeeds_is_said_and_never_holds_the_stop() {
    let server = FakeApiServer::start();
    let dir = tempfile::tempdir().unwrap();
    seed(&server, &["kube-system"]);
    server.quirk("/api/v1/pods", oomwarden_testkit::apiserver::Quirk::Garbage);
    let running = start(&server, dir.path(), "", None);
    let metrics = Arc::clone(&running.metrics);
    wait_for("a failed list of pods counted", || {
        metrics
            .encode()
            .contains("oomwarden_limits_watch_errors_total{kind=\"pods\"}")
    });
    // A reconcile is under way, waiting for the pods to be listed.
    wait_for("a reconcile failing for want of the pods", || {
        metrics
            .encode()
            .lines()
            .any(|l| l.starts_with("oomwarden_limits_reconcile_errors_total") && !l.ends_with(" 0"))
    });
    assert!(
        !has_lr(&server, "kube-system"),
        "nothing decided on a partial view"
    );
    let asked = Instant::now();
    let log = running.stop().unwrap();
    let took = asked.elapsed();
    assert!(
        took < oomwarden_limits_controller::STOP_GRACE + Duration::from_secs(10),
        "the stop took {took:?}"
    );
    assert!(
        log.lines().any(|l| l.contains("WARN")
            && l.contains("cannot list or watch")
            && l.contains("pods")),
        "{log}"
    );
    assert!(log.contains("not listed yet: pods"), "{log}");
}

/// Issue 54 (6): `limits status` followed a continue token for ever; a pagination is now
/// bounded (the same token twice, or more than `MAX_PAGES` pages, is an error naming the kind).
#[test]
fn a_pagination_that_never_ends_is_refused() {
    use oomwarden_testkit::apiserver::Quirk;
    for (quirk, expected) in [
        (Quirk::SameContinue, "the same continue token twice"),
        (Quirk::EndlessContinue, "still a continue token after"),
    ] {
        let server = FakeApiServer::start();
        let dir = tempfile::tempdir().unwrap();
        seed(&server, &["kube-system"]);
        server.quirk("/api/v1/pods", quirk);
        let kubeconfig = server.kubeconfig(dir.path());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let err = rt
            .block_on(async {
                let client = oomwarden_limits_controller::client(Some(&kubeconfig)).await?;
                oomwarden_limits_controller::snapshot(&client).await
            })
            .unwrap_err()
            .to_string();
        assert!(err.contains("list pods") && err.contains(expected), "{err}");
    }
}
