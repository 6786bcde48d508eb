//! The trigger context of one cycle (Talos §3–4), with derivatives over measured time.

use std::collections::{HashMap, VecDeque};

use crate::Growth;
use enum_map::{Enum, EnumMap};
use oomwarden_model::{
    Limit, MetricsSample, PerClass, PsiKind, PsiReading, PsiSpan, Scalar, SubtreeSample,
    TriggerContext,
};

/// What a metrics subtree's rates are taken of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
enum Measure {
    /// A PSI field of `memory.pressure`.
    Psi(PsiKind, PsiSpan),
    /// `memory.current`.
    Current,
    /// `memory.peak`.
    Peak,
    /// `memory.max`.
    Max,
    /// `memory.stat`'s `workingset_refault_file`.
    WorkingsetRefaultFile,
    /// `memory.stat`'s `pgscan`.
    Pgscan,
    /// `memory.events`' `high`.
    EventsHigh,
    /// `memory.events`' `max`.
    EventsMax,
    /// `memory.events`' `oom`.
    EventsOom,
}

impl Measure {
    /// A counter only grows: less is a reset, not a negative rate.
    fn counter(self) -> bool {
        matches!(
            self,
            Measure::Psi(_, PsiSpan::Total)
                | Measure::WorkingsetRefaultFile
                | Measure::Pgscan
                | Measure::EventsHigh
                | Measure::EventsMax
                | Measure::EventsOom
        )
    }
}

/// The node's values whose rates are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
enum NodeMeasure {
    /// `/proc/meminfo`'s `MemAvailable`, bytes.
    MemAvailable,
    /// `/proc/vmstat`'s `workingset_refault_file`.
    WorkingsetRefaultFile,
    /// `/proc/vmstat`'s `pgscan_*`, summed.
    Pgscan,
    /// `/proc/vmstat`'s `pgscan_direct`.
    PgscanDirect,
    /// `/proc/vmstat`'s `pgsteal_*`, summed.
    Pgsteal,
    /// `/proc/vmstat`'s `pswpin`.
    Pswpin,
    /// `/proc/vmstat`'s `pswpout`.
    Pswpout,
    /// `/proc/vmstat`'s `zswpin`.
    Zswpin,
    /// `/proc/vmstat`'s `zswpout`.
    Zswpout,
    /// `/proc/meminfo`'s `SwapFree`, bytes.
    SwapFree,
}

/// A value and when it was read.
type Cell = Option<(f64, u64)>;

/// Previous values of one subtree, each with its time.
#[derive(Debug, Clone)]
struct Previous {
    values: EnumMap<Measure, Cell>,
    /// The sample that last saw this subtree (entries not seen are dropped).
    seen_at: u64,
    /// The cgroup id the values belong to.
    cgroup_id: Option<u64>,
}

/// What the policy remembers between cycles.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// Previous values per subtree directory (Talos keys them `<dir>/memory_full_total`; one
    /// entry per directory avoids formatting eleven keys per subtree every cycle).
    previous: HashMap<String, Previous>,
    /// Monotonic time of the last trigger.
    last_trigger_ns: Option<u64>,
    /// The node's previous values and the trend of `MemAvailable`.
    node: NodeState,
    /// The candidates' `memory.current` about once a second (the ranking's growth).
    growth: Growth,
}

/// What the node's rates remember.
#[derive(Debug, Clone, Default)]
struct NodeState {
    /// Previous values.
    previous: EnumMap<NodeMeasure, Cell>,
    /// `MemAvailable` about once a second, for `node_memory_available_trend`.
    available_seconds: Trend,
}

impl State {
    /// A fresh state: no previous values (every derivative 0), never triggered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that the trigger fired at `at_ns` (whether or not anything was killed).
    pub fn triggered(&mut self, at_ns: u64) {
        self.last_trigger_ns = Some(at_ns);
    }

    /// The candidates' growth state (the ranking's `d_memory_current`).
    pub fn growth(&self) -> &Growth {
        &self.growth
    }

