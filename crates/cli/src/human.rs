//! Numbers for people: sizes in binary units as kubectl prints quantities, other numbers
//! rounded. JSON output keeps the exact values.

/// `812.0 MiB`, `1.5 GiB`, `512 B`.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    #[allow(clippy::cast_precision_loss)] // shown to one decimal
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS.get(unit).copied().unwrap_or("EiB"))
}

/// At most three decimals, trailing zeros dropped (`4211.3`, `12.41`, `844935168`); `NaN`,
/// `+Inf` and `-Inf` as Prometheus writes them.
pub(crate) fn number(x: f64) -> String {
    if !x.is_finite() {
        return oomwarden_model::format_number(x);
    }
    let text = format!("{x:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_owned()
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_binary_units() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1024), "1.0 KiB");
        assert_eq!(bytes(851_443_712), "812.0 MiB");
        assert_eq!(bytes(u64::MAX), "16.0 EiB");
    }

    #[test]
    fn numbers_rounded() {
        assert_eq!(number(4_211.299_999_9), "4211.3");
        assert_eq!(number(844_935_168.0), "844935168");
        assert_eq!(number(0.0004), "0");
        assert_eq!(number(-0.0), "0");
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(f64::NAN), "NaN");
    }
}
