//! [`Projection`]: a projection `y = W x` kept up to date from the input's changes, exactly ([`super::exact`]),
//! with its row classes ([`super::classes`]) and table lookups ([`super::lookup`]); [`ProjState`]: one
//! sequence's output and bounds.

use super::classes::RowClasses;
use super::exact::{weight_exp, InputGrid, ENTRY_LIMIT, EXACT_LIMIT};
use super::lookup::{LookupRows, LookupState};
use super::model::Counters;
use super::tracked::{Bits, Columns, Tracked};
use crate::cpu::{CheckedWeights, SparseMatrix};
use crate::error::CpuError;
use crate::tensor::HostTensor;

/// A projection `[rows, cols]` in CSC layout with its weights' binary places, and its row classes where
/// grouping rows pays ([`RowClasses`]).
pub(super) struct Projection {
    pub(super) m: SparseMatrix,
    /// `m`'s columns as the incremental updates scatter them.
    pub(super) cols: Columns,
    /// Every weight is an integer multiple of `2^-exp` (`None`: a weight is not finite; no incremental sums).
    pub(super) exp: Option<i32>,
    /// Per column: the largest `|w|`, bounding every product `w (x_new - x_old)` of the column.
    pub(super) col_max: Vec<f64>,
    /// The largest row `Σ |w|` of `m` and of the row classes' extended matrix (0 without classes), exact or
    /// rounded up ([`row_abs_max`]): with every input within `a`, every partial sum of a row is within
    /// `row_abs · a`.
    pub(super) row_abs: [f64; 2],
    /// The largest `|w|` of `m` and of the extended matrix (0 without classes): with every input within `a`,
    /// every product `w (x_new - x_old)` is within `2 · max_abs · a`.
    pub(super) max_abs: [f64; 2],
    /// The rows grouped into classes, with the extended matrix's per-column largest `|w|` and its columns:
    /// incremental updates run on the extended matrix (see [`RowClasses`]).
    pub(super) classes: Option<(RowClasses, Vec<f64>, Columns)>,
    /// Per column: it holds a nonzero. Changes of the other inputs are ignored, and their values left out
    /// of the input's grid (they meet no weight).
    pub(super) used: Bits,
    /// What the output feeds, where that maps a range of values to one exact zero ([`Quiet`]): a row whose old
    /// and new values both lie there is updated but not reported as changed.
    pub(super) quiet: Quiet,
    /// Blocks of rows that read one small set of columns, kept out of `m` and updated by their live rows
    /// ([`LookupRows`]; `gate_proj` only). Per block also: which columns it reads.
    pub(super) lookups: Vec<(LookupRows, Vec<bool>)>,
}

/// `silu(x)` is exactly `-0` for every `x` below this (`cpu::math::silu`).
pub(super) const SILU_ZERO_BELOW: f32 = -89.0;

/// `silu(x)` is an exact zero: `x` below [`SILU_ZERO_BELOW`] (`-0`) or `x = ±0` (`silu(±0) = ±0`). A change
/// between two such values changes nothing after the SwiGLU product but the sign of a zero, which no later
/// stage sees (see [`swiglu`]). A woven unit's gate moves between `0` and `-128` whenever an input of an
/// unselected AND changes: half of the MLP's changes on NES games were such zero-sign flips.
#[inline(always)]
pub(super) fn silu_quiet(x: f32) -> bool {
    (x < SILU_ZERO_BELOW) | (x == 0.0)
}

/// `sigmoid(x)` is exactly `+0` for every `x` below [`SILU_ZERO_BELOW`] (`cpu::math::sigmoid`): a woven
/// DeltaNet head's `beta` input `b` moves between such values (`-200`, `-600`, ...) whenever a literal of its
/// write enable changes while another is false, as the memories' commit enables do at every commit and the
/// token after it.
#[inline(always)]
pub(super) fn sigmoid_quiet(x: f32) -> bool {
    x < SILU_ZERO_BELOW
}

/// What reads a projection's output, when that is a function with a range of inputs it maps to one exact
/// zero: `silu` (an MLP's `gate_proj`, a DeltaNet's `in_proj_z`; [`silu_quiet`]) or `sigmoid` (a DeltaNet's
/// `in_proj_b`, for `beta`; [`sigmoid_quiet`]). A row that moves within that range changes nothing its reader
/// sees but possibly the sign of a zero, which no later stage sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Quiet {
    None,
    Silu,
    Sigmoid,
}

impl Quiet {
    /// `x` is in the range the reader maps to its exact zero.
    #[inline(always)]
    pub(super) fn holds(self, x: f32) -> bool {
        match self {
            Quiet::None => false,
            Quiet::Silu => silu_quiet(x),
            Quiet::Sigmoid => sigmoid_quiet(x),
        }
    }
}

/// Per column of a CSC matrix: the largest `|w|`.
pub(super) fn column_max(m: &SparseMatrix) -> Vec<f64> {
    let (ptr, _, vals) = m.csc().expect("CSC");
    ptr.windows(2).map(|w| vals[w[0] as usize..w[1] as usize].iter().fold(0f64, |a, v| a.max(v.abs() as f64))).collect()
}

