//! Where the readers' bytes come from.
//!
//! Every read of [`crate::CgroupFs`] and of procfs goes through a [`Files`]: [`Disk`] in
//! production; a recording tap (which keeps what passed, for `oomwarden record` and the flight
//! recorder) or a recording being replayed (`oomwarden replay`) elsewhere. The readers, the
//! parsers and everything above them run unchanged on all three.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A read-only view of a file tree, by absolute path.
pub trait Files: Send + Sync + fmt::Debug {
    /// The whole content of a file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Names of the directories directly below `path`, in any order. Entries that vanish while
    /// listing are left out.
    fn subdirs(&self, path: &Path) -> io::Result<Vec<String>>;
    /// Whether `path` is a directory now.
    fn is_dir(&self, path: &Path) -> bool;
    /// The id of the file or directory at `path` now: its inode number. For a cgroup
    /// that is the kernel's cgroup id, which cgroup2 never gives twice, so a cgroup removed
    /// and created again under the same path (a restarted unit, a new pod sandbox) has
    /// another.
    fn cgroup_id(&self, path: &Path) -> io::Result<u64>;
}

/// The real filesystem.
#[derive(Debug, Clone, Copy, Default)]
pub struct Disk;

/// No cgroup or proc file the daemon reads comes near this (the largest, `cgroup.procs` of a
/// huge cgroup, holds a few bytes per PID); a file that streams forever (a fake tree's symlink
/// to `/dev/urandom`) is cut here and is an error, so no read can hang or bloat a cycle.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

fn too_long() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "longer than {} MiB: not a cgroup or proc file",
            MAX_FILE_BYTES >> 20
        ),
    )
}

/// Opens a file a reader reads: without blocking (a FIFO planted in a tree opens at once, with
/// no writer) and only when it is a regular file, checked on the descriptor opened (every
/// cgroup2 and proc file is one; a FIFO, a device or a socket is refused, so no read can
/// block: found by the fault suite, `oomwarden doctor` hung on a FIFO in a proc tree).
pub(crate) fn open_regular(path: &Path) -> io::Result<std::fs::File> {
    use rustix::fs::{FileType, Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )?;
    let stat = rustix::fs::fstat(&fd)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file (a directory, FIFO, device or socket is refused)",
        ));
    }
    Ok(std::fs::File::from(fd))
}

/// Reads an open file to its end, at most [`MAX_FILE_BYTES`].
fn read_open(file: std::fs::File) -> io::Result<Vec<u8>> {
    use std::io::Read;
    // Room for any cgroup or proc file the daemon reads every cycle, so that one read and
    // the one that finds the end are all (an empty vector would start with a 32-byte probe).
    let mut content = Vec::with_capacity(4096);
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut content)?;
    if u64::try_from(content.len()).unwrap_or(u64::MAX) > MAX_FILE_BYTES {
        return Err(too_long());
    }
    Ok(content)
}

