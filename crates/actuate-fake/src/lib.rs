//! A recording fake of [`Actuator`] and [`Hooks`] for tests: no system call is made and no
//! command run; every call is recorded in order, and `cgroup.kill` and the kernel's OOM killer
//! change a fixture tree as the kernel would ([`KillEffect`]; the OOM killer also counts
//! `oom_kill` in the cgroup's `memory.events`, as the runtime reads it). A dev-dependency only: the product never links it.

use std::io;
use std::path::{Path, PathBuf};

use oomwarden_actuate::{Actuator, HookCall, HookResult, Hooks};

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// `pidfd_open(pid)`.
    OpenPidfd(u32),
    /// Write `1` to `<dir>/cgroup.kill`.
    WriteCgroupKill(PathBuf),
    /// `process_mrelease` for `pid`.
    ReleaseMemory(u32),
    /// `memory.swap.max` and `memory.max` of `<dir>` set to 0 for the kernel's OOM killer.
    StartMemcgOom(PathBuf),
    /// SIGTERM to `pid`.
    SendSigterm(u32),
    /// All pidfds closed.
    CloseAll,
    /// A hook run and waited for.
    RunHook(HookCall),
    /// A hook started without waiting.
    SpawnHook(HookCall),
}

/// What writing `cgroup.kill` does in the fake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KillEffect {
    /// The cgroup empties: `cgroup.events` is rewritten with `populated 0` and every
    /// `cgroup.procs` below it emptied, as the kernel would.
    Empty,
    /// Processes remain (a kill that is not verified).
    Nothing,
    /// The write fails with this OS error.
    Fail(i32),
}

/// Records calls instead of making them.
#[derive(Debug)]
pub struct RecordingActuator {
    /// Every call, in order.
    pub calls: Vec<Call>,
    effect: KillEffect,
    /// PIDs whose `pidfd_open` fails with ESRCH (exited meanwhile).
    pub gone: Vec<u32>,
    /// What every waited-for hook returns.
    pub hook_result: HookResult,
    /// `pidfd_open` fails with EMFILE once this many are open.
    pub pidfd_limit: Option<usize>,
    /// The daemon's stop flag, once given.
    stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// What the kernel's OOM killer does ([`Actuator::start_memcg_oom`]); `None`: as
    /// `cgroup.kill`.
    pub oom_effect: Option<KillEffect>,
    /// The cgroups (absolute) whose processes exit on SIGTERM: each is emptied when one of
    /// its processes is signalled. Any other process ignores SIGTERM.
    pub exit_on_sigterm: Vec<PathBuf>,
}

impl RecordingActuator {
    /// A fake whose `cgroup.kill` has the given effect.
    pub fn new(effect: KillEffect) -> Self {
        RecordingActuator {
            calls: Vec::new(),
            effect,
            gone: Vec::new(),
            hook_result: HookResult::Exited(0),
            pidfd_limit: None,
            stop: None,
            oom_effect: None,
            exit_on_sigterm: Vec::new(),
        }
    }
}

fn empty_subtree(dir: &Path) -> io::Result<()> {
    std::fs::write(dir.join("cgroup.events"), "populated 0\nfrozen 0\n")?;
    if dir.join("cgroup.procs").exists() {
        std::fs::write(dir.join("cgroup.procs"), "")?;
    }
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            empty_subtree(&entry.path())?;
        }
    }
    Ok(())
}

impl Actuator for RecordingActuator {
    fn open_pidfd(&mut self, pid: u32) -> io::Result<()> {
        let open = self
            .calls
            .iter()
            .filter(|c| matches!(c, Call::OpenPidfd(_)))
            .count();
        self.calls.push(Call::OpenPidfd(pid));
        if self.pidfd_limit.is_some_and(|limit| open >= limit) {
            return Err(io::Error::from_raw_os_error(libc::EMFILE));
        }
        if self.gone.contains(&pid) {
            Err(io::Error::from_raw_os_error(libc::ESRCH))
        } else {
            Ok(())
        }
    }

    fn write_cgroup_kill(&mut self, cgroup_dir: &Path) -> io::Result<()> {
        self.calls
            .push(Call::WriteCgroupKill(cgroup_dir.to_owned()));
        match self.effect {
            KillEffect::Empty => empty_subtree(cgroup_dir),
            KillEffect::Nothing => Ok(()),
            KillEffect::Fail(errno) => Err(io::Error::from_raw_os_error(errno)),
        }
    }

