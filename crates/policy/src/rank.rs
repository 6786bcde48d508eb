//! Ranking and victim selection (Talos §7), with oomwarden's exclusions and deterministic ties.

use std::cmp::Ordering;

use oomwarden_expr::{RankingExpr, RankingInput};
use oomwarden_model::{CandidateSample, Identities, Limit, PodIdentity, QosClass, WorkloadKills};

/// A candidate that may be killed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// Index into the candidate list.
    pub index: usize,
    /// Its score, > 0.
    pub score: f64,
}

/// Why a candidate can never be the victim this cycle.
#[derive(Debug, Clone, PartialEq)]
pub enum Exclusion {
    /// No live process in it (a deleted pod's leftover cgroup): killing it frees nothing.
    Empty,
    /// It is, or contains, oomwarden itself.
    OwnCgroup,
    /// The ranking gave 0, a negative number or NaN ("never kill").
    NotPositive(f64),
    /// The ranking failed for it (Talos: `cannot calculate score for cgroup`).
    EvalError(String),
    /// A node-critical pod (`protect.nodeCritical`): never a candidate, whatever the ranking
    /// says.
    NodeCritical(Critical),
}

impl Exclusion {
    /// Its name, as records count exclusions (`excluded`) and logs say them.
    pub fn name(&self) -> &'static str {
        match self {
            Exclusion::Empty => "empty",
            Exclusion::OwnCgroup => "own-cgroup",
            Exclusion::NotPositive(_) => "not-positive",
            Exclusion::EvalError(_) => "eval-error",
            Exclusion::NodeCritical(_) => "node-critical",
        }
    }
}

/// What tells a pod is node-critical: what the kubelet did to it, or what the runtime says it
/// is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Critical {
    /// Its processes run at this `oom_score_adj` (−997 or lower): the kubelet gives −997 only
    /// to Guaranteed and node-critical pods (`IsNodeCriticalPod`: static, mirror or
    /// `system-node-critical` pods), so a BestEffort or Burstable pod at −997 is one.
    OomScoreAdj(i64),
    /// A static pod: its `kubernetes.io/config.source` annotation (`file`, `http`) is not
    /// `api`.
    StaticPod(String),
    /// A mirror pod (`kubernetes.io/config.mirror`).
    MirrorPod,
}

impl Critical {
    /// In words, for people.
    pub fn describe(&self) -> String {
        match self {
            Critical::OomScoreAdj(adj) => format!(
                "its processes run at oom_score_adj {adj}, the kubelet's score for node-critical pods"
            ),
            Critical::StaticPod(source) => {
                format!("a static pod (kubernetes.io/config.source: {source})")
            }
            Critical::MirrorPod => "a mirror pod (kubernetes.io/config.mirror)".to_owned(),
        }
    }
}

/// The kubelet's `oom_score_adj` for Guaranteed and node-critical pods
/// (`qos.guaranteedOOMScoreAdj`).
pub const NODE_CRITICAL_OOM_SCORE_ADJ: i64 = -997;

/// Guards outside the ranking: what is never a candidate, whatever the ranking says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guards {
    /// Node-critical pods are left out (`protect.nodeCritical`).
    pub node_critical: bool,
}

impl Guards {
    /// Every guard on: oomwarden's defaults.
    pub const ON: Guards = Guards {
        node_critical: true,
    };
    /// None: Talos's exact selection.
    pub const OFF: Guards = Guards {
        node_critical: false,
    };
}