/// The largest row `Σ |w|` of `m`: exact where every addition of the row's sum in f64 was exact (as for woven
/// weights, multiples of a power of two), else rounded up by a relative 2^-40 (far above f64's rounding of
/// the sum). A bound that is exactly the exact range's edge is then still within it.
pub(super) fn row_abs_max(m: &SparseMatrix) -> f64 {
    let (_, idx, vals) = m.csc().expect("CSC");
    let rows = m.shape().0;
    let (mut sums, mut rounded) = (vec![0f64; rows], vec![false; rows]);
    for (i, w) in idx.iter().zip(vals) {
        let (a, b) = (sums[*i as usize], w.abs() as f64);
        let s = a + b;
        // Both terms are non-negative: the addition was exact iff subtracting either term gives the other.
        rounded[*i as usize] |= s - a != b || s - b != a;
        sums[*i as usize] = s;
    }
    sums.iter().zip(&rounded).map(|(s, r)| if *r { s * (1.0 + 2f64.powi(-40)) } else { *s }).fold(0.0, f64::max)
}

/// The full product `y = W x` (CSC, columns in increasing order: the sparse executor's sum) with every row's
/// `Σ |w x|` in f64 (exact for the grids used here) into `abs`.
pub(super) fn full_product(m: &SparseMatrix, x: &[f32], abs: &mut [f64]) -> Vec<f32> {
    let (ptr, idx, vals) = m.csc().expect("CSC");
    let mut y = vec![0f32; m.shape().0];
    abs.fill(0.0);
    for (j, &xj) in x.iter().enumerate() {
        if xj == 0.0 {
            continue;
        }
        for p in ptr[j] as usize..ptr[j + 1] as usize {
            let i = idx[p] as usize;
            y[i] += vals[p] * xj;
            abs[i] += (vals[p] as f64 * xj as f64).abs();
        }
    }
    y
}

/// Add `x`'s changes to `y = W x` (its columns `m`, per-column largest `|w|` `col_max`),
/// keeping the rows' `Σ |w x|` in `abs`. Returns whether every product and partial sum stayed exact: each
/// product within `lim` and every row's bound within `row_lim` (real terms). The caller undoes `y` when not.
///
/// Exactness: every input is on its grid (integer multiples of `2^-e`, each within 2^23 units, so
/// `x_new - x_old` is exact), so every product and partial sum is an integer number of units of
/// `2^-(exp + e)`, exact in f32 up to 2^24 units. Products: `max |w|` of the column times `|x_new - x_old|`
/// is checked. Partial sums: the columns whose magnitude shrinks are added before those whose magnitude
/// grows, so after any prefix a row's sum is within `Σ |w x'|` of an input `x'` between the old and the new,
/// which is at most the larger of the row's old and new `Σ |w x|`; those are kept per row (exact in f64)
/// and must stay within the bound, which also makes the full sum, in any order, exact.
#[allow(clippy::too_many_arguments)]
///
/// `unbounded`: every row's `Σ |w|` times the largest input magnitude since the last full product is within
/// `row_lim`, and the largest `|w|` times twice it within `lim` (see `Projection::update`), so every partial
/// sum and product is exact whatever the order, and the row bounds `abs` are neither needed nor kept (the
/// caller marks them stale).
///
/// `quiet`: what `y` feeds ([`Quiet`]); the caller ends with `finish_except` of it. An unbounded update (never
/// undone) then leaves unrecorded the rows that stay quiet ([`Tracked::scatter_quiet`]).
pub(super) fn scatter_changes(m: &Columns, col_max: &[f64], y: &mut Tracked, abs: &mut [f64], over: &mut usize, sel: &[(u32, f32)], xv: &[f32], [lim, row_lim]: [f64; 2], unbounded: bool, quiet: Quiet, n: &mut Counters) -> bool {
    if unbounded || sel.iter().all(|&(j, o)| xv[j as usize].abs() == o.abs()) {
        // Unbounded (see above), or only signs changed: every intermediate input x' has the old magnitudes,
        // so every partial sum stays within its row's unchanged Σ |w x| (within the bound), and each product
        // w (x_new - x_old) = ±2 w x_old has the significant bits of w x_old: all exact, unchecked.
        for (k, &(j, o)) in sel.iter().enumerate() {
            // Cache hints: the offset of the column eight ahead, the nonzeros of the column four ahead.
            if let Some(&(jn, _)) = sel.get(k + 8) {
                m.prefetch_ptr(jn as usize);
            }
            if let Some(&(jn, _)) = sel.get(k + 4) {
                m.prefetch_col(jn as usize);
            }
            let d = xv[j as usize] - o;
            if d == 0.0 {
                continue; // +0 <-> -0: every product is a signed zero, which leaves every sum as it was
            }
            let j = j as usize;
            // Never undone (an unbounded update always succeeds): rows that stay quiet go unrecorded.
            match quiet {
                Quiet::Silu if unbounded => y.scatter_quiet(m, j, d, silu_quiet),
                Quiet::Sigmoid if unbounded => y.scatter_quiet(m, j, d, sigmoid_quiet),
                _ => y.scatter(m, j, d),
            }
            n.weights_read += m.col(j).len() as u64;
        }
        return unbounded || *over == 0;
    }
    // Shrinking magnitudes first, then growing ones (see above).
    let grows = |&(j, o): &(u32, f32)| xv[j as usize].abs() > o.abs();
    let mut ops_exact = true;
    for &(j, o) in sel.iter().filter(|e| !grows(e)).chain(sel.iter().filter(|e| grows(e))) {
        let j = j as usize;
        let v = xv[j];
        let d = v - o;
        if d == 0.0 {
            continue;
        }
        ops_exact &= col_max[j] * (d as f64).abs() <= lim;
        let da = v.abs() as f64 - o.abs() as f64;
        y.scatter_with_bound(m, j, d, abs, da);
        n.weights_read += m.col(j).len() as u64;
    }
    // `over` was 0: only the rows touched now can be beyond the bound.
    *over = y.ch().iter().filter(|&&i| abs[i as usize] > row_lim).count();
    ops_exact && *over == 0
}

