//! The Talos test vectors (`talos-oom-testcases.md` T2–T8, D1–D14) run through our collector
//! and policy on the verbatim fixture trees in `testdata/talos`, plus a test for each
//! deliberate difference from Talos.

// Test code: unwrap on expected outcomes is the assertion.
#![allow(clippy::unwrap_used, clippy::disallowed_methods, clippy::float_cmp)]

use std::path::Path;

use oomwarden_cgroupfs::CgroupFs;
use oomwarden_collect::Collector;
use oomwarden_expr::{RankingExpr, RankingInput, TriggerExpr};
use oomwarden_model::{
    CandidateSample, ClassMap, Layout, Limit, MemoryReading, MetricsSample, PerClass, PsiKind,
    PsiSpan, QosClass, Scalar, TriggerContext,
};
use oomwarden_policy::{Exclusion, State, build_context, rank, select};
use oomwarden_procfs::ProcFs;
use oomwarden_testkit::{copy_talos_fixture as copy, talos_fixture as fixture};

const MS: u64 = 1_000_000;
const DEFAULT_TRIGGER: &str = "multiply_qos_vectors(d_qos_memory_full_total, {System: 8.0, Podruntime: 4.0}) > 3000.0 &&\nmultiply_qos_vectors(qos_memory_full_avg10, {System: 1.0, Podruntime: 1.0}) > 5.0 &&\ntime_since_trigger > duration(\"5s\")";
const DEFAULT_RANKING: &str = "memory_max.hasValue() ? 0.0 :\n{Besteffort: 1.0, Burstable: 0.5, Guaranteed: 0.0, Podruntime: 0.0, System: 0.0}[class] *\ndouble(memory_current.orValue(0u))";

fn collector(root: &Path) -> Collector {
    Collector::new(
        CgroupFs::new(root),
        ProcFs::new(oomwarden_testkit::proc_fixture()),
        Layout::talos(),
        None,
    )
}

fn sample(root: &Path, at_ns: u64) -> MetricsSample {
    let (sample, problems) = collector(root).metrics(at_ns);
    assert!(problems.is_empty(), "{problems:?}");
    sample
}

fn classes(m: ClassMap) -> [f64; 5] {
    m.0
}

#[test]
fn t2_1_empty_tree_is_all_zeros() {
    let ctx = build_context(&sample(&fixture("does-not-exist"), 0), &mut State::new()).unwrap();
    // Talos's 39 variables are all zero; our extensions come from /proc, not the tree.
    assert_eq!(ctx.to_talos_json(), TriggerContext::new().to_talos_json());
    assert_eq!(ctx.get(Scalar::NodeMemoryAvailable), 782_780.0 * 1024.0);
    assert_eq!(ctx.get(Scalar::NodeMemoryTotal), 998_096.0 * 1024.0);
}

#[test]
fn t2_2_trigger_false_values() {
    let ctx = build_context(&sample(&fixture("trigger-false"), 0), &mut State::new()).unwrap();
    let root = |k, s| ctx.get(Scalar::root_psi(false, k, s));
    assert_eq!(
        [
            root(PsiKind::Some, PsiSpan::Avg10),
            root(PsiKind::Some, PsiSpan::Avg60),
            root(PsiKind::Some, PsiSpan::Avg300),
            root(PsiKind::Some, PsiSpan::Total)
        ],
        [2.82, 5.95, 1.97, 12172340.0]
    );
    assert_eq!(
        [
            root(PsiKind::Full, PsiSpan::Avg10),
            root(PsiKind::Full, PsiSpan::Avg60),
            root(PsiKind::Full, PsiSpan::Avg300),
            root(PsiKind::Full, PsiSpan::Total)
        ],
        [2.4, 5.16, 1.71, 10654831.0]
    );
    let q = |k, s| classes(ctx.class_map(PerClass::psi(false, k, s)));
    assert_eq!(
        q(PsiKind::Some, PsiSpan::Avg10),
        [0.0, 0.0, 0.0, 2.82, 5.64]
    );
    assert_eq!(
        q(PsiKind::Some, PsiSpan::Avg60),
        [0.0, 0.0, 0.0, 5.95, 11.9]
    );
    assert_eq!(
        q(PsiKind::Some, PsiSpan::Avg300),
        [0.0, 0.0, 0.0, 1.97, 3.94]
    );
    assert_eq!(
        q(PsiKind::Some, PsiSpan::Total),
        [0.0, 0.0, 0.0, 12172340.0, 24344680.0]
    );
    assert_eq!(q(PsiKind::Full, PsiSpan::Avg10), [0.0, 0.0, 0.0, 2.4, 4.8]);
    assert_eq!(
        q(PsiKind::Full, PsiSpan::Avg60),
        [0.0, 0.0, 0.0, 5.16, 10.32]
    );
    assert_eq!(
        q(PsiKind::Full, PsiSpan::Avg300),
        [0.0, 0.0, 0.0, 1.71, 3.42]
    );
    assert_eq!(
        q(PsiKind::Full, PsiSpan::Total),
        [0.0, 0.0, 0.0, 10654831.0, 10654937.0]
    );
    for kind in PsiKind::ALL {
        for span in PsiSpan::ALL {
            assert_eq!(ctx.get(Scalar::root_psi(true, kind, span)), 0.0);
            assert_eq!(
                classes(ctx.class_map(PerClass::psi(true, kind, span))),
                [0.0; 5]
            );
        }
    }
    for usage in [
        PerClass::QosMemoryCurrent,
        PerClass::QosMemoryPeak,
        PerClass::QosMemoryMax,
        PerClass::DQosMemoryCurrent,
        PerClass::DQosMemoryPeak,
        PerClass::DQosMemoryMax,
    ] {
        assert_eq!(classes(ctx.class_map(usage)), [0.0; 5]);
    }
}

