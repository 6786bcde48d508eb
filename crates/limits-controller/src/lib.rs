//! The controller of the system-namespace memory defaults (`oomwarden limits run`): watches
//! of Namespaces, LimitRanges, the workload kinds and Pods (kube-rs reflectors), a
//! `runtime::Controller` reconciling each Namespace on any change in it and every resync
//! (5 minutes by default), leader election through a `coordination.k8s.io` Lease
//! (`kube-lease-manager`) so two replicas never both write, and the writes
//! `oomwarden_limits::decide` asks for. Also the one-shot reads of `limits status`.
//!
//! ```text
//! watches ──▶ stores (caches) ──▶ reconcile(namespace) ──▶ decide (pure) ──▶ writes
//!   ▲ Namespaces, LimitRanges,          │ only while leading                Namespace patch (rv-checked),
//!   │ Deployments … Pods                └──▶ log line, Event, metrics       then the LimitRange
//! ```

mod metrics;
mod observe;
mod write;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{LimitRange, Namespace, Pod};
use kube_runtime::controller::{Action as Requeue, Config, Controller};
use kube_runtime::reflector::ObjectRef;
use oomwarden_limits::{Action, Decision, Settings};
use thiserror::Error;

pub use metrics::{Metrics, serve_metrics};
pub use observe::{MAX_PAGES, Stores, snapshot};
pub use write::REPORTING_CONTROLLER;

/// The crate's errors under a short name.
pub(crate) type Error = ControllerError;

/// Why the controller stopped or a reconcile failed.
#[derive(Debug, Error)]
pub enum ControllerError {
    /// No client could be made.
    #[error("cannot reach the API server: {0}")]
    Client(String),
    /// A request failed.
    #[error("{what}: {source}")]
    Api {
        /// What was asked (`create LimitRange kube-system/cozystack-system-defaults`).
        what: String,
        /// The answer.
        #[source]
        source: kube::Error,
    },
    /// The leader election could not start.
    #[error("leader election (Lease {lease}): {message}")]
    Lease {
        /// `namespace/name`.
        lease: String,
        /// What is wrong.
        message: String,
    },
    /// An object the API server gave cannot be read.
    #[error("{0}")]
    Object(String),
    /// The caches stopped (the controller is stopping).
    #[error("the watches stopped")]
    Stopped,
    /// Some kinds were not listed yet (an unreachable or misbehaving API server): no
    /// namespace is decided on a partial view.
    #[error("not listed yet: {}; no namespace is decided until every kind is", .0.join(", "))]
    NotListed(Vec<&'static str>),
    /// A list's pagination did not end.
    #[error("{0}")]
    Pagination(String),
    /// The metrics endpoint could not listen.
    #[error("metrics on {address}: {source}")]
    Metrics {
        /// The address.
        address: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The Lease that elects the one replica that writes.
#[derive(Debug, Clone)]
pub struct LeaseOptions {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// This replica's identity (the pod's name).
    pub identity: String,
    /// How long a holder's lease lasts without renewal, in seconds.
    pub duration: u64,
    /// How long before expiry the holder renews, in seconds.
    pub grace: u64,
}

/// How the controller runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// A kubeconfig; `None`: the pod's service account.
    pub kubeconfig: Option<PathBuf>,
    /// What to decide with.
    pub settings: Settings,
    /// Every namespace is reconciled again after this, changes or not (an acknowledgement or
    /// a workload change also progresses on a quiet cluster).
    pub resync: Duration,
    /// The Lease; `None`: no election (one replica only).
    pub lease: Option<LeaseOptions>,
    /// The Events' reporting instance (the pod's name).
    pub instance: String,
}

/// What a reconcile needs.
struct Context {
    client: kube::Client,
    options: Options,
    stores: Stores,
    leader: tokio::sync::watch::Receiver<bool>,
    metrics: Arc<Metrics>,
    /// Decisions by namespace, for the metrics and the log's once-per-change lines.
    last: Mutex<std::collections::BTreeMap<String, Decision>>,
}

/// A client for `kubeconfig` that can watch (no cap on one answer's size: a watch is one
/// long answer).
pub async fn client(kubeconfig: Option<&std::path::Path>) -> Result<kube::Client, Error> {
    let timeouts = oomwarden_events::Timeouts {
        connect: Duration::from_secs(10),
        // Watches are asked to end within 290 s; kube-rs's own default read deadline.
        read: Duration::from_secs(295),
        write: Duration::from_secs(10),
    };
    oomwarden_events::client(kubeconfig, &timeouts, None)
        .await
        .map_err(Error::Client)
}

/// How long a reconcile waits for every kind to be listed before it fails (and is retried).
const READY_WITHIN: Duration = Duration::from_secs(10);

/// How long after the stop the reconciles in flight may take before `run` returns without
/// them.
pub const STOP_GRACE: Duration = Duration::from_secs(15);

/// Runs the controller until `stop` resolves (then lets the reconciles in flight finish,
/// within [`STOP_GRACE`] whatever the API server does, and releases the Lease).
pub async fn run(
    options: Options,
    metrics: Arc<Metrics>,
    stop: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) -> Result<(), Error> {
    let client = client(options.kubeconfig.as_deref()).await?;
    let (leader, lease_task) = match &options.lease {
        None => (tokio::sync::watch::channel(true).1, None),
        Some(l) => {
            let manager = kube_lease_manager::LeaseManagerBuilder::new(client.clone(), &l.name)
                .with_namespace(&l.namespace)
                .with_identity(&l.identity)
                .with_duration(l.duration)
                .with_grace(l.grace)
                .build()
                .await
                .map_err(|e| Error::Lease {
                    lease: format!("{}/{}", l.namespace, l.name),
                    message: e.to_string(),
                })?;
            let (rx, task) = manager.watch().await;
            (rx, Some(task))
        }
    };
    // The stop, shared: the controller's graceful shutdown, and the bound on it.
    let (stopped_tx, stopped_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        stop.await;
        let _ = stopped_tx.send(true);
    });
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    // Becoming the leader reconciles every namespace at once.
    let became_leader = futures::stream::unfold(leader.clone(), |mut rx| async move {
        loop {
            rx.changed().await.ok()?;
            if *rx.borrow() {
                return Some(((), rx));
            }
        }
    });
    let by_namespace =
        |namespace: Option<String>| namespace.map(|ns| ObjectRef::<Namespace>::new(&ns));
    let (namespaces, namespace_trigger) = observe::cached::<Namespace>(&client, &metrics);
    let mut controller = Controller::for_stream(namespace_trigger, namespaces.clone())
        .with_config(Config::default().debounce(Duration::from_millis(500)));
    let (stores, t) = observe::watch_all(&client, namespaces, &metrics);
    let context = Arc::new(Context {
        client,
        options: options.clone(),
        stores,
        leader: leader.clone(),
        metrics,
        last: Mutex::new(std::collections::BTreeMap::new()),
    });
    controller = controller
        .watches_stream(t.limit_ranges, move |o: LimitRange| {
            by_namespace(o.metadata.namespace)
        })
        .watches_stream(t.deployments, move |o: Deployment| {
            by_namespace(o.metadata.namespace)
        })
        .watches_stream(t.stateful_sets, move |o: StatefulSet| {
            by_namespace(o.metadata.namespace)
        })
        .watches_stream(t.daemon_sets, move |o: DaemonSet| {
            by_namespace(o.metadata.namespace)
        })
        .watches_stream(t.cron_jobs, move |o: CronJob| {
            by_namespace(o.metadata.namespace)
        })
        .watches_stream(t.jobs, move |o: Job| by_namespace(o.metadata.namespace))
        .watches_stream(t.pods, move |o: Pod| by_namespace(o.metadata.namespace))
        .reconcile_all_on(became_leader)
        .graceful_shutdown_on(stopped(stopped_rx.clone()));
    tracing::info!(
        limit = options.settings.limit.as_ref().map_or("0 (disabled)".to_owned(), |l| l.text.clone()),
        request = %options.settings.request,
        limit_range = %options.settings.names.limit_range,
        "the system-namespace memory defaults controller is starting"
    );
    let running = controller
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            // Failed reconciles are said by `error_policy`, failed watches where they are
            // made (`observe::cached`).
            if let Err(e) = result {
                tracing::debug!(error = %e, "reconcile");
            }
        });
    let bound = async {
        stopped(stopped_rx).await;
        tokio::time::sleep(STOP_GRACE).await;
    };
    tokio::select! {
        () = running => {}
        () = bound => tracing::warn!(grace = ?STOP_GRACE, "reconciles still in flight after the stop's grace; stopping without them"),
    }
    // Dropping the receivers makes the lease task release the Lease.
    drop(leader);
    if let Some(task) = lease_task {
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
    }
    Ok(())
}

