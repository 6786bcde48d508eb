//! The identity cache and its refresher thread.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use oomwarden_cri::{CONTAINERD_SOCKET, CRIO_SOCKET, Runtime};
use oomwarden_model::{Identities, IdentitySource};

/// Which container runtime to ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// The first of these sockets that exists (containerd's, then CRI-O's).
    Auto(Vec<PathBuf>),
    /// This socket.
    Unix(PathBuf),
    /// None: the pod-log directories only.
    Off,
}

impl Endpoint {
    /// `auto` with the well-known sockets.
    pub fn auto() -> Self {
        Endpoint::Auto(vec![
            PathBuf::from(CONTAINERD_SOCKET),
            PathBuf::from(CRIO_SOCKET),
        ])
    }

    /// The socket to dial now, if any.
    fn socket(&self) -> Option<PathBuf> {
        match self {
            Endpoint::Auto(candidates) => candidates.iter().find(|p| p.exists()).cloned(),
            Endpoint::Unix(path) => Some(path.clone()),
            Endpoint::Off => None,
        }
    }
}

/// How the cache is refreshed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The runtime.
    pub endpoint: Endpoint,
    /// The kubelet's pod-log directory (the fallback).
    pub pod_logs: PathBuf,
    /// How often the identities are refreshed.
    pub refresh_every: Duration,
    /// The deadline of one refresh from the runtime (both calls).
    pub timeout: Duration,
}

/// How long the first ranking after a start waits for the first refresh: the refresh's own
/// deadline (`timeout`, 2 s in the daemon) and half a second for the pod-log fallback's
/// listing when the runtime does not answer.
pub fn first_answer_wait(config: &Config) -> Duration {
    config.timeout + Duration::from_millis(500)
}

/// The runtime's last answer.
#[derive(Debug, Clone)]
struct Good {
    identities: Arc<Identities>,
}

/// What a cache replaced by a reload hands on.
#[derive(Debug)]
struct Carried {
    identities: Arc<Identities>,
    good: Option<Good>,
    status: CacheStatus,
}

/// The shortest gap between two refreshes asked for by [`Cache::refresh_soon`]: during a
/// storm of restarts the runtime is listed at most once a second.
const MIN_REFRESH_GAP: Duration = Duration::from_secs(1);

/// The numbers the metrics show every cycle (a copy of three numbers and a duration, not of
/// the whole status).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Health {
    /// The runtime answered the last refresh.
    pub runtime_up: bool,
    /// Refreshes where it did not, so far.
    pub runtime_failures: u64,
    /// Pods known.
    pub pods: usize,
    /// How long the last refresh the runtime answered took (its two list calls and their
    /// decoding).
    pub last_refresh: Option<Duration>,
    /// How old the identities in use are: the time since the runtime last answered (none
    /// before it has, or without a runtime).
    pub age: Option<Duration>,
}

/// What the cache knows about its own state (for `status` and the metrics).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CacheStatus {
    /// Where the identities in use came from.
    pub source: IdentitySource,
    /// The runtime socket asked, if any.
    pub runtime: Option<PathBuf>,
    /// Whether the last call to the runtime answered.
    pub runtime_up: bool,
    /// Why the last refresh could not use the runtime (or the pod-log directory).
    pub last_error: Option<String>,
    /// Refreshes done.
    pub refreshes: u64,
    /// Refreshes where the runtime could not be used.
    pub runtime_failures: u64,
    /// Pods known.
    pub pods: usize,
    /// Pods and containers left out beyond the bounds in the last refresh.
    pub left_out: u64,
    /// How long the last refresh from the runtime took.
    pub last_refresh: Option<Duration>,
    /// When the runtime last answered: the identities in use are that old (kept while it
    /// does not answer, so an exemption by label never lapses with a slow runtime).
    pub answered_at: Option<Instant>,
    /// Strings of the runtime's last answer that were not UTF-8 (kept, replaced).
    pub not_utf8: u64,
}

impl CacheStatus {
    /// How old the identities in use are ([`CacheStatus::answered_at`] to now).
    pub fn age(&self) -> Option<Duration> {
        self.answered_at.map(|t| t.elapsed())
    }
}

