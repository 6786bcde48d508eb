//! Configuration documents: the Talos vectors (T9, D15–D19 of `talos-oom-testcases.md`), the
//! tuning examples of the Talos docs, our own document, and error reporting.

// Test code: unwrap on expected outcomes is the assertion.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::Duration;

use oomwarden_config::{
    ConfigErrors, DEFAULT_RANKING_EXPRESSION, DEFAULT_TRIGGER_EXPRESSION, LayoutSetting, Overrides,
    Settings,
};

const HEADER: &str = "apiVersion: v1alpha1\nkind: OOMConfig\n";

fn load(text: &str) -> Result<Settings, ConfigErrors> {
    Settings::from_yaml(text, "oom.yaml")
}

/// The key path of each error.
fn keys(text: &str) -> Vec<Option<String>> {
    load(text)
        .unwrap_err()
        .0
        .into_iter()
        .map(|e| e.key)
        .collect()
}

fn messages(text: &str) -> Vec<String> {
    load(text)
        .unwrap_err()
        .0
        .into_iter()
        .map(|e| e.message)
        .collect()
}

#[test]
fn no_file_and_empty_document_mean_talos_defaults() {
    for text in ["", "# only a comment\n", "---\n", HEADER] {
        let s = load(text).unwrap();
        assert_eq!(s.oom.trigger.source(), DEFAULT_TRIGGER_EXPRESSION);
        assert_eq!(s.oom.ranking.source(), DEFAULT_RANKING_EXPRESSION);
        assert_eq!(s.oom.sample_interval, Duration::from_millis(500));
        assert!(s.oom.strict_class_ordering);
        assert!(!s.warden.dry_run);
        assert_eq!(s.warden.state_dir, PathBuf::from("/var/lib/oomwarden"));
    }
    assert_eq!(
        Settings::defaults().unwrap().to_yaml(),
        load("").unwrap().to_yaml()
    );
}

#[test]
fn empty_fields_mean_defaults() {
    let s = load(&format!(
        "{HEADER}triggerExpression: \"\"\ncgroupRankingExpression:\nsampleInterval: 0s\n"
    ))
    .unwrap();
    assert_eq!(s.oom.trigger.source(), DEFAULT_TRIGGER_EXPRESSION);
    assert_eq!(s.oom.ranking.source(), DEFAULT_RANKING_EXPRESSION);
    assert_eq!(s.oom.sample_interval, Duration::from_millis(500), "D19");
    let s = load(&format!("{HEADER}sampleInterval: 0\n")).unwrap();
    assert_eq!(s.oom.sample_interval, Duration::from_millis(500));
}

#[test]
fn talos_documentation_tuning_examples_are_accepted() {
    let sooner = format!(
        "{HEADER}triggerExpression: |-\n  multiply_qos_vectors(d_qos_memory_full_total, {{System: 8.0, Podruntime: 4.0}}) > 3000.0 &&\n  multiply_qos_vectors(qos_memory_full_avg10, {{System: 1.0, Podruntime: 1.0}}) > 2.0 &&\n  time_since_trigger > duration(\"5s\")\nsampleInterval: 250ms\n"
    );
    let s = load(&sooner).unwrap();
    assert_eq!(s.oom.sample_interval, Duration::from_millis(250));
    assert!(s.oom.trigger.source().contains("> 2.0"));

    let peak = format!(
        "{HEADER}cgroupRankingExpression: |-\n  memory_max.hasValue() ? 0.0 :\n    {{Besteffort: 1.0, Burstable: 0.5, Guaranteed: 0.0, Podruntime: 0.0, System: 0.0}}[class] *\n      double(memory_peak.orValue(0u))\n"
    );
    assert!(
        load(&peak)
            .unwrap()
            .oom
            .ranking
            .source()
            .contains("memory_peak")
    );

    assert!(
        !load(&format!("{HEADER}strictCgroupClassOrdering: false\n"))
            .unwrap()
            .oom
            .strict_class_ordering
    );

    let disabled = load(&format!("{HEADER}triggerExpression: \"false\"\n")).unwrap();
    assert_eq!(disabled.oom.trigger.source(), "false");
    // D20: the custom trigger alone takes effect (no getter bug), the ranking stays default.
    assert_eq!(disabled.oom.ranking.source(), DEFAULT_RANKING_EXPRESSION);

    // The disable workaround from Talos issue #12526.
    load(&format!(
        "{HEADER}triggerExpression: \"false\"\ncgroupRankingExpression: \"0.0\"\n"
    ))
    .unwrap();
}

