//! `oomwarden eval`: evaluate an expression against variables, to try it before deploying.
//!
//! ```text
//! oomwarden eval trigger 'memory_full_avg10 > 10.0' --context ctx.json
//! oomwarden eval ranking --memory-current 1073741824 --class Burstable
//! oomwarden eval trigger --config oom.yaml --context -      # the configured expression
//! oomwarden eval variables --env trigger -o json            # what an expression can read
//! ```

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use oomwarden_config::Settings;
use oomwarden_expr::{AnyExpr, ExprKind, RankingExpr, RankingInput, TriggerExpr};
use oomwarden_model::variables::{self, Definition, Env, Origin};
use oomwarden_model::{QosClass, TriggerContext, format_number};
use serde_json::json;

use crate::commands::read_input;
use crate::exit::{Exit, Fail};
use crate::output::OutputArgs;

/// Which expression to evaluate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Kind {
    /// A `triggerExpression` (trigger environment, result `bool`).
    Trigger,
    /// A `cgroupRankingExpression` (ranking environment, result `double`).
    Ranking,
    /// List the variables an expression can read (both environments, or `--env`'s).
    Variables,
}

/// `--env` of `oomwarden eval variables`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum EnvArg {
    /// The trigger's variables.
    Trigger,
    /// The ranking's variables.
    Ranking,
}

/// Arguments of `oomwarden eval`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The environment, `trigger` or `ranking`; or `variables` to list what each can read.
    kind: Kind,
    /// With `variables`: list only this environment's.
    #[arg(long, value_enum, value_name = "trigger|ranking")]
    env: Option<EnvArg>,
    /// The expression. Without it, the expression of `--config` (or the default) is used.
    expression: Option<String>,
    /// Take the expression from this configuration file when none is given.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Trigger variables as JSON (`-` for standard input): a Talos `triggerContext` dump or a
    /// subset of it. Missing variables are 0 and `time_since_trigger` "never".
    #[arg(long, value_name = "FILE")]
    context: Option<PathBuf>,
    /// Ranking: `memory.max`, bytes or a quantity (`512Mi`, `1G`); omit or `max` for no
    /// limit.
    #[arg(long, value_name = "SIZE|max", value_parser = parse_limit)]
    memory_max: Option<Limit>,
    /// Ranking: `memory.current`, bytes or a quantity (`1Gi`); omit for unknown.
    #[arg(long, value_name = "SIZE", value_parser = super::parse_bytes)]
    memory_current: Option<u64>,
    /// Ranking: `memory.peak`, bytes or a quantity; omit for unknown.
    #[arg(long, value_name = "SIZE", value_parser = super::parse_bytes)]
    memory_peak: Option<u64>,
    /// Ranking: `memory.swap.current`, bytes or a quantity; omit for unknown.
    #[arg(long, value_name = "SIZE", value_parser = super::parse_bytes)]
    memory_swap_current: Option<u64>,
    /// Ranking: `memory.swap.max`, bytes or a quantity; omit or `max` for no limit.
    #[arg(long, value_name = "SIZE|max", value_parser = parse_limit)]
    memory_swap_max: Option<Limit>,
    /// Ranking: `memory.min`, bytes or a quantity; omit or 0 for none.
    #[arg(long, value_name = "SIZE", value_parser = super::parse_bytes)]
    memory_min: Option<u64>,
    /// Ranking: `memory.low`, bytes or a quantity; omit or 0 for none.
    #[arg(long, value_name = "SIZE", value_parser = super::parse_bytes)]
    memory_low: Option<u64>,
    /// Ranking: `memory.high`, bytes or a quantity; omit or `max` for no limit.
    #[arg(long, value_name = "SIZE|max", value_parser = parse_limit)]
    memory_high: Option<Limit>,
    /// Ranking: the candidate's own `memory.pressure` some avg10 (`pressure_some_avg10`).
    #[arg(long, value_name = "PERCENT", default_value_t = 0.0)]
    pressure_some_avg10: f64,
    /// Ranking: its full avg10 (`pressure_full_avg10`).
    #[arg(long, value_name = "PERCENT", default_value_t = 0.0)]
    pressure_full_avg10: f64,
    /// Ranking: the candidate's growth in bytes per second (`d_memory_current`).
    #[arg(
        long,
        value_name = "BYTES_PER_SECOND",
        default_value_t = 0.0,
        allow_negative_numbers = true
    )]
    d_memory_current: f64,
    /// Ranking: the cgroup path.
    #[arg(
        long,
        default_value = "/sys/fs/cgroup/kubepods/besteffort/pod00000000-0000-0000-0000-000000000000"
    )]
    path: String,
    /// Ranking: the class (`Besteffort` … `System`, or 0 … 4).
    #[arg(long, default_value = "Besteffort", value_parser = parse_class)]
    class: QosClass,
    /// Ranking: the pod's namespace (`pod_namespace`; empty when unknown).
    #[arg(long, value_name = "NAMESPACE")]
    namespace: Option<String>,
    /// Ranking: the pod's name (`pod_name`).
    #[arg(long, value_name = "NAME")]
    pod_name: Option<String>,
    /// Ranking: a label of the pod (`labels`), repeatable.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = parse_pair)]
    labels: Vec<(String, String)>,
    /// Ranking: an annotation of the pod (`annotations`), repeatable.
    #[arg(long = "annotation", value_name = "KEY=VALUE", value_parser = parse_pair)]
    annotations: Vec<(String, String)>,
    /// Ranking: a container name of the pod (`container_names`), repeatable.
    #[arg(long = "container-name", value_name = "NAME")]
    container_names: Vec<String>,
    /// Ranking: the lowest `oom_score_adj` of the candidate's processes (`oom_score_adj`).
    #[arg(long, value_name = "-1000..1000", default_value_t = 0, allow_negative_numbers = true,
          value_parser = clap::value_parser!(i64).range(-1000..=1000))]
    oom_score_adj: i64,
    /// Ranking: the kills of the candidate's workload in the last hour (`workload_kills`).
    #[arg(long, value_name = "N", default_value_t = 0)]
    workload_kills: u64,
    /// Accept any result type (explore sub-expressions) instead of requiring bool/double.
    #[arg(long)]
    any: bool,
    #[command(flatten)]
    output: OutputArgs,
}

