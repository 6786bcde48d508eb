//! The cel-go oracle (`../shared/tools/cel-go-oracle`): cel-go v0.31.0 with Talos 1.14's two
//! environments, as a process speaking JSON lines, and our engine's answer in the same shape.
//!
//! Located by `CEL_GO_ORACLE`, else `../shared/tools/cel-go-oracle/cel-go-oracle` beside the
//! repository. Tests that use it say on stderr when it is absent and skip only that part.

// Test code: a broken oracle process should fail the test loudly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    dead_code,
    unreachable_pub
)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use oomwarden_expr::{CompileError, RankingExpr, RankingInput, Stage, TriggerExpr};
use oomwarden_model::variables::{Origin, VarType};
use oomwarden_model::{QosClass, TriggerContext, TriggerVar, Variable};

/// Talos's trigger variables of one type, in the catalogue's order (the generator draws from
/// these lists by position, so the order is part of a seed's meaning).
pub fn talos_trigger_names(ty: VarType) -> Vec<&'static str> {
    TriggerVar::all()
        .map(TriggerVar::definition)
        .filter(|d| d.origin == Origin::Talos && d.ty == ty)
        .map(|d| d.name)
        .collect()
}
use serde_json::{Value as Json, json};

/// Where the oracle binary is, or why it is not used.
pub fn locate() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("CEL_GO_ORACLE") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("CEL_GO_ORACLE={} is not a file", path.display()))
        };
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/tools/cel-go-oracle/cel-go-oracle");
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "no cel-go oracle: CEL_GO_ORACLE is unset and {} does not exist",
            path.display()
        ))
    }
}

/// Asks the oracle about every request, in order (one process, pipelined).
pub fn ask_all(oracle: &PathBuf, requests: &[Json]) -> Vec<Json> {
    let mut child = Command::new(oracle)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", oracle.display()));
    let mut stdin = child.stdin.take().unwrap();
    let lines: Vec<String> = requests.iter().map(|r| r.to_string()).collect();
    let writer = std::thread::spawn(move || {
        for line in lines {
            stdin.write_all(line.as_bytes()).unwrap();
            stdin.write_all(b"\n").unwrap();
        }
    });
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let answers: Vec<Json> = stdout
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    writer.join().unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "the oracle exited with {status}");
    assert_eq!(
        answers.len(),
        requests.len(),
        "the oracle answered fewer lines"
    );
    answers
}

/// A full activation: every variable of the environment, all five classes in every map.
#[derive(Debug, Clone)]
pub enum Activation {
    Trigger {
        scalars: [f64; 16],
        maps: Box<[[f64; 5]; 22]>,
        /// `None`: never triggered (Talos passes `math.MaxInt64` ns).
        time_since_trigger_ns: Option<i64>,
    },
    Ranking {
        memory_max: Option<u64>,
        memory_current: Option<u64>,
        memory_peak: Option<u64>,
        class: QosClass,
        path: String,
    },
}

