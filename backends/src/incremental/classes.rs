//! [`RowClasses`]: the rows of a projection that are equal outside a few *shared* columns, so that an
//! incremental update multiplies each distinct row once.
//!
//! Woven weights repeat rows: the two halves of an exact SwiGLU threshold unit, and the thresholds of one
//! linear form, differ only in their weight on the constant (bias) slot; the output gate `z` of a block of
//! DeltaNet RAM heads has one identical row per value dimension. A projection `W` `[rows, cols]` is split
//! along a set `C` of columns into
//!
//! - the *class* rows: one per distinct row of `W` outside `C` (row `r` belongs to class `class_of[r]`), and
//! - the *rest* rows: row `r`'s weights in the columns of `C`,
//!
//! held together as one extended matrix `E` `[classes + rows, cols]` (class `c` is row `c`, rest `r` is row
//! `classes + r`), so that `(W x)[r] = (E x)[class_of[r]] + (E x)[classes + r]`. The incremental executor
//! updates `E x` for the inputs that changed and adds the two parts of each row that a change reached; it
//! does this only where both parts and their sum are exact (see `model`), so the result is the full
//! product's bit for bit. `C` is chosen from the matrix alone (no circuit or machine description): the
//! candidate that leaves the fewest weights to multiply among no columns, the most used column, and every
//! column used by more than half of the nonempty rows.

use std::collections::HashMap;

use crate::cpu::SparseMatrix;

/// A projection's rows grouped into classes equal outside the shared columns (see the module docs).
#[derive(Clone, Debug)]
pub struct RowClasses {
    /// The extended matrix `[classes + rows, cols]`, CSC.
    pub ext: SparseMatrix,
    /// Number of classes.
    pub classes: usize,
    /// Per row of the projection: its class.
    pub class_of: Vec<u32>,
    /// The rows of class `c` are `members[first[c]..first[c + 1]]`, ascending.
    pub first: Vec<u32>,
    pub members: Vec<u32>,
}

/// Classes are used only when the extended matrix holds at most this fraction of the projection's nonzeros.
const WORTH: f64 = 0.5;

impl RowClasses {
    /// The classes of `m` (CSC), or `None` when grouping would not at least halve the weights an update
    /// multiplies (or `m` is row-major).
    pub fn find(m: &SparseMatrix) -> Option<Self> {
        let (ptr, idx, vals) = m.csc()?;
        let (rows, cols) = m.shape();
        if m.nnz() == 0 {
            return None;
        }
        // Rows as (column, weight bits) lists, columns ascending.
        let (row_ptr, row_cols, row_vals) = m.row_lists()?;
        let entries: Vec<(u32, u32)> = row_cols.iter().zip(&row_vals).map(|(c, v)| (*c, v.to_bits())).collect();
        let freq: Vec<usize> = ptr.windows(2).map(|w| (w[1] - w[0]) as usize).collect();
        let nonempty = (0..rows).filter(|&r| row_ptr[r + 1] > row_ptr[r]).count();
        let top = (0..cols).max_by_key(|&c| freq[c]).expect("a nonzero column");
        let candidates: [Vec<bool>; 3] = [
            vec![false; cols],
            (0..cols).map(|c| c == top).collect(),
            (0..cols).map(|c| 2 * freq[c] > nonempty).collect(),
        ];
        let row = |r: usize| &entries[row_ptr[r] as usize..row_ptr[r + 1] as usize];
        let mut best: Option<(usize, Vec<u32>, usize, &Vec<bool>)> = None;
        for shared in &candidates {
            let mut ids: HashMap<Vec<(u32, u32)>, u32> = HashMap::new();
            let mut class_of = Vec::with_capacity(rows);
            let mut cost: usize = (0..cols).filter(|&c| shared[c]).map(|c| freq[c]).sum();
            for r in 0..rows {
                let key: Vec<(u32, u32)> = row(r).iter().filter(|e| !shared[e.0 as usize]).copied().collect();
                let n = ids.len() as u32;
                let id = *ids.entry(key).or_insert_with_key(|k| {
                    cost += k.len();
                    n
                });
                class_of.push(id);
            }
            if best.as_ref().is_none_or(|b| cost < b.0) {
                best = Some((cost, class_of, ids.len(), shared));
            }
        }
        let (cost, class_of, classes, shared) = best.expect("three candidates");
        if cost as f64 > WORTH * m.nnz() as f64 {
            return None;
        }
        // Members per class.
        let mut first = vec![0u32; classes + 1];
        for c in &class_of {
            first[*c as usize + 1] += 1;
        }
        for c in 0..classes {
            first[c + 1] += first[c];
        }
        let mut at = first.clone();
        let mut members = vec![0u32; rows];
        let mut rep = vec![u32::MAX; classes];
        for (r, c) in class_of.iter().enumerate() {
            let c = *c as usize;
            members[at[c] as usize] = r as u32;
            at[c] += 1;
            if rep[c] == u32::MAX {
                rep[c] = r as u32;
            }
        }
        // The extended matrix, column by column, rows ascending: classes (by their first row's entries
        // outside `shared`), then the rest rows (entries in `shared`).
        let mut col_lists: Vec<Vec<(u32, f32)>> = vec![Vec::new(); cols];
        for (c, r) in rep.iter().enumerate() {
            for &(j, w) in row(*r as usize) {
                if !shared[j as usize] {
                    col_lists[j as usize].push((c as u32, f32::from_bits(w)));
                }
            }
        }
        for j in (0..cols).filter(|&j| shared[j]) {
            for p in ptr[j] as usize..ptr[j + 1] as usize {
                col_lists[j].push((classes as u32 + idx[p], vals[p]));
            }
        }
        let mut eptr = Vec::with_capacity(cols + 1);
        let (mut eidx, mut evals) = (Vec::with_capacity(cost), Vec::with_capacity(cost));
        eptr.push(0u32);
        for list in &col_lists {
            for (r, w) in list {
                eidx.push(*r);
                evals.push(*w);
            }
            eptr.push(eidx.len() as u32);
        }
        let ext = SparseMatrix::from_csc(classes + rows, cols, eptr, eidx, evals);
        Some(Self { ext, classes, class_of, first, members })
    }