/// `--memory-max`: a size or `max`.
#[derive(Debug, Clone, Copy)]
struct Limit(Option<u64>);

fn parse_limit(text: &str) -> Result<Limit, String> {
    if text == "max" {
        return Ok(Limit(None));
    }
    super::parse_bytes(text).map(|b| Limit(Some(b)))
}

fn parse_pair(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .filter(|(k, _)| !k.is_empty())
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("expected KEY=VALUE, found {text:?}"))
}

fn parse_class(text: &str) -> Result<QosClass, String> {
    text.parse::<i64>()
        .ok()
        .and_then(QosClass::from_i64)
        .or_else(|| QosClass::ALL.into_iter().find(|c| c.name().eq_ignore_ascii_case(text)))
        .ok_or_else(|| format!("unknown class {text:?}; use Besteffort, Burstable, Guaranteed, Podruntime, System or 0-4"))
}

/// The outcome of one evaluation, for printing.
struct Outcome {
    expression: String,
    result: Result<(String, String), String>, // (type, value) or error
}

pub(crate) fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<Exit> {
    let kind = match args.kind {
        Kind::Variables => return variables(args, out),
        Kind::Trigger => ExprKind::Trigger,
        Kind::Ranking => ExprKind::Ranking,
    };
    if args.env.is_some() {
        return Err(Fail::usage("--env goes with `oomwarden eval variables`").into());
    }
    if kind == ExprKind::Trigger && describes_a_candidate(args) {
        return Err(Fail::usage("--memory-*, --namespace, --pod-name, --label, --annotation, --container-name and --oom-score-adj describe a ranking candidate; a trigger reads --context").into());
    }
    if kind == ExprKind::Ranking && args.context.is_some() {
        return Err(Fail::usage(
            "--context describes trigger variables; a ranking reads --memory-*, --path and --class",
        )
        .into());
    }
    let expression = match (&args.expression, &args.config) {
        (Some(e), None) => e.clone(),
        (Some(_), Some(_)) => {
            return Err(Fail::usage("give either an EXPRESSION or --config, not both").into());
        }
        (None, config) => {
            let (text, name) = match config {
                Some(path) => (read_input(path)?, path.display().to_string()),
                None => (String::new(), "<defaults>".to_owned()),
            };
            match Settings::from_yaml(&text, &name) {
                Ok(s) => match kind {
                    ExprKind::Trigger => s.oom.trigger.source().to_owned(),
                    ExprKind::Ranking => s.oom.ranking.source().to_owned(),
                },
                Err(errors) => {
                    return Err(Fail::failure(errors.to_string()).into());
                }
            }
        }
    };
    let outcome = match kind {
        ExprKind::Trigger => {
            let ctx = match &args.context {
                Some(path) => TriggerContext::from_json(&read_input(path)?)
                    .with_context(|| format!("{}: not a trigger context", path.display()))?,
                None => TriggerContext::new(),
            };
            evaluate_trigger(&expression, &ctx, args.any)
        }
        ExprKind::Ranking => {
            let memory_max = args.memory_max.and_then(|l| l.0);
            let identity = oomwarden_kube::decode_cgroup_path(&args.path);
            let pod = pod_identity(args, identity.pod_uid.as_deref());
            let input = RankingInput {
                memory_max,
                memory_current: args.memory_current,
                memory_peak: args.memory_peak,
                path: &args.path,
                class: args.class,
                pod_uid: identity.pod_uid.as_deref().unwrap_or(""),
                pod: pod.as_ref(),
                oom_score_adj: args.oom_score_adj,
                workload_kills: args.workload_kills,
                memory_swap_current: args.memory_swap_current,
                memory_swap_max: args.memory_swap_max.and_then(|l| l.0),
                memory_min: args.memory_min.filter(|v| *v > 0),
                memory_low: args.memory_low.filter(|v| *v > 0),
                memory_high: args.memory_high.and_then(|l| l.0),
                pressure_some_avg10: args.pressure_some_avg10,
                pressure_full_avg10: args.pressure_full_avg10,
                d_memory_current: args.d_memory_current,
            };
            evaluate_ranking(&expression, &input, args.any)
        }
    };
    print(args, kind, &outcome, out)
}

