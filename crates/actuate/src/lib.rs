//! The one crate that changes system state.
//!
//! [`kill_cgroup`] runs the kill sequence of the Talos controller, then verifies it:
//!
//! ```text
//! list PIDs of the subtree ─▶ read their cmdlines ─▶ pidfd_open each
//!    ─▶ write "1" to cgroup.kill ─▶ process_mrelease each pidfd (ESRCH is silent)
//!    ─▶ wait (bounded) until cgroup.events says populated 0, or the cgroup is gone
//! ```
//!
//! The three system calls that act go through the [`Actuator`] trait: [`LinuxActuator`] makes
//! them; hook commands go through [`Hooks`]: [`CommandHooks`] runs them. A recording fake of
//! both, for tests, is the `oomwarden-actuate-fake` crate (a dev-dependency only).
//! Reading PIDs, command lines and `cgroup.events` uses the ordinary readers, so the same
//! sequence runs against a fixture tree. [`protect_self`] sets this process's
//! `oom_score_adj` to -1000 and locks its memory.

mod clock;
mod linux;

use oomwarden_model::{
    KillMethod, MAX_PIDS_LISTED, MAX_PROCESSES_LISTED, MAX_RECORD_CMDLINE_BYTES,
};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use oomwarden_cgroupfs::{CgroupFs, join};
use oomwarden_procfs::ProcFs;

pub use clock::{Clock, SystemClock, VirtualClock};
pub use linux::{
    CommandHooks, HotText, LinuxActuator, SelfProtection, WANTED_NOFILE, log_hook, protect_self,
    run_command, run_command_until,
};

/// The system calls that act on processes and cgroups.
pub trait Actuator {
    /// `pidfd_open(pid)`; the actuator keeps the descriptor until [`Actuator::close_all`].
    fn open_pidfd(&mut self, pid: u32) -> io::Result<()>;
    /// Writes `1` to `<dir>/cgroup.kill`: SIGKILL to every process of the subtree.
    fn write_cgroup_kill(&mut self, cgroup_dir: &Path) -> io::Result<()>;
    /// `process_mrelease` on the pidfd opened for `pid`: reclaim its memory now.
    fn release_memory(&mut self, pid: u32) -> io::Result<()>;
    /// Asks the kernel's memcg OOM killer to end the processes of `<dir>`: its
    /// `memory.swap.max` set to 0 (when the file is there), then its `memory.max` set to 0 from
    /// a thread of its own (that write returns only once the kernel has reclaimed what it can
    /// and OOM-killed). Returns once the write is under way; an error when a file cannot be
    /// opened or the swap limit not written.
    fn start_memcg_oom(&mut self, cgroup_dir: &Path) -> io::Result<()>;
    /// SIGTERM to `pid` (through a pidfd: a PID reused meanwhile is not signalled).
    fn send_sigterm(&mut self, pid: u32) -> io::Result<()>;
    /// Closes every pidfd.
    fn close_all(&mut self);
    /// Hands over the daemon's stop flag: once it is set, a kill's verification waits at most
    /// [`STOPPING_GRACE`] more.
    fn set_stop(&mut self, _stop: Arc<AtomicBool>) {}
    /// Whether the daemon is stopping (the flag given to [`Actuator::set_stop`]).
    fn stopping(&self) -> bool {
        false
    }
}

/// Running hook commands (a trait apart from the kill's system calls: a replay runs none,
/// tests record them).
pub trait Hooks {
    /// Runs a hook command and waits for it, at most `hook.timeout` (then kills it).
    fn run_hook(&mut self, hook: &HookCall) -> HookResult;
    /// Starts a hook command without waiting; its result is logged when it ends.
    fn spawn_hook(&mut self, hook: HookCall);
    /// Hands over the daemon's stop flag: once it is set, hooks running now or started later
    /// are ended at once ([`HookResult::Stopped`]).
    fn set_stop(&mut self, _stop: Arc<AtomicBool>) {}
    /// Ends every hook still running (each one's process group) and waits for them, at most
    /// `within`: called as the daemon stops, so no hook outlives it.
    fn finish(&mut self, _within: Duration) {}
    /// Post-kill hooks skipped so far because [`MAX_HOOKS_IN_FLIGHT`] were running.
    fn skipped(&self) -> u64 {
        0
    }
}

/// At most this many post-kill hooks run at once; one started beyond is skipped (logged and
/// counted): a hook slower than the kills come must not pile up processes until the daemon
/// runs out of descriptors.
pub const MAX_HOOKS_IN_FLIGHT: usize = 32;

/// How much longer a kill's verification waits once the daemon is stopping (SIGTERM is
/// honoured within a second).
pub const STOPPING_GRACE: Duration = Duration::from_millis(300);

/// The two hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// Before the kill (waited for, at most its timeout).
    PreKill,
    /// After the kill (not waited for), with the record on its standard input.
    PostKill,
}

