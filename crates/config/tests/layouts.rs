//! Custom layouts in the `OOMWardenConfig` document: loading, error messages with their key
//! paths, and the round trip through `oomwarden check`'s rendering.

// Test code: unwrap on expected outcomes is the assertion.
#![allow(clippy::unwrap_used)]

use oomwarden_config::{LayoutSetting, Settings, layout_document};
use oomwarden_model::{Layout, MetricSource, QosClass};

const WARDEN: &str = "apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\n";

const EDGE: &str = "layout:
  name: edge
  metrics:
    - dir: init.scope
      class: System
    - childrenOf: system.slice
      class: System
      exclude: [k3s.service]
    - childrenOf: system.slice
      class: Podruntime
      include: [k3s.service]
    - dir: kubepods/besteffort
      class: Besteffort
  candidates:
    - childrenOf: kubepods/besteffort
      class: Besteffort
      include: ['pod*']
    - childrenOf: 'workloads/*.slice'
      class: Burstable
";

fn custom(settings: &Settings) -> &Layout {
    match &settings.warden.layout {
        LayoutSetting::Custom(layout) => layout,
        other => panic!("not a custom layout: {other:?}"),
    }
}

#[test]
fn a_custom_layout_loads_with_the_root_first() {
    let s = Settings::from_yaml(&format!("{WARDEN}{EDGE}"), "edge.yaml").unwrap();
    let layout = custom(&s);
    assert_eq!(layout.name, "edge");
    assert_eq!(s.warden.layout.name(), "edge");
    assert_eq!(layout.metrics.first(), Some(&MetricSource::Root));
    assert_eq!(layout.metrics.len(), 5);
    assert_eq!(layout.candidates.len(), 2);
    assert_eq!(layout.candidates[1].class, QosClass::Burstable);
    assert!(layout.candidates[0].filter.admits("pod123"));
    assert!(!layout.candidates[0].filter.admits("besteffort"));
}

#[test]
fn a_custom_layout_round_trips_through_check() {
    let s = Settings::from_yaml(&format!("{WARDEN}{EDGE}"), "edge.yaml").unwrap();
    let rendered = s.to_yaml();
    assert!(rendered.contains("childrenOf: system.slice"), "{rendered}");
    let again = Settings::from_yaml(&rendered, "rendered.yaml").unwrap();
    assert_eq!(again.warden.layout, s.warden.layout);
    assert_eq!(again.to_yaml(), rendered);
}

#[test]
fn every_builtin_written_as_data_loads_back_as_itself() {
    for name in Layout::BUILTIN {
        let builtin = Layout::builtin(name).unwrap();
        let text = layout_document(&builtin);
        let s = Settings::from_yaml(&text, "builtin.yaml")
            .unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        let loaded = custom(&s);
        assert_eq!(loaded.name, "custom", "{name}");
        assert_eq!(loaded.metrics, builtin.metrics, "{name}");
        assert_eq!(loaded.candidates, builtin.candidates, "{name}");
    }
}

#[test]
fn problems_name_the_file_document_and_key_path() {
    let text = format!(
        "{WARDEN}layout:\n  metrics:\n    - dir: system.slice\n      class: Sytem\n  candidates:\n    - childrenOf: /kubepods\n      class: Besteffort\n"
    );
    let errors: Vec<String> = Settings::from_yaml(&text, "node.yaml")
        .unwrap_err()
        .0
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errors,
        [
            "node.yaml: document 1 (OOMWardenConfig): layout.metrics[0].class: unknown class \"Sytem\"; one of Besteffort, Burstable, Guaranteed, Podruntime, System",
            "node.yaml: document 1 (OOMWardenConfig): layout.candidates[0].childrenOf: invalid path \"/kubepods\": must be relative to the cgroup root (no leading '/')",
        ]
    );
}

#[test]
fn wrong_shapes_are_errors_not_fallbacks() {
    for (layout, want) in [
        ("layout: [talos]", "expected a string, found a list"),
        ("layout: 3", "expected a string, found number 3"),
        (
            "layout: {}",
            "layout.metrics: a layout needs at least one entry",
        ),
        (
            "layout: {metrics: 1}",
            "layout.metrics: expected a list of entries",
        ),
    ] {
        let e = Settings::from_yaml(&format!("{WARDEN}{layout}\n"), "x.yaml").unwrap_err();
        assert!(e.to_string().contains(want), "{layout}: {e}");
    }
}

/// A double count is reported at the entries' own indices, also when an entry before them is
/// in error.
#[test]
fn double_counting_names_the_entries_as_written() {
    let text = format!(
        "{WARDEN}layout:\n  metrics:\n    - 7\n    - dir: a\n      class: System\n    - dir: a/b\n      class: System\n  candidates:\n    - childrenOf: b\n      class: Besteffort\n"
    );
    let errors: Vec<String> = Settings::from_yaml(&text, "node.yaml")
        .unwrap_err()
        .0
        .iter()
        .map(|e| format!("{}: {}", e.key.clone().unwrap_or_default(), e.message))
        .collect();
    assert_eq!(
        errors,
        [
            "layout.metrics[0]: expected a mapping, found number 7",
            "layout.metrics[2]: dir \"a/b\" is inside layout.metrics[1] (dir \"a\"), whose figures already include it; it would be counted twice",
        ]
    );
}
