//! The action history: the last 50 records in memory, every record appended to
//! `<state-dir>/actions.jsonl` (one JSON object per line, mode 0600 because command lines are
//! sensitive), loaded back at start.
//!
//! Crash safety: each record is written with a single `write` and `fsync`ed. A torn last line
//! (a crash mid-write) is skipped with a warning and cut off, so the next record starts on a
//! line of its own; a malformed line elsewhere is skipped with a warning. Neither is fatal.
//! The file is bounded: past [`MAX_LINES`] lines it is rewritten (atomically, by rename) with
//! the newest [`KEEP_LINES`].

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use oomwarden_model::ActionRecord;

/// Records kept in memory (Talos's `OOMActionLogKeep`).
pub const KEEP_IN_MEMORY: usize = 50;
/// Lines in `actions.jsonl` that trigger a compaction.
pub const MAX_LINES: usize = 10_000;
/// Lines kept by a compaction.
pub const KEEP_LINES: usize = 5_000;
/// The history file's name in the state directory.
pub const FILE_NAME: &str = "actions.jsonl";

/// What a history file holds, read without changing it.
#[derive(Debug, Default)]
pub struct FileContents {
    /// Every record, oldest first.
    pub records: Vec<ActionRecord>,
    /// Non-empty lines.
    pub lines: usize,
    /// One per skipped line (torn or malformed).
    pub warnings: Vec<String>,
    /// The length of the complete lines when the last one is torn.
    pub torn_at: Option<u64>,
    /// The last line is a whole record without its newline (kept; `open` adds the newline).
    pub missing_newline: bool,
    /// The highest `id` on any complete line, a skipped (malformed) record's included, so
    /// that no id is ever given twice.
    pub max_id: Option<u64>,
}

/// Reads `<state_dir>/actions.jsonl` without changing anything (for `oomwarden actions`
/// when the daemon is not running). A missing file is an empty history.
pub fn read(state_dir: &Path) -> Result<FileContents, HistoryError> {
    read_file(&state_dir.join(FILE_NAME))
}

fn read_file(path: &Path) -> Result<FileContents, HistoryError> {
    let mut out = FileContents::default();
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
        Err(e) => {
            return Err(HistoryError {
                path: path.to_owned(),
                source: e,
            });
        }
    };
    let mut complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let tail = bytes.get(complete..).unwrap_or_default();
    if !tail.is_empty() && serde_json::from_slice::<ActionRecord>(tail).is_ok() {
        // A whole record whose newline was never written (a full disk at the last byte, an
        // editor): keep it.
        out.missing_newline = true;
        complete = bytes.len();
    }
    if complete < bytes.len() {
        out.warnings.push(format!(
            "{}: skipping a torn last line ({} bytes, probably a crash while writing)",
            path.display(),
            bytes.len() - complete
        ));
        out.torn_at = Some(complete as u64);
    }
    let text = String::from_utf8_lossy(bytes.get(..complete).unwrap_or_default());
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        out.lines += 1;
        match serde_json::from_str::<ActionRecord>(line) {
            Ok(record) => {
                out.max_id = out.max_id.max(Some(record.id));
                out.records.push(record);
            }
            Err(e) => {
                // Its id is still taken, if it has one.
                let id = serde_json::from_str::<serde_json::Value>(line)
                    .ok()
                    .and_then(|v| v.get("id").and_then(serde_json::Value::as_u64));
                out.max_id = out.max_id.max(id);
                out.warnings.push(format!(
                    "{}: line {}: skipping a malformed record: {e}",
                    path.display(),
                    n + 1
                ));
            }
        }
    }
    Ok(out)
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
    recent: VecDeque<ActionRecord>,
    lines: usize,
    /// `None`: every id has been given (a file holding id `u64::MAX`).
    next_id: Option<u64>,
    /// Where to cut the file before the next append: a write failed after this length
    /// (a full disk) and the cut failed too.
    repair_at: Option<u64>,
    max_lines: usize,
    keep_lines: usize,
    /// Written to `path` (false for a replay's history, which lives in memory only).
    persist: bool,
}

