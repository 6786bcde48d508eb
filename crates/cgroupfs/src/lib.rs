//! Read cgroup v2 files under an injectable root (`/sys/fs/cgroup` in production, a fixture
//! tree in a tempdir in tests).
//!
//! Methods are named after the kernel files they read (`memory_pressure` reads
//! `memory.pressure`). Parsing is split from reading: [`parse`] holds pure functions from
//! text to values, which are property-tested; [`CgroupFs`] adds the path to every error.
//!
//! Races are normal: a cgroup can vanish between listing and reading. A missing file or cgroup
//! (`ENOENT`, `ENODEV`) is [`ReadError::NotFound`], which callers treat as an ordinary outcome;
//! malformed content is [`ReadError::Parse`], naming the file. This crate writes nothing a
//! node sees: its two writes are per-descriptor subscriptions (a PSI trigger, [`PressureTriggers`];
//! a reset of the reader's own high-water mark, [`PeakMarks`]).

mod dirs;
mod files;
mod modified;
pub mod names;
pub mod parse;
mod peaks;
mod pending;
mod regular;
mod triggers;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use dirs::MAX_WATCHED_DIRS;
pub use files::{Disk, Files, KEPT_AT_MOST, KEPT_IDLE, Kept, MAX_FILE_BYTES};
pub use modified::{MAX_WATCHED_FILES, Modified};
pub use parse::{CgroupEvents, Limit, ParseError, Pressure, PressureError, PsiValue};
pub use peaks::{Mark, PeakMarks};
pub use regular::read_regular;
pub use triggers::{PressureTriggers, TriggerSpec};

/// Where cgroup2 is mounted on a normal host.
pub const DEFAULT_CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// A cgroup's path on the node (`/sys/fs/cgroup/<cgroup>`), whatever root it was read under:
/// what Talos gives the ranking's `path` and what records and logs show. A DaemonSet reads
/// the host's tree at `/host/sys/fs/cgroup`, yet the node's path is the one people and
/// expressions know.
pub fn node_path(cgroup: &str) -> String {
    if cgroup.is_empty() {
        DEFAULT_CGROUP_ROOT.to_owned()
    } else {
        format!("{DEFAULT_CGROUP_ROOT}/{}", names::display(cgroup))
    }
}

/// A failed read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file, or its cgroup, does not exist (any more).
    #[error("{path}: not found")]
    NotFound {
        /// The file.
        path: PathBuf,
    },
    /// Any other I/O error.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The content is not what the kernel writes there.
    #[error("{path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: ParseError,
    },
}

impl ReadError {
    /// Whether the file or cgroup simply does not exist (a race or an old kernel).
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::NotFound { .. })
    }

    /// The process ran out of file descriptors or memory (`EMFILE`, `ENFILE`, `ENOMEM`): the
    /// file is there, the daemon could not read it. Never to be taken as a missing file.
    pub fn is_resource_exhaustion(&self) -> bool {
        let exhausted = [
            rustix::io::Errno::MFILE,
            rustix::io::Errno::NFILE,
            rustix::io::Errno::NOMEM,
        ];
        matches!(self, ReadError::Io { source, .. }
            if source.raw_os_error().is_some_and(|code| exhausted.iter().any(|e| e.raw_os_error() == code)))
    }

    /// The file concerned.
    pub fn path(&self) -> &Path {
        match self {
            ReadError::NotFound { path }
            | ReadError::Io { path, .. }
            | ReadError::Parse { path, .. } => path,
        }
    }
}

/// `ENODEV` is what reading a file of a cgroup removed after `open` gives.
const ENODEV: i32 = 19;

fn classify(path: PathBuf, source: io::Error) -> ReadError {
    if source.kind() == io::ErrorKind::NotFound || source.raw_os_error() == Some(ENODEV) {
        ReadError::NotFound { path }
    } else {
        ReadError::Io { path, source }
    }
}

/// A cgroup v2 hierarchy rooted at a directory. Cgroups are named by their path relative to
/// the root (`""` is the root cgroup, `kubepods/besteffort` a child).
#[derive(Debug, Clone)]
pub struct CgroupFs {
    root: PathBuf,
    files: Arc<dyn Files>,
}

