//! Following the kernel log (`/dev/kmsg`) for OOM reports, on a thread of its own.
//!
//! `/dev/kmsg` gives one record per `read` (`PRIORITY,SEQ,USEC,FLAGS;message`, then
//! continuation lines that start with a space, which are skipped); a reader opened at the end
//! (`SEEK_END`) sees only what is logged from then on; `EPIPE` says the ring buffer wrapped
//! past records not yet read. The thread waits with `poll` so that it notices the stop flag,
//! and closes a report once nothing followed its kill line for a moment (the kernel prints a
//! report in one burst; the parser otherwise closes one only when the next begins). On the device
//! the thread sleeps in `poll` until a record comes, a report it holds is due to close, or
//! [`Follower::stop`] writes to its eventfd: no periodic wake-ups (each costs a node under
//! pressure a context switch; under emulation the follower's 5 a second were a quarter of the
//! quiet daemon's CPU).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::time::{Duration, Instant};

use oomwarden_oomlog::{OomEvent, Parser};

/// What the follower sends.
#[derive(Debug)]
pub enum Note {
    /// A complete OOM report, with the monotonic time of its kill line (nanoseconds since
    /// boot; `/dev/kmsg` stamps records with the kernel's clock in microseconds).
    Event(Box<OomEvent>),
    /// Something went wrong; the follower goes on when it can.
    Problem(Problem),
}

/// What can go wrong while following the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// The log could not be opened (no privilege, no such device): nothing will be read.
    #[error(
        "cannot open {path}: {error}; kernel OOM kills are known from memory.events counters only"
    )]
    Open {
        /// The path.
        path: PathBuf,
        /// Why.
        error: String,
    },
    /// A read failed (other than the wrap, `EINTR` or `EAGAIN`); the follower tries again a
    /// second later.
    #[error("cannot read {path}: {error}")]
    Read {
        /// The path.
        path: PathBuf,
        /// Why.
        error: String,
    },
    /// The ring buffer wrapped past records not yet read: reports may be lost (the
    /// `memory.events` counters still count their kills).
    #[error("{path}: the kernel log wrapped past records not yet read; some may be lost")]
    Lost {
        /// The path.
        path: PathBuf,
    },
    /// A report was cut before its kill line (`incomplete`): no victim known from it.
    #[error("an OOM report in the kernel log was cut before its kill line")]
    Incomplete,
    /// The channel to the daemon was full: a report was dropped (its kills are still counted
    /// by `memory.events`).
    #[error("too many OOM reports at once; some were dropped")]
    Dropped,
}

impl Problem {
    /// Every [`Problem::reason`] (the metric's series are made at 0 from the start, so that a
    /// rate or an alert sees the first one).
    pub const REASONS: [&'static str; 5] = ["open", "read", "lost", "incomplete", "dropped"];

    /// A short name for metric labels and once-only logging: `open`, `read`, `lost`,
    /// `incomplete`, `dropped`.
    pub fn reason(&self) -> &'static str {
        match self {
            Problem::Open { .. } => "open",
            Problem::Read { .. } => "read",
            Problem::Lost { .. } => "lost",
            Problem::Incomplete => "incomplete",
            Problem::Dropped => "dropped",
        }
    }
}

/// How to follow.
#[derive(Debug, Clone)]
pub struct Options {
    /// The log's path (`/dev/kmsg`; a regular file or a FIFO in tests).
    pub path: PathBuf,
    /// Read what the ring buffer still holds from before the start (else only what comes
    /// after).
    pub from_start: bool,
    /// A report is closed when nothing followed its kill line for this long.
    pub settle: Duration,
}

impl Options {
    /// `/dev/kmsg` under `root` (`/` on a node), from now on.
    pub fn under(root: &Path) -> Options {
        Options {
            path: root.join("dev/kmsg"),
            from_start: false,
            settle: Duration::from_millis(300),
        }
    }
}

/// The running follower: stops when [`Follower::stop`] is called or it is dropped.
#[derive(Debug)]
pub struct Follower {
    stop: Arc<Stop>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The stop flag and the eventfd that wakes the thread's `poll` when it is set, and the
/// count of reports dropped on a full channel (shared with the handle: a drop cannot be said
/// on the channel that is full).
#[derive(Debug)]
struct Stop {
    flag: AtomicBool,
    wake: Option<rustix::fd::OwnedFd>,
    dropped: AtomicU64,
}

impl Stop {
    fn new() -> Stop {
        // Without an eventfd (none left) the thread still sees the flag: it then polls the
        // device with a timeout, as a regular file is polled.
        let wake = rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC).ok();
        Stop {
            flag: AtomicBool::new(false),
            wake,
            dropped: AtomicU64::new(0),
        }
    }

