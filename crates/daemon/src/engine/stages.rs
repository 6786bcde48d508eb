//! The response stages (`OOMWardenConfig.stages`): conditions of their own in the trigger's
//! environment, evaluated every cycle, acting only in the cycles the trigger does not fire
//! (the trigger's kill is never delayed). A stage acts when its condition becomes true:
//! `warn` makes a record, `terminate` sends SIGTERM to the ranked victim's containers and
//! waits, across cycles, for them to exit within its grace (a record `terminated`), else
//! kills it as the trigger would (the record naming the stage). At most one stage acts in a
//! cycle (the next ones on the next cycles) and one termination waits at a time.
//!
//! A waiting termination is judged again under the configuration in force whenever that
//! changes (a reload) and when its grace ends: if that configuration would not choose its
//! victim (a dry run, the stage gone, the ranking exempting it, no candidate any more), it is
//! never killed, and a record `cancelled` says why. No signal is ever sent under a
//! configuration other than the one in force at that instant.

use std::sync::Arc;

use oomwarden_actuate::{ActOutcome, ActReport, Order};
use oomwarden_config::{Stage, StageAction};
use oomwarden_model::{
    ActionRecord, CancelReason, Identities, KillScope, Outcome, TriggerContext, Workload,
};
use oomwarden_policy::{Decision, Plan, Verdict};

use super::{CycleOutcome, Engine};
use crate::report::{self, Target};

/// A `terminate` stage's victim, sent SIGTERM, waiting for its processes to exit.
#[derive(Debug)]
pub(super) struct Pending {
    stage: String,
    when: String,
    target: Target,
    signalled: ActReport,
    signalled_ns: u64,
    deadline_ns: u64,
    /// The configuration changed since it was last judged (a reload): judged again at the
    /// next cycle, before anything else is done.
    stale: bool,
}

impl Pending {
    /// The configuration was replaced: judge the termination again.
    pub(super) fn configuration_changed(&mut self) {
        self.stale = true;
    }
}

/// A `warn` stage's episode: from its warning until its condition has been false for the
/// stage's hold-down (`grace`). One warning per episode: a flapping condition warns once.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct WarnEpisode {
    /// Since when the condition has been false (none while it holds).
    false_since: Option<u64>,
    /// Whether a warning within the episode was held back (said once per episode).
    held_back: bool,
}

/// How a waiting termination ends.
enum Settle {
    /// Its processes exited within the grace.
    Exited,
    /// The configuration in force would not choose its victim: why, and in words.
    Cancelled((CancelReason, String)),
    /// Its grace ended and the configuration in force would still choose it.
    Kill,
}

/// Why the node is tainted.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum TaintCause {
    /// A `taint` stage, by name.
    Stage(String),
    /// A workload killed `events.taintAfterKills` times in the last hour (kills that say
    /// something about the node only: [`ActionRecord::is_node_kill`]).
    Workload(Workload),
    /// oomwarden's taint found on the Node at the start (a daemon restarted while the node was
    /// tainted): held for the taint's hold-down, then let go if nothing else holds it.
    Inherited,
}

/// How long a taint found on the Node at the start is held when no `taint` stage says
/// (`stages[].grace`'s default for `taint`: the kubelet's `evictionPressureTransitionPeriod`).
const INHERITED_HOLD: std::time::Duration = std::time::Duration::from_secs(300);

/// What a cycle of the stages knows besides the engine.
pub(super) struct StageCycle<'a> {
    pub(super) plan: Plan,
    pub(super) identities: &'a Arc<Identities>,
    pub(super) identity_age: Option<std::time::Duration>,
    pub(super) now_ns: u64,
    pub(super) wall: &'a str,
}

impl Engine {
    /// Each stage's condition on `context`; one that fails to evaluate is false (said at most
    /// once a minute per stage).
    pub(super) fn stage_conditions(&mut self, context: &TriggerContext, now_ns: u64) -> Vec<bool> {
        let stages = &self.settings.warden.stages;
        let mut held = Vec::with_capacity(stages.len());
        for stage in stages {
            match stage.when.eval(context) {
                Ok(h) => held.push(h),
                Err(error) => {
                    if let Some(left_out) =
                        self.limiter.admit(&format!("stage:{}", stage.name), now_ns)
                    {
                        tracing::error!(stage = %stage.name, %error, left_out, "cannot evaluate a stage's condition; taken as false");
                    }
                    held.push(false);
                }
            }
        }
        held
    }

