//! The decisions, a case per rule of issue 39 and per sentence of the seed's safety protocol
//! (seed 003, "What Cozystack does" and "Withholding and acknowledging a default"). Each case
//! is the objects observed in one namespace, the settings and the time; the decision out.

// Test code: unwrap on expected outcomes is the assertion.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

use oomwarden_limits::{
    Action, Cluster, Decision, NamespaceView, Preset, Settings, Write, decide, desired_limits,
};
use serde_json::{Value, json};

const NOW: i64 = 1_800_000_000;
const STATE: &str = "operator.cozystack.io/system-memory-state";
const ACK: &str = "operator.cozystack.io/system-memory-ack";
const LR: &str = "cozystack-system-defaults";

fn settings(limit: &str) -> Settings {
    let p = Preset::Cozystack;
    Settings::new(p.names(), p.selection(), limit, "").unwrap()
}

/// The namespace `name` with these annotations and labels, and these objects in it.
fn view(name: &str, annotations: Value, labels: Value, objects: Vec<Value>) -> NamespaceView {
    let mut c = Cluster::new();
    c.add_value(&json!({"kind": "Namespace", "metadata": {
        "name": name, "annotations": annotations, "labels": labels}}))
        .unwrap();
    for mut o in objects {
        o["metadata"]["namespace"] = json!(name);
        c.add_value(&o).unwrap();
    }
    let mut c = c.finish().unwrap();
    c.namespaces.remove(name).unwrap()
}

fn ours(limit: &str) -> Value {
    json!({"kind": "LimitRange", "metadata": {"name": LR,
        "labels": {"app.kubernetes.io/managed-by": "cozystack-package-controller"}},
        "spec": {"limits": [{"type": "Container", "default": {"memory": limit}, "defaultRequest": {"memory": "32Mi"}}]}})
}

fn limit_range(name: &str, limits: Value) -> Value {
    json!({"kind": "LimitRange", "metadata": {"name": name}, "spec": {"limits": limits}})
}

fn deployment(name: &str, container: Value) -> Value {
    json!({"kind": "Deployment", "metadata": {"name": name},
        "spec": {"template": {"spec": {"containers": [container]}}}})
}

fn requesting(name: &str, request: &str) -> Value {
    json!({"name": name, "resources": {"requests": {"memory": request}}})
}

fn state(text: &str) -> Value {
    json!({ STATE: text })
}

fn held(generation: &str, target: &str) -> String {
    json!({"version": 1, "lastLimit": "32Gi", "hold": generation, "target": target, "reason": "r"})
        .to_string()
}

fn system() -> Value {
    json!({"cozystack.io/system": "true"})
}

fn has(d: &Decision, w: &Write) -> bool {
    d.writes.contains(w)
}

fn put(limit: &str) -> Write {
    Write::PutLimitRange {
        name: LR.to_owned(),
        limit: limit.to_owned(),
        request: "32Mi".to_owned(),
    }
}

fn delete(name: &str) -> Write {
    Write::DeleteLimitRange {
        name: name.to_owned(),
    }
}

fn set_label() -> Write {
    Write::SetLabel {
        key: "cozystack.io/system".to_owned(),
        value: "true".to_owned(),
    }
}

fn remove_label() -> Write {
    Write::RemoveLabel {
        key: "cozystack.io/system".to_owned(),
    }
}

fn remove_ack() -> Write {
    Write::RemoveAck {
        annotation: ACK.to_owned(),
    }
}

fn writes_state(d: &Decision) -> bool {
    d.writes.iter().any(|w| matches!(w, Write::SetState { .. }))
}

fn state_of(d: &Decision) -> Value {
    serde_json::from_str(d.state.as_deref().unwrap()).unwrap()
}

// Rule 1: which namespaces, and the system label exactly when the LimitRange is created.

