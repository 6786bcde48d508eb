//! The deployment files say what oomwarden needs: the DaemonSet's embedded configuration is
//! valid, its pod has no CPU limit, is node-critical (`oom_score_adj` -997) and out of the
//! default ranking's reach, its flags point at its mounts, the kustomization sets its image;
//! the systemd unit keeps the protections. (Schemas and `systemd-analyze verify`:
//! tools/deploy-check.)

// Test code: unwrap on expected outcomes is the assertion.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

use oomwarden_config::Settings;
use oomwarden_kube::pod::{FeatureGates, Pod, PodQos, score};
use serde_json::Value;

fn file(rel: &str) -> String {
    std::fs::read_to_string(format!("{}/../../{rel}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn documents() -> Vec<Value> {
    serde_saphyr::from_multiple(&file("deploy/kubernetes/oomwarden.yaml")).unwrap()
}

fn kind<'a>(docs: &'a [Value], k: &str) -> &'a Value {
    docs.iter().find(|d| d["kind"] == k).unwrap()
}

#[test]
fn the_daemonset_runs_what_it_needs() {
    let docs = documents();
    let config = kind(&docs, "ConfigMap")["data"]["oomwarden.yaml"]
        .as_str()
        .unwrap();
    let settings = Settings::from_yaml(config, "ConfigMap oomwarden").unwrap();
    assert_eq!(
        settings.warden.state_dir.to_str(),
        Some("/var/lib/oomwarden")
    );

    let ds = kind(&docs, "DaemonSet");
    let spec = &ds["spec"]["template"]["spec"];
    assert_eq!(spec["hostPID"], true);
    assert_eq!(spec["priorityClassName"], "system-node-critical");
    assert_eq!(spec["tolerations"][0]["operator"], "Exists");
    let c = &spec["containers"][0];
    assert_eq!(c["securityContext"]["privileged"], true);
    // No CPU limit (a throttled OOM handler is a late one): Burstable. A memory limit: the pod
    // cgroup has memory.max, so the default ranking never scores it. Node-critical: the
    // kubelet gives it -997 whatever the class (the priority as admission resolves
    // system-node-critical).
    assert!(c["resources"]["limits"].get("cpu").is_none(), "{c}");
    assert!(c["resources"]["limits"]["memory"].is_string(), "{c}");
    let mut admitted = spec.clone();
    admitted["priority"] = serde_json::json!(2_000_001_000);
    let pod: Pod =
        serde_json::from_value(serde_json::json!({"kind": "Pod", "spec": admitted})).unwrap();
    let s = score(&pod, 16 << 30, FeatureGates::default()).unwrap();
    assert_eq!(s.qos_class, PodQos::Burstable);
    assert!(s.node_critical);
    assert!(
        s.containers.iter().all(|c| c.oom_score_adj == -997),
        "{s:?}"
    );
    assert!(!s.oom_handler_candidate, "{}", s.oom_handler_reason);

    // Every path a flag names is mounted.
    let mounts: Vec<&str> = c["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["mountPath"].as_str().unwrap())
        .collect();
    let flag = |name: &str| {
        c["args"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .find_map(|a| a.strip_prefix(&format!("--{name}=")))
            .unwrap()
            .to_owned()
    };
    assert!(mounts.contains(&flag("cgroup-root").as_str()), "{mounts:?}");
    assert!(mounts.contains(&flag("state-dir").as_str()), "{mounts:?}");
    let config_path = flag("config");
    assert!(
        mounts
            .iter()
            .any(|m| config_path.starts_with(&format!("{m}/")))
    );
    assert_eq!(
        flag("state-dir"),
        settings.warden.state_dir.to_str().unwrap()
    );
    // The metrics port is the one the configuration listens on.
    assert_eq!(
        c["ports"][0]["containerPort"].as_u64(),
        Some(u64::from(settings.warden.metrics.listen.port()))
    );
    // The cgroup mount is the host's tree.
    let volumes = spec["volumes"].as_array().unwrap();
    assert!(
        volumes
            .iter()
            .any(|v| v["hostPath"]["path"] == "/sys/fs/cgroup")
    );
    // Issue 16: the runtime's socket and the pod-log directories the identity needs are the
    // host's, mounted where the configuration looks.
    let runtime = &settings.warden.container_runtime;
    let oomwarden_config::RuntimeEndpoint::Unix(socket) = &runtime.endpoint else {
        panic!(
            "the DaemonSet names its runtime socket: {:?}",
            runtime.endpoint
        );
    };
    for (inside, host) in [
        (socket.as_path(), "/run/containerd"),
        (runtime.pod_logs.as_path(), "/var/log/pods"),
    ] {
        let mount = c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| inside.starts_with(m["mountPath"].as_str().unwrap()))
            .unwrap_or_else(|| panic!("{} is not under a mount", inside.display()));
        let name = mount["name"].as_str().unwrap();
        let volume = volumes.iter().find(|v| v["name"] == name).unwrap();
        assert_eq!(volume["hostPath"]["path"], host, "{name}");
    }
}

#[test]
fn the_systemd_unit_keeps_its_protections() {
    let unit = file("deploy/systemd/oomwarden.service");
    let has = |line: &str| unit.lines().any(|l| l.trim() == line);
    for line in [
        "OOMScoreAdjust=-1000",
        "MemoryMin=64M",
        "Restart=always",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "StateDirectory=oomwarden",
        "StateDirectoryMode=0700",
        "ReadWritePaths=/sys/fs/cgroup",
        // Issue 55 (4): the kernel log readable (each kernel kill's PID and command line), a
        // refusal that a restart cannot mend not restarted, a crash loop bounded.
        "DeviceAllow=/dev/kmsg r",
        "RestartPreventExitStatus=1 2 3",
        "StartLimitBurst=10",
    ] {
        assert!(has(line), "{line}");
    }
    for hides_kmsg in ["PrivateDevices=", "ProtectKernelLogs="] {
        assert!(
            !unit.lines().any(|l| l.starts_with(hides_kmsg)),
            "{hides_kmsg} takes /dev/kmsg away"
        );
    }
    assert!(
        unit.lines()
            .any(|l| l.starts_with("CapabilityBoundingSet=") && l.contains("CAP_SYSLOG")),
        "reading /dev/kmsg under dmesg_restrict needs CAP_SYSLOG"
    );
    // The configuration it names starts as a dry run and loads.
    let config = file("deploy/systemd/oomwarden.yaml");
    let settings = Settings::from_yaml(&config, "deploy/systemd/oomwarden.yaml").unwrap();
    assert!(settings.warden.dry_run);
    assert_eq!(
        settings.warden.state_dir.to_str(),
        Some("/var/lib/oomwarden")
    );
    // Either would make /sys/fs/cgroup read-only: no cgroup.kill.
    assert!(!unit.lines().any(|l| l.starts_with("ProtectControlGroups=")));
    assert!(
        !unit
            .lines()
            .any(|l| l.starts_with("ProtectKernelTunables="))
    );
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap();
    assert!(exec.starts_with("/usr/local/bin/oomwarden run "), "{exec}");
}

#[test]
fn the_container_image_runs_the_binary() {
    let containerfile = file("deploy/Containerfile");
    assert!(containerfile.contains("cargo build --locked --release --bin oomwarden"));
    assert!(containerfile.contains("ENTRYPOINT [\"/oomwarden\"]"));
    // The DaemonSet passes `run` and flags as args to that entrypoint.
    let docs = documents();
    let args = &kind(&docs, "DaemonSet")["spec"]["template"]["spec"]["containers"][0]["args"];
    assert_eq!(args[0], "run");
}

/// Issue 14: the metrics port was open to every pod of the cluster. A NetworkPolicy selects the
/// DaemonSet's pods and admits only the monitoring namespace, on the metrics port only.
#[test]
fn only_the_monitoring_namespace_reaches_the_metrics_port() {
    let docs = documents();
    let daemonset = kind(&docs, "DaemonSet");
    let policy = kind(&docs, "NetworkPolicy");
    assert_eq!(
        policy["metadata"]["namespace"],
        daemonset["metadata"]["namespace"]
    );
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"],
        daemonset["spec"]["template"]["metadata"]["labels"]
    );
    assert_eq!(
        policy["spec"]["policyTypes"],
        serde_json::json!(["Ingress"])
    );
    let ingress = policy["spec"]["ingress"].as_array().unwrap();
    assert_eq!(ingress.len(), 1);
    let rule = &ingress[0];
    assert_eq!(
        rule["from"],
        serde_json::json!([{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}])
    );
    let port =
        daemonset["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"].clone();
    assert_eq!(
        rule["ports"],
        serde_json::json!([{"protocol": "TCP", "port": port}])
    );
}

