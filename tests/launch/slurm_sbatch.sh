#!/usr/bin/env bash
# Brings up a one-machine Slurm cluster (tools/slurm/local-cluster.sh), submits the user-facing
# sbatch script tools/slurm/triax.sbatch with a short run of CONFIG, waits for it, prints its
# output and stops the daemons it started, whatever happens.
# MODE run: the job runs to the end.
# MODE requeue: once the job has done 3 steps it gets SIGUSR1 the way Slurm delivers it before a
#   time limit (to the batch shell, `--signal=B:USR1`); the script must have every rank save and
#   stop, requeue the job, and the requeued run must resume and finish (run.dir's metrics.jsonl
#   is then checked by the caller: every step once, the same losses as an uninterrupted run).
# usage: slurm_sbatch.sh MODE SOURCE_DIR BUILD_TRIAX OUTPUT_FILE RUN_DIR CONFIG [--set ...]
# Exit 77 (skipped) where Slurm or root is missing.
set -euo pipefail
MODE=$1 SOURCE=$2 TRIAX=$3 OUT=$4 RUN=$5
shift 5
CLUSTER=$SOURCE/tools/slurm/local-cluster.sh
export TRIAX_SLURM_NS=triax-ctest-slurm TRIAX_SLURM_DIR=/tmp/triax-ctest-slurm
"$CLUSTER" up || exit $?
trap '"$CLUSTER" down' EXIT
# The script runs build/triax relative to the submit directory: submit from a folder where
# build/triax is this build's executable.
WORK=$(mktemp -d)
mkdir -p "$WORK/build"
ln -s "$TRIAX" "$WORK/build/triax"
rm -rf "$OUT" "$RUN"
cd "$WORK"
SCRIPT=$SOURCE/tools/slurm/triax.sbatch
if [ "$MODE" = run ]; then
  rc=0
  "$CLUSTER" run timeout 240 sbatch --wait --output="$OUT" "$SCRIPT" "$@" --set run.dir="$RUN" ||
    rc=$?
  cat "$OUT"
  exit $rc
fi

job=$("$CLUSTER" run sbatch --parsable --output="$OUT" "$SCRIPT" "$@" --set run.dir="$RUN")
state() { "$CLUSTER" run scontrol show job "$job" | grep -oE "JobState=[A-Z_]+|Restarts=[0-9]+|Reason=[^ ]+" | tr '\n' ' '; }
for _ in $(seq 1 900); do
  [ -f "$RUN/metrics.jsonl" ] && [ "$(wc -l <"$RUN/metrics.jsonl")" -ge 3 ] && break
  sleep 0.2
done
echo "job $job after 3 steps: $(state); sending SIGUSR1 to its batch shell"
"$CLUSTER" run scancel --batch --signal=USR1 "$job"
final=
for _ in $(seq 1 120); do
  final=$(state)
  echo "  $final"
  # Slurm holds a requeued job back for a while (Reason=BeginTime, about two minutes); an
  # administrator may start it sooner, which is what we do to keep the test short. Not at once:
  # slurmd refuses a relaunch within about a second of the requeue kill ("Job credential
  # revoked", the job then FAILS), so the release waits a few seconds.
  case "$final" in *"Reason=BeginTime"*)
    sleep 3
    "$CLUSTER" run scontrol update JobId="$job" StartTime=now ;;
  esac
  case "$final" in *"JobState=COMPLETED"* | *"JobState=FAILED"* | *"JobState=CANCELLED"* | *"JobState=TIMEOUT"*) break ;; esac
  sleep 1
done
cat "$OUT"
echo "job $job finished: $final"
case "$final" in
  *"JobState=COMPLETED"*"Restarts=1"* | *"Restarts=1"*"JobState=COMPLETED"*) ;;
  *) echo "FAIL: expected the job COMPLETED after exactly one requeue" >&2; exit 1 ;;
esac
grep -q "stopping after step [0-9]* on signal 10" "$OUT" || { echo "FAIL: no stop on SIGUSR1" >&2; exit 1; }
grep -q "requeueing job $job" "$OUT" || { echo "FAIL: the script did not requeue" >&2; exit 1; }
grep -q "resumed from .*step_" "$OUT" || { echo "FAIL: the requeued run did not resume" >&2; exit 1; }
echo "PASS: SIGUSR1 -> checkpoint -> requeue -> resumed"
