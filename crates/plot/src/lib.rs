//! Timeline pictures of a replay (`oomwarden replay --plot`): on one time axis, memory PSI
//! per class, memory per class, and each configuration's trigger and kill moments.
//!
//! The input is plain data ([`Timeline`]); the picture is SVG or PNG by the file's extension.
//! Text is drawn with an embedded subset of DejaVu Sans (`assets/`), so a PNG looks the same
//! on a machine without fonts.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

const FONT: &[u8] = include_bytes!("../assets/DejaVuSans-subset.ttf");
const FAMILY: &str = "sans-serif";

/// One line of a panel.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Its colour, an index into the class palette (0 … 4 the QoS classes in their order,
    /// 5 the node): the same index is the same colour in every panel, and no decision is
    /// drawn in a class's colour.
    pub color: usize,
    /// (seconds, value) points, in time order.
    pub points: Vec<(f64, f64)>,
}

/// Which panel a threshold belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Panel {
    /// The PSI panel.
    Psi,
    /// The memory panel.
    Memory,
}

/// A constant the trigger compares a plotted quantity with, drawn as a dashed line.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The panel.
    pub panel: Panel,
    /// Where, in the panel's unit.
    pub value: f64,
    /// What it is (the comparison, shortened).
    pub label: String,
    /// The compared quantity over time (seconds, value), when it could be computed: the line
    /// that crosses the threshold when the trigger's comparison holds.
    pub values: Vec<(f64, f64)>,
}

/// What a decision was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A victim killed.
    Kill,
    /// A victim chosen in dry run.
    DryRun,
    /// The trigger fired and nothing was eligible.
    NoVictim,
    /// A kill that failed or was not verified.
    Failed,
    /// A `warn` stage fired.
    Warned,
    /// A `terminate` stage's victim exited after SIGTERM.
    Terminated,
    /// The node's taint set or removed.
    Taint,
}

/// One trigger firing.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Seconds from the start.
    pub at: f64,
    /// What it was.
    pub kind: EventKind,
    /// The victim, shortened (empty for none).
    pub label: String,
    /// Taken after a kill the recording did not have: drawn faint, named apart in the legend
    /// (the figures it was decided on are the recording's, not this policy's node's).
    pub after_divergence: bool,
    /// Decided after a divergence on memory figures the replay estimated (`--estimate-memory`).
    pub estimated_memory: bool,
}

/// One configuration's decisions.
#[derive(Debug, Clone, PartialEq)]
pub struct Decisions {
    /// The configuration's name (its file, or `defaults`).
    pub config: String,
    /// Its trigger firings.
    pub events: Vec<Event>,
}

/// Everything on the picture.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// The title.
    pub title: String,
    /// PSI lines (percent).
    pub psi: Vec<Series>,
    /// The PSI panel's axis label.
    pub psi_label: String,
    /// Memory lines (MiB).
    pub memory: Vec<Series>,
    /// The first configuration's thresholds on the plotted quantities.
    pub thresholds: Vec<Threshold>,
    /// One row of decisions per configuration.
    pub decisions: Vec<Decisions>,
}

/// Why a picture could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The extension is neither `.svg` nor `.png`.
    #[error("{0}: the picture's name must end in .svg or .png")]
    Format(PathBuf),
    /// The directory to write it in is not there.
    #[error("{path}: cannot write the picture: {reason}")]
    Path {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Drawing or writing failed.
    #[error("{path}: cannot draw: {reason}")]
    Draw {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

/// Picture size in pixels.
const SIZE: (u32, u32) = (1200, 860);

/// One colour per class (Besteffort, Burstable, Guaranteed, Podruntime, System) and the
/// node; the decisions' colours below are none of these.
const CLASS_COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),  // Besteffort: blue
    RGBColor(44, 160, 44),   // Burstable: green
    RGBColor(23, 190, 207),  // Guaranteed: cyan
    RGBColor(140, 86, 75),   // Podruntime: brown
    RGBColor(0, 0, 0),       // System: black
    RGBColor(127, 127, 127), // the node: grey
];

/// A kill: red.
const KILL: RGBColor = RGBColor(214, 39, 40);
/// A dry-run decision: orange.
const DRY_RUN: RGBColor = RGBColor(255, 127, 14);
/// A kill that failed or was not verified: magenta.
const FAILED: RGBColor = RGBColor(227, 0, 190);
/// A firing with no victim: light grey.
const NO_VICTIM: RGBColor = RGBColor(190, 190, 190);
/// A `warn` stage: olive.
const WARNED: RGBColor = RGBColor(188, 189, 34);
/// A `terminate` stage's victim that exited: pink.
const TERMINATED: RGBColor = RGBColor(247, 129, 191);
/// The node's taint set or removed: light orange.
const TAINT: RGBColor = RGBColor(255, 187, 120);
/// A threshold of the trigger: purple, dashed.
const THRESHOLD: RGBColor = RGBColor(118, 42, 131);

