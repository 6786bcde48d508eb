//! Evaluation as cel-go's runtime does, where `cel-core`'s differs.
//!
//! `cel-core` evaluates the checked tree; its builtins cannot be replaced, so [`prepare`]
//! rewrites the few constructs whose cel-go meaning differs into calls of functions defined
//! here (registered by [`register`]), after checking and before the program is built:
//!
//! - `int(duration)` (nanoseconds), `bool(string)` as Go's `strconv.ParseBool`,
//!   `duration(string)` as Go's `time.ParseDuration`, `string(double)` as Go's `%g`,
//!   `string(duration)` as cel-go's seconds text;
//! - duration `+`/`-` overflowing Go's int64 nanoseconds is an error (`integer overflow`);
//! - map literals: the last of two equal keys wins and `1`/`1u` are distinct keys.
//!
//! Where the argument's checked type is `dyn`, the call is wrapped so the value's runtime type
//! decides: `cel.bind(@v, x, @special(@v) ? @cel_go(@v) : builtin(@v))`.

use std::sync::Arc;

use cel_core::{
    Env, EvalError as CelEvalError, EvalErrorKind, Expr, FunctionDecl, ListElement, MapKey,
    OverloadDecl, SpannedExpr, Value, ValueMap,
};

use crate::check::types::Type;

const NS_PER_SECOND: i64 = 1_000_000_000;
/// Go's zero `time.Time`, 0001-01-01T00:00:00Z, in seconds from the Unix epoch.
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

fn error(kind: EvalErrorKind, message: impl Into<String>) -> Value {
    Value::Error(Arc::new(CelEvalError::new(kind, message)))
}

fn conversion_error(from: &str, to: &str) -> Value {
    error(
        EvalErrorKind::InvalidConversion,
        format!("type conversion error from '{from}' to '{to}'"),
    )
}

fn overflow() -> Value {
    error(EvalErrorKind::Overflow, "integer overflow")
}

/// A conversion whose cel-go meaning differs for one argument type.
struct Special {
    /// The CEL function (`int`, `string` …).
    function: &'static str,
    /// A receiver call (`d.getMilliseconds()`), not a global one.
    member: bool,
    /// The argument type cel-go treats differently.
    applies: fn(&Type) -> bool,
    /// Whether a runtime value is of that type.
    matches: fn(&Value) -> bool,
    /// cel-go's conversion.
    convert: fn(&Value) -> Value,
}

/// Go's `Duration.Hours()`/`Minutes()`/`Seconds()`: whole units plus the remainder as a
/// fraction, in float64; cel-go truncates that to an int (`Int(d.Seconds())`).
#[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
fn go_duration_units(ns: i64, unit: i64) -> i64 {
    let whole = ns / unit;
    let rest = ns % unit;
    (whole as f64 + rest as f64 / unit as f64) as i64
}

const SPECIALS: [Special; 12] = [
    Special {
        member: true,
        function: "getHours",
        applies: |t| *t == Type::Duration,
        matches: |v| matches!(v, Value::Duration(_)),
        convert: |v| match v {
            Value::Duration(d) => {
                Value::Int(go_duration_units(d.to_nanos(), 3_600 * NS_PER_SECOND))
            }
            _ => error(EvalErrorKind::NoMatchingOverload, "no such overload"),
        },
    },
    Special {
        member: true,
        function: "getMinutes",
        applies: |t| *t == Type::Duration,
        matches: |v| matches!(v, Value::Duration(_)),
        convert: |v| match v {
            Value::Duration(d) => Value::Int(go_duration_units(d.to_nanos(), 60 * NS_PER_SECOND)),
            _ => error(EvalErrorKind::NoMatchingOverload, "no such overload"),
        },
    },
    Special {
        member: true,
        function: "getSeconds",
        applies: |t| *t == Type::Duration,
        matches: |v| matches!(v, Value::Duration(_)),
        convert: |v| match v {
            Value::Duration(d) => Value::Int(go_duration_units(d.to_nanos(), NS_PER_SECOND)),
            _ => error(EvalErrorKind::NoMatchingOverload, "no such overload"),
        },
    },
    Special {
        member: false,
        function: "double",
        applies: |t| *t == Type::String,
        matches: |v| matches!(v, Value::String(_)),
        convert: |v| match v {
            Value::String(s) => go_parse_float(s)
                .map_or_else(|| conversion_error("string", "double"), Value::Double),
            _ => conversion_error("dyn", "double"),
        },
    },
    // Go's `time.Parse(time.RFC3339, …)` with its strict checks, then cel-go's year range.
    Special {
        member: false,
        function: "timestamp",
        applies: |t| *t == Type::String,
        matches: |v| matches!(v, Value::String(_)),
        convert: |v| match v {
            Value::String(s) => go_timestamp(s),
            _ => conversion_error("dyn", "google.protobuf.Timestamp"),
        },
    },
    // Go's `strconv.ParseUint` takes no sign at all (`uint('+1')` is an error).
    Special {
        member: false,
        function: "uint",
        applies: |t| *t == Type::String,
        matches: |v| matches!(v, Value::String(_)),
        convert: |v| match v {
            Value::String(s) if s.bytes().all(|b| b.is_ascii_digit()) => s
                .parse::<u64>()
                .map_or_else(|_| conversion_error("string", "uint"), Value::UInt),
            _ => conversion_error("string", "uint"),
        },
    },
    Special {
        member: false,
        function: "int",
        applies: |t| *t == Type::Duration,
        matches: |v| matches!(v, Value::Duration(_)),
        convert: |v| match v {
            Value::Duration(d) => Value::Int(d.to_nanos()),
            _ => conversion_error("dyn", "int"),
        },
    },
    Special {
        member: false,
        function: "bool",
        applies: |t| *t == Type::String,
        matches: |v| matches!(v, Value::String(_)),
        convert: |v| match v {
            Value::String(s) => {
                go_parse_bool(s).map_or_else(|| conversion_error("string", "bool"), Value::Bool)
            }
            _ => conversion_error("dyn", "bool"),
        },
    },
    Special {
        member: false,
        function: "duration",
        applies: |t| *t == Type::String,
        matches: |v| matches!(v, Value::String(_)),
        convert: |v| match v {
            Value::String(s) => go_parse_duration(s).map_or_else(
                || conversion_error("string", "google.protobuf.Duration"),
                |ns| Value::Duration(cel_core::Duration::from_nanos(ns)),
            ),
            _ => conversion_error("dyn", "google.protobuf.Duration"),
        },
    },
    Special {
        member: false,
        function: "string",
        applies: |t| *t == Type::Double,
        matches: |v| matches!(v, Value::Double(_)),
        convert: |v| match v {
            Value::Double(d) => Value::String(Arc::from(go_format_g(*d))),
            _ => conversion_error("dyn", "string"),
        },
    },
    Special {
        member: false,
        function: "string",
        applies: |t| *t == Type::Duration,
        matches: |v| matches!(v, Value::Duration(_)),
        convert: |v| match v {
            Value::Duration(d) => Value::String(Arc::from(duration_text(d.to_nanos()))),
            _ => conversion_error("dyn", "string"),
        },
    },
    // cel-go: the whole duration in milliseconds (Go's `d.Milliseconds()`), not a component.
    Special {
        member: true,
        function: "getMilliseconds",
        applies: |t| *t == Type::Duration,
        matches: |v| matches!(v, Value::Duration(_)),
        convert: |v| match v {
            Value::Duration(d) => Value::Int(d.to_nanos() / 1_000_000),
            _ => error(EvalErrorKind::NoMatchingOverload, "no such overload"),
        },
    },
];

