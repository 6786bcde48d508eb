//! Kubernetes Events for oomwarden's kills, sent where Kubernetes users look
//! (`kubectl describe pod`, `kubectl get events`).
//!
//! ```text
//! Engine (after the record is written) ──try_send──▶ queue (bounded) ──▶ sender thread
//!                                                      full: dropped       rate limit, retries
//!                                                                          POST events.k8s.io/v1
//! ```
//!
//! Nothing here can delay a kill or grow without bound: the cycle only offers the record to a
//! bounded queue (a full queue drops it, counted); the sender thread has its own
//! current-thread tokio runtime, a deadline on every request, a token bucket, and a bounded
//! number of retries with backoff. Outcomes are counted ([`Counts`]) and each kind of
//! problem is logged once.
//!
//! The node's taint is no message but a level: the last state asked for is kept beside the
//! queue (a full queue cannot drop it) and written until it is made, with a backoff that
//! grows to [`NODE_RETRY_MAX`], never given up. At its start the sender reads the Node and
//! says whether it carries oomwarden's taint ([`Events::taint_found_at_start`]): a daemon
//! restarted while the node was tainted lets go of it once nothing holds it. Only oomwarden's
//! own taint (value [`TAINT_VALUE`]) is ever removed.

mod build;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use build::{
    ANNOTATION_OFFENDING_CONTAINERS, ANNOTATION_OFFENDING_CONTAINERS_USAGE,
    ANNOTATION_STARVED_RESOURCE, CONDITION_DISRUPTION_TARGET, CONDITION_MEMORY_PRESSURE,
    ConditionPatch, NODE_EVENT_NAMESPACE, NOTE_LIMIT, NewEvent, NodeUpdate, REASON_KILLED,
    REASON_REPEATED_KILLS, REASON_TAINTED, REASON_TERMINATED, REASON_TERMINATION, REASON_UNTAINTED,
    REASON_WARNING, REASON_WOULD_KILL, REPORTING_CONTROLLER, Reporter, TAINT_KEY, TAINT_VALUE,
    condition_for, events_for, node_update_for,
};
use k8s_openapi::api::core::v1::{Node, Pod, Taint};
use kube::api::{Api, Patch, PatchParams, PostParams};
use oomwarden_model::{ActionRecord, Outcome, RecordKind};
use thiserror::Error;

/// How the sender is set up.
#[derive(Debug, Clone)]
pub struct Options {
    /// A kubeconfig file; `None`: the pod's service account (in-cluster).
    pub kubeconfig: Option<PathBuf>,
    /// Who sends (the Node's name).
    pub reporter: Reporter,
    /// Records waiting to be sent; more are dropped.
    pub queue: usize,
    /// Events sent at once before the rate applies.
    pub burst: u32,
    /// One more Event may be sent after each `refill`.
    pub refill: Duration,
    /// Connect and read deadline of one request.
    pub timeout: Duration,
    /// Attempts per Event (the first and the retries).
    pub attempts: u32,
    /// The first retry's wait; each next one doubles it.
    pub backoff: Duration,
    /// Also set the `DisruptionTarget` condition of each killed pod (`events.podCondition`).
    pub pod_condition: bool,
    /// Read the Node at the start to find oomwarden's taint from before it
    /// ([`Events::taint_found_at_start`]); the daemon does, a test of Events alone need not.
    pub find_taint_at_start: bool,
}

impl Options {
    /// The defaults: 64 records queued, 20 Events at once then one every 3 s, 10 s per
    /// request, 5 attempts 1, 2, 4 and 8 s apart.
    pub fn new(kubeconfig: Option<PathBuf>, reporter: Reporter) -> Self {
        Options {
            kubeconfig,
            reporter,
            queue: 64,
            burst: 20,
            refill: Duration::from_secs(3),
            timeout: Duration::from_secs(10),
            attempts: 5,
            backoff: Duration::from_secs(1),
            pod_condition: false,
            find_taint_at_start: false,
        }
    }
}

/// Why an Event was not created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dropped {
    /// The queue was full (the API server is slow or down, or the rate limit holds).
    QueueFull,
    /// The API server refused it (403: the RBAC is missing; 404: the namespace is gone; 422).
    Rejected,
    /// Every attempt failed (unreachable, timeouts, 5xx, 429).
    Failed,
    /// No client: no kubeconfig and not in a cluster, or an unreadable kubeconfig.
    Unconfigured,
}

impl Dropped {
    /// Every reason, in the metric's label order.
    pub const ALL: [Dropped; 4] = [
        Dropped::QueueFull,
        Dropped::Rejected,
        Dropped::Failed,
        Dropped::Unconfigured,
    ];

