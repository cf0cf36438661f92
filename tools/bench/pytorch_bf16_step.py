"""A plain PyTorch training step of the GPT shapes tools/bench/bf16.sh compares, in fp32 or under
torch.autocast("cpu", dtype=torch.bfloat16) (what a PyTorch user turns on for bf16 on CPU).

  /usr/bin/python3 tools/bench/pytorch_bf16_step.py HIDDEN HEADS fp32|bf16 [steps]

tests/models/gpt_reference.py's GPT, 4 layers, sequence 64, vocabulary 256, tied head, batch 8,
AdamW, one process, one thread. Prints one line: tokens/s and the median step time.
"""
import os
import sys

import torch

from pytorch_timing import median_step_seconds

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "models"))
from gpt_reference import Gpt  # noqa: E402

BATCH, SEQ, VOCAB = 8, 64, 256


def main(hidden, heads, precision, steps):
    torch.set_num_threads(1)
    torch.manual_seed(1234)
    model = Gpt(VOCAB, hidden, heads, 4, SEQ, True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def train_step(inputs, targets):
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = model(inputs, targets)
        loss.backward()
        optimizer.step()

    step = median_step_seconds(train_step, steps, VOCAB, BATCH, SEQ)
    print(f"pytorch {precision} hidden {hidden}: {BATCH * SEQ / step:.0f} tokens/s, "
          f"step {1000 * step:.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 20)
