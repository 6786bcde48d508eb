//! The clocks: the monotonic clock the cycles are timed by, the wall clock records carry, and
//! the tick grid.

use std::time::{Duration, Instant};

/// Nanoseconds of `CLOCK_MONOTONIC` (time since boot, not counting suspend).
pub fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    u64::try_from(t.tv_sec)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(t.tv_nsec).unwrap_or(0))
}

/// Now, as RFC 3339 UTC with milliseconds (the records' `time`).
pub fn wall_clock() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The next tick on the grid `start + k * interval`, and how many grid points were skipped.
/// As Go's `time.Ticker`, which Talos's loop reads: a cycle that ran past a tick is followed
/// at once by the next one (the ticker holds one tick), on the latest grid point not after
/// `now`; the ticks between are dropped, and the grid is kept.
pub fn next_tick(previous: Instant, interval: Duration, now: Instant) -> (Instant, u32) {
    let next = previous + interval;
    if next > now {
        return (next, 0);
    }
    let behind = now.duration_since(next);
    let skipped = u32::try_from(behind.as_nanos() / interval.as_nanos().max(1)).unwrap_or(u32::MAX);
    (next + interval.saturating_mul(skipped), skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_cycle_is_followed_at_once_then_the_grid_resumes() {
        let t0 = Instant::now();
        let i = Duration::from_millis(500);
        assert_eq!(
            next_tick(t0, i, t0 + Duration::from_millis(10)),
            (t0 + i, 0)
        );
        // A cycle that took 1.2 s: as Go's ticker, the next cycle runs at once, on the grid
        // point of 1.0 s (the one of 0.5 s is dropped), and the one after at 1.5 s.
        let now = t0 + Duration::from_millis(1200);
        assert_eq!(next_tick(t0, i, now), (t0 + Duration::from_millis(1000), 1));
        assert_eq!(
            next_tick(t0 + Duration::from_millis(1000), i, now),
            (t0 + Duration::from_millis(1500), 0)
        );
        // Ending exactly on a tick: that tick runs at once.
        assert_eq!(next_tick(t0, i, t0 + i), (t0 + i, 0));
    }
}
