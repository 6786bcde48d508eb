//! What users compute instead, from samples a scrape takes: a VPA-style recommendation with
//! VPA's documented defaults, and the seed's PromQL (`max_over_time` and
//! `quantile_over_time(0.95, …)` over `[7d:5m]`). Used to compare `rightsize` with them on the
//! same recording (docs/forensics.md, "rightsize against VPA and PromQL").

use crate::histogram::{DecayingHistogram, HistogramOptions};
use crate::history::u64_f64;

/// VPA's recommender defaults for memory (`pkg/recommender`, the seed's table).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VpaOptions {
    /// `memoryHistogramOptions`.
    pub histogram: HistogramOptions,
    /// `MemoryHistogramDecayHalfLife`: 24 h.
    pub half_life_s: i64,
    /// `memoryAggregationInterval`: 24 h.
    pub aggregation_s: i64,
    /// `--target-memory-percentile`: 0.9.
    pub target_percentile: f64,
    /// `--recommendation-upper-bound-memory-percentile`: 0.95 (without the confidence
    /// multiplier, which only widens it).
    pub upper_percentile: f64,
    /// `--recommendation-margin-fraction`: 0.15.
    pub margin: f64,
    /// `oomBumpUpRatio`: 1.2.
    pub oom_bump_ratio: f64,
    /// `oomMinBumpUp`: 100 MiB.
    pub oom_min_bump: u64,
}

impl Default for VpaOptions {
    fn default() -> Self {
        VpaOptions {
            histogram: HistogramOptions::VPA_MEMORY,
            half_life_s: 86_400,
            aggregation_s: 86_400,
            target_percentile: 0.9,
            upper_percentile: 0.95,
            margin: 0.15,
            oom_bump_ratio: 1.2,
            oom_min_bump: 100 * 1024 * 1024,
        }
    }
}

/// A VPA-style recommendation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Vpa {
    /// `target` (the request), bytes, before `--pod-recommendation-min-memory-mb` (250 MiB a
    /// pod, which would hide every difference on small containers).
    pub target: f64,
    /// `upperBound` without the confidence multiplier.
    pub upper: f64,
}

/// VPA's recommendation from working-set samples `(Unix seconds, bytes)` in time order and OOM
/// kills `(Unix seconds, request bytes)`: one peak per aggregation window (the first window
/// starts at the first sample, as `ContainerState.addMemorySample` shifts `WindowEnd`), each
/// added at the window's end with weight 1 to a decaying histogram; an OOM kill adds
/// `max(used × 1.2, used + 100 MiB)` to its window, `used` being the larger of the request and
/// the window's peak so far (`RecordOOM`). `None` without samples.
pub fn vpa(samples: &[(i64, u64)], ooms: &[(i64, u64)], o: &VpaOptions) -> Option<Vpa> {
    let first = samples.first()?.0;
    let interval = o.aggregation_s.max(1);
    let window_end = |t: i64| first + ((t - first).div_euclid(interval) + 1) * interval;
    let mut peaks: std::collections::BTreeMap<i64, f64> = std::collections::BTreeMap::new();
    for (t, v) in samples {
        let p = peaks.entry(window_end(*t)).or_insert(0.0);
        *p = p.max(u64_f64(*v));
    }
    for (t, request) in ooms {
        let end = window_end(*t);
        let used = u64_f64(*request).max(peaks.get(&end).copied().unwrap_or(0.0));
        let needed = (used + u64_f64(o.oom_min_bump)).max(used * o.oom_bump_ratio);
        let p = peaks.entry(end).or_insert(0.0);
        *p = p.max(needed);
    }
    let mut h = DecayingHistogram::default();
    for (end, peak) in &peaks {
        h.add(&o.histogram, *peak, 1.0, *end, o.half_life_s);
    }
    Some(Vpa {
        target: h.percentile(&o.histogram, o.target_percentile)? * (1.0 + o.margin),
        upper: h.percentile(&o.histogram, o.upper_percentile)? * (1.0 + o.margin),
    })
}

