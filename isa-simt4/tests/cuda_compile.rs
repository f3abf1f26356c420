//! The CUDA subset front end end to end: kernels compiled for a launch, run on the reference interpreter, their
//! arrays checked against values computed independently here in Rust; unsupported constructs and bad launches
//! give `file:line:column` errors; a bad index faults with its lane, index and source line.

use isa_simt4::cuda::{CompileError, compile};
use isa_simt4::{Fault, FaultKind, KernelImage, LaunchSpec, Simt, Simt4Config, Stop};
use std::path::Path;

fn cfg(lanes: u32) -> Simt4Config {
    Simt4Config {
        lanes,
        warps: 8,
        shared_words: 256,
        global_words: 4096,
    }
}

fn spec(toml: &str) -> LaunchSpec {
    LaunchSpec::from_toml(toml, Path::new(".")).unwrap()
}

/// Compile and run on `lanes` lanes; the image and the arrays afterwards.
fn run_on(src: &str, toml: &str, lanes: u32) -> (KernelImage, serde_json::Value) {
    let c = cfg(lanes);
    let image = compile(src, "k.cu", &spec(toml), &c).unwrap_or_else(|e| panic!("{e}"));
    let mut m = Simt::new(c, &image.words(), &image.global).unwrap();
    let stop = m.run(20_000_000);
    assert_eq!(
        stop,
        Some(Stop::Halt),
        "{} lanes: the kernel did not halt",
        lanes
    );
    let j = image.arrays_json(&m.global);
    (image, j)
}

/// Compile and run on 4 lanes a kernel that must fault; the fault and the image (for its line table).
fn fault_on(src: &str, toml: &str) -> (Fault, KernelImage) {
    let c = cfg(4);
    let image = compile(src, "k.cu", &spec(toml), &c).unwrap_or_else(|e| panic!("{e}"));
    let mut m = Simt::new(c, &image.words(), &image.global).unwrap();
    let Some(Stop::Fault(f)) = m.run(10_000) else {
        panic!("no fault")
    };
    (f, image)
}

/// Run on 4 and 8 lanes; both results must agree; the arrays as i64 vectors by name.
fn run(src: &str, toml: &str) -> serde_json::Value {
    let (_, a) = run_on(src, toml, 4);
    let (_, b) = run_on(src, toml, 8);
    assert_eq!(a, b, "4 and 8 lanes disagree");
    a
}

fn arr(j: &serde_json::Value, name: &str) -> Vec<i64> {
    fn flat(v: &serde_json::Value, out: &mut Vec<i64>) {
        match v {
            serde_json::Value::Array(a) => a.iter().for_each(|x| flat(x, out)),
            x => out.push(x.as_i64().unwrap()),
        }
    }
    let mut out = Vec::new();
    flat(&j[name], &mut out);
    out
}

fn list(v: &[i64]) -> String {
    format!(
        "[{}]",
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

#[test]
fn map_zip_and_guard() {
    let src = r#"
__global__ void saxpy(int *out, const int *a, const int *b, int n, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = a[i] * k + b[i];
    }
}
"#;
    let a: Vec<i64> = (0..10).map(|x| x * 7 - 20).collect();
    let b: Vec<i64> = (0..10).map(|x| 100 - x * x).collect();
    let toml = format!(
        "grid = 3\nblock = 4\n[args]\nout = \"zeros(12)\"\na = {}\nb = {}\nn = 10\nk = -3\n",
        list(&a),
        list(&b)
    );
    let j = run(src, &toml);
    let mut want: Vec<i64> = (0..10).map(|i| a[i] * -3 + b[i]).collect();
    want.extend([0, 0]);
    assert_eq!(arr(&j, "out"), want);
}

#[test]
fn two_d_threads_and_blocks() {
    let src = r#"
#define W 8
__global__ void grid2d(int *out, unsigned *tid) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    out[row * W + col] = row * 100 + col;
    tid[row * W + col] = threadIdx.y * blockDim.x + threadIdx.x + 1000u * (blockIdx.y * gridDim.x + blockIdx.x);
}
"#;
    // blocks of 4x3 threads (12: several warps on 4 lanes), a 2x2 grid: 8 columns, 6 rows
    let toml =
        "grid = [2, 2]\nblock = [4, 3]\n[args]\nout = \"zeros(6, 8)\"\ntid = \"zeros(48)\"\n";
    let j = run(src, toml);
    let want: Vec<i64> = (0..6)
        .flat_map(|r| (0..8).map(move |c| r * 100 + c))
        .collect();
    assert_eq!(arr(&j, "out"), want);
    let want_t: Vec<i64> = (0..6)
        .flat_map(|r: i64| {
            (0..8).map(move |c: i64| (r % 3) * 4 + (c % 4) + 1000 * ((r / 3) * 2 + c / 4))
        })
        .collect();
    assert_eq!(arr(&j, "tid"), want_t);
}

