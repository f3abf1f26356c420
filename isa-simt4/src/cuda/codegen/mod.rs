//! The code generator: a kernel's syntax tree and a launch to SIMT4 code (see [`super`] for the program's
//! shape and the control-flow scheme).
//!
//! The code generation context [`Cg`] is defined here, with the shared types (bindings, arrays, scopes, frames),
//! its error, position and emission primitives, the barrier analysis and the entry point [`compile`] as a sequence
//! of named steps. Its other methods are split by subject: `decl` (registers, names, types, declarations, arrays),
//! `stmt` (statements and control flow), `expr` (values, expressions and operators), `call` (built-in and device
//! function calls) and `launch` (the kernel entry: the launch, parameters, thread and block indices).

mod call;
mod decl;
mod expr;
mod launch;
mod stmt;

use super::CompileError;
use super::analysis::{calls_in_expr, calls_in_stmt};
use super::front::{Parsed, Qual};
use super::types::{Ty, V};
use crate::isa::{Instr, Opcode as O, PROGRAM_WORDS, Simt4Config};
use crate::launch::{KernelImage, LaunchSpec};
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
}

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
    // File scope: functions, __shared__ arrays.
    let (kernel, file_shared) = file_scope(&mut cg, p)?;
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
    let bs = launch::check_launch(&mut cg, spec, cfg, kspan)?;
    // Parameters and arguments.
    let (kernel_scope, global, places, param_inits) =
        launch::bind_params(&mut cg, kernel, kfd, spec, cfg, &kname, kspan)?;
    // File-scope __shared__ arrays (bound in the file scope).
    let saved = cg.scopes.split_off(1);
    for dd in file_shared {
        cg.declaration(dd)?;
    }
    cg.scopes.extend(saved);

    // The program.
    let (top, grid_loop) = launch::prologue(&mut cg, spec, bs, param_inits)?;
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
    launch::epilogue(&mut cg, spec, bs, top, grid_loop)?;
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

/// What `file_scope` finds: the kernel (if any) and the declarations of file-scope `__shared__` arrays.
type FileScope<'a> = (Option<&'a Node<FunctionDefinition>>, Vec<&'a Node<Declaration>>);

/// File scope: the `__device__` functions (in `cg.funcs`), the kernel, the `__shared__` arrays (their declarations,
/// compiled after the parameters are bound) and the file-scope constants (bound in the file scope).
fn file_scope<'a>(cg: &mut Cg<'a>, p: &'a Parsed) -> R<FileScope<'a>> {
    let pre = p.prelude_len();
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
    Ok((kernel, file_shared))
}
