//! Which of some cgroup2 files the kernel changed since they were last read: the files that
//! raise a "file modified" event on every change (`memory.events`, `cgroup.events`: see the
//! kernel's cgroup-v2 documentation), watched with inotify, so that a reader that only wants
//! to know whether they changed (the kernel-OOM watch, each cycle) reads none while nothing
//! happens.
//!
//! Only on cgroup2, where such a file can be neither replaced nor renamed, so the watch stays
//! on the file the path names until its cgroup is removed (which drops the watch: then it is
//! read again, and found gone). A file that cannot be watched (another filesystem, no
//! inotify, the bound) is always "changed". Lost events (the kernel's queue overflowed) make
//! every file changed. The kernel sends the event from a work item after the counter moved
//! (at most one per 10 ms per file): a change is seen by the next question after that, not
//! necessarily the first one after the change.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::Path;

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
    keys: HashMap<i32, String>,
    /// Per key: its watch, and whether it changed since the last [`Modified::unchanged`].
    watched: HashMap<String, (i32, bool)>,
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
            keys: HashMap::new(),
            watched: HashMap::new(),
        }
    }

    /// Of `keys` (each with its file's path), those whose file is watched and did not change
    /// since the last call; the others are to be read. Keys not asked for are no longer
    /// watched.
    pub fn unchanged<'a>(
        &mut self,
        keys: impl IntoIterator<Item = (&'a str, std::path::PathBuf)>,
    ) -> Vec<&'a str> {
        self.drain();
        let asked: Vec<(&str, std::path::PathBuf)> = keys.into_iter().collect();
        self.forget_except(&asked);
        let mut unchanged = Vec::new();
        for (key, path) in &asked {
            match self.watched.get_mut(*key) {
                Some((_, changed)) => {
                    if !*changed {
                        unchanged.push(*key);
                    }
                    *changed = false;
                }
                // Watched from now on: read this time, as its last reading is not known.
                None => self.watch(key, path),
            }
        }
        unchanged
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
        // The same file under two keys: one watch; the first key keeps it.
        if self.keys.contains_key(&wd) {
            return;
        }
        self.keys.insert(wd, key.to_owned());
        self.watched.insert(key.to_owned(), (wd, false));
    }

    fn forget_except(&mut self, asked: &[(&str, std::path::PathBuf)]) {
        let stale: Vec<String> = self
            .watched
            .keys()
            .filter(|k| !asked.iter().any(|(a, _)| a == k))
            .cloned()
            .collect();
        for key in stale {
            if let Some((wd, _)) = self.watched.remove(&key) {
                self.keys.remove(&wd);
                if let Some(fd) = &self.fd {
                    let _ = inotify::remove_watch(fd, wd);
                }
            }
        }
    }

    fn drain(&mut self) {
        let Some(fd) = &self.fd else {
            return;
        };
        for event in crate::pending::pending(fd) {
            match event {
                Pending::Overflow => {
                    for (_, changed) in self.watched.values_mut() {
                        *changed = true;
                    }
                }
                // Its cgroup was removed: watched again, and read, when asked next.
                Pending::Gone(wd) => {
                    if let Some(key) = self.keys.remove(&wd) {
                        self.watched.remove(&key);
                    }
                }
                Pending::Changed(wd, _) => {
                    if let Some((_, changed)) =
                        self.keys.get(&wd).and_then(|k| self.watched.get_mut(k))
                    {
                        *changed = true;
                    }
                }
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

    fn asked(dirs: &[(&'static str, PathBuf)]) -> Vec<(&'static str, PathBuf)> {
        dirs.to_vec()
    }

    // Read the first time, then only after a change; a key no longer asked for is dropped.
    #[test]
    fn a_file_is_read_again_only_after_it_changed() {
        let root = ok(tempfile::tempdir());
        let a = root.path().join("a.events");
        let b = root.path().join("b.events");
        ok(std::fs::write(&a, "oom_kill 0\n"));
        ok(std::fs::write(&b, "oom_kill 0\n"));
        let both = [("a", a.clone()), ("b", b.clone())];
        let mut m = Modified::new(true);
        assert!(m.unchanged(asked(&both)).is_empty(), "first: read both");
        assert_eq!(m.unchanged(asked(&both)), ["a", "b"]);
        ok(std::fs::write(&b, "oom_kill 1\n"));
        assert_eq!(m.unchanged(asked(&both)), ["a"]);
        assert_eq!(m.unchanged(asked(&both)), ["a", "b"]);
        // Dropped, then asked again: read again.
        assert_eq!(m.unchanged(asked(&[("a", a.clone())])), ["a"]);
        assert!(m.unchanged(asked(&both)).contains(&"a"));
        assert!(!m.unchanged(asked(&[("a", a), ("b", b)])).is_empty());
    }

    // A file removed: read (and found gone) when asked next, never taken as unchanged.
    #[test]
    fn a_removed_file_is_read_again() {
        let root = ok(tempfile::tempdir());
        let a = root.path().join("a.events");
        ok(std::fs::write(&a, "oom_kill 0\n"));
        let mut m = Modified::new(true);
        let _ = m.unchanged(asked(&[("a", a.clone())]));
        assert_eq!(m.unchanged(asked(&[("a", a.clone())])), ["a"]);
        ok(std::fs::remove_file(&a));
        assert!(m.unchanged(asked(&[("a", a.clone())])).is_empty());
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
        let first = m.unchanged(asked(&[("c", events.clone())])).is_empty();
        let quiet = m.unchanged(asked(&[("c", events.clone())])) == ["c"];
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
            told = m.unchanged(asked(&[("c", events.clone())])).is_empty();
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
        let _ = m.unchanged(asked(&[("a", a.clone())]));
        assert!(m.unchanged(asked(&[("a", a)])).is_empty());
    }
}