#[test]
fn reverse_through_shared_memory() {
    let src = r#"
__global__ void reverse(int *out, const int *a) {
    __shared__ int tile[16];
    int t = threadIdx.x;
    int base = blockIdx.x * blockDim.x;
    tile[blockDim.x - 1 - t] = a[base + t];
    __syncthreads();
    out[base + t] = tile[t];
}
"#;
    let a: Vec<i64> = (0..32).map(|x| x * x - 50).collect();
    let toml = format!(
        "grid = 2\nblock = 16\n[args]\nout = \"zeros(32)\"\na = {}\n",
        list(&a)
    );
    let j = run(src, &toml);
    let want: Vec<i64> = (0..32).map(|i| a[(i / 16) * 16 + 15 - i % 16]).collect();
    assert_eq!(arr(&j, "out"), want);
}

#[test]
fn block_reduction_and_scan() {
    let src = r#"
__global__ void reduce_scan(int *sums, int *scan, const int *a, int n) {
    __shared__ int s[32];
    __shared__ int p[32];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? a[i] : 0;
    p[t] = s[t];
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) sums[blockIdx.x] = s[0];
    // Hillis-Steele inclusive scan
    for (int off = 1; off < blockDim.x; off *= 2) {
        int v = 0;
        if (t >= off) v = p[t - off];
        __syncthreads();
        p[t] += v;
        __syncthreads();
    }
    if (i < n) scan[i] = p[t];
}
"#;
    let n = 45usize;
    let a: Vec<i64> = (0..n as i64).map(|x| (x * 37 + 11) % 23 - 9).collect();
    let toml = format!(
        "grid = 3\nblock = 16\n[args]\nsums = \"zeros(3)\"\nscan = \"zeros(45)\"\na = {}\nn = {n}\n",
        list(&a)
    );
    let j = run(src, &toml);
    let sums: Vec<i64> = (0..3)
        .map(|b| a[b * 16..((b + 1) * 16).min(n)].iter().sum())
        .collect();
    assert_eq!(arr(&j, "sums"), sums);
    let scan: Vec<i64> = (0..n).map(|i| a[(i / 16) * 16..=i].iter().sum()).collect();
    assert_eq!(arr(&j, "scan"), scan);
}

#[test]
fn nested_divergence() {
    let src = r#"
__global__ void classify(int *out, const int *a) {
    int i = threadIdx.x;
    int x = a[i];
    int r;
    if (x > 0) {
        if (x % 2 == 0) {
            r = 1;
        } else if (x % 3 == 0) {
            r = 2;
        } else {
            r = 3;
            if (x > 10) r = 4;
        }
    } else {
        if (x == 0) r = 5; else r = x < -10 ? 6 : 7;
    }
    out[i] = r * 1000 + x;
}
"#;
    let a: Vec<i64> = vec![4, 9, 7, 13, 0, -3, -20, 6, 15, 1, -11, 2];
    let toml = format!(
        "block = 12\n[args]\nout = \"zeros(12)\"\na = {}\n",
        list(&a)
    );
    let j = run(src, &toml);
    let want: Vec<i64> = a
        .iter()
        .map(|&x| {
            let r = if x > 0 {
                if x % 2 == 0 {
                    1
                } else if x % 3 == 0 {
                    2
                } else if x > 10 {
                    4
                } else {
                    3
                }
            } else if x == 0 {
                5
            } else if x < -10 {
                6
            } else {
                7
            };
            r * 1000 + x
        })
        .collect();
    assert_eq!(arr(&j, "out"), want);
}

#[test]
fn per_lane_loops_with_break_and_continue() {
    let src = r#"
__global__ void loops(int *out, int *out2, int *out3) {
    int t = threadIdx.x;
    int s = 0;
    for (int k = 0; k < t * 3; k++) {
        if (k % 3 == 1) continue;
        if (k > 14) break;
        s += k;
    }
    out[t] = s;
    int c = 0;
    int x = t + 1;
    while (1) {
        x = x * 3 % 17;
        c++;
        if (x == 1) break;
        if (c > 40) break;
    }
    out2[t] = c;
    int d = 0;
    int y = t;
    do {
        d += y;
        y--;
        if (y == 2) continue;
        d++;
    } while (y > 0);
    out3[t] = d;
}
"#;
    let toml =
        "block = 10\n[args]\nout = \"zeros(10)\"\nout2 = \"zeros(10)\"\nout3 = \"zeros(10)\"\n";
    let j = run(src, toml);
    let want: Vec<i64> = (0..10)
        .map(|t| {
            let mut s = 0;
            for k in 0..t * 3 {
                if k % 3 == 1 {
                    continue;
                }
                if k > 14 {
                    break;
                }
                s += k;
            }
            s
        })
        .collect();
    assert_eq!(arr(&j, "out"), want);
    let want2: Vec<i64> = (0..10)
        .map(|t| {
            let (mut c, mut x) = (0, t + 1);
            loop {
                x = x * 3 % 17;
                c += 1;
                if x == 1 || c > 40 {
                    break;
                }
            }
            c
        })
        .collect();
    assert_eq!(arr(&j, "out2"), want2);
    let want3: Vec<i64> = (0..10)
        .map(|t| {
            let (mut d, mut y) = (0, t);
            loop {
                d += y;
                y -= 1;
                if y != 2 {
                    d += 1;
                }
                if y <= 0 {
                    break;
                }
            }
            d
        })
        .collect();
    assert_eq!(arr(&j, "out3"), want3);
}

