//! [`FactoredHead`]: the greedy token of an lm_head whose rows come in *sign products*, found without
//! computing every logit.
//!
//! A woven lm_head scores the `2^w` values of a `w`-bit trace field with rows that share everything except
//! the signs of `w` weights: row `v` has `+|w_j|` on bit slot `j` where bit `j` of `v` is set and `-|w_j|`
//! where it is clear. When one bit slot changes, all `2^w` logits change, yet the largest of them is simply
//! the row whose signs agree with the inputs. This module finds such groups in the matrix alone (no circuit
//! or machine description):
//!
//! - a *group* is a set of rows with the same columns and the same weight magnitudes in every column;
//! - its *pattern* columns are those where the sign differs between its rows, the others are *fixed*;
//! - it is used when its rows hold every one of the `2^p` sign patterns of its `p` pattern columns (a
//!   pattern may repeat: the first row holding it stands for it). Other rows are kept as plain rows.
//!
//! For an input `x`, the row whose pattern has `+` exactly where `x_j > 0` maximises `Σ_j w_j x_j` over the
//! group (a pattern column with `x_j = 0` adds nothing, so both of its signs tie). That is the group's first
//! maximum when every product and partial sum of the group's rows is exact in f32: every term `w_j x_j` is an
//! integer multiple of `2^q` (`q` from the lowest set bits of `w_j` and `x_j`) and `Σ_j |w_j x_j| <= 2^(24+q)`,
//! the same bound for every row of the group since they share magnitudes. Then each row's logit is its exact
//! real sum, in any order, and the rows that tie with the maximum are exactly those that differ from the
//! chosen pattern only in columns with `x_j = 0`; the first of them is the group's answer. Where that check
//! fails, the group's rows are summed one by one in increasing column order (the incremental executor's full
//! product) and compared as [`crate::cpu::argmax`] does. Plain rows are kept as an ordinary incremental
//! projection. The greedy token is the first maximum over the groups' answers and the plain rows; any NaN or
//! infinite input, or a NaN logit, falls back to the full product and `argmax`.

use std::collections::HashMap;

use crate::cpu::SparseMatrix;
use crate::cpu::math::silu;

/// Pattern columns per group at most (a group's table holds `2^p` row indices).
const MAX_PATTERN_BITS: usize = 12;

/// Zero inputs among a group's pattern columns beyond which the tied rows are not enumerated (the group is
/// summed row by row instead).
const MAX_TIED_BITS: u32 = 6;

/// Groups are used only when they hold at least this fraction of the matrix's nonzeros.
const WORTH: f64 = 0.5;

/// One group of rows equal up to the signs of their pattern columns (see the module docs).
#[derive(Clone, Debug)]
struct Group {
    /// Columns, ascending.
    cols: Vec<u32>,
    /// `|w|` per column.
    mag: Vec<f32>,
    /// Per column: the exponent of the lowest set bit of `|w|`.
    low: Vec<i32>,
    /// Per column: `u8::MAX` for a fixed column, else its bit in the pattern.
    bit: Vec<u8>,
    /// Per column: the sign (±1) of a fixed column (unused for pattern columns).
    sign: Vec<f32>,
    /// Per pattern (bit `b` set: `+` on the `b`-th pattern column): the first row holding it.
    first: Vec<u32>,
    /// Every row of the group, ascending, with its pattern.
    rows: Vec<(u32, u32)>,
}

/// The exponent of the lowest set bit of a finite nonzero f32 (`x = m · 2^low` with `m` odd).
#[inline]
fn low_bit(x: f32) -> i32 {
    let b = x.to_bits();
    let e = ((b >> 23) & 0xff) as i32;
    let m = b & 0x7f_ffff;
    if e == 0 {
        -149 + m.trailing_zeros() as i32 // subnormal
    } else {
        e - 150 + (m | 0x80_0000).trailing_zeros() as i32
    }
}

impl Group {
    /// A row's weight in column `k` of the group.
    #[inline]
    fn weight(&self, k: usize, pattern: u32) -> f32 {
        match self.bit[k] {
            u8::MAX => self.sign[k] * self.mag[k],
            b if pattern >> b & 1 == 1 => self.mag[k],
            _ => -self.mag[k],
        }
    }

