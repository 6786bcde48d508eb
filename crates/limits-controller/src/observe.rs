//! What the decisions look at: caches of every kind the blocker scan reads, kept by kube-rs
//! reflectors, and a one-shot list of the same for `limits status`.

use std::collections::BTreeSet;
use std::fmt::Debug;

use futures::{Stream, TryStreamExt};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{LimitRange, Namespace, Pod};
use k8s_openapi::serde::Serialize;
use k8s_openapi::serde::de::DeserializeOwned;
use kube::api::{Api, ListParams};
use kube::{Resource, ResourceExt};
use kube_runtime::reflector::{self, Store};
use kube_runtime::{WatchStreamExt, watcher};
use oomwarden_limits::{Cluster, LimitRangeView, NamespaceView};
use serde_json::Value;

use crate::Error;

type Trigger<K> = std::pin::Pin<Box<dyn Stream<Item = Result<K, watcher::Error>> + Send>>;

/// The streams that trigger reconciles (each feeds its cache as it is polled).
pub(crate) struct Triggers {
    pub(crate) limit_ranges: Trigger<LimitRange>,
    pub(crate) deployments: Trigger<Deployment>,
    pub(crate) stateful_sets: Trigger<StatefulSet>,
    pub(crate) daemon_sets: Trigger<DaemonSet>,
    pub(crate) cron_jobs: Trigger<CronJob>,
    pub(crate) jobs: Trigger<Job>,
    pub(crate) pods: Trigger<Pod>,
}

/// The caches.
#[derive(Clone)]
pub struct Stores {
    namespaces: Store<Namespace>,
    limit_ranges: Store<LimitRange>,
    deployments: Store<Deployment>,
    stateful_sets: Store<StatefulSet>,
    daemon_sets: Store<DaemonSet>,
    cron_jobs: Store<CronJob>,
    jobs: Store<Job>,
    pods: Store<Pod>,
}

impl Debug for Stores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stores").finish_non_exhaustive()
    }
}

/// How often one kind's failing list or watch is said at the default level (each failure is
/// counted; kube-rs retries it with backoff).
const WATCH_ERROR_LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// A reflector over every object of kind `K`, its managed fields dropped (they are most of an
/// object's size and nothing here reads them). A failing list or watch (an answer that is no
/// JSON, a refusal, an unreachable server) is counted and said at warn, once a minute per
/// kind: until every kind was listed no namespace is decided.
pub(crate) fn cached<K>(
    client: &kube::Client,
    metrics: &std::sync::Arc<crate::Metrics>,
) -> (Store<K>, Trigger<K>)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let metrics = std::sync::Arc::clone(metrics);
    let said: std::sync::Mutex<Option<std::time::Instant>> = std::sync::Mutex::new(None);
    let stream = watcher(Api::<K>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .modify(|o: &mut K| o.meta_mut().managed_fields = None)
        .reflect(writer)
        .touched_objects()
        .inspect_err(move |e| {
            let kind = plural::<K>();
            metrics.watch_error(kind);
            let mut last = said.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.is_none_or(|t| t.elapsed() >= WATCH_ERROR_LOG_EVERY) {
                *last = Some(std::time::Instant::now());
                tracing::warn!(kind, error = %e, "cannot list or watch; retrying (no namespace is decided until every kind is listed)");
            }
        });
    (reader, Box::pin(stream))
}

/// `K`'s plural (`pods`), for labels and messages.
fn plural<K: Resource<DynamicType = ()>>() -> &'static str {
    match K::plural(&()).as_ref() {
        "namespaces" => "namespaces",
        "limitranges" => "limitranges",
        "deployments" => "deployments",
        "statefulsets" => "statefulsets",
        "daemonsets" => "daemonsets",
        "cronjobs" => "cronjobs",
        "jobs" => "jobs",
        "pods" => "pods",
        _ => "other",
    }
}

/// Caches and trigger streams of every kind but Namespaces, whose cache is the controller's
/// (`namespaces`): each kind is watched once.
pub(crate) fn watch_all(
    client: &kube::Client,
    namespaces: Store<Namespace>,
    metrics: &std::sync::Arc<crate::Metrics>,
) -> (Stores, Triggers) {
    let (limit_ranges, lr) = cached(client, metrics);
    let (deployments, d) = cached(client, metrics);
    let (stateful_sets, s) = cached(client, metrics);
    let (daemon_sets, ds) = cached(client, metrics);
    let (cron_jobs, cj) = cached(client, metrics);
    let (jobs, j) = cached(client, metrics);
    let (pods, p) = cached(client, metrics);
    (
        Stores {
            namespaces,
            limit_ranges,
            deployments,
            stateful_sets,
            daemon_sets,
            cron_jobs,
            jobs,
            pods,
        },
        Triggers {
            limit_ranges: lr,
            deployments: d,
            stateful_sets: s,
            daemon_sets: ds,
            cron_jobs: cj,
            jobs: j,
            pods: p,
        },
    )
}

