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

/// The value written into a memory row's "on" entries of a data group: 256, a power of two with `silu(V) ==
/// V` and `silu(-V) == -0`, so a one-hot read `V * query_scale(dk)` is one exact product (no rounding), and
/// every sum of such products transformers' chunked rule forms (`intra_chunk_attn @ v_new`, accumulated with
/// fused multiply-adds) is exact. Returns `None` for a `dk` that is not a power of two from 4 to [`MAX_DK`].
pub fn value_scale(dk: usize) -> Option<f32> {
    (dk.is_power_of_two() && (4..=MAX_DK).contains(&dk)).then_some(256.0)
}

/// Value groups (4 entries, one on) a head of `dk` rows spends on the norm anchor (see [`read_scales`]): 1
/// when `dk` is an odd power of two (8, 32, 128: Qwen3.5's `linear_key_head_dim`), else 0.
pub fn anchor_groups(dk: usize) -> usize {
    usize::from(dk.trailing_zeros() % 2 == 1)
}

/// Smallest value-head width (`d_v`) that stores `bits` bits in heads of `dk` rows: a 4-entry one-hot group
/// per 2 bits, plus the anchor group for odd powers `dk`, whose `d_v` must also be a power of two.
pub fn min_value_dim(dk: usize, bits: usize) -> usize {
    let dv = 4 * (bits.div_ceil(2).max(1) + anchor_groups(dk));
    if anchor_groups(dk) == 1 { dv.next_power_of_two() } else { dv }
}

/// How a value head of `dk` rows and `dv` entries stores a row and reads it back exactly (see `emit`).
///
/// Every written row has one on entry per 4-entry group: data groups at [`value_scale`] `V = 256`, so a
/// one-hot read returns `c = V·s` (`s` = [`query_scale`]) on the on entries. The gated RMSNorm
/// `w · (o · rsqrt(mean(o²) + eps)) · silu(z)` must return exactly 2·128 there.
/// - `dk` a power of 4: `s` and `c` are powers of two, `mean(o²) = c²/4` a power of 4, its rsqrt a power of
///   two; `norm_weight` 1, no anchor.
/// - `dk` an odd power of two: `c = 256·fl(1/sqrt(dk))` is not a power of two and `mean(o²)` is no power of
///   4, so its rsqrt would round and the sum of 32 equal squares would depend on the order. The last group
///   is then an *anchor*: its first entry (first two where `log2(dv)` is odd) is written with `anchor` at
///   every write (whatever the data), read as the power of two `X = fl(anchor·s)`, so large that the data's
///   squares vanish next to the anchor's in any summation order: `mean(o²) = X²/dv` (`2X²/dv`) is a power of
///   4, its rsqrt a power of two `r`, `o·r` exact, and `norm_weight` the f32 with `norm_weight · (c·r) == 2`
///   exactly (with `r` a power of two, the order of the products does not matter). The anchor entries have
///   no `out_proj` weight. An anchor entry never changes once written, so every sum transformers' chunked
///   rule forms over it has one nonzero term.
///
/// Returns `None` when no such scales exist (`dk` invalid; an odd power `dk` with a `dv` that is not a power
/// of two, or below 8). Each returned scale is checked here in f32, with the data squares summed in three
/// orders.
pub fn read_scales(dk: usize, dv: usize) -> Option<ReadScales> {
    let value = value_scale(dk)?;
    if dv < 4 || dv % 4 != 0 {
        return None;
    }
    let s = query_scale(dk);
    let c = value * s;
    if c as f64 != value as f64 * s as f64 {
        return None; // not one exact product
    }
    let eps = 1e-6f32;
    if anchor_groups(dk) == 0 {
        let scales = ReadScales { value, anchor: None, anchor_entries: 0, norm_weight: 1.0 };
        return scales.exact(dk, dv).then_some(scales);
    }
    if !dv.is_power_of_two() || dv < 8 {
        return None;
    }
    // the anchor's entries: two where log2(dv) is odd, so that their squares' sum over dv is a power of 4
    let entries = 1 + (dv.trailing_zeros() as usize % 2);
    for t in 0..60 {
        let x = 2f32.powi(t);
        // the anchor value whose single product with s rounds to x
        let base = x / s;
        let Some(anchor) = (-64i32..=64).map(|k| f32::from_bits((base.to_bits() as i32 + k) as u32)).find(|a| *a * s == x) else {
            continue;
        };
        let ms = (entries as f32 * x * x) / dv as f32;
        let r = 1.0f32 / (ms + eps).sqrt();
        if r.to_bits() & 0x7f_ffff != 0 {
            continue;
        }
        let o = c * r;
        let base_w = 2.0 / o;
        let Some(norm_weight) = (-64i32..=64).map(|k| f32::from_bits((base_w.to_bits() as i32 + k) as u32)).find(|w| *w * o == 2.0) else {
            continue;
        };
        let scales = ReadScales { value, anchor: Some(anchor), anchor_entries: entries, norm_weight };
        if scales.exact(dk, dv) {
            return Some(scales);
        }
    }
    None
}

