//! `oomwarden run`: the loop around [`Engine::cycle`].
//!
//! - The first cycle runs at once; then one every `sampleInterval` on the monotonic clock. A
//!   slow cycle (a kill being verified) skips the ticks it overran instead of bunching them.
//! - SIGTERM and SIGINT end the loop cleanly; SIGHUP reloads the configuration file. A file
//!   that fails validation is logged with every error and rejected; the running one stays.

use std::path::Path;
use std::sync::{Arc, mpsc};
use std::time::Duration;

use oomwarden_actuate::{Actuator, Hooks, protect_self};
use oomwarden_cgroupfs::CgroupFs;
use oomwarden_collect::Collector;
use oomwarden_procfs::ProcFs;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use crate::engine::{Engine, EngineParts};
use oomwarden_node::{check_host, check_psi, load_declared, resolve_layout, warn_missing_dirs};

mod cycles;
mod options;
mod reload;
mod setup;
mod state;
mod wake;

use cycles::cycle_until_stopped;
pub use options::{RunError, RunOptions};
use reload::{CONFIG_CHECK_EVERY, ConfigWatch};
pub use setup::events_options;
use setup::{
    Descriptors, engine_files, events_sender, identity_cache, log_protection, own_cgroup, recorder,
    serve,
};
pub use state::{StateSetup, open_state};
use state::{restored_cooldown, starting_state};
use wake::{spawn_signal_thread, watch_pressure};

/// Runs the OOM handler until a signal or `cycles`, killing with `actuator` and running
/// hooks with `hooks`.
///
/// Without PSI (a kernel booted with `psi=0`) it refuses to start only when the policy reads
/// PSI ([`oomwarden_config::Settings::psi_reads`]); otherwise it runs, and says so at start.
pub fn run(
    options: &RunOptions,
    actuator: Box<dyn Actuator + Send>,
    hooks: Box<dyn Hooks + Send>,
) -> Result<(), RunError> {
    // Before any thread starts: malloc's settings hold only for arenas not yet made, and the
    // doctor's findings at start (`check_node`) run a thread.
    let protection = protect_self();
    // Handlers next: until they are installed, a SIGHUP (a reload right after start) would
    // take its default action and end the process. Signals received during start-up are
    // queued and handled by the loop.
    let (tx, rx) = mpsc::channel();
    let signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])
        .map_err(RunError::Signals)?;
    // The file's identity is taken before it is read, so a change made while it loads is
    // noticed at the first cycle rather than lost.
    let mut config_watch = ConfigWatch::new(options.config_file.as_deref(), CONFIG_CHECK_EVERY);
    let (settings, declared) = load_declared(options.config_file.as_deref(), &options.overrides)?;
    check_node(&settings, options)?;
    let flight = settings.warden.flight_recorder;
    let options = &options.with_absolute_roots();
    let descriptors = Descriptors::under(&protection.nofile);
    let (tap, cgroups, proc) = engine_files(
        options,
        options.record.is_some() || flight.enabled,
        descriptors,
    );
    log_protection(protection);
    let self_cgroup = own_cgroup(&cgroups);
    let (layout, why) = resolve_layout(&settings, &cgroups)?;
    warn_missing_dirs(&settings, &layout, &cgroups);
    let StateSetup {
        dir: state,
        lock: _state_lock,
        history,
        warnings,
    } = open_state(&settings.warden.state_dir)?;
    for w in warnings {
        tracing::warn!(warning = %w, "action history");
    }
    tracing::info!(
        cgroup_root = %cgroups.root().display(),
        layout = %layout.name,
        layout_reason = %why,
        own_cgroup = self_cgroup.as_deref().unwrap_or("/"),
        sample_interval = ?settings.oom.sample_interval,
        dry_run = settings.warden.dry_run,
        descriptors_kept_at_most = descriptors.bound(),
        "oomwarden started"
    );
    let source = recording_source(options);
    let meta = tap.is_some().then(|| oomwarden_recording::Meta {
        own_cgroup: self_cgroup.clone(),
        ..crate::recorder::meta(&settings, &layout, cgroups.root(), proc.root(), source)
    });
    let collector = Collector::new(cgroups, proc.clone(), layout, self_cgroup);
    let metrics_settings = settings.warden.metrics;
    let shared = starting_state(options, &settings, &collector, &why, &history);
    let last_trigger_ns = restored_cooldown(&history);
    // Set on SIGTERM/SIGINT: hooks end at once and a kill's verification soon after, so the
    // loop stops within a second whatever the cycle was doing (a watchdog ends the process
    // if a cycle is blocked where no flag can reach, such as a read that never returns).
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (mut actuator, mut hooks) = (actuator, hooks);
    actuator.set_stop(Arc::clone(&stop));
    hooks.set_stop(Arc::clone(&stop));
    let recorder = match (tap, meta) {
        (Some(tap), Some(meta)) => Some(recorder(
            &settings,
            tap,
            meta,
            options,
            state.as_ref(),
            &shared,
        )?),
        _ => None,
    };
    let identity = identity_cache(&settings, None, crate::engine::pod_parents(&collector));
    let events = events_sender(&settings);
    let mut engine = Engine::new(EngineParts {
        recorder,
        identity,
        events,
        last_trigger_ns,
        ..EngineParts::new(settings, collector, proc, history, actuator, hooks)
    });
    doctor_at_start(&engine, options);
    say_guarded(&engine);
    let socket = serve(&engine, state.as_ref(), &shared, metrics_settings)?;

    let handle = signals.handle();
    // Dropped when `run` returns: the watchdog then knows the stop completed.
    let running_tx = spawn_signal_thread(signals, tx.clone(), stop)?;
    if engine.settings().warden.psi_triggers.enabled {
        watch_pressure(&engine, tx)?;
    }
    engine.discard_reads();

    cycle_until_stopped(
        &mut engine,
        &rx,
        options,
        &shared,
        &mut config_watch,
        declared,
        cycles::Held {
            state: state.as_ref(),
            descriptors,
        },
    );
    handle.close();
    wind_down(&mut engine, socket.as_deref());
    drop(running_tx);
    Ok(())
}

