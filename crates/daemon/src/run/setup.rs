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
/// not a path walk, an open and a close), within the budget's `kept`; and, when recording,
/// the tap every read goes through.
pub(super) fn engine_files(
    options: &RunOptions,
    recording: bool,
    budget: Descriptors,
) -> (Option<Arc<oomwarden_recording::Tap>>, CgroupFs, ProcFs) {
    let kept: Arc<dyn oomwarden_cgroupfs::Files> =
        Arc::new(oomwarden_cgroupfs::Kept::new(budget.kept));
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

/// The descriptors the daemon keeps open, budgeted against its open-file limit so that the
/// OOM loop always has room (a kill's pidfds, a cycle's reads): the files its cycles keep open
/// and the usage history's `memory.peak` marks each take at most a quarter of the limit, and
/// the marks only what leaves the loop [`LOOP_RESERVE`] (or a quarter) beside
/// [`OWN_DESCRIPTORS`] and the clients' [`CONNECTIONS`] (352 of a 1,024 limit). Found by the fault suite: one mark per series
/// up to `maxSeries` made the loop's own reads fail with `EMFILE` under a 1,024 limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Descriptors {
    /// Files the cycles' reads keep open (`cgroupfs::Kept`): 256 (the every-cycle files of a
    /// node with a few hundred Guaranteed pods), at most a quarter of the limit.
    pub(crate) kept: usize,
    /// `memory.peak` marks the usage history keeps open: at most a quarter of the limit (and
    /// `maxSeries`); past it a mark is read without being kept.
    pub(crate) marks: usize,
}

/// The descriptors the daemon holds besides its budget: logs, the state directory, sockets,
/// runtimes, threads' eventfds, inotify instances, the kernel log (31 measured; a margin).
pub(crate) const OWN_DESCRIPTORS: usize = 64;
/// The clients' connections at most: 32 to the metrics endpoint, 64 to the action API.
pub(crate) const CONNECTIONS: usize = 96;
/// The fewest descriptors left to the loop (a kill's pidfds, a cycle's reads): 256, or a
/// quarter of the limit when that is more.
pub(crate) const LOOP_RESERVE: usize = 256;

impl Descriptors {
    /// The budget under the soft open-file limit `nofile` (1,024 when it could not be read).
    pub(crate) fn under(nofile: &std::io::Result<(u64, u64)>) -> Self {
        let limit =
            usize::try_from(nofile.as_ref().map_or(1024, |(soft, _)| *soft)).unwrap_or(usize::MAX);
        let quarter = limit / 4;
        let kept = quarter.min(256);
        // What is left once the loop has its reserve: at least 256, or a quarter.
        let left = limit
            .saturating_sub(OWN_DESCRIPTORS + CONNECTIONS + kept)
            .saturating_sub(quarter.max(LOOP_RESERVE));
        Descriptors {
            kept,
            marks: quarter.min(left),
        }
    }

    /// The most the daemon keeps open: what `operations.md` promises.
    pub(crate) fn bound(self) -> usize {
        OWN_DESCRIPTORS + CONNECTIONS + self.kept + self.marks
    }
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
        // A taint a daemon before this one put there is found and let go (issue 54).
        find_taint_at_start: true,
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

#[cfg(test)]
mod tests {
    use super::Descriptors;

    // Issue 54 (5): under a 1,024 limit the daemon keeps at most 672 descriptors, so the loop
    // has at least 352; under 65,536 the marks are bounded by `maxSeries` instead.
    #[test]
    fn the_descriptor_budget_leaves_the_loop_its_reserve() {
        for (limit, kept, marks, bound) in [
            (1024u64, 256, 256, 672),
            (4096, 256, 1024, 1440),
            (65536, 256, 16384, 16800),
            // A limit too low for the budget: no mark kept; the loop keeps what is left.
            (256, 64, 0, 224),
        ] {
            let d = Descriptors::under(&Ok((limit, limit)));
            assert_eq!(
                (d.kept, d.marks, d.bound()),
                (kept, marks, bound),
                "{limit}"
            );
        }
        let unknown = Descriptors::under(&Err(std::io::Error::other("no")));
        assert_eq!(unknown.bound(), 672, "read as 1,024");
    }
}
