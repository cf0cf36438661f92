#!/usr/bin/env bash
# The zero-bubble schedules from YAML, as a user runs them (dp 2 x tp 2 x pp 2 on 8 ranks):
#  1. schedule.name: zbh1 trains the main job to the same losses as 1F1B, bit for bit (its split
#     backward reproduces the one-piece backward; the forwards, dropout included, run in 1F1B's
#     order);
#  2. schedule.name: zbv (two chunks per rank in a V) saves a checkpoint at step 6, and the run
#     resumed from it at dp 1 (4 ranks) continues within the composition tolerance (1e-5);
#  3. that V-placed checkpoint is refused by a loop schedule, with the conversion to run, and
#     `reshard --schedule interleaved` converts it: the interleaved run resumed from the copy
#     continues the ZB-V run within the same tolerance.
# usage: zero_bubble.sh REFERENCE_RUN WORK MPIEXEC TRIAX CONFIG [--set ...]
set -euo pipefail
REFERENCE=$1 WORK=$2 MPIEXEC=$3 TRIAX=$4 CONFIG=$5
shift 5
here=$(dirname "$0")
rm -rf "$WORK"
mkdir -p "$WORK"
"$MPIEXEC" -n 8 "$TRIAX" train "$CONFIG" "$@" --set schedule.name=zbh1 \
  --set run.dir="$WORK/zbh1" | grep -E "schedule zbh1|done:"
/usr/bin/python3 "$here/compare_losses.py" "$WORK/zbh1" "$REFERENCE" 0

V=(--set schedule.name=zbv --set schedule.chunks_per_rank=2)
"$MPIEXEC" -n 8 "$TRIAX" train "$CONFIG" "$@" "${V[@]}" --set checkpoint.every=6 \
  --set run.dir="$WORK/zbv" | grep -E "schedule zbv|done:"
step6=$WORK/zbv/checkpoints/step_00000006
"$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" "${V[@]}" --set run.dir="$WORK/zbv_dp1" \
  --resume "$step6" | grep -E "resumed from|done:"
/usr/bin/python3 "$here/compare_losses.py" "$WORK/zbv_dp1" "$WORK/zbv" 1e-5

I=(--set schedule.name=interleaved --set schedule.chunks_per_rank=2)
if "$MPIEXEC" -n 8 "$TRIAX" train "$CONFIG" "$@" "${I[@]}" --set run.dir="$WORK/refused" \
  --resume "$step6" >"$WORK/refused.txt" 2>&1; then
  echo "a V-placed checkpoint was resumed by a loop schedule"
  exit 1
fi
grep -m1 "places its chunks in a V.*--schedule interleaved --out NEW_DIR" "$WORK/refused.txt"
"$TRIAX" reshard "$step6" --tensor 2 --pipeline 2 --chunks 2 --schedule interleaved \
  --out "$WORK/loop"
"$MPIEXEC" -n 8 "$TRIAX" train "$CONFIG" "$@" "${I[@]}" --set run.dir="$WORK/interleaved" \
  --resume "$WORK/loop" | grep -E "resumed from|done:"
/usr/bin/python3 "$here/compare_losses.py" "$WORK/interleaved" "$WORK/zbv" 1e-5