#[derive(Debug)]
struct Shared {
    identities: Mutex<Arc<Identities>>,
    status: Mutex<CacheStatus>,
    /// The first refresh has been published (or identities were carried over): a cycle that
    /// ranks waits for it, bounded ([`Cache::wait_first_answer`]).
    answered: Mutex<bool>,
    answered_wake: Condvar,
    /// Until when a ranking waits for the first answer.
    wait_until: Instant,
    /// The runtime's last answer (when it came: `CacheStatus::answered_at`): kept when a
    /// refresh fails.
    good: Mutex<Option<Good>>,
    /// Set to ask for a refresh soon; the condvar wakes the refresher.
    asked: Mutex<bool>,
    wake: Condvar,
    stop: Arc<AtomicBool>,
    /// Written when the cache stops: wakes the watch thread's `poll` (no periodic wake-up
    /// to look at the flag; each costs the node a context switch).
    stop_wake: Option<OwnedFd>,
    /// A watch thread asks for refreshes ([`Cache::watch`]).
    watching: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The identities of the node's pods, refreshed by a thread of its own; reading them never
/// waits on the runtime.
#[derive(Debug, Clone)]
pub struct Cache {
    shared: Arc<Shared>,
}

impl Cache {
    /// A cache holding `identities` and never refreshed (a replay, tests).
    pub fn fixed(identities: Identities, source: IdentitySource) -> Self {
        let status = CacheStatus {
            source,
            pods: identities.pods.len(),
            ..CacheStatus::default()
        };
        Cache {
            shared: Arc::new(Shared {
                identities: Mutex::new(Arc::new(identities)),
                status: Mutex::new(status),
                answered: Mutex::new(true),
                answered_wake: Condvar::new(),
                wait_until: Instant::now(),
                good: Mutex::new(None),
                asked: Mutex::new(false),
                wake: Condvar::new(),
                stop: Arc::new(AtomicBool::new(true)),
                stop_wake: None,
                watching: AtomicBool::new(false),
            }),
        }
    }

    /// Starts the refresher thread (it refreshes at once, then every `refresh_every`, until
    /// [`Cache::stop`]). Until its first refresh ends, a ranking waits for it up to
    /// [`first_answer_wait`] ([`Cache::wait_first_answer`]).
    pub fn start(config: Config) -> std::io::Result<Self> {
        Self::start_from(config, None)
    }

    /// Starts a cache that replaces `previous` (a reload changed `containerRuntime`): the
    /// identities `previous` had stay in force, with their age, until this one's runtime
    /// answers, so a reload never leaves a cycle ranking with no identity.
    pub fn start_after(config: Config, previous: &Cache) -> std::io::Result<Self> {
        let carried = Carried {
            identities: previous.snapshot(),
            good: lock(&previous.shared.good).clone(),
            status: previous.status(),
        };
        Self::start_from(config, Some(carried))
    }