    /// The candidates' growth state, to keep readings in or fill candidates from.
    pub fn growth_mut(&mut self) -> &mut Growth {
        &mut self.growth
    }

    /// Monotonic time of the last trigger.
    pub fn last_trigger_ns(&self) -> Option<u64> {
        self.last_trigger_ns
    }

    /// Number of remembered derivative keys (keys of vanished cgroups are dropped).
    pub fn remembered_keys(&self) -> usize {
        self.previous
            .values()
            .map(|p| p.values.values().flatten().count())
            .sum()
    }
}

/// Builds the trigger context from a sample and updates the derivative state.
///
/// Differences from Talos, on purpose (see `docs/compatibility.md`):
/// - a derivative divides by the measured time since that key's previous sample, not by the
///   configured interval (identical on schedule; right after a slow or off-schedule cycle);
/// - `d_qos_memory_current/peak/max` are real derivatives (Talos always reports 0);
/// - keys of cgroups that disappeared are forgotten (Talos keeps them forever);
/// - a counter that goes backwards (a PSI `total`), or a subtree whose cgroup id changed (a
///   unit restarted: the same path, a new cgroup), starts again: its derivatives are 0 for
///   that cycle, where Talos reads a huge negative rate that cancels real stall.
///
/// A subtree whose pressure file lacks a line or field fails the whole cycle with Talos's
/// message, and then the state is left untouched.
pub fn build_context(sample: &MetricsSample, state: &mut State) -> Result<TriggerContext, String> {
    if let Some(msg) = sample.subtrees.iter().find_map(|s| match &s.psi {
        PsiReading::Incomplete(msg) => Some(msg.clone()),
        _ => None,
    }) {
        return Err(msg);
    }
    let now = sample.at_ns;
    let mut ctx = TriggerContext::new();
    if let Some(node) = sample.node_memory {
        #[allow(clippy::cast_precision_loss)] // bytes: exact below 8 PiB
        {
            ctx.set(Scalar::NodeMemoryAvailable, node.available as f64);
            ctx.set(Scalar::NodeMemoryTotal, node.total as f64);
        }
    }
    if let Some(swap) = sample.swap {
        #[allow(clippy::cast_precision_loss)] // bytes: exact below 8 PiB
        {
            ctx.set(Scalar::NodeSwapTotal, swap.total as f64);
            ctx.set(Scalar::NodeSwapFree, swap.free as f64);
            ctx.set(Scalar::NodeZswapBytes, swap.zswap as f64);
        }
    }
    ctx.set_time_since_trigger(
        state
            .last_trigger_ns
            .map(|t| i64::try_from(now.saturating_sub(t)).unwrap_or(i64::MAX)),
    );
    for subtree in &sample.subtrees {
        let entry = match state.previous.get_mut(subtree.dir.as_str()) {
            Some(entry) => entry,
            None => state
                .previous
                .entry(subtree.dir.clone())
                .or_insert(Previous {
                    values: EnumMap::default(),
                    seen_at: now,
                    cgroup_id: subtree.cgroup_id,
                }),
        };
        entry.seen_at = now;
        if let (Some(then), Some(id)) = (entry.cgroup_id, subtree.cgroup_id)
            && then != id
        {
            // Another cgroup at the same path: nothing to take a difference from.
            entry.values = EnumMap::default();
        }
        entry.cgroup_id = subtree.cgroup_id.or(entry.cgroup_id);
        add_subtree(subtree, entry, now, &mut ctx);
    }
    node_rates(sample, &mut state.node, now, &mut ctx);
    // Forget subtrees that are gone (Talos keeps their keys forever).
    state.previous.retain(|_, p| p.seen_at == now);
    Ok(ctx)
}

