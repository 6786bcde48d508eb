//! `events`: Kubernetes Events for oomwarden's kills.

use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize};

use crate::fields::{AbsolutePath, Field, Flag, leaf, text, unless_blank};

/// Kubernetes Events (`events.k8s.io/v1`) for oomwarden's kills and dry-run decisions: one on
/// the victim Pod, one on the Node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventsSettings {
    /// Send them (off by default: it needs API credentials and RBAC).
    pub enabled: bool,
    /// A kubeconfig file to reach the API server with; absent: the pod's service account
    /// (in-cluster).
    pub kubeconfig: Option<PathBuf>,
    /// The Node's name; absent: `$NODE_NAME` (the DaemonSet sets it from `spec.nodeName`),
    /// else the host name.
    pub node_name: Option<String>,
    /// Also set each killed pod's `DisruptionTarget` condition (reason
    /// `TerminationByOOMWarden`) through `pods/status`, as the kubelet does for a pod it
    /// evicts (off by default: it needs `patch` on `pods/status`).
    pub pod_condition: bool,
    /// Taint the node (`oomwarden.io/memory-pressure:NoSchedule`, condition
    /// `OOMWardenMemoryPressure`) once one workload was killed this many times in the last
    /// hour (oomwarden's kills and the kernel's), with a Node Event `OOMWardenRepeatedKills`;
    /// removed when its kills fall below that. 0: never.
    pub taint_after_kills: u32,
}

/// `events.taintAfterKills` unless it says: a third kill in an hour is a loop.
pub const DEFAULT_TAINT_AFTER_KILLS: u32 = 3;

impl Default for EventsSettings {
    fn default() -> Self {
        EventsSettings {
            enabled: false,
            kubeconfig: None,
            node_name: None,
            pod_condition: false,
            taint_after_kills: DEFAULT_TAINT_AFTER_KILLS,
        }
    }
}

/// The section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct EventsIn {
    enabled: Field<Flag>,
    kubeconfig: Field<AbsolutePath>,
    node_name: Field<NodeName>,
    pod_condition: Field<Flag>,
    taint_after_kills: Field<Kills>,
}

/// A number of kills, 0 to 1000.
#[derive(Debug)]
struct Kills(u32);

impl<'de> Deserialize<'de> for Kills {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        leaf(d, |v| {
            match v.as_u64().and_then(|k| u32::try_from(k).ok()) {
                Some(k) if k <= 1000 => Ok(Kills(k)),
                _ => Err(format!(
                    "expected a number of kills from 0 (never) to 1000, found {v}"
                )),
            }
        })
    }
}

/// A Node's name: a DNS subdomain (lower-case letters, digits, `-` and `.`, at most 253).
#[derive(Debug)]
struct NodeName(Option<String>);

impl<'de> Deserialize<'de> for NodeName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| {
            unless_blank(s, |name| {
                if oomwarden_kube::is_dns_subdomain(name) {
                    Ok(name.to_owned())
                } else {
                    Err(format!(
                        "must be a node name (a DNS subdomain: lower-case letters, digits, '-' and '.', at most 253), found {name:?}"
                    ))
                }
            })
        })
        .map(NodeName)
    }
}

impl EventsIn {
    /// The settings, defaults filled in.
    pub(super) fn settings(self) -> EventsSettings {
        let mut settings = EventsSettings::default();
        if let Some(Flag(on)) = self.enabled.get() {
            settings.enabled = *on;
        }
        settings.kubeconfig = self.kubeconfig.into_option().and_then(|p| p.0);
        settings.node_name = self.node_name.into_option().and_then(|n| n.0);
        if let Some(Flag(on)) = self.pod_condition.get() {
            settings.pod_condition = *on;
        }
        if let Some(Kills(n)) = self.taint_after_kills.get() {
            settings.taint_after_kills = *n;
        }
        settings
    }
}

/// The section as `oomwarden check` writes it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct EventsOut {
    enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    kubeconfig: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    node_name: Option<String>,
    pod_condition: bool,
    taint_after_kills: u32,
}

impl EventsOut {
    pub(super) fn of(s: &EventsSettings) -> Self {
        EventsOut {
            enabled: s.enabled,
            kubeconfig: s.kubeconfig.as_ref().map(|p| p.display().to_string()),
            node_name: s.node_name.clone(),
            pod_condition: s.pod_condition,
            taint_after_kills: s.taint_after_kills,
        }
    }
}
