"""Checks triax's Llama against PyTorch: same weights, same batch -> same loss and gradients.

Usage: llama_reference.py FILE.safetensors
FILE (written by tests/models/test_llama_pytorch.cpp) holds triax's initial parameters under their
triax names, the batch ("batch.ids", "batch.targets"), triax's loss ("result.loss"), every
gradient ("grad.NAME") and triax's rotary inverse frequencies ("rope.inv_freq"); its metadata
holds the model's sizes. The model below is written from the published formulas (Hugging Face's
modeling_llama.py semantics: RMSNorm in fp32, rotate_half RoPE, repeat_kv grouped-query
attention, SwiGLU, Llama 3.1 frequency scaling), independently of triax's code: torch 1.13 has
no RMSNorm module nor grouped-query attention, so both are written out here. Exits 1 on any
mismatch.
"""
import math
import sys

import torch
import torch.nn.functional as F

from gpt_reference import load_safetensors

TOLERANCE = 1e-5  # fp32: only the order of additions differs between the two implementations


def inverse_frequencies(head_dim, theta, factor, low, high, original):
    """Llama 3.1 (torchtitan's precompute_freqs_cis, HF's rope_type "llama3")."""
    freqs = [theta ** (-2 * i / head_dim) for i in range(head_dim // 2)]
    if factor <= 0:
        return torch.tensor(freqs, dtype=torch.float64)
    scaled = []
    for f in freqs:
        wavelen = 2 * math.pi / f
        if wavelen < original / high:
            scaled.append(f)
        elif wavelen > original / low:
            scaled.append(f / factor)
        else:
            smooth = (original / wavelen - low) / (high - low)
            scaled.append((1 - smooth) * f / factor + smooth * f)
    return torch.tensor(scaled, dtype=torch.float64)


def rms_norm(x, weight, eps):
    x32 = x.float()
    return weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def forward(p, meta, ids, targets, inv_freq):
    hidden, heads, kv_heads = meta["hidden"], meta["heads"], meta["kv_heads"]
    layers, eps = meta["layers"], meta["norm_eps"]
    d = hidden // heads
    b, s = ids.shape
    angles = torch.outer(torch.arange(s, dtype=torch.float32), inv_freq.float())
    emb = torch.cat((angles, angles), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    x = F.embedding(ids, p["token_embedding.weight"])
    future = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
    for i in range(layers):
        w = lambda name: p.get(f"layer{i}.{name}")  # noqa: E731
        n = rms_norm(x, w("input_norm.weight"), eps)
        q = F.linear(n, w("q_proj.weight"), w("q_proj.bias")).view(b, s, heads, d).transpose(1, 2)
        k = F.linear(n, w("k_proj.weight"), w("k_proj.bias")).view(b, s, kv_heads, d).transpose(1, 2)
        v = F.linear(n, w("v_proj.weight"), w("v_proj.bias")).view(b, s, kv_heads, d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(heads // kv_heads, dim=1)  # repeat_kv
        v = v.repeat_interleave(heads // kv_heads, dim=1)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(d)
        probs = scores.masked_fill(future, float("-inf")).softmax(-1)
        a = (probs @ v).transpose(1, 2).reshape(b, s, hidden)
        x = x + F.linear(a, w("o_proj.weight"))
        n = rms_norm(x, w("post_attention_norm.weight"), eps)
        mlp = F.silu(F.linear(n, w("gate_proj.weight"))) * F.linear(n, w("up_proj.weight"))
        x = x + F.linear(mlp, w("down_proj.weight"))
    x = rms_norm(x, p["final_norm.weight"], eps)
    head = p.get("head.weight", p["token_embedding.weight"])
    logits = F.linear(x, head)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


def main(path):
    tensors, raw_meta = load_safetensors(path)
    meta = {k: int(raw_meta[k]) for k in ("vocab", "hidden", "heads", "kv_heads", "layers")}
    meta["norm_eps"] = float(raw_meta["norm_eps"])
    rope = [float(raw_meta[k]) for k in ("rope_theta", "rope_scaling_factor",
                                         "rope_low_freq_factor", "rope_high_freq_factor",
                                         "rope_original_max_positions")]
    d = meta["hidden"] // meta["heads"]
    expected_freq = inverse_frequencies(d, *rope)
    freq_diff = (expected_freq - tensors["rope.inv_freq"].double()).abs().max().item()
    failures = [] if freq_diff <= 1e-6 * expected_freq.abs().max().item() else ["rope frequencies"]
    print(f"rope inverse frequencies: max |diff| {freq_diff:.2e} (scaling factor {rope[1]})")

    names = [n for n in tensors if not n.startswith(("batch.", "result.", "grad.", "rope."))]
    params = {n: tensors[n].clone().requires_grad_(True) for n in names}
    loss = forward(params, meta, tensors["batch.ids"], tensors["batch.targets"], expected_freq)
    loss.backward()
    worst = abs(loss.item() - tensors["result.loss"].item())
    print(f"loss: pytorch {loss.item():.7f} triax {tensors['result.loss'].item():.7f} "
          f"|diff| {worst:.2e}")
    if worst > TOLERANCE:
        failures.append("loss")
    for name, param in params.items():
        diff = (param.grad - tensors["grad." + name]).abs().max().item()
        worst = max(worst, diff)
        if not torch.allclose(param.grad, tensors["grad." + name], rtol=TOLERANCE, atol=TOLERANCE):
            failures.append(f"{name} (max |diff| {diff:.2e})")
    print(f"compared the loss and {len(params)} gradients; largest |diff| {worst:.2e}, "
          f"tolerance {TOLERANCE}")
    if failures:
        print("MISMATCH: " + ", ".join(failures))
        return 1
    print("OK: triax's Llama matches PyTorch")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
