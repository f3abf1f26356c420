//! The launch and the kernel entry: the launch's checks, the kernel's parameters bound to the launch arguments
//! (constants, registers, arrays placed in global memory), the program around the kernel body (the block loop,
//! `threadIdx` from `TID`, `blockIdx` in registers, the barrier at the end) and `threadIdx`, `blockIdx`,
//! `blockDim`, `gridDim` in expressions. The steps are called in order by `compile`.

use super::{Arr, Bind, Cg, R};
use crate::cuda::analysis::assigned_in;
use crate::cuda::types::{Ty, V};
use crate::isa::{Instr, Opcode as O, Simt4Config};
use crate::launch::{ArgValue, ArrayPlace, LaunchSpec};
use lang_c::ast::*;
use lang_c::span::{Node, Span};

/// What `bind_params` gives: the kernel's scope, the global memory's initial words, the arrays' places, and the
/// registers of assigned scalar parameters with their values.
pub(super) type BoundParams = (usize, Vec<u32>, Vec<ArrayPlace>, Vec<(u8, u32)>);

/// Check the launch against the machine and set the warps per block; the threads per block.
pub(super) fn check_launch(
    cg: &mut Cg<'_>,
    spec: &LaunchSpec,
    cfg: &Simt4Config,
    kspan: Span,
) -> R<u32> {
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
    Ok(bs)
}

/// Bind the kernel's parameters to the launch arguments, in a scope of the kernel's own (scalars become constants,
/// or registers when the kernel assigns them; arrays are placed in global memory), and check that every launch
/// argument names a parameter.
pub(super) fn bind_params(
    cg: &mut Cg<'_>,
    kernel: &Node<FunctionDefinition>,
    kfd: &FunctionDeclarator,
    spec: &LaunchSpec,
    cfg: &Simt4Config,
    kname: &str,
    kspan: Span,
) -> R<BoundParams> {
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
    Ok((kernel_scope, global, places, param_inits))
}

/// The program before the kernel body: `CRESET`, `blockIdx` registers, the block loop's top, `threadIdx` from
/// `TID`, the assigned parameters' values. The loop's top and whether there is a block loop.
pub(super) fn prologue(
    cg: &mut Cg<'_>,
    spec: &LaunchSpec,
    bs: u32,
    param_inits: Vec<(u8, u32)>,
) -> R<(usize, bool)> {
    let nowhere = Span::none();
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
    Ok((top, grid_loop))
}

/// The program after the kernel body: `CRESET`, the barrier, the next block (the block loop), `HALT`.
pub(super) fn epilogue(
    cg: &mut Cg<'_>,
    spec: &LaunchSpec,
    bs: u32,
    top: usize,
    grid_loop: bool,
) -> R<()> {
    let nowhere = Span::none();
    let (gx, gy) = (spec.grid[0], spec.grid[1]);
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
    Ok(())
}

impl<'a> Cg<'a> {
    // ------------------------------------------------------------------ thread and block indices

    pub(super) fn member(&mut self, m: &MemberExpression, sp: &Span) -> R<V> {
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
}
