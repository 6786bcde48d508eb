//! What the cgroup directories hold, kept between reads and told by the kernel when it
//! changes: a directory's subdirectories, a cgroup's id, a cgroup that is not there. Every
//! cycle asks the same (each class's id, the Guaranteed pods under `kubepods`, the node system
//! partition that most nodes lack), and each answer from the filesystem is a path walk from
//! `/`: under emulation those walks were a fifth of the quiet daemon's CPU
//! (docs/performance.md).
//!
//! Exact, not timed: an answer is kept only while an inotify watch on the directory that
//! holds it is in place, and any event that names an entry of that directory (made, removed,
//! moved) or the directory itself (removed, moved, the watch dropped) forgets it; the events
//! are read before every answer. A `mkdir` or `rmdir` that returned before the question is
//! queued before it (the VFS notifies before the system call returns), so it is seen. Lost
//! events (the kernel's queue overflowed) forget everything.
//!
//! Only on cgroup2 unless asked otherwise: there no directory can be renamed (the kernel
//! refuses, `EPERM`) and none removed before its children, so no path can come to name
//! another directory without an event on a watched one. Elsewhere (a fixture tree) an
//! ancestor renamed would go unseen, so nothing is kept there.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
use rustix::io::Errno;

use crate::pending::Pending;

/// At most this many directories are watched (one inotify watch each; the kernel's default
/// `max_user_watches` is 8,192 or more); beyond, answers come from the filesystem each time.
pub const MAX_WATCHED_DIRS: usize = 512;

/// `statfs`'s type of a cgroup2 mount (linux/magic.h).
const CGROUP2_SUPER_MAGIC: u64 = 0x6367_7270;

#[derive(Debug)]
pub(crate) struct DirAnswers {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// None: inotify could not be set up; nothing is kept.
    fd: Option<OwnedFd>,
    /// Keep answers on any filesystem, not only cgroup2 (tests on fixture trees).
    any_fs: bool,
    paths: HashMap<i32, PathBuf>,
    dirs: HashMap<PathBuf, Watched>,
    /// Directories on another filesystem than cgroup2 (the mount's parent): never watched,
    /// and not asked again.
    elsewhere: HashSet<PathBuf>,
    /// Questions answered from the filesystem (for tests: an answer kept asks none).
    lookups: u64,
}

#[derive(Debug, Default)]
struct Watched {
    wd: i32,
    /// Its subdirectories, as [`crate::Files::subdirs`] gives them.
    listing: Option<Vec<String>>,
    /// Entries known: absent, or a directory with its inode number.
    entries: HashMap<OsString, Entry>,
}

/// Whether a directory is watched.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Watch {
    Yes,
    /// It does not exist.
    Missing,
    /// Not kept: another filesystem, no inotify, the bound.
    No,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Entry {
    Absent,
    Dir(u64),
}

fn not_found() -> io::Error {
    io::Error::from(Errno::NOENT)
}

impl DirAnswers {
    /// Answers kept on cgroup2 only (`any_fs`: on every filesystem).
    pub(crate) fn new(any_fs: bool) -> DirAnswers {
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok();
        DirAnswers {
            inner: Mutex::new(Inner {
                fd,
                any_fs,
                paths: HashMap::new(),
                dirs: HashMap::new(),
                elsewhere: HashSet::new(),
                lookups: 0,
            }),
        }
    }

    /// The directories below `path` (not symlinks).
    pub(crate) fn subdirs(&self, path: &Path) -> io::Result<Vec<String>> {
        let Ok(mut inner) = self.inner.lock() else {
            return crate::Disk.subdirs_of(path);
        };
        inner.drain();
        if let Some(listing) = inner.dirs.get(path).and_then(|w| w.listing.as_ref()) {
            return Ok(listing.clone());
        }
        // Watched before it is read: a change after the read is an event, not lost.
        let watched = inner.watch(path);
        inner.lookups += 1;
        let names = crate::Disk.subdirs_of(path)?;
        if watched == Watch::Yes
            && let Some(w) = inner.dirs.get_mut(path)
        {
            w.listing = Some(names.clone());
        }
        Ok(names)
    }

    /// Whether `path` is a directory now (symlinks followed).
    pub(crate) fn is_dir(&self, path: &Path) -> bool {
        match self.entry(path) {
            Ok(Some(Entry::Dir(_))) => true,
            Ok(Some(Entry::Absent)) => false,
            Ok(None) => path.is_dir(),
            Err(_) => false,
        }
    }

