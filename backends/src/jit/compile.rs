//! [`Compiler`]: sparse matrices into native code (cranelift); [`CompiledMatrix`]: their products.

use crate::cpu::SparseMatrix;
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{types, AbiParam, Function, InstBuilder, MemFlagsData, Signature, UserFuncName};
use cranelift_codegen::isa::{OwnedTargetIsa, TargetFrontendConfig};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};
use rayon::prelude::*;

/// Nonzeros per compiled function, about. Register allocation grows faster than linearly with a function's
/// size, and functions are compiled on the CPU's threads: chunks of this size compile at about 7 µs per
/// nonzero on this project's 2-core machine (8.2 s for the 1.15 M weights of the 64 KiB RV32 machine).
pub const CHUNK_NNZ: usize = 8192;

/// Nonzeros from which a row-form product runs its functions on the CPU's threads (the sparse executor's
/// threshold: a task hand-off costs a few microseconds).
const PARALLEL_NNZ: usize = 65_536;

/// A compilation error.
#[derive(Debug, thiserror::Error)]
pub enum JitError {
    /// cranelift has no back end for this CPU.
    #[error("cranelift cannot compile for this CPU: {0}")]
    Host(String),
    /// cranelift refused a function (a bug of this module, or a matrix too large for 32-bit offsets).
    #[error("compiling projection {what}: {msg}")]
    Compile { what: String, msg: String },
}

/// How a projection's code walks its nonzeros (see the module docs of [`crate::jit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// One dot product per output row: for dense inputs.
    Rows,
    /// One block per input column, skipped when the input is exactly zero: for sparse inputs.
    Columns,
}

/// A compiled function: reads `x` `[cols]`, writes (row form) or adds to (column form) `y` `[rows]`.
type KernelFn = unsafe extern "C" fn(x: *const f32, y: *mut f32);

/// The code memory of one matrix's functions, freed when the matrix is dropped.
struct Code(Option<JITModule>);

// SAFETY: the module is only touched when it is built (by one thread) and when it is dropped; the functions
// it holds are pure code that reads `x` and writes `y`, and may run on any thread.
unsafe impl Send for Code {}
unsafe impl Sync for Code {}

impl Drop for Code {
    fn drop(&mut self) {
        if let Some(m) = self.0.take() {
            // SAFETY: the only pointers into the module are the `CompiledMatrix`'s, which is being dropped.
            unsafe { m.free_memory() };
        }
    }
}

/// `y` shared between the threads of a row-form product: each function writes its own rows only.
#[derive(Clone, Copy)]
struct OutPtr(*mut f32);
// SAFETY: the functions of a row-form matrix write disjoint rows.
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

/// A projection `[rows, cols]` compiled into native functions; [`Self::matvec`] is its product.
pub struct CompiledMatrix {
    rows: usize,
    cols: usize,
    form: Form,
    nnz: usize,
    funcs: Vec<KernelFn>,
    parallel: bool,
    /// Bytes of machine code (with the weights held as constants).
    code_bytes: usize,
    // Declared last: dropped after the function pointers.
    _code: Code,
}

impl std::fmt::Debug for CompiledMatrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledMatrix").field("rows", &self.rows).field("cols", &self.cols).field("form", &self.form).field("nnz", &self.nnz).field("functions", &self.funcs.len()).finish()
    }
}

impl CompiledMatrix {
    /// `y = W x` `[rows]` for `x` `[cols]`: every output summed in increasing column order from `+0`, the
    /// sparse executor's column-major product bit for bit.
    ///
    /// # Panics
    /// If `x` is not `cols` long (the compiled code reads `x` at fixed offsets).
    pub fn matvec(&self, x: &[f32]) -> Vec<f32> {
        assert_eq!(x.len(), self.cols, "input of a compiled [{}, {}] projection", self.rows, self.cols);
        let mut y = vec![0f32; self.rows];
        let out = OutPtr(y.as_mut_ptr());
        if self.parallel {
            // SAFETY: `x` holds `cols` entries and `y` `rows` (every offset the code uses is below them, see
            // `Compiler::compile`); row-form functions write disjoint rows, so the threads never share one.
            self.funcs.par_iter().for_each(|f| unsafe { f(x.as_ptr(), { out }.0) });
        } else {
            for f in &self.funcs {
                // SAFETY: as above, one function at a time.
                unsafe { f(x.as_ptr(), out.0) };
            }
        }
        y
    }

