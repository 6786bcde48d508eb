//! Pure parsers for the cgroup v2 file formats (see the kernel's `cgroup-v2.rst`, "Interface
//! Files: Conventions"). Total functions: any input gives a value or a [`ParseError`].

use std::fmt;

pub use oomwarden_model::Limit;
use oomwarden_model::{PsiKind, PsiSpan};

/// Why a file's content was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    /// 1-based line number (0 for the whole file).
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "line {}: {}", self.line, self.reason)
        }
    }
}

fn error(line: usize, reason: impl Into<String>) -> ParseError {
    ParseError {
        line,
        reason: reason.into(),
    }
}

/// A single unsigned value (`memory.current`, `memory.peak`).
pub fn unsigned(text: &str) -> Result<u64, ParseError> {
    let t = text.trim();
    t.parse()
        .map_err(|_| error(0, format!("expected an unsigned integer, found {t:?}")))
}

/// A limit file (`memory.max`, `memory.high`, …): `max` or bytes.
pub fn limit(text: &str) -> Result<Limit, ParseError> {
    match text.trim() {
        "max" => Ok(Limit::Max),
        t => t
            .parse()
            .map(Limit::Bytes)
            .map_err(|_| error(0, format!("expected bytes or \"max\", found {t:?}"))),
    }
}

/// A flat keyed file (`memory.stat`, `memory.events`): one `key value` pair per line.
pub fn flat_keyed(text: &str) -> Result<Vec<(String, u64)>, ParseError> {
    let mut out = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let mut words = line.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some(key), Some(value), None) => {
                let value = value.parse().map_err(|_| {
                    error(
                        i + 1,
                        format!("{key}: expected an unsigned integer, found {value:?}"),
                    )
                })?;
                out.push((key.to_owned(), value));
            }
            _ => {
                return Err(error(
                    i + 1,
                    format!("expected \"key value\", found {line:?}"),
                ));
            }
        }
    }
    Ok(out)
}

/// `cgroup.procs` / `cgroup.threads`: one PID per line, as the reader's PID namespace numbers
/// them. A process outside that namespace is listed as `0` (measured: in a new PID namespace,
/// 77 of 79 lines of the root's `cgroup.procs` read `0`); such lines are left out, as no call
/// can reach such a process by PID (a DaemonSet under Talos's workload isolation sees the
/// node's services so).
pub fn pids(text: &str) -> Result<Vec<u32>, ParseError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            l.trim()
                .parse()
                .map_err(|_| error(i + 1, format!("expected a PID, found {l:?}")))
        })
        .filter(|pid| *pid != Ok(0))
        .collect()
}

/// `cgroup.events`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CgroupEvents {
    /// Any live process in the cgroup or below it.
    pub populated: bool,
    /// The cgroup is frozen.
    pub frozen: bool,
}

/// `cgroup.events`: `populated 0|1` and `frozen 0|1`; unknown keys are ignored.
pub fn cgroup_events(text: &str) -> Result<CgroupEvents, ParseError> {
    let mut events = CgroupEvents::default();
    let mut seen_populated = false;
    for (key, value) in flat_keyed(text)? {
        match key.as_str() {
            "populated" => {
                events.populated = value != 0;
                seen_populated = true;
            }
            "frozen" => events.frozen = value != 0,
            _ => {}
        }
    }
    if seen_populated {
        Ok(events)
    } else {
        Err(error(0, "no \"populated\" line"))
    }
}

/// A PSI value as written by the kernel: a decimal, or `max` (which Talos rejects for PSI).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PsiValue {
    /// A number (averages in percent, totals in microseconds).
    Number(f64),
    /// The literal `max`.
    Max,
}

/// A `*.pressure` file: lines like `some avg10=2.82 avg60=5.95 avg300=1.97 total=12172340`.
/// The `some` and `full` lines and their four fields are kept (other lines and fields, which
/// newer kernels could add, are checked for syntax as Talos checks them, and ignored);
/// [`Pressure::value`] applies Talos's completeness rules.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pressure {
    /// `[some, full]`, each `None` when the line is absent; fields in `PsiSpan` order.
    lines: [Option<[Option<PsiValue>; 4]>; 2],
}