/// Why a candidate is node-critical, if it is: a BestEffort or Burstable candidate whose
/// processes run at −997 or lower, or a pod the runtime names static or mirror. (Guaranteed
/// pods run at −997 as any Guaranteed pod does; the default ranking scores them 0.)
pub fn node_critical(c: &CandidateSample, pod: Option<&PodIdentity>) -> Option<Critical> {
    if let Some(pod) = pod {
        if let Some(source) = pod
            .annotations
            .get("kubernetes.io/config.source")
            .filter(|s| s.as_str() != "api")
        {
            return Some(Critical::StaticPod(source.clone()));
        }
        if pod.annotations.contains_key("kubernetes.io/config.mirror") {
            return Some(Critical::MirrorPod);
        }
    }
    match (c.class, c.oom_score_adj) {
        (QosClass::Besteffort | QosClass::Burstable, Some(adj))
            if adj <= NODE_CRITICAL_OOM_SCORE_ADJ =>
        {
            Some(Critical::OomScoreAdj(adj))
        }
        _ => None,
    }
}

/// The scored candidates of one trigger.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ranking {
    /// Candidates with a score > 0, in candidate order.
    pub eligible: Vec<Scored>,
    /// The others, with the reason.
    pub excluded: Vec<(usize, Exclusion)>,
}

/// What became of one candidate in a ranking.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// It may be killed, with this score (> 0).
    Eligible(f64),
    /// It may not, for this reason.
    Excluded(Exclusion),
    /// It was not among the candidates ranked.
    NotACandidate,
}

impl Verdict {
    /// Its score, when it has one.
    pub fn score(&self) -> Option<f64> {
        match self {
            Verdict::Eligible(s) | Verdict::Excluded(Exclusion::NotPositive(s)) => Some(*s),
            _ => None,
        }
    }

    /// Whether it may be killed.
    pub fn eligible(&self) -> bool {
        matches!(self, Verdict::Eligible(_))
    }

    /// A short reason, for people.
    pub fn reason(&self) -> String {
        match self {
            Verdict::Eligible(_) => "eligible".to_owned(),
            Verdict::Excluded(Exclusion::NotPositive(_)) => "score is not above 0".to_owned(),
            Verdict::Excluded(Exclusion::Empty) => "no live process".to_owned(),
            Verdict::Excluded(Exclusion::OwnCgroup) => "oomwarden's own cgroup".to_owned(),
            Verdict::Excluded(Exclusion::EvalError(e)) => format!("ranking failed: {e}"),
            Verdict::Excluded(Exclusion::NodeCritical(why)) => {
                format!(
                    "node-critical, never a candidate (protect.nodeCritical): {}",
                    why.describe()
                )
            }
            Verdict::NotACandidate => "not a candidate".to_owned(),
        }
    }
}

impl Ranking {
    /// What became of candidate `index`.
    pub fn verdict(&self, index: usize) -> Verdict {
        if let Some(s) = self.eligible.iter().find(|s| s.index == index) {
            return Verdict::Eligible(s.score);
        }
        self.excluded
            .iter()
            .find(|(j, _)| *j == index)
            .map_or(Verdict::NotACandidate, |(_, e)| {
                Verdict::Excluded(e.clone())
            })
    }

    /// The verdicts of candidates `0..count`, in one pass (`verdict` for each would be
    /// quadratic: a thousand candidates means a million comparisons).
    pub fn verdicts(&self, count: usize) -> Vec<Verdict> {
        let mut out = vec![Verdict::NotACandidate; count];
        for s in &self.eligible {
            if let Some(slot) = out.get_mut(s.index) {
                *slot = Verdict::Eligible(s.score);
            }
        }
        for (i, e) in &self.excluded {
            if let Some(slot) = out.get_mut(*i) {
                *slot = Verdict::Excluded(e.clone());
            }
        }
        out
    }
}

/// Scores every candidate knowing only their paths (no pod identity), every guard on. Empty
/// cgroups, oomwarden's own and node-critical pods are excluded before scoring.
pub fn rank(expr: &RankingExpr, candidates: &[CandidateSample]) -> Ranking {
    rank_with(
        expr,
        candidates,
        &Identities::default(),
        &WorkloadKills::default(),
        Guards::ON,
    )
}

