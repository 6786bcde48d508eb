//! The two CEL environments of Talos 1.14 (`celenv.go`): `OOMTrigger` and `OOMCgroupScoring`.
//!
//! Both have the standard library and macros, the optional-types library, the five class
//! constants (int) and the twelve unit constants (uint). `cel-core` has no constant
//! declarations, so constants are declared as variables and bound in every activation.

use std::collections::HashMap;
use std::sync::LazyLock;

use cel_core::{
    Activation, CelType, Env, EvalError as CelEvalError, EvalErrorKind, FunctionDecl, OverloadDecl,
    Value, ValueMap,
};
use oomwarden_model::variables::{Definition, VarType};
use oomwarden_model::{QosClass, RankingVar, TriggerVar};

use crate::constants::UNIT_CONSTANTS;

/// A catalogue type as `cel-core` declares it.
fn cel_type(ty: VarType) -> CelType {
    match ty {
        VarType::Double => CelType::Double,
        VarType::ClassMap => CelType::map(CelType::Int, CelType::Double),
        VarType::Duration => CelType::Duration,
        VarType::OptionalUint => CelType::optional(CelType::UInt),
        VarType::String => CelType::String,
        VarType::Int => CelType::Int,
        VarType::StringMap => CelType::map(CelType::String, CelType::String),
        VarType::StringList => CelType::list(CelType::String),
    }
}

fn declare(env: &mut Env, variables: impl Iterator<Item = Definition>) {
    for d in variables {
        env.add_variable(d.name, cel_type(d.ty));
    }
}

fn with_constants(mut env: Env) -> Env {
    for class in QosClass::ALL {
        env.add_variable(class.name(), CelType::Int);
    }
    for (name, _) in UNIT_CONSTANTS {
        env.add_variable(name, CelType::UInt);
    }
    env
}

fn base_env() -> Env {
    let mut env = with_constants(
        Env::with_standard_library().with_extension(cel_core::ext::optionals_extension()),
    );
    crate::runtime::register(&mut env);
    env
}

/// The trigger environment: the catalogue's trigger variables (Talos's 16 doubles, 22
/// `map(int, double)` and a duration, and the extensions), and `multiply_qos_vectors`.
pub(crate) static TRIGGER_ENV: LazyLock<Env> = LazyLock::new(|| {
    let mut env = base_env();
    declare(&mut env, TriggerVar::all().map(TriggerVar::definition));
    let class_map = CelType::map(CelType::Dyn, CelType::Double);
    env.add_function(
        FunctionDecl::new("multiply_qos_vectors").with_overload(
            OverloadDecl::function(
                "multiply_qos_vectors_ma_map_double",
                vec![class_map.clone(), class_map],
                CelType::Double,
            )
            .with_impl(multiply_qos_vectors),
        ),
    );
    env
});

/// The ranking environment: the catalogue's ranking variables (Talos's three
/// `optional(uint)`, `path` and `class`, and the extensions).
pub(crate) static RANKING_ENV: LazyLock<Env> = LazyLock::new(|| {
    let mut env = base_env();
    declare(&mut env, RankingVar::all().map(RankingVar::definition));
    env
});

/// Talos's `multiply_qos_vectors(values, weights)`: the sum of `values[k] * weights[k]` over
/// the keys of `values` present in `weights`.
///
/// Talos declares both maps `map(dyn, double)`, but a map can hold other values through `dyn`
/// or a mixed literal (`{System: 1.0, Podruntime: 1}`). cel-go then checks only the first
/// entry it iterates of each map against `double`, and Talos's Go type assertion panics
/// (recovered as an error) on a non-double it multiplies. Go's iteration order is random but
/// starts at the first inserted entry most of the time (measured: 85-90 % for these small
/// maps). So: an error when a key of `values` present in `weights` holds a non-double on
/// either side (cel-go always fails), when a map literal's first entry is a non-double (what
/// cel-go does most often; the runtime passes that fact as `[map, first_is_double]`, see
/// `runtime::prepare`), or when every entry of another map is a non-double; the sum otherwise.
fn multiply_qos_vectors(args: &[Value]) -> Value {
    let (Some(values), Some(weights)) = (ordered(args.first()), ordered(args.get(1))) else {
        return no_such_overload();
    };
    for (map, first_is_double) in [&values, &weights] {
        let fails = match first_is_double {
            Some(first) => !first,
            None => !map.is_empty() && map.iter().all(|(_, v)| !matches!(v, Value::Double(_))),
        };
        if fails {
            return no_such_overload();
        }
    }
    let mut sum = 0.0;
    for (key, value) in values.0.iter() {
        match (value, weights.0.get_with_numeric_coercion(key)) {
            (_, None) => {}
            (Value::Double(v), Some(Value::Double(w))) => sum += v * w,
            (_, Some(_)) => return no_such_overload(),
        }
    }
    Value::Double(sum)
}

