//! Parsing as cel-go's parser does, on top of `cel-core`'s: Talos's macros only, and cel-go's
//! grammar for runs of unary operators.
//!
//! cel-go's grammar (`unary: member | '!'+ member | '-'+ member`) drops an even run of `!` or
//! `-` (`!!x` is `x`, `--1` is `1`), cannot put `!` right after `-` (`-!x` is a syntax error),
//! and reads the sign of `-1` as part of the literal, so `--9223372036854775808` is an
//! out-of-range literal. `cel-core` keeps every operator; [`normalize`] rewrites its tree into
//! cel-go's.

use cel_core::parser::macros::STANDARD_MACROS;
use cel_core::parser::{
    ArgCount, Macro, MacroContext, MacroExpander, MacroExpansion, MacroRegistry, MacroStyle,
    ParseOptions,
};
use cel_core::types::Span;
use cel_core::{BinaryOp, Expr, SpannedExpr, UnaryOp};

use crate::diag::Diagnostic;

/// cel-go's default macros plus the optional library's: `has`, `all`, `exists`,
/// `exists_one`, `map` (2 and 3 arguments), `filter`, `optMap`, `optFlatMap`. Not `cel.bind`,
/// `cel.block`, the two-variable comprehensions or `transform*`, which Talos does not enable.
fn talos_macros() -> MacroRegistry {
    let mut registry = MacroRegistry::new();
    for m in STANDARD_MACROS {
        let keep = matches!(
            (m.name, m.style, m.arg_count),
            ("has", MacroStyle::Global, ArgCount::Exact(1))
                | (
                    "all" | "exists" | "exists_one" | "filter" | "optMap" | "optFlatMap",
                    MacroStyle::Receiver,
                    ArgCount::Exact(2)
                )
                | ("map", MacroStyle::Receiver, ArgCount::Exact(2 | 3))
        );
        if keep {
            registry.register(m.clone());
        }
    }
    // cel-go expands a macro only at its own arity and style; any other use of the name is an
    // ordinary call (an undeclared function to the checker). cel-core would report a syntax
    // error instead, so every other arity of these names expands back to the plain call.
    for (i, name) in MACRO_NAMES.iter().enumerate() {
        for style in [MacroStyle::Global, MacroStyle::Receiver] {
            registry.register(Macro::new(
                name,
                style,
                ArgCount::VarArg(0),
                PLAIN_CALLS.get(i).copied().unwrap_or(plain_call::<0>),
            ));
        }
    }
    registry
}

const MACRO_NAMES: [&str; 8] = [
    "has",
    "all",
    "exists",
    "exists_one",
    "map",
    "filter",
    "optMap",
    "optFlatMap",
];

const PLAIN_CALLS: [MacroExpander; 8] = [
    plain_call::<0>,
    plain_call::<1>,
    plain_call::<2>,
    plain_call::<3>,
    plain_call::<4>,
    plain_call::<5>,
    plain_call::<6>,
    plain_call::<7>,
];

/// Rebuilds `name(args)` or `receiver.name(args)` unexpanded.
fn plain_call<const N: usize>(
    ctx: &mut MacroContext<'_>,
    span: Span,
    receiver: Option<SpannedExpr>,
    args: Vec<SpannedExpr>,
) -> MacroExpansion {
    let name = MACRO_NAMES.get(N).copied().unwrap_or_default().to_owned();
    let callee = match receiver {
        Some(receiver) => Expr::Member {
            expr: Box::new(receiver),
            field: name,
            optional: false,
        },
        None => Expr::Ident(name),
    };
    let callee = SpannedExpr {
        id: ctx.next_id(),
        node: callee,
        span: span.clone(),
    };
    MacroExpansion::Expanded(SpannedExpr {
        id: ctx.next_id(),
        node: Expr::Call {
            expr: Box::new(callee),
            args,
        },
        span,
    })
}