impl Projection {
    pub(super) fn new(t: &HostTensor) -> Self {
        Self::from_matrix(SparseMatrix::from_dense(t))
    }

    /// The tensor `name` of `w` as a projection; errors name a missing or misshapen tensor.
    pub(super) fn from_tensor(w: &CheckedWeights, name: &str) -> Result<Self, CpuError> {
        Ok(Self::new(w.get(name)?))
    }

    /// From a CSC matrix.
    pub(super) fn from_matrix(m: SparseMatrix) -> Self {
        let (_, _, vals) = m.csc().expect("CSC");
        let exp = weight_exp(vals);
        let col_max = column_max(&m);
        let classes = RowClasses::find(&m).map(|rc| {
            let cm = column_max(&rc.ext);
            let cols = Columns::of(&rc.ext).expect("CSC");
            (rc, cm, cols)
        });
        let (ptr, _, _) = m.csc().expect("CSC");
        let used = Bits::of(&ptr.windows(2).map(|w| w[1] > w[0]).collect::<Vec<_>>());
        let row_abs = [row_abs_max(&m), classes.as_ref().map_or(0.0, |(rc, _, _)| row_abs_max(&rc.ext))];
        let largest = |c: &[f64]| c.iter().fold(0f64, |a, b| a.max(*b));
        let max_abs = [largest(&col_max), classes.as_ref().map_or(0.0, |(_, cm, _)| largest(cm))];
        let cols = Columns::of(&m).expect("CSC");
        Self { m, cols, exp, col_max, row_abs, max_abs, classes, used, quiet: Quiet::None, lookups: Vec::new() }
    }

    /// This projection as an MLP's `gate_proj`: its output feeds only `silu` (see `Projection::quiet`);
    /// its table lookups are taken out of `m` and updated by their live rows ([`LookupRows`]).
    pub(super) fn feeding_silu(self) -> Self {
        let blocks = LookupRows::find(&self.m).unwrap_or_default();
        let mut p = if blocks.is_empty() {
            self
        } else {
            let mut out = vec![false; self.rows()];
            blocks.iter().flat_map(|b| &b.rows).for_each(|&r| out[r as usize] = true);
            Self::from_matrix(self.m.without_rows(&out).expect("CSC"))
        };
        let cols = p.m.shape().1;
        p.lookups = blocks
            .into_iter()
            .map(|b| {
                let mut reads = vec![false; cols];
                b.cols.iter().for_each(|&c| reads[c as usize] = true);
                (b, reads)
            })
            .collect();
        p.quiet = Quiet::Silu;
        p
    }

    /// This projection as a DeltaNet's output gate `in_proj_z`: its output feeds only `silu` in the gated norm,
    /// so a row whose old and new values both have an exact zero `silu` is updated but not reported as changed
    /// (see `Projection::quiet`; the head's output then differs at most in the sign of zero entries,
    /// which `out_proj` skips as it skips every zero). No lookup blocks.
    pub(super) fn feeding_gate(mut self) -> Self {
        self.quiet = Quiet::Silu;
        self
    }

    /// This projection as a DeltaNet's `in_proj_b`: its output feeds only `beta = sigmoid(b)`, so a row whose
    /// old and new values both give `beta = +0` exactly is updated but not reported as changed (the head's
    /// `beta` and its set of writers stay as they were).
    pub(super) fn feeding_beta(mut self) -> Self {
        self.quiet = Quiet::Sigmoid;
        self
    }

    /// Nonzero weights, the lookup blocks' included.
    pub(super) fn nnz(&self) -> usize {
        self.m.nnz() + self.lookups.iter().map(|(b, _)| b.nnz()).sum::<usize>()
    }

