//! One output grammar for every command that prints data, kubectl's: `-o table` (the default,
//! for people), `-o wide` (a table with more columns where a command has them), `-o json`,
//! `-o yaml`; `--json` is kept as `-o json` where earlier versions had it.

use std::io::Write;

use serde::Serialize;

/// `-o` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Output {
    /// For people.
    Table,
    /// A table with more columns (where a command has them; else as `table`).
    Wide,
    /// JSON.
    Json,
    /// YAML.
    Yaml,
}

/// The output flags of a command that prints data.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct OutputArgs {
    /// Output format: table, wide (more columns), json or yaml.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    output: Output,
    /// Same as `-o json` (kept from earlier versions).
    #[arg(long, conflicts_with = "output")]
    json: bool,
}

impl OutputArgs {
    /// The format asked for.
    pub(crate) fn format(&self) -> Output {
        if self.json { Output::Json } else { self.output }
    }

    /// Whether a table was asked for (`table` or `wide`).
    pub(crate) fn is_table(&self) -> bool {
        matches!(self.format(), Output::Table | Output::Wide)
    }

    /// Whether the wide table was asked for.
    pub(crate) fn is_wide(&self) -> bool {
        self.format() == Output::Wide
    }

    /// Prints `value` as JSON (pretty) or YAML; false (nothing printed) for a table.
    pub(crate) fn structured<T: Serialize>(
        &self,
        value: &T,
        out: &mut impl Write,
    ) -> anyhow::Result<bool> {
        match self.format() {
            Output::Json => {
                writeln!(out, "{}", serde_json::to_string_pretty(value)?)?;
                Ok(true)
            }
            Output::Yaml => {
                write!(out, "{}", yaml(value)?)?;
                Ok(true)
            }
            Output::Table | Output::Wide => Ok(false),
        }
    }
}

/// `value` as a YAML document, through its JSON form (so both say the same, field for field).
pub(crate) fn yaml<T: Serialize>(value: &T) -> anyhow::Result<String> {
    let json = serde_json::to_value(value)?;
    Ok(serde_saphyr::to_string(&json)?)
}
