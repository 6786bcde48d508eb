//! The state directory: opened and checked, locked while a daemon runs, or (read-only) run
//! without history; the cooldown restored from the history.

use std::path::Path;

use oomwarden_collect::Collector;
use oomwarden_config::Settings;

use crate::history::History;
use crate::statedir::StateDir;
use oomwarden_node::{monotonic_ns, wall_clock};

use super::options::config_name;
use super::options::{RunError, RunOptions};

/// The lock file in the state directory, held (`flock`) while a daemon runs.
pub(crate) const LOCK_NAME: &str = "oomwarden.lock";

/// Takes the state directory's lock; the lock lasts as long as the returned file is open, and
/// the kernel drops it when the process ends.
pub(super) fn lock_state_dir(dir: &StateDir) -> Result<std::fs::File, RunError> {
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
            "the state directory is on a read-only filesystem: running WITHOUT action history (records are kept in memory only), lock, action API socket, saved flight windows or a saved usage history"
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

/// What the action API serves before the first cycle.
pub(super) fn starting_state(
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

/// The cooldown survives a restart: `time_since_trigger` continues from the last triggered
/// record of this boot, so restarting the daemon (or its pod) never bypasses it. Kernel OOM
/// kills are no trigger of ours: the last of our own records counts.
pub(super) fn restored_cooldown(history: &History) -> Option<u64> {
    let last = history.last_own()?;
    let at = crate::history::restored_trigger(last, monotonic_ns(), chrono::Utc::now())?;
    tracing::info!(
        record = last.id,
        ago = ?std::time::Duration::from_nanos(monotonic_ns().saturating_sub(at)),
        "cooldown restored from the action history"
    );
    Some(at)
}
