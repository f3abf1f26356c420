//! Gated full attention (`Qwen3_5Attention` in transformers' `modeling_qwen3_5.py`).
//!
//! `q_proj(x)` viewed as `[.., heads, 2 * head_dim]` holds per head `[query (head_dim), gate (head_dim)]`.
//! `q_norm`/`k_norm` are zero-centred RMSNorms over `head_dim`. Rotary embedding (rotate-half form) on the first
//! `rotary_dim` dims with `inv_freq[i] = 1 / theta^(2i / rotary_dim)`; for text, transformers' three mrope
//! position streams are equal, so mrope reduces to this plain rope. Grouped-query attention, causal softmax with
//! scale `1/sqrt(head_dim)`, output times `sigmoid(gate)`, then `o_proj`. Keys and values are cached.

use super::layers::{Linear, RmsNorm};
use super::ModelError;
use crate::checkpoint::TensorSource;
use crate::config::Qwen35Config;
use crate::names::LayerTensor;
use burn::tensor::{activation, Bool, Device, Tensor, TensorData};

/// The KV cache of one attention layer: `[B, kv_heads, L, head_dim]` each, `None` before the first token.
#[derive(Clone, Default)]
pub struct KvCache {
    pub k: Option<Tensor<4>>,
    pub v: Option<Tensor<4>>,
}

pub(crate) struct Attention {
    q_proj: Linear,
    k_proj: Linear,
    v_proj: Linear,
    o_proj: Linear,
    q_norm: RmsNorm,
    k_norm: RmsNorm,
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    rotary_dim: usize,
    theta: f64,
}

impl Attention {
    pub fn load(ck: &dyn TensorSource, cfg: &Qwen35Config, layer: usize, device: &Device) -> Result<Self, ModelError> {
        let eps = cfg.rms_norm_eps;
        Ok(Self {
            q_proj: Linear::load(ck, &LayerTensor::QProj.name(layer), device)?,
            k_proj: Linear::load(ck, &LayerTensor::KProj.name(layer), device)?,
            v_proj: Linear::load(ck, &LayerTensor::VProj.name(layer), device)?,
            o_proj: Linear::load(ck, &LayerTensor::OProj.name(layer), device)?,
            q_norm: RmsNorm::load(ck, &LayerTensor::QNorm.name(layer), eps, device)?,
            k_norm: RmsNorm::load(ck, &LayerTensor::KNorm.name(layer), eps, device)?,
            heads: cfg.num_attention_heads,
            kv_heads: cfg.num_key_value_heads,
            head_dim: cfg.head_dim,
            rotary_dim: cfg.rotary_dim(),
            theta: cfg.rope_parameters.rope_theta,
        })
    }

    /// `cos` and `sin` for positions `pos0 .. pos0 + t`, each `[1, 1, t, rotary_dim]` (the half-width
    /// frequencies repeated twice, as `torch.cat((freqs, freqs), -1)`), computed in f32 like transformers.
    fn rope_tables(&self, pos0: usize, t: usize, device: &Device) -> (Tensor<4>, Tensor<4>) {
        let rd = self.rotary_dim;
        let half = rd / 2;
        let theta = self.theta as f32;
        let inv: Vec<f32> = (0..half).map(|i| 1.0 / theta.powf((2 * i) as f32 / rd as f32)).collect();
        let mut cos = Vec::with_capacity(t * rd);
        let mut sin = Vec::with_capacity(t * rd);
        for p in pos0..pos0 + t {
            for _ in 0..2 {
                for f in &inv {
                    let a = p as f32 * f;
                    cos.push(a.cos());
                    sin.push(a.sin());
                }
            }
        }
        let mk = |v: Vec<f32>| Tensor::<4>::from_data(TensorData::new(v, [1, 1, t, rd]), device);
        (mk(cos), mk(sin))
    }

