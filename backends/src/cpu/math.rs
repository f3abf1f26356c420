//! The Qwen3.5 math of one token in f32, shared by the CPU executors: the activations (`silu`, `sigmoid`,
//! `softplus`, with their exact shortcuts), RMSNorm, the Gated DeltaNet head's L2 normalisation, write and
//! read, full attention of one token, the rotary frequencies, and the greedy token ([`argmax`]).
//!
//! Every function computes what transformers' `models/qwen3_5/modeling_qwen3_5.py` computes (the recurrent,
//! token-by-token path), in the order it sums, skipping only terms that are exact zeros (adding `+0` changes
//! no f32 sum).

use crate::config::Qwen35Config;

/// `x * sigmoid(x)` as torch computes it in f32 (`x / (1 + exp(-x))`), with the two ranges where the result is
/// known exactly returned without `exp`.
pub fn silu(x: f32) -> f32 {
    if x < -89.0 {
        // exp(-x) overflows to +inf in f32 (e^88.73 > f32::MAX), so x / (1 + inf) is exactly -0.
        return -0.0;
    }
    if x > 32.0 {
        // exp(-x) < 2^-46 vanishes next to 1 in f32: x / 1 is exactly x.
        return x;
    }
    x / (1.0 + (-x).exp())
}
/// `1 / (1 + exp(-x))` in f32, with the two ranges where the result is exactly 0 or 1 returned without `exp`.
pub fn sigmoid(x: f32) -> f32 {
    if x < -89.0 {
        // exp(-x) overflows to +inf, so 1 / (1 + inf) is exactly +0.
        return 0.0;
    }
    if x > 17.0 {
        // exp(-x) < 2^-24.5 is below half an ulp of 1: 1 + exp(-x) rounds to 1, and 1 / 1 is 1.
        return 1.0;
    }
    1.0 / (1.0 + (-x).exp())
}
/// torch's `F.softplus` with beta 1 and threshold 20.
pub fn softplus(x: f32) -> f32 {
    if x > 20.0 { x } else { x.exp().ln_1p() }
}

/// Zero-centred RMSNorm of transformers' `Qwen3_5RMSNorm`.
#[inline(never)]
pub fn rms_norm(x: &[f32], one_plus_w: &[f32], eps: f32) -> Vec<f32> {
    let ms = x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32;
    let r = 1.0 / (ms + eps).sqrt();
    x.iter().zip(one_plus_w).map(|(v, g)| (v * r) * g).collect()
}

/// Per conv channel `[conv_dim]`: some tap before the current one is nonzero (`conv` is `[conv_dim, kernel]`).
pub fn conv_history(conv: &[f32], kernel: usize) -> Vec<bool> {
    conv.chunks_exact(kernel).map(|w| w[..kernel - 1].iter().any(|v| *v != 0.0)).collect()
}

/// The rotary inverse frequencies `1 / theta^(2i / rotary_dim)`, computed as transformers does: in f32 from an
/// f32 arange.
pub fn rope_inv_freq(cfg: &Qwen35Config) -> Vec<f32> {
    let rd = cfg.rotary_dim();
    let theta = cfg.rope_parameters.rope_theta;
    (0..rd / 2).map(|i| 1.0f32 / (theta as f32).powf((2 * i) as f32 / rd as f32)).collect()
}

/// A key head's `q` or `k` `[d_k]` L2-normalised (`u * rsqrt(sum(u^2) + 1e-6)`) and times `mul`, as its
/// nonzero entries `(row, value)` in ascending rows, or `None` when all zero (the normalised vector is then
/// exactly zero too: `0 * rsqrt(0 + 1e-6) = 0`), which skips the head's read or write. The zero entries
/// are left out of the sum of squares: adding `+0` changes no f32 sum, so the result is the dense one's.
pub fn l2_scaled(u: &[f32], mul: f32) -> Option<Vec<(u32, f32)>> {
    let mut out = Vec::new();
    l2_scaled_into(u, mul, &mut out).then_some(out)
}

/// [`l2_scaled`] into `out` (cleared first, its allocation kept): returns `false` where that returns `None`.
pub fn l2_scaled_into(u: &[f32], mul: f32, out: &mut Vec<(u32, f32)>) -> bool {
    out.clear();
    out.extend(u.iter().enumerate().filter(|(_, e)| **e != 0.0).map(|(i, e)| (i as u32, *e)));
    l2_normalise(out, mul)
}

