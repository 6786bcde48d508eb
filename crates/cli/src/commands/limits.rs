//! `oomwarden limits run|status|plan`: the system-namespace memory defaults of seed 003 — a
//! default-limit LimitRange in every system namespace, withheld while a container would be
//! rejected at admission, until an administrator acknowledges it (docs/limits.md).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use oomwarden_limits::{
    Action, Cluster, Decision, Label, Names, Preset, Selection, Selector, Settings,
};

use crate::commands::read_input;
use crate::exit::{Exit, Fail};
use crate::terminal::clean;

/// Arguments of `oomwarden limits`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Run the controller: watch the cluster, keep the default in every selected namespace,
    /// hold it while unsafe (one replica writes, elected through a Lease).
    Run(RunArgs),
    /// Per namespace, from the live cluster: the default's state, the hold and its token, the
    /// blockers.
    Status(StatusArgs),
    /// The same decisions offline, from `kubectl get
    /// namespaces,limitranges,deployments,statefulsets,daemonsets,cronjobs,jobs,pods -A -o json`.
    Plan(PlanArgs),
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum PresetArg {
    /// oomwarden's names; namespaces opt in with the label oomwarden.io/memory-defaults=enabled.
    Oomwarden,
    /// The seed's names (cozystack-system-defaults, cozystack.io/system,
    /// operator.cozystack.io/system-memory-{state,ack}); every namespace but tenant-*.
    Cozystack,
}

/// What the decisions are made with (shared by the three commands).
#[derive(Debug, Clone, clap::Args)]
struct SettingsArgs {
    /// The names and selection to start from.
    #[arg(long, value_enum, default_value = "oomwarden")]
    preset: PresetArg,
    /// The default container memory limit (empty: 32Gi; 0 disables the feature and removes
    /// every LimitRange the controller owns).
    #[arg(long, value_name = "QUANTITY", default_value = "")]
    limit: String,
    /// The default container memory request paired with it (empty: 32Mi); above the limit is
    /// refused.
    #[arg(long, value_name = "QUANTITY", default_value = "")]
    request: String,
    /// Only namespaces whose labels match (equality-based: a=b,c!=d,e,!f); replaces the
    /// preset's selector.
    #[arg(long, value_name = "SELECTOR")]
    namespace_selector: Option<String>,
    /// Never namespaces whose name begins with this (repeatable); replaces the preset's.
    #[arg(long, value_name = "PREFIX")]
    exclude_prefix: Vec<String>,
    /// The LimitRange's name.
    #[arg(long, value_name = "NAME")]
    limit_range_name: Option<String>,
    /// The label put on exactly the namespaces given the LimitRange.
    #[arg(long, value_name = "KEY=VALUE")]
    system_label: Option<String>,
    /// The label that makes a LimitRange the controller's.
    #[arg(long, value_name = "KEY=VALUE")]
    managed_by: Option<String>,
    /// The Namespace annotation holding the safety state.
    #[arg(long, value_name = "KEY")]
    state_annotation: Option<String>,
    /// The Namespace annotation that acknowledges a hold.
    #[arg(long, value_name = "KEY")]
    ack_annotation: Option<String>,
}

impl SettingsArgs {
    fn settings(&self) -> Result<Settings, Fail> {
        let usage = |e: String| Fail::usage(format!("oomwarden: {e}"));
        let preset = match self.preset {
            PresetArg::Oomwarden => Preset::Oomwarden,
            PresetArg::Cozystack => Preset::Cozystack,
        };
        let mut names: Names = preset.names();
        let mut selection: Selection = preset.selection();
        if let Some(s) = &self.namespace_selector {
            selection.selector =
                Selector::parse(s).map_err(|e| usage(format!("--namespace-selector: {e}")))?;
        }
        if !self.exclude_prefix.is_empty() {
            selection.exclude_prefixes = self.exclude_prefix.clone();
        }
        if let Some(n) = &self.limit_range_name {
            names.limit_range = n.clone();
        }
        if let Some(l) = &self.system_label {
            names.system_label =
                Label::parse(l).map_err(|e| usage(format!("--system-label: {e}")))?;
        }
        if let Some(l) = &self.managed_by {
            names.managed_by = Label::parse(l).map_err(|e| usage(format!("--managed-by: {e}")))?;
        }
        if let Some(a) = &self.state_annotation {
            names.state_annotation = a.clone();
        }
        if let Some(a) = &self.ack_annotation {
            names.ack_annotation = a.clone();
        }
        Settings::new(names, selection, &self.limit, &self.request)
            .map_err(|e| usage(e.to_string()))
    }
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    #[command(flatten)]
    settings: SettingsArgs,
    /// A kubeconfig (default: the pod's service account).
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Every namespace is reconciled again after this many seconds, changes or not.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    resync_seconds: u64,
    /// The Lease's namespace (default: $POD_NAMESPACE).
    #[arg(long, value_name = "NAMESPACE")]
    lease_namespace: Option<String>,
    /// The Lease's name.
    #[arg(long, value_name = "NAME", default_value = "oomwarden-limits")]
    lease_name: String,
    /// This replica's identity in the Lease (default: $POD_NAME, else the host name).
    #[arg(long, value_name = "ID")]
    identity: Option<String>,
    /// Run without leader election (only ever one replica).
    #[arg(long)]
    no_leader_election: bool,
    /// Log format.
    #[arg(long, value_enum, default_value = "human")]
    log_format: crate::commands::run::LogFormat,
    /// Log level (`error`, `warn`, `info`, `debug`, `trace`) or a tracing filter directive.
    #[arg(long, value_name = "LEVEL", default_value = "info")]
    log_level: String,
    /// Serve /metrics and /healthz here (empty: not at all).
    #[arg(long, value_name = "ADDRESS", default_value = "0.0.0.0:9103")]
    metrics_address: String,
}

