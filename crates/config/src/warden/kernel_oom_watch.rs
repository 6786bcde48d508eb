//! `kernelOomWatch`: the kernel's own OOM kills recorded in the history.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::fields::{AbsolutePath, Field, Flag};

/// The kernel-OOM watcher: the kernel's own OOM kills become `kernel-oom` records, from the
/// kernel log and the `oom_kill` counters of `memory.events`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelOomWatchSettings {
    /// Watch (on by default: reading it changes nothing).
    pub enabled: bool,
    /// The kernel log to follow (`/dev/kmsg`).
    pub kmsg: PathBuf,
    /// Take in the OOM kills the kernel log still holds from before the daemon started (off:
    /// only those from the start on; a restarted daemon would record them twice).
    pub from_boot: bool,
}

impl Default for KernelOomWatchSettings {
    fn default() -> Self {
        KernelOomWatchSettings {
            enabled: true,
            kmsg: PathBuf::from("/dev/kmsg"),
            from_boot: false,
        }
    }
}

/// The section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct KernelOomWatchIn {
    enabled: Field<Flag>,
    kmsg: Field<AbsolutePath>,
    from_boot: Field<Flag>,
}

impl KernelOomWatchIn {
    /// The settings, defaults filled in.
    pub(super) fn settings(self) -> KernelOomWatchSettings {
        let mut settings = KernelOomWatchSettings::default();
        if let Some(Flag(on)) = self.enabled.get() {
            settings.enabled = *on;
        }
        if let Some(path) = self.kmsg.into_option().and_then(|p| p.0) {
            settings.kmsg = path;
        }
        if let Some(Flag(on)) = self.from_boot.get() {
            settings.from_boot = *on;
        }
        settings
    }
}

/// The section as `oomwarden check` writes it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct KernelOomWatchOut {
    enabled: bool,
    kmsg: String,
    from_boot: bool,
}

impl KernelOomWatchOut {
    pub(super) fn of(s: &KernelOomWatchSettings) -> Self {
        KernelOomWatchOut {
            enabled: s.enabled,
            kmsg: s.kmsg.display().to_string(),
            from_boot: s.from_boot,
        }
    }
}
