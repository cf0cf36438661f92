#!/usr/bin/python3
"""usage: compare_losses.py RUN_DIR REFERENCE_RUN_DIR TOLERANCE

Every step RUN_DIR/metrics.jsonl records must have the loss REFERENCE_RUN_DIR recorded for the
same step: bit-identical when TOLERANCE is 0, else within TOLERANCE relative. Used to show that
a resumed run continues the uninterrupted one (at the same layout exactly, at another dp within
the composition tolerance)."""
import json
import sys


def losses(run_dir):
    with open(f"{run_dir}/metrics.jsonl") as f:
        return {r["step"]: r["loss"] for r in map(json.loads, filter(str.strip, f))}


got, want, tol = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3])
if not got:
    sys.exit(f"{sys.argv[1]}: no steps recorded")
worst = 0.0
for step, loss in sorted(got.items()):
    if step not in want:
        sys.exit(f"step {step} is not in {sys.argv[2]}")
    diff = abs(loss - want[step]) / abs(want[step])
    worst = max(worst, diff)
    if (tol == 0 and loss != want[step]) or diff > tol:
        sys.exit(f"step {step}: loss {loss!r} vs {want[step]!r} (relative {diff:.2e}, allowed {tol})")
print(f"steps {min(got)}..{max(got)} match {sys.argv[2]}: "
      + ("bit-identical" if worst == 0 else f"worst relative difference {worst:.2e} <= {tol}"))
