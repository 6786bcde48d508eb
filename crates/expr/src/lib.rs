//! The CEL expression layer: Talos-compatible trigger and ranking expressions.
//!
//! ```
//! use oomwarden_expr::{RankingExpr, RankingInput, TriggerExpr};
//! use oomwarden_model::{QosClass, TriggerContext};
//!
//! let trigger = TriggerExpr::compile("memory_full_avg10 > 12.0").unwrap();
//! assert_eq!(trigger.eval(&TriggerContext::new()), Ok(false));
//!
//! let ranking = RankingExpr::compile("double(memory_current.orValue(0u))").unwrap();
//! let input = RankingInput {
//!     memory_max: None,
//!     memory_current: Some(1000),
//!     memory_peak: None,
//!     path: "/sys/fs/cgroup/kubepods/besteffort/pod1",
//!     class: QosClass::Besteffort,
//!     pod_uid: "1",
//!     pod: None,
//!     oom_score_adj: 0,
//!     workload_kills: 0,
//!     memory_swap_current: None,
//!     memory_swap_max: None,
//!     memory_min: None,
//!     memory_low: None,
//!     memory_high: None,
//!     pressure_some_avg10: 0.0,
//!     pressure_full_avg10: 0.0,
//!     d_memory_current: 0.0,
//! };
//! assert_eq!(ranking.eval(&input), Ok(1000.0));
//!
//! // Checked at load, like cel-go: no implicit int/double mixing.
//! let err = TriggerExpr::compile("memory_full_avg10 > 12").unwrap_err();
//! assert!(err.to_string().contains("found no matching overload"));
//! ```
//!
//! Invariants:
//! - No type of the CEL engine (`cel-core`) appears in this crate's public API.
//! - Compilation parses, type-checks (with cel-go's strictness) and requires the exact output
//!   type (`bool` for triggers, `double` for rankings). Evaluation never panics: errors
//!   (`no such key`, division by zero, overflow) are returned as [`EvalError`].
//! - Inputs over cel-go's limits (100,000 code points, nesting 250) are rejected before the
//!   recursive parser runs, so no expression can overflow the stack.

mod check;
mod compare;
mod constants;
mod diag;
mod env;
mod limits;
mod parse;
mod patterns;
mod runtime;
mod tree;

use std::fmt;
use std::sync::Arc;

use cel_core::{Ast, Env, MapKey, Program, Value, ValueMap};
use oomwarden_model::{QosClass, RankingVar, TriggerContext, TriggerVar, Variable};
use thiserror::Error;

pub use compare::Comparison;
pub use diag::Diagnostic;
pub use limits::{MAX_CODE_POINTS, MAX_RECURSION_DEPTH};

use crate::diag::Rendered;
use crate::env::{LazyActivation, RANKING_ENV, TRIGGER_ENV, ranking_variable, trigger_variable};
use crate::limits::{LimitExceeded, check_limits};

/// Stack for the compiler thread. Parsing costs up to ~24 KiB per nesting level in debug
/// builds (measured), so 250 levels need ~6 MiB; only touched pages are ever committed.
const COMPILE_STACK_BYTES: usize = 64 << 20;

/// Which environment an expression is compiled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExprKind {
    /// `triggerExpression`: the trigger environment, output `bool`.
    Trigger,
    /// `cgroupRankingExpression`: the ranking environment, output `double`.
    Ranking,
}

impl ExprKind {
    fn env(self) -> &'static Env {
        match self {
            ExprKind::Trigger => &TRIGGER_ENV,
            ExprKind::Ranking => &RANKING_ENV,
        }
    }

    fn decls(self, dialect: Dialect) -> &'static check::decls::Decls {
        match (self, dialect) {
            (ExprKind::Trigger, Dialect::Oomwarden) => &check::decls::TRIGGER,
            (ExprKind::Ranking, Dialect::Oomwarden) => &check::decls::RANKING,
            (ExprKind::Trigger, Dialect::Talos) => &check::decls::TALOS_TRIGGER,
            (ExprKind::Ranking, Dialect::Talos) => &check::decls::TALOS_RANKING,
        }
    }

    fn output(self) -> check::types::Type {
        match self {
            ExprKind::Trigger => check::types::Type::Bool,
            ExprKind::Ranking => check::types::Type::Double,
        }
    }
}