/// Where cel-go's grammar reads a `-` before the number at byte `at` as the literal's own sign
/// (`literal: '-'? NUM_INT`): the offset of that `-`. Not when the `-` is binary (`1 -2`) or
/// one of a run (`--2`, which is the unary rule), though `1 - -2` has a signed literal.
fn literal_sign(source: &str, at: usize) -> Option<usize> {
    let mut minuses = Vec::new();
    let mut before = source.get(..at)?;
    loop {
        let trimmed = before.trim_end();
        match trimmed.strip_suffix('-') {
            Some(rest) => {
                minuses.push(rest.len());
                before = rest;
            }
            None => {
                before = trimmed;
                break;
            }
        }
    }
    // The `-` is binary after an operand: a name, number, literal or closing bracket (not
    // after the keyword `in`, an operator).
    let last_word: String = before
        .chars()
        .rev()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    let binary = last_word != "ni"
        && before.chars().next_back().is_some_and(|c| {
            c.is_alphanumeric() || matches!(c, '_' | ')' | ']' | '}' | '\'' | '"' | '`')
        });
    let unary = minuses.len() - usize::from(binary && !minuses.is_empty());
    (unary == 1).then(|| minuses.first().copied()).flatten()
}

/// The hex digits of a literal at `at` worth exactly 2^63 (`0x8000000000000000`, leading zeros
/// allowed), which cel-go takes with a sign (`-0x8000000000000000` is the smallest int) and
/// `cel-core` refuses as out of range: its byte range.
fn hex_int_min_digits(source: &str, at: usize) -> Option<std::ops::Range<usize>> {
    let rest = source.get(at..)?;
    let digits = rest.strip_prefix("0x")?;
    let len = digits.bytes().take_while(u8::is_ascii_hexdigit).count();
    let hex = digits.get(..len)?;
    let next = digits.as_bytes().get(len);
    if next.is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        || u128::from_str_radix(hex, 16).ok()? != 1u128 << 63
    {
        return None;
    }
    Some(at + 2..at + 2 + len)
}

/// A bound on the tree's depth, for the recursive passes after parsing (they run on a 64 MiB
/// stack): far above what cel-go's per-rule limits let through.
const MAX_TREE_DEPTH: usize = 20_000;

/// Parses with Talos's macros; syntax errors as diagnostics.
pub(crate) fn parse(source: &str) -> Result<SpannedExpr, Vec<Diagnostic>> {
    // `-0x8000000000000000`: parsed with the digits of `0x7FFF…` (same length, so every offset
    // stays), then made the smallest int again.
    let mut text = std::borrow::Cow::Borrowed(source);
    let mut int_min = Vec::new();
    let parsed = loop {
        let parsed =
            cel_core::parser::parse_with_options(&text, ParseOptions::with_macros(talos_macros()));
        let patch = parsed.errors.iter().find_map(|e| {
            let digits = hex_int_min_digits(source, e.span.start)?;
            let sign = literal_sign(source, e.span.start)?;
            Some((e.span.start, sign, digits))
        });
        match patch {
            Some((at, sign, digits)) if !int_min.iter().any(|(a, _)| *a == at) => {
                let width = digits.len();
                let mut patched = text.into_owned();
                // 2^63 takes 16 hex digits; more are leading zeros.
                let max = format!("{}7FFFFFFFFFFFFFFF", "0".repeat(width.saturating_sub(16)));
                patched.replace_range(digits, &max);
                text = std::borrow::Cow::Owned(patched);
                int_min.push((at, sign));
            }
            _ => break parsed,
        }
    };
    if !parsed.errors.is_empty() {
        return Err(parsed
            .errors
            .iter()
            .map(|e| {
                let message = syntax_message(&e.message);
                // cel-go points at the sign of an out-of-range signed literal, and at the end
                // of an input of blanks and comments (its `<EOF>` token).
                let at = match literal_sign(source, e.span.start) {
                    Some(sign) if message == "invalid int literal" => sign,
                    _ if e.message.contains("empty input") => source.len(),
                    _ => e.span.start,
                };
                Diagnostic::at(at, message)
            })
            .collect());
    }
    let Some(mut expr) = parsed.ast else {
        return Err(vec![Diagnostic::at(0, "Syntax error: empty expression")]);
    };
    restore_int_min(&mut expr, &int_min);
    rebalance(&mut expr);
    // cel-go's visitor counts some kinds of node against its recursion limit (250: a chain of
    // 251 `+` terms is accepted, 252 are not; 249 indexes and a comparison, not 250). The
    // tree's own depth is bounded too, before the recursive passes below: the grammar's
    // limits keep what cel-go takes far below it.
    if crate::tree::cel_go_depth(&expr) > crate::MAX_RECURSION_DEPTH
        || crate::tree::ast_depth(&expr) > MAX_TREE_DEPTH
    {
        return Err(vec![Diagnostic::nowhere("max recursion depth exceeded")]);
    }
    normalize(&mut expr, source).map_err(|d| vec![d])?;
    check_literals(&expr, source).map_err(|d| vec![d])?;
    Ok(expr)
}

