//! YAML stream → documents → validated [`Settings`], collecting every error.
//!
//! Each document is read into typed structs ([`OomIn`] here, `warden::WardenDoc`) by
//! [`fields::read`], which finds every structural error with its key path; then the values
//! are checked together (expressions compiled, ranges, what one field means for another) and
//! turned into settings. Errors are listed by document, then in the order of the file.

use std::time::Duration;

use oomwarden_expr::{CompileError, RankingExpr, TriggerExpr};
use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::fields::{self, Field, KeyPath, Problem, WrittenOrder, expected, json_type, leaf};
use crate::{
    ConfigError, ConfigErrors, DEFAULT_RANKING_EXPRESSION, DEFAULT_SAMPLE_INTERVAL,
    DEFAULT_TRIGGER_EXPRESSION, MIN_SAMPLE_INTERVAL, OomSettings, Settings, WardenSettings,
};

/// `apiVersion` of Talos's document.
pub const OOM_CONFIG_API_VERSION: &str = "v1alpha1";
/// `kind` of Talos's document.
pub const OOM_CONFIG_KIND: &str = "OOMConfig";
/// `apiVersion` of our document.
pub const WARDEN_API_VERSION: &str = "oomwarden/v1alpha1";
/// `kind` of our document.
pub const WARDEN_KIND: &str = "OOMWardenConfig";

/// Talos's `OOMConfig`. The field order is the order "known fields are …" lists them in.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
struct OomIn {
    api_version: Field<IgnoredAny>,
    kind: Field<IgnoredAny>,
    trigger_expression: Field<Expression>,
    cgroup_ranking_expression: Field<Expression>,
    sample_interval: Field<SampleInterval>,
    strict_cgroup_class_ordering: Field<GoBool>,
}

/// An expression field as written: a string, or a bool or number scalar, which go-yaml hands
/// Talos as its text (`triggerExpression: false` is the expression `false`).
#[derive(Debug)]
enum Expression {
    Text(String),
    Scalar(Value),
}

impl<'de> Deserialize<'de> for Expression {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        leaf(d, |v| match v {
            Value::String(s) => Ok(Expression::Text(s)),
            scalar @ (Value::Bool(_) | Value::Number(_)) => Ok(Expression::Scalar(scalar)),
            other => Err(expected("a string", &other)),
        })
    }
}

/// `sampleInterval`: `0` and `0s` mean the default, as in Talos.
#[derive(Debug)]
struct SampleInterval(Option<Duration>);

impl<'de> Deserialize<'de> for SampleInterval {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        leaf(d, |v| match v {
            // YAML reads an unquoted `0` as a number; Talos's schema allows it.
            Value::Number(x) if x.as_i64() == Some(0) => Ok(SampleInterval(None)),
            Value::String(s) => {
                sample_interval_from_text(&s).map(|d| SampleInterval((!d.is_zero()).then_some(d)))
            }
            other => Err(expected(
                "a duration such as \"500ms\" or \"1m30s\"",
                &other,
            )),
        })
    }
}

/// `strictCgroupClassOrdering` as written; go-yaml's rules need its text too (see
/// [`go_yaml_bool`]), so it is judged with the scalar texts.
#[derive(Debug)]
struct GoBool(Value);

impl<'de> Deserialize<'de> for GoBool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        leaf(d, |v| Ok(GoBool(v)))
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

/// What the documents contributed, before defaults.
#[derive(Default)]
pub(crate) struct Raw {
    trigger: Option<TriggerExpr>,
    ranking: Option<RankingExpr>,
    sample_interval: Option<Duration>,
    strict: Option<bool>,
    pub(crate) warden: crate::warden::WardenRaw,
}

/// Who reads the document: oomwarden, or (for `oomwarden check --talos`) Talos 1.14 as it
/// would: only `OOMConfig`, expressions in Talos's environments exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reader {
    Oomwarden,
    Talos,
}

