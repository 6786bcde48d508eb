//! Go's `regexp/syntax` parser (`syntax.Perl` flags, as `regexp.Compile` uses), step by step:
//! the same stack of operands and pseudo-operators, so a pattern is refused where Go refuses it,
//! with Go's error and the same piece of the pattern quoted. The tree it builds keeps what
//! matching needs; Go's simplifications (literal strings, prefix factoring) are left out, they
//! change no match.

use regex_syntax::hir::{ClassUnicode, ClassUnicodeRange};

use crate::{ErrorCode, RegexError};

/// Go's `maxRepeat`: the largest count in `x{n,m}`, and the product of nested counts.
const MAX_REPEAT: i64 = 1000;
/// Go's `maxHeight`: the deepest parse tree.
const MAX_HEIGHT: u32 = 1000;
/// Go's `maxSize`: 128 MiB of 40-byte instructions.
const MAX_SIZE: u64 = (128 << 20) / 40;
/// Go's `maxRunes`: 128 MiB of runes in character classes.
const MAX_RUNES: u64 = (128 << 20) / 4;
const MAX_RUNE: u32 = 0x10_FFFF;

// Go's parse flags; ClassNL, PerlX and UnicodeGroups are always on (`syntax.Perl`).
const FOLD_CASE: u16 = 1;
const DOT_NL: u16 = 1 << 1;
const ONE_LINE: u16 = 1 << 2;
const NON_GREEDY: u16 = 1 << 3;

/// The kind of a repetition, for Go's size estimate and its nested-count rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RepeatOp {
    Star,
    Plus,
    Quest,
    /// `{n}`, `{n,}`, `{n,m}`.
    Counted,
}

/// Zero-width assertions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Assertion {
    BeginLine,
    EndLine,
    BeginText,
    EndText,
    WordBoundary,
    NoWordBoundary,
}

/// A parsed regular expression. `height` and `size` are Go's estimates, kept as the tree grows
/// so its limits are checked when each node is made, as Go checks them.
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) kind: Kind,
    height: u32,
    size: u64,
}

#[derive(Debug)]
pub(crate) enum Kind {
    /// One code point (Go's runes include surrogates, which match nothing in a string).
    Literal {
        rune: u32,
        fold: bool,
    },
    Class(ClassUnicode),
    AnyCharNotNl,
    AnyChar,
    Assert(Assertion),
    EmptyMatch,
    NoMatch,
    Capture(Box<Node>),
    Repeat {
        op: RepeatOp,
        min: u32,
        /// `None`: unbounded.
        max: Option<u32>,
        greedy: bool,
        sub: Box<Node>,
    },
    Concat(Vec<Node>),
    Alternate(Vec<Node>),
    /// Pseudo-operator: an open parenthesis, with the flags to restore at its close.
    LeftParen {
        capture: bool,
        flags: u16,
    },
    /// Pseudo-operator: a `|` waiting for its right side.
    VerticalBar,
}

impl Node {
    /// A node without operands: Go counts one instruction (a literal string one per rune).
    fn leaf(kind: Kind) -> Self {
        Self {
            kind,
            height: 1,
            size: 1,
        }
    }

    fn is_pseudo(&self) -> bool {
        matches!(self.kind, Kind::LeftParen { .. } | Kind::VerticalBar)
    }
}

fn err(code: ErrorCode, expr: &str) -> RegexError {
    RegexError {
        code,
        expr: expr.to_owned(),
    }
}

/// The part of `whole` before its suffix `rest` (Go's `s[:len(s)-len(t)]`).
fn consumed<'a>(whole: &'a str, rest: &str) -> &'a str {
    whole.get(..whole.len() - rest.len()).unwrap_or(whole)
}

/// `s` without its first `n` bytes (ASCII the caller has seen), or nothing.
fn skip(s: &str, n: usize) -> &str {
    s.get(n..).unwrap_or("")
}

/// The first code point of `s` and what follows it.
fn next_rune(s: &str) -> Option<(char, &str)> {
    let c = s.chars().next()?;
    Some((c, s.get(c.len_utf8()..).unwrap_or("")))
}