    /// The row of pattern `pattern`'s logit as the incremental executor's full product computes it:
    /// increasing columns from `+0`, exact-zero inputs skipped.
    #[inline]
    fn logit(&self, pattern: u32, x: &[f32]) -> f32 {
        let mut acc = 0f32;
        for (k, &c) in self.cols.iter().enumerate() {
            let xv = x[c as usize];
            if xv != 0.0 {
                acc += self.weight(k, pattern) * xv;
            }
        }
        acc
    }

    /// The term of column `k` in the group's best row for input value `v` (f64): `|w v|` in a pattern
    /// column (the best row's sign agrees with `v`), `w v` in a fixed one, `0` for `v = ±0`.
    #[inline]
    fn term(&self, k: usize, v: f32) -> f64 {
        if v == 0.0 {
            return 0.0;
        }
        let t = self.mag[k] as f64 * v.abs() as f64;
        if self.bit[k] != u8::MAX { t } else { t.copysign(self.sign[k] as f64 * v as f64) }
    }

    /// The group's first maximum `(logit, row)` for input `x`, or `None` when a logit is NaN, with the sum
    /// of the best row's terms and `Σ |w x|` (f64; see [`FactoredState`]). Counts the weights multiplied into
    /// `weights`.
    fn best(&self, x: &[f32], weights: &mut u64) -> (Option<(f32, u32)>, f64, f64) {
        let (mut pattern, mut zeros) = (0u32, 0u32);
        let (mut bound, mut sum, mut q) = (0f64, 0f64, i32::MAX);
        let mut finite = true;
        for (k, &c) in self.cols.iter().enumerate() {
            let xv = x[c as usize];
            finite &= xv.is_finite();
            if xv == 0.0 {
                if self.bit[k] != u8::MAX {
                    zeros |= 1 << self.bit[k];
                }
                continue;
            }
            let term = self.mag[k] as f64 * xv.abs() as f64;
            if self.bit[k] != u8::MAX {
                // The chosen row's sign agrees with the input: its term is `|w x|`.
                pattern |= ((xv > 0.0) as u32) << self.bit[k];
                sum += term;
            } else {
                sum += term.copysign(self.sign[k] as f64 * xv as f64);
            }
            bound += term;
            q = q.min(self.low[k] + low_bit(xv));
        }
        *weights += self.cols.len() as u64;
        // Every term is a multiple of 2^q; f32 holds every such multiple up to 2^(24 + q) exactly.
        let exact = finite && (q == i32::MAX || bound <= 2f64.powi(24 + q.max(-1000)));
        if exact && zeros.count_ones() <= MAX_TIED_BITS {
            let mut row = self.first[pattern as usize];
            let mut s = zeros;
            while s != 0 {
                row = row.min(self.first[(pattern | s) as usize]);
                s = (s - 1) & zeros;
            }
            // Exact: every product `|w| |x|` of two f32 is exact in f64, and every partial sum is a multiple
            // of 2^q within 2^(24 + q), so `sum` is the real logit, which f32 holds and the full product's
            // f32 sum (in any order) reaches bit for bit; an all-zero input gives `+0`, as that sum does.
            debug_assert_eq!((sum as f32).to_bits(), self.logit(pattern, x).to_bits());
            return (Some((sum as f32, row)), sum, bound);
        }
        // Row by row, the first maximum as `argmax` takes it.
        *weights += (self.cols.len() * self.rows.len()) as u64;
        let mut best: Option<(f32, u32)> = None;
        for &(r, p) in &self.rows {
            let v = self.logit(p, x);
            if v.is_nan() {
                return (None, sum, bound);
            }
            if best.is_none_or(|(b, _)| v > b) {
                best = Some((v, r));
            }
        }
        (best, sum, bound)
    }
}