    /// Remembers the conditions of a cycle in which the stages do not act (the trigger
    /// fired): a condition true all along then acts no more once the trigger stops.
    pub(super) fn note_stage_conditions(&mut self, context: Option<&TriggerContext>, now_ns: u64) {
        if self.settings.warden.stages.is_empty() {
            return;
        }
        if let Some(context) = context {
            self.stage_held = self.stage_conditions(context, now_ns);
        }
        // The trigger's kill supersedes a termination waiting for its victim.
        if let Some(p) = self.pending.take() {
            tracing::info!(stage = %p.stage, cgroup = %p.target.path, "the trigger fired: the stage's termination is no longer waited for");
        }
    }

    /// In a cycle whose trigger did not fire: a waiting termination settled (its victim
    /// exited, or its grace ended), else the first stage whose condition became true acts.
    /// The outcome when a record was made.
    pub(super) fn run_stages(&mut self, cycle: StageCycle<'_>) -> Option<CycleOutcome> {
        let events = &self.settings.warden.events;
        let repeated_kills = events.enabled && events.taint_after_kills > 0;
        self.inherit_taint(cycle.now_ns);
        if self.settings.warden.stages.is_empty()
            && self.pending.is_none()
            && self.taint_holders.is_empty()
            && !repeated_kills
        {
            return None;
        }
        let context = cycle.plan.context.clone()?;
        let held = self.stage_conditions(&context, cycle.now_ns);
        self.stage_held.resize(held.len(), false);
        self.end_warn_episodes(&held, cycle.now_ns);
        if let Some(p) = self.pending.take() {
            let exited = oomwarden_actuate::order_empty(
                self.collector.cgroups(),
                &p.target.dir,
                &p.target.parts,
            );
            let due = cycle.now_ns >= p.deadline_ns;
            if exited {
                return Some(self.settle(p, Settle::Exited, &cycle));
            }
            if due || p.stale {
                // Under the configuration in force now, which is the one a kill would be
                // sent under (a reload happens between cycles, never inside one).
                if let Err(why) = self.would_choose(&p, cycle.identities, cycle.now_ns) {
                    return Some(self.settle(p, Settle::Cancelled(why), &cycle));
                }
            }
            if due {
                return Some(self.settle(p, Settle::Kill, &cycle));
            }
            self.pending = Some(Pending { stale: false, ..p });
        }
        if let Some(outcome) = self.release_taints(&held, &context, &cycle) {
            return Some(outcome);
        }
        if let Some(outcome) = self.taint_for_repeated_kills(&context, &cycle) {
            return Some(outcome);
        }
        let mut outcome = None;
        for (i, &now) in held.iter().enumerate() {
            let rising = now && !self.stage_held.get(i).copied().unwrap_or(false);
            if !rising || outcome.is_some() {
                // A condition that became true in a cycle another stage acted in acts on a
                // later cycle: it is not remembered as held yet.
                if !rising {
                    self.set_held(i, now);
                }
                continue;
            }
            // Cloned only when it acts (a quiet cycle copies nothing).
            let Some(stage) = self.settings.warden.stages.get(i).cloned() else {
                continue;
            };
            let stage = &stage;
            match stage.action {
                StageAction::Warn => {
                    if let Some(episode) = self.warn_episodes.get_mut(&stage.name) {
                        // Within the episode of its last warning: held back.
                        if !std::mem::replace(&mut episode.held_back, true) {
                            tracing::info!(stage = %stage.name, hold_down = ?stage.grace, "stage condition holds again within its hold-down: no new warning until it has been false that long");
                        }
                    } else {
                        outcome = Some(self.warn(stage, &context, &cycle));
                        self.warn_episodes
                            .insert(stage.name.clone(), WarnEpisode::default());
                    }
                    self.set_held(i, true);
                }
                StageAction::Taint => {
                    tracing::warn!(stage = %stage.name, when = %stage.when.source(), "stage condition holds: tainting the node");
                    self.taint_holders
                        .insert(TaintCause::Stage(stage.name.clone()), None);
                    let mut record =
                        self.stage_record(stage.when.source(), &context, None, None, &cycle);
                    record.outcome = Outcome::Tainted;
                    record.stage = Some(stage.name.clone());
                    outcome = Some(self.report_stage(record, None, &cycle));
                    self.set_held(i, true);
                }
                // One termination at a time: this one acts once the other is settled.
                StageAction::Terminate if self.pending.is_some() => {}
                StageAction::Terminate => {
                    // Signals sent, or nobody to send them to: the cycle may stay quiet.
                    outcome = self.start_termination(stage, &context, &cycle);
                    self.set_held(i, true);
                }
            }
        }
        outcome
    }

