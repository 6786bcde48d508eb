//! The action history: the last 50 records in memory, every record appended to
//! `<state-dir>/actions.jsonl` (one JSON object per line, mode 0600 because command lines are
//! sensitive), loaded back at start.
//!
//! Crash safety: each record is written with a single `write` and `fsync`ed. A torn last line
//! (a crash mid-write) is skipped with a warning and cut off, so the next record starts on a
//! line of its own; a malformed line elsewhere is skipped with a warning. Neither is fatal.
//!
//! Bounds: past [`MAX_LINES`] lines or [`MAX_BYTES`] bytes the file is rewritten (atomically,
//! by rename) with its newest lines, at most [`KEEP_LINES`] and [`KEEP_BYTES`]. The file is
//! read as a stream, a line at a time (a line longer than [`MAX_LINE_BYTES`] is skipped
//! without being held), so the daemon's memory at start does not grow with the history.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, Write};
use std::path::{Path, PathBuf};

use oomwarden_model::{ActionRecord, WORKLOAD_KILLS_WINDOW, Workload, WorkloadKills};
use rustix::fs::OFlags;

use crate::statedir::StateDir;

/// Records kept in memory (Talos's `OOMActionLogKeep`).
pub const KEEP_IN_MEMORY: usize = 50;
/// Of those, warnings at most (a fifth): a warning never pushes a kill out.
pub const WARNINGS_IN_MEMORY: usize = KEEP_IN_MEMORY / 5;
/// Lines in `actions.jsonl` that trigger a compaction.
pub const MAX_LINES: usize = 10_000;
/// Lines kept by a compaction.
pub const KEEP_LINES: usize = 5_000;
/// Bytes of `actions.jsonl` that trigger a compaction.
pub const MAX_BYTES: u64 = 32 << 20;
/// Bytes kept by a compaction (whole lines).
pub const KEEP_BYTES: u64 = 16 << 20;
/// A line longer than this is not a record oomwarden wrote (a record is bounded to well under
/// 1 MiB: see `oomwarden_model::MAX_PIDS_LISTED`); it is skipped as malformed.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// The history file's name in the state directory.
pub const FILE_NAME: &str = "actions.jsonl";
/// A compaction's temporary file.
const TMP_NAME: &str = "actions.jsonl.tmp";

/// What a history file holds, read without changing it.
#[derive(Debug, Default)]
pub struct FileContents {
    /// The records kept, oldest first: every record ([`read`]), or the newest
    /// [`KEEP_IN_MEMORY`] (the daemon's start).
    pub records: Vec<ActionRecord>,
    /// Non-empty lines.
    pub lines: usize,
    /// The file's length in bytes.
    pub bytes: u64,
    /// One per skipped line (torn or malformed).
    pub warnings: Vec<String>,
    /// The length of the complete lines when the last one is torn.
    pub torn_at: Option<u64>,
    /// The last line is a whole record without its newline (kept; `open` adds the newline).
    pub missing_newline: bool,
    /// The highest `id` on any complete line, a skipped (malformed) record's included, so
    /// that no id is ever given twice.
    pub max_id: Option<u64>,
    /// What the daemon looks up in the whole file, not only in the records kept.
    pub index: Index,
}

/// What the daemon needs from the whole history, not only its newest records (found by the
/// fault suite: after 50 kernel OOM records the cooldown was lost at a restart, and with
/// `fromBoot` every restart recorded the whole kernel log again): kept beside the records,
/// built while the file is read at start and updated with each record. Bounded by the file's
/// own bound (10,000 lines).
#[derive(Debug, Clone, Default)]
pub struct Index {
    /// The last record of oomwarden's own (`kind: oomwarden`): the cooldown's reference.
    pub last_own: Option<ActionRecord>,
    /// The kernel OOM kills recorded: (monotonic time, victim PID).
    pub kernel_reports: std::collections::HashSet<(u64, Option<u32>)>,
    /// The kills of each workload, with their monotonic times and whether each says something
    /// about the node ([`ActionRecord::is_node_kill`]), oldest first (those older than
    /// [`WORKLOAD_KILLS_WINDOW`] dropped as the next is noted).
    pub workload_kills: std::collections::VecDeque<(Workload, u64, bool)>,
}

impl Index {
    fn note(&mut self, record: &ActionRecord) {
        if let Some(workload) = WorkloadKills::counts(record) {
            let window = u64::try_from(WORKLOAD_KILLS_WINDOW.as_nanos()).unwrap_or(u64::MAX);
            let now = record.monotonic_ns;
            self.workload_kills
                .retain(|(_, at, _)| *at <= now && now - *at <= window);
            self.workload_kills.push_back((
                workload.clone(),
                record.monotonic_ns,
                record.is_node_kill(),
            ));
        }
        match record.kind {
            // A stage's warning did nothing: it starts no cooldown.
            oomwarden_model::RecordKind::Oomwarden
                if record.outcome != oomwarden_model::Outcome::Warned =>
            {
                self.last_own = Some(record.clone());
            }
            oomwarden_model::RecordKind::Oomwarden => {}
            oomwarden_model::RecordKind::KernelOom => {
                self.kernel_reports
                    .insert((record.monotonic_ns, record.victim_pid));
            }
        }
    }
}

