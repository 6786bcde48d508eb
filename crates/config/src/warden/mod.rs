//! Our `OOMWardenConfig` document: typed, every error with its key path (see `fields`). Each
//! section is a module of its own that owns what is written (`…In`, its leaves and their
//! messages), the settings it comes to (`…Settings`, with their defaults) and what `oomwarden
//! check` writes back (`…Out`); this module holds the top-level keys and puts the sections
//! together.

mod container_runtime;
mod events;
mod flight_recorder;
mod hooks;
mod kernel_oom_watch;
mod metrics;
mod protect;
mod psi_triggers;
mod stages;
mod usage_history;

use std::path::PathBuf;
use std::time::Duration;

use oomwarden_model::{KillMethod, KillScope};
use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

pub use container_runtime::{ContainerRuntimeSettings, DEFAULT_IDENTITY_REFRESH, RuntimeEndpoint};
pub use events::{DEFAULT_TAINT_AFTER_KILLS, EventsSettings};
pub use flight_recorder::FlightRecorderSettings;
pub use hooks::{DEFAULT_POST_KILL_TIMEOUT, DEFAULT_PRE_KILL_TIMEOUT, Hook, Hooks};
pub use kernel_oom_watch::KernelOomWatchSettings;
pub use metrics::MetricsSettings;
pub(crate) use metrics::listen_from_text;
pub use protect::ProtectSettings;
pub use psi_triggers::PsiTriggerSettings;
pub use stages::{
    DEFAULT_TAINT_HOLD_DOWN, DEFAULT_TERMINATE_GRACE, DEFAULT_WARN_HOLD_DOWN, Stage, StageAction,
};
pub use usage_history::UsageHistorySettings;

use crate::fields::{
    self, AbsolutePath, Field, Flag, KeyPath, Problem, Section, format_duration, text,
    timeout_from_text, unless_blank,
};
use crate::layout::{LayoutField, LayoutOut};
use crate::{
    DEFAULT_KILL_TIMEOUT, DEFAULT_STATE_DIR, LayoutSetting, WARDEN_API_VERSION, WARDEN_KIND,
};

/// Our own settings (`OOMWardenConfig`).
#[derive(Debug, Clone, PartialEq)]
pub struct WardenSettings {
    /// Decide and record, but never kill.
    pub dry_run: bool,
    /// Where the action history and socket live.
    pub state_dir: PathBuf,
    /// How long to wait for a killed cgroup to empty before recording `not-verified`.
    pub kill_timeout: Duration,
    /// What a kill of a pod ends: the whole pod (Talos) or its containers.
    pub kill_scope: KillScope,
    /// How the victim is killed: `cgroup.kill` (Talos) or the kernel's OOM killer.
    pub kill_method: KillMethod,
    /// Guards outside the ranking (node-critical pods are never candidates).
    pub protect: ProtectSettings,
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
    /// Responses before the kill (`warn`, `terminate`), in order.
    pub stages: Vec<Stage>,
    /// What every pod and container used, for `oomwarden rightsize`.
    pub usage_history: UsageHistorySettings,
}

impl Default for WardenSettings {
    fn default() -> Self {
        WardenSettings {
            dry_run: false,
            state_dir: PathBuf::from(DEFAULT_STATE_DIR),
            kill_timeout: DEFAULT_KILL_TIMEOUT,
            kill_scope: KillScope::Pod,
            kill_method: KillMethod::Cgroup,
            protect: ProtectSettings::default(),
            layout: LayoutSetting::Auto,
            metrics: MetricsSettings::default(),
            hooks: Hooks::default(),
            psi_triggers: PsiTriggerSettings::default(),
            flight_recorder: FlightRecorderSettings::default(),
            container_runtime: ContainerRuntimeSettings::default(),
            kernel_oom_watch: KernelOomWatchSettings::default(),
            events: EventsSettings::default(),
            stages: Vec::new(),
            usage_history: UsageHistorySettings::default(),
        }
    }
}