    /// Ends the episodes of the `warn` stages whose condition has been false for their
    /// hold-down (and of stages gone at a reload): each may warn again.
    fn end_warn_episodes(&mut self, held: &[bool], now_ns: u64) {
        if self.warn_episodes.is_empty() {
            return;
        }
        let stages = &self.settings.warden.stages;
        self.warn_episodes.retain(|name, episode| {
            let Some((i, stage)) = stages
                .iter()
                .enumerate()
                .find(|(_, s)| &s.name == name && s.action == StageAction::Warn)
            else {
                return false;
            };
            if held.get(i).copied().unwrap_or(false) {
                episode.false_since = None;
                return true;
            }
            let since = *episode.false_since.get_or_insert(now_ns);
            let hold = u64::try_from(stage.grace.as_nanos()).unwrap_or(u64::MAX);
            now_ns.saturating_sub(since) < hold
        });
    }

    /// Once the Events sender has read the Node: oomwarden's taint found there (put by a
    /// daemon before this start, whose causes died with it) is held as [`TaintCause::Inherited`]
    /// for the hold-down, then released like any cause, so a restart never leaves the node
    /// tainted for ever.
    fn inherit_taint(&mut self, now_ns: u64) {
        if self.taint_inherited {
            return;
        }
        let Some(found) = self.events.as_ref().and_then(|e| e.taint_found_at_start()) else {
            return;
        };
        self.taint_inherited = true;
        if found {
            self.taint_holders
                .insert(TaintCause::Inherited, Some(now_ns));
        }
    }

    /// The taint's hold-down: the longest `grace` of the `taint` stages, else
    /// [`INHERITED_HOLD`].
    fn taint_hold(&self) -> std::time::Duration {
        self.settings
            .warden
            .stages
            .iter()
            .filter(|s| s.action == StageAction::Taint)
            .map(|s| s.grace)
            .max()
            .unwrap_or(INHERITED_HOLD)
    }

