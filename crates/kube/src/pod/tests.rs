use super::*;

const GI: i64 = 1 << 30;
const MI: i64 = 1 << 20;

/// A pod from YAML (the `spec:` part indented under it).
fn pod(spec: &str) -> Pod {
    let text =
        format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: ns\nspec:\n{spec}");
    match parse_pods(&text) {
        Ok(mut pods) if pods.len() == 1 => pods.remove(0),
        other => panic!("{other:?}\n{text}"),
    }
}

fn ctr(name: &str, requests: &str, limits: &str) -> String {
    format!(
        "  - name: {name}\n    resources:\n      requests: {{{requests}}}\n      limits: {{{limits}}}\n"
    )
}

fn adjs(p: &Pod, capacity: i64) -> Vec<i64> {
    score(p, capacity, FeatureGates::default())
        .unwrap()
        .containers
        .iter()
        .map(|c| c.oom_score_adj)
        .collect()
}

#[test]
fn burstable_formula_on_a_16_gib_node() {
    // The worked examples of the oom_score_adj article (seed 001).
    for (request, want) in [("1Gi", 938), ("4Gi", 750), ("8Gi", 500), ("16Gi", 3)] {
        let p = pod(&format!(
            "  containers:\n{}",
            ctr("app", &format!("memory: {request}"), "")
        ));
        let s = score(&p, 16 * GI, FeatureGates::default()).unwrap();
        assert_eq!(s.qos_class, PodQos::Burstable);
        assert_eq!(adjs(&p, 16 * GI), [want], "{request}");
    }
    // "A container requesting 10% of a system's memory will have an OOM score adjust of 900."
    let p = pod(&format!(
        "  containers:\n{}",
        ctr("app", "memory: 100M", "")
    ));
    assert_eq!(adjs(&p, 1_000_000_000), [900]);
}

#[test]
fn fixed_classes_and_critical_pods() {
    let g = pod(&format!(
        "  containers:\n{}",
        ctr("app", "cpu: 1, memory: 1Gi", "cpu: 1, memory: 1Gi")
    ));
    assert_eq!(adjs(&g, 16 * GI), [-997]);
    let be = pod("  containers:\n  - name: app\n");
    assert_eq!(adjs(&be, 16 * GI), [1000]);
    // system-cluster-critical is critical but not node-critical: QoS decides.
    let cluster = pod(
        "  priority: 2000000000\n  priorityClassName: system-cluster-critical\n  containers:\n  - name: app\n",
    );
    assert_eq!(adjs(&cluster, 16 * GI), [1000]);
    let node = pod(
        "  priority: 2000001000\n  priorityClassName: system-node-critical\n  containers:\n  - name: app\n",
    );
    let s = score(&node, 16 * GI, FeatureGates::default()).unwrap();
    assert!(s.node_critical);
    assert_eq!(adjs(&node, 16 * GI), [-997]);
    // A static pod (config.source file) with system-node-critical and a low priority value.
    let text = "kind: Pod\nmetadata:\n  name: etcd\n  annotations:\n    kubernetes.io/config.source: file\nspec:\n  priorityClassName: system-node-critical\n  containers:\n  - name: etcd\n    resources:\n      requests: {memory: 100Mi}\n";
    let p = parse_pods(text).unwrap().remove(0);
    assert_eq!(adjs(&p, 16 * GI), [-997]);
}

#[test]
fn burstable_caps_and_floors() {
    // CPU only: Burstable, memory request 0 → 1000 → 999.
    let p = pod(&format!("  containers:\n{}", ctr("app", "cpu: 100m", "")));
    assert_eq!(adjs(&p, 16 * GI), [999]);
    // A tiny request truncates to 1000 too.
    let p = pod(&format!("  containers:\n{}", ctr("app", "memory: 1Mi", "")));
    assert_eq!(adjs(&p, 16 * GI * 1024), [999]);
    // More than the node: floor 3.
    let p = pod(&format!(
        "  containers:\n{}",
        ctr("app", "memory: 64Gi", "")
    ));
    assert_eq!(adjs(&p, 16 * GI), [3]);
}

