//! oomwarden's configuration: one YAML file holding up to two documents.
//!
//! - Talos's `OOMConfig` (`apiVersion: v1alpha1`), accepted verbatim: `triggerExpression`,
//!   `cgroupRankingExpression`, `sampleInterval`, `strictCgroupClassOrdering`. Empty or
//!   missing fields take the Talos 1.14 defaults; validation messages are Talos's.
//! - Our `OOMWardenConfig` (`apiVersion: oomwarden/v1alpha1`) for what Talos has no field for.
//!
//! Loading is two-phase: text → [`Settings`] (expressions compiled and type-checked, durations
//! parsed), collecting *every* error with its document and key rather than stopping at the
//! first. The crate is pure: it takes file contents and a name for messages, never a path
//! to open.
//!
//! ```
//! use oomwarden_config::Settings;
//!
//! let s = Settings::from_yaml("apiVersion: v1alpha1\nkind: OOMConfig\nsampleInterval: 250ms\n", "oom.yaml").unwrap();
//! assert_eq!(s.oom.sample_interval.as_millis(), 250);
//! assert!(s.oom.strict_class_ordering);
//! ```

mod document;
mod fields;
mod layout;
mod render;
mod warden;

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use oomwarden_expr::{RankingExpr, TriggerExpr};

pub use document::{OOM_CONFIG_API_VERSION, OOM_CONFIG_KIND, WARDEN_API_VERSION, WARDEN_KIND};
pub use layout::{DEFAULT_CUSTOM_NAME, LayoutSetting};
pub use warden::{
    ContainerRuntimeSettings, DEFAULT_IDENTITY_REFRESH, DEFAULT_POST_KILL_TIMEOUT,
    DEFAULT_PRE_KILL_TIMEOUT, DEFAULT_TAINT_AFTER_KILLS, DEFAULT_TAINT_HOLD_DOWN,
    DEFAULT_TERMINATE_GRACE, DEFAULT_WARN_HOLD_DOWN, EventsSettings, FlightRecorderSettings, Hook,
    Hooks, KernelOomWatchSettings, MetricsSettings, ProtectSettings, PsiTriggerSettings,
    RuntimeEndpoint, Stage, StageAction, UsageHistorySettings, WardenSettings,
};

/// Talos 1.14's `DefaultOOMTriggerExpression`, in the form cel-go's unparser prints it.
pub const DEFAULT_TRIGGER_EXPRESSION: &str =
    "multiply_qos_vectors(d_qos_memory_full_total, {System: 8.0, Podruntime: 4.0}) > 3000.0 &&
multiply_qos_vectors(qos_memory_full_avg10, {System: 1.0, Podruntime: 1.0}) > 5.0 &&
time_since_trigger > duration(\"5s\")";

/// Talos's `DefaultOOMCgroupRankingExpression` (unchanged since 1.12).
pub const DEFAULT_RANKING_EXPRESSION: &str = "memory_max.hasValue() ? 0.0 :
{Besteffort: 1.0, Burstable: 0.5, Guaranteed: 0.0, Podruntime: 0.0, System: 0.0}[class] *
double(memory_current.orValue(0u))";

/// Talos's `DefaultOOMSampleInterval`.
pub const DEFAULT_SAMPLE_INTERVAL: Duration = Duration::from_millis(500);

/// The shortest sample interval accepted. Talos accepts any positive value (even `1ns`,
/// which would busy-loop a core); we refuse intervals a cgroup walk cannot keep up with.
pub const MIN_SAMPLE_INTERVAL: Duration = Duration::from_millis(10);

/// Default state directory (action history, socket).
pub const DEFAULT_STATE_DIR: &str = "/var/lib/oomwarden";

/// Default bound on the wait for a killed cgroup to empty.
pub const DEFAULT_KILL_TIMEOUT: Duration = Duration::from_secs(2);

/// The Talos-compatible settings (`OOMConfig`).
#[derive(Debug, Clone)]
pub struct OomSettings {
    /// When to act.
    pub trigger: TriggerExpr,
    /// Whom to kill.
    pub ranking: RankingExpr,
    /// How often to sample.
    pub sample_interval: Duration,
    /// Kill from the least important class first (true) or the highest score overall.
    pub strict_class_ordering: bool,
}

/// The names `layout` accepts: `auto` and [`oomwarden_model::BuiltinLayout::ALL`]'s names
/// (a test holds them equal); it also takes a mapping: a custom layout.
pub const LAYOUTS: [&str; 5] = ["auto", "talos", "systemd", "cgroupfs", "host"];

#[cfg(test)]
mod layout_names {
    #[test]
    fn the_accepted_names_are_auto_and_the_builtins() {
        let mut want = vec!["auto"];
        want.extend(oomwarden_model::BuiltinLayout::ALL.map(oomwarden_model::BuiltinLayout::name));
        assert_eq!(super::LAYOUTS.to_vec(), want);
    }
}

/// The effective configuration, validated.
#[derive(Debug, Clone)]
pub struct Settings {
    /// From the `OOMConfig` document (or Talos defaults).
    pub oom: OomSettings,
    /// From the `OOMWardenConfig` document (or our defaults).
    pub warden: WardenSettings,
}

/// Settings given on the command line; they win over the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `--sample-interval`.
    pub sample_interval: Option<Duration>,
    /// `--dry-run`.
    pub dry_run: Option<bool>,
    /// `--state-dir`.
    pub state_dir: Option<PathBuf>,
    /// `--kill-timeout`.
    pub kill_timeout: Option<Duration>,
    /// `--layout`.
    pub layout: Option<LayoutSetting>,
    /// `--metrics-listen` (enables the endpoint there).
    pub metrics_listen: Option<std::net::SocketAddr>,
}

