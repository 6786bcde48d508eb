//! One cycle of the OOM handler, with everything it needs, and no clock or sleep of its own
//! except the bounded wait that verifies a kill.
//!
//! ```text
//! metrics ──▶ context ──▶ trigger? ──no──▶ done
//!                            │ yes: "OOM controller triggered"
//!             candidates ──▶ rank ──▶ select ──none──▶ "no eligible cgroup to kill"
//!                                        │ victim
//!                       dry run? ──yes──▶ record dry-run
//!                                        │ no
//!                       kill + verify (blocks ≤ killTimeout: no second victim meanwhile)
//!                                        ▼
//!                              record (memory + actions.jsonl)
//! ```

use std::sync::Arc;

use oomwarden_actuate::{
    ActOutcome, ActReport, Actuator, Clock, HookCall, HookEvent, Hooks, Order, SystemClock,
};
use oomwarden_collect::{Collector, Problem};
use oomwarden_config::Settings;
use oomwarden_model::{
    ActionRecord, CandidateSample, Identities, KillMethod, KillScope, MetricsSample, QosClass,
    TriggerContext, Wakeup,
};
use oomwarden_policy::{Decision, Exclusion, Plan, Rules, Skip, State};
use oomwarden_procfs::ProcFs;

mod stages;

use crate::consumers::{BoundLog, Consumer, PostKill};
use crate::history::History;
use crate::metrics::{Bound, Metrics};
use crate::ratelimit::LogLimiter;
use crate::recorder::CycleRecorder;
use crate::report::{self, Target};

/// How often the same read problem may be logged.
const PROBLEM_LOG_EVERY_NS: u64 = 60_000_000_000;

/// What a cycle did: the daemon's (`Acted` holds the record written) and a replay's
/// (`Acted` holds the index of its triggered cycle).
#[derive(Debug, Clone, PartialEq)]
pub enum CycleOutcome<A = Box<ActionRecord>> {
    /// The metrics could not be turned into a context, or the trigger failed to evaluate.
    Skipped(Skip),
    /// The trigger was false.
    Quiet,
    /// The trigger fired.
    Acted(A),
}

/// One candidate of a triggered cycle, as ranked.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedCandidate {
    /// Absolute cgroup path.
    pub path: String,
    /// Its class.
    pub class: QosClass,
    /// Its score, when the ranking expression gave one.
    pub score: Option<f64>,
    /// Whether it could be chosen.
    pub eligible: bool,
    /// Why it could or could not (`eligible`, `no live process`, …).
    pub reason: String,
}

/// How long after asking the kernel's OOM killer its kills in that cgroup are taken for the
/// ones asked for (`orderedBy`): the kill comes within `killTimeout` (at most 60 s), its
/// report within a second of it.
pub(crate) const ORDERED_FOR_NS: u64 = 120_000_000_000;

/// Long-lived daemon state for running cycles.
pub struct Engine {
    settings: Settings,
    collector: Collector,
    proc: ProcFs,
    state: State,
    history: History,
    actuator: Box<dyn Actuator + Send>,
    hooks: Box<dyn Hooks + Send>,
    /// Times a kill's verification (the real clock but in replays and tests).
    clock: Box<dyn Clock + Send>,
    /// In a replay: when the recorded daemon's trigger of the coming cycle fired (the time
    /// its cooldown counts from), if it fired.
    recorded_trigger: Option<u64>,
    /// Lines that could repeat every cycle: once a minute per key (see `ratelimit`).
    limiter: LogLimiter,
    /// Bounds already said in the log (each is said once).
    /// The bounds hit, counted and logged once.
    bounds: BoundLog,
    metrics: Arc<Metrics>,
    /// What woke the current cycle (`tick` or `pressure`), for its record.
    wakeup: Wakeup,
    /// Records what the cycles read (`run --record`, the flight recorder).
    recorder: Option<CycleRecorder>,
    /// Every file a trigger may read is read (a replay: it must compute what the recording's
    /// daemon computed, whatever this configuration's trigger names).
    read_everything: bool,
    /// Who the node's pods are (none: only what cgroup paths say).
    identity: Option<oomwarden_identity::Cache>,
    /// Kubernetes Events for the kills (`events.enabled`).
    events: Option<oomwarden_events::Events>,
    /// Counts of the senders replaced by a reload, so the metrics keep counting forward.
    events_before: oomwarden_events::Counts,
    /// Whether each response stage's condition held at its last evaluation (a stage acts
    /// when its condition becomes true).
    stage_held: Vec<bool>,
    /// A `terminate` stage's victim, sent SIGTERM, waiting for its processes to exit.
    pending: Option<stages::Pending>,
    /// What holds the node's taint (`taint` stages, workloads killed again and again), each
    /// with, for a stage, since when its condition has been false.
    taint_holders: std::collections::BTreeMap<stages::TaintCause, Option<u64>>,
    /// Whether what the Node carried at the start has been taken in (`stages::inherit_taint`).
    taint_inherited: bool,
    /// The `warn` stages within the episode of their last warning, by name.
    warn_episodes: std::collections::BTreeMap<String, stages::WarnEpisode>,
    /// The cgroups whose kill was asked of the kernel's OOM killer (`killMethod: kernel-oom`)
    /// in the last [`ORDERED_FOR_NS`]: (cgroup dir, record id, when).
    ordered: Vec<(String, u64, u64)>,
    /// When the candidate directories were last named ([`Self::look_for_new_pods`]).
    last_pod_scan_ns: Option<u64>,
    /// The identities this cycle ranks with, for the recording.
    cycle_identities: Option<Arc<Identities>>,
    /// The last cycle's trigger context.
    last_context: Option<TriggerContext>,
    /// The last triggered cycle's candidates and ranking (moved here at the end of the cycle:
    /// the ranked list is built only when asked for).
    last_ranking: Option<(Vec<CandidateSample>, oomwarden_policy::Ranking)>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("collector", &self.collector)
            .finish_non_exhaustive()
    }
}

