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
//! ```

use oomwarden_model::{BuiltinLayout, CandidateSource, Layout, MetricSource, NameFilter, QosClass};
use serde_json::{Map, Value};

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

const LAYOUT_FIELDS: &[&str] = &["name", "metrics", "candidates"];
const METRIC_FIELDS: &[&str] = &["dir", "childrenOf", "class", "include", "exclude"];
const CANDIDATE_FIELDS: &[&str] = &["childrenOf", "class", "include", "exclude"];

/// Reads a custom layout mapping. On any problem returns every one as (key path, message).
pub(crate) fn custom(map: &Map<String, Value>) -> Result<Layout, Vec<(String, String)>> {
    let mut problems = Vec::new();
    let mut report = |key: String, message: String| problems.push((key, message));
    for key in map.keys().filter(|k| !LAYOUT_FIELDS.contains(&k.as_str())) {
        report(
            format!("layout.{key}"),
            format!(
                "unknown field; known fields are {}",
                LAYOUT_FIELDS.join(", ")
            ),
        );
    }
    let name = match map.get("name") {
        None | Some(Value::Null) => DEFAULT_CUSTOM_NAME.to_owned(),
        Some(Value::String(s)) => {
            if let Err(m) = check_name(s) {
                report("layout.name".into(), m);
            }
            s.clone()
        }
        Some(other) => {
            report("layout.name".into(), expected("a string", other));
            String::new()
        }
    };
    let metrics = entries(map, "metrics", &mut report)
        .iter()
        .enumerate()
        .filter_map(|(i, v)| metric(v, &format!("layout.metrics[{i}]"), &mut report))
        .collect::<Vec<_>>();
    let candidates = entries(map, "candidates", &mut report)
        .iter()
        .enumerate()
        .filter_map(|(i, v)| candidate(v, &format!("layout.candidates[{i}]"), &mut report))
        .collect::<Vec<_>>();
    overlaps(&metrics, &mut report);
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut all = vec![MetricSource::Root];
    all.extend(metrics);
    Ok(Layout {
        name,
        metrics: all,
        candidates,
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

fn expected(what: &str, found: &Value) -> String {
    format!(
        "expected {what}, found {}",
        crate::document::json_type(found)
    )
}

/// The non-empty list at `key`.
fn entries<'m>(
    map: &'m Map<String, Value>,
    key: &str,
    report: &mut impl FnMut(String, String),
) -> &'m [Value] {
    match map.get(key) {
        Some(Value::Array(list)) if !list.is_empty() => list,
        None | Some(Value::Null) | Some(Value::Array(_)) => {
            let why = if key == "metrics" {
                "a layout needs at least one entry here, or no class has pressure or memory to trigger on"
            } else {
                "a layout needs at least one entry here, or nothing could ever be killed (use dryRun to watch without killing)"
            };
            report(format!("layout.{key}"), why.to_owned());
            &[]
        }
        Some(other) => {
            report(
                format!("layout.{key}"),
                expected("a list of entries", other),
            );
            &[]
        }
    }
}

fn metric(v: &Value, at: &str, report: &mut impl FnMut(String, String)) -> Option<MetricSource> {
    let map = mapping(v, at, METRIC_FIELDS, report)?;
    let class = class(map, at, report);
    let filter = filter(map, at, report);
    match (map.get("dir"), map.get("childrenOf")) {
        (Some(d), None) => {
            let dir = path(d, &format!("{at}.dir"), report);
            if filter.as_ref().is_some_and(|f| *f != NameFilter::any()) {
                report(
                    at.to_owned(),
                    "include and exclude filter the children of a childrenOf entry; a dir entry has none".to_owned(),
                );
                return None;
            }
            Some(MetricSource::Dir {
                dir: dir?,
                class: class?,
            })
        }
        (None, Some(p)) => {
            let dir = path(p, &format!("{at}.childrenOf"), report);
            Some(MetricSource::Children {
                dir: dir?,
                class: class?,
                filter: filter?,
            })
        }
        _ => {
            report(
                at.to_owned(),
                "give exactly one of dir (the directory itself) and childrenOf (each of its children)"
                    .to_owned(),
            );
            None
        }
    }
}

fn candidate(
    v: &Value,
    at: &str,
    report: &mut impl FnMut(String, String),
) -> Option<CandidateSource> {
    let map = mapping(v, at, CANDIDATE_FIELDS, report)?;
    let class = class(map, at, report);
    let filter = filter(map, at, report);
    let dir = match map.get("childrenOf") {
        Some(p) => path(p, &format!("{at}.childrenOf"), report),
        None => {
            report(
                format!("{at}.childrenOf"),
                "missing: candidates are the children of a directory".to_owned(),
            );
            None
        }
    };
    Some(CandidateSource {
        dir: dir?,
        class: class?,
        filter: filter?,
    })
}

fn mapping<'v>(
    v: &'v Value,
    at: &str,
    known: &[&str],
    report: &mut impl FnMut(String, String),
) -> Option<&'v Map<String, Value>> {
    let Value::Object(map) = v else {
        report(at.to_owned(), expected("a mapping", v));
        return None;
    };
    for key in map.keys().filter(|k| !known.contains(&k.as_str())) {
        let hint = if key == "dir" {
            "; candidates are the children of a directory: use childrenOf"
        } else {
            ""
        };
        report(
            format!("{at}.{key}"),
            format!("unknown field; known fields are {}{hint}", known.join(", ")),
        );
    }
    Some(map)
}

