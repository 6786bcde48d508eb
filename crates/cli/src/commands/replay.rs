//! `oomwarden replay`: a recording through the OOM handler's own decision code, under one or
//! more configurations: each trigger firing, the ranking, the victim and the context; where
//! two configurations differ; a timeline picture.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use oomwarden_config::Settings;
use oomwarden_daemon::CycleOutcome as CycleResult;
use oomwarden_daemon::replay::{self, Replay, TriggeredCycle};
use oomwarden_model::variables::Unit;
use oomwarden_model::{
    ActionRecord, Outcome, PerClass, QosClass, Scalar, TriggerContext, TriggerVar,
};
use oomwarden_recording::{Recording, parse};
use serde::Serialize;

use crate::commands::builtin;
use crate::exit::{Exit, Fail};

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// For people (`table` and `wide` are the same report).
    #[value(aliases = ["table", "wide"])]
    Text,
    /// One JSON object per decision, then one summary per configuration.
    Json,
    /// The same objects as YAML documents.
    Yaml,
}

/// Arguments of `oomwarden replay`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The recording (`oomwarden record`, `run --record`, a flight-recorder file); `-` is
    /// standard input.
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
    /// Replay a recording shipped with oomwarden instead (`--list-builtins` names them).
    #[arg(long, value_name = "NAME", conflicts_with = "file")]
    builtin: Option<String>,
    /// List the built-in recordings.
    #[arg(long)]
    list_builtins: bool,
    /// A configuration to replay under; repeat it to compare configurations. Default: the
    /// configuration the recording was made under, else the embedded defaults.
    #[arg(long = "config", value_name = "FILE")]
    configs: Vec<PathBuf>,
    /// Draw the timeline to this file (`.svg` or `.png`); may be repeated.
    #[arg(long, value_name = "FILE")]
    plot: Vec<PathBuf>,
    /// Output format: text (also `table`, `wide`), json or yaml.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    output: Format,
    /// Candidates shown per ranking (text output).
    #[arg(long, value_name = "N", default_value_t = 5)]
    top: usize,
    /// Instead of the report: compare the first configuration's decisions with the daemon's own
    /// records (`actions.jsonl`) over the recording's span; exit 1 when they differ.
    #[arg(long, value_name = "ACTIONS.jsonl")]
    check_against: Option<PathBuf>,
    /// After a kill the recording did not have, estimate the memory figures: the victim's
    /// memory, as recorded in each later cycle, given back to `MemAvailable` and taken out of
    /// its parents' `memory.current` (swap likewise). PSI stays as recorded; the decisions
    /// after it stay marked.
    #[arg(long, conflicts_with = "check_against")]
    estimate_memory: bool,
}

/// A configuration to replay under, with the name shown for it.
struct Config {
    name: String,
    settings: Settings,
}

/// The recording to replay and its name; a recording cut short is marked (see
/// [`Recording::truncated`]).
fn load_recording(args: &Args) -> anyhow::Result<(String, Recording)> {
    let (name, bytes) = match &args.builtin {
        Some(name) => {
            let b = builtin::find(name).ok_or_else(|| {
                anyhow::anyhow!(
                    "no built-in recording {name:?}; there are: {}",
                    builtin::names().join(", ")
                )
            })?;
            (format!("{name} (built-in)"), b.bytes.to_vec())
        }
        None => {
            let path = args.file.as_deref().unwrap_or(Path::new("-"));
            (
                path.display().to_string(),
                crate::commands::read_input_bytes(path)?,
            )
        }
    };
    let recording = decode(&name, &bytes)?;
    Ok((name, recording))
}

/// A recording from its bytes (gzip or text); one cut short is marked.
pub(crate) fn decode(name: &str, bytes: &[u8]) -> anyhow::Result<Recording> {
    let (text, warning) = oomwarden_recording::decode(bytes)
        .with_context(|| format!("{name} is not a usable recording"))?;
    let mut recording =
        parse(&text).with_context(|| format!("{name} is not a usable recording"))?;
    // A gzip stream that ends early says why better than a missing end line.
    match (warning, &mut recording.truncated) {
        (Some(w), Some(reason)) => *reason = w,
        (Some(w), None) => recording.mark_truncated(w),
        (None, _) => {}
    }
    Ok(recording)
}

fn configs(args: &Args, recording: &Recording) -> anyhow::Result<Vec<Config>> {
    if args.configs.is_empty() {
        return Ok(vec![match &recording.meta.config {
            Some(text) => Config {
                name: "the recording's configuration".to_owned(),
                settings: Settings::from_yaml(text, "the recording's configuration")
                    .map_err(|e| anyhow::anyhow!("{e}"))?,
            },
            None => Config {
                name: "the embedded defaults".to_owned(),
                settings: Settings::defaults().map_err(|e| anyhow::anyhow!("{e}"))?,
            },
        }]);
    }
    args.configs
        .iter()
        .map(|path| {
            let settings = oomwarden_node::load_settings(Some(path), &Default::default())
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            Ok(Config {
                name: path.display().to_string(),
                settings,
            })
        })
        .collect()
}