#[test]
fn early_return_in_the_kernel() {
    let src = r#"
__global__ void early(int *out, int *count, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = 1;
    for (int k = 0; k < 10; k++) {
        if (k == i % 4) {
            out[i] = 100 + k;
            return;
        }
    }
    out[i] = -1;
}
"#;
    let toml = "grid = 3\nblock = 6\n[args]\nout = \"zeros(18)\"\ncount = \"zeros(1)\"\nn = 15\n";
    let j = run(src, toml);
    let want: Vec<i64> = (0..18)
        .map(|i| if i >= 15 { 0 } else { 100 + i % 4 })
        .collect();
    assert_eq!(arr(&j, "out"), want);
}

#[test]
fn device_functions_with_early_return() {
    let src = r#"
__device__ int sign(int x) {
    if (x < 0) return -1;
    if (x == 0) return 0;
    return 1;
}
__device__ int steps(int x) {
    int s = 0;
    while (x != 1) {
        if (s >= 20) return -1;
        if (x % 2 == 0) x = x / 2; else x = 3 * x + 1;
        s++;
    }
    return s;
}
__device__ int sq(int x) { return x * x; }
__device__ void put(int *o, int i, int v) {
    if (v < 0) { o[i] = -v; return; }
    o[i] = v;
}
__global__ void dev(int *out, int *st, int *ab, const int *a) {
    int i = threadIdx.x;
    out[i] = sign(a[i]) * 10 + sign(sq(a[i]) - 9);
    st[i] = steps(i + 1);
    put(ab, i, a[i] * 3);
}
"#;
    let a: Vec<i64> = vec![-5, 0, 3, 7, -1, 2, 9, -3];
    let toml = format!(
        "block = 8\n[args]\nout = \"zeros(8)\"\nst = \"zeros(8)\"\nab = \"zeros(8)\"\na = {}\n",
        list(&a)
    );
    let j = run(src, &toml);
    let want: Vec<i64> = a
        .iter()
        .map(|&x| x.signum() * 10 + (x * x - 9).signum())
        .collect();
    assert_eq!(arr(&j, "out"), want);
    let steps = |mut x: i64| {
        let mut s = 0;
        while x != 1 {
            if s >= 20 {
                return -1;
            }
            x = if x % 2 == 0 { x / 2 } else { 3 * x + 1 };
            s += 1;
        }
        s
    };
    assert_eq!(arr(&j, "st"), (1..=8).map(steps).collect::<Vec<_>>());
    assert_eq!(
        arr(&j, "ab"),
        a.iter().map(|x| (x * 3).abs()).collect::<Vec<_>>()
    );
}

#[test]
fn ternaries_and_short_circuit_with_out_of_range_right_sides() {
    let src = r#"
__global__ void sc(int *out, int *cnt, const int *a, int n) {
    int i = threadIdx.x;
    int v = (i < n && a[i] > 0) ? a[i] : -1;
    int w = (i >= n || a[i] % 2 == 0) ? 1 : 0;
    int u = i < n ? a[i] : 1000 + i;
    int m = i % 3 == 0 ? i * 2 : i % 3 == 1 ? -i : 7;
    bool b = i < n && a[i] > 2 && a[n - 1 - i] < 5;
    if (i < n && a[i] == 4 || i == n) atomicAdd(&cnt[0], 1);
    out[i * 5] = v;
    out[i * 5 + 1] = w;
    out[i * 5 + 2] = u;
    out[i * 5 + 3] = m;
    out[i * 5 + 4] = b;
}
"#;
    let a: Vec<i64> = vec![3, -2, 4, 0, 7, 4];
    let n = a.len();
    let toml = format!(
        "block = 11\n[args]\nout = \"zeros(55)\"\ncnt = \"zeros(1)\"\na = {}\nn = {n}\n",
        list(&a)
    );
    let j = run(src, &toml);
    let mut want = Vec::new();
    for i in 0..11usize {
        let ok = i < n;
        want.push(if ok && a[i] > 0 { a[i] } else { -1 });
        want.push(if !ok || a[i] % 2 == 0 { 1 } else { 0 });
        want.push(if ok { a[i] } else { 1000 + i as i64 });
        want.push(if i % 3 == 0 {
            i as i64 * 2
        } else if i % 3 == 1 {
            -(i as i64)
        } else {
            7
        });
        want.push(i64::from(ok && a[i] > 2 && a[n - 1 - i] < 5));
    }
    assert_eq!(arr(&j, "out"), want);
    assert_eq!(
        arr(&j, "cnt"),
        vec![a.iter().filter(|x| **x == 4).count() as i64 + 1]
    );
}