/// Which declarations an expression may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// Talos's environments plus oomwarden's extension variables (`node_*`, `pod_uid`).
    Oomwarden,
    /// Talos 1.14's environments exactly (`oomwarden check --talos`).
    Talos,
}

/// Why an expression was rejected at load.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CompileError {
    /// Syntax, size, depth or type errors, rendered as cel-go renders them.
    #[error("{rendered}")]
    Invalid {
        /// Where cel-go finds it: parsing (syntax, size, depth) or checking (types, names).
        stage: Stage,
        /// Each problem with its location.
        diagnostics: Vec<Diagnostic>,
        /// All of them, in cel-go's text form.
        rendered: String,
    },
    /// The expression type-checks but yields the wrong type (Talos's own check).
    #[error("expression output type is {found}, expected {expected}")]
    OutputType {
        /// The checked type, in cel-go's spelling.
        found: String,
        /// `bool` or `double`.
        expected: &'static str,
    },
    /// The compiler could not run (no thread could be started, or it failed unexpectedly).
    #[error("cannot compile expression: {0}")]
    Internal(String),
}

/// The step of cel-go's pipeline (and Talos's) that rejects an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// `env.Parse`: syntax, size and nesting limits.
    Parse,
    /// `env.Check`: names, overloads, types.
    Check,
    /// Talos's `OutputType().IsExactType` after checking.
    OutputType,
    /// Not cel-go's: the compiler itself could not run.
    Internal,
}

impl CompileError {
    fn invalid(stage: Stage, diagnostics: Vec<Diagnostic>, source: &str) -> Self {
        let rendered = Rendered(&diagnostics, source).to_string();
        CompileError::Invalid {
            stage,
            diagnostics,
            rendered,
        }
    }

    /// Which step rejected the expression.
    pub fn stage(&self) -> Stage {
        match self {
            CompileError::Invalid { stage, .. } => *stage,
            CompileError::OutputType { .. } => Stage::OutputType,
            CompileError::Internal(_) => Stage::Internal,
        }
    }
}

/// An evaluation failure: the expression compiled but could not produce a value for this
/// input (a missing map key, integer division by zero, overflow, a bad conversion …).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct EvalError {
    message: String,
}