fn special_name(i: usize, what: &str) -> String {
    format!("@oomwarden.{what}{i}")
}

/// Registers the functions [`prepare`] calls.
#[allow(
    clippy::too_many_lines,
    reason = "a table of the functions the rewrites call"
)]
pub(crate) fn register(env: &mut Env) {
    for (i, special) in SPECIALS.iter().enumerate() {
        let matches = special.matches;
        let convert = special.convert;
        env.add_function(
            FunctionDecl::new(special_name(i, "is")).with_overload(
                OverloadDecl::function(special_name(i, "is"), dyns(1), cel_core::CelType::Bool)
                    .with_impl(move |args: &[Value]| {
                        Value::Bool(args.first().is_some_and(matches))
                    }),
            ),
        );
        env.add_function(
            FunctionDecl::new(special_name(i, "to")).with_overload(
                OverloadDecl::function(special_name(i, "to"), dyns(1), cel_core::CelType::Dyn)
                    .with_impl(move |args: &[Value]| match args.first() {
                        Some(v) => convert(v),
                        None => error(EvalErrorKind::NoMatchingOverload, "no such overload"),
                    }),
            ),
        );
    }
    // (name, arity counting the receiver, member, implementation)
    let simple: [Builtin; 27] = [
        // Any ordering comparison with NaN is false in cel-go, an error in cel-core.
        ("@oomwarden.unordered", 2, false, |a| {
            Value::Bool(
                a.iter()
                    .any(|v| matches!(v, Value::Double(d) if d.is_nan())),
            )
        }),
        // `k in map` with a key no map can hold is false in cel-go, an error in cel-core.
        ("@oomwarden.unusable_key", 2, false, |a| {
            Value::Bool(match a {
                [key, Value::Map(_)] => {
                    MapKey::from_value(key).is_none() && !matches!(key, Value::Double(_))
                }
                _ => false,
            })
        }),
        ("@oomwarden.is_duration", 1, false, |a| {
            Value::Bool(matches!(a.first(), Some(Value::Duration(_))))
        }),
        ("@oomwarden.negate_duration", 1, false, |a| {
            match a.first() {
                Some(Value::Duration(d)) => {
                    d.to_nanos().checked_neg().map_or_else(overflow, |ns| {
                        Value::Duration(cel_core::Duration::from_nanos(ns))
                    })
                }
                _ => error(EvalErrorKind::NoMatchingOverload, "no such overload"),
            }
        }),
        ("@oomwarden.is_none", 1, false, |a| {
            Value::Bool(matches!(a.first(), Some(Value::Optional(o)) if o.as_value().is_none()))
        }),
        ("@oomwarden.has_value", 1, false, |a| {
            Value::Bool(matches!(a.first(), Some(Value::Optional(o)) if o.as_value().is_some()))
        }),
        ("@oomwarden.map", 1, false, build_map),
        ("@oomwarden.ordered_map", 1, false, |a| {
            // An empty literal has nothing for cel-go to check. The first key's value is the
            // last one written to it (`{G: 1.0, G: duration('1s')}` holds a duration).
            let first_is_double = match a.first() {
                Some(Value::List(items)) => match items.first() {
                    None => true,
                    Some(first_key) => {
                        let value = items
                            .chunks(2)
                            .rev()
                            .filter(|kv| kv.first() == Some(first_key))
                            .find_map(|kv| kv.get(1));
                        matches!(value, Some(Value::Double(_)))
                    }
                },
                _ => false,
            };
            match build_map(a) {
                err @ Value::Error(_) => err,
                map => Value::List(Arc::from(vec![map, Value::Bool(first_is_double)])),
            }
        }),
        ("@oomwarden.list_index", 2, false, guard_list_index),
        ("@oomwarden.chained_index", 2, false, |a| match a {
            // cel-go applies a chain of indexes as qualifiers of one attribute: a qualifier
            // after the first meets an optional as a plain value, not through the optional
            // overloads of `_[_]`.
            [Value::Optional(_), key] => error(
                EvalErrorKind::KeyNotFound,
                format!("no such key: {}", key_text(key)),
            ),
            _ => guard_list_index(a),
        }),
        ("@oomwarden.optional_index", 2, false, optional_index),
        ("@oomwarden.has", 2, false, has_field),
        ("@oomwarden.both_durations", 2, false, |a| {
            Value::Bool(a.iter().all(|v| matches!(v, Value::Duration(_))))
        }),
        ("@oomwarden.both_strings", 2, false, |a| {
            Value::Bool(a.iter().all(|v| matches!(v, Value::String(_))))
        }),
        ("@oomwarden.matches", 2, false, go_matches),
        ("@oomwarden.equal", 2, false, |a| {
            first_error(a).unwrap_or_else(|| match a {
                [x, y] => Value::Bool(go_equal(x, y)),
                _ => error(EvalErrorKind::NoMatchingOverload, "no such overload"),
            })
        }),
        // cel-go's zero values that `cel-core` does not take for zero: a zero duration and
        // Go's zero time (0001-01-01T00:00:00Z), for `optional.ofNonZeroValue`.
        ("@oomwarden.go_zero", 1, false, |a| {
            Value::Bool(match a.first() {
                Some(Value::Duration(d)) => d.to_nanos() == 0,
                Some(Value::Timestamp(t)) => t.seconds == GO_ZERO_TIME_SECONDS && t.nanos == 0,
                _ => false,
            })
        }),
        ("@oomwarden.none", 0, false, |_| {
            Value::Optional(cel_core::OptionalValue::None)
        }),
        ("@oomwarden.is_list", 1, false, |a| {
            Value::Bool(matches!(a.first(), Some(Value::List(_))))
        }),
        ("@oomwarden.in_list", 2, false, |a| {
            first_error(a).unwrap_or_else(|| match a {
                [x, Value::List(items)] => Value::Bool(items.iter().any(|e| go_equal(x, e))),
                _ => error(EvalErrorKind::NoMatchingOverload, "no such overload"),
            })
        }),
        ("@oomwarden.both_durations_or_timestamps", 2, false, |a| {
            Value::Bool(
                a.iter().all(|v| matches!(v, Value::Duration(_)))
                    || a.iter().all(|v| matches!(v, Value::Timestamp(_))),
            )
        }),
        ("@oomwarden.duration_add", 2, false, |a| {
            duration_op(a, i64::checked_add)
        }),
        ("@oomwarden.duration_sub", 2, false, |a| match a {
            [Value::Timestamp(x), Value::Timestamp(y)] => timestamp_difference(x, y),
            _ => duration_op(a, i64::checked_sub),
        }),
        ("first", 1, true, |a| list_end(a, true)),
        ("last", 1, true, |a| list_end(a, false)),
        ("unwrapOpt", 1, true, unwrap_optionals),
        ("optional.unwrap", 1, false, unwrap_optionals),
    ];
    for (name, arity, member, f) in simple {
        let overload = if member {
            OverloadDecl::method(name, dyns(arity), cel_core::CelType::Dyn)
        } else {
            OverloadDecl::function(name, dyns(arity), cel_core::CelType::Dyn)
        };
        env.add_function(FunctionDecl::new(name).with_overload(overload.with_impl(f)));
    }
}