/// Issue 17, item 2: the Events need create on events.k8s.io/events, bound to the
/// DaemonSet's service account, and nothing more; the pod has its token and its Node's name.
#[test]
fn the_events_rbac_is_what_they_need_and_nothing_more() {
    let docs = documents();
    let ds = kind(&docs, "DaemonSet");
    let spec = &ds["spec"]["template"]["spec"];
    let account = kind(&docs, "ServiceAccount");
    assert_eq!(spec["serviceAccountName"], account["metadata"]["name"]);
    assert_eq!(
        account["metadata"]["namespace"],
        ds["metadata"]["namespace"]
    );
    assert_eq!(spec["automountServiceAccountToken"], true);
    let role = kind(&docs, "ClusterRole");
    assert_eq!(
        role["rules"],
        serde_json::json!([{"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create"]}])
    );
    let binding = kind(&docs, "ClusterRoleBinding");
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    assert_eq!(binding["roleRef"]["kind"], "ClusterRole");
    assert_eq!(
        binding["subjects"],
        serde_json::json!([{"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": account["metadata"]["namespace"]}])
    );
    assert_eq!(
        docs.iter()
            .filter(|d| d["kind"] == "ClusterRole" || d["kind"] == "Role")
            .count(),
        1
    );
    let env = &spec["containers"][0]["env"];
    assert!(
        env.as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "NODE_NAME"
                && e["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"),
        "{env}"
    );
    let config = kind(&docs, "ConfigMap")["data"]["oomwarden.yaml"]
        .as_str()
        .unwrap();
    let settings = Settings::from_yaml(config, "ConfigMap oomwarden").unwrap();
    assert!(settings.warden.events.enabled);
    assert_eq!(
        settings.warden.events.kubeconfig, None,
        "the in-cluster service account"
    );
}

