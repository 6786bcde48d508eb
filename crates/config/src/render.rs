//! The effective settings written back as a configuration file (for `oomwarden check`).

use serde::Serialize;
use serde_saphyr::LitStr;

use crate::fields::format_duration;
use crate::{OOM_CONFIG_API_VERSION, OOM_CONFIG_KIND, Settings};

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
struct OomOut<'a> {
    api_version: &'a str,
    kind: &'a str,
    trigger_expression: Text<'a>,
    cgroup_ranking_expression: Text<'a>,
    sample_interval: String,
    strict_cgroup_class_ordering: bool,
}

fn oom_doc(s: &Settings) -> OomOut<'_> {
    OomOut {
        api_version: OOM_CONFIG_API_VERSION,
        kind: OOM_CONFIG_KIND,
        trigger_expression: text(s.oom.trigger.source()),
        cgroup_ranking_expression: text(s.oom.ranking.source()),
        sample_interval: format_duration(s.oom.sample_interval),
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
    let warden = crate::warden::WardenOut::of(&s.warden);
    format!(
        "{}---\n{}",
        part(serde_saphyr::to_string(&oom)),
        part(serde_saphyr::to_string(&warden))
    )
}