#[test]
fn invalid_expression_message_is_talos_exact() {
    // T9.1
    assert_eq!(
        messages(&format!(
            "{HEADER}cgroupRankingExpression: disk.transport\n"
        )),
        [
            "OOM cgroup scoring expression is invalid: ERROR: <input>:1:1: undeclared reference to 'disk' (in container '')\n | disk.transport\n | ^"
        ]
    );
    // D15
    assert_eq!(
        messages(&format!(
            "{HEADER}triggerExpression: memory_full_avg10 > 12\n"
        )),
        [
            "OOM trigger expression is invalid: ERROR: <input>:1:19: found no matching overload for '_>_' applied to '(double, int)'\n | memory_full_avg10 > 12\n | ..................^"
        ]
    );
    // D16, D17
    assert_eq!(
        messages(&format!("{HEADER}triggerExpression: \"1.0\"\n")),
        ["OOM trigger expression is invalid: expression output type is double, expected bool"]
    );
    assert_eq!(
        messages(&format!("{HEADER}cgroupRankingExpression: \"1\"\n")),
        [
            "OOM cgroup scoring expression is invalid: expression output type is int, expected double"
        ]
    );
}

#[test]
fn sample_interval_validation() {
    // D18
    assert_eq!(
        messages(&format!("{HEADER}sampleInterval: -1s\n")),
        ["OOM sample interval must be longer than 0"]
    );
    let m = messages(&format!("{HEADER}sampleInterval: 5 s\n"));
    assert!(m[0].contains("invalid duration \"5 s\""), "{m:?}");
    let m = messages(&format!("{HEADER}sampleInterval: 500\n"));
    assert!(m[0].contains("expected a duration"), "{m:?}");
    let m = messages(&format!("{HEADER}sampleInterval: 1ns\n"));
    assert!(m[0].contains("shorter than the minimum 10ms"), "{m:?}");
    assert_eq!(
        load(&format!("{HEADER}sampleInterval: 1m30s\n"))
            .unwrap()
            .oom
            .sample_interval,
        Duration::from_secs(90)
    );
}

#[test]
fn every_error_is_reported_with_document_and_key() {
    let text = format!(
        "{HEADER}triggerExpresion: \"true\"\ncgroupRankingExpression: \"1\"\nsampleInterval: -1s\nstrictCgroupClassOrdering: maybe\n---\napiVersion: v1\nkind: Pod\n---\n{HEADER}"
    );
    let errors = load(&text).unwrap_err();
    let lines: Vec<String> = errors.0.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "oom.yaml: document 1 (OOMConfig): triggerExpresion: unknown field (did you mean triggerExpression?); known fields are apiVersion, kind, triggerExpression, cgroupRankingExpression, sampleInterval, strictCgroupClassOrdering",
            "oom.yaml: document 1 (OOMConfig): cgroupRankingExpression: OOM cgroup scoring expression is invalid: expression output type is int, expected double",
            "oom.yaml: document 1 (OOMConfig): sampleInterval: OOM sample interval must be longer than 0",
            "oom.yaml: document 1 (OOMConfig): strictCgroupClassOrdering: expected true or false (or yes, no, on, off), found string \"maybe\"",
            "oom.yaml: document 2 (Pod): unknown document apiVersion \"v1\" kind \"Pod\"; supported: apiVersion \"v1alpha1\" kind \"OOMConfig\", apiVersion \"oomwarden/v1alpha1\" kind \"OOMWardenConfig\"",
            "oom.yaml: document 3 (OOMConfig): duplicate document v1alpha1/OOMConfig/ is not allowed (line 11)",
        ]
    );
}

#[test]
fn malformed_documents() {
    assert!(messages("a: [1,\n")[0].starts_with("invalid YAML: "));
    assert!(
        messages("apiVersion: v1alpha1\napiVersion: v1alpha1\nkind: OOMConfig\n")[0]
            .contains("duplicate mapping key")
    );
    assert_eq!(
        messages("- 1\n- 2\n"),
        ["a document must be a mapping with apiVersion and kind"]
    );
    assert_eq!(messages("kind: OOMConfig\n"), ["missing or not a string"]);
    assert_eq!(
        messages("apiVersion: v1alpha1\n"),
        ["missing or not a string"]
    );
    assert!(
        messages(&format!("{HEADER}triggerExpression: [true]\n"))[0]
            .contains("expected a string, found a list")
    );
}