#[test]
fn sidecars_are_clamped_to_the_smallest_regular_container() {
    let p = pod(&format!(
        "  initContainers:\n{}{}  containers:\n{}{}",
        ctr("setup", "memory: 64Mi", "").as_str(),
        "  - name: proxy\n    restartPolicy: Always\n    resources:\n      requests: {memory: 64Mi}\n",
        ctr("app", "memory: 1Gi", "").as_str(),
        ctr("worker", "memory: 2Gi", "").as_str(),
    ));
    let s = score(&p, 16 * GI, FeatureGates::default()).unwrap();
    let kinds: Vec<ContainerKind> = s.containers.iter().map(|c| c.kind).collect();
    use ContainerKind::*;
    assert_eq!(kinds, [Init, Sidecar, Regular, Regular]);
    // setup: plain formula 1000 - 1000*64Mi/16Gi = 997; proxy: min(997, 938) = 938.
    assert_eq!(adjs(&p, 16 * GI), [997, 938, 938, 875]);
}

#[test]
fn pod_level_requests_are_spread_over_the_containers() {
    let text = format!(
        "  resources:\n    requests: {{memory: 4Gi}}\n  containers:\n{}{}",
        ctr("a", "memory: 1Gi", ""),
        ctr("b", "", "")
    );
    let p = pod(&text);
    // rem = (4Gi - 1Gi) / 2 = 1.5Gi: a → 1000 - 1000*2.5/16 = 844, b → 1000 - 93 = 907.
    assert_eq!(adjs(&p, 16 * GI), [844, 907]);
    let off = FeatureGates {
        pod_level_resources: false,
    };
    let s = score(&p, 16 * GI, off).unwrap();
    let v: Vec<i64> = s.containers.iter().map(|c| c.oom_score_adj).collect();
    assert_eq!(v, [938, 999]);
}

#[test]
fn qos_classes() {
    use PodQos::*;
    for (containers, want) in [
        // Limits only: the API server defaults requests to limits.
        (ctr("a", "", "cpu: 1, memory: 1Gi"), Guaranteed),
        (
            ctr("a", "cpu: 1, memory: 1Gi", "cpu: 2, memory: 1Gi"),
            Burstable,
        ),
        (ctr("a", "memory: 1Gi", "memory: 1Gi"), Burstable),
        (
            ctr("a", "cpu: 500m, memory: 1Gi", "cpu: '0.5', memory: 1024Mi"),
            Guaranteed,
        ),
        (ctr("a", "ephemeral-storage: 1Gi", ""), BestEffort),
        // Sums match but the containers differ: Burstable (the legacy sum rule said Guaranteed).
        (
            ctr("a", "cpu: 1, memory: 1Gi", "cpu: 2, memory: 1Gi")
                + &ctr("b", "cpu: 2, memory: 1Gi", "cpu: 1, memory: 1Gi"),
            Burstable,
        ),
        (
            ctr("a", "", "") + &ctr("b", "cpu: 1, memory: 1Gi", "cpu: 1, memory: 1Gi"),
            Burstable,
        ),
    ] {
        let p = pod(&format!("  containers:\n{containers}"));
        assert_eq!(
            score(&p, GI, FeatureGates::default()).unwrap().qos_class,
            want,
            "{containers}"
        );
    }
    let p = pod("  containers:\n  - name: a\n");
    let mut with_status = p.clone();
    with_status.status.qos_class = Some("Burstable".into());
    let s = score(&with_status, 16 * GI, FeatureGates::default()).unwrap();
    assert!(s.qos_from_status && s.qos_class == Burstable);
}

