//! Gated DeltaNet, the linear-attention mixer (`Qwen3_5GatedDeltaNet` in transformers'
//! `modeling_qwen3_5.py`, recurrent form `torch_recurrent_gated_delta_rule`).
//!
//! Per token: `qkv = in_proj_qkv(x)` -> depthwise causal conv1d over time (kernel K, no bias; the last K-1
//! inputs are the conv state) -> SiLU -> split q `[Hk, dk]`, k `[Hk, dk]`, v `[Hv, dv]`; q and k are
//! L2-normalised per head (`x * rsqrt(sum(x^2) + 1e-6)`), q is scaled by `1/sqrt(dk)`; key head `i` serves value
//! heads `i*r .. (i+1)*r` with `r = Hv / Hk`. `beta = sigmoid(in_proj_b(x))`,
//! `g = -exp(A_log) * softplus(in_proj_a(x) + dt_bias)`. With state `S: [dk, dv]` per value head:
//! `S = S * exp(g); kv = S^T k; S = S + k (beta (v - kv))^T; o = S^T q`. Output per value head:
//! `w * rmsnorm(o) * silu(z)` with `z = in_proj_z(x)`, then `out_proj`.
//!
//! Projections, the conv and the norms run over all positions at once; the recurrence loops over positions.

use super::layers::{upload, GatedRmsNorm, Linear};
use super::ModelError;
use crate::checkpoint::TensorSource;
use crate::config::Qwen35Config;
use crate::names::LayerTensor;
use burn::tensor::{activation, Device, Tensor};

/// The per-sequence state of one DeltaNet layer.
#[derive(Clone)]
pub struct DeltaNetState {
    /// The last `K-1` conv inputs, `[B, K-1, conv_dim]` (zeros before the first token).
    pub conv: Tensor<3>,
    /// The recurrent state, `[B, Hv, dk, dv]`.
    pub rec: Tensor<4>,
}

pub(crate) struct GatedDeltaNet {
    in_qkv: Linear,
    in_z: Linear,
    in_b: Linear,
    in_a: Linear,
    /// Conv weights, `[K, conv_dim]` (transposed from `[conv_dim, 1, K]`).
    conv_w: Tensor<2>,
    /// `-exp(A_log)`, `[1, 1, Hv]`.
    neg_a: Tensor<3>,
    /// `[1, 1, Hv]`
    dt_bias: Tensor<3>,
    norm: GatedRmsNorm,
    out: Linear,
    k: usize,
    hk: usize,
    hv: usize,
    dk: usize,
    dv: usize,
}

impl GatedDeltaNet {
    pub fn load(ck: &dyn TensorSource, cfg: &Qwen35Config, layer: usize, device: &Device) -> Result<Self, ModelError> {
        let (k, c) = (cfg.linear_conv_kernel_dim, cfg.linear_conv_dim());
        let hv = cfg.linear_num_value_heads;
        let cw = ck.tensor(&LayerTensor::Conv1d.name(layer))?; // [C, 1, K]
        let mut conv = vec![0f32; k * c];
        for ch in 0..c {
            for j in 0..k {
                conv[j * c + ch] = cw.data[ch * k + j];
            }
        }
        let a_log = ck.tensor(&LayerTensor::ALog.name(layer))?;
        let dt = ck.tensor(&LayerTensor::DtBias.name(layer))?;
        Ok(Self {
            in_qkv: Linear::load(ck, &LayerTensor::InProjQkv.name(layer), device)?,
            in_z: Linear::load(ck, &LayerTensor::InProjZ.name(layer), device)?,
            in_b: Linear::load(ck, &LayerTensor::InProjB.name(layer), device)?,
            in_a: Linear::load(ck, &LayerTensor::InProjA.name(layer), device)?,
            conv_w: upload(conv, [k, c], device),
            neg_a: upload(a_log.data.iter().map(|v| -v.exp()).collect(), [1, 1, hv], device),
            dt_bias: upload(dt.data, [1, 1, hv], device),
            norm: GatedRmsNorm::load(ck, &LayerTensor::GatedNorm.name(layer), cfg.rms_norm_eps, device)?,
            out: Linear::load(ck, &LayerTensor::OutProj.name(layer), device)?,
            k,
            hk: cfg.linear_num_key_heads,
            hv,
            dk: cfg.linear_key_head_dim,
            dv: cfg.linear_value_head_dim,
        })
    }

    /// A zero state for `batch` sequences.
    pub fn empty_state(&self, batch: usize, device: &Device) -> DeltaNetState {
        let c = 2 * self.hk * self.dk + self.hv * self.dv;
        DeltaNetState {
            conv: Tensor::<3>::zeros([batch, self.k - 1, c], device),
            rec: Tensor::<4>::zeros([batch, self.hv, self.dk, self.dv], device),
        }
    }

