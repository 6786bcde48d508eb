//! Matching the `oom_kill` counters of `memory.events` with the kernel log's reports.

use std::collections::HashMap;

use oomwarden_model::OomConstraint;

/// The two counters of a cgroup's `memory.events` that matter here (hierarchical: a
/// cgroup's counts include its descendants').
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// `oom`: times the cgroup (or a descendant) hit its limit and the allocation was about
    /// to fail, i.e. a memory cgroup OOM.
    pub oom: u64,
    /// `oom_kill`: processes of the cgroup (or a descendant) killed by any OOM killer.
    pub oom_kill: u64,
}

impl Counts {
    /// From `memory.events` pairs; missing keys are 0.
    pub fn from_events(pairs: &[(String, u64)]) -> Counts {
        let get = |key: &str| pairs.iter().find(|(k, _)| k == key).map_or(0, |(_, v)| *v);
        Counts {
            oom: get("oom"),
            oom_kill: get("oom_kill"),
        }
    }
}

/// Kills a counter showed that no report of the kernel log explained within the grace
/// period: known by their cgroup and number only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unexplained {
    /// The cgroup (relative to the cgroup root, no leading `/`): the deepest watched one
    /// whose counter rose.
    pub cgroup: String,
    /// How many processes were killed there.
    pub kills: u64,
    /// `memcg` when the cgroup's `oom` counter rose too (a limit was hit under it), else
    /// `global`.
    pub constraint: OomConstraint,
    /// When the rise was first seen (monotonic nanoseconds).
    pub seen_ns: u64,
}

/// A report of the kernel log not yet matched with a counter.
#[derive(Debug, Clone)]
struct Credit {
    memcg: String,
    kills: u64,
    at_ns: u64,
}

/// The matching state: the last counts of each watched cgroup, the kernel log's reports not
/// yet matched (credits) and the counter rises not yet explained (deficits).
#[derive(Debug)]
pub struct Ledger {
    seen: HashMap<String, Counts>,
    credits: Vec<Credit>,
    deficits: Vec<Unexplained>,
    grace_ns: u64,
}

/// A report stays matchable this long: the counter is read every cycle, so a report whose
/// kill no watched counter shows (a process outside every watched cgroup) is dropped then.
const CREDIT_TTL_NS: u64 = 60_000_000_000;

/// At most this many reports wait for a counter (a storm of kills outside the watched
/// cgroups must not grow the ledger).
const MAX_CREDITS: usize = 1024;

/// At most this many unexplained rises wait for a report.
const MAX_DEFICITS: usize = 1024;

fn trim(path: &str) -> &str {
    path.trim_matches('/')
}

/// Whether `inner` is `outer` or below it.
fn within(inner: &str, outer: &str) -> bool {
    outer.is_empty()
        || inner == outer
        || inner
            .strip_prefix(outer)
            .is_some_and(|rest| rest.starts_with('/'))
}

impl Ledger {
    /// A ledger that waits `grace_ns` for the kernel log to explain a counter's rise.
    pub fn new(grace_ns: u64) -> Ledger {
        Ledger {
            seen: HashMap::new(),
            credits: Vec::new(),
            deficits: Vec::new(),
            grace_ns,
        }
    }

    /// The counts of cgroups read before watching starts (or again, to forget cgroups that
    /// are gone): they become the baseline, no rise is taken from them. Cgroups at or below
    /// one of `scopes` that are not in `reads` are forgotten.
    pub fn baseline(&mut self, scopes: &[String], reads: &[(String, Counts)]) {
        self.seen
            .retain(|dir, _| !scopes.iter().any(|s| within(dir, trim(s))));
        for (dir, counts) in reads {
            self.seen.insert(trim(dir).to_owned(), *counts);
        }
    }

    /// Whether the last reading of `dir` is known (a cgroup never read counts from zero).
    pub fn knows(&self, dir: &str) -> bool {
        self.seen.contains_key(trim(dir))
    }

    /// Which of these readings rose since the last ones (a cgroup never seen rose when its
    /// count is above zero; one whose count fell was re-made, and did not rise).
    pub fn rises(&self, reads: &[(String, Counts)]) -> Vec<String> {
        reads
            .iter()
            .filter(|(dir, c)| {
                let before = self.seen.get(trim(dir)).map_or(0, |b| b.oom_kill);
                c.oom_kill > before
            })
            .map(|(dir, _)| trim(dir).to_owned())
            .collect()
    }

