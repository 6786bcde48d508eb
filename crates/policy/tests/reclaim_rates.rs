//! The extension rates of issue 19: `d_node_memory_available`, the node's reclaim rates from
//! `/proc/vmstat` and the classes' from `memory.stat`, over measured time, with counter resets.

#![allow(clippy::unwrap_used, clippy::float_cmp)]

use oomwarden_model::{
    MemoryReading, MetricsSample, NodeMemory, PerClass, PsiReading, QosClass, Scalar, StatCounters,
    SubtreeSample, VmCounters,
};
use oomwarden_policy::{State, build_context};

const S: u64 = 1_000_000_000;

fn sample(
    at_ns: u64,
    available: u64,
    vm: Option<VmCounters>,
    stat: Option<StatCounters>,
) -> MetricsSample {
    let subtree = |dir: &str, class, stat| SubtreeSample {
        dir: dir.to_owned(),
        class,
        psi: PsiReading::Missing,
        memory: MemoryReading::default(),
        cgroup_id: Some(7),
        stat,
        swap_current: None,
        events: None,
    };
    MetricsSample {
        at_ns,
        subtrees: vec![
            subtree("", None, None),
            subtree("system", Some(QosClass::System), stat),
            subtree("init", Some(QosClass::System), stat),
        ],
        node_memory: Some(NodeMemory {
            total: 1 << 30,
            available,
        }),
        vmstat: vm,
        swap: None,
    }
}

fn vm(refault: u64, pgscan: u64, direct: u64, pgsteal: u64) -> Option<VmCounters> {
    Some(VmCounters {
        workingset_refault_file: refault,
        pgscan,
        pgscan_direct: direct,
        pgsteal,
        ..VmCounters::default()
    })
}

#[test]
fn rates_per_second_of_measured_time() {
    let mut state = State::new();
    let stat = |r, s| {
        Some(StatCounters {
            workingset_refault_file: r,
            pgscan: s,
        })
    };
    let first = build_context(
        &sample(0, 500 << 20, vm(100, 1000, 10, 900), stat(5, 50)),
        &mut state,
    )
    .unwrap();
    // No previous value: every rate is 0.
    assert_eq!(first.get(Scalar::DNodeMemoryAvailable), 0.0);
    assert_eq!(first.get(Scalar::DNodePgscan), 0.0);
    // Half a second later.
    let ctx = build_context(
        &sample(S / 2, 450 << 20, vm(600, 3000, 1010, 2400), stat(105, 250)),
        &mut state,
    )
    .unwrap();
    assert_eq!(
        ctx.get(Scalar::DNodeMemoryAvailable),
        -100.0 * 1048576.0,
        "50 MiB in 0.5 s"
    );
    assert_eq!(ctx.get(Scalar::DNodeWorkingsetRefaultFile), 1000.0);
    assert_eq!(ctx.get(Scalar::DNodePgscan), 4000.0);
    assert_eq!(ctx.get(Scalar::DNodePgscanDirect), 2000.0);
    assert_eq!(ctx.get(Scalar::DNodePgsteal), 3000.0);
    // Summed over the class's two subtrees, as the other class maps are.
    assert_eq!(
        ctx.class_map(PerClass::DQosWorkingsetRefaultFile)
            .get(QosClass::System),
        400.0
    );
    assert_eq!(
        ctx.class_map(PerClass::DQosPgscan).get(QosClass::System),
        800.0
    );
    assert_eq!(
        ctx.class_map(PerClass::DQosPgscan)
            .get(QosClass::Besteffort),
        0.0
    );
}

#[test]
fn a_counter_that_goes_back_or_is_not_read_gives_no_rate() {
    let mut state = State::new();
    build_context(
        &sample(0, 500 << 20, vm(100, 1000, 10, 900), None),
        &mut state,
    )
    .unwrap();
    // A counter going backwards (it cannot: a reset) is no negative rate.
    let ctx = build_context(
        &sample(S, 500 << 20, vm(50, 2000, 10, 900), None),
        &mut state,
    )
    .unwrap();
    assert_eq!(ctx.get(Scalar::DNodeWorkingsetRefaultFile), 0.0);
    assert_eq!(ctx.get(Scalar::DNodePgscan), 1000.0);
    // Not read this cycle (the trigger stopped naming it): 0, and no stale previous value.
    let ctx = build_context(&sample(2 * S, 500 << 20, None, None), &mut state).unwrap();
    assert_eq!(ctx.get(Scalar::DNodePgscan), 0.0);
    let ctx = build_context(
        &sample(3 * S, 500 << 20, vm(60, 9000, 10, 900), None),
        &mut state,
    )
    .unwrap();
    assert_eq!(ctx.get(Scalar::DNodePgscan), 0.0, "a first value again");
    // A JSON record carries them.
    assert!(ctx.to_json().contains("\"d_node_pgscan\":0,"));
}

