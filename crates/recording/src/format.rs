//! The recording format, version 2: UTF-8 text, one record per line, fields separated by one
//! space.
//!
//! ```text
//! oomwarden-recording 2                       header: format name and version
//! meta {"startedAt":"…","startNs":…,…}        Meta, one JSON object
//! k                                           segment start: path ids are forgotten
//! p 0 /sys/fs/cgroup/memory.pressure          path id 0 (escaped path)
//! c 5023114000 tick                           a cycle at this monotonic time (tick|pressure)
//! f 0 some avg10=0.00 …\nfull avg10=0.00 …\n  file 0 read this (escaped bytes)
//! F 3 2                                       reading file 3 failed with errno 2 (ENOENT)
//! d 4 besteffort burstable guaranteed         listing directory 4 gave these subdirectories
//! D 4 2                                       listing directory 4 failed with errno 2
//! i 5 1                                       directory 5 exists (1) or not (0)
//! n {"pods":{…},"containers":{…}}             who the pods are from this cycle on (version 3)
//! t 5026871000                                the trigger fired in this cycle; its cooldown
//!                                             counts from this time, after the kill (version 4)
//! # …                                         comment; empty lines are ignored too
//! end                                         the recording is complete (the last line)
//! ```
//!
//! Version 4 adds `t`: when the trigger fired, the monotonic time its cooldown counts from (as
//! Talos's `ActionTriggered`, after the kill attempt, which can take seconds), so that a
//! replay's `time_since_trigger` is the daemon's. Version 3 adds `n`: the pod identities (namespace, name, labels, container names) the
//! daemon ranked with, written in the cycle where they changed and again at each segment
//! start, so that a replay ranks with the identities the daemon had. Version 2 adds `end`, written when a recording is closed properly: a version 2 recording
//! without it, or whose last line has no newline, was cut short (a killed recorder, a full
//! disk), so its last cycle may lack reads and is left out, and the recording says it is
//! truncated. Version 1 (no `end`) is still read; only a cut last line shows it was cut.
//!
//! A cycle lists a read only when its result differs from the previous cycle's last result
//! for the same path and kind (delta coding): a read not listed returned what it returned
//! before. When one path gave several results in one cycle (the metrics and the candidates
//! both read a Guaranteed pod's `memory.current`), all are listed, in order. A segment (`k`)
//! starts with fresh path ids and lists every read of its first cycle, so a file cut at a
//! segment boundary, or a flight-recorder window made of whole segments, reads on its own.
//!
//! Escaping: bytes 0x21–0x7e except `\` stand for themselves, as does space in file contents;
//! `\\`, `\n`, `\t` and `\xHH` cover the rest (space is `\x20` in paths and directory names).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use oomwarden_model::Identities;
use serde::{Deserialize, Serialize};

/// The first word of every recording.
pub const FORMAT_NAME: &str = "oomwarden-recording";
/// The version this code writes; it reads this one and version 1.
pub const FORMAT_VERSION: u32 = 4;

/// At most this many bytes of identities per `n` line: beyond, the recorded copy drops the
/// pods' annotations, then their labels (a ranking on those replays without them).
pub const MAX_IDENTITY_BYTES: usize = 1 << 20;
/// The line that closes a complete recording.
pub const END_LINE: &str = "end\n";

/// What a recording says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    /// Wall time (RFC 3339) at monotonic time `start_ns`: any cycle's wall time follows.
    pub started_at: String,
    /// The monotonic time, nanoseconds, that `started_at` names.
    pub start_ns: u64,
    /// The cgroup v2 root the paths are under (replay uses the same, so records match).
    pub cgroup_root: String,
    /// The procfs root.
    pub proc_root: String,
    /// The layout's name (`talos`, `systemd`, `cgroupfs`, `host`, or `custom`).
    pub layout: String,
    /// For a custom layout: the OOMWardenConfig document that defines it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout_document: Option<String>,
    /// The recording process's own cgroup (relative), never a candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_cgroup: Option<String>,
    /// When the trigger last fired before the first cycle (a flight-recorder window starts in
    /// the middle of a run): the replay starts its cooldown from there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_trigger_ns: Option<u64>,
    /// The sampling interval, milliseconds.
    pub interval_ms: u64,
    /// Who recorded it: `record` (`oomwarden record`), `daemon` (`oomwarden run --record`) or
    /// `flight-recorder` (the daemon's in-memory window).
    pub source: String,
    /// The oomwarden version that recorded it.
    pub version: String,
    /// The effective configuration of the daemon that recorded it (`oomwarden check` YAML);
    /// `replay` uses it when no `--config` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    /// The node's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The kernel release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// What happened while it was recorded, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Why a cycle ran (the model's type, as action records name it).
