//! Walking `cel-core`'s tree without recursion: its depth, checked against cel-go's limit
//! after macro expansion.

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
