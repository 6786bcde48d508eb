//! One cycle's decision, pure: the expressions, the sample, the state and a way to read the
//! candidates in; the trigger context and a [`Decision`] out. The cooldown is updated here
//! (`State::triggered` whenever the trigger fires, victim or not). Acting on the decision is
//! the daemon's (`actuate` does the kill); reading is the collector's.

use std::fmt;

use oomwarden_expr::{RankingExpr, TriggerExpr};
use oomwarden_model::{
    CandidateSample, Identities, MetricsSample, RankingVar, TriggerContext, WorkloadKills,
};

use crate::{Ranking, State, build_context, rank_with, select};

/// The expressions and rules a plan follows (the `OOMConfig` document's).
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    /// `triggerExpression`.
    pub trigger: &'a TriggerExpr,
    /// `cgroupRankingExpression`.
    pub ranking: &'a RankingExpr,
    /// `strictCgroupClassOrdering`.
    pub strict_class_ordering: bool,
    /// Who the node's pods are (the ranking's `pod_namespace`, `pod_name`, `labels`, …).
    pub identities: &'a Identities,
    /// Each workload's recent kills (the ranking's `workload_kills`).
    pub workload_kills: &'a WorkloadKills,
    /// What no ranking may choose (`protect`).
    pub guards: crate::Guards,
}

/// Why a cycle decided nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// The trigger context could not be built (Talos: `cannot populate PSI context`).
    Context(String),
    /// The trigger failed to evaluate (Talos: `cannot evaluate OOM trigger expression`).
    Trigger(String),
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Skip::Context(e) | Skip::Trigger(e) => f.write_str(e),
        }
    }
}

/// What a cycle decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// The trigger did not fire.
    Quiet,
    /// Nothing could be decided.
    Skipped(Skip),
    /// The trigger fired and no candidate may be killed.
    NoVictim,
    /// The trigger fired; `Plan::candidates[index]` is the victim.
    Victim {
        /// Index into [`Plan::candidates`].
        index: usize,
        /// Its score (> 0).
        score: f64,
    },
}

/// A cycle's plan: the decision and what it was made from.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The trigger context, when it could be built.
    pub context: Option<TriggerContext>,
    /// The decision.
    pub decision: Decision,
    /// The candidates read (only when the trigger fired).
    pub candidates: Vec<CandidateSample>,
    /// Their ranking (only when the trigger fired).
    pub ranking: Option<Ranking>,
}

impl Plan {
    /// The victim, when there is one.
    pub fn victim(&self) -> Option<(&CandidateSample, f64)> {
        match self.decision {
            Decision::Victim { index, score } => self.candidates.get(index).map(|c| (c, score)),
            _ => None,
        }
    }

    /// Whether the trigger fired (`None`: it was not evaluated, or failed).
    pub fn fired(&self) -> Option<bool> {
        match self.decision {
            Decision::Quiet => Some(false),
            Decision::NoVictim | Decision::Victim { .. } => Some(true),
            Decision::Skipped(_) => None,
        }
    }
}