pub use oomwarden_model::Wakeup;

/// The three kinds of read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Reading a file's content.
    File,
    /// Listing a directory's subdirectories.
    Dirs,
    /// Asking whether a directory exists.
    IsDir,
}

/// The result of one read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observation {
    /// The file's bytes.
    File(Vec<u8>),
    /// Reading the file failed with this errno.
    FileError(i32),
    /// The subdirectories' names.
    Dirs(Vec<String>),
    /// Listing failed with this errno.
    DirsError(i32),
    /// Whether the directory exists.
    IsDir(bool),
}

impl Observation {
    /// Which kind of read it answers.
    pub fn kind(&self) -> Kind {
        match self {
            Observation::File(_) | Observation::FileError(_) => Kind::File,
            Observation::Dirs(_) | Observation::DirsError(_) => Kind::Dirs,
            Observation::IsDir(_) => Kind::IsDir,
        }
    }
}

/// One cycle: its time, what woke it, and its reads (all of them when recorded; after
/// parsing, only those whose result changed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    /// Monotonic time, nanoseconds.
    pub at_ns: u64,
    /// What woke it.
    pub wakeup: Wakeup,
    /// (absolute path, result), in the order read.
    pub reads: Vec<(Arc<str>, Observation)>,
    /// The pod identities in force from this cycle on, when given (recorded: the daemon's
    /// snapshot; parsed: only where an `n` line is).
    pub identities: Option<Arc<Identities>>,
    /// When the trigger fired in this cycle: the monotonic time its cooldown counts from.
    pub triggered_at: Option<u64>,
}

/// A parsed recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recording {
    /// Its metadata.
    pub meta: Meta,
    /// Its cycles, oldest first; each lists only the reads whose result changed.
    pub cycles: Vec<Cycle>,
    /// Why the recording is known to be cut short (its last, possibly incomplete, cycle was
    /// left out), or `None`.
    pub truncated: Option<String>,
}

impl Recording {
    /// Marks the recording as cut short for `reason` and leaves out its last cycle, which
    /// may lack reads (a replay would otherwise make a decision the daemon never made).
    /// Once only: a recording already marked keeps its cycles and first reason.
    pub fn mark_truncated(&mut self, reason: String) {
        if self.truncated.is_none() {
            self.cycles.pop();
            self.truncated = Some(reason);
        }
    }

    /// From the first to the last cycle, nanoseconds.
    pub fn span_ns(&self) -> u64 {
        match (self.cycles.first(), self.cycles.last()) {
            (Some(a), Some(b)) => b.at_ns.saturating_sub(a.at_ns),
            _ => 0,
        }
    }
}

/// A recording that cannot be read, with the line (1-based) where it went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

/// Escapes bytes for a line; `space` says whether a space must be escaped too.
pub(crate) fn escape(bytes: &[u8], space: bool, out: &mut String) {
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b' ' if !space => out.push(' '),
            0x21..=0x7e => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
}

