//! Unit tests of the CUDA front end: the text layer, constant folding, the program's shape, the barrier rule,
//! instruction counts, division against Rust on many values.

use super::front::{Parsed, Qual};
use super::types::{Ty, fold, sdivrem, udivrem};
use super::*;
use crate::interp::{Simt, Stop};
use crate::isa::{Instr, Opcode};
use lang_c::ast::BinaryOperator;
use std::path::Path;

fn spec(toml: &str) -> LaunchSpec {
    LaunchSpec::from_toml(toml, Path::new(".")).unwrap()
}

/// The program as text, one instruction a line with its source line (for failing tests' messages).
fn listing(img: &KernelImage) -> String {
    img.program
        .iter()
        .zip(&img.lines)
        .enumerate()
        .map(|(k, (i, l))| format!("{k:4} {l:3}  {i}\n"))
        .collect()
}

fn build(src: &str, toml: &str, cfg: &Simt4Config) -> KernelImage {
    compile(src, "t.cu", &spec(toml), cfg).unwrap_or_else(|e| panic!("{e}"))
}

fn run(img: &KernelImage, cfg: &Simt4Config) -> serde_json::Value {
    let mut m = Simt::new(*cfg, &img.words(), &img.global).unwrap();
    assert_eq!(m.run(50_000_000), Some(Stop::Halt), "{}", listing(img));
    img.arrays_json(&m.global)
}

#[test]
fn the_text_layer_blanks_qualifiers_comments_and_directives_in_place() {
    let src = "#include <cuda.h>\n#define N (4 + 1)\n/* c */ __global__ void k(int *__restrict__ a) { // x\n  __shared__ int s[N];\n}\n";
    let p = Parsed::new(src).unwrap();
    assert_eq!(p.parsed.len() - p.prelude_len(), src.len());
    let body = &p.parsed[p.prelude_len()..];
    assert_eq!(body.lines().count(), src.lines().count());
    assert!(
        !body.contains("__global__")
            && !body.contains("__shared__")
            && !body.contains("/*")
            && !body.contains('#')
    );
    let kinds: Vec<Qual> = p.quals.iter().map(|q| q.2).collect();
    assert_eq!(kinds, vec![Qual::Global, Qual::Other, Qual::Shared]);
    assert!(p.defines.contains_key("N"));
    // positions: `__shared__` is line 4 column 3
    let (s, _, _) = p.quals[2];
    assert_eq!(p.line_col(s - p.prelude_len()), (4, 3));
    assert!(
        Parsed::new("#define F(x) x\n")
            .err()
            .unwrap()
            .1
            .contains("function-like")
    );
    assert!(
        Parsed::new("#ifdef X\n#endif\n")
            .err()
            .unwrap()
            .1
            .contains("#ifdef")
    );
    let e = Parsed::new("int f( {").err().unwrap();
    assert!(e.1.contains("syntax error"), "{}", e.1);
}

#[test]
fn constant_folding_follows_c_and_the_machine() {
    use BinaryOperator as B;
    let m1 = u32::MAX;
    assert_eq!(
        fold(&B::Divide, (-7i32) as u32, 2, Ty::Int),
        Some((-3i32) as u32)
    );
    assert_eq!(
        fold(&B::Modulo, (-7i32) as u32, 2, Ty::Int),
        Some((-1i32) as u32)
    );
    assert_eq!(
        fold(&B::Divide, (-7i32) as u32, 2, Ty::Uns),
        Some(((-7i32) as u32) / 2)
    );
    assert_eq!(
        fold(&B::Divide, 0x8000_0000, m1, Ty::Int),
        Some(0x8000_0000)
    );
    assert_eq!(fold(&B::Modulo, 0x8000_0000, m1, Ty::Int), Some(0));
    assert_eq!(fold(&B::Divide, 5, 0, Ty::Int), Some(m1));
    assert_eq!(fold(&B::Modulo, 5, 0, Ty::Uns), Some(5));
    assert_eq!(
        fold(&B::ShiftRight, (-16i32) as u32, 2, Ty::Int),
        Some((-4i32) as u32)
    );
    assert_eq!(
        fold(&B::ShiftRight, (-16i32) as u32, 2, Ty::Uns),
        Some(((-16i32) as u32) >> 2)
    );
    assert_eq!(fold(&B::Less, m1, 0, Ty::Int), Some(1));
    assert_eq!(fold(&B::Less, m1, 0, Ty::Uns), Some(0));
    assert_eq!(fold(&B::GreaterOrEqual, 3, 3, Ty::Int), Some(1));
    assert_eq!(fold(&B::Assign, 3, 3, Ty::Int), None);
    assert_eq!(sdivrem(i32::MIN, -1), (i32::MIN, 0));
    assert_eq!(udivrem(9, 0), (u32::MAX, 9));
    assert_eq!(Ty::common(Ty::Bool.promote(), Ty::Uns), Ty::Uns);
}