    /// `[rows, cols]`.
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// Nonzero weights compiled.
    pub fn nnz(&self) -> usize {
        self.nnz
    }

    /// Compiled functions.
    pub fn functions(&self) -> usize {
        self.funcs.len()
    }

    /// Bytes of machine code.
    pub fn code_bytes(&self) -> usize {
        self.code_bytes
    }

    /// The code's form.
    pub fn form(&self) -> Form {
        self.form
    }
}

/// Compiles sparse matrices for the CPU it runs on (cranelift's native back end, optimised for speed).
pub struct Compiler {
    isa: OwnedTargetIsa,
}

/// One function's work: rows with their nonzeros `(column, weight)` ascending, or columns with theirs
/// `(row, weight)`.
type Chunk = Vec<(u32, Vec<(u32, f32)>)>;

impl Compiler {
    /// A compiler for this CPU.
    pub fn new() -> Result<Self, JitError> {
        let mut flags = settings::builder();
        let set = |f: &mut settings::Builder, k: &str, v: &str| f.set(k, v).map_err(|e| JitError::Host(format!("setting {k}: {e}")));
        set(&mut flags, "opt_level", "speed")?;
        set(&mut flags, "is_pic", "false")?;
        set(&mut flags, "use_colocated_libcalls", "false")?;
        // The IR is generated here, one shape of function; the verifier would double the compile time.
        set(&mut flags, "enable_verifier", "false")?;
        let isa = cranelift_native::builder().map_err(|e| JitError::Host(e.to_string()))?.finish(settings::Flags::new(flags)).map_err(|e| JitError::Host(e.to_string()))?;
        Ok(Self { isa })
    }

