#!/usr/bin/env bash
# What the terminal says when one rank is killed outright under mpirun: kill -9 of rank 3 of 4,
# then SIGSEGV of rank 5 of 8 (sent to the rank's own process, triax-core, by its pid in
# run.dir/ranks.txt, as a user or the OOM killer would). mpirun's box names a PID; the line
# before it must name the rank, its host and the signal (tools/rank_supervisor.cpp).
# usage: killed_rank.sh WORK MPIEXEC TRIAX CONFIG [--set ...]
set -uo pipefail
WORK=$1 MPIEXEC=$2 TRIAX=$3 CONFIG=$4
shift 4
rm -rf "$WORK"
mkdir -p "$WORK"
for case in "4 3 KILL 9" "8 5 SEGV 11"; do
  read -r ranks victim signal number <<<"$case"
  run=$WORK/np$ranks
  timeout 120 "$MPIEXEC" -n "$ranks" "$TRIAX" train "$CONFIG" "$@" --set train.steps=100000 \
    --set sample.tokens=0 --set train.eval_every=0 --set run.dir="$run" >"$run.log" 2>&1 &
  job=$!
  for _ in $(seq 1 600); do
    [ -f "$run/metrics.jsonl" ] && [ "$(wc -l <"$run/metrics.jsonl")" -ge 2 ] && break
    sleep 0.1
  done
  pid=$(awk -v r="$victim" '$1 == r {print $3}' "$run/ranks.txt")
  [ -n "$pid" ] || { kill $job; cat "$run.log"; echo "FAIL: no rank table"; exit 1; }
  kill -"$signal" "$pid"
  wait $job
  rc=$?
  grep -E "was killed by signal|BAD TERMINATION|PID [0-9]+ RUNNING" "$run.log"
  [ $rc -ne 0 ] || { echo "FAIL: exit 0"; exit 1; }
  grep -q "^\[rank $victim\] error: rank $victim (pid $pid on $(hostname)) was killed by signal $number (SIG$signal" "$run.log" ||
    { cat "$run.log"; echo "FAIL: the terminal does not name rank $victim, its host and SIG$signal"; exit 1; }
  echo "ok: SIG$signal of rank $victim of $ranks named on the terminal"
done
echo "PASS: a rank killed outright is named with its host and signal"
