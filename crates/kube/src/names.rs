//! Kubernetes' name rules (apimachinery's `validation.IsDNS1123Subdomain` and
//! `IsQualifiedName`), for what oomwarden writes into the API: Event and Node names, the
//! reporting controller.

/// A DNS-1123 subdomain: at most 253 characters, dot-separated labels of lower-case letters,
/// digits and `-`, each starting and ending with a letter or digit. Object names (Pods,
/// Nodes, Events) are such.
pub fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && !s.is_empty() && s.split('.').all(is_label)
}

fn is_label(l: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !l.is_empty()
        && l.chars().all(|c| alnum(c) || c == '-')
        && l.chars().next().is_some_and(alnum)
        && l.chars().last().is_some_and(alnum)
}

/// A qualified name: an optional DNS-subdomain prefix and `/`, then a name of at most 63
/// characters of letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit
/// (`kubernetes.io/kubelet`, `oomwarden.io/oomwarden`).
pub fn is_qualified_name(s: &str) -> bool {
    let (prefix, name) = match s.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    let alnum = |c: char| c.is_ascii_alphanumeric();
    prefix.is_none_or(is_dns_subdomain)
        && !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| alnum(c) || matches!(c, '-' | '_' | '.'))
        && name.chars().next().is_some_and(alnum)
        && name.chars().last().is_some_and(alnum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn subdomains() {
        for ok in [
            "a",
            "worker-1",
            "ip-10-0-0-1.eu-west-1.compute.internal",
            "cart-6b8f.18f3a",
        ] {
            assert!(is_dns_subdomain(ok), "{ok}");
        }
        for bad in [
            "",
            "Worker",
            "-a",
            "a-",
            "a..b",
            ".a",
            "a_b",
            &"a".repeat(254),
        ] {
            assert!(!is_dns_subdomain(bad), "{bad}");
        }
        assert!(is_dns_subdomain(&"a".repeat(253)));
    }

    #[test]
    fn qualified_names() {
        for ok in [
            "kubelet",
            "kubernetes.io/kubelet",
            "oomwarden.io/oomwarden",
            "A_b.c",
        ] {
            assert!(is_qualified_name(ok), "{ok}");
        }
        for bad in ["", "/a", "a/", "Bad.IO/x", "a/b/c", "-a", &"a".repeat(64)] {
            assert!(!is_qualified_name(bad), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn never_panic(s in "\\PC{0,300}") {
            let _ = is_dns_subdomain(&s);
            let _ = is_qualified_name(&s);
        }
    }
}
