//! `oomwarden replay`: a recording through the OOM handler's own decision code, under one or
//! more configurations: each trigger firing, the ranking, the victim and the context; where
//! two configurations differ; a timeline picture.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use oomwarden_config::Settings;
use oomwarden_daemon::replay::{self, Decision, Replay, Result as CycleResult};
use oomwarden_model::{
    ActionRecord, Outcome, PsiKind, PsiSpan, QosClass, TriggerContext, UsageKind,
};
use oomwarden_recording::{Recording, parse};
use serde::Serialize;

use crate::commands::builtin;
use crate::exit::Exit;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// For people.
    Text,
    /// One JSON object per decision, then one summary per configuration.
    Json,
}

/// Arguments of `oomwarden replay`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The recording (`oomwarden record`, `run --record`, a flight-recorder file); `-` is
    /// standard input.
    #[arg(value_name = "FILE", required_unless_present_any = ["builtin", "list_builtins"])]
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
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    output: Format,
    /// Candidates shown per ranking (text output).
    #[arg(long, value_name = "N", default_value_t = 5)]
    top: usize,
    /// Instead of the report: compare the first configuration's decisions with the daemon's own
    /// records (`actions.jsonl`) over the recording's span; exit 1 when they differ.
    #[arg(long, value_name = "ACTIONS.jsonl")]
    check_against: Option<PathBuf>,
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
            let settings = oomwarden_daemon::load_settings(Some(path), &Default::default())
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
            writeln!(err, "oomwarden: {e:#}")?;
            return Ok(Exit::Failure);
        }
    };
    let configs = match configs(args, &recording) {
        Ok(c) => c,
        Err(e) => {
            writeln!(err, "{e:#}")?;
            return Ok(Exit::Failure);
        }
    };
    let mut replays = Vec::new();
    for c in &configs {
        let (layout, warning) = match replay::layout_for(&recording, &c.settings) {
            Ok(l) => l,
            Err(e) => {
                writeln!(err, "oomwarden: {}: {e}", c.name)?;
                return Ok(Exit::Failure);
            }
        };
        if let Some(w) = warning {
            writeln!(err, "warning: {}: {w}", c.name)?;
        }
        replays.push(replay::replay(
            recording.clone(),
            c.settings.clone(),
            layout,
        ));
    }
    let start = recording.cycles.first().map_or(0, |c| c.at_ns);
    // A check prints its verdict instead of the report.
    match (args.output, &args.check_against) {
        (_, Some(_)) => {}
        (Format::Text, None) => text(out, &name, &recording, &configs, &replays, start, args.top)?,
        (Format::Json, None) => json(out, &configs, &replays, start)?,
    }
    for path in &args.plot {
        let timeline = timeline(&name, &recording, &configs, &replays, start);
        if let Err(e) = oomwarden_plot::render(&timeline, path) {
            writeln!(err, "oomwarden: {e}")?;
            return Ok(Exit::Failure);
        }
        writeln!(err, "drew {}", path.display())?;
    }
    let verdict = match &args.check_against {
        Some(actions) => match replays.first() {
            Some(first) => check_against(actions, &recording, first, out, err)?,
            None => Exit::Failure,
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

/// The victim's path without the cgroup root, so lines stay short.
fn short(path: &str, root: &str) -> String {
    path.strip_prefix(root)
        .map(|p| p.trim_start_matches('/'))
        .unwrap_or(path)
        .to_owned()
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

/// The context variables the trigger expression reads, compactly.
fn why(ctx: &TriggerContext, trigger: &str) -> String {
    let mut parts = Vec::new();
    for (name, value) in ctx.variables() {
        if !mentions(trigger, name) {
            continue;
        }
        let shown = match value {
            oomwarden_model::Variable::Double(v) => oomwarden_model::format_go_float(v),
            oomwarden_model::Variable::DurationNanos(ns) => oomwarden_model::format_go_duration(ns),
            oomwarden_model::Variable::ClassMap(map) => {
                let entries: Vec<String> = QosClass::ALL
                    .iter()
                    .filter(|c| map.get(**c) != 0.0)
                    .map(|c| {
                        format!(
                            "{}: {}",
                            c.name(),
                            oomwarden_model::format_go_float(map.get(*c))
                        )
                    })
                    .collect();
                format!("{{{}}}", entries.join(", "))
            }
        };
        parts.push(format!("{name}={shown}"));
    }
    parts.join(" ")
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
        let trigger = c.settings.oom.trigger.source();
        for d in &r.decisions {
            decision(out, d, trigger, &m.cgroup_root, start, top)?;
        }
        summary(out, r)?;
    }
    if replays.len() > 1 {
        differences(out, configs, replays, &m.cgroup_root, start)?;
    }
    Ok(())
}

fn decision(
    out: &mut impl Write,
    d: &Decision,
    trigger: &str,
    root: &str,
    start: u64,
    top: usize,
) -> anyhow::Result<()> {
    let r = &d.record;
    let victim = r.victim.as_deref().map(|v| short(v, root));
    writeln!(
        out,
        "  {:>9}  {:<18} {}{}",
        offset(r.monotonic_ns, start),
        r.outcome.name(),
        victim.as_deref().unwrap_or("(no victim)"),
        match (&r.class, victim.is_some()) {
            (Some(class), true) => format!(
                "  [{class}, score {}]",
                oomwarden_model::format_number(r.score)
            ),
            _ => String::new(),
        }
    )?;
    if let Ok(ctx) = TriggerContext::from_json(&r.trigger_context) {
        writeln!(out, "             why: {}", why(&ctx, trigger))?;
    }
    let mut ranked: Vec<_> = d.ranking.iter().collect();
    // Highest score first; the unscored after, in candidate order.
    ranked.sort_by(|a, b| {
        b.score
            .unwrap_or(f64::NEG_INFINITY)
            .total_cmp(&a.score.unwrap_or(f64::NEG_INFINITY))
    });
    for (n, c) in ranked.iter().take(top).enumerate() {
        writeln!(
            out,
            "             {} {:<10} {:>14}  {}{}",
            if n == 0 { "ranking:" } else { "        " },
            c.class.name(),
            c.score
                .map(oomwarden_model::format_number)
                .unwrap_or_else(|| "-".to_owned()),
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

fn summary(out: &mut impl Write, r: &Replay) -> anyhow::Result<()> {
    let mut by_outcome: BTreeMap<&str, usize> = BTreeMap::new();
    for d in &r.decisions {
        *by_outcome.entry(d.record.outcome.name()).or_default() += 1;
    }
    let errors = r
        .cycles
        .iter()
        .filter(|c| matches!(c.result, CycleResult::Skipped(_)))
        .count();
    let outcomes: Vec<String> = by_outcome.iter().map(|(k, v)| format!("{v} {k}")).collect();
    writeln!(
        out,
        "  {} firing(s){}{}; {} cycles replayed, {} not (off this configuration's ticks), {} failed",
        r.decisions.len(),
        if outcomes.is_empty() { "" } else { ": " },
        outcomes.join(", "),
        r.cycles.len(),
        r.not_replayed,
        errors
    )?;
    Ok(())
}

/// What a configuration did at one recorded time.
fn at(r: &Replay, at_ns: u64, root: &str) -> String {
    match r.cycles.iter().find(|c| c.at_ns == at_ns) {
        None => "not sampled".to_owned(),
        Some(c) => match &c.result {
            CycleResult::Quiet => "quiet".to_owned(),
            CycleResult::Skipped(_) => "failed".to_owned(),
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
        let row: Vec<String> = replays.iter().map(|r| at(r, t, root)).collect();
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
    cycles_replayed: usize,
    not_replayed: usize,
    failed_cycles: usize,
}

fn json(
    out: &mut impl Write,
    configs: &[Config],
    replays: &[Replay],
    start: u64,
) -> anyhow::Result<()> {
    for (c, r) in configs.iter().zip(replays) {
        for d in &r.decisions {
            #[allow(clippy::cast_precision_loss)]
            let offset_seconds = d.record.monotonic_ns.saturating_sub(start) as f64 / 1e9;
            let line = JsonDecision {
                config: &c.name,
                offset_seconds,
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
            writeln!(out, "{}", serde_json::to_string(&line)?)?;
        }
        let s = JsonSummary {
            config: &c.name,
            firings: r.decisions.len(),
            cycles_replayed: r.cycles.len(),
            not_replayed: r.not_replayed,
            failed_cycles: r
                .cycles
                .iter()
                .filter(|x| matches!(x.result, CycleResult::Skipped(_)))
                .count(),
        };
        writeln!(
            out,
            "{}",
            serde_json::to_string(&serde_json::json!({ "summary": s }))?
        )?;
    }
    Ok(())
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
    for class in QosClass::ALL {
        let mut p = Vec::new();
        let mut m = Vec::new();
        for c in cycles {
            if let Some(ctx) = &c.context {
                p.push((
                    secs(c.at_ns),
                    ctx.class_psi(false, PsiKind::Full, PsiSpan::Avg10)
                        .get(class),
                ));
                m.push((
                    secs(c.at_ns),
                    ctx.class_usage(false, UsageKind::Current).get(class) / 1_048_576.0,
                ));
            }
        }
        if p.iter().any(|x| x.1 != 0.0) {
            psi.push(oomwarden_plot::Series {
                name: class.name().to_owned(),
                color: class.index(),
                points: p,
            });
        }
        if m.iter().any(|x| x.1 != 0.0) {
            memory.push(oomwarden_plot::Series {
                name: class.name().to_owned(),
                color: class.index(),
                points: m,
            });
        }
    }
    let root = &recording.meta.cgroup_root;
    let decisions = configs
        .iter()
        .zip(replays)
        .enumerate()
        .map(|(i, (c, r))| oomwarden_plot::Decisions {
            config: format!("{}: {}", letter(i), c.name),
            events: r
                .decisions
                .iter()
                .map(|d| oomwarden_plot::Event {
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
        .collect();
    oomwarden_plot::Timeline {
        title: format!("oomwarden replay: {name}"),
        psi,
        psi_label: "memory PSI full avg10 (%)".to_owned(),
        memory,
        decisions,
    }
}

/// Compares the replay with the daemon's records over the recording's span.
fn check_against(
    path: &Path,
    recording: &Recording,
    replay: &Replay,
    out: &mut impl Write,
    err: &mut impl Write,
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
    // What must agree: when, what, whom, the score, and the context behind it.
    let key = |r: &ActionRecord| {
        (
            r.monotonic_ns,
            r.outcome.name(),
            r.victim.clone(),
            oomwarden_model::format_number(r.score),
            r.trigger_context.clone(),
        )
    };
    let want: Vec<_> = live.iter().map(key).collect();
    let got: Vec<_> = replay.decisions.iter().map(|d| key(&d.record)).collect();
    if want == got {
        writeln!(
            out,
            "reproduced: the replay made the daemon's {} decision(s) over the recording's span",
            want.len()
        )?;
        return Ok(Exit::Ok);
    }
    writeln!(err, "the replay differs from the daemon's records:")?;
    let n = want.len().max(got.len());
    for i in 0..n {
        let (w, g) = (want.get(i), got.get(i));
        if w != g {
            let show = |x: Option<&(u64, &str, Option<String>, String, String)>| {
                x.map_or("nothing".to_owned(), |(t, o, v, s, _)| {
                    format!("{t} {o} {} score {s}", v.as_deref().unwrap_or("-"))
                })
            };
            writeln!(err, "  #{i}: daemon {} / replay {}", show(w), show(g))?;
            if let (Some(w), Some(g)) = (w, g)
                && w.4 != g.4
            {
                writeln!(
                    err,
                    "      contexts differ:\n      daemon {}\n      replay {}",
                    w.4, g.4
                )?;
            }
        }
    }
    Ok(Exit::Failure)
}
