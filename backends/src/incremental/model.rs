//! [`IncrementalModel`]: the layers as incremental stages; [`IncrementalState`]: one sequence's kept
//! activations and caches.

use super::exact::{squares_cap, weight_exp, InputGrid, ENTRY_LIMIT, EXACT_LIMIT};
use super::tracked::Tracked;
use crate::config::{LayerType, Qwen35Config};
use crate::sparse::model::{attend, conv_history, l2_scaled, read_head, rope_inv_freq, sigmoid, silu, softplus, write_head, CheckedWeights};
use crate::sparse::SparseMatrix;
use crate::tensor::{HostTensor, WeightMap};

/// A projection `[rows, cols]` in CSC layout with its weights' binary places.
struct Projection {
    m: SparseMatrix,
    /// Every weight is an integer multiple of `2^-exp` (`None`: a weight is not finite; no incremental sums).
    exp: Option<i32>,
    /// Per column: the largest `|w|`, bounding every product `w (x_new - x_old)` of the column.
    col_max: Vec<f64>,
}

impl Projection {
    fn new(t: &HostTensor) -> Self {
        let m = SparseMatrix::from_dense(t);
        let (_, _, vals) = m.csc().expect("from_dense is CSC");
        let exp = weight_exp(vals);
        let (ptr, _, _) = m.csc().expect("from_dense is CSC");
        let col_max = ptr.windows(2).map(|w| vals[w[0] as usize..w[1] as usize].iter().fold(0f64, |a, v| a.max(v.abs() as f64))).collect();
        Self { m, exp, col_max }
    }

    fn rows(&self) -> usize {
        self.m.shape().0
    }

