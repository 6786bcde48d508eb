//! Kernel OOM reports parsed into events: one [`OomEvent`] per OOM-killer invocation (the
//! report from `invoked oom-killer` to its `oom-kill:` and `Killed process` lines), with every
//! process it killed, the memory cgroups involved, and what the kubelet would have made of it.
//!
//! Input is text in any of the usual forms, mixed freely: `dmesg` (`[ 8523.347322] msg`),
//! `dmesg -T` (`[Sun Nov 29 15:00:00 2026] msg`), syslog and `journalctl -k`
//! (`Oct 12 19:00:20 host kernel: [ 8523.347322] msg`, also `-o short-iso`/`short-monotonic`),
//! `/dev/kmsg` records (`6,1234,8523347322,-;msg`), or bare messages. Lines that are not part of
//! an OOM report are ignored, truncated reports still give what they hold, and no input panics.
//!
//! The kernel forms handled (mm/oom_kill.c, mm/memcontrol.c): the `oom-kill:` summary line of
//! Linux ≥ 5.0 (`oom_memcg=` for a memory cgroup OOM, `global_oom` for a node-wide one), the
//! `Task in … killed as a result of limit of …` line of older kernels, `Killed process` lines
//! (several for a `memory.oom.group` kill, where newer kernels print the victim twice),
//! `Kill process … or sacrifice child` of old kernels, and the task table (for `oom_score_adj`
//! where the `Killed process` line lacks it).

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

/// Memory cgroup OOM (a limit was hit) or node-wide OOM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OomKind {
    /// A memory cgroup hit its `memory.max` (Kubernetes: the container's or pod's limit).
    Memcg,
    /// The node ran out of memory.
    Global,
}

/// One killed process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KilledProcess {
    /// PID.
    pub pid: u32,
    /// Command name as the kernel knows it (at most 15 characters).
    pub comm: String,
    /// `anon-rss`, kB.
    pub anon_rss_kb: Option<u64>,
    /// `file-rss`, kB.
    pub file_rss_kb: Option<u64>,
    /// `shmem-rss`, kB.
    pub shmem_rss_kb: Option<u64>,
    /// `oom_score_adj` from the kill line, else from the task table.
    pub oom_score_adj: Option<i32>,
}

/// One OOM-killer invocation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OomEvent {
    /// Memcg or global; `None` when the report was cut before saying.
    pub kind: Option<OomKind>,
    /// `constraint=` (`CONSTRAINT_MEMCG`, `CONSTRAINT_NONE`, …), Linux ≥ 5.0. Not a reliable
    /// memcg/global signal on its own: some kernels print `CONSTRAINT_NONE` for memcg kills.
    pub constraint: Option<String>,
    /// The memory cgroup whose limit was hit (`oom_memcg=`, or "limit of" on old kernels).
    pub oom_memcg: Option<String>,
    /// The victim's memory cgroup (`task_memcg=`, or "Task in" on old kernels). `cpuset=` is
    /// not used: it names the cpuset cgroup, which need not be the memory one.
    pub task_memcg: Option<String>,
    /// The victim (the process the kernel chose).
    pub victim_pid: Option<u32>,
    /// Its command name.
    pub victim_comm: Option<String>,
    /// The victim's `anon-rss`, kB.
    pub anon_rss_kb: Option<u64>,
    /// The victim's `file-rss`, kB.
    pub file_rss_kb: Option<u64>,
    /// The victim's `shmem-rss`, kB.
    pub shmem_rss_kb: Option<u64>,
    /// The victim's `oom_score_adj`.
    pub oom_score_adj: Option<i32>,
    /// The pod UID decoded from `task_memcg`.
    #[serde(rename = "podUID")]
    pub pod_uid: Option<String>,
    /// The container ID decoded from `task_memcg`.
    #[serde(rename = "containerID")]
    pub container_id: Option<String>,
    /// The process that ran into the OOM (`<comm> invoked oom-killer`); often not the victim.
    pub invoked_by: Option<String>,
    /// Wall-clock time from the line prefix (syslog, journal or `dmesg -T`), as written.
    pub time: Option<String>,
    /// Seconds since boot from the kernel timestamp, when the line had one.
    pub uptime_seconds: Option<f64>,
    /// A `memory.oom.group` kill: the whole cgroup was killed.
    pub group_kill: bool,
    /// Every process killed, the victim first, each once.
    pub killed: Vec<KilledProcess>,
    /// How many kill lines the report has: what the `oom_kill` counters of `memory.events`
    /// count (one per line, so a `memory.oom.group` kill that prints its victim twice counts
    /// it twice; measured on 6.12 in the VM, S21).
    #[serde(skip)]
    pub kill_lines: u64,
    /// The kubelet would record a `SystemOOM` node event: cAdvisor's parser sees no memory
    /// cgroup on the report, so it takes the victim's container as `/`.
    #[serde(rename = "kubeletSystemOOM")]
    pub kubelet_system_oom: bool,
    /// The report was cut before its `oom-kill:` or `Killed process` line.
    pub incomplete: bool,
}