    /// `queue-full`, `rejected`, `failed`, `unconfigured` (the metric's `reason` label).
    pub fn name(self) -> &'static str {
        match self {
            Dropped::QueueFull => "queue-full",
            Dropped::Rejected => "rejected",
            Dropped::Failed => "failed",
            Dropped::Unconfigured => "unconfigured",
        }
    }

    fn index(self) -> usize {
        match self {
            Dropped::QueueFull => 0,
            Dropped::Rejected => 1,
            Dropped::Failed => 2,
            Dropped::Unconfigured => 3,
        }
    }
}

/// What the sender writes: Events, with `podCondition` pods' conditions, and the node's
/// taint and condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An Event created.
    Event,
    /// A pod's `DisruptionTarget` condition set.
    Condition,
    /// The node's taint and `OOMWardenMemoryPressure` condition set or cleared.
    Node,
}

impl Kind {
    fn index(self) -> usize {
        match self {
            Kind::Event => 0,
            Kind::Condition => 1,
            Kind::Node => 2,
        }
    }
}

/// What the sender has done since it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Events created (or found already there, after a retry).
    pub sent: u64,
    /// Events not created, in the order of [`Dropped::ALL`].
    pub dropped: [u64; 4],
    /// Pod conditions set.
    pub conditions_set: u64,
    /// Pod conditions not set, in the order of [`Dropped::ALL`].
    pub conditions_dropped: [u64; 4],
    /// Node updates (taint and condition) made.
    pub node_updates: u64,
    /// Node updates not made, in the order of [`Dropped::ALL`].
    pub node_updates_dropped: [u64; 4],
    /// Requests sent again after a failure.
    pub retries: u64,
}

impl Counts {
    /// Events dropped for `reason`.
    pub fn dropped(&self, reason: Dropped) -> u64 {
        self.dropped.get(reason.index()).copied().unwrap_or(0)
    }

    /// Node updates not made for `reason`.
    pub fn node_updates_dropped(&self, reason: Dropped) -> u64 {
        self.node_updates_dropped
            .get(reason.index())
            .copied()
            .unwrap_or(0)
    }

    /// Pod conditions not set for `reason`.
    pub fn conditions_dropped(&self, reason: Dropped) -> u64 {
        self.conditions_dropped
            .get(reason.index())
            .copied()
            .unwrap_or(0)
    }

    /// Adds `other`'s counts (a sender replaced at a reload keeps counting).
    pub fn add(&mut self, other: &Counts) {
        self.sent += other.sent;
        self.conditions_set += other.conditions_set;
        self.node_updates += other.node_updates;
        for (total, n) in self
            .node_updates_dropped
            .iter_mut()
            .zip(other.node_updates_dropped)
        {
            *total += n;
        }
        self.retries += other.retries;
        for (total, n) in self.dropped.iter_mut().zip(other.dropped) {
            *total += n;
        }
        for (total, n) in self
            .conditions_dropped
            .iter_mut()
            .zip(other.conditions_dropped)
        {
            *total += n;
        }
    }
}

#[derive(Debug, Default)]
struct Shared {
    /// By [`Kind`].
    done: [AtomicU64; 3],
    /// By [`Kind`], then [`Dropped`].
    dropped: [[AtomicU64; 4]; 3],
    retries: AtomicU64,
    stop: AtomicBool,
    /// The node's taint as asked for, and what the Node held at the start.
    node: Mutex<NodeWanted>,
}

/// The node's state as the cycle asks for it (a level, not a message).
#[derive(Debug, Default)]
struct NodeWanted {
    /// The last update asked for.
    update: Option<NodeUpdate>,
    /// Bumped with each update asked for.
    generation: u64,
    /// The generation the sender made.
    made: u64,
    /// Whether the Node carried oomwarden's taint when the sender started (`None`: not read
    /// yet, or no client).
    found_at_start: Option<bool>,
}

/// The longest wait between two attempts at the node's taint: it is retried until made.
pub const NODE_RETRY_MAX: Duration = Duration::from_secs(60);

/// A message on the sender's queue.
#[derive(Debug)]
enum Msg {
    /// A record's Events (and pod condition).
    Record(Box<ActionRecord>),
    /// The node's taint asked for changed.
    Wake,
}

