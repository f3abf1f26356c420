#!/usr/bin/env python3
"""Check a recorded trace against Hugging Face transformers' `Qwen3_5ForCausalLM`, for checkpoints larger than memory.

Usage:
  hf_check_trace.py CHECKPOINT_DIR TRACE.json [--decode-tail K] [--json-out FILE] [--console]

TRACE.json is what `loom run --trace`, `loom cuda --trace` (and the other verbs' `--trace`) write:
{"prompt": [ids], "generated": [ids], "injected": [[i, id], ...]} (`injected`: tokens the host fed in place of a
prediction, by their index in `generated`).

What it does, all in transformers' own model class and f32 on the CPU:
  1. Builds `Qwen3_5ForCausalLM` from `config.json` on the meta device and assigns it the tensors of
     `model.safetensors` memory-mapped read-only, so the weights are file pages the kernel may evict: a 41 GB
     checkpoint runs on a 24 GB machine (each pass over the weights reads the file once).
  2. Teacher-forced check: one forward pass over prompt + generated[:-K] (transformers' chunked gated-delta rule,
     the path its prefill takes) gives the logits of every position; the argmax after each position must be the
     trace's next generated token, wherever that token was the model's (not injected). Equal argmax everywhere
     means greedy decoding from the prompt emits exactly this trace: each prefix is the trace's, by induction.
  3. Greedy decoding of the last K generated tokens (--decode-tail, default 2) from the cache of that pass, one
     token at a time (transformers' recurrent rule, the path token-by-token decoding takes): each must equal the
     trace's token.

Grafted checkpoints (CHECKPOINT_DIR holds a `graft.json` of format loom-graft: the first m layers a woven machine, the
last n a base language model's, vocabulary = the base's V ids then the machine's T trace tokens): the trace is checked
on the machine route, as the routing driver runs it. The model is restricted to layers [0, m) (the base layers never
see machine positions), every trace id t (prompt, generated, injected: machine ids 0..T-1) is fed as I + t, and the
prediction is the argmax over logits[O, O+T) minus O (the lm_head is cut to those T rows: the same dot products),
where I and O are graft.json's machine_input_tokens and machine_output_tokens (both V with an untied lm_head; V and
V + T with a tied one, whose embedding rows and lm_head rows are one matrix).

Tensors may be F32, F16 or BF16 (mixed); weights that are not f32 are converted one decoder layer at a time as it
runs (exact), so memory holds one layer's f32 copy at most. Sharded checkpoints (model.safetensors.index.json) load too.

With --console, the bytes the machine writes to its console port (the `OUT` port of machine.json's protocol) are
decoded from transformers' own predictions (the host's injected tokens where the trace has them) and reported as
`console`: for a `loom chat --trace-dir` call of the calc firmware, the digits of the tool response as transformers
computes them.

Prints one JSON object: positions compared, mismatches (with the first few), timings, peak RSS. Exit status 0
when every compared position is equal, 1 when any differs, 2 on bad input.

Setup (once): python3 -m venv .venv-hf && .venv-hf/bin/pip install transformers torch safetensors
"""
import argparse, json, os, resource, struct, sys, time
import warnings

import numpy as np
import torch
from torch import nn
from transformers import AutoConfig, Qwen3_5ForCausalLM
from transformers.cache_utils import DynamicCache

# BF16 has no numpy type: its bytes are read as int16 and viewed as torch.bfloat16.
DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.int16, "I64": np.int64, "I32": np.int32}


def fail(msg):
    """Bad input: say what, exit with status 2 (1 is kept for a trace that differs)."""
    print(msg, file=sys.stderr)
    sys.exit(2)


def mmap_safetensors(path):
    """The tensors of a safetensors file as read-only torch views of one memory map (nothing is copied)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    out = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        dt = DTYPES.get(spec["dtype"])
        if dt is None:
            fail(f"{path}: tensor {name}: dtype {spec['dtype']} is not supported here")
        a, b = spec["data_offsets"]
        arr = data[a:b].view(dt).reshape(spec["shape"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # read-only memory: the model never writes its weights
            t = torch.from_numpy(arr)
        out[name] = t.view(torch.bfloat16) if spec["dtype"] == "BF16" else t
    return out


def checkpoint_tensors(ckpt):
    """All tensors of a checkpoint directory, memory-mapped: model.safetensors or the shards its index names."""
    single = os.path.join(ckpt, "model.safetensors")
    if os.path.isfile(single):
        return mmap_safetensors(single)
    index = os.path.join(ckpt, "model.safetensors.index.json")
    try:
        files = sorted(set(json.load(open(index))["weight_map"].values()))
    except (OSError, ValueError, KeyError, AttributeError) as e:
        fail(f"{ckpt}: neither model.safetensors nor a readable model.safetensors.index.json ({e})")
    sd = {}
    for f in files:
        sd.update(mmap_safetensors(os.path.join(ckpt, f)))
    return sd


def text_config(ckpt):
    """The text tower's config: a text checkpoint's own, or a multimodal one's `text_config` (model_type qwen3_5)."""
    config = AutoConfig.from_pretrained(ckpt)
    sub = getattr(config, "text_config", None)
    if sub is None:
        return config, False
    # Released multimodal repositories may state tie_word_embeddings only at the top level.
    raw = json.load(open(os.path.join(ckpt, "config.json")))
    if "tie_word_embeddings" not in (raw.get("text_config") or {}) and "tie_word_embeddings" in raw:
        sub.tie_word_embeddings = bool(raw["tie_word_embeddings"])
    return sub, True