#[test]
fn t2_3_and_t8_trigger_true_values_and_json() {
    let ctx = build_context(&sample(&fixture("trigger-true"), 0), &mut State::new()).unwrap();
    let q = |k, s| classes(ctx.class_map(PerClass::psi(false, k, s)));
    assert_eq!(
        q(PsiKind::Some, PsiSpan::Avg10),
        [17.06, 0.0, 11.0, 17.06, 34.12]
    );
    assert_eq!(
        q(PsiKind::Some, PsiSpan::Avg60),
        [8.04, 0.0, 22.0, 8.04, 16.08]
    );
    assert_eq!(
        q(PsiKind::Some, PsiSpan::Avg300),
        [2.1, 0.0, 33.0, 2.1, 4.2]
    );
    assert_eq!(
        q(PsiKind::Some, PsiSpan::Total),
        [12172340.0, 0.0, 1100.0, 12172340.0, 24344680.0]
    );
    assert_eq!(
        q(PsiKind::Full, PsiSpan::Avg10),
        [14.54, 0.0, 55.0, 14.54, 29.08]
    );
    assert_eq!(
        q(PsiKind::Full, PsiSpan::Avg60),
        [6.97, 0.0, 66.0, 6.97, 13.94]
    );
    assert_eq!(
        q(PsiKind::Full, PsiSpan::Avg300),
        [1.82, 0.0, 77.0, 1.82, 3.64]
    );
    assert_eq!(
        q(PsiKind::Full, PsiSpan::Total),
        [10654831.0, 0.0, 5500.0, 10654831.0, 21309662.0]
    );
    let t8 = r#"{"d_memory_full_avg10":0,"d_memory_full_avg300":0,"d_memory_full_avg60":0,"d_memory_full_total":0,"d_memory_some_avg10":0,"d_memory_some_avg300":0,"d_memory_some_avg60":0,"d_memory_some_total":0,"d_qos_memory_current":{"0":0,"1":0,"2":0,"3":0,"4":0},"d_qos_memory_full_avg10":{"0":0,"1":0,"2":0,"3":0,"4":0},"d_qos_memory_full_avg300":{"0":0,"1":0,"2":0,"3":0,"4":0},"d_qos_memory_full_avg60":{"0":0,"1":0,"2":0,"3":0,"4":0},"d_qos_memory_full_total":{"0":0,"1":0,"2":0,"3":0,"4":0},"d_qos_memory_max":{"0":0,"1":0,"2":0,"3":0,"4":0},"d_qos_memory_peak":{"0":0,"1":0,"2":0,"3":0,"4":0},"d_qos_memory_some_avg10":{"0":0,"1":0,"2":0,"3":0,"4":0},"d_qos_memory_some_avg300":{"0":0,"1":0,"2":0,"3":0,"4":0},"d_qos_memory_some_avg60":{"0":0,"1":0,"2":0,"3":0,"4":0},"d_qos_memory_some_total":{"0":0,"1":0,"2":0,"3":0,"4":0},"memory_full_avg10":14.54,"memory_full_avg300":1.82,"memory_full_avg60":6.97,"memory_full_total":10654831,"memory_some_avg10":17.06,"memory_some_avg300":2.1,"memory_some_avg60":8.04,"memory_some_total":12172340,"qos_memory_current":{"0":0,"1":0,"2":0,"3":0,"4":0},"qos_memory_full_avg10":{"0":14.54,"1":0,"2":55,"3":14.54,"4":29.08},"qos_memory_full_avg300":{"0":1.82,"1":0,"2":77,"3":1.82,"4":3.64},"qos_memory_full_avg60":{"0":6.97,"1":0,"2":66,"3":6.97,"4":13.94},"qos_memory_full_total":{"0":10654831,"1":0,"2":5500,"3":10654831,"4":21309662},"qos_memory_max":{"0":0,"1":0,"2":0,"3":0,"4":0},"qos_memory_peak":{"0":0,"1":0,"2":0,"3":0,"4":0},"qos_memory_some_avg10":{"0":17.06,"1":0,"2":11,"3":17.06,"4":34.12},"qos_memory_some_avg300":{"0":2.1,"1":0,"2":33,"3":2.1,"4":4.2},"qos_memory_some_avg60":{"0":8.04,"1":0,"2":22,"3":8.04,"4":16.08},"qos_memory_some_total":{"0":12172340,"1":0,"2":1100,"3":12172340,"4":24344680},"time_since_trigger":9223372036854775807}"#;
    assert_eq!(ctx.to_talos_json(), t8);
    assert!(
        !TriggerExpr::compile(DEFAULT_TRIGGER)
            .unwrap()
            .eval(&ctx)
            .unwrap(),
        "first cycle: every d_ is 0"
    );
}

