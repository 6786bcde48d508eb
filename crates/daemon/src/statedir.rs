//! The state directory, which only this daemon's user can steer: opened once, checked on its
//! descriptor (owned by this user, writable by nobody else, no symlink), and every file in it
//! opened relative to that descriptor without following symlinks.
//!
//! Found by the fault suite: `actions.jsonl` symlinked elsewhere had its target chmodded and
//! appended to; a state directory owned by another user let that user make the root daemon
//! create a root-owned file with their line at a path of their choice (a dangling
//! `actions.jsonl.tmp` planted for the compaction); a symlinked `recordings/` had another
//! directory's files pruned.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fd::OwnedFd;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// Why the state directory (or a directory in it) is refused.
#[derive(Debug, thiserror::Error)]
#[error("state directory {}: {reason}", path.display())]
pub struct StateDirError {
    /// The directory.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
    /// The system error, when one was the reason.
    #[source]
    pub source: Option<io::Error>,
}

impl StateDirError {
    fn io(path: &Path, what: &str, e: impl Into<io::Error>) -> Self {
        let e = e.into();
        StateDirError {
            path: path.to_owned(),
            reason: format!("{what}: {e}"),
            source: Some(e),
        }
    }

    fn refused(path: &Path, reason: String) -> Self {
        StateDirError {
            path: path.to_owned(),
            reason,
            source: None,
        }
    }

    /// The directory is on a read-only filesystem (or cannot be made there).
    pub fn is_read_only(&self) -> bool {
        self.source
            .as_ref()
            .is_some_and(|e| e.raw_os_error() == Some(rustix::io::Errno::ROFS.raw_os_error()))
    }
}

/// An open, checked state directory (or a directory inside one).
#[derive(Debug, Clone)]
pub struct StateDir {
    path: PathBuf,
    fd: Arc<OwnedFd>,
    read_only: bool,
}

