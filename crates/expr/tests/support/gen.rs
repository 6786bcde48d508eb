//! A generator of random CEL expressions over Talos's two environments, mostly well typed,
//! with deliberate slips, for the differential test against cel-go.
//!
//! It covers what the issue names: type slips, `dyn`, mixed-type list and map literals,
//! optionals, macros, string functions, durations, conversions, int/uint overflow and
//! division by zero. Variables are Talos's only (no oomwarden extension).

#![allow(dead_code, unreachable_pub, clippy::indexing_slicing)]

use oomwarden_model::variables::VarType;

use crate::celgo::talos_trigger_names;
use rand::RngExt;
use rand_xorshift::XorShiftRng;

/// Which environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Env {
    Trigger,
    Ranking,
}

/// CEL types the generator builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Bool,
    Int,
    Uint,
    Double,
    Str,
    Duration,
    /// `map(int, double)`
    ClassMap,
    ListInt,
    ListDouble,
    ListStr,
    /// `optional(uint)`
    OptUint,
    /// `optional(double)`
    OptDouble,
    Dyn,
}

const ALL: [Ty; 13] = [
    Ty::Bool,
    Ty::Int,
    Ty::Uint,
    Ty::Double,
    Ty::Str,
    Ty::Duration,
    Ty::ClassMap,
    Ty::ListInt,
    Ty::ListDouble,
    Ty::ListStr,
    Ty::OptUint,
    Ty::OptDouble,
    Ty::Dyn,
];

const CLASSES: [&str; 5] = [
    "Besteffort",
    "Burstable",
    "Guaranteed",
    "Podruntime",
    "System",
];
const UNITS: [&str; 12] = [
    "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "kB", "MB", "GB", "TB", "PB", "EB",
];

/// The generator's state: the environment, the RNG and the probability of a slip.
pub struct Gen<'a> {
    pub env: Env,
    pub rng: &'a mut XorShiftRng,
    /// Per mille: how often a sub-expression of the wrong type is put in.
    pub slip: u32,
    /// Comprehension variables in scope, with their types.
    scope: Vec<(String, Ty)>,
}

impl<'a> Gen<'a> {
    pub fn new(env: Env, rng: &'a mut XorShiftRng, slip: u32) -> Self {
        Gen {
            env,
            rng,
            slip,
            scope: Vec::new(),
        }
    }

