//! The Qwen3.5 layers on sparse matrices: RMSNorm, SwiGLU MLP, Gated DeltaNet, gated full attention; the
//! model ([`SparseModel`]) and its per-sequence caches ([`SparseState`]).

use super::matrix::SparseMatrix;
use crate::config::{LayerType, Qwen35Config};
use crate::error::CpuError;
use crate::jit::{CompiledMatrix, Compiler, Form};
use crate::tensor::{HostTensor, WeightMap};

pub(crate) fn silu(x: f32) -> f32 {
    if x < -89.0 {
        // exp(-x) overflows to +inf in f32 (e^88.73 > f32::MAX), so x / (1 + inf) is exactly -0.
        return -0.0;
    }
    if x > 32.0 {
        // exp(-x) < 2^-46 vanishes next to 1 in f32: x / 1 is exactly x.
        return x;
    }
    x / (1.0 + (-x).exp())
}
pub(crate) fn sigmoid(x: f32) -> f32 {
    if x < -89.0 {
        // exp(-x) overflows to +inf, so 1 / (1 + inf) is exactly +0.
        return 0.0;
    }
    if x > 17.0 {
        // exp(-x) < 2^-24.5 is below half an ulp of 1: 1 + exp(-x) rounds to 1, and 1 / 1 is 1.
        return 1.0;
    }
    1.0 / (1.0 + (-x).exp())
}
/// torch's `F.softplus` with beta 1 and threshold 20.
pub(crate) fn softplus(x: f32) -> f32 {
    if x > 20.0 { x } else { x.exp().ln_1p() }
}

/// Zero-centred RMSNorm of transformers' `Qwen3_5RMSNorm`.
#[inline(never)]
pub(crate) fn rms_norm(x: &[f32], one_plus_w: &[f32], eps: f32) -> Vec<f32> {
    let ms = x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32;
    let r = 1.0 / (ms + eps).sqrt();
    x.iter().zip(one_plus_w).map(|(v, g)| (v * r) * g).collect()
}

/// A projection as the step multiplies it: its sparse matrix, and in a compiled model its native code
/// ([`crate::jit`]), which then computes every product. Reads as the matrix (shape, nonzeros, rows).
struct Proj {
    m: SparseMatrix,
    code: Option<CompiledMatrix>,
}

impl Proj {
    /// `y = W x`: the compiled code where there is some, else the sparse matrix's product.
    fn matvec(&self, x: &[f32]) -> Vec<f32> {
        match &self.code {
            Some(c) => c.matvec(x),
            None => self.m.matvec(x),
        }
    }
}

impl std::ops::Deref for Proj {
    type Target = SparseMatrix;
    fn deref(&self) -> &SparseMatrix {
        &self.m
    }
}

struct Mlp {
    gate: Proj,
    up: Proj,
    down: Proj,
}

impl Mlp {
    #[inline(never)]
    fn forward(&self, x: &[f32]) -> Vec<f32> {
        let g = self.gate.matvec(x);
        let u = self.up.matvec(x);
        let h: Vec<f32> = g.iter().zip(&u).map(|(g, u)| if *g == 0.0 || *u == 0.0 { 0.0 } else { silu(*g) * u }).collect();
        self.down.matvec(&h)
    }
}

struct DeltaNet {
    qkv: Proj,
    /// Conv channels whose `in_proj_qkv` row has a nonzero. Every other channel's input, conv window and
    /// SiLU output stay exactly 0, so they are skipped.
    active: Vec<u32>,
    /// Per conv channel: some tap before the current one is nonzero. Channels without history compute
    /// `w_last * x` (the zero taps add exactly 0) and keep no window.
    history: Vec<bool>,
    z: Proj,
    b: Proj,
    a: Proj,
    /// `[conv_dim, kernel]`.
    conv: Vec<f32>,
    dt_bias: Vec<f32>,
    /// `-exp(A_log)` per value head.
    neg_a: Vec<f32>,
    norm_w: Vec<f32>,
    out: Proj,
}

struct Attention {
    q: Proj,
    k: Proj,
    v: Proj,
    o: Proj,
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
    mlp: Mlp,
}

/// A Qwen3.5 model prepared for sparse decoding.
pub struct SparseModel {
    cfg: Qwen35Config,
    embed: HostTensor,
    layers: Vec<Layer>,
    final_norm: Vec<f32>,
    lm_head: Proj,
    inv_freq: Vec<f32>,
    /// Built by [`Self::compiled`] (the `jit` executor).
    compiled: bool,
}