impl Activation {
    pub fn env(&self) -> &'static str {
        match self {
            Activation::Trigger { .. } => "trigger",
            Activation::Ranking { .. } => "ranking",
        }
    }

    /// The oracle's `context` object.
    pub fn to_json(&self) -> Json {
        match self {
            Activation::Trigger {
                scalars,
                maps,
                time_since_trigger_ns,
            } => {
                let mut obj = serde_json::Map::new();
                for (name, v) in talos_trigger_names(VarType::Double)
                    .into_iter()
                    .zip(scalars)
                {
                    obj.insert(name.into(), oracle_number(*v));
                }
                for (name, m) in talos_trigger_names(VarType::ClassMap)
                    .into_iter()
                    .zip(maps.iter())
                {
                    let entries: serde_json::Map<String, Json> = m
                        .iter()
                        .enumerate()
                        .map(|(i, v)| (i.to_string(), oracle_number(*v)))
                        .collect();
                    obj.insert(name.into(), Json::Object(entries));
                }
                obj.insert(
                    "time_since_trigger".into(),
                    match time_since_trigger_ns {
                        Some(ns) => json!(ns),
                        None => json!("max"),
                    },
                );
                Json::Object(obj)
            }
            Activation::Ranking {
                memory_max,
                memory_current,
                memory_peak,
                class,
                path,
            } => json!({
                "memory_max": memory_max,
                "memory_current": memory_current,
                "memory_peak": memory_peak,
                "class": class.as_i64(),
                "path": path,
            }),
        }
    }

    pub fn trigger_context(&self) -> TriggerContext {
        let Activation::Trigger {
            scalars,
            maps,
            time_since_trigger_ns,
        } = self
        else {
            panic!("not a trigger activation")
        };
        let mut text = serde_json::Map::new();
        for (name, v) in talos_trigger_names(VarType::Double)
            .into_iter()
            .zip(scalars)
        {
            text.insert(name.into(), json!(v));
        }
        for (name, m) in talos_trigger_names(VarType::ClassMap)
            .into_iter()
            .zip(maps.iter())
        {
            text.insert(
                name.into(),
                json!({"0": m[0], "1": m[1], "2": m[2], "3": m[3], "4": m[4]}),
            );
        }
        let mut ctx = TriggerContext::from_json(&Json::Object(text).to_string()).unwrap();
        ctx.set_time_since_trigger(*time_since_trigger_ns);
        // The conversion must be exact, or the comparison means nothing.
        for (name, var) in ctx.talos_variables() {
            if let Variable::Double(d) = var {
                let i = talos_trigger_names(VarType::Double)
                    .into_iter()
                    .position(|n| n == name)
                    .unwrap();
                assert_eq!(d.to_bits(), scalars[i].to_bits(), "{name}");
            }
        }
        ctx
    }
}

/// Asks the oracle and our engine about one expression; `None` when they agree.
pub fn request(expr: &str, activation: &Activation) -> Json {
    json!({"env": activation.env(), "expr": expr, "context": activation.to_json()})
}

/// Our engine's answer in the oracle's shape (`ok`, `type`, `stage`, `error`, `value`,
/// `eval_error`), through the same entry points the daemon uses.
pub fn ours(expr: &str, activation: &Activation) -> Json {
    let mut out = serde_json::Map::new();
    let compiled = match activation {
        Activation::Trigger { .. } => TriggerExpr::compile(expr).map(|t| (Some(t), None)),
        Activation::Ranking { .. } => RankingExpr::compile(expr).map(|r| (None, Some(r))),
    };
    match compiled {
        Err(e) => {
            out.insert("ok".into(), json!(false));
            out.insert("error".into(), json!(e.to_string()));
            out.insert(
                "stage".into(),
                json!(match e.stage() {
                    Stage::Parse => "parse",
                    Stage::Check => "check",
                    Stage::OutputType => "output_type",
                    Stage::Internal => "internal",
                }),
            );
            if let CompileError::OutputType { found, .. } = &e {
                out.insert("type".into(), json!(found));
            }
        }
        Ok((trigger, ranking)) => {
            out.insert("ok".into(), json!(true));
            if let Some(t) = trigger {
                out.insert("type".into(), json!("bool"));
                match t.eval(&activation.trigger_context()) {
                    Ok(b) => out.insert("value".into(), json!(b)),
                    Err(e) => out.insert("eval_error".into(), json!(e.to_string())),
                };
            }
            if let Some(r) = ranking {
                out.insert("type".into(), json!("double"));
                let Activation::Ranking {
                    memory_max,
                    memory_current,
                    memory_peak,
                    class,
                    path,
                } = activation
                else {
                    unreachable!()
                };
                let input = RankingInput {
                    memory_max: *memory_max,
                    memory_current: *memory_current,
                    memory_peak: *memory_peak,
                    path,
                    class: *class,
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
                };
                match r.eval(&input) {
                    Ok(d) => out.insert("value".into(), oracle_number(d)),
                    Err(e) => out.insert("eval_error".into(), json!(e.to_string())),
                };
            }
        }
    }
    Json::Object(out)
}

/// A double as the oracle writes and reads it (`"NaN"`, `"+Inf"`, `"-Inf"`, else a JSON
/// number).
pub fn oracle_number(v: f64) -> Json {
    if v.is_nan() {
        json!("NaN")
    } else if v.is_infinite() {
        json!(if v > 0.0 { "+Inf" } else { "-Inf" })
    } else {
        json!(v)
    }
}