/// A class of code points `lo..=hi`; Go's runes may be surrogates, which no string holds.
fn range_class(lo: u32, hi: u32) -> ClassUnicode {
    let mut ranges = Vec::with_capacity(2);
    let mut push = |a: u32, b: u32| {
        if let (Some(a), Some(b)) = (char::from_u32(a), char::from_u32(b))
            && a <= b
        {
            ranges.push(ClassUnicodeRange::new(a, b));
        }
    };
    if lo <= 0xD7FF {
        push(lo, hi.min(0xD7FF));
    }
    if hi >= 0xE000 {
        push(lo.max(0xE000), hi);
    }
    ClassUnicode::new(ranges)
}

fn ascii_class(ranges: &[(u8, u8)]) -> ClassUnicode {
    ClassUnicode::new(
        ranges
            .iter()
            .map(|&(a, b)| ClassUnicodeRange::new(char::from(a), char::from(b))),
    )
}

/// Go's `perl_groups.go`: `\d`, `\s`, `\w` are ASCII.
fn perl_group(letter: u8) -> Option<(ClassUnicode, bool)> {
    let (ranges, negated): (&[(u8, u8)], bool) = match letter {
        b'd' => (&[(b'0', b'9')], false),
        b'D' => (&[(b'0', b'9')], true),
        b's' => (&[(b'\t', b'\n'), (0x0C, b'\r'), (b' ', b' ')], false),
        b'S' => (&[(b'\t', b'\n'), (0x0C, b'\r'), (b' ', b' ')], true),
        b'w' => (&WORD, false),
        b'W' => (&WORD, true),
        _ => return None,
    };
    Some((ascii_class(ranges), negated))
}

const WORD: [(u8, u8); 4] = [(b'0', b'9'), (b'A', b'Z'), (b'_', b'_'), (b'a', b'z')];

/// Go's `posixGroup`.
fn posix_group(name: &str) -> Option<(ClassUnicode, bool)> {
    let (negated, bare) = match name.strip_prefix("[:^") {
        Some(rest) => (true, rest),
        None => (false, name.strip_prefix("[:")?),
    };
    let ranges: &[(u8, u8)] = match bare.strip_suffix(":]")? {
        "alnum" => &[(b'0', b'9'), (b'A', b'Z'), (b'a', b'z')],
        "alpha" => &[(b'A', b'Z'), (b'a', b'z')],
        "ascii" => &[(0, 0x7F)],
        "blank" => &[(b'\t', b'\t'), (b' ', b' ')],
        "cntrl" => &[(0, 0x1F), (0x7F, 0x7F)],
        "digit" => &[(b'0', b'9')],
        "graph" => &[(b'!', b'~')],
        "lower" => &[(b'a', b'z')],
        "print" => &[(b' ', b'~')],
        "punct" => &[(b'!', b'/'), (b':', b'@'), (b'[', b'`'), (b'{', b'~')],
        "space" => &[(b'\t', b'\r'), (b' ', b' ')],
        "upper" => &[(b'A', b'Z')],
        "word" => &WORD,
        "xdigit" => &[(b'0', b'9'), (b'A', b'F'), (b'a', b'f')],
        _ => return None,
    };
    Some((ascii_class(ranges), negated))
}