#[derive(Debug, clap::Args)]
struct StatusArgs {
    #[command(flatten)]
    settings: SettingsArgs,
    /// A kubeconfig (default: $KUBECONFIG, else ~/.kube/config, else the pod's service account).
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    #[command(flatten)]
    output: crate::output::OutputArgs,
}

#[derive(Debug, clap::Args)]
struct PlanArgs {
    #[command(flatten)]
    settings: SettingsArgs,
    /// The dump to decide from; `-` for standard input.
    #[arg(long, value_name = "FILE", required = true)]
    from: PathBuf,
    /// The time a new hold is named after (seconds since the epoch; default: now).
    #[arg(long, value_name = "SECONDS")]
    now: Option<i64>,
    #[command(flatten)]
    output: crate::output::OutputArgs,
}

impl Args {
    /// Whether this is `limits run` (a long-running controller that logs).
    pub(crate) fn is_run(&self) -> bool {
        matches!(self.command, Sub::Run(_))
    }
}

pub(crate) fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<Exit> {
    match &args.command {
        Sub::Run(a) => run_controller(a),
        Sub::Status(a) => status(a, out),
        Sub::Plan(a) => plan(a, out),
    }
}

fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn plan(args: &PlanArgs, out: &mut impl Write) -> anyhow::Result<Exit> {
    let settings = args.settings.settings()?;
    let text = read_input(&args.from).map_err(|e| Fail::failure(format!("oomwarden: {e:#}")))?;
    let mut cluster = Cluster::new();
    cluster
        .add_text(&text)
        .map_err(|e| Fail::failure(format!("oomwarden: {}: {e}", args.from.display())))?;
    let cluster = cluster
        .finish()
        .map_err(|e| Fail::failure(format!("oomwarden: {}: {e}", args.from.display())))?;
    if cluster.namespaces.is_empty() {
        // An empty plan would read as a clean bill of health.
        return Err(Fail::failure(format!(
            "oomwarden: {}: no Namespace in the input; include namespaces in `kubectl get namespaces,limitranges,deployments,statefulsets,daemonsets,cronjobs,jobs,pods -A -o json`",
            args.from.display()
        ))
        .into());
    }
    let decisions = oomwarden_limits::plan(&settings, &cluster, args.now.unwrap_or_else(now_unix));
    print(&decisions, &cluster, &settings, &args.output, out)
}

fn status(args: &StatusArgs, out: &mut impl Write) -> anyhow::Result<Exit> {
    let settings = args.settings.settings()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let cluster = runtime
        .block_on(async {
            let path = args.kubeconfig.clone().or_else(default_kubeconfig);
            let client = oomwarden_limits_controller::client(path.as_deref()).await?;
            oomwarden_limits_controller::snapshot(&client).await
        })
        .map_err(|e| Fail::failure(format!("oomwarden: {e}")))?;
    let decisions = oomwarden_limits::plan(&settings, &cluster, now_unix());
    print(&decisions, &cluster, &settings, &args.output, out)
}

/// kubectl's: `$KUBECONFIG` (its first file), else `~/.kube/config` when it exists.
fn default_kubeconfig() -> Option<PathBuf> {
    if let Some(k) = std::env::var_os("KUBECONFIG").filter(|k| !k.is_empty()) {
        return std::env::split_paths(&k).next();
    }
    let home = PathBuf::from(std::env::var_os("HOME")?).join(".kube/config");
    home.exists().then_some(home)
}

