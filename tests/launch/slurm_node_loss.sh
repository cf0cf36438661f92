#!/usr/bin/env bash
# Lose a node, keep the run, under Slurm: tools/slurm/triax.sbatch is submitted to a 2-node
# namespace Slurm cluster (`sbatch --nodes=2 --ntasks-per-node=2`) and trains the GPT at
# dp 2 x pp 2 with asynchronous checkpoints every 4 of 16 steps. Once step 8's checkpoint is
# complete every process on n2 (its slurmd and ranks) is SIGKILLed. The heartbeat ends n1's
# ranks within a second; Slurm declares n2 DOWN (SlurmdTimeout, 10 s in this cluster, Slurm's
# default 300 s) and, the job being --no-kill, takes n2 out of the allocation and ends the step;
# the script starts a new step on the node left with --resume auto. Checked: the job COMPLETES,
# the run resumed from step 8 at dp 1 and finished, at most one checkpoint interval was redone,
# every step's loss equals an uninterrupted run's (dp 2, mpirun) within the resume-at-other-dp
# tolerance (1e-5 relative); the time from the loss to the first step on the survivor is printed.
# usage: slurm_node_loss.sh SOURCE_DIR TRIAX WORK CONFIG [--set ...]   (exit 77 without Slurm/root)
set -uo pipefail
SOURCE=$1 TRIAX=$2 WORK=$3 CONFIG=$4
shift 4
export TRIAX_CLUSTER=triax-slurm-loss TRIAX_CLUSTER_NET=10.82.0
export TRIAX_SLURM_NODES=2 TRIAX_SLURM_NS=$TRIAX_CLUSTER TRIAX_SLURM_DIR=/tmp/$TRIAX_CLUSTER
export TRIAX_SLURMD_TIMEOUT=10
CLUSTER=$SOURCE/tools/cluster/ns-cluster.sh
SLURM=$SOURCE/tools/slurm/local-cluster.sh
STEPS=16 EVERY=4
# shellcheck source=tests/launch/node_loss_checks.sh
. "$(dirname "$0")/node_loss_checks.sh"

rm -rf "$WORK"
mkdir -p "$WORK/build"
"$SLURM" up || exit $?
trap '"$SLURM" down >/dev/null' EXIT
ARGS=(--set parallel.tensor=1 --set parallel.pipeline=2 --set train.steps="$STEPS"
  --set checkpoint.every="$EVERY" --set checkpoint.async=true --set checkpoint.keep=0
  --set train.log_every=1 --set train.eval_every=0 --set sample.tokens=0)
mpiexec -n 4 "$TRIAX" train "$CONFIG" "$@" "${ARGS[@]}" --set run.dir="$WORK/reference" \
  >"$WORK/reference.log" 2>&1 || { cat "$WORK/reference.log"; echo "FAIL: the reference run failed"; exit 1; }
# The script runs build/triax relative to the submit directory.
ln -s "$TRIAX" "$WORK/build/triax"
RUN=$WORK/run
mkdir -p "$RUN"
cd "$WORK" || exit 1
job=$("$SLURM" run sbatch --parsable --nodes=2 --ntasks-per-node=2 --output="$RUN/slurm.out" \
  "$SOURCE/tools/slurm/triax.sbatch" "$CONFIG" "$@" "${ARGS[@]}" --set run.dir="$RUN") ||
  { echo "FAIL: sbatch refused the job"; exit 1; }
echo "job $job submitted"
for _ in $(seq 1 1200); do
  [ -f "$RUN/checkpoints/step_00000008/manifest.yaml" ] && break
  sleep 0.1
done
last=$(wc -l <"$RUN/metrics.jsonl" 2>/dev/null || echo 0)
start=$(date +%s.%N)
"$CLUSTER" kill n2 >/dev/null
echo "killed n2 after $last steps (latest: $(cat "$RUN/checkpoints/latest" 2>/dev/null))"
first_step "$RUN/slurm.out" "$RUN" 1
state=""
for _ in $(seq 1 240); do
  state=$("$SLURM" run scontrol show job "$job" 2>/dev/null | grep -o "JobState=[A-Z_]*")
  case "$state" in JobState=COMPLETED | JobState=FAILED | JobState=CANCELLED | JobState=TIMEOUT | JobState=NODE_FAIL) break ;; esac
  sleep 0.5
done
grep -E "heartbeat: ranks|triax.sbatch|srun: error|resumed from|done:" "$RUN/slurm.out" | cut -c1-200
failed=0
[ "$state" = JobState=COMPLETED ] || { tail -30 "$RUN/slurm.out"; echo "FAIL: job $job ended $state"; failed=1; }
[ -n "$first" ] || { echo "FAIL: no step after the loss"; exit 1; }
grep -q "continuing on the 1 left" "$RUN/slurm.out" || { echo "FAIL: the script did not continue on the node left"; failed=1; }
grep -q "after step 8 .*now dp 1" "$RUN/slurm.out" || { echo "FAIL: not resumed from step 8 at dp 1"; failed=1; }
grep -q "done: $STEPS steps" "$RUN/slurm.out" || { echo "FAIL: the run did not finish"; failed=1; }
if survivor_named_lost "$RUN/slurm.out"; then
  echo "FAIL: the heartbeat named a rank on n1, a survivor, as lost"
  failed=1
fi
redone=$((last - resumed))
[ $redone -le $EVERY ] || { echo "FAIL: $redone steps redone (limit $EVERY)"; failed=1; }
/usr/bin/python3 "$(dirname "$0")/compare_losses.py" "$RUN" "$WORK/reference" 1e-5 || { echo "FAIL: losses differ"; failed=1; }
gap=$(since "$start" "$first")
echo "n2 lost after step $last; the job went on on n1 from step $resumed at dp 1 ($redone step(s) redone, checkpoint interval $EVERY); first step on the survivor $gap s after the loss (SlurmdTimeout $TRIAX_SLURMD_TIMEOUT s)"
[ $failed -eq 0 ] && echo "PASS: sbatch: a lost node's run finished on the node left, losses equal to the uninterrupted run"
exit $failed
