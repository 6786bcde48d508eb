//! The record of a triggered cycle, built once from what the cycle knew (its context, the
//! victim chosen, what acting on it came to, what woke it), and the hooks' view of it.

use oomwarden_actuate::{ActOutcome, ActReport, HookEvent, Part, millis};
use oomwarden_cgroupfs::CgroupFs;
use oomwarden_model::{
    ActionRecord, CandidateSample, Identities, IdentitySource, KillMethod, KillScope,
    MAX_CONTAINERS_LISTED, MAX_RUNNERS_UP, MemoryBreakdown, Outcome, QosClass, RecordKind,
    RunnerUp, TriggerContext, Wakeup, Workload, listed_pids,
};
use oomwarden_procfs::ProcFs;

/// At most this many PIDs in a post-kill hook's `OOMWARDEN_PIDS` (the record on its standard
/// input has them all): well under the kernel's 128 KiB limit on one environment string.
pub(crate) const HOOK_PIDS_LISTED: usize = 1000;

/// The victim as records and hooks name it, read before anything is done to it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Target {
    /// Its node path (`/sys/fs/cgroup/…`).
    pub(crate) path: String,
    /// Relative to the hierarchy read.
    pub(crate) dir: String,
    /// Its cgroup id when it was ranked.
    pub(crate) cgroup_id: Option<u64>,
    pub(crate) class: QosClass,
    pub(crate) pod_uid: Option<String>,
    /// Its containers' IDs (the first [`MAX_CONTAINERS_LISTED`]), the sandbox left out.
    pub(crate) containers: Vec<String>,
    /// The pod's sandbox ID, when the runtime named it.
    pub(crate) sandbox: Option<String>,
    /// The pod's namespace and name, when known.
    pub(crate) namespace: Option<String>,
    pub(crate) pod_name: Option<String>,
    /// The names of `containers` (empty when none is known).
    pub(crate) container_names: Vec<String>,
    /// What made the pod (from its labels), when its namespace and name are known.
    pub(crate) workload: Option<Workload>,
    /// Each container's working set, in the order of `containers`.
    pub(crate) working_sets: Vec<Option<u64>>,
    /// Where the pod's identity came from (none for a victim that is no pod).
    pub(crate) identity_source: Option<IdentitySource>,
    /// What the kill ends (none for a victim that is no pod).
    pub(crate) kill_scope: Option<KillScope>,
    /// With `containers`: the container cgroups to kill (the sandbox spared).
    pub(crate) parts: Vec<Part>,
    /// With `containers`: the pod had more child cgroups than [`MAX_KILL_PARTS`] and is
    /// killed whole.
    pub(crate) parts_bounded: bool,
    pub(crate) score: f64,
    pub(crate) memory_current: Option<u64>,
    /// Its memory by kind, read now.
    pub(crate) memory_breakdown: Option<MemoryBreakdown>,
    /// Its growth as ranked, bytes per second.
    pub(crate) growth: Option<f64>,
}

