//! YAML stream → documents → validated [`Settings`], collecting every error.

use std::path::PathBuf;
use std::time::Duration;

use oomwarden_expr::{CompileError, RankingExpr, TriggerExpr};
use oomwarden_model::parse_go_duration;
use serde_json::{Map, Value};

use crate::{
    ConfigError, ConfigErrors, DEFAULT_RANKING_EXPRESSION, DEFAULT_SAMPLE_INTERVAL,
    DEFAULT_TRIGGER_EXPRESSION, LayoutSetting, MIN_SAMPLE_INTERVAL, OomSettings, Settings,
    WardenSettings,
};

/// `apiVersion` of Talos's document.
pub const OOM_CONFIG_API_VERSION: &str = "v1alpha1";
/// `kind` of Talos's document.
pub const OOM_CONFIG_KIND: &str = "OOMConfig";
/// `apiVersion` of our document.
pub const WARDEN_API_VERSION: &str = "oomwarden/v1alpha1";
/// `kind` of our document.
pub const WARDEN_KIND: &str = "OOMWardenConfig";

const OOM_FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "triggerExpression",
    "cgroupRankingExpression",
    "sampleInterval",
    "strictCgroupClassOrdering",
];
const WARDEN_FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "dryRun",
    "stateDir",
    "killTimeout",
    "layout",
    "metrics",
    "hooks",
    "psiTriggers",
    "flightRecorder",
];
const FLIGHT_FIELDS: &[&str] = &["enabled", "window", "keep"];
const PSI_FIELDS: &[&str] = &["enabled", "kind", "stall", "window"];
const HOOKS_FIELDS: &[&str] = &["preKill", "postKill"];
const HOOK_FIELDS: &[&str] = &["command", "timeout"];
const METRICS_FIELDS: &[&str] = &["enabled", "listen"];

/// Errors of one load, with the file name filled in.
struct Errors<'a> {
    file: &'a str,
    list: Vec<ConfigError>,
}

impl Errors<'_> {
    fn push(
        &mut self,
        document: Option<usize>,
        kind: Option<&str>,
        key: Option<&str>,
        message: impl Into<String>,
    ) {
        self.list.push(ConfigError {
            file: self.file.to_owned(),
            document,
            kind: kind.map(str::to_owned),
            key: key.map(str::to_owned),
            message: message.into(),
        });
    }
}

/// The `OOMConfig` fields whose scalar text matters, read as written. go-yaml hands Talos an
/// unquoted scalar's text when the field is a string: `triggerExpression: false` is the
/// expression `false`, `cgroupRankingExpression: 1.5e3` the expression `1.5e3`. For a bool
/// field go-yaml accepts only some spellings, which the text tells apart from what the YAML
/// library here resolves more leniently (`tRUE`).
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ScalarText {
    trigger_expression: Option<String>,
    cgroup_ranking_expression: Option<String>,
    strict_cgroup_class_ordering: Option<String>,
}

/// What one document contributed, before defaults.
#[derive(Default)]
struct Raw {
    trigger: Option<TriggerExpr>,
    ranking: Option<RankingExpr>,
    sample_interval: Option<Duration>,
    strict: Option<bool>,
    dry_run: Option<bool>,
    state_dir: Option<PathBuf>,
    kill_timeout: Option<Duration>,
    layout: Option<LayoutSetting>,
    metrics: Option<crate::MetricsSettings>,
    hooks: Option<crate::Hooks>,
    psi_triggers: Option<crate::PsiTriggerSettings>,
    flight_recorder: Option<crate::FlightRecorderSettings>,
}

/// Who reads the document: oomwarden, or (for `oomwarden check --talos`) Talos 1.14 as it
/// would: only `OOMConfig`, expressions in Talos's environments exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reader {
    Oomwarden,
    Talos,
}

