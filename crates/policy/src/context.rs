//! The trigger context of one cycle (Talos §3–4), with derivatives over measured time.

use std::collections::HashMap;

use oomwarden_model::{
    ClassRate, Limit, MetricsSample, NodeRate, PsiKind, PsiReading, PsiSpan, TriggerContext,
    UsageKind,
};

/// Slots of one subtree's previous values: 8 PSI values, 3 memory values, then 2 `memory.stat`
/// counters.
const SLOTS: usize = 13;

/// Previous values of one subtree, each with its time.
#[derive(Debug, Clone, Copy)]
struct Previous {
    values: [Option<(f64, u64)>; SLOTS],
    /// The sample that last saw this subtree (entries not seen are dropped).
    seen_at: u64,
    /// The cgroup id the values belong to.
    identity: Option<u64>,
}

/// What the policy remembers between cycles.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// Previous values per subtree directory (Talos keys them `<dir>/memory_full_total`; one
    /// entry per directory avoids formatting eleven keys per subtree every cycle).
    previous: HashMap<String, Previous>,
    /// Monotonic time of the last trigger.
    last_trigger_ns: Option<u64>,
    /// The node's previous values: `MemAvailable`, then the four `/proc/vmstat` counters.
    node_previous: [Option<(f64, u64)>; 5],
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

    /// Monotonic time of the last trigger.
    pub fn last_trigger_ns(&self) -> Option<u64> {
        self.last_trigger_ns
    }

    /// Number of remembered derivative keys (keys of vanished cgroups are dropped).
    pub fn remembered_keys(&self) -> usize {
        self.previous
            .values()
            .map(|p| p.values.iter().flatten().count())
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
        ctx.set_node_memory(node.available as f64, node.total as f64);
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
                    values: [None; SLOTS],
                    seen_at: now,
                    identity: subtree.identity,
                }),
        };
        entry.seen_at = now;
        if let (Some(then), Some(id)) = (entry.identity, subtree.identity)
            && then != id
        {
            // Another cgroup at the same path: nothing to take a difference from.
            entry.values = [None; SLOTS];
        }
        entry.identity = subtree.identity.or(entry.identity);
        let mut derivative = |slot: usize, value: f64, counter: bool| -> f64 {
            entry
                .values
                .get_mut(slot)
                .map_or(0.0, |cell| rate(cell, value, now, counter))
        };
        for kind in PsiKind::ALL {
            for span in PsiSpan::ALL {
                let value = subtree.psi.get(kind, span);
                let d = derivative(
                    kind as usize * 4 + span as usize,
                    value,
                    span == PsiSpan::Total,
                );
                match subtree.class {
                    None => {
                        ctx.set_root_psi(false, kind, span, value);
                        ctx.set_root_psi(true, kind, span, d);
                    }
                    Some(class) => {
                        ctx.add_class_psi(false, kind, span, class, value);
                        ctx.add_class_psi(true, kind, span, class, d);
                    }
                }
            }
        }
        // The root's memory files have no variables (Talos reads and discards them).
        let Some(class) = subtree.class else { continue };
        let m = &subtree.memory;
        for (i, usage) in [UsageKind::Current, UsageKind::Peak, UsageKind::Max]
            .into_iter()
            .enumerate()
        {
            // Talos: unreadable is NaN and `max` is +Inf, both scrubbed to 0.
            #[allow(clippy::cast_precision_loss)]
            let value = match usage {
                UsageKind::Current => m.current.map_or(0.0, |v| v as f64),
                UsageKind::Peak => m.peak.map_or(0.0, |v| v as f64),
                UsageKind::Max => match m.max {
                    Some(Limit::Bytes(b)) => b as f64,
                    Some(Limit::Max) | None => 0.0,
                },
            };
            let d = derivative(8 + i, value, false);
            ctx.add_class_usage(false, usage, class, value);
            ctx.add_class_usage(true, usage, class, d);
        }
        // Read only when the trigger uses them (the rate is over the time since the last
        // read, whenever that was).
        if let Some(stat) = subtree.stat {
            #[allow(clippy::cast_precision_loss)] // page counts far below 2^53
            for (slot, which, value) in [
                (
                    11,
                    ClassRate::WorkingsetRefaultFile,
                    stat.workingset_refault_file as f64,
                ),
                (12, ClassRate::Pgscan, stat.pgscan as f64),
            ] {
                ctx.add_class_rate(which, class, derivative(slot, value, true));
            }
        }
    }
    node_rates(sample, &mut state.node_previous, now, &mut ctx);
    // Forget subtrees that are gone (Talos keeps their keys forever).
    state.previous.retain(|_, p| p.seen_at == now);
    Ok(ctx)
}

/// The rate of `value` since `cell`'s, per second of measured time, and `cell` updated. A
/// counter only grows: less is a reset, not a negative rate. 0 without a previous value.
fn rate(cell: &mut Option<(f64, u64)>, value: f64, now: u64, counter: bool) -> f64 {
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

/// The node's rates (extensions): `d_node_memory_available` from `/proc/meminfo`, and the
/// reclaim rates from `/proc/vmstat` when it was read. What was not read this cycle forgets
/// its previous value.
fn node_rates(
    sample: &MetricsSample,
    previous: &mut [Option<(f64, u64)>; 5],
    now: u64,
    ctx: &mut TriggerContext,
) {
    #[allow(clippy::cast_precision_loss)] // bytes and pages far below 2^53
    let values: [(NodeRate, Option<f64>, bool); 5] = [
        (
            NodeRate::MemoryAvailable,
            sample.node_memory.map(|m| m.available as f64),
            false,
        ),
        (
            NodeRate::WorkingsetRefaultFile,
            sample.vmstat.map(|v| v.workingset_refault_file as f64),
            true,
        ),
        (
            NodeRate::Pgscan,
            sample.vmstat.map(|v| v.pgscan as f64),
            true,
        ),
        (
            NodeRate::PgscanDirect,
            sample.vmstat.map(|v| v.pgscan_direct as f64),
            true,
        ),
        (
            NodeRate::Pgsteal,
            sample.vmstat.map(|v| v.pgsteal as f64),
            true,
        ),
    ];
    for ((which, value, counter), cell) in values.into_iter().zip(previous.iter_mut()) {
        match value {
            Some(v) => ctx.set_node_rate(which, rate(cell, v, now, counter)),
            None => *cell = None,
        }
    }
}