/// One problem found while loading a configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file name given by the caller (`<defaults>` for the embedded defaults).
    pub file: String,
    /// 1-based document number in the YAML stream, when the problem is in a document.
    pub document: Option<usize>,
    /// The document kind, when known.
    pub kind: Option<String>,
    /// The key at fault (`triggerExpression`), when there is one.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(doc) = self.document {
            write!(f, ": document {doc}")?;
            if let Some(kind) = &self.kind {
                write!(f, " ({kind})")?;
            }
        }
        if let Some(key) = &self.key {
            // A key is the file's text: a newline in it must not forge a line of the report.
            write!(f, ": {}", printable(key))?;
        }
        write!(f, ": {}", self.message)
    }
}

/// `s` with its control characters written as escapes (`\n`, `\t`, `\r`, `\xHH`).
fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Every problem found in a configuration (never empty).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl Settings {
    /// The embedded defaults: Talos 1.14's `OOMConfig` defaults and ours.
    pub fn defaults() -> Result<Settings, ConfigErrors> {
        Settings::from_yaml("", "<defaults>")
    }

    /// Parses and validates a configuration file's contents. `name` is used in messages only.
    /// An empty file (or one holding only comments) means the defaults.
    pub fn from_yaml(text: &str, name: &str) -> Result<Settings, ConfigErrors> {
        document::load(text, name, document::Reader::Oomwarden)
    }

    /// Validates a configuration as Talos 1.14 would read it: only the `OOMConfig` document
    /// (an `OOMWardenConfig` is an error), and expressions in Talos's environments exactly, so
    /// oomwarden's extension variables (`node_*`, `pod_uid`) are undeclared references.
    pub fn from_yaml_talos(text: &str, name: &str) -> Result<Settings, ConfigErrors> {
        document::load(text, name, document::Reader::Talos)
    }

    /// The `OOMConfig` document alone, defaults filled in: what a Talos machine config takes.
    pub fn to_talos_yaml(&self) -> String {
        render::to_talos_yaml(self)
    }

    /// The catalogue's variables the trigger, the response stages' conditions and the ranking
    /// name, with their sources, in the catalogue's order (trigger variables first).
    pub fn variables_read(&self) -> Vec<(&'static str, oomwarden_model::variables::Source)> {
        let triggers: Vec<_> = std::iter::once(&self.oom.trigger)
            .chain(self.warden.stages.iter().map(|s| &s.when))
            .collect();
        oomwarden_model::TriggerVar::all()
            .filter(|v| triggers.iter().any(|t| t.reads(v.name())))
            .map(|v| (v.name(), v.definition().source))
            .chain(
                oomwarden_model::RankingVar::all()
                    .filter(|v| self.oom.ranking.reads(v.name()))
                    .map(|v| (v.name(), v.definition().source)),
            )
            .collect()
    }

    /// What of these settings reads memory pressure (PSI), so that a node without it (booted
    /// with `psi=0`) can be refused only by a policy that needs it: the PSI variables the
    /// trigger, the response stages' conditions and the ranking name (in the catalogue's
    /// order), and `psiTriggers` when enabled. Empty: the policy runs without PSI.
    pub fn psi_reads(&self) -> Vec<&'static str> {
        use oomwarden_model::variables::Source;
        let mut reads: Vec<&'static str> = self
            .variables_read()
            .into_iter()
            .filter(|(_, s)| {
                matches!(
                    s,
                    Source::RootPressure | Source::ClassPressure | Source::CandidatePressure
                )
            })
            .map(|(name, _)| name)
            .collect();
        if self.warden.psi_triggers.enabled {
            reads.push("psiTriggers");
        }
        reads
    }

    /// The swap variables the policy reads (`node_swap_*`, `node_zswap_bytes`,
    /// `d_node_swap_free`, the swap-in and swap-out rates, `qos_memory_swap_current`,
    /// `memory_swap_*`): none means a policy blind to swap.
    pub fn swap_reads(&self) -> Vec<&'static str> {
        use oomwarden_model::variables::Source;
        self.variables_read()
            .into_iter()
            .filter(|(name, s)| {
                matches!(
                    s,
                    Source::MeminfoSwap | Source::ClassMemorySwap | Source::CandidateMemorySwap
                ) || (*s == Source::Vmstat && name.contains("swp"))
            })
            .map(|(name, _)| name)
            .collect()
    }

    /// Applies command-line overrides.
    pub fn apply(&mut self, overrides: &Overrides) {
        if let Some(interval) = overrides.sample_interval {
            self.oom.sample_interval = interval;
        }
        if let Some(dry_run) = overrides.dry_run {
            self.warden.dry_run = dry_run;
        }
        if let Some(dir) = &overrides.state_dir {
            self.warden.state_dir.clone_from(dir);
        }
        if let Some(timeout) = overrides.kill_timeout {
            self.warden.kill_timeout = timeout;
        }
        if let Some(layout) = &overrides.layout {
            self.warden.layout.clone_from(layout);
        }
        if let Some(listen) = overrides.metrics_listen {
            self.warden.metrics = MetricsSettings {
                enabled: true,
                listen,
            };
        }
    }

    /// The effective settings as a configuration file (both documents, defaults filled in).
    /// Loading the output gives the same settings.
    pub fn to_yaml(&self) -> String {
        render::to_yaml(self)
    }
}