impl Shared {
    fn done(&self, kind: Kind) {
        if let Some(c) = self.done.get(kind.index()) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn drop_writes(&self, reason: Dropped, writes: &[Write]) {
        for w in writes {
            self.drop_kind(reason, w.kind());
        }
    }

    fn drop_kind(&self, reason: Dropped, kind: Kind) {
        if let Some(c) = self
            .dropped
            .get(kind.index())
            .and_then(|d| d.get(reason.index()))
        {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One request of the sender.
#[derive(Debug, Clone)]
enum Write {
    Event(Box<NewEvent>),
    Condition(ConditionPatch),
}

impl Write {
    fn kind(&self) -> Kind {
        match self {
            Write::Event(_) => Kind::Event,
            Write::Condition(_) => Kind::Condition,
        }
    }
}

/// What a record makes through the queue: its Events, then (with `pod_condition`) its pod's
/// condition. (A taint's node update is kept as a level beside the queue.)
fn writes(record: &ActionRecord, reporter: &Reporter, pod_condition: bool) -> Vec<Write> {
    let mut out: Vec<Write> = events_for(record, reporter)
        .into_iter()
        .map(|e| Write::Event(Box::new(e)))
        .collect();
    if pod_condition && let Some(c) = condition_for(record, reporter) {
        out.push(Write::Condition(c));
    }
    out
}

/// The running sender: offer it records; it ends when dropped.
#[derive(Debug)]
pub struct Events {
    queue: SyncSender<Msg>,
    shared: Arc<Shared>,
    reporter: Reporter,
    pod_condition: bool,
}

/// The sender's thread could not be started.
#[derive(Debug, Error)]
#[error("cannot start the Kubernetes Events thread: {0}")]
pub struct StartError(#[source] std::io::Error);

impl Events {
    /// Starts the sender thread. The client is made there (reading the kubeconfig or the
    /// service account): a failure is logged and counted, never an error here, so that Events
    /// can never keep the OOM handler from starting.
    pub fn start(options: Options) -> Result<Events, StartError> {
        let (queue, records) = sync_channel(options.queue);
        let shared = Arc::new(Shared::default());
        let reporter = options.reporter.clone();
        let pod_condition = options.pod_condition;
        let thread_shared = Arc::clone(&shared);
        // The thread logs where its starter logs (the global subscriber in the daemon).
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        std::thread::Builder::new()
            .name("events".into())
            .spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    sender(&options, &records, &thread_shared);
                });
            })
            .map_err(StartError)?;
        Ok(Events {
            queue,
            shared,
            reporter,
            pod_condition,
        })
    }

    /// Offers a record; returns at once. A record that makes no Event (the kernel's kills, a
    /// failed kill) is ignored; a full queue drops its Events, counted. A `tainted` or
    /// `untainted` record's node update is kept as the state wanted, whatever the queue.
    pub fn offer(&self, record: &ActionRecord) {
        if let Some(update) = node_update_for(record, &self.reporter) {
            self.want_node(update);
        }
        let writes = writes(record, &self.reporter, self.pod_condition);
        if writes.is_empty() {
            if matches!(
                record.outcome,
                Outcome::Killed | Outcome::NotVerified | Outcome::DryRun
            ) && record.kind == RecordKind::Oomwarden
            {
                // Only a record without an RFC 3339 time gets here; the daemon writes none.
                log_once(
                    "no-time",
                    "a record's time is not RFC 3339; no Kubernetes Event for it",
                    &record.time,
                );
            }
            return;
        }
        match self.queue.try_send(Msg::Record(Box::new(record.clone()))) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.shared.drop_writes(Dropped::QueueFull, &writes);
                log_once(
                    "queue-full",
                    "Kubernetes Events dropped: the queue is full (the API server is slow or unreachable); counted in oomwarden_events_dropped_total",
                    "",
                );
            }
        }
    }

    /// What has been sent and dropped so far.
    pub fn counts(&self) -> Counts {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let done = |k: Kind| self.shared.done.get(k.index()).map_or(0, get);
        let dropped = |k: Kind| {
            [0, 1, 2, 3].map(|i| {
                self.shared
                    .dropped
                    .get(k.index())
                    .and_then(|d| d.get(i))
                    .map_or(0, get)
            })
        };
        Counts {
            sent: done(Kind::Event),
            dropped: dropped(Kind::Event),
            conditions_set: done(Kind::Condition),
            conditions_dropped: dropped(Kind::Condition),
            node_updates: done(Kind::Node),
            node_updates_dropped: dropped(Kind::Node),
            retries: get(&self.shared.retries),
        }
    }

    /// The Node the Events are about.
    pub fn node(&self) -> &str {
        &self.reporter.node
    }

    /// Asks for the node's taint and condition to be as `update` says, until made (a
    /// `tainted` or `untainted` record does this through [`Self::offer`]).
    pub fn want_node(&self, update: NodeUpdate) {
        {
            let mut node = self
                .shared
                .node
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            node.update = Some(update);
            node.generation += 1;
        }
        // A full queue means the sender is busy: it looks at the node between writes.
        let _ = self.queue.try_send(Msg::Wake);
    }

    /// The node's state asked for and not made yet: what a sender replacing this one (a
    /// reload) must go on with.
    pub fn unmade_node_update(&self) -> Option<NodeUpdate> {
        let node = self
            .shared
            .node
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        node.update.clone().filter(|_| node.made != node.generation)
    }

    /// Whether the Node carried oomwarden's taint when the sender started: `None` until it
    /// has been read (or without a client).
    pub fn taint_found_at_start(&self) -> Option<bool> {
        self.shared
            .node
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .found_at_start
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        // The thread ends when the queue's sender goes with this (a request in flight ends at
        // its deadline); it is not waited for, so a stop never waits on the API server.
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}