impl Target {
    /// The candidate chosen, with its pod and its containers' IDs read now (after a kill
    /// they are gone), named from `identities`; with `scope` containers, the container
    /// cgroups to kill.
    pub(crate) fn read(
        c: &CandidateSample,
        score: f64,
        readers: (&CgroupFs, &ProcFs),
        identities: &Identities,
        scope: KillScope,
    ) -> Self {
        let (cgroups, proc) = readers;
        // The sandbox's cgroup is named like a container's; the runtime says which it is.
        // (container ID, cgroup dir), the sandbox's apart.
        type Children = Vec<(String, String)>;
        let (sandboxes, containers): (Children, Children) = cgroups
            .children(&c.dir)
            .unwrap_or_default()
            .iter()
            .filter_map(|child| {
                let dir = format!("{}/{child}", c.dir);
                let id = oomwarden_kube::decode_cgroup_path(&dir).container_id?;
                Some((id, dir))
            })
            .take(MAX_CONTAINERS_LISTED)
            .partition(|(id, _)| identities.is_sandbox(id));
        let working_sets = containers
            .iter()
            .map(|(_, dir)| working_set(cgroups, dir))
            .collect();
        let containers: Vec<String> = containers.into_iter().map(|(id, _)| id).collect();
        let pod_uid = oomwarden_kube::decode_cgroup_path(&c.dir).pod_uid;
        let pod = pod_uid.as_deref().and_then(|uid| identities.pod(uid));
        let (parts, parts_bounded) = match (&pod_uid, scope) {
            (Some(uid), KillScope::Containers) => {
                container_parts(&c.dir, uid, cgroups, proc, identities)
            }
            _ => (Vec::new(), false),
        };
        let kill_scope = pod_uid.as_ref().map(|_| {
            if parts.is_empty() {
                KillScope::Pod
            } else {
                KillScope::Containers
            }
        });
        if scope == KillScope::Containers && pod_uid.is_some() && parts.is_empty() && !parts_bounded
        {
            tracing::warn!(cgroup = %c.path, "killScope containers: no container cgroup told apart from the sandbox; the whole pod is killed");
        }
        let names: Vec<String> = containers
            .iter()
            .map(|id| {
                identities
                    .container(id)
                    .map(|k| k.name.clone())
                    .unwrap_or_default()
            })
            .collect();
        let container_names = if names.iter().any(|n| !n.is_empty()) {
            names
        } else {
            Vec::new()
        };
        Target {
            path: c.path.clone(),
            dir: c.dir.clone(),
            cgroup_id: c.cgroup_id,
            class: c.class,
            workload: pod.map(|p| oomwarden_kube::workload(&p.namespace, &p.name, &p.labels)),
            namespace: pod.map(|p| p.namespace.clone()),
            pod_name: pod.map(|p| p.name.clone()),
            identity_source: pod_uid
                .as_ref()
                .map(|_| pod.map_or(IdentitySource::Path, |p| p.source)),
            pod_uid,
            containers,
            sandbox: sandboxes.into_iter().next().map(|(id, _)| id),
            container_names,
            working_sets,
            kill_scope,
            parts,
            parts_bounded,
            score,
            memory_current: c.memory.current,
            memory_breakdown: breakdown(cgroups, &c.dir),
            growth: c.growth,
        }
    }

    /// `namespace/name`, when the pod is known.
    pub(crate) fn pod(&self) -> Option<String> {
        Some(format!(
            "{}/{}",
            self.namespace.as_ref()?,
            self.pod_name.as_ref()?
        ))
    }
}

/// A cgroup's memory by kind (`memory.stat`, `memory.swap.current`); `None` when neither
/// could be read (gone already).
fn breakdown(cgroups: &CgroupFs, dir: &str) -> Option<MemoryBreakdown> {
    let stat = cgroups.memory_stat(dir).ok();
    let swap = cgroups.memory_swap_current(dir).ok();
    if stat.is_none() && swap.is_none() {
        return None;
    }
    let get = |key: &str| {
        stat.as_ref()
            .and_then(|s| s.iter().find(|(k, _)| k == key).map(|(_, v)| *v))
    };
    Some(MemoryBreakdown {
        anon_bytes: get("anon"),
        file_bytes: get("file"),
        shmem_bytes: get("shmem"),
        kernel_bytes: get("kernel"),
        swap_bytes: swap,
    })
}

/// A cgroup's working set as the kubelet counts it (`memory.current` less `inactive_file`);
/// `None` when it cannot be read (gone already, or a replay that did not record it).
fn working_set(cgroups: &CgroupFs, dir: &str) -> Option<u64> {
    let usage = cgroups.memory_current(dir).ok()?;
    let inactive_file = cgroups
        .memory_stat(dir)
        .ok()?
        .into_iter()
        .find_map(|(k, v)| (k == "inactive_file").then_some(v));
    Some(oomwarden_kube::node::working_set(usage, inactive_file))
}

/// The kubelet's `oom_score_adj` for a pod's sandbox (pause) process.
const SANDBOX_OOM_SCORE_ADJ: i64 = -998;

/// A pod with more child cgroups than this is killed whole even with `killScope: containers`:
/// a pod that creates thousands of cgroups of its own (Kubernetes 1.37's writable cgroups,
/// KEP-5474) would otherwise make a kill of thousands of parts, each its own write and wait.
pub(crate) const MAX_KILL_PARTS: usize = 256;

