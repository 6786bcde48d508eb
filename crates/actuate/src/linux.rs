//! The real actuator and self-protection.

use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};

use crate::{Actuator, HookCall, HookResult, Hooks};

/// Makes the real system calls.
#[derive(Debug, Default)]
pub struct LinuxActuator {
    pidfds: Vec<(u32, OwnedFd)>,
    /// The daemon's stop flag (see [`Actuator::set_stop`]).
    stop: Arc<AtomicBool>,
}

impl LinuxActuator {
    /// A new actuator with no open pidfds.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Actuator for LinuxActuator {
    fn open_pidfd(&mut self, pid: u32) -> io::Result<()> {
        let raw = i32::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
        let pid = Pid::from_raw(raw).ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
        let fd = pidfd_open(pid, PidfdFlags::empty())?;
        self.pidfds
            .push((pid.as_raw_nonzero().get().unsigned_abs(), fd));
        Ok(())
    }

    fn write_cgroup_kill(&mut self, cgroup_dir: &Path) -> io::Result<()> {
        // Talos writes the single byte "1" without a newline.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(cgroup_dir.join("cgroup.kill"))?;
        file.write_all(b"1")
    }

    fn start_memcg_oom(&mut self, cgroup_dir: &Path) -> io::Result<()> {
        // Swap first: with swap allowed, the reclaim the kernel does before its OOM kill
        // would write the cgroup's memory out to swap, on a node already short of memory.
        match std::fs::OpenOptions::new()
            .write(true)
            .open(cgroup_dir.join("memory.swap.max"))
        {
            Ok(mut swap) => swap.write_all(b"0")?,
            // No swap accounting (no swap, or `swapaccount=0`): nothing to keep from it.
            Err(e) if e.kind() == io::ErrorKind::NotFound && cgroup_dir.is_dir() => {}
            Err(e) => return Err(e),
        }
        let mut max = std::fs::OpenOptions::new()
            .write(true)
            .open(cgroup_dir.join("memory.max"))?;
        let cgroup = cgroup_dir.display().to_string();
        // The write returns once the kernel has reclaimed what it could and OOM-killed until
        // the usage fits, or found nothing left to kill: the caller's verification, bounded
        // by killTimeout, must not wait for it.
        std::thread::Builder::new()
            .name("kernel-oom".into())
            .spawn(move || {
                if let Err(e) = max.write_all(b"0") {
                    tracing::warn!(%cgroup, error = %e, "writing memory.max 0 for the kernel's OOM killer");
                }
            })?;
        Ok(())
    }

    fn send_sigterm(&mut self, pid: u32) -> io::Result<()> {
        let raw = i32::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
        let pid = Pid::from_raw(raw).ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
        let fd = pidfd_open(pid, PidfdFlags::empty())?;
        Ok(pidfd_send_signal(&fd, Signal::TERM)?)
    }

    fn release_memory(&mut self, pid: u32) -> io::Result<()> {
        let Some((_, fd)) = self.pidfds.iter().find(|(p, _)| *p == pid) else {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        };
        process_mrelease(fd)
    }

    fn close_all(&mut self) {
        self.pidfds.clear();
    }

