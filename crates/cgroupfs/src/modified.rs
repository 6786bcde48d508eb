//! Whether any of some cgroup2 files changed since they were last read: files that raise a
//! "file modified" event on every change (`memory.events`, `cgroup.events`: see the kernel's
//! cgroup-v2 documentation), watched with inotify, so that a reader that only wants to know
//! whether they changed (the kernel-OOM watch, each cycle) reads none while nothing happens.
//!
//! All or nothing: the answer is one for the whole set, so that the files are read together,
//! as the kernel-OOM watch needs (its files nest: a parent's counter is matched against its
//! children's read in the same cycle, and the kernel's events for a parent and a child can
//! arrive apart).
//!
//! Only on cgroup2, where such a file can be neither replaced nor renamed, so the watch stays
//! on the file the path names until its cgroup is removed (which drops the watch: then "changed",
//! and it is watched again when asked next, or found gone). A file that cannot be watched
//! (another filesystem, no inotify, the bound) makes every answer "changed". Lost events (the
//! kernel's queue overflowed) too. The kernel sends the event from a work item after the
//! counter moved (at most one per 10 ms per file): a change is told by the next question
//! after that, not necessarily the first one after the change.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::inotify::{self, CreateFlags, WatchFlags};

use crate::pending::Pending;

/// At most this many files are watched.
pub const MAX_WATCHED_FILES: usize = 512;

/// `statfs`'s type of a cgroup2 mount (linux/magic.h).
const CGROUP2_SUPER_MAGIC: u64 = 0x6367_7270;

/// Files by key (a cgroup, for example), watched for changes.
#[derive(Debug)]
pub struct Modified {
    fd: Option<OwnedFd>,
    /// Watch on any filesystem, not only cgroup2 (tests).
    any_fs: bool,
    /// Each key's watch.
    watched: HashMap<String, i32>,
    /// The kernel told a change (or a watch gone, or events lost) since the last question.
    told: bool,
}

impl Default for Modified {
    fn default() -> Self {
        Modified::new(false)
    }
}

impl Modified {
    /// Watches on cgroup2 only (`any_fs`: on every filesystem).
    pub fn new(any_fs: bool) -> Modified {
        Modified {
            fd: inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok(),
            any_fs,
            watched: HashMap::new(),
            told: false,
        }
    }