/// Reads `<state_dir>/actions.jsonl` without changing anything (for `oomwarden actions`
/// when the daemon is not running). A missing file is an empty history.
pub fn read(state_dir: &Path) -> Result<FileContents, HistoryError> {
    let path = state_dir.join(FILE_NAME);
    match File::open(&path) {
        Ok(f) => read_file(f, &path, usize::MAX),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(FileContents::default()),
        Err(e) => Err(wrap(&path)(e)),
    }
}

/// One line of the file, read with at most [`MAX_LINE_BYTES`] held.
enum Line {
    /// A line and whether it ended with a newline.
    Text(Vec<u8>, bool),
    /// A line longer than the bound (skipped to its end), and whether it ended with a newline.
    TooLong(u64, bool),
    End,
}

fn next_line(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> io::Result<Line> {
    buf.clear();
    let limit = u64::try_from(MAX_LINE_BYTES).unwrap_or(u64::MAX) + 1;
    let n = reader.by_ref().take(limit).read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(Line::End);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        return Ok(Line::Text(std::mem::take(buf), true));
    }
    if buf.len() <= MAX_LINE_BYTES {
        return Ok(Line::Text(std::mem::take(buf), false));
    }
    // Too long: skip to the end of the line without holding it.
    let mut skipped = u64::try_from(buf.len()).unwrap_or(u64::MAX);
    buf.clear();
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(Line::TooLong(skipped, false));
        }
        match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => {
                reader.consume(i + 1);
                return Ok(Line::TooLong(skipped + i as u64 + 1, true));
            }
            None => {
                let len = chunk.len();
                reader.consume(len);
                skipped += len as u64;
            }
        }
    }
}

/// Reads the history file as a stream, keeping the newest `keep` records.
fn read_file(file: File, path: &Path, keep: usize) -> Result<FileContents, HistoryError> {
    let mut out = FileContents::default();
    let mut reader = BufReader::with_capacity(64 << 10, file);
    let mut records = VecDeque::new();
    let mut buf = Vec::new();
    let mut offset = 0u64;
    let mut n = 0usize;
    loop {
        let start = offset;
        let line = next_line(&mut reader, &mut buf).map_err(wrap(path))?;
        n += 1;
        let (bytes, complete) = match line {
            Line::End => break,
            Line::TooLong(len, complete) => {
                offset += len;
                if complete {
                    out.lines += 1;
                    out.warnings.push(format!(
                        "{}: line {n}: skipping a line of more than {MAX_LINE_BYTES} bytes (not a record oomwarden writes)",
                        path.display()
                    ));
                } else {
                    out.torn_at = Some(start);
                    out.warnings.push(format!(
                        "{}: skipping a torn last line ({len} bytes, probably a crash while writing)",
                        path.display()
                    ));
                }
                continue;
            }
            Line::Text(bytes, complete) => {
                offset += bytes.len() as u64 + u64::from(complete);
                (bytes, complete)
            }
        };
        let text = String::from_utf8_lossy(&bytes);
        let text = text.strip_suffix('\r').unwrap_or(&text);
        if !complete {
            // The last line, without its newline: a whole record (a full disk at the last
            // byte, an editor) is kept; anything else is torn.
            match serde_json::from_str::<ActionRecord>(text) {
                Ok(record) => {
                    out.missing_newline = true;
                    out.lines += 1;
                    out.max_id = out.max_id.max(Some(record.id));
                    out.index.note(&record);
                    push_bounded(&mut records, record, keep);
                }
                Err(_) => {
                    out.torn_at = Some(start);
                    out.warnings.push(format!(
                        "{}: skipping a torn last line ({} bytes, probably a crash while writing)",
                        path.display(),
                        bytes.len()
                    ));
                }
            }
            continue;
        }
        if text.trim().is_empty() {
            continue;
        }
        out.lines += 1;
        match serde_json::from_str::<ActionRecord>(text) {
            Ok(record) => {
                out.max_id = out.max_id.max(Some(record.id));
                out.index.note(&record);
                push_bounded(&mut records, record, keep);
            }
            Err(e) => {
                // Its id is still taken, if it has one.
                let id = serde_json::from_str::<serde_json::Value>(text)
                    .ok()
                    .and_then(|v| v.get("id").and_then(serde_json::Value::as_u64));
                out.max_id = out.max_id.max(id);
                out.warnings.push(format!(
                    "{}: line {n}: skipping a malformed record: {e}",
                    path.display()
                ));
            }
        }
    }
    out.bytes = offset;
    out.records = records.into();
    Ok(out)
}

fn push_bounded(records: &mut VecDeque<ActionRecord>, record: ActionRecord, keep: usize) {
    if keep == 0 {
        return;
    }
    make_room(records, &record, keep);
    records.push_back(record);
}

/// Makes room in `records` (oldest first) for `record`: at most `keep` records, of which at
/// most a fifth are warnings (the oldest warning goes first), so that a stage's warnings never
/// push a kill out of what `status` and `actions` serve.
fn make_room(records: &mut VecDeque<ActionRecord>, record: &ActionRecord, keep: usize) {
    let warned = |r: &ActionRecord| r.outcome == oomwarden_model::Outcome::Warned;
    let warnings = records.iter().filter(|r| warned(r)).count();
    let full = records.len() >= keep;
    if ((warned(record) && warnings >= keep / 5) || (full && warnings > 0))
        && let Some(i) = records.iter().position(warned)
    {
        records.remove(i);
        return;
    }
    if full {
        records.pop_front();
    }
}

