//! What reaches a terminal: no control character a name could carry. Names come from places
//! anyone on the node may write (cgroup directories, a pod's namespace as the runtime says
//! it, command lines, the history file): an ESC or OSC sequence in one could rewrite the
//! screen or the window title of whoever runs `oomwarden actions` (found by the fault suite).
//!
//! Two layers: [`Escaping`] wraps standard output and error and writes every control
//! character but newline and tab as `\xHH` (C1 controls as `\u{HH}`); [`clean`] escapes a
//! single value fully, newlines and tabs included, where a value is printed inside a table row
//! or a line of text.

use std::borrow::Cow;
use std::io::{self, Write};

use oomwarden_model::ActionRecord;

/// `s` with every control character written as an escape (`\n`, `\t`, `\r`, else `\xHH` or
/// `\u{HH}`); borrowed when there is none.
pub(crate) fn clean(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() && u32::from(c) < 0x80 => {
                out.push_str(&format!("\\x{:02x}", u32::from(c)));
            }
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `r` with every name in it [`clean`]ed: the cgroups, the pod's and containers' names and
/// IDs, command lines, the error and the kernel's names (records are read from a file anyone
/// with the state directory may have written). The expressions keep their newlines (they are
/// printed as written; the writer still escapes any other control character).
pub(crate) fn record_names(r: &ActionRecord) -> ActionRecord {
    let one = |s: &mut String| {
        if let Cow::Owned(c) = clean(s) {
            *s = c;
        }
    };
    let mut r = r.clone();
    for s in [
        &mut r.victim,
        &mut r.pod_uid,
        &mut r.sandbox,
        &mut r.namespace,
        &mut r.pod_name,
        &mut r.error,
        &mut r.victim_comm,
        &mut r.oom_memcg,
        &mut r.task_memcg,
        &mut r.container_id,
    ]
    .into_iter()
    .flatten()
    {
        one(s);
    }
    for s in r
        .containers
        .iter_mut()
        .chain(r.container_names.iter_mut())
        .chain(r.killed_cgroups.iter_mut())
        .chain(r.processes.iter_mut())
    {
        one(s);
    }
    for runner in &mut r.runners_up {
        one(&mut runner.cgroup);
        for s in [&mut runner.namespace, &mut runner.pod_name]
            .into_iter()
            .flatten()
        {
            one(s);
        }
    }
    r
}

/// A writer that passes text through with its control characters escaped, newline and tab
/// kept (they shape the output). Works on bytes: C0 controls and DEL never occur inside a
/// UTF-8 sequence; a C1 control is `0xC2 0x80..=0x9F`, its lead byte held across writes.
#[derive(Debug)]
pub(crate) struct Escaping<W: Write> {
    inner: W,
    /// A `0xC2` seen last, not yet written.
    lead: bool,
}

impl<W: Write> Escaping<W> {
    pub(crate) fn new(inner: W) -> Self {
        Escaping { inner, lead: false }
    }
}

impl<W: Write> Write for Escaping<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut out = Vec::with_capacity(buf.len());
        for &b in buf {
            if std::mem::take(&mut self.lead) {
                if (0x80..=0x9f).contains(&b) {
                    out.extend_from_slice(format!("\\u{{{b:x}}}").as_bytes());
                    continue;
                }
                out.push(0xc2);
            }
            match b {
                b'\n' | b'\t' => out.push(b),
                0x00..=0x1f | 0x7f => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
                0xc2 => self.lead = true,
                _ => out.push(b),
            }
        }
        self.inner.write_all(&out)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> Drop for Escaping<W> {
    fn drop(&mut self) {
        if self.lead {
            let _ = self.inner.write_all(&[0xc2]);
        }
        let _ = self.inner.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn through(pieces: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut w = Escaping::new(&mut out);
            for p in pieces {
                w.write_all(p).unwrap_or_else(|e| panic!("{e}"));
            }
        }
        out
    }

    #[test]
    fn escape_sequences_are_shown_not_sent() {
        let osc = "pod \x1b]0;pwned\x07 and \x1b[2J\r\u{9b}31m é\n\tok\n";
        let out = String::from_utf8(through(&[osc.as_bytes()])).unwrap_or_default();
        assert_eq!(
            out,
            "pod \\x1b]0;pwned\\x07 and \\x1b[2J\\x0d\\u{9b}31m é\n\tok\n"
        );
        // A C1 control split across two writes.
        let bytes = "a\u{9b}b".as_bytes();
        let (head, tail) = bytes.split_at(2);
        assert_eq!(through(&[head, tail]), b"a\\u{9b}b");
        // A lead byte at the very end is written as it came.
        assert_eq!(through(&[b"x\xc2"]), b"x\xc2");
    }

    #[test]
    fn a_records_names_are_cleaned() {
        let mut r = oomwarden_model::ActionRecord::empty(
            oomwarden_model::RecordKind::Oomwarden,
            oomwarden_model::Outcome::Killed,
            "2026-12-03T00:00:00Z".to_owned(),
            1,
        );
        r.namespace = Some("shop\n\x1b]0;x\x07".to_owned());
        r.processes = vec!["a\rb".to_owned()];
        let c = record_names(&r);
        assert_eq!(c.namespace.as_deref(), Some("shop\\n\\x1b]0;x\\x07"));
        assert_eq!(c.processes, ["a\\rb"]);
        assert_eq!(c.time, r.time);
    }

    #[test]
    fn a_value_is_escaped_whole() {
        assert!(matches!(clean("web-1"), Cow::Borrowed("web-1")));
        assert_eq!(clean("a\nb\tc\x1bd\u{85}"), "a\\nb\\tc\\x1bd\\u{85}");
    }

    proptest! {
        #[test]
        fn nothing_a_terminal_obeys_gets_through(s in "\\PC*|[\\x00-\\x20\\x7f\\u{80}-\\u{9f}a-z]{0,40}") {
            let out = through(&[s.as_bytes()]);
            let text = String::from_utf8(out).unwrap_or_default();
            prop_assert!(!text.chars().any(|c| c.is_control() && c != '\n' && c != '\t'));
            prop_assert!(!clean(&s).chars().any(char::is_control));
        }
    }
}
