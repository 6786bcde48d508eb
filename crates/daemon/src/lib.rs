//! The OOM handler daemon: [`run`] loops, [`Engine::cycle`] does one cycle, [`History`] keeps
//! the action records. The binary (`oomwarden run`) parses flags, installs the log
//! subscriber, and calls [`run`] with a [`oomwarden_actuate::LinuxActuator`].

pub mod api;
mod consumers;
mod engine;
pub mod health;
pub mod history;
pub mod kernel;
pub mod metrics;
mod ratelimit;
pub mod recorder;
pub mod replay;
mod report;
mod run;
pub mod statedir;
pub mod usage;

pub use engine::{CycleOutcome, Engine, EngineParts, RankedCandidate, guards};

pub use history::History;
pub use metrics::Metrics;
pub use run::{RunError, RunOptions, StateSetup, events_options, open_state, run};
