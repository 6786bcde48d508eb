//! The candidates' growth (the ranking's `d_memory_current`): each candidate's
//! `memory.current` kept about once a second, so a triggered cycle can say how fast each one
//! grew over the last 1 to 2 s, measured time, not cycles.
//!
//! Two readings are kept per candidate, at least [`SPACING_NS`] apart; the rate is taken
//! against the newest one at least that old. The kept readings come from the daemon's scans
//! between triggered cycles (once a second, [`Growth::due`]) and from every triggered cycle's
//! candidates, so the window stays 1–2 s however often the trigger fires.

use std::collections::HashMap;

use oomwarden_model::CandidateSample;

/// The least time between two kept readings of a candidate, and the shortest span a rate is
/// measured over: a second, so a rate is never the noise of one page-cache refill.
pub const SPACING_NS: u64 = 1_000_000_000;

/// One reading: when, and `memory.current` then.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Reading {
    at_ns: u64,
    bytes: u64,
}

/// The last two kept readings of one candidate (`older` is at least [`SPACING_NS`] before
/// `newer`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Kept {
    newer: Reading,
    older: Option<Reading>,
}

/// The candidates' growth state. Bounded by the candidates: a scan or a triggered cycle drops
/// every cgroup it did not see.
#[derive(Debug, Clone, Default)]
pub struct Growth {
    kept: HashMap<String, Kept>,
    /// When the candidates were last all read.
    last_scan_ns: Option<u64>,
}

impl Growth {
    /// Whether the candidates' `memory.current` should be read now (a second since the last
    /// time they were all read).
    pub fn due(&self, now_ns: u64) -> bool {
        self.last_scan_ns
            .is_none_or(|last| now_ns.saturating_sub(last) >= SPACING_NS)
    }