/// Says once at start which pods `protect.nodeCritical` keeps out of every ranking (or, off,
/// which node-critical pods a ranking may now choose).
fn say_guarded(engine: &Engine) {
    let guarded = engine.node_critical_now();
    if guarded.is_empty() {
        return;
    }
    let listed: Vec<String> = guarded
        .iter()
        .map(|(path, pod, why)| match pod {
            Some(pod) => format!("{pod} ({why})"),
            None => format!("{path} ({why})"),
        })
        .collect();
    if engine.settings().warden.protect.node_critical {
        tracing::info!(pods = %listed.join("; "), "protect.nodeCritical: these node-critical pods are never candidates, whatever the ranking says");
    } else {
        tracing::warn!(pods = %listed.join("; "), "protect.nodeCritical is off: the ranking may choose these node-critical pods");
    }
    engine.discard_reads();
}

/// Who a recording of this run says made it: `run --record`, or the flight recorder.
fn recording_source(options: &RunOptions) -> &'static str {
    if options.record.is_some() {
        "daemon"
    } else {
        "flight-recorder"
    }
}

/// What the stop ends, after the loop: hooks, the identity cache, the recording, the socket.
fn wind_down(engine: &mut Engine, socket: Option<&Path>) {
    // No hook outlives the daemon: each running one's process group is ended (found by the
    // fault suite: 11 of 11 post-kill hooks orphaned under PID 1 at SIGTERM).
    engine.finish_hooks(HOOKS_END_WITHIN);
    if let Some(cache) = engine.identity() {
        cache.stop();
    }
    engine.finish_recording();
    // Best effort: a stale socket is replaced at the next start anyway.
    if let Some(socket) = socket {
        let _ = std::fs::remove_file(socket);
    }
}

/// How long the stop waits for the running hooks to end once their groups were sent SIGKILL
/// (within the stop's [`STOP_WITHIN`]).
const HOOKS_END_WITHIN: Duration = Duration::from_millis(400);

/// The host checks: cgroup v2 with the memory controller; then PSI, which only a policy that
/// reads it needs: such a policy is refused on a node without PSI, naming what reads it; a
/// policy that reads none runs, with a warning that says what PSI would add.
fn check_node(settings: &oomwarden_config::Settings, options: &RunOptions) -> Result<(), RunError> {
    let (cgroups, proc) = (
        CgroupFs::new(&options.cgroup_root),
        ProcFs::new(&options.proc_root),
    );
    check_host(&cgroups, &proc)?;
    let Err(e) = check_psi(&cgroups, &proc) else {
        return Ok(());
    };
    let reads = settings.psi_reads();
    if reads.is_empty() {
        tracing::warn!(
            problem = %e,
            "running without memory pressure (PSI): the policy reads none, so it runs on its memory figures alone; the PSI variables, PSI wake-ups and the records' stall figures read as 0 (oomwarden doctor explains)"
        );
        return Ok(());
    }
    Err(RunError::Setup(oomwarden_node::SetupError::Host(format!(
        "{e}. The policy reads PSI ({}); give it a trigger and ranking without PSI variables (examples/config/no-psi.yaml, recommended.yaml's memory trend alone) to run on this node",
        reads.join(", ")
    ))))
}

/// `oomwarden doctor` once at start, on a thread of its own (it walks `/proc` and reads files
/// a cycle never needs; a slow or blocked one must not delay a decision): each warning and
/// error logged once, every finding counted in `oomwarden_doctor_findings{id,severity}`.
fn doctor_at_start(engine: &Engine, options: &RunOptions) {
    let roots = oomwarden_doctor::Roots {
        cgroup: options.cgroup_root.clone(),
        proc: options.proc_root.clone(),
        host: options.host_root.clone(),
    };
    let settings = engine.settings().clone();
    let metrics = engine.metrics();
    let spawned = std::thread::Builder::new()
        .name("doctor".into())
        .spawn(move || {
            let report = oomwarden_doctor::examine(&roots, &settings);
            log_findings(&report);
            let labels: Vec<_> = report
                .findings
                .iter()
                .map(|f| (f.id, f.severity.name()))
                .collect();
            metrics.doctor_findings(&labels);
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start the doctor's examination; going on without it");
    }
}

/// Each warning and error of the doctor's report, once.
fn log_findings(report: &oomwarden_doctor::Report) {
    use oomwarden_doctor::Severity;
    for f in &report.findings {
        let seen = f
            .seen
            .iter()
            .map(|s| format!("{}: {}", s.path, s.value))
            .collect::<Vec<_>>()
            .join("; ");
        match f.severity {
            Severity::Error => {
                tracing::error!(finding = f.id, seen = %seen, fix = %f.fix, "doctor: {}", f.summary);
            }
            Severity::Warning => {
                tracing::warn!(finding = f.id, seen = %seen, fix = %f.fix, "doctor: {}", f.summary);
            }
            Severity::Info => {}
        }
    }
}
