//! The node's memory as the kubelet and as node-exporter see it (`kube-semantics.md` §3-§4,
//! seed 004): cAdvisor's working set, the kubelet's `memory.available`, the eviction threshold,
//! the factors that make the two usage views differ, and the kubelet's eviction order.

use crate::quantity::Quantity;

/// cAdvisor's working set: usage − `inactive_file`, 0 when that is negative; usage when the
/// key is absent.
pub fn working_set(usage: u64, inactive_file: Option<u64>) -> u64 {
    usage.saturating_sub(inactive_file.unwrap_or(0))
}

/// A `memory.available` hard-eviction threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// An absolute quantity, bytes.
    Bytes(i64),
    /// A fraction of capacity (`10%` → 0.10).
    Fraction(f64),
}

impl Threshold {
    /// The kubelet's default `memory.available<100Mi`.
    pub const DEFAULT: Threshold = Threshold::Bytes(100 * 1024 * 1024);

    /// Parses kubelet `--eviction-hard` syntax (`memory.available<100Mi,nodefs.available<10%`)
    /// and returns the `memory.available` threshold; `None` when the list sets none or sets it
    /// to `0%`/`100%` (disabled, as the kubelet does).
    pub fn parse_eviction_hard(text: &str) -> Result<Option<Threshold>, String> {
        let mut found = None;
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (signal, value) = item.split_once('<').ok_or_else(|| {
                format!("{item:?}: expected SIGNAL<VALUE, such as memory.available<100Mi")
            })?;
            if signal.trim() != "memory.available" {
                continue;
            }
            let value = value.trim();
            found = if let Some(pct) = value.strip_suffix('%') {
                let p: f64 = pct
                    .parse()
                    .map_err(|_| format!("{item:?}: invalid percentage"))?;
                if !(0.0..=100.0).contains(&p) {
                    return Err(format!(
                        "{item:?}: a percentage must be between 0% and 100%"
                    ));
                }
                (p != 0.0 && p != 100.0).then_some(Threshold::Fraction(p / 100.0))
            } else {
                let q = Quantity::parse(value).map_err(|e| format!("{item:?}: {e}"))?;
                match q.value() {
                    Some(v) if v > 0 => Some(Threshold::Bytes(v)),
                    _ => return Err(format!("{item:?}: the quantity must be more than 0")),
                }
            };
        }
        Ok(found)
    }

    /// The threshold in bytes for a node of `capacity` bytes (`int64(capacity × fraction)`).
    pub fn bytes(&self, capacity: u64) -> i64 {
        match *self {
            Threshold::Bytes(b) => b,
            #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
            Threshold::Fraction(f) => (capacity as f64 * f) as i64,
        }
    }
}

/// What the node view is computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NodeInputs {
    /// `/proc/meminfo` `MemTotal`.
    pub mem_total: u64,
    /// `MemAvailable`.
    pub mem_available: u64,
    /// `Shmem`.
    pub shmem: u64,
    /// `Slab` + `KernelStack` + `PageTables`: kernel memory outside the root's `anon + file`.
    pub kernel: u64,
    /// Root `memory.stat` `anon`.
    pub anon: u64,
    /// Root `memory.stat` `file`.
    pub file: u64,
    /// Root `memory.stat` `active_file`.
    pub active_file: u64,
    /// Root `memory.stat` `inactive_file`.
    pub inactive_file: u64,
    /// Sum of the zones' low watermarks (`/proc/zoneinfo`), bytes; `None` when unknown.
    pub watermark_low: Option<u64>,
}

/// One reason the two usage views differ, with its size.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Factor {
    /// Short name.
    pub name: &'static str,
    /// What it is.
    pub description: &'static str,
    /// Its size, bytes.
    pub bytes: u64,
    /// Which view it makes look fuller: `kubelet` or `nodeExporter`.
    pub raises: &'static str,
}

