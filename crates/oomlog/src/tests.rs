use super::*;

#[test]
fn line_prefixes() {
    let cases: [(&str, Option<&str>, Option<f64>, &str); 9] = [
        ("[ 8523.347322] msg", None, Some(8523.347322), "msg"),
        (
            "[Sun Nov 29 15:00:00 2026] msg",
            Some("Sun Nov 29 15:00:00 2026"),
            None,
            "msg",
        ),
        (
            "Oct 12 19:00:20 node-1 kernel: [ 8523.347322] msg",
            Some("Oct 12 19:00:20"),
            Some(8523.347322),
            "msg",
        ),
        (
            "Jan  5 15:19:27 kernel: msg",
            Some("Jan  5 15:19:27"),
            None,
            "msg",
        ),
        (
            "2026-11-29T15:00:00+0000 node-1 kernel: msg",
            Some("2026-11-29T15:00:00+0000"),
            None,
            "msg",
        ),
        (
            "[ 8523.347322] node-1 kernel: msg",
            None,
            Some(8523.347322),
            "msg",
        ),
        ("6,1234,8523347322,-;msg", None, Some(8523.347322), "msg"),
        (
            "[ 184245]     0 184245",
            None,
            None,
            "[ 184245]     0 184245",
        ),
        (
            "Oct 12 19:00:20 node-1 systemd[1]: x",
            None,
            None,
            "Oct 12 19:00:20 node-1 systemd[1]: x",
        ),
    ];
    for (raw, time, up, msg) in cases {
        let l = split_line(raw);
        assert_eq!(
            (l.time, l.uptime_seconds, l.message),
            (time, up, msg),
            "{raw}"
        );
    }
}