    fn set_stop(&mut self, stop: Arc<AtomicBool>) {
        self.stop = stop;
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

/// Runs hook commands ([`run_command_until`]): the pre-kill hook waited for, the post-kill
/// hook on a thread of its own, each ended with its process group at its timeout or when the
/// daemon stops.
#[derive(Debug, Default)]
pub struct CommandHooks {
    /// The daemon's stop flag (see [`Hooks::set_stop`]).
    stop: Arc<AtomicBool>,
    /// The post-kill hooks running.
    in_flight: Arc<InFlight>,
}

/// The post-kill hooks running: how many, their process groups, how many were skipped.
#[derive(Debug, Default)]
struct InFlight {
    state: std::sync::Mutex<Running>,
    ended: std::sync::Condvar,
}

#[derive(Debug, Default)]
struct Running {
    count: usize,
    groups: Vec<rustix::process::Pid>,
    skipped: u64,
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, Running> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl CommandHooks {
    /// Hooks that run commands.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Hooks for CommandHooks {
    fn run_hook(&mut self, hook: &HookCall) -> HookResult {
        run_command_until(hook, &self.stop)
    }

    fn spawn_hook(&mut self, hook: HookCall) {
        {
            let mut running = self.in_flight.lock();
            if running.count >= crate::MAX_HOOKS_IN_FLIGHT {
                running.skipped += 1;
                tracing::warn!(
                    hook = hook.event.name(),
                    command = hook.argv.first().map_or("", String::as_str),
                    running = running.count,
                    skipped = running.skipped,
                    "hook skipped: {} are running already",
                    crate::MAX_HOOKS_IN_FLIGHT
                );
                return;
            }
            running.count += 1;
        }
        let stop = Arc::clone(&self.stop);
        let in_flight = Arc::clone(&self.in_flight);
        let ended = Arc::clone(&self.in_flight);
        let spawned = std::thread::Builder::new()
            .name("hook".into())
            .spawn(move || {
                let result = run_command_with(&hook, &stop, |group| {
                    let mut running = in_flight.lock();
                    match group {
                        Registration::Started(g) => running.groups.push(g),
                        Registration::Ended(g) => running.groups.retain(|x| *x != g),
                    }
                });
                log_hook(&hook, &result);
                let mut running = ended.lock();
                running.count = running.count.saturating_sub(1);
                ended.ended.notify_all();
            });
        if let Err(e) = spawned {
            self.in_flight.lock().count -= 1;
            tracing::error!(error = %e, "cannot start a thread for the post-kill hook");
        }
    }

    fn set_stop(&mut self, stop: Arc<AtomicBool>) {
        self.stop = stop;
    }

    fn finish(&mut self, within: Duration) {
        self.stop.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + within;
        let mut running = self.in_flight.lock();
        // The threads end their hooks within their next look at the stop flag; ending the
        // groups here too does not wait for that look.
        for group in &running.groups {
            kill_group(Some(*group));
        }
        while running.count > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                tracing::warn!(
                    running = running.count,
                    "hooks still running at the stop; their process groups were sent SIGKILL"
                );
                break;
            }
            running = self
                .in_flight
                .ended
                .wait_timeout(running, left)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    fn skipped(&self) -> u64 {
        self.in_flight.lock().skipped
    }
}

/// A hook's process group as it starts and ends.
#[derive(Debug, Clone, Copy)]
enum Registration {
    Started(rustix::process::Pid),
    Ended(rustix::process::Pid),
}

/// Logs how a hook ended.
pub fn log_hook(hook: &HookCall, result: &HookResult) {
    let command = hook.argv.first().map_or("", String::as_str);
    match result {
        HookResult::Exited(0) => {
            tracing::info!(hook = hook.event.name(), command, "hook succeeded")
        }
        HookResult::Exited(code) => {
            tracing::warn!(hook = hook.event.name(), command, code, "hook failed")
        }
        HookResult::Signaled => {
            tracing::warn!(hook = hook.event.name(), command, "hook ended by a signal")
        }
        HookResult::TimedOut => tracing::warn!(
            hook = hook.event.name(),
            command,
            timeout_ms = hook.timeout.as_millis(),
            "hook timed out and was killed"
        ),
        HookResult::SpawnFailed(error) => {
            tracing::error!(hook = hook.event.name(), command, %error, "cannot run hook")
        }
        HookResult::NotRun => {
            tracing::info!(hook = hook.event.name(), command, "hook not run (replay)")
        }
        HookResult::Stopped => tracing::warn!(
            hook = hook.event.name(),
            command,
            "hook ended: oomwarden is stopping"
        ),
    }
}

/// How often a running hook's wait looks at the stop flag.
const STOP_POLL: Duration = Duration::from_millis(50);

/// Runs `hook.argv` with `hook.env` added, `hook.stdin` on its standard input and its output
/// discarded, waits at most `hook.timeout`, and kills it past that.
pub fn run_command(hook: &HookCall) -> HookResult {
    run_command_until(hook, &AtomicBool::new(false))
}

/// [`run_command`], also ending the hook (and its process group) as soon as `stop` is set.
pub fn run_command_until(hook: &HookCall, stop: &AtomicBool) -> HookResult {
    run_command_with(hook, stop, |_| {})
}

/// [`run_command_until`], telling `register` the hook's process group when it starts and
/// when it has been ended.
fn run_command_with(
    hook: &HookCall,
    stop: &AtomicBool,
    mut register: impl FnMut(Registration),
) -> HookResult {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    use wait_timeout::ChildExt;
    let Some((program, args)) = hook.argv.split_first() else {
        return HookResult::SpawnFailed("empty command".to_owned());
    };
    // Its own process group, so that what it starts (a shell script's children) can be ended
    // with it.
    let mut child = match Command::new(program)
        .args(args)
        .envs(hook.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return HookResult::SpawnFailed(format!("{program}: {e}")),
    };
    let group = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    if let Some(g) = group {
        register(Registration::Started(g));
    }
    // Written from another thread: a hook that never reads a large record would otherwise
    // block this one before its timeout is even armed.
    let writer = child.stdin.take().map(|mut stdin| {
        let data = hook.stdin.clone();
        std::thread::spawn(move || {
            // A hook that does not read its input is fine (EPIPE).
            let _ = stdin.write_all(&data);
        })
    });
    let deadline = Instant::now() + hook.timeout;
    let result = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match child.wait_timeout(left.min(STOP_POLL)) {
            Ok(Some(status)) => {
                break status
                    .code()
                    .map_or(HookResult::Signaled, HookResult::Exited);
            }
            Ok(None) if stop.load(Ordering::SeqCst) || left.is_zero() => {
                kill_group(group);
                let _ = child.kill();
                let _ = child.wait();
                break if stop.load(Ordering::SeqCst) {
                    HookResult::Stopped
                } else {
                    HookResult::TimedOut
                };
            }
            Ok(None) => {}
            Err(e) => break HookResult::SpawnFailed(format!("{program}: {e}")),
        }
    };
    // Whatever it left running ends with it: a hook's children never outlive it (or the
    // daemon).
    kill_group(group);
    if let Some(g) = group {
        register(Registration::Ended(g));
    }
    if let Some(writer) = writer {
        let _ = writer.join();
    }
    result
}

/// SIGKILL to a hook's process group; a group already empty (ESRCH) is the usual case.
fn kill_group(group: Option<rustix::process::Pid>) {
    if let Some(group) = group {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
}

/// `process_mrelease(pidfd, 0)` (Linux 5.15+). rustix has no wrapper, hence the raw syscall.
#[allow(unsafe_code)]
fn process_mrelease(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: the syscall takes an int file descriptor and flags by value; `fd` is an open
    // pidfd owned by the caller for the duration of the call; no memory is passed.
    let ret = unsafe { libc::syscall(libc::SYS_process_mrelease, fd.as_raw_fd(), 0u32) };
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// What [`protect_self`] achieved; each failure is a warning for the caller to log.
#[derive(Debug)]
pub struct SelfProtection {
    /// Setting `oom_score_adj` to -1000.
    pub oom_score_adj: io::Result<()>,
    /// `mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT)`.
    pub mlockall: io::Result<()>,
    /// The open-file limit (soft, hard) after raising the soft one (see [`WANTED_NOFILE`]).
    pub nofile: io::Result<(u64, u64)>,
    /// glibc's malloc held to a small footprint (see `tune_malloc`).
    pub malloc: io::Result<()>,
    /// The functions the daemon runs, locked whole at start (see `lock_hot_text`).
    pub hot_text: HotText,
}

/// What became of the hot text: the functions the daemon runs, which the shipped build puts
/// in one range at the start of its text (scripts/text-order), the kill path included.
#[derive(Debug)]
pub enum HotText {
    /// Locked and read in: this many bytes.
    Locked(usize),
    /// This build did not order its text (a `cargo build`, `OOMWARDEN_TEXT_ORDER=off`): the
    /// markers are this many bytes apart, so there is no range to lock. The code the daemon
    /// runs is locked as it is touched, as all its memory is.
    NotOrdered(isize),
    /// `mlock` refused the range.
    Failed(io::Error),
}

/// The first and last functions of the hot text: scripts/text-order/order-link puts them
/// before and after the functions the daemon runs. Never called (their addresses are taken);
/// their bodies differ so that LLVM cannot merge them into one.
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
#[inline(never)]
pub(crate) extern "C" fn oomwarden_hot_text_start() -> u32 {
    std::hint::black_box(0x686f_7401)
}

/// See [`oomwarden_hot_text_start`].
#[allow(unsafe_code)]
#[unsafe(no_mangle)]
#[inline(never)]
pub(crate) extern "C" fn oomwarden_hot_text_end() -> u32 {
    std::hint::black_box(0x686f_7402)
}

/// The markers of an ordered build are the hot range apart (2.9 MiB on 2026-12-05); an
/// unordered build leaves them side by side. Between these bounds, a range to lock.
const HOT_TEXT_MIN: usize = 64 * 1024;
const HOT_TEXT_MAX: usize = 32 * 1024 * 1024;

/// The page-aligned range between two marker addresses, if they mark an ordered build's hot
/// text; else how far apart they are.
fn hot_text_range(start: usize, end: usize, page: usize) -> Result<(usize, usize), isize> {
    let span = end.wrapping_sub(start);
    if end <= start || !(HOT_TEXT_MIN..=HOT_TEXT_MAX).contains(&span) {
        #[allow(clippy::cast_possible_wrap)] // a wrapped difference reads as the negative span
        return Err(span as isize);
    }
    let first = start - start % page;
    let last = end.div_ceil(page).saturating_mul(page);
    Ok((first, last - first))
}

/// Locks the hot text whole and reads it in now: `MCL_ONFAULT` locks a page of code only
/// once it runs, so the kill path, run first when the node thrashes, would be read from disk
/// then, from a page cache under pressure. Locked now, it costs the quiet daemon the code it
/// does not run yet (about 1.1 MiB, docs/performance.md) and S19 almost nothing.
#[allow(unsafe_code)]
fn lock_hot_text() -> HotText {
    let start = oomwarden_hot_text_start as *const () as usize;
    let end = oomwarden_hot_text_end as *const () as usize;
    match hot_text_range(start, end, rustix::param::page_size()) {
        Err(span) => HotText::NotOrdered(span),
        // SAFETY: the range is this process's own text mapping, between two of its functions
        // rounded out to pages; `mlock` reads the pages in and pins them, changing no byte.
        Ok((addr, len)) => match unsafe { rustix::mm::mlock(addr as *mut std::ffi::c_void, len) } {
            Ok(()) => HotText::Locked(len),
            Err(e) => HotText::Failed(e.into()),
        },
    }
}

/// The largest request glibc's malloc serves from its heap; larger ones are mapped on their
/// own and unmapped when freed (see `tune_malloc`).
const MALLOC_MMAP_THRESHOLD: i32 = 128 * 1024;

/// glibc's malloc, held to a small footprint for a process whose every page is locked:
///
/// - one arena for every thread (`M_ARENA_MAX`): by default each thread that allocates gets
///   an arena of its own (up to eight per core), each keeping free pages of its own; the
///   daemon's threads allocate little and seldom, so one arena is not contended;
/// - fixed mapping and trimming thresholds (`M_MMAP_THRESHOLD`, `M_TRIM_THRESHOLD`, 128 KiB,
///   glibc's starting values): by default freeing a large mapped block raises both, so later
///   large buffers come from the heap and its free top stays; fixed, a large buffer is
///   unmapped when freed and the heap's free top returned (`munmap` and `brk` release locked
///   pages; `madvise` could not).
///
/// Measured with the soak's node on this host (60 s, `scripts/soak`'s load, one static build,
/// the settings given through glibc's environment variables): 15.1 MiB peak as before, 14.5 MiB
/// with one arena, 13.7 MiB (12.7 MiB at the end) with the thresholds too. They apply to what is allocated after them: call it before starting threads.
/// Elsewhere than glibc, nothing to do.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn tune_malloc() -> io::Result<()> {
    for (param, value, name) in [
        (libc::M_ARENA_MAX, 1, "M_ARENA_MAX"),
        (
            libc::M_MMAP_THRESHOLD,
            MALLOC_MMAP_THRESHOLD,
            "M_MMAP_THRESHOLD",
        ),
        (
            libc::M_TRIM_THRESHOLD,
            MALLOC_MMAP_THRESHOLD,
            "M_TRIM_THRESHOLD",
        ),
    ] {
        // SAFETY: `mallopt` takes two ints by value and changes only the allocator's own
        // parameters; no memory is passed.
        let done = unsafe { libc::mallopt(param, value) };
        if done != 1 {
            return Err(io::Error::other(format!(
                "mallopt({name}, {value}) was refused"
            )));
        }
    }
    Ok(())
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_malloc() -> io::Result<()> {
    Ok(())
}

/// The open-file soft limit oomwarden raises itself to (within the hard limit): a kill opens
/// a pidfd per process of the victim. A pod spec cannot set limits, and container runtimes
/// often give a soft limit of 1,024; the systemd unit sets `LimitNOFILE=65536` too.
pub const WANTED_NOFILE: u64 = 65_536;

/// Raises the soft open-file limit to [`WANTED_NOFILE`] (or the hard limit, if lower).
fn raise_nofile() -> io::Result<(u64, u64)> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let now = getrlimit(Resource::Nofile);
    let hard = now.maximum;
    let soft = now.current.unwrap_or(u64::MAX);
    let wanted = hard.map_or(WANTED_NOFILE, |h| h.min(WANTED_NOFILE));
    if soft >= wanted {
        return Ok((soft, hard.unwrap_or(u64::MAX)));
    }
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(wanted),
            maximum: hard,
        },
    )?;
    Ok((wanted, hard.unwrap_or(u64::MAX)))
}

/// Makes this process the kernel OOM killer's last choice and keeps its pages in memory, so
/// that it keeps running when the node is thrashing. `MCL_ONFAULT` locks pages only once they
/// are touched, so reserved-but-unused memory (thread stacks) is not pinned, and malloc is
/// held to a small footprint (`tune_malloc`; call this before starting threads). This always
/// acts on the real `/proc/self`: `--proc-root` describes the node inspected, not this process.
pub fn protect_self() -> SelfProtection {
    let malloc = tune_malloc();
    let oom_score_adj = std::fs::write("/proc/self/oom_score_adj", "-1000");
    let mlockall = rustix::mm::mlockall(
        rustix::mm::MlockAllFlags::CURRENT
            | rustix::mm::MlockAllFlags::FUTURE
            | rustix::mm::MlockAllFlags::ONFAULT,
    )
    .map_err(io::Error::from);
    SelfProtection {
        oom_score_adj,
        mlockall,
        nofile: raise_nofile(),
        malloc,
        hot_text: lock_hot_text(),
    }
}

#[cfg(test)]
mod tests {
    use super::{HOT_TEXT_MAX, HOT_TEXT_MIN, hot_text_range};