/// A failure to open or write the history.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct HistoryError {
    /// The file or directory.
    pub path: PathBuf,
    /// The error.
    pub source: io::Error,
}

fn wrap(path: &Path) -> impl FnOnce(io::Error) -> HistoryError + '_ {
    move |source| HistoryError {
        path: path.to_owned(),
        source,
    }
}

/// The history of actions.
#[derive(Debug)]
pub struct History {
    path: PathBuf,
    /// Lookups over the whole history.
    index: Index,
    /// Its state directory (none for a history in memory).
    dir: Option<StateDir>,
    recent: VecDeque<ActionRecord>,
    lines: usize,
    /// The file's length.
    bytes: u64,
    /// `None`: every id has been given (a file holding id `u64::MAX`).
    next_id: Option<u64>,
    /// Where to cut the file before the next append: a write failed after this length
    /// (a full disk) and the cut failed too.
    repair_at: Option<u64>,
    max_lines: usize,
    keep_lines: usize,
    max_bytes: u64,
    keep_bytes: u64,
    /// Compactions done since start.
    compactions: u64,
    /// Written to `path` (false for a replay's history, which lives in memory only).
    persist: bool,
}

impl History {
    /// Opens (creating if needed) `<state_dir>/actions.jsonl` and loads it. Returns the
    /// history and a warning for every line that had to be skipped. The directory is checked
    /// as [`StateDir::open`] checks it.
    pub fn open(state_dir: &Path) -> Result<(History, Vec<String>), HistoryError> {
        let mut notes = Vec::new();
        let dir = StateDir::open(state_dir, &mut notes).map_err(|e| HistoryError {
            path: state_dir.to_owned(),
            source: io::Error::other(e.to_string()),
        })?;
        let (history, mut warnings) = History::open_in(&dir)?;
        warnings.extend(notes);
        Ok((history, warnings))
    }

    /// [`History::open`] in a state directory already open: every file is opened relative to
    /// it, never through a symlink.
    pub fn open_in(dir: &StateDir) -> Result<(History, Vec<String>), HistoryError> {
        let path = dir.join(FILE_NAME);
        let mut notes = Vec::new();
        let file = match dir.open_file(FILE_NAME, OFlags::RDWR) {
            Ok(f) => Some(f),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(wrap(&path)(e)),
        };
        if let Some(f) = &file {
            notes.extend(tighten(f, &path)?);
        }
        // A compaction interrupted (a full disk, a crash) leaves its temporary file behind
        // (or one was planted: removed, never followed).
        if dir.exists(TMP_NAME) {
            let tmp = dir.join(TMP_NAME);
            dir.remove(TMP_NAME).map_err(wrap(&tmp))?;
            notes.push(format!(
                "{}: removed the temporary file of an interrupted compaction",
                tmp.display()
            ));
        }
        let read = match &file {
            Some(f) => read_file(f.try_clone().map_err(wrap(&path))?, &path, KEEP_IN_MEMORY)?,
            None => FileContents::default(),
        };
        let mut bytes = read.bytes;
        if let (true, Some(mut f)) = (read.missing_newline, file.as_ref()) {
            f.seek(io::SeekFrom::End(0)).map_err(wrap(&path))?;
            f.write_all(b"\n").map_err(wrap(&path))?;
            f.sync_data().map_err(wrap(&path))?;
            bytes += 1;
        }
        if let (Some(complete), Some(f)) = (read.torn_at, file.as_ref()) {
            f.set_len(complete).map_err(wrap(&path))?;
            f.sync_all().map_err(wrap(&path))?;
            bytes = complete;
        }
        // `None` once u64::MAX is taken: no id is left that was never given.
        let next_id = read.max_id.map_or(Some(0), |id| id.checked_add(1));
        if next_id.is_none() {
            notes.push(format!(
                "{}: the record ids are exhausted (id {} is taken); new records are kept in memory only until the file is moved away",
                path.display(),
                u64::MAX
            ));
        }
        let lines = read.lines;
        let mut warnings = read.warnings;
        warnings.extend(notes);
        Ok((
            History {
                path,
                index: read.index,
                dir: Some(dir.clone()),
                recent: read.records.into(),
                lines,
                bytes,
                next_id,
                repair_at: None,
                max_lines: MAX_LINES,
                keep_lines: KEEP_LINES,
                max_bytes: MAX_BYTES,
                keep_bytes: KEEP_BYTES,
                compactions: 0,
                persist: true,
            },
            warnings,
        ))
    }

    /// The history of a state directory that cannot be written (a read-only filesystem): the
    /// file's newest records are loaded (the cooldown and the ids continue), new ones are kept
    /// in memory only.
    pub fn open_read_only(dir: &StateDir) -> Result<(History, Vec<String>), HistoryError> {
        let path = dir.join(FILE_NAME);
        let read = match dir.open_file(FILE_NAME, OFlags::RDONLY) {
            Ok(f) => read_file(f, &path, KEEP_IN_MEMORY)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => FileContents::default(),
            Err(e) => return Err(wrap(&path)(e)),
        };
        let mut history = History::in_memory();
        history.path = path;
        history.next_id = read.max_id.map_or(Some(0), |id| id.checked_add(1));
        history.recent = read.records.into();
        history.index = read.index;
        Ok((history, read.warnings))
    }

