//! `oomwarden check [FILE]`: validate a configuration and print the effective settings.

use std::io::Write;
use std::path::PathBuf;

use oomwarden_config::Settings;

use crate::commands::{OverrideArgs, read_input};
use crate::exit::Exit;

/// Arguments of `oomwarden check`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Configuration file (`-` for standard input). Without it, the embedded defaults are checked.
    file: Option<PathBuf>,
    #[command(flatten)]
    overrides: OverrideArgs,
}

/// Loads the file (or the defaults), applies overrides, prints the result or every error.
pub(crate) fn run(args: &Args, out: &mut impl Write, err: &mut impl Write) -> anyhow::Result<Exit> {
    let (text, name) = match &args.file {
        Some(path) => (read_input(path)?, path.display().to_string()),
        None => (String::new(), "<defaults>".to_owned()),
    };
    match Settings::from_yaml(&text, &name) {
        Ok(mut settings) => {
            settings.apply(&args.overrides.to_overrides());
            out.write_all(settings.to_yaml().as_bytes())?;
            Ok(Exit::Ok)
        }
        Err(errors) => {
            for e in &errors.0 {
                writeln!(err, "{e}")?;
            }
            writeln!(err, "{}: {} error(s)", name, errors.0.len())?;
            Ok(Exit::Failure)
        }
    }
}