/// Problems said once per process and kind (they would repeat with every kill).
fn log_once(kind: &str, message: &str, detail: &str) {
    static SAID: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let first = SAID
        .lock()
        .map(|mut g| g.get_or_insert_with(HashSet::new).insert(kind.to_owned()))
        .unwrap_or(true);
    if first {
        tracing::warn!(reason = kind, error = %shortened(detail), "{message}");
    }
}

/// What the API server said, at most [`MAX_LOGGED_CHARS`] of it: a log line is never as long
/// as a body a server or a proxy chose.
const MAX_LOGGED_CHARS: usize = 512;

fn shortened(detail: &str) -> std::borrow::Cow<'_, str> {
    match detail.char_indices().nth(MAX_LOGGED_CHARS) {
        None => std::borrow::Cow::Borrowed(detail),
        Some((at, _)) => std::borrow::Cow::Owned(format!(
            "{}… ({} more bytes)",
            detail.get(..at).unwrap_or_default(),
            detail.len() - at
        )),
    }
}

/// A token bucket: `burst` at once, one more per `refill`.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    burst: f64,
    per_second: f64,
    at: Instant,
}

impl Bucket {
    fn new(burst: u32, refill: Duration) -> Self {
        let secs = refill.as_secs_f64();
        Bucket {
            tokens: f64::from(burst),
            burst: f64::from(burst.max(1)),
            per_second: if secs > 0.0 {
                1.0 / secs
            } else {
                f64::INFINITY
            },
            at: Instant::now(),
        }
    }

    /// How long until a token is there (zero: take it now).
    fn wait(&mut self, now: Instant) -> Duration {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Duration::ZERO
        } else {
            Duration::from_secs_f64((1.0 - self.tokens) / self.per_second)
        }
    }
}

/// How one attempt ended.
enum Attempt {
    Created,
    Retry(String),
    Rejected(u16, String),
}

fn sender(options: &Options, records: &Receiver<Msg>, shared: &Shared) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the Kubernetes Events runtime; Events are dropped");
            drain(records, shared, options, Dropped::Unconfigured);
            return;
        }
    };
    let client = runtime.block_on(client(
        options.kubeconfig.as_deref(),
        &Timeouts::all(options.timeout),
        Some(MAX_RESPONSE_BYTES),
    ));
    let client = match client {
        Ok(c) => {
            tracing::info!(
                node = %options.reporter.node,
                source = options.kubeconfig.as_ref().map_or_else(|| "in-cluster service account".to_owned(), |p| p.display().to_string()),
                "sending Kubernetes Events for oomwarden's kills"
            );
            c
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot reach the Kubernetes API for Events; they are dropped and counted (oomwarden_events_dropped_total{{reason=\"unconfigured\"}})");
            drain(records, shared, options, Dropped::Unconfigured);
            return;
        }
    };
    let mut bucket = Bucket::new(options.burst, options.refill);
    let mut node = NodeWork::new(options.backoff);
    if !options.find_taint_at_start {
        node.read = true;
        shared
            .node
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .found_at_start = Some(false);
    }
    let sender = Sender {
        runtime: &runtime,
        client: &client,
        options,
        shared,
    };
    // Blocked until a message comes or the node's next attempt is due: `Events` dropped (the
    // daemon stopping, or a reload replacing it) drops the queue's sender, which ends the
    // wait. No periodic wake-up while the node is as asked.
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        node.serve(&sender);
        let msg = match node.next_in() {
            Some(d) => match records.recv_timeout(d) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return,
            },
            None => match records.recv() {
                Ok(m) => m,
                Err(_) => return,
            },
        };
        let Msg::Record(record) = msg else {
            continue;
        };
        for write in writes(&record, &options.reporter, options.pod_condition) {
            // The node first, between any two writes: the taint never waits behind Events.
            node.serve(&sender);
            if !wait(&mut bucket, shared) {
                return;
            }
            deliver(&sender, &write);
        }
    }
}

