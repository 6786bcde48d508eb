//! cel-go's checker types and unification (`checker/types.go`, `checker/mapping.go`,
//! `common/types/types.go` of cel-go v0.31.0), ported rule for rule.
//!
//! Kept literal on purpose: the point is to accept, reject and type exactly what Talos's
//! cel-go does, including its quirks (`type(int) == type(double)` is assignable; a `dyn`
//! operand makes the result `dyn`; the first overload that fits decides the result type
//! unless a later one disagrees).

use std::collections::HashMap;
use std::fmt;

/// A type as cel-go's checker sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Type {
    Bool,
    Bytes,
    Double,
    Int,
    Uint,
    String,
    Null,
    Duration,
    Timestamp,
    Dyn,
    /// `google.protobuf.Any`: dynamic like `dyn`.
    Any,
    Error,
    /// A nullable primitive (`google.protobuf.Int64Value` …): only reachable as a type name.
    Wrapper(Box<Type>),
    List(Box<Type>),
    Map(Box<Type>, Box<Type>),
    /// `optional_type(T)` and the internal `function(result, args…)`.
    Opaque(&'static str, Vec<Type>),
    /// The type of a type value: `type`, or `type(T)` with a parameter (cel-go's TypeType).
    Meta(Option<Box<Type>>),
    /// A type parameter (`A`, `V`) or a free type variable (`_var3`).
    Param(String),
    /// A message type known by name only (`google.protobuf.Empty`).
    Struct(&'static str),
}

/// cel-go's `types.Kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Any,
    Bool,
    Bytes,
    Double,
    Duration,
    Dyn,
    Error,
    Int,
    List,
    Map,
    Null,
    Opaque,
    String,
    Struct,
    Timestamp,
    Type,
    Param,
    Uint,
}

pub(crate) const OPTIONAL: &str = "optional_type";

impl Type {
    pub(crate) fn list(elem: Type) -> Type {
        Type::List(Box::new(elem))
    }

    pub(crate) fn map(key: Type, value: Type) -> Type {
        Type::Map(Box::new(key), Box::new(value))
    }

    pub(crate) fn optional(inner: Type) -> Type {
        Type::Opaque(OPTIONAL, vec![inner])
    }

    pub(crate) fn type_of(inner: Type) -> Type {
        Type::Meta(Some(Box::new(inner)))
    }

    pub(crate) fn param(name: &str) -> Type {
        Type::Param(name.to_owned())
    }

    fn kind(&self) -> Kind {
        match self {
            Type::Bool => Kind::Bool,
            Type::Bytes => Kind::Bytes,
            Type::Double => Kind::Double,
            Type::Int => Kind::Int,
            Type::Uint => Kind::Uint,
            Type::String => Kind::String,
            Type::Null => Kind::Null,
            Type::Duration => Kind::Duration,
            Type::Timestamp => Kind::Timestamp,
            Type::Dyn => Kind::Dyn,
            Type::Any => Kind::Any,
            Type::Error => Kind::Error,
            Type::Wrapper(inner) => inner.kind(),
            Type::List(_) => Kind::List,
            Type::Map(..) => Kind::Map,
            Type::Opaque(..) => Kind::Opaque,
            Type::Meta(_) => Kind::Type,
            Type::Param(_) => Kind::Param,
            Type::Struct(_) => Kind::Struct,
        }
    }

    /// cel-go's `TypeName()`: the runtime name, without parameters.
    fn type_name(&self) -> &str {
        match self {
            Type::Bool => "bool",
            Type::Bytes => "bytes",
            Type::Double => "double",
            Type::Int => "int",
            Type::Uint => "uint",
            Type::String => "string",
            Type::Null => "null_type",
            Type::Duration => "google.protobuf.Duration",
            Type::Timestamp => "google.protobuf.Timestamp",
            Type::Dyn => "dyn",
            Type::Any => "google.protobuf.Any",
            Type::Error => "*error*",
            Type::Wrapper(inner) => inner.type_name(),
            Type::List(_) => "list",
            Type::Map(..) => "map",
            Type::Opaque(name, _) | Type::Struct(name) => name,
            Type::Meta(_) => "type",
            Type::Param(name) => name,
        }
    }

    pub(crate) fn params(&self) -> Vec<&Type> {
        match self {
            Type::List(e) => vec![e],
            Type::Map(k, v) => vec![k, v],
            Type::Opaque(_, ps) => ps.iter().collect(),
            Type::Meta(Some(p)) => vec![p],
            _ => Vec::new(),
        }
    }