impl Files for Disk {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        read_open(open_regular(path)?)
    }

    fn subdirs(&self, path: &Path) -> io::Result<Vec<String>> {
        self.subdirs_of(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn cgroup_id(&self, path: &Path) -> io::Result<u64> {
        use std::os::unix::fs::MetadataExt;
        Ok(std::fs::metadata(path)?.ino())
    }
}

impl Disk {
    /// [`Files::subdirs`] of the real filesystem.
    pub(crate) fn subdirs_of(self, path: &Path) -> io::Result<Vec<String>> {
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
}

/// The real filesystem, keeping open the kernel's files it reads (cgroup2 and proc) and
/// reading each again from offset 0 (`pread`), which the kernel answers with fresh values as
/// an open would: one system call a file instead of a path walk, an open, two reads and a
/// close. What the daemon reads every cycle (each class's pressure and memory files,
/// `meminfo`, the kernel-OOM watch's `memory.events`) so costs a fraction: under emulation
/// the opens and closes were most of the quiet daemon's CPU (docs/performance.md).
///
/// Bounded and never stale beyond a minute: at most `cap` files are kept (the first ones
/// read, so the every-cycle files, read first, stay; the rest are read as [`Disk`] reads);
/// a file not read for [`KEPT_IDLE`] is closed, and every file is opened again after
/// [`KEPT_AT_MOST`]; a read that fails on a kept file (a cgroup removed: `ENODEV`; a process
/// gone: `ESRCH`) closes it and the path is opened again, whose answer is the read's. A
/// cgroup cannot be renamed on cgroup2 (the kernel answers `EPERM`, checked on this project's
/// host), so a kept file always belongs to the path it was opened by. Files on other filesystems (a fixture tree) are never kept,
/// so a file replaced there is read as it is now.
///
/// The directory questions (a listing, a cgroup's id, whether a directory is there) are
/// answered from what the kernel last said, kept while an inotify watch reports no change
/// (`dirs.rs`): on cgroup2 only, exact, and without a path walk per question.
#[derive(Debug)]
pub struct Kept {
    cap: usize,
    state: Mutex<KeptState>,
    /// Listings, ids and absences of cgroup directories, kept while the kernel says nothing
    /// changed (`dirs.rs`).
    dirs: crate::dirs::DirAnswers,
}

#[derive(Debug)]
struct KeptState {
    files: HashMap<PathBuf, KeptFile>,
    swept: Instant,
}

#[derive(Debug)]
struct KeptFile {
    file: Arc<std::fs::File>,
    opened: Instant,
    used: Instant,
    /// The last length read: the next read's buffer.
    len: usize,
}

/// A kept file not read for this long is closed.
pub const KEPT_IDLE: Duration = Duration::from_secs(30);
/// A kept file is opened again after this long.
pub const KEPT_AT_MOST: Duration = Duration::from_secs(60);
/// How often the kept files are looked over.
const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// `statfs`'s type of a cgroup2 mount (linux/magic.h).
const CGROUP2_SUPER_MAGIC: u64 = 0x6367_7270;

impl Kept {
    /// Keeps at most `cap` files open.
    pub fn new(cap: usize) -> Kept {
        Kept {
            cap,
            state: Mutex::new(KeptState {
                files: HashMap::new(),
                swept: Instant::now(),
            }),
            dirs: crate::dirs::DirAnswers::new(false),
        }
    }

    /// How many files are open now.
    pub fn open_files(&self) -> usize {
        self.state.lock().map_or(0, |s| s.files.len())
    }

    /// The kept file of `path`, marked used (after closing what is idle or old).
    fn take(&self, path: &Path, now: Instant) -> Option<(Arc<std::fs::File>, usize)> {
        let mut state = self.state.lock().ok()?;
        if now.saturating_duration_since(state.swept) >= SWEEP_EVERY {
            state.swept = now;
            state.files.retain(|_, k| {
                now.saturating_duration_since(k.used) < KEPT_IDLE
                    && now.saturating_duration_since(k.opened) < KEPT_AT_MOST
            });
        }
        let kept = state.files.get_mut(path)?;
        if now.saturating_duration_since(kept.opened) >= KEPT_AT_MOST {
            state.files.remove(path);
            return None;
        }
        kept.used = now;
        Some((Arc::clone(&kept.file), kept.len))
    }

    fn forget(&self, path: &Path) {
        if let Ok(mut state) = self.state.lock() {
            state.files.remove(path);
        }
    }

    fn keep(&self, path: &Path, file: Arc<std::fs::File>, len: usize, now: Instant) {
        if let Ok(mut state) = self.state.lock()
            && state.files.len() < self.cap
        {
            state.files.insert(
                path.to_owned(),
                KeptFile {
                    file,
                    opened: now,
                    used: now,
                    len,
                },
            );
        }
    }

    fn has_room(&self) -> bool {
        self.state.lock().is_ok_and(|s| s.files.len() < self.cap)
    }
}

/// Whether a file is the kernel's (cgroup2, proc), whose reads from offset 0 are fresh and
/// whose short reads mean the end.
fn is_kernel_file(file: &std::fs::File) -> bool {
    rustix::fs::fstatfs(file).is_ok_and(|s| {
        // `f_type` is a signed word; the magic numbers are compared as the same bits.
        let kind = s.f_type.cast_unsigned();
        kind == CGROUP2_SUPER_MAGIC || kind == rustix::fs::PROC_SUPER_MAGIC.cast_unsigned()
    })
}

/// Reads a kernel file from offset 0 to its end: a read shorter than asked is the end (the
/// kernel's seq files fill what is asked unless they are done). Into a buffer sized from the
/// last read, not zeroed first.
fn pread_all(file: &std::fs::File, len_hint: usize) -> io::Result<Vec<u8>> {
    let max = usize::try_from(MAX_FILE_BYTES).unwrap_or(usize::MAX);
    let mut buf = Vec::with_capacity(
        len_hint
            .saturating_add(len_hint / 2)
            .clamp(256, max.saturating_add(1)),
    );
    loop {
        if buf.len() > max {
            return Err(too_long());
        }
        if buf.len() == buf.capacity() {
            // Doubled, and never past one byte more than allowed (which says "too long").
            let more = buf
                .len()
                .min(max.saturating_add(1).saturating_sub(buf.len()));
            buf.reserve_exact(more.max(1));
        }
        let asked = buf.capacity().saturating_sub(buf.len());
        let offset = u64::try_from(buf.len()).unwrap_or(u64::MAX);
        let n = rustix::io::pread(file, rustix::buffer::spare_capacity(&mut buf), offset)
            .map_err(io::Error::from)?;
        if n == 0 || n < asked {
            return Ok(buf);
        }
    }
}

impl Files for Kept {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let now = Instant::now();
        if let Some((file, len)) = self.take(path, now) {
            match pread_all(&file, len) {
                Ok(content) => return Ok(content),
                // Removed, gone or broken: the path, opened again, answers.
                Err(_) => self.forget(path),
            }
        }
        let file = open_regular(path)?;
        if !(self.has_room() && is_kernel_file(&file)) {
            return read_open(file);
        }
        let file = Arc::new(file);
        let content = pread_all(&file, 0)?;
        self.keep(path, file, content.len(), now);
        Ok(content)
    }

    fn subdirs(&self, path: &Path) -> io::Result<Vec<String>> {
        self.dirs.subdirs(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.dirs.is_dir(path)
    }

    fn cgroup_id(&self, path: &Path) -> io::Result<u64> {
        self.dirs.id(path)
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
        // A device is refused before anything is read (issue 54); a regular file past the
        // bound is cut and refused.
        assert!(err.contains("not a regular file"), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        let huge = dir.path().join("memory.stat");
        let f = std::fs::File::create(&huge).unwrap_or_else(|e| panic!("{e}"));
        f.set_len(MAX_FILE_BYTES + 1)
            .unwrap_or_else(|e| panic!("{e}"));
        let err = Disk
            .read(&huge)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("not a cgroup or proc file"), "{err}");
        let ok = dir.path().join("memory.current");
        std::fs::write(&ok, "4096\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Disk.read(&ok).ok(), Some(b"4096\n".to_vec()));
    }
}

#[cfg(test)]
mod kept {
    use super::*;

    fn ok<T, E: fmt::Display>(r: Result<T, E>) -> T {
        r.unwrap_or_else(|e| panic!("{e}"))
    }

    // The kernel answers a read from offset 0 of a kept file with what it holds now.
    #[test]
    fn a_kernel_file_is_kept_and_read_fresh() {
        let kept = Kept::new(8);
        let comm = Path::new("/proc/thread-self/comm");
        ok(std::fs::write(comm, "kept-one"));
        assert_eq!(ok(kept.read(comm)), b"kept-one\n");
        assert_eq!(kept.open_files(), 1);
        ok(std::fs::write(comm, "kept-two"));
        assert_eq!(ok(kept.read(comm)), b"kept-two\n");
        assert_eq!(kept.open_files(), 1);
    }

    // A fixture tree's file may be replaced (a rename over it): it is never kept.
    #[test]
    fn a_file_elsewhere_is_not_kept() {
        let dir = ok(tempfile::tempdir());
        let file = dir.path().join("memory.current");
        ok(std::fs::write(&file, "1\n"));
        let kept = Kept::new(8);
        assert_eq!(ok(kept.read(&file)), b"1\n");
        let new = dir.path().join("new");
        ok(std::fs::write(&new, "2\n"));
        ok(std::fs::rename(&new, &file));
        assert_eq!(ok(kept.read(&file)), b"2\n");
        assert_eq!(kept.open_files(), 0);
    }

    // A kept file whose process is gone: the path is asked again, and its answer (no such
    // file) is the read's; nothing stays open for it.
    #[test]
    fn a_kept_file_that_went_away_is_opened_again() {
        let mut child = ok(std::process::Command::new("sleep").arg("60").spawn());
        let path = PathBuf::from(format!("/proc/{}/oom_score_adj", child.id()));
        let kept = Kept::new(8);
        assert!(ok(kept.read(&path)).ends_with(b"\n"));
        assert_eq!(kept.open_files(), 1);
        ok(child.kill());
        ok(child.wait());
        let err = kept.read(&path).err().map(|e| e.kind());
        assert_eq!(err, Some(io::ErrorKind::NotFound));
        assert_eq!(kept.open_files(), 0);
    }

    #[test]
    fn no_more_than_the_cap_is_kept_and_the_rest_is_read_anyway() {
        let kept = Kept::new(1);
        let a = ok(kept.read(Path::new("/proc/self/oom_score_adj")));
        let b = ok(kept.read(Path::new("/proc/self/stat")));
        assert!(!a.is_empty() && !b.is_empty());
        assert_eq!(kept.open_files(), 1);
    }

    // Longer than the first buffer: read in pieces to the end, whatever the hint.
    #[test]
    fn a_long_file_is_read_whole() {
        let dir = ok(tempfile::tempdir());
        let path = dir.path().join("long");
        let content: Vec<u8> = (0..20_000_u32).map(|i| (i % 251) as u8).collect();
        ok(std::fs::write(&path, &content));
        let file = ok(std::fs::File::open(&path));
        assert_eq!(ok(pread_all(&file, 0)), content);
        assert_eq!(ok(pread_all(&file, 19_999)), content);
        assert_eq!(ok(pread_all(&file, 50_000)), content);
    }
}
