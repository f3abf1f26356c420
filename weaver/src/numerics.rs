//! The f32 facts the compiled weights rely on, each checked by a test with the same f32 operations the
//! executors use (transformers' `Qwen3_5` math; `backends::sparse`).

/// Most rows one head holds (d_k): keeps the one-hot reads and the gated norm exact (see [`value_scale`]).
pub const MAX_DK: usize = 256;

/// MLP pre-activation scale: `silu(128·n) == 128·relu(n)` exactly for every integer n (for n >= 1
/// `exp(-128n)` underflows to 0; for n <= -1 `exp(128|n|)` overflows to inf, so silu is exactly -0).
pub const K_MLP: f32 = 128.0;
/// DeltaNet q/k/v pre-activation scale: a matching one-hot row is exactly 256, everything else silu(<= -256) = 0;
/// `l2norm` of a one-hot of magnitude 256 is exactly 1 (eps = 1e-6 vanishes next to 65536).
pub const QKV_SCALE: f32 = 256.0;
/// `z` pre-activation of used value heads: silu(128) = 128 exactly.
pub const Z_GATE: f32 = 128.0;
/// `b` scale: beta = sigmoid(±200) is exactly 1 or 0.
pub const BETA_SCALE: f32 = 200.0;
/// `a` of every head: softplus(-200) = 0, so g = 0 and decay = exp(0) = 1 exactly.
pub const A_VALUE: f32 = -200.0;
/// `a` of a cleared memory's heads at its clear token: softplus(200) = 200 (transformers' threshold; or
/// `inf` where an executor computes `ln(1 + exp(200))` in f32), so g = -exp(A_log)·200 = -200 (A_log = 0) and
/// decay = exp(-200) = 0 exactly in f32.
pub const A_CLEAR: f32 = 200.0;
/// out_proj weight: on entries of a read row leave the gated norm as exactly 2 · 128 = 256 (see `emit`);
/// 256 · 2^-7 = 2 sets a fresh slot from -1 to +1.
pub const OUT_SCALE: f32 = 1.0 / 128.0;
/// The factor transformers applies to an l2-normalised query: `query * (1 / d_k ** 0.5)`, a Python float
/// that torch casts to the tensor's f32 (`torch_recurrent_gated_delta_rule` and `torch_chunk_gated_delta_rule`
/// in transformers' `modeling_qwen3_5.py`). Every executor multiplies by exactly this value.
pub fn query_scale(dk: usize) -> f32 {
    (1.0 / (dk as f64).sqrt()) as f32
}

/// The value written into a memory row's "on" entries for heads of `dk` rows (a power of two from 4 to
/// [`MAX_DK`]): a large f32 `V` with `silu(V) == V`, `silu(-V) == -0` and
/// `V * query_scale(dk)` (one f32 product) exactly a power of two `o`, so a one-hot read returns exactly `o`
/// on the on entries and the gated RMSNorm exactly 2 (see `emit`). For `d_k` a power of 4 the scale is a
/// power of two and `V = 256`; otherwise `V` is the f32 within a few ulps of `256·sqrt(2)` whose product with
/// the rounded scale rounds to exactly `256·sqrt(2/d_k)` (a power of two): 362.0387 for `d_k = 128`.
/// Returns `None` for other `dk`.
pub fn value_scale(dk: usize) -> Option<f32> {
    if !dk.is_power_of_two() || !(4..=MAX_DK).contains(&dk) {
        return None;
    }
    let s = query_scale(dk);
    let even = dk.trailing_zeros() % 2 == 0;
    let (target, o) = if even { (256.0f64, 256.0 / (dk as f64).sqrt()) } else { (256.0 * 2f64.sqrt(), 256.0 * (2.0 / dk as f64).sqrt()) };
    let base = target as f32;
    (-16i32..=16).map(|k| f32::from_bits((base.to_bits() as i32 + k) as u32)).find(|v| (*v * s) as f64 == o)
}

/// Logit bonus of the tokens of the next phase.
pub const PHASE_BONUS: f32 = 1024.0;