    fn pick<'s, T>(&mut self, items: &'s [T]) -> &'s T {
        &items[self.rng.random_range(0..items.len())]
    }

    fn chance(&mut self, per_mille: u32) -> bool {
        self.rng.random_range(0..1000) < per_mille
    }

    /// An expression of type `ty` (or, rarely, of another type: a slip).
    pub fn expr(&mut self, ty: Ty, depth: u32) -> String {
        if self.chance(self.slip) {
            let other = *self.pick(&ALL);
            return self.typed(other, depth);
        }
        self.typed(ty, depth)
    }

    fn var_of(&mut self, ty: Ty) -> Option<String> {
        let scoped: Vec<String> = self
            .scope
            .iter()
            .filter(|(_, t)| *t == ty)
            .map(|(n, _)| n.clone())
            .collect();
        if !scoped.is_empty() && self.chance(500) {
            return Some(self.pick(&scoped).clone());
        }
        let names: Vec<&str> = match (self.env, ty) {
            (Env::Trigger, Ty::Double) => talos_trigger_names(VarType::Double),
            (Env::Trigger, Ty::ClassMap) => talos_trigger_names(VarType::ClassMap),
            (Env::Trigger, Ty::Duration) => vec!["time_since_trigger"],
            (Env::Ranking, Ty::OptUint) => vec!["memory_max", "memory_current", "memory_peak"],
            (Env::Ranking, Ty::Str) => vec!["path"],
            (Env::Ranking, Ty::Int) => vec!["class", "class", "Besteffort", "System"],
            (_, Ty::Int) => CLASSES.to_vec(),
            (_, Ty::Uint) => UNITS.to_vec(),
            _ => return None,
        };
        Some((*self.pick(&names)).to_owned())
    }

    fn typed(&mut self, ty: Ty, depth: u32) -> String {
        if depth == 0 || self.chance(250) {
            if let Some(v) = self.var_of(ty)
                && self.chance(600)
            {
                return v;
            }
            return self.leaf(ty);
        }
        let d = depth - 1;
        // Forms shared by every type.
        match self.rng.random_range(0..20) {
            0 => {
                return format!(
                    "({} ? {} : {})",
                    self.expr(Ty::Bool, d),
                    self.expr(ty, d),
                    self.expr(ty, d)
                );
            }
            1 if ty != Ty::Dyn => return format!("dyn({})", self.expr(ty, d)),
            2 => {
                // Indexing a mixed-type list or map literal gives `dyn`.
                let a = self.expr(ty, d);
                let other = *self.pick(&ALL);
                let b = self.expr(other, d);
                return if self.chance(500) {
                    format!("[{a}, {b}][0]")
                } else {
                    format!(
                        "{{Besteffort: {a}, Burstable: {b}}}[{}]",
                        self.expr(Ty::Int, d)
                    )
                };
            }
            _ => {}
        }
        match ty {
            Ty::Bool => self.bool_form(d),
            Ty::Int => self.int_form(d),
            Ty::Uint => self.uint_form(d),
            Ty::Double => self.double_form(d),
            Ty::Str => self.str_form(d),
            Ty::Duration => self.duration_form(d),
            Ty::ClassMap => self.map_form(d),
            Ty::ListInt | Ty::ListDouble | Ty::ListStr => self.list_form(ty, d),
            Ty::OptUint | Ty::OptDouble => self.opt_form(ty, d),
            Ty::Dyn => {
                let inner = *self.pick(&ALL);
                format!("dyn({})", self.expr(inner, d))
            }
        }
    }

    #[allow(
        clippy::too_many_lines,
        reason = "one arm per type the generator produces"
    )]
    fn leaf(&mut self, ty: Ty) -> String {
        match ty {
            Ty::Bool => self.pick(&["true", "false"]).to_string(),
            Ty::Int => self
                .pick(&[
                    "0",
                    "1",
                    "-1",
                    "2",
                    "7",
                    "-3",
                    "100",
                    "9223372036854775807",
                    "-9223372036854775808",
                    "4611686018427387904",
                    "0x10",
                    "-0x8000000000000000",
                    "9007199254740993",
                    "0x7FFFFFFFFFFFFFFF",
                ])
                .to_string(),
            Ty::Uint => self
                .pick(&[
                    "0u",
                    "1u",
                    "2u",
                    "10u",
                    "18446744073709551615u",
                    "9223372036854775808u",
                    "9007199254740993u",
                ])
                .to_string(),
            Ty::Double => self
                .pick(&[
                    "0.0",
                    "1.0",
                    "-1.0",
                    "0.5",
                    "2.5",
                    "1e308",
                    "-1e308",
                    "1e-320",
                    "0.1",
                    "3.0",
                    "1.5e3",
                    "100.0",
                    "9007199254740992.0",
                    "9223372036854775808.0",
                    "18446744073709551616.0",
                    "-9223372036854775808.0",
                ])
                .to_string(),
            Ty::Str => self
                .pick(&[
                    "''",
                    "'a'",
                    "'abc'",
                    "'/sys/fs/cgroup/kubepods'",
                    "'besteffort'",
                    "'1.5'",
                    "'12'",
                    "'-7'",
                    "'true'",
                    "'T'",
                    "'FALSE'",
                    "'5s'",
                    "'μ'",
                    "'1e3'",
                    "'NaN'",
                    "'inf'",
                ])
                .to_string(),
            Ty::Duration => format!(
                "duration('{}')",
                self.pick(&[
                    "5s",
                    "0",
                    "+5s",
                    "-5s",
                    "1μs",
                    "1us",
                    "1µs",
                    "1ns",
                    "1m30s",
                    "1h",
                    "2h45m",
                    "1.5s",
                    ".5s",
                    "5 s",
                    "",
                    "1d",
                    "300ms",
                    "2562047h",
                    "2562048h",
                    "-2562047h",
                    "9223372036s",
                    "1e3s",
                    "0.000000001s",
                ])
            ),
            Ty::ClassMap => self
                .pick(&[
                    "{System: 1.0, Podruntime: 1.0}",
                    "{Besteffort: 1.0, Burstable: 0.5}",
                    "{0: 2.0}",
                ])
                .to_string(),
            Ty::ListInt => self
                .pick(&["[]", "[1, 2, 3]", "[0]", "[-1, 5]"])
                .to_string(),
            Ty::ListDouble => self.pick(&["[1.0, 2.0]", "[0.5]", "[]"]).to_string(),
            Ty::ListStr => self.pick(&["['a', 'b']", "['']", "[]"]).to_string(),
            Ty::OptUint => self
                .pick(&["optional.none()", "optional.of(5u)", "optional.of(0u)"])
                .to_string(),
            Ty::OptDouble => self
                .pick(&[
                    "optional.of(1.5)",
                    "optional.none()",
                    "optional.ofNonZeroValue(0.0)",
                ])
                .to_string(),
            Ty::Dyn => self
                .pick(&[
                    "dyn(1)",
                    "dyn(1.0)",
                    "dyn('a')",
                    "dyn(1u)",
                    "dyn(9007199254740993)",
                    "dyn(9007199254740992.0)",
                    "dyn(18446744073709551615u)",
                    "dyn([1, 2.0])",
                    "dyn(duration('0s'))",
                ])
                .to_string(),
        }
    }

    /// A `matches()` pattern of Go's grammar's pieces, valid or not, as a raw literal.
    fn pattern(&mut self) -> String {
        const PIECES: &[&str] = &[
            "a",
            "é",
            "k",
            "K",
            "(",
            ")",
            "(?:",
            "(?i)",
            "(?s)",
            "(?m)",
            "(?U)",
            "(?i:",
            "(?-i)",
            "(?P<n>",
            "(?<n>",
            "(?x)",
            "|",
            "*",
            "+",
            "?",
            "*?",
            "{2}",
            "{1,3}",
            "{,2}",
            "{0}",
            "{2,}",
            "{1001}",
            "{1000}",
            "[",
            "]",
            "[^",
            "-",
            "\\",
            "\\d",
            "\\w",
            "\\s",
            "\\b",
            "\\B",
            "\\W",
            "\\D",
            "\\pL",
            "\\p{Greek}",
            "\\PL",
            "\\p{^Lu}",
            "\\pN",
            "\\p{latin}",
            "\\p{Latn}",
            "\\Q",
            "\\E",
            "[:alpha:]",
            "[:^digit:]",
            "[:word:]",
            "^",
            "$",
            ".",
            "\\x{41}",
            "\\x4",
            "\\101",
            "\\0",
            "\\A",
            "\\z",
            "\\C",
            "\\Z",
            "\\1",
            "\\n",
            "\\.",
            "\\_",
            "\\-",
            "\\é",
            "_",
            "1",
            "٣",
            " ",
        ];
        let body: String = if self.chance(500) {
            let n = self.rng.random_range(0..8);
            (0..n).map(|_| *self.pick(PIECES)).collect()
        } else {
            self.well_formed_pattern(2)
        };
        format!("r'{body}'")
    }

    /// A pattern with balanced groups and classes, so most are valid and the match decides.
    fn well_formed_pattern(&mut self, depth: u32) -> String {
        const ATOMS: &[&str] = &[
            "a",
            "é",
            "k",
            "K",
            "ſ",
            "_",
            "1",
            "٣",
            "-",
            " ",
            ".",
            "^",
            "$",
            "\\d",
            "\\w",
            "\\s",
            "\\b",
            "\\B",
            "\\W",
            "\\D",
            "\\S",
            "\\pL",
            "\\p{Greek}",
            "\\PL",
            "\\pN",
            "\\p{Lu}",
            "\\x{E9}",
            "\\141",
            "\\Qa.\\E",
            "\\A",
            "\\z",
            "\\.",
            "\\n",
            "{",
            "}",
            "{,2}",
        ];
        const CLASS_ITEMS: &[&str] = &[
            "a",
            "z",
            "a-z",
            "A-Z",
            "é",
            "k",
            "\\d",
            "\\w",
            "\\s",
            "\\W",
            "[:alpha:]",
            "[:^digit:]",
            "[:word:]",
            "\\pL",
            "\\p{Greek}",
            "-",
            "\\d-z",
            "_",
            "٣",
            "\\x{212A}",
        ];
        const QUANTIFIERS: &[&str] = &["", "", "", "*", "+", "?", "*?", "{2}", "{0,2}", "{1,}"];
        const FLAGS: &[&str] = &["", "", "(?i)", "(?s)", "(?m)", "(?U)", "(?i:", "(?:", "("];
        let n = self.rng.random_range(1..5);
        let mut out = String::new();
        for _ in 0..n {
            let atom = match self.rng.random_range(0..6) {
                0 if depth > 0 => {
                    let open = *self.pick(FLAGS);
                    let inner = self.well_formed_pattern(depth - 1);
                    match open {
                        "(?i:" | "(?:" | "(" => format!("{open}{inner})"),
                        "" => format!("(?:{inner}|{})", self.well_formed_pattern(depth - 1)),
                        flag => format!("{flag}{inner}"),
                    }
                }
                1 => {
                    let neg = if self.chance(300) { "^" } else { "" };
                    let k = self.rng.random_range(1..4);
                    let items: String = (0..k).map(|_| *self.pick(CLASS_ITEMS)).collect();
                    format!("[{neg}{items}]")
                }
                _ => (*self.pick(ATOMS)).to_owned(),
            };
            let q = *self.pick(QUANTIFIERS);
            out.push_str(&atom);
            out.push_str(q);
        }
        out
    }

    /// Numbers of different types compared through `dyn`, near and past 2^53, 2^63, 2^64.
    fn wide_numbers(&mut self) -> String {
        const INTS: &[&str] = &[
            "9007199254740993",
            "9007199254740992",
            "-9007199254740993",
            "9223372036854775807",
            "-0x8000000000000000",
            "9007199254740993u",
            "18446744073709551615u",
            "1",
        ];
        const DOUBLES: &[&str] = &[
            "9007199254740992.0",
            "9007199254740994.0",
            "-9007199254740992.0",
            "9223372036854775808.0",
            "-9223372036854775808.0",
            "18446744073709551616.0",
            "1.0",
            "0.0 / 0.0",
        ];
        let (i, d) = (*self.pick(INTS), *self.pick(DOUBLES));
        match self.rng.random_range(0..6) {
            0 => format!("dyn({i}) == {d}"),
            1 => format!("dyn({d}) != {i}"),
            2 => format!("dyn({i}) in [{d}]"),
            3 => format!("[dyn({i})] == [{d}]"),
            4 => format!("{{1: dyn({i})}} == {{1: {d}}}"),
            _ => {
                let op = *self.pick(&["<", "<=", ">", ">="]);
                format!("dyn({i}) {op} {d}")
            }
        }
    }

    /// Expressions at cel-go's depth limits: nested lists (the grammar's limit), index and
    /// arithmetic chains and ternaries (the visitor's count), and their mixtures.
    fn near_the_depth_limits(&mut self) -> String {
        let near = |g: &mut Self| g.rng.random_range(240..256usize);
        match self.rng.random_range(0..5) {
            0 => {
                let (a, b) = (
                    self.rng.random_range(150..252usize),
                    self.rng.random_range(150..252usize),
                );
                let b = b.min(a);
                format!(
                    "dyn({}1{}){} == 1",
                    "[".repeat(a),
                    "]".repeat(a),
                    "[0]".repeat(b)
                )
            }
            1 => format!("dyn([]){} == 1", "[0]".repeat(near(self))),
            2 => format!("{} > 0", vec!["1"; near(self)].join(" + ")),
            3 => {
                let n = near(self);
                format!("{}true{}", "1 > 0 ? ".repeat(n), " : false".repeat(n))
            }
            _ => {
                let n = self.rng.random_range(115..130usize);
                format!("[[0]].all(x, x.all(y, {}1 > 0))", "y + ".repeat(n))
            }
        }
    }

    /// Timestamps parsed from text Go's RFC 3339 layout takes or refuses, compared,
    /// subtracted, shifted and printed (cel-go prints a timestamp at the offset it was written
    /// with, through arithmetic too).
    fn timestamps(&mut self) -> String {
        const TEXTS: &[&str] = &[
            "2024-01-01T00:00:00Z",
            "2024-01-01T00:00:00.5Z",
            "2024-01-01T00:00:00.123456789123Z",
            "2024-01-01T00:00:00+02:00",
            "2024-01-01T00:00:00-00:00",
            "2024-01-01T00:00:00.250+05:30",
            "2024-06-30T23:30:00-09:45",
            "0001-01-01T00:59:00+00:59",
            "2024-02-29T23:59:59Z",
            "2023-02-29T00:00:00Z",
            "2024-01-01t00:00:00z",
            "2024-01-01 00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T23:59:60Z",
            "2024-01-01T00:00:00+24:00",
            "2024-01-01T00:00:00.Z",
            "2024-1-1T00:00:00Z",
            "0001-01-01T00:00:00Z",
            "0000-01-01T00:00:00Z",
            "9999-12-31T23:59:59.999999999Z",
            "10000-01-01T00:00:00Z",
        ];
        const SHIFTS: &[&str] = &["1h", "-90m", "1.5s", "0s", "-24h"];
        let (a, b) = (*self.pick(TEXTS), *self.pick(TEXTS));
        let shift = *self.pick(SHIFTS);
        let tail = a.get(a.len().saturating_sub(6)..).unwrap_or(a);
        match self.rng.random_range(0..6) {
            0 => format!("timestamp('{a}') < timestamp('{b}')"),
            1 => format!("timestamp('{a}') == timestamp('{b}')"),
            2 => format!("timestamp('{a}') - timestamp('{b}') > duration('0s')"),
            // Printed back as written, or not (`-00:00` prints `Z`, digits past nine dropped).
            3 => format!("string(timestamp('{a}')) == '{a}'"),
            // The offset through arithmetic.
            4 => format!("string(timestamp('{a}') + duration('{shift}')).endsWith('{tail}')"),
            _ => format!("string(timestamp('{a}') - duration('{shift}')) == '{b}'"),
        }
    }

    /// A whole expression of the environment's type around one `matches()` call.
    pub fn regex_case(&mut self) -> String {
        let call = format!("{}.matches({})", self.subject(), self.pattern());
        match self.env {
            Env::Trigger => call,
            Env::Ranking => format!("{call} ? 1.0 : 0.0"),
        }
    }

    /// A string for a pattern to match: ASCII and non-ASCII letters, digits, case pairs.
    fn subject(&mut self) -> String {
        const PIECES: &[&str] = &[
            "a", "b", "A", "é", "K", "ſ", "k", "_", "-", "1", "٣", " ", "\\n", "x{", "{2}", "αβ",
            "aé", "[", "\\\\",
        ];
        let n = self.rng.random_range(0..6);
        let body: String = (0..n).map(|_| *self.pick(PIECES)).collect();
        format!("'{body}'")
    }

    fn numeric(&mut self) -> Ty {
        *self.pick(&[Ty::Int, Ty::Uint, Ty::Double])
    }

    fn comparable(&mut self) -> Ty {
        *self.pick(&[
            Ty::Int,
            Ty::Uint,
            Ty::Double,
            Ty::Str,
            Ty::Duration,
            Ty::Bool,
        ])
    }

    fn bool_form(&mut self, d: u32) -> String {
        match self.rng.random_range(0..22) {
            0..=3 if self.chance(200) => self.wide_numbers(),
            0..=3 if self.chance(150) => self.timestamps(),
            0..=3 if self.chance(40) => self.near_the_depth_limits(),
            0..=3 => {
                let t = self.comparable();
                let op = *self.pick(&["<", "<=", ">", ">=", "==", "!="]);
                format!("{} {op} {}", self.expr(t, d), self.expr(t, d))
            }
            4 => format!("{} && {}", self.expr(Ty::Bool, d), self.expr(Ty::Bool, d)),
            5 => format!("{} || {}", self.expr(Ty::Bool, d), self.expr(Ty::Bool, d)),
            6 => {
                let bangs = "!".repeat(self.rng.random_range(1..4));
                format!("{bangs}{}", self.paren(Ty::Bool, d))
            }
            7 => format!(
                "{} in {}",
                self.expr(Ty::Int, d),
                self.expr(Ty::ClassMap, d)
            ),
            8 => format!("{} in {}", self.expr(Ty::Int, d), self.expr(Ty::ListInt, d)),
            9 if self.chance(500) => format!("{}.matches({})", self.subject(), self.pattern()),
            9 => {
                let f = *self.pick(&["startsWith", "endsWith", "contains", "matches"]);
                format!("{}.{f}({})", self.paren(Ty::Str, d), self.expr(Ty::Str, d))
            }
            10 => {
                let m = *self.pick(&["all", "exists", "exists_one"]);
                let (list, elem) = self.some_list(d);
                self.macro_call(&list, m, elem, Ty::Bool, d)
            }
            11 => format!(
                "{}.all(k, {}[k] >= 0.0)",
                self.paren(Ty::ClassMap, d),
                self.paren(Ty::ClassMap, d)
            ),
            12 => format!("{}.hasValue()", self.paren(Ty::OptUint, d)),
            13 => format!("bool({})", self.expr(Ty::Str, d)),
            14 => {
                let t = *self.pick(&ALL);
                let name = *self.pick(&[
                    "double",
                    "int",
                    "uint",
                    "string",
                    "bool",
                    "list",
                    "map",
                    "google.protobuf.Duration",
                    "optional_type",
                    "null_type",
                    "type",
                ]);
                format!("type({}) == {name}", self.expr(t, d))
            }
            15 => format!(
                "size({}) == {}",
                self.expr(Ty::Str, d),
                self.expr(Ty::Int, d)
            ),
            16 => format!(
                "{} == {}",
                self.expr(Ty::OptUint, d),
                self.expr(Ty::OptUint, d)
            ),
            17 => format!("{}.orValue(false)", self.opt_of(Ty::Bool, d)),
            18 => {
                // Two-variable comprehensions, cel.bind and the other macros Talos lacks.
                let s = *self.pick(&[
                    "[1, 2].all(i, v, v > 0)",
                    "[1, 2].exists(i, v, v > i)",
                    "cel.bind(x, 1, x > 0)",
                    "[1, 2].transformList(i, v, v * 2) == [2, 4]",
                    "{1: 2}.transformMap(k, v, v + 1) == {1: 3}",
                    "[1].existsOne(x, x == 1)",
                    "size([1, 2].transformMapEntry(i, v, {v: i})) == 2",
                    "cel.block([1], cel.index(0) == 1)",
                ]);
                s.to_owned()
            }
            19 => {
                let other = *self.pick(&ALL);
                format!("{} == {}", self.expr(Ty::Dyn, d), self.expr(other, d))
            }
            20 => {
                let t = *self.pick(&[Ty::ListInt, Ty::ListStr]);
                format!("{} == {}", self.expr(t, d), self.expr(t, d))
            }
            _ => format!("has({}.foo)", self.paren(Ty::ClassMap, d)),
        }
    }

    fn arith(&mut self, ty: Ty, d: u32) -> String {
        let op = *self.pick(&["+", "-", "*", "/", "%"]);
        if op == "%" && ty == Ty::Double {
            return format!("{} + {}", self.expr(ty, d), self.expr(ty, d));
        }
        format!("{} {op} {}", self.paren(ty, d), self.paren(ty, d))
    }

    fn paren(&mut self, ty: Ty, d: u32) -> String {
        format!("({})", self.expr(ty, d))
    }

    fn int_form(&mut self, d: u32) -> String {
        match self.rng.random_range(0..12) {
            0..=2 => self.arith(Ty::Int, d),
            3 => {
                let dashes = "-".repeat(self.rng.random_range(1..4));
                format!("{dashes}{}", self.paren(Ty::Int, d))
            }
            4 => {
                let from = *self.pick(&[Ty::Double, Ty::Uint, Ty::Str, Ty::Duration, Ty::Int]);
                format!("int({})", self.expr(from, d))
            }
            5 => {
                let t = *self.pick(&[Ty::Str, Ty::ListInt, Ty::ClassMap, Ty::ListStr]);
                format!("size({})", self.expr(t, d))
            }
            6 => format!("{}.getSeconds()", self.paren(Ty::Duration, d)),
            7 => format!("{}[{}]", self.paren(Ty::ListInt, d), self.expr(Ty::Int, d)),
            8 => format!("{}.orValue(0)", self.opt_of(Ty::Int, d)),
            9 => format!("{}.getMilliseconds()", self.paren(Ty::Duration, d)),
            10 => format!("{}.size()", self.paren(Ty::ListInt, d)),
            _ => {
                let dashes = "-".repeat(self.rng.random_range(1..4));
                format!("{dashes}{}", self.leaf(Ty::Int))
            }
        }
    }

    fn uint_form(&mut self, d: u32) -> String {
        match self.rng.random_range(0..7) {
            0..=2 => self.arith(Ty::Uint, d),
            3 => {
                let from = *self.pick(&[Ty::Double, Ty::Int, Ty::Str, Ty::Uint]);
                format!("uint({})", self.expr(from, d))
            }
            4 => format!(
                "{}.orValue({})",
                self.paren(Ty::OptUint, d),
                self.expr(Ty::Uint, d)
            ),
            5 => format!("{}.value()", self.paren(Ty::OptUint, d)),
            _ => format!("optional.unwrap([{}])[0]", self.expr(Ty::OptUint, d)),
        }
    }

    fn double_form(&mut self, d: u32) -> String {
        match self.rng.random_range(0..14) {
            0..=3 => self.arith(Ty::Double, d),
            4 => {
                let dashes = "-".repeat(self.rng.random_range(1..3));
                format!("{dashes}{}", self.paren(Ty::Double, d))
            }
            5 => {
                let from = *self.pick(&[Ty::Int, Ty::Uint, Ty::Str, Ty::Double]);
                format!("double({})", self.expr(from, d))
            }
            6 => format!("{}[{}]", self.paren(Ty::ClassMap, d), self.expr(Ty::Int, d)),
            7 if self.env == Env::Trigger => format!(
                "multiply_qos_vectors({}, {})",
                self.expr(Ty::ClassMap, d),
                self.expr(Ty::ClassMap, d)
            ),
            8 => format!("double({})", self.expr(Ty::Uint, d)),
            9 => format!("{}.orValue(0.0)", self.paren(Ty::OptDouble, d)),
            10 => format!(
                "{}[?{}].orValue(1.0)",
                self.paren(Ty::ClassMap, d),
                self.expr(Ty::Int, d)
            ),
            11 => format!("{}.first().orValue(-1.0)", self.paren(Ty::ListDouble, d)),
            12 => format!("{}.last().orValue(2.0)", self.paren(Ty::ListDouble, d)),
            _ => format!("double({}.orValue(0u))", self.paren(Ty::OptUint, d)),
        }
    }

    fn str_form(&mut self, d: u32) -> String {
        match self.rng.random_range(0..5) {
            0 => format!("{} + {}", self.expr(Ty::Str, d), self.expr(Ty::Str, d)),
            1 => {
                let from = *self.pick(&[
                    Ty::Int,
                    Ty::Uint,
                    Ty::Double,
                    Ty::Bool,
                    Ty::Duration,
                    Ty::Str,
                ]);
                format!("string({})", self.expr(from, d))
            }
            2 => format!("{}[{}]", self.paren(Ty::ListStr, d), self.expr(Ty::Int, d)),
            3 => format!("{}.orValue('none')", self.opt_of(Ty::Str, d)),
            _ => format!("string({})", self.leaf(Ty::Double)),
        }
    }

    fn duration_form(&mut self, d: u32) -> String {
        match self.rng.random_range(0..5) {
            0 | 1 => {
                let op = *self.pick(&["+", "-"]);
                format!(
                    "{} {op} {}",
                    self.expr(Ty::Duration, d),
                    self.expr(Ty::Duration, d)
                )
            }
            2 => format!("duration({})", self.expr(Ty::Str, d)),
            3 => format!("duration({})", self.expr(Ty::Duration, d)),
            _ => format!("-{}", self.paren(Ty::Duration, d)),
        }
    }

    fn map_form(&mut self, d: u32) -> String {
        match self.rng.random_range(0..3) {
            0 => {
                let n = self.rng.random_range(1..4);
                let entries: Vec<String> = (0..n)
                    .map(|i| format!("{}: {}", CLASSES[(i * 2) % 5], self.expr(Ty::Double, d)))
                    .collect();
                format!("{{{}}}", entries.join(", "))
            }
            1 => format!(
                "{{{}: {}, {}: {}}}",
                self.expr(Ty::Int, d),
                self.expr(Ty::Double, d),
                self.expr(Ty::Int, d),
                self.expr(Ty::Double, d)
            ),
            _ => format!(
                "{{System: {}, Podruntime: {}}}",
                self.leaf(Ty::Int),
                self.leaf(Ty::Double)
            ),
        }
    }

    fn elem(ty: Ty) -> Ty {
        match ty {
            Ty::ListInt => Ty::Int,
            Ty::ListDouble => Ty::Double,
            _ => Ty::Str,
        }
    }

    fn some_list(&mut self, d: u32) -> (String, Ty) {
        let ty = *self.pick(&[Ty::ListInt, Ty::ListDouble, Ty::ListStr]);
        (self.paren(ty, d), Self::elem(ty))
    }

    fn macro_call(&mut self, list: &str, name: &str, elem: Ty, body: Ty, d: u32) -> String {
        let var = *self.pick(&["x", "y", "v"]);
        self.scope.push((var.to_owned(), elem));
        let body = self.expr(body, d);
        self.scope.pop();
        format!("{list}.{name}({var}, {body})")
    }

    fn list_form(&mut self, ty: Ty, d: u32) -> String {
        let elem = Self::elem(ty);
        match self.rng.random_range(0..5) {
            0 | 1 => {
                let n = self.rng.random_range(0..4);
                let items: Vec<String> = (0..n).map(|_| self.expr(elem, d)).collect();
                format!("[{}]", items.join(", "))
            }
            2 => {
                let (list, from) = self.some_list(d);
                self.macro_call(&list, "map", from, elem, d)
            }
            3 => {
                let list = self.paren(ty, d);
                self.macro_call(&list, "filter", elem, Ty::Bool, d)
            }
            _ => format!("{} + {}", self.expr(ty, d), self.expr(ty, d)),
        }
    }

    /// An `optional(T)` for any T.
    fn opt_of(&mut self, inner: Ty, d: u32) -> String {
        match self.rng.random_range(0..5) {
            0 => format!("optional.of({})", self.expr(inner, d)),
            1 => "optional.none()".to_owned(),
            2 => format!("optional.ofNonZeroValue({})", self.expr(inner, d)),
            3 => {
                let list = match inner {
                    Ty::Int => Ty::ListInt,
                    Ty::Double => Ty::ListDouble,
                    _ => Ty::ListStr,
                };
                format!("{}.first()", self.paren(list, d))
            }
            _ => format!("[{}][?{}]", self.expr(inner, d), self.expr(Ty::Int, d)),
        }
    }

    fn opt_form(&mut self, ty: Ty, d: u32) -> String {
        let inner = if ty == Ty::OptUint {
            Ty::Uint
        } else {
            Ty::Double
        };
        match self.rng.random_range(0..4) {
            0 => format!("{}.or({})", self.paren(ty, d), self.expr(ty, d)),
            1 => format!(
                "{}.optMap(z, z {} z)",
                self.paren(ty, d),
                self.pick(&["+", "*", "-"])
            ),
            2 => format!("{}.unwrapOpt()[0]", format_args!("[{}]", self.expr(ty, d))),
            _ => self.opt_of(inner, d),
        }
    }
}

/// A whole expression for the environment, of its output type most of the time.
pub fn top(g: &mut Gen<'_>, depth: u32) -> String {
    let want = match g.env {
        Env::Trigger => Ty::Bool,
        Env::Ranking => Ty::Double,
    };
    g.expr(want, depth)
}