impl StateDir {
    /// Opens `path`, making it (0700) when it is missing, and checks it: a directory, not a
    /// symlink, owned by this process's user, writable by no one else. Group and others'
    /// read and search bits are taken away (records hold command lines), said in `notes`.
    pub fn open(path: &Path, notes: &mut Vec<String>) -> Result<StateDir, StateDirError> {
        match rustix::fs::mkdir(path, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(rustix::io::Errno::NOENT) => {
                // Its parents first (as `mkdir -p`), then the directory itself.
                std::fs::create_dir_all(path)
                    .map_err(|e| StateDirError::io(path, "cannot create it", e))?;
                rustix::fs::chmod(path, Mode::from_raw_mode(0o700))
                    .map_err(|e| StateDirError::io(path, "cannot make it private", e))?;
            }
            Err(e) => return Err(StateDirError::io(path, "cannot create it", e)),
        }
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => StateDirError::refused(
                path,
                "is a symlink or not a directory; give the directory itself".to_owned(),
            ),
            e => StateDirError::io(path, "cannot open it", e),
        })?;
        Self::checked(path.to_owned(), fd, notes)
    }

    fn checked(
        path: PathBuf,
        fd: OwnedFd,
        notes: &mut Vec<String>,
    ) -> Result<StateDir, StateDirError> {
        let stat =
            rustix::fs::fstat(&fd).map_err(|e| StateDirError::io(&path, "cannot stat it", e))?;
        let me = rustix::process::geteuid().as_raw();
        if stat.st_uid != me {
            return Err(StateDirError::refused(
                &path,
                format!(
                    "owned by uid {}, not by this process's user (uid {me}); whoever owns it could steer what the daemon writes. chown it, or choose another stateDir",
                    stat.st_uid
                ),
            ));
        }
        let mode = stat.st_mode & 0o7777;
        if mode & 0o022 != 0 {
            return Err(StateDirError::refused(
                &path,
                format!(
                    "writable by its group or others (mode {mode:o}); anyone who can write it could plant links the daemon follows. chmod 700 it"
                ),
            ));
        }
        let read_only = rustix::fs::fstatvfs(&fd)
            .is_ok_and(|s| s.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY));
        if mode & 0o077 != 0 && !read_only {
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o700))
                .map_err(|e| StateDirError::io(&path, "cannot make it private", e))?;
            notes.push(format!(
                "{}: permissions {mode:o} let others read it; tightened to 700",
                path.display()
            ));
        }
        Ok(StateDir {
            path,
            fd: Arc::new(fd),
            read_only,
        })
    }

    /// The directory's path (for messages and records).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `name`'s path, for messages and records.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Whether it is on a read-only filesystem.
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// The directory `name` inside, made (0700) when missing, checked as the state directory
    /// is; a symlink is refused.
    pub fn subdir(&self, name: &str, notes: &mut Vec<String>) -> Result<StateDir, StateDirError> {
        let path = self.join(name);
        match rustix::fs::mkdirat(&*self.fd, name, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(StateDirError::io(&path, "cannot create it", e)),
        }
        let fd = rustix::fs::openat(
            &*self.fd,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => StateDirError::refused(
                &path,
                "is a symlink or not a directory; remove it".to_owned(),
            ),
            e => StateDirError::io(&path, "cannot open it", e),
        })?;
        Self::checked(path, fd, notes)
    }

    /// Opens `name` with `flags` (`O_NOFOLLOW`, `O_NONBLOCK` and `O_CLOEXEC` added; made 0600
    /// with `O_CREAT`), and checks it is a regular file: a symlink is never followed, a FIFO
    /// never blocks.
    pub fn open_file(&self, name: &str, flags: OFlags) -> io::Result<File> {
        let fd = rustix::fs::openat(
            &*self.fd,
            name,
            flags | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| match e {
            rustix::io::Errno::LOOP => io::Error::other(format!(
                "{}: is a symlink; the daemon never follows one in its state directory",
                self.join(name).display()
            )),
            e => e.into(),
        })?;
        let stat = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(io::Error::other(format!(
                "{}: not a regular file",
                self.join(name).display()
            )));
        }
        // A regular file ignores O_NONBLOCK; cleared anyway, for what reads it next.
        let fl = rustix::fs::fcntl_getfl(&fd)?;
        rustix::fs::fcntl_setfl(&fd, fl - OFlags::NONBLOCK)?;
        Ok(File::from(fd))
    }

    /// Creates `name` anew (`O_CREAT | O_EXCL | O_NOFOLLOW`, 0600): a name already there, a
    /// planted dangling symlink included, is an error, never a file written through it.
    pub fn create_new(&self, name: &str) -> io::Result<File> {
        let fd = rustix::fs::openat(
            &*self.fd,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        Ok(File::from(fd))
    }

    /// Renames `from` to `to`, both in this directory.
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        rustix::fs::renameat(&*self.fd, from, &*self.fd, to).map_err(Into::into)
    }

    /// Removes `name` (a symlink itself, never what it points to); a name already gone is
    /// no error.
    pub fn remove(&self, name: &str) -> io::Result<()> {
        match rustix::fs::unlinkat(&*self.fd, name, AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether `name` exists (not followed).
    pub fn exists(&self, name: &str) -> bool {
        rustix::fs::statat(&*self.fd, name, AtFlags::SYMLINK_NOFOLLOW).is_ok()
    }

    /// The names in the directory.
    pub fn names(&self) -> io::Result<Vec<OsString>> {
        let dup = rustix::io::fcntl_dupfd_cloexec(&*self.fd, 0)?;
        let mut dir = rustix::fs::Dir::new(dup)?;
        dir.rewind();
        let mut names = Vec::new();
        for entry in dir {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(OsString::from_vec(name.to_vec()));
            }
        }
        Ok(names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn private() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
            .unwrap_or_else(|e| panic!("{e}"));
        dir
    }

    #[test]
    fn a_directory_writable_by_others_or_a_symlink_is_refused() {
        let dir = private();
        let state = dir.path().join("state");
        std::fs::create_dir(&state).unwrap_or_else(|e| panic!("{e}"));
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o777))
            .unwrap_or_else(|e| panic!("{e}"));
        let e = StateDir::open(&state, &mut Vec::new())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("writable by its group or others (mode 777)"),
            "{e}"
        );
        assert!(e.contains(&state.display().to_string()), "{e}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&state, &link).unwrap_or_else(|e| panic!("{e}"));
        let e = StateDir::open(&link, &mut Vec::new())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("is a symlink"), "{e}");
    }

    #[test]
    fn a_readable_directory_is_tightened_and_a_missing_one_made_private() {
        let dir = private();
        let state = dir.path().join("a/b/state");
        let mut notes = Vec::new();
        let s = StateDir::open(&state, &mut notes).unwrap_or_else(|e| panic!("{e}"));
        let mode = std::fs::metadata(s.path()).map(|m| m.permissions().mode() & 0o777);
        assert_eq!(mode.ok(), Some(0o700));
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755))
            .unwrap_or_else(|e| panic!("{e}"));
        StateDir::open(&state, &mut notes).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            notes.iter().any(|n| n.contains("tightened to 700")),
            "{notes:?}"
        );
    }

    #[test]
    fn files_are_never_opened_through_a_symlink_and_create_new_never_reuses_a_name() {
        let dir = private();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, "theirs").unwrap_or_else(|e| panic!("{e}"));
        let state = dir.path().join("state");
        let s = StateDir::open(&state, &mut Vec::new()).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(&outside, state.join("actions.jsonl"))
            .unwrap_or_else(|e| panic!("{e}"));
        let e = s
            .open_file(
                "actions.jsonl",
                OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE,
            )
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("is a symlink"), "{e}");
        // A dangling link planted for a temporary file.
        std::os::unix::fs::symlink(dir.path().join("made-by-them"), state.join("x.tmp"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(s.create_new("x.tmp").is_err());
        assert!(!dir.path().join("made-by-them").exists());
        s.remove("x.tmp").unwrap_or_else(|e| panic!("{e}"));
        assert!(s.exists("actions.jsonl") && !s.exists("x.tmp"));
        assert_eq!(
            std::fs::read_to_string(&outside).unwrap_or_default(),
            "theirs"
        );
        // A FIFO is refused without blocking.
        rustix::fs::mknodat(
            rustix::fs::CWD,
            state.join("fifo"),
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(s.open_file("fifo", OFlags::WRONLY).is_err());
        let mut names = s.names().unwrap_or_default();
        names.sort();
        assert_eq!(names, ["actions.jsonl", "fifo"]);
    }
}
