//! One module per subcommand.

pub(crate) mod actions;
pub(crate) mod audit;
pub(crate) mod builtin;
pub(crate) mod check;
pub(crate) mod doctor;
pub(crate) mod eval;
pub(crate) mod explain;
pub(crate) mod layout;
pub(crate) mod limits;
pub(crate) mod oomlog;
pub(crate) mod record;
pub(crate) mod replay;
pub(crate) mod rightsize;
pub(crate) mod run;
pub(crate) mod score;
pub(crate) mod top;

use std::io::Read;
use std::path::{Path, PathBuf};

use oomwarden_config::Overrides;

use anyhow::Context;

/// Reads a text file named on the command line; `-` is standard input.
pub(crate) fn read_input(path: &Path) -> anyhow::Result<String> {
    let bytes = read_input_bytes(path)?;
    String::from_utf8(bytes)
        .with_context(|| format!("cannot read {}: not UTF-8 text", path.display()))
}

/// The most a command reads from one input (a cluster's pod list of 5,000 pods is about
/// 75 MB of JSON): a device or a stream that never ends is an error, not a full memory.
pub(crate) const MAX_INPUT_BYTES: u64 = 512 << 20;

/// Reads a file named on the command line as bytes, at most [`MAX_INPUT_BYTES`]; `-` is
/// standard input.
pub(crate) fn read_input_bytes(path: &Path) -> anyhow::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let name = if path == Path::new("-") {
        std::io::stdin()
            .take(MAX_INPUT_BYTES + 1)
            .read_to_end(&mut bytes)
            .context("cannot read standard input")?;
        "standard input".to_owned()
    } else {
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes))
            .with_context(|| format!("cannot read {}", path.display()))?;
        path.display().to_string()
    };
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        anyhow::bail!(
            "cannot read {name}: more than {} MiB (oomwarden reads at most that from one input)",
            MAX_INPUT_BYTES >> 20
        );
    }
    Ok(bytes)
}

/// `--layout`: which of the node's cgroups are which class.
#[derive(Debug, clap::Args)]
pub(crate) struct LayoutArg {
    /// Node layout (`auto` detects it); overrides `layout`.
    #[arg(long, value_name = "LAYOUT", value_parser = clap::builder::PossibleValuesParser::new(oomwarden_config::LAYOUTS))]
    layout: Option<String>,
}

impl LayoutArg {
    pub(crate) fn to_overrides(&self) -> Overrides {
        Overrides {
            layout: self
                .layout
                .as_deref()
                .and_then(oomwarden_config::LayoutSetting::from_name),
            ..Overrides::default()
        }
    }
}

/// The flags of `oomwarden record` that override the configuration file.
#[derive(Debug, clap::Args)]
pub(crate) struct RecordOverrideArgs {
    /// Sample interval, as a Go duration (`250ms`); overrides `sampleInterval`.
    #[arg(long, value_name = "DURATION", value_parser = parse_interval)]
    sample_interval: Option<std::time::Duration>,
    /// State directory (absolute) of the daemon `--from-daemon` asks; overrides `stateDir`.
    #[arg(long, value_name = "DIR", value_parser = parse_absolute_dir)]
    state_dir: Option<PathBuf>,
    #[command(flatten)]
    layout: LayoutArg,
}

impl RecordOverrideArgs {
    pub(crate) fn to_overrides(&self) -> Overrides {
        Overrides {
            sample_interval: self.sample_interval,
            state_dir: self.state_dir.clone(),
            ..self.layout.to_overrides()
        }
    }
}

/// Flags that override the configuration file (`run`, `check`).
#[derive(Debug, clap::Args)]
pub(crate) struct OverrideArgs {
    /// Sample interval, as a Go duration (`250ms`); overrides `sampleInterval`.
    #[arg(long, value_name = "DURATION", value_parser = parse_interval)]
    sample_interval: Option<std::time::Duration>,
    /// Decide and record, but never kill; overrides `dryRun`.
    #[arg(long)]
    dry_run: bool,
    /// State directory (absolute); overrides `stateDir`.
    #[arg(long, value_name = "DIR", value_parser = parse_absolute_dir)]
    state_dir: Option<PathBuf>,
    /// How long to wait for a killed cgroup to empty; overrides `killTimeout`.
    #[arg(long, value_name = "DURATION", value_parser = parse_kill_timeout)]
    kill_timeout: Option<std::time::Duration>,
    #[command(flatten)]
    layout: LayoutArg,
    /// Serve the metrics endpoint at this address (`IP:PORT`); overrides `metrics`.
    #[arg(long, value_name = "IP:PORT", value_parser = oomwarden_config::parse_listen)]
    metrics_listen: Option<std::net::SocketAddr>,
}

fn parse_absolute_dir(text: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(text);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(format!("must be an absolute path, found {text:?}"))
    }
}

fn parse_kill_timeout(text: &str) -> Result<std::time::Duration, String> {
    oomwarden_config::parse_kill_timeout(text)
}

fn parse_interval(text: &str) -> Result<std::time::Duration, String> {
    match oomwarden_config::parse_sample_interval(text)? {
        d if d.is_zero() => Err("OOM sample interval must be longer than 0".to_owned()),
        d => Ok(d),
    }
}

