#!/usr/bin/env bash
# kill -9 in the middle of a checkpoint save, at each point between its writes (after the
# shards, before the manifest, before `latest`): the job dies, and `--resume latest` must load
# the previous complete checkpoint (step 3 of saves every 3 steps; the save of step 6 is the one
# killed) and finish the run.
# usage: crash_resume.sh WORK_DIR MPIEXEC TRIAX CONFIG [--set ...]
set -euo pipefail
WORK=$1 MPIEXEC=$2 TRIAX=$3 CONFIG=$4
shift 4
for point in checkpoint-shard-written checkpoint-before-manifest checkpoint-before-latest; do
  DIR=$WORK/$point
  rm -rf "$DIR"
  mkdir -p "$DIR"
  rc=0
  TRIAX_KILL_AT=$point:6 timeout 120 "$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" \
    --set train.steps=9 --set checkpoint.every=3 --set run.dir="$DIR" >"$DIR/crash.log" 2>&1 || rc=$?
  [ $rc -ne 0 ] || { cat "$DIR/crash.log"; echo "FAIL: $point: the job was not killed" >&2; exit 1; }
  grep -q "fault point $point:6" "$DIR/crash.log" || { cat "$DIR/crash.log"; exit 1; }
  [ "$(cat "$DIR/checkpoints/latest")" = step_00000003 ] ||
    { echo "FAIL: $point: latest is $(cat "$DIR/checkpoints/latest")" >&2; exit 1; }
  out=$(timeout 120 "$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" --set train.steps=9 \
    --set checkpoint.every=3 --set run.dir="$DIR" --resume latest 2>&1) ||
    { echo "$out"; echo "FAIL: $point: resume failed" >&2; exit 1; }
  grep -q "resumed from .*step_00000003 after step 3" <<<"$out" || { echo "$out"; exit 1; }
  grep -q "done: 9 steps" <<<"$out" || { echo "$out"; exit 1; }
  # The crashed run had recorded steps 4..6; the resume redoes them, recorded once.
  steps=$(/usr/bin/python3 -c 'import json, sys; print(" ".join(str(json.loads(l)["step"]) for l in open(sys.argv[1])))' "$DIR/metrics.jsonl")
  [ "$steps" = "1 2 3 4 5 6 7 8 9" ] || { echo "FAIL: $point: metrics.jsonl steps: $steps" >&2; exit 1; }
  echo "PASS: killed at $point:6, resumed from step 3, finished 9 steps, each recorded once"
done