/// Per-sequence caches: DeltaNet conv windows and recurrent states, attention KV caches, position.
#[derive(Clone)]
pub struct SparseState {
    /// Per layer: conv window `[conv_dim, kernel-1]` (oldest first) and state `[nv, d_k, d_v]`
    /// (DeltaNet), or keys/values `[t][nkv*head_dim]` (attention).
    layers: Vec<LayerState>,
    /// Tokens consumed so far (the next token's position id).
    pub position: usize,
}

#[derive(Clone)]
enum LayerState {
    Linear { conv: Vec<f32>, s: Vec<f32> },
    Full { k: Vec<Vec<f32>>, v: Vec<Vec<f32>> },
}

/// A model's weights with the shapes its config expects: every tensor is checked as it is taken. Shared by
/// the CPU executors.
pub(crate) struct CheckedWeights<'a> {
    weights: &'a WeightMap,
    shapes: std::collections::HashMap<String, Vec<usize>>,
}

impl<'a> CheckedWeights<'a> {
    /// Validate `cfg` and index the shapes it expects.
    pub(crate) fn new(cfg: &Qwen35Config, weights: &'a WeightMap) -> Result<Self, CpuError> {
        cfg.validate()?;
        Ok(Self { weights, shapes: cfg.expected_tensors().into_iter().collect() })
    }

    /// The tensor `name` (a name the config expects); errors name a missing or misshapen tensor.
    pub(crate) fn get(&self, name: &str) -> Result<&'a HostTensor, CpuError> {
        let t = self.weights.get(name).ok_or_else(|| CpuError::MissingTensor { name: name.to_string() })?;
        let shape = &self.shapes[name];
        if &t.shape != shape {
            let (found, expected) = (t.shape.clone(), shape.clone());
            return Err(CpuError::TensorShape { name: name.to_string(), found, expected });
        }
        Ok(t)
    }

    /// `1 + w` of a zero-centred RMSNorm weight.
    pub(crate) fn one_plus(&self, name: &str) -> Result<Vec<f32>, CpuError> {
        Ok(self.get(name)?.data.iter().map(|w| 1.0 + w).collect())
    }
}

/// Per conv channel `[conv_dim]`: some tap before the current one is nonzero (`conv` is `[conv_dim, kernel]`).
pub(crate) fn conv_history(conv: &[f32], kernel: usize) -> Vec<bool> {
    conv.chunks_exact(kernel).map(|w| w[..kernel - 1].iter().any(|v| *v != 0.0)).collect()
}

/// The rotary inverse frequencies `1 / theta^(2i / rotary_dim)`, computed as transformers does: in f32 from an
/// f32 arange.
pub(crate) fn rope_inv_freq(cfg: &Qwen35Config) -> Vec<f32> {
    let rd = cfg.rotary_dim();
    let theta = cfg.rope_parameters.rope_theta;
    (0..rd / 2).map(|i| 1.0f32 / (theta as f32).powf((2 * i) as f32 / rd as f32)).collect()
}

impl SparseModel {
    /// Prepare `weights` (named as `Qwen3_5ForCausalLM` names them) for decoding. Errors name a missing or
    /// misshapen tensor.
    pub fn new(cfg: &Qwen35Config, weights: &WeightMap) -> Result<Self, CpuError> {
        Self::build(cfg, weights, None)
    }

    /// [`Self::new`] with its projections compiled into native code by cranelift (the `jit` executor, see
    /// [`crate::jit`]; those above [`crate::jit::COMPILE_MAX_NNZ`] nonzeros keep the sparse product): the same
    /// step, the same logits on woven checkpoints. Errors as [`Self::new`], and
    /// where cranelift cannot compile for this CPU.
    pub fn compiled(cfg: &Qwen35Config, weights: &WeightMap) -> Result<Self, CpuError> {
        let jit = Compiler::new()?;
        Self::build(cfg, weights, Some(&jit))
    }

    /// Was the model built by [`Self::compiled`]?
    pub fn is_compiled(&self) -> bool {
        self.compiled
    }