/// Adds one subtree's values and rates to the context, its previous values updated.
fn add_subtree(subtree: &SubtreeSample, entry: &mut Previous, now: u64, ctx: &mut TriggerContext) {
    let mut rate_of = |measure: Measure, value: f64| -> f64 {
        rate(&mut entry.values[measure], value, now, measure.counter())
    };
    for kind in PsiKind::ALL {
        for span in PsiSpan::ALL {
            let value = subtree.psi.get(kind, span);
            let d = rate_of(Measure::Psi(kind, span), value);
            match subtree.class {
                None => {
                    ctx.set(Scalar::root_psi(false, kind, span), value);
                    ctx.set(Scalar::root_psi(true, kind, span), d);
                }
                Some(class) => {
                    ctx.add(PerClass::psi(false, kind, span), class, value);
                    ctx.add(PerClass::psi(true, kind, span), class, d);
                }
            }
        }
    }
    // The root's memory files have no variables (Talos reads and discards them).
    let Some(class) = subtree.class else { return };
    let m = &subtree.memory;
    // Talos: unreadable is NaN and `max` is +Inf, both scrubbed to 0.
    #[allow(clippy::cast_precision_loss)] // bytes: exact below 8 PiB
    let usage = [
        (
            Measure::Current,
            m.current.map_or(0.0, |v| v as f64),
            PerClass::QosMemoryCurrent,
            PerClass::DQosMemoryCurrent,
        ),
        (
            Measure::Peak,
            m.peak.map_or(0.0, |v| v as f64),
            PerClass::QosMemoryPeak,
            PerClass::DQosMemoryPeak,
        ),
        (
            Measure::Max,
            match m.max {
                Some(Limit::Bytes(b)) => b as f64,
                Some(Limit::Max) | None => 0.0,
            },
            PerClass::QosMemoryMax,
            PerClass::DQosMemoryMax,
        ),
    ];
    for (measure, value, variable, rate_variable) in usage {
        let d = rate_of(measure, value);
        ctx.add(variable, class, value);
        ctx.add(rate_variable, class, d);
    }
    #[allow(clippy::cast_precision_loss)] // event counts far below 2^53
    if let Some(events) = subtree.events {
        let counters = [
            (
                Measure::EventsHigh,
                events.high as f64,
                PerClass::DQosMemoryEventsHigh,
            ),
            (
                Measure::EventsMax,
                events.max as f64,
                PerClass::DQosMemoryEventsMax,
            ),
            (
                Measure::EventsOom,
                events.oom as f64,
                PerClass::DQosMemoryEventsOom,
            ),
        ];
        for (measure, value, rate_variable) in counters {
            ctx.add(rate_variable, class, rate_of(measure, value));
        }
    }
    #[allow(clippy::cast_precision_loss)] // bytes: exact below 8 PiB
    if let Some(swap) = subtree.swap_current {
        ctx.add(PerClass::QosMemorySwapCurrent, class, swap as f64);
    }
    // Read only when the trigger uses them (the rate is over the time since the last
    // read, whenever that was).
    if let Some(stat) = subtree.stat {
        #[allow(clippy::cast_precision_loss)] // page counts far below 2^53
        let counters = [
            (
                Measure::WorkingsetRefaultFile,
                stat.workingset_refault_file as f64,
                PerClass::DQosWorkingsetRefaultFile,
            ),
            (Measure::Pgscan, stat.pgscan as f64, PerClass::DQosPgscan),
        ];
        for (measure, value, rate_variable) in counters {
            ctx.add(rate_variable, class, rate_of(measure, value));
        }
    }
}

/// The rate of `value` since `cell`'s, per second of measured time, and `cell` updated. A
/// counter only grows: less is a reset, not a negative rate. 0 without a previous value.
fn rate(cell: &mut Cell, value: f64, now: u64, counter: bool) -> f64 {
    let d = match *cell {
        Some((prev, _)) if counter && value < prev => 0.0,
        Some((prev, at)) if now > at => {
            #[allow(clippy::cast_precision_loss)] // nanosecond spans far below 2^53
            let seconds = (now - at) as f64 / 1e9;
            (value - prev) / seconds
        }
        _ => 0.0,
    };
    *cell = Some((value, now));
    d
}

