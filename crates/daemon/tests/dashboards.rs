//! The Grafana dashboard and the alert rules in `deploy/` use only metrics the daemon
//! exports: every metric name in their PromQL is one the metrics endpoint's own output names
//! (or Prometheus's `up`). A renamed metric fails here, not on a fleet's empty panels.

// Test code: unwrap on expected outcomes is the assertion.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

use std::collections::BTreeSet;

use oomwarden_daemon::Metrics;

fn file(rel: &str) -> String {
    std::fs::read_to_string(format!("{}/../../{rel}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// Every series name the exposition can hold: samples present, and for each `# TYPE` line
/// the names its type gives (`_total` for a counter, `_bucket`/`_count`/`_sum` for a
/// histogram, `_info` for an info metric).
fn exported() -> BTreeSet<String> {
    let metrics = Metrics::new();
    // The doctor's family has a series only for a finding made; a started daemon has at least
    // the `layout` note.
    metrics.doctor_findings(&[("layout", "info")]);
    // Likewise the containers' usage series, for a container read.
    let r = oomwarden_usage::Recommendation {
        request_bytes: 1,
        limit_bytes: 2,
        seen: oomwarden_usage::Seen {
            peak_bytes: 2,
            ..Default::default()
        },
        unreclaimable_percentile_bytes: 1,
        oom_kills: 0,
        oom_floor_bytes: 0,
        history_seconds: 0,
        reason: String::new(),
    };
    metrics.container_usage(&[oomwarden_daemon::metrics::ContainerUsage {
        pod: oomwarden_usage::PodRef::default(),
        pod_uid: "uid".into(),
        container: "app".into(),
        recommendation: r,
    }]);
    let text = metrics.encode();
    let mut names = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            let (name, kind) = (parts.next().unwrap(), parts.next().unwrap());
            match kind {
                "counter" => {
                    names.insert(format!("{name}_total"));
                }
                "histogram" => {
                    for s in ["_bucket", "_count", "_sum"] {
                        names.insert(format!("{name}{s}"));
                    }
                }
                "info" => {
                    names.insert(format!("{name}_info"));
                }
                _ => {
                    names.insert(name.to_owned());
                }
            }
        } else if !line.starts_with('#') && !line.is_empty() {
            let name = line.split(['{', ' ']).next().unwrap();
            names.insert(name.to_owned());
        }
    }
    names
}

/// The metric names a PromQL expression reads: identifiers followed by a selector, a range,
/// or standing alone, that are not functions, keywords or label names.
fn metrics_in(expr: &str) -> BTreeSet<String> {
    let words = regex::Regex::new(r"[a-zA-Z_:][a-zA-Z0-9_:]*").unwrap();
    // Drop label matchers and strings: `{job="x"}`, `by (instance)`, `on (instance)`.
    let no_braces = regex::Regex::new(r"\{[^}]*\}")
        .unwrap()
        .replace_all(expr, " ");
    let no_groups =
        regex::Regex::new(r"\b(by|on|without|ignoring|group_left|group_right)\s*\([^)]*\)")
            .unwrap()
            .replace_all(&no_braces, " ");
    let no_ranges = regex::Regex::new(r"\[[^\]]*\]")
        .unwrap()
        .replace_all(&no_groups, " ");
    let no_strings = regex::Regex::new(r#""[^"]*""#)
        .unwrap()
        .replace_all(&no_ranges, " ");
    // Numbers and durations (`0.99`, `offset 10m`).
    let no_strings = regex::Regex::new(r"\b[0-9][0-9.]*[a-z]*")
        .unwrap()
        .replace_all(&no_strings, " ");
    words
        .find_iter(&no_strings)
        .filter(|m| {
            let after = no_strings.get(m.end()..).unwrap_or("");
            let before = no_strings.get(..m.start()).unwrap_or("");
            let w = m.as_str();
            // A function is followed by `(`; `$__rate_interval` is Grafana's.
            !after.trim_start().starts_with('(')
                && !before.ends_with('$')
                && !matches!(w, "and" | "or" | "unless" | "bool" | "offset")
        })
        .map(|m| m.as_str().to_owned())
        .collect()
}

fn assert_known(what: &str, exprs: &[String]) {
    let exported = exported();
    assert!(!exprs.is_empty(), "{what}: no expression found");
    for expr in exprs {
        let used = metrics_in(expr);
        assert!(!used.is_empty(), "{what}: no metric in {expr}");
        for name in used {
            assert!(
                name == "up" || exported.contains(&name),
                "{what}: {name} (in {expr}) is not a metric oomwarden exports; it exports:\n{}",
                exported.iter().cloned().collect::<Vec<_>>().join("\n")
            );
        }
    }
}

#[test]
fn the_dashboard_uses_only_exported_metrics() {
    let dashboard: serde_json::Value =
        serde_json::from_str(&file("deploy/grafana/oomwarden-dashboard.json")).unwrap();
    let mut exprs = Vec::new();
    let mut stack = vec![&dashboard];
    while let Some(v) = stack.pop() {
        match v {
            serde_json::Value::Object(m) => {
                if let Some(serde_json::Value::String(e)) = m.get("expr") {
                    exprs.push(e.clone());
                }
                stack.extend(m.values());
            }
            serde_json::Value::Array(a) => stack.extend(a),
            _ => {}
        }
    }
    assert!(exprs.len() >= 10, "{exprs:?}");
    assert_known("deploy/grafana/oomwarden-dashboard.json", &exprs);
    // The instance variable is fed by a metric too.
    let query = dashboard["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "instance")
        .unwrap()["query"]
        .to_string();
    assert!(query.contains("oomwarden_build_info"), "{query}");
}

/// A rule file and the expressions of its first group.
fn rule_exprs(rel: &str) -> (serde_json::Value, Vec<String>) {
    let rules: serde_json::Value = serde_saphyr::from_str(&file(rel)).unwrap();
    let exprs = rules["groups"][0]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["expr"].as_str().unwrap().to_owned())
        .collect();
    (rules, exprs)
}

#[test]
fn the_alert_rules_use_only_exported_metrics_and_match_the_prometheusrule() {
    let (rules, exprs) = rule_exprs("deploy/prometheus/oomwarden-rules.yaml");
    assert_known("deploy/prometheus/oomwarden-rules.yaml", &exprs);
    let object: serde_json::Value =
        serde_saphyr::from_str(&file("deploy/prometheus/oomwarden-prometheusrule.yaml")).unwrap();
    assert_eq!(object["kind"], "PrometheusRule");
    assert_eq!(
        object["spec"]["groups"], rules["groups"],
        "the PrometheusRule's groups are the rule file's"
    );
}

#[test]
fn the_rightsize_rules_read_only_exported_oomwarden_metrics() {
    let (_, exprs) = rule_exprs("deploy/prometheus/rightsize-rules.yaml");
    // The seed's queries read cAdvisor, the scheduler and kube-state-metrics; oomwarden's
    // own names must be ones it exports.
    let ours: Vec<String> = exprs
        .into_iter()
        .filter(|e| metrics_in(e).iter().any(|m| m.starts_with("oomwarden_")))
        .collect();
    assert_eq!(ours.len(), 3, "{ours:?}");
    assert_known("deploy/prometheus/rightsize-rules.yaml", &ours);
}

#[test]
fn the_name_finder_finds_names_and_nothing_else() {
    let found = metrics_in(
        r#"histogram_quantile(0.99, sum by (le, instance) (rate(oomwarden_cycle_duration_seconds_bucket{instance=~"$instance"}[$__rate_interval]))) and on (instance) up{job="oomwarden"} offset 10m == 0"#,
    );
    assert_eq!(
        found.into_iter().collect::<Vec<_>>(),
        ["oomwarden_cycle_duration_seconds_bucket", "up"]
    );
}