/// An object as JSON, with its kind (typed objects read from a list or a watch carry none;
/// the decisions go by it).
fn value<K: Resource<DynamicType = ()> + Serialize>(o: &K) -> Value {
    let mut v = serde_json::to_value(o).unwrap_or(Value::Null);
    if let Some(map) = v.as_object_mut() {
        map.insert("kind".to_owned(), Value::String(K::kind(&()).into_owned()));
    }
    v
}

impl Stores {
    /// Waits until every cache has been listed once, at most `within`: a list that never
    /// succeeds makes a reconcile fail (retried), never wait for ever (a reconcile that never
    /// ends would hold the stop).
    pub(crate) async fn ready(&self, within: std::time::Duration) -> Result<(), Error> {
        let all = async {
            futures::try_join!(
                self.namespaces.wait_until_ready(),
                self.limit_ranges.wait_until_ready(),
                self.deployments.wait_until_ready(),
                self.stateful_sets.wait_until_ready(),
                self.daemon_sets.wait_until_ready(),
                self.cron_jobs.wait_until_ready(),
                self.jobs.wait_until_ready(),
                self.pods.wait_until_ready(),
            )
        };
        match tokio::time::timeout(within, all).await {
            Ok(r) => r.map(drop).map_err(|_| Error::Stopped),
            Err(_) => Err(Error::NotListed(self.not_listed())),
        }
    }

    /// The kinds not listed yet.
    fn not_listed(&self) -> Vec<&'static str> {
        use futures::FutureExt;
        let mut out = Vec::new();
        macro_rules! each {
            ($($store:ident: $name:literal),*) => {$(
                if self.$store.wait_until_ready().now_or_never().is_none() {
                    out.push($name);
                }
            )*};
        }
        each!(
            namespaces: "namespaces",
            limit_ranges: "limitranges",
            deployments: "deployments",
            stateful_sets: "statefulsets",
            daemon_sets: "daemonsets",
            cron_jobs: "cronjobs",
            jobs: "jobs",
            pods: "pods"
        );
        out
    }

    /// The names of the namespaces that exist.
    pub(crate) fn namespace_names(&self) -> BTreeSet<String> {
        self.namespaces
            .state()
            .iter()
            .map(|n| n.name_any())
            .collect()
    }

    /// What is observed in `namespace`.
    pub(crate) fn view(&self, namespace: &Namespace) -> NamespaceView {
        let mut view = NamespaceView::from_namespace(&value(namespace));
        let name = view.name.clone();
        let mine = |ns: Option<&str>| ns == Some(name.as_str());
        for lr in self.limit_ranges.state() {
            if mine(lr.metadata.namespace.as_deref()) {
                view.limit_ranges
                    .push(LimitRangeView::from_value(&value(lr.as_ref())));
            }
        }
        let mut add = |v: Value| {
            // A typed object from the API server always reads back.
            let _ = view.objects.add_value(&v);
        };
        macro_rules! each {
            ($($store:ident),*) => {$(
                for o in self.$store.state() {
                    if mine(o.metadata.namespace.as_deref()) {
                        add(value(o.as_ref()));
                    }
                }
            )*};
        }
        each!(
            deployments,
            stateful_sets,
            daemon_sets,
            cron_jobs,
            jobs,
            pods
        );
        view
    }
}

/// The most pages of 500 objects `limits status` reads of one kind (a million objects):
/// a server that never ends a pagination is refused, not followed for ever.
pub const MAX_PAGES: usize = 2_000;
/// Objects asked for per page.
const PAGE: u32 = 500;

/// Lists every kind the decisions read, once (`limits status`).
pub async fn snapshot(client: &kube::Client) -> Result<Cluster, Error> {
    async fn list<K>(client: &kube::Client, into: &mut Cluster) -> Result<(), Error>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
    {
        let api = Api::<K>::all(client.clone());
        let mut params = ListParams::default().limit(PAGE);
        let mut last_token: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let page = api.list(&params).await.map_err(|source| Error::Api {
                what: format!("list {}", K::plural(&())),
                source,
            })?;
            for o in &page.items {
                let _ = into.add_value(&value(o));
            }
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => {
                    if last_token.as_deref() == Some(token.as_str()) {
                        return Err(Error::Pagination(format!(
                            "list {}: the API server answered the same continue token twice ({token:?}); its pagination would never end",
                            K::plural(&())
                        )));
                    }
                    params = params.continue_token(&token);
                    last_token = Some(token);
                }
                _ => return Ok(()),
            }
        }
        Err(Error::Pagination(format!(
            "list {}: still a continue token after {MAX_PAGES} pages of {PAGE}; refusing to follow it further",
            K::plural(&())
        )))
    }
    let mut cluster = Cluster::new();
    list::<Namespace>(client, &mut cluster).await?;
    list::<LimitRange>(client, &mut cluster).await?;
    list::<Deployment>(client, &mut cluster).await?;
    list::<StatefulSet>(client, &mut cluster).await?;
    list::<DaemonSet>(client, &mut cluster).await?;
    list::<CronJob>(client, &mut cluster).await?;
    list::<Job>(client, &mut cluster).await?;
    list::<Pod>(client, &mut cluster).await?;
    cluster.finish().map_err(Error::Object)
}
