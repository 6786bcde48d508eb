//! The trigger context: every variable the trigger expression can read.
//!
//! Talos 1.14's 39 (§3.4): 16 root scalars (`memory_*`, `d_memory_*`), 22 per-class maps
//! (`qos_*`, `d_qos_*`) that always hold all five classes, and `time_since_trigger`. Then our
//! extensions (the node's `/proc/meminfo` and `/proc/vmstat`, the classes' `memory.stat`),
//! which a Talos expression never names. Which variables there are is the catalogue's
//! ([`crate::variables`]); this holds their values. The JSON form is Talos's `triggerContext`: sorted keys, class maps
//! keyed `"0"`…`"4"`, the duration in integer nanoseconds, numbers as Go prints them, no
//! whitespace.

use std::fmt::Write as _;

use serde_json::Value as Json;
use thiserror::Error;

use enum_map::EnumMap;

use crate::variables::{Origin, PerClass, Scalar, TriggerVar};
use crate::{QosClass, format_go_float, parse_go_duration};

/// PSI line type (`some` or `full`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, enum_map::Enum)]
pub enum PsiKind {
    /// At least one task stalled.
    Some,
    /// All non-idle tasks stalled.
    Full,
}

/// PSI field: the three running averages (percent) and the cumulative total (microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, enum_map::Enum)]
pub enum PsiSpan {
    /// 10-second average, percent.
    Avg10,
    /// 60-second average, percent.
    Avg60,
    /// 300-second average, percent.
    Avg300,
    /// Total stall time since boot, microseconds.
    Total,
}

impl PsiKind {
    /// Both kinds, in Talos's iteration order.
    pub const ALL: [PsiKind; 2] = [PsiKind::Some, PsiKind::Full];

    /// The line name in a pressure file (`some`, `full`).
    pub fn name(self) -> &'static str {
        match self {
            PsiKind::Some => "some",
            PsiKind::Full => "full",
        }
    }
}

impl PsiSpan {
    /// All spans, in Talos's iteration order.
    pub const ALL: [PsiSpan; 4] = [
        PsiSpan::Avg10,
        PsiSpan::Avg60,
        PsiSpan::Avg300,
        PsiSpan::Total,
    ];

    /// The field name in a pressure file (`avg10`, …, `total`).
    pub fn name(self) -> &'static str {
        match self {
            PsiSpan::Avg10 => "avg10",
            PsiSpan::Avg60 => "avg60",
            PsiSpan::Avg300 => "avg300",
            PsiSpan::Total => "total",
        }
    }
}

/// One value per class, indexed by [`QosClass::index`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ClassMap(pub [f64; 5]);

impl ClassMap {
    /// The value of one class.
    pub fn get(&self, class: QosClass) -> f64 {
        self.0.get(class.index()).copied().unwrap_or(0.0)
    }

    /// Adds to one class (Talos sums the cgroups of a class).
    pub fn add(&mut self, class: QosClass, value: f64) {
        if let Some(slot) = self.0.get_mut(class.index()) {
            *slot += finite_or_zero(value);
        }
    }
}

/// A variable's value, as the expression layer binds it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Variable<'a> {
    /// A CEL `double`.
    Double(f64),
    /// A CEL `map(int, double)` holding all five classes.
    ClassMap(&'a ClassMap),
    /// A CEL `duration`, in nanoseconds.
    DurationNanos(i64),
}

/// The trigger variables of one cycle: Talos's 39 and our extensions, one value per
/// variable of the catalogue ([`TriggerVar`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TriggerContext {
    scalars: EnumMap<Scalar, f64>,
    per_class: EnumMap<PerClass, ClassMap>,
    /// `None` before the first trigger: the variable is then the largest duration (~292 years),
    /// as in Talos.
    time_since_trigger_ns: Option<i64>,
}

/// Why a JSON document is not a trigger context.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ContextJsonError {
    /// Not JSON at all.
    #[error("not valid JSON: {0}")]
    Syntax(String),
    /// The top level is not an object.
    #[error("the trigger context must be a JSON object")]
    NotObject,
    /// A key that is not one of the variables.
    #[error("unknown variable {0:?}")]
    UnknownVariable(String),
    /// A value of the wrong JSON type or range.
    #[error("{name}: {reason}")]
    BadValue {
        /// Variable (and class key) at fault.
        name: String,
        /// What was expected.
        reason: String,
    },
}

fn finite_or_zero(value: f64) -> f64 {
    // Talos scrubs NaN and ±Inf to 0 because they cannot be expressed in JSON.
    if value.is_finite() { value } else { 0.0 }
}

