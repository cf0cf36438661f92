#!/usr/bin/env bash
# ZeRO-2 (ddp.shard: gradients) from YAML, as a user runs it: the main job at tp 1 x pp 2 on 4
# ranks (dp 2, the tied embedding's copies on both pipeline ends), one micro-batch of 16 per rank:
#  1. ZeRO-2 trains to ZeRO-1's losses bit for bit (with one micro-batch a step each bucket's
#     reduce-scatter is ZeRO-1's), its start-up line says what a rank holds, and its asynchronous
#     checkpoint of step 6 is byte-identical to ZeRO-1's synchronous one (the full per-parameter
#     format: no rank held the whole gradient to write it);
#  2. that checkpoint resumed by ZeRO-2 at dp 1 (2 ranks, two micro-batches a step: their slices
#     added) continues the run within the composition tolerance (1e-5).
# usage: zero2.sh WORK MPIEXEC TRIAX CONFIG [--set ...]
set -euo pipefail
WORK=$1 MPIEXEC=$2 TRIAX=$3 CONFIG=$4
shift 4
here=$(dirname "$0")
rm -rf "$WORK"
mkdir -p "$WORK"
common=(--set parallel.tensor=1 --set parallel.pipeline=2 --set train.micro_batch=16
  --set checkpoint.every=6 --set checkpoint.keep=0 --set sample.tokens=0)
timeout 200 "$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" "${common[@]}" \
  --set ddp.shard=optimizer --set run.dir="$WORK/zero1" | grep -E "sharded data|done:"
timeout 200 "$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" "${common[@]}" \
  --set ddp.shard=gradients --set checkpoint.async=true --set run.dir="$WORK/zero2" |
  grep -E "sharded data|done:"
/usr/bin/python3 "$here/compare_losses.py" "$WORK/zero2" "$WORK/zero1" 0
step6=checkpoints/step_00000006
for f in "$WORK/zero1/$step6"/*.safetensors; do
  cmp -s "$f" "$WORK/zero2/$step6/$(basename "$f")" ||
    { echo "FAIL: $(basename "$f") differs between ZeRO-1 (sync) and ZeRO-2 (async)"; exit 1; }
done
echo "ok: ZeRO-2's asynchronous checkpoint of step 6 is byte-identical to ZeRO-1's"
timeout 200 "$MPIEXEC" -n 2 "$TRIAX" train "$CONFIG" "$@" "${common[@]}" \
  --set ddp.shard=gradients --set run.dir="$WORK/zero2_dp1" --resume "$WORK/zero2/$step6" |
  grep -E "resumed from|done:"
/usr/bin/python3 "$here/compare_losses.py" "$WORK/zero2_dp1" "$WORK/zero1" 1e-5
echo "PASS: zero2"
