#!/usr/bin/env bash
# The freeze algorithm with AutoPipe and AutoDP (docs/relayout.md). A run freezes layers every 4
# steps from step 4 (gradient-norm criterion) and re-lays out as AutoPipe chooses. Checked:
#   - the frozen tensors (values and optimizer state) hold the same bytes in every later
#     checkpoint, while active ones move;
#   - the run after the first freeze equals, bit for bit (losses and the final shards), the run
#     that did not freeze, saved step 4, was resharded to the layout chosen and resumed with
#     those layers frozen (the second freeze decision included: it sees the same gradients;
#     AutoPipe chooses pp 1 in both cases, so the reshard's split is the run's);
#   - the final checkpoint resumes frozen, on its layout, from the same command.
# usage: freeze.sh WORK MPIEXEC TRIAX CONFIG [--set ...]
set -euo pipefail
WORK=$1 MPIEXEC=$2 TRIAX=$3 CONFIG=$4
shift 4
here=$(dirname "$0")
rm -rf "$WORK"
mkdir -p "$WORK"
FREEZE=(--set freeze.every=4 --set freeze.start=4)
for start in "1 4" "2 2"; do
  read -r tp pp <<<"$start"
  run=$WORK/tp$tp-pp$pp
  "$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" --set parallel.tensor="$tp" \
    --set parallel.pipeline="$pp" "${FREEZE[@]}" --set checkpoint.every=4 \
    --set run.dir="$run" >"$run.log" 2>&1 || { cat "$run.log"; exit 1; }
  line=$(grep -E "layout changed after step 4 \(freeze" "$run.log") ||
    { cat "$run.log"; echo "FAIL: no freeze after step 4"; exit 1; }
  echo "$line"
  # The layout and frozen count after step 4, from the log line's "-> dp D x tp T x pp P, ..."
  read -r new_tp new_pp frozen < <(echo "$line" |
    sed -E 's/.*-> dp [0-9]+ x tp ([0-9]+) x pp ([0-9]+),.* ([0-9]+) layer\(s\) frozen$/\1 \2 \3/')
  # Step 4's checkpoint is written after the freeze: frozen tensors as they froze.
  /usr/bin/python3 "$here/frozen_tensors.py" "$run/checkpoints/step_00000004" \
    "$run/checkpoints/step_00000012" "$frozen"
  # The reference: the same run without freezing saves step 4, resharded to the layout chosen.
  "$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" --set parallel.tensor="$tp" \
    --set parallel.pipeline="$pp" --set checkpoint.every=4 --set run.dir="$run-unfrozen" \
    >"$run-unfrozen.log" 2>&1 || { cat "$run-unfrozen.log"; exit 1; }
  [ "$new_pp" = 1 ] || { echo "FAIL: the reference needs AutoPipe's split at pp $new_pp"; exit 1; }
  "$TRIAX" reshard "$run-unfrozen/checkpoints/step_00000004" --tensor "$new_tp" \
    --pipeline "$new_pp" --out "$run-step4" >/dev/null
  "$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" --set parallel.tensor="$new_tp" \
    --set parallel.pipeline="$new_pp" --set train.frozen_layers="$frozen" "${FREEZE[@]}" \
    --set run.dir="$run-resumed" --resume "$run-step4" >"$run-resumed.log" 2>&1 ||
    { cat "$run-resumed.log"; exit 1; }
  /usr/bin/python3 "$here/compare_losses.py" "$run-resumed" "$run" 0
  for shard in "$run"/checkpoints/step_00000012/*.safetensors; do
    cmp "$shard" "$run-resumed/checkpoints/step_00000012/$(basename "$shard")"
  done
  echo "tp$tp-pp$pp: the final shards are byte-identical"
done
run=$WORK/tp1-pp4
"$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" --set parallel.tensor=1 --set parallel.pipeline=4 \
  "${FREEZE[@]}" --set run.dir="$run" --set train.steps=14 --resume latest >"$run-more.log" 2>&1 ||
  { cat "$run-more.log"; exit 1; }
grep -E "frozen: layers 0 \.\. [0-9]+ of" "$run-more.log" ||
  { cat "$run-more.log"; echo "FAIL: not resumed frozen"; exit 1; }
echo "PASS: freezing keeps frozen tensors bit for bit and continues as a resharded resume"
