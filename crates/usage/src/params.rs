//! How the history is kept and the recommendations made: the `usageHistory` section's values.

use serde::{Deserialize, Serialize};

use crate::histogram::HistogramOptions;

/// The parameters, each with its default (VPA's where VPA has one).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Params {
    /// Seconds between readings of every pod and container (default 10).
    pub interval_s: i64,
    /// An aggregation interval, seconds: a peak is kept per interval (VPA's
    /// `memoryAggregationInterval`: 24 h).
    pub aggregation_s: i64,
    /// How many intervals are kept (VPA's `memoryAggregationIntervalCount`: 8).
    pub intervals: usize,
    /// The histogram's half-life, seconds (VPA's memory histogram: 24 h).
    pub half_life_s: i64,
    /// The percentile of the unreclaimable usage the request is fitted to (default 0.95).
    pub request_percentile: f64,
    /// Added to the request (VPA's `--recommendation-margin-fraction`: 0.15).
    pub request_margin: f64,
    /// Added to the peak for the limit (default 0.15).
    pub limit_margin: f64,
    /// After an OOM kill the limit covers the usage then times this (VPA's `oomBumpUpRatio`:
    /// 1.2) …
    pub oom_bump_ratio: f64,
    /// … or plus this many bytes, whichever is more (VPA's `oomMinBumpUp`: 100 MiB).
    pub oom_min_bump: u64,
    /// The most series kept (default 4,096: a node of 110 pods has about 330).
    pub max_series: usize,
    /// The histogram's buckets.
    pub histogram: HistogramOptions,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            interval_s: 10,
            aggregation_s: 86_400,
            intervals: 8,
            half_life_s: 86_400,
            request_percentile: 0.95,
            request_margin: 0.15,
            limit_margin: 0.15,
            oom_bump_ratio: 1.2,
            oom_min_bump: 100 * 1024 * 1024,
            max_series: 4096,
            histogram: HistogramOptions::OOMWARDEN,
        }
    }
}

impl Params {
    /// The time the history covers, seconds (intervals × their length).
    pub fn window_s(&self) -> i64 {
        self.aggregation_s
            .saturating_mul(i64::try_from(self.intervals).unwrap_or(i64::MAX))
    }
}
