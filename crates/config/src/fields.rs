//! Typed reading of a configuration document that keeps every error, each with its key path.
//!
//! A document is deserialized into derived structs (`deny_unknown_fields`) whose fields are
//! [`Field`]s and whose list elements are [`Item`]s; leaf types say what they accept with
//! the messages users read ([`leaf`], [`mapping`], [`list`]). serde stops at the first error
//! and `serde_path_to_error` says where it was; [`read`] then replaces the value there with a
//! marker that [`Field`] and [`Item`] read as "reported" (an unknown key is removed) and
//! reads the document again, until it reads. So every error is found once, and a field in
//! error never causes a second, derived one.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::value::{
    BoolDeserializer, F64Deserializer, I64Deserializer, MapAccessDeserializer,
    SeqAccessDeserializer, StrDeserializer, U64Deserializer, UnitDeserializer,
};
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde_json::Value;

/// What replaces a value already reported. It holds a NUL, which no string of a document
/// read here has: [`read`] reports those first (and marks them).
const REPORTED: &str = "\0oomwarden: reported";

/// Said after the first [`MAX_PROBLEMS`] errors of a document (listed last).
pub(crate) const MORE_NOT_LISTED: &str = "more errors than the first 100 are not listed";

/// At most this many errors per document (then one more says the rest are not listed): each
/// costs a reading of the document.
const MAX_PROBLEMS: usize = 100;

/// A mapping field: absent (or null), a value, or an error already reported.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Field<T> {
    Absent,
    Set(T),
    Reported,
}

// Not derived: the derive would require `T: Default`, which leaf types are not.
#[allow(clippy::derivable_impls)]
impl<T> Default for Field<T> {
    fn default() -> Self {
        Field::Absent
    }
}

impl<T> Field<T> {
    /// The value, when there is one.
    pub(crate) fn get(&self) -> Option<&T> {
        match self {
            Field::Set(t) => Some(t),
            Field::Absent | Field::Reported => None,
        }
    }

    /// The value, when there is one.
    pub(crate) fn into_option(self) -> Option<T> {
        match self {
            Field::Set(t) => Some(t),
            Field::Absent | Field::Reported => None,
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Field<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Forward::<T> {
            null_is_absent: true,
            marker: PhantomData,
        })
    }
}

/// A list element: a value, or an error already reported (null is the element's own
/// business: a mapping entry refuses it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Item<T>(pub(crate) Field<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Item<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Forward::<T> {
            null_is_absent: false,
            marker: PhantomData,
        })
        .map(Item)
    }
}

/// Hands the value to `T` unless it is null (for a [`Field`]) or the marker. Maps and lists
/// are handed on as they are read, so the paths of errors inside them stay tracked.
struct Forward<T> {
    null_is_absent: bool,
    marker: PhantomData<T>,
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for Forward<T> {
    type Value = Field<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Field<T>, E> {
        if self.null_is_absent {
            Ok(Field::Absent)
        } else {
            T::deserialize(UnitDeserializer::new()).map(Field::Set)
        }
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Field<T>, E> {
        T::deserialize(BoolDeserializer::new(v)).map(Field::Set)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Field<T>, E> {
        T::deserialize(I64Deserializer::new(v)).map(Field::Set)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Field<T>, E> {
        T::deserialize(U64Deserializer::new(v)).map(Field::Set)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Field<T>, E> {
        T::deserialize(F64Deserializer::new(v)).map(Field::Set)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Field<T>, E> {
        if v == REPORTED {
            return Ok(Field::Reported);
        }
        T::deserialize(StrDeserializer::new(v)).map(Field::Set)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Field<T>, A::Error> {
        T::deserialize(SeqAccessDeserializer::new(seq)).map(Field::Set)
    }

    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Field<T>, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(Field::Set)
    }
}

/// How a value is named in messages: `boolean true`, `number 5`, `string "x"`, `a list`.
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

/// `expected {what}, found {the value}`.
pub(crate) fn expected(what: &str, found: &Value) -> String {
    format!("expected {what}, found {}", json_type(found))
}

/// A leaf: the value as written, turned into `T` by `read` or refused with its message.
pub(crate) fn leaf<'de, D: Deserializer<'de>, T>(
    d: D,
    read: impl FnOnce(Value) -> Result<T, String>,
) -> Result<T, D::Error> {
    let value = Value::deserialize(d)?;
    read(value).map_err(de::Error::custom)
}

/// `true` or `false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flag(pub(crate) bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        leaf(d, |v| match v {
            Value::Bool(b) => Ok(Flag(b)),
            other => Err(expected("true or false", &other)),
        })
    }
}

/// A string leaf: `read` takes the text; anything else is `expected {what}, found …`.
pub(crate) fn text<'de, D: Deserializer<'de>, T>(
    d: D,
    what: &str,
    read: impl FnOnce(String) -> Result<T, String>,
) -> Result<T, D::Error> {
    leaf(d, |v| match v {
        Value::String(s) => read(s),
        other => Err(expected(what, &other)),
    })
}

/// A mapping read into `T` (a derived struct); anything else is `expected {what}, found …`.
pub(crate) fn mapping<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
    what: &str,
) -> Result<T, D::Error> {
    d.deserialize_any(Only::<T> {
        what: what.to_owned(),
        list: false,
        marker: PhantomData,
    })
}

/// A list read into `T` (a `Vec` of [`Item`]s); anything else is `expected {what}, found …`.
pub(crate) fn list<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
    what: &str,
) -> Result<T, D::Error> {
    d.deserialize_any(Only::<T> {
        what: what.to_owned(),
        list: true,
        marker: PhantomData,
    })
}

