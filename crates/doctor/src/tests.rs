// Test code: unwrap on expected outcomes is the assertion.
#![allow(clippy::unwrap_used)]

use super::*;

/// A node with nothing to fix: cgroup v2, PSI, the host's PID namespace, the talos layout,
/// the kubelet at -999 with memory.min, no other killer, no swap.
fn clean() -> Observations {
    Observations {
        cgroup_root: "/sys/fs/cgroup".into(),
        proc_root: "/proc".into(),
        host: Ok(()),
        psi: Ok(()),
        psi_off_word: None,
        pid_namespace: Some(INIT_PID_NAMESPACE.into()),
        layout: Ok((
            "talos".into(),
            "podruntime/ and init/ or system/ at the root".into(),
        )),
        top_dirs: vec!["init".into(), "kubepods".into()],
        missing_dirs: Vec::new(),
        talos_misreads: Vec::new(),
        processes: vec![AgentProcess {
            pid: 10,
            comm: "kubelet".into(),
            cmdline: "/usr/local/bin/kubelet".into(),
            oom_score_adj: Some(-999),
            cgroup: Some("podruntime/kubelet".into()),
            memory_min: Some(64 << 20),
        }],
        oomd_units: Vec::new(),
        talos_config: TalosConfig::Read {
            path: "/system/state/config.yaml".into(),
            trigger: Some("false".into()),
        },
        panic_on_oom: Some(0),
        overcommit_memory: Some(0),
        lru_gen: Some(LruGen {
            enabled: true,
            min_ttl_ms: 0,
            path: "/sys/kernel/mm/lru_gen/min_ttl_ms".into(),
        }),
        swap: Some(oomwarden_model::NodeSwap::default()),
        zswap_enabled: None,
        dying_descendants: Some(3),
    }
}

fn agent(pid: u32, comm: &str, cmdline: &str, adj: i64, cgroup: Option<&str>) -> AgentProcess {
    AgentProcess {
        pid,
        comm: comm.into(),
        cmdline: cmdline.into(),
        oom_score_adj: Some(adj),
        cgroup: cgroup.map(Into::into),
        memory_min: None,
    }
}

fn ids(report: &Report) -> Vec<(&'static str, Severity)> {
    report.findings.iter().map(|f| (f.id, f.severity)).collect()
}

fn defaults() -> Policy {
    Policy::of(&oomwarden_config::Settings::defaults().unwrap())
}

#[test]
fn a_clean_node_has_notes_only() {
    let report = diagnose(&clean(), &defaults());
    assert_eq!(
        ids(&report),
        vec![("layout", Severity::Info), ("swap", Severity::Info)]
    );
    assert_eq!(report.worst(), Some(Severity::Info));
}

#[test]
fn psi_off_is_an_error_only_for_a_policy_that_reads_it() {
    let mut obs = clean();
    obs.psi = Err("memory pressure (PSI) is not available".into());
    obs.psi_off_word = Some("psi=0".into());
    let report = diagnose(&obs, &defaults());
    let f = report
        .findings
        .iter()
        .find(|f| f.id == "psi-missing")
        .unwrap();
    assert_eq!(f.severity, Severity::Error);
    assert!(f.summary.contains("qos_memory_full_avg10"), "{}", f.summary);
    assert!(f.seen.iter().any(|s| s.value == "psi=0"));
    let no_psi = Policy {
        psi_reads: Vec::new(),
        ..defaults()
    };
    let report = diagnose(&obs, &no_psi);
    let f = report
        .findings
        .iter()
        .find(|f| f.id == "psi-missing")
        .unwrap();
    assert_eq!(f.severity, Severity::Warning);
}

