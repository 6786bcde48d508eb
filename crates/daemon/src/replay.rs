//! `oomwarden replay`: a recording run through the daemon's own [`Engine`] on a virtual clock.
//!
//! The readers read the recording ([`Playback`]) instead of the node, so the parsers, the
//! collector, the trigger, the ranking and the selection are the daemon's, unchanged. The
//! actuator acts on the recording only: a kill makes the victim's cgroup vanish from the
//! following cycles (the classes' totals and PSI stay as recorded: the replay cannot know how
//! the node would have gone on), and hooks are not run. Nothing on the node or on disk
//! changes. From the first kill the recording did not have (its victim does not end in the
//! recording then), later decisions are marked `after_divergence`: decided on figures that
//! kill would have changed. On request ([`AfterKill::EstimateMemory`]) the memory figures from
//! there on are estimated: what the recording says the victims held is given back.
//!
//! Which recorded cycles run: the tick cycles on the configuration's `sampleInterval` grid
//! (all of them when it equals the recording's interval; every tenth for 1s over 100ms; a
//! finer interval than the recording's cannot be replayed finer), and the PSI-woken cycles
//! when the configuration enables `psiTriggers`.

use std::io;
use std::path::Path;
use std::sync::Arc;

use oomwarden_actuate::{Actuator, HookCall, HookResult, Hooks};
use oomwarden_cgroupfs::CgroupFs;
use oomwarden_collect::Collector;
use oomwarden_config::{LayoutSetting, Settings};
use oomwarden_model::{ActionRecord, Layout, TriggerContext};
use oomwarden_procfs::ProcFs;
use oomwarden_recording::{Playback, Recording, Wakeup};

use crate::engine::{CycleOutcome, Engine, EngineParts, RankedCandidate};
use crate::history::History;

/// Acts on the recording only.
#[derive(Debug)]
struct ReplayActuator {
    playback: Arc<Playback>,
}

impl Actuator for ReplayActuator {
    fn open_pidfd(&mut self, _pid: u32) -> io::Result<()> {
        Ok(())
    }

    fn write_cgroup_kill(&mut self, cgroup_dir: &Path) -> io::Result<()> {
        self.playback.remove(cgroup_dir);
        Ok(())
    }

    fn release_memory(&mut self, _pid: u32) -> io::Result<()> {
        Ok(())
    }

    fn send_sigterm(&mut self, _pid: u32) -> io::Result<()> {
        // A recording does not say whether the processes would have exited: the replay goes
        // on as recorded.
        Ok(())
    }

    fn start_memcg_oom(&mut self, cgroup_dir: &Path) -> io::Result<()> {
        // The recording goes on as after any kill: the cgroup is gone from then on.
        self.playback.remove(cgroup_dir);
        Ok(())
    }

    fn close_all(&mut self) {}
}

/// Runs no hook: a replay acts on nothing (a post-kill hook is said in the log as not run).
#[derive(Debug)]
struct ReplayHooks;

impl Hooks for ReplayHooks {
    fn run_hook(&mut self, _hook: &HookCall) -> HookResult {
        HookResult::NotRun
    }

    fn spawn_hook(&mut self, hook: HookCall) {
        oomwarden_actuate::log_hook(&hook, &HookResult::NotRun);
    }
}

/// What a replay does with the node's figures after a kill the recording did not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AfterKill {
    /// They stay as recorded (the default): later decisions are marked, nothing is guessed.
    #[default]
    AsRecorded,
    /// The victims' memory as the recording holds it, cycle by cycle, is given back: added to
    /// `MemAvailable` (swap to `SwapFree`) and taken out of their parents' `memory.current`
    /// (and `memory.swap.current`). PSI and every other figure stay as recorded: an estimate.
    EstimateMemory,
}

/// One replayed cycle.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayedCycle {
    /// Its recorded monotonic time.
    pub at_ns: u64,
    /// What woke it.
    pub wakeup: Wakeup,
    /// The trigger context (none when it could not be built).
    pub context: Option<TriggerContext>,
    /// What it gave (`Acted(i)`: the triggered cycle `triggered[i]`).
    pub result: CycleOutcome<usize>,
}

