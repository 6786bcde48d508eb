//! The swap limit the kubelet writes on each container (node swap, KEP-2400, GA since
//! Kubernetes 1.34): pkg/kubelet/kuberuntime/kuberuntime_container_linux.go,
//! `GetContainerSwapBehavior`, `ConfigureLimitedSwap` and `calcSwapForBurstablePods`, as the
//! kubelet computes them on cgroup v2 with the swap controller present.
//!
//! `LimitedSwap` gives a Burstable pod's container `memory.swap.max` = its memory request ÷
//! the node's memory capacity × the node's swap capacity (float64, truncated); every other
//! container gets `NoSwap`, which the kubelet writes as `memory.swap.max` 0.

use serde::Serialize;

use super::PodQos;

/// The kubelet's `memorySwap.swapBehavior` (its default, `NoSwap`, since 1.30).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SwapBehavior {
    /// No container may swap: `memory.swap.max` 0 everywhere.
    NoSwap,
    /// Burstable containers may swap in proportion to their memory request.
    LimitedSwap,
}

impl SwapBehavior {
    /// Reads the kubelet's spelling.
    pub fn parse(text: &str) -> Option<SwapBehavior> {
        match text {
            "NoSwap" => Some(SwapBehavior::NoSwap),
            "LimitedSwap" => Some(SwapBehavior::LimitedSwap),
            _ => None,
        }
    }
}

/// The node's swap as the kubelet sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeSwap {
    /// `memorySwap.swapBehavior`.
    pub behavior: SwapBehavior,
    /// The swap capacity, bytes (cAdvisor's `SwapCapacity`: `/proc/meminfo`'s `SwapTotal`).
    pub capacity: i64,
}

/// Why a container gets the swap it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SwapReason {
    /// `LimitedSwap`: request ÷ node memory × node swap.
    Proportional,
    /// The kubelet's `swapBehavior` is `NoSwap`.
    BehaviorNoSwap,
    /// A critical pod (static, mirror, or priority ≥ 2e9) never swaps.
    Critical,
    /// Only Burstable pods swap.
    NotBurstable,
    /// The container has neither a memory request nor a memory limit.
    NoMemoryRequest,
    /// Its memory request equals its limit.
    RequestEqualsLimit,
    /// Its memory request is larger than the node's memory (the kubelet logs an error and
    /// gives no swap).
    RequestAboveNodeMemory,
}

impl SwapReason {
    /// In words.
    pub fn describe(self) -> &'static str {
        match self {
            SwapReason::Proportional => "request / node memory x node swap",
            SwapReason::BehaviorNoSwap => "swapBehavior NoSwap",
            SwapReason::Critical => "critical pod",
            SwapReason::NotBurstable => "not Burstable",
            SwapReason::NoMemoryRequest => "no memory request or limit",
            SwapReason::RequestEqualsLimit => "memory request equals limit",
            SwapReason::RequestAboveNodeMemory => "request above node memory",
        }
    }
}

/// What the kubelet writes on a container: its behaviour and `memory.swap.max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerSwap {
    /// `LimitedSwap` when the container may swap, else `NoSwap`.
    pub behavior: SwapBehavior,
    /// `memory.swap.max`, bytes (0 for `NoSwap`).
    pub memory_swap_max_bytes: i64,
    /// Why.
    pub reason: SwapReason,
}

