//! The usage history: a series per pod cgroup and per container cgroup, fed a reading of each
//! every interval, bounded in count and in age.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::histogram::{DecayingHistogram, seconds};
use crate::params::Params;

/// Which cgroup a series follows: a pod, or one container of it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeriesKey {
    /// The pod's UID.
    #[serde(rename = "podUID")]
    pub pod_uid: String,
    /// The container cgroup's name (it holds the container's ID); `None` for the pod cgroup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
}

/// Who the pod is, when the node knows (the container runtime's labels).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodRef {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// The workload's kind (`Deployment`, `StatefulSet`, `DaemonSet`, `Job`, `Pod`).
    #[serde(default)]
    pub owner_kind: String,
    /// The workload's name.
    #[serde(default)]
    pub owner_name: String,
}

/// `memory.peak` as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peak {
    /// The high-water mark since the last reading: the file reset through the reader's own
    /// descriptor after each read (Linux 6.12 and later).
    SinceReset(u64),
    /// The high-water mark since the cgroup was made (older kernels, or a reset refused).
    SinceCreation(u64),
}

/// One reading of a pod or container cgroup.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// The series.
    pub key: SeriesKey,
    /// The cgroup, relative to the cgroup root.
    pub cgroup: String,
    /// The cgroup's id (its directory's inode): another id at the same path is another cgroup.
    pub cgroup_id: u64,
    /// The container's name, when known.
    pub name: Option<String>,
    /// The pod, when known.
    pub pod: Option<PodRef>,
    /// When (Unix seconds).
    pub at: i64,
    /// `memory.current`.
    pub current: u64,
    /// `memory.peak`, when the kernel has it.
    pub peak: Option<Peak>,
    /// `memory.stat` `file`, `shmem`, `inactive_file`.
    pub file: u64,
    /// `memory.stat` `shmem` (part of `file`, but swap-backed: not reclaimable without swap).
    pub shmem: u64,
    /// `memory.stat` `inactive_file`.
    pub inactive_file: u64,
    /// `memory.swap.current` (0 without swap).
    pub swap: u64,
    /// `memory.max`; `None` is unlimited.
    pub max: Option<u64>,
    /// `memory.events` `oom_kill`, when read.
    pub oom_kills: Option<u64>,
}

impl Reading {
    /// The working set as the kubelet and cAdvisor compute it: `memory.current − inactive_file`.
    pub fn working_set(&self) -> u64 {
        self.current.saturating_sub(self.inactive_file)
    }

    /// What reclaim cannot take without swap: anonymous memory, shmem and the kernel's
    /// (`memory.current − (file − shmem)`).
    pub fn unreclaimable(&self) -> u64 {
        self.current
            .saturating_sub(self.file.saturating_sub(self.shmem))
    }
}

/// The latest numbers of a series.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Now {
    /// When (Unix seconds).
    pub at: i64,
    /// `memory.current`.
    pub current_bytes: u64,
    /// The working set.
    pub working_set_bytes: u64,
    /// Anonymous memory, shmem and the kernel's.
    pub unreclaimable_bytes: u64,
    /// Page cache.
    pub file_bytes: u64,
    /// Swap used.
    pub swap_bytes: u64,
    /// `memory.max`; `None` is unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
}

/// What the readings of a span saw: the kernel's highest mark and when, the highest reading,
/// and what a scrape a minute would have seen. One definition for an interval of a series
/// ([`Window`]) and for a whole history ([`crate::Recommendation`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Seen {
    /// The highest usage the kernel saw (`memory.peak`; the readings where it has none).
    pub peak_bytes: u64,
    /// The peak happened after this reading (Unix seconds); `None`: at any time since the
    /// container started (a first reading on a kernel that cannot reset the mark).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_after: Option<i64>,
    /// … and before this one.
    pub peak_before: i64,
    /// The highest `memory.current` a reading saw.
    pub read_max_bytes: u64,
    /// The highest working set of the first reading in each minute: what a scrape every
    /// minute (Prometheus's default, metrics-server's) would have seen.
    pub scraped_max_bytes: u64,
}