/// The scales of one value head's rows (see [`read_scales`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReadScales {
    /// Written at a data group's on entry.
    pub value: f32,
    /// Written at the anchor entries (the last group's first [`Self::anchor_entries`]) of every row; `None`:
    /// no anchor group.
    pub anchor: Option<f32>,
    /// How many entries of the anchor group hold the anchor: 1, or 2 where `log2(d_v)` is odd.
    pub anchor_entries: usize,
    /// The gated RMSNorm weight of every entry.
    pub norm_weight: f32,
}

impl ReadScales {
    /// Whether a read row (every data group on, at any entry; the anchor on) leaves the gated norm as exactly
    /// 2·128 on the data's on entries and 0 elsewhere, with `mean(o²)` summed forwards, backwards and
    /// pairwise, and the rsqrt as `1 / sqrt` (transformers' `torch.rsqrt` on the CPU, our executors).
    fn exact(&self, dk: usize, dv: usize) -> bool {
        let s = query_scale(dk);
        let groups = dv / 4;
        let data = groups - usize::from(self.anchor.is_some());
        let mut o = vec![0f32; dv];
        for g in 0..data {
            o[4 * g + g % 4] = self.value * s;
        }
        if let Some(a) = self.anchor {
            o[4 * (groups - 1)..4 * (groups - 1) + self.anchor_entries].fill(a * s);
        }
        let sq: Vec<f32> = o.iter().map(|e| e * e).collect();
        let fwd = sq.iter().fold(0f32, |a, e| a + e);
        let bwd = sq.iter().rev().fold(0f32, |a, e| a + e);
        fn pairwise(v: &[f32]) -> f32 {
            if v.len() == 1 { v[0] } else { pairwise(&v[..v.len() / 2]) + pairwise(&v[v.len() / 2..]) }
        }
        let pw = pairwise(&sq);
        if fwd != bwd || fwd != pw {
            return false;
        }
        let r = 1.0f32 / (fwd / dv as f32 + 1e-6f32).sqrt();
        let silu_z = Z_GATE / (1.0 + (-Z_GATE).exp());
        (0..dv).all(|j| {
            let y = (self.norm_weight * (o[j] * r)) * silu_z;
            let data_on = j < 4 * data && o[j] != 0.0;
            if data_on { y * OUT_SCALE == 2.0 } else { o[j] != 0.0 || y == 0.0 }
        })
    }
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
    fn value_scale_reads_are_one_exact_product() {
        for dk in [4usize, 8, 16, 32, 64, 128, 256] {
            let v = value_scale(dk).unwrap();
            let o = v * query_scale(dk);
            assert_eq!(o as f64, v as f64 * query_scale(dk) as f64, "dk={dk}: not one exact product");
            assert_eq!(silu(v), v, "dk={dk}");
            assert_eq!(silu_sig(v), v, "dk={dk}");
            assert_eq!(silu(-v), 0.0, "dk={dk}");
            assert_eq!(silu_sig(-v), 0.0, "dk={dk}");
            // the value pre-activation V·(±1 ± 1 - 1): the on pattern is V exactly, the others <= -V
            assert_eq!(v + v - v, v);
            assert_eq!(v - v - v, -v);
        }
        assert_eq!(value_scale(96), None);
        assert_eq!(value_scale(512), None);
    }

    #[test]
    fn read_scales_exist_for_the_qwen35_shapes_and_name_the_rest() {
        // Qwen3.5's linear heads: d_k = d_v = 128 (an odd power: anchored)
        let r = read_scales(128, 128).unwrap();
        assert_eq!(r.value, 256.0);
        let a = r.anchor.unwrap();
        assert_eq!(silu(a), a);
        assert_eq!(silu(-a), 0.0);
        // the anchor's read is a power of two (one rounded product: an anchor row never changes)
        let x = a * query_scale(128);
        assert_eq!(x.to_bits() & 0x7f_ffff, 0);
        assert_eq!(r.anchor_entries, 2, "log2(128) is odd: two anchor entries");
        assert_eq!(read_scales(128, 64).unwrap().anchor_entries, 1);
        assert_eq!(read_scales(256, 32), Some(ReadScales { value: 256.0, anchor: None, anchor_entries: 0, norm_weight: 1.0 }));
        assert_eq!(read_scales(128, 96), None, "d_v not a power of two");
        assert_eq!(read_scales(96, 128), None);
        assert_eq!(min_value_dim(128, 32), 128, "16 data groups + the anchor = 68 -> 128");
        assert_eq!(min_value_dim(128, 62), 128);
        assert_eq!(min_value_dim(128, 63), 256);
        assert_eq!(min_value_dim(256, 32), 64);
    }