/// The node's memory from both sides.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeView {
    /// `MemTotal`.
    pub mem_total_bytes: u64,
    /// `MemAvailable`.
    pub mem_available_bytes: u64,
    /// node-exporter's usage ratio, `1 − MemAvailable / MemTotal`.
    pub node_exporter_usage_ratio: f64,
    /// The root cgroup's usage as cAdvisor reads it on cgroup v2: `anon + file`.
    pub root_usage_bytes: u64,
    /// The root's working set: usage − `inactive_file`.
    pub root_working_set_bytes: u64,
    /// The kubelet's `memory.available`: `MemTotal` − root working set.
    pub kubelet_memory_available_bytes: i64,
    /// The kubelet's usage ratio: root working set / `MemTotal`.
    pub kubelet_usage_ratio: f64,
    /// The hard eviction threshold in bytes, when one is set.
    pub eviction_threshold_bytes: Option<i64>,
    /// `memory.available` − threshold: how much more the working set may grow before the
    /// kubelet starts evicting (negative: it is evicting).
    pub distance_to_eviction_bytes: Option<i64>,
    /// The four factors that make the views differ.
    pub factors: Vec<Factor>,
}

fn ratio(part: u64, whole: u64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

impl NodeView {
    /// Computes both views and the factors.
    pub fn compute(i: &NodeInputs, threshold: Option<Threshold>) -> NodeView {
        let usage = i.anon.saturating_add(i.file);
        let ws = working_set(usage, Some(i.inactive_file));
        let available = i64::try_from(i.mem_total)
            .unwrap_or(i64::MAX)
            .saturating_sub(i64::try_from(ws).unwrap_or(i64::MAX));
        let threshold_bytes = threshold.map(|t| t.bytes(i.mem_total));
        // si_mem_available(): page cache counts as available minus min(half, low watermark);
        // shmem sits on the anon LRU and never counts.
        let pagecache = i.active_file.saturating_add(i.inactive_file);
        let kept = i
            .watermark_low
            .map_or(pagecache / 2, |w| (pagecache / 2).min(w));
        let factors = vec![
            Factor {
                name: "activeFile",
                description: "active page cache: the working set counts all of it as used",
                bytes: i.active_file,
                raises: "kubelet",
            },
            Factor {
                name: "inactiveFile",
                description: "inactive page cache: the working set counts all of it as free",
                bytes: i.inactive_file,
                raises: "nodeExporter",
            },
            Factor {
                name: "pageCacheKeptByMemAvailable",
                description: "page cache MemAvailable does not count as free (min(half, low watermark)), plus shmem, which it never counts",
                bytes: kept.saturating_add(i.shmem),
                raises: "nodeExporter",
            },
            Factor {
                name: "kernelMemory",
                description: "slab, kernel stacks and page tables: not in the root's anon + file",
                bytes: i.kernel,
                raises: "nodeExporter",
            },
        ];
        NodeView {
            mem_total_bytes: i.mem_total,
            mem_available_bytes: i.mem_available,
            node_exporter_usage_ratio: 1.0 - ratio(i.mem_available, i.mem_total),
            root_usage_bytes: usage,
            root_working_set_bytes: ws,
            kubelet_memory_available_bytes: available,
            kubelet_usage_ratio: ratio(ws, i.mem_total),
            eviction_threshold_bytes: threshold_bytes,
            distance_to_eviction_bytes: threshold_bytes.map(|t| available.saturating_sub(t)),
            factors,
        }
    }
}

/// A pod as the eviction manager ranks it under memory pressure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvictionInput {
    /// The pod's working set; `None` when it has no stats (ranked first).
    pub usage: Option<u64>,
    /// The pod's memory request.
    pub request: u64,
    /// `spec.priority` (0 when unset).
    pub priority: i64,
    /// Critical pods (static, mirror, priority ≥ 2e9) are never evicted.
    pub critical: bool,
}