impl Seen {
    /// Takes the larger of each of `other`'s (another interval, or another incarnation's).
    pub(crate) fn merge(&mut self, other: &Seen) {
        if other.peak_bytes > self.peak_bytes {
            self.peak_bytes = other.peak_bytes;
            self.peak_after = other.peak_after;
            self.peak_before = other.peak_before;
        }
        self.read_max_bytes = self.read_max_bytes.max(other.read_max_bytes);
        self.scraped_max_bytes = self.scraped_max_bytes.max(other.scraped_max_bytes);
    }
}

/// One aggregation interval (24 h by default) of a series.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Window {
    /// Its start (Unix seconds, a multiple of the interval's length).
    pub start: i64,
    /// What its readings saw.
    #[serde(flatten)]
    pub seen: Seen,
    /// The minute (Unix seconds / 60) of the last reading.
    #[serde(default)]
    pub last_minute: i64,
}

/// Who ended a cgroup's processes for want of memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KilledBy {
    /// The kernel's OOM killer (`memory.events` `oom_kill` rose).
    Kernel,
    /// oomwarden (an action record).
    Oomwarden,
}

/// An OOM kill in a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OomKill {
    /// When it was seen (Unix seconds).
    pub at: i64,
    /// The usage then (the interval's peak).
    pub usage_bytes: u64,
    /// Who.
    pub by: KilledBy,
}

/// The most OOM kills kept per series.
pub const MAX_KILLS: usize = 16;

/// A pod's or a container's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Series {
    /// Which.
    pub key: SeriesKey,
    /// Its cgroup now.
    pub cgroup: String,
    /// Its cgroup's id.
    pub cgroup_id: u64,
    /// The container's name, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The pod, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<PodRef>,
    /// The first reading (Unix seconds), of this container or of one it follows.
    pub first_seen: i64,
    /// The last.
    pub last_seen: i64,
    /// The latest numbers.
    pub now: Now,
    /// The unreclaimable usage, time-weighted and decaying: what the request is fitted to.
    pub unreclaimable: DecayingHistogram,
    /// The aggregation intervals, oldest first.
    pub windows: Vec<Window>,
    /// The OOM kills, oldest first (the last [`MAX_KILLS`]).
    pub kills: Vec<OomKill>,
    /// Restarts seen (a new container of the same name in the pod).
    #[serde(default)]
    pub restarts: u32,
    /// The last `memory.peak` read when it counts since creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_peak: Option<u64>,
    /// The last `oom_kill` count read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_oom_kills: Option<u64>,
    /// Whether the kernel resets the mark per reader (`true`) or keeps it since creation.
    #[serde(default)]
    pub peak_resets: bool,
}

impl Series {
    fn new(r: &Reading) -> Series {
        Series {
            key: r.key.clone(),
            cgroup: r.cgroup.clone(),
            cgroup_id: r.cgroup_id,
            name: r.name.clone(),
            pod: r.pod.clone(),
            first_seen: r.at,
            last_seen: r.at,
            now: Now::default(),
            unreclaimable: DecayingHistogram::default(),
            windows: Vec::new(),
            kills: Vec::new(),
            restarts: 0,
            last_peak: None,
            last_oom_kills: None,
            peak_resets: false,
        }
    }

    /// Seconds of history.
    pub fn history_seconds(&self) -> i64 {
        self.last_seen.saturating_sub(self.first_seen)
    }