    fn build(cfg: &Qwen35Config, weights: &WeightMap, jit: Option<&Compiler>) -> Result<Self, CpuError> {
        let w = CheckedWeights::new(cfg, weights)?;
        let get = |name: &str| w.get(name);
        // Projections of sparse activations (down, out, o): CSC, or compiled by columns; those of the normed
        // residual: CSR, or compiled by rows. A compiled model compiles the projections of up to
        // `COMPILE_MAX_NNZ` nonzeros; larger ones keep the data-driven product, which is faster there.
        let proj = |m: SparseMatrix, form: Form, name: &str| -> Result<Proj, CpuError> {
            match jit {
                Some(j) if m.nnz() <= crate::jit::COMPILE_MAX_NNZ => {
                    let code = j.compile(&m, form, name)?;
                    Ok(Proj { m, code: Some(code) })
                }
                _ if form == Form::Rows => Ok(Proj { m: m.into_row_major(), code: None }),
                _ => Ok(Proj { m, code: None }),
            }
        };
        let sp = |name: &str| -> Result<Proj, CpuError> { proj(SparseMatrix::from_dense(get(name)?), Form::Columns, name) };
        let spr = |name: &str| -> Result<Proj, CpuError> { proj(SparseMatrix::from_dense(get(name)?), Form::Rows, name) };
        let one_plus = |name: &str| w.one_plus(name);
        let mut layers = Vec::new();
        for (i, lt) in cfg.layer_types.iter().enumerate() {
            let p = format!("model.layers.{i}");
            let mixer = match lt {
                LayerType::LinearAttention => {
                    let a = format!("{p}.linear_attn");
                    let qkv = spr(&format!("{a}.in_proj_qkv.weight"))?;
                    Mixer::Linear(DeltaNet {
                        active: qkv.nonempty_rows(),
                        history: conv_history(&get(&format!("{a}.conv1d.weight"))?.data, cfg.linear_conv_kernel_dim),
                        qkv,
                        z: spr(&format!("{a}.in_proj_z.weight"))?,
                        b: spr(&format!("{a}.in_proj_b.weight"))?,
                        a: spr(&format!("{a}.in_proj_a.weight"))?,
                        conv: get(&format!("{a}.conv1d.weight"))?.data.clone(),
                        dt_bias: get(&format!("{a}.dt_bias"))?.data.clone(),
                        neg_a: get(&format!("{a}.A_log"))?.data.iter().map(|v| -v.exp()).collect(),
                        norm_w: get(&format!("{a}.norm.weight"))?.data.clone(),
                        out: sp(&format!("{a}.out_proj.weight"))?,
                    })
                }
                LayerType::FullAttention => {
                    let a = format!("{p}.self_attn");
                    Mixer::Full(Attention {
                        q: spr(&format!("{a}.q_proj.weight"))?,
                        k: spr(&format!("{a}.k_proj.weight"))?,
                        v: spr(&format!("{a}.v_proj.weight"))?,
                        o: sp(&format!("{a}.o_proj.weight"))?,
                        q_norm: one_plus(&format!("{a}.q_norm.weight"))?,
                        k_norm: one_plus(&format!("{a}.k_norm.weight"))?,
                    })
                }
            };
            layers.push(Layer {
                input_norm: one_plus(&format!("{p}.input_layernorm.weight"))?,
                post_norm: one_plus(&format!("{p}.post_attention_layernorm.weight"))?,
                mixer,
                mlp: Mlp {
                    gate: spr(&format!("{p}.mlp.gate_proj.weight"))?,
                    up: spr(&format!("{p}.mlp.up_proj.weight"))?,
                    down: sp(&format!("{p}.mlp.down_proj.weight"))?,
                },
            });
        }
        let embed = get("model.embed_tokens.weight")?.clone();
        let lm_head = if cfg.tie_word_embeddings { proj(SparseMatrix::from_dense(&embed), Form::Rows, "lm_head (tied)")? } else { spr("lm_head.weight")? };
        Ok(Self { cfg: cfg.clone(), embed, layers, final_norm: one_plus("model.norm.weight")?, lm_head, inv_freq: rope_inv_freq(cfg), compiled: jit.is_some() })
    }

    /// The model's configuration.
    pub fn config(&self) -> &Qwen35Config {
        &self.cfg
    }

    /// Nonzero weights held (all projections, embedding excluded).
    pub fn nonzero_weights(&self) -> usize {
        let mut n = self.lm_head.nnz();
        for l in &self.layers {
            n += l.mlp.gate.nnz() + l.mlp.up.nnz() + l.mlp.down.nnz();
            n += match &l.mixer {
                Mixer::Linear(d) => d.qkv.nnz() + d.z.nnz() + d.a.nnz() + d.b.nnz() + d.out.nnz(),
                Mixer::Full(a) => a.q.nnz() + a.k.nnz() + a.v.nnz() + a.o.nnz(),
            };
        }
        n
    }

