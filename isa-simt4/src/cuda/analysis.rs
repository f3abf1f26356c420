//! Questions about the syntax tree the code generator asks before compiling a piece: which functions a
//! statement calls, which names it assigns, how many `return`s it has, whether an expression is pure.

use lang_c::ast::*;
use lang_c::span::{Node, Span};
use lang_c::visit::{self, Visit};
use std::collections::HashSet;

#[derive(Default)]
struct Scan {
    /// Called functions and every identifier (a `#define` may expand to a call).
    calls: Vec<String>,
    assigned: HashSet<String>,
    returns: usize,
}

impl<'ast> Visit<'ast> for Scan {
    fn visit_identifier(&mut self, id: &'ast Identifier, span: &'ast Span) {
        self.calls.push(id.name.clone());
        visit::visit_identifier(self, id, span)
    }
    fn visit_call_expression(&mut self, c: &'ast CallExpression, span: &'ast Span) {
        if let Expression::Identifier(id) = &c.callee.node {
            self.calls.push(id.node.name.clone());
        }
        visit::visit_call_expression(self, c, span)
    }
    fn visit_binary_operator_expression(
        &mut self,
        b: &'ast BinaryOperatorExpression,
        span: &'ast Span,
    ) {
        if is_assign(&b.operator.node)
            && let Expression::Identifier(id) = &b.lhs.node
        {
            self.assigned.insert(id.node.name.clone());
        }
        visit::visit_binary_operator_expression(self, b, span)
    }
    fn visit_unary_operator_expression(
        &mut self,
        u: &'ast UnaryOperatorExpression,
        span: &'ast Span,
    ) {
        use UnaryOperator as U;
        if matches!(
            u.operator.node,
            U::PostIncrement | U::PostDecrement | U::PreIncrement | U::PreDecrement
        ) && let Expression::Identifier(id) = &u.operand.node
        {
            self.assigned.insert(id.node.name.clone());
        }
        visit::visit_unary_operator_expression(self, u, span)
    }
    fn visit_statement(&mut self, s: &'ast Statement, span: &'ast Span) {
        if matches!(s, Statement::Return(_)) {
            self.returns += 1;
        }
        visit::visit_statement(self, s, span)
    }
}

/// Whether `op` is `=` or a compound assignment.
pub(crate) fn is_assign(op: &BinaryOperator) -> bool {
    use BinaryOperator as B;
    matches!(
        op,
        B::Assign
            | B::AssignMultiply
            | B::AssignDivide
            | B::AssignModulo
            | B::AssignPlus
            | B::AssignMinus
            | B::AssignShiftLeft
            | B::AssignShiftRight
            | B::AssignBitwiseAnd
            | B::AssignBitwiseXor
            | B::AssignBitwiseOr
    )
}

/// The names of the functions a statement calls, and every identifier it uses (over-approximating: a name may
/// be a `#define` that calls).
pub(crate) fn calls_in_stmt(s: &Node<Statement>) -> Vec<String> {
    let mut v = Scan::default();
    v.visit_statement(&s.node, &s.span);
    v.calls
}

/// The names of the functions an expression calls, and every identifier it uses.
pub(crate) fn calls_in_expr(e: &Node<Expression>) -> Vec<String> {
    let mut v = Scan::default();
    v.visit_expression(&e.node, &e.span);
    v.calls
}

/// The identifiers a statement assigns (`x = ..`, `x += ..`, `x++`).
pub(crate) fn assigned_in(s: &Node<Statement>) -> HashSet<String> {
    let mut v = Scan::default();
    v.visit_statement(&s.node, &s.span);
    v.assigned
}

/// Whether a function body needs its own counter level for its `return`s: it has a `return` other than one as
/// the last statement of the body.
pub(crate) fn needs_return_level(body: &Node<Statement>) -> bool {
    let mut v = Scan::default();
    v.visit_statement(&body.node, &body.span);
    if v.returns == 0 {
        return false;
    }
    let last_is_return = match &body.node {
        Statement::Compound(items) => {
            matches!(items.last().map(|i| &i.node), Some(BlockItem::Statement(s)) if matches!(s.node, Statement::Return(_)))
        }
        Statement::Return(_) => true,
        _ => false,
    };
    !(v.returns == 1 && last_is_return)
}

/// Whether evaluating `e` has no effect and cannot fault (no assignment, call of a non-builtin, array access,
/// division), so it may be computed in lanes that C would not evaluate it in.
pub(crate) fn pure(e: &Node<Expression>) -> bool {
    match &e.node {
        Expression::Identifier(_) | Expression::Constant(_) => true,
        Expression::Member(m) => matches!(m.node.expression.node, Expression::Identifier(_)),
        Expression::UnaryOperator(u) => {
            matches!(
                u.node.operator.node,
                UnaryOperator::Plus
                    | UnaryOperator::Minus
                    | UnaryOperator::Complement
                    | UnaryOperator::Negate
            ) && pure(&u.node.operand)
        }
        Expression::Cast(c) => pure(&c.node.expression),
        Expression::BinaryOperator(b) => {
            use BinaryOperator as B;
            !is_assign(&b.node.operator.node)
                && !matches!(b.node.operator.node, B::Index | B::Divide | B::Modulo)
                && pure(&b.node.lhs)
                && pure(&b.node.rhs)
        }
        Expression::Conditional(c) => {
            pure(&c.node.condition)
                && pure(&c.node.then_expression)
                && pure(&c.node.else_expression)
        }
        Expression::Call(c) => {
            matches!(&c.node.callee.node, Expression::Identifier(id) if matches!(id.node.name.as_str(), "min" | "max" | "abs" | "__umulhi" | "__mulhi"))
                && c.node.arguments.iter().all(pure)
        }
        _ => false,
    }
}