    fn observe(&mut self, r: &Reading, params: &Params) {
        let first = self.now.at == 0;
        if r.cgroup_id != self.cgroup_id {
            // Another cgroup at the same path: its counters start again.
            self.last_peak = None;
            self.last_oom_kills = None;
            self.cgroup_id = r.cgroup_id;
        }
        // The time this reading stands for: since the last, at most three intervals (a
        // daemon that was down does not stretch one reading over its absence).
        let weight = if first {
            params.interval_s
        } else {
            (r.at - self.now.at).clamp(0, params.interval_s.saturating_mul(3))
        };
        let previous = (!first).then_some(self.now.at);
        self.cgroup.clone_from(&r.cgroup);
        if r.name.is_some() {
            self.name.clone_from(&r.name);
        }
        if r.pod.is_some() {
            self.pod.clone_from(&r.pod);
        }
        self.last_seen = r.at;
        let working_set = r.working_set();
        let unreclaimable = r.unreclaimable();
        self.now = Now {
            at: r.at,
            current_bytes: r.current,
            working_set_bytes: working_set,
            unreclaimable_bytes: unreclaimable,
            file_bytes: r.file,
            swap_bytes: r.swap,
            max_bytes: r.max,
        };
        self.unreclaimable.add(
            &params.histogram,
            u64_f64(unreclaimable),
            seconds(weight.max(1)),
            r.at,
            params.half_life_s,
        );
        // This interval's high-water mark, and since when it may date.
        let (interval_peak, after) = match r.peak {
            Some(Peak::SinceReset(p)) => {
                self.peak_resets = true;
                (p, previous)
            }
            Some(Peak::SinceCreation(p)) => {
                self.peak_resets = false;
                let since = match self.last_peak {
                    // A new high since the last reading.
                    Some(last) if p > last => (p, previous),
                    Some(_) => (r.current, previous),
                    None => (p, None),
                };
                self.last_peak = Some(p);
                since
            }
            None => (r.current, previous),
        };
        let interval_peak = interval_peak.max(r.current);
        self.window_at(r.at, params)
            .take(interval_peak, after, r, working_set);
        if let Some(count) = r.oom_kills {
            let new = match self.last_oom_kills {
                Some(last) => count.saturating_sub(last),
                // Kills before the first reading of this cgroup: its life's.
                None => count,
            };
            for _ in 0..new.min(u64::try_from(MAX_KILLS).unwrap_or(u64::MAX)) {
                self.push_kill(OomKill {
                    at: r.at,
                    usage_bytes: interval_peak,
                    by: KilledBy::Kernel,
                });
            }
            self.last_oom_kills = Some(count);
        }
        let keep_from = r.at.saturating_sub(params.window_s());
        self.windows
            .retain(|w| w.start.saturating_add(params.aggregation_s) > keep_from);
        self.kills.retain(|k| k.at > keep_from);
    }

    fn window_at(&mut self, at: i64, params: &Params) -> &mut Window {
        let start = at - at.rem_euclid(params.aggregation_s.max(1));
        if self.windows.last().is_none_or(|w| w.start != start) {
            self.windows.push(Window {
                start,
                ..Window::default()
            });
        }
        let n = self.windows.len();
        if n > params.intervals {
            self.windows.drain(..n - params.intervals);
        }
        // Just pushed or found: never empty here.
        let last = self.windows.len() - 1;
        #[allow(
            clippy::indexing_slicing,
            reason = "the vector has at least one window"
        )]
        &mut self.windows[last]
    }

    fn push_kill(&mut self, kill: OomKill) {
        self.kills.push(kill);
        if self.kills.len() > MAX_KILLS {
            self.kills.remove(0);
        }
    }

    /// Takes `older`'s history (a container of the same name that came before).
    fn follow(&mut self, older: Series, params: &Params) {
        self.first_seen = self.first_seen.min(older.first_seen);
        self.restarts = self
            .restarts
            .saturating_add(older.restarts)
            .saturating_add(1);
        self.unreclaimable
            .merge(&older.unreclaimable, params.half_life_s);
        let mut windows: BTreeMap<i64, Window> =
            older.windows.into_iter().map(|w| (w.start, w)).collect();
        for w in self.windows.drain(..) {
            windows
                .entry(w.start)
                .and_modify(|o| o.seen.merge(&w.seen))
                .or_insert(w);
        }
        self.windows = windows.into_values().collect();
        let n = self.windows.len();
        if n > params.intervals {
            self.windows.drain(..n - params.intervals);
        }
        let mut kills = older.kills;
        kills.append(&mut self.kills);
        kills.sort_by_key(|k| k.at);
        let n = kills.len();
        if n > MAX_KILLS {
            kills.drain(..n - MAX_KILLS);
        }
        self.kills = kills;
    }
}

impl Window {
    fn take(&mut self, peak: u64, after: Option<i64>, r: &Reading, working_set: u64) {
        let seen = &mut self.seen;
        if peak > seen.peak_bytes || seen.peak_before == 0 {
            seen.peak_bytes = peak;
            seen.peak_after = after;
            seen.peak_before = r.at;
        }
        seen.read_max_bytes = seen.read_max_bytes.max(r.current);
        let minute = r.at.div_euclid(60);
        if minute != self.last_minute {
            seen.scraped_max_bytes = seen.scraped_max_bytes.max(working_set);
            self.last_minute = minute;
        }
    }
}

