//! The clock that times a kill's verification, injected so that tests and replays do not wait
//! for real time to pass.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Monotonic time and sleeping, as the verification of a kill needs them.
pub trait Clock {
    /// The current instant.
    fn now(&self) -> Instant;
    /// Waits `duration`.
    fn sleep(&self, duration: Duration);
}

/// The real monotonic clock (`CLOCK_MONOTONIC` through [`Instant`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

/// A clock that only moves when it is slept on: a sleep returns at once, and time has
/// advanced by exactly what was asked. A replay verifies its simulated kills with it (the
/// recording says what the cgroup held, no real time needs to pass), and tests time a
/// verification to the poll without waiting.
#[derive(Debug)]
pub struct VirtualClock {
    start: Instant,
    elapsed: Mutex<Duration>,
}

impl VirtualClock {
    /// A clock at its start.
    pub fn new() -> Self {
        VirtualClock {
            start: Instant::now(),
            elapsed: Mutex::new(Duration::ZERO),
        }
    }

    /// How far it has been slept forward.
    pub fn elapsed(&self) -> Duration {
        *self
            .elapsed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Default for VirtualClock {
    fn default() -> Self {
        VirtualClock::new()
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Instant {
        self.start + self.elapsed()
    }

    fn sleep(&self, duration: Duration) {
        let mut elapsed = self
            .elapsed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *elapsed = elapsed.saturating_add(duration);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_virtual_clock_moves_only_when_slept_on() {
        let clock = VirtualClock::new();
        let t0 = clock.now();
        assert_eq!(clock.now(), t0);
        clock.sleep(Duration::from_secs(3600));
        assert_eq!(clock.now() - t0, Duration::from_secs(3600));
        assert_eq!(clock.elapsed(), Duration::from_secs(3600));
    }
}