/// The second half of [`l2_scaled_into`]: `out` holds the nonzero entries `(index, value)` of a vector in
/// ascending index order; they become the normalised entries times `mul` (those that stay nonzero). Returns
/// `false` (and leaves `out` empty) when there are none.
pub fn l2_normalise(out: &mut Vec<(u32, f32)>, mul: f32) -> bool {
    if out.is_empty() {
        return false;
    }
    let ss = out.iter().map(|(_, e)| e * e).sum::<f32>();
    let r = 1.0 / (ss + 1e-6).sqrt();
    for e in out.iter_mut() {
        e.1 = (e.1 * r) * mul;
    }
    out.retain(|(_, e)| *e != 0.0);
    true
}

/// The delta rule's write into one value head's state `st` `[d_k, d_v]` with key `kv` (its nonzero
/// entries, ascending rows), value `vv` `[d_v]` and `beta`: `kv_mem = S^T k; delta = (v - kv_mem) * beta;
/// S += k delta^T`. `scratch` holds at least `2 d_v` entries (overwritten). Returns whether any entry of
/// `delta` is nonzero (otherwise `S` is unchanged).
pub fn write_head(st: &mut [f32], kv: &[(u32, f32)], vv: &[f32], beta: f32, scratch: &mut [f32]) -> bool {
    write_head_settled(st, kv, vv, beta, scratch).0
}

/// [`write_head`], also returning whether the head was *settled*: `v - S^T k` was exactly zero in every entry
/// (then `delta` is zero for every finite `beta` and `S` is unchanged). Returns `(changed, settled)`.
pub fn write_head_settled(st: &mut [f32], kv: &[(u32, f32)], vv: &[f32], beta: f32, scratch: &mut [f32]) -> (bool, bool) {
    let dv = vv.len();
    let (mem, delta) = scratch[..2 * dv].split_at_mut(dv);
    mem.fill(0.0);
    for &(r, kr) in kv {
        let r = r as usize;
        for (m, sv) in mem.iter_mut().zip(&st[r * dv..(r + 1) * dv]) {
            *m += sv * kr;
        }
    }
    let mut settled = true;
    for ((d, v), m) in delta.iter_mut().zip(vv).zip(mem.iter()) {
        let diff = v - m;
        settled &= diff == 0.0;
        *d = diff * beta;
    }
    if delta.iter().all(|d| *d == 0.0) {
        return (false, settled);
    }
    let delta = &*delta;
    for &(r, kr) in kv {
        let r = r as usize;
        for (sv, dl) in st[r * dv..(r + 1) * dv].iter_mut().zip(delta) {
            *sv += kr * dl;
        }
    }
    (true, false)
}

/// One value head's read `o = S^T q` from its state `st` `[d_k, d_v]` (`q` as its nonzero entries,
/// ascending rows), then the gated RMSNorm `w * (o * rsqrt(mean(o^2) + eps)) * silu(z)`, into `o` `[d_v]`,
/// which must hold zeros on entry.
pub fn read_head(st: &[f32], qv: &[(u32, f32)], zh: &[f32], norm_w: &[f32], eps: f32, o: &mut [f32]) {
    read_head_gated(st, qv, |j| silu(zh[j]), norm_w, eps, o)
}

/// [`read_head`] with the output gate given as `gate(j)` = `silu(z[j])` (a head whose `z` is one value in every
/// entry computes its `silu` once: the same bits in every entry).
#[inline(always)]
pub fn read_head_gated(st: &[f32], qv: &[(u32, f32)], gate: impl Fn(usize) -> f32, norm_w: &[f32], eps: f32, o: &mut [f32]) {
    let dv = o.len();
    for &(r, qr) in qv {
        let r = r as usize;
        for (ov, sv) in o.iter_mut().zip(&st[r * dv..(r + 1) * dv]) {
            *ov += sv * qr;
        }
    }
    let ms = o.iter().map(|e| e * e).sum::<f32>() / dv as f32;
    let r = 1.0 / (ms + eps).sqrt();
    for j in 0..dv {
        if o[j] != 0.0 {
            o[j] = (norm_w[j] * (o[j] * r)) * gate(j);
        }
    }
}

