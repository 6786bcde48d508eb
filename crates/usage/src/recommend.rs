//! From a container's history to a request and a limit, with the reason in words.
//!
//! - **Request**: the [`Params::request_percentile`] (0.95) of the unreclaimable usage
//!   (anonymous memory, shmem and the kernel's: what reclaim cannot take without swap),
//!   time-weighted over the history with its half-life, plus [`Params::request_margin`]
//!   (15 %). Page cache is left out on purpose: the kernel reclaims it before anything is
//!   killed, and the working set that metrics-server and VPA read counts its active part.
//! - **Limit**: the highest `memory.peak` of the intervals kept (the kernel's own high-water
//!   mark, which sees a spike of a millisecond), plus [`Params::limit_margin`] (15 %); after an
//!   OOM kill at least the usage then × [`Params::oom_bump_ratio`] or + [`Params::oom_min_bump`],
//!   whichever is more (VPA's rule); never below the request.
//!
//! Both are rounded up to a whole MiB, as people write them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::history::{History, KilledBy, Now, OomKill, PodRef, Seen, Series, u64_f64};
use crate::params::Params;

const MIB: u64 = 1024 * 1024;

/// One container's (or one pod cgroup's) history, its incarnations merged.
#[derive(Debug, Clone, PartialEq)]
pub struct Usage {
    /// The pod's UID.
    pub pod_uid: String,
    /// The container's name (or its cgroup's when the name is unknown); `None`: the pod cgroup.
    pub container: Option<String>,
    /// The pod, when known.
    pub pod: Option<PodRef>,
    /// The series merged (one per container incarnation the history still tells apart).
    pub series: Vec<Series>,
}

impl Usage {
    /// The latest numbers.
    pub fn now(&self) -> Now {
        self.series
            .iter()
            .max_by_key(|s| s.last_seen)
            .map(|s| s.now)
            .unwrap_or_default()
    }

    /// Whether the cgroup was read at the last reading of the history.
    pub fn last_seen(&self) -> i64 {
        self.series.iter().map(|s| s.last_seen).max().unwrap_or(0)
    }
}

/// Every pod and container of the history, incarnations of one container (same pod, same
/// name) together; pods in UID order, a pod's own cgroup before its containers.
pub fn usages(history: &History) -> Vec<Usage> {
    let mut by: BTreeMap<(String, Option<String>), Usage> = BTreeMap::new();
    for s in history.series() {
        let container = s
            .key
            .container
            .as_ref()
            .map(|id| s.name.clone().unwrap_or_else(|| id.clone()));
        let u = by
            .entry((s.key.pod_uid.clone(), container.clone()))
            .or_insert_with(|| Usage {
                pod_uid: s.key.pod_uid.clone(),
                container,
                pod: None,
                series: Vec::new(),
            });
        if s.pod.is_some() {
            u.pod.clone_from(&s.pod);
        }
        u.series.push(s.clone());
    }
    by.into_values().collect()
}

/// A recommendation and what it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Recommendation {
    /// The recommended request, bytes.
    pub request_bytes: u64,
    /// The recommended limit, bytes.
    pub limit_bytes: u64,
    /// What the readings of the whole history saw (the highest `memory.peak` kept and when,
    /// the highest reading, what a scrape a minute saw).
    #[serde(flatten)]
    pub seen: Seen,
    /// The percentile of the unreclaimable usage the request is fitted to.
    pub unreclaimable_percentile_bytes: u64,
    /// OOM kills in the history.
    pub oom_kills: usize,
    /// The floor the kills set on the limit, bytes (0 without kills).
    pub oom_floor_bytes: u64,
    /// Seconds of history.
    pub history_seconds: i64,
    /// The reason, in words.
    pub reason: String,
}

/// A container's incarnations merged: one histogram, what all their intervals saw, every
/// kill.
struct Merged {
    hist: crate::histogram::DecayingHistogram,
    seen: Option<Seen>,
    kills: Vec<OomKill>,
    history: i64,
}