/// What one request needs.
struct Sender<'a> {
    runtime: &'a tokio::runtime::Runtime,
    client: &'a kube::Client,
    options: &'a Options,
    shared: &'a Shared,
}

/// The sender's side of the node's taint: the Node read once at the start, then each state
/// asked for written until made.
#[derive(Debug)]
struct NodeWork {
    /// The generation made (0: none asked for yet).
    made: u64,
    /// Whether the start's read is done.
    read: bool,
    /// When the next attempt is due, after a failure.
    due: Option<Instant>,
    /// The wait after the next failure.
    backoff: Duration,
    first_backoff: Duration,
    /// The generation whose refusal was counted (once per state asked for).
    refusal_counted: u64,
}

impl NodeWork {
    fn new(backoff: Duration) -> Self {
        NodeWork {
            made: 0,
            read: false,
            due: None,
            backoff,
            first_backoff: backoff,
            refusal_counted: 0,
        }
    }

    /// How long until an attempt is due; `None` when nothing is to be done.
    fn next_in(&self) -> Option<Duration> {
        self.due
            .map(|at| at.saturating_duration_since(Instant::now()))
    }

    fn failed(&mut self) {
        self.due = Some(Instant::now() + self.backoff);
        self.backoff = self.backoff.saturating_mul(2).min(NODE_RETRY_MAX);
    }

    fn succeeded(&mut self) {
        self.due = None;
        self.backoff = self.first_backoff;
    }

    /// The start's read, then the state asked for, when an attempt is due.
    fn serve(&mut self, s: &Sender<'_>) {
        if self.due.is_some_and(|at| Instant::now() < at) {
            return;
        }
        if !self.read && !self.read_at_start(s) {
            return;
        }
        self.write_wanted(s);
    }

    /// Reads the Node once: whether it carries oomwarden's taint from before this start.
    /// False when it must be tried again later.
    fn read_at_start(&mut self, s: &Sender<'_>) -> bool {
        let node = &s.options.reporter.node;
        let result = s.runtime.block_on(async {
            tokio::time::timeout(s.options.timeout, async {
                Api::<Node>::all(s.client.clone()).get(node).await
            })
            .await
        });
        let found = |ours: bool| {
            s.shared
                .node
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .found_at_start = Some(ours);
        };
        match result {
            Ok(Ok(n)) => {
                let ours = n
                    .spec
                    .as_ref()
                    .and_then(|spec| spec.taints.as_ref())
                    .is_some_and(|t| t.iter().any(is_ours));
                found(ours);
                if ours {
                    tracing::info!(%node, "the node carries oomwarden's taint from before this start; it is let go once nothing holds it");
                }
                self.read = true;
                self.succeeded();
                true
            }
            failed => match classify(failed.map(|r| r.map(drop))) {
                // No permission (403) or no such Node (404): nothing to find; said once,
                // never asked again.
                Attempt::Rejected(code, message) => {
                    log_once(
                        "node-read-refused",
                        &format!(
                            "cannot read the node to find oomwarden's taint from before this start ({code}); a taint left by an earlier start is not removed (give the service account get on nodes: deploy/kubernetes/node-taint.yaml)"
                        ),
                        &message,
                    );
                    found(false);
                    self.read = true;
                    true
                }
                Attempt::Retry(why) => {
                    log_once(
                        "node-read",
                        "cannot read the node to find oomwarden's taint from before this start; retrying",
                        &why,
                    );
                    self.failed();
                    false
                }
                Attempt::Created => true,
            },
        }
    }

    /// Writes the node's state asked for, when it is not made yet.
    fn write_wanted(&mut self, s: &Sender<'_>) {
        let node = &s.options.reporter.node;
        let (generation, update) = {
            let wanted = s
                .shared
                .node
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            (wanted.generation, wanted.update.clone())
        };
        let Some(update) = update.filter(|_| generation != self.made) else {
            return;
        };
        let result = s.runtime.block_on(async {
            tokio::time::timeout(s.options.timeout, update_node(s.client, node, &update)).await
        });
        match classify(result) {
            Attempt::Created => {
                s.shared.done(Kind::Node);
                self.made = generation;
                s.shared
                    .node
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .made = generation;
                self.succeeded();
            }
            Attempt::Rejected(code, message) => {
                if self.refusal_counted != generation {
                    self.refusal_counted = generation;
                    s.shared.drop_kind(Dropped::Rejected, Kind::Node);
                }
                log_once(
                    &format!("rejected-Node-{code}"),
                    &format!(
                        "the API server refused the node's taint and condition ({code}){}; retried until made (at most every {} s)",
                        if code == 403 {
                            ": give oomwarden's service account get and patch on nodes, patch on nodes/status (deploy/kubernetes/node-taint.yaml)"
                        } else {
                            ""
                        },
                        NODE_RETRY_MAX.as_secs()
                    ),
                    &message,
                );
                s.shared.retries.fetch_add(1, Ordering::Relaxed);
                self.failed();
            }
            Attempt::Retry(why) => {
                log_once(
                    "failed-Node",
                    "the node's taint and condition could not be written; retried until made",
                    &why,
                );
                s.shared.retries.fetch_add(1, Ordering::Relaxed);
                self.failed();
            }
        }
    }
}