/// One input line split into its prefix (times) and the kernel message.
#[derive(Debug, Clone, PartialEq)]
pub struct Line<'a> {
    /// Wall-clock time from a syslog/journal prefix or a `dmesg -T` bracket.
    pub time: Option<&'a str>,
    /// Seconds since boot from a `[ 1.234]` bracket or a `/dev/kmsg` record.
    pub uptime_seconds: Option<f64>,
    /// The message.
    pub message: &'a str,
}

fn re(pattern: &str) -> Regex {
    // The patterns are constants, tested below; an invalid one is a programming error caught
    // by every test run, so an empty-match fallback would only hide it.
    #[allow(clippy::expect_used)]
    Regex::new(pattern).expect("a valid constant pattern")
}

static KMSG: LazyLock<Regex> = LazyLock::new(|| re(r"^\d+,\d+,(\d+),[^;]*;(.*)$"));
static SYSLOG: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^((?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?)|(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)) (?:\S+ )?kernel: ?(.*)$",
    )
});
static MONOTONIC_JOURNAL: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\[\s*(\d+\.\d+)\] \S+ kernel: ?(.*)$"));
static BRACKET: LazyLock<Regex> = LazyLock::new(|| re(r"^\[\s*([^\]]*)\] ?(.*)$"));

static INVOKED: LazyLock<Regex> = LazyLock::new(|| re(r"^(.*?) invoked oom-killer:"));
static OOM_KILL: LazyLock<Regex> = LazyLock::new(|| re(r"oom-kill:(.*)$"));
// cAdvisor's pattern is `Task in (.*) killed as a result of limit of (.*)`; the kernel prints
// cgroup paths, which start with '/', and requiring that keeps prose quoting the line out.
static LEGACY: LazyLock<Regex> =
    LazyLock::new(|| re(r"Task in (/\S*) killed as a result of limit of (/\S*)"));
static KILLED: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?:(Memory cgroup out of memory|Out of memory[^:]*): )?Killed process (\d+) \((.+)\)(.*)$")
});
static GROUP: LazyLock<Regex> =
    LazyLock::new(|| re(r"Tasks in (.*) are going to be killed due to memory\.oom\.group set"));
static OLD_CHOICE: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(Memory cgroup out of memory|Out of memory[^:]*): Kill process \d+ \(.+\) score")
});
static TASK_ROW: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\[\s*(\d+)\]\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+(-?\d+)\s+(.+)$"));

/// Splits a line into its times and message. Never fails: an unrecognised prefix is left in
/// the message.
pub fn split_line(line: &str) -> Line<'_> {
    let line = line.trim_end_matches(['\r', '\n']);
    let mut out = Line {
        time: None,
        uptime_seconds: None,
        message: line,
    };
    if let Some(c) = KMSG.captures(line) {
        out.uptime_seconds = c
            .get(1)
            .and_then(|m| m.as_str().parse::<u64>().ok())
            .map(micros_to_seconds);
        out.message = c.get(2).map_or("", |m| m.as_str());
        return out;
    }
    if let Some(c) = SYSLOG.captures(line) {
        out.time = c.get(1).map(|m| m.as_str());
        out.message = c.get(2).map_or("", |m| m.as_str());
    } else if let Some(c) = MONOTONIC_JOURNAL.captures(line) {
        out.uptime_seconds = c.get(1).and_then(|m| m.as_str().parse().ok());
        out.message = c.get(2).map_or("", |m| m.as_str());
        return out;
    }
    // A `[ 8523.347322]` (dmesg) or `[Sun Nov 29 15:00:00 2026]` (dmesg -T) bracket, but not
    // the task table's `[  pid  ]` header or `[ 184245]` rows.
    if let Some(c) = BRACKET.captures(out.message) {
        let inside = c.get(1).map_or("", |m| m.as_str().trim());
        let rest = c.get(2).map_or("", |m| m.as_str());
        if inside.contains('.') && inside.parse::<f64>().is_ok() {
            out.uptime_seconds = inside.parse().ok();
            out.message = rest;
        } else if inside.contains(':') && inside.contains(' ') {
            out.time = out.time.or(Some(inside));
            out.message = rest;
        }
    }
    out
}