/// An opt-in RBAC file: one ClusterRole with exactly `rules`, bound to the DaemonSet's service
/// account, and not among the kustomization's resources.
fn opt_in_rbac(name: &str, rules: &Value) {
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(&file(&format!("deploy/kubernetes/{name}"))).unwrap();
    let role = kind(&docs, "ClusterRole");
    assert_eq!(&role["rules"], rules, "{name}");
    let binding = kind(&docs, "ClusterRoleBinding");
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    let main = documents();
    let account = kind(&main, "ServiceAccount");
    assert_eq!(
        binding["subjects"],
        serde_json::json!([{"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": account["metadata"]["namespace"]}])
    );
    let k: Value = serde_saphyr::from_str(&file("deploy/kubernetes/kustomization.yaml")).unwrap();
    assert!(
        !k["resources"].as_array().unwrap().iter().any(|r| r == name),
        "{name} is opt-in"
    );
}

/// Issue 34: `events.podCondition` needs patch on pods/status and nothing more, opt-in (its
/// verb reaches every pod's status; the ConfigMap leaves the condition off).
#[test]
fn the_pod_condition_rbac_is_opt_in_and_only_what_it_needs() {
    opt_in_rbac(
        "pod-conditions.yaml",
        &serde_json::json!([{"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch"]}]),
    );
    let config = kind(&documents(), "ConfigMap")["data"]["oomwarden.yaml"]
        .as_str()
        .unwrap()
        .to_owned();
    let settings = Settings::from_yaml(&config, "ConfigMap oomwarden").unwrap();
    assert!(!settings.warden.events.pod_condition);
}

/// Issue 34: the node's taint needs get and patch on nodes and patch on nodes/status, and
/// nothing more, opt-in.
#[test]
fn the_node_taint_rbac_is_opt_in_and_only_what_it_needs() {
    opt_in_rbac(
        "node-taint.yaml",
        &serde_json::json!([
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]},
            {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]}
        ]),
    );
}