#[test]
fn atomic_histogram_in_shared_and_global_memory() {
    let src = r#"
__global__ void hist(unsigned *h, int *olds, const int *a, int n) {
    __shared__ unsigned local[8];
    int t = threadIdx.x;
    if (t < 8) local[t] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += blockDim.x * gridDim.x) {
        atomicAdd(&local[a[i] & 7], 1u);
    }
    __syncthreads();
    if (t < 8) atomicAdd(&h[t], local[t]);
    if (blockIdx.x == 0) olds[t] = atomicAdd(&olds[16], 2);
}
"#;
    let n = 100usize;
    let a: Vec<i64> = (0..n as i64).map(|x| (x * x * 7 + 3 * x) % 29).collect();
    let toml = format!(
        "grid = 2\nblock = 12\n[args]\nh = \"zeros(8)\"\nolds = \"zeros(17)\"\na = {}\nn = {n}\n",
        list(&a)
    );
    let j = run(src, &toml);
    let mut h = vec![0i64; 8];
    for x in &a {
        h[(x & 7) as usize] += 1;
    }
    assert_eq!(arr(&j, "h"), h);
    // lanes add in lane order, warps in warp order: thread t gets 2t
    let mut olds: Vec<i64> = (0..12).map(|t| 2 * t).collect();
    olds.extend([0, 0, 0, 0, 24]);
    assert_eq!(arr(&j, "olds"), olds);
}

fn c_div(a: i32, b: i32) -> (i32, i32) {
    if b == 0 {
        (-1, a)
    } else {
        (a.wrapping_div(b), a.wrapping_rem(b))
    }
}
fn c_udiv(a: u32, b: u32) -> (u32, u32) {
    match (a.checked_div(b), a.checked_rem(b)) {
        (Some(q), Some(r)) => (q, r),
        _ => (u32::MAX, a),
    }
}

#[test]
fn division_remainder_and_shift_edge_cases() {
    let src = r#"
__global__ void divs(int *q, int *r, unsigned *uq, unsigned *ur, int *c, const int *x, const int *y) {
    int i = threadIdx.x;
    int a = x[i], b = y[i];
    q[i] = a / b;
    r[i] = a % b;
    unsigned ua = a, ub = b;
    uq[i] = ua / ub;
    ur[i] = ua % ub;
    c[i * 12] = a / 4;
    c[i * 12 + 1] = a % 4;
    c[i * 12 + 2] = a / -1;
    c[i * 12 + 3] = a % 1;
    c[i * 12 + 4] = ua / 8u;
    c[i * 12 + 5] = ua % 8u;
    c[i * 12 + 6] = a >> 3;
    c[i * 12 + 7] = ua >> 3;
    c[i * 12 + 8] = a / 7;
    c[i * 12 + 9] = a < ub;
    c[i * 12 + 10] = max(a, b) + min(ua, ub);
    c[i * 12 + 11] = abs(a) - (a << 2) + (~a ^ -b);
}
"#;
    let xs: Vec<i32> = vec![
        7,
        -7,
        7,
        -7,
        i32::MIN,
        i32::MIN,
        5,
        -5,
        0,
        123456789,
        -1,
        i32::MAX,
        i32::MIN,
        1000,
        -37,
        3,
    ];
    let ys: Vec<i32> = vec![
        2,
        2,
        -2,
        -2,
        -1,
        1,
        0,
        0,
        3,
        -1000,
        3,
        -1,
        7,
        33,
        5,
        i32::MIN,
    ];
    let toml = format!(
        "block = 16\n[args]\nq = \"zeros(16)\"\nr = \"zeros(16)\"\nuq = \"zeros(16)\"\nur = \"zeros(16)\"\nc = \"zeros(192)\"\nx = {}\ny = {}\n",
        list(&xs.iter().map(|v| i64::from(*v)).collect::<Vec<_>>()),
        list(&ys.iter().map(|v| i64::from(*v)).collect::<Vec<_>>())
    );
    let j = run(src, &toml);
    let (mut q, mut r, mut uq, mut ur, mut c) = (vec![], vec![], vec![], vec![], vec![]);
    for (&a, &b) in xs.iter().zip(&ys) {
        let (qq, rr) = c_div(a, b);
        q.push(i64::from(qq));
        r.push(i64::from(rr));
        let (ua, ub) = (a as u32, b as u32);
        let (uqq, urr) = c_udiv(ua, ub);
        uq.push(i64::from(uqq));
        ur.push(i64::from(urr));
        let cs: [i32; 12] = [
            c_div(a, 4).0,
            c_div(a, 4).1,
            c_div(a, -1).0,
            0,
            (ua / 8) as i32,
            (ua % 8) as i32,
            a >> 3,
            (ua >> 3) as i32,
            c_div(a, 7).0,
            i32::from(ua < ub),
            a.max(b).wrapping_add(ua.min(ub) as i32),
            a.wrapping_abs()
                .wrapping_sub(a.wrapping_shl(2))
                .wrapping_add(!a ^ b.wrapping_neg()),
        ];
        c.extend(cs.iter().map(|v| i64::from(*v)));
    }
    assert_eq!(arr(&j, "q"), q);
    assert_eq!(arr(&j, "r"), r);
    assert_eq!(arr(&j, "uq"), uq);
    assert_eq!(arr(&j, "ur"), ur);
    assert_eq!(arr(&j, "c"), c);
}

