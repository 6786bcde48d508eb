//! `oomwarden oomlog [FILE|-]`: one line per kernel OOM-killer invocation, from a saved log
//! (`dmesg`, `journalctl -k`, syslog, `/dev/kmsg` records) or, by default, the live kernel log.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use oomwarden_oomlog::{OomEvent, OomKind, parse};

use crate::exit::{Exit, Fail};

/// Where the live kernel log is read from.
const KMSG: &str = "/dev/kmsg";

/// Arguments of `oomwarden oomlog`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Kernel log text (`dmesg`, `journalctl -k`, syslog, or `/dev/kmsg` records); `-` for
    /// standard input. Default: the live kernel log (`/dev/kmsg`, needs root).
    file: Option<PathBuf>,
    /// `-o json`: an array of events; `-o yaml` the same as YAML.
    #[command(flatten)]
    output: crate::output::OutputArgs,
}

pub(crate) fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<Exit> {
    let (text, live) = match &args.file {
        Some(path) => match read_bytes(path) {
            Ok(bytes) => (String::from_utf8_lossy(&bytes).into_owned(), false),
            Err(e) => {
                return Err(Fail::failure(format!("oomwarden: {e:#}")).into());
            }
        },
        None => match read_kmsg(Path::new(KMSG)) {
            Ok(text) => (text, true),
            Err(e) => {
                return Err(Fail::failure(format!("oomwarden: {e:#}\nhint: run as root, or save the log and pass it: journalctl -k > kernel.log; oomwarden oomlog kernel.log")).into());
            }
        },
    };
    let mut events = parse(&text);
    if live {
        // /dev/kmsg stamps records with time since boot only; add the wall time as dmesg -T
        // does (it drifts by the time spent suspended since).
        let boot = boot_time();
        for e in &mut events {
            if e.time.is_none() {
                e.time = e.uptime_seconds.zip(boot).map(|(u, b)| wall_time(b, u));
            }
        }
    }
    if args.output.structured(&events, out)? {
        return Ok(Exit::Ok);
    }
    print_table(&events, out)?;
    Ok(Exit::Ok)
}

/// A log named on the command line (or `-`), bounded as every input is (a pipe from
/// `<(journalctl -k)` is read; a device that never ends is cut).
fn read_bytes(path: &Path) -> anyhow::Result<Vec<u8>> {
    crate::commands::read_input_bytes(path)
}

/// Reads every record the kernel log buffer holds now (non-blocking: stops when it would wait).
fn read_kmsg(path: &Path) -> anyhow::Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    let mut text = String::new();
    // One record per read; the kernel refuses buffers shorter than a record (EINVAL).
    let mut buf = vec![0_u8; 16 * 1024];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                text.push_str(&String::from_utf8_lossy(buf.get(..n).unwrap_or_default()));
                if !text.ends_with('\n') {
                    text.push('\n');
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            // The buffer wrapped past the records not yet read: go on with the next one.
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }
    Ok(text)
}

/// Wall-clock time of boot, seconds since the epoch: now minus time since boot.
fn boot_time() -> Option<f64> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs_f64();
    let up = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    #[allow(clippy::cast_precision_loss)] // seconds since boot: exact
    let up = up.tv_sec as f64 + f64::from(u32::try_from(up.tv_nsec).unwrap_or(0)) / 1e9;
    Some(now - up)
}

fn wall_time(boot: f64, uptime: f64) -> String {
    let t = boot + uptime;
    #[allow(clippy::cast_possible_truncation)] // seconds since the epoch fit in i64
    let secs = t.floor() as i64;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // 0 ≤ fraction < 1e9
    let nanos = ((t - t.floor()) * 1e9) as u32;
    chrono::DateTime::from_timestamp(secs, nanos)
        .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

fn print_table(events: &[OomEvent], out: &mut impl Write) -> std::io::Result<()> {
    if events.is_empty() {
        writeln!(out, "no OOM kill in this log")?;
        return Ok(());
    }
    writeln!(
        out,
        "{:<26} {:<6} {:>8} {:<16} {:>12} {:>6} {:<9} {:<36} {:<13} OOM MEMCG",
        "TIME", "KIND", "PID", "COMM", "ANON RSS KB", "ADJ", "SYSTEMOOM", "POD UID", "CONTAINER"
    )?;
    let dash = || "-".to_owned();
    for e in events {
        let time = e
            .time
            .clone()
            .or_else(|| e.uptime_seconds.map(|u| format!("{u:.6}s after boot")));
        writeln!(
            out,
            "{:<26} {:<6} {:>8} {:<16} {:>12} {:>6} {:<9} {:<36} {:<13} {}",
            time.unwrap_or_else(dash),
            match e.kind {
                Some(OomKind::Memcg) => "memcg",
                Some(OomKind::Global) => "global",
                None => "?",
            },
            e.victim_pid.map_or_else(dash, |p| p.to_string()),
            e.victim_comm.clone().unwrap_or_else(dash),
            e.anon_rss_kb.map_or_else(dash, |k| k.to_string()),
            e.oom_score_adj.map_or_else(dash, |a| a.to_string()),
            if e.kubelet_system_oom { "yes" } else { "no" },
            e.pod_uid.clone().unwrap_or_else(dash),
            e.container_id
                .as_deref()
                .map_or_else(dash, |c| c.get(..13).unwrap_or(c).to_owned()),
            e.oom_memcg.clone().unwrap_or_else(dash),
        )?;
        for k in e.killed.iter().skip(1) {
            writeln!(
                out,
                "{:<26} {:<6} {:>8} {:<16} {:>12} {:>6}   (also killed: memory.oom.group)",
                "",
                "",
                k.pid,
                k.comm,
                k.anon_rss_kb.map_or_else(dash, |v| v.to_string()),
                k.oom_score_adj.map_or_else(dash, |a| a.to_string()),
            )?;
        }
        if e.incomplete {
            writeln!(out, "{:<26} (report cut before its kill line)", "")?;
        }
    }
    Ok(())
}