impl HookEvent {
    /// `pre-kill` or `post-kill`, as logs and `OOMWARDEN_EVENT` say.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::PreKill => "pre-kill",
            HookEvent::PostKill => "post-kill",
        }
    }
}

/// A hook command to run: argv, environment, standard input, time limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookCall {
    /// Which hook (logs, `OOMWARDEN_EVENT`).
    pub event: HookEvent,
    /// The command and its arguments (no shell).
    pub argv: Vec<String>,
    /// Variables added to oomwarden's environment.
    pub env: Vec<(String, String)>,
    /// Written to its standard input, then closed.
    pub stdin: Vec<u8>,
    /// How long it may run.
    pub timeout: Duration,
}

/// How a hook ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookResult {
    /// It exited with this status.
    Exited(i32),
    /// A signal ended it.
    Signaled,
    /// It ran past its timeout and was killed.
    TimedOut,
    /// It could not be started.
    SpawnFailed(String),
    /// It was deliberately not run (a replay acts on nothing).
    NotRun,
    /// It was ended (with its process group) because the daemon is stopping.
    Stopped,
}

/// What acting on the victim came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActOutcome {
    /// `cgroup.kill` was written and the cgroup was empty (or gone) within the timeout.
    Killed,
    /// `cgroup.kill` was written (or the kernel's OOM killer asked) but processes remained at
    /// the timeout (or, when `stopping`, when the daemon's stop cut the wait short).
    NotVerified {
        /// The daemon was stopping: the wait ended after [`STOPPING_GRACE`].
        stopping: bool,
    },
    /// Writing `cgroup.kill` (or a memory limit, for the kernel's OOM killer) failed.
    Failed {
        /// The OS error number, when there is one (`EACCES`, `EROFS`, …).
        errno: Option<i32>,
        /// The file written.
        path: PathBuf,
        /// The error as people read it (what the record's `error` says).
        message: String,
    },
    /// Nothing was killed: the cgroup ranked was gone, or another had taken its path (its id
    /// differs), when the kill was due. Says which.
    Gone(GoneReason),
    /// A dry run: nothing was done; the processes are those a kill would have hit.
    DryRun,
}

/// Why nothing was killed although a victim was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GoneReason {
    /// The cgroup was removed between the ranking and the kill.
    #[error("the cgroup is gone since it was ranked")]
    Removed,
    /// The cgroup was removed as `cgroup.kill` was written (`ENOENT`, `ENODEV`).
    #[error("the cgroup vanished as cgroup.kill was written: {}", io::Error::from_raw_os_error(*errno))]
    VanishedAtKill {
        /// The error number of the write.
        errno: i32,
    },
    /// Another cgroup has its path (a restarted unit, a new pod sandbox).
    #[error(
        "another cgroup has taken its path since it was ranked (cgroup id {now}, ranked {ranked})"
    )]
    Replaced {
        /// The id of the cgroup at the path now.
        now: u64,
        /// The id of the cgroup ranked.
        ranked: u64,
    },
}

/// What acting on the victim did.
#[derive(Debug, Clone, PartialEq)]
pub struct ActReport {
    /// PIDs found in the subtree before the kill.
    pub pids: Vec<u32>,
    /// Their command lines (a process that exited before it was read is absent), for the
    /// first [`MAX_PROCESSES_LISTED`] PIDs only.
    pub processes: Vec<String>,
    /// PIDs whose command lines were not read (beyond the first [`MAX_PROCESSES_LISTED`]).
    pub processes_omitted: u64,
    /// The outcome.
    pub outcome: ActOutcome,
    /// From writing `cgroup.kill` to the verdict; none when nothing was written (a dry run,
    /// a cgroup gone).
    pub duration: Option<Duration>,
    /// The verification's time limit.
    pub timeout: Duration,
    /// With [`KillMethod::KernelOom`]: the kernel's OOM killer did not empty a cgroup within
    /// the timeout, and `cgroup.kill` was written to finish it.
    pub fallback: bool,
    /// The walk for the victim's PIDs stopped at its bound ([`MAX_WALKED_CGROUPS`] cgroups,
    /// [`MAX_WALK_DEPTH`] levels): `pids` holds those of the cgroups walked; `cgroup.kill` ended
    /// every process all the same.
    pub walk_truncated: bool,
}

impl ActReport {
    /// The error a record states for this outcome (none for a kill or a dry run).
    pub fn error(&self) -> Option<String> {
        match &self.outcome {
            ActOutcome::Killed | ActOutcome::DryRun => None,
            ActOutcome::NotVerified { stopping: true } => Some(format!(
                "oomwarden was stopping: processes still remained in the cgroup after {} ms",
                self.duration.unwrap_or_default().as_millis()
            )),
            ActOutcome::NotVerified { stopping: false } => Some(format!(
                "processes remain in the cgroup after {}ms",
                self.timeout.as_millis()
            )),
            ActOutcome::Failed { message, .. } => Some(message.clone()),
            ActOutcome::Gone(reason) => Some(reason.to_string()),
        }
    }
}