/// A function of ours: name, arity counting the receiver, member or not, implementation.
type Builtin = (&'static str, usize, bool, fn(&[Value]) -> Value);

fn dyns(n: usize) -> Vec<cel_core::CelType> {
    vec![cel_core::CelType::Dyn; n]
}

/// `timestamp(string)` as cel-go reads it: Go's RFC 3339 layout exactly (`T` and `Z` upper
/// case, two-digit fields, a `.` and digits for the fraction, `Z` or `±hh:mm` with hh < 24;
/// no leap second, no 24:00, real dates only), years 0001 to 9999.
fn go_timestamp(text: &str) -> Value {
    let invalid = || {
        error(
            EvalErrorKind::InvalidArgument,
            format!("invalid RFC 3339 timestamp {text:?}"),
        )
    };
    let b = text.as_bytes();
    let num = |from: usize, len: usize| -> Option<u32> {
        let digits = b.get(from..from + len)?;
        digits
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| digits.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) = (
        num(0, 4),
        num(5, 2),
        num(8, 2),
        num(11, 2),
        num(14, 2),
        num(17, 2),
    ) else {
        return invalid();
    };
    if !(at(4, b'-') && at(7, b'-') && at(10, b'T') && at(13, b':') && at(16, b':')) {
        return invalid();
    }
    let mut i = 19;
    let mut nanos: u32 = 0;
    if at(i, b'.') {
        let digits = b
            .get(i + 1..)
            .map_or(0, |r| r.iter().take_while(|d| d.is_ascii_digit()).count());
        if digits == 0 {
            return invalid();
        }
        // Nanoseconds: the first nine digits, the rest dropped (Go's parseNanoseconds).
        for k in 0..9 {
            let d = if k < digits {
                b.get(i + 1 + k).map_or(0, |d| u32::from(d - b'0'))
            } else {
                0
            };
            nanos = nanos * 10 + d;
        }
        i += 1 + digits;
    }
    let offset_seconds: i64 = match b.get(i) {
        Some(b'Z') if b.len() == i + 1 => 0,
        Some(&sign @ (b'+' | b'-')) if b.len() == i + 6 && at(i + 3, b':') => {
            let (Some(h), Some(m)) = (num(i + 1, 2), num(i + 4, 2)) else {
                return invalid();
            };
            if h >= 24 || m >= 60 {
                return invalid();
            }
            let s = i64::from(h * 3600 + m * 60);
            if sign == b'-' { -s } else { s }
        }
        _ => return invalid(),
    };
    let Some(date) = chrono::NaiveDate::from_ymd_opt(i32::try_from(year).unwrap_or(0), month, day)
    else {
        return conversion_error("string", "google.protobuf.Timestamp");
    };
    if hour > 23 || minute > 59 || second > 59 {
        return invalid();
    }
    let Some(time) = chrono::NaiveTime::from_hms_nano_opt(hour, minute, second, nanos) else {
        return invalid();
    };
    let seconds = date.and_time(time).and_utc().timestamp() - offset_seconds;
    // cel-go's range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z.
    if !(-62_135_596_800..=253_402_300_799).contains(&seconds) {
        return error(EvalErrorKind::Overflow, "timestamp overflow");
    }
    // The offset is kept, as a Go time keeps its zone: `string()` prints it.
    Value::Timestamp(
        cel_core::Timestamp::new(seconds, i32::try_from(nanos).unwrap_or(0))
            .with_offset(i32::try_from(offset_seconds).unwrap_or(0)),
    )
}

/// cel-go's `==`: numbers of different types compare as doubles (an int or uint converted to
/// float64, so `9007199254740993 == 9007199254740992.0` holds, where `cel-core` requires the
/// conversion to be exact), lists and maps element by element with the same rule.
#[allow(clippy::cast_precision_loss, reason = "cel-go converts exactly so")]
fn go_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Int(i), Value::Double(d)) | (Value::Double(d), Value::Int(i)) => *i as f64 == *d,
        (Value::UInt(u), Value::Double(d)) | (Value::Double(d), Value::UInt(u)) => *u as f64 == *d,
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| go_equal(a, b))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter().all(|(k, v)| {
                    y.get_with_numeric_coercion(k)
                        .is_some_and(|w| go_equal(v, w))
                })
        }
        (Value::Optional(x), Value::Optional(y)) => match (x.as_value(), y.as_value()) {
            (Some(a), Some(b)) => go_equal(a, b),
            (None, None) => true,
            _ => false,
        },
        _ => a == b,
    }
}

/// The first error among `args`, as cel-go's operators hand it on.
fn first_error(args: &[Value]) -> Option<Value> {
    args.iter().find(|v| matches!(v, Value::Error(_))).cloned()
}

/// `matches()` with Go's regexp dialect; a pattern Go refuses is an error with Go's text.
fn go_matches(args: &[Value]) -> Value {
    match args {
        [Value::String(s), Value::String(pattern)] => match &*crate::patterns::get(pattern) {
            Ok(re) => Value::Bool(re.is_match(s)),
            Err(e) => error(EvalErrorKind::InvalidArgument, e.to_string()),
        },
        _ => error(EvalErrorKind::NoMatchingOverload, "no such overload"),
    }
}

/// `t1 - t2` as cel-go computes it: Go's `Time.Sub` in int64 nanoseconds, an overflow past
/// about 292 years.
fn timestamp_difference(x: &cel_core::Timestamp, y: &cel_core::Timestamp) -> Value {
    let ns = |t: &cel_core::Timestamp| {
        i128::from(t.seconds) * i128::from(NS_PER_SECOND) + i128::from(t.nanos)
    };
    i64::try_from(ns(x) - ns(y)).map_or_else(
        |_| overflow(),
        |d| Value::Duration(cel_core::Duration::from_nanos(d)),
    )
}

fn duration_op(args: &[Value], op: fn(i64, i64) -> Option<i64>) -> Value {
    match args {
        [Value::Duration(a), Value::Duration(b)] => match op(a.to_nanos(), b.to_nanos()) {
            Some(ns) => Value::Duration(cel_core::Duration::from_nanos(ns)),
            None => overflow(),
        },
        _ => error(EvalErrorKind::NoMatchingOverload, "no such overload"),
    }
}

fn list_end(args: &[Value], first: bool) -> Value {
    match args.first() {
        Some(Value::List(items)) => {
            let item = if first { items.first() } else { items.last() };
            Value::from_option(item.cloned())
        }
        _ => error(EvalErrorKind::NoMatchingOverload, "no such overload"),
    }
}

