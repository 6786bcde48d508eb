//! Go's case folding (`unicode.SimpleFold` orbits, Unicode 17.0.0): regex-syntax's simple case
//! folding (Unicode 16.0.0) and the pairs Unicode 17 added.

use regex_syntax::hir::{ClassUnicode, ClassUnicodeRange};

/// Case pairs of Unicode 17.0.0 (some already in 16.0.0; adding a known pair changes
/// nothing). Measured: for every cased letter Unicode 17 made (and U+0295), the letters
/// cel-go v0.31.0 (Go 1.27.3) matches with `(?i)`, found by bisection over all cased letters.
const PAIRS_17: &[(u32, u32)] = &[
    (0x19B, 0xA7DC),
    (0x264, 0xA7CB),
    (0x1C89, 0x1C8A),
    (0xA7CC, 0xA7CD),
    (0xA7CE, 0xA7CF),
    (0xA7D2, 0xA7D3),
    (0xA7D4, 0xA7D5),
    (0xA7DA, 0xA7DB),
    (0x10D50, 0x10D70),
    (0x10D51, 0x10D71),
    (0x10D52, 0x10D72),
    (0x10D53, 0x10D73),
    (0x10D54, 0x10D74),
    (0x10D55, 0x10D75),
    (0x10D56, 0x10D76),
    (0x10D57, 0x10D77),
    (0x10D58, 0x10D78),
    (0x10D59, 0x10D79),
    (0x10D5A, 0x10D7A),
    (0x10D5B, 0x10D7B),
    (0x10D5C, 0x10D7C),
    (0x10D5D, 0x10D7D),
    (0x10D5E, 0x10D7E),
    (0x10D5F, 0x10D7F),
    (0x10D60, 0x10D80),
    (0x10D61, 0x10D81),
    (0x10D62, 0x10D82),
    (0x10D63, 0x10D83),
    (0x10D64, 0x10D84),
    (0x10D65, 0x10D85),
    (0x16EA0, 0x16EBB),
    (0x16EA1, 0x16EBC),
    (0x16EA2, 0x16EBD),
    (0x16EA3, 0x16EBE),
    (0x16EA4, 0x16EBF),
    (0x16EA5, 0x16EC0),
    (0x16EA6, 0x16EC1),
    (0x16EA7, 0x16EC2),
    (0x16EA8, 0x16EC3),
    (0x16EA9, 0x16EC4),
    (0x16EAA, 0x16EC5),
    (0x16EAB, 0x16EC6),
    (0x16EAC, 0x16EC7),
    (0x16EAD, 0x16EC8),
    (0x16EAE, 0x16EC9),
    (0x16EAF, 0x16ECA),
    (0x16EB0, 0x16ECB),
    (0x16EB1, 0x16ECC),
    (0x16EB2, 0x16ECD),
    (0x16EB3, 0x16ECE),
    (0x16EB4, 0x16ECF),
    (0x16EB5, 0x16ED0),
    (0x16EB6, 0x16ED1),
    (0x16EB7, 0x16ED2),
    (0x16EB8, 0x16ED3),
];

/// Adds to `class` every code point that folds to one in it, as Go's `appendFoldedRange`.
pub(crate) fn fold(class: &mut ClassUnicode) {
    class.case_fold_simple();
    let contains = |class: &ClassUnicode, c: char| {
        class
            .ranges()
            .binary_search_by(|r| {
                if r.end() < c {
                    std::cmp::Ordering::Less
                } else if r.start() > c {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok()
    };
    let mut extra = Vec::new();
    for &(a, b) in PAIRS_17 {
        let (Some(a), Some(b)) = (char::from_u32(a), char::from_u32(b)) else {
            continue;
        };
        if contains(class, a) && !contains(class, b) {
            extra.push(ClassUnicodeRange::new(b, b));
        }
        if contains(class, b) && !contains(class, a) {
            extra.push(ClassUnicodeRange::new(a, a));
        }
    }
    if !extra.is_empty() {
        class.union(&ClassUnicode::new(extra));
    }
}