    /// The lookup blocks' rows brought to `x` after an incremental update of the others (before `y`'s finish).
    pub(super) fn update_lookups(&self, st: &mut ProjState, x: &Tracked, n: &mut Counters) {
        for ((b, reads), ls) in self.lookups.iter().zip(&mut st.lookups) {
            n.weights_read += b.update(ls, &x.v, x.ch(), reads, &mut st.y);
        }
    }

    pub(super) fn rows(&self) -> usize {
        self.m.shape().0
    }

    /// Bring `st.y` up to date with `x` (whose changes this token are `x.ch()`/`x.old()`): incrementally where
    /// exact (see [`scatter_changes`]), else the full product.
    ///
    /// With row classes the incremental update runs on the extended matrix `E` while its every row's bound
    /// is within half the exact range: then both parts of an output row, `(E x)[class]` and
    /// `(E x)[classes + row]`, and their sum are exact, and the sum is the full product's value. Where a
    /// full product finds an extended row beyond that, updates run on the original rows until the next one.
    pub(super) fn update(&self, st: &mut ProjState, x: &Tracked, first: bool, n: &mut Counters) {
        st.y.begin();
        if self.m.nnz() == 0 && self.lookups.is_empty() {
            return;
        }
        let mut full = first || !st.exact;
        if !full {
            // The changed inputs this projection reads, selected without a branch (which column a change
            // meets is data: a branch here mispredicts), then the grid and `xmax` from those that are not sign
            // flips: a flip keeps a magnitude, so it neither leaves nor joins the grid (`InputGrid::update`),
            // nor exceeds `xmax`, which already holds the old value's (an input since the last full product).
            let (ch, old) = (x.ch(), x.old());
            st.sel.clear();
            st.sel.reserve(ch.len());
            let spare = &mut st.sel.spare_capacity_mut()[..ch.len()];
            let mut n_sel = 0;
            for (&j, &o) in ch.iter().zip(old) {
                spare[n_sel].write((j, o));
                n_sel += self.used.has(j as usize) as usize;
            }
            // SAFETY: the first `n_sel` slots were written (each kept write is at the slot `n_sel` had then),
            // and `n_sel <= ch.len()` is within the capacity reserved.
            unsafe { st.sel.set_len(n_sel) };
            for &(j, o) in &st.sel {
                let v = x.v[j as usize];
                if (o.to_bits() ^ v.to_bits()) != 1 << 31 {
                    st.grid.update(o, v);
                    st.xmax = st.xmax.max(v.abs() as f64);
                }
            }
            if st.sel.is_empty() && self.lookups.is_empty() {
                return; // no input it reads changed: neither did its output (nothing recorded since `begin`)
            }
            full = !st.grid.exact();
        }
        // Unbounded updates: with every input since the last full product within `xmax`, every partial sum
        // of a row is within `row_abs · xmax` and every product `w (x_new - x_old)` within
        // `2 · max_abs · xmax`; where the sums fit the rows' bound and the products the exact range, no row
        // bound is needed (and none is kept: `abs_stale`). Where they do not and the row bounds are stale, a
        // full product recomputes them.
        let ext_on = matches!((&self.classes, &st.ext), (Some(_), Some(e)) if e.active);
        let lim = st.limit;
        let row_lim = if ext_on { lim / 2.0 } else { lim };
        let e = ext_on as usize;
        let unbounded = !full && self.row_abs[e] * st.xmax <= row_lim && 2.0 * self.max_abs[e] * st.xmax <= lim;
        full |= !unbounded && st.abs_stale;
        st.abs_stale |= unbounded;
        n.unbounded_products += unbounded as u64;
        if !full {
            match (&self.classes, &mut st.ext) {
                (Some((rc, cm, cols)), Some(e)) if e.active => {
                    e.y.begin();
                    if scatter_changes(cols, cm, &mut e.y, &mut e.abs, &mut e.over, &st.sel, &x.v, [lim, row_lim], unbounded, Quiet::None, n) {
                        e.y.finish();
                        let nc = rc.classes;
                        let quiet = self.quiet;
                        // Inlined into both loops (as a closure it was a call per row).
                        #[inline(always)]
                        fn put(y: &mut Tracked, quiet: Quiet, r: usize, v: f32) {
                            if quiet.holds(v) && quiet.holds(y.v[r]) {
                                y.set_quietly(r, v);
                            } else {
                                y.set_final(r, v);
                            }
                        }
                        for &k in e.y.ch() {
                            let k = k as usize;
                            if k < nc {
                                for &r in rc.rows_of(k) {
                                    put(&mut st.y, quiet, r as usize, e.y.v[k] + e.y.v[nc + r as usize]);
                                }
                            } else {
                                let r = k - nc;
                                put(&mut st.y, quiet, r, e.y.v[rc.class_of[r] as usize] + e.y.v[k]);
                            }
                        }
                        self.update_lookups(st, x, n);
                        st.y.finish_single_writes();
                        n.incremental_products += 1;
                        return;
                    }
                    // An operation or a row's sum outgrew the exact range: undo the token's additions (they
                    // may have rounded), then compute in full.
                    e.y.undo();
                }
                _ => {
                    if scatter_changes(&self.cols, &self.col_max, &mut st.y, &mut st.abs, &mut st.over, &st.sel, &x.v, [lim, row_lim], unbounded, self.quiet, n) {
                        self.update_lookups(st, x, n);
                        match self.quiet {
                            Quiet::None => st.y.finish(),
                            q => st.y.finish_except(|x| q.holds(x)),
                        }
                        n.incremental_products += 1;
                        return;
                    }
                    st.y.undo();
                }
            }
        }
        let mut y = full_product(&self.m, &x.v, &mut st.abs);
        for ((b, _), ls) in self.lookups.iter().zip(&mut st.lookups) {
            n.weights_read += b.fill(ls, &x.v, &mut y);
        }
        st.y.replace(&y);
        n.full_products += 1;
        n.weights_read += self.m.nnz() as u64;
        st.exact = false;
        st.abs_stale = false;
        st.xmax = x.v.iter().enumerate().filter(|(j, _)| self.used.has(*j)).fold(0f64, |a, (_, v)| a.max(v.abs() as f64));
        if let Some(wexp) = self.exp {
            let amax = st.abs.iter().cloned().fold(0.0, f64::max);
            let used: Vec<f32> = x.v.iter().enumerate().map(|(j, v)| if self.used.has(j) { *v } else { 0.0 }).collect();
            st.grid.calibrate_with(&used, ENTRY_LIMIT, Some(&|e| amax * 2f64.powi(wexp + e)));
            st.limit = EXACT_LIMIT / st.grid.scale() / 2f64.powi(wexp);
            st.over = st.abs.iter().filter(|a| **a > st.limit).count();
            if let (Some((rc, _, _)), Some(e)) = (&self.classes, &mut st.ext) {
                let ey = full_product(&rc.ext, &x.v, &mut e.abs);
                e.y.begin();
                e.y.replace(&ey);
                n.weights_read += rc.ext.nnz() as u64;
                // The classes are used while both parts of every row stay within half the exact range;
                // otherwise the original rows are updated (their own bound is the whole range).
                let half = st.limit / 2.0;
                e.over = e.abs.iter().filter(|a| **a > half).count();
                e.active = e.over == 0;
            }
            st.exact = st.grid.exact() && st.over == 0;
        }
    }
}