/// A well-formed pressure file lacking what the trigger needs (Talos's error texts).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PressureError {
    /// No `some` or `full` line.
    #[error("cannot find memory pressure type: type: {0}")]
    MissingType(&'static str),
    /// A line lacks one of the four fields.
    #[error("cannot find memory pressure span: span: {0}")]
    MissingSpan(&'static str),
    /// A field reads `max`.
    #[error("PSI is not defined")]
    Undefined,
}

impl Pressure {
    /// One value, or why it is missing.
    pub fn value(&self, kind: PsiKind, span: PsiSpan) -> Result<f64, PressureError> {
        let fields = self
            .lines
            .get(kind as usize)
            .copied()
            .flatten()
            .ok_or(PressureError::MissingType(kind.name()))?;
        match fields.get(span as usize).copied().flatten() {
            None => Err(PressureError::MissingSpan(span.name())),
            Some(PsiValue::Max) => Err(PressureError::Undefined),
            Some(PsiValue::Number(v)) => Ok(v),
        }
    }
}

/// Talos's `cgroups.ParseValue`: `max`, or an integer with at most one `.` taken out and the
/// digits after it counted as decimals, read by Go's `strconv.ParseInt` (a sign is allowed):
/// `2.82` is 282 / 10², `1.` is 1, `-1` is -1, `+1` is 1, `.5` is 0.5; `1.2.3`, `1e3` and
/// anything over an int64 are not values.
fn psi_value(text: &str) -> Option<PsiValue> {
    if text == "max" {
        return Some(PsiValue::Max);
    }
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    let (negative, int) = match int.as_bytes().first() {
        Some(b'-') => (true, int.get(1..).unwrap_or("")),
        Some(b'+') => (false, int.get(1..).unwrap_or("")),
        _ => (false, int),
    };
    // ParseInt of the digits joined: at least one, all ASCII digits, within an int64.
    let mut count = 0usize;
    let mut magnitude: u64 = 0;
    for d in int.bytes().chain(frac.bytes()) {
        if !d.is_ascii_digit() {
            return None;
        }
        magnitude = magnitude
            .checked_mul(10)?
            .checked_add(u64::from(d - b'0'))?;
        count += 1;
    }
    let limit = if negative {
        1u64 << 63
    } else {
        (1u64 << 63) - 1
    };
    if count == 0 || magnitude > limit {
        return None;
    }
    #[allow(clippy::cast_precision_loss, reason = "Go's float64(v.Val)")]
    let value = if negative {
        -(magnitude as f64)
    } else {
        magnitude as f64
    };
    Some(PsiValue::Number(value / pow10(frac.len())))
}

/// Go's `math.Pow10`: exact powers of ten as float64 (infinite past 308).
fn pow10(n: usize) -> f64 {
    const EXACT: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ];
    match EXACT.get(n) {
        Some(&p) => p,
        None if n > 308 => f64::INFINITY,
        // Rare (a value with over 22 decimals): the correctly rounded power, as Go's table.
        None => format!("1e{n}").parse().unwrap_or(f64::INFINITY),
    }
}

/// The lines of a file as Go's `bufio.Scanner` splits them: at `\n`, a `\r` before it
/// dropped, the last line counted only when not empty.
fn go_lines(text: &str) -> impl Iterator<Item = &str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let empty = text.is_empty();
    body.split('\n')
        .filter(move |_| !empty)
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
}

/// Go's `bufio.MaxScanTokenSize`: a longer line stops Talos's scanner with an error.
const GO_MAX_LINE: usize = 64 * 1024;