impl EvalError {
    /// The message, in cel-go's wording where the two engines differ only in words.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// A compiled expression of either kind.
#[derive(Clone)]
struct Compiled {
    source: Arc<str>,
    program: Arc<Program>,
    output: check::types::Type,
    comparisons: Arc<[Comparison]>,
    identifiers: Arc<[String]>,
    /// The literal patterns of `matches()`, compiled with the expression.
    _patterns: patterns::Held,
}

impl fmt::Debug for Compiled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compiled")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

fn compile(kind: ExprKind, dialect: Dialect, source: &str) -> Result<Compiled, CompileError> {
    // Cheap checks first, on the caller's stack.
    match check_limits(source) {
        Ok(()) => {}
        Err(LimitExceeded::Size(size)) => {
            return Err(CompileError::invalid(
                Stage::Parse,
                vec![Diagnostic::nowhere(format!(
                    "expression code point size exceeds limit: size: {size}, limit {MAX_CODE_POINTS}"
                ))],
                source,
            ));
        }
        Err(LimitExceeded::Depth(offset)) => return Err(too_deep(offset, source)),
    }
    let owned: Arc<str> = Arc::from(source);
    let for_thread = Arc::clone(&owned);
    let handle = std::thread::Builder::new()
        .name("cel-compile".into())
        .stack_size(COMPILE_STACK_BYTES)
        .spawn(move || compile_on_this_thread(kind, dialect, &for_thread))
        .map_err(|e| CompileError::Internal(format!("cannot start the compiler thread: {e}")))?;
    let (program, output, comparisons, identifiers, literal_patterns) = handle
        .join()
        .map_err(|_| CompileError::Internal("the CEL compiler failed unexpectedly".into()))??;
    Ok(Compiled {
        source: owned,
        program: Arc::new(program),
        output,
        comparisons: comparisons.into(),
        identifiers: identifiers.into(),
        _patterns: patterns::Held::new(&literal_patterns),
    })
}

/// cel-go reports the nesting limit without a position.
fn too_deep(_offset: usize, source: &str) -> CompileError {
    CompileError::invalid(
        Stage::Parse,
        vec![Diagnostic::nowhere(format!(
            "expression recursion limit exceeded: {MAX_RECURSION_DEPTH}"
        ))],
        source,
    )
}

/// What the compiler thread hands back: the program, its output type, its comparisons and
/// identifiers as written, and the literal patterns of `matches()`.
type CompilerOutput = (
    Program,
    check::types::Type,
    Vec<Comparison>,
    Vec<String>,
    Vec<String>,
);

fn compile_on_this_thread(
    kind: ExprKind,
    dialect: Dialect,
    source: &str,
) -> Result<CompilerOutput, CompileError> {
    // Same byte offsets as `source`, so diagnostics point into the user's text.
    let shortened = limits::shorten_unary_runs(source);
    let expr = parse::parse(&shortened)
        .map_err(|diags| CompileError::invalid(Stage::Parse, diags, source))?;
    let mut expr = expr;
    let checked = check::check(kind.decls(dialect), source, &expr);
    if !checked.errors.is_empty() {
        return Err(CompileError::invalid(Stage::Check, checked.errors, source));
    }
    // From the tree as written, before the runtime rewrite changes its shape.
    let comparisons = compare::comparisons(&expr, source);
    let identifiers = compare::identifiers(&expr);
    let literal_patterns = runtime::prepare(&mut expr, &checked.types);
    // cel-core evaluates by the runtime types of the values, so the unchecked tree runs as
    // cel-go's checked program does.
    let ast = Ast::new_unchecked(expr, source);
    let program = kind
        .env()
        .program(&ast)
        .map_err(|e| CompileError::Internal(e.to_string()))?;
    Ok((
        program,
        checked.output,
        comparisons,
        identifiers,
        literal_patterns,
    ))
}

/// Compiles and requires the kind's exact output type (`dyn` is not accepted), as Talos does.
fn compile_typed(kind: ExprKind, dialect: Dialect, source: &str) -> Result<Compiled, CompileError> {
    let compiled = compile(kind, dialect, source)?;
    let want = kind.output();
    if !compiled.output.is_exact(&want) {
        return Err(CompileError::OutputType {
            found: compiled.output.display(),
            expected: if want == check::types::Type::Bool {
                "bool"
            } else {
                "double"
            },
        });
    }
    Ok(compiled)
}

fn eval_error(err: &cel_core::EvalError) -> EvalError {
    use cel_core::EvalErrorKind as K;
    let message = match err.kind {
        K::KeyNotFound => match err.message.strip_prefix("key not found: ") {
            Some(key) => format!("no such key: {key}"),
            None => err.message.clone(),
        },
        K::ModuloByZero => "modulus by zero".to_owned(),
        K::DivisionByZero => "division by zero".to_owned(),
        _ => err.message.clone(),
    };
    EvalError { message }
}

fn expect_output(value: Value, expected: &str) -> Result<Value, EvalError> {
    match value {
        Value::Error(e) => Err(eval_error(&e)),
        other => {
            let found = diag::type_name(&other.cel_type());
            if found == expected {
                Ok(other)
            } else {
                Err(EvalError {
                    message: format!("expression output type is {found}, expected {expected}"),
                })
            }
        }
    }
}

/// A [`Comparison`] evaluated in one trigger context.
#[derive(Debug, Clone, PartialEq)]
pub struct EvaluatedComparison {
    /// The comparison.
    pub comparison: Comparison,
    /// Its left side's value.
    pub left: AnyValue,
    /// Its right side's value.
    pub right: AnyValue,
    /// Whether it held (`None` when it gave an error).
    pub holds: Option<bool>,
}

/// A compiled `triggerExpression`: decides from a [`TriggerContext`] whether to act.
#[derive(Debug, Clone)]
pub struct TriggerExpr(Compiled);

/// A compiled `cgroupRankingExpression`: scores one candidate cgroup.
#[derive(Debug, Clone)]
pub struct RankingExpr(Compiled);

/// The variables of the ranking environment for one candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct RankingInput<'a> {
    /// `memory.max` in bytes; `None` when unlimited (`max`) or unreadable.
    pub memory_max: Option<u64>,
    /// `memory.current` in bytes, if readable.
    pub memory_current: Option<u64>,
    /// `memory.peak` in bytes, if readable (kernels before 5.19 have none).
    pub memory_peak: Option<u64>,
    /// Absolute cgroup directory.
    pub path: &'a str,
    /// The candidate's class.
    pub class: QosClass,
    /// The pod UID decoded from the path, `""` when it is not a pod (an extension: Talos has
    /// no such variable).
    pub pod_uid: &'a str,
    /// Who the pod is, when known (extensions: `pod_namespace`, `pod_name`, `labels`,
    /// `annotations`, `container_names`; `""`, empty maps and lists when unknown).
    pub pod: Option<&'a oomwarden_model::PodIdentity>,
    /// The lowest `oom_score_adj` of the candidate's processes besides a pod's sandbox, 0
    /// when none (an extension).
    pub oom_score_adj: i64,
    /// The kills of the candidate's workload in the recent window, 0 when none or no pod (an
    /// extension).
    pub workload_kills: u64,
    /// `memory.swap.current` in bytes, if read (extensions: read only when the ranking names
    /// `memory_swap_current` or `memory_swap_max`).
    pub memory_swap_current: Option<u64>,
    /// `memory.swap.max` in bytes; `None` when unlimited or unreadable.
    pub memory_swap_max: Option<u64>,
    /// `memory.min` in bytes; `None` when 0 or unreadable (extensions: read only when the
    /// ranking names one of `memory_min`, `memory_low`, `memory_high`).
    pub memory_min: Option<u64>,
    /// `memory.low` in bytes; `None` when 0 or unreadable.
    pub memory_low: Option<u64>,
    /// `memory.high` in bytes; `None` when unlimited or unreadable.
    pub memory_high: Option<u64>,
    /// The candidate's own `memory.pressure` `some avg10`, percent (0 unless read).
    pub pressure_some_avg10: f64,
    /// Its `full avg10`, percent (0 unless read).
    pub pressure_full_avg10: f64,
    /// Its growth, bytes per second (0 without an earlier reading).
    pub d_memory_current: f64,
}

