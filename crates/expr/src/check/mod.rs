//! A type checker that is cel-go's (`checker/checker.go`, v0.31.0) ported over `cel-core`'s
//! syntax tree.
//!
//! Why not `cel-core`'s own checker: it widens a type parameter bound to two types to `dyn`
//! where cel-go rejects the call, keeps a concrete result where cel-go's is `dyn`, and knows
//! functions Talos lacks (and lacks some Talos has). A Talos user's expression must be accepted,
//! rejected and typed exactly as Talos does, so the rules are ported one for one and the
//! declarations are cel-go's ([`decls`]). Evaluation stays with `cel-core`.

pub(crate) mod decls;
pub(crate) mod types;

use std::collections::HashMap;

use cel_core::{BinaryOp, ComprehensionData, Expr, SpannedExpr, UnaryOp};

use self::decls::{Decls, Overload};
use self::types::{
    Mapping, Type, instantiate, is_assignable, is_assignable_list, is_dyn, is_error, is_param,
    most_general, substitute, unwrap_optional,
};
use crate::diag::{Diagnostic, node_offset};

/// The outcome of checking one expression.
#[derive(Debug)]
pub(crate) struct Checked {
    /// The expression's type, type parameters resolved (unbound ones are `dyn`).
    pub(crate) output: Type,
    /// cel-go's errors, in source order; empty when the expression is valid.
    pub(crate) errors: Vec<Diagnostic>,
    /// Each node's type, type parameters resolved (cel-go's type map).
    pub(crate) types: HashMap<i64, Type>,
}

/// Type-checks `root` against `decls` as cel-go's `env.Check` does.
pub(crate) fn check(decls: &Decls, source: &str, root: &SpannedExpr) -> Checked {
    let mut checker = Checker {
        decls,
        source,
        mappings: Mapping::default(),
        fresh: 0,
        scopes: Vec::new(),
        errors: Vec::new(),
        types: HashMap::new(),
        cross_type: false,
        generated: crate::diag::generated_positions(source, root),
    };
    let t = checker.check(root);
    let output = substitute(&checker.mappings, &t, true);
    let types = checker
        .types
        .iter()
        .map(|(id, t)| (*id, substitute(&checker.mappings, t, true)))
        .collect();
    let mut errors = checker.errors;
    // Stable by position, as cel-go sorts its issues; a macro's copied receiver is checked
    // twice by this walk, so identical reports are one.
    errors.sort_by_key(|(offset, _)| *offset);
    errors.dedup();
    Checked {
        output,
        types,
        errors: errors
            .into_iter()
            .map(|(offset, message)| Diagnostic::at(offset, message))
            .collect(),
    }
}

struct Checker<'a> {
    decls: &'a Decls,
    source: &'a str,
    mappings: Mapping,
    fresh: usize,
    /// Comprehension variables, innermost last.
    scopes: Vec<(String, Type)>,
    errors: Vec<(usize, String)>,
    types: HashMap<i64, Type>,
    /// Whether the cross-type numeric comparisons are visible. cel-go filters them out of the
    /// environment, but its `enterScope`/`exitScope` build the scoped environment without the
    /// filter: from the first comprehension (any macro but `has`) on, in checking order,
    /// `1 < 1.0` type-checks. Talos inherits this, so it is reproduced.
    cross_type: bool,
    /// Nodes a macro generated, by id: where cel-go reports their errors (the macro's `(`).
    generated: HashMap<i64, usize>,
}

/// The arguments of an operator call, receiver-less.
fn operator(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "_+_",
        BinaryOp::Sub => "_-_",
        BinaryOp::Mul => "_*_",
        BinaryOp::Div => "_/_",
        BinaryOp::Mod => "_%_",
        BinaryOp::Eq => "_==_",
        BinaryOp::Ne => "_!=_",
        BinaryOp::Lt => "_<_",
        BinaryOp::Le => "_<=_",
        BinaryOp::Gt => "_>_",
        BinaryOp::Ge => "_>=_",
        BinaryOp::In => "@in",
        BinaryOp::And => "_&&_",
        BinaryOp::Or => "_||_",
    }
}

/// `a.b.c` as one name, if the expression is a chain of plain selections on an identifier.
fn qualified_name(e: &SpannedExpr) -> Option<String> {
    match &e.node {
        Expr::Ident(name) | Expr::RootIdent(name) => Some(name.clone()),
        Expr::Member {
            expr,
            field,
            optional: false,
        } => qualified_name(expr).map(|prefix| format!("{prefix}.{field}")),
        _ => None,
    }
}