/// Full attention of one token after its projections (`qg` = `q_proj` output `[heads * 2 * head_dim]`, the
/// query and gate of each head; `k`, `v` `[kv_heads * head_dim]`): `q_norm`/`k_norm` (`1 + w` given),
/// rotate-half rotary embedding at position `pos`, the key and value appended to the caches, grouped-query
/// softmax attention, output times `sigmoid(gate)`. Returns `[heads * head_dim]`, the input of `o_proj`.
#[allow(clippy::too_many_arguments)]
pub fn attend(c: &Qwen35Config, inv_freq: &[f32], q_norm: &[f32], k_norm: &[f32], qg: &[f32], mut k: Vec<f32>, v: Vec<f32>, kc: &mut Vec<Vec<f32>>, vc: &mut Vec<Vec<f32>>, pos: usize) -> Vec<f32> {
    let (nh, nkv, hd) = (c.num_attention_heads, c.num_key_value_heads, c.head_dim);
    let eps = c.rms_norm_eps as f32;
    let rd = c.rotary_dim();
    let (cos, sin): (Vec<f32>, Vec<f32>) = inv_freq
        .iter()
        .map(|f| {
            let ang = pos as f32 * f;
            (ang.cos(), ang.sin())
        })
        .unzip();
    let rope = |u: &mut [f32]| {
        let half = rd / 2;
        let orig: Vec<f32> = u[..rd].to_vec();
        for i in 0..rd {
            let rot = if i < half { -orig[i + half] } else { orig[i - half] };
            let (cs, sn) = (cos[i % half], sin[i % half]);
            u[i] = orig[i] * cs + rot * sn;
        }
    };
    for j in 0..nkv {
        let mut kn = rms_norm(&k[j * hd..(j + 1) * hd], &k_norm, eps);
        rope(&mut kn);
        k[j * hd..(j + 1) * hd].copy_from_slice(&kn);
    }
    kc.push(k);
    vc.push(v);
    let group = nh / nkv;
    let scaling = (hd as f32).powf(-0.5);
    let mut out = vec![0f32; nh * hd];
    for head in 0..nh {
        let base = head * 2 * hd;
        let mut q = rms_norm(&qg[base..base + hd], &q_norm, eps);
        rope(&mut q);
        let gate = &qg[base + hd..base + 2 * hd];
        let j = head / group;
        let scores: Vec<f32> = kc
            .iter()
            .map(|kt| q.iter().zip(&kt[j * hd..(j + 1) * hd]).map(|(a, b)| a * b).sum::<f32>() * scaling)
            .collect();
        let mx = scores.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f32> = scores.iter().map(|s| (s - mx).exp()).collect();
        let sum: f32 = e.iter().sum();
        let o = &mut out[head * hd..(head + 1) * hd];
        for (w, vt) in e.iter().zip(vc.iter()) {
            let p = w / sum;
            if p != 0.0 {
                for (ov, vv) in o.iter_mut().zip(&vt[j * hd..(j + 1) * hd]) {
                    *ov += p * vv;
                }
            }
        }
        for (ov, g) in o.iter_mut().zip(gate) {
            *ov *= sigmoid(*g);
        }
    }
    out
}

/// Index of the first maximum (`torch.argmax` semantics for finite values).
pub fn argmax(v: &[f32]) -> u32 {
    let mut best = 0;
    for (i, x) in v.iter().enumerate() {
        if *x > v[best] {
            best = i;
        }
    }
    best as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silu_is_exact_relu_at_multiples_of_128() {
        for n in -64i32..=64 {
            let g = 128.0 * n as f32;
            assert_eq!(silu(g), g.max(0.0), "silu({g})");
        }
        assert_eq!(sigmoid(200.0), 1.0);
        assert_eq!(sigmoid(-200.0), 0.0);
        assert_eq!(softplus(-200.0), 0.0);
    }

    /// Points of `f` at steps of 0.003 over `ranges` where it must equal `formula` bit for bit; returns how many.
    fn shortcut_points(f: fn(f32) -> f32, formula: fn(f32) -> f32, ranges: &[(f32, f32)], name: &str) -> usize {
        let mut n = 0;
        for &(lo, hi) in ranges {
            let mut x = lo;
            while x < hi {
                assert_eq!(f(x).to_bits(), formula(x).to_bits(), "{name}({x})");
                x += 0.003;
                n += 1;
            }
        }
        n
    }

    #[test]
    fn silu_shortcuts_equal_the_formula_bit_for_bit() {
        let n = shortcut_points(silu, |x| x / (1.0 + (-x).exp()), &[(-130.0, -80.0), (20.0, 300.0)], "silu");
        assert!(n > 90_000);
    }

    #[test]
    fn sigmoid_shortcuts_equal_the_formula_bit_for_bit() {
        let n = shortcut_points(sigmoid, |x| 1.0 / (1.0 + (-x).exp()), &[(-300.0, -80.0), (10.0, 300.0)], "sigmoid");
        assert!(n > 150_000);
    }
}