/// T3: the previous value of `init/memory_full_total` is 0, half a second earlier.
fn t3_context(fixture_name: &str, since_trigger_ms: Option<u64>) -> TriggerContext {
    let dir = copy(fixture_name);
    let init = dir.path().join("init/memory.pressure");
    let original = std::fs::read_to_string(&init).unwrap_or_default();
    let mut state = State::new();
    let t0 = 100_000 * MS;
    if !original.is_empty() {
        let zeroed = original
            .lines()
            .map(|l| {
                if l.starts_with("full") {
                    l.rsplit_once("total=")
                        .map_or(l.to_owned(), |(head, _)| format!("{head}total=0"))
                } else {
                    l.to_owned()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(&init, zeroed).unwrap();
        build_context(&sample(dir.path(), t0), &mut state).unwrap();
        std::fs::write(&init, original).unwrap();
    }
    let t1 = t0 + 500 * MS;
    if let Some(ms) = since_trigger_ms {
        state.triggered(t1 - ms * MS);
    }
    build_context(&sample(dir.path(), t1), &mut state).unwrap()
}

#[test]
fn t3_trigger_evaluation() {
    let default = TriggerExpr::compile(DEFAULT_TRIGGER).unwrap();
    assert!(
        !default
            .eval(&t3_context("does-not-exist", Some(3000)))
            .unwrap(),
        "empty"
    );
    let ctx = t3_context("trigger-false", Some(3000));
    assert_eq!(
        ctx.class_map(PerClass::DQosMemoryFullTotal)
            .get(QosClass::System),
        212.0
    );
    assert!(!default.eval(&ctx).unwrap(), "cgroup-false: 8*212 <= 3000");
    let ctx = t3_context("trigger-true", Some(6000));
    assert_eq!(
        ctx.class_map(PerClass::DQosMemoryFullTotal)
            .get(QosClass::System),
        21309662.0
    );
    assert!(default.eval(&ctx).unwrap(), "cgroup-true-cool");
    let hot = t3_context("trigger-true", Some(300));
    assert!(
        !TriggerExpr::compile(
            "memory_full_avg10 > 12.0 && time_since_trigger > duration(\"500ms\")"
        )
        .unwrap()
        .eval(&hot)
        .unwrap()
    );
    assert!(
        TriggerExpr::compile(
            "memory_full_avg10 > 12.0 && time_since_trigger > duration(\"250ms\")"
        )
        .unwrap()
        .eval(&hot)
        .unwrap()
    );
    let mqv = "multiply_qos_vectors({Besteffort: 5.0, Burstable: 2.0, Guaranteed: 0.0, System: 1.0}, {Besteffort: 1.0, Burstable: -1.0, Guaranteed: 3.0}) == 3.0";
    assert!(
        TriggerExpr::compile(mqv)
            .unwrap()
            .eval(&t3_context("trigger-true", None))
            .unwrap()
    );
}

fn candidate(
    path: &str,
    class: QosClass,
    current: Option<u64>,
    max: Option<Limit>,
) -> CandidateSample {
    CandidateSample {
        growth: None,
        swap: None,
        protection: None,
        pressure: None,
        path: path.to_owned(),
        dir: path.trim_start_matches('/').to_owned(),
        class,
        memory: MemoryReading {
            current,
            peak: current,
            max,
        },
        populated: true,
        contains_self: false,
        read_errors: Vec::new(),
        cgroup_id: None,
        oom_score_adj: None,
    }
}

#[test]
fn t4_score() {
    let r = RankingExpr::compile(DEFAULT_RANKING).unwrap();
    let input = RankingInput {
        memory_max: None,
        memory_current: Some(42),
        memory_peak: Some(50),
        path: "/some/path",
        class: QosClass::Burstable,
        pod_uid: "",
        pod: None,
        oom_score_adj: 0,
        workload_kills: 0,
        memory_swap_current: None,
        memory_swap_max: None,
        memory_min: None,
        memory_low: None,
        memory_high: None,
        pressure_some_avg10: 0.0,
        pressure_full_avg10: 0.0,
        d_memory_current: 0.0,
    };
    assert_eq!(r.eval(&input), Ok(21.0));
}

#[test]
fn t5_ranking_on_rank1() {
    let (candidates, problems) = collector(&fixture("rank1")).candidates();
    assert!(problems.is_empty());
    let scores = |expr: &str| -> Vec<(String, QosClass, f64)> {
        let ranking = rank(&RankingExpr::compile(expr).unwrap(), &candidates);
        ranking
            .eligible
            .iter()
            .map(|s| {
                let c = &candidates[s.index];
                (c.dir.clone(), c.class, s.score)
            })
            .collect()
    };
    assert_eq!(
        scores(DEFAULT_RANKING),
        [
            (
                "kubepods/besteffort/pod123".to_owned(),
                QosClass::Besteffort,
                222593024.0
            ),
            (
                "kubepods/burstable/podABC".to_owned(),
                QosClass::Burstable,
                21.0
            ),
        ]
    );
    let guaranteed = "memory_max.hasValue() ? 0.0 : {Besteffort: 1.0, Burstable: 0.5, Guaranteed: 1.0, Podruntime: 0.0, System: 0.0}[class] * double(memory_current.orValue(0u))";
    assert_eq!(scores(guaranteed).len(), 3);
    assert_eq!(
        scores(guaranteed)[2],
        (
            "kubepods/podapiserver".to_owned(),
            QosClass::Guaranteed,
            222593024.0
        )
    );
    // `path` is the node's path, as Talos gives it, though the tree was read elsewhere.
    assert_eq!(
        candidates[0].path,
        "/sys/fs/cgroup/kubepods/besteffort/pod123"
    );
    // So a ranking written against the node's paths chooses under any root.
    let by_path = r#"path.startsWith("/sys/fs/cgroup/kubepods/besteffort/") ? 1.0 : 0.0"#;
    let ranked = scores(by_path);
    assert_eq!(ranked.len(), 1, "{ranked:?}");
    assert_eq!(ranked[0].0, "kubepods/besteffort/pod123");
    assert_eq!(candidates[0].memory.max, Some(Limit::Max));
}

#[test]
fn t6_victim_selection() {
    use QosClass::*;
    let cands = [
        candidate("/be-small", Besteffort, Some(100), None),
        candidate("/be-large", Besteffort, Some(500), None),
        candidate("/bu", Burstable, Some(835), None),
        candidate("/gu", Guaranteed, Some(10), None),
    ];
    let pick = |scores: &[(usize, f64)], strict: bool| -> Option<(&str, f64)> {
        let ranking = oomwarden_policy::Ranking {
            eligible: scores
                .iter()
                .filter(|(_, s)| *s > 0.0)
                .map(|&(index, score)| oomwarden_policy::Scored { index, score })
                .collect(),
            excluded: Vec::new(),
        };
        select(&ranking, &cands, strict).map(|s| (cands[s.index].path.as_str(), s.score))
    };
    assert_eq!(pick(&[], true), None);
    assert_eq!(pick(&[(0, 0.0), (2, 0.0)], true), None);
    assert_eq!(
        pick(&[(0, 100.0), (2, 835.0)], true),
        Some(("/be-small", 100.0))
    );
    assert_eq!(
        pick(&[(0, 100.0), (1, 500.0), (2, 835.0)], true),
        Some(("/be-large", 500.0))
    );
    assert_eq!(
        pick(&[(0, 0.0), (1, 500.0)], true),
        Some(("/be-large", 500.0))
    );
    assert_eq!(
        pick(&[(0, 0.0), (2, 835.0), (3, 0.0)], true),
        Some(("/bu", 835.0))
    );
    assert_eq!(pick(&[(0, 100.0), (2, 835.0)], false), Some(("/bu", 835.0)));
    assert_eq!(pick(&[], false), None);
}

#[test]
fn d1_class_derivatives_sum_subtrees() {
    let dir = copy("trigger-false");
    let set = |file: &str, total: u64| {
        std::fs::write(dir.path().join(file), format!("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total={total}\n")).unwrap();
    };
    let mut state = State::new();
    set("init/memory.pressure", 1000);
    set("system/memory.pressure", 2000);
    let c1 = build_context(&sample(dir.path(), 0), &mut state).unwrap();
    assert_eq!(
        c1.class_map(PerClass::DQosMemoryFullTotal)
            .get(QosClass::System),
        0.0
    );
    set("init/memory.pressure", 1600);
    set("system/memory.pressure", 2300);
    let c2 = build_context(&sample(dir.path(), 500 * MS), &mut state).unwrap();
    assert_eq!(
        c2.class_map(PerClass::DQosMemoryFullTotal)
            .get(QosClass::System),
        1800.0
    );
}

#[test]
fn difference_derivatives_use_measured_time() {
    // Talos divides by the configured interval; a cycle 1 s after the previous one (a slow
    // cycle, or skipped ticks) would read double the real rate there.
    let dir = copy("trigger-false");
    let mut state = State::new();
    let write = |t: u64| {
        std::fs::write(
            dir.path().join("system/memory.pressure"),
            format!(
                "some avg10=0 avg60=0 avg300=0 total=0\nfull avg10=0 avg60=0 avg300=0 total={t}\n"
            ),
        )
        .unwrap()
    };
    write(0);
    build_context(&sample(dir.path(), 0), &mut state).unwrap();
    write(1_000_000);
    let ctx = build_context(&sample(dir.path(), 1000 * MS), &mut state).unwrap();
    assert_eq!(
        ctx.class_map(PerClass::DQosMemoryFullTotal)
            .get(QosClass::System),
        1_000_000.0
    );
}

#[test]
fn difference_memory_derivatives_are_real_d2() {
    let dir = copy("trigger-false");
    std::fs::create_dir_all(dir.path().join("kubepods/besteffort")).unwrap();
    let mut state = State::new();
    std::fs::write(
        dir.path().join("kubepods/besteffort/memory.current"),
        "100\n",
    )
    .unwrap();
    build_context(&sample(dir.path(), 0), &mut state).unwrap();
    std::fs::write(
        dir.path().join("kubepods/besteffort/memory.current"),
        "300\n",
    )
    .unwrap();
    let ctx = build_context(&sample(dir.path(), 500 * MS), &mut state).unwrap();
    assert_eq!(
        ctx.class_map(PerClass::QosMemoryCurrent)
            .get(QosClass::Besteffort),
        300.0
    );
    // Talos reports 0 here (never-stored previous value); the real rate is 200 B / 0.5 s.
    assert_eq!(
        ctx.class_map(PerClass::DQosMemoryCurrent)
            .get(QosClass::Besteffort),
        400.0
    );
}

#[test]
fn difference_new_cgroup_contributes_zero_and_vanished_keys_are_forgotten() {
    let dir = copy("trigger-true");
    let mut state = State::new();
    std::fs::remove_dir_all(dir.path().join("kubepods/pod-guaranteed-2")).unwrap();
    build_context(&sample(dir.path(), 0), &mut state).unwrap();
    let before = state.remembered_keys();
    std::fs::create_dir_all(dir.path().join("kubepods/pod-guaranteed-2")).unwrap();
    std::fs::write(dir.path().join("kubepods/pod-guaranteed-2/memory.pressure"), "some avg10=10.00 avg60=20.00 avg300=30.00 total=1000\nfull avg10=50.00 avg60=60.00 avg300=70.00 total=5000\n").unwrap();
    let ctx = build_context(&sample(dir.path(), 500 * MS), &mut state).unwrap();
    assert_eq!(
        ctx.class_map(PerClass::DQosMemoryFullTotal)
            .get(QosClass::Guaranteed),
        0.0,
        "first cycle of a new pod: no spike"
    );
    assert_eq!(
        ctx.class_map(PerClass::QosMemoryFullTotal)
            .get(QosClass::Guaranteed),
        5500.0
    );
    assert!(state.remembered_keys() > before);
    std::fs::remove_dir_all(dir.path().join("kubepods/pod-guaranteed-2")).unwrap();
    build_context(&sample(dir.path(), 1000 * MS), &mut state).unwrap();
    assert_eq!(state.remembered_keys(), before);
}

#[test]
fn d3_unlimited_max_counts_zero() {
    let dir = copy("trigger-false");
    std::fs::create_dir_all(dir.path().join("kubepods/burstable")).unwrap();
    std::fs::write(dir.path().join("kubepods/burstable/memory.max"), "max\n").unwrap();
    std::fs::write(dir.path().join("podruntime/memory.max"), "1073741824\n").unwrap();
    let ctx = build_context(&sample(dir.path(), 0), &mut State::new()).unwrap();
    assert_eq!(
        classes(ctx.class_map(PerClass::QosMemoryMax)),
        [0.0, 0.0, 0.0, 1073741824.0, 0.0]
    );
}

#[test]
fn d4_d5_time_since_trigger_and_strict_threshold() {
    let mut ctx = TriggerContext::new();
    assert_eq!(ctx.time_since_trigger_nanos(), i64::MAX);
    assert!(
        TriggerExpr::compile("time_since_trigger > duration(\"5s\")")
            .unwrap()
            .eval(&ctx)
            .unwrap()
    );
    ctx.add(PerClass::DQosMemoryFullTotal, QosClass::System, 300.0);
    ctx.add(PerClass::DQosMemoryFullTotal, QosClass::Podruntime, 150.0);
    ctx.add(PerClass::QosMemoryFullAvg10, QosClass::System, 10.0);
    ctx.set_time_since_trigger(Some(10_000_000_000));
    assert!(
        !TriggerExpr::compile(DEFAULT_TRIGGER)
            .unwrap()
            .eval(&ctx)
            .unwrap(),
        "8*300 + 4*150 = 3000 is not > 3000"
    );
}

#[test]
fn d6_to_d12_ranking_rules() {
    use QosClass::*;
    let r = RankingExpr::compile(DEFAULT_RANKING).unwrap();
    let cands = [
        candidate("/bu", Burstable, Some(1000), Some(Limit::Max)),
        candidate(
            "/be-limited",
            Besteffort,
            Some(5000),
            Some(Limit::Bytes(536870912)),
        ),
    ];
    let ranking = rank(&r, &cands);
    assert_eq!(
        ranking.eligible,
        [oomwarden_policy::Scored {
            index: 0,
            score: 500.0
        }],
        "D6"
    );
    assert_eq!(ranking.excluded, [(1, Exclusion::NotPositive(0.0))], "D7");
    // D8: negative and NaN scores are excluded.
    for expr in ["-5.0", "0.0 / 0.0"] {
        let ranking = rank(&RankingExpr::compile(expr).unwrap(), &cands);
        assert!(ranking.eligible.is_empty(), "{expr}");
    }
    // D9: nothing eligible.
    assert_eq!(
        select(
            &rank(&RankingExpr::compile("0.0").unwrap(), &cands),
            &cands,
            true
        ),
        None
    );
    // D12: an evaluation error drops only that candidate.
    let be_only =
        RankingExpr::compile("{Besteffort: 1.0}[class] * double(memory_current.orValue(0u))")
            .unwrap();
    let ranking = rank(&be_only, &cands);
    assert_eq!(ranking.eligible.len(), 1);
    assert!(matches!(&ranking.excluded[0], (0, Exclusion::EvalError(e)) if e == "no such key: 1"));
}

#[test]
fn difference_ties_are_deterministic_d10_d11() {
    use QosClass::*;
    let cands = [
        candidate("/b", Besteffort, Some(100), None),
        candidate("/a", Besteffort, Some(100), None),
        candidate("/c", Besteffort, Some(200), None),
    ];
    let score_all = RankingExpr::compile("1.0").unwrap();
    let ranking = rank(&score_all, &cands);
    assert_eq!(
        select(&ranking, &cands, true).map(|s| s.index),
        Some(2),
        "larger memory.current wins a tie"
    );
    let ranking = rank(&score_all, &cands[..2]);
    assert_eq!(
        select(&ranking, &cands[..2], true).map(|s| s.index),
        Some(1),
        "then the smaller path"
    );
    // D11 on rank1: Guaranteed and BestEffort tie; strict picks BestEffort, non-strict the larger current, then path.
    let (c, _) = collector(&fixture("rank1")).candidates();
    let g = RankingExpr::compile("memory_max.hasValue() ? 0.0 : {Besteffort: 1.0, Burstable: 0.5, Guaranteed: 1.0, Podruntime: 0.0, System: 0.0}[class] * double(memory_current.orValue(0u))").unwrap();
    let ranking = rank(&g, &c);
    assert_eq!(
        c[select(&ranking, &c, true).unwrap().index].dir,
        "kubepods/besteffort/pod123"
    );
    assert_eq!(
        c[select(&ranking, &c, false).unwrap().index].dir,
        "kubepods/besteffort/pod123",
        "same current; smaller path"
    );
}

#[test]
fn difference_empty_and_own_cgroups_are_never_chosen() {
    use QosClass::*;
    let mut empty = candidate("/deleted-pod", Besteffort, Some(900_000_000), None);
    empty.populated = false;
    let mut own = candidate("/oomwarden-pod", Besteffort, Some(800_000_000), None);
    own.contains_self = true;
    let cands = [empty, own, candidate("/live", Burstable, Some(10), None)];
    let ranking = rank(&RankingExpr::compile(DEFAULT_RANKING).unwrap(), &cands);
    assert_eq!(
        ranking.excluded,
        [(0, Exclusion::Empty), (1, Exclusion::OwnCgroup)]
    );
    assert_eq!(select(&ranking, &cands, true).map(|s| s.index), Some(2));
}

#[test]
fn collector_marks_empty_and_own_candidates() {
    let dir = copy("rank1");
    std::fs::create_dir_all(dir.path().join("kubepods/besteffort/pod-deleted")).unwrap();
    std::fs::write(
        dir.path()
            .join("kubepods/besteffort/pod-deleted/cgroup.events"),
        "populated 0\nfrozen 0\n",
    )
    .unwrap();
    std::fs::write(
        dir.path()
            .join("kubepods/besteffort/pod-deleted/memory.current"),
        "999999999\n",
    )
    .unwrap();
    let c = Collector::new(
        CgroupFs::new(dir.path()),
        ProcFs::new(oomwarden_testkit::proc_fixture()),
        Layout::talos(),
        Some("kubepods/burstable/podABC/oomwarden".into()),
    );
    let (cands, _) = c.candidates();
    let get = |d: &str| cands.iter().find(|c| c.dir == d).unwrap();
    assert!(!get("kubepods/besteffort/pod-deleted").populated);
    assert!(get("kubepods/burstable/podABC").contains_self);
    assert!(!get("kubepods/besteffort/pod123").contains_self);
    let ranking = rank(&RankingExpr::compile(DEFAULT_RANKING).unwrap(), &cands);
    assert_eq!(
        cands[select(&ranking, &cands, true).unwrap().index].dir,
        "kubepods/besteffort/pod123"
    );
}

#[test]
fn d13_incomplete_pressure_fails_the_cycle_and_keeps_state() {
    let dir = copy("trigger-false");
    let mut state = State::new();
    build_context(&sample(dir.path(), 0), &mut state).unwrap();
    let keys = state.remembered_keys();
    std::fs::write(
        dir.path().join("system/memory.pressure"),
        "some avg10=1.00 avg60=1.00 avg300=1.00 total=5\n",
    )
    .unwrap();
    let err = build_context(&sample(dir.path(), 500 * MS), &mut state).unwrap_err();
    assert_eq!(err, "cannot find memory pressure type: type: full");
    assert_eq!(state.remembered_keys(), keys);
}

#[test]
fn d14_missing_or_garbage_pressure_reads_zero() {
    let dir = copy("trigger-false");
    std::fs::remove_file(dir.path().join("podruntime/memory.pressure")).unwrap();
    std::fs::write(
        dir.path().join("system/memory.pressure"),
        "some avg10=abc\n",
    )
    .unwrap();
    let (s, problems) = collector(dir.path()).metrics(0);
    assert_eq!(
        problems.len(),
        1,
        "the malformed file is reported: {problems:?}"
    );
    assert!(problems[0].to_string().contains("system/memory.pressure"));
    let ctx = build_context(&s, &mut State::new()).unwrap();
    assert_eq!(
        classes(ctx.class_map(PerClass::QosMemoryFullTotal)),
        [0.0, 0.0, 0.0, 0.0, 106.0]
    );
}

/// Issue 37: Talos's parser (`ParseNestedKeyedValues`) fails a file with a line without a
/// space, a blank line or a field without `=`, and then reads the subtree as 0; it takes `1.`,
/// `-1` and `+1` as values. The cycle goes on either way.
#[test]
fn malformed_pressure_lines_read_as_talos_reads_them() {
    let full = "full avg10=1 avg60=1 avg300=1 total=7\n";
    // System is `init` (106 µs of full stall in the fixture) plus `system`.
    for (text, system_full_total) in [
        ("garbage\n".to_owned(), 106.0),
        (
            format!("some avg10=1 avg60=1 avg300=1 total=1\n\n{full}"),
            106.0,
        ),
        (
            format!("some avg10=1 avg60 avg300=1 total=1\n{full}"),
            106.0,
        ),
        (
            format!("some avg10=1. avg60=-1 avg300=+1 total=1\n{full}"),
            113.0,
        ),
    ] {
        let dir = copy("trigger-false");
        std::fs::write(dir.path().join("system/memory.pressure"), &text).unwrap();
        let (s, problems) = collector(dir.path()).metrics(0);
        let ctx = build_context(&s, &mut State::new()).unwrap();
        assert_eq!(
            classes(ctx.class_map(PerClass::QosMemoryFullTotal))[4],
            system_full_total,
            "{text:?}"
        );
        assert_eq!(
            problems.len(),
            usize::from(system_full_total == 106.0),
            "{text:?}"
        );
    }
    // The values Talos reads where this parser once refused them (init's values subtracted).
    let system = |text: &str| {
        let dir = copy("trigger-false");
        std::fs::write(dir.path().join("system/memory.pressure"), text).unwrap();
        let (s, _) = collector(dir.path()).metrics(0);
        let ctx = build_context(&s, &mut State::new()).unwrap();
        [
            PerClass::QosMemorySomeAvg10,
            PerClass::QosMemorySomeAvg60,
            PerClass::QosMemorySomeAvg300,
        ]
        .map(|m| classes(ctx.class_map(m))[4])
    };
    let zero = system(&format!("some avg10=0 avg60=0 avg300=0 total=1\n{full}"));
    let read = system(&format!("some avg10=1. avg60=-1 avg300=+1 total=1\n{full}"));
    // Sums of doubles: compared to a millionth.
    for ((r, z), want) in read.iter().zip(zero).zip([1.0, -1.0, 1.0]) {
        assert!((r - z - want).abs() < 1e-6, "{r} - {z} is not {want}");
    }
}

#[test]
fn d25_swapped_multiply_arguments_give_the_same_value() {
    let ctx = t3_context("trigger-true", Some(6000));
    let normal = "multiply_qos_vectors(d_qos_memory_full_total, {System: 8.0, Podruntime: 4.0})";
    let swapped = "multiply_qos_vectors({System: 8.0, Podruntime: 4.0}, d_qos_memory_full_total)";
    let eq = TriggerExpr::compile(&format!("{normal} == {swapped} && {normal} > 0.0")).unwrap();
    assert!(eq.eval(&ctx).unwrap());
}

/// Issue 15, item 3: a PSI `total` that goes backwards is a counter reset (a restarted unit
/// gets a new cgroup at the same path), not a huge negative rate cancelling real stall in the
/// default trigger's sum; a cgroup replaced at its path starts its derivatives again.
#[test]
fn difference_counter_resets_and_replaced_cgroups_start_again() {
    let dir = copy("trigger-false");
    let mut state = State::new();
    let file = dir.path().join("system/memory.pressure");
    let write = |path: &Path, avg10: f64, total: u64| {
        std::fs::write(
            path,
            format!(
                "some avg10=0 avg60=0 avg300=0 total=0\nfull avg10={avg10:.2} avg60=0 avg300=0 total={total}\n"
            ),
        )
        .unwrap()
    };
    let d = |ctx: &TriggerContext, span| {
        ctx.class_map(PerClass::psi(true, PsiKind::Full, span))
            .get(QosClass::System)
    };
    write(&file, 40.0, 9_000_000);
    build_context(&sample(dir.path(), 0), &mut state).unwrap();
    // The counter went backwards: a reset, so 0; the average may fall (a real change).
    write(&file, 30.0, 1_000);
    let ctx = build_context(&sample(dir.path(), 1000 * MS), &mut state).unwrap();
    assert_eq!(d(&ctx, PsiSpan::Total), 0.0);
    assert_eq!(d(&ctx, PsiSpan::Avg10), -10.0);
    // Growing again from there: a rate again.
    write(&file, 30.0, 501_000);
    let ctx = build_context(&sample(dir.path(), 2000 * MS), &mut state).unwrap();
    assert_eq!(d(&ctx, PsiSpan::Total), 500_000.0);
    // Another cgroup at the same path (the old one moved away so that its id stays taken):
    // every derivative starts again, the falling average too.
    std::fs::rename(dir.path().join("system"), dir.path().join("system-old")).unwrap();
    std::fs::create_dir(dir.path().join("system")).unwrap();
    write(&file, 0.0, 600_000);
    let ctx = build_context(&sample(dir.path(), 3000 * MS), &mut state).unwrap();
    assert_eq!(d(&ctx, PsiSpan::Avg10), 0.0);
    assert_eq!(d(&ctx, PsiSpan::Total), 0.0);
    write(&file, 5.0, 700_000);
    let ctx = build_context(&sample(dir.path(), 4000 * MS), &mut state).unwrap();
    assert_eq!(d(&ctx, PsiSpan::Avg10), 5.0);
    assert_eq!(d(&ctx, PsiSpan::Total), 100_000.0);
}
