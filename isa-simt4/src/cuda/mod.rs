//! The CUDA subset front end: parse a kernel with `lang-c`, compile it for one launch into SIMT4 code
//! ([`crate::KernelImage`]).
//!
//! # The subset
//!
//! One `__global__ void` kernel per file with `int`/`unsigned`/`bool` scalar and `int *`/`unsigned *` (also
//! `const`) pointer parameters; `__shared__` arrays of fixed size (1-D, 2-D; in the kernel, a device function or
//! at file scope); `__device__` functions (inlined; recursion is an error); local `int`/`unsigned`/`bool`
//! scalars; `threadIdx`/`blockIdx`/`blockDim`/`gridDim` `.x`/`.y` (`int`; `.z` is 0, or 1 for the sizes);
//! `if`/`else`, `for`, `while`, `do`/`while`, `break`, `continue`, `return` (also early, in the kernel and in
//! device functions); `?:`, `&&`/`||` (short circuit), all C integer operators with C's usual arithmetic
//! conversions, compound assignment, `++`/`--`; casts between `int`/`unsigned`/`bool`; `__syncthreads()`;
//! `atomicAdd(&a[i], v)` (and `atomicSub`) on global and shared arrays; `min`, `max`, `abs`, `__umulhi`,
//! `__mulhi`; decimal/hex/octal literals with `u`; `true`, `false`, `INT_MIN`, `INT_MAX`, `UINT_MAX`,
//! `warpSize`; file-scope `const int N = ...;` and object-like `#define NAME value`. Everything else is a
//! [`CompileError`] at its `file:line:column`.
//!
//! # Code
//!
//! The launch is known: scalar arguments become immediates (a parameter the kernel assigns gets a register),
//! each array argument is placed in global memory (consecutively from word 0) and `p[i]` is `LDG`/`STG` with the
//! array's base and length, so every access is bounds-checked against its own array. Shared arrays are placed
//! in shared memory (2-D row-major; the check is on the flattened index).
//!
//! The program: `CRESET bs`; a loop over the blocks (`blockIdx` in registers); per block `CRESET bs`,
//! `threadIdx` from `TID` (a magic multiply for `.y`), the kernel body, `CRESET bs`, `BAR nwarps`; `HALT`.
//! Control flow uses the activity counters: `if` is `IF`/`ELSE`/`ENDIF` (with `JNONE` over a branch no lane
//! takes, never over a `__syncthreads()`); a loop is a loop level and a body level per iteration, its test
//! `BRK t, 2`, `break`/`continue`/`return` are `BRK r0, k` with `k` the levels they leave; device functions are
//! inlined, in a level of their own when they return early. Division and remainder are the machine's
//! micro-coded `DIV`/`DIVU`/`REM`/`REMU` (18 steps each; signed or unsigned by C's usual conversions); by a
//! power of two they are shifts and masks, by 0, 1 and -1 constants or negations.
//!
//! # Differences from CUDA
//!
//! - `threadIdx`, `blockIdx`, `blockDim`, `gridDim` are `int` (CUDA: `unsigned`), as in the OpenCL translation
//!   the oracle runs ([`crate::opencl`]); portable kernels do not depend on it.
//! - `x / 0`, `x % 0`, `INT_MIN / -1` and shifts by 32 or more follow the machine ([`crate::isa`]).
//! - Every warp must run the same sequence of `__syncthreads()`: a loop that contains one must run as many
//!   iterations in every warp, with at least one lane of each warp in it (a warp whose lanes all returned
//!   leaves such a loop early; CUDA leaves that case undefined too).

mod analysis;
mod codegen;
mod front;
#[cfg(test)]
mod tests;
mod types;

use crate::isa::Simt4Config;
use crate::launch::{KernelImage, LaunchSpec};

/// A compile error at a place in the kernel source. Displayed as `file:line:column: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileError {
    /// The kernel file's name, as given to [`compile`].
    pub file: String,
    /// 1-based; 0 when the error has no place (a launch that does not fit the machine).
    pub line: u32,
    /// 1-based, in characters; 0 with `line`.
    pub column: u32,
    /// What is wrong, naming the construct.
    pub message: String,
}

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file, self.line, self.column, self.message
            )
        }
    }
}

impl std::error::Error for CompileError {}

/// Compile the one `__global__` kernel of `source` (named `file` in errors) for `spec` on a machine of shape
/// `cfg`.
pub fn compile(
    source: &str,
    file: &str,
    spec: &LaunchSpec,
    cfg: &Simt4Config,
) -> Result<KernelImage, CompileError> {
    if let Err(e) = cfg.validate() {
        return Err(CompileError {
            file: file.into(),
            line: 0,
            column: 0,
            message: format!("machine config: {e}"),
        });
    }
    let parsed = front::Parsed::new(source).map_err(|(off, message)| {
        let (line, column) = line_col(source, off);
        CompileError {
            file: file.into(),
            line,
            column,
            message,
        }
    })?;
    codegen::compile(&parsed, file, spec, cfg)
}

/// (line, column), 1-based, of byte `off` of `src`.
fn line_col(src: &str, off: usize) -> (u32, u32) {
    let off = off.min(src.len());
    let before = &src.as_bytes()[..off];
    let line = before.iter().filter(|c| **c == b'\n').count() + 1;
    let ls = before
        .iter()
        .rposition(|c| *c == b'\n')
        .map_or(0, |p| p + 1);
    let col = src.get(ls..off).map_or(off - ls, |s| s.chars().count()) + 1;
    (line as u32, col as u32)
}