/// A cgroup below the victim's to kill instead of the whole (a container of a pod).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The cgroup, relative to the hierarchy's root.
    pub dir: String,
    /// Its id when it was chosen.
    pub cgroup_id: Option<u64>,
}

/// What to do to the victim chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct Order<'a> {
    /// The cgroup, relative to the hierarchy's root.
    pub dir: &'a str,
    /// Its id when it was ranked (see [`kill_cgroup`]).
    pub cgroup_id: Option<u64>,
    /// Kill these cgroups below `dir` (one after the other, within the one timeout) instead
    /// of `dir` as a whole; empty: the whole of `dir`.
    pub parts: Vec<Part>,
    /// List what a kill would hit, and do nothing.
    pub dry_run: bool,
    /// How long the verification of a kill waits.
    pub timeout: Duration,
    /// `cgroup.kill`, or the kernel's OOM killer in each part (or the whole).
    pub method: KillMethod,
    /// The pre-kill hook, run and waited for before anything else (also in a dry run).
    pub pre_kill: Option<HookCall>,
}

/// Acts on the victim: runs the pre-kill hook (the kill goes ahead whatever it returns),
/// then kills and verifies ([`kill_cgroup`]), or in a dry run lists what would be killed.
/// Says the outcome in the log.
pub fn act(
    actuator: &mut dyn Actuator,
    hooks: &mut dyn Hooks,
    clock: &dyn Clock,
    cgroups: &CgroupFs,
    proc: &ProcFs,
    order: &Order<'_>,
) -> ActReport {
    if let Some(call) = &order.pre_kill {
        let result = hooks.run_hook(call);
        log_hook(call, &result);
    }
    let node_path = oomwarden_cgroupfs::node_path(order.dir);
    if order.dry_run {
        let (pids, walk_truncated) = walk_victim(cgroups, order.dir);
        let (processes, processes_omitted) = command_lines(proc, &pids);
        return ActReport {
            pids,
            processes,
            processes_omitted,
            outcome: ActOutcome::DryRun,
            duration: None,
            timeout: order.timeout,
            fallback: false,
            walk_truncated,
        };
    }
    let report = match order.method {
        KillMethod::Cgroup if order.parts.is_empty() => kill_cgroup(
            actuator,
            clock,
            cgroups,
            proc,
            order.dir,
            order.cgroup_id,
            order.timeout,
        ),
        KillMethod::Cgroup => kill_parts(actuator, clock, cgroups, proc, order, kill_cgroup),
        KillMethod::KernelOom if order.parts.is_empty() => {
            let whole = Order {
                parts: vec![Part {
                    dir: order.dir.to_owned(),
                    cgroup_id: order.cgroup_id,
                }],
                ..order.clone()
            };
            kill_parts(actuator, clock, cgroups, proc, &whole, kernel_oom_kill)
        }
        KillMethod::KernelOom => kill_parts(actuator, clock, cgroups, proc, order, kernel_oom_kill),
    };
    let duration_ms = report.duration.map(millis).unwrap_or_default();
    match &report.outcome {
        ActOutcome::Killed => {
            tracing::info!(cgroup = %node_path, duration_ms, "cgroup killed and verified empty");
        }
        ActOutcome::NotVerified { .. } => {
            let error = report.error().unwrap_or_default();
            tracing::error!(cgroup = %node_path, %error, "kill not verified");
        }
        ActOutcome::Failed {
            errno,
            path,
            message,
        } => tracing::error!(
            cgroup = %node_path,
            error = %message,
            errno = errno.unwrap_or(0),
            file = %path.display(),
            "cannot reap cgroup"
        ),
        ActOutcome::Gone(reason) => {
            tracing::warn!(cgroup = %node_path, %reason, "the cgroup ranked is gone; nothing was killed");
        }
        ActOutcome::DryRun => {}
    }
    report
}

/// How one cgroup is killed and verified ([`kill_cgroup`], [`kernel_oom_kill`]).
type KillOne =
    fn(&mut dyn Actuator, &dyn Clock, &CgroupFs, &ProcFs, &str, Option<u64>, Duration) -> ActReport;

/// Kills each part of the order with `kill`, after checking the victim is still the cgroup
/// ranked; each part gets what is left of the timeout. One report for all.
fn kill_parts(
    actuator: &mut dyn Actuator,
    clock: &dyn Clock,
    cgroups: &CgroupFs,
    proc: &ProcFs,
    order: &Order<'_>,
    kill: KillOne,
) -> ActReport {
    if let Err(reason) = same_cgroup(cgroups, order.dir, order.cgroup_id) {
        return gone(reason, order.timeout);
    }
    let started = clock.now();
    let reports: Vec<ActReport> = order
        .parts
        .iter()
        .map(|part| {
            let spent = clock.now().saturating_duration_since(started);
            let left = order.timeout.saturating_sub(spent);
            kill(
                actuator,
                clock,
                cgroups,
                proc,
                &part.dir,
                part.cgroup_id,
                left,
            )
        })
        .collect();
    combine(reports, order.timeout)
}

