//! The `layout` field: `auto`, a built-in layout's name, or a custom layout written as a
//! mapping (validated here, every problem reported with its key path).
//!
//! ```yaml
//! layout:
//!   name: edge
//!   metrics:                         # summed into the classes (the root is always read)
//!     - dir: init.scope
//!       class: System
//!     - childrenOf: system.slice     # each child, admitted by include/exclude
//!       class: System
//!       exclude: [containerd.service]
//!   candidates:                      # whose children may be killed
//!     - childrenOf: kubepods/besteffort
//!       class: Besteffort
//!       include: ["pod*"]
//!   optional: [kubepods/system]      # may be absent: no warning for what lies there
//! ```

use std::fmt;

use oomwarden_model::{BuiltinLayout, CandidateSource, Layout, MetricSource, NameFilter, QosClass};
use serde::de::{self, MapAccess, Visitor, value::MapAccessDeserializer};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::fields::{Entries, Entry, Field, Item, KeyPath, Problem, expected, leaf, list};
use crate::{WARDEN_API_VERSION, WARDEN_KIND};

/// What `layout` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayoutSetting {
    /// Detect a built-in layout from the tree.
    Auto,
    /// A built-in layout.
    Builtin(BuiltinLayout),
    /// A layout written in the configuration.
    Custom(Layout),
}

impl LayoutSetting {
    /// `auto`, the built-in name, or the custom layout's name.
    pub fn name(&self) -> &str {
        match self {
            LayoutSetting::Auto => "auto",
            LayoutSetting::Builtin(b) => b.name(),
            LayoutSetting::Custom(layout) => &layout.name,
        }
    }

    /// The setting a `--layout` value (or a string `layout`) names; `None` for an unknown name.
    pub fn from_name(name: &str) -> Option<LayoutSetting> {
        if name == "auto" {
            Some(LayoutSetting::Auto)
        } else {
            BuiltinLayout::from_name(name).map(LayoutSetting::Builtin)
        }
    }
}

/// The name a custom layout gets when it has none.
pub const DEFAULT_CUSTOM_NAME: &str = "custom";

/// `layout` as written: a name, or a mapping describing a custom layout.
#[derive(Debug)]
pub(crate) enum LayoutField {
    Named(String),
    Custom(CustomLayoutIn),
}

impl<'de> Deserialize<'de> for LayoutField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LayoutVisitor)
    }
}

/// A string names a layout, a mapping is read as a custom one.
struct LayoutVisitor;

impl LayoutVisitor {
    fn refuse<E: de::Error>(found: &Value) -> E {
        E::custom(expected("a string", found))
    }
}