/// The files a cycle reads beyond Talos's: those whose variables the trigger names, or all of
/// them while recording (a replay may run another trigger).
fn reads_for(settings: &Settings, recording: bool) -> oomwarden_collect::Reads {
    if recording {
        return oomwarden_collect::Reads::ALL;
    }
    // The trigger's variables, the stages' (the same environment) and the ranking's.
    oomwarden_collect::Reads::for_sources(
        settings
            .variables_read()
            .into_iter()
            .map(|(_, source)| source),
    )
}

/// What an engine is made of, given all at once to [`Engine::new`] (no setter order to get
/// right). [`EngineParts::new`] has the required parts; the optional ones default to none,
/// the real clock, never triggered.
pub struct EngineParts {
    /// The settings in force.
    pub settings: Settings,
    /// The readers of the node, walking its layout.
    pub collector: Collector,
    /// The procfs used for command lines.
    pub proc: ProcFs,
    /// The action history.
    pub history: History,
    /// What kills.
    pub actuator: Box<dyn Actuator + Send>,
    /// What runs the hooks.
    pub hooks: Box<dyn Hooks + Send>,
    /// Times a kill's verification: the real clock but in replays and tests.
    pub clock: Box<dyn Clock + Send>,
    /// Records every cycle's reads (`run --record`, the flight recorder). The collector must
    /// read through its tap. Candidates are then read in every cycle, so that a replay under
    /// another trigger finds them.
    pub recorder: Option<CycleRecorder>,
    /// Who the pods are.
    pub identity: Option<oomwarden_identity::Cache>,
    /// Sends Kubernetes Events for the kills.
    pub events: Option<oomwarden_events::Events>,
    /// The cooldown as if the trigger had fired then: at start, from the history's last
    /// record of this boot; in a replay, for a window that begins after a trigger.
    pub last_trigger_ns: Option<u64>,
    /// Read every file any trigger variable comes from, whatever the trigger names: what a
    /// replay does, so that its contexts are the recording daemon's.
    pub read_everything: bool,
}

impl EngineParts {
    /// The required parts; the rest none, the real clock, never triggered.
    pub fn new(
        settings: Settings,
        collector: Collector,
        proc: ProcFs,
        history: History,
        actuator: Box<dyn Actuator + Send>,
        hooks: Box<dyn Hooks + Send>,
    ) -> Self {
        EngineParts {
            settings,
            collector,
            proc,
            history,
            actuator,
            hooks,
            clock: Box::new(SystemClock),
            recorder: None,
            identity: None,
            events: None,
            last_trigger_ns: None,
            read_everything: false,
        }
    }
}

impl std::fmt::Debug for EngineParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineParts")
            .field("collector", &self.collector)
            .finish_non_exhaustive()
    }
}

/// What no ranking may choose, as the settings say (`protect`).
pub fn guards(settings: &Settings) -> oomwarden_policy::Guards {
    oomwarden_policy::Guards {
        node_critical: settings.warden.protect.node_critical,
    }
}