#[test]
fn mulhi_and_constant_folding() {
    let src = r#"
#define K 0x9E3779B9u
__global__ void hi(unsigned *u, int *s, const int *x) {
    int i = threadIdx.x;
    unsigned a = x[i];
    u[i] = __umulhi(a, K) ^ __umulhi(a, a);
    s[i] = __mulhi(x[i], -123456789) + __mulhi(x[i], x[i]) + (-7 / 2) * 1000 + (-7 % 2) + (1u << 31 >> 30) + INT_MIN / -1;
}
"#;
    let xs: Vec<i32> = vec![0, 1, -1, i32::MIN, i32::MAX, 123456, -987654, 77];
    let toml = format!(
        "block = 8\n[args]\nu = \"zeros(8)\"\ns = \"zeros(8)\"\nx = {}\n",
        list(&xs.iter().map(|v| i64::from(*v)).collect::<Vec<_>>())
    );
    let j = run(src, &toml);
    let u: Vec<i64> = xs
        .iter()
        .map(|&a| {
            let a = a as u32;
            let h = |p: u32, q: u32| ((u64::from(p) * u64::from(q)) >> 32) as u32;
            i64::from(h(a, 0x9E37_79B9) ^ h(a, a))
        })
        .collect();
    assert_eq!(arr(&j, "u"), u);
    let s: Vec<i64> = xs
        .iter()
        .map(|&a| {
            let h = |p: i32, q: i32| ((i64::from(p) * i64::from(q)) >> 32) as i32;
            i64::from(
                h(a, -123_456_789)
                    .wrapping_add(h(a, a))
                    .wrapping_add(-3000 - 1 + 2)
                    .wrapping_add(i32::MIN),
            )
        })
        .collect();
    assert_eq!(arr(&j, "s"), s);
}

#[test]
fn two_d_shared_arrays_and_assigned_parameters() {
    let src = r#"
__global__ void transpose(int *out, const int *a, int n, bool twice) {
    __shared__ int s[4][5];
    int x = threadIdx.x, y = threadIdx.y;
    s[y][x] = a[y * 4 + x];
    __syncthreads();
    n += 1;
    int v = s[x][y];
    if (twice) v *= 2;
    out[y * 4 + x] = v + n;
}
"#;
    let a: Vec<i64> = (0..16).map(|x| x * 3 - 7).collect();
    let toml = format!(
        "block = [4, 4]\n[args]\nout = \"zeros(4, 4)\"\na = {}\nn = 10\ntwice = true\n",
        list(&a)
    );
    let j = run(src, &toml);
    let want: Vec<i64> = (0..16).map(|k| a[(k % 4) * 4 + k / 4] * 2 + 11).collect();
    assert_eq!(arr(&j, "out"), want);
}

// ---------------------------------------------------------------------------------------------- errors

fn err(src: &str, toml: &str) -> CompileError {
    match compile(src, "bad.cu", &spec(toml), &cfg(4)) {
        Ok(_) => panic!("compiled: {src}"),
        Err(e) => e,
    }
}

/// The error is at `line:col` and its message has every word of `words`.
fn assert_err(src: &str, line: u32, col: u32, words: &[&str]) {
    let e = err(src, "block = 4\n[args]\nout = \"zeros(4)\"\n");
    let shown = e.to_string();
    assert_eq!((e.line, e.column), (line, col), "{shown}");
    let place = if line == 0 {
        "bad.cu: ".to_string()
    } else {
        format!("bad.cu:{line}:{col}: ")
    };
    assert!(shown.starts_with(&place), "{shown}");
    for w in words {
        assert!(e.message.contains(w), "{shown} lacks {w:?}");
    }
}

