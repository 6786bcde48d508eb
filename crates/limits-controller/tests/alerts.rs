//! The alert rules for the controller (deploy/prometheus/limits-rules.yaml; promtool checks
//! them in tools/prom-check) name only metrics the controller exports.

// Test code: unwrap on expected outcomes is the assertion.
#![allow(clippy::unwrap_used, clippy::disallowed_methods)]

use oomwarden_limits_controller::Metrics;

#[test]
fn the_alert_rules_use_only_exported_metrics() {
    let rules = std::fs::read_to_string(format!(
        "{}/../../deploy/prometheus/limits-rules.yaml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let exported = Metrics::new().encode();
    let names: Vec<&str> = rules
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("oomwarden_limits_"))
        .collect();
    for name in &names {
        assert!(
            exported
                .lines()
                .any(|l| l.starts_with(&format!("{name} ")) || l.starts_with(&format!("{name}{{"))),
            "{name} is not exported:\n{exported}"
        );
    }
    let found = names.len();
    assert!(found >= 4, "{found}");
}