/// The node's rates (extensions): `d_node_memory_available` and its trend from
/// `/proc/meminfo`, and the reclaim rates from `/proc/vmstat` when it was read. What was not
/// read this cycle forgets its previous value.
fn node_rates(sample: &MetricsSample, node: &mut NodeState, now: u64, ctx: &mut TriggerContext) {
    #[allow(clippy::cast_precision_loss)] // bytes: exact below 8 PiB
    let t = match sample.node_memory {
        Some(m) => node.available_seconds.push(now, m.available as f64),
        None => node.available_seconds.forget(),
    };
    ctx.set(Scalar::NodeMemoryAvailableTrend, t);
    #[allow(clippy::cast_precision_loss)] // bytes and pages far below 2^53
    let values = [
        (
            NodeMeasure::MemAvailable,
            sample.node_memory.map(|m| m.available as f64),
            Scalar::DNodeMemoryAvailable,
        ),
        (
            NodeMeasure::WorkingsetRefaultFile,
            sample.vmstat.map(|v| v.workingset_refault_file as f64),
            Scalar::DNodeWorkingsetRefaultFile,
        ),
        (
            NodeMeasure::Pgscan,
            sample.vmstat.map(|v| v.pgscan as f64),
            Scalar::DNodePgscan,
        ),
        (
            NodeMeasure::PgscanDirect,
            sample.vmstat.map(|v| v.pgscan_direct as f64),
            Scalar::DNodePgscanDirect,
        ),
        (
            NodeMeasure::Pgsteal,
            sample.vmstat.map(|v| v.pgsteal as f64),
            Scalar::DNodePgsteal,
        ),
        (
            NodeMeasure::Pswpin,
            sample.vmstat.map(|v| v.pswpin as f64),
            Scalar::DNodePswpin,
        ),
        (
            NodeMeasure::Pswpout,
            sample.vmstat.map(|v| v.pswpout as f64),
            Scalar::DNodePswpout,
        ),
        (
            NodeMeasure::Zswpin,
            sample.vmstat.map(|v| v.zswpin as f64),
            Scalar::DNodeZswpin,
        ),
        (
            NodeMeasure::Zswpout,
            sample.vmstat.map(|v| v.zswpout as f64),
            Scalar::DNodeZswpout,
        ),
        (
            NodeMeasure::SwapFree,
            sample.swap.map(|s| s.free as f64),
            Scalar::DNodeSwapFree,
        ),
    ];
    for (measure, value, variable) in values {
        let cell = &mut node.previous[measure];
        let counter = !matches!(measure, NodeMeasure::MemAvailable | NodeMeasure::SwapFree);
        match value {
            // Everything but MemAvailable and SwapFree is a counter.
            Some(v) => ctx.set(variable, rate(cell, v, now, counter)),
            None => *cell = None,
        }
    }
}

/// A value kept about once a second over 20 s, and the median of its per-second rates:
/// a sustained change, which a burst that stopped or a single jump does not move. The kernel
/// folds its per-CPU counters into `MemAvailable` about once a second (`vm.stat_interval`), so
/// at a 100 ms interval most cycles see no change and then a jump: a rate per cycle is noise.
#[derive(Debug, Clone, Default)]
struct Trend {
    /// `(time, value)`, at least [`Trend::STEP_NS`] apart, the newest last.
    points: VecDeque<(u64, f64)>,
    /// The trend as of the newest point (computed once a second, not every cycle).
    current: f64,
}

impl Trend {
    /// The spacing of the kept points.
    const STEP_NS: u64 = 1_000_000_000;
    /// The window the median is taken over: long against a pod's start-up (measured in the
    /// test VM: 830 MiB taken in 14 s under TCG, with the recent median), short against a leak eating the node's last
    /// tenth (a minute and more at the rates that need a kill).
    const WINDOW_NS: u64 = 20_000_000_000;
    /// At most this many points (a window of 20 s at 1 s holds 21).
    const MAX_POINTS: usize = 32;
    /// The last rates that must still show the fall.
    const RECENT: usize = 5;