#[test]
fn pod_cgroup_memory_max() {
    let max = |spec: &str| {
        score(&pod(spec), 16 * GI, FeatureGates::default())
            .unwrap()
            .pod_memory_max_bytes
    };
    assert_eq!(
        max(&format!(
            "  containers:\n{}{}",
            ctr("a", "", "memory: 100Mi"),
            ctr("b", "", "memory: 100Mi")
        )),
        Some(i128::from(200 * MI))
    );
    assert_eq!(
        max(&format!(
            "  containers:\n{}{}",
            ctr("a", "", "memory: 100Mi"),
            ctr("b", "", "")
        )),
        None
    );
    // An init container without a limit leaves the pod unlimited.
    assert_eq!(
        max(&format!(
            "  initContainers:\n{}  containers:\n{}",
            ctr("i", "", ""),
            ctr("a", "", "memory: 100Mi")
        )),
        None
    );
    // A pod-level limit wins.
    assert_eq!(
        max(&format!(
            "  resources:\n    limits: {{memory: 200Mi}}\n  containers:\n{}",
            ctr("a", "", "memory: 100Mi")
        )),
        Some(i128::from(200 * MI))
    );
    // Overhead is added to a non-zero limit.
    assert_eq!(
        max(&format!(
            "  overhead: {{memory: 10Mi}}\n  containers:\n{}",
            ctr("a", "", "memory: 100Mi")
        )),
        Some(i128::from(110 * MI))
    );
    // Init peaks: init 5, sidecars 1, 2, 3, regular 1 → 7 (sidecars 6 + regular 1).
    let sc = |n: &str, v: u32| {
        format!(
            "  - name: {n}\n    restartPolicy: Always\n    resources:\n      limits: {{memory: {v}Mi}}\n"
        )
    };
    assert_eq!(
        max(&format!(
            "  initContainers:\n{}{}{}{}  containers:\n{}",
            ctr("i", "", "memory: 5Mi"),
            sc("s1", 1),
            sc("s2", 2),
            sc("s3", 3),
            ctr("a", "", "memory: 1Mi")
        )),
        Some(i128::from(7 * MI))
    );
    // Sidecar 10, init 200, regular 100 → 210 (the init container runs beside the sidecar).
    assert_eq!(
        max(&format!(
            "  initContainers:\n{}{}  containers:\n{}",
            sc("s", 10),
            ctr("i", "", "memory: 200Mi"),
            ctr("a", "", "memory: 100Mi")
        )),
        Some(i128::from(210 * MI))
    );
}

#[test]
fn oom_handler_verdicts() {
    let verdict = |spec: &str| {
        let s = score(&pod(spec), 16 * GI, FeatureGates::default()).unwrap();
        (s.oom_handler_candidate, s.oom_handler_reason)
    };
    assert!(verdict("  containers:\n  - name: a\n").0);
    assert!(verdict(&format!("  containers:\n{}", ctr("a", "memory: 1Gi", ""))).0);
    let (c, why) = verdict(&format!(
        "  containers:\n{}",
        ctr("a", "memory: 1Gi", "memory: 2Gi")
    ));
    assert!(!c && why.contains("memory.max"), "{why}");
}

#[test]
fn manifests_and_their_errors() {
    let list = "apiVersion: v1\nkind: List\nitems:\n- kind: Pod\n  metadata: {name: a}\n  spec: {containers: [{name: c1}]}\n- metadata: {name: b}\n  spec: {containers: [{name: c2}]}\n---\n{\"kind\": \"Pod\", \"metadata\": {\"name\": \"c\"}, \"spec\": {\"containers\": [{\"name\": \"z\"}]}}\n";
    let names: Vec<String> = parse_pods(list)
        .unwrap()
        .into_iter()
        .map(|p| p.metadata.name)
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    let e = parse_pods("kind: Deployment\n").unwrap_err().to_string();
    assert!(
        e.starts_with("document 1: kind Deployment is not a Pod"),
        "{e}"
    );
    let e = parse_pods("kind: Pod\nspec: {containers: 3}\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a valid Pod"), "{e}");
    let p = pod(&format!("  containers:\n{}", ctr("a", "memory: 12XB", "")));
    let e = score(&p, GI, FeatureGates::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("spec.containers[0].resources.requests.memory: invalid quantity \"12XB\""),
        "{e}"
    );
    // Numbers are quantities too.
    let p =
        pod("  containers:\n  - name: a\n    resources:\n      requests: {memory: 1073741824}\n");
    assert_eq!(adjs(&p, 16 * GI), [938]);
}

