//! What the controller is told: the names it writes under, which namespaces it reconciles and
//! the two quantities of its LimitRange.

use std::collections::BTreeMap;
use std::fmt;

use oomwarden_kube::{Quantity, binary_si, is_dns_subdomain, is_qualified_name};
use serde::Serialize;

/// A memory amount in whole bytes, with the canonical text apimachinery writes for it (the
/// form an acknowledgement token carries: `32Gi`, `500M`, `1536Mi`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Amount {
    /// Bytes.
    pub bytes: u64,
    /// The canonical text.
    pub text: String,
}

impl Amount {
    /// Parses a quantity of whole bytes, not negative.
    pub fn parse(text: &str) -> Result<Amount, String> {
        let q = Quantity::parse(text.trim()).map_err(|e| e.to_string())?;
        if q.is_negative() {
            return Err(format!("{text:?} is negative"));
        }
        let nanos = q
            .scaled_nanos()
            .ok_or_else(|| format!("{text:?} is out of range"))?;
        if nanos % 1_000_000_000 != 0 {
            return Err(format!("{text:?} is not a whole number of bytes"));
        }
        let bytes = u64::try_from(nanos / 1_000_000_000)
            .ok()
            .filter(|b| i64::try_from(*b).is_ok())
            .ok_or_else(|| format!("{text:?} is out of range"))?;
        Ok(Amount::canonical(bytes, text.trim().ends_with('i')))
    }

    /// `bytes` in apimachinery's canonical form: binary (`BinarySI`: `Ki` … `Ei`) when
    /// `binary`, else decimal (`DecimalSI`: `k` … `E`), the largest suffix that divides it
    /// exactly, else the plain number.
    pub fn canonical(bytes: u64, binary: bool) -> Amount {
        let text = if binary {
            binary_si(bytes)
        } else {
            const SUFFIXES: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
            let (mut n, mut i) = (bytes, 0);
            while n != 0 && n % 1000 == 0 && i + 1 < SUFFIXES.len() {
                n /= 1000;
                i += 1;
            }
            format!("{n}{}", SUFFIXES.get(i).copied().unwrap_or(""))
        };
        Amount { bytes, text }
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A label, `key=value`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Label {
    /// Key.
    pub key: String,
    /// Value.
    pub value: String,
}

impl Label {
    fn new(key: &str, value: &str) -> Label {
        Label {
            key: key.to_owned(),
            value: value.to_owned(),
        }
    }

    /// Parses `key=value`, both checked as Kubernetes checks them.
    pub fn parse(text: &str) -> Result<Label, String> {
        let (key, value) = text
            .split_once('=')
            .ok_or_else(|| format!("{text:?}: expected key=value"))?;
        check_label(key, value)?;
        Ok(Label::new(key, value))
    }

    /// Whether `labels` carry it.
    pub fn on(&self, labels: &BTreeMap<String, String>) -> bool {
        labels.get(&self.key) == Some(&self.value)
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

fn check_label(key: &str, value: &str) -> Result<(), String> {
    if !is_qualified_name(key) {
        return Err(format!("{key:?} is not a valid label key"));
    }
    let ok = value.is_empty()
        || (value.len() <= 63
            && value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric())
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')));
    if ok {
        Ok(())
    } else {
        Err(format!("{value:?} is not a valid label value"))
    }
}

/// One requirement of an equality-based label selector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum Requirement {
    /// `key=value` (or `key==value`).
    Equals {
        /// Key.
        key: String,
        /// Value.
        value: String,
    },
    /// `key!=value`: the label is absent or has another value.
    NotEquals {
        /// Key.
        key: String,
        /// Value.
        value: String,
    },
    /// `key`: the label is there.
    Exists {
        /// Key.
        key: String,
    },
    /// `!key`: the label is not there.
    DoesNotExist {
        /// Key.
        key: String,
    },
}

/// An equality-based label selector, as `kubectl -l` takes it (`a=b,c!=d,e,!f`). Set-based
/// requirements (`in`, `notin`) are refused, not misread.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Selector(pub Vec<Requirement>);

impl Selector {
    /// Parses a selector; the empty text selects everything.
    pub fn parse(text: &str) -> Result<Selector, String> {
        let mut out = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if part.contains(' ') || part.contains('(') {
                return Err(format!(
                    "{part:?}: only equality-based requirements (k=v, k!=v, k, !k) are supported"
                ));
            }
            let r = if let Some((k, v)) = part.split_once("!=") {
                check_label(k, v)?;
                Requirement::NotEquals {
                    key: k.to_owned(),
                    value: v.to_owned(),
                }
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                check_label(k, v)?;
                Requirement::Equals {
                    key: k.to_owned(),
                    value: v.to_owned(),
                }
            } else if let Some(k) = part.strip_prefix('!') {
                check_label(k, "")?;
                Requirement::DoesNotExist { key: k.to_owned() }
            } else {
                check_label(part, "")?;
                Requirement::Exists {
                    key: part.to_owned(),
                }
            };
            out.push(r);
        }
        Ok(Selector(out))
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Equals { key, value } => labels.get(key) == Some(value),
            Requirement::NotEquals { key, value } => labels.get(key) != Some(value),
            Requirement::Exists { key } => labels.contains_key(key),
            Requirement::DoesNotExist { key } => !labels.contains_key(key),
        })
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match r {
                Requirement::Equals { key, value } => write!(f, "{key}={value}")?,
                Requirement::NotEquals { key, value } => write!(f, "{key}!={value}")?,
                Requirement::Exists { key } => f.write_str(key)?,
                Requirement::DoesNotExist { key } => write!(f, "!{key}")?,
            }
        }
        Ok(())
    }
}

