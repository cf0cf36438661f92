#!/usr/bin/env bash
# A checkpoint saved at tp 2 x pp 2 is resharded offline to (tp 1, pp 1) and (tp 4, pp 1), and
# each resumes: every later step's loss must match the uninterrupted 2x2 run within the
# composition tolerance (1e-5 relative). Model and optimizer state both move.
# usage: reshard_resume.sh STEP_DIR REFERENCE_RUN WORK MPIEXEC TRIAX CONFIG [--set ...]
set -euo pipefail
STEP=$1 REFERENCE=$2 WORK=$3 MPIEXEC=$4 TRIAX=$5 CONFIG=$6
shift 6
here=$(dirname "$0")
for layout in "1 1 2" "4 1 4"; do
  read -r tp pp ranks <<<"$layout"
  out=$WORK/tp$tp-pp$pp
  rm -rf "$out" "$out-run"
  "$TRIAX" reshard "$STEP" --tensor "$tp" --pipeline "$pp" --out "$out"
  "$MPIEXEC" -n "$ranks" "$TRIAX" train "$CONFIG" "$@" --set parallel.tensor="$tp" \
    --set parallel.pipeline="$pp" --set run.dir="$out-run" --resume "$out" 2>&1 |
    grep -E "resumed from|done:"
  /usr/bin/python3 "$here/compare_losses.py" "$out-run" "$REFERENCE" 1e-5
done