impl Checker<'_> {
    fn offset(&self, e: &SpannedExpr) -> usize {
        self.generated
            .get(&e.id)
            .copied()
            .unwrap_or_else(|| node_offset(self.source, e))
    }

    fn error(&mut self, at: &SpannedExpr, message: String) {
        let offset = self.offset(at);
        self.errors.push((offset, message));
    }

    fn new_type_var(&mut self) -> Type {
        let t = Type::Param(format!("_var{}", self.fresh));
        self.fresh += 1;
        t
    }

    fn assignable(&mut self, t1: &Type, t2: &Type) -> bool {
        is_assignable(&mut self.mappings, t1, t2)
    }

    fn undeclared(&mut self, at: &SpannedExpr, name: &str) {
        self.error(
            at,
            format!("undeclared reference to '{name}' (in container '')"),
        );
    }

    fn type_mismatch(&mut self, at: &SpannedExpr, expected: &Type, actual: &Type) {
        self.error(
            at,
            format!(
                "expected type '{}' but found '{}'",
                expected.format(),
                actual.format()
            ),
        );
    }

    fn lookup_ident(&self, name: &str, root_only: bool) -> Option<Type> {
        if !root_only && let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return Some(t.clone());
        }
        self.decls.idents.get(name).cloned()
    }

    fn check(&mut self, e: &SpannedExpr) -> Type {
        let t = self.check_node(e);
        self.types.insert(e.id, t.clone());
        t
    }

    #[allow(
        clippy::too_many_lines,
        reason = "one arm per expression kind, as cel-go's checker.go check()"
    )]
    fn check_node(&mut self, e: &SpannedExpr) -> Type {
        match &e.node {
            Expr::Null => Type::Null,
            Expr::Bool(_) => Type::Bool,
            Expr::Int(_) => Type::Int,
            Expr::UInt(_) => Type::Uint,
            Expr::Float(_) => Type::Double,
            Expr::String(_) => Type::String,
            Expr::Bytes(_) => Type::Bytes,
            Expr::Ident(name) | Expr::RootIdent(name) => {
                let root_only = matches!(e.node, Expr::RootIdent(_));
                match self.lookup_ident(name, root_only) {
                    Some(t) => t,
                    None if root_only => {
                        // cel-go names a root-scoped identifier with its dot and points at the
                        // name after it (`.inf`: `undeclared reference to '.inf'`, column 2).
                        let at = self.offset(e);
                        let after_dot = self
                            .source
                            .get(at..)
                            .and_then(|rest| rest.strip_prefix('.'))
                            .map_or(at, |rest| self.source.len() - rest.trim_start().len());
                        self.errors.push((
                            after_dot,
                            format!("undeclared reference to '.{name}' (in container '')"),
                        ));
                        Type::Error
                    }
                    None => {
                        self.undeclared(e, name);
                        Type::Error
                    }
                }
            }
            Expr::Member {
                expr,
                field,
                optional,
            } => {
                if !*optional
                    && let Some(name) = qualified_name(e)
                    && let Some(t) = self.lookup_ident(&name, false)
                {
                    return t;
                }
                let t = self.check_select_field(e, expr, field, *optional);
                substitute(&self.mappings, &t, false)
            }
            Expr::MemberTestOnly { expr, field } => {
                self.check_select_field(e, expr, field, false);
                Type::Bool
            }
            Expr::Call { expr, args } => self.check_call(e, expr, args),
            Expr::Unary { op, expr } => {
                let name = match op {
                    UnaryOp::Neg => "-_",
                    UnaryOp::Not => "!_",
                };
                let t = self.check(expr);
                self.resolve(e, name, None, &[(expr, t)])
            }
            Expr::Binary { op, left, right } => {
                let lt = self.check(left);
                let rt = self.check(right);
                self.resolve(e, operator(*op), None, &[(left, lt), (right, rt)])
            }
            Expr::Ternary {
                cond,
                then_expr,
                else_expr,
            } => {
                let c = self.check(cond);
                let t = self.check(then_expr);
                let f = self.check(else_expr);
                self.resolve(
                    e,
                    "_?_:_",
                    None,
                    &[(cond, c), (then_expr, t), (else_expr, f)],
                )
            }
            Expr::Index {
                expr,
                index,
                optional,
            } => {
                let name = if *optional { "_[?_]" } else { "_[_]" };
                let container = self.check(expr);
                let key = self.check(index);
                self.resolve(e, name, None, &[(expr, container), (index, key)])
            }
            Expr::List(items) => {
                let mut elems: Option<Type> = None;
                for item in items {
                    let mut t = self.check(&item.expr);
                    if item.optional {
                        let (inner, was_optional) = unwrap_optional(&t);
                        if !was_optional && !is_dyn(&inner) {
                            self.type_mismatch(&item.expr, &Type::optional(inner.clone()), &inner);
                        }
                        t = inner;
                    }
                    elems = Some(self.join_types(elems, t));
                }
                let elem = elems.unwrap_or_else(|| self.new_type_var());
                Type::list(elem)
            }
            Expr::Map(entries) => {
                let mut keys: Option<Type> = None;
                let mut values: Option<Type> = None;
                for entry in entries {
                    let kt = self.check(&entry.key);
                    keys = Some(self.join_types(keys, kt));
                    let mut vt = self.check(&entry.value);
                    if entry.optional {
                        let (inner, was_optional) = unwrap_optional(&vt);
                        if !was_optional && !is_dyn(&inner) {
                            self.type_mismatch(
                                &entry.value,
                                &Type::optional(inner.clone()),
                                &inner,
                            );
                        }
                        vt = inner;
                    }
                    values = Some(self.join_types(values, vt));
                }
                match (keys, values) {
                    (Some(k), Some(v)) => Type::map(k, v),
                    _ => {
                        let k = self.new_type_var();
                        Type::map(k, self.new_type_var())
                    }
                }
            }
            Expr::Struct { type_name, .. } => {
                // No message types in Talos's environments: the well-known ones could be
                // built in cel-go, but nobody writes that in an OOM expression, and cel-core
                // cannot evaluate it. Refuse clearly rather than guess.
                let name = qualified_name(type_name).unwrap_or_default();
                self.error(
                    e,
                    format!("message construction ('{name}{{…}}') is not supported by oomwarden"),
                );
                Type::Error
            }
            Expr::Comprehension(c) => self.check_comprehension(c),
            Expr::Bind {
                var_name,
                init,
                body,
            } => {
                // cel.bind is not a Talos macro; only optMap/optFlatMap produce this node,
                // which cel-go expresses as a comprehension over `[]` with the same typing. That
                // empty list is checked first and takes a fresh type variable, which later
                // variables' numbers in messages count (`optional_type(_var9)`, not `_var8`).
                let _range = self.new_type_var();
                let t = self.check(init);
                self.cross_type = true;
                self.scopes.push((var_name.clone(), t));
                let result = self.check(body);
                self.scopes.pop();
                substitute(&self.mappings, &result, false)
            }
            Expr::Error => Type::Error,
        }
    }

    /// `checkSelectField`: `operand.field` (optionally `operand.?field`).
    fn check_select_field(
        &mut self,
        e: &SpannedExpr,
        operand: &SpannedExpr,
        field: &str,
        optional: bool,
    ) -> Type {
        let operand_type = self.check(operand);
        let operand_type = substitute(&self.mappings, &operand_type, false);
        let (target, was_optional) = unwrap_optional(&operand_type);
        let result = match &target {
            Type::Map(_, v) => (**v).clone(),
            Type::Struct(_) => {
                self.error(e, format!("undefined field '{field}'"));
                Type::Error
            }
            t if is_param(t) => {
                self.assignable(&Type::Dyn, t);
                Type::Dyn
            }
            t => {
                if !is_dyn(t) && !is_error(t) {
                    self.error(
                        e,
                        format!("type '{}' does not support field selection", t.format()),
                    );
                }
                Type::Dyn
            }
        };
        if was_optional || optional {
            Type::optional(result)
        } else {
            result
        }
    }

    /// `checkCall` for the call syntax `f(args)` and `target.f(args)`.
    fn check_call(&mut self, e: &SpannedExpr, callee: &SpannedExpr, args: &[SpannedExpr]) -> Type {
        let arg_types: Vec<Type> = args.iter().map(|a| self.check(a)).collect();
        let typed: Vec<(&SpannedExpr, Type)> = args.iter().zip(arg_types).collect();
        match &callee.node {
            Expr::Ident(name) | Expr::RootIdent(name) => {
                let decls = self.decls;
                if decls.functions.contains_key(name.as_str()) {
                    self.resolve(e, name, None, &typed)
                } else {
                    self.undeclared(e, name);
                    Type::Error
                }
            }
            Expr::Member {
                expr: target,
                field: name,
                optional: false,
            } => {
                if let Some(prefix) = qualified_name(target) {
                    let qualified = format!("{prefix}.{name}");
                    if self.decls.functions.contains_key(qualified.as_str()) {
                        return self.resolve(e, &qualified, None, &typed);
                    }
                }
                let target_type = self.check(target);
                if self.decls.functions.contains_key(name.as_str()) {
                    self.resolve(e, name, Some((target, target_type)), &typed)
                } else {
                    self.undeclared(e, name);
                    Type::Error
                }
            }
            _ => {
                self.check(callee);
                self.error(e, "unsupported call target".to_owned());
                Type::Error
            }
        }
    }

    /// `resolveOverload` + `resolveOverloadOrError`.
    fn resolve(
        &mut self,
        call: &SpannedExpr,
        name: &str,
        target: Option<(&SpannedExpr, Type)>,
        args: &[(&SpannedExpr, Type)],
    ) -> Type {
        let decls = self.decls;
        let Some(overloads) = decls.functions.get(name) else {
            self.undeclared(call, name);
            return Type::Error;
        };
        let is_member = target.is_some();
        let mut arg_types: Vec<Type> = target.iter().map(|(_, t)| t.clone()).collect();
        arg_types.extend(args.iter().map(|(_, t)| t.clone()));

        let mut result: Option<Type> = None;
        for overload in overloads {
            if overload.member != is_member || (overload.cross_type && !self.cross_type) {
                continue;
            }
            if name == "_&&_" || name == "_||_" {
                return self.check_logical(args);
            }
            let (candidate_args, candidate_result) = self.instantiate(overload);
            if is_assignable_list(&mut self.mappings, &arg_types, &candidate_args) {
                let fn_result = substitute(&self.mappings, &candidate_result, false);
                result = Some(match result {
                    None => fn_result,
                    Some(r) if !is_dyn(&r) && !fn_result.is_exact(&r) => Type::Dyn,
                    Some(r) => r,
                });
            }
        }
        match result {
            Some(t) => t,
            None => {
                let shown: Vec<String> = arg_types
                    .iter()
                    .map(|t| substitute(&self.mappings, t, true).format())
                    .collect();
                let signature = match shown.split_first() {
                    Some((first, rest)) if is_member => format!("{first}.({})", rest.join(", ")),
                    _ => format!("({})", shown.join(", ")),
                };
                self.error(
                    call,
                    format!("found no matching overload for '{name}' applied to '{signature}'"),
                );
                Type::Error
            }
        }
    }

    /// `&&` and `||`: each operand must be assignable to bool, reported one by one.
    fn check_logical(&mut self, args: &[(&SpannedExpr, Type)]) -> Type {
        let mut failed = false;
        for (arg, t) in args {
            if !self.assignable(t, &Type::Bool) {
                self.type_mismatch(arg, &Type::Bool, t);
                failed = true;
            }
        }
        if failed { Type::Error } else { Type::Bool }
    }

    /// The overload's signature with fresh type variables for its type parameters.
    fn instantiate(&mut self, overload: &Overload) -> (Vec<Type>, Type) {
        let params = overload.type_params();
        if params.is_empty() {
            return (overload.args.clone(), overload.result.clone());
        }
        let fresh: HashMap<String, Type> = params
            .into_iter()
            .map(|p| (p, self.new_type_var()))
            .collect();
        (
            overload
                .args
                .iter()
                .map(|a| instantiate(a, &fresh))
                .collect(),
            instantiate(&overload.result, &fresh),
        )
    }

    /// `joinTypes` with cel-go's default: a heterogeneous literal has `dyn` elements.
    fn join_types(&mut self, previous: Option<Type>, current: Type) -> Type {
        match previous {
            None => current,
            Some(prev) => {
                if self.assignable(&prev, &current) {
                    most_general(&prev, &current)
                } else {
                    Type::Dyn
                }
            }
        }
    }

    /// `checkComprehension`.
    fn check_comprehension(&mut self, c: &ComprehensionData) -> Type {
        let range = self.check(&c.iter_range);
        let accu_type = self.check(&c.accu_init);
        let range = substitute(&self.mappings, &range, false);
        let two_vars = !c.iter_var2.is_empty();
        let (var, var2) = match &range {
            Type::List(elem) => {
                if two_vars {
                    (Type::Int, (**elem).clone())
                } else {
                    ((**elem).clone(), Type::Dyn)
                }
            }
            Type::Map(k, v) => ((**k).clone(), (**v).clone()),
            t if is_dyn(t) || is_error(t) || is_param(t) => {
                self.assignable(&Type::Dyn, t);
                (Type::Dyn, Type::Dyn)
            }
            t => {
                self.error(
                    &c.iter_range,
                    format!(
                        "expression of type '{}' cannot be range of a comprehension (must be list, map, or dynamic)",
                        t.format()
                    ),
                );
                (Type::Error, Type::Error)
            }
        };
        let outer = self.scopes.len();
        self.cross_type = true;
        self.scopes.push((c.accu_var.clone(), accu_type.clone()));
        self.scopes.push((c.iter_var.clone(), var));
        if two_vars {
            self.scopes.push((c.iter_var2.clone(), var2));
        }
        let cond = self.check(&c.loop_condition);
        self.assert_type(&c.loop_condition, &Type::Bool, &cond);
        let step = self.check(&c.loop_step);
        self.assert_type(&c.loop_step, &accu_type, &step);
        self.scopes.truncate(outer + 1);
        let result = self.check(&c.result);
        self.scopes.truncate(outer);
        substitute(&self.mappings, &result, false)
    }

    fn assert_type(&mut self, e: &SpannedExpr, want: &Type, found: &Type) {
        if !self.assignable(want, found) {
            self.type_mismatch(e, want, found);
        }
    }
}