/// A map argument, with whether its first literal entry is a double when known.
fn ordered(arg: Option<&Value>) -> Option<(&ValueMap, Option<bool>)> {
    match arg? {
        Value::Map(m) => Some((m, None)),
        Value::List(pair) => match (pair.first(), pair.get(1)) {
            (Some(Value::Map(m)), Some(Value::Bool(first))) => Some((m, Some(*first))),
            _ => None,
        },
        _ => None,
    }
}

fn no_such_overload() -> Value {
    error(
        EvalErrorKind::NoMatchingOverload,
        "no such overload: multiply_qos_vectors(map, map)",
    )
}

fn error(kind: EvalErrorKind, message: impl Into<String>) -> Value {
    Value::Error(std::sync::Arc::new(CelEvalError::new(kind, message)))
}

/// Constant bindings shared by both environments.
static CONSTANTS: LazyLock<HashMap<&'static str, Value>> = LazyLock::new(|| {
    let classes = QosClass::ALL
        .into_iter()
        .map(|c| (c.name(), Value::Int(c.as_i64())));
    let units = UNIT_CONSTANTS.into_iter().map(|(n, v)| (n, Value::UInt(v)));
    // Type names with dots resolve through the activation in cel-core.
    let types = [
        (
            "google.protobuf.Duration",
            Value::Type(cel_core::TypeValue::duration_type()),
        ),
        (
            "google.protobuf.Timestamp",
            Value::Type(cel_core::TypeValue::timestamp_type()),
        ),
    ];
    classes.chain(units).chain(types).collect()
});

/// Each trigger variable by name.
static TRIGGER_NAMES: LazyLock<HashMap<&'static str, TriggerVar>> =
    LazyLock::new(|| TriggerVar::all().map(|v| (v.name(), v)).collect());

/// An activation over the variables of a catalogue enum plus the constants, whose values are
/// made only when the expression reads them: a trigger reads a few of its 49 variables (the
/// default, 3), and making every one (30 class maps) each cycle was most of a quiet cycle's
/// allocations.
pub(crate) struct LazyActivation<K, F> {
    pub(crate) names: fn(&str) -> Option<K>,
    pub(crate) value: F,
}

impl<K, F: Fn(K) -> Value + Send + Sync> Activation for LazyActivation<K, F> {
    fn resolve(&self, name: &str) -> Option<Value> {
        match (self.names)(name) {
            Some(variable) => Some((self.value)(variable)),
            None => CONSTANTS.get(name).cloned(),
        }
    }
}

/// A trigger variable by name.
pub(crate) fn trigger_variable(name: &str) -> Option<TriggerVar> {
    TRIGGER_NAMES.get(name).copied()
}

/// Each ranking variable by name.
static RANKING_NAMES: LazyLock<HashMap<&'static str, RankingVar>> =
    LazyLock::new(|| RankingVar::all().map(|v| (v.name(), v)).collect());

/// A ranking variable by name (once per candidate and variable read: a map, not a search).
pub(crate) fn ranking_variable(name: &str) -> Option<RankingVar> {
    RANKING_NAMES.get(name).copied()
}

// Send + Sync are required to share compiled programs across threads.
#[allow(dead_code)]
fn assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Env>();
}
