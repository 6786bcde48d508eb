//! `oomwarden run`: the OOM handler daemon.

use std::io::Write;
use std::path::PathBuf;

use oomwarden_actuate::{CommandHooks, LinuxActuator};
use oomwarden_daemon::{RunError, RunOptions};

use crate::commands::{NodeArgs, OverrideArgs};
use crate::exit::{Exit, Fail};

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// One readable line per event.
    Human,
    /// One JSON object per event (fields flattened, Talos's message strings).
    Json,
}

/// Arguments of `oomwarden run`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    node: NodeArgs,
    /// Root of procfs.
    #[arg(long, value_name = "DIR", default_value = oomwarden_procfs::DEFAULT_PROC_ROOT)]
    proc_root: PathBuf,
    /// Root of the host's own files the doctor's findings at start read (systemd's unit
    /// directories, `sys/kernel/mm`, Talos's machine configuration): see `oomwarden doctor`.
    #[arg(long, value_name = "DIR", default_value = "/")]
    host_root: PathBuf,
    /// Exit after this many cycles (for tests and scripts).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    cycles: Option<u64>,
    /// Also record what every cycle reads to FILE (created or truncated, mode 0600), for
    /// `oomwarden replay`. While recording, the candidates are read in every cycle.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Log format.
    #[arg(long, value_enum, default_value = "human")]
    log_format: LogFormat,
    /// Log level (`error`, `warn`, `info`, `debug`, `trace`) or a tracing filter directive.
    #[arg(long, value_name = "LEVEL", default_value = "info")]
    log_level: String,
    #[command(flatten)]
    overrides: OverrideArgs,
}

pub(crate) fn init_logging(format: LogFormat, level: &str) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_new(level)
        .map_err(|e| format!("--log-level {level:?}: {e}"))?;
    // Colours only on a terminal: journald and log files would store the escape codes.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_target(false);
    let result = match format {
        LogFormat::Human => builder.fmt_fields(crate::loghuman::fields()).try_init(),
        LogFormat::Json => builder
            .fmt_fields(crate::logjson::JsonFields::new())
            .event_format(crate::logjson::JsonLines)
            .try_init(),
    };
    result.map_err(|e| format!("cannot install the logger: {e}"))
}

pub(crate) fn run(args: &Args, _out: &mut impl Write) -> anyhow::Result<Exit> {
    if let Err(e) = init_logging(args.log_format, &args.log_level) {
        return Err(Fail::usage(e.to_string()).into());
    }
    let options = RunOptions {
        config_file: args.node.config.clone(),
        overrides: args.overrides.to_overrides(),
        cgroup_root: args.node.cgroup_root.clone(),
        proc_root: args.proc_root.clone(),
        host_root: args.host_root.clone(),
        cycles: args.cycles,
        record: args.record.clone(),
    };
    match oomwarden_daemon::run(
        &options,
        Box::new(LinuxActuator::new()),
        Box::new(CommandHooks::new()),
    ) {
        Ok(()) => Ok(Exit::Ok),
        Err(e @ RunError::Setup(oomwarden_node::SetupError::Host(_))) => Err(Fail::unsupported(
            format!("oomwarden: this host cannot run the OOM handler: {e}"),
        )
        .into()),
        Err(e) => Err(Fail::failure(format!("oomwarden: {e}")).into()),
    }
}
