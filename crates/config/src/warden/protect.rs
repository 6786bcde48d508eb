//! `protect`: guards outside the ranking, which no ranking expression can undo.

use serde::{Deserialize, Serialize};

use crate::fields::{Field, Flag};

/// What is never a candidate, whatever the ranking says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtectSettings {
    /// Node-critical pods are never chosen: a BestEffort or Burstable candidate whose
    /// processes run at `oom_score_adj` −997 or lower (the kubelet gives −997 only to
    /// Guaranteed and node-critical pods: `IsNodeCriticalPod`), or that the container
    /// runtime names a static or mirror pod (`kubernetes.io/config.source` other than `api`,
    /// `kubernetes.io/config.mirror`). On by default; off restores Talos's exact selection.
    pub node_critical: bool,
}

impl Default for ProtectSettings {
    fn default() -> Self {
        ProtectSettings {
            node_critical: true,
        }
    }
}

/// The section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct ProtectIn {
    node_critical: Field<Flag>,
}

impl ProtectIn {
    /// The settings, defaults filled in.
    pub(super) fn settings(self) -> ProtectSettings {
        let mut settings = ProtectSettings::default();
        if let Some(Flag(on)) = self.node_critical.get() {
            settings.node_critical = *on;
        }
        settings
    }
}

/// The section as `oomwarden check` writes it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ProtectOut {
    node_critical: bool,
}

impl ProtectOut {
    pub(super) fn of(s: &ProtectSettings) -> Self {
        ProtectOut {
            node_critical: s.node_critical,
        }
    }
}
