//! [`IncrementalModel`]: the layers as incremental stages; [`IncrementalState`]: one sequence's kept
//! activations and caches.

use super::classes::RowClasses;
use super::factored::{FactoredHead, FactoredState, SiluGroups, SiluGroupsState};
use super::lookup::{LookupRows, LookupState};
use super::exact::{squares_cap, weight_exp, InputGrid, ENTRY_LIMIT, EXACT_LIMIT};
use super::tracked::Tracked;
use crate::config::{LayerType, Qwen35Config};
use crate::error::CpuError;
use crate::sparse::model::{attend, conv_history, l2_normalise, read_head, rope_inv_freq, sigmoid, silu, softplus, write_head_settled, CheckedWeights};
use crate::sparse::SparseMatrix;
use crate::tensor::{HostTensor, WeightMap};

/// A projection `[rows, cols]` in CSC layout with its weights' binary places, and its row classes where
/// grouping rows pays ([`RowClasses`]).
struct Projection {
    m: SparseMatrix,
    /// Every weight is an integer multiple of `2^-exp` (`None`: a weight is not finite; no incremental sums).
    exp: Option<i32>,
    /// Per column: the largest `|w|`, bounding every product `w (x_new - x_old)` of the column.
    col_max: Vec<f64>,
    /// The rows grouped into classes, with the extended matrix's per-column largest `|w|`: incremental
    /// updates run on the extended matrix (see [`RowClasses`]).
    classes: Option<(RowClasses, Vec<f64>)>,
    /// Per column: it holds a nonzero. Changes of the other inputs are ignored, and their values left out
    /// of the input's grid (they meet no weight).
    used: Vec<bool>,
    /// The output feeds only `silu` (an MLP's `gate_proj`): a row whose old and new values both have an exact
    /// zero `silu` ([`silu_quiet`]) is updated but not reported as changed.
    silu_input: bool,
    /// Blocks of rows that read one small set of columns, kept out of `m` and updated by their live rows
    /// ([`LookupRows`]; `gate_proj` only). Per block also: which columns it reads.
    lookups: Vec<(LookupRows, Vec<bool>)>,
}

/// `silu(x)` is exactly `-0` for every `x` below this (`sparse::model::silu`).
const SILU_ZERO_BELOW: f32 = -89.0;

/// `silu(x)` is an exact zero: `x` below [`SILU_ZERO_BELOW`] (`-0`) or `x = ±0` (`silu(±0) = ±0`). A change
/// between two such values changes nothing after the SwiGLU product but the sign of a zero, which no later
/// stage sees (see [`swiglu`]). A woven unit's gate moves between `0` and `-128` whenever an input of an
/// unselected AND changes: half of the MLP's changes on NES games were such zero-sign flips.
#[inline(always)]
pub(super) fn silu_quiet(x: f32) -> bool {
    x < SILU_ZERO_BELOW || x == 0.0
}

/// Per column of a CSC matrix: the largest `|w|`.
fn column_max(m: &SparseMatrix) -> Vec<f64> {
    let (ptr, _, vals) = m.csc().expect("CSC");
    ptr.windows(2).map(|w| vals[w[0] as usize..w[1] as usize].iter().fold(0f64, |a, v| a.max(v.abs() as f64))).collect()
}