/// The directories whose children are pod cgroups (the `kubepods` candidate parents), as
/// node paths: what the identity cache watches for new pods.
pub(crate) fn pod_parents(collector: &Collector) -> Vec<std::path::PathBuf> {
    let root = collector.cgroups().root();
    collector
        .candidate_parents()
        .into_iter()
        .filter(|dir| dir.split('/').any(|c| c.starts_with("kubepods")))
        .map(|dir| root.join(dir))
        .collect()
}

impl Engine {
    /// An engine made of `parts`.
    pub fn new(parts: EngineParts) -> Self {
        let EngineParts {
            settings,
            mut collector,
            proc,
            history,
            actuator,
            hooks,
            clock,
            recorder,
            identity,
            events,
            last_trigger_ns,
            read_everything,
        } = parts;
        let metrics = Arc::new(Metrics::new());
        metrics.settings(settings.oom.sample_interval, settings.warden.dry_run);
        metrics
            .health()
            .set_stale_after(crate::health::stale_after(&settings));
        collector.set_reads(if read_everything {
            oomwarden_collect::Reads::ALL
        } else {
            reads_for(&settings, recorder.is_some())
        });
        let mut state = State::new();
        if let Some(at) = last_trigger_ns {
            state.triggered(at);
        }
        Engine {
            settings,
            collector,
            proc,
            state,
            history,
            actuator,
            hooks,
            clock,
            recorded_trigger: None,
            limiter: LogLimiter::new(PROBLEM_LOG_EVERY_NS),
            bounds: BoundLog::new(Arc::clone(&metrics)),
            metrics,
            wakeup: Wakeup::Tick,
            recorder,
            read_everything,
            identity,
            events,
            events_before: oomwarden_events::Counts::default(),
            ordered: Vec::new(),
            stage_held: Vec::new(),
            pending: None,
            taint_holders: std::collections::BTreeMap::new(),
            taint_inherited: false,
            warn_episodes: std::collections::BTreeMap::new(),
            last_pod_scan_ns: None,
            cycle_identities: None,
            last_context: None,
            last_ranking: None,
        }
    }

    /// Sends Kubernetes Events for the kills from now on (`None`: no more), replacing the
    /// sender running (a reload).
    pub fn set_events(&mut self, events: Option<oomwarden_events::Events>) {
        if let Some(old) = std::mem::replace(&mut self.events, events) {
            self.events_before.add(&old.counts());
            // A taint or its removal not made yet is the new sender's to make.
            if let (Some(update), Some(new)) = (old.unmade_node_update(), &self.events) {
                new.want_node(update);
            }
        }
    }

    /// The Events sender running, if any.
    pub fn events(&self) -> Option<&oomwarden_events::Events> {
        self.events.as_ref()
    }

    fn update_events_metrics(&self) {
        let mut c = self.events.as_ref().map(|e| e.counts()).unwrap_or_default();
        c.add(&self.events_before);
        self.metrics.events(&c);
    }

    /// Names pods from `cache` from now on (a reload); the cache running before is stopped.
    pub fn set_identity(&mut self, cache: oomwarden_identity::Cache) {
        if let Some(old) = self.identity.replace(cache) {
            old.stop();
        }
    }

    /// The identity cache, if any.
    pub fn identity(&self) -> Option<&oomwarden_identity::Cache> {
        self.identity.as_ref()
    }

    /// Ends the recording file, if any (at a clean stop).
    pub fn finish_recording(&mut self) {
        if let Some(r) = &mut self.recorder {
            r.finish();
        }
    }

    /// Forgets what was read outside a cycle, so that the recording holds only the cycles'
    /// reads (call after reading through the engine's readers between cycles).
    pub fn discard_reads(&self) {
        if let Some(r) = &self.recorder {
            r.discard();
        }
    }

    /// The trigger context of the last cycle (none when it could not be built).
    pub fn last_context(&self) -> Option<&TriggerContext> {
        self.last_context.as_ref()
    }

    /// The ranking of the last cycle, in candidate order (empty unless the trigger fired).
    pub fn last_ranking(&self) -> Vec<RankedCandidate> {
        let Some((candidates, ranking)) = &self.last_ranking else {
            return Vec::new();
        };
        candidates
            .iter()
            .zip(ranking.verdicts(candidates.len()))
            .map(|(c, verdict)| RankedCandidate {
                path: c.path.clone(),
                class: c.class,
                score: verdict.score(),
                eligible: verdict.eligible(),
                reason: verdict.reason(),
            })
            .collect()
    }