/// Makes each `-0x7FFF…` patched in by [`parse`] the smallest int, a signed literal spanning
/// its sign. `int_min` holds (offset of the digits, offset of the sign).
fn restore_int_min(root: &mut SpannedExpr, int_min: &[(usize, usize)]) {
    if int_min.is_empty() {
        return;
    }
    let mut stack = vec![root];
    while let Some(e) = stack.pop() {
        if let Expr::Unary {
            op: UnaryOp::Neg,
            expr,
        } = &e.node
            && matches!(expr.node, Expr::Int(i64::MAX))
            && let Some(&(_, sign)) = int_min.iter().find(|(at, _)| *at == expr.span.start)
        {
            let end = expr.span.end;
            e.node = Expr::Int(i64::MIN);
            e.span = sign..end;
            continue;
        }
        stack.extend(crate::tree::children_mut(e));
    }
}

/// Literals cel-core takes and cel-go v0.31.0 refuses (measured with the oracle): a hex
/// literal written `0X` (cel-go's lexer knows only `0x`: a syntax error at the `X`), a double
/// out of range (`1e400`: "invalid double literal"), and a `\u` or `\U` escape in a bytes
/// literal that is not raw ("unable to unescape string").
fn check_literals(e: &SpannedExpr, source: &str) -> Result<(), Diagnostic> {
    let text = source.get(e.span.clone()).unwrap_or("");
    match &e.node {
        // cel-go's grammar: `cond ? conditionalOr : expr`. A ternary in the middle needs
        // parentheses (cel-core takes it without): a syntax error at its `?`. A ternary a
        // macro generated (`optMap`) carries its call's span on its condition too.
        Expr::Ternary {
            cond: outer_cond,
            then_expr,
            ..
        } if matches!(&then_expr.node, Expr::Ternary { cond, .. } if cond.span != then_expr.span) =>
        {
            if let Expr::Ternary { cond, .. } = &then_expr.node {
                // Each `?` follows its condition (past closing parentheses, if any).
                let question =
                    |end: usize| end + source.get(end..).and_then(|r| r.find('?')).unwrap_or(0);
                let (outer, inner) = (question(outer_cond.span.end), question(cond.span.end));
                if paren_depth(source.get(outer..inner).unwrap_or("")) <= 0 {
                    return Err(Diagnostic::at(
                        inner,
                        "Syntax error: mismatched input '?' expecting ':'",
                    ));
                }
            }
        }
        Expr::Int(_) | Expr::UInt(_) => {
            let digits = text.trim_start_matches('-').trim_start();
            if digits.starts_with("0X") {
                let x = e.span.start + (text.len() - digits.len()) + 1;
                return Err(Diagnostic::at(
                    x,
                    "Syntax error: extraneous input: a hex literal is written 0x",
                ));
            }
        }
        Expr::Float(v) if !v.is_finite() => {
            return Err(Diagnostic::at(e.span.start, "invalid double literal"));
        }
        // `-1e400`: cel-go reads the sign as part of the literal and points at it.
        Expr::Unary {
            op: UnaryOp::Neg,
            expr,
        } if matches!(expr.node, Expr::Float(v) if !v.is_finite()) => {
            return Err(Diagnostic::at(e.span.start, "invalid double literal"));
        }
        Expr::Bytes(_) if text.get(..2).is_some_and(|p| p.eq_ignore_ascii_case("rb")) => {
            // cel-go's lexer knows `br'…'` only: `rb` is an identifier, then a string.
            return Err(Diagnostic::at(
                e.span.start + 2,
                "Syntax error: mismatched input: a raw bytes literal is written br'…'",
            ));
        }
        Expr::Bytes(_) => {
            let raw = text
                .get(..2)
                .is_some_and(|p| p.eq_ignore_ascii_case("rb") || p.eq_ignore_ascii_case("br"));
            if !raw && has_unicode_escape(text) {
                return Err(Diagnostic::at(e.span.start, "unable to unescape string"));
            }
        }
        _ => {}
    }
    for child in crate::tree::children(e) {
        check_literals(child, source)?;
    }
    Ok(())
}

