//! The mechanical CUDA-subset to OpenCL C translation for the independent oracle (POCL, OpenCL on the CPU).
//!
//! A text translation, token by token, that keeps the line structure (an OpenCL build error's line is the
//! kernel's line). It does not check the subset (the front end in [`crate::cuda`] does); it only rewrites
//! what differs between the two languages:
//!
//! | CUDA | OpenCL C |
//! |---|---|
//! | `__global__ void k(...)` | `__kernel void k(...)` |
//! | a pointer parameter `int *a`, `unsigned *a` | `__global int *a`, `__global uint *a` |
//! | a `bool` parameter of the kernel | `int` (OpenCL kernels take no `bool`) |
//! | `unsigned`, `unsigned int` | `uint` |
//! | `__shared__` | `__local` |
//! | `__device__` | (nothing) |
//! | `threadIdx.x`, `blockIdx.y`, `blockDim.x`, `gridDim.y` | `((int)get_local_id(0))`, `((int)get_group_id(1))`, `((int)get_local_size(0))`, `((int)get_num_groups(1))` |
//! | `__syncthreads()` | `barrier(CLK_LOCAL_MEM_FENCE \| CLK_GLOBAL_MEM_FENCE)` |
//! | `atomicAdd(p, v)` | `atomic_add(p, v)` |
//! | `__umulhi(a, b)`, `__mulhi(a, b)` | `mul_hi((uint)(a), (uint)(b))`, `mul_hi((int)(a), (int)(b))` |
//! | `abs(x)` | `((int)abs((int)(x)))` (OpenCL's `abs` returns `uint`) |
//!
//! | an identifier that OpenCL C reserves or declares (`local`, `global`, `kernel`, `constant`, `private`, `half`, `dot`, `select`, `clamp`, `rotate`, ... see [`RENAMED`]) | the same with `_cu` appended |
//!
//! `bool`, `true`, `false`, `min`, `max` and the rest of C are the same in both. Comments, string and character
//! literals are copied as they are.
//!
//! Built-in indices are `int` here (the subset's front end reads them as `int`); a portable kernel does not
//! depend on CUDA's `unsigned` `threadIdx` (it copies it to an `int` first or compares it with non-negative
//! values only).

use crate::error::OpenclError;

/// Identifiers a CUDA kernel may use for its own names (variables, functions, the kernel) that are keywords,
/// types or built-in functions in OpenCL C: translated with `_cu` appended.
pub const RENAMED: &[&str] = &[
    // address spaces, qualifiers, types
    "local",
    "global",
    "kernel",
    "constant",
    "private",
    "generic",
    "read_only",
    "write_only",
    "read_write",
    "half",
    "uchar",
    "ushort",
    "ulong",
    "size_t",
    "ptrdiff_t",
    "intptr_t",
    "uintptr_t",
    "event_t",
    "sampler_t",
    // integer, common and geometric built-ins that are ordinary names in CUDA
    "dot",
    "cross",
    "length",
    "distance",
    "normalize",
    "select",
    "bitselect",
    "clamp",
    "rotate",
    "sign",
    "step",
    "smoothstep",
    "mix",
    "degrees",
    "radians",
    "all",
    "any",
    "mad",
    "mad24",
    "mul24",
    "mad_hi",
    "mad_sat",
    "mul_hi",
    "hadd",
    "rhadd",
    "add_sat",
    "sub_sat",
    "abs_diff",
    "popcount",
    "clz",
    "ctz",
    "upsample",
    "shuffle",
    "shuffle2",
    "barrier",
    "mem_fence",
    "atomic_add",
    "atomic_sub",
    "atomic_inc",
    "atomic_dec",
    "atomic_min",
    "atomic_max",
    "get_local_id",
    "get_group_id",
    "get_local_size",
    "get_num_groups",
    "get_global_id",
    "get_global_size",
    "get_work_dim",
    "prefetch",
    "printf",
    "sqrt",
    "exp",
    "log",
    "pow",
    "floor",
    "ceil",
    "round",
    "trunc",
    "fabs",
];

