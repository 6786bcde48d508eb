//! The kernel's own OOM kills as records (`kind: kernel-oom`), beside oomwarden's.
//!
//! ```text
//! /dev/kmsg ──thread──▶ oomlog reports ──┐
//!                                         ├─▶ Ledger ──▶ records (detectedBy kmsg │ memory-events)
//! memory.events of the candidate parents ─┘     (when changed; the candidates below one that rose)
//! ```
//!
//! Reports of the kernel log become records at once. A rise of an `oom_kill` counter that no
//! report explains within [`GRACE_NS`] (the log was unreadable, wrapped or rate-limited)
//! becomes a record known from the counter alone. Nothing here delays a cycle by more than
//! reading one small file per candidate parent, and on cgroup2 only in a cycle after the kernel
//! said one of those files changed (inotify: `cgroupfs::Modified`); the candidates themselves
//! are read only below a parent whose counter rose, and all of them once a minute (to forget
//! removed cgroups).

use std::collections::HashSet;
use std::sync::mpsc::{Receiver, TryRecvError, sync_channel};
use std::time::Duration;

use oomwarden_cgroupfs::node_path;
use oomwarden_config::KernelOomWatchSettings;
use oomwarden_kernelwatch::kmsg::{self, Follower, Note, Problem};
use oomwarden_kernelwatch::{Counts, Ledger, Unexplained};
use oomwarden_model::{
    ActionRecord, DetectedBy, Identities, IdentitySource, OomConstraint, Outcome, RecordKind,
    listed_pids,
};
use oomwarden_oomlog::{OomEvent, OomKind};

use crate::engine::Engine;

/// How long a counter's rise waits for the kernel log to explain it. The follower closes a
/// report 300 ms after its kill line and the cycle reads it within a sample interval; the
/// rest is margin for a slow, loaded node.
pub const GRACE_NS: u64 = 3_000_000_000;

/// Every candidate is read this often (else only below a parent that rose), so that removed
/// cgroups are forgotten and new ones get a baseline.
const WALK_EVERY_NS: u64 = 60_000_000_000;

/// Reports waiting for the daemon; more are dropped and counted (their kills are still seen
/// by the counters).
const QUEUE: usize = 256;

/// How long the follower waits after a kill line for the rest of its report.
const SETTLE: Duration = Duration::from_millis(300);

/// The watcher's state between cycles.
#[derive(Debug)]
pub struct KernelWatch {
    ledger: Ledger,
    notes: Receiver<Note>,
    follower: Option<Follower>,
    last_walk_ns: u64,
    /// Problems already logged (each reason once).
    logged: HashSet<&'static str>,
    /// Kernel OOM kills recorded since the start.
    kills: u64,
    /// Reports the follower dropped, as counted so far.
    dropped_seen: u64,
    /// What it was started with.
    settings: KernelOomWatchSettings,
    /// The roots' `memory.events`, told by the kernel when they change: one read per change,
    /// not per cycle.
    modified: oomwarden_cgroupfs::Modified,
}

impl KernelWatch {
    /// Starts following the kernel log and takes the counters' baseline; `None` when the
    /// watch is disabled. A log that cannot be followed is logged and counted: the counters
    /// still see every kill.
    pub fn start(
        engine: &Engine,
        settings: &KernelOomWatchSettings,
        now_ns: u64,
    ) -> Option<KernelWatch> {
        if !settings.enabled {
            tracing::info!("kernel OOM kills are not watched (kernelOomWatch.enabled: false)");
            return None;
        }
        let (tx, notes) = sync_channel(QUEUE);
        let options = kmsg::Options {
            path: settings.kmsg.clone(),
            from_start: settings.from_boot,
            settle: SETTLE,
        };
        let follower = match kmsg::follow(options, tx) {
            Ok(f) => Some(f),
            Err(e) => {
                tracing::error!(error = %e, "cannot start the kernel log follower; kernel OOM kills are known from memory.events counters only");
                engine.metrics().kernel_oom_watch_problem("open");
                None
            }
        };
        let mut watch = KernelWatch {
            ledger: Ledger::new(GRACE_NS),
            notes,
            follower,
            last_walk_ns: now_ns,
            logged: HashSet::new(),
            kills: 0,
            dropped_seen: 0,
            settings: settings.clone(),
            modified: oomwarden_cgroupfs::Modified::default(),
        };
        let roots = roots(engine);
        let reads = read_all(engine, &roots);
        watch.ledger.baseline(&roots, &reads);
        tracing::info!(
            kmsg = %settings.kmsg.display(),
            from_boot = settings.from_boot,
            cgroups = watch.ledger.watched(),
            "watching for kernel OOM kills"
        );
        Some(watch)
    }

