"""A plain PyTorch training step of the Llama shape triax's benchmark uses: the twin of
`build/triax_bench_step --set model.arch=llama ...` (tools/bench/llama_vs_pytorch.sh).

  /usr/bin/python3 tools/bench/pytorch_llama_step.py [steps] [threads]

The model is tests/models/llama_reference.py's (written from the published formulas: RMSNorm in
fp32, rotate_half RoPE, repeat_kv grouped-query attention, SwiGLU), 4 layers, hidden 128, 4 heads
over 2 kv heads, SwiGLU 352, sequence 64, vocabulary 256, untied head; batch 8, AdamW, random
tokens, one process. Prints one line: tokens/s and the median step time.
"""
import os
import sys

import torch

from pytorch_timing import median_step_seconds

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "models"))
from llama_reference import forward, inverse_frequencies  # noqa: E402

BATCH, SEQ, VOCAB, HIDDEN, HEADS, KV, INTER, LAYERS = 8, 64, 256, 128, 4, 2, 352, 4


def parameters():
    torch.manual_seed(1234)
    d = HIDDEN // HEADS
    p = {"token_embedding.weight": torch.randn(VOCAB, HIDDEN) * 0.02,
         "final_norm.weight": torch.ones(HIDDEN), "head.weight": torch.randn(VOCAB, HIDDEN) * 0.02}
    for i in range(LAYERS):
        shapes = {"input_norm.weight": (HIDDEN,), "post_attention_norm.weight": (HIDDEN,),
                  "q_proj.weight": (HIDDEN, HIDDEN), "k_proj.weight": (KV * d, HIDDEN),
                  "v_proj.weight": (KV * d, HIDDEN), "o_proj.weight": (HIDDEN, HIDDEN),
                  "gate_proj.weight": (INTER, HIDDEN), "up_proj.weight": (INTER, HIDDEN),
                  "down_proj.weight": (HIDDEN, INTER)}
        for name, shape in shapes.items():
            p[f"layer{i}.{name}"] = torch.ones(shape) if "norm" in name else torch.randn(shape) * 0.02
    return {k: v.requires_grad_(True) for k, v in p.items()}


def main(steps, threads):
    torch.set_num_threads(threads)
    params = parameters()
    meta = {"hidden": HIDDEN, "heads": HEADS, "kv_heads": KV, "layers": LAYERS, "norm_eps": 1e-5}
    inv_freq = inverse_frequencies(HIDDEN // HEADS, 10000.0, 0.0, 1.0, 4.0, 8192.0)
    optimizer = torch.optim.AdamW(params.values(), lr=1e-3)

    def train_step(inputs, targets):
        optimizer.zero_grad()
        forward(params, meta, inputs, targets, inv_freq).backward()
        optimizer.step()

    step = median_step_seconds(train_step, steps, VOCAB, BATCH, SEQ)
    print(f"pytorch llama: one process, {threads} thread(s), batch {BATCH}: "
          f"{BATCH * SEQ / step:.0f} tokens/s, step {1000 * step:.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40, int(sys.argv[2]) if len(sys.argv) > 2 else 1)
