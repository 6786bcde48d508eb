//! Playback: a [`Files`] that answers each read as it was answered in the recorded cycle.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use oomwarden_cgroupfs::Files;
use oomwarden_model::Identities;

use crate::estimate::Held;
use crate::format::{Kind, Observation, Recording};

const ENOENT: i32 = 2;

#[derive(Debug, Default)]
struct State {
    /// The next cycle to enter.
    next: usize,
    /// This cycle's results not yet served, per (kind, path).
    queues: HashMap<(Kind, Arc<str>), VecDeque<Observation>>,
    /// The last result of every read so far.
    last: HashMap<(Kind, Arc<str>), Observation>,
    /// Cgroups killed during the replay: gone from here on.
    removed: Vec<PathBuf>,
    /// Whether what the removed cgroups held is given back ([`Playback::estimate_memory`]).
    estimate: bool,
    /// Files the replay read that the recording answered, and how many reads were asked.
    answered: HashSet<Arc<str>>,
    asked: u64,
}

/// Serves a recording's reads, cycle by cycle.
///
/// Within a cycle a path read several times gives its recorded results in order, then the
/// last one again; a read the cycle did not list gives what it gave before; a path never read
/// does not exist (`ENOENT`). [`Playback::remove`] makes a killed cgroup vanish.
#[derive(Debug)]
pub struct Playback {
    recording: Recording,
    state: Mutex<State>,
    /// The identities in force at each cycle (the last `n` at or before it).
    identities: Vec<Option<Arc<Identities>>>,
}

impl Playback {
    /// Playback of a recording, before its first cycle.
    pub fn new(recording: Recording) -> Arc<Playback> {
        let mut current = None;
        let identities = recording
            .cycles
            .iter()
            .map(|c| {
                if let Some(ids) = &c.identities {
                    current = Some(Arc::clone(ids));
                }
                current.clone()
            })
            .collect();
        Arc::new(Playback {
            recording,
            state: Mutex::new(State::default()),
            identities,
        })
    }

    /// The pod identities the daemon ranked with in cycle `index` (none when the recording
    /// has none: it was made by `oomwarden record`, or by a version before 3).
    pub fn identities(&self, index: usize) -> Option<Arc<Identities>> {
        self.identities.get(index).cloned().flatten()
    }