/// Takes only a mapping (or only a list) into `T`.
struct Only<T> {
    what: String,
    list: bool,
    marker: PhantomData<T>,
}

impl<T> Only<T> {
    fn refuse<E: de::Error>(&self, found: &Value) -> E {
        E::custom(expected(&self.what, found))
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for Only<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }

    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Err(self.refuse(&Value::Null))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
        Err(self.refuse(&Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        Err(self.refuse(&Value::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        Err(self.refuse(&Value::from(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        Err(self.refuse(&Value::from(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        Err(self.refuse(&Value::from(v)))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        if self.list {
            T::deserialize(SeqAccessDeserializer::new(seq))
        } else {
            Err(self.refuse(&Value::Array(Vec::new())))
        }
    }

    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        if self.list {
            Err(self.refuse(&Value::Object(serde_json::Map::new())))
        } else {
            T::deserialize(MapAccessDeserializer::new(map))
        }
    }
}

/// One step of a key path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Step {
    Key(String),
    Index(usize),
}

/// Where in a document: `metrics.enabled`, `layout.candidates[0].dir`. Ordered step by step
/// (list indices as numbers), which is the order errors are listed in.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct KeyPath(Vec<Step>);

impl KeyPath {
    /// This path and then `key`.
    pub(crate) fn key(&self, key: &str) -> KeyPath {
        let mut steps = self.0.clone();
        steps.push(Step::Key(key.to_owned()));
        KeyPath(steps)
    }

    /// This path and then element `index`.
    pub(crate) fn index(&self, index: usize) -> KeyPath {
        let mut steps = self.0.clone();
        steps.push(Step::Index(index));
        KeyPath(steps)
    }

    /// The last key, if the path ends with one.
    fn last_key(&self) -> Option<&str> {
        match self.0.last() {
            Some(Step::Key(k)) => Some(k),
            _ => None,
        }
    }

    /// Whether the path is empty (the document itself).
    pub(crate) fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                Step::Key(k) if i == 0 => write!(f, "{k}")?,
                Step::Key(k) => write!(f, ".{k}")?,
                Step::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// The key paths of a document in the order they are written (read from the YAML text,
/// whose mappings keep their order, unlike the `Value` the document is read from).
#[derive(Debug, Default)]
pub(crate) struct WrittenOrder(Vec<KeyPath>);

impl<'de> Deserialize<'de> for WrittenOrder {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut out = Vec::new();
        de::DeserializeSeed::deserialize(
            Walk {
                at: KeyPath::default(),
                out: &mut out,
            },
            d,
        )?;
        Ok(WrittenOrder(out))
    }
}

/// Records every key path under `at`, depth first, in order.
struct Walk<'a> {
    at: KeyPath,
    out: &'a mut Vec<KeyPath>,
}

impl<'de> de::DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        loop {
            let at = self.at.index(index);
            self.out.push(at.clone());
            let seed = Walk {
                at,
                out: &mut *self.out,
            };
            if seq.next_element_seed(seed)?.is_none() {
                self.out.pop();
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Keys read as the document's `Value` reads them (as text: `y` is "y", not true).
        while let Some(key) = map.next_key::<String>()? {
            let at = self.at.key(&key);
            self.out.push(at.clone());
            map.next_value_seed(Walk {
                at,
                out: &mut *self.out,
            })?;
        }
        Ok(())
    }
}

/// Sorts a document's problems in the order of the file: by where the key at fault is
/// written, a missing key where it would be added (after what its mapping holds); problems of
/// the document itself first, the note that more were not listed last. Without the order,
/// by key path.
pub(crate) fn sort(problems: &mut [Problem], order: Option<&WrittenOrder>) {
    let written = |at: &KeyPath| -> usize {
        let Some(WrittenOrder(order)) = order else {
            return 0;
        };
        if let Some(i) = order.iter().position(|p| p == at) {
            return 2 * (i + 1);
        }
        // Missing: after the last key written inside its nearest written ancestor.
        (0..at.0.len())
            .rev()
            .find_map(|len| {
                let prefix = at.0.get(..len)?;
                let within = |p: &KeyPath| p.0.starts_with(prefix);
                order.iter().rposition(within).or((len == 0).then_some(0))
            })
            .map_or(0, |i| 2 * (i + 1) + 1)
    };
    problems.sort_by_cached_key(|p| {
        let rank = if p.at.is_root() { 0 } else { written(&p.at) };
        (p.message == MORE_NOT_LISTED, rank, p.at.clone())
    });
}

/// An error in a document: where, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    pub(crate) at: KeyPath,
    pub(crate) message: String,
}

impl Problem {
    pub(crate) fn new(at: KeyPath, message: impl Into<String>) -> Self {
        Problem {
            at,
            message: message.into(),
        }
    }
}

/// Reads `value` as `T`, with every error and its key path (under `prefix`). `T` is `None`
/// when one could not be marked as reported (or there were too many).
pub(crate) fn read<T: DeserializeOwned>(
    mut value: Value,
    prefix: &KeyPath,
) -> (Option<T>, Vec<Problem>) {
    let mut problems = Vec::new();
    mark_nul_strings(&mut value, prefix.clone(), &mut problems);
    loop {
        let error = match serde_path_to_error::deserialize::<_, T>(&value) {
            Ok(t) => return (Some(t), problems),
            Err(e) => e,
        };
        let mut at = prefix.clone();
        let mut steps = Vec::new();
        for segment in error.path().iter() {
            let step = match segment {
                serde_path_to_error::Segment::Map { key } => Step::Key(key.clone()),
                serde_path_to_error::Segment::Seq { index } => Step::Index(*index),
                // Neither is produced by the types read here.
                serde_path_to_error::Segment::Enum { .. }
                | serde_path_to_error::Segment::Unknown => {
                    break;
                }
            };
            at.0.push(step.clone());
            steps.push(step);
        }
        let message = error.into_inner().to_string();
        let unknown = at
            .last_key()
            .and_then(|key| unknown_field_message(&message, key));
        let marked = mark(&mut value, &steps, unknown.is_some());
        problems.push(Problem::new(at, unknown.unwrap_or(message)));
        if !marked {
            return (None, problems);
        }
        if problems.len() >= MAX_PROBLEMS {
            problems.push(Problem::new(prefix.clone(), MORE_NOT_LISTED));
            return (None, problems);
        }
    }
}

/// serde's "unknown field `k`, expected one of `a`, `b`" as ours: "unknown field; known
/// fields are a, b", with the likely one first when the key looks like a misspelling of it.
fn unknown_field_message(message: &str, key: &str) -> Option<String> {
    let rest = message.strip_prefix(&format!("unknown field `{key}`, "))?;
    let known: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    let likely = known
        .iter()
        .map(|k| {
            (
                strsim::jaro_winkler(&key.to_lowercase(), &k.to_lowercase()),
                *k,
            )
        })
        .filter(|(similarity, _)| *similarity >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| format!(" (did you mean {k}?)"))
        .unwrap_or_default();
    Some(format!(
        "unknown field{likely}; known fields are {}",
        known.join(", ")
    ))
}

/// Replaces the value at `steps` with the marker (or removes the key, for an unknown one).
/// `false` when there is nothing there to mark, or it is marked already.
fn mark(value: &mut Value, steps: &[Step], remove: bool) -> bool {
    let Some((last, parents)) = steps.split_last() else {
        return false;
    };
    let mut here = value;
    for step in parents {
        let next = match (step, here) {
            (Step::Key(k), Value::Object(map)) => map.get_mut(k),
            (Step::Index(i), Value::Array(list)) => list.get_mut(*i),
            _ => None,
        };
        let Some(next) = next else {
            return false;
        };
        here = next;
    }
    let slot = match (last, here) {
        (Step::Key(k), Value::Object(map)) if remove => return map.remove(k).is_some(),
        (Step::Key(k), Value::Object(map)) => map.get_mut(k),
        (Step::Index(i), Value::Array(list)) => list.get_mut(*i),
        _ => None,
    };
    match slot {
        Some(Value::String(s)) if s == REPORTED => false,
        Some(slot) => {
            *slot = Value::String(REPORTED.to_owned());
            true
        }
        None => false,
    }
}

/// Reports every string holding a NUL (no field takes one; and the marker has one), and
/// marks it.
fn mark_nul_strings(value: &mut Value, at: KeyPath, problems: &mut Vec<Problem>) {
    match value {
        Value::String(s) if s.contains('\0') => {
            problems.push(Problem::new(at, "contains a NUL character"));
            *s = REPORTED.to_owned();
        }
        Value::Array(list) => {
            for (i, v) in list.iter_mut().enumerate() {
                mark_nul_strings(v, at.index(i), problems);
            }
        }
        Value::Object(map) => {
            let bad: Vec<String> = map.keys().filter(|k| k.contains('\0')).cloned().collect();
            for k in bad {
                map.remove(&k);
                problems.push(Problem::new(at.key(&k), "a key contains a NUL character"));
            }
            for (k, v) in map.iter_mut() {
                mark_nul_strings(v, at.key(k), problems);
            }
        }
        _ => {}
    }
}

/// A list of mapping entries.
#[derive(Debug)]
pub(crate) struct Entries<T>(pub(crate) Vec<Item<Entry<T>>>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Entries<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        list(d, "a list of entries").map(Entries)
    }
}

/// One entry: a mapping.
#[derive(Debug)]
pub(crate) struct Entry<T>(pub(crate) T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Entry<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        mapping(d, "a mapping").map(Entry)
    }
}

/// A nested mapping of the document (a section): anything else is "expected a mapping with
/// …", the keys listed from `T`'s own fields.
#[derive(Debug)]
pub(crate) struct Section<T>(pub(crate) T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Section<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let keys = serde_aux::serde_introspection::serde_introspect::<T>();
        mapping(d, &format!("a mapping with {}", keys.join(", "))).map(Section)
    }
}

impl<T> Field<Section<T>> {
    /// The section's fields, when it is there and read.
    pub(crate) fn section(self) -> Option<T> {
        self.into_option().map(|s| s.0)
    }
}

/// A string leaf where blank text means unset, as in Talos.
pub(crate) fn unless_blank<T>(
    s: String,
    read: impl FnOnce(&str) -> Result<T, String>,
) -> Result<Option<T>, String> {
    if s.trim().is_empty() {
        Ok(None)
    } else {
        read(&s).map(Some)
    }
}

/// An absolute path; blank is unset.
#[derive(Debug)]
pub(crate) struct AbsolutePath(pub(crate) Option<std::path::PathBuf>);

impl<'de> Deserialize<'de> for AbsolutePath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| {
            unless_blank(s, |dir| {
                if dir.starts_with('/') {
                    Ok(std::path::PathBuf::from(dir))
                } else {
                    Err(format!("must be an absolute path, found {dir:?}"))
                }
            })
        })
        .map(AbsolutePath)
    }
}