/// How many parentheses `text` leaves open (those in string literals not counted).
fn paren_depth(text: &str) -> i64 {
    let mut depth = 0i64;
    let mut quote = None;
    let mut escaped = false;
    for c in text.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '\'' | '"' => quote = Some(c),
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => {}
            },
        }
    }
    depth
}

/// Whether a literal's text holds a `\u` or `\U` escape (a backslash not itself escaped).
fn has_unicode_escape(text: &str) -> bool {
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' && matches!(chars.next(), Some('u' | 'U')) {
            return true;
        }
    }
    false
}

/// cel-go's parser builds a chain `a && b && c …` (or `||`) as a balanced tree, so a chain of
/// any length stays shallow (its depth is the logarithm of its length); cel-core builds it
/// left-deep. Rebalanced here, with the same operands in the same order (the result of `&&`
/// and `||` does not depend on the grouping in CEL), so depth limits and evaluation see
/// cel-go's shape.
fn rebalance(root: &mut SpannedExpr) {
    let mut stack = vec![root];
    while let Some(e) = stack.pop() {
        if let Expr::Binary { op, .. } = &e.node
            && matches!(op, BinaryOp::And | BinaryOp::Or)
        {
            let op = *op;
            let mut operands = Vec::new();
            let mut ids = Vec::new();
            // Flatten the chain without recursion: it may be thousands of terms long.
            let mut pending = vec![std::mem::replace(
                e,
                SpannedExpr {
                    id: e.id,
                    node: Expr::Null,
                    span: e.span.clone(),
                },
            )];
            while let Some(node) = pending.pop() {
                match node.node {
                    Expr::Binary {
                        op: inner,
                        left,
                        right,
                    } if inner == op => {
                        ids.push(node.id);
                        pending.push(*right);
                        pending.push(*left);
                    }
                    other => operands.push(SpannedExpr {
                        id: node.id,
                        node: other,
                        span: node.span,
                    }),
                }
            }
            ids.sort_unstable();
            *e = balanced(op, operands, &mut ids.into_iter());
        }
        stack.extend(crate::tree::children_mut(e));
    }
}

/// cel-go's `balancer`: the middle operand starts the right half.
fn balanced(
    op: BinaryOp,
    mut operands: Vec<SpannedExpr>,
    ids: &mut impl Iterator<Item = i64>,
) -> SpannedExpr {
    if operands.len() <= 1 {
        return operands.pop().unwrap_or(SpannedExpr {
            id: 0,
            node: Expr::Null,
            span: 0..0,
        });
    }
    let right_half = operands.split_off(operands.len().div_ceil(2));
    let left = balanced(op, operands, ids);
    let right = balanced(op, right_half, ids);
    SpannedExpr {
        id: ids.next().unwrap_or(left.id),
        span: left.span.start..right.span.end,
        node: Expr::Binary {
            op,
            left: Box::new(left),
            right: Box::new(right),
        },
    }
}

fn syntax_message(message: &str) -> String {
    // cel-core reports an out-of-range literal as an unexpected character or an overflow;
    // cel-go says "invalid int literal" / "invalid uint literal".
    if message.starts_with("integer literal '") && message.contains("overflow") {
        return "invalid int literal".to_owned();
    }
    if let Some(lit) = message
        .strip_prefix("unexpected character '")
        .and_then(|m| m.strip_suffix('\''))
        && lit.bytes().next().is_some_and(|b| b.is_ascii_digit())
    {
        let kind = if lit.ends_with(['u', 'U']) {
            "uint"
        } else {
            "int"
        };
        return format!("invalid {kind} literal");
    }
    // cel-go: "reserved identifier: namespace" (cel-core words it as a syntax error).
    if let Some(word) = message
        .strip_prefix('\'')
        .and_then(|m| m.strip_suffix("' is a reserved word and cannot be used as an identifier"))
    {
        return format!("reserved identifier: {word}");
    }
    format!("Syntax error: {message}")
}