/// The reports of several kills as one: all PIDs; the command lines up to the record's
/// bound; the worst outcome (a failure, then processes left, then killed; gone only when
/// every part was); the time they took together.
fn combine(reports: Vec<ActReport>, timeout: Duration) -> ActReport {
    let mut all = ActReport {
        pids: Vec::new(),
        processes: Vec::new(),
        processes_omitted: 0,
        outcome: ActOutcome::Killed,
        duration: None,
        timeout,
        fallback: false,
        walk_truncated: false,
    };
    let (mut failed, mut not_verified, mut gone_reason, mut any_acted) = (None, None, None, false);
    for r in reports {
        all.pids.extend(r.pids);
        for p in r.processes {
            if all.processes.len() < MAX_PROCESSES_LISTED {
                all.processes.push(p);
            } else {
                all.processes_omitted += 1;
            }
        }
        all.processes_omitted += r.processes_omitted;
        all.fallback |= r.fallback;
        all.walk_truncated |= r.walk_truncated;
        if let Some(d) = r.duration {
            all.duration = Some(all.duration.unwrap_or_default() + d);
        }
        match r.outcome {
            o @ ActOutcome::Failed { .. } => {
                failed.get_or_insert(o);
                any_acted = true;
            }
            ActOutcome::NotVerified { stopping } => {
                let seen = not_verified.get_or_insert(false);
                *seen |= stopping;
                any_acted = true;
            }
            ActOutcome::Gone(reason) => {
                gone_reason.get_or_insert(reason);
            }
            ActOutcome::Killed | ActOutcome::DryRun => any_acted = true,
        }
    }
    all.outcome = match (failed, not_verified, gone_reason) {
        (Some(f), _, _) => f,
        (None, Some(stopping), _) => ActOutcome::NotVerified { stopping },
        (None, None, Some(reason)) if !any_acted => ActOutcome::Gone(reason),
        _ => ActOutcome::Killed,
    };
    all
}

/// SIGTERM to every process of the order's parts (its containers; the whole cgroup when it
/// has none), as the kubelet stops a container: the processes may exit cleanly, and whoever
/// asked checks later whether they did. Nothing is waited for. A process already gone is
/// normal; the victim gone or replaced since it was ranked is [`ActOutcome::Gone`]; else the
/// report's outcome is [`ActOutcome::Killed`] in the sense of "done" (the signals sent), with
/// the processes signalled. A dry run signals nothing.
pub fn terminate(
    actuator: &mut dyn Actuator,
    cgroups: &CgroupFs,
    proc: &ProcFs,
    order: &Order<'_>,
) -> ActReport {
    if let Err(reason) = same_cgroup(cgroups, order.dir, order.cgroup_id) {
        return gone(reason, order.timeout);
    }
    let dirs: Vec<&str> = if order.parts.is_empty() {
        vec![order.dir]
    } else {
        order.parts.iter().map(|p| p.dir.as_str()).collect()
    };
    let (mut pids, mut walk_truncated) = (Vec::new(), false);
    for dir in &dirs {
        tracing::warn!(cgroup = %oomwarden_cgroupfs::node_path(dir), dry_run = order.dry_run, "Sending SIGTERM to cgroup");
        let (found, truncated) = walk_victim(cgroups, dir);
        pids.extend(found);
        walk_truncated |= truncated;
    }
    let (processes, processes_omitted) = command_lines(proc, &pids);
    if !order.dry_run {
        for &pid in &pids {
            match actuator.send_sigterm(pid) {
                Ok(()) => {}
                Err(e)
                    if e.raw_os_error() == Some(libc::ESRCH)
                        || e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => tracing::error!(pid, error = %e, "failed to send SIGTERM"),
            }
        }
    }
    ActReport {
        pids,
        processes,
        processes_omitted,
        outcome: if order.dry_run {
            ActOutcome::DryRun
        } else {
            ActOutcome::Killed
        },
        duration: None,
        timeout: order.timeout,
        fallback: false,
        walk_truncated,
    }
}

/// Whether every cgroup of the order (its parts, or the whole) is empty or gone.
pub fn order_empty(cgroups: &CgroupFs, order_dir: &str, parts: &[Part]) -> bool {
    let dirs: Vec<&str> = if parts.is_empty() {
        vec![order_dir]
    } else {
        parts.iter().map(|p| p.dir.as_str()).collect()
    };
    dirs.into_iter().all(|dir| match cgroups.is_populated(dir) {
        Ok(populated) => !populated,
        Err(e) => e.is_not_found(),
    })
}