/// A Go duration (`500ms`, `1m30s`, `-1s`): the one parser every duration field uses.
pub(crate) fn parse_duration(text: &str) -> Result<i64, String> {
    oomwarden_model::parse_go_duration(text).map_err(|e| format!("invalid duration {text:?}: {e}"))
}

/// A duration as Go prints it, as every duration field is written back.
pub(crate) fn format_duration(d: std::time::Duration) -> String {
    oomwarden_model::format_go_duration(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// A Go duration within `range`. `Err` says only that it is not: each field words it.
pub(crate) fn within(
    text: &str,
    range: std::ops::RangeInclusive<std::time::Duration>,
) -> Result<std::time::Duration, ()> {
    let nanos = parse_duration(text).map_err(|_| ())?;
    let d = u64::try_from(nanos)
        .map(std::time::Duration::from_nanos)
        .map_err(|_| ())?;
    if range.contains(&d) { Ok(d) } else { Err(()) }
}

/// A positive Go duration of at most 60 s.
pub(crate) fn timeout_from_text(text: &str, what: &str) -> Result<std::time::Duration, String> {
    parse_duration(text)?;
    within(
        text,
        std::time::Duration::from_nanos(1)..=std::time::Duration::from_secs(60),
    )
    .map_err(|()| format!("{what} must be longer than 0 and at most 60s, found {text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(
        dead_code,
        reason = "filled by the derive; the tests look at the errors"
    )]
    struct Inner {
        #[serde(default)]
        flag: Field<Flag>,
    }

    #[derive(Debug)]
    #[allow(
        dead_code,
        reason = "filled by the derive; the tests look at the errors"
    )]
    struct InnerSection(Inner);

    impl<'de> Deserialize<'de> for InnerSection {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            mapping(d, "a mapping with flag").map(InnerSection)
        }
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(
        dead_code,
        reason = "filled by the derive; the tests look at the errors"
    )]
    struct TestDoc {
        #[serde(default)]
        a: Field<Flag>,
        #[serde(default)]
        inner: Field<InnerSection>,
        #[serde(default)]
        list: Field<Vec<Item<InnerSection>>>,
    }

    fn problems(json: &str) -> Vec<String> {
        let value: Value = serde_json::from_str(json).unwrap_or(Value::Null);
        let (_, problems) = read::<TestDoc>(value, &KeyPath::default());
        problems
            .iter()
            .map(|p| format!("{}: {}", p.at, p.message))
            .collect()
    }

    #[test]
    fn every_error_once_with_its_path() {
        assert_eq!(
            problems(
                r#"{"a": 1, "b": 2, "inner": {"flag": "x", "more": 1}, "list": [{"flag": true}, null, 5, {"flag": 2}]}"#
            ),
            [
                "a: expected true or false, found number 1",
                "b: unknown field; known fields are a, inner, list",
                "inner.flag: expected true or false, found string \"x\"",
                "inner.more: unknown field; known fields are flag",
                "list[1]: expected a mapping with flag, found null",
                "list[2]: expected a mapping with flag, found number 5",
                "list[3].flag: expected true or false, found number 2",
            ]
        );
    }

    #[test]
    fn a_good_document_reads() {
        let value: Value =
            serde_json::from_str(r#"{"a": true, "inner": {}, "list": []}"#).unwrap_or(Value::Null);
        let (doc, problems) = read::<TestDoc>(value, &KeyPath::default());
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(doc.and_then(|d| d.a.into_option()), Some(Flag(true)));
    }

    #[test]
    fn a_nul_is_reported_and_never_taken_for_the_marker() {
        let value = serde_json::json!({ "a": REPORTED, "inner": { "flag": "x\u{0}" } });
        let (doc, problems) = read::<TestDoc>(value, &KeyPath::default().key("doc"));
        assert_eq!(
            problems
                .iter()
                .map(|p| p.at.to_string())
                .collect::<Vec<_>>(),
            ["doc.a", "doc.inner.flag"]
        );
        assert!(doc.is_some());
    }

    #[test]
    fn problems_follow_the_file() {
        let order: WrittenOrder =
            serde_saphyr::from_str("b: 1\na:\n  - x: 1\n    y: 2\n  - 3\n").unwrap_or_default();
        let root = KeyPath::default();
        let mut problems = vec![
            Problem::new(root.key("c"), "5"),
            Problem::new(root.key("a").index(1), "4"),
            Problem::new(root.key("a").index(0).key("y"), "2"),
            Problem::new(root.key("a").index(0).key("missing"), "3"),
            Problem::new(root.key("b"), "1"),
            Problem::new(root.clone(), MORE_NOT_LISTED),
            Problem::new(root.clone(), "0"),
        ];
        sort(&mut problems, Some(&order));
        let said: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(said, ["0", "1", "2", "3", "4", "5", MORE_NOT_LISTED]);
    }

    #[test]
    fn the_bound_is_the_one_said() {
        assert!(MORE_NOT_LISTED.contains(&MAX_PROBLEMS.to_string()));
    }

    #[test]
    fn paths_order_indices_as_numbers() {
        let base = KeyPath::default().key("l");
        assert!(base.index(2) < base.index(10));
        assert_eq!(base.index(3).key("x").to_string(), "l[3].x");
    }
}