    /// Takes every candidate's `memory.current` read at `now_ns` (all of them: a candidate
    /// not among them is forgotten).
    pub fn observe<'a>(&mut self, now_ns: u64, readings: impl IntoIterator<Item = (&'a str, u64)>) {
        let mut kept = HashMap::with_capacity(self.kept.len());
        for (dir, bytes) in readings {
            let reading = Reading {
                at_ns: now_ns,
                bytes,
            };
            let entry = match self.kept.remove(dir) {
                // Time went backwards (a replay's recording spliced): start again.
                Some(k) if k.newer.at_ns > now_ns => Kept {
                    newer: reading,
                    older: None,
                },
                Some(k) if now_ns - k.newer.at_ns >= SPACING_NS => Kept {
                    newer: reading,
                    older: Some(k.newer),
                },
                Some(k) => k,
                None => Kept {
                    newer: reading,
                    older: None,
                },
            };
            kept.insert(dir.to_owned(), entry);
        }
        self.kept = kept;
        self.last_scan_ns = Some(now_ns);
    }

    /// The growth of `dir`, now at `bytes`: bytes per second against its newest kept reading
    /// at least [`SPACING_NS`] old; `None` without one.
    pub fn rate(&self, dir: &str, now_ns: u64, bytes: u64) -> Option<f64> {
        let kept = self.kept.get(dir)?;
        let base = [Some(kept.newer), kept.older]
            .into_iter()
            .flatten()
            .find(|r| r.at_ns <= now_ns && now_ns - r.at_ns >= SPACING_NS)?;
        #[allow(clippy::cast_precision_loss)] // bytes and nanoseconds fit f64's 53 bits
        let (delta, seconds) = (
            bytes as f64 - base.bytes as f64,
            (now_ns - base.at_ns) as f64 / 1e9,
        );
        Some(delta / seconds)
    }

    /// Fills each candidate's `growth` from what was kept, then keeps their readings (a
    /// triggered cycle read them all). A candidate whose `memory.current` was unreadable has
    /// no growth and is forgotten.
    pub fn fill(&mut self, now_ns: u64, candidates: &mut [CandidateSample]) {
        for c in candidates.iter_mut() {
            c.growth = c
                .memory
                .current
                .and_then(|bytes| self.rate(&c.dir, now_ns, bytes));
        }
        self.observe(
            now_ns,
            candidates
                .iter()
                .filter_map(|c| Some((c.dir.as_str(), c.memory.current?))),
        );
    }

    /// How many candidates are remembered.
    pub fn remembered(&self) -> usize {
        self.kept.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn no_rate_before_a_reading_a_second_old() {
        let mut g = Growth::default();
        assert!(g.due(0));
        g.observe(10 * S, [("a", 100)]);
        assert!(!g.due(10 * S + S / 2));
        assert_eq!(g.rate("a", 10 * S + S / 2, 200), None);
        assert_eq!(g.rate("b", 11 * S, 200), None);
        assert_eq!(g.rate("a", 11 * S, 1_100), Some(1_000.0));
        assert!(g.due(11 * S));
    }

    #[test]
    fn the_window_stays_between_one_and_two_seconds() {
        let mut g = Growth::default();
        // Triggered cycles every 100 ms: a reading is kept only once a second.
        for i in 0..=25u64 {
            g.observe(i * S / 10, [("a", i * 1_000)]);
        }
        // Kept: 0 s (0), 1 s (10 000), 2 s (20 000). At 2.5 s the base is 1 s.
        assert_eq!(g.rate("a", 25 * S / 10, 25_000), Some(10_000.0));
        // Against the newer kept reading as soon as it is a second old; shrinking is negative.
        assert_eq!(g.rate("a", 3 * S, 0), Some(-20_000.0));
        assert_eq!(g.rate("a", 3 * S, 30_000), Some(10_000.0));
    }

    #[test]
    fn a_candidate_not_seen_is_forgotten() {
        let mut g = Growth::default();
        g.observe(0, [("a", 1), ("b", 2)]);
        g.observe(S, [("b", 3)]);
        assert_eq!(g.remembered(), 1);
        assert_eq!(g.rate("a", 2 * S, 5), None);
        assert_eq!(g.rate("b", 2 * S, 5), Some(2.0));
    }

    #[test]
    fn time_going_backwards_starts_again() {
        let mut g = Growth::default();
        g.observe(10 * S, [("a", 1)]);
        g.observe(5 * S, [("a", 7)]);
        assert_eq!(g.rate("a", 5 * S, 9), None);
        assert_eq!(g.rate("a", 6 * S, 9), Some(2.0));
        // A rate asked for before the kept reading is none, not a division by a wrap.
        assert_eq!(g.rate("a", 4 * S, 9), None);
    }

    #[test]
    fn fill_sets_the_rate_and_keeps_the_readings() {
        use oomwarden_model::{MemoryReading, QosClass};
        let candidate = |dir: &str, current: Option<u64>| CandidateSample {
            growth: None,
            swap: None,
            protection: None,
            pressure: None,
            path: format!("/sys/fs/cgroup/{dir}"),
            dir: dir.to_owned(),
            class: QosClass::Burstable,
            memory: MemoryReading {
                current,
                peak: None,
                max: None,
            },
            populated: true,
            contains_self: false,
            read_errors: Vec::new(),
            cgroup_id: None,
            oom_score_adj: None,
        };
        let mut g = Growth::default();
        g.observe(0, [("grower", 0), ("idle", 50), ("unreadable", 5)]);
        let mut cs = vec![
            candidate("grower", Some(100 << 20)),
            candidate("idle", Some(50)),
            candidate("unreadable", None),
            candidate("new", Some(9)),
        ];
        g.fill(2 * S, &mut cs);
        let growth: Vec<_> = cs.iter().map(|c| c.growth).collect();
        assert_eq!(
            growth,
            [Some(f64::from(50u32 << 20)), Some(0.0), None, None]
        );
        assert_eq!(g.remembered(), 3);
        assert_eq!(g.rate("new", 3 * S, 10), Some(1.0));
    }
}
