#!/usr/bin/env bash
# train.micro_batch_invariant from the command line (Note [Sample units]): the main job's GPT on
# 2 ranks at pp 2 with ZB-V (2 chunks per rank) under layout-invariant numerics, 8 steps with a
# final checkpoint, in micro-batches of 1 and of 4: the checkpoints' tensor files (every
# parameter and AdamW's state) are equal byte for byte, and so are the logged losses and norms.
# Without the mode, micro-batches of 4 give other bytes (what the mode changes).
# usage: micro_batch_invariance.sh WORK MPIEXEC TRIAX CONFIG [--set ...]
set -euo pipefail
WORK=$1 MPIEXEC=$2 TRIAX=$3 CONFIG=$4
shift 4
rm -rf "$WORK"
mkdir -p "$WORK"
run() {  # NAME MICRO_BATCH PER_SAMPLE [--set ...]
  local name=$1 micro_batch=$2 per_sample=$3
  shift 3
  "$MPIEXEC" -n 2 "$TRIAX" train "$CONFIG" "$@" --set parallel.tensor=1 --set parallel.pipeline=2 \
    --set schedule.name=zbv --set schedule.chunks_per_rank=2 --set train.steps=8 \
    --set train.log_every=1 --set train.eval_every=0 --set sample.tokens=0 \
    --set checkpoint.every=8 --set train.numerics=layout_invariant \
    --set train.micro_batch="$micro_batch" --set train.micro_batch_invariant="$per_sample" \
    --set run.dir="$WORK/$name" >"$WORK/$name.log" 2>&1 ||
    { cat "$WORK/$name.log"; echo "FAIL: run $name"; exit 1; }
}
run one 1 true "$@"
run four 4 true "$@"
run four_batched 4 false "$@"
losses() { grep -oE '"(loss|grad_norm|val_loss)": [^,}]*' "$WORK/$1/metrics.jsonl"; }
same_tensors() {  # A B: every tensor file of step 8's checkpoint equal byte for byte
  local f
  for f in "$WORK/$1"/checkpoints/step_00000008/*.safetensors; do
    cmp -s "$f" "$WORK/$2/checkpoints/step_00000008/$(basename "$f")" || return 1
  done
}
ls "$WORK"/one/checkpoints/step_00000008/*.safetensors >/dev/null
same_tensors one four || { echo "FAIL: micro-batches of 1 and 4 gave different checkpoints"; exit 1; }
grep -q val_loss "$WORK/one/metrics.jsonl" || { echo "FAIL: no evaluation logged"; exit 1; }
[ "$(losses one)" = "$(losses four)" ] || { echo "FAIL: the logged losses differ"; exit 1; }
echo "micro-batches of 1 and 4 with train.micro_batch_invariant: checkpoints equal byte for byte ($(losses four | tail -2 | tr '\n' ' '))"
if same_tensors one four_batched; then
  echo "FAIL: without train.micro_batch_invariant micro-batches of 4 gave the same bytes: the test cannot tell"
  exit 1
fi
echo "without it, micro-batches of 4 give other bytes"
echo "PASS: the micro-batch size changed no bit"