impl TriggerContext {
    /// A context with every value 0 and no trigger yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets a `double` variable (NaN and ±Inf are 0, as in Talos).
    pub fn set(&mut self, variable: Scalar, value: f64) {
        self.scalars[variable] = finite_or_zero(value);
    }

    /// A `double` variable.
    pub fn get(&self, variable: Scalar) -> f64 {
        self.scalars[variable]
    }

    /// Adds to one class of a per-class map (Talos sums the cgroups of a class).
    pub fn add(&mut self, variable: PerClass, class: QosClass, value: f64) {
        self.per_class[variable].add(class, value);
    }

    /// A per-class map.
    pub fn class_map(&self, variable: PerClass) -> ClassMap {
        self.per_class[variable]
    }

    /// Sets `time_since_trigger`; `None` means "never triggered" (the maximum duration).
    pub fn set_time_since_trigger(&mut self, nanos: Option<i64>) {
        self.time_since_trigger_ns = nanos;
    }

    /// `time_since_trigger` in nanoseconds, saturated at `i64::MAX` before the first trigger.
    pub fn time_since_trigger_nanos(&self) -> i64 {
        self.time_since_trigger_ns.unwrap_or(i64::MAX)
    }

    /// One variable's value.
    pub fn value(&self, variable: TriggerVar) -> Variable<'_> {
        match variable {
            TriggerVar::Scalar(s) => Variable::Double(self.scalars[s]),
            TriggerVar::PerClass(m) => Variable::ClassMap(&self.per_class[m]),
            TriggerVar::TimeSinceTrigger => {
                Variable::DurationNanos(self.time_since_trigger_nanos())
            }
        }
    }

    /// Every variable with its name, in the catalogue's order: Talos's (scalars, maps, the
    /// duration), then the extensions.
    pub fn variables(&self) -> impl Iterator<Item = (&'static str, Variable<'_>)> {
        TriggerVar::all().map(|v| (v.name(), self.value(v)))
    }

    /// Talos's 39 variables with their names, scalars first, then maps, then the duration.
    pub fn talos_variables(&self) -> impl Iterator<Item = (&'static str, Variable<'_>)> {
        TriggerVar::all()
            .filter(|v| v.definition().origin == Origin::Talos)
            .map(|v| (v.name(), self.value(v)))
    }

    /// Talos's 39 variables exactly as Talos writes `triggerContext`: Go `encoding/json` of
    /// the activation map.
    pub fn to_talos_json(&self) -> String {
        json_of(self.talos_variables().collect())
    }

    /// Every variable (Talos's and the extensions) in Talos's `triggerContext` format: what
    /// action records hold, a superset of Talos's keys with the same values.
    pub fn to_json(&self) -> String {
        json_of(self.variables().collect())
    }
}

/// Go `encoding/json` of an activation map: sorted keys, no whitespace.
fn json_of(mut entries: Vec<(&'static str, Variable<'_>)>) -> String {
    {
        entries.sort_by(|a, b| a.0.cmp(b.0));
        let mut out = String::with_capacity(4096);
        out.push('{');
        for (i, (name, value)) in entries.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "\"{name}\":");
            match value {
                Variable::Double(v) => out.push_str(&format_go_float(*v)),
                Variable::DurationNanos(ns) => {
                    let _ = write!(out, "{ns}");
                }
                Variable::ClassMap(map) => {
                    out.push('{');
                    for (j, v) in map.0.iter().enumerate() {
                        if j > 0 {
                            out.push(',');
                        }
                        let _ = write!(out, "\"{j}\":{}", format_go_float(*v));
                    }
                    out.push('}');
                }
            }
        }
        out.push('}');
        out
    }
}

impl TriggerContext {
    /// Reads a context from JSON: a Talos `triggerContext` dump, or a hand-written subset.
    /// Variables left out are 0 (and `time_since_trigger` "never"). Class maps take keys
    /// `"0"`…`"4"` or the class names; `time_since_trigger` takes integer nanoseconds or a Go
    /// duration string such as `"7s"`. Unknown variables are errors, so typos are caught.
    pub fn from_json(text: &str) -> Result<TriggerContext, ContextJsonError> {
        let json: Json =
            serde_json::from_str(text).map_err(|e| ContextJsonError::Syntax(e.to_string()))?;
        let Json::Object(object) = json else {
            return Err(ContextJsonError::NotObject);
        };
        let mut ctx = TriggerContext::new();
        for (name, value) in &object {
            match TriggerVar::from_name(name) {
                Some(TriggerVar::Scalar(s)) => ctx.scalars[s] = json_double(name, value)?,
                Some(TriggerVar::PerClass(m)) => ctx.per_class[m] = json_class_map(name, value)?,
                Some(TriggerVar::TimeSinceTrigger) => {
                    ctx.time_since_trigger_ns = Some(json_duration(name, value)?);
                }
                None => return Err(ContextJsonError::UnknownVariable(name.clone())),
            }
        }
        Ok(ctx)
    }
}

