//! [`IncrementalModel`]: the layers as incremental stages; [`IncrementalState`]: one sequence's kept
//! activations and caches.

use super::argmax::{ArgmaxBlocks, SplitHead, SplitHeadState};
use super::deltanet::{DeltaNet, DeltaState};
use super::projection::{full_product, mark_columns, ProjState, Projection};
use super::factored::{FactoredHead, FactoredState};
use super::exact::{squares_cap, InputGrid};
use super::tracked::{Bits, Tracked};
use crate::config::{LayerType, Qwen35Config};
use crate::names::{LayerTensor, EMBED_TOKENS, FINAL_NORM, LM_HEAD};
use crate::error::CpuError;
use crate::cpu::math::{attend, rope_inv_freq, silu};
use crate::cpu::CheckedWeights;
use crate::cpu::SparseMatrix;
use crate::tensor::WeightMap;

/// A set of residual entries, as bits `[hidden]` and a list.
struct Reads {
    mask: Bits,
    list: Vec<u32>,
}

impl Reads {
    /// The nonzero columns of `ms`, the columns `extra` and those already in `mask`.
    fn of(mut mask: Vec<bool>, ms: &[&SparseMatrix], extra: &[u32]) -> Self {
        ms.iter().for_each(|m| mark_columns(m, &mut mask));
        extra.iter().for_each(|&c| mask[c as usize] = true);
        let list = (0..mask.len() as u32).filter(|&i| mask[i as usize]).collect();
        Self { mask: Bits::of(&mask), list }
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
                Some(rd) => rd.list.iter().for_each(|&i| self.x.set_final(i as usize, (h.v[i as usize] * r) * one_plus_w[i as usize])),
                None => (0..n).for_each(|i| self.x.set_final(i, (h.v[i] * r) * one_plus_w[i])),
            }
        } else {
            for &i in h.ch() {
                let i = i as usize;
                if reads.is_none_or(|rd| rd.mask.has(i)) {
                    self.x.set_final(i, (h.v[i] * r) * one_plus_w[i]);
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
            act.set_final(i, f(i));
        }
    } else {
        for &i in g.ch().iter().chain(u.ch()) {
            let i = i as usize;
            let v = f(i);
            if !(v == 0.0 && act.v[i] == 0.0) {
                act.set_final(i, v);
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
#[inline(always)]
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
            out.set_final(i, a.v[i] + b.v[i]);
        }
    } else {
        for &i in a.ch().iter().chain(b.ch()) {
            let i = i as usize;
            out.set_final(i, a.v[i] + b.v[i]);
        }
    }
    out.finish_single_writes();
}

type Attention = crate::cpu::layer::Attention<Projection>;
type Mixer = crate::cpu::layer::Mixer<DeltaNet, Attention>;

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
    /// Incremental products that kept no row bounds (see `Projection::update`).
    pub unbounded_products: u64,
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
    /// The entries of the final norm's output that the lm_head reads: only those are computed (the others
    /// enter its sum of squares alone).
    final_reads: Reads,
    lm_head: Projection,
    /// The lm_head's sign-product groups and its other rows, for the greedy token ([`FactoredHead`]).
    head: Option<SplitHead>,
    inv_freq: Vec<f32>,
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
    /// Adds what `later` timed beyond `earlier` (two readings of one session's profile, `earlier` first): the
    /// time of the tokens fed between them, with their count.
    pub fn add_since(&mut self, later: &StageTimes, earlier: &StageTimes) {
        self.layers.resize(later.layers.len(), [0; STAGES.len()]);
        for (l, acc) in self.layers.iter_mut().enumerate() {
            let before = earlier.layers.get(l).copied().unwrap_or_default();
            for (s, a) in acc.iter_mut().enumerate() {
                *a += later.layers[l][s] - before[s];
            }
        }
        self.head += later.head - earlier.head;
        self.tokens += later.tokens - earlier.tokens;
    }

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
            let mut touch = vec![false; cfg.hidden_size];
            // The columns of in_proj_qkv and in_proj_z, before they are split.
            let mut mixer_cols = vec![false; cfg.hidden_size];
            let mixer = match lt {
                LayerType::LinearAttention => Mixer::Linear(DeltaNet::new(cfg, &w, i, &mut touch, &mut mixer_cols)?),
                LayerType::FullAttention => {
                    Mixer::Full(Attention {
                        q: proj(&LayerTensor::QProj.name(i))?,
                        k: proj(&LayerTensor::KProj.name(i))?,
                        v: proj(&LayerTensor::VProj.name(i))?,
                        o: proj(&LayerTensor::OProj.name(i))?,
                        q_norm: one_plus(&LayerTensor::QNorm.name(i))?,
                        k_norm: one_plus(&LayerTensor::KNorm.name(i))?,
                    })
                }
            };
            let (gate, up) = (proj(&LayerTensor::GateProj.name(i))?.feeding_silu(), proj(&LayerTensor::UpProj.name(i))?);
            let mixer_reads = match &mixer {
                Mixer::Linear(d) => Reads::of(mixer_cols, &[&d.b.m, &d.a.m], &[]),
                Mixer::Full(a) => Reads::of(mixer_cols, &[&a.q.m, &a.k.m, &a.v.m], &[]),
            };
            let lookup_cols: Vec<u32> = gate.lookups.iter().flat_map(|(b, _)| b.cols.iter().copied()).collect();
            let mlp_reads = Reads::of(vec![false; cfg.hidden_size], &[&gate.m, &up.m], &lookup_cols);
            let layer = Layer {
                input_norm: one_plus(&LayerTensor::InputNorm.name(i))?,
                post_norm: one_plus(&LayerTensor::PostNorm.name(i))?,
                mixer_reads,
                mlp_reads,
                mixer,
                gate,
                up,
                down: proj(&LayerTensor::DownProj.name(i))?,
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
        let embed = get(EMBED_TOKENS)?;
        let lm_head = if cfg.tie_word_embeddings { Projection::new(embed) } else { proj(LM_HEAD)? };
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
        let final_reads = Reads::of(vec![false; hsz], &[&lm_head.m], &[]);
        Ok(Self { cfg: cfg.clone(), embed_row0, embed_rows, layers, next_toucher, final_norm: one_plus(FINAL_NORM)?, final_reads, lm_head, head, inv_freq: rope_inv_freq(cfg) })
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
        let layers = self
            .layers
            .iter()
            .map(|l| LayerState {
                norm1: NormState::new(hsz),
                mixer: match &l.mixer {
                    Mixer::Linear(d) => MixerState::Linear(Box::new(DeltaState::new(c, d))),
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

    /// Feed one token; returns the greedy next token: [`crate::cpu::argmax`]'s (the first maximum, as
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
        crate::cpu::argmax(&y)
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
                    h0.set_final(i as usize, v);
                }
                for &(i, v) in b {
                    h0.set_final(i as usize, v);
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
            // The input norm only where the mixer reads it: an inert mixer adds exactly 0 whatever its input,
            // so its norm is never read (and never kept, from the first token on).
            let mixed: &Tracked = match (&layer.mixer, &mut ls.mixer) {
                (Mixer::Linear(d), MixerState::Linear(ds)) => {
                    if d.qkv.m.nnz() == 0 && d.onehot.is_none() {
                        // q, k and v are exactly 0 at every position: the mixer adds exactly 0.
                        &st.zero
                    } else {
                        ls.norm1.update(h_in, &layer.input_norm, eps, first, Some(&layer.mixer_reads));
                        d.update(&self.cfg, ds, &ls.norm1.x, first, n);
                        &ds.out.y
                    }
                }
                (Mixer::Full(a), MixerState::Full(s)) => {
                    if a.o.m.nnz() == 0 {
                        // An all-zero o_proj adds exactly 0 whatever the attention computes.
                        &st.zero
                    } else {
                        ls.norm1.update(h_in, &layer.input_norm, eps, first, Some(&layer.mixer_reads));
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
        st.final_norm.update(last, &self.final_norm, eps, first, Some(&self.final_reads));
        st.position += 1;
        Ok(first)
    }

    #[inline(never)]
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
    use crate::incremental::tracked::testing::bits;


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
            use LayerTensor::*;
            let reads = [InProjQkv, InProjZ, InProjA, InProjB, QProj, KProj, VProj, GateProj, UpProj].map(|t| t.name(l));
            let writes = [OutProj, OProj, DownProj].map(|t| t.name(l));
            for (name, t) in w.iter_mut() {
                if reads.contains(name) {
                    for row in t.data.chunks_exact_mut(hsz) {
                        for i in skipped.clone() {
                            row[i] = 0.0;
                        }
                    }
                } else if writes.contains(name) {
                    let cols = t.shape[1];
                    for i in skipped.clone() {
                        t.data[i * cols..(i + 1) * cols].fill(0.0);
                    }
                }
            }
        }
        // Token embeddings: entry 0 is +0, -0 or ±1.5 (a sign flip between some tokens), entry 1 -0 or random.
        let emb = w.get_mut(EMBED_TOKENS).unwrap();
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
}