/// What the container gets, from the pod's class and criticality and the container's memory
/// request and limit after defaulting (`limit` 0 when it has none), on a node with
/// `memory_capacity` bytes of memory.
pub(crate) fn container_swap(
    node: NodeSwap,
    memory_capacity: i64,
    qos: PodQos,
    critical: bool,
    request: i128,
    limit: i128,
) -> ContainerSwap {
    let none = |reason| ContainerSwap {
        behavior: SwapBehavior::NoSwap,
        memory_swap_max_bytes: 0,
        reason,
    };
    // GetContainerSwapBehavior, in its order.
    if node.behavior == SwapBehavior::NoSwap {
        return none(SwapReason::BehaviorNoSwap);
    }
    if critical {
        return none(SwapReason::Critical);
    }
    if qos != PodQos::Burstable {
        return none(SwapReason::NotBurstable);
    }
    if request == 0 && limit == 0 {
        return none(SwapReason::NoMemoryRequest);
    }
    // `Requests.Memory().Cmp(*Limits.Memory()) == 0`: an absent limit compares as 0.
    if request == limit {
        return none(SwapReason::RequestEqualsLimit);
    }
    // calcSwapForBurstablePods: an error (node memory 0, request above it) is NoSwap.
    let Ok(request) = i64::try_from(request) else {
        return none(SwapReason::RequestAboveNodeMemory);
    };
    if memory_capacity <= 0 || request > memory_capacity {
        return none(SwapReason::RequestAboveNodeMemory);
    }
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        reason = "float64 and its truncation toward zero, as the kubelet computes"
    )]
    let max = (request as f64 / memory_capacity as f64 * node.capacity as f64) as i64;
    ContainerSwap {
        behavior: SwapBehavior::LimitedSwap,
        memory_swap_max_bytes: max,
        reason: SwapReason::Proportional,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GI: i64 = 1 << 30;
    const MI: i128 = 1 << 20;

    fn limited(swap: i64) -> NodeSwap {
        NodeSwap {
            behavior: SwapBehavior::LimitedSwap,
            capacity: swap,
        }
    }

    /// The kubelet's own vectors (`TestCalcSwapForBurstablePods`: request, node memory, node
    /// swap, expected `memory.swap.max`), and the same reached through a pod's class.
    #[test]
    fn the_kubelets_vectors() {
        for (request, memory, swap, expected) in [
            (GI, 80 * GI, 4 * GI, 53_687_091),
            (2 * GI, 40 * GI, 2 * GI, 107_374_182),
            (5 * GI, 150 * GI, 40 * GI, 1_431_655_765),
        ] {
            let c = container_swap(
                limited(swap),
                memory,
                PodQos::Burstable,
                false,
                i128::from(request),
                0,
            );
            assert_eq!(c.behavior, SwapBehavior::LimitedSwap);
            assert_eq!(c.reason, SwapReason::Proportional);
            assert_eq!(
                c.memory_swap_max_bytes, expected,
                "{request} {memory} {swap}"
            );
            // A limit above the request plays no part.
            let with_limit = container_swap(
                limited(swap),
                memory,
                PodQos::Burstable,
                false,
                i128::from(request),
                i128::from(request) * 2,
            );
            assert_eq!(with_limit, c);
        }
        // Truncated toward zero, not rounded.
        let c = container_swap(limited(1_000), 3, PodQos::Burstable, false, 2, 0);
        assert_eq!(c.memory_swap_max_bytes, 666);
    }

    #[test]
    fn no_swap_in_each_case_the_kubelet_refuses() {
        let cases = [
            (
                NodeSwap {
                    behavior: SwapBehavior::NoSwap,
                    capacity: GI,
                },
                PodQos::Burstable,
                false,
                MI,
                0,
                SwapReason::BehaviorNoSwap,
            ),
            (
                limited(GI),
                PodQos::Burstable,
                true,
                MI,
                0,
                SwapReason::Critical,
            ),
            (
                limited(GI),
                PodQos::Guaranteed,
                false,
                MI,
                MI,
                SwapReason::NotBurstable,
            ),
            (
                limited(GI),
                PodQos::BestEffort,
                false,
                0,
                0,
                SwapReason::NotBurstable,
            ),
            (
                limited(GI),
                PodQos::Burstable,
                false,
                0,
                0,
                SwapReason::NoMemoryRequest,
            ),
            (
                limited(GI),
                PodQos::Burstable,
                false,
                MI,
                MI,
                SwapReason::RequestEqualsLimit,
            ),
            (
                limited(GI),
                PodQos::Burstable,
                false,
                2 * i128::from(GI),
                0,
                SwapReason::RequestAboveNodeMemory,
            ),
            (
                limited(GI),
                PodQos::Burstable,
                false,
                i128::MAX,
                0,
                SwapReason::RequestAboveNodeMemory,
            ),
        ];
        for (node, qos, critical, request, limit, reason) in cases {
            let c = container_swap(node, GI, qos, critical, request, limit);
            assert_eq!(
                c,
                ContainerSwap {
                    behavior: SwapBehavior::NoSwap,
                    memory_swap_max_bytes: 0,
                    reason
                },
                "{reason:?}"
            );
        }
    }

    proptest::proptest! {
        /// Never above the node's swap, never negative, never a panic.
        #[test]
        fn within_the_nodes_swap(
            request in 0i128..=i128::from(i64::MAX),
            limit in 0i128..=i128::from(i64::MAX),
            memory in i64::MIN..=i64::MAX,
            swap in 0i64..=i64::MAX,
        ) {
            let c = container_swap(limited(swap), memory, PodQos::Burstable, false, request, limit);
            proptest::prop_assert!(c.memory_swap_max_bytes >= 0);
            proptest::prop_assert!(c.memory_swap_max_bytes <= swap);
        }
    }
}