/// Whether the text holds an `OOMWardenConfig` document (so a reload can say when one vanished).
pub fn declares_warden_document(text: &str) -> bool {
    document::declares_warden_document(text)
}

/// The top-level keys `text`'s `OOMConfig` document writes (`apiVersion` and `kind`
/// included), or `None` when it has none.
pub fn oom_keys(text: &str) -> Option<Vec<String>> {
    document::oom_keys(text)
}

/// Whether `text`'s `OOMWardenConfig` document sets the top-level `key` itself (not by
/// default).
pub fn warden_sets(text: &str, key: &str) -> bool {
    document::warden_sets(text, key)
}

/// `layout` written out as an `OOMWardenConfig` document with a custom layout (named
/// [`DEFAULT_CUSTOM_NAME`] when it is a built-in one): a starting point for a custom layout.
/// Loading the output gives the same metrics and candidates.
pub fn layout_document(layout: &oomwarden_model::Layout) -> String {
    layout::layout_document(layout)
}

/// Parses a listen address (`host:port`, `[::1]:port`) as `metrics.listen` does.
pub fn parse_listen(text: &str) -> Result<std::net::SocketAddr, String> {
    warden::listen_from_text(text)
}

/// Parses a `--kill-timeout` value with the same rules as the file's `killTimeout`.
pub fn parse_kill_timeout(text: &str) -> Result<Duration, String> {
    warden::kill_timeout_from_text(text)
}

/// Parses a `--sample-interval` value with the same rules as the file's `sampleInterval`.
pub fn parse_sample_interval(text: &str) -> Result<Duration, String> {
    document::sample_interval_from_text(text)
}