fn unwrap_optionals(args: &[Value]) -> Value {
    let Some(Value::List(items)) = args.first() else {
        return error(EvalErrorKind::NoMatchingOverload, "no such overload");
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items.iter() {
        match item {
            Value::Optional(o) => {
                if let Some(v) = o.as_value() {
                    out.push(v.clone());
                }
            }
            _ => return error(EvalErrorKind::NoMatchingOverload, "no such overload"),
        }
    }
    Value::List(Arc::from(out))
}

/// A negative index into a list: cel-core counts it from the end, cel-go refuses it.
fn negative_list_index(args: &[Value]) -> Option<String> {
    match args {
        [Value::List(_), Value::Int(i)] if *i < 0 => Some(i.to_string()),
        [Value::List(_), Value::Double(d)] if *d < 0.0 && d.fract() == 0.0 => Some(format!("{d}")),
        _ => None,
    }
}

fn key_text(key: &Value) -> String {
    match key {
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Double(d) => go_format_g(*d),
        Value::String(s) => s.to_string(),
        Value::Bool(b) => b.to_string(),
        other => other.cel_type().display_name(),
    }
}

/// The index itself, or cel-go's error for a negative list index.
fn guard_list_index(args: &[Value]) -> Value {
    // Reached through `dyn`: indexing what is neither a container nor an optional.
    if let [container, key] = args
        && !matches!(
            container,
            Value::List(_) | Value::Map(_) | Value::Optional(_) | Value::Error(_)
        )
    {
        return error(
            EvalErrorKind::KeyNotFound,
            format!("no such key: {}", key_text(key)),
        );
    }
    match negative_list_index(args) {
        Some(i) => error(
            EvalErrorKind::IndexOutOfBounds,
            format!("index out of bounds: {i}"),
        ),
        None => args.get(1).cloned().unwrap_or(Value::Null),
    }
}

/// cel-go's `c[?k]`: a key of a type no qualifier takes is an error; on a list, an integral
/// index (int, uint or double) outside the list is `optional.none()`, a fractional one or a
/// string or bool an error; on a map a missing key (numbers compared across types) is
/// `optional.none()`; on an optional, the same on its value; on anything else, none.
fn optional_index(args: &[Value]) -> Value {
    let [container, key] = args else {
        return error(EvalErrorKind::NoMatchingOverload, "no such overload");
    };
    let none = || Value::Optional(cel_core::OptionalValue::None);
    if matches!(container, Value::Optional(o) if o.as_value().is_none()) {
        return none();
    }
    if !matches!(
        key,
        Value::Int(_) | Value::UInt(_) | Value::Double(_) | Value::String(_) | Value::Bool(_)
    ) {
        return error(
            EvalErrorKind::TypeMismatch,
            format!("invalid qualifier type: {}", key.cel_type().display_name()),
        );
    }
    match container {
        Value::List(items) => {
            #[allow(clippy::cast_possible_truncation)]
            let index: i128 = match key {
                Value::Int(i) => i128::from(*i),
                Value::UInt(u) => i128::from(*u),
                Value::Double(d) if d.fract() == 0.0 && d.abs() < 9.2e18 => *d as i128,
                Value::Double(d) => {
                    return error(
                        EvalErrorKind::InvalidArgument,
                        format!("unsupported index value {} in list", go_format_g(*d)),
                    );
                }
                other => {
                    return error(
                        EvalErrorKind::TypeMismatch,
                        format!(
                            "unsupported index type '{}' in list",
                            other.cel_type().display_name()
                        ),
                    );
                }
            };
            usize::try_from(index)
                .ok()
                .and_then(|i| items.get(i))
                .map_or_else(none, |v| Value::optional_some(v.clone()))
        }
        Value::Map(map) => {
            let keys: Vec<MapKey> = match key {
                #[allow(clippy::cast_possible_truncation)]
                Value::Double(d) if d.fract() == 0.0 && d.abs() < 9.2e18 => {
                    vec![MapKey::Int(*d as i64)]
                }
                other => MapKey::from_value(other).into_iter().collect(),
            };
            keys.iter()
                .find_map(|k| map.get_with_numeric_coercion(k))
                .map_or_else(none, |v| Value::optional_some(v.clone()))
        }
        Value::Optional(o) => match o.as_value() {
            Some(inner) => optional_index(&[inner.clone(), key.clone()]),
            None => none(),
        },
        _ => none(),
    }
}

/// `has(x.f)` once `x` evaluated without error (an error in `x` is the result, as cel-go's).
fn has_field(args: &[Value]) -> Value {
    let [target, Value::String(field)] = args else {
        return error(EvalErrorKind::NoMatchingOverload, "no such overload");
    };
    let key = MapKey::String(Arc::clone(field));
    let present = match target {
        Value::Map(map) => map.contains_key(&key),
        Value::List(_) => {
            return error(
                EvalErrorKind::TypeMismatch,
                "unsupported index type 'string' in list",
            );
        }
        Value::Optional(o) => {
            matches!(o.as_value(), Some(Value::Map(map)) if map.contains_key(&key))
        }
        _ => false,
    };
    Value::Bool(present)
}

/// A map literal from `[k1, v1, k2, v2, …]`: cel-go's map keeps the last of equal keys, and
/// an int and a uint key are different keys.
fn build_map(args: &[Value]) -> Value {
    let Some(Value::List(items)) = args.first() else {
        return error(EvalErrorKind::NoMatchingOverload, "no such overload");
    };
    let mut map = ValueMap::new();
    for pair in items.chunks(2) {
        let [key, value] = pair else {
            return error(EvalErrorKind::Internal, "odd map literal");
        };
        let Some(key) = MapKey::from_value(key) else {
            return error(
                EvalErrorKind::TypeMismatch,
                format!(
                    "unsupported map key type {} (oomwarden keeps int, uint, bool and string keys)",
                    key.cel_type().display_name()
                ),
            );
        };
        map.insert(key, value.clone());
    }
    Value::Map(Arc::new(map))
}

/// Go's `strconv.ParseFloat(s, 64)`: decimal or hexadecimal, `_` between digits, `inf`,
/// `infinity` and `nan` in any case; a finite text out of range is an error (not `±Inf`).
pub(crate) fn go_parse_float(s: &str) -> Option<f64> {
    if !underscores_ok(s) {
        return None;
    }
    let text: String = s.chars().filter(|c| *c != '_').collect();
    let (sign, body) = match text.strip_prefix('-') {
        Some(rest) => (-1.0, rest),
        None => (1.0, text.strip_prefix('+').unwrap_or(&text)),
    };
    let lower = body.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity") {
        return Some(sign * f64::INFINITY);
    }
    if lower == "nan" {
        return Some(f64::NAN);
    }
    let value = if let Some(hex) = lower.strip_prefix("0x") {
        parse_hex_float(hex)?
    } else {
        // Rust takes "inf"/"nan" too; they were handled above, so only numbers remain.
        if lower.contains(['i', 'n']) {
            return None;
        }
        lower.parse::<f64>().ok()?
    };
    value.is_finite().then_some(sign * value)
}

/// Go's `underscoreOK`: `_` only between digits (or after a base prefix).
fn underscores_ok(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let bytes = s.as_bytes();
    let mut saw = b'^';
    let mut i = 0;
    let mut hex = false;
    if let [b'0', p, ..] = bytes
        && matches!(p.to_ascii_lowercase(), b'b' | b'o' | b'x')
    {
        i = 2;
        saw = b'0';
        hex = p.eq_ignore_ascii_case(&b'x');
    }
    for &c in bytes.iter().skip(i) {
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
    }
    saw != b'_'
}