    /// Nonzero weights per projection, named as the checkpoint names them (embedding excluded).
    pub fn nonzero_breakdown(&self) -> Vec<(String, usize)> {
        let mut v = vec![("lm_head.weight".to_string(), self.lm_head.nnz())];
        for (i, l) in self.layers.iter().enumerate() {
            let p = format!("model.layers.{i}");
            let mut push = |n: &str, m: &Proj| v.push((format!("{p}.{n}"), m.nnz()));
            push("mlp.gate_proj.weight", &l.mlp.gate);
            push("mlp.up_proj.weight", &l.mlp.up);
            push("mlp.down_proj.weight", &l.mlp.down);
            match &l.mixer {
                Mixer::Linear(d) => {
                    push("linear_attn.in_proj_qkv.weight", &d.qkv);
                    push("linear_attn.in_proj_z.weight", &d.z);
                    push("linear_attn.in_proj_a.weight", &d.a);
                    push("linear_attn.in_proj_b.weight", &d.b);
                    push("linear_attn.out_proj.weight", &d.out);
                }
                Mixer::Full(a) => {
                    push("self_attn.q_proj.weight", &a.q);
                    push("self_attn.k_proj.weight", &a.k);
                    push("self_attn.v_proj.weight", &a.v);
                    push("self_attn.o_proj.weight", &a.o);
                }
            }
        }
        v
    }

    /// Empty caches for a new sequence.
    pub fn new_state(&self) -> SparseState {
        let c = &self.cfg;
        let layers = c
            .layer_types
            .iter()
            .map(|lt| match lt {
                LayerType::LinearAttention => LayerState::Linear {
                    conv: vec![0.0; c.linear_conv_dim() * (c.linear_conv_kernel_dim - 1)],
                    s: vec![0.0; c.linear_num_value_heads * c.linear_key_head_dim * c.linear_value_head_dim],
                },
                LayerType::FullAttention => LayerState::Full { k: Vec::new(), v: Vec::new() },
            })
            .collect();
        SparseState { layers, position: 0 }
    }

    /// Feed one token; returns the logits `[vocab]` of the next token. Errors on a token id outside the
    /// vocabulary.
    pub fn step(&self, state: &mut SparseState, token: u32) -> Result<Vec<f32>, CpuError> {
        let h = self.forward(state, token, None)?;
        let x = rms_norm(&h, &self.final_norm, self.cfg.rms_norm_eps as f32);
        Ok(self.lm_head.matvec(&x))
    }

    /// Feed one token; returns the greedy next token (the first maximum, as `torch.argmax` does).
    pub fn step_argmax(&self, state: &mut SparseState, token: u32) -> Result<u32, CpuError> {
        Ok(argmax(&self.step(state, token)?))
    }

    /// Feed one token; returns the residual stream after the embedding and after each layer
    /// (`num_hidden_layers + 1` vectors of `hidden_size`), the last with the final norm applied, as
    /// transformers' `output_hidden_states` reports them.
    pub fn step_hidden(&self, state: &mut SparseState, token: u32) -> Result<Vec<Vec<f32>>, CpuError> {
        let mut hs = Vec::new();
        let h = self.forward(state, token, Some(&mut hs))?;
        let last = hs.len() - 1;
        hs[last] = rms_norm(&h, &self.final_norm, self.cfg.rms_norm_eps as f32);
        Ok(hs)
    }

    fn forward(&self, state: &mut SparseState, token: u32, mut trace: Option<&mut Vec<Vec<f32>>>) -> Result<Vec<f32>, CpuError> {
        let c = &self.cfg;
        let hsz = c.hidden_size;
        let t = token as usize;
        if t >= c.vocab_size {
            return Err(CpuError::Token { token, vocab: c.vocab_size });
        }
        let eps = c.rms_norm_eps as f32;
        let mut h: Vec<f32> = self.embed.data[t * hsz..(t + 1) * hsz].to_vec();
        if let Some(tr) = trace.as_deref_mut() {
            tr.push(h.clone());
        }
        let pos = state.position;
        for (layer, ls) in self.layers.iter().zip(state.layers.iter_mut()) {
            let x = rms_norm(&h, &layer.input_norm, eps);
            let mixed = match (&layer.mixer, ls) {
                (Mixer::Linear(d), LayerState::Linear { conv, s }) => self.deltanet(d, &x, conv, s),
                (Mixer::Full(a), LayerState::Full { k, v }) => self.attention(a, &x, k, v, pos),
                _ => unreachable!("state built from the same layer_types"),
            };
            for (hv, m) in h.iter_mut().zip(&mixed) {
                *hv += m;
            }
            let x = rms_norm(&h, &layer.post_norm, eps);
            let m = layer.mlp.forward(&x);
            for (hv, m) in h.iter_mut().zip(&m) {
                *hv += m;
            }
            if let Some(tr) = trace.as_deref_mut() {
                tr.push(h.clone());
            }
        }
        state.position += 1;
        Ok(h)
    }

