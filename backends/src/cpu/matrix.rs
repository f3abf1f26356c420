//! [`SparseMatrix`]: a matrix of exact nonzeros in CSC or CSR layout, and its matrix-vector products.

use crate::tensor::HostTensor;

/// A matrix `[rows, cols]` holding only its exact nonzeros, in one of two layouts chosen by what its input
/// looks like:
///
/// - compressed sparse *column* (CSC) for inputs that are mostly exact zeros (MLP activations, DeltaNet
///   outputs): only the columns of nonzero inputs are visited;
/// - compressed sparse *row* (CSR) for dense inputs (the normed residual stream of a woven machine is ±1
///   everywhere): each output is one gathered dot product, and large matrices split their rows between the
///   CPU's threads (rayon).
///
/// The CSC product accumulates each output in increasing column order; the CSR product uses eight partial
/// sums (see [`dot`]). On woven weights both are exact; on trained weights they differ in rounding only.
#[derive(Clone, Debug)]
pub struct SparseMatrix {
    rows: usize,
    cols: usize,
    /// CSC: `cols + 1` offsets into `idx`/`vals`, `idx` = row indices; CSR: `live.len() + 1` offsets (one
    /// run per stored row), `idx` = columns.
    ptr: Vec<u32>,
    idx: Vec<u32>,
    vals: Vec<f32>,
    row_major: bool,
    /// CSR only: ranges of stored rows of about equal nonzero counts, one per parallel task (empty: serial).
    tasks: Vec<(usize, usize)>,
    /// CSR only: the rows that hold a nonzero, ascending (the only ones stored).
    live: Vec<u32>,
    /// CSR only, per stored row: a *delta row* stores only its difference from the previous stored row
    /// (the columns where they differ, new value minus old), and its output is the previous output plus that
    /// difference's dot product. Exact when the sums are exact, as in woven machines (a threshold unit's two
    /// halves differ in one bias weight; the steps of one output bit share their linear form; a sum window's
    /// next bit adds a few columns to the previous bit's form); otherwise it may round differently from a
    /// direct sum.
    delta: Vec<bool>,
    /// Nonzeros of the matrix (delta rows store fewer).
    nnz: usize,
}

/// `Σ vals[p] · x[idx[p]]` with eight independent partial sums (a single running sum is bound by the
/// latency of f32 addition). The order of additions differs from a left-to-right sum; for woven machines
/// every partial sum is an exact f32 integer multiple of a power of two, so the result is the same.
fn dot(idx: &[u32], vals: &[f32], x: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ic, ir) = (idx.chunks_exact(8), idx.len() / 8 * 8);
    for (i8, v8) in ic.zip(vals.chunks_exact(8)) {
        for j in 0..8 {
            acc[j] += v8[j] * x[i8[j] as usize];
        }
    }
    for (i, v) in idx[ir..].iter().zip(&vals[ir..]) {
        acc[0] += v * x[*i as usize];
    }
    ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
}

/// Nonzeros below which a CSR product runs on one thread (a task hand-off costs a few microseconds).
const PARALLEL_NNZ: usize = 65_536;

impl SparseMatrix {
    /// Build from a dense row-major `[rows, cols]` tensor (PyTorch's `[out, in]` for a linear weight), CSC.
    pub fn from_dense(t: &HostTensor) -> Self {
        let (rows, cols) = (t.shape[0], t.data.len() / t.shape[0].max(1));
        let mut ptr = vec![0u32; cols + 1];
        // Woven tensors are mostly zeros: all-zero blocks are skipped (or never visited, with a block index).
        t.for_each_nonzero(|i, _| ptr[i % cols.max(1) + 1] += 1);
        for c in 0..cols {
            ptr[c + 1] += ptr[c];
        }
        let nnz = ptr[cols] as usize;
        let mut fill = ptr.clone();
        let mut idx = vec![0u32; nnz];
        let mut vals = vec![0f32; nnz];
        // In increasing flat order, so rows are ascending within each column.
        t.for_each_nonzero(|i, v| {
            let (r, c) = (i / cols.max(1), i % cols.max(1));
            let p = fill[c] as usize;
            idx[p] = r as u32;
            vals[p] = v;
            fill[c] += 1;
        });
        Self { rows, cols, ptr, idx, vals, row_major: false, tasks: Vec::new(), live: Vec::new(), delta: Vec::new(), nnz }
    }