impl<'de> Visitor<'de> for LayoutVisitor {
    type Value = LayoutField;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a layout name or a mapping")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<LayoutField, E> {
        Ok(LayoutField::Named(v.to_owned()))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<LayoutField, A::Error> {
        CustomLayoutIn::deserialize(MapAccessDeserializer::new(map)).map(LayoutField::Custom)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<LayoutField, E> {
        Err(Self::refuse(&Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<LayoutField, E> {
        Err(Self::refuse(&Value::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<LayoutField, E> {
        Err(Self::refuse(&Value::from(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<LayoutField, E> {
        Err(Self::refuse(&Value::from(v)))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, _seq: A) -> Result<LayoutField, A::Error> {
        Err(Self::refuse(&Value::Array(Vec::new())))
    }
}

impl LayoutField {
    /// The setting (none for a blank name), or its problems under `at`.
    pub(crate) fn setting(
        self,
        at: &KeyPath,
        problems: &mut Vec<Problem>,
    ) -> Option<LayoutSetting> {
        match self {
            LayoutField::Named(name) if name.trim().is_empty() => None,
            LayoutField::Named(name) => {
                let setting = LayoutSetting::from_name(&name);
                if setting.is_none() {
                    problems.push(Problem::new(
                        at.clone(),
                        format!(
                            "unknown layout {name:?}; one of {}, or a mapping describing a custom layout",
                            crate::LAYOUTS.join(", ")
                        ),
                    ));
                }
                setting
            }
            LayoutField::Custom(doc) => custom(doc, at, problems).map(LayoutSetting::Custom),
        }
    }
}

/// A custom layout. The field order is the order "known fields are …" lists them in.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct CustomLayoutIn {
    name: Field<Name>,
    metrics: Field<Entries<MetricEntryIn>>,
    candidates: Field<Entries<CandidateEntryIn>>,
    optional: Field<Paths>,
}

/// Directory paths (`optional`).
#[derive(Debug)]
struct Paths(Vec<Item<CgroupPath>>);

impl<'de> Deserialize<'de> for Paths {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        list(d, "a list of directory paths").map(Paths)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
struct MetricEntryIn {
    dir: Field<CgroupPath>,
    children_of: Field<CgroupPath>,
    class: Field<ClassName>,
    include: Field<Patterns>,
    exclude: Field<Patterns>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
struct CandidateEntryIn {
    children_of: Field<CgroupPath>,
    class: Field<ClassName>,
    include: Field<Patterns>,
    exclude: Field<Patterns>,
}

/// A custom layout's name: not a built-in one's.
#[derive(Debug)]
struct Name(String);

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        leaf(d, |v| match v {
            Value::String(s) => check_name(&s).map(|()| Name(s)),
            other => Err(expected("a string", &other)),
        })
    }
}

#[derive(Debug)]
struct ClassName(QosClass);

fn class_names() -> String {
    QosClass::ALL
        .iter()
        .map(|c| c.name())
        .collect::<Vec<_>>()
        .join(", ")
}

impl<'de> Deserialize<'de> for ClassName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        leaf(d, |v| match v {
            Value::String(s) => QosClass::ALL
                .into_iter()
                .find(|c| c.name() == s)
                .map(ClassName)
                .ok_or_else(|| format!("unknown class {s:?}; one of {}", class_names())),
            other => Err(expected("a class name", &other)),
        })
    }
}

/// Name patterns (`include`, `exclude`).
#[derive(Debug)]
struct Patterns(Vec<Item<Pattern>>);

impl<'de> Deserialize<'de> for Patterns {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        list(d, "a list of name patterns").map(Patterns)
    }
}

#[derive(Debug)]
struct Pattern(String);

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        leaf(d, |v| match v {
            Value::String(s) if !s.is_empty() && !s.contains('/') => Ok(Pattern(s)),
            Value::String(s) => Err(format!(
                "invalid pattern {s:?}: a pattern matches one directory name ('*' for any run of characters), so it is not empty and has no '/'"
            )),
            other => Err(expected("a string", &other)),
        })
    }
}

/// A directory path relative to the cgroup root: no leading '/', no empty, `.` or `..`
/// components; `*` may stand for any run of characters within a component.
#[derive(Debug)]
struct CgroupPath(String);

impl<'de> Deserialize<'de> for CgroupPath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        leaf(d, |v| {
            let Value::String(s) = v else {
                return Err(expected("a directory path", &v));
            };
            let problem = if s.is_empty() {
                Some("empty; the root is always read and is never a candidate directory of a class")
            } else if s.starts_with('/') {
                Some("must be relative to the cgroup root (no leading '/')")
            } else if s.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
                Some("has an empty, '.' or '..' component")
            } else {
                None
            };
            match problem {
                Some(why) => Err(format!("invalid path {s:?}: {why}")),
                None => Ok(CgroupPath(s)),
            }
        })
    }
}

/// Adds what a misplaced key means to its "unknown field" error: a candidate has no `dir`.
pub(crate) fn explain_unknown_keys(problems: &mut [Problem]) {
    for p in problems {
        let text = p.at.to_string();
        if text.starts_with("layout.candidates[")
            && text.ends_with("].dir")
            && p.message.starts_with("unknown field")
        {
            p.message
                .push_str("; candidates are the children of a directory: use childrenOf");
        }
    }
}

/// A custom layout from its document; `None` when any part of it is in error (each problem
/// is reported, under `at`).
fn custom(doc: CustomLayoutIn, at: &KeyPath, problems: &mut Vec<Problem>) -> Option<Layout> {
    let before = problems.len();
    let mut failed = false;
    let name = match doc.name {
        Field::Set(Name(name)) => name,
        Field::Absent => DEFAULT_CUSTOM_NAME.to_owned(),
        Field::Reported => {
            failed = true;
            String::new()
        }
    };
    let mut metrics = Vec::new();
    for (i, entry) in entries(doc.metrics, &at.key("metrics"), problems, &mut failed) {
        match metric(entry, &at.key("metrics").index(i), problems) {
            Some(m) => metrics.push((i, m)),
            None => failed = true,
        }
    }
    let mut candidates = Vec::new();
    for (i, entry) in entries(doc.candidates, &at.key("candidates"), problems, &mut failed) {
        match candidate(entry, &at.key("candidates").index(i), problems) {
            Some(c) => candidates.push(c),
            None => failed = true,
        }
    }
    let optional = match doc.optional {
        Field::Absent => Vec::new(),
        Field::Reported => {
            failed = true;
            Vec::new()
        }
        Field::Set(Paths(list)) => list
            .into_iter()
            .filter_map(|Item(p)| match p.into_option() {
                Some(CgroupPath(p)) => Some(p),
                None => {
                    failed = true;
                    None
                }
            })
            .collect(),
    };
    overlaps(&metrics, at, problems);
    if failed || problems.len() > before {
        return None;
    }
    let mut all = vec![MetricSource::Root];
    all.extend(metrics.into_iter().map(|(_, m)| m));
    Some(Layout {
        name,
        metrics: all,
        candidates,
        optional,
    })
}

/// The entries of a list that read, with their indices; a missing or empty list is a problem
/// (a layout needs at least one entry in each).
fn entries<T>(
    field: Field<Entries<T>>,
    at: &KeyPath,
    problems: &mut Vec<Problem>,
    failed: &mut bool,
) -> Vec<(usize, T)> {
    let list = match field {
        Field::Reported => {
            *failed = true;
            return Vec::new();
        }
        Field::Absent => Vec::new(),
        Field::Set(Entries(list)) => list,
    };
    if list.is_empty() {
        let why = if at.to_string().ends_with("metrics") {
            "a layout needs at least one entry here, or no class has pressure or memory to trigger on"
        } else {
            "a layout needs at least one entry here, or nothing could ever be killed (use dryRun to watch without killing)"
        };
        problems.push(Problem::new(at.clone(), why));
    }
    let mut read = Vec::new();
    for (i, Item(entry)) in list.into_iter().enumerate() {
        match entry.into_option() {
            Some(Entry(e)) => read.push((i, e)),
            None => *failed = true,
        }
    }
    read
}

/// The class of an entry; a missing one is a problem.
fn class(field: Field<ClassName>, at: &KeyPath, problems: &mut Vec<Problem>) -> Option<QosClass> {
    match field {
        Field::Set(ClassName(class)) => Some(class),
        Field::Reported => None,
        Field::Absent => {
            problems.push(Problem::new(
                at.key("class"),
                format!("missing; one of {}", class_names()),
            ));
            None
        }
    }
}

/// `include` and `exclude` (absent: everything / nothing).
fn filter(include: Field<Patterns>, exclude: Field<Patterns>) -> Option<NameFilter> {
    let patterns = |field: Field<Patterns>| match field {
        Field::Absent => Some(Vec::new()),
        Field::Reported => None,
        Field::Set(Patterns(list)) => list
            .into_iter()
            .map(|Item(p)| p.into_option().map(|Pattern(s)| s))
            .collect(),
    };
    Some(NameFilter {
        include: patterns(include)?,
        exclude: patterns(exclude)?,
    })
}

fn path(field: Field<CgroupPath>) -> Option<String> {
    field.into_option().map(|CgroupPath(p)| p)
}

fn metric(doc: MetricEntryIn, at: &KeyPath, problems: &mut Vec<Problem>) -> Option<MetricSource> {
    let class = class(doc.class, at, problems);
    let filter = filter(doc.include, doc.exclude);
    match (doc.dir, doc.children_of) {
        (dir, Field::Absent) if !matches!(dir, Field::Absent) => {
            if filter.as_ref().is_some_and(|f| *f != NameFilter::any()) {
                problems.push(Problem::new(
                    at.clone(),
                    "include and exclude filter the children of a childrenOf entry; a dir entry has none",
                ));
                return None;
            }
            Some(MetricSource::Dir {
                dir: path(dir)?,
                class: class?,
            })
        }
        (Field::Absent, children) if !matches!(children, Field::Absent) => {
            Some(MetricSource::Children {
                dir: path(children)?,
                class: class?,
                filter: filter?,
            })
        }
        _ => {
            problems.push(Problem::new(
                at.clone(),
                "give exactly one of dir (the directory itself) and childrenOf (each of its children)",
            ));
            None
        }
    }
}

fn candidate(
    doc: CandidateEntryIn,
    at: &KeyPath,
    problems: &mut Vec<Problem>,
) -> Option<CandidateSource> {
    let class = class(doc.class, at, problems);
    let filter = filter(doc.include, doc.exclude);
    let dir = match doc.children_of {
        Field::Absent => {
            problems.push(Problem::new(
                at.key("childrenOf"),
                "missing: candidates are the children of a directory",
            ));
            None
        }
        other => path(other),
    };
    Some(CandidateSource {
        dir: dir?,
        class: class?,
        filter: filter?,
    })
}

fn check_name(name: &str) -> Result<(), String> {
    if name == "auto" || BuiltinLayout::from_name(name).is_some() {
        return Err(format!(
            "{name:?} is the name of a built-in layout; give a custom layout another name, or write `layout: {name}` to use the built-in one"
        ));
    }
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid name {name:?}: use 1 to 63 letters, digits, '-', '_' or '.'"
        ))
    }
}