#[allow(clippy::cast_precision_loss)] // microseconds since boot: exact far beyond any uptime
fn micros_to_seconds(us: u64) -> f64 {
    us as f64 / 1e6
}

/// Streams lines into events. Feed every line, then call [`Parser::finish`].
#[derive(Debug, Default)]
pub struct Parser {
    current: Option<Open>,
    /// oom_score_adj by PID from the latest task table (the first row of a PID counts).
    table: std::collections::HashMap<u32, i32>,
}

/// An event being assembled.
#[derive(Debug)]
struct Open {
    event: OomEvent,
    /// The `oom-kill:` summary line was seen.
    summary: bool,
    /// The legacy `Task in … killed as a result of limit of …` line was seen.
    legacy: bool,
    /// cAdvisor's view: the victim container (`oom_memcg`, or the legacy "limit of").
    cadvisor_victim_container: Option<String>,
    /// cAdvisor would have emitted its record (an `oom_memcg=` summary or a kill line).
    cadvisor_finished: bool,
    /// The PIDs in `event.killed`.
    killed_pids: std::collections::HashSet<u32>,
}

impl Open {
    fn new(line: &Line<'_>) -> Open {
        Open {
            event: OomEvent {
                kind: None,
                constraint: None,
                oom_memcg: None,
                task_memcg: None,
                victim_pid: None,
                victim_comm: None,
                anon_rss_kb: None,
                file_rss_kb: None,
                shmem_rss_kb: None,
                oom_score_adj: None,
                pod_uid: None,
                container_id: None,
                invoked_by: None,
                time: line.time.map(str::to_owned),
                uptime_seconds: line.uptime_seconds,
                group_kill: false,
                killed: Vec::new(),
                kill_lines: 0,
                kubelet_system_oom: false,
                incomplete: false,
            },
            summary: false,
            legacy: false,
            cadvisor_victim_container: None,
            cadvisor_finished: false,
            killed_pids: std::collections::HashSet::new(),
        }
    }

    /// The report already named its victim (a summary, a legacy line or a kill): another such
    /// line belongs to the next report.
    fn named_victim(&self) -> bool {
        self.summary || self.legacy || !self.event.killed.is_empty()
    }

    fn stamp(&mut self, line: &Line<'_>) {
        // The event's time is the summary's, else the first kill line's (as cAdvisor takes the
        // message that finishes its record).
        if let Some(t) = line.time {
            self.event.time = Some(t.to_owned());
        }
        if let Some(u) = line.uptime_seconds {
            self.event.uptime_seconds = Some(u);
        }
    }
}

impl Parser {
    /// A parser with no open event.
    pub fn new() -> Parser {
        Parser::default()
    }