def load_model(ckpt):
    """`Qwen3_5ForCausalLM` over the memory-mapped tensors of `ckpt`, as stored (call `cast_on_use` before running).

    A multimodal checkpoint (`model.language_model.*`) is loaded from its text_config with its tensors renamed to
    `model.*`; `model.visual.*` and `mtp.*` are ignored, as transformers' own loading ignores them."""
    config, multimodal = text_config(ckpt)
    with torch.device("meta"):
        model = Qwen3_5ForCausalLM(config)
    sd = {}
    for name, t in checkpoint_tensors(ckpt).items():
        if name.startswith("mtp.") or name.startswith("model.visual."):
            continue
        if name.startswith("model.language_model."):
            name = "model." + name[len("model.language_model."):]
        sd[name] = t
    if getattr(config, "tie_word_embeddings", False) and "lm_head.weight" not in sd:
        sd["lm_head.weight"] = sd["model.embed_tokens.weight"]
    missing, unexpected = model.load_state_dict(sd, strict=False, assign=True)
    if unexpected:
        fail(f"{ckpt}: tensors transformers does not expect: {unexpected[:5]}")
    params = {n for n, _ in model.named_parameters()}
    left = [m for m in missing if m in params]
    if left:
        fail(f"{ckpt}: tensors missing from model.safetensors: {left[:5]}")
    # Buffers are not in the checkpoint (the rotary inverse frequencies): build those modules again on the CPU.
    for name, mod in list(model.named_modules()):
        if any(b.is_meta for b in mod.buffers(recurse=False)):
            if list(mod.parameters(recurse=False)) or "Rotary" not in type(mod).__name__:
                fail(f"cannot initialise the buffers of {name} ({type(mod).__name__})")
            model.set_submodule(name, type(mod)(mod.config))
    return model.eval()


def _cast_params_in(group, args):
    dtype, align = group._loom_dtype, group._loom_align
    saved = []
    for mod in group.modules():
        for name, p in list(mod._parameters.items()):
            if p is not None and p.is_floating_point() and (p.dtype != dtype or (align and p.data_ptr() % 64)):
                saved.append((mod, name, p))
                mod._parameters[name] = nn.Parameter(p.to(dtype, copy=True), requires_grad=False)
    group._loom_saved = saved


def _cast_params_out(group, args, output):
    for mod, name, p in group._loom_saved:
        mod._parameters[name] = p
    group._loom_saved = []


def cast_on_use(model, dtype=torch.float32, align=False):
    """Run `model` in `dtype` while its stored weights stay as they are (memory-mapped): each group (the embedding,
    each decoder layer, the final norm, the lm_head) gets a copy of its weights in `dtype` for the length of its
    forward, then drops it. A weight already in `dtype` is used as is (no copy), unless `align` and it is not 64-byte
    aligned: a memory-mapped tensor sits wherever the file puts it, and the CPU BLAS's one-row products (decoding)
    round differently on an unaligned matrix, so bitwise comparisons between checkpoints need `align`.
    Call again to change `dtype`."""
    groups = [model.model.embed_tokens, *model.model.layers, model.model.norm, model.lm_head]
    for g in groups:
        if not hasattr(g, "_loom_dtype"):
            g.register_forward_pre_hook(_cast_params_in)
            g.register_forward_hook(_cast_params_out)
        g._loom_dtype = dtype
        g._loom_align = align
    return model


def restrict_layers(model, lo, hi):
    """Keep only decoder layers [lo, hi) (renumbered 0..hi-lo for the cache; config.layer_types and
    num_hidden_layers follow, so a cache built from the config has those layers). Returns what `unrestrict` needs."""
    cfg = model.config
    saved = (model.model.layers, list(cfg.layer_types), cfg.num_hidden_layers)
    kept = list(model.model.layers)[lo:hi]
    for i, layer in enumerate(kept):
        for mod in layer.modules():
            if hasattr(mod, "layer_idx"):
                mod.layer_idx = i
    model.model.layers = nn.ModuleList(kept)
    cfg.layer_types = list(saved[1][lo:hi])
    cfg.num_hidden_layers = hi - lo
    return saved