/// Metrics entries whose directories would be counted twice: a `dir` entry equal to or above
/// another entry's directory (its memory and stall already include theirs). Paths with `*` are
/// compared as written.
fn overlaps(metrics: &[(usize, MetricSource)], at: &KeyPath, problems: &mut Vec<Problem>) {
    let summed = |m: &MetricSource| match m {
        MetricSource::Root => None,
        MetricSource::Dir { dir, .. } => Some((dir.clone(), false)),
        MetricSource::Children { dir, .. } => Some((dir.clone(), true)),
    };
    for (i, a) in metrics {
        let Some((a_dir, false)) = summed(a) else {
            continue;
        };
        for (j, b) in metrics {
            let Some((b_dir, b_children)) = summed(b) else {
                continue;
            };
            let inside = b_dir
                .strip_prefix(a_dir.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
            // `dir: X` twice, `dir: X` with `dir: X/…`, or `dir: X` with `childrenOf: X[/…]`.
            if i != j && inside && (b_children || b_dir != a_dir || i < j) {
                let key = if b_children { "childrenOf" } else { "dir" };
                let other = at.key("metrics").index(*i);
                problems.push(Problem::new(
                    at.key("metrics").index(*j),
                    format!(
                        "{key} {b_dir:?} is inside {other} (dir {a_dir:?}), whose figures already include it; it would be counted twice"
                    ),
                ));
            }
        }
    }
}

// What `oomwarden check` and `oomwarden layout --as-config` write back.

/// `layout`: a name, or a custom layout as a mapping.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum LayoutOut<'a> {
    Name(&'a str),
    Custom(CustomLayoutOut<'a>),
}

#[derive(Debug, Serialize)]
pub(crate) struct CustomLayoutOut<'a> {
    name: &'a str,
    metrics: Vec<LayoutEntryOut<'a>>,
    candidates: Vec<LayoutEntryOut<'a>>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    optional: &'a [String],
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LayoutEntryOut<'a> {
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

impl<'a> LayoutEntryOut<'a> {
    fn children(dir: &'a str, class: QosClass, filter: &'a NameFilter) -> Self {
        LayoutEntryOut {
            dir: None,
            children_of: Some(dir),
            class: class.name(),
            include: &filter.include,
            exclude: &filter.exclude,
        }
    }
}

fn custom_doc(layout: &Layout) -> CustomLayoutOut<'_> {
    let metrics = layout
        .metrics
        .iter()
        .filter_map(|m| match m {
            // Always read; not written.
            MetricSource::Root => None,
            MetricSource::Dir { dir, class } => Some(LayoutEntryOut {
                dir: Some(dir),
                children_of: None,
                class: class.name(),
                include: &[],
                exclude: &[],
            }),
            MetricSource::Children { dir, class, filter } => {
                Some(LayoutEntryOut::children(dir, *class, filter))
            }
        })
        .collect();
    let candidates = layout
        .candidates
        .iter()
        .map(|c| LayoutEntryOut::children(&c.dir, c.class, &c.filter))
        .collect();
    CustomLayoutOut {
        name: &layout.name,
        metrics,
        candidates,
        optional: &layout.optional,
    }
}

/// An `OOMWardenConfig` document holding `layout` as a custom layout (a built-in one written
/// out as data, to start a custom one from). Its name is [`crate::DEFAULT_CUSTOM_NAME`], as a
/// custom layout may not take a built-in name.
pub(crate) fn layout_document(layout: &Layout) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct LayoutDocumentOut<'a> {
        api_version: &'a str,
        kind: &'a str,
        layout: CustomLayoutOut<'a>,
    }
    let mut custom = custom_doc(layout);
    if Layout::BUILTIN.contains(&custom.name) {
        custom.name = crate::DEFAULT_CUSTOM_NAME;
    }
    let doc = LayoutDocumentOut {
        api_version: WARDEN_API_VERSION,
        kind: WARDEN_KIND,
        layout: custom,
    };
    serde_saphyr::to_string(&doc).unwrap_or_else(|e| format!("# cannot render: {e}\n"))
}