/// Whether a taint is the one oomwarden sets: its key and its value (an administrator's taint
/// with the same key is never removed).
fn is_ours(t: &Taint) -> bool {
    t.key == TAINT_KEY && t.value.as_deref() == Some(TAINT_VALUE)
}

/// Waits for a token; false when stopped meanwhile.
fn wait(bucket: &mut Bucket, shared: &Shared) -> bool {
    loop {
        let d = bucket.wait(Instant::now());
        if d.is_zero() {
            return true;
        }
        if pause(d, shared) {
            return false;
        }
    }
}

/// Sleeps `d` in short steps; true when stopped meanwhile.
fn pause(d: Duration, shared: &Shared) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if shared.stop.load(Ordering::Relaxed) {
            return true;
        }
        std::thread::sleep(
            end.saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100)),
        );
    }
    shared.stop.load(Ordering::Relaxed)
}

fn deliver(s: &Sender<'_>, write: &Write) {
    let Sender {
        runtime,
        client,
        options,
        shared,
    } = *s;
    let kind = write.kind();
    let mut backoff = options.backoff;
    for attempt in 1..=options.attempts.max(1) {
        if attempt > 1 {
            shared.retries.fetch_add(1, Ordering::Relaxed);
            if pause(backoff, shared) {
                return;
            }
            backoff = backoff.saturating_mul(2);
        }
        let result = runtime.block_on(async {
            tokio::time::timeout(options.timeout, async {
                match write {
                    Write::Event(new) => Api::namespaced(client.clone(), &new.namespace)
                        .create(&PostParams::default(), &new.event)
                        .await
                        .map(drop),
                    Write::Condition(c) => Api::<Pod>::namespaced(client.clone(), &c.namespace)
                        .patch_status(
                            &c.name,
                            &PatchParams::default(),
                            &Patch::Strategic(&c.patch),
                        )
                        .await
                        .map(drop),
                }
            })
            .await
        });
        let (what, permission) = match kind {
            Kind::Event => ("a Kubernetes Event", "create on events.k8s.io/events"),
            Kind::Condition => (
                "a pod's DisruptionTarget condition (events.podCondition)",
                "patch on pods/status",
            ),
            // Never through the queue (`NodeWork`).
            Kind::Node => ("the node's taint", "get and patch on nodes"),
        };
        match classify(result) {
            Attempt::Created => {
                shared.done(kind);
                return;
            }
            Attempt::Rejected(code, message) => {
                shared.drop_writes(Dropped::Rejected, std::slice::from_ref(write));
                log_once(
                    &format!("rejected-{kind:?}-{code}"),
                    &format!(
                        "the API server refused {what} ({code}){}; such writes are dropped and counted",
                        if code == 403 {
                            format!(
                                ": give oomwarden's service account {permission} (deploy/kubernetes/oomwarden.yaml has the ClusterRole)"
                            )
                        } else {
                            String::new()
                        }
                    ),
                    &message,
                );
                return;
            }
            Attempt::Retry(why) => {
                if attempt == options.attempts.max(1) {
                    shared.drop_writes(Dropped::Failed, std::slice::from_ref(write));
                    log_once(
                        &format!("failed-{kind:?}"),
                        &format!(
                            "{what} could not be sent after every attempt; such writes are dropped and counted"
                        ),
                        &why,
                    );
                }
            }
        }
    }
}

