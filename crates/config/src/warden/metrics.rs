//! `metrics`: the Prometheus/OpenMetrics endpoint.

use std::net::SocketAddr;

use serde::{Deserialize, Deserializer, Serialize};

use crate::fields::{Field, Flag, text, unless_blank};

/// The Prometheus/OpenMetrics endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricsSettings {
    /// Serve it (off by default).
    pub enabled: bool,
    /// Where (`IP:port`); by default `127.0.0.1:9465`, loopback, as the metrics name the
    /// node's classes and pods.
    pub listen: SocketAddr,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        MetricsSettings {
            enabled: false,
            listen: SocketAddr::from(([127, 0, 0, 1], 9465)),
        }
    }
}

/// The section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct MetricsIn {
    enabled: Field<Flag>,
    listen: Field<Listen>,
}

#[derive(Debug)]
struct Listen(Option<SocketAddr>);

impl<'de> Deserialize<'de> for Listen {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| unless_blank(s, listen_from_text)).map(Listen)
    }
}

/// Validates a listen address: an IP address and a port (`127.0.0.1:9465`, `[::]:9465`).
pub(crate) fn listen_from_text(text: &str) -> Result<SocketAddr, String> {
    text.parse().map_err(|_| {
        format!(
            "invalid listen address {text:?}: expected IP:PORT such as 127.0.0.1:9465 or [::1]:9465"
        )
    })
}

impl MetricsIn {
    /// The settings, defaults filled in.
    pub(super) fn settings(self) -> MetricsSettings {
        let mut metrics = MetricsSettings::default();
        if let Some(Flag(on)) = self.enabled.get() {
            metrics.enabled = *on;
        }
        if let Some(addr) = self.listen.into_option().and_then(|l| l.0) {
            metrics.listen = addr;
        }
        metrics
    }
}

/// The section as `oomwarden check` writes it.
#[derive(Debug, Serialize)]
pub(super) struct MetricsOut {
    enabled: bool,
    listen: String,
}

impl MetricsOut {
    pub(super) fn of(s: &MetricsSettings) -> Self {
        MetricsOut {
            enabled: s.enabled,
            listen: s.listen.to_string(),
        }
    }
}
