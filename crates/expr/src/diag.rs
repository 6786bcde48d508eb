//! Error text in cel-go's format, so Talos users see the messages they know:
//!
//! ```text
//! ERROR: <input>:1:20: found no matching overload for '_>_' applied to '(duration, int)'
//!  | time_since_trigger > 5
//!  | ...................^
//! ```
//!
//! cel-go places a call's error at its operator or opening parenthesis, not at the start of
//! the whole expression; [`node_offset`] reproduces that from `cel-core`'s spans.

use std::fmt;

use cel_core::{CelType, Expr, SpannedExpr};

/// One compile-time problem with its byte offset in the source (`None`: no location).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Byte offset into the source, if the problem has a location.
    pub offset: Option<usize>,
    /// The message, without location.
    pub message: String,
}

impl Diagnostic {
    pub(crate) fn at(offset: usize, message: impl Into<String>) -> Self {
        Diagnostic {
            offset: Some(offset),
            message: message.into(),
        }
    }

    pub(crate) fn nowhere(message: impl Into<String>) -> Self {
        Diagnostic {
            offset: None,
            message: message.into(),
        }
    }

    /// Renders this diagnostic as cel-go does, with the source line and a caret.
    pub fn render(&self, source: &str) -> String {
        let Some(offset) = self.offset else {
            return format!("ERROR: <input>:-1:0: {}", self.message);
        };
        // An empty text: cel-go's `<EOF>` is at column 0, with no line to quote.
        if source.is_empty() {
            return format!("ERROR: <input>:1:0: {}", self.message);
        }
        let offset = floor_char_boundary(source, offset.min(source.len()));
        let before = source.get(..offset).unwrap_or("");
        let line_no = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |p| p + 1);
        let column = before.get(line_start..).unwrap_or("").chars().count() + 1;
        let line_text = source
            .get(line_start..)
            .unwrap_or("")
            .split('\n')
            .next()
            .unwrap_or("");
        let head = format!("ERROR: <input>:{line_no}:{column}: {}", self.message);
        // cel-go leaves out the snippet of a line over 16 KiB.
        if line_text.len() > MAX_SNIPPET_BYTES {
            return head;
        }
        // cel-go shows tabs as spaces, and marks a character of more than one UTF-8 byte with
        // full-width dots and caret (`．`, `＾`).
        let mark = |c: char, narrow: char, wide: char| if c.len_utf8() > 1 { wide } else { narrow };
        let mut chars = line_text.chars();
        let dots: String = chars
            .by_ref()
            .take(column - 1)
            .map(|c| mark(c, '.', '．'))
            .collect();
        let caret = chars.next().map_or('^', |c| mark(c, '^', '＾'));
        format!(
            "{head}\n | {}\n | {dots}{caret}",
            line_text.replace('\t', " ")
        )
    }
}

/// The longest line cel-go quotes in an error (measured: 16,384 bytes quoted, 16,385 not).
const MAX_SNIPPET_BYTES: usize = 16_384;

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A list of diagnostics rendered as cel-go renders its issues: one block per error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rendered<'a>(pub(crate) &'a [Diagnostic], pub(crate) &'a str);

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            f.write_str(&d.render(self.1))?;
        }
        Ok(())
    }
}

/// A type as cel-go prints it in messages (`map(int, double)`, `optional_type(uint)`,
/// `google.protobuf.Duration`).
pub(crate) fn type_name(t: &CelType) -> String {
    match t {
        CelType::Bool => "bool".into(),
        CelType::Int => "int".into(),
        CelType::UInt => "uint".into(),
        CelType::Double => "double".into(),
        CelType::String => "string".into(),
        CelType::Bytes => "bytes".into(),
        CelType::Null => "null_type".into(),
        CelType::Dyn | CelType::TypeVar(_) | CelType::TypeParam(_) => "dyn".into(),
        CelType::Timestamp => "google.protobuf.Timestamp".into(),
        CelType::Duration => "google.protobuf.Duration".into(),
        CelType::List(e) => format!("list({})", type_name(e)),
        CelType::Map(k, v) => format!("map({}, {})", type_name(k), type_name(v)),
        CelType::Type(inner) => format!("type({})", type_name(inner)),
        CelType::Optional(inner) => format!("optional_type({})", type_name(inner)),
        CelType::Error => "*error*".into(),
        other => other.display_name(),
    }
}

