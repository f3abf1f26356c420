//! [`HostTensor`]: a dense f32 tensor in host memory, the currency between checkpoints, the weaver and the
//! executors, and [`WeightMap`], a whole model's named tensors.

use std::collections::BTreeMap;
use std::sync::Arc;

/// A dense row-major f32 tensor. Linear weights are `[out_features, in_features]` as PyTorch stores them.
///
/// A mostly-zero tensor may carry a *block index*: the blocks of [`ZERO_BLOCK`] values (flat, from index 0)
/// that hold a nonzero, ascending; every other block is all zeros. [`Self::nonzeros`] and
/// [`crate::cpu::SparseMatrix::from_dense`] then visit only those blocks, so a 42 GB woven tensor of zero
/// pages is never read. The index is made by [`Self::index_blocks`] (one scan) or given by a loader that
/// knows where the nonzeros are ([`Self::with_blocks`]); [`Self::at2_mut`] drops it, and code that writes
/// `data` directly must call [`Self::drop_index`].
#[derive(Clone, Debug)]
pub struct HostTensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
    blocks: Option<Arc<Vec<u64>>>,
}

impl PartialEq for HostTensor {
    /// Equal shapes and values (the block index is not compared).
    fn eq(&self, other: &Self) -> bool {
        self.shape == other.shape && self.data == other.data
    }
}

/// A tensor is indexed only when at most this fraction of its blocks hold a nonzero.
const INDEX_MAX_FRACTION: f64 = 0.25;

