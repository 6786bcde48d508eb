//! `oomwarden run`: the loop around [`Engine::cycle`].
//!
//! - The first cycle runs at once; then one every `sampleInterval` on the monotonic clock. A
//!   slow cycle (a kill being verified) skips the ticks it overran instead of bunching them.
//! - SIGTERM and SIGINT end the loop cleanly; SIGHUP reloads the configuration file. A file
//!   that fails validation is logged with every error and rejected; the running one stays.

use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use oomwarden_actuate::{Actuator, Hooks, protect_self};
use oomwarden_cgroupfs::CgroupFs;
use oomwarden_collect::Collector;
use oomwarden_config::{Overrides, Settings};
use oomwarden_procfs::ProcFs;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use crate::engine::{CycleOutcome, Engine};
use crate::history::{History, HistoryError};
use crate::recorder::CycleRecorder;
use crate::statedir::StateDir;
use oomwarden_node::{
    Declared, SetupError, check_host, identity_config, load_declared, load_for_reload,
    monotonic_ns, next_tick, resolve_layout, unsafe_reload, wall_clock, warn_missing_dirs,
};

/// What `oomwarden run` needs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The configuration file; `None` for the embedded defaults.
    pub config_file: Option<PathBuf>,
    /// Command-line settings, applied over the file (also after a reload).
    pub overrides: Overrides,
    /// Root of the cgroup v2 hierarchy.
    pub cgroup_root: PathBuf,
    /// Root of procfs.
    pub proc_root: PathBuf,
    /// Stop after this many cycles.
    pub cycles: Option<u64>,
    /// Record every cycle's reads to this file (`oomwarden replay` reads it).
    pub record: Option<PathBuf>,
}

