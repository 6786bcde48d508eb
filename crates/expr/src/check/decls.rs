//! The declarations Talos 1.14's environments hold, as cel-go v0.31.0 declares them:
//! the standard library (`common/stdlib/standard.go`, its cross-type numeric comparisons
//! marked: filtered unless `CrossTypeNumericComparisons` is set, which Talos does not set),
//! the optional library at its latest version (`cel/library.go`: `first`, `last`,
//! `optional.unwrap`, `unwrapOpt` included), the type names, and Talos's own constants,
//! variables and `multiply_qos_vectors`.
//!
//! Overload order matters: the checker takes the first overload that fits for the result type
//! and falls back to `dyn` when a later one also fits with another result.

use std::collections::HashMap;
use std::sync::LazyLock;

use oomwarden_model::variables::{Definition, Origin, VarType};
use oomwarden_model::{QosClass, RankingVar, TriggerVar};

use super::types::Type;
use crate::constants::UNIT_CONSTANTS;

/// One overload of a function.
#[derive(Debug, Clone)]
pub(crate) struct Overload {
    pub(crate) member: bool,
    /// A cross-type numeric comparison (`int < double` …): filtered out by cel-go unless
    /// enabled, but see `Checker::cross_type`.
    pub(crate) cross_type: bool,
    pub(crate) args: Vec<Type>,
    pub(crate) result: Type,
}

impl Overload {
    /// The type parameters it uses, in order of first appearance.
    pub(crate) fn type_params(&self) -> Vec<String> {
        let mut out = Vec::new();
        for t in self.args.iter().chain(std::iter::once(&self.result)) {
            collect_params(t, &mut out);
        }
        out
    }
}

fn collect_params(t: &Type, out: &mut Vec<String>) {
    if let Type::Param(name) = t {
        if !out.contains(name) {
            out.push(name.clone());
        }
        return;
    }
    for p in t.params() {
        collect_params(p, out);
    }
}

/// Which of Talos's two environments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum EnvName {
    Trigger,
    Ranking,
}

/// Variables, type names and functions of one environment.
#[derive(Debug)]
pub(crate) struct Decls {
    pub(crate) idents: HashMap<String, Type>,
    pub(crate) functions: HashMap<&'static str, Vec<Overload>>,
}

fn a() -> Type {
    Type::param("A")
}
fn b() -> Type {
    Type::param("B")
}
fn k() -> Type {
    Type::param("K")
}
fn v() -> Type {
    Type::param("V")
}

fn global(args: Vec<Type>, result: Type) -> Overload {
    Overload {
        member: false,
        cross_type: false,
        args,
        result,
    }
}

fn member(args: Vec<Type>, result: Type) -> Overload {
    Overload {
        member: true,
        cross_type: false,
        args,
        result,
    }
}

