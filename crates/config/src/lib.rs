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

/// Our own settings (`OOMWardenConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WardenSettings {
    /// Decide and record, but never kill.
    pub dry_run: bool,
    /// Where the action history and socket live.
    pub state_dir: PathBuf,
    /// How long to wait for a killed cgroup to empty before recording `not-verified`.
    pub kill_timeout: Duration,
    /// What a kill of a pod ends: the whole pod (Talos) or its containers.
    pub kill_scope: oomwarden_model::KillScope,
    /// `auto` (detect from the tree), a built-in layout, or a custom one.
    pub layout: LayoutSetting,
    /// The metrics endpoint.
    pub metrics: MetricsSettings,
    /// Commands run around kills.
    pub hooks: Hooks,
    /// Event-driven detection.
    pub psi_triggers: PsiTriggerSettings,
    /// The in-memory recording of the last minutes, saved with each action.
    pub flight_recorder: FlightRecorderSettings,
    /// Where pod identity comes from.
    pub container_runtime: ContainerRuntimeSettings,
    /// The kernel-OOM watcher.
    pub kernel_oom_watch: KernelOomWatchSettings,
    /// Kubernetes Events for oomwarden's kills.
    pub events: EventsSettings,
}

/// Kubernetes Events (`events.k8s.io/v1`) for oomwarden's kills and dry-run decisions: one on
/// the victim Pod, one on the Node.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventsSettings {
    /// Send them (off by default: it needs API credentials and RBAC).
    pub enabled: bool,
    /// A kubeconfig file to reach the API server with; absent: the pod's service account
    /// (in-cluster).
    pub kubeconfig: Option<PathBuf>,
    /// The Node's name; absent: `$NODE_NAME` (the DaemonSet sets it from `spec.nodeName`),
    /// else the host name.
    pub node_name: Option<String>,
}

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

/// A hook command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    /// The program (an absolute path) and its arguments; no shell.
    pub command: Vec<String>,
    /// How long it may run before it is killed.
    pub timeout: Duration,
}

/// Commands run around a kill (off by default).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Hooks {
    /// Before the kill, waited for (at most its timeout); the kill goes ahead whatever it
    /// returns.
    pub pre_kill: Option<Hook>,
    /// After the record is written, not waited for; gets the record as JSON on stdin.
    pub post_kill: Option<Hook>,
}

/// Default timeout of the pre-kill hook: it delays the kill.
pub const DEFAULT_PRE_KILL_TIMEOUT: Duration = Duration::from_secs(2);
/// Default timeout of the post-kill hook.
pub const DEFAULT_POST_KILL_TIMEOUT: Duration = Duration::from_secs(10);

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

/// The Prometheus/OpenMetrics endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricsSettings {
    /// Serve it (off by default).
    pub enabled: bool,
    /// Where (`IP:port`); by default `127.0.0.1:9465`, loopback, as the metrics name the
    /// node's classes and pods.
    pub listen: std::net::SocketAddr,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        MetricsSettings {
            enabled: false,
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], 9465)),
        }
    }
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

impl Default for WardenSettings {
    fn default() -> Self {
        WardenSettings {
            dry_run: false,
            state_dir: PathBuf::from(DEFAULT_STATE_DIR),
            kill_timeout: DEFAULT_KILL_TIMEOUT,
            kill_scope: oomwarden_model::KillScope::Pod,
            layout: LayoutSetting::Auto,
            metrics: MetricsSettings::default(),
            hooks: Hooks::default(),
            psi_triggers: PsiTriggerSettings::default(),
            flight_recorder: FlightRecorderSettings::default(),
            container_runtime: ContainerRuntimeSettings::default(),
            kernel_oom_watch: KernelOomWatchSettings::default(),
            events: EventsSettings::default(),
        }
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
            write!(f, ": {key}")?;
        }
        write!(f, ": {}", self.message)
    }
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

/// Whether `text`'s `OOMWardenConfig` document sets the top-level `key` itself (not by
/// default).
pub fn warden_sets(text: &str, key: &str) -> bool {
    document::warden_sets(text, key)
}

/// `layout` written out as an `OOMWardenConfig` document with a custom layout (named
/// [`DEFAULT_CUSTOM_NAME`] when it is a built-in one): a starting point for a custom layout.
/// Loading the output gives the same metrics and candidates.
pub fn layout_document(layout: &oomwarden_model::Layout) -> String {
    render::layout_document(layout)
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