    /// L2-normalise the last dim: `x * rsqrt(sum(x^2) + 1e-6)`, `x: [B, T, H, d]`.
    fn l2norm(x: Tensor<4>) -> Tensor<4> {
        let s = x.clone().square().sum_dim(3);
        x * s.add_scalar(1e-6).sqrt().recip()
    }

    /// `[B, T, Hk, d] -> [B, T, Hk * r, d]`, each key head repeated for its `r` consecutive value heads.
    fn repeat_heads(x: Tensor<4>, r: usize) -> Tensor<4> {
        if r == 1 {
            return x;
        }
        let [b, t, h, d] = x.dims();
        x.unsqueeze_dim::<5>(3).expand([b, t, h, r, d]).reshape([b, t, h * r, d])
    }

    /// `x: [B, T, hidden]` (after `input_layernorm`) -> `[B, T, hidden]`, advancing `state`.
    pub fn forward(&self, x: Tensor<3>, state: &mut DeltaNetState) -> Tensor<3> {
        let [b, t, _] = x.dims();
        let (hk, hv, dk, dv, k) = (self.hk, self.hv, self.dk, self.dv, self.k);
        let key_dim = hk * dk;
        let c = 2 * key_dim + hv * dv;

        // Depthwise causal conv over [conv state; new inputs].
        let qkv = self.in_qkv.forward(x.clone()); // [B, T, C]
        let xp = Tensor::cat(vec![state.conv.clone(), qkv], 1); // [B, K-1+T, C]
        let mut acc: Option<Tensor<3>> = None;
        for j in 0..k {
            let wj = self.conv_w.clone().slice([j..j + 1, 0..c]).reshape([1, 1, c]);
            let term = xp.clone().slice([0..b, j..j + t, 0..c]) * wj;
            acc = Some(match acc {
                None => term,
                Some(a) => a + term,
            });
        }
        state.conv = xp.slice([0..b, t..t + k - 1, 0..c]);
        let mixed = activation::silu(acc.expect("kernel size is positive"));

        let q = mixed.clone().slice([0..b, 0..t, 0..key_dim]).reshape([b, t, hk, dk]);
        let kk = mixed.clone().slice([0..b, 0..t, key_dim..2 * key_dim]).reshape([b, t, hk, dk]);
        let v = mixed.slice([0..b, 0..t, 2 * key_dim..c]).reshape([b, t, hv, dv]);

        let beta = activation::sigmoid(self.in_b.forward(x.clone())); // [B, T, Hv]
        let g = self.neg_a.clone() * activation::softplus(self.in_a.forward(x.clone()) + self.dt_bias.clone(), 1.0);
        let decay = g.exp(); // [B, T, Hv]

        let r = hv / hk;
        let q = Self::repeat_heads(Self::l2norm(q), r).mul_scalar(1.0 / (dk as f64).sqrt());
        let kk = Self::repeat_heads(Self::l2norm(kk), r);
        // [B, Hv, T, d]
        let q = q.swap_dims(1, 2);
        let kk = kk.swap_dims(1, 2);
        let v = v.swap_dims(1, 2);
        let beta = beta.swap_dims(1, 2); // [B, Hv, T]
        let decay = decay.swap_dims(1, 2);

        let mut s = state.rec.clone(); // [B, Hv, dk, dv]
        let mut outs = Vec::with_capacity(t);
        for i in 0..t {
            let q_t = q.clone().slice([0..b, 0..hv, i..i + 1, 0..dk]).reshape([b, hv, dk, 1]);
            let k_t = kk.clone().slice([0..b, 0..hv, i..i + 1, 0..dk]).reshape([b, hv, dk, 1]);
            let v_t = v.clone().slice([0..b, 0..hv, i..i + 1, 0..dv]); // [B, Hv, 1, dv]
            let beta_t = beta.clone().slice([0..b, 0..hv, i..i + 1]).reshape([b, hv, 1, 1]);
            let decay_t = decay.clone().slice([0..b, 0..hv, i..i + 1]).reshape([b, hv, 1, 1]);
            s = s * decay_t;
            let kv = (s.clone() * k_t.clone()).sum_dim(2); // [B, Hv, 1, dv]
            let delta = (v_t - kv) * beta_t;
            s = s + k_t * delta;
            outs.push((s.clone() * q_t).sum_dim(2)); // [B, Hv, 1, dv]
        }
        state.rec = s;
        let o = Tensor::cat(outs, 2).swap_dims(1, 2); // [B, T, Hv, dv]

        let z = self.in_z.forward(x); // [B, T, Hv*dv]
        let o = self.norm.forward(o.reshape([b * t * hv, dv]), z.reshape([b * t * hv, dv]));
        self.out.forward(o.reshape([b, t, hv * dv]))
    }
}