    #[test]
    fn gated_norm_of_a_read_row_is_exactly_two() {
        // A written row: one on entry per 4-entry group at V (the anchor group at its own value), read with a
        // one-hot query scaled by 1/sqrt(dk); every dk the weaver accepts, every dv it allows with it.
        for dk in [4usize, 8, 16, 32, 64, 128, 256] {
            for dv in [8usize, 16, 20, 32, 36, 64, 128, 132, 256] {
                let Some(sc) = read_scales(dk, dv) else {
                    assert!(anchor_groups(dk) == 1 && !dv.is_power_of_two(), "dk={dk} dv={dv}");
                    continue;
                };
                let q = query_scale(dk);
                let groups = dv / 4;
                let data = groups - anchor_groups(dk);
                // one-hot read (one product per entry), the on entry anywhere in its group
                for shift in 0..4 {
                    let mut o = vec![0f32; dv];
                    for g in 0..data {
                        o[4 * g + (g + shift) % 4] = sc.value * q;
                    }
                    if let Some(a) = sc.anchor {
                        o[4 * (groups - 1)..4 * (groups - 1) + sc.anchor_entries].fill(a * q);
                    }
                    let ms = o.iter().map(|e| e * e).sum::<f32>() / dv as f32;
                    for r in [1.0f32 / (ms + 1e-6f32).sqrt(), (ms + 1e-6f32).sqrt().recip()] {
                        for (j, e) in o.iter().enumerate() {
                            let y = (sc.norm_weight * (e * r)) * silu(Z_GATE);
                            let want = if j < 4 * data && *e != 0.0 { 2.0 } else if *e == 0.0 { 0.0 } else { continue };
                            assert_eq!(y * OUT_SCALE, want, "dk={dk} dv={dv} j={j}");
                        }
                    }
                }
            }
        }
    }

    /// transformers' chunked gated delta rule (`torch_chunk_gated_delta_rule`, the path every prefill takes)
    /// reads a chunk's positions as `q·S0 + Σ_j (q·k_j) v_new_j`, where `v_new_j` is write j's change to its
    /// row; its matmuls accumulate with fused multiply-adds, so `fma(s, -V, s·V)` must be exactly 0: every
    /// product exact. A head of Qwen3.5's shape (d_k = d_v = 128), a chunk of 64 positions with random writes
    /// to 4 rows (so rows change several times in a chunk) and reads, accumulated forwards and backwards: the
    /// gated norm gives exactly 2 on every set bit's entry. (With the former value scale 362.0387, whose
    /// product with s only rounds to 32, this fails.)
    #[test]
    fn chunked_rule_reads_are_exact_with_fused_multiply_adds() {
        let (dk, dv) = (128usize, 128usize);
        let sc = read_scales(dk, dv).unwrap();
        let s = query_scale(dk);
        let groups = dv / 4;
        let data = groups - anchor_groups(dk);
        let row_of = |bits: u64| -> Vec<f32> {
            let mut v = vec![0f32; dv];
            for g in 0..data {
                v[4 * g + ((bits >> (2 * g)) & 3) as usize] = sc.value;
            }
            if let Some(a) = sc.anchor {
                v[4 * (groups - 1)..4 * (groups - 1) + sc.anchor_entries].fill(a);
            }
            v
        };
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _chunk in 0..50 {
            // state at the chunk's start: rows 0 and 1 written before
            let mut rows: Vec<Option<u64>> = vec![Some(rnd()), Some(rnd()), None, None];
            let s0 = rows.clone();
            // (row written or None, its bits) per position; the change each write makes
            let mut changes: Vec<(usize, Vec<f32>)> = vec![];
            for _pos in 0..64 {
                if rnd() % 2 == 0 {
                    let r = (rnd() % 4) as usize;
                    let bits = rnd();
                    let new = row_of(bits);
                    let old = rows[r].map(row_of).unwrap_or(vec![0.0; dv]);
                    changes.push((r, new.iter().zip(&old).map(|(a, b)| a - b).collect()));
                    rows[r] = Some(bits);
                }
                let qr = (rnd() % 4) as usize;
                let inter = s0[qr].map(row_of).unwrap_or(vec![0.0; dv]);
                for backwards in [false, true] {
                    let mut acc = vec![0f32; dv];
                    let order: Vec<&(usize, Vec<f32>)> = if backwards { changes.iter().rev().collect() } else { changes.iter().collect() };
                    for (r, d) in order {
                        let attn = if *r == qr { s } else { 0.0 };
                        for e in 0..dv {
                            acc[e] = attn.mul_add(d[e], acc[e]);
                        }
                    }
                    let o: Vec<f32> = (0..dv).map(|e| s.mul_add(inter[e], 0.0) + acc[e]).collect();
                    let ms = o.iter().map(|e| e * e).sum::<f32>() / dv as f32;
                    let r = 1.0f32 / (ms + 1e-6).sqrt();
                    let want = rows[qr].map(row_of).unwrap_or(vec![0.0; dv]);
                    for e in 0..4 * data {
                        let y = (sc.norm_weight * (o[e] * r)) * silu(Z_GATE) * OUT_SCALE;
                        assert_eq!(y, if want[e] != 0.0 { 2.0 } else { 0.0 }, "entry {e}: o = {}", o[e]);
                    }
                }
            }
        }
    }
}