    /// Bring `st.y` up to date with `x` (whose changes this token are `x.ch()`/`x.old()`): incrementally where
    /// exact, else the full product.
    ///
    /// The incremental update is used when it is exact and equal to the full sum in any order. Every input
    /// is on its grid (`st.grid`: integer multiples of `2^-e`, each within 2^23 units, so `x_new - x_old`
    /// is exact), so every product and partial sum is an integer number of units of `2^-(exp + e)`, exact
    /// in f32 up to 2^24 units. Products: `max |w|` of the column times `|x_new - x_old|` is checked against
    /// 2^24 units. Partial sums: the columns whose magnitude shrinks are added before those whose magnitude
    /// grows, so after any prefix a row's sum is within `Σ |w x'|` of an input `x'` between the old and the
    /// new, which is at most the larger of the row's old and new `Σ |w x|`; those are kept per row (exact
    /// in f64) and must stay within 2^24 units, which also makes the full sum, in any order, exact.
    fn update(&self, st: &mut ProjState, x: &Tracked, first: bool, n: &mut Counters) {
        st.y.begin();
        if self.m.nnz() == 0 {
            return;
        }
        let mut full = first || !st.exact;
        if !full {
            for (k, &j) in x.ch().iter().enumerate() {
                st.grid.update(x.old()[k], x.v[j as usize]);
            }
            full = !st.grid.exact();
        }
        if !full {
            let (ptr, idx, vals) = self.m.csc().expect("CSC");
            let lim = st.limit;
            let mut ops_exact = true;
            if x.ch().iter().zip(x.old()).all(|(&j, o)| x.v[j as usize].abs() == o.abs()) {
                // Only signs changed: every intermediate input x' has the old magnitudes, so every partial
                // sum stays within its row's unchanged Σ |w x| (<= 2^24 units), and each product
                // w (x_new - x_old) = ±2 w x_old has the significant bits of w x_old: all exact, unchecked.
                for (k, &j) in x.ch().iter().enumerate() {
                    let d = x.v[j as usize] - x.old()[k];
                    if d == 0.0 {
                        continue; // +0 <-> -0: every product is a signed zero, which leaves every sum as it was
                    }
                    let (a, b) = (ptr[j as usize] as usize, ptr[j as usize + 1] as usize);
                    st.y.scatter(&idx[a..b], &vals[a..b], d);
                    n.weights_read += (b - a) as u64;
                }
            } else {
                // Shrinking magnitudes first, then growing ones (see above): two passes.
                st.order.clear();
                st.order.extend((0..x.ch().len() as u32).filter(|&k| x.v[x.ch()[k as usize] as usize].abs() <= x.old()[k as usize].abs()));
                st.order.extend((0..x.ch().len() as u32).filter(|&k| x.v[x.ch()[k as usize] as usize].abs() > x.old()[k as usize].abs()));
                for &k in &st.order {
                    let (j, o) = (x.ch()[k as usize] as usize, x.old()[k as usize]);
                    let v = x.v[j];
                    let d = v - o;
                    if d == 0.0 {
                        continue;
                    }
                    ops_exact &= self.col_max[j] * (d as f64).abs() <= lim;
                    let da = v.abs() as f64 - o.abs() as f64;
                    let (a, b) = (ptr[j] as usize, ptr[j + 1] as usize);
                    st.y.scatter_with_bound(&idx[a..b], &vals[a..b], d, &mut st.abs, da);
                    n.weights_read += (b - a) as u64;
                }
                // `over` was 0: only the rows touched now can be beyond the range.
                st.over = st.y.ch().iter().filter(|&&i| st.abs[i as usize] > lim).count();
            }
            if ops_exact && st.over == 0 {
                st.y.finish();
                n.incremental_products += 1;
                return;
            }
            // An operation or a row's sum outgrew the exact range: undo the token's additions (they may
            // have rounded), then compute in full.
            st.y.undo();
        }
        let (ptr, idx, vals) = self.m.csc().expect("CSC");
        let mut y = vec![0f32; self.rows()];
        st.abs.fill(0.0);
        for (j, &xj) in x.v.iter().enumerate() {
            if xj == 0.0 {
                continue;
            }
            for p in ptr[j] as usize..ptr[j + 1] as usize {
                let i = idx[p] as usize;
                y[i] += vals[p] * xj;
                st.abs[i] += (vals[p] as f64 * xj as f64).abs();
            }
        }
        st.y.replace(&y);
        n.full_products += 1;
        n.weights_read += self.m.nnz() as u64;
        st.exact = false;
        if let Some(wexp) = self.exp {
            let amax = st.abs.iter().cloned().fold(0.0, f64::max);
            st.grid.calibrate_with(&x.v, ENTRY_LIMIT, Some(&|e| amax * 2f64.powi(wexp + e)));
            st.limit = EXACT_LIMIT / st.grid.scale() / 2f64.powi(wexp);
            st.over = st.abs.iter().filter(|a| **a > st.limit).count();
            st.exact = st.grid.exact() && st.over == 0;
        }
    }
}

/// Per sequence, per projection: its output, the input's grid, and per row `Σ |w x|` (exact in f64) with
/// the count of rows beyond the exact range.
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
    /// Scratch: the order in which this token's changed inputs are added.
    order: Vec<u32>,
}

impl ProjState {
    fn new(p: &Projection) -> Self {
        Self { y: Tracked::zeros(p.rows()), grid: InputGrid::default(), abs: vec![0.0; p.rows()], limit: 0.0, over: 0, exact: false, order: Vec::new() }
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
    fn update(&mut self, h: &Tracked, one_plus_w: &[f32], eps: f32, first: bool) {
        let n = h.v.len();
        self.x.begin();
        let mut full = first || !self.grid.exact();
        if !full {
            for (k, &i) in h.ch().iter().enumerate() {
                self.grid.update(h.old()[k], h.v[i as usize]);
            }
            full = !self.grid.exact();
        }
        if full {
            self.ss = h.v.iter().map(|v| v * v).sum::<f32>();
            self.grid.calibrate(&h.v, squares_cap(n));
        } else {
            for (k, &i) in h.ch().iter().enumerate() {
                let (o, v) = (h.old()[k], h.v[i as usize]);
                self.ss = self.ss - o * o + v * v;
            }
        }
        let r = 1.0 / (self.ss / n as f32 + eps).sqrt();
        if first || r.to_bits() != self.r.to_bits() {
            self.r = r;
            for i in 0..n {
                self.x.set(i, (h.v[i] * r) * one_plus_w[i]);
            }
        } else {
            for &i in h.ch() {
                let i = i as usize;
                self.x.set(i, (h.v[i] * r) * one_plus_w[i]);
            }
        }
        self.x.finish();
    }
}

/// The SwiGLU product `silu(g) * u` (0 where either is 0, as the sparse executor), entry by entry, where
/// `g` or `u` changed.
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
            act.set(i as usize, f(i as usize));
        }
    }
    act.finish();
}