#[test]
fn warden_document() {
    let s = load("apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\ndryRun: true\nstateDir: /run/oomwarden\nkillTimeout: 5s\n").unwrap();
    assert!(s.warden.dry_run);
    assert_eq!(s.warden.kill_timeout, Duration::from_secs(5));
    assert_eq!(
        load("").unwrap().warden.kill_timeout,
        Duration::from_secs(2)
    );
    assert_eq!(load("").unwrap().warden.layout, LayoutSetting::Auto);
    assert_eq!(
        load("apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\nlayout: host\n")
            .unwrap()
            .warden
            .layout,
        LayoutSetting::Builtin(oomwarden_model::BuiltinLayout::Host)
    );
    let m = messages("apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\nlayout: kubeadm\n");
    assert_eq!(
        m,
        [
            "unknown layout \"kubeadm\"; one of auto, talos, systemd, cgroupfs, host, or a mapping describing a custom layout"
        ]
    );
    for bad in ["0s", "-1s", "61s", "soon"] {
        let m = messages(&format!(
            "apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\nkillTimeout: {bad}\n"
        ));
        assert_eq!(m.len(), 1, "{bad}: {m:?}");
    }
    assert_eq!(s.warden.state_dir, PathBuf::from("/run/oomwarden"));
    let m = messages(
        "apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\nstateDir: relative/dir\ndryrun: true\n",
    );
    assert_eq!(m.len(), 2, "{m:?}");
    assert!(
        m.iter()
            .any(|x| x.contains("unknown field (did you mean dryRun?)"))
    );
    assert!(m.iter().any(|x| x.contains("must be an absolute path")));
    assert_eq!(
        messages(
            "apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\n---\napiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\n"
        ),
        ["duplicate document oomwarden/v1alpha1/OOMWardenConfig/ is not allowed (line 4)"]
    );
}

#[test]
fn hooks_settings() {
    let w = "apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\n";
    assert_eq!(load("").unwrap().warden.hooks, Default::default());
    let h = load(&format!("{w}hooks:\n  preKill: {{command: [/bin/true, -x]}}\n  postKill: {{command: [/bin/logger], timeout: 30s}}\n"))
        .unwrap()
        .warden
        .hooks;
    let pre = h.pre_kill.unwrap();
    assert_eq!(pre.command, ["/bin/true", "-x"]);
    assert_eq!(pre.timeout, Duration::from_secs(2));
    assert_eq!(h.post_kill.unwrap().timeout, Duration::from_secs(30));
    let e = messages(&format!(
        "{w}hooks:\n  preKill: {{command: [sh, -c, x], timeout: 2m}}\n  postKill: {{command: []}}\n  onStart: {{}}\n"
    ));
    assert_eq!(e.len(), 4, "{e:?}");
    assert!(e.iter().any(|m| m.contains("absolute path")));
    assert!(e.iter().any(|m| m.contains("at most 60s")));
    assert!(e.iter().any(|m| m.contains("non-empty list")));
    assert!(e.iter().any(|m| m.contains("unknown field")));
    // Rendered and loaded back.
    let text = format!("{w}hooks:\n  postKill: {{command: [/bin/logger, -t, oom]}}\n");
    let rendered = load(&text).unwrap().to_yaml();
    assert!(rendered.contains("postKill:"), "{rendered}");
    assert_eq!(
        load(&rendered).unwrap().warden.hooks,
        load(&text).unwrap().warden.hooks
    );
}

#[test]
fn flight_recorder_settings() {
    let w = "apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\n";
    let d = load("").unwrap().warden.flight_recorder;
    assert!(!d.enabled);
    assert_eq!((d.window, d.keep), (Duration::from_secs(300), 20));
    let f = load(&format!(
        "{w}flightRecorder: {{enabled: true, window: 2m, keep: 5}}\n"
    ))
    .unwrap()
    .warden
    .flight_recorder;
    assert!(f.enabled);
    assert_eq!((f.window, f.keep), (Duration::from_secs(120), 5));
    // Every error names its key path.
    let e: Vec<(String, String)> = load(&format!(
        "{w}flightRecorder: {{enabled: 1, window: 2s, keep: 0, size: 3}}\n"
    ))
    .unwrap_err()
    .0
    .into_iter()
    .map(|e| (e.key.unwrap_or_default(), e.message))
    .collect();
    assert_eq!(e.len(), 4, "{e:?}");
    let has = |key: &str, text: &str| e.iter().any(|(k, m)| k == key && m.contains(text));
    assert!(
        has("flightRecorder.enabled", "expected true or false"),
        "{e:?}"
    );
    assert!(has("flightRecorder.window", "\"10s\" to \"1h\""), "{e:?}");
    assert!(has("flightRecorder.keep", "1 to 1000"), "{e:?}");
    assert!(has("flightRecorder.size", "unknown field"), "{e:?}");
    assert!(messages(&format!("{w}flightRecorder: {{window: 2h}}\n"))[0].contains("\"2h\""));
    // Nested keys of the other sections are named by their path too.
    assert_eq!(
        keys(&format!(
            "{w}metrics: {{enabled: 2}}\npsiTriggers: {{kind: 3}}\nhooks: {{preKill: {{command: [/bin/x], timeout: 5}}}}\n"
        )),
        [
            Some("metrics.enabled".to_owned()),
            Some("psiTriggers.kind".to_owned()),
            Some("hooks.preKill.timeout".to_owned())
        ]
    );
    // Rendered and loaded back.
    let text = format!("{w}flightRecorder: {{enabled: true, window: 45s, keep: 3}}\n");
    let rendered = load(&text).unwrap().to_yaml();
    assert!(rendered.contains("flightRecorder:"), "{rendered}");
    assert_eq!(
        load(&rendered).unwrap().warden.flight_recorder,
        load(&text).unwrap().warden.flight_recorder
    );
}

