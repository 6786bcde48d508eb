//! The tap: a [`Files`] that passes every read through and keeps its result.

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use oomwarden_cgroupfs::Files;

use crate::format::Observation;

/// `ENOENT`, `EIO`: the errno of an error that carries none.
const ENOENT: i32 = 2;
const EIO: i32 = 5;

fn errno(e: &io::Error) -> i32 {
    e.raw_os_error()
        .unwrap_or(if e.kind() == io::ErrorKind::NotFound {
            ENOENT
        } else {
            EIO
        })
}

/// Reads through `inner` and keeps every result, in order, until [`Tap::take`].
#[derive(Debug)]
pub struct Tap {
    inner: Arc<dyn Files>,
    log: Mutex<Vec<(Arc<str>, Observation)>>,
}

impl Tap {
    /// A tap over `inner` (usually [`oomwarden_cgroupfs::Disk`]).
    pub fn new(inner: Arc<dyn Files>) -> Arc<Tap> {
        Arc::new(Tap {
            inner,
            log: Mutex::new(Vec::new()),
        })
    }

    /// Everything read since the last call, oldest first.
    pub fn take(&self) -> Vec<(Arc<str>, Observation)> {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn keep(&self, path: &Path, obs: Observation) {
        let path: Arc<str> = Arc::from(path.to_string_lossy().as_ref());
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((path, obs));
    }
}

impl Files for Tap {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let result = self.inner.read(path);
        self.keep(
            path,
            match &result {
                Ok(bytes) => Observation::File(bytes.clone()),
                Err(e) => Observation::FileError(errno(e)),
            },
        );
        result
    }

    fn subdirs(&self, path: &Path) -> io::Result<Vec<String>> {
        let result = self.inner.subdirs(path).map(|mut names| {
            // Sorted, so that a listing in another order is not a change.
            names.sort_unstable();
            names
        });
        self.keep(
            path,
            match &result {
                Ok(names) => Observation::Dirs(names.clone()),
                Err(e) => Observation::DirsError(errno(e)),
            },
        );
        result
    }

    /// Not recorded: a replay cannot tell a cgroup replaced under the same path (see
    /// [`Playback`](crate::Playback)).
    fn cgroup_id(&self, path: &Path) -> io::Result<u64> {
        self.inner.cgroup_id(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        let yes = self.inner.is_dir(path);
        self.keep(path, Observation::IsDir(yes));
        yes
    }
}