impl HostTensor {
    /// A tensor of the given shape; panics if `data.len()` is not the product of `shape` (a programming
    /// error, never user input: loaders check shapes and return errors first).
    pub fn new(shape: Vec<usize>, data: Vec<f32>) -> Self {
        assert_eq!(shape.iter().product::<usize>(), data.len(), "HostTensor shape {shape:?} vs {} values", data.len());
        Self { shape, data, blocks: None }
    }
    /// All zeros.
    pub fn zeros(shape: Vec<usize>) -> Self {
        let n = shape.iter().product();
        Self { shape, data: vec![0.0; n], blocks: None }
    }
    /// Record which blocks hold a value other than `+0` (one scan; `-0` counts, so that a copy made from the
    /// indexed blocks keeps every bit), when at most a quarter of them do.
    pub fn index_blocks(&mut self) {
        let blocks: Vec<u64> = self.data.chunks(ZERO_BLOCK).enumerate().filter(|(_, b)| b.iter().fold(0u32, |a, v| a | v.to_bits()) != 0).map(|(i, _)| i as u64).collect();
        let total = self.data.len().div_ceil(ZERO_BLOCK).max(1);
        self.blocks = (blocks.len() as f64 <= INDEX_MAX_FRACTION * total as f64).then(|| Arc::new(blocks));
    }
    /// This tensor with a block index known by its maker: `blocks` ascending, every block holding a value
    /// other than `+0` among them (a superset is allowed). Panics on a block beyond the data (a programming error).
    pub fn with_blocks(mut self, blocks: Vec<u64>) -> Self {
        assert!(blocks.windows(2).all(|w| w[0] < w[1]), "block index not ascending");
        assert!(blocks.last().is_none_or(|b| (*b as usize) < self.data.len().div_ceil(ZERO_BLOCK)), "block beyond the data");
        self.blocks = Some(Arc::new(blocks));
        self
    }
    /// A tensor whose maker knows its nonzero blocks (`blocks` ascending, as for [`Self::with_blocks`]),
    /// indexed by the rule of [`Self::index_blocks`]: only when at most a quarter of its blocks hold a nonzero.
    pub fn with_known_blocks(shape: Vec<usize>, data: Vec<f32>, blocks: Vec<u64>) -> Self {
        let t = Self::new(shape, data);
        let total = t.data.len().div_ceil(ZERO_BLOCK).max(1);
        if blocks.len() as f64 <= INDEX_MAX_FRACTION * total as f64 {
            t.with_blocks(blocks)
        } else {
            t
        }
    }
    /// Forget the block index (after writing `data` directly).
    pub fn drop_index(&mut self) {
        self.blocks = None;
    }
    /// The block index, if any: blocks of [`ZERO_BLOCK`] values that may hold a value other than `+0`,
    /// ascending; every other block is all `+0`.
    pub fn blocks(&self) -> Option<&[u64]> {
        self.blocks.as_deref().map(|b| &b[..])
    }
    /// Calls `f(flat index, value)` for every nonzero, in increasing index order (visiting only indexed
    /// blocks when there is an index, else skipping all-zero blocks).
    pub fn for_each_nonzero(&self, mut f: impl FnMut(usize, f32)) {
        let mut visit = |b: usize| {
            let lo = b * ZERO_BLOCK;
            let block = &self.data[lo..(lo + ZERO_BLOCK).min(self.data.len())];
            if all_zero(block) {
                return;
            }
            for (k, v) in block.iter().enumerate() {
                if *v != 0.0 {
                    f(lo + k, *v);
                }
            }
        };
        match &self.blocks {
            Some(bs) => bs.iter().for_each(|b| visit(*b as usize)),
            None => (0..self.data.len().div_ceil(ZERO_BLOCK)).for_each(visit),
        }
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.data.len()
    }
    /// Element of a 2-D tensor at `[r, c]`.
    pub fn at2(&self, r: usize, c: usize) -> f32 {
        self.data[r * self.shape[1] + c]
    }
    /// Mutable element of a 2-D tensor at `[r, c]` (drops the block index).
    pub fn at2_mut(&mut self, r: usize, c: usize) -> &mut f32 {
        self.blocks = None;
        let cols = self.shape[1];
        &mut self.data[r * cols + c]
    }
    /// Count of elements that are not exactly zero.
    pub fn nonzeros(&self) -> usize {
        match &self.blocks {
            Some(bs) => bs.iter().map(|b| self.data[*b as usize * ZERO_BLOCK..((*b as usize + 1) * ZERO_BLOCK).min(self.data.len())].iter().filter(|v| **v != 0.0).count()).sum(),
            None => self.data.chunks(ZERO_BLOCK).filter(|b| !all_zero(b)).map(|b| b.iter().filter(|v| **v != 0.0).count()).sum(),
        }
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
        let mut t = HostTensor::zeros(vec![3, 1000]);
        for (i, v) in [(0usize, 1.0f32), (63, -2.0), (64, 3.0), (199, 0.5), (200, -0.0), (299, 7.0)] {
            t.data[i] = v;
        }
        assert_eq!(t.nonzeros(), 5);
        assert_eq!(t.nonzeros(), t.data.iter().filter(|v| **v != 0.0).count());
        let m = crate::cpu::SparseMatrix::from_dense(&t);
        assert_eq!(m.nnz(), 5);
        // With a block index: the same counts and the same matrix, bit for bit.
        let mut u = t.clone();
        u.index_blocks();
        assert_eq!(u.blocks(), Some(&[0u64, 1, 3, 4][..]));
        assert_eq!(u.nonzeros(), 5);
        let mu = crate::cpu::SparseMatrix::from_dense(&u);
        assert_eq!(format!("{:?}", mu.csc()), format!("{:?}", m.csc()));
        let mut seen = Vec::new();
        u.for_each_nonzero(|i, v| seen.push((i, v)));
        assert_eq!(seen, vec![(0, 1.0), (63, -2.0), (64, 3.0), (199, 0.5), (299, 7.0)]);
        // An index given by a loader, a superset of the nonzero blocks.
        let w = HostTensor::new(t.shape.clone(), t.data.clone()).with_blocks(vec![0, 1, 2, 3, 4]);
        assert_eq!(w.nonzeros(), 5);
        assert_eq!(format!("{:?}", crate::cpu::SparseMatrix::from_dense(&w).csc()), format!("{:?}", m.csc()));
        // A write through at2_mut drops the index, so the new entry is seen.
        let mut x = u.clone();
        *x.at2_mut(1, 30) = 9.0;
        assert!(x.blocks().is_none());
        assert_eq!(x.nonzeros(), 6);
        // A dense tensor is not indexed.
        let mut d = HostTensor::new(vec![2, 64], vec![1.0; 128]);
        d.index_blocks();
        assert!(d.blocks().is_none());
    }
}