    /// Feeds one line; returns the event it completed, if any (an event is complete when the
    /// next one starts).
    pub fn feed(&mut self, raw: &str) -> Option<OomEvent> {
        let line = split_line(raw);
        let msg = line.message;
        if let Some(c) = INVOKED.captures(msg) {
            let done = self.close();
            let mut open = Open::new(&line);
            open.event.invoked_by = c.get(1).map(|m| m.as_str().trim().to_owned());
            self.table.clear();
            self.current = Some(open);
            return done;
        }
        if let Some(c) = TASK_ROW.captures(msg) {
            let pid = c.get(1).and_then(|m| m.as_str().parse().ok());
            let adj = c.get(2).and_then(|m| m.as_str().parse().ok());
            if let (Some(pid), Some(adj)) = (pid, adj) {
                self.table.entry(pid).or_insert(adj);
            }
            return None;
        }
        if let Some(c) = OOM_KILL.captures(msg) {
            let done = self.open_for_victim(&line);
            if let Some(open) = self.current.as_mut() {
                summary(open, c.get(1).map_or("", |m| m.as_str()));
                open.stamp(&line);
            }
            return done;
        }
        if let Some(c) = LEGACY.captures(msg) {
            let done = self.open_for_victim(&line);
            if let Some(open) = self.current.as_mut() {
                let task = cadvisor_join(c.get(1).map_or("", |m| m.as_str()));
                let limit = cadvisor_join(c.get(2).map_or("", |m| m.as_str()));
                open.legacy = true;
                open.event.task_memcg.get_or_insert(task);
                if limit != "/" {
                    open.event.kind.get_or_insert(OomKind::Memcg);
                }
                open.event.oom_memcg.get_or_insert(limit.clone());
                if !open.summary {
                    open.cadvisor_victim_container = Some(limit);
                }
            }
            return done;
        }
        if let Some(c) = GROUP.captures(msg) {
            if let Some(open) = self.current.as_mut() {
                open.event.group_kill = true;
                open.event.kind.get_or_insert(OomKind::Memcg);
                if let Some(m) = c.get(1) {
                    open.event
                        .oom_memcg
                        .get_or_insert_with(|| m.as_str().to_owned());
                }
            }
            return None;
        }
        if let Some(c) = OLD_CHOICE.captures(msg) {
            if let Some(open) = self.current.as_mut() {
                open.event
                    .kind
                    .get_or_insert(kind_of_prefix(c.get(1).map(|m| m.as_str())));
            }
            return None;
        }
        if let Some(c) = KILLED.captures(msg) {
            let pid = c.get(2).and_then(|m| m.as_str().parse::<u32>().ok())?;
            // A kill line with no open report (its start was cut) opens one.
            let done = if self.current.is_none() {
                self.current = Some(Open::new(&line));
                None
            } else {
                None
            };
            let adj_from_table = self.table.get(&pid).copied();
            if let Some(open) = self.current.as_mut() {
                if let Some(prefix) = c.get(1) {
                    open.event
                        .kind
                        .get_or_insert(kind_of_prefix(Some(prefix.as_str())));
                }
                let rest = c.get(4).map_or("", |m| m.as_str());
                let killed = KilledProcess {
                    pid,
                    comm: c.get(3).map_or("", |m| m.as_str()).to_owned(),
                    anon_rss_kb: field_kb(rest, "anon-rss:"),
                    file_rss_kb: field_kb(rest, "file-rss:"),
                    shmem_rss_kb: field_kb(rest, "shmem-rss:"),
                    oom_score_adj: field_int(rest, "oom_score_adj:").or(adj_from_table),
                };
                if !open.summary && open.event.killed.is_empty() {
                    open.stamp(&line);
                }
                open.cadvisor_finished = true;
                open.event.kill_lines += 1;
                // A set beside the list: a report of 100,000 kill lines de-duplicates in linear
                // time (a scan of the list per line took 6 s of a core).
                if open.killed_pids.insert(pid) {
                    open.event.killed.push(killed);
                }
            }
            return done;
        }
        None
    }

    /// Makes sure an open report can take a line naming the victim: a second such line means
    /// a new invocation whose start line is missing, so the current report is closed (and
    /// returned) and a new one opened.
    fn open_for_victim(&mut self, line: &Line<'_>) -> Option<OomEvent> {
        match &self.current {
            Some(open) if !open.named_victim() => None,
            _ => {
                let done = self.close();
                self.current = Some(Open::new(line));
                done
            }
        }
    }

    /// Whether the open report has a kill line: a live reader may close it (with
    /// [`Parser::finish`]) once nothing more follows.
    pub fn has_victim(&self) -> bool {
        self.current
            .as_ref()
            .is_some_and(|open| !open.event.killed.is_empty())
    }

    /// Whether a report is open.
    pub fn is_open(&self) -> bool {
        self.current.is_some()
    }

    /// Ends the input; returns the event still open, if any.
    pub fn finish(&mut self) -> Option<OomEvent> {
        self.close()
    }

    fn close(&mut self) -> Option<OomEvent> {
        let open = self.current.take()?;
        Some(complete(open))
    }
}

/// Parses a whole text.
pub fn parse(text: &str) -> Vec<OomEvent> {
    let mut parser = Parser::new();
    let mut events: Vec<OomEvent> = text.lines().filter_map(|l| parser.feed(l)).collect();
    events.extend(parser.finish());
    events
}