/// The documents of a configuration file, read as Talos's go-yaml reads them in two respects
/// that change where a document is refused: a merge key (`<<`) is an ordinary key there, so
/// Talos's strict decoding refuses it as an unknown field (merged, it would be a configuration
/// Talos never accepts); and `.inf`, `.nan` are scalars like any other, handed to a string
/// field as written, so an unquoted `.inf` expression is refused by the CEL compiler, not as
/// YAML.
fn read_documents<'de, T: serde::Deserialize<'de>>(
    text: &'de str,
) -> Result<Vec<T>, serde_saphyr::Error> {
    let mut options = serde_saphyr::Options::default();
    options.merge_keys = serde_saphyr::MergeKeyPolicy::AsOrdinary;
    options.non_finite_float_policy = serde_saphyr::NonFiniteFloatPolicy::AsString;
    serde_saphyr::from_multiple_with_options(text, options)
}

pub(crate) fn declares_warden_document(text: &str) -> bool {
    read_documents::<Value>(text).is_ok_and(|docs| {
        docs.iter().any(|d| {
            d.get("apiVersion").and_then(Value::as_str) == Some(WARDEN_API_VERSION)
                && d.get("kind").and_then(Value::as_str) == Some(WARDEN_KIND)
        })
    })
}

/// Whether `text` has an `OOMWardenConfig` document that sets the top-level `key` (any
/// value): a reload may move `dryRun` from true to false only when the file says so.
pub(crate) fn warden_sets(text: &str, key: &str) -> bool {
    read_documents::<Value>(text).is_ok_and(|docs| {
        docs.iter().any(|d| {
            d.get("apiVersion").and_then(Value::as_str) == Some(WARDEN_API_VERSION)
                && d.get("kind").and_then(Value::as_str) == Some(WARDEN_KIND)
                && d.get(key).is_some()
        })
    })
}

/// The top-level keys `text`'s `OOMConfig` document writes (`apiVersion` and `kind`
/// included); `None` when it has no such document (or is no YAML): a reload may lose the
/// trigger or the ranking only when the file says so.
pub(crate) fn oom_keys(text: &str) -> Option<Vec<String>> {
    let docs = read_documents::<Value>(text).ok()?;
    docs.iter().find_map(|d| {
        let is_oom = d.get("apiVersion").and_then(Value::as_str) == Some(OOM_CONFIG_API_VERSION)
            && d.get("kind").and_then(Value::as_str) == Some(OOM_CONFIG_KIND);
        is_oom.then(|| {
            d.as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default()
        })
    })
}

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

    /// A document's problems, in the order of the file.
    fn document(
        &mut self,
        n: Option<usize>,
        kind: &str,
        mut problems: Vec<Problem>,
        order: Option<&WrittenOrder>,
    ) {
        fields::sort(&mut problems, order);
        for p in problems {
            let key = (!p.at.is_root()).then(|| p.at.to_string());
            self.push(n, Some(kind), key.as_deref(), p.message);
        }
    }
}

