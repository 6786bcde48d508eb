//! Read `/proc` (or a fixture tree standing in for it): `pressure/memory`, `meminfo`,
//! `<pid>/cmdline`, `<pid>/cgroup`. A process that has exited is [`ReadError::Gone`], an ordinary
//! outcome. This crate never writes.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use oomwarden_cgroupfs::{Disk, Files, Pressure, parse};

/// Where procfs is mounted on a normal host.
pub const DEFAULT_PROC_ROOT: &str = "/proc";

/// A failed read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The process (or file) does not exist (any more): `ENOENT` or `ESRCH`.
    #[error("{path}: not found")]
    Gone {
        /// The file.
        path: PathBuf,
    },
    /// Any other I/O error.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// Unexpected content.
    #[error("{path}: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

const ESRCH: i32 = 3;

/// procfs rooted at a directory.
#[derive(Debug, Clone)]
pub struct ProcFs {
    root: PathBuf,
    files: Arc<dyn Files>,
}

impl ProcFs {
    /// procfs at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ProcFs::with_files(root, Arc::new(Disk))
    }

    /// procfs at `root` read through `files` (a recording tap, or a replayed recording).
    pub fn with_files(root: impl Into<PathBuf>, files: Arc<dyn Files>) -> Self {
        ProcFs {
            root: root.into(),
            files,
        }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn read_bytes(&self, rel: &str) -> Result<Vec<u8>, ReadError> {
        let path = self.root.join(rel);
        self.files.read(&path).map_err(|source| {
            if source.kind() == io::ErrorKind::NotFound || source.raw_os_error() == Some(ESRCH) {
                ReadError::Gone { path }
            } else {
                ReadError::Io { path, source }
            }
        })
    }

    /// `pressure/memory`: the node-wide memory PSI.
    pub fn pressure_memory(&self) -> Result<Pressure, ReadError> {
        let bytes = self.read_bytes("pressure/memory")?;
        parse::pressure(&String::from_utf8_lossy(&bytes)).map_err(|e| ReadError::Parse {
            path: self.root.join("pressure/memory"),
            reason: e.to_string(),
        })
    }

    /// `meminfo`: the node's memory counters, in bytes.
    pub fn meminfo(&self) -> Result<parse::Meminfo, ReadError> {
        let bytes = self.read_bytes("meminfo")?;
        parse::meminfo(&String::from_utf8_lossy(&bytes)).map_err(|e| ReadError::Parse {
            path: self.root.join("meminfo"),
            reason: e.to_string(),
        })
    }

    /// `vmstat`: the kernel's memory-management counters (`key value` lines), as read.
    pub fn vmstat(&self) -> Result<Vec<(String, u64)>, ReadError> {
        let bytes = self.read_bytes("vmstat")?;
        oomwarden_cgroupfs::parse::flat_keyed(&String::from_utf8_lossy(&bytes)).map_err(|e| {
            ReadError::Parse {
                path: self.root.join("vmstat"),
                reason: e.to_string(),
            }
        })
    }

    /// The sum of the zones' low watermarks from `zoneinfo`, in pages.
    pub fn watermark_low_pages(&self) -> Result<u64, ReadError> {
        let bytes = self.read_bytes("zoneinfo")?;
        parse::zoneinfo_low_pages(&String::from_utf8_lossy(&bytes)).map_err(|e| ReadError::Parse {
            path: self.root.join("zoneinfo"),
            reason: e.to_string(),
        })
    }

    /// `MemTotal` and `MemAvailable` from `meminfo`, in bytes, reading no further than needed.
    pub fn node_memory(&self) -> Result<(u64, u64), ReadError> {
        let bytes = self.read_bytes("meminfo")?;
        let text = String::from_utf8_lossy(&bytes);
        let parse_error = |reason: String| ReadError::Parse {
            path: self.root.join("meminfo"),
            reason,
        };
        let (mut total, mut available) = (None, None);
        for entry in parse::meminfo_entries(&text) {
            match entry.map_err(|e| parse_error(e.to_string()))? {
                ("MemTotal", v) => total = Some(v),
                ("MemAvailable", v) => available = Some(v),
                _ => {}
            }
            if let (Some(t), Some(a)) = (total, available) {
                return Ok((t, a));
            }
        }
        Err(parse_error("no MemTotal or MemAvailable line".into()))
    }

    /// `<pid>/cmdline`, formatted as Talos records it: trailing NULs stripped, the remaining
    /// NULs turned into spaces. Kernel threads and zombies give `""`.
    pub fn cmdline(&self, pid: u32) -> Result<String, ReadError> {
        let bytes = self.read_bytes(&format!("{pid}/cmdline"))?;
        Ok(format_cmdline(&bytes))
    }

    /// `<pid>/oom_score_adj`: -1000 to 1000, set by the kubelet from the pod's QoS class and
    /// priority.
    pub fn oom_score_adj(&self, pid: u32) -> Result<i64, ReadError> {
        let rel = format!("{pid}/oom_score_adj");
        let bytes = self.read_bytes(&rel)?;
        String::from_utf8_lossy(&bytes)
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|v| (-1000..=1000).contains(v))
            .ok_or_else(|| ReadError::Parse {
                path: self.root.join(rel),
                reason: "not a number from -1000 to 1000".into(),
            })
    }

    /// The cgroup v2 path of a process (`<pid>/cgroup`, the `0::/path` line), without the
    /// leading `/` (`""` for the root cgroup).
    pub fn cgroup_of(&self, pid: &str) -> Result<String, ReadError> {
        let rel = format!("{pid}/cgroup");
        let bytes = self.read_bytes(&rel)?;
        let text = String::from_utf8_lossy(&bytes);
        text.lines()
            .find_map(|l| l.strip_prefix("0::"))
            .map(|p| p.trim_start_matches('/').trim_end().to_owned())
            .ok_or_else(|| ReadError::Parse {
                path: self.root.join(rel),
                reason: "no cgroup v2 (\"0::\") line".into(),
            })
    }
}

