//! The usage history (`usageHistory`): after a cycle, once every interval, every pod cgroup and
//! each of its containers is read (`memory.current`, `memory.stat`, `memory.swap.current`,
//! `memory.max`, `memory.events` and the high-water mark through [`PeakMarks`]) into an
//! [`oomwarden_usage::History`]; oomwarden's own kills are added from their records. The
//! history is saved to `<stateDir>/usage.json` every `saveEvery` and at the stop (a temporary
//! file renamed over the last: a crash or a full disk leaves the previous one), loaded at the
//! start, served on the action API (`usage`) and exported as metrics.
//!
//! Its reads are no cycle's: they are kept out of the recording.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use oomwarden_cgroupfs::{CgroupFs, Mark, PeakMarks};
use oomwarden_config::UsageHistorySettings;
use oomwarden_model::Limit;
use oomwarden_model::{ActionRecord, Identities, Outcome, RecordKind};
use oomwarden_usage::{History, Params, Peak, PodRef, Reading, SeriesKey, Stored};

use crate::engine::Engine;
use crate::metrics::Metrics;
use crate::statedir::StateDir;

/// The history file's temporary name while it is written.
const TMP_NAME: &str = "usage.json.tmp";
/// A history file larger than this is not read (4,096 series take about 4 MiB).
const MAX_FILE_BYTES: u64 = 64 << 20;

/// The history shared with the action API.
pub type SharedUsage = Arc<Mutex<UsageState>>;

/// What the API serves: the history and the parameters it is kept with.
#[derive(Debug, Default)]
pub struct UsageState {
    /// The history.
    pub history: History,
    /// Its parameters.
    pub params: Params,
}

/// The usage history between cycles.
#[derive(Debug)]
pub struct UsageWatch {
    settings: UsageHistorySettings,
    shared: SharedUsage,
    marks: PeakMarks,
    /// The most `memory.peak` marks kept open, whatever `maxSeries` says (the descriptor
    /// budget).
    marks_budget: usize,
    dir: Option<StateDir>,
    next_read_ns: u64,
    next_save_ns: u64,
    dirty: bool,
    save_failed: bool,
}

impl UsageWatch {
    /// The watch, its history loaded from `dir` (a file of another version or unreadable is
    /// kept aside as `usage.json.bad` and the history starts anew, said in the log), keeping
    /// at most `marks_budget` marks open (and `maxSeries`); `None` when
    /// `usageHistory.enabled` is false.
    pub fn start(
        settings: &UsageHistorySettings,
        dir: Option<&StateDir>,
        marks_budget: usize,
        now_ns: u64,
    ) -> Option<UsageWatch> {
        if !settings.enabled {
            return None;
        }
        let history = dir.map(load).unwrap_or_default();
        tracing::info!(
            series = history.len(),
            interval = ?Duration::from_secs(u64::try_from(settings.params.interval_s).unwrap_or(10)),
            "usage history kept for oomwarden rightsize"
        );
        Some(UsageWatch {
            settings: *settings,
            shared: Arc::new(Mutex::new(UsageState {
                history,
                params: settings.params,
            })),
            marks: PeakMarks::new(settings.params.max_series.min(marks_budget)),
            marks_budget,
            dir: dir.cloned(),
            next_read_ns: now_ns,
            next_save_ns: now_ns.saturating_add(nanos(settings.save_every)),
            dirty: false,
            save_failed: false,
        })
    }

    /// The history, for the action API.
    pub fn shared(&self) -> SharedUsage {
        Arc::clone(&self.shared)
    }

    /// The settings it runs with.
    pub fn settings(&self) -> &UsageHistorySettings {
        &self.settings
    }

    /// New settings from a reload: the history is kept, the parameters replaced (a shorter
    /// span or a lower `maxSeries` takes effect at the next reading).
    pub fn set_settings(&mut self, settings: UsageHistorySettings) {
        self.settings = settings;
        self.marks
            .set_capacity(settings.params.max_series.min(self.marks_budget));
        self.shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .params = settings.params;
    }