#[test]
fn the_kustomization_sets_the_daemonsets_image() {
    let k: Value = serde_saphyr::from_str(&file("deploy/kubernetes/kustomization.yaml")).unwrap();
    assert_eq!(k["kind"], "Kustomization");
    assert!(
        k["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "oomwarden.yaml")
    );
    let docs = documents();
    let image = kind(&docs, "DaemonSet")["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap();
    let name = image.rsplit_once(':').map_or(image, |(n, _)| n);
    assert!(
        k["images"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["name"] == name),
        "the kustomization does not name the DaemonSet's image {name}"
    );
}

/// Issue 39: the limits controller's Deployment runs `limits run` with its own ServiceAccount,
/// the RBAC it needs and nothing more, and out of the OOM handler's reach.
#[test]
fn the_limits_controller_has_the_rbac_it_needs_and_nothing_more() {
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(&file("deploy/kubernetes/limits-controller.yaml")).unwrap();
    let rules = |kind_name: &str| -> Vec<(String, String, Vec<String>)> {
        let mut out = Vec::new();
        for r in kind(&docs, kind_name)["rules"].as_array().unwrap() {
            for g in r["apiGroups"].as_array().unwrap() {
                for res in r["resources"].as_array().unwrap() {
                    let mut verbs: Vec<String> = r["verbs"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_str().unwrap().to_owned())
                        .collect();
                    verbs.sort();
                    out.push((
                        g.as_str().unwrap().to_owned(),
                        res.as_str().unwrap().to_owned(),
                        verbs,
                    ));
                }
            }
        }
        out.sort();
        out
    };
    let v = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    let rule = |g: &str, r: &str, verbs: &[&str]| (g.to_owned(), r.to_owned(), v(verbs));
    let mut want = vec![
        rule("", "namespaces", &["get", "list", "patch", "watch"]),
        rule(
            "",
            "limitranges",
            &["create", "delete", "get", "list", "update", "watch"],
        ),
        rule("", "pods", &["list", "watch"]),
        rule("apps", "daemonsets", &["list", "watch"]),
        rule("apps", "deployments", &["list", "watch"]),
        rule("apps", "statefulsets", &["list", "watch"]),
        rule("batch", "cronjobs", &["list", "watch"]),
        rule("batch", "jobs", &["list", "watch"]),
        rule("events.k8s.io", "events", &["create"]),
    ];
    want.sort();
    assert_eq!(rules("ClusterRole"), want);
    // The Lease only in its own namespace (a Role, not the ClusterRole).
    assert_eq!(
        rules("Role"),
        [rule(
            "coordination.k8s.io",
            "leases",
            &["create", "get", "patch"]
        )]
    );
    let sa = kind(&docs, "ServiceAccount");
    let deployment = kind(&docs, "Deployment");
    let spec = &deployment["spec"]["template"]["spec"];
    assert_eq!(spec["serviceAccountName"], sa["metadata"]["name"]);
    for binding in ["ClusterRoleBinding", "RoleBinding"] {
        assert_eq!(
            kind(&docs, binding)["subjects"][0]["name"],
            sa["metadata"]["name"]
        );
    }
    assert!(deployment["spec"]["replicas"].as_u64().unwrap() >= 2);
    let c = &spec["containers"][0];
    assert_eq!(c["args"][0], "limits");
    assert_eq!(c["args"][1], "run");
    let env: Vec<&str> = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(env, ["POD_NAME", "POD_NAMESPACE"]);
    assert!(c["resources"]["limits"]["memory"].is_string(), "{c}");
    assert!(c["resources"]["limits"].get("cpu").is_none(), "{c}");
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    // The args parse as the binary's own.
    let args: Vec<String> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_oomwarden"))
        .args(&args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue 55 (3): every way the daemon is scraped gives the labels the alert rules and the
/// dashboard go by: job="oomwarden" and instance=<node name>.
#[test]
fn every_scrape_gives_job_oomwarden_and_the_node_as_instance() {
    let docs = documents();
    let ds = kind(&docs, "DaemonSet");
    let pod_labels = &ds["spec"]["template"]["metadata"]["labels"];
    assert_eq!(pod_labels["app.kubernetes.io/name"], "oomwarden");
    assert!(
        ds["spec"]["template"]["metadata"]["annotations"].is_null(),
        "prometheus.io annotations give job=<the scrape job> and instance=<pod IP>"
    );
    let service = kind(&docs, "Service");
    assert_eq!(service["spec"]["clusterIP"], "None");
    assert_eq!(
        service["metadata"]["labels"]["app.kubernetes.io/name"],
        "oomwarden"
    );
    let by_node =
        |relabel: &Value, source: &str, target: &str| {
            relabel.as_array().unwrap().iter().any(|r| {
                r[source][0] == "__meta_kubernetes_pod_node_name" && r[target] == "instance"
            })
        };
    for (path, endpoints) in [
        ("deploy/prometheus/podmonitor.yaml", "podMetricsEndpoints"),
        ("deploy/prometheus/servicemonitor.yaml", "endpoints"),
    ] {
        let m: Value = serde_saphyr::from_str(&file(path)).unwrap();
        // The job is the value of this label on the pod (or the Service): oomwarden.
        assert_eq!(m["spec"]["jobLabel"], "app.kubernetes.io/name", "{path}");
        assert_eq!(
            m["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"], "oomwarden",
            "{path}"
        );
        let e = &m["spec"][endpoints][0];
        assert_eq!(e["port"], "metrics", "{path}");
        assert!(
            by_node(&e["relabelings"], "sourceLabels", "targetLabel"),
            "{path}"
        );
    }
    let prom: Value =
        serde_saphyr::from_str(&file("deploy/prometheus/scrape-config.yaml")).unwrap();
    let job = &prom["scrape_configs"][0];
    assert_eq!(job["job_name"], "oomwarden");
    assert!(by_node(
        &job["relabel_configs"],
        "source_labels",
        "target_label"
    ));
    // The rules' "is it up" goes by that job.
    assert!(file("deploy/prometheus/oomwarden-rules.yaml").contains("up{job=\"oomwarden\"}"));
}