async fn reconcile(namespace: Arc<Namespace>, ctx: Arc<Context>) -> Result<Requeue, Error> {
    let leading = *ctx.leader.borrow();
    ctx.metrics.set_leader(leading);
    if !leading {
        // Another replica writes; this one only keeps its caches warm.
        ctx.metrics.reconciled();
        return Ok(Requeue::requeue(ctx.options.resync));
    }
    // A decision on a partial cache could miss a blocker: every cache is listed first.
    ctx.stores.ready(READY_WITHIN).await?;
    let name = namespace.metadata.name.clone().unwrap_or_default();
    let view = ctx.stores.view(&namespace);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let decision = oomwarden_limits::decide(&ctx.options.settings, &view, now);
    write::perform(&ctx.client, &ctx.options, &namespace, &decision).await?;
    if decision.action == Action::Hold {
        tracing::warn!(
            namespace = %name,
            reason = %decision.reason,
            acknowledgement = %decision.hold.as_deref().unwrap_or(""),
            annotation = %ctx.options.settings.names.ack_annotation,
            "withholding the default container memory limit"
        );
    } else if !decision.writes.is_empty() {
        tracing::info!(
            namespace = %name,
            action = %decision.action.name(),
            reason = %decision.reason,
            "system memory default"
        );
    }
    if let Some(notice) = &decision.notice {
        write::event(&ctx.client, &ctx.options, &name, notice).await;
    }
    let tally = {
        let mut last = ctx
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        last.insert(name, decision);
        // Namespaces deleted since are dropped from the counts.
        let live: std::collections::BTreeSet<String> = ctx.stores.namespace_names();
        last.retain(|n, _| live.contains(n));
        oomwarden_limits::Tally::of(last.values())
    };
    ctx.metrics.set(tally);
    ctx.metrics.reconciled();
    Ok(Requeue::requeue(ctx.options.resync))
}

fn error_policy(namespace: Arc<Namespace>, error: &Error, ctx: Arc<Context>) -> Requeue {
    ctx.metrics.error();
    tracing::warn!(
        namespace = namespace.metadata.name.as_deref().unwrap_or(""),
        error = %error,
        "reconcile failed; retrying"
    );
    // A conflict (someone changed the Namespace) or an unavailable API server: soon again.
    Requeue::requeue(Duration::from_secs(5))
}
