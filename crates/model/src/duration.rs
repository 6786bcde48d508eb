//! Go `time.ParseDuration` syntax, used by Talos for `sampleInterval`.
//!
//! Written here because the one crate porting it (`go-parse-duration` 0.1.1) slices strings by
//! character count (a panic on `µs`) and has a broken overflow check.

use thiserror::Error;

/// Why a Go duration string was rejected. Messages follow Go's `time: …` wording.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DurationError {
    /// Not of the form `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`.
    #[error("time: invalid duration {0:?}")]
    Invalid(String),
    /// A number without a unit, such as `500`.
    #[error("time: missing unit in duration {0:?}")]
    MissingUnit(String),
    /// A unit other than ns, us, µs, ms, s, m, h.
    #[error("time: unknown unit {unit:?} in duration {input:?}")]
    UnknownUnit {
        /// The unit as written.
        unit: String,
        /// The whole input.
        input: String,
    },
}

const UNITS: &[(&str, u64)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("\u{00b5}s", 1_000), // micro sign
    ("\u{03bc}s", 1_000), // Greek mu
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Parses a Go duration (`500ms`, `1m30s`, `-1.5h`, `0`) into signed nanoseconds. This follows
/// Go 1.22's `time.ParseDuration` step by step, including its float arithmetic for fractions,
/// so that every string Talos accepts means the same number of nanoseconds here.
pub fn parse_go_duration(input: &str) -> Result<i64, DurationError> {
    const LIMIT: u64 = 1 << 63;
    let invalid = || DurationError::Invalid(input.to_owned());
    let (negative, mut rest) = match input.as_bytes().first() {
        Some(b'-') => (true, input.get(1..).unwrap_or("")),
        Some(b'+') => (false, input.get(1..).unwrap_or("")),
        _ => (false, input),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_part, after_int) = rest.split_at(int_len);
        let mut whole: u64 = 0;
        for digit in int_part.bytes() {
            whole = whole
                .checked_mul(10)
                .and_then(|w| w.checked_add(u64::from(digit - b'0')))
                .filter(|w| *w <= LIMIT)
                .ok_or_else(invalid)?;
        }
        let (frac, scale, frac_len, after_num) = match after_int.strip_prefix('.') {
            Some(f) => {
                let (x, scale, len) = leading_fraction(f);
                (x, scale, len, f.get(len..).unwrap_or(""))
            }
            None => (0, 1.0, 0, after_int),
        };
        if int_part.is_empty() && frac_len == 0 {
            return Err(invalid());
        }
        let unit_len = after_num
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(after_num.len());
        let (unit, next) = after_num.split_at(unit_len);
        if unit.is_empty() {
            return Err(DurationError::MissingUnit(input.to_owned()));
        }
        let scale_ns = UNITS
            .iter()
            .find(|(name, _)| *name == unit)
            .map(|(_, ns)| *ns)
            .ok_or_else(|| DurationError::UnknownUnit {
                unit: unit.to_owned(),
                input: input.to_owned(),
            })?;
        if whole > LIMIT / scale_ns {
            return Err(invalid());
        }
        let mut value = whole * scale_ns;
        if frac > 0 {
            // Go: v += uint64(float64(f) * (float64(unit) / scale)); the cast saturates.
            #[allow(
                clippy::cast_precision_loss,
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss
            )]
            let frac_ns = (frac as f64 * (scale_ns as f64 / scale)) as u64;
            value = value
                .checked_add(frac_ns)
                .filter(|v| *v <= LIMIT)
                .ok_or_else(invalid)?;
        }
        total = total
            .checked_add(value)
            .filter(|t| *t <= LIMIT)
            .ok_or_else(invalid)?;
        rest = next;
    }
    if negative {
        // 1<<63 negated is exactly i64::MIN; anything smaller was rejected above.
        Ok(0i64.wrapping_sub_unsigned(total))
    } else {
        i64::try_from(total).map_err(|_| invalid())
    }
}

/// Formats nanoseconds as Go's `time.Duration.String()` does: `500ms`, `1.5s`, `1m30s`,
/// `1h0m0s`, `0s`. [`parse_go_duration`] reads every output back to the same value.
pub fn format_go_duration(nanos: i64) -> String {
    let negative = nanos < 0;
    let u = nanos.unsigned_abs();
    let mut out = if u == 0 {
        return "0s".to_owned();
    } else if u < 1_000_000_000 {
        let (unit, prec) = if u < 1_000 {
            ("ns", 0)
        } else if u < 1_000_000 {
            ("\u{00b5}s", 3)
        } else {
            ("ms", 6)
        };
        format!("{}{unit}", frac(u, prec))
    } else {
        let seconds = frac(u % 60_000_000_000, 9);
        let minutes = u / 60_000_000_000;
        match (minutes / 60, minutes % 60) {
            (0, 0) => format!("{seconds}s"),
            (0, m) => format!("{m}m{seconds}s"),
            (h, m) => format!("{h}h{m}m{seconds}s"),
        }
    };
    if negative {
        out.insert(0, '-');
    }
    out
}