/// Scores every candidate, with who each pod is (`pod_namespace`, `pod_name`, `labels`, …) from
/// `identities`. Empty cgroups, oomwarden's own and what the `guards` protect are excluded
/// before scoring: no ranking can choose them.
pub fn rank_with(
    expr: &RankingExpr,
    candidates: &[CandidateSample],
    identities: &Identities,
    kills: &WorkloadKills,
    guards: Guards,
) -> Ranking {
    let mut ranking = Ranking::default();
    for (index, c) in candidates.iter().enumerate() {
        if c.contains_self {
            ranking.excluded.push((index, Exclusion::OwnCgroup));
            continue;
        }
        if !c.populated {
            ranking.excluded.push((index, Exclusion::Empty));
            continue;
        }
        let identity = oomwarden_kube::decode_cgroup_path(&c.dir);
        let pod = identity
            .pod_uid
            .as_deref()
            .and_then(|uid| identities.pod(uid));
        if guards.node_critical
            && let Some(why) = node_critical(c, pod)
        {
            ranking.excluded.push((index, Exclusion::NodeCritical(why)));
            continue;
        }
        let input = RankingInput {
            memory_max: c.memory.max.and_then(Limit::bytes),
            memory_current: c.memory.current,
            memory_peak: c.memory.peak,
            path: &c.path,
            class: c.class,
            pod_uid: identity.pod_uid.as_deref().unwrap_or(""),
            pod,
            oom_score_adj: c.oom_score_adj.unwrap_or(0),
            workload_kills: pod.map_or(0, |p| {
                kills.get(&oomwarden_kube::workload(&p.namespace, &p.name, &p.labels))
            }),
            memory_swap_current: c.swap.and_then(|s| s.current),
            memory_swap_max: c.swap.and_then(|s| s.max).and_then(Limit::bytes),
            // 0 is no protection: none, as an unlimited maximum is.
            memory_min: c.protection.and_then(|p| p.min).filter(|v| *v > 0),
            memory_low: c.protection.and_then(|p| p.low).filter(|v| *v > 0),
            memory_high: c.protection.and_then(|p| p.high).and_then(Limit::bytes),
            pressure_some_avg10: c.pressure.map_or(0.0, |p| p[0]),
            pressure_full_avg10: c.pressure.map_or(0.0, |p| p[1]),
            d_memory_current: c.growth.unwrap_or(0.0),
        };
        match expr.eval(&input) {
            Ok(score) if score > 0.0 => ranking.eligible.push(Scored { index, score }),
            Ok(score) => ranking
                .excluded
                .push((index, Exclusion::NotPositive(score))),
            Err(e) => ranking
                .excluded
                .push((index, Exclusion::EvalError(e.to_string()))),
        }
    }
    ranking
}

/// Picks at most one victim. Strict: the least important class with an eligible candidate,
/// then the highest score in it; otherwise the highest score overall. Ties (random in Talos)
/// go to the larger `memory.current`, then to the smaller path, so the choice is
/// reproducible.
pub fn select(ranking: &Ranking, candidates: &[CandidateSample], strict: bool) -> Option<Scored> {
    let class_of = |s: &Scored| candidates.get(s.index).map(|c| c.class);
    let pool: Vec<&Scored> = if strict {
        let least = ranking.eligible.iter().filter_map(class_of).min()?;
        ranking
            .eligible
            .iter()
            .filter(|s| class_of(s) == Some(least))
            .collect()
    } else {
        ranking.eligible.iter().collect()
    };
    pool.into_iter()
        .max_by(|a, b| preference(a, b, candidates))
        .copied()
}

/// Every eligible candidate in the order [`select`] would take them if each were gone in turn:
/// the first is the victim, the next ones what would have been chosen instead.
pub fn order(ranking: &Ranking, candidates: &[CandidateSample], strict: bool) -> Vec<Scored> {
    let class_of = |s: &Scored| candidates.get(s.index).map(|c| c.class);
    let mut all = ranking.eligible.clone();
    all.sort_by(|a, b| {
        let by_class = if strict {
            class_of(a).cmp(&class_of(b))
        } else {
            Ordering::Equal
        };
        by_class.then_with(|| preference(b, a, candidates))
    });
    all
}