/// The inverse of [`escape`].
fn unescape(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len());
    let mut bytes = text.bytes();
    while let Some(b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match bytes.next() {
            Some(b'\\') => out.push(b'\\'),
            Some(b'n') => out.push(b'\n'),
            Some(b't') => out.push(b'\t'),
            Some(b'x') => {
                let hex: Vec<u8> = bytes.by_ref().take(2).collect();
                let value = std::str::from_utf8(&hex)
                    .ok()
                    .filter(|h| h.len() == 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| "bad \\x escape (two hex digits expected)".to_owned())?;
                out.push(value);
            }
            Some(other) => return Err(format!("unknown escape \\{}", char::from(other))),
            None => return Err("a line ends with a lone \\".to_owned()),
        }
    }
    Ok(out)
}

fn unescape_utf8(text: &str) -> Result<String, String> {
    String::from_utf8(unescape(text)?).map_err(|_| "not UTF-8 after unescaping".to_owned())
}

/// The header lines of a recording.
pub fn header(meta: &Meta) -> String {
    let json = serde_json::to_string(meta).unwrap_or_else(|_| "{}".to_owned());
    format!("{FORMAT_NAME} {FORMAT_VERSION}\nmeta {json}\n")
}

/// Turns cycles into lines, remembering what the previous cycle read (delta coding).
#[derive(Debug, Default)]
pub(crate) struct Encoder {
    ids: HashMap<Arc<str>, u32>,
    /// The last result per path id and kind.
    last: Vec<[Option<Observation>; 3]>,
    /// Scratch, kept between cycles to save allocations: each key's position in the cycle,
    /// and (position, read index) pairs.
    position: HashMap<(Kind, u32), usize>,
    entries: Vec<(usize, usize, (Kind, u32))>,
    /// The identities last written (repeated at a segment start).
    identities: Option<Arc<Identities>>,
}

fn slot(kind: Kind) -> usize {
    match kind {
        Kind::File => 0,
        Kind::Dirs => 1,
        Kind::IsDir => 2,
    }
}

impl Encoder {
    /// Encodes one cycle. `segment` starts a new segment: fresh ids, every read listed.
    pub(crate) fn encode(&mut self, mut cycle: Cycle, segment: bool, out: &mut String) {
        if segment {
            self.ids.clear();
            self.last.clear();
            out.push_str("k\n");
        }
        let identities = cycle.identities.take();
        // Group the reads per (kind, path), first occurrence first, each group in read order.
        self.position.clear();
        self.entries.clear();
        for (index, (path, obs)) in cycle.reads.iter().enumerate() {
            let next = u32::try_from(self.ids.len()).unwrap_or(u32::MAX);
            let id = match self.ids.get(path) {
                Some(id) => *id,
                None => {
                    self.ids.insert(Arc::clone(path), next);
                    self.last.push(Default::default());
                    out.push_str("p ");
                    let _ = write!(out, "{next} ");
                    escape(path.as_bytes(), true, out);
                    out.push('\n');
                    next
                }
            };
            let key = (obs.kind(), id);
            let count = self.position.len();
            let position = *self.position.entry(key).or_insert(count);
            self.entries.push((position, index, key));
        }
        self.entries
            .sort_unstable_by_key(|(position, index, _)| (*position, *index));
        let _ = writeln!(out, "c {} {}", cycle.at_ns, cycle.wakeup.name());
        let mut group = 0;
        while group < self.entries.len() {
            let Some(&(position, _, key)) = self.entries.get(group) else {
                break;
            };
            let end = self
                .entries
                .get(group..)
                .and_then(|rest| rest.iter().position(|e| e.0 != position))
                .map_or(self.entries.len(), |n| group + n);
            let range = group..end;
            group = end;
            let Some(last) = self
                .last
                .get_mut(usize::try_from(key.1).unwrap_or(usize::MAX))
                .and_then(|slots| slots.get_mut(slot(key.0)))
            else {
                continue;
            };
            if range.len() == 1 {
                // The common case: read once. Listed only when it changed.
                let Some((_, obs)) = self
                    .entries
                    .get(range.start)
                    .and_then(|e| cycle.reads.get_mut(e.1))
                else {
                    continue;
                };
                if last.as_ref() != Some(&*obs) {
                    line(key.1, obs, out);
                    *last = Some(std::mem::replace(obs, Observation::IsDir(false)));
                }
                continue;
            }
            let indices: Vec<usize> = self
                .entries
                .get(range)
                .unwrap_or_default()
                .iter()
                .map(|e| e.1)
                .collect();
            // Repeats in a row are one result.
            let mut results: Vec<usize> = Vec::with_capacity(indices.len());
            for i in indices {
                let same = results
                    .last()
                    .and_then(|j| cycle.reads.get(*j))
                    .zip(cycle.reads.get(i))
                    .is_some_and(|(a, b)| a.1 == b.1);
                if !same {
                    results.push(i);
                }
            }
            let unchanged = match results.as_slice() {
                [only] => last.as_ref() == cycle.reads.get(*only).map(|r| &r.1),
                _ => false,
            };
            if !unchanged {
                for i in &results {
                    if let Some((_, obs)) = cycle.reads.get(*i) {
                        line(key.1, obs, out);
                    }
                }
            }
            if let Some((_, obs)) = results.last().and_then(|i| cycle.reads.get_mut(*i)) {
                *last = Some(std::mem::replace(obs, Observation::IsDir(false)));
            }
        }
        self.encode_identities(identities, segment, out);
        if let Some(at) = cycle.triggered_at {
            let _ = writeln!(out, "t {at}");
        }
    }

