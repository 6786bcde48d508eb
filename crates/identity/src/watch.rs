//! Watching the pod cgroups (inotify) so that a pod or container made since the last refresh
//! asks for one at once: a restarted container has a new ID, and the record of its kill, or
//! `killScope: containers` telling it from its sandbox, wants its name then, not at the next
//! period. Off the decision path, in a thread of its own; nothing is read on an event, only a
//! refresh asked for ([`Cache::refresh_soon`], at most one a second).
//!
//! The kernel says when a cgroup directory is made (`mkdir` through the VFS, as runc and the
//! kubelet make them): the pod parents (`kubepods/besteffort`, …) are watched for pods, each
//! pod for its container cgroups.

use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;

use crate::cache::Cache;

/// At most this many pods are watched (one inotify watch each, beside the parents); beyond,
/// new containers of further pods wait for the periodic refresh. Far below the kernel's
/// default `max_user_watches` (8,192 on old kernels, more on new ones).
pub const MAX_WATCHED_PODS: usize = 4_096;

/// Whether a directory name is a pod cgroup's (`pod<uid>`, `kubepods-…-pod<uid>.slice`).
pub type IsPod = fn(&str) -> bool;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Parent,
    Pod,
}

struct Watcher {
    fd: OwnedFd,
    watches: HashMap<i32, (PathBuf, Kind)>,
    is_pod: IsPod,
    pods: usize,
}

impl Watcher {
    fn new(parents: &[PathBuf], is_pod: IsPod) -> rustix::io::Result<Self> {
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK)?;
        let mut watcher = Watcher {
            fd,
            watches: HashMap::new(),
            is_pod,
            pods: 0,
        };
        for parent in parents {
            // A parent that does not exist (no Burstable pod yet, another layout) is left out.
            if watcher.add(parent, Kind::Parent).is_ok()
                && let Ok(entries) = std::fs::read_dir(parent)
            {
                for entry in entries.flatten() {
                    if entry.file_type().is_ok_and(|t| t.is_dir())
                        && (watcher.is_pod)(&entry.file_name().to_string_lossy())
                    {
                        let _ = watcher.add(&entry.path(), Kind::Pod);
                    }
                }
            }
        }
        Ok(watcher)
    }

    fn add(&mut self, dir: &Path, kind: Kind) -> rustix::io::Result<()> {
        if kind == Kind::Pod && self.pods >= MAX_WATCHED_PODS {
            return Ok(());
        }
        let flags = WatchFlags::CREATE | WatchFlags::MOVED_TO | WatchFlags::ONLYDIR;
        let wd = inotify::add_watch(&self.fd, dir, flags)?;
        if self.watches.insert(wd, (dir.to_owned(), kind)).is_none() && kind == Kind::Pod {
            self.pods += 1;
        }
        Ok(())
    }

    /// Reads the pending events; true when a pod or a container cgroup was made (or events
    /// were lost: the kernel's queue overflowed).
    fn drain(&mut self) -> bool {
        let mut buffer = [MaybeUninit::<u8>::uninit(); 8192];
        let mut made = false;
        let mut new_pods = Vec::new();
        let mut gone = Vec::new();
        {
            let mut reader = inotify::Reader::new(&self.fd, &mut buffer);
            loop {
                let event = match reader.next() {
                    Ok(event) => event,
                    Err(Errno::INTR) => continue,
                    Err(_) => break, // EAGAIN: nothing more
                };
                let flags = event.events();
                if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                    made = true;
                    continue;
                }
                if flags.contains(ReadFlags::IGNORED) {
                    gone.push(event.wd());
                    continue;
                }
                if !flags.contains(ReadFlags::ISDIR) {
                    continue;
                }
                let Some((dir, kind)) = self.watches.get(&event.wd()) else {
                    continue;
                };
                let Some(name) = event.file_name().map(|n| n.to_string_lossy().into_owned()) else {
                    continue;
                };
                match kind {
                    Kind::Parent if (self.is_pod)(&name) => {
                        new_pods.push(dir.join(&name));
                        made = true;
                    }
                    Kind::Parent => {}
                    Kind::Pod => made = true,
                }
            }
        }
        for wd in gone {
            // The directory was removed: the kernel dropped its watch.
            if let Some((_, Kind::Pod)) = self.watches.remove(&wd) {
                self.pods = self.pods.saturating_sub(1);
            }
        }
        for pod in new_pods {
            // Gone again already, or the bound: the periodic refresh still names it.
            let _ = self.add(&pod, Kind::Pod);
        }
        made
    }
}