/// The full product `y = W x` (CSC, columns in increasing order: the sparse executor's sum) with every row's
/// `Σ |w x|` in f64 (exact for the grids used here) into `abs`.
fn full_product(m: &SparseMatrix, x: &[f32], abs: &mut [f64]) -> Vec<f32> {
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

/// Add `x`'s changes to `y = W x` (CSC arrays `ptr`/`idx`/`vals`, per-column largest `|w|` `col_max`),
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
fn scatter_changes(m: &SparseMatrix, col_max: &[f64], y: &mut Tracked, abs: &mut [f64], over: &mut usize, sel: &[(u32, f32)], xv: &[f32], lim: f64, row_lim: f64, n: &mut Counters) -> bool {
    let (ptr, idx, vals) = m.csc().expect("CSC");
    if sel.iter().all(|&(j, o)| xv[j as usize].abs() == o.abs()) {
        // Only signs changed: every intermediate input x' has the old magnitudes, so every partial sum stays
        // within its row's unchanged Σ |w x| (within the bound), and each product w (x_new - x_old) =
        // ±2 w x_old has the significant bits of w x_old: all exact, unchecked.
        for &(j, o) in sel.iter() {
            let d = xv[j as usize] - o;
            if d == 0.0 {
                continue; // +0 <-> -0: every product is a signed zero, which leaves every sum as it was
            }
            let (a, b) = (ptr[j as usize] as usize, ptr[j as usize + 1] as usize);
            y.scatter(&idx[a..b], &vals[a..b], d);
            n.weights_read += (b - a) as u64;
        }
        return *over == 0;
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
        let (a, b) = (ptr[j] as usize, ptr[j + 1] as usize);
        y.scatter_with_bound(&idx[a..b], &vals[a..b], d, abs, da);
        n.weights_read += (b - a) as u64;
    }
    // `over` was 0: only the rows touched now can be beyond the bound.
    *over = y.ch().iter().filter(|&&i| abs[i as usize] > row_lim).count();
    ops_exact && *over == 0
}

impl Projection {
    fn new(t: &HostTensor) -> Self {
        Self::from_matrix(SparseMatrix::from_dense(t))
    }

    /// From a CSC matrix.
    fn from_matrix(m: SparseMatrix) -> Self {
        let (_, _, vals) = m.csc().expect("CSC");
        let exp = weight_exp(vals);
        let col_max = column_max(&m);
        let classes = RowClasses::find(&m).map(|rc| {
            let cm = column_max(&rc.ext);
            (rc, cm)
        });
        let (ptr, _, _) = m.csc().expect("CSC");
        let used = ptr.windows(2).map(|w| w[1] > w[0]).collect();
        Self { m, exp, col_max, classes, used, silu_input: false, lookups: Vec::new() }
    }

    /// This projection as an MLP's `gate_proj`: its output feeds only `silu` (see `Projection::silu_input`);
    /// its table lookups are taken out of `m` and updated by their live rows ([`LookupRows`]).
    fn feeding_silu(self) -> Self {
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
        p.silu_input = true;
        p
    }

    /// Nonzero weights, the lookup blocks' included.
    fn nnz(&self) -> usize {
        self.m.nnz() + self.lookups.iter().map(|(b, _)| b.nnz()).sum::<usize>()
    }

    /// The lookup blocks' rows brought to `x` after an incremental update of the others (before `y`'s finish).
    fn update_lookups(&self, st: &mut ProjState, x: &Tracked, n: &mut Counters) {
        for ((b, reads), ls) in self.lookups.iter().zip(&mut st.lookups) {
            n.weights_read += b.update(ls, &x.v, x.ch(), reads, &mut st.y);
        }
    }

    fn rows(&self) -> usize {
        self.m.shape().0
    }

    /// Bring `st.y` up to date with `x` (whose changes this token are `x.ch()`/`x.old()`): incrementally where
    /// exact (see [`scatter_changes`]), else the full product.
    ///
    /// With row classes the incremental update runs on the extended matrix `E` while its every row's bound
    /// is within half the exact range: then both parts of an output row, `(E x)[class]` and
    /// `(E x)[classes + row]`, and their sum are exact, and the sum is the full product's value. Where a
    /// full product finds an extended row beyond that, updates run on the original rows until the next one.
    fn update(&self, st: &mut ProjState, x: &Tracked, first: bool, n: &mut Counters) {
        st.y.begin();
        if self.m.nnz() == 0 && self.lookups.is_empty() {
            return;
        }
        let mut full = first || !st.exact;
        if !full {
            st.sel.clear();
            for (k, &j) in x.ch().iter().enumerate() {
                if self.used[j as usize] {
                    let o = x.old()[k];
                    st.grid.update(o, x.v[j as usize]);
                    st.sel.push((j, o));
                }
            }
            full = !st.grid.exact();
        }
        if !full {
            let lim = st.limit;
            match (&self.classes, &mut st.ext) {
                (Some((rc, cm)), Some(e)) if e.active => {
                    e.y.begin();
                    if scatter_changes(&rc.ext, cm, &mut e.y, &mut e.abs, &mut e.over, &st.sel, &x.v, lim, lim / 2.0, n) {
                        e.y.finish();
                        let nc = rc.classes;
                        let quiet = self.silu_input;
                        let put = |y: &mut Tracked, r: usize, v: f32| {
                            if quiet && silu_quiet(v) && silu_quiet(y.v[r]) {
                                y.set_quietly(r, v);
                            } else {
                                y.set(r, v);
                            }
                        };
                        for &k in e.y.ch() {
                            let k = k as usize;
                            if k < nc {
                                for &r in rc.rows_of(k) {
                                    put(&mut st.y, r as usize, e.y.v[k] + e.y.v[nc + r as usize]);
                                }
                            } else {
                                let r = k - nc;
                                put(&mut st.y, r, e.y.v[rc.class_of[r] as usize] + e.y.v[k]);
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
                    if scatter_changes(&self.m, &self.col_max, &mut st.y, &mut st.abs, &mut st.over, &st.sel, &x.v, lim, lim, n) {
                        self.update_lookups(st, x, n);
                        if self.silu_input {
                            st.y.finish_except(silu_quiet);
                        } else {
                            st.y.finish();
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
        if let Some(wexp) = self.exp {
            let amax = st.abs.iter().cloned().fold(0.0, f64::max);
            let used: Vec<f32> = x.v.iter().zip(&self.used).map(|(v, u)| if *u { *v } else { 0.0 }).collect();
            st.grid.calibrate_with(&used, ENTRY_LIMIT, Some(&|e| amax * 2f64.powi(wexp + e)));
            st.limit = EXACT_LIMIT / st.grid.scale() / 2f64.powi(wexp);
            st.over = st.abs.iter().filter(|a| **a > st.limit).count();
            if let (Some((rc, _)), Some(e)) = (&self.classes, &mut st.ext) {
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
struct ProjState {
    y: Tracked,
    grid: InputGrid,
    abs: Vec<f64>,
    /// `2^24` units of `2^-(exp + e)`, in real terms: the bound of every product, partial sum and row `Σ |w x|`.
    limit: f64,
    over: usize,
    /// The last product was computed (or updated) exactly: the next may be incremental.
    exact: bool,
    /// Scratch: this token's changed inputs that meet a weight `(column, old value)`, in the order added.
    sel: Vec<(u32, f32)>,
    /// With row classes: `E x`, its rows' `Σ |w x|`, the count beyond half the exact range, and whether updates
    /// use it.
    ext: Option<ExtState>,
    /// Per lookup block of the projection: its live rows and table.
    lookups: Vec<LookupState>,
}

#[derive(Clone)]
struct ExtState {
    y: Tracked,
    abs: Vec<f64>,
    over: usize,
    /// Updates run on the extended matrix (set at each full product: every extended row within half the
    /// exact range).
    active: bool,
}

impl ProjState {
    fn new(p: &Projection) -> Self {
        let ext = p.classes.as_ref().map(|(rc, _)| {
            let r = rc.ext.shape().0;
            ExtState { y: Tracked::zeros(r), abs: vec![0.0; r], over: 0, active: false }
        });
        let lookups = vec![LookupState::default(); p.lookups.len()];
        Self { y: Tracked::zeros(p.rows()), grid: InputGrid::default(), abs: vec![0.0; p.rows()], limit: 0.0, over: 0, exact: false, sel: Vec::new(), ext, lookups }
    }
}

/// A set of residual entries, as a mask `[hidden]` and a list.
struct Reads {
    mask: Vec<bool>,
    list: Vec<u32>,
}

impl Reads {
    /// The nonzero columns of `ms`, the columns `extra` and those already in `mask`.
    fn of(mut mask: Vec<bool>, ms: &[&SparseMatrix], extra: &[u32]) -> Self {
        ms.iter().for_each(|m| mark_columns(m, &mut mask));
        extra.iter().for_each(|&c| mask[c as usize] = true);
        let list = (0..mask.len() as u32).filter(|&i| mask[i as usize]).collect();
        Self { mask, list }
    }
}

/// Per sequence, per RMSNorm: `Σ x²`, its grid, the factor `1 / sqrt(mean + eps)` and the normed output.
#[derive(Clone)]
struct NormState {
    ss: f32,
    grid: InputGrid,
    r: f32,
    x: Tracked,
}

impl NormState {
    fn new(n: usize) -> Self {
        Self { ss: 0.0, grid: InputGrid::default(), r: 0.0, x: Tracked::zeros(n) }
    }

    /// Zero-centred RMSNorm (`one_plus_w` = `1 + w`) of `h`, incrementally: the sparse executor's
    /// `x * (1 / sqrt(mean(x^2) + eps)) * (1 + w)` on every entry that can have changed.
    /// With `reads`, only those entries of the output are computed (the others are left as they were: no
    /// stage reads them).
    fn update(&mut self, h: &Tracked, one_plus_w: &[f32], eps: f32, first: bool, reads: Option<&Reads>) {
        let n = h.v.len();
        self.x.begin();
        let mut full = first || !self.grid.exact();
        if !full {
            // A sign flip (a woven ±1 slot) keeps the entry on the grid and its square: it changes neither.
            let mut ss = self.ss;
            for (k, &i) in h.ch().iter().enumerate() {
                let (o, v) = (h.old()[k], h.v[i as usize]);
                if (o.to_bits() ^ v.to_bits()) != 1 << 31 {
                    self.grid.update(o, v);
                    ss = ss - o * o + v * v;
                }
            }
            full = !self.grid.exact();
            // On the grid every partial sum of squares is exact, so skipping `- a + a` changes no bit.
            self.ss = ss;
        }
        if full {
            self.ss = h.v.iter().map(|v| v * v).sum::<f32>();
            self.grid.calibrate(&h.v, squares_cap(n));
        }
        let r = 1.0 / (self.ss / n as f32 + eps).sqrt();
        if first || r.to_bits() != self.r.to_bits() {
            self.r = r;
            match reads {
                Some(rd) => rd.list.iter().for_each(|&i| self.x.set(i as usize, (h.v[i as usize] * r) * one_plus_w[i as usize])),
                None => (0..n).for_each(|i| self.x.set(i, (h.v[i] * r) * one_plus_w[i])),
            }
        } else {
            for &i in h.ch() {
                let i = i as usize;
                if reads.is_none_or(|rd| rd.mask[i]) {
                    self.x.set(i, (h.v[i] * r) * one_plus_w[i]);
                }
            }
        }
        self.x.finish_single_writes();
    }
}

/// The SwiGLU product `silu(g) * u` (0 where either is 0, as the sparse executor), entry by entry, where
/// `g` or `u` changed.
///
/// A zero stays the zero it was: an entry whose old and new values are both zero keeps its old bits (`+0` or
/// `-0`) and is not reported as changed. Its only reader, `down_proj`, skips exact-zero inputs in the full
/// product and adds nothing for them incrementally, so the sign of a zero never reaches a sum; so too a gate
/// that moved between two [`silu_quiet`] values is not reported and its product not recomputed.
#[inline(never)]
fn swiglu(g: &Tracked, u: &Tracked, act: &mut Tracked, first: bool) {
    act.begin();
    let f = |i: usize| {
        let (g, u) = (g.v[i], u.v[i]);
        if g == 0.0 || u == 0.0 { 0.0 } else { silu(g) * u }
    };
    if first {
        for i in 0..act.v.len() {
            act.set(i, f(i));
        }
    } else {
        for &i in g.ch().iter().chain(u.ch()) {
            let i = i as usize;
            let v = f(i);
            if !(v == 0.0 && act.v[i] == 0.0) {
                act.set(i, v);
            }
        }
    }
    act.finish_single_writes();
}

/// `out = a + b`, entry by entry, where either changed.
/// Whether layer `layer`'s mixer, given inputs that did not change, outputs what it output at the previous
/// token: a DeltaNet adding exactly 0, or one whose every head neither writes (`beta = 0`) nor decays and that
/// has no conv channel with history (whose window moves every token); full attention only when its `o_proj` is
/// all zero (its cache grows every token).
fn mixer_idle(layer: &Layer, ls: &LayerState) -> bool {
    match (&layer.mixer, &ls.mixer) {
        (Mixer::Linear(d), MixerState::Linear(ds)) => {
            (d.qkv.m.nnz() == 0 && d.onehot.is_none()) || (d.history.is_empty() && ds.writers.members.is_empty() && ds.decaying.members.is_empty())
        }
        (Mixer::Full(a), MixerState::Full(_)) => a.o.m.nnz() == 0,
        _ => false,
    }
}

/// Marks the columns of `m` that hold a nonzero weight.
fn mark_columns(m: &SparseMatrix, touch: &mut [bool]) {
    let (ptr, _, _) = m.csc().expect("CSC");
    for (j, w) in ptr.windows(2).enumerate() {
        touch[j] |= w[1] > w[0];
    }
}

/// For each source of residual values (0 the embedding, `l + 1` the output of layer `l`) and each entry
/// `[hidden]`: the first later layer that reads or writes the entry (`touched[m][i]`), else the final norm
/// (`L`), whose mean square takes every entry.
fn next_touchers(touched: &[Vec<bool>], hidden: usize) -> Vec<Vec<u16>> {
    let nl = touched.len();
    let mut next = vec![vec![nl as u16; hidden]; nl + 1];
    for s in (0..nl).rev() {
        for i in 0..hidden {
            next[s][i] = if touched[s][i] { s as u16 } else { next[s + 1][i] };
        }
    }
    next
}

/// Sends entry `i`'s new value `v` at the output of source `s` (0 the embedding, `l + 1` layer `l`) to the
/// layer inputs in `ins` (`ins[2 (m - s)]` is the input of layer `m`, `m = L` the final norm's) that need it.
/// A layer that neither reads nor writes the entry passes it on unchanged and only its RMSNorms see it, through
/// its square. So a value whose magnitude is that of the one the next reading or writing layer `t` holds (a
/// sign flip, as every woven ±1 slot's change) goes to `t` alone, and the layers in between keep a value of the
/// right magnitude, which gives their norms the same sums of squares bit for bit; any other value, and every
/// value of the first token (`all`), goes to every input from `s` to `t`.
///
/// A layer passes an entry on as `x + 0 + 0` (its mixer's and MLP's unwritten rows are `+0`): `x` itself, but
/// for `-0`, which becomes `+0`; so past at least one such layer a `-0` arrives as `+0`.
#[inline]
fn route(next: &[u16], ins: &mut [Tracked], s: usize, i: usize, v: f32, all: bool) {
    let t = next[i] as usize;
    const MAGNITUDE: u32 = 0x7FFF_FFFF;
    let passed = if v.to_bits() == (-0f32).to_bits() { 0.0 } else { v };
    if all || (v.to_bits() & MAGNITUDE) != (ins[2 * (t - s)].v[i].to_bits() & MAGNITUDE) {
        ins[0].set(i, v);
        for m in s + 1..=t {
            ins[2 * (m - s)].set(i, passed);
        }
    } else {
        ins[2 * (t - s)].set(i, if t == s { v } else { passed });
    }
}

fn residual_add(a: &Tracked, b: &Tracked, out: &mut Tracked, first: bool) {
    out.begin();
    if first {
        for i in 0..out.v.len() {
            out.set(i, a.v[i] + b.v[i]);
        }
    } else {
        for &i in a.ch().iter().chain(b.ch()) {
            let i = i as usize;
            out.set(i, a.v[i] + b.v[i]);
        }
    }
    out.finish_single_writes();
}

struct DeltaNet {
    /// `in_proj_qkv` `[conv_dim, hidden]`; with `v_rows`, its q and k rows only (the v rows empty).
    qkv: Projection,
    /// When no v channel has conv history: the v rows `[nv * d_v]` of `in_proj_qkv` as row lists, computed
    /// only for a head that writes (v is read nowhere else), in the full product's order.
    v_rows: Option<RowLists>,
    /// With `v_rows`: per value head `h`, the input columns its v rows read are
    /// `v_cols.1[v_cols.0[h]..v_cols.0[h + 1]]` (a change of one unsettles the head, see `DeltaState::settled`).
    v_cols: Option<(Vec<u32>, Vec<u32>)>,
    /// `in_proj_z`, or when every value head's `d_v` rows are identical ([`z_per_head`]) one row per head
    /// `[nv, hidden]` (`z_per_head` set): equal rows give equal products bit for bit, so each head's gate
    /// is that row's value in every entry.
    z: Projection,
    z_per_head: bool,
    b: Projection,
    a: Projection,
    out: Projection,
    /// `[conv_dim, kernel]`.
    conv: Vec<f32>,
    /// The current tap of each channel `[conv_dim]` (`conv[ch, kernel - 1]`).
    last_tap: Vec<f32>,
    /// Conv channels with a nonzero `in_proj_qkv` row and a nonzero tap before the current one: their
    /// output depends on the window, so they are recomputed every token.
    history: Vec<u32>,
    /// One-hot query and key rows, computed by group and kept out of `qkv` (see [`SiluGroups`]).
    onehot: Option<SiluGroups>,
    has_history: Vec<bool>,
    dt_bias: Vec<f32>,
    /// `-exp(A_log)` per value head.
    neg_a: Vec<f32>,
    norm_w: Vec<f32>,
    /// Every gated-norm weight is finite (a head gated off then outputs only zeros).
    norm_w_finite: bool,
}

/// Rows of a matrix as lists of `(column, weight)`, columns ascending: `cols[ptr[r]..ptr[r + 1]]`.
struct RowLists {
    ptr: Vec<u32>,
    cols: Vec<u32>,
    vals: Vec<f32>,
}

impl RowLists {
    /// Row `r`'s product with `x` as the full product sums it: increasing columns from `+0`, exact-zero
    /// inputs skipped.
    #[inline]
    fn dot(&self, r: usize, x: &[f32]) -> f32 {
        let (a, b) = (self.ptr[r] as usize, self.ptr[r + 1] as usize);
        let mut acc = 0f32;
        for (c, w) in self.cols[a..b].iter().zip(&self.vals[a..b]) {
            let xv = x[*c as usize];
            if xv != 0.0 {
                acc += w * xv;
            }
        }
        acc
    }
}

/// Per value head (`d_v` rows each) of `rows`: the input columns its rows read, ascending, each once, as
/// offsets and a column list.
fn v_columns(rows: &RowLists, dv: usize) -> (Vec<u32>, Vec<u32>) {
    let heads = (rows.ptr.len() - 1) / dv;
    let mut ptr = vec![0u32];
    let mut list = Vec::new();
    for h in 0..heads {
        let (a, b) = (rows.ptr[h * dv] as usize, rows.ptr[(h + 1) * dv] as usize);
        let mut cols = rows.cols[a..b].to_vec();
        cols.sort_unstable();
        cols.dedup();
        list.extend(cols);
        ptr.push(list.len() as u32);
    }
    (ptr, list)
}

/// Split a CSC matrix at row `at`: the rows above as a CSC matrix of the same shape (the others empty), the
/// rows from `at` on as row lists (row `r - at`).
fn split_rows(m: &SparseMatrix, at: usize) -> (SparseMatrix, RowLists) {
    let (ptr, idx, vals) = m.csc().expect("CSC");
    let (rows, cols) = m.shape();
    let (mut pp, mut pi, mut pv) = (vec![0u32], Vec::new(), Vec::new());
    for c in 0..cols {
        for p in ptr[c] as usize..ptr[c + 1] as usize {
            if (idx[p] as usize) < at {
                pi.push(idx[p]);
                pv.push(vals[p]);
            }
        }
        pp.push(pi.len() as u32);
    }
    let (row_ptr, row_cols, row_vals) = m.row_lists().expect("CSC");
    let base = row_ptr[at.min(rows)];
    let lists = RowLists { ptr: row_ptr[at.min(rows)..].iter().map(|p| p - base).collect(), cols: row_cols[base as usize..].to_vec(), vals: row_vals[base as usize..].to_vec() };
    (SparseMatrix::from_csc(rows, cols, pp, pi, pv), lists)
}

/// `in_proj_z` `[nv * dv, hidden]` (CSC) as one row per value head `[nv, hidden]`, when each head's `dv`
/// rows are identical (bit for bit); `None` otherwise.
fn z_per_head(m: &SparseMatrix, dv: usize) -> Option<SparseMatrix> {
    let (ptr, idx, vals) = m.csc()?;
    let (rows, cols) = m.shape();
    if dv <= 1 || rows % dv != 0 {
        return None;
    }
    let (mut pp, mut pi, mut pv) = (vec![0u32], Vec::new(), Vec::new());
    for c in 0..cols {
        let (a, b) = (ptr[c] as usize, ptr[c + 1] as usize);
        // Column c: every head holds either all of its dv rows with one weight, or none.
        let mut p = a;
        while p < b {
            let r = idx[p] as usize;
            let (h, w) = (r / dv, vals[p]);
            if !r.is_multiple_of(dv) || p + dv > b {
                return None;
            }
            for k in 0..dv {
                if idx[p + k] as usize != h * dv + k || vals[p + k].to_bits() != w.to_bits() {
                    return None;
                }
            }
            pi.push(h as u32);
            pv.push(w);
            p += dv;
        }
        pp.push(pi.len() as u32);
    }
    Some(SparseMatrix::from_csc(rows / dv, cols, pp, pi, pv))
}

struct Attention {
    q: Projection,
    k: Projection,
    v: Projection,
    o: Projection,
    q_norm: Vec<f32>,
    k_norm: Vec<f32>,
}

enum Mixer {
    Linear(DeltaNet),
    Full(Attention),
}

struct Layer {
    input_norm: Vec<f32>,
    post_norm: Vec<f32>,
    /// The entries of each norm's output that a projection reads (the mixer's, the MLP's): only those are
    /// computed; the others enter the norm's sum of squares alone.
    mixer_reads: Reads,
    mlp_reads: Reads,
    mixer: Mixer,
    gate: Projection,
    up: Projection,
    down: Projection,
}

/// Work counted over a session (for benchmarks): products updated incrementally or computed in full, the
/// nonzero weights they multiplied, and the DeltaNet writes skipped as settled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub tokens: u64,
    pub incremental_products: u64,
    pub full_products: u64,
    pub weights_read: u64,
    /// DeltaNet head writes skipped as settled (see `DeltaState::settled`): each would have changed nothing.
    pub settled_writes: u64,
}

/// One token's embedding row (see `IncrementalModel::embed_rows`).
enum EmbedRow {
    Diff(Vec<(u32, f32)>),
    Whole(Vec<f32>),
}

/// A Qwen3.5 model prepared for incremental decoding.
pub struct IncrementalModel {
    cfg: Qwen35Config,
    /// The embedding's row 0 `[hidden]`.
    embed_row0: Vec<f32>,
    /// Per token: its embedding row as the entries where it differs from row 0 (ascending), or whole when it
    /// differs in more than a quarter of them (the woven embedding is far smaller this way than dense).
    embed_rows: Vec<EmbedRow>,
    layers: Vec<Layer>,
    /// Where a residual entry goes next ([`next_touchers`]): row `s` (0 the embedding, `l + 1` layer `l`'s
    /// output) `[hidden]`, the first later layer that reads or writes the entry, or `L` (the final norm).
    next_toucher: Vec<Vec<u16>>,
    final_norm: Vec<f32>,
    lm_head: Projection,
    /// The lm_head's sign-product groups and its other rows, for the greedy token ([`FactoredHead`]).
    head: Option<SplitHead>,
    inv_freq: Vec<f32>,
}

/// The lm_head as sign-product groups plus the plain rows as an incremental projection.
struct SplitHead {
    groups: FactoredHead,
    plain: Projection,
}

/// Per sequence: the groups' kept maxima, the plain rows' logits and their first maximum.
#[derive(Clone)]
struct SplitHeadState {
    groups: FactoredState,
    plain: ProjState,
    plain_argmax: ArgmaxBlocks,
    /// The last token ran the full lm_head instead ([`IncrementalModel::step`]): recompute everything.
    stale: bool,
}

#[derive(Clone)]
struct DeltaState {
    qkv: ProjState,
    z: ProjState,
    b: ProjState,
    a: ProjState,
    out: ProjState,
    /// `[conv_dim, kernel - 1]`, oldest first (history channels only).
    window: Vec<f32>,
    /// Conv + SiLU output `[conv_dim]`: q, k, v.
    act: Tracked,
    /// Per key head: the normalised q and k as their nonzero entries (see `sparse::model::l2_scaled`).
    qh: Vec<Option<Vec<(u32, f32)>>>,
    kh: Vec<Option<Vec<(u32, f32)>>>,
    beta: Vec<f32>,
    decay: Vec<f32>,
    /// `[nv, d_k, d_v]`.
    s: Vec<f32>,
    /// Per value head: every state entry is finite and within [`STATE_BOUND`], so that a read `S^T q`
    /// (`|q| <= 1`, at most `d_k` terms) is finite.
    bounded: Vec<bool>,
    /// Per value head: its output `o` is `+0` in every entry.
    o_zero: Vec<bool>,
    /// Scratch `[d_v]`: a head's gate `z` when `in_proj_z` is held per head.
    z_head: Vec<f32>,
    /// Scratch `[d_v]`: a writing head's v when v is computed per head (`DeltaNet::v_rows`).
    v_head: Vec<f32>,
    /// Per value head (with `DeltaNet::v_rows`): its last write found `v - S^T k` exactly zero (a write that
    /// changed nothing), and since then neither its state, nor its key head's k channels, nor an input its v
    /// rows read has changed: the write of this token would compute the same `v` and `S^T k` and change
    /// nothing again, so it is skipped (and `v` not computed).
    settled: Vec<bool>,
    /// Per value head: the call (`calls`) at which it became settled; per input column: the last call that
    /// changed it. A settled head is unsettled at its next write when a column its v rows read changed since.
    settled_at: Vec<u64>,
    changed_at: Vec<u64>,
    /// Calls of this mixer so far.
    calls: u64,
    /// Per key head, q then k (`2 nk` lists): the channels of the head (`0..d_k`, ascending) whose act is
    /// nonzero, kept from the act's changes: a head's q or k is normalised from them, not from all `d_k`.
    nonzero: Vec<Vec<u32>>,
    /// Scratch: a normalised q or k before it is kept (see `sparse::model::l2_normalise`).
    l2_scratch: Vec<(u32, f32)>,
    /// Scratch `[2 d_v]` of [`write_head_settled`].
    write_scratch: Vec<f32>,
    /// The one-hot query and key groups' live rows (`DeltaNet::onehot`).
    onehot: SiluGroupsState,
    /// Gated-norm output of every value head `[nv * d_v]`, the input of `out_proj`.
    o: Tracked,
    /// Per key head: its q or k input changed this token / its normalised q changed; per value head: its z
    /// changed. Scratch, reset every token.
    q_dirty: Vec<bool>,
    k_dirty: Vec<bool>,
    q_changed: Vec<bool>,
    z_dirty: Vec<bool>,
    /// The value heads with `beta != 0` (they write every token) and with `decay != 1`, as sets: members and
    /// each head's position in them (`u32::MAX`: absent). Updated when `b` or `a` changes.
    writers: HeadSet,
    decaying: HeadSet,
    /// The value heads a new query can change: all but those whose gate is off (with a bounded state) and
    /// whose output is `+0` already (`o_zero`), which output `+0` for any query. Kept at each visit; the
    /// only other changes of its terms (the gate, the state) visit the head.
    lit: HeadSet,
    /// Scratch: the value heads to visit this token, and a mark per head.
    visit: Vec<u32>,
    visit_mark: Vec<bool>,
    head_out: Vec<f32>,
}

/// A set of head indices with O(1) insert and remove.
#[derive(Clone)]
struct HeadSet {
    members: Vec<u32>,
    pos: Vec<u32>,
}

impl HeadSet {
    fn new(n: usize) -> Self {
        Self { members: Vec::new(), pos: vec![u32::MAX; n] }
    }
    fn put(&mut self, h: usize, present: bool) {
        match (self.pos[h] != u32::MAX, present) {
            (false, true) => {
                self.pos[h] = self.members.len() as u32;
                self.members.push(h as u32);
            }
            (true, false) => {
                let at = self.pos[h] as usize;
                let last = *self.members.last().expect("a member");
                self.members.swap_remove(at);
                if last as usize != h {
                    self.pos[last as usize] = at as u32;
                }
                self.pos[h] = u32::MAX;
            }
            _ => {}
        }
    }
}

#[derive(Clone)]
struct AttnState {
    q: ProjState,
    k: ProjState,
    v: ProjState,
    o: ProjState,
    attn: Tracked,
    kc: Vec<Vec<f32>>,
    vc: Vec<Vec<f32>>,
}

#[derive(Clone)]
enum MixerState {
    Linear(Box<DeltaState>),
    Full(Box<AttnState>),
}

#[derive(Clone)]
struct LayerState {
    norm1: NormState,
    mixer: MixerState,
    norm2: NormState,
    gate: ProjState,
    up: ProjState,
    act: Tracked,
    down: ProjState,
}

/// One sequence: every activation of the previous token, the DeltaNet states and windows, the KV caches.
#[derive(Clone)]
pub struct IncrementalState {
    /// Tokens consumed so far (the next token's position id).
    pub position: usize,
    prev_token: Option<u32>,
    /// The residual stream (`2 L + 2`): the embedding's output, then per layer its input and the sum after its
    /// mixer, then the final norm's input. A layer's input is up to date at the entries the layer reads or
    /// writes; elsewhere it may hold a stale value of the same magnitude (see [`route`]).
    h: Vec<Tracked>,
    /// A zero vector that never changes: the mixer output of a layer whose mixer adds exactly 0.
    zero: Tracked,
    layers: Vec<LayerState>,
    final_norm: NormState,
    logits: ProjState,
    /// The logits' first maximum, kept per block.
    argmax: ArgmaxBlocks,
    /// With a split lm_head: what [`IncrementalModel::step_argmax`] keeps instead of the logits.
    head: Option<SplitHeadState>,
    counters: Counters,
    /// Wall time per layer and stage, where enabled ([`IncrementalState::profile_stages`]), and when this
    /// token's final norm started.
    profile: Option<StageTimes>,
    head_start: Option<std::time::Instant>,
}

/// The stages of a layer that [`StageTimes`] times, in order.
pub const STAGES: [&str; 6] = ["mixer", "post_norm", "gate_proj", "up_proj+swiglu", "down_proj", "routing"];

/// Where decoding time goes: nanoseconds per layer and stage ([`STAGES`]: the input norm, the token mixer
/// and its residual add; the post-attention norm; `gate_proj` with its lookups; `up_proj` and the SwiGLU
/// product; `down_proj`; the routing of the layer's changed outputs to the layers that need them), and for the
/// final norm with the lm_head and argmax, summed over the tokens fed since profiling was enabled. Timing costs
/// about two `Instant::now` calls per stage and token: a profiled run is slower than a plain one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StageTimes {
    /// `[layers][STAGES.len()]`, nanoseconds.
    pub layers: Vec<[u64; STAGES.len()]>,
    /// The final norm, the lm_head and the argmax, nanoseconds.
    pub head: u64,
    /// Tokens timed.
    pub tokens: u64,
}

impl StageTimes {
    /// The sum over layers of each stage, nanoseconds.
    pub fn per_stage(&self) -> [u64; STAGES.len()] {
        let mut t = [0u64; STAGES.len()];
        for l in &self.layers {
            t.iter_mut().zip(l).for_each(|(a, b)| *a += b);
        }
        t
    }
}

/// Adds the time since `*t` to `*acc` and restarts `t` (when timing).
#[inline(always)]
fn lap(t: &mut Option<std::time::Instant>, acc: Option<&mut u64>) {
    if let (Some(t0), Some(acc)) = (t.as_mut(), acc) {
        let now = std::time::Instant::now();
        *acc += (now - *t0).as_nanos() as u64;
        *t0 = now;
    }
}

/// The bound on a DeltaNet state entry under which a read of at most 2^20 rows is finite in f32.
const STATE_BOUND: f32 = 1e30;

/// Logits per block of the incremental argmax.
const ARGMAX_BLOCK: usize = 64;

/// The first maximum of `v[lo..hi]` ignoring NaN (`(NaN, lo)` if all are NaN).
fn block_max(v: &[f32], lo: usize, hi: usize) -> (f32, u32) {
    let mut best = (f32::NAN, lo as u32);
    for (i, x) in v[lo..hi].iter().enumerate() {
        if *x > best.0 || (best.0.is_nan() && !x.is_nan()) {
            best = (*x, (lo + i) as u32);
        }
    }
    best
}

/// The first maximum of a vector kept per block of [`ARGMAX_BLOCK`] entries, updated from the entries that
/// changed: [`crate::sparse::argmax`]'s answer (`torch.argmax`'s: the first maximum, index 0 when the first
/// entry is NaN, NaN skipped otherwise) at the cost of the changes, not of the vector.
#[derive(Clone, Debug, Default)]
struct ArgmaxBlocks {
    /// Per block: its first maximum `(value, index)`, NaN skipped (`(NaN, first index)`: all NaN).
    blocks: Vec<(f32, u32)>,
    /// Scratch: per block, whether it must be scanned again.
    rescan: Vec<u8>,
}

impl ArgmaxBlocks {
    /// Forget the blocks: the next update scans the whole vector.
    fn reset(&mut self) {
        self.blocks.clear();
    }

    /// The argmax of `v`, where only the entries `changed` differ from the `v` of the previous update.
    fn update(&mut self, v: &[f32], changed: &[u32]) -> u32 {
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

impl IncrementalState {
    /// Time every layer's stages from now on (see [`StageTimes`]).
    pub fn profile_stages(&mut self) {
        self.profile.get_or_insert_with(StageTimes::default);
    }

    /// Adds the time since this token's final norm started to the profile's `head`.
    fn time_head(&mut self) {
        if let (Some(p), Some(t0)) = (&mut self.profile, self.head_start.take()) {
            p.head += t0.elapsed().as_nanos() as u64;
        }
    }

    /// The stage times since [`Self::profile_stages`], if enabled.
    pub fn stage_times(&self) -> Option<&StageTimes> {
        self.profile.as_ref()
    }

    /// Work done so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }
}

impl IncrementalModel {
    /// Prepare `weights` (named as `Qwen3_5ForCausalLM` names them) for incremental decoding. Errors name a
    /// missing or misshapen tensor.
    pub fn new(cfg: &Qwen35Config, weights: &WeightMap) -> Result<Self, CpuError> {
        let w = CheckedWeights::new(cfg, weights)?;
        let get = |name: &str| w.get(name);
        let proj = |name: &str| -> Result<Projection, CpuError> { Ok(Projection::new(get(name)?)) };
        let one_plus = |name: &str| w.one_plus(name);
        let mut layers = Vec::new();
        // Per layer: the residual entries it reads (a nonzero column of a projection of its norms' outputs)
        // or writes (a nonzero row of its mixer's output projection or of down_proj).
        let mut touched: Vec<Vec<bool>> = Vec::new();
        for (i, lt) in cfg.layer_types.iter().enumerate() {
            let p = format!("model.layers.{i}");
            let mut touch = vec![false; cfg.hidden_size];
            // The columns of in_proj_qkv and in_proj_z, before they are split.
            let mut mixer_cols = vec![false; cfg.hidden_size];
            let mixer = match lt {
                LayerType::LinearAttention => {
                    let a = format!("{p}.linear_attn");
                    let qkv_full = SparseMatrix::from_dense(get(&format!("{a}.in_proj_qkv.weight"))?);
                    mark_columns(&qkv_full, &mut touch);
                    mark_columns(&qkv_full, &mut mixer_cols);
                    let conv = get(&format!("{a}.conv1d.weight"))?.data.clone();
                    let k = cfg.linear_conv_kernel_dim;
                    let has_history = conv_history(&conv, k);
                    let key_dim = cfg.linear_num_key_heads * cfg.linear_key_head_dim;
                    let last_tap: Vec<f32> = conv.chunks_exact(k).map(|w| w[k - 1]).collect();
                    let onehot = SiluGroups::find(&qkv_full, &last_tap, &|r| (r as usize) < 2 * key_dim && !has_history[r as usize]);
                    let qkv_full = match &onehot {
                        Some(g) => g.plain(&qkv_full),
                        None => qkv_full,
                    };
                    let (qkv, v_rows) = if has_history[2 * key_dim..].iter().any(|h| *h) {
                        (Projection::from_matrix(qkv_full), None)
                    } else {
                        let (qk, v) = split_rows(&qkv_full, 2 * key_dim);
                        (Projection::from_matrix(qk), Some(v))
                    };
                    let v_cols = v_rows.as_ref().map(|rows| v_columns(rows, cfg.linear_value_head_dim));
                    let history = qkv.m.nonempty_rows().into_iter().filter(|ch| has_history[*ch as usize]).collect();
                    let norm_w = get(&format!("{a}.norm.weight"))?.data.clone();
                    let z_full = SparseMatrix::from_dense(get(&format!("{a}.in_proj_z.weight"))?);
                    mark_columns(&z_full, &mut touch);
                    mark_columns(&z_full, &mut mixer_cols);
                    let (z, z_per_head) = match z_per_head(&z_full, cfg.linear_value_head_dim) {
                        Some(m) => (Projection::from_matrix(m), true),
                        None => (Projection::from_matrix(z_full), false),
                    };
                    Mixer::Linear(DeltaNet {
                        qkv,
                        v_rows,
                        v_cols,
                        z,
                        z_per_head,
                        b: proj(&format!("{a}.in_proj_b.weight"))?,
                        a: proj(&format!("{a}.in_proj_a.weight"))?,
                        out: proj(&format!("{a}.out_proj.weight"))?,
                        last_tap,
                        onehot,
                        conv,
                        history,
                        has_history,
                        dt_bias: get(&format!("{a}.dt_bias"))?.data.clone(),
                        neg_a: get(&format!("{a}.A_log"))?.data.iter().map(|v| -v.exp()).collect(),
                        norm_w_finite: norm_w.iter().all(|w| w.is_finite()),
                        norm_w,
                    })
                }
                LayerType::FullAttention => {
                    let a = format!("{p}.self_attn");
                    Mixer::Full(Attention {
                        q: proj(&format!("{a}.q_proj.weight"))?,
                        k: proj(&format!("{a}.k_proj.weight"))?,
                        v: proj(&format!("{a}.v_proj.weight"))?,
                        o: proj(&format!("{a}.o_proj.weight"))?,
                        q_norm: one_plus(&format!("{a}.q_norm.weight"))?,
                        k_norm: one_plus(&format!("{a}.k_norm.weight"))?,
                    })
                }
            };
            let (gate, up) = (proj(&format!("{p}.mlp.gate_proj.weight"))?.feeding_silu(), proj(&format!("{p}.mlp.up_proj.weight"))?);
            let mixer_reads = match &mixer {
                Mixer::Linear(d) => Reads::of(mixer_cols, &[&d.b.m, &d.a.m], &[]),
                Mixer::Full(a) => Reads::of(mixer_cols, &[&a.q.m, &a.k.m, &a.v.m], &[]),
            };
            let lookup_cols: Vec<u32> = gate.lookups.iter().flat_map(|(b, _)| b.cols.iter().copied()).collect();
            let mlp_reads = Reads::of(vec![false; cfg.hidden_size], &[&gate.m, &up.m], &lookup_cols);
            let layer = Layer {
                input_norm: one_plus(&format!("{p}.input_layernorm.weight"))?,
                post_norm: one_plus(&format!("{p}.post_attention_layernorm.weight"))?,
                mixer_reads,
                mlp_reads,
                mixer,
                gate,
                up,
                down: proj(&format!("{p}.mlp.down_proj.weight"))?,
            };
            let reads: Vec<&Projection> = match &layer.mixer {
                Mixer::Linear(d) => vec![&d.b, &d.a],
                Mixer::Full(a) => vec![&a.q, &a.k, &a.v],
            };
            for pr in reads.into_iter().chain([&layer.gate, &layer.up]) {
                mark_columns(&pr.m, &mut touch);
                pr.lookups.iter().flat_map(|(b, _)| &b.cols).for_each(|&c| touch[c as usize] = true);
            }
            let writes = match &layer.mixer {
                Mixer::Linear(d) => &d.out.m,
                Mixer::Full(a) => &a.o.m,
            };
            for m in [writes, &layer.down.m] {
                for r in m.nonempty_rows() {
                    touch[r as usize] = true;
                }
            }
            touched.push(touch);
            layers.push(layer);
        }
        let next_toucher = next_touchers(&touched, cfg.hidden_size);
        let embed = get("model.embed_tokens.weight")?;
        let lm_head = if cfg.tie_word_embeddings { Projection::new(embed) } else { proj("lm_head.weight")? };
        let head = FactoredHead::find(&lm_head.m).map(|groups| {
            let plain = Projection::from_matrix(groups.plain_matrix.clone());
            SplitHead { groups, plain }
        });
        let hsz = cfg.hidden_size;
        let embed_row0 = embed.data[..hsz].to_vec();
        let embed_rows = embed
            .data
            .chunks_exact(hsz)
            .map(|row| {
                let d: Vec<(u32, f32)> = row.iter().zip(&embed_row0).enumerate().filter(|(_, (a, b))| a.to_bits() != b.to_bits()).map(|(i, (a, _))| (i as u32, *a)).collect();
                if d.len() <= hsz / 4 { EmbedRow::Diff(d) } else { EmbedRow::Whole(row.to_vec()) }
            })
            .collect();
        Ok(Self { cfg: cfg.clone(), embed_row0, embed_rows, layers, next_toucher, final_norm: one_plus("model.norm.weight")?, lm_head, head, inv_freq: rope_inv_freq(cfg) })
    }

    /// The model's configuration.
    pub fn config(&self) -> &Qwen35Config {
        &self.cfg
    }

    /// Nonzero weights held (all projections, embedding excluded): what a full pass multiplies.
    pub fn nonzero_weights(&self) -> usize {
        let mut n = self.lm_head.m.nnz();
        for l in &self.layers {
            n += l.gate.nnz() + l.up.m.nnz() + l.down.m.nnz();
            n += match &l.mixer {
                Mixer::Linear(d) => d.qkv.m.nnz() + d.v_rows.as_ref().map_or(0, |r| r.vals.len()) + d.z.m.nnz() + d.a.m.nnz() + d.b.m.nnz() + d.out.m.nnz(),
                Mixer::Full(a) => a.q.m.nnz() + a.k.m.nnz() + a.v.m.nnz() + a.o.m.nnz(),
            };
        }
        n
    }

    /// A new sequence: nothing computed yet (the first token runs every stage in full).
    pub fn new_state(&self) -> IncrementalState {
        let c = &self.cfg;
        let hsz = c.hidden_size;
        let (nk, nv, dk, dv) = (c.linear_num_key_heads, c.linear_num_value_heads, c.linear_key_head_dim, c.linear_value_head_dim);
        let layers = self
            .layers
            .iter()
            .map(|l| LayerState {
                norm1: NormState::new(hsz),
                mixer: match &l.mixer {
                    Mixer::Linear(d) => MixerState::Linear(Box::new(DeltaState {
                        qkv: ProjState::new(&d.qkv),
                        z: ProjState::new(&d.z),
                        b: ProjState::new(&d.b),
                        a: ProjState::new(&d.a),
                        out: ProjState::new(&d.out),
                        window: vec![0.0; c.linear_conv_dim() * (c.linear_conv_kernel_dim - 1)],
                        act: Tracked::zeros(c.linear_conv_dim()),
                        qh: vec![None; nk],
                        kh: vec![None; nk],
                        beta: vec![0.0; nv],
                        decay: vec![1.0; nv],
                        s: vec![0.0; nv * dk * dv],
                        bounded: vec![true; nv],
                        o_zero: vec![true; nv],
                        o: Tracked::zeros(nv * dv),
                        q_dirty: vec![false; nk],
                        k_dirty: vec![false; nk],
                        q_changed: vec![false; nk],
                        z_dirty: vec![false; nv],
                        writers: HeadSet::new(nv),
                        decaying: HeadSet::new(nv),
                        lit: HeadSet::new(nv),
                        visit: Vec::new(),
                        visit_mark: vec![false; nv],
                        head_out: vec![0.0; dv],
                        z_head: vec![0.0; dv],
                        v_head: vec![0.0; dv],
                        write_scratch: vec![0.0; 2 * dv],
                        settled: vec![false; nv],
                        settled_at: vec![0; nv],
                        changed_at: vec![0; hsz],
                        calls: 0,
                        l2_scratch: Vec::new(),
                        nonzero: vec![Vec::new(); 2 * nk],
                        onehot: SiluGroupsState::default(),
                    })),
                    Mixer::Full(a) => MixerState::Full(Box::new(AttnState {
                        q: ProjState::new(&a.q),
                        k: ProjState::new(&a.k),
                        v: ProjState::new(&a.v),
                        o: ProjState::new(&a.o),
                        attn: Tracked::zeros(c.num_attention_heads * c.head_dim),
                        kc: Vec::new(),
                        vc: Vec::new(),
                    })),
                },
                norm2: NormState::new(hsz),
                gate: ProjState::new(&l.gate),
                up: ProjState::new(&l.up),
                act: Tracked::zeros(l.gate.rows()),
                down: ProjState::new(&l.down),
            })
            .collect();
        IncrementalState {
            position: 0,
            prev_token: None,
            h: (0..2 * self.layers.len() + 2).map(|_| Tracked::zeros(hsz)).collect(),
            zero: Tracked::zeros(hsz),
            layers,
            final_norm: NormState::new(hsz),
            logits: ProjState::new(&self.lm_head),
            argmax: ArgmaxBlocks::default(),
            head: self.head.as_ref().map(|h| SplitHeadState { groups: FactoredState::default(), plain: ProjState::new(&h.plain), plain_argmax: ArgmaxBlocks::default(), stale: true }),
            counters: Counters::default(),
            profile: None,
            head_start: None,
        }
    }

    /// Feed one token; returns the logits `[vocab]` of the next token. Errors on a token id outside the
    /// vocabulary.
    pub fn step<'s>(&self, st: &'s mut IncrementalState, token: u32) -> Result<&'s [f32], CpuError> {
        let first = self.forward(st, token)?;
        self.lm_head.update(&mut st.logits, &st.final_norm.x, first, &mut st.counters);
        st.argmax.reset(); // this token's changes are not in the argmax blocks: rebuild them next time
        if let Some(h) = &mut st.head {
            h.stale = true;
        }
        st.time_head();
        Ok(&st.logits.y.v)
    }

    /// Feed one token; returns the greedy next token: [`crate::sparse::argmax`]'s (the first maximum, as
    /// `torch.argmax`). With a split lm_head ([`FactoredHead`]) from the groups' kept maxima and the plain
    /// rows' logits; else from the logits kept per block, so that only blocks holding a changed logit are
    /// scanned.
    pub fn step_argmax(&self, st: &mut IncrementalState, token: u32) -> Result<u32, CpuError> {
        let next = self.step_argmax_untimed(st, token);
        st.time_head();
        next
    }

    fn step_argmax_untimed(&self, st: &mut IncrementalState, token: u32) -> Result<u32, CpuError> {
        let first = self.forward(st, token)?;
        let (Some(split), Some(hs)) = (&self.head, &mut st.head) else {
            self.lm_head.update(&mut st.logits, &st.final_norm.x, first, &mut st.counters);
            return Ok(st.argmax.update(&st.logits.y.v, st.logits.y.ch()));
        };
        // The full logits are not kept: a later `step` computes them in full.
        st.logits.exact = false;
        st.argmax.reset();
        let x = &st.final_norm.x;
        let n = &mut st.counters;
        let redo = first || hs.stale;
        if redo {
            hs.groups.invalidate();
            hs.plain_argmax.reset();
        }
        hs.stale = false;
        split.plain.update(&mut hs.plain, x, redo, n);
        let mut plain_best = None;
        if !split.groups.plain.is_empty() {
            let v = &hs.plain.y.v;
            let i = hs.plain_argmax.update(v, hs.plain.y.ch()) as usize;
            if v[0].is_nan() {
                if split.groups.plain[0] == 0 {
                    return Ok(0); // argmax keeps index 0: nothing compares greater than NaN
                }
                return Ok(self.full_argmax(x, n));
            }
            plain_best = Some((v[i], split.groups.plain[i]));
        }
        // The plain rows' maximum also lets the groups skip those that cannot reach it.
        let floor = plain_best.filter(|(v, _)| !v.is_nan());
        let Some(group_best) = split.groups.update(&mut hs.groups, &x.v, x.ch(), x.old(), floor, &mut n.weights_read) else {
            return Ok(self.full_argmax(x, n));
        };
        Ok(match plain_best {
            Some((pv, pr)) if pv > group_best.0 || (pv == group_best.0 && pr < group_best.1) => pr,
            _ => group_best.1,
        })
    }

    /// The full lm_head product and its first maximum (the split head's fallback on NaN).
    fn full_argmax(&self, x: &Tracked, n: &mut Counters) -> u32 {
        let mut abs = vec![0f64; self.lm_head.rows()];
        let y = full_product(&self.lm_head.m, &x.v, &mut abs);
        n.full_products += 1;
        n.weights_read += self.lm_head.m.nnz() as u64;
        crate::sparse::argmax(&y)
    }

    /// Every stage up to the final norm (`st.final_norm.x`); returns whether this was the first token.
    fn forward(&self, st: &mut IncrementalState, token: u32) -> Result<bool, CpuError> {
        let c = &self.cfg;
        let t = token as usize;
        if t >= c.vocab_size {
            return Err(CpuError::Token { token, vocab: c.vocab_size });
        }
        let eps = c.rms_norm_eps as f32;
        let first = st.prev_token.is_none();
        let n = &mut st.counters;
        n.tokens += 1;
        if let Some(p) = &mut st.profile {
            p.layers.resize(self.layers.len(), [0; STAGES.len()]);
            p.tokens += 1;
        }
        let mut clock = st.profile.as_ref().map(|_| std::time::Instant::now());
        // Embedding: rows differ from row 0 only at their listed entries, so two rows differ at most there.
        let h0 = &mut st.h[0];
        h0.begin();
        match (st.prev_token.map(|p| &self.embed_rows[p as usize]), &self.embed_rows[t]) {
            (Some(EmbedRow::Diff(a)), EmbedRow::Diff(b)) => {
                // The previous row's entries back to this row's value (row 0's unless listed), then this row's.
                for &(i, _) in a {
                    let v = match b.binary_search_by_key(&i, |e| e.0) {
                        Ok(k) => b[k].1,
                        Err(_) => self.embed_row0[i as usize],
                    };
                    h0.set(i as usize, v);
                }
                for &(i, v) in b {
                    h0.set(i as usize, v);
                }
                h0.finish_single_writes();
            }
            (_, EmbedRow::Whole(row)) => h0.replace(row),
            (_, EmbedRow::Diff(b)) => {
                let mut row = self.embed_row0.clone();
                for &(i, v) in b {
                    row[i as usize] = v;
                }
                h0.replace(&row);
            }
        }
        st.prev_token = Some(token);
        let pos = st.position;
        let hsz = c.hidden_size;
        // Every layer input and the final norm's input (the odd entries of `h`) take this token's changes
        // from the embedding and the layers below them.
        for k in (1..st.h.len()).step_by(2) {
            st.h[k].begin();
        }
        {
            let (emb, ins) = st.h.split_at_mut(1);
            let next = &self.next_toucher[0];
            if first {
                for i in 0..hsz {
                    route(next, ins, 0, i, emb[0].v[i], true);
                }
            } else {
                for &i in emb[0].ch() {
                    let i = i as usize;
                    route(next, ins, 0, i, emb[0].v[i], false);
                }
            }
        }
        for (l, (layer, ls)) in self.layers.iter().zip(st.layers.iter_mut()).enumerate() {
            let mut times = st.profile.as_mut().map(|p| &mut p.layers[l]);
            if let Some(t) = &mut clock {
                *t = std::time::Instant::now(); // the time between layers (skips) goes to no stage
            }
            let (lo, ins) = st.h.split_at_mut(2 * l + 3);
            let (lo, mid) = lo.split_at_mut(2 * l + 2);
            let h_in = &mut lo[2 * l + 1];
            h_in.finish();
            let h_in = &*h_in;
            let h_mid = &mut mid[0];
            if !first && h_in.ch().is_empty() && mixer_idle(layer, ls) {
                // Nothing the layer reads changed, and its mixer neither writes nor decays a state: every
                // stage's output is the previous token's (the next token's stages start their change lists
                // afresh).
                continue;
            }
            ls.norm1.update(h_in, &layer.input_norm, eps, first, Some(&layer.mixer_reads));
            let mixed: &Tracked = match (&layer.mixer, &mut ls.mixer) {
                (Mixer::Linear(d), MixerState::Linear(ds)) => {
                    if d.qkv.m.nnz() == 0 && d.onehot.is_none() {
                        // q, k and v are exactly 0 at every position: the mixer adds exactly 0.
                        &st.zero
                    } else {
                        self.deltanet(d, ds, &ls.norm1.x, first, n);
                        &ds.out.y
                    }
                }
                (Mixer::Full(a), MixerState::Full(s)) => {
                    if a.o.m.nnz() == 0 {
                        // An all-zero o_proj adds exactly 0 whatever the attention computes.
                        &st.zero
                    } else {
                        self.attention(a, s, &ls.norm1.x, pos, first, n);
                        &s.o.y
                    }
                }
                _ => unreachable!("state built from the same layers"),
            };
            residual_add(h_in, mixed, h_mid, first);
            lap(&mut clock, times.as_mut().map(|t| &mut t[0]));
            if !first && h_mid.ch().is_empty() {
                continue; // the MLP's input is the previous token's, and so is its output
            }
            ls.norm2.update(h_mid, &layer.post_norm, eps, first, Some(&layer.mlp_reads));
            lap(&mut clock, times.as_mut().map(|t| &mut t[1]));
            layer.gate.update(&mut ls.gate, &ls.norm2.x, first, n);
            lap(&mut clock, times.as_mut().map(|t| &mut t[2]));
            layer.up.update(&mut ls.up, &ls.norm2.x, first, n);
            swiglu(&ls.gate.y, &ls.up.y, &mut ls.act, first);
            lap(&mut clock, times.as_mut().map(|t| &mut t[3]));
            layer.down.update(&mut ls.down, &ls.act, first, n);
            lap(&mut clock, times.as_mut().map(|t| &mut t[4]));
            // The layer's output, `h_mid + down`, where either changed: to the inputs that need it.
            let next = &self.next_toucher[l + 1];
            let down = &ls.down.y;
            if first {
                for i in 0..hsz {
                    route(next, ins, l + 1, i, h_mid.v[i] + down.v[i], true);
                }
            } else {
                for &i in h_mid.ch().iter().chain(down.ch()) {
                    let i = i as usize;
                    route(next, ins, l + 1, i, h_mid.v[i] + down.v[i], false);
                }
            }
            lap(&mut clock, times.as_mut().map(|t| &mut t[5]));
        }
        st.head_start = clock.map(|_| std::time::Instant::now());
        let last = &mut st.h[2 * self.layers.len() + 1];
        last.finish();
        st.final_norm.update(last, &self.final_norm, eps, first, None);
        st.position += 1;
        Ok(first)
    }

    #[inline(never)]
    fn deltanet(&self, d: &DeltaNet, ds: &mut DeltaState, x: &Tracked, first: bool, n: &mut Counters) {
        let c = &self.cfg;
        let (nk, nv, dk, dv) = (c.linear_num_key_heads, c.linear_num_value_heads, c.linear_key_head_dim, c.linear_value_head_dim);
        let kk = c.linear_conv_kernel_dim;
        let key_dim = nk * dk;
        let eps = c.rms_norm_eps as f32;
        d.qkv.update(&mut ds.qkv, x, first, n);
        d.z.update(&mut ds.z, x, first, n);
        d.b.update(&mut ds.b, x, first, n);
        d.a.update(&mut ds.a, x, first, n);
        // Depthwise causal conv, then SiLU (the sparse executor's operations).
        let mixed = &ds.qkv.y;
        ds.act.begin();
        let last_tap = |ch: usize| {
            let acc = d.last_tap[ch] * mixed.v[ch];
            if acc == 0.0 { 0.0 } else { silu(acc) }
        };
        if first {
            let grouped = |ch: usize| d.onehot.as_ref().is_some_and(|g| g.grouped[ch]);
            for ch in 0..mixed.v.len() {
                if !d.has_history[ch] && !grouped(ch) {
                    ds.act.set(ch, last_tap(ch));
                }
            }
        } else {
            for &ch in mixed.ch() {
                if !d.has_history[ch as usize] {
                    ds.act.set(ch as usize, last_tap(ch as usize));
                }
            }
        }
        for &ch in &d.history {
            let ch = ch as usize;
            let w = &d.conv[ch * kk..(ch + 1) * kk];
            let win = &mut ds.window[ch * (kk - 1)..(ch + 1) * (kk - 1)];
            let mut acc = 0f32;
            for j in 0..kk - 1 {
                acc += w[j] * win[j];
            }
            acc += w[kk - 1] * mixed.v[ch];
            ds.act.set(ch, if acc == 0.0 { 0.0 } else { silu(acc) });
            win.rotate_left(1);
            win[kk - 2] = mixed.v[ch];
        }
        if let Some(g) = &d.onehot {
            g.update(&mut ds.onehot, &x.v, x.ch(), first, &mut ds.act, &mut n.weights_read);
        }
        ds.act.finish_single_writes();
        // Which heads' inputs changed.
        let DeltaState { q_dirty, k_dirty, q_changed, z_dirty, .. } = ds;
        for f in [&mut *q_dirty, &mut *k_dirty, &mut *q_changed, &mut *z_dirty] {
            f.fill(first);
        }
        if first {
            for (h, nz) in ds.nonzero.iter_mut().enumerate() {
                let base = h * dk;
                nz.clear();
                nz.extend((0..dk as u32).filter(|&j| ds.act.v[base + j as usize] != 0.0));
            }
        }
        for (k, &ch) in ds.act.ch().iter().enumerate() {
            let ch = ch as usize;
            if ch < 2 * key_dim {
                if ch < key_dim {
                    q_dirty[ch / dk] = true;
                } else {
                    k_dirty[(ch - key_dim) / dk] = true;
                }
                let (was, is) = (ds.act.old()[k] != 0.0, ds.act.v[ch] != 0.0);
                if was != is && !first {
                    let (nz, j) = (&mut ds.nonzero[ch / dk], (ch % dk) as u32);
                    match (nz.binary_search(&j), is) {
                        (Err(at), true) => nz.insert(at, j),
                        (Ok(at), false) => {
                            nz.remove(at);
                        }
                        _ => unreachable!("the nonzero list follows the act"),
                    }
                }
            }
        }
        let z_rows = if d.z_per_head { 1 } else { dv };
        for &j in ds.z.y.ch() {
            z_dirty[j as usize / z_rows] = true;
        }
        // Heads whose write may do something again (see `DeltaState::settled`): the inputs' changes are
        // stamped here and checked at a settled head's write; a changed key unsettles its heads now.
        if d.v_cols.is_some() {
            ds.calls += 1;
            if first {
                ds.settled.fill(false);
            } else {
                for &c in x.ch() {
                    ds.changed_at[c as usize] = ds.calls;
                }
                let per_k = nv / nk;
                for (ki, _) in k_dirty.iter().enumerate().filter(|(_, d)| **d) {
                    ds.settled[ki * per_k..(ki + 1) * per_k].fill(false);
                }
            }
        }
        let scale = (1.0 / (dk as f64).sqrt()) as f32;
        // Normalised q and k into a scratch list, kept (swapped in) where they changed: no allocation.
        let mut buf = std::mem::take(&mut ds.l2_scratch);
        let put = |slot: &mut Option<Vec<(u32, f32)>>, some: bool, buf: &mut Vec<(u32, f32)>| match (some, slot.as_mut()) {
            (false, _) => *slot = None,
            (true, Some(v)) => std::mem::swap(v, buf),
            (true, None) => *slot = Some(std::mem::take(buf)),
        };
        for i in 0..nk {
            let gather = |h: usize, buf: &mut Vec<(u32, f32)>| {
                buf.clear();
                buf.extend(ds.nonzero[h].iter().map(|&j| (j, ds.act.v[h * dk + j as usize])));
            };
            if q_dirty[i] {
                gather(i, &mut buf);
                let some = l2_normalise(&mut buf, scale);
                let same = match &ds.qh[i] {
                    None => !some,
                    Some(old) => some && old.len() == buf.len() && old.iter().zip(&buf).all(|(x, y)| x.0 == y.0 && x.1.to_bits() == y.1.to_bits()),
                };
                if !same {
                    q_changed[i] = true;
                    put(&mut ds.qh[i], some, &mut buf);
                }
            }
            if k_dirty[i] {
                gather(nk + i, &mut buf);
                let some = l2_normalise(&mut buf, 1.0);
                put(&mut ds.kh[i], some, &mut buf);
            }
        }
        ds.l2_scratch = buf;
        let beta_of = |hv: usize, b: &[f32]| sigmoid(b[hv]);
        let decay_of = |hv: usize, a: &[f32]| (d.neg_a[hv] * softplus(a[hv] + d.dt_bias[hv])).exp();
        if first {
            for hv in 0..nv {
                ds.beta[hv] = beta_of(hv, &ds.b.y.v);
                ds.decay[hv] = decay_of(hv, &ds.a.y.v);
                ds.writers.put(hv, ds.beta[hv] != 0.0);
                ds.decaying.put(hv, ds.decay[hv] != 1.0);
            }
        } else {
            for &hv in ds.b.y.ch() {
                let hv = hv as usize;
                ds.beta[hv] = beta_of(hv, &ds.b.y.v);
                ds.writers.put(hv, ds.beta[hv] != 0.0);
            }
            for &hv in ds.a.y.ch() {
                let hv = hv as usize;
                ds.decay[hv] = decay_of(hv, &ds.a.y.v);
                ds.decaying.put(hv, ds.decay[hv] != 1.0);
            }
        }
        let per_k = nv / nk;
        // The heads with anything to do: writing or decaying ones, those whose gate changed, and the lit ones
        // whose query changed. The others' state and output are as they were.
        ds.visit.clear();
        {
            let DeltaState { visit, visit_mark, writers, decaying, q_changed, z, lit, .. } = &mut *ds;
            let mut add = |hv: usize| {
                if !visit_mark[hv] {
                    visit_mark[hv] = true;
                    visit.push(hv as u32);
                }
            };
            if first {
                (0..nv).for_each(&mut add);
            } else {
                writers.members.iter().chain(&decaying.members).for_each(|hv| add(*hv as usize));
                // The lit heads of the changed queries' key heads: from the lit set or key head by key head,
                // whichever is shorter.
                let keys = q_changed.iter().filter(|c| **c).count();
                if keys * per_k <= lit.members.len() {
                    for (ki, _) in q_changed.iter().enumerate().filter(|(_, c)| **c) {
                        (ki * per_k..(ki + 1) * per_k).filter(|&hv| lit.pos[hv] != u32::MAX).for_each(&mut add);
                    }
                } else if keys > 0 {
                    lit.members.iter().filter(|hv| q_changed[**hv as usize / per_k]).for_each(|hv| add(*hv as usize));
                }
                z.y.ch().iter().for_each(|j| add(*j as usize / z_rows));
            }
        }
        let v = &ds.act.v[2 * key_dim..];
        ds.o.begin();
        let o = &mut ds.head_out;
        for vi in 0..ds.visit.len() {
            let hv = ds.visit[vi] as usize;
            ds.visit_mark[hv] = false;
            let ki = hv / per_k;
            let stt = &mut ds.s[hv * dk * dv..(hv + 1) * dk * dv];
            let mut s_changed = false;
            if ds.decay[hv] != 1.0 {
                let decay = ds.decay[hv];
                stt.iter_mut().for_each(|e| *e *= decay);
                s_changed = true;
                ds.settled[hv] = false;
                // A factor in [0, 1] keeps the state within its bound.
                ds.bounded[hv] &= (0.0..=1.0).contains(&decay);
            }
            if let (true, true, Some((ptr, cols))) = (ds.beta[hv] != 0.0, ds.settled[hv], &d.v_cols) {
                let since = ds.settled_at[hv];
                ds.settled[hv] = cols[ptr[hv] as usize..ptr[hv + 1] as usize].iter().all(|&c| ds.changed_at[c as usize] <= since);
            }
            n.settled_writes += (ds.beta[hv] != 0.0 && ds.settled[hv]) as u64;
            if let (true, false, Some(kv)) = (ds.beta[hv] != 0.0, ds.settled[hv], &ds.kh[ki]) {
                let vh = match &d.v_rows {
                    None => &v[hv * dv..(hv + 1) * dv],
                    Some(rows) => {
                        // The head's v channels: conv of the current token only, then SiLU, as above.
                        for (j, e) in ds.v_head.iter_mut().enumerate() {
                            let ch = 2 * key_dim + hv * dv + j;
                            let acc = d.last_tap[ch] * rows.dot(hv * dv + j, &x.v);
                            *e = if acc == 0.0 { 0.0 } else { silu(acc) };
                        }
                        n.weights_read += (rows.ptr[(hv + 1) * dv] - rows.ptr[hv * dv]) as u64;
                        &ds.v_head[..]
                    }
                };
                let (changed, settled) = write_head_settled(stt, kv, vh, ds.beta[hv], &mut ds.write_scratch);
                ds.settled[hv] = settled && d.v_cols.is_some();
                ds.settled_at[hv] = ds.calls;
                if changed {
                    s_changed = true;
                    ds.bounded[hv] &= kv.iter().all(|(r, _)| stt[*r as usize * dv..(*r as usize + 1) * dv].iter().all(|e| e.abs() <= STATE_BOUND));
                }
            }
            if !(first || s_changed || ds.q_changed[ki] || ds.z_dirty[hv]) {
                continue;
            }
            // A head whose output gate is exactly 0 everywhere (silu(z) = ±0: z = ±0 or z < -89, see
            // `sparse::model::silu`) outputs only signed zeros when its read is finite, which its bounded
            // state and finite norm weights guarantee; `out_proj` skips zeros of either sign (a change
            // between them adds nothing), so +0 stands for them and the read is skipped. (With `z` per head,
            // one entry stands for the head's `d_v` equal ones.)
            let off = |z: &f32| *z == 0.0 || *z < -89.0;
            let gate_off = if d.z_per_head { off(&ds.z.y.v[hv]) } else { ds.z.y.v[hv * dv..(hv + 1) * dv].iter().all(off) };
            let gated_off = d.norm_w_finite && ds.bounded[hv] && gate_off;
            let silent = gated_off || ds.qh[ki].is_none();
            if silent && ds.o_zero[hv] {
                ds.lit.put(hv, !gated_off);
                continue; // its output is +0 everywhere already
            }
            let zh = if d.z_per_head {
                ds.z_head.fill(ds.z.y.v[hv]);
                &ds.z_head[..]
            } else {
                &ds.z.y.v[hv * dv..(hv + 1) * dv]
            };
            o.fill(0.0);
            if let (false, Some(qv)) = (silent, &ds.qh[ki]) {
                read_head(stt, qv, zh, &d.norm_w, eps, o);
            }
            for (j, oj) in o.iter().enumerate() {
                ds.o.set(hv * dv + j, *oj);
            }
            ds.o_zero[hv] = o.iter().all(|e| e.to_bits() == 0);
            ds.lit.put(hv, !(gated_off && ds.o_zero[hv]));
        }
        ds.o.finish_single_writes();
        d.out.update(&mut ds.out, &ds.o, first, n);
    }

    fn attention(&self, a: &Attention, s: &mut AttnState, x: &Tracked, pos: usize, first: bool, n: &mut Counters) {
        a.q.update(&mut s.q, x, first, n);
        a.k.update(&mut s.k, x, first, n);
        a.v.update(&mut s.v, x, first, n);
        let out = attend(&self.cfg, &self.inv_freq, &a.q_norm, &a.k_norm, &s.q.y.v, s.k.y.v.clone(), s.v.y.v.clone(), &mut s.kc, &mut s.vc, pos);
        s.attn.begin();
        s.attn.replace(&out);
        a.o.update(&mut s.o, &s.attn, first, n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One token's input: `x` takes the values `v`, recording what changed.
    fn feed(x: &mut Tracked, v: &[f32]) {
        x.begin();
        for (i, e) in v.iter().enumerate() {
            x.set(i, *e);
        }
        x.finish();
    }

    /// The bit patterns of `u` (to compare f32 vectors exactly, signed zeros included).
    fn bits(u: &[f32]) -> Vec<u32> {
        u.iter().map(|e| e.to_bits()).collect()
    }

    /// The kept argmax equals a full `argmax` after every update, through ties (small integers), maxima
    /// that rise, fall and move, NaNs (also at index 0) and changes at block edges.
    /// Residual entries that the middle layers neither read nor write skip them (`route`): with random
    /// weights (values of every magnitude), zeros of both signs and embedding entries that only change sign,
    /// the logits equal, bit for bit at every position, those of the same model with every entry taken
    /// through every layer (the executor before routing: random weights sum in another order in the sparse
    /// executor, so it is not the reference here; the woven machines' conformance test compares with it).
    /// A profiled session times every layer's stages and the head, counts its tokens, and computes what an
    /// unprofiled one does, bit for bit.
    #[test]
    fn stage_profile_times_every_layer_and_changes_nothing() {
        use crate::random::{Preset, random_weights};
        let cfg = Preset::Tiny.config(Some(4));
        let w = random_weights(&cfg, 11);
        let m = IncrementalModel::new(&cfg, &w).unwrap();
        let (mut plain, mut timed) = (m.new_state(), m.new_state());
        timed.profile_stages();
        assert!(plain.stage_times().is_none());
        for pos in 0..20u32 {
            let token = (pos * 13 + 5) % cfg.vocab_size as u32;
            let want = m.step_argmax(&mut plain, token).unwrap();
            assert_eq!(m.step_argmax(&mut timed, token).unwrap(), want, "position {pos}");
        }
        assert_eq!(bits(m.step(&mut timed, 3).unwrap()), bits(&m.step(&mut plain, 3).unwrap().to_vec()));
        let t = timed.stage_times().unwrap();
        assert_eq!((t.tokens, t.layers.len()), (21, cfg.num_hidden_layers));
        // Random weights change every entry at every token: every layer runs its mixer and MLP.
        assert!(t.layers.iter().all(|l| l[0] > 0 && l[2] > 0 && l[4] > 0), "{t:?}");
        assert!(t.head > 0);
        assert_eq!(t.per_stage()[0], t.layers.iter().map(|l| l[0]).sum::<u64>());
    }

    #[test]
    fn entries_routed_past_the_layers_that_ignore_them_keep_the_logits_exact() {
        use crate::random::{Preset, random_weights};
        let cfg = Preset::Tiny.config(Some(6));
        let mut w = random_weights(&cfg, 7);
        let hsz = cfg.hidden_size;
        let skipped = 0..8usize;
        // Layers 0-4 neither read nor write entries 0-7.
        for l in 0..=4 {
            for (name, t) in w.iter_mut() {
                let Some(rest) = name.strip_prefix(&format!("model.layers.{l}.")) else { continue };
                let reads = ["in_proj_qkv.weight", "in_proj_z.weight", "in_proj_a.weight", "in_proj_b.weight", "q_proj.weight", "k_proj.weight", "v_proj.weight", "gate_proj.weight", "up_proj.weight"];
                let writes = ["out_proj.weight", "o_proj.weight", "down_proj.weight"];
                if reads.iter().any(|r| rest.ends_with(r)) {
                    for row in t.data.chunks_exact_mut(hsz) {
                        for i in skipped.clone() {
                            row[i] = 0.0;
                        }
                    }
                } else if writes.iter().any(|r| rest.ends_with(r)) {
                    let cols = t.shape[1];
                    for i in skipped.clone() {
                        t.data[i * cols..(i + 1) * cols].fill(0.0);
                    }
                }
            }
        }
        // Token embeddings: entry 0 is +0, -0 or ±1.5 (a sign flip between some tokens), entry 1 -0 or random.
        let emb = w.get_mut("model.embed_tokens.weight").unwrap();
        for (t, row) in emb.data.chunks_exact_mut(hsz).enumerate() {
            row[0] = [0.0, -0.0, 1.5, -1.5][t % 4];
            if t % 3 == 0 {
                row[1] = -0.0;
            }
        }
        let inc = IncrementalModel::new(&cfg, &w).unwrap();
        assert!(inc.next_toucher[0][..8].iter().all(|&t| t == 5), "the embedding's entries 0-7 go to layer 5: {:?}", &inc.next_toucher[0][..8]);
        let mut every = IncrementalModel::new(&cfg, &w).unwrap();
        every.next_toucher = next_touchers(&vec![vec![true; hsz]; cfg.num_hidden_layers], hsz);
        let (mut a, mut b) = (inc.new_state(), every.new_state());
        for pos in 0..48u32 {
            let token = (pos * 37 + pos / 5) % cfg.vocab_size as u32;
            let want = every.step(&mut b, token).unwrap().to_vec();
            let got = inc.step(&mut a, token).unwrap();
            assert_eq!(bits(got), bits(&want), "position {pos}, token {token}");
            // Every layer input holds the exact value wherever its layer reads or writes, and a value of the
            // exact magnitude elsewhere; the final norm's input is exact everywhere.
            for m in 0..=cfg.num_hidden_layers {
                let (x, y) = (&a.h[2 * m + 1].v, &b.h[2 * m + 1].v);
                for i in 0..hsz {
                    let exact = m == cfg.num_hidden_layers || inc.next_toucher[m][i] as usize == m;
                    let (xb, yb) = (x[i].to_bits(), y[i].to_bits());
                    assert!(if exact { xb == yb } else { xb & 0x7FFF_FFFF == yb & 0x7FFF_FFFF }, "position {pos}, layer {m} input, entry {i}: {} and {}", x[i], y[i]);
                }
            }
        }
    }

    #[test]
    fn kept_argmax_equals_the_full_argmax() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut below = |k: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % k
        };
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
            assert_eq!(a.update(&v, &changed), crate::sparse::argmax(&v), "update {t}: {v:?}");
            checked += 1;
        }
        assert_eq!(checked, 4000);
    }

    /// Drive one projection through every path of `update` (sign flips, growing and shrinking magnitudes, a row
    /// bound pushed past 2^24 units mid-update, values off the grid, recovery), checking after each token that
    /// its output equals a fresh full product bit for bit, and which path ran.
    #[test]
    fn projection_updates_equal_full_products_on_every_path() {
        let (rows, cols) = (6usize, 5usize);
        // Dyadic weights (multiples of 1/4): a row's Σ|w| is at most 8.5, 34 units of 2^-2.
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
        // (input, expected path): 'F' full product, 'I' incremental
        // The grid after the first token: binary places 0 + spare floor(log2(2^23 / 34) / 2) = 8, so entries
        // are multiples of 2^-8 up to 2^23 units (|x| <= 2^15).
        let tokens: Vec<(Vec<f32>, char)> = vec![
            (vec![1.0, -1.0, 1.0, 1.0, -1.0], 'F'),     // the first token
            (vec![-1.0, -1.0, 1.0, -1.0, -1.0], 'I'),   // sign flips only
            (vec![-1.0, 3.0, 0.5, -1.0, 0.0], 'I'),     // magnitudes grow and shrink, on the grid
            (vec![-1.0, 3.0, 0.5, 1024.0, 0.0], 'I'),   // large, still within the grid's range
            (vec![-1.0, 3.0, 0.5, 65536.0, 0.0], 'F'),  // beyond 2^23 units: off the grid, full
            (vec![-1.0, 3.0, 0.5, 1.0, 0.0], 'I'),      // the full product was exact and re-gridded: incremental
            (vec![1.0, 3.0, 0.1, 1.0, 0.0], 'F'),       // 0.1 is on no grid
            (vec![1.0, 3.0, 0.1, -1.0, 0.0], 'F'),      // still off: the last product was not exact
            (vec![1.0, -3.0, 0.25, 1.0, 0.0], 'F'),     // back on a grid: one full product first
            (vec![1.0, -3.0, 0.25, 1.0, 2.0], 'I'),
        ];
        for (t, (v, path)) in tokens.iter().enumerate() {
            feed(&mut x, v);
            let before = n;
            p.update(&mut st, &x, t == 0, &mut n);
            let ran = if n.full_products > before.full_products { 'F' } else { 'I' };
            let want = full(v);
            assert_eq!(bits(&st.y.v), bits(&want), "token {t}: {:?} vs {:?}", st.y.v, want);
            assert_eq!(ran, *path, "token {t}: path");
            // The recorded changes are exactly the entries whose bits differ from the previous token's output.
            for (k, &i) in st.y.ch().iter().enumerate() {
                assert_ne!(st.y.old()[k].to_bits(), st.y.v[i as usize].to_bits());
            }
        }
        assert!(n.incremental_products >= 4 && n.full_products >= 5, "{n:?}");
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
        plain.silu_input = true;
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
        assert!(p.classes.as_ref().is_some_and(|(rc, _)| rc.classes == 2), "twin rows grouped");
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
        // Row 0 = [2^20, 2^20]; inputs start at [1, 1] (2^21 units), then grow to [15, 15]: 15·2^20·2 > 2^24.
        let p = Projection::new(&HostTensor::new(vec![2, 2], vec![1048576.0, 1048576.0, 1.0, -1.0]));
        let mut st = ProjState::new(&p);
        let mut x = Tracked::zeros(2);
        let mut n = Counters::default();
        for (t, v) in [[1.0f32, 1.0], [3.0, 1.0], [15.0, 15.0], [1.0, 3.0]].iter().enumerate() {
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
