//! Golden tests over `testdata/cel/*.tsv`, against two references:
//!
//! - **cel-go v0.31.0**, the engine Talos runs (`*.celgo`): verdict and stage, output type,
//!   value or evaluation error, and for type errors the message and its position, since Talos
//!   users see them in `OOM … expression is invalid: …`. With the oracle present
//!   (`CEL_GO_ORACLE` or `../shared/tools/cel-go-oracle`), the answers are derived again on
//!   every run and must equal the stored file (`CEL_GO_REGENERATE=1` rewrites it); without it,
//!   the stored answers are used and the test says so.
//! - **cel-cpp** (`*.oracle`, from `tools/cel-oracle/oracle.py`), a second opinion on values,
//!   consulted only where it agrees with cel-go (they differ on a few points; cel-go wins).

// Test code: fixture files are read from disk and malformed fixtures may panic.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::indexing_slicing
)]

#[path = "support/celgo.rs"]
mod celgo;

use std::collections::BTreeMap;
use std::path::PathBuf;

use oomwarden_expr::{AnyExpr, CompileError, ExprKind, RankingInput};
use oomwarden_model::{PerClass, QosClass, Scalar, TriggerContext};

fn testdata(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/cel")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fixture values of `tools/cel-oracle/oracle.py` (TRIG_DATA).
fn trigger_fixture() -> TriggerContext {
    let mut ctx = TriggerContext::new();
    ctx.add(PerClass::DQosMemoryFullTotal, QosClass::Podruntime, 200.0);
    ctx.add(PerClass::DQosMemoryFullTotal, QosClass::System, 300.0);
    ctx.add(PerClass::QosMemoryFullAvg10, QosClass::Podruntime, 3.0);
    ctx.add(PerClass::QosMemoryFullAvg10, QosClass::System, 4.0);
    ctx.set(Scalar::MemoryFullAvg10, 10.0);
    ctx.set_time_since_trigger(Some(7_000_000_000));
    ctx
}

/// The fixture values of the oracle's ranking environment (RANK_DATA + RANK_SUBST).
fn ranking_fixture() -> RankingInput<'static> {
    RankingInput {
        memory_max: None,
        memory_current: Some(1000),
        memory_peak: Some(2000),
        path: "/sys/fs/cgroup/kubepods/besteffort/pod123",
        class: QosClass::Besteffort,
        pod_uid: "",
        pod: None,
        oom_score_adj: 0,
        workload_kills: 0,
        memory_swap_current: None,
        memory_swap_max: None,
        memory_min: None,
        memory_low: None,
        memory_high: None,
        pressure_some_avg10: 0.0,
        pressure_full_avg10: 0.0,
        d_memory_current: 0.0,
    }
}

/// Our outcome in the oracle's shape: (`OK <type> <value>` | `EVAL-ERR` | `COMPILE-ERR`, message).
fn outcome(env: &str, expr: &str) -> (String, String) {
    let kind = if env == "trig" {
        ExprKind::Trigger
    } else {
        ExprKind::Ranking
    };
    let compiled = match AnyExpr::compile(kind, expr) {
        Ok(c) => c,
        Err(e) => return ("COMPILE-ERR".into(), e.to_string()),
    };
    let result = match kind {
        ExprKind::Trigger => compiled.eval_trigger(&trigger_fixture()),
        ExprKind::Ranking => compiled.eval_ranking(&ranking_fixture()),
    };
    match result {
        // The oracle reports the checked type; it equals the value's type except for `dyn`.
        Ok(v) => (
            format!("OK {} {}", compiled.output_type(), v.text),
            String::new(),
        ),
        Err(e) => ("EVAL-ERR".into(), e.to_string()),
    }
}

fn oracle(name: &str) -> BTreeMap<String, (String, String)> {
    testdata(name)
        .lines()
        .map(|line| {
            let mut parts = line.splitn(3, '\t');
            let label = parts.next().unwrap_or_default().to_owned();
            let outcome = parts.next().unwrap_or_default().to_owned();
            let message = parts.next().unwrap_or_default().replace("\\n", "\n");
            (label, (outcome, message))
        })
        .collect()
}

/// The cases of a `.tsv` file: (environment, label, expression).
fn cases(file: &str) -> Vec<(String, String, String)> {
    testdata(file)
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|line| {
            let mut parts = line.splitn(3, '\t');
            let env = parts.next().unwrap().to_owned();
            let label = parts.next().unwrap().to_owned();
            let expr = parts.next().unwrap_or("").replace("\\n", "\n");
            (env, label, expr)
        })
        .collect()
}