fn bad(name: &str, reason: impl Into<String>) -> ContextJsonError {
    ContextJsonError::BadValue {
        name: name.to_owned(),
        reason: reason.into(),
    }
}

fn json_double(name: &str, value: &Json) -> Result<f64, ContextJsonError> {
    value
        .as_f64()
        .filter(|v| v.is_finite())
        .ok_or_else(|| bad(name, "expected a finite number"))
}

fn json_class_map(name: &str, value: &Json) -> Result<ClassMap, ContextJsonError> {
    let Json::Object(object) = value else {
        return Err(bad(
            name,
            "expected an object keyed by class (\"0\"…\"4\" or class names)",
        ));
    };
    let mut map = ClassMap::default();
    for (key, v) in object {
        let class = key
            .parse::<i64>()
            .ok()
            .and_then(QosClass::from_i64)
            .or_else(|| QosClass::ALL.into_iter().find(|c| c.name() == key))
            .ok_or_else(|| {
                bad(
                    &format!("{name}[{key:?}]"),
                    "unknown class key; use \"0\"…\"4\" or Besteffort…System",
                )
            })?;
        if let Some(slot) = map.0.get_mut(class.index()) {
            *slot = json_double(&format!("{name}[{key:?}]"), v)?;
        }
    }
    Ok(map)
}