#[test]
fn unsupported_constructs_are_named_at_their_place() {
    let k = |body: &str| format!("__global__ void k(int *out) {{\n{body}\n}}\n");
    assert_err(&k("    float x = 1;"), 2, 5, &["float"]);
    assert_err(&k("    int x = 1.5;"), 2, 13, &["floating-point"]);
    assert_err(&k("    double d;"), 2, 5, &["double"]);
    assert_err(&k("    long x = 1;"), 2, 5, &["long"]);
    assert_err(&k("    int x = 5L;"), 2, 13, &["long"]);
    assert_err(&k("    struct P { int a; } p;"), 2, 5, &["struct"]);
    assert_err(&k("    int *p = out;"), 2, 9, &["pointer variables"]);
    assert_err(&k("    out[0] = *(out + 1);"), 2, 14, &["dereference"]);
    assert_err(
        &k("    int x = out + 1;"),
        2,
        13,
        &["out", "pointer arithmetic"],
    );
    assert_err(
        &k("    int x = 0;\n    int y = &x;"),
        3,
        13,
        &["address", "atomicAdd"],
    );
    assert_err(&k("    int *p = (int *)malloc(4);"), 2, 9, &["pointer"]);
    assert_err(&k("    out[0] = malloc(4);"), 2, 14, &["malloc"]);
    assert_err(&k("    printf(\"%d\\n\", 1);"), 2, 5, &["printf"]);
    assert_err(&k("    out[0] = foo(1);"), 2, 14, &["unknown function foo"]);
    assert_err(
        &k("    extern __shared__ int s[];"),
        2,
        5,
        &["extern __shared__", "dynamic shared memory"],
    );
    assert_err(
        &k("    out[0] = __shfl_down_sync(0xffffffffu, out[0], 1);"),
        2,
        14,
        &["warp intrinsic", "__shfl_down_sync"],
    );
    assert_err(
        &k("    out[0] = __ballot_sync(0xffffffffu, 1);"),
        2,
        14,
        &["warp intrinsic"],
    );
    assert_err(&k("    goto end;\nend:\n    return;"), 2, 5, &["goto"]);
    assert_err(
        &k("    switch (out[0]) { case 1: break; }"),
        2,
        5,
        &["switch"],
    );
    assert_err(&k("    int a[4];"), 2, 10, &["local arrays"]);
    assert_err(&k("    int x = sizeof(int);"), 2, 13, &["sizeof"]);
    assert_err(&k("    unsigned char c = 1;"), 2, 14, &["char"]);
    assert_err(
        &k("    out[0] = atomicCAS(&out[0], 1, 2);"),
        2,
        14,
        &["atomicCAS"],
    );
    assert_err(&k("    int v = atomicAdd(out, 1);"), 2, 23, &["&a[i]"]);
    assert_err(&k("    out[0] = q;"), 2, 14, &["unknown identifier q"]);
    assert_err(&k("    break;"), 2, 5, &["break", "outside a loop"]);
    assert_err(&k("    out[0] = 1;\n    return 5;"), 3, 12, &["void"]);
    assert_err(&k("    const int c[2] = {1, 2};"), 2, 16, &["local arrays"]);
    assert_err(
        "__device__ int f(int x) {\n    return x > 0 ? f(x - 1) : 0;\n}\n__global__ void k(int *out) { out[0] = f(3); }\n",
        2,
        20,
        &["recursion", "f"],
    );
    assert_err(
        "__device__ int g(int x);\n__device__ int f(int x) { return g(x); }\n__device__ int g(int x) {\n  return f(x);\n}\n__global__ void k(int *out) { out[0] = f(3); }\n",
        4,
        10,
        &["recursion", "f"],
    );
    assert_err(
        "int h(int x) { return x; }\n__global__ void k(int *out) { out[0] = h(1); }\n",
        1,
        5,
        &["__device__"],
    );
    assert_err(
        "__global__ void k(int *out) {}\n__global__ void k2(int *out) {}\n",
        2,
        17,
        &["second __global__"],
    );
    assert_err(
        "__device__ int d(int *out) { return 1; }\n",
        0,
        0,
        &["no __global__"],
    );
    assert_err(
        "#include <stdio.h>\n#if 1\n__global__ void k(int *out) {}\n#endif\n",
        2,
        1,
        &["#if"],
    );
    assert_err(
        "#define SQ(x) ((x)*(x))\n__global__ void k(int *out) {}\n",
        1,
        1,
        &["function-like"],
    );
    assert_err(&k("    int x = 3000000000;"), 2, 13, &["long"]);
    assert_err(
        "__global__ void k(int *out, float f) {}\n",
        1,
        29,
        &["float"],
    );
    assert_err(
        "__global__ int k(int *out) { return 0; }\n",
        1,
        16,
        &["void"],
    );
}

#[test]
fn comments_and_qualifiers_keep_positions() {
    // The error is after a block comment spanning lines, a qualifier-heavy line and a #define.
    let src = "/* a\n   comment */ #define N 4\n__device__ __forceinline__ int f(int x) { return x; } // tail\n__global__ void k(int * __restrict__ out) {\n  __shared__ int s[N];\n  out[0] = f(1) + s[0] + 2.0f;\n}\n";
    assert_err(src, 6, 26, &["floating-point"]);
}