/// `out = a + b`, entry by entry, where either changed.
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
    out.finish();
}

struct DeltaNet {
    qkv: Projection,
    z: Projection,
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
    has_history: Vec<bool>,
    dt_bias: Vec<f32>,
    /// `-exp(A_log)` per value head.
    neg_a: Vec<f32>,
    norm_w: Vec<f32>,
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
    mixer: Mixer,
    gate: Projection,
    up: Projection,
    down: Projection,
}

/// Work counted over a session (for benchmarks): products updated incrementally or computed in full, and
/// the nonzero weights they multiplied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub tokens: u64,
    pub incremental_products: u64,
    pub full_products: u64,
    pub weights_read: u64,
}

/// A Qwen3.5 model prepared for incremental decoding.
pub struct IncrementalModel {
    cfg: Qwen35Config,
    embed: HostTensor,
    /// Per token: the entries where its embedding row differs from row 0 (`None`: more than a quarter).
    embed_diff: Vec<Option<Vec<u32>>>,
    layers: Vec<Layer>,
    final_norm: Vec<f32>,
    lm_head: Projection,
    inv_freq: Vec<f32>,
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
    /// The residual stream: after the embedding, then after each layer's mixer and MLP (`2 L + 1`).
    h: Vec<Tracked>,
    /// A zero vector that never changes: the mixer output of a layer whose mixer adds exactly 0.
    zero: Tracked,
    layers: Vec<LayerState>,
    final_norm: NormState,
    logits: ProjState,
    /// Per block of [`ARGMAX_BLOCK`] logits: its first maximum `(value, index)`, NaN skipped.
    blocks: Vec<(f32, u32)>,
    /// Scratch: per block, whether a logit in it changed.
    dirty_blocks: Vec<u8>,
    counters: Counters,
}

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

impl IncrementalState {
    /// Work done so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }
}