#[test]
fn metrics_settings() {
    let w = "apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\n";
    let d = load("").unwrap().warden.metrics;
    assert!(!d.enabled);
    assert_eq!(d.listen.to_string(), "127.0.0.1:9465");
    let m = load(&format!("{w}metrics:\n  enabled: true\n"))
        .unwrap()
        .warden
        .metrics;
    assert!(m.enabled && m.listen.to_string() == "127.0.0.1:9465");
    let m = load(&format!(
        "{w}metrics: {{enabled: true, listen: '0.0.0.0:9100'}}\n"
    ))
    .unwrap()
    .warden
    .metrics;
    assert_eq!(m.listen.to_string(), "0.0.0.0:9100");
    let e = messages(&format!(
        "{w}metrics: {{enabled: maybe, listen: localhost:1, port: 3}}\n"
    ));
    assert_eq!(e.len(), 3, "{e:?}");
    assert!(e.iter().any(|m| m.contains("expected IP:PORT")));
    assert!(messages(&format!("{w}metrics: on\n"))[0].contains("expected a mapping"));
    // Unknown nested keys carry their key path.
    assert_eq!(
        keys(&format!(
            "{w}metrics: {{port: 3}}\nhooks: {{postKill: {{command: [/bin/x], shell: sh}}}}\n"
        )),
        [
            Some("metrics.port".to_owned()),
            Some("hooks.postKill.shell".to_owned())
        ]
    );
}

#[test]
fn overrides_win_over_the_file() {
    let mut s =
        load("apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\ndryRun: false\n").unwrap();
    s.apply(&Overrides {
        sample_interval: Some(Duration::from_millis(100)),
        dry_run: Some(true),
        state_dir: Some(PathBuf::from("/tmp/x")),
        kill_timeout: Some(Duration::from_millis(500)),
        layout: LayoutSetting::from_name("systemd"),
        metrics_listen: Some("[::1]:9999".parse().unwrap()),
    });
    assert!(s.warden.metrics.enabled);
    assert_eq!(s.warden.metrics.listen.to_string(), "[::1]:9999");
    assert_eq!(s.warden.layout.name(), "systemd");
    assert_eq!(s.warden.kill_timeout, Duration::from_millis(500));
    assert!(s.warden.dry_run);
    assert_eq!(s.oom.sample_interval, Duration::from_millis(100));
    assert_eq!(s.warden.state_dir, PathBuf::from("/tmp/x"));
}

#[test]
fn effective_settings_round_trip() {
    let text = format!(
        "{HEADER}triggerExpression: memory_full_avg10 > 12.0\nsampleInterval: 1m30s\nstrictCgroupClassOrdering: false\n---\napiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\ndryRun: true\n"
    );
    let first = load(&text).unwrap().to_yaml();
    let second = load(&first).unwrap().to_yaml();
    assert_eq!(first, second);
    assert!(first.contains("sampleInterval: 1m30s"));
    let defaults = Settings::defaults().unwrap().to_yaml();
    assert_eq!(load(&defaults).unwrap().to_yaml(), defaults);
}

#[test]
fn hostile_expressions_in_a_config_are_errors() {
    let deep = format!(
        "{HEADER}triggerExpression: '{}true{}'\n",
        "(".repeat(5000),
        ")".repeat(5000)
    );
    assert!(messages(&deep)[0].contains("expression recursion limit exceeded"));
    let big = format!(
        "{HEADER}cgroupRankingExpression: '{}'\n",
        "1.0 + ".repeat(200_000) + "1.0"
    );
    assert!(messages(&big)[0].contains("expression code point size exceeds limit"));
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_text_loads_or_errors(text in "\\PC{0,300}") {
            let _ = Settings::from_yaml(&text, "fuzz.yaml");
        }

        #[test]
        fn yaml_shaped_text_loads_or_errors(lines in prop::collection::vec(prop::sample::select(vec![
            "apiVersion: v1alpha1", "apiVersion: oomwarden/v1alpha1", "kind: OOMConfig", "kind: OOMWardenConfig",
            "triggerExpression: true", "triggerExpression: \"memory_full_avg10 > 1.0\"", "cgroupRankingExpression: 1.0",
            "sampleInterval: 1s", "sampleInterval: -3h", "sampleInterval: [", "strictCgroupClassOrdering: no",
            "dryRun: yes", "stateDir: /x", "layout:", "layout: host", "  name: x", "  metrics:",
            "  candidates:", "    - dir: a", "    - childrenOf: '*/b'", "      class: System", "      include: [x]",
            "      exclude: 3", "---", "  - a", "x: &a [*a]", "? complex", "'", "{", "",
        ]), 0..12)) {
            let _ = Settings::from_yaml(&lines.join("\n"), "fuzz.yaml");
        }
    }
}