#[allow(clippy::too_many_lines)] // one table, in cel-go's order
fn standard() -> Vec<(&'static str, Vec<Overload>)> {
    use Type::{Bool, Bytes, Double, Duration, Int, String as Str, Timestamp, Uint};
    let list_a = || Type::list(a());
    let map_ab = || Type::map(a(), b());
    let arith = |types: &[Type]| -> Vec<Overload> {
        types
            .iter()
            .map(|t| global(vec![t.clone(), t.clone()], t.clone()))
            .collect()
    };
    // cel-go's order: bool, int, int-double, int-uint, uint, uint-double, uint-int, double,
    // double-int, double-uint, string, bytes, timestamp, duration. The cross-type ones are
    // marked (see `Overload::cross_type`).
    let compare = || -> Vec<Overload> {
        let pairs = [
            (Bool, Bool),
            (Int, Int),
            (Int, Double),
            (Int, Uint),
            (Uint, Uint),
            (Uint, Double),
            (Uint, Int),
            (Double, Double),
            (Double, Int),
            (Double, Uint),
            (Str, Str),
            (Bytes, Bytes),
            (Timestamp, Timestamp),
            (Duration, Duration),
        ];
        pairs
            .into_iter()
            .map(|(a, b)| Overload {
                cross_type: a != b,
                ..global(vec![a, b], Bool)
            })
            .collect()
    };
    let conv = |from: &[Type], to: Type| -> Vec<Overload> {
        from.iter()
            .map(|f| global(vec![f.clone()], to.clone()))
            .collect()
    };
    let time_getter = |with_duration: bool| -> Vec<Overload> {
        let mut o = vec![
            member(vec![Timestamp], Int),
            member(vec![Timestamp, Str], Int),
        ];
        if with_duration {
            o.push(member(vec![Duration], Int));
        }
        o
    };
    vec![
        ("_?_:_", vec![global(vec![Bool, a(), a()], a())]),
        ("_&&_", vec![global(vec![Bool, Bool], Bool)]),
        ("_||_", vec![global(vec![Bool, Bool], Bool)]),
        ("!_", vec![global(vec![Bool], Bool)]),
        ("@not_strictly_false", vec![global(vec![Bool], Bool)]),
        ("_==_", vec![global(vec![a(), a()], Bool)]),
        ("_!=_", vec![global(vec![a(), a()], Bool)]),
        (
            "_+_",
            vec![
                global(vec![Bytes, Bytes], Bytes),
                global(vec![Double, Double], Double),
                global(vec![Duration, Duration], Duration),
                global(vec![Duration, Timestamp], Timestamp),
                global(vec![Timestamp, Duration], Timestamp),
                global(vec![Int, Int], Int),
                global(vec![list_a(), list_a()], list_a()),
                global(vec![Str, Str], Str),
                global(vec![Uint, Uint], Uint),
            ],
        ),
        ("_/_", arith(&[Double, Int, Uint])),
        ("_%_", arith(&[Int, Uint])),
        ("_*_", arith(&[Double, Int, Uint])),
        (
            "-_",
            vec![global(vec![Double], Double), global(vec![Int], Int)],
        ),
        (
            "_-_",
            vec![
                global(vec![Double, Double], Double),
                global(vec![Duration, Duration], Duration),
                global(vec![Int, Int], Int),
                global(vec![Timestamp, Duration], Timestamp),
                global(vec![Timestamp, Timestamp], Duration),
                global(vec![Uint, Uint], Uint),
            ],
        ),
        ("_<_", compare()),
        ("_<=_", compare()),
        ("_>_", compare()),
        ("_>=_", compare()),
        (
            "_[_]",
            vec![
                global(vec![list_a(), Int], a()),
                global(vec![map_ab(), a()], b()),
                // The optional library's additions, merged after the standard ones.
                global(
                    vec![Type::optional(Type::list(v())), Int],
                    Type::optional(v()),
                ),
                global(
                    vec![Type::optional(Type::map(k(), v())), k()],
                    Type::optional(v()),
                ),
            ],
        ),
        (
            "@in",
            vec![
                global(vec![a(), list_a()], Bool),
                global(vec![a(), map_ab()], Bool),
            ],
        ),
        (
            "size",
            vec![
                global(vec![Bytes], Int),
                member(vec![Bytes], Int),
                global(vec![list_a()], Int),
                member(vec![list_a()], Int),
                global(vec![map_ab()], Int),
                member(vec![map_ab()], Int),
                global(vec![Str], Int),
                member(vec![Str], Int),
            ],
        ),
        ("type", vec![global(vec![a()], Type::type_of(a()))]),
        ("bool", conv(&[Bool, Str], Bool)),
        ("bytes", conv(&[Bytes, Str], Bytes)),
        ("double", conv(&[Double, Int, Str, Uint], Double)),
        ("duration", conv(&[Duration, Str], Duration)),
        ("dyn", vec![global(vec![a()], Type::Dyn)]),
        (
            "int",
            conv(&[Int, Double, Duration, Str, Timestamp, Uint], Int),
        ),
        (
            "string",
            conv(
                &[Str, Bool, Bytes, Double, Duration, Int, Timestamp, Uint],
                Str,
            ),
        ),
        ("timestamp", conv(&[Timestamp, Int, Str], Timestamp)),
        ("uint", conv(&[Uint, Double, Int, Str], Uint)),
        ("contains", vec![member(vec![Str, Str], Bool)]),
        ("endsWith", vec![member(vec![Str, Str], Bool)]),
        ("startsWith", vec![member(vec![Str, Str], Bool)]),
        (
            "matches",
            vec![global(vec![Str, Str], Bool), member(vec![Str, Str], Bool)],
        ),
        ("getFullYear", time_getter(false)),
        ("getMonth", time_getter(false)),
        ("getDayOfYear", time_getter(false)),
        ("getDayOfMonth", time_getter(false)),
        ("getDate", time_getter(false)),
        ("getDayOfWeek", time_getter(false)),
        ("getHours", time_getter(true)),
        ("getMinutes", time_getter(true)),
        ("getSeconds", time_getter(true)),
        ("getMilliseconds", time_getter(true)),
    ]
}

