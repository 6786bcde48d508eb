//! What the decisions look at: caches of every kind the blocker scan reads, kept by kube-rs
//! reflectors, and a one-shot list of the same for `limits status`.

use std::collections::BTreeSet;
use std::fmt::Debug;

use futures::Stream;
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

/// A reflector over every object of kind `K`, its managed fields dropped (they are most of an
/// object's size and nothing here reads them).
fn cached<K>(client: &kube::Client) -> (Store<K>, Trigger<K>)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let stream = watcher(Api::<K>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .modify(|o: &mut K| o.meta_mut().managed_fields = None)
        .reflect(writer)
        .touched_objects();
    (reader, Box::pin(stream))
}

/// Caches and trigger streams of every kind but Namespaces, whose cache is the controller's
/// own (`namespaces`): each kind is watched once.
pub(crate) fn watch_all(client: &kube::Client, namespaces: Store<Namespace>) -> (Stores, Triggers) {
    let (limit_ranges, lr) = cached(client);
    let (deployments, d) = cached(client);
    let (stateful_sets, s) = cached(client);
    let (daemon_sets, ds) = cached(client);
    let (cron_jobs, cj) = cached(client);
    let (jobs, j) = cached(client);
    let (pods, p) = cached(client);
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
    /// Waits until every cache has been listed once.
    pub(crate) async fn ready(&self) -> Result<(), Error> {
        let r = futures::try_join!(
            self.namespaces.wait_until_ready(),
            self.limit_ranges.wait_until_ready(),
            self.deployments.wait_until_ready(),
            self.stateful_sets.wait_until_ready(),
            self.daemon_sets.wait_until_ready(),
            self.cron_jobs.wait_until_ready(),
            self.jobs.wait_until_ready(),
            self.pods.wait_until_ready(),
        );
        r.map(drop).map_err(|_| Error::Stopped)
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

/// Lists every kind the decisions read, once (`limits status`).
pub async fn snapshot(client: &kube::Client) -> Result<Cluster, Error> {
    async fn list<K>(client: &kube::Client, into: &mut Cluster) -> Result<(), Error>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
    {
        let api = Api::<K>::all(client.clone());
        let mut params = ListParams::default().limit(500);
        loop {
            let page = api.list(&params).await.map_err(|source| Error::Api {
                what: format!("list {}", K::plural(&())),
                source,
            })?;
            for o in &page.items {
                let _ = into.add_value(&value(o));
            }
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => return Ok(()),
            }
        }
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
