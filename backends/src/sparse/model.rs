//! The Qwen3.5 layers on sparse matrices: RMSNorm, SwiGLU MLP, Gated DeltaNet, gated full attention; the
//! model ([`SparseModel`]) and its per-sequence caches ([`SparseState`]).

use crate::cpu::math::{attend, conv_history, l2_scaled, read_head, rms_norm, rope_inv_freq, sigmoid, silu, softplus, write_head};
use crate::cpu::{argmax, CheckedWeights, SparseMatrix};
use crate::config::{LayerType, Qwen35Config};
use crate::names::{LayerTensor, EMBED_TOKENS, FINAL_NORM, LM_HEAD};
use crate::error::CpuError;
use crate::jit::{CompiledMatrix, Compiler, Form};
use crate::tensor::{HostTensor, WeightMap};

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

type Attention = crate::cpu::layer::Attention<Proj>;
type Mixer = crate::cpu::layer::Mixer<DeltaNet, Attention>;

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
            let mixer = match lt {
                LayerType::LinearAttention => {
                    let qkv = spr(&LayerTensor::InProjQkv.name(i))?;
                    Mixer::Linear(DeltaNet {
                        active: qkv.nonempty_rows(),
                        history: conv_history(&get(&LayerTensor::Conv1d.name(i))?.data, cfg.linear_conv_kernel_dim),
                        qkv,
                        z: spr(&LayerTensor::InProjZ.name(i))?,
                        b: spr(&LayerTensor::InProjB.name(i))?,
                        a: spr(&LayerTensor::InProjA.name(i))?,
                        conv: get(&LayerTensor::Conv1d.name(i))?.data.clone(),
                        dt_bias: get(&LayerTensor::DtBias.name(i))?.data.clone(),
                        neg_a: get(&LayerTensor::ALog.name(i))?.data.iter().map(|v| -v.exp()).collect(),
                        norm_w: get(&LayerTensor::GatedNorm.name(i))?.data.clone(),
                        out: sp(&LayerTensor::OutProj.name(i))?,
                    })
                }
                LayerType::FullAttention => {
                    Mixer::Full(Attention {
                        q: spr(&LayerTensor::QProj.name(i))?,
                        k: spr(&LayerTensor::KProj.name(i))?,
                        v: spr(&LayerTensor::VProj.name(i))?,
                        o: sp(&LayerTensor::OProj.name(i))?,
                        q_norm: one_plus(&LayerTensor::QNorm.name(i))?,
                        k_norm: one_plus(&LayerTensor::KNorm.name(i))?,
                    })
                }
            };
            layers.push(Layer {
                input_norm: one_plus(&LayerTensor::InputNorm.name(i))?,
                post_norm: one_plus(&LayerTensor::PostNorm.name(i))?,
                mixer,
                mlp: Mlp {
                    gate: spr(&LayerTensor::GateProj.name(i))?,
                    up: spr(&LayerTensor::UpProj.name(i))?,
                    down: sp(&LayerTensor::DownProj.name(i))?,
                },
            });
        }
        let embed = get(EMBED_TOKENS)?.clone();
        let lm_head = if cfg.tie_word_embeddings { proj(SparseMatrix::from_dense(&embed), Form::Rows, "lm_head (tied)")? } else { spr(LM_HEAD)? };
        Ok(Self { cfg: cfg.clone(), embed, layers, final_norm: one_plus(FINAL_NORM)?, lm_head, inv_freq: rope_inv_freq(cfg), compiled: jit.is_some() })
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
        let mut v = vec![(LM_HEAD.to_string(), self.lm_head.nnz())];
        for (i, l) in self.layers.iter().enumerate() {
            let mut push = |n: LayerTensor, m: &Proj| v.push((n.name(i), m.nnz()));
            push(LayerTensor::GateProj, &l.mlp.gate);
            push(LayerTensor::UpProj, &l.mlp.up);
            push(LayerTensor::DownProj, &l.mlp.down);
            match &l.mixer {
                Mixer::Linear(d) => {
                    push(LayerTensor::InProjQkv, &d.qkv);
                    push(LayerTensor::InProjZ, &d.z);
                    push(LayerTensor::InProjA, &d.a);
                    push(LayerTensor::InProjB, &d.b);
                    push(LayerTensor::OutProj, &d.out);
                }
                Mixer::Full(a) => {
                    push(LayerTensor::QProj, &a.q);
                    push(LayerTensor::KProj, &a.k);
                    push(LayerTensor::VProj, &a.v);
                    push(LayerTensor::OProj, &a.o);
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