/// The fixture as a full activation for the cel-go oracle (every variable, all classes).
fn activation(env: &str) -> celgo::Activation {
    use oomwarden_model::Variable;
    if env == "trig" {
        let ctx = trigger_fixture();
        let mut scalars = [0.0; 16];
        let mut maps = Box::new([[0.0; 5]; 22]);
        let (mut si, mut mi) = (0, 0);
        let mut time_since_trigger_ns = None;
        for (_, var) in ctx.talos_variables() {
            match var {
                Variable::Double(d) => {
                    scalars[si] = d;
                    si += 1;
                }
                Variable::ClassMap(m) => {
                    for c in QosClass::ALL {
                        maps[mi][usize::try_from(c.as_i64()).unwrap()] = m.get(c);
                    }
                    mi += 1;
                }
                Variable::DurationNanos(ns) => time_since_trigger_ns = Some(ns),
            }
        }
        celgo::Activation::Trigger {
            scalars,
            maps,
            time_since_trigger_ns,
        }
    } else {
        let r = ranking_fixture();
        celgo::Activation::Ranking {
            memory_max: r.memory_max,
            memory_current: r.memory_current,
            memory_peak: r.memory_peak,
            class: r.class,
            path: r.path.to_owned(),
        }
    }
}

/// cel-go's answers for a case file, by label: live from the oracle when present (and then
/// checked against, or written to, the stored `.celgo` file), else the stored ones.
fn celgo_answers(cases_file: &str, celgo_file: &str) -> BTreeMap<String, serde_json::Value> {
    let cases = cases(cases_file);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/cel")
        .join(celgo_file);
    let stored: BTreeMap<String, serde_json::Value> = std::fs::read_to_string(&path)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let label = v["label"].as_str().unwrap().to_owned();
            (label, v["answer"].take())
        })
        .collect();
    let oracle = match celgo::locate() {
        Ok(o) => o,
        Err(why) => {
            eprintln!(
                "SKIPPED deriving cel-go's answers again ({why}): comparing with {}",
                path.display()
            );
            assert_eq!(
                stored.len(),
                cases.len(),
                "{} is incomplete",
                path.display()
            );
            return stored;
        }
    };
    let requests: Vec<_> = cases
        .iter()
        .map(|(env, _, expr)| celgo::request(expr, &activation(env)))
        .collect();
    let live: BTreeMap<String, serde_json::Value> = cases
        .iter()
        .map(|(_, label, _)| label.clone())
        .zip(celgo::ask_all(&oracle, &requests))
        .collect();
    if std::env::var_os("CEL_GO_REGENERATE").is_some() {
        let text: String = cases
            .iter()
            .map(|(_, label, _)| {
                format!(
                    "{}\n",
                    serde_json::json!({"label": label, "answer": live[label]})
                )
            })
            .collect();
        std::fs::write(&path, text).unwrap();
    } else {
        // Compared as the tests compare (verdict, stage, type, value, compile message): the
        // text of an evaluation error may vary between runs of cel-go (random map order).
        let same = stored.len() == live.len()
            && live.iter().all(|(label, l)| {
                stored.get(label).is_some_and(|s| {
                    celgo::difference(s, l).is_none() && s.get("error") == l.get("error")
                })
            });
        assert!(
            same,
            "{} is stale: cel-go now answers differently. Rewrite it with \
             CEL_GO_REGENERATE=1 cargo test -p oomwarden-expr --test golden",
            path.display()
        );
    }
    live
}

/// Whether cel-cpp's outcome (`OK <type> <value>`, `EVAL-ERR`, `COMPILE-ERR`) is the one
/// cel-go gives, as far as cel-go's answer shows it.
fn cel_cpp_agrees(cpp: &str, go: &serde_json::Value) -> bool {
    let stage = go["stage"].as_str();
    let rejected = matches!(stage, Some("parse" | "check"));
    if cpp == "COMPILE-ERR" {
        return rejected;
    }
    if rejected {
        return false;
    }
    if cpp == "EVAL-ERR" {
        return go.get("eval_error").is_some() || stage == Some("output_type");
    }
    let mut parts = cpp.splitn(3, ' ');
    let (_, ty, value) = (parts.next(), parts.next().unwrap_or(""), parts.next());
    if go.get("eval_error").is_some() {
        return false;
    }
    let type_ok = ty == "dyn" || go["type"].as_str() == Some(ty);
    let value_ok = match (&go["value"], value) {
        (serde_json::Value::Bool(b), Some(v)) => v == b.to_string(),
        (serde_json::Value::Number(n), Some(v)) => v.parse::<f64>().ok() == n.as_f64(),
        (serde_json::Value::String(s), Some(v)) => {
            v.eq_ignore_ascii_case(s.trim_start_matches('+'))
        }
        _ => true,
    };
    type_ok && value_ok
}