/// `mantissa[.fraction]p[+-]exponent` in hexadecimal (the `0x` already removed).
fn parse_hex_float(s: &str) -> Option<f64> {
    let (mantissa, exponent) = s.split_once('p')?;
    let exponent: i32 = exponent.parse().ok()?;
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut value = 0.0f64;
    for c in int.chars() {
        value = value * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        value += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    Some(value * 2f64.powi(exponent))
}

/// Go's `strconv.ParseBool`.
pub(crate) fn go_parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `time.ParseDuration`, in nanoseconds; `None` where Go returns an error (the model's
/// port of it, shared with the configuration's durations).
pub(crate) fn go_parse_duration(text: &str) -> Option<i64> {
    oomwarden_model::parse_go_duration(text).ok()
}

/// Go's `fmt.Sprintf("%g", d)` (shortest representation, exponent from 1e-4 and 1e6 on).
pub(crate) fn go_format_g(d: f64) -> String {
    if d.is_nan() {
        return "NaN".to_owned();
    }
    if d.is_infinite() {
        return (if d > 0.0 { "+Inf" } else { "-Inf" }).to_owned();
    }
    let sign = if d.is_sign_negative() { "-" } else { "" };
    // Rust's `{:e}` gives the shortest round-trip digits, as Go's shortest formatting does.
    let sci = format!("{:e}", d.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if !(-4..6).contains(&exp) {
        let (head, tail) = digits.split_at(1.min(digits.len()));
        let dot = if tail.is_empty() { "" } else { "." };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{head}{dot}{tail}e{exp_sign}{:02}", exp.abs());
    }
    let len = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    let text = if exp < 0 {
        let zeros = usize::try_from(-exp - 1).unwrap_or(0);
        format!("0.{}{digits}", "0".repeat(zeros))
    } else if exp + 1 >= len {
        let zeros = usize::try_from(exp + 1 - len).unwrap_or(0);
        format!("{digits}{}", "0".repeat(zeros))
    } else {
        let point = usize::try_from(exp + 1).unwrap_or(0);
        let (int, frac) = digits.split_at(point.min(digits.len()));
        format!("{int}.{frac}")
    };
    format!("{sign}{text}")
}

/// cel-go's `string(duration)`: the seconds as Go's `FormatFloat(d.Seconds(), 'f', -1)`.
fn duration_text(ns: i64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let seconds = (ns / NS_PER_SECOND) as f64 + (ns % NS_PER_SECOND) as f64 / 1e9;
    format!("{seconds}s")
}

/// Rewrites the checked tree for evaluation (see the module documentation). `types` holds each node's checked type. Returns the patterns `matches()` is called with as
/// literals, to be compiled with the expression.
pub(crate) fn prepare(
    e: &mut SpannedExpr,
    types: &std::collections::HashMap<i64, Type>,
) -> Vec<String> {
    let mut rewriter = Rewriter {
        types,
        fresh: 0,
        patterns: Vec::new(),
    };
    rewriter.visit(e);
    rewriter.patterns
}

struct Rewriter<'a> {
    types: &'a std::collections::HashMap<i64, Type>,
    fresh: usize,
    /// Literal patterns of `matches()`.
    patterns: Vec<String>,
}

/// Whether `callee` names `namespace.function` (a qualified identifier or a member chain).
fn is_qualified_call(callee: &Expr, namespace: &str, function: &str) -> bool {
    match callee {
        Expr::Ident(name) => name
            .strip_prefix(namespace)
            .and_then(|r| r.strip_prefix('.'))
            .is_some_and(|f| f == function),
        Expr::Member {
            expr,
            field,
            optional: false,
        } => field == function && matches!(&expr.node, Expr::Ident(n) if n == namespace),
        _ => false,
    }
}

/// Whether values of this checked type may be of any type at run time (so `==` may meet an
/// int and a double).
fn has_dyn(t: &Type) -> bool {
    match t {
        Type::Dyn | Type::Any | Type::Param(_) => true,
        Type::List(e) | Type::Wrapper(e) => has_dyn(e),
        Type::Map(k, v) => has_dyn(k) || has_dyn(v),
        Type::Opaque(_, params) => params.iter().any(has_dyn),
        _ => false,
    }
}

fn node(id: i64, span: &std::ops::Range<usize>, expr: Expr) -> SpannedExpr {
    SpannedExpr {
        id,
        node: expr,
        span: span.clone(),
    }
}

fn call(id: i64, span: &std::ops::Range<usize>, name: &str, args: Vec<SpannedExpr>) -> Expr {
    Expr::Call {
        expr: Box::new(node(id, span, Expr::Ident(name.to_owned()))),
        args,
    }
}

impl Rewriter<'_> {
    fn type_of(&self, e: &SpannedExpr) -> Type {
        self.types.get(&e.id).cloned().unwrap_or(Type::Dyn)
    }

    fn fresh_var(&mut self) -> String {
        self.fresh += 1;
        format!("@oomwarden.v{}", self.fresh)
    }

    #[allow(
        clippy::too_many_lines,
        reason = "one arm per cel-go evaluation difference, each documented where it is"
    )]
    fn visit(&mut self, e: &mut SpannedExpr) {
        // Decided on the source tree, before the children are rewritten.
        let chained = matches!(&e.node, Expr::Index { expr, optional: false, .. }
            if matches!(expr.node, Expr::Index { optional: false, .. }));
        for child in crate::tree::children_mut(e) {
            self.visit(child);
        }
        let (id, span) = (e.id, e.span.clone());
        let replacement = match &mut e.node {
            // `multiply_qos_vectors` on a map literal: tell it the literal's first entry (see
            // its documentation in env.rs).
            Expr::Call { expr, args } if matches!(&expr.node, Expr::Ident(n) if n == "multiply_qos_vectors") =>
            {
                for arg in args.iter_mut() {
                    if let Expr::Call { expr: callee, .. } = &mut arg.node
                        && let Expr::Ident(name) = &mut callee.node
                        && name == "@oomwarden.map"
                    {
                        "@oomwarden.ordered_map".clone_into(name);
                    }
                }
                return;
            }
            // cel-go negates a duration reached through `dyn` (the checker refuses `-duration`),
            // with int64 overflow an error.
            Expr::Unary {
                op: cel_core::UnaryOp::Neg,
                expr,
            } if matches!(self.type_of(expr), Type::Dyn | Type::Any | Type::Param(_)) => {
                let operand = std::mem::replace(&mut **expr, node(id, &span, Expr::Null));
                self.bound_choice(
                    id,
                    &span,
                    operand,
                    "@oomwarden.is_duration",
                    |v| call(id, &span, "@oomwarden.negate_duration", vec![v]),
                    |v| Expr::Unary {
                        op: cel_core::UnaryOp::Neg,
                        expr: Box::new(v),
                    },
                )
            }
            // cel-go's `or` and `orValue` do not evaluate their argument when the receiver has
            // a value (`decorateOptionalOr`): `opt.or(x)` is
            // `cel.bind(@v, opt, @has_value(@v) ? @v : @v.or(x))`.
            Expr::Call { expr, args }
                if args.len() == 1
                    && matches!(&expr.node, Expr::Member { field, optional: false, .. } if field == "or" || field == "orValue") =>
            {
                let Expr::Member {
                    expr: receiver,
                    field,
                    ..
                } = &mut expr.node
                else {
                    return;
                };
                let or_value = field == "orValue";
                let receiver = std::mem::replace(&mut **receiver, node(id, &span, Expr::Null));
                let argument = args.remove(0);
                let v = self.fresh_var();
                let ident = || node(id, &span, Expr::Ident(v.clone()));
                let member_call = |name: &str, args: Vec<SpannedExpr>| Expr::Call {
                    expr: Box::new(node(
                        id,
                        &span,
                        Expr::Member {
                            expr: Box::new(ident()),
                            field: name.to_owned(),
                            optional: false,
                        },
                    )),
                    args,
                };
                let present = if or_value {
                    member_call("value", Vec::new())
                } else {
                    Expr::Ident(v.clone())
                };
                let absent = member_call(if or_value { "orValue" } else { "or" }, vec![argument]);
                let choice = Expr::Ternary {
                    cond: Box::new(node(
                        id,
                        &span,
                        call(id, &span, "@oomwarden.has_value", vec![ident()]),
                    )),
                    then_expr: Box::new(node(id, &span, present)),
                    else_expr: Box::new(node(id, &span, absent)),
                };
                Expr::Bind {
                    var_name: v,
                    init: Box::new(receiver),
                    body: Box::new(node(id, &span, choice)),
                }
            }
            // `optional.ofNonZeroValue(x)`: cel-go's zero duration and zero time are zero.
            Expr::Call { expr, args }
                if args.len() == 1
                    && is_qualified_call(&expr.node, "optional", "ofNonZeroValue")
                    && args.first().is_some_and(|a| {
                        matches!(
                            self.type_of(a),
                            Type::Duration
                                | Type::Timestamp
                                | Type::Dyn
                                | Type::Any
                                | Type::Param(_)
                        )
                    }) =>
            {
                let arg = args.remove(0);
                let callee = std::mem::replace(&mut **expr, node(id, &span, Expr::Null));
                self.bound_choice(
                    id,
                    &span,
                    arg,
                    "@oomwarden.go_zero",
                    |_| call(id, &span, "@oomwarden.none", vec![]),
                    |v| Expr::Call {
                        expr: Box::new(callee),
                        args: vec![v],
                    },
                )
            }
            // cel-go compares an int or uint with a double as doubles (`go_equal`).
            Expr::Binary { op, left, right }
                if matches!(op, cel_core::BinaryOp::Eq | cel_core::BinaryOp::Ne)
                    && (has_dyn(&self.type_of(left)) || has_dyn(&self.type_of(right))) =>
            {
                let negate = *op == cel_core::BinaryOp::Ne;
                let l = std::mem::replace(&mut **left, node(id, &span, Expr::Null));
                let r = std::mem::replace(&mut **right, node(id, &span, Expr::Null));
                let equal = call(id, &span, "@oomwarden.equal", vec![l, r]);
                if negate {
                    Expr::Unary {
                        op: cel_core::UnaryOp::Not,
                        expr: Box::new(node(id, &span, equal)),
                    }
                } else {
                    equal
                }
            }
            Expr::Binary {
                op: cel_core::BinaryOp::In,
                left,
                right,
            } if matches!(self.type_of(right), Type::List(_))
                && (has_dyn(&self.type_of(left)) || has_dyn(&self.type_of(right))) =>
            {
                let l = std::mem::replace(&mut **left, node(id, &span, Expr::Null));
                let r = std::mem::replace(&mut **right, node(id, &span, Expr::Null));
                call(id, &span, "@oomwarden.in_list", vec![l, r])
            }
            Expr::Binary {
                op: cel_core::BinaryOp::In,
                left,
                right,
            } if matches!(
                self.type_of(right),
                Type::Map(..) | Type::Dyn | Type::Any | Type::Param(_)
            ) =>
            {
                let key = std::mem::replace(&mut **left, node(id, &span, Expr::Null));
                let container = std::mem::replace(&mut **right, node(id, &span, Expr::Null));
                self.guarded_pair(
                    id,
                    &span,
                    key,
                    container,
                    "@oomwarden.unusable_key",
                    |_| Expr::Bool(false),
                    // A list reached through `dyn` compares as cel-go's `==` (`go_equal`).
                    |a, b| Expr::Ternary {
                        cond: Box::new(node(
                            id,
                            &span,
                            call(id, &span, "@oomwarden.is_list", vec![b.clone()]),
                        )),
                        then_expr: Box::new(node(
                            id,
                            &span,
                            call(id, &span, "@oomwarden.in_list", vec![a.clone(), b.clone()]),
                        )),
                        else_expr: Box::new(node(
                            id,
                            &span,
                            Expr::Binary {
                                op: cel_core::BinaryOp::In,
                                left: Box::new(a),
                                right: Box::new(b),
                            },
                        )),
                    },
                )
            }
            Expr::Binary { op, left, right }
                if matches!(
                    op,
                    cel_core::BinaryOp::Lt
                        | cel_core::BinaryOp::Le
                        | cel_core::BinaryOp::Gt
                        | cel_core::BinaryOp::Ge
                ) && [self.type_of(left), self.type_of(right)].iter().any(|t| {
                    matches!(t, Type::Double | Type::Dyn | Type::Any | Type::Param(_))
                }) =>
            {
                let op = *op;
                let l = std::mem::replace(&mut **left, node(id, &span, Expr::Null));
                let r = std::mem::replace(&mut **right, node(id, &span, Expr::Null));
                self.guarded_pair(
                    id,
                    &span,
                    l,
                    r,
                    "@oomwarden.unordered",
                    |_| Expr::Bool(false),
                    |a, b| Expr::Binary {
                        op,
                        left: Box::new(a),
                        right: Box::new(b),
                    },
                )
            }
            // `matches()` runs Go's regexp dialect, not the `regex` crate's.
            Expr::Call { expr, args }
                if matches!(
                    (&expr.node, args.len()),
                    (Expr::Member { field, optional: false, .. }, 1) if field == "matches"
                ) || matches!(
                    (&expr.node, args.len()),
                    (Expr::Ident(name), 2) if name == "matches"
                ) =>
            {
                let (subject, pattern) = match &mut expr.node {
                    Expr::Member { expr: receiver, .. } => (
                        std::mem::replace(&mut **receiver, node(id, &span, Expr::Null)),
                        args.remove(0),
                    ),
                    _ => {
                        let subject = args.remove(0);
                        (subject, args.remove(0))
                    }
                };
                if let Expr::String(text) = &pattern.node {
                    self.patterns.push(text.to_string());
                }
                let strings = self.type_of(&subject) == Type::String
                    && self.type_of(&pattern) == Type::String;
                if strings {
                    call(id, &span, "@oomwarden.matches", vec![subject, pattern])
                } else {
                    // Reached through `dyn`: a value of another type keeps the builtin's error.
                    self.guarded_pair(
                        id,
                        &span,
                        subject,
                        pattern,
                        "@oomwarden.both_strings",
                        |(a, b)| call(id, &span, "@oomwarden.matches", vec![a, b]),
                        |a, b| call(id, &span, "matches", vec![a, b]),
                    )
                }
            }
            Expr::MemberTestOnly { expr, field } => {
                let target = std::mem::replace(&mut **expr, node(id, &span, Expr::Null));
                let field = node(id, &span, Expr::String(field.clone()));
                call(id, &span, "@oomwarden.has", vec![target, field])
            }
            Expr::Call { expr, args } if args.is_empty() => {
                let Expr::Member {
                    expr: receiver,
                    field: name,
                    optional: false,
                } = &mut expr.node
                else {
                    return;
                };
                let receiver_type = self.type_of(receiver);
                let dynamic = matches!(receiver_type, Type::Dyn | Type::Any | Type::Param(_));
                let Some(i) = SPECIALS.iter().position(|s| {
                    s.member && s.function == name && ((s.applies)(&receiver_type) || dynamic)
                }) else {
                    return;
                };
                let receiver = std::mem::replace(&mut **receiver, node(id, &span, Expr::Null));
                if dynamic {
                    let name = name.clone();
                    self.dispatch_member(id, &span, receiver, &name, i)
                } else {
                    call(id, &span, &special_name(i, "to"), vec![receiver])
                }
            }
            Expr::Call { expr, args } if args.len() == 1 => {
                let Expr::Ident(name) = &expr.node else {
                    return;
                };
                let Some(arg) = args.first() else { return };
                let arg_type = self.type_of(arg);
                let dynamic = matches!(arg_type, Type::Dyn | Type::Any | Type::Param(_));
                let mut found = None;
                for (i, s) in SPECIALS.iter().enumerate() {
                    if !s.member && s.function == name && ((s.applies)(&arg_type) || dynamic) {
                        found = Some(i);
                        if !dynamic {
                            break;
                        }
                    }
                }
                let Some(i) = found else { return };
                let arg = args.remove(0);
                let builtin = name.clone();
                if dynamic {
                    self.dispatch(id, &span, arg, &builtin)
                } else {
                    call(id, &span, &special_name(i, "to"), vec![arg])
                }
            }
            Expr::Binary { op, left, right }
                if matches!(op, cel_core::BinaryOp::Add | cel_core::BinaryOp::Sub) =>
            {
                let (lt, rt) = (self.type_of(left), self.type_of(right));
                let add = *op == cel_core::BinaryOp::Add;
                // Durations added or subtracted, and (subtraction only) timestamps: both are
                // int64 nanoseconds in cel-go, out of range an overflow.
                let maybe = |t: &Type| {
                    matches!(t, Type::Duration | Type::Dyn | Type::Any | Type::Param(_))
                        || (!add && *t == Type::Timestamp)
                };
                if !(maybe(&lt) && maybe(&rt)) {
                    return;
                }
                let name = if add {
                    "@oomwarden.duration_add"
                } else {
                    "@oomwarden.duration_sub"
                };
                let l = std::mem::replace(&mut **left, node(id, &span, Expr::Null));
                let r = std::mem::replace(&mut **right, node(id, &span, Expr::Null));
                let same = |t: Type| lt == t && rt == t;
                if same(Type::Duration) || (!add && same(Type::Timestamp)) {
                    call(id, &span, name, vec![l, r])
                } else {
                    let op = *op;
                    self.guarded_pair(
                        id,
                        &span,
                        l,
                        r,
                        if add {
                            "@oomwarden.both_durations"
                        } else {
                            "@oomwarden.both_durations_or_timestamps"
                        },
                        |(a, b)| call(id, &span, name, vec![a, b]),
                        |a, b| Expr::Binary {
                            op,
                            left: Box::new(a),
                            right: Box::new(b),
                        },
                    )
                }
            }
            Expr::Index {
                expr,
                index,
                optional,
            } => {
                let container_type = self.type_of(expr);
                let optional = *optional;
                let rewrite = matches!(
                    container_type,
                    Type::List(_) | Type::Dyn | Type::Any | Type::Param(_) | Type::Opaque(..)
                );
                if !(rewrite || optional) {
                    return;
                }
                let c = std::mem::replace(&mut **expr, node(id, &span, Expr::Null));
                let i = std::mem::replace(&mut **index, node(id, &span, Expr::Null));
                let (cv, iv) = (self.fresh_var(), self.fresh_var());
                let ident = |n: &str| node(id, &span, Expr::Ident(n.to_owned()));
                let body = if optional {
                    call(
                        id,
                        &span,
                        "@oomwarden.optional_index",
                        vec![ident(&cv), ident(&iv)],
                    )
                } else {
                    let guard = if chained {
                        "@oomwarden.chained_index"
                    } else {
                        "@oomwarden.list_index"
                    };
                    let guarded = call(id, &span, guard, vec![ident(&cv), ident(&iv)]);
                    Expr::Index {
                        expr: Box::new(ident(&cv)),
                        index: Box::new(node(id, &span, guarded)),
                        optional: false,
                    }
                };
                let mut inner = Expr::Bind {
                    var_name: iv,
                    init: Box::new(i),
                    body: Box::new(node(id, &span, body)),
                };
                if !chained {
                    // cel-go does not evaluate the key of an index into `optional.none()`.
                    let none = Expr::Call {
                        expr: Box::new(node(
                            id,
                            &span,
                            Expr::Member {
                                expr: Box::new(ident("optional")),
                                field: "none".to_owned(),
                                optional: false,
                            },
                        )),
                        args: Vec::new(),
                    };
                    let test = call(id, &span, "@oomwarden.is_none", vec![ident(&cv)]);
                    inner = Expr::Ternary {
                        cond: Box::new(node(id, &span, test)),
                        then_expr: Box::new(node(id, &span, none)),
                        else_expr: Box::new(node(id, &span, inner)),
                    };
                }
                Expr::Bind {
                    var_name: cv,
                    init: Box::new(c),
                    body: Box::new(node(id, &span, inner)),
                }
            }
            Expr::Map(entries) if !entries.iter().any(|m| m.optional) => {
                let items = std::mem::take(entries)
                    .into_iter()
                    .flat_map(|m| [m.key, m.value])
                    .map(|expr| ListElement {
                        expr,
                        optional: false,
                    })
                    .collect();
                call(
                    id,
                    &span,
                    "@oomwarden.map",
                    vec![node(id, &span, Expr::List(items))],
                )
            }
            _ => return,
        };
        e.node = replacement;
    }

    /// `cel.bind(@v, arg, @is(@v) ? @to(@v) : builtin(@v))` over every special of `builtin`.
    fn dispatch(
        &mut self,
        id: i64,
        span: &std::ops::Range<usize>,
        arg: SpannedExpr,
        builtin: &str,
    ) -> Expr {
        let v = self.fresh_var();
        let ident = || node(id, span, Expr::Ident(v.clone()));
        let mut body = call(id, span, builtin, vec![ident()]);
        for (i, s) in SPECIALS.iter().enumerate().rev() {
            if s.member || s.function != builtin {
                continue;
            }
            body = special_or(id, span, i, &ident, body);
        }
        Expr::Bind {
            var_name: v,
            init: Box::new(arg),
            body: Box::new(node(id, span, body)),
        }
    }
}

