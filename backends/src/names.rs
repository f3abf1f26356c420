//! The checkpoint's tensor names, as transformers' `Qwen3_5ForCausalLM` state dict writes them
//! (`models/qwen3_5/modeling_qwen3_5.py`), written once: every reader and writer of a checkpoint (the config's
//! expected shapes, the executors, the burn model, the weaver's emitter, the graft) takes them from here.

use crate::config::{LayerType, Qwen35Config};

/// The token embedding `[vocab, hidden]`.
pub const EMBED_TOKENS: &str = "model.embed_tokens.weight";
/// The final RMSNorm's weight `[hidden]`.
pub const FINAL_NORM: &str = "model.norm.weight";
/// The output projection `[vocab, hidden]` (absent when the embedding is tied).
pub const LM_HEAD: &str = "lm_head.weight";
/// The prefix of every decoder layer's tensors: `model.layers.{i}.`.
pub const LAYERS_PREFIX: &str = "model.layers.";

/// One tensor of a decoder layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LayerTensor {
    /// `input_layernorm.weight` `[hidden]`.
    InputNorm,
    /// `post_attention_layernorm.weight` `[hidden]`.
    PostNorm,
    /// `mlp.gate_proj.weight` `[intermediate, hidden]`.
    GateProj,
    /// `mlp.up_proj.weight` `[intermediate, hidden]`.
    UpProj,
    /// `mlp.down_proj.weight` `[hidden, intermediate]`.
    DownProj,
    /// `linear_attn.in_proj_qkv.weight` `[conv_dim, hidden]`.
    InProjQkv,
    /// `linear_attn.in_proj_z.weight` `[value_dim, hidden]`.
    InProjZ,
    /// `linear_attn.in_proj_b.weight` `[value_heads, hidden]`.
    InProjB,
    /// `linear_attn.in_proj_a.weight` `[value_heads, hidden]`.
    InProjA,
    /// `linear_attn.conv1d.weight` `[conv_dim, 1, kernel]`.
    Conv1d,
    /// `linear_attn.dt_bias` `[value_heads]`.
    DtBias,
    /// `linear_attn.A_log` `[value_heads]`.
    ALog,
    /// `linear_attn.norm.weight` `[value_head_dim]` (the gated RMSNorm).
    GatedNorm,
    /// `linear_attn.out_proj.weight` `[hidden, value_dim]`.
    OutProj,
    /// `self_attn.q_proj.weight` `[heads * head_dim * 2, hidden]` (query and gate).
    QProj,
    /// `self_attn.k_proj.weight` `[kv_heads * head_dim, hidden]`.
    KProj,
    /// `self_attn.v_proj.weight` `[kv_heads * head_dim, hidden]`.
    VProj,
    /// `self_attn.o_proj.weight` `[hidden, heads * head_dim]`.
    OProj,
    /// `self_attn.q_norm.weight` `[head_dim]`.
    QNorm,
    /// `self_attn.k_norm.weight` `[head_dim]`.
    KNorm,
}

use LayerTensor::*;

impl LayerTensor {
    /// The tensors of every layer, in the order a checkpoint lists them.
    pub const COMMON: [LayerTensor; 5] = [InputNorm, PostNorm, GateProj, UpProj, DownProj];
    /// A Gated DeltaNet layer's mixer tensors.
    pub const LINEAR_ATTENTION: [LayerTensor; 9] = [InProjQkv, InProjZ, InProjB, InProjA, Conv1d, DtBias, ALog, GatedNorm, OutProj];
    /// A full-attention layer's mixer tensors.
    pub const FULL_ATTENTION: [LayerTensor; 6] = [QProj, KProj, VProj, OProj, QNorm, KNorm];

    /// Every tensor of a layer of type `lt`: [`Self::COMMON`], then its mixer's.
    pub fn of(lt: LayerType) -> impl Iterator<Item = LayerTensor> {
        let mixer: &'static [LayerTensor] = match lt {
            LayerType::LinearAttention => &Self::LINEAR_ATTENTION,
            LayerType::FullAttention => &Self::FULL_ATTENTION,
        };
        Self::COMMON.into_iter().chain(mixer.iter().copied())
    }

    /// The name after `model.layers.{i}.`, e.g. `mlp.gate_proj.weight`.
    pub const fn suffix(self) -> &'static str {
        match self {
            InputNorm => "input_layernorm.weight",
            PostNorm => "post_attention_layernorm.weight",
            GateProj => "mlp.gate_proj.weight",
            UpProj => "mlp.up_proj.weight",
            DownProj => "mlp.down_proj.weight",
            InProjQkv => "linear_attn.in_proj_qkv.weight",
            InProjZ => "linear_attn.in_proj_z.weight",
            InProjB => "linear_attn.in_proj_b.weight",
            InProjA => "linear_attn.in_proj_a.weight",
            Conv1d => "linear_attn.conv1d.weight",
            DtBias => "linear_attn.dt_bias",
            ALog => "linear_attn.A_log",
            GatedNorm => "linear_attn.norm.weight",
            OutProj => "linear_attn.out_proj.weight",
            QProj => "self_attn.q_proj.weight",
            KProj => "self_attn.k_proj.weight",
            VProj => "self_attn.v_proj.weight",
            OProj => "self_attn.o_proj.weight",
            QNorm => "self_attn.q_norm.weight",
            KNorm => "self_attn.k_norm.weight",
        }
    }

    /// The full name in layer `layer`, e.g. `model.layers.3.mlp.gate_proj.weight`.
    pub fn name(self, layer: usize) -> String {
        format!("{LAYERS_PREFIX}{layer}.{}", self.suffix())
    }

    /// The shape `cfg` gives the tensor.
    pub fn shape(self, cfg: &Qwen35Config) -> Vec<usize> {
        let (h, i, nv) = (cfg.hidden_size, cfg.intermediate_size, cfg.linear_num_value_heads);
        let (hd, heads, kv) = (cfg.head_dim, cfg.num_attention_heads, cfg.num_key_value_heads);
        match self {
            InputNorm | PostNorm => vec![h],
            GateProj | UpProj => vec![i, h],
            DownProj => vec![h, i],
            InProjQkv => vec![cfg.linear_conv_dim(), h],
            InProjZ => vec![cfg.linear_value_dim(), h],
            InProjB | InProjA => vec![nv, h],
            Conv1d => vec![cfg.linear_conv_dim(), 1, cfg.linear_conv_kernel_dim],
            DtBias | ALog => vec![nv],
            GatedNorm => vec![cfg.linear_value_head_dim],
            OutProj => vec![h, cfg.linear_value_dim()],
            QProj => vec![heads * hd * 2, h],
            KProj | VProj => vec![kv * hd, h],
            OProj => vec![h, heads * hd],
            QNorm | KNorm => vec![hd],
        }
    }
}
