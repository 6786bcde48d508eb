//! The effective settings written back as a configuration file (for `oomwarden check`).

use oomwarden_model::format_go_duration;
use serde::Serialize;
use serde_saphyr::LitStr;

use oomwarden_model::{Layout, MetricSource, NameFilter, QosClass};

use crate::{
    LayoutSetting, OOM_CONFIG_API_VERSION, OOM_CONFIG_KIND, Settings, WARDEN_API_VERSION,
    WARDEN_KIND,
};

/// A string written as a `|-` block when it spans lines, plainly otherwise.
#[derive(Serialize)]
#[serde(untagged)]
enum Text<'a> {
    Block(LitStr<'a>),
    Plain(&'a str),
}

fn text(s: &str) -> Text<'_> {
    if s.contains('\n') {
        Text::Block(LitStr(s))
    } else {
        Text::Plain(s)
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OomDoc<'a> {
    api_version: &'a str,
    kind: &'a str,
    trigger_expression: Text<'a>,
    cgroup_ranking_expression: Text<'a>,
    sample_interval: String,
    strict_cgroup_class_ordering: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WardenDoc<'a> {
    api_version: &'a str,
    kind: &'a str,
    dry_run: bool,
    state_dir: String,
    kill_timeout: String,
    kill_scope: &'static str,
    layout: LayoutDoc<'a>,
    metrics: MetricsDoc,
    #[serde(skip_serializing_if = "HooksDoc::is_empty")]
    hooks: HooksDoc,
    psi_triggers: PsiDoc,
    flight_recorder: FlightDoc,
    container_runtime: RuntimeDoc,
    kernel_oom_watch: KernelWatchDoc,
    events: EventsDoc,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventsDoc {
    enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    kubeconfig: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    node_name: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct KernelWatchDoc {
    enabled: bool,
    kmsg: String,
    from_boot: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RuntimeDoc {
    endpoint: String,
    pod_logs: String,
    refresh_every: String,
}

#[derive(Serialize)]
struct FlightDoc {
    enabled: bool,
    window: String,
    keep: usize,
}

#[derive(Serialize)]
struct PsiDoc {
    enabled: bool,
    kind: &'static str,
    stall: String,
    window: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HooksDoc {
    #[serde(skip_serializing_if = "Option::is_none")]
    pre_kill: Option<HookDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    post_kill: Option<HookDoc>,
}

impl HooksDoc {
    fn is_empty(&self) -> bool {
        self.pre_kill.is_none() && self.post_kill.is_none()
    }
}

#[derive(Serialize)]
struct HookDoc {
    command: Vec<String>,
    timeout: String,
}

fn hook_doc(h: &crate::Hook) -> HookDoc {
    HookDoc {
        command: h.command.clone(),
        timeout: go_duration(h.timeout),
    }
}

#[derive(Serialize)]
struct MetricsDoc {
    enabled: bool,
    listen: String,
}

/// `layout`: a name, or a custom layout as a mapping.
#[derive(Serialize)]
#[serde(untagged)]
enum LayoutDoc<'a> {
    Name(&'a str),
    Custom(CustomDoc<'a>),
}

#[derive(Serialize)]
struct CustomDoc<'a> {
    name: &'a str,
    metrics: Vec<EntryDoc<'a>>,
    candidates: Vec<EntryDoc<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EntryDoc<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    dir: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    children_of: Option<&'a str>,
    class: &'static str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    include: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    exclude: &'a [String],
}

impl<'a> EntryDoc<'a> {
    fn children(dir: &'a str, class: QosClass, filter: &'a NameFilter) -> Self {
        EntryDoc {
            dir: None,
            children_of: Some(dir),
            class: class.name(),
            include: &filter.include,
            exclude: &filter.exclude,
        }
    }
}

fn custom_doc(layout: &Layout) -> CustomDoc<'_> {
    let metrics = layout
        .metrics
        .iter()
        .filter_map(|m| match m {
            // Always read; not written.
            MetricSource::Root => None,
            MetricSource::Dir { dir, class } => Some(EntryDoc {
                dir: Some(dir),
                children_of: None,
                class: class.name(),
                include: &[],
                exclude: &[],
            }),
            MetricSource::Children { dir, class, filter } => {
                Some(EntryDoc::children(dir, *class, filter))
            }
        })
        .collect();
    let candidates = layout
        .candidates
        .iter()
        .map(|c| EntryDoc::children(&c.dir, c.class, &c.filter))
        .collect();
    CustomDoc {
        name: &layout.name,
        metrics,
        candidates,
    }
}

/// An `OOMWardenConfig` document holding `layout` as a custom layout (a built-in one written
/// out as data, to start a custom one from). Its name is [`crate::DEFAULT_CUSTOM_NAME`], as a
/// custom layout may not take a built-in name.
pub(crate) fn layout_document(layout: &Layout) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Doc<'a> {
        api_version: &'a str,
        kind: &'a str,
        layout: CustomDoc<'a>,
    }
    let mut custom = custom_doc(layout);
    if Layout::BUILTIN.contains(&custom.name) {
        custom.name = crate::DEFAULT_CUSTOM_NAME;
    }
    let doc = Doc {
        api_version: WARDEN_API_VERSION,
        kind: WARDEN_KIND,
        layout: custom,
    };
    serde_saphyr::to_string(&doc).unwrap_or_else(|e| format!("# cannot render: {e}\n"))
}

fn go_duration(d: std::time::Duration) -> String {
    format_go_duration(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

fn oom_doc(s: &Settings) -> OomDoc<'_> {
    OomDoc {
        api_version: OOM_CONFIG_API_VERSION,
        kind: OOM_CONFIG_KIND,
        trigger_expression: text(s.oom.trigger.source()),
        cgroup_ranking_expression: text(s.oom.ranking.source()),
        sample_interval: format_go_duration(
            i64::try_from(s.oom.sample_interval.as_nanos()).unwrap_or(i64::MAX),
        ),
        strict_cgroup_class_ordering: s.oom.strict_class_ordering,
    }
}

/// Serializing these plain structs cannot fail; should it ever, say so in the output.
fn part(r: Result<String, serde_saphyr::SerializeError>) -> String {
    r.unwrap_or_else(|e| format!("# cannot render: {e}\n"))
}

/// The `OOMConfig` document alone.
pub(crate) fn to_talos_yaml(s: &Settings) -> String {
    part(serde_saphyr::to_string(&oom_doc(s)))
}

pub(crate) fn to_yaml(s: &Settings) -> String {
    let oom = oom_doc(s);
    let warden = WardenDoc {
        api_version: WARDEN_API_VERSION,
        kind: WARDEN_KIND,
        dry_run: s.warden.dry_run,
        state_dir: s.warden.state_dir.display().to_string(),
        kill_timeout: go_duration(s.warden.kill_timeout),
        kill_scope: s.warden.kill_scope.name(),
        layout: match &s.warden.layout {
            LayoutSetting::Custom(layout) => LayoutDoc::Custom(custom_doc(layout)),
            other => LayoutDoc::Name(other.name()),
        },
        metrics: MetricsDoc {
            enabled: s.warden.metrics.enabled,
            listen: s.warden.metrics.listen.to_string(),
        },
        psi_triggers: PsiDoc {
            enabled: s.warden.psi_triggers.enabled,
            kind: if s.warden.psi_triggers.full {
                "full"
            } else {
                "some"
            },
            stall: go_duration(s.warden.psi_triggers.stall),
            window: go_duration(s.warden.psi_triggers.window),
        },
        flight_recorder: FlightDoc {
            enabled: s.warden.flight_recorder.enabled,
            window: go_duration(s.warden.flight_recorder.window),
            keep: s.warden.flight_recorder.keep,
        },
        container_runtime: RuntimeDoc {
            endpoint: s.warden.container_runtime.endpoint.text(),
            pod_logs: s.warden.container_runtime.pod_logs.display().to_string(),
            refresh_every: go_duration(s.warden.container_runtime.refresh_every),
        },
        kernel_oom_watch: KernelWatchDoc {
            enabled: s.warden.kernel_oom_watch.enabled,
            kmsg: s.warden.kernel_oom_watch.kmsg.display().to_string(),
            from_boot: s.warden.kernel_oom_watch.from_boot,
        },
        events: EventsDoc {
            enabled: s.warden.events.enabled,
            kubeconfig: s
                .warden
                .events
                .kubeconfig
                .as_ref()
                .map(|p| p.display().to_string()),
            node_name: s.warden.events.node_name.clone(),
        },
        hooks: HooksDoc {
            pre_kill: s.warden.hooks.pre_kill.as_ref().map(hook_doc),
            post_kill: s.warden.hooks.post_kill.as_ref().map(hook_doc),
        },
    };
    format!(
        "{}---\n{}",
        part(serde_saphyr::to_string(&oom)),
        part(serde_saphyr::to_string(&warden))
    )
}
