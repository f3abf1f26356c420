//! [`DeltaNet`]: a Gated DeltaNet mixer as incremental stages; [`DeltaState`]: one sequence's projections,
//! conv window, normalised q and k, and per value head its state `S` and what it needs to do this token.

use super::factored::{SiluGroups, SiluGroupsState};
use super::model::Counters;
use super::projection::{mark_columns, ProjState, Projection};
use super::tracked::Tracked;
use crate::config::Qwen35Config;
use crate::cpu::math::{conv_history, l2_normalise, read_head, read_head_gated, sigmoid, silu, softplus, write_head_settled};
use crate::cpu::{CheckedWeights, SparseMatrix};
use crate::error::CpuError;
use crate::names::LayerTensor;

pub(super) struct DeltaNet {
    /// `in_proj_qkv` `[conv_dim, hidden]`; with `v_rows`, its q and k rows only (the v rows empty).
    pub(super) qkv: Projection,
    /// When no v channel has conv history: the v rows `[nv * d_v]` of `in_proj_qkv` as row lists, computed
    /// only for a head that writes (v is read nowhere else), in the full product's order.
    pub(super) v_rows: Option<RowLists>,
    /// With `v_rows`: per value head `h`, the input columns its v rows read (ascending, each once),
    /// `v_cols.1[v_cols.0[h]..v_cols.0[h + 1]]` (a change of one unsettles a writing head, see
    /// `DeltaState::settled`).
    pub(super) v_cols: Option<(Vec<u32>, Vec<u32>)>,
    /// `in_proj_z`, or when every value head's `d_v` rows are identical ([`z_per_head`]) one row per head
    /// `[nv, hidden]` (`z_per_head` set): equal rows give equal products bit for bit, so each head's gate
    /// is that row's value in every entry.
    pub(super) z: Projection,
    pub(super) z_per_head: bool,
    pub(super) b: Projection,
    pub(super) a: Projection,
    pub(super) out: Projection,
    /// `[conv_dim, kernel]`.
    pub(super) conv: Vec<f32>,
    /// The current tap of each channel `[conv_dim]` (`conv[ch, kernel - 1]`).
    pub(super) last_tap: Vec<f32>,
    /// Conv channels with a nonzero `in_proj_qkv` row and a nonzero tap before the current one: their
    /// output depends on the window, so they are recomputed every token.
    pub(super) history: Vec<u32>,
    /// One-hot query and key rows, computed by group and kept out of `qkv` (see [`SiluGroups`]).
    pub(super) onehot: Option<SiluGroups>,
    pub(super) has_history: Vec<bool>,
    pub(super) dt_bias: Vec<f32>,
    /// `-exp(A_log)` per value head.
    pub(super) neg_a: Vec<f32>,
    pub(super) norm_w: Vec<f32>,
    /// Every gated-norm weight is finite (a head gated off then outputs only zeros).
    pub(super) norm_w_finite: bool,
}

/// Rows of a matrix as lists of `(column, weight)`, columns ascending: `cols[ptr[r]..ptr[r + 1]]`.
pub(super) struct RowLists {
    pub(super) ptr: Vec<u32>,
    pub(super) cols: Vec<u32>,
    pub(super) vals: Vec<f32>,
}

