//! Statements and control flow: blocks, expression statements, `if`/`else`, the loops (`while`, `do`/`while`,
//! `for`), `break`, `continue` and `return`, each on the activity counters (levels, `BRK`, `JNONE` skips).

use super::{Cg, R};
use crate::cuda::types::V;
use crate::isa::{Instr, Opcode as O};
use lang_c::ast::*;
use lang_c::span::{Node, Span};

impl<'a> Cg<'a> {
    // ------------------------------------------------------------------ statements

    pub(super) fn stmt(&mut self, s: &Node<Statement>) -> R<()> {
        self.set_line(&s.span);
        match &s.node {
            Statement::Compound(items) => {
                self.push_scope();
                for it in items {
                    match &it.node {
                        BlockItem::Declaration(d) => self.declaration(d)?,
                        BlockItem::Statement(st) => self.stmt(st)?,
                        BlockItem::StaticAssert(a) => {
                            return self.err(&a.span, "_Static_assert is not supported");
                        }
                    }
                }
                self.pop_scope();
                Ok(())
            }
            Statement::Expression(None) => Ok(()),
            Statement::Expression(Some(e)) => self.effect(e),
            Statement::If(i) => self.if_stmt(&i.node, &s.span),
            Statement::While(w) => self.loop_stmt(
                &s.span,
                Some(&w.node.expression),
                None,
                &w.node.statement,
                false,
            ),
            Statement::DoWhile(w) => self.loop_stmt(
                &s.span,
                Some(&w.node.expression),
                None,
                &w.node.statement,
                true,
            ),
            Statement::For(f) => {
                let f = &f.node;
                self.push_scope();
                match &f.initializer.node {
                    ForInitializer::Empty => {}
                    ForInitializer::Expression(e) => self.effect(e)?,
                    ForInitializer::Declaration(d) => self.declaration(d)?,
                    ForInitializer::StaticAssert(a) => {
                        return self.err(&a.span, "_Static_assert is not supported");
                    }
                }
                self.loop_stmt(
                    &s.span,
                    f.condition.as_deref(),
                    f.step.as_deref(),
                    &f.statement,
                    false,
                )?;
                self.pop_scope();
                Ok(())
            }
            Statement::Break | Statement::Continue => {
                let brk = matches!(s.node, Statement::Break);
                let word = if brk { "break" } else { "continue" };
                let Some(&body) = self.frames.last().unwrap().loops.last() else {
                    return self.err(&s.span, format!("{word} outside a loop"));
                };
                let d = self.depth - body;
                self.emit(Instr::rri(O::Brk, 0, 0, if brk { d + 2 } else { d + 1 }));
                Ok(())
            }
            Statement::Return(e) => self.return_stmt(e.as_deref(), &s.span),
            Statement::Switch(_) => self.err(&s.span, "switch is not supported (use if/else)"),
            Statement::Goto(_) => self.err(&s.span, "goto is not supported"),
            Statement::Labeled(l) => match l.node.label.node {
                Label::Identifier(_) => self.err(&s.span, "labels (goto) are not supported"),
                _ => self.err(&s.span, "case labels (switch) are not supported"),
            },
            Statement::Asm(_) => self.err(&s.span, "inline assembly is not supported"),
        }
    }

    /// An expression evaluated for its effect (a top-level `x++` is compiled as `++x`).
    pub(super) fn effect(&mut self, e: &Node<Expression>) -> R<()> {
        self.set_line(&e.span);
        let v = match &e.node {
            Expression::UnaryOperator(u)
                if matches!(
                    u.node.operator.node,
                    UnaryOperator::PostIncrement | UnaryOperator::PostDecrement
                ) =>
            {
                self.incdec(
                    &u.node.operand,
                    u.node.operator.node == UnaryOperator::PostIncrement,
                    true,
                    &e.span,
                )?
            }
            Expression::Comma(es) => {
                for x in es.iter() {
                    self.effect(x)?;
                }
                return Ok(());
            }
            _ => self.expr(e)?,
        };
        self.release(v);
        Ok(())
    }

    pub(super) fn if_stmt(&mut self, i: &IfStatement, span: &Span) -> R<()> {
        let c = self.expr(&i.condition)?;
        let c = self.not_void(c, &i.condition.span)?;
        if let V::C(k, _) = c {
            let (taken, other) = if k != 0 {
                (Some(&*i.then_statement), i.else_statement.as_deref())
            } else {
                (i.else_statement.as_deref(), Some(&*i.then_statement))
            };
            if let Some(o) = other {
                self.dead(|s| s.scoped(o))?;
            }
            if let Some(t) = taken {
                self.scoped(t)?;
            }
            return Ok(());
        }
        let cr = Self::reg_of(c);
        self.enter_level(span, Instr::rrr(O::If, 0, cr, 0))?;
        self.release(c);
        let skip_then = !self.stmt_syncs(&i.then_statement);
        let j = if skip_then {
            Some(self.emit(Instr::imm(O::Jnone, 0)))
        } else {
            None
        };
        self.scoped(&i.then_statement)?;
        if let Some(e) = &i.else_statement {
            self.set_line(&e.span);
            self.close_skip(j);
            self.emit(Instr::new(O::Else));
            let j2 = if !self.stmt_syncs(e) {
                Some(self.emit(Instr::imm(O::Jnone, 0)))
            } else {
                None
            };
            self.scoped(e)?;
            self.close_skip(j2);
        } else {
            self.close_skip(j);
        }
        self.leave_level();
        Ok(())
    }