    /// The `n` line: when the identities changed, and at a segment start (the last known).
    fn encode_identities(
        &mut self,
        identities: Option<Arc<Identities>>,
        segment: bool,
        out: &mut String,
    ) {
        let changed = match (&identities, &self.identities) {
            (Some(new), Some(old)) => segment || new != old,
            (Some(_), None) => true,
            (None, Some(_)) => segment,
            (None, None) => false,
        };
        if let Some(ids) = identities {
            self.identities = Some(ids);
        }
        if changed && let Some(ids) = &self.identities {
            out.push_str("n ");
            out.push_str(&identity_json(ids));
            out.push('\n');
        }
    }
}

/// The identities as one JSON line, at most [`MAX_IDENTITY_BYTES`] (annotations, then labels,
/// dropped from the copy when over).
fn identity_json(ids: &Identities) -> String {
    let text = serde_json::to_string(ids).unwrap_or_default();
    if text.len() <= MAX_IDENTITY_BYTES {
        return text;
    }
    let mut lighter = ids.clone();
    for pod in lighter.pods.values_mut() {
        pod.annotations.clear();
    }
    let text = serde_json::to_string(&lighter).unwrap_or_default();
    if text.len() <= MAX_IDENTITY_BYTES {
        return text;
    }
    for pod in lighter.pods.values_mut() {
        pod.labels.clear();
    }
    serde_json::to_string(&lighter).unwrap_or_default()
}

fn line(id: u32, obs: &Observation, out: &mut String) {
    match obs {
        Observation::File(bytes) => {
            let _ = write!(out, "f {id} ");
            escape(bytes, false, out);
        }
        Observation::FileError(errno) => {
            let _ = write!(out, "F {id} {errno}");
        }
        Observation::Dirs(names) => {
            let _ = write!(out, "d {id}");
            for name in names {
                out.push(' ');
                escape(name.as_bytes(), true, out);
            }
        }
        Observation::DirsError(errno) => {
            let _ = write!(out, "D {id} {errno}");
        }
        Observation::IsDir(yes) => {
            let _ = write!(out, "i {id} {}", u8::from(*yes));
        }
    }
    out.push('\n');
}