    /// Takes one cycle's readings (the watched roots, and the cgroups below those that rose):
    /// each rise not explained by a rise of a deeper cgroup read in the same cycle is owed an
    /// explanation by the kernel log. Then the baselines move on.
    pub fn observe(&mut self, reads: &[(String, Counts)], now_ns: u64) {
        let delta = |dir: &str, c: &Counts, seen: &HashMap<String, Counts>| -> (u64, u64) {
            match seen.get(dir) {
                // A count that fell: the cgroup was made again; everything in it is new.
                Some(b) if c.oom_kill < b.oom_kill => (c.oom_kill, c.oom),
                Some(b) => (c.oom_kill - b.oom_kill, c.oom.saturating_sub(b.oom)),
                None => (c.oom_kill, c.oom),
            }
        };
        let deltas: Vec<(&str, u64, u64)> = reads
            .iter()
            .map(|(dir, c)| {
                let dir = trim(dir);
                let (kills, ooms) = delta(dir, c, &self.seen);
                (dir, kills, ooms)
            })
            .collect();
        for &(dir, kills, ooms) in &deltas {
            if kills == 0 {
                continue;
            }
            // What the deepest cgroups below this one account for (a cgroup is "deepest"
            // among the readings when no other reading lies between it and `dir`).
            let below: u64 = deltas
                .iter()
                .filter(|(d, _, _)| *d != dir && within(d, dir))
                .filter(|(d, _, _)| {
                    !deltas
                        .iter()
                        .any(|(m, _, _)| *m != dir && *m != *d && within(m, dir) && within(d, m))
                })
                .map(|(_, k, _)| *k)
                .sum();
            let own = kills.saturating_sub(below);
            if own > 0 && self.deficits.len() < MAX_DEFICITS {
                self.deficits.push(Unexplained {
                    cgroup: dir.to_owned(),
                    kills: own,
                    constraint: if ooms > 0 {
                        OomConstraint::Memcg
                    } else {
                        OomConstraint::Global
                    },
                    seen_ns: now_ns,
                });
            }
        }
        for (dir, c) in reads {
            self.seen.insert(trim(dir).to_owned(), *c);
        }
    }

    /// The kernel log reported `kills` processes killed whose memory cgroup is `memcg` (as
    /// the kernel prints it).
    pub fn reported(&mut self, memcg: &str, kills: u64, now_ns: u64) {
        if self.credits.len() >= MAX_CREDITS {
            self.credits.remove(0);
        }
        self.credits.push(Credit {
            memcg: trim(memcg).to_owned(),
            kills,
            at_ns: now_ns,
        });
    }

    /// Matches the rises with the reports, forgets reports too old to match, and returns the
    /// rises still unexplained after the grace period: kills the kernel log did not report.
    pub fn settle(&mut self, now_ns: u64) -> Vec<Unexplained> {
        for deficit in &mut self.deficits {
            for credit in &mut self.credits {
                if deficit.kills == 0 {
                    break;
                }
                if credit.kills > 0 && within(&credit.memcg, &deficit.cgroup) {
                    let n = credit.kills.min(deficit.kills);
                    credit.kills -= n;
                    deficit.kills -= n;
                }
            }
        }
        self.deficits.retain(|d| d.kills > 0);
        self.credits
            .retain(|c| c.kills > 0 && now_ns.saturating_sub(c.at_ns) < CREDIT_TTL_NS);
        let grace = self.grace_ns;
        let (due, wait): (Vec<_>, Vec<_>) = self
            .deficits
            .drain(..)
            .partition(|d| now_ns.saturating_sub(d.seen_ns) >= grace);
        self.deficits = wait;
        due
    }