#[test]
fn the_magic_multiply_for_thread_y_is_exact() {
    for d in 2u64..=1024 {
        let m = (1u64 << 32) / d + 1;
        for t in 0..1024u64 {
            assert_eq!((t * m) >> 32, t / d, "{t} / {d}");
        }
    }
}

#[test]
fn the_program_has_the_documented_shape() {
    let cfg = Simt4Config::default();
    let src = "__global__ void k(int *out) {\n  out[(blockIdx.y * 2 + threadIdx.y) * 6 + blockIdx.x * 3 + threadIdx.x] = 1;\n}\n";
    let img = build(
        src,
        "grid = [2, 2]\nblock = [3, 2]\n[args]\nout = \"zeros(24)\"\n",
        &cfg,
    );
    let p = &img.program;
    assert_eq!(p[0], Instr::imm(Opcode::Creset, 6));
    assert_eq!(p.last().unwrap().op, Opcode::Halt);
    assert_eq!(img.warps, 2);
    assert!(
        p.iter().any(|i| *i == Instr::imm(Opcode::Bar, 2)),
        "{}",
        listing(&img)
    );
    assert!(
        p.iter()
            .any(|i| i.op == Opcode::Mulhu && i.imm == (1u64 << 32).div_euclid(3) as u32 + 1)
    );
    assert_eq!(img.lines.len(), p.len());
    let store = p.iter().position(|i| i.op == Opcode::Stg).unwrap();
    assert_eq!(img.lines[store], 2);
    assert_eq!(
        run(&img, &cfg)["out"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| v.as_i64() == Some(1))
            .count(),
        24
    );
}

/// No `JNONE` jumps over a `BAR`: every warp runs the same barriers.
#[test]
fn no_jump_skips_a_barrier() {
    let cfg = Simt4Config::default();
    let src = r#"
#define SYNC __syncthreads()
__device__ int sync_and_get(int *s, int i) { SYNC; return s[i]; }
__global__ void k(int *out) {
    __shared__ int s[16];
    int t = threadIdx.x;
    s[t] = t;
    if (t < 3) {
        out[t] = 1; out[t] += 2; out[t] *= 3; out[t] -= 4;
        __syncthreads();
    } else {
        out[t] = 5; out[t] += 2; out[t] *= 3; out[t] -= 4;
    }
    for (int i = 0; i < 3; i++) {
        out[t] += sync_and_get(s, (t + i) % 16);
    }
    int v = t > 4 && sync_and_get(s, 1) > 0;
    out[t] += v;
}
"#;
    let img = build(src, "block = 16\n[args]\nout = \"zeros(16)\"\n", &cfg);
    let p = &img.program;
    for (k, i) in p.iter().enumerate() {
        if i.op == Opcode::Jnone {
            let t = i.imm as usize;
            assert!(
                t > k && !p[k + 1..t].iter().any(|x| x.op == Opcode::Bar),
                "jnone at {k}:\n{}",
                listing(&img)
            );
        }
    }
    let j = run(&img, &cfg);
    let want: Vec<i64> = (0..16).map(|t| if t < 3 { 5 } else { 17 } + (0..3).map(|i| (t + i) % 16).sum::<i64>() + i64::from(t > 4)).collect();
    let got: Vec<i64> = j["out"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert_eq!(got, want);
}

#[test]
fn instruction_counts_of_small_kernels() {
    let cfg = Simt4Config::default();
    let map = "__global__ void k(int *out, const int *a, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = a[i] + 10;\n}\n";
    let img = build(
        map,
        "grid = 3\nblock = 8\n[args]\nout = \"zeros(20)\"\na = \"zeros(20)\"\nn = 20\n",
        &cfg,
    );
    assert_eq!(img.program.len(), 19, "{}", listing(&img));
    let one = "__global__ void k(int *out) { out[threadIdx.x] = threadIdx.x * 2; }\n";
    let img = build(one, "block = 4\n[args]\nout = \"zeros(4)\"\n", &cfg);
    // creset, tid, shl, stg, creset, halt
    assert_eq!(img.program.len(), 6, "{}", listing(&img));
    let div = "__global__ void k(int *out, const int *a) { out[threadIdx.x] = a[threadIdx.x] / a[threadIdx.x + 4]; }\n";
    let img = build(
        div,
        "block = 4\n[args]\nout = \"zeros(4)\"\na = [1, 2, 3, 4, 5, 6, 7, 8]\n",
        &cfg,
    );
    assert!(img.program.len() <= 40, "{}", listing(&img));
}

/// Signed and unsigned division and remainder on many values (edge cases and random ones) against Rust.
#[test]
fn division_matches_rust_on_many_values() {
    let cfg = Simt4Config {
        lanes: 8,
        warps: 8,
        shared_words: 128,
        global_words: 4096,
    };
    let src = "__global__ void k(int *q, int *r, unsigned *uq, unsigned *ur, const int *x, const int *y) {\n\
               int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
               q[i] = x[i] / y[i]; r[i] = x[i] % y[i];\n\
               uq[i] = (unsigned)x[i] / (unsigned)y[i]; ur[i] = (unsigned)x[i] % (unsigned)y[i];\n}\n";
    let edge = [
        0i32,
        1,
        -1,
        2,
        -2,
        3,
        7,
        -7,
        255,
        65536,
        i32::MAX,
        i32::MIN,
        i32::MIN + 1,
        i32::MAX - 1,
        0x4000_0000,
        -0x4000_0000,
    ];
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for a in edge {
        for b in edge {
            xs.push(a);
            ys.push(b);
        }
    }
    let mut s = 0x1234_5678u32;
    let mut rnd = || {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        s
    };
    while xs.len() < 512 {
        let a = rnd() as i32 >> (rnd() % 32);
        let b = rnd() as i32 >> (rnd() % 32);
        xs.push(a);
        ys.push(b);
    }
    let l = |v: &[i32]| {
        format!(
            "[{}]",
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        )
    };
    let toml = format!(
        "grid = 16\nblock = 32\n[args]\nq = \"zeros(512)\"\nr = \"zeros(512)\"\nuq = \"zeros(512)\"\nur = \"zeros(512)\"\nx = {}\ny = {}\n",
        l(&xs),
        l(&ys)
    );
    let img = build(src, &toml, &cfg);
    let j = run(&img, &cfg);
    let get = |n: &str| -> Vec<i64> {
        j[n].as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect()
    };
    let (q, r, uq, ur) = (get("q"), get("r"), get("uq"), get("ur"));
    for k in 0..512 {
        let (a, b) = (xs[k], ys[k]);
        let (wq, wr) = if b == 0 {
            (-1, a)
        } else {
            (a.wrapping_div(b), a.wrapping_rem(b))
        };
        assert_eq!((q[k], r[k]), (i64::from(wq), i64::from(wr)), "{a} / {b}");
        let (ua, ub) = (a as u32, b as u32);
        let (wq, wr) = (
            ua.checked_div(ub).unwrap_or(u32::MAX),
            ua.checked_rem(ub).unwrap_or(ua),
        );
        assert_eq!(
            (uq[k], ur[k]),
            (i64::from(wq), i64::from(wr)),
            "{ua} / {ub}"
        );
    }
}