pub(crate) fn declares_warden_document(text: &str) -> bool {
    serde_saphyr::from_multiple::<Value>(text).is_ok_and(|docs| {
        docs.iter().any(|d| {
            d.get("apiVersion").and_then(Value::as_str) == Some(WARDEN_API_VERSION)
                && d.get("kind").and_then(Value::as_str) == Some(WARDEN_KIND)
        })
    })
}

pub(crate) fn load(text: &str, file: &str, reader: Reader) -> Result<Settings, ConfigErrors> {
    let mut errors = Errors {
        file,
        list: Vec::new(),
    };
    let documents: Vec<Value> = match serde_saphyr::from_multiple(text) {
        Ok(docs) => docs,
        Err(e) => {
            errors.push(None, None, None, format!("invalid YAML: {e}"));
            return Err(ConfigErrors(errors.list));
        }
    };
    // The scalars as written, for the fields go-yaml hands Talos as text (see `ScalarText`).
    // A stream this pass cannot read (a document that is not a mapping, a field that is a
    // list) is reported by the main pass; the text is then simply not available.
    let texts: Vec<Option<ScalarText>> = serde_saphyr::from_multiple(text).unwrap_or_default();
    let mut raw = Raw::default();
    let (mut seen_oom, mut seen_warden) = (false, false);
    for (i, doc) in documents.iter().enumerate() {
        let n = Some(i + 1);
        let map = match doc {
            Value::Null => continue, // an empty document, e.g. a trailing `---`
            Value::Object(map) => map,
            _ => {
                errors.push(
                    n,
                    None,
                    None,
                    "a document must be a mapping with apiVersion and kind",
                );
                continue;
            }
        };
        let api_version = map.get("apiVersion").and_then(Value::as_str);
        let kind = map.get("kind").and_then(Value::as_str);
        match (api_version, kind) {
            (Some(OOM_CONFIG_API_VERSION), Some(OOM_CONFIG_KIND)) => {
                if std::mem::replace(&mut seen_oom, true) {
                    errors.push(n, kind, None, "duplicate document: OOMConfig/");
                    continue;
                }
                let texts = texts.get(i).cloned().flatten().unwrap_or_default();
                oom_document(map, &texts, n, reader, &mut raw, &mut errors);
            }
            (Some(WARDEN_API_VERSION), Some(WARDEN_KIND)) if reader == Reader::Talos => errors.push(
                n,
                kind,
                None,
                "OOMWardenConfig is oomwarden's own document: Talos does not know it (remove it from the file given to Talos)",
            ),
            (Some(WARDEN_API_VERSION), Some(WARDEN_KIND)) => {
                if std::mem::replace(&mut seen_warden, true) {
                    errors.push(n, kind, None, "duplicate document: OOMWardenConfig/");
                    continue;
                }
                warden_document(map, n, &mut raw, &mut errors);
            }
            (None, _) => errors.push(n, kind, Some("apiVersion"), "missing or not a string"),
            (_, None) => errors.push(n, None, Some("kind"), "missing or not a string"),
            (Some(v), Some(k)) => errors.push(
                n,
                Some(k),
                None,
                format!(
                    "unknown document apiVersion {v:?} kind {k:?}; supported: apiVersion {OOM_CONFIG_API_VERSION:?} kind {OOM_CONFIG_KIND:?}, apiVersion {WARDEN_API_VERSION:?} kind {WARDEN_KIND:?}"
                ),
            ),
        }
    }
    if !errors.list.is_empty() {
        return Err(ConfigErrors(errors.list));
    }
    finish(raw, &mut errors).ok_or(ConfigErrors(errors.list))
}