/// Go's `canonicalName`: a leading upper-case letter, then lower case, without `_ - ` and
/// spaces.
fn canonical_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut first = true;
    for c in name.chars() {
        if matches!(c, '_' | '-' | ' ') {
            continue;
        }
        if first {
            out.push(c.to_ascii_uppercase());
            first = false;
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

fn table_class(table: &[(u32, u32)]) -> ClassUnicode {
    let mut class = ClassUnicode::empty();
    for &(lo, hi) in table {
        class.union(&range_class(lo, hi));
    }
    class
}

fn lookup<'t>(tables: &'t [(&str, &'t [(u32, u32)])], key: &str) -> Option<&'t [(u32, u32)]> {
    let i = tables.binary_search_by(|(k, _)| (*k).cmp(key)).ok()?;
    tables.get(i).map(|(_, t)| *t)
}

/// The set `\p{name}` names (Unicode 17.0.0, as Go 1.27), or `None` if Go does not know it.
/// `Assigned` is the set itself, not Go's "inverted `Cn`": the same code points.
pub(crate) fn unicode_table(name: &str) -> Option<ClassUnicode> {
    use crate::unicode_tables::{GENERAL_CATEGORIES, NAMES, SCRIPTS};
    let canonical = canonical_name(name);
    let target = *lookup_name(NAMES, &canonical)?;
    let categories = |pick: &dyn Fn(&str) -> bool| {
        let mut class = ClassUnicode::empty();
        for (cat, table) in GENERAL_CATEGORIES {
            if pick(cat) {
                class.union(&table_class(table));
            }
        }
        class
    };
    Some(match target {
        "Any" => range_class(0, MAX_RUNE),
        "ASCII" => range_class(0, 0x7F),
        "Assigned" => {
            let mut class = categories(&|c| c == "Cn");
            class.negate();
            class
        }
        "LC" => categories(&|c| matches!(c, "Lu" | "Ll" | "Lt")),
        one if one.len() == 1 => categories(&|c| c.starts_with(one)),
        // A category (`Lu`), else a script (`Yi` is one).
        other => table_class(lookup(GENERAL_CATEGORIES, other).or_else(|| lookup(SCRIPTS, other))?),
    })
}

fn lookup_name<'t>(names: &'t [(&str, &'t str)], key: &str) -> Option<&'t &'t str> {
    let i = names.binary_search_by(|(k, _)| (*k).cmp(key)).ok()?;
    names.get(i).map(|(_, t)| t)
}

struct Parser<'a> {
    flags: u16,
    stack: Vec<Node>,
    whole: &'a str,
    /// Runes held by classes and literals, for Go's `maxRunes`.
    runes: u64,
}

/// Parses `s` as Go's `regexp.Compile` does.
#[allow(
    clippy::too_many_lines,
    reason = "Go's main loop, one arm per character it dispatches on, kept as one"
)]
pub(crate) fn parse(s: &str) -> Result<Node, RegexError> {
    let mut p = Parser {
        flags: ONE_LINE,
        stack: Vec::new(),
        whole: s,
        runes: 0,
    };
    let mut t = s;
    let mut last_repeat: &str = "";
    while let Some(&b) = t.as_bytes().first() {
        let mut repeat: &str = "";
        match b {
            b'(' => {
                if t.as_bytes().get(1) == Some(&b'?') {
                    t = p.parse_perl_flags(t)?;
                } else {
                    p.op(Kind::LeftParen {
                        capture: true,
                        flags: p.flags,
                    })?;
                    t = skip(t, 1);
                }
            }
            b'|' => {
                p.parse_vertical_bar()?;
                t = skip(t, 1);
            }
            b')' => {
                p.parse_right_paren()?;
                t = skip(t, 1);
            }
            b'^' => {
                let a = if p.flags & ONE_LINE != 0 {
                    Assertion::BeginText
                } else {
                    Assertion::BeginLine
                };
                p.op(Kind::Assert(a))?;
                t = skip(t, 1);
            }
            b'$' => {
                let a = if p.flags & ONE_LINE != 0 {
                    Assertion::EndText
                } else {
                    Assertion::EndLine
                };
                p.op(Kind::Assert(a))?;
                t = skip(t, 1);
            }
            b'.' => {
                let k = if p.flags & DOT_NL != 0 {
                    Kind::AnyChar
                } else {
                    Kind::AnyCharNotNl
                };
                p.op(k)?;
                t = skip(t, 1);
            }
            b'[' => t = p.parse_class(t)?,
            b'*' | b'+' | b'?' => {
                let op = match b {
                    b'*' => RepeatOp::Star,
                    b'+' => RepeatOp::Plus,
                    _ => RepeatOp::Quest,
                };
                let before = t;
                let after = p.repeat(op, 0, 0, before, skip(t, 1), last_repeat)?;
                repeat = before;
                t = after;
            }
            b'{' => {
                let before = t;
                match parse_repeat(t) {
                    None => {
                        // Not a repetition: `{` is a literal.
                        p.literal(u32::from('{'))?;
                        t = skip(t, 1);
                    }
                    Some((min, max, after)) => {
                        if !(0..=MAX_REPEAT).contains(&min)
                            || max > MAX_REPEAT
                            || max >= 0 && min > max
                        {
                            return Err(err(ErrorCode::InvalidRepeatSize, consumed(before, after)));
                        }
                        let after =
                            p.repeat(RepeatOp::Counted, min, max, before, after, last_repeat)?;
                        repeat = before;
                        t = after;
                    }
                }
            }
            b'\\' => t = p.parse_backslash(t)?,
            _ => {
                let Some((c, rest)) = next_rune(t) else {
                    break;
                };
                p.literal(u32::from(c))?;
                t = rest;
            }
        }
        last_repeat = repeat;
    }
    p.concat()?;
    if p.swap_vertical_bar() {
        p.stack.pop();
    }
    p.alternate()?;
    if p.stack.len() != 1 {
        return Err(err(ErrorCode::MissingParen, s));
    }
    p.stack.pop().ok_or_else(|| err(ErrorCode::MissingParen, s))
}

/// Go's `parseRepeat`: `{min}`, `{min,}` (max -1) or `{min,max}`; `None` if `s` is not of
/// that form. A number too big reads as -1 (refused by the caller).
fn parse_repeat(s: &str) -> Option<(i64, i64, &str)> {
    let s = s.strip_prefix('{')?;
    let (mut min, s) = parse_int(s)?;
    let max;
    let s = match s.strip_prefix(',') {
        None => {
            if s.is_empty() {
                return None;
            }
            max = min;
            s
        }
        Some(s) => {
            if s.is_empty() {
                return None;
            }
            if s.starts_with('}') {
                max = -1;
                s
            } else {
                let (m, rest) = parse_int(s)?;
                max = m;
                if m < 0 {
                    min = -1;
                }
                rest
            }
        }
    };
    let rest = s.strip_prefix('}')?;
    Some((min, max, rest))
}

/// Go's `parseInt`: decimal digits without a leading zero; -1 when too big.
fn parse_int(s: &str) -> Option<(i64, &str)> {
    let bytes = s.as_bytes();
    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits >= 2 && bytes.first() == Some(&b'0') {
        return None;
    }
    let mut n: i64 = 0;
    for &d in bytes.iter().take(digits) {
        if n >= 100_000_000 {
            n = -1;
            break;
        }
        n = n * 10 + i64::from(d - b'0');
    }
    Some((n, s.get(digits..).unwrap_or("")))
}

/// Go's `repeatIsValid`: the nested counts multiply to at most `n`.
fn repeat_is_valid(node: &Node, mut n: i64) -> bool {
    if let Kind::Repeat {
        op: RepeatOp::Counted,
        min,
        max,
        ..
    } = &node.kind
    {
        let m = match max {
            Some(0) => return true,
            Some(m) => i64::from(*m),
            None => i64::from(*min),
        };
        if m > n {
            return false;
        }
        if m > 0 {
            n /= m;
        }
    }
    children(node).all(|sub| repeat_is_valid(sub, n))
}

fn children(node: &Node) -> Box<dyn Iterator<Item = &Node> + '_> {
    match &node.kind {
        Kind::Capture(sub) | Kind::Repeat { sub, .. } => Box::new(std::iter::once(&**sub)),
        Kind::Concat(subs) | Kind::Alternate(subs) => Box::new(subs.iter()),
        _ => Box::new(std::iter::empty()),
    }
}

fn is_valid_capture_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b == b'_' || b.is_ascii_alphanumeric())
}