#[test]
fn defines_consts_and_errors_in_defines() {
    let cfg = Simt4Config::default();
    let src = "#define A 3\n#define B (A * 2 + 1)\nconst int C = B + 1;\n__global__ void k(int *out) {\n  out[threadIdx.x] = B * 10 + C + INT_MAX / 0x7fffffff;\n}\n";
    let img = build(src, "block = 2\n[args]\nout = \"zeros(2)\"\n", &cfg);
    assert_eq!(run(&img, &cfg)["out"], serde_json::json!([79, 79]));
    let e = compile(
        "#define A 1.5\n__global__ void k(int *out) {\n  out[0] = A;\n}\n",
        "t.cu",
        &spec("block = 1\n[args]\nout = \"zeros(1)\"\n"),
        &cfg,
    )
    .unwrap_err();
    assert_eq!((e.line, e.column), (1, 11), "{e}");
    assert!(e.message.contains("floating-point"), "{e}");
    let e = compile(
        "#define A A\n__global__ void k(int *out) {\n  out[0] = A;\n}\n",
        "t.cu",
        &spec("block = 1\n[args]\nout = \"zeros(1)\"\n"),
        &cfg,
    )
    .unwrap_err();
    assert!(e.message.contains("refers to itself"), "{e}");
}

#[test]
fn shared_arrays_in_device_functions_are_placed_once() {
    let cfg = Simt4Config::default();
    let src = "__device__ int slot(int t, int v) {\n  __shared__ int s[8];\n  s[t] = s[t] + v;\n  return s[t];\n}\n\
               __global__ void k(int *out) {\n  int t = threadIdx.x;\n  slot(t, 0 - slot(t, 0));\n  out[t] = slot(t, 5) + slot(t, t);\n}\n";
    let img = build(src, "block = 4\n[args]\nout = \"zeros(4)\"\n", &cfg);
    // slot(t,0) reads 0 (fresh shared memory), adds 0; slot(t,5) = 5; slot(t,t) = 5 + t
    assert_eq!(run(&img, &cfg)["out"], serde_json::json!([10, 11, 12, 13]));
}
