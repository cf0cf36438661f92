#!/usr/bin/python3
"""A model trained by triax, used elsewhere: loads `triax export`'s full-model file into the
ordinary PyTorch GPT of tests/models/gpt_reference.py and computes the held-out loss on the
first BATCHES x GLOBAL_BATCH sequences of VAL.tok, which must equal the validation loss triax
recorded for STEP in RUN_DIR/metrics.jsonl (within 1e-5 relative: only summation order differs).

usage: export_pytorch.py FULL.safetensors VAL.tok RUN_DIR STEP BATCHES GLOBAL_BATCH
"""
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "models"))
from gpt_reference import Gpt, load_safetensors, triax_names  # noqa: E402


def main(path, val_path, run_dir, step, batches, global_batch):
    tensors, meta = load_safetensors(path)
    sizes = {k: int(meta[k]) for k in ("vocab", "hidden", "heads", "layers", "seq_len")}
    model = Gpt(tied=meta["tie_embeddings"] == "true", **sizes)
    with torch.no_grad():
        for param, name in triax_names(model, sizes["layers"]).items():
            param.copy_(tensors[name])
    raw = open(val_path, "rb").read()
    magic, _, width, count = struct.unpack_from("<8sIIQ", raw)
    assert magic == b"TRIAXTOK" and width == 1
    tokens = torch.tensor(list(raw[64:64 + count]), dtype=torch.long)
    seq = sizes["seq_len"]
    n = batches * global_batch
    windows = torch.stack([tokens[i * seq:i * seq + seq + 1] for i in range(n)])
    with torch.no_grad():
        loss = model(windows[:, :-1], windows[:, 1:]).item()
    records = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl"))]
    triax = next(r["val_loss"] for r in records if r["step"] == step)
    diff = abs(loss - triax) / triax
    print(f"held-out loss of the exported model in PyTorch {loss:.6f}, triax recorded {triax:.6f}, "
          f"relative difference {diff:.1e}")
    return 0 if diff < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], *map(int, sys.argv[4:7])))
