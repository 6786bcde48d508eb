//! The OOM handler daemon: [`run`] loops, [`Engine::cycle`] does one cycle, [`History`] keeps
//! the action records. The binary (`oomwarden run`) parses flags, installs the log
//! subscriber, and calls [`run`] with a [`oomwarden_actuate::LinuxActuator`].

pub mod api;
mod engine;
pub mod history;
pub mod kernel;
pub mod metrics;
mod ratelimit;
pub mod recorder;
pub mod replay;
mod report;
mod run;
mod slots;
pub mod statedir;

pub use engine::{CycleOutcome, Engine, RankedCandidate};

/// The version and the commit this build is from (`0.1.0 (2f3a9c1d0e4b)`), as `oomwarden
/// --version` prints it.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("OOMWARDEN_COMMIT"),
    ")"
);

/// The commit this build is from (see the build script), `unknown` when it could not tell.
pub const COMMIT: &str = env!("OOMWARDEN_COMMIT");
pub use history::History;
pub use metrics::Metrics;
pub use run::{
    RunError, RunOptions, StateSetup, check_host, identity_config, load_settings, monotonic_ns,
    next_tick, open_state, resolve_layout, run,
};
