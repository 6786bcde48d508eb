//! Recording what the engine reads, for `oomwarden replay`: `oomwarden run --record FILE`
//! (every cycle to a file) and the flight recorder (the last minutes in memory, saved beside
//! each action and served on the action API).
//!
//! The readers go through a [`Tap`]; at the end of each cycle the engine hands its reads to the
//! [`CycleRecorder`]. While recording, the engine reads the candidates in every cycle, not only
//! when the trigger fires, so that a replay under another trigger finds them.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use oomwarden_recording::{Meta, Recorder, Tap, Wakeup};

/// What a recording of this node says about itself, now: where, when, which layout, interval
/// and configuration. `own_cgroup` and `description` are left for the caller.
pub fn meta(
    settings: &oomwarden_config::Settings,
    layout: &oomwarden_model::Layout,
    cgroup_root: &Path,
    proc_root: &Path,
    source: &str,
) -> Meta {
    let kernel_file = |name: &str| {
        fs::read_to_string(Path::new("/proc/sys/kernel").join(name))
            .ok()
            .map(|t| t.trim().to_owned())
    };
    // Absolute, as the daemon's records name cgroups.
    let absolute = |p: &Path| {
        std::path::absolute(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .display()
            .to_string()
    };
    Meta {
        started_at: oomwarden_node::wall_clock(),
        start_ns: oomwarden_node::monotonic_ns(),
        cgroup_root: absolute(cgroup_root),
        proc_root: absolute(proc_root),
        layout: layout.name.clone(),
        layout_document: matches!(
            settings.warden.layout,
            oomwarden_config::LayoutSetting::Custom(_)
        )
        .then(|| oomwarden_config::layout_document(layout)),
        own_cgroup: None,
        last_trigger_ns: None,
        interval_ms: u64::try_from(settings.oom.sample_interval.as_millis()).unwrap_or(u64::MAX),
        source: source.to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        config: Some(settings.to_yaml()),
        hostname: kernel_file("hostname"),
        kernel: kernel_file("osrelease"),
        description: None,
    }
}

/// Creates (or empties) a recording file, mode 0600 (recordings name the node's cgroups and,
/// after a kill, command lines), locked with `flock` for as long as it is open. A file that
/// another process is recording into is refused untouched (`ResourceBusy`).
pub fn create_recording_file(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)?;
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(rustix::io::Errno::WOULDBLOCK) => {
            return Err(io::Error::new(
                io::ErrorKind::ResourceBusy,
                "another process is recording into it",
            ));
        }
        Err(e) => return Err(e.into()),
    }
    file.set_len(0)?;
    Ok(file)
}

/// The directory below the state directory where the flight recorder saves its windows.
pub const RECORDINGS_DIR: &str = "recordings";

/// A recording being written to a file.
#[derive(Debug)]
struct Sink {
    path: PathBuf,
    file: File,
    failed: bool,
}

/// Where and how many windows are saved.
#[derive(Debug)]
struct Saves {
    dir: crate::statedir::StateDir,
    keep: usize,
}

/// Turns each cycle's reads into a recording.
#[derive(Debug)]
pub struct CycleRecorder {
    tap: Arc<Tap>,
    recorder: Arc<Mutex<Recorder>>,
    sink: Option<Sink>,
    saves: Option<Saves>,
}

impl CycleRecorder {
    /// A recorder of what passes `tap`; `window_ns` keeps that much in memory.
    pub fn new(tap: Arc<Tap>, meta: Meta, window_ns: Option<u64>) -> Self {
        CycleRecorder {
            tap,
            recorder: Arc::new(Mutex::new(Recorder::new(meta, window_ns))),
            sink: None,
            saves: None,
        }
    }

    /// Also writes every cycle to `path` (created or truncated, mode 0600: recordings name
    /// the node's cgroups and, after a kill, command lines). The file is locked (`flock`)
    /// first: one that another process is recording into is refused untouched.
    pub fn writing_to(mut self, path: &Path) -> io::Result<Self> {
        let mut file = create_recording_file(path)?;
        file.write_all(self.lock().header().as_bytes())?;
        self.sink = Some(Sink {
            path: path.to_path_buf(),
            file,
            failed: false,
        });
        Ok(self)
    }