fn run_cel_go(cases_file: &str, celgo_file: &str) {
    let answers = celgo_answers(cases_file, celgo_file);
    let mut failures = Vec::new();
    let all = cases(cases_file);
    for (env, label, expr) in &all {
        let want = &answers[label];
        let got = celgo::ours(expr, &activation(env));
        if let Some(why) = celgo::difference(want, &got) {
            failures.push(format!(
                "{label}: `{expr}`\n    {why}\n    cel-go: {want}\n    ours:   {got}"
            ));
            continue;
        }
        // Type errors: the message and its position, as Talos users read them.
        if want["stage"] == "check" && want["error"] != got["error"] {
            failures.push(format!(
                "{label}: `{expr}`\n    cel-go: {}\n    ours:   {}",
                want["error"], got["error"]
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from cel-go:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}

#[test]
fn upstream_108_cases_match_cel_go() {
    run_cel_go("cases.tsv", "cases.celgo");
}

#[test]
fn extra_cases_match_cel_go() {
    run_cel_go("extra.tsv", "extra.celgo");
}

#[test]
fn talos_parity_cases_match_cel_go() {
    run_cel_go("talos.tsv", "talos.celgo");
}

fn run(cases: &str, oracle_file: &str) {
    let expected = oracle(oracle_file);
    let celgo_file = oracle_file.replace(".oracle", ".celgo");
    let go = celgo_answers(cases, &celgo_file);
    let mut cel_go_wins = Vec::new();
    let mut failures = Vec::new();
    let mut count = 0;
    for line in testdata(cases)
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let mut parts = line.splitn(3, '\t');
        let (env, label, expr) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap_or(""),
        );
        let expr = expr.replace("\\n", "\n");
        count += 1;
        let Some((want, want_msg)) = expected.get(label) else {
            failures.push(format!("{label}: missing from {oracle_file}"));
            continue;
        };
        if !cel_cpp_agrees(want, &go[label]) {
            cel_go_wins.push(label.to_owned());
            continue;
        }
        let (got, got_msg) = outcome(env, &expr);
        let same_outcome = if want.starts_with("OK dyn ") {
            // cel-cpp prints the checked type `dyn`; compare the value only.
            got.starts_with("OK ")
                && got
                    .split_once(' ')
                    .map(|x| x.1.split_once(' ').map(|y| y.1))
                    == want
                        .split_once(' ')
                        .map(|x| x.1.split_once(' ').map(|y| y.1))
        } else {
            &got == want
        };
        if !same_outcome {
            failures.push(format!(
                "{label}: `{expr}`\n    cel-cpp: {want} {want_msg}\n    ours:    {got} {got_msg}"
            ));
            continue;
        }
    }
    if !cel_go_wins.is_empty() {
        eprintln!(
            "{} cases where cel-cpp differs from cel-go (cel-go followed, see the cel-go test): {}",
            cel_go_wins.len(),
            cel_go_wins.join(", ")
        );
    }
    assert!(count > 0, "no cases read from {cases}");
    assert!(
        failures.is_empty(),
        "{} of {count} cases differ from cel-cpp:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn upstream_108_cases_match_cel_cpp() {
    run("cases.tsv", "cases.oracle");
}

#[test]
fn extra_cases_match_cel_cpp() {
    run("extra.tsv", "extra.oracle");
}

#[test]
fn talos_parity_cases_match_cel_cpp() {
    run("talos.tsv", "talos.oracle");
}

#[test]
fn output_type_is_enforced_exactly() {
    use oomwarden_expr::{RankingExpr, TriggerExpr};
    let err = RankingExpr::compile("memory_max.hasValue()").unwrap_err();
    assert_eq!(
        err.to_string(),
        "expression output type is bool, expected double"
    );
    let err = TriggerExpr::compile("memory_full_avg10 * 2.0").unwrap_err();
    assert_eq!(
        err.to_string(),
        "expression output type is double, expected bool"
    );
    // `dyn` is not accepted even when the value would be a bool.
    let err = TriggerExpr::compile("dyn(true)").unwrap_err();
    assert!(
        matches!(err, CompileError::OutputType { ref found, .. } if found == "dyn"),
        "{err}"
    );
}

/// The catalogue's type of each of Talos's variables is the one cel-go checks it as (the
/// expression that is the variable alone: cel-go reports its type even when Talos refuses it
/// as an output), so `oomwarden eval variables` prints cel-go's types.
#[test]
fn the_catalogue_types_are_cel_gos() {
    use oomwarden_model::variables::{Env, Origin, catalogue};
    let oracle = match celgo::locate() {
        Ok(o) => o,
        Err(why) => {
            eprintln!("SKIPPED asking cel-go the catalogue's types ({why})");
            return;
        }
    };
    let talos: Vec<_> = catalogue().filter(|d| d.origin == Origin::Talos).collect();
    let requests: Vec<serde_json::Value> = talos
        .iter()
        .map(|d| {
            let env = match d.env {
                Env::Trigger => "trigger",
                Env::Ranking => "ranking",
            };
            serde_json::json!({"env": env, "expr": d.name})
        })
        .collect();
    let answers = celgo::ask_all(&oracle, &requests);
    assert_eq!(answers.len(), talos.len());
    for (d, answer) in talos.iter().zip(&answers) {
        assert_eq!(
            answer["type"].as_str(),
            Some(d.ty.cel_go()),
            "{}: {answer}",
            d.name
        );
    }
}