    fn set(&self) {
        self.flag.store(true, Ordering::SeqCst);
        if let Some(fd) = &self.wake {
            let _ = rustix::io::write(fd, &1_u64.to_ne_bytes());
        }
    }

    fn is_set(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}

impl Follower {
    /// Reports dropped so far because the daemon's channel was full (every one counted).
    pub fn dropped(&self) -> u64 {
        self.stop.dropped.load(Ordering::SeqCst)
    }

    /// Asks the thread to end (at once: its `poll` is woken) and waits for it.
    pub fn stop(&mut self) {
        self.stop.set();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop.set();
    }
}

/// How long a wait lasts where nothing can wake it (a regular file or a FIFO, in tests; the
/// device when no eventfd could be made).
const POLL: Duration = Duration::from_millis(200);

/// A report without its kill line is given up after this much silence.
const ABANDON: Duration = Duration::from_secs(10);

/// The kernel refuses a read buffer shorter than one record (`EINVAL`); records are at most
/// about 1 KiB of text plus their dictionary.
const RECORD_BUF: usize = 16 * 1024;

/// Starts following. The log is opened (and its end found) before this returns, so that
/// what is logged from then on is read. What is found is sent on `tx` (bounded: when the
/// daemon is behind, reports are dropped and counted, never queued without bound). A log that
/// cannot be opened is reported on `tx` and no thread is started.
pub fn follow(options: Options, tx: SyncSender<Note>) -> std::io::Result<Follower> {
    let stop = Arc::new(Stop::new());
    let file = match open(&options) {
        Ok(f) => f,
        Err(e) => {
            send(
                &tx,
                Note::Problem(Problem::Open {
                    path: options.path.clone(),
                    error: e.to_string(),
                }),
                &stop.dropped,
            );
            return Ok(Follower { stop, thread: None });
        }
    };
    let flag = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("kmsg".into())
        .spawn(move || run(file, &options, &tx, &flag))?;
    Ok(Follower {
        stop,
        thread: Some(thread),
    })
}

/// Sends `note`, or counts it in `dropped` when the channel is full (found by the fault
/// suite: a drop said on the full channel was itself dropped, 1 counted for 18,858 lost).
fn send(tx: &SyncSender<Note>, note: Note, dropped: &AtomicU64) {
    match tx.try_send(note) {
        Ok(()) | Err(TrySendError::Disconnected(_)) => {}
        Err(TrySendError::Full(_)) => {
            dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn open(options: &Options) -> std::io::Result<std::fs::File> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        &options.path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    if !options.from_start {
        rustix::fs::seek(&fd, rustix::fs::SeekFrom::End(0))?;
    }
    Ok(std::fs::File::from(fd))
}

fn run(mut file: std::fs::File, options: &Options, tx: &SyncSender<Note>, stop: &Stop) {
    let path = options.path.clone();
    let mut lines = Lines::new(Parser::new());
    let mut buf = vec![0_u8; RECORD_BUF];
    let mut last_line = Instant::now();
    while !stop.is_set() {
        // Until when a wait may last: the open report's settling or abandon time.
        let due = if lines.parser.has_victim() {
            Some(options.settle.saturating_sub(last_line.elapsed()))
        } else if lines.parser.is_open() {
            Some(ABANDON.saturating_sub(last_line.elapsed()))
        } else {
            None
        };
        match file.read(&mut buf) {
            Ok(0) => {
                // A regular file or FIFO at its end (the device never returns 0).
                wait(&file, stop, due);
            }
            Ok(n) => {
                last_line = Instant::now();
                for note in lines.take(buf.get(..n).unwrap_or_default()) {
                    send(tx, note, &stop.dropped);
                }
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => wait(&file, stop, due),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::PIPE.raw_os_error()) => {
                send(
                    tx,
                    Note::Problem(Problem::Lost { path: path.clone() }),
                    &stop.dropped,
                );
                continue;
            }
            Err(e) => {
                send(
                    tx,
                    Note::Problem(Problem::Read {
                        path: path.clone(),
                        error: e.to_string(),
                    }),
                    &stop.dropped,
                );
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        // A report with its kill line is closed once it settles; one cut before it, after
        // a long silence (its kill line will not come).
        let quiet = last_line.elapsed();
        let close = (lines.parser.has_victim() && quiet >= options.settle)
            || (lines.parser.is_open() && quiet >= ABANDON);
        if close && let Some(note) = lines.finish() {
            send(tx, note, &stop.dropped);
        }
    }
}

/// Waits until the log may be readable, the stop is asked for, or `due` passed (without
/// `due`, and with the stop's eventfd, as long as it takes).
fn wait(file: &std::fs::File, stop: &Stop, due: Option<Duration>) {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let limit = match (&stop.wake, due) {
        (Some(_), None) => None,
        (Some(_), Some(due)) => Some(due),
        (None, due) => Some(due.map_or(POLL, |d| d.min(POLL))),
    };
    let timeout = limit.and_then(|l| Timespec::try_from(l).ok());
    let mut fds = vec![PollFd::new(file, PollFlags::IN)];
    if let Some(wake) = &stop.wake {
        fds.push(PollFd::new(wake, PollFlags::IN));
    }
    let log_revents = match rustix::event::poll(&mut fds, timeout.as_ref()) {
        Ok(_) => fds.first().map(PollFd::revents),
        Err(_) => None,
    };
    match log_revents {
        // A regular file or a FIFO without a writer is "readable" at its end: do not spin.
        Some(r) if r.intersects(PollFlags::HUP) || is_regular(file) => {
            if !stop.is_set() {
                std::thread::sleep(limit.unwrap_or(POLL).min(POLL));
            }
        }
        Some(_) => {}
        None => std::thread::sleep(POLL),
    }
}

fn is_regular(file: &std::fs::File) -> bool {
    file.metadata().is_ok_and(|m| m.is_file())
}

/// Bytes → lines → the parser's events (pure, for tests).
#[derive(Debug)]
pub struct Lines {
    parser: Parser,
    partial: Vec<u8>,
}

impl Lines {
    /// Lines for this parser.
    pub fn new(parser: Parser) -> Lines {
        Lines {
            parser,
            partial: Vec::new(),
        }
    }

    /// Takes what one read returned (one `/dev/kmsg` record, or any piece of a file) and
    /// returns the events it completed.
    pub fn take(&mut self, bytes: &[u8]) -> Vec<Note> {
        self.partial.extend_from_slice(bytes);
        // `/dev/kmsg` ends each record with a newline; a file may end mid-line, kept for
        // the next read. A partial line is never longer than one record buffer.
        let end = match self.partial.iter().rposition(|&b| b == b'\n') {
            Some(i) => i + 1,
            None if self.partial.len() > RECORD_BUF => self.partial.len(),
            None => return Vec::new(),
        };
        let complete: Vec<u8> = self.partial.drain(..end).collect();
        let text = String::from_utf8_lossy(&complete);
        let mut out = Vec::new();
        for line in text.lines() {
            // A record's dictionary (` SUBSYSTEM=…`, ` DEVICE=…`) is no message.
            if line.starts_with(' ') || line.is_empty() {
                continue;
            }
            if let Some(event) = self.parser.feed(line) {
                out.push(note(event));
            }
        }
        out
    }

    /// Closes the report still open, if any.
    pub fn finish(&mut self) -> Option<Note> {
        self.parser.finish().map(note)
    }
}

fn note(event: OomEvent) -> Note {
    if event.incomplete && event.killed.is_empty() {
        Note::Problem(Problem::Incomplete)
    } else {
        Note::Event(Box::new(event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const REPORT: &str = "\
4,1001,8523000000,-;hog invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=1000
 SUBSYSTEM=memory
6,1002,8523000100,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/kubepods/besteffort/pod6983351e-0001-4c1b-9a3e-0f5d2b7c0001,task_memcg=/kubepods/besteffort/pod6983351e-0001-4c1b-9a3e-0f5d2b7c0001/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef,task=hog,pid=4242,uid=0
3,1003,8523000200,-;Memory cgroup out of memory: Killed process 4242 (hog) total-vm:200000kB, anon-rss:180000kB, file-rss:1000kB, shmem-rss:0kB, UID:0 pgtables:400kB oom_score_adj:1000
";

    fn events(notes: Vec<Note>) -> Vec<OomEvent> {
        notes
            .into_iter()
            .filter_map(|n| match n {
                Note::Event(e) => Some(*e),
                Note::Problem(_) => None,
            })
            .collect()
    }

    #[test]
    fn records_in_any_pieces_give_the_report_once_it_settles() {
        for piece in [1, 7, 64, REPORT.len()] {
            let mut lines = Lines::new(Parser::new());
            let mut notes = Vec::new();
            for chunk in REPORT.as_bytes().chunks(piece) {
                notes.extend(lines.take(chunk));
            }
            assert!(notes.is_empty(), "open until it settles or the next begins");
            assert!(lines.parser.has_victim());
            notes.extend(lines.finish());
            let got = events(notes);
            assert_eq!(got.len(), 1, "piece {piece}");
            assert_eq!(got[0].victim_pid, Some(4242));
            assert_eq!(got[0].victim_comm.as_deref(), Some("hog"));
            assert_eq!(
                got[0].pod_uid.as_deref(),
                Some("6983351e-0001-4c1b-9a3e-0f5d2b7c0001")
            );
        }
    }

    #[test]
    fn a_report_without_its_kill_line_is_a_problem_not_an_event() {
        let mut lines = Lines::new(Parser::new());
        let first = REPORT.lines().next().unwrap_or_default();
        lines.take(format!("{first}\n").as_bytes());
        assert!(!lines.parser.has_victim());
        assert!(matches!(
            lines.finish(),
            Some(Note::Problem(Problem::Incomplete))
        ));
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_in_any_pieces_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..4096), piece in 1usize..300) {
            let mut lines = Lines::new(Parser::new());
            for chunk in bytes.chunks(piece) {
                let _ = lines.take(chunk);
            }
            let _ = lines.finish();
        }
    }

    fn collect(rx: &std::sync::mpsc::Receiver<Note>, want: usize) -> Vec<Note> {
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while got.len() < want && Instant::now() < deadline {
            if let Ok(n) = rx.recv_timeout(Duration::from_millis(50)) {
                got.push(n);
            }
        }
        got
    }

    #[test]
    fn the_follower_reads_only_what_comes_after_its_start_unless_asked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kmsg");
        std::fs::write(&path, REPORT).unwrap();
        // From now on: the report already there is not read; one appended later is.
        let (tx, rx) = std::sync::mpsc::sync_channel(16);
        let options = Options {
            path: path.clone(),
            from_start: false,
            settle: Duration::from_millis(50),
        };
        let mut follower = follow(options.clone(), tx).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            rx.try_recv().is_err(),
            "the report from before the start was read"
        );
        let second = REPORT.replace("4242", "4343");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(second.as_bytes())
            .unwrap();
        let got = events(collect(&rx, 1));
        follower.stop();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].victim_pid, Some(4343));
        // From the start: both.
        let (tx, rx) = std::sync::mpsc::sync_channel(16);
        let mut follower = follow(
            Options {
                from_start: true,
                ..options
            },
            tx,
        )
        .unwrap();
        let got = events(collect(&rx, 2));
        follower.stop();
        let pids: Vec<_> = got.iter().map(|e| e.victim_pid).collect();
        assert_eq!(pids, vec![Some(4242), Some(4343)]);
    }

    // The device's case: a log that blocks (a FIFO with its writer open, no HUP). The report
    // is closed by the wait's own deadline (its settling), and a stop wakes the thread at once
    // rather than at its next periodic look (there is none).
    #[test]
    fn on_a_log_that_blocks_reports_settle_and_a_stop_is_immediate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kmsg");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let (tx, rx) = std::sync::mpsc::sync_channel(16);
        let options = Options {
            path: path.clone(),
            from_start: true,
            settle: Duration::from_millis(50),
        };
        let mut follower = follow(options, tx).unwrap();
        let mut writer = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        writer.write_all(REPORT.as_bytes()).unwrap();
        let got = events(collect(&rx, 1));
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].victim_pid, Some(4242));
        // Now waiting with no deadline at all.
        std::thread::sleep(Duration::from_millis(100));
        let started = Instant::now();
        follower.stop();
        let took = started.elapsed();
        // Without the eventfd's wake-up the thread would wait on the log for ever: any bound
        // well short of for ever shows it; 10 s holds on a loaded machine.
        assert!(took < Duration::from_secs(10), "stopping took {took:?}");
        drop(writer);
    }

    #[test]
    fn a_log_that_cannot_be_opened_is_said_once_and_the_thread_ends() {
        let (tx, rx) = std::sync::mpsc::sync_channel(16);
        let mut follower = follow(
            Options {
                path: PathBuf::from("/nonexistent/kmsg"),
                from_start: false,
                settle: Duration::from_millis(50),
            },
            tx,
        )
        .unwrap();
        follower.stop();
        let notes: Vec<_> = rx.try_iter().collect();
        assert_eq!(notes.len(), 1, "{notes:?}");
        match &notes[0] {
            Note::Problem(p @ Problem::Open { .. }) => {
                assert_eq!(p.reason(), "open");
                assert!(p.to_string().contains("/nonexistent/kmsg"), "{p}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_full_channel_drops_and_counts_every_report_without_blocking() {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let dropped = AtomicU64::new(0);
        for _ in 0..1000 {
            send(&tx, Note::Problem(Problem::Incomplete), &dropped);
        }
        assert_eq!(rx.try_iter().count(), 1);
        assert_eq!(dropped.load(Ordering::SeqCst), 999, "every drop counted");
    }
}