/// Why two answers differ in what the comparison covers (verdict, stage, output type, value
/// or error), or `None`. Message texts are compared by the golden tests, not here.
pub fn difference(oracle: &Json, ours: &Json) -> Option<String> {
    let field = |j: &Json, k: &str| j.get(k).cloned().unwrap_or(Json::Null);
    if let Some(e) = oracle.get("oracle_error") {
        return Some(format!("the oracle refused the request: {e}"));
    }
    for key in ["ok", "stage", "type"] {
        if field(oracle, key) != field(ours, key) {
            return Some(format!(
                "{key}: cel-go {} / ours {}",
                field(oracle, key),
                field(ours, key)
            ));
        }
    }
    // A type error: the first one's line, column and message as cel-go's (the caret lines
    // follow from them; a syntax error's words are cel-core's, C2).
    if field(oracle, "stage") == json!("check") {
        let first = |j: &Json| {
            j.get("error")
                .and_then(Json::as_str)
                .and_then(|e| e.lines().next())
                .map(str::to_owned)
        };
        if first(oracle) != first(ours) {
            return Some(format!(
                "first type error: cel-go {:?} / ours {:?}",
                first(oracle),
                first(ours)
            ));
        }
    }
    let (ov, uv) = (field(oracle, "value"), field(ours, "value"));
    let (oe, ue) = (oracle.get("eval_error"), ours.get("eval_error"));
    match (oe, ue) {
        (None, None) => {
            let same = match (ov.as_f64(), uv.as_f64()) {
                // Exact: 0.1+0.2 must be cel-go's double (the sign of a zero is not compared).
                (Some(a), Some(b)) => a.to_bits() == b.to_bits() || a == b,
                _ => ov == uv,
            };
            (!same).then(|| format!("value: cel-go {ov} / ours {uv}"))
        }
        // Go's regexp errors are deterministic: their text is compared (other evaluation
        // errors can name whichever map entry Go's random iteration met first).
        (Some(o), Some(u))
            if o.as_str()
                .is_some_and(|t| t.starts_with("error parsing regexp"))
                && o != u =>
        {
            Some(format!("evaluation error: cel-go {o} / ours {u}"))
        }
        (Some(_), Some(_)) => None,
        (Some(e), None) => Some(format!("cel-go: evaluation error {e} / ours: value {uv}")),
        (None, Some(e)) => Some(format!("cel-go: value {ov} / ours: evaluation error {e}")),
    }
}

/// A difference documented in docs/compatibility.md, recognised narrowly: the name of the
/// entry, or `None` for any other difference.
pub fn known_difference(oracle: &Json, ours: &Json) -> Option<&'static str> {
    let text = |j: &Json, k: &str| j.get(k).and_then(Json::as_str).unwrap_or("").to_owned();
    let (oe, ue) = (text(oracle, "eval_error"), text(ours, "eval_error"));
    // C8: map literal keys other than int, uint, bool and string.
    if ue.starts_with("unsupported map key type") && oe.is_empty() {
        return Some("C8: a map literal key that is not int, uint, bool or string");
    }
    // C13: a pattern Go takes whose automaton here is over its bound.
    if ue.starts_with("cannot compile regexp: expression too large for oomwarden") && oe.is_empty()
    {
        return Some("C13: a pattern whose automaton is over oomwarden's bound (Go takes it)");
    }
    // C10: `has()` on an `optional.none()` receiver as a branch of `? :`; cel-go's
    // conditional attribute hands back the optional itself, which Talos then refuses.
    if oe.starts_with("expression output type is optional_type") && ue.is_empty() {
        return Some(
            "C10: has() on optional.none() inside a conditional: cel-go returns the optional",
        );
    }
    runtime_guard(oracle, ours)
}

fn runtime_guard(oracle: &Json, ours: &Json) -> Option<&'static str> {
    let text = |j: &Json, k: &str| j.get(k).and_then(Json::as_str).unwrap_or("").to_owned();
    let (oe, ue) = (text(oracle, "eval_error"), text(ours, "eval_error"));
    // C9: cel-go's runtime overload guard on calls typed through an unbound type parameter.
    if oe.starts_with("no such overload: ") && ue.is_empty() && !oe.contains("multiply_qos_vectors")
    {
        return Some(
            "C9: cel-go's runtime overload guard after a type parameter bound by the first overload",
        );
    }
    None
}