    /// Compile `m` (column-major, as [`SparseMatrix::from_dense`] makes it) in `form`; `what` names it in
    /// errors. The functions are compiled on the CPU's threads.
    pub fn compile(&self, m: &SparseMatrix, form: Form, what: &str) -> Result<CompiledMatrix, JitError> {
        let err = |msg: String| JitError::Compile { what: what.to_string(), msg };
        let (rows, cols) = m.shape();
        let (ptr, idx, vals) = m.csc().ok_or_else(|| err("the matrix is not column-major".into()))?;
        // Offsets are 32-bit immediates: 4 bytes per entry.
        if rows.max(cols) >= (i32::MAX / 4) as usize {
            return Err(err(format!("[{rows}, {cols}] is too large for 32-bit offsets")));
        }
        let lines: Vec<(u32, Vec<(u32, f32)>)> = match form {
            Form::Columns => (0..cols).filter(|&c| ptr[c + 1] > ptr[c]).map(|c| (c as u32, (ptr[c] as usize..ptr[c + 1] as usize).map(|p| (idx[p], vals[p])).collect())).collect(),
            Form::Rows => {
                let mut by_row: Vec<Vec<(u32, f32)>> = vec![Vec::new(); rows];
                for c in 0..cols {
                    for p in ptr[c] as usize..ptr[c + 1] as usize {
                        by_row[idx[p] as usize].push((c as u32, vals[p]));
                    }
                }
                by_row.into_iter().enumerate().filter(|(_, e)| !e.is_empty()).map(|(r, e)| (r as u32, e)).collect()
            }
        };
        // Lines in order, cut into chunks of about CHUNK_NNZ nonzeros (a line is never split: a column's
        // additions stay in order, a row's sum in one chain).
        let mut chunks: Vec<Chunk> = Vec::new();
        let mut size = 0;
        for line in lines {
            if chunks.is_empty() || size + line.1.len() > CHUNK_NNZ && size > 0 {
                chunks.push(Vec::new());
                size = 0;
            }
            size += line.1.len();
            chunks.last_mut().expect("a chunk").push(line);
        }
        let mut sig = Signature::new(self.isa.default_call_conv());
        let pt = self.isa.pointer_type();
        sig.params.extend([AbiParam::new(pt), AbiParam::new(pt)]);
        let bodies: Vec<(Vec<u8>, u64)> = chunks
            .par_iter()
            .enumerate()
            .map(|(k, chunk)| {
                let func = build(&sig, k as u32, chunk, form, self.isa.frontend_config());
                let mut ctx = Context::for_function(func);
                let code = ctx.compile(&*self.isa, &mut ControlPlane::default()).map_err(|e| err(format!("{:?}", e.inner)))?;
                if !code.buffer.relocs().is_empty() {
                    return Err(err("the code needs relocations".into()));
                }
                let align = (code.buffer.alignment as u64).max(self.isa.function_alignment().minimum as u64).max(self.isa.symbol_alignment());
                Ok((code.code_buffer().to_vec(), align))
            })
            .collect::<Result<_, JitError>>()?;
        let mut module = JITModule::new(JITBuilder::with_isa(self.isa.clone(), default_libcall_names()));
        let mut ids = Vec::with_capacity(bodies.len());
        let mut code_bytes = 0;
        for (k, (bytes, align)) in bodies.iter().enumerate() {
            let id = module.declare_function(&format!("f{k}"), Linkage::Local, &sig).map_err(|e| err(e.to_string()))?;
            module.define_function_bytes(id, *align, bytes, &[]).map_err(|e| err(e.to_string()))?;
            code_bytes += bytes.len();
            ids.push(id);
        }
        module.finalize_definitions().map_err(|e| err(e.to_string()))?;
        let funcs = ids
            .iter()
            .map(|id| {
                let p = module.get_finalized_function(*id);
                // SAFETY: the function was compiled with the signature `(ptr, ptr)` in the ISA's default
                // calling convention, which is the C convention of this target.
                unsafe { std::mem::transmute::<*const u8, KernelFn>(p) }
            })
            .collect();
        Ok(CompiledMatrix { rows, cols, form, nnz: m.nnz(), funcs, parallel: form == Form::Rows && m.nnz() >= PARALLEL_NNZ && chunks.len() > 1, code_bytes, _code: Code(Some(module)) })
    }
}