/// The container cgroups of pod `dir` (UID `uid`), the sandbox left out. A child is the
/// sandbox when the runtime does not name it as one of the pod's containers and its processes
/// have the sandbox's `oom_score_adj` (−998, which the kubelet gives no container); every
/// other child is a container. Empty when neither a sandbox nor a named container is found
/// (the caller then kills the whole pod), or when the pod has more children than
/// [`MAX_KILL_PARTS`] (then `true` beside it).
fn container_parts(
    dir: &str,
    uid: &str,
    cgroups: &CgroupFs,
    proc: &ProcFs,
    identities: &Identities,
) -> (Vec<Part>, bool) {
    let children: Vec<String> = cgroups
        .children(dir)
        .unwrap_or_default()
        .iter()
        .map(|name| format!("{dir}/{name}"))
        .collect();
    if children.len() > MAX_KILL_PARTS {
        tracing::warn!(
            cgroup = %oomwarden_cgroupfs::node_path(dir),
            children = children.len(),
            bound = MAX_KILL_PARTS,
            "the pod has more child cgroups than a kill by containers takes; it is killed whole"
        );
        return (Vec::new(), true);
    }
    let named = |child: &str| {
        oomwarden_kube::decode_cgroup_path(child)
            .container_id
            .and_then(|id| identities.container(&id).map(|c| c.pod_uid == uid))
            .unwrap_or(false)
    };
    let is_sandbox = |child: &str| {
        let adjs: Vec<i64> = cgroups
            .cgroup_procs(child)
            .unwrap_or_default()
            .into_iter()
            .take(4)
            .filter_map(|pid| proc.oom_score_adj(pid).ok())
            .collect();
        !adjs.is_empty() && adjs.iter().all(|a| *a == SANDBOX_OOM_SCORE_ADJ)
    };
    // The sandbox is told apart positively: a child the runtime does not name as a container
    // whose processes have the pause process's oom_score_adj. Every other child is killed,
    // named or not: a container restarted since the last refresh has an ID nobody knows yet,
    // and sparing it would spare the memory the kill is for.
    let known_sandbox = |child: &str| {
        oomwarden_kube::decode_cgroup_path(child)
            .container_id
            .is_some_and(|id| identities.is_sandbox(&id))
    };
    let sandbox: Vec<bool> = children
        .iter()
        .map(|c| known_sandbox(c) || (!named(c) && is_sandbox(c)))
        .collect();
    if !sandbox.iter().any(|s| *s) && !children.iter().any(|c| named(c)) {
        // Neither a sandbox nor a known container: the whole pod.
        return (Vec::new(), false);
    }
    let containers: Vec<&String> = children
        .iter()
        .zip(&sandbox)
        .filter(|(_, is_sandbox)| !**is_sandbox)
        .map(|(c, _)| c)
        .collect();
    let parts = containers
        .into_iter()
        .map(|child| Part {
            cgroup_id: cgroups.cgroup_id(child).ok(),
            dir: child.clone(),
        })
        .collect();
    (parts, false)
}

/// What every record of a triggered cycle states, victim or not.
#[derive(Debug, Clone)]
pub(crate) struct Cycle<'a> {
    pub(crate) id: u64,
    /// RFC 3339 wall time.
    pub(crate) time: &'a str,
    pub(crate) monotonic_ns: u64,
    pub(crate) context: Option<&'a TriggerContext>,
    pub(crate) wakeup: Wakeup,
    /// The flight window saved for this record.
    pub(crate) recording: Option<&'a str>,
    /// The expressions in force.
    pub(crate) trigger_expression: &'a str,
    pub(crate) ranking_expression: &'a str,
    /// How many candidates were eligible, when the ranking ran.
    pub(crate) eligible: Option<usize>,
    /// How many were left out, by why.
    pub(crate) excluded: std::collections::BTreeMap<String, u64>,
    /// What would have been chosen instead of the victim.
    pub(crate) runners_up: Vec<RunnerUp>,
    /// How old the pod identities the ranking used were (none without a runtime answer).
    pub(crate) identity_age: Option<std::time::Duration>,
    /// How the victim is killed.
    pub(crate) kill_method: KillMethod,
}

/// How many candidates a ranking left out, by why (the record's `excluded`).
pub(crate) fn excluded(
    ranking: Option<&oomwarden_policy::Ranking>,
) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for (_, why) in ranking.map(|r| r.excluded.as_slice()).unwrap_or_default() {
        *out.entry(why.name().to_owned()).or_insert(0) += 1;
    }
    out
}

