//! Checks `cel-core` leaves to the caller: AST depth, and cel-go's strict overload rule.
//!
//! `cel-core` resolves a call whose type parameter is bound to two different types (`1 ==
//! 1u`, `[1u] + [1]`, `opt.orValue(0)` on `optional(uint)`, `c ? 1.0 : 1`) by widening the
//! parameter to `dyn`. cel-go instead rejects the call with `found no matching overload`, and
//! Talos users rely on that to catch mistakes at load. This pass re-unifies every resolved
//! call against its declared overloads with cel-go's rule: a type parameter binds once, and
//! only `dyn` (or an unresolved type variable) is compatible with everything.

use std::collections::HashMap;
use std::sync::Arc;

use cel_core::{CelType, CheckResult, Env, Expr, SpannedExpr};

use crate::diag::{Diagnostic, node_offset, type_name};

/// The direct children of a node, in source order.
pub(crate) fn children_of(e: &SpannedExpr) -> Vec<&SpannedExpr> {
    children(e)
}

fn children(e: &SpannedExpr) -> Vec<&SpannedExpr> {
    match &e.node {
        Expr::List(items) => items.iter().map(|i| &i.expr).collect(),
        Expr::Map(entries) => entries.iter().flat_map(|m| [&m.key, &m.value]).collect(),
        Expr::Unary { expr, .. }
        | Expr::Member { expr, .. }
        | Expr::MemberTestOnly { expr, .. } => {
            vec![expr]
        }
        Expr::Binary { left, right, .. } => vec![left, right],
        Expr::Ternary {
            cond,
            then_expr,
            else_expr,
        } => vec![cond, then_expr, else_expr],
        Expr::Index { expr, index, .. } => vec![expr, index],
        Expr::Call { expr, args } => std::iter::once(&**expr).chain(args.iter()).collect(),
        Expr::Struct { type_name, fields } => std::iter::once(&**type_name)
            .chain(fields.iter().map(|f| &f.value))
            .collect(),
        Expr::Comprehension(c) => vec![
            &c.iter_range,
            &c.accu_init,
            &c.loop_condition,
            &c.loop_step,
            &c.result,
        ],
        Expr::Bind { init, body, .. } => vec![init, body],
        _ => Vec::new(),
    }
}

/// Depth of the tree, computed without recursion (the tree may be arbitrarily deep).
pub(crate) fn ast_depth(root: &SpannedExpr) -> usize {
    let mut max = 0;
    let mut stack = vec![(root, 1usize)];
    while let Some((node, depth)) = stack.pop() {
        max = max.max(depth);
        stack.extend(children(node).into_iter().map(|c| (c, depth + 1)));
    }
    max
}

/// Every node by id.
fn index(root: &SpannedExpr) -> HashMap<i64, &SpannedExpr> {
    let mut map = HashMap::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        map.insert(node.id, node);
        stack.extend(children(node));
    }
    map
}

/// Runs the strict overload check; returns the calls cel-go would reject.
pub(crate) fn strict_overloads(
    env: &Env,
    source: &str,
    root: &SpannedExpr,
    check: &CheckResult,
) -> Vec<Diagnostic> {
    let nodes = index(root);
    let mut problems: Vec<(usize, Diagnostic)> = Vec::new();
    for (id, reference) in &check.reference_map {
        if reference.overload_ids.is_empty() {
            continue;
        }
        let (Some(node), Some(decl)) = (nodes.get(id), env.functions().get(&reference.name)) else {
            continue;
        };
        let overloads: Vec<_> = decl
            .overloads
            .iter()
            .filter(|o| reference.overload_ids.contains(&o.id))
            .collect();
        let Some(first) = overloads.first() else {
            continue;
        };
        let Some(args) = call_args(node, first.is_member) else {
            continue;
        };
        let arg_types: Vec<CelType> = args
            .iter()
            .map(|a| check.type_map.get(&a.id).cloned().unwrap_or(CelType::Dyn))
            .collect();
        let any_fits = overloads.iter().any(|o| {
            let mut subs = HashMap::new();
            o.params.len() == arg_types.len()
                && o.params
                    .iter()
                    .zip(&arg_types)
                    .all(|(p, a)| assignable(a, p, &mut subs))
        });
        if !any_fits {
            let name = match &node.node {
                Expr::Index { optional: true, .. } => "_[?_]",
                _ => reference.name.as_str(),
            };
            let types: Vec<String> = arg_types.iter().map(type_name).collect();
            let offset = node_offset(source, node);
            problems.push((
                offset,
                Diagnostic::at(
                    offset,
                    format!(
                        "found no matching overload for '{name}' applied to '({})'",
                        types.join(", ")
                    ),
                ),
            ));
        }
    }
    problems.sort_by_key(|(offset, _)| *offset);
    problems.into_iter().map(|(_, d)| d).collect()
}