#[test]
fn a_clean_system_namespace_gets_the_default_and_the_label() {
    let d = decide(
        &settings(""),
        &view("kube-system", json!({}), json!({}), vec![]),
        NOW,
    );
    assert_eq!(d.action, Action::Apply);
    assert_eq!(d.reason, "no blocker for the default 32Gi");
    assert!(
        has(&d, &put("32Gi")) && has(&d, &set_label()),
        "{:?}",
        d.writes
    );
    assert_eq!(state_of(&d), json!({"version": 1, "lastLimit": "32Gi"}));
    assert!(d.defaulted);
    assert_eq!(d.notice.as_ref().unwrap().reason, "DefaultApplied");
}

#[test]
fn tenant_namespaces_are_excluded_and_lose_what_was_written_but_keep_their_state() {
    let v = view(
        "tenant-root",
        state(r#"{"version":1,"lastLimit":"32Gi"}"#),
        system(),
        vec![ours("32Gi")],
    );
    let d = decide(&settings(""), &v, NOW);
    assert_eq!(d.action, Action::Exclude);
    assert_eq!(d.writes, [delete(LR), remove_label()]);
    assert!(!d.defaulted);
}

#[test]
fn the_default_preset_is_opt_in_by_label() {
    let s = Settings::preset(Preset::Oomwarden);
    let off = decide(&s, &view("kube-system", json!({}), json!({}), vec![]), NOW);
    assert_eq!(off.action, Action::Exclude);
    assert!(off.writes.is_empty());
    let on = decide(
        &s,
        &view(
            "kube-system",
            json!({}),
            json!({"oomwarden.io/memory-defaults": "enabled"}),
            vec![],
        ),
        NOW,
    );
    assert_eq!(on.action, Action::Apply);
    assert!(on.writes.contains(&Write::SetLabel {
        key: "oomwarden.io/system".to_owned(),
        value: "true".to_owned()
    }));
}

#[test]
fn a_namespace_already_in_place_needs_no_write() {
    let v = view(
        "cozy-system",
        state(r#"{"version":1,"lastLimit":"32Gi"}"#),
        system(),
        vec![ours("32Gi")],
    );
    let d = decide(&settings(""), &v, NOW);
    assert_eq!(
        (d.action, d.writes.len()),
        (Action::Apply, 0),
        "{:?}",
        d.writes
    );
    assert_eq!(d.reason, "the default 32Gi is in place");
    assert_eq!(d.notice, None);
}

// Rule 2: the LimitRange pairs default with defaultRequest.

#[test]
fn the_limit_range_always_pairs_the_limit_with_a_request() {
    let s = settings("");
    assert_eq!(
        desired_limits(s.limit.as_ref().unwrap(), &s.request),
        json!([{"type": "Container", "default": {"memory": "32Gi"}, "defaultRequest": {"memory": "32Mi"}}])
    );
    // A LimitRange of ours with another value is replaced.
    let d = decide(
        &settings("64Gi"),
        &view(
            "cozy-system",
            state(r#"{"version":1,"lastLimit":"32Gi"}"#),
            system(),
            vec![ours("32Gi")],
        ),
        NOW,
    );
    assert_eq!(d.action, Action::Apply);
    assert_eq!(d.writes[0], put("64Gi"));
}

// Rule 3: ownership.

#[test]
fn a_same_named_limit_range_without_the_label_is_never_overwritten_or_adopted() {
    // Even one that says nothing about memory: the name is taken.
    let squatter = limit_range(LR, json!([{"type": "Container", "default": {"cpu": "1"}}]));
    let d = decide(
        &settings(""),
        &view("cozy-system", json!({}), system(), vec![squatter]),
        NOW,
    );
    assert_eq!(d.action, Action::Leave);
    assert!(
        d.reason.contains("neither overwritten nor adopted"),
        "{}",
        d.reason
    );
    assert_eq!(d.writes, [remove_label()]);
}

#[test]
fn disabling_removes_every_owned_limit_range_and_keeps_the_state() {
    let mut leftover = ours("32Gi");
    leftover["metadata"]["name"] = json!("old-name");
    let foreign = limit_range(
        "admin",
        json!([{"type": "Container", "max": {"memory": "1Gi"}}]),
    );
    for (ns, annotations) in [
        ("cozy-system", state(&held("5", "16Gi"))),
        // Excluded from selection, and with an invalid state: removed all the same.
        ("tenant-x", state("not json")),
    ] {
        let v = view(
            ns,
            annotations,
            system(),
            vec![ours("32Gi"), leftover.clone(), foreign.clone()],
        );
        let d = decide(&settings("0"), &v, NOW);
        assert_eq!(d.action, Action::Withdraw, "{ns}");
        assert_eq!(
            d.writes,
            [delete(LR), delete("old-name"), remove_label()],
            "{ns}"
        );
        assert!(!writes_state(&d));
    }
    let none = decide(
        &settings("0"),
        &view("cozy-system", json!({}), json!({}), vec![]),
        NOW,
    );
    assert_eq!((none.action, none.writes.len()), (Action::Leave, 0));
}

#[test]
fn a_leftover_of_ours_under_another_name_goes_when_the_default_is_applied() {
    let mut leftover = ours("32Gi");
    leftover["metadata"]["name"] = json!("old-name");
    let d = decide(
        &settings(""),
        &view("cozy-system", json!({}), json!({}), vec![leftover]),
        NOW,
    );
    assert_eq!(d.action, Action::Apply);
    assert!(has(&d, &put("32Gi")) && has(&d, &delete("old-name")));
}

// Rule 4: a foreign memory policy wins.

#[test]
fn any_memory_field_at_container_or_pod_scope_is_a_foreign_policy() {
    for scope in ["Container", "Pod"] {
        for field in [
            "default",
            "defaultRequest",
            "max",
            "min",
            "maxLimitRequestRatio",
        ] {
            let value = if field == "maxLimitRequestRatio" {
                "2"
            } else {
                "1Gi"
            };
            let admin = limit_range("admin", json!([{"type": scope, field: {"memory": value}}]));
            let v = view(
                "kube-system",
                json!({}),
                system(),
                vec![admin, ours("32Gi")],
            );
            let d = decide(&settings(""), &v, NOW);
            assert_eq!(d.action, Action::Withdraw, "{scope}.{field}");
            assert_eq!(d.writes, [delete(LR), remove_label()], "{scope}.{field}");
            assert_eq!(d.foreign, [format!("LimitRange/admin ({scope}.{field})")]);
            assert_eq!(d.notice.as_ref().unwrap().reason, "DefaultWithdrawn");
            // Nothing of ours there: left alone, nothing written.
            let v = view(
                "kube-system",
                json!({}),
                json!({}),
                vec![limit_range(
                    "admin",
                    json!([{"type": scope, field: {"memory": value}}]),
                )],
            );
            let d = decide(&settings(""), &v, NOW);
            assert_eq!((d.action, d.writes.len()), (Action::Leave, 0));
        }
    }
}

#[test]
fn cpu_or_storage_only_limit_ranges_coexist() {
    let cpu = limit_range(
        "cpu",
        json!([{"type": "Container", "default": {"cpu": "500m"}, "max": {"cpu": "2"}}]),
    );
    let storage = limit_range(
        "pvc",
        json!([{"type": "PersistentVolumeClaim", "max": {"storage": "10Gi"}}]),
    );
    let d = decide(
        &settings(""),
        &view("kube-system", json!({}), json!({}), vec![cpu, storage]),
        NOW,
    );
    assert_eq!(d.action, Action::Apply);
    assert!(d.foreign.is_empty());
}

// Rule 5: the blocker scan.

#[test]
fn every_kind_and_init_containers_and_mirror_pods_are_scanned() {
    let objects = [
        deployment("d", requesting("c", "33Gi")),
        json!({"kind": "StatefulSet", "metadata": {"name": "s"}, "spec": {"template": {"spec": {"containers": [requesting("c", "33Gi")]}}}}),
        json!({"kind": "DaemonSet", "metadata": {"name": "ds"}, "spec": {"template": {"spec": {"initContainers": [requesting("init", "33Gi")], "containers": []}}}}),
        json!({"kind": "CronJob", "metadata": {"name": "cj"}, "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [requesting("c", "33Gi")]}}}}}}),
        json!({"kind": "Job", "metadata": {"name": "j"}, "spec": {"template": {"spec": {"containers": [requesting("c", "33Gi")]}}}}),
        json!({"kind": "Pod", "metadata": {"name": "kube-apiserver-n1", "annotations": {"kubernetes.io/config.mirror": "x"}}, "spec": {"containers": [requesting("kube-apiserver", "33Gi")]}, "status": {"phase": "Running"}}),
    ];
    for o in objects {
        let kind = o["kind"].as_str().unwrap().to_owned();
        let v = view(
            "kube-system",
            state(r#"{"version":1,"lastLimit":"32Gi"}"#),
            system(),
            vec![o, ours("32Gi")],
        );
        let d = decide(&settings(""), &v, NOW);
        assert_eq!(d.action, Action::Hold, "{kind}");
        assert_eq!(d.blockers.len(), 1, "{kind}");
        assert!(
            d.blockers[0].object.starts_with(&format!("{kind}/")),
            "{kind}"
        );
        // A visible blocker withdraws the managed LimitRange and records a hold.
        assert_eq!(d.writes[..2], [delete(LR), remove_label()], "{kind}");
        assert_eq!(d.hold.as_deref(), Some("1800000000:32Gi"), "{kind}");
        assert_eq!(state_of(&d)["hold"], "1800000000", "{kind}");
        assert_eq!(d.notice.as_ref().unwrap().reason, "DefaultWithheld");
        assert!(
            d.notice
                .as_ref()
                .unwrap()
                .message
                .contains(&format!("{ACK}=1800000000:32Gi"))
        );
    }
}

#[test]
fn what_is_not_a_blocker() {
    let objects = vec![
        // Equal to the limit: admissible.
        deployment("equal", requesting("c", "32Gi")),
        // A limit of its own: a default never reaches it.
        deployment(
            "own",
            json!({"name": "c", "resources": {"requests": {"memory": "64Gi"}, "limits": {"memory": "64Gi"}}}),
        ),
        // Finished: runs no more pods.
        json!({"kind": "Pod", "metadata": {"name": "done"}, "spec": {"containers": [requesting("c", "64Gi")]}, "status": {"phase": "Succeeded"}}),
        json!({"kind": "Job", "metadata": {"name": "j"}, "spec": {"template": {"spec": {"containers": [requesting("c", "64Gi")]}}}, "status": {"conditions": [{"type": "Complete", "status": "True"}]}}),
    ];
    let d = decide(
        &settings(""),
        &view("kube-system", json!({}), json!({}), objects),
        NOW,
    );
    assert_eq!(d.action, Action::Apply, "{:?}", d.blockers);
}

#[test]
fn removing_the_blocker_does_not_release_the_hold() {
    let v = view("kube-system", state(&held("5", "32Gi")), json!({}), vec![]);
    let d = decide(&settings(""), &v, NOW);
    assert_eq!(d.action, Action::Hold);
    assert_eq!(d.hold.as_deref(), Some("5:32Gi"));
    assert!(d.writes.is_empty(), "{:?}", d.writes);
}

#[test]
fn lowering_a_previously_applied_default_holds_without_a_blocker() {
    let v = view(
        "kube-system",
        state(r#"{"version":1,"lastLimit":"32Gi"}"#),
        system(),
        vec![ours("32Gi")],
    );
    let d = decide(&settings("16Gi"), &v, NOW);
    assert_eq!(d.action, Action::Hold);
    assert!(d.blockers.is_empty());
    assert!(
        d.reason
            .starts_with("the default limit would be lowered from 32Gi to 16Gi"),
        "{}",
        d.reason
    );
    assert_eq!(d.hold.as_deref(), Some("1800000000:16Gi"));
    assert!(has(&d, &delete(LR)));
    // Remembered apart from the LimitRange: held with it gone too.
    let gone = view(
        "kube-system",
        state(r#"{"version":1,"lastLimit":"32Gi"}"#),
        json!({}),
        vec![],
    );
    assert_eq!(decide(&settings("16Gi"), &gone, NOW).action, Action::Hold);
    // Raising is free.
    assert_eq!(decide(&settings("64Gi"), &v, NOW).action, Action::Apply);
}

#[test]
fn the_previous_limit_is_never_inferred_from_pods() {
    // A pod LimitRanger defaulted at 64Gi: its limits and annotation say nothing of what the
    // controller applied, so 32Gi is no lowering.
    let pod = json!({"kind": "Pod", "metadata": {"name": "p", "annotations": {"kubernetes.io/limit-ranger": "LimitRanger plugin set: memory limit for container c"}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": "32Mi"}, "limits": {"memory": "64Gi"}}}]}, "status": {"phase": "Running"}});
    let d = decide(
        &settings(""),
        &view("kube-system", json!({}), json!({}), vec![pod]),
        NOW,
    );
    assert_eq!(d.action, Action::Apply);
}

#[test]
fn a_state_removed_by_hand_does_not_turn_a_lowering_into_an_apply() {
    let v = view("kube-system", json!({}), system(), vec![ours("32Gi")]);
    assert_eq!(decide(&settings("16Gi"), &v, NOW).action, Action::Hold);
}

// Rule 6: the state.

#[test]
fn invalid_state_blocks_new_defaults_until_repaired() {
    for bad in [
        "{",
        r#"{"version":2,"lastLimit":"32Gi"}"#,
        r#"{"version":1,"hold":"1"}"#,
    ] {
        let v = view("kube-system", state(bad), system(), vec![ours("32Gi")]);
        let d = decide(&settings("64Gi"), &v, NOW);
        assert_eq!(d.action, Action::Leave, "{bad}");
        assert!(d.writes.is_empty(), "{bad}: {:?}", d.writes);
        assert!(d.reason.contains("repairs it"), "{}", d.reason);
    }
}

#[test]
fn the_state_survives_the_limit_ranges_removal_deselection_and_disabling() {
    let s = state(&held("5", "32Gi"));
    // Deselected and disabled: the state is not written.
    for (ns, limit) in [("tenant-a", ""), ("kube-system", "0")] {
        let d = decide(
            &settings(limit),
            &view(ns, s.clone(), json!({}), vec![]),
            NOW,
        );
        assert!(!writes_state(&d), "{ns}");
    }
    // Re-enabled: still held, the same token.
    let d = decide(
        &settings(""),
        &view("kube-system", s, json!({}), vec![]),
        NOW,
    );
    assert_eq!(d.hold.as_deref(), Some("5:32Gi"));
}

// Rule 7: acknowledgement.

#[test]
fn a_matching_token_is_consumed_once_and_the_default_applied() {
    let mut annotations = state(&held("5", "32Gi"));
    annotations[ACK] = json!("5:32Gi");
    let d = decide(
        &settings(""),
        &view("kube-system", annotations, json!({}), vec![]),
        NOW,
    );
    assert_eq!(d.action, Action::Apply);
    assert_eq!(d.writes[0], remove_ack());
    assert!(has(&d, &put("32Gi")) && has(&d, &set_label()));
    assert_eq!(state_of(&d), json!({"version": 1, "lastLimit": "32Gi"}));
    assert_eq!(d.reason, "acknowledged, and the scan is clean");
    assert!(
        d.notice
            .unwrap()
            .message
            .contains("after an acknowledgement")
    );
}

#[test]
fn a_token_met_by_a_visible_blocker_is_rejected_and_removed_and_the_hold_stays() {
    let mut annotations = state(&held("5", "32Gi"));
    annotations[ACK] = json!("5:32Gi");
    let v = view(
        "kube-system",
        annotations,
        json!({}),
        vec![deployment("big", requesting("c", "40Gi"))],
    );
    let d = decide(&settings(""), &v, NOW);
    assert_eq!(d.action, Action::Hold);
    assert_eq!(d.writes[0], remove_ack());
    assert_eq!(d.hold.as_deref(), Some("5:32Gi"));
    assert!(
        d.reason.starts_with(
            "the acknowledgement 5:32Gi was rejected: Deployment/big container c requests 40Gi"
        ),
        "{}",
        d.reason
    );
    assert_eq!(d.notice.unwrap().reason, "AcknowledgementRejected");
}

#[test]
fn a_token_for_another_generation_or_target_authorises_nothing() {
    for token in ["4:32Gi", "5:16Gi", "5:34359738368", "5"] {
        let mut annotations = state(&held("5", "32Gi"));
        annotations[ACK] = json!(token);
        let d = decide(
            &settings(""),
            &view("kube-system", annotations, json!({}), vec![]),
            NOW,
        );
        assert_eq!(d.action, Action::Hold, "{token}");
        assert!(!has(&d, &remove_ack()), "{token}");
        assert!(
            d.reason.ends_with("is not this hold's token"),
            "{}",
            d.reason
        );
    }
}

#[test]
fn changing_the_target_rotates_the_hold_even_back_to_an_earlier_value() {
    let v = view("kube-system", state(&held("5", "32Gi")), json!({}), vec![]);
    let d = decide(&settings("16Gi"), &v, NOW);
    assert_eq!(d.action, Action::Hold);
    assert_eq!(d.hold.as_deref(), Some("1800000000:16Gi"));
    assert_eq!(d.notice.as_ref().unwrap().reason, "HoldRotated");
    // Back to 32Gi: a new generation, so the old token "5:32Gi" no longer matches.
    let mut annotations = state(d.state.as_deref().unwrap());
    annotations[ACK] = json!("5:32Gi");
    let back = decide(
        &settings(""),
        &view("kube-system", annotations, json!({}), vec![]),
        NOW,
    );
    assert_eq!(back.hold.as_deref(), Some("1800000001:32Gi"));
    assert_eq!(back.action, Action::Hold);
    assert!(!has(&back, &remove_ack()));
}

#[test]
fn acknowledgement_never_overrides_a_foreign_limit_range() {
    let mut annotations = state(&held("5", "32Gi"));
    annotations[ACK] = json!("5:32Gi");
    let admin = limit_range(
        "admin",
        json!([{"type": "Container", "default": {"memory": "1Gi"}}]),
    );
    let d = decide(
        &settings(""),
        &view("kube-system", annotations, json!({}), vec![admin]),
        NOW,
    );
    assert_eq!((d.action, d.writes.len()), (Action::Leave, 0));
}

#[test]
fn the_json_of_a_decision_names_what_plan_prints() {
    let v = view(
        "kube-system",
        json!({}),
        json!({}),
        vec![deployment("big", requesting("c", "40Gi"))],
    );
    let d = serde_json::to_value(decide(&settings(""), &v, NOW)).unwrap();
    assert_eq!(d["namespace"], "kube-system");
    assert_eq!(d["action"], "hold");
    assert_eq!(d["hold"], "1800000000:32Gi");
    assert_eq!(d["blockers"][0]["object"], "Deployment/big");
    assert_eq!(d["blockers"][0]["container"], "c");
    assert_eq!(d["blockers"][0]["request"], "40Gi");
}