/// The document as written. The field order is the order "known fields are …" lists them in.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
struct WardenIn {
    api_version: Field<IgnoredAny>,
    kind: Field<IgnoredAny>,
    dry_run: Field<Flag>,
    state_dir: Field<AbsolutePath>,
    kill_timeout: Field<KillTimeout>,
    kill_scope: Field<Scope>,
    kill_method: Field<Method>,
    protect: Field<Section<protect::ProtectIn>>,
    layout: Field<LayoutField>,
    metrics: Field<Section<metrics::MetricsIn>>,
    hooks: Field<Section<hooks::HooksIn>>,
    psi_triggers: Field<Section<psi_triggers::PsiTriggersIn>>,
    flight_recorder: Field<Section<flight_recorder::FlightRecorderIn>>,
    container_runtime: Field<Section<container_runtime::ContainerRuntimeIn>>,
    kernel_oom_watch: Field<Section<kernel_oom_watch::KernelOomWatchIn>>,
    events: Field<Section<events::EventsIn>>,
    stages: Field<stages::StagesIn>,
    usage_history: Field<Section<usage_history::UsageHistoryIn>>,
}

#[derive(Debug)]
struct KillTimeout(Option<Duration>);

impl<'de> Deserialize<'de> for KillTimeout {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| unless_blank(s, kill_timeout_from_text)).map(KillTimeout)
    }
}

/// `pod` or `containers`.
#[derive(Debug)]
struct Scope(Option<KillScope>);

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| {
            unless_blank(s, |t| {
                KillScope::from_name(t)
                    .ok_or_else(|| format!("expected pod or containers, found {t:?}"))
            })
        })
        .map(Scope)
    }
}

/// `cgroup` or `kernel-oom`.
#[derive(Debug)]
struct Method(Option<KillMethod>);

impl<'de> Deserialize<'de> for Method {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| {
            unless_blank(s, |t| {
                KillMethod::from_name(t)
                    .ok_or_else(|| format!("expected cgroup or kernel-oom, found {t:?}"))
            })
        })
        .map(Method)
    }
}

/// Validates a kill timeout: a positive Go duration of at most 60 s.
pub(crate) fn kill_timeout_from_text(text: &str) -> Result<Duration, String> {
    timeout_from_text(text, "kill timeout")
}

/// What the `OOMWardenConfig` document said, before defaults.
#[derive(Debug, Default)]
pub(crate) struct WardenRaw {
    dry_run: Option<bool>,
    state_dir: Option<PathBuf>,
    kill_timeout: Option<Duration>,
    kill_scope: Option<KillScope>,
    kill_method: Option<KillMethod>,
    protect: Option<ProtectSettings>,
    layout: Option<LayoutSetting>,
    metrics: Option<MetricsSettings>,
    hooks: Option<Hooks>,
    psi_triggers: Option<PsiTriggerSettings>,
    flight_recorder: Option<FlightRecorderSettings>,
    container_runtime: Option<ContainerRuntimeSettings>,
    kernel_oom_watch: Option<KernelOomWatchSettings>,
    events: Option<EventsSettings>,
    stages: Option<Vec<Stage>>,
    usage_history: Option<UsageHistorySettings>,
}

impl WardenRaw {
    /// The settings, defaults filled in.
    pub(crate) fn finish(self) -> WardenSettings {
        let d = WardenSettings::default();
        WardenSettings {
            dry_run: self.dry_run.unwrap_or(d.dry_run),
            state_dir: self.state_dir.unwrap_or(d.state_dir),
            kill_timeout: self.kill_timeout.unwrap_or(d.kill_timeout),
            kill_scope: self.kill_scope.unwrap_or(d.kill_scope),
            kill_method: self.kill_method.unwrap_or(d.kill_method),
            protect: self.protect.unwrap_or(d.protect),
            layout: self.layout.unwrap_or(d.layout),
            metrics: self.metrics.unwrap_or(d.metrics),
            hooks: self.hooks.unwrap_or(d.hooks),
            psi_triggers: self.psi_triggers.unwrap_or(d.psi_triggers),
            flight_recorder: self.flight_recorder.unwrap_or(d.flight_recorder),
            container_runtime: self.container_runtime.unwrap_or(d.container_runtime),
            kernel_oom_watch: self.kernel_oom_watch.unwrap_or(d.kernel_oom_watch),
            events: self.events.unwrap_or(d.events),
            stages: self.stages.unwrap_or(d.stages),
            usage_history: self.usage_history.unwrap_or(d.usage_history),
        }
    }
}

