#!/usr/bin/env bash
# With dropout on, exact resume needs the dropout streams' positions: train 12 steps saving at
# step 6, resume from it, and the resumed steps' losses must be bit-identical.
# usage: dropout_resume.sh WORK MPIEXEC TRIAX CONFIG [--set ...]
set -euo pipefail
WORK=$1 MPIEXEC=$2 TRIAX=$3 CONFIG=$4
shift 4
rm -rf "$WORK"
"$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" --set model.dropout=0.1 --set checkpoint.every=6 \
  --set run.dir="$WORK/full" | grep -E "checkpoint of step|done:"
"$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" --set model.dropout=0.1 --set run.dir="$WORK/resumed" \
  --resume "$WORK/full/checkpoints/step_00000006" | grep -E "resumed from|done:"
/usr/bin/python3 "$(dirname "$0")/compare_losses.py" "$WORK/resumed" "$WORK/full" 0
