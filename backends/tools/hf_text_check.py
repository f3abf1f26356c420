#!/usr/bin/env python3
"""Measure what a grafted checkpoint does to the base model's text, in Hugging Face transformers' `Qwen3_5ForCausalLM`.

Usage:
  hf_text_check.py --base BASE_DIR --model GRAFT_DIR --tokens TOKENS.json [--json-out FILE]

BASE_DIR: the base checkpoint, any Qwen3.5 layout: a text checkpoint (`model.*`) or a released multimodal one
(`model_type` qwen3_5 with `text_config`, tensors `model.language_model.*`; `model.visual.*` and `mtp.*` are
ignored), one `model.safetensors` or shards with `model.safetensors.index.json`, any of F32/F16/BF16.
GRAFT_DIR: a grafted checkpoint with `graft.json` (format loom-graft): layers [0, m) a woven machine, layers [m, m+n)
the base's, vocabulary the base's V ids then the machine's T tokens.
TOKENS.json: a JSON list of text token ids (each < V).

All in transformers' own model class, f32 on the CPU, weights memory-mapped (converted to f32 one decoder layer at a
time as it runs), one forward pass (the chunked prefill) over the whole token list per run:
  1. base, f32: its logits at every position (kept);  base, bf16 weights and activations: `noise_floor_kl`, the
     mean over positions of KL(base f32 || base bf16), the scale of float noise. The base is then freed.
  2. routed: the graft restricted to its base layers [m, m+n) (what the routing driver runs at text positions),
     logits[:, :V] against the base's.
  3. plain: the whole graft (all m+n layers, as a plain `generate` runs it), logits[:, :V] against the base's, and
     `trace_token_mass_*`: the probability the softmax over all V+T logits gives to the machine's tokens [V, V+T)
     (what masking them removes).
For each of routed and plain: positions, bit_identical (positions whose V logits are bitwise equal),
max_abs_logit_diff, kl_mean and kl_max (KL(base || graft) over the V-token softmax, float64), argmax_agreement.

Prints one JSON object {"routed": {...}, "plain": {...}, "noise_floor_kl": x, "seconds": s, "peak_rss_gb": g, ...}.
Exit status 0 when routed bit_identical == positions (for a widened graft, `graft.json`'s `widened`: greedy
agreement 1 and kl_max below WIDENED_KL_BOUND, as `loom text-check` accepts it), 1 otherwise, 2 on bad input.

Weights not 64-byte aligned in their file are copied (one group at a time, like the f32 conversion) so that
the BLAS takes the same path for the base and the graft whatever the files' layouts.

Memory: weights are file pages (evictable); the resident extras are the base's f32 logits (4*V bytes a position,
~1 MB at V = 248,320), one run's logits, and one decoder layer's (or the embedding's) f32 copy.
"""
import argparse, gc, json, os, resource, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

# A widened graft (`loom graft --widen`) carries the text residual scaled; its routed text is accepted at greedy
# agreement 1 and KL(base || graft) below this at every position (cli/src/text_check.rs, WIDENED_KL_BOUND).
WIDENED_KL_BOUND = 1e-6
from hf_check_trace import (  # noqa: E402
    cast_on_use, emit_report, fail, load_model, read_graft, restrict_layers, text_config, unrestrict)

CHUNK = 64  # positions per float64 block of the statistics


def forward_logits(model, ids):
    """Logits of every position of one prefill pass over `ids` (the cache a `generate` prefill would fill)."""
    out = model(input_ids=torch.tensor([ids]), use_cache=True)
    logits = out.logits[0]
    del out
    return logits


def kl_rows(p_logits, q_logits):
    """KL(softmax(p) || softmax(q)) per row, float64."""
    lp = torch.log_softmax(p_logits.double(), -1)
    lq = torch.log_softmax(q_logits.double(), -1)
    return (lp.exp() * (lp - lq)).sum(-1)


def compare(base, other, V, mass=False):
    """Figures of `other[:, :V]` against `base` ([N, V] f32 each)."""
    N = base.shape[0]
    same, diff = 0, 0.0
    agree = 0
    kls = []
    masses = []
    for a in range(0, N, CHUNK):
        b0, o = base[a:a + CHUNK], other[a:a + CHUNK]
        ov = o[:, :V]
        same += int((b0.view(torch.int32) == ov.contiguous().view(torch.int32)).all(-1).sum())
        diff = max(diff, float((b0.double() - ov.double()).abs().max()))
        agree += int((b0.argmax(-1) == ov.argmax(-1)).sum())
        kls.append(kl_rows(b0, ov))
        if mass:
            lo = torch.log_softmax(o.double(), -1)
            masses.append(lo[:, V:].exp().sum(-1))
    kl = torch.cat(kls)
    r = {
        "positions": N,
        "bit_identical": same,
        "max_abs_logit_diff": diff,
        "kl_mean": float(kl.mean()),
        "kl_max": float(kl.max()),
        "argmax_agreement": agree / N,
    }
    if mass:
        m = torch.cat(masses)
        r["trace_token_mass_mean"] = float(m.mean())
        r["trace_token_mass_max"] = float(m.max())
    return r