fn color(i: usize) -> RGBColor {
    CLASS_COLORS
        .get(i % CLASS_COLORS.len())
        .copied()
        .unwrap_or(BLACK)
}

/// Checks, before any work, that a picture can be written at `path`: a `.svg` or `.png` name
/// in a directory that exists.
pub fn check_output(path: &Path) -> Result<(), PlotError> {
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("svg") || e.eq_ignore_ascii_case("png") => {}
        _ => return Err(PlotError::Format(path.to_path_buf())),
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let problem = match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => None,
        Ok(_) => Some(format!("{} is not a directory", dir.display())),
        Err(e) => Some(format!("{}: {e}", dir.display())),
    };
    if let Some(reason) = problem {
        return Err(PlotError::Path {
            path: path.to_path_buf(),
            reason,
        });
    }
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(PlotError::Path {
            path: path.to_path_buf(),
            reason: "it is a directory".to_owned(),
        });
    }
    Ok(())
}

/// Draws `timeline` to `path` (`.svg` or `.png`).
pub fn render(timeline: &Timeline, path: &Path) -> Result<(), PlotError> {
    // Registering twice replaces the same bytes; an invalid font cannot happen with ours.
    plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).map_err(|_| {
        PlotError::Draw {
            path: path.to_path_buf(),
            reason: "the embedded font is invalid".to_owned(),
        }
    })?;
    let draw_err = |reason: String| PlotError::Draw {
        path: path.to_path_buf(),
        reason,
    };
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("svg") => {
            let root = SVGBackend::new(path, SIZE).into_drawing_area();
            draw(timeline, &root).map_err(draw_err)?;
            root.present().map_err(|e| draw_err(e.to_string()))
        }
        Some(e) if e.eq_ignore_ascii_case("png") => {
            let root = BitMapBackend::new(path, SIZE).into_drawing_area();
            draw(timeline, &root).map_err(draw_err)?;
            root.present().map_err(|e| draw_err(e.to_string()))
        }
        _ => Err(PlotError::Format(path.to_path_buf())),
    }
}

fn span(timeline: &Timeline) -> f64 {
    let series_end = timeline
        .psi
        .iter()
        .chain(&timeline.memory)
        .filter_map(|s| s.points.last().map(|p| p.0))
        .fold(0.0_f64, f64::max);
    let event_end = timeline
        .decisions
        .iter()
        .flat_map(|d| d.events.iter().map(|e| e.at))
        .fold(0.0_f64, f64::max);
    series_end.max(event_end).max(1.0)
}

fn top(series: &[Series], thresholds: &[&Threshold]) -> f64 {
    let max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(thresholds.iter().map(|t| t.value))
        .chain(thresholds.iter().flat_map(|t| t.values.iter().map(|p| p.1)))
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max);
    if max <= 0.0 { 1.0 } else { max * 1.1 }
}

fn draw<DB: DrawingBackend>(
    timeline: &Timeline,
    root: &DrawingArea<DB, Shift>,
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let root = root.titled(&timeline.title, (FAMILY, 22)).map_err(e)?;
    let rows = u32::try_from(timeline.decisions.len()).unwrap_or(1).max(1);
    let decisions_height = 62 + 34 * rows;
    let (_, height) = root.dim_in_pixel();
    let panels = height.saturating_sub(decisions_height) / 2;
    let areas = root.split_by_breakpoints([] as [u32; 0], [panels, 2 * panels]);
    let [psi_area, mem_area, events_area] = areas.as_slice() else {
        return Err("cannot split the picture".to_owned());
    };
    let end = span(timeline);
    // Across the panels, the first configuration's decisions only: the others have their row.
    let events: Vec<(usize, &Event)> = timeline
        .decisions
        .iter()
        .take(1)
        .enumerate()
        .flat_map(|(i, d)| d.events.iter().map(move |ev| (i, ev)))
        .collect();
    let config = timeline.decisions.first().map_or("", |d| d.config.as_str());
    let on = |panel: Panel| -> Vec<&Threshold> {
        timeline
            .thresholds
            .iter()
            .filter(|t| t.panel == panel && t.value.is_finite())
            .collect()
    };
    let lines = Lines {
        events: &events,
        config,
        end,
    };
    panel(
        psi_area,
        &timeline.psi,
        &timeline.psi_label,
        &on(Panel::Psi),
        &lines,
    )
    .map_err(e)?;
    panel(
        mem_area,
        &timeline.memory,
        "memory.current (MiB)",
        &on(Panel::Memory),
        &lines,
    )
    .map_err(e)?;
    decisions(events_area, &timeline.decisions, end).map_err(e)?;
    Ok(())
}

