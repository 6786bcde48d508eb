//! Size and nesting limits checked before the CEL parser runs.
//!
//! The parser, checker and evaluator of `cel-core` are recursive; without limits a deeply
//! nested expression overflows the stack and aborts the process (measured: ~80 nested
//! parentheses on a 2 MiB debug thread). cel-go's defaults are the model: at most 100,000 code
//! points and a recursion depth of 250. Depth is estimated here from the tokens (brackets,
//! runs of unary operators, ternaries) so that the parser never sees anything deeper; the AST
//! depth is checked again after parsing, as cel-go's visitor counts it (see `tree::cel_go_depth`).

/// cel-go's default `ExpressionSizeCodePointLimit`.
pub const MAX_CODE_POINTS: usize = 100_000;
/// cel-go's default `MaxRecursionDepth`.
pub const MAX_RECURSION_DEPTH: usize = 250;

/// A limit the source text exceeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LimitExceeded {
    /// More code points than [`MAX_CODE_POINTS`].
    Size(usize),
    /// Deeper than [`MAX_RECURSION_DEPTH`], at this byte offset.
    Depth(usize),
}

/// Scans the source once, skipping string literals and comments, and reports the first limit
/// exceeded. Never fails on malformed input: unterminated strings simply end the scan (the
/// parser reports them).
pub(crate) fn check_limits(src: &str) -> Result<(), LimitExceeded> {
    scan(src).map(|_| ())
}

/// The source with every run of more than three `!` (or unary `-`) shortened to two or three
/// of the same parity, the others replaced by spaces (so every byte offset stays the same).
/// cel-go's grammar drops an even run whatever its length, so a run of 10,000 is as valid as
/// one of two; `cel-core`'s parser would recurse once per operator.
pub(crate) fn shorten_unary_runs(src: &str) -> std::borrow::Cow<'_, str> {
    let Ok(blank) = scan(src) else {
        return std::borrow::Cow::Borrowed(src);
    };
    if blank.is_empty() {
        return std::borrow::Cow::Borrowed(src);
    }
    let mut bytes = src.as_bytes().to_vec();
    for i in blank {
        if let Some(b) = bytes.get_mut(i) {
            *b = b' ';
        }
    }
    // Only ASCII operators were replaced by ASCII spaces: still UTF-8.
    String::from_utf8(bytes).map_or(std::borrow::Cow::Borrowed(src), std::borrow::Cow::Owned)
}

/// Whether the comma at `i` is alone between an opening bracket and its closing one (`[ , ]`,
/// `{,}`), blanks aside.
fn lone_comma(bytes: &[u8], i: usize) -> bool {
    let before = bytes
        .get(..i)
        .and_then(|b| b.iter().rev().find(|c| !c.is_ascii_whitespace()));
    let after = bytes
        .get(i + 1..)
        .and_then(|b| b.iter().find(|c| !c.is_ascii_whitespace()));
    matches!(
        (before, after),
        (Some(b'['), Some(b']')) | (Some(b'{'), Some(b'}'))
    )
}

