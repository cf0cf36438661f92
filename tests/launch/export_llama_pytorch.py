#!/usr/bin/python3
"""A Llama trained by triax, used elsewhere: loads `triax export`'s full-model file into the
PyTorch Llama of tests/models/llama_reference.py (written from the published formulas) and
computes the held-out loss on the first BATCHES x GLOBAL_BATCH sequences of VAL.tok, which must
equal the validation loss triax recorded for STEP in RUN_DIR/metrics.jsonl (within 1e-5
relative: only summation order differs).

usage: export_llama_pytorch.py FULL.safetensors VAL.tok RUN_DIR STEP BATCHES GLOBAL_BATCH
"""
import json
import os
import re
import struct
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "models"))
from gpt_reference import load_safetensors  # noqa: E402
from llama_reference import forward, inverse_frequencies  # noqa: E402


def model_keys(config_yaml):
    """The `model:` section of the resolved config the export carries, as strings."""
    body = config_yaml.split("model:\n", 1)[1]
    keys = {}
    for line in body.split("\n"):
        match = re.match(r"^  (\w+): (.*)$", line)
        if not match:
            break
        keys[match.group(1)] = match.group(2).strip('"')
    return keys


def main(path, val_path, run_dir, step, batches, global_batch):
    tensors, meta = load_safetensors(path)
    m = model_keys(meta["config"])
    assert m["arch"] == "llama", m["arch"]
    heads = int(m["heads"])
    kv = int(m["kv_heads"]) or heads
    spec = {"hidden": int(m["hidden"]), "heads": heads, "kv_heads": kv, "layers": int(m["layers"]),
            "norm_eps": float(m["norm_eps"])}
    inv_freq = inverse_frequencies(spec["hidden"] // heads, float(m["rope_theta"]),
                                   float(m["rope_scaling_factor"]), float(m["rope_low_freq_factor"]),
                                   float(m["rope_high_freq_factor"]),
                                   float(m["rope_original_max_positions"]))
    raw = open(val_path, "rb").read()
    magic, _, width, count = struct.unpack_from("<8sIIQ", raw)
    assert magic == b"TRIAXTOK" and width == 1
    tokens = torch.tensor(list(raw[64:64 + count]), dtype=torch.long)
    seq = int(m["seq_len"])
    windows = torch.stack([tokens[i * seq:i * seq + seq + 1] for i in range(batches * global_batch)])
    with torch.no_grad():
        loss = forward(tensors, spec, windows[:, :-1], windows[:, 1:], inv_freq).item()
    records = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl"))]
    triax = next(r["val_loss"] for r in records if r["step"] == step)
    diff = abs(loss - triax) / triax
    print(f"held-out loss of the exported Llama in PyTorch {loss:.6f}, triax recorded {triax:.6f}, "
          f"relative difference {diff:.1e}")
    return 0 if diff < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], *map(int, sys.argv[4:7])))