/// A triggered cycle: the record the daemon would have written, and the ranking behind it.
#[derive(Debug, Clone, PartialEq)]
pub struct TriggeredCycle {
    /// The action record (with the recording's times).
    pub record: ActionRecord,
    /// Every candidate, in candidate order, with its score or the reason it was left out.
    pub ranking: Vec<RankedCandidate>,
    /// Taken after a kill the recording did not have ([`Replay::diverged_at`]): the node's
    /// figures here are the recording's, no longer those of this policy's node.
    pub after_divergence: bool,
    /// Taken after a divergence on estimated memory figures ([`AfterKill::EstimateMemory`]).
    pub estimated_memory: bool,
}

/// A whole replay.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Replay {
    /// The cycles replayed, in order.
    pub cycles: Vec<ReplayedCycle>,
    /// The triggered ones.
    pub decisions: Vec<TriggeredCycle>,
    /// Recorded cycles not replayed (between this configuration's ticks, or woken by PSI
    /// triggers it does not enable).
    pub not_replayed: usize,
    /// Why the replay's reads do not meet the recording's (`Playback::mismatch`): when set,
    /// the replay's figures are not the recording's.
    pub mismatch: Option<String>,
    /// The first decision (an index into `decisions`) that killed a cgroup the recording did
    /// not see end: from there on the recording's memory and PSI still hold what that kill
    /// would have changed, so later decisions are guesses (marked `after_divergence`).
    pub diverged_at: Option<usize>,
    /// What the replay did with the figures after `diverged_at`.
    pub after_kill: AfterKill,
}

/// The layout a replay uses: the configuration's when it names one, else the recording's.
/// The second value is a warning when they differ.
pub fn layout_for(
    recording: &Recording,
    settings: &Settings,
) -> std::result::Result<(Layout, Option<String>), String> {
    let recorded = || -> std::result::Result<Layout, String> {
        if let Some(doc) = &recording.meta.layout_document {
            let s =
                Settings::from_yaml(doc, "the recording's layout").map_err(|e| e.to_string())?;
            if let LayoutSetting::Custom(layout) = s.warden.layout {
                return Ok(layout);
            }
        }
        Layout::builtin(&recording.meta.layout).ok_or_else(|| {
            format!(
                "the recording names layout {:?}, which this oomwarden does not know; set `layout` in the configuration",
                recording.meta.layout
            )
        })
    };
    match &settings.warden.layout {
        LayoutSetting::Auto => Ok((recorded()?, None)),
        LayoutSetting::Builtin(b) => {
            let layout = b.layout();
            let warning = (layout.name != recording.meta.layout).then(|| {
                format!(
                    "the configuration's layout {} differs from the recording's ({}); files the recording lacks read as missing",
                    layout.name, recording.meta.layout
                )
            });
            Ok((layout, warning))
        }
        LayoutSetting::Custom(layout) => Ok((layout.clone(), None)),
    }
}

/// Wall time of a monotonic reading, from the recording's anchor.
pub fn wall_time(recording: &Recording, at_ns: u64) -> String {
    let offset = i128::from(at_ns) - i128::from(recording.meta.start_ns);
    chrono::DateTime::parse_from_rfc3339(&recording.meta.started_at)
        .ok()
        .and_then(|t| {
            let nanos = i64::try_from(offset).ok()?;
            t.checked_add_signed(chrono::Duration::nanoseconds(nanos))
        })
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        })
        .unwrap_or_else(|| format!("+{}ns", offset))
}

/// Runs `recording` through the engine under `settings` and `layout`, the figures after a
/// kill the recording did not have as recorded.
pub fn replay(recording: Recording, settings: Settings, layout: Layout) -> Replay {
    replay_with(recording, settings, layout, AfterKill::AsRecorded)
}