    /// The last record of oomwarden's own in the whole history (the cooldown's reference at
    /// start), however many kernel records came after it.
    pub fn last_own(&self) -> Option<&ActionRecord> {
        self.index.last_own.as_ref()
    }

    /// Each workload's kills in the [`WORKLOAD_KILLS_WINDOW`] before `now_ns` (kills from a
    /// time after it, recorded before the node's last boot, are not counted).
    pub fn workload_kills(&self, now_ns: u64) -> WorkloadKills {
        self.kills_in_window(now_ns, false)
    }

    /// [`Self::workload_kills`], but only the kills that say something about the node's
    /// memory (oomwarden's own, the kernel's global ones: [`ActionRecord::is_node_kill`]): what
    /// `events.taintAfterKills` counts.
    pub fn node_workload_kills(&self, now_ns: u64) -> WorkloadKills {
        self.kills_in_window(now_ns, true)
    }

    fn kills_in_window(&self, now_ns: u64, node_only: bool) -> WorkloadKills {
        let window = u64::try_from(WORKLOAD_KILLS_WINDOW.as_nanos()).unwrap_or(u64::MAX);
        let mut kills = WorkloadKills::default();
        for (workload, at, node) in &self.index.workload_kills {
            if *at <= now_ns && now_ns - *at <= window && (*node || !node_only) {
                kills.add(workload);
            }
        }
        kills
    }

    /// Whether the history holds the kernel's report of a kill at `monotonic_ns` of
    /// `victim_pid` (so `fromBoot` never records one twice).
    pub fn holds_kernel_report(&self, monotonic_ns: u64, victim_pid: Option<u32>) -> bool {
        self.index
            .kernel_reports
            .contains(&(monotonic_ns, victim_pid))
    }

    /// Whether records reach the file (false in memory and on a read-only state directory).
    pub fn persists(&self) -> bool {
        self.persist
    }

    /// A history kept in memory only, starting at id 0 (a replay: nothing on disk changes).
    pub fn in_memory() -> History {
        History {
            path: PathBuf::new(),
            index: Index::default(),
            dir: None,
            recent: VecDeque::new(),
            lines: 0,
            bytes: 0,
            next_id: Some(0),
            repair_at: None,
            max_lines: MAX_LINES,
            keep_lines: KEEP_LINES,
            max_bytes: MAX_BYTES,
            keep_bytes: KEEP_BYTES,
            compactions: 0,
            persist: false,
        }
    }

    /// Changes the file bound in lines (compact past `max_lines` to the newest `keep_lines`).
    pub fn with_bounds(mut self, max_lines: usize, keep_lines: usize) -> Self {
        self.max_lines = max_lines;
        self.keep_lines = keep_lines.min(max_lines);
        self
    }

    /// Changes the file bound in bytes (compact past `max_bytes` to at most `keep_bytes` of
    /// the newest whole lines).
    pub fn with_byte_bounds(mut self, max_bytes: u64, keep_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self.keep_bytes = keep_bytes.min(max_bytes);
        self
    }

    /// The id the next record gets (`u64::MAX` once the ids are exhausted: such a record is
    /// kept in memory and never written, so no id repeats in the file).
    pub fn next_id(&self) -> u64 {
        self.next_id.unwrap_or(u64::MAX)
    }

    /// The newest records (at most [`KEEP_IN_MEMORY`]), oldest first.
    pub fn recent(&self) -> impl Iterator<Item = &ActionRecord> {
        self.recent.iter()
    }

    /// How many times the file was rewritten with its newest lines since start (its bound
    /// was hit).
    pub fn compactions(&self) -> u64 {
        self.compactions
    }

    /// The history file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keeps a record in memory and appends it to the file. The record stays in memory even
    /// when the write fails (the error is returned for the log).
    pub fn push(&mut self, record: ActionRecord) -> Result<(), HistoryError> {
        // Ids only grow: a record whose id was given before is never written.
        let fresh = self.next_id.is_some_and(|next| record.id >= next);
        if fresh {
            self.next_id = record.id.checked_add(1);
        }
        let mut line = serde_json::to_string(&record).map_err(|e| HistoryError {
            path: self.path.clone(),
            source: io::Error::other(e),
        })?;
        line.push('\n');
        make_room(&mut self.recent, &record, KEEP_IN_MEMORY);
        self.index.note(&record);
        self.recent.push_back(record);
        if !self.persist {
            return Ok(());
        }
        if !fresh {
            return Err(HistoryError {
                path: self.path.clone(),
                source: io::Error::other(format!(
                    "record id {} was given before (the ids are exhausted); kept in memory only",
                    self.recent.back().map_or(u64::MAX, |r| r.id)
                )),
            });
        }
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        let mut file = dir
            .open_file(FILE_NAME, OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE)
            .map_err(wrap(&self.path))?;
        if let Some(at) = self.repair_at {
            file.set_len(at).map_err(wrap(&self.path))?;
            self.repair_at = None;
            self.bytes = at;
        }
        let before = file.metadata().map_err(wrap(&self.path))?.len();
        // One write call per record, so a crash leaves at most one torn line; a write that
        // fails (a full disk) is cut back at once, so the next record never glues onto it.
        if let Err(e) = file
            .write_all(line.as_bytes())
            .and_then(|()| file.sync_data())
        {
            if file.set_len(before).is_err() {
                self.repair_at = Some(before);
            }
            return Err(wrap(&self.path)(e));
        }
        self.lines += 1;
        self.bytes = before + line.len() as u64;
        if self.lines > self.max_lines || self.bytes > self.max_bytes {
            self.compact()?;
        }
        Ok(())
    }