/// The eligible candidates after the victim, in the order they would have been chosen, named
/// from `identities`.
pub(crate) fn runners_up(
    plan: &oomwarden_policy::Plan,
    strict: bool,
    identities: &Identities,
) -> Vec<RunnerUp> {
    let (Some(ranking), Some((victim, _))) = (&plan.ranking, plan.victim()) else {
        return Vec::new();
    };
    oomwarden_policy::order(ranking, &plan.candidates, strict)
        .into_iter()
        .filter_map(|s| plan.candidates.get(s.index).map(|c| (c, s.score)))
        .filter(|(c, _)| c.path != victim.path)
        .take(MAX_RUNNERS_UP)
        .map(|(c, score)| {
            let pod = oomwarden_kube::decode_cgroup_path(&c.dir)
                .pod_uid
                .and_then(|uid| identities.pod(&uid).cloned());
            RunnerUp {
                cgroup: c.path.clone(),
                class: c.class,
                score,
                namespace: pod.as_ref().map(|p| p.namespace.clone()),
                pod_name: pod.map(|p| p.name),
            }
        })
        .collect()
}

/// The record's outcome for what acting came to (none: there was no victim).
fn outcome(acted: Option<&ActOutcome>) -> Outcome {
    match acted {
        None => Outcome::NoEligibleCgroup,
        Some(ActOutcome::Killed) => Outcome::Killed,
        Some(ActOutcome::NotVerified { .. }) => Outcome::NotVerified,
        Some(ActOutcome::Failed { .. }) => Outcome::KillFailed,
        Some(ActOutcome::Gone(_)) => Outcome::Gone,
        Some(ActOutcome::DryRun) => Outcome::DryRun,
    }
}

/// The record of a triggered cycle: with no victim (`no-eligible-cgroup`), or the victim and
/// what acting on it did.
pub(crate) fn record(cycle: &Cycle<'_>, victim: Option<(&Target, ActReport)>) -> ActionRecord {
    let (target, report) = victim.unzip();
    let error = report.as_ref().and_then(ActReport::error);
    let (pids, pids_omitted) =
        listed_pids(report.as_ref().map(|r| r.pids.clone()).unwrap_or_default());
    let outcome = outcome(report.as_ref().map(|r| &r.outcome));
    let (processes, processes_omitted, duration, fallback) = match report {
        Some(r) => (r.processes, r.processes_omitted, r.duration, r.fallback),
        None => (Vec::new(), 0, None, false),
    };
    ActionRecord {
        id: cycle.id,
        time: cycle.time.to_owned(),
        monotonic_ns: cycle.monotonic_ns,
        outcome,
        wakeup: Some(cycle.wakeup),
        recording: cycle.recording.map(str::to_owned),
        victim: target.map(|t| t.path.clone()),
        class: target.map(|t| t.class),
        pod_uid: target.and_then(|t| t.pod_uid.clone()),
        containers: target.map(|t| t.containers.clone()).unwrap_or_default(),
        sandbox: target.and_then(|t| t.sandbox.clone()),
        identity_age_ms: target
            .and_then(|t| t.pod_uid.as_ref())
            .and(cycle.identity_age)
            .map(|age| u64::try_from(age.as_millis()).unwrap_or(u64::MAX)),
        namespace: target.and_then(|t| t.namespace.clone()),
        pod_name: target.and_then(|t| t.pod_name.clone()),
        container_names: target
            .map(|t| t.container_names.clone())
            .unwrap_or_default(),
        container_working_set_bytes: target.map(|t| t.working_sets.clone()).unwrap_or_default(),
        workload: target.and_then(|t| t.workload.clone()),
        identity_source: target.and_then(|t| t.identity_source),
        kill_scope: target.and_then(|t| t.kill_scope),
        // Said when it is not the default, `cgroup.kill`.
        kill_method: target
            .and((cycle.kill_method != KillMethod::Cgroup).then_some(cycle.kill_method)),
        kill_fallback: fallback,
        killed_cgroups: target
            .map(|t| {
                t.parts
                    .iter()
                    .map(|p| oomwarden_cgroupfs::node_path(&p.dir))
                    .collect()
            })
            .unwrap_or_default(),
        score: target.map_or(0.0, |t| t.score),
        pids,
        pids_omitted,
        processes,
        processes_omitted,
        memory_current_bytes: target.and_then(|t| t.memory_current),
        memory_breakdown: target.and_then(|t| t.memory_breakdown),
        growth_bytes_per_second: target.and_then(|t| t.growth),
        kill_duration_ms: duration.map(millis),
        error,
        trigger_context: cycle
            .context
            .map(TriggerContext::to_json)
            .unwrap_or_default(),
        trigger_expression: Some(cycle.trigger_expression.to_owned()),
        ranking_expression: Some(cycle.ranking_expression.to_owned()),
        eligible: cycle.eligible.map(|n| u64::try_from(n).unwrap_or(u64::MAX)),
        excluded: cycle.excluded.clone(),
        runners_up: cycle.runners_up.clone(),
        ..ActionRecord::empty(
            RecordKind::Oomwarden,
            outcome,
            String::new(),
            cycle.monotonic_ns,
        )
    }
}