/// Parses a recording. Every malformed line is an error naming its number: a recording is
/// evidence, and a replay of a silently truncated one would mislead. A recording cut short
/// (see the module's documentation) parses, marked [`Recording::truncated`].
#[allow(
    clippy::too_many_lines,
    reason = "one arm per record tag of the format"
)]
pub fn parse(text: &str) -> Result<Recording, ParseError> {
    // A last line without its newline was cut while being written: it is not read (a cut
    // `f` line would read as a shorter file).
    let (text, cut_line) = match text.rfind('\n') {
        Some(i) if i + 1 < text.len() => (text.get(..=i).unwrap_or_default(), true),
        _ => (text, false),
    };
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let err = |line: usize, reason: String| ParseError { line, reason };
    let (_, first) = lines
        .next()
        .ok_or_else(|| err(1, "empty: not an oomwarden recording".to_owned()))?;
    let version = first
        .strip_prefix(FORMAT_NAME)
        .and_then(|v| v.strip_prefix(' '))
        .ok_or_else(|| {
            err(
                1,
                format!("not an oomwarden recording (it must start with \"{FORMAT_NAME} {FORMAT_VERSION}\")"),
            )
        })?;
    let version = match version.trim().parse::<u32>() {
        Ok(v @ 1..=FORMAT_VERSION) => v,
        Ok(v) => {
            return Err(err(
                1,
                format!("format version {v}; this oomwarden reads versions 1 to {FORMAT_VERSION}"),
            ));
        }
        Err(_) => return Err(err(1, format!("bad format version {version:?}"))),
    };
    let mut ended = false;
    let mut meta = None;
    let mut cycles: Vec<Cycle> = Vec::new();
    let mut paths: HashMap<u32, Arc<str>> = HashMap::new();
    for (n, raw) in lines {
        if raw.is_empty() || raw.starts_with('#') {
            continue;
        }
        if ended {
            return Err(err(n, "a record after the end line".to_owned()));
        }
        let (tag, rest) = raw.split_once(' ').unwrap_or((raw, ""));
        if tag == "end" && rest.is_empty() && version >= 2 {
            ended = true;
            continue;
        }
        if tag == "meta" {
            let m: Meta =
                serde_json::from_str(rest).map_err(|e| err(n, format!("bad meta: {e}")))?;
            meta = Some(m);
            continue;
        }
        if tag == "k" {
            paths.clear();
            continue;
        }
        if tag == "n" && version >= 3 {
            let ids: Identities =
                serde_json::from_str(rest).map_err(|e| err(n, format!("bad identities: {e}")))?;
            let cycle = cycles
                .last_mut()
                .ok_or_else(|| err(n, "identities before the first cycle".to_owned()))?;
            cycle.identities = Some(Arc::new(ids));
            continue;
        }
        if tag == "t" && version >= 4 {
            let at: u64 = rest
                .parse()
                .map_err(|_| err(n, format!("bad trigger time {rest:?}")))?;
            let cycle = cycles
                .last_mut()
                .ok_or_else(|| err(n, "a trigger before the first cycle".to_owned()))?;
            if at < cycle.at_ns {
                return Err(err(n, "a trigger before its cycle".to_owned()));
            }
            cycle.triggered_at = Some(at);
            continue;
        }
        if tag == "c" {
            let mut words = rest.split(' ');
            let at_ns = words
                .next()
                .and_then(|w| w.parse::<u64>().ok())
                .ok_or_else(|| err(n, "a cycle needs a monotonic time in ns".to_owned()))?;
            let wakeup = match words.next() {
                Some("tick") => Wakeup::Tick,
                Some("pressure") => Wakeup::Pressure,
                other => return Err(err(n, format!("unknown wake-up {other:?}"))),
            };
            if cycles.last().is_some_and(|c| c.at_ns > at_ns) {
                return Err(err(n, "cycle times go backwards".to_owned()));
            }
            cycles.push(Cycle {
                at_ns,
                wakeup,
                reads: Vec::new(),
                identities: None,
                triggered_at: None,
            });
            continue;
        }
        let (id_text, value) = rest.split_once(' ').unwrap_or((rest, ""));
        let id: u32 = id_text
            .parse()
            .map_err(|_| err(n, format!("bad path id {id_text:?}")))?;
        if tag == "p" {
            let path = unescape_utf8(value).map_err(|e| err(n, e))?;
            paths.insert(id, Arc::from(path));
            continue;
        }
        let path = paths
            .get(&id)
            .cloned()
            .ok_or_else(|| err(n, format!("path id {id} is not defined in this segment")))?;
        let errno = || {
            value
                .parse::<i32>()
                .map_err(|_| err(n, format!("bad errno {value:?}")))
        };
        let obs = match tag {
            "f" => Observation::File(unescape(value).map_err(|e| err(n, e))?),
            "F" => Observation::FileError(errno()?),
            "d" => Observation::Dirs(
                value
                    .split(' ')
                    .filter(|w| !w.is_empty())
                    .map(unescape_utf8)
                    .collect::<Result<_, _>>()
                    .map_err(|e| err(n, e))?,
            ),
            "D" => Observation::DirsError(errno()?),
            "i" => match value {
                "0" => Observation::IsDir(false),
                "1" => Observation::IsDir(true),
                _ => return Err(err(n, format!("bad directory flag {value:?}"))),
            },
            _ => return Err(err(n, format!("unknown record {tag:?}"))),
        };
        let cycle = cycles
            .last_mut()
            .ok_or_else(|| err(n, "a read before the first cycle".to_owned()))?;
        cycle.reads.push((path, obs));
    }
    let meta = meta.ok_or_else(|| err(1, "no meta line".to_owned()))?;
    let mut recording = Recording {
        meta,
        cycles,
        truncated: None,
    };
    if cut_line {
        recording.mark_truncated(
            "its last line is cut (the recorder was stopped while writing?)".to_owned(),
        );
    } else if version >= 2 && !ended {
        recording
            .mark_truncated("it has no end line (the recorder was stopped abruptly?)".to_owned());
    }
    Ok(recording)
}

