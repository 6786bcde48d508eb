//! Plain-data domain types shared by every oomwarden crate.
//!
//! - [`QosClass`]: the five cgroup classes of the Talos OOM controller, ordered from the least
//!   important (killed first) to the most important.
//! - [`TriggerContext`]: Talos's 39 variables the trigger expression sees and our extensions,
//!   with the exact JSON encoding Talos stores in its action records (`triggerContext`).
//!
//! - [`variables`]: the catalogue, one definition per trigger and ranking variable.
//! - [`Layout`]: which cgroup directories make up each class (data, not code).
//! - [`MetricsSample`], [`CandidateSample`]: what one cycle read, as plain data.
//! - [`ActionRecord`]: what one triggered cycle did.
//!
//! Invariants: this crate does no I/O and reads no clock; every value comes in as a parameter.

mod class;
mod context;
mod duration;
mod gofloat;
mod identity;
mod layout;
mod limit;
mod record;
mod sample;
pub mod variables;
mod workload;

pub use class::QosClass;
pub use context::{ClassMap, ContextJsonError, PsiKind, PsiSpan, TriggerContext, Variable};
pub use duration::{DurationError, format_go_duration, parse_go_duration};
pub use gofloat::{format_go_float, format_go_yaml_float, format_number, format_rounded};
pub use identity::{
    ContainerIdentity, Identities, IdentitySource, KillMethod, KillScope, PodIdentity,
};
pub use layout::{
    BuiltinLayout, CandidateSource, LEFT_OUT, Layout, MetricSource, NameFilter, RUNTIME_UNITS,
    glob_match,
};
pub use limit::Limit;
pub use record::{
    ActionRecord, CancelReason, DetectedBy, MAX_CONTAINERS_LISTED, MAX_PIDS_LISTED,
    MAX_PROCESSES_LISTED, MAX_RECORD_CMDLINE_BYTES, MAX_RUNNERS_UP, MemoryBreakdown, OomConstraint,
    Outcome, RecordKind, RunnerUp, Wakeup, listed_pids,
};
pub use sample::{
    CandidateSample, EventCounters, MemoryReading, MetricsSample, NodeMemory, NodeSwap,
    ProtectionReading, PsiReading, StatCounters, SubtreeSample, SwapReading, VmCounters,
};
pub use variables::{PerClass, RankingVar, Scalar, TriggerVar};
pub use workload::{WORKLOAD_KILLS_WINDOW, Workload, WorkloadKills, WorkloadKind};

/// A unit variant's serde name: the one spelling of an enum's names (records, metric labels,
/// logs), so a `name()` can never disagree with what serde writes.
fn serde_name<T: serde::Serialize>(value: &T) -> &'static str {
    // Only unit variants reach here; anything else would be a programming error caught by
    // the tests below, not input.
    serde_variant::to_variant_name(value).unwrap_or("unknown")
}

#[cfg(test)]
mod names {
    use super::*;

    fn json<T: serde::Serialize>(v: &T) -> String {
        serde_json::to_value(v)
            .ok()
            .and_then(|j| j.as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    /// Each name is the serde name, and every variant has one of its own.
    #[test]
    fn names_are_the_serde_names() {
        fn check<T: serde::Serialize + Copy>(all: &[T], name: fn(T) -> &'static str) {
            let mut seen = std::collections::HashSet::new();
            for v in all {
                assert_eq!(name(*v), json(v));
                assert!(seen.insert(name(*v)), "{}", name(*v));
            }
        }
        check(&Outcome::ALL, Outcome::name);
        check(&Wakeup::ALL, Wakeup::name);
        check(&RecordKind::ALL, RecordKind::name);
        check(&OomConstraint::ALL, OomConstraint::name);
        check(&IdentitySource::ALL, IdentitySource::name);
        check(&KillScope::ALL, KillScope::name);
        assert_eq!(Outcome::NoEligibleCgroup.name(), "no-eligible-cgroup");
        assert_eq!(
            KillScope::from_name("containers"),
            Some(KillScope::Containers)
        );
    }
}