/// Runs `recording` through the engine under `settings` and `layout`; after a kill the
/// recording did not have, the figures as `after_kill` says.
pub fn replay_with(
    recording: Recording,
    settings: Settings,
    layout: Layout,
    after_kill: AfterKill,
) -> Replay {
    let meta = recording.meta.clone();
    let playback = Playback::new(recording);
    let cgroups = CgroupFs::with_files(&meta.cgroup_root, playback.clone());
    let proc = ProcFs::with_files(&meta.proc_root, playback.clone());
    let interval = u64::try_from(settings.oom.sample_interval.as_nanos()).unwrap_or(u64::MAX);
    let recorded_interval = meta.interval_ms.saturating_mul(1_000_000);
    // A recorded tick up to half an interval early still counts as on the grid: ticks jitter.
    let slack = interval.min(recorded_interval.max(1)) / 2;
    let psi_triggers = settings.warden.psi_triggers.enabled;
    // A recorded kill shows within its verification time and a few cycles more.
    let window = u64::try_from(settings.warden.kill_timeout.as_nanos())
        .unwrap_or(u64::MAX)
        .saturating_add(recorded_interval.saturating_mul(4));
    let collector = Collector::new(cgroups, proc.clone(), layout, meta.own_cgroup.clone());
    let actuator = Box::new(ReplayActuator {
        playback: playback.clone(),
    });
    // Pods are named as the recording says the daemon had them (none in older recordings).
    let identity = oomwarden_identity::Cache::fixed(
        oomwarden_model::Identities::default(),
        oomwarden_model::IdentitySource::Cri,
    );
    let mut engine = Engine::new(EngineParts {
        // A replayed kill is verified against the recording: no real time needs to pass.
        clock: Box::new(oomwarden_actuate::VirtualClock::new()),
        identity: Some(identity.clone()),
        last_trigger_ns: meta.last_trigger_ns,
        // The recording's daemon read them while recording; a file it lacks reads as missing.
        read_everything: true,
        ..EngineParts::new(
            settings,
            collector,
            proc,
            History::in_memory(),
            actuator,
            Box::new(ReplayHooks),
        )
    });
    let mut out = Replay {
        after_kill,
        ..Replay::default()
    };
    let mut next_tick: Option<u64> = None;
    let cycles: Vec<(u64, Wakeup, Option<u64>)> = playback
        .recording()
        .cycles
        .iter()
        .map(|c| (c.at_ns, c.wakeup, c.triggered_at))
        .collect();
    for (index, (at_ns, wakeup, triggered_at)) in cycles.into_iter().enumerate() {
        let run = match wakeup {
            Wakeup::Pressure => psi_triggers,
            Wakeup::Tick => next_tick.is_none_or(|t| at_ns.saturating_add(slack) >= t),
        };
        if !run {
            out.not_replayed += 1;
            continue;
        }
        if wakeup == Wakeup::Tick {
            next_tick = Some(at_ns.saturating_add(interval));
        }
        playback.enter(index);
        if let Some(ids) = playback.identities(index) {
            identity.replace(ids);
        }
        let wall = wall_time(playback.recording(), at_ns);
        // Where the recorded daemon's trigger fired, its cooldown counts from the end of its
        // kill, which the recording gives.
        engine.set_recorded_trigger(triggered_at);
        let outcome = match wakeup {
            Wakeup::Tick => engine.cycle(at_ns, &wall),
            Wakeup::Pressure => engine.cycle_on_pressure(at_ns, &wall),
        };
        let result = match outcome {
            CycleOutcome::Quiet => CycleOutcome::Quiet,
            CycleOutcome::Skipped(skip) => CycleOutcome::Skipped(skip),
            CycleOutcome::Acted(record) => {
                let after_divergence = out.diverged_at.is_some();
                let diverges = !after_divergence
                    && record.outcome == oomwarden_model::Outcome::Killed
                    && !recording_had_kill(&playback, index, &meta.cgroup_root, &record, window);
                out.decisions.push(TriggeredCycle {
                    record: *record,
                    ranking: engine.last_ranking(),
                    after_divergence,
                    estimated_memory: after_divergence && after_kill == AfterKill::EstimateMemory,
                });
                if diverges {
                    out.diverged_at = Some(out.decisions.len() - 1);
                    // Only figures after a divergence are estimated: every decision on them
                    // is marked.
                    if after_kill == AfterKill::EstimateMemory {
                        playback.estimate_memory();
                    }
                }
                CycleOutcome::Acted(out.decisions.len() - 1)
            }
        };
        out.cycles.push(ReplayedCycle {
            at_ns,
            wakeup,
            context: engine.last_context().cloned(),
            result,
        });
    }
    if !out.cycles.is_empty() {
        out.mismatch = playback.mismatch();
    }
    out
}

/// Whether the recording saw the victim of `record`, killed in cycle `index`, end within
/// `window`: then the recorded figures after it are those of a node that lost that cgroup too.
fn recording_had_kill(
    playback: &Playback,
    index: usize,
    cgroup_root: &str,
    record: &ActionRecord,
    window: u64,
) -> bool {
    let Some(victim) = record.victim.as_deref() else {
        return false;
    };
    // The record names the node's path; the recording read the tree under its own root.
    let rel = victim
        .strip_prefix(oomwarden_cgroupfs::DEFAULT_CGROUP_ROOT)
        .unwrap_or(victim)
        .trim_start_matches('/');
    let dir = Path::new(cgroup_root).join(rel);
    playback.recorded_end(index, &dir, window)
}