/// Metadata for tests.
#[cfg(test)]
pub(crate) fn tests_meta() -> Meta {
    Meta {
        started_at: "2026-11-29T10:00:00.000Z".into(),
        start_ns: 1_000,
        cgroup_root: "/sys/fs/cgroup".into(),
        proc_root: "/proc".into(),
        layout: "talos".into(),
        layout_document: None,
        own_cgroup: None,
        last_trigger_ns: None,
        interval_ms: 100,
        source: "record".into(),
        version: "0.1.0".into(),
        config: None,
        hostname: None,
        kernel: None,
        description: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn meta() -> Meta {
        super::tests_meta()
    }

    fn cycle(at_ns: u64, reads: &[(&str, Observation)]) -> Cycle {
        Cycle {
            at_ns,
            wakeup: Wakeup::Tick,
            reads: reads
                .iter()
                .map(|(p, o)| (Arc::from(*p), o.clone()))
                .collect(),
            identities: None,
            triggered_at: None,
        }
    }

    /// Version 3: identities are written where they change and again at a segment start, and
    /// read back where they were written.
    #[test]
    fn identities_are_written_when_they_change_and_at_each_segment() {
        use oomwarden_model::PodIdentity;
        let ids = |ns: &str| {
            let mut i = Identities::default();
            i.pods.insert(
                "u1".to_owned(),
                PodIdentity {
                    uid: "u1".to_owned(),
                    namespace: ns.to_owned(),
                    name: "p".to_owned(),
                    ..PodIdentity::default()
                },
            );
            Some(Arc::new(i))
        };
        let mut enc = Encoder::default();
        let mut text = header(&meta());
        for (at, given, segment) in [
            (1, ids("a"), true),
            (2, None, false),
            (3, ids("a"), false),
            (4, ids("b"), false),
            (5, None, true),
        ] {
            let mut c = cycle(at, &[]);
            c.identities = given;
            enc.encode(c, segment, &mut text);
        }
        text.push_str(END_LINE);
        assert_eq!(
            text.lines().filter(|l| l.starts_with("n ")).count(),
            3,
            "{text}"
        );
        let parsed = parse(&text).unwrap_or_else(|e| panic!("{e}"));
        let namespaces: Vec<Option<String>> = parsed
            .cycles
            .iter()
            .map(|c| {
                c.identities
                    .as_ref()
                    .and_then(|i| i.pod("u1").map(|p| p.namespace.clone()))
            })
            .collect();
        assert_eq!(
            namespaces,
            [
                Some("a".into()),
                None,
                None,
                Some("b".into()),
                Some("b".into())
            ]
        );
        // Not in version 2.
        let v2 = text.replacen(
            &format!("{FORMAT_NAME} {FORMAT_VERSION}"),
            &format!("{FORMAT_NAME} 2"),
            1,
        );
        assert!(parse(&v2).is_err());
    }

    #[test]
    fn unchanged_reads_are_left_out_and_repeats_kept_in_order() {
        let a = "/cg/a/memory.current";
        let mut enc = Encoder::default();
        let mut text = header(&meta());
        let first = cycle(
            1,
            &[
                (a, Observation::File(b"10\n".to_vec())),
                ("/cg/a", Observation::Dirs(vec!["x y".into(), "z".into()])),
            ],
        );
        enc.encode(first.clone(), true, &mut text);
        // Same result: nothing listed for the cycle.
        enc.encode(
            cycle(2, &[(a, Observation::File(b"10\n".to_vec()))]),
            false,
            &mut text,
        );
        // Read twice, the first result unchanged: both listed.
        enc.encode(
            cycle(
                3,
                &[
                    (a, Observation::File(b"10\n".to_vec())),
                    (a, Observation::File(b"11\n".to_vec())),
                ],
            ),
            false,
            &mut text,
        );
        assert_eq!(
            text.lines().skip(2).collect::<Vec<_>>(),
            [
                "k",
                "p 0 /cg/a/memory.current",
                "p 1 /cg/a",
                "c 1 tick",
                "f 0 10\\n",
                "d 1 x\\x20y z",
                "c 2 tick",
                "c 3 tick",
                "f 0 10\\n",
                "f 0 11\\n",
            ]
        );
        text.push_str(END_LINE);
        let parsed = parse(&text).unwrap();
        assert_eq!(parsed.truncated, None);
        assert_eq!(parsed.cycles.len(), 3);
        assert_eq!(parsed.cycles[0], first);
        assert!(parsed.cycles[1].reads.is_empty());
        assert_eq!(parsed.cycles[2].reads.len(), 2);
    }

    #[test]
    fn errors_name_the_line() {
        let h = header(&meta());
        for (body, want) in [
            ("c x tick", "line 3: a cycle needs"),
            ("c 1 nap", "line 3: unknown wake-up"),
            ("c 2 tick\nc 1 tick", "line 4: cycle times go backwards"),
            ("c 1 tick\nf 9 x", "line 4: path id 9 is not defined"),
            ("p 0 /a\nf 0 x", "line 4: a read before the first cycle"),
            ("c 1 tick\np 0 /a\nf 0 \\q", "line 5: unknown escape"),
            ("c 1 tick\np 0 /a\ni 0 2", "line 5: bad directory flag"),
            ("c 1 tick\np 0 /a\nz 0 1", "line 5: unknown record"),
        ] {
            let e = parse(&format!("{h}{body}\n")).unwrap_err().to_string();
            assert!(e.starts_with(want), "{body:?}: {e}");
        }
        assert!(
            parse("oomwarden-recording 5\n")
                .unwrap_err()
                .to_string()
                .contains("format version 5")
        );
        assert!(
            parse("hello\n")
                .unwrap_err()
                .to_string()
                .contains("not an oomwarden recording")
        );
        assert!(
            parse("oomwarden-recording 1\n")
                .unwrap_err()
                .to_string()
                .contains("no meta")
        );
    }

    // Issue 14, item 8: a recording cut short used to replay its last cycle with the reads
    // it lacked read as missing: a decision the daemon never made.
    #[test]
    fn a_recording_cut_short_is_marked_and_its_last_cycle_left_out() {
        let h = header(&meta());
        let body = "k\np 0 /cg/memory.pressure\nc 1 tick\nf 0 some\nc 2 tick\nf 0 full\n";
        let whole = parse(&format!("{h}{body}end\n")).unwrap();
        assert_eq!((whole.cycles.len(), whole.truncated.as_deref()), (2, None));
        // No end line: the last cycle may lack reads.
        let cut = parse(&format!("{h}{body}")).unwrap();
        assert_eq!(cut.cycles.len(), 1);
        assert!(cut.truncated.unwrap().contains("no end line"));
        // The last line cut while written: `f 0 fu` would read as a shorter file.
        let cut = parse(&format!("{h}{body}c 3 tick\nf 0 fu")).unwrap();
        assert_eq!(cut.cycles.len(), 2);
        assert!(cut.truncated.unwrap().contains("last line is cut"));
        // A cut line that would not even parse (a lone backslash) is not an error.
        let cut = parse(&format!("{h}{body}c 3 tick\nf 0 a\\")).unwrap();
        assert_eq!(cut.cycles.len(), 2);
        // Version 1 has no end line: complete unless its last line is cut.
        let v1 = format!("oomwarden-recording 1\n{}", h.lines().nth(1).unwrap());
        let old = parse(&format!("{v1}\n{body}")).unwrap();
        assert_eq!((old.cycles.len(), old.truncated), (2, None));
        let old = parse(&format!("{v1}\n{body}c 3 tick\nf 0 fu")).unwrap();
        assert_eq!(old.cycles.len(), 2);
        assert!(old.truncated.is_some());
        // Nothing after the end line.
        let e = parse(&format!("{h}{body}end\nc 3 tick\n")).unwrap_err();
        assert!(e.to_string().contains("after the end line"), "{e}");
        // Marked once: the first reason and one cycle dropped.
        let mut r = parse(&format!("{h}{body}")).unwrap();
        r.mark_truncated("again".to_owned());
        assert_eq!(r.cycles.len(), 1);
        assert!(r.truncated.unwrap().contains("no end line"));
    }

    fn observation() -> impl Strategy<Value = Observation> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(Observation::File),
            (-5..200i32).prop_map(Observation::FileError),
            proptest::collection::vec("[ -~é]{1,8}", 0..4).prop_map(Observation::Dirs),
            (-5..200i32).prop_map(Observation::DirsError),
            any::<bool>().prop_map(Observation::IsDir),
        ]
    }

    proptest! {
        #[test]
        fn segments_round_trip(
            cycles in proptest::collection::vec(
                proptest::collection::vec(("/[a-c ]{1,3}", observation()), 0..6), 1..6),
        ) {
            // Each cycle is its own segment: every read comes back, repeats collapsed.
            let mut enc = Encoder::default();
            let mut text = header(&meta());
            let originals: Vec<Cycle> = cycles.iter().enumerate().map(|(i, reads)| Cycle {
                at_ns: i as u64,
                wakeup: Wakeup::Pressure,
                reads: reads.iter().map(|(p, o)| (Arc::from(p.as_str()), o.clone())).collect(),
                identities: None,
                triggered_at: None,
            }).collect();
            for c in &originals {
                enc.encode(c.clone(), true, &mut text);
            }
            text.push_str(END_LINE);
            let parsed = parse(&text).unwrap();
            prop_assert_eq!(parsed.cycles.len(), originals.len());
            for (got, want) in parsed.cycles.iter().zip(&originals) {
                for (path, obs) in &got.reads {
                    prop_assert!(want.reads.iter().any(|(p, o)| p == path && o == obs));
                }
                for (path, obs) in &want.reads {
                    prop_assert!(got.reads.iter().any(|(p, o)| p == path && o.kind() == obs.kind()));
                }
            }
        }

        #[test]
        fn parse_never_panics(body in "[ -~\n\\\\]{0,300}") {
            let _ = parse(&format!("{}{body}", header(&meta())));
        }

        #[test]
        fn escape_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..64), space: bool) {
            let mut s = String::new();
            escape(&bytes, space, &mut s);
            prop_assert!(!s.contains('\n') && !s.contains('\t'));
            if space { prop_assert!(!s.contains(' ')); }
            prop_assert_eq!(unescape(&s).unwrap(), bytes);
        }
    }
}