    fn first_param(&self) -> &Type {
        match self {
            Type::List(e) => e,
            Type::Map(k, _) => k,
            Type::Opaque(_, ps) => ps.first().unwrap_or(&Type::Dyn),
            Type::Meta(Some(p)) => p,
            _ => &Type::Dyn,
        }
    }

    /// Rebuilds this type with new parameters (same arity).
    fn with_params(&self, mut params: Vec<Type>) -> Type {
        let mut take = || {
            if params.is_empty() {
                Type::Dyn
            } else {
                params.remove(0)
            }
        };
        match self {
            Type::List(_) => Type::list(take()),
            Type::Map(..) => {
                let k = take();
                Type::map(k, take())
            }
            Type::Opaque(name, ps) => Type::Opaque(name, ps.iter().map(|_| take()).collect()),
            Type::Meta(Some(_)) => Type::type_of(take()),
            other => other.clone(),
        }
    }

    /// `IsExactType`: same kind, name and parameters (type parameter names included).
    pub(crate) fn is_exact(&self, other: &Type) -> bool {
        let (a, b) = (self.params(), other.params());
        self.kind() == other.kind()
            && a.len() == b.len()
            && self.type_name() == other.type_name()
            && a.iter().zip(&b).all(|(x, y)| x.is_exact(y))
    }

    /// `isDyn()` of `common/types`: `dyn`, `any` or a type parameter.
    fn is_dyn_like(&self) -> bool {
        matches!(self.kind(), Kind::Dyn | Kind::Any | Kind::Param)
    }

    /// `IsAssignableType`: whether a value of `from` may be used where `self` is expected.
    fn is_assignable_type(&self, from: &Type) -> bool {
        if let Type::Wrapper(inner) = self {
            return Type::Null.is_assignable_type(from) || inner.is_assignable_type(from);
        }
        if self == from || self.is_dyn_like() {
            return true;
        }
        let (to_params, from_params) = (self.params(), from.params());
        if self.kind() != from.kind()
            || self.type_name() != from.type_name()
            || to_params.len() != from_params.len()
        {
            return false;
        }
        to_params
            .iter()
            .zip(&from_params)
            .all(|(t, f)| t.is_assignable_type(f))
    }

    /// How cel-go's `Type.String()` spells it (the output type in Talos's message).
    pub(crate) fn display(&self) -> String {
        match self {
            Type::Param(name) => format!("<{name}>"),
            Type::Wrapper(inner) => format!("wrapper({})", inner.display()),
            Type::Meta(None) => "type".to_owned(),
            _ => {
                let params = self.params();
                if params.is_empty() {
                    self.type_name().to_owned()
                } else {
                    let inner: Vec<String> = params.iter().map(|p| p.display()).collect();
                    format!("{}({})", self.type_name(), inner.join(", "))
                }
            }
        }
    }

    /// cel-go's `FormatCELType`, used in checker messages.
    pub(crate) fn format(&self) -> String {
        match self {
            Type::Any => "any".to_owned(),
            Type::Duration => "duration".to_owned(),
            Type::Error => "!error!".to_owned(),
            Type::Null => "null".to_owned(),
            Type::Timestamp => "timestamp".to_owned(),
            Type::Param(name) => name.clone(),
            Type::Wrapper(inner) => format!("wrapper({})", inner.format()),
            Type::Opaque("function", ps) => {
                let (result, args) = ps.split_first().unwrap_or((&Type::Dyn, &[]));
                let args: Vec<String> = args.iter().map(Type::format).collect();
                format!("({}) -> {}", args.join(", "), result.format())
            }
            _ => {
                let params = self.params();
                if params.is_empty() {
                    self.display()
                } else {
                    let inner: Vec<String> = params.iter().map(|p| p.format()).collect();
                    format!("{}({})", self.type_name(), inner.join(", "))
                }
            }
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display())
    }
}

pub(crate) fn is_dyn(t: &Type) -> bool {
    matches!(t.kind(), Kind::Dyn | Kind::Any)
}

fn is_dyn_or_error(t: &Type) -> bool {
    is_dyn(t) || t.kind() == Kind::Error
}

pub(crate) fn is_error(t: &Type) -> bool {
    t.kind() == Kind::Error
}

pub(crate) fn is_param(t: &Type) -> bool {
    t.kind() == Kind::Param
}