fn print(
    decisions: &[Decision],
    cluster: &Cluster,
    settings: &Settings,
    output: &crate::output::OutputArgs,
    out: &mut impl Write,
) -> anyhow::Result<Exit> {
    if output.structured(&decisions, out)? {
        return Ok(Exit::Ok);
    }
    let limit = settings
        .limit
        .as_ref()
        .map_or("0 (disabled)".to_owned(), |l| l.text.clone());
    writeln!(
        out,
        "default limit {limit}, request {}; LimitRange {}; state in {}",
        settings.request, settings.names.limit_range, settings.names.state_annotation
    )?;
    writeln!(
        out,
        "{:<32} {:<9} {:<8} REASON",
        "NAMESPACE", "ACTION", "DEFAULT"
    )?;
    for d in decisions {
        writeln!(
            out,
            "{:<32} {:<9} {:<8} {}",
            clean(&d.namespace),
            d.action.name(),
            if d.defaulted { "yes" } else { "no" },
            clean(&d.reason)
        )?;
    }
    let held: Vec<&Decision> = decisions
        .iter()
        .filter(|d| d.action == Action::Hold)
        .collect();
    for d in held {
        writeln!(
            out,
            "\n{}: held; after checking the source of every workload below, acknowledge with\n  kubectl annotate namespace {} {}='{}' --overwrite",
            clean(&d.namespace),
            clean(&d.namespace),
            settings.names.ack_annotation,
            clean(d.hold.as_deref().unwrap_or(""))
        )?;
        for b in &d.blockers {
            writeln!(
                out,
                "  {} container {} requests {}",
                clean(&b.object),
                clean(&b.container),
                clean(&b.request)
            )?;
        }
    }
    if !cluster.unseen.is_empty() {
        let names: Vec<String> = cluster
            .unseen
            .iter()
            .map(|n| clean(n).into_owned())
            .collect();
        writeln!(
            out,
            "\nobjects in namespaces missing from the input (not decided): {}",
            names.join(", ")
        )?;
    }
    Ok(Exit::Ok)
}

fn run_controller(args: &RunArgs) -> anyhow::Result<Exit> {
    let settings = args.settings.settings()?;
    if args.resync_seconds == 0 {
        return Err(Fail::usage("oomwarden: --resync-seconds must be more than 0").into());
    }
    let identity = args
        .identity
        .clone()
        .or_else(|| std::env::var("POD_NAME").ok().filter(|n| !n.is_empty()))
        .unwrap_or_else(|| oomwarden_events::node_name(None));
    let lease = if args.no_leader_election {
        None
    } else {
        let namespace = args
            .lease_namespace
            .clone()
            .or_else(|| std::env::var("POD_NAMESPACE").ok().filter(|n| !n.is_empty()))
            .ok_or_else(|| {
                Fail::usage(
                    "oomwarden: the Lease needs a namespace: --lease-namespace or $POD_NAMESPACE (or --no-leader-election)",
                )
            })?;
        Some(oomwarden_limits_controller::LeaseOptions {
            namespace,
            name: args.lease_name.clone(),
            identity: identity.clone(),
            duration: 15,
            grace: 5,
        })
    };
    let metrics_address: Option<SocketAddr> = match args.metrics_address.as_str() {
        "" => None,
        a => Some(
            a.parse()
                .map_err(|e| Fail::usage(format!("oomwarden: --metrics-address {a:?}: {e}")))?,
        ),
    };
    crate::commands::run::init_logging(args.log_format, &args.log_level)
        .map_err(|e| Fail::usage(format!("oomwarden: {e}")))?;
    let options = oomwarden_limits_controller::Options {
        kubeconfig: args.kubeconfig.clone(),
        settings,
        resync: Duration::from_secs(args.resync_seconds),
        lease,
        instance: identity,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let metrics = Arc::new(oomwarden_limits_controller::Metrics::new());
    runtime
        .block_on(async {
            if let Some(address) = metrics_address {
                oomwarden_limits_controller::serve_metrics(address, Arc::clone(&metrics)).await?;
            }
            let stop = async {
                let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .ok();
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
                }
                tracing::info!("stopping: the reconciles in flight finish, the Lease is released");
            };
            oomwarden_limits_controller::run(options, metrics, stop).await
        })
        .map_err(|e| Fail::failure(format!("oomwarden: {e}")))?;
    Ok(Exit::Ok)
}
