//! Differential test against cel-go v0.31.0 (the engine Talos 1.14 compiles), through the
//! oracle in `../shared/tools/cel-go-oracle`: thousands of random expressions over both
//! environments, each with a random full activation, compared for verdict (accepted or not,
//! and at which stage), output type, and the evaluated value or evaluation error.
//!
//! A fixed seed runs every time, then a fresh one; a failure prints the seed, and
//! `CEL_DIFF_SEED=<n>` replays it (`CEL_DIFF_COUNT` changes how many expressions).
//! Without the oracle the test says so on stderr and checks nothing else.

// Test code: a seed from the clock, small casts, and panics as failures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods,
    clippy::cast_possible_truncation
)]

#[path = "support/celgo.rs"]
mod celgo;
#[path = "support/gen.rs"]
mod generator;

use celgo::Activation;
use generator::{Env, Gen};
use oomwarden_model::QosClass;
use rand::{RngExt, SeedableRng};
use rand_xorshift::XorShiftRng;

const FIXED_SEED: u64 = 0x0_0a11_7a1c;

fn double(rng: &mut XorShiftRng) -> f64 {
    match rng.random_range(0..8) {
        0 => 0.0,
        1 => f64::from(rng.random_range(0..100)),
        2 => f64::from(rng.random_range(0..10_000)) / 100.0,
        3 => -f64::from(rng.random_range(0..1000)),
        4 => 1e18 * f64::from(rng.random_range(1..10)),
        5 => f64::from(rng.random_range(0..1_000_000_000_u32)) * 16.0,
        6 => 0.1,
        _ => f64::from(rng.random_range(0..5)),
    }
}

fn activation(env: Env, rng: &mut XorShiftRng) -> Activation {
    match env {
        Env::Trigger => {
            let mut scalars = [0.0; 16];
            for s in &mut scalars {
                *s = double(rng);
            }
            let mut maps = Box::new([[0.0; 5]; 22]);
            for m in maps.iter_mut() {
                for v in m.iter_mut() {
                    *v = double(rng);
                }
            }
            let time_since_trigger_ns = match rng.random_range(0..4) {
                0 => None,
                1 => Some(0),
                2 => Some(rng.random_range(0..20_000_000_000_i64)),
                _ => Some(i64::MAX - rng.random_range(0..3)),
            };
            Activation::Trigger {
                scalars,
                maps,
                time_since_trigger_ns,
            }
        }
        Env::Ranking => {
            let opt = |rng: &mut XorShiftRng| match rng.random_range(0..5) {
                0 => None,
                1 => Some(0),
                2 => Some(u64::MAX - rng.random_range(0..2)),
                _ => Some(rng.random_range(0..(1_u64 << 34))),
            };
            let memory_max = opt(rng);
            let memory_current = opt(rng);
            let memory_peak = opt(rng);
            let class = QosClass::ALL[rng.random_range(0..5)];
            let path = [
                "/sys/fs/cgroup/kubepods/besteffort/pod1",
                "/sys/fs/cgroup/system.slice",
                "",
                "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/x",
            ][rng.random_range(0..4)]
            .to_owned();
            Activation::Ranking {
                memory_max,
                memory_current,
                memory_peak,
                class,
                path,
            }
        }
    }
}