/// The names the controller reads and writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Names {
    /// The LimitRange's name.
    pub limit_range: String,
    /// The label put on exactly the namespaces that get the LimitRange.
    pub system_label: Label,
    /// The Namespace annotation holding the safety state.
    pub state_annotation: String,
    /// The Namespace annotation an administrator writes to acknowledge a hold.
    pub ack_annotation: String,
    /// The label that makes a LimitRange the controller's.
    pub managed_by: Label,
}

/// Which namespaces are reconciled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Selection {
    /// Labels the Namespace must carry (empty: every namespace).
    pub selector: Selector,
    /// Namespaces whose name begins with one of these are never reconciled.
    pub exclude_prefixes: Vec<String>,
}

impl Selection {
    /// Why `name` (with `labels`) is not reconciled, or `None` when it is.
    pub fn excluded(&self, name: &str, labels: &BTreeMap<String, String>) -> Option<String> {
        if let Some(p) = self.exclude_prefixes.iter().find(|p| name.starts_with(*p)) {
            return Some(format!("the name begins with {p:?}"));
        }
        if !self.selector.matches(labels) {
            return Some(format!(
                "the labels do not match the selector {}",
                self.selector
            ));
        }
        None
    }
}

/// A set of defaults for every name and the selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// oomwarden's own names; a namespace takes part only when labelled
    /// `oomwarden.io/memory-defaults=enabled` (opt-in).
    Oomwarden,
    /// The seed's: `cozystack-system-defaults`, `cozystack.io/system`,
    /// `operator.cozystack.io/system-memory-{state,ack}`, `app.kubernetes.io/managed-by:
    /// cozystack-package-controller`, every namespace but `tenant-*`.
    Cozystack,
}

impl Preset {
    /// The names of this preset.
    pub fn names(self) -> Names {
        match self {
            Preset::Oomwarden => Names {
                limit_range: "oomwarden-system-defaults".to_owned(),
                system_label: Label::new("oomwarden.io/system", "true"),
                state_annotation: "oomwarden.io/system-memory-state".to_owned(),
                ack_annotation: "oomwarden.io/system-memory-ack".to_owned(),
                managed_by: Label::new("app.kubernetes.io/managed-by", "oomwarden-limits"),
            },
            Preset::Cozystack => Names {
                limit_range: "cozystack-system-defaults".to_owned(),
                system_label: Label::new("cozystack.io/system", "true"),
                state_annotation: "operator.cozystack.io/system-memory-state".to_owned(),
                ack_annotation: "operator.cozystack.io/system-memory-ack".to_owned(),
                managed_by: Label::new(
                    "app.kubernetes.io/managed-by",
                    "cozystack-package-controller",
                ),
            },
        }
    }

