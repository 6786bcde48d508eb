//! Our `OOMWardenConfig` document: typed, every error with its key path (see `fields`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use oomwarden_model::KillScope;
use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::document::go_duration;
use crate::fields::{self, Field, Flag, KeyPath, Problem, expected, leaf, mapping, text};
use crate::layout::LayoutField;
use crate::{
    ContainerRuntimeSettings, EventsSettings, FlightRecorderSettings, Hook, Hooks,
    KernelOomWatchSettings, LayoutSetting, MetricsSettings, PsiTriggerSettings, RuntimeEndpoint,
    WardenSettings,
};

/// The document. The field order is the order "known fields are …" lists them in.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
struct WardenDoc {
    api_version: Field<IgnoredAny>,
    kind: Field<IgnoredAny>,
    dry_run: Field<Flag>,
    state_dir: Field<AbsolutePath>,
    kill_timeout: Field<KillTimeout>,
    kill_scope: Field<Scope>,
    layout: Field<LayoutField>,
    metrics: Field<Section<MetricsDoc>>,
    hooks: Field<Section<HooksDoc>>,
    psi_triggers: Field<Section<PsiDoc>>,
    flight_recorder: Field<Section<FlightDoc>>,
    container_runtime: Field<Section<RuntimeDoc>>,
    kernel_oom_watch: Field<Section<KernelWatchDoc>>,
    events: Field<Section<EventsDoc>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
struct EventsDoc {
    enabled: Field<Flag>,
    kubeconfig: Field<AbsolutePath>,
    node_name: Field<NodeName>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
struct KernelWatchDoc {
    enabled: Field<Flag>,
    kmsg: Field<AbsolutePath>,
    from_boot: Field<Flag>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
struct RuntimeDoc {
    endpoint: Field<EndpointText>,
    pod_logs: Field<AbsolutePath>,
    refresh_every: Field<RefreshEvery>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct MetricsDoc {
    enabled: Field<Flag>,
    listen: Field<Listen>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
struct HooksDoc {
    pre_kill: Field<Section<HookDoc>>,
    post_kill: Field<Section<HookDoc>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct HookDoc {
    command: Field<Command>,
    timeout: Field<HookTimeout>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct PsiDoc {
    enabled: Field<Flag>,
    kind: Field<PsiKind>,
    stall: Field<PositiveDuration>,
    window: Field<PositiveDuration>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FlightDoc {
    enabled: Field<Flag>,
    window: Field<FlightWindow>,
    keep: Field<Keep>,
}

/// What a nested mapping says it holds when it is something else.
trait Described {
    /// `a mapping with enabled, listen`.
    const WHAT: &'static str;
}

impl Described for MetricsDoc {
    const WHAT: &'static str = "a mapping with enabled, listen";
}
impl Described for HooksDoc {
    const WHAT: &'static str = "a mapping with preKill, postKill";
}
impl Described for HookDoc {
    const WHAT: &'static str = "a mapping with command and timeout";
}
impl Described for PsiDoc {
    const WHAT: &'static str = "a mapping with enabled, kind, stall, window";
}
impl Described for FlightDoc {
    const WHAT: &'static str = "a mapping with enabled, window, keep";
}
impl Described for KernelWatchDoc {
    const WHAT: &'static str = "a mapping with enabled, kmsg, fromBoot";
}
impl Described for EventsDoc {
    const WHAT: &'static str = "a mapping with enabled, kubeconfig, nodeName";
}
impl Described for RuntimeDoc {
    const WHAT: &'static str = "a mapping with endpoint, podLogs, refreshEvery";
}

/// A nested mapping; anything else is "expected a mapping with …".
#[derive(Debug)]
struct Section<T>(T);

impl<'de, T: Deserialize<'de> + Described> Deserialize<'de> for Section<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        mapping(d, T::WHAT).map(Section)
    }
}

impl<T> Field<Section<T>> {
    /// The section's fields, when it is there and read.
    fn section(self) -> Option<T> {
        self.into_option().map(|s| s.0)
    }
}

/// A string leaf where blank text means unset, as in Talos.
fn unless_blank<T>(
    s: String,
    read: impl FnOnce(&str) -> Result<T, String>,
) -> Result<Option<T>, String> {
    if s.trim().is_empty() {
        Ok(None)
    } else {
        read(&s).map(Some)
    }
}

#[derive(Debug)]
struct AbsolutePath(Option<PathBuf>);

impl<'de> Deserialize<'de> for AbsolutePath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| {
            unless_blank(s, |dir| {
                if dir.starts_with('/') {
                    Ok(PathBuf::from(dir))
                } else {
                    Err(format!("must be an absolute path, found {dir:?}"))
                }
            })
        })
        .map(AbsolutePath)
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

#[derive(Debug)]
struct HookTimeout(Option<Duration>);

impl<'de> Deserialize<'de> for HookTimeout {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| {
            unless_blank(s, |t| timeout_from_text(t, "hook timeout"))
        })
        .map(HookTimeout)
    }
}

#[derive(Debug)]
struct Listen(Option<SocketAddr>);

impl<'de> Deserialize<'de> for Listen {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| unless_blank(s, listen_from_text)).map(Listen)
    }
}

/// `some` or `full`: `Some(true)` for full.
#[derive(Debug)]
struct PsiKind(Option<bool>);

impl<'de> Deserialize<'de> for PsiKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| {
            unless_blank(s, |kind| match kind {
                "full" => Ok(true),
                "some" => Ok(false),
                other => Err(format!("expected some or full, found {other:?}")),
            })
        })
        .map(PsiKind)
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