/// `@is(@v) ? @to(@v) : otherwise` for the special conversion `special`.
fn special_or(
    id: i64,
    span: &std::ops::Range<usize>,
    special: usize,
    ident: &dyn Fn() -> SpannedExpr,
    otherwise: Expr,
) -> Expr {
    let apply = |what: &str| {
        node(
            id,
            span,
            call(id, span, &special_name(special, what), vec![ident()]),
        )
    };
    Expr::Ternary {
        cond: Box::new(apply("is")),
        then_expr: Box::new(apply("to")),
        else_expr: Box::new(node(id, span, otherwise)),
    }
}

impl Rewriter<'_> {
    /// `cel.bind(@a, first, cel.bind(@b, second, test(@a, @b) ? then(@a, @b) : otherwise(@a,
    /// @b)))`: both operands evaluated once, in order, then a test of ours picks cel-go's
    /// meaning or cel-core's builtin.
    #[allow(clippy::too_many_arguments)]
    fn guarded_pair(
        &mut self,
        id: i64,
        span: &std::ops::Range<usize>,
        first: SpannedExpr,
        second: SpannedExpr,
        test: &str,
        then: impl FnOnce((SpannedExpr, SpannedExpr)) -> Expr,
        otherwise: impl FnOnce(SpannedExpr, SpannedExpr) -> Expr,
    ) -> Expr {
        let (a, b) = (self.fresh_var(), self.fresh_var());
        let ident = |n: &str| node(id, span, Expr::Ident(n.to_owned()));
        let choice = Expr::Ternary {
            cond: Box::new(node(
                id,
                span,
                call(id, span, test, vec![ident(&a), ident(&b)]),
            )),
            then_expr: Box::new(node(id, span, then((ident(&a), ident(&b))))),
            else_expr: Box::new(node(id, span, otherwise(ident(&a), ident(&b)))),
        };
        let inner = Expr::Bind {
            var_name: b,
            init: Box::new(second),
            body: Box::new(node(id, span, choice)),
        };
        Expr::Bind {
            var_name: a,
            init: Box::new(first),
            body: Box::new(node(id, span, inner)),
        }
    }

    /// `cel.bind(@v, init, test(@v) ? then(@v) : otherwise(@v))`: `init` evaluated once, then
    /// a test of ours picks cel-go's meaning or the builtin's.
    fn bound_choice(
        &mut self,
        id: i64,
        span: &std::ops::Range<usize>,
        init: SpannedExpr,
        test: &str,
        then: impl FnOnce(SpannedExpr) -> Expr,
        otherwise: impl FnOnce(SpannedExpr) -> Expr,
    ) -> Expr {
        let v = self.fresh_var();
        let ident = || node(id, span, Expr::Ident(v.clone()));
        let choice = Expr::Ternary {
            cond: Box::new(node(id, span, call(id, span, test, vec![ident()]))),
            then_expr: Box::new(node(id, span, then(ident()))),
            else_expr: Box::new(node(id, span, otherwise(ident()))),
        };
        Expr::Bind {
            var_name: v,
            init: Box::new(init),
            body: Box::new(node(id, span, choice)),
        }
    }

    /// `cel.bind(@v, receiver, @is(@v) ? @to(@v) : @v.name())`.
    fn dispatch_member(
        &mut self,
        id: i64,
        span: &std::ops::Range<usize>,
        receiver: SpannedExpr,
        name: &str,
        special: usize,
    ) -> Expr {
        let v = self.fresh_var();
        let ident = || node(id, span, Expr::Ident(v.clone()));
        let builtin = Expr::Call {
            expr: Box::new(node(
                id,
                span,
                Expr::Member {
                    expr: Box::new(ident()),
                    field: name.to_owned(),
                    optional: false,
                },
            )),
            args: Vec::new(),
        };
        let body = special_or(id, span, special, &ident, builtin);
        Expr::Bind {
            var_name: v,
            init: Box::new(receiver),
            body: Box::new(node(id, span, body)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_duration_syntax() {
        assert_eq!(go_parse_duration("0"), Some(0));
        assert_eq!(go_parse_duration("+5s"), Some(5 * NS_PER_SECOND));
        assert_eq!(go_parse_duration("1\u{3bc}s"), Some(1_000));
        assert_eq!(go_parse_duration("1\u{b5}s"), Some(1_000));
        assert_eq!(go_parse_duration(".5s"), Some(NS_PER_SECOND / 2));
        assert_eq!(go_parse_duration("5.s"), Some(5 * NS_PER_SECOND));
        assert_eq!(go_parse_duration("1h1ns"), Some(3_600 * NS_PER_SECOND + 1));
        assert_eq!(
            go_parse_duration("2562047h47m16.854775807s"),
            Some(i64::MAX)
        );
        assert_eq!(
            go_parse_duration("-2562047h47m16.854775808s"),
            Some(i64::MIN)
        );
        assert_eq!(go_parse_duration("2562047h47m16.854775808s"), None);
        assert_eq!(go_parse_duration("1h-1m"), None);
        assert_eq!(go_parse_duration("5"), None);
        assert_eq!(go_parse_duration(""), None);
        assert_eq!(go_parse_duration("."), None);
        assert_eq!(go_parse_duration("1d"), None);
    }

    #[test]
    fn go_g_format() {
        for (d, want) in [
            (1.0, "1"),
            (1e21, "1e+21"),
            (123_456.0, "123456"),
            (1_234_567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-0.0, "-0"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.5e-7, "1.5e-07"),
            (100_000.0, "100000"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
        ] {
            assert_eq!(go_format_g(d), want, "{d}");
        }
    }

    #[test]
    fn go_float_syntax() {
        assert_eq!(go_parse_float("1_000"), Some(1000.0));
        assert_eq!(go_parse_float("0x1p-2"), Some(0.25));
        assert_eq!(go_parse_float("-Infinity"), Some(f64::NEG_INFINITY));
        assert!(go_parse_float("NaN").is_some_and(f64::is_nan));
        assert_eq!(go_parse_float("1e309"), None);
        assert_eq!(go_parse_float("1e-400"), Some(0.0));
        assert_eq!(go_parse_float(" 1"), None);
        assert_eq!(go_parse_float("1__0"), None);
        assert_eq!(go_parse_float("_1"), None);
        assert_eq!(go_parse_float(".5"), Some(0.5));
    }

    #[test]
    fn go_bool_spellings() {
        assert_eq!(go_parse_bool("T"), Some(true));
        assert_eq!(go_parse_bool("FALSE"), Some(false));
        assert_eq!(go_parse_bool("tRUE"), None);
        assert_eq!(go_parse_bool("yes"), None);
    }

    #[test]
    fn duration_text_is_float_seconds() {
        assert_eq!(duration_text(1_500_000_000), "1.5s");
        assert_eq!(duration_text(0), "0s");
        assert_eq!(duration_text(-5_400 * NS_PER_SECOND), "-5400s");
        assert_eq!(duration_text(1), "0.000000001s");
    }
}