    /// The rows of class `c`.
    pub fn rows_of(&self, c: usize) -> &[u32] {
        &self.members[self.first[c] as usize..self.first[c + 1] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::HostTensor;

    /// Rows equal outside column 0 (a bias) share a class; the extended product gives every row's output.
    #[test]
    fn twin_rows_share_a_class() {
        #[rustfmt::skip]
        let w = vec![
            1.0, 2.0, -1.0, 3.0,
            3.0, 2.0, -1.0, 3.0,
            -2.0, 2.0, -1.0, 3.0,
            1.0, 0.0, 0.0, 4.0,
            5.0, 2.0, -1.0, 3.0,
            0.5, 0.0, 0.0, 4.0,
            7.0, 2.0, -1.0, 3.0,
            -7.0, 2.0, -1.0, 3.0,
            2.0, 0.0, 1.0, 0.0,
        ];
        let m = SparseMatrix::from_dense(&HostTensor::new(vec![9, 4], w.clone()));
        let rc = RowClasses::find(&m).expect("worth grouping");
        assert_eq!(rc.classes, 3);
        assert_eq!(rc.class_of, vec![0, 0, 0, 1, 0, 1, 0, 0, 2]);
        assert_eq!(rc.rows_of(1), &[3, 5]);
        assert_eq!(rc.ext.nnz(), 9 + 3 + 1 + 1, "the bias column's 9 weights and one row per class");
        let x = [1.0f32, -1.0, 1.0, 2.0];
        let e = rc.ext.matvec(&x);
        let full = m.matvec(&x);
        for r in 0..9 {
            assert_eq!(e[rc.class_of[r] as usize] + e[rc.classes + r], full[r], "row {r}");
        }
    }

    /// Identical rows (the `z` gate of RAM heads) group with no shared column; distinct rows do not group.
    #[test]
    fn identical_rows_group_and_distinct_rows_do_not() {
        let z = HostTensor::new(vec![8, 3], [1.0f32, -1.0, 2.0].repeat(4).into_iter().chain([3.0f32, 0.0, 1.0].repeat(4)).collect());
        let rc = RowClasses::find(&SparseMatrix::from_dense(&z)).expect("identical rows");
        assert_eq!((rc.classes, rc.ext.nnz()), (2, 5));
        let distinct = HostTensor::new(vec![3, 3], vec![1.0, 2.0, 0.0, 0.0, 3.0, 4.0, 5.0, 0.0, 6.0]);
        assert!(RowClasses::find(&SparseMatrix::from_dense(&distinct)).is_none());
    }
}