    /// Rewrites the file with its newest lines (at most `keep_lines` and `keep_bytes`),
    /// streaming: only the offsets of the lines kept are held. Warnings (`warned`, a stage's
    /// record of nothing done) count for at most a fifth of the lines kept: a flapping
    /// condition never pushes a kill's record out of the history.
    fn compact(&mut self) -> Result<(), HistoryError> {
        let Some(dir) = self.dir.clone() else {
            return Ok(());
        };
        let file = dir
            .open_file(FILE_NAME, OFlags::RDONLY)
            .map_err(wrap(&self.path))?;
        let keep_warnings = self.keep_lines / 5;
        // (start, length) of the newest lines of each kind.
        let mut others: VecDeque<(u64, u64)> = VecDeque::new();
        let mut warnings: VecDeque<(u64, u64)> = VecDeque::new();
        let mut reader = BufReader::new(&file);
        let mut buf = Vec::new();
        let mut at = 0u64;
        loop {
            buf.clear();
            let limit = u64::try_from(MAX_LINE_BYTES).unwrap_or(u64::MAX) + 1;
            let n = (&mut reader)
                .take(limit)
                .read_until(b'\n', &mut buf)
                .map_err(wrap(&self.path))?;
            if n == 0 {
                break;
            }
            let mut len = n as u64;
            if buf.last() != Some(&b'\n') && n > MAX_LINE_BYTES {
                // A line over the bound: skipped to its end, never held.
                let mut rest = Vec::new();
                loop {
                    rest.clear();
                    let m = (&mut reader)
                        .take(64 << 10)
                        .read_until(b'\n', &mut rest)
                        .map_err(wrap(&self.path))?;
                    len += m as u64;
                    if m == 0 || rest.last() == Some(&b'\n') {
                        break;
                    }
                }
            }
            let (list, cap) = if is_warning_line(&buf) {
                (&mut warnings, keep_warnings)
            } else {
                (&mut others, self.keep_lines)
            };
            if cap > 0 {
                if list.len() == cap {
                    list.pop_front();
                }
                list.push_back((at, len));
            }
            at += len;
        }
        // In the file's order, the newest first until `keep_lines` and `keep_bytes`.
        let mut lines: Vec<(u64, u64)> = others.into_iter().chain(warnings).collect();
        lines.sort_unstable();
        let mut bytes = 0u64;
        let mut count = 0usize;
        let mut from = lines.len();
        for (i, (_, len)) in lines.iter().enumerate().rev() {
            if count == self.keep_lines || bytes + len > self.keep_bytes {
                break;
            }
            bytes += len;
            count += 1;
            from = i;
        }
        let kept = lines.get(from..).unwrap_or_default();
        let tmp = dir.join(TMP_NAME);
        // O_EXCL | O_NOFOLLOW: a name planted there (a dangling symlink) is an error, never a
        // file made where it points.
        let written = (|| -> io::Result<()> {
            let mut out = dir.create_new(TMP_NAME)?;
            let mut src = &file;
            for (start, len) in kept {
                src.seek(io::SeekFrom::Start(*start))?;
                io::copy(&mut src.take(*len), &mut out)?;
            }
            out.sync_all()?;
            dir.rename(TMP_NAME, FILE_NAME)
        })();
        if let Err(e) = written {
            // Never leave a half-written copy behind (a full disk): the file stays as it was.
            // (A planted name is removed too: the link itself, not what it points to.)
            let _ = dir.remove(TMP_NAME);
            return Err(wrap(&tmp)(e));
        }
        self.lines = count;
        self.bytes = bytes;
        self.compactions += 1;
        Ok(())
    }
}

/// Whether a line of the file is a stage's warning (as oomwarden writes records: `kind` just
/// before `outcome`).
fn is_warning_line(line: &[u8]) -> bool {
    const NEEDLE: &[u8] = b"\"outcome\":\"warned\"";
    line.windows(NEEDLE.len()).any(|w| w == NEEDLE)
}

/// At start: a history file that others can read (it holds command lines) is made private
/// again (0600) through its descriptor, said in the returned notes.
fn tighten(file: &File, path: &Path) -> Result<Vec<String>, HistoryError> {
    let stat = rustix::fs::fstat(file).map_err(|e| wrap(path)(e.into()))?;
    let mode = stat.st_mode & 0o777;
    if mode & 0o077 == 0 {
        return Ok(Vec::new());
    }
    rustix::fs::fchmod(file, rustix::fs::Mode::from_raw_mode(0o600))
        .map_err(|e| wrap(path)(e.into()))?;
    Ok(vec![format!(
        "{}: permissions {mode:o} let others read it; tightened to 600",
        path.display()
    )])
}

/// How far the two clocks may disagree for a record to be taken as written during this boot
/// (the wall clock may be stepped by NTP meanwhile).
const SAME_BOOT_SLACK: chrono::TimeDelta = chrono::TimeDelta::seconds(60);