/// The zero-centred RMSNorm weight `w` for which `(±1 · rsqrt(1 + eps)) · (1 + w) == ±1` exactly in f32, so
/// a residual of ±1 entries passes every norm unchanged. Searches a few ulps around `1/rsqrt(1+eps) - 1`.
pub fn norm_gain_weight(eps: f64) -> f32 {
    let eps = eps as f32;
    let r = 1.0f32 / (1.0f32 + eps).sqrt();
    let base = 1.0f32 / r - 1.0;
    for k in 0..64i32 {
        for cand in [f32::from_bits((base.to_bits() as i32 + k) as u32), f32::from_bits((base.to_bits() as i32 - k) as u32)] {
            if (1.0f32 * r) * (1.0 + cand) == 1.0 && (-1.0f32 * r) * (1.0 + cand) == -1.0 {
                return cand;
            }
        }
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;

    fn silu(x: f32) -> f32 {
        x / (1.0 + (-x).exp())
    }
    fn silu_sig(x: f32) -> f32 {
        x * (1.0 / (1.0 + (-x).exp()))
    }

    #[test]
    fn norm_gain_makes_rmsnorm_the_identity_on_pm1() {
        let w = norm_gain_weight(1e-6);
        // mean(x^2) = 1 for a ±1 residual; both rsqrt forms executors use.
        let r1 = 1.0f32 / (1.0f32 + 1e-6f32).sqrt();
        let ms = 1.0f32 + 1e-6f32;
        let r2 = ms.sqrt().recip();
        for r in [r1, r2] {
            assert_eq!((1.0f32 * r) * (1.0 + w), 1.0);
            assert_eq!((-1.0f32 * r) * (1.0 + w), -1.0);
        }
        assert_eq!(w, 2f32.powi(-21), "1 + eps rounds to 1 + 2^-20, rsqrt to 1 - 2^-21");
    }

    #[test]
    fn silu_is_exact_relu_at_multiples_of_128() {
        for n in -2000i32..=2000 {
            let g = K_MLP * n as f32;
            let want = K_MLP * (n.max(0) as f32);
            assert_eq!(silu(g), want, "n={n}");
            assert_eq!(silu_sig(g), want, "n={n}");
        }
        assert_eq!(silu(Z_GATE), 128.0);
        assert_eq!(silu(QKV_SCALE), 256.0);
        assert_eq!(silu(-QKV_SCALE), 0.0);
    }

    #[test]
    fn beta_decay_and_l2norm_are_exact() {
        let sig = |x: f32| 1.0f32 / (1.0 + (-x).exp());
        assert_eq!(sig(BETA_SCALE), 1.0);
        assert_eq!(sig(-BETA_SCALE), 0.0);
        assert_eq!(sig(-3.0 * BETA_SCALE), 0.0);
        // b = 200·(Σ lits - (m - 1)) with m - 1 literals failing at most (block heads: m <= 64)
        for k in 1..=64 {
            assert_eq!(sig(-(k as f32) * BETA_SCALE), 0.0, "k={k}");
        }
        let softplus = |x: f32| if x > 20.0 { x } else { x.exp().ln_1p() };
        assert_eq!((-1.0f32 * softplus(A_VALUE)).exp(), 1.0);
        // A clear's decay, as the emitted a-row computes it (A_VALUE + half·(x + 1) for x = ±1), and with
        // softplus unthresholded (ln(1 + exp(200)) = inf in f32: exp(-inf) is 0 too).
        let half = (A_CLEAR - A_VALUE) / 2.0;
        assert_eq!(-half + (A_VALUE + half), A_VALUE);
        assert_eq!(half + (A_VALUE + half), A_CLEAR);
        assert_eq!((-1.0f32 * softplus(A_CLEAR)).exp(), 0.0);
        assert_eq!((-1.0f32 * A_CLEAR.exp().ln_1p()).exp(), 0.0);
        // l2norm of a one-hot of magnitude 256
        let r = 1.0f32 / (256.0f32 * 256.0 + 1e-6).sqrt();
        assert_eq!(256.0 * r, 1.0);
    }

    #[test]
    fn value_scale_reads_back_a_power_of_two() {
        for dk in [4usize, 8, 16, 32, 64, 128, 256] {
            let v = value_scale(dk).unwrap();
            let o = v * query_scale(dk);
            assert!(o.to_bits() & 0x7f_ffff == 0 && o >= 8.0, "dk={dk}: {v} * {} = {o}", query_scale(dk));
            assert_eq!(silu(v), v, "dk={dk}");
            assert_eq!(silu_sig(v), v, "dk={dk}");
            assert_eq!(silu(-v), 0.0, "dk={dk}");
            assert_eq!(silu_sig(-v), 0.0, "dk={dk}");
            // the value pre-activation V·(±1 ± 1 - 1): the on pattern is V exactly, the others <= -V
            assert_eq!(v + v - v, v);
            assert_eq!(v - v - v, -v);
        }
        assert_eq!(value_scale(256), Some(256.0));
        assert_eq!(value_scale(128), Some(362.038_7));
        assert_eq!(value_scale(128).unwrap() * query_scale(128), 32.0);
        assert_eq!(value_scale(96), None);
        assert_eq!(value_scale(512), None);
    }

    #[test]
    fn gated_norm_of_a_read_row_is_exactly_two() {
        // A row of dv entries, a quarter of them at the value scale V (one per 2-bit group), read with a
        // one-hot query scaled by 1/sqrt(dk): o = V·scale on the on entries, for every dk the weaver accepts.
        for dk in [4usize, 8, 16, 32, 64, 128, 256] {
            for dv in [4usize, 8, 20, 36, 64, 128, 132] {
                let q = query_scale(dk);
                let vs = value_scale(dk).unwrap();
                let o: Vec<f32> = (0..dv).map(|j| if j % 4 == 1 { vs * q } else { 0.0 }).collect();
                let ms = o.iter().map(|e| e * e).sum::<f32>() / dv as f32;
                let r = 1.0f32 / (ms + 1e-6f32).sqrt();
                for (j, e) in o.iter().enumerate() {
                    let y = (1.0f32 * (e * r)) * silu(Z_GATE);
                    assert_eq!(y * OUT_SCALE, if j % 4 == 1 { 2.0 } else { 0.0 }, "dk={dk} dv={dv}");
                }
            }
        }
    }
}
