//! `flightRecorder`: the last minutes of reads kept in memory and saved with each action.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use crate::fields::{Field, Flag, format_duration, leaf, text, unless_blank, within};

/// The flight recorder: the daemon keeps what it read during the last `window` in memory and
/// saves it beside each action (`<stateDir>/recordings/`), for `oomwarden replay`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlightRecorderSettings {
    /// Record (off by default: the candidates are then read every cycle, not only when the
    /// trigger fires).
    pub enabled: bool,
    /// How much history to keep in memory (10s to 1h).
    pub window: Duration,
    /// How many saved recordings to keep in the state directory (the oldest are deleted).
    pub keep: usize,
}

impl Default for FlightRecorderSettings {
    fn default() -> Self {
        FlightRecorderSettings {
            enabled: false,
            window: Duration::from_secs(300),
            keep: 20,
        }
    }
}

/// The section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct FlightRecorderIn {
    enabled: Field<Flag>,
    window: Field<FlightWindow>,
    keep: Field<Keep>,
}

#[derive(Debug)]
struct FlightWindow(Option<Duration>);

impl<'de> Deserialize<'de> for FlightWindow {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| {
            unless_blank(s, |t| {
                within(t, Duration::from_secs(10)..=Duration::from_secs(3600))
                    .map_err(|_| format!("expected a duration from \"10s\" to \"1h\", found {t:?}"))
            })
        })
        .map(FlightWindow)
    }
}

#[derive(Debug)]
struct Keep(usize);

impl<'de> Deserialize<'de> for Keep {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        leaf(d, |v| {
            match v.as_u64().and_then(|k| usize::try_from(k).ok()) {
                Some(k) if (1..=1000).contains(&k) => Ok(Keep(k)),
                _ => Err(format!(
                    "expected a number of recordings from 1 to 1000, found {v}"
                )),
            }
        })
    }
}

impl FlightRecorderIn {
    /// The settings, defaults filled in.
    pub(super) fn settings(self) -> FlightRecorderSettings {
        let mut settings = FlightRecorderSettings::default();
        if let Some(Flag(on)) = self.enabled.get() {
            settings.enabled = *on;
        }
        if let Some(window) = self.window.into_option().and_then(|w| w.0) {
            settings.window = window;
        }
        if let Some(Keep(keep)) = self.keep.get() {
            settings.keep = *keep;
        }
        settings
    }
}

/// The section as `oomwarden check` writes it.
#[derive(Debug, Serialize)]
pub(super) struct FlightRecorderOut {
    enabled: bool,
    window: String,
    keep: usize,
}

impl FlightRecorderOut {
    pub(super) fn of(s: &FlightRecorderSettings) -> Self {
        FlightRecorderOut {
            enabled: s.enabled,
            window: format_duration(s.window),
            keep: s.keep,
        }
    }
}
