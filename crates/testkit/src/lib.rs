//! Fixture-tree and log-capture helpers for tests. Never a dependency of product code.

// Test support: a fixture that cannot be written is a broken test environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

pub mod apiserver;
pub mod cri;

/// Writes `content` to `root/rel`, creating directories.
pub fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create fixture directory");
    }
    std::fs::write(&path, content).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// Makes a FIFO at `path` (a file that blocks whoever opens it for reading without a writer).
pub fn fifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg("-m")
        .arg("600")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success());
    assert!(made, "mkfifo {}", path.display());
}

/// Copies a directory tree.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create fixture directory");
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A verbatim Talos fixture tree (`testdata/talos/<name>`); `does-not-exist` is F-empty.
pub fn talos_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/talos")
        .join(name)
}

/// A tempdir holding a copy of a Talos fixture at `path()` (absent for F-empty), to mutate.
#[derive(Debug)]
pub struct Copied {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Copied {
    /// The copy's root.
    pub fn path(&self) -> &Path {
        &self.root
    }
}

/// Copies a Talos fixture into a tempdir.
pub fn copy_talos_fixture(name: &str) -> Copied {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    if talos_fixture(name).exists() {
        copy_dir(&talos_fixture(name), &root);
    }
    Copied { _dir: dir, root }
}

/// A procfs fixture (`testdata/proc`) holding a real `meminfo` (1 GiB VM: MemTotal 998,096 kB,
/// MemAvailable 782,780 kB), for tests that read the node's memory but no processes.
pub fn proc_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/proc")
}

/// A log writer that keeps what is written, for a `tracing_subscriber` under test: hand
/// `move || buffer.clone()` as the writer, then read [`LogBuffer::text`].
#[derive(Clone, Default, Debug)]
pub struct LogBuffer(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl LogBuffer {
    /// Everything written so far.
    pub fn text(&self) -> String {
        let bytes = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl std::io::Write for LogBuffer {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The log lines (plain text, no colours) that `f` emits on this thread (and on threads that
/// take over its subscriber, as the identity cache's refresher does).
///
/// The first capture also installs, for the whole test process, a global subscriber that is
/// interested in everything and writes nothing. Without it a callsite first reached by
/// another test's thread (where no subscriber is set) could keep its interest cached as
/// "never", and a span's fields went missing from a capture at random.
pub fn capture_logs(f: impl FnOnce()) -> String {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        // A test binary that set its own first keeps it.
        let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry());
    });
    let buffer = LogBuffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    buffer.text()
}
