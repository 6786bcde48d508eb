//! A decaying histogram with exponential buckets, as the Vertical Pod Autoscaler's recommender
//! keeps (`pkg/recommender/util/histogram.go`, `decaying_histogram.go`): bucket `i` starts at
//! `first × (ratioⁱ − 1) / (ratio − 1)`; a sample's weight doubles every half-life after a
//! reference time, so old samples count less; a percentile is the end of the bucket where the
//! cumulative weight reaches it.
//!
//! The weights are kept only between the lowest and the highest bucket used (a container's
//! usage spans a few dozen buckets of 5 %, not the 220 up to a terabyte).

use serde::{Deserialize, Serialize};

/// The buckets: where the first ends, how each grows, the largest value told apart.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistogramOptions {
    /// The first bucket's size, bytes.
    pub first_bucket: f64,
    /// Each bucket is this much larger than the one before (VPA: 1.05).
    pub ratio: f64,
    /// Values above this fall in the last bucket.
    pub max_value: f64,
}

impl HistogramOptions {
    /// oomwarden's buckets: 1 MiB first (a sidecar of 20 MiB is told apart from one of 25 MiB),
    /// 5 % steps as VPA, up to 1 TiB.
    pub const OOMWARDEN: HistogramOptions = HistogramOptions {
        first_bucket: 1_048_576.0,
        ratio: 1.05,
        max_value: 1_099_511_627_776.0,
    };
    /// VPA's memory histogram (`memoryHistogramOptions`: 10⁷ first, 1.05, up to 10¹²).
    pub const VPA_MEMORY: HistogramOptions = HistogramOptions {
        first_bucket: 1e7,
        ratio: 1.05,
        max_value: 1e12,
    };

    /// How many buckets.
    pub fn buckets(&self) -> usize {
        self.bucket_of(self.max_value) + 1
    }

    /// The bucket a value falls in.
    pub fn bucket_of(&self, value: f64) -> usize {
        if value.is_nan() || value < self.first_bucket {
            return 0;
        }
        let v = value.min(self.max_value);
        let i = ((v * (self.ratio - 1.0) / self.first_bucket + 1.0).ln() / self.ratio.ln()).floor();
        // `i` is finite and within 0..=~600 for any positive options.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "clamped to the bucket range just above"
        )]
        let i = i.clamp(0.0, 100_000.0) as usize;
        i
    }

    /// Where bucket `i` starts.
    pub fn bucket_start(&self, i: usize) -> f64 {
        let i = i32::try_from(i).unwrap_or(i32::MAX);
        self.first_bucket * (self.ratio.powi(i) - 1.0) / (self.ratio - 1.0)
    }
}

/// A sample's weight is at most 2^this relative to the reference; past it the reference moves
/// (VPA's `maxDecayExponent`), so weights never overflow.
const MAX_DECAY_EXPONENT: f64 = 100.0;

/// Weights below this are empty (VPA's `epsilon`).
const EPSILON: f64 = 1e-4;

/// A decaying histogram: its buckets' weights relative to a reference time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecayingHistogram {
    /// The reference time (Unix seconds) the weights are relative to.
    reference: i64,
    /// The lowest bucket kept.
    first: usize,
    /// The weights from `first` on.
    weights: Vec<f64>,
}

impl DecayingHistogram {
    /// Whether no sample counts.
    pub fn is_empty(&self) -> bool {
        self.weights.iter().all(|w| *w < EPSILON)
    }

    /// Adds `value` with `weight` at time `at` (Unix seconds), `half_life` seconds.
    pub fn add(
        &mut self,
        options: &HistogramOptions,
        value: f64,
        weight: f64,
        at: i64,
        half_life: i64,
    ) {
        if weight.is_nan() || weight <= 0.0 || !value.is_finite() {
            return;
        }
        let half_life = half_life.max(1);
        if self.weights.is_empty() {
            self.reference = at - at.rem_euclid(half_life);
        }
        let mut exponent = seconds(at - self.reference) / seconds(half_life);
        if exponent > MAX_DECAY_EXPONENT {
            // Move the reference to `at`'s half-life boundary, scaling what is kept.
            let new_reference = at - at.rem_euclid(half_life);
            let scale = 2f64.powf(-seconds(new_reference - self.reference) / seconds(half_life));
            for w in &mut self.weights {
                *w *= scale;
            }
            self.reference = new_reference;
            exponent = seconds(at - self.reference) / seconds(half_life);
        }
        let bucket = options.bucket_of(value);
        self.ensure(bucket);
        if let Some(w) = self.weights.get_mut(bucket - self.first) {
            *w += weight * 2f64.powf(exponent);
        }
    }

    /// Adds every weight of `other` (the history of a container's earlier incarnation).
    pub fn merge(&mut self, other: &DecayingHistogram, half_life: i64) {
        if other.weights.is_empty() {
            return;
        }
        if self.weights.is_empty() {
            *self = other.clone();
            return;
        }
        let half_life = seconds(half_life.max(1));
        // Both relative to the later reference.
        let reference = self.reference.max(other.reference);
        let scale_self = 2f64.powf(-seconds(reference - self.reference) / half_life);
        let scale_other = 2f64.powf(-seconds(reference - other.reference) / half_life);
        for w in &mut self.weights {
            *w *= scale_self;
        }
        self.reference = reference;
        self.ensure(other.first);
        self.ensure(other.first + other.weights.len().saturating_sub(1));
        for (i, w) in other.weights.iter().enumerate() {
            if let Some(mine) = self.weights.get_mut(other.first + i - self.first) {
                *mine += w * scale_other;
            }
        }
    }