    /// After a cycle: reads every pod and container when the interval is due, saves when
    /// `saveEvery` is. Whether it read.
    pub fn poll(&mut self, engine: &Engine, now_ns: u64, now_unix: i64) -> bool {
        let due = now_ns >= self.next_read_ns;
        if due {
            let interval =
                Duration::from_secs(u64::try_from(self.settings.params.interval_s).unwrap_or(10));
            self.next_read_ns = now_ns.saturating_add(nanos(interval));
            let readings = read_all(
                engine.cgroups(),
                &engine.collector().candidate_dirs(),
                &engine.identities(),
                &mut self.marks,
                now_unix,
            );
            let mut state = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
            let params = state.params;
            let observed = state.history.observe(&readings, &params);
            export(&engine.metrics(), &state.history, &params, observed);
            drop(state);
            self.dirty = true;
        }
        if now_ns >= self.next_save_ns {
            self.next_save_ns = now_ns.saturating_add(nanos(self.settings.save_every));
            self.save(now_unix, &engine.metrics());
        }
        due
    }

    /// Adds oomwarden's kill of a record to the history.
    pub fn record(&mut self, record: &ActionRecord, now_unix: i64) {
        if record.kind != RecordKind::Oomwarden
            || !matches!(record.outcome, Outcome::Killed | Outcome::NotVerified)
        {
            return;
        }
        let Some(victim) = &record.victim else {
            return;
        };
        let dir = victim
            .strip_prefix(oomwarden_cgroupfs::DEFAULT_CGROUP_ROOT)
            .unwrap_or(victim);
        let mut state = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        if state.history.record_kill(dir, now_unix) > 0 {
            self.dirty = true;
        }
    }

