//! The trigger context of one cycle (Talos §3–4), with derivatives over measured time.

use std::collections::HashMap;

use oomwarden_model::{
    Limit, MetricsSample, PsiKind, PsiReading, PsiSpan, TriggerContext, UsageKind,
};

/// What the policy remembers between cycles.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// Previous value and time of every derivative key (`<subtree>/memory_full_total`).
    previous: HashMap<String, (f64, u64)>,
    /// Monotonic time of the last trigger.
    last_trigger_ns: Option<u64>,
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
        self.previous.len()
    }
}

const USAGE: [(UsageKind, &str); 3] = [
    (UsageKind::Current, "memory_current"),
    (UsageKind::Peak, "memory_peak"),
    (UsageKind::Max, "memory_max"),
];

/// Builds the trigger context from a sample and updates the derivative state.
///
/// Differences from Talos, on purpose (see `docs/compatibility.md`):
/// - a derivative divides by the measured time since that key's previous sample, not by the
///   configured interval (identical on schedule; right after a slow or off-schedule cycle);
/// - `d_qos_memory_current/peak/max` are real derivatives (Talos always reports 0);
/// - keys of cgroups that disappeared are forgotten (Talos keeps them forever).
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
    ctx.set_time_since_trigger(
        state
            .last_trigger_ns
            .map(|t| i64::try_from(now.saturating_sub(t)).unwrap_or(i64::MAX)),
    );
    let mut next: HashMap<String, (f64, u64)> = HashMap::with_capacity(state.previous.len());
    let mut derivative = |key: String, value: f64| -> f64 {
        let d = match state.previous.get(&key) {
            Some(&(prev, at)) if now > at => {
                #[allow(clippy::cast_precision_loss)] // nanosecond spans far below 2^53
                let seconds = (now - at) as f64 / 1e9;
                (value - prev) / seconds
            }
            _ => 0.0,
        };
        next.insert(key, (value, now));
        d
    };
    for subtree in &sample.subtrees {
        for kind in PsiKind::ALL {
            for span in PsiSpan::ALL {
                let value = subtree.psi.get(kind, span);
                let key = format!("{}/memory_{}_{}", subtree.dir, kind.name(), span.name());
                let d = derivative(key, value);
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
        for (usage, name) in USAGE {
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
            let d = derivative(format!("{}/{name}", subtree.dir), value);
            ctx.add_class_usage(false, usage, class, value);
            ctx.add_class_usage(true, usage, class, d);
        }
    }
    state.previous = next;
    Ok(ctx)
}