    /// The value at `percentile` (0..=1): the end of the bucket where the cumulative weight
    /// reaches it (the last bucket's start for the last), as VPA's `Percentile`; `None` when
    /// empty.
    pub fn percentile(&self, options: &HistogramOptions, percentile: f64) -> Option<f64> {
        let total: f64 = self.weights.iter().filter(|w| **w >= EPSILON).sum();
        if total < EPSILON {
            return None;
        }
        let threshold = percentile.clamp(0.0, 1.0) * total;
        let mut sum = 0.0;
        let mut last_used = self.first;
        for (i, w) in self.weights.iter().enumerate() {
            if *w < EPSILON {
                continue;
            }
            last_used = self.first + i;
            sum += w;
            if sum >= threshold {
                break;
            }
        }
        let buckets = options.buckets();
        Some(if last_used + 1 < buckets {
            options.bucket_start(last_used + 1)
        } else {
            options.bucket_start(last_used)
        })
    }

    /// Buckets kept (what the history costs).
    pub fn len(&self) -> usize {
        self.weights.len()
    }

    fn ensure(&mut self, bucket: usize) {
        if self.weights.is_empty() {
            self.first = bucket;
            self.weights.push(0.0);
            return;
        }
        if bucket < self.first {
            let mut grown = vec![0.0; self.first - bucket];
            grown.append(&mut self.weights);
            self.weights = grown;
            self.first = bucket;
        } else if bucket >= self.first + self.weights.len() {
            self.weights.resize(bucket - self.first + 1, 0.0);
        }
    }
}

/// Seconds as a float (exact below 2⁵³).
#[allow(
    clippy::cast_precision_loss,
    reason = "times are Unix seconds, far below 2^53"
)]
pub(crate) fn seconds(s: i64) -> f64 {
    s as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: f64 = 1_048_576.0;

    #[test]
    fn buckets_grow_by_five_percent_and_values_land_in_their_bucket() {
        let o = HistogramOptions::OOMWARDEN;
        assert_eq!(o.bucket_of(0.0), 0);
        assert_eq!(o.bucket_of(MIB - 1.0), 0);
        assert_eq!(o.bucket_of(MIB), 1);
        for i in [1usize, 10, 50, 150] {
            let start = o.bucket_start(i);
            assert_eq!(o.bucket_of(start * 1.000_001), i, "bucket {i}");
            assert!((o.bucket_start(i + 1) - start) / (start - o.bucket_start(i - 1)) > 1.04);
        }
        assert_eq!(o.bucket_of(1e30), o.buckets() - 1);
        assert!(o.buckets() > 200 && o.buckets() < 240, "{}", o.buckets());
    }

    #[test]
    fn a_percentile_is_the_end_of_its_bucket_and_weights_decide() {
        let o = HistogramOptions::OOMWARDEN;
        let mut h = DecayingHistogram::default();
        assert_eq!(h.percentile(&o, 0.9), None);
        // 90 s at 100 MiB, 10 s at 300 MiB.
        h.add(&o, 100.0 * MIB, 90.0, 1000, 86_400);
        h.add(&o, 300.0 * MIB, 10.0, 1000, 86_400);
        let p50 = h.percentile(&o, 0.5).unwrap();
        assert!(p50 > 100.0 * MIB && p50 < 105.1 * MIB, "{p50}");
        let p95 = h.percentile(&o, 0.95).unwrap();
        assert!(p95 > 300.0 * MIB && p95 < 315.1 * MIB, "{p95}");
        assert!(
            h.len() > 20 && h.len() < 30,
            "only the buckets between are kept"
        );
    }

    #[test]
    fn a_sample_a_half_life_later_weighs_twice_and_the_reference_moves_without_overflow() {
        let o = HistogramOptions::OOMWARDEN;
        let mut h = DecayingHistogram::default();
        h.add(&o, 100.0 * MIB, 1.0, 0, 86_400);
        h.add(&o, 200.0 * MIB, 1.0, 86_400, 86_400);
        // The later sample weighs 2 of 3: the 60th percentile is in its bucket.
        assert!(h.percentile(&o, 0.4).unwrap() > 199.0 * MIB);
        // 200 half-lives later: the reference moves, the old samples vanish, nothing overflows.
        h.add(&o, 50.0 * MIB, 1.0, 200 * 86_400, 86_400);
        let p = h.percentile(&o, 0.99).unwrap();
        assert!(p < 53.0 * MIB, "{p}");
        assert!(h.weights.iter().all(|w| w.is_finite()));
    }

    #[test]
    fn merged_histograms_count_both_at_their_ages() {
        let o = HistogramOptions::OOMWARDEN;
        let mut old = DecayingHistogram::default();
        old.add(&o, 400.0 * MIB, 10.0, 0, 3600);
        let mut new = DecayingHistogram::default();
        new.add(&o, 100.0 * MIB, 10.0, 3600, 3600);
        new.merge(&old, 3600);
        // The old samples weigh half: 5 of 15.
        assert!(new.percentile(&o, 0.6).unwrap() < 106.0 * MIB);
        assert!(new.percentile(&o, 0.7).unwrap() > 399.0 * MIB);
    }
}