/// Parses a pressure file (nested keyed format) as Talos's `ParseNestedKeyedValues` does:
/// each line a key, one space, then `subkey=value` fields; a line without a space (a blank
/// line too), a field without `=` or a value that is not one is an error, which Talos (and
/// the collector) reads as every value of that subtree 0. Later lines and fields win.
/// Allocates nothing unless it fails: it runs every cycle per subtree.
pub fn pressure(text: &str) -> Result<Pressure, ParseError> {
    let mut out = Pressure::default();
    for (i, line) in go_lines(text).enumerate() {
        if line.len() >= GO_MAX_LINE {
            return Err(error(i + 1, "line too long"));
        }
        let (name, values) = line
            .split_once(' ')
            .ok_or_else(|| error(i + 1, format!("invalid format: no space in {line:?}")))?;
        let kind = PsiKind::ALL.into_iter().find(|k| k.name() == name);
        let mut fields = [None; 4];
        for word in values.split_whitespace() {
            let (key, value) = word
                .split_once('=')
                .ok_or_else(|| error(i + 1, format!("expected key=value, found {word:?}")))?;
            let value = psi_value(value).ok_or_else(|| {
                error(i + 1, format!("{key}: expected a number, found {value:?}"))
            })?;
            if let Some(span) = PsiSpan::ALL.into_iter().find(|s| s.name() == key)
                && let Some(slot) = fields.get_mut(span as usize)
            {
                *slot = Some(value);
            }
        }
        if let Some(slot) = kind.and_then(|k| out.lines.get_mut(k as usize)) {
            *slot = Some(fields);
        }
    }
    Ok(out)
}

/// `/proc/meminfo`: `Key:   value kB` lines (a few, such as `HugePages_Total`, have no unit),
/// values in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Meminfo(pub Vec<(String, u64)>);

impl Meminfo {
    /// The value of `key` (`MemTotal`, `MemAvailable`, …) in bytes (a count for unit-less keys).
    pub fn get(&self, key: &str) -> Option<u64> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

/// Parses `/proc/meminfo`. A line that is not `Key: number [kB]` is an error (the format is
/// stable since Linux 2.6); `kB` values are converted to bytes.
pub fn meminfo(text: &str) -> Result<Meminfo, ParseError> {
    meminfo_entries(text)
        .map(|r| r.map(|(k, v)| (k.to_owned(), v)))
        .collect::<Result<Vec<_>, _>>()
        .map(Meminfo)
}

/// The `(key, bytes)` entries of `/proc/meminfo`, lazily and without allocating (the daemon
/// reads two of them every cycle).
pub fn meminfo_entries(text: &str) -> impl Iterator<Item = Result<(&str, u64), ParseError>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, line)| meminfo_line(i + 1, line))
}

fn meminfo_line(n: usize, line: &str) -> Result<(&str, u64), ParseError> {
    let (key, rest) = line
        .split_once(':')
        .ok_or_else(|| error(n, format!("expected \"Key: value\", found {line:?}")))?;
    let mut fields = rest.split_whitespace();
    let value: u64 = fields
        .next()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| error(n, format!("{key}: expected a number, found {rest:?}")))?;
    let value = match (fields.next(), fields.next()) {
        (None, _) => value,
        (Some("kB"), None) => value
            .checked_mul(1024)
            .ok_or_else(|| error(n, format!("{key}: {value} kB overflows")))?,
        _ => return Err(error(n, format!("{key}: unexpected unit in {rest:?}"))),
    };
    Ok((key.trim(), value))
}

/// `/proc/zoneinfo`: the sum of every zone's `low` watermark, in pages (what
/// `si_mem_available()` compares half the page cache against).
pub fn zoneinfo_low_pages(text: &str) -> Result<u64, ParseError> {
    let mut sum: u64 = 0;
    let mut zones = 0;
    for (i, line) in text.lines().enumerate() {
        let mut fields = line.split_whitespace();
        if fields.next() != Some("low") {
            continue;
        }
        let value: u64 = fields
            .next()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| error(i + 1, format!("expected \"low <pages>\", found {line:?}")))?;
        sum = sum.saturating_add(value);
        zones += 1;
    }
    if zones == 0 {
        return Err(error(0, "no zone has a low watermark"));
    }
    Ok(sum)
}