    /// The recording.
    pub fn recording(&self) -> &Recording {
        &self.recording
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes cycle `index` the current one; the cycles skipped on the way still count
    /// (their results become the "before" of later reads). Going back is not possible.
    pub fn enter(&self, index: usize) {
        let mut state = self.state();
        let State {
            next, queues, last, ..
        } = &mut *state;
        // What the current cycle left is what later reads see.
        for (key, queue) in queues.drain() {
            if let Some(obs) = queue.into_iter().last() {
                last.insert(key, obs);
            }
        }
        let cycles = self.recording.cycles.get(*next..=index).unwrap_or_default();
        let count = cycles.len();
        for (i, cycle) in cycles.iter().enumerate() {
            let current = i + 1 == count;
            for (path, obs) in &cycle.reads {
                let key = (obs.kind(), Arc::clone(path));
                if current {
                    queues.entry(key).or_default().push_back(obs.clone());
                } else {
                    last.insert(key, obs.clone());
                }
            }
        }
        *next = (*next).max(index + 1);
    }

    /// Whether the recording itself shows cgroup `dir` ended in cycle `from` or within
    /// `within_ns` after it (its `cgroup.events` saying `populated 0`, a file below it gone, its parent's
    /// listing without it, or the directory gone): the recorded node had that kill too, so a
    /// replayed kill of it leaves the recording's figures still describing the replay.
    pub fn recorded_end(&self, from: usize, dir: &Path, within_ns: u64) -> bool {
        let Some(start) = self.recording.cycles.get(from).map(|c| c.at_ns) else {
            return false;
        };
        let dir_str = dir.to_string_lossy();
        let events = format!("{dir_str}/cgroup.events");
        let below = format!("{dir_str}/");
        let (parent, name) = match dir_str.rsplit_once('/') {
            Some((p, n)) => (p.to_owned(), n.to_owned()),
            None => (String::new(), dir_str.to_string()),
        };
        // A file every live cgroup has, read before in the window and gone since (a fixture
        // or an odd kernel may lack one from the start: that says nothing).
        let mut seen: HashSet<&str> = HashSet::new();
        let cycles = self
            .recording
            .cycles
            .iter()
            .skip(from)
            .take_while(|c| c.at_ns <= start.saturating_add(within_ns));
        for c in cycles {
            for (path, obs) in &c.reads {
                let path: &str = path;
                let ended = match obs {
                    Observation::File(bytes) => {
                        seen.insert(path);
                        path == events
                            && String::from_utf8_lossy(bytes)
                                .lines()
                                .any(|l| l.trim() == "populated 0")
                    }
                    Observation::FileError(errno) => {
                        *errno == ENOENT
                            && seen.contains(path)
                            && path.strip_prefix(below.as_str()).is_some_and(|f| {
                                matches!(f, "cgroup.events" | "cgroup.procs" | "memory.current")
                            })
                    }
                    Observation::Dirs(names) => path == parent && !names.contains(&name),
                    Observation::IsDir(exists) => path == dir_str && !exists,
                    Observation::DirsError(errno) => path == dir_str && *errno == ENOENT,
                };
                if ended {
                    return true;
                }
            }
        }
        false
    }

    /// A replayed kill: the cgroup directory and everything below it are gone from now on.
    pub fn remove(&self, dir: &Path) {
        self.state().removed.push(dir.to_path_buf());
    }

    /// From now on, the memory a removed cgroup holds in the recording is given back: its
    /// `memory.current` to `MemAvailable` and out of its parents' `memory.current`, its swap
    /// likewise (see the `estimate` module); PSI and every other figure stay as recorded.
    pub fn estimate_memory(&self) {
        self.state().estimate = true;
    }

    /// What each removed cgroup (not below another) holds in the current cycle, as recorded.
    fn held(state: &State) -> Vec<Held> {
        let recorded = |path: PathBuf| {
            let key = (Kind::File, Arc::from(path.to_string_lossy().as_ref()));
            let obs = state
                .queues
                .get(&key)
                .and_then(VecDeque::back)
                .or_else(|| state.last.get(&key));
            match obs {
                Some(Observation::File(bytes)) => crate::estimate::number(bytes).unwrap_or(0),
                _ => 0,
            }
        };
        state
            .removed
            .iter()
            .filter(|dir| {
                !state
                    .removed
                    .iter()
                    .any(|other| other != *dir && dir.starts_with(other))
            })
            .map(|dir| Held {
                dir: dir.clone(),
                memory: recorded(dir.join("memory.current")),
                swap: recorded(dir.join("memory.swap.current")),
            })
            .collect()
    }

    /// `obs`, an answer for `path`, with the estimate applied when it is on.
    fn estimated(&self, state: &State, path: &Path, obs: Observation) -> Observation {
        if !state.estimate || state.removed.is_empty() {
            return obs;
        }
        let Observation::File(bytes) = &obs else {
            return obs;
        };
        let meminfo = Path::new(&self.recording.meta.proc_root).join("meminfo");
        match crate::estimate::adjust(path, bytes, &Self::held(state), &meminfo) {
            Some(given_back) => Observation::File(given_back),
            None => obs,
        }
    }

    fn answer(&self, kind: Kind, path: &Path) -> Option<Observation> {
        let mut state = self.state();
        if state.removed.iter().any(|r| path.starts_with(r)) {
            return None;
        }
        let key: (Kind, Arc<str>) = (kind, Arc::from(path.to_string_lossy().as_ref()));
        if kind == Kind::File {
            state.asked += 1;
        }
        let State { queues, last, .. } = &mut *state;
        if let Some(queue) = queues.get_mut(&key) {
            let obs = if queue.len() > 1 {
                queue.pop_front()
            } else {
                queue.front().cloned()
            };
            if let Some(obs) = obs {
                last.insert(key.clone(), obs.clone());
                if kind == Kind::File {
                    state.answered.insert(Arc::clone(&key.1));
                }
                return Some(self.estimated(&state, path, obs));
            }
        }
        let obs = last.get(&key).cloned();
        if obs.is_some() && kind == Kind::File {
            state.answered.insert(key.1);
        }
        obs.map(|obs| self.estimated(&state, path, obs))
    }

    /// Why the replay's reads do not meet the recording's, if they do not: a recorded read
    /// outside the recording's own roots or holding a NUL (a recording made with a relative
    /// `--cgroup-root` kept relative paths beside absolute roots), or a replay that read files
    /// and was answered none (found by the fault suite: both replayed as "the trigger never
    /// fired", exit 0).
    pub fn mismatch(&self) -> Option<String> {
        let meta = &self.recording.meta;
        let roots = [meta.cgroup_root.as_str(), meta.proc_root.as_str()];
        let within = |p: &str| {
            roots.iter().any(|r| {
                p.strip_prefix(r.trim_end_matches('/'))
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
        };
        let mut outside: BTreeSet<&str> = BTreeSet::new();
        for c in &self.recording.cycles {
            for (p, _) in &c.reads {
                if p.contains('\0') || !p.starts_with('/') || !within(p) {
                    outside.insert(p);
                }
            }
        }
        if let Some(first) = outside.first() {
            return Some(format!(
                "{} recorded paths are not absolute paths under its roots ({}, {}), the first: {first:?}",
                outside.len(),
                meta.cgroup_root,
                meta.proc_root
            ));
        }
        let state = self.state();
        if state.asked > 0 && state.answered.is_empty() {
            return Some(format!(
                "the replay read {} files and the recording held none of them",
                state.asked
            ));
        }
        None
    }
}

fn not_found() -> io::Error {
    io::Error::from_raw_os_error(ENOENT)
}

impl Files for Playback {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        match self.answer(Kind::File, path) {
            Some(Observation::File(bytes)) => Ok(bytes),
            Some(Observation::FileError(errno)) => Err(io::Error::from_raw_os_error(errno)),
            _ => Err(not_found()),
        }
    }

    fn subdirs(&self, path: &Path) -> io::Result<Vec<String>> {
        match self.answer(Kind::Dirs, path) {
            Some(Observation::Dirs(names)) => {
                let removed = self.state().removed.clone();
                Ok(names
                    .into_iter()
                    .filter(|n| !removed.iter().any(|r| *r == path.join(n)))
                    .collect())
            }
            Some(Observation::DirsError(errno)) => Err(io::Error::from_raw_os_error(errno)),
            _ => Err(not_found()),
        }
    }

    fn is_dir(&self, path: &Path) -> bool {
        match self.answer(Kind::IsDir, path) {
            Some(Observation::IsDir(yes)) => yes,
            // Never asked when recorded: a directory if it was listed.
            _ => matches!(self.answer(Kind::Dirs, path), Some(Observation::Dirs(_))),
        }
    }

    /// Identities are not recorded: a path that is a directory keeps one identity for the
    /// whole replay (a hash of the path), so a replay never sees a cgroup replaced.
    fn cgroup_id(&self, path: &Path) -> io::Result<u64> {
        use std::hash::{Hash, Hasher};
        if !self.is_dir(path) {
            return Err(io::ErrorKind::NotFound.into());
        }
        let mut h = std::collections::hash_map::DefaultHasher::new();
        path.hash(&mut h);
        Ok(h.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Cycle, Wakeup};

    fn recording(cycles: Vec<Vec<(&str, Observation)>>) -> Recording {
        Recording {
            meta: crate::format::tests_meta(),
            cycles: cycles
                .into_iter()
                .enumerate()
                .map(|(i, reads)| Cycle {
                    at_ns: i as u64,
                    wakeup: Wakeup::Tick,
                    reads: reads.into_iter().map(|(p, o)| (Arc::from(p), o)).collect(),
                    identities: None,
                    triggered_at: None,
                })
                .collect(),
            truncated: None,
        }
    }

    fn file(text: &str) -> Observation {
        Observation::File(text.as_bytes().to_vec())
    }

    /// Issue 37: whether the recording saw a cgroup end, from its kill's cycle on and within a
    /// window: `populated 0`, a file below it gone, its parent's listing without it.
    #[test]
    fn the_recording_tells_whether_a_cgroup_ended() {
        let events = "/cg/kubepods/besteffort/podhog/cgroup.events";
        let alive = || (events, file("populated 1\nfrozen 0\n"));
        let r = recording(vec![
            vec![alive()],
            vec![alive(), (events, file("populated 0\nfrozen 0\n"))],
            vec![(
                "/cg/kubepods/besteffort",
                Observation::Dirs(vec!["podquiet".into()]),
            )],
            vec![
                (
                    "/cg/kubepods/burstable/podweb/memory.current",
                    file("100\n"),
                ),
                (
                    "/cg/kubepods/burstable/podweb/memory.current",
                    Observation::FileError(ENOENT),
                ),
                (
                    "/cg/kubepods/besteffort/podquiet/cgroup.events",
                    Observation::FileError(ENOENT),
                ),
                (
                    "/cg/kubepods/besteffort/podquiet/memory.peak",
                    Observation::FileError(ENOENT),
                ),
            ],
        ]);
        let p = Playback::new(r);
        let hog = Path::new("/cg/kubepods/besteffort/podhog");
        // Ended in the kill's own cycle (verified within it) and seen from before.
        assert!(p.recorded_end(1, hog, 0));
        assert!(p.recorded_end(0, hog, 1));
        // Not within the window.
        assert!(!p.recorded_end(0, hog, 0));
        // Gone from its parent's listing.
        assert!(p.recorded_end(2, hog, 0));
        assert!(!p.recorded_end(2, Path::new("/cg/kubepods/besteffort/podquiet"), 5));
        // A file every live cgroup has, gone; not a file some kernels lack.
        assert!(p.recorded_end(3, Path::new("/cg/kubepods/burstable/podweb"), 0));
        assert!(!p.recorded_end(3, Path::new("/cg/kubepods/besteffort/podquiet"), 0));
        assert!(!p.recorded_end(9, hog, 100));
    }

    // Issue 32: relative paths under absolute roots (a relative --cgroup-root), a NUL in a
    // path, and a replay answered nothing all replayed as "the trigger never fired".
    #[test]
    fn a_recording_whose_paths_do_not_meet_its_roots_is_a_mismatch() {
        let good = || recording(vec![vec![("/sys/fs/cgroup/memory.pressure", file("x"))]]);
        let p = Playback::new(good());
        p.enter(0);
        assert!(p.read(Path::new("/sys/fs/cgroup/memory.pressure")).is_ok());
        assert_eq!(p.mismatch(), None);
        for bad in [
            "cg/memory.pressure",
            "/sys/fs/cgroup/a\0b",
            "/elsewhere/memory.pressure",
        ] {
            let p = Playback::new(recording(vec![vec![(bad, file("x"))]]));
            let why = p.mismatch().unwrap_or_default();
            assert!(
                why.contains("not absolute paths under its roots"),
                "{bad:?}: {why}"
            );
        }
        let p = Playback::new(good());
        p.enter(0);
        assert!(p.read(Path::new("/other/root/memory.pressure")).is_err());
        let why = p.mismatch().unwrap_or_default();
        assert!(why.contains("held none of them"), "{why}");
    }

    #[test]
    fn reads_follow_the_recorded_cycles() {
        let p = Playback::new(recording(vec![
            vec![
                ("/cg/a/memory.current", file("1")),
                ("/cg", Observation::Dirs(vec!["a".into(), "b".into()])),
                ("/cg/b/memory.current", Observation::FileError(19)),
            ],
            vec![],
            vec![
                ("/cg/a/memory.current", file("2")),
                ("/cg/a/memory.current", file("3")),
            ],
            vec![("/cg/a/memory.current", file("4"))],
        ]));
        let cur = Path::new("/cg/a/memory.current");
        p.enter(0);
        assert_eq!(p.read(cur).unwrap(), b"1");
        assert_eq!(
            p.read(Path::new("/cg/b/memory.current"))
                .unwrap_err()
                .raw_os_error(),
            Some(19)
        );
        assert_eq!(
            p.read(Path::new("/cg/never")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert!(p.is_dir(Path::new("/cg")));
        p.enter(1);
        assert_eq!(p.read(cur).unwrap(), b"1", "unchanged");
        p.enter(2);
        assert_eq!(p.read(cur).unwrap(), b"2");
        assert_eq!(p.read(cur).unwrap(), b"3");
        assert_eq!(p.read(cur).unwrap(), b"3", "then the last again");
        p.remove(Path::new("/cg/a"));
        assert_eq!(p.subdirs(Path::new("/cg")).unwrap(), ["b"]);
        assert!(p.read(cur).is_err());
        assert!(!p.is_dir(Path::new("/cg/a")));
        p.enter(3);
        assert!(p.read(cur).is_err(), "a removed cgroup stays gone");
    }

    /// Issue 37: with the estimate, what a removed cgroup holds in the recording, cycle by
    /// cycle, goes back to the node and out of its parents until the recording has it gone.
    #[test]
    fn the_estimate_gives_back_what_the_recording_says_the_victim_held() {
        let meminfo = |avail: u64| {
            file(&format!(
                "MemTotal:        1000000 kB\nMemAvailable:   {avail:>8} kB\n"
            ))
        };
        let p = Playback::new(recording(vec![
            vec![
                ("/proc/meminfo", meminfo(1000)),
                ("/cg/k/memory.current", file("3145728\n")),
                ("/cg/k/hog/memory.current", file("2097152\n")),
                ("/cg/k/hog/c/memory.current", file("2097152\n")),
                ("/cg/k/quiet/memory.current", file("1048576\n")),
            ],
            // The hog grows on in the recording: 3 MiB.
            vec![
                ("/proc/meminfo", meminfo(500)),
                ("/cg/k/memory.current", file("4194304\n")),
                ("/cg/k/hog/memory.current", file("3145728\n")),
            ],
            // Then its recorded end.
            vec![
                ("/proc/meminfo", meminfo(3600)),
                ("/cg/k/memory.current", file("1048576\n")),
                ("/cg/k/hog/memory.current", Observation::FileError(ENOENT)),
            ],
        ]));
        let read = |path: &str| String::from_utf8(p.read(Path::new(path)).unwrap()).unwrap();
        p.estimate_memory();
        p.enter(0);
        assert!(read("/proc/meminfo").contains("MemAvailable:       1000 kB"));
        // A killed pod and its container: counted once.
        p.remove(Path::new("/cg/k/hog/c"));
        p.remove(Path::new("/cg/k/hog"));
        assert!(read("/proc/meminfo").contains("MemAvailable:       3048 kB"));
        assert_eq!(read("/cg/k/memory.current"), "1048576\n");
        assert_eq!(read("/cg/k/quiet/memory.current"), "1048576\n");
        p.enter(1);
        assert!(read("/proc/meminfo").contains("MemAvailable:       3572 kB"));
        assert_eq!(read("/cg/k/memory.current"), "1048576\n");
        p.enter(2);
        assert!(read("/proc/meminfo").contains("MemAvailable:       3600 kB"));
        assert_eq!(read("/cg/k/memory.current"), "1048576\n");
        // Without the estimate, the recording's figures.
        let q = Playback::new(p.recording().clone());
        q.enter(1);
        q.remove(Path::new("/cg/k/hog"));
        assert_eq!(
            q.read(Path::new("/cg/k/memory.current")).unwrap(),
            b"4194304\n"
        );
    }

    #[test]
    fn skipped_cycles_still_count() {
        let p = Playback::new(recording(vec![
            vec![("/f", file("1"))],
            vec![("/f", file("2")), ("/f", file("5"))],
            vec![],
        ]));
        p.enter(0);
        p.enter(2);
        assert_eq!(p.read(Path::new("/f")).unwrap(), b"5");
    }
}
