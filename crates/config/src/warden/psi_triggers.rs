//! `psiTriggers`: kernel PSI triggers that wake a cycle at once.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use crate::fields::{Field, Flag, KeyPath, Problem, format_duration, text, unless_blank, within};

/// Kernel PSI triggers that wake a cycle at once (besides the sampling tick).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PsiTriggerSettings {
    /// Register them (off by default).
    pub enabled: bool,
    /// `full` rather than `some` stall.
    pub full: bool,
    /// Stall time within the window that fires.
    pub stall: Duration,
    /// The window (500ms to 10s).
    pub window: Duration,
}

impl Default for PsiTriggerSettings {
    fn default() -> Self {
        PsiTriggerSettings {
            enabled: false,
            full: true,
            stall: Duration::from_millis(100),
            window: Duration::from_secs(1),
        }
    }
}

/// The section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct PsiTriggersIn {
    enabled: Field<Flag>,
    kind: Field<StallKind>,
    stall: Field<PositiveDuration>,
    window: Field<PositiveDuration>,
}

/// `some` or `full`: `Some(true)` for full.
#[derive(Debug)]
struct StallKind(Option<bool>);

impl<'de> Deserialize<'de> for StallKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| {
            unless_blank(s, |kind| match kind {
                "full" => Ok(true),
                "some" => Ok(false),
                other => Err(format!("expected some or full, found {other:?}")),
            })
        })
        .map(StallKind)
    }
}

#[derive(Debug)]
struct PositiveDuration(Option<Duration>);

impl<'de> Deserialize<'de> for PositiveDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| {
            unless_blank(s, |t| {
                within(t, Duration::from_nanos(1)..=Duration::MAX).map_err(|_| {
                    format!("expected a positive duration such as \"100ms\", found {t:?}")
                })
            })
        })
        .map(PositiveDuration)
    }
}

impl PsiTriggersIn {
    /// The settings; the window and the stall are checked together once each reads.
    pub(super) fn settings(self, at: &KeyPath, problems: &mut Vec<Problem>) -> PsiTriggerSettings {
        let mut t = PsiTriggerSettings::default();
        let all_read = !matches!(self.enabled, Field::Reported)
            && !matches!(self.kind, Field::Reported)
            && !matches!(self.stall, Field::Reported)
            && !matches!(self.window, Field::Reported);
        if let Some(Flag(on)) = self.enabled.get() {
            t.enabled = *on;
        }
        if let Some(full) = self.kind.into_option().and_then(|k| k.0) {
            t.full = full;
        }
        if let Some(stall) = self.stall.into_option().and_then(|s| s.0) {
            t.stall = stall;
        }
        if let Some(window) = self.window.into_option().and_then(|w| w.0) {
            t.window = window;
        }
        if all_read {
            if !(Duration::from_millis(500)..=Duration::from_secs(10)).contains(&t.window) {
                problems.push(Problem::new(
                    at.key("window"),
                    "the kernel accepts windows from 500ms to 10s",
                ));
            } else if t.stall > t.window {
                problems.push(Problem::new(
                    at.key("stall"),
                    "the stall cannot be longer than the window",
                ));
            }
        }
        t
    }
}

/// The section as `oomwarden check` writes it.
#[derive(Debug, Serialize)]
pub(super) struct PsiTriggersOut {
    enabled: bool,
    kind: &'static str,
    stall: String,
    window: String,
}

impl PsiTriggersOut {
    pub(super) fn of(s: &PsiTriggerSettings) -> Self {
        PsiTriggersOut {
            enabled: s.enabled,
            kind: if s.full { "full" } else { "some" },
            stall: format_duration(s.stall),
            window: format_duration(s.window),
        }
    }
}