pub(crate) fn run(args: &Args, out: &mut impl Write, err: &mut impl Write) -> anyhow::Result<Exit> {
    if args.list_builtins {
        for b in builtin::ALL {
            writeln!(out, "{:<12} {}", b.name, b.summary)?;
        }
        return Ok(Exit::Ok);
    }
    if args.file.is_none() && args.builtin.is_none() {
        return Err(Fail::usage(format!("oomwarden replay: give a recording FILE (made by `oomwarden record` or `run --record`, or a flight-recorder window), or replay one shipped with oomwarden: --builtin {} (--list-builtins says what each is)",
            builtin::names().join("|"))).into());
    }
    // The pictures' paths and formats are checked before any work.
    for path in &args.plot {
        if let Err(e) = oomwarden_plot::check_output(path) {
            return Err(Fail::usage(format!("oomwarden: {e}")).into());
        }
    }
    let (name, recording) = match load_recording(args) {
        Ok((name, recording)) => {
            if let Some(reason) = &recording.truncated {
                writeln!(
                    err,
                    "oomwarden: {name} is truncated: {reason}; replaying its {} complete cycles, the last (possibly incomplete) one left out",
                    recording.cycles.len()
                )?;
            }
            (name, recording)
        }
        Err(e) => {
            return Err(Fail::failure(format!("oomwarden: {e:#}")).into());
        }
    };
    let configs = match configs(args, &recording) {
        Ok(c) => c,
        Err(e) => {
            return Err(Fail::failure(format!("{e:#}")).into());
        }
    };
    let mut replays = Vec::new();
    for c in &configs {
        let (layout, warning) = match replay::layout_for(&recording, &c.settings) {
            Ok(l) => l,
            Err(e) => {
                return Err(Fail::failure(format!("oomwarden: {}: {e}", c.name)).into());
            }
        };
        if let Some(w) = warning {
            writeln!(err, "warning: {}: {w}", c.name)?;
        }
        replays.push(replay::replay_with(
            recording.clone(),
            c.settings.clone(),
            layout,
            if args.estimate_memory {
                replay::AfterKill::EstimateMemory
            } else {
                replay::AfterKill::AsRecorded
            },
        ));
    }
    // A replay that did not read what the recorded daemon read would report decisions on
    // figures nobody recorded (found: a recording made with a relative --cgroup-root replayed
    // as "the trigger never fired", exit 0).
    for (c, r) in configs.iter().zip(&replays) {
        if let Some(why) = &r.mismatch {
            return Err(Fail::failure(format!("oomwarden: {name}: the replay under {} does not read what the recording holds: {}; no decision of it would describe the node",
                c.name,
                crate::terminal::clean(why))).into());
        }
    }
    let start = recording.cycles.first().map_or(0, |c| c.at_ns);
    // A check prints its verdict instead of the report.
    match (args.output, &args.check_against) {
        (_, Some(_)) => {}
        (Format::Text, None) => text(out, &name, &recording, &configs, &replays, start, args.top)?,
        (Format::Json, None) => json(out, &configs, &replays, start, false)?,
        (Format::Yaml, None) => json(out, &configs, &replays, start, true)?,
    }
    for path in &args.plot {
        let timeline = timeline(&name, &recording, &configs, &replays, start);
        if let Err(e) = oomwarden_plot::render(&timeline, path) {
            return Err(Fail::failure(format!("oomwarden: {e}")).into());
        }
        writeln!(err, "drew {}", path.display())?;
    }
    let verdict = match &args.check_against {
        Some(actions) => match replays.first() {
            Some(first) => check_against(actions, &recording, first, out)?,
            None => {
                return Err(
                    Fail::failure("oomwarden: no configuration was replayed to check").into(),
                );
            }
        },
        None => Exit::Ok,
    };
    // A cut recording is said by the exit status too, unless something worse happened.
    Ok(match verdict {
        Exit::Ok if recording.truncated.is_some() => Exit::Truncated,
        other => other,
    })
}

fn offset(at_ns: u64, start: u64) -> String {
    #[allow(clippy::cast_precision_loss)] // display only
    let s = at_ns.saturating_sub(start) as f64 / 1e9;
    format!("+{s:.3}s")
}

fn letter(i: usize) -> char {
    char::from(b'A'.saturating_add(u8::try_from(i % 26).unwrap_or(0)))
}

/// The victim's path without the cgroup root, so lines stay short; no control character a
/// directory name may hold is printed.
fn short(path: &str, root: &str) -> String {
    crate::terminal::clean(
        path.strip_prefix(root)
            .map(|p| p.trim_start_matches('/'))
            .unwrap_or(path),
    )
    .into_owned()
}