def unrestrict(model, saved):
    layers, layer_types, n = saved
    for i, layer in enumerate(layers):
        for mod in layer.modules():
            if hasattr(mod, "layer_idx"):
                mod.layer_idx = i
    model.model.layers = layers
    model.config.layer_types = layer_types
    model.config.num_hidden_layers = n


def read_graft(ckpt):
    """The checkpoint's graft.json checked for consistency with its config, or None for a plain checkpoint.
    Returns dict(m=machine layers, n=base layers, V=base vocabulary, T=machine tokens, raw=the file)."""
    path = os.path.join(ckpt, "graft.json")
    if not os.path.isfile(path):
        return None
    try:
        g = json.load(open(path))
        if g.get("format") != "loom-graft" or g.get("version") != 1:
            fail(f"{path}: not a loom-graft version 1 file")
        m0, m = (int(x) for x in g["machine_layers"])
        b0, b1 = (int(x) for x in g["base_layers"])
        V = int(g["base_vocab"])
        t0, t1 = (int(x) for x in g["machine_input_tokens"])
        o0, o1 = (int(x) for x in g["machine_output_tokens"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(f"{path}: not a graft description ({e})")
    cfg = json.load(open(os.path.join(ckpt, "config.json")))
    cfg = cfg.get("text_config", cfg)
    L, vocab = cfg.get("num_hidden_layers"), cfg.get("vocab_size")
    if m0 != 0 or b0 != m or b1 != L or m <= 0 or b1 <= b0:
        fail(f"{path}: machine_layers [{m0}, {m}) and base_layers [{b0}, {b1}) must be [0, m) and [m, {L}) for a {L}-layer config")
    if t0 < V or t1 <= t0 or t1 > vocab or o0 < V or o1 - o0 != t1 - t0 or o1 > vocab:
        fail(f"{path}: machine_input_tokens [{t0}, {t1}) and machine_output_tokens [{o0}, {o1}) must be ranges of one "
             f"length within [base_vocab={V}, vocab_size={vocab})")
    return {"m": m, "n": b1 - b0, "V": V, "T": t1 - t0, "I": t0, "O": o0, "raw": g}


def cut_lm_head(model, lo, hi):
    """Replace the lm_head by one holding rows [lo, hi) of it: logits over those ids only, numbered from 0."""
    w = model.lm_head.weight
    head = nn.Linear(w.shape[1], hi - lo, bias=False, device="meta")
    head.weight = nn.Parameter(w[lo:hi], requires_grad=False)
    model.lm_head = head


def console_port_fields(ckpt):
    """The protocol fields of the console port of the checkpoint's machine.json: (first_token, width, host_only, lo)."""
    m = json.load(open(os.path.join(ckpt, "machine.json")))
    ports = m.get("face", m)["ports"]
    idx = [i for i, p in enumerate(ports) if p.get("role") == "console" or p["name"] == "OUT"]
    if not idx:
        fail(f"{ckpt}: machine.json names no console port")
    return [(f["first_token"], f["width"], f["host_only"], f["lo"]) for f in m["protocol"]["fields"]
            if f["role"]["kind"] == "out" and f["role"]["port"] == idx[0]]


def console_bytes(fields, tokens):
    """The console bytes that `tokens` (machine ids) write: each value of the port, its chunks joined."""
    out, cur, top = bytearray(), 0, max(lo for *_, lo in fields)
    for t in tokens:
        for first, width, host_only, lo in fields:
            if first <= t < first + ((1 << width) << (0 if host_only else 1)):
                cur |= ((t - first) % (1 << width)) << lo
                if lo == top:
                    out.append(cur & 0xFF)
                    cur = 0
    return bytes(out)


def console_report(ckpt, own, gen):
    """`console`: the console bytes of transformers' own tokens; `console_of_trace`: of the trace's (or the error)."""
    try:
        fields = console_port_fields(ckpt)
        return {"console": console_bytes(fields, own).decode("utf-8", "replace"),
                "console_of_trace": console_bytes(fields, gen).decode("utf-8", "replace")}
    except (OSError, KeyError, ValueError) as e:
        return {"console_error": f"{ckpt}/machine.json: {e!r}"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("trace")
    ap.add_argument("--decode-tail", type=int, default=2)
    ap.add_argument("--json-out")
    ap.add_argument("--console", action="store_true", help="decode the console bytes from transformers' predictions")
    a = ap.parse_args()
    try:
        tr = json.load(open(a.trace))
        prompt, gen = [int(t) for t in tr["prompt"]], [int(t) for t in tr["generated"]]
        injected = {int(i) for i, _ in tr.get("injected", [])}
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(f"{a.trace}: not a trace ({e})")
    if not prompt or not gen:
        fail(f"{a.trace}: empty prompt or trace")
    if not os.path.isfile(os.path.join(a.checkpoint, "config.json")):
        fail(f"{a.checkpoint}: no config.json (a checkpoint directory from `loom weave` holds config.json and model.safetensors)")
    if not any(os.path.isfile(os.path.join(a.checkpoint, f)) for f in ("model.safetensors", "model.safetensors.index.json")):
        fail(f"{a.checkpoint}: no model.safetensors (a checkpoint directory from `loom weave` holds config.json and model.safetensors)")
    graft = read_graft(a.checkpoint)
    shift = 0  # token id of trace id 0: V on a graft's machine route
    if graft:
        shift = graft["I"]
        bad = [t for t in prompt + gen if not 0 <= t < graft["T"]]
        if bad:
            fail(f"{a.trace}: token {bad[0]} is not a machine token id (0..{graft['T'] - 1}) of the graft")
    k = max(0, min(a.decode_tail, len(gen) - 1))
    torch.set_grad_enabled(False)
    t0 = time.time()
    try:
        model = load_model(a.checkpoint)
    except (OSError, ValueError) as e:
        fail(f"{a.checkpoint}: cannot load the checkpoint ({e})")
    if graft:
        # The machine route: layers [0, m) only, logits over the machine's tokens [V, V+T) only.
        restrict_layers(model, 0, graft["m"])
        cut_lm_head(model, graft["O"], graft["O"] + graft["T"])
    cast_on_use(model, torch.float32)
    t_load = time.time() - t0

    mismatches = []
    compared = 0
    own = list(gen)  # transformers' own tokens (the host's where it injected)
    # Teacher forcing: logits at sequence position p predict position p+1. generated[j] sits at len(prompt)+j.
    seq = prompt + gen[: len(gen) - k]
    cache = DynamicCache(config=model.config)
    t1 = time.time()
    out = model(input_ids=torch.tensor([seq]) + shift, cache=cache, use_cache=True)
    cache = getattr(out, "cache", None) or out.past_key_values
    pred = out.logits[0].argmax(-1).tolist()
    last_logits = out.logits[0, -1]
    del out
    t_forced = time.time() - t1
    for j in range(len(gen) - k):
        if j in injected:
            continue
        compared += 1
        got = pred[len(prompt) + j - 1]
        own[j] = got
        if got != gen[j]:
            mismatches.append({"index": j, "trace": gen[j], "transformers": got, "how": "teacher-forced"})
    # Greedy decoding of the tail with the recurrent rule.
    t2 = time.time()
    logits = last_logits
    for j in range(len(gen) - k, len(gen)):
        nxt = int(torch.argmax(logits))
        if j not in injected:
            own[j] = nxt
            compared += 1
            if nxt != gen[j]:
                mismatches.append({"index": j, "trace": gen[j], "transformers": nxt, "how": "decoded"})
        if j == len(gen) - 1:
            break  # the last token's logits predict nothing the trace holds
        tok = gen[j] if j in injected else nxt
        out = model(input_ids=torch.tensor([[tok + shift]]), cache=cache, use_cache=True)
        cache = getattr(out, "cache", None) or out.past_key_values
        logits = out.logits[0, -1]
    t_decode = time.time() - t2
    report = {
        "checkpoint": a.checkpoint,
        **({"route": "machine", "machine_layers": [0, graft["m"]], "machine_input_tokens": [graft["I"], graft["I"] + graft["T"]],
            "machine_output_tokens": [graft["O"], graft["O"] + graft["T"]]}
           if graft else {}),
        "prompt_tokens": len(prompt),
        "generated_tokens": len(gen),
        "injected_tokens": len(injected),
        "positions_compared": compared,
        "teacher_forced": len(gen) - k - len([j for j in injected if j < len(gen) - k]),
        "decoded_greedily": k,
        **(console_report(a.checkpoint, own, gen) if a.console else {}),
        "mismatches": len(mismatches),
        "first_mismatches": mismatches[:10],
        "seconds": {"load": round(t_load, 1), "teacher_forced_pass": round(t_forced, 1), "decode_tail": round(t_decode, 1)},
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
    }
    emit_report(report, a.json_out)
    sys.exit(0 if not mismatches else 1)


def emit_report(report, json_out):
    """Add the torch and transformers versions to `report`, print it as JSON and, given a path, write it there."""
    report["torch"] = torch.__version__
    report["transformers"] = __import__("transformers").__version__
    text = json.dumps(report, indent=1)
    print(text)
    if json_out:
        with open(json_out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