/// Fills defaults; the default expressions are compiled here, so a broken default (a bug) is
/// reported like any other error instead of panicking.
fn finish(raw: Raw, errors: &mut Errors<'_>) -> Option<Settings> {
    let trigger = match raw.trigger {
        Some(t) => Some(t),
        None => compile_or_report(
            TriggerExpr::compile(DEFAULT_TRIGGER_EXPRESSION),
            errors,
            "default triggerExpression",
        ),
    };
    let ranking = match raw.ranking {
        Some(r) => Some(r),
        None => compile_or_report(
            RankingExpr::compile(DEFAULT_RANKING_EXPRESSION),
            errors,
            "default cgroupRankingExpression",
        ),
    };
    let defaults = WardenSettings::default();
    Some(Settings {
        oom: OomSettings {
            trigger: trigger?,
            ranking: ranking?,
            sample_interval: raw.sample_interval.unwrap_or(DEFAULT_SAMPLE_INTERVAL),
            strict_class_ordering: raw.strict.unwrap_or(true),
        },
        warden: WardenSettings {
            dry_run: raw.dry_run.unwrap_or(defaults.dry_run),
            state_dir: raw.state_dir.unwrap_or(defaults.state_dir),
            kill_timeout: raw.kill_timeout.unwrap_or(defaults.kill_timeout),
            layout: raw.layout.unwrap_or(defaults.layout),
            metrics: raw.metrics.unwrap_or(defaults.metrics),
            hooks: raw.hooks.unwrap_or(defaults.hooks),
            psi_triggers: raw.psi_triggers.unwrap_or(defaults.psi_triggers),
            flight_recorder: raw.flight_recorder.unwrap_or(defaults.flight_recorder),
        },
    })
}

fn compile_or_report<T>(
    result: Result<T, CompileError>,
    errors: &mut Errors<'_>,
    what: &str,
) -> Option<T> {
    result
        .map_err(|e| errors.push(None, None, Some(what), e.to_string()))
        .ok()
}

/// Reports the keys of `map` that are not `known`, as `key` or, inside a nested mapping,
/// `prefix.key`.
fn unknown_keys(
    map: &Map<String, Value>,
    prefix: Option<&str>,
    known: &[&str],
    n: Option<usize>,
    kind: &str,
    errors: &mut Errors<'_>,
) {
    for key in map.keys().filter(|k| !known.contains(&k.as_str())) {
        let path = prefix.map_or_else(|| key.clone(), |p| format!("{p}.{key}"));
        errors.push(
            n,
            Some(kind),
            Some(&path),
            format!("unknown field; known fields are {}", known.join(", ")),
        );
    }
}

/// The nested mapping at `key` (`metrics`, `hooks`, `psiTriggers`): `None` when absent or
/// null; reported and `None` when not a mapping; its unknown keys reported.
fn nested_mapping<'m>(
    map: &'m Map<String, Value>,
    key: &str,
    known: &[&str],
    n: Option<usize>,
    kind: &str,
    errors: &mut Errors<'_>,
) -> Option<&'m Map<String, Value>> {
    match map.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => {
            unknown_keys(m, Some(key), known, n, kind, errors);
            Some(m)
        }
        Some(other) => {
            errors.push(
                n,
                Some(kind),
                Some(key),
                format!(
                    "expected a mapping with {}, found {}",
                    known.join(", "),
                    json_type(other)
                ),
            );
            None
        }
    }
}

/// A string field; `null`, missing and `""` all mean unset, as in Talos.
fn string_field<'m>(
    map: &'m Map<String, Value>,
    key: &str,
    n: Option<usize>,
    kind: &str,
    errors: &mut Errors<'_>,
) -> Option<&'m str> {
    // A nested key is given as its path (`metrics.enabled`): looked up by its last part,
    // reported whole.
    let name = key.rsplit('.').next().unwrap_or(key);
    match map.get(name) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            errors.push(
                n,
                Some(kind),
                Some(key),
                format!("expected a string, found {}", json_type(other)),
            );
            None
        }
    }
}

fn bool_field(
    map: &Map<String, Value>,
    key: &str,
    n: Option<usize>,
    kind: &str,
    errors: &mut Errors<'_>,
) -> Option<bool> {
    // A nested key is given as its path (`metrics.enabled`): looked up by its last part,
    // reported whole.
    let name = key.rsplit('.').next().unwrap_or(key);
    match map.get(name) {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => {
            errors.push(
                n,
                Some(kind),
                Some(key),
                format!("expected true or false, found {}", json_type(other)),
            );
            None
        }
    }
}