/// Makes one top-level expression: the generator and the depth.
type Maker = fn(&mut Gen<'_>, u32) -> String;

/// Generates `count` expressions per environment from `seed` with `make` and returns how
/// many cel-go accepts and the differences.
fn run(oracle: &std::path::PathBuf, seed: u64, count: usize, make: Maker) -> (usize, Vec<String>) {
    let mut rng = XorShiftRng::seed_from_u64(seed);
    let mut cases = Vec::new();
    for env in [Env::Trigger, Env::Ranking] {
        for i in 0..count {
            let depth = 1 + (i % 4) as u32;
            let slip = if i % 3 == 0 { 80 } else { 5 };
            let expr = make(&mut Gen::new(env, &mut rng, slip), depth);
            let act = activation(env, &mut rng);
            cases.push((expr, act));
        }
    }
    let requests: Vec<_> = cases.iter().map(|(e, a)| celgo::request(e, a)).collect();
    let answers = celgo::ask_all(oracle, &requests);
    // What the cases exercised: a run of nothing but errors would compare little.
    let truth = |a: &serde_json::Value| match a.get("value") {
        Some(serde_json::Value::Bool(b)) => Some(*b),
        Some(v) => v
            .as_f64()
            .filter(|x| *x == 0.0 || *x == 1.0)
            .map(|x| x == 1.0),
        None => None,
    };
    eprintln!(
        "  cel-go's answers: {} true or 1, {} false or 0, {} evaluation errors of {}",
        answers.iter().filter(|a| truth(a) == Some(true)).count(),
        answers.iter().filter(|a| truth(a) == Some(false)).count(),
        answers
            .iter()
            .filter(|a| a.get("eval_error").is_some())
            .count(),
        answers.len(),
    );
    let mut accepted = 0;
    let mut differing = Vec::new();
    for (i, ((expr, act), want)) in cases.iter().zip(&answers).enumerate() {
        if want.get("ok") == Some(&serde_json::Value::Bool(true)) {
            accepted += 1;
        }
        let got = celgo::ours(expr, act);
        if celgo::difference(want, &got).is_some() {
            differing.push((i, got));
        }
    }
    // cel-go itself is not deterministic everywhere: Go's map iteration order is random, and
    // it decides `multiply_qos_vectors`'s runtime type check and the order of its sum. Ask
    // again; an answer of ours that cel-go also gives is not a difference.
    let again: Vec<_> = differing
        .iter()
        .flat_map(|(i, _)| std::iter::repeat_n(requests[*i].clone(), RETRIES))
        .collect();
    let retried = celgo::ask_all(oracle, &again);
    let mut failures = Vec::new();
    let mut excused = std::collections::BTreeMap::<&str, usize>::new();
    for (n, (i, got)) in differing.iter().enumerate() {
        let (expr, act) = &cases[*i];
        let want = &answers[*i];
        if retried[n * RETRIES..(n + 1) * RETRIES]
            .iter()
            .any(|w| celgo::difference(w, got).is_none())
        {
            *excused
                .entry("cel-go nondeterministic, ours is one of its answers")
                .or_default() += 1;
            continue;
        }
        if let Some(known) = celgo::known_difference(want, got) {
            *excused.entry(known).or_default() += 1;
            continue;
        }
        let why = celgo::difference(want, got).unwrap_or_default();
        failures.push(format!(
            "[{}] {expr}\n    {why}\n    cel-go: {want}\n    ours:   {got}",
            act.env()
        ));
    }
    for (what, n) in &excused {
        eprintln!("  excused ({n}): {what}");
    }
    (accepted, failures)
}

const RETRIES: usize = 8;

fn check(seed: u64, count: usize, make: Maker) {
    let oracle = match celgo::locate() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("SKIPPED the differential test against cel-go: {why}");
            return;
        }
    };
    let (accepted, failures) = run(&oracle, seed, count, make);
    let total = 2 * count;
    eprintln!(
        "differential (seed {seed}): {total} expressions, {accepted} accepted by cel-go, {} differ",
        failures.len()
    );
    if let Some(path) = std::env::var_os("CEL_DIFF_DUMP") {
        std::fs::write(&path, failures.join("\n")).expect("write CEL_DIFF_DUMP");
    }
    // A generator that only produces rejected expressions would compare nothing of value.
    assert!(
        accepted * 4 >= total,
        "only {accepted} of {total} expressions type-check: the generator is off"
    );
    assert!(
        failures.is_empty(),
        "{} of {total} expressions differ from cel-go (seed {seed}; replay with CEL_DIFF_SEED={seed}):\n{}",
        failures.len(),
        failures
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

fn count() -> usize {
    std::env::var("CEL_DIFF_COUNT")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(2500)
}

#[test]
fn random_expressions_agree_with_cel_go_fixed_seed() {
    let seed = std::env::var("CEL_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(FIXED_SEED);
    check(seed, count(), generator::top);
}

#[test]
fn random_expressions_agree_with_cel_go_fresh_seed() {
    if std::env::var_os("CEL_DIFF_SEED").is_some() {
        return; // replaying one seed
    }
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    check(seed, count() / 2, generator::top);
}

/// `matches()` alone: Go's regexp grammar's pieces put together at random (valid and not),
/// on subjects with ASCII and non-ASCII letters, digits and case pairs.
#[test]
fn random_patterns_agree_with_cel_go() {
    let seed = std::env::var("CEL_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    check(seed, count(), |g, _| g.regex_case());
}

/// Differences fresh seeds found, fixed, kept: each against cel-go's answer as measured
/// (20 of 20 runs alike), and against the oracle itself when it is here.
#[test]
fn differences_found_by_fresh_seeds_stay_fixed() {
    let act = Activation::Trigger {
        scalars: [1.0; 16],
        maps: Box::new([[4.0; 5]; 22]),
        time_since_trigger_ns: None,
    };
    // (expression, cel-go's answer): the value, or `None` for an evaluation error.
    let cases: [(&str, Option<bool>); 3] = [
        // Seed 1796090852444265815: a duplicate key's last value is what cel-go checks.
        (
            "multiply_qos_vectors(qos_memory_full_avg10, {System: 1.0, System: duration('1s')}) > 0.0",
            None,
        ),
        (
            "multiply_qos_vectors(qos_memory_full_avg10, {System: duration('1s'), System: 1.0}) >= 0.0",
            Some(true),
        ),
        (
            "multiply_qos_vectors(qos_memory_full_avg10, {System: duration('1s'), Podruntime: 2.0, System: 1.0}) >= 0.0",
            Some(true),
        ),
    ];
    let oracle = celgo::locate();
    if let Err(why) = &oracle {
        eprintln!("SKIPPED the oracle part: {why}");
    }
    for (expr, want) in cases {
        let got = celgo::ours(expr, &act);
        match want {
            Some(v) => assert_eq!(
                got.get("value"),
                Some(&serde_json::json!(v)),
                "{expr}: {got}"
            ),
            None => assert!(got.get("eval_error").is_some(), "{expr}: {got}"),
        }
        if let Ok(oracle) = &oracle {
            let answer = celgo::ask_all(oracle, &[celgo::request(expr, &act)]);
            assert_eq!(celgo::difference(&answer[0], &got), None, "{expr}");
        }
    }
}

/// CEL reserves `namespace` (and `as`, `break`, `const`, …): cel-go refuses it as an
/// identifier with "reserved identifier: …", which is why the pod's namespace is the ranking
/// variable `pod_namespace`. Our message is cel-go's, measured, and checked against the oracle
/// when it is here.
#[test]
fn reserved_identifiers_are_refused_as_cel_go_does() {
    let act = Activation::Ranking {
        memory_max: None,
        memory_current: Some(1),
        memory_peak: None,
        class: oomwarden_model::QosClass::Besteffort,
        path: "/sys/fs/cgroup/kubepods/besteffort/pod1".to_owned(),
    };
    let cases = [
        (
            "namespace == \"\"",
            "ERROR: <input>:1:1: reserved identifier: namespace\n | namespace == \"\"\n | ^",
        ),
        (
            "1.0 + double(size(package))",
            "ERROR: <input>:1:19: reserved identifier: package\n | 1.0 + double(size(package))\n | ..................^",
        ),
    ];
    let oracle = celgo::locate();
    if let Err(why) = &oracle {
        eprintln!("SKIPPED the oracle part: {why}");
    }
    for (expr, celgo_error) in cases {
        let got = celgo::ours(expr, &act);
        assert_eq!(
            got.get("error").and_then(|e| e.as_str()),
            Some(celgo_error),
            "{expr}: {got}"
        );
        if let Ok(oracle) = &oracle {
            let answer = celgo::ask_all(oracle, &[celgo::request(expr, &act)]);
            assert_eq!(celgo::difference(&answer[0], &got), None, "{expr}");
        }
    }
}

/// Every name `\p{…}` takes stands for cel-go's set: the first and last code point of each
/// of our ranges are in cel-go's set, the code points just outside them are not.
#[test]
fn unicode_sets_match_cel_go() {
    let Some((oracle, act)) = oracle_and_activation("the comparison of Unicode sets") else {
        return;
    };
    let literal = |chars: &[char]| -> String {
        chars
            .iter()
            .map(|c| format!("\\U{:08X}", u32::from(*c)))
            .collect()
    };
    let mut requests = Vec::new();
    let mut what = Vec::new();
    for name in oomwarden_goregexp::unicode_names() {
        let ranges = oomwarden_goregexp::unicode_ranges(name).expect("a listed name");
        let inside: Vec<char> = ranges.iter().flat_map(|&(lo, hi)| [lo, hi]).collect();
        let contains = |c: char| ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
        let outside: Vec<char> = ranges
            .iter()
            .flat_map(|&(lo, hi)| [u32::from(lo).checked_sub(1), Some(u32::from(hi) + 1)])
            .flatten()
            .filter_map(char::from_u32)
            .filter(|c| !contains(*c))
            .collect();
        for (chars, class) in [
            (inside, format!("\\p{{{name}}}")),
            (outside, format!("\\P{{{name}}}")),
        ] {
            let expr = format!("'{}'.matches(r'^{class}*$')", literal(&chars));
            requests.push(celgo::request(&expr, &act));
            what.push((class, chars));
        }
    }
    let answers = celgo::ask_all(&oracle, &requests);
    // Where a set differs, each of its code points alone says which.
    let mut single = Vec::new();
    for ((class, chars), answer) in what.iter().zip(&answers) {
        if answer.get("value") != Some(&serde_json::json!(true)) {
            for c in chars {
                let expr = format!("'{}'.matches(r'^{class}$')", literal(&[*c]));
                single.push((class.clone(), *c, celgo::request(&expr, &act)));
            }
        }
    }
    let requests: Vec<_> = single.iter().map(|(_, _, r)| r.clone()).collect();
    let answers = celgo::ask_all(&oracle, &requests);
    let wrong: Vec<String> = single
        .iter()
        .zip(&answers)
        .filter(|(_, a)| a.get("value") != Some(&serde_json::json!(true)))
        .map(|((class, c, _), a)| format!("{class} U+{:04X}: cel-go {a}", u32::from(*c)))
        .collect();
    eprintln!(
        "{} Unicode sets compared with cel-go at their boundaries",
        what.len() / 2
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `(?i)`: for every cased letter, the letters it matches are the ones cel-go's matches. In
/// batches (one request per letter took 20 s): every letter of each of our orbits matches its
/// letter there, in order (`(?i)^xxXX…$` on the orbits written out), and no cased letter
/// outside the orbits of eight letters matches any of them (a class of the eight).
#[test]
fn case_folding_matches_cel_go() {
    let Some((oracle, act)) = oracle_and_activation("the comparison of case folding") else {
        return;
    };
    let cased: Vec<char> = oomwarden_goregexp::unicode_ranges("LC")
        .expect("LC")
        .into_iter()
        .flat_map(|(lo, hi)| lo..=hi)
        .collect();
    let lit = |c: char| format!("\\U{:08X}", u32::from(c));
    let x = |c: char| format!("\\x{{{:X}}}", u32::from(c));
    let mut requests = Vec::new();
    let mut what = Vec::new();
    for chunk in cased.chunks(50) {
        let (mut pattern, mut subject) = (String::from("(?i)^"), String::new());
        for &c in chunk {
            for m in oomwarden_goregexp::fold_equivalents(c) {
                pattern.push_str(&x(c));
                subject.push_str(&lit(m));
            }
        }
        requests.push(celgo::request(
            &format!("'{subject}'.matches(r'{pattern}$')"),
            &act,
        ));
        what.push((chunk.to_vec(), true));
    }
    for chunk in cased.chunks(8) {
        let orbits: Vec<char> = chunk
            .iter()
            .flat_map(|&c| oomwarden_goregexp::fold_equivalents(c))
            .collect();
        let class: String = chunk.iter().map(|&c| x(c)).collect();
        let others: String = cased
            .iter()
            .filter(|o| !orbits.contains(o))
            .map(|&c| lit(c))
            .collect();
        requests.push(celgo::request(
            &format!("'{others}'.matches(r'(?i)[{class}]')"),
            &act,
        ));
        what.push((chunk.to_vec(), false));
    }
    let answers = celgo::ask_all(&oracle, &requests);
    let wrong: Vec<String> = what
        .iter()
        .zip(&answers)
        .filter(|((_, want), a)| a.get("value") != Some(&serde_json::json!(want)))
        .map(|((letters, want), a)| {
            let which = if *want {
                "our orbits match"
            } else {
                "no other letter matches"
            };
            format!("{letters:?}: {which}: cel-go {a}")
        })
        .collect();
    eprintln!(
        "case folding of {} cased letters compared with cel-go",
        cased.len()
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The oracle and a trigger activation of zeros for a test that asks cel-go about literals
/// only; `None` (said on stderr) when the oracle is absent.
fn oracle_and_activation(what: &str) -> Option<(std::path::PathBuf, Activation)> {
    match celgo::locate() {
        Ok(oracle) => Some((
            oracle,
            Activation::Trigger {
                scalars: [0.0; 16],
                maps: Box::new([[0.0; 5]; 22]),
                time_since_trigger_ns: None,
            },
        )),
        Err(why) => {
            eprintln!("SKIPPED {what} with cel-go: {why}");
            None
        }
    }
}