pub(crate) fn load(text: &str, file: &str, reader: Reader) -> Result<Settings, ConfigErrors> {
    let mut errors = Errors {
        file,
        list: Vec::new(),
    };
    let documents: Vec<Value> = match read_documents(text) {
        Ok(docs) => docs,
        Err(e) => {
            errors.push(None, None, None, format!("invalid YAML: {e}"));
            return Err(ConfigErrors(errors.list));
        }
    };
    // The scalars as written, for the fields go-yaml hands Talos as text (see `ScalarText`).
    // A stream this pass cannot read (a document that is not a mapping, a field that is a
    // list) is reported by the main pass; the text is then simply not available.
    let texts: Vec<Option<ScalarText>> = read_documents(text).unwrap_or_default();
    // Where each key is written, to list the errors in the order of the file.
    let orders: Vec<Option<WrittenOrder>> = read_documents(text).unwrap_or_default();
    // The line each document's mapping starts on, for Talos's repeated-document message.
    let lines: Vec<Option<u64>> =
        read_documents::<Option<serde_saphyr::Spanned<serde::de::IgnoredAny>>>(text)
            .map(|docs| {
                docs.into_iter()
                    .map(|d| d.map(|s| s.referenced.line()))
                    .collect()
            })
            .unwrap_or_default();
    // Talos's decoder: `duplicate document <apiVersion>/<kind>/<name> is not allowed (line N)`.
    let duplicate = |i: usize, api_version: &str, kind: &str| match lines.get(i).copied().flatten()
    {
        Some(line) => {
            format!("duplicate document {api_version}/{kind}/ is not allowed (line {line})")
        }
        None => format!("duplicate document {api_version}/{kind}/ is not allowed"),
    };
    let mut raw = Raw::default();
    let (mut seen_oom, mut seen_warden) = (false, false);
    for (i, doc) in documents.into_iter().enumerate() {
        let n = Some(i + 1);
        if doc.is_null() {
            continue; // an empty document, e.g. a trailing `---`
        }
        if !doc.is_object() {
            errors.push(
                n,
                None,
                None,
                "a document must be a mapping with apiVersion and kind",
            );
            continue;
        }
        let api_version = doc
            .get("apiVersion")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let kind = doc.get("kind").and_then(Value::as_str).map(str::to_owned);
        match (api_version.as_deref(), kind.as_deref()) {
            (Some(OOM_CONFIG_API_VERSION), Some(OOM_CONFIG_KIND)) => {
                if std::mem::replace(&mut seen_oom, true) {
                    let message = duplicate(i, OOM_CONFIG_API_VERSION, OOM_CONFIG_KIND);
                    errors.push(n, kind.as_deref(), None, message);
                    continue;
                }
                let texts = texts.get(i).cloned().flatten().unwrap_or_default();
                let problems = oom_document(doc, &texts, reader, &mut raw);
                errors.document(n, OOM_CONFIG_KIND, problems, orders.get(i).and_then(Option::as_ref));
            }
            (Some(WARDEN_API_VERSION), Some(WARDEN_KIND)) if reader == Reader::Talos => errors.push(
                n,
                kind.as_deref(),
                None,
                "OOMWardenConfig is oomwarden's own document: Talos does not know it (remove it from the file given to Talos)",
            ),
            (Some(WARDEN_API_VERSION), Some(WARDEN_KIND)) => {
                if std::mem::replace(&mut seen_warden, true) {
                    let message = duplicate(i, WARDEN_API_VERSION, WARDEN_KIND);
                    errors.push(n, kind.as_deref(), None, message);
                    continue;
                }
                let problems = crate::warden::document(doc, &mut raw.warden);
                errors.document(n, WARDEN_KIND, problems, orders.get(i).and_then(Option::as_ref));
            }
            (None, k) => errors.push(n, k, Some("apiVersion"), "missing or not a string"),
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
    let warden: WardenSettings = raw.warden.finish();
    Some(Settings {
        oom: OomSettings {
            trigger: trigger?,
            ranking: ranking?,
            sample_interval: raw.sample_interval.unwrap_or(DEFAULT_SAMPLE_INTERVAL),
            strict_class_ordering: raw.strict.unwrap_or(true),
        },
        warden,
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

/// Reads and checks an `OOMConfig` document into `raw`; its problems.
fn oom_document(doc: Value, texts: &ScalarText, reader: Reader, raw: &mut Raw) -> Vec<Problem> {
    let root = KeyPath::default();
    let (doc, mut problems) = fields::read::<OomIn>(doc, &root);
    let Some(doc) = doc else {
        return problems;
    };
    let talos = reader == Reader::Talos;
    let trigger = Expr {
        key: "triggerExpression",
        what: "OOM trigger expression",
        compile: if talos {
            TriggerExpr::compile_talos
        } else {
            TriggerExpr::compile
        },
    };
    raw.trigger = trigger.read(
        doc.trigger_expression,
        texts.trigger_expression.as_deref(),
        &mut problems,
    );
    let ranking = Expr {
        key: "cgroupRankingExpression",
        what: "OOM cgroup scoring expression",
        compile: if talos {
            RankingExpr::compile_talos
        } else {
            RankingExpr::compile
        },
    };
    raw.ranking = ranking.read(
        doc.cgroup_ranking_expression,
        texts.cgroup_ranking_expression.as_deref(),
        &mut problems,
    );
    raw.sample_interval = doc.sample_interval.into_option().and_then(|s| s.0);
    if let Some(GoBool(value)) = doc.strict_cgroup_class_ordering.get() {
        match go_yaml_bool_value(value, texts.strict_cgroup_class_ordering.as_deref()) {
            Ok(b) => raw.strict = Some(b),
            Err(message) => {
                problems.push(Problem::new(root.key("strictCgroupClassOrdering"), message))
            }
        }
    }
    problems
}

/// An expression field of `OOMConfig`: its key, how Talos names it in messages, and the
/// compiler for the reader.
struct Expr<T> {
    key: &'static str,
    what: &'static str,
    compile: fn(&str) -> Result<T, CompileError>,
}

impl<T> Expr<T> {
    /// The compiled expression the field gives (none: the default), or its problem.
    fn read(
        &self,
        field: Field<Expression>,
        text: Option<&str>,
        problems: &mut Vec<Problem>,
    ) -> Option<T> {
        let at = KeyPath::default().key(self.key);
        match expression_text(field, text) {
            Ok(None) => None,
            Ok(Some(text)) => (self.compile)(&text)
                .map_err(|e| {
                    problems.push(Problem::new(at, format!("{} is invalid: {e}", self.what)));
                })
                .ok(),
            Err(message) => {
                problems.push(Problem::new(at, message));
                None
            }
        }
    }
}

/// An expression field's text as Talos reads it: absent, null and `""` mean the default; any
/// other scalar is the expression its text spells (`false`, `0.0`, `1.5e3`), whitespace-only
/// text included (a syntax error, as in Talos).
fn expression_text(field: Field<Expression>, text: Option<&str>) -> Result<Option<String>, String> {
    match field.into_option() {
        None => Ok(None),
        Some(Expression::Text(s)) if s.is_empty() => Ok(None),
        Some(Expression::Text(s)) => Ok(Some(s)),
        Some(Expression::Scalar(value)) => match text {
            Some(text) => Ok(Some(text.to_owned())),
            None => Err(expected("a string", &value)),
        },
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

/// A bool field as Talos's go-yaml reads it (see [`go_yaml_bool`]), from the value and, for
/// a bool, its text.
fn go_yaml_bool_value(value: &Value, text: Option<&str>) -> Result<bool, String> {
    let decoded = match (value, text) {
        // Resolved as a bool here: its text says whether go-yaml would too (`tRUE` is not).
        (Value::Bool(_), Some(text)) => go_yaml_bool(true, text),
        (Value::Bool(b), None) => Some(*b),
        (Value::String(s), _) => go_yaml_bool(false, s),
        _ => None,
    };
    decoded.ok_or_else(|| {
        let hint = match value {
            Value::String(s) if go_yaml_bool(true, s).is_some() => {
                " (quoted, it is a string to Talos's YAML reader: write it without quotes)"
            }
            _ => "",
        };
        let found = match (value, text) {
            (Value::Bool(_), Some(text)) => format!("{text:?}"),
            _ => json_type(value),
        };
        format!("expected true or false (or yes, no, on, off), found {found}{hint}")
    })
}

/// Validates a sample interval written as a Go duration. `0` is allowed (the default).
pub(crate) fn sample_interval_from_text(text: &str) -> Result<Duration, String> {
    let nanos = crate::fields::parse_duration(text)?;
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