    /// Lets go of the taint's causes that ended: a `taint` stage whose condition has been
    /// false for its hold-down (or that is gone at a reload), a workload whose kills in the
    /// last hour fell below `events.taintAfterKills`. When none holds it any more, the record
    /// `untainted` (the taint removed).
    fn release_taints(
        &mut self,
        held: &[bool],
        context: &TriggerContext,
        cycle: &StageCycle<'_>,
    ) -> Option<CycleOutcome> {
        if self.taint_holders.is_empty() {
            return None;
        }
        let now = cycle.now_ns;
        let kills = self.history.node_workload_kills(now);
        let after = u64::from(self.settings.warden.events.taint_after_kills);
        let inherited_hold = u64::try_from(self.taint_hold().as_nanos()).unwrap_or(u64::MAX);
        let stages = &self.settings.warden.stages;
        let mut released = None;
        let holders = std::mem::take(&mut self.taint_holders);
        for (cause, false_since) in holders {
            let keep = match &cause {
                TaintCause::Stage(name) => {
                    let found = stages
                        .iter()
                        .enumerate()
                        .find(|(_, s)| &s.name == name && s.action == StageAction::Taint);
                    match found {
                        Some((i, _)) if held.get(i).copied().unwrap_or(false) => Some(None),
                        Some((_, stage)) => {
                            let since = false_since.unwrap_or(now);
                            let hold = u64::try_from(stage.grace.as_nanos()).unwrap_or(u64::MAX);
                            (now.saturating_sub(since) < hold).then_some(Some(since))
                        }
                        None => None,
                    }
                }
                TaintCause::Workload(w) => (after > 0 && kills.get(w) >= after).then_some(None),
                TaintCause::Inherited => {
                    let since = false_since.unwrap_or(now);
                    (now.saturating_sub(since) < inherited_hold).then_some(Some(since))
                }
            };
            match keep {
                Some(since) => {
                    self.taint_holders.insert(cause, since);
                }
                None => {
                    tracing::info!(cause = ?cause, "a cause of the node's taint ended");
                    released = Some(cause);
                }
            }
        }
        let cause = released.filter(|_| self.taint_holders.is_empty())?;
        let when = match &cause {
            TaintCause::Stage(name) => stages
                .iter()
                .find(|s| &s.name == name)
                .map_or_else(String::new, |s| s.when.source().to_owned()),
            TaintCause::Workload(_) | TaintCause::Inherited => String::new(),
        };
        let mut record = self.stage_record(&when, context, None, None, cycle);
        record.outcome = Outcome::Untainted;
        match cause {
            TaintCause::Stage(name) => record.stage = Some(name),
            TaintCause::Workload(w) => record.workload = Some(w),
            // Neither: the record says the taint from before the start is removed.
            TaintCause::Inherited => {}
        }
        tracing::warn!("nothing holds the node's taint any more: removing it");
        Some(self.report_stage(record, None, cycle))
    }

    /// A workload killed `events.taintAfterKills` times in the last hour (and not yet holding
    /// the taint) taints the node: the record `tainted` naming it. Only kills that say
    /// something about the node count (oomwarden's own, the kernel's global ones); never in a
    /// dry run, which changes nothing on the node or in the cluster.
    fn taint_for_repeated_kills(
        &mut self,
        context: &TriggerContext,
        cycle: &StageCycle<'_>,
    ) -> Option<CycleOutcome> {
        let after = u64::from(self.settings.warden.events.taint_after_kills);
        if after == 0 || !self.settings.warden.events.enabled || self.settings.warden.dry_run {
            return None;
        }
        let kills = self.history.node_workload_kills(cycle.now_ns);
        let (workload, n) = kills.iter().find(|(w, n)| {
            *n >= after
                && !self
                    .taint_holders
                    .contains_key(&TaintCause::Workload((*w).clone()))
        })?;
        let workload = workload.clone();
        tracing::warn!(%workload, kills = n, "one workload killed again and again: tainting the node");
        self.taint_holders
            .insert(TaintCause::Workload(workload.clone()), None);
        let mut record = self.stage_record("", context, None, None, cycle);
        record.outcome = Outcome::Tainted;
        record.workload = Some(workload);
        record.workload_kills = Some(n);
        record.trigger_expression = None;
        Some(self.report_stage(record, None, cycle))
    }

    fn set_held(&mut self, i: usize, held: bool) {
        if let Some(h) = self.stage_held.get_mut(i) {
            *h = held;
        }
    }

    /// A `warn` stage's record (`warned`), reported as any record is.
    fn warn(
        &mut self,
        stage: &Stage,
        context: &TriggerContext,
        cycle: &StageCycle<'_>,
    ) -> CycleOutcome {
        tracing::warn!(stage = %stage.name, when = %stage.when.source(), "stage condition holds: warning");
        let mut record = self.stage_record(stage.when.source(), context, None, None, cycle);
        record.outcome = Outcome::Warned;
        record.stage = Some(stage.name.clone());
        self.report_stage(record, None, cycle)
    }

