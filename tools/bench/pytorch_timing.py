"""The timing loop the plain-PyTorch step benchmarks share (pytorch_bf16_step.py,
pytorch_llama_step.py): random token batches, 3 warm-up steps, the median of the rest."""
import statistics
import time

import torch

WARMUP = 3


def median_step_seconds(step, steps, vocab, batch, seq):
    """Times step(inputs, targets) — one whole training step (zero_grad, forward, backward,
    optimizer) — on seeded random batches; the median seconds of `steps` steps after warm-up."""
    generator = torch.Generator().manual_seed(0)
    times = []
    for k in range(steps + WARMUP):
        tokens = torch.randint(0, vocab, (batch, seq + 1), generator=generator)
        t0 = time.perf_counter()
        step(tokens[:, :-1], tokens[:, 1:])
        if k >= WARMUP:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)