/// Whether only whitespace and comments separate byte `from` from byte `to`: the two
/// operators are one run of tokens, not split by a parenthesis.
fn adjacent(source: &str, from: usize, to: usize) -> bool {
    let Some(mut gap) = source.get(from..to) else {
        return false;
    };
    loop {
        gap = gap.trim_start();
        match gap.strip_prefix("//") {
            Some(comment) => gap = comment.split_once('\n').map_or("", |(_, rest)| rest),
            None => return gap.is_empty(),
        }
    }
}

/// A `-` folded into an int literal by `cel-core` (only `-9223372036854775808` is).
fn signed_literal(source: &str, e: &SpannedExpr) -> bool {
    matches!(e.node, Expr::Int(_))
        && source
            .get(e.span.start..)
            .is_some_and(|s| s.starts_with('-'))
}

/// Rewrites unary runs into cel-go's tree; an error where cel-go's grammar has one.
fn normalize(e: &mut SpannedExpr, source: &str) -> Result<(), Diagnostic> {
    // An even run dropped uncovers its operand, which may start a run of its own (`!!-1`,
    // `--(--x)`).
    while let Expr::Unary { op, .. } = e.node {
        if !normalize_run(e, op, source)? {
            break;
        }
    }
    for child in crate::tree::children_mut(e) {
        normalize(child, source)?;
    }
    Ok(())
}

/// Normalizes the run starting at `e`; `true` when `e` was replaced by the run's operand.
fn normalize_run(e: &mut SpannedExpr, op: UnaryOp, source: &str) -> Result<bool, Diagnostic> {
    // The run: nested unary nodes of the same operator with nothing but blanks between them
    // (a node's span starts at its operator, a one-byte token).
    let mut count = 1usize;
    let mut last: &SpannedExpr = e;
    while let Expr::Unary { expr, .. } = &last.node
        && let Expr::Unary { op: inner, .. } = &expr.node
        && *inner == op
        && adjacent(source, last.span.start + 1, expr.span.start)
    {
        count += 1;
        last = expr;
    }
    let Expr::Unary { expr: operand, .. } = &last.node else {
        return Ok(false);
    };
    let run_end = last.span.start + 1;
    let follows = adjacent(source, run_end, operand.span.start);
    match (op, &operand.node) {
        (
            UnaryOp::Neg,
            Expr::Unary {
                op: UnaryOp::Not, ..
            },
        ) if follows => {
            return Err(Diagnostic::at(
                operand.span.start,
                "Syntax error: no viable alternative at input '-!'",
            ));
        }
        // After `!` only a member may follow, and `-1` is one (a signed literal).
        (
            UnaryOp::Not,
            Expr::Unary {
                op: UnaryOp::Neg,
                expr: literal,
            },
        ) if follows
            && !(is_number(literal)
                && adjacent(source, operand.span.start + 1, literal.span.start)) =>
        {
            return Err(Diagnostic::at(
                operand.span.start,
                "Syntax error: no viable alternative at input '!-'",
            ));
        }
        _ => {}
    }
    if op == UnaryOp::Neg && follows && signed_literal(source, operand) {
        // cel-go: one more `-` in the run, and the literal without its sign is out of range.
        let after_sign = operand.span.start + 1;
        let digits = source.get(after_sign..).map_or(after_sign, |rest| {
            after_sign + rest.len() - rest.trim_start().len()
        });
        return Err(Diagnostic::at(digits, "invalid int literal"));
    }
    if count < 2 {
        return Ok(false);
    }
    let operand = (**operand).clone();
    if count % 2 == 1 {
        e.node = Expr::Unary {
            op,
            expr: Box::new(operand),
        };
        Ok(false)
    } else {
        *e = operand;
        Ok(true)
    }
}

fn is_number(e: &SpannedExpr) -> bool {
    matches!(e.node, Expr::Int(_) | Expr::UInt(_) | Expr::Float(_))
}