/// go-yaml hands Talos the text of an unquoted scalar when the field is a string, so
/// `triggerExpression: false` is the expression `false` (the usual way to switch the handler
/// off), not a type error.
#[test]
fn unquoted_scalars_are_the_expressions_they_spell() {
    let s = load(&format!(
        "{HEADER}triggerExpression: false\ncgroupRankingExpression: 0.0\n"
    ))
    .unwrap();
    assert_eq!(s.oom.trigger.source(), "false");
    assert_eq!(s.oom.ranking.source(), "0.0");
    let s = load(&format!(
        "{HEADER}triggerExpression: true\ncgroupRankingExpression: 1.5e3\n"
    ))
    .unwrap();
    assert_eq!(s.oom.trigger.source(), "true");
    assert_eq!(s.oom.ranking.source(), "1.5e3");
    // An int is the int expression, which Talos rejects for its output type.
    assert_eq!(
        messages(&format!("{HEADER}cgroupRankingExpression: 7\n")),
        [
            "OOM cgroup scoring expression is invalid: expression output type is int, expected double"
        ]
    );
    // A list or mapping is no scalar.
    assert_eq!(
        messages(&format!("{HEADER}triggerExpression: [a]\n")),
        ["expected a string, found a list"]
    );
}

/// Only an absent, null or empty value means the default; whitespace is an expression (a
/// syntax error in cel-go).
#[test]
fn whitespace_only_expression_is_a_syntax_error() {
    let errors = messages(&format!("{HEADER}triggerExpression: \"  \"\n"));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("OOM trigger expression is invalid: ERROR: <input>:1:"),
        "{errors:?}"
    );
}

/// `strictCgroupClassOrdering` takes what go-yaml decodes into a Go bool.
#[test]
fn strict_ordering_takes_go_yaml_bools() {
    for (text, want) in [
        ("true", true),
        ("True", true),
        ("FALSE", false),
        ("yes", true),
        ("\"yes\"", true),
        ("'on'", true),
        ("Off", false),
        ("\"n\"", false),
        ("Y", true),
    ] {
        let s = load(&format!("{HEADER}strictCgroupClassOrdering: {text}\n"))
            .unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(s.oom.strict_class_ordering, want, "{text}");
    }
    for text in ["tRUE", "\"true\"", "1", "maybe"] {
        assert_eq!(
            keys(&format!("{HEADER}strictCgroupClassOrdering: {text}\n")),
            [Some("strictCgroupClassOrdering".to_owned())],
            "{text}"
        );
    }
    assert!(
        messages(&format!("{HEADER}strictCgroupClassOrdering: \"true\"\n"))[0]
            .contains("write it without quotes")
    );
}

/// Issue 15, item 4: no string with a NUL is taken (the typed reader marks reported values
/// with one), and each is an error at its key path.
#[test]
fn a_nul_in_a_value_is_an_error_at_its_key() {
    let w = "apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\n";
    let e: Vec<(Option<String>, String)> = load(&format!(
        "{w}stateDir: \"/var/lib/x\\0y\"\nhooks: {{preKill: {{command: [\"/bin/true\", \"a\\0b\"]}}}}\n"
    ))
    .unwrap_err()
    .0
    .into_iter()
    .map(|e| (e.key, e.message))
    .collect();
    assert_eq!(
        e,
        [
            (
                Some("stateDir".to_owned()),
                "contains a NUL character".to_owned()
            ),
            (
                Some("hooks.preKill.command[1]".to_owned()),
                "contains a NUL character".to_owned()
            ),
        ]
    );
}

/// Every error is found by reading the document again: a document with very many is cut
/// short, and says so.
#[test]
fn very_many_errors_are_listed_up_to_a_bound() {
    let mut text = "apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\n".to_owned();
    for i in 0..500 {
        text.push_str(&format!("unknown{i:03}: 1\n"));
    }
    let e = messages(&text);
    assert_eq!(e.len(), 101, "{}", e.len());
    assert_eq!(
        e.last().map(String::as_str),
        Some("more errors than the first 100 are not listed")
    );
}