    /// A CSC matrix `[rows, cols]` from its arrays: `ptr` `[cols + 1]` offsets into `idx` (row indices,
    /// ascending within a column) and `vals` (exact nonzeros).
    pub fn from_csc(rows: usize, cols: usize, ptr: Vec<u32>, idx: Vec<u32>, vals: Vec<f32>) -> Self {
        debug_assert_eq!(ptr.len(), cols + 1);
        debug_assert!(idx.iter().all(|r| (*r as usize) < rows) && idx.len() == vals.len());
        let nnz = vals.len();
        Self { rows, cols, ptr, idx, vals, row_major: false, tasks: Vec::new(), live: Vec::new(), delta: Vec::new(), nnz }
    }

    /// A CSC matrix's rows as lists: `(row_ptr, cols, vals)`, row `r`'s entries at `row_ptr[r]..row_ptr[r + 1]`
    /// (`row_ptr` `[rows + 1]`) in increasing column order. `None` for a row-major matrix.
    pub fn row_lists(&self) -> Option<(Vec<u32>, Vec<u32>, Vec<f32>)> {
        let (ptr, idx, vals) = self.csc()?;
        let mut row_ptr = vec![0u32; self.rows + 1];
        for r in idx {
            row_ptr[*r as usize + 1] += 1;
        }
        for r in 0..self.rows {
            row_ptr[r + 1] += row_ptr[r];
        }
        let mut fill = row_ptr.clone();
        let (mut cols, mut vs) = (vec![0u32; idx.len()], vec![0f32; idx.len()]);
        for c in 0..self.cols {
            for p in ptr[c] as usize..ptr[c + 1] as usize {
                let f = &mut fill[idx[p] as usize];
                cols[*f as usize] = c as u32;
                vs[*f as usize] = vals[p];
                *f += 1;
            }
        }
        Some((row_ptr, cols, vs))
    }

    /// The same CSC matrix (same shape) with the rows where `drop[r]` emptied. `None` for a row-major matrix.
    pub fn without_rows(&self, drop: &[bool]) -> Option<Self> {
        let (ptr, idx, vals) = self.csc()?;
        let (mut p, mut i, mut v) = (vec![0u32], Vec::new(), Vec::new());
        for c in 0..self.cols {
            for k in ptr[c] as usize..ptr[c + 1] as usize {
                if !drop[idx[k] as usize] {
                    i.push(idx[k]);
                    v.push(vals[k]);
                }
            }
            p.push(i.len() as u32);
        }
        Some(Self::from_csc(self.rows, self.cols, p, i, v))
    }