/// The argument expressions of a call node, receiver first for member overloads. Operators
/// (binary, unary, ternary, index) take their children in order.
fn call_args(node: &SpannedExpr, is_member: bool) -> Option<Vec<&SpannedExpr>> {
    match &node.node {
        Expr::Call { expr, args } => Some(match (&expr.node, is_member) {
            (Expr::Member { expr: receiver, .. }, true) => {
                std::iter::once(&**receiver).chain(args.iter()).collect()
            }
            _ => args.iter().collect(),
        }),
        Expr::Binary { .. } | Expr::Unary { .. } | Expr::Ternary { .. } | Expr::Index { .. } => {
            Some(children(node))
        }
        _ => None,
    }
}

fn is_wildcard(t: &CelType) -> bool {
    matches!(t, CelType::Dyn | CelType::TypeVar(_) | CelType::Error)
}

/// cel-go's assignability: `arg` may be passed where `param` is declared, binding type
/// parameters once. Unlike `cel-core`, a parameter bound to two different concrete types
/// does not fit.
fn assignable(arg: &CelType, param: &CelType, subs: &mut HashMap<Arc<str>, CelType>) -> bool {
    if let CelType::TypeParam(name) = param {
        return match subs.get(name).cloned() {
            None => {
                subs.insert(name.clone(), arg.clone());
                true
            }
            Some(bound) if same_type(&bound, arg) => {
                if is_wildcard(&bound) && !is_wildcard(arg) {
                    subs.insert(name.clone(), arg.clone());
                }
                true
            }
            Some(CelType::Null) if nullable(arg) => {
                subs.insert(name.clone(), arg.clone());
                true
            }
            Some(bound) => nullable(&bound) && matches!(arg, CelType::Null),
        };
    }
    if is_wildcard(arg) || is_wildcard(param) {
        return true;
    }
    match (arg, param) {
        (CelType::List(a), CelType::List(p)) => assignable(a, p, subs),
        (CelType::Map(ak, av), CelType::Map(pk, pv)) => {
            assignable(ak, pk, subs) && assignable(av, pv, subs)
        }
        (CelType::Optional(a), CelType::Optional(p)) => assignable(a, p, subs),
        (CelType::Type(a), CelType::Type(p)) => assignable(a, p, subs),
        (CelType::Wrapper(a), CelType::Wrapper(p)) => assignable(a, p, subs),
        (CelType::Null, p) => nullable(p) || p == &CelType::Null,
        (CelType::Enum(_), CelType::Int) | (CelType::Int, CelType::Enum(_)) => true,
        _ => arg == param,
    }
}

fn nullable(t: &CelType) -> bool {
    matches!(
        t,
        CelType::Null
            | CelType::Wrapper(_)
            | CelType::Message(_)
            | CelType::Timestamp
            | CelType::Duration
            | CelType::Optional(_)
            | CelType::Abstract { .. }
    ) || is_wildcard(t)
}

/// Type equality where `dyn` matches anything, structurally.
fn same_type(a: &CelType, b: &CelType) -> bool {
    if is_wildcard(a) || is_wildcard(b) {
        return true;
    }
    match (a, b) {
        (CelType::List(x), CelType::List(y))
        | (CelType::Optional(x), CelType::Optional(y))
        | (CelType::Type(x), CelType::Type(y))
        | (CelType::Wrapper(x), CelType::Wrapper(y)) => same_type(x, y),
        (CelType::Map(xk, xv), CelType::Map(yk, yv)) => same_type(xk, yk) && same_type(xv, yv),
        _ => a == b,
    }
}
