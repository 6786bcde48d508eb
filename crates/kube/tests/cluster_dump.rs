//! Issue 14, item 1: a realistic `kubectl get pods -A -o json` of 5,000 pods (75 MB, with
//! managed fields, env, probes and statuses) was refused: the YAML parser's default budget
//! (250,000 nodes) ended at pod 1,400. JSON is now read as JSON, and YAML gets a budget that
//! grows with the text.

// Test code: unwrap on expected outcomes is the assertion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use oomwarden_kube::audit::Input;
use oomwarden_kube::pod::{FeatureGates, parse_pods, score};
use serde_json::{Value, json};

/// One pod as the API server returns it (about 15 KB of JSON).
fn pod(i: usize) -> Value {
    let name = format!("app-{}-{:010x}-{}x", i / 50, i * 7919, i % 7);
    let uid = format!("{:08x}-1111-2222-3333-{:012x}", i, i * 31);
    let containers: Vec<Value> = (0..1 + i % 3)
        .map(|c| {
            json!({
                "name": format!("c{c}"),
                "image": format!("registry.example.com/team/app{c}:v1.{}", i % 30),
                "args": ["--port=8080", "--log-level=info", "--config=/etc/app/config.yaml"],
                "env": (0..12).map(|k| json!({"name": format!("ENV_{k}"), "value": "x".repeat(40)})).collect::<Vec<_>>(),
                "ports": [{"containerPort": 8080, "protocol": "TCP", "name": "http"}],
                "resources": if i.is_multiple_of(3) {
                    json!({"requests": {"cpu": "100m", "memory": "128Mi"}})
                } else {
                    json!({"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}})
                },
                "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10, "failureThreshold": 3},
                "terminationMessagePath": "/dev/termination-log",
                "imagePullPolicy": "IfNotPresent"
            })
        })
        .collect();
    let statuses: Vec<Value> = containers
        .iter()
        .map(|c| {
            json!({"name": c["name"], "ready": true, "restartCount": 0, "image": c["image"],
                   "imageID": format!("sha256:{}", "a".repeat(64)),
                   "containerID": format!("containerd://{}", "b".repeat(64)),
                   "started": true, "state": {"running": {"startedAt": "2026-11-01T00:00:01Z"}}})
        })
        .collect();
    let conditions: Vec<Value> = ["Initialized", "Ready", "ContainersReady", "PodScheduled"]
        .iter()
        .map(|t| json!({"type": t, "status": "True", "lastTransitionTime": "2026-11-01T00:00:00Z"}))
        .collect();
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": format!("team-{}", i % 50), "uid": uid,
            "resourceVersion": (100_000 + i).to_string(), "creationTimestamp": "2026-11-01T00:00:00Z",
            "labels": {"app": format!("app-{}", i / 50), "pod-template-hash": "abc123"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-01T00:00:00Z"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": uid, "controller": true}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}, "f:ownerReferences": {".": {}}},
                              "f:spec": {"f:containers": {"k:{\"name\":\"c0\"}": {".": {}, "f:env": {}, "f:image": {}, "f:resources": {}}}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:phase": {}, "f:podIP": {}}}}
            ]
        },
        "spec": {
            "containers": containers, "nodeName": format!("node-{}", i % 100), "priority": 0,
            "restartPolicy": "Always", "serviceAccountName": "default",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}]
        },
        "status": {
            "phase": "Running", "qosClass": "Burstable", "hostIP": "10.0.0.1", "podIP": "10.1.0.1",
            "conditions": conditions,
            "containerStatuses": statuses
        }
    })
}

fn dump(pods: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
           "items": (0..pods).map(pod).collect::<Vec<_>>()})
}

#[test]
fn a_cluster_dump_of_5000_pods_loads() {
    let list = dump(5_000);
    // kubectl's JSON is indented.
    let json = serde_json::to_string_pretty(&list).unwrap();
    assert!(json.len() > 30_000_000, "{} bytes", json.len());
    let pods = parse_pods(&json).unwrap();
    assert_eq!(pods.len(), 5_000);
    let s = score(&pods[4_999], 16 << 30, FeatureGates::default()).unwrap();
    assert_eq!(s.pod, format!("team-49/{}", pods[4_999].metadata.name));
    let mut input = Input::new();
    input.add(&json).unwrap();
}

#[test]
fn a_yaml_dump_past_the_parsers_default_budget_loads() {
    // `kubectl get pods -A -o yaml`: 2,000 pods are about 600,000 nodes (the YAML parser's
    // default budget is 250,000). Fewer than the JSON test's: YAML parses ten times slower.
    let yaml = serde_saphyr::to_string(&dump(2_000)).unwrap();
    assert_eq!(parse_pods(&yaml).unwrap().len(), 2_000);
}

#[test]
fn broken_json_says_what_json_found_wrong() {
    let mut json = serde_json::to_string_pretty(&dump(3)).unwrap();
    json.truncate(json.len() / 2);
    let e = parse_pods(&json).unwrap_err().to_string();
    assert!(e.contains("(read as JSON)") && e.contains("line"), "{e}");
}

#[test]
fn an_alias_bomb_is_still_refused() {
    // Each level doubles: 2^30 nodes from a few hundred bytes.
    let mut yaml = String::from("a0: &a0 [x, x]\n");
    for i in 1..30 {
        yaml.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}]\n", p = i - 1));
    }
    yaml.push_str("kind: Pod\n");
    let e = parse_pods(&yaml).unwrap_err().to_string();
    assert!(e.contains("budget"), "{e}");
}
