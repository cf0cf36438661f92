#!/usr/bin/env bash
# A SIGUSR1 (Slurm's "you will be preempted") that arrives in the first moments after launch —
# 0.3 s after `mpirun -np 8`, while the ranks still load LibTorch — is honoured like one during
# training: the job finishes its first step, saves a checkpoint and exits 0, and `--resume auto`
# then reproduces the uninterrupted run's losses exactly. (The supervisor, tools/rank_supervisor.cpp,
# holds the signal until triax-core's handlers are in place; without it the signal's default
# action killed the ranks.) The signal goes to every process of the job, as Slurm sends it.
# usage: signal_startup.sh WORK MPIEXEC TRIAX CONFIG [--set ...]
set -uo pipefail
WORK=$1 MPIEXEC=$2 TRIAX=$3 CONFIG=$4
shift 4

rm -rf "$WORK" "$WORK.reference"
ARGS=(train "$CONFIG" "$@" --set train.steps=6 --set sample.tokens=0)
"$MPIEXEC" -n 8 "$TRIAX" "${ARGS[@]}" --set run.dir="$WORK" --resume auto >"$WORK.log" 2>&1 &
launcher=$!
sleep 0.3
# 0.3 s after launch, or (on a loaded machine) as soon as the launcher has started a rank.
signalled=0
for _ in $(seq 1 100); do
  for pid in $(pgrep -x triax; pgrep -x triax-core); do
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "run.dir=$WORK "; then
      kill -USR1 "$pid" && signalled=$((signalled + 1))
    fi
  done
  [ $signalled -gt 0 ] && break
  sleep 0.05
done
started=$(grep -c "launch:" "$WORK.log")
wait $launcher
rc=$?
echo "SIGUSR1 to $signalled processes 0.3 s after mpirun -np 8 (training started then: $([ "$started" -eq 0 ] && echo no || echo yes))"
grep -E "stopping after|checkpoint of step|error" "$WORK.log"
[ "$signalled" -gt 0 ] || { echo "FAIL: no process of the job to signal"; exit 1; }
[ "$rc" -eq 0 ] || { cat "$WORK.log"; echo "FAIL: exit $rc"; exit 1; }
grep -q "stopping after step 1 on signal 10" "$WORK.log" || { echo "FAIL: not honoured"; exit 1; }
"$MPIEXEC" -n 8 "$TRIAX" "${ARGS[@]}" --set run.dir="$WORK" --resume auto >"$WORK.resume.log" 2>&1 ||
  { cat "$WORK.resume.log"; echo "FAIL: the resume failed"; exit 1; }
"$MPIEXEC" -n 8 "$TRIAX" "${ARGS[@]}" --set run.dir="$WORK.reference" >"$WORK.reference.log" 2>&1 ||
  { echo "FAIL: the reference run failed"; exit 1; }
/usr/bin/python3 "$(dirname "$0")/compare_losses.py" "$WORK" "$WORK.reference" 0 || { echo "FAIL: the resumed losses differ"; exit 1; }
echo "PASS: SIGUSR1 0.3 s after launch -> step 1, checkpoint, exit 0; the resume reproduces the uninterrupted run"