/// Milliseconds with microsecond precision, as records state durations.
pub fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// How often the verification polls `cgroup.events`.
const VERIFY_POLL: Duration = Duration::from_millis(5);

/// At most this many cgroups are walked for a victim's PIDs: a pod may create tens of
/// thousands of cgroups of its own (Kubernetes 1.37's writable cgroups, KEP-5474), and the walk
/// runs before `cgroup.kill`, which ends every process below whatever was walked.
pub const MAX_WALKED_CGROUPS: usize = 4096;

/// At most this many levels below the victim are walked for its PIDs.
pub const MAX_WALK_DEPTH: usize = 64;

/// PIDs of a cgroup and its descendants: depth-first, pre-order, children sorted by name,
/// each directory's `cgroup.procs` in file order (Talos's walk), within the walk's bounds
/// ([`subtree_pids_bounded`]). Directories that vanish during the walk are skipped.
pub fn subtree_pids(cgroups: &CgroupFs, dir: &str) -> Vec<u32> {
    subtree_pids_bounded(cgroups, dir).0
}

/// [`subtree_pids`], and whether the walk stopped at a bound: [`MAX_WALKED_CGROUPS`] cgroups
/// read, or a cgroup [`MAX_WALK_DEPTH`] levels down whose children were not walked.
pub fn subtree_pids_bounded(cgroups: &CgroupFs, dir: &str) -> (Vec<u32>, bool) {
    let mut pids = Vec::new();
    let mut stack = vec![(dir.to_owned(), 0_usize)];
    let (mut walked, mut truncated) = (0_usize, false);
    while let Some((current, depth)) = stack.pop() {
        if walked == MAX_WALKED_CGROUPS {
            truncated = true;
            break;
        }
        walked += 1;
        match cgroups.cgroup_procs(&current) {
            Ok(p) => pids.extend(p),
            // The children are still walked: only a vanished directory ends this branch.
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                tracing::warn!(cgroup = %e.path().display(), error = %e, "cannot list cgroup processes")
            }
        }
        if let Ok(children) = cgroups.children(&current) {
            if depth == MAX_WALK_DEPTH {
                truncated |= !children.is_empty();
                continue;
            }
            // Reverse so that the smallest name is popped first.
            stack.extend(
                children
                    .iter()
                    .rev()
                    .map(|c| (join(&current, c), depth + 1)),
            );
        }
    }
    (pids, truncated)
}

/// The command lines of the first [`MAX_PROCESSES_LISTED`] PIDs (a process already gone is
/// left out), stopping once [`MAX_RECORD_CMDLINE_BYTES`] are listed, and how many PIDs were
/// not read.
pub fn command_lines(proc: &ProcFs, pids: &[u32]) -> (Vec<String>, u64) {
    let mut processes = Vec::new();
    let mut bytes = 0;
    let mut read = 0;
    for pid in pids.iter().take(MAX_PROCESSES_LISTED) {
        if bytes >= MAX_RECORD_CMDLINE_BYTES {
            break;
        }
        read += 1;
        if let Ok(cmdline) = proc.cmdline(*pid) {
            bytes += cmdline.len();
            processes.push(cmdline);
        }
    }
    let omitted = u64::try_from(pids.len() - read).unwrap_or(u64::MAX);
    (processes, omitted)
}

/// Whether `dir` is still the cgroup ranked: present, and with the id it had then (when that
/// was read). `Err` says what happened to it.
fn same_cgroup(cgroups: &CgroupFs, dir: &str, cgroup_id: Option<u64>) -> Result<(), GoneReason> {
    match (cgroups.cgroup_id(dir), cgroup_id) {
        (Ok(now), Some(ranked)) if now != ranked => Err(GoneReason::Replaced { now, ranked }),
        (Ok(_), _) => Ok(()),
        (Err(e), _) if e.is_not_found() => Err(GoneReason::Removed),
        // Unknown: the write below will tell.
        (Err(_), _) => Ok(()),
    }
}

/// A kill that did nothing because the cgroup is not the one ranked.
fn gone(reason: GoneReason, timeout: Duration) -> ActReport {
    ActReport {
        pids: Vec::new(),
        processes: Vec::new(),
        processes_omitted: 0,
        outcome: ActOutcome::Gone(reason),
        duration: None,
        timeout,
        fallback: false,
        walk_truncated: false,
    }
}

/// Opens a pidfd for each PID (for `process_mrelease` after the kill), stopping at the first
/// EMFILE or ENFILE.
fn open_pidfds(actuator: &mut dyn Actuator, pids: &[u32]) {
    for (opened, &pid) in pids.iter().enumerate() {
        // Logged on every failure, a process already gone (ESRCH) included, as Talos does.
        if let Err(e) = actuator.open_pidfd(pid) {
            if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) {
                // Once, not once per PID: the kill itself needs no descriptor.
                tracing::error!(
                    opened,
                    processes = pids.len(),
                    error = %e,
                    "out of file descriptors for pidfds; the other processes are killed without process_mrelease"
                );
                break;
            }
            tracing::error!(pid, error = %e, "failed to open pidfd");
        }
    }
}