    /// The cgroups summed into the System and Podruntime classes, as read now (where PSI
    /// triggers are registered).
    pub fn protected_dirs(&self) -> Vec<String> {
        let (sample, _) = self.collector.metrics(0);
        sample
            .subtrees
            .into_iter()
            .filter(|s| {
                matches!(
                    s.class,
                    Some(oomwarden_model::QosClass::System | oomwarden_model::QosClass::Podruntime)
                )
            })
            .map(|s| s.dir)
            .collect()
    }

    /// The node-critical pods among the candidates now (their node path, their pod's name when
    /// known, and why), whether or not `protect.nodeCritical` is on: what the daemon says at
    /// start. Reads the candidates once.
    pub fn node_critical_now(&self) -> Vec<(String, Option<String>, String)> {
        let (candidates, _) = self.collector.candidates();
        let identities = self.identities();
        candidates
            .iter()
            .filter_map(|c| {
                let pod = oomwarden_kube::decode_cgroup_path(&c.dir)
                    .pod_uid
                    .and_then(|uid| identities.pod(&uid).cloned());
                let why = oomwarden_policy::node_critical(c, pod.as_ref())?;
                Some((
                    c.path.clone(),
                    pod.map(|p| p.qualified_name()),
                    why.describe(),
                ))
            })
            .collect()
    }