/// The sign-product groups among the rows of `m` that `eligible` accepts (see the module docs), and per row
/// whether it is in one. `None` when `m` has no row lists.
fn find_groups(m: &SparseMatrix, eligible: &dyn Fn(u32) -> bool) -> Option<(Vec<Group>, Vec<bool>)> {
    let rows = m.shape().0;
    let (row_ptr, row_cols, row_vals) = m.row_lists()?;
    let flat: Vec<(u32, f32)> = row_cols.into_iter().zip(row_vals).collect();
    let row_entries: Vec<&[(u32, f32)]> = row_ptr.windows(2).map(|w| &flat[w[0] as usize..w[1] as usize]).collect();
    // Rows with the same columns and magnitudes, in order of their first row.
    let mut ids: HashMap<Vec<(u32, u32)>, usize> = HashMap::new();
    let mut members: Vec<Vec<u32>> = Vec::new();
    for (r, e) in row_entries.iter().enumerate() {
        if e.is_empty() || !eligible(r as u32) || e.iter().any(|(_, w)| !w.is_finite()) {
            continue;
        }
        let key: Vec<(u32, u32)> = e.iter().map(|(c, w)| (*c, w.abs().to_bits())).collect();
        let n = ids.len();
        let g = *ids.entry(key).or_insert(n);
        if g == members.len() {
            members.push(Vec::new());
        }
        members[g].push(r as u32);
    }
    let mut groups = Vec::new();
    let mut grouped = vec![false; rows];
    for rs in &members {
        let e0 = &row_entries[rs[0] as usize];
        let varies: Vec<bool> = (0..e0.len()).map(|k| rs.iter().any(|&r| row_entries[r as usize][k].1.is_sign_negative() != e0[k].1.is_sign_negative())).collect();
        let p = varies.iter().filter(|v| **v).count();
        if p > MAX_PATTERN_BITS || rs.len() < 1 << p {
            continue;
        }
        let mut bit = vec![u8::MAX; e0.len()];
        let mut b = 0u8;
        for (k, v) in varies.iter().enumerate() {
            if *v {
                bit[k] = b;
                b += 1;
            }
        }
        let pattern_of = |r: u32| -> u32 {
            row_entries[r as usize].iter().enumerate().filter(|(k, _)| bit[*k] != u8::MAX).fold(0, |acc, (k, (_, w))| acc | ((w.is_sign_positive() as u32) << bit[k]))
        };
        let mut first = vec![u32::MAX; 1 << p];
        let rows_p: Vec<(u32, u32)> = rs.iter().map(|&r| (r, pattern_of(r))).collect();
        for &(r, pat) in &rows_p {
            first[pat as usize] = first[pat as usize].min(r);
        }
        if first.contains(&u32::MAX) {
            continue; // not every sign pattern: the best pattern may be missing
        }
        for &r in rs {
            grouped[r as usize] = true;
        }
        groups.push(Group {
            cols: e0.iter().map(|(c, _)| *c).collect(),
            mag: e0.iter().map(|(_, w)| w.abs()).collect(),
            low: e0.iter().map(|(_, w)| low_bit(*w)).collect(),
            bit,
            sign: e0.iter().map(|(_, w)| if w.is_sign_negative() { -1.0 } else { 1.0 }).collect(),
            first,
            rows: rows_p,
        });
    }
    Some((groups, grouped))
}

/// Per input column `c` of `cols`, the groups reading it: `col_groups[col_ptr[c]..col_ptr[c + 1]]`.
fn column_index(groups: &[Group], cols: usize) -> (Vec<u32>, Vec<u32>) {
    let mut col_ptr = vec![0u32; cols + 1];
    for g in groups {
        for &c in &g.cols {
            col_ptr[c as usize + 1] += 1;
        }
    }
    for c in 0..cols {
        col_ptr[c + 1] += col_ptr[c];
    }
    let mut fill = col_ptr.clone();
    let mut col_groups = vec![0u32; col_ptr[cols] as usize];
    for (gi, g) in groups.iter().enumerate() {
        for &c in &g.cols {
            col_groups[fill[c as usize] as usize] = gi as u32;
            fill[c as usize] += 1;
        }
    }
    (col_ptr, col_groups)
}

/// The groups reading any of `changed`, each once, into `list` (`mark`: per group, scratch, left all false).
fn dirty_groups(col_ptr: &[u32], col_groups: &[u32], changed: &[u32], mark: &mut [bool], list: &mut Vec<u32>) {
    list.clear();
    for &c in changed {
        let c = c as usize;
        for &g in &col_groups[col_ptr[c] as usize..col_ptr[c + 1] as usize] {
            if !mark[g as usize] {
                mark[g as usize] = true;
                list.push(g);
            }
        }
    }
    for &g in list.iter() {
        mark[g as usize] = false;
    }
}

