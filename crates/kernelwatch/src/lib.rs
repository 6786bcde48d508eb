//! The kernel's own OOM kills, as they happen.
//!
//! Two sources, because either can miss a kill: the kernel log ([`kmsg`]: `/dev/kmsg`
//! followed by a thread of its own and parsed by `oomwarden-oomlog`, which names the victim,
//! its memory cgroups and the constraint, but is unreadable without privilege, loses records
//! when its ring buffer wraps, and is rate-limited by the kernel) and the `oom_kill` counters
//! of `memory.events` (never lost, but only a count per cgroup). The [`Ledger`] matches them:
//! a counter that rose is explained by the kernel log's reports under that cgroup, and what the
//! log does not explain within a grace period is a kill known from the counter alone.
//!
//! The ledger is pure (readings and time in, findings out); the daemon reads the files.

pub mod kmsg;
mod ledger;

pub use ledger::{Counts, Ledger, Unexplained};