pub(crate) fn json_type(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(x) => format!("number {x}"),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
    }
}

fn oom_document(
    map: &Map<String, Value>,
    texts: &ScalarText,
    n: Option<usize>,
    reader: Reader,
    raw: &mut Raw,
    errors: &mut Errors<'_>,
) {
    let kind = OOM_CONFIG_KIND;
    unknown_keys(map, None, OOM_FIELDS, n, kind, errors);
    let trigger_text = texts.trigger_expression.as_deref();
    if let Some(text) = expression_field(map, "triggerExpression", trigger_text, n, kind, errors) {
        let compiled = match reader {
            Reader::Oomwarden => TriggerExpr::compile(text),
            Reader::Talos => TriggerExpr::compile_talos(text),
        };
        match compiled {
            Ok(t) => raw.trigger = Some(t),
            Err(e) => errors.push(
                n,
                Some(kind),
                Some("triggerExpression"),
                format!("OOM trigger expression is invalid: {e}"),
            ),
        }
    }
    let ranking_text = texts.cgroup_ranking_expression.as_deref();
    if let Some(text) = expression_field(
        map,
        "cgroupRankingExpression",
        ranking_text,
        n,
        kind,
        errors,
    ) {
        let compiled = match reader {
            Reader::Oomwarden => RankingExpr::compile(text),
            Reader::Talos => RankingExpr::compile_talos(text),
        };
        match compiled {
            Ok(r) => raw.ranking = Some(r),
            Err(e) => errors.push(
                n,
                Some(kind),
                Some("cgroupRankingExpression"),
                format!("OOM cgroup scoring expression is invalid: {e}"),
            ),
        }
    }
    match map.get("sampleInterval") {
        None | Some(Value::Null) => {}
        // YAML reads an unquoted `0` as a number; Talos's schema allows it and it means the default.
        Some(Value::Number(x)) if x.as_i64() == Some(0) => {}
        Some(Value::String(s)) => match sample_interval_from_text(s) {
            Ok(d) if d.is_zero() => {}
            Ok(d) => raw.sample_interval = Some(d),
            Err(message) => errors.push(n, Some(kind), Some("sampleInterval"), message),
        },
        Some(other) => errors.push(
            n,
            Some(kind),
            Some("sampleInterval"),
            format!(
                "expected a duration such as \"500ms\" or \"1m30s\", found {}",
                json_type(other)
            ),
        ),
    }
    raw.strict = go_yaml_bool_field(
        map,
        "strictCgroupClassOrdering",
        texts.strict_cgroup_class_ordering.as_deref(),
        n,
        kind,
        errors,
    );
}

/// An expression field as Talos reads it: `null`, missing and `""` mean the default; any
/// other scalar is the expression its text spells (`false`, `0.0`, `1.5e3`), whitespace-only
/// text included (a syntax error, as in Talos).
fn expression_field<'m>(
    map: &'m Map<String, Value>,
    key: &str,
    text: Option<&'m str>,
    n: Option<usize>,
    kind: &str,
    errors: &mut Errors<'_>,
) -> Option<&'m str> {
    match (map.get(key), text) {
        (None | Some(Value::Null), _) => None,
        (Some(Value::String(s)), _) if s.is_empty() => None,
        (Some(Value::String(s)), _) => Some(s),
        (Some(Value::Bool(_) | Value::Number(_)), Some(text)) => Some(text),
        (Some(other), _) => {
            errors.push(
                n,
                Some(kind),
                Some(key),
                format!("expected a string, found {}", json_type(other)),
            );
            None
        }
    }
}

/// The spellings go-yaml (v3 and v4) decodes into a Go `bool`: YAML 1.2's unquoted
/// `true`/`false` in three cases, and, quoted or not, YAML 1.1's words.
fn go_yaml_bool(plain: bool, text: &str) -> Option<bool> {
    match text {
        "true" | "True" | "TRUE" if plain => Some(true),
        "false" | "False" | "FALSE" if plain => Some(false),
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Some(true),
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => Some(false),
        _ => None,
    }
}