impl RowLists {
    /// Row `r`'s product with `x` as the full product sums it: increasing columns from `+0`, exact-zero
    /// inputs skipped.
    #[inline]
    pub(super) fn dot(&self, r: usize, x: &[f32]) -> f32 {
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

/// Per value head of `rows` (`d_v` rows each): the input columns its rows read, ascending, each once, as
/// offsets `[heads + 1]` and a column list.
pub(super) fn v_head_columns(rows: &RowLists, dv: usize) -> (Vec<u32>, Vec<u32>) {
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
pub(super) fn split_rows(m: &SparseMatrix, at: usize) -> (SparseMatrix, RowLists) {
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
pub(super) fn z_per_head(m: &SparseMatrix, dv: usize) -> Option<SparseMatrix> {
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

#[derive(Clone)]
pub(super) struct DeltaState {
    pub(super) qkv: ProjState,
    pub(super) z: ProjState,
    pub(super) b: ProjState,
    pub(super) a: ProjState,
    pub(super) out: ProjState,
    /// `[conv_dim, kernel - 1]`, oldest first (history channels only).
    pub(super) window: Vec<f32>,
    /// Conv + SiLU output `[conv_dim]`: q, k, v.
    pub(super) act: Tracked,
    /// Per key head: the normalised q and k as their nonzero entries (see `cpu::math::l2_scaled`).
    pub(super) qh: Vec<Option<Vec<(u32, f32)>>>,
    pub(super) kh: Vec<Option<Vec<(u32, f32)>>>,
    pub(super) beta: Vec<f32>,
    pub(super) decay: Vec<f32>,
    /// `[nv, d_k, d_v]`.
    pub(super) s: Vec<f32>,
    /// Per value head: every state entry is finite and within [`STATE_BOUND`], so that a read `S^T q`
    /// (`|q| <= 1`, at most `d_k` terms) is finite.
    pub(super) bounded: Vec<bool>,
    /// Per value head: its output `o` is `+0` in every entry.
    pub(super) o_zero: Vec<bool>,
    /// Scratch `[d_v]`: a writing head's v when v is computed per head (`DeltaNet::v_rows`).
    pub(super) v_head: Vec<f32>,
    /// Per value head (with `DeltaNet::v_rows`): its last write found `v - S^T k` exactly zero (a write that
    /// changed nothing), and since then neither its state, nor its key head's k channels, nor an input its v
    /// rows read has changed: the write of this token would compute the same `v` and `S^T k` and change
    /// nothing again, so it is skipped (and `v` not computed), and the head is not even visited unless its
    /// query or gate changed. Only a writing head's flag is read (`beta != 0`, [`Self::writers`]), and it is
    /// checked then: the flag holds while no input column its v rows read (`DeltaNet::v_cols`) and not its key
    /// head's k changed after the token it settled at ([`Self::settled_at`], [`Self::col_changed`],
    /// [`Self::k_changed`]); a decay unsettles the head as it happens.
    pub(super) settled: Vec<bool>,
    /// Per value head `[nv]`: the token ([`Self::tick`]) of its write that settled it.
    pub(super) settled_at: Vec<u64>,
    /// Per input column `[hidden]` and per key head `[nk]`: the last token at which it changed.
    pub(super) col_changed: Vec<u64>,
    pub(super) k_changed: Vec<u64>,
    /// This sequence's token count (the clock of the three above).
    pub(super) tick: u64,
    /// Per key head, q then k (`2 nk` lists): the channels of the head (`0..d_k`, ascending) whose act is
    /// nonzero, kept from the act's changes: a head's q or k is normalised from them, not from all `d_k`.
    pub(super) nonzero: Vec<Vec<u32>>,
    /// Scratch: a normalised q or k before it is kept (see `cpu::math::l2_normalise`).
    pub(super) l2_scratch: Vec<(u32, f32)>,
    /// Scratch `[2 d_v]` of [`write_head_settled`].
    pub(super) write_scratch: Vec<f32>,
    /// The one-hot query and key groups' live rows (`DeltaNet::onehot`).
    pub(super) onehot: SiluGroupsState,
    /// Gated-norm output of every value head `[nv * d_v]`, the input of `out_proj`.
    pub(super) o: Tracked,
    /// Per key head: its q or k input changed this token / its normalised q changed; per value head: its z
    /// changed. Scratch, reset every token.
    pub(super) q_dirty: Vec<bool>,
    pub(super) k_dirty: Vec<bool>,
    pub(super) q_changed: Vec<bool>,
    pub(super) z_dirty: Vec<bool>,
    /// The value heads with `beta != 0` (they write every token) and with `decay != 1`, as sets: members and
    /// each head's position in them (`u32::MAX`: absent). Updated when `b` or `a` changes.
    pub(super) writers: HeadSet,
    pub(super) decaying: HeadSet,
    /// The value heads a new query can change: all but those whose gate is off (with a bounded state) and
    /// whose output is `+0` already (`o_zero`), which output `+0` for any query. Kept at each visit; the
    /// only other changes of its terms (the gate, the state) visit the head.
    pub(super) lit: HeadSet,
    /// Scratch: the value heads to visit this token, and a mark per head.
    pub(super) visit: Vec<u32>,
    pub(super) visit_mark: Vec<bool>,
    pub(super) head_out: Vec<f32>,
}

/// A set of head indices with O(1) insert and remove.
#[derive(Clone)]
pub(super) struct HeadSet {
    pub(super) members: Vec<u32>,
    pub(super) pos: Vec<u32>,
}

impl HeadSet {
    pub(super) fn new(n: usize) -> Self {
        Self { members: Vec::new(), pos: vec![u32::MAX; n] }
    }
    pub(super) fn put(&mut self, h: usize, present: bool) {
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

/// The bound on a DeltaNet state entry under which a read of at most 2^20 rows is finite in f32.
pub(super) const STATE_BOUND: f32 = 1e30;

impl DeltaNet {
    /// Layer `layer`'s Gated DeltaNet from the checked weights `w`: the one-hot query and key groups, the v rows
    /// kept per head where no v channel has conv history, `z` per head where its rows repeat. Marks in `touch` and
    /// `mixer_cols` `[hidden]` the input columns `in_proj_qkv` and `in_proj_z` read. Errors name a missing or
    /// misshapen tensor.
    pub(super) fn new(cfg: &Qwen35Config, w: &CheckedWeights, layer: usize, touch: &mut [bool], mixer_cols: &mut [bool]) -> Result<Self, CpuError> {
        let qkv_full = SparseMatrix::from_dense(w.get(&LayerTensor::InProjQkv.name(layer))?);
        mark_columns(&qkv_full, touch);
        mark_columns(&qkv_full, mixer_cols);
        let conv = w.get(&LayerTensor::Conv1d.name(layer))?.data.clone();
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
        let v_cols = v_rows.as_ref().map(|rows| v_head_columns(rows, cfg.linear_value_head_dim));
        let history = qkv.m.nonempty_rows().into_iter().filter(|ch| has_history[*ch as usize]).collect();
        let norm_w = w.get(&LayerTensor::GatedNorm.name(layer))?.data.clone();
        let z_full = SparseMatrix::from_dense(w.get(&LayerTensor::InProjZ.name(layer))?);
        mark_columns(&z_full, touch);
        mark_columns(&z_full, mixer_cols);
        let (z, z_per_head) = match z_per_head(&z_full, cfg.linear_value_head_dim) {
            Some(m) => (Projection::from_matrix(m).feeding_gate(), true),
            None => (Projection::from_matrix(z_full).feeding_gate(), false),
        };
        Ok(DeltaNet {
            qkv,
            v_rows,
            v_cols,
            z,
            z_per_head,
            b: Projection::from_tensor(w, &LayerTensor::InProjB.name(layer))?.feeding_beta(),
            a: Projection::from_tensor(w, &LayerTensor::InProjA.name(layer))?,
            out: Projection::from_tensor(w, &LayerTensor::OutProj.name(layer))?,
            last_tap,
            onehot,
            conv,
            history,
            has_history,
            dt_bias: w.get(&LayerTensor::DtBias.name(layer))?.data.clone(),
            neg_a: w.get(&LayerTensor::ALog.name(layer))?.data.iter().map(|v| -v.exp()).collect(),
            norm_w_finite: norm_w.iter().all(|w| w.is_finite()),
            norm_w,
        })
    }
}

impl DeltaState {
    /// A sequence's state of `d` before its first token: zero states, no writers, nothing settled.
    pub(super) fn new(c: &Qwen35Config, d: &DeltaNet) -> Self {
        let (nk, nv, dk, dv) = (c.linear_num_key_heads, c.linear_num_value_heads, c.linear_key_head_dim, c.linear_value_head_dim);
        DeltaState {
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
            v_head: vec![0.0; dv],
            write_scratch: vec![0.0; 2 * dv],
            settled: vec![false; nv],
            settled_at: vec![0; nv],
            col_changed: vec![0; c.hidden_size],
            k_changed: vec![0; nk],
            tick: 0,
            l2_scratch: Vec::new(),
            nonzero: vec![Vec::new(); 2 * nk],
            onehot: SiluGroupsState::default(),
        }
    }
}

impl DeltaNet {
    /// One token through the mixer: the projections, the conv and SiLU, q and k normalised per key head, then
    /// each value head with anything to do (see [`DeltaState`]) decays, writes and reads; `out_proj` of the
    /// gated heads. `x` is the normed input `[hidden]`; `first` computes everything (the first token).
    pub(super) fn update(&self, c: &Qwen35Config, ds: &mut DeltaState, x: &Tracked, first: bool, n: &mut Counters) {
        let d = self;
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
                    ds.act.set_final(ch, last_tap(ch));
                }
            }
        } else {
            for &ch in mixed.ch() {
                if !d.has_history[ch as usize] {
                    ds.act.set_final(ch as usize, last_tap(ch as usize));
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
            ds.act.set_final(ch, if acc == 0.0 { 0.0 } else { silu(acc) });
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
        // When this token's inputs and keys changed (see `DeltaState::settled`): a column is read by every
        // block head of a memory copy, so the few writing heads check their columns' times when they are
        // visited, instead of every head of each changed column being unsettled here.
        ds.tick += 1;
        if d.v_cols.is_some() {
            if first {
                ds.settled.fill(false);
            } else {
                for &c in x.ch() {
                    ds.col_changed[c as usize] = ds.tick;
                }
                for (ki, _) in k_dirty.iter().enumerate().filter(|(_, d)| **d) {
                    ds.k_changed[ki] = ds.tick;
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
        // The heads with anything to do: writing (not settled) or decaying ones, those whose gate changed, and
        // the lit ones whose query changed. The others' state and output are as they were.
        ds.visit.clear();
        {
            let DeltaState { visit, visit_mark, writers, decaying, q_changed, z, lit, settled, decay, settled_at, col_changed, k_changed, .. } = &mut *ds;
            let mut add = |hv: usize| {
                if !visit_mark[hv] {
                    visit_mark[hv] = true;
                    visit.push(hv as u32);
                }
            };
            if first {
                (0..nv).for_each(&mut add);
            } else {
                for &hv in &writers.members {
                    let hv = hv as usize;
                    // A settled head stays so while nothing its write reads changed after it settled.
                    if let (true, Some((ptr, cols))) = (settled[hv], &d.v_cols) {
                        let (at, read) = (settled_at[hv], &cols[ptr[hv] as usize..ptr[hv + 1] as usize]);
                        settled[hv] = k_changed[hv / per_k] <= at && read.iter().all(|&c| col_changed[c as usize] <= at);
                    }
                    if !settled[hv] {
                        add(hv);
                    } else if decay[hv] == 1.0 {
                        n.settled_writes += 1; // its write is skipped (a decaying one is unsettled below)
                    }
                }
                decaying.members.iter().for_each(|hv| add(*hv as usize));
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
                ds.settled_at[hv] = ds.tick;
                if changed {
                    s_changed = true;
                    ds.bounded[hv] &= kv.iter().all(|(r, _)| stt[*r as usize * dv..(*r as usize + 1) * dv].iter().all(|e| e.abs() <= STATE_BOUND));
                }
            }
            if !(first || s_changed || ds.q_changed[ki] || ds.z_dirty[hv]) {
                continue;
            }
            // A head whose output gate is exactly 0 everywhere (silu(z) = ±0: z = ±0 or z < -89, see
            // `cpu::math::silu`) outputs only signed zeros when its read is finite, which its bounded
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
            o.fill(0.0);
            if let (false, Some(qv)) = (silent, &ds.qh[ki]) {
                if d.z_per_head {
                    // One gate value for the head's `d_v` entries: its silu once.
                    let g = silu(ds.z.y.v[hv]);
                    read_head_gated(stt, qv, |_| g, &d.norm_w, eps, o);
                } else {
                    read_head(stt, qv, &ds.z.y.v[hv * dv..(hv + 1) * dv], &d.norm_w, eps, o);
                }
            }
            for (j, oj) in o.iter().enumerate() {
                ds.o.set_final(hv * dv + j, *oj);
            }
            ds.o_zero[hv] = o.iter().all(|e| e.to_bits() == 0);
            ds.lit.put(hv, !(gated_off && ds.o_zero[hv]));
        }
        ds.o.finish_single_writes();
        d.out.update(&mut ds.out, &ds.o, first, n);
    }
}