#[test]
fn syntax_errors_are_errors() {
    let e = err(
        "__global__ void k(int *out) {\n  out[0] = 1 +;\n}\n",
        "block = 4\n[args]\nout = \"zeros(4)\"\n",
    );
    assert_eq!((e.line, e.column), (2, 15), "{e}");
    assert!(e.message.contains("syntax error"), "{e}");
    let e = err(
        "__global__ void k(int *out) {\n  out[0] = 1;\n",
        "block = 4\n[args]\nout = \"zeros(4)\"\n",
    );
    assert!(e.message.contains("syntax error"), "{e}");
    assert_eq!(e.line, 3, "{e}");
    let e = err(
        "__global__ void k(int *out) { out[0] = ((1; }",
        "block = 4\n[args]\nout = \"zeros(4)\"\n",
    );
    assert!(e.message.contains("syntax error"), "{e}");
    let e = err("", "block = 4\n");
    assert!(e.message.contains("no __global__"), "{e}");
}

#[test]
fn bad_launches_are_errors() {
    let src = "__global__ void k(int *out, int n) {\n  out[threadIdx.x] = n;\n}\n";
    let e = err(src, "block = 4\n[args]\nout = \"zeros(4)\"\n");
    assert_eq!((e.line, e.column), (1, 33), "{e}");
    assert!(e.message.contains("missing launch argument n"), "{e}");
    let e = err(src, "block = 4\n[args]\nout = \"zeros(4)\"\nn = 1\nm = 2\n");
    assert!(e.message.contains("unknown launch argument m"), "{e}");
    let e = err(src, "block = 4\n[args]\nout = 3\nn = 1\n");
    assert!(
        e.message.contains("out is a scalar") && e.message.contains("pointer"),
        "{e}"
    );
    assert_eq!((e.line, e.column), (1, 24), "{e}");
    let e = err(src, "block = 4\n[args]\nout = \"zeros(4)\"\nn = [1, 2]\n");
    assert!(e.message.contains("n is an array"), "{e}");
    let e = err(src, "block = 33\n[args]\nout = \"zeros(4)\"\nn = 1\n");
    assert!(
        e.message.contains("33 threads exceeds") && e.message.contains("32"),
        "{e}"
    );
    let e = err(src, "block = 4\n[args]\nout = \"zeros(5000)\"\nn = 1\n");
    assert!(
        e.message.contains("global memory") && e.message.contains("4096"),
        "{e}"
    );
    let e = err(
        "__global__ void k(int *out) {\n  __shared__ int s[200];\n  __shared__ int t[10][10];\n}\n",
        "block = 4\n[args]\nout = \"zeros(4)\"\n",
    );
    assert!(
        e.message.contains("shared memory") && e.message.contains("256"),
        "{e}"
    );
    assert_eq!((e.line, e.column), (3, 18), "{e}");
}

#[test]
fn too_many_live_values_and_too_long_programs_are_errors() {
    let mut body = String::new();
    for i in 0..32 {
        body.push_str(&format!("  int v{i} = out[{i}];\n"));
    }
    body.push_str("  out[0] = v0");
    for i in 1..32 {
        body.push_str(&format!(" + v{i}"));
    }
    body.push_str(";\n");
    let src = format!("__global__ void k(int *out) {{\n{body}}}\n");
    let e = err(&src, "block = 4\n[args]\nout = \"zeros(40)\"\n");
    assert!(e.message.contains("registers"), "{e}");
    let mut body = String::new();
    for i in 0..1500 {
        body.push_str(&format!(
            "  out[{}] = out[{}] / out[{}];\n",
            i % 4,
            (i + 1) % 4,
            (i + 2) % 4
        ));
    }
    let src = format!("__global__ void k(int *out) {{\n{body}}}\n");
    let e = err(&src, "block = 4\n[args]\nout = \"zeros(4)\"\n");
    assert!(
        e.message.contains("instructions") && e.message.contains("4096"),
        "{e}"
    );
}

#[test]
fn an_out_of_bounds_access_faults_with_lane_index_and_line() {
    let src = "__global__ void k(int *out, const int *a) {\n  int i = threadIdx.x;\n  int v = i * 2;\n  out[i] =\n    a[v];\n}\n";
    let (f, image) = fault_on(src, "block = 4\n[args]\nout = \"zeros(4)\"\na = [1, 2, 3, 4, 5]\n");
    assert_eq!(f.kind, FaultKind::Bounds);
    assert_eq!((f.lane, f.index), (3, 6));
    assert_eq!(image.lines[f.pc as usize], 5);
    // A second warp's lane, on a shared array with a negative index.
    let src = "__global__ void k(int *out) {\n  __shared__ int s[8];\n  int t = threadIdx.x;\n  s[t] = t;\n  __syncthreads();\n  out[t] = s[t - 5];\n}\n";
    let (f, image) = fault_on(src, "block = 8\n[args]\nout = \"zeros(8)\"\n");
    assert_eq!((f.warp, f.lane, f.index), (0, 0, (-5i32) as u32));
    assert_eq!(image.lines[f.pc as usize], 6);
}