impl Cache {
    /// Starts a thread that asks for a refresh when a pod cgroup is made under one of
    /// `parents` (absolute), or a container cgroup under a pod; it ends with [`Cache::stop`].
    /// An error when inotify cannot be set up (the periodic refresh then is all there is).
    pub fn watch(&self, parents: Vec<PathBuf>, is_pod: IsPod) -> std::io::Result<()> {
        let mut watcher = Watcher::new(&parents, is_pod).map_err(std::io::Error::from)?;
        let cache = self.clone();
        std::thread::Builder::new()
            .name("identity-watch".to_owned())
            .spawn(move || {
                // Woken by the stop's eventfd; without one, once a second to see the flag.
                let second = Timespec {
                    tv_sec: 1,
                    tv_nsec: 0,
                };
                let timeout = cache.stop_wake().is_none().then_some(&second);
                while !cache.stopped() {
                    let mut fds = vec![PollFd::new(&watcher.fd, PollFlags::IN)];
                    if let Some(stop) = cache.stop_wake() {
                        fds.push(PollFd::new(stop, PollFlags::IN));
                    }
                    match rustix::event::poll(&mut fds, timeout) {
                        Ok(0) | Err(Errno::INTR) => continue,
                        Ok(_) => {}
                        Err(_) => return,
                    }
                    if watcher.drain() {
                        cache.refresh_soon();
                    }
                }
            })?;
        self.shared_watching().store(true, Ordering::SeqCst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_pod(name: &str) -> bool {
        name.starts_with("pod")
    }

    /// Pods made under a watched parent and containers made in a watched or new pod are seen;
    /// other directories and files are not.
    #[test]
    fn new_pods_and_containers_are_seen() {
        let root = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let parent = root.path().join("kubepods/besteffort");
        std::fs::create_dir_all(parent.join("pod-old")).unwrap_or_else(|e| panic!("{e}"));
        let mut w =
            Watcher::new(std::slice::from_ref(&parent), is_pod).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(w.pods, 1);
        assert!(!w.drain(), "nothing yet");
        std::fs::write(parent.join("memory.current"), "1").unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir(parent.join("not-a-pod")).unwrap_or_else(|e| panic!("{e}"));
        assert!(!w.drain(), "a file, a directory that is no pod");
        std::fs::create_dir(parent.join("pod-old/ctr1")).unwrap_or_else(|e| panic!("{e}"));
        assert!(w.drain(), "a container of a pod watched from the start");
        std::fs::create_dir(parent.join("pod-new")).unwrap_or_else(|e| panic!("{e}"));
        assert!(w.drain(), "a new pod");
        assert_eq!(w.pods, 2);
        std::fs::create_dir(parent.join("pod-new/ctr2")).unwrap_or_else(|e| panic!("{e}"));
        assert!(w.drain(), "a container of the new pod");
        std::fs::remove_dir_all(parent.join("pod-new")).unwrap_or_else(|e| panic!("{e}"));
        let _ = w.drain();
        assert_eq!(w.pods, 1, "a removed pod's watch is dropped");
    }

    /// A parent that does not exist is no error: the others are watched.
    #[test]
    fn a_missing_parent_is_left_out() {
        let root = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let there = root.path().join("kubepods");
        std::fs::create_dir_all(&there).unwrap_or_else(|e| panic!("{e}"));
        let mut w = Watcher::new(&[root.path().join("absent"), there.clone()], is_pod)
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir(there.join("pod-a")).unwrap_or_else(|e| panic!("{e}"));
        assert!(w.drain());
    }
}
