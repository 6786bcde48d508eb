//! Kubernetes resource quantities (`128Mi`, `1.5Gi`, `500M`, `1e9`, `100m`), parsed exactly.
//!
//! The grammar and `Value()` are apimachinery's (`pkg/api/resource/quantity.go`): a signed
//! decimal number, then a binary-SI suffix (`Ki`…`Ei`), a decimal-SI suffix (`n`, `u`, `m`,
//! none, `k`, `M`, `G`, `T`, `P`, `E`) or a decimal exponent (`e3`, `E-2`). [`Quantity::value`]
//! is `Value()`: the integer value rounded up, away from zero, as the kubelet reads a memory
//! request. Every Rust quantity crate wraps the heavy `k8s-openapi` types and converts through
//! decimals or floats; this one is exact integer arithmetic, property-tested against the
//! grammar.

use std::fmt;

/// A parsed quantity: `mantissa × 10^exp10 × 2^exp2`, exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantity {
    mantissa: i128,
    exp10: i32,
    exp2: u32,
}

/// Why a text is not a quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid quantity {text:?}: {reason}")]
pub struct QuantityError {
    /// The text given.
    pub text: String,
    /// What is wrong.
    pub reason: &'static str,
}

/// Significant digits kept exactly (apimachinery itself keeps far fewer for such values).
const MAX_DIGITS: usize = 30;

impl Quantity {
    /// Parses a quantity string.
    pub fn parse(text: &str) -> Result<Quantity, QuantityError> {
        let err = |reason| QuantityError {
            text: text.to_owned(),
            reason,
        };
        let (negative, rest) = match text.as_bytes().first() {
            Some(b'-') => (true, text.get(1..).unwrap_or("")),
            Some(b'+') => (false, text.get(1..).unwrap_or("")),
            _ => (false, text),
        };
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_end);
        let (int, frac) = number.split_once('.').unwrap_or((number, ""));
        if (int.is_empty() && frac.is_empty()) || frac.contains('.') {
            return Err(err("expected a number such as 128, 1.5 or .5"));
        }
        let digits: String = format!("{int}{frac}");
        let digits = digits.trim_start_matches('0');
        if digits.len() > MAX_DIGITS {
            return Err(err("too many significant digits"));
        }
        let mut mantissa: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| err("expected a number"))?
        };
        if negative {
            mantissa = -mantissa;
        }
        let frac_len = i32::try_from(frac.len()).map_err(|_| err("too many digits"))?;
        let (exp10, exp2) = match suffix {
            "Ki" => (0, 10),
            "Mi" => (0, 20),
            "Gi" => (0, 30),
            "Ti" => (0, 40),
            "Pi" => (0, 50),
            "Ei" => (0, 60),
            "n" => (-9, 0),
            "u" => (-6, 0),
            "m" => (-3, 0),
            "" => (0, 0),
            "k" => (3, 0),
            "M" => (6, 0),
            "G" => (9, 0),
            "T" => (12, 0),
            "P" => (15, 0),
            "E" => (18, 0),
            s if s.starts_with(['e', 'E']) => {
                let exp = s.get(1..).unwrap_or("");
                let unsigned = exp.strip_prefix(['+', '-']).unwrap_or(exp);
                if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(err("expected an integer exponent after e"));
                }
                let e: i32 = exp.parse().map_err(|_| err("exponent out of range"))?;
                if !(-100..=100).contains(&e) {
                    return Err(err("exponent out of range"));
                }
                (e, 0)
            }
            _ => {
                return Err(err(
                    "unknown suffix; use Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent",
                ));
            }
        };
        Ok(Quantity {
            mantissa,
            exp10: exp10 - frac_len,
            exp2,
        })
    }

    /// Apimachinery's `Value()`: the value rounded up, away from zero, to an integer. `None`
    /// when it does not fit an `i64`.
    pub fn value(&self) -> Option<i64> {
        i64::try_from(self.value_exact()?).ok()
    }

    /// The value in billionths, rounded up away from zero (for comparing cpu amounts such as
    /// `500m` and `0.5` exactly). `None` when it does not fit an `i128`.
    pub fn scaled_nanos(&self) -> Option<i128> {
        Quantity {
            exp10: self.exp10.checked_add(9)?,
            ..*self
        }
        .value_exact()
    }

    /// The value rounded up, away from zero, to an integer, exactly (`8Ei` is 2^63). `None`
    /// when it does not fit an `i128` (about 1.7 × 10^38).
    pub fn value_exact(&self) -> Option<i128> {
        let magnitude = self.mantissa.checked_abs()?;
        let scaled = magnitude.checked_mul(1_i128.checked_shl(self.exp2)?)?;
        let up = if self.exp10 >= 0 {
            scaled.checked_mul(10_i128.checked_pow(self.exp10.unsigned_abs())?)?
        } else {
            // Dividing by more than 10^38 leaves 0 or 1 (rounded up).
            match 10_i128.checked_pow(self.exp10.unsigned_abs()) {
                Some(den) => scaled.checked_add(den - 1)? / den,
                None => i128::from(scaled > 0),
            }
        };
        Some(if self.mantissa < 0 { -up } else { up })
    }

    /// Whether the quantity is below zero.
    pub fn is_negative(&self) -> bool {
        self.mantissa < 0
    }

    /// Whether the quantity is zero.
    pub fn is_zero(&self) -> bool {
        self.mantissa == 0
    }
}