/// `v / 10^prec` with the fraction's trailing zeros (and a bare point) dropped.
fn frac(v: u64, prec: u32) -> String {
    let scale = 10u64.pow(prec);
    let (int, fraction) = (v / scale, v % scale);
    if fraction == 0 {
        return int.to_string();
    }
    let digits = format!("{fraction:0width$}", width = prec as usize);
    format!("{int}.{}", digits.trim_end_matches('0'))
}

/// Go's `leadingFraction`: digits after the point, stopping (silently) once more precision
/// would overflow; returns the digits as an integer, 10^n, and the bytes consumed.
fn leading_fraction(s: &str) -> (u64, f64, usize) {
    let mut x: u64 = 0;
    let mut scale = 1.0;
    let mut overflow = false;
    let mut len = 0;
    for digit in s.bytes().take_while(u8::is_ascii_digit) {
        len += 1;
        if overflow {
            continue;
        }
        match x
            .checked_mul(10)
            .and_then(|y| y.checked_add(u64::from(digit - b'0')))
        {
            Some(y) if x <= (u64::MAX >> 1) / 10 && y <= 1 << 63 => {
                x = y;
                scale *= 10.0;
            }
            _ => overflow = true,
        }
    }
    (x, scale, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_go_forms() {
        let cases: &[(&str, i64)] = &[
            ("0", 0),
            ("-0", 0),
            ("+0", 0),
            ("0s", 0),
            ("500ms", 500_000_000),
            ("250ms", 250_000_000),
            ("1m30s", 90_000_000_000),
            ("1.5h", 5_400_000_000_000),
            ("-1.5h", -5_400_000_000_000),
            (".5s", 500_000_000),
            ("1.s", 1_000_000_000),
            ("1ns", 1),
            ("3us", 3_000),
            ("3\u{00b5}s", 3_000),
            ("3\u{03bc}s", 3_000),
            ("1h1m1s1ms1us1ns", 3_661_001_001_001),
            ("2562047h47m16.854775807s", i64::MAX),
            ("-2562047h47m16.854775808s", i64::MIN),
        ];
        for (s, want) in cases {
            assert_eq!(parse_go_duration(s), Ok(*want), "{s}");
        }
    }

    #[test]
    fn formats_like_go() {
        let cases: &[(i64, &str)] = &[
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5\u{00b5}s"),
            (500_000_000, "500ms"),
            (250_000_000, "250ms"),
            (1_500_000, "1.5ms"),
            (1_000_000_000, "1s"),
            (1_500_000_000, "1.5s"),
            (90_000_000_000, "1m30s"),
            (3_600_000_000_000, "1h0m0s"),
            (-5_400_000_000_000, "-1h30m0s"),
            (i64::MAX, "2562047h47m16.854775807s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
        ];
        for (ns, want) in cases {
            assert_eq!(format_go_duration(*ns), *want);
        }
    }

    #[test]
    fn rejects_what_go_rejects() {
        for s in [
            "",
            "-",
            "+",
            "s",
            ".s",
            "5",
            "1.5",
            "5 s",
            " 5s",
            "5s ",
            "1x",
            "1sec",
            "--1s",
            "1e3s",
            "2562047h47m16.854775808s",
            "9999999999999999999h",
        ] {
            assert!(parse_go_duration(s).is_err(), "{s:?} should be rejected");
        }
        assert_eq!(
            parse_go_duration("500"),
            Err(DurationError::MissingUnit("500".into()))
        );
        assert!(matches!(
            parse_go_duration("5d"),
            Err(DurationError::UnknownUnit { .. })
        ));
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = parse_go_duration(&s);
        }

        #[test]
        fn format_then_parse_is_identity(ns in proptest::num::i64::ANY) {
            proptest::prop_assert_eq!(parse_go_duration(&format_go_duration(ns)), Ok(ns));
        }

        #[test]
        fn millis_round_trip(ms in 0i64..=9_000_000_000) {
            proptest::prop_assert_eq!(parse_go_duration(&format!("{ms}ms")), Ok(ms * 1_000_000));
        }

        #[test]
        fn grammar_fragments_never_panic(s in "[-+]?([0-9.]{0,4}(ns|us|µs|μs|ms|s|m|h|x)?){0,5}") {
            let _ = parse_go_duration(&s);
        }
    }
}
