#!/usr/bin/env bash
# The main job (configs/gpt-fortunes.yaml: dp 2 x tp 2 x pp 2), cut to 120 steps, in fp32 and in
# bf16: bf16 is not bit-equal to fp32, so what is checked is the curve: the held-out loss at every
# evaluation (steps 40, 80, 120) within 2% of fp32's, and the final training loss too. (300 steps
# twice took over 6 minutes on an AVX2-only CPU, where bf16 matmuls are emulated.)
# usage: bf16_main_job.sh TRIAX CONFIG TOKENS RUNS_DIR
set -euo pipefail
TRIAX=$1 CONFIG=$2 TOKENS=$3 RUNS=$4
for precision in fp32 bf16; do
  rm -rf "$RUNS/main_$precision"
  mpiexec -n 8 "$TRIAX" train "$CONFIG" --set data.tokens="$TOKENS" --set sample.tokens=0 \
    --set train.precision=$precision --set run.dir="$RUNS/main_$precision" --set train.steps=120 \
    --set train.eval_every=40 --set train.log_every=40 |
    grep -E "done:|MFU against"
done
/usr/bin/python3 - "$RUNS/main_fp32/metrics.jsonl" "$RUNS/main_bf16/metrics.jsonl" <<'PY'
import json, sys
fp32, bf16 = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
worst = 0.0
for a, b in zip(fp32, bf16):
    for key in ("val_loss",):
        if key in a:
            diff = abs(b[key] - a[key]) / a[key]
            worst = max(worst, diff)
            print(f"step {a['step']}: val loss fp32 {a[key]:.4f}, bf16 {b[key]:.4f}, relative {diff:.2%}")
final = abs(bf16[-1]["loss"] - fp32[-1]["loss"]) / fp32[-1]["loss"]
print(f"final training loss fp32 {fp32[-1]['loss']:.4f}, bf16 {bf16[-1]['loss']:.4f}, relative {final:.2%}")
evals = sum("val_loss" in a and "val_loss" in b for a, b in zip(fp32, bf16))
print(f"{evals} evaluations compared")
ok = worst < 0.02 and final < 0.02 and len(fp32) == len(bf16) == 120 and evals == 3
print(("PASS" if ok else "FAIL") + ": bf16 follows fp32's curve within 2%")
sys.exit(0 if ok else 1)
PY