    /// The selection of this preset.
    pub fn selection(self) -> Selection {
        match self {
            Preset::Oomwarden => Selection {
                selector: Selector(vec![Requirement::Equals {
                    key: "oomwarden.io/memory-defaults".to_owned(),
                    value: "enabled".to_owned(),
                }]),
                exclude_prefixes: Vec::new(),
            },
            Preset::Cozystack => Selection {
                selector: Selector::default(),
                exclude_prefixes: vec!["tenant-".to_owned()],
            },
        }
    }
}

/// The default limit when none is configured: far above any real working set (the seed's
/// reasoning: the handler discards a cgroup for carrying `memory.max` at all, whatever its
/// value, so the default buys immunity, not a fitted ceiling).
pub const DEFAULT_LIMIT: &str = "32Gi";
/// The default request paired with it: tiny, since it applies to every container.
pub const DEFAULT_REQUEST: &str = "32Mi";

/// Everything the decisions need.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    /// The names.
    pub names: Names,
    /// The selection.
    pub selection: Selection,
    /// The default limit; `None` when the feature is disabled (a limit of `0`).
    pub limit: Option<Amount>,
    /// The default request.
    pub request: Amount,
}

/// Why the settings cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// A quantity is invalid.
    #[error("{what}: {message}")]
    Quantity {
        /// `--limit` or `--request`.
        what: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The request is above the limit: the API server rejects such a LimitRange, which would
    /// wedge every namespace's reconciliation, so the controller refuses to start.
    #[error(
        "the default request {request} is above the default limit {limit}: the API server would reject the LimitRange"
    )]
    RequestAboveLimit {
        /// The request.
        request: Amount,
        /// The limit.
        limit: Amount,
    },
    /// A name is not valid where it is used.
    #[error("{what} {value:?}: {message}")]
    Name {
        /// Which name.
        what: &'static str,
        /// The value.
        value: String,
        /// What is wrong.
        message: String,
    },
}