    /// Whether any of the files of `keys` (`path_of` names each one's) may have changed since
    /// the last call, so that all are to be read: the kernel said one changed, or one is newly
    /// asked for (its last reading unknown), or one cannot be watched. Keys not asked for are
    /// no longer watched.
    pub fn any_changed<'a>(
        &mut self,
        keys: impl IntoIterator<Item = &'a str>,
        path_of: impl Fn(&str) -> PathBuf,
    ) -> bool {
        self.drain();
        let mut changed = std::mem::take(&mut self.told);
        let asked: Vec<&str> = keys.into_iter().collect();
        self.forget_except(&asked);
        for key in asked {
            if !self.watched.contains_key(key) {
                // Watched from now on (before it is read: a change after the read is told).
                self.watch(key, &path_of(key));
                changed = true;
            }
        }
        changed
    }

    fn watch(&mut self, key: &str, path: &Path) {
        let Some(fd) = &self.fd else {
            return;
        };
        if self.watched.len() >= MAX_WATCHED_FILES {
            return;
        }
        if !self.any_fs
            && !rustix::fs::statfs(path)
                .is_ok_and(|s| s.f_type.cast_unsigned() == CGROUP2_SUPER_MAGIC)
        {
            return;
        }
        let Ok(wd) = inotify::add_watch(fd, path, WatchFlags::MODIFY | WatchFlags::DONT_FOLLOW)
        else {
            return;
        };
        // The same file under two keys: one watch; the first key keeps it, the other is
        // never watched (and so always "changed").
        if !self.watched.values().any(|w| *w == wd) {
            self.watched.insert(key.to_owned(), wd);
        }
    }

    fn forget_except(&mut self, asked: &[&str]) {
        let fd = &self.fd;
        self.watched.retain(|key, wd| {
            let keep = asked.contains(&key.as_str());
            if !keep && let Some(fd) = fd {
                let _ = inotify::remove_watch(fd, *wd);
            }
            keep
        });
    }

    fn drain(&mut self) {
        let Some(fd) = &self.fd else {
            return;
        };
        for event in crate::pending::pending(fd) {
            self.told = true;
            // Its cgroup was removed (the kernel dropped the watch): watched again, or found
            // gone, when asked next.
            if let Pending::Gone(wd) = event {
                self.watched.retain(|_, w| *w != wd);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn ok<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
        r.unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Modified::any_changed`] of files named by their paths.
    fn any(m: &mut Modified, files: &[&PathBuf]) -> bool {
        let keys: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        m.any_changed(keys.iter().map(String::as_str), |k| PathBuf::from(k))
    }

    // Changed the first time (nothing known), then only after a change of any of them; a key
    // no longer asked for is dropped, and asked again is new.
    #[test]
    fn a_change_of_any_file_is_told_once() {
        let root = ok(tempfile::tempdir());
        let a = root.path().join("a.events");
        let b = root.path().join("b.events");
        ok(std::fs::write(&a, "oom_kill 0\n"));
        ok(std::fs::write(&b, "oom_kill 0\n"));
        let mut m = Modified::new(true);
        assert!(any(&mut m, &[&a, &b]), "first: read both");
        assert!(!any(&mut m, &[&a, &b]));
        ok(std::fs::write(&b, "oom_kill 1\n"));
        assert!(any(&mut m, &[&a, &b]), "b changed: both are read");
        assert!(!any(&mut m, &[&a, &b]));
        // b dropped: no change for a alone; b asked again is new.
        assert!(!any(&mut m, &[&a]));
        assert!(any(&mut m, &[&a, &b]));
        assert!(!any(&mut m, &[&a, &b]));
    }

    // A file removed: changed, and every time after while it cannot be watched again.
    #[test]
    fn a_removed_file_is_changed() {
        let root = ok(tempfile::tempdir());
        let a = root.path().join("a.events");
        ok(std::fs::write(&a, "oom_kill 0\n"));
        let mut m = Modified::new(true);
        let _ = any(&mut m, &[&a]);
        assert!(!any(&mut m, &[&a]));
        ok(std::fs::remove_file(&a));
        assert!(any(&mut m, &[&a]));
        assert!(
            any(&mut m, &[&a]),
            "not there: not watched, so never unchanged"
        );
    }

    // On the host's own cgroup2, when it may be written (root): a cgroup's `cgroup.events`
    // changes when a process enters it, and the kernel says so.
    #[test]
    fn on_cgroup2_a_kernel_file_changed_is_told() {
        let Some(cgroup) = crate::host_test_cgroup("oomwarden-modified-test") else {
            return;
        };
        let events = cgroup.join("cgroup.events");
        let mut m = Modified::new(false);
        let first = any(&mut m, &[&events]);
        let quiet = !any(&mut m, &[&events]);
        let mut child = ok(std::process::Command::new("sleep").arg("60").spawn());
        if let Err(e) = std::fs::write(cgroup.join("cgroup.procs"), child.id().to_string()) {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_dir(&cgroup);
            eprintln!(
                "skipped: cannot move a process into {}: {e}",
                cgroup.display()
            );
            return;
        }
        // The kernel tells from a work item: asked until told, bounded.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let mut told = false;
        while !told && std::time::Instant::now() < deadline {
            told = any(&mut m, &[&events]);
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        // Empty again before it can go.
        let removed = (0..500).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            std::fs::remove_dir(&cgroup).is_ok()
        });
        assert!(first && quiet, "read first, then unchanged");
        assert!(told, "a process entering the cgroup changed cgroup.events");
        assert!(removed, "{} removed", cgroup.display());
    }

    // Outside cgroup2 nothing is watched unless asked for: every file is read every time.
    #[test]
    fn outside_cgroup2_everything_is_read() {
        let root = ok(tempfile::tempdir());
        let a = root.path().join("a.events");
        ok(std::fs::write(&a, "oom_kill 0\n"));
        let mut m = Modified::new(false);
        assert!(any(&mut m, &[&a]));
        assert!(any(&mut m, &[&a]));
    }
}