#[test]
fn feature_gates() {
    assert_eq!(FeatureGates::parse("").unwrap(), FeatureGates::default());
    assert!(
        !FeatureGates::parse("PodLevelResources=false, Foo=true")
            .unwrap()
            .pod_level_resources
    );
    assert!(matches!(
        FeatureGates::parse("PodLevelResources"),
        Err(GateError::Syntax(_))
    ));
    assert!(matches!(
        FeatureGates::parse("KubeletOOMScoreAdjTieBreak=true"),
        Err(GateError::Unsupported(_))
    ));
    assert!(FeatureGates::parse("KubeletOOMScoreAdjTieBreak=false").is_ok());
}

proptest::proptest! {
    #[test]
    fn any_manifest_text_parses_or_errors(text in "\\PC{0,200}") {
        if let Ok(pods) = parse_pods(&text) {
            for p in pods {
                let _ = score(&p, 16 * GI, FeatureGates::default());
            }
        }
    }

    // Issue 14, item 8: any quantity the parser takes, any node size, any mix of containers:
    // never outside the kernel's range, never a panic (overflow included).
    #[test]
    fn oom_score_adj_is_always_in_the_kernels_range(
        quantities in proptest::collection::vec(
            proptest::prop_oneof![
                "[0-9]{1,20}(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m)?",
                "[0-9]{1,3}e[0-9]{1,2}",
                proptest::strategy::Just(String::new()),
            ],
            1..6,
        ),
        limited in proptest::collection::vec(proptest::bool::ANY, 1..6),
        cap in proptest::prop_oneof![1i64..(1 << 42), proptest::strategy::Just(i64::MAX)],
    ) {
        let containers: String = quantities.iter().zip(limited.iter().cycle()).enumerate().map(|(i, (q, l))| {
            let req = if q.is_empty() { String::new() } else { format!("memory: \"{q}\"") };
            let lim = if *l && !q.is_empty() { format!("memory: \"{q}\"") } else { String::new() };
            ctr(&format!("c{i}"), &req, &lim)
        }).collect();
        let p = pod(&format!("  containers:\n{containers}"));
        if let Ok(s) = score(&p, cap, FeatureGates::default()) {
            for c in &s.containers {
                proptest::prop_assert!((-1000..=1000).contains(&c.oom_score_adj), "{}", c.oom_score_adj);
            }
        }
    }

    #[test]
    fn burstable_scores_stay_between_3_and_999(req in 0i64..(1 << 40), cap in 1i64..(1 << 42)) {
        let p = pod(&format!("  containers:\n{}", ctr("a", &format!("memory: {req}"), "")));
        let v = adjs(&p, cap)[0];
        proptest::prop_assert!((3..=999).contains(&v), "{v}");
    }
}