fn class(
    map: &Map<String, Value>,
    at: &str,
    report: &mut impl FnMut(String, String),
) -> Option<QosClass> {
    let names = || {
        QosClass::ALL
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match map.get("class") {
        Some(Value::String(s)) => {
            let found = QosClass::ALL.into_iter().find(|c| c.name() == s);
            if found.is_none() {
                report(
                    format!("{at}.class"),
                    format!("unknown class {s:?}; one of {}", names()),
                );
            }
            found
        }
        None | Some(Value::Null) => {
            report(
                format!("{at}.class"),
                format!("missing; one of {}", names()),
            );
            None
        }
        Some(other) => {
            report(format!("{at}.class"), expected("a class name", other));
            None
        }
    }
}

fn filter(
    map: &Map<String, Value>,
    at: &str,
    report: &mut impl FnMut(String, String),
) -> Option<NameFilter> {
    let include = patterns(map, "include", at, report);
    let exclude = patterns(map, "exclude", at, report);
    Some(NameFilter {
        include: include?,
        exclude: exclude?,
    })
}

fn patterns(
    map: &Map<String, Value>,
    key: &str,
    at: &str,
    report: &mut impl FnMut(String, String),
) -> Option<Vec<String>> {
    let list = match map.get(key) {
        None | Some(Value::Null) => return Some(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(other) => {
            report(
                format!("{at}.{key}"),
                expected("a list of name patterns", other),
            );
            return None;
        }
    };
    let mut ok = true;
    let mut out = Vec::with_capacity(list.len());
    for (i, p) in list.iter().enumerate() {
        match p {
            Value::String(s) if !s.is_empty() && !s.contains('/') => out.push(s.clone()),
            Value::String(s) => {
                ok = false;
                report(
                    format!("{at}.{key}[{i}]"),
                    format!(
                        "invalid pattern {s:?}: a pattern matches one directory name ('*' for any run of characters), so it is not empty and has no '/'"
                    ),
                );
            }
            other => {
                ok = false;
                report(format!("{at}.{key}[{i}]"), expected("a string", other));
            }
        }
    }
    ok.then_some(out)
}

/// A directory path relative to the cgroup root: no leading '/', no empty, `.` or `..`
/// components; `*` may stand for any run of characters within a component.
fn path(v: &Value, at: &str, report: &mut impl FnMut(String, String)) -> Option<String> {
    let Value::String(s) = v else {
        report(at.to_owned(), expected("a directory path", v));
        return None;
    };
    let problem = if s.is_empty() {
        Some("empty; the root is always read and is never a candidate directory of a class")
    } else if s.starts_with('/') {
        Some("must be relative to the cgroup root (no leading '/')")
    } else if s.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        Some("has an empty, '.' or '..' component")
    } else if s.contains('\0') {
        Some("contains a NUL byte")
    } else {
        None
    };
    match problem {
        Some(why) => {
            report(at.to_owned(), format!("invalid path {s:?}: {why}"));
            None
        }
        None => Some(s.clone()),
    }
}

/// Metrics entries whose directories would be counted twice: a `dir` entry equal to or above
/// another entry's directory (its memory and stall already include theirs). Paths with `*` are
/// compared as written.
fn overlaps(metrics: &[MetricSource], report: &mut impl FnMut(String, String)) {
    let summed = |m: &MetricSource| match m {
        MetricSource::Root => None,
        MetricSource::Dir { dir, .. } => Some((dir.clone(), false)),
        MetricSource::Children { dir, .. } => Some((dir.clone(), true)),
    };
    for (i, a) in metrics.iter().enumerate() {
        let Some((a_dir, false)) = summed(a) else {
            continue;
        };
        for (j, b) in metrics.iter().enumerate() {
            let Some((b_dir, b_children)) = summed(b) else {
                continue;
            };
            let inside = b_dir
                .strip_prefix(a_dir.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
            // `dir: X` twice, `dir: X` with `dir: X/…`, or `dir: X` with `childrenOf: X[/…]`.
            if i != j && inside && (b_children || b_dir != a_dir || i < j) {
                let key = if b_children { "childrenOf" } else { "dir" };
                report(
                    format!("layout.metrics[{j}]"),
                    format!(
                        "{key} {b_dir:?} is inside layout.metrics[{i}] (dir {a_dir:?}), whose figures already include it; it would be counted twice"
                    ),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(yaml: &str) -> (Option<Layout>, Vec<String>) {
        let value: Value = serde_saphyr::from_str(yaml).unwrap_or(Value::Null);
        let Value::Object(map) = value else {
            return (None, vec!["not a mapping".into()]);
        };
        match custom(&map) {
            Ok(layout) => (Some(layout), Vec::new()),
            Err(e) => (
                None,
                e.into_iter().map(|(k, m)| format!("{k}: {m}")).collect(),
            ),
        }
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
            [
                "layout.nmae",
                "layout.metrics[0].class",
                "layout.metrics[0].dir",
                "layout.metrics[1]",
                "layout.metrics[2].class",
                "layout.metrics[2].include[1]",
                "layout.metrics[2].include[2]",
                "layout.metrics[2].childrenOf",
                "layout.metrics[3]",
                "layout.candidates[0].dir",
                "layout.candidates[0].childrenOf",
            ],
            "{errors:#?}"
        );
        assert!(errors[1].contains("unknown class \"system\"; one of Besteffort"));
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