    /// Takes this cycle's value and returns the trend, bytes per second (0 until a whole
    /// window was seen: a daemon started seconds before a pod fills the node has seen only the
    /// burst).
    fn push(&mut self, now: u64, value: f64) -> f64 {
        if !value.is_finite() {
            return self.forget();
        }
        match self.points.back() {
            // A clock that went back (a replay spliced, a state reused): start again.
            Some(&(at, _)) if now < at => self.points.clear(),
            Some(&(at, _)) if now - at < Self::STEP_NS => return self.current,
            _ => {}
        }
        self.points.push_back((now, value));
        // Keep the newest point at least a window old as the start of the oldest rate.
        while self.points.len() > Self::MAX_POINTS
            || self
                .points
                .get(1)
                .is_some_and(|&(at, _)| now.saturating_sub(at) >= Self::WINDOW_NS)
        {
            self.points.pop_front();
        }
        self.current = self.compute();
        self.current
    }

    /// Forgets the points (the value could not be read): the trend starts again.
    fn forget(&mut self) -> f64 {
        self.points.clear();
        self.current = 0.0;
        0.0
    }

    /// The median of the per-second rates over the window, or over its last
    /// [`Trend::RECENT`] rates if that pace is slower: a fall that has lasted and still goes
    /// on (a pod that took memory for fifteen seconds and stopped is no trend five seconds
    /// later). 0 when the two disagree in direction.
    fn compute(&self) -> f64 {
        let seen = match (self.points.front(), self.points.back()) {
            (Some(&(first, _)), Some(&(last, _))) => last - first,
            _ => 0,
        };
        if seen < Self::WINDOW_NS {
            return 0.0;
        }
        let rates: Vec<f64> = self
            .points
            .iter()
            .zip(self.points.iter().skip(1))
            .filter_map(|(&(t0, v0), &(t1, v1))| {
                #[allow(clippy::cast_precision_loss)] // nanosecond spans far below 2^53
                let seconds = t1.checked_sub(t0).filter(|d| *d > 0)? as f64 / 1e9;
                Some((v1 - v0) / seconds)
            })
            .collect();
        let whole = median_of(rates.clone());
        let recent = median_of(rates.iter().rev().take(Self::RECENT).copied().collect());
        if whole.signum() != recent.signum() || whole == 0.0 || recent == 0.0 {
            0.0
        } else if whole.abs() < recent.abs() {
            whole
        } else {
            recent
        }
    }
}

/// The median (0 of nothing).
fn median_of(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match (values.get(n / 2), n % 2) {
        (None, _) => 0.0,
        (Some(m), 1) => *m,
        (Some(m), _) => values.get(n / 2 - 1).map_or(*m, |l| (l + m) / 2.0),
    }
}

#[cfg(test)]
mod trend_tests {
    use super::Trend;

    const S: u64 = 1_000_000_000;
    const MIB: f64 = 1_048_576.0;

    /// Feeds `value(t)` every 100 ms from `from` to `to` seconds; the last trend.
    fn feed(trend: &mut Trend, from: u64, to: u64, value: impl Fn(f64) -> f64) -> f64 {
        let mut last = 0.0;
        for tick in from * 10..=to * 10 {
            #[allow(clippy::cast_precision_loss)]
            let t = tick as f64 / 10.0;
            last = trend.push(tick * S / 10, value(t));
        }
        last
    }

    #[test]
    fn a_steady_fall_is_its_rate() {
        let mut t = Trend::default();
        let r = feed(&mut t, 0, 30, |s| 500.0 * MIB - 5.0 * MIB * s);
        assert!((r + 5.0 * MIB).abs() < 1e-3 * MIB, "{r}");
        // The cycles between two kept points give the same trend.
        assert_eq!(t.push(30 * S + S / 2, 0.0), r);
    }

    #[test]
    fn nothing_before_a_whole_window_was_seen() {
        // Started two seconds before a pod fills the node in eight: all it has seen is the
        // fall, which is no trend yet.
        let mut t = Trend::default();
        let v = |s: f64| 900.0 * MIB - 100.0 * MIB * (s - 2.0).clamp(0.0, 8.0);
        for tick in 0..200u64 {
            #[allow(clippy::cast_precision_loss)]
            let s = tick as f64 / 10.0;
            assert_eq!(t.push(tick * S / 10, v(s)), 0.0, "at {s} s");
        }
        assert_eq!(t.push(20 * S, v(20.0)), 0.0);
        let mut t = Trend::default();
        assert_eq!(feed(&mut t, 0, 19, |s| 900.0 * MIB - MIB * s), 0.0);
        assert!(t.push(20 * S, 880.0 * MIB) < 0.0);
    }