/// Translate a kernel of the CUDA subset to OpenCL C. Errors: no `__global__` kernel, a built-in index without
/// `.x`/`.y`/`.z`, a call of `__umulhi`/`__mulhi`/`abs`/`__syncthreads` with the wrong arguments, unbalanced
/// parentheses.
pub fn to_opencl(cuda: &str) -> Result<String, OpenclError> {
    if !has_word(cuda, "__global__") {
        return Err(OpenclError::NoKernel);
    }
    translate(cuda, 1)
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}
fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Whether `src` has the identifier `w` (outside comments is not checked: a rough test).
fn has_word(src: &str, w: &str) -> bool {
    let b = src.as_bytes();
    let mut from = 0;
    while let Some(p) = src[from..].find(w) {
        let s = from + p;
        let e = s + w.len();
        let before = s == 0 || !is_ident(b[s - 1]);
        let after = e >= b.len() || !is_ident(b[e]);
        if before && after {
            return true;
        }
        from = e;
    }
    false
}

/// The line (1-based) of byte `pos` of `src`, counted from `line0`.
fn line_at(src: &str, pos: usize, line0: usize) -> usize {
    line0 + src.as_bytes()[..pos].iter().filter(|c| **c == b'\n').count()
}

/// The first position at or after `i` that is not a space, tab or newline.
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The end (exclusive) of a comment, string or character literal starting at `i`, if one starts there.
fn skip_literal(b: &[u8], i: usize) -> Option<usize> {
    match (b[i], b.get(i + 1)) {
        (b'/', Some(b'/')) => Some(b[i..].iter().position(|c| *c == b'\n').map_or(b.len(), |p| i + p)),
        (b'/', Some(b'*')) => {
            let mut j = i + 2;
            while j + 1 < b.len() && !(b[j] == b'*' && b[j + 1] == b'/') {
                j += 1;
            }
            Some((j + 2).min(b.len()))
        }
        (q @ (b'"' | b'\''), _) => {
            let mut j = i + 1;
            while j < b.len() && b[j] != q {
                if b[j] == b'\\' {
                    j += 1;
                }
                j += 1;
            }
            Some((j + 1).min(b.len()))
        }
        _ => None,
    }
}