impl IncrementalModel {
    /// Prepare `weights` (named as `Qwen3_5ForCausalLM` names them) for incremental decoding. Errors name a
    /// missing or misshapen tensor.
    pub fn new(cfg: &Qwen35Config, weights: &WeightMap) -> Result<Self, String> {
        let w = CheckedWeights::new(cfg, weights)?;
        let get = |name: &str| w.get(name);
        let proj = |name: &str| -> Result<Projection, String> { Ok(Projection::new(get(name)?)) };
        let one_plus = |name: &str| w.one_plus(name);
        let mut layers = Vec::new();
        for (i, lt) in cfg.layer_types.iter().enumerate() {
            let p = format!("model.layers.{i}");
            let mixer = match lt {
                LayerType::LinearAttention => {
                    let a = format!("{p}.linear_attn");
                    let qkv = proj(&format!("{a}.in_proj_qkv.weight"))?;
                    let conv = get(&format!("{a}.conv1d.weight"))?.data.clone();
                    let k = cfg.linear_conv_kernel_dim;
                    let has_history = conv_history(&conv, k);
                    let history = qkv.m.nonempty_rows().into_iter().filter(|ch| has_history[*ch as usize]).collect();
                    Mixer::Linear(DeltaNet {
                        qkv,
                        z: proj(&format!("{a}.in_proj_z.weight"))?,
                        b: proj(&format!("{a}.in_proj_b.weight"))?,
                        a: proj(&format!("{a}.in_proj_a.weight"))?,
                        out: proj(&format!("{a}.out_proj.weight"))?,
                        last_tap: conv.chunks_exact(k).map(|w| w[k - 1]).collect(),
                        conv,
                        history,
                        has_history,
                        dt_bias: get(&format!("{a}.dt_bias"))?.data.clone(),
                        neg_a: get(&format!("{a}.A_log"))?.data.iter().map(|v| -v.exp()).collect(),
                        norm_w: get(&format!("{a}.norm.weight"))?.data.clone(),
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
            layers.push(Layer {
                input_norm: one_plus(&format!("{p}.input_layernorm.weight"))?,
                post_norm: one_plus(&format!("{p}.post_attention_layernorm.weight"))?,
                mixer,
                gate: proj(&format!("{p}.mlp.gate_proj.weight"))?,
                up: proj(&format!("{p}.mlp.up_proj.weight"))?,
                down: proj(&format!("{p}.mlp.down_proj.weight"))?,
            });
        }
        let embed = get("model.embed_tokens.weight")?.clone();
        let lm_head = if cfg.tie_word_embeddings { Projection::new(&embed) } else { proj("lm_head.weight")? };
        let hsz = cfg.hidden_size;
        let row0 = &embed.data[..hsz];
        let embed_diff = embed
            .data
            .chunks_exact(hsz)
            .map(|row| {
                let d: Vec<u32> = (0..hsz as u32).filter(|&i| row[i as usize].to_bits() != row0[i as usize].to_bits()).collect();
                (d.len() <= hsz / 4).then_some(d)
            })
            .collect();
        Ok(Self { cfg: cfg.clone(), embed, embed_diff, layers, final_norm: one_plus("model.norm.weight")?, lm_head, inv_freq: rope_inv_freq(cfg) })
    }

    /// The model's configuration.
    pub fn config(&self) -> &Qwen35Config {
        &self.cfg
    }

    /// Nonzero weights held (all projections, embedding excluded): what a full pass multiplies.
    pub fn nonzero_weights(&self) -> usize {
        let mut n = self.lm_head.m.nnz();
        for l in &self.layers {
            n += l.gate.m.nnz() + l.up.m.nnz() + l.down.m.nnz();
            n += match &l.mixer {
                Mixer::Linear(d) => d.qkv.m.nnz() + d.z.m.nnz() + d.a.m.nnz() + d.b.m.nnz() + d.out.m.nnz(),
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
                        o: Tracked::zeros(nv * dv),
                        q_dirty: vec![false; nk],
                        k_dirty: vec![false; nk],
                        q_changed: vec![false; nk],
                        z_dirty: vec![false; nv],
                        writers: HeadSet::new(nv),
                        decaying: HeadSet::new(nv),
                        visit: Vec::new(),
                        visit_mark: vec![false; nv],
                        head_out: vec![0.0; dv],
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
            h: (0..2 * self.layers.len() + 1).map(|_| Tracked::zeros(hsz)).collect(),
            zero: Tracked::zeros(hsz),
            layers,
            final_norm: NormState::new(hsz),
            logits: ProjState::new(&self.lm_head),
            blocks: Vec::new(),
            dirty_blocks: Vec::new(),
            counters: Counters::default(),
        }
    }

    /// Feed one token; returns the logits `[vocab]` of the next token. Errors on a token id outside the
    /// vocabulary.
    pub fn step<'s>(&self, st: &'s mut IncrementalState, token: u32) -> Result<&'s [f32], String> {
        self.forward(st, token)?;
        st.blocks.clear(); // this token's changes are not in the argmax blocks: rebuild them next time
        Ok(&st.logits.y.v)
    }

    /// Feed one token; returns the greedy next token: [`crate::sparse::argmax`]'s (the first maximum, as
    /// `torch.argmax`), kept per block of logits so that only blocks holding a changed logit are scanned.
    pub fn step_argmax(&self, st: &mut IncrementalState, token: u32) -> Result<u32, String> {
        self.forward(st, token)?;
        let v = &st.logits.y.v;
        if v[0].is_nan() {
            return Ok(0); // argmax keeps index 0: nothing compares greater than NaN
        }
        if st.blocks.is_empty() {
            st.blocks = (0..v.len()).step_by(ARGMAX_BLOCK).map(|lo| block_max(v, lo, (lo + ARGMAX_BLOCK).min(v.len()))).collect();
        } else {
            st.dirty_blocks.resize(st.blocks.len(), 0);
            st.dirty_blocks.fill(0);
            for i in st.logits.y.ch() {
                st.dirty_blocks[*i as usize / ARGMAX_BLOCK] = 1;
            }
            for (b, dirty) in st.dirty_blocks.iter().enumerate() {
                if *dirty != 0 {
                    let lo = b * ARGMAX_BLOCK;
                    st.blocks[b] = block_max(v, lo, (lo + ARGMAX_BLOCK).min(v.len()));
                }
            }
        }
        let mut best = st.blocks[0];
        for b in &st.blocks[1..] {
            if b.0 > best.0 || (best.0.is_nan() && !b.0.is_nan()) {
                best = *b;
            }
        }
        Ok(best.1)
    }

    fn forward(&self, st: &mut IncrementalState, token: u32) -> Result<(), String> {
        let c = &self.cfg;
        let hsz = c.hidden_size;
        let t = token as usize;
        if t >= c.vocab_size {
            return Err(format!("token {token} is outside the vocabulary of {}", c.vocab_size));
        }
        let eps = c.rms_norm_eps as f32;
        let first = st.prev_token.is_none();
        let n = &mut st.counters;
        n.tokens += 1;
        // Embedding: rows differ from row 0 only at their listed entries, so two rows differ at most there.
        let row = &self.embed.data[t * hsz..(t + 1) * hsz];
        let h0 = &mut st.h[0];
        h0.begin();
        match st.prev_token.map(|p| (&self.embed_diff[p as usize], &self.embed_diff[t])) {
            Some((Some(a), Some(b))) => {
                for &i in a.iter().chain(b) {
                    h0.set(i as usize, row[i as usize]);
                }
                h0.finish();
            }
            _ => h0.replace(row),
        }
        st.prev_token = Some(token);
        let pos = st.position;
        for (l, (layer, ls)) in self.layers.iter().zip(st.layers.iter_mut()).enumerate() {
            let (lo, hi) = st.h.split_at_mut(2 * l + 1);
            let h_in = &lo[2 * l];
            let (mid, rest) = hi.split_at_mut(1);
            let (h_mid, h_out) = (&mut mid[0], &mut rest[0]);
            ls.norm1.update(h_in, &layer.input_norm, eps, first);
            let mixed: &Tracked = match (&layer.mixer, &mut ls.mixer) {
                (Mixer::Linear(d), MixerState::Linear(ds)) => {
                    if d.qkv.m.nnz() == 0 {
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
            ls.norm2.update(h_mid, &layer.post_norm, eps, first);
            layer.gate.update(&mut ls.gate, &ls.norm2.x, first, n);
            layer.up.update(&mut ls.up, &ls.norm2.x, first, n);
            swiglu(&ls.gate.y, &ls.up.y, &mut ls.act, first);
            layer.down.update(&mut ls.down, &ls.act, first, n);
            residual_add(h_mid, &ls.down.y, h_out, first);
        }
        let last = &st.h[2 * self.layers.len()];
        st.final_norm.update(last, &self.final_norm, eps, first);
        self.lm_head.update(&mut st.logits, &st.final_norm.x, first, n);
        st.position += 1;
        Ok(())
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
            for ch in 0..mixed.v.len() {
                if !d.has_history[ch] {
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
        ds.act.finish();
        // Which heads' inputs changed.
        let DeltaState { q_dirty, k_dirty, q_changed, z_dirty, .. } = ds;
        for f in [&mut *q_dirty, &mut *k_dirty, &mut *q_changed, &mut *z_dirty] {
            f.fill(first);
        }
        for &ch in ds.act.ch() {
            let ch = ch as usize;
            if ch < key_dim {
                q_dirty[ch / dk] = true;
            } else if ch < 2 * key_dim {
                k_dirty[(ch - key_dim) / dk] = true;
            }
        }
        for &j in ds.z.y.ch() {
            z_dirty[j as usize / dv] = true;
        }
        let scale = (1.0 / (dk as f64).sqrt()) as f32;
        let same = |a: &Option<Vec<(u32, f32)>>, b: &Option<Vec<(u32, f32)>>| match (a, b) {
            (None, None) => true,
            (Some(a), Some(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.0 == y.0 && x.1.to_bits() == y.1.to_bits()),
            _ => false,
        };
        for i in 0..nk {
            if q_dirty[i] {
                let q = l2_scaled(&ds.act.v[i * dk..(i + 1) * dk], scale);
                if !same(&q, &ds.qh[i]) {
                    q_changed[i] = true;
                    ds.qh[i] = q;
                }
            }
            if k_dirty[i] {
                ds.kh[i] = l2_scaled(&ds.act.v[key_dim + i * dk..key_dim + (i + 1) * dk], 1.0);
            }
        }
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
        // The heads with anything to do: writing or decaying ones, those whose query or gate changed. The
        // others' state and output are as they were.
        ds.visit.clear();
        {
            let DeltaState { visit, visit_mark, writers, decaying, q_changed, z, .. } = &mut *ds;
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
                for (ki, _) in q_changed.iter().enumerate().filter(|(_, c)| **c) {
                    (ki * per_k..(ki + 1) * per_k).for_each(&mut add);
                }
                z.y.ch().iter().for_each(|j| add(*j as usize / dv));
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
            }
            if let (true, Some(kv)) = (ds.beta[hv] != 0.0, &ds.kh[ki]) {
                s_changed |= write_head(stt, kv, &v[hv * dv..(hv + 1) * dv], ds.beta[hv]);
            }
            if !(first || s_changed || ds.q_changed[ki] || ds.z_dirty[hv]) {
                continue;
            }
            o.fill(0.0);
            if let Some(qv) = &ds.qh[ki] {
                read_head(stt, qv, &ds.z.y.v[hv * dv..(hv + 1) * dv], &d.norm_w, eps, o);
            }
            for (j, oj) in o.iter().enumerate() {
                ds.o.set(hv * dv + j, *oj);
            }
        }
        ds.o.finish();
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
            x.begin();
            for (i, e) in v.iter().enumerate() {
                x.set(i, *e);
            }
            x.finish();
            let before = n;
            p.update(&mut st, &x, t == 0, &mut n);
            let ran = if n.full_products > before.full_products { 'F' } else { 'I' };
            let want = full(v);
            let bits = |u: &[f32]| u.iter().map(|e| e.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&st.y.v), bits(&want), "token {t}: {:?} vs {:?}", st.y.v, want);
            assert_eq!(ran, *path, "token {t}: path");
            // The recorded changes are exactly the entries whose bits differ from the previous token's output.
            for (k, &i) in st.y.ch().iter().enumerate() {
                assert_ne!(st.y.old()[k].to_bits(), st.y.v[i as usize].to_bits());
            }
        }
        assert!(n.incremental_products >= 4 && n.full_products >= 5, "{n:?}");
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
            x.begin();
            x.set(0, v[0]);
            x.set(1, v[1]);
            x.finish();
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