    #[test]
    fn a_burst_that_stopped_is_no_trend() {
        // 800 MiB taken in eight seconds, then flat (a pod starting up and filling the node):
        // never a trend (the mean over the window would read -40 MiB/s for twenty seconds).
        let mut t = Trend::default();
        for tick in 0..=600u64 {
            #[allow(clippy::cast_precision_loss)]
            let s = tick as f64 / 10.0;
            let v = 900.0 * MIB - 100.0 * MIB * (s - 25.0).clamp(0.0, 8.0);
            assert_eq!(t.push(tick * S / 10, v), 0.0, "at {s} s");
        }
    }

    #[test]
    fn a_long_burst_is_no_trend_once_it_stopped() {
        // 830 MiB over fourteen seconds, then flat (measured: S18's pod under TCG): a trend
        // while it falls, none five seconds after it stopped.
        let mut t = Trend::default();
        let v = |s: f64| 900.0 * MIB - 60.0 * MIB * (s - 25.0).clamp(0.0, 14.0);
        assert!(feed(&mut t, 0, 38, v) < -50.0 * MIB);
        assert_eq!(feed(&mut t, 39, 44, v), 0.0);
        for tick in 440..=700u64 {
            #[allow(clippy::cast_precision_loss)]
            let s = tick as f64 / 10.0;
            assert_eq!(t.push(tick * S / 10, v(s)), 0.0, "at {s} s");
        }
    }

    #[test]
    fn the_slower_of_the_whole_and_the_recent_pace() {
        // 20 MiB/s for twenty seconds, then 2 MiB/s: the recent pace, once five seconds show it.
        let mut t = Trend::default();
        let v = |s: f64| 900.0 * MIB - 20.0 * MIB * s.min(20.0) - 2.0 * MIB * (s - 20.0).max(0.0);
        let r = feed(&mut t, 0, 26, v);
        assert!((r + 2.0 * MIB).abs() < 1e-3 * MIB, "{r}");
    }

    #[test]
    fn a_fall_over_most_of_the_window_is_a_trend() {
        let mut t = Trend::default();
        let v = |s: f64| 900.0 * MIB - 20.0 * MIB * (s - 20.0).clamp(0.0, 40.0);
        assert_eq!(feed(&mut t, 0, 29, v), 0.0);
        let r = feed(&mut t, 30, 32, v);
        assert!((r + 20.0 * MIB).abs() < 1e-3 * MIB, "{r}");
    }

    #[test]
    fn jumps_once_a_second_still_give_the_rate() {
        // The kernel folds counters in once a second: the value moves in steps.
        let mut t = Trend::default();
        let r = feed(&mut t, 0, 40, |s| 400.0 * MIB - 5.0 * MIB * s.floor());
        assert!((r + 5.0 * MIB).abs() < 0.6 * MIB, "{r}");
    }

    #[test]
    fn an_unreadable_value_or_a_clock_going_back_starts_again() {
        let mut t = Trend::default();
        feed(&mut t, 0, 20, |s| 100.0 * MIB - MIB * s);
        assert_eq!(t.forget(), 0.0);
        assert_eq!(t.push(30 * S, 1.0), 0.0);
        assert!(feed(&mut t, 31, 60, |s| MIB * s) > 0.0);
        assert_eq!(t.push(S, 5.0), 0.0);
        assert_eq!(t.push(2 * S, f64::NAN), 0.0);
    }

    #[test]
    fn the_window_is_bounded_whatever_the_interval() {
        let mut t = Trend::default();
        for i in 0..10_000u64 {
            #[allow(clippy::cast_precision_loss)]
            t.push(i * S, i as f64);
        }
        assert!(t.points.len() <= Trend::MAX_POINTS);
        assert!((t.compute() - 1.0).abs() < 1e-9);
    }
}