    /// A `terminate` stage: the ranking's victim is sent SIGTERM (its containers; the whole
    /// cgroup when it is no pod) and waited for across cycles. A record now only for a dry
    /// run (what would be terminated); `None` when signals went out or nobody is eligible.
    fn start_termination(
        &mut self,
        stage: &Stage,
        context: &TriggerContext,
        cycle: &StageCycle<'_>,
    ) -> Option<CycleOutcome> {
        let (mut candidates, problems) = self.collector.candidates();
        self.log_problems(problems, cycle.now_ns);
        if self
            .settings
            .oom
            .ranking
            .reads(oomwarden_model::RankingVar::DMemoryCurrent.name())
        {
            self.state.growth_mut().fill(cycle.now_ns, &mut candidates);
        }
        let workload_kills = self.ranking_workload_kills(cycle.now_ns);
        let ranking = oomwarden_policy::rank_with(
            &self.settings.oom.ranking,
            &candidates,
            cycle.identities,
            &workload_kills,
            super::guards(&self.settings),
        );
        let Some(chosen) = oomwarden_policy::select(
            &ranking,
            &candidates,
            self.settings.oom.strict_class_ordering,
        ) else {
            tracing::warn!(stage = %stage.name, "stage condition holds, but no cgroup is eligible to terminate");
            return None;
        };
        let victim = candidates.get(chosen.index)?;
        let target = Target::read(
            victim,
            chosen.score,
            (self.collector.cgroups(), &self.proc),
            cycle.identities,
            KillScope::Containers,
        );
        let dry_run = self.settings.warden.dry_run;
        let order = Order {
            dir: &target.dir,
            cgroup_id: target.cgroup_id,
            parts: target.parts.clone(),
            dry_run,
            timeout: stage.grace,
            method: self.settings.warden.kill_method,
            pre_kill: None,
        };
        let signalled = oomwarden_actuate::terminate(
            self.actuator.as_mut(),
            self.collector.cgroups(),
            &self.proc,
            &order,
        );
        match signalled.outcome {
            ActOutcome::DryRun => {
                let plan = Plan {
                    context: Some(context.clone()),
                    decision: Decision::Victim {
                        index: chosen.index,
                        score: chosen.score,
                    },
                    candidates,
                    ranking: Some(ranking),
                };
                let mut record = self.stage_record(
                    stage.when.source(),
                    context,
                    Some((&target, signalled)),
                    Some(&plan),
                    cycle,
                );
                record.stage = Some(stage.name.clone());
                Some(self.report_stage(record, Some(&target), cycle))
            }
            ActOutcome::Gone(reason) => {
                tracing::warn!(stage = %stage.name, cgroup = %target.path, %reason, "the cgroup to terminate is gone");
                None
            }
            _ => {
                let grace_ns = u64::try_from(stage.grace.as_nanos()).unwrap_or(u64::MAX);
                self.pending = Some(Pending {
                    stage: stage.name.clone(),
                    when: stage.when.source().to_owned(),
                    target,
                    signalled,
                    signalled_ns: cycle.now_ns,
                    deadline_ns: cycle.now_ns.saturating_add(grace_ns),
                    stale: false,
                });
                None
            }
        }
    }

    /// Whether the configuration in force would choose `p`'s victim now; why not, when it
    /// would not (with the ranking's own words for an exemption).
    fn would_choose(
        &mut self,
        p: &Pending,
        identities: &Arc<Identities>,
        now_ns: u64,
    ) -> Result<(), (CancelReason, String)> {
        if self.settings.warden.dry_run {
            return Err((CancelReason::DryRun, "dryRun is true".to_owned()));
        }
        if !self
            .settings
            .warden
            .stages
            .iter()
            .any(|s| s.name == p.stage && s.action == StageAction::Terminate)
        {
            return Err((
                CancelReason::StageRemoved,
                format!("no terminate stage named {:?} any more", p.stage),
            ));
        }
        let (mut candidates, problems) = self.collector.candidates();
        self.log_problems(problems, now_ns);
        let Some(index) = candidates.iter().position(|c| c.dir == p.target.dir) else {
            return Err((
                CancelReason::NotACandidate,
                "no candidate of the layout in force".to_owned(),
            ));
        };
        if self
            .settings
            .oom
            .ranking
            .reads(oomwarden_model::RankingVar::DMemoryCurrent.name())
        {
            self.state.growth_mut().fill(now_ns, &mut candidates);
        }
        let workload_kills = self.ranking_workload_kills(now_ns);
        let ranking = oomwarden_policy::rank_with(
            &self.settings.oom.ranking,
            &candidates,
            identities,
            &workload_kills,
            super::guards(&self.settings),
        );
        match ranking.verdict(index) {
            // Its processes are exiting: the kill finds what is left, if anything.
            Verdict::Eligible(_) | Verdict::Excluded(oomwarden_policy::Exclusion::Empty) => Ok(()),
            other => Err((CancelReason::Exempt, other.reason())),
        }
    }