/// The monotonic time of the last trigger that `last` records, when it happened during this
/// boot: the daemon restores it at start, so that a restart (or a new pod) inside the cooldown
/// does not act again (`time_since_trigger` continues). A record is from this boot when its
/// monotonic reading is not in the future and the time elapsed on both clocks agrees within a
/// minute; otherwise (another boot, a clock jump, an unreadable time) nothing is restored.
pub fn restored_trigger(
    last: &ActionRecord,
    now_mono_ns: u64,
    now_wall: chrono::DateTime<chrono::Utc>,
) -> Option<u64> {
    let mono_elapsed = now_mono_ns.checked_sub(last.monotonic_ns)?;
    let mono_elapsed = chrono::TimeDelta::nanoseconds(i64::try_from(mono_elapsed).ok()?);
    let wall_elapsed = now_wall
        - chrono::DateTime::parse_from_rfc3339(&last.time)
            .ok()?
            .to_utc();
    // The cooldown counts from the end of the kill (Talos's `ActionTriggered`): the cycle's
    // time plus the kill's duration (the hooks' time, not in the record, left out).
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a finite, non-negative number of milliseconds, clamped"
    )]
    let kill_ns = last
        .kill_duration_ms
        .filter(|ms| ms.is_finite() && *ms > 0.0)
        .map_or(0, |ms| (ms * 1e6).min(u64::MAX as f64) as u64);
    ((mono_elapsed - wall_elapsed).abs() <= SAME_BOOT_SLACK)
        .then_some(last.monotonic_ns.saturating_add(kill_ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::{self, OpenOptions};
    use std::os::unix::fs::PermissionsExt;

    /// A state directory as the daemon makes it (0700); `tempfile` makes 0755.
    fn private_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    /// Writes a history file as the daemon would (0600).
    fn write_private(path: &Path, text: &str) {
        fs::write(path, text).unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(0o600)).unwrap();
    }
    use oomwarden_model::{Outcome, RecordKind};

    fn record(id: u64) -> ActionRecord {
        ActionRecord {
            id,
            trigger_context: "{}".into(),
            ..ActionRecord::empty(
                RecordKind::Oomwarden,
                Outcome::NoEligibleCgroup,
                "2026-11-29T12:00:00.000Z".into(),
                1,
            )
        }
    }

    // Issue 32: the cooldown at start was taken from the last 50 records only: after 50
    // kernel OOM records the daemon's own last action was forgotten at a restart.
    #[test]
    fn the_last_own_record_and_the_kernel_reports_are_found_in_the_whole_file() {
        let dir = private_dir();
        let (mut h, _) = History::open(dir.path()).unwrap();
        h.push(record(0)).unwrap();
        for id in 1..=60 {
            let mut k = record(id);
            k.kind = RecordKind::KernelOom;
            k.monotonic_ns = 1000 + id;
            k.victim_pid = Some(u32::try_from(id).unwrap());
            h.push(k).unwrap();
        }
        let (h, _) = History::open(dir.path()).unwrap();
        assert!(
            h.recent().all(|r| r.kind == RecordKind::KernelOom),
            "the newest 50 are the kernel's"
        );
        assert_eq!(h.last_own().map(|r| r.id), Some(0));
        assert!(
            h.holds_kernel_report(1001, Some(1)),
            "the oldest kernel report is known"
        );
        assert!(!h.holds_kernel_report(1001, Some(2)));
    }

    #[test]
    fn records_survive_a_restart_and_ids_continue() {
        let dir = private_dir();
        let (mut h, w) = History::open(dir.path()).unwrap();
        assert!(w.is_empty());
        for id in 0..3 {
            h.push(record(id)).unwrap();
        }
        let (h, w) = History::open(dir.path()).unwrap();
        assert!(w.is_empty());
        assert_eq!(h.next_id(), 3);
        assert_eq!(h.recent().count(), 3);
        let mode = fs::metadata(dir.path().join(FILE_NAME))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600, "command lines are sensitive");
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_cut() {
        let dir = private_dir();
        let (mut h, _) = History::open(dir.path()).unwrap();
        h.push(record(0)).unwrap();
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.path().join(FILE_NAME))
            .unwrap();
        f.write_all(b"{\"id\":1,\"time\":\"2026").unwrap();
        drop(f);
        let (mut h, w) = History::open(dir.path()).unwrap();
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("torn last line"), "{w:?}");
        assert_eq!(h.next_id(), 1);
        h.push(record(1)).unwrap();
        let (h, w) = History::open(dir.path()).unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(h.recent().map(|r| r.id).collect::<Vec<_>>(), [0, 1]);
    }

    #[test]
    fn a_malformed_middle_line_is_skipped_with_a_warning() {
        let dir = private_dir();
        let good = serde_json::to_string(&record(7)).unwrap();
        write_private(&dir.path().join(FILE_NAME), &format!("not json\n{good}\n"));
        let (h, w) = History::open(dir.path()).unwrap();
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("line 1"));
        assert_eq!(h.next_id(), 8);
    }

    #[test]
    fn the_last_trigger_is_restored_only_from_this_boot() {
        let mut r = record(0);
        r.time = "2026-11-29T12:00:00.000Z".into();
        r.monotonic_ns = 1_000_000_000_000;
        let wall = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().to_utc();
        // 3 s later on both clocks: the same boot.
        assert_eq!(
            restored_trigger(&r, 1_003_000_000_000, wall("2026-11-29T12:00:03.000Z")),
            Some(1_000_000_000_000)
        );
        // A kill that took 2.5 s: the cooldown counts from its end.
        r.kill_duration_ms = Some(2_500.0);
        assert_eq!(
            restored_trigger(&r, 1_003_000_000_000, wall("2026-11-29T12:00:03.000Z")),
            Some(1_002_500_000_000)
        );
        r.kill_duration_ms = Some(f64::NAN);
        assert_eq!(
            restored_trigger(&r, 1_003_000_000_000, wall("2026-11-29T12:00:03.000Z")),
            Some(1_000_000_000_000)
        );
        r.kill_duration_ms = None;
        // The monotonic clock is behind the record: another boot.
        assert_eq!(
            restored_trigger(&r, 5_000_000_000, wall("2026-11-29T12:00:03.000Z")),
            None
        );
        // A day on the wall clock, 3 s on the monotonic one: another boot.
        assert_eq!(
            restored_trigger(&r, 1_003_000_000_000, wall("2026-11-30T12:00:03.000Z")),
            None
        );
        r.time = "garbage".into();
        assert_eq!(
            restored_trigger(&r, 1_003_000_000_000, wall("2026-11-29T12:00:03.000Z")),
            None
        );
    }

    #[test]
    fn a_skipped_record_keeps_its_id() {
        let dir = private_dir();
        let good = serde_json::to_string(&record(3)).unwrap();
        let bad = serde_json::to_string(&record(9))
            .unwrap()
            .replace("\"score\":0.0", "\"score\":\"lots\"");
        write_private(&dir.path().join(FILE_NAME), &format!("{good}\n{bad}\n"));
        let (h, w) = History::open(dir.path()).unwrap();
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(h.next_id(), 10, "id 9 was given once already");
    }

    #[test]
    fn a_non_finite_score_survives_a_restart() {
        let dir = private_dir();
        let (mut h, _) = History::open(dir.path()).unwrap();
        let mut r = record(0);
        r.score = f64::INFINITY;
        h.push(r).unwrap();
        let (h, w) = History::open(dir.path()).unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(
            h.recent().map(|r| r.score).collect::<Vec<_>>(),
            [f64::INFINITY]
        );
        assert_eq!(h.next_id(), 1);
    }

    #[test]
    fn memory_keeps_fifty_and_the_file_is_bounded() {
        let dir = private_dir();
        let (h, _) = History::open(dir.path()).unwrap();
        let mut h = h.with_bounds(100, 60);
        for id in 0..101 {
            h.push(record(id)).unwrap();
        }
        assert_eq!(h.recent().count(), KEEP_IN_MEMORY);
        assert_eq!(
            h.recent().next().map(|r| r.id),
            Some(101 - KEEP_IN_MEMORY as u64)
        );
        let text = fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
        assert_eq!(text.lines().count(), 60);
        assert!(
            text.lines().next().unwrap().contains("\"id\":41"),
            "the newest are kept"
        );
        let (h, _) = History::open(dir.path()).unwrap();
        assert_eq!(h.next_id(), 101);
    }

    // Issue 54 (6): a flapping `warn` stage wrote 99 records in 20 s; warnings would push the
    // kills out of the bounded history, in memory and in the file.
    #[test]
    fn warnings_never_push_a_kill_out_of_the_history() {
        let dir = private_dir();
        let (h, _) = History::open(dir.path()).unwrap();
        let mut h = h.with_bounds(100, 60);
        let mut kill = record(0);
        kill.outcome = Outcome::Killed;
        h.push(kill).unwrap();
        for id in 1..1000 {
            let mut w = record(id);
            w.outcome = Outcome::Warned;
            h.push(w).unwrap();
        }
        let ids: Vec<u64> = h.recent().map(|r| r.id).collect();
        assert_eq!(ids.first(), Some(&0), "the kill is kept in memory");
        assert_eq!(ids.len(), 1 + WARNINGS_IN_MEMORY, "{ids:?}");
        assert_eq!(ids.last(), Some(&999), "the newest warnings with it");
        let text = fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
        assert!(
            text.lines()
                .next()
                .unwrap()
                .contains("\"outcome\":\"killed\""),
            "the kill survives every compaction: {}",
            text.lines().next().unwrap()
        );
        assert!(text.lines().count() <= 100, "{}", text.lines().count());
        // At a restart, with more than fifty warnings after the kill in the file.
        let mut id = 1000;
        while fs::read_to_string(dir.path().join(FILE_NAME))
            .unwrap()
            .lines()
            .count()
            < 80
        {
            let mut w = record(id);
            w.outcome = Outcome::Warned;
            h.push(w).unwrap();
            id += 1;
        }
        let (h, _) = History::open(dir.path()).unwrap();
        assert_eq!(h.next_id(), id);
        assert_eq!(h.recent().next().map(|r| r.id), Some(0));
        assert_eq!(h.recent().count(), 1 + WARNINGS_IN_MEMORY);
    }

    // Issue 14, item 6: odd content and an interrupted past must not cost a record or an id.
    #[test]
    fn a_whole_last_record_without_its_newline_is_kept() {
        let dir = private_dir();
        let good = serde_json::to_string(&record(4)).unwrap();
        write_private(&dir.path().join(FILE_NAME), &good);
        let (mut h, w) = History::open(dir.path()).unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(h.next_id(), 5);
        h.push(record(5)).unwrap();
        let (h, w) = History::open(dir.path()).unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(h.recent().map(|r| r.id).collect::<Vec<_>>(), [4, 5]);
    }

    #[test]
    fn a_stale_compaction_file_is_removed_and_loose_permissions_tightened() {
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        let file = dir.path().join(FILE_NAME);
        fs::write(&file, "").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
        let tmp = file.with_extension("jsonl.tmp");
        fs::write(&tmp, "half a compaction").unwrap();
        let (mut h, w) = History::open(dir.path()).unwrap();
        assert!(!tmp.exists());
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(dir.path()), mode(&file)), (0o700, 0o600));
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(
            w.iter().any(|n| n.contains("interrupted compaction")),
            "{w:?}"
        );
        h.push(record(0)).unwrap();
    }

    #[test]
    fn ids_never_repeat_even_at_the_last_one() {
        let dir = private_dir();
        let last = serde_json::to_string(&record(u64::MAX)).unwrap();
        write_private(&dir.path().join(FILE_NAME), &format!("{last}\n"));
        let (mut h, w) = History::open(dir.path()).unwrap();
        assert!(w.iter().any(|n| n.contains("ids are exhausted")), "{w:?}");
        let err = h
            .push(record(h.next_id()))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("given before"), "{err}");
        let text = fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert_eq!(h.recent().count(), 2, "kept in memory");
    }

    // Issue 14, item 1: compaction counted lines only, so records with long command lines
    // grew the file without bound.
    #[test]
    fn the_file_is_bounded_in_bytes_too() {
        let dir = private_dir();
        let (h, _) = History::open(dir.path()).unwrap();
        let mut h = h.with_byte_bounds(20_000, 10_000);
        let big = |id| {
            let mut r = record(id);
            r.processes = vec!["x".repeat(900)];
            r
        };
        let line = serde_json::to_string(&big(10)).unwrap().len() as u64 + 1;
        assert_eq!(h.compactions(), 0);
        for id in 0..60 {
            h.push(big(id)).unwrap();
            let len = fs::metadata(dir.path().join(FILE_NAME)).unwrap().len();
            assert!(len <= 20_000, "{len} bytes after record {id}");
            assert_eq!(len, h.bytes);
        }
        let text = fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
        assert!(text.len() as u64 <= 10_000 + 10 * line, "{}", text.len());
        assert!(text.ends_with('\n'));
        let ids: Vec<u64> = text
            .lines()
            .map(|l| serde_json::from_str::<ActionRecord>(l).unwrap().id)
            .collect();
        assert_eq!(ids.last(), Some(&59), "the newest are kept");
        assert!(h.compactions() >= 2, "{}", h.compactions());
        assert!(
            ids.windows(2).all(|w| w[1] == w[0] + 1),
            "whole lines, in order: {ids:?}"
        );
        assert_eq!(h.lines, ids.len());
        let (h, w) = History::open(dir.path()).unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(h.next_id(), 60);
    }

    // Issue 14, item 1: the whole file was read into memory at start (100 MB at the line
    // bound). A line no record can be is skipped without being held, and its neighbours read.
    #[test]
    fn a_line_longer_than_any_record_is_skipped() {
        let dir = private_dir();
        let huge = format!("{{\"id\":5,\"x\":\"{}\"}}", "a".repeat(MAX_LINE_BYTES + 10));
        let lines = [
            serde_json::to_string(&record(1)).unwrap(),
            huge.clone(),
            serde_json::to_string(&record(2)).unwrap(),
        ];
        write_private(&dir.path().join(FILE_NAME), &(lines.join("\n") + "\n"));
        let (h, w) = History::open(dir.path()).unwrap();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("line 2: skipping a line of more than"),
            "{w:?}"
        );
        assert_eq!(h.recent().map(|r| r.id).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(h.next_id(), 3);
        // The same line last and without its newline is torn: cut, and the next record
        // starts on a line of its own.
        write_private(
            &dir.path().join(FILE_NAME),
            &(lines.get(..1).unwrap().join("\n") + "\n" + &huge),
        );
        let (mut h, w) = History::open(dir.path()).unwrap();
        assert!(w.iter().any(|n| n.contains("torn last line")), "{w:?}");
        h.push(record(2)).unwrap();
        let text = fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
        assert_eq!(text.lines().count(), 2, "{}", text.len());
        h = History::open(dir.path()).unwrap().0;
        assert_eq!(h.recent().map(|r| r.id).collect::<Vec<_>>(), [1, 2]);
    }

    #[test]
    fn read_returns_every_record_and_open_the_newest() {
        let dir = private_dir();
        let text: String = (0..120)
            .map(|id| serde_json::to_string(&record(id)).unwrap() + "\n")
            .collect();
        write_private(&dir.path().join(FILE_NAME), &text);
        let all = read(dir.path()).unwrap();
        assert_eq!(all.records.len(), 120);
        assert_eq!((all.lines, all.bytes), (120, text.len() as u64));
        let (h, _) = History::open(dir.path()).unwrap();
        assert_eq!(h.recent().count(), KEEP_IN_MEMORY);
        assert_eq!(h.recent().next().map(|r| r.id), Some(70));
        assert_eq!(h.next_id(), 120);
    }
}
