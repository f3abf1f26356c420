//! The code generator: a kernel's syntax tree and a launch to SIMT4 code (see [`super`] for the program's
//! shape and the control-flow scheme).

use super::CompileError;
use super::analysis::{
    assigned_in, calls_in_expr, calls_in_stmt, is_assign, needs_return_level, pure,
};
use super::front::{Parsed, Qual};
use super::types::{Ty, V, compound_op, fold, op_name};
use crate::isa::{Instr, Opcode as O, PROGRAM_WORDS, Simt4Config};
use crate::launch::{ArgValue, ArrayPlace, KernelImage, LaunchSpec};
use lang_c::ast::*;
use lang_c::span::{Node, Span};
use std::collections::{HashMap, HashSet};

type R<T> = Result<T, CompileError>;
/// A declaration's type, whether it is `const`, and its storage class.
type Specs = (Ty, bool, Option<(StorageClassSpecifier, Span)>);

/// Allocatable registers: r1..=r30 (r0 reads 0, r31 is the activity counter).
const FIRST_REG: u8 = 1;
const LAST_REG: u8 = 30;
/// Deepest counter value the front end lets a lane reach (counters are 8 bits).
const MAX_DEPTH: u32 = 250;
/// A `JNONE` that skips fewer instructions than this is not worth its own step.
const MIN_SKIP: usize = 4;

/// What a name means.
#[derive(Clone, Copy, Debug)]
enum Bind {
    Var(u8, Ty),
    Const(u32, Ty),
    Arr(usize),
}

/// An array: a global one (a pointer parameter's launch argument) or a `__shared__` one.
#[derive(Clone, Debug)]
struct Arr {
    name: String,
    shared: bool,
    base: u32,
    len: u32,
    /// Columns of a 2-D shared array.
    cols: Option<u32>,
    ty: Ty,
    is_const: bool,
}

#[derive(Default)]
struct Scope {
    binds: HashMap<String, Bind>,
    /// Registers this scope owns (freed when it closes).
    owned: Vec<u8>,
}

/// One function being compiled (the kernel, or an inlined device function).
struct Frame {
    name: String,
    scope_base: usize,
    /// The return value's register and type (non-void device functions).
    ret: Option<(u8, Ty)>,
    /// The depth inside the function's own level (`return` parks lanes until it closes).
    level: Option<u32>,
    /// Depths of the open loops' body levels.
    loops: Vec<u32>,
    kernel: bool,
}

/// A scalar or pointer parameter's type.
#[derive(Clone, Copy, Debug)]
struct PTy {
    ty: Ty,
    pointer: bool,
    is_const: bool,
}

pub(crate) struct Cg<'a> {
    p: &'a Parsed,
    file: &'a str,
    cfg: Simt4Config,
    code: Vec<Instr>,
    lines: Vec<u32>,
    line: u32,
    used: [bool; 32],
    scopes: Vec<Scope>,
    frames: Vec<Frame>,
    depth: u32,
    arrays: Vec<Arr>,
    shared_decls: HashMap<(usize, String), usize>,
    shared_next: u32,
    funcs: HashMap<String, &'a Node<FunctionDefinition>>,
    nwarps: u32,
    bdim: [u32; 2],
    gdim: [u32; 2],
    tid: [V; 2],
    bid: [V; 2],
    shift: isize,
    define_stack: Vec<String>,
}

fn is_zero(v: V) -> bool {
    matches!(v, V::C(0, _))
}

impl<'a> Cg<'a> {
    // ------------------------------------------------------------------ errors, positions, emission

    fn err_at(&self, span: &Span, msg: impl Into<String>) -> CompileError {
        let (line, column) = if span.is_none() {
            (0, 0)
        } else {
            self.p.line_col(self.p.orig(*span, self.shift))
        };
        CompileError {
            file: self.file.to_string(),
            line,
            column,
            message: msg.into(),
        }
    }
    fn err<T>(&self, span: &Span, msg: impl Into<String>) -> R<T> {
        Err(self.err_at(span, msg))
    }
    fn set_line(&mut self, span: &Span) {
        if !span.is_none() {
            self.line = self.p.line_col(self.p.orig(*span, self.shift)).0;
        }
    }
    fn emit(&mut self, i: Instr) -> usize {
        self.code.push(i);
        self.lines.push(self.line);
        self.code.len() - 1
    }
    fn pc(&self) -> usize {
        self.code.len()
    }
    fn patch(&mut self, at: usize, target: usize) {
        self.code[at].imm = target as u32;
    }
    /// Drop the instruction at `k` (a `JNONE` that turned out not to pay), moving jump targets after it.
    fn remove_at(&mut self, k: usize) {
        self.code.remove(k);
        self.lines.remove(k);
        for i in &mut self.code {
            if matches!(i.op, O::Jmp | O::Jnone | O::Jany) && i.imm as usize > k {
                i.imm -= 1;
            }
        }
    }
    /// Close a `JNONE` at `j` to jump to the current position, or drop it when it skips too little.
    fn close_skip(&mut self, j: Option<usize>) {
        if let Some(j) = j {
            if self.pc() - j - 1 < MIN_SKIP {
                self.remove_at(j);
            } else {
                self.patch(j, self.pc());
            }
        }
    }
    fn enter_level(&mut self, span: &Span, i: Instr) -> R<()> {
        if self.depth + 3 > MAX_DEPTH {
            return self.err(
                span,
                "control flow is nested too deeply for the 8-bit activity counters",
            );
        }
        self.emit(i);
        self.depth += 1;
        Ok(())
    }
    fn leave_level(&mut self) {
        self.emit(Instr::new(O::Endif));
        self.depth -= 1;
    }

    fn alloc(&mut self, span: &Span) -> R<u8> {
        for r in FIRST_REG..=LAST_REG {
            if !self.used[r as usize] {
                self.used[r as usize] = true;
                return Ok(r);
            }
        }
        self.err(span, "too many live values: the expression and the variables in scope need more than the 30 registers of a lane")
    }
    fn free_reg(&mut self, r: u8) {
        if (FIRST_REG..=LAST_REG).contains(&r) {
            self.used[r as usize] = false;
        }
    }
    fn release(&mut self, v: V) {
        if let V::R(r, _, true) = v {
            self.free_reg(r);
        }
    }
    /// The value in a register (constants are loaded into a temporary; 0 is `r0`).
    fn in_reg(&mut self, v: V, span: &Span) -> R<V> {
        match v {
            V::C(0, t) => Ok(V::R(0, t, false)),
            V::C(c, t) => {
                let r = self.alloc(span)?;
                self.emit(Instr::rri(O::Add, r, 0, c));
                Ok(V::R(r, t, true))
            }
            r => Ok(r),
        }
    }
    /// The value in a register the caller owns.
    fn owned_reg(&mut self, v: V, span: &Span) -> R<u8> {
        match v {
            V::R(r, _, true) => Ok(r),
            _ => {
                let r = self.alloc(span)?;
                self.store_to(r, v);
                Ok(r)
            }
        }
    }
    fn reg_of(v: V) -> u8 {
        match v {
            V::R(r, _, _) => r,
            V::C(..) => 0,
        }
    }
    /// `dst = v` (releases `v`). A temporary computed by the last instruction is retargeted instead of copied.
    fn store_to(&mut self, dst: u8, v: V) {
        match v {
            V::C(c, _) => {
                self.emit(Instr::rri(O::Add, dst, 0, c));
            }
            V::R(r, _, tmp) => {
                if r == dst {
                    return;
                }
                let last = self.code.last().copied();
                if tmp
                    && r != 0
                    && last.is_some_and(|i| {
                        i.rd == r
                            && ((i.op.is_alu() && i.op != O::Cmov)
                                || i.op.is_div()
                                || matches!(i.op, O::Ldg | O::Lds))
                    })
                {
                    self.code.last_mut().unwrap().rd = dst;
                } else {
                    self.emit(Instr::rri(O::Add, dst, r, 0));
                }
                self.release(v);
            }
        }
    }
    /// `op` on `a` and `b` (`b` may be an immediate): the result in a temporary of type `ty`.
    fn alu(&mut self, op: O, a: V, b: V, ty: Ty, span: &Span) -> R<V> {
        let a = self.in_reg(a, span)?;
        let (ar, atmp) = match a {
            V::R(r, _, t) => (r, t),
            V::C(..) => unreachable!("in_reg"),
        };
        let dst = if atmp {
            ar
        } else if let V::R(br, _, true) = b {
            br
        } else {
            self.alloc(span)?
        };
        match b {
            V::C(c, _) => self.emit(Instr::rri(op, dst, ar, c)),
            V::R(br, _, _) => self.emit(Instr::rrr(op, dst, ar, br)),
        };
        if atmp
            && let V::R(br, _, true) = b
            && br != dst
        {
            self.free_reg(br);
        }
        Ok(V::R(dst, ty, true))
    }
    /// A commutative op: a constant goes to the immediate side.
    fn alu_c(&mut self, op: O, a: V, b: V, ty: Ty, span: &Span) -> R<V> {
        if matches!(a, V::C(..)) && !matches!(b, V::C(..)) {
            self.alu(op, b, a, ty, span)
        } else {
            self.alu(op, a, b, ty, span)
        }
    }
    /// `v` as 0 or 1.
    fn as_bool01(&mut self, v: V, span: &Span) -> R<V> {
        match v {
            V::C(c, _) => Ok(V::C(u32::from(c != 0), Ty::Bool)),
            _ if v.ty() == Ty::Bool => Ok(v),
            _ => self.alu(O::Sne, v, V::C(0, Ty::Int), Ty::Bool, span),
        }
    }
    /// Convert for an assignment or a parameter: to `bool` is `!= 0`; `int` and `unsigned` share their bits.
    fn convert(&mut self, v: V, to: Ty, span: &Span) -> R<V> {
        if v.ty() == Ty::Void {
            return self.err(span, "a void value is used");
        }
        match to {
            Ty::Bool => self.as_bool01(v, span),
            Ty::Void => Ok(v),
            t => Ok(v.retype(t)),
        }
    }
    fn not_void(&self, v: V, span: &Span) -> R<V> {
        if v.ty() == Ty::Void {
            self.err(span, "a void value is used")
        } else {
            Ok(v)
        }
    }

