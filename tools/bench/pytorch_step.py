"""Where one PyTorch training step's time goes: the twin of build/triax_bench_step.

  /usr/bin/python3 tools/bench/pytorch_step.py [steps] [threads]

The GPT of tools/bench/pytorch_ddp.py (tests/models/gpt_reference.py: 4 layers, hidden 128,
4 heads, sequence 64, vocabulary 256, tied head), batch 8, AdamW, random tokens, one process.
Prints the median of each phase (forward incl. loss, backward, optimizer incl. zero_grad) over
the timed steps, then per-op self times of 3 further steps under torch.autograd.profiler (the
same record-function events triax's table reads).
"""
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "models"))
from gpt_reference import Gpt  # noqa: E402

BATCH, SEQ, VOCAB = 8, 64, 256


def main(steps, threads):
    torch.set_num_threads(threads)
    torch.manual_seed(1234)
    model = Gpt(VOCAB, 128, 4, 4, SEQ, True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(0)
    phases = {"forward (incl. loss)": [], "backward": [], "optimizer": [], "step total": []}

    def step(record):
        tokens = torch.randint(0, VOCAB, (BATCH, SEQ + 1), generator=generator)
        t0 = time.perf_counter()
        optimizer.zero_grad()
        loss = model(tokens[:, :-1], tokens[:, 1:])
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        optimizer.step()
        t3 = time.perf_counter()
        if record:
            phases["forward (incl. loss)"].append(t1 - t0)
            phases["backward"].append(t2 - t1)
            phases["optimizer"].append(t3 - t2)
            phases["step total"].append(t3 - t0)

    for _ in range(3):
        step(False)
    start = time.perf_counter()
    for _ in range(steps):
        step(True)
    seconds = time.perf_counter() - start
    print(f"pytorch step: one process, {threads} thread(s), batch {BATCH}, {steps} steps: "
          f"{steps * BATCH * SEQ / seconds:.0f} tokens/s, step {1000 * seconds / steps:.1f} ms")
    total = statistics.median(phases["step total"])
    print(f"{'phase':<24} {'ms':>12} {'share':>7}")
    for name, values in phases.items():
        ms = 1000 * statistics.median(values)
        print(f"{name:<24} {ms:12.2f} {100 * ms / (1000 * total):6.1f}%")

    profiled = 3
    with torch.autograd.profiler.profile() as prof:
        start = time.perf_counter()
        for _ in range(profiled):
            step(False)
        step_us = 1e6 * (time.perf_counter() - start)
    rows = sorted(prof.key_averages(), key=lambda r: r.self_cpu_time_total, reverse=True)
    print(f"\n{profiled} profiled steps (the profiler adds time to each op):")
    print(f"{'op (self time)':<58} {'calls/step':>9} {'us/step':>11} {'share':>7}")
    for r in rows[:18]:
        name = r.key if len(r.key) <= 58 else r.key[:55] + "..."
        print(f"{name:<58} {r.count / profiled:9.1f} {r.self_cpu_time_total / profiled:11.0f} "
              f"{100 * r.self_cpu_time_total / step_us:6.1f}%")
    all_us = sum(r.self_cpu_time_total for r in rows)
    print(f"{'(all ops)':<58} {sum(r.count for r in rows) / profiled:9.1f} {all_us / profiled:11.0f} "
          f"{100 * all_us / step_us:6.1f}%")
    print(f"{'(outside any op: Python)':<58} {'':>9} {(step_us - all_us) / profiled:11.0f} "
          f"{100 * (step_us - all_us) / step_us:6.1f}%")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30, int(sys.argv[2]) if len(sys.argv) > 2 else 1)