/// Which of two eligible candidates [`select`] prefers (`Greater`: `a`).
fn preference(a: &Scored, b: &Scored, candidates: &[CandidateSample]) -> Ordering {
    let (ca, cb) = (candidates.get(a.index), candidates.get(b.index));
    a.score
        .total_cmp(&b.score)
        .then_with(|| {
            let cur = |c: Option<&CandidateSample>| c.and_then(|c| c.memory.current).unwrap_or(0);
            cur(ca).cmp(&cur(cb))
        })
        // Smaller path wins, so compare reversed.
        .then_with(|| match (ca, cb) {
            (Some(x), Some(y)) => y.path.cmp(&x.path),
            _ => Ordering::Equal,
        })
}

#[cfg(test)]
mod verdict_tests {
    use super::*;

    #[test]
    fn verdicts_in_one_pass_equal_each_verdict() {
        let r = Ranking {
            eligible: vec![
                Scored {
                    index: 3,
                    score: 7.0,
                },
                Scored {
                    index: 0,
                    score: 1.5,
                },
            ],
            excluded: vec![
                (1, Exclusion::Empty),
                (2, Exclusion::NotPositive(0.0)),
                (4, Exclusion::EvalError("no such key".into())),
                (5, Exclusion::OwnCgroup),
            ],
        };
        let all = r.verdicts(7);
        assert_eq!(all, (0..7).map(|i| r.verdict(i)).collect::<Vec<_>>());
        assert_eq!(all[6].reason(), "not a candidate");
        assert_eq!(all[3], Verdict::Eligible(7.0));
        assert_eq!(
            (all[3].score(), all[3].eligible(), all[3].reason().as_str()),
            (Some(7.0), true, "eligible")
        );
        assert_eq!(all[4].reason(), "ranking failed: no such key");
        assert_eq!(all[2].score(), Some(0.0));
    }
}

#[cfg(test)]
mod order_tests {
    use oomwarden_model::{CandidateSample, MemoryReading, QosClass};
    use proptest::prelude::*;

    use super::*;

    fn candidate(i: usize, class: QosClass, current: u64) -> CandidateSample {
        CandidateSample {
            growth: None,
            swap: None,
            protection: None,
            pressure: None,
            path: format!("/sys/fs/cgroup/c{i}"),
            dir: format!("c{i}"),
            class,
            memory: MemoryReading {
                current: Some(current),
                ..MemoryReading::default()
            },
            populated: true,
            contains_self: false,
            read_errors: Vec::new(),
            cgroup_id: None,
            oom_score_adj: None,
        }
    }

    /// Issue 35: the candidate's protection and its own pressure reach the ranking; a
    /// protection of 0 is none (as an unlimited maximum is).
    #[test]
    fn protection_and_pressure_reach_the_ranking() {
        let mut c = candidate(0, QosClass::Burstable, 1000);
        c.protection = Some(oomwarden_model::ProtectionReading {
            min: Some(0),
            low: Some(100),
            high: Some(Limit::Bytes(200)),
        });
        c.pressure = Some([3.0, 1.0]);
        let expr = RankingExpr::compile(
            "double(memory_low.orValue(0u)) + double(memory_high.orValue(0u)) + pressure_some_avg10 + pressure_full_avg10 + (memory_min.hasValue() ? 1000.0 : 0.0)",
        )
        .unwrap();
        let r = rank(&expr, &[c]);
        assert_eq!(r.eligible.first().map(|s| s.score), Some(304.0));
    }