fn merged(usage: &Usage, params: &Params) -> Merged {
    let mut hist = crate::histogram::DecayingHistogram::default();
    let mut seen: Option<Seen> = None;
    let mut kills: Vec<OomKill> = Vec::new();
    let mut first = i64::MAX;
    let mut last = 0i64;
    for s in &usage.series {
        hist.merge(&s.unreclaimable, params.half_life_s);
        for w in &s.windows {
            seen.get_or_insert_with(Seen::default).merge(&w.seen);
        }
        kills.extend(s.kills.iter().copied());
        first = first.min(s.first_seen);
        last = last.max(s.last_seen);
    }
    Merged {
        hist,
        seen,
        kills,
        history: last.saturating_sub(first),
    }
}

/// The recommendation for `usage`; `None` before its first reading.
pub fn recommend(usage: &Usage, params: &Params) -> Option<Recommendation> {
    let Merged {
        hist,
        seen,
        kills,
        history,
    } = merged(usage, params);
    let percentile = hist.percentile(&params.histogram, params.request_percentile)?;
    let seen = seen?;
    let request = round_up_mib(percentile * (1.0 + params.request_margin));
    let oom_floor = kills
        .iter()
        .map(|k| {
            let u = u64_f64(k.usage_bytes);
            round_up_mib((u * params.oom_bump_ratio).max(u + u64_f64(params.oom_min_bump)))
        })
        .max()
        .unwrap_or(0);
    let from_peak = round_up_mib(u64_f64(seen.peak_bytes) * (1.0 + params.limit_margin));
    let mut r = Recommendation {
        request_bytes: request,
        limit_bytes: from_peak.max(oom_floor).max(request),
        seen,
        unreclaimable_percentile_bytes: round_up_mib(percentile),
        oom_kills: kills.len(),
        oom_floor_bytes: oom_floor,
        history_seconds: history,
        reason: String::new(),
    };
    r.reason = reason(&r, &kills, params);
    Some(r)
}

/// The reason in words.
fn reason(r: &Recommendation, kills: &[OomKill], params: &Params) -> String {
    let mut reason = format!(
        "request: {}th percentile of anon+shmem+kernel over {} = {} + {:.0} %",
        pct(params.request_percentile),
        span(r.history_seconds),
        mib(r.unreclaimable_percentile_bytes),
        params.request_margin * 100.0,
    );
    reason.push_str(&format!(
        "; limit: peaked at {} {}",
        mib(r.seen.peak_bytes),
        when(r.seen.peak_after, r.seen.peak_before),
    ));
    if r.seen.peak_bytes > r.seen.scraped_max_bytes {
        reason.push_str(&format!(
            " (the {} s readings saw at most {}, the 1-minute samples a Prometheus sees never passed {})",
            params.interval_s,
            mib(r.seen.read_max_bytes),
            mib(r.seen.scraped_max_bytes),
        ));
    }
    reason.push_str(&format!(" + {:.0} %", params.limit_margin * 100.0));
    if let Some(k) = kills.iter().max_by_key(|k| k.at) {
        let by = |b: KilledBy| kills.iter().filter(|k| k.by == b).count();
        reason.push_str(&format!(
            "; OOM-killed {} time{} ({} by the kernel, {} by oomwarden), last {} using {}: at least {}",
            kills.len(),
            if kills.len() == 1 { "" } else { "s" },
            by(KilledBy::Kernel),
            by(KilledBy::Oomwarden),
            stamp(k.at),
            mib(k.usage_bytes),
            mib(r.oom_floor_bytes),
        ));
    }
    if r.history_seconds < params.aggregation_s {
        reason.push_str(&format!(
            "; only {} of history (VPA waits for {} days)",
            span(r.history_seconds),
            params.window_s() / 86_400
        ));
    }
    reason
}

