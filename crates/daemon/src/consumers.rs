//! What takes each action record once it is built: the metrics, the history, the Kubernetes
//! Events and the post-kill hook, each a [`Consumer`] that the report step iterates in that
//! order (the history before the Events and the hook: nothing outside the node delays or loses
//! a record). A new consumer is a type implementing [`Consumer`] and its place in
//! `Engine::report`'s list.

use std::collections::HashSet;
use std::sync::Arc;

use oomwarden_actuate::{HookCall, HookEvent, Hooks};
use oomwarden_config::WardenSettings;
use oomwarden_model::ActionRecord;

use crate::history::History;
use crate::metrics::{Bound, Metrics};
use crate::report::{self, Target};

/// Takes each action record, once.
pub(crate) trait Consumer {
    /// Takes `record` (of `target`, the victim, when there was one); a bound it hits is
    /// counted in `bounds`.
    fn consume(&mut self, record: &ActionRecord, target: Option<&Target>, bounds: &mut BoundLog);
}

/// The bounds hit: counted in the metrics, each logged the first time.
#[derive(Debug)]
pub(crate) struct BoundLog {
    metrics: Arc<Metrics>,
    logged: HashSet<Bound>,
}

impl BoundLog {
    pub(crate) fn new(metrics: Arc<Metrics>) -> Self {
        BoundLog {
            metrics,
            logged: HashSet::new(),
        }
    }

    /// Counts `times` hits of `bound` and logs `message` the first time.
    pub(crate) fn hit(&mut self, bound: Bound, times: usize, message: &'static str) {
        if times == 0 {
            return;
        }
        self.metrics
            .bound_hits_by(bound, u64::try_from(times).unwrap_or(u64::MAX));
        if self.logged.insert(bound) {
            tracing::warn!(bound = bound.name(), "{message}");
        }
    }
}

/// The metrics: the kill (or the firing with no victim) and the record's own bounds.
impl Consumer for Arc<Metrics> {
    fn consume(&mut self, record: &ActionRecord, _: Option<&Target>, bounds: &mut BoundLog) {
        self.action(record);
        if record.pids_omitted > 0 {
            bounds.hit(
                Bound::RecordPids,
                1,
                "a record lists the first PIDs only (all were killed); the others are counted (logged once)",
            );
        }
        if record.processes_omitted > 0 {
            bounds.hit(
                Bound::RecordProcesses,
                1,
                "a record lists the command lines of the first processes only; the others are counted (logged once)",
            );
        }
        let cut = record
            .processes
            .iter()
            .filter(|p| p.ends_with(oomwarden_procfs::CMDLINE_CUT_SUFFIX))
            .count();
        bounds.hit(
            Bound::CmdlineBytes,
            cut,
            "a command line was cut in a record (logged once)",
        );
        if record.containers.len() == oomwarden_model::MAX_CONTAINERS_LISTED {
            bounds.hit(
                Bound::RecordContainers,
                1,
                "a record lists the first container IDs only (logged once)",
            );
        }
    }
}

/// The history: the record appended (kept in memory when the file cannot be written).
impl Consumer for History {
    fn consume(&mut self, record: &ActionRecord, _: Option<&Target>, bounds: &mut BoundLog) {
        let compactions = self.compactions();
        if let Err(e) = self.push(record.clone()) {
            tracing::error!(error = %e, "cannot persist action record; it is kept in memory");
        }
        if self.compactions() > compactions {
            bounds.hit(
                Bound::History,
                1,
                "the action history reached its bound and was rewritten with its newest records (logged once)",
            );
        }
    }
}

/// The Kubernetes Events: offered to their own thread, never waited for.
impl Consumer for Option<oomwarden_events::Events> {
    fn consume(&mut self, record: &ActionRecord, _: Option<&Target>, _: &mut BoundLog) {
        if let Some(events) = self {
            events.offer(record);
        }
    }
}

/// The post-kill hook, started with the record on its standard input, not waited for.
pub(crate) struct PostKill<'a> {
    pub(crate) hooks: &'a mut dyn Hooks,
    pub(crate) settings: &'a WardenSettings,
}

impl Consumer for PostKill<'_> {
    fn consume(&mut self, record: &ActionRecord, target: Option<&Target>, bounds: &mut BoundLog) {
        let (Some(hook), Some(target)) = (&self.settings.hooks.post_kill, target) else {
            return;
        };
        let call = HookCall {
            event: HookEvent::PostKill,
            argv: hook.command.clone(),
            env: report::hook_env(
                HookEvent::PostKill,
                self.settings.dry_run,
                record.id,
                target,
                Some(record),
            ),
            stdin: serde_json::to_vec(record).unwrap_or_default(),
            timeout: hook.timeout,
        };
        let skipped = self.hooks.skipped();
        self.hooks.spawn_hook(call);
        let now_skipped = self.hooks.skipped();
        bounds.hit(
            Bound::HooksInFlight,
            usize::try_from(now_skipped.saturating_sub(skipped)).unwrap_or(usize::MAX),
            "a post-kill hook was skipped: as many as may are running (32)",
        );
    }
}
