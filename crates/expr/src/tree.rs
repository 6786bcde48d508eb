//! Walking `cel-core`'s tree without recursion: its depth, and the depth cel-go's parser
//! counts against its limit, after macro expansion.

use cel_core::{Expr, SpannedExpr};

pub(crate) fn children(e: &SpannedExpr) -> Vec<&SpannedExpr> {
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

/// The direct children of a node, mutably.
pub(crate) fn children_mut(e: &mut SpannedExpr) -> Vec<&mut SpannedExpr> {
    match &mut e.node {
        Expr::List(items) => items.iter_mut().map(|i| &mut i.expr).collect(),
        Expr::Map(entries) => entries
            .iter_mut()
            .flat_map(|m| [&mut m.key, &mut m.value])
            .collect(),
        Expr::Unary { expr, .. }
        | Expr::Member { expr, .. }
        | Expr::MemberTestOnly { expr, .. } => vec![&mut **expr],
        Expr::Binary { left, right, .. } => vec![&mut **left, &mut **right],
        Expr::Ternary {
            cond,
            then_expr,
            else_expr,
        } => vec![&mut **cond, &mut **then_expr, &mut **else_expr],
        Expr::Index { expr, index, .. } => vec![&mut **expr, &mut **index],
        Expr::Call { expr, args } => std::iter::once(&mut **expr)
            .chain(args.iter_mut())
            .collect(),
        Expr::Struct { type_name, fields } => std::iter::once(&mut **type_name)
            .chain(fields.iter_mut().map(|f| &mut f.value))
            .collect(),
        Expr::Comprehension(c) => vec![
            &mut *c.iter_range,
            &mut *c.accu_init,
            &mut *c.loop_condition,
            &mut *c.loop_step,
            &mut *c.result,
        ],
        Expr::Bind { init, body, .. } => vec![&mut **init, &mut **body],
        _ => Vec::new(),
    }
}

/// The depth cel-go's parser counts against its recursion limit (`antlrVisitor.Visit`): only
/// ternaries, comparisons and `in`, arithmetic, field selections, member calls and indexes
/// nest; `&&`, `||`, `!`, `-`, global calls, list and map literals and parentheses do not
/// (their nesting is bounded by the grammar's own limit, see `limits`). Nodes a macro
/// generated (they carry the macro call's span, as their parent does) count nothing, so a
/// macro counts as the member call it was written as.
pub(crate) fn cel_go_depth(root: &SpannedExpr) -> usize {
    let mut max = 0;
    // (node, depth of its counted ancestors, the parent's span, whether it is a callee)
    let mut stack = vec![(root, 0usize, None, false)];
    while let Some((node, above, parent_span, callee)) = stack.pop() {
        let generated = generated_by_macro(node, parent_span);
        let counts = !generated
            && !callee
            && match &node.node {
                Expr::Ternary { .. }
                | Expr::Member { .. }
                | Expr::MemberTestOnly { .. }
                | Expr::Index { .. }
                | Expr::Comprehension(_) => true,
                Expr::Binary { op, .. } => {
                    !matches!(op, cel_core::BinaryOp::And | cel_core::BinaryOp::Or)
                }
                // A member call (`x.f()`, `optional.of(x)`); a global call does not count.
                Expr::Call { expr, .. } => match &expr.node {
                    Expr::Member { .. } => true,
                    Expr::Ident(name) => name.contains('.'),
                    _ => false,
                },
                _ => false,
            };
        let depth = above + usize::from(counts);
        max = max.max(depth);
        let callee_of = match &node.node {
            Expr::Call { expr, .. } => Some(&**expr),
            _ => None,
        };
        for child in children(node) {
            let is_callee = callee_of.is_some_and(|c| std::ptr::eq(c, child));
            stack.push((child, depth, Some(&node.span), is_callee));
        }
    }
    max
}

/// Whether a macro expansion made `node`: `cel-core` gives every node it generates the macro
/// call's span, which its parent (the expansion's root or another generated node) carries too;
/// a node written by the user has a span of its own.
pub(crate) fn generated_by_macro(
    node: &SpannedExpr,
    parent_span: Option<&std::ops::Range<usize>>,
) -> bool {
    parent_span == Some(&node.span)
}