/// Per sequence, per projection: its output, the input's grid, and per row `Σ |w x|` (exact in f64) with
/// the count of rows beyond the exact range; with row classes, the same for the extended matrix.
#[derive(Clone)]
pub(super) struct ProjState {
    pub(super) y: Tracked,
    pub(super) grid: InputGrid,
    pub(super) abs: Vec<f64>,
    /// `2^24` units of `2^-(exp + e)`, in real terms: the bound of every product, partial sum and row `Σ |w x|`.
    pub(super) limit: f64,
    pub(super) over: usize,
    /// The last product was computed (or updated) exactly: the next may be incremental.
    pub(super) exact: bool,
    /// The largest `|x|` of a used input column since the last full product (NaN-free: a NaN input is on no
    /// grid, so it forces full products).
    pub(super) xmax: f64,
    /// Updates ran unbounded since the last full product: `abs`, `over` and the extended state's are stale.
    pub(super) abs_stale: bool,
    /// Scratch: this token's changed inputs that meet a weight `(column, old value)`, in the order added.
    pub(super) sel: Vec<(u32, f32)>,
    /// With row classes: `E x`, its rows' `Σ |w x|`, the count beyond half the exact range, and whether updates
    /// use it.
    pub(super) ext: Option<ExtState>,
    /// Per lookup block of the projection: its live rows and table.
    pub(super) lookups: Vec<LookupState>,
}

#[derive(Clone)]
pub(super) struct ExtState {
    pub(super) y: Tracked,
    pub(super) abs: Vec<f64>,
    pub(super) over: usize,
    /// Updates run on the extended matrix (set at each full product: every extended row within half the
    /// exact range).
    pub(super) active: bool,
}

impl ProjState {
    pub(super) fn new(p: &Projection) -> Self {
        let ext = p.classes.as_ref().map(|(rc, _, _)| {
            let r = rc.ext.shape().0;
            ExtState { y: Tracked::zeros(r), abs: vec![0.0; r], over: 0, active: false }
        });
        let lookups = vec![LookupState::default(); p.lookups.len()];
        Self { y: Tracked::zeros(p.rows()), grid: InputGrid::default(), abs: vec![0.0; p.rows()], limit: 0.0, over: 0, exact: false, xmax: 0.0, abs_stale: false, sel: Vec::new(), ext, lookups }
    }
}

