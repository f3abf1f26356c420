//! Calls: the built-in functions and intrinsics (`__syncthreads`, `min`, `max`, `abs`, `__umulhi`, `__mulhi`,
//! `atomicAdd`/`atomicSub`, and the errors for the unsupported ones) and `__device__` functions, which are inlined.

use super::{Bind, Cg, Frame, R};
use crate::cuda::analysis::{assigned_in, needs_return_level};
use crate::cuda::types::{Ty, V};
use crate::isa::{Instr, Opcode as O};
use lang_c::ast::*;
use lang_c::span::{Node, Span};

impl<'a> Cg<'a> {
    // ------------------------------------------------------------------ calls

    pub(super) fn call(&mut self, c: &CallExpression, sp: &Span) -> R<V> {
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
    pub(super) fn inline(
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
