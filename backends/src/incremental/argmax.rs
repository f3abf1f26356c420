//! The greedy token, kept: [`ArgmaxBlocks`] (a vector's first maximum kept per block from its changes) and
//! [`SplitHead`] (the lm_head as sign-product groups plus plain rows).

use super::factored::{FactoredHead, FactoredState};
use super::projection::{ProjState, Projection};

/// The lm_head as sign-product groups plus the plain rows as an incremental projection.
pub(super) struct SplitHead {
    pub(super) groups: FactoredHead,
    pub(super) plain: Projection,
}

/// Per sequence: the groups' kept maxima, the plain rows' logits and their first maximum.
#[derive(Clone)]
pub(super) struct SplitHeadState {
    pub(super) groups: FactoredState,
    pub(super) plain: ProjState,
    pub(super) plain_argmax: ArgmaxBlocks,
    /// The last token ran the full lm_head instead ([`IncrementalModel::step`]): recompute everything.
    pub(super) stale: bool,
}

/// Logits per block of the incremental argmax.
pub(super) const ARGMAX_BLOCK: usize = 64;

/// The first maximum of `v[lo..hi]` ignoring NaN (`(NaN, lo)` if all are NaN).
pub(super) fn block_max(v: &[f32], lo: usize, hi: usize) -> (f32, u32) {
    let mut best = (f32::NAN, lo as u32);
    for (i, x) in v[lo..hi].iter().enumerate() {
        if *x > best.0 || (best.0.is_nan() && !x.is_nan()) {
            best = (*x, (lo + i) as u32);
        }
    }
    best
}

/// The first maximum of a vector kept per block of [`ARGMAX_BLOCK`] entries, updated from the entries that
/// changed: [`crate::cpu::argmax`]'s answer (`torch.argmax`'s: the first maximum, index 0 when the first
/// entry is NaN, NaN skipped otherwise) at the cost of the changes, not of the vector.
#[derive(Clone, Debug, Default)]
pub(super) struct ArgmaxBlocks {
    /// Per block: its first maximum `(value, index)`, NaN skipped (`(NaN, first index)`: all NaN).
    pub(super) blocks: Vec<(f32, u32)>,
    /// Scratch: per block, whether it must be scanned again.
    pub(super) rescan: Vec<u8>,
}

impl ArgmaxBlocks {
    /// Forget the blocks: the next update scans the whole vector.
    pub(super) fn reset(&mut self) {
        self.blocks.clear();
    }

    /// The argmax of `v`, where only the entries `changed` differ from the `v` of the previous update.
    pub(super) fn update(&mut self, v: &[f32], changed: &[u32]) -> u32 {
        if self.blocks.is_empty() {
            self.blocks = (0..v.len()).step_by(ARGMAX_BLOCK).map(|lo| block_max(v, lo, (lo + ARGMAX_BLOCK).min(v.len()))).collect();
        } else {
            // A changed entry that beats its block's first maximum becomes it; one that was the maximum and
            // fell, or any NaN, has the block scanned again.
            self.rescan.resize(self.blocks.len(), 0);
            self.rescan.fill(0);
            for &i in changed {
                let (i, b) = (i as usize, i as usize / ARGMAX_BLOCK);
                if self.rescan[b] != 0 {
                    continue;
                }
                let (bv, bi) = self.blocks[b];
                let x = v[i];
                if x.is_nan() || bv.is_nan() || (i == bi as usize && x < bv) {
                    self.rescan[b] = 1;
                } else if x > bv || (x == bv && i <= bi as usize) {
                    self.blocks[b] = (x, i as u32);
                }
            }
            for (b, again) in self.rescan.iter().enumerate() {
                if *again != 0 {
                    let lo = b * ARGMAX_BLOCK;
                    self.blocks[b] = block_max(v, lo, (lo + ARGMAX_BLOCK).min(v.len()));
                }
            }
        }
        if v[0].is_nan() {
            return 0; // argmax keeps index 0: nothing compares greater than NaN
        }
        let mut best = self.blocks[0];
        for b in &self.blocks[1..] {
            if b.0 > best.0 || (best.0.is_nan() && !b.0.is_nan()) {
                best = *b;
            }
        }
        best.1
    }
}

#[cfg(test)]
mod tests {
    use super::*;


    #[test]
    fn kept_argmax_equals_the_full_argmax() {
        let mut below = crate::incremental::tracked::testing::below(0x9e37_79b9_7f4a_7c15);
        let n = 3 * ARGMAX_BLOCK + 5;
        let mut v: Vec<f32> = (0..n).map(|_| (below(5) as f32) - 2.0).collect();
        let mut a = ArgmaxBlocks::default();
        let mut checked = 0;
        for t in 0..4000 {
            let mut changed = Vec::new();
            for _ in 0..below(12) {
                let i = below(n as u64) as usize;
                if changed.contains(&(i as u32)) {
                    continue;
                }
                let x = match below(40) {
                    0 => f32::NAN,
                    1 => 9.0,
                    _ => (below(5) as f32) - 2.0,
                };
                if x.to_bits() != v[i].to_bits() {
                    v[i] = x;
                    changed.push(i as u32);
                }
            }
            if t % 997 == 0 {
                a.reset();
            }
            assert_eq!(a.update(&v, &changed), crate::cpu::argmax(&v), "update {t}: {v:?}");
            checked += 1;
        }
        assert_eq!(checked, 4000);
    }
}
