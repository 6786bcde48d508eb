//! `containerRuntime`: where pod identity comes from.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use crate::fields::{AbsolutePath, Field, format_duration, text, unless_blank, within};

/// Which container runtime names the pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeEndpoint {
    /// containerd's socket, else CRI-O's, whichever exists.
    Auto,
    /// This socket (`unix:///path`).
    Unix(PathBuf),
    /// None: the pod-log directories only.
    None,
}

impl RuntimeEndpoint {
    /// `auto`, `none` or `unix:///path`, as the file says it.
    pub fn text(&self) -> String {
        match self {
            RuntimeEndpoint::Auto => "auto".to_owned(),
            RuntimeEndpoint::None => "none".to_owned(),
            RuntimeEndpoint::Unix(path) => format!("unix://{}", path.display()),
        }
    }
}

/// Where pod identity (namespace, name, labels, container names) comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerRuntimeSettings {
    /// The runtime's CRI socket.
    pub endpoint: RuntimeEndpoint,
    /// The kubelet's pod-log directories, used when the runtime does not answer.
    pub pod_logs: PathBuf,
    /// How often the identities are refreshed (and soon after an unknown pod appears).
    pub refresh_every: Duration,
}

/// The default `containerRuntime.refreshEvery`.
pub const DEFAULT_IDENTITY_REFRESH: Duration = Duration::from_secs(30);

impl Default for ContainerRuntimeSettings {
    fn default() -> Self {
        ContainerRuntimeSettings {
            endpoint: RuntimeEndpoint::Auto,
            pod_logs: PathBuf::from("/var/log/pods"),
            refresh_every: DEFAULT_IDENTITY_REFRESH,
        }
    }
}

/// The section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct ContainerRuntimeIn {
    endpoint: Field<EndpointText>,
    pod_logs: Field<AbsolutePath>,
    refresh_every: Field<RefreshEvery>,
}

/// `auto`, `none` or `unix:///path`.
#[derive(Debug)]
struct EndpointText(Option<RuntimeEndpoint>);

impl<'de> Deserialize<'de> for EndpointText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| {
            unless_blank(s, |t| match t {
                "auto" => Ok(RuntimeEndpoint::Auto),
                "none" => Ok(RuntimeEndpoint::None),
                _ => t
                    .strip_prefix("unix://")
                    .filter(|p| p.starts_with('/'))
                    .map(|p| RuntimeEndpoint::Unix(PathBuf::from(p)))
                    .ok_or_else(|| {
                        format!("expected auto, none or unix:///path/to/socket, found {t:?}")
                    }),
            })
        })
        .map(EndpointText)
    }
}

#[derive(Debug)]
struct RefreshEvery(Option<Duration>);

impl<'de> Deserialize<'de> for RefreshEvery {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| {
            unless_blank(s, |t| {
                within(t, Duration::from_secs(1)..=Duration::from_secs(600)).map_err(|()| {
                    format!("expected a duration from \"1s\" to \"10m\", found {t:?}")
                })
            })
        })
        .map(RefreshEvery)
    }
}

impl ContainerRuntimeIn {
    /// The settings, defaults filled in.
    pub(super) fn settings(self) -> ContainerRuntimeSettings {
        let mut settings = ContainerRuntimeSettings::default();
        if let Some(endpoint) = self.endpoint.into_option().and_then(|e| e.0) {
            settings.endpoint = endpoint;
        }
        if let Some(dir) = self.pod_logs.into_option().and_then(|d| d.0) {
            settings.pod_logs = dir;
        }
        if let Some(every) = self.refresh_every.into_option().and_then(|e| e.0) {
            settings.refresh_every = every;
        }
        settings
    }
}

/// The section as `oomwarden check` writes it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ContainerRuntimeOut {
    endpoint: String,
    pod_logs: String,
    refresh_every: String,
}

impl ContainerRuntimeOut {
    pub(super) fn of(s: &ContainerRuntimeSettings) -> Self {
        ContainerRuntimeOut {
            endpoint: s.endpoint.text(),
            pod_logs: s.pod_logs.display().to_string(),
            refresh_every: format_duration(s.refresh_every),
        }
    }
}
