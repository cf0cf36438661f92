"""The comparison tools/bench/gpu.sh makes: the same GPT trained the way a PyTorch user would on
one GPU, in bf16.

  python3 tools/bench/pytorch_gpu_step.py LAYERS HIDDEN HEADS SEQ VOCAB BATCH STEPS eager|compile PEAK_TFLOPS

A GPT-2 block written as nanoGPT writes it (pre-LayerNorm, fused qkv, F.scaled_dot_product_attention
with is_causal, tanh GELU, tied head, no dropout), torch.autocast("cuda", bfloat16) over fp32
weights, AdamW(fused=True), random tokens; `compile` wraps the model in torch.compile. Prints one
line: the median step of STEPS timed steps (after warm-up, synchronised), tokens/s, MFU against
PEAK_TFLOPS by the FLOP count triax uses (models/transformer_flops.cpp: 6 x matmul parameters per
token + 12 x layers x hidden x seq), and the allocator's peak.
"""
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.fc_out = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=2)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, h))
        return x + self.fc_out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, layers, hidden, heads, seq, vocab):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(seq, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)

    def forward(self, ids, targets):
        x = self.tok(ids) + self.pos(torch.arange(ids.size(1), device=ids.device))[None]
        for block in self.blocks:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.tok.weight)
        return F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), targets.reshape(-1))


def flops_per_token(layers, hidden, seq, vocab):
    matmuls = layers * (2 * hidden * hidden + 2 * hidden * hidden + 2 * hidden * 4 * hidden)
    return 6 * (matmuls + hidden * vocab) + 12 * layers * hidden * seq


def main(layers, hidden, heads, seq, vocab, batch, steps, mode, peak_tflops):
    torch.manual_seed(1234)
    device = torch.device("cuda")
    model = Gpt(layers, hidden, heads, seq, vocab).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    run = torch.compile(model) if mode == "compile" else model

    def step():
        tokens = torch.randint(0, vocab, (batch, seq + 1), device=device)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = run(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    for _ in range(5 if mode == "compile" else 3):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step().item()
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    tokens_per_s = batch * seq / median
    mfu = tokens_per_s * flops_per_token(layers, hidden, seq, vocab) / (peak_tflops * 1e12)
    params = sum(p.numel() for p in model.parameters())
    print(f"pytorch {torch.__version__} {mode}: {params / 1e6:.0f}M parameters, batch {batch}x{seq}: "
          f"step {1000 * median:.1f} ms, {tokens_per_s:.0f} tokens/s, MFU {100 * mfu:.1f}% of "
          f"{peak_tflops:g} TFLOP/s, peak allocated {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB")


if __name__ == "__main__":
    a = sys.argv[1:]
    main(*(int(x) for x in a[:7]), a[7], float(a[8]))
