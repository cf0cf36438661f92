#!/usr/bin/env bash
# Online re-layout (docs/relayout.md). For each case, a run changes its layout in memory after
# step 6 (relayout.steps); the reference is what a user could do before: the same run without
# the change saves step 6, `triax reshard` converts it offline to the new layout and a run resumes
# there. Every later loss must be bit-identical, and the final checkpoints' shards (parameters
# and optimizer state) byte for byte the same. Then the change step's own checkpoint (written
# after the change) resumes on the new layout from the same command and continues bit for bit,
# and a layout asked for through run.dir/relayout is taken, a bad one refused. (From dp 1 every
# rank sends state, one all-gather; from dp 4 one rank does, a broadcast: both ways are covered.)
# usage: relayout.sh WORK MPIEXEC TRIAX CONFIG [--set ...]
set -euo pipefail
WORK=$1 MPIEXEC=$2 TRIAX=$3 CONFIG=$4
shift 4
here=$(dirname "$0")
rm -rf "$WORK"
mkdir -p "$WORK"
# name | the starting layout | the change | the reshard target (tp pp)
cases=(
  "pp4-to-pp2|--set parallel.tensor=1 --set parallel.pipeline=4|--set relayout.pipeline=[2]|1 2"
  "tp2pp2-to-tp1pp2|--set parallel.tensor=2 --set parallel.pipeline=2 --set ddp.shard=optimizer|--set relayout.tensor=[1]|1 2"
  "dp4-to-pp2|--set parallel.tensor=1 --set parallel.pipeline=1|--set relayout.pipeline=[2]|1 2"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name start change target <<<"$c"
  read -r tp pp <<<"$target"
  run=$WORK/$name
  # shellcheck disable=SC2086
  "$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" $start --set relayout.steps=[6] $change \
    --set checkpoint.every=6 --set run.dir="$run" >"$run.log" 2>&1 || { cat "$run.log"; exit 1; }
  grep -E "layout changed after step 6" "$run.log"
  # The reference: the same run without the change, its step 6 saved, resharded, resumed.
  # shellcheck disable=SC2086
  "$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" $start --set checkpoint.every=6 \
    --set run.dir="$run-unchanged" >"$run-unchanged.log" 2>&1 || { cat "$run-unchanged.log"; exit 1; }
  "$TRIAX" reshard "$run-unchanged/checkpoints/step_00000006" --tensor "$tp" --pipeline "$pp" \
    --out "$run-step6" >/dev/null
  # shellcheck disable=SC2086
  "$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" $start --set parallel.tensor="$tp" \
    --set parallel.pipeline="$pp" --set run.dir="$run-resumed" --resume "$run-step6" \
    >"$run-resumed.log" 2>&1 || { cat "$run-resumed.log"; exit 1; }
  /usr/bin/python3 "$here/compare_losses.py" "$run-resumed" "$run" 0
  for shard in "$run"/checkpoints/step_00000012/*.safetensors; do
    cmp "$shard" "$run-resumed/checkpoints/step_00000012/$(basename "$shard")"
  done
  echo "$name: the final shards are byte-identical"
done

# The checkpoint of the change step is written after the change: the same command resumes it on
# the layout then in effect, and steps 7.. match the run that went on.
run=$WORK/pp4-to-pp2
rm -rf "$run-again"
cp -r "$run" "$run-again"
rm -rf "$run-again/checkpoints/step_00000012" "$run-again/metrics.jsonl"
echo step_00000006 >"$run-again/checkpoints/latest"
"$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" --set parallel.tensor=1 --set parallel.pipeline=4 \
  --set relayout.steps=[6] --set relayout.pipeline=[2] --set run.dir="$run-again" \
  --resume latest >"$run-again.log" 2>&1 || { cat "$run-again.log"; exit 1; }
grep -E "resumed from .*step_00000006" "$run-again.log"
grep -q "world 4 = dp 2 x tp 1 x pp 2" "$run-again.log" || { echo "FAIL: not resumed at pp 2"; exit 1; }
/usr/bin/python3 "$here/compare_losses.py" "$run-again" "$run" 0

# On request: a refused layout (tp 3 does not divide the world) first, then a good one.
run=$WORK/request
mkdir -p "$run"
echo "parallel.tensor=3" >"$run/relayout"
"$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" --set parallel.tensor=1 --set parallel.pipeline=4 \
  --set train.steps=40 --set train.log_every=10 --set run.dir="$run" >"$run.log" 2>&1 &
job=$!
for _ in $(seq 600); do [ -f "$run/relayout.rejected" ] && break; sleep 0.1; done
# Written whole, then moved into place: rank 0 never reads half a request.
printf "# from the test\nparallel.pipeline = 2\nschedule.name=gpipe\n" >"$run/relayout.tmp"
mv "$run/relayout.tmp" "$run/relayout"
wait $job || { cat "$run.log"; exit 1; }
grep -E "refused; training goes on" "$run.log"
grep -E "layout changed after step [0-9]+ \(.*relayout\)" "$run.log" ||
  { cat "$run.log"; echo "FAIL: the request was not taken"; exit 1; }
[ -f "$run/relayout.done" ] || { echo "FAIL: no relayout.done"; exit 1; }
grep -q '"relayout_to": "dp 2 x tp 1 x pp 2, gpipe' "$run/metrics.jsonl" ||
  { echo "FAIL: metrics.jsonl does not record the change"; exit 1; }
echo "PASS: online re-layout continues as the resharded checkpoint does, bit for bit"