/// The pod the identity flags describe (none when no flag is given).
fn pod_identity(args: &Args, uid: Option<&str>) -> Option<oomwarden_model::PodIdentity> {
    let given = args.namespace.is_some()
        || args.pod_name.is_some()
        || !args.labels.is_empty()
        || !args.annotations.is_empty()
        || !args.container_names.is_empty();
    given.then(|| oomwarden_model::PodIdentity {
        uid: uid.unwrap_or("").to_owned(),
        namespace: args.namespace.clone().unwrap_or_default(),
        name: args.pod_name.clone().unwrap_or_default(),
        labels: args.labels.iter().cloned().collect(),
        annotations: args.annotations.iter().cloned().collect(),
        containers: args.container_names.clone(),
        source: oomwarden_model::IdentitySource::Cri,
    })
}

fn evaluate_trigger(expression: &str, ctx: &TriggerContext, any: bool) -> Outcome {
    let result = if any {
        evaluate(AnyExpr::compile(ExprKind::Trigger, expression), |e| {
            e.eval_trigger(ctx).map(|v| (v.type_name, v.text))
        })
    } else {
        evaluate(TriggerExpr::compile(expression), |e| {
            e.eval(ctx).map(|b| ("bool".to_owned(), b.to_string()))
        })
    };
    Outcome {
        expression: expression.to_owned(),
        result,
    }
}

fn evaluate_ranking(expression: &str, input: &RankingInput<'_>, any: bool) -> Outcome {
    let result = if any {
        evaluate(AnyExpr::compile(ExprKind::Ranking, expression), |e| {
            e.eval_ranking(input).map(|v| (v.type_name, v.text))
        })
    } else {
        evaluate(RankingExpr::compile(expression), |e| {
            e.eval(input)
                .map(|d| ("double".to_owned(), format_number(d)))
        })
    };
    Outcome {
        expression: expression.to_owned(),
        result,
    }
}