/// One-hot rows before `silu`: the sign-product groups of a projection whose every output `y` is read only as
/// `silu(tap · y)` (a DeltaNet query or key channel with no conv history, tap `> 0`), kept out of the
/// projection and computed by group.
///
/// A woven query or key is the one-hot of address bits: the `2^p` rows of a block are `256·(Σ_j ±x_j -
/// (p-1))`, one per sign pattern, and an address bit that changes changes all of them, though only two
/// outputs change (the old and the new matching row; every other row's `silu` is exactly `-0`). Under the
/// exactness check of [`Group`] (every term a multiple of `2^q`, the rows' `Σ |w x|` within `2^(24+q)`, so
/// every row's sum is its exact real value in any order) and with no zero input among the pattern columns,
/// the best rows are those whose signs agree with the inputs (a pattern may repeat, as often for every
/// pattern), and every other row is at most `y* - 2·min_j |w_j x_j|`. When `tap` times that is below `-90`, every other row's `silu(tap · y)` is
/// exactly `-0` (below `-89`; [`crate::cpu::math::silu`]), so only the best row is computed (in the full
/// product's order, so its value is the full product's bit for bit). Otherwise every row of the group is
/// computed as the full product computes it. The outputs equal the full computation's bit for bit.
#[derive(Clone, Debug)]
pub struct SiluGroups {
    groups: Vec<Group>,
    /// Per group: the tap of its rows (equal for all of them).
    tap: Vec<f32>,
    /// Per group, per sign pattern: the rows holding it (a query read by several key heads repeats them).
    by_pattern: Vec<Vec<Vec<u32>>>,
    col_ptr: Vec<u32>,
    col_groups: Vec<u32>,
    /// Per row of the matrix: it is in a group (the projection keeps the other rows).
    pub grouped: Vec<bool>,
}

/// Per sequence: per group, the rows whose output is not `-0`.
#[derive(Clone, Debug, Default)]
pub struct SiluGroupsState {
    live: Vec<Vec<(u32, f32)>>,
    fresh: bool,
    mark: Vec<bool>,
    dirty: Vec<u32>,
    scratch: Vec<(u32, f32)>,
}

impl SiluGroups {
    /// The groups of `m`'s rows that `eligible` accepts, with at least 2 pattern columns, as many rows for
    /// every sign pattern and one tap (`tap[row]`, finite and `> 0`) for all rows; `None` when there are none.
    pub fn find(m: &SparseMatrix, tap: &[f32], eligible: &dyn Fn(u32) -> bool) -> Option<Self> {
        let ok = |r: u32| eligible(r) && tap[r as usize].is_finite() && tap[r as usize] > 0.0;
        let (all, _) = find_groups(m, &ok)?;
        let mut groups = Vec::new();
        let mut taps = Vec::new();
        let mut by_pattern = Vec::new();
        let mut grouped = vec![false; m.shape().0];
        for g in all {
            let p = g.first.len().trailing_zeros();
            let t = tap[g.rows[0].0 as usize];
            let mut rows_of = vec![Vec::new(); g.first.len()];
            for &(r, pat) in &g.rows {
                rows_of[pat as usize].push(r);
            }
            let even = rows_of.iter().all(|v| v.len() == rows_of[0].len());
            if p < 2 || !even || g.rows.iter().any(|(r, _)| tap[*r as usize].to_bits() != t.to_bits()) {
                continue;
            }
            by_pattern.push(rows_of);
            for (r, _) in &g.rows {
                grouped[*r as usize] = true;
            }
            groups.push(g);
            taps.push(t);
        }
        if groups.is_empty() {
            return None;
        }
        let (col_ptr, col_groups) = column_index(&groups, m.shape().1);
        Some(Self { groups, tap: taps, by_pattern, col_ptr, col_groups, grouped })
    }

    /// `m` without the grouped rows (the same shape; those rows empty).
    pub fn plain(&self, m: &SparseMatrix) -> SparseMatrix {
        m.without_rows(&self.grouped).expect("CSC")
    }

