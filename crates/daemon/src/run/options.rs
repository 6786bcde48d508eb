//! What `oomwarden run` is given and why it can fail.

use std::path::PathBuf;

use oomwarden_config::Overrides;
use oomwarden_node::SetupError;

use crate::history::HistoryError;

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
    /// Root of the host's own files, for the doctor's findings at start (`/`).
    pub host_root: PathBuf,
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

pub(super) fn config_name(options: &RunOptions) -> String {
    options
        .config_file
        .as_deref()
        .map_or("<defaults>".to_owned(), |f| f.display().to_string())
}

impl RunOptions {
    /// The same with absolute roots, whatever the command line said: what a recording or the
    /// flight recorder keeps must name the paths its meta names.
    pub(super) fn with_absolute_roots(&self) -> RunOptions {
        RunOptions {
            cgroup_root: std::path::absolute(&self.cgroup_root)
                .unwrap_or_else(|_| self.cgroup_root.clone()),
            proc_root: std::path::absolute(&self.proc_root)
                .unwrap_or_else(|_| self.proc_root.clone()),
            ..self.clone()
        }
    }
}