    /// The inode number of `path` (symlinks followed).
    pub(crate) fn id(&self, path: &Path) -> io::Result<u64> {
        match self.entry(path)? {
            Some(Entry::Dir(ino)) => Ok(ino),
            Some(Entry::Absent) => Err(not_found()),
            None => Ok(std::fs::metadata(path)?.ino()),
        }
    }

    /// What `path` is, kept or looked up (and kept when its directory is watched); `None`
    /// for what is never kept (a file, a symlink): the caller asks the filesystem.
    fn entry(&self, path: &Path) -> io::Result<Option<Entry>> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Ok(None);
        };
        let Ok(mut inner) = self.inner.lock() else {
            return Ok(None);
        };
        inner.drain();
        inner.entry(path, parent, name)
    }

    /// How many times the filesystem was asked.
    #[cfg(test)]
    pub(crate) fn lookups(&self) -> u64 {
        self.inner.lock().map_or(0, |i| i.lookups)
    }

    /// How many directories are watched.
    #[cfg(test)]
    pub(crate) fn watched(&self) -> usize {
        self.inner.lock().map_or(0, |i| i.dirs.len())
    }
}

impl Inner {
    /// [`DirAnswers::entry`] after the events are read. Below a directory known absent
    /// nothing is (no lookup: the node system partition's classes on a node without it).
    fn entry(&mut self, path: &Path, parent: &Path, name: &OsStr) -> io::Result<Option<Entry>> {
        if let Some(w) = self.dirs.get(parent)
            && let Some(entry) = w.entries.get(name)
        {
            return Ok(Some(*entry));
        }
        if let (Some(grand), Some(parent_name)) = (parent.parent(), parent.file_name())
            && self
                .dirs
                .get(grand)
                .and_then(|w| w.entries.get(parent_name))
                == Some(&Entry::Absent)
        {
            return Ok(Some(Entry::Absent));
        }
        let watched = self.watch(parent);
        self.lookups += 1;
        let entry = match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => Entry::Dir(m.ino()),
            Ok(_) => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // Its parent may be what is missing: known absent too, so that the next
                // question about anything below is answered from here.
                if watched == Watch::Missing
                    && let (Some(grand), Some(parent_name)) = (parent.parent(), parent.file_name())
                {
                    let _ = self.entry(parent, grand, parent_name);
                }
                Entry::Absent
            }
            Err(e) => return Err(e),
        };
        if watched == Watch::Yes
            && let Some(w) = self.dirs.get_mut(parent)
        {
            w.entries.insert(name.to_owned(), entry);
        }
        Ok(Some(entry))
    }

    /// Watches `dir` (if not yet): whether it is watched, so that answers about it may be kept.
    fn watch(&mut self, dir: &Path) -> Watch {
        if self.dirs.contains_key(dir) {
            return Watch::Yes;
        }
        let Some(fd) = &self.fd else {
            return Watch::No;
        };
        if self.dirs.len() >= MAX_WATCHED_DIRS || self.elsewhere.contains(dir) {
            return Watch::No;
        }
        if !self.any_fs {
            match rustix::fs::statfs(dir) {
                Ok(s) if s.f_type.cast_unsigned() == CGROUP2_SUPER_MAGIC => {}
                Ok(_) => {
                    if self.elsewhere.len() < MAX_WATCHED_DIRS {
                        self.elsewhere.insert(dir.to_owned());
                    }
                    return Watch::No;
                }
                Err(Errno::NOENT) => return Watch::Missing,
                Err(_) => return Watch::No,
            }
        }
        let flags = WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::ONLYDIR
            | WatchFlags::DONT_FOLLOW;
        let wd = match inotify::add_watch(fd, dir, flags) {
            Ok(wd) => wd,
            Err(Errno::NOENT) => return Watch::Missing,
            Err(_) => return Watch::No,
        };
        // The same directory under two paths (a bind mount): one watch, so neither is kept.
        if self.paths.contains_key(&wd) {
            return Watch::No;
        }
        self.paths.insert(wd, dir.to_owned());
        self.dirs.insert(
            dir.to_owned(),
            Watched {
                wd,
                ..Watched::default()
            },
        );
        Watch::Yes
    }

    /// Reads the pending events and forgets what they touch.
    fn drain(&mut self) {
        let Some(fd) = &self.fd else {
            return;
        };
        for event in crate::pending::pending(fd) {
            match event {
                Pending::Overflow => {
                    for w in self.dirs.values_mut() {
                        w.listing = None;
                        w.entries.clear();
                    }
                }
                Pending::Gone(wd) => {
                    if let Some(dir) = self.paths.remove(&wd)
                        && let Some(w) = self.dirs.remove(&dir)
                        && let Some(fd) = &self.fd
                    {
                        // Removed or moved: the kernel drops a removed one's watch itself.
                        let _ = inotify::remove_watch(fd, w.wd);
                    }
                }
                Pending::Changed(wd, name) => {
                    let Some(w) = self.paths.get(&wd).and_then(|dir| self.dirs.get_mut(dir)) else {
                        continue;
                    };
                    w.listing = None;
                    match name {
                        Some(name) => {
                            w.entries.remove(&name);
                        }
                        None => w.entries.clear(),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
        r.unwrap_or_else(|e| panic!("{e}"))
    }

    fn sorted(mut v: Vec<String>) -> Vec<String> {
        v.sort();
        v
    }

    // A listing is read once and kept; a directory made or removed below is seen at once.
    #[test]
    fn a_listing_is_kept_until_the_directory_changes() {
        let root = ok(tempfile::tempdir());
        let kubepods = root.path().join("kubepods");
        ok(std::fs::create_dir_all(kubepods.join("pod-a")));
        let dirs = DirAnswers::new(true);
        assert_eq!(ok(dirs.subdirs(&kubepods)), ["pod-a"]);
        assert_eq!(ok(dirs.subdirs(&kubepods)), ["pod-a"]);
        assert_eq!(dirs.lookups(), 1, "the second listing was kept");
        ok(std::fs::create_dir(kubepods.join("pod-b")));
        assert_eq!(sorted(ok(dirs.subdirs(&kubepods))), ["pod-a", "pod-b"]);
        ok(std::fs::remove_dir(kubepods.join("pod-a")));
        assert_eq!(ok(dirs.subdirs(&kubepods)), ["pod-b"]);
        assert_eq!(dirs.lookups(), 3);
        // A file is no subdirectory (and its making forgets the listing, harmlessly).
        ok(std::fs::write(kubepods.join("memory.current"), "1"));
        assert_eq!(ok(dirs.subdirs(&kubepods)), ["pod-b"]);
    }

    // A directory that is not there is known absent until it is made; then it is one.
    #[test]
    fn an_absent_directory_is_seen_when_made() {
        let root = ok(tempfile::tempdir());
        let system = root.path().join("kubepods/system");
        ok(std::fs::create_dir(root.path().join("kubepods")));
        let dirs = DirAnswers::new(true);
        assert!(!dirs.is_dir(&system));
        assert!(!dirs.is_dir(&system));
        assert_eq!(dirs.lookups(), 1, "the absence was kept");
        ok(std::fs::create_dir(&system));
        assert!(dirs.is_dir(&system));
        assert!(dirs.is_dir(&system));
        assert_eq!(dirs.lookups(), 2);
        ok(std::fs::remove_dir(&system));
        assert!(!dirs.is_dir(&system));
        assert_eq!(
            dirs.id(&system).err().map(|e| e.kind()),
            Some(io::ErrorKind::NotFound)
        );
    }

    // Below a directory known absent nothing is asked; made with its parent, it is seen.
    #[test]
    fn below_an_absent_directory_nothing_is_asked() {
        let root = ok(tempfile::tempdir());
        ok(std::fs::create_dir(root.path().join("kubepods")));
        let besteffort = root.path().join("kubepods/system/besteffort");
        let dirs = DirAnswers::new(true);
        assert!(!dirs.is_dir(&besteffort));
        let asked = dirs.lookups();
        assert!(!dirs.is_dir(&besteffort));
        assert!(!dirs.is_dir(&root.path().join("kubepods/system/burstable")));
        assert!(!dirs.is_dir(&root.path().join("kubepods/system")));
        assert_eq!(
            dirs.lookups(),
            asked,
            "all known absent from `kubepods`'s watch"
        );
        ok(std::fs::create_dir_all(&besteffort));
        assert!(dirs.is_dir(&besteffort));
        assert!(!dirs.is_dir(&root.path().join("kubepods/system/burstable")));
    }

    // A directory removed and made again under its path has another id, seen at once.
    #[test]
    fn a_directory_made_again_has_its_new_id() {
        let root = ok(tempfile::tempdir());
        let class = root.path().join("system");
        ok(std::fs::create_dir(&class));
        let dirs = DirAnswers::new(true);
        let first = ok(dirs.id(&class));
        assert_eq!(first, ok(std::fs::metadata(&class)).ino());
        assert_eq!(ok(dirs.id(&class)), first);
        assert_eq!(dirs.lookups(), 1);
        // Another directory keeps the old inode number taken while `system` is gone.
        ok(std::fs::remove_dir(&class));
        let holder = root.path().join("holder");
        ok(std::fs::create_dir(&holder));
        ok(std::fs::create_dir(&class));
        let again = ok(dirs.id(&class));
        assert_eq!(again, ok(std::fs::metadata(&class)).ino());
        assert_ne!(again, first);
    }

    // The watched directory removed: its answers go with it, and nothing stale is given.
    #[test]
    fn a_watched_directory_removed_is_forgotten() {
        let root = ok(tempfile::tempdir());
        let parent = root.path().join("kubepods/burstable");
        ok(std::fs::create_dir_all(parent.join("pod-a")));
        let dirs = DirAnswers::new(true);
        assert_eq!(ok(dirs.subdirs(&parent)), ["pod-a"]);
        assert_eq!(dirs.watched(), 1);
        ok(std::fs::remove_dir_all(&parent));
        assert_eq!(
            dirs.subdirs(&parent).err().map(|e| e.kind()),
            Some(io::ErrorKind::NotFound)
        );
        ok(std::fs::create_dir_all(parent.join("pod-c")));
        assert_eq!(ok(dirs.subdirs(&parent)), ["pod-c"]);
    }

    // A symlink is never kept: its target may change without an event here.
    #[test]
    fn a_symlink_is_asked_each_time() {
        let root = ok(tempfile::tempdir());
        ok(std::fs::create_dir(root.path().join("target")));
        let link = root.path().join("link");
        ok(std::os::unix::fs::symlink(
            root.path().join("target"),
            &link,
        ));
        let dirs = DirAnswers::new(true);
        assert!(dirs.is_dir(&link));
        ok(std::fs::remove_dir(root.path().join("target")));
        assert!(!dirs.is_dir(&link));
    }

    // Outside cgroup2 nothing is watched or kept unless asked for (a fixture tree's
    // ancestors may be renamed).
    #[test]
    fn nothing_is_kept_outside_cgroup2() {
        let root = ok(tempfile::tempdir());
        ok(std::fs::create_dir(root.path().join("a")));
        let dirs = DirAnswers::new(false);
        assert!(!dirs.is_dir(&root.path().join("b")));
        assert!(!dirs.is_dir(&root.path().join("b")));
        assert_eq!(ok(dirs.subdirs(root.path())), ["a"]);
        assert_eq!(ok(dirs.subdirs(root.path())), ["a"]);
        assert_eq!(dirs.watched(), 0);
        assert_eq!(dirs.lookups(), 4);
    }

    // On the host's own cgroup2, when there is one and it may be written (root): the kernel
    // tells a cgroup made and removed to a watch on its parent.
    #[test]
    fn on_cgroup2_a_cgroup_made_and_removed_is_seen() {
        let Some(parent) = crate::host_test_cgroup("oomwarden-dirs-test") else {
            return;
        };
        let dirs = DirAnswers::new(false);
        let child = parent.join("child");
        let listed_empty = dirs.subdirs(&parent).ok();
        let absent = dirs.is_dir(&child);
        let made = std::fs::create_dir(&child);
        let present = dirs.is_dir(&child);
        let listed = dirs.subdirs(&parent).ok();
        let id = dirs.id(&child).ok();
        let removed = std::fs::remove_dir(&child);
        let absent_again = !dirs.is_dir(&child);
        let watched = dirs.watched();
        let _ = std::fs::remove_dir(&parent);
        assert_eq!(listed_empty, Some(vec![]));
        assert!(!absent);
        ok(made);
        assert!(present);
        assert_eq!(listed, Some(vec!["child".to_owned()]));
        assert!(id.is_some());
        ok(removed);
        assert!(absent_again);
        assert!(watched >= 1, "cgroup2 directories are watched");
    }
}