#[test]
fn memory_qos_values() {
    let qos = |spec: &str, m: MemoryQos| {
        score_with_qos(&pod(spec), 16 * GI, FeatureGates::default(), Some(m), None).unwrap()
    };
    let tiered = MemoryQos {
        throttling_factor: Some(0.9),
        tiered_reservation: true,
        node_allocatable: 8 * GI,
    };
    // Burstable with a limit: high = floor((1Gi + 0.9 × 1Gi) / 4096) × 4096; low = request.
    let s = qos(
        &format!("  containers:\n{}", ctr("a", "memory: 1Gi", "memory: 2Gi")),
        tiered,
    );
    let c = s.containers[0].memory_qos.unwrap();
    assert_eq!(c.memory_high, Some(2_040_107_008));
    assert_eq!((c.memory_min, c.memory_low), (None, Some(GI)));
    assert_eq!(s.memory_qos.unwrap().memory_low, Some(GI));
    // Without a limit, node allocatable stands in: 1Gi + 0.8 × 7Gi, page-rounded.
    let m = MemoryQos {
        throttling_factor: Some(0.8),
        ..tiered
    };
    let s = qos(
        &format!("  containers:\n{}", ctr("a", "memory: 1Gi", "")),
        m,
    );
    assert_eq!(
        s.containers[0].memory_qos.unwrap().memory_high,
        Some(7_086_694_400)
    );
    // Request equal to the limit keeps max; Guaranteed gets memory.min at both levels.
    let s = qos(
        &format!(
            "  containers:\n{}{}",
            ctr("a", "cpu: 1, memory: 1Gi", "cpu: 1, memory: 1Gi"),
            ctr("b", "cpu: 1, memory: 2Gi", "cpu: 1, memory: 2Gi")
        ),
        tiered,
    );
    let c = s.containers[0].memory_qos.unwrap();
    assert_eq!(
        (c.memory_high, c.memory_min, c.memory_low),
        (None, Some(GI), None)
    );
    assert_eq!(s.memory_qos.unwrap().memory_min, Some(3 * GI));
    // BestEffort: no reservation; memory.high from allocatable alone.
    let s = qos("  containers:\n  - name: a\n", tiered);
    let c = s.containers[0].memory_qos.unwrap();
    assert_eq!((c.memory_min, c.memory_low), (None, None));
    assert_eq!(c.memory_high, Some(7_730_941_132 / 4096 * 4096));
    assert_eq!(s.memory_qos.unwrap(), MemoryQosValues::default());
    // No factor (the 1.37 default): no memory.high; policy None: no min or low.
    let none = MemoryQos {
        throttling_factor: None,
        tiered_reservation: false,
        node_allocatable: 8 * GI,
    };
    let s = qos(
        &format!("  containers:\n{}", ctr("a", "memory: 1Gi", "memory: 2Gi")),
        none,
    );
    assert_eq!(
        s.containers[0].memory_qos.unwrap(),
        MemoryQosValues::default()
    );
    // The pod's request includes the RuntimeClass overhead.
    let s = qos(
        &format!(
            "  overhead: {{memory: 10Mi}}\n  containers:\n{}",
            ctr("a", "memory: 1Gi", "")
        ),
        tiered,
    );
    assert_eq!(s.memory_qos.unwrap().memory_low, Some(GI + 10 * MI));
}

