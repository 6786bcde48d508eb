//! The system-namespace memory defaults of the Cozystack seed (`oomwarden limits`, issue 39).
//!
//! Under the default ranking of the Talos OOM handler only a memory limit grants immunity (a
//! pod cgroup with `memory.max` scores 0), and system components usually carry none. So a
//! default-limit LimitRange is kept in every system namespace, with a safety protocol that
//! never lets a default get a pod rejected at admission: a blocker scan, holds remembered on
//! the Namespace, acknowledgements that authorise one hold and one target, and a foreign
//! memory policy that always wins.
//!
//! Pure: [`decide`] takes the [`Settings`], what is observed in one namespace
//! ([`NamespaceView`]) and the time; it returns the [`Decision`]: the action, the reason, the
//! writes and what to tell the operator. The controller performs the writes; `limits plan`
//! prints them.

mod cluster;
mod decide;
mod settings;
mod state;

pub use cluster::{Cluster, LimitRangeView, NamespaceView};
pub use decide::{Action, Decision, Notice, Write, decide, desired_limits};
pub use settings::{
    Amount, DEFAULT_LIMIT, DEFAULT_REQUEST, Label, Names, Preset, Requirement, Selection, Selector,
    Settings, SettingsError,
};
pub use state::{Hold, STATE_VERSION, State, Valid, parse as parse_state};

/// Every namespace's decision, in name order.
pub fn plan(settings: &Settings, cluster: &Cluster, now_unix: i64) -> Vec<Decision> {
    cluster
        .namespaces
        .values()
        .map(|ns| decide(settings, ns, now_unix))
        .collect()
}

/// How many namespaces are in each condition the metrics export.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// With the default in force.
    pub defaulted: u64,
    /// Held.
    pub held: u64,
    /// Governed by a foreign memory policy.
    pub foreign: u64,
}

impl Tally {
    /// Counts `decisions`.
    pub fn of<'a>(decisions: impl IntoIterator<Item = &'a Decision>) -> Tally {
        let mut t = Tally::default();
        for d in decisions {
            t.defaulted += u64::from(d.defaulted);
            t.held += u64::from(d.action == Action::Hold);
            t.foreign += u64::from(!d.foreign.is_empty());
        }
        t
    }
}