impl TriggerExpr {
    /// Parses and checks a trigger expression (output must be `bool`).
    pub fn compile(source: &str) -> Result<Self, CompileError> {
        compile_typed(ExprKind::Trigger, Dialect::Oomwarden, source).map(TriggerExpr)
    }

    /// As [`TriggerExpr::compile`], in Talos 1.14's environment exactly: oomwarden's
    /// extension variables (`node_*`) are undeclared, as Talos would report them.
    pub fn compile_talos(source: &str) -> Result<Self, CompileError> {
        compile_typed(ExprKind::Trigger, Dialect::Talos, source).map(TriggerExpr)
    }

    /// The source text.
    pub fn source(&self) -> &str {
        &self.0.source
    }

    /// The comparisons written in it, in source order (see [`Comparison`]).
    pub fn comparisons(&self) -> &[Comparison] {
        &self.0.comparisons
    }

    /// Whether it names this variable (so that the daemon reads only the files its trigger
    /// uses).
    pub fn reads(&self, variable: &str) -> bool {
        self.0.identifiers.iter().any(|i| i == variable)
    }

    /// Each comparison with the values of its two sides and its result in `ctx`: what a
    /// person asks of a trigger that fired ("which threshold did it pass, by how much").
    /// A comparison whose sides cannot be evaluated alone (they read a comprehension's
    /// variable) is left out.
    pub fn evaluate_comparisons(&self, ctx: &TriggerContext) -> Vec<EvaluatedComparison> {
        let eval = |text: &str| -> Option<AnyValue> {
            AnyExpr::compile(ExprKind::Trigger, text)
                .ok()?
                .eval_trigger(ctx)
                .ok()
        };
        self.comparisons()
            .iter()
            .filter_map(|c| {
                let left = eval(&c.left)?;
                let right = eval(&c.right)?;
                let holds = eval(&c.text).and_then(|v| match v.text.as_str() {
                    "true" => Some(true),
                    "false" => Some(false),
                    _ => None,
                });
                Some(EvaluatedComparison {
                    comparison: c.clone(),
                    left,
                    right,
                    holds,
                })
            })
            .collect()
    }

