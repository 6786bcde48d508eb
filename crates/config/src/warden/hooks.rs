//! `hooks`: commands run around a kill.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::fields::{
    Field, KeyPath, Problem, Section, expected, format_duration, leaf, text, timeout_from_text,
    unless_blank,
};

/// A hook command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    /// The program (an absolute path) and its arguments; no shell.
    pub command: Vec<String>,
    /// How long it may run before it is killed.
    pub timeout: Duration,
}

/// Commands run around a kill (off by default).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Hooks {
    /// Before the kill, waited for (at most its timeout); the kill goes ahead whatever it
    /// returns.
    pub pre_kill: Option<Hook>,
    /// After the record is written, not waited for; gets the record as JSON on stdin.
    pub post_kill: Option<Hook>,
}

/// Default timeout of the pre-kill hook: it delays the kill.
pub const DEFAULT_PRE_KILL_TIMEOUT: Duration = Duration::from_secs(2);
/// Default timeout of the post-kill hook.
pub const DEFAULT_POST_KILL_TIMEOUT: Duration = Duration::from_secs(10);

/// The section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct HooksIn {
    pre_kill: Field<Section<HookIn>>,
    post_kill: Field<Section<HookIn>>,
}

/// One hook as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct HookIn {
    command: Field<Command>,
    timeout: Field<HookTimeout>,
}

/// A hook's command: the program (an absolute path) and its arguments.
#[derive(Debug)]
struct Command(Vec<String>);

impl<'de> Deserialize<'de> for Command {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        leaf(d, |v| match v {
            Value::Array(list) if !list.is_empty() => {
                let words: Option<Vec<String>> =
                    list.iter().map(|w| w.as_str().map(str::to_owned)).collect();
                match words {
                    Some(w) if w.first().is_some_and(|p| p.starts_with('/')) => Ok(Command(w)),
                    Some(w) => Err(format!(
                        "the program must be an absolute path (oomwarden runs as root and does not search PATH), found {:?}",
                        w.first().map_or("", String::as_str)
                    )),
                    None => Err("every element must be a string".to_owned()),
                }
            }
            other => Err(expected(
                "a non-empty list: the program and its arguments (no shell)",
                &other,
            )),
        })
    }
}

#[derive(Debug)]
struct HookTimeout(Option<Duration>);

impl<'de> Deserialize<'de> for HookTimeout {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| {
            unless_blank(s, |t| timeout_from_text(t, "hook timeout"))
        })
        .map(HookTimeout)
    }
}

impl HooksIn {
    /// The settings; a hook without a command is a problem at its key.
    pub(super) fn settings(self, at: &KeyPath, problems: &mut Vec<Problem>) -> Hooks {
        Hooks {
            pre_kill: self.pre_kill.section().and_then(|hook| {
                hook.settings(DEFAULT_PRE_KILL_TIMEOUT, &at.key("preKill"), problems)
            }),
            post_kill: self.post_kill.section().and_then(|hook| {
                hook.settings(DEFAULT_POST_KILL_TIMEOUT, &at.key("postKill"), problems)
            }),
        }
    }
}

impl HookIn {
    fn settings(
        self,
        default_timeout: Duration,
        at: &KeyPath,
        problems: &mut Vec<Problem>,
    ) -> Option<Hook> {
        let command = match self.command {
            Field::Set(Command(words)) => Some(words),
            Field::Reported => None,
            Field::Absent => {
                problems.push(Problem::new(
                    at.key("command"),
                    "expected a non-empty list: the program and its arguments (no shell), found nothing",
                ));
                None
            }
        };
        let timeout = match self.timeout {
            Field::Reported => None,
            other => Some(
                other
                    .into_option()
                    .and_then(|t| t.0)
                    .unwrap_or(default_timeout),
            ),
        };
        Some(Hook {
            command: command?,
            timeout: timeout?,
        })
    }
}

/// The section as `oomwarden check` writes it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct HooksOut {
    #[serde(skip_serializing_if = "Option::is_none")]
    pre_kill: Option<HookOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    post_kill: Option<HookOut>,
}

impl HooksOut {
    pub(super) fn of(s: &Hooks) -> Self {
        HooksOut {
            pre_kill: s.pre_kill.as_ref().map(HookOut::of),
            post_kill: s.post_kill.as_ref().map(HookOut::of),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.pre_kill.is_none() && self.post_kill.is_none()
    }
}

#[derive(Debug, Serialize)]
struct HookOut {
    command: Vec<String>,
    timeout: String,
}

impl HookOut {
    fn of(h: &Hook) -> Self {
        HookOut {
            command: h.command.clone(),
            timeout: format_duration(h.timeout),
        }
    }
}