/// The explicit cases of the kubelet's QoS table (`kube-semantics.md` §2), each built as its
/// name describes.
#[test]
#[allow(clippy::too_many_lines, reason = "a table of cases")]
fn kubelet_qos_table() {
    use PodQos::*;
    let gi = |r: &str, l: &str| ctr("c", r, l);
    let cases: Vec<(&str, String, PodQos)> = vec![
        (
            "guaranteed",
            gi("cpu: 100m, memory: 100Mi", "cpu: 100m, memory: 100Mi"),
            Guaranteed,
        ),
        (
            "guaranteed-guaranteed",
            gi("cpu: 100m, memory: 100Mi", "cpu: 100m, memory: 100Mi")
                + &ctr("d", "cpu: 1, memory: 1Gi", "cpu: 1, memory: 1Gi"),
            Guaranteed,
        ),
        (
            "best-effort-best-effort",
            gi("", "") + &ctr("d", "", ""),
            BestEffort,
        ),
        ("best-effort", gi("", ""), BestEffort),
        (
            "best-effort-burstable",
            gi("", "") + &ctr("d", "cpu: 1", ""),
            Burstable,
        ),
        (
            "best-effort-guaranteed",
            gi("", "") + &ctr("d", "cpu: 1, memory: 1Gi", "cpu: 1, memory: 1Gi"),
            Burstable,
        ),
        (
            "burstable-cpu-guaranteed-memory",
            gi("cpu: 100m, memory: 100Mi", "memory: 100Mi"),
            Burstable,
        ),
        (
            "burstable-no-limits",
            gi("cpu: 100m, memory: 100Mi", ""),
            Burstable,
        ),
        (
            "burstable-guaranteed",
            gi("cpu: 1, memory: 1Gi", "cpu: 2, memory: 1Gi")
                + &ctr("d", "cpu: 1, memory: 1Gi", "cpu: 1, memory: 1Gi"),
            Burstable,
        ),
        (
            "burstable-unbounded-but-requests-match-limits",
            gi("cpu: 100m, memory: 100Mi", "cpu: 100m, memory: 100Mi") + &ctr("d", "cpu: 100m", ""),
            Burstable,
        ),
        ("burstable-1", gi("cpu: 10m", "cpu: 100m"), Burstable),
        (
            "burstable-2",
            gi("memory: 10Mi", "memory: 100Mi"),
            Burstable,
        ),
        (
            "best-effort-hugepages",
            gi("hugepages-2Mi: 16Mi", "hugepages-2Mi: 16Mi"),
            BestEffort,
        ),
    ];
    for (name, containers, want) in cases {
        let p = pod(&format!("  containers:\n{containers}"));
        let got = score(&p, 16 * GI, FeatureGates::default())
            .unwrap()
            .qos_class;
        assert_eq!(got, want, "{name}");
    }
    // init-container: a Burstable init container makes a Guaranteed pod Burstable.
    let p = pod(&format!(
        "  initContainers:\n{}  containers:\n{}",
        ctr("i", "cpu: 10m", ""),
        ctr("c", "cpu: 1, memory: 1Gi", "cpu: 1, memory: 1Gi")
    ));
    assert_eq!(
        score(&p, GI, FeatureGates::default()).unwrap().qos_class,
        Burstable
    );
    // Pod-level resources decide alone with the gate on.
    let plr = |res: &str, containers: &str| {
        pod(&format!("  resources:\n{res}  containers:\n{containers}"))
    };
    let g = plr(
        "    requests: {cpu: 1, memory: 1Gi}\n    limits: {cpu: 1, memory: 1Gi}\n",
        &ctr("c", "", ""),
    );
    assert_eq!(
        score(&g, GI, FeatureGates::default()).unwrap().qos_class,
        Guaranteed
    );
    let b = plr(
        "    requests: {cpu: 1, memory: 1Gi}\n",
        &ctr("c", "cpu: 1, memory: 1Gi", "cpu: 1, memory: 1Gi"),
    );
    assert_eq!(
        score(&b, GI, FeatureGates::default()).unwrap().qos_class,
        Burstable
    );
    // With the gate off the containers decide.
    let off = FeatureGates {
        pod_level_resources: false,
    };
    assert_eq!(score(&b, GI, off).unwrap().qos_class, Guaranteed);
    // ResourceConfigForPod: pod-level requests only and a 200Mi/200Mi container → 200Mi.
    let p = plr(
        "    requests: {memory: 100Mi}\n",
        &ctr("c", "memory: 200Mi", "memory: 200Mi"),
    );
    assert_eq!(
        score(&p, GI, FeatureGates::default())
            .unwrap()
            .pod_memory_max_bytes,
        Some(i128::from(200 * MI))
    );
}

