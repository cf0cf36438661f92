#!/usr/bin/python3
"""Draws a triax run's loss curves: `triax plot RUN_DIR [--out PNG]` runs this.

Reads RUN_DIR/metrics.jsonl (one JSON object per optimizer step: step, loss, lr, grad_norm, and
val_loss on evaluation steps) and writes a PNG with the training loss (every step, light, and a
moving average), the validation loss (points), and the learning rate on a second axis.
Needs Debian's python3-matplotlib (installed by tools/setup.sh).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402


def main(run_dir, out):
    steps, losses, lrs, val_steps, val_losses = [], [], [], [], []
    with open(f"{run_dir}/metrics.jsonl") as f:
        for line in f:
            if not line.strip():
                continue
            record = json.loads(line)
            steps.append(record["step"])
            losses.append(record["loss"])
            lrs.append(record.get("lr"))
            if record.get("val_loss") is not None:
                val_steps.append(record["step"])
                val_losses.append(record["val_loss"])
    if not steps:
        sys.exit(f"{run_dir}/metrics.jsonl: no records")
    window = max(1, len(losses) // 20)
    smooth = [sum(losses[max(0, i - window + 1):i + 1]) / len(losses[max(0, i - window + 1):i + 1])
              for i in range(len(losses))]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    ax.plot(steps, losses, color="tab:blue", alpha=0.25, linewidth=0.8, label="train loss (step)")
    ax.plot(steps, smooth, color="tab:blue", linewidth=1.8, label=f"train loss ({window}-step mean)")
    if val_steps:
        ax.plot(val_steps, val_losses, "o-", color="tab:orange", label="validation loss")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("cross-entropy (nats per token)")
    ax.grid(alpha=0.3)
    if any(lr is not None for lr in lrs):
        ax2 = ax.twinx()
        ax2.plot(steps, lrs, color="tab:gray", linestyle="--", linewidth=1, label="learning rate")
        ax2.set_ylabel("learning rate")
        lines = ax.get_legend_handles_labels()
        lines2 = ax2.get_legend_handles_labels()
        ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="upper right")
    else:
        ax.legend(loc="upper right")
    ax.set_title(f"triax: {run_dir}")
    fig.tight_layout()
    fig.savefig(out)
    print(f"{out}: {len(steps)} steps, final loss {losses[-1]:.4f}"
          + (f", final validation loss {val_losses[-1]:.4f}" if val_losses else ""))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot_metrics.py RUN_DIR OUT.png")
    main(sys.argv[1], sys.argv[2])
