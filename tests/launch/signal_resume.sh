#!/usr/bin/env bash
# SIGTERM (what Slurm sends before preemption) to every rank of a running job: each finishes its
# step, a checkpoint is saved and the job exits 0; `--resume auto` then completes the run, and
# metrics.jsonl holds every step once. Both runs use `--resume auto` (what the sbatch template
# passes on requeue): the first finds no checkpoint and starts afresh, the second resumes, a
# third finds the run finished.
# usage: signal_resume.sh RUN_DIR STEPS MPIEXEC TRIAX CONFIG [--set ...]
set -euo pipefail
DIR=$1 STEPS=$2 MPIEXEC=$3 TRIAX=$4 CONFIG=$5
shift 5
rm -rf "$DIR"
mkdir -p "$DIR"
"$MPIEXEC" -n 8 "$TRIAX" train "$CONFIG" "$@" --set train.steps="$STEPS" --set run.dir="$DIR" \
  --resume auto >"$DIR/first.log" 2>&1 &
job=$!
for _ in $(seq 1 600); do
  [ -f "$DIR/metrics.jsonl" ] && [ "$(wc -l <"$DIR/metrics.jsonl")" -ge 3 ] && break
  sleep 0.1
done
signalled=0
for pid in $(pgrep -x triax); do
  if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "run.dir=$DIR"; then
    kill -TERM "$pid" && signalled=$((signalled + 1))
  fi
done
echo "sent SIGTERM to $signalled ranks"
rc=0
wait $job || rc=$?
cat "$DIR/first.log"
[ $rc -eq 0 ] || { echo "FAIL: the signalled job exited $rc, expected 0" >&2; exit 1; }
grep -q "resume auto: no checkpoint in .* yet; starting from step 0" "$DIR/first.log" ||
  { echo "FAIL: --resume auto did not start afresh" >&2; exit 1; }
grep -q "stopping after step [0-9]* on signal 15" "$DIR/first.log" ||
  { echo "FAIL: no 'stopping after step' line" >&2; exit 1; }
"$MPIEXEC" -n 8 "$TRIAX" train "$CONFIG" "$@" --set train.steps="$STEPS" --set run.dir="$DIR" \
  --resume auto
/usr/bin/python3 - "$DIR/metrics.jsonl" "$STEPS" <<'PY'
import json, sys
steps = [json.loads(line)["step"] for line in open(sys.argv[1]) if line.strip()]
want = list(range(1, int(sys.argv[2]) + 1))
if steps != want:
    sys.exit(f"FAIL: steps recorded {steps}, expected {want}")
print(f"PASS: stopped by SIGTERM, resumed, every step 1..{want[-1]} recorded once")
PY
# Resuming the finished run (a requeue after the end) has nothing to do and says so.
"$MPIEXEC" -n 8 "$TRIAX" train "$CONFIG" "$@" --set train.steps="$STEPS" --set run.dir="$DIR" \
  --resume auto | grep "nothing to train: the checkpoint is at step $STEPS"
[ "$(wc -l <"$DIR/metrics.jsonl")" -eq "$STEPS" ] || { echo "FAIL: metrics grew" >&2; exit 1; }
