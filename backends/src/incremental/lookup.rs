//! [`LookupRows`]: the rows of a `gate_proj` that all read one small set of columns, updated by looking up
//! which of them `silu` lets through instead of adding every changed input to every row.
//!
//! A woven table lookup (the 2A03's opcode decode, a register's cases) is a block of SwiGLU units that read
//! the same few input bits: one equality per table entry, each `silu(A·(Σ ±bit - (m - 1)))`, so for any input
//! at most the matching entry's rows are above `silu`'s exact zeros (`silu_quiet`); the others sit at `0` or
//! far below. Updating them incrementally adds each changed bit to all of them: layer 4 of the NES map spends
//! 512 rows times the changed opcode bits at every instruction.
//!
//! Here each such block is computed as the full product computes it, row by row (a row's sum is the full
//! product's: the same products added in the same, increasing column, order, from `+0`, skipping zero
//! inputs), but only for the rows that matter: the *live* rows (not `silu_quiet`) of the old input and
//! those of the new. Which rows are live is a function of the block's inputs alone, kept per distinct input
//! (the *key*: the inputs' bit patterns) once all rows were computed for it. A row that was quiet and stays
//! quiet keeps the (quiet) value it had: its `silu` is an exact zero either way, and the SwiGLU product and
//! `down_proj` see no difference between exact zeros (`model::swiglu`).

use std::collections::HashMap;

use super::projection::silu_quiet;
use super::tracked::Tracked;
use crate::cpu::SparseMatrix;

/// A block needs at least this many rows sharing one column set to be looked up (fewer are cheap anyway).
pub const MIN_ROWS: usize = 32;
/// ... and at most this many columns (its key; more distinct inputs, more kept entries).
pub const MAX_COLS: usize = 12;
/// Kept keys per block before the table is emptied and filled again (a block whose inputs take many values).
pub const MAX_KEYS: usize = 4096;

/// One block: rows `rows` `[n]` (ascending) reading only columns `cols` `[k]` (ascending), weights row-major
/// `[n, k]`.
#[derive(Clone, Debug)]
pub struct LookupRows {
    pub rows: Vec<u32>,
    pub cols: Vec<u32>,
    w: Vec<f32>,
}

/// Per sequence, per block: the key of the inputs the rows were last brought to, its live rows (indices into
/// `rows`), and the live rows of every key met so far.
#[derive(Clone, Debug, Default)]
pub struct LookupState {
    key: Vec<u32>,
    live: Vec<u32>,
    seen: HashMap<Vec<u32>, Vec<u32>>,
    scratch: Vec<u32>,
    old: Vec<u32>,
}

impl LookupRows {
    /// The blocks of `m` (CSC `[rows, cols]`): every set of at least [`MIN_ROWS`] rows whose nonzeros lie in
    /// the same at most [`MAX_COLS`] columns. `None` for a row-major matrix.
    pub fn find(m: &SparseMatrix) -> Option<Vec<LookupRows>> {
        let (ptr, cols, vals) = m.row_lists()?;
        let mut by_cols: HashMap<&[u32], Vec<u32>> = HashMap::new();
        for r in 0..m.shape().0 {
            let c = &cols[ptr[r] as usize..ptr[r + 1] as usize];
            if !c.is_empty() && c.len() <= MAX_COLS {
                by_cols.entry(c).or_default().push(r as u32);
            }
        }
        let mut blocks: Vec<LookupRows> = by_cols
            .into_iter()
            .filter(|(_, rows)| rows.len() >= MIN_ROWS)
            .map(|(c, rows)| {
                let w = rows.iter().flat_map(|&r| vals[ptr[r as usize] as usize..ptr[r as usize + 1] as usize].iter().copied()).collect();
                LookupRows { rows, cols: c.to_vec(), w }
            })
            .collect();
        blocks.sort_by_key(|b| b.rows[0]);
        Some(blocks)
    }

    /// Nonzero weights of the block.
    pub fn nnz(&self) -> usize {
        self.w.len()
    }

    /// Row `i`'s value for input `x`, as the CSC full product sums it.
    #[inline]
    fn row(&self, i: usize, x: &[f32]) -> f32 {
        let k = self.cols.len();
        let mut y = 0f32;
        for (c, w) in self.cols.iter().zip(&self.w[i * k..(i + 1) * k]) {
            let xc = x[*c as usize];
            if xc != 0.0 {
                y += w * xc;
            }
        }
        y
    }

    fn key_of(&self, x: &[f32], key: &mut Vec<u32>) {
        key.clear();
        key.extend(self.cols.iter().map(|&c| x[c as usize].to_bits()));
    }

    /// Every row in full into `y` (a full product's output, `[rows of the projection]`); returns the weights
    /// multiplied.
    pub fn fill(&self, st: &mut LookupState, x: &[f32], y: &mut [f32]) -> u64 {
        let mut key = std::mem::take(&mut st.key);
        self.key_of(x, &mut key);
        st.live.clear();
        for (i, &r) in self.rows.iter().enumerate() {
            let v = self.row(i, x);
            y[r as usize] = v;
            if !silu_quiet(v) {
                st.live.push(i as u32);
            }
        }
        if st.seen.len() >= MAX_KEYS {
            st.seen.clear();
        }
        st.seen.insert(key.clone(), st.live.clone());
        st.key = key;
        self.w.len() as u64
    }

    /// Bring the block's rows of `y` to input `x` after a token that changed `changed` (`x`'s changed
    /// entries): the old and the new live rows are computed; every other row was and stays quiet. Returns
    /// the weights multiplied.
    pub fn update(&self, st: &mut LookupState, x: &[f32], changed: &[u32], in_block: &[bool], y: &mut Tracked) -> u64 {
        if !changed.iter().any(|&c| in_block[c as usize]) {
            return 0;
        }
        let mut key = std::mem::take(&mut st.scratch);
        self.key_of(x, &mut key);
        if key == st.key {
            st.scratch = key;
            return 0;
        }
        let mut read = 0;
        let k = self.cols.len() as u64;
        // The old live rows first (each to its new value), then the new ones.
        std::mem::swap(&mut st.old, &mut st.live);
        for &i in &st.old {
            y.set_final(self.rows[i as usize] as usize, self.row(i as usize, x));
        }
        read += k * st.old.len() as u64;
        st.live.clear();
        match st.seen.get(&key) {
            Some(l) => st.live.extend_from_slice(l),
            None => {
                st.live.extend((0..self.rows.len()).filter(|&i| !silu_quiet(self.row(i, x))).map(|i| i as u32));
                read += self.w.len() as u64;
                if st.seen.len() >= MAX_KEYS {
                    st.seen.clear();
                }
                st.seen.insert(key.clone(), st.live.clone());
            }
        }
        for &i in &st.live {
            if st.old.binary_search(&i).is_err() {
                y.set_final(self.rows[i as usize] as usize, self.row(i as usize, x));
                read += k;
            }
        }
        st.scratch = std::mem::replace(&mut st.key, key);
        read
    }
}
