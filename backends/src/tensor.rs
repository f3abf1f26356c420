//! [`HostTensor`]: a dense f32 tensor in host memory, the currency between checkpoints, the weaver and the
//! executors, and [`WeightMap`], a whole model's named tensors.

use std::collections::BTreeMap;

/// A dense row-major f32 tensor. Linear weights are `[out_features, in_features]` as PyTorch stores them.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

impl HostTensor {
    /// A tensor of the given shape; panics if `data.len()` is not the product of `shape` (a programming
    /// error, never user input: loaders check shapes and return errors first).
    pub fn new(shape: Vec<usize>, data: Vec<f32>) -> Self {
        assert_eq!(shape.iter().product::<usize>(), data.len(), "HostTensor shape {shape:?} vs {} values", data.len());
        Self { shape, data }
    }
    /// All zeros.
    pub fn zeros(shape: Vec<usize>) -> Self {
        let n = shape.iter().product();
        Self { shape, data: vec![0.0; n] }
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.data.len()
    }
    /// Element of a 2-D tensor at `[r, c]`.
    pub fn at2(&self, r: usize, c: usize) -> f32 {
        self.data[r * self.shape[1] + c]
    }
    /// Mutable element of a 2-D tensor at `[r, c]`.
    pub fn at2_mut(&mut self, r: usize, c: usize) -> &mut f32 {
        let cols = self.shape[1];
        &mut self.data[r * cols + c]
    }
    /// Count of elements that are not exactly zero.
    pub fn nonzeros(&self) -> usize {
        self.data.iter().filter(|v| **v != 0.0).count()
    }
}

/// A model's tensors by their `Qwen3_5ForCausalLM` names (`model.layers.0.mlp.up_proj.weight`, ...).
pub type WeightMap = BTreeMap<String, HostTensor>;