/// A byte count as apimachinery writes `resource.NewQuantity(bytes, resource.BinarySI)`, the
/// form the kubelet puts in an eviction Event's `offending_containers_usage`: below 1024 the
/// plain number; else the largest binary suffix (`Ki` … `Ei`) that divides it exactly, else
/// the plain number (`1536Ki`, `1Gi`, `1500`, `123456789`).
pub fn binary_si(bytes: u64) -> String {
    const SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    if bytes < 1024 {
        return bytes.to_string();
    }
    let (mut n, mut i) = (bytes, 0);
    while n % 1024 == 0 && i + 1 < SUFFIXES.len() {
        n /= 1024;
        i += 1;
    }
    format!("{n}{}", SUFFIXES.get(i).copied().unwrap_or(""))
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value_exact() {
            Some(v) => write!(f, "{v}"),
            None => f.write_str("(out of range)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Option<i64> {
        Quantity::parse(s).ok().and_then(|q| q.value())
    }

    #[test]
    fn values_as_apimachinery_computes_them() {
        for (text, want) in [
            ("128974848", 128_974_848),
            ("129e6", 129_000_000),
            ("129M", 129_000_000),
            ("123Mi", 128_974_848),
            ("1Gi", 1_073_741_824),
            ("1.5Gi", 1_610_612_736),
            ("0.5", 1),
            (".5Ki", 512),
            ("1.", 1),
            ("100m", 1),
            ("1500m", 2),
            ("1n", 1),
            ("0", 0),
            ("0Mi", 0),
            ("+2k", 2000),
            ("-1.5", -2),
            ("1E3", 1000),
            ("1e-3", 1),
            ("7Ei", 8_070_450_532_247_928_832),
            ("32Gi", 34_359_738_368),
        ] {
            assert_eq!(v(text), Some(want), "{text}");
        }
        assert_eq!(v("8Ei"), None, "overflows i64");
    }

    #[test]
    fn malformed_quantities_are_errors() {
        for text in [
            "", "Mi", "1MB", "1 Mi", "1.2.3", "--1", "1e", "1e1.5", "1Mi ", "0x10", "1ki", "e3",
            "1e1000", ".",
        ] {
            assert!(Quantity::parse(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn byte_counts_are_written_as_apimachinery_writes_them() {
        // resource.NewQuantity(n, resource.BinarySI).String()
        for (n, want) in [
            (0, "0"),
            (512, "512"),
            (1023, "1023"),
            (1024, "1Ki"),
            (1536, "1536"),
            (1_572_864, "1536Ki"),
            (1_073_741_824, "1Gi"),
            (844_935_168, "825132Ki"),
            (123_456_789, "123456789"),
            (1 << 60, "1Ei"),
            (1 << 62, "4Ei"),
        ] {
            assert_eq!(binary_si(n), want, "{n}");
        }
    }

    proptest::proptest! {
        #[test]
        fn a_written_byte_count_reads_back_the_same(n in 0u64..=(i64::MAX as u64)) {
            let text = binary_si(n);
            proptest::prop_assert_eq!(v(&text), Some(i64::try_from(n).unwrap()), "{}", text);
        }
    }

    proptest::proptest! {
        #[test]
        fn parse_is_total(s in "\\PC{0,20}") {
            if let Ok(q) = Quantity::parse(&s) {
                let _ = q.value();
            }
        }

        #[test]
        fn binary_and_decimal_forms_agree(n in 0u32..1_000_000) {
            let n64 = i64::from(n);
            proptest::prop_assert_eq!(v(&format!("{n}Mi")), Some(n64 * 1_048_576));
            proptest::prop_assert_eq!(v(&format!("{n}k")), Some(n64 * 1000));
            proptest::prop_assert_eq!(v(&format!("{n}e3")), Some(n64 * 1000));
            proptest::prop_assert_eq!(v(&format!("{n}000m")), Some(n64));
            proptest::prop_assert_eq!(v(&format!("{n}.5")), Some(n64 + 1));
        }
    }
}