    /// The same matrix in the row-major (CSR) layout, for dense inputs. Only rows holding a nonzero are
    /// stored and visited.
    pub fn into_row_major(self) -> Self {
        if self.row_major {
            return self;
        }
        let live = self.nonempty_rows();
        let mut slot = vec![u32::MAX; self.rows];
        for (i, r) in live.iter().enumerate() {
            slot[*r as usize] = i as u32;
        }
        let mut ptr = vec![0u32; live.len() + 1];
        for r in &self.idx {
            ptr[slot[*r as usize] as usize + 1] += 1;
        }
        for i in 0..live.len() {
            ptr[i + 1] += ptr[i];
        }
        let mut fill = ptr.clone();
        let mut idx = vec![0u32; self.vals.len()];
        let mut vals = vec![0f32; self.vals.len()];
        for c in 0..self.cols {
            for p in self.ptr[c] as usize..self.ptr[c + 1] as usize {
                let i = slot[self.idx[p] as usize] as usize;
                let q = fill[i] as usize;
                idx[q] = c as u32;
                vals[q] = self.vals[p];
                fill[i] += 1;
            }
        }
        let nnz = vals.len();
        // Delta rows: a row whose difference from the stored row before it has at most half its own
        // nonzeros (absent counts as 0), every difference exactly representable, is stored as that
        // difference. Chains are allowed: the previous output is computed first either way.
        let mut delta = vec![false; live.len()];
        let (mut nptr, mut nidx, mut nvals) = (vec![0u32; live.len() + 1], Vec::with_capacity(nnz), Vec::with_capacity(nnz));
        let mut diff: Vec<(u32, f32)> = Vec::new();
        for i in 0..live.len() {
            let (b0, b1) = (ptr[i] as usize, ptr[i + 1] as usize);
            let mut use_delta = false;
            if i > 0 {
                let a0 = ptr[i - 1] as usize;
                let a1 = b0;
                diff.clear();
                let (mut p, mut q, mut ok) = (a0, b0, true);
                let limit = (b1 - b0) / 2;
                while ok && (p < a1 || q < b1) {
                    let (cp, cq) = (if p < a1 { idx[p] } else { u32::MAX }, if q < b1 { idx[q] } else { u32::MAX });
                    let (col, vp, vq) = match cp.cmp(&cq) {
                        std::cmp::Ordering::Equal => {
                            p += 1;
                            q += 1;
                            (cp, vals[p - 1], vals[q - 1])
                        }
                        std::cmp::Ordering::Less => {
                            p += 1;
                            (cp, vals[p - 1], 0.0)
                        }
                        std::cmp::Ordering::Greater => {
                            q += 1;
                            (cq, 0.0, vals[q - 1])
                        }
                    };
                    if vp != vq {
                        let d = vq - vp;
                        ok = vp + d == vq && diff.len() < limit;
                        diff.push((col, d));
                    }
                }
                use_delta = ok;
            }
            if use_delta {
                delta[i] = true;
                for (c, d) in &diff {
                    nidx.push(*c);
                    nvals.push(*d);
                }
            } else {
                nidx.extend_from_slice(&idx[b0..b1]);
                nvals.extend_from_slice(&vals[b0..b1]);
            }
            nptr[i + 1] = nidx.len() as u32;
        }
        let (ptr, idx, vals) = (nptr, nidx, nvals);
        let stored = vals.len();
        let mut tasks = Vec::new();
        let threads = rayon::current_num_threads().max(1);
        if stored >= PARALLEL_NNZ && threads > 1 {
            let per = stored.div_ceil(threads * 4);
            let mut a = 0;
            while a < live.len() {
                let mut b = a + 1;
                while b < live.len() && (delta[b] || ((ptr[b] - ptr[a]) as usize) < per) {
                    b += 1;
                }
                tasks.push((a, b));
                a = b;
            }
        }
        Self { rows: self.rows, cols: self.cols, ptr, idx, vals, row_major: true, tasks, live, delta, nnz }
    }

    /// Indices of the rows that hold at least one nonzero, ascending: the outputs that can be nonzero.
    pub fn nonempty_rows(&self) -> Vec<u32> {
        if self.row_major {
            return self.live.clone();
        }
        let mut seen = vec![false; self.rows];
        for r in &self.idx {
            seen[*r as usize] = true;
        }
        (0..self.rows as u32).filter(|r| seen[*r as usize]).collect()
    }

    /// `[rows, cols]`.
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// The CSC arrays `(col_ptr [cols + 1], row_idx [nnz], vals [nnz])`, rows ascending within a column;
    /// `None` for the row-major layout.
    pub fn csc(&self) -> Option<(&[u32], &[u32], &[f32])> {
        (!self.row_major).then_some((&self.ptr, &self.idx, &self.vals))
    }

    /// Nonzeros of the matrix.
    pub fn nnz(&self) -> usize {
        self.nnz
    }

    /// Values stored (fewer than [`Self::nnz`] when delta rows hold only their differences): the
    /// multiply-adds of one product with a dense input.
    pub fn stored(&self) -> usize {
        self.vals.len()
    }