/// `cel.OptionalTypes()` at its latest version (what Talos gets by passing no version).
fn optional_library() -> Vec<(&'static str, Vec<Overload>)> {
    let opt_v = || Type::optional(v());
    vec![
        ("optional.of", vec![global(vec![v()], opt_v())]),
        ("optional.ofNonZeroValue", vec![global(vec![v()], opt_v())]),
        ("optional.none", vec![global(vec![], opt_v())]),
        ("value", vec![member(vec![opt_v()], v())]),
        ("hasValue", vec![member(vec![opt_v()], Type::Bool)]),
        ("or", vec![member(vec![opt_v(), opt_v()], opt_v())]),
        ("orValue", vec![member(vec![opt_v(), v()], v())]),
        (
            "_[?_]",
            vec![
                global(vec![Type::list(v()), Type::Int], opt_v()),
                global(vec![Type::optional(Type::list(v())), Type::Int], opt_v()),
                global(vec![Type::map(k(), v()), k()], opt_v()),
                global(vec![Type::optional(Type::map(k(), v())), k()], opt_v()),
            ],
        ),
        ("last", vec![member(vec![Type::list(v())], opt_v())]),
        ("first", vec![member(vec![Type::list(v())], opt_v())]),
        (
            "optional.unwrap",
            vec![global(vec![Type::list(opt_v())], Type::list(v()))],
        ),
        (
            "unwrapOpt",
            vec![member(vec![Type::list(opt_v())], Type::list(v()))],
        ),
    ]
}

/// Type names usable as values (`int`, `list`, `google.protobuf.Duration`, `optional_type` …):
/// each ident's type is `type(T)`.
fn type_idents() -> Vec<(&'static str, Type)> {
    let wrapper = |t: Type| Type::Wrapper(Box::new(t));
    vec![
        ("bool", Type::Bool),
        ("bytes", Type::Bytes),
        ("double", Type::Double),
        ("google.protobuf.Duration", Type::Duration),
        ("int", Type::Int),
        ("list", Type::list(a())),
        ("map", Type::map(a(), b())),
        ("null_type", Type::Null),
        ("string", Type::String),
        ("google.protobuf.Timestamp", Type::Timestamp),
        ("type", Type::Meta(None)),
        ("uint", Type::Uint),
        ("optional_type", Type::optional(v())),
        // Well-known protobuf types the default registry knows.
        ("google.protobuf.Any", Type::Any),
        ("google.protobuf.Value", Type::Dyn),
        ("google.protobuf.ListValue", Type::list(Type::Dyn)),
        ("google.protobuf.Struct", Type::map(Type::String, Type::Dyn)),
        (
            "google.protobuf.Empty",
            Type::Struct("google.protobuf.Empty"),
        ),
        ("google.protobuf.BoolValue", wrapper(Type::Bool)),
        ("google.protobuf.BytesValue", wrapper(Type::Bytes)),
        ("google.protobuf.DoubleValue", wrapper(Type::Double)),
        ("google.protobuf.FloatValue", wrapper(Type::Double)),
        ("google.protobuf.Int32Value", wrapper(Type::Int)),
        ("google.protobuf.Int64Value", wrapper(Type::Int)),
        ("google.protobuf.StringValue", wrapper(Type::String)),
        ("google.protobuf.UInt32Value", wrapper(Type::Uint)),
        ("google.protobuf.UInt64Value", wrapper(Type::Uint)),
    ]
}