/// Run a launch file of examples/cuda on 4 and 8 lanes (the results must agree); its arrays.
fn run_example(name: &str) -> serde_json::Value {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cuda");
    let s = LaunchSpec::from_file(&dir.join(format!("{name}.toml"))).unwrap();
    let kpath = s.kernel.clone().unwrap();
    let src = std::fs::read_to_string(&kpath).unwrap();
    let mut out = Vec::new();
    for lanes in [4, 8] {
        let c = Simt4Config {
            lanes,
            warps: 8,
            shared_words: 1024,
            global_words: 4096,
        };
        let image = compile(&src, &format!("{name}.cu"), &s, &c).unwrap_or_else(|e| panic!("{e}"));
        let mut m = Simt::new(c, &image.words(), &image.global).unwrap();
        assert_eq!(m.run(50_000_000), Some(Stop::Halt), "{name}");
        out.push(image.arrays_json(&m.global));
    }
    assert_eq!(out[0], out[1], "{name}: 4 and 8 lanes disagree");
    out.remove(0)
}

#[test]
fn the_example_kernels() {
    let j = run_example("reverse_shared");
    let a = arr(&j, "a");
    assert_eq!(arr(&j, "out"), a.iter().rev().copied().collect::<Vec<_>>());

    let j = run_example("hist_blocks");
    let a = arr(&j, "a");
    let mut h = vec![0i64; 8];
    for x in &a {
        h[(x.abs() % 8) as usize] += 1;
    }
    assert_eq!(arr(&j, "hist"), h);
    let blocks: Vec<i64> = (0..2)
        .map(|b| {
            a.iter()
                .enumerate()
                .filter(|(i, _)| i % 24 / 12 == b)
                .count() as i64
        })
        .collect();
    assert_eq!(arr(&j, "per_block"), blocks);

    let j = run_example("divmod_table");
    let (x, y) = (arr(&j, "x"), arr(&j, "y"));
    for i in 0..16 {
        let (a, b) = (x[i] as i32, y[i] as i32);
        let (q, r) = c_div(a, b);
        assert_eq!(
            (arr(&j, "q")[i], arr(&j, "r")[i]),
            (i64::from(q), i64::from(r)),
            "{a} / {b}"
        );
        let (uq, ur) = c_udiv(a as u32, b as u32);
        assert_eq!(
            (arr(&j, "uq")[i], arr(&j, "ur")[i]),
            (i64::from(uq), i64::from(ur)),
            "{a} / {b} unsigned"
        );
        let k = arr(&j, "k");
        assert_eq!(
            &k[3 * i..3 * i + 3],
            &[i64::from(a / 8), i64::from(a % -8), i64::from(a / 10)],
            "{a}"
        );
    }

    let j = run_example("device_early_return");
    assert_eq!(arr(&j, "pos"), vec![1, 7, -1, 0, 6, -1]);
    let collatz = |mut x: i64, limit: i64| {
        let mut s = 0;
        while x != 1 {
            if s == limit {
                return -s;
            }
            x = if x & 1 == 1 { 3 * x + 1 } else { x >> 1 };
            s += 1;
        }
        s
    };
    assert_eq!(
        arr(&j, "steps"),
        (0..6).map(|t| collatz(t + 3, 12)).collect::<Vec<_>>()
    );
}

/// Every launch file in examples/cuda (and examples/cuda/puzzles) compiles, halts, and gives the same arrays
/// on 4 and 8 lanes (the values themselves are checked against POCL by the corpus tests).
#[test]
fn every_example_compiles_and_agrees_on_4_and_8_lanes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cuda");
    for dir in [root.clone(), root.join("puzzles")] {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut tomls: Vec<_> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        tomls.sort();
        for toml in tomls {
            let s = LaunchSpec::from_file(&toml).unwrap();
            let Some(kpath) = s.kernel.clone() else {
                continue;
            };
            let src = std::fs::read_to_string(&kpath).unwrap();
            let mut outs = Vec::new();
            for lanes in [4, 8] {
                let c = Simt4Config {
                    lanes,
                    warps: 8,
                    shared_words: 1024,
                    global_words: 4096,
                };
                let image = compile(&src, &kpath.display().to_string(), &s, &c)
                    .unwrap_or_else(|e| panic!("{e}"));
                let mut m = Simt::new(c, &image.words(), &image.global).unwrap();
                assert_eq!(m.run(50_000_000), Some(Stop::Halt), "{}", toml.display());
                outs.push(image.arrays_json(&m.global));
            }
            assert_eq!(
                outs[0],
                outs[1],
                "{}: 4 and 8 lanes disagree",
                toml.display()
            );
        }
    }
}
