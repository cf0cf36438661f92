#!/usr/bin/env bash
# Resume at a smaller and a larger data-parallel width: train dp 2 (tp 1, pp 1) for 12 steps
# saving at step 6, resume that checkpoint at dp 1 and at dp 4; the later losses must match the
# uninterrupted run within the composition tolerance (1e-5 relative).
# usage: dp_resize_resume.sh WORK MPIEXEC TRIAX CONFIG [--set ...]
set -euo pipefail
WORK=$1 MPIEXEC=$2 TRIAX=$3 CONFIG=$4
shift 4
rm -rf "$WORK"
flat=(--set parallel.tensor=1 --set parallel.pipeline=1)
"$MPIEXEC" -n 2 "$TRIAX" train "$CONFIG" "$@" "${flat[@]}" --set checkpoint.every=6 \
  --set run.dir="$WORK/dp2" | grep -E "checkpoint of step 6|done:"
for ranks in 1 4; do
  "$MPIEXEC" -n "$ranks" "$TRIAX" train "$CONFIG" "$@" "${flat[@]}" --set run.dir="$WORK/dp$ranks" \
    --resume "$WORK/dp2/checkpoints/step_00000006" | grep -E "resumed from|done:"
  /usr/bin/python3 "$(dirname "$0")/compare_losses.py" "$WORK/dp$ranks" "$WORK/dp2" 1e-5
done