    #[inline(never)]
    fn deltanet(&self, d: &DeltaNet, x: &[f32], conv_state: &mut [f32], s: &mut [f32]) -> Vec<f32> {
        let c = &self.cfg;
        let (nk, nv, dk, dv) = (c.linear_num_key_heads, c.linear_num_value_heads, c.linear_key_head_dim, c.linear_value_head_dim);
        let kk = c.linear_conv_kernel_dim;
        let key_dim = nk * dk;
        if d.qkv.nnz() == 0 {
            // q, k and v are exactly 0 at every position: nothing is ever written (the state stays 0) and
            // every read is S^T 0 = 0, whose gated norm is 0. The layer's mixer adds exactly 0.
            return vec![0.0; c.hidden_size];
        }
        let mixed = d.qkv.matvec(x);
        // Depthwise causal conv over [window (kernel-1 previous inputs, oldest first), current], then SiLU.
        let conv_dim = mixed.len();
        let mut act = vec![0f32; conv_dim];
        for &ch in &d.active {
            let ch = ch as usize;
            let w = &d.conv[ch * kk..(ch + 1) * kk];
            if !d.history[ch] {
                let acc = w[kk - 1] * mixed[ch];
                act[ch] = if acc == 0.0 { 0.0 } else { silu(acc) };
                continue;
            }
            let win = &mut conv_state[ch * (kk - 1)..(ch + 1) * (kk - 1)];
            let mut acc = 0f32;
            for j in 0..kk - 1 {
                acc += w[j] * win[j];
            }
            acc += w[kk - 1] * mixed[ch];
            act[ch] = if acc == 0.0 { 0.0 } else { silu(acc) };
            if kk > 1 {
                win.rotate_left(1);
                win[kk - 2] = mixed[ch];
            }
        }
        let (q, rest) = act.split_at(key_dim);
        let (k, v) = rest.split_at(key_dim);
        let z = d.z.matvec(x);
        let b = d.b.matvec(x);
        let a = d.a.matvec(x);
        // transformers multiplies the normalised query by the Python float 1 / d_k ** 0.5, cast to f32.
        let scale = (1.0 / (dk as f64).sqrt()) as f32;
        // Per key head: L2-normalised q (times that scale) and k, or None when all zero (the normalised
        // vector is then exactly zero too: 0 * rsqrt(0 + 1e-6) = 0), which skips the head's read or write.
        let per_k = nv / nk;
        let mut out = vec![0f32; nv * dv];
        let mut scratch = vec![0f32; 2 * dv];
        let mut qh: Vec<Option<Vec<(u32, f32)>>> = Vec::with_capacity(nk);
        let mut kh: Vec<Option<Vec<(u32, f32)>>> = Vec::with_capacity(nk);
        for i in 0..nk {
            qh.push(l2_scaled(&q[i * dk..(i + 1) * dk], scale));
            kh.push(l2_scaled(&k[i * dk..(i + 1) * dk], 1.0));
        }
        let eps = c.rms_norm_eps as f32;
        for hv in 0..nv {
            let ki = hv / per_k;
            let vv = &v[hv * dv..(hv + 1) * dv];
            let beta = sigmoid(b[hv]);
            let g = d.neg_a[hv] * softplus(a[hv] + d.dt_bias[hv]);
            let decay = g.exp();
            let st = &mut s[hv * dk * dv..(hv + 1) * dk * dv];
            if decay != 1.0 {
                st.iter_mut().for_each(|e| *e *= decay);
            }
            if let (true, Some(kv)) = (beta != 0.0, &kh[ki]) {
                write_head(st, kv, vv, beta, &mut scratch);
            }
            let Some(qv) = &qh[ki] else {
                // o = S^T 0 = 0, and the gated RMSNorm of 0 is exactly 0.
                continue;
            };
            read_head(st, qv, &z[hv * dv..(hv + 1) * dv], &d.norm_w, eps, &mut out[hv * dv..(hv + 1) * dv]);
        }
        d.out.matvec(&out)
    }