impl OverrideArgs {
    pub(crate) fn to_overrides(&self) -> Overrides {
        Overrides {
            sample_interval: self.sample_interval,
            dry_run: self.dry_run.then_some(true),
            state_dir: self.state_dir.clone(),
            kill_timeout: self.kill_timeout,
            metrics_listen: self.metrics_listen,
            ..self.layout.to_overrides()
        }
    }
}

/// A size on the command line: bytes (`1073741824`) or a Kubernetes quantity (`1Gi`, `512Mi`,
/// `1G`), as the API server reads it; negative or fractional bytes are refused.
pub(crate) fn parse_bytes(text: &str) -> Result<u64, String> {
    let q = oomwarden_kube::Quantity::parse(text)
        .map_err(|e| format!("expected bytes or a quantity such as 512Mi or 1G: {e}"))?;
    if q.is_negative() {
        return Err(format!("{text:?}: a size cannot be negative"));
    }
    // A fraction of a byte is rounded up, as the API server does.
    q.value_exact()
        .and_then(|v| u64::try_from(v).ok())
        .ok_or_else(|| format!("{text:?}: more bytes than 2^64"))
}

/// The node a command looks at: its configuration and its cgroup tree.
#[derive(Debug, clap::Args)]
pub(crate) struct NodeArgs {
    /// Configuration file; without it, the embedded defaults (`run` reloads it on SIGHUP).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Root of the cgroup v2 hierarchy.
    #[arg(long, value_name = "DIR", default_value = oomwarden_cgroupfs::DEFAULT_CGROUP_ROOT)]
    pub(crate) cgroup_root: PathBuf,
}

/// Where the cgroup tree was read, said once above a listing: paths are shown as the node
/// names them (under `/sys/fs/cgroup`), which is not where they were read when `--cgroup-root`
/// is another directory (the DaemonSet reads the host's tree at `/host/sys/fs/cgroup`).
pub(crate) fn tree_note(root: &std::path::Path) -> String {
    let node = oomwarden_cgroupfs::DEFAULT_CGROUP_ROOT;
    if root == std::path::Path::new(node) {
        format!("cgroups: {node}")
    } else {
        format!(
            "cgroups: read at {}; shown by their path on the node, under {node}",
            root.display()
        )
    }
}

/// The settings (configuration file and overrides) and the layout of the node under
/// `--cgroup-root`, or why not (a [`Fail`](crate::exit::Fail) with its exit code). Every command that reads the node
/// (`run`, `record`, `top`, `layout`) says first, the same way and with exit 3, when the host
/// cannot be used at all (no cgroup v2, no memory controller; no PSI is a warning); then an invalid
/// configuration or a tree that matches no layout (exit 1); and a layout given by hand whose
/// cgroups do not exist there is an error naming them, not a table of zeros.
pub(crate) fn node_and_layout(
    node: &NodeArgs,
    proc_root: &std::path::Path,
    overrides: &Overrides,
    err: &mut impl std::io::Write,
) -> anyhow::Result<NodeSetup> {
    use crate::exit::Fail;
    let cgroups = oomwarden_cgroupfs::CgroupFs::new(&node.cgroup_root);
    let proc = oomwarden_procfs::ProcFs::new(proc_root);
    if let Err(e) = oomwarden_node::check_host(&cgroups, &proc) {
        return Err(Fail::unsupported(host_diagnosis(&e)).into());
    }
    // What these commands show needs no PSI: its figures read as 0, said once.
    if let Err(e) = oomwarden_node::check_psi(&cgroups, &proc) {
        writeln!(err, "warning: {e}; the PSI figures read as 0")?;
    }
    let settings = match oomwarden_node::load_settings(node.config.as_deref(), overrides) {
        Ok(s) => s,
        Err(e) => return Err(Fail::failure(e.to_string()).into()),
    };
    let (layout, why) = match oomwarden_node::resolve_layout(&settings, &cgroups) {
        Ok(v) => v,
        Err(e) => return Err(Fail::failure(e.to_string()).into()),
    };
    if !matches!(
        settings.warden.layout,
        oomwarden_config::LayoutSetting::Auto
    ) {
        let (missing, total) = oomwarden_collect::missing_dirs(&layout, &cgroups);
        let root = node.cgroup_root.display();
        if !missing.is_empty() && missing.len() == total {
            return Err(Fail::failure(format!(
                "oomwarden: the {} layout does not fit the cgroup tree at {root}: none of its cgroups exists ({}); check --cgroup-root and the layout (`oomwarden layout` without --layout detects it)",
                layout.name,
                missing.join(", ")
            ))
            .into());
        }
        if !missing.is_empty() {
            writeln!(
                err,
                "warning: the {} layout's cgroups {} do not exist under {root}; their classes read as empty",
                layout.name,
                missing.join(", ")
            )?;
        }
    }
    Ok(NodeSetup {
        settings,
        cgroups,
        layout,
        why,
    })
}

/// The one line every command that reads the node prints when this host cannot be used.
pub(crate) fn host_diagnosis(e: &oomwarden_node::SetupError) -> String {
    format!("oomwarden: this host cannot run the OOM handler: {e}")
}

/// A node's settings, cgroup tree and layout (with the reason it was chosen).
pub(crate) struct NodeSetup {
    pub(crate) settings: oomwarden_config::Settings,
    pub(crate) cgroups: oomwarden_cgroupfs::CgroupFs,
    pub(crate) layout: oomwarden_model::Layout,
    pub(crate) why: String,
}