    fn start_from(config: Config, carried: Option<Carried>) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let answered = carried.is_some();
        let (identities, good, status) = match carried {
            Some(c) => (
                c.identities,
                c.good,
                CacheStatus {
                    refreshes: 0,
                    ..c.status
                },
            ),
            None => (Arc::default(), None, CacheStatus::default()),
        };
        let cache = Cache {
            shared: Arc::new(Shared {
                identities: Mutex::new(identities),
                status: Mutex::new(status),
                answered: Mutex::new(answered),
                answered_wake: Condvar::new(),
                wait_until: Instant::now() + first_answer_wait(&config),
                good: Mutex::new(good),
                asked: Mutex::new(false),
                wake: Condvar::new(),
                stop,
                stop_wake: rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC).ok(),
                watching: AtomicBool::new(false),
            }),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let shared = Arc::clone(&cache.shared);
        // The thread logs where its starter logs (the global subscriber in the daemon).
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        std::thread::Builder::new()
            .name("identity".to_owned())
            .spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    refresher(&shared, &config, &runtime);
                });
            })?;
        Ok(cache)
    }

    /// Waits until the first refresh has answered (the runtime, or the fallback when it does
    /// not), at most until [`first_answer_wait`] after the start: the first ranking after a
    /// start never runs on identities the daemon was about to have. Returns whether it has
    /// answered. Costs one lock once it has.
    pub fn wait_first_answer(&self) -> bool {
        let mut answered = lock(&self.shared.answered);
        while !*answered {
            let left = self
                .shared
                .wait_until
                .saturating_duration_since(Instant::now());
            if left.is_zero() || self.stopped() {
                return false;
            }
            answered = self
                .shared
                .answered_wake
                .wait_timeout(answered, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    /// The identities now.
    pub fn snapshot(&self) -> Arc<Identities> {
        Arc::clone(&lock(&self.shared.identities))
    }

    /// Whether the runtime answered the last refresh, its failures so far and the pods known
    /// (what the metrics show every cycle: no copy of the strings of [`Cache::status`]).
    pub fn health(&self) -> Health {
        let s = lock(&self.shared.status);
        Health {
            runtime_up: s.runtime_up,
            runtime_failures: s.runtime_failures,
            pods: s.pods,
            last_refresh: s.last_refresh,
            age: s.age(),
        }
    }

    /// The cache's state.
    pub fn status(&self) -> CacheStatus {
        lock(&self.shared.status).clone()
    }

    /// Puts `identities` in force (a replay: what the recording says the daemon had).
    pub fn replace(&self, identities: Arc<Identities>) {
        lock(&self.shared.status).pods = identities.pods.len();
        *lock(&self.shared.identities) = identities;
    }

    /// Asks for a refresh soon (a pod UID nobody knows was seen, a cgroup was made); at most
    /// one a second.
    pub fn refresh_soon(&self) {
        *lock(&self.shared.asked) = true;
        self.shared.wake.notify_all();
    }

    /// Whether the pod cgroups are watched ([`Cache::watch`]).
    pub fn watching(&self) -> bool {
        self.shared.watching.load(Ordering::SeqCst)
    }

    pub(crate) fn shared_watching(&self) -> &AtomicBool {
        &self.shared.watching
    }

    pub(crate) fn stopped(&self) -> bool {
        self.shared.stop.load(Ordering::SeqCst)
    }

    /// The eventfd written when the cache stops (none: the watch looks at the flag once a
    /// second).
    pub(crate) fn stop_wake(&self) -> Option<&OwnedFd> {
        self.shared.stop_wake.as_ref()
    }

    /// Ends the refresher thread (at once, or when a refresh under way ends) and the watch
    /// thread; the identities stay readable.
    pub fn stop(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(fd) = &self.shared.stop_wake {
            let _ = rustix::io::write(fd, &1_u64.to_ne_bytes());
        }
        // Under the refresher's lock: it is either before its look at the flag or waiting,
        // so the notification is not lost between the two.
        let _asked = lock(&self.shared.asked);
        self.shared.wake.notify_all();
    }
}

/// One refresh, now, on this thread (for commands that run once: `top`, `layout`): the
/// identities and where they came from, with the runtime's error when it did not answer.
pub fn read_once(config: &Config) -> (Identities, IdentitySource, Option<String>) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return match crate::pod_logs(&config.pod_logs) {
            Ok(ids) => (ids, IdentitySource::PodLogs, None),
            Err(e) => (
                Identities::default(),
                IdentitySource::Path,
                Some(e.to_string()),
            ),
        };
    };
    match refresh_once(config, &rt, &mut None) {
        Found::Runtime(ids, _, _, _) => (ids, IdentitySource::Cri, None),
        Found::Fallback(ids, error) => (
            ids,
            IdentitySource::PodLogs,
            (!error.is_empty()).then_some(error),
        ),
        Found::Nothing(error) => (Identities::default(), IdentitySource::Path, Some(error)),
    }
}

/// What one refresh found.
enum Found {
    /// The runtime answered: its identities, what was left out beyond the bounds, how long
    /// it took, and strings that were not UTF-8.
    Runtime(Identities, u64, Duration, u64),
    /// The pod-log directories, and why the runtime was not used (empty: none configured).
    Fallback(Identities, String),
    /// Neither.
    Nothing(String),
}