/// `maybeUnwrapOptional`.
pub(crate) fn unwrap_optional(t: &Type) -> (Type, bool) {
    match t {
        Type::Opaque(OPTIONAL, ps) => (ps.first().cloned().unwrap_or(Type::Dyn), true),
        other => (other.clone(), false),
    }
}

/// Type parameter substitutions, keyed by the parameter's name as cel-go keys them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Mapping(HashMap<String, Type>);

impl Mapping {
    fn add(&mut self, from: &Type, to: Type) {
        if let Type::Param(name) = from {
            self.0.insert(name.clone(), to);
        }
    }

    fn find(&self, from: &Type) -> Option<&Type> {
        match from {
            Type::Param(name) => self.0.get(name),
            _ => None,
        }
    }
}

/// `isEqualOrLessSpecific`.
fn is_equal_or_less_specific(t1: &Type, t2: &Type) -> bool {
    if is_dyn(t1) || is_param(t1) {
        return true;
    }
    if is_dyn(t2) || is_param(t2) {
        return false;
    }
    if t1.kind() != t2.kind() {
        return false;
    }
    match t1.kind() {
        Kind::Opaque => {
            let (p1, p2) = (t1.params(), t2.params());
            t1.type_name() == t2.type_name()
                && p1.len() == p2.len()
                && p1
                    .iter()
                    .zip(&p2)
                    .all(|(a, b)| is_equal_or_less_specific(a, b))
        }
        Kind::List => is_equal_or_less_specific(t1.first_param(), t2.first_param()),
        Kind::Map => match (t1, t2) {
            (Type::Map(k1, v1), Type::Map(k2, v2)) => {
                is_equal_or_less_specific(k1, k2) && is_equal_or_less_specific(v1, v2)
            }
            _ => false,
        },
        Kind::Type => true,
        _ => t1.is_exact(t2),
    }
}

/// `internalIsAssignable`: whether `t1` is assignable to `t2`, recording substitutions.
fn internal_is_assignable(m: &mut Mapping, t1: &Type, t2: &Type) -> bool {
    if is_param(t2) {
        let (valid, t2_has_sub) = is_valid_type_substitution(m, t1, t2);
        if valid {
            return true;
        }
        if t2_has_sub {
            return false;
        }
    }
    if is_param(t1) {
        return is_valid_type_substitution(m, t2, t1).0;
    }
    if is_dyn_or_error(t1) || is_dyn_or_error(t2) {
        return true;
    }
    if t1.kind() == Kind::Null {
        return is_assignable_null(t2);
    }
    if t2.kind() == Kind::Null {
        return is_assignable_null(t1);
    }
    match t1.kind() {
        Kind::Bool
        | Kind::Bytes
        | Kind::Double
        | Kind::Int
        | Kind::String
        | Kind::Uint
        | Kind::Any
        | Kind::Duration
        | Kind::Timestamp
        | Kind::Struct => t2.is_assignable_type(t1),
        Kind::Type => t2.kind() == Kind::Type,
        Kind::Opaque | Kind::List | Kind::Map => {
            t1.kind() == t2.kind()
                && t1.type_name() == t2.type_name()
                && internal_is_assignable_list(m, &owned(t1.params()), &owned(t2.params()))
        }
        _ => false,
    }
}

fn owned(params: Vec<&Type>) -> Vec<Type> {
    params.into_iter().cloned().collect()
}

/// `isValidTypeSubstitution`: whether `t2` (a type parameter) may stand for `t1`, and whether
/// `t2` already had a substitution.
fn is_valid_type_substitution(m: &mut Mapping, t1: &Type, t2: &Type) -> (bool, bool) {
    if t1.kind() == t2.kind() && t1.is_exact(t2) {
        return (true, true);
    }
    if let Some(t2_sub) = m.find(t2).cloned() {
        if t1.kind() == t2_sub.kind() && t1.is_exact(&t2_sub) {
            return (true, true);
        }
        if internal_is_assignable(m, t1, &t2_sub) {
            let t2_new = most_general(t1, &t2_sub);
            if not_referenced_in(m, t2, &t2_new) {
                m.add(t2, t2_new);
            }
            return (true, true);
        }
        return (false, true);
    }
    if not_referenced_in(m, t2, t1) {
        m.add(t2, t1.clone());
        return (true, false);
    }
    (false, false)
}

