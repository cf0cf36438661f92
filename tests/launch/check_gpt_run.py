#!/usr/bin/python3
"""Checks what a short `triax train` of the GPT left in its run.dir.

usage: check_gpt_run.py RUN_DIR STEPS [REFERENCE_RUN_DIR]

- metrics.jsonl has one record per step 1..STEPS, each with loss, lr and grad_norm, and the
  logging fields (tokens_per_s, mfu, peak_rss_mib per rank, eta_s) on the last step;
- the loss fell (the mean of the last three steps is below the first step's by 0.3 nats);
- a validation loss was recorded, and sample.txt and config.resolved.yaml exist;
- with REFERENCE_RUN_DIR (the same config under another launcher): every step's loss matches
  within 1e-5 relative, the composition tolerance. Launchers must not change the training.
"""
import json
import os
import sys


def records(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    run_dir, steps = sys.argv[1], int(sys.argv[2])
    got = records(run_dir)
    problems = []
    if [r["step"] for r in got] != list(range(1, steps + 1)):
        problems.append(f"steps recorded {[r['step'] for r in got]}, expected 1..{steps}")
    for key in ("loss", "lr", "grad_norm"):
        if any(r.get(key) is None for r in got):
            problems.append(f"a record lacks {key}")
    last = got[-1] if got else {}
    for key in ("tokens_per_s", "mfu", "peak_rss_mib", "eta_s", "val_loss"):
        if last.get(key) is None:
            problems.append(f"the last record lacks {key}")
    if got:
        first, tail = got[0]["loss"], [r["loss"] for r in got[-3:]]
        if sum(tail) / len(tail) > first - 0.3:
            problems.append(f"the loss did not fall: first {first:.4f}, last three {tail}")
    for name in ("sample.txt", "config.resolved.yaml"):
        if not os.path.exists(os.path.join(run_dir, name)):
            problems.append(f"{name} is missing")
    if len(sys.argv) > 3:
        reference = records(sys.argv[3])
        for a, b in zip(got, reference):
            if abs(a["loss"] - b["loss"]) > 1e-5 * abs(b["loss"]):
                problems.append(f"step {a['step']}: loss {a['loss']} vs {b['loss']} in {sys.argv[3]}")
        print(f"losses match {sys.argv[3]} within 1e-5 relative over {len(reference)} steps")
    if problems:
        sys.exit(f"{run_dir}: " + "; ".join(problems))
    print(f"{run_dir}: {steps} steps, loss {got[0]['loss']:.4f} -> {got[-1]['loss']:.4f}, "
          f"val {last['val_loss']:.4f}, {last['tokens_per_s']:.0f} tokens/s")


if __name__ == "__main__":
    main()