/// Waits until the cgroup is empty or gone, or `deadline` (earlier once the daemon stops).
fn verify(
    actuator: &dyn Actuator,
    clock: &dyn Clock,
    cgroups: &CgroupFs,
    dir: &str,
    mut deadline: std::time::Instant,
) -> ActOutcome {
    let mut stop_seen = false;
    loop {
        match cgroups.is_populated(dir) {
            Ok(false) => break ActOutcome::Killed,
            Ok(true) => {}
            Err(e) => {
                let cgroup = oomwarden_cgroupfs::node_path(dir);
                tracing::warn!(%cgroup, error = %e, "cannot read cgroup.events while verifying");
            }
        }
        if !stop_seen && actuator.stopping() {
            stop_seen = true;
            deadline = deadline.min(clock.now() + STOPPING_GRACE);
        }
        if clock.now() >= deadline {
            break ActOutcome::NotVerified {
                stopping: stop_seen,
            };
        }
        clock.sleep(VERIFY_POLL);
    }
}

/// Kills the whole cgroup `dir` (relative to `cgroups`) and verifies it, waiting at most
/// `timeout` as `clock` tells it. Logs with Talos's messages.
///
/// `cgroup_id` is the cgroup's id when it was ranked: the kill is refused ([`ActOutcome::Gone`])
/// when the cgroup at `dir` has another, or none, before its processes are listed and again
/// just before `cgroup.kill` is written (a pre-kill hook may run for a minute in between,
/// and a restarted unit or a new pod sandbox takes the same path).
pub fn kill_cgroup(
    actuator: &mut dyn Actuator,
    clock: &dyn Clock,
    cgroups: &CgroupFs,
    proc: &ProcFs,
    dir: &str,
    cgroup_id: Option<u64>,
    timeout: Duration,
) -> ActReport {
    let path = cgroups.dir(dir);
    let node_path = oomwarden_cgroupfs::node_path(dir);
    if let Err(reason) = same_cgroup(cgroups, dir, cgroup_id) {
        return gone(reason, timeout);
    }
    tracing::warn!(cgroup = %node_path, "Sending SIGKILL to cgroup");
    let Victim {
        pids,
        processes,
        processes_omitted,
        walk_truncated,
    } = victim_processes(cgroups, proc, dir);
    open_pidfds(actuator, &pids);
    if let Err(reason) = same_cgroup(cgroups, dir, cgroup_id) {
        actuator.close_all();
        return gone(reason, timeout);
    }
    let started = clock.now();
    if let Err(e) = actuator.write_cgroup_kill(&path) {
        if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENODEV) {
            actuator.close_all();
            let errno = e.raw_os_error().unwrap_or(libc::ENOENT);
            return gone(GoneReason::VanishedAtKill { errno }, timeout);
        }
        tracing::error!(cgroup = %node_path, error = %e, "failed to send SIGKILL");
        actuator.close_all();
        return ActReport {
            pids,
            processes,
            processes_omitted,
            outcome: ActOutcome::Failed {
                errno: e.raw_os_error(),
                path: path.join("cgroup.kill"),
                message: e.to_string(),
            },
            duration: Some(clock.now().saturating_duration_since(started)),
            timeout,
            fallback: false,
            walk_truncated,
        };
    }
    for &pid in &pids {
        match actuator.release_memory(pid) {
            Ok(()) => {}
            Err(e)
                if e.raw_os_error() == Some(libc::ESRCH) || e.kind() == io::ErrorKind::NotFound => {
            }
            Err(e) => tracing::error!(
                errno = e.raw_os_error().unwrap_or(0),
                pid,
                "failed to call mrelease"
            ),
        }
    }
    actuator.close_all();
    let outcome = verify(actuator, clock, cgroups, dir, started + timeout);
    ActReport {
        pids,
        processes,
        processes_omitted,
        outcome,
        duration: Some(clock.now().saturating_duration_since(started)),
        timeout,
        fallback: false,
        walk_truncated,
    }
}

/// The processes of `dir`, said in the log as Talos says them: their PIDs, the command lines
/// of the first ones, and how many were not read.
fn victim_processes(cgroups: &CgroupFs, proc: &ProcFs, dir: &str) -> Victim {
    let (pids, walk_truncated) = walk_victim(cgroups, dir);
    // The log line lists what the record lists (a cgroup may hold millions of PIDs).
    let listed = pids
        .get(..MAX_PIDS_LISTED.min(pids.len()))
        .unwrap_or_default();
    if listed.len() == pids.len() {
        tracing::info!(processes = ?listed, "victim processes:");
    } else {
        tracing::info!(processes = ?listed, total = pids.len(), "victim processes:");
    }
    let (processes, processes_omitted) = command_lines(proc, &pids);
    Victim {
        pids,
        processes,
        processes_omitted,
        walk_truncated,
    }
}