    fn attention(&self, a: &Attention, x: &[f32], kc: &mut Vec<Vec<f32>>, vc: &mut Vec<Vec<f32>>, pos: usize) -> Vec<f32> {
        let c = &self.cfg;
        if a.o.nnz() == 0 {
            // An all-zero o_proj adds exactly 0 whatever the attention computes (its inputs are finite), so
            // neither the attention nor its KV cache is needed: a long trace does not slow such a layer down.
            return vec![0.0; c.hidden_size];
        }
        let qg = a.q.matvec(x);
        let k = a.k.matvec(x);
        let v = a.v.matvec(x);
        let out = attend(c, &self.inv_freq, &a.q_norm, &a.k_norm, &qg, k, v, kc, vc, pos);
        a.o.matvec(&out)
    }
}

/// A key head's `q` or `k` `[d_k]` L2-normalised (`u * rsqrt(sum(u^2) + 1e-6)`) and times `mul`, as its
/// nonzero entries `(row, value)` in ascending rows, or `None` when all zero (the normalised vector is then
/// exactly zero too: `0 * rsqrt(0 + 1e-6) = 0`), which skips the head's read or write. The zero entries
/// are left out of the sum of squares: adding `+0` changes no f32 sum, so the result is the dense one's.
pub(crate) fn l2_scaled(u: &[f32], mul: f32) -> Option<Vec<(u32, f32)>> {
    let mut out = Vec::new();
    l2_scaled_into(u, mul, &mut out).then_some(out)
}

/// [`l2_scaled`] into `out` (cleared first, its allocation kept): returns `false` where that returns `None`.
pub(crate) fn l2_scaled_into(u: &[f32], mul: f32, out: &mut Vec<(u32, f32)>) -> bool {
    out.clear();
    out.extend(u.iter().enumerate().filter(|(_, e)| **e != 0.0).map(|(i, e)| (i as u32, *e)));
    l2_normalise(out, mul)
}

/// The second half of [`l2_scaled_into`]: `out` holds the nonzero entries `(index, value)` of a vector in
/// ascending index order; they become the normalised entries times `mul` (those that stay nonzero). Returns
/// `false` (and leaves `out` empty) when there are none.
pub(crate) fn l2_normalise(out: &mut Vec<(u32, f32)>, mul: f32) -> bool {
    if out.is_empty() {
        return false;
    }
    let ss = out.iter().map(|(_, e)| e * e).sum::<f32>();
    let r = 1.0 / (ss + 1e-6).sqrt();
    for e in out.iter_mut() {
        e.1 = (e.1 * r) * mul;
    }
    out.retain(|(_, e)| *e != 0.0);
    true
}

/// The delta rule's write into one value head's state `st` `[d_k, d_v]` with key `kv` (its nonzero
/// entries, ascending rows), value `vv` `[d_v]` and `beta`: `kv_mem = S^T k; delta = (v - kv_mem) * beta;
/// S += k delta^T`. `scratch` holds at least `2 d_v` entries (overwritten). Returns whether any entry of
/// `delta` is nonzero (otherwise `S` is unchanged).
pub(crate) fn write_head(st: &mut [f32], kv: &[(u32, f32)], vv: &[f32], beta: f32, scratch: &mut [f32]) -> bool {
    write_head_settled(st, kv, vv, beta, scratch).0
}

/// [`write_head`], also returning whether the head was *settled*: `v - S^T k` was exactly zero in every entry
/// (then `delta` is zero for every finite `beta` and `S` is unchanged). Returns `(changed, settled)`.
pub(crate) fn write_head_settled(st: &mut [f32], kv: &[(u32, f32)], vv: &[f32], beta: f32, scratch: &mut [f32]) -> (bool, bool) {
    let dv = vv.len();
    let (mem, delta) = scratch[..2 * dv].split_at_mut(dv);
    mem.fill(0.0);
    for &(r, kr) in kv {
        let r = r as usize;
        for (m, sv) in mem.iter_mut().zip(&st[r * dv..(r + 1) * dv]) {
            *m += sv * kr;
        }
    }
    let mut settled = true;
    for ((d, v), m) in delta.iter_mut().zip(vv).zip(mem.iter()) {
        let diff = v - m;
        settled &= diff == 0.0;
        *d = diff * beta;
    }
    if delta.iter().all(|d| *d == 0.0) {
        return (false, settled);
    }
    let delta = &*delta;
    for &(r, kr) in kv {
        let r = r as usize;
        for (sv, dl) in st[r * dv..(r + 1) * dv].iter_mut().zip(delta) {
            *sv += kr * dl;
        }
    }
    (true, false)
}