    /// Saves the in-memory window to `dir` with each action, keeping the newest `keep`
    /// (files opened and removed relative to `dir`, never through a symlink).
    pub fn saving_to(mut self, dir: crate::statedir::StateDir, keep: usize) -> Self {
        self.saves = Some(Saves { dir, keep });
        self
    }

    /// The recorder, shared with the action API (which serves its window).
    pub fn shared(&self) -> Arc<Mutex<Recorder>> {
        Arc::clone(&self.recorder)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recorder> {
        self.recorder.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The configuration named in the windows saved from now on (after a reload).
    pub(crate) fn set_config(&self, yaml: String) {
        self.lock().set_config(Some(yaml));
    }

    /// The trigger fired in the cycle at `at_ns`.
    pub(crate) fn triggered(&self, at_ns: u64) {
        self.lock().triggered(at_ns);
    }

    /// Forgets reads made outside a cycle (a reload's layout detection, the PSI trigger
    /// registration): they would otherwise count as the next cycle's first reads.
    pub(crate) fn discard(&self) {
        drop(self.tap.take());
    }

    /// Ends a cycle: its reads are encoded, appended to the file, kept in the window.
    pub(crate) fn end_cycle(
        &mut self,
        at_ns: u64,
        wakeup: Wakeup,
        identities: Option<Arc<oomwarden_model::Identities>>,
    ) {
        let reads = self.tap.take();
        let text = self.lock().cycle_with(at_ns, wakeup, reads, identities);
        if let Some(sink) = &mut self.sink
            && !sink.failed
            && let Err(error) = sink.file.write_all(text.as_bytes())
        {
            // Once: a full disk would otherwise log every cycle. The daemon goes on.
            sink.failed = true;
            tracing::error!(file = %sink.path.display(), %error, "cannot write the recording; recording to the file stops");
        }
    }

    /// Closes the file's recording with its end line (a recording without one reads as cut
    /// short).
    pub(crate) fn finish(&mut self) {
        if let Some(sink) = &mut self.sink
            && !sink.failed
            && let Err(error) = sink
                .file
                .write_all(oomwarden_recording::END_LINE.as_bytes())
                .and_then(|()| sink.file.sync_data())
        {
            sink.failed = true;
            tracing::error!(file = %sink.path.display(), %error, "cannot end the recording");
        }
    }

    /// Saves the window for action `id`; returns the file's path, or `None` (logged) when
    /// saving is off or fails.
    pub(crate) fn save(&self, id: u64) -> Option<String> {
        let saves = self.saves.as_ref()?;
        let bytes = oomwarden_recording::gzip(&self.lock().window());
        let name = format!("action-{id}.rec.gz");
        let path = saves.dir.join(&name);
        let written = saves
            .dir
            .open_file(
                &name,
                rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CREATE | rustix::fs::OFlags::TRUNC,
            )
            .and_then(|mut f| f.write_all(&bytes));
        if let Err(error) = written {
            tracing::error!(file = %path.display(), %error, "cannot save the flight recorder's window");
            return None;
        }
        prune(&saves.dir, saves.keep);
        Some(path.display().to_string())
    }
}

/// Deletes the oldest `action-<id>.rec.gz` files beyond `keep` (by id).
fn prune(dir: &crate::statedir::StateDir, keep: usize) {
    let Ok(names) = dir.names() else {
        return;
    };
    let mut saved: Vec<(u64, String)> = names
        .into_iter()
        .filter_map(|n| {
            let name = n.into_string().ok()?;
            let id = name
                .strip_prefix("action-")?
                .strip_suffix(".rec.gz")?
                .parse()
                .ok()?;
            Some((id, name))
        })
        .collect();
    saved.sort_unstable();
    let excess = saved.len().saturating_sub(keep);
    for (_, name) in saved.into_iter().take(excess) {
        if let Err(error) = dir.remove(&name) {
            tracing::warn!(file = %dir.join(&name).display(), %error, "cannot delete an old flight recording");
        }
    }
}
