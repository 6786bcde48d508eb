//! Kernel PSI triggers (`Documentation/accounting/psi.rst`, "Monitoring for pressure
//! thresholds"): writing `full 100000 1000000` to a cgroup's `memory.pressure` asks the kernel
//! to wake a `poll` for `POLLPRI` when that much stall (µs) accumulates within the window (µs).
//! The file must stay open; at most one wake-up per window per trigger.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};

use crate::{CgroupFs, ReadError};

/// What makes a trigger fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TriggerSpec {
    /// `full` (every non-idle task stalled) rather than `some`.
    pub full: bool,
    /// Stall time within the window that fires it.
    pub stall: Duration,
    /// The window (the kernel accepts 500 ms to 10 s).
    pub window: Duration,
}

impl TriggerSpec {
    /// The line written to `memory.pressure`.
    pub fn line(&self) -> String {
        format!(
            "{} {} {}",
            if self.full { "full" } else { "some" },
            self.stall.as_micros(),
            self.window.as_micros()
        )
    }
}

/// Registered triggers, one open `memory.pressure` per cgroup.
#[derive(Debug, Default)]
pub struct PressureTriggers {
    files: Vec<(String, File)>,
}

impl PressureTriggers {
    /// Registers `spec` on each cgroup. A cgroup that fails is reported and left out.
    pub fn register(
        cgroups: &CgroupFs,
        dirs: &[String],
        spec: &TriggerSpec,
    ) -> (PressureTriggers, Vec<ReadError>) {
        let mut triggers = PressureTriggers::default();
        let mut errors = Vec::new();
        let line = spec.line();
        for dir in dirs {
            let path = cgroups.dir(dir).join("memory.pressure");
            let opened = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(rustix::fs::OFlags::NONBLOCK.bits().cast_signed())
                .open(&path)
                .and_then(|mut f| f.write_all(line.as_bytes()).map(|()| f));
            match opened {
                Ok(f) => triggers.files.push((dir.clone(), f)),
                Err(e) => errors.push(crate::classify(path, e)),
            }
        }
        (triggers, errors)
    }

    /// How many triggers are registered.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Waits (at most `timeout`, `None`: forever) for triggers to fire; returns the cgroups
    /// that did. A trigger whose cgroup went away (`POLLERR`) is dropped.
    pub fn wait(&mut self, timeout: Option<Duration>) -> std::io::Result<Vec<String>> {
        let ts = timeout.map(|t| Timespec {
            tv_sec: i64::try_from(t.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(t.subsec_nanos()),
        });
        let revents: Vec<PollFlags> = {
            let mut fds: Vec<PollFd<'_>> = self
                .files
                .iter()
                .map(|(_, f)| PollFd::new(f, PollFlags::PRI))
                .collect();
            match poll(&mut fds, ts.as_ref()) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => return Ok(Vec::new()),
                Err(e) => return Err(e.into()),
            }
            fds.iter().map(PollFd::revents).collect()
        };
        let mut fired = Vec::new();
        let mut gone = Vec::new();
        for ((dir, _), r) in self.files.iter().zip(revents) {
            if r.intersects(PollFlags::ERR | PollFlags::NVAL | PollFlags::HUP) {
                gone.push(dir.clone());
            } else if r.contains(PollFlags::PRI) {
                fired.push(dir.clone());
            }
        }
        self.files.retain(|(d, _)| !gone.contains(d));
        Ok(fired)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trigger_line() {
        let spec = TriggerSpec {
            full: true,
            stall: Duration::from_millis(100),
            window: Duration::from_secs(1),
        };
        assert_eq!(spec.line(), "full 100000 1000000");
    }

    #[test]
    fn registering_on_a_plain_file_tree_never_fires() {
        // On a fixture (a regular file) the write succeeds and poll reports it readable, never
        // POLLPRI; a missing cgroup is reported.
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("system")).unwrap();
        std::fs::write(tmp.path().join("system/memory.pressure"), "").unwrap();
        let cg = CgroupFs::new(tmp.path());
        let spec = TriggerSpec {
            full: false,
            stall: Duration::from_millis(150),
            window: Duration::from_secs(1),
        };
        let (mut t, errors) =
            PressureTriggers::register(&cg, &["system".into(), "gone".into()], &spec);
        assert_eq!(t.len(), 1);
        assert!(matches!(errors.as_slice(), [e] if e.is_not_found()));
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("system/memory.pressure")).unwrap(),
            "some 150000 1000000"
        );
        assert_eq!(
            t.wait(Some(Duration::from_millis(10))).unwrap(),
            Vec::<String>::new()
        );
    }
}
