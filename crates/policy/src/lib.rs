//! The decision core: pure functions of (configuration, samples, state, time).
//!
//! ```text
//!  MetricsSample ──build_context──▶ TriggerContext ──TriggerExpr::eval──▶ fired?
//!        (state: previous values, last trigger)                             │ yes
//!  [CandidateSample] ──rank──▶ Ranking ──select──▶ Option<victim index> ◀───┘
//! ```
//!
//! [`plan`] is the whole of it for one cycle: a [`Plan`] with its [`Decision`] (`Quiet`,
//! `Skipped`, `NoVictim`, `Victim`); the daemon acts on it.
//!
//! The daemon and the replay tool call the same functions with the same inputs, so a replay is
//! the daemon minus I/O. Nothing here reads a clock or a file: time arrives as the sample's
//! monotonic timestamp.

mod context;
mod growth;
mod plan;
mod rank;

pub use context::{State, build_context};
pub use growth::{Growth, SPACING_NS as GROWTH_SPACING_NS};
pub use plan::{Decision, Plan, Rules, Skip, plan};
pub use rank::{
    Critical, Exclusion, Guards, NODE_CRITICAL_OOM_SCORE_ADJ, Ranking, Scored, Verdict,
    node_critical, order, rank, rank_with, select,
};