/// The kubelet's order (`rankMemoryPressure`): pods without stats, then pods whose usage
/// exceeds their request; then lower priority first; then larger usage above request first.
/// Equal pods keep their input order. Critical pods are left out (the kubelet refuses to evict
/// them). Returns input indices.
pub fn eviction_order(pods: &[EvictionInput]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..pods.len())
        .filter(|i| pods.get(*i).is_some_and(|p| !p.critical))
        .collect();
    let key = |i: &usize| {
        let p = pods.get(*i).copied().unwrap_or(EvictionInput {
            usage: None,
            request: 0,
            priority: 0,
            critical: false,
        });
        let exceeds = match p.usage {
            None => 0,
            Some(u) if u > p.request => 1,
            Some(_) => 2,
        };
        let above = p.usage.map_or(0, |u| i128::from(u) - i128::from(p.request));
        (exceeds, p.priority, std::cmp::Reverse(above))
    };
    order.sort_by_key(key);
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    const GI: u64 = 1 << 30;

    #[test]
    fn working_set_is_floored() {
        assert_eq!(working_set(100, Some(30)), 70);
        assert_eq!(working_set(100, Some(300)), 0);
        assert_eq!(working_set(100, None), 100);
    }

    #[test]
    fn eviction_thresholds_in_kubelet_syntax() {
        let p = Threshold::parse_eviction_hard;
        assert_eq!(
            p("memory.available<100Mi"),
            Ok(Some(Threshold::Bytes(104_857_600)))
        );
        assert_eq!(
            p("nodefs.available<10%, memory.available<10.5%"),
            Ok(Some(Threshold::Fraction(0.105)))
        );
        assert_eq!(p("memory.available<0%"), Ok(None));
        assert_eq!(p("memory.available<100%"), Ok(None));
        assert_eq!(p("nodefs.available<10%"), Ok(None));
        for bad in [
            "memory.available>1Gi",
            "memory.available<1GB",
            "memory.available<120%",
            "memory.available<0",
        ] {
            assert!(p(bad).is_err(), "{bad}");
        }
        assert_eq!(Threshold::Fraction(0.1).bytes(1000), 100);
    }

    #[test]
    fn the_pagecache_light_example_of_seed_004() {
        // MemTotal 3.820 GiB, MemAvailable 2.692 GiB, root anon + file 2.557 GiB,
        // inactive_file 1.622 GiB, active_file 0.227 GiB → 29.6 % against 24.5 %.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let g = |x: f64| (x * GI as f64) as u64;
        let i = NodeInputs {
            mem_total: g(3.820),
            mem_available: g(2.692),
            anon: g(2.557) - g(1.622) - g(0.227),
            file: g(1.622) + g(0.227),
            active_file: g(0.227),
            inactive_file: g(1.622),
            ..NodeInputs::default()
        };
        let v = NodeView::compute(&i, Some(Threshold::DEFAULT));
        assert!((v.node_exporter_usage_ratio - 0.296).abs() < 0.001, "{v:?}");
        assert!((v.kubelet_usage_ratio - 0.245).abs() < 0.001, "{v:?}");
        assert_eq!(v.root_working_set_bytes, i.anon + i.active_file);
        assert_eq!(
            v.distance_to_eviction_bytes,
            Some(v.kubelet_memory_available_bytes - 104_857_600)
        );
        assert_eq!(v.factors.len(), 4);
    }

    #[test]
    fn eviction_ranking() {
        let pod = |usage: Option<u64>, request: u64, priority: i64, critical: bool| EvictionInput {
            usage,
            request,
            priority,
            critical,
        };
        let pods = [
            pod(Some(GI), 2 * GI, 0, false),   // 0: within request
            pod(Some(3 * GI), GI, 100, false), // 1: exceeds, high priority
            pod(Some(2 * GI), GI, 0, false),   // 2: exceeds by 1Gi
            pod(Some(5 * GI), GI, 0, false),   // 3: exceeds by 4Gi
            pod(None, GI, 1000, false),        // 4: no stats
            pod(Some(9 * GI), 0, 0, true),     // 5: critical, never
            pod(Some(GI / 2), GI, -10, false), // 6: within, low priority
        ];
        assert_eq!(eviction_order(&pods), [4, 3, 2, 1, 6, 0]);
    }
}
