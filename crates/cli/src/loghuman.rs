//! Field formatting for the human log format: values written as they are, except control
//! characters, which are escaped (`\n`, `\u{1b}`). A cgroup or process name is chosen by
//! whoever creates it; with a newline in it, it could otherwise forge whole log lines (a fake
//! `victim processes:` line), and with escape codes, rewrite a terminal.

use std::fmt;

use tracing::field::Field;
use tracing_subscriber::field::MakeExt;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::Writer;

/// Control characters escaped; everything else as written.
pub(crate) fn escape_controls(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The human format's fields: `message` first as itself, then `name=value`, separated by
/// spaces, each value with its control characters escaped.
pub(crate) fn fields() -> impl for<'writer> FormatFields<'writer> + 'static {
    tracing_subscriber::fmt::format::debug_fn(
        |writer: &mut Writer<'_>, field: &Field, value: &dyn fmt::Debug| {
            let text = escape_controls(&format!("{value:?}"));
            if field.name() == "message" {
                write!(writer, "{text}")
            } else {
                write!(writer, "{}={text}", field.name())
            }
        },
    )
    .delimited(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use oomwarden_testkit::LogBuffer;

    // Issue 14: a cgroup named "pod\nINFO forged" printed a second, forged line.
    #[test]
    fn names_cannot_forge_lines_or_colours() {
        let buffer = LogBuffer::default();
        let out = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .fmt_fields(fields())
            .with_writer(move || out.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let path =
                "/sys/fs/cgroup/kubepods/pod\n2026-11-30T00:00:00Z  INFO victim processes:\x1b[31m";
            tracing::warn!(cgroup = %path, score = 1.5, "Sending SIGKILL to cgroup");
        });
        let text = buffer.text();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.contains("Sending SIGKILL to cgroup cgroup=/sys/fs/cgroup/kubepods/pod\\n2026"),
            "{text}"
        );
        assert!(text.contains("\\u{1b}[31m score=1.5"), "{text}");
        assert!(!text.contains('\x1b'), "{text}");
    }
}