    /// The rows of group `g` whose `silu(tap · y)` is not `-0`, with that value, into `out`. Counts the
    /// weights multiplied.
    fn eval(&self, g: usize, x: &[f32], out: &mut Vec<(u32, f32)>, weights: &mut u64) {
        let gr = &self.groups[g];
        let tap = self.tap[g];
        let act = |y: f32| {
            let acc = tap * y;
            if acc == 0.0 { 0.0 } else { silu(acc) }
        };
        out.clear();
        let (mut pattern, mut zeros) = (0u32, false);
        let (mut bound, mut q, mut min_term) = (0f64, i32::MAX, f64::INFINITY);
        let mut finite = true;
        for (k, &c) in gr.cols.iter().enumerate() {
            let xv = x[c as usize];
            finite &= xv.is_finite();
            if xv == 0.0 {
                zeros |= gr.bit[k] != u8::MAX;
                continue;
            }
            let term = gr.mag[k] as f64 * xv.abs() as f64;
            if gr.bit[k] != u8::MAX {
                if xv > 0.0 {
                    pattern |= 1 << gr.bit[k];
                }
                min_term = min_term.min(term);
            }
            bound += term;
            q = q.min(gr.low[k] + low_bit(xv));
        }
        *weights += gr.cols.len() as u64;
        let exact = finite && (q == i32::MAX || bound <= 2f64.powi(24 + q.max(-1000)));
        if exact && !zeros {
            let y = gr.logit(pattern, x);
            if (tap as f64) * (y as f64 - 2.0 * min_term) < -90.0 {
                let a = act(y);
                if a.to_bits() != QUIET.to_bits() {
                    out.extend(self.by_pattern[g][pattern as usize].iter().map(|r| (*r, a)));
                }
                return;
            }
        }
        *weights += (gr.cols.len() * gr.rows.len()) as u64;
        for &(r, p) in &gr.rows {
            let a = act(gr.logit(p, x));
            if a.to_bits() != QUIET.to_bits() {
                out.push((r, a));
            }
        }
    }

    /// Bring the outputs `act` of every group reading a changed input (`changed`; every group at the first
    /// token) up to date with input `x`.
    pub fn update(&self, st: &mut SiluGroupsState, x: &[f32], changed: &[u32], first: bool, act: &mut crate::incremental::tracked::Tracked, weights: &mut u64) {
        if first || !st.fresh {
            st.live = vec![Vec::new(); self.groups.len()];
            st.mark = vec![false; self.groups.len()];
            for g in 0..self.groups.len() {
                let mut out = Vec::new();
                self.eval(g, x, &mut out, weights);
                for &(r, _) in &self.groups[g].rows {
                    act.set_final(r as usize, out.iter().find(|(o, _)| *o == r).map_or(QUIET, |(_, a)| *a));
                }
                st.live[g] = out;
            }
            st.fresh = true;
            return;
        }
        dirty_groups(&self.col_ptr, &self.col_groups, changed, &mut st.mark, &mut st.dirty);
        for i in 0..st.dirty.len() {
            let g = st.dirty[i] as usize;
            let mut out = std::mem::take(&mut st.scratch);
            self.eval(g, x, &mut out, weights);
            for &(r, _) in &st.live[g] {
                if !out.iter().any(|(o, _)| *o == r) {
                    act.set_final(r as usize, QUIET);
                }
            }
            for &(r, a) in &out {
                act.set_final(r as usize, a);
            }
            st.scratch = std::mem::replace(&mut st.live[g], out);
        }
    }
}

/// What `silu` gives below -89: the output of every row but the best.
const QUIET: f32 = -0.0;

/// An lm_head `[vocab, hidden]` split into sign-product groups and plain rows (see the module docs).
#[derive(Clone, Debug)]
pub struct FactoredHead {
    groups: Vec<Group>,
    /// Per input column: the groups reading it are `col_groups[col_ptr[c]..col_ptr[c + 1]]`.
    col_ptr: Vec<u32>,
    col_groups: Vec<u32>,
    /// Beside `col_groups`: the column's position in that group's `cols`.
    col_pos: Vec<u32>,
    /// The rows in no group (lm_head row indices, ascending).
    pub plain: Vec<u32>,
    /// Those rows as a CSC matrix `[plain.len(), hidden]`: its row `k` is lm_head row `plain[k]`.
    pub plain_matrix: SparseMatrix,
}

