//! `usageHistory`: what every pod and container used, kept by the daemon for
//! `oomwarden rightsize` (on by default).

use std::time::Duration;

use oomwarden_usage::Params;
use serde::{Deserialize, Deserializer, Serialize};

use crate::fields::{Field, Flag, format_duration, leaf, text, unless_blank, within};

/// The usage history's settings: whether it is kept, how often it is saved, and the
/// parameters of the history and its recommendations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UsageHistorySettings {
    /// Keep it (on by default).
    pub enabled: bool,
    /// How often the history is written to `<stateDir>/usage.json` (and at a stop).
    pub save_every: Duration,
    /// The history's and the recommendations' parameters.
    pub params: Params,
}

impl Default for UsageHistorySettings {
    fn default() -> Self {
        UsageHistorySettings {
            enabled: true,
            save_every: Duration::from_secs(300),
            params: Params::default(),
        }
    }
}

/// The section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct UsageHistoryIn {
    enabled: Field<Flag>,
    interval: Field<Span<1, 600>>,
    aggregation_interval: Field<Span<60, 604_800>>,
    intervals: Field<Count<1, 60>>,
    half_life: Field<Span<60, 2_592_000>>,
    request_percentile: Field<Fraction<50, 100>>,
    request_margin: Field<Fraction<0, 100>>,
    limit_margin: Field<Fraction<0, 100>>,
    oom_bump_up_ratio: Field<Fraction<100, 1000>>,
    oom_min_bump_up: Field<Bytes>,
    max_series: Field<Count<1, 100_000>>,
    save_every: Field<Span<10, 3600>>,
}

/// A Go duration from `MIN` to `MAX` seconds; blank is unset.
#[derive(Debug)]
struct Span<const MIN: u64, const MAX: u64>(Option<Duration>);

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Span<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        text(d, "a string", |s| {
            unless_blank(s, |t| {
                within(t, Duration::from_secs(MIN)..=Duration::from_secs(MAX)).map_err(|()| {
                    format!(
                        "expected a duration from {:?} to {:?}, found {t:?}",
                        format_duration(Duration::from_secs(MIN)),
                        format_duration(Duration::from_secs(MAX))
                    )
                })
            })
        })
        .map(Span)
    }
}

/// A whole number from `MIN` to `MAX`.
#[derive(Debug)]
struct Count<const MIN: u64, const MAX: u64>(usize);

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Count<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        leaf(d, |v| match v.as_u64() {
            Some(n) if (MIN..=MAX).contains(&n) => {
                Ok(Count(usize::try_from(n).unwrap_or(usize::MAX)))
            }
            _ => Err(format!(
                "expected a whole number from {MIN} to {MAX}, found {v}"
            )),
        })
    }
}

/// A number from `MIN`/100 to `MAX`/100.
#[derive(Debug)]
struct Fraction<const MIN: u64, const MAX: u64>(f64);

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Fraction<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (lo, hi) = (hundredths(MIN), hundredths(MAX));
        leaf(d, |v| match v.as_f64() {
            Some(x) if x >= lo && x <= hi => Ok(Fraction(x)),
            _ => Err(format!("expected a number from {lo} to {hi}, found {v}")),
        })
    }
}

#[allow(clippy::cast_precision_loss, reason = "small constants")]
fn hundredths(n: u64) -> f64 {
    n as f64 / 100.0
}

/// A memory quantity (`100Mi`, `104857600`), at most 1 TiB.
#[derive(Debug)]
struct Bytes(u64);

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        leaf(d, |v| {
            let text = match v {
                serde_json::Value::String(s) => s,
                serde_json::Value::Number(n) => n.to_string(),
                other => {
                    return Err(format!(
                        "expected a quantity such as \"100Mi\", found {other}"
                    ));
                }
            };
            oomwarden_kube::Quantity::parse(&text)
                .ok()
                .and_then(|q| q.value())
                .and_then(|b| u64::try_from(b).ok())
                .filter(|b| *b <= 1 << 40)
                .map(Bytes)
                .ok_or_else(|| {
                    format!("expected a quantity from 0 to 1Ti such as \"100Mi\", found {text:?}")
                })
        })
    }
}

fn secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

impl UsageHistoryIn {
    /// The settings, defaults filled in.
    pub(super) fn settings(self) -> UsageHistorySettings {
        let mut s = UsageHistorySettings::default();
        let p = &mut s.params;
        if let Some(Flag(on)) = self.enabled.get() {
            s.enabled = *on;
        }
        if let Some(d) = self.interval.into_option().and_then(|x| x.0) {
            p.interval_s = secs(d);
        }
        if let Some(d) = self.aggregation_interval.into_option().and_then(|x| x.0) {
            p.aggregation_s = secs(d);
        }
        if let Some(Count(n)) = self.intervals.get() {
            p.intervals = *n;
        }
        if let Some(d) = self.half_life.into_option().and_then(|x| x.0) {
            p.half_life_s = secs(d);
        }
        if let Some(Fraction(x)) = self.request_percentile.get() {
            p.request_percentile = *x;
        }
        if let Some(Fraction(x)) = self.request_margin.get() {
            p.request_margin = *x;
        }
        if let Some(Fraction(x)) = self.limit_margin.get() {
            p.limit_margin = *x;
        }
        if let Some(Fraction(x)) = self.oom_bump_up_ratio.get() {
            p.oom_bump_ratio = *x;
        }
        if let Some(Bytes(b)) = self.oom_min_bump_up.get() {
            p.oom_min_bump = *b;
        }
        if let Some(Count(n)) = self.max_series.get() {
            p.max_series = *n;
        }
        if let Some(d) = self.save_every.into_option().and_then(|x| x.0) {
            s.save_every = d;
        }
        s
    }
}

/// The section as `oomwarden check` writes it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct UsageHistoryOut {
    enabled: bool,
    interval: String,
    aggregation_interval: String,
    intervals: usize,
    half_life: String,
    request_percentile: f64,
    request_margin: f64,
    limit_margin: f64,
    oom_bump_up_ratio: f64,
    oom_min_bump_up: String,
    max_series: usize,
    save_every: String,
}

impl UsageHistoryOut {
    pub(super) fn of(s: &UsageHistorySettings) -> Self {
        let p = &s.params;
        let d = |secs: i64| format_duration(Duration::from_secs(u64::try_from(secs).unwrap_or(0)));
        UsageHistoryOut {
            enabled: s.enabled,
            interval: d(p.interval_s),
            aggregation_interval: d(p.aggregation_s),
            intervals: p.intervals,
            half_life: d(p.half_life_s),
            request_percentile: p.request_percentile,
            request_margin: p.request_margin,
            limit_margin: p.limit_margin,
            oom_bump_up_ratio: p.oom_bump_ratio,
            oom_min_bump_up: oomwarden_kube::binary_si(p.oom_min_bump),
            max_series: p.max_series,
            save_every: format_duration(s.save_every),
        }
    }
}