/// A hook's command: the program (an absolute path) and its arguments.
#[derive(Debug)]
struct Command(Vec<String>);

impl<'de> Deserialize<'de> for Command {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        leaf(d, |v| match v {
            Value::Array(list) if !list.is_empty() => {
                let words: Option<Vec<String>> =
                    list.iter().map(|w| w.as_str().map(str::to_owned)).collect();
                match words {
                    Some(w) if w.first().is_some_and(|p| p.starts_with('/')) => Ok(Command(w)),
                    Some(w) => Err(format!(
                        "the program must be an absolute path (oomwarden runs as root and does not search PATH), found {:?}",
                        w.first().map_or("", String::as_str)
                    )),
                    None => Err("every element must be a string".to_owned()),
                }
            }
            other => Err(expected(
                "a non-empty list: the program and its arguments (no shell)",
                &other,
            )),
        })
    }
}

/// A Go duration within `range`. `Err` says only that it is not: each field words it.
fn within(text: &str, range: std::ops::RangeInclusive<Duration>) -> Result<Duration, ()> {
    let nanos = go_duration(text).map_err(|_| ())?;
    let d = u64::try_from(nanos)
        .map(Duration::from_nanos)
        .map_err(|_| ())?;
    if range.contains(&d) { Ok(d) } else { Err(()) }
}

/// A positive Go duration of at most 60 s.
fn timeout_from_text(text: &str, what: &str) -> Result<Duration, String> {
    go_duration(text)?;
    within(text, Duration::from_nanos(1)..=Duration::from_secs(60))
        .map_err(|()| format!("{what} must be longer than 0 and at most 60s, found {text}"))
}

/// Validates a kill timeout: a positive Go duration of at most 60 s.
pub(crate) fn kill_timeout_from_text(text: &str) -> Result<Duration, String> {
    timeout_from_text(text, "kill timeout")
}

/// Validates a listen address: an IP address and a port (`127.0.0.1:9465`, `[::]:9465`).
pub(crate) fn listen_from_text(text: &str) -> Result<SocketAddr, String> {
    text.parse().map_err(|_| {
        format!(
            "invalid listen address {text:?}: expected IP:PORT such as 127.0.0.1:9465 or [::1]:9465"
        )
    })
}

/// What the `OOMWardenConfig` document said, before defaults.
#[derive(Debug, Default)]
pub(crate) struct WardenRaw {
    dry_run: Option<bool>,
    state_dir: Option<PathBuf>,
    kill_timeout: Option<Duration>,
    kill_scope: Option<KillScope>,
    layout: Option<LayoutSetting>,
    metrics: Option<MetricsSettings>,
    hooks: Option<Hooks>,
    psi_triggers: Option<PsiTriggerSettings>,
    flight_recorder: Option<FlightRecorderSettings>,
    container_runtime: Option<ContainerRuntimeSettings>,
    kernel_oom_watch: Option<KernelOomWatchSettings>,
    events: Option<EventsSettings>,
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
            layout: self.layout.unwrap_or(d.layout),
            metrics: self.metrics.unwrap_or(d.metrics),
            hooks: self.hooks.unwrap_or(d.hooks),
            psi_triggers: self.psi_triggers.unwrap_or(d.psi_triggers),
            flight_recorder: self.flight_recorder.unwrap_or(d.flight_recorder),
            container_runtime: self.container_runtime.unwrap_or(d.container_runtime),
            kernel_oom_watch: self.kernel_oom_watch.unwrap_or(d.kernel_oom_watch),
            events: self.events.unwrap_or(d.events),
        }
    }
}

