//! `oomwarden`: the command-line entry point. `main` only parses arguments and dispatches;
//! each subcommand lives in `commands/<name>.rs` as `run(args, stdout, stderr) -> Exit`.

mod commands;
mod exit;
mod human;
mod loghuman;
mod logjson;
mod output;
mod terminal;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::exit::{Exit, Fail};

/// Userspace OOM handler and memory forensics for Kubernetes nodes, compatible with the Talos
/// Linux OOM controller's configuration.
#[derive(Debug, Parser)]
#[command(name = "oomwarden", version = oomwarden_node::VERSION, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate a configuration file and print the effective settings.
    Check(commands::check::Args),
    /// Evaluate a trigger or ranking expression against given variables.
    Eval(commands::eval::Args),
    /// Run the OOM handler: sample, decide, kill, record.
    Run(commands::run::Args),
    /// Show the node layout: each cgroup's class and whether it could be killed.
    Layout(commands::layout::Args),
    /// What on this node stands between it and good OOM handling: other killers, PSI, kernel
    /// settings, protection, the layout; each finding with an id, a severity and the fix.
    Doctor(commands::doctor::Args),
    /// List the kernel's OOM kills from a kernel log (default: the live one), one per line.
    Oomlog(commands::oomlog::Args),
    /// Per pod manifest: QoS class, each container's oom_score_adj, the pod's memory.max and
    /// whether the OOM handler's default ranking can kill it.
    Score(commands::score::Args),
    /// From kubectl output: pods and workloads the OOM handler may kill (no memory limit), and
    /// containers a default memory limit would block at admission.
    Audit(commands::audit::Args),
    /// Every cgroup's memory numbers, the node as the kubelet and node-exporter see it, and the
    /// kubelet's eviction order.
    Top(commands::top::Args),
    /// Requests and limits fitted to what each pod and container on this node really used,
    /// spikes included (the daemon's usage history; with --pods, against what they ask for).
    Rightsize(commands::rightsize::Args),
    /// The system-namespace memory defaults (seed 003): a default-limit LimitRange in every
    /// system namespace, withheld while unsafe until acknowledged (run, status, plan).
    Limits(commands::limits::Args),
    /// The OOM handler's action records (from the running daemon, else its history file).
    Actions(commands::actions::ActionsArgs),
    /// The running daemon's state: configuration, layout, last cycle, last trigger, errors.
    Status(commands::actions::StatusArgs),
    /// Why a pod was killed: the record, the trigger's values against its thresholds, the
    /// victim against the other candidates, the kernel's OOM kills of the same pod.
    Explain(commands::explain::Args),
    /// Record what the OOM handler reads, every interval, for `replay` (or fetch the running
    /// daemon's flight-recorder window).
    Record(commands::record::Args),
    /// Run a recording through the OOM handler's decision code under one or more
    /// configurations: firings, rankings, victims, differences, a timeline picture.
    Replay(commands::replay::Args),
    /// Print a shell completion script to standard output (bash: `source <(oomwarden
    /// completions bash)`; zsh, fish, elvish, powershell likewise).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) to standard output: `oomwarden man | man -l -`; with a
    /// subcommand, its own page (`oomwarden man run`).
    Man {
        /// A subcommand.
        subcommand: Option<String>,
    },
}

fn completions(shell: clap_complete::Shell, out: &mut impl Write) -> anyhow::Result<Exit> {
    let mut command = <Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut command, "oomwarden", out);
    Ok(Exit::Ok)
}

fn man(subcommand: Option<&str>, out: &mut impl Write) -> anyhow::Result<Exit> {
    let command = <Cli as clap::CommandFactory>::command();
    let page = match subcommand {
        None => command,
        Some(name) => match command.find_subcommand(name) {
            // Named as man pages of subcommands are: oomwarden-run(1).
            Some(sub) => sub
                .clone()
                .name(format!("oomwarden-{name}"))
                .version(oomwarden_node::VERSION),
            None => {
                return Err(Fail::usage(format!("oomwarden: no subcommand {name:?}")).into());
            }
        },
    };
    clap_mangen::Man::new(page).render(out)?;
    Ok(Exit::Ok)
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help/version to stdout (success) and usage errors to stderr.
            let _ = e.print();
            return if e.use_stderr() {
                Exit::Usage.into()
            } else {
                Exit::Ok.into()
            };
        }
    };
    // Not locked for the whole command: `run` lives for days and other threads (a post-kill
    // hook's watcher, the API server) log through the same stderr; each write takes the lock
    // for itself.
    let (out, err) = (std::io::stdout(), std::io::stderr());
    if matches!(cli.command, Command::Run(_)) || is_limits_run(&cli.command) {
        // The daemon logs through its own subscriber, which escapes what it prints.
        dispatch(cli.command, out, err)
    } else {
        // Every other command's output reaches a terminal with no control character a name
        // could carry (`terminal`).
        dispatch(
            cli.command,
            terminal::Escaping::new(out),
            terminal::Escaping::new(err),
        )
    }
}

/// `limits run` logs through the daemon's subscriber, which escapes what it prints.
fn is_limits_run(command: &Command) -> bool {
    matches!(command, Command::Limits(a) if a.is_run())
}

/// Runs `command`, writing to `out` and `err`; its exit code.
fn dispatch(command: Command, mut out: impl Write, mut err: impl Write) -> ExitCode {
    let exit = match command {
        Command::Check(args) => commands::check::run(&args, &mut out, &mut err),
        Command::Eval(args) => commands::eval::run(&args, &mut out),
        Command::Run(args) => commands::run::run(&args, &mut out),
        Command::Layout(args) => commands::layout::run(&args, &mut out, &mut err),
        Command::Doctor(args) => commands::doctor::run(&args, &mut out),
        Command::Oomlog(args) => commands::oomlog::run(&args, &mut out),
        Command::Score(args) => commands::score::run(&args, &mut out),
        Command::Audit(args) => commands::audit::run(&args, &mut out),
        Command::Top(args) => commands::top::run(&args, &mut out, &mut err),
        Command::Rightsize(args) => commands::rightsize::run(&args, &mut out, &mut err),
        Command::Limits(args) => commands::limits::run(&args, &mut out),
        Command::Actions(args) => commands::actions::actions(&args, &mut out, &mut err),
        Command::Status(args) => commands::actions::status(&args, &mut out),
        Command::Explain(args) => commands::explain::run(&args, &mut out),
        Command::Record(args) => commands::record::run(&args, &mut out, &mut err),
        Command::Replay(args) => commands::replay::run(&args, &mut out, &mut err),
        Command::Completions { shell } => completions(shell, &mut out),
        Command::Man { subcommand } => man(subcommand.as_deref(), &mut out),
    };
    finish(exit, &mut out, &mut err)
}

/// The exit code of a command's result, its error said on `err`.
fn finish(exit: anyhow::Result<Exit>, out: &mut impl Write, err: &mut impl Write) -> ExitCode {
    let code = match exit {
        Ok(code) => code,
        // The reader went away (`oomwarden top | head`): nothing is wrong, nothing to say.
        Err(e)
            if e.chain().any(|cause| {
                cause
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            Exit::Ok
        }
        Err(e) => match e.downcast_ref::<Fail>() {
            Some(fail) => {
                let _ = writeln!(err, "{}", fail.message);
                fail.exit
            }
            None => {
                let _ = writeln!(err, "oomwarden: {e:#}");
                Exit::Failure
            }
        },
    };
    let _ = out.flush();
    code.into()
}
