#!/usr/bin/env bash
# Asynchronous parameter servers (parameter_server.staleness, docs/parameter_server.md): 2 workers
# and 1 dedicated server, world rank 1 (worker 1) held 0.3 s before every step (TRIAX_STALL). The
# fast worker runs ahead of the slow one, but never by more than S steps: the server, which
# answers a worker only within the bound, reports the furthest lead it allowed, which must be S
# exactly (reached, not exceeded) at S = 1 and 2; the workers meet at every logged step (their
# loss there is the global batch's), and the run ends with its checkpoint.
# usage: ps_staleness.sh WORK MPIEXEC TRIAX CONFIG [--set ...]
set -euo pipefail
WORK=$1 MPIEXEC=$2 TRIAX=$3 CONFIG=$4
shift 4
rm -rf "$WORK"
mkdir -p "$WORK"
common=(--set parallel.tensor=1 --set parallel.pipeline=1 --set train.steps=24
  --set train.micro_batch=4 --set train.log_every=12 --set train.eval_every=24
  --set train.eval_batches=2 --set sample.tokens=0 --set comm.timeout_s=120
  --set ddp.mode=parameter_server)
for s in 1 2; do
  TRIAX_STALL=step:0.3:1 timeout 300 "$MPIEXEC" -n 3 "$TRIAX" train "$CONFIG" "$@" "${common[@]}" \
    --set parameter_server.staleness="$s" --set run.dir="$WORK/s$s" >"$WORK/s$s.log" 2>&1 ||
    { tail -30 "$WORK/s$s.log"; echo "FAIL: staleness $s"; exit 1; }
  grep -h "asynchronous" "$WORK/s$s.log" | head -1
  lead=$(sed -nE 's/.*the furthest a worker ran ahead of the slowest: ([0-9]+) step.*/\1/p' \
    "$WORK/s$s.log")
  [ "$lead" = "$s" ] ||
    { grep -E "furthest|done:" "$WORK/s$s.log"; echo "FAIL: furthest lead '$lead', staleness $s"; exit 1; }
  grep -q "done: 24 steps" "$WORK/s$s.log" || { echo "FAIL: staleness $s did not finish"; exit 1; }
  [ -f "$WORK/s$s/checkpoints/step_00000024/manifest.yaml" ] ||
    { echo "FAIL: no checkpoint of step 24"; exit 1; }
  echo "ok: staleness $s: the fast worker ran $lead step(s) ahead of the slow one, no further"
done
echo "PASS: ps_staleness"
