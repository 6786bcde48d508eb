//! Golden tests: every expression in `testdata/cel/*.tsv` must give the outcome Google's
//! cel-cpp gives (`*.oracle`, produced by `tools/cel-oracle/oracle.py`): the same value, or a
//! compile error, or an evaluation error. For type errors the message and its position must
//! also be cel-go's, since Talos users see them in `OOM … expression is invalid: …`.
//!
//! Regenerate the oracle files with `tools/cel-oracle/run` (needs `cel-expr-python`).

// Test code: fixture files are read from disk and malformed fixtures may panic.
#![allow(clippy::unwrap_used, clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use oomwarden_expr::{AnyExpr, CompileError, ExprKind, RankingInput};
use oomwarden_model::{PsiKind, PsiSpan, QosClass, TriggerContext};

fn testdata(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/cel")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fixture values of `tools/cel-oracle/oracle.py` (TRIG_DATA).
fn trigger_fixture() -> TriggerContext {
    let mut ctx = TriggerContext::new();
    ctx.add_class_psi(
        true,
        PsiKind::Full,
        PsiSpan::Total,
        QosClass::Podruntime,
        200.0,
    );
    ctx.add_class_psi(true, PsiKind::Full, PsiSpan::Total, QosClass::System, 300.0);
    ctx.add_class_psi(
        false,
        PsiKind::Full,
        PsiSpan::Avg10,
        QosClass::Podruntime,
        3.0,
    );
    ctx.add_class_psi(false, PsiKind::Full, PsiSpan::Avg10, QosClass::System, 4.0);
    ctx.set_root_psi(false, PsiKind::Full, PsiSpan::Avg10, 10.0);
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

/// The first `ERROR: …` line of a cel-cpp message (status prefix and suffix removed).
fn first_error_line(message: &str) -> Option<&str> {
    let start = message.find("ERROR: ")?;
    message.get(start..)?.lines().next()
}

fn run(cases: &str, oracle_file: &str) {
    let expected = oracle(oracle_file);
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
        // Type errors: the message and position must be cel-go's.
        if want == "COMPILE-ERR"
            && (want_msg.contains("found no matching overload")
                || want_msg.contains("undeclared reference")
                || want_msg.contains("literal"))
        {
            let (w, g) = (first_error_line(want_msg), got_msg.lines().next());
            if w != g {
                failures.push(format!(
                    "{label}: `{expr}`\n    cel-cpp: {w:?}\n    ours:    {g:?}"
                ));
            }
        }
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