    #[test]
    fn the_hot_text_is_the_range_between_the_markers_rounded_out_to_pages() {
        let page = 4096;
        // An ordered build: 2.9 MiB apart, neither on a page boundary.
        assert_eq!(
            hot_text_range(0x10_0010, 0x10_0010 + 2_970_000, page),
            Ok((0x10_0000, 2_973_696))
        );
        // The bounds themselves.
        assert!(hot_text_range(0x10_0000, 0x10_0000 + HOT_TEXT_MIN, page).is_ok());
        assert!(hot_text_range(0x10_0000, 0x10_0000 + HOT_TEXT_MAX, page).is_ok());
    }

    #[test]
    fn an_unordered_build_has_no_hot_text() {
        let page = 4096;
        // Side by side, as a build without the ordering leaves them.
        assert_eq!(hot_text_range(0x10_0000, 0x10_0010, page), Err(16));
        // In the wrong order, the same place, too far apart: never a range.
        assert_eq!(hot_text_range(0x10_0010, 0x10_0000, page), Err(-16));
        assert_eq!(hot_text_range(0x10_0000, 0x10_0000, page), Err(0));
        assert!(hot_text_range(0x10_0000, 0x10_0000 + HOT_TEXT_MIN - 1, page).is_err());
        assert!(hot_text_range(0x10_0000, 0x10_0000 + HOT_TEXT_MAX + 1, page).is_err());
        assert!(hot_text_range(usize::MAX - 10, 0, page).is_err());
    }

    /// A test binary is not ordered: the markers exist, nothing is locked, nothing fails.
    #[test]
    fn a_test_build_locks_no_hot_text() {
        assert!(matches!(
            super::lock_hot_text(),
            super::HotText::NotOrdered(_)
        ));
        assert_ne!(
            super::oomwarden_hot_text_start(),
            super::oomwarden_hot_text_end()
        );
    }

    /// glibc takes the settings (process-wide parameters: harmless in a test).
    #[test]
    fn malloc_settings_are_taken() {
        assert!(super::tune_malloc().is_ok());
        // And again: a second call is no error.
        assert!(super::tune_malloc().is_ok());
    }
}