/// Issue 35: the swap lines and the swap rates: `node_swap_*` and `node_zswap_bytes` as read,
/// `d_node_pswpin`/`d_node_pswpout` per second of measured time.
#[test]
fn swap_values_and_swap_rates() {
    let mut state = State::new();
    let swapping = |at_ns, pswpin: u64, pswpout: u64| {
        let mut s = sample(at_ns, 1 << 29, None, None);
        s.vmstat = Some(VmCounters {
            pswpin,
            pswpout,
            // zswap's counters move on their own (a tenth of the disk's here).
            zswpin: pswpin / 10,
            zswpout: pswpout / 10,
            ..VmCounters::default()
        });
        s.swap = Some(oomwarden_model::NodeSwap {
            total: 4 << 30,
            free: 1 << 30,
            zswap: 200 << 20,
        });
        // Both System subtrees hold swap: the class's is their sum.
        for t in s.subtrees.iter_mut().filter(|t| t.class.is_some()) {
            t.swap_current = Some(3 << 20);
        }
        s
    };
    build_context(&swapping(1_000_000_000, 100, 1_000), &mut state).unwrap();
    let ctx = build_context(&swapping(3_000_000_000, 700, 5_000), &mut state).unwrap();
    assert_eq!(ctx.get(Scalar::NodeSwapTotal), 4.0 * 1_073_741_824.0);
    assert_eq!(ctx.get(Scalar::NodeSwapFree), 1_073_741_824.0);
    assert_eq!(ctx.get(Scalar::NodeZswapBytes), 200.0 * 1_048_576.0);
    assert_eq!(ctx.get(Scalar::DNodePswpin), 300.0);
    assert_eq!(ctx.get(Scalar::DNodePswpout), 2_000.0);
    assert_eq!(ctx.get(Scalar::DNodeZswpin), 30.0);
    assert_eq!(ctx.get(Scalar::DNodeZswpout), 200.0);
    assert_eq!(
        ctx.class_map(oomwarden_model::PerClass::QosMemorySwapCurrent)
            .get(QosClass::System),
        6.0 * 1_048_576.0
    );
}

/// Issue 35: `d_qos_memory_events_*` are each class's `memory.events` counters per second of
/// measured time (the class's subtrees summed), so a trigger can tell stall a cgroup inflicts
/// on itself against its own limit.
#[test]
fn memory_events_rates_per_class() {
    let mut state = State::new();
    let at = |at_ns, high, max, oom| {
        let mut s = sample(at_ns, 1 << 29, None, None);
        for t in s.subtrees.iter_mut().filter(|t| t.class.is_some()) {
            t.events = Some(oomwarden_model::EventCounters { high, max, oom });
        }
        s
    };
    build_context(&at(1_000_000_000, 10, 2, 0), &mut state).unwrap();
    let ctx = build_context(&at(3_000_000_000, 50, 6, 1), &mut state).unwrap();
    let system = |v| ctx.class_map(v).get(QosClass::System);
    use oomwarden_model::PerClass;
    // Two System subtrees, each +40 high in 2 s: 20/s each.
    assert_eq!(system(PerClass::DQosMemoryEventsHigh), 40.0);
    assert_eq!(system(PerClass::DQosMemoryEventsMax), 4.0);
    assert_eq!(system(PerClass::DQosMemoryEventsOom), 1.0);
}

/// Issue 35, found in VM scenario S23: on Linux 6.12 a zero page goes to swap without a write
/// (and zswap's pages never reach the disk), so `pswpout` stays still while swap fills:
/// `d_node_swap_free` is SwapFree's own rate, negative while swap fills, positive as it frees
/// (a gauge, not a counter: no reset), 0 without a previous reading.
#[test]
fn swap_free_rate_follows_swap_filling_and_freeing() {
    let mut state = State::new();
    let at = |at_ns, free: u64| {
        let mut s = sample(at_ns, 1 << 29, None, None);
        s.swap = Some(oomwarden_model::NodeSwap {
            total: 1 << 30,
            free,
            zswap: 0,
        });
        s
    };
    let first = build_context(&at(1_000_000_000, 800 << 20), &mut state).unwrap();
    assert_eq!(first.get(Scalar::DNodeSwapFree), 0.0);
    let filling = build_context(&at(1_500_000_000, 780 << 20), &mut state).unwrap();
    assert_eq!(filling.get(Scalar::DNodeSwapFree), -40.0 * 1_048_576.0);
    let freed = build_context(&at(2_500_000_000, 1000 << 20), &mut state).unwrap();
    assert_eq!(freed.get(Scalar::DNodeSwapFree), 220.0 * 1_048_576.0);
    // Not read (the trigger stopped naming it): the next reading starts again.
    build_context(&sample(3_000_000_000, 1 << 29, None, None), &mut state).unwrap();
    let again = build_context(&at(3_500_000_000, 10 << 20), &mut state).unwrap();
    assert_eq!(again.get(Scalar::DNodeSwapFree), 0.0);
}