/// An event's line: its kind's colour, faint and thin after a divergence.
fn style_of(ev: &Event) -> ShapeStyle {
    if ev.after_divergence {
        let base = event_style(ev.kind);
        base.color.mix(0.35).stroke_width(1)
    } else {
        event_style(ev.kind)
    }
}

/// An event's legend entry.
fn name_of(ev: &Event) -> String {
    if ev.estimated_memory {
        format!(
            "{}, after a kill the recording did not have (memory estimated, PSI as recorded: a guess)",
            event_name(ev.kind)
        )
    } else if ev.after_divergence {
        format!(
            "{}, after a kill the recording did not have (a guess)",
            event_name(ev.kind)
        )
    } else {
        event_name(ev.kind).to_owned()
    }
}

fn event_style(kind: EventKind) -> ShapeStyle {
    match kind {
        EventKind::Kill => KILL.stroke_width(2),
        EventKind::Failed => FAILED.stroke_width(2),
        EventKind::DryRun => DRY_RUN.stroke_width(2),
        EventKind::NoVictim => NO_VICTIM.stroke_width(1),
        EventKind::Warned => WARNED.stroke_width(1),
        EventKind::Terminated => TERMINATED.stroke_width(2),
        EventKind::Taint => TAINT.stroke_width(1),
    }
}

fn event_name(kind: EventKind) -> &'static str {
    match kind {
        EventKind::Kill => "kill",
        EventKind::Failed => "kill failed",
        EventKind::DryRun => "dry-run decision",
        EventKind::NoVictim => "no eligible victim",
        EventKind::Warned => "warn stage",
        EventKind::Terminated => "terminated (SIGTERM)",
        EventKind::Taint => "node tainted or untainted",
    }
}

/// The decision lines drawn across the panels (the first configuration's), and its name.
struct Lines<'a> {
    events: &'a [(usize, &'a Event)],
    config: &'a str,
    end: f64,
}

/// The grid's fine lines.
const LIGHT: RGBColor = RGBColor(235, 235, 235);

type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A panel's chart: seconds across, `0..ymax` up, room for the labels.
fn chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    end: f64,
    ymax: f64,
) -> Result<Chart<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    ChartBuilder::on(area)
        .margin(10)
        .margin_right(30)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..end, 0.0..ymax)
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[Series],
    label: &str,
    thresholds: &[&Threshold],
    lines: &Lines<'_>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let ymax = top(series, thresholds);
    let mut chart = chart(area, lines.end, ymax)?;
    chart
        .configure_mesh()
        .y_desc(label)
        .x_desc("seconds")
        .label_style((FAMILY, 13))
        .axis_desc_style((FAMILY, 14))
        .light_line_style(LIGHT)
        .draw()?;
    // Decisions as vertical lines under the data, each kind once in the legend.
    let mut named: Vec<(EventKind, bool)> = Vec::new();
    for (_, ev) in lines.events {
        let drawn = chart.draw_series(std::iter::once(PathElement::new(
            vec![(ev.at, 0.0), (ev.at, ymax)],
            style_of(ev),
        )))?;
        if !named.contains(&(ev.kind, ev.after_divergence)) {
            named.push((ev.kind, ev.after_divergence));
            let style = style_of(ev);
            drawn
                .label(format!("{} ({})", name_of(ev), lines.config))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x + 9, y - 6), (x + 9, y + 6)], style)
                });
        }
    }
    for s in series {
        let c = color(s.color);
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))?
            .label(s.name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
    }
    // On top of the classes: the compared value crossing its threshold is the firing.
    for t in thresholds {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, t.value), (lines.end, t.value)],
                8,
                5,
                THRESHOLD.stroke_width(2),
            ))?
            .label(format!("threshold: {}", t.label))
            .legend(|(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], THRESHOLD.stroke_width(2))
            });
        if !t.values.is_empty() {
            chart
                .draw_series(LineSeries::new(
                    t.values.iter().copied(),
                    THRESHOLD.mix(0.8).stroke_width(1),
                ))?
                .label("its compared value")
                .legend(|(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], THRESHOLD.stroke_width(1))
                });
        }
    }
    if !series.is_empty() || !thresholds.is_empty() || !named.is_empty() {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font((FAMILY, 13))
            // See-through, so that the lines behind it still show.
            .background_style(WHITE.mix(0.55))
            .border_style(RGBColor(180, 180, 180))
            .draw()?;
    }
    Ok(())
}