impl CgroupFs {
    /// A hierarchy at `root` (no check that it is a cgroup2 mount, so fixtures work).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        CgroupFs::with_files(root, Arc::new(Disk))
    }

    /// A hierarchy at `root` read through `files` (a recording tap, or a replayed recording).
    pub fn with_files(root: impl Into<PathBuf>, files: Arc<dyn Files>) -> Self {
        CgroupFs {
            root: root.into(),
            files,
        }
    }

    /// What the files are read through.
    pub fn files(&self) -> &Arc<dyn Files> {
        &self.files
    }

    /// Whether the cgroup's directory exists now.
    pub fn is_dir(&self, cgroup: &str) -> bool {
        self.files.is_dir(&self.dir(cgroup))
    }

    /// The cgroup's id now (its directory's inode number; see [`Files::cgroup_id`]).
    pub fn cgroup_id(&self, cgroup: &str) -> Result<u64, ReadError> {
        let dir = self.dir(cgroup);
        self.files.cgroup_id(&dir).map_err(|e| classify(dir, e))
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Absolute directory of a cgroup (a name that is not UTF-8 back in its own bytes: see
    /// [`names`]).
    pub fn dir(&self, cgroup: &str) -> PathBuf {
        if cgroup.is_empty() {
            self.root.clone()
        } else {
            self.root.join(names::fs_path(cgroup))
        }
    }

    /// The path of a file of a cgroup.
    pub fn file(&self, cgroup: &str, name: &str) -> PathBuf {
        self.dir(cgroup).join(name)
    }

    /// Reads a file of a cgroup as text.
    pub fn read(&self, cgroup: &str, name: &str) -> Result<String, ReadError> {
        let path = self.file(cgroup, name);
        match self.files.read(&path) {
            Ok(bytes) => String::from_utf8(bytes).map_err(|e| ReadError::Io {
                path,
                source: io::Error::new(io::ErrorKind::InvalidData, e),
            }),
            Err(e) => Err(classify(path, e)),
        }
    }

    fn read_parsed<T>(
        &self,
        cgroup: &str,
        name: &str,
        parse: impl FnOnce(&str) -> Result<T, ParseError>,
    ) -> Result<T, ReadError> {
        let text = self.read(cgroup, name)?;
        parse(&text).map_err(|source| ReadError::Parse {
            path: self.file(cgroup, name),
            source,
        })
    }

    /// `memory.pressure`: PSI `some` and `full` lines.
    pub fn memory_pressure(&self, cgroup: &str) -> Result<Pressure, ReadError> {
        self.read_parsed(cgroup, "memory.pressure", parse::pressure)
    }

    /// `memory.current`, bytes.
    pub fn memory_current(&self, cgroup: &str) -> Result<u64, ReadError> {
        self.read_parsed(cgroup, "memory.current", parse::unsigned)
    }

    /// `memory.swap.current`, bytes (with swap accounting).
    pub fn memory_swap_current(&self, cgroup: &str) -> Result<u64, ReadError> {
        self.read_parsed(cgroup, "memory.swap.current", parse::unsigned)
    }

    /// `memory.swap.max`: a byte limit or `max` (with swap accounting).
    pub fn memory_swap_max(&self, cgroup: &str) -> Result<Limit, ReadError> {
        self.memory_limit_file(cgroup, "memory.swap.max")
    }

    /// `memory.min` or `memory.low` (`name`), bytes.
    pub fn memory_protection(&self, cgroup: &str, name: &str) -> Result<u64, ReadError> {
        self.read_parsed(cgroup, name, parse::unsigned)
    }

    /// `memory.peak`, bytes (kernel 5.19+).
    pub fn memory_peak(&self, cgroup: &str) -> Result<u64, ReadError> {
        self.read_parsed(cgroup, "memory.peak", parse::unsigned)
    }

    /// `memory.max`: a byte limit or `max`.
    pub fn memory_max(&self, cgroup: &str) -> Result<Limit, ReadError> {
        self.read_parsed(cgroup, "memory.max", parse::limit)
    }

    /// A memory limit file other than `memory.max` (`memory.high`, `memory.low`,
    /// `memory.min`): bytes or `max`.
    pub fn memory_limit_file(&self, cgroup: &str, name: &str) -> Result<Limit, ReadError> {
        self.read_parsed(cgroup, name, parse::limit)
    }

    /// `memory.stat`: flat keyed counters.
    pub fn memory_stat(&self, cgroup: &str) -> Result<Vec<(String, u64)>, ReadError> {
        self.read_parsed(cgroup, "memory.stat", parse::flat_keyed)
    }

    /// `memory.events`: flat keyed counters (`low`, `high`, `max`, `oom`, `oom_kill`, …).
    pub fn memory_events(&self, cgroup: &str) -> Result<Vec<(String, u64)>, ReadError> {
        self.read_parsed(cgroup, "memory.events", parse::flat_keyed)
    }

    /// `cgroup.procs`: the PIDs directly in this cgroup.
    pub fn cgroup_procs(&self, cgroup: &str) -> Result<Vec<u32>, ReadError> {
        self.read_parsed(cgroup, "cgroup.procs", parse::pids)
    }

    /// `cgroup.events`: `populated` and `frozen`.
    pub fn cgroup_events(&self, cgroup: &str) -> Result<CgroupEvents, ReadError> {
        self.read_parsed(cgroup, "cgroup.events", parse::cgroup_events)
    }

    /// `cgroup.controllers`: the controllers available to this cgroup's children.
    pub fn cgroup_controllers(&self, cgroup: &str) -> Result<Vec<String>, ReadError> {
        Ok(self
            .read(cgroup, "cgroup.controllers")?
            .split_whitespace()
            .map(str::to_owned)
            .collect())
    }

    /// Names of the child cgroups (directories), sorted by name as Go's `os.ReadDir` returns
    /// them. Entries that vanish while listing are skipped.
    pub fn children(&self, cgroup: &str) -> Result<Vec<String>, ReadError> {
        let dir = self.dir(cgroup);
        let mut names = self.files.subdirs(&dir).map_err(|e| classify(dir, e))?;
        names.sort_unstable();
        Ok(names)
    }

    /// Whether a cgroup has any live process in it or below it: `cgroup.events` says
    /// `populated 1`; where that file is missing (fixtures, very old kernels), any PID in a
    /// `cgroup.procs` of the subtree. `Ok(false)` when the cgroup is gone.
    pub fn is_populated(&self, cgroup: &str) -> Result<bool, ReadError> {
        match self.cgroup_events(cgroup) {
            Ok(events) => Ok(events.populated),
            Err(ReadError::NotFound { .. }) if !self.is_dir(cgroup) => Ok(false),
            Err(ReadError::NotFound { .. }) => self.subtree_has_pids(cgroup),
            Err(e) => Err(e),
        }
    }

    fn subtree_has_pids(&self, cgroup: &str) -> Result<bool, ReadError> {
        let mut stack = vec![cgroup.to_owned()];
        while let Some(current) = stack.pop() {
            match self.cgroup_procs(&current) {
                Ok(pids) if !pids.is_empty() => return Ok(true),
                Ok(_) | Err(ReadError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
            match self.children(&current) {
                Ok(children) => stack.extend(children.into_iter().map(|c| join(&current, &c))),
                Err(ReadError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(false)
    }
}

/// Joins a relative cgroup path and a child name.
pub fn join(parent: &str, child: &str) -> String {
    if parent.is_empty() {
        child.to_owned()
    } else {
        format!("{parent}/{child}")
    }
}

#[cfg(test)]
mod tests;

/// A new cgroup on the first cgroup2 mount of the host running the tests (`/sys/fs/cgroup`,
/// or `…/unified` on a hybrid host), named `{name}-{pid}`, for the tests that ask the kernel
/// itself; `None`, said on stderr, where there is none or it may not be written (not root).
#[cfg(test)]
pub(crate) fn host_test_cgroup(name: &str) -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let mount = mounts.lines().find_map(|line| {
        let mut fields = line.split(' ');
        let (_, dir, kind) = (fields.next(), fields.next()?, fields.next()?);
        (kind == "cgroup2").then(|| PathBuf::from(dir))
    });
    let Some(mount) = mount else {
        eprintln!("skipped: no cgroup2 mount");
        return None;
    };
    let cgroup = mount.join(format!("{name}-{}", std::process::id()));
    match std::fs::create_dir(&cgroup) {
        Ok(()) => Some(cgroup),
        Err(e) => {
            eprintln!("skipped: cannot make {}: {e}", cgroup.display());
            None
        }
    }
}