    /// The engine's metrics (shared with the metrics endpoint).
    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.metrics)
    }

    /// The pod cgroups' parents (absolute): the directories a pod is made in.
    pub fn pod_parents(&self) -> Vec<std::path::PathBuf> {
        pod_parents(&self.collector)
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Swaps in new settings (a reload). Derivative state and the last trigger time are kept,
    /// as in Talos.
    pub fn set_settings(&mut self, settings: Settings) {
        self.metrics
            .settings(settings.oom.sample_interval, settings.warden.dry_run);
        self.metrics
            .health()
            .set_stale_after(crate::health::stale_after(&settings));
        if let Some(r) = &self.recorder {
            // Windows saved from now on name the configuration they will be replayed under.
            r.set_config(settings.to_yaml());
        }
        self.collector.set_reads(reads_for(
            &settings,
            self.recorder.is_some() || self.read_everything,
        ));
        if settings.warden.stages != self.settings.warden.stages {
            // Other stages: each acts when its condition is next found true.
            self.stage_held.clear();
        }
        // A waiting termination is judged again under these settings before anything is
        // sent to its victim (`stages`).
        if let Some(p) = &mut self.pending {
            p.configuration_changed();
        }
        self.settings = settings;
    }

    /// How many candidates' growth readings are kept (the ranking's `d_memory_current`).
    pub fn growth_remembered(&self) -> usize {
        self.state.growth().remembered()
    }

    /// The cgroup hierarchy read.
    pub fn cgroups(&self) -> &oomwarden_cgroupfs::CgroupFs {
        self.collector.cgroups()
    }

    /// The name of the layout in use.
    pub fn layout_name(&self) -> &str {
        &self.collector.layout().name
    }

    /// Switches the layout (a reload); derivative state of vanished subtrees is dropped on the
    /// next cycle.
    pub fn set_layout(&mut self, layout: oomwarden_model::Layout) {
        self.collector.set_layout(layout);
    }

    /// The action history.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Runs one cycle woken by a kernel PSI trigger rather than the tick (recorded as
    /// `wakeup: pressure`).
    pub fn cycle_on_pressure(&mut self, now_ns: u64, wall: &str) -> CycleOutcome {
        self.wakeup = Wakeup::Pressure;
        let outcome = self.cycle(now_ns, wall);
        self.wakeup = Wakeup::Tick;
        outcome
    }

    /// For a replay: when the recorded daemon's trigger fired in the coming cycle (`None`: it
    /// did not, or the recording does not say). Used if this engine's trigger fires there.
    pub fn set_recorded_trigger(&mut self, at_ns: Option<u64>) {
        self.recorded_trigger = at_ns;
    }

    /// Runs one cycle. `now_ns` is the monotonic clock; `wall` the RFC 3339 time for records.
    pub fn cycle(&mut self, now_ns: u64, wall: &str) -> CycleOutcome {
        self.last_context = None;
        self.last_ranking = None;
        let outcome = self.decide(now_ns, wall);
        // An acted cycle was recorded before its record was written (which names the saved
        // window).
        if !matches!(outcome, CycleOutcome::Acted(_)) {
            self.end_recorded_cycle(now_ns);
        }
        outcome
    }

    fn end_recorded_cycle(&mut self, now_ns: u64) {
        let identities = self.cycle_identities.take();
        if let Some(r) = &mut self.recorder {
            r.end_cycle(now_ns, self.wakeup, identities);
        }
    }

    /// One cycle: read, plan (pure, in `policy`), act, report.
    fn decide(&mut self, now_ns: u64, wall: &str) -> CycleOutcome {
        let sample = match self.read_sample(now_ns) {
            Ok(sample) => sample,
            Err(skip) => return CycleOutcome::Skipped(skip),
        };
        self.update_events_metrics();
        // One snapshot for the whole cycle: the ranking and the record name the same pods.
        // Right after a start the first refresh may be under way: waited for, bounded, so the
        // first ranking never runs on an empty cache (it killed a protected pod 8 ms before
        // the runtime's first answer). Once answered this is one lock.
        let mut identity_age = None;
        let identities = match &self.identity {
            Some(cache) => {
                cache.wait_first_answer();
                let health = cache.health();
                identity_age = health.age;
                self.metrics.identity(health);
                cache.snapshot()
            }
            None => Arc::default(),
        };
        if self.identity.is_some() {
            self.cycle_identities = Some(Arc::clone(&identities));
            self.look_for_new_pods(&identities, now_ns);
        }
        let plan = self.plan(&sample, &identities, now_ns);
        if plan.fired() != Some(true) {
            self.read_growth(now_ns);
        }
        match &plan.decision {
            Decision::Quiet => {
                if self.recorder.is_some() {
                    // For the recording only: a replay under another trigger needs them.
                    let _ = self.collector.candidates();
                }
                let cycle = stages::StageCycle {
                    plan,
                    identities: &identities,
                    identity_age,
                    now_ns,
                    wall,
                };
                return self.run_stages(cycle).unwrap_or(CycleOutcome::Quiet);
            }
            Decision::Skipped(skip) => {
                match skip {
                    Skip::Context(error) => {
                        tracing::error!(%error, "cannot populate PSI context");
                    }
                    Skip::Trigger(error) => {
                        tracing::error!(%error, "cannot evaluate OOM trigger expression");
                    }
                }
                return CycleOutcome::Skipped(skip.clone());
            }
            Decision::NoVictim | Decision::Victim { .. } => {
                self.note_stage_conditions(plan.context.as_ref(), now_ns);
            }
        }
        self.log_ranking(&plan, now_ns);
        let id = self.history.next_id();
        self.ask_about_unknown_pods(&plan, &identities);
        let target = plan.victim().map(|(c, score)| {
            Target::read(
                c,
                score,
                (self.collector.cgroups(), &self.proc),
                &identities,
                self.kill_scope(),
            )
        });
        let started = self.clock.now();
        let acted = target.as_ref().map(|t| self.act(id, t));
        // Talos sets `ActionTriggered` after the kill attempt: the cooldown counts from the end
        // of the kill (its verification can take seconds), not from the cycle's start. A replay
        // takes the time the recording says.
        let after_kill = self.recorded_trigger.take().unwrap_or_else(|| {
            let took = self.clock.now().saturating_duration_since(started);
            now_ns.saturating_add(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX))
        });
        self.state.triggered(after_kill);
        if let Some(r) = &self.recorder {
            r.triggered(after_kill);
        }
        // The flight window ends with this cycle and is saved under the record's id.
        self.end_recorded_cycle(now_ns);
        let recording = self.recorder.as_ref().and_then(|r| r.save(id));
        let cycle = report::Cycle {
            id,
            time: wall,
            monotonic_ns: now_ns,
            context: plan.context.as_ref(),
            wakeup: self.wakeup,
            recording: recording.as_deref(),
            trigger_expression: self.settings.oom.trigger.source(),
            ranking_expression: self.settings.oom.ranking.source(),
            eligible: plan.ranking.as_ref().map(|r| r.eligible.len()),
            excluded: report::excluded(plan.ranking.as_ref()),
            runners_up: report::runners_up(
                &plan,
                self.settings.oom.strict_class_ordering,
                &identities,
            ),
            identity_age,
            kill_method: self.settings.warden.kill_method,
        };
        let record = report::record(&cycle, target.as_ref().zip(acted));
        self.report(record, target.as_ref(), plan)
    }

    /// The cycle's sample; an error when the daemon is out of descriptors or memory (the files
    /// are there and the numbers unknown: reading them as zeros would blind the trigger while
    /// it should fire).
    fn read_sample(&mut self, now_ns: u64) -> Result<MetricsSample, Skip> {
        let (sample, problems) = self.collector.metrics(now_ns);
        let exhausted = problems
            .iter()
            .find(|p| p.is_resource_exhaustion())
            .map(ToString::to_string);
        self.log_problems(problems, now_ns);
        if let Some(problem) = exhausted {
            let error = format!(
                "cannot read the cgroup tree ({problem}); the cycle is skipped, not taken as zeros"
            );
            tracing::error!(%error, "cannot populate PSI context");
            return Err(Skip::Context(error));
        }
        Ok(sample)
    }

    /// The pure plan, with the candidates read (and Talos's "triggered" line written) only
    /// when the trigger fires; the context goes to the metrics.
    fn plan(&mut self, sample: &MetricsSample, identities: &Identities, now_ns: u64) -> Plan {
        let workload_kills = self.ranking_workload_kills(now_ns);
        let rules = Rules {
            trigger: &self.settings.oom.trigger,
            ranking: &self.settings.oom.ranking,
            strict_class_ordering: self.settings.oom.strict_class_ordering,
            identities,
            workload_kills: &workload_kills,
            guards: guards(&self.settings),
        };
        let collector = &self.collector;
        let mut problems = Vec::new();
        let plan = oomwarden_policy::plan(rules, sample, &mut self.state, || {
            tracing::info!("OOM controller triggered");
            let (candidates, read) = collector.candidates();
            problems = read;
            candidates
        });
        self.log_problems(problems, now_ns);
        if let Some(ctx) = &plan.context {
            self.metrics.observe_context(ctx);
            self.last_context = Some(ctx.clone());
        }
        if !matches!(plan.decision, Decision::Skipped(Skip::Context(_))) {
            self.metrics.evaluated(plan.fired());
        }
        plan
    }

    /// Between triggered cycles, once a second, every candidate's `memory.current` when the
    /// ranking names `d_memory_current` (a triggered cycle reads them with the candidates).
    fn read_growth(&mut self, now_ns: u64) {
        if !self.collector.reads().candidate_growth || !self.state.growth().due(now_ns) {
            return;
        }
        let (currents, problems) = self.collector.candidate_currents();
        self.log_problems(problems, now_ns);
        self.state.growth_mut().observe(
            now_ns,
            currents.iter().map(|(dir, bytes)| (dir.as_str(), *bytes)),
        );
    }

    /// Asks the identity cache to refresh soon when a candidate's pod is unknown to it (a pod
    /// started since the last refresh); this cycle goes on with what it has.
    /// Once a second, unless the pod cgroups are watched (inotify, `Cache::watch`), the
    /// candidate directories are named (no file read) and a pod nobody knows asks the
    /// identity cache for a refresh: a pod made since the last refresh is named
    /// within seconds, before a trigger fires, so that a ranking's exemption by namespace or
    /// label holds for it (found in s15: a 30 s refresh left a new kube-system pod unnamed).
    fn look_for_new_pods(&mut self, identities: &Identities, now_ns: u64) {
        const EVERY_NS: u64 = 1_000_000_000;
        if self
            .last_pod_scan_ns
            .is_some_and(|last| now_ns.saturating_sub(last) < EVERY_NS)
        {
            return;
        }
        self.last_pod_scan_ns = Some(now_ns);
        let Some(cache) = &self.identity else {
            return;
        };
        if cache.watching() {
            return; // the kernel says when a pod cgroup is made (Cache::watch)
        }
        let unknown = self.collector.candidate_dirs().iter().any(|dir| {
            oomwarden_kube::decode_cgroup_path(dir)
                .pod_uid
                .is_some_and(|uid| identities.pod(&uid).is_none())
        });
        if unknown {
            cache.refresh_soon();
        }
    }

    fn ask_about_unknown_pods(&self, plan: &Plan, identities: &Identities) {
        let Some(cache) = &self.identity else {
            return;
        };
        let unknown = plan.candidates.iter().any(|c| {
            oomwarden_kube::decode_cgroup_path(&c.dir)
                .pod_uid
                .is_some_and(|uid| identities.pod(&uid).is_none())
        });
        if unknown {
            cache.refresh_soon();
        }
    }

    /// Talos's lines about the candidates of a fired trigger, once a minute per cgroup and
    /// kind (they repeat every triggered cycle), and the ranking's error count.
    fn log_ranking(&mut self, plan: &Plan, now_ns: u64) {
        for c in &plan.candidates {
            for (property, error) in &c.read_errors {
                if let Some(left_out) = self
                    .limiter
                    .admit(&format!("property:{}:{property}", c.dir), now_ns)
                {
                    tracing::error!(dir = %c.path, %property, %error, left_out, "cannot read property for cgroup");
                }
            }
        }
        let Some(ranking) = &plan.ranking else {
            return;
        };
        let failed = ranking
            .excluded
            .iter()
            .filter(|(_, e)| matches!(e, Exclusion::EvalError(_)))
            .count();
        self.metrics
            .ranking_errors(u64::try_from(failed).unwrap_or(u64::MAX));
        for (index, why) in &ranking.excluded {
            let Some(c) = plan.candidates.get(*index) else {
                continue;
            };
            match why {
                Exclusion::EvalError(error) => {
                    if let Some(left_out) = self.limiter.admit(&format!("score:{}", c.dir), now_ns)
                    {
                        tracing::error!(dir = %c.path, %error, left_out, "cannot calculate score for cgroup");
                    }
                }
                Exclusion::Empty => {
                    if let Some(left_out) = self.limiter.admit(&format!("empty:{}", c.dir), now_ns)
                    {
                        tracing::info!(cgroup = %c.path, left_out, "skipping cgroup with no live process");
                    }
                }
                Exclusion::OwnCgroup => {
                    tracing::debug!(cgroup = %c.path, "skipping oomwarden's own cgroup")
                }
                Exclusion::NodeCritical(critical) => {
                    if let Some(left_out) =
                        self.limiter.admit(&format!("critical:{}", c.dir), now_ns)
                    {
                        tracing::info!(cgroup = %c.path, why = %critical.describe(), left_out, "skipping a node-critical pod (protect.nodeCritical)");
                    }
                }
                Exclusion::NotPositive(_) => {}
            }
        }
        if plan.victim().is_none() {
            tracing::warn!(
                ranked = ranking.eligible.len(),
                excluded = ranking.excluded.len(),
                "no eligible cgroup to kill"
            );
        }
    }

    /// What a kill of a pod ends: the kernel's OOM killer ends each container, as when one
    /// reaches its own limit (the sandbox stays).
    fn kill_scope(&self) -> KillScope {
        match self.settings.warden.kill_method {
            KillMethod::Cgroup => self.settings.warden.kill_scope,
            KillMethod::KernelOom => KillScope::Containers,
        }
    }

    /// Acts on the victim: the pre-kill hook, then the kill or the dry run.
    fn act(&mut self, id: u64, target: &Target) -> ActReport {
        let dry_run = self.settings.warden.dry_run;
        let pre_kill = self
            .settings
            .warden
            .hooks
            .pre_kill
            .as_ref()
            .map(|hook| HookCall {
                event: HookEvent::PreKill,
                argv: hook.command.clone(),
                env: report::hook_env(HookEvent::PreKill, dry_run, id, target, None),
                stdin: Vec::new(),
                timeout: hook.timeout,
            });
        let order = Order {
            dir: &target.dir,
            cgroup_id: target.cgroup_id,
            parts: target.parts.clone(),
            dry_run,
            timeout: self.settings.warden.kill_timeout,
            method: self.settings.warden.kill_method,
            pre_kill,
        };
        // The victim's lines name its pod beside Talos's fields.
        let span = match target.pod() {
            Some(pod) => tracing::info_span!("victim", %pod),
            None => tracing::Span::none(),
        };
        let _in_victim = span.enter();
        let acted = oomwarden_actuate::act(
            self.actuator.as_mut(),
            self.hooks.as_mut(),
            self.clock.as_ref(),
            self.collector.cgroups(),
            &self.proc,
            &order,
        );
        if acted.outcome == ActOutcome::DryRun {
            tracing::warn!(cgroup = %target.path, score = target.score, "dry run: would send SIGKILL to cgroup");
        }
        if acted.walk_truncated {
            self.metrics.bound_hit(Bound::VictimWalk);
        }
        if target.parts_bounded {
            self.metrics.bound_hit(Bound::KillParts);
        }
        acted
    }

    /// Reports an action once: metrics, bounds, the history, the post-kill hook, and the
    /// ranking `status` shows.
    fn report(
        &mut self,
        record: ActionRecord,
        target: Option<&Target>,
        plan: Plan,
    ) -> CycleOutcome {
        // Each consumer of the record, in order: the history before anything that leaves the
        // node (Events, the hook), so nothing outside delays or loses a record.
        let mut metrics = Arc::clone(&self.metrics);
        let mut post_kill = PostKill {
            hooks: &mut *self.hooks,
            settings: &self.settings.warden,
        };
        let consumers: [&mut dyn Consumer; 4] = [
            &mut metrics,
            &mut self.history,
            &mut self.events,
            &mut post_kill,
        ];
        for consumer in consumers {
            consumer.consume(&record, target, &mut self.bounds);
        }
        self.remember_ordered(&record, target);
        if let Some(ranking) = plan.ranking {
            self.last_ranking = Some((plan.candidates, ranking));
        }
        CycleOutcome::Acted(Box::new(record))
    }

    /// Records a kill the kernel did (`kind: kernel-oom`): the next id, the history and the
    /// kernel's kill counter; no hook, no cooldown, not one of oomwarden's kills. Returns the
    /// record as written.
    pub fn record_kernel_kill(&mut self, mut record: ActionRecord, kills: u64) -> ActionRecord {
        record.id = self.history.next_id();
        // A kill oomwarden asked for is counted as oomwarden's (`oomwarden_kills_total`).
        if let Some(constraint) = record.constraint
            && record.ordered_by.is_none()
        {
            self.metrics.kernel_oom_kills(constraint, kills);
        }
        // The history alone: a kernel kill is no kill of ours (no kill series, no Event, no
        // hook).
        self.history.consume(&record, None, &mut self.bounds);
        record
    }

    /// Each workload's recent kills for the ranking: counted only for a ranking that reads
    /// `workload_kills` (a quiet cycle then builds nothing).
    fn ranking_workload_kills(&self, now_ns: u64) -> oomwarden_model::WorkloadKills {
        if self.settings.oom.ranking.reads("workload_kills") {
            self.history.workload_kills(now_ns)
        } else {
            oomwarden_model::WorkloadKills::default()
        }
    }

    /// The record of oomwarden's that asked the kernel's OOM killer to end `memcg` (a cgroup
    /// as the kernel log names it, or a path relative to the hierarchy), or one above it, in
    /// the two minutes before `now_ns`.
    pub fn ordered_by(&self, memcg: &str, now_ns: u64) -> Option<u64> {
        let memcg = memcg.trim_matches('/');
        self.ordered
            .iter()
            .rev()
            .filter(|(_, _, at)| now_ns.saturating_sub(*at) <= ORDERED_FOR_NS)
            .find(|(dir, _, _)| {
                memcg == dir
                    || memcg
                        .strip_prefix(dir.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            })
            .map(|(_, id, _)| *id)
    }

    /// Remembers the cgroups `record` asked the kernel's OOM killer to end.
    fn remember_ordered(&mut self, record: &ActionRecord, target: Option<&Target>) {
        let now = record.monotonic_ns;
        self.ordered
            .retain(|(_, _, at)| now.saturating_sub(*at) <= ORDERED_FOR_NS);
        let asked = record.kill_method == Some(KillMethod::KernelOom)
            && matches!(
                record.outcome,
                oomwarden_model::Outcome::Killed | oomwarden_model::Outcome::NotVerified
            );
        if let (true, Some(t)) = (asked, target) {
            let dirs: Vec<String> = if t.parts.is_empty() {
                vec![t.dir.clone()]
            } else {
                t.parts.iter().map(|p| p.dir.clone()).collect()
            };
            for dir in dirs {
                self.ordered.push((dir, record.id, now));
            }
        }
    }

    /// The pods as the identity cache knows them now (empty without one).
    pub fn identities(&self) -> Arc<Identities> {
        self.identity
            .as_ref()
            .map_or_else(Arc::default, oomwarden_identity::Cache::snapshot)
    }

    /// The collector (for what the kernel-OOM watcher reads besides the cycle).
    pub fn collector(&self) -> &Collector {
        &self.collector
    }

    /// Ends every hook still running, waiting for them at most `within` (the daemon stops).
    pub fn finish_hooks(&mut self, within: std::time::Duration) {
        self.hooks.finish(within);
    }

    /// Logs read problems, each distinct file at most once a minute (they can repeat every tick).
    fn log_problems(&mut self, problems: Vec<Problem>, now_ns: u64) {
        self.metrics
            .collection_errors(u64::try_from(problems.len()).unwrap_or(u64::MAX));
        self.limiter.prune(now_ns);
        for p in problems {
            let key = match &p {
                Problem::Read(e) => e.path().display().to_string(),
                // One file (meminfo); its message names it.
                Problem::Proc(_) => "procfs".to_owned(),
                Problem::List { dir, .. } => format!("list:{dir}"),
            };
            let Some(left_out) = self.limiter.admit(&key, now_ns) else {
                continue;
            };
            match &p {
                Problem::Proc(_) => {
                    tracing::warn!(error = %p, left_out, "cannot read node memory; node_memory_* count as 0");
                }
                Problem::Read(_) => {
                    tracing::warn!(error = %p, left_out, "cannot read cgroup file; counting it as missing");
                }
                Problem::List { dir, error } => {
                    tracing::error!(%dir, %error, left_out, "cannot list cgroup members");
                }
            }
        }
    }
}