/// Checks the limits; returns the positions of unary operators beyond the last two or three
/// of each long run (see [`shorten_unary_runs`]). A run counts at most 3 towards the depth.
#[allow(
    clippy::too_many_lines,
    reason = "one pass over the source, one arm per token kind"
)]
fn scan(src: &str) -> Result<Vec<usize>, LimitExceeded> {
    let mut blank = Vec::new();
    let mut run: Vec<usize> = Vec::new();
    let mut run_op = 0u8;
    let end_run = |run: &mut Vec<usize>, blank: &mut Vec<usize>| {
        if run.len() > 3 {
            let keep = if run.len().is_multiple_of(2) { 2 } else { 3 };
            blank.extend(run.iter().take(run.len() - keep));
        }
        run.clear();
    };
    let size = src.chars().count();
    if size > MAX_CODE_POINTS {
        return Err(LimitExceeded::Size(size));
    }
    // One frame per open bracket: the unary run and ternary count inside that bracket.
    struct Frame {
        unary_run: usize,
        ternaries: usize,
    }
    let mut frames: Vec<Frame> = vec![Frame {
        unary_run: 0,
        ternaries: 0,
    }];
    let bytes = src.as_bytes();
    let mut i = 0;
    // Whether the previous significant token ended an operand (so `-` is binary).
    let mut after_operand = false;
    while let Some(&b) = bytes.get(i) {
        match b {
            b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' => {
                i += 1;
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i = bytes
                    .iter()
                    .skip(i)
                    .position(|&c| c == b'\n')
                    .map_or(bytes.len(), |p| i + p);
                continue;
            }
            b'"' | b'\'' => {
                let raw = i > 0 && matches!(bytes.get(i - 1), Some(b'r' | b'R'))
                    || i > 1
                        && matches!(bytes.get(i - 1), Some(b'b' | b'B'))
                        && matches!(bytes.get(i - 2), Some(b'r' | b'R'));
                i = skip_string(bytes, i, raw);
                after_operand = true;
                end_run(&mut run, &mut blank);
                run_op = 0;
                continue;
            }
            _ => {}
        }
        let unary = (b == b'!' && bytes.get(i + 1) != Some(&b'=')) || (b == b'-' && !after_operand);
        if !unary {
            end_run(&mut run, &mut blank);
            run_op = 0;
        }
        let frame_depth = |frames: &Vec<Frame>| {
            frames.last().map_or(0, |f| f.unary_run + f.ternaries) + frames.len() - 1
        };
        match b {
            b'(' | b'[' | b'{' => {
                if let Some(f) = frames.last_mut() {
                    f.unary_run = 0;
                }
                frames.push(Frame {
                    unary_run: 0,
                    ternaries: 0,
                });
                after_operand = false;
            }
            b')' | b']' | b'}' => {
                if frames.len() > 1 {
                    frames.pop();
                }
                after_operand = true;
            }
            b'!' | b'-'
                if (b == b'!' && bytes.get(i + 1) != Some(&b'='))
                    || (b == b'-' && !after_operand) =>
            {
                if run_op != b {
                    end_run(&mut run, &mut blank);
                    run_op = b;
                }
                run.push(i);
                if let Some(f) = frames.last_mut() {
                    f.unary_run = (f.unary_run + 1).min(3);
                }
                after_operand = false;
            }
            b'?' => {
                if let Some(f) = frames.last_mut() {
                    f.ternaries += 1;
                    f.unary_run = 0;
                }
                after_operand = false;
            }
            b',' | b':' => {
                if let Some(f) = frames.last_mut() {
                    f.unary_run = 0;
                }
                after_operand = false;
                // `[,]` and `{,}`: cel-go's grammar takes an empty list or map with its
                // optional trailing comma; cel-core does not, so the comma is blanked.
                if b == b',' && lone_comma(bytes, i) {
                    blank.push(i);
                }
            }
            b'.' if !bytes.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                // Member selection: `a.b` keeps `a` an operand chain.
                after_operand = false;
            }
            c if is_word_byte(c) || c == b'.' => {
                // Identifier, keyword or number (`1.5e3`, `0x1F`, `3u`): consume it whole.
                let start = i;
                let number = c.is_ascii_digit() || c == b'.';
                while bytes
                    .get(i)
                    .is_some_and(|&c| is_word_byte(c) || number && c == b'.')
                {
                    i += 1;
                }
                let word = bytes.get(start..i).unwrap_or_default();
                // `in` is a binary operator; other words end an operand. String prefixes are
                // handled when the quote is reached.
                after_operand = word != b"in";
                if let Some(f) = frames.last_mut() {
                    f.unary_run = 0;
                }
                continue;
            }
            _ => {
                // Binary operators and anything else: the next `-` is unary.
                after_operand = false;
                if let Some(f) = frames.last_mut() {
                    f.unary_run = 0;
                }
            }
        }
        // cel-go refuses at the limit itself: 249 nested brackets parse, 250 do not (measured
        // with cel-go v0.31.0 for parentheses, lists and ternary chains).
        if frame_depth(&frames) >= MAX_RECURSION_DEPTH {
            return Err(LimitExceeded::Depth(i));
        }
        i += 1;
    }
    end_run(&mut run, &mut blank);
    Ok(blank)
}

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// Skips a string literal starting at the quote at `start`; returns the index after it.
fn skip_string(bytes: &[u8], start: usize, raw: bool) -> usize {
    let Some(&quote) = bytes.get(start) else {
        return bytes.len();
    };
    let triple = bytes.get(start + 1) == Some(&quote) && bytes.get(start + 2) == Some(&quote);
    let mut i = start + if triple { 3 } else { 1 };
    while let Some(&c) = bytes.get(i) {
        if c == b'\\' && !raw {
            i += 2;
            continue;
        }
        if c == quote {
            if !triple {
                return i + 1;
            }
            if bytes.get(i + 1) == Some(&quote) && bytes.get(i + 2) == Some(&quote) {
                return i + 3;
            }
        }
        if c == b'\n' && !triple {
            return i;
        }
        i += 1;
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_talos_defaults_and_ordinary_text() {
        for src in [
            "multiply_qos_vectors(d_qos_memory_full_total, {System: 8.0, Podruntime: 4.0}) > 3000.0",
            "memory_max.hasValue() ? 0.0 : {Besteffort: 1.0}[class] * double(memory_current.orValue(0u))",
            "'((((((' + \"[[[[\" + '''{{{''' // (((((",
            "-1 - -2 - 3",
        ] {
            assert_eq!(check_limits(src), Ok(()), "{src}");
        }
    }

    #[test]
    fn size_limit_counts_code_points() {
        let ok = "é".repeat(MAX_CODE_POINTS);
        assert_eq!(check_limits(&ok), Ok(()));
        let too_long = "1".repeat(MAX_CODE_POINTS + 1);
        assert_eq!(
            check_limits(&too_long),
            Err(LimitExceeded::Size(MAX_CODE_POINTS + 1))
        );
    }

    #[test]
    fn depth_limit_covers_brackets_unary_and_ternary() {
        // cel-go v0.31.0: 249 levels parse, 250 are refused.
        let n = MAX_RECURSION_DEPTH;
        assert_eq!(
            check_limits(&format!("{}1{}", "(".repeat(n - 1), ")".repeat(n - 1))),
            Ok(())
        );
        let deep = format!("{}1{}", "(".repeat(n), ")".repeat(n));
        assert!(matches!(check_limits(&deep), Err(LimitExceeded::Depth(_))));
        assert!(matches!(
            check_limits(&format!("{}1", "[".repeat(n))),
            Err(LimitExceeded::Depth(_))
        ));
        assert_eq!(
            check_limits(&format!("{}1", "true ? 1 : ".repeat(n - 1))),
            Ok(())
        );
        // A unary run counts at most 3: cel-go's grammar takes a run of any length.
        assert_eq!(check_limits(&format!("{}true", "!".repeat(n + 1))), Ok(()));
        assert_eq!(check_limits(&format!("{}1", "-".repeat(n + 1))), Ok(()));
        let ternaries = format!("{}1", "true ? 1 : ".repeat(n));
        assert!(matches!(
            check_limits(&ternaries),
            Err(LimitExceeded::Depth(_))
        ));
        // Long flat chains are not nesting.
        assert_eq!(check_limits(&"!a && ".repeat(1000)), Ok(()));
        assert_eq!(check_limits(&"1 - ".repeat(1000)), Ok(()));
    }

    /// Issue 37: cel-go takes `[,]` and `{,}` (an empty list or map with its optional
    /// trailing comma); the comma is blanked for cel-core, offsets kept. A comma elsewhere, or
    /// in a string, stays.
    #[test]
    fn a_lone_comma_in_empty_brackets_is_blanked() {
        assert_eq!(shorten_unary_runs("size([,]) == 0"), "size([ ]) == 0");
        assert_eq!(shorten_unary_runs("{ , }"), "{   }");
        assert_eq!(shorten_unary_runs("[1,]"), "[1,]");
        assert_eq!(shorten_unary_runs("\"[,]\""), "\"[,]\"");
        assert_eq!(shorten_unary_runs("[,,]"), "[,,]");
    }

    #[test]
    fn long_unary_runs_are_shortened_keeping_parity_and_offsets() {
        assert_eq!(shorten_unary_runs("!!!!true"), "  !!true");
        assert_eq!(shorten_unary_runs("-----1"), "  ---1");
        assert_eq!(shorten_unary_runs("!! x"), "!! x");
        assert_eq!(shorten_unary_runs("1 - - - - 2"), "1 - - - - 2");
        assert_eq!(shorten_unary_runs("1 - - - - - 2"), "1 -     - - 2");
        assert_eq!(shorten_unary_runs("'!!!!!' + x"), "'!!!!!' + x");
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,300}") {
            let _ = check_limits(&s);
            let shortened = shorten_unary_runs(&s);
            proptest::prop_assert_eq!(shortened.len(), s.len());
        }
    }
}
