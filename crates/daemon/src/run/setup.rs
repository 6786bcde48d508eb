//! Putting the engine together at start: its files, its protection, the recorder, the pod
//! identity cache, the Events sender and the servers (metrics, action API).

use std::path::PathBuf;
use std::sync::Arc;

use oomwarden_cgroupfs::CgroupFs;
use oomwarden_config::{EventsSettings, Settings};
use oomwarden_procfs::ProcFs;

use crate::engine::Engine;
use crate::recorder::CycleRecorder;
use crate::statedir::StateDir;
use oomwarden_node::identity_config;

use super::options::{RunError, RunOptions};

/// Serves the action API (in a writable state directory; its socket's path) and the metrics
/// (when enabled).
pub(super) fn serve(
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

/// Says what self-protection could not do.
/// What the engine reads through: the kernel's files kept open (one pread a file a cycle,
/// not a path walk, an open and a close), within a quarter of the open-file limit the kills
/// need; and, when recording, the tap every read goes through.
pub(super) fn engine_files(
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
pub(super) fn kept_files(nofile: &std::io::Result<(u64, u64)>) -> usize {
    let limit = nofile.as_ref().map_or(1024, |(soft, _)| *soft);
    usize::try_from(limit / 4).unwrap_or(usize::MAX).min(256)
}

pub(super) fn log_protection(protection: oomwarden_actuate::SelfProtection) {
    if let Err(e) = protection.oom_score_adj {
        tracing::warn!(error = %e, "cannot set own oom_score_adj to -1000; the kernel OOM killer may choose oomwarden");
    }
    if let Err(e) = protection.mlockall {
        tracing::warn!(error = %e, "cannot lock memory (mlockall); oomwarden may stall when the node thrashes");
    }
    if let Err(e) = protection.malloc {
        tracing::warn!(error = %e, "cannot hold malloc to a small footprint; oomwarden may lock more memory than it needs");
    }
    match protection.hot_text {
        oomwarden_actuate::HotText::Locked(bytes) => tracing::info!(
            kib = bytes / 1024,
            "locked the code the daemon runs (its hot text), kill path included"
        ),
        oomwarden_actuate::HotText::NotOrdered(span) => tracing::info!(
            marker_span = span,
            "this build's text is not ordered (not built by scripts/build-static): code is locked as it runs"
        ),
        oomwarden_actuate::HotText::Failed(e) => tracing::warn!(
            error = %e,
            "cannot lock the code the daemon runs (mlock); its kill path may be read from disk when the node thrashes"
        ),
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
pub(super) fn own_cgroup(cgroups: &CgroupFs) -> Option<String> {
    ProcFs::new("/proc")
        .cgroup_of("self")
        .ok()
        .filter(|c| !c.is_empty())
        // In a private cgroup namespace (a container) /proc/self/cgroup says `/`: find our
        // own PID in the node's tree instead (a DaemonSet shares the host's PIDs).
        .or_else(|| oomwarden_collect::find_process_cgroup(cgroups, std::process::id(), 10))
}

/// The engine's recorder: every cycle to `options.record`, the flight recorder's window in
/// memory (served on the API, saved with each action).
pub(super) fn recorder(
    settings: &Settings,
    tap: Arc<oomwarden_recording::Tap>,
    meta: oomwarden_recording::Meta,
    options: &RunOptions,
    state: Option<&StateDir>,
    shared: &crate::api::SharedState,
) -> Result<CycleRecorder, RunError> {
    let flight = settings.warden.flight_recorder;
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
    Ok(recorder)
}

/// The identity cache of `settings` (after a reload, starting with the identities of the
/// one `running`, kept until its runtime answers): who the pods are, from the container
/// runtime or the kubelet's pod-log directories, watching `pod_parents` for new pods. A cache
/// that cannot start (no thread) leaves pods named by their cgroup paths, and says so.
pub(super) fn identity_cache(
    settings: &Settings,
    running: Option<&oomwarden_identity::Cache>,
    pod_parents: Vec<PathBuf>,
) -> Option<oomwarden_identity::Cache> {
    let config = identity_config(&settings.warden.container_runtime);
    let started = match running {
        Some(running) => oomwarden_identity::Cache::start_after(config, running),
        None => oomwarden_identity::Cache::start(config),
    };
    match started {
        Ok(cache) => {
            // New pods and containers ask for a refresh at once (inotify); without it, the
            // quiet cycles' look for new pods and the period remain.
            if let Err(e) = cache.watch(pod_parents, |name| {
                oomwarden_kube::decode_cgroup_path(name).pod_uid.is_some()
            }) {
                tracing::warn!(error = %e, "cannot watch the pod cgroups; new containers are named at the next identity refresh");
            }
            Some(cache)
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot start the pod identity cache; pods are named by their cgroup paths only");
            None
        }
    }
}

/// Replaces the engine's identity cache with one for the settings in force (a reload).
pub(super) fn restart_identity(engine: &mut Engine) {
    if let Some(cache) = identity_cache(engine.settings(), engine.identity(), engine.pod_parents())
    {
        engine.set_identity(cache);
    }
}

/// The Kubernetes Events sender of `settings`, or none when `events.enabled` is off. Never
/// fatal: Events are a report, the OOM handler runs without them.
pub(super) fn events_sender(settings: &Settings) -> Option<oomwarden_events::Events> {
    let wanted = &settings.warden.events;
    if !wanted.enabled {
        return None;
    }
    match oomwarden_events::Events::start(events_options(wanted)) {
        Ok(events) => Some(events),
        Err(e) => {
            tracing::error!(error = %e, "Kubernetes Events are not sent");
            None
        }
    }
}

/// The Events sender's options for the `events` section.
pub fn events_options(wanted: &EventsSettings) -> oomwarden_events::Options {
    let reporter = oomwarden_events::Reporter {
        node: oomwarden_events::node_name(wanted.node_name.as_deref()),
    };
    oomwarden_events::Options {
        pod_condition: wanted.pod_condition,
        ..oomwarden_events::Options::new(wanted.kubeconfig.clone(), reporter)
    }
}

/// Replaces the engine's Events sender with one for the settings in force (a reload).
pub(super) fn restart_events(engine: &mut Engine) {
    if !engine.settings().warden.events.enabled && engine.events().is_some() {
        tracing::info!("Kubernetes Events are no longer sent (events.enabled: false)");
    }
    let events = events_sender(engine.settings());
    engine.set_events(events);
}