/// A bool field as Talos's go-yaml reads it (see [`go_yaml_bool`]).
fn go_yaml_bool_field(
    map: &Map<String, Value>,
    key: &str,
    text: Option<&str>,
    n: Option<usize>,
    kind: &str,
    errors: &mut Errors<'_>,
) -> Option<bool> {
    let value = map.get(key)?;
    let decoded = match (value, text) {
        (Value::Null, _) => return None,
        // Resolved as a bool here: its text says whether go-yaml would too (`tRUE` is not).
        (Value::Bool(_), Some(text)) => go_yaml_bool(true, text),
        (Value::Bool(b), None) => Some(*b),
        (Value::String(s), _) => go_yaml_bool(false, s),
        _ => None,
    };
    if decoded.is_none() {
        let hint = match value {
            Value::String(s) if go_yaml_bool(true, s).is_some() => {
                " (quoted, it is a string to Talos's YAML reader: write it without quotes)"
            }
            _ => "",
        };
        errors.push(
            n,
            Some(kind),
            Some(key),
            format!(
                "expected true or false (or yes, no, on, off), found {}{hint}",
                match (value, text) {
                    (Value::Bool(_), Some(text)) => format!("{text:?}"),
                    _ => json_type(value),
                }
            ),
        );
    }
    decoded
}

/// Validates a sample interval written as a Go duration. `0` is allowed (the default).
pub(crate) fn sample_interval_from_text(text: &str) -> Result<Duration, String> {
    let nanos = parse_go_duration(text).map_err(|e| format!("invalid duration {text:?}: {e}"))?;
    if nanos < 0 {
        return Err("OOM sample interval must be longer than 0".to_owned());
    }
    let interval = Duration::from_nanos(nanos.unsigned_abs());
    if !interval.is_zero() && interval < MIN_SAMPLE_INTERVAL {
        return Err(format!(
            "OOM sample interval {text} is shorter than the minimum {}ms (a cgroup walk cannot keep up)",
            MIN_SAMPLE_INTERVAL.as_millis()
        ));
    }
    Ok(interval)
}

/// Validates a listen address: an IP address and a port (`127.0.0.1:9465`, `[::]:9465`).
pub(crate) fn listen_from_text(text: &str) -> Result<std::net::SocketAddr, String> {
    text.parse().map_err(|_| {
        format!(
            "invalid listen address {text:?}: expected IP:PORT such as 127.0.0.1:9465 or [::1]:9465"
        )
    })
}

/// Reads one hook (`hooks.preKill` or `hooks.postKill`).
fn hook(
    value: &Value,
    key: &str,
    default_timeout: Duration,
    n: Option<usize>,
    kind: &str,
    errors: &mut Errors<'_>,
) -> Option<crate::Hook> {
    let Value::Object(map) = value else {
        errors.push(
            n,
            Some(kind),
            Some(key),
            format!(
                "expected a mapping with command and timeout, found {}",
                json_type(value)
            ),
        );
        return None;
    };
    unknown_keys(map, Some(key), HOOK_FIELDS, n, kind, errors);
    let at = format!("{key}.command");
    let command: Option<Vec<String>> = match map.get("command") {
        Some(Value::Array(list)) if !list.is_empty() => {
            let words: Option<Vec<String>> =
                list.iter().map(|w| w.as_str().map(str::to_owned)).collect();
            match words {
                Some(w) if w.first().is_some_and(|p| p.starts_with('/')) => Some(w),
                Some(w) => {
                    errors.push(n, Some(kind), Some(&at), format!(
                        "the program must be an absolute path (oomwarden runs as root and does not search PATH), found {:?}",
                        w.first().map_or("", String::as_str)
                    ));
                    None
                }
                None => {
                    errors.push(n, Some(kind), Some(&at), "every element must be a string");
                    None
                }
            }
        }
        other => {
            errors.push(
                n,
                Some(kind),
                Some(&at),
                format!(
                    "expected a non-empty list: the program and its arguments (no shell), found {}",
                    other.map_or("nothing".to_owned(), json_type)
                ),
            );
            None
        }
    };
    let timeout = match string_field(map, &format!("{key}.timeout"), n, kind, errors) {
        None => Some(default_timeout),
        Some(text) => match timeout_from_text(text, "hook timeout") {
            Ok(t) => Some(t),
            Err(message) => {
                errors.push(n, Some(kind), Some(&format!("{key}.timeout")), message);
                None
            }
        },
    };
    Some(crate::Hook {
        command: command?,
        timeout: timeout?,
    })
}