/// A victim's processes as found before the kill.
struct Victim {
    pids: Vec<u32>,
    processes: Vec<String>,
    processes_omitted: u64,
    walk_truncated: bool,
}

/// The victim's PIDs within the walk's bounds; a walk that stopped at one is said in the log
/// (the kill still ends every process: `cgroup.kill` takes the whole subtree).
fn walk_victim(cgroups: &CgroupFs, dir: &str) -> (Vec<u32>, bool) {
    let (pids, truncated) = subtree_pids_bounded(cgroups, dir);
    if truncated {
        tracing::warn!(
            cgroup = %oomwarden_cgroupfs::node_path(dir),
            walked = MAX_WALKED_CGROUPS,
            depth = MAX_WALK_DEPTH,
            "the victim holds more cgroups than are walked for its PIDs; those walked are listed and given pidfds, cgroup.kill ends every process below it all the same"
        );
    }
    (pids, truncated)
}

/// Has the kernel's memcg OOM killer end the processes of `dir` (relative to `cgroups`)
/// ([`Actuator::start_memcg_oom`]), so the runtime reports each container `OOMKilled`, and
/// verifies it as [`kill_cgroup`] does. A cgroup not empty within `timeout` is finished with
/// [`kill_cgroup`] (given `timeout` again), and the report says so (`fallback`). The same
/// checks that the cgroup is the one ranked.
pub fn kernel_oom_kill(
    actuator: &mut dyn Actuator,
    clock: &dyn Clock,
    cgroups: &CgroupFs,
    proc: &ProcFs,
    dir: &str,
    cgroup_id: Option<u64>,
    timeout: Duration,
) -> ActReport {
    let path = cgroups.dir(dir);
    let node_path = oomwarden_cgroupfs::node_path(dir);
    if let Err(reason) = same_cgroup(cgroups, dir, cgroup_id) {
        return gone(reason, timeout);
    }
    tracing::warn!(cgroup = %node_path, "Asking the kernel's OOM killer to end cgroup (memory.max 0)");
    let Victim {
        pids,
        processes,
        processes_omitted,
        walk_truncated,
    } = victim_processes(cgroups, proc, dir);
    if let Err(reason) = same_cgroup(cgroups, dir, cgroup_id) {
        return gone(reason, timeout);
    }
    let started = clock.now();
    if let Err(e) = actuator.start_memcg_oom(&path) {
        if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENODEV) {
            let errno = e.raw_os_error().unwrap_or(libc::ENOENT);
            return gone(GoneReason::VanishedAtKill { errno }, timeout);
        }
        tracing::error!(cgroup = %node_path, error = %e, "cannot lower the cgroup's memory limits; killing it with cgroup.kill");
        let mut report = kill_cgroup(actuator, clock, cgroups, proc, dir, cgroup_id, timeout);
        report.fallback = true;
        return report;
    }
    match verify(actuator, clock, cgroups, dir, started + timeout) {
        ActOutcome::NotVerified { .. } => {
            tracing::warn!(cgroup = %node_path, timeout_ms = timeout.as_millis(), "the kernel's OOM killer did not empty the cgroup in time; finishing with cgroup.kill");
            let mut finish = kill_cgroup(actuator, clock, cgroups, proc, dir, cgroup_id, timeout);
            finish.pids = pids;
            finish.processes = processes;
            finish.processes_omitted = processes_omitted;
            finish.walk_truncated |= walk_truncated;
            finish.duration = Some(clock.now().saturating_duration_since(started));
            finish.fallback = true;
            finish
        }
        outcome => ActReport {
            pids,
            processes,
            processes_omitted,
            outcome,
            duration: Some(clock.now().saturating_duration_since(started)),
            timeout,
            fallback: false,
            walk_truncated,
        },
    }
}

#[cfg(test)]
mod bounds {
    use super::*;

    /// A proc tree of PIDs 1..=`count`, each with the command line `cmdline(pid)`.
    fn proc_tree(count: u32, cmdline: impl Fn(u32) -> String) -> (tempfile::TempDir, Vec<u32>) {
        let root = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let pids: Vec<u32> = (1..=count).collect();
        for pid in &pids {
            let dir = root.path().join(pid.to_string());
            std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(dir.join("cmdline"), cmdline(*pid)).unwrap_or_else(|e| panic!("{e}"));
        }
        (root, pids)
    }