// Issue 14, item 8: a limit of 8Ei (2^63 bytes) read as 0, and a negative request was taken.
#[test]
fn quantities_past_i64_are_exact_and_negative_ones_refused() {
    let p = pod(&format!(
        "  containers:\n{}",
        ctr("a", "memory: 8Ei", "memory: 16Ei")
    ));
    let s = score(&p, 16 * GI, FeatureGates::default()).unwrap();
    let c = &s.containers[0];
    assert_eq!(c.memory_request_bytes, 1_i128 << 63);
    assert_eq!(c.memory_limit_bytes, Some(1_i128 << 64));
    assert_eq!(s.pod_memory_max_bytes, Some(1_i128 << 64));
    assert_eq!(s.memory_request_bytes, 1_i128 << 63);
    assert_eq!(c.oom_score_adj, 3, "a request above the node is the floor");
    let json = serde_json::to_string(&s).unwrap();
    assert!(
        json.contains("\"memoryRequestBytes\":9223372036854775808"),
        "{json}"
    );

    for (requests, limits, field) in [
        (
            "memory: -1Gi",
            "",
            "spec.containers[0].resources.requests.memory",
        ),
        (
            "",
            "memory: \"-1\"",
            "spec.containers[0].resources.limits.memory",
        ),
        (
            "cpu: -100m",
            "",
            "spec.containers[0].resources.requests.cpu",
        ),
    ] {
        let p = pod(&format!("  containers:\n{}", ctr("a", requests, limits)));
        let e = score(&p, 16 * GI, FeatureGates::default()).unwrap_err();
        assert_eq!(e.path, field);
        assert!(
            e.to_string().contains("must be greater than or equal to 0"),
            "{e}"
        );
    }
    // Too large to compute with exactly: refused, never read as 0.
    let p = pod(&format!("  containers:\n{}", ctr("a", "memory: 1e90", "")));
    let e = score(&p, 16 * GI, FeatureGates::default()).unwrap_err();
    assert!(e.to_string().contains("too large"), "{e}");
}

/// Issue 35: each container's swap under `LimitedSwap`, through the pod's class and
/// criticality, as the kubelet decides it (`GetContainerSwapBehavior`): 80 Gi of memory and
/// 4 Gi of swap, the kubelet's first vector.
#[test]
fn limited_swap_per_container() {
    let node = NodeSwap {
        behavior: SwapBehavior::LimitedSwap,
        capacity: 4 * GI,
    };
    let swaps = |spec: &str| -> Vec<(SwapBehavior, i64, SwapReason)> {
        score_with_qos(
            &pod(spec),
            80 * GI,
            FeatureGates::default(),
            None,
            Some(node),
        )
        .unwrap()
        .containers
        .iter()
        .map(|c| {
            let s = c.swap.unwrap();
            (s.behavior, s.memory_swap_max_bytes, s.reason)
        })
        .collect()
    };
    let burstable = format!(
        "  containers:\n{}{}{}{}",
        ctr("requests", "memory: 1Gi", ""),
        ctr("limited", "memory: 1Gi", "memory: 2Gi"),
        ctr("nothing", "", ""),
        // A limit alone: the API server makes it the request too, so they are equal.
        ctr("limit-only", "", "memory: 1Gi"),
    );
    use SwapBehavior::{LimitedSwap, NoSwap};
    assert_eq!(
        swaps(&burstable),
        [
            (LimitedSwap, 53_687_091, SwapReason::Proportional),
            (LimitedSwap, 53_687_091, SwapReason::Proportional),
            (NoSwap, 0, SwapReason::NoMemoryRequest),
            (NoSwap, 0, SwapReason::RequestEqualsLimit),
        ]
    );
    // The same pod at system-node-critical priority: critical pods never swap.
    let critical =
        format!("  priorityClassName: system-node-critical\n  priority: 2000001000\n{burstable}");
    assert!(
        swaps(&critical)
            .iter()
            .all(|s| *s == (NoSwap, 0, SwapReason::Critical))
    );
    let guaranteed = format!(
        "  containers:\n{}",
        ctr("g", "memory: 1Gi, cpu: 1", "memory: 1Gi, cpu: 1")
    );
    assert_eq!(swaps(&guaranteed), [(NoSwap, 0, SwapReason::NotBurstable)]);
    let besteffort = format!("  containers:\n{}", ctr("b", "", ""));
    assert_eq!(swaps(&besteffort), [(NoSwap, 0, SwapReason::NotBurstable)]);
    // Without the node's swap nothing is said.
    let s = score(&pod(&burstable), 80 * GI, FeatureGates::default()).unwrap();
    assert!(s.containers.iter().all(|c| c.swap.is_none()));
}