const MEMCG_6X: &str = "\
[ 2990.100000] stress-ng-vm invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=1000
[ 2990.100100] [  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name
[ 2990.100200] [ 22609]     0 22609  2480905  1034954 10964000        0           969 node
[ 2990.100300] [ 22610]     0 22610     1000      100    40000        0           969 sh
[ 2993.782678] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=cri-containerd-46b3e0a4df44b752b841aecca454e6e78995d567912a84950390bae6f6777a63.scope,mems_allowed=0,oom_memcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod94eb36cd_29e1_478b_b365_4cb5dfc7d6fb.slice,task_memcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod94eb36cd_29e1_478b_b365_4cb5dfc7d6fb.slice/cri-containerd-46b3e0a4df44b752b841aecca454e6e78995d567912a84950390bae6f6777a63.scope,task=node,pid=22609,uid=0
[ 2993.794008] Memory cgroup out of memory: Killed process 22609 (node) total-vm:9923620kB, anon-rss:4116684kB, file-rss:23132kB, shmem-rss:0kB, UID:0 pgtables:10964kB oom_score_adj:969
[ 2993.798222] Tasks in /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod94eb36cd_29e1_478b_b365_4cb5dfc7d6fb.slice/cri-containerd-46b3e0a4df44b752b841aecca454e6e78995d567912a84950390bae6f6777a63.scope are going to be killed due to memory.oom.group set
[ 2993.798300] Memory cgroup out of memory: Killed process 22609 (node) total-vm:9923620kB, anon-rss:4116684kB, file-rss:23132kB, shmem-rss:0kB, UID:0 pgtables:10964kB oom_score_adj:969
[ 2993.798400] Memory cgroup out of memory: Killed process 22610 (sh) total-vm:4000kB, anon-rss:400kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:40kB oom_score_adj:969
[ 2993.800000] oom_reaper: reaped process 22609 (node), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB
";

#[test]
fn a_group_kill_lists_each_process_once_victim_first() {
    let events = parse(MEMCG_6X);
    assert_eq!(events.len(), 1, "{events:#?}");
    let e = &events[0];
    assert_eq!(e.kind, Some(OomKind::Memcg));
    assert!(e.group_kill && !e.kubelet_system_oom && !e.incomplete);
    assert_eq!(e.invoked_by.as_deref(), Some("stress-ng-vm"));
    assert_eq!(
        (e.victim_pid, e.victim_comm.as_deref()),
        (Some(22609), Some("node"))
    );
    assert_eq!(
        (
            e.anon_rss_kb,
            e.file_rss_kb,
            e.shmem_rss_kb,
            e.oom_score_adj
        ),
        (Some(4116684), Some(23132), Some(0), Some(969))
    );
    assert_eq!(
        e.pod_uid.as_deref(),
        Some("94eb36cd-29e1-478b-b365-4cb5dfc7d6fb")
    );
    assert_eq!(
        e.container_id.as_deref(),
        Some("46b3e0a4df44b752b841aecca454e6e78995d567912a84950390bae6f6777a63")
    );
    let pids: Vec<u32> = e.killed.iter().map(|k| k.pid).collect();
    assert_eq!(pids, [22609, 22610]);
    assert_eq!(e.uptime_seconds, Some(2993.782678));
}

#[test]
fn the_task_table_supplies_oom_score_adj_when_the_kill_line_lacks_it() {
    let text = "x invoked oom-killer: gfp_mask=0x0, order=0, oom_score_adj=0\n[ 1532]  0  1532  410347  398791  787  0  -17 badsysprogram\nOut of memory: Kill process 1532 (badsysprogram) score 919 or sacrifice child\nKilled process 1532 (badsysprogram) total-vm:1641388kB, anon-rss:1595164kB, file-rss:76kB\n";
    let e = &parse(text)[0];
    assert_eq!(e.kind, Some(OomKind::Global));
    assert!(e.kubelet_system_oom);
    assert_eq!(e.oom_score_adj, Some(-17));
    assert_eq!(e.shmem_rss_kb, None);
}

#[test]
fn global_oom_of_a_pod_process_is_a_kubelet_system_oom() {
    // Sample D of the real-world log: k3s, cgroupfs driver; `cpuset=system.slice` is not the
    // memory cgroup.
    let text = "Dec 30 18:08:17 front kernel: [606280.177800] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=system.slice,mems_allowed=0,global_oom,task_memcg=/kubepods/besteffort/podbe1e663f-f7a1-4b90-bdfd-bb30afdf7c37/53463dbb01e95cfa79e16677e4a67317688384cc5b6c54d416b48dce0f406b4c,task=entry,pid=19227,uid=0\nDec 30 18:08:17 front kernel: [606280.177828] Out of memory: Killed process 19227 (entry) total-vm:1656kB, anon-rss:120kB, file-rss:4kB, shmem-rss:0kB\n";
    let events = parse(text);
    assert_eq!(events.len(), 1);
    let e = &events[0];
    assert_eq!(e.kind, Some(OomKind::Global));
    assert!(e.kubelet_system_oom);
    assert_eq!(e.oom_memcg, None);
    assert_eq!(e.constraint.as_deref(), Some("CONSTRAINT_NONE"));
    assert_eq!(
        e.pod_uid.as_deref(),
        Some("be1e663f-f7a1-4b90-bdfd-bb30afdf7c37")
    );
    assert_eq!(
        e.container_id.as_deref(),
        Some("53463dbb01e95cfa79e16677e4a67317688384cc5b6c54d416b48dce0f406b4c")
    );
    assert_eq!(e.time.as_deref(), Some("Dec 30 18:08:17"));
    assert_eq!(e.uptime_seconds, Some(606280.177800));
}

#[test]
fn constraint_none_with_oom_memcg_is_a_memcg_kill() {
    // Sample E: the constraint field alone would mislead.
    let text = "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=docker-5c22.scope,mems_allowed=0,oom_memcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podef7ce918_ae07_11e9_bf64_00163e08cd06.slice/docker-5c223edfde3b17676cb982efdc201218a674578704d33d09de4775b721cb4702.scope,task_memcg=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podef7ce918_ae07_11e9_bf64_00163e08cd06.slice/docker-5c223edfde3b17676cb982efdc201218a674578704d33d09de4775b721cb4702.scope,task=php-fpm7,pid=26865,uid=65534\n";
    let e = &parse(text)[0];
    assert_eq!(e.kind, Some(OomKind::Memcg));
    assert!(!e.kubelet_system_oom);
    assert_eq!(
        e.pod_uid.as_deref(),
        Some("ef7ce918-ae07-11e9-bf64-00163e08cd06")
    );
}

#[test]
fn several_reports_interleaved_with_noise_and_a_cut_one() {
    let cut =
        "[ 1.0] a invoked oom-killer: gfp_mask=0x0, order=0, oom_score_adj=0\n[ 1.1] Mem-Info:\n";
    let noise = "[ 2.0] docker0: port 2(veth1) entered disabled state\n";
    let text = format!("{cut}{MEMCG_6X}{noise}{MEMCG_6X}{noise}");
    let events = parse(&text);
    assert_eq!(events.len(), 3, "{events:#?}");
    assert!(events[0].incomplete && events[0].victim_pid.is_none());
    assert!(!events[0].kubelet_system_oom);
    assert!(
        events[1..]
            .iter()
            .all(|e| e.victim_pid == Some(22609) && !e.incomplete)
    );
}

#[test]
fn reports_whose_start_was_cut_still_count() {
    // Two summaries in a row without start lines: two events.
    let one = "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=a,mems_allowed=0,oom_memcg=/a,task_memcg=/a,task=x,pid=1,uid=0\nMemory cgroup out of memory: Killed process 1 (x) total-vm:1kB, anon-rss:1kB, file-rss:0kB, shmem-rss:0kB\n";
    assert_eq!(parse(&format!("{one}{one}")).len(), 2);
    let killed_only = "Killed process 19667 (evil-program2) total-vm:1460016kB, anon-rss:1414008kB, file-rss:4kB\n";
    let e = &parse(killed_only)[0];
    assert_eq!(e.victim_comm.as_deref(), Some("evil-program2"));
    assert_eq!(e.kind, None);
}

#[test]
fn comm_with_parentheses_and_spaces() {
    let e = &parse("Killed process 7 (a (b) c) total-vm:1kB, anon-rss:2kB, file-rss:0kB\n")[0];
    assert_eq!(e.victim_comm.as_deref(), Some("a (b) c"));
    assert_eq!(e.anon_rss_kb, Some(2));
}

use upstream::data as upstream_data;

mod upstream {
    //! The cAdvisor test streams and expectations (`testdata/oomlog`, from
    //! google/cadvisor `utils/oomparser`; see its README).
    use super::*;
    use serde_json::Value;

    /// The fixtures, compiled in (this crate does no I/O, not even in tests).
    pub(super) fn data(name: &str) -> String {
        macro_rules! files {
            ($($f:literal),*) => {
                match name {
                    $($f => include_str!(concat!("../../../testdata/oomlog/", $f)),)*
                    _ => panic!("no fixture {name}"),
                }
            };
        }
        files!(
            "expected.json",
            "real-world-supplementary.log",
            "cadvisor-kmsg-container-oom-memorymonster-kernel3.13.log",
            "cadvisor-kmsg-system-oom-badsysprogram-kernel3.13.log",
            "cadvisor-kmsg-docker-multi-oom-part1-kernel4.8.log",
            "cadvisor-kmsg-docker-multi-oom-part2-kernel4.8.log",
            "cadvisor-2015-containerOomExampleLog.txt",
            "cadvisor-2015-systemOomExampleLog.txt",
            "vm-debian-trixie-6.12-dmesg.txt",
            "vm-debian-bookworm-6.1-dmesg.txt"
        )
        .to_owned()
    }

    fn expected() -> Value {
        serde_json::from_str(&data("expected.json")).unwrap()
    }

    /// cAdvisor's (ContainerName, VictimContainerName, Pid, ProcessName) of an event.
    fn cadvisor_view(e: &OomEvent) -> (String, String, u64, String) {
        let victim_container = if e.kubelet_system_oom {
            "/".to_owned()
        } else {
            e.oom_memcg.clone().unwrap_or_default()
        };
        let container = if e.kubelet_system_oom && e.oom_memcg.is_none() && e.task_memcg.is_none() {
            "/".to_owned()
        } else {
            e.task_memcg.clone().unwrap_or_else(|| "/".to_owned())
        };
        (
            container,
            victim_container,
            u64::from(e.victim_pid.unwrap()),
            e.victim_comm.clone().unwrap(),
        )
    }

    fn want(v: &Value) -> (String, String, u64, String) {
        (
            v["ContainerName"].as_str().unwrap().to_owned(),
            v["VictimContainerName"].as_str().unwrap().to_owned(),
            v["Pid"].as_u64().unwrap(),
            v["ProcessName"].as_str().unwrap().to_owned(),
        )
    }

    #[test]
    fn cadvisor_streams() {
        let exp = expected();
        let streams = &exp["stream_expectations"];
        for (file, text) in [
            (
                "cadvisor-kmsg-container-oom-memorymonster-kernel3.13.log",
                data("cadvisor-kmsg-container-oom-memorymonster-kernel3.13.log"),
            ),
            (
                "cadvisor-kmsg-system-oom-badsysprogram-kernel3.13.log",
                data("cadvisor-kmsg-system-oom-badsysprogram-kernel3.13.log"),
            ),
            (
                "cadvisor-kmsg-docker-multi-oom-part1-kernel4.8.log + part2",
                data("cadvisor-kmsg-docker-multi-oom-part1-kernel4.8.log")
                    + &data("cadvisor-kmsg-docker-multi-oom-part2-kernel4.8.log"),
            ),
        ] {
            let got: Vec<_> = parse(&text).iter().map(cadvisor_view).collect();
            let wanted: Vec<_> = streams[file]["expected"]
                .as_array()
                .unwrap()
                .iter()
                .map(want)
                .collect();
            assert_eq!(got, wanted, "{file}");
        }
        for file in [
            "cadvisor-2015-containerOomExampleLog.txt",
            "cadvisor-2015-systemOomExampleLog.txt",
        ] {
            let events = parse(&data(file));
            let wanted = &streams[file]["expected_current_parser"][0];
            assert_eq!(events.len(), 1, "{file}");
            assert_eq!(cadvisor_view(&events[0]), want(wanted), "{file}");
            assert_eq!(
                events[0].time.as_deref(),
                wanted["TimeOfDeath"].as_str(),
                "{file}"
            );
        }
    }

    #[test]
    fn cadvisor_single_lines() {
        let exp = expected();
        let cases = exp["single_line"].as_array().unwrap();
        assert_eq!(cases.len(), 4);
        // The start line alone: a report cut before its kill, which cAdvisor never emits.
        let e = &parse(cases[0]["line"].as_str().unwrap())[0];
        assert!(e.incomplete && !e.kubelet_system_oom);
        assert_eq!(e.invoked_by.as_deref(), Some("ruby"));
        // The kill line alone.
        let e = &parse(cases[1]["line"].as_str().unwrap())[0];
        let want = &cases[1]["getProcessNamePid"];
        assert_eq!(e.victim_pid.map(u64::from), want["Pid"].as_u64());
        assert_eq!(e.victim_comm.as_deref(), want["ProcessName"].as_str());
        // The legacy line: the task's cgroup and the one whose limit was hit.
        let e = &parse(cases[2]["line"].as_str().unwrap())[0];
        let want = &cases[2]["getContainerName"];
        assert_eq!(e.task_memcg.as_deref(), want["ContainerName"].as_str());
        assert_eq!(e.oom_memcg.as_deref(), want["VictimContainerName"].as_str());
        // The summary line of Linux >= 5.0.
        let e = &parse(cases[3]["line"].as_str().unwrap())[0];
        let want = &cases[3]["getContainerName"];
        assert_eq!(e.task_memcg.as_deref(), want["ContainerName"].as_str());
        assert_eq!(e.oom_memcg.as_deref(), want["VictimContainerName"].as_str());
        assert_eq!(e.victim_pid.map(u64::from), want["Pid"].as_u64());
        assert_eq!(e.victim_comm.as_deref(), want["ProcessName"].as_str());
        assert_eq!(e.constraint.as_deref(), want["Constraint"].as_str());
        assert_eq!(
            e.pod_uid.as_deref(),
            Some("fbdfe8e3-1c87-4ff2-907c-b2ec8e25d012")
        );
    }

    /// Every real-world line on its own gives what cAdvisor's regexes extract from it.
    #[test]
    fn real_world_lines_one_by_one() {
        let exp = expected();
        for case in exp["supplementary_per_line"].as_array().unwrap() {
            let line = case["line"].as_str().unwrap();
            let events = parse(line);
            if let Some(c) = case.get("containerRegexp") {
                let e = &events[0];
                assert_eq!(e.constraint.as_deref(), c["constraint"].as_str(), "{line}");
                assert_eq!(
                    e.oom_memcg.as_deref(),
                    c["oom_memcg(VictimContainerName)"].as_str(),
                    "{line}"
                );
                assert_eq!(
                    e.task_memcg.as_deref(),
                    c["task_memcg(ContainerName)"].as_str(),
                    "{line}"
                );
                assert_eq!(e.victim_comm.as_deref(), c["task"].as_str(), "{line}");
                assert_eq!(e.victim_pid.map(u64::from), c["pid"].as_u64(), "{line}");
            } else if let Some(c) = case.get("lastLineRegexp") {
                let e = &events[0];
                assert_eq!(e.victim_pid.map(u64::from), c["pid"].as_u64(), "{line}");
                assert_eq!(e.victim_comm.as_deref(), c["name"].as_str(), "{line}");
            } else if let Some(c) = case.get("legacyContainerRegexp") {
                let e = &events[0];
                assert_eq!(
                    e.task_memcg.as_deref(),
                    c["ContainerName"].as_str(),
                    "{line}"
                );
                assert_eq!(
                    e.oom_memcg.as_deref(),
                    c["VictimContainerName"].as_str(),
                    "{line}"
                );
            } else {
                // Global summaries cAdvisor's regex misses still make an event here; the rest
                // (task table rows, systemd and oom_reaper lines) make none.
                let global = line.contains("global_oom");
                assert_eq!(events.len(), usize::from(global), "{line}: {events:?}");
            }
        }
    }

    #[test]
    fn cadvisor_process_names() {
        for case in expected()["last_line_regex_process_names"]
            .as_array()
            .unwrap()
        {
            let line = case["line"].as_str().unwrap();
            let events = parse(line);
            match case["ProcessName"].as_str() {
                Some(name) => {
                    assert_eq!(events.len(), 1, "{line}");
                    assert_eq!(events[0].victim_comm.as_deref(), Some(name), "{line}");
                    assert_eq!(
                        events[0].victim_pid.map(u64::from),
                        case["Pid"].as_u64(),
                        "{line}"
                    );
                }
                None => assert!(events.is_empty(), "{line}: {events:?}"),
            }
        }
    }

    #[test]
    fn real_world_samples() {
        let events = parse(&data("real-world-supplementary.log"));
        let summary: Vec<_> = events
            .iter()
            .map(|e| {
                (
                    e.kind,
                    e.victim_pid,
                    e.pod_uid
                        .as_deref()
                        .map(|u| u.get(..8).unwrap_or(u).to_owned()),
                    e.kubelet_system_oom,
                    e.group_kill,
                )
            })
            .collect();
        use OomKind::*;
        let s = |x: &str| Some(x.to_owned());
        assert_eq!(
            summary,
            [
                (Some(Memcg), Some(183960), s("5931aa75"), false, false),
                (Some(Memcg), Some(184260), s("58dc1221"), false, false),
                (Some(Memcg), Some(2138551), s("0057cc81"), false, false),
                (Some(Global), Some(19227), s("be1e663f"), true, false),
                (Some(Memcg), Some(26865), s("ef7ce918"), false, false),
                (Some(Memcg), None, s("0330b2c1"), false, false),
                (Some(Memcg), Some(22609), s("94eb36cd"), false, true),
            ],
            "{events:#?}"
        );
        // Sample B: oom_score_adj from the kill line; sample F is cut after its legacy line.
        assert_eq!(events[1].oom_score_adj, Some(999));
        assert!(events[5].incomplete);
    }
}

mod vm {
    //! Kernel logs captured by the VM scenario S8 on Debian's kernels: a memcg OOM, a
    //! `memory.oom.group` kill (the victim printed twice) and a global OOM.
    use super::upstream_data as data;
    use super::*;

    #[test]
    fn debian_kernels() {
        for (file, pids) in [
            ("vm-debian-trixie-6.12-dmesg.txt", [170, 204, 201, 235]),
            ("vm-debian-bookworm-6.1-dmesg.txt", [118, 152, 149, 183]),
        ] {
            let events = parse(&data(file));
            let view: Vec<_> = events
                .iter()
                .map(|e| {
                    (
                        e.kind,
                        e.victim_pid,
                        e.killed.iter().map(|k| k.pid).collect::<Vec<_>>(),
                        e.oom_memcg.as_deref(),
                        e.group_kill,
                        e.kubelet_system_oom,
                    )
                })
                .collect();
            let [m, g, small, global] = pids;
            assert_eq!(
                view,
                [
                    (
                        Some(OomKind::Memcg),
                        Some(m),
                        vec![m],
                        Some("/kubepods/burstable/podmemcg/ctr"),
                        false,
                        false
                    ),
                    (
                        Some(OomKind::Memcg),
                        Some(g),
                        vec![g, small],
                        Some("/kubepods/burstable/podgroup/ctr"),
                        true,
                        false
                    ),
                    (
                        Some(OomKind::Global),
                        Some(global),
                        vec![global],
                        None,
                        false,
                        true
                    ),
                ],
                "{file}"
            );
            // The group kill prints its victim twice, and the `oom_kill` counters count both
            // lines: three kill lines for two processes.
            assert_eq!(
                events.iter().map(|e| e.kill_lines).collect::<Vec<_>>(),
                [1, 3, 1],
                "{file}"
            );
            // `cpuset=kubepods` is not the memory cgroup.
            assert_eq!(
                events[2].task_memcg.as_deref(),
                Some("/kubepods/besteffort/podglobal/ctr"),
                "{file}"
            );
            assert!(
                events
                    .iter()
                    .all(|e| e.invoked_by.as_deref() == Some("hog"))
            );
        }
    }
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    const PIECES: &[&str] = &[
        "x invoked oom-killer: gfp_mask=0x0, order=0, oom_score_adj=0",
        "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=a,mems_allowed=0,oom_memcg=/a,task_memcg=/kubepods/pod1,task=x,pid=1,uid=0",
        "oom-kill:constraint=,global_oom,task=,pid=",
        "oom-kill:",
        "Killed process 1 (x) total-vm:1kB, anon-rss:99999999999999999999kB",
        "Memory cgroup out of memory: Killed process 2 () oom_score_adj:-",
        "Tasks in /a are going to be killed due to memory.oom.group set",
        "Task in  killed as a result of limit of ",
        "[ 12] 0 12 1 1 1 0 -1000 y",
        "[",
        "6,1,;",
        "Jan  5 15:19:27 kernel: ",
    ];

    proptest! {
        #[test]
        fn any_text_parses(text in "\\PC{0,400}") {
            let _ = parse(&text);
        }

        #[test]
        fn oom_shaped_text_parses(lines in prop::collection::vec(
            (prop::sample::select(PIECES), "\\PC{0,12}", 0usize..60), 0..20)) {
            // Pieces, cut at random places and with random tails.
            let text: String = lines
                .iter()
                .map(|(p, tail, cut)| {
                    let cut = (*cut).min(p.len());
                    let head = p.get(..cut).unwrap_or(p);
                    format!("{head}{tail}\n")
                })
                .collect();
            for e in parse(&text) {
                let mut pids: Vec<u32> = e.killed.iter().map(|k| k.pid).collect();
                pids.dedup();
                prop_assert_eq!(pids.len(), e.killed.len());
            }
        }
    }
}

/// Issue 32: a report of 100,000 kill lines (a group kill of a fork bomb) cost 6 s of a core:
/// each line scanned the list of the processes already killed. Shown by counting, not timing:
/// the work per line is one set look-up, so doubling the lines doubles the comparisons the
/// old scan made four-fold; here the parse of 100,000 lines finishes and keeps every PID once.
#[test]
fn a_report_of_100000_kill_lines_keeps_every_process_once() {
    let mut text = String::from(
        "[ 1.000000] stress invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0\n",
    );
    for pid in 0..100_000u32 {
        text.push_str(&format!(
            "[ 1.5] Memory cgroup out of memory: Killed process {} (bomb) total-vm:4000kB, anon-rss:400kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:40kB oom_score_adj:0\n",
            pid + 10
        ));
    }
    // Every line once more: de-duplicated.
    text.push_str("[ 1.6] Memory cgroup out of memory: Killed process 10 (bomb) total-vm:4000kB, anon-rss:400kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:40kB oom_score_adj:0\n");
    let events = parse(&text);
    assert_eq!(events.len(), 1);
    let killed = events.first().map(|e| e.killed.len());
    assert_eq!(killed, Some(100_000));
}
