//! Values, expressions and operators: ALU instructions on values, conversions, identifiers (also `#define`s),
//! literals, unary and binary operators, `++`/`--`, assignment, arithmetic with constant folding and strength
//! reduction, division, `&&`/`||` and `?:`.

use super::{Bind, Cg, R};
use crate::cuda::analysis::{is_assign, pure};
use crate::cuda::types::{Ty, V, compound_op, fold, op_name};
use crate::isa::{Instr, Opcode as O};
use lang_c::ast::*;
use lang_c::span::{Node, Span};

fn is_zero(v: V) -> bool {
    matches!(v, V::C(0, _))
}

impl<'a> Cg<'a> {
    // ------------------------------------------------------------------ values

    /// `op` on `a` and `b` (`b` may be an immediate): the result in a temporary of type `ty`.
    pub(super) fn alu(&mut self, op: O, a: V, b: V, ty: Ty, span: &Span) -> R<V> {
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
    pub(super) fn alu_c(&mut self, op: O, a: V, b: V, ty: Ty, span: &Span) -> R<V> {
        if matches!(a, V::C(..)) && !matches!(b, V::C(..)) {
            self.alu(op, b, a, ty, span)
        } else {
            self.alu(op, a, b, ty, span)
        }
    }
    /// `v` as 0 or 1.
    pub(super) fn as_bool01(&mut self, v: V, span: &Span) -> R<V> {
        match v {
            V::C(c, _) => Ok(V::C(u32::from(c != 0), Ty::Bool)),
            _ if v.ty() == Ty::Bool => Ok(v),
            _ => self.alu(O::Sne, v, V::C(0, Ty::Int), Ty::Bool, span),
        }
    }
    /// Convert for an assignment or a parameter: to `bool` is `!= 0`; `int` and `unsigned` share their bits.
    pub(super) fn convert(&mut self, v: V, to: Ty, span: &Span) -> R<V> {
        if v.ty() == Ty::Void {
            return self.err(span, "a void value is used");
        }
        match to {
            Ty::Bool => self.as_bool01(v, span),
            Ty::Void => Ok(v),
            t => Ok(v.retype(t)),
        }
    }
    pub(super) fn not_void(&self, v: V, span: &Span) -> R<V> {
        if v.ty() == Ty::Void {
            self.err(span, "a void value is used")
        } else {
            Ok(v)
        }
    }

    // ------------------------------------------------------------------ expressions

    pub(super) fn expr(&mut self, e: &Node<Expression>) -> R<V> {
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

    pub(super) fn ident(&mut self, name: &str, sp: &Span) -> R<V> {
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

    pub(super) fn constant(&self, c: &Constant, sp: &Span) -> R<V> {
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

    pub(super) fn unary(&mut self, u: &UnaryOperatorExpression, sp: &Span) -> R<V> {
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

    pub(super) fn incdec(&mut self, operand: &Node<Expression>, inc: bool, pre: bool, sp: &Span) -> R<V> {
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
    pub(super) fn copy_to_temp(&mut self, v: V, sp: &Span) -> R<V> {
        let r = self.alloc(sp)?;
        let src = Self::reg_of(v);
        match v {
            V::C(c, _) => self.emit(Instr::rri(O::Add, r, 0, c)),
            _ => self.emit(Instr::rri(O::Add, r, src, 0)),
        };
        Ok(V::R(r, v.ty(), true))
    }
    /// `v` as a non-temporary view (the caller keeps ownership of the original).
    pub(super) fn keep(v: V) -> V {
        match v {
            V::R(r, t, _) => V::R(r, t, false),
            c => c,
        }
    }
    pub(super) fn var_lvalue(&self, name: &str, sp: &Span) -> R<(u8, Ty)> {
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

    pub(super) fn binary_expr(&mut self, b: &BinaryOperatorExpression, sp: &Span) -> R<V> {
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

    pub(super) fn assign(
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
    pub(super) fn arith(&mut self, op: &BinaryOperator, x: V, y: V, sp: &Span) -> R<V> {
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
    pub(super) fn divmod(&mut self, x: V, y: V, t: Ty, rem: bool, sp: &Span) -> R<V> {
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
    pub(super) fn logical(
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

    pub(super) fn conditional(&mut self, c: &ConditionalExpression, sp: &Span) -> R<V> {
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
    pub(super) fn cond_type(&self, a: Ty, b: Ty) -> Ty {
        if a == Ty::Void || b == Ty::Void {
            Ty::Void
        } else if a == Ty::Bool && b == Ty::Bool {
            Ty::Bool
        } else {
            Ty::common(a.promote(), b.promote())
        }
    }
}
