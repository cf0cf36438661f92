"""Checks triax's GPT against PyTorch: same weights, same batch -> same loss and gradients.

Usage: gpt_reference.py FILE.safetensors
FILE (written by tests/models/test_gpt_pytorch.cpp) holds triax's initial parameters under their
triax names, the batch ("batch.ids", "batch.targets"), triax's loss ("result.loss") and every
gradient ("grad.NAME"); its metadata holds the model's sizes. The model below is written the
ordinary PyTorch way (nn.MultiheadAttention, nn.LayerNorm, F.cross_entropy), independently of
triax's code, so agreement means triax computes a real GPT. Exits 1 on any mismatch.
"""
import json
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

TOLERANCE = 1e-5  # fp32: only the order of additions differs between the two implementations

DTYPES = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64, "I32": torch.int32}


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        raw = bytearray(data[8 + size + begin:8 + size + end])
        tensors[name] = torch.frombuffer(raw, dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
    return tensors, metadata


class Block(nn.Module):
    def __init__(self, hidden, heads, approximate="none"):
        super().__init__()
        self.approximate = approximate  # "tanh": GPT-2's GELU (model.activation: gelu_tanh)
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.fc_out = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        s = x.size(1)
        future = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
        a = self.ln1(x)
        x = x + self.attn(a, a, a, attn_mask=future, need_weights=False)[0]
        return x + self.fc_out(F.gelu(self.fc(self.ln2(x)), approximate=self.approximate))


class Gpt(nn.Module):
    def __init__(self, vocab, hidden, heads, layers, seq_len, tied, approximate="none"):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(seq_len, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads, approximate) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        self.head = None if tied else nn.Linear(hidden, vocab, bias=False)

    def forward(self, ids, targets):
        x = self.tok(ids) + self.pos(torch.arange(ids.size(1)))[None]
        for block in self.blocks:
            x = block(x)
        x = self.ln_f(x)
        logits = F.linear(x, self.tok.weight) if self.head is None else self.head(x)
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


def triax_names(model, layers):
    """PyTorch parameter -> triax parameter name."""
    names = {model.tok.weight: "token_embedding.weight", model.pos.weight: "position_embedding.weight",
             model.ln_f.weight: "final_norm.weight", model.ln_f.bias: "final_norm.bias"}
    if model.head is not None:
        names[model.head.weight] = "head.weight"
    for i, b in enumerate(model.blocks):
        p = f"layer{i}."
        names.update({b.ln1.weight: p + "ln1.weight", b.ln1.bias: p + "ln1.bias",
                      b.attn.in_proj_weight: p + "qkv.weight", b.attn.in_proj_bias: p + "qkv.bias",
                      b.attn.out_proj.weight: p + "proj.weight", b.attn.out_proj.bias: p + "proj.bias",
                      b.ln2.weight: p + "ln2.weight", b.ln2.bias: p + "ln2.bias",
                      b.fc.weight: p + "fc.weight", b.fc.bias: p + "fc.bias",
                      b.fc_out.weight: p + "fc_out.weight", b.fc_out.bias: p + "fc_out.bias"})
    assert len(names) == len(list(model.parameters())), "every parameter must be mapped"
    return names


def main(path):
    tensors, meta = load_safetensors(path)
    sizes = {k: int(meta[k]) for k in ("vocab", "hidden", "heads", "layers", "seq_len")}
    tied = meta["tie_embeddings"] == "true"
    approximate = "tanh" if meta.get("activation") == "gelu_tanh" else "none"
    model = Gpt(tied=tied, approximate=approximate, **sizes)
    names = triax_names(model, sizes["layers"])
    with torch.no_grad():
        for param, name in names.items():
            param.copy_(tensors[name])
    loss = model(tensors["batch.ids"], tensors["batch.targets"])
    loss.backward()

    worst = abs(loss.item() - tensors["result.loss"].item())
    print(f"loss: pytorch {loss.item():.7f} triax {tensors['result.loss'].item():.7f} |diff| {worst:.2e}")
    failures = [] if worst <= TOLERANCE else ["loss"]
    for param, name in names.items():
        diff = (param.grad - tensors["grad." + name]).abs().max().item()
        worst = max(worst, diff)
        if not torch.allclose(param.grad, tensors["grad." + name], rtol=TOLERANCE, atol=TOLERANCE):
            failures.append(f"{name} (max |diff| {diff:.2e})")
    print(f"compared the loss and {len(names)} gradients; largest |diff| {worst:.2e}, tolerance {TOLERANCE}")
    if failures:
        print("MISMATCH: " + ", ".join(failures))
        return 1
    print("OK: triax's GPT matches PyTorch")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