    /// How many cgroups' counts are kept.
    pub fn watched(&self) -> usize {
        self.seen.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn c(oom: u64, oom_kill: u64) -> Counts {
        Counts { oom, oom_kill }
    }

    fn r(dir: &str, oom: u64, kill: u64) -> (String, Counts) {
        (dir.to_owned(), c(oom, kill))
    }

    #[test]
    fn a_reported_kill_is_explained_and_nothing_is_owed() {
        let mut l = Ledger::new(3 * S);
        l.baseline(&[], &[r("kubepods/besteffort", 0, 0)]);
        assert_eq!(
            l.rises(&[r("kubepods/besteffort", 1, 1)]),
            vec!["kubepods/besteffort"]
        );
        l.observe(
            &[
                r("kubepods/besteffort", 1, 1),
                r("kubepods/besteffort/podA", 1, 1),
            ],
            S,
        );
        l.reported("/kubepods/besteffort/podA/c1", 1, S);
        assert!(l.settle(S).is_empty());
        assert!(l.settle(10 * S).is_empty());
    }

    #[test]
    fn the_log_may_come_after_the_counter_within_the_grace() {
        let mut l = Ledger::new(3 * S);
        l.baseline(&[], &[r("kubepods/besteffort", 0, 0)]);
        l.observe(
            &[
                r("kubepods/besteffort", 0, 1),
                r("kubepods/besteffort/podA", 0, 1),
            ],
            S,
        );
        assert!(l.settle(2 * S).is_empty(), "still in its grace");
        l.reported("/kubepods/besteffort/podA/c1", 1, 2 * S);
        assert!(l.settle(5 * S).is_empty());
    }

    #[test]
    fn a_kill_the_log_never_reports_is_owed_once_at_the_deepest_cgroup() {
        let mut l = Ledger::new(3 * S);
        l.baseline(&[], &[r("kubepods", 0, 5), r("kubepods/besteffort", 0, 5)]);
        l.observe(
            &[
                r("kubepods", 2, 7),
                r("kubepods/besteffort", 2, 7),
                r("kubepods/besteffort/podA", 2, 2),
            ],
            S,
        );
        assert!(l.settle(2 * S).is_empty());
        let due = l.settle(4 * S);
        assert_eq!(
            due,
            vec![Unexplained {
                cgroup: "kubepods/besteffort/podA".into(),
                kills: 2,
                constraint: OomConstraint::Memcg,
                seen_ns: S,
            }],
            "the pod's two, and nothing more at its ancestors"
        );
        assert!(l.settle(10 * S).is_empty(), "owed once");
    }

    #[test]
    fn a_rise_no_deeper_reading_explains_stays_with_the_root_and_is_global_without_oom() {
        // The pod was gone before it could be read.
        let mut l = Ledger::new(0);
        l.baseline(&[], &[r("kubepods/besteffort", 0, 0)]);
        l.observe(&[r("kubepods/besteffort", 0, 1)], S);
        let due = l.settle(S);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].cgroup, "kubepods/besteffort");
        assert_eq!(due[0].constraint, OomConstraint::Global);
    }

    #[test]
    fn a_new_cgroup_counts_from_zero_and_a_remade_one_from_its_new_count() {
        let mut l = Ledger::new(0);
        l.baseline(&[], &[r("system", 0, 3)]);
        assert!(!l.knows("system/new.service"));
        l.observe(&[r("system", 0, 4), r("system/new.service", 0, 1)], S);
        assert_eq!(l.settle(S).len(), 1);
        // Re-made: 1 → 0 → 2 is two new kills.
        l.observe(&[r("system", 0, 6), r("system/new.service", 0, 0)], 2 * S);
        let due = l.settle(2 * S);
        assert_eq!(due[0].cgroup, "system", "{due:?}");
        assert_eq!(due[0].kills, 2);
    }

    #[test]
    fn a_report_outside_every_watched_cgroup_is_forgotten() {
        let mut l = Ledger::new(0);
        l.reported("/init.scope", 1, 0);
        assert!(l.settle(1).is_empty());
        assert_eq!(l.credits.len(), 1);
        assert!(l.settle(CREDIT_TTL_NS + 1).is_empty());
        assert!(l.credits.is_empty());
    }

    #[test]
    fn a_report_explains_only_a_rise_above_its_cgroup() {
        let mut l = Ledger::new(0);
        l.baseline(&[], &[r("kubepods/burstable", 0, 0)]);
        l.observe(
            &[
                r("kubepods/burstable", 0, 1),
                r("kubepods/burstable/podB", 0, 1),
            ],
            S,
        );
        // A report from a sibling pod (or a path that only shares a prefix) is no explanation.
        l.reported("/kubepods/burstable/podBB/c", 1, S);
        l.reported("/kubepods/besteffort/podB", 1, S);
        let due = l.settle(S);
        assert_eq!(due.len(), 1, "{due:?}");
    }

    #[test]
    fn a_group_kill_is_explained_by_one_report_of_several_processes() {
        let mut l = Ledger::new(0);
        l.baseline(&[], &[r("kubepods", 0, 0)]);
        l.observe(&[r("kubepods", 1, 3), r("kubepods/podG", 1, 3)], S);
        l.reported("/kubepods/podG/c", 3, S);
        assert!(l.settle(S).is_empty());
    }

    #[test]
    fn baseline_forgets_what_is_gone_below_a_scope() {
        let mut l = Ledger::new(0);
        l.baseline(
            &[],
            &[
                r("kubepods", 0, 0),
                r("kubepods/podA", 0, 0),
                r("system", 0, 0),
            ],
        );
        l.baseline(&["kubepods".into()], &[r("kubepods", 0, 0)]);
        assert!(!l.knows("kubepods/podA"));
        assert!(l.knows("system"));
        assert_eq!(l.watched(), 2);
    }

    proptest::proptest! {
        /// Whatever the counters do, every kill they show is owed at most once and never more
        /// than the root's rise; nothing panics.
        #[test]
        fn never_more_owed_than_the_roots_rose(
            steps in proptest::collection::vec((0u64..5, 0u64..5, proptest::bool::ANY), 1..20)
        ) {
            let mut l = Ledger::new(0);
            let (mut root, mut pod) = (0u64, 0u64);
            l.baseline(&[], &[r("kubepods", 0, 0)]);
            let mut owed = 0;
            for (i, (a, b, log)) in steps.into_iter().enumerate() {
                pod += a;
                root += a + b;
                let now = (i as u64 + 1) * S;
                l.observe(&[r("kubepods", 0, root), r("kubepods/pod", 0, pod)], now);
                if log {
                    l.reported("/kubepods/pod/c", a, now);
                }
                owed += l.settle(now).iter().map(|u| u.kills).sum::<u64>();
            }
            proptest::prop_assert!(owed <= root);
        }
    }
}