/// Reads and checks an `OOMWardenConfig` document into `raw`; its problems.
pub(crate) fn document(doc: Value, raw: &mut WardenRaw) -> Vec<Problem> {
    let root = KeyPath::default();
    let (doc, mut problems) = fields::read::<WardenIn>(doc, &root);
    crate::layout::explain_unknown_keys(&mut problems);
    let Some(doc) = doc else {
        return problems;
    };
    raw.dry_run = doc.dry_run.get().map(|f| f.0);
    raw.state_dir = doc.state_dir.into_option().and_then(|s| s.0);
    raw.kill_timeout = doc.kill_timeout.into_option().and_then(|t| t.0);
    raw.kill_scope = doc.kill_scope.into_option().and_then(|s| s.0);
    raw.kill_method = doc.kill_method.into_option().and_then(|m| m.0);
    raw.protect = doc.protect.section().map(protect::ProtectIn::settings);
    raw.layout = doc
        .layout
        .into_option()
        .and_then(|l| l.setting(&root.key("layout"), &mut problems));
    raw.metrics = doc.metrics.section().map(metrics::MetricsIn::settings);
    raw.psi_triggers = doc
        .psi_triggers
        .section()
        .map(|p| p.settings(&root.key("psiTriggers"), &mut problems));
    raw.flight_recorder = doc
        .flight_recorder
        .section()
        .map(flight_recorder::FlightRecorderIn::settings);
    raw.container_runtime = doc
        .container_runtime
        .section()
        .map(container_runtime::ContainerRuntimeIn::settings);
    raw.kernel_oom_watch = doc
        .kernel_oom_watch
        .section()
        .map(kernel_oom_watch::KernelOomWatchIn::settings);
    raw.events = doc.events.section().map(events::EventsIn::settings);
    raw.usage_history = doc
        .usage_history
        .section()
        .map(usage_history::UsageHistoryIn::settings);
    raw.stages = doc
        .stages
        .into_option()
        .map(|list| stages::settings(list, &root.key("stages"), &mut problems));
    // The node is tainted through the API server, as the Events are sent.
    let events_on = raw.events.as_ref().is_some_and(|e| e.enabled);
    for (i, stage) in raw.stages.iter().flatten().enumerate() {
        if stage.action == StageAction::Taint && !events_on {
            problems.push(Problem::new(
                root.key("stages").index(i).key("action"),
                "a taint stage needs events.enabled: the node is tainted through the API server, as the Events are sent",
            ));
        }
    }
    raw.hooks = doc
        .hooks
        .section()
        .map(|h| h.settings(&root.key("hooks"), &mut problems));
    problems
}

/// The document as `oomwarden check` writes it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WardenOut<'a> {
    api_version: &'a str,
    kind: &'a str,
    dry_run: bool,
    state_dir: String,
    kill_timeout: String,
    kill_scope: &'static str,
    kill_method: &'static str,
    protect: protect::ProtectOut,
    layout: LayoutOut<'a>,
    metrics: metrics::MetricsOut,
    #[serde(skip_serializing_if = "hooks::HooksOut::is_empty")]
    hooks: hooks::HooksOut,
    psi_triggers: psi_triggers::PsiTriggersOut,
    flight_recorder: flight_recorder::FlightRecorderOut,
    container_runtime: container_runtime::ContainerRuntimeOut,
    kernel_oom_watch: kernel_oom_watch::KernelOomWatchOut,
    events: events::EventsOut,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stages: Vec<stages::StageOut>,
    usage_history: usage_history::UsageHistoryOut,
}

impl<'a> WardenOut<'a> {
    pub(crate) fn of(s: &'a WardenSettings) -> Self {
        WardenOut {
            api_version: WARDEN_API_VERSION,
            kind: WARDEN_KIND,
            dry_run: s.dry_run,
            state_dir: s.state_dir.display().to_string(),
            kill_timeout: format_duration(s.kill_timeout),
            kill_scope: s.kill_scope.name(),
            kill_method: s.kill_method.name(),
            protect: protect::ProtectOut::of(&s.protect),
            layout: LayoutOut::of(&s.layout),
            metrics: metrics::MetricsOut::of(&s.metrics),
            hooks: hooks::HooksOut::of(&s.hooks),
            psi_triggers: psi_triggers::PsiTriggersOut::of(&s.psi_triggers),
            flight_recorder: flight_recorder::FlightRecorderOut::of(&s.flight_recorder),
            container_runtime: container_runtime::ContainerRuntimeOut::of(&s.container_runtime),
            kernel_oom_watch: kernel_oom_watch::KernelOomWatchOut::of(&s.kernel_oom_watch),
            events: events::EventsOut::of(&s.events),
            stages: s.stages.iter().map(stages::StageOut::of).collect(),
            usage_history: usage_history::UsageHistoryOut::of(&s.usage_history),
        }
    }
}
