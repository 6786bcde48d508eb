//! The controller's metrics: namespaces defaulted, held and governed by a foreign memory
//! policy, failed reconciles, and whether this replica leads; served at `/metrics`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64};

use oomwarden_limits::Tally;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::Error;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabel {
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

/// The registry and its metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    namespaces: Family<StateLabel, Gauge<i64, AtomicI64>>,
    errors: Counter<u64, AtomicU64>,
    reconciles: Counter<u64, AtomicU64>,
    leader: Gauge<i64, AtomicI64>,
    watch_errors: Family<KindLabel, Counter<u64, AtomicU64>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Every metric at zero.
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let namespaces = Family::<StateLabel, Gauge<i64, AtomicI64>>::default();
        registry.register(
            "oomwarden_limits_namespaces",
            "Namespaces by state of the default container memory limit: defaulted (in force), held (waiting for an acknowledgement), foreign (another LimitRange governs memory)",
            namespaces.clone(),
        );
        let errors = Counter::<u64, AtomicU64>::default();
        registry.register(
            "oomwarden_limits_reconcile_errors",
            "Reconciles that failed (a conflict, a refused or failed request); each is retried",
            errors.clone(),
        );
        let reconciles = Counter::<u64, AtomicU64>::default();
        registry.register(
            "oomwarden_limits_reconciles",
            "Namespace reconciles that completed (decided, and written when leading)",
            reconciles.clone(),
        );
        let leader = Gauge::<i64, AtomicI64>::default();
        registry.register(
            "oomwarden_limits_leader",
            "1 when this replica holds the Lease and writes, else 0",
            leader.clone(),
        );
        let watch_errors = Family::<KindLabel, Counter<u64, AtomicU64>>::default();
        registry.register(
            "oomwarden_limits_watch_errors",
            "Lists and watches of a kind that failed (an unreachable or refusing API server, an answer that is no JSON); each is retried with backoff, and no namespace is decided until every kind was listed",
            watch_errors.clone(),
        );
        for state in ["defaulted", "held", "foreign"] {
            namespaces.get_or_create(&StateLabel { state }).set(0);
        }
        Metrics {
            registry,
            namespaces,
            errors,
            reconciles,
            leader,
            watch_errors,
        }
    }

    /// The namespaces' counts.
    pub fn set(&self, t: Tally) {
        for (state, n) in [
            ("defaulted", t.defaulted),
            ("held", t.held),
            ("foreign", t.foreign),
        ] {
            self.namespaces
                .get_or_create(&StateLabel { state })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// One more failed reconcile.
    pub fn error(&self) {
        self.errors.inc();
    }

    /// One more failed list or watch of `kind` (its plural).
    pub fn watch_error(&self, kind: &'static str) {
        self.watch_errors.get_or_create(&KindLabel { kind }).inc();
    }

    /// One more completed reconcile.
    pub fn reconciled(&self) {
        self.reconciles.inc();
    }

    /// Completed reconciles so far.
    pub fn reconciles(&self) -> u64 {
        self.reconciles.get()
    }

    /// Whether this replica leads.
    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    /// The text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// Serves `/metrics` (and `/healthz`) on `address` until the runtime stops; the address bound
/// (port 0 picks a free one). The side services' one server (`oomwarden-serve`): at most 32
/// connections (the oldest makes room), a head of 16 KiB within 5 s, 10 s a connection, and a
/// failing accept (out of descriptors) waits instead of spinning.
pub async fn serve_metrics(
    address: SocketAddr,
    metrics: Arc<Metrics>,
) -> Result<SocketAddr, Error> {
    let (listener, bound) = oomwarden_serve::bind(address).map_err(|e| Error::Metrics {
        address: address.to_string(),
        source: e.source,
    })?;
    let respond: oomwarden_serve::Respond = Arc::new(move |method, path| {
        use oomwarden_serve::Answer;
        match (method, path) {
            (&hyper::Method::GET, "/metrics") => Answer {
                status: 200,
                content_type: "application/openmetrics-text; version=1.0.0; charset=utf-8",
                body: metrics.encode(),
            },
            (&hyper::Method::GET, "/healthz") => Answer::text(200, "ok\n"),
            _ => Answer::not_found(),
        }
    });
    tokio::spawn(oomwarden_serve::accept_loop(
        listener,
        oomwarden_serve::Limits::default(),
        respond,
        Arc::new(oomwarden_serve::LogOnce::default()),
    ));
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn get(address: SocketAddr, path: &str) -> String {
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn the_endpoint_serves_the_counts() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let metrics = Arc::new(Metrics::new());
        metrics.set(Tally {
            defaulted: 3,
            held: 1,
            foreign: 2,
        });
        metrics.error();
        metrics.set_leader(true);
        // The requests from a blocking thread, while the runtime serves them.
        let (page, health, other) = rt.block_on(async {
            let address = serve_metrics("127.0.0.1:0".parse().unwrap(), Arc::clone(&metrics))
                .await
                .unwrap();
            tokio::task::spawn_blocking(move || {
                (
                    get(address, "/metrics"),
                    get(address, "/healthz"),
                    get(address, "/other"),
                )
            })
            .await
            .unwrap()
        });
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
        for line in [
            "oomwarden_limits_namespaces{state=\"defaulted\"} 3",
            "oomwarden_limits_namespaces{state=\"held\"} 1",
            "oomwarden_limits_namespaces{state=\"foreign\"} 2",
            "oomwarden_limits_reconcile_errors_total 1",
            "oomwarden_limits_leader 1",
        ] {
            assert!(page.contains(line), "{line} in {page}");
        }
        assert!(health.starts_with("HTTP/1.1 200"), "{health}");
        assert!(other.starts_with("HTTP/1.1 404"), "{other}");
    }
}
