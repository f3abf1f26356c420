#!/usr/bin/env python3
"""Check a recorded trace against Hugging Face transformers' `Qwen3_5ForCausalLM`, for checkpoints larger than memory.

Usage:
  hf_check_trace.py CHECKPOINT_DIR TRACE.json [--decode-tail K] [--json-out FILE]

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

Prints one JSON object: positions compared, mismatches (with the first few), timings, peak RSS. Exit status 0
when every compared position is equal, 1 when any differs, 2 on bad input.

Setup (once): python3 -m venv .venv-hf && .venv-hf/bin/pip install transformers torch safetensors
"""
import argparse, json, os, resource, struct, sys, time
import warnings

import numpy as np
import torch
from transformers import AutoConfig, Qwen3_5ForCausalLM
from transformers.cache_utils import DynamicCache

DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": None, "I64": np.int64, "I32": np.int32}


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
            out[name] = torch.from_numpy(arr)
    return out


def load_model(ckpt):
    config = AutoConfig.from_pretrained(ckpt)
    with torch.device("meta"):
        model = Qwen3_5ForCausalLM(config)
    sd = mmap_safetensors(os.path.join(ckpt, "model.safetensors"))
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("trace")
    ap.add_argument("--decode-tail", type=int, default=2)
    ap.add_argument("--json-out")
    a = ap.parse_args()
    try:
        tr = json.load(open(a.trace))
        prompt, gen = [int(t) for t in tr["prompt"]], [int(t) for t in tr["generated"]]
        injected = {int(i) for i, _ in tr.get("injected", [])}
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(f"{a.trace}: not a trace ({e})")
    if not prompt or not gen:
        fail(f"{a.trace}: empty prompt or trace")
    for f in ("config.json", "model.safetensors"):
        if not os.path.isfile(os.path.join(a.checkpoint, f)):
            fail(f"{a.checkpoint}: no {f} (a checkpoint directory from `loom weave` holds config.json and model.safetensors)")
    k = max(0, min(a.decode_tail, len(gen) - 1))
    torch.set_grad_enabled(False)
    t0 = time.time()
    try:
        model = load_model(a.checkpoint)
    except (OSError, ValueError) as e:
        fail(f"{a.checkpoint}: cannot load the checkpoint ({e})")
    t_load = time.time() - t0

    mismatches = []
    compared = 0
    # Teacher forcing: logits at sequence position p predict position p+1. generated[j] sits at len(prompt)+j.
    seq = prompt + gen[: len(gen) - k]
    cache = DynamicCache(config=model.config)
    t1 = time.time()
    out = model(input_ids=torch.tensor([seq]), cache=cache, use_cache=True)
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
        if got != gen[j]:
            mismatches.append({"index": j, "trace": gen[j], "transformers": got, "how": "teacher-forced"})
    # Greedy decoding of the tail with the recurrent rule.
    t2 = time.time()
    logits = last_logits
    for j in range(len(gen) - k, len(gen)):
        nxt = int(torch.argmax(logits))
        if j not in injected:
            compared += 1
            if nxt != gen[j]:
                mismatches.append({"index": j, "trace": gen[j], "transformers": nxt, "how": "decoded"})
        if j == len(gen) - 1:
            break  # the last token's logits predict nothing the trace holds
        tok = gen[j] if j in injected else nxt
        out = model(input_ids=torch.tensor([[tok]]), cache=cache, use_cache=True)
        cache = getattr(out, "cache", None) or out.past_key_values
        logits = out.logits[0, -1]
    t_decode = time.time() - t2
    report = {
        "checkpoint": a.checkpoint,
        "prompt_tokens": len(prompt),
        "generated_tokens": len(gen),
        "injected_tokens": len(injected),
        "positions_compared": compared,
        "teacher_forced": len(gen) - k - len([j for j in injected if j < len(gen) - k]),
        "decoded_greedily": k,
        "mismatches": len(mismatches),
        "first_mismatches": mismatches[:10],
        "seconds": {"load": round(t_load, 1), "teacher_forced_pass": round(t_forced, 1), "decode_tail": round(t_decode, 1)},
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
    }
    text = json.dumps(report, indent=1)
    print(text)
    if a.json_out:
        with open(a.json_out, "w") as f:
            f.write(text + "\n")
    sys.exit(0 if not mismatches else 1)


if __name__ == "__main__":
    main()