/// Reads and checks an `OOMWardenConfig` document into `raw`; its problems.
pub(crate) fn document(doc: Value, raw: &mut WardenRaw) -> Vec<Problem> {
    let root = KeyPath::default();
    let (doc, mut problems) = fields::read::<WardenDoc>(doc, &root);
    crate::layout::explain_unknown_keys(&mut problems);
    let Some(doc) = doc else {
        return problems;
    };
    raw.dry_run = doc.dry_run.get().map(|f| f.0);
    raw.state_dir = doc.state_dir.into_option().and_then(|s| s.0);
    raw.kill_timeout = doc.kill_timeout.into_option().and_then(|t| t.0);
    raw.kill_scope = doc.kill_scope.into_option().and_then(|s| s.0);
    raw.layout = doc
        .layout
        .into_option()
        .and_then(|l| l.setting(&root.key("layout"), &mut problems));
    raw.metrics = doc.metrics.section().map(|m| {
        let mut metrics = MetricsSettings::default();
        if let Some(Flag(on)) = m.enabled.get() {
            metrics.enabled = *on;
        }
        if let Some(addr) = m.listen.into_option().and_then(|l| l.0) {
            metrics.listen = addr;
        }
        metrics
    });
    raw.psi_triggers = doc
        .psi_triggers
        .section()
        .map(|p| psi_triggers(p, &root.key("psiTriggers"), &mut problems));
    raw.flight_recorder = doc.flight_recorder.section().map(|f| {
        let mut settings = FlightRecorderSettings::default();
        if let Some(Flag(on)) = f.enabled.get() {
            settings.enabled = *on;
        }
        if let Some(window) = f.window.into_option().and_then(|w| w.0) {
            settings.window = window;
        }
        if let Some(Keep(keep)) = f.keep.get() {
            settings.keep = *keep;
        }
        settings
    });
    raw.container_runtime = doc.container_runtime.section().map(|r| {
        let mut settings = ContainerRuntimeSettings::default();
        if let Some(endpoint) = r.endpoint.into_option().and_then(|e| e.0) {
            settings.endpoint = endpoint;
        }
        if let Some(dir) = r.pod_logs.into_option().and_then(|d| d.0) {
            settings.pod_logs = dir;
        }
        if let Some(every) = r.refresh_every.into_option().and_then(|e| e.0) {
            settings.refresh_every = every;
        }
        settings
    });
    raw.kernel_oom_watch = doc.kernel_oom_watch.section().map(|k| {
        let mut settings = KernelOomWatchSettings::default();
        if let Some(Flag(on)) = k.enabled.get() {
            settings.enabled = *on;
        }
        if let Some(path) = k.kmsg.into_option().and_then(|p| p.0) {
            settings.kmsg = path;
        }
        if let Some(Flag(on)) = k.from_boot.get() {
            settings.from_boot = *on;
        }
        settings
    });
    raw.events = doc.events.section().map(|e| {
        let mut settings = EventsSettings::default();
        if let Some(Flag(on)) = e.enabled.get() {
            settings.enabled = *on;
        }
        settings.kubeconfig = e.kubeconfig.into_option().and_then(|p| p.0);
        settings.node_name = e.node_name.into_option().and_then(|n| n.0);
        settings
    });
    raw.hooks = doc.hooks.section().map(|h| {
        let at = root.key("hooks");
        Hooks {
            pre_kill: h.pre_kill.section().and_then(|hook| {
                self::hook(
                    hook,
                    crate::DEFAULT_PRE_KILL_TIMEOUT,
                    &at.key("preKill"),
                    &mut problems,
                )
            }),
            post_kill: h.post_kill.section().and_then(|hook| {
                self::hook(
                    hook,
                    crate::DEFAULT_POST_KILL_TIMEOUT,
                    &at.key("postKill"),
                    &mut problems,
                )
            }),
        }
    });
    problems
}

fn hook(
    doc: HookDoc,
    default_timeout: Duration,
    at: &KeyPath,
    problems: &mut Vec<Problem>,
) -> Option<Hook> {
    let command = match doc.command {
        Field::Set(Command(words)) => Some(words),
        Field::Reported => None,
        Field::Absent => {
            problems.push(Problem::new(
                at.key("command"),
                "expected a non-empty list: the program and its arguments (no shell), found nothing",
            ));
            None
        }
    };
    let timeout = match doc.timeout {
        Field::Reported => None,
        other => Some(
            other
                .into_option()
                .and_then(|t| t.0)
                .unwrap_or(default_timeout),
        ),
    };
    Some(Hook {
        command: command?,
        timeout: timeout?,
    })
}

/// The PSI trigger settings; the window and the stall are checked together once each reads.
fn psi_triggers(doc: PsiDoc, at: &KeyPath, problems: &mut Vec<Problem>) -> PsiTriggerSettings {
    let mut t = PsiTriggerSettings::default();
    let all_read = !matches!(doc.enabled, Field::Reported)
        && !matches!(doc.kind, Field::Reported)
        && !matches!(doc.stall, Field::Reported)
        && !matches!(doc.window, Field::Reported);
    if let Some(Flag(on)) = doc.enabled.get() {
        t.enabled = *on;
    }
    if let Some(full) = doc.kind.into_option().and_then(|k| k.0) {
        t.full = full;
    }
    if let Some(stall) = doc.stall.into_option().and_then(|s| s.0) {
        t.stall = stall;
    }
    if let Some(window) = doc.window.into_option().and_then(|w| w.0) {
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