/// Why the daemon could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The node cannot be set up: the configuration, the host or the layout.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The state directory or history file cannot be used.
    #[error("cannot open the action history: {0}")]
    History(#[from] HistoryError),
    /// Signal handlers could not be installed.
    #[error("cannot install signal handlers: {0}")]
    Signals(std::io::Error),
    /// The metrics endpoint could not listen.
    #[error(transparent)]
    Metrics(#[from] crate::metrics::ServeError),
    /// The action API could not start.
    #[error(transparent)]
    Api(#[from] crate::api::ApiError),
    /// Another daemon holds the state directory's lock.
    #[error("another oomwarden is running with the state directory {dir} (it holds {lock})")]
    Running {
        /// The state directory.
        dir: PathBuf,
        /// The lock file.
        lock: PathBuf,
    },
    /// The state directory is refused (owned by another user, writable by others, a symlink).
    #[error(transparent)]
    StateDir(#[from] crate::statedir::StateDirError),
    /// The state directory's lock file cannot be used.
    #[error("cannot lock the state directory: {path}: {source}")]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The recording file cannot be written.
    #[error("cannot write the recording {path}: {source}")]
    Record {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// The lock file in the state directory, held (`flock`) while a daemon runs.
pub(crate) const LOCK_NAME: &str = "oomwarden.lock";

/// Takes the state directory's lock; the lock lasts as long as the returned file is open, and
/// the kernel drops it when the process ends.
fn lock_state_dir(dir: &StateDir) -> Result<std::fs::File, RunError> {
    let path = dir.join(LOCK_NAME);
    let io = |source| RunError::Lock {
        path: path.clone(),
        source,
    };
    let file = dir
        .open_file(
            LOCK_NAME,
            rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CREATE,
        )
        .map_err(io)?;
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(file),
        Err(rustix::io::Errno::WOULDBLOCK) => Err(RunError::Running {
            dir: dir.path().to_owned(),
            lock: path,
        }),
        Err(e) => Err(io(e.into())),
    }
}

/// The state directory as the daemon uses it: checked ([`StateDir::open`]), locked, its history
/// loaded. On a read-only filesystem the daemon runs without them, loudly: no lock, the
/// history's records loaded but new ones kept in memory, no action API socket, no saved
/// flight windows. Anything else wrong with it refuses the start, with the path and why.
pub struct StateSetup {
    /// The directory, when it can be written.
    pub dir: Option<StateDir>,
    /// Its lock (held while this lives).
    pub lock: Option<std::fs::File>,
    /// The history.
    pub history: History,
    /// What was repaired or skipped, for the log.
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for StateSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSetup")
            .field("dir", &self.dir)
            .field("persists", &self.history.persists())
            .finish_non_exhaustive()
    }
}

/// Opens the state directory `path` as the daemon does ([`StateSetup`]).
pub fn open_state(path: &Path) -> Result<StateSetup, RunError> {
    let mut warnings = Vec::new();
    let read_only = |warnings: Vec<String>, history: History| {
        tracing::error!(
            state_dir = %path.display(),
            "the state directory is on a read-only filesystem: running WITHOUT action history (records are kept in memory only), lock, action API socket or saved flight windows"
        );
        StateSetup {
            dir: None,
            lock: None,
            history,
            warnings,
        }
    };
    let dir = match StateDir::open(path, &mut warnings) {
        Ok(dir) => dir,
        Err(e) if e.is_read_only() => return Ok(read_only(warnings, History::in_memory())),
        Err(e) => return Err(e.into()),
    };
    if dir.read_only() {
        let (history, more) = History::open_read_only(&dir)?;
        warnings.extend(more);
        return Ok(read_only(warnings, history));
    }
    // Before anything in the state directory (the history's repairs, a recording) is touched:
    // a second daemon is refused without changing what the first one writes.
    let lock = lock_state_dir(&dir)?;
    let (history, more) = History::open_in(&dir)?;
    warnings.extend(more);
    Ok(StateSetup {
        dir: Some(dir),
        lock: Some(lock),
        history,
        warnings,
    })
}

/// Runs the OOM handler until a signal or `cycles`, killing with `actuator` and running
/// hooks with `hooks`.
pub fn run(
    options: &RunOptions,
    actuator: Box<dyn Actuator + Send>,
    hooks: Box<dyn Hooks + Send>,
) -> Result<(), RunError> {
    // Handlers first: until they are installed, a SIGHUP (a reload right after start) would
    // take its default action and end the process. Signals received during start-up are
    // queued and handled by the loop.
    let (tx, rx) = mpsc::channel();
    let signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])
        .map_err(RunError::Signals)?;
    // The file's identity is taken before it is read, so a change made while it loads is
    // noticed at the first cycle rather than lost.
    let mut config_watch = ConfigWatch::new(options.config_file.as_deref(), CONFIG_CHECK_EVERY);
    let (settings, declared) = load_declared(options.config_file.as_deref(), &options.overrides)?;
    check_host(
        &CgroupFs::new(&options.cgroup_root),
        &ProcFs::new(&options.proc_root),
    )?;
    let flight = settings.warden.flight_recorder;
    let protection = protect_self();
    // Absolute roots, whatever the command line said: what a recording or the flight recorder
    // keeps must name the paths its meta names.
    let options = &RunOptions {
        cgroup_root: std::path::absolute(&options.cgroup_root)
            .unwrap_or_else(|_| options.cgroup_root.clone()),
        proc_root: std::path::absolute(&options.proc_root)
            .unwrap_or_else(|_| options.proc_root.clone()),
        ..options.clone()
    };
    let (tap, cgroups, proc) = engine_files(
        options,
        options.record.is_some() || flight.enabled,
        &protection.nofile,
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
        "oomwarden started"
    );
    let meta = tap.is_some().then(|| {
        let source = if options.record.is_some() {
            "daemon"
        } else {
            "flight-recorder"
        };
        oomwarden_recording::Meta {
            own_cgroup: self_cgroup.clone(),
            ..crate::recorder::meta(&settings, &layout, cgroups.root(), proc.root(), source)
        }
    });
    let collector = Collector::new(cgroups, proc.clone(), layout, self_cgroup);
    let metrics_settings = settings.warden.metrics;
    let shared = starting_state(options, &settings, &collector, &why, &history);
    // The cooldown survives a restart: `time_since_trigger` continues from the last triggered
    // record of this boot, so restarting the daemon (or its pod) never bypasses it.
    // Kernel OOM kills are no trigger of ours: the last of our own records counts.
    let restored = history.last_own().and_then(|last| {
        crate::history::restored_trigger(last, monotonic_ns(), chrono::Utc::now())
            .map(|at| (at, last.id))
    });
    // Set on SIGTERM/SIGINT: hooks end at once and a kill's verification soon after, so the
    // loop stops within a second whatever the cycle was doing (a watchdog ends the process
    // if a cycle is blocked where no flag can reach, such as a read that never returns).
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (mut actuator, mut hooks) = (actuator, hooks);
    actuator.set_stop(Arc::clone(&stop));
    hooks.set_stop(Arc::clone(&stop));
    let mut engine = Engine::new(settings, collector, proc, history, actuator, hooks);
    start_identity(&mut engine);
    start_events(&mut engine);
    if let Some((at, id)) = restored {
        engine.set_last_trigger(at);
        tracing::info!(
            record = id,
            ago = ?std::time::Duration::from_nanos(monotonic_ns().saturating_sub(at)),
            "cooldown restored from the action history"
        );
    }
    if let (Some(tap), Some(meta)) = (tap, meta) {
        attach_recorder(&mut engine, tap, meta, options, state.as_ref(), &shared)?;
    }
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
    );
    handle.close();
    wind_down(&mut engine, socket.as_deref());
    drop(running_tx);
    Ok(())
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

/// Serves the action API (in a writable state directory; its socket's path) and the metrics
/// (when enabled).
fn serve(
    engine: &Engine,
    state: Option<&StateDir>,
    shared: &crate::api::SharedState,
    metrics: oomwarden_config::MetricsSettings,
) -> Result<Option<PathBuf>, RunError> {
    let socket = match state {
        Some(dir) => {
            let socket =
                crate::api::serve_counted(dir.path(), shared.clone(), Some(engine.metrics()))?;
            tracing::info!(socket = %socket.display(), "serving the action API");
            Some(socket)
        }
        None => None,
    };
    if metrics.enabled {
        let bound = crate::metrics::serve(metrics.listen, engine.metrics())?;
        tracing::info!(listen = %bound, "serving metrics at /metrics");
    }
    Ok(socket)
}

/// How long the stop waits for the running hooks to end once their groups were sent SIGKILL
/// (within the stop's [`STOP_WITHIN`]).
const HOOKS_END_WITHIN: Duration = Duration::from_millis(400);

/// What the action API serves before the first cycle.
fn starting_state(
    options: &RunOptions,
    settings: &Settings,
    collector: &Collector,
    why: &str,
    history: &History,
) -> crate::api::SharedState {
    let shared: crate::api::SharedState = Default::default();
    {
        let mut s = shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        s.status = crate::api::Status {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            pid: std::process::id(),
            started_at: wall_clock(),
            config_file: config_name(options),
            configuration: settings.to_yaml(),
            layout: collector.layout().name.clone(),
            layout_reason: why.to_owned(),
            kernel_oom_kills: settings.warden.kernel_oom_watch.enabled.then_some(0),
            ..Default::default()
        };
        s.records = history.recent().cloned().collect();
    }
    shared
}

/// Says what self-protection could not do.
/// What the engine reads through: the kernel's files kept open (one pread a file a cycle,
/// not a path walk, an open and a close), within a quarter of the open-file limit the kills
/// need; and, when recording, the tap every read goes through.
fn engine_files(
    options: &RunOptions,
    recording: bool,
    nofile: &std::io::Result<(u64, u64)>,
) -> (Option<Arc<oomwarden_recording::Tap>>, CgroupFs, ProcFs) {
    let kept: Arc<dyn oomwarden_cgroupfs::Files> =
        Arc::new(oomwarden_cgroupfs::Kept::new(kept_files(nofile)));
    let tap = recording.then(|| oomwarden_recording::Tap::new(Arc::clone(&kept)));
    let files: Arc<dyn oomwarden_cgroupfs::Files> = match &tap {
        Some(tap) => tap.clone(),
        None => kept,
    };
    (
        tap,
        CgroupFs::with_files(&options.cgroup_root, Arc::clone(&files)),
        ProcFs::with_files(&options.proc_root, files),
    )
}

/// How many files the engine's reads keep open: 256 (the every-cycle files of a node with a
/// few hundred Guaranteed pods), at most a quarter of the open-file limit.
fn kept_files(nofile: &std::io::Result<(u64, u64)>) -> usize {
    let limit = nofile.as_ref().map_or(1024, |(soft, _)| *soft);
    usize::try_from(limit / 4).unwrap_or(usize::MAX).min(256)
}

fn log_protection(protection: oomwarden_actuate::SelfProtection) {
    if let Err(e) = protection.oom_score_adj {
        tracing::warn!(error = %e, "cannot set own oom_score_adj to -1000; the kernel OOM killer may choose oomwarden");
    }
    if let Err(e) = protection.mlockall {
        tracing::warn!(error = %e, "cannot lock memory (mlockall); oomwarden may stall when the node thrashes");
    }
    match protection.nofile {
        Ok((soft, _)) if soft >= oomwarden_actuate::WANTED_NOFILE => {}
        Ok((soft, hard)) => tracing::warn!(
            soft,
            hard,
            wanted = oomwarden_actuate::WANTED_NOFILE,
            "the open-file limit is low; a kill of a pod with more processes than that cannot open a pidfd for each"
        ),
        Err(e) => tracing::warn!(error = %e, "cannot raise the open-file limit"),
    }
}

/// Our own cgroup, from the real /proc (`--proc-root` describes the node, not this process).
fn own_cgroup(cgroups: &CgroupFs) -> Option<String> {
    ProcFs::new("/proc")
        .cgroup_of("self")
        .ok()
        .filter(|c| !c.is_empty())
        // In a private cgroup namespace (a container) /proc/self/cgroup says `/`: find our
        // own PID in the node's tree instead (a DaemonSet shares the host's PIDs).
        .or_else(|| oomwarden_collect::find_process_cgroup(cgroups, std::process::id(), 10))
}

/// Gives the engine its recorder: every cycle to `options.record`, the flight recorder's
/// window in memory (served on the API, saved with each action).
fn attach_recorder(
    engine: &mut Engine,
    tap: Arc<oomwarden_recording::Tap>,
    meta: oomwarden_recording::Meta,
    options: &RunOptions,
    state: Option<&StateDir>,
    shared: &crate::api::SharedState,
) -> Result<(), RunError> {
    let flight = engine.settings().warden.flight_recorder;
    let window = flight
        .enabled
        .then(|| u64::try_from(flight.window.as_nanos()).unwrap_or(u64::MAX));
    let mut recorder = CycleRecorder::new(tap, meta, window);
    if let Some(path) = &options.record {
        recorder = recorder
            .writing_to(path)
            .map_err(|source| RunError::Record {
                path: path.clone(),
                source,
            })?;
        tracing::info!(file = %path.display(), "recording every cycle");
    }
    if flight.enabled {
        if let Some(state) = state {
            let mut notes = Vec::new();
            let dir = state.subdir(crate::recorder::RECORDINGS_DIR, &mut notes)?;
            for n in notes {
                tracing::warn!(warning = %n, "flight recorder");
            }
            tracing::info!(window = ?flight.window, dir = %dir.path().display(), "flight recorder on");
            recorder = recorder.saving_to(dir, flight.keep);
        } else {
            tracing::info!(window = ?flight.window, "flight recorder on (in memory only: the state directory cannot be written)");
        }
        shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .flight_recorder = Some(recorder.shared());
    }
    engine.set_recorder(recorder);
    Ok(())
}

/// Starts the identity cache of the settings in force (replacing one running, whose
/// identities it keeps until its runtime answers): who the pods are, from the container
/// runtime or the kubelet's pod-log directories. A cache that cannot start (no thread) leaves
/// pods named by their cgroup paths, and says so.
fn start_identity(engine: &mut Engine) {
    let config = identity_config(&engine.settings().warden.container_runtime);
    // After a reload the running cache's identities stay in force until the new one answers.
    let started = match engine.identity() {
        Some(running) => oomwarden_identity::Cache::start_after(config, running),
        None => oomwarden_identity::Cache::start(config),
    };
    match started {
        Ok(cache) => {
            // New pods and containers ask for a refresh at once (inotify); without it, the
            // quiet cycles' look for new pods and the period remain.
            if let Err(e) = cache.watch(engine.pod_parents(), |name| {
                oomwarden_kube::decode_cgroup_path(name).pod_uid.is_some()
            }) {
                tracing::warn!(error = %e, "cannot watch the pod cgroups; new containers are named at the next identity refresh");
            }
            engine.set_identity(cache);
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot start the pod identity cache; pods are named by their cgroup paths only")
        }
    }
}

/// Starts the Kubernetes Events sender of the settings in force (replacing one running), or
/// none when `events.enabled` is off. Never fatal: Events are a report, the OOM handler runs
/// without them.
fn start_events(engine: &mut Engine) {
    let wanted = engine.settings().warden.events.clone();
    if !wanted.enabled {
        if engine.events().is_some() {
            tracing::info!("Kubernetes Events are no longer sent (events.enabled: false)");
        }
        engine.set_events(None);
        return;
    }
    let reporter = oomwarden_events::Reporter {
        node: oomwarden_events::node_name(wanted.node_name.as_deref()),
    };
    match oomwarden_events::Events::start(oomwarden_events::Options::new(
        wanted.kubeconfig.clone(),
        reporter,
    )) {
        Ok(events) => engine.set_events(Some(events)),
        Err(e) => {
            tracing::error!(error = %e, "Kubernetes Events are not sent");
            engine.set_events(None);
        }
    }
}

/// Forwards signals to the loop from a thread of their own. SIGTERM and SIGINT also set the
/// stop flag and start the stop's watchdog, which the returned sender, dropped when `run`
/// ends, calls off.
fn spawn_signal_thread(
    mut signals: signal_hook::iterator::Signals,
    tx: mpsc::Sender<Wake>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> Result<mpsc::Sender<()>, RunError> {
    let (running_tx, running_rx) = mpsc::channel::<()>();
    let mut running_rx = Some(running_rx);
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                if matches!(signal, SIGTERM | SIGINT) {
                    stop.store(true, std::sync::atomic::Ordering::SeqCst);
                    if let Some(rx) = running_rx.take() {
                        watchdog(rx);
                    }
                }
                if tx.send(Wake::Signal(signal)).is_err() {
                    break;
                }
            }
        })
        .map_err(RunError::Signals)?;
    Ok(running_tx)
}