/// An alias bomb (each line doubling the one before) is refused by the YAML reader's
/// budget in every pass over the text, not expanded.
#[test]
fn an_alias_bomb_is_an_error_not_a_hang() {
    let mut text =
        "apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\nx0: &a0 [lol, lol]\n".to_owned();
    for i in 1..40 {
        text.push_str(&format!("x{i}: &a{i} [*a{p}, *a{p}]\n", p = i - 1));
    }
    let errors = load(&text).unwrap_err();
    assert_eq!(errors.0.len(), 1, "{errors}");
    assert!(
        errors.0[0].message.starts_with("invalid YAML: "),
        "{errors}"
    );
}

/// Issue 34: `killMethod` is `cgroup` (`cgroup.kill`, the default) or `kernel-oom`.
#[test]
fn kill_method_settings() {
    let w = "apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\n";
    assert_eq!(
        load("").unwrap().warden.kill_method,
        oomwarden_model::KillMethod::Cgroup
    );
    let s = load(&format!("{w}killMethod: kernel-oom\n")).unwrap();
    assert_eq!(s.warden.kill_method, oomwarden_model::KillMethod::KernelOom);
    assert_eq!(load(&s.to_yaml()).unwrap().warden, s.warden);
    assert_eq!(
        load(&format!("{w}killMethod: oom\n"))
            .unwrap_err()
            .0
            .into_iter()
            .map(|e| (e.key.unwrap_or_default(), e.message))
            .collect::<Vec<_>>(),
        [(
            "killMethod".to_owned(),
            "expected cgroup or kernel-oom, found \"oom\"".to_owned()
        )]
    );
}

/// Issue 16, item 4: `killScope` is `pod` (Talos's whole pod, the default) or `containers`.
#[test]
fn kill_scope_settings() {
    let w = "apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\n";
    assert_eq!(
        load("").unwrap().warden.kill_scope,
        oomwarden_model::KillScope::Pod
    );
    let s = load(&format!("{w}killScope: containers\n")).unwrap();
    assert_eq!(s.warden.kill_scope, oomwarden_model::KillScope::Containers);
    assert!(s.to_yaml().contains("killScope: containers"));
    assert_eq!(
        load(&format!("{w}killScope: kill\n"))
            .unwrap_err()
            .0
            .into_iter()
            .map(|e| (e.key.unwrap_or_default(), e.message))
            .collect::<Vec<_>>(),
        [(
            "killScope".to_owned(),
            "expected pod or containers, found \"kill\"".to_owned()
        )]
    );
}

/// Issue 17, item 2: `events` is off by default; a kubeconfig is an absolute path, a node
/// name a DNS subdomain; the settings round-trip through `check`.
#[test]
fn events_settings() {
    let w = "apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\n";
    let d = load("").unwrap().warden.events;
    assert!(!d.enabled && d.kubeconfig.is_none() && d.node_name.is_none() && !d.pod_condition);
    let text = format!(
        "{w}events:\n  enabled: true\n  kubeconfig: /etc/kubernetes/kubelet.conf\n  nodeName: worker-1.example\n  podCondition: true\n"
    );
    let s = load(&text).unwrap();
    assert!(s.warden.events.enabled && s.warden.events.pod_condition);
    assert_eq!(
        s.warden.events.kubeconfig.as_deref(),
        Some(std::path::Path::new("/etc/kubernetes/kubelet.conf"))
    );
    assert_eq!(
        s.warden.events.node_name.as_deref(),
        Some("worker-1.example")
    );
    assert_eq!(load(&s.to_yaml()).unwrap().warden.events, s.warden.events);
    let errors: Vec<(String, String)> = load(&format!(
        "{w}events:\n  enabled: yes please\n  kubeconfig: kube.conf\n  nodeName: Worker_1\n  podCondition: 1\n  namespace: x\n"
    ))
    .unwrap_err()
    .0
    .into_iter()
    .map(|e| (e.key.unwrap_or_default(), e.message))
    .collect();
    let keys: Vec<&str> = errors.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "events.enabled",
            "events.kubeconfig",
            "events.nodeName",
            "events.podCondition",
            "events.namespace"
        ],
        "{errors:?}"
    );
    assert!(
        errors[1].1.contains("must be an absolute path"),
        "{errors:?}"
    );
    assert!(errors[2].1.contains("must be a node name"), "{errors:?}");
}

