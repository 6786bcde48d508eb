//! Log lines that could repeat every cycle (a file that cannot be read, a candidate whose
//! score fails) are written at most once a minute per key, the next line saying how many were
//! left out meanwhile. Keys not seen for two minutes are forgotten, so pod churn does not grow
//! the table.

use std::collections::HashMap;

/// At most one line a key per `every_ns`.
#[derive(Debug)]
pub(crate) struct LogLimiter {
    every_ns: u64,
    keys: HashMap<String, Entry>,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    logged_at: u64,
    seen_at: u64,
    left_out: u64,
}

impl LogLimiter {
    pub(crate) fn new(every_ns: u64) -> Self {
        LogLimiter {
            every_ns,
            keys: HashMap::new(),
        }
    }

    /// Whether to write the line for `key` now: `Some(n)`, with `n` lines left out since the
    /// last one written, or `None` (counted as left out).
    pub(crate) fn admit(&mut self, key: &str, now_ns: u64) -> Option<u64> {
        match self.keys.get_mut(key) {
            Some(e) if now_ns.saturating_sub(e.logged_at) < self.every_ns => {
                e.left_out += 1;
                e.seen_at = now_ns;
                None
            }
            Some(e) => {
                let left_out = std::mem::take(&mut e.left_out);
                e.logged_at = now_ns;
                e.seen_at = now_ns;
                Some(left_out)
            }
            None => {
                self.keys.insert(
                    key.to_owned(),
                    Entry {
                        logged_at: now_ns,
                        seen_at: now_ns,
                        left_out: 0,
                    },
                );
                Some(0)
            }
        }
    }

    /// Forgets the keys not seen for two periods.
    pub(crate) fn prune(&mut self, now_ns: u64) {
        let keep = self.every_ns.saturating_mul(2);
        self.keys
            .retain(|_, e| now_ns.saturating_sub(e.seen_at) < keep);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.keys.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn once_a_period_with_the_count_left_out() {
        let mut l = LogLimiter::new(60 * S);
        assert_eq!(l.admit("a", 0), Some(0));
        assert_eq!(l.admit("a", S), None);
        assert_eq!(l.admit("a", 2 * S), None);
        assert_eq!(l.admit("b", 2 * S), Some(0), "keys are apart");
        assert_eq!(l.admit("a", 60 * S), Some(2));
        assert_eq!(l.admit("a", 61 * S), None);
        assert_eq!(l.admit("a", 120 * S), Some(1));
    }

    #[test]
    fn keys_not_seen_are_forgotten() {
        let mut l = LogLimiter::new(60 * S);
        for i in 0..100 {
            l.admit(&format!("pod{i}"), 0);
        }
        l.admit("still", 100 * S);
        l.prune(130 * S);
        assert_eq!(l.len(), 1);
    }
}