/// The byte offset cel-go reports for a node: the operator of a binary or ternary
/// expression, the `(` of a call, the `[` of an index, the `.` of a selection, otherwise the
/// start of the node.
/// The nodes a macro expansion generated (they carry the macro call's span, as their parent
/// does), each with the offset cel-go reports their errors at: the macro's `(`
/// (`list.exists_one(`, `opt.optMap(`), where cel-go's expansion places them.
pub(crate) fn generated_positions(
    source: &str,
    root: &SpannedExpr,
) -> std::collections::HashMap<i64, usize> {
    let mut out = std::collections::HashMap::new();
    // (node, the parent's span, the open parenthesis of the macro it belongs to)
    let mut stack = vec![(root, None, None)];
    while let Some((node, parent_span, open)) = stack.pop() {
        let generated = crate::tree::generated_by_macro(node, parent_span);
        let open = if generated {
            if let Some(at) = open {
                out.insert(node.id, at);
            }
            open
        } else if crate::tree::children(node)
            .iter()
            .any(|c| c.span == node.span)
        {
            // A macro's root, reported at its `(` too: its receiver is the first of the
            // user's subtrees under the generated nodes (the comprehension's range,
            // `optMap`'s `hasValue` target).
            let at = first_written(node).and_then(|r| macro_open(source, r.span.end));
            if let Some(at) = at {
                out.insert(node.id, at);
            }
            at
        } else {
            None
        };
        for child in crate::tree::children(node) {
            stack.push((child, Some(&node.span), open));
        }
    }
    out
}

/// Under `root`, in the order written, the first node that does not carry `root`'s span.
fn first_written(root: &SpannedExpr) -> Option<&SpannedExpr> {
    let mut stack: Vec<&SpannedExpr> = crate::tree::children(root).into_iter().rev().collect();
    while let Some(node) = stack.pop() {
        if node.span != root.span {
            return Some(node);
        }
        stack.extend(crate::tree::children(node).into_iter().rev());
    }
    None
}

/// After a receiver ending at `from`: `.name(`, the offset of the `(`.
fn macro_open(source: &str, from: usize) -> Option<usize> {
    let rest = source.get(from..)?;
    let rest_trimmed = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ')');
    let after_dot = rest_trimmed.strip_prefix('.')?.trim_start();
    let name_len = after_dot
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(after_dot.len());
    let after_name = after_dot.get(name_len..)?;
    let paren = after_name.trim_start();
    paren.starts_with('(').then(|| source.len() - paren.len())
}

pub(crate) fn node_offset(source: &str, node: &SpannedExpr) -> usize {
    let find_after = |from: usize, token: &str| -> Option<usize> {
        let rest = source.get(from..)?;
        let skip = rest.len()
            - rest
                .trim_start_matches(|c: char| c.is_whitespace() || c == ')' || c == ']')
                .len();
        let at = from + skip;
        source.get(at..)?.starts_with(token).then_some(at)
    };
    let found = match &node.node {
        Expr::Binary { left, .. } => {
            let from = left.span.end;
            source.get(from..).map(|rest| {
                let operand_end = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ')');
                from + rest.len() - operand_end.len()
            })
        }
        Expr::Ternary { cond, .. } => find_after(cond.span.end, "?"),
        Expr::Index { expr, .. } => find_after(expr.span.end, "["),
        // `receiver.name(`: the `(` after the name, whatever span the callee node has (a
        // macro name used at another arity is rebuilt as a plain call, see parse.rs).
        Expr::Call { expr, .. } => match &expr.node {
            Expr::Member {
                expr: receiver,
                field,
                ..
            } => find_after(receiver.span.end, ".")
                .and_then(|dot| {
                    let rest = source.get(dot + 1..)?;
                    let name_at = dot + 1 + rest.len() - rest.trim_start().len();
                    source
                        .get(name_at..)?
                        .starts_with(field.as_str())
                        .then_some(name_at + field.len())
                })
                .and_then(|after_name| find_after(after_name, "(")),
            _ => find_after(expr.span.end, "("),
        },
        // `has(x.f)`: cel-go places the presence test at the macro's `(`.
        Expr::MemberTestOnly { expr, .. } => source
            .get(node.span.start..)
            .filter(|s| s.starts_with("has"))
            .and_then(|_| find_after(node.span.start + 3, "("))
            .or_else(|| find_after(expr.span.end, ".")),
        Expr::Member { expr, .. } => find_after(expr.span.end, "."),
        _ => None,
    };
    found.unwrap_or(node.span.start)
}

#[cfg(test)]
mod rendering_tests {
    use super::*;

    /// Measured with cel-go: a line of 16,384 bytes is quoted, 16,385 are not.
    #[test]
    fn a_line_over_16_kib_is_not_quoted() {
        let line = |len: usize| format!("x{}+ 1", " ".repeat(len - 4));
        let d = Diagnostic::at(0, "undeclared reference to 'x' (in container '')");
        assert_eq!(d.render(&line(16_384)).lines().count(), 3);
        assert_eq!(
            d.render(&line(16_385)),
            "ERROR: <input>:1:1: undeclared reference to 'x' (in container '')"
        );
    }

    /// Blanks and comments alone: cel-go's error is at the end of the input, its `<EOF>`.
    #[test]
    fn a_blank_input_is_reported_at_its_end() {
        for (source, at) in [("", "1:0"), (" ", "1:2"), ("// c", "1:5"), ("\n", "2:1")] {
            let e = crate::parse::parse(source).unwrap_err();
            let text = e[0].render(source);
            assert!(
                text.starts_with(&format!("ERROR: <input>:{at}: ")),
                "{source:?}: {text}"
            );
        }
    }
}