    /// Evaluates against one cycle's context.
    pub fn eval(&self, ctx: &TriggerContext) -> Result<bool, EvalError> {
        match expect_output(self.0.program.eval(&trigger_activation(ctx)), "bool")? {
            Value::Bool(b) => Ok(b),
            _ => Err(EvalError {
                message: "expression output type is not bool".into(),
            }),
        }
    }
}

/// The context's variables as CEL values, each made when the expression reads it.
fn trigger_activation(
    ctx: &TriggerContext,
) -> LazyActivation<TriggerVar, impl Fn(TriggerVar) -> Value + Send + Sync + '_> {
    LazyActivation {
        names: trigger_variable,
        value: move |variable| trigger_value(ctx.value(variable)),
    }
}

fn trigger_value(v: Variable<'_>) -> Value {
    match v {
        Variable::Double(d) => Value::Double(d),
        Variable::ClassMap(m) => {
            let entries = QosClass::ALL
                .iter()
                .map(|c| (MapKey::Int(c.as_i64()), Value::Double(m.get(*c))));
            Value::Map(Arc::new(ValueMap::from_entries(entries)))
        }
        Variable::DurationNanos(ns) => Value::Duration(cel_core::Duration::from_nanos(ns)),
    }
}

impl RankingExpr {
    /// Whether it names this variable (so that the candidates' files it does not use are not
    /// read).
    pub fn reads(&self, variable: &str) -> bool {
        self.0.identifiers.iter().any(|i| i == variable)
    }

    /// Parses and checks a ranking expression (output must be `double`).
    pub fn compile(source: &str) -> Result<Self, CompileError> {
        compile_typed(ExprKind::Ranking, Dialect::Oomwarden, source).map(RankingExpr)
    }

    /// As [`RankingExpr::compile`], in Talos 1.14's environment exactly (no `pod_uid`).
    pub fn compile_talos(source: &str) -> Result<Self, CompileError> {
        compile_typed(ExprKind::Ranking, Dialect::Talos, source).map(RankingExpr)
    }

    /// The source text.
    pub fn source(&self) -> &str {
        &self.0.source
    }

    /// Scores one candidate.
    pub fn eval(&self, input: &RankingInput<'_>) -> Result<f64, EvalError> {
        match expect_output(self.0.program.eval(&ranking_activation(input)), "double")? {
            Value::Double(d) => Ok(d),
            _ => Err(EvalError {
                message: "expression output type is not double".into(),
            }),
        }
    }
}

