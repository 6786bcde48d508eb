//! `/healthz` and `/readyz` on the metrics listener: whether the cycle loop still advances,
//! and whether it has done its first cycle. A liveness probe restarts a daemon whose loop is
//! stuck (a read that never returns, a bug); the bound is wide enough that a slow cycle on a
//! node under pressure (a kill's verification, a pre-kill hook, the runtime's first answer)
//! is never taken for a stuck one.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// The slack on top of what a cycle may take by its settings.
pub const HEALTH_SLACK: Duration = Duration::from_secs(5);

/// How long the loop may go without finishing a cycle before it is unhealthy: twenty sample
/// intervals (ticks missed by a slow cycle are skipped, not queued), the longest a cycle may
/// legitimately take (a kill's verification, `killTimeout`; a pre-kill hook, its timeout; the
/// container runtime's first answer, 2.5 s), and [`HEALTH_SLACK`].
pub fn stale_after(settings: &oomwarden_config::Settings) -> Duration {
    let w = &settings.warden;
    let hook = w
        .hooks
        .pre_kill
        .as_ref()
        .map_or(Duration::ZERO, |h| h.timeout);
    settings.oom.sample_interval.saturating_mul(20)
        + w.kill_timeout
        + hook
        + Duration::from_millis(2500)
        + HEALTH_SLACK
}

/// The loop's progress, read by the metrics thread.
#[derive(Debug)]
pub struct Health {
    /// When the daemon started (monotonic ns).
    started_ns: AtomicU64,
    /// When the last cycle ended (monotonic ns; 0: none yet).
    last_cycle_ns: AtomicU64,
    /// How long the loop may go without a cycle.
    stale_after_ns: AtomicU64,
    /// The configuration is loaded and a first cycle done.
    ready: AtomicBool,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            started_ns: AtomicU64::new(oomwarden_node::monotonic_ns()),
            last_cycle_ns: AtomicU64::new(0),
            stale_after_ns: AtomicU64::new(u64::MAX),
            ready: AtomicBool::new(false),
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// An answer: whether healthy (or ready), and the text.
pub type Answer = (bool, String);

impl Health {
    /// The bound from the settings in force (at start and each reload).
    pub fn set_stale_after(&self, bound: Duration) {
        self.stale_after_ns.store(nanos(bound), Ordering::Relaxed);
    }

    /// A cycle ended at `now_ns`.
    pub fn cycle_done(&self, now_ns: u64) {
        self.last_cycle_ns.store(now_ns, Ordering::Relaxed);
        self.ready.store(true, Ordering::Relaxed);
    }

    /// `/healthz` at `now_ns`: the loop advanced within its bound (counted from the start
    /// until the first cycle).
    pub fn live(&self, now_ns: u64) -> Answer {
        let last = match self.last_cycle_ns.load(Ordering::Relaxed) {
            0 => self.started_ns.load(Ordering::Relaxed),
            t => t,
        };
        let idle = Duration::from_nanos(now_ns.saturating_sub(last));
        let bound = Duration::from_nanos(self.stale_after_ns.load(Ordering::Relaxed));
        let what = if self.last_cycle_ns.load(Ordering::Relaxed) == 0 {
            "since the start, no cycle has ended"
        } else {
            "the last cycle ended"
        };
        if idle > bound {
            (
                false,
                format!(
                    "unhealthy: the cycle loop is not advancing: {what} {:.1} s ago, over its bound of {:.1} s (20 sample intervals, killTimeout, the pre-kill hook's timeout, 7.5 s)\n",
                    idle.as_secs_f64(),
                    bound.as_secs_f64()
                ),
            )
        } else {
            (
                true,
                format!("ok: {what} {:.1} s ago\n", idle.as_secs_f64()),
            )
        }
    }

    /// `/readyz`: the configuration is loaded and the first cycle done.
    pub fn ready(&self) -> Answer {
        if self.ready.load(Ordering::Relaxed) {
            (true, "ready\n".to_owned())
        } else {
            (
                false,
                "not ready: the first cycle has not ended yet\n".to_owned(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_that_stops_advancing_is_unhealthy_after_its_bound() {
        let h = Health {
            started_ns: AtomicU64::new(1_000_000_000),
            ..Health::default()
        };
        h.set_stale_after(Duration::from_secs(10));
        assert!(!h.ready().0, "no cycle yet");
        assert!(h.live(5_000_000_000).0, "within the bound of the start");
        let (ok, text) = h.live(12_000_000_000);
        assert!(
            !ok && text.contains("since the start, no cycle has ended"),
            "{text}"
        );
        h.cycle_done(12_500_000_000);
        assert!(h.ready().0);
        assert!(h.live(20_000_000_000).0);
        let (ok, text) = h.live(23_000_000_000);
        assert!(!ok, "{text}");
        assert!(
            text.contains("10.5 s ago, over its bound of 10.0 s"),
            "{text}"
        );
    }

    #[test]
    fn the_bound_covers_what_a_cycle_may_take() {
        let s = oomwarden_config::Settings::defaults().unwrap_or_else(|e| panic!("{e}"));
        // 20 × 500 ms + 2 s + 2.5 s + 5 s.
        assert_eq!(stale_after(&s), Duration::from_millis(19_500));
    }
}