/// The position of the `)` matching the `(` at `open`.
fn matching_paren(src: &str, open: usize, line0: usize) -> Result<usize, OpenclError> {
    let b = src.as_bytes();
    let mut depth = 0usize;
    let mut i = open;
    while i < b.len() {
        if let Some(e) = skip_literal(b, i) {
            i = e;
            continue;
        }
        match b[i] {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Ok(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    Err(OpenclError::Unbalanced { line: line_at(src, open, line0) })
}

/// Split `s` at its top-level commas (outside parentheses, brackets, comments and literals).
fn split_top(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut parts = Vec::new();
    let (mut depth, mut start, mut i) = (0i32, 0usize, 0usize);
    while i < b.len() {
        if let Some(e) = skip_literal(b, i) {
            i = e;
            continue;
        }
        match b[i] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&s[start..]);
    parts
}

/// Replace the identifier `from` by `to` in `s` (whole words).
fn replace_word(s: &str, from: &str, to: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        if is_ident_start(b[i]) {
            let st = i;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            out.push_str(if &s[st..i] == from { to } else { &s[st..i] });
        } else {
            let st = i;
            i += 1;
            while i < b.len() && !is_ident_start(b[i]) {
                i += 1;
            }
            out.push_str(&s[st..i]);
        }
    }
    out
}

/// One parameter of a function signature, already translated: pointers get `__global`; a kernel's `bool`
/// becomes `int`.
fn param(p: &str, kernel: bool) -> String {
    let mut p = p.to_string();
    if p.contains('*') && !has_word(&p, "__global") {
        let at = skip_ws(p.as_bytes(), 0);
        p.insert_str(at, "__global ");
    }
    if kernel && has_word(&p, "bool") {
        p = replace_word(&p, "bool", "int");
    }
    p
}

/// Translate `src` (whose first line is line `line0` of the kernel, for errors).
fn translate(src: &str, line0: usize) -> Result<String, OpenclError> {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len() + src.len() / 4);
    // After `__global__` (true) or `__device__` (false): the next parenthesis opens a parameter list.
    let mut signature: Option<bool> = None;
    let mut i = 0;
    while i < b.len() {
        if let Some(e) = skip_literal(b, i) {
            out.push_str(&src[i..e]);
            i = e;
            continue;
        }
        let c = b[i];
        if c == b'(' && signature.is_some() {
            let kernel = signature.take() == Some(true);
            let close = matching_paren(src, i, line0)?;
            let inner = translate(&src[i + 1..close], line_at(src, i, line0))?;
            let params: Vec<String> = split_top(&inner).into_iter().map(|p| param(p, kernel)).collect();
            out.push('(');
            out.push_str(&params.join(","));
            out.push(')');
            i = close + 1;
            continue;
        }
        if !is_ident_start(c) {
            // A number (`0x1Fu`, `10`) is copied whole, so its letters are never read as identifiers.
            let st = i;
            i += 1;
            if c.is_ascii_digit() {
                while i < b.len() && is_ident(b[i]) {
                    i += 1;
                }
            }
            out.push_str(&src[st..i]);
            continue;
        }
        let st = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        let word = &src[st..i];
        // A member name after `.` or `->` is not a keyword.
        let member = st > 0 && (b[st - 1] == b'.' || (st > 1 && b[st - 1] == b'>' && b[st - 2] == b'-'));
        if member {
            out.push_str(word);
            continue;
        }
        match word {
            "__global__" => {
                out.push_str("__kernel");
                signature = Some(true);
            }
            "__device__" => signature = Some(false),
            "__shared__" => out.push_str("__local"),
            "unsigned" => {
                let j = skip_ws(b, i);
                if src[j..].starts_with("int") && (j + 3 >= b.len() || !is_ident(b[j + 3])) && !src[i..j].contains('\n') {
                    i = j + 3;
                }
                out.push_str("uint");
            }
            "threadIdx" | "blockIdx" | "blockDim" | "gridDim" => {
                let f = match word {
                    "threadIdx" => "get_local_id",
                    "blockIdx" => "get_group_id",
                    "blockDim" => "get_local_size",
                    _ => "get_num_groups",
                };
                let j = skip_ws(b, i);
                let k = skip_ws(b, j + 1);
                let dim = if j < b.len() && b[j] == b'.' && k < b.len() && (k + 1 >= b.len() || !is_ident(b[k + 1])) {
                    match b[k] {
                        b'x' => Some(0),
                        b'y' => Some(1),
                        b'z' => Some(2),
                        _ => None,
                    }
                } else {
                    None
                };
                let line = line_at(src, st, line0);
                let dim = dim.ok_or_else(|| OpenclError::NoDimension { line, builtin: word.into() })?;
                out.push_str(&format!("((int){f}({dim}))"));
                i = k + 1;
            }
            "__syncthreads" => {
                let j = skip_ws(b, i);
                let k = if j < b.len() && b[j] == b'(' { skip_ws(b, j + 1) } else { b.len() };
                if k >= b.len() || b[k] != b')' {
                    return Err(OpenclError::SyncthreadsArguments { line: line_at(src, st, line0) });
                }
                out.push_str("barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)");
                i = k + 1;
            }
            "atomicAdd" => out.push_str("atomic_add"),
            "__umulhi" | "__mulhi" | "abs" => {
                let j = skip_ws(b, i);
                if j >= b.len() || b[j] != b'(' {
                    // Not a call (a variable named `abs`?): copied.
                    out.push_str(word);
                    continue;
                }
                let close = matching_paren(src, j, line0)?;
                let args: Vec<String> = split_top(&src[j + 1..close]).into_iter().map(|a| translate(a, line_at(src, j, line0))).collect::<Result<_, _>>()?;
                let want = if word == "abs" { 1 } else { 2 };
                if args.len() != want || args.iter().any(|a| a.trim().is_empty()) {
                    return Err(OpenclError::Arguments { line: line_at(src, st, line0), function: word.to_string(), want });
                }
                match word {
                    "__umulhi" => out.push_str(&format!("mul_hi((uint)({}),(uint)({}))", args[0], args[1])),
                    "__mulhi" => out.push_str(&format!("mul_hi((int)({}),(int)({}))", args[0], args[1])),
                    _ => out.push_str(&format!("((int)abs((int)({})))", args[0])),
                }
                i = close + 1;
            }
            w if RENAMED.contains(&w) => {
                out.push_str(w);
                out.push_str("_cu");
            }
            _ => out.push_str(word),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_signature_and_body() {
        let cuda = "__global__ void map(int *out, const int *a, unsigned *u, unsigned int n, bool flag) {\n  \
                    int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (flag && i < n) out[i] = a[i] + 10;\n}\n";
        let cl = to_opencl(cuda).unwrap();
        assert_eq!(
            cl,
            "__kernel void map(__global int *out, __global const int *a, __global uint *u, uint n, int flag) {\n  \
             int i = ((int)get_group_id(0)) * ((int)get_local_size(0)) + ((int)get_local_id(0));\n  \
             if (flag && i < n) out[i] = a[i] + 10;\n}\n"
        );
    }

    #[test]
    fn the_line_structure_is_kept() {
        let cuda = "// a comment with threadIdx.x and __syncthreads()\n__global__ void k(\n  int *out,\n  int n)\n{\n  \
                    __shared__ int s[8][4];\n  s[threadIdx.y][threadIdx.x] = gridDim.y;\n  __syncthreads();\n  \
                    out[0] = __umulhi(\n    n, 3);\n}\n";
        let cl = to_opencl(cuda).unwrap();
        assert_eq!(cl.lines().count(), cuda.lines().count());
        assert!(cl.starts_with("// a comment with threadIdx.x and __syncthreads()\n__kernel void k(\n  __global int *out,\n  int n)\n"));
        assert!(cl.contains("__local int s[8][4];"));
        assert!(cl.contains("s[((int)get_local_id(1))][((int)get_local_id(0))] = ((int)get_num_groups(1));"));
        assert!(cl.contains("barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"));
        assert!(cl.contains("out[0] = mul_hi((uint)(\n    n),(uint)( 3));"));
    }

    #[test]
    fn device_functions_and_builtins() {
        let cuda = "__device__ unsigned f(unsigned x, int y) { return __umulhi(x, abs(y - 1)); }\n\
                    __device__ int g(int *p) { return __mulhi(p[0], -3) + abs(min(y, 2)); }\n\
                    __global__ void k(int *c, unsigned *h) { int old = atomicAdd(&c[0], 1); atomicAdd(&h[old & 3], 1u); }\n";
        let cl = to_opencl(cuda).unwrap();
        let lines: Vec<&str> = cl.lines().collect();
        assert_eq!(lines[0], " uint f(uint x, int y) { return mul_hi((uint)(x),(uint)( ((int)abs((int)(y - 1))))); }");
        assert_eq!(lines[1], " int g(__global int *p) { return mul_hi((int)(p[0]),(int)( -3)) + ((int)abs((int)(min(y, 2)))); }");
        assert_eq!(lines[2], "__kernel void k(__global int *c, __global uint *h) { int old = atomic_add(&c[0], 1); atomic_add(&h[old & 3], 1u); }");
    }

    #[test]
    fn members_numbers_and_literals_are_not_rewritten() {
        let cuda = "__global__ void k(int *out) { out[0] = 0x7Fu; /* abs(x) unsigned */ out[1] = 'a'; }";
        let cl = to_opencl(cuda).unwrap();
        assert_eq!(cl, "__kernel void k(__global int *out) { out[0] = 0x7Fu; /* abs(x) unsigned */ out[1] = 'a'; }");
    }

    #[test]
    fn opencl_names_are_renamed() {
        let cuda = "__device__ int select(int local, int global) { return local ? global : 0; }\n\
                    __global__ void dot(int *out) { int step = 2; out[0] = select(step, 3) + min(1, 2); }";
        let cl = to_opencl(cuda).unwrap();
        assert_eq!(
            cl,
            " int select_cu(int local_cu, int global_cu) { return local_cu ? global_cu : 0; }\n\
             __kernel void dot_cu(__global int *out) { int step_cu = 2; out[0] = select_cu(step_cu, 3) + min(1, 2); }"
        );
    }

    #[test]
    fn errors_are_named() {
        assert!(to_opencl("void k(int *a) {}").unwrap_err().to_string().contains("no __global__"));
        assert!(to_opencl("__global__ void k(int *a) { a[0] = threadIdx; }").unwrap_err().to_string().contains("line 1: threadIdx without .x"));
        assert!(to_opencl("__global__ void k(int *a) {\n a[0] = __umulhi(a[1]); }").unwrap_err().to_string().contains("line 2: __umulhi takes 2 arguments"));
        assert!(to_opencl("__global__ void k(int *a) {\n\n __syncthreads(1); }").unwrap_err().to_string().contains("line 3"));
        assert!(to_opencl("__global__ void k(int *a) { a[0] = abs(a[1]; }").unwrap_err().to_string().contains("unbalanced"));
    }
}