/// A catalogue type as the checker declares it.
fn checker_type(ty: VarType) -> Type {
    match ty {
        VarType::Double => Type::Double,
        VarType::ClassMap => Type::map(Type::Int, Type::Double),
        VarType::Duration => Type::Duration,
        VarType::OptionalUint => Type::optional(Type::Uint),
        VarType::String => Type::String,
        VarType::Int => Type::Int,
        VarType::StringMap => Type::map(Type::String, Type::String),
        VarType::StringList => Type::list(Type::String),
    }
}

/// `extensions`: oomwarden's variables beside Talos's (`node_*`, `pod_uid`).
fn build(env: EnvName, extensions: bool) -> Decls {
    let mut functions: HashMap<&'static str, Vec<Overload>> = HashMap::new();
    for (name, overloads) in standard().into_iter().chain(optional_library()) {
        functions.entry(name).or_default().extend(overloads);
    }
    let mut idents: HashMap<String, Type> = type_idents()
        .into_iter()
        .map(|(n, t)| (n.to_owned(), Type::type_of(t)))
        .collect();
    for class in QosClass::ALL {
        idents.insert(class.name().to_owned(), Type::Int);
    }
    for (name, _) in UNIT_CONSTANTS {
        idents.insert(name.to_owned(), Type::Uint);
    }
    let variables: Vec<Definition> = match env {
        EnvName::Trigger => TriggerVar::all().map(TriggerVar::definition).collect(),
        EnvName::Ranking => RankingVar::all().map(RankingVar::definition).collect(),
    };
    for d in variables {
        if extensions || d.origin == Origin::Talos {
            idents.insert(d.name.to_owned(), checker_type(d.ty));
        }
    }
    if env == EnvName::Trigger {
        let class_map = Type::map(Type::Dyn, Type::Double);
        functions.insert(
            "multiply_qos_vectors",
            vec![global(vec![class_map.clone(), class_map], Type::Double)],
        );
    }
    Decls { idents, functions }
}

/// Talos's `OOMTrigger` environment plus oomwarden's node variables.
pub(crate) static TRIGGER: LazyLock<Decls> = LazyLock::new(|| build(EnvName::Trigger, true));

/// Talos's `OOMCgroupScoring` environment plus oomwarden's pod variables (`pod_uid`,
/// `pod_namespace`, `pod_name`, `labels`, `annotations`, `container_names`, `oom_score_adj`).
pub(crate) static RANKING: LazyLock<Decls> = LazyLock::new(|| build(EnvName::Ranking, true));

/// Talos's `OOMTrigger` environment exactly (`oomwarden check --talos`).
pub(crate) static TALOS_TRIGGER: LazyLock<Decls> = LazyLock::new(|| build(EnvName::Trigger, false));

/// Talos's `OOMCgroupScoring` environment exactly.
pub(crate) static TALOS_RANKING: LazyLock<Decls> = LazyLock::new(|| build(EnvName::Ranking, false));

#[cfg(test)]
mod tests {
    use super::*;

    /// The checker declares each catalogue variable with the type the catalogue gives and
    /// spells it as cel-go does (`oomwarden eval variables` prints the catalogue's spelling).
    #[test]
    fn every_catalogue_variable_is_declared_as_cel_go_prints_it() {
        for (decls, talos, env) in [
            (&*TRIGGER, &*TALOS_TRIGGER, EnvName::Trigger),
            (&*RANKING, &*TALOS_RANKING, EnvName::Ranking),
        ] {
            let defs: Vec<Definition> = match env {
                EnvName::Trigger => TriggerVar::all().map(TriggerVar::definition).collect(),
                EnvName::Ranking => RankingVar::all().map(RankingVar::definition).collect(),
            };
            for d in defs {
                let declared = decls.idents.get(d.name).map(ToString::to_string);
                assert_eq!(declared.as_deref(), Some(d.ty.cel_go()), "{}", d.name);
                assert_eq!(
                    talos.idents.contains_key(d.name),
                    d.origin == Origin::Talos,
                    "{}",
                    d.name
                );
            }
        }
    }
}