#[test]
fn each_finding_from_what_was_seen() {
    let mut obs = clean();
    obs.pid_namespace = Some("pid:[4026532201]".into());
    obs.processes.extend([
        agent(20, "earlyoom", "/usr/bin/earlyoom -r 3600", -100, None),
        agent(
            21,
            "systemd-oomd",
            "/usr/lib/systemd/systemd-oomd",
            -900,
            None,
        ),
        AgentProcess {
            memory_min: Some(0),
            ..agent(
                22,
                "containerd",
                "/usr/bin/containerd",
                0,
                Some("system.slice/containerd.service"),
            )
        },
        agent(
            23,
            "oomwarden",
            "oomwarden run --config /etc/oomwarden.yaml",
            0,
            None,
        ),
        // The doctor itself is no daemon.
        agent(24, "oomwarden", "oomwarden doctor", 0, None),
    ]);
    obs.oomd_units.push(UnitOom {
        unit: "system.slice".into(),
        key: "ManagedOOMMemoryPressure",
        value: "kill".into(),
        holds: "the node's services",
        files: vec![
            "/usr/lib/systemd/system/system.slice.d/10-oomd-per-slice-defaults.conf".into(),
        ],
    });
    obs.talos_config = TalosConfig::Read {
        path: "/system/state/config.yaml".into(),
        trigger: None,
    };
    obs.panic_on_oom = Some(1);
    obs.overcommit_memory = Some(2);
    obs.lru_gen = Some(LruGen {
        enabled: true,
        min_ttl_ms: 1000,
        path: "/sys/kernel/mm/lru_gen/min_ttl_ms".into(),
    });
    obs.swap = Some(oomwarden_model::NodeSwap {
        total: 1 << 30,
        free: 1 << 29,
        zswap: 0,
    });
    obs.zswap_enabled = Some(true);
    obs.dying_descendants = Some(5000);
    obs.talos_misreads.push("kubepods/system (…)".into());
    let report = diagnose(&obs, &defaults());
    use Severity::*;
    assert_eq!(
        ids(&report),
        vec![
            ("systemd-oomd-managed", Error),
            ("daemon-protection", Warning),
            ("dying-cgroups", Warning),
            ("foreign-pid-namespace", Warning),
            ("mglru-min-ttl", Warning),
            ("node-agent-oom-score-adj", Warning),
            ("other-killer", Warning),
            ("panic-on-oom", Warning),
            ("swap-blind-policy", Warning),
            ("talos-oom-controller", Warning),
            ("layout", Info),
            ("node-agent-memory-min", Info),
            ("overcommit-never", Info),
            ("talos-misread", Info),
        ]
    );
    assert_eq!(report.worst(), Some(Error));
    assert_eq!(report.count(Warning), 9);
    // Without systemd-oomd running, its settings are a note.
    obs.processes.retain(|p| p.comm != "systemd-oomd");
    let report = diagnose(&obs, &defaults());
    let f = report
        .findings
        .iter()
        .find(|f| f.id == "systemd-oomd-managed")
        .unwrap();
    assert_eq!(f.severity, Info);
}

#[test]
fn a_swap_policy_is_not_blind() {
    let mut obs = clean();
    obs.swap = Some(oomwarden_model::NodeSwap {
        total: 1 << 30,
        free: 1 << 30,
        zswap: 0,
    });
    let policy = Policy {
        swap_reads: vec!["node_swap_free"],
        ..defaults()
    };
    let report = diagnose(&obs, &policy);
    assert!(ids(&report).contains(&("swap", Severity::Info)));
    assert!(
        !ids(&report)
            .iter()
            .any(|(id, _)| *id == "swap-blind-policy")
    );
}

#[test]
fn an_unknown_layout_and_missing_dirs() {
    let mut obs = clean();
    obs.layout = Err("no built-in layout matches".into());
    let report = diagnose(&obs, &defaults());
    assert!(ids(&report).contains(&("layout-unknown", Severity::Error)));
    let mut obs = clean();
    obs.missing_dirs = vec!["kubepods".into()];
    let given = Policy {
        layout_auto: false,
        ..defaults()
    };
    assert!(ids(&diagnose(&obs, &given)).contains(&("layout-missing-dirs", Severity::Warning)));
    // Detected layouts have no missing directories to speak of.
    assert!(
        !ids(&diagnose(&obs, &defaults())).contains(&("layout-missing-dirs", Severity::Warning))
    );
}

#[test]
fn talos_machine_configuration_trigger() {
    assert_eq!(
        parse_talos_oom_trigger(
            "version: v1alpha1\nmachine: {}\n---\napiVersion: v1alpha1\nkind: OOMConfig\ntriggerExpression: 'false'\n"
        ),
        Ok(Some("false".to_owned()))
    );
    assert_eq!(
        parse_talos_oom_trigger("version: v1alpha1\nmachine: {}\n"),
        Ok(None)
    );
    assert!(parse_talos_oom_trigger("a: [\n").is_err());
    let mut obs = clean();
    obs.talos_config = TalosConfig::Unreadable {
        path: "/system/state/config.yaml".into(),
        why: "Permission denied".into(),
    };
    assert!(ids(&diagnose(&obs, &defaults())).contains(&("talos-oom-controller", Severity::Info)));
}