def rss_gb():
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True, help="the base checkpoint directory")
    ap.add_argument("--model", required=True, help="the grafted checkpoint directory (with graft.json)")
    ap.add_argument("--tokens", help="JSON list of text token ids")
    ap.add_argument("--json-out")
    a = ap.parse_args()
    if not a.tokens:
        fail("--tokens FILE is required: a JSON list of text token ids (ids of the base's vocabulary)")
    try:
        ids = json.load(open(a.tokens))
        if not isinstance(ids, list) or not ids or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
            raise ValueError("not a non-empty list of integers")
    except (OSError, ValueError) as e:
        fail(f"{a.tokens}: not a JSON list of token ids ({e})")
    for d in (a.base, a.model):
        if not os.path.isfile(os.path.join(d, "config.json")):
            fail(f"{d}: no config.json")
    graft = read_graft(a.model)
    if graft is None:
        fail(f"{a.model}: no graft.json (not a grafted checkpoint)")
    m, n, V, T = graft["m"], graft["n"], graft["V"], graft["T"]
    try:
        bcfg, _ = text_config(a.base)
        gcfg, _ = text_config(a.model)
    except (OSError, ValueError) as e:
        fail(f"cannot read a config ({e})")
    if bcfg.num_hidden_layers != n or bcfg.vocab_size != V:
        fail(f"{a.base}: {bcfg.num_hidden_layers} layers and vocab {bcfg.vocab_size}, but graft.json says the base has "
             f"{n} layers and vocab {V}")
    widened = graft["raw"].get("widened")
    hidden = widened["hidden_size"] if widened else bcfg.hidden_size
    if gcfg.hidden_size != hidden or list(bcfg.layer_types) != list(gcfg.layer_types[m:m + n]):
        fail(f"{a.model}: its base layers do not have the base's layer types and hidden size {hidden}"
             + (" (graft.json's widened shape)" if widened else ""))
    bad = [t for t in ids if not 0 <= t < V]
    if bad:
        fail(f"{a.tokens}: token {bad[0]} is not a text id (0..{V - 1})")
    torch.set_grad_enabled(False)
    t0 = time.time()
    secs = {}

    # 1. The base: f32 logits kept; bf16 run for the noise floor.
    t = time.time()
    try:
        base = load_model(a.base)
    except (OSError, ValueError) as e:
        fail(f"{a.base}: cannot load the checkpoint ({e})")
    if base.lm_head.weight.shape[0] != V:
        fail(f"{a.base}: lm_head has {base.lm_head.weight.shape[0]} rows, graft.json says V = {V}")
    cast_on_use(base, torch.float32, align=True)
    base_logits = forward_logits(base, ids)
    secs["base_f32"] = round(time.time() - t, 1)
    t = time.time()
    cast_on_use(base, torch.bfloat16, align=True)
    lb = forward_logits(base, ids)
    nf = torch.cat([kl_rows(base_logits[i:i + CHUNK], lb[i:i + CHUNK].float()) for i in range(0, len(ids), CHUNK)])
    nf_agree = float((base_logits.argmax(-1) == lb.argmax(-1)).float().mean())
    del lb, base
    gc.collect()
    secs["base_bf16"] = round(time.time() - t, 1)

    # 2. The graft: routed (base layers only), then plain (every layer).
    t = time.time()
    try:
        g = load_model(a.model)
    except (OSError, ValueError) as e:
        fail(f"{a.model}: cannot load the checkpoint ({e})")
    rows = max(graft["I"], graft["O"]) + T  # untied: V + T; tied: V + 2T (input rows, then output rows)
    if g.lm_head.weight.shape[0] != rows:
        fail(f"{a.model}: lm_head has {g.lm_head.weight.shape[0]} rows, graft.json's token ranges end at {rows}")
    cast_on_use(g, torch.float32, align=True)
    saved = restrict_layers(g, m, m + n)
    lg = forward_logits(g, ids)
    routed = compare(base_logits, lg, V)
    del lg
    secs["routed"] = round(time.time() - t, 1)
    t = time.time()
    unrestrict(g, saved)
    lg = forward_logits(g, ids)
    plain = compare(base_logits, lg, V, mass=True)
    del lg
    secs["plain"] = round(time.time() - t, 1)

    report = {
        "routed": routed,
        "plain": plain,
        "noise_floor_kl": float(nf.mean()),
        "noise_floor_kl_max": float(nf.max()),
        "noise_floor_argmax_agreement": nf_agree,
        "seconds": round(time.time() - t0, 1),
        "seconds_detail": secs,
        "peak_rss_gb": rss_gb(),
        "base": a.base,
        "model": a.model,
        "graft": {"widened": graft["raw"].get("widened"), "machine_layers": [0, m], "base_layers": [m, m + n], "base_vocab": V, "machine_input_tokens": graft["raw"]["machine_input_tokens"], "machine_output_tokens": graft["raw"]["machine_output_tokens"]},
    }
    emit_report(report, a.json_out)
    if graft["raw"].get("widened"):
        ok = routed["argmax_agreement"] == 1.0 and routed["kl_max"] < WIDENED_KL_BOUND
    else:
        ok = routed["bit_identical"] == routed["positions"]
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