/// A section that is not a mapping names the keys it takes, listed from the section's own
/// type (so a key added to a section is in its message without anyone writing it there).
#[test]
fn a_section_that_is_not_a_mapping_lists_its_keys() {
    let text = "apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\nmetrics: 5\nhooks: {preKill: x}\nevents: []\ncontainerRuntime: true\nkernelOomWatch: 1\nflightRecorder: a\npsiTriggers: 2\n";
    assert_eq!(
        messages(text),
        [
            "expected a mapping with enabled, listen, found number 5",
            "expected a mapping with command, timeout, found string \"x\"",
            "expected a mapping with enabled, kubeconfig, nodeName, podCondition, taintAfterKills, found a list",
            "expected a mapping with endpoint, podLogs, refreshEvery, found boolean true",
            "expected a mapping with enabled, kmsg, fromBoot, found number 1",
            "expected a mapping with enabled, window, keep, found string \"a\"",
            "expected a mapping with enabled, kind, stall, window, found number 2",
        ]
    );
}

/// Issue 34: `stages` — each stage's name, condition (type-checked in the trigger's
/// environment), action and grace, every problem under its index; check writes them back.
#[test]
fn stages_settings() {
    let w = "apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\n";
    assert!(load("").unwrap().warden.stages.is_empty());
    let s = load(&format!(
        "{w}stages:\n- name: early\n  when: memory_some_avg10 > 5.0\n  action: warn\n- name: shed\n  when: memory_full_avg10 > 2.0\n  action: terminate\n"
    ))
    .unwrap();
    let stages = &s.warden.stages;
    assert_eq!(stages.len(), 2);
    assert_eq!(stages[0].action, oomwarden_config::StageAction::Warn);
    // Issue 54: a warn stage's grace is its hold-down (a flapping condition warns once).
    assert_eq!(stages[0].grace, oomwarden_config::DEFAULT_WARN_HOLD_DOWN);
    assert_eq!(stages[1].grace, oomwarden_config::DEFAULT_TERMINATE_GRACE);
    assert_eq!(stages[1].when.source(), "memory_full_avg10 > 2.0");
    assert_eq!(load(&s.to_yaml()).unwrap().warden.stages, s.warden.stages);
    let errors: Vec<(String, String)> = load(&format!(
        "{w}stages:\n- name: Early\n  when: memory_some_avg10 > \"x\"\n  action: shout\n- {{name: b, action: warn}}\n- name: c\n  when: \"true\"\n  action: warn\n  grace: 3s\n- name: c\n  when: \"true\"\n  action: warn\n- name: d\n  when: \"true\"\n  action: terminate\n  grace: 2h\n- 5\n"
    ))
    .unwrap_err()
    .0
    .into_iter()
    .map(|e| (e.key.unwrap_or_default(), e.message))
    .collect();
    let keys: Vec<&str> = errors.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "stages[0].name",
            "stages[0].when",
            "stages[0].action",
            "stages[1].when",
            "stages[3].name",
            "stages[4].grace",
            "stages[5]",
        ],
        "{errors:?}"
    );
    assert!(
        errors[1].1.contains("found no matching overload"),
        "{errors:?}"
    );
    assert!(
        errors[2].1.contains("expected warn, taint or terminate"),
        "{errors:?}"
    );
    assert!(
        errors[4].1.contains("another stage is named \"c\""),
        "{errors:?}"
    );
}

/// Issue 36: what of a policy reads PSI, so that a node booted with `psi=0` refuses only a
/// policy that needs it: the trigger's, the stages' and the ranking's PSI variables, and
/// `psiTriggers` when enabled.
#[test]
fn psi_reads_names_what_needs_pressure() {
    let defaults = Settings::defaults().unwrap();
    assert_eq!(
        defaults.psi_reads(),
        vec!["qos_memory_full_avg10", "d_qos_memory_full_total"]
    );
    let trend = format!(
        "{HEADER}triggerExpression: node_memory_available < -45.0 * node_memory_available_trend\n"
    );
    assert_eq!(load(&trend).unwrap().psi_reads(), Vec::<&str>::new());
    let ranking = format!(
        "{trend}cgroupRankingExpression: pressure_full_avg10\n---\napiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\npsiTriggers:\n  enabled: true\n"
    );
    assert_eq!(
        load(&ranking).unwrap().psi_reads(),
        vec!["pressure_full_avg10", "psiTriggers"]
    );
    let no_psi = include_str!("../../../examples/config/no-psi.yaml");
    assert_eq!(load(no_psi).unwrap().psi_reads(), Vec::<&str>::new());
}

/// Issue 37, item 4: a YAML merge key is an ordinary key to Talos's go-yaml, which its strict
/// decoding then refuses as an unknown field; oomwarden refuses it the same way rather than
/// merging it into a configuration Talos would never accept.
#[test]
fn a_merge_key_is_refused_as_talos_refuses_it() {
    let text =
        format!("{HEADER}base: &b\n  sampleInterval: 1s\n<<: *b\ntriggerExpression: 'false'\n");
    let errors = load(&text).unwrap_err();
    assert!(
        errors
            .0
            .iter()
            .any(|e| e.key.as_deref() == Some("<<") && e.message.starts_with("unknown field")),
        "{errors}"
    );
    // Without the merge, the document reads as before.
    let plain = format!("{HEADER}sampleInterval: 1s\n");
    assert!(load(&plain).is_ok());
}

