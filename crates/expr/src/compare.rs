//! The comparisons written in an expression (`memory_full_avg10 > 12.0`), found in its parse
//! tree, so that `oomwarden explain`, the Kubernetes Events and the plots can show each one's
//! value beside its threshold.

use cel_core::{BinaryOp, Expr, SpannedExpr};
use oomwarden_model::QosClass;

use crate::tree;

/// One comparison of an expression, as its author wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// The whole comparison's source text (`time_since_trigger > duration("5s")`).
    pub text: String,
    /// The left operand's source text.
    pub left: String,
    /// `<`, `<=`, `>`, `>=`, `==` or `!=`.
    pub op: &'static str,
    /// The right operand's source text.
    pub right: String,
    /// Whether the left operand reads no variable (a threshold: a literal,
    /// `duration("5s")`, a class name).
    pub left_constant: bool,
    /// Whether the right operand reads no variable.
    pub right_constant: bool,
}

fn op_text(op: BinaryOp) -> Option<&'static str> {
    Some(match op {
        BinaryOp::Lt => "<",
        BinaryOp::Le => "<=",
        BinaryOp::Gt => ">",
        BinaryOp::Ge => ">=",
        BinaryOp::Eq => "==",
        BinaryOp::Ne => "!=",
        _ => return None,
    })
}

/// Every comparison of `root`, in source order, each once.
pub(crate) fn comparisons(root: &SpannedExpr, source: &str) -> Vec<Comparison> {
    let mut found: Vec<(usize, Comparison)> = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if let Expr::Binary { op, left, right } = &node.node
            && let Some(op) = op_text(*op)
            && let (Some(text), Some(l), Some(r)) = (
                source.get(node.span.clone()),
                source.get(left.span.clone()),
                source.get(right.span.clone()),
            )
            && !found.iter().any(|(_, c)| c.text == text.trim())
        {
            found.push((
                node.span.start,
                Comparison {
                    text: text.trim().to_owned(),
                    left: l.trim().to_owned(),
                    op,
                    right: r.trim().to_owned(),
                    left_constant: is_constant(left),
                    right_constant: is_constant(right),
                },
            ));
        }
        stack.extend(tree::children(node));
    }
    found.sort_by_key(|(at, _)| *at);
    found.into_iter().map(|(_, c)| c).collect()
}

/// Every identifier the expression names (variables, and also comprehension variables and
/// class names), each once.
pub(crate) fn identifiers(root: &SpannedExpr) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if let Expr::Ident(name) | Expr::RootIdent(name) = &node.node
            && !out.contains(name)
        {
            out.push(name.clone());
        }
        stack.extend(tree::children(node));
    }
    out
}

/// No identifier but class names and the names of called functions.
fn is_constant(root: &SpannedExpr) -> bool {
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        match &node.node {
            Expr::Ident(name) | Expr::RootIdent(name) => {
                if !QosClass::ALL.iter().any(|c| c.name() == name) {
                    return false;
                }
            }
            Expr::Comprehension(_) => return false,
            // A global call's callee is an identifier that names a function, not a variable.
            Expr::Call { expr, args } => {
                if !matches!(expr.node, Expr::Ident(_) | Expr::RootIdent(_)) {
                    stack.push(expr);
                }
                stack.extend(args.iter());
            }
            _ => stack.extend(tree::children(node)),
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use oomwarden_model::{PerClass, QosClass, TriggerContext};

    use crate::TriggerExpr;

    const DEFAULT: &str =
        "multiply_qos_vectors(d_qos_memory_full_total, {System: 8.0, Podruntime: 4.0}) > 3000.0 &&
multiply_qos_vectors(qos_memory_full_avg10, {System: 1.0, Podruntime: 1.0}) > 5.0 &&
time_since_trigger > duration(\"5s\")";

    #[test]
    fn the_default_triggers_three_thresholds_are_found_in_source_order() {
        let t = TriggerExpr::compile(DEFAULT).unwrap();
        let c = t.comparisons();
        assert_eq!(c.len(), 3);
        assert_eq!(
            c[0].left,
            "multiply_qos_vectors(d_qos_memory_full_total, {System: 8.0, Podruntime: 4.0})"
        );
        assert_eq!((c[0].op, c[0].right.as_str()), (">", "3000.0"));
        assert_eq!(
            (c[2].left.as_str(), c[2].right.as_str()),
            ("time_since_trigger", "duration(\"5s\")")
        );
        assert!(c.iter().all(|c| !c.left_constant && c.right_constant));
    }

    #[test]
    fn comparisons_are_evaluated_side_by_side() {
        let t = TriggerExpr::compile(DEFAULT).unwrap();
        let mut ctx = TriggerContext::new();
        ctx.add(PerClass::QosMemoryFullAvg10, QosClass::System, 4.0);
        ctx.add(PerClass::QosMemoryFullAvg10, QosClass::Podruntime, 2.5);
        let e = t.evaluate_comparisons(&ctx);
        assert_eq!(e.len(), 3);
        assert_eq!(e[1].left.as_number(), Some(6.5));
        assert_eq!(e[1].right.as_number(), Some(5.0));
        assert_eq!(e[1].holds, Some(true));
        assert_eq!(e[0].holds, Some(false));
        assert_eq!(e[2].right.as_number(), Some(5.0));
    }

    #[test]
    fn a_comparison_on_a_comprehension_variable_is_left_out() {
        let t = TriggerExpr::compile(
            "[1.0, 2.0].exists(x, x > memory_full_avg10) || memory_some_avg10 >= 1.5",
        )
        .unwrap();
        let texts: Vec<_> = t.comparisons().iter().map(|c| c.text.as_str()).collect();
        assert!(texts.contains(&"memory_some_avg10 >= 1.5"), "{texts:?}");
        let e = t.evaluate_comparisons(&TriggerContext::new());
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].holds, Some(false));
    }
}

#[cfg(test)]
mod extension_tests {
    use oomwarden_model::{PerClass, QosClass, Scalar, TriggerContext};

    use crate::TriggerExpr;

    /// Issue 19: the reclaim rates are trigger variables of oomwarden's dialect (not Talos's),
    /// and a trigger says which it reads.
    #[test]
    fn the_reclaim_rates_are_variables() {
        let text = "d_node_memory_available < -10485760.0 && d_qos_pgscan[System] > 100.0";
        let t = TriggerExpr::compile(text).unwrap();
        assert!(t.reads("d_qos_pgscan") && t.reads("d_node_memory_available"));
        assert!(!t.reads("d_node_pgscan"));
        let mut ctx = TriggerContext::new();
        assert_eq!(t.eval(&ctx), Ok(false));
        ctx.set(Scalar::DNodeMemoryAvailable, -20.0 * 1048576.0);
        ctx.add(PerClass::DQosPgscan, QosClass::System, 150.0);
        assert_eq!(t.eval(&ctx), Ok(true));
        let talos = TriggerExpr::compile_talos(text).unwrap_err().to_string();
        assert!(
            talos.contains("undeclared reference to 'd_node_memory_available'"),
            "{talos}"
        );
    }
}
