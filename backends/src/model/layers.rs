//! Building blocks shared by the mixers: linear layers, the two RMSNorms and the SwiGLU MLP.
//!
//! Source of truth: transformers `models/qwen3_5/modeling_qwen3_5.py` (`Qwen3_5RMSNorm`,
//! `Qwen3_5RMSNormGated`, `Qwen3_5MLP`). Everything is computed in f32.

use super::ModelError;
use crate::checkpoint::TensorSource;
use crate::names::LayerTensor;
use burn::tensor::{activation, Device, Tensor, TensorData};

/// Upload a host buffer as a tensor of shape `shape`.
pub(crate) fn upload<const D: usize>(data: Vec<f32>, shape: [usize; D], device: &Device) -> Tensor<D> {
    Tensor::<D>::from_data(TensorData::new(data, shape), device)
}

/// A bias-free linear layer. The weight is kept transposed, `[in, out]`, so `y = x @ w` needs no per-call
/// transpose (PyTorch stores `[out, in]`; the checkpoint reader transposes while converting).
pub(crate) struct Linear {
    /// `[in, out]`
    pub w: Tensor<2>,
    pub out: usize,
}

impl Linear {
    pub fn load(ck: &dyn TensorSource, name: &str, device: &Device) -> Result<Self, ModelError> {
        let t = ck.tensor_transposed(name)?;
        let (i, o) = (t.shape[0], t.shape[1]);
        Ok(Self { w: upload(t.data, [i, o], device), out: o })
    }

    /// `x: [B, T, in] -> [B, T, out]`.
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let [b, t, i] = x.dims();
        x.reshape([b * t, i]).matmul(self.w.clone()).reshape([b, t, self.out])
    }
}

/// Load a 1-D tensor `[n]` as `[1, n]` (a broadcastable row), applying `f` to each value on the host.
pub(crate) fn load_row(ck: &dyn TensorSource, name: &str, device: &Device, f: impl Fn(f32) -> f32) -> Result<Tensor<2>, ModelError> {
    let t = ck.tensor(name)?;
    let n = t.numel();
    Ok(upload(t.data.into_iter().map(f).collect(), [1, n], device))
}

/// `x * rsqrt(mean(x^2, last) + eps)` over the last dim of a `[rows, n]` tensor.
pub(crate) fn rms_normalize(x: Tensor<2>, eps: f64) -> Tensor<2> {
    let var = x.clone().square().mean_dim(1);
    x * var.add_scalar(eps).sqrt().recip()
}

/// Zero-centred RMSNorm `Qwen3_5RMSNorm`: `y = x * rsqrt(mean(x^2) + eps) * (1 + w)` over the last dim.
pub(crate) struct RmsNorm {
    /// `1 + w`, `[1, n]` (computed once in f32, as transformers computes `1.0 + weight.float()`).
    scale: Tensor<2>,
    eps: f64,
}

impl RmsNorm {
    pub fn load(ck: &dyn TensorSource, name: &str, eps: f64, device: &Device) -> Result<Self, ModelError> {
        Ok(Self { scale: load_row(ck, name, device, |w| 1.0 + w)?, eps })
    }

    /// Normalise the last dim of `x: [.., n]` (any rank `D`).
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        let dims = x.dims();
        let n = dims[D - 1];
        let rows = x.shape().num_elements() / n;
        (rms_normalize(x.reshape([rows, n]), self.eps) * self.scale.clone()).reshape(dims)
    }
}

/// Gated RMSNorm of the DeltaNet output (`Qwen3_5RMSNormGated`): `w * (x * rsqrt(mean(x^2) + eps)) * silu(z)`.
/// The weight is NOT zero-centred.
pub(crate) struct GatedRmsNorm {
    /// `[1, head_v_dim]`
    w: Tensor<2>,
    eps: f64,
}

impl GatedRmsNorm {
    pub fn load(ck: &dyn TensorSource, name: &str, eps: f64, device: &Device) -> Result<Self, ModelError> {
        Ok(Self { w: load_row(ck, name, device, |w| w)?, eps })
    }

    /// `x, z: [rows, head_v_dim] -> [rows, head_v_dim]`.
    pub fn forward(&self, x: Tensor<2>, z: Tensor<2>) -> Tensor<2> {
        rms_normalize(x, self.eps) * self.w.clone() * activation::silu(z)
    }
}

/// SwiGLU MLP `Qwen3_5MLP`: `down(silu(gate(x)) * up(x))`.
pub(crate) struct Mlp {
    gate: Linear,
    up: Linear,
    down: Linear,
}

impl Mlp {
    pub fn load(ck: &dyn TensorSource, layer: usize, device: &Device) -> Result<Self, ModelError> {
        Ok(Self {
            gate: Linear::load(ck, &LayerTensor::GateProj.name(layer), device)?,
            up: Linear::load(ck, &LayerTensor::UpProj.name(layer), device)?,
            down: Linear::load(ck, &LayerTensor::DownProj.name(layer), device)?,
        })
    }

    /// `x: [B, T, hidden] -> [B, T, hidden]`.
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let h = activation::silu(self.gate.forward(x.clone())) * self.up.forward(x);
        self.down.forward(h)
    }
}