/// Issue 37, item 4: an unquoted `.inf` is a scalar like any other to go-yaml, handed to the
/// string field as written, so Talos refuses it as an expression (CEL's check), not as YAML.
#[test]
fn an_unquoted_inf_expression_is_refused_by_the_cel_check() {
    let errors = load(&format!("{HEADER}cgroupRankingExpression: .inf\n")).unwrap_err();
    let e = errors.0.first().unwrap();
    assert_eq!(
        e.key.as_deref(),
        Some("cgroupRankingExpression"),
        "{errors}"
    );
    assert!(
        e.message
            .contains("OOM cgroup scoring expression is invalid")
            && e.message.contains("undeclared reference"),
        "{errors}"
    );
}

#[test]
fn usage_history_settings() {
    let w = "apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\n";
    let d = load("").unwrap().warden.usage_history;
    assert!(d.enabled, "on by default");
    assert_eq!(d.save_every, Duration::from_secs(300));
    assert_eq!(d.params, oomwarden_usage::Params::default());
    let u = load(&format!(
        "{w}usageHistory: {{enabled: false, interval: 30s, aggregationInterval: 1h, intervals: 24, halfLife: 12h, requestPercentile: 0.9, requestMargin: 0, limitMargin: 0.3, oomBumpUpRatio: 1.5, oomMinBumpUp: 256Mi, maxSeries: 100, saveEvery: 1m}}\n"
    ))
    .unwrap()
    .warden
    .usage_history;
    assert!(!u.enabled);
    let p = u.params;
    assert_eq!(
        (p.interval_s, p.aggregation_s, p.intervals, p.half_life_s),
        (30, 3600, 24, 43_200)
    );
    assert_eq!(
        (
            p.request_percentile,
            p.request_margin,
            p.limit_margin,
            p.oom_bump_ratio
        ),
        (0.9, 0.0, 0.3, 1.5)
    );
    assert_eq!((p.oom_min_bump, p.max_series), (256 << 20, 100));
    assert_eq!(u.save_every, Duration::from_secs(60));
    // A number is a quantity in bytes too.
    let n = load(&format!("{w}usageHistory: {{oomMinBumpUp: 1048576}}\n")).unwrap();
    assert_eq!(n.warden.usage_history.params.oom_min_bump, 1 << 20);
    // Every error names its key path and the range.
    let e: Vec<(String, String)> = load(&format!(
        "{w}usageHistory: {{enabled: 1, interval: 0s, aggregationInterval: 8d, intervals: 0, halfLife: 1s, requestPercentile: 0.2, requestMargin: -1, limitMargin: 2, oomBumpUpRatio: 0.5, oomMinBumpUp: 2Ti, maxSeries: 0, saveEvery: 2h, window: 1}}\n"
    ))
    .unwrap_err()
    .0
    .into_iter()
    .map(|e| (e.key.unwrap_or_default(), e.message))
    .collect();
    assert_eq!(e.len(), 13, "{e:?}");
    let has = |key: &str, text: &str| e.iter().any(|(k, m)| k == key && m.contains(text));
    assert!(
        has("usageHistory.enabled", "expected true or false"),
        "{e:?}"
    );
    assert!(has("usageHistory.interval", "\"1s\" to \"10m0s\""), "{e:?}");
    assert!(
        has(
            "usageHistory.aggregationInterval",
            "\"1m0s\" to \"168h0m0s\""
        ),
        "{e:?}"
    );
    assert!(has("usageHistory.intervals", "from 1 to 60"), "{e:?}");
    assert!(has("usageHistory.halfLife", "\"1m0s\""), "{e:?}");
    assert!(
        has("usageHistory.requestPercentile", "from 0.5 to 1"),
        "{e:?}"
    );
    assert!(has("usageHistory.requestMargin", "from 0 to 1"), "{e:?}");
    assert!(has("usageHistory.limitMargin", "from 0 to 1"), "{e:?}");
    assert!(has("usageHistory.oomBumpUpRatio", "from 1 to 10"), "{e:?}");
    assert!(has("usageHistory.oomMinBumpUp", "0 to 1Ti"), "{e:?}");
    assert!(has("usageHistory.maxSeries", "from 1 to 100000"), "{e:?}");
    assert!(
        has("usageHistory.saveEvery", "\"10s\" to \"1h0m0s\""),
        "{e:?}"
    );
    assert!(has("usageHistory.window", "unknown field"), "{e:?}");
}
