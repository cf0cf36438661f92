#!/usr/bin/env bash
# A SIGUSR1 (Slurm's "you will be preempted") that arrives during start-up — as soon as a rank
# can take it, before the world exists — is honoured like one during training: the job finishes
# its first step, saves a checkpoint and exits 0.
# usage: signal_startup.sh WORK MPIEXEC TRIAX CONFIG [--set ...]
set -uo pipefail
WORK=$1 MPIEXEC=$2 TRIAX=$3 CONFIG=$4
shift 4
rm -rf "$WORK"
"$MPIEXEC" -n 4 "$TRIAX" train "$CONFIG" "$@" --set train.steps=6 --set run.dir="$WORK" \
  --set sample.tokens=0 >"$WORK.log" 2>&1 &
launcher=$!
# The first moment a rank catches SIGUSR1 (bit 10 of SigCgt in /proc): early in main().
target=""
for _ in $(seq 1 500); do
  for pid in $(pgrep -f "$TRIAX train" -P "$(pgrep -P $launcher | head -1)" 2>/dev/null); do
    caught=$(awk '/^SigCgt/ {print $2}' "/proc/$pid/status" 2>/dev/null)
    if [ -n "$caught" ] && (((0x$caught >> 9) & 1)); then target=$pid; break 2; fi
  done
  sleep 0.01
done
[ -n "$target" ] || { echo "FAIL: no rank started"; kill $launcher; exit 1; }
started=$(grep -c "launch:" "$WORK.log")
kill -USR1 "$target"
wait $launcher
rc=$?
grep -E "stopping after|checkpoint of step|error" "$WORK.log"
[ "$started" -eq 0 ] || echo "note: the signal came after start-up"
[ "$rc" -eq 0 ] || { echo "FAIL: exit $rc"; exit 1; }
grep -q "stopping after step 1 on signal 10" "$WORK.log" || { echo "FAIL: not honoured"; exit 1; }
echo "PASS: SIGUSR1 during start-up (before the world existed: $([ "$started" -eq 0 ] && echo yes || echo no)) -> step 1, checkpoint, exit 0"