/// The samples a scraper every `every` seconds, its first scrape at `phase`, keeps of
/// `samples` (the latest at or before each scrape, as a scrape reads the file then).
pub fn scrape(samples: &[(i64, u64)], every: i64, phase: i64) -> Vec<(i64, u64)> {
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        return Vec::new();
    };
    let every = every.max(1);
    let mut out = Vec::new();
    let mut t = first.0 + phase.rem_euclid(every);
    let mut i = 0;
    while t <= last.0 {
        while samples.get(i + 1).is_some_and(|s| s.0 <= t) {
            i += 1;
        }
        if let Some(s) = samples.get(i).filter(|s| s.0 <= t) {
            out.push((t, s.1));
        }
        t += every;
    }
    out
}

/// The points of a PromQL subquery `[range:step]` over `scraped`: at every multiple of `step`
/// (Prometheus aligns subquery steps to the epoch), the latest sample no older than the
/// 5-minute lookback.
pub fn subquery(scraped: &[(i64, u64)], step: i64) -> Vec<u64> {
    let (Some(first), Some(last)) = (scraped.first(), scraped.last()) else {
        return Vec::new();
    };
    let step = step.max(1);
    let mut out = Vec::new();
    let mut t = first.0 + (step - first.0.rem_euclid(step)).rem_euclid(step);
    while t <= last.0 + 300 {
        if let Some(s) = scraped.iter().rev().find(|s| s.0 <= t && t - s.0 <= 300) {
            out.push(s.1);
        }
        t += step;
    }
    out
}

/// PromQL's `max_over_time`.
pub fn max_over_time(points: &[u64]) -> Option<u64> {
    points.iter().copied().max()
}

/// PromQL's `quantile_over_time(q, …)`: the values sorted, `q × (n − 1)` interpolated.
pub fn quantile_over_time(q: f64, points: &[u64]) -> Option<f64> {
    let mut v: Vec<f64> = points.iter().map(|p| u64_f64(*p)).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = u64_f64(u64::try_from(v.len()).unwrap_or(u64::MAX));
    let rank = q * (n - 1.0);
    let lower = rank.floor().max(0.0);
    let upper = (lower + 1.0).min(n - 1.0);
    let weight = rank - rank.floor();
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "indexes within 0..n"
    )]
    let (l, u) = (lower as usize, upper as usize);
    Some(v.get(l)? * (1.0 - weight) + v.get(u)? * weight)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn vpa_takes_one_peak_a_day_and_adds_its_margin() {
        // Two days: 100 MiB peak on the first, 200 MiB on the second.
        let samples = vec![(0, 100 * MIB), (3600, 50 * MIB), (90_000, 200 * MIB)];
        let r = vpa(&samples, &[], &VpaOptions::default()).unwrap();
        // p90 of {100 MiB (weight 1), 200 MiB (weight 2)}: 200 MiB's bucket end, + 15 %.
        assert!(r.target > 200.0 * 1.15 * u64_f64(MIB), "{}", r.target);
        assert!(r.target < 212.0 * 1.15 * u64_f64(MIB), "{}", r.target);
        // An OOM kill with a request of 300 MiB: 400 MiB (300 + 100 > 360).
        let r = vpa(&samples, &[(90_010, 300 * MIB)], &VpaOptions::default()).unwrap();
        assert!(r.target > 400.0 * 1.15 * u64_f64(MIB), "{}", r.target);
    }

    #[test]
    fn a_scrape_every_minute_keeps_one_sample_in_sixty() {
        let samples: Vec<(i64, u64)> = (0..600).map(|t| (t, u64::try_from(t).unwrap())).collect();
        let s = scrape(&samples, 60, 7);
        assert_eq!(s.len(), 10);
        assert_eq!(s[0], (7, 7));
        assert_eq!(s[9], (547, 547));
        // Subquery steps at multiples of 300 s: 0, 300, 600 (the latest within 5 minutes).
        let points = subquery(&s, 300);
        assert_eq!(points, vec![247, 547]);
    }

    #[test]
    fn quantile_over_time_interpolates_as_prometheus() {
        assert_eq!(quantile_over_time(0.95, &[]), None);
        assert_eq!(quantile_over_time(0.5, &[1, 3]), Some(2.0));
        let q = quantile_over_time(0.95, &[10, 20, 30, 40, 50]).unwrap();
        assert!((q - 48.0).abs() < 1e-9, "{q}");
        assert_eq!(max_over_time(&[3, 9, 4]), Some(9));
    }
}