    /// A termination's end: `terminated` when its processes exited within the grace,
    /// `cancelled` when the configuration in force would not choose its victim, else the kill
    /// (as the trigger's: the kill method, the pre-kill hook, the verification).
    fn settle(&mut self, p: Pending, how: Settle, cycle: &StageCycle<'_>) -> CycleOutcome {
        let context = cycle.plan.context.clone().unwrap_or_default();
        let mut report = p.signalled;
        report.duration = Some(std::time::Duration::from_nanos(
            cycle.now_ns.saturating_sub(p.signalled_ns),
        ));
        let mut record = match how {
            Settle::Exited => {
                // Memory is being freed, as after the trigger's kill: the trigger's cooldown
                // starts (its pressure averages lag; without it the next cycle could kill
                // another).
                self.state.triggered(cycle.now_ns);
                tracing::info!(stage = %p.stage, cgroup = %p.target.path, "the stage's victim exited after SIGTERM");
                let mut record =
                    self.stage_record(&p.when, &context, Some((&p.target, report)), None, cycle);
                record.outcome = Outcome::Terminated;
                record.error = None;
                record
            }
            Settle::Cancelled((reason, detail)) => {
                tracing::warn!(stage = %p.stage, cgroup = %p.target.path, reason = reason.name(), %detail, "the configuration in force would not choose the stage's victim: it is not killed");
                let mut record =
                    self.stage_record(&p.when, &context, Some((&p.target, report)), None, cycle);
                record.outcome = Outcome::Cancelled;
                record.cancel_reason = Some(reason);
                record.error = Some(detail);
                record
            }
            Settle::Kill => {
                self.state.triggered(cycle.now_ns);
                tracing::warn!(stage = %p.stage, cgroup = %p.target.path, "the stage's victim did not exit within its grace: killing it");
                let id = self.history.next_id();
                let acted = self.act(id, &p.target);
                self.stage_record(&p.when, &context, Some((&p.target, acted)), None, cycle)
            }
        };
        record.stage = Some(p.stage);
        self.report_stage(record, Some(&p.target), cycle)
    }

    /// The record of a stage's action, as the trigger's is made (the stage's condition as its
    /// trigger expression).
    fn stage_record(
        &mut self,
        when: &str,
        context: &TriggerContext,
        victim: Option<(&Target, ActReport)>,
        plan: Option<&Plan>,
        cycle: &StageCycle<'_>,
    ) -> ActionRecord {
        let id = self.history.next_id();
        self.end_recorded_cycle(cycle.now_ns);
        let recording = self.recorder.as_ref().and_then(|r| r.save(id));
        let runners_up = plan
            .map(|p| {
                report::runners_up(p, self.settings.oom.strict_class_ordering, cycle.identities)
            })
            .unwrap_or_default();
        let c = report::Cycle {
            id,
            time: cycle.wall,
            monotonic_ns: cycle.now_ns,
            context: Some(context),
            wakeup: self.wakeup,
            recording: recording.as_deref(),
            trigger_expression: when,
            ranking_expression: self.settings.oom.ranking.source(),
            eligible: plan.and_then(|p| p.ranking.as_ref().map(|r| r.eligible.len())),
            excluded: report::excluded(plan.and_then(|p| p.ranking.as_ref())),
            runners_up,
            identity_age: cycle.identity_age,
            kill_method: self.settings.warden.kill_method,
        };
        report::record(&c, victim)
    }

    fn report_stage(
        &mut self,
        record: ActionRecord,
        target: Option<&Target>,
        cycle: &StageCycle<'_>,
    ) -> CycleOutcome {
        let plan = Plan {
            context: cycle.plan.context.clone(),
            decision: Decision::Quiet,
            candidates: Vec::new(),
            ranking: None,
        };
        self.report(record, target, plan)
    }
}