    /// A statement in a scope of its own (an `if` branch or a loop body that is not a block).
    pub(super) fn scoped(&mut self, s: &Node<Statement>) -> R<()> {
        self.push_scope();
        let r = self.stmt(s);
        self.pop_scope();
        r
    }

    /// `while`, `do ... while` and `for` (after its initializer): a loop level, a body level per iteration.
    pub(super) fn loop_stmt(
        &mut self,
        span: &Span,
        cond: Option<&Node<Expression>>,
        step: Option<&Node<Expression>>,
        body: &Node<Statement>,
        do_while: bool,
    ) -> R<()> {
        // A condition that is constant (without evaluating code) decides statically.
        let cval = match cond {
            None => Some(1),
            Some(c) => {
                let v = self.dead(|s| {
                    let v = s.expr(c)?;
                    s.release(v);
                    Ok(v)
                })?;
                match v {
                    V::C(k, _) => Some(k),
                    _ => None,
                }
            }
        };
        if cval == Some(0) && !do_while {
            return self.dead(|s| {
                s.frames.last_mut().unwrap().loops.push(s.depth + 2);
                let r = s.scoped(body);
                s.frames.last_mut().unwrap().loops.pop();
                r
            });
        }
        let syncs = self.stmt_syncs(body)
            || cond.is_some_and(|c| self.expr_syncs(c))
            || step.is_some_and(|c| self.expr_syncs(c));
        let j0 = if !syncs {
            Some(self.emit(Instr::imm(O::Jnone, 0)))
        } else {
            None
        };
        self.enter_level(span, Instr::rri(O::If, 0, 0, 1))?;
        let top = self.pc();
        self.enter_level(span, Instr::rri(O::If, 0, 0, 1))?;
        let body_depth = self.depth;
        let mut j1 = None;
        if !do_while && cval.is_none() {
            let c = cond.unwrap();
            self.set_line(&c.span);
            let v = self.expr(c)?;
            let v = self.not_void(v, &c.span)?;
            let r = Self::reg_of(v);
            self.emit(Instr::rri(O::Brk, 0, r, 2));
            self.release(v);
            if !self.stmt_syncs(body) {
                j1 = Some(self.emit(Instr::imm(O::Jnone, 0)));
            }
        }
        self.frames.last_mut().unwrap().loops.push(body_depth);
        let r = self.scoped(body);
        self.frames.last_mut().unwrap().loops.pop();
        r?;
        self.close_skip(j1);
        self.leave_level();
        if let Some(st) = step {
            self.effect(st)?;
        }
        if do_while && cval.is_none() {
            let c = cond.unwrap();
            self.set_line(&c.span);
            let v = self.expr(c)?;
            let v = self.not_void(v, &c.span)?;
            let r = Self::reg_of(v);
            self.emit(Instr::rri(O::Brk, 0, r, 1));
            self.release(v);
        } else if do_while && cval == Some(0) {
            self.emit(Instr::rri(O::Brk, 0, 0, 1));
        }
        self.emit(Instr::imm(O::Jany, top as u32));
        self.leave_level();
        if let Some(j) = j0 {
            self.patch(j, self.pc());
        }
        Ok(())
    }

    pub(super) fn return_stmt(&mut self, e: Option<&Node<Expression>>, span: &Span) -> R<()> {
        let f = self.frames.last().unwrap();
        let (kernel, ret, level, name) = (f.kernel, f.ret, f.level, f.name.clone());
        if let Some(e) = e {
            let Some((r, t)) = ret else {
                return self.err(
                    &e.span,
                    format!("{name} returns void: return without a value"),
                );
            };
            let v = self.expr(e)?;
            let v = self.convert(v, t, &e.span)?;
            self.store_to(r, v);
        } else if ret.is_some() {
            return self.err(span, format!("{name} must return a value"));
        }
        if kernel {
            self.emit(Instr::rri(O::Brk, 0, 0, self.depth + 1));
        } else if let Some(l) = level {
            self.emit(Instr::rri(O::Brk, 0, 0, self.depth - l + 1));
        }
        Ok(())
    }
}