/// The IR of one function over `chunk` (see [`Form`]): `fn(x: *const f32, y: *mut f32)`. Every address is
/// `x` or `y` plus `4 * index`, an index below the matrix's shape.
fn build(sig: &Signature, k: u32, chunk: &Chunk, form: Form, target: TargetFrontendConfig) -> Function {
    let mut func = Function::with_name_signature(UserFuncName::user(0, k), sig.clone());
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut func, &mut fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let (x, y) = (b.block_params(entry)[0], b.block_params(entry)[1]);
    let fl = MemFlagsData::trusted();
    let zero = b.ins().f32const(0.0);
    match form {
        Form::Rows => {
            for (r, entries) in chunk {
                let mut acc = zero;
                for &(c, w) in entries {
                    let xv = b.ins().load(types::F32, fl, x, 4 * c as i32);
                    let wc = b.ins().f32const(w);
                    let p = b.ins().fmul(wc, xv);
                    acc = b.ins().fadd(acc, p);
                }
                b.ins().store(fl, acc, y, 4 * *r as i32);
            }
        }
        Form::Columns => {
            for (c, entries) in chunk {
                let xv = b.ins().load(types::F32, fl, x, 4 * *c as i32);
                let (body, next) = (b.create_block(), b.create_block());
                let is_zero = b.ins().fcmp(FloatCC::Equal, xv, zero);
                b.ins().brif(is_zero, next, &[], body, &[]);
                b.switch_to_block(body);
                for &(r, w) in entries {
                    let yv = b.ins().load(types::F32, fl, y, 4 * r as i32);
                    let wc = b.ins().f32const(w);
                    let p = b.ins().fmul(wc, xv);
                    let s = b.ins().fadd(yv, p);
                    b.ins().store(fl, s, y, 4 * r as i32);
                }
                b.ins().jump(next, &[]);
                b.switch_to_block(next);
            }
        }
    }
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(target);
    func
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::HostTensor;

    fn matrix(rows: usize, cols: usize, seed: u64, density: u64, frac: bool) -> HostTensor {
        let mut s = seed;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let data = (0..rows * cols)
            .map(|_| {
                let r = next();
                if r % 100 >= density {
                    0.0
                } else if frac {
                    ((r >> 8) % 20_000) as f32 / 1_000.0 - 10.0 + 1e-3
                } else {
                    ((r >> 8) % 9) as f32 - 4.0
                }
            })
            .collect();
        HostTensor::new(vec![rows, cols], data)
    }

    /// Both forms equal the sparse executor's column-major product bit for bit: on integer weights and on
    /// fractional ones (rounding in the same order), with zero, negative-zero, NaN and infinite inputs, and
    /// across several functions and threads.
    #[test]
    fn compiled_products_equal_the_column_major_product_bit_for_bit() {
        let jit = Compiler::new().expect("a cranelift back end for this CPU");
        for (rows, cols, density, frac) in [(37, 53, 20, false), (300, 400, 90, true), (2000, 700, 6, true), (5, 3, 0, false)] {
            let t = matrix(rows, cols, rows as u64 * 31 + cols as u64, density, frac);
            let m = SparseMatrix::from_dense(&t);
            for form in [Form::Rows, Form::Columns] {
                let c = jit.compile(&m, form, "test").expect("compiles");
                assert_eq!((c.shape(), c.nnz(), c.form()), ((rows, cols), m.nnz(), form));
                if m.nnz() > 2 * CHUNK_NNZ {
                    assert!(c.functions() > 2, "{} nonzeros in {} functions", m.nnz(), c.functions());
                }
                for seed in 0..4u64 {
                    let mut x = matrix(1, cols, seed + 7, 70, true).data;
                    if seed == 1 {
                        x[0] = -0.0;
                        x[cols / 2] = f32::INFINITY;
                    }
                    if seed == 2 {
                        x[cols - 1] = f32::NAN;
                    }
                    let want = m.matvec(&x);
                    let got = c.matvec(&x);
                    // Bit patterns, every NaN as one (a NaN's payload may come from either operand).
                    let bits = |v: &[f32]| v.iter().map(|f| if f.is_nan() { u32::MAX } else { f.to_bits() }).collect::<Vec<_>>();
                    assert_eq!(bits(&got), bits(&want), "[{rows}, {cols}] {form:?} seed {seed}");
                    let (ptr, _, _) = m.csc().expect("CSC");
                    if seed == 2 && ptr[cols] > ptr[cols - 1] {
                        assert!(got.iter().any(|v| v.is_nan()), "a NaN input reaches its rows");
                    }
                }
            }
        }
    }

    #[test]
    fn a_row_major_matrix_is_refused_with_its_name() {
        let jit = Compiler::new().expect("a cranelift back end");
        let m = SparseMatrix::from_dense(&matrix(4, 4, 3, 50, false)).into_row_major();
        let e = jit.compile(&m, Form::Rows, "layer 3 gate").expect_err("row-major input");
        assert!(e.to_string().contains("layer 3 gate") && e.to_string().contains("column-major"), "{e}");
    }
}
