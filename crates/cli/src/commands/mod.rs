//! One module per subcommand.

pub(crate) mod check;
pub(crate) mod eval;

use std::io::Read;
use std::path::Path;

use anyhow::Context;

/// Reads a file named on the command line; `-` is standard input.
pub(crate) fn read_input(path: &Path) -> anyhow::Result<String> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read standard input")?;
        Ok(text)
    } else {
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
    }
}