/// Sets or clears the taint `oomwarden.io/memory-pressure=oomwarden:NoSchedule` of `node`
/// and its condition `OOMWardenMemoryPressure`. The taints are read first and written back
/// whole with the node's `resourceVersion` (a list without a merge key: a patch of it replaces
/// it), so a taint another controller set meanwhile makes a 409 Conflict, retried with a
/// fresh read. A taint with the key already there (an administrator's, with another value)
/// is not doubled (taints are unique by key and effect) and never removed: only the one with
/// oomwarden's value is.
async fn update_node(
    client: &kube::Client,
    node: &str,
    update: &NodeUpdate,
) -> Result<(), kube::Error> {
    let api: Api<Node> = Api::all(client.clone());
    let current = api.get(node).await?;
    let mut taints = current
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    let before = taints.len();
    if update.taint {
        if !taints
            .iter()
            .any(|t| t.key == TAINT_KEY && t.effect == "NoSchedule")
        {
            taints.push(Taint {
                key: TAINT_KEY.to_owned(),
                effect: "NoSchedule".to_owned(),
                value: Some(TAINT_VALUE.to_owned()),
                time_added: None,
            });
        }
    } else {
        taints.retain(|t| !is_ours(t));
    }
    if taints.len() != before {
        let patch = serde_json::json!({
            "metadata": { "resourceVersion": current.metadata.resource_version },
            "spec": { "taints": taints },
        });
        api.patch(node, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    let condition = serde_json::json!({
        "type": CONDITION_MEMORY_PRESSURE,
        "status": if update.taint { "True" } else { "False" },
        "reason": update.reason,
        "message": update.message,
        "lastTransitionTime": update.time,
        "lastHeartbeatTime": update.time,
    });
    let status = serde_json::json!({ "status": { "conditions": [condition] } });
    api.patch_status(node, &PatchParams::default(), &Patch::Strategic(&status))
        .await
        .map(drop)
}

fn classify(result: Result<Result<(), kube::Error>, tokio::time::error::Elapsed>) -> Attempt {
    match result {
        Ok(Ok(_)) => Attempt::Created,
        Err(_) => Attempt::Retry("the request took longer than its deadline".to_owned()),
        Ok(Err(kube::Error::Api(status))) => {
            let code = status.code;
            match code {
                // An earlier attempt that timed out did create it: same name, so it exists.
                409 if status.reason == "AlreadyExists" => Attempt::Created,
                // The node changed between the read and the write: read it again.
                409 if status.reason == "Conflict" => {
                    Attempt::Retry(format!("{code}: {}", status.message))
                }
                429 | 500..=599 => Attempt::Retry(format!("{code}: {}", status.message)),
                _ => Attempt::Rejected(code, status.message.clone()),
            }
        }
        Ok(Err(e)) => Attempt::Retry(e.to_string()),
    }
}

/// No client: every record's writes are dropped as they come, until the stop.
fn drain(records: &Receiver<Msg>, shared: &Shared, options: &Options, why: Dropped) {
    // Until `Events` is dropped (its sender with it).
    while let Ok(msg) = records.recv() {
        match msg {
            Msg::Record(r) => {
                shared.drop_writes(why, &writes(&r, &options.reporter, options.pod_condition));
            }
            Msg::Wake => {
                let update = shared
                    .node
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .update
                    .clone();
                if update.is_some() {
                    shared.drop_kind(why, Kind::Node);
                }
            }
        }
    }
}

/// The most read of a kubeconfig, a certificate, a key or a token file.
pub const MAX_CREDENTIAL_BYTES: u64 = 1 << 20;

/// The most read of one answer of the API server (an Event or a `Status` is a few KiB): a
/// server or proxy answering a huge body cannot take the daemon's memory.
pub const MAX_RESPONSE_BYTES: usize = 1 << 20;

/// The service account's files a pod's in-cluster configuration reads.
const SERVICE_ACCOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Checks that `path` is a regular file of at most [`MAX_CREDENTIAL_BYTES`], read without
/// blocking (found by the fault suite: a FIFO kubeconfig hung the Events thread for ever,
/// `/dev/zero` as one was read until memory ran out).
fn check_credential(what: &str, path: &Path) -> Result<(), String> {
    oomwarden_cgroupfs::read_regular(path, MAX_CREDENTIAL_BYTES)
        .map(drop)
        .map_err(|e| format!("{what} {}: {e}", path.display()))
}

/// Every file a kubeconfig points to (certificates, keys, token files), checked as the
/// kubeconfig is before the client reads them.
fn check_referenced(kubeconfig: &kube::config::Kubeconfig) -> Result<(), String> {
    for cluster in kubeconfig
        .clusters
        .iter()
        .filter_map(|c| c.cluster.as_ref())
    {
        if let Some(ca) = &cluster.certificate_authority {
            check_credential("certificate-authority", Path::new(ca))?;
        }
    }
    for auth in kubeconfig
        .auth_infos
        .iter()
        .filter_map(|a| a.auth_info.as_ref())
    {
        for (what, file) in [
            ("client-certificate", &auth.client_certificate),
            ("client-key", &auth.client_key),
            ("tokenFile", &auth.token_file),
        ] {
            if let Some(file) = file {
                check_credential(what, Path::new(file))?;
            }
        }
    }
    Ok(())
}

/// The deadlines of a client's requests.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// To connect.
    pub connect: Duration,
    /// Between two reads of an answer (a watch waits up to its own `timeoutSeconds` between
    /// events, so a watching client needs more than that).
    pub read: Duration,
    /// To write a request.
    pub write: Duration,
}

impl Timeouts {
    /// The same deadline for each.
    pub fn all(d: Duration) -> Timeouts {
        Timeouts {
            connect: d,
            read: d,
            write: d,
        }
    }
}

/// A client of the API server from `kubeconfig` (`None`: the pod's service account), every
/// file it names checked first (a regular file of at most [`MAX_CREDENTIAL_BYTES`]), kube's own
/// retries off; with `max_response`, each answer read to at most that many bytes (not for a
/// client that watches: a watch is one long answer).
pub async fn client(
    kubeconfig: Option<&Path>,
    timeouts: &Timeouts,
    max_response: Option<usize>,
) -> Result<kube::Client, String> {
    let mut config = match kubeconfig {
        Some(path) => {
            check_credential("kubeconfig", path)?;
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            check_referenced(&kubeconfig)?;
            kube::Config::from_custom_kubeconfig(
                kubeconfig,
                &kube::config::KubeConfigOptions::default(),
            )
            .await
            .map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => {
            let account = Path::new(SERVICE_ACCOUNT);
            if account.exists() {
                check_credential("service account token", &account.join("token"))?;
                check_credential("service account CA", &account.join("ca.crt"))?;
            }
            kube::Config::incluster().map_err(|e| {
                format!("not in a cluster (no service account: {e}); give a kubeconfig (events.kubeconfig; --kubeconfig for limits)")
            })?
        }
    };
    config.connect_timeout = Some(timeouts.connect);
    config.read_timeout = Some(timeouts.read);
    config.write_timeout = Some(timeouts.write);
    // kube's own retry layer waits up to 1,000 s over 15 tries; ours is bounded and counted.
    config.default_retry = false;
    let builder = kube::client::ClientBuilder::try_from(config).map_err(|e| e.to_string())?;
    Ok(match max_response {
        Some(max) => {
            let bounded = tower::util::MapResponseLayer::new(
                move |r: http::Response<Box<kube::client::DynBody>>| {
                    r.map(|body| http_body_util::Limited::new(body, max))
                },
            );
            builder.with_layer(&bounded).build()
        }
        None => builder.build(),
    })
}

/// The Node's name: `configured`, else `$NODE_NAME`, else the host name.
pub fn node_name(configured: Option<&str>) -> String {
    if let Some(n) = configured {
        return n.to_owned();
    }
    if let Ok(n) = std::env::var("NODE_NAME")
        && !n.is_empty()
    {
        return n;
    }
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sender blocks on its queue with no periodic wake-up, so only the queue closing
    /// can end it: dropping `Events` must, with a client and without one.
    #[test]
    fn dropping_events_ends_its_thread_with_or_without_a_client() {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let reachable = dir.path().join("kubeconfig");
        std::fs::write(
            &reachable,
            format!("apiVersion: v1\nkind: Config\nclusters:\n- name: x\n  cluster:\n    server: http://127.0.0.1:{port}\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context: {{cluster: x, user: u}}\ncurrent-context: x\n"),
        )
        .unwrap();
        let missing = dir.path().join("no-such-kubeconfig");
        for kubeconfig in [reachable, missing] {
            let events = Events::start(Options::new(
                Some(kubeconfig.clone()),
                Reporter {
                    node: "n1".to_owned(),
                },
            ))
            .unwrap();
            // Ours, the handle's and the thread's.
            let shared = Arc::clone(&events.shared);
            std::thread::sleep(Duration::from_millis(300));
            assert_eq!(
                Arc::strong_count(&shared),
                3,
                "{kubeconfig:?}: the thread ended early"
            );
            drop(events);
            let end = Instant::now() + Duration::from_secs(5);
            while Arc::strong_count(&shared) > 1 {
                assert!(
                    Instant::now() < end,
                    "{kubeconfig:?}: the thread outlived its Events"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    #[test]
    fn the_bucket_gives_the_burst_then_one_per_refill() {
        let mut b = Bucket::new(2, Duration::from_secs(3));
        let t = b.at;
        assert_eq!(b.wait(t), Duration::ZERO);
        assert_eq!(b.wait(t), Duration::ZERO);
        let w = b.wait(t);
        assert!(
            w > Duration::from_millis(2900) && w <= Duration::from_secs(3),
            "{w:?}"
        );
        assert_eq!(b.wait(t + Duration::from_secs(3)), Duration::ZERO);
        // Never more than the burst, however long it waited.
        let later = t + Duration::from_secs(3600);
        assert_eq!(b.wait(later), Duration::ZERO);
        assert_eq!(b.wait(later), Duration::ZERO);
        assert!(b.wait(later) > Duration::ZERO);
    }
}