/// One value head's read `o = S^T q` from its state `st` `[d_k, d_v]` (`q` as its nonzero entries,
/// ascending rows), then the gated RMSNorm `w * (o * rsqrt(mean(o^2) + eps)) * silu(z)`, into `o` `[d_v]`,
/// which must hold zeros on entry.
pub(crate) fn read_head(st: &[f32], qv: &[(u32, f32)], zh: &[f32], norm_w: &[f32], eps: f32, o: &mut [f32]) {
    let dv = o.len();
    for &(r, qr) in qv {
        let r = r as usize;
        for (ov, sv) in o.iter_mut().zip(&st[r * dv..(r + 1) * dv]) {
            *ov += sv * qr;
        }
    }
    let ms = o.iter().map(|e| e * e).sum::<f32>() / dv as f32;
    let r = 1.0 / (ms + eps).sqrt();
    for j in 0..dv {
        if o[j] != 0.0 {
            o[j] = (norm_w[j] * (o[j] * r)) * silu(zh[j]);
        }
    }
}

/// Full attention of one token after its projections (`qg` = `q_proj` output `[heads * 2 * head_dim]`, the
/// query and gate of each head; `k`, `v` `[kv_heads * head_dim]`): `q_norm`/`k_norm` (`1 + w` given),
/// rotate-half rotary embedding at position `pos`, the key and value appended to the caches, grouped-query
/// softmax attention, output times `sigmoid(gate)`. Returns `[heads * head_dim]`, the input of `o_proj`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn attend(c: &Qwen35Config, inv_freq: &[f32], q_norm: &[f32], k_norm: &[f32], qg: &[f32], mut k: Vec<f32>, v: Vec<f32>, kc: &mut Vec<Vec<f32>>, vc: &mut Vec<Vec<f32>>, pos: usize) -> Vec<f32> {
    let (nh, nkv, hd) = (c.num_attention_heads, c.num_key_value_heads, c.head_dim);
    let eps = c.rms_norm_eps as f32;
    let rd = c.rotary_dim();
    let (cos, sin): (Vec<f32>, Vec<f32>) = inv_freq
        .iter()
        .map(|f| {
            let ang = pos as f32 * f;
            (ang.cos(), ang.sin())
        })
        .unzip();
    let rope = |u: &mut [f32]| {
        let half = rd / 2;
        let orig: Vec<f32> = u[..rd].to_vec();
        for i in 0..rd {
            let rot = if i < half { -orig[i + half] } else { orig[i - half] };
            let (cs, sn) = (cos[i % half], sin[i % half]);
            u[i] = orig[i] * cs + rot * sn;
        }
    };
    for j in 0..nkv {
        let mut kn = rms_norm(&k[j * hd..(j + 1) * hd], &k_norm, eps);
        rope(&mut kn);
        k[j * hd..(j + 1) * hd].copy_from_slice(&kn);
    }
    kc.push(k);
    vc.push(v);
    let group = nh / nkv;
    let scaling = (hd as f32).powf(-0.5);
    let mut out = vec![0f32; nh * hd];
    for head in 0..nh {
        let base = head * 2 * hd;
        let mut q = rms_norm(&qg[base..base + hd], &q_norm, eps);
        rope(&mut q);
        let gate = &qg[base + hd..base + 2 * hd];
        let j = head / group;
        let scores: Vec<f32> = kc
            .iter()
            .map(|kt| q.iter().zip(&kt[j * hd..(j + 1) * hd]).map(|(a, b)| a * b).sum::<f32>() * scaling)
            .collect();
        let mx = scores.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f32> = scores.iter().map(|s| (s - mx).exp()).collect();
        let sum: f32 = e.iter().sum();
        let o = &mut out[head * hd..(head + 1) * hd];
        for (w, vt) in e.iter().zip(vc.iter()) {
            let p = w / sum;
            if p != 0.0 {
                for (ov, vv) in o.iter_mut().zip(&vt[j * hd..(j + 1) * hd]) {
                    *ov += p * vv;
                }
            }
        }
        for (ov, g) in o.iter_mut().zip(gate) {
            *ov *= sigmoid(*g);
        }
    }
    out
}