fn kind_of_prefix(prefix: Option<&str>) -> OomKind {
    match prefix {
        Some(p) if p.starts_with("Memory cgroup") => OomKind::Memcg,
        _ => OomKind::Global,
    }
}

/// The `key=value,…` fields of an `oom-kill:` line. Values may contain commas only in the last
/// fields (`task=` names), so the known keys are looked up in order.
fn summary(open: &mut Open, fields: &str) {
    let e = &mut open.event;
    open.summary = true;
    let get = |key: &str| -> Option<String> {
        let start = fields
            .match_indices(key)
            .find(|(i, _)| *i == 0 || fields.get(i - 1..*i) == Some(","))
            .map(|(i, _)| i + key.len())?;
        let rest = fields.get(start..)?;
        // `task=` is followed by `,pid=`; the others end at the next comma.
        let end = if key == "task=" {
            rest.rfind(",pid=").unwrap_or(rest.len())
        } else {
            rest.find(',').unwrap_or(rest.len())
        };
        rest.get(..end).map(str::to_owned)
    };
    e.constraint = get("constraint=");
    let oom_memcg = get("oom_memcg=");
    let global = fields.split(',').any(|f| f == "global_oom");
    e.kind = Some(if oom_memcg.is_some() {
        OomKind::Memcg
    } else if global {
        OomKind::Global
    } else {
        e.kind.unwrap_or(OomKind::Global)
    });
    // cAdvisor's containerRegexp needs `oom_memcg=`; a match names the victim container and
    // finishes its record. Without it (a global OOM) the container stays "/".
    if let Some(m) = &oom_memcg {
        open.cadvisor_victim_container = Some(m.clone());
        open.cadvisor_finished = true;
    }
    e.oom_memcg = oom_memcg.or(e.oom_memcg.take());
    e.task_memcg = get("task_memcg=").or(e.task_memcg.take());
    e.victim_comm = get("task=");
    e.victim_pid = get("pid=").and_then(|p| p.parse().ok());
}

/// Go's `path.Join("/", x)` for the legacy line, as cAdvisor applies it.
fn cadvisor_join(path: &str) -> String {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    format!("/{}", parts.join("/"))
}

fn field_kb(rest: &str, key: &str) -> Option<u64> {
    let start = rest.find(key)? + key.len();
    let digits: String = rest
        .get(start..)?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn field_int(rest: &str, key: &str) -> Option<i32> {
    let start = rest.find(key)? + key.len();
    let text: String = rest
        .get(start..)?
        .chars()
        .enumerate()
        .take_while(|(i, c)| c.is_ascii_digit() || (*i == 0 && *c == '-'))
        .map(|(_, c)| c)
        .collect();
    text.parse().ok()
}

fn complete(open: Open) -> OomEvent {
    let mut e = open.event;
    // The victim: the summary's task, else the first process killed.
    let victim = match e.victim_pid {
        Some(pid) => e.killed.iter().position(|k| k.pid == pid),
        None => (!e.killed.is_empty()).then_some(0),
    };
    if let Some(i) = victim {
        let k = e.killed.remove(i);
        e.victim_pid = Some(k.pid);
        if e.victim_comm.is_none() {
            e.victim_comm = Some(k.comm.clone());
        }
        e.anon_rss_kb = k.anon_rss_kb;
        e.file_rss_kb = k.file_rss_kb;
        e.shmem_rss_kb = k.shmem_rss_kb;
        e.oom_score_adj = k.oom_score_adj;
        e.killed.insert(0, k);
    }
    if let Some(task) = &e.task_memcg {
        let id = oomwarden_kube::decode_cgroup_path(task);
        e.pod_uid = id.pod_uid;
        e.container_id = id.container_id;
    }
    e.incomplete = !open.summary && e.killed.is_empty();
    // cAdvisor (kubelet's OOM watcher) starts every record with victim container "/" and only a
    // `oom_memcg=` summary or a legacy "limit of" line changes it; "/" means SystemOOM. A record
    // it never finishes is never emitted.
    e.kubelet_system_oom = open.cadvisor_finished
        && open
            .cadvisor_victim_container
            .as_deref()
            .is_none_or(|c| c == "/");
    e
}

#[cfg(test)]
mod tests;
