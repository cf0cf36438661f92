"""The tool a user would pick instead: the same GPT in PyTorch, trained with DistributedDataParallel
over gloo (launched by torchrun), or as one plain process. Prints tokens/s.

  python3 tools/bench/pytorch_ddp.py [steps] [threads]                          # one process
  torchrun -r 9:1 -t 9:1 --standalone --nproc_per_node=2 tools/bench/pytorch_ddp.py [steps]

The model is tests/models/gpt_reference.py's (the one triax is checked against): 4 layers,
hidden 128, 4 heads, sequence 64, vocabulary 256, tied head; batch 8 per process, AdamW, one
thread per process unless told, random tokens.
"""
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "models"))
from gpt_reference import Gpt  # noqa: E402

BATCH, SEQ, VOCAB = 8, 64, 256


def main(steps, threads):
    torch.set_num_threads(threads)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if world > 1 else 0
    torch.manual_seed(1234)
    model = Gpt(VOCAB, 128, 4, 4, SEQ, True)
    if world > 1:
        model = DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(rank)

    def step():
        tokens = torch.randint(0, VOCAB, (BATCH, SEQ + 1), generator=generator)
        optimizer.zero_grad()
        model(tokens[:, :-1], tokens[:, 1:]).backward()
        optimizer.step()

    for _ in range(3):
        step()
    if world > 1:
        dist.barrier()
    start = time.time()
    for _ in range(steps):
        step()
    if world > 1:
        dist.barrier()
    seconds = time.time() - start
    if rank == 0:
        name = f"DDP(gloo) procs={world}" if world > 1 else f"one process, {threads} thread(s)"
        print(f"pytorch {name:<20} {steps * BATCH * SEQ * world / seconds:8.0f} tokens/s  "
              f"step {1000 * seconds / steps:6.1f} ms", flush=True)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30, int(sys.argv[2]) if len(sys.argv) > 2 else 1)
