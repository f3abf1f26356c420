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
        self.data.chunks(ZERO_BLOCK).filter(|b| !all_zero(b)).map(|b| b.iter().filter(|v| **v != 0.0).count()).sum()
    }
}

/// Values per block of [`all_zero`] tests when scanning mostly-zero tensors.
pub const ZERO_BLOCK: usize = 64;

/// Whether every value of `block` is zero (`0.0` or `-0.0`, as `v == 0.0` says): one OR over the bits without
/// the sign, which the compiler vectorizes (a NaN or any other value leaves a bit set).
#[inline]
pub fn all_zero(block: &[f32]) -> bool {
    block.iter().fold(0u32, |a, v| a | (v.to_bits() & 0x7fff_ffff)) == 0
}

/// A model's tensors by their `Qwen3_5ForCausalLM` names (`model.layers.0.mlp.up_proj.weight`, ...).
pub type WeightMap = BTreeMap<String, HostTensor>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_blocks_and_nonzero_counts() {
        assert!(all_zero(&[0.0, -0.0, 0.0]));
        assert!(!all_zero(&[0.0, 1e-45]));
        assert!(!all_zero(&[f32::NAN]));
        assert!(!all_zero(&[-1.0]));
        // Nonzeros scattered over blocks, at block edges, and -0.0 (which counts as zero, as `v != 0.0` says).
        let mut t = HostTensor::zeros(vec![3, 100]);
        for (i, v) in [(0usize, 1.0f32), (63, -2.0), (64, 3.0), (199, 0.5), (200, -0.0), (299, 7.0)] {
            t.data[i] = v;
        }
        assert_eq!(t.nonzeros(), 5);
        assert_eq!(t.nonzeros(), t.data.iter().filter(|v| **v != 0.0).count());
        let m = crate::sparse::matrix::SparseMatrix::from_dense(&t);
        assert_eq!(m.nnz(), 5);
    }
}