    /// Kernel OOM kills recorded since the start.
    pub fn kills(&self) -> u64 {
        self.kills
    }

    /// The settings it was started with.
    pub fn settings(&self) -> &KernelOomWatchSettings {
        &self.settings
    }

    /// One round after a cycle: the kernel log's reports become records, the counters are
    /// read and matched, and rises left unexplained after the grace period become records.
    /// Returns the records written.
    pub fn poll(&mut self, engine: &mut Engine, now_ns: u64) -> Vec<ActionRecord> {
        let mut written = Vec::new();
        let now_wall = chrono::Utc::now();
        loop {
            match self.notes.try_recv() {
                Ok(Note::Event(event)) => {
                    if let Some(r) = self.record_report(engine, &event, now_ns, now_wall) {
                        written.push(r);
                    }
                }
                Ok(Note::Problem(problem)) => self.problem(engine, &problem),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        self.count_dropped(engine);
        let roots = roots(engine);
        let walk = now_ns.saturating_sub(self.last_walk_ns) >= WALK_EVERY_NS;
        // When the kernel said none changed, none is read: each has the counts it had. When one
        // changed, all are read, as before: the roots nest (`kubepods` holds the other
        // classes), and a rise is matched against the rises below it read in the same cycle; a
        // parent and its child read in different cycles (their events can arrive 10 ms apart)
        // would leave one rise unexplained. `Modified` answers for all of them at once.
        let cgroups = engine.cgroups();
        let any_changed = self
            .modified
            .any_changed(roots.iter().map(String::as_str), |r| {
                cgroups.file(r, "memory.events")
            });
        let reads = if walk {
            self.last_walk_ns = now_ns;
            read_all(engine, &roots)
        } else {
            let mut reads = if any_changed {
                read_counts(engine, roots.iter().map(String::as_str))
            } else {
                Vec::new()
            };
            let risen = self.ledger.rises(&reads);
            if !risen.is_empty() {
                let below: Vec<String> = engine
                    .collector()
                    .candidate_dirs()
                    .into_iter()
                    .filter(|dir| risen.iter().any(|r| within(dir, r)))
                    .collect();
                reads.extend(read_counts(engine, below.iter().map(String::as_str)));
            }
            reads
        };
        self.ledger.observe(&reads, now_ns);
        if walk {
            // Forget what is gone (after `observe`, so that a last rise is not lost).
            self.ledger.baseline(&roots, &reads);
        }
        for unexplained in self.ledger.settle(now_ns) {
            written.push(self.record_counter(engine, &unexplained, now_ns, now_wall));
        }
        written
    }

    /// Stops the follower thread.
    pub fn stop(&mut self) {
        if let Some(f) = &mut self.follower {
            f.stop();
        }
    }

    /// Every report the follower dropped on a full channel, counted (it counts them itself:
    /// the channel that was full cannot carry the news).
    fn count_dropped(&mut self, engine: &Engine) {
        let dropped = self.follower.as_ref().map_or(0, Follower::dropped);
        let new = dropped.saturating_sub(self.dropped_seen);
        if new == 0 {
            return;
        }
        self.dropped_seen = dropped;
        engine
            .metrics()
            .kernel_oom_watch_problems(Problem::Dropped.reason(), new);
        if self.logged.insert(Problem::Dropped.reason()) {
            tracing::warn!(error = %Problem::Dropped, reason = Problem::Dropped.reason(), dropped = new, "kernel OOM watch (said once per reason; counted in oomwarden_kernel_oom_watch_problems_total)");
        }
    }

    fn problem(&mut self, engine: &Engine, problem: &Problem) {
        let reason = problem.reason();
        engine.metrics().kernel_oom_watch_problem(reason);
        if self.logged.insert(reason) {
            tracing::warn!(error = %problem, reason, "kernel OOM watch (said once per reason; counted in oomwarden_kernel_oom_watch_problems_total)");
        }
    }

    /// A record from one report of the kernel log; `None` when the history already holds it
    /// (`fromBoot` after a restart).
    fn record_report(
        &mut self,
        engine: &mut Engine,
        event: &OomEvent,
        now_ns: u64,
        now_wall: chrono::DateTime<chrono::Utc>,
    ) -> Option<ActionRecord> {
        let at_ns = event
            .uptime_seconds
            // The log stamps in whole microseconds; rounding to them undoes the float's error.
            .and_then(|s| Duration::try_from_secs_f64(s + 0.5e-6).ok())
            .and_then(|d| u64::try_from(d.as_micros()).ok())
            .map_or(now_ns, |us| us.saturating_mul(1000));
        // The counters count kill lines (a group kill's victim twice), not processes.
        let killed = event
            .kill_lines
            .max(u64::try_from(event.killed.len()).unwrap_or(u64::MAX))
            .max(1);
        if let Some(memcg) = &event.task_memcg {
            self.ledger.reported(memcg, killed, now_ns);
        }
        let duplicate = engine
            .history()
            .holds_kernel_report(at_ns, event.victim_pid);
        if duplicate {
            return None;
        }
        let constraint = match event.kind {
            Some(OomKind::Memcg) => OomConstraint::Memcg,
            Some(OomKind::Global) => OomConstraint::Global,
            None if event.oom_memcg.is_some() => OomConstraint::Memcg,
            None => OomConstraint::Global,
        };
        let mut record = ActionRecord::empty(
            RecordKind::KernelOom,
            Outcome::Killed,
            wall_at(now_wall, now_ns, at_ns),
            at_ns,
        );
        let identities = engine.identities();
        place(
            &mut record,
            engine,
            event.task_memcg.as_deref().unwrap_or(""),
            &identities,
        );
        // The report's own reading of the path wins over the candidate's (the container).
        if event.pod_uid.is_some() {
            record.pod_uid.clone_from(&event.pod_uid);
        }
        if let Some(id) = &event.container_id {
            record.containers = vec![id.clone()];
            record.container_names = identities
                .container(id)
                .map(|c| vec![c.name.clone()])
                .unwrap_or_default();
        }
        let pids: Vec<u32> = event.killed.iter().map(|k| k.pid).collect();
        let (listed, omitted) = listed_pids(pids);
        record.pids = listed;
        record.pids_omitted = omitted;
        record.constraint = Some(constraint);
        record.victim_pid = event.victim_pid;
        record.victim_comm.clone_from(&event.victim_comm);
        record.oom_memcg.clone_from(&event.oom_memcg);
        record.task_memcg.clone_from(&event.task_memcg);
        record.container_id.clone_from(&event.container_id);
        record.detected_by = Some(DetectedBy::Kmsg);
        record.ordered_by = event
            .oom_memcg
            .as_deref()
            .or(event.task_memcg.as_deref())
            .and_then(|memcg| engine.ordered_by(memcg, now_ns));
        let record = engine.record_kernel_kill(record, 1);
        self.kills += 1;
        log_kill(&record);
        Some(record)
    }

    /// A record from a counter's rise that no report explained.
    fn record_counter(
        &mut self,
        engine: &mut Engine,
        unexplained: &Unexplained,
        now_ns: u64,
        now_wall: chrono::DateTime<chrono::Utc>,
    ) -> ActionRecord {
        let mut record = ActionRecord::empty(
            RecordKind::KernelOom,
            Outcome::Killed,
            wall_at(now_wall, now_ns, unexplained.seen_ns),
            unexplained.seen_ns,
        );
        let identities = engine.identities();
        place(&mut record, engine, &unexplained.cgroup, &identities);
        record.constraint = Some(unexplained.constraint);
        // The counter says how many processes were killed, not which.
        record.pids_omitted = unexplained.kills;
        record.detected_by = Some(DetectedBy::MemoryEvents);
        record.ordered_by = engine.ordered_by(&unexplained.cgroup, now_ns);
        let record = engine.record_kernel_kill(record, unexplained.kills);
        self.kills += unexplained.kills;
        log_kill(&record);
        record
    }
}

impl Drop for KernelWatch {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Names the victim of a kernel kill in `memcg` (as the kernel prints it): the candidate it
/// lies in (a pod) with its class and identity, else the cgroup itself.
fn place(record: &mut ActionRecord, engine: &Engine, memcg: &str, identities: &Identities) {
    let memcg = memcg.trim_matches('/');
    let (dir, class) = match engine.collector().candidate_containing(memcg) {
        Some((dir, class)) => (dir, Some(class)),
        None => (memcg.to_owned(), None),
    };
    record.victim = Some(node_path(&dir));
    record.class = class;
    let pod_uid = oomwarden_kube::decode_cgroup_path(&dir).pod_uid;
    if let Some(uid) = &pod_uid {
        let pod = identities.pod(uid);
        record.workload = pod.map(|p| oomwarden_kube::workload(&p.namespace, &p.name, &p.labels));
        record.namespace = pod.map(|p| p.namespace.clone());
        record.pod_name = pod.map(|p| p.name.clone());
        record.identity_source = Some(pod.map_or(IdentitySource::Path, |p| p.source));
    }
    record.pod_uid = pod_uid;
}

fn log_kill(record: &ActionRecord) {
    let pod = match (&record.namespace, &record.pod_name) {
        (Some(ns), Some(name)) => format!("{ns}/{name}"),
        _ => String::new(),
    };
    tracing::warn!(
        record = record.id,
        constraint = record.constraint.map_or("", OomConstraint::name),
        victim = record.victim.as_deref().unwrap_or(""),
        pod = %pod,
        victim_pid = record.victim_pid.unwrap_or(0),
        victim_comm = record.victim_comm.as_deref().unwrap_or(""),
        detected_by = ?record.detected_by,
        ordered_by = record.ordered_by,
        "{}",
        if record.ordered_by.is_some() {
            "the kernel OOM killer killed a process, as oomwarden asked (killMethod: kernel-oom)"
        } else {
            "the kernel OOM killer killed a process"
        }
    );
}

/// The wall-clock time of monotonic instant `at_ns`, from a reading of both clocks now.
fn wall_at(now_wall: chrono::DateTime<chrono::Utc>, now_ns: u64, at_ns: u64) -> String {
    let ago = i64::try_from(now_ns.saturating_sub(at_ns)).unwrap_or(i64::MAX);
    (now_wall - chrono::TimeDelta::nanoseconds(ago))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The cgroups whose counters are read every cycle: the candidate parents (a kill anywhere
/// in a candidate shows there; the counters are hierarchical).
fn roots(engine: &Engine) -> Vec<String> {
    let mut roots = engine.collector().candidate_parents();
    roots.retain(|r| !r.is_empty());
    roots.sort();
    roots.dedup();
    roots
}

/// The roots and every candidate below them.
fn read_all(engine: &Engine, roots: &[String]) -> Vec<(String, Counts)> {
    let candidates = engine.collector().candidate_dirs();
    read_counts(
        engine,
        roots.iter().chain(candidates.iter()).map(String::as_str),
    )
}

/// `memory.events` of each cgroup; one that is gone or unreadable is left out (the next read
/// or walk sees it again).
fn read_counts<'a>(engine: &Engine, dirs: impl Iterator<Item = &'a str>) -> Vec<(String, Counts)> {
    dirs.filter_map(|dir| {
        engine
            .cgroups()
            .memory_events(dir)
            .ok()
            .map(|pairs| (dir.to_owned(), Counts::from_events(&pairs)))
    })
    .collect()
}

/// Whether `inner` is `outer` or below it (relative paths).
fn within(inner: &str, outer: &str) -> bool {
    inner == outer
        || inner
            .strip_prefix(outer)
            .is_some_and(|rest| rest.starts_with('/'))
}
