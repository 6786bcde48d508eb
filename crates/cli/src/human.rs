//! Numbers for people: sizes in binary units as kubectl prints quantities, other numbers
//! rounded. JSON output keeps the exact values.

/// A size as Kubernetes writes quantities: `256Mi` when exact, else one decimal (`805.8Mi`);
/// below 1 Ki, bytes (`512B`).
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    if n < 1024 {
        return format!("{n}B");
    }
    let mut unit = 0usize;
    let mut scale: u64 = 1024;
    while unit + 1 < UNITS.len() && n / scale >= 1024 {
        scale = scale.saturating_mul(1024);
        unit += 1;
    }
    let name = UNITS.get(unit).copied().unwrap_or("Ei");
    if n.is_multiple_of(scale) {
        return format!("{}{name}", n / scale);
    }
    #[allow(clippy::cast_precision_loss)] // shown to one decimal
    let value = n as f64 / scale as f64;
    format!("{value:.1}{name}")
}

/// At most three decimals, trailing zeros dropped (`4211.3`, `12.41`, `844935168`); `NaN`,
/// `+Inf` and `-Inf` as Prometheus writes them.
pub(crate) fn number(x: f64) -> String {
    oomwarden_model::format_rounded(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_quantities() {
        assert_eq!(bytes(0), "0B");
        assert_eq!(bytes(1023), "1023B");
        assert_eq!(bytes(1024), "1Ki");
        assert_eq!(bytes(268_435_456), "256Mi");
        assert_eq!(bytes(844_935_168), "805.8Mi");
        assert_eq!(bytes(1 << 30), "1Gi");
        assert_eq!(bytes(u64::MAX), "16.0Ei");
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