    // ------------------------------------------------------------------ names

    fn lookup(&self, name: &str) -> Option<Bind> {
        let base = self.frames.last().map_or(0, |f| f.scope_base);
        for s in self.scopes[base..].iter().rev() {
            if let Some(b) = s.binds.get(name) {
                return Some(*b);
            }
        }
        self.scopes[0].binds.get(name).copied()
    }
    fn bind(&mut self, name: &str, b: Bind) {
        self.scopes
            .last_mut()
            .unwrap()
            .binds
            .insert(name.to_string(), b);
    }
    fn push_scope(&mut self) {
        self.scopes.push(Scope::default());
    }
    fn pop_scope(&mut self) {
        let s = self.scopes.pop().unwrap();
        for r in s.owned {
            self.free_reg(r);
        }
    }
    fn own(&mut self, r: u8) {
        self.scopes.last_mut().unwrap().owned.push(r);
    }

    // ------------------------------------------------------------------ types and declarators

    fn spec_type(&self, ts: &[(&Node<TypeSpecifier>, Span)], is_fn: bool) -> R<Ty> {
        let mut uns = false;
        let mut bool_ = false;
        let mut void = false;
        let mut any = false;
        for (t, _) in ts {
            let sp = &t.span;
            match &t.node {
                TypeSpecifier::Int | TypeSpecifier::Signed => any = true,
                TypeSpecifier::Unsigned => {
                    uns = true;
                    any = true
                }
                TypeSpecifier::Bool => bool_ = true,
                TypeSpecifier::Void => void = true,
                TypeSpecifier::TypedefName(id) => match id.node.name.as_str() {
                    "bool" => bool_ = true,
                    "uint" | "uint32_t" => {
                        uns = true;
                        any = true
                    }
                    "int32_t" => any = true,
                    n => {
                        return self.err(
                            sp,
                            format!("type {n} is not supported (int, unsigned, bool)"),
                        );
                    }
                },
                TypeSpecifier::Long => {
                    return self.err(
                        sp,
                        "long is not supported (32-bit int, unsigned and bool only)",
                    );
                }
                TypeSpecifier::Short => {
                    return self.err(
                        sp,
                        "short is not supported (32-bit int, unsigned and bool only)",
                    );
                }
                TypeSpecifier::Char => {
                    return self.err(
                        sp,
                        "char is not supported (32-bit int, unsigned and bool only)",
                    );
                }
                TypeSpecifier::Float => {
                    return self.err(sp, "float is not supported (integer types only)");
                }
                TypeSpecifier::Double => {
                    return self.err(sp, "double is not supported (integer types only)");
                }
                TypeSpecifier::Struct(s) => {
                    let k = if s.node.kind.node == StructKind::Union {
                        "union"
                    } else {
                        "struct"
                    };
                    return self.err(sp, format!("{k} types are not supported"));
                }
                TypeSpecifier::Enum(_) => return self.err(sp, "enum types are not supported"),
                _ => return self.err(sp, "this type is not supported (int, unsigned, bool)"),
            }
        }
        let _ = any;
        if void {
            if !is_fn {
                let sp = ts.first().map_or(Span::none(), |t| t.1);
                return self.err(&sp, "void is only a function's return type here");
            }
            return Ok(Ty::Void);
        }
        Ok(if bool_ {
            Ty::Bool
        } else if uns {
            Ty::Uns
        } else {
            Ty::Int
        })
    }

    /// The type of declaration specifiers, whether `const`, and the storage class if any.
    fn decl_specs(
        &self,
        specs: &[Node<DeclarationSpecifier>],
        is_fn: bool,
        span: &Span,
    ) -> R<Specs> {
        let mut ts = Vec::new();
        let mut is_const = false;
        let mut storage = None;
        for s in specs {
            match &s.node {
                DeclarationSpecifier::TypeSpecifier(t) => ts.push((t, t.span)),
                DeclarationSpecifier::TypeQualifier(q) => match q.node {
                    TypeQualifier::Const => is_const = true,
                    TypeQualifier::Volatile | TypeQualifier::Restrict => {}
                    _ => return self.err(&q.span, "this type qualifier is not supported"),
                },
                DeclarationSpecifier::StorageClass(c) => storage = Some((c.node.clone(), c.span)),
                DeclarationSpecifier::Function(_) | DeclarationSpecifier::Extension(_) => {}
                DeclarationSpecifier::Alignment(a) => {
                    return self.err(&a.span, "_Alignas is not supported");
                }
            }
        }
        if ts.is_empty() {
            return self.err(span, "a declaration without a type");
        }
        Ok((self.spec_type(&ts, is_fn)?, is_const, storage))
    }

    fn type_name(&self, tn: &Node<TypeName>) -> R<Ty> {
        let mut ts = Vec::new();
        for s in &tn.node.specifiers {
            match &s.node {
                SpecifierQualifier::TypeSpecifier(t) => ts.push((t, t.span)),
                SpecifierQualifier::TypeQualifier(_) | SpecifierQualifier::Extension(_) => {}
            }
        }
        if let Some(d) = &tn.node.declarator
            && !d.node.derived.is_empty()
        {
            return self.err(&d.span, "casts to pointer or array types are not supported");
        }
        if ts.is_empty() {
            return self.err(&tn.span, "a type name without a type");
        }
        let t = self.spec_type(&ts, false)?;
        Ok(t)
    }