/// Variables describing the action to a hook (no command lines: they may hold secrets;
/// the post-kill hook gets the whole record on stdin). `after` is the record, for the
/// post-kill hook.
pub(crate) fn hook_env(
    event: HookEvent,
    dry_run: bool,
    id: u64,
    target: &Target,
    after: Option<&ActionRecord>,
) -> Vec<(String, String)> {
    let mut env = vec![
        ("OOMWARDEN_EVENT".to_owned(), event.name().to_owned()),
        ("OOMWARDEN_ACTION_ID".to_owned(), id.to_string()),
        ("OOMWARDEN_DRY_RUN".to_owned(), dry_run.to_string()),
        (
            "OOMWARDEN_SCORE".to_owned(),
            oomwarden_model::format_number(target.score),
        ),
        ("OOMWARDEN_VICTIM".to_owned(), target.path.clone()),
        ("OOMWARDEN_CLASS".to_owned(), target.class.name().to_owned()),
    ];
    let mut add = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            env.push((k.to_owned(), v));
        }
    };
    add("OOMWARDEN_POD_UID", target.pod_uid.clone());
    add("OOMWARDEN_NAMESPACE", target.namespace.clone());
    add("OOMWARDEN_POD_NAME", target.pod_name.clone());
    add(
        "OOMWARDEN_MEMORY_CURRENT_BYTES",
        target.memory_current.map(|m| m.to_string()),
    );
    if let Some(record) = after {
        add("OOMWARDEN_OUTCOME", Some(record.outcome.name().to_owned()));
        // One environment string may not exceed 128 KiB (MAX_ARG_STRLEN): 17,000 PIDs
        // made the hook fail to start (E2BIG). The first ones only; all are in the record
        // on stdin, and the count says whether the list is whole.
        let listed = record.pids.get(..HOOK_PIDS_LISTED.min(record.pids.len()));
        add(
            "OOMWARDEN_PIDS",
            listed.map(|pids| {
                pids.iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(" ")
            }),
        );
        add(
            "OOMWARDEN_PIDS_TOTAL",
            Some(record.pids_total().to_string()),
        );
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::time::Duration;

    fn target() -> Target {
        Target {
            path: "/sys/fs/cgroup/kubepods/besteffort/podx".to_owned(),
            dir: "kubepods/besteffort/podx".to_owned(),
            cgroup_id: Some(7),
            class: QosClass::Besteffort,
            pod_uid: Some("x".to_owned()),
            containers: vec!["c1".to_owned()],
            sandbox: None,
            namespace: Some("shop".to_owned()),
            pod_name: Some("web".to_owned()),
            container_names: vec!["nginx".to_owned()],
            working_sets: vec![Some(300 << 20)],
            workload: None,
            identity_source: Some(IdentitySource::Cri),
            kill_scope: Some(KillScope::Pod),
            parts: Vec::new(),
            parts_bounded: false,
            score: 2.5,
            memory_current: Some(1 << 20),
            memory_breakdown: None,
            growth: None,
        }
    }

    fn cycle() -> Cycle<'static> {
        Cycle {
            id: 4,
            time: "2026-12-01T00:00:00.000Z",
            monotonic_ns: 99,
            context: None,
            wakeup: Wakeup::Pressure,
            recording: Some("flight/4.owrec.gz"),
            trigger_expression: "memory_full_avg10 > 1.0",
            ranking_expression: "1.0",
            eligible: Some(2),
            excluded: std::collections::BTreeMap::from([("node-critical".to_owned(), 1)]),
            runners_up: vec![RunnerUp {
                cgroup: "/sys/fs/cgroup/kubepods/besteffort/pod2".to_owned(),
                class: QosClass::Besteffort,
                score: 1.5,
                namespace: None,
                pod_name: None,
            }],
            identity_age: None,
            kill_method: KillMethod::Cgroup,
        }
    }

    fn acted(outcome: ActOutcome, duration: Option<Duration>) -> ActReport {
        ActReport {
            pids: vec![1, 2],
            processes: vec!["a".to_owned()],
            processes_omitted: 1,
            outcome,
            duration,
            timeout: Duration::from_secs(1),
            fallback: false,
            walk_truncated: false,
        }
    }

    /// Every outcome of acting is stated in the record's outcome, error and duration.
    #[test]
    fn each_outcome_makes_its_record() {
        let ms = |d: u64| Some(Duration::from_millis(d));
        let cases = [
            (ActOutcome::Killed, ms(3), Outcome::Killed, None, Some(3.0)),
            (
                ActOutcome::NotVerified { stopping: false },
                ms(1000),
                Outcome::NotVerified,
                Some("processes remain in the cgroup after 1000ms"),
                Some(1000.0),
            ),
            (
                ActOutcome::NotVerified { stopping: true },
                ms(300),
                Outcome::NotVerified,
                Some("oomwarden was stopping: processes still remained in the cgroup after 300 ms"),
                Some(300.0),
            ),
            (
                ActOutcome::Failed {
                    errno: Some(13),
                    path: PathBuf::from("/x/cgroup.kill"),
                    message: "Permission denied (os error 13)".to_owned(),
                },
                ms(0),
                Outcome::KillFailed,
                Some("Permission denied (os error 13)"),
                Some(0.0),
            ),
            (
                ActOutcome::Gone(oomwarden_actuate::GoneReason::Removed),
                None,
                Outcome::Gone,
                Some("the cgroup is gone since it was ranked"),
                None,
            ),
            (ActOutcome::DryRun, None, Outcome::DryRun, None, None),
        ];
        let t = target();
        for (act, duration, want, error, ms) in cases {
            let r = record(&cycle(), Some((&t, acted(act.clone(), duration))));
            assert_eq!(r.outcome, want, "{act:?}");
            assert_eq!(r.error.as_deref(), error, "{act:?}");
            assert_eq!(r.kill_duration_ms, ms, "{act:?}");
            assert_eq!(r.victim.as_deref(), Some(t.path.as_str()));
            assert_eq!(r.class, Some(QosClass::Besteffort));
            assert_eq!((r.pids.as_slice(), r.processes_omitted), (&[1, 2][..], 1));
            assert_eq!(r.wakeup, Some(Wakeup::Pressure));
            assert_eq!(r.recording.as_deref(), Some("flight/4.owrec.gz"));
        }
    }

    #[test]
    fn no_victim_is_a_bare_record() {
        let r = record(&cycle(), None);
        assert_eq!(r.outcome, Outcome::NoEligibleCgroup);
        assert_eq!((r.victim, r.class, r.score), (None, None, 0.0));
        assert!(r.pids.is_empty() && r.error.is_none() && r.kill_duration_ms.is_none());
    }

    #[test]
    fn hooks_see_the_target_and_after_the_kill_the_outcome() {
        let t = target();
        let pre = hook_env(HookEvent::PreKill, true, 4, &t, None);
        let names: Vec<&str> = pre.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "OOMWARDEN_EVENT",
                "OOMWARDEN_ACTION_ID",
                "OOMWARDEN_DRY_RUN",
                "OOMWARDEN_SCORE",
                "OOMWARDEN_VICTIM",
                "OOMWARDEN_CLASS",
                "OOMWARDEN_POD_UID",
                "OOMWARDEN_NAMESPACE",
                "OOMWARDEN_POD_NAME",
                "OOMWARDEN_MEMORY_CURRENT_BYTES"
            ]
        );
        let r = record(&cycle(), Some((&t, acted(ActOutcome::Killed, None))));
        let post = hook_env(HookEvent::PostKill, false, 4, &t, Some(&r));
        assert!(post.contains(&("OOMWARDEN_OUTCOME".to_owned(), "killed".to_owned())));
        assert!(post.contains(&("OOMWARDEN_PIDS".to_owned(), "1 2".to_owned())));
        assert!(post.contains(&("OOMWARDEN_PIDS_TOTAL".to_owned(), "2".to_owned())));
    }
}
