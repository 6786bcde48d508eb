//! `oomwarden check [FILE] [--talos]`: validate a configuration and print the effective
//! settings.

use std::io::Write;
use std::path::PathBuf;

use oomwarden_config::Settings;

use crate::commands::{OverrideArgs, read_input};
use crate::exit::{Exit, Fail};

/// Arguments of `oomwarden check`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Configuration file (`-` for standard input). Without it, the embedded defaults are checked.
    file: Option<PathBuf>,
    /// Validate as Talos 1.14 would: only the OOMConfig document (an OOMWardenConfig is an
    /// error) and Talos's expression environments exactly (no oomwarden extension variables).
    /// Prints the effective OOMConfig document alone.
    #[arg(long)]
    talos: bool,
    /// With --talos: also read the cgroup tree at DIR (a node's /sys/fs/cgroup) and say on
    /// standard error where Talos's own controller reads it otherwise than oomwarden does
    /// (Kubernetes 1.37's node system partition, `system/sandbox`), so a user knows what
    /// running oomwarden in its place changes.
    #[arg(long, value_name = "DIR", requires = "talos")]
    cgroup_root: Option<PathBuf>,
    /// Output format of the effective settings: yaml (the documents, as a file would hold
    /// them; `table` and `wide` are the same) or json (an array of the documents).
    #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
    output: Format,
    #[command(flatten)]
    overrides: OverrideArgs,
}

/// `-o` of `check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// The YAML documents.
    #[value(aliases = ["table", "wide"])]
    Yaml,
    /// The documents as a JSON array.
    Json,
}

/// Loads the file (or the defaults), applies overrides, prints the result or every error.
pub(crate) fn run(args: &Args, out: &mut impl Write, err: &mut impl Write) -> anyhow::Result<Exit> {
    let (text, name) = match &args.file {
        Some(path) => (read_input(path)?, path.display().to_string()),
        None => (String::new(), "<defaults>".to_owned()),
    };
    let loaded = if args.talos {
        Settings::from_yaml_talos(&text, &name)
    } else {
        Settings::from_yaml(&text, &name)
    };
    match loaded {
        Ok(mut settings) => {
            settings.apply(&args.overrides.to_overrides());
            let rendered = if args.talos {
                settings.to_talos_yaml()
            } else {
                settings.to_yaml()
            };
            if let Some(root) = &args.cgroup_root {
                let cgroups = oomwarden_cgroupfs::CgroupFs::new(root);
                if !cgroups.is_dir("") {
                    return Err(Fail::failure(format!(
                        "oomwarden: --cgroup-root {}: not a directory",
                        root.display()
                    ))
                    .into());
                }
                for m in oomwarden_collect::talos_misreads(&cgroups) {
                    writeln!(err, "warning: Talos reads this tree otherwise: {m}")?;
                }
            }
            if args.talos {
                // The one place the same document chooses otherwise under oomwarden.
                writeln!(
                    err,
                    "note: run by oomwarden, this document's ranking never chooses a node-critical pod (protect.nodeCritical, on by default: a static or mirror pod, or a BestEffort or Burstable pod whose processes the kubelet runs at oom_score_adj -997, such as a kubeadm control plane's etcd and kube-apiserver); Talos's own controller would score them. For Talos's exact selection, add an OOMWardenConfig document with protect: {{nodeCritical: false}}"
                )?;
            }
            match args.output {
                Format::Yaml => out.write_all(rendered.as_bytes())?,
                Format::Json => {
                    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&rendered)?;
                    writeln!(out, "{}", serde_json::to_string_pretty(&docs)?)?;
                }
            }
            Ok(Exit::Ok)
        }
        Err(errors) => {
            let mut lines: Vec<String> = errors.0.iter().map(ToString::to_string).collect();
            lines.push(format!("{}: {} error(s)", name, errors.0.len()));
            Err(Fail::failure(lines.join("\n")).into())
        }
    }
}