fn decisions<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    rows: &[Decisions],
    end: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let n = rows.len().max(1);
    #[allow(clippy::cast_precision_loss)] // a handful of rows
    let height = n as f64;
    let mut chart = chart(area, end, height)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_desc("seconds: red = kill, orange = dry run, magenta = kill failed, light grey = no eligible victim; faint = after a kill the recording did not have")
        .label_style((FAMILY, 13))
        .axis_desc_style((FAMILY, 14))
        .light_line_style(LIGHT)
        .draw()?;
    for (row, d) in rows.iter().enumerate() {
        #[allow(clippy::cast_precision_loss)]
        let y = height - row as f64 - 0.5;
        chart.draw_series(std::iter::once(Text::new(
            format!("{}: {} firing(s)", d.config, d.events.len()),
            (0.0, y + 0.45),
            (FAMILY, 13),
        )))?;
        for ev in &d.events {
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(ev.at, y - 0.3), (ev.at, y + 0.2)],
                style_of(ev),
            )))?;
            if !ev.label.is_empty() {
                chart.draw_series(std::iter::once(Text::new(
                    ev.label.clone(),
                    (ev.at, y - 0.05),
                    (FAMILY, 12),
                )))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    fn timeline() -> Timeline {
        Timeline {
            title: "test".into(),
            psi: vec![Series {
                name: "Besteffort".into(),
                color: 0,
                points: vec![(0.0, 0.0), (1.0, 20.0), (2.0, 5.0)],
            }],
            psi_label: "PSI full avg10 (%)".into(),
            memory: vec![Series {
                name: "Besteffort".into(),
                color: 0,
                points: vec![(0.0, 100.0), (2.0, 300.0)],
            }],
            thresholds: vec![Threshold {
                panel: Panel::Psi,
                value: 5.0,
                label: "qos_memory_full_avg10[System] > 5.0".into(),
                values: vec![(0.0, 1.0), (2.0, 6.0)],
            }],
            decisions: vec![Decisions {
                config: "defaults".into(),
                events: vec![
                    Event {
                        at: 1.5,
                        kind: EventKind::Kill,
                        label: "besteffort/pod-hog".into(),
                        after_divergence: false,
                        estimated_memory: false,
                    },
                    Event {
                        at: 1.8,
                        kind: EventKind::Kill,
                        label: "besteffort/pod-quiet".into(),
                        after_divergence: true,
                        estimated_memory: false,
                    },
                ],
            }],
        }
    }

    #[test]
    fn svg_and_png_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let svg = dir.path().join("t.svg");
        render(&timeline(), &svg).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.starts_with("<svg") && text.contains("besteffort/pod-hog"));
        assert!(
            text.contains("threshold: qos_memory_full_avg10[System] &gt; 5.0"),
            "{text}"
        );
        assert!(
            text.contains("kill (defaults)"),
            "the legend names the configuration"
        );
        assert!(
            text.contains("kill, after a kill the recording did not have (a guess) (defaults)"),
            "a decision after a divergence is named apart"
        );
        // On estimated memory (`--estimate-memory`): named so.
        let mut estimated = timeline();
        for d in &mut estimated.decisions {
            for ev in &mut d.events {
                ev.estimated_memory = ev.after_divergence;
            }
        }
        render(&estimated, &svg).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(
            text.contains("kill, after a kill the recording did not have (memory estimated, PSI as recorded: a guess) (defaults)"),
            "{text}"
        );
        let png = dir.path().join("t.png");
        render(&timeline(), &png).unwrap();
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        assert!(matches!(
            render(&timeline(), &dir.path().join("t.gif")),
            Err(PlotError::Format(_))
        ));
    }

    #[test]
    fn a_bad_name_or_a_missing_directory_is_refused_before_drawing() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_output(&dir.path().join("a.svg")).is_ok());
        assert!(check_output(Path::new("plain.PNG")).is_ok());
        assert!(matches!(
            check_output(&dir.path().join("a.pdf")),
            Err(PlotError::Format(_))
        ));
        let e = check_output(&dir.path().join("no/such/dir/a.svg")).unwrap_err();
        assert!(matches!(e, PlotError::Path { .. }), "{e}");
        assert!(e.to_string().contains("no/such/dir"), "{e}");
    }

    /// One colour per meaning: no decision is drawn in a class's colour.
    #[test]
    fn decisions_and_thresholds_use_colours_no_class_uses() {
        for c in [
            KILL, DRY_RUN, FAILED, NO_VICTIM, WARNED, TERMINATED, TAINT, THRESHOLD,
        ] {
            assert!(!CLASS_COLORS.contains(&c), "{c:?}");
        }
        let mut all = CLASS_COLORS.to_vec();
        all.sort_by_key(|c| (c.0, c.1, c.2));
        all.dedup();
        assert_eq!(all.len(), CLASS_COLORS.len());
    }

    #[test]
    fn empty_timelines_still_draw() {
        let dir = tempfile::tempdir().unwrap();
        let t = Timeline {
            title: String::new(),
            psi: vec![],
            psi_label: String::new(),
            memory: vec![],
            thresholds: vec![],
            decisions: vec![],
        };
        render(&t, &dir.path().join("e.svg")).unwrap();
    }
}