fn refresher(shared: &Shared, config: &Config, rt: &tokio::runtime::Runtime) {
    let mut client: Option<Runtime> = None;
    let mut was_up: Option<bool> = None;
    let mut last = Instant::now();
    loop {
        let found = refresh_once(config, rt, &mut client);
        publish(
            shared,
            config,
            found,
            &mut was_up,
            client.as_ref().map(Runtime::path),
        );
        last = Instant::now().max(last);
        // Wait for the period, a request (no sooner than the gap), or the stop.
        let mut asked = lock(&shared.asked);
        loop {
            if shared.stop.load(Ordering::SeqCst) {
                return;
            }
            let since = last.elapsed();
            if since >= config.refresh_every || (*asked && since >= MIN_REFRESH_GAP) {
                *asked = false;
                break;
            }
            let wait = if *asked {
                MIN_REFRESH_GAP.saturating_sub(since)
            } else {
                config.refresh_every.saturating_sub(since)
            };
            asked = shared
                .wake
                .wait_timeout(asked, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

fn refresh_once(
    config: &Config,
    rt: &tokio::runtime::Runtime,
    client: &mut Option<Runtime>,
) -> Found {
    let runtime_error = match config.endpoint.socket() {
        None if config.endpoint == Endpoint::Off => None,
        None => {
            Some("no container runtime socket found (tried containerd's and CRI-O's)".to_owned())
        }
        Some(socket) => {
            let started = Instant::now();
            let result = rt.block_on(async {
                if client.as_ref().is_none_or(|c| c.path() != socket) {
                    *client = Some(Runtime::new(&socket, config.timeout));
                }
                let Some(c) = client.as_mut() else {
                    return Err("no client".to_owned());
                };
                let work = async {
                    let pods = c.pod_sandboxes().await?;
                    let containers = c.containers().await?;
                    Ok::<_, oomwarden_cri::CriError>((pods, containers))
                };
                match tokio::time::timeout(config.timeout, work).await {
                    Ok(Ok(lists)) => Ok(lists),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err(format!(
                        "{}: no answer within {} ms",
                        socket.display(),
                        config.timeout.as_millis()
                    )),
                }
            });
            match result {
                Ok((pods, containers)) => {
                    let not_utf8 = pods.not_utf8 + containers.not_utf8;
                    let (ids, left_out) = crate::from_cri(pods.items, containers.items);
                    return Found::Runtime(ids, left_out, started.elapsed(), not_utf8);
                }
                Err(e) => Some(e),
            }
        }
    };
    match (crate::pod_logs(&config.pod_logs), runtime_error) {
        (Ok(ids), Some(e)) => Found::Fallback(ids, e),
        (Ok(ids), None) => Found::Fallback(ids, String::new()),
        (Err(logs), Some(e)) => Found::Nothing(format!("{e}; {logs}")),
        (Err(logs), None) => Found::Nothing(logs.to_string()),
    }
}

/// The runtime's last good answer with what the fallback knows beyond it: a pod the last
/// answer named keeps its labels (the fallback has none); a pod started since is named from
/// its pod-log directory.
fn with_fallback(good: &Identities, fallback: Identities) -> Identities {
    let mut merged = good.clone();
    for (uid, pod) in fallback.pods {
        merged.pods.entry(uid).or_insert(pod);
    }
    merged
}

fn publish(
    shared: &Shared,
    config: &Config,
    found: Found,
    was_up: &mut Option<bool>,
    socket: Option<&Path>,
) {
    let good = lock(&shared.good).clone();
    let mut status = lock(&shared.status);
    status.refreshes += 1;
    status.runtime = socket.map(Path::to_owned);
    let (ids, up) = match found {
        Found::Runtime(ids, left_out, took, not_utf8) => {
            status.source = IdentitySource::Cri;
            status.last_error = None;
            status.left_out = left_out;
            status.last_refresh = Some(took);
            status.not_utf8 = not_utf8;
            let ids = Arc::new(ids);
            let at = Instant::now();
            status.answered_at = Some(at);
            *lock(&shared.good) = Some(Good {
                identities: Arc::clone(&ids),
            });
            (ids, true)
        }
        // The runtime answered before: its identities stay, with their age; the fallback
        // only names pods it did not know.
        Found::Fallback(fallback, error) if good.is_some() => {
            status.last_error = (!error.is_empty()).then_some(error);
            let good = good.map(|g| g.identities).unwrap_or_default();
            (Arc::new(with_fallback(&good, fallback)), false)
        }
        Found::Nothing(error) if good.is_some() => {
            status.last_error = Some(error);
            (good.map(|g| g.identities).unwrap_or_default(), false)
        }
        Found::Fallback(ids, error) => {
            status.source = IdentitySource::PodLogs;
            status.last_error = (!error.is_empty()).then_some(error);
            (Arc::new(ids), false)
        }
        Found::Nothing(error) => {
            status.source = IdentitySource::Path;
            status.last_error = Some(error);
            (Arc::default(), false)
        }
    };
    let runtime_wanted = config.endpoint != Endpoint::Off;
    if runtime_wanted && !up {
        status.runtime_failures += 1;
    }
    status.runtime_up = up;
    status.pods = ids.pods.len();
    // Said once per change, not every refresh.
    if runtime_wanted && *was_up != Some(up) {
        if up {
            tracing::info!(
                runtime = %socket.map(|p| p.display().to_string()).unwrap_or_default(),
                pods = ids.pods.len(),
                "pod identity from the container runtime"
            );
        } else if let Some(age) = status.age() {
            tracing::warn!(
                error = status.last_error.as_deref().unwrap_or(""),
                age_ms = u64::try_from(age.as_millis()).unwrap_or(u64::MAX),
                fallback = %config.pod_logs.display(),
                "container runtime unreachable; the pods it last named keep that identity (labels included), new pods are named from the fallback"
            );
        } else {
            tracing::warn!(
                error = status.last_error.as_deref().unwrap_or(""),
                fallback = %config.pod_logs.display(),
                source = status.source.name(),
                "container runtime unreachable; pod identity from the fallback"
            );
        }
        *was_up = Some(up);
    }
    if status.not_utf8 > 0 && up {
        tracing::warn!(
            strings = status.not_utf8,
            "the container runtime answered strings that are not UTF-8; kept with U+FFFD in their place"
        );
    }
    drop(status);
    *lock(&shared.identities) = ids;
    let mut answered = lock(&shared.answered);
    if !*answered {
        *answered = true;
        shared.answered_wake.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With no runtime, the pod-log directories are used, and the failure is said once.
    #[test]
    fn without_a_runtime_the_pod_logs_are_used() {
        let logs = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        oomwarden_testkit::write(
            logs.path(),
            "shop_web_d4735e3a-265e-4ce8-a0f0-2c7a1b3e2f4a/nginx/0.log",
            "",
        );
        let config = Config {
            endpoint: Endpoint::Unix(logs.path().join("no-runtime.sock")),
            pod_logs: logs.path().to_owned(),
            refresh_every: Duration::from_millis(50),
            timeout: Duration::from_millis(500),
        };
        let mut cache = None;
        let log = oomwarden_testkit::capture_logs(|| {
            let c = Cache::start(config).unwrap_or_else(|e| panic!("{e}"));
            let deadline = Instant::now() + Duration::from_secs(20);
            while c.status().refreshes < 3 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            c.stop();
            cache = Some(c);
        });
        let cache = cache.unwrap_or_else(|| panic!("no cache"));
        let status = cache.status();
        assert!(status.refreshes >= 3, "{status:?}");
        assert_eq!(status.source, IdentitySource::PodLogs);
        assert!(!status.runtime_up);
        assert!(status.runtime_failures >= 3);
        assert!(
            status
                .last_error
                .as_deref()
                .is_some_and(|e| e.contains("no-runtime.sock")),
            "{status:?}"
        );
        assert_eq!(
            cache
                .snapshot()
                .pod("d4735e3a-265e-4ce8-a0f0-2c7a1b3e2f4a")
                .map(|p| p.qualified_name()),
            Some("shop/web".to_owned())
        );
        assert_eq!(
            log.matches("container runtime unreachable").count(),
            1,
            "said once: {log}"
        );
    }

    /// A stop wakes the watch thread through its eventfd (it sleeps in `poll` with no
    /// timeout), and the thread ends.
    #[test]
    fn a_stop_wakes_and_ends_the_watch() {
        fn watch_threads() -> usize {
            std::fs::read_dir("/proc/self/task")
                .map(|tasks| {
                    tasks
                        .flatten()
                        .filter(|t| {
                            std::fs::read_to_string(t.path().join("comm"))
                                .is_ok_and(|c| c.trim() == "identity-watch")
                        })
                        .count()
                })
                .unwrap_or(0)
        }
        fn readable(cache: &Cache) -> bool {
            let Some(fd) = cache.stop_wake() else {
                return false;
            };
            let mut fds = [rustix::event::PollFd::new(fd, rustix::event::PollFlags::IN)];
            rustix::event::poll(&mut fds, Some(&rustix::event::Timespec::default()))
                .is_ok_and(|n| n == 1)
        }
        let pods = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let config = Config {
            endpoint: Endpoint::Off,
            pod_logs: pods.path().join("no-logs"),
            refresh_every: Duration::from_secs(3600),
            timeout: Duration::from_millis(500),
        };
        let before = watch_threads();
        let cache = Cache::start(config).unwrap_or_else(|e| panic!("{e}"));
        cache
            .watch(vec![pods.path().to_owned()], |n| n.starts_with("pod"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(cache.stop_wake().is_some(), "an eventfd to wake the watch");
        assert!(!readable(&cache), "nothing to wake it before the stop");
        cache.stop();
        assert!(readable(&cache), "the stop wakes it");
        let deadline = Instant::now() + Duration::from_secs(20);
        while watch_threads() > before && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(watch_threads(), before, "the watch thread ended");
    }

    #[test]
    fn auto_takes_the_first_socket_that_exists() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let a = dir.path().join("a.sock");
        let b = dir.path().join("b.sock");
        std::fs::write(&b, "").unwrap_or_else(|e| panic!("{e}"));
        let auto = Endpoint::Auto(vec![a, b.clone()]);
        assert_eq!(auto.socket(), Some(b));
        assert_eq!(Endpoint::Off.socket(), None);
    }
}