/// Whether `name` occurs in `source` as a whole identifier.
fn mentions(source: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    source.match_indices(name).any(|(i, _)| {
        let before = source.get(..i).and_then(|s| s.chars().last());
        let after = source.get(i + name.len()..).and_then(|s| s.chars().next());
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// The context variables the trigger expression reads, compactly, with their units (the
/// catalogue's): PSI averages in percent, stall rates (µs of stall per second) in ms/s, memory
/// in Ki/Mi/Gi and its rates per second, `time_since_trigger` rounded (`never` before the
/// first trigger).
fn why(ctx: &TriggerContext, trigger: &str) -> String {
    let mut parts = Vec::new();
    for variable in TriggerVar::all() {
        let name = variable.name();
        if !mentions(trigger, name) {
            continue;
        }
        let unit = variable.definition().unit;
        let shown = match ctx.value(variable) {
            oomwarden_model::Variable::Double(v) => with_unit(unit, v),
            oomwarden_model::Variable::DurationNanos(ns) => duration_for_people(ns),
            oomwarden_model::Variable::ClassMap(map) => {
                let entries: Vec<String> = QosClass::ALL
                    .iter()
                    .filter(|c| map.get(**c) != 0.0)
                    .map(|c| format!("{} {}", c.name(), with_unit(unit, map.get(*c))))
                    .collect();
                if entries.is_empty() {
                    "0 for every class".to_owned()
                } else {
                    entries.join(", ")
                }
            }
        };
        parts.push(format!("{name}: {shown}"));
    }
    parts.join("; ")
}

/// A trigger variable's value in its unit, for people.
fn with_unit(unit: Option<Unit>, v: f64) -> String {
    let size = || {
        if v.is_finite() && v.abs() < 1.8e19 {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let b = v.abs().round() as u64;
            let sign = if v < 0.0 { "-" } else { "" };
            format!("{sign}{}", crate::human::bytes(b))
        } else {
            crate::human::number(v)
        }
    };
    match unit {
        Some(Unit::Bytes) => size(),
        Some(Unit::BytesPerSecond) => format!("{}/s", size()),
        Some(Unit::Percent) => format!("{} %", crate::human::number(round_to(v, 2))),
        Some(Unit::PercentPerSecond) => format!("{} %/s", crate::human::number(round_to(v, 2))),
        // Stall time in µs; its rate in µs per second, shown as ms of stall per second.
        Some(Unit::Microseconds) => format!("{} s", crate::human::number(round_to(v / 1e6, 1))),
        Some(Unit::MicrosecondsPerSecond) => {
            format!("{} ms/s", crate::human::number(round_to(v / 1000.0, 1)))
        }
        Some(Unit::PagesPerSecond) => {
            format!("{} pages/s", crate::human::number(round_to(v, 0)))
        }
        Some(Unit::EventsPerSecond) => {
            format!("{} events/s", crate::human::number(round_to(v, 2)))
        }
        Some(Unit::Nanoseconds | Unit::Class | Unit::OomScoreAdj) | None => crate::human::number(v),
    }
}

fn round_to(v: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (v * f).round() / f
}

/// A duration rounded to the millisecond in Go's form; `never` for the saturated value
/// `time_since_trigger` has before the first trigger.
fn duration_for_people(ns: i64) -> String {
    if ns == i64::MAX {
        return "never".to_owned();
    }
    oomwarden_model::format_go_duration(ns - ns % 1_000_000)
}

/// A score as the ranking gives it; when the ranking weighs memory, also as a size.
fn score_for_people(score: f64, ranking: &str) -> String {
    let number = oomwarden_model::format_number(score);
    let bytes_like = mentions(ranking, "memory_current") || mentions(ranking, "memory_peak");
    if bytes_like && (1024.0..1.8e19).contains(&score) {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let b = score.round() as u64;
        format!("{number} (≈{} of memory)", crate::human::bytes(b))
    } else {
        number
    }
}

fn text(
    out: &mut impl Write,
    name: &str,
    recording: &Recording,
    configs: &[Config],
    replays: &[Replay],
    start: u64,
    top: usize,
) -> anyhow::Result<()> {
    let m = &recording.meta;
    writeln!(out, "recording: {name}")?;
    if let Some(d) = &m.description {
        writeln!(out, "  {d}")?;
    }
    #[allow(clippy::cast_precision_loss)] // display only
    let span = recording.span_ns() as f64 / 1e9;
    writeln!(
        out,
        "  {} cycles over {span:.1} s, every {} ms; layout {}; recorded by oomwarden {} ({}){}{}",
        recording.cycles.len(),
        m.interval_ms,
        m.layout,
        m.version,
        m.source,
        m.hostname
            .as_deref()
            .map(|h| format!(" on {h}"))
            .unwrap_or_default(),
        m.kernel
            .as_deref()
            .map(|k| format!(", kernel {k}"))
            .unwrap_or_default(),
    )?;
    for (i, (c, r)) in configs.iter().zip(replays).enumerate() {
        writeln!(out)?;
        writeln!(out, "{}: {}", letter(i), c.name)?;
        for d in &r.decisions {
            decision(out, d, &c.settings, &m.cgroup_root, start, top)?;
        }
        summary(out, r, &c.settings, m.interval_ms)?;
    }
    if replays.len() > 1 {
        differences(out, configs, replays, &m.cgroup_root, start)?;
    }
    Ok(())
}

fn decision(
    out: &mut impl Write,
    d: &TriggeredCycle,
    settings: &Settings,
    root: &str,
    start: u64,
    top: usize,
) -> anyhow::Result<()> {
    let r = &d.record;
    // A stage's record says its own condition (its `when`) as the trigger expression.
    let trigger = r
        .trigger_expression
        .as_deref()
        .filter(|_| r.stage.is_some())
        .unwrap_or(settings.oom.trigger.source());
    let ranking = settings.oom.ranking.source();
    let victim = r.victim.as_deref().map(|v| short(v, root));
    writeln!(
        out,
        "  {:>9}  {:<18} {}{}{}",
        offset(r.monotonic_ns, start),
        r.outcome.name(),
        r.stage
            .as_deref()
            .map(|s| format!("stage {s}: "))
            .unwrap_or_default(),
        victim.as_deref().unwrap_or("(no victim)"),
        match (&r.class, victim.is_some()) {
            (Some(class), true) =>
                format!("  [{class}, score {}]", score_for_people(r.score, ranking)),
            _ => String::new(),
        }
    )?;
    if d.estimated_memory {
        writeln!(out, "             {ESTIMATED_MEMORY}")?;
    } else if d.after_divergence {
        writeln!(out, "             {AFTER_DIVERGENCE}")?;
    }
    if let Ok(ctx) = TriggerContext::from_json(&r.trigger_context) {
        writeln!(out, "             why: {}", why(&ctx, trigger))?;
        // Each comparison of the trigger (a stage's own condition for a stage's record) with
        // the value it had: which threshold was passed.
        let stage_condition = r
            .stage
            .as_ref()
            .and_then(|_| oomwarden_expr::TriggerExpr::compile(trigger).ok());
        let held: Vec<String> = stage_condition
            .as_ref()
            .unwrap_or(&settings.oom.trigger)
            .evaluate_comparisons(&ctx)
            .into_iter()
            .map(|c| {
                format!(
                    "{} = {} {} {}{}",
                    c.comparison
                        .left
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" "),
                    c.left.shown(),
                    c.comparison.op,
                    c.comparison.right,
                    match c.holds {
                        Some(true) => "",
                        Some(false) => " (did not hold)",
                        None => " (error)",
                    }
                )
            })
            .collect();
        if !held.is_empty() {
            let what = if r.stage.is_some() { "when" } else { "trigger" };
            writeln!(out, "             {what}: {}", held.join("; "))?;
        }
    }
    ranking_rows(out, d, ranking, root, top)
}

/// A decision's ranking, highest score first, `top` rows.
fn ranking_rows(
    out: &mut impl Write,
    d: &TriggeredCycle,
    ranking: &str,
    root: &str,
    top: usize,
) -> anyhow::Result<()> {
    let mut ranked: Vec<_> = d.ranking.iter().collect();
    // Highest score first; the unscored after, in candidate order.
    ranked.sort_by(|a, b| {
        b.score
            .unwrap_or(f64::NEG_INFINITY)
            .total_cmp(&a.score.unwrap_or(f64::NEG_INFINITY))
    });
    let bytes_like = mentions(ranking, "memory_current") || mentions(ranking, "memory_peak");
    for (n, c) in ranked.iter().take(top).enumerate() {
        // With a ranking that weighs memory, the score also as a size, in a column of its own.
        let size = match c.score {
            Some(x) if bytes_like && x.is_finite() && (1024.0..1.8e19).contains(&x) => {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let b = x.round() as u64;
                format!("≈{}", crate::human::bytes(b))
            }
            _ => String::new(),
        };
        writeln!(
            out,
            "             {} {:<10} {:>14} {:>10}  {}{}",
            if n == 0 { "ranking:" } else { "        " },
            c.class.name(),
            c.score
                .map(oomwarden_model::format_number)
                .unwrap_or_else(|| "-".to_owned()),
            size,
            short(&c.path, root),
            if c.eligible {
                String::new()
            } else {
                format!("  ({})", c.reason)
            }
        )?;
    }
    if ranked.len() > top {
        writeln!(out, "                      … {} more", ranked.len() - top)?;
    }
    Ok(())
}

/// What a decision after a kill the recording did not have is marked with.
const AFTER_DIVERGENCE: &str = "after a kill the recording did not have: the node's figures here no longer describe this policy's node";

/// The same, with the memory estimated (`--estimate-memory`).
const ESTIMATED_MEMORY: &str = "after a kill the recording did not have: memory estimated (the victims' recorded memory given back), PSI and reclaim as recorded";

fn summary(
    out: &mut impl Write,
    r: &Replay,
    settings: &Settings,
    recorded_every_ms: u64,
) -> anyhow::Result<()> {
    let mut by_outcome: BTreeMap<&str, usize> = BTreeMap::new();
    let mut after: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_stage: BTreeMap<String, usize> = BTreeMap::new();
    let mut fired = 0;
    for d in &r.decisions {
        if d.after_divergence {
            *after.entry(d.record.outcome.name()).or_default() += 1;
            continue;
        }
        match &d.record.stage {
            Some(stage) => {
                *by_stage
                    .entry(format!("{stage} {}", d.record.outcome.name()))
                    .or_default() += 1;
            }
            None => {
                fired += 1;
                *by_outcome.entry(d.record.outcome.name()).or_default() += 1;
            }
        }
    }
    let errors = r
        .cycles
        .iter()
        .filter(|c| matches!(c.result, CycleResult::Skipped(_)))
        .count();
    let outcomes: Vec<String> = by_outcome.iter().map(|(k, v)| format!("{v} {k}")).collect();
    let mut firings = match fired {
        0 => "the trigger never fired".to_owned(),
        1 => format!("the trigger fired once: {}", outcomes.join(", ")),
        n => format!("the trigger fired {n} times: {}", outcomes.join(", ")),
    };
    if !by_stage.is_empty() {
        let stages: Vec<String> = by_stage.iter().map(|(k, v)| format!("{v} {k}")).collect();
        firings.push_str(&format!("; stages: {}", stages.join(", ")));
    }
    if !after.is_empty() {
        let n: usize = after.values().sum();
        let kinds: Vec<String> = after.iter().map(|(k, v)| format!("{v} {k}")).collect();
        let figures = match r.after_kill {
            replay::AfterKill::AsRecorded => "figures the first kill would have changed",
            replay::AfterKill::EstimateMemory => "estimated memory and recorded PSI",
        };
        firings.push_str(&format!("; {n} more on {figures} ({})", kinds.join(", ")));
    }
    let interval = settings.oom.sample_interval;
    let skipped = if r.not_replayed == 0 {
        String::new()
    } else {
        format!(
            "; {} recorded cycles not replayed (this configuration samples every {}, the recording every {recorded_every_ms}ms{})",
            r.not_replayed,
            oomwarden_model::format_go_duration(
                i64::try_from(interval.as_nanos()).unwrap_or(i64::MAX)
            ),
            if settings.warden.psi_triggers.enabled {
                ""
            } else {
                "; PSI-woken cycles run only under psiTriggers"
            }
        )
    };
    let failed = match errors {
        0 => String::new(),
        n => format!("; {n} cycles failed (no context, or the trigger gave an error)"),
    };
    writeln!(
        out,
        "  {firings}; {} cycles replayed{skipped}{failed}",
        r.cycles.len()
    )?;
    Ok(())
}

/// What a configuration did at one recorded time.
/// What a configuration did at a cycle another one acted on, in words.
fn at(r: &Replay, at_ns: u64, root: &str, trigger: &oomwarden_expr::TriggerExpr) -> String {
    match r.cycles.iter().find(|c| c.at_ns == at_ns) {
        None => "no cycle here (its sampleInterval's ticks did not fall on this one)".to_owned(),
        Some(c) => match &c.result {
            CycleResult::Quiet => {
                let failed: Vec<String> = c
                    .context
                    .as_ref()
                    .map(|ctx| {
                        trigger
                            .evaluate_comparisons(ctx)
                            .into_iter()
                            .filter(|x| x.holds == Some(false))
                            .map(|x| {
                                format!(
                                    "{} = {} is not {} {}",
                                    x.comparison
                                        .left
                                        .split_whitespace()
                                        .collect::<Vec<_>>()
                                        .join(" "),
                                    x.left.shown(),
                                    x.comparison.op,
                                    x.comparison.right
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                if failed.is_empty() {
                    "the trigger was false".to_owned()
                } else {
                    format!("the trigger was false: {}", failed.join("; "))
                }
            }
            CycleResult::Skipped(e) => format!("the cycle failed ({e})"),
            CycleResult::Acted(i) => r.decisions.get(*i).map_or_else(String::new, |d| {
                let v = d.record.victim.as_deref().map(|v| short(v, root));
                format!("{} {}", d.record.outcome.name(), v.unwrap_or_default())
                    .trim_end()
                    .to_owned()
            }),
        },
    }
}

fn differences(
    out: &mut impl Write,
    configs: &[Config],
    replays: &[Replay],
    root: &str,
    start: u64,
) -> anyhow::Result<()> {
    writeln!(out)?;
    let names: Vec<String> = (0..configs.len()).map(|i| letter(i).to_string()).collect();
    writeln!(out, "differences ({}):", names.join(" vs "))?;
    let mut times: Vec<u64> = replays
        .iter()
        .flat_map(|r| r.decisions.iter().map(|d| d.record.monotonic_ns))
        .collect();
    times.sort_unstable();
    times.dedup();
    let mut any = false;
    for t in times {
        let row: Vec<String> = replays
            .iter()
            .zip(configs)
            .map(|(r, c)| at(r, t, root, &c.settings.oom.trigger))
            .collect();
        if row.windows(2).all(|w| w.first() == w.get(1)) {
            continue;
        }
        any = true;
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}: {s}", letter(i)))
            .collect();
        writeln!(out, "  {:>9}  {}", offset(t, start), cells.join("   "))?;
    }
    if !any {
        writeln!(out, "  none: every firing gave the same decision")?;
    }
    Ok(())
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonDecision<'a> {
    config: &'a str,
    offset_seconds: f64,
    /// Taken after a kill the recording did not have: a guess.
    after_divergence: bool,
    /// Of those, decided on estimated memory figures (`--estimate-memory`).
    estimated_memory: bool,
    record: &'a ActionRecord,
    ranking: Vec<JsonRanked<'a>>,
}

#[derive(Serialize)]
struct JsonRanked<'a> {
    path: &'a str,
    class: &'a str,
    score: Option<f64>,
    eligible: bool,
    reason: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonSummary<'a> {
    config: &'a str,
    firings: usize,
    /// Of `firings`, those after a kill the recording did not have.
    after_divergence: usize,
    /// Whether the memory figures after it were estimated (`--estimate-memory`).
    estimated_memory: bool,
    cycles_replayed: usize,
    not_replayed: usize,
    failed_cycles: usize,
}

/// One JSON object a line, or (`yaml`) the same objects as YAML documents.
fn json(
    out: &mut impl Write,
    configs: &[Config],
    replays: &[Replay],
    start: u64,
    yaml: bool,
) -> anyhow::Result<()> {
    let mut emit = |value: &dyn erased::Value| -> anyhow::Result<()> {
        if yaml {
            write!(out, "---\n{}", value.yaml()?)?;
        } else {
            writeln!(out, "{}", value.json()?)?;
        }
        Ok(())
    };
    for (c, r) in configs.iter().zip(replays) {
        for d in &r.decisions {
            #[allow(clippy::cast_precision_loss)]
            let offset_seconds = d.record.monotonic_ns.saturating_sub(start) as f64 / 1e9;
            let line = JsonDecision {
                config: &c.name,
                offset_seconds,
                after_divergence: d.after_divergence,
                estimated_memory: d.estimated_memory,
                record: &d.record,
                ranking: d
                    .ranking
                    .iter()
                    .map(|x| JsonRanked {
                        path: &x.path,
                        class: x.class.name(),
                        score: x.score,
                        eligible: x.eligible,
                        reason: &x.reason,
                    })
                    .collect(),
            };
            emit(&line)?;
        }
        let s = JsonSummary {
            config: &c.name,
            firings: r.decisions.len(),
            after_divergence: r.decisions.iter().filter(|d| d.after_divergence).count(),
            estimated_memory: r.after_kill == replay::AfterKill::EstimateMemory,
            cycles_replayed: r.cycles.len(),
            not_replayed: r.not_replayed,
            failed_cycles: r
                .cycles
                .iter()
                .filter(|x| matches!(x.result, CycleResult::Skipped(_)))
                .count(),
        };
        emit(&serde_json::json!({ "summary": s }))?;
    }
    Ok(())
}

/// A serializable value behind a reference of one type, for `json`'s two kinds of object.
mod erased {
    pub(super) trait Value {
        fn json(&self) -> anyhow::Result<String>;
        fn yaml(&self) -> anyhow::Result<String>;
    }

    impl<T: serde::Serialize> Value for T {
        fn json(&self) -> anyhow::Result<String> {
            Ok(serde_json::to_string(self)?)
        }

        fn yaml(&self) -> anyhow::Result<String> {
            crate::output::yaml(self)
        }
    }
}

fn timeline(
    name: &str,
    recording: &Recording,
    configs: &[Config],
    replays: &[Replay],
    start: u64,
) -> oomwarden_plot::Timeline {
    #[allow(clippy::cast_precision_loss)]
    let secs = |ns: u64| ns.saturating_sub(start) as f64 / 1e9;
    // The metrics do not depend on the configuration: take them from the replay that ran the
    // most cycles.
    let cycles = replays
        .iter()
        .max_by_key(|r| r.cycles.len())
        .map(|r| r.cycles.as_slice())
        .unwrap_or_default();
    let mut psi = Vec::new();
    let mut memory = Vec::new();
    // Every class, also one flat at zero: a flat System line is what says nothing should be
    // killed.
    for class in QosClass::ALL {
        let mut p = Vec::new();
        let mut m = Vec::new();
        for c in cycles {
            if let Some(ctx) = &c.context {
                p.push((
                    secs(c.at_ns),
                    ctx.class_map(PerClass::QosMemoryFullAvg10).get(class),
                ));
                m.push((
                    secs(c.at_ns),
                    ctx.class_map(PerClass::QosMemoryCurrent).get(class) / 1_048_576.0,
                ));
            }
        }
        psi.push(oomwarden_plot::Series {
            name: class.name().to_owned(),
            color: class.index(),
            points: p,
        });
        memory.push(oomwarden_plot::Series {
            name: class.name().to_owned(),
            color: class.index(),
            points: m,
        });
    }
    // The node's own PSI (the root cgroup's: `memory_full_avg10`), in the node's colour.
    psi.push(oomwarden_plot::Series {
        name: "node (root)".to_owned(),
        color: QosClass::ALL.len(),
        points: cycles
            .iter()
            .filter_map(|c| {
                let ctx = c.context.as_ref()?;
                Some((secs(c.at_ns), ctx.get(Scalar::MemoryFullAvg10)))
            })
            .collect(),
    });
    let node_memory = cycles
        .iter()
        .filter_map(|c| c.context.as_ref())
        .map(|ctx| ctx.get(oomwarden_model::Scalar::NodeMemoryTotal))
        .find(|t| *t > 0.0);
    let root = &recording.meta.cgroup_root;
    let decisions = decision_rows(configs, replays, &secs, root);
    let memory_text = node_memory.map_or_else(
        || "node memory unknown".to_owned(),
        |t| {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let bytes = t as u64;
            format!("node memory {}", crate::human::bytes(bytes))
        },
    );
    oomwarden_plot::Timeline {
        title: format!(
            "oomwarden replay: {name} ({memory_text}; {})",
            configs
                .first()
                .map_or_else(String::new, |c| format!("lines: {}", c.name))
        ),
        psi,
        psi_label: "memory PSI full avg10 (%)".to_owned(),
        memory,
        thresholds: configs
            .first()
            .map(|c| thresholds(&c.settings.oom.trigger, cycles, &secs))
            .unwrap_or_default(),
        decisions,
    }
}

/// One row of decisions per configuration, for the picture.
fn decision_rows(
    configs: &[Config],
    replays: &[Replay],
    secs: &dyn Fn(u64) -> f64,
    root: &str,
) -> Vec<oomwarden_plot::Decisions> {
    configs
        .iter()
        .zip(replays)
        .enumerate()
        .map(|(i, (c, r))| oomwarden_plot::Decisions {
            config: format!("{}: {}", letter(i), c.name),
            events: r
                .decisions
                .iter()
                .map(|d| oomwarden_plot::Event {
                    after_divergence: d.after_divergence,
                    estimated_memory: d.estimated_memory,
                    at: secs(d.record.monotonic_ns),
                    kind: match d.record.outcome {
                        Outcome::Killed => oomwarden_plot::EventKind::Kill,
                        Outcome::DryRun => oomwarden_plot::EventKind::DryRun,
                        Outcome::NoEligibleCgroup | Outcome::Gone => {
                            oomwarden_plot::EventKind::NoVictim
                        }
                        Outcome::KillFailed | Outcome::NotVerified => {
                            oomwarden_plot::EventKind::Failed
                        }
                        Outcome::Warned => oomwarden_plot::EventKind::Warned,
                        Outcome::Terminated | Outcome::Cancelled => {
                            oomwarden_plot::EventKind::Terminated
                        }
                        Outcome::Tainted | Outcome::Untainted => oomwarden_plot::EventKind::Taint,
                    },
                    label: d
                        .record
                        .victim
                        .as_deref()
                        .map(|v| {
                            let s = short(v, root);
                            let tail: Vec<&str> = s.rsplit('/').take(1).collect();
                            tail.concat().chars().take(28).collect()
                        })
                        .unwrap_or_default(),
                })
                .collect(),
        })
        .collect()
}

/// The constants the trigger compares a plotted quantity with: PSI full avg10 of the classes
/// or the node (`qos_memory_full_avg10`, `memory_full_avg10`, also inside
/// `multiply_qos_vectors`, whose sum of classes the line stands for) and class memory
/// (`qos_memory_current`, in MiB).
fn thresholds(
    trigger: &oomwarden_expr::TriggerExpr,
    cycles: &[replay::ReplayedCycle],
    secs: &dyn Fn(u64) -> f64,
) -> Vec<oomwarden_plot::Threshold> {
    let constant = |text: &str| {
        oomwarden_expr::AnyExpr::compile(oomwarden_expr::ExprKind::Trigger, text)
            .ok()?
            .eval_trigger(&TriggerContext::new())
            .ok()?
            .as_number()
    };
    trigger
        .comparisons()
        .iter()
        .filter_map(|c| {
            let (variable, value) = match (c.left_constant, c.right_constant) {
                (false, true) => (&c.left, constant(&c.right)?),
                (true, false) => (&c.right, constant(&c.left)?),
                _ => return None,
            };
            let (panel, scale) = if mentions(variable, "qos_memory_full_avg10")
                || mentions(variable, "memory_full_avg10")
            {
                (oomwarden_plot::Panel::Psi, 1.0)
            } else if mentions(variable, "qos_memory_current") {
                (oomwarden_plot::Panel::Memory, 1.0 / 1_048_576.0)
            } else {
                return None;
            };
            // The compared side, cycle by cycle, in the panel's unit.
            let side =
                oomwarden_expr::AnyExpr::compile(oomwarden_expr::ExprKind::Trigger, variable).ok();
            let values: Vec<(f64, f64)> = side
                .map(|e| {
                    cycles
                        .iter()
                        .filter_map(|c| {
                            let v = e.eval_trigger(c.context.as_ref()?).ok()?.as_number()?;
                            v.is_finite().then(|| (secs(c.at_ns), v * scale))
                        })
                        .collect()
                })
                .unwrap_or_default();
            let value = value * scale;
            let label: String = c.text.split_whitespace().collect::<Vec<_>>().join(" ");
            let label = if label.chars().count() > 90 {
                format!("{}…", label.chars().take(89).collect::<String>())
            } else {
                label
            };
            Some(oomwarden_plot::Threshold {
                panel,
                value,
                label,
                values,
            })
        })
        .collect()
}

/// Compares the replay with the daemon's records over the recording's span.
/// Whether every variable of the daemon's context has the same value in the replay's.
fn context_agrees(daemon: &str, replay: &str) -> bool {
    let (Ok(serde_json::Value::Object(d)), Ok(serde_json::Value::Object(r))) = (
        serde_json::from_str::<serde_json::Value>(daemon),
        serde_json::from_str::<serde_json::Value>(replay),
    ) else {
        return daemon == replay;
    };
    d.iter().all(|(k, v)| r.get(k) == Some(v))
}

fn check_against(
    path: &Path,
    recording: &Recording,
    replay: &Replay,
    out: &mut impl Write,
) -> anyhow::Result<Exit> {
    let text = crate::commands::read_input(path)?;
    let (first, last) = match (recording.cycles.first(), recording.cycles.last()) {
        (Some(a), Some(b)) => (a.at_ns, b.at_ns),
        _ => (0, 0),
    };
    let mut live = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let r: ActionRecord = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: not an action record", path.display(), n + 1))?;
        // The kernel's own kills are no decision of the daemon's; a replay makes none.
        if r.kind == oomwarden_model::RecordKind::Oomwarden
            && (first..=last).contains(&r.monotonic_ns)
        {
            live.push(r);
        }
    }
    // What must agree: when, what, whom, the score, and the context behind it: every variable
    // the daemon's record has (a daemon of an older version wrote fewer variables than this
    // replay computes; those it has must be equal).
    let key = |r: &ActionRecord| {
        (
            r.monotonic_ns,
            r.outcome.name(),
            r.victim.clone(),
            oomwarden_model::format_number(r.score),
            r.trigger_context.clone(),
        )
    };
    let mut want: Vec<_> = live.iter().map(key).collect();
    let got: Vec<_> = replay.decisions.iter().map(|d| key(&d.record)).collect();
    for (w, g) in want.iter_mut().zip(&got) {
        if context_agrees(&w.4, &g.4) {
            w.4.clone_from(&g.4);
        }
    }
    if want == got {
        writeln!(
            out,
            "reproduced: the replay made the daemon's {} decision(s) over the recording's span",
            want.len()
        )?;
        return Ok(Exit::Ok);
    }
    let mut lines = vec!["the replay differs from the daemon's records:".to_owned()];
    let n = want.len().max(got.len());
    for i in 0..n {
        let (w, g) = (want.get(i), got.get(i));
        if w != g {
            let show = |x: Option<&(u64, &str, Option<String>, String, String)>| {
                x.map_or("nothing".to_owned(), |(t, o, v, s, _)| {
                    format!("{t} {o} {} score {s}", v.as_deref().unwrap_or("-"))
                })
            };
            lines.push(format!("  #{i}: daemon {} / replay {}", show(w), show(g)));
            if let (Some(w), Some(g)) = (w, g)
                && w.4 != g.4
            {
                lines.push(format!(
                    "      contexts differ:\n      daemon {}\n      replay {}",
                    w.4, g.4
                ));
            }
        }
    }
    Err(Fail::failure(lines.join("\n")).into())
}

#[cfg(test)]
mod context_tests {
    use super::context_agrees;

    /// A daemon of an older version wrote fewer variables: those it has must agree, and a
    /// variable it has that the replay lacks, or a different value, is a difference.
    #[test]
    fn contexts_agree_on_the_daemons_variables() {
        let daemon = r#"{"memory_full_avg10":1.5,"time_since_trigger":5}"#;
        assert!(context_agrees(
            daemon,
            r#"{"d_node_pgscan":3,"memory_full_avg10":1.5,"time_since_trigger":5}"#
        ));
        assert!(!context_agrees(
            daemon,
            r#"{"memory_full_avg10":1.25,"time_since_trigger":5}"#
        ));
        assert!(!context_agrees(daemon, r#"{"memory_full_avg10":1.5}"#));
        assert!(!context_agrees("not json", "other"));
    }
}

#[cfg(test)]
mod with_unit_tests {
    use oomwarden_model::TriggerVar;

    /// A variable's value shown in the catalogue's unit.
    fn with_unit(name: &str, v: f64) -> String {
        let unit = TriggerVar::from_name(name).map(|var| var.definition().unit);
        assert!(matches!(unit, Some(Some(_))), "{name} has a unit");
        super::with_unit(unit.flatten(), v)
    }

    #[test]
    fn every_extension_variable_has_its_unit() {
        assert_eq!(with_unit("node_memory_total", 1_014_693_888.0), "967.7Mi");
        assert_eq!(with_unit("node_memory_available", 150_507_520.0), "143.5Mi");
        assert_eq!(
            with_unit("node_memory_available_trend", -4_718_592.0),
            "-4.5Mi/s"
        );
        assert_eq!(with_unit("d_node_memory_available", -1_048_576.0), "-1Mi/s");
        assert_eq!(with_unit("d_node_pgscan_direct", 1234.4), "1234 pages/s");
        assert_eq!(
            with_unit("d_qos_workingset_refault_file", 12.0),
            "12 pages/s"
        );
        assert_eq!(with_unit("memory_full_total", 2_500_000.0), "2.5 s");
        assert_eq!(with_unit("d_memory_full_total", 191_162.0), "191.2 ms/s");
        assert_eq!(with_unit("memory_full_avg10", 5.941), "5.94 %");
    }
}