fn unhex(c: char) -> Option<u32> {
    c.to_digit(16)
}

impl<'a> Parser<'a> {
    /// Pushes `node`, checking Go's limits on it.
    fn push(&mut self, node: Node) -> Result<(), RegexError> {
        self.check_limits(&node)?;
        self.stack.push(node);
        Ok(())
    }

    fn check_limits(&self, node: &Node) -> Result<(), RegexError> {
        if self.runes > MAX_RUNES || node.size > MAX_SIZE {
            return Err(err(ErrorCode::Large, self.whole));
        }
        if node.height > MAX_HEIGHT {
            return Err(err(ErrorCode::NestingDepth, self.whole));
        }
        Ok(())
    }

    fn op(&mut self, kind: Kind) -> Result<(), RegexError> {
        self.push(Node::leaf(kind))
    }

    fn literal(&mut self, rune: u32) -> Result<(), RegexError> {
        self.runes += 1;
        self.op(Kind::Literal {
            rune,
            fold: self.flags & FOLD_CASE != 0,
        })
    }

    fn class(&mut self, class: ClassUnicode) -> Result<(), RegexError> {
        self.runes += 2 * class.ranges().len() as u64;
        self.op(Kind::Class(class))
    }

    /// Go's `repeat`: replaces the top of the stack with its repetition. `before` starts at
    /// the operator, `after` follows it; returns what follows a non-greedy `?`.
    fn repeat(
        &mut self,
        op: RepeatOp,
        min: i64,
        max: i64,
        before: &'a str,
        after: &'a str,
        last_repeat: &str,
    ) -> Result<&'a str, RegexError> {
        let mut flags = self.flags;
        let mut after = after;
        if let Some(rest) = after.strip_prefix('?') {
            after = rest;
            flags ^= NON_GREEDY;
        }
        if !last_repeat.is_empty() {
            // `a**` is an error in Perl, not a doubled star.
            return Err(err(
                ErrorCode::InvalidRepeatOp,
                consumed(last_repeat, after),
            ));
        }
        let missing = || err(ErrorCode::MissingRepeatArgument, consumed(before, after));
        let sub = match self.stack.pop() {
            Some(sub) if !sub.is_pseudo() => sub,
            Some(pseudo) => {
                self.stack.push(pseudo);
                return Err(missing());
            }
            None => return Err(missing()),
        };
        let (min, max) = match op {
            RepeatOp::Star => (0, None),
            RepeatOp::Plus => (1, None),
            RepeatOp::Quest => (0, Some(1)),
            RepeatOp::Counted => (u32::try_from(min).unwrap_or(0), u32::try_from(max).ok()),
        };
        let size = match op {
            RepeatOp::Star => 2 + sub.size,
            RepeatOp::Plus | RepeatOp::Quest => 1 + sub.size,
            RepeatOp::Counted => match max {
                None if min == 0 => 2 + sub.size,
                None => 1 + u64::from(min).saturating_mul(sub.size),
                Some(m) => u64::from(m)
                    .saturating_mul(sub.size)
                    .saturating_add(u64::from(m - min.min(m))),
            },
        };
        let node = Node {
            height: sub.height + 1,
            size: size.max(1),
            kind: Kind::Repeat {
                op,
                min,
                max,
                greedy: flags & NON_GREEDY == 0,
                sub: Box::new(sub),
            },
        };
        self.check_limits(&node)?;
        if op == RepeatOp::Counted
            && (min >= 2 || max.is_some_and(|m| m >= 2))
            && !repeat_is_valid(&node, MAX_REPEAT)
        {
            return Err(err(ErrorCode::InvalidRepeatSize, consumed(before, after)));
        }
        self.stack.push(node);
        Ok(after)
    }

    /// Where the operands above the topmost pseudo-operator start.
    fn operands_start(&self) -> usize {
        self.stack
            .iter()
            .rposition(Node::is_pseudo)
            .map_or(0, |i| i + 1)
    }

    /// Go's `concat`: the operands above the topmost `|` or `(` become one.
    fn concat(&mut self) -> Result<(), RegexError> {
        let subs = self.stack.split_off(self.operands_start());
        if subs.is_empty() {
            return self.op(Kind::EmptyMatch);
        }
        self.push(collapse(subs, false))
    }

    /// Go's `alternate`: the operands above the topmost `(` become an alternation.
    fn alternate(&mut self) -> Result<(), RegexError> {
        let subs = self.stack.split_off(self.operands_start());
        if subs.is_empty() {
            return self.op(Kind::NoMatch);
        }
        self.push(collapse(subs, true))
    }

    /// Go's `swapVerticalBar`: an operand above a `|` goes below it.
    fn swap_vertical_bar(&mut self) -> bool {
        let n = self.stack.len();
        if n >= 2
            && matches!(
                self.stack.get(n - 2).map(|x| &x.kind),
                Some(Kind::VerticalBar)
            )
        {
            self.stack.swap(n - 2, n - 1);
            return true;
        }
        false
    }

    fn parse_vertical_bar(&mut self) -> Result<(), RegexError> {
        self.concat()?;
        if !self.swap_vertical_bar() {
            self.op(Kind::VerticalBar)?;
        }
        Ok(())
    }

    fn parse_right_paren(&mut self) -> Result<(), RegexError> {
        self.concat()?;
        if self.swap_vertical_bar() {
            self.stack.pop();
        }
        self.alternate()?;
        let unexpected = || err(ErrorCode::UnexpectedParen, self.whole);
        if self.stack.len() < 2 {
            return Err(unexpected());
        }
        let (Some(inner), Some(paren)) = (self.stack.pop(), self.stack.pop()) else {
            return Err(unexpected());
        };
        let Kind::LeftParen { capture, flags } = paren.kind else {
            return Err(unexpected());
        };
        self.flags = flags;
        if capture {
            let node = Node {
                height: inner.height + 1,
                size: inner.size + 2,
                kind: Kind::Capture(Box::new(inner)),
            };
            self.push(node)
        } else {
            self.push(inner)
        }
    }

    /// Go's `parsePerlFlags`: `(?i)`, `(?i:`, `(?:`, `(?P<name>`, `(?<name>`.
    fn parse_perl_flags(&mut self, s: &'a str) -> Result<&'a str, RegexError> {
        let b = s.as_bytes();
        let starts_with_p = b.len() > 4 && b.get(2) == Some(&b'P') && b.get(3) == Some(&b'<');
        let starts_with_name = b.len() > 3 && b.get(2) == Some(&b'<');
        if starts_with_p || starts_with_name {
            let expr_start = if starts_with_name { 3 } else { 4 };
            let Some(end) = s.find('>') else {
                return Err(err(ErrorCode::InvalidNamedCapture, s));
            };
            let capture = s.get(..=end).unwrap_or(s);
            let name = s.get(expr_start..end).unwrap_or("");
            if !is_valid_capture_name(name) {
                return Err(err(ErrorCode::InvalidNamedCapture, capture));
            }
            self.op(Kind::LeftParen {
                capture: true,
                flags: self.flags,
            })?;
            return Ok(s.get(end + 1..).unwrap_or(""));
        }

        let mut t = s.get(2..).unwrap_or("");
        let mut flags = self.flags;
        let mut negative = false;
        let mut saw_flag = false;
        while let Some((c, rest)) = next_rune(t) {
            t = rest;
            match c {
                'i' => {
                    flags |= FOLD_CASE;
                    saw_flag = true;
                }
                'm' => {
                    flags &= !ONE_LINE;
                    saw_flag = true;
                }
                's' => {
                    flags |= DOT_NL;
                    saw_flag = true;
                }
                'U' => {
                    flags |= NON_GREEDY;
                    saw_flag = true;
                }
                '-' => {
                    if negative {
                        break;
                    }
                    negative = true;
                    // Inverted, so the settings above clear flags; inverted back at the end.
                    flags = !flags;
                    saw_flag = false;
                }
                ':' | ')' => {
                    if negative {
                        if !saw_flag {
                            break;
                        }
                        flags = !flags;
                    }
                    if c == ':' {
                        self.op(Kind::LeftParen {
                            capture: false,
                            flags: self.flags,
                        })?;
                    }
                    self.flags = flags;
                    return Ok(t);
                }
                _ => break,
            }
        }
        Err(err(ErrorCode::InvalidPerlOp, consumed(s, t)))
    }

    /// A backslash outside a class: assertions, `\Q…\E`, classes, or an escaped rune.
    fn parse_backslash(&mut self, t: &'a str) -> Result<&'a str, RegexError> {
        match t.as_bytes().get(1) {
            Some(b'A') => {
                self.op(Kind::Assert(Assertion::BeginText))?;
                return Ok(skip(t, 2));
            }
            Some(b'b') => {
                self.op(Kind::Assert(Assertion::WordBoundary))?;
                return Ok(skip(t, 2));
            }
            Some(b'B') => {
                self.op(Kind::Assert(Assertion::NoWordBoundary))?;
                return Ok(skip(t, 2));
            }
            Some(b'C') => return Err(err(ErrorCode::InvalidEscape, t.get(..2).unwrap_or(t))),
            Some(b'Q') => {
                let body = skip(t, 2);
                let (lit, rest) = body.split_once("\\E").unwrap_or((body, ""));
                for c in lit.chars() {
                    self.literal(u32::from(c))?;
                }
                return Ok(rest);
            }
            Some(b'z') => {
                self.op(Kind::Assert(Assertion::EndText))?;
                return Ok(skip(t, 2));
            }
            _ => {}
        }
        if let Some((class, rest)) = self.parse_unicode_class(t)? {
            self.class(class)?;
            return Ok(rest);
        }
        if let Some((class, rest)) = self.parse_perl_class_escape(t) {
            self.class(class)?;
            return Ok(rest);
        }
        let (r, rest) = parse_escape(t)?;
        self.literal(r)?;
        Ok(rest)
    }

    /// Applies the case-folding flag, then the negation, as Go's `appendGroup` does.
    fn group(&self, mut class: ClassUnicode, negated: bool) -> ClassUnicode {
        if self.flags & FOLD_CASE != 0 {
            crate::fold::fold(&mut class);
        }
        if negated {
            class.negate();
        }
        class
    }

    /// `\d`, `\D`, `\s`, `\S`, `\w`, `\W` at the start of `s`.
    fn parse_perl_class_escape(&self, s: &'a str) -> Option<(ClassUnicode, &'a str)> {
        let b = s.as_bytes();
        if b.first() != Some(&b'\\') {
            return None;
        }
        let (class, negated) = perl_group(*b.get(1)?)?;
        Some((self.group(class, negated), skip(s, 2)))
    }

    /// Go's `parseUnicodeClass`: `\pL`, `\p{Greek}`, `\PL`, `\p{^Greek}` at the start of `s`.
    fn parse_unicode_class(
        &self,
        s: &'a str,
    ) -> Result<Option<(ClassUnicode, &'a str)>, RegexError> {
        let b = s.as_bytes();
        if b.first() != Some(&b'\\') || !matches!(b.get(1), Some(b'p' | b'P')) {
            return Ok(None);
        }
        let mut negated = b.get(1) == Some(&b'P');
        let after_p = skip(s, 2);
        let (seq, mut name, rest) = match next_rune(after_p) {
            Some(('{', _)) => {
                let Some(end) = s.find('}') else {
                    return Err(err(ErrorCode::InvalidCharRange, s));
                };
                (
                    s.get(..=end).unwrap_or(s),
                    s.get(3..end).unwrap_or(""),
                    s.get(end + 1..).unwrap_or(""),
                )
            }
            // One letter, or nothing at the end of the pattern.
            Some((_, rest)) => {
                let seq = consumed(s, rest);
                (seq, seq.get(2..).unwrap_or(""), rest)
            }
            None => (s, "", ""),
        };
        if let Some(n) = name.strip_prefix('^') {
            negated = !negated;
            name = n;
        }
        let Some(class) = unicode_table(name) else {
            return Err(err(ErrorCode::InvalidCharRange, seq));
        };
        Ok(Some((self.group(class, negated), rest)))
    }

    /// Go's `parseNamedClass`: `[:alpha:]` at the start of `s`.
    fn parse_named_class(&self, s: &'a str) -> Result<Option<(ClassUnicode, &'a str)>, RegexError> {
        if !s.starts_with("[:") {
            return Ok(None);
        }
        let Some(i) = s.get(2..).and_then(|r| r.find(":]")) else {
            return Ok(None);
        };
        let name = s.get(..i + 4).unwrap_or(s);
        let rest = s.get(i + 4..).unwrap_or("");
        let Some((class, negated)) = posix_group(name) else {
            return Err(err(ErrorCode::InvalidCharRange, name));
        };
        Ok(Some((self.group(class, negated), rest)))
    }

    /// Go's `parseClass`: `[…]` at the start of `s`.
    fn parse_class(&mut self, s: &'a str) -> Result<&'a str, RegexError> {
        let mut t = skip(s, 1);
        let mut negated = false;
        if let Some(rest) = t.strip_prefix('^') {
            negated = true;
            t = rest;
        }
        let mut class = ClassUnicode::empty();
        let mut first = true;
        while first || !t.starts_with(']') {
            first = false;
            if t.len() > 2
                && t.starts_with("[:")
                && let Some((c, rest)) = self.parse_named_class(t)?
            {
                class.union(&c);
                t = rest;
                continue;
            }
            if let Some((c, rest)) = self.parse_unicode_class(t)? {
                class.union(&c);
                t = rest;
                continue;
            }
            if let Some((c, rest)) = self.parse_perl_class_escape(t) {
                class.union(&c);
                t = rest;
                continue;
            }
            let range_start = t;
            let (lo, rest) = parse_class_char(t, s)?;
            t = rest;
            let mut hi = lo;
            // `[a-]` is `a` or `-`.
            if t.len() >= 2 && t.starts_with('-') && !skip(t, 1).starts_with(']') {
                let (h, rest) = parse_class_char(skip(t, 1), s)?;
                t = rest;
                hi = h;
                if hi < lo {
                    return Err(err(ErrorCode::InvalidCharRange, consumed(range_start, t)));
                }
            }
            let mut range = range_class(lo, hi);
            if self.flags & FOLD_CASE != 0 {
                crate::fold::fold(&mut range);
            }
            class.union(&range);
        }
        if negated {
            class.negate();
        }
        self.class(class)?;
        Ok(skip(t, 1))
    }
}

/// Go's `collapse`: one node of `subs`, nested concatenations (or alternations) flattened.
fn collapse(subs: Vec<Node>, alternate: bool) -> Node {
    if subs.len() == 1 {
        if let Some(only) = subs.into_iter().next() {
            return only;
        }
        return Node::leaf(Kind::EmptyMatch);
    }
    let mut flat = Vec::with_capacity(subs.len());
    for sub in subs {
        match sub.kind {
            Kind::Concat(inner) if !alternate => flat.extend(inner),
            Kind::Alternate(inner) if alternate => flat.extend(inner),
            kind => flat.push(Node { kind, ..sub }),
        }
    }
    // Go merges runes of one case-folding into a single literal string (height 1).
    let fold_of = |n: &Node| match n.kind {
        Kind::Literal { fold, .. } => Some(fold),
        _ => None,
    };
    let one_string = !alternate
        && flat
            .first()
            .and_then(fold_of)
            .is_some_and(|f| flat.iter().all(|n| fold_of(n) == Some(f)));
    let height = if one_string {
        1
    } else {
        1 + flat.iter().map(|n| n.height).max().unwrap_or(0)
    };
    let mut size: u64 = flat.iter().map(|n| n.size).sum();
    if alternate {
        size += flat.len() as u64 - 1;
        Node {
            kind: Kind::Alternate(flat),
            height,
            size,
        }
    } else {
        Node {
            kind: Kind::Concat(flat),
            height,
            size,
        }
    }
}

/// Go's `parseClassChar`: a rune, escaped or not; `whole` is the class for the error.
fn parse_class_char<'s>(s: &'s str, whole: &str) -> Result<(u32, &'s str), RegexError> {
    if s.is_empty() {
        return Err(err(ErrorCode::MissingBracket, whole));
    }
    if s.starts_with('\\') {
        return parse_escape(s);
    }
    match next_rune(s) {
        Some((c, rest)) => Ok((u32::from(c), rest)),
        None => Err(err(ErrorCode::MissingBracket, whole)),
    }
}

/// Go's `parseEscape`: the rune an escape at the start of `s` stands for.
fn parse_escape(s: &str) -> Result<(u32, &str), RegexError> {
    let t = skip(s, 1);
    let Some((c, mut t)) = next_rune(t) else {
        return Err(err(ErrorCode::TrailingBackslash, ""));
    };
    let invalid = |t: &str| err(ErrorCode::InvalidEscape, consumed(s, t));
    match c {
        '1'..='7' if !t.starts_with(|d: char| ('0'..='7').contains(&d)) => {
            // A single non-zero digit is a backreference: not supported.
            Err(invalid(t))
        }
        '0'..='7' => {
            let mut r = c as u32 - u32::from(b'0');
            for _ in 1..3 {
                match t.as_bytes().first() {
                    Some(&d @ b'0'..=b'7') => {
                        r = r * 8 + u32::from(d - b'0');
                        t = skip(t, 1);
                    }
                    _ => break,
                }
            }
            Ok((r, t))
        }
        'x' => {
            let Some((c, rest)) = next_rune(t) else {
                return Err(invalid(t));
            };
            t = rest;
            if c == '{' {
                // Any number of hex digits in braces, at least one.
                let mut r: u32 = 0;
                let mut digits = 0;
                loop {
                    let Some((c, rest)) = next_rune(t) else {
                        return Err(invalid(t));
                    };
                    t = rest;
                    if c == '}' {
                        break;
                    }
                    let Some(v) = unhex(c) else {
                        return Err(invalid(t));
                    };
                    r = r * 16 + v;
                    if r > MAX_RUNE {
                        return Err(invalid(t));
                    }
                    digits += 1;
                }
                if digits == 0 {
                    return Err(invalid(t));
                }
                return Ok((r, t));
            }
            let x = unhex(c);
            let y = match next_rune(t) {
                Some((c, rest)) => {
                    t = rest;
                    unhex(c)
                }
                None => None,
            };
            match (x, y) {
                (Some(x), Some(y)) => Ok((x * 16 + y, t)),
                _ => Err(invalid(t)),
            }
        }
        'a' => Ok((0x07, t)),
        'f' => Ok((0x0C, t)),
        'n' => Ok((u32::from(b'\n'), t)),
        'r' => Ok((u32::from(b'\r'), t)),
        't' => Ok((u32::from(b'\t'), t)),
        'v' => Ok((0x0B, t)),
        // Escaped punctuation is itself (`\_` too).
        c if c.is_ascii() && !c.is_ascii_alphanumeric() => Ok((u32::from(c), t)),
        _ => Err(invalid(t)),
    }
}