    /// Rotate the first `rotary_dim` dims of `x: [B, H, T, head_dim]`.
    fn apply_rope(&self, x: Tensor<4>, cos: &Tensor<4>, sin: &Tensor<4>) -> Tensor<4> {
        let [b, h, t, d] = x.dims();
        let rd = self.rotary_dim;
        if rd == 0 {
            return x;
        }
        let half = rd / 2;
        let rot = x.clone().slice([0..b, 0..h, 0..t, 0..rd]);
        let x1 = rot.clone().slice([0..b, 0..h, 0..t, 0..half]);
        let x2 = rot.clone().slice([0..b, 0..h, 0..t, half..rd]);
        let rotated = Tensor::cat(vec![x2.neg(), x1], 3);
        let emb = rot * cos.clone() + rotated * sin.clone();
        if rd == d {
            emb
        } else {
            Tensor::cat(vec![emb, x.slice([0..b, 0..h, 0..t, rd..d])], 3)
        }
    }

    /// `[B, kv_heads, L, d] -> [B, heads, L, d]`, each KV head repeated for its query heads.
    fn repeat_kv(&self, x: Tensor<4>) -> Tensor<4> {
        let r = self.heads / self.kv_heads;
        if r == 1 {
            return x;
        }
        let [b, h, l, d] = x.dims();
        x.unsqueeze_dim::<5>(2).expand([b, h, r, l, d]).reshape([b, h * r, l, d])
    }

    /// `x: [B, T, hidden]` (after `input_layernorm`) at absolute positions `pos0 .. pos0 + T` -> `[B, T, hidden]`,
    /// appending this call's keys and values to `cache`.
    pub fn forward(&self, x: Tensor<3>, pos0: usize, cache: &mut KvCache) -> Tensor<3> {
        let [b, t, _] = x.dims();
        let (h, kvh, hd) = (self.heads, self.kv_heads, self.head_dim);
        let device = x.device();

        let qg = self.q_proj.forward(x.clone()).reshape([b, t, h, 2 * hd]);
        let q = qg.clone().slice([0..b, 0..t, 0..h, 0..hd]);
        let gate = qg.slice([0..b, 0..t, 0..h, hd..2 * hd]).reshape([b, t, h * hd]);
        let q = self.q_norm.forward(q).swap_dims(1, 2); // [B, H, T, hd]
        let k = self.k_norm.forward(self.k_proj.forward(x.clone()).reshape([b, t, kvh, hd])).swap_dims(1, 2);
        let v = self.v_proj.forward(x).reshape([b, t, kvh, hd]).swap_dims(1, 2);

        let (cos, sin) = self.rope_tables(pos0, t, &device);
        let q = self.apply_rope(q, &cos, &sin);
        let k = self.apply_rope(k, &cos, &sin);

        let k = match cache.k.take() {
            Some(prev) => Tensor::cat(vec![prev, k], 2),
            None => k,
        };
        let v = match cache.v.take() {
            Some(prev) => Tensor::cat(vec![prev, v], 2),
            None => v,
        };
        cache.k = Some(k.clone());
        cache.v = Some(v.clone());
        let l = k.dims()[2];

        let scale = 1.0 / (hd as f64).sqrt();
        let scores = q.matmul(self.repeat_kv(k).swap_dims(2, 3)).mul_scalar(scale); // [B, H, T, L]
        let scores = if t > 1 {
            // Query i (absolute position l - t + i) sees keys 0 ..= l - t + i.
            let past = l - t;
            let masked: Vec<bool> = (0..t).flat_map(|i| (0..l).map(move |j| j > past + i)).collect();
            let mask = Tensor::<4, Bool>::from_data(TensorData::new(masked, [1, 1, t, l]), &device).expand([b, h, t, l]);
            scores.mask_fill(mask, -1.0e30)
        } else {
            scores
        };
        let probs = activation::softmax(scores, 3);
        let o = probs.matmul(self.repeat_kv(v)).swap_dims(1, 2).reshape([b, t, h * hd]); // [B, T, H*hd]
        let o = o * activation::sigmoid(gate);
        self.o_proj.forward(o)
    }
}
