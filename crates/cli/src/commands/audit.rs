//! `oomwarden audit FILE…`: from `kubectl get … -o json` output, the pods and workload
//! templates that stay OOM-handler candidates (a container without a memory limit), and the
//! containers a proposed default memory limit would get rejected at admission.

use crate::terminal::clean;
use std::io::Write;
use std::path::PathBuf;

use oomwarden_kube::Quantity;
use oomwarden_kube::audit::Input;

use crate::commands::read_input;
use crate::exit::{Exit, Fail};

/// Arguments of `oomwarden audit`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// `kubectl get pods,deployments,daemonsets,statefulsets,jobs,cronjobs[,namespaces] -A -o
    /// json` output (YAML or JSON, Lists or documents); `-` for standard input.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// A proposed namespace default memory limit (LimitRange `default.memory`), e.g. 32Gi:
    /// list every container whose request exceeds it and that has no limit of its own.
    #[arg(long, value_name = "QUANTITY", value_parser = parse_limit)]
    default_limit: Option<i64>,
    /// Only namespaces whose Namespace object (in the input) carries this label, e.g.
    /// cozystack.io/system=true.
    #[arg(long, value_name = "KEY=VALUE")]
    namespace_selector: Option<String>,
    #[command(flatten)]
    output: crate::output::OutputArgs,
}

fn parse_limit(text: &str) -> Result<i64, String> {
    match Quantity::parse(text).map_err(|e| e.to_string())?.value() {
        Some(v) if v > 0 => Ok(v),
        _ => Err(format!(
            "{text:?}: the default limit must be more than 0 bytes"
        )),
    }
}

pub(crate) fn run(args: &Args, out: &mut impl Write) -> anyhow::Result<Exit> {
    let mut input = Input::new();
    // Every file's problem is said, then the command fails.
    let mut problems = Vec::new();
    for file in &args.files {
        match read_input(file) {
            Ok(text) => {
                if let Err(e) = input.add(&text) {
                    problems.push(format!("{}: {e}", file.display()));
                }
            }
            Err(e) => problems.push(format!("oomwarden: {e:#}")),
        }
    }
    if !problems.is_empty() {
        return Err(Fail::failure(problems.join("\n")).into());
    }
    let audit = match input.audit(args.namespace_selector.as_deref(), args.default_limit) {
        Ok(a) => a,
        Err(e) => {
            return Err(Fail::failure(format!("oomwarden: {e}")).into());
        }
    };
    if !args.output.is_table() {
        let mut doc = serde_json::to_value(&audit)?;
        if let Some(map) = doc.as_object_mut() {
            map.insert("defaultLimitBytes".into(), args.default_limit.into());
            if args.default_limit.is_none() {
                map.remove("blockers");
            }
        }
        args.output.structured(&doc, out)?;
        return Ok(Exit::Ok);
    }
    writeln!(
        out,
        "{} pods and workload templates read ({} finished ones skipped)",
        audit.objects, audit.finished_skipped
    )?;
    writeln!(
        out,
        "\nOOM-handler candidates (some container has no memory limit, so the pod cgroup has no memory.max): {}",
        audit.candidates.len()
    )?;
    if !audit.candidates.is_empty() {
        writeln!(
            out,
            "{:<24} {:<48} CONTAINERS WITHOUT A MEMORY LIMIT",
            "NAMESPACE", "OBJECT"
        )?;
        // Names from the cluster's objects: no control character is printed.

        for c in &audit.candidates {
            writeln!(
                out,
                "{:<24} {:<48} {}",
                clean(&c.namespace),
                clean(&c.object),
                clean(&c.containers_without_limit.join(", "))
            )?;
        }
    }
    if let Some(limit) = args.default_limit {
        writeln!(
            out,
            "\nRejected at admission under a default limit of {limit} bytes (request above it, no limit of its own): {}",
            audit.blockers.len()
        )?;
        if !audit.blockers.is_empty() {
            writeln!(
                out,
                "{:<24} {:<48} {:<24} {:>14} REQUEST",
                "NAMESPACE", "OBJECT", "CONTAINER", "BYTES"
            )?;
            for b in &audit.blockers {
                writeln!(
                    out,
                    "{:<24} {:<48} {:<24} {:>14} {}",
                    clean(&b.namespace),
                    clean(&b.object),
                    clean(&b.container),
                    b.request_bytes,
                    clean(&b.request)
                )?;
            }
        }
    }
    Ok(Exit::Ok)
}