    /// `y = W x` for `x` of length `cols`. The CSC layout skips the columns where `x` is exactly zero.
    #[inline(never)]
    pub fn matvec(&self, x: &[f32]) -> Vec<f32> {
        debug_assert_eq!(x.len(), self.cols);
        if self.row_major {
            // Outputs of stored rows a..b; `prev` carries the previous row's output for delta rows (tasks
            // start at full rows).
            let dots = |a: usize, b: usize, out: &mut [f32]| {
                let mut prev = 0f32;
                for (o, i) in out.iter_mut().zip(a..b) {
                    let (lo, hi) = (self.ptr[i] as usize, self.ptr[i + 1] as usize);
                    let (ix, vs) = (&self.idx[lo..hi], &self.vals[lo..hi]);
                    let d = match hi - lo {
                        0 => 0.0,
                        1 => vs[0] * x[ix[0] as usize],
                        2 => vs[0] * x[ix[0] as usize] + vs[1] * x[ix[1] as usize],
                        _ => dot(ix, vs, x),
                    };
                    prev = if self.delta[i] { prev + d } else { d };
                    *o = prev;
                }
            };
            let n = self.live.len();
            let mut out = vec![0f32; n];
            if self.tasks.is_empty() {
                dots(0, n, &mut out);
            } else {
                use rayon::prelude::*;
                let mut parts: Vec<(usize, usize, &mut [f32])> = Vec::with_capacity(self.tasks.len());
                let mut rest: &mut [f32] = &mut out;
                for &(a, b) in &self.tasks {
                    let (head, tail) = rest.split_at_mut(b - a);
                    parts.push((a, b, head));
                    rest = tail;
                }
                parts.into_par_iter().for_each(|(a, b, o)| dots(a, b, o));
            }
            if n == self.rows {
                return out;
            }
            let mut y = vec![0f32; self.rows];
            for (r, v) in self.live.iter().zip(out) {
                y[*r as usize] = v;
            }
            return y;
        }
        let mut y = vec![0f32; self.rows];
        for (c, &xc) in x.iter().enumerate() {
            if xc == 0.0 {
                continue;
            }
            let (a, b) = (self.ptr[c] as usize, self.ptr[c + 1] as usize);
            for p in a..b {
                y[self.idx[p] as usize] += self.vals[p] * xc;
            }
        }
        y
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_matvec_matches_dense() {
        let t = HostTensor::new(vec![3, 4], vec![0., 1., 0., 2., 3., 0., 0., 0., 0., -1., 5., 0.]);
        let m = SparseMatrix::from_dense(&t);
        assert_eq!(m.nnz(), 5);
        assert_eq!(m.matvec(&[1., 2., 3., 4.]), vec![10., 3., 13.]);
        assert_eq!(m.matvec(&[0., 0., 1., 0.]), vec![0., 0., 5.]);
    }

    /// CSR (with delta rows and parallel tasks) and CSC agree exactly on integer-valued matrices and inputs,
    /// including rows that differ from their predecessor in one column (present in both, or in one only),
    /// rows that add columns to it, and chains of such rows.
    #[test]
    fn row_major_with_delta_rows_equals_column_major_on_exact_sums() {
        let (rows, cols) = (8000usize, 700usize);
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut dense = vec![0f32; rows * cols];
        let mut r = 0;
        while r + 1 < rows {
            for _ in 0..(rnd() % 90) {
                dense[r * cols + (rnd() % cols as u64) as usize] = 64.0 * ((rnd() % 9) as f32 - 4.0);
            }
            // Next rows: a twin (one column changed, added or removed), a few added columns, an empty or an
            // unrelated row; sometimes a chain of them.
            let chain = 1 + (rnd() % 3) as usize;
            for k in 0..chain {
                let (src, dst) = (r + k, r + k + 1);
                if dst >= rows {
                    break;
                }
                dense.copy_within(src * cols..(src + 1) * cols, dst * cols);
                let c = (rnd() % cols as u64) as usize;
                match rnd() % 5 {
                    0 => dense[dst * cols + c] += 128.0,
                    1 => dense[dst * cols + c] = 0.0,
                    2 => dense[dst * cols..(dst + 1) * cols].fill(0.0),
                    3 => {
                        for _ in 0..(rnd() % 6) {
                            dense[dst * cols + (rnd() % cols as u64) as usize] = 64.0;
                        }
                    }
                    _ => {}
                }
            }
            r += chain + 1;
        }
        let m = SparseMatrix::from_dense(&HostTensor::new(vec![rows, cols], dense));
        let csr = m.clone().into_row_major();
        let nd = csr.delta.iter().filter(|t| **t).count();
        assert!(nd > csr.live.len() / 4, "delta rows found: {nd} of {}", csr.live.len());
        assert!(csr.delta.windows(2).any(|w| w[0] && w[1]), "chains of delta rows");
        assert!(csr.stored() < csr.nnz() && csr.nnz() == m.nnz());
        assert!(!csr.tasks.is_empty() || rayon::current_num_threads() == 1);
        for trial in 0..20 {
            let x: Vec<f32> = (0..cols).map(|i| if trial % 2 == 0 { [1.0, -1.0, 0.0][(rnd() % 3) as usize] } else { (i % 5) as f32 - 2.0 }).collect();
            assert_eq!(csr.matvec(&x), m.matvec(&x));
        }
    }
}