impl Settings {
    /// Settings from a preset, the two quantities as configured (empty: the default; a limit
    /// of `0` disables the feature) and the names and selection given.
    pub fn new(
        names: Names,
        selection: Selection,
        limit: &str,
        request: &str,
    ) -> Result<Settings, SettingsError> {
        let amount = |what: &'static str, text: &str, default: &str| {
            let text = if text.trim().is_empty() {
                default
            } else {
                text
            };
            Amount::parse(text).map_err(|message| SettingsError::Quantity { what, message })
        };
        let limit = amount("limit", limit, DEFAULT_LIMIT)?;
        let request = amount("request", request, DEFAULT_REQUEST)?;
        let limit = (limit.bytes != 0).then_some(limit);
        if let Some(limit) = &limit
            && request.bytes > limit.bytes
        {
            return Err(SettingsError::RequestAboveLimit {
                request,
                limit: limit.clone(),
            });
        }
        for (what, value) in [
            ("the LimitRange name", &names.limit_range),
            ("the state annotation", &names.state_annotation),
            ("the acknowledgement annotation", &names.ack_annotation),
        ] {
            let ok = if what == "the LimitRange name" {
                is_dns_subdomain(value)
            } else {
                is_qualified_name(value)
            };
            if !ok {
                return Err(SettingsError::Name {
                    what,
                    value: value.clone(),
                    message: "not a valid Kubernetes name".to_owned(),
                });
            }
        }
        if names.state_annotation == names.ack_annotation {
            return Err(SettingsError::Name {
                what: "the acknowledgement annotation",
                value: names.ack_annotation.clone(),
                message: "must differ from the state annotation".to_owned(),
            });
        }
        Ok(Settings {
            names,
            selection,
            limit,
            request,
        })
    }

    /// A preset's settings with the default quantities.
    pub fn preset(preset: Preset) -> Settings {
        Settings {
            names: preset.names(),
            selection: preset.selection(),
            limit: Amount::parse(DEFAULT_LIMIT).ok(),
            request: Amount::canonical(32 << 20, true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_whole_bytes_in_canonical_form() {
        let t = |s: &str| Amount::parse(s).map(|a| (a.bytes, a.text));
        assert_eq!(t("32Gi"), Ok((32 << 30, "32Gi".to_owned())));
        assert_eq!(t("34359738368"), Ok((32 << 30, "34359738368".to_owned())));
        assert_eq!(t("1.5Gi"), Ok((1536 << 20, "1536Mi".to_owned())));
        assert_eq!(t("2000M"), Ok((2_000_000_000, "2G".to_owned())));
        assert_eq!(t("0.5k"), Ok((500, "500".to_owned())));
        assert_eq!(t("1e3"), Ok((1000, "1k".to_owned())));
        assert_eq!(t("0"), Ok((0, "0".to_owned())));
        assert!(t("0.5").unwrap_err().contains("whole number of bytes"));
        assert!(t("-1Gi").unwrap_err().contains("negative"));
        assert!(t("1GB").is_err());
        assert!(t("16Ei").unwrap_err().contains("out of range"));
    }

    #[test]
    fn the_request_may_not_exceed_the_limit_and_zero_disables() {
        let p = Preset::Cozystack;
        let s = |l: &str, r: &str| Settings::new(p.names(), p.selection(), l, r);
        let d = s("", "").unwrap();
        assert_eq!(d, Settings::preset(p));
        assert_eq!(d.limit.unwrap().text, "32Gi");
        assert_eq!(d.request.text, "32Mi");
        assert_eq!(s("0", "").unwrap().limit, None);
        assert!(matches!(
            s("16Mi", "32Mi"),
            Err(SettingsError::RequestAboveLimit { .. })
        ));
        assert!(s("32Mi", "32Mi").is_ok());
        assert!(matches!(
            s("x", ""),
            Err(SettingsError::Quantity { what: "limit", .. })
        ));
        let mut names = p.names();
        names.limit_range = "Not_A_Name".to_owned();
        assert!(matches!(
            Settings::new(names, p.selection(), "", ""),
            Err(SettingsError::Name { .. })
        ));
    }

    #[test]
    fn selectors_are_equality_based() {
        let labels: BTreeMap<String, String> = [
            ("a".to_owned(), "b".to_owned()),
            ("c".to_owned(), "d".to_owned()),
        ]
        .into();
        let m = |s: &str| Selector::parse(s).unwrap().matches(&labels);
        assert!(m(""));
        assert!(m("a=b"));
        assert!(m("a==b,c"));
        assert!(m("a=b,!e"));
        assert!(m("c!=x"));
        assert!(!m("a=b,c!=d"));
        assert!(!m("e"));
        assert!(!m("!a"));
        assert!(Selector::parse("a in (b)").is_err());
        assert!(Selector::parse("a=b c").is_err());
        assert!(Selector::parse("-a=b").is_err());
        assert_eq!(
            Selector::parse("a=b, c!=d,e,!f").unwrap().to_string(),
            "a=b,c!=d,e,!f"
        );
    }

    #[test]
    fn the_cozystack_preset_excludes_tenants() {
        let s = Preset::Cozystack.selection();
        let none = BTreeMap::new();
        assert!(s.excluded("tenant-root", &none).is_some());
        assert_eq!(s.excluded("kube-system", &none), None);
        assert_eq!(s.excluded("tenants", &none), None);
        let o = Preset::Oomwarden.selection();
        assert!(o.excluded("kube-system", &none).is_some());
        let on: BTreeMap<String, String> = [(
            "oomwarden.io/memory-defaults".to_owned(),
            "enabled".to_owned(),
        )]
        .into();
        assert_eq!(o.excluded("kube-system", &on), None);
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_an_amount_or_refused(text in "\\PC{0,40}") {
            if let Ok(a) = Amount::parse(&text) {
                let again = Amount::parse(&a.text).unwrap();
                proptest::prop_assert_eq!(again.bytes, a.bytes);
            }
        }

        #[test]
        fn any_text_is_a_selector_or_refused(text in "\\PC{0,40}") {
            if let Ok(s) = Selector::parse(&text) {
                proptest::prop_assert_eq!(Selector::parse(&s.to_string()).unwrap(), s);
            }
        }
    }
}