/// How a cut command line ends: `… (N more bytes)`.
pub const CMDLINE_CUT_SUFFIX: &str = " more bytes)";

/// A command line longer than this is cut (a process's arguments may be megabytes long; a
/// record keeps the start and says how much was left out).
pub const MAX_CMDLINE_BYTES: usize = 4096;

/// Talos's command-line formatting (see [`ProcFs::cmdline`]), cut at [`MAX_CMDLINE_BYTES`]:
/// `<start>… (N more bytes)`.
pub fn format_cmdline(bytes: &[u8]) -> String {
    let end = bytes.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
    let trimmed = bytes.get(..end).unwrap_or_default();
    if trimmed.len() > MAX_CMDLINE_BYTES {
        let kept = trimmed.get(..MAX_CMDLINE_BYTES).unwrap_or_default();
        let mut text = String::from_utf8_lossy(kept).replace('\0', " ");
        // A character cut in two shows as U+FFFD; drop it.
        if text.ends_with('\u{fffd}') {
            text.pop();
        }
        return format!("{text}… ({} more bytes)", trimmed.len() - MAX_CMDLINE_BYTES);
    }
    String::from_utf8_lossy(trimmed).replace('\0', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdline_is_formatted_like_talos() {
        // Talos D23: `a\0b\0` → "a b"; a kernel thread → "".
        assert_eq!(format_cmdline(b"a\0b\0"), "a b");
        assert_eq!(format_cmdline(b""), "");
        assert_eq!(format_cmdline(b"\0\0"), "");
        assert_eq!(
            format_cmdline(b"/bin/sh\0-c\0sleep 10\0"),
            "/bin/sh -c sleep 10"
        );
        assert_eq!(format_cmdline(b"x\xff\0"), "x\u{fffd}");
    }

    #[test]
    fn node_memory_from_meminfo() {
        let dir = tempfile::tempdir().unwrap();
        let proc = ProcFs::new(dir.path());
        assert!(matches!(proc.node_memory(), Err(ReadError::Gone { .. })));
        let write = |text: &str| std::fs::write(dir.path().join("meminfo"), text).unwrap();
        write("MemTotal: 1000 kB\nMemFree: 10 kB\nMemAvailable: 500 kB\ngarbage\n");
        // Stops at MemAvailable: a malformed line after it does not matter.
        assert_eq!(proc.node_memory().unwrap(), (1_024_000, 512_000));
        write("MemTotal: 1000 kB\n");
        let e = proc.node_memory().unwrap_err().to_string();
        assert!(
            e.ends_with("meminfo: no MemTotal or MemAvailable line"),
            "{e}"
        );
        write("MemTotal: lots\nMemAvailable: 5 kB\n");
        let e = proc.node_memory().unwrap_err().to_string();
        assert!(e.contains("line 1: MemTotal: expected a number"), "{e}");
    }

    #[test]
    fn reads_fixture_proc() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("10")).unwrap();
        std::fs::create_dir_all(dir.path().join("pressure")).unwrap();
        std::fs::write(dir.path().join("10/cmdline"), b"stress-ng\0--vm\0\x31\0").unwrap();
        std::fs::write(
            dir.path().join("10/cgroup"),
            "0::/system.slice/oomwarden.service\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("pressure/memory"), "some avg10=1.00 avg60=0.00 avg300=0.00 total=5\nfull avg10=0.50 avg60=0.00 avg300=0.00 total=2\n").unwrap();
        let proc = ProcFs::new(dir.path());
        assert_eq!(proc.cmdline(10).unwrap(), "stress-ng --vm 1");
        assert!(matches!(proc.cmdline(11), Err(ReadError::Gone { .. })));
        assert_eq!(
            proc.cgroup_of("10").unwrap(),
            "system.slice/oomwarden.service"
        );
        assert!(proc.pressure_memory().is_ok());
    }

    #[test]
    fn reads_the_real_proc_self() {
        // Every Linux host has these; the cgroup line may be v1-only on old hosts.
        let proc = ProcFs::new(DEFAULT_PROC_ROOT);
        assert!(!proc.cmdline(std::process::id()).unwrap().is_empty());
    }

    proptest::proptest! {
        #[test]
        fn cmdline_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let s = format_cmdline(&bytes);
            proptest::prop_assert!(!s.ends_with(' ') || bytes.iter().rev().find(|b| **b != 0) == Some(&b' '));
        }
    }
}