/// A candidate's variables as CEL values, each made when the expression reads it.
fn ranking_activation<'a>(
    input: &'a RankingInput<'a>,
) -> LazyActivation<RankingVar, impl Fn(RankingVar) -> Value + Send + Sync + 'a> {
    let opt = |v: Option<u64>| Value::from_option(v.map(Value::UInt));
    LazyActivation {
        names: ranking_variable,
        value: move |variable| match variable {
            RankingVar::MemoryMax => opt(input.memory_max),
            RankingVar::MemoryCurrent => opt(input.memory_current),
            RankingVar::MemoryPeak => opt(input.memory_peak),
            RankingVar::MemorySwapCurrent => opt(input.memory_swap_current),
            RankingVar::MemorySwapMax => opt(input.memory_swap_max),
            RankingVar::MemoryMin => opt(input.memory_min),
            RankingVar::MemoryLow => opt(input.memory_low),
            RankingVar::MemoryHigh => opt(input.memory_high),
            RankingVar::PressureSomeAvg10 => Value::Double(input.pressure_some_avg10),
            RankingVar::PressureFullAvg10 => Value::Double(input.pressure_full_avg10),
            RankingVar::DMemoryCurrent => Value::Double(input.d_memory_current),
            RankingVar::Path => Value::String(Arc::from(input.path)),
            RankingVar::Class => Value::Int(input.class.as_i64()),
            RankingVar::PodUid => Value::String(Arc::from(input.pod_uid)),
            RankingVar::PodNamespace => text(input.pod.map(|p| p.namespace.as_str())),
            RankingVar::PodName => text(input.pod.map(|p| p.name.as_str())),
            RankingVar::Labels => string_map(input.pod.map(|p| &p.labels)),
            RankingVar::Annotations => string_map(input.pod.map(|p| &p.annotations)),
            RankingVar::ContainerNames => Value::List(
                input
                    .pod
                    .map(|p| {
                        p.containers
                            .iter()
                            .map(|c| Value::String(Arc::from(c.as_str())))
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            RankingVar::OomScoreAdj => Value::Int(input.oom_score_adj),
            RankingVar::WorkloadKills => {
                Value::Int(i64::try_from(input.workload_kills).unwrap_or(i64::MAX))
            }
        },
    }
}

fn text(s: Option<&str>) -> Value {
    Value::String(Arc::from(s.unwrap_or("")))
}

fn string_map(m: Option<&std::collections::BTreeMap<String, String>>) -> Value {
    let entries = m.into_iter().flatten().map(|(k, v)| {
        (
            MapKey::String(Arc::from(k.as_str())),
            Value::String(Arc::from(v.as_str())),
        )
    });
    Value::Map(Arc::new(ValueMap::from_entries(entries)))
}

/// An expression compiled in either environment without the output-type requirement, for
/// tools that show any value (`oomwarden eval --any`, the golden tests against cel-cpp).
#[derive(Debug, Clone)]
pub struct AnyExpr {
    kind: ExprKind,
    compiled: Compiled,
}

/// A value of any CEL type, rendered for people.
#[derive(Debug, Clone, PartialEq)]
pub struct AnyValue {
    /// The value's type in cel-go's spelling (`bool`, `double`, `list(int)` …).
    pub type_name: String,
    /// The value: `true`, `1000.0`, `'text'`, `[2, 4, 6]`, `optional.of(1u)` …
    pub text: String,
}

impl AnyValue {
    /// The value as people read it: a duration in Go's form to the millisecond (`1m30.25s`), the saturated
    /// `time_since_trigger` (before any trigger) as `never`, a double with at most three
    /// decimals; anything else as [`AnyValue::text`].
    pub fn shown(&self) -> String {
        match self.type_name.as_str() {
            "google.protobuf.Duration" => {
                let ns = self
                    .text
                    .strip_prefix("duration(")
                    .and_then(|t| t.strip_suffix("ns)"))
                    .and_then(|t| t.parse::<i64>().ok());
                match ns {
                    Some(i64::MAX) => "never".to_owned(),
                    // To the millisecond: nanoseconds of a sampling loop say nothing.
                    Some(ns) if ns.unsigned_abs() >= 1_000_000 => {
                        oomwarden_model::format_go_duration(ns - ns % 1_000_000)
                    }
                    Some(ns) => oomwarden_model::format_go_duration(ns),
                    None => self.text.clone(),
                }
            }
            "double" => match self.as_number() {
                Some(x) if x.is_finite() => oomwarden_model::format_rounded(x),
                _ => self.text.clone(),
            },
            _ => self.text.clone(),
        }
    }

    /// The value as a number: a double, int or uint as it is, a duration in seconds, a bool
    /// as 0 or 1; `None` for anything else.
    pub fn as_number(&self) -> Option<f64> {
        match self.type_name.as_str() {
            "double" => match self.text.as_str() {
                "nan" => Some(f64::NAN),
                "inf" => Some(f64::INFINITY),
                "-inf" => Some(f64::NEG_INFINITY),
                t => t.parse().ok(),
            },
            "int" | "uint" => self.text.parse().ok(),
            "bool" => Some(if self.text == "true" { 1.0 } else { 0.0 }),
            "google.protobuf.Duration" => {
                let ns: f64 = self
                    .text
                    .strip_prefix("duration(")?
                    .strip_suffix("ns)")?
                    .parse()
                    .ok()?;
                Some(ns / 1e9)
            }
            _ => None,
        }
    }
}

impl AnyExpr {
    /// Parses and checks in the given environment; any output type is accepted.
    pub fn compile(kind: ExprKind, source: &str) -> Result<Self, CompileError> {
        Ok(AnyExpr {
            kind,
            compiled: compile(kind, Dialect::Oomwarden, source)?,
        })
    }

    /// The checked output type, in cel-go's spelling.
    pub fn output_type(&self) -> String {
        self.compiled.output.display()
    }

    /// Evaluates a trigger-environment expression.
    pub fn eval_trigger(&self, ctx: &TriggerContext) -> Result<AnyValue, EvalError> {
        self.finish(self.compiled.program.eval(&trigger_activation(ctx)))
    }

    /// Evaluates a ranking-environment expression.
    pub fn eval_ranking(&self, input: &RankingInput<'_>) -> Result<AnyValue, EvalError> {
        self.finish(self.compiled.program.eval(&ranking_activation(input)))
    }

    /// The environment it was compiled in.
    pub fn kind(&self) -> ExprKind {
        self.kind
    }

    fn finish(&self, value: Value) -> Result<AnyValue, EvalError> {
        match value {
            Value::Error(e) => Err(eval_error(&e)),
            v => Ok(AnyValue {
                type_name: diag::type_name(&v.cel_type()),
                text: render_value(&v),
            }),
        }
    }
}

/// Renders a value the way Python's `repr` shows cel-cpp's results, so golden files compare.
fn render_value(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(b) => (if *b { "true" } else { "false" }).into(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Double(d) => render_double(*d),
        Value::String(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
        Value::Bytes(b) => format!("b'{}'", b.escape_ascii()),
        Value::List(items) => format!(
            "[{}]",
            items
                .iter()
                .map(render_value)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Map(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}: {}", render_value(&k.to_value()), render_value(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Duration(d) => format!("duration({}ns)", d.to_nanos()),
        Value::Optional(o) => match o.as_value() {
            Some(inner) => format!("optional.of({})", render_value(inner)),
            None => "optional.none()".into(),
        },
        other => format!("{other:?}"),
    }
}

fn render_double(d: f64) -> String {
    if d.is_nan() {
        "nan".into()
    } else if d.is_infinite() {
        (if d > 0.0 { "inf" } else { "-inf" }).into()
    } else if d.fract() == 0.0 && d.abs() < 1e16 {
        format!("{d:.1}")
    } else {
        format!("{d:?}")
    }
}