    /// Writes the history when it changed since the last save.
    pub fn save(&mut self, now_unix: i64, metrics: &Metrics) {
        if !self.dirty {
            return;
        }
        let Some(dir) = &self.dir else {
            return;
        };
        let text = {
            let state = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
            oomwarden_usage::to_json(&state.history, &state.params, now_unix)
        };
        let written = text
            .map_err(std::io::Error::other)
            .and_then(|text| write_atomically(dir, text.as_bytes()));
        match written {
            Ok(()) => {
                self.dirty = false;
                if self.save_failed {
                    tracing::info!(file = %dir.join(oomwarden_usage::FILE_NAME).display(), "usage history saved again");
                }
                self.save_failed = false;
            }
            Err(e) => {
                metrics.usage_save_failed();
                // Said once until it works again: the last saved file stays as it was.
                if !self.save_failed {
                    tracing::warn!(
                        file = %dir.join(oomwarden_usage::FILE_NAME).display(),
                        error = %e,
                        "cannot save the usage history; the last saved one is kept and the next save tries again"
                    );
                }
                self.save_failed = true;
            }
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// `usage.json` from `dir`: missing is an empty history; unreadable, too large or of another
/// version is kept aside (`usage.json.bad`) and said.
fn load(dir: &StateDir) -> History {
    let name = oomwarden_usage::FILE_NAME;
    let path = dir.join(name);
    let text = match dir.open_file(name, rustix::fs::OFlags::RDONLY) {
        Ok(f) => {
            let mut text = String::new();
            match f.take(MAX_FILE_BYTES + 1).read_to_string(&mut text) {
                Ok(n) if u64::try_from(n).unwrap_or(u64::MAX) > MAX_FILE_BYTES => {
                    Err(format!("larger than {MAX_FILE_BYTES} bytes"))
                }
                Ok(_) => Ok(text),
                Err(e) => Err(e.to_string()),
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return History::default(),
        Err(e) => Err(e.to_string()),
    };
    match text.and_then(|t| oomwarden_usage::from_json(&t).map_err(|e| e.to_string())) {
        Ok(Stored { history, .. }) => history,
        Err(reason) => {
            let aside = format!("{name}.bad");
            let kept = dir.rename(name, &aside).is_ok();
            tracing::warn!(
                file = %path.display(),
                reason = %reason,
                kept_as = if kept { aside.as_str() } else { "(could not be moved)" },
                "the usage history cannot be read; starting a new one"
            );
            History::default()
        }
    }
}

/// Writes `usage.json` through a temporary file, synced, then renamed over the old one.
fn write_atomically(dir: &StateDir, bytes: &[u8]) -> std::io::Result<()> {
    dir.remove(TMP_NAME)?;
    let written = dir.create_new(TMP_NAME).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    match written.and_then(|()| dir.rename(TMP_NAME, oomwarden_usage::FILE_NAME)) {
        Ok(()) => Ok(()),
        Err(e) => {
            // Never leave a half-written copy behind.
            let _ = dir.remove(TMP_NAME);
            Err(e)
        }
    }
}

/// One reading of every pod cgroup among `pods` (the layout's candidates that are pods) and of
/// each of their containers (the runtime's sandboxes left out when the runtime names them). A
/// cgroup gone between listing and reading is left out.
pub fn read_all(
    cgroups: &CgroupFs,
    pods: &[String],
    identities: &Identities,
    marks: &mut PeakMarks,
    now_unix: i64,
) -> Vec<Reading> {
    let mut out = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for pod_dir in pods {
        let info = oomwarden_kube::decode_cgroup_path(pod_dir);
        let Some(uid) = info.pod_uid else {
            continue;
        };
        let pod = identities.pod(&uid).map(|p| {
            let w = oomwarden_kube::workload(&p.namespace, &p.name, &p.labels);
            PodRef {
                namespace: p.namespace.clone(),
                name: p.name.clone(),
                owner_kind: format!("{:?}", w.kind),
                owner_name: w.name,
            }
        });
        let key = SeriesKey {
            pod_uid: uid.clone(),
            container: None,
        };
        if let Some(r) = read_one(cgroups, pod_dir, key, None, pod.clone(), marks, now_unix) {
            out.push(r);
            seen.insert(pod_dir.clone());
        }
        let Ok(children) = cgroups.children(pod_dir) else {
            continue;
        };
        for child in children {
            let dir = oomwarden_cgroupfs::join(pod_dir, &child);
            let id = oomwarden_kube::decode_cgroup_path(&dir).container_id;
            if id.as_deref().is_some_and(|id| identities.is_sandbox(id)) {
                continue;
            }
            let name = id
                .as_deref()
                .and_then(|id| identities.container(id))
                .map(|c| c.name.clone());
            let key = SeriesKey {
                pod_uid: uid.clone(),
                container: Some(id.unwrap_or_else(|| child.clone())),
            };
            if let Some(r) = read_one(cgroups, &dir, key, name, pod.clone(), marks, now_unix) {
                out.push(r);
                seen.insert(dir);
            }
        }
    }
    marks.retain(&seen.iter().map(String::as_str).collect());
    out
}

fn read_one(
    cgroups: &CgroupFs,
    dir: &str,
    key: SeriesKey,
    name: Option<String>,
    pod: Option<PodRef>,
    marks: &mut PeakMarks,
    at: i64,
) -> Option<Reading> {
    let id = cgroups.cgroup_id(dir).ok()?;
    let current = cgroups.memory_current(dir).ok()?;
    let stat = cgroups.memory_stat(dir).unwrap_or_default();
    let field = |k: &str| stat.iter().find(|(n, _)| n == k).map_or(0, |(_, v)| *v);
    let peak = match marks.read(cgroups, dir, id) {
        Ok(Some(Mark::SinceReset(v))) => Some(Peak::SinceReset(v)),
        Ok(Some(Mark::SinceCreation(v))) => Some(Peak::SinceCreation(v)),
        Ok(None) | Err(_) => None,
    };
    let oom_kills = cgroups
        .memory_events(dir)
        .ok()
        .and_then(|e| e.iter().find(|(n, _)| n == "oom_kill").map(|(_, v)| *v));
    Some(Reading {
        key,
        cgroup: dir.to_owned(),
        cgroup_id: id,
        name,
        pod,
        at,
        current,
        peak,
        file: field("file"),
        shmem: field("shmem"),
        inactive_file: field("inactive_file"),
        swap: cgroups.memory_swap_current(dir).unwrap_or(0),
        max: match cgroups.memory_max(dir) {
            Ok(Limit::Bytes(b)) => Some(b),
            _ => None,
        },
        oom_kills,
    })
}

/// The most containers whose peak and recommendations are exported as metrics: a node's
/// worth (110 pods of a few containers) with room, and a bound on the series a node adds to a
/// fleet's Prometheus.
pub const MAX_EXPORTED_CONTAINERS: usize = 1000;

fn export(
    metrics: &Metrics,
    history: &History,
    params: &Params,
    observed: oomwarden_usage::Observed,
) {
    metrics.usage_history(history.len(), observed.evicted, observed.expired);
    let usages = oomwarden_usage::usages(history);
    // Containers seen at the last reading only: a gone pod's series stay in the history (a
    // restart takes them over) but not in the exposition.
    let newest = usages
        .iter()
        .map(oomwarden_usage::Usage::last_seen)
        .max()
        .unwrap_or(0);
    let rows: Vec<_> = usages
        .iter()
        .filter(|u| u.container.is_some() && u.last_seen() == newest)
        .take(MAX_EXPORTED_CONTAINERS)
        .filter_map(|u| {
            let r = oomwarden_usage::recommend(u, params)?;
            Some(crate::metrics::ContainerUsage {
                pod: u.pod.clone().unwrap_or_default(),
                pod_uid: u.pod_uid.clone(),
                container: u.container.clone().unwrap_or_default(),
                recommendation: r,
            })
        })
        .collect();
    metrics.container_usage(&rows);
}

#[cfg(test)]
mod tests {
    use super::*;
    use oomwarden_model::{ContainerIdentity, PodIdentity};

    const UID: &str = "6b86b273-ff34-4fce-96e3-6b3e0e2d5a2f";
    const APP: &str = "1111111111111111111111111111111111111111111111111111111111111111";
    const PAUSE: &str = "2222222222222222222222222222222222222222222222222222222222222222";
    const MIB: u64 = 1 << 20;

    fn cgroup(root: &std::path::Path, dir: &str, current: u64, peak: u64, file: u64, kills: u64) {
        let d = root.join(dir);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("memory.current"), format!("{current}\n")).unwrap();
        std::fs::write(d.join("memory.peak"), format!("{peak}\n")).unwrap();
        std::fs::write(
            d.join("memory.stat"),
            format!(
                "anon {}\nfile {file}\nshmem 0\ninactive_file {}\n",
                current - file,
                file / 2
            ),
        )
        .unwrap();
        std::fs::write(
            d.join("memory.events"),
            format!("low 0\nhigh 0\nmax 0\noom 0\noom_kill {kills}\n"),
        )
        .unwrap();
        std::fs::write(d.join("memory.max"), "max\n").unwrap();
    }

    fn identities() -> Identities {
        let mut ids = Identities::default();
        ids.pods.insert(
            UID.into(),
            PodIdentity {
                uid: UID.into(),
                namespace: "shop".into(),
                name: "web-7d9f8-x2x2x".into(),
                labels: [("pod-template-hash".to_owned(), "7d9f8".to_owned())].into(),
                annotations: Default::default(),
                containers: vec!["app".into()],
                source: oomwarden_model::IdentitySource::Cri,
            },
        );
        ids.containers.insert(
            APP.into(),
            ContainerIdentity {
                id: APP.into(),
                name: "app".into(),
                image: String::new(),
                pod_uid: UID.into(),
            },
        );
        ids.sandboxes.insert(PAUSE.into(), UID.into());
        ids
    }

    #[test]
    fn pods_and_containers_are_read_named_and_the_sandbox_left_out() {
        let root = tempfile::tempdir().unwrap();
        let pod = format!("kubepods/burstable/pod{UID}");
        cgroup(root.path(), &pod, 120 * MIB, 130 * MIB, 20 * MIB, 0);
        cgroup(
            root.path(),
            &format!("{pod}/{APP}"),
            100 * MIB,
            300 * MIB,
            20 * MIB,
            1,
        );
        cgroup(root.path(), &format!("{pod}/{PAUSE}"), MIB, MIB, 0, 0);
        // Not a pod: left out.
        cgroup(root.path(), "kubepods/burstable/other", MIB, MIB, 0, 0);
        let fs = CgroupFs::new(root.path());
        let mut marks = PeakMarks::new(16);
        let dirs = vec![pod.clone(), "kubepods/burstable/other".to_owned()];
        let readings = read_all(&fs, &dirs, &identities(), &mut marks, 1_700_000_000);
        assert_eq!(readings.len(), 2, "{readings:?}");
        let app = readings.iter().find(|r| r.key.container.is_some()).unwrap();
        assert_eq!(app.name.as_deref(), Some("app"));
        assert_eq!(app.pod.as_ref().unwrap().owner_kind, "Deployment");
        assert_eq!(app.pod.as_ref().unwrap().owner_name, "web");
        assert_eq!(app.peak, Some(Peak::SinceCreation(300 * MIB)));
        assert_eq!(app.oom_kills, Some(1));
        assert_eq!(app.unreclaimable(), 80 * MIB);
        assert_eq!(app.max, None);
        assert_eq!(
            marks.len(),
            2,
            "the pod's and the container's marks are kept open"
        );
        let mut h = History::default();
        h.observe(&readings, &Params::default());
        let s = h.series().find(|s| s.key.container.is_some()).unwrap();
        assert_eq!(s.kills.len(), 1, "a kill before the first reading counts");
        // A pod gone between listing and reading is no error and no reading.
        std::fs::remove_dir_all(root.path().join(&pod)).unwrap();
        assert!(read_all(&fs, &dirs, &identities(), &mut marks, 1_700_000_010).is_empty());
        assert!(marks.is_empty(), "the gone cgroups' files are closed");
    }

    #[test]
    fn the_file_is_written_whole_and_an_unreadable_one_is_kept_aside() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("state");
        let dir = StateDir::open(&path, &mut Vec::new()).unwrap();
        assert!(load(&dir).is_empty(), "no file: an empty history");
        let mut h = History::default();
        let fs_root = tempfile::tempdir().unwrap();
        cgroup(
            fs_root.path(),
            &format!("kubepods/pod{UID}"),
            10 * MIB,
            10 * MIB,
            0,
            0,
        );
        let fs = CgroupFs::new(fs_root.path());
        let readings = read_all(
            &fs,
            &[format!("kubepods/pod{UID}")],
            &Identities::default(),
            &mut PeakMarks::new(4),
            1_700_000_000,
        );
        h.observe(&readings, &Params::default());
        let text = oomwarden_usage::to_json(&h, &Params::default(), 1_700_000_001).unwrap();
        write_atomically(&dir, text.as_bytes()).unwrap();
        assert!(!dir.exists(TMP_NAME));
        assert_eq!(load(&dir), h);
        std::fs::write(path.join(oomwarden_usage::FILE_NAME), "{\"version\":9}").unwrap();
        assert!(load(&dir).is_empty());
        assert!(
            dir.exists("usage.json.bad"),
            "the unreadable file is kept for a person to look at"
        );
        assert!(!dir.exists(oomwarden_usage::FILE_NAME));
    }

    fn settings() -> UsageHistorySettings {
        UsageHistorySettings::default()
    }

    #[test]
    fn only_the_containers_of_the_last_reading_are_exported() {
        let root = tempfile::tempdir().unwrap();
        let pod = format!("kubepods/burstable/pod{UID}");
        cgroup(root.path(), &pod, 120 * MIB, 130 * MIB, 0, 0);
        cgroup(
            root.path(),
            &format!("{pod}/{APP}"),
            100 * MIB,
            300 * MIB,
            0,
            0,
        );
        let fs = CgroupFs::new(root.path());
        let mut marks = PeakMarks::new(16);
        let params = Params::default();
        let mut h = History::default();
        let mut read = |h: &mut History, at| {
            let readings = read_all(
                &fs,
                std::slice::from_ref(&pod),
                &identities(),
                &mut marks,
                at,
            );
            h.observe(&readings, &params);
        };
        read(&mut h, 1_700_000_000);
        let metrics = Metrics::new();
        export(&metrics, &h, &params, oomwarden_usage::Observed::default());
        let text = metrics.encode();
        assert!(
            text.contains("oomwarden_container_memory_peak_bytes{namespace=\"shop\",pod=\"web-7d9f8-x2x2x\",container=\"app\",workload_kind=\"Deployment\",workload=\"web\"}"),
            "{text}"
        );
        assert!(text.contains("oomwarden_usage_history_series 2"), "{text}");
        // The container is gone at the next reading: its series stays in the history, not in
        // the exposition.
        std::fs::remove_dir_all(root.path().join(format!("{pod}/{APP}"))).unwrap();
        read(&mut h, 1_700_000_010);
        export(&metrics, &h, &params, oomwarden_usage::Observed::default());
        assert_eq!(h.len(), 2);
        assert!(!metrics.encode().contains("container=\"app\""));
    }

    #[test]
    fn a_failed_save_keeps_the_last_file_and_is_counted_then_retried() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("state");
        let dir = StateDir::open(&path, &mut Vec::new()).unwrap();
        let metrics = Metrics::new();
        let mut watch = UsageWatch::start(&settings(), Some(&dir), usize::MAX, 0).unwrap();
        // Nothing read yet: nothing to save.
        watch.save(1_700_000_000, &metrics);
        assert!(!dir.exists(oomwarden_usage::FILE_NAME));
        // oomwarden's kill of a pod joins its series.
        let fs_root = tempfile::tempdir().unwrap();
        let pod = format!("kubepods/pod{UID}");
        cgroup(fs_root.path(), &pod, 10 * MIB, 10 * MIB, 0, 0);
        let readings = read_all(
            &CgroupFs::new(fs_root.path()),
            std::slice::from_ref(&pod),
            &Identities::default(),
            &mut PeakMarks::new(4),
            1_700_000_000,
        );
        watch
            .shared()
            .lock()
            .unwrap()
            .history
            .observe(&readings, &Params::default());
        let mut record =
            ActionRecord::empty(RecordKind::Oomwarden, Outcome::Killed, String::new(), 0);
        record.victim = Some(format!("/sys/fs/cgroup/{pod}"));
        watch.record(&record, 1_700_000_005);
        // A dry run is no kill.
        let mut dry = record.clone();
        dry.outcome = Outcome::DryRun;
        watch.record(&dry, 1_700_000_006);
        let kills = |w: &UsageWatch| {
            w.shared()
                .lock()
                .unwrap()
                .history
                .series()
                .map(|s| s.kills.len())
                .sum::<usize>()
        };
        assert_eq!(kills(&watch), 1);
        // The temporary name taken by a directory: the write fails, nothing is left behind.
        std::fs::create_dir(path.join(TMP_NAME)).unwrap();
        watch.save(1_700_000_010, &metrics);
        assert!(!dir.exists(oomwarden_usage::FILE_NAME));
        assert!(
            metrics
                .encode()
                .contains("oomwarden_usage_history_save_failures_total 1")
        );
        std::fs::remove_dir(path.join(TMP_NAME)).unwrap();
        watch.save(1_700_000_020, &metrics);
        assert_eq!(load(&dir), watch.shared().lock().unwrap().history);
        // A reload's parameters reach what the API serves; the history is kept.
        let mut other = settings();
        other.params.request_percentile = 0.8;
        watch.set_settings(other);
        assert_eq!(
            watch.shared().lock().unwrap().params.request_percentile,
            0.8
        );
        assert_eq!(kills(&watch), 1);
        // Turned off: no watch at all.
        other.enabled = false;
        assert!(UsageWatch::start(&other, Some(&dir), usize::MAX, 0).is_none());
        // Started again: the saved history is loaded.
        let again = UsageWatch::start(&settings(), Some(&dir), usize::MAX, 0).unwrap();
        assert_eq!(kills(&again), 1);
    }
}
