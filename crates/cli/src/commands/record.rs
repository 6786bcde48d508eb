//! `oomwarden record`: what the OOM handler would read, every interval, to a file that
//! `oomwarden replay` runs through the handler's decision code. Or, with `--from-daemon`, the
//! running daemon's flight-recorder window.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use oomwarden_cgroupfs::{CgroupFs, Disk};
use oomwarden_collect::Collector;
use oomwarden_daemon::api;
use oomwarden_node::monotonic_ns;
use oomwarden_procfs::ProcFs;
use oomwarden_recording::{Meta, Recorder, Tap, Wakeup};

use crate::commands::{NodeArgs, RecordOverrideArgs, node_and_layout};
use crate::exit::{Exit, Fail};

/// Arguments of `oomwarden record`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The recording to write (created or truncated, mode 0600; gzip when it ends in `.gz`);
    /// `-` is standard output.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Fetch the running daemon's flight-recorder window instead of sampling.
    #[arg(long, conflicts_with_all = ["duration", "cycles", "describe"])]
    from_daemon: bool,
    /// Stop after this long (a Go duration such as `5m`); default: until SIGINT or SIGTERM.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    duration: Option<Duration>,
    /// Stop after this many cycles.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    cycles: Option<u64>,
    /// A description stored in the recording (what happened, for whoever replays it).
    #[arg(long, value_name = "TEXT")]
    describe: Option<String>,
    #[command(flatten)]
    node: NodeArgs,
    /// Root of procfs.
    #[arg(long, value_name = "DIR", default_value = oomwarden_procfs::DEFAULT_PROC_ROOT)]
    proc_root: PathBuf,
    #[command(flatten)]
    overrides: RecordOverrideArgs,
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    match oomwarden_model::parse_go_duration(text) {
        Ok(ns) if ns > 0 => Ok(Duration::from_nanos(ns.unsigned_abs())),
        _ => Err(format!(
            "expected a positive duration such as \"5m\", found {text:?}"
        )),
    }
}