/// A positive Go duration of at most 60 s.
fn timeout_from_text(text: &str, what: &str) -> Result<Duration, String> {
    let nanos = parse_go_duration(text).map_err(|e| format!("invalid duration {text:?}: {e}"))?;
    let timeout = Duration::from_nanos(nanos.max(0).unsigned_abs());
    if nanos <= 0 || timeout > Duration::from_secs(60) {
        return Err(format!(
            "{what} must be longer than 0 and at most 60s, found {text}"
        ));
    }
    Ok(timeout)
}

/// Validates a kill timeout: a positive Go duration of at most 60 s.
pub(crate) fn kill_timeout_from_text(text: &str) -> Result<Duration, String> {
    timeout_from_text(text, "kill timeout")
}

#[allow(
    clippy::too_many_lines,
    reason = "one block per OOMWardenConfig field; to be replaced by serde structs (issue 15, item 4)"
)]
fn warden_document(
    map: &Map<String, Value>,
    n: Option<usize>,
    raw: &mut Raw,
    errors: &mut Errors<'_>,
) {
    let kind = WARDEN_KIND;
    unknown_keys(map, None, WARDEN_FIELDS, n, kind, errors);
    raw.dry_run = bool_field(map, "dryRun", n, kind, errors);
    match map.get("layout") {
        Some(Value::Object(custom)) => match crate::layout::custom(custom) {
            Ok(layout) => raw.layout = Some(LayoutSetting::Custom(layout)),
            Err(problems) => {
                for (key, message) in problems {
                    errors.push(n, Some(kind), Some(&key), message);
                }
            }
        },
        _ => {
            if let Some(name) = string_field(map, "layout", n, kind, errors) {
                match LayoutSetting::from_name(name) {
                    Some(setting) => raw.layout = Some(setting),
                    None => errors.push(
                        n,
                        Some(kind),
                        Some("layout"),
                        format!(
                            "unknown layout {name:?}; one of {}, or a mapping describing a custom layout",
                            crate::LAYOUTS.join(", ")
                        ),
                    ),
                }
            }
        }
    }
    if let Some(m) = nested_mapping(map, "metrics", METRICS_FIELDS, n, kind, errors) {
        let mut metrics = crate::MetricsSettings::default();
        if let Some(on) = bool_field(m, "metrics.enabled", n, kind, errors) {
            metrics.enabled = on;
        }
        if let Some(text) = string_field(m, "metrics.listen", n, kind, errors) {
            match listen_from_text(text) {
                Ok(addr) => metrics.listen = addr,
                Err(message) => errors.push(n, Some(kind), Some("metrics.listen"), message),
            }
        }
        raw.metrics = Some(metrics);
    }
    if let Some(m) = nested_mapping(map, "psiTriggers", PSI_FIELDS, n, kind, errors) {
        let mut t = crate::PsiTriggerSettings::default();
        let before = errors.list.len();
        if let Some(on) = bool_field(m, "psiTriggers.enabled", n, kind, errors) {
            t.enabled = on;
        }
        match string_field(m, "psiTriggers.kind", n, kind, errors) {
            None => {}
            Some("full") => t.full = true,
            Some("some") => t.full = false,
            Some(other) => errors.push(
                n,
                Some(kind),
                Some("psiTriggers.kind"),
                format!("expected some or full, found {other:?}"),
            ),
        }
        for (key, slot) in [("stall", &mut t.stall), ("window", &mut t.window)] {
            if let Some(text) = string_field(m, &format!("psiTriggers.{key}"), n, kind, errors) {
                match parse_go_duration(text) {
                    Ok(ns) if ns > 0 => *slot = Duration::from_nanos(ns.unsigned_abs()),
                    _ => errors.push(
                        n,
                        Some(kind),
                        Some(&format!("psiTriggers.{key}")),
                        format!("expected a positive duration such as \"100ms\", found {text:?}"),
                    ),
                }
            }
        }
        if errors.list.len() == before {
            if !(Duration::from_millis(500)..=Duration::from_secs(10)).contains(&t.window) {
                errors.push(
                    n,
                    Some(kind),
                    Some("psiTriggers.window"),
                    "the kernel accepts windows from 500ms to 10s",
                );
            } else if t.stall > t.window {
                errors.push(
                    n,
                    Some(kind),
                    Some("psiTriggers.stall"),
                    "the stall cannot be longer than the window",
                );
            }
        }
        raw.psi_triggers = Some(t);
    }
    if let Some(m) = nested_mapping(map, "flightRecorder", FLIGHT_FIELDS, n, kind, errors) {
        let mut f = crate::FlightRecorderSettings::default();
        if let Some(on) = bool_field(m, "flightRecorder.enabled", n, kind, errors) {
            f.enabled = on;
        }
        if let Some(text) = string_field(m, "flightRecorder.window", n, kind, errors) {
            match parse_go_duration(text) {
                Ok(ns) if (10_000_000_000..=3_600_000_000_000).contains(&ns) => {
                    f.window = Duration::from_nanos(ns.unsigned_abs());
                }
                _ => errors.push(
                    n,
                    Some(kind),
                    Some("flightRecorder.window"),
                    format!("expected a duration from \"10s\" to \"1h\", found {text:?}"),
                ),
            }
        }
        match m.get("keep") {
            None | Some(Value::Null) => {}
            Some(v) => match v.as_u64().and_then(|k| usize::try_from(k).ok()) {
                Some(k) if (1..=1000).contains(&k) => f.keep = k,
                _ => errors.push(
                    n,
                    Some(kind),
                    Some("flightRecorder.keep"),
                    format!("expected a number of recordings from 1 to 1000, found {v}"),
                ),
            },
        }
        raw.flight_recorder = Some(f);
    }
    if let Some(h) = nested_mapping(map, "hooks", HOOKS_FIELDS, n, kind, errors) {
        let pre = h.get("preKill").map(|v| {
            hook(
                v,
                "hooks.preKill",
                crate::DEFAULT_PRE_KILL_TIMEOUT,
                n,
                kind,
                errors,
            )
        });
        let post = h.get("postKill").map(|v| {
            hook(
                v,
                "hooks.postKill",
                crate::DEFAULT_POST_KILL_TIMEOUT,
                n,
                kind,
                errors,
            )
        });
        raw.hooks = Some(crate::Hooks {
            pre_kill: pre.flatten(),
            post_kill: post.flatten(),
        });
    }
    if let Some(text) = string_field(map, "killTimeout", n, kind, errors) {
        match kill_timeout_from_text(text) {
            Ok(t) => raw.kill_timeout = Some(t),
            Err(message) => errors.push(n, Some(kind), Some("killTimeout"), message),
        }
    }
    if let Some(dir) = string_field(map, "stateDir", n, kind, errors) {
        if dir.starts_with('/') {
            raw.state_dir = Some(PathBuf::from(dir));
        } else {
            errors.push(
                n,
                Some(kind),
                Some("stateDir"),
                format!("must be an absolute path, found {dir:?}"),
            );
        }
    }
}
