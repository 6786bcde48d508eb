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
    /// The identity of the file or directory at `path` now: its inode number. For a cgroup
    /// that is the kernel's cgroup id, which cgroup2 never gives twice, so a cgroup removed
    /// and created again under the same path (a restarted unit, a new pod sandbox) has
    /// another.
    fn identity(&self, path: &Path) -> io::Result<u64>;
}

/// The real filesystem.
#[derive(Debug, Clone, Copy, Default)]
pub struct Disk;

/// No cgroup or proc file the daemon reads comes near this (the largest, `cgroup.procs` of a
/// huge cgroup, holds a few bytes per PID); a file that streams forever (a fake tree's symlink
/// to `/dev/urandom`) is cut here and is an error, so no read can hang or bloat a cycle.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

impl Files for Disk {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        use std::io::Read;
        let mut content = Vec::new();
        std::fs::File::open(path)?
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut content)?;
        if u64::try_from(content.len()).unwrap_or(u64::MAX) > MAX_FILE_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "longer than {} MiB: not a cgroup or proc file",
                    MAX_FILE_BYTES >> 20
                ),
            ));
        }
        Ok(content)
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
            // A name that is not UTF-8 is a cgroup too (see `names`).
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                names.push(crate::names::from_os(&entry.file_name()));
            }
        }
        Ok(names)
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn identity(&self, path: &Path) -> io::Result<u64> {
        use std::os::unix::fs::MetadataExt;
        Ok(std::fs::metadata(path)?.ino())
    }
}

#[cfg(test)]
mod bounded {
    use super::*;

    // Issue 14: a fake tree's file that streams forever must not hang or bloat a cycle.
    #[test]
    fn a_file_that_never_ends_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let link = dir.path().join("memory.pressure");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap_or_else(|e| panic!("{e}"));
        let started = std::time::Instant::now();
        let err = Disk
            .read(&link)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("not a cgroup or proc file"), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        let ok = dir.path().join("memory.current");
        std::fs::write(&ok, "4096\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Disk.read(&ok).ok(), Some(b"4096\n".to_vec()));
    }
}
