//! Number formatting as Go's `encoding/json` writes a `float64`.
//!
//! Talos stores the trigger context as Go JSON, and users diff and grep those dumps, so the
//! bytes must match: shortest round-trip digits, plain notation for magnitudes in
//! `[1e-6, 1e21)`, otherwise exponent form with an explicit sign (`1e+21`, `1e-7`).

/// Formats a finite `f64` exactly as Go's `encoding/json` does. Non-finite values have no JSON
/// form (Go refuses to encode them); they are written as `0`, the value Talos scrubs them to.
pub fn format_go_float(value: f64) -> String {
    if !value.is_finite() {
        return "0".to_owned();
    }
    let abs = value.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust's `{:e}` is shortest round-trip like Go's 'e' with precision -1, but writes
        // `1e21` where Go writes `1e+21`; negative exponents already agree after Go's
        // `e-07` -> `e-7` clean-up.
        let s = format!("{value:e}");
        match s.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
            _ => s,
        }
    } else {
        format!("{value}")
    }
}

/// Formats a number for people and for text a program parses: Go's `encoding/json` digits
/// when finite, else `+Inf`, `-Inf` or `NaN` (Go's `strconv` and Prometheus spellings). Scores
/// may be non-finite (`1.0/0.0` is `+Inf` in cel-go), and must not read as `0`.
pub fn format_number(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value == f64::INFINITY {
        "+Inf".to_owned()
    } else if value == f64::NEG_INFINITY {
        "-Inf".to_owned()
    } else {
        format_go_float(value)
    }
}

/// Formats a number for people, rounded: at most three decimals, trailing zeros dropped
/// (`4211.3`, `12.41`, `844935168`, `0` for `-0.0004`); non-finite as [`format_number`].
pub fn format_rounded(value: f64) -> String {
    if !value.is_finite() {
        return format_number(value);
    }
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_owned()
    } else {
        text.to_owned()
    }
}

/// Formats an `f64` as Go's YAML (`gopkg.in/yaml.v3`, which `talosctl -o yaml` prints
/// resources with) writes a `float64`: `strconv.FormatFloat(v, 'g', -1, 64)`, shortest
/// round-trip digits, exponent form when the exponent is below -4 or at least 6 (Go's rule for
/// the shortest precision), with a sign and at least two exponent digits (`8.44935168e+08`,
/// `1e-05`); `.inf`, `-.inf`, `.nan` for the non-finite.
pub fn format_go_yaml_float(value: f64) -> String {
    if value.is_nan() {
        return ".nan".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { ".inf" } else { "-.inf" }.to_owned();
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    // `{:e}` is the shortest round-trip digits with the decimal exponent.
    let e = format!("{value:e}");
    let Some((mantissa, exp)) = e.split_once('e') else {
        return e;
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        return format!("{value}");
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::{format_go_float, format_go_yaml_float, format_number, format_rounded};

    /// Go's `strconv.FormatFloat(v, 'g', -1, 64)`, as yaml.v3 prints a float64.
    #[test]
    fn go_yaml_floats() {
        for (v, want) in [
            (100000.0, "100000"),
            (1e6, "1e+06"),
            (844935168.0, "8.44935168e+08"),
            (25350144.0, "2.5350144e+07"),
            (21.0, "21"),
            (0.5, "0.5"),
            (123456.7, "123456.7"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (1.5e300, "1.5e+300"),
            (0.0, "0"),
            (f64::INFINITY, ".inf"),
            (f64::NEG_INFINITY, "-.inf"),
            (f64::NAN, ".nan"),
        ] {
            assert_eq!(format_go_yaml_float(v), want, "{v}");
        }
    }

    #[test]
    fn rounded_for_people() {
        assert_eq!(format_rounded(4_211.299_999_9), "4211.3");
        assert_eq!(format_rounded(844_935_168.0), "844935168");
        assert_eq!(format_rounded(-0.0004), "0");
        assert_eq!(format_rounded(f64::INFINITY), "+Inf");
    }

    #[test]
    fn numbers_for_people_keep_non_finite_values() {
        assert_eq!(format_number(f64::INFINITY), "+Inf");
        assert_eq!(format_number(f64::NEG_INFINITY), "-Inf");
        assert_eq!(format_number(f64::NAN), "NaN");
        assert_eq!(format_number(1.5e300), "1.5e+300");
        assert_eq!(format_number(222593024.0), "222593024");
    }

    #[test]
    fn matches_go_encoding_json() {
        // Expected strings are what Go 1.22 `json.Marshal(float64)` prints.
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (14.54, "14.54"),
            (12172340.0, "12172340"),
            (34.12, "34.12"),
            (0.1, "0.1"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e300, "1.5e+300"),
            (1e-6, "0.000001"),
            (1e-7, "1e-7"),
            (1.25e-10, "1.25e-10"),
            (-2.5e-8, "-2.5e-8"),
            (123456789.125, "123456789.125"),
            (f64::NAN, "0"),
            (f64::INFINITY, "0"),
        ];
        for (v, want) in cases {
            assert_eq!(format_go_float(*v), *want, "value {v:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn round_trips(v in proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL | proptest::num::f64::ZERO) {
            let s = format_go_float(v);
            let back: f64 = s.parse().unwrap();
            proptest::prop_assert_eq!(back.to_bits(), v.to_bits());
        }
    }
}
