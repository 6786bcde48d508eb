//! The effective settings written back as a configuration file (for `oomwarden check`).

use oomwarden_model::format_go_duration;
use serde::Serialize;
use serde_saphyr::LitStr;

use crate::{OOM_CONFIG_API_VERSION, OOM_CONFIG_KIND, Settings, WARDEN_API_VERSION, WARDEN_KIND};

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
    layout: &'a str,
}

fn go_duration(d: std::time::Duration) -> String {
    format_go_duration(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

pub(crate) fn to_yaml(s: &Settings) -> String {
    let oom = OomDoc {
        api_version: OOM_CONFIG_API_VERSION,
        kind: OOM_CONFIG_KIND,
        trigger_expression: text(s.oom.trigger.source()),
        cgroup_ranking_expression: text(s.oom.ranking.source()),
        sample_interval: format_go_duration(
            i64::try_from(s.oom.sample_interval.as_nanos()).unwrap_or(i64::MAX),
        ),
        strict_cgroup_class_ordering: s.oom.strict_class_ordering,
    };
    let warden = WardenDoc {
        api_version: WARDEN_API_VERSION,
        kind: WARDEN_KIND,
        dry_run: s.warden.dry_run,
        state_dir: s.warden.state_dir.display().to_string(),
        kill_timeout: go_duration(s.warden.kill_timeout),
        layout: &s.warden.layout,
    };
    // Serializing these plain structs cannot fail; should it ever, say so in the output.
    let part = |r: Result<String, serde_saphyr::SerializeError>| {
        r.unwrap_or_else(|e| format!("# cannot render: {e}\n"))
    };
    format!(
        "{}---\n{}",
        part(serde_saphyr::to_string(&oom)),
        part(serde_saphyr::to_string(&warden))
    )
}