fn create(path: &Path) -> anyhow::Result<Box<dyn Write>> {
    if path == Path::new("-") {
        return Ok(Box::new(std::io::stdout()));
    }
    let file = oomwarden_daemon::recorder::create_recording_file(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    if path.extension().is_some_and(|e| e == "gz") {
        // Flushed every cycle (a sync flush), so a killed recorder leaves a readable prefix;
        // finished when dropped.
        return Ok(Box::new(flate2::write::GzEncoder::new(
            file,
            flate2::Compression::default(),
        )));
    }
    Ok(Box::new(file))
}

pub(crate) fn run(args: &Args, out: &mut impl Write, err: &mut impl Write) -> anyhow::Result<Exit> {
    if args.from_daemon {
        return from_daemon(args, out, err);
    }
    let setup = node_and_layout(
        &args.node,
        &args.proc_root,
        &args.overrides.to_overrides(),
        err,
    )?;
    // Absolute, whatever the command line said: the recording's reads and its roots must
    // name the same paths wherever it is replayed.
    let cgroup_root = std::path::absolute(&args.node.cgroup_root)?;
    let proc_root = std::path::absolute(&args.proc_root)?;
    let tap = Tap::new(Arc::new(Disk));
    let cgroups = CgroupFs::with_files(&cgroup_root, tap.clone());
    let proc = ProcFs::with_files(&proc_root, tap.clone());
    let interval = setup.settings.oom.sample_interval;
    let meta = Meta {
        description: args.describe.clone(),
        ..oomwarden_daemon::recorder::meta(
            &setup.settings,
            &setup.layout,
            &cgroup_root,
            &proc_root,
            "record",
        )
    };
    let mut collector = Collector::new(cgroups, proc, setup.layout, None);
    // Every file any trigger could read: a replay may run another one.
    collector.set_reads(oomwarden_collect::Reads::ALL);
    // Who the pods are, kept in the recording as the daemon keeps it, so that a replay ranks
    // by namespace and labels as the daemon would have (a cache that cannot start records
    // none, as a daemon without one would rank).
    let identity = oomwarden_identity::Cache::start(oomwarden_node::identity_config(
        &setup.settings.warden.container_runtime,
    ))
    .map_err(|e| writeln!(err, "oomwarden: no pod identity in this recording: {e}"))
    .ok();
    if let Some(cache) = &identity {
        // The recording starts with the pods named (the first refresh is bounded by its
        // deadline; a runtime that does not answer leaves the fallback's names).
        let asked = Instant::now();
        while cache.status().refreshes == 0 && asked.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let mut recorder = Recorder::new(meta, None);
    let mut file = create(&args.out)?;
    let write_err = |e: std::io::Error| anyhow::anyhow!("cannot write {}: {e}", args.out.display());
    file.write_all(recorder.header().as_bytes())
        .map_err(write_err)?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .context("cannot install signal handlers")?;
    }
    writeln!(
        err,
        "recording {} (layout {}) every {:?} to {}; SIGINT or SIGTERM stops",
        args.node.cgroup_root.display(),
        collector.layout().name,
        interval,
        args.out.display()
    )?;
    let started = Instant::now();
    let mut tick = started;
    let mut done = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let at = monotonic_ns();
        // What the engine reads: the metrics, and the candidates (every cycle, so that a replay
        // under any trigger finds them).
        let _ = collector.metrics(at);
        let _ = collector.candidates();
        let identities = identity.as_ref().map(oomwarden_identity::Cache::snapshot);
        let text = recorder.cycle_with(at, Wakeup::Tick, tap.take(), identities);
        file.write_all(text.as_bytes()).map_err(write_err)?;
        file.flush().map_err(write_err)?;
        done += 1;
        if args.cycles.is_some_and(|n| done >= n)
            || args.duration.is_some_and(|d| started.elapsed() >= d)
        {
            break;
        }
        // The daemon's schedule: ticks a slow cycle overran are skipped, not bunched.
        (tick, _) = oomwarden_node::next_tick(tick, interval, Instant::now());
        // Sleep in slices so that a signal ends the recording promptly.
        while !stop.load(Ordering::Relaxed) {
            let left = tick.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }
    if let Some(cache) = &identity {
        cache.stop();
    }
    file.write_all(oomwarden_recording::END_LINE.as_bytes())
        .and_then(|()| file.flush())
        .map_err(write_err)?;
    drop(file); // finishes a gzip stream
    writeln!(err, "recorded {done} cycles to {}", args.out.display())?;
    Ok(Exit::Ok)
}

fn from_daemon(args: &Args, _out: &mut impl Write, err: &mut impl Write) -> anyhow::Result<Exit> {
    let dir = match args.overrides.to_overrides().state_dir {
        Some(dir) => dir,
        None => {
            oomwarden_node::load_settings(args.node.config.as_deref(), &Default::default())?
                .warden
                .state_dir
        }
    };
    let answer = match api::request(&dir, "recording") {
        Ok(a) => a,
        Err(e) => {
            return Err(Fail::failure(format!(
                "oomwarden: cannot reach the daemon at {}: {e}",
                dir.join(api::SOCKET_NAME).display()
            ))
            .into());
        }
    };
    let value: serde_json::Value = serde_json::from_str(&answer)
        .with_context(|| format!("the daemon's answer is not JSON: {answer:?}"))?;
    match (
        value.get("recording").and_then(|r| r.as_str()),
        value.get("error"),
    ) {
        (Some(text), _) => {
            let mut file = create(&args.out)?;
            file.write_all(text.as_bytes())
                .and_then(|()| file.flush())
                .with_context(|| format!("cannot write {}", args.out.display()))?;
            drop(file);
            let cycles = text.lines().filter(|l| l.starts_with("c ")).count();
            writeln!(
                err,
                "saved the daemon's flight-recorder window ({cycles} cycles) to {}",
                args.out.display()
            )?;
            Ok(Exit::Ok)
        }
        (None, Some(e)) => Err(Fail::failure(format!(
            "oomwarden: the daemon says: {}",
            e.as_str().unwrap_or("?")
        ))
        .into()),
        (None, None) => Err(Fail::failure(format!(
            "oomwarden: unexpected answer from the daemon: {answer}"
        ))
        .into()),
    }
}