/// What one `observe` changed, for the counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Observed {
    /// Series made.
    pub added: usize,
    /// Series that took an earlier container's history.
    pub followed: usize,
    /// Series dropped because [`Params::max_series`] was reached (the longest unseen first).
    pub evicted: usize,
    /// Series dropped because none of their intervals is kept any more.
    pub expired: usize,
}

/// Every series, keyed (stored as a list: each series carries its key).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "StoredHistory", into = "StoredHistory")]
pub struct History {
    series: BTreeMap<SeriesKey, Series>,
}

#[derive(Serialize, Deserialize)]
struct StoredHistory {
    series: Vec<Series>,
}

impl From<StoredHistory> for History {
    fn from(s: StoredHistory) -> Self {
        History {
            series: s.series.into_iter().map(|s| (s.key.clone(), s)).collect(),
        }
    }
}

impl From<History> for StoredHistory {
    fn from(h: History) -> Self {
        StoredHistory {
            series: h.series.into_values().collect(),
        }
    }
}

impl History {
    /// Takes one reading of each cgroup (all at about the same time).
    pub fn observe(&mut self, readings: &[Reading], params: &Params) -> Observed {
        let mut done = Observed::default();
        for r in readings {
            if let Some(s) = self.series.get_mut(&r.key) {
                s.observe(r, params);
                continue;
            }
            let mut s = Series::new(r);
            s.observe(r, params);
            // A container of the same name in the same pod, not read now: this one's earlier
            // incarnation (a restart). Its history goes on here.
            if let Some(name) = &r.name {
                let older = self
                    .series
                    .iter()
                    .filter(|(k, o)| {
                        k.pod_uid == r.key.pod_uid
                            && k.container.is_some()
                            && o.name.as_deref() == Some(name.as_str())
                            && o.last_seen < r.at
                    })
                    .max_by_key(|(_, o)| o.last_seen)
                    .map(|(k, _)| k.clone());
                if let Some(older) = older.and_then(|k| self.series.remove(&k)) {
                    s.follow(older, params);
                    done.followed += 1;
                }
            }
            self.series.insert(r.key.clone(), s);
            done.added += 1;
        }
        let Some(now) = readings.iter().map(|r| r.at).max() else {
            return done;
        };
        let before = self.series.len();
        let keep_from = now.saturating_sub(params.window_s());
        self.series.retain(|_, s| s.last_seen > keep_from);
        done.expired = before - self.series.len();
        while self.series.len() > params.max_series {
            let Some(oldest) = self
                .series
                .iter()
                .min_by_key(|(_, s)| (s.last_seen, s.first_seen))
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            self.series.remove(&oldest);
            done.evicted += 1;
        }
        done
    }

    /// Records an OOM kill by oomwarden of `cgroup` (a pod or a container, relative to the
    /// cgroup root) at `at`: on its series and on every series below it. Returns how many.
    pub fn record_kill(&mut self, cgroup: &str, at: i64) -> usize {
        let cgroup = cgroup.trim_matches('/');
        let mut n = 0;
        for s in self.series.values_mut() {
            let below = s.cgroup == cgroup
                || s.cgroup
                    .strip_prefix(cgroup)
                    .is_some_and(|rest| rest.starts_with('/'));
            if below {
                let usage = s.windows.last().map_or(s.now.current_bytes, |w| {
                    w.seen.read_max_bytes.max(s.now.current_bytes)
                });
                s.push_kill(OomKill {
                    at,
                    usage_bytes: usage,
                    by: KilledBy::Oomwarden,
                });
                n += 1;
            }
        }
        n
    }

    /// Every series, in key order.
    pub fn series(&self) -> impl Iterator<Item = &Series> {
        self.series.values()
    }

    /// How many series.
    pub fn len(&self) -> usize {
        self.series.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    /// Histogram buckets kept over all series (what the history costs in memory, mostly).
    pub fn buckets(&self) -> usize {
        self.series.values().map(|s| s.unreclaimable.len()).sum()
    }
}

/// A byte count as a float.
#[allow(
    clippy::cast_precision_loss,
    reason = "memory sizes; a rounding of 1 in 2^53 is no matter"
)]
pub(crate) fn u64_f64(v: u64) -> f64 {
    v as f64
}