/// Index of the first maximum (`torch.argmax` semantics for finite values).
pub fn argmax(v: &[f32]) -> u32 {
    let mut best = 0;
    for (i, x) in v.iter().enumerate() {
        if *x > v[best] {
            best = i;
        }
    }
    best as u32
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silu_is_exact_relu_at_multiples_of_128() {
        for n in -64i32..=64 {
            let g = 128.0 * n as f32;
            assert_eq!(silu(g), g.max(0.0), "silu({g})");
        }
        assert_eq!(sigmoid(200.0), 1.0);
        assert_eq!(sigmoid(-200.0), 0.0);
        assert_eq!(softplus(-200.0), 0.0);
    }

    /// Points of `f` at steps of 0.003 over `ranges` where it must equal `formula` bit for bit; returns how many.
    fn shortcut_points(f: fn(f32) -> f32, formula: fn(f32) -> f32, ranges: &[(f32, f32)], name: &str) -> usize {
        let mut n = 0;
        for &(lo, hi) in ranges {
            let mut x = lo;
            while x < hi {
                assert_eq!(f(x).to_bits(), formula(x).to_bits(), "{name}({x})");
                x += 0.003;
                n += 1;
            }
        }
        n
    }

    #[test]
    fn silu_shortcuts_equal_the_formula_bit_for_bit() {
        let n = shortcut_points(silu, |x| x / (1.0 + (-x).exp()), &[(-130.0, -80.0), (20.0, 300.0)], "silu");
        assert!(n > 90_000);
    }

    #[test]
    fn sigmoid_shortcuts_equal_the_formula_bit_for_bit() {
        let n = shortcut_points(sigmoid, |x| 1.0 / (1.0 + (-x).exp()), &[(-300.0, -80.0), (10.0, 300.0)], "sigmoid");
        assert!(n > 150_000);
    }
}

/// Agreement with Hugging Face transformers on the shared fixtures (`$WEAVER_FIXTURES`, default
/// `../shared/fixtures`): token-by-token hidden states and logits within a relative error of 1e-4.
#[cfg(test)]
mod fixture_tests {
    use super::*;
    use safetensors::SafeTensors;
    use std::path::PathBuf;

    fn fixtures_dir() -> Option<PathBuf> {
        test_kit::fixtures_dir()
    }

    fn load_f32(path: &std::path::Path) -> WeightMap {
        let bytes = std::fs::read(path).unwrap();
        let st = SafeTensors::deserialize(&bytes).unwrap();
        st.tensors()
            .into_iter()
            .map(|(name, view)| {
                let data = match view.dtype() {
                    safetensors::Dtype::F32 => view.data().chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect(),
                    safetensors::Dtype::I64 => view.data().chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f32).collect(),
                    d => panic!("{name}: unexpected dtype {d:?}"),
                };
                (name, HostTensor::new(view.shape().to_vec(), data))
            })
            .collect()
    }

    fn rel_err(a: &[f32], b: &[f32]) -> f64 {
        let num: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
        let den: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
        (num / den).sqrt()
    }

    #[test]
    fn sparse_executor_matches_transformers_on_fixtures() {
        let Some(dir) = fixtures_dir() else { return };
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let fx = entry.unwrap().path();
            if !fx.file_name().unwrap().to_string_lossy().starts_with("qwen35-") {
                continue;
            }
            let cfg = Qwen35Config::from_file(&fx.join("config.json")).unwrap();
            let weights = load_f32(&fx.join("model.safetensors"));
            let reference = load_f32(&fx.join("reference.safetensors"));
            let model = SparseModel::new(&cfg, &weights).unwrap();
            let ids: Vec<u32> = reference["input_ids"].data.iter().map(|v| *v as u32).collect::<Vec<_>>();
            let ids = if ids.is_empty() { panic!("no ids") } else { ids };
            let t_len = ids.len();
            let h = cfg.hidden_size;
            let v = cfg.vocab_size;
            let mut st = model.new_state();
            let mut hidden: Vec<Vec<Vec<f32>>> = Vec::new();
            let mut logits = Vec::new();
            for &tok in &ids {
                let mut s2 = st.clone();
                hidden.push(model.step_hidden(&mut s2, tok).unwrap());
                logits.extend(model.step(&mut st, tok).unwrap());
            }
            for l in 0..=cfg.num_hidden_layers {
                let ours: Vec<f32> = (0..t_len).flat_map(|t| hidden[t][l].clone()).collect();
                let e = rel_err(&ours, &reference[&format!("hidden_{l}")].data);
                assert!(e <= 1e-4, "{}: hidden_{l} rel err {e}", fx.display());
                assert_eq!(ours.len(), t_len * h);
            }
            let e = rel_err(&logits, &reference["decode_logits"].data);
            assert!(e <= 1e-4, "{}: decode logits rel err {e}", fx.display());
            assert_eq!(logits.len(), t_len * v);
            eprintln!("{}: {} positions, decode logits rel err {e:.2e}", fx.display(), t_len);
            seen += 1;
        }
        assert!(seen >= 3, "expected the three qwen35-* fixtures, saw {seen}");
    }
}

