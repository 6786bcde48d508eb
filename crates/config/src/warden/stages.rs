//! `stages`: responses before the kill, each with a condition of its own in the trigger's
//! environment: `warn` (a record, an Event, a metric) and `terminate` (SIGTERM to the ranked
//! victim's containers, the kill when they have not exited after `grace`). Talos's
//! `triggerExpression` stays the kill, and no stage ever delays it.

use std::time::Duration;

use oomwarden_expr::TriggerExpr;
use serde::{Deserialize, Deserializer, Serialize};

use crate::fields::{
    Entries, Entry, Field, KeyPath, Problem, format_duration, text, unless_blank, within,
};

/// What a stage does when its condition becomes true.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StageAction {
    /// A record (`warned`), a Node Event (`OOMWardenWarning`) and a metric; nothing is done.
    Warn,
    /// The node tainted `oomwarden.io/memory-pressure:NoSchedule` with its condition
    /// `OOMWardenMemoryPressure` (a record `tainted`); cleared once the condition has been
    /// false for `grace` (the hold-down; a record `untainted` when no other cause holds it).
    Taint,
    /// The ranking's victim: SIGTERM to its containers' processes; a record `terminated` when
    /// they exit within `grace`, else the kill (as the trigger's, its record naming the stage).
    Terminate,
}

impl StageAction {
    /// Both.
    pub const ALL: [StageAction; 3] = [
        StageAction::Warn,
        StageAction::Taint,
        StageAction::Terminate,
    ];

    /// `warn` or `terminate`, as the configuration says it.
    pub fn name(self) -> &'static str {
        match self {
            StageAction::Warn => "warn",
            StageAction::Taint => "taint",
            StageAction::Terminate => "terminate",
        }
    }
}

/// One stage.
#[derive(Debug, Clone)]
pub struct Stage {
    /// Its name (a DNS label): records, metrics and Events say it.
    pub name: String,
    /// Its condition, in the trigger's environment (the same variables, type-checked the
    /// same way). The stage fires when it becomes true (false, or never evaluated, before).
    pub when: TriggerExpr,
    /// What it does.
    pub action: StageAction,
    /// `terminate`: how long the victim has to exit after SIGTERM before it is killed;
    /// `taint`: how long the condition must have been false before the taint is removed;
    /// `warn`: the hold-down, how long the condition must have been false before the stage
    /// warns again (one warning per episode: a flapping condition warns once).
    pub grace: Duration,
}

impl PartialEq for Stage {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.when.source() == other.when.source()
            && self.action == other.action
            && self.grace == other.grace
    }
}

impl Eq for Stage {}

/// A `terminate` stage's grace unless it says: the kubelet's default
/// `terminationGracePeriodSeconds`.
pub const DEFAULT_TERMINATE_GRACE: Duration = Duration::from_secs(30);

/// A `taint` stage's hold-down unless it says: the kubelet's default
/// `evictionPressureTransitionPeriod`, for the same reason (no flapping).
pub const DEFAULT_TAINT_HOLD_DOWN: Duration = Duration::from_secs(300);

/// A `warn` stage's hold-down unless it says: a minute of the condition false before it warns
/// again (found by the fault suite: a flapping condition wrote 99 warnings in 20 s).
pub const DEFAULT_WARN_HOLD_DOWN: Duration = Duration::from_secs(60);

/// One stage as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct StageIn {
    name: Field<StageName>,
    when: Field<When>,
    action: Field<Action>,
    grace: Field<Grace>,
}

#[derive(Debug)]
struct StageName(String);

impl<'de> Deserialize<'de> for StageName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| {
            let label = !s.is_empty()
                && s.len() <= 63
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !s.starts_with('-')
                && !s.ends_with('-');
            if label {
                Ok(StageName(s))
            } else {
                Err(format!(
                    "expected a stage name (a DNS label: lower-case letters, digits and '-', at most 63), found {s:?}"
                ))
            }
        })
    }
}

#[derive(Debug)]
struct When(TriggerExpr);

impl<'de> Deserialize<'de> for When {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| {
            TriggerExpr::compile(&s)
                .map(When)
                .map_err(|e| format!("invalid stage condition: {e}"))
        })
    }
}

#[derive(Debug)]
struct Action(StageAction);

impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| {
            StageAction::ALL
                .into_iter()
                .find(|a| a.name() == s)
                .map(Action)
                .ok_or_else(|| format!("expected warn, taint or terminate, found {s:?}"))
        })
    }
}

#[derive(Debug)]
struct Grace(Option<Duration>);

impl<'de> Deserialize<'de> for Grace {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| {
            unless_blank(s, |t| {
                within(t, Duration::from_secs(1)..=Duration::from_secs(3600))
                    .map_err(|_| format!("expected a duration from \"1s\" to \"1h\", found {t:?}"))
            })
        })
        .map(Grace)
    }
}

/// The `stages` list as written.
pub(super) type StagesIn = Entries<StageIn>;

/// The stages, in order; each problem under `stages[i].<key>`. A stage in error is left out
/// (the document is refused anyway).
pub(super) fn settings(list: StagesIn, at: &KeyPath, problems: &mut Vec<Problem>) -> Vec<Stage> {
    let mut stages: Vec<Stage> = Vec::new();
    for (i, item) in list.0.into_iter().enumerate() {
        let at = at.index(i);
        let Field::Set(Entry(stage)) = item.0 else {
            if matches!(item.0, Field::Absent) {
                problems.push(Problem::new(at, "expected a stage (a mapping), found null"));
            }
            continue;
        };
        let mut missing = |key: &str, what: &str| {
            problems.push(Problem::new(
                at.key(key),
                format!("a stage needs {what}, found nothing"),
            ));
        };
        let name = match stage.name {
            Field::Set(StageName(n)) => Some(n),
            Field::Absent => {
                missing("name", "a name");
                None
            }
            Field::Reported => None,
        };
        let when = match stage.when {
            Field::Set(When(w)) => Some(w),
            Field::Absent => {
                missing(
                    "when",
                    "a condition (a CEL expression like triggerExpression)",
                );
                None
            }
            Field::Reported => None,
        };
        let action = match stage.action {
            Field::Set(Action(a)) => Some(a),
            Field::Absent => {
                missing("action", "an action (warn, taint or terminate)");
                None
            }
            Field::Reported => None,
        };
        let grace = stage.grace.into_option().and_then(|g| g.0);
        if let Some(n) = &name
            && stages.iter().any(|s| &s.name == n)
        {
            problems.push(Problem::new(
                at.key("name"),
                format!(
                    "another stage is named {n:?}: records, metrics and Events tell stages by name"
                ),
            ));
            continue;
        }
        if let (Some(name), Some(when), Some(action)) = (name, when, action) {
            stages.push(Stage {
                name,
                when,
                action,
                grace: grace.unwrap_or(match action {
                    StageAction::Taint => DEFAULT_TAINT_HOLD_DOWN,
                    StageAction::Warn => DEFAULT_WARN_HOLD_DOWN,
                    StageAction::Terminate => DEFAULT_TERMINATE_GRACE,
                }),
            });
        }
    }
    stages
}

/// One stage as `oomwarden check` writes it.
#[derive(Debug, Serialize)]
pub(super) struct StageOut {
    name: String,
    when: String,
    action: &'static str,
    grace: String,
}

impl StageOut {
    pub(super) fn of(s: &Stage) -> Self {
        StageOut {
            name: s.name.clone(),
            when: s.when.source().to_owned(),
            action: s.action.name(),
            grace: format_duration(s.grace),
        }
    }
}