impl History {
    /// Opens (creating if needed) `<state_dir>/actions.jsonl` and loads it. Returns the
    /// history and a warning for every line that had to be skipped.
    pub fn open(state_dir: &Path) -> Result<(History, Vec<String>), HistoryError> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(state_dir)
            .map_err(wrap(state_dir))?;
        let path = state_dir.join(FILE_NAME);
        let mut notes = tighten(state_dir, &path)?;
        // A compaction interrupted (a full disk, a crash) leaves its temporary file behind.
        let tmp = path.with_extension("jsonl.tmp");
        if tmp.exists() {
            fs::remove_file(&tmp).map_err(wrap(&tmp))?;
            notes.push(format!(
                "{}: removed the temporary file of an interrupted compaction",
                tmp.display()
            ));
        }
        let read = read_file(&path)?;
        if read.missing_newline {
            let mut file = OpenOptions::new()
                .append(true)
                .open(&path)
                .map_err(wrap(&path))?;
            file.write_all(b"\n").map_err(wrap(&path))?;
            file.sync_data().map_err(wrap(&path))?;
        }
        if let Some(complete) = read.torn_at {
            let file = OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(wrap(&path))?;
            file.set_len(complete).map_err(wrap(&path))?;
            file.sync_all().map_err(wrap(&path))?;
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
        let skip = read.records.len().saturating_sub(KEEP_IN_MEMORY);
        let recent: VecDeque<ActionRecord> = read.records.into_iter().skip(skip).collect();
        Ok((
            History {
                path,
                recent,
                lines,
                next_id,
                repair_at: None,
                max_lines: MAX_LINES,
                keep_lines: KEEP_LINES,
                persist: true,
            },
            warnings,
        ))
    }

    /// A history kept in memory only, starting at id 0 (a replay: nothing on disk changes).
    pub fn in_memory() -> History {
        History {
            path: PathBuf::new(),
            recent: VecDeque::new(),
            lines: 0,
            next_id: Some(0),
            repair_at: None,
            max_lines: MAX_LINES,
            keep_lines: KEEP_LINES,
            persist: false,
        }
    }

    /// Changes the file bound (compact past `max_lines` to the newest `keep_lines`).
    pub fn with_bounds(mut self, max_lines: usize, keep_lines: usize) -> Self {
        self.max_lines = max_lines;
        self.keep_lines = keep_lines.min(max_lines);
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
        if self.recent.len() == KEEP_IN_MEMORY {
            self.recent.pop_front();
        }
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
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&self.path)
            .map_err(wrap(&self.path))?;
        if let Some(at) = self.repair_at {
            file.set_len(at).map_err(wrap(&self.path))?;
            self.repair_at = None;
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
        if self.lines > self.max_lines {
            self.compact()?;
        }
        Ok(())
    }

    fn compact(&mut self) -> Result<(), HistoryError> {
        let text = fs::read_to_string(&self.path).map_err(wrap(&self.path))?;
        let all: Vec<&str> = text.lines().collect();
        let keep = all
            .get(all.len().saturating_sub(self.keep_lines)..)
            .unwrap_or_default();
        let tmp = self.path.with_extension("jsonl.tmp");
        let written = (|| -> io::Result<()> {
            let mut file = File::create(&tmp)?;
            file.set_permissions(fs::Permissions::from_mode(0o600))?;
            for line in keep {
                writeln!(file, "{line}")?;
            }
            file.sync_all()?;
            fs::rename(&tmp, &self.path)
        })();
        if let Err(e) = written {
            // Never leave a half-written copy behind (a full disk): the file stays as it was.
            let _ = fs::remove_file(&tmp);
            return Err(wrap(&tmp)(e));
        }
        self.lines = keep.len();
        Ok(())
    }
}

/// At start: a state directory or history file that others can read (it holds command lines)
/// is made private again (0700, 0600), said in the returned notes.
fn tighten(state_dir: &Path, file: &Path) -> Result<Vec<String>, HistoryError> {
    let mut notes = Vec::new();
    for (path, private) in [(state_dir, 0o700), (file, 0o600)] {
        let mode = match fs::metadata(path) {
            Ok(m) => m.permissions().mode() & 0o777,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(wrap(path)(e)),
        };
        if mode & 0o077 != 0 {
            fs::set_permissions(path, fs::Permissions::from_mode(private)).map_err(wrap(path))?;
            notes.push(format!(
                "{}: permissions {mode:o} let others read it; tightened to {private:o}",
                path.display()
            ));
        }
    }
    Ok(notes)
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
    ((mono_elapsed - wall_elapsed).abs() <= SAME_BOOT_SLACK).then_some(last.monotonic_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    use oomwarden_model::Outcome;

    fn record(id: u64) -> ActionRecord {
        ActionRecord {
            id,
            time: "2026-11-29T12:00:00.000Z".into(),
            monotonic_ns: 1,
            outcome: Outcome::NoEligibleCgroup,
            victim: None,
            class: None,
            pod_uid: None,
            containers: vec![],
            score: 0.0,
            pids: vec![],
            processes: vec![],
            memory_current_bytes: None,
            kill_duration_ms: None,
            error: None,
            trigger_context: "{}".into(),
            wakeup: None,
            recording: None,
            processes_omitted: 0,
        }
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
}