impl FactoredHead {
    /// Group the rows of `m` (CSC), or `None` when groups would hold less than half of its nonzeros.
    pub fn find(m: &SparseMatrix) -> Option<Self> {
        let (ptr, idx, vals) = m.csc()?;
        let (rows, cols) = m.shape();
        if m.nnz() == 0 {
            return None;
        }
        let (groups, grouped) = find_groups(m, &|_| true)?;
        let grouped_nnz: usize = groups.iter().map(|g| g.cols.len() * g.rows.len()).sum();
        if (grouped_nnz as f64) < WORTH * m.nnz() as f64 {
            return None;
        }
        let (col_ptr, col_groups) = column_index(&groups, cols);
        let col_pos = (0..cols)
            .flat_map(|c| col_groups[col_ptr[c] as usize..col_ptr[c + 1] as usize].iter().map(move |&g| (c, g)))
            .map(|(c, g)| groups[g as usize].cols.binary_search(&(c as u32)).expect("the group reads the column") as u32)
            .collect();
        // The plain rows as their own CSC matrix (local row k is row plain[k]).
        let plain: Vec<u32> = (0..rows as u32).filter(|r| !grouped[*r as usize]).collect();
        let mut local = vec![u32::MAX; rows];
        for (k, &r) in plain.iter().enumerate() {
            local[r as usize] = k as u32;
        }
        let (mut pp, mut pi, mut pv) = (vec![0u32], Vec::new(), Vec::new());
        for c in 0..cols {
            for p in ptr[c] as usize..ptr[c + 1] as usize {
                let l = local[idx[p] as usize];
                if l != u32::MAX {
                    pi.push(l);
                    pv.push(vals[p]);
                }
            }
            pp.push(pi.len() as u32);
        }
        let plain_matrix = SparseMatrix::from_csc(plain.len(), cols, pp, pi, pv);
        Some(Self { groups, col_ptr, col_groups, col_pos, plain, plain_matrix })
    }

    /// Number of groups.
    pub fn groups(&self) -> usize {
        self.groups.len()
    }
}

/// Per sequence: each group's first maximum, kept from token to token, and per group the sum of its best
/// row's terms and `Σ |w x|`, kept (in f64) as inputs change.
///
/// The kept sum is an upper bound of the group's best logit once a slack covers the f64 updates' rounding
/// and the f32 sum's (the best logit is the exact real sum where [`Group`]'s check holds, within `n 2^-24
/// Σ |w x|` of it otherwise): a changed group whose bound is below a logit already found cannot hold the
/// first maximum, so it is not computed but marked *stale* (its kept answer no longer holds) until a later
/// token computes it; a stale group whose bound reaches the best found is computed. The answer is the first
/// maximum over exact answers only.
#[derive(Clone, Debug, Default)]
pub struct FactoredState {
    /// Per group: `(logit, row)` of its first maximum (valid when `fresh` and not `stale`).
    best: Vec<(f32, u32)>,
    /// Per group: the best row's terms summed, and `Σ |w x|`, updated by each input change.
    sum: Vec<f64>,
    mag: Vec<f64>,
    /// Per group: its input changed since its answer was computed.
    stale: Vec<bool>,
    /// The kept answers and sums hold for the previous token's input.
    fresh: bool,
}

/// Relative slack of a group's kept bound (see [`FactoredState`]): above the f32 sum's rounding (at most
/// `n · 2^-24` of `Σ |w x|` for a group of `n` columns: this covers `n` up to `2^14`; the woven lm_heads' have
/// at most 45) and the f64 updates' (`2^-53` of the sums' magnitude each, summed since the group was last
/// computed).
const BOUND_SLACK: f64 = 1.0 / 1024.0;

impl FactoredState {
    /// Forget the kept answers (the next update computes every group).
    pub fn invalidate(&mut self) {
        self.fresh = false;
    }
}