fn internal_is_assignable_list(m: &mut Mapping, l1: &[Type], l2: &[Type]) -> bool {
    l1.len() == l2.len()
        && l1
            .iter()
            .zip(l2)
            .all(|(a, b)| internal_is_assignable(m, a, b))
}

fn is_assignable_null(t: &Type) -> bool {
    matches!(
        t.kind(),
        Kind::Opaque | Kind::Struct | Kind::Any | Kind::Duration | Kind::Timestamp
    ) || t.is_assignable_type(&Type::Null)
}

/// `isAssignable`: on success the substitutions it needed are kept.
pub(crate) fn is_assignable(m: &mut Mapping, t1: &Type, t2: &Type) -> bool {
    let mut copy = m.clone();
    if internal_is_assignable(&mut copy, t1, t2) {
        *m = copy;
        true
    } else {
        false
    }
}

/// `isAssignableList`.
pub(crate) fn is_assignable_list(m: &mut Mapping, l1: &[Type], l2: &[Type]) -> bool {
    let mut copy = m.clone();
    if internal_is_assignable_list(&mut copy, l1, l2) {
        *m = copy;
        true
    } else {
        false
    }
}

/// `mostGeneral`.
pub(crate) fn most_general(t1: &Type, t2: &Type) -> Type {
    if is_equal_or_less_specific(t1, t2) {
        t1.clone()
    } else {
        t2.clone()
    }
}

/// `notReferencedIn`: the occurs check.
fn not_referenced_in(m: &Mapping, t: &Type, within: &Type) -> bool {
    if t.is_exact(within) {
        return false;
    }
    match within.kind() {
        Kind::Param => match m.find(within) {
            None => true,
            Some(sub) => not_referenced_in(m, t, sub),
        },
        Kind::Opaque | Kind::List | Kind::Map | Kind::Type => {
            within.params().iter().all(|p| not_referenced_in(m, t, p))
        }
        _ => true,
    }
}

/// `substitute`: replaces bound type parameters; unbound ones become `dyn` if `to_dyn`.
pub(crate) fn substitute(m: &Mapping, t: &Type, to_dyn: bool) -> Type {
    if let Some(sub) = m.find(t) {
        return substitute(m, sub, to_dyn);
    }
    if to_dyn && is_param(t) {
        return Type::Dyn;
    }
    match t {
        Type::Opaque(..) | Type::List(_) | Type::Map(..) | Type::Meta(Some(_)) => t.with_params(
            t.params()
                .iter()
                .map(|p| substitute(m, p, to_dyn))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Renames the declaration's type parameters to fresh variables (`_var<n>`), as cel-go does
/// for every overload it tries.
pub(crate) fn instantiate(t: &Type, fresh: &HashMap<String, Type>) -> Type {
    match t {
        Type::Param(name) => fresh.get(name).cloned().unwrap_or_else(|| t.clone()),
        Type::Opaque(..) | Type::List(_) | Type::Map(..) | Type::Meta(Some(_)) => {
            t.with_params(t.params().iter().map(|p| instantiate(p, fresh)).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_binds_once_and_widens_only_to_dyn() {
        let a = Type::param("A");
        let mut m = Mapping::default();
        assert!(is_assignable_list(
            &mut m,
            &[Type::Int, Type::Int],
            &[a.clone(), a.clone()]
        ));
        let mut m = Mapping::default();
        assert!(!is_assignable_list(
            &mut m,
            &[Type::Int, Type::Uint],
            &[a.clone(), a.clone()]
        ));
        let mut m = Mapping::default();
        assert!(is_assignable_list(
            &mut m,
            &[Type::Dyn, Type::Double],
            &[a.clone(), a.clone()]
        ));
        assert_eq!(substitute(&m, &a, true), Type::Dyn);
    }

    #[test]
    fn type_values_are_always_assignable_to_each_other() {
        let mut m = Mapping::default();
        assert!(is_assignable(
            &mut m,
            &Type::type_of(Type::Int),
            &Type::type_of(Type::Double)
        ));
    }

    #[test]
    fn spellings_follow_cel_go() {
        let t = Type::map(Type::Int, Type::optional(Type::Duration));
        assert_eq!(
            t.display(),
            "map(int, optional_type(google.protobuf.Duration))"
        );
        assert_eq!(t.format(), "map(int, optional_type(duration))");
        assert_eq!(Type::Null.display(), "null_type");
        assert_eq!(Type::Null.format(), "null");
    }
}