fn json_duration(name: &str, value: &Json) -> Result<i64, ContextJsonError> {
    match value {
        Json::Number(n) => n
            .as_i64()
            .ok_or_else(|| bad(name, "expected integer nanoseconds")),
        Json::String(s) => parse_go_duration(s).map_err(|e| bad(name, e.to_string())),
        _ => Err(bad(
            name,
            "expected integer nanoseconds or a duration string such as \"7s\"",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn has_the_39_talos_variables_then_the_extensions() {
        let ctx = TriggerContext::new();
        let names: Vec<&str> = ctx.variables().map(|(n, _)| n).collect();
        assert_eq!(names.len(), 61);
        assert_eq!(names.get(39), Some(&"node_memory_available"));
        assert_eq!(names.get(60), Some(&"d_qos_pgscan"));
        assert_eq!(ctx.talos_variables().count(), 39);
        let mut dedup = names.clone();
        dedup.sort_unstable();
        dedup.dedup();
        assert_eq!(dedup.len(), 61);
    }

    #[test]
    fn extensions_are_in_records_but_not_in_the_talos_form() {
        let mut ctx = TriggerContext::new();
        ctx.set(Scalar::NodeMemoryAvailable, 104857600.0);
        ctx.set(Scalar::NodeMemoryTotal, 1073741824.0);
        assert!(!ctx.to_talos_json().contains("node_memory"));
        let all = ctx.to_json();
        assert!(
            all.contains(
                "\"node_memory_available\":104857600,\"node_memory_available_trend\":0,\"node_memory_total\":1073741824,"
            ),
            "{all}"
        );
        let back = TriggerContext::from_json(&all).unwrap();
        assert_eq!(back.to_json(), all);
        assert_eq!(back.get(Scalar::NodeMemoryAvailable), 104857600.0);
        assert_eq!(back.get(Scalar::NodeMemoryTotal), 1073741824.0);
        // The rates round-trip too, and none is in Talos's form.
        let mut ctx = TriggerContext::new();
        ctx.set(Scalar::DNodeMemoryAvailable, -52428800.0);
        ctx.set(Scalar::DNodePgscanDirect, 1234.5);
        ctx.add(PerClass::DQosPgscan, QosClass::System, 77.0);
        let all = ctx.to_json();
        assert!(
            all.contains("\"d_node_memory_available\":-52428800,"),
            "{all}"
        );
        assert!(
            all.contains("\"d_qos_pgscan\":{\"0\":0,\"1\":0,\"2\":0,\"3\":0,\"4\":77}"),
            "{all}"
        );
        assert!(
            !ctx.to_talos_json().contains("d_node")
                && !ctx.to_talos_json().contains("d_qos_pgscan")
        );
        let back = TriggerContext::from_json(&all).unwrap();
        assert_eq!(back.to_json(), all);
        assert_eq!(
            back.class_map(PerClass::DQosPgscan).get(QosClass::System),
            77.0
        );
        assert_eq!(back.get(Scalar::DNodePgscanDirect), 1234.5);
    }

    #[test]
    fn json_is_talos_format() {
        let mut ctx = TriggerContext::new();
        ctx.set(Scalar::MemoryFullAvg10, 14.54);
        ctx.set(Scalar::MemorySomeTotal, 12172340.0);
        ctx.add(PerClass::QosMemorySomeAvg10, QosClass::System, 17.06);
        ctx.add(PerClass::QosMemorySomeAvg10, QosClass::System, 17.06);
        ctx.add(PerClass::QosMemoryMax, QosClass::Burstable, f64::INFINITY);
        let json = ctx.to_talos_json();
        assert!(json.starts_with("{\"d_memory_full_avg10\":0,"), "{json}");
        assert!(json.contains("\"memory_full_avg10\":14.54,"));
        assert!(json.contains("\"memory_some_total\":12172340,"));
        assert!(
            json.contains(
                "\"qos_memory_some_avg10\":{\"0\":0,\"1\":0,\"2\":0,\"3\":0,\"4\":34.12}"
            )
        );
        assert!(
            json.contains("\"qos_memory_max\":{\"0\":0,\"1\":0,"),
            "infinite max is scrubbed to 0"
        );
        assert!(json.ends_with("\"time_since_trigger\":9223372036854775807}"));
        assert!(!json.contains(' '));
        // Keys come out sorted.
        let parsed: serde_json::Map<String, Json> = serde_json::from_str(&json).unwrap();
        let keys: Vec<&String> = parsed.keys().collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        // And read back identically.
        assert_eq!(
            TriggerContext::from_json(&json).unwrap(),
            ctx_with_never(ctx.clone())
        );
    }

    fn ctx_with_never(mut ctx: TriggerContext) -> TriggerContext {
        ctx.set_time_since_trigger(Some(i64::MAX));
        ctx
    }

    #[test]
    fn from_json_accepts_subsets_names_and_durations() {
        let ctx = TriggerContext::from_json(
            r#"{"memory_full_avg10": 10, "qos_memory_full_avg10": {"System": 4.0, "3": 3.0}, "time_since_trigger": "7s"}"#,
        )
        .unwrap();
        assert_eq!(ctx.get(Scalar::MemoryFullAvg10), 10.0);
        assert_eq!(
            ctx.class_map(PerClass::QosMemoryFullAvg10).0,
            [0.0, 0.0, 0.0, 3.0, 4.0]
        );
        assert_eq!(ctx.time_since_trigger_nanos(), 7_000_000_000);
    }

    #[test]
    fn from_json_rejects_typos_and_bad_values() {
        assert_eq!(
            TriggerContext::from_json(r#"{"memory_ful_avg10": 1}"#),
            Err(ContextJsonError::UnknownVariable("memory_ful_avg10".into()))
        );
        assert!(TriggerContext::from_json(r#"{"memory_full_avg10": "1"}"#).is_err());
        assert!(TriggerContext::from_json(r#"{"qos_memory_max": {"5": 1}}"#).is_err());
        assert!(TriggerContext::from_json(r#"{"time_since_trigger": 1.5}"#).is_err());
        assert!(TriggerContext::from_json("[]").is_err());
        assert!(TriggerContext::from_json("{").is_err());
    }

    proptest::proptest! {
        #[test]
        fn from_json_never_panics(s in "\\PC{0,200}") {
            let _ = TriggerContext::from_json(&s);
        }
    }
}

#[cfg(test)]
mod exact_floats {
    use super::*;

    // A recorded trigger context must read back bit for bit, or a replay can decide
    // differently at a threshold (serde_json needs its `float_roundtrip` feature for this).
    #[test]
    fn trigger_context_values_read_back_exactly() {
        let value = 30_102.166_670_464_198_f64;
        let text = format!(
            r#"{{"memory_full_avg10": {value:?}, "d_qos_memory_full_total": {{"1": {value:?}}}}}"#
        );
        let ctx = TriggerContext::from_json(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(ctx.get(Scalar::MemoryFullAvg10).to_bits(), value.to_bits());
        let map = ctx
            .talos_variables()
            .find_map(|(name, v)| match v {
                Variable::ClassMap(m) if name == "d_qos_memory_full_total" => {
                    Some(m.get(QosClass::Burstable))
                }
                _ => None,
            })
            .unwrap_or_default();
        assert_eq!(map.to_bits(), value.to_bits());
    }
}