impl FactoredHead {
    /// The first maximum `(logit, row)` over `floor` (the plain rows' first maximum, if any) and the groups,
    /// for input `x`, whose entries `changed` held `old` at the previous call (every group is computed when
    /// the kept answers are not fresh); `None` when a group's logit is NaN (the kept answers are then dropped).
    pub fn update(&self, st: &mut FactoredState, x: &[f32], changed: &[u32], old: &[f32], floor: Option<(f32, u32)>, weights: &mut u64) -> Option<(f32, u32)> {
        let n = self.groups.len();
        let better = |a: (f32, u32), b: Option<(f32, u32)>| b.is_none_or(|(bv, br)| a.0 > bv || (a.0 == bv && a.1 < br));
        let finite = changed.iter().zip(old).all(|(&c, o)| x[c as usize].is_finite() && o.is_finite());
        if !st.fresh || st.best.len() != n || !finite {
            st.best.clear();
            st.sum = vec![0.0; n];
            st.mag = vec![0.0; n];
            for (gi, g) in self.groups.iter().enumerate() {
                let (b, sum, mag) = g.best(x, weights);
                let Some(b) = b else {
                    st.fresh = false;
                    return None;
                };
                st.best.push(b);
                (st.sum[gi], st.mag[gi]) = (sum, mag);
            }
            st.stale = vec![false; n];
            st.fresh = true;
        } else {
            // Each change moves the sums of the groups reading it, whose answers become stale.
            for (&c, &o) in changed.iter().zip(old) {
                let (c, v) = (c as usize, x[c as usize]);
                for p in self.col_ptr[c] as usize..self.col_ptr[c + 1] as usize {
                    let (g, k) = (self.col_groups[p] as usize, self.col_pos[p] as usize);
                    let gr = &self.groups[g];
                    st.sum[g] += gr.term(k, v) - gr.term(k, o);
                    st.mag[g] += gr.mag[k] as f64 * (v.abs() as f64 - o.abs() as f64);
                    st.stale[g] = true;
                }
            }
        }
        let mut best = floor;
        for g in 0..n {
            if !st.stale[g] && better(st.best[g], best) {
                best = Some(st.best[g]);
            }
        }
        // The stale group of the highest bound first (the likely winner), then every other stale group whose
        // bound reaches the best found so far; the others stay stale.
        #[inline(always)]
        fn bound(st: &FactoredState, g: usize) -> f64 {
            st.sum[g] + st.mag[g].abs() * BOUND_SLACK
        }
        let mut top = (f64::NEG_INFINITY, None);
        for g in 0..n {
            if st.stale[g] {
                let b = bound(st, g);
                if top.1.is_none() || b > top.0 || b.is_nan() {
                    top = (b, Some(g));
                }
            }
        }
        for g in top.1.into_iter().chain(0..n) {
            if !st.stale[g] || best.is_some_and(|(bv, _)| bound(st, g) < bv as f64) {
                continue;
            }
            let (b, sum, mag) = self.groups[g].best(x, weights);
            let Some(b) = b else {
                st.fresh = false;
                return None;
            };
            (st.best[g], st.sum[g], st.mag[g], st.stale[g]) = (b, sum, mag, false);
            if better(b, best) {
                best = Some(b);
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::HostTensor;

    fn low(x: f32) -> i32 {
        low_bit(x)
    }

    #[test]
    fn lowest_set_bits() {
        assert_eq!((low(1.0), low(-1.0), low(3.0), low(0.5), low(6.0), low(0.75)), (0, 0, 0, -1, 1, -2));
        assert_eq!(low(f32::from_bits(1)), -149);
        assert_eq!(low(2f32.powi(100)), 100);
    }

    /// A head with a 3-bit field (8 rows with a shared bias and a fixed column), a 1-bit field whose two rows
    /// repeat (first rows stand for their patterns), a row of its own (a group of one) and an empty row
    /// (plain); random ±1/0/fractional inputs.
    #[test]
    fn first_maximum_equals_the_full_argmax() {
        let hidden = 9;
        let mut rows: Vec<Vec<f32>> = Vec::new();
        for v in 0..8 {
            let mut r = vec![0.0; hidden];
            for j in 0..3 {
                r[j] = if v >> j & 1 == 1 { 1.0 } else { -1.0 };
            }
            r[3] = -2.0; // fixed
            r[8] = 0.5; // bias
            rows.push(r);
        }
        for v in [1, 0, 1, 0] {
            let mut r = vec![0.0; hidden];
            r[4] = if v == 1 { 4.0 } else { -4.0 };
            r[8] = 1.0;
            rows.push(r);
        }
        rows.push((0..hidden).map(|j| j as f32 * 0.25).collect()); // a group of one row
        rows.push(vec![0.0; hidden]); // empty: plain, logit 0
        let vocab = rows.len();
        let t = HostTensor::new(vec![vocab, hidden], rows.concat());
        let m = SparseMatrix::from_dense(&t);
        let f = FactoredHead::find(&m).expect("groups hold most weights");
        assert_eq!(f.groups(), 3);
        assert_eq!(f.plain, vec![13]);
        let mut st = FactoredState::default();
        let mut seed = 7u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut x = vec![1f32; hidden];
        let mut w = 0u64;
        for step in 0..3000 {
            let (mut changed, mut old) = (Vec::new(), Vec::new());
            for _ in 0..(rnd() % 3) {
                let j = (rnd() % hidden as u64) as usize;
                if changed.contains(&(j as u32)) {
                    continue; // an entry changes at most once per token, as in a `Tracked` vector
                }
                changed.push(j as u32);
                old.push(x[j]);
                x[j] = match rnd() % 6 {
                    0 => 0.0,
                    1 => -0.0,
                    2 => 0.5,
                    3 => -1.0,
                    4 => 2f32.powi(30), // the exactness bound fails: row by row
                    _ => 1.0,
                };
            }
            let full = m.matvec(&x);
            let plain_logits = f.plain_matrix.matvec(&x);
            // The plain row's logit as the floor on odd steps (the groups may then skip more), none on even.
            let floor = (step % 2 == 1).then(|| (plain_logits[0], f.plain[0]));
            let mut want = (f32::NEG_INFINITY, u32::MAX);
            if let Some((v, r)) = f.update(&mut st, &x, &changed, &old, floor, &mut w) {
                want = (v, r);
            }
            for (k, &r) in f.plain.iter().enumerate() {
                let v = plain_logits[k];
                if v > want.0 || (v == want.0 && r < want.1) {
                    want = (v, r);
                }
            }
            assert_eq!(want.1, crate::cpu::argmax(&full), "step {step}: x {x:?} logits {full:?}");
            assert_eq!(want.0, full[want.1 as usize], "step {step}");
        }
    }
}

#[cfg(test)]
mod silu_group_tests {
    use super::*;
    use crate::incremental::tracked::Tracked;
    use crate::tensor::HostTensor;

    /// A woven-style one-hot query (3 address bits, every pattern twice, a bias column) beside a plain row;
    /// random ±1 and odd inputs: the grouped outputs equal `silu(tap · (W x))` bit for bit at every step.
    #[test]
    fn grouped_outputs_equal_the_full_product() {
        let hidden = 6;
        let mut rows: Vec<Vec<f32>> = Vec::new();
        for rep in 0..2 {
            for v in 0..8 {
                let mut r = vec![0.0; hidden];
                for j in 0..3 {
                    r[j + 1] = if v >> j & 1 == 1 { 256.0 } else { -256.0 };
                }
                r[0] = -512.0; // bias on the constant column: 256·(Σ ±x - 2)
                let _ = rep;
                rows.push(r);
            }
        }
        rows.push(vec![0.0, 0.5, 0.0, 0.0, 1.0, 2.0]); // plain
        let n = rows.len();
        let m = SparseMatrix::from_dense(&HostTensor::new(vec![n, hidden], rows.concat()));
        let tap = vec![1.0f32; n];
        let g = SiluGroups::find(&m, &tap, &|_| true).expect("a group");
        assert_eq!(g.grouped.iter().filter(|x| **x).count(), 16);
        let mut st = SiluGroupsState::default();
        let mut act = Tracked::zeros(n);
        let mut x = vec![1f32, 1.0, -1.0, 1.0, -1.0, 1.0];
        let mut seed = 11u64;
        let mut w = 0u64;
        for step in 0..2000 {
            let mut changed = Vec::new();
            if step > 0 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let j = 1 + (seed % 5) as usize;
                x[j] = match (seed >> 8) % 7 {
                    0 => 0.0,
                    1 => 0.5,
                    2 => 3.0,
                    3 | 4 => -1.0,
                    _ => 1.0,
                };
                changed.push(j as u32);
            }
            act.begin();
            g.update(&mut st, &x, &changed, step == 0, &mut act, &mut w);
            act.finish();
            let y = m.matvec(&x);
            for r in 0..n {
                if !g.grouped[r] {
                    continue;
                }
                let acc = y[r];
                let want = if acc == 0.0 { 0.0 } else { silu(acc) };
                assert_eq!(act.v[r].to_bits(), want.to_bits(), "step {step}, row {r}, x {x:?}");
            }
        }
    }
}