    fn start_memcg_oom(&mut self, cgroup_dir: &Path) -> io::Result<()> {
        self.calls.push(Call::StartMemcgOom(cgroup_dir.to_owned()));
        match self.oom_effect.as_ref().unwrap_or(&self.effect) {
            KillEffect::Empty => {
                std::fs::write(cgroup_dir.join("memory.max"), "0\n")?;
                let events = cgroup_dir.join("memory.events");
                let before = std::fs::read_to_string(&events).unwrap_or_default();
                let kills = before
                    .lines()
                    .find_map(|l| l.strip_prefix("oom_kill "))
                    .and_then(|n| n.trim().parse::<u64>().ok())
                    .unwrap_or(0);
                let mut lines: Vec<String> = before
                    .lines()
                    .filter(|l| !l.starts_with("oom_kill ") && !l.starts_with("oom "))
                    .map(str::to_owned)
                    .collect();
                lines.push(format!("oom {}", kills + 1));
                lines.push(format!("oom_kill {}", kills + 1));
                std::fs::write(&events, lines.join("\n") + "\n")?;
                empty_subtree(cgroup_dir)
            }
            KillEffect::Nothing => Ok(()),
            KillEffect::Fail(errno) => Err(io::Error::from_raw_os_error(*errno)),
        }
    }

    fn send_sigterm(&mut self, pid: u32) -> io::Result<()> {
        self.calls.push(Call::SendSigterm(pid));
        if self.gone.contains(&pid) {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        for dir in &self.exit_on_sigterm {
            let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
            if procs.lines().any(|l| l.trim() == pid.to_string()) {
                empty_subtree(dir)?;
            }
        }
        Ok(())
    }

    fn release_memory(&mut self, pid: u32) -> io::Result<()> {
        self.calls.push(Call::ReleaseMemory(pid));
        if self.gone.contains(&pid) {
            Err(io::Error::from_raw_os_error(libc::ESRCH))
        } else {
            Ok(())
        }
    }

    fn close_all(&mut self) {
        self.calls.push(Call::CloseAll);
    }

    fn set_stop(&mut self, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) {
        self.stop = Some(stop);
    }

    fn stopping(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::SeqCst))
    }
}

impl Hooks for RecordingActuator {
    fn run_hook(&mut self, hook: &HookCall) -> HookResult {
        self.calls.push(Call::RunHook(hook.clone()));
        self.hook_result.clone()
    }

    fn spawn_hook(&mut self, hook: HookCall) {
        self.calls.push(Call::SpawnHook(hook));
    }
}

/// A recorder the test keeps a handle on while the engine owns it (as its actuator and its
/// hooks: one sequence of calls, kill and hooks in order).
#[derive(Debug, Clone)]
pub struct SharedRecorder(std::sync::Arc<std::sync::Mutex<RecordingActuator>>);

impl SharedRecorder {
    /// Shares `fake`.
    pub fn new(fake: RecordingActuator) -> Self {
        SharedRecorder(std::sync::Arc::new(std::sync::Mutex::new(fake)))
    }

    /// The fake, to read its calls.
    pub fn lock(&self) -> std::sync::MutexGuard<'_, RecordingActuator> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl From<RecordingActuator> for SharedRecorder {
    fn from(fake: RecordingActuator) -> Self {
        SharedRecorder::new(fake)
    }
}

impl Actuator for SharedRecorder {
    fn open_pidfd(&mut self, pid: u32) -> io::Result<()> {
        self.lock().open_pidfd(pid)
    }

    fn write_cgroup_kill(&mut self, cgroup_dir: &Path) -> io::Result<()> {
        self.lock().write_cgroup_kill(cgroup_dir)
    }

    fn release_memory(&mut self, pid: u32) -> io::Result<()> {
        self.lock().release_memory(pid)
    }

    fn start_memcg_oom(&mut self, cgroup_dir: &Path) -> io::Result<()> {
        self.lock().start_memcg_oom(cgroup_dir)
    }

    fn send_sigterm(&mut self, pid: u32) -> io::Result<()> {
        self.lock().send_sigterm(pid)
    }

    fn close_all(&mut self) {
        self.lock().close_all();
    }

    fn set_stop(&mut self, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) {
        Actuator::set_stop(&mut *self.lock(), stop);
    }

    fn stopping(&self) -> bool {
        self.lock().stopping()
    }
}

impl Hooks for SharedRecorder {
    fn run_hook(&mut self, hook: &HookCall) -> HookResult {
        self.lock().run_hook(hook)
    }

    fn spawn_hook(&mut self, hook: HookCall) {
        self.lock().spawn_hook(hook);
    }
}