    // Issue 14: a 2 MB command line took the daemon to 315 MB, and every PID's command line
    // was read and kept.
    #[test]
    fn command_lines_are_listed_for_the_first_processes_only_and_cut() {
        let (root, pids) = proc_tree(150, |pid| {
            if pid == 1 {
                format!("big\0{}\0", "x".repeat(2 << 20))
            } else {
                format!("proc{pid}\0-v\0")
            }
        });
        let (processes, omitted) = command_lines(&ProcFs::new(root.path()), &pids);
        assert_eq!(processes.len(), MAX_PROCESSES_LISTED);
        assert_eq!(omitted, 50);
        let first = processes.first().cloned().unwrap_or_default();
        assert!(
            first.len() < oomwarden_procfs::MAX_CMDLINE_BYTES + 40,
            "{}",
            first.len()
        );
        assert!(
            first.starts_with("big xxx"),
            "{}",
            first.get(..10).unwrap_or("")
        );
        assert!(
            first.ends_with(&format!("… ({} more bytes)", (2 << 20) + 4 - 4096)),
            "{}",
            first.get(first.len() - 40..).unwrap_or("")
        );
        assert_eq!(processes.get(1).map(String::as_str), Some("proc2 -v"));
    }

    // Issue 14: 100 command lines of 4 KiB each made a 400 KiB record.
    #[test]
    fn a_record_lists_at_most_its_budget_of_command_line_bytes() {
        let (root, pids) = proc_tree(100, |_| format!("{}\0", "y".repeat(10_000)));
        let (processes, omitted) = command_lines(&ProcFs::new(root.path()), &pids);
        let bytes: usize = processes.iter().map(String::len).sum();
        assert!(
            (MAX_RECORD_CMDLINE_BYTES..MAX_RECORD_CMDLINE_BYTES + 4200).contains(&bytes),
            "{bytes}"
        );
        assert_eq!(omitted, 100 - processes.len() as u64);
        assert_eq!(processes.len(), 16);
    }
}

#[cfg(test)]
mod parts {
    use super::*;

    fn report(outcome: ActOutcome, pids: &[u32], ms: Option<u64>) -> ActReport {
        ActReport {
            pids: pids.to_vec(),
            processes: pids.iter().map(|p| format!("p{p}")).collect(),
            processes_omitted: 0,
            outcome,
            duration: ms.map(Duration::from_millis),
            timeout: Duration::from_secs(2),
            fallback: false,
            walk_truncated: false,
        }
    }

    /// The containers of a pod, killed one by one, are one outcome: the worst of them, gone
    /// only when every one was.
    #[test]
    fn the_parts_of_a_kill_are_one_report() {
        let t = Duration::from_secs(2);
        let gone = || ActOutcome::Gone(GoneReason::Removed);
        let failed = || ActOutcome::Failed {
            errno: Some(13),
            path: PathBuf::from("/x/cgroup.kill"),
            message: "Permission denied".to_owned(),
        };
        let r = combine(
            vec![
                report(ActOutcome::Killed, &[1, 2], Some(3)),
                report(gone(), &[], None),
                report(ActOutcome::Killed, &[3], Some(4)),
            ],
            t,
        );
        assert_eq!(
            r.outcome,
            ActOutcome::Killed,
            "a container gone meanwhile is no failure"
        );
        assert_eq!(
            (r.pids.as_slice(), r.duration),
            (&[1, 2, 3][..], Some(Duration::from_millis(7)))
        );
        let worst = |outcomes: Vec<ActOutcome>| {
            combine(
                outcomes
                    .into_iter()
                    .map(|o| report(o, &[], Some(1)))
                    .collect(),
                t,
            )
            .outcome
        };
        assert_eq!(worst(vec![gone(), gone()]), gone());
        assert_eq!(
            worst(vec![
                ActOutcome::Killed,
                ActOutcome::NotVerified { stopping: false }
            ]),
            ActOutcome::NotVerified { stopping: false }
        );
        assert_eq!(
            worst(vec![ActOutcome::NotVerified { stopping: true }, failed()]),
            failed()
        );
        let many = combine(
            (0..3)
                .map(|i| {
                    report(
                        ActOutcome::Killed,
                        &(i * 60..i * 60 + 60).collect::<Vec<_>>(),
                        None,
                    )
                })
                .collect(),
            t,
        );
        assert_eq!(many.processes.len(), MAX_PROCESSES_LISTED);
        assert_eq!(many.processes_omitted, 180 - MAX_PROCESSES_LISTED as u64);
    }
}

#[cfg(test)]
mod gone_reasons {
    use super::GoneReason;

    /// The record's `error` says these words (docs/operations.md).
    #[test]
    fn each_reason_reads_as_before() {
        assert_eq!(
            GoneReason::Removed.to_string(),
            "the cgroup is gone since it was ranked"
        );
        assert_eq!(
            GoneReason::Replaced { now: 9, ranked: 7 }.to_string(),
            "another cgroup has taken its path since it was ranked (cgroup id 9, ranked 7)"
        );
        assert!(
            GoneReason::VanishedAtKill {
                errno: libc::ENODEV
            }
            .to_string()
            .starts_with("the cgroup vanished as cgroup.kill was written: No such device")
        );
    }
}
