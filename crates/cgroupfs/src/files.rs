//! Where the readers' bytes come from.
//!
//! Every read of [`crate::CgroupFs`] and of procfs goes through a [`Files`]: [`Disk`] in
//! production; a recording tap (which keeps what passed, for `oomwarden record` and the flight
//! recorder) or a recording being replayed (`oomwarden replay`) elsewhere. The readers, the
//! parsers and everything above them run unchanged on all three.

use std::fmt;
use std::io;
use std::path::Path;

/// A read-only view of a file tree, by absolute path.
pub trait Files: Send + Sync + fmt::Debug {
    /// The whole content of a file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Names of the directories directly below `path`, in any order. Entries that vanish while
    /// listing are left out.
    fn subdirs(&self, path: &Path) -> io::Result<Vec<String>>;
    /// Whether `path` is a directory now.
    fn is_dir(&self, path: &Path) -> bool;
}

/// The real filesystem.
#[derive(Debug, Clone, Copy, Default)]
pub struct Disk;

impl Files for Disk {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn subdirs(&self, path: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            // `file_type` does not follow symlinks: a symlink is not a cgroup.
            if entry.file_type().is_ok_and(|t| t.is_dir())
                && let Ok(name) = entry.file_name().into_string()
            {
                names.push(name);
            }
        }
        Ok(names)
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }
}