/// Compile errors as they are; evaluation errors prefixed so the two are told apart.
fn evaluate<T>(
    compiled: Result<T, oomwarden_expr::CompileError>,
    eval: impl FnOnce(T) -> Result<(String, String), oomwarden_expr::EvalError>,
) -> Result<(String, String), String> {
    let expr = compiled.map_err(|e| e.to_string())?;
    eval(expr).map_err(|e| format!("evaluation failed: {e}"))
}

fn print(
    args: &Args,
    kind: ExprKind,
    outcome: &Outcome,
    out: &mut impl Write,
) -> anyhow::Result<Exit> {
    let kind = match kind {
        ExprKind::Trigger => "trigger",
        ExprKind::Ranking => "ranking",
    };
    let value = match &outcome.result {
        Ok((type_name, text)) => {
            json!({"kind": kind, "expression": outcome.expression, "type": type_name, "result": text})
        }
        Err(e) => json!({"kind": kind, "expression": outcome.expression, "error": e}),
    };
    if !args.output.structured(&value, out)? {
        match &outcome.result {
            Ok((type_name, text)) if args.any => writeln!(out, "{text} ({type_name})")?,
            Ok((_, text)) => writeln!(out, "{text}")?,
            Err(e) => return Err(Fail::failure(e.clone()).into()),
        }
    }
    Ok(if outcome.result.is_ok() {
        Exit::Ok
    } else {
        Exit::Failure
    })
}

/// Whether a flag describing a ranking candidate was given.
fn describes_a_candidate(args: &Args) -> bool {
    args.memory_max.is_some()
        || args.memory_current.is_some()
        || args.memory_peak.is_some()
        || args.namespace.is_some()
        || args.pod_name.is_some()
        || !args.labels.is_empty()
        || !args.annotations.is_empty()
        || !args.container_names.is_empty()
        || args.oom_score_adj != 0
}

/// `oomwarden eval variables`: the catalogue, as a table (`-o wide`: where each is read from
/// and what it means) or one JSON/YAML object per variable.
fn variables(args: &Args, out: &mut impl Write) -> anyhow::Result<Exit> {
    if args.expression.is_some()
        || args.config.is_some()
        || args.context.is_some()
        || describes_a_candidate(args)
        || args.any
    {
        return Err(Fail::usage("`oomwarden eval variables` takes only --env and -o; it lists the variables, it evaluates nothing").into());
    }
    let wanted = args.env.map(|e| match e {
        EnvArg::Trigger => Env::Trigger,
        EnvArg::Ranking => Env::Ranking,
    });
    let rows: Vec<Definition> = variables::catalogue()
        .filter(|d| wanted.is_none_or(|w| d.env == w))
        .collect();
    if args.output.structured(&rows, out)? {
        return Ok(Exit::Ok);
    }
    let wide = args.output.is_wide();
    let mut table: Vec<[String; 7]> = vec![[
        "NAME".into(),
        "ENV".into(),
        "TYPE".into(),
        "UNIT".into(),
        "ORIGIN".into(),
        "SOURCE".into(),
        "DESCRIPTION".into(),
    ]];
    table.extend(rows.iter().map(|d| {
        [
            d.name.to_owned(),
            d.env.name().to_owned(),
            d.ty.cel_go().to_owned(),
            d.unit.map_or("-", |u| u.name()).to_owned(),
            match d.origin {
                Origin::Talos => "talos",
                Origin::Oomwarden => "oomwarden",
            }
            .to_owned(),
            d.source.describe().to_owned(),
            d.description.to_owned(),
        ]
    }));
    let columns = if wide { 7 } else { 5 };
    let widths: Vec<usize> = (0..columns)
        .map(|i| {
            table
                .iter()
                .filter_map(|row| row.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in &table {
        let mut line = String::new();
        for (i, (cell, width)) in row.iter().zip(&widths).enumerate() {
            if i + 1 == columns {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  "));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(Exit::Ok)
}