impl<'a> LayoutOut<'a> {
    pub(crate) fn of(setting: &'a LayoutSetting) -> Self {
        match setting {
            LayoutSetting::Custom(layout) => LayoutOut::Custom(custom_doc(layout)),
            other => LayoutOut::Name(other.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout of `layout:` holding `yaml`, or every problem as `key: message`, in the
    /// order they are listed.
    fn load(yaml: &str) -> (Option<Layout>, Vec<String>) {
        let document = format!(
            "layout:\n{}",
            yaml.lines().map(|l| format!("  {l}\n")).collect::<String>()
        );
        let value: Value = serde_saphyr::from_str(yaml).unwrap_or(Value::Null);
        let order: Option<crate::fields::WrittenOrder> = serde_saphyr::from_str(&document).ok();
        let at = KeyPath::default().key("layout");
        let (doc, mut problems) = crate::fields::read::<CustomLayoutIn>(value, &at);
        let layout = doc.and_then(|doc| custom(doc, &at, &mut problems));
        explain_unknown_keys(&mut problems);
        crate::fields::sort(&mut problems, order.as_ref());
        let errors = problems
            .iter()
            .map(|p| format!("{}: {}", p.at, p.message))
            .collect();
        (layout.filter(|_| problems.is_empty()), errors)
    }

    #[test]
    fn a_full_layout() {
        let (layout, errors) = load(
            "name: edge\nmetrics:\n  - dir: init.scope\n    class: System\n  - childrenOf: system.slice\n    class: Podruntime\n    include: [containerd.service]\n    exclude: ['x*']\ncandidates:\n  - childrenOf: 'user.slice/user-*.slice'\n    class: Besteffort\n",
        );
        assert_eq!(errors, Vec::<String>::new());
        let layout = layout.unwrap();
        assert_eq!(layout.name, "edge");
        assert_eq!(layout.metrics.len(), 3);
        assert_eq!(layout.metrics[0], MetricSource::Root);
        assert_eq!(
            layout.metrics[2],
            MetricSource::Children {
                dir: "system.slice".into(),
                class: QosClass::Podruntime,
                filter: NameFilter {
                    include: vec!["containerd.service".into()],
                    exclude: vec!["x*".into()],
                },
            }
        );
        assert_eq!(layout.candidates[0].dir, "user.slice/user-*.slice");
        assert_eq!(layout.candidates[0].filter, NameFilter::any());
    }

    /// Issue 36: `optional` names directories a node may lack (no warning for them); each is a
    /// path as `dir` takes it, and a wrong one is reported at its index.
    #[test]
    fn optional_directories() {
        let ok = "metrics: [{dir: a, class: System}]\ncandidates: [{childrenOf: b, class: Besteffort}]\n";
        assert_eq!(load(ok).0.unwrap().optional, Vec::<String>::new());
        let layout = load(&format!("{ok}optional: [kubepods/system, 'x/y']\n"))
            .0
            .unwrap();
        assert_eq!(layout.optional, vec!["kubepods/system", "x/y"]);
        assert!(layout.is_optional("kubepods/system/besteffort"));
        assert!(!layout.is_optional("kubepods/systemd"));
        let (l, e) = load(&format!("{ok}optional: [ok, /abs]\n"));
        assert!(l.is_none(), "{e:?}");
        assert_eq!(
            e,
            vec![
                "layout.optional[1]: invalid path \"/abs\": must be relative to the cgroup root (no leading '/')"
            ]
        );
        let (l, e) = load(&format!("{ok}optional: kubepods\n"));
        assert!(
            l.is_none() && e.len() == 1 && e[0].starts_with("layout.optional:"),
            "{e:?}"
        );
    }

    #[test]
    fn the_name_defaults_and_must_not_shadow_a_builtin() {
        let ok = "metrics: [{dir: a, class: System}]\ncandidates: [{childrenOf: b, class: Besteffort}]\n";
        assert_eq!(load(ok).0.unwrap().name, "custom");
        for bad in ["systemd", "auto", "has space", ""] {
            let (l, e) = load(&format!("name: '{bad}'\n{ok}"));
            assert!(l.is_none() && e.len() == 1, "{bad}: {e:?}");
            assert!(e[0].starts_with("layout.name: "), "{e:?}");
        }
    }

    #[test]
    fn every_problem_with_its_key_path() {
        let (layout, errors) = load(
            "nmae: x\nmetrics:\n  - dir: /abs\n    class: system\n  - dir: a\n    childrenOf: b\n    class: System\n  - childrenOf: a/../b\n    include: [ok, 'a/b', 3]\n    class: 4\n  - 7\ncandidates:\n  - dir: pods\n    class: Besteffort\n",
        );
        assert!(layout.is_none());
        let keys: Vec<&str> = errors
            .iter()
            .map(|e| e.split(": ").next().unwrap_or(""))
            .collect();
        assert_eq!(
            keys,
            // In the order of the file.
            [
                "layout.nmae",
                "layout.metrics[0].dir",
                "layout.metrics[0].class",
                "layout.metrics[1]",
                "layout.metrics[2].childrenOf",
                "layout.metrics[2].include[1]",
                "layout.metrics[2].include[2]",
                "layout.metrics[2].class",
                "layout.metrics[3]",
                "layout.candidates[0].dir",
                "layout.candidates[0].childrenOf",
            ],
            "{errors:#?}"
        );
        assert!(errors[2].contains("unknown class \"system\"; one of Besteffort"));
        assert!(errors[9].contains("use childrenOf"));
    }

    #[test]
    fn empty_lists_and_filters_on_a_dir_entry() {
        let (_, e) = load("metrics: []\n");
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[0].starts_with("layout.metrics: ") && e[1].starts_with("layout.candidates: "));
        let (_, e) = load(
            "metrics: [{dir: a, class: System, include: [x]}]\ncandidates: [{childrenOf: b, class: System}]\n",
        );
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("a dir entry has none"));
    }

    #[test]
    fn double_counting_is_refused() {
        let cands = "candidates: [{childrenOf: b, class: Besteffort}]\n";
        for (metrics, bad) in [
            ("[{dir: a, class: System}, {dir: a, class: Podruntime}]", 1),
            ("[{dir: a, class: System}, {dir: a/b, class: System}]", 1),
            ("[{dir: a/b, class: System}, {dir: a, class: System}]", 1),
            (
                "[{dir: a, class: System}, {childrenOf: a, class: System}]",
                1,
            ),
            (
                "[{childrenOf: a, class: System}, {dir: a, class: System}]",
                1,
            ),
            ("[{dir: a, class: System}, {dir: ab, class: System}]", 0),
            (
                "[{childrenOf: a, class: System, include: [x]}, {childrenOf: a, class: Podruntime, exclude: [x]}]",
                0,
            ),
        ] {
            let (_, e) = load(&format!("metrics: {metrics}\n{cands}"));
            assert_eq!(e.len(), bad, "{metrics}: {e:?}");
        }
    }

    #[test]
    fn setting_names() {
        assert_eq!(LayoutSetting::from_name("auto"), Some(LayoutSetting::Auto));
        assert_eq!(
            LayoutSetting::from_name("host").map(|s| s.name().to_owned()),
            Some("host".into())
        );
        assert_eq!(LayoutSetting::from_name("custom"), None);
    }
}