/// Marks the columns of `m` that hold a nonzero weight.
pub(super) fn mark_columns(m: &SparseMatrix, touch: &mut [bool]) {
    let (ptr, _, _) = m.csc().expect("CSC");
    for (j, w) in ptr.windows(2).enumerate() {
        touch[j] |= w[1] > w[0];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::incremental::tracked::testing::{bits, feed};


    /// Drive one projection through every path of `update` (sign flips, growing and shrinking magnitudes with
    /// and without row bounds, an input beyond the unbounded range while the bounds are stale, values off the
    /// grid, recovery), checking after each token that its output equals a fresh full product bit for bit, and
    /// which path ran.
    #[test]
    fn projection_updates_equal_full_products_on_every_path() {
        let (rows, cols) = (6usize, 5usize);
        // Dyadic weights (multiples of 1/4): a row's Σ|w| is at most 11 (row 5), 44 units of 2^-2.
        let mut w = vec![0f32; rows * cols];
        for r in 0..rows {
            for c in 0..cols {
                if (r + 2 * c) % 3 != 0 {
                    w[r * cols + c] = ((r as f32 - 2.0) * 0.75 + c as f32 * 0.25).max(-3.0);
                }
            }
        }
        let p = Projection::new(&HostTensor::new(vec![rows, cols], w));
        let mut st = ProjState::new(&p);
        let mut x = Tracked::zeros(cols);
        let mut n = Counters::default();
        let full = |x: &[f32]| p.m.matvec(x);
        // (input, expected path): 'F' full product, 'U' incremental without row bounds, 'B' incremental with
        // them, '-' none (no input changed). The grid after the first token: binary places 0 + spare floor(log2(2^23 / 44) / 2) = 8, so
        // entries are multiples of 2^-8 up to 2^23 units (|x| <= 2^15); the bound is 2^24 units of 2^-10,
        // 16384, the largest row Σ|w| 11 and the largest |w| 3.25: updates need no row bounds while
        // 11 · max |x| <= 16384 (the partial sums) and 2 · 3.25 · max |x| <= 16384 (the products), i.e. every
        // input since the last full product within 1489.
        let tokens: Vec<(Vec<f32>, char)> = vec![
            (vec![1.0, -1.0, 1.0, 1.0, -1.0], 'F'),     // the first token
            (vec![-1.0, -1.0, 1.0, -1.0, -1.0], 'U'),   // sign flips only
            (vec![-1.0, -1.0, 1.0, -1.0, -1.0], '-'),   // nothing changed: nothing to do
            (vec![-1.0, 3.0, 0.5, -1.0, 0.0], 'U'),     // magnitudes grow and shrink, small
            (vec![-1.0, 3.0, 0.5, 2048.0, 0.0], 'F'),   // beyond 1489 and the row bounds stale: full
            (vec![-1.0, -3.0, 0.5, 2000.0, 0.5], 'U'),  // the new grid (2^-4) bounds 262144: 11 · 2048 within it
            (vec![-1.0, 3.0, 0.5, 524288.5, 0.0], 'F'), // beyond 2^23 units of 2^-4: off the grid, full
            (vec![-1.0, 3.0, 0.5, 1.0, 0.0], 'B'),      // the full product was exact and re-gridded (2^-1, bound
                                                        // 2^21): incremental, with row bounds (11 · 524288.5 > 2^21)
            (vec![-1.0, -3.0, 1.5, 2.0, 0.5], 'B'),     // magnitudes grow and shrink, with row bounds
            (vec![1.0, 3.0, 0.1, 1.0, 0.0], 'F'),       // 0.1 is on no grid
            (vec![1.0, 3.0, 0.1, -1.0, 0.0], 'F'),      // still off: the last product was not exact
            (vec![1.0, -3.0, 0.25, 1.0, 0.0], 'F'),     // back on a grid: one full product first
            (vec![1.0, -3.0, 0.25, 1.0, 2.0], 'U'),
        ];
        for (t, (v, path)) in tokens.iter().enumerate() {
            feed(&mut x, v);
            let before = n;
            p.update(&mut st, &x, t == 0, &mut n);
            let ran = match (n.full_products > before.full_products, n.unbounded_products > before.unbounded_products, n.incremental_products > before.incremental_products) {
                (true, _, _) => 'F',
                (false, true, _) => 'U',
                (false, false, true) => 'B',
                (false, false, false) => '-',
            };
            let want = full(v);
            assert_eq!(bits(&st.y.v), bits(&want), "token {t}: {:?} vs {:?}", st.y.v, want);
            assert_eq!(ran, *path, "token {t}: path");
            // The recorded changes are exactly the entries whose bits differ from the previous token's output.
            for (k, &i) in st.y.ch().iter().enumerate() {
                assert_ne!(st.y.old()[k].to_bits(), st.y.v[i as usize].to_bits());
            }
        }
        assert_eq!(p.row_abs, [11.0, 0.0], "the largest row Σ|w| (exact: dyadic weights), no classes");
        assert_eq!(p.max_abs, [3.25, 0.0], "the largest |w|");
        // Paths taken: F 6 (tokens 0, 4, 6, 9, 10, 11), U 4 and B 2 (both incremental), - 1.
        assert_eq!((n.full_products, n.incremental_products, n.unbounded_products), (6, 6, 4), "{n:?}");
    }

    /// A projection feeding `beta = sigmoid(b)`: rows that move between values below -89 (both `beta = +0`) are
    /// updated but not reported; a row that leaves or enters that range is; every value equals the full
    /// product bit for bit. Rows: `b = 200 (x0 + x1 + x2 - 2)` on ±1 inputs (a write head's three literals:
    /// +200 when all hold, -200, -600 or -1000 otherwise) and a row reading `x0` alone.
    #[test]
    fn beta_rows_that_stay_at_sigmoid_zero_go_unreported() {
        let w = vec![100.0, 100.0, 100.0, -200.0, 1.0, 0.0, 0.0, 0.0];
        let p = Projection::new(&HostTensor::new(vec![2, 4], w)).feeding_beta();
        assert_eq!(p.quiet, Quiet::Sigmoid);
        let mut st = ProjState::new(&p);
        let (mut x, mut n) = (Tracked::zeros(4), Counters::default());
        // (inputs, rows reported): row 0's b, and whether row 0 is reported.
        let tokens: [([f32; 4], f32, bool); 5] = [
            ([-1.0, -1.0, -1.0, 1.0], -500.0, true), // the first token: every row
            ([1.0, -1.0, -1.0, 1.0], -300.0, false), // -500 -> -300: sigmoid 0 both, not reported
            ([1.0, 1.0, -1.0, 1.0], -100.0, false),  // -> -100: still 0
            ([1.0, 1.0, 1.0, 1.0], 100.0, true),     // -> 100: beta 1, reported
            ([-1.0, 1.0, 1.0, 1.0], -100.0, true),   // -> -100: beta 0 again, reported
        ];
        for (t, (v, b0, reported)) in tokens.iter().enumerate() {
            feed(&mut x, v);
            p.update(&mut st, &x, t == 0, &mut n);
            assert_eq!(bits(&st.y.v), bits(&p.m.matvec(v)), "token {t}");
            assert_eq!(st.y.v[0], *b0, "token {t}");
            assert_eq!(st.y.ch().contains(&0), *reported, "token {t}: row 0 reported");
            // Row 1 (x0 alone, ±1) is never quiet: reported whenever x0 changed.
            assert_eq!(st.y.ch().contains(&1), t == 0 || t == 1 || t == 4, "token {t}: row 1");
        }
        assert_eq!(n.full_products, 1, "{n:?}");
    }

    /// A row's `Σ |w|` is the exact sum where f64 adds it exactly (the bound may then be met with equality),
    /// and rounded up where an addition rounded (here `1 + 2^-60`, which f64 rounds to 1).
    #[test]
    fn row_abs_is_exact_unless_its_sum_rounded() {
        let exact = Projection::new(&HostTensor::new(vec![2, 3], vec![0.5, -0.25, 3.0, 1.0, 1.0, -1.0]));
        assert_eq!((exact.row_abs[0], exact.max_abs[0]), (3.75, 3.0));
        let tiny = 2f32.powi(-60);
        let rounded = Projection::new(&HostTensor::new(vec![1, 2], vec![1.0, tiny]));
        assert!(rounded.row_abs[0] > 1.0 + tiny as f64, "{}", rounded.row_abs[0]);
        assert_eq!(rounded.row_abs[0], 1.0 + 2f64.powi(-40));
    }

    /// A table lookup in a `gate_proj` (64 equality rows over 6 bits and a bias) is taken out of the matrix
    /// and updated by its live rows: every row `silu` does not zero equals the full product bit for bit,
    /// every other row is `silu`-quiet in both, each change `silu` can see is recorded, and fewer weights are
    /// read than the incremental update of all rows reads.
    #[test]
    fn lookup_rows_equal_the_full_product_where_silu_sees_them() {
        let (entries, cols) = (64usize, 9usize);
        let mut w = vec![0f32; (entries + 4) * cols];
        for k in 0..entries {
            for b in 0..6 {
                w[k * cols + b] = if k >> b & 1 == 1 { 256.0 } else { -256.0 };
            }
            // 256 (1/2 - Hamming distance): 128 at the entry, -128 or less elsewhere.
            w[k * cols + 6] = 256.0 * (0.5 - (k as u32).count_ones() as f32);
        }
        // Four plain rows reading a table bit and two other inputs.
        for r in 0..4 {
            let row = &mut w[(entries + r) * cols..(entries + r + 1) * cols];
            (row[r], row[7], row[8]) = (0.5, 1.0 + r as f32, -2.0);
        }
        let wt = HostTensor::new(vec![entries + 4, cols], w);
        let p = Projection::new(&wt).feeding_silu();
        assert_eq!(p.lookups.len(), 1, "one lookup block");
        assert_eq!(p.lookups[0].0.rows.len(), entries);
        let mut plain = Projection::new(&wt);
        plain.quiet = Quiet::Silu;
        let mut abs = vec![0f64; entries + 4];
        let (mut st, mut st_plain) = (ProjState::new(&p), ProjState::new(&plain));
        let (mut x, mut n, mut n_plain) = (Tracked::zeros(cols), Counters::default(), Counters::default());
        let mut seed = 12345u32;
        for t in 0..60 {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            // A program's loop meets few entries: eight here, each looked up once, then kept.
            let bits = [3, 17, 40, 41, 63, 0, 22, 9][(seed >> 8) as usize % 8];
            let mut v: Vec<f32> = (0..6).map(|b| (bits >> b & 1) as f32).collect();
            v.extend([1.0, if t % 3 == 0 { 2.0 } else { -1.0 }, (t % 5) as f32]);
            let prev = st.y.v.clone();
            feed(&mut x, &v);
            p.update(&mut st, &x, t == 0, &mut n);
            plain.update(&mut st_plain, &x, t == 0, &mut n_plain);
            let want = full_product(&plain.m, &v, &mut abs);
            for (r, (&got, &full)) in st.y.v.iter().zip(&want).enumerate() {
                if silu_quiet(full) {
                    assert!(silu_quiet(got), "token {t} row {r}: {got} for the quiet {full}");
                } else {
                    assert_eq!(got.to_bits(), full.to_bits(), "token {t} row {r}");
                }
                let seen = !(silu_quiet(prev[r]) && silu_quiet(got)) && prev[r].to_bits() != got.to_bits();
                if t > 0 {
                    assert_eq!(seen, st.y.ch().contains(&(r as u32)), "token {t} row {r}: change recorded");
                }
            }
        }
        assert!(n.incremental_products >= 50, "{n:?}");
        assert!(n.weights_read * 2 < n_plain.weights_read, "{} vs {} weights read", n.weights_read, n_plain.weights_read);
    }

    /// An input that meets no weight (an all-zero column) neither forces the full product when it leaves
    /// every grid nor changes the output; projections with row classes update through them, bit for bit.
    #[test]
    fn unused_inputs_and_row_classes_stay_incremental_and_exact() {
        // Rows 0-5 share one form outside column 0 (a bias), row 6 is a bias alone; column 2 is all zero.
        #[rustfmt::skip]
        let w = vec![
            1.0, 2.0, 0.0, -1.0, 0.5,
            -1.0, 2.0, 0.0, -1.0, 0.5,
            3.0, 2.0, 0.0, -1.0, 0.5,
            -3.0, 2.0, 0.0, -1.0, 0.5,
            5.0, 2.0, 0.0, -1.0, 0.5,
            7.0, 2.0, 0.0, -1.0, 0.5,
            2.0, 0.0, 0.0, 0.0, 0.0,
        ];
        let p = Projection::new(&HostTensor::new(vec![7, 5], w));
        assert!(p.classes.as_ref().is_some_and(|(rc, _, _)| rc.classes == 2), "twin rows grouped");
        let mut st = ProjState::new(&p);
        let mut x = Tracked::zeros(5);
        let mut n = Counters::default();
        let tokens: [[f32; 5]; 5] = [[1.0, 1.0, 0.0, -1.0, 1.0], [1.0, -1.0, 0.1, -1.0, 1.0], [1.0, -1.0, 0.3, 2.0, 0.5], [1.0, 3.0, 0.7, 2.0, -0.5], [-1.0, 3.0, 0.7, 2.0, -0.5]];
        for (t, v) in tokens.iter().enumerate() {
            feed(&mut x, v);
            let before = n;
            p.update(&mut st, &x, t == 0, &mut n);
            assert_eq!(bits(&st.y.v), bits(&p.m.matvec(v)), "token {t}");
            if t > 0 {
                assert_eq!(n.full_products, before.full_products, "token {t} is incremental");
            }
        }
        assert_eq!(n.incremental_products, 4);
    }

    /// The same for an incremental update that starts exact and overflows a row bound mid-token: the
    /// additions already made are undone and the full product replaces them.
    #[test]
    fn a_row_bound_exceeded_mid_update_is_undone() {
        // Row 0 = [2^20, 2^20]; inputs start at [1, 1] (the bound: 2^24 units of 2^-1, 2^23), then [5, 1] (row
        // bounds kept: 2^21 · 5 > 2^23; the row's sum 6 · 2^20 fits) and [15, 15]: 30 · 2^20 > 2^23.
        let p = Projection::new(&HostTensor::new(vec![2, 2], vec![1048576.0, 1048576.0, 1.0, -1.0]));
        let mut st = ProjState::new(&p);
        let mut x = Tracked::zeros(2);
        let mut n = Counters::default();
        for (t, v) in [[1.0f32, 1.0], [5.0, 1.0], [15.0, 15.0], [1.0, 3.0]].iter().enumerate() {
            feed(&mut x, v);
            let before = n;
            p.update(&mut st, &x, t == 0, &mut n);
            assert_eq!(st.y.v, p.m.matvec(v), "token {t}");
            if t == 1 {
                assert_eq!(n.incremental_products, before.incremental_products + 1, "token 1 is incremental");
            }
            if t == 2 {
                assert_eq!(n.full_products, before.full_products + 1, "token 2 falls back");
                assert!(n.weights_read > before.weights_read + p.m.nnz() as u64, "the update was tried, then undone");
            }
        }
    }
}