    proptest! {
        /// `order` is `select` taken again and again: its head is the victim, and each next
        /// one is what `select` chooses once the ones before it are gone.
        #[test]
        fn order_is_select_repeated(
            cands in prop::collection::vec((0usize..5, 0u64..4, 1u32..5), 0..12),
            strict in any::<bool>(),
        ) {
            let candidates: Vec<CandidateSample> = cands
                .iter()
                .enumerate()
                .map(|(i, (c, cur, _))| candidate(i, QosClass::ALL[*c], *cur))
                .collect();
            let mut ranking = Ranking {
                eligible: cands
                    .iter()
                    .enumerate()
                    .map(|(index, (_, _, s))| Scored { index, score: f64::from(*s) })
                    .collect(),
                excluded: Vec::new(),
            };
            for expected in order(&ranking, &candidates, strict) {
                let chosen = select(&ranking, &candidates, strict);
                prop_assert_eq!(chosen.map(|s| s.index), Some(expected.index));
                ranking.eligible.retain(|s| s.index != expected.index);
            }
            prop_assert!(ranking.eligible.is_empty());
        }
    }
}

#[cfg(test)]
mod guard_tests {
    use super::*;
    use oomwarden_model::{IdentitySource, MemoryReading};

    fn candidate(class: QosClass, adj: Option<i64>) -> CandidateSample {
        CandidateSample {
            memory: MemoryReading {
                current: Some(1 << 30),
                max: Some(Limit::Max),
                peak: None,
            },
            oom_score_adj: adj,
            ..CandidateSample::new("kubepods/burstable/pod1", class)
        }
    }

    fn pod(annotations: &[(&str, &str)]) -> PodIdentity {
        PodIdentity {
            uid: "1".to_owned(),
            namespace: "kube-system".to_owned(),
            name: "etcd-node-1".to_owned(),
            annotations: annotations
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            source: IdentitySource::Cri,
            ..PodIdentity::default()
        }
    }

    // Issue 55 (1): what tells a node-critical pod, from the kubelet's score or the runtime's
    // annotations; what does not.
    #[test]
    fn node_critical_pods_are_told_by_their_score_or_their_annotations() {
        let b = candidate(QosClass::Burstable, Some(-997));
        assert_eq!(node_critical(&b, None), Some(Critical::OomScoreAdj(-997)));
        assert_eq!(
            node_critical(&candidate(QosClass::Besteffort, Some(-999)), None),
            Some(Critical::OomScoreAdj(-999))
        );
        // A Guaranteed pod runs at −997 as every Guaranteed pod does: not told apart by it.
        assert_eq!(
            node_critical(&candidate(QosClass::Guaranteed, Some(-997)), None),
            None
        );
        assert_eq!(
            node_critical(&candidate(QosClass::Burstable, Some(-996)), None),
            None
        );
        assert_eq!(
            node_critical(&candidate(QosClass::Burstable, None), None),
            None
        );
        let plain = candidate(QosClass::Burstable, Some(500));
        assert_eq!(
            node_critical(
                &plain,
                Some(&pod(&[("kubernetes.io/config.source", "file")]))
            ),
            Some(Critical::StaticPod("file".to_owned()))
        );
        assert_eq!(
            node_critical(
                &plain,
                Some(&pod(&[("kubernetes.io/config.source", "api")]))
            ),
            None
        );
        assert_eq!(
            node_critical(
                &plain,
                Some(&pod(&[("kubernetes.io/config.mirror", "abc")]))
            ),
            Some(Critical::MirrorPod)
        );
        // The guard is outside the ranking: a ranking that scores it cannot choose it.
        let everything = RankingExpr::compile("1.0").unwrap_or_else(|e| panic!("{e}"));
        let r = rank_with(
            &everything,
            std::slice::from_ref(&b),
            &Identities::default(),
            &WorkloadKills::default(),
            Guards::ON,
        );
        assert!(r.eligible.is_empty());
        assert_eq!(
            r.verdict(0).reason().split(':').next(),
            Some("node-critical, never a candidate (protect.nodeCritical)")
        );
        let r = rank_with(
            &everything,
            &[b],
            &Identities::default(),
            &WorkloadKills::default(),
            Guards::OFF,
        );
        assert_eq!(r.eligible.len(), 1, "Talos's exact selection");
    }
}