    /// A declarator's name and derived parts (pointer, arrays, function), innermost first as lang-c gives them.
    fn declarator<'d>(
        &self,
        d: &'d Node<Declarator>,
    ) -> R<(&'d Node<Identifier>, &'d [Node<DerivedDeclarator>])> {
        match &d.node.kind.node {
            DeclaratorKind::Identifier(id) => Ok((id, &d.node.derived)),
            DeclaratorKind::Abstract => self.err(&d.span, "a declaration without a name"),
            DeclaratorKind::Declarator(_) => self.err(&d.span, "parenthesized declarators (function pointers, pointers to arrays) are not supported"),
        }
    }

    fn param_types(&self, fd: &FunctionDeclarator) -> R<Vec<(String, Span, PTy)>> {
        let mut out = Vec::new();
        for p in &fd.parameters {
            let (ty, is_const, storage) = self.decl_specs(&p.node.specifiers, true, &p.span)?;
            if let Some((_, sp)) = storage {
                return self.err(&sp, "storage classes on parameters are not supported");
            }
            let Some(d) = &p.node.declarator else {
                if ty == Ty::Void && fd.parameters.len() == 1 {
                    return Ok(out);
                }
                return self.err(&p.span, "a parameter without a name");
            };
            let (id, derived) = self.declarator(d)?;
            let pointer =
                match derived {
                    [] => false,
                    [x] if matches!(x.node, DerivedDeclarator::Pointer(_)) => true,
                    [x] if matches!(x.node, DerivedDeclarator::Array(_)) => true,
                    _ => return self.err(
                        &d.span,
                        "pointers to pointers and other compound parameter types are not supported",
                    ),
                };
            if ty == Ty::Void {
                return self.err(&p.span, "void parameters are not supported");
            }
            if pointer && ty == Ty::Bool {
                return self.err(
                    &p.span,
                    "bool arrays are not supported (int * and unsigned * only)",
                );
            }
            out.push((
                id.node.name.clone(),
                id.span,
                PTy {
                    ty,
                    pointer,
                    is_const,
                },
            ));
        }
        if fd.ellipsis == Ellipsis::Some {
            return Err(self.err_at(&Span::none(), "variadic functions are not supported"));
        }
        Ok(out)
    }

    /// The function declarator of a definition.
    fn fn_decl<'d>(
        &self,
        f: &'d Node<FunctionDefinition>,
    ) -> R<(&'d Node<Identifier>, &'d FunctionDeclarator)> {
        let (id, derived) = self.declarator(&f.node.declarator)?;
        match derived {
            [x] => match &x.node {
                DerivedDeclarator::Function(fd) => Ok((id, &fd.node)),
                DerivedDeclarator::KRFunction(ids) if ids.is_empty() => Ok((id, &EMPTY_FD)),
                DerivedDeclarator::KRFunction(_) => {
                    self.err(&f.span, "K&R-style parameter lists are not supported")
                }
                _ => self.err(&f.span, "functions returning pointers are not supported"),
            },
            _ => self.err(&f.span, "functions returning pointers are not supported"),
        }
    }

    // ------------------------------------------------------------------ analysis

    /// Whether code can reach `__syncthreads()` (directly or in a device function it calls).
    fn has_sync(&self, calls: Vec<String>) -> bool {
        let mut seen = HashSet::new();
        let mut todo = calls;
        while let Some(c) = todo.pop() {
            if c == "__syncthreads" {
                return true;
            }
            if seen.insert(c.clone()) {
                if let Some(f) = self.funcs.get(&c) {
                    todo.extend(calls_in_stmt(&f.node.statement));
                }
                if let Some(d) = self.p.defines.get(&c) {
                    todo.extend(calls_in_expr(&d.expr));
                }
            }
        }
        false
    }
    fn stmt_syncs(&self, s: &Node<Statement>) -> bool {
        let c = calls_in_stmt(s);
        self.has_sync(c)
    }
    fn expr_syncs(&self, e: &Node<Expression>) -> bool {
        let c = calls_in_expr(e);
        self.has_sync(c)
    }

    /// Compile something whose code is thrown away (a branch a constant condition never takes: its errors are
    /// still reported).
    fn dead<T>(&mut self, f: impl FnOnce(&mut Self) -> R<T>) -> R<T> {
        let (n, line, depth) = (self.code.len(), self.line, self.depth);
        let r = f(self);
        self.code.truncate(n);
        self.lines.truncate(n);
        self.line = line;
        self.depth = depth;
        r
    }

    // ------------------------------------------------------------------ statements

    fn stmt(&mut self, s: &Node<Statement>) -> R<()> {
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
    fn effect(&mut self, e: &Node<Expression>) -> R<()> {
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

    fn if_stmt(&mut self, i: &IfStatement, span: &Span) -> R<()> {
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
    fn scoped(&mut self, s: &Node<Statement>) -> R<()> {
        self.push_scope();
        let r = self.stmt(s);
        self.pop_scope();
        r
    }

    /// `while`, `do ... while` and `for` (after its initializer): a loop level, a body level per iteration.
    fn loop_stmt(
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

    fn return_stmt(&mut self, e: Option<&Node<Expression>>, span: &Span) -> R<()> {
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

    fn declaration(&mut self, d: &Node<Declaration>) -> R<()> {
        self.set_line(&d.span);
        let spec_end = d
            .node
            .declarators
            .first()
            .map_or(d.span.end, |x| x.span.start);
        let quals = self.p.quals_of(d.span.start, spec_end);
        let shared = quals.iter().any(|q| q.1 == Qual::Shared);
        if let Some((_, k)) = quals
            .iter()
            .find(|q| matches!(q.1, Qual::Global | Qual::Device))
        {
            let w = if *k == Qual::Global {
                "__global__"
            } else {
                "__device__"
            };
            return self.err(
                &d.span,
                format!(
                    "{w} variables are not supported (only __shared__ arrays and local scalars)"
                ),
            );
        }
        let (ty, is_const, storage) = self.decl_specs(&d.node.specifiers, false, &d.span)?;
        match storage {
            Some((StorageClassSpecifier::Extern, sp)) if shared => {
                return self.err(&sp, "extern __shared__ (dynamic shared memory) is not supported: give the array a fixed size");
            }
            Some((StorageClassSpecifier::Typedef, sp)) => {
                return self.err(&sp, "typedef is not supported");
            }
            Some((StorageClassSpecifier::Static, sp)) if !shared => {
                return self.err(&sp, "static variables are not supported");
            }
            Some((StorageClassSpecifier::Static, _)) => {}
            Some((_, sp)) => return self.err(&sp, "this storage class is not supported"),
            None => {}
        }
        for id in &d.node.declarators {
            let (name, derived) = self.declarator(&id.node.declarator)?;
            let nm = name.node.name.clone();
            if shared {
                if id.node.initializer.is_some() {
                    return self.err(&id.span, "__shared__ arrays cannot have initializers");
                }
                let mut dims = Vec::new();
                for x in derived {
                    match &x.node {
                        DerivedDeclarator::Array(a) => match &a.node.size {
                            ArraySize::VariableExpression(e) | ArraySize::StaticExpression(e) => {
                                let v = self.dead(|s| s.expr(e))?;
                                match v {
                                    V::C(n, _) if (n as i32) > 0 => dims.push(n),
                                    V::C(..) => return self.err(&e.span, format!("__shared__ array {nm} must have a positive size")),
                                    _ => return self.err(&e.span, format!("the size of __shared__ array {nm} must be a constant")),
                                }
                            }
                            _ => return self.err(&x.span, format!("__shared__ array {nm} needs a fixed size (dynamic shared memory is not supported)")),
                        },
                        _ => return self.err(&x.span, "__shared__ variables must be arrays of int, unsigned (1-D or 2-D)"),
                    }
                }
                if dims.is_empty() || dims.len() > 2 {
                    return self.err(
                        &id.span,
                        format!("__shared__ {nm} must be a 1-D or 2-D array"),
                    );
                }
                if ty == Ty::Bool {
                    return self.err(&id.span, "bool arrays are not supported (int and unsigned)");
                }
                let key = (d.span.start, nm.clone());
                let idx = match self.shared_decls.get(&key) {
                    Some(i) => *i,
                    None => {
                        let len = dims.iter().map(|x| u64::from(*x)).product::<u64>();
                        let end = u64::from(self.shared_next) + len;
                        if end > u64::from(self.cfg.shared_words) || len > 0xFFFF {
                            return self.err(
                                &id.span,
                                format!("__shared__ arrays need {end} words of shared memory; the machine has {} (shared_words)", self.cfg.shared_words),
                            );
                        }
                        self.arrays.push(Arr {
                            name: nm.clone(),
                            shared: true,
                            base: self.shared_next,
                            len: len as u32,
                            cols: if dims.len() == 2 { Some(dims[1]) } else { None },
                            ty,
                            is_const,
                        });
                        self.shared_next = end as u32;
                        self.shared_decls.insert(key, self.arrays.len() - 1);
                        self.arrays.len() - 1
                    }
                };
                self.bind(&nm, Bind::Arr(idx));
                continue;
            }
            if let Some(x) = derived.first() {
                return match &x.node {
                    DerivedDeclarator::Pointer(_) => self.err(&x.span, format!("pointer variables are not supported ({nm}): index a pointer parameter (p[i])")),
                    DerivedDeclarator::Array(_) => self.err(&x.span, format!("local arrays are not supported ({nm}): use a __shared__ array")),
                    _ => self.err(&x.span, format!("function declarations inside a function are not supported ({nm})")),
                };
            }
            if ty == Ty::Void {
                return self.err(&id.span, "void variables are not supported");
            }
            match &id.node.initializer {
                None => {
                    let r = self.alloc(&id.span)?;
                    self.own(r);
                    self.bind(&nm, Bind::Var(r, ty));
                }
                Some(init) => {
                    let e = match &init.node {
                        Initializer::Expression(e) => e,
                        Initializer::List(_) => {
                            return self.err(&init.span, "initializer lists are not supported");
                        }
                    };
                    self.set_line(&e.span);
                    let v = self.expr(e)?;
                    let v = self.convert(v, ty, &e.span)?;
                    let r = match v {
                        V::R(r, _, true) => r,
                        _ => {
                            let r = self.alloc(&id.span)?;
                            self.store_to(r, v);
                            r
                        }
                    };
                    self.own(r);
                    self.bind(&nm, Bind::Var(r, ty));
                }
            }
        }
        Ok(())
    }

    /// A file-scope `const int N = <constant>;` (no qualifiers): bound as a constant. `false`: not one.
    fn file_const(&mut self, d: &Node<Declaration>) -> R<bool> {
        let spec_end = d
            .node
            .declarators
            .first()
            .map_or(d.span.end, |x| x.span.start);
        if !self.p.quals_of(d.span.start, spec_end).is_empty() {
            return Ok(false);
        }
        let (ty, is_const, storage) = self.decl_specs(&d.node.specifiers, false, &d.span)?;
        if !is_const || !matches!(storage, None | Some((StorageClassSpecifier::Static, _))) {
            return Ok(false);
        }
        let mut binds = Vec::new();
        for id in &d.node.declarators {
            let (name, derived) = self.declarator(&id.node.declarator)?;
            let Some(Initializer::Expression(e)) = id.node.initializer.as_ref().map(|i| &i.node)
            else {
                return Ok(false);
            };
            if !derived.is_empty() {
                return Ok(false);
            }
            let v = self.dead(|s| s.expr(e))?;
            let V::C(c, _) = self.dead(|s| s.convert(v, ty, &e.span))? else {
                return self.err(
                    &e.span,
                    format!(
                        "the value of file-scope constant {} must be a constant",
                        name.node.name
                    ),
                );
            };
            binds.push((name.node.name.clone(), c));
        }
        for (n, c) in binds {
            self.scopes[0].binds.insert(n, Bind::Const(c, ty));
        }
        Ok(true)
    }

    // ------------------------------------------------------------------ expressions

    fn expr(&mut self, e: &Node<Expression>) -> R<V> {
        let sp = &e.span;
        match &e.node {
            Expression::Identifier(id) => self.ident(&id.node.name, sp),
            Expression::Constant(c) => self.constant(&c.node, sp),
            Expression::StringLiteral(_) => self.err(sp, "string literals are not supported"),
            Expression::Member(m) => self.member(&m.node, sp),
            Expression::Call(c) => self.call(&c.node, sp),
            Expression::UnaryOperator(u) => self.unary(&u.node, sp),
            Expression::Cast(c) => {
                let t = self.type_name(&c.node.type_name)?;
                let v = self.expr(&c.node.expression)?;
                if t == Ty::Void {
                    self.release(v);
                    return Ok(V::C(0, Ty::Void));
                }
                self.convert(v, t, sp)
            }
            Expression::BinaryOperator(b) => self.binary_expr(&b.node, sp),
            Expression::Conditional(c) => self.conditional(&c.node, sp),
            Expression::Comma(es) => {
                let n = es.len();
                for x in &es[..n - 1] {
                    self.effect(x)?;
                }
                self.expr(&es[n - 1])
            }
            Expression::SizeOfTy(_) | Expression::SizeOfVal(_) => {
                self.err(sp, "sizeof is not supported")
            }
            Expression::AlignOf(_) => self.err(sp, "_Alignof is not supported"),
            Expression::CompoundLiteral(_) => self.err(sp, "compound literals are not supported"),
            Expression::GenericSelection(_) => self.err(sp, "_Generic is not supported"),
            Expression::OffsetOf(_) => self.err(sp, "offsetof is not supported"),
            Expression::VaArg(_) => self.err(sp, "va_arg is not supported"),
            Expression::Statement(_) => self.err(sp, "statement expressions are not supported"),
        }
    }

    fn ident(&mut self, name: &str, sp: &Span) -> R<V> {
        match self.lookup(name) {
            Some(Bind::Var(r, t)) => Ok(V::R(r, t, false)),
            Some(Bind::Const(c, t)) => Ok(V::C(c, t)),
            Some(Bind::Arr(i)) => {
                let a = &self.arrays[i];
                self.err(sp, format!("array {} can only be indexed ({}[i]): pointer values and pointer arithmetic are not supported", a.name, a.name))
            }
            None => {
                if let Some(d) = self.p.defines.get(name) {
                    if self.define_stack.iter().any(|x| x == name) {
                        return self.err(sp, format!("#define {name} refers to itself"));
                    }
                    self.define_stack.push(name.to_string());
                    let old = self.shift;
                    self.shift = d.shift;
                    let r = self.expr(&d.expr);
                    self.shift = old;
                    self.define_stack.pop();
                    return r;
                }
                match name {
                    "true" => Ok(V::C(1, Ty::Bool)),
                    "false" => Ok(V::C(0, Ty::Bool)),
                    "threadIdx" | "blockIdx" | "blockDim" | "gridDim" => {
                        self.err(sp, format!("{name} without .x or .y"))
                    }
                    "warpSize" => Ok(V::C(self.cfg.lanes, Ty::Int)),
                    "INT_MAX" => Ok(V::C(i32::MAX as u32, Ty::Int)),
                    "INT_MIN" => Ok(V::C(i32::MIN as u32, Ty::Int)),
                    "UINT_MAX" => Ok(V::C(u32::MAX, Ty::Uns)),
                    _ if self.funcs.contains_key(name) => self.err(
                        sp,
                        format!(
                            "function {name} used as a value (function pointers are not supported)"
                        ),
                    ),
                    _ => self.err(sp, format!("unknown identifier {name}")),
                }
            }
        }
    }

    fn constant(&self, c: &Constant, sp: &Span) -> R<V> {
        match c {
            Constant::Float(_) => self.err(
                sp,
                "floating-point literals are not supported (integer types only)",
            ),
            Constant::Character(_) => self.err(sp, "character literals are not supported"),
            Constant::Integer(i) => {
                if i.suffix.size != IntegerSize::Int {
                    return self.err(sp, "long integer literals (l, ll suffix) are not supported");
                }
                if i.suffix.imaginary {
                    return self.err(sp, "imaginary literals are not supported");
                }
                let radix = match i.base {
                    IntegerBase::Decimal => 10,
                    IntegerBase::Octal => 8,
                    IntegerBase::Hexadecimal => 16,
                    IntegerBase::Binary => 2,
                };
                let digits: &str = &i.number;
                let n = if digits.is_empty() {
                    Some(0)
                } else {
                    u64::from_str_radix(digits, radix).ok()
                };
                let Some(n) = n.filter(|n| *n <= u64::from(u32::MAX)) else {
                    return self.err(
                        sp,
                        "integer literal does not fit in 32 bits (long is not supported)",
                    );
                };
                let n = n as u32;
                let ty = if i.suffix.unsigned {
                    Ty::Uns
                } else if n <= i32::MAX as u32 {
                    Ty::Int
                } else if radix != 10 {
                    Ty::Uns
                } else {
                    return self.err(sp, "decimal literal does not fit in int (it would be long, which is not supported; add a u suffix)");
                };
                Ok(V::C(n, ty))
            }
        }
    }

    fn member(&mut self, m: &MemberExpression, sp: &Span) -> R<V> {
        let base = match &m.expression.node {
            Expression::Identifier(id) => id.node.name.clone(),
            _ => {
                return self.err(
                    sp,
                    "member access is only supported on threadIdx, blockIdx, blockDim, gridDim",
                );
            }
        };
        if m.operator.node == MemberOperator::Indirect {
            return self.err(sp, "-> (structs, pointers) is not supported");
        }
        let f = m.identifier.node.name.as_str();
        let k = match f {
            "x" => 0,
            "y" => 1,
            "z" => 2,
            _ => return self.err(&m.identifier.span, format!("{base}.{f}: only .x, .y, .z")),
        };
        let v = match base.as_str() {
            "threadIdx" => {
                if k < 2 {
                    self.tid[k]
                } else {
                    V::C(0, Ty::Int)
                }
            }
            "blockIdx" => {
                if k < 2 {
                    self.bid[k]
                } else {
                    V::C(0, Ty::Int)
                }
            }
            "blockDim" => V::C(if k < 2 { self.bdim[k] } else { 1 }, Ty::Int),
            "gridDim" => V::C(if k < 2 { self.gdim[k] } else { 1 }, Ty::Int),
            _ => {
                return self.err(
                    sp,
                    format!("member access {base}.{f}: structs are not supported"),
                );
            }
        };
        Ok(v)
    }

    fn unary(&mut self, u: &UnaryOperatorExpression, sp: &Span) -> R<V> {
        use UnaryOperator as U;
        match u.operator.node {
            U::PreIncrement | U::PreDecrement => {
                self.incdec(&u.operand, u.operator.node == U::PreIncrement, true, sp)
            }
            U::PostIncrement | U::PostDecrement => {
                self.incdec(&u.operand, u.operator.node == U::PostIncrement, false, sp)
            }
            U::Address => self.err(
                sp,
                "taking an address is only supported as atomicAdd(&a[i], v) (no pointer variables)",
            ),
            U::Indirection => self.err(
                sp,
                "pointer dereference (*p) is not supported: index the pointer parameter (p[i])",
            ),
            U::Plus => {
                let v = self.expr(&u.operand)?;
                let v = self.not_void(v, sp)?;
                Ok(v.retype(v.ty().promote()))
            }
            U::Minus => {
                let v = self.expr(&u.operand)?;
                let v = self.not_void(v, sp)?;
                let t = v.ty().promote();
                if let V::C(c, _) = v {
                    return Ok(V::C(c.wrapping_neg(), t));
                }
                let z = V::R(0, t, false);
                self.alu(O::Sub, z, v, t, sp)
            }
            U::Complement => {
                let v = self.expr(&u.operand)?;
                let v = self.not_void(v, sp)?;
                let t = v.ty().promote();
                if let V::C(c, _) = v {
                    return Ok(V::C(!c, t));
                }
                self.alu(O::Xor, v, V::C(u32::MAX, t), t, sp)
            }
            U::Negate => {
                let v = self.expr(&u.operand)?;
                let v = self.not_void(v, sp)?;
                if let V::C(c, _) = v {
                    return Ok(V::C(u32::from(c == 0), Ty::Bool));
                }
                self.alu(O::Seq, v, V::C(0, Ty::Int), Ty::Bool, sp)
            }
        }
    }

    /// An array element: the array and its (flattened) index in a register.
    fn element(&mut self, e: &Node<Expression>) -> R<(usize, V)> {
        let Expression::BinaryOperator(b) = &e.node else {
            return self.err(&e.span, "expected an array element a[i]");
        };
        if b.node.operator.node != BinaryOperator::Index {
            return self.err(&e.span, "expected an array element a[i]");
        }
        self.element_of(&b.node, &e.span)
    }
    /// The array and index of `a[i]` or `s[i][j]` (`b` is the outer `[]`).
    fn element_of(&mut self, b: &BinaryOperatorExpression, sp: &Span) -> R<(usize, V)> {
        let e = &Node::new((), *sp);
        let (lhs, rhs) = (&b.lhs, &b.rhs);
        let (arr, idx) = match &lhs.node {
            Expression::Identifier(id) => {
                let a = self.array_named(&id.node.name, &lhs.span)?;
                if self.arrays[a].cols.is_some() {
                    return self.err(
                        &e.span,
                        format!(
                            "{} is 2-D: index it as {}[i][j]",
                            id.node.name, id.node.name
                        ),
                    );
                }
                let i = self.expr(rhs)?;
                let i = self.index_value(i, &rhs.span)?;
                (a, i)
            }
            Expression::BinaryOperator(b2) if b2.node.operator.node == BinaryOperator::Index => {
                let Expression::Identifier(id) = &b2.node.lhs.node else {
                    return self.err(
                        &lhs.span,
                        "only arrays (pointer parameters and __shared__ arrays) can be indexed",
                    );
                };
                let a = self.array_named(&id.node.name, &b2.node.lhs.span)?;
                let Some(cols) = self.arrays[a].cols else {
                    return self.err(
                        &e.span,
                        format!("{} is 1-D: index it as {}[i]", id.node.name, id.node.name),
                    );
                };
                let i = self.expr(&b2.node.rhs)?;
                let i = self.index_value(i, &b2.node.rhs.span)?;
                let j = self.expr(rhs)?;
                let j = self.index_value(j, &rhs.span)?;
                let row = self.arith(&BinaryOperator::Multiply, i, V::C(cols, Ty::Uns), &e.span)?;
                (a, self.arith(&BinaryOperator::Plus, row, j, &e.span)?)
            }
            _ => {
                return self.err(
                    &lhs.span,
                    "only arrays (pointer parameters and __shared__ arrays) can be indexed",
                );
            }
        };
        let idx = self.in_reg(idx, &e.span)?;
        Ok((arr, idx))
    }
    fn index_value(&self, v: V, sp: &Span) -> R<V> {
        let v = self.not_void(v, sp)?;
        Ok(v.retype(Ty::Uns))
    }
    fn array_named(&self, name: &str, sp: &Span) -> R<usize> {
        match self.lookup(name) {
            Some(Bind::Arr(a)) => Ok(a),
            Some(_) => self.err(sp, format!("{name} is not an array (only pointer parameters and __shared__ arrays can be indexed)")),
            None => self.err(sp, format!("unknown array {name}")),
        }
    }
    fn mem_instr(&self, a: usize, load: bool, atomic: bool, rd: u8, idx: u8, data: u8) -> Instr {
        let ar = &self.arrays[a];
        let op = match (ar.shared, load, atomic) {
            (true, _, true) => O::Atoms,
            (false, _, true) => O::Atomg,
            (true, true, _) => O::Lds,
            (false, true, _) => O::Ldg,
            (true, false, _) => O::Sts,
            (false, false, _) => O::Stg,
        };
        Instr::mem(op, rd, idx, data, ar.base as u16, ar.len as u16)
    }
    fn load(&mut self, a: usize, idx: V, sp: &Span) -> R<V> {
        let ir = Self::reg_of(idx);
        let dst = match idx {
            V::R(r, _, true) => r,
            _ => self.alloc(sp)?,
        };
        self.set_line(sp);
        let i = self.mem_instr(a, true, false, dst, ir, 0);
        self.emit(i);
        Ok(V::R(dst, self.arrays[a].ty, true))
    }
    fn store(&mut self, a: usize, idx: V, v: V, sp: &Span) -> R<V> {
        if self.arrays[a].is_const {
            return self.err(
                sp,
                format!("{} is const: it cannot be written", self.arrays[a].name),
            );
        }
        let v = self.convert(v, self.arrays[a].ty, sp)?;
        let v = self.in_reg(v, sp)?;
        self.set_line(sp);
        let i = self.mem_instr(a, false, false, 0, Self::reg_of(idx), Self::reg_of(v));
        self.emit(i);
        self.release(idx);
        Ok(v)
    }

    fn incdec(&mut self, operand: &Node<Expression>, inc: bool, pre: bool, sp: &Span) -> R<V> {
        let one = V::C(1, Ty::Int);
        let op = if inc {
            BinaryOperator::Plus
        } else {
            BinaryOperator::Minus
        };
        match &operand.node {
            Expression::Identifier(id) => {
                let (r, t) = self.var_lvalue(&id.node.name, &operand.span)?;
                let old = if pre {
                    None
                } else {
                    Some(self.copy_to_temp(V::R(r, t, false), sp)?)
                };
                let nv = self.arith(&op, V::R(r, t, false), one, sp)?;
                let nv = self.convert(nv, t, sp)?;
                self.store_to(r, nv);
                Ok(old.unwrap_or(V::R(r, t, false)))
            }
            Expression::BinaryOperator(b) if b.node.operator.node == BinaryOperator::Index => {
                let (a, idx) = self.element(operand)?;
                let t = self.arrays[a].ty;
                let idx_kept = Self::keep(idx);
                let cur = self.load(a, idx_kept, sp)?;
                let old = if pre {
                    None
                } else {
                    Some(self.copy_to_temp(cur, sp)?)
                };
                let nv = self.arith(&op, cur, one, sp)?;
                let nv = self.convert(nv, t, sp)?;
                let stored = self.store(a, idx, nv, sp)?;
                match old {
                    Some(o) => {
                        self.release(stored);
                        Ok(o)
                    }
                    None => Ok(stored),
                }
            }
            _ => self.err(
                &operand.span,
                "++ and -- need a variable or an array element",
            ),
        }
    }
    /// A copy of `v` in a new temporary (the old value of a post-increment).
    fn copy_to_temp(&mut self, v: V, sp: &Span) -> R<V> {
        let r = self.alloc(sp)?;
        let src = Self::reg_of(v);
        match v {
            V::C(c, _) => self.emit(Instr::rri(O::Add, r, 0, c)),
            _ => self.emit(Instr::rri(O::Add, r, src, 0)),
        };
        Ok(V::R(r, v.ty(), true))
    }
    /// `v` as a non-temporary view (the caller keeps ownership of the original).
    fn keep(v: V) -> V {
        match v {
            V::R(r, t, _) => V::R(r, t, false),
            c => c,
        }
    }
    fn var_lvalue(&self, name: &str, sp: &Span) -> R<(u8, Ty)> {
        match self.lookup(name) {
            Some(Bind::Var(r, t)) => Ok((r, t)),
            Some(Bind::Const(..)) => self.err(sp, format!("{name} cannot be assigned")),
            Some(Bind::Arr(_)) => self.err(sp, format!("pointer {name} cannot be assigned or moved (pointer arithmetic is not supported)")),
            None => {
                if self.p.defines.contains_key(name) {
                    self.err(sp, format!("{name} is a #define: it cannot be assigned"))
                } else {
                    self.err(sp, format!("unknown identifier {name}"))
                }
            }
        }
    }

    fn binary_expr(&mut self, b: &BinaryOperatorExpression, sp: &Span) -> R<V> {
        use BinaryOperator as B;
        let op = &b.operator.node;
        match op {
            B::Index => {
                let (a, idx) = self.element_of(b, sp)?;
                self.load(a, idx, sp)
            }
            B::LogicalAnd | B::LogicalOr => self.logical(*op == B::LogicalAnd, &b.lhs, &b.rhs, sp),
            _ if is_assign(op) => self.assign(op, &b.lhs, &b.rhs, sp),
            _ => {
                let x = self.expr(&b.lhs)?;
                let x = self.not_void(x, &b.lhs.span)?;
                let y = self.expr(&b.rhs)?;
                let y = self.not_void(y, &b.rhs.span)?;
                self.arith(op, x, y, sp)
            }
        }
    }

    fn assign(
        &mut self,
        op: &BinaryOperator,
        lhs: &Node<Expression>,
        rhs: &Node<Expression>,
        sp: &Span,
    ) -> R<V> {
        let aop = compound_op(op);
        match &lhs.node {
            Expression::Identifier(id) => {
                let (r, t) = self.var_lvalue(&id.node.name, &lhs.span)?;
                let v = self.expr(rhs)?;
                let v = self.not_void(v, &rhs.span)?;
                let v = match &aop {
                    Some(o) => self.arith(o, V::R(r, t, false), v, sp)?,
                    None => v,
                };
                let v = self.convert(v, t, sp)?;
                self.store_to(r, v);
                Ok(V::R(r, t, false))
            }
            Expression::BinaryOperator(b) if b.node.operator.node == BinaryOperator::Index => {
                let (a, idx) = self.element(lhs)?;
                let v = match &aop {
                    Some(o) => {
                        let cur = self.load(a, Self::keep(idx), sp)?;
                        let y = self.expr(rhs)?;
                        let y = self.not_void(y, &rhs.span)?;
                        self.arith(o, cur, y, sp)?
                    }
                    None => {
                        let y = self.expr(rhs)?;
                        self.not_void(y, &rhs.span)?
                    }
                };
                self.store(a, idx, v, sp)
            }
            _ => self.err(
                &lhs.span,
                format!(
                    "the left side of {} must be a variable or an array element",
                    op_name(op)
                ),
            ),
        }
    }

    /// `x op y` for the arithmetic, bitwise, shift and comparison operators.
    fn arith(&mut self, op: &BinaryOperator, x: V, y: V, sp: &Span) -> R<V> {
        use BinaryOperator as B;
        let shift = matches!(op, B::ShiftLeft | B::ShiftRight);
        let t = if shift {
            x.ty().promote()
        } else {
            Ty::common(x.ty().promote(), y.ty().promote())
        };
        let cmp = matches!(
            op,
            B::Less | B::Greater | B::LessOrEqual | B::GreaterOrEqual | B::Equals | B::NotEquals
        );
        let rt = if cmp { Ty::Bool } else { t };
        if let (V::C(a, _), V::C(b, _)) = (x, y)
            && let Some(v) = fold(op, a, b, t)
        {
            return Ok(V::C(v, rt));
        }
        let x = x.retype(t);
        let y = if shift {
            y.retype(y.ty().promote())
        } else {
            y.retype(t)
        };
        let s = t != Ty::Uns;
        Ok(match op {
            B::Plus => self.alu_c(O::Add, x, y, t, sp)?,
            B::Minus => {
                if let V::C(c, _) = y {
                    self.alu(O::Add, x, V::C(c.wrapping_neg(), t), t, sp)?
                } else {
                    self.alu(O::Sub, x, y, t, sp)?
                }
            }
            B::Multiply => {
                if let Some(k) = [x, y]
                    .iter()
                    .position(|v| matches!(v, V::C(c, _) if c.is_power_of_two()))
                {
                    let (v, c) = if k == 0 { (y, x) } else { (x, y) };
                    let V::C(c, _) = c else { unreachable!() };
                    if c == 1 {
                        v
                    } else {
                        self.alu(O::Shl, v, V::C(c.trailing_zeros(), t), t, sp)?
                    }
                } else if is_zero(x) || is_zero(y) {
                    self.release(x);
                    self.release(y);
                    V::C(0, t)
                } else {
                    self.alu_c(O::Mul, x, y, t, sp)?
                }
            }
            B::Divide | B::Modulo => self.divmod(x, y, t, *op == B::Modulo, sp)?,
            B::ShiftLeft => self.alu(O::Shl, x, y, t, sp)?,
            B::ShiftRight => self.alu(if s { O::Sra } else { O::Shr }, x, y, t, sp)?,
            B::BitwiseAnd => self.alu_c(O::And, x, y, t, sp)?,
            B::BitwiseOr => self.alu_c(O::Or, x, y, t, sp)?,
            B::BitwiseXor => self.alu_c(O::Xor, x, y, t, sp)?,
            B::Equals => self.alu_c(O::Seq, x, y, rt, sp)?,
            B::NotEquals => self.alu_c(O::Sne, x, y, rt, sp)?,
            B::Less | B::Greater | B::LessOrEqual | B::GreaterOrEqual => {
                let lt = if s { O::Slt } else { O::Sltu };
                // a < b, b < a, !(b < a), !(a < b)
                let (a, b, neg) = match op {
                    B::Less => (x, y, false),
                    B::Greater => (y, x, false),
                    B::LessOrEqual => (y, x, true),
                    _ => (x, y, true),
                };
                let v = self.alu(lt, a, b, rt, sp)?;
                if neg {
                    self.alu(O::Xor, v, V::C(1, rt), rt, sp)?
                } else {
                    v
                }
            }
            _ => {
                return self.err(
                    sp,
                    format!("operator {} is not supported here", op_name(op)),
                );
            }
        })
    }

    /// `x / y` or `x % y` in type `t` (C truncation; the machine's rules for 0 and INT_MIN / -1).
    fn divmod(&mut self, x: V, y: V, t: Ty, rem: bool, sp: &Span) -> R<V> {
        let s = t != Ty::Uns;
        if let V::C(d, _) = y {
            if d == 0 {
                return Ok(if rem {
                    x
                } else {
                    self.release(x);
                    V::C(u32::MAX, t)
                });
            }
            if !s && d.is_power_of_two() {
                let k = d.trailing_zeros();
                return if rem {
                    self.alu(O::And, x, V::C(d - 1, t), t, sp)
                } else {
                    self.alu(O::Shr, x, V::C(k, t), t, sp)
                };
            }
            if s && d == 1 {
                return Ok(if rem {
                    self.release(x);
                    V::C(0, t)
                } else {
                    x
                });
            }
            if s && d == u32::MAX {
                return if rem {
                    self.release(x);
                    Ok(V::C(0, t))
                } else {
                    self.alu(O::Sub, V::R(0, t, false), x, t, sp)
                };
            }
            if s && (d as i32) > 0 && d.is_power_of_two() {
                let k = d.trailing_zeros();
                let xr = self.in_reg(x, sp)?;
                let xk = Self::keep(xr);
                // q = (x + ((x >> 31) >>> (32 - k))) >> k
                let b = self.alu(O::Sra, xk, V::C(31, t), t, sp)?;
                let b = self.alu(O::Shr, b, V::C(32 - k, t), t, sp)?;
                let q = self.alu(O::Add, b, xk, t, sp)?;
                let q = self.alu(O::Sra, q, V::C(k, t), t, sp)?;
                if !rem {
                    self.release(xr);
                    return Ok(q);
                }
                let m = self.alu(O::Shl, q, V::C(k, t), t, sp)?;
                let r = self.alu(O::Sub, xr, m, t, sp)?;
                return Ok(r);
            }
        }
        // The machine's micro-coded division (its rules for 0 and INT_MIN / -1 are the ones above).
        let op = match (s, rem) {
            (true, false) => O::Div,
            (true, true) => O::Rem,
            (false, false) => O::Divu,
            (false, true) => O::Remu,
        };
        self.alu(op, x, y, t, sp)
    }

    /// `&&` and `||` with C's short circuit: the right side runs only in the lanes where the left side does
    /// not decide (unless it is pure: then it is computed everywhere).
    fn logical(
        &mut self,
        and: bool,
        lhs: &Node<Expression>,
        rhs: &Node<Expression>,
        sp: &Span,
    ) -> R<V> {
        let a = self.expr(lhs)?;
        let a = self.not_void(a, &lhs.span)?;
        if let V::C(c, _) = a {
            let decided = if and { c == 0 } else { c != 0 };
            if decided {
                self.dead(|s| {
                    let v = s.expr(rhs)?;
                    s.release(v);
                    Ok(())
                })?;
                return Ok(V::C(u32::from(!and), Ty::Bool));
            }
            let b = self.expr(rhs)?;
            let b = self.not_void(b, &rhs.span)?;
            return self.as_bool01(b, sp);
        }
        if pure(rhs) {
            let a = self.as_bool01(a, sp)?;
            let b = self.expr(rhs)?;
            let b = self.not_void(b, &rhs.span)?;
            if let V::C(c, _) = b {
                // a && 1 = a, a && 0 = 0, a || 0 = a, a || 1 = 1
                return Ok(match (and, c != 0) {
                    (true, true) | (false, false) => a,
                    (true, false) => {
                        self.release(a);
                        V::C(0, Ty::Bool)
                    }
                    (false, true) => {
                        self.release(a);
                        V::C(1, Ty::Bool)
                    }
                });
            }
            let b = self.as_bool01(b, sp)?;
            return self.alu_c(if and { O::And } else { O::Or }, a, b, Ty::Bool, sp);
        }
        let a = self.as_bool01(a, sp)?;
        let r = self.owned_reg(a, sp)?;
        self.enter_level(sp, Instr::rrr(O::If, 0, r, 0))?;
        if !and {
            self.emit(Instr::new(O::Else));
        }
        let j = if !self.expr_syncs(rhs) {
            Some(self.emit(Instr::imm(O::Jnone, 0)))
        } else {
            None
        };
        let b = self.expr(rhs)?;
        let b = self.not_void(b, &rhs.span)?;
        let b = self.as_bool01(b, sp)?;
        self.store_to(r, b);
        self.close_skip(j);
        self.leave_level();
        Ok(V::R(r, Ty::Bool, true))
    }

    fn conditional(&mut self, c: &ConditionalExpression, sp: &Span) -> R<V> {
        let cv = self.expr(&c.condition)?;
        let cv = self.not_void(cv, &c.condition.span)?;
        if let V::C(k, _) = cv {
            let (taken, other) = if k != 0 {
                (&c.then_expression, &c.else_expression)
            } else {
                (&c.else_expression, &c.then_expression)
            };
            let ov = self.dead(|s| {
                let v = s.expr(other)?;
                s.release(v);
                Ok(v)
            })?;
            let v = self.expr(taken)?;
            let t = self.cond_type(v.ty(), ov.ty());
            return Ok(v.retype(t));
        }
        if pure(&c.then_expression) && pure(&c.else_expression) {
            let x = self.expr(&c.then_expression)?;
            let y = self.expr(&c.else_expression)?;
            let t = self.cond_type(x.ty(), y.ty());
            if t == Ty::Void {
                self.release(cv);
                return Ok(V::C(0, Ty::Void));
            }
            let r = self.owned_reg(y, sp)?;
            let cr = Self::reg_of(cv);
            match x {
                V::C(k, _) => self.emit(Instr::rri(O::Cmov, r, cr, k)),
                V::R(xr, _, _) => self.emit(Instr::rrr(O::Cmov, r, cr, xr)),
            };
            self.release(x);
            self.release(cv);
            return Ok(V::R(r, t, true));
        }
        let r = self.alloc(sp)?;
        self.enter_level(sp, Instr::rrr(O::If, 0, Self::reg_of(cv), 0))?;
        self.release(cv);
        let j = if !self.expr_syncs(&c.then_expression) {
            Some(self.emit(Instr::imm(O::Jnone, 0)))
        } else {
            None
        };
        let x = self.expr(&c.then_expression)?;
        let xt = x.ty();
        if xt != Ty::Void {
            self.store_to(r, x);
        }
        self.close_skip(j);
        self.emit(Instr::new(O::Else));
        let j = if !self.expr_syncs(&c.else_expression) {
            Some(self.emit(Instr::imm(O::Jnone, 0)))
        } else {
            None
        };
        let y = self.expr(&c.else_expression)?;
        let yt = y.ty();
        if yt != Ty::Void {
            self.store_to(r, y);
        }
        self.close_skip(j);
        self.leave_level();
        let t = self.cond_type(xt, yt);
        if t == Ty::Void {
            self.free_reg(r);
            return Ok(V::C(0, Ty::Void));
        }
        Ok(V::R(r, t, true))
    }
    fn cond_type(&self, a: Ty, b: Ty) -> Ty {
        if a == Ty::Void || b == Ty::Void {
            Ty::Void
        } else if a == Ty::Bool && b == Ty::Bool {
            Ty::Bool
        } else {
            Ty::common(a.promote(), b.promote())
        }
    }

    // ------------------------------------------------------------------ calls

    fn call(&mut self, c: &CallExpression, sp: &Span) -> R<V> {
        let Expression::Identifier(id) = &c.callee.node else {
            return self.err(
                sp,
                "calls through expressions (function pointers) are not supported",
            );
        };
        let name = id.node.name.as_str();
        let args = &c.arguments;
        let nargs = |s: &Self, n: usize| -> R<()> {
            if args.len() != n {
                s.err(
                    sp,
                    format!("{name} takes {n} argument{}", if n == 1 { "" } else { "s" }),
                )
            } else {
                Ok(())
            }
        };
        if let Some(f) = self.funcs.get(name).copied() {
            return self.inline(name, f, args, sp);
        }
        match name {
            "__syncthreads" => {
                nargs(self, 0)?;
                self.set_line(sp);
                if self.nwarps > 1 {
                    self.emit(Instr::imm(O::Bar, self.nwarps));
                }
                Ok(V::C(0, Ty::Void))
            }
            "min" | "max" | "__umulhi" | "__mulhi" => {
                nargs(self, 2)?;
                let x = self.expr(&args[0])?;
                let x = self.not_void(x, &args[0].span)?;
                let y = self.expr(&args[1])?;
                let y = self.not_void(y, &args[1].span)?;
                let (t, op) = match name {
                    "__umulhi" => (Ty::Uns, O::Mulhu),
                    "__mulhi" => (Ty::Int, O::Mulhi),
                    _ => {
                        let t = Ty::common(x.ty().promote(), y.ty().promote());
                        let op = match (name, t == Ty::Uns) {
                            ("min", false) => O::Min,
                            ("min", true) => O::Minu,
                            ("max", false) => O::Max,
                            _ => O::Maxu,
                        };
                        (t, op)
                    }
                };
                if let (V::C(a, _), V::C(b, _)) = (x, y) {
                    let v = match op {
                        O::Min => (a as i32).min(b as i32) as u32,
                        O::Max => (a as i32).max(b as i32) as u32,
                        O::Minu => a.min(b),
                        O::Maxu => a.max(b),
                        O::Mulhu => ((u64::from(a) * u64::from(b)) >> 32) as u32,
                        _ => ((i64::from(a as i32) * i64::from(b as i32)) >> 32) as u32,
                    };
                    return Ok(V::C(v, t));
                }
                self.alu_c(op, x.retype(t), y.retype(t), t, sp)
            }
            "abs" => {
                nargs(self, 1)?;
                let x = self.expr(&args[0])?;
                let x = self.not_void(x, &args[0].span)?;
                if let V::C(a, _) = x {
                    return Ok(V::C((a as i32).wrapping_abs() as u32, Ty::Int));
                }
                let x = x.retype(Ty::Int);
                let xr = self.in_reg(x, sp)?;
                let xk = Self::keep(xr);
                let neg = self.alu(O::Sub, V::R(0, Ty::Int, false), xk, Ty::Int, sp)?;
                let v = self.alu(O::Max, neg, xk, Ty::Int, sp)?;
                self.release(xr);
                Ok(v)
            }
            "atomicAdd" | "atomicSub" => {
                nargs(self, 2)?;
                let target = match &args[0].node {
                    Expression::UnaryOperator(u) if u.node.operator.node == UnaryOperator::Address => &u.node.operand,
                    _ => return self.err(&args[0].span, format!("{name}'s first argument must be &a[i] (an element of a global or __shared__ array)")),
                };
                let (a, idx) = self.element(target)?;
                if self.arrays[a].is_const {
                    return self.err(
                        &args[0].span,
                        format!("{} is const: it cannot be written", self.arrays[a].name),
                    );
                }
                let t = self.arrays[a].ty;
                let v = self.expr(&args[1])?;
                let v = self.not_void(v, &args[1].span)?;
                let v = if name == "atomicSub" {
                    self.arith(&BinaryOperator::Minus, V::C(0, t), v, sp)?
                } else {
                    v
                };
                let v = self.in_reg(v.retype(t), sp)?;
                let dst = match idx {
                    V::R(r, _, true) => r,
                    _ => match v {
                        V::R(r, _, true) => r,
                        _ => self.alloc(sp)?,
                    },
                };
                self.set_line(sp);
                let i = self.mem_instr(a, false, true, dst, Self::reg_of(idx), Self::reg_of(v));
                self.emit(i);
                if Self::reg_of(idx) != dst {
                    self.release(idx);
                }
                if Self::reg_of(v) != dst {
                    self.release(v);
                }
                Ok(V::R(dst, t, true))
            }
            n if [
                "__shfl",
                "__ballot",
                "__any",
                "__all",
                "__activemask",
                "__syncwarp",
                "__match",
                "__reduce",
            ]
            .iter()
            .any(|p| n.starts_with(p)) =>
            {
                self.err(sp, format!("warp intrinsic {n} is not supported"))
            }
            n if n.starts_with("atomic") => self.err(
                sp,
                format!("{n} is not supported (only atomicAdd and atomicSub)"),
            ),
            "printf" | "malloc" | "free" | "memcpy" | "memset" | "assert" => self.err(
                sp,
                format!("{name} is not supported (unknown function on this machine)"),
            ),
            _ => self.err(sp, format!("unknown function {name}")),
        }
    }

    /// Inline a device function: arguments bound to its parameters, its body in a scope (and, when it returns
    /// early, a counter level of its own), its value in a register.
    fn inline(
        &mut self,
        name: &str,
        f: &'a Node<FunctionDefinition>,
        args: &[Node<Expression>],
        sp: &Span,
    ) -> R<V> {
        if self.frames.iter().any(|fr| fr.name == name) {
            return self.err(sp, format!("recursion: {name} calls itself (directly or through other functions); device functions are inlined"));
        }
        let (_, fd) = self.fn_decl(f)?;
        let params = self.param_types(fd)?;
        let (rt, _, _) = self.decl_specs(&f.node.specifiers, true, &f.span)?;
        if params.len() != args.len() {
            return self.err(
                sp,
                format!(
                    "{name} takes {} argument{}, {} given",
                    params.len(),
                    if params.len() == 1 { "" } else { "s" },
                    args.len()
                ),
            );
        }
        let assigned = assigned_in(&f.node.statement);
        let mut binds = Vec::new();
        let mut owned = Vec::new();
        for ((pn, _, pt), a) in params.iter().zip(args) {
            if pt.pointer {
                let arr = match &a.node {
                    Expression::Identifier(id) => match self.lookup(&id.node.name) {
                        Some(Bind::Arr(i)) => i,
                        _ => return self.err(&a.span, format!("parameter {pn} of {name} is a pointer: pass an array")),
                    },
                    _ => return self.err(&a.span, format!("parameter {pn} of {name} is a pointer: pass an array by name (pointer arithmetic is not supported)")),
                };
                if self.arrays[arr].cols.is_some() {
                    return self.err(&a.span, "2-D arrays cannot be passed to functions");
                }
                if self.arrays[arr].ty != pt.ty {
                    return self.err(
                        &a.span,
                        format!(
                            "{} is {} but parameter {pn} of {name} is {} *",
                            self.arrays[arr].name,
                            self.arrays[arr].ty.name(),
                            pt.ty.name()
                        ),
                    );
                }
                if self.arrays[arr].is_const && !pt.is_const {
                    return self.err(
                        &a.span,
                        format!(
                            "{} is const but parameter {pn} of {name} is not",
                            self.arrays[arr].name
                        ),
                    );
                }
                binds.push((pn.clone(), Bind::Arr(arr)));
                continue;
            }
            let v = self.expr(a)?;
            let v = self.convert(v, pt.ty, &a.span)?;
            let b = match v {
                V::C(c, t) if !assigned.contains(pn) => Bind::Const(c, t),
                V::R(r, t, true) => {
                    owned.push(r);
                    Bind::Var(r, t)
                }
                V::R(r, t, false) if !assigned.contains(pn) => Bind::Var(r, t),
                _ => {
                    let r = self.alloc(&a.span)?;
                    self.store_to(r, v);
                    owned.push(r);
                    Bind::Var(r, pt.ty)
                }
            };
            binds.push((pn.clone(), b));
        }
        let ret = if rt == Ty::Void {
            None
        } else {
            Some((self.alloc(sp)?, rt))
        };
        self.push_scope();
        for (n, b) in binds {
            self.bind(&n, b);
        }
        for r in owned {
            self.own(r);
        }
        let level = needs_return_level(&f.node.statement);
        if level {
            self.enter_level(sp, Instr::rri(O::If, 0, 0, 1))?;
        }
        let line = self.line;
        self.frames.push(Frame {
            name: name.to_string(),
            scope_base: self.scopes.len() - 1,
            ret,
            level: if level { Some(self.depth) } else { None },
            loops: Vec::new(),
            kernel: false,
        });
        let r = self.stmt(&f.node.statement);
        self.frames.pop();
        r?;
        self.line = line;
        if level {
            self.leave_level();
        }
        self.pop_scope();
        Ok(match ret {
            Some((r, t)) => V::R(r, t, true),
            None => V::C(0, Ty::Void),
        })
    }
}

/// The parameters of `f()`.
static EMPTY_FD: FunctionDeclarator = FunctionDeclarator {
    parameters: Vec::new(),
    ellipsis: Ellipsis::None,
};

/// Compile the kernel of `p` for `spec` on `cfg`.
pub(crate) fn compile(
    p: &Parsed,
    file: &str,
    spec: &LaunchSpec,
    cfg: &Simt4Config,
) -> R<KernelImage> {
    let mut cg = Cg {
        p,
        file,
        cfg: *cfg,
        code: Vec::new(),
        lines: Vec::new(),
        line: 0,
        used: [false; 32],
        scopes: vec![Scope::default()],
        frames: Vec::new(),
        depth: 0,
        arrays: Vec::new(),
        shared_decls: HashMap::new(),
        shared_next: 0,
        funcs: HashMap::new(),
        nwarps: 1,
        bdim: spec.block,
        gdim: spec.grid,
        tid: [V::C(0, Ty::Int); 2],
        bid: [V::C(0, Ty::Int); 2],
        shift: 0,
        define_stack: Vec::new(),
    };
    let pre = p.prelude_len();
    let nowhere = Span::none();
    // File scope: functions, __shared__ arrays.
    let mut kernel: Option<&Node<FunctionDefinition>> = None;
    let mut file_shared = Vec::new();
    for d in &p.unit.0 {
        if d.span.start < pre {
            continue;
        }
        match &d.node {
            ExternalDeclaration::FunctionDefinition(f) => {
                let quals = p.quals_of(f.span.start, f.node.declarator.span.start);
                let (id, _) = cg.fn_decl(f)?;
                let name = id.node.name.clone();
                if quals.iter().any(|q| q.1 == Qual::Global) {
                    if kernel.is_some() {
                        return cg.err(
                            &id.span,
                            format!("a second __global__ kernel {name}: one kernel per file"),
                        );
                    }
                    kernel = Some(f);
                } else if quals.iter().any(|q| q.1 == Qual::Device) {
                    if cg.funcs.contains_key(&name) {
                        return cg.err(&id.span, format!("function {name} is defined twice"));
                    }
                    cg.funcs.insert(name, f);
                } else if quals.iter().any(|q| q.1 == Qual::Shared) {
                    return cg.err(&id.span, "__shared__ functions do not exist");
                } else {
                    return cg.err(
                        &id.span,
                        format!(
                            "function {name} needs __device__ (host functions are not supported)"
                        ),
                    );
                }
            }
            ExternalDeclaration::Declaration(dd) => {
                let is_fn_decl = dd.node.declarators.iter().any(|x| {
                    x.node
                        .declarator
                        .node
                        .derived
                        .iter()
                        .any(|y| matches!(y.node, DerivedDeclarator::Function(_)))
                });
                if is_fn_decl {
                    continue; // a prototype
                }
                let spec_end = dd
                    .node
                    .declarators
                    .first()
                    .map_or(dd.span.end, |x| x.span.start);
                if p.quals_of(dd.span.start, spec_end)
                    .iter()
                    .any(|q| q.1 == Qual::Shared)
                {
                    file_shared.push(dd);
                } else if cg.file_const(dd)? {
                    continue;
                } else {
                    // let the declaration code name the problem
                    cg.declaration(dd)?;
                    return cg.err(&dd.span, "global variables are not supported (only __shared__ arrays; use #define for constants)");
                }
            }
            ExternalDeclaration::StaticAssert(a) => {
                return cg.err(&a.span, "_Static_assert is not supported");
            }
        }
    }
    let Some(kernel) = kernel else {
        return Err(CompileError {
            file: file.into(),
            line: 0,
            column: 0,
            message: "no __global__ kernel in the file".into(),
        });
    };
    let (kid, kfd) = cg.fn_decl(kernel)?;
    let kname = kid.node.name.clone();
    let kspan = kid.span;
    let (kret, _, _) = cg.decl_specs(&kernel.node.specifiers, true, &kernel.span)?;
    if kret != Ty::Void {
        return cg.err(&kspan, format!("kernel {kname} must return void"));
    }
    // The launch.
    let bs = u64::from(spec.block[0]) * u64::from(spec.block[1]);
    let blocks = u64::from(spec.grid[0]) * u64::from(spec.grid[1]);
    if spec.block.contains(&0) || spec.grid.contains(&0) {
        return cg.err(&kspan, "grid and block sizes must be at least 1");
    }
    if bs > u64::from(cfg.max_threads()) {
        return cg.err(
            &kspan,
            format!(
                "a block of {}x{} = {bs} threads exceeds the machine's {} threads per block ({} lanes x {} warps)",
                spec.block[0],
                spec.block[1],
                cfg.max_threads(),
                cfg.lanes,
                cfg.warps
            ),
        );
    }
    if spec.block[0] >= 1 << 16
        || spec.block[1] >= 1 << 16
        || spec.grid[0] >= 1 << 16
        || spec.grid[1] >= 1 << 16
    {
        return cg.err(&kspan, "grid and block sizes must be below 65536");
    }
    let bs = bs as u32;
    cg.nwarps = bs.div_ceil(cfg.lanes);
    let _ = blocks;
    // Parameters and arguments.
    let params = cg.param_types(kfd)?;
    let assigned = assigned_in(&kernel.node.statement);
    cg.push_scope();
    let kernel_scope = cg.scopes.len() - 1;
    let mut global: Vec<u32> = Vec::new();
    let mut places = Vec::new();
    let mut param_inits: Vec<(u8, u32)> = Vec::new();
    for (pn, psp, pt) in &params {
        let Some(arg) = spec.arg(pn) else {
            return cg.err(
                psp,
                format!("missing launch argument {pn} (parameter {pn} of kernel {kname})"),
            );
        };
        match (arg, pt.pointer) {
            (ArgValue::Scalar(_), true) => return cg.err(psp, format!("launch argument {pn} is a scalar but parameter {pn} is a pointer (an array is expected)")),
            (ArgValue::Array { .. }, false) => return cg.err(psp, format!("launch argument {pn} is an array but parameter {pn} is a scalar")),
            (ArgValue::Scalar(v), false) => {
                if !(-(1i64 << 31)..(1i64 << 32)).contains(v) {
                    return cg.err(psp, format!("launch argument {pn} = {v} does not fit in 32 bits"));
                }
                let c = if pt.ty == Ty::Bool { u32::from(*v != 0) } else { *v as u32 };
                if assigned.contains(pn) {
                    let r = cg.alloc(psp)?;
                    cg.own(r);
                    cg.bind(pn, Bind::Var(r, pt.ty));
                    param_inits.push((r, c));
                } else {
                    cg.bind(pn, Bind::Const(c, pt.ty));
                }
            }
            (ArgValue::Array { data, shape }, true) => {
                let base = global.len() as u64;
                let len = data.len() as u64;
                if base + len > u64::from(cfg.global_words) || len > 0xFFFF {
                    return cg.err(
                        psp,
                        format!("the arrays need {} words of global memory; the machine has {} (global_words)", base + len, cfg.global_words),
                    );
                }
                global.extend(data.iter().map(|x| *x as u32));
                cg.arrays.push(Arr { name: pn.clone(), shared: false, base: base as u32, len: len as u32, cols: None, ty: pt.ty, is_const: pt.is_const });
                let idx = cg.arrays.len() - 1;
                cg.bind(pn, Bind::Arr(idx));
                places.push(ArrayPlace { name: pn.clone(), base: base as u32, len: len as u32, shape: shape.clone(), unsigned: pt.ty == Ty::Uns });
            }
        }
    }
    for (an, _) in &spec.args {
        if !params.iter().any(|(pn, _, _)| pn == an) {
            return cg.err(
                &kspan,
                format!("unknown launch argument {an}: kernel {kname} has no parameter {an}"),
            );
        }
    }
    // File-scope __shared__ arrays (bound in the file scope).
    let saved = cg.scopes.split_off(1);
    for dd in file_shared {
        cg.declaration(dd)?;
    }
    cg.scopes.extend(saved);

    // The program.
    let (gx, gy) = (spec.grid[0], spec.grid[1]);
    let (bx, by) = (spec.block[0], spec.block[1]);
    cg.emit(Instr::imm(O::Creset, bs));
    let grid_loop = gx * gy > 1;
    if gx > 1 {
        let r = cg.alloc(&nowhere)?;
        cg.emit(Instr::rri(O::Add, r, 0, 0));
        cg.bid[0] = V::R(r, Ty::Int, false);
    }
    if gy > 1 {
        let r = cg.alloc(&nowhere)?;
        cg.emit(Instr::rri(O::Add, r, 0, 0));
        cg.bid[1] = V::R(r, Ty::Int, false);
    }
    let top = cg.pc();
    if grid_loop {
        cg.emit(Instr::imm(O::Creset, bs));
    }
    if bs > 1 {
        if by == 1 {
            let r = cg.alloc(&nowhere)?;
            cg.emit(Instr::rrr(O::Tid, r, 0, 0));
            cg.tid[0] = V::R(r, Ty::Int, false);
        } else if bx == 1 {
            let r = cg.alloc(&nowhere)?;
            cg.emit(Instr::rrr(O::Tid, r, 0, 0));
            cg.tid[1] = V::R(r, Ty::Int, false);
        } else {
            let tx = cg.alloc(&nowhere)?;
            let ty = cg.alloc(&nowhere)?;
            let tmp = cg.alloc(&nowhere)?;
            cg.emit(Instr::rrr(O::Tid, tx, 0, 0));
            let magic = ((1u64 << 32) / u64::from(bx) + 1) as u32;
            cg.emit(Instr::rri(O::Mulhu, ty, tx, magic));
            cg.emit(Instr::rri(O::Mul, tmp, ty, bx));
            cg.emit(Instr::rrr(O::Sub, tx, tx, tmp));
            cg.free_reg(tmp);
            cg.tid = [V::R(tx, Ty::Int, false), V::R(ty, Ty::Int, false)];
        }
    }
    for (r, c) in param_inits {
        cg.emit(Instr::rri(O::Add, r, 0, c));
    }
    cg.frames.push(Frame {
        name: kname.clone(),
        scope_base: kernel_scope,
        ret: None,
        level: None,
        loops: Vec::new(),
        kernel: true,
    });
    cg.stmt(&kernel.node.statement)?;
    cg.frames.pop();
    cg.line = 0;
    cg.emit(Instr::imm(O::Creset, bs));
    if cg.nwarps > 1 {
        cg.emit(Instr::imm(O::Bar, cg.nwarps));
    }
    if grid_loop {
        let c = cg.alloc(&nowhere)?;
        let (rx, ry) = (Cg::reg_of(cg.bid[0]), Cg::reg_of(cg.bid[1]));
        if gx > 1 && gy > 1 {
            cg.emit(Instr::rri(O::Add, rx, rx, 1));
            cg.emit(Instr::rri(O::Seq, c, rx, gx));
            cg.emit(Instr::rri(O::Cmov, rx, c, 0));
            cg.emit(Instr::rrr(O::Add, ry, ry, c));
            cg.emit(Instr::rri(O::Slt, c, ry, gy));
        } else if gx > 1 {
            cg.emit(Instr::rri(O::Add, rx, rx, 1));
            cg.emit(Instr::rri(O::Slt, c, rx, gx));
        } else {
            cg.emit(Instr::rri(O::Add, ry, ry, 1));
            cg.emit(Instr::rri(O::Slt, c, ry, gy));
        }
        cg.emit(Instr::rri(O::Brk, 0, c, 1));
        cg.emit(Instr::imm(O::Jany, top as u32));
    }
    cg.emit(Instr::new(O::Halt));
    if cg.code.len() > PROGRAM_WORDS as usize {
        return cg.err(
            &kspan,
            format!(
                "the program has {} instructions; the machine holds {PROGRAM_WORDS}",
                cg.code.len()
            ),
        );
    }
    Ok(KernelImage {
        name: kname,
        file: file.to_string(),
        program: cg.code,
        lines: cg.lines,
        global,
        arrays: places,
        warps: cg.nwarps,
    })
}