/// The loop: a cycle every tick (and on each PSI wake-up, at most one per
/// [`MIN_EVENT_GAP`]), reloads on SIGHUP or a changed file, until a stop signal or
/// `options.cycles`.
fn cycle_until_stopped(
    engine: &mut Engine,
    rx: &mpsc::Receiver<Wake>,
    options: &RunOptions,
    shared: &crate::api::SharedState,
    config_watch: &mut ConfigWatch,
    mut declared: Declared,
) {
    let mut kernel = crate::kernel::KernelWatch::start(
        engine,
        &engine.settings().warden.kernel_oom_watch.clone(),
        monotonic_ns(),
    );
    // Its reads at start are no cycle's.
    engine.discard_reads();
    let metrics = engine.metrics();
    let mut done = 0u64;
    let mut tick = Instant::now();
    let mut last_cycle: Option<Instant> = None;
    // SIGHUPs are coalesced: at most one reload between two cycles. The first since the last
    // cycle reloads at once; later ones wait and are one reload before the first cycle that
    // follows a cycle without a reload. A storm neither starves the cycles nor forces extra
    // ones (found by the fault suite: 2 cycles in 6 s under a SIGHUP storm).
    let mut reloaded_since_cycle = false;
    let mut reload_pending = false;
    loop {
        let wait = tick.saturating_duration_since(Instant::now());
        let mut on_pressure = false;
        match rx.recv_timeout(wait) {
            Ok(Wake::Signal(SIGHUP)) => {
                if reloaded_since_cycle {
                    reload_pending = true;
                } else {
                    // Taken before the read, as at start.
                    config_watch.refresh();
                    let interval = engine.settings().oom.sample_interval;
                    reload(engine, options, Some(shared), &mut declared);
                    reloaded_since_cycle = true;
                    reload_pending = false;
                    // A shorter interval is not waited out on the old one.
                    let now_interval = engine.settings().oom.sample_interval;
                    if now_interval < interval {
                        tick = tick.min(Instant::now() + now_interval);
                    }
                }
                // A due cycle is never skipped for a signal.
                if Instant::now() < tick {
                    continue;
                }
            }
            Ok(Wake::Signal(signal)) => {
                tracing::info!(signal, "oomwarden stopping");
                break;
            }
            Ok(Wake::Pressure(cgroups)) => {
                // A cycle now; at most one per MIN_EVENT_GAP however many triggers fire.
                if last_cycle.is_some_and(|t: Instant| t.elapsed() < MIN_EVENT_GAP) {
                    continue;
                }
                metrics.pressure_event();
                tracing::debug!(cgroups = ?cgroups, "pressure event: cycling now");
                on_pressure = true;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        // A ConfigMap update arrives as a symlink swap, without a signal.
        if config_watch.changed() {
            tracing::info!("the configuration file changed on disk; reloading");
            reload(engine, options, Some(shared), &mut declared);
            reload_pending = false;
        } else if reload_pending && !reloaded_since_cycle {
            reload_pending = false;
            config_watch.refresh();
            reload(engine, options, Some(shared), &mut declared);
        }
        reloaded_since_cycle = false;
        rewatch_if_changed(engine, &mut kernel);
        let started = Instant::now();
        last_cycle = Some(started);
        let wall = wall_clock();
        let outcome = if on_pressure {
            engine.cycle_on_pressure(monotonic_ns(), &wall)
        } else {
            engine.cycle(monotonic_ns(), &wall)
        };
        let took = started.elapsed();
        metrics.cycle(took.as_secs_f64());
        // After the cycle and outside its timing: the kernel's kills are recorded, not acted on.
        let kernel_records = match kernel.as_mut() {
            Some(k) => {
                let written = k.poll(engine, monotonic_ns());
                // Its counter reads are no cycle's: kept out of the recording.
                engine.discard_reads();
                written
            }
            None => Vec::new(),
        };
        publish(shared, engine, &outcome, &wall, took);
        publish_kernel(shared, engine, kernel.as_ref(), !kernel_records.is_empty());
        done += 1;
        if options.cycles.is_some_and(|n| done >= n) {
            break;
        }
        if on_pressure {
            // The tick schedule stays as it was.
            continue;
        }
        let (next, skipped) =
            next_tick(tick, engine.settings().oom.sample_interval, Instant::now());
        if skipped > 0 {
            tracing::debug!(
                skipped,
                cycle_ms = started.elapsed().as_millis(),
                "slow cycle; skipped ticks"
            );
        }
        tick = next;
    }
}

/// How often the loop looks at the configuration file for a change. The kubelet takes up to a
/// minute to bring a ConfigMap update to the node; a path walk every cycle (two a second, each
/// through the volume's symlinks) bought nothing on top of that.
const CONFIG_CHECK_EVERY: Duration = Duration::from_secs(1);

/// Notices a configuration file that changed on disk: what the path resolves to now (device,
/// inode, size, modification time, symlinks followed) against what was last loaded, looked at
/// at most once per `every`. A Kubernetes ConfigMap volume replaces its `..data` symlink
/// atomically, so the inode changes.
#[derive(Debug)]
struct ConfigWatch {
    path: Option<PathBuf>,
    seen: Option<(u64, u64, u64, i64, i64)>,
    every: Duration,
    looked: Option<Instant>,
}

impl ConfigWatch {
    fn new(path: Option<&Path>, every: Duration) -> Self {
        let mut w = ConfigWatch {
            path: path.map(Path::to_path_buf),
            seen: None,
            every,
            looked: None,
        };
        w.refresh();
        w
    }

    fn identity(&self) -> Option<(u64, u64, u64, i64, i64)> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(self.path.as_ref()?).ok()?;
        Some((m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
    }

    /// Takes the file as it is now as the loaded one.
    fn refresh(&mut self) {
        self.seen = self.identity();
    }

    /// Whether the file changed since it was last taken (a vanished file is no change: the
    /// running configuration stays until it is back).
    fn changed(&mut self) -> bool {
        if self.path.is_none() || self.looked.is_some_and(|t| t.elapsed() < self.every) {
            return false;
        }
        self.looked = Some(Instant::now());
        let now = self.identity();
        if now.is_some() && now != self.seen {
            self.seen = now;
            return true;
        }
        false
    }
}

/// How long a stop may take before the watchdog ends the process (SIGTERM is honoured
/// within a second, exit included).
pub(crate) const STOP_WITHIN: Duration = Duration::from_millis(800);

/// Starts the watchdog of a stop: unless `running` is closed (the loop ended) within
/// [`STOP_WITHIN`], the process exits (status 0: the stop was asked for and is done), saying
/// so. What a blocked cycle was doing is lost: a recording lacks its end line and reads as
/// truncated.
fn watchdog(running: mpsc::Receiver<()>) {
    let spawned = std::thread::Builder::new()
        .name("watchdog".into())
        .spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = running.recv_timeout(STOP_WITHIN) {
                tracing::error!(
                    waited_ms = STOP_WITHIN.as_millis(),
                    "the cycle did not end after the stop signal (a read or a hook is blocked); exiting without it"
                );
                // The one place a library ends the process: a blocked cycle cannot be unwound,
                // and the stop was asked for.
                #[allow(clippy::exit)]
                std::process::exit(0);
            }
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the stop watchdog");
    }
}

/// What wakes the loop besides its tick.
#[derive(Debug)]
enum Wake {
    /// A signal.
    Signal(i32),
    /// Kernel PSI triggers fired on these cgroups.
    Pressure(Vec<String>),
}

/// The shortest gap between two event-driven cycles.
const MIN_EVENT_GAP: Duration = Duration::from_millis(100);

/// Registers kernel PSI triggers on the protected classes' cgroups (System and Podruntime, as
/// the layout names them now) and wakes the loop from a thread when they fire.
fn watch_pressure(engine: &Engine, tx: mpsc::Sender<Wake>) -> Result<(), RunError> {
    let p = engine.settings().warden.psi_triggers;
    let spec = oomwarden_cgroupfs::TriggerSpec {
        full: p.full,
        stall: p.stall,
        window: p.window,
    };
    let dirs = engine.protected_dirs();
    let (mut triggers, errors) =
        oomwarden_cgroupfs::PressureTriggers::register(engine.cgroups(), &dirs, &spec);
    for e in &errors {
        tracing::warn!(error = %e, "cannot register a PSI trigger");
    }
    tracing::info!(
        registered = triggers.len(),
        trigger = %spec.line(),
        "PSI triggers registered on the System and Podruntime cgroups"
    );
    if triggers.is_empty() {
        return Ok(());
    }
    std::thread::Builder::new()
        .name("pressure".into())
        .spawn(move || {
            loop {
                match triggers.wait(None) {
                    Ok(fired) if !fired.is_empty() => {
                        if tx.send(Wake::Pressure(fired)).is_err() {
                            break;
                        }
                    }
                    // Nothing fired (an interrupted wait): do not spin.
                    Ok(_) => std::thread::sleep(MIN_EVENT_GAP),
                    Err(e) => {
                        tracing::error!(error = %e, "waiting for PSI triggers failed; detection falls back to the tick");
                        break;
                    }
                }
                if triggers.is_empty() {
                    tracing::warn!("every PSI trigger's cgroup went away; detection falls back to the tick");
                    break;
                }
            }
        })
        .map_err(RunError::Signals)?;
    Ok(())
}

fn config_name(options: &RunOptions) -> String {
    options
        .config_file
        .as_deref()
        .map_or("<defaults>".to_owned(), |f| f.display().to_string())
}

/// Updates what the action API serves after a cycle.
fn publish(
    shared: &crate::api::SharedState,
    engine: &Engine,
    outcome: &CycleOutcome,
    wall: &str,
    took: Duration,
) {
    let mut s = shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let st = &mut s.status;
    st.cycles += 1;
    st.last_cycle_at = Some(wall.to_owned());
    st.last_cycle_ms = Some((took.as_secs_f64() * 1e6).round() / 1e3);
    st.layout = engine.layout_name().to_owned();
    st.pod_identity = engine
        .identity()
        .map(|c| crate::api::PodIdentityStatus::of(&c.status()));
    match outcome {
        CycleOutcome::Quiet => st.last_cycle_result = Some("quiet".to_owned()),
        CycleOutcome::Skipped(error) => {
            st.last_cycle_result = Some("skipped".to_owned());
            st.last_error = Some(format!("{wall}: {error}"));
            st.errors += 1;
        }
        CycleOutcome::Acted(record) => {
            st.last_cycle_result = Some(record.outcome.name().to_owned());
            st.last_trigger_at = Some(wall.to_owned());
            s.records = engine.history().recent().cloned().collect();
        }
    }
}

/// What the action API serves about the kernel's kills: the count, and the records when new
/// ones were written.
fn publish_kernel(
    shared: &crate::api::SharedState,
    engine: &Engine,
    kernel: Option<&crate::kernel::KernelWatch>,
    new_records: bool,
) {
    let mut s = shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    s.status.kernel_oom_kills = kernel.map(crate::kernel::KernelWatch::kills);
    if new_records {
        s.records = engine.history().recent().cloned().collect();
    }
}

/// Starts, stops or restarts the kernel-OOM watch when a reload changed its settings (the
/// count of kills starts again).
fn rewatch_if_changed(engine: &Engine, kernel: &mut Option<crate::kernel::KernelWatch>) {
    let wanted = &engine.settings().warden.kernel_oom_watch;
    let running = kernel.as_ref().map(crate::kernel::KernelWatch::settings);
    if running == Some(wanted) || (running.is_none() && !wanted.enabled) {
        return;
    }
    if let Some(mut old) = kernel.take() {
        old.stop();
    }
    *kernel = crate::kernel::KernelWatch::start(engine, wanted, monotonic_ns());
    engine.discard_reads();
}

/// The settings a reload does not apply (what they set up is made once, at the start): each
/// one that changed, by its configuration key, to be said rather than silently kept.
fn at_next_start(
    old: &oomwarden_config::WardenSettings,
    new: &oomwarden_config::WardenSettings,
) -> Vec<&'static str> {
    let mut changed = Vec::new();
    if old.metrics != new.metrics {
        changed.push("metrics");
    }
    if old.flight_recorder != new.flight_recorder {
        changed.push("flightRecorder");
    }
    if old.psi_triggers != new.psi_triggers {
        changed.push("psiTriggers");
    }
    if old.state_dir != new.state_dir {
        changed.push("stateDir");
    }
    changed
}

fn reload(
    engine: &mut Engine,
    options: &RunOptions,
    shared: Option<&crate::api::SharedState>,
    running: &mut Declared,
) {
    let file = options.config_file.as_deref();
    let loaded = load_for_reload(file, &options.overrides)
        .and_then(|(settings, declared)| {
            match unsafe_reload(engine.settings(), *running, &settings, declared) {
                Some(why) => Err(SetupError::Config(why)),
                None => Ok((settings, declared)),
            }
        })
        .and_then(|(settings, declared)| {
            let layout = resolve_layout(&settings, engine.cgroups())?;
            Ok((settings, declared, layout))
        });
    match loaded {
        Ok((settings, declared, (layout, why))) => {
            *running = declared;
            engine.metrics().reloaded(true);
            for setting in at_next_start(&engine.settings().warden, &settings.warden) {
                tracing::warn!(
                    setting,
                    "{setting} changed; it takes effect at the next start (the running daemon keeps the old one)"
                );
            }
            if layout.name != engine.layout_name() {
                tracing::info!(layout = %layout.name, layout_reason = %why, "layout changed");
            }
            engine.set_layout(layout);
            let runtime_changed =
                settings.warden.container_runtime != engine.settings().warden.container_runtime;
            let events_changed = settings.warden.events != engine.settings().warden.events;
            tracing::info!(
                file = %file.map_or("<defaults>".into(), |f| f.display().to_string()),
                sample_interval = ?settings.oom.sample_interval,
                "configuration reloaded"
            );
            if let Some(shared) = shared {
                let mut s = shared
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                s.status.configuration = settings.to_yaml();
                s.status.layout_reason = why;
            }
            engine.set_settings(settings);
            if runtime_changed {
                start_identity(engine);
            }
            if events_changed {
                start_events(engine);
            }
        }
        Err(e) => {
            engine.metrics().reloaded(false);
            tracing::error!(error = %e, "configuration reload rejected; the running configuration stays");
        }
    }
    engine.discard_reads();
}

#[cfg(test)]
mod tests {
    use super::*;

    // Found running the DaemonSet (S19): a ConfigMap update turning the flight recorder on
    // was taken in silence and did nothing.
    #[test]
    fn a_reload_names_what_waits_for_the_next_start() {
        let old = oomwarden_config::WardenSettings::default();
        let mut new = old.clone();
        assert!(at_next_start(&old, &new).is_empty());
        new.dry_run = !new.dry_run;
        assert!(at_next_start(&old, &new).is_empty(), "dryRun is reloaded");
        new.flight_recorder.enabled = !new.flight_recorder.enabled;
        new.psi_triggers.enabled = !new.psi_triggers.enabled;
        new.state_dir = "/elsewhere".into();
        new.metrics.enabled = !new.metrics.enabled;
        assert_eq!(
            at_next_start(&old, &new),
            ["metrics", "flightRecorder", "psiTriggers", "stateDir"]
        );
    }

    #[test]
    fn a_configmap_style_symlink_swap_is_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // The kubelet's layout: config.yaml -> ..data/config.yaml, ..data -> ..<timestamp>.
        std::fs::create_dir(d.join("..2026_1")).unwrap();
        std::fs::write(d.join("..2026_1/config.yaml"), "a").unwrap();
        std::os::unix::fs::symlink("..2026_1", d.join("..data")).unwrap();
        std::os::unix::fs::symlink("..data/config.yaml", d.join("config.yaml")).unwrap();
        let mut w = ConfigWatch::new(Some(&d.join("config.yaml")), Duration::ZERO);
        assert!(!w.changed());
        // The update: a new directory, a new ..data link renamed over the old one.
        std::fs::create_dir(d.join("..2026_2")).unwrap();
        std::fs::write(d.join("..2026_2/config.yaml"), "a").unwrap();
        std::os::unix::fs::symlink("..2026_2", d.join("..data_tmp")).unwrap();
        std::fs::rename(d.join("..data_tmp"), d.join("..data")).unwrap();
        assert!(w.changed(), "same content, new file: a change");
        assert!(!w.changed(), "noticed once");
        // A file that vanishes is no change; when it is back, it is one.
        std::fs::remove_file(d.join("config.yaml")).unwrap();
        assert!(!w.changed());
        std::fs::write(d.join("config.yaml"), "b").unwrap();
        assert!(w.changed());
        // No configuration file: never a change.
        assert!(!ConfigWatch::new(None, Duration::ZERO).changed());
    }

    #[test]
    fn the_configuration_file_is_looked_at_once_per_interval() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, "a").unwrap();
        let mut w = ConfigWatch::new(Some(&path), Duration::from_millis(300));
        assert!(!w.changed(), "looked at: no change");
        std::fs::write(&path, "bb").unwrap();
        assert!(!w.changed(), "not looked at again within the interval");
        std::thread::sleep(Duration::from_millis(350));
        assert!(w.changed(), "looked at after it");
    }
}