/// Plans one cycle at the sample's time: builds the context (updating the derivatives),
/// evaluates the trigger and, when it fires, reads the candidates with `candidates`, ranks
/// them and selects the victim.
pub fn plan(
    rules: Rules<'_>,
    sample: &MetricsSample,
    state: &mut State,
    candidates: impl FnOnce() -> Vec<CandidateSample>,
) -> Plan {
    let skipped = |context, skip| Plan {
        context,
        decision: Decision::Skipped(skip),
        candidates: Vec::new(),
        ranking: None,
    };
    let context = match build_context(sample, state) {
        Ok(ctx) => ctx,
        Err(error) => return skipped(None, Skip::Context(error)),
    };
    match rules.trigger.eval(&context) {
        Ok(false) => {
            return Plan {
                context: Some(context),
                decision: Decision::Quiet,
                candidates: Vec::new(),
                ranking: None,
            };
        }
        Ok(true) => {}
        Err(e) => {
            return skipped(
                Some(context),
                Skip::Trigger(format!("cannot evaluate expression: {e}")),
            );
        }
    }
    let mut candidates = candidates();
    // Kept only for a ranking that reads it: a map of every candidate rebuilt each triggered
    // cycle is no cost to pay for nothing.
    if rules.ranking.reads(RankingVar::DMemoryCurrent.name()) {
        state.growth_mut().fill(sample.at_ns, &mut candidates);
    }
    let ranking = rank_with(
        rules.ranking,
        &candidates,
        rules.identities,
        rules.workload_kills,
        rules.guards,
    );
    let decision = match select(&ranking, &candidates, rules.strict_class_ordering) {
        Some(v) => Decision::Victim {
            index: v.index,
            score: v.score,
        },
        None => Decision::NoVictim,
    };
    state.triggered(sample.at_ns);
    Plan {
        context: Some(context),
        decision,
        candidates,
        ranking: Some(ranking),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oomwarden_model::{Limit, MemoryReading, PsiReading, QosClass, SubtreeSample};

    /// A sample whose System subtree has `full avg10` at `stall` (all else 0).
    fn sample(at_ns: u64, stall: f64) -> MetricsSample {
        let psi = |full10: f64| PsiReading::Values([[0.0; 4], [full10, 0.0, 0.0, 0.0]]);
        let subtree = |dir: &str, class, full10| SubtreeSample {
            dir: dir.to_owned(),
            class,
            psi: psi(full10),
            memory: MemoryReading::default(),
            cgroup_id: None,
            stat: None,
            swap_current: None,
            events: None,
        };
        MetricsSample {
            at_ns,
            subtrees: vec![
                subtree("", None, stall),
                subtree("system", Some(QosClass::System), stall),
                subtree("kubepods/besteffort", Some(QosClass::Besteffort), 0.0),
            ],
            node_memory: None,
            vmstat: None,
            swap: None,
        }
    }

    fn candidate(dir: &str, class: QosClass, current: u64, populated: bool) -> CandidateSample {
        CandidateSample {
            memory: MemoryReading {
                current: Some(current),
                peak: Some(current),
                max: Some(Limit::Max),
            },
            populated,
            ..CandidateSample::new(dir, class)
        }
    }

    fn expr<T>(r: Result<T, impl fmt::Debug>) -> T {
        r.unwrap_or_else(|e| panic!("{e:?}"))
    }

    /// Table of (trigger, stall, candidates, strict) → decision; no temporary directories.
    #[test]
    #[allow(clippy::too_many_lines, reason = "a table of cases")]
    fn decisions() {
        let ranking = expr(RankingExpr::compile(
            "memory_max.hasValue() ? 0.0 : double(memory_current.orValue(0u))",
        ));
        let be = || candidate("kubepods/besteffort/pod-a", QosClass::Besteffort, 100, true);
        let bu = || candidate("kubepods/burstable/pod-b", QosClass::Burstable, 900, true);
        let empty = || {
            candidate(
                "kubepods/besteffort/pod-gone",
                QosClass::Besteffort,
                999,
                false,
            )
        };
        let victim = |index, score| Decision::Victim { index, score };
        struct Case {
            name: &'static str,
            trigger: &'static str,
            stall: f64,
            candidates: Vec<CandidateSample>,
            strict: bool,
            want: Decision,
        }
        let case = |name, trigger, stall, candidates, strict, want| Case {
            name,
            trigger,
            stall,
            candidates,
            strict,
            want,
        };
        let cases = [
            case(
                "quiet",
                "memory_full_avg10 > 12.0",
                5.0,
                vec![be()],
                true,
                Decision::Quiet,
            ),
            case(
                "strict: the lowest class first",
                "memory_full_avg10 > 12.0",
                20.0,
                vec![bu(), be()],
                true,
                victim(1, 100.0),
            ),
            case(
                "not strict: the highest score",
                "memory_full_avg10 > 12.0",
                20.0,
                vec![bu(), be()],
                false,
                victim(0, 900.0),
            ),
            case(
                "an empty cgroup is never the victim",
                "memory_full_avg10 > 12.0",
                20.0,
                vec![empty()],
                true,
                Decision::NoVictim,
            ),
            case(
                "no candidates",
                "true",
                0.0,
                vec![],
                true,
                Decision::NoVictim,
            ),
            case(
                "a trigger that fails to evaluate",
                "[1.0][int(memory_full_avg10)] > 0.0",
                7.0,
                vec![be()],
                true,
                Decision::Skipped(Skip::Trigger(
                    "cannot evaluate expression: index 7 out of bounds for length 1".to_owned(),
                )),
            ),
        ];
        for Case {
            name,
            trigger,
            stall,
            candidates,
            strict,
            want,
        } in cases
        {
            let trigger = expr(TriggerExpr::compile(trigger));
            let rules = Rules {
                trigger: &trigger,
                ranking: &ranking,
                strict_class_ordering: strict,
                identities: &Identities::default(),
                workload_kills: &WorkloadKills::default(),
                guards: crate::Guards::ON,
            };
            let mut state = State::new();
            let read = std::cell::Cell::new(false);
            let p = plan(rules, &sample(5_000, stall), &mut state, || {
                read.set(true);
                candidates
            });
            assert_eq!(p.decision, want, "{name}");
            let fired = p.fired() == Some(true);
            // Candidates are read, and the cooldown starts, only when the trigger fires.
            assert_eq!(read.get(), fired, "{name}");
            assert_eq!(state.last_trigger_ns(), fired.then_some(5_000), "{name}");
            assert!(p.context.is_some(), "{name}");
        }
    }

    /// Issue 34: a ranking can weigh repeat offenders by their workload's recent kills, each
    /// pod's workload read from its labels (the Deployment's two pods are one workload).
    #[test]
    fn a_ranking_can_weigh_a_workloads_recent_kills() {
        let trigger = expr(TriggerExpr::compile("true"));
        let ranking = expr(RankingExpr::compile(
            "double(memory_current.orValue(0u)) * (workload_kills >= 2 ? 10.0 : 1.0)",
        ));
        let (loop_uid, big_uid) = (
            "6983351e-0001-4c1b-9a3e-0f5d2b7c0001",
            "6983351e-0002-4c1b-9a3e-0f5d2b7c0002",
        );
        let mut identities = Identities::default();
        for (uid, name, hash) in [
            (loop_uid, "etl-6b8f7c-x1", "6b8f7c"),
            (big_uid, "cache-0", ""),
        ] {
            let mut labels = std::collections::BTreeMap::new();
            if !hash.is_empty() {
                labels.insert("pod-template-hash".to_owned(), hash.to_owned());
            }
            identities.pods.insert(
                uid.to_owned(),
                oomwarden_model::PodIdentity {
                    uid: uid.to_owned(),
                    namespace: "batch".to_owned(),
                    name: name.to_owned(),
                    labels,
                    ..oomwarden_model::PodIdentity::default()
                },
            );
        }
        let mut kills = WorkloadKills::default();
        let etl = oomwarden_model::Workload {
            namespace: "batch".to_owned(),
            kind: oomwarden_model::WorkloadKind::Deployment,
            name: "etl".to_owned(),
        };
        let candidates = || {
            vec![
                candidate(
                    &format!("kubepods/besteffort/pod{loop_uid}"),
                    QosClass::Besteffort,
                    100 << 20,
                    true,
                ),
                candidate(
                    &format!("kubepods/besteffort/pod{big_uid}"),
                    QosClass::Besteffort,
                    500 << 20,
                    true,
                ),
            ]
        };
        for (killed_before, want) in [(1, 1), (2, 0)] {
            while kills.get(&etl) < killed_before {
                kills.add(&etl);
            }
            let rules = Rules {
                trigger: &trigger,
                ranking: &ranking,
                strict_class_ordering: true,
                identities: &identities,
                workload_kills: &kills,
                guards: crate::Guards::ON,
            };
            let p = plan(rules, &sample(5_000, 0.0), &mut State::new(), candidates);
            assert!(
                matches!(p.decision, Decision::Victim { index, .. } if index == want),
                "{killed_before} kills before: {:?}",
                p.decision
            );
        }
    }

    #[test]
    fn an_incomplete_pressure_file_skips_the_cycle_and_leaves_the_state() {
        let trigger = expr(TriggerExpr::compile("true"));
        let ranking = expr(RankingExpr::compile("1.0"));
        let rules = Rules {
            trigger: &trigger,
            ranking: &ranking,
            strict_class_ordering: true,
            identities: &Identities::default(),
            workload_kills: &WorkloadKills::default(),
            guards: crate::Guards::ON,
        };
        let mut s = sample(5_000, 0.0);
        if let Some(t) = s.subtrees.get_mut(1) {
            t.psi = PsiReading::Incomplete("cannot find memory pressure type: type: full".into());
        }
        let mut state = State::new();
        let p = plan(rules, &s, &mut state, Vec::new);
        assert_eq!(
            p.decision,
            Decision::Skipped(Skip::Context(
                "cannot find memory pressure type: type: full".into()
            ))
        );
        assert_eq!(p.fired(), None);
        assert!(p.context.is_none());
        assert_eq!(state.last_trigger_ns(), None);
        assert_eq!(state.remembered_keys(), 0);
    }

    /// Issue 35: a triggered cycle keeps its candidates' readings for the growth, and fills
    /// their `growth`, only when the ranking names `d_memory_current`.
    #[test]
    fn growth_is_kept_only_for_a_ranking_that_reads_it() {
        let trigger = expr(TriggerExpr::compile("true"));
        const S: u64 = 1_000_000_000;
        for (source, kept) in [("1.0", 0), ("d_memory_current + 1.0", 1)] {
            let ranking = expr(RankingExpr::compile(source));
            let rules = Rules {
                trigger: &trigger,
                ranking: &ranking,
                strict_class_ordering: true,
                identities: &Identities::default(),
                workload_kills: &WorkloadKills::default(),
                guards: crate::Guards::ON,
            };
            let mut state = State::new();
            let pod = |current| {
                vec![candidate(
                    "kubepods/besteffort/pod-a",
                    QosClass::Besteffort,
                    current,
                    true,
                )]
            };
            plan(rules, &sample(S, 0.0), &mut state, || pod(100));
            assert_eq!(state.growth().remembered(), kept, "{source}");
            let p = plan(rules, &sample(3 * S, 0.0), &mut state, || pod(300));
            let growth = p.candidates.first().and_then(|c| c.growth);
            assert_eq!(growth, (kept == 1).then_some(100.0), "{source}");
        }
    }
}