/// Rounds up to a whole MiB.
fn round_up_mib(bytes: f64) -> u64 {
    if bytes.is_nan() || bytes <= 0.0 {
        return 0;
    }
    let mibs = (bytes / u64_f64(MIB)).ceil();
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "positive and clamped to u64's range of MiB"
    )]
    let mibs = mibs.min(u64_f64(u64::MAX / MIB)) as u64;
    mibs.saturating_mul(MIB)
}

/// Bytes in MiB for the reason text.
pub fn mib(bytes: u64) -> String {
    let m = u64_f64(bytes) / u64_f64(MIB);
    if m >= 10.0 || m == 0.0 {
        format!("{m:.0} MiB")
    } else {
        format!("{m:.1} MiB")
    }
}

fn pct(p: f64) -> String {
    let v = p * 100.0;
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// A duration in words: `2 h 13 min`, `40 s`.
fn span(s: i64) -> String {
    match s {
        ..60 => format!("{} s", s.max(0)),
        60..3600 => format!("{} min", s / 60),
        3600..86_400 => format!("{} h {} min", s / 3600, (s % 3600) / 60),
        _ => format!("{} d {} h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// A time, UTC.
pub fn stamp(at: i64) -> String {
    chrono::DateTime::from_timestamp(at, 0).map_or_else(
        || format!("@{at}"),
        |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
    )
}

fn when(after: Option<i64>, before: i64) -> String {
    match after {
        Some(a) => format!("between {} and {}", stamp(a), stamp(before)),
        None => format!(
            "at some time before {} (the kernel's mark since the container started)",
            stamp(before)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Peak, Reading, SeriesKey};

    fn reading(at: i64, current_mib: u64, peak_mib: u64, file_mib: u64) -> Reading {
        Reading {
            key: SeriesKey {
                pod_uid: "p".into(),
                container: Some("c1".into()),
            },
            cgroup: "kubepods/burstable/podp/c1".into(),
            cgroup_id: 7,
            name: Some("app".into()),
            pod: None,
            at,
            current: current_mib * MIB,
            peak: Some(Peak::SinceReset(peak_mib * MIB)),
            file: file_mib * MIB,
            shmem: 0,
            inactive_file: file_mib * MIB / 2,
            swap: 0,
            max: None,
            oom_kills: Some(0),
        }
    }

    #[test]
    fn a_spike_between_readings_sets_the_limit_and_the_request_follows_the_steady_use() {
        let params = Params::default();
        let mut h = History::default();
        // 100 MiB steady, 40 MiB of it page cache; one reading's interval held a 2 s spike to
        // 300 MiB that no reading saw.
        for i in 0..360 {
            let peak = if i == 200 { 300 } else { 101 };
            h.observe(&[reading(1_000_000 + i * 10, 100, peak, 40)], &params);
        }
        let u = usages(&h);
        assert_eq!(u.len(), 1);
        let r = recommend(&u[0], &params).unwrap();
        assert_eq!(r.seen.peak_bytes, 300 * MIB);
        assert_eq!(r.limit_bytes, 345 * MIB, "300 MiB + 15 %");
        // Unreclaimable: 60 MiB; its bucket's end, + 15 %.
        assert!(
            r.request_bytes >= 69 * MIB && r.request_bytes <= 73 * MIB,
            "{}",
            r.request_bytes
        );
        assert_eq!(r.seen.read_max_bytes, 100 * MIB);
        assert!(
            r.reason.contains("peaked at 300 MiB between"),
            "{}",
            r.reason
        );
        assert!(r.reason.contains("never passed 80 MiB"), "{}", r.reason);
        assert!(r.reason.contains("only 59 min of history"), "{}", r.reason);
    }

    #[test]
    fn an_oom_kill_raises_the_limit_as_vpa_does() {
        let params = Params::default();
        let mut h = History::default();
        h.observe(&[reading(1_000_000, 100, 120, 0)], &params);
        let mut r2 = reading(1_000_010, 100, 200, 0);
        r2.oom_kills = Some(1);
        h.observe(&[r2], &params);
        let r = recommend(&usages(&h)[0], &params).unwrap();
        // 200 MiB × 1.2 = 240 < 200 + 100: 300 MiB.
        assert_eq!(r.oom_floor_bytes, 300 * MIB);
        assert_eq!(r.limit_bytes, 300 * MIB);
        assert_eq!(r.oom_kills, 1);
        assert!(
            r.reason
                .contains("OOM-killed 1 time (1 by the kernel, 0 by oomwarden)"),
            "{}",
            r.reason
        );
        // oomwarden's kill of the pod counts on the container too.
        assert_eq!(h.record_kill("kubepods/burstable/podp", 1_000_020), 1);
        let r = recommend(&usages(&h)[0], &params).unwrap();
        assert_eq!(r.oom_kills, 2);
    }

    #[test]
    fn a_restarted_container_follows_its_predecessor_and_its_peak_counts_again() {
        let params = Params::default();
        let mut h = History::default();
        let mut a = reading(1_000_000, 100, 500, 0);
        a.peak = Some(Peak::SinceCreation(500 * MIB));
        h.observe(&[a], &params);
        // A new container (new ID) of the same name: since-creation marks start again.
        let mut b = reading(1_000_030, 50, 60, 0);
        b.key.container = Some("c2".into());
        b.cgroup_id = 8;
        b.peak = Some(Peak::SinceCreation(60 * MIB));
        let seen = h.observe(&[b], &params);
        assert_eq!(seen.followed, 1);
        assert_eq!(h.len(), 1, "the predecessor's series is taken over");
        let s = h.series().next().unwrap();
        assert_eq!(s.restarts, 1);
        assert_eq!(s.first_seen, 1_000_000);
        let r = recommend(&usages(&h)[0], &params).unwrap();
        assert_eq!(
            r.seen.peak_bytes,
            500 * MIB,
            "the predecessor's peak is kept"
        );
        assert!(r.reason.contains("at some time before"), "{}", r.reason);
    }

    #[test]
    fn since_creation_marks_count_only_when_they_rise() {
        let params = Params::default();
        let mut h = History::default();
        let mut at = 2_000_000;
        for (current, mark) in [(100, 400), (100, 400), (100, 450), (100, 450)] {
            let mut r = reading(at, current, 0, 0);
            r.peak = Some(Peak::SinceCreation(mark * MIB));
            h.observe(&[r], &params);
            at += 10;
        }
        let s = h.series().next().unwrap();
        assert!(!s.peak_resets);
        let w = s.windows.last().unwrap();
        assert_eq!(w.seen.peak_bytes, 450 * MIB);
        assert_eq!(
            w.seen.peak_after,
            Some(2_000_010),
            "the rise was seen between these readings"
        );
        assert_eq!(w.seen.peak_before, 2_000_020);
    }

    #[test]
    fn windows_and_series_age_out_and_the_count_is_bounded() {
        let params = Params {
            max_series: 2,
            ..Params::default()
        };
        let mut h = History::default();
        let mut r = reading(0, 10, 10, 0);
        for day in 0..10 {
            r.at = day * 86_400;
            h.observe(std::slice::from_ref(&r), &params);
        }
        assert_eq!(h.series().next().unwrap().windows.len(), 8);
        let mut others = Vec::new();
        for i in 0..3 {
            let mut o = reading(10 * 86_400 + i, 10, 10, 0);
            o.key.container = Some(format!("x{i}"));
            o.name = Some(format!("x{i}"));
            others.push(o);
        }
        let seen = h.observe(&others, &params);
        assert_eq!(seen.evicted, 2);
        assert_eq!(h.len(), 2);
        // Nine days without a reading: expired.
        let mut late = reading(19 * 86_400 + 5, 10, 10, 0);
        late.key.container = Some("x2".into());
        late.name = Some("x2".into());
        let seen = h.observe(&[late], &params);
        assert_eq!(seen.expired, 1);
    }
}
